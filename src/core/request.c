/*
 * request.c -- requests: creation, exactly-once completion, references, mg_record and the public
 * request calls, and the callback thread ("mg-callbacks") that runs the callbacks of requests
 * completed on threads that must not run user code (the watchdog, an aborting user thread, a
 * CUDA host-function thread, a callback registered after completion).
 *
 * Divisions: library threads; references and completion; the callback thread; marks;
 * mg_record; wait, test, callbacks, free.
 *
 * Lock order: see request.h. The callback thread's lock is a leaf.
 */
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/handle.h"
#include "core/idle_thread.h"
#include "base/log.h"
#include "base/params.h"
#include "core/request.h"

/* ---- library threads ------------------------------------------------------------------------ */

static _Thread_local int mg__lib_thread;
static _Thread_local const void *mg__lib_wowner;

int mg__on_library_thread(void) { return mg__lib_thread; }

void mg__set_library_thread(const void *wowner) {
  mg__lib_thread = 1;
  mg__lib_wowner = wowner;
}

/* ---- references and completion ---------------------------------------------------------- */

void mg__gen_unref(mg__gen_t *g) {
  if (g != NULL && atomic_fetch_sub(&g->refs, 1) == 1) free(g);
}

mg_request_t *mg__request_new(int kind, double deadline, mg_on_timeout_t on_timeout,
                              const char *fn) {
  mg_request_t *req = calloc(1, sizeof *req);
  if (req == NULL) {
    mg__error(MG_ERR_OUT_OF_MEMORY, "%s: cannot allocate a request", fn);
    return NULL;
  }
  req->kind = kind;
  req->deadline = deadline;
  req->on_timeout = on_timeout;
  atomic_init(&req->state, MG__REQ_PENDING);
  atomic_init(&req->settling, 0);
  atomic_init(&req->refs, 2);
  pthread_mutex_init(&req->lock, NULL);
  pthread_cond_init(&req->cv, NULL);
  req->magic = MG__REQ_MAGIC;
  if (mg__handle_register(req, MG__HANDLE_REQUEST) < 0) {
    mg__error_prefix("%s", fn);
    pthread_mutex_destroy(&req->lock);
    pthread_cond_destroy(&req->cv);
    free(req);
    return NULL;
  }
  return req;
}

static void mg__request_free_mem(mg_request_t *req) {
  if (req->mark_made) req->be->mark_release(&req->mark);
  if (req->oops != NULL) req->oops->release(req->octx);
  mg__gen_unref(req->gen_src);
  req->magic = 0;
  pthread_mutex_destroy(&req->lock);
  pthread_cond_destroy(&req->cv);
  free(req->msg);
  free(req);
}

void mg__request_discard(mg_request_t *req) {
  (void)mg__handle_take(req, MG__HANDLE_REQUEST);
  mg__request_free_mem(req);
}

void mg__request_ref(mg_request_t *req) { atomic_fetch_add(&req->refs, 1); }

void mg__request_unref(mg_request_t *req) {
  if (atomic_fetch_sub(&req->refs, 1) == 1) mg__request_free_mem(req);
}

static void mg__cbq_push(mg_request_t *req);

/* Runs req's callback on this thread: the thread's last error is the request's message. */
static void mg__run_callback(mg_request_t *req) {
  if (req->status < 0) mg__error(req->status, "%s", req->msg ? req->msg : "");
  req->cb(req, req->status, req->cb_arg);
}

int mg__request_complete(mg_request_t *req, mg_status_t status, const char *msg, int inline_cb) {
  char *copy = msg != NULL && msg[0] != '\0' ? strdup(msg) : NULL; /* NULL: no message kept */
  pthread_mutex_lock(&req->lock);
  if (atomic_load_explicit(&req->state, memory_order_relaxed) != MG__REQ_PENDING) {
    pthread_mutex_unlock(&req->lock);
    free(copy);
    return 0;
  }
  req->status = status;
  req->msg = copy;
  atomic_store_explicit(&req->state, MG__REQ_DONE, memory_order_release);
  if (req->waiters > 0) pthread_cond_broadcast(&req->cv);
  const int has_cb = req->cb_set;
  pthread_mutex_unlock(&req->lock);
  mg__wd_remove(req);
  if (has_cb) {
    if (inline_cb)
      mg__run_callback(req);
    else
      mg__cbq_push(req);
  }
  mg__request_unref(req); /* the pending reference */
  return 1;
}

