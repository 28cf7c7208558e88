/*
 * host_backend.c -- the host backend's table and communicator lifecycle: unique ids, init (one
 * rank, or all ranks of this process), split, shrink, finalize, abort, destroy.
 *
 * Communicators of split and shrink get a segment name derived from the parent's secret, the
 * number of earlier splits and shrinks, and the color (or the exclude list), so every member
 * computes the same name without talking to the others, and nobody else can guess it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "core/op.h"
#include "core/trace.h"

static const char mg__hid_magic[8] = MG__HOST_ID_MAGIC;

static void mg__hid_name(mg__hid_t *id) {
  static const char hex[] = "0123456789abcdef";
  char *p = id->name + snprintf(id->name, sizeof id->name, "/mgcomm-");
  for (int i = 0; i < 16; i++) {
    *p++ = hex[id->secret[i] >> 4];
    *p++ = hex[id->secret[i] & 15];
  }
  *p = '\0';
}

/* The id of a child communicator: a function of the parent's secret and (a, b, c). */
static void mg__hid_derive(const mg__hid_t *parent, uint64_t a, uint64_t b, uint64_t c,
                           mg__hid_t *child) {
  uint64_t lo, hi;
  memcpy(&lo, parent->secret, 8);
  memcpy(&hi, parent->secret + 8, 8);
  uint64_t t = mg__mix64(a ^ mg__mix64(b ^ mg__mix64(c)));
  uint64_t nlo = mg__mix64(lo ^ t), nhi = mg__mix64(hi ^ mg__mix64(t ^ nlo));
  memset(child, 0, sizeof *child);
  memcpy(child->magic, mg__hid_magic, sizeof child->magic);
  memcpy(child->secret, &nlo, 8);
  memcpy(child->secret + 8, &nhi, 8);
  mg__hid_name(child);
}

static mg_status_t h_available(void) { return MG_OK; }

mg_status_t mg__host_unique_id(mg_unique_id_t *uid) {
  mg__hid_t id;
  memset(&id, 0, sizeof id);
  memcpy(id.magic, mg__hid_magic, sizeof id.magic);
  MG_CHECK(mg__random_bytes(id.secret, sizeof id.secret));
  mg__hid_name(&id);
  memset(uid, 0, sizeof *uid);
  memcpy(uid->internal, &id, sizeof id);
  return MG_OK;
}

