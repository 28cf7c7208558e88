/*
 * stream.c -- rank workers, host streams and their markers (stream.h).
 *
 * Divisions: workers; host streams (create, destroy, sync); submitting operations; markers.
 *
 * Lock order: a worker's lock and a stream's lock are leaves: nothing else is taken under them,
 * and nothing runs under them but queue and counter updates. Items run with no lock held.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/handle.h"
#include "base/log.h"
#include "core/op.h"
#include "base/params.h"
#include "core/request.h"
#include "core/stream.h"
#include "core/trace.h"

/* Absolute CLOCK_REALTIME time `wait` seconds from now, for pthread_cond_timedwait. */
static struct timespec mg__abstime(double wait) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (wait > 3600) wait = 3600; /* the callers loop: a far deadline is reached in steps */
  double t = (double)ts.tv_nsec * 1e-9 + (wait > 0 ? wait : 0);
  ts.tv_sec += (time_t)t;
  ts.tv_nsec = (long)((t - floor(t)) * 1e9);
  return ts;
}

/* ---- workers ------------------------------------------------------------------------------ */

struct mg__worker {
  pthread_t thread;
  pthread_mutex_t lock;      /* leaf: the mailbox and the counters */
  pthread_cond_t cv;         /* the worker sleeps here */
  pthread_cond_t drained;    /* mg__worker_drain sleeps here */
  mg__item_t *head, *tail;
  atomic_uint_fast64_t pushed; /* items pushed so far (written under lock; read when spinning) */
  uint64_t ran;              /* items run so far */
  int sleeping, drainers, quit;
  const void *wowner;
};

static _Thread_local mg__worker_t *mg__current_worker;

int mg__worker_is_current(const mg__worker_t *w) { return w != NULL && mg__current_worker == w; }

const void *mg__worker_owner(const mg__worker_t *w) { return w->wowner; }

static void *mg__worker_main(void *arg) {
  mg__worker_t *w = arg;
  mg__current_worker = w;
  mg__set_library_thread(w->wowner);
  const double spin = (double)mg__param_int(MG_PARAM_WAIT_SPIN_US) * 1e-6;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    if (w->head == NULL && !w->quit) {
      /* Spin a little before sleeping: the next item often comes within microseconds. */
      uint_fast64_t seen = atomic_load(&w->pushed);
      pthread_mutex_unlock(&w->lock);
      double until = mg__now() + spin;
      for (unsigned i = 0; atomic_load_explicit(&w->pushed, memory_order_relaxed) == seen; i++)
        if (!mg__spin_round(i, until)) break;
      pthread_mutex_lock(&w->lock);
      while (w->head == NULL && !w->quit) {
        w->sleeping = 1;
        pthread_cond_wait(&w->cv, &w->lock);
        w->sleeping = 0;
      }
    }
    if (w->head == NULL) break; /* quit, and nothing left */
    mg__item_t *it = w->head;
    w->head = w->tail = NULL;
    pthread_mutex_unlock(&w->lock);
    uint64_t n = 0;
    while (it != NULL) {
      mg__item_t *next = it->next;
      it->run(it);
      it = next;
      n++;
    }
    pthread_mutex_lock(&w->lock);
    w->ran += n;
    if (w->drainers > 0) pthread_cond_broadcast(&w->drained);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

mg_status_t mg__worker_start(const char *name, const void *wowner, mg__worker_t **out) {
  mg__worker_t *w = calloc(1, sizeof *w);
  if (w == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot allocate the worker %s", name);
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->cv, NULL);
  pthread_cond_init(&w->drained, NULL);
  atomic_init(&w->pushed, 0);
  w->wowner = wowner != NULL ? wowner : (const void *)w;
  int rc = pthread_create(&w->thread, NULL, mg__worker_main, w);
  if (rc != 0) {
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->drained);
    free(w);
    return mg__error_errno(MG_ERR_SYSTEM, rc, "cannot start the worker thread %s", name);
  }
  (void)pthread_setname_np(w->thread, name); /* for debuggers and ps only */
  *out = w;
  return MG_OK;
}

void mg__worker_push(mg__worker_t *w, mg__item_t *it) {
  it->next = NULL;
  pthread_mutex_lock(&w->lock);
  if (w->tail != NULL)
    w->tail->next = it;
  else
    w->head = it;
  w->tail = it;
  atomic_store_explicit(&w->pushed, atomic_load_explicit(&w->pushed, memory_order_relaxed) + 1,
                        memory_order_release);
  if (w->sleeping) pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->lock);
}

