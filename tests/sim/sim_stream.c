/*
 * sim_stream.c -- streams and events of the simulated CUDA driver.
 *
 * A stream is an ordered queue of items (a function and its argument) run one after another by
 * a thread of the stream's own, created with its first item; that thread is what "the GPU" is
 * for the stream. An item may block (a collective waiting for its peers): the stream then stays
 * busy, as a GPU stays in a hung kernel. cuStreamDestroy returns at once; the thread runs what
 * is queued and then frees the stream, as CUDA frees a destroyed stream once its work is done.
 *
 * Every context has a default stream (the handles NULL, CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD all name it), made on first use and never destroyed. Not simulated: the
 * legacy default stream's implicit synchronisation with blocking streams (mgcomm creates only
 * non-blocking streams), per-thread default streams (they are the legacy one here).
 *
 * Events: a record is an item that notes the time (CLOCK_MONOTONIC) when the stream gets
 * there; a wait is an item that blocks its stream until the event's latest record at the time of
 * cuStreamWaitEvent has been reached. An event destroyed while a record or wait of it is queued
 * lives until those have run (reference count), as CUDA's.
 *
 * Host functions run on the stream's thread with sim_in_hostfn set, so that a CUDA call made
 * from one answers CUDA_ERROR_NOT_PERMITTED.
 *
 * Lock order: sim_streams_lock, then one stream's lock (a stream is looked up and locked under
 * the registry's lock, so that cuStreamDestroy cannot free it in between). sim_ev_lock is a
 * leaf. Items run with no lock held.
 *
 * Divisions: streams (lookup, the stream's thread, queueing); the stream API; events; the
 * internal API.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_cuda_int.h"

/* ---- streams ------------------------------------------------------------------------------- */

typedef struct sim_item {
  mgsim_fn_t fn;
  void *arg;
  int hostfn;            /* a cuLaunchHostFunc function: run with sim_in_hostfn set */
  struct sim_item *next;
} sim_item_t;

struct mg__CUstream_st {
  mg__CUcontext ctx;      /* owner */
  unsigned flags;         /* CU_STREAM_* of cuStreamCreate */
  unsigned id;            /* for the thread's name, and to tell a reused address apart */
  pthread_mutex_t lock;   /* the fields below */
  pthread_cond_t cv;      /* broadcast when an item is queued or done, or the stream destroyed */
  sim_item_t *head, *tail;
  uint64_t pushed, done;  /* items queued and run so far */
  int started;            /* the thread exists (it is detached and frees the stream) */
  int destroyed;          /* cuStreamDestroy was called: the thread ends once the queue drains */
  int waiters;            /* threads blocked on cv for this stream; the free waits for them */
  struct mg__CUstream_st *next; /* in sim_streams */
};
typedef struct mg__CUstream_st sim_stream_t;

static pthread_mutex_t sim_streams_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_stream_t *sim_streams; /* streams of cuStreamCreate not yet destroyed */
static int sim_nstreams;
static unsigned sim_stream_ids;

static int sim_is_default(mg__CUstream h) {
  return h == NULL || h == MG__CU_STREAM_LEGACY || h == MG__CU_STREAM_PER_THREAD;
}

static sim_stream_t *sim_stream_new(mg__CUcontext ctx, unsigned flags) {
  sim_stream_t *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->ctx = ctx;
  s->flags = flags;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  return s;
}

static void sim_stream_free(sim_stream_t *s) {
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cv);
  free(s);
}

/* Resolves h (a default handle: ctx's default stream, or the current context's when ctx is
 * NULL) and returns it locked in *out. */
