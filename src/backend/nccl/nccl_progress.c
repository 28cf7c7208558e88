/*
 * nccl_progress.c -- comm tags and progress on the NCCL backend (MG__CAP_PROGRESS): what each
 * rank last enqueued, published where the other ranks can read it, so that a timeout says which
 * rank is behind, and trace dumps name it.
 *
 * The ranks of NCCL communicators share no memory of ours across processes, so what is shared is
 * a table of this process, keyed by the communicator's tag: the ranks made by mg_comm_init_all
 * or by a world (every GPU of the process) read each other's progress; a rank in another
 * process is "unknown" (its own trace dump has it; `mgcomm trace` merges the dumps).
 *
 * A tag is a hash of the NCCL unique id, the same on every rank; a split or shrink child's is
 * derived from its parent's tag, the parent's count of earlier splits and the color (or the
 * excluded ranks), which every member knows.
 *
 * Each rank's slot is written by the thread that numbers its collectives (op.h, mg__op_number)
 * and read by timeout messages and trace dumps, both under the table's lock.
 *
 * The table also tells a rank that a peer of this process stopped: NCCL's abort and revoke are
 * local, so a rank whose peer's communicator was aborted or revoked (by its program, or by its
 * watchdog at a deadline) would wait for it until its own deadline. A slot points at its rank's
 * comm->aborting while the rank is in the table and keeps, once it left, whether it left
 * stopped; mg__nccl_peers_stopped reads them, and the backend's asynchronous error reports it
 * (so the requests of the rank, and its mark queries and waits, fail with MG_ERR_REMOTE instead
 * of timing out), and the launch refuses a new operation of the rank at once: NCCL would enqueue
 * work for a peer whose buffers its abort freed. The table counts the stops of its members, so
 * that while none stopped (the common case) that check is one load.
 *
 * Lock order: mg__nprogs_lock (joining and leaving only), then a table's lock; nothing else is
 * taken under either.
 */
#include <pthread.h>
#include <stdlib.h>

#include "backend/nccl/nccl.h"
#include "base/hash.h"
#include "base/log.h"

typedef struct mg__nslot {
  mg__progress_t last;      /* the last collective enqueued (last.enqueued1 0: none) */
  int present;              /* a communicator of this process is this rank */
  const atomic_int *aborting; /* present: that communicator's aborting flag (it lives while
                                 the communicator is in the table) */
  int stopped;              /* not present: MG__STOP_* the rank left with (it was aborted or
                               revoked, then destroyed), 0 when it left normally */
} mg__nslot_t;

typedef struct mg__nprog {
  uint64_t tag;
  int nranks;
  int members;              /* communicators of this process in it (under mg__nprogs_lock) */
  atomic_uint stops;        /* members aborted or revoked so far: 0, no slot to look at */
  struct mg__nprog *next;   /* (under mg__nprogs_lock) */
  pthread_mutex_t lock;     /* slot[] */
  mg__nslot_t slot[];       /* [nranks] */
} mg__nprog_t;

static pthread_mutex_t mg__nprogs_lock = PTHREAD_MUTEX_INITIALIZER;
static mg__nprog_t *mg__nprogs;

uint64_t mg__nccl_tag_of_id(const mg__ncclUniqueId *id) {
  return mg__hash_bytes(id->internal, sizeof id->internal);
}

uint64_t mg__nccl_tag_child(uint64_t parent, int shrink, uint64_t split_seq, uint64_t a) {
  return mg__mix64(parent ^ mg__mix64((shrink ? 0x5a41u : 0x5b17u) ^
                                      mg__mix64(split_seq ^ mg__mix64(a))));
}

void mg__nccl_progress_join(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  pthread_mutex_lock(&mg__nprogs_lock);
  mg__nprog_t *p = mg__nprogs;
  while (p != NULL && p->tag != nx->tag) p = p->next;
  if (p == NULL) {
    p = calloc(1, sizeof *p + sizeof p->slot[0] * (size_t)comm->nranks);
    if (p != NULL) {
      pthread_mutex_init(&p->lock, NULL);
      p->tag = nx->tag;
      p->nranks = comm->nranks;
      p->next = mg__nprogs;
      mg__nprogs = p;
    }
  } else if (p->nranks != comm->nranks) {
    p = NULL; /* two communicators of one tag and different sizes: a collision; stay out */
  }
  if (p != NULL) {
    p->members++;
    pthread_mutex_lock(&p->lock);
    p->slot[comm->rank].present = 1;
    p->slot[comm->rank].aborting = &comm->aborting;
    p->slot[comm->rank].stopped = 0;
    pthread_mutex_unlock(&p->lock);
  }
  pthread_mutex_unlock(&mg__nprogs_lock);
  nx->prog = p;
  if (p == NULL)
    MG_INFO(MG_SUBSYS_INIT, "rank %d of %d: its progress is not published (no memory, or a tag "
            "collision); timeout messages will not know it", comm->rank, comm->nranks);
}

