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
 * Each rank's slot is written only by the thread that numbers its collectives (one at a time:
 * op.h, mg__op_number) with a sequence lock: readers retry while the version is odd or moves.
 *
 * Lock order: mg__nprogs_lock is a leaf (joining and leaving only).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/nccl/nccl.h"
#include "base/hash.h"
#include "base/log.h"

/* One cache line per slot: the ranks of one process write their own slots on every collective,
 * and slots sharing a line would bounce it between their threads' cores. */
typedef struct mg__nslot {
  _Alignas(64) atomic_uint ver; /* odd while the rank rewrites the slot */
  _Atomic uint64_t seq1;    /* sequence number + 1 of the last collective enqueued; 0: none */
  _Atomic uint64_t count;
  atomic_int kind, dtype, root;
  atomic_int present;       /* a communicator of this process is this rank */
} mg__nslot_t;

typedef struct mg__nprog {
  uint64_t tag;
  int nranks;
  int members;              /* communicators of this process in it (under mg__nprogs_lock) */
  struct mg__nprog *next;
  mg__nslot_t slot[];       /* [nranks] */
} mg__nprog_t;

/* aligned_alloc wants a multiple of the alignment: sizeof (mg__nprog_t) is one, as its last
 * member is aligned to it. */
static size_t mg__nprog_size(int nranks) {
  return sizeof(mg__nprog_t) + sizeof(mg__nslot_t) * (size_t)nranks;
}

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
    p = aligned_alloc(_Alignof(mg__nprog_t), mg__nprog_size(comm->nranks));
    if (p != NULL) {
      memset(p, 0, mg__nprog_size(comm->nranks));
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
    atomic_store(&p->slot[comm->rank].present, 1);
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
  atomic_store(&p->slot[comm->rank].present, 0);
  if (--p->members == 0) {
    mg__nprog_t **at = &mg__nprogs;
    while (*at != p) at = &(*at)->next;
    *at = p->next;
    free(p);
  }
  pthread_mutex_unlock(&mg__nprogs_lock);
}

void mg__nccl_op_enqueued(const mg__op_t *op) {
  mg__nprog_t *p = mg__ncomm(op->comm)->prog;
  if (p == NULL) return;
  mg__nslot_t *s = &p->slot[op->comm->rank];
  const unsigned v = atomic_load_explicit(&s->ver, memory_order_relaxed);
  atomic_store_explicit(&s->ver, v + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&s->count, op->count, memory_order_relaxed);
  atomic_store_explicit(&s->kind, (int)op->kind, memory_order_relaxed);
  atomic_store_explicit(&s->dtype, (int)op->dtype, memory_order_relaxed);
  atomic_store_explicit(&s->root, op->root, memory_order_relaxed);
  atomic_store_explicit(&s->seq1, op->seq + 1, memory_order_relaxed);
  atomic_store_explicit(&s->ver, v + 2, memory_order_release);
}

mg_status_t mg__nccl_peer_progress(mg_comm_t *comm, int r, mg__progress_t *out) {
  const mg__nprog_t *p = mg__ncomm(comm)->prog;
  if (p == NULL)
    return mg__error(MG_ERR_NOT_SUPPORTED, "rank %d publishes no progress (see the INFO log of "
                     "its creation)", comm->rank);
  const mg__nslot_t *s = &p->slot[r];
  if (!atomic_load(&s->present))
    return mg__error(MG_ERR_NOT_SUPPORTED, "rank %d is not in this process (the NCCL backend "
                     "shares progress between the ranks of one process only)", r);
  for (int tries = 0; tries < 100; tries++) {
    const unsigned v = atomic_load_explicit(&s->ver, memory_order_acquire);
    if (v & 1u) continue; /* being rewritten: a few instructions */
    out->enqueued1 = atomic_load_explicit(&s->seq1, memory_order_relaxed);
    out->count = atomic_load_explicit(&s->count, memory_order_relaxed);
    out->kind = (mg__opkind_t)atomic_load_explicit(&s->kind, memory_order_relaxed);
    out->dtype = (mg_dtype_t)atomic_load_explicit(&s->dtype, memory_order_relaxed);
    out->root = atomic_load_explicit(&s->root, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->ver, memory_order_relaxed) != v) continue;
    /* What the GPU finished is known per stream, through marks, not per collective. */
    out->completed1 = 0;
    return MG_OK;
  }
  return mg__error(MG_ERR_NOT_SUPPORTED, "rank %d's progress kept changing", r);
}

uint64_t mg__nccl_comm_tag(const mg_comm_t *comm) { return mg__ncomm(comm)->tag; }
