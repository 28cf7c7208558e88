/*
 * nccl_mark.c -- completion on the NCCL backend (backend.h, "completion tracking"): a mark is a
 * CUDA event recorded on the stream; the hostfn strategy queues a host function behind it that
 * only calls mg__mark_signal; poll and the watchdog's checks query the event (and the
 * communicator's asynchronous error); sync polls the event in a bounded loop (never
 * cuEventSynchronize, which no deadline or abort can interrupt). Also the library's own stream
 * of a communicator (the world's rank streams).
 *
 * Events come from the device's pool (device/evpool.h), because a mark is released after its
 * communicator may be gone and, from a host function, on a thread where CUDA must not be called:
 * mark_release only puts the event back. Timed marks (mg_record_timed) use timed events.
 *
 * Divisions: marks; the own stream.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/nccl/nccl.h"
#include "base/clock.h"

/* ---- marks -------------------------------------------------------------------------------- */

typedef struct {
  mg__ev_t *e; /* the event recorded on the stream */
} mg__nmark_t;
_Static_assert(sizeof(mg__nmark_t) == MG__NMARK_PRIV_SIZE, "nccl_backend.c's mark_priv_size");

static mg__nmark_t *mg__nm(mg__mark_t *m) { return (mg__nmark_t *)m->priv; }

mg_status_t mg__nccl_mark_record(mg__mark_t *m) {
  mg_comm_t *comm = m->comm;
  mg__ncomm_t *nx = mg__ncomm(comm);
  const mg__CUstream s = (mg__CUstream)m->stream;
  if (nx->check_ptrs) MG_CHECK(mg__nccl_check_stream(comm, m->stream, NULL));
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg__ev_t *e = NULL;
  mg_status_t st = mg__ev_take(nx->evpool, m->timed != 0, &e);
  if (st == MG_OK) {
    mg__CUresult r = mg__cuda.EventRecord(e->ev, s);
    if (r != MG__CUDA_SUCCESS) {
      st = mg__cu_error(r, "cuEventRecord");
      mg__ev_put(e);
    }
  }
  mg__device_ctx_leave(nx->ctx, saved);
  if (st < 0) {
    mg__error_prefix("rank %d of %d (device %d), stream %p", comm->rank, comm->nranks,
                     comm->device, (void *)s);
    return st;
  }
  mg__nm(m)->e = e;
  return MG_OK;
}

/* cuEventQuery of the mark's event: 1 reached, 0 not yet, or the error (message set). */
static mg_status_t mg__nmark_reached(mg__mark_t *m, int *reached) {
  mg__ev_t *e = mg__nm(m)->e;
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(e->pool->ctx, &saved));
  mg__CUresult r = mg__cuda.EventQuery(e->ev);
  mg__device_ctx_leave(e->pool->ctx, saved);
  if (r == MG__CUDA_SUCCESS || r == MG__CUDA_ERROR_NOT_READY) {
    *reached = r == MG__CUDA_SUCCESS;
    return MG_OK;
  }
  /* A fault of the context (an illegal address in any kernel, a launch failure): the stream will
   * never get there, and CUDA will not run a host function queued behind the mark either. */
  mg_status_t st = mg__cu_error(r, "cuEventQuery");
  mg__error_prefix("rank %d of %d (device %d): the stream failed before it reached the mark",
                   m->comm->rank, m->comm->nranks, m->comm->device);
  return st;
}

mg_status_t mg__nccl_mark_query(mg__mark_t *m) {
  int reached = 0;
  MG_CHECK(mg__nmark_reached(m, &reached));
  if (reached) return MG_OK;
  /* Not yet: an asynchronous error of NCCL means it never will be. */
  MG_CHECK(mg__nccl_async_error(m->comm));
  return MG_INPROGRESS;
}