static mg__CUresult sim_stream_lock(mg__CUstream h, mg__CUcontext ctx, sim_stream_t **out) {
  mg__CUresult r = MG__CUDA_SUCCESS;
  sim_stream_t *s = NULL;
  pthread_mutex_lock(&sim_streams_lock);
  if (sim_is_default(h)) {
    mg__CUcontext c = ctx != NULL ? ctx : sim_cu_current();
    if (c == NULL) {
      r = MG__CUDA_ERROR_INVALID_CONTEXT;
    } else {
      if (c->legacy == NULL) {
        c->legacy = sim_stream_new(c, MG__CU_STREAM_DEFAULT);
        if (c->legacy != NULL) c->legacy->id = ++sim_stream_ids;
      }
      s = c->legacy;
      if (s == NULL) r = MG__CUDA_ERROR_OUT_OF_MEMORY;
    }
  } else {
    for (s = sim_streams; s != NULL && s != h; s = s->next) continue;
    if (s == NULL) r = MG__CUDA_ERROR_INVALID_HANDLE; /* never made, or destroyed */
  }
  if (s != NULL) pthread_mutex_lock(&s->lock);
  pthread_mutex_unlock(&sim_streams_lock);
  *out = s;
  return r;
}

static void *sim_stream_main(void *arg) {
  sim_stream_t *s = arg;
  char name[16]; /* for debuggers only; named here: see sim_spawn */
  snprintf(name, sizeof name, "mgsim-s%u", s->id);
  (void)pthread_setname_np(pthread_self(), name);
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (s->head == NULL && !s->destroyed) pthread_cond_wait(&s->cv, &s->lock);
    if (s->head == NULL) break; /* destroyed, and everything it held has run */
    sim_item_t *it = s->head;
    s->head = it->next;
    if (s->head == NULL) s->tail = NULL;
    pthread_mutex_unlock(&s->lock);
    sim_in_hostfn = it->hostfn;
    it->fn(it->arg);
    sim_in_hostfn = 0;
    free(it);
    pthread_mutex_lock(&s->lock);
    s->done++;
    pthread_cond_broadcast(&s->cv);
  }
  while (s->waiters > 0) pthread_cond_wait(&s->cv, &s->lock);
  pthread_mutex_unlock(&s->lock);
  sim_stream_free(s);
  return NULL;
}

/* Queues an item on s (locked), starting its thread with the first one. */
static mg__CUresult sim_stream_push(sim_stream_t *s, mgsim_fn_t fn, void *arg, int hostfn) {
  sim_item_t *it = calloc(1, sizeof *it);
  if (it == NULL) return MG__CUDA_ERROR_OUT_OF_MEMORY;
  it->fn = fn;
  it->arg = arg;
  it->hostfn = hostfn;
  if (!s->started) {
    pthread_attr_t at;
    pthread_t th;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, sim_stream_main, s);
    pthread_attr_destroy(&at);
    if (rc != 0) {
      free(it);
      return MG__CUDA_ERROR_OUT_OF_MEMORY;
    }
    s->started = 1;
  }
  if (s->tail != NULL)
    s->tail->next = it;
  else
    s->head = it;
  s->tail = it;
  s->pushed++;
  pthread_cond_broadcast(&s->cv);
  return MG__CUDA_SUCCESS;
}

/* Waits, with s locked, until s has run `target` items. */
static void sim_stream_wait_locked(sim_stream_t *s, uint64_t target) {
  s->waiters++;
  while (s->done < target) pthread_cond_wait(&s->cv, &s->lock);
  s->waiters--;
  if (s->waiters == 0) pthread_cond_broadcast(&s->cv); /* a destroyed stream's thread waits */
}

int sim_stream_count(void) {
  pthread_mutex_lock(&sim_streams_lock);
  int n = sim_nstreams;
  pthread_mutex_unlock(&sim_streams_lock);
  return n;
}

/* ---- the stream API ------------------------------------------------------------------------ */

#define SIM_ENTER(call)                                   \
  do {                                                    \
    mg__CUresult sim_r_ = sim_cu_enter(call);             \
    if (sim_r_ != MG__CUDA_SUCCESS) return sim_r_;        \
  } while (0)

