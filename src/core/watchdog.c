/*
 * watchdog.c -- one thread per process ("mg-watchdog") that bounds every pending request by its
 * deadline, queries the marks of requests under the poll (and, as a safety net, sync) completion
 * strategies, and polls the asynchronous error of every communicator that has pending requests.
 * It is started by the first request listed, and leaves when nothing was listed for a while (the
 * next request joins it and starts a new one); it is joined at exit.
 *
 * A mark armed for the hostfn strategy that is still unsignalled after MG__WD_NOTIFY_GRACE_S is
 * queried too (CUDA drops host functions after a context fault).
 *
 * It also watches the communicators whose backend calls may block on the host (mg__wd_guard:
 * NCCL's blocking communicators): a call still inside past its deadline gets its communicator
 * aborted, which interrupts the backend (NCCL: a revoke) so that the call returns. The thread
 * stays while such communicators exist.
 *
 * It never blocks in a backend, and never calls one under its lock: a scan takes references on
 * the requests it found and raises their communicators' `refs` count under mg__wd.lock, then
 * calls the non-blocking methods (mark_query, async_error) without it. A CUDA host function that
 * signals a mark takes mg__wd.lock (to unlist the request), so that lock is never held across a
 * CUDA or NCCL call (CUDA may hold its own locks while a host function runs). An expiry aborts a
 * communicator with mg__comm_abort_nowait, which interrupts and leaves the release of resources
 * to the next holder of the comm's lock if that lock is busy. Callbacks of what it completes run
 * on the callback thread, never here.
 *
 * Lock order: mg__wd.lock, then a request's lock (mg__wd_abort and the scan take references
 * under mg__wd.lock and complete after releasing it). mg__wd.lock is taken under no other
 * library lock.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/handle.h"
#include "core/idle_thread.h"
#include "base/log.h"
#include "base/params.h"
#include "core/request.h"
#include "core/trace.h"

#define MG__WD_IDLE_S 2.0 /* the thread leaves after this long with nothing listed */
/* An asynchronous error ends a comm's pending requests once it has lasted this long: the thread
 * that runs the failing operation reports it first, with its own words, when it can (a host
 * worker always does, unless it is busy, e.g. in a long callback). */
#define MG__WD_ASYNC_GRACE_S 1.0
/* A mark armed with mark_notify that has not been signalled for this long is queried at every
 * interval from then on: CUDA never runs a host function queued behind a context fault, and
 * the query reports the fault (or finds the mark reached) long before the deadline. Before that
 * the signal, which comes within microseconds of the stream reaching the mark, is left alone, so
 * that the thread the backend signals on completes the request (a host worker runs callbacks
 * inline). */
#define MG__WD_NOTIFY_GRACE_S 1.0

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  mg_request_t *head;   /* pending requests, doubly linked */
  int n;                /* listed requests */
  mg__idle_thread_t t;  /* the watchdog thread */
  int stop;
  double next_errors;   /* next poll of the communicators' asynchronous errors */
  double wake_at;       /* when the sleeping thread wakes up next */
  int added;            /* a request was listed since the thread's last scan */
  mg_comm_t **guarded;  /* comms whose backend calls may block on the host (mg__wd_guard) */
  int nguarded, cap_guarded;
} mg__wd = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, {0}, 0, 0, 0, 0, NULL,
            0, 0};

/* ---- the list -------------------------------------------------------------------------------- */

static void mg__wd_unlink(mg_request_t *req) {
  if (req->wd_prev != NULL)
    req->wd_prev->wd_next = req->wd_next;
  else
    mg__wd.head = req->wd_next;
  if (req->wd_next != NULL) req->wd_next->wd_prev = req->wd_prev;
  req->wd_prev = req->wd_next = NULL;
  req->wd_listed = 0;
  mg__wd.n--;
}

static void *mg__wd_main(void *arg);