/* The host function: CUDA calls it on a thread of its own when the stream gets there. It makes
 * no CUDA call and takes only leaf locks (backend.h, mg__mark_signal). It passes MG_OK: a mark
 * whose operations were cut short by an abort belongs to a request that the abort has ended
 * already (exactly once: this later signal finds it complete). */
static void mg__nmark_hostfn(void *mark) { mg__mark_signal(mark, MG_OK, NULL); }

mg_status_t mg__nccl_mark_notify(mg__mark_t *m) {
  mg__ncomm_t *nx = mg__ncomm(m->comm);
  const mg__CUstream s = (mg__CUstream)m->stream;
  mg__CUcontext saved = NULL;
  /* The context is current for a NULL (legacy) stream: it means that context's. */
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg__CUresult r = mg__cuda.LaunchHostFunc(s, mg__nmark_hostfn, m);
  mg__device_ctx_leave(nx->ctx, saved);
  if (r == MG__CUDA_SUCCESS) return MG_OK;
  mg_status_t st = mg__cu_error(r, "cuLaunchHostFunc");
  mg__error_prefix("rank %d of %d (device %d), stream %p", m->comm->rank, m->comm->nranks,
                   m->comm->device, (void *)s);
  return st;
}

mg_status_t mg__nccl_mark_wait(mg__mark_t *m, double deadline) {
  mg_comm_t *comm = m->comm;
  mg__nccl_backoff_t b = {0, 0};
  const double start = mg__now();
  for (;;) {
    int reached = 0;
    MG_CHECK(mg__nmark_reached(m, &reached));
    if (reached) return MG_OK;
    MG_CHECK(mg__nccl_async_error(comm));
    if (atomic_load(&comm->aborting))
      return mg__error(MG_ERR_ABORTED, "rank %d of %d (device %d): the communicator was aborted "
                       "while the stream had not reached the mark", comm->rank, comm->nranks,
                       comm->device);
    const double now = mg__now();
    if (now >= deadline)
      return mg__error(MG_ERR_TIMED_OUT, "rank %d of %d (device %d): the stream had not reached "
                       "the mark after %.3g s", comm->rank, comm->nranks, comm->device,
                       now - start);
    mg__nccl_backoff(&b, now);
  }
}

void mg__nccl_mark_release(mg__mark_t *m) { mg__ev_put(mg__nm(m)->e); }

mg_status_t mg__nccl_mark_elapsed(mg__mark_t *start, mg__mark_t *end, double *seconds) {
  mg__ev_t *a = mg__nm(start)->e, *z = mg__nm(end)->e;
  MG_ASSERT(a->timed && z->timed); /* the core asks only for marks of mg_record_timed */
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(a->pool->ctx, &saved));
  float ms = 0;
  mg__CUresult r = mg__cuda.EventElapsedTime(&ms, a->ev, z->ev);
  mg__device_ctx_leave(a->pool->ctx, saved);
  if (r != MG__CUDA_SUCCESS) return mg__cu_error(r, "cuEventElapsedTime");
  *seconds = (double)ms * 1e-3;
  return MG_OK;
}

/* ---- the own stream ------------------------------------------------------------------------ */

mg_status_t mg__nccl_comm_stream(mg_comm_t *comm, mg_stream_t *out) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  if (nx->own_stream == NULL) {
    mg__CUcontext saved = NULL;
    MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
    /* Non-blocking: it neither waits for the legacy default stream nor holds it up. */
    mg__CUresult r = mg__cuda.StreamCreate(&nx->own_stream, MG__CU_STREAM_NON_BLOCKING);
    mg__device_ctx_leave(nx->ctx, saved);
    if (r != MG__CUDA_SUCCESS) {
      nx->own_stream = NULL;
      mg_status_t st = mg__cu_error(r, "cuStreamCreate");
      mg__error_prefix("a stream for rank %d of %d (device %d)", comm->rank, comm->nranks,
                       comm->device);
      return st;
    }
  }
  *out = (mg_stream_t)nx->own_stream;
  return MG_OK;
}
