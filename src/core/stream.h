/*
 * stream.h -- rank workers and host streams (stream.c).
 *
 * A worker is a thread ("mg-rank<N>") with an ordered mailbox of items; it runs them one after
 * the other. Every communicator that needs one has exactly one: made by mg_stream_create for the
 * host streams of a communicator, or by the world for its rank. A host stream is a handle on its
 * communicator's worker with its own progress counters and sticky error; operations on it are
 * numbered when they are submitted and run on the worker through the same launch path as direct
 * calls (group.c).
 */
#ifndef MG_CORE_STREAM_H
#define MG_CORE_STREAM_H

#include "core/backend.h"
#include "core/comm.h"

typedef struct mg__item mg__item_t;
struct mg__item {
  mg__item_t *next;
  void (*run)(mg__item_t *it); /* on the worker, holding no lock; owns and frees the item */
};

typedef struct mg__worker mg__worker_t;

/* Starts a worker named name. wowner is the set it belongs to (the world, or the worker itself
 * when NULL): a thread of the set never waits for a request of that set (request.c). MG_OK,
 * MG_ERR_OUT_OF_MEMORY or MG_ERR_SYSTEM. */
mg_status_t mg__worker_start(const char *name, const void *wowner, mg__worker_t **out);
/* Appends it to w's mailbox. Never blocks for long (a leaf lock). */
void mg__worker_push(mg__worker_t *w, mg__item_t *it);
/* Runs what w has, then stops it, joins it and frees it. Not from w's own thread. */
void mg__worker_stop(mg__worker_t *w);
/* 1 when the calling thread is w. */
int mg__worker_is_current(const mg__worker_t *w);
/* Waits until every item pushed to w before the call has run; MG_ERR_TIMED_OUT naming fn. */
mg_status_t mg__worker_drain(mg__worker_t *w, double deadline, const char *fn);
/* The identity of w's set, for requests completed on it. */
const void *mg__worker_owner(const mg__worker_t *w);

/* Host streams alive in the process: while there are none, no stream an operation is given can
 * be one, and the lookup in the handle registry is skipped (the NCCL backend's every call). */
extern atomic_int mg__hstreams_live;
static inline int mg__hstreams_any(void) {
  return atomic_load_explicit(&mg__hstreams_live, memory_order_acquire) != 0;
}
/* The host stream that s is, or NULL when s is not a live host stream. */
struct mg_stream *mg__hstream_lookup(mg_stream_t s);
/* The communicator a host stream was made on (compared, never dereferenced by callers). */
const mg_comm_t *mg__hstream_comm(const struct mg_stream *hs);
/* Queues ops[0..n) (validated, each with op->hstream set) on their communicators' workers: one
 * item per communicator, so that the ops of one group on one communicator are posted together.
 * Numbers and records each op; takes over each op's `v` (op->v is NULL afterwards). MG_OK, or
 * an error with nothing queued. */
mg_status_t mg__stream_submit(mg__op_t *const *ops, int n);

/* The host backend's marks (its mark_* methods): NULL stream is reached at once; a host stream
 * gets a marker item that is reached when the worker runs it. */
mg_status_t mg__hmark_record(mg__mark_t *mark);
mg_status_t mg__hmark_query(mg__mark_t *mark);
mg_status_t mg__hmark_doomed(mg__mark_t *mark);
mg_status_t mg__hmark_notify(mg__mark_t *mark);
mg_status_t mg__hmark_wait(mg__mark_t *mark, double deadline);
void mg__hmark_release(mg__mark_t *mark);
/* end's time minus start's: the mg__now() at which the host engine reached each (the worker
 * ran the marker; for stream NULL, mark_record). */
mg_status_t mg__hmark_elapsed(mg__mark_t *start, mg__mark_t *end, double *seconds);
/* Bytes of mark->priv the host marks use (a marker and a time). */
#define MG__HMARK_PRIV_SIZE (sizeof(void *) + sizeof(double))

#endif