void mg__worker_stop(mg__worker_t *w) {
  pthread_mutex_lock(&w->lock);
  w->quit = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  pthread_mutex_destroy(&w->lock);
  pthread_cond_destroy(&w->cv);
  pthread_cond_destroy(&w->drained);
  free(w);
}

mg_status_t mg__worker_drain(mg__worker_t *w, double deadline, const char *fn) {
  mg_status_t st = MG_OK;
  pthread_mutex_lock(&w->lock);
  const uint64_t target = atomic_load(&w->pushed);
  w->drainers++;
  while (w->ran < target) {
    double wait = deadline - mg__now();
    if (wait <= 0) {
      st = mg__error(MG_ERR_TIMED_OUT,
                     "%s: the rank's worker still has %llu of its queued operations to run after "
                     "the deadline", fn, (unsigned long long)(target - w->ran));
      break;
    }
    struct timespec ts = mg__abstime(wait);
    (void)pthread_cond_timedwait(&w->drained, &w->lock, &ts); /* the loop checks again */
  }
  w->drainers--;
  pthread_mutex_unlock(&w->lock);
  return st;
}

/* ---- host streams ------------------------------------------------------------------------- */

#define MG__STREAM_MAGIC 0x6d677374u /* "mgst" */

struct mg_stream {
  uint32_t magic;
  mg_comm_t *comm;          /* compared only, after comm may be gone */
  mg__worker_t *w;          /* comm's worker (lives as long as comm) */
  double timeout_s;         /* comm's, for mg_stream_sync */
  atomic_int refs;          /* the handle, and each queued item or mark that names it */
  pthread_mutex_t lock;     /* leaf: the counters and the sticky error */
  pthread_cond_t cv;        /* mg_stream_sync and mark waits sleep here */
  uint64_t enq, done;       /* items submitted / run */
  int waiters;
  mg_status_t err;          /* the first failure on the stream, MG_OK if none */
  char errmsg[MG__ERROR_LEN];
};

static void mg__hs_ref(struct mg_stream *s) { atomic_fetch_add(&s->refs, 1); }

static void mg__hs_unref(struct mg_stream *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  s->magic = 0;
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cv);
  free(s);
}

atomic_int mg__hstreams_live;

struct mg_stream *mg__hstream_lookup(mg_stream_t s) {
  if (s == NULL || !mg__hstreams_any()) return NULL;
  return mg__handle_valid(s, MG__HANDLE_STREAM) ? (struct mg_stream *)s : NULL;
}

const mg_comm_t *mg__hstream_comm(const struct mg_stream *hs) { return hs->comm; }

/* One more item submitted to s (under its lock, with the sticky error unchanged). */
static void mg__hs_enq(struct mg_stream *s) {
  mg__hs_ref(s);
  pthread_mutex_lock(&s->lock);
  s->enq++;
  pthread_mutex_unlock(&s->lock);
}

/* One item of s has run; st < 0 makes it the sticky error if none is set. */
static void mg__hs_done(struct mg_stream *s, mg_status_t st, const char *msg) {
  pthread_mutex_lock(&s->lock);
  if (st < 0 && s->err == MG_OK) {
    s->err = st;
    snprintf(s->errmsg, sizeof s->errmsg, "%s", msg);
  }
  s->done++;
  if (s->waiters > 0) pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  mg__hs_unref(s);
}

/* The comm's worker, made on first need, under both locks (comm.h: operations that hold comm->lock
 * and see no worker number without seq_lock). */
static mg_status_t mg__comm_worker(mg_comm_t *comm, const char *fn) {
  mg_status_t st = MG_OK;
  pthread_mutex_lock(&comm->lock);
  pthread_mutex_lock(&comm->seq_lock);
  if (comm->worker == NULL) {
    char name[16];
    snprintf(name, sizeof name, "mg-rank%d", comm->rank);
    st = mg__worker_start(name, NULL, &comm->worker);
    if (st == MG_OK)
      comm->worker_owned = 1;
    else
      mg__error_prefix("%s", fn);
  }
  pthread_mutex_unlock(&comm->seq_lock);
  pthread_mutex_unlock(&comm->lock);
  return st;
}

static mg_status_t mg__comm_stream(mg_comm_t *comm, mg_stream_t *out, const char *fn) {
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: stream is NULL", fn);
  if (!(comm->backend->caps & MG__CAP_STREAM))
    return mg__error(MG_ERR_NOT_SUPPORTED,
                     "%s: the %s backend has no stream of its own; pass NULL or a host stream "
                     "(mg_stream_create)", fn, comm->backend->name);
  pthread_mutex_lock(&comm->lock); /* the stream is made once, by whichever call comes first */
  mg_status_t st = comm->backend->comm_stream(comm, out);
  mg__comm_unlock(comm);
  if (st < 0) mg__error_prefix("%s", fn);
  return st;
}