mg_status_t mg__wd_add(mg_request_t *req, mg_comm_t *comm) {
  pthread_mutex_lock(&mg__wd.lock);
  if (comm != NULL && atomic_load(&comm->aborting)) {
    pthread_mutex_unlock(&mg__wd.lock);
    return MG_ERR_ABORTED;
  }
  req->next_poll = mg__now() + (req->strategy == MG_COMPLETION_POLL     ? req->poll_interval
                                : req->strategy == MG_COMPLETION_HOSTFN ? MG__WD_NOTIFY_GRACE_S
                                                                        : mg__param_double(
                                                                              MG_PARAM_WATCHDOG_INTERVAL));
  req->wd_prev = NULL;
  req->wd_next = mg__wd.head;
  if (mg__wd.head != NULL) mg__wd.head->wd_prev = req;
  mg__wd.head = req;
  req->wd_listed = 1;
  mg__wd.n++;
  if (!mg__idle_thread_ensure(&mg__wd.t, mg__wd_main, "mg-watchdog")) {
    /* Requests stay bounded: mg_request_wait and mg_request_test expire them themselves. */
    MG_WARN("cannot start the watchdog thread; requests expire only when waited for or tested");
  }
  /* Wake the thread only for a deadline or poll before its next wake-up (not per request). */
  double first = req->kind == MG__REQ_RECORD && req->strategy != MG_COMPLETION_HOSTFN &&
                         req->next_poll < req->deadline
                     ? req->next_poll
                     : req->deadline;
  mg__wd.added = 1;
  if (first < mg__wd.wake_at) pthread_cond_signal(&mg__wd.cv);
  pthread_mutex_unlock(&mg__wd.lock);
  return MG_OK;
}

void mg__wd_guard(mg_comm_t *comm, int on) {
  pthread_mutex_lock(&mg__wd.lock);
  int i = 0;
  while (i < mg__wd.nguarded && mg__wd.guarded[i] != comm) i++;
  if (!on && i < mg__wd.nguarded) {
    mg__wd.guarded[i] = mg__wd.guarded[--mg__wd.nguarded];
  } else if (on && i == mg__wd.nguarded) {
    if (mg__wd.nguarded == mg__wd.cap_guarded) {
      int cap = mg__wd.cap_guarded ? 2 * mg__wd.cap_guarded : 8;
      mg_comm_t **v = realloc(mg__wd.guarded, sizeof *v * (size_t)cap);
      if (v != NULL) {
        mg__wd.guarded = v;
        mg__wd.cap_guarded = cap;
      }
    }
    if (mg__wd.nguarded < mg__wd.cap_guarded)
      mg__wd.guarded[mg__wd.nguarded++] = comm;
    else
      MG_WARN("rank %d: out of memory: the watchdog cannot watch this communicator's blocking "
              "calls; a call that NCCL holds is not bounded", comm->rank);
    if (!mg__idle_thread_ensure(&mg__wd.t, mg__wd_main, "mg-watchdog"))
      MG_WARN("cannot start the watchdog thread; blocking NCCL calls are not bounded");
    pthread_cond_signal(&mg__wd.cv);
  }
  pthread_mutex_unlock(&mg__wd.lock);
}

void mg__wd_remove(mg_request_t *req) {
  pthread_mutex_lock(&mg__wd.lock);
  if (req->wd_listed) mg__wd_unlink(req);
  pthread_mutex_unlock(&mg__wd.lock);
}

/* ---- expiry ----------------------------------------------------------------------------------- */

typedef struct {
  mg_request_t *req;
  char *msg;
  size_t len;
  int policy;                 /* 1: apply the on_timeout policy (second pass) */
  mg__trace_snap_t *snap;     /* the automatic dump, written after the registry is released */
} mg__expire_ctx_t;

/* Under the registry's read lock, with the comm alive: describe, or apply the policy. */
static void mg__expire_comm(void *p, void *arg) {
  mg_comm_t *comm = p;
  mg__expire_ctx_t *x = arg;
  if (!x->policy) {
    char where[MG__ERROR_LEN];
    mg__trace_describe(comm, where, sizeof where);
    snprintf(x->msg, x->len, "%s timed out after %g s waiting for %s", x->req->what,
             comm->timeout_s, where);
    x->snap = mg__trace_autodump_snap(comm);
    return;
  }
  mg__error(MG_ERR_TIMED_OUT, "%s", x->msg); /* what the comm records as its last error */
  if (x->req->on_timeout == MG_ON_TIMEOUT_ABORT) {
    MG_WARN("%s; aborting the communicator (rank %d)", x->msg, comm->rank);
    mg__comm_abort_nowait(comm);
  } else {
    MG_WARN("%s", x->msg);
    mg__comm_fail(comm, MG_ERR_TIMED_OUT);
  }
}