mg_status_t mg__request_done(int kind, mg_on_timeout_t on_timeout, mg_request_t **out,
                             const char *fn) {
  mg_request_t *req = mg__request_new(kind, mg__now(), on_timeout, fn);
  if (req == NULL) return MG_ERR_OUT_OF_MEMORY;
  mg__request_complete(req, MG_OK, NULL, 0);
  *out = req;
  return MG_OK;
}

void mg__request_what(const mg_request_t *req, char *buf, size_t len) {
  if (req->oops != NULL)
    req->oops->what(req->octx, buf, len);
  else
    snprintf(buf, len, "%s", req->what);
}

/* ---- the callback thread ------------------------------------------------------------------ */

/* Runs the callbacks of requests completed where user code must not run. Started on first need;
 * leaves after MG__CBQ_IDLE_S without work (the next push joins it and starts a new one); joined
 * at exit. */
#define MG__CBQ_IDLE_S 2.0

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  mg_request_t *head, *tail;
  mg__idle_thread_t t; /* the thread that serves the queue */
  int stop;            /* exit: leave when the queue is empty */
} mg__cbq = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, {0}, 0};

static void *mg__cbq_main(void *arg) {
  mg__set_library_thread(NULL);
  pthread_mutex_lock(&mg__cbq.lock);
  for (;;) {
    while (mg__cbq.head != NULL) {
      mg_request_t *req = mg__cbq.head;
      mg__cbq.head = req->cb_next;
      if (mg__cbq.head == NULL) mg__cbq.tail = NULL;
      pthread_mutex_unlock(&mg__cbq.lock);
      mg__run_callback(req);
      mg__request_unref(req); /* the queue's reference */
      pthread_mutex_lock(&mg__cbq.lock);
    }
    if (mg__cbq.stop) break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)MG__CBQ_IDLE_S;
    /* ETIMEDOUT or a wake-up: either way the loop looks at the queue again. */
    int rc = pthread_cond_timedwait(&mg__cbq.cv, &mg__cbq.lock, &ts);
    if (rc != 0 && mg__cbq.head == NULL) break; /* idle: leave */
  }
  mg__idle_thread_left(&mg__cbq.t);
  pthread_mutex_unlock(&mg__cbq.lock);
  return NULL;
}

static void mg__cbq_push(mg_request_t *req) {
  mg__request_ref(req);
  pthread_mutex_lock(&mg__cbq.lock);
  req->cb_next = NULL;
  if (mg__cbq.tail != NULL)
    mg__cbq.tail->cb_next = req;
  else
    mg__cbq.head = req;
  mg__cbq.tail = req;
  if (!mg__idle_thread_ensure(&mg__cbq.t, mg__cbq_main, "mg-callbacks")) {
    /* No thread: run the queue here, outside the lock. This thread holds no library lock
     * (contract of the callers), so the callbacks still run outside every library lock. */
    mg_request_t *q = mg__cbq.head;
    mg__cbq.head = mg__cbq.tail = NULL;
    pthread_mutex_unlock(&mg__cbq.lock);
    MG_WARN("cannot start the callback thread; running the queued callbacks on this thread");
    while (q != NULL) {
      mg_request_t *next = q->cb_next;
      mg__run_callback(q);
      mg__request_unref(q);
      q = next;
    }
    return;
  }
  pthread_cond_signal(&mg__cbq.cv);
  pthread_mutex_unlock(&mg__cbq.lock);
}

__attribute__((destructor)) static void mg__cbq_exit(void) {
  pthread_mutex_lock(&mg__cbq.lock);
  mg__cbq.stop = 1;
  pthread_cond_signal(&mg__cbq.cv);
  int join = mg__idle_thread_exists(&mg__cbq.t);
  pthread_mutex_unlock(&mg__cbq.lock);
  if (!join) return;
  /* A callback that never returns must not hold the process at exit. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 2;
  if (pthread_timedjoin_np(mg__cbq.t.th, NULL, &ts) != 0) MG_WARN("a callback is still running at exit");
}

static void mg__cbq_atfork_child(void) {
  /* Only the forking thread exists in the child: no callback thread, nothing queued for it. */
  pthread_mutex_init(&mg__cbq.lock, NULL);
  pthread_cond_init(&mg__cbq.cv, NULL);
  mg__cbq.head = mg__cbq.tail = NULL;
  mg__cbq.t.running = mg__cbq.t.joinable = mg__cbq.stop = 0;
}