mg_status_t mg_comm_stream(mg_comm_t *comm, mg_stream_t *out) {
  static const char fn[] = "mg_comm_stream";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__comm_stream(comm, out, fn);
  mg__comm_leave(comm);
  return st;
}

static mg_status_t mg__stream_create(mg_comm_t *comm, mg_stream_t *out, const char *fn) {
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: stream is NULL", fn);
  if (comm->backend->id != MG_BACKEND_HOST)
    return mg__error(MG_ERR_NOT_SUPPORTED,
                     "%s: host streams belong to the host backend; on the %s backend pass your "
                     "own stream", fn, comm->backend->name);
  MG_CHECK(mg__comm_worker(comm, fn));
  struct mg_stream *s = calloc(1, sizeof *s);
  if (s == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  s->comm = comm;
  s->w = comm->worker;
  s->timeout_s = comm->timeout_s;
  atomic_init(&s->refs, 1);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->magic = MG__STREAM_MAGIC;
  atomic_fetch_add(&mg__hstreams_live, 1); /* before the handle can be looked up */
  mg_status_t st = mg__handle_register(s, MG__HANDLE_STREAM);
  if (st < 0) {
    atomic_fetch_sub(&mg__hstreams_live, 1);
    mg__error_prefix("%s", fn);
    mg__hs_unref(s);
    return st;
  }
  *out = s;
  return MG_OK;
}

mg_status_t mg_stream_create(mg_comm_t *comm, mg_stream_t *out) {
  static const char fn[] = "mg_stream_create";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__stream_create(comm, out, fn);
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_stream_destroy(mg_stream_t stream) {
  if (stream == NULL) return MG_OK;
  if (!mg__handle_take(stream, MG__HANDLE_STREAM))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "mg_stream_destroy: stream %p is not a live host stream (destroyed already, "
                     "or not made by mg_stream_create)", (void *)stream);
  atomic_fetch_sub(&mg__hstreams_live, 1);
  mg__hs_unref(stream); /* the handle's; queued work keeps its own references */
  return MG_OK;
}

static void mg__hs_ref_cb(void *p, void *arg) { mg__hs_ref(p); }

typedef struct {
  char *buf;
  size_t len;
} mg__desc_t;

static void mg__describe_cb(void *p, void *arg) {
  mg__desc_t *d = arg;
  mg__trace_describe(p, d->buf, d->len);
}

mg_status_t mg_stream_sync(mg_stream_t stream, double timeout_s) {
  static const char fn[] = "mg_stream_sync";
  if (stream == NULL || !mg__handle_with(stream, MG__HANDLE_STREAM, mg__hs_ref_cb, NULL))
    return mg__error(MG_ERR_INVALID_USAGE, "%s: stream %p is not a live host stream", fn,
                     (void *)stream);
  struct mg_stream *s = stream;
  mg_status_t st = MG_OK;
  if (!(timeout_s >= 0)) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: timeout_s %g is negative or NaN", fn, timeout_s);
  } else if (mg__worker_is_current(s->w)) {
    st = mg__error(MG_ERR_INVALID_USAGE,
                   "%s: called on the stream's own worker (from a callback), which would wait for "
                   "itself", fn);
  } else {
    const double deadline = mg__now() + (timeout_s > 0 ? timeout_s : s->timeout_s);
    pthread_mutex_lock(&s->lock);
    const uint64_t target = s->enq;
    s->waiters++;
    while (s->done < target && mg__now() < deadline) {
      struct timespec ts = mg__abstime(deadline - mg__now());
      (void)pthread_cond_timedwait(&s->cv, &s->lock, &ts); /* the loop checks again */
    }
    s->waiters--;
    const int late = s->done < target;
    const uint64_t left = target - s->done;
    st = s->err;
    char msg[MG__ERROR_LEN];
    snprintf(msg, sizeof msg, "%s", s->errmsg);
    pthread_mutex_unlock(&s->lock);
    if (late) {
      char where[MG__ERROR_LEN - 160] = "";
      mg__desc_t d = {where, sizeof where};
      if (!mg__handle_with(s->comm, MG__HANDLE_COMM, mg__describe_cb, &d))
        snprintf(where, sizeof where, "its communicator was destroyed");
      st = mg__error(MG_ERR_TIMED_OUT, "%s: %llu item%s of the stream still pending after %g s: %s",
                     fn, (unsigned long long)left, left > 1 ? "s" : "",
                     timeout_s > 0 ? timeout_s : s->timeout_s, where);
    } else if (st < 0) {
      mg__error(st, "%s", msg);
    }
  }
  mg__hs_unref(s);
  return st;
}