void mg__request_expire(mg_request_t *req, int inline_cb) {
  if (atomic_load_explicit(&req->state, memory_order_acquire) != MG__REQ_PENDING) return;
  char msg[MG__ERROR_LEN];
  mg__expire_ctx_t x = {req, msg, sizeof msg, 0, NULL};
  if (req->kind == MG__REQ_RECORD && req->be->mark_doomed != NULL) {
    /* An operation before the mark failed: that failure is the request's outcome, whatever the
     * clock says (and its own timeout or abort has already been handled on its communicator). */
    mg_status_t doomed = req->be->mark_doomed(&req->mark);
    if (doomed < 0) {
      mg_last_error_copy(msg, sizeof msg);
      (void)mg__request_complete(req, doomed, msg, inline_cb);
      return;
    }
  }
  if (req->kind == MG__REQ_RECORD) {
    if (!mg__handle_with(req->comm, MG__HANDLE_COMM, mg__expire_comm, &x))
      snprintf(msg, sizeof msg, "%s timed out (its communicator was destroyed)", req->what);
  } else {
    char where[MG__ERROR_LEN - 200], what[160];
    req->oops->expire(req->octx, 0, where, sizeof where);
    mg__request_what(req, what, sizeof what);
    snprintf(msg, sizeof msg, "%s timed out: %s", what, where);
  }
  /* The dump is on disk before anyone learns of the timeout: a program that exits on it keeps
   * its flight recorder. */
  mg__trace_autodump_write(x.snap);
  /* Complete before the policy: its abort must not turn this request into an aborted one. The
   * caller's wait and test hold the outcome back until the policy is applied (settling). */
  atomic_store_explicit(&req->settling, 1, memory_order_relaxed);
  if (!mg__request_complete(req, MG_ERR_TIMED_OUT, msg, inline_cb)) {
    atomic_store_explicit(&req->settling, 0, memory_order_release);
    return;
  }
  x.policy = 1;
  if (req->kind == MG__REQ_RECORD)
    (void)mg__handle_with(req->comm, MG__HANDLE_COMM, mg__expire_comm, &x); /* gone: nothing */
  else if (req->on_timeout == MG_ON_TIMEOUT_ABORT)
    req->oops->expire(req->octx, 1, NULL, 0);
  atomic_store_explicit(&req->settling, 0, memory_order_release);
}

/* ---- the thread ---------------------------------------------------------------------------- */

/* What a scan found, acted on after mg__wd.lock is released: a reference and an outcome. */
typedef struct {
  mg_request_t *req;
  mg_status_t st;
  char *msg; /* heap; NULL for none */
} mg__wd_hit_t;

typedef struct {
  mg__wd_hit_t *v;
  int n, cap;
} mg__hits_t;

static int mg__hits_push(mg__hits_t *a, mg_request_t *req, mg_status_t st, const char *msg) {
  if (a->n == a->cap) {
    int cap = a->cap ? 2 * a->cap : 16;
    mg__wd_hit_t *v = realloc(a->v, sizeof *v * (size_t)cap);
    if (v == NULL) return 0; /* out of memory: found again at the next scan */
    a->v = v;
    a->cap = cap;
  }
  mg__request_ref(req);
  a->v[a->n].req = req;
  a->v[a->n].st = st;
  a->v[a->n].msg = st < 0 && msg != NULL ? strdup(msg) : NULL; /* NULL: completes without one */
  a->n++;
  return 1;
}

/* Completes every hit (or expires it, when expire is 1), then drops the references. */
static void mg__hits_run(mg__hits_t *a, int expire) {
  for (int i = 0; i < a->n; i++) {
    if (expire)
      mg__request_expire(a->v[i].req, 0);
    else
      mg__request_complete(a->v[i].req, a->v[i].st, a->v[i].msg, 0);
    free(a->v[i].msg);
    mg__request_unref(a->v[i].req);
  }
  free(a->v);
  a->v = NULL;
  a->n = a->cap = 0;
}

void mg__wd_abort(mg_comm_t *comm, const mg__gen_t *gen_src, uint64_t below, const char *msg) {
  /* Every matching request must end before this returns: a failed allocation only makes it
   * take another pass. */
  for (int missed = 1; missed;) {
    mg__hits_t a = {0};
    missed = 0;
    pthread_mutex_lock(&mg__wd.lock);
    for (mg_request_t *r = mg__wd.head; r != NULL; r = r->wd_next) {
      int match = comm != NULL ? r->comm == comm : r->gen_src == gen_src && r->gen < below;
      if (match && !mg__hits_push(&a, r, MG_ERR_ABORTED, msg)) missed = 1;
    }
    pthread_mutex_unlock(&mg__wd.lock);
    mg__hits_run(&a, 0);
  }
}

