/*
 * nccl_mark.c -- completion on the NCCL backend (backend.h, "completion tracking"): a mark is a
 * CUDA event recorded on the stream; the hostfn strategy queues a host function behind it that
 * only calls mg__mark_signal; poll and the watchdog's checks query the event (and the
 * communicator's asynchronous error); sync polls the event in a bounded loop (never
 * cuEventSynchronize, which no deadline or abort can interrupt). Also the library's own stream
 * of a communicator (the world's rank streams).
 *
 * Events come from a pool per device, shared by the communicators of the process, because a
 * mark is released after its communicator may be gone and, from a host function, on a thread
 * where CUDA must not be called: mark_release only puts the event back (a leaf lock, no CUDA
 * call), and mark_record, on an ordinary thread, creates events and destroys a surplus. The pool
 * keeps the primary context of its device retained for the rest of the process, so that pooled
 * events stay valid when the last communicator of the device is destroyed (the CUDA runtime
 * keeps it as long).
 *
 * Timed marks (mg_record_timed) use events made with timing; the others are made with
 * CU_EVENT_DISABLE_TIMING, which CUDA records more cheaply. The two kinds are pooled apart.
 *
 * Divisions: the pool; marks; the own stream.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/nccl/nccl.h"
#include "base/clock.h"

/* ---- the pool ------------------------------------------------------------------------------ */

/* Pooled events beyond this many per kind and device are destroyed by the next mark_record. */
#define MG__NEV_KEEP 1024

typedef struct mg__nev {
  mg__CUevent ev;
  struct mg__nevpool *pool;
  int timed;              /* made without CU_EVENT_DISABLE_TIMING */
  struct mg__nev *next;   /* in the pool's free list */
} mg__nev_t;

typedef struct mg__nevpool {
  int ordinal;
  mg__CUdevice dev;
  mg__CUcontext ctx;      /* the device's primary context, retained for the process's life */
  pthread_mutex_t lock;   /* leaf, never held across a CUDA call: guards the free lists */
  mg__nev_t *free[2];     /* [timed] */
  int nfree[2];
  struct mg__nevpool *next;
} mg__nevpool_t;

static pthread_mutex_t mg__nevpools_lock = PTHREAD_MUTEX_INITIALIZER;
static mg__nevpool_t *mg__nevpools; /* one per device used, never freed */

mg_status_t mg__nccl_evpool(int ordinal, const char *fn, mg__nevpool_t **out) {
  pthread_mutex_lock(&mg__nevpools_lock);
  mg__nevpool_t *p = mg__nevpools;
  while (p != NULL && p->ordinal != ordinal) p = p->next;
  mg_status_t st = MG_OK;
  if (p == NULL) {
    p = calloc(1, sizeof *p);
    if (p == NULL) {
      st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory for the event pool of device %d",
                     fn, ordinal);
    } else {
      st = mg__device_ctx_retain(ordinal, fn, &p->dev, &p->ctx);
      if (st == MG_OK) {
        p->ordinal = ordinal;
        pthread_mutex_init(&p->lock, NULL);
        p->next = mg__nevpools;
        mg__nevpools = p;
      } else {
        free(p);
        p = NULL;
      }
    }
  }
  pthread_mutex_unlock(&mg__nevpools_lock);
  if (st == MG_OK) *out = p;
  return st;
}

/* An event of the kind asked for, from the pool or new; p's context is current. Destroys what
 * the pool holds beyond MG__NEV_KEEP of that kind. */
static mg_status_t mg__nev_get(mg__nevpool_t *p, int timed, mg__nev_t **out) {
  mg__nev_t *e, *surplus = NULL;
  pthread_mutex_lock(&p->lock);
  e = p->free[timed];
  if (e != NULL) {
    p->free[timed] = e->next;
    p->nfree[timed]--;
  }
  while (p->nfree[timed] > MG__NEV_KEEP) {
    mg__nev_t *x = p->free[timed];
    p->free[timed] = x->next;
    p->nfree[timed]--;
    x->next = surplus;
    surplus = x;
  }
  pthread_mutex_unlock(&p->lock);
  while (surplus != NULL) {
    mg__nev_t *x = surplus;
    surplus = x->next;
    /* Fails only for an event that is not one: there is nothing left to release then. */
    (void)mg__cuda.EventDestroy(x->ev);
    free(x);
  }
  if (e != NULL) {
    *out = e;
    return MG_OK;
  }
  e = calloc(1, sizeof *e);
  if (e == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "out of memory for an event");
  mg__CUresult r = mg__cuda.EventCreate(&e->ev, timed ? MG__CU_EVENT_DEFAULT
                                                      : MG__CU_EVENT_DISABLE_TIMING);
  if (r != MG__CUDA_SUCCESS) {
    free(e);
    return mg__cu_error(r, timed ? "cuEventCreate(CU_EVENT_DEFAULT)"
                                 : "cuEventCreate(CU_EVENT_DISABLE_TIMING)");
  }
  e->pool = p;
  e->timed = timed;
  *out = e;
  return MG_OK;
}

/* Back to its pool: no CUDA call, so that a host function may do it. */
static void mg__nev_put(mg__nev_t *e) {
  mg__nevpool_t *p = e->pool;
  pthread_mutex_lock(&p->lock);
  e->next = p->free[e->timed];
  p->free[e->timed] = e;
  p->nfree[e->timed]++;
  pthread_mutex_unlock(&p->lock);
}

/* ---- marks -------------------------------------------------------------------------------- */

typedef struct {
  mg__nev_t *e; /* the event recorded on the stream */
} mg__nmark_t;
_Static_assert(sizeof(mg__nmark_t) == MG__NMARK_PRIV_SIZE, "nccl_backend.c's mark_priv_size");

static mg__nmark_t *mg__nm(mg__mark_t *m) { return (mg__nmark_t *)m->priv; }

mg_status_t mg__nccl_mark_record(mg__mark_t *m) {
  mg_comm_t *comm = m->comm;
  mg__ncomm_t *nx = mg__ncomm(comm);
  const mg__CUstream s = (mg__CUstream)m->stream;
  if (nx->check_ptrs) {
    char who[64];
    snprintf(who, sizeof who, "rank %d of %d", comm->rank, comm->nranks);
    MG_CHECK(mg__device_check_stream(s, nx->ctx, comm->device, who));
  }
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg__nev_t *e = NULL;
  mg_status_t st = mg__nev_get(nx->evpool, m->timed != 0, &e);
  if (st == MG_OK) {
    mg__CUresult r = mg__cuda.EventRecord(e->ev, s);
    if (r != MG__CUDA_SUCCESS) {
      st = mg__cu_error(r, "cuEventRecord");
      mg__nev_put(e);
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
  mg__nev_t *e = mg__nm(m)->e;
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

void mg__nccl_mark_release(mg__mark_t *m) { mg__nev_put(mg__nm(m)->e); }

mg_status_t mg__nccl_mark_elapsed(mg__mark_t *start, mg__mark_t *end, double *seconds) {
  mg__nev_t *a = mg__nm(start)->e, *z = mg__nm(end)->e;
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
