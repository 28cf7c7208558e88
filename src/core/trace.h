/*
 * trace.h -- the flight recorder: a ring per communicator of the operations it was given, with
 * their enqueue, start and end times and states; the description of where a communicator is
 * stuck (timeout messages); the JSON dump (mg_comm_dump_trace, and automatically on timeout into
 * MGCOMM_TRACE_DIR).
 *
 * An entry goes ENQUEUED (numbered, queued on a host stream) -> STARTED (handed to the backend)
 * -> COMPLETED or FAILED. On the host backend with a NULL stream the three happen in one call.
 * The ring's lock (a spinlock, base/spinlock.h) is a leaf: it is taken under comm->lock and
 * comm->seq_lock, never the other way.
 */
#ifndef MG_CORE_TRACE_H
#define MG_CORE_TRACE_H

#include "core/backend.h"

typedef struct mg__trace mg__trace_t;

/* Gives comm a ring of `entries` operations (0: none). MG_OK or MG_ERR_OUT_OF_MEMORY. */
mg_status_t mg__trace_create(mg_comm_t *comm, int entries);
void mg__trace_destroy(mg_comm_t *comm);

/* op was numbered at time now (mg__now()): it enters the ring (op->trace_id is set), STARTED
 * when started is 1. */
void mg__trace_enqueue(mg__op_t *op, int started, double now);
void mg__trace_start(const mg__op_t *op);
/* op ended with op->status. */
void mg__trace_end(const mg__op_t *op);

/* Where comm stands, for a timeout message: "all_reduce #42 (float32 x 1048576): ranks 0,1,3
 * waiting, rank 2 last enqueued #41 (all_gather)" for the oldest unfinished collective, from the
 * ring and the progress the ranks publish; "no operation pending" when there is none. The caller
 * guarantees that comm stays valid; takes no lock but the ring's (a leaf, held for a copy). */
void mg__trace_describe(mg_comm_t *comm, char *buf, size_t len);
/* Where every rank of comm stands against collective #seq, from the progress the ranks publish:
 * "ranks 0,1 waiting, rank 2 last enqueued #41 (all_gather float32 x 8)" ("enqueued it" for
 * `waiting` when issued: a backend whose operations finish on the device). The one place that
 * names the late ranks: the timeout messages of the backends and of the watchdog use it. */
void mg__trace_ranks(mg_comm_t *comm, uint64_t seq, int issued, char *buf, size_t len);

/* The part of a dump that needs comm (copied under the ring's lock), and writing it. */
typedef struct mg__trace_snap mg__trace_snap_t;
/* NULL when comm has no recorder (MG_ERR_NOT_SUPPORTED) or memory ran out (message set). */
mg__trace_snap_t *mg__trace_snapshot(mg_comm_t *comm, const char *reason);
/* Writes the snapshot as JSON to path, or into the directory path under its default name. */
mg_status_t mg__trace_write(const mg__trace_snap_t *snap, const char *path, const char *fn);
void mg__trace_snap_free(mg__trace_snap_t *snap);
/* When MGCOMM_TRACE_DIR is set: snapshots comm (which the caller keeps valid) for a dump. NULL
 * otherwise. The caller then writes it with mg__trace_autodump_write, holding no lock. */
mg__trace_snap_t *mg__trace_autodump_snap(mg_comm_t *comm);
/* Writes and frees an automatic dump (NULL: nothing); failures are logged as warnings. */
void mg__trace_autodump_write(mg__trace_snap_t *snap);

#endif