/* Communicators a scan uses outside mg__wd.lock: their `refs` count is raised under the lock,
 * where a listed request's or a guarded communicator is alive (destroy unlists its requests and
 * its guard first, under the lock, and then waits for `refs` to drop). check: 1 poll its
 * asynchronous error, 2 its blocking call passed its deadline (bits). */
typedef struct {
  struct mg__wd_held {
    mg_comm_t *comm;
    int check;
  } *v;
  int n, cap;
} mg__held_t;

/* comm held once (check or'ed in). 0 when out of memory: not held, the caller skips it. */
static int mg__held_add(mg__held_t *h, mg_comm_t *comm, int check) {
  for (int i = 0; i < h->n; i++)
    if (h->v[i].comm == comm) {
      h->v[i].check |= check;
      return 1;
    }
  if (h->n == h->cap) {
    int cap = h->cap ? 2 * h->cap : 16;
    struct mg__wd_held *v = realloc(h->v, sizeof *v * (size_t)cap);
    if (v == NULL) return 0; /* out of memory: this scan leaves it alone */
    h->v = v;
    h->cap = cap;
  }
  atomic_fetch_add(&comm->refs, 1);
  h->v[h->n].comm = comm;
  h->v[h->n].check = check;
  h->n++;
  return 1;
}

static void mg__held_release(mg__held_t *h) {
  for (int i = 0; i < h->n; i++) mg__comm_leave(h->v[i].comm);
  free(h->v);
  h->v = NULL;
  h->n = h->cap = 0;
}

/* Queries every hit (a RECORD one's comm is held), completes those reached or failed, and drops
 * the references. */
static void mg__hits_query(mg__hits_t *a) {
  for (int i = 0; i < a->n; i++) {
    mg_request_t *req = a->v[i].req;
    mg__request_poll(req, 0);
    mg__request_unref(req);
  }
  free(a->v);
  a->v = NULL;
  a->n = a->cap = 0;
}

/* A backend call still inside past its deadline (comm is held): the comm is aborted, which
 * interrupts the backend so that the call returns; the call reports MG_ERR_TIMED_OUT (it reads
 * call_expired). */
static void mg__wd_call_expired(mg_comm_t *comm) {
  /* The call the scan saw may have left, and another entered, since. */
  const double d = atomic_load(&comm->call_deadline);
  if (d == 0.0 || mg__now() < d || atomic_exchange(&comm->call_expired, 1)) return;
  MG_WARN("rank %d of %d (device %d): a call into %s has not returned by its deadline (%g s); "
          "aborting the communicator so that it returns", comm->rank, comm->nranks, comm->device,
          comm->backend->name, comm->timeout_s);
  mg__comm_abort_nowait(comm);
}

/* The asynchronous error of a held comm. One that lasted MG__WD_ASYNC_GRACE_S fails the comm and
 * ends its pending requests with it (into failed). wd_error_since is the watchdog thread's. */
static void mg__wd_check_comm(mg_comm_t *comm, double now, mg__hits_t *failed) {
  if (atomic_load(&comm->aborting)) return;
  mg_status_t st = comm->backend->async_error(comm);
  if (st >= 0) {
    comm->wd_error_since = 0;
    return;
  }
  if (comm->wd_error_since == 0) comm->wd_error_since = now;
  if (now - comm->wd_error_since < MG__WD_ASYNC_GRACE_S) return;
  mg__comm_fail(comm, st);
  char msg[MG__ERROR_LEN];
  mg_last_error_copy(msg, sizeof msg);
  pthread_mutex_lock(&mg__wd.lock);
  for (mg_request_t *q = mg__wd.head; q != NULL; q = q->wd_next)
    if (q->comm == comm) /* missed: the comm is in error; the request expires or is aborted */
      (void)mg__hits_push(failed, q, st, msg);
  pthread_mutex_unlock(&mg__wd.lock);
}