/* ---- submitting operations ---------------------------------------------------------------- */

/* One item: the ops of one communicator from one post or group end. */
typedef struct {
  mg__item_t item;
  int n, nstreams;
  struct mg_stream **streams; /* distinct streams of the ops, [nstreams] (points into the block) */
  mg__op_t *ops;              /* [n] */
  mg__op_t **ptrs;            /* [n] */
} mg__opitem_t;

static void mg__opitem_run(mg__item_t *it) {
  mg__opitem_t *oi = (mg__opitem_t *)it;
  mg_status_t st = mg__launch_numbered(oi->ptrs, oi->n);
  char msg[MG__ERROR_LEN] = "";
  if (st < 0) snprintf(msg, sizeof msg, "%s", mg_last_error());
  for (int i = 0; i < oi->n; i++) mg__op_release(&oi->ops[i]);
  for (int j = 0; j < oi->nstreams; j++) {
    /* The stream's error is the first failure among its own operations. */
    mg_status_t sst = MG_OK;
    for (int i = 0; i < oi->n && sst == MG_OK; i++)
      if (oi->ops[i].hstream == oi->streams[j] && oi->ops[i].status < 0) sst = oi->ops[i].status;
    mg__hs_done(oi->streams[j], sst, msg);
  }
  free(oi);
}

mg_status_t mg__stream_submit(mg__op_t *const *ops, int n) {
  /* Allocate every item first, so that nothing is queued when memory runs out. */
  mg__opitem_t *one[8];
  mg__opitem_t **items = n <= 8 ? one : calloc((size_t)n, sizeof *items);
  if (items == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "host stream: out of memory");
  int nitems = 0;
  mg_status_t st = MG_OK;
  for (int i = 0; i < n && st == MG_OK; i++) st = mg__op_keep(ops[i], "host stream");
  for (int i = 0; i < n && st == MG_OK; i++) {
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = ops[j]->comm == ops[i]->comm;
    if (seen) continue;
    int k = 0;
    for (int j = i; j < n; j++) k += ops[j]->comm == ops[i]->comm;
    size_t bytes = sizeof(mg__opitem_t) + (size_t)k * (sizeof(mg__op_t) + sizeof(mg__op_t *) +
                                                       sizeof(struct mg_stream *));
    mg__opitem_t *oi = calloc(1, bytes);
    if (oi == NULL) {
      st = mg__error(MG_ERR_OUT_OF_MEMORY, "host stream: out of memory");
      break;
    }
    oi->item.run = mg__opitem_run;
    oi->ops = (mg__op_t *)(oi + 1);
    oi->ptrs = (mg__op_t **)(oi->ops + k);
    oi->streams = (struct mg_stream **)(oi->ptrs + k);
    for (int j = i; j < n; j++) {
      if (ops[j]->comm != ops[i]->comm) continue;
      oi->ops[oi->n] = *ops[j];
      oi->ptrs[oi->n] = &oi->ops[oi->n];
      oi->n++;
    }
    items[nitems++] = oi;
  }
  if (st < 0) {
    for (int i = 0; i < nitems; i++) free(items[i]);
    if (items != one) free(items);
    return st;
  }
  for (int i = 0; i < n; i++) ops[i]->v_kept = NULL; /* the items' copies own them now */
  for (int i = 0; i < nitems; i++) {
    mg__opitem_t *oi = items[i];
    mg_comm_t *comm = oi->ops[0].comm;
    for (int j = 0; j < oi->n; j++) {
      struct mg_stream *s = oi->ops[j].hstream;
      int dup = 0;
      for (int q = 0; q < oi->nstreams && !dup; q++) dup = oi->streams[q] == s;
      if (!dup) {
        oi->streams[oi->nstreams++] = s;
        mg__hs_enq(s);
      }
    }
    /* Numbering and queueing under seq_lock: the worker runs them in sequence order. */
    pthread_mutex_lock(&comm->seq_lock);
    const double now = mg__now_coarse(); /* the flight recorder's clock (clock.h) */
    for (int j = 0; j < oi->n; j++) mg__op_number(&oi->ops[j], 0, now);
    mg__worker_push(comm->worker, &oi->item);
    pthread_mutex_unlock(&comm->seq_lock);
  }
  if (items != one) free(items);
  return MG_OK;
}