__attribute__((constructor)) static void mg__cbq_init(void) {
  /* Without the handler a child would believe a thread serves its queue; failing to install it
   * (ENOMEM at load time) only matters to programs that fork and then use requests. */
  (void)pthread_atfork(NULL, NULL, mg__cbq_atfork_child);
}

/* ---- marks --------------------------------------------------------------------------------- */

void mg__mark_signal(mg__mark_t *mark, mg_status_t status, const char *msg) {
  mark->on_signal(mark, status, msg);
}

/* A request's mark was signalled: complete it, then drop the mark's reference. Callbacks run
 * inline only on a library thread (a rank worker); a foreign thread hands them over. */
static void mg__record_signalled(mg__mark_t *mark, mg_status_t status, const char *msg) {
  mg_request_t *req = mark->owner;
  mg__request_complete(req, status, msg, mg__on_library_thread());
  mg__request_unref(req); /* the armed mark's reference */
}

int mg__request_queried(const mg_request_t *req) {
  return req->kind == MG__REQ_RECORD || (req->oops != NULL && req->oops->query != NULL);
}

void mg__request_poll(mg_request_t *req, int inline_cb) {
  if (atomic_load_explicit(&req->state, memory_order_acquire) != MG__REQ_PENDING) return;
  mg_status_t st = req->kind == MG__REQ_RECORD ? req->be->mark_query(&req->mark)
                                               : req->oops->query(req->octx);
  if (st != MG_INPROGRESS) mg__request_complete(req, st, st < 0 ? mg_last_error() : NULL, inline_cb);
}

/* ---- mg_record -------------------------------------------------------------------------------- */

static mg_status_t mg__record_in(mg_comm_t *comm, mg_stream_t stream, int timed,
                                 mg_request_t **out, const char *fn) {
  /* A comm in the error state still records: the request reports the stream's error. */
  if (atomic_load(&comm->state) != MG_COMM_ERROR) MG_CHECK(mg__comm_check_state(comm, fn));
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: req is NULL", fn);
  if (!(comm->backend->caps & MG__CAP_MARKS))
    return mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend does not track completion on its "
                     "streams yet", fn, comm->backend->name);
  mg_request_t *req = mg__request_new(MG__REQ_RECORD, mg__comm_deadline(comm), comm->on_timeout, fn);
  if (req == NULL) return MG_ERR_OUT_OF_MEMORY;
  req->comm = comm;
  req->be = comm->backend;
  req->strategy = comm->completion;
  req->poll_interval = comm->poll_interval;
  snprintf(req->what, sizeof req->what, "%s on rank %d of %d", fn, comm->rank, comm->nranks);
  req->mark.comm = comm;
  req->mark.stream = stream;
  req->mark.timed = timed;
  req->mark.owner = req;
  req->mark.on_signal = mg__record_signalled;
  MG_ASSERT(comm->backend->mark_priv_size <= sizeof req->mark.priv);
  mg_status_t st = comm->backend->mark_record(&req->mark);
  if (st < 0) {
    mg__error_prefix("%s", fn);
    mg__request_discard(req);
    return st;
  }
  req->mark_made = 1;
  req->wowner = req->mark.wowner;
  if (mg__wd_add(req, comm) < 0) {
    /* Aborted in the meantime: the request exists, and ends as every pending one did. */
    mg__request_complete(req, MG_ERR_ABORTED, "mg_record: the communicator was aborted", 0);
  } else if (req->strategy == MG_COMPLETION_HOSTFN) {
    mg__request_ref(req); /* the armed mark's; dropped when it is signalled */
    if (comm->backend->mark_notify(&req->mark) < 0) {
      /* Nothing armed: the watchdog's periodic query completes it instead. */
      MG_INFO(MG_SUBSYS_COLL, "%s: %s; the request is polled instead", fn, mg_last_error());
      mg__request_unref(req);
      req->strategy = MG_COMPLETION_POLL;
    }
  }
  *out = req;
  return MG_OK;
}