static void *mg__wd_main(void *arg) {
  mg__hits_t expired = {0}, query = {0}, failed = {0};
  mg__held_t held = {0};
  double idle_since = mg__now();
  pthread_mutex_lock(&mg__wd.lock);
  while (!mg__wd.stop) {
    const double interval = mg__param_double(MG_PARAM_WATCHDOG_INTERVAL);
    double now = mg__now();
    double wake = now + interval;
    mg__wd.added = 0;
    const int check_errors = now >= mg__wd.next_errors;
    if (check_errors) mg__wd.next_errors = now + interval;
    for (mg_request_t *r = mg__wd.head; r != NULL; r = r->wd_next) {
      if (now >= r->deadline) {
        (void)mg__hits_push(&expired, r, MG_ERR_TIMED_OUT, NULL); /* missed: next scan */
        continue;
      }
      if (r->deadline < wake) wake = r->deadline;
      if (r->kind != MG__REQ_RECORD) {
        /* Queried by its owner: at every interval, with no communicator to hold. */
        if (!mg__request_queried(r)) continue;
        if (now >= r->next_poll && mg__hits_push(&query, r, MG_INPROGRESS, NULL))
          r->next_poll = now + interval;
        if (r->next_poll < wake) wake = r->next_poll;
        continue;
      }
      /* POLL at its interval; SYNC and HOSTFN (after MG__WD_NOTIFY_GRACE_S) as a safety net.
       * Missed (no memory): the next scan queries it. */
      if (now >= r->next_poll && mg__held_add(&held, r->comm, 0) &&
          mg__hits_push(&query, r, MG_INPROGRESS, NULL))
        r->next_poll = now + (r->strategy == MG_COMPLETION_POLL ? r->poll_interval : interval);
      if (r->next_poll < wake) wake = r->next_poll;
      if (check_errors) (void)mg__held_add(&held, r->comm, 1); /* missed: next time */
    }
    for (int i = 0; i < mg__wd.nguarded; i++) {
      mg_comm_t *c = mg__wd.guarded[i];
      const double d = atomic_load(&c->call_deadline);
      if (d == 0.0 || atomic_load(&c->aborting)) continue;
      if (now < d) {
        if (d < wake) wake = d;
      } else {
        (void)mg__held_add(&held, c, 2); /* missed (no memory): the next scan */
      }
    }
    if (mg__wd.n > 0 || mg__wd.nguarded > 0) idle_since = now;
    pthread_mutex_unlock(&mg__wd.lock);

    /* The backends are called with no lock of the library held: a CUDA host function that
     * signals a mark takes mg__wd.lock, and must never wait for a thread that is inside CUDA. */
    mg__hits_query(&query);
    for (int i = 0; i < held.n; i++) {
      if (held.v[i].check & 2) mg__wd_call_expired(held.v[i].comm);
      if (held.v[i].check & 1) mg__wd_check_comm(held.v[i].comm, now, &failed);
    }
    mg__hits_run(&failed, 0);
    mg__held_release(&held);
    mg__hits_run(&expired, 1);

    pthread_mutex_lock(&mg__wd.lock);
    if (mg__wd.stop ||
        (mg__wd.n == 0 && mg__wd.nguarded == 0 && mg__now() - idle_since >= MG__WD_IDLE_S))
      break;
    double wait = wake - mg__now();
    mg__wd.wake_at = wake;
    if (wait > 0 && !mg__wd.added) { /* listed while it worked: scan again first */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      double t = (double)ts.tv_nsec * 1e-9 + wait;
      ts.tv_sec += (time_t)t;
      ts.tv_nsec = (long)((t - floor(t)) * 1e9);
      /* A timeout, a new request or a stop: the loop looks again in every case. */
      (void)pthread_cond_timedwait(&mg__wd.cv, &mg__wd.lock, &ts);
    }
  }
  mg__idle_thread_left(&mg__wd.t);
  mg__wd.wake_at = 0;
  pthread_mutex_unlock(&mg__wd.lock);
  return NULL;
}

__attribute__((destructor)) static void mg__wd_exit(void) {
  pthread_mutex_lock(&mg__wd.lock);
  mg__wd.stop = 1;
  pthread_cond_signal(&mg__wd.cv);
  int join = mg__idle_thread_exists(&mg__wd.t);
  pthread_mutex_unlock(&mg__wd.lock);
  if (join) pthread_join(mg__wd.t.th, NULL); /* it never blocks: it leaves at once */
}

static void mg__wd_atfork_child(void) {
  /* Only the forking thread exists in the child. The requests listed by the parent are copies
   * the child never completes; it starts with an empty list. */
  pthread_mutex_init(&mg__wd.lock, NULL);
  pthread_cond_init(&mg__wd.cv, NULL);
  mg__wd.head = NULL;
  mg__wd.n = 0;
  mg__wd.nguarded = 0; /* the parent's threads, whose calls it watched, are not here */
  mg__wd.t.running = mg__wd.t.joinable = mg__wd.stop = 0;
}

__attribute__((constructor)) static void mg__wd_init(void) {
  /* Failing to install it (ENOMEM at load time) only matters to programs that fork after
   * making requests. */
  (void)pthread_atfork(NULL, NULL, mg__wd_atfork_child);
}
