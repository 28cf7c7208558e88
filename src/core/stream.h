/*
 * stream.h -- rank workers and host streams (stream.c).
 *
 * A worker is a thread ("mg-rank<N>") with an ordered mailbox of items; it runs them one after
 * the other. Every communicator that needs one has exactly one: made by mg_stream_create for the
 * host streams of a communicator, or by the world for its rank. A host stream is a handle on its
 * communicator's worker with its own progress counters and sticky error; operations on it are
 * numbered when they are submitted and run on the worker through the same launch path as direct
 * calls (group.c). A marker is a point in a host stream; the host backend's marks (host_mark.c)
 * are made of them.
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
 * Numbers and records each op; keeps each op's all_to_allv arrays and takes them over
 * (op->v_kept is NULL afterwards). MG_OK, or an error with nothing queued. */
mg_status_t mg__stream_submit(mg__op_t *const *ops, int n);

/* Markers: points in a host stream, for the host backend's marks. A marker is an item queued on
 * the stream's worker behind everything submitted to the stream before it; it is reached when
 * the worker runs it, with the stream's sticky error at that point. */
typedef struct mg__marker mg__marker_t;
/* Queues a marker on `stream`, which must be a live host stream of comm. *out holds the caller's
 * reference (mg__marker_unref); *wowner is the identity of the worker's set (the thread that
 * reaches the marker: it must never wait for it). MG_OK; MG_ERR_INVALID_ARGUMENT when stream is
 * not a host stream of comm; MG_ERR_OUT_OF_MEMORY. */
mg_status_t mg__marker_push(mg_comm_t *comm, mg_stream_t stream, mg__marker_t **out,
                            const void **wowner);
/* 1 once the worker reached mk, with the stream's sticky error then (*status, MG_OK if none), its
 * message (*msg, NULL if none or when memory ran out; owned by mk) and the mg__now() time of
 * reaching it (*t); 0 before (nothing set). Any of the three may be NULL. Never blocks. */
int mg__marker_reached(const mg__marker_t *mk, mg_status_t *status, const char **msg,
                       double *t);
/* The sticky error of mk's stream so far: MG_OK, or the error with its message set as the
 * thread's. A leaf lock. */
mg_status_t mg__marker_stream_error(const mg__marker_t *mk);
/* Waits until mk is reached (1), or until deadline passes or its communicator is aborting (0).
 * The caller keeps the communicator alive. */
int mg__marker_wait(const mg__marker_t *mk, double deadline);
/* Once per marker: cb(arg, status, msg) is called once when mk is reached, on the worker, or
 * from this call when it is reached already (status and msg as mg__marker_reached gives them;
 * msg is valid during the call only). */
void mg__marker_arm(mg__marker_t *mk, void (*cb)(void *arg, mg_status_t status, const char *msg),
                    void *arg);
/* Drops the caller's reference (the queue item holds the other until the worker ran it). */
void mg__marker_unref(mg__marker_t *mk);

#endif