MGSIM_API mg__CUresult cuStreamCreate(mg__CUstream *stream, unsigned int flags) {
  SIM_ENTER("cuStreamCreate");
  if (stream == NULL || (flags & ~(unsigned)MG__CU_STREAM_NON_BLOCKING) != 0)
    return MG__CUDA_ERROR_INVALID_VALUE;
  mg__CUcontext ctx = NULL;
  mg__CUresult r = sim_cu_active(&ctx);
  if (r != MG__CUDA_SUCCESS) return r;
  sim_stream_t *s = sim_stream_new(ctx, flags);
  if (s == NULL) return MG__CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sim_streams_lock);
  s->id = ++sim_stream_ids;
  s->next = sim_streams;
  sim_streams = s;
  sim_nstreams++;
  pthread_mutex_unlock(&sim_streams_lock);
  *stream = s;
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuStreamDestroy_v2(mg__CUstream stream) {
  SIM_ENTER("cuStreamDestroy_v2");
  if (sim_is_default(stream)) return MG__CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim_streams_lock);
  sim_stream_t **pp = &sim_streams;
  while (*pp != NULL && *pp != stream) pp = &(*pp)->next;
  sim_stream_t *s = *pp;
  if (s == NULL) {
    pthread_mutex_unlock(&sim_streams_lock);
    return MG__CUDA_ERROR_INVALID_HANDLE;
  }
  *pp = s->next;
  sim_nstreams--;
  pthread_mutex_lock(&s->lock);
  pthread_mutex_unlock(&sim_streams_lock);
  /* Nobody can find it any more; its thread (if any) finishes the queue and frees it. */
  s->destroyed = 1;
  const int started = s->started;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  if (!started) sim_stream_free(s);
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuStreamSynchronize(mg__CUstream stream) {
  SIM_ENTER("cuStreamSynchronize");
  sim_stream_t *s = NULL;
  mg__CUresult r = sim_stream_lock(stream, NULL, &s);
  if (r != MG__CUDA_SUCCESS) return r;
  sim_stream_wait_locked(s, s->pushed);
  pthread_mutex_unlock(&s->lock);
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuStreamQuery(mg__CUstream stream) {
  SIM_ENTER("cuStreamQuery");
  sim_stream_t *s = NULL;
  mg__CUresult r = sim_stream_lock(stream, NULL, &s);
  if (r != MG__CUDA_SUCCESS) return r;
  r = s->done == s->pushed ? MG__CUDA_SUCCESS : MG__CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&s->lock);
  return r;
}

static atomic_int sim_stream_ctx_calls; /* cuStreamGetCtx calls */

int sim_stream_ctx_count(void) { return atomic_load(&sim_stream_ctx_calls); }