/* ---- markers ------------------------------------------------------------------------------- */

/* Shared by its queue item and its owner (two references). */
struct mg__marker {
  mg__item_t item;
  struct mg_stream *s;
  atomic_int refs;
  atomic_int reached;   /* 1 once the worker ran the item; status, msg and t_reached are set */
  atomic_int armed;     /* mg__marker_arm armed it and the callback has not been taken */
  mg_status_t status;
  char *msg;            /* status's message, or NULL */
  double t_reached;     /* mg__now() when the worker ran the item */
  void (*cb)(void *arg, mg_status_t status, const char *msg); /* mg__marker_arm's */
  void *cb_arg;
};

void mg__marker_unref(mg__marker_t *mk) {
  if (atomic_fetch_sub(&mk->refs, 1) != 1) return;
  mg__hs_unref(mk->s);
  free(mk->msg);
  free(mk);
}

static void mg__marker_run(mg__item_t *it) {
  mg__marker_t *mk = (mg__marker_t *)it;
  struct mg_stream *s = mk->s;
  pthread_mutex_lock(&s->lock);
  mk->status = s->err;
  if (s->err < 0) mk->msg = strdup(s->errmsg); /* NULL: the status goes without its message */
  mk->t_reached = mg__now();
  s->done++;
  atomic_store_explicit(&mk->reached, 1, memory_order_release);
  if (s->waiters > 0) pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  if (atomic_exchange(&mk->armed, 0)) mk->cb(mk->cb_arg, mk->status, mk->msg);
  mg__marker_unref(mk);
}

mg_status_t mg__marker_push(mg_comm_t *comm, mg_stream_t stream, mg__marker_t **out,
                            const void **wowner) {
  struct mg_stream *s = mg__hstream_lookup(stream);
  if (s == NULL || s->comm != comm)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "stream %p is not a host stream of this communicator (rank %d)",
                     (void *)stream, comm->rank);
  mg__marker_t *mk = calloc(1, sizeof *mk);
  if (mk == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot allocate a stream marker");
  mk->item.run = mg__marker_run;
  mk->s = s;
  atomic_init(&mk->refs, 2);
  *out = mk;
  *wowner = mg__worker_owner(s->w);
  /* Under seq_lock, as operations are queued: the marker follows everything submitted before. */
  pthread_mutex_lock(&comm->seq_lock);
  mg__hs_enq(s);
  mg__worker_push(s->w, &mk->item);
  pthread_mutex_unlock(&comm->seq_lock);
  return MG_OK;
}

int mg__marker_reached(const mg__marker_t *mk, mg_status_t *status, const char **msg,
                       double *t) {
  if (!atomic_load_explicit(&mk->reached, memory_order_acquire)) return 0;
  if (status != NULL) *status = mk->status;
  if (msg != NULL) *msg = mk->msg;
  if (t != NULL) *t = mk->t_reached;
  return 1;
}

mg_status_t mg__marker_stream_error(const mg__marker_t *mk) {
  struct mg_stream *s = mk->s;
  pthread_mutex_lock(&s->lock);
  mg_status_t st = s->err;
  if (st < 0) mg__error(st, "%s", s->errmsg);
  pthread_mutex_unlock(&s->lock);
  return st;
}

int mg__marker_wait(const mg__marker_t *mk, double deadline) {
  struct mg_stream *s = mk->s;
  const mg_comm_t *comm = s->comm; /* alive: the caller keeps it */
  pthread_mutex_lock(&s->lock);
  s->waiters++;
  while (!atomic_load(&mk->reached) && mg__now() < deadline && !atomic_load(&comm->aborting)) {
    /* Woken by the worker; the abort is seen within the nap's length. */
    struct timespec ts = mg__abstime(fmin(deadline - mg__now(), 0.01));
    (void)pthread_cond_timedwait(&s->cv, &s->lock, &ts);
  }
  s->waiters--;
  pthread_mutex_unlock(&s->lock);
  return atomic_load(&mk->reached);
}

void mg__marker_arm(mg__marker_t *mk, void (*cb)(void *arg, mg_status_t status, const char *msg),
                    void *arg) {
  mk->cb = cb;
  mk->cb_arg = arg;
  atomic_store(&mk->armed, 1);
  /* Reached before it was armed: whoever takes `armed` back calls, exactly once. */
  if (atomic_load_explicit(&mk->reached, memory_order_acquire) && atomic_exchange(&mk->armed, 0))
    cb(arg, mk->status, mk->msg);
}
