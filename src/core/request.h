/*
 * request.h -- requests (exactly-once completion) and their callback thread (request.c), and the
 * watchdog that bounds every pending request by its deadline (watchdog.c).
 *
 * References. A request is freed when its last reference goes:
 *   - the handle's, dropped by mg_request_free;
 *   - the pending one, dropped by the call that completes it (after its callback ran inline or
 *     was handed to the callback thread);
 *   - short-lived ones taken by whoever touches it from another thread: a waiter, the watchdog,
 *     the callback thread, an armed mark (until the backend signals it), a world batch.
 * Completion is one transition PENDING -> DONE under the request's lock; every later attempt
 * (the worker, the watchdog's expiry, an abort, a poll) finds DONE and does nothing. The callback
 * is read under that lock and called after it is released.
 *
 * Lock order: the watchdog's lock, then a request's lock (a leaf). Completion takes the request's
 * lock, releases it, then takes the watchdog's (to unlist). No other library lock is held while
 * a request completes.
 */
#ifndef MG_CORE_REQUEST_H
#define MG_CORE_REQUEST_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "core/backend.h"
#include "base/clock.h"
#include "core/comm.h"

#define MG__REQ_MAGIC 0x6d677271u /* "mgrq" */

enum { MG__REQ_PENDING = 0, MG__REQ_DONE = 1 };

enum {
  MG__REQ_RECORD = 1, /* a mark on a stream of comm (mg_record) */
  MG__REQ_WORLD = 2,  /* the parts of a world batch, completed by the world */
  MG__REQ_P2P = 3     /* a peer copy, completed by src/p2p/ when its stream passes it */
};

/* A generation counter shared by a world and its requests (refcounted, so that a request may
 * outlive its world): a request of generation g is stale once current != g. */
typedef struct mg__gen {
  _Atomic uint64_t current; /* UINT64_MAX once the world is destroyed */
  atomic_int refs;
} mg__gen_t;
void mg__gen_unref(mg__gen_t *g);

/* What a world request needs from its world (src/world/world.c), without the core knowing it. */
typedef struct mg__req_owner_ops {
  /* What the request is, for messages ("mg_world_all_reduce (float32 x 8)"). */
  void (*what)(const void *ctx, char *buf, size_t len);
  /* The request passed its deadline: describe what is missing into buf and, when abort is 1,
   * abort the world. ctx stays valid until release(ctx). Runs on the watchdog thread or a
   * waiter, holding no library lock. */
  void (*expire)(void *ctx, int abort, char *buf, size_t len);
  /* The request is freed: drop its reference on ctx. */
  void (*release)(void *ctx);
  /* Optional (NULL: the owner completes the request itself). Never blocks: MG_INPROGRESS while
   * not done, MG_OK once done, or the error that means it never will be (message set). Called,
   * as a mark's query, by mg_request_wait and mg_request_test and by the watchdog at every
   * MGCOMM_WATCHDOG_INTERVAL, which then complete the request; holding no library lock. A
   * request with a query that is freed while pending and without a callback is completed at once
   * (nobody can learn its outcome): its release must accept work still in flight. */
  mg_status_t (*query)(void *ctx);
  /* Optional: a callback was set on req, pending: arrange for req to be completed soon after it
   * is done, without a caller querying it (src/p2p/: a host function), taking the references
   * that needs. MG_OK or the error (the watchdog's queries complete it then). Holds no lock. */
  mg_status_t (*notify)(void *ctx, mg_request_t *req);
} mg__req_owner_ops_t;

struct mg_request {
  uint32_t magic;
  int kind;                   /* MG__REQ_*; WORLD and P2P requests are completed by their owner
                                 (oops below) */
  atomic_int state;           /* MG__REQ_PENDING, MG__REQ_DONE */
  mg_status_t status;         /* the outcome; written before state becomes DONE */
  atomic_int settling;        /* 1 from a timeout's completion until its policy has been applied
                                 (abort or error state): wait and test report the timeout only
                                 after, so that the caller sees the policy's effect */
  char *msg;                  /* its message (heap), NULL when there is none */
  atomic_int refs;            /* see the top of this file */
  pthread_mutex_t lock;       /* leaf: the transition, the callback, waiters */
  pthread_cond_t cv;          /* waiters sleep here */
  int waiters;
  int cb_set;                 /* one callback per request */
  mg_request_cb_t cb;
  void *cb_arg;
  double deadline;            /* absolute mg__now() time; expiry is MG_ERR_TIMED_OUT */
  mg_on_timeout_t on_timeout; /* resolved */
  char what[160];             /* what it is, for messages: "mg_record on rank 1 of 3"; world
                                 requests say it through oops->what */
  /* MG__REQ_RECORD */
  mg_comm_t *comm;            /* only touched while the comm is known to be registered */
  const mg__backend_t *be;    /* comm's backend, for mark_release after comm is gone */
  mg_completion_t strategy;   /* resolved (never DEFAULT) */
  double poll_interval;       /* seconds between two queries (POLL) */
  mg__mark_t mark;
  int mark_made;              /* mark_record succeeded: mark_release is owed */
  /* MG__REQ_WORLD (oops and octx: MG__REQ_P2P too) */
  mg__gen_t *gen_src;         /* the world's generation counter (a reference) */
  uint64_t gen;               /* the generation the request was made in */
  const void *wowner;         /* the worker set whose threads must not wait for it */
  const mg__req_owner_ops_t *oops;
  void *octx;
  /* the watchdog's list of pending requests (under its lock) */
  struct mg_request *wd_prev, *wd_next;
  int wd_listed;
  double next_poll;           /* POLL / SYNC: when the watchdog queries the mark next */
  /* the callback thread's queue (under its lock) */
  struct mg_request *cb_next;
};