static mg_status_t mg__hid_parse(const mg_unique_id_t *uid, mg__hid_t *id, const char *fn) {
  memcpy(id, uid->internal, sizeof *id);
  if (memcmp(id->magic, mg__hid_magic, sizeof id->magic) != 0 ||
      memchr(id->name, '\0', sizeof id->name) == NULL || strncmp(id->name, "/mgcomm-", 8) != 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: id is not a host-backend unique id (made by mg_unique_id_create for "
                     "MG_BACKEND_HOST?)", fn);
  return MG_OK;
}

/* Attaches comm's rank to the segment of id, without waiting for the other ranks; local: every
 * rank is known to be in this process (mg__hshm_attach). */
static mg_status_t mg__attach(mg_comm_t *comm, const mg__hid_t *id, int local, double deadline) {
  mg__hcomm_t *hc = mg__hcomm(comm);
  hc->id = *id;
  hc->step = 0;
  hc->slot_steps = 0;
  hc->a2av_staged = 0;
  mg__hpace_init(&hc->pace);
  return mg__hshm_attach(&hc->shm, id->name, comm->nranks, comm->rank, local, deadline,
                         &comm->aborting);
}

/* Leaves a segment after a failed init: a rank that only timed out does not make the others
 * fail early (they report the ranks that are really missing). */
static void mg__init_failed(mg_comm_t *comm, mg_status_t st) {
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  mg__hshm_fail(s, st == MG_ERR_TIMED_OUT ? MG__CAUSE_TIMEOUT : comm->rank);
  mg__hshm_detach(s, MG__HRANK_FAILED);
}

mg_status_t mg__host_join(mg_comm_t *comm, const mg_unique_id_t *uid, double deadline,
                          const char *fn) {
  mg__hid_t id;
  MG_CHECK(mg__hid_parse(uid, &id, fn));
  MG_CHECK(mg__attach(comm, &id, 0, deadline));
  mg_status_t st = mg__hshm_wait_all(&mg__hcomm(comm)->shm, deadline, &comm->aborting, fn);
  if (st < 0) mg__init_failed(comm, st);
  return st;
}

static mg_status_t h_init(mg_comm_t *comm, const mg_unique_id_t *uid, double deadline) {
  return mg__host_join(comm, uid, deadline, "mg_comm_init_rank");
}

static mg_status_t h_init_all(mg_comm_t **comms, int n, const int *devices, double deadline) {
  mg_unique_id_t uid;
  mg__hid_t id;
  MG_CHECK(mg__host_unique_id(&uid));
  memcpy(&id, uid.internal, sizeof id);
  mg_status_t st = MG_OK;
  int attached = 0;
  /* One thread attaches them all: the first makes the segment, the others take its descriptor
   * from it in this process (none of them answers at the socket before all are attached). */
  for (; attached < n && st >= 0; attached++) st = mg__attach(comms[attached], &id, 1, deadline);
  if (st < 0) attached--; /* the one that failed left nothing mapped */
  for (int i = 0; i < attached && st >= 0; i++) /* every rank's verdict first, then all of them */
    st = mg__hshm_wait_attached(&mg__hcomm(comms[i])->shm, deadline, &comms[i]->aborting,
                                "mg_comm_init_all");
  for (int i = 0; i < attached && st >= 0; i++)
    st = mg__hshm_wait_all(&mg__hcomm(comms[i])->shm, deadline, &comms[i]->aborting,
                           "mg_comm_init_all");
  if (st < 0)
    for (int i = 0; i < attached; i++) mg__init_failed(comms[i], st);
  return st;
}

mg_status_t mg__internal(mg_comm_t *comm, mg__opkind_t kind, const void *send, void *recv,
                                size_t count, double deadline) {
  mg__op_t op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.comm = comm;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.dtype = MG_INT64;
  op.redop.op = MG_MAX;
  op.root = -1;
  op.deadline = deadline;
  pthread_mutex_lock(&comm->seq_lock);
  /* numbered and recorded like any other: every rank agrees */
  mg__op_number(&op, 1, mg__now_coarse());
  pthread_mutex_unlock(&comm->seq_lock);
  mg__op_t *one = &op;
  mg_status_t st = mg__host_launch(&one, 1);
  mg__trace_end(&op);
  return st;
}

/* A child of split or shrink: its ranks are some of comm's, all in this process if comm's are. */
static mg_status_t mg__child_init(const mg_comm_t *comm, mg_comm_t *child, const mg__hid_t *id,
                                  double deadline, const char *fn) {
  mg_status_t st = mg__attach(child, id, !mg__hcomm(comm)->shm.processes, deadline);
  if (st >= 0) {
    st = mg__hshm_wait_all(&mg__hcomm(child)->shm, deadline, &child->aborting, fn);
    if (st < 0) mg__init_failed(child, st);
  }
  return st;
}

static mg_status_t h_split(mg_comm_t *comm, int color, int key, mg_comm_t *child,
                           double deadline) {
  const int n = comm->nranks;
  int64_t mine[2] = {color, key};
  int64_t *all = malloc(sizeof *all * 2 * (size_t)n);
  if (all == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "mg_comm_split: out of memory");
  mg_status_t st = mg__internal(comm, MG_OPK_ALL_GATHER, mine, all, 2, deadline);
  if (st < 0) {
    mg__error_prefix("mg_comm_split: exchanging colors");
    free(all);
    return st;
  }
  if (child != NULL) {
    /* My place among the ranks of my color, ordered by key, then by rank in comm. */
    int size = 0, rank = 0;
    for (int r = 0; r < n; r++) {
      if (all[2 * r] != color) continue;
      size++;
      if (all[2 * r + 1] < key || (all[2 * r + 1] == key && r < comm->rank)) rank++;
    }
    child->nranks = size;
    child->rank = rank;
    mg__hid_t id;
    mg__hid_derive(&mg__hcomm(comm)->id, comm->split_seq, (uint64_t)(uint32_t)color, 0x5b17, &id);
    st = mg__child_init(comm, child, &id, deadline, "mg_comm_split");
  }
  free(all);
  return st;
}

static mg_status_t h_shrink(mg_comm_t *comm, const int *exclude, int nexclude, mg_comm_t *child,
                            double deadline) {
  uint64_t h = 0x5a41;
  int below = 0;
  for (int i = 0; i < nexclude; i++) {
    h = mg__mix64(h ^ (uint64_t)(uint32_t)exclude[i]);
    if (exclude[i] < comm->rank) below++;
  }
  child->nranks = comm->nranks - nexclude;
  child->rank = comm->rank - below;
  mg__hid_t id;
  /* The exclude list is part of the name: survivors that disagree on it never meet. */
  mg__hid_derive(&mg__hcomm(comm)->id, comm->split_seq, h, (uint64_t)nexclude, &id);
  return mg__child_init(comm, child, &id, deadline, "mg_comm_shrink");
}

static mg_status_t h_finalize(mg_comm_t *comm, double deadline) {
  /* Nothing is pending on the host backend; finalize is a barrier: a rank that returns from it
   * knows that every rank reached it. Leaving needs no barrier (host_coll.c, mg__hx_check: a
   * rank gone after an operation was decided is no failure of it). */
  int64_t one = 1, out = 0;
  mg_status_t st = mg__internal(comm, MG_OPK_ALL_REDUCE, &one, &out, 1, deadline);
  if (st < 0) mg__error_prefix("mg_comm_finalize");
  return st;
}

static void h_interrupt(mg_comm_t *comm) {
  mg__hcomm_t *hc = mg__hcomm(comm);
  if (hc->shm.base != NULL) mg__hshm_wake(&hc->shm);
}

/* The peers learn of the abort at once; the mapping stays until destroy, so that threads still
 * reading this rank's progress (a timeout message, a trace dump) never touch unmapped memory.
 * The abort that mg_comm_destroy makes of a communicator that was neither finalized nor aborted
 * (comm->leaving) publishes nothing: it runs under the communicator's lock, so no
 * operation of this rank is inside the backend, and one that the abort ended published its own
 * failure. The rank merely leaves, and h_destroy says so (MG__HRANK_LEFT): a rank whose
 * operations returned may leave at once, and its peers must not take that for an abort. */
static void h_abort(mg_comm_t *comm) {
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  if (s->base != NULL && !comm->leaving) mg__hshm_fail(s, comm->rank);
}

/* The peers learn of it as of an abort (their waits on this rank fail, naming it); this rank's
 * own waits stop when the core sets comm->aborting, right after. */
static mg_status_t h_revoke(mg_comm_t *comm, double deadline) {
  (void)deadline;
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  if (s->base != NULL) mg__hshm_fail(s, comm->rank);
  return MG_OK;
}

static void h_destroy(mg_comm_t *comm) { mg__hshm_detach(&mg__hcomm(comm)->shm, MG__HRANK_LEFT); }

static mg_status_t h_async_error(mg_comm_t *comm) {
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  if (s->base == NULL) return MG_OK;
  for (int r = 0; r < comm->nranks; r++) {
    char why[160];
    int culprit;
    /* A rank that destroyed its communicator left; that breaks nothing by itself: an operation
     * that still needs it fails, naming it. */
    if (r == comm->rank || atomic_load(&s->ranks[r].state) == MG__HRANK_LEFT) continue;
    mg_status_t ps = mg__hshm_peer_status(s, r, why, sizeof why, &culprit);
    /* A peer that failed because of this rank is not a remote failure: this rank's own
     * operation reports what happened. */
    if (ps < 0 && culprit != comm->rank) return mg__error(ps, "host backend: %s", why);
  }
  return MG_OK;
}

static mg_status_t h_check_op(const mg__op_t *op, const char *fn) {
  if (op->stream != NULL && op->hstream == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: stream %p is not a host stream; on the host backend pass NULL (run "
                     "before returning) or a stream of mg_stream_create", fn, (void *)op->stream);
  return MG_OK;
}

/* ---- progress ---- */

static void h_op_enqueued(const mg__op_t *op) {
  mg__hshm_t *s = &mg__hcomm(op->comm)->shm;
  if (s->base == NULL) return;
  mg__hshm_desc_t *d = &s->ranks[s->me].enq;
  atomic_store_explicit(&d->seq1, 0, memory_order_relaxed); /* readers retry while it changes */
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&d->count, op->count, memory_order_relaxed);
  atomic_store_explicit(&d->kind, (int32_t)op->kind, memory_order_relaxed);
  atomic_store_explicit(&d->dtype, (int32_t)op->dtype, memory_order_relaxed);
  atomic_store_explicit(&d->root, (int32_t)op->root, memory_order_relaxed);
  atomic_store_explicit(&d->seq1, op->seq + 1, memory_order_release);
}

static mg_status_t h_peer_progress(mg_comm_t *comm, int r, mg__progress_t *out) {
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  if (s->base == NULL)
    return mg__error(MG_ERR_NOT_SUPPORTED, "rank %d's segment is not mapped", comm->rank);
  const mg__hshm_rank_t *rb = &s->ranks[r];
  for (int tries = 0;; tries++) {
    uint64_t q = atomic_load_explicit(&rb->enq.seq1, memory_order_acquire);
    out->count = atomic_load_explicit(&rb->enq.count, memory_order_relaxed);
    out->kind = (mg__opkind_t)atomic_load_explicit(&rb->enq.kind, memory_order_relaxed);
    out->dtype = (mg_dtype_t)atomic_load_explicit(&rb->enq.dtype, memory_order_relaxed);
    out->root = atomic_load_explicit(&rb->enq.root, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    uint64_t again = atomic_load_explicit(&rb->enq.seq1, memory_order_relaxed);
    uint64_t done = atomic_load_explicit(&rb->done_seq, memory_order_acquire);
    /* seq1 is 0 while the rank rewrites the descriptor, and moves when it enqueues again. */
    int torn = again != q || (q == 0 && done != 0);
    if (torn && tries < 100) continue;
    if (torn) return mg__error(MG_ERR_NOT_SUPPORTED, "rank %d's progress kept changing", r);
    out->enqueued1 = q;
    out->completed1 = done;
    return MG_OK;
  }
}

static uint64_t h_comm_tag(const mg_comm_t *comm) {
  uint64_t lo, hi;
  memcpy(&lo, mg__hcomm(comm)->id.secret, 8);
  memcpy(&hi, mg__hcomm(comm)->id.secret + 8, 8);
  return mg__mix64(lo ^ mg__mix64(hi));
}

static mg_status_t h_redop_create(mg_comm_t *comm, mg_dtype_t dtype, mg__redop_t *redop) {
  return MG_OK; /* the captured scalar is all the host backend needs */
}

static void h_redop_destroy(mg_comm_t *comm, mg__redop_t *redop) {}

/* Memory: host memory, aligned as a GPU allocation would be, so that a program written for the
 * NCCL backend runs unchanged; registrations have nothing to do (the core records them). */
static mg_status_t h_mem_alloc(mg_comm_t *comm, size_t bytes, void **ptr) {
  int e = posix_memalign(ptr, 4096, bytes);
  if (e != 0) return mg__error_errno(MG_ERR_OUT_OF_MEMORY, e, "posix_memalign(%zu bytes)", bytes);
  return MG_OK;
}

static mg_status_t h_mem_free(void *ptr, int device) {
  free(ptr);
  return MG_OK;
}

static mg_status_t h_mem_copy(mg_comm_t *comm, void *dst, const void *src, size_t bytes,
                              double deadline) {
  memcpy(dst, src, bytes);
  return MG_OK;
}

static mg_status_t h_mem_register(mg_comm_t *comm, void *buf, size_t bytes, int flags,
                                  double deadline, void **handle) {
  *handle = NULL;
  return MG_OK;
}

static mg_status_t h_mem_deregister(mg_comm_t *comm, void *handle, int flags) { return MG_OK; }

const mg__backend_t mg__backend_host = {
    .version = MG__BACKEND_VERSION,
    .name = "host",
    .id = MG_BACKEND_HOST,
    .caps = MG__CAP_SPLIT | MG__CAP_SHRINK | MG__CAP_REVOKE | MG__CAP_PREMUL | MG__CAP_PROGRESS |
            MG__CAP_MARKS,
    .comm_priv_size = sizeof(mg__hcomm_t),
    .available = h_available,
    .unique_id = mg__host_unique_id,
    .comm_init = h_init,
    .comm_init_all = h_init_all,
    .comm_split = h_split,
    .comm_shrink = h_shrink,
    .comm_revoke = h_revoke,
    .comm_finalize = h_finalize,
    .comm_interrupt = h_interrupt,
    .comm_abort = h_abort,
    .comm_destroy = h_destroy,
    .async_error = h_async_error,
    .check_op = h_check_op,
    .redop_create = h_redop_create,
    .redop_destroy = h_redop_destroy,
    .launch = mg__host_launch,
    .mem_alloc = h_mem_alloc,
    .mem_free = h_mem_free,
    .mem_copy = h_mem_copy,
    .mem_register = h_mem_register,
    .mem_deregister = h_mem_deregister,
    .mark_priv_size = MG__HMARK_PRIV_SIZE,
    .mark_record = mg__hmark_record,
    .mark_query = mg__hmark_query,
    .mark_doomed = mg__hmark_doomed,
    .mark_notify = mg__hmark_notify,
    .mark_wait = mg__hmark_wait,
    .mark_release = mg__hmark_release,
    .mark_elapsed = mg__hmark_elapsed,
    .op_enqueued = h_op_enqueued,
    .peer_progress = h_peer_progress,
    .comm_tag = h_comm_tag,
    .check_exchange = mg__host_check_exchange,
    .comm_suspend = mg__host_suspend,
    .comm_resume = mg__host_resume,
    .comm_mem_stats = mg__host_mem_stats,
    .comm_properties = mg__host_properties,
    .grow_id = mg__host_grow_id,
    .comm_grow = mg__host_grow,
};