/* mg_record and mg_record_timed (timed: the mark can be timed against another). */
static mg_status_t mg__record(mg_comm_t *comm, mg_stream_t stream, int timed, mg_request_t **out,
                              const char *fn) {
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__record_in(comm, stream, timed, out, fn);
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_record(mg_comm_t *comm, mg_stream_t stream, mg_request_t **req) {
  return mg__record(comm, stream, 0, req, "mg_record");
}

mg_status_t mg_record_timed(mg_comm_t *comm, mg_stream_t stream, mg_request_t **req) {
  return mg__record(comm, stream, 1, req, "mg_record_timed");
}

/* ---- wait, test, callbacks, free -------------------------------------------------------- */

static void mg__ref_cb(void *p, void *arg) { mg__request_ref(p); }

/* A reference on a live request handle, or MG_ERR_INVALID_USAGE naming fn. */
static mg_status_t mg__request_get(mg_request_t *req, const char *fn) {
  if (req == NULL) return mg__error(MG_ERR_INVALID_USAGE, "%s: req is NULL", fn);
  if (!mg__handle_with(req, MG__HANDLE_REQUEST, mg__ref_cb, NULL))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: req %p is not a live request (freed, or not a request)", fn, (void *)req);
  return MG_OK;
}

/* MG_ERR_STALE when req is a world request of an older generation. */
static mg_status_t mg__request_stale(const mg_request_t *req, const char *fn) {
  if (req->gen_src == NULL) return MG_OK;
  uint64_t cur = atomic_load(&req->gen_src->current);
  if (cur == req->gen) return MG_OK;
  if (cur == UINT64_MAX)
    return mg__error(MG_ERR_STALE, "%s: the request's world (generation %llu) was destroyed", fn,
                     (unsigned long long)req->gen);
  return mg__error(MG_ERR_STALE,
                   "%s: the request belongs to generation %llu of its world, which was rebuilt "
                   "(generation %llu now)", fn, (unsigned long long)req->gen,
                   (unsigned long long)cur);
}

/* The request's outcome as a return value, with its message as the thread's error. */
static mg_status_t mg__outcome(const mg_request_t *req) {
  if (req->status < 0) return mg__error(req->status, "%s", req->msg ? req->msg : "");
  return req->status;
}

/* Sleeps on req's condition variable until it is done or `until` (absolute mg__now() time). */
static void mg__sleep_until(mg_request_t *req, double until) {
  pthread_mutex_lock(&req->lock);
  if (atomic_load_explicit(&req->state, memory_order_relaxed) == MG__REQ_PENDING) {
    double wait = until - mg__now();
    if (wait > 0) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      double t = (double)ts.tv_nsec * 1e-9 + (wait > 3600 ? 3600 : wait);
      ts.tv_sec += (time_t)t;
      ts.tv_nsec = (long)((t - floor(t)) * 1e9);
      req->waiters++;
      /* A timeout or a spurious wake-up: the caller's loop looks again. */
      (void)pthread_cond_timedwait(&req->cv, &req->lock, &ts);
      req->waiters--;
    }
  }
  pthread_mutex_unlock(&req->lock);
}