/* One round of a bounded spin-wait: 1 while the caller may keep spinning (until `until`, an
 * mg__now() time), 0 once it should sleep instead. Every 64 rounds a look at the clock and a
 * sched_yield, so that on a machine with fewer cores than busy threads the thread being waited
 * for can take this core (a pause instruction would keep it). */
static inline int mg__spin_round(unsigned i, double until) {
  if ((i & 63) != 63) return 1;
  if (mg__now() >= until) return 0;
  sched_yield();
  return 1;
}

/* ---- request.c ---- */

/* A new pending request, registered as a handle, refs = 2 (handle + pending). NULL on failure,
 * with the message naming fn. */
mg_request_t *mg__request_new(int kind, double deadline, mg_on_timeout_t on_timeout,
                              const char *fn);
/* Undoes mg__request_new for a request that was never handed out (nothing else refers to it). */
void mg__request_discard(mg_request_t *req);
/* Completes req once with status and msg (may be NULL; copied). 1 when this call completed it,
 * 0 when it was complete already. The callback runs on this thread, after the request's lock is
 * released, when inline_cb is 1 (the caller is a library thread that holds no library lock),
 * else on the callback thread. Drops the pending reference: a caller that touches req afterwards
 * holds a reference of its own. */
int mg__request_complete(mg_request_t *req, mg_status_t status, const char *msg, int inline_cb);
/* A request that is complete already with MG_OK (an empty world group). */
mg_status_t mg__request_done(int kind, mg_on_timeout_t on_timeout, mg_request_t **out,
                             const char *fn);
void mg__request_ref(mg_request_t *req);
/* Drops one reference; the last one releases the mark, the owner's context and the memory. */
void mg__request_unref(mg_request_t *req);
/* 1 when req is completed by querying it (mg__request_poll): a RECORD request or one whose owner
 * has a query. */
int mg__request_queried(const mg_request_t *req);
/* Queries req's mark (RECORD) or its owner (oops->query) and completes req when reached or
 * failed. The caller holds a reference and, for RECORD, guarantees that req->comm stays valid. */
void mg__request_poll(mg_request_t *req, int inline_cb);
/* What req is, for messages (req->what, or its owner's description). */
void mg__request_what(const mg_request_t *req, char *buf, size_t len);
/* 1 when the calling thread is one of the library's (a rank worker, the callback thread). */
int mg__on_library_thread(void);
/* Marks the calling thread as a library thread with worker set wowner (stream.c's workers). */
void mg__set_library_thread(const void *wowner);

/* ---- watchdog.c ---- */

/* Lists req with the watchdog (its deadline; for POLL and SYNC marks a periodic query), starting
 * the watchdog thread if needed. When comm (may be NULL) is aborting, req is not listed and
 * MG_ERR_ABORTED is returned: the caller completes it. */
mg_status_t mg__wd_add(mg_request_t *req, mg_comm_t *comm);
/* Watches (on = 1) or stops watching (on = 0) comm's call_deadline (comm.h): a comm whose
 * backend calls may block on the host. While one is watched the watchdog thread stays, and
 * checks them at every MGCOMM_WATCHDOG_INTERVAL; a call still inside past its deadline gets
 * comm->call_expired set and comm aborted (mg__comm_abort_nowait), which interrupts the backend.
 * on = 0 returns once the watchdog no longer uses comm. */
void mg__wd_guard(mg_comm_t *comm, int on);
/* Unlists req if it is listed. */
void mg__wd_remove(mg_request_t *req);
/* Ends every listed request of comm (comm != NULL), or of generation source gen_src with a
 * generation below `below` (gen_src != NULL), with MG_ERR_ABORTED and msg; callbacks go to the
 * callback thread. When it returns they are complete. */
void mg__wd_abort(mg_comm_t *comm, const mg__gen_t *gen_src, uint64_t below, const char *msg);
/* Ends req with MG_ERR_TIMED_OUT once its deadline passed: the message says what it waited for
 * and where the ranks are; the comm's trace goes to MGCOMM_TRACE_DIR; then the on_timeout policy
 * (abort or report). The caller holds a reference. inline_cb as mg__request_complete. */
void mg__request_expire(mg_request_t *req, int inline_cb);

#endif