MGSIM_API mg__CUresult cuStreamGetCtx(mg__CUstream stream, mg__CUcontext *ctx) {
  SIM_ENTER("cuStreamGetCtx");
  atomic_fetch_add(&sim_stream_ctx_calls, 1);
  if (ctx == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  return mgsim_stream_owner(stream, NULL, ctx);
}

static atomic_int sim_hostfns; /* cuLaunchHostFunc calls that queued a function */

int sim_hostfn_count(void) { return atomic_load(&sim_hostfns); }

MGSIM_API mg__CUresult cuLaunchHostFunc(mg__CUstream stream, mg__CUhostFn fn, void *user_data) {
  SIM_ENTER("cuLaunchHostFunc");
  if (fn == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  atomic_fetch_add(&sim_hostfns, 1);
  sim_stream_t *s = NULL;
  mg__CUresult r = sim_stream_lock(stream, NULL, &s);
  if (r != MG__CUDA_SUCCESS) return r;
  r = sim_stream_push(s, fn, user_data, 1);
  pthread_mutex_unlock(&s->lock);
  return r;
}

/* ---- events -------------------------------------------------------------------------------- */

struct mg__CUevent_st {
  mg__CUcontext ctx;
  unsigned flags;        /* CU_EVENT_* of cuEventCreate */
  int refs;              /* the handle (until destroyed) and every queued record or wait */
  uint64_t recorded;     /* records made (the generation of the latest) */
  uint64_t reached;      /* the latest generation whose record a stream has reached */
  struct timespec when;  /* when `reached` was */
  struct mg__CUevent_st *next; /* in sim_events while not destroyed */
};
typedef struct mg__CUevent_st sim_event_t;

static pthread_mutex_t sim_ev_lock = PTHREAD_MUTEX_INITIALIZER; /* leaf: every event */
static pthread_cond_t sim_ev_cv = PTHREAD_COND_INITIALIZER;     /* some event was reached */
static sim_event_t *sim_events;
static int sim_nevents;

/* The live event h, under sim_ev_lock; NULL for one that is not (destroyed, never made). */
static sim_event_t *sim_event_find(mg__CUevent h) {
  sim_event_t *e = sim_events;
  while (e != NULL && e != h) e = e->next;
  return e;
}

static void sim_event_unref(sim_event_t *e) {
  if (--e->refs == 0) free(e);
}

int sim_event_count(void) {
  pthread_mutex_lock(&sim_ev_lock);
  int n = sim_nevents;
  pthread_mutex_unlock(&sim_ev_lock);
  return n;
}

typedef struct {
  sim_event_t *e;
  uint64_t gen;
} sim_evitem_t;

static void sim_record_run(void *arg) {
  sim_evitem_t *x = arg;
  pthread_mutex_lock(&sim_ev_lock);
  if (x->gen > x->e->reached) {
    x->e->reached = x->gen;
    clock_gettime(CLOCK_MONOTONIC, &x->e->when);
  }
  sim_event_unref(x->e);
  pthread_cond_broadcast(&sim_ev_cv);
  pthread_mutex_unlock(&sim_ev_lock);
  free(x);
}

static void sim_wait_run(void *arg) {
  sim_evitem_t *x = arg;
  pthread_mutex_lock(&sim_ev_lock);
  while (x->e->reached < x->gen) pthread_cond_wait(&sim_ev_cv, &sim_ev_lock);
  sim_event_unref(x->e);
  pthread_mutex_unlock(&sim_ev_lock);
  free(x);
}

MGSIM_API mg__CUresult cuEventCreate(mg__CUevent *event, unsigned int flags) {
  SIM_ENTER("cuEventCreate");
  /* DEFAULT, BLOCKING_SYNC (1), DISABLE_TIMING (2), INTERPROCESS (4) */
  if (event == NULL || (flags & ~7u) != 0) return MG__CUDA_ERROR_INVALID_VALUE;
  mg__CUcontext ctx = NULL;
  mg__CUresult r = sim_cu_active(&ctx);
  if (r != MG__CUDA_SUCCESS) return r;
  sim_event_t *e = calloc(1, sizeof *e);
  if (e == NULL) return MG__CUDA_ERROR_OUT_OF_MEMORY;
  e->ctx = ctx;
  e->flags = flags;
  e->refs = 1;
  pthread_mutex_lock(&sim_ev_lock);
  e->next = sim_events;
  sim_events = e;
  sim_nevents++;
  pthread_mutex_unlock(&sim_ev_lock);
  *event = e;
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuEventDestroy_v2(mg__CUevent event) {
  SIM_ENTER("cuEventDestroy_v2");
  pthread_mutex_lock(&sim_ev_lock);
  sim_event_t **pp = &sim_events;
  while (*pp != NULL && *pp != event) pp = &(*pp)->next;
  sim_event_t *e = *pp;
  if (e != NULL) {
    *pp = e->next;
    sim_nevents--;
    sim_event_unref(e); /* the handle's reference; queued records and waits keep theirs */
  }
  pthread_mutex_unlock(&sim_ev_lock);
  return e != NULL ? MG__CUDA_SUCCESS : MG__CUDA_ERROR_INVALID_HANDLE;
}

/* Queues a record (wait == 0) or a wait of event on stream. */
static mg__CUresult sim_event_enqueue(mg__CUevent event, mg__CUstream stream, int wait) {
  sim_evitem_t *x = calloc(1, sizeof *x);
  if (x == NULL) return MG__CUDA_ERROR_OUT_OF_MEMORY;
  sim_stream_t *s = NULL;
  mg__CUresult r = sim_stream_lock(stream, NULL, &s);
  if (r != MG__CUDA_SUCCESS) {
    free(x);
    return r;
  }
  /* The stream stays locked, so that records reach it in the order of their generations. */
  pthread_mutex_lock(&sim_ev_lock);
  sim_event_t *e = sim_event_find(event);
  if (e == NULL) {
    r = MG__CUDA_ERROR_INVALID_HANDLE;
  } else if (!wait && e->ctx != s->ctx) {
    r = MG__CUDA_ERROR_INVALID_HANDLE; /* an event records only on streams of its context */
  } else if (wait && e->recorded == 0) {
    r = MG__CUDA_SUCCESS; /* never recorded: nothing to wait for, as CUDA */
    free(x);
    x = NULL;
  } else {
    x->e = e;
    x->gen = wait ? e->recorded : ++e->recorded;
    e->refs++;
  }
  pthread_mutex_unlock(&sim_ev_lock);
  if (r == MG__CUDA_SUCCESS && x != NULL) {
    r = sim_stream_push(s, wait ? sim_wait_run : sim_record_run, x, 0);
    if (r != MG__CUDA_SUCCESS) {
      pthread_mutex_lock(&sim_ev_lock);
      if (!wait) e->recorded--; /* the stream is still locked: no later record was made */
      sim_event_unref(e);
      pthread_mutex_unlock(&sim_ev_lock);
      x = NULL; /* freed below */
    }
  }
  pthread_mutex_unlock(&s->lock);
  if (r != MG__CUDA_SUCCESS) free(x);
  return r;
}

MGSIM_API mg__CUresult cuEventRecord(mg__CUevent event, mg__CUstream stream) {
  SIM_ENTER("cuEventRecord");
  return sim_event_enqueue(event, stream, 0);
}

MGSIM_API mg__CUresult cuStreamWaitEvent(mg__CUstream stream, mg__CUevent event,
                                         unsigned int flags) {
  SIM_ENTER("cuStreamWaitEvent");
  if (flags != 0) return MG__CUDA_ERROR_INVALID_VALUE;
  return sim_event_enqueue(event, stream, 1);
}

static atomic_int sim_query_fault; /* the "query_fault" knob */

void sim_query_fault_set(int on) { atomic_store(&sim_query_fault, on); }

MGSIM_API mg__CUresult cuEventQuery(mg__CUevent event) {
  SIM_ENTER("cuEventQuery");
  /* The knob stands for a context that faulted: what its streams had not reached, they never
   * will, and a query says so. */
  const mg__CUresult not_ready = atomic_load(&sim_query_fault) ? MG__CUDA_ERROR_ILLEGAL_ADDRESS
                                                                : MG__CUDA_ERROR_NOT_READY;
  pthread_mutex_lock(&sim_ev_lock);
  sim_event_t *e = sim_event_find(event);
  mg__CUresult r = e == NULL                  ? MG__CUDA_ERROR_INVALID_HANDLE
                   : e->reached >= e->recorded ? MG__CUDA_SUCCESS
                                               : not_ready;
  pthread_mutex_unlock(&sim_ev_lock);
  return r;
}

MGSIM_API mg__CUresult cuEventSynchronize(mg__CUevent event) {
  SIM_ENTER("cuEventSynchronize");
  pthread_mutex_lock(&sim_ev_lock);
  sim_event_t *e = sim_event_find(event);
  if (e != NULL) {
    const uint64_t gen = e->recorded;
    e->refs++; /* it may be destroyed while this thread waits */
    while (e->reached < gen) pthread_cond_wait(&sim_ev_cv, &sim_ev_lock);
    sim_event_unref(e);
  }
  pthread_mutex_unlock(&sim_ev_lock);
  return e != NULL ? MG__CUDA_SUCCESS : MG__CUDA_ERROR_INVALID_HANDLE;
}

MGSIM_API mg__CUresult cuEventElapsedTime_v2(float *ms, mg__CUevent start, mg__CUevent end) {
  SIM_ENTER("cuEventElapsedTime_v2");
  if (ms == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  mg__CUresult r = MG__CUDA_SUCCESS;
  pthread_mutex_lock(&sim_ev_lock);
  sim_event_t *a = sim_event_find(start), *z = sim_event_find(end);
  if (a == NULL || z == NULL || a->recorded == 0 || z->recorded == 0 ||
      ((a->flags | z->flags) & MG__CU_EVENT_DISABLE_TIMING) != 0)
    r = MG__CUDA_ERROR_INVALID_HANDLE; /* what the driver says of events without a time */
  else if (a->reached < a->recorded || z->reached < z->recorded)
    r = MG__CUDA_ERROR_NOT_READY;
  else
    *ms = (float)((double)(z->when.tv_sec - a->when.tv_sec) * 1e3 +
                  (double)(z->when.tv_nsec - a->when.tv_nsec) * 1e-6);
  pthread_mutex_unlock(&sim_ev_lock);
  return r;
}

/* ---- the internal API ---------------------------------------------------------------------- */

MGSIM_API mg__CUresult mgsim_stream_owner(mg__CUstream stream, mg__CUcontext ctx,
                                          mg__CUcontext *owner) {
  if (owner == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  sim_stream_t *s = NULL;
  mg__CUresult r = sim_stream_lock(stream, ctx, &s);
  if (r != MG__CUDA_SUCCESS) return r;
  *owner = s->ctx;
  pthread_mutex_unlock(&s->lock);
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult mgsim_stream_enqueue(mg__CUstream stream, mg__CUcontext ctx,
                                            mgsim_fn_t fn, void *arg) {
  if (fn == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  sim_stream_t *s = NULL;
  mg__CUresult r = sim_stream_lock(stream, ctx, &s);
  if (r != MG__CUDA_SUCCESS) return r;
  if (sim_cu_ctx_refs(s->ctx) <= 0)
    r = MG__CUDA_ERROR_INVALID_CONTEXT; /* its primary context was released: it is gone */
  else
    r = sim_stream_push(s, fn, arg, 0);
  pthread_mutex_unlock(&s->lock);
  return r;
}

mg__CUresult sim_stream_run_sync(mg__CUstream stream, mgsim_fn_t fn, void *arg) {
  sim_stream_t *s = NULL;
  mg__CUresult r = sim_stream_lock(stream, NULL, &s);
  if (r != MG__CUDA_SUCCESS) return r;
  r = sim_stream_push(s, fn, arg, 0);
  if (r == MG__CUDA_SUCCESS) sim_stream_wait_locked(s, s->pushed);
  pthread_mutex_unlock(&s->lock);
  return r;
}

/* Waits for the stream at address s with id `id` to have run `target` items, if it still exists
 * (one destroyed meanwhile finishes its work on its own). */
static void sim_stream_wait_target(sim_stream_t *s, unsigned id, uint64_t target,
                                   mg__CUcontext ctx) {
  pthread_mutex_lock(&sim_streams_lock);
  sim_stream_t *x = ctx->legacy == s ? s : sim_streams;
  while (x != NULL && (x != s || x->id != id)) x = x->next;
  if (x != NULL) pthread_mutex_lock(&x->lock);
  pthread_mutex_unlock(&sim_streams_lock);
  if (x == NULL) return;
  sim_stream_wait_locked(x, target);
  pthread_mutex_unlock(&x->lock);
}

void sim_stream_sync_ctx(mg__CUcontext ctx) {
  typedef struct {
    sim_stream_t *s;
    unsigned id;
    uint64_t target;
  } want_t;
  want_t stack[64], *w = stack;
  int n = 0, cap = 64;
  pthread_mutex_lock(&sim_streams_lock);
  /* The context's default stream first, then its streams of cuStreamCreate. */
  for (sim_stream_t *s = ctx->legacy != NULL ? ctx->legacy : sim_streams; s != NULL;
       s = s == ctx->legacy ? sim_streams : s->next) {
    if (s->ctx != ctx) continue;
    if (n == cap) {
      want_t *m = malloc(sizeof *m * (size_t)cap * 2);
      if (m == NULL) break; /* out of memory: the streams seen so far are waited for */
      memcpy(m, w, sizeof *m * (size_t)n);
      if (w != stack) free(w);
      w = m;
      cap *= 2;
    }
    pthread_mutex_lock(&s->lock);
    w[n++] = (want_t){s, s->id, s->pushed};
    pthread_mutex_unlock(&s->lock);
  }
  pthread_mutex_unlock(&sim_streams_lock);
  for (int i = 0; i < n; i++) sim_stream_wait_target(w[i].s, w[i].id, w[i].target, ctx);
  if (w != stack) free(w);
}