mg_status_t mg_request_wait(mg_request_t *req, double timeout_s) {
  static const char fn[] = "mg_request_wait";
  MG_CHECK(mg__request_get(req, fn));
  mg_status_t st = mg__request_stale(req, fn);
  if (st < 0) goto out;
  if (!(timeout_s >= 0)) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: timeout_s %g is negative or NaN", fn, timeout_s);
    goto out;
  }
  if (atomic_load_explicit(&req->state, memory_order_acquire) == MG__REQ_PENDING &&
      mg__lib_thread && req->wowner != NULL && req->wowner == mg__lib_wowner) {
    st = mg__error(MG_ERR_INVALID_USAGE,
                   "%s: called on a worker of the request's world, which must complete it: it "
                   "would wait for itself", fn);
    goto out;
  }
  static atomic_llong spin_us = -1; /* MGCOMM_WAIT_SPIN_US, read once */
  long long us = atomic_load_explicit(&spin_us, memory_order_relaxed);
  if (us < 0) atomic_store_explicit(&spin_us, us = mg__param_int(MG_PARAM_WAIT_SPIN_US),
                                    memory_order_relaxed);
  const double start = mg__now();
  const double until = timeout_s > 0 ? start + timeout_s : INFINITY;
  /* Spin a little first: a request of the host backend often completes within microseconds. */
  const double spin_until = start + (double)us * 1e-6;
  double pause_s = 1e-6;
  for (unsigned i = 0; atomic_load_explicit(&req->state, memory_order_acquire) == MG__REQ_PENDING;
       i++)
    if (!mg__spin_round(i, spin_until)) break;
  while (atomic_load_explicit(&req->state, memory_order_acquire) == MG__REQ_PENDING) {
    double now = mg__now();
    if (now >= req->deadline) {
      mg__request_expire(req, 0);
      continue;
    }
    if (now >= until) {
      char what[160];
      mg__request_what(req, what, sizeof what);
      st = mg__error(MG_ERR_TIMED_OUT,
                     "%s: %s is still pending after %g s (its own deadline is %.3g s away)", fn,
                     what, timeout_s, req->deadline - now);
      goto out;
    }
    double stop = until < req->deadline ? until : req->deadline;
    if (req->kind == MG__REQ_RECORD && req->strategy != MG_COMPLETION_HOSTFN) {
      if (!mg__comm_hold(req->comm)) {
        mg__sleep_until(req, stop); /* gone: its abort has completed the request */
        continue;
      }
      if (req->strategy == MG_COMPLETION_SYNC) {
        mg_status_t ms = req->be->mark_wait(&req->mark, stop);
        if (ms != MG_ERR_TIMED_OUT) mg__request_complete(req, ms, ms < 0 ? mg_last_error() : NULL, 0);
      } else {
        mg__request_poll(req, 0);
      }
      mg__comm_leave(req->comm);
      if (req->strategy == MG_COMPLETION_POLL) {
        double next = mg__now() + req->poll_interval;
        mg__sleep_until(req, next < stop ? next : stop);
      }
      continue;
    }
    if (mg__request_queried(req)) {
      /* Queried by its owner (a peer copy's event): look again after a pause that grows from
       * 1 us to 1 ms, so that a short wait ends within microseconds of completion and a long
       * one costs little. */
      mg__request_poll(req, 0);
      const double next = mg__now() + pause_s;
      pause_s = pause_s < 1e-3 ? pause_s * 2 : pause_s;
      mg__sleep_until(req, next < stop ? next : stop);
      continue;
    }
    mg__sleep_until(req, stop);
  }
  /* A timeout's policy is being applied on another thread. Abort always returns, so this ends
   * at once; the bound keeps the wait a bounded one all the same (the outcome is the timeout
   * either way). */
  for (const double give_up = mg__now() + 1.0;
       atomic_load_explicit(&req->settling, memory_order_acquire) && mg__now() < give_up;)
    sched_yield();
  st = mg__outcome(req);
out:
  mg__request_unref(req);
  return st;
}