void mg__nccl_progress_leave(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__nprog_t *p = nx->prog;
  if (p == NULL) return;
  nx->prog = NULL;
  pthread_mutex_lock(&mg__nprogs_lock);
  pthread_mutex_lock(&p->lock);
  p->slot[comm->rank].present = 0;
  p->slot[comm->rank].aborting = NULL;
  p->slot[comm->rank].stopped = atomic_load(&comm->aborting);
  if (p->slot[comm->rank].stopped != 0) atomic_fetch_add(&p->stops, 1); /* counted twice: no harm */
  pthread_mutex_unlock(&p->lock);
  if (--p->members == 0) {
    mg__nprog_t **at = &mg__nprogs;
    while (*at != p) at = &(*at)->next;
    *at = p->next;
    pthread_mutex_destroy(&p->lock);
    free(p);
  }
  pthread_mutex_unlock(&mg__nprogs_lock);
}

void mg__nccl_op_enqueued(const mg__op_t *op) {
  mg__nprog_t *p = mg__ncomm(op->comm)->prog;
  if (p == NULL) return;
  /* What the GPU finished is known per stream, through marks, not per collective: completed1
   * stays 0. */
  const mg__progress_t last = {.enqueued1 = op->seq + 1, .kind = op->kind, .dtype = op->dtype,
                               .count = op->count, .root = op->root};
  pthread_mutex_lock(&p->lock);
  p->slot[op->comm->rank].last = last;
  pthread_mutex_unlock(&p->lock);
}

mg_status_t mg__nccl_peer_progress(mg_comm_t *comm, int r, mg__progress_t *out) {
  mg__nprog_t *p = mg__ncomm(comm)->prog;
  if (p == NULL)
    return mg__error(MG_ERR_NOT_SUPPORTED, "rank %d publishes no progress (see the INFO log of "
                     "its creation)", comm->rank);
  pthread_mutex_lock(&p->lock);
  const int present = p->slot[r].present;
  if (present) *out = p->slot[r].last;
  pthread_mutex_unlock(&p->lock);
  if (!present)
    return mg__error(MG_ERR_NOT_SUPPORTED, "rank %d is not in this process (the NCCL backend "
                     "shares progress between the ranks of one process only)", r);
  return MG_OK;
}

void mg__nccl_progress_stopping(mg_comm_t *comm) {
  mg__nprog_t *p = mg__ncomm(comm)->prog;
  if (p != NULL) atomic_fetch_add(&p->stops, 1);
}

mg_status_t mg__nccl_peers_stopped(mg_comm_t *comm) {
  mg__nprog_t *p = mg__ncomm(comm)->prog;
  if (p == NULL || atomic_load_explicit(&p->stops, memory_order_relaxed) == 0) return MG_OK;
  int who = -1, why = 0;
  pthread_mutex_lock(&p->lock);
  for (int r = 0; r < p->nranks && who < 0; r++) {
    if (r == comm->rank) continue;
    const mg__nslot_t *q = &p->slot[r];
    why = q->present ? atomic_load(q->aborting) : q->stopped;
    if (why != 0) who = r;
  }
  pthread_mutex_unlock(&p->lock);
  if (who < 0) return MG_OK;
  return mg__error(MG_ERR_REMOTE, "rank %d of %d (device %d): rank %d, in this process, %s its "
                   "communicator: an operation that needs it never completes (NCCL tells a peer "
                   "of no abort or revoke)", comm->rank, comm->nranks, comm->device, who,
                   why == MG__STOP_REVOKE ? "revoked" : "aborted");
}

uint64_t mg__nccl_comm_tag(const mg_comm_t *comm) { return mg__ncomm(comm)->tag; }