mg_status_t mg_request_test(mg_request_t *req, mg_status_t *status) {
  static const char fn[] = "mg_request_test";
  MG_CHECK(mg__request_get(req, fn));
  mg_status_t st = mg__request_stale(req, fn);
  if (st == MG_OK && status == NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: status is NULL", fn);
  if (st == MG_OK) {
    if (atomic_load_explicit(&req->state, memory_order_acquire) == MG__REQ_PENDING) {
      if (req->kind == MG__REQ_RECORD && mg__comm_hold(req->comm)) {
        mg__request_poll(req, 0);
        mg__comm_leave(req->comm);
      } else if (req->kind != MG__REQ_RECORD && mg__request_queried(req)) {
        mg__request_poll(req, 0);
      }
      if (atomic_load_explicit(&req->state, memory_order_acquire) == MG__REQ_PENDING &&
          mg__now() >= req->deadline)
        mg__request_expire(req, 0);
    }
    if (atomic_load_explicit(&req->state, memory_order_acquire) == MG__REQ_PENDING ||
        atomic_load_explicit(&req->settling, memory_order_acquire)) {
      *status = MG_INPROGRESS; /* (settling: its timeout's policy is still being applied) */
    } else {
      *status = req->status;
      if (req->status < 0) mg__outcome(req);
    }
  }
  mg__request_unref(req);
  return st;
}

mg_status_t mg_request_on_complete(mg_request_t *req, mg_request_cb_t cb, void *arg) {
  static const char fn[] = "mg_request_on_complete";
  MG_CHECK(mg__request_get(req, fn));
  mg_status_t st = mg__request_stale(req, fn);
  if (st == MG_OK && cb == NULL) st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: cb is NULL", fn);
  if (st == MG_OK) {
    pthread_mutex_lock(&req->lock);
    if (req->cb_set) {
      st = mg__error(MG_ERR_INVALID_USAGE, "%s: the request has a callback already", fn);
    } else {
      req->cb = cb;
      req->cb_arg = arg;
      req->cb_set = 1;
    }
    int done = atomic_load_explicit(&req->state, memory_order_relaxed) == MG__REQ_DONE;
    pthread_mutex_unlock(&req->lock);
    if (st == MG_OK && done) mg__cbq_push(req); /* completed before: run it on the library's thread */
    /* Pending, and nobody may query it: its owner arranges a completion of its own. Failing
     * that, the watchdog's queries complete it, later. */
    if (st == MG_OK && !done && req->oops != NULL && req->oops->notify != NULL &&
        req->oops->notify(req->octx, req) < 0)
      MG_INFO(MG_SUBSYS_COLL, "%s: %s; the request completes at the watchdog's next query", fn,
              mg_last_error());
  }
  mg__request_unref(req);
  return st;
}

/* MG_OK when req (start or end) is a request of mg_record_timed. */
static mg_status_t mg__elapsed_kind(const mg_request_t *req, const char *name, const char *fn) {
  if (req->kind != MG__REQ_RECORD || !req->mark.timed)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s was not made by mg_record_timed", fn, name);
  return MG_OK;
}

/* MG_OK when req has a time to give: it completed with MG_OK. */
static mg_status_t mg__elapsed_state(const mg_request_t *req, const char *name, const char *fn) {
  if (atomic_load_explicit(&req->state, memory_order_acquire) == MG__REQ_PENDING)
    return MG_INPROGRESS; /* not an error: the caller waits and asks again */
  if (req->status < 0)
    return mg__error(MG_ERR_INVALID_USAGE, "%s: %s ended with %s, so when its stream reached it "
                     "is not known: %s", fn, name, mg_status_name(req->status),
                     req->msg ? req->msg : "");
  return MG_OK;
}

mg_status_t mg_request_elapsed(mg_request_t *start, mg_request_t *end, double *seconds) {
  static const char fn[] = "mg_request_elapsed";
  MG_CHECK(mg__request_get(start, fn));
  mg_status_t st = mg__request_get(end, fn);
  if (st < 0) {
    mg__request_unref(start);
    return st;
  }
  if (seconds == NULL) st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: seconds is NULL", fn);
  if (st == MG_OK) st = mg__elapsed_kind(start, "start", fn);
  if (st == MG_OK) st = mg__elapsed_kind(end, "end", fn);
  if (st == MG_OK && start->comm != end->comm)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: start and end were recorded on different "
                   "communicators (%s; %s)", fn, start->what, end->what);
  if (st == MG_OK) st = mg__elapsed_state(start, "start", fn);
  if (st == MG_OK) st = mg__elapsed_state(end, "end", fn);
  if (st == MG_OK) {
    double s = 0;
    /* Both marks live as long as the references taken above (mark_release runs at the free). */
    st = start->be->mark_elapsed(&start->mark, &end->mark, &s);
    if (st < 0) mg__error_prefix("%s", fn);
    if (st == MG_OK) *seconds = s;
  }
  mg__request_unref(end);
  mg__request_unref(start);
  return st;
}

/* A request freed while pending, with no callback, that its owner has queried (not a RECORD
 * one): nobody can learn its outcome any more, so it ends now rather than at the watchdog's next
 * query, and what its owner holds (a peer copy's event) goes back at once, not after up to an
 * interval during which every copy would need a new one. */
static void mg__request_detach(mg_request_t *req) {
  if (req->kind == MG__REQ_RECORD || !mg__request_queried(req)) return;
  pthread_mutex_lock(&req->lock);
  const int has_cb = req->cb_set;
  pthread_mutex_unlock(&req->lock);
  if (!has_cb) (void)mg__request_complete(req, MG_OK, NULL, 0);
}

mg_status_t mg_request_free(mg_request_t *req) {
  if (req == NULL) return MG_OK;
  /* Taking the handle out of the registry is the test: of two frees, one finds nothing and
   * touches nothing. */
  if (!mg__handle_take(req, MG__HANDLE_REQUEST))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "mg_request_free: req %p is not a live request (freed already, or not a "
                     "request)", (void *)req);
  mg__request_detach(req);
  mg__request_unref(req); /* the handle's reference */
  return MG_OK;
}
