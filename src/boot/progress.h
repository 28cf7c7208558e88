/*
 * progress.h -- progress through the job's store (progress.c): each rank of a communicator made
 * by mg_comm_init_env publishes what it last enqueued, and reads what the others published, so
 * that a timeout names the rank that is behind also when it runs in another process.
 *
 * The core uses it for backends whose peer_progress knows only the ranks of this process
 * (MG__CAP_PROGRESS_LOCAL: NCCL): init_env.c joins, mg_comm_destroy leaves, trace.c reads a peer
 * through it when the backend says "unknown". It knows nothing of communicators: a member is a
 * tag, a rank, a size, and a function that reads this rank's own progress and whether the rank
 * stopped.
 *
 * A stop (the rank's communicator aborted or revoked) is published with the progress, so that
 * ranks of other processes learn it (NCCL tells them nothing): at the next pass, at once after
 * mg__bprog_wake, and at leave, whose key then stays in the store instead of being deleted.
 * Peers read it within their reading round (mg__bprog_stopped).
 */
#ifndef MG_BOOT_PROGRESS_H
#define MG_BOOT_PROGRESS_H

#include <stdint.h>

#include "core/backend.h"
#include "mgcomm.h"

typedef struct mg__bprog mg__bprog_t;

/* Reads this rank's own progress into *out and whether it stopped into *stopped (0, or the
 * MG__STOP_* of core/comm.h it stopped with): MG_OK, or an error when it has none to publish.
 * Called on the publisher thread, and once by mg__bprog_leave, under the registry lock: must not
 * block nor take a lock that is held across a store call. */
typedef mg_status_t (*mg__bprog_own_t)(void *ctx, mg__progress_t *out, int *stopped);

/* Registers rank `rank` of `nranks` of the communicator `tag` for publication through the store
 * at address (token as mg_store_connect takes it), every interval_ms (> 0) milliseconds; own(ctx)
 * stays callable until mg__bprog_leave returns. Starts the publisher thread ("mg-progress") when
 * none runs. Never waits for the store (the thread connects). MG_ERR_OUT_OF_MEMORY, or
 * MG_ERR_INVALID_ARGUMENT for an address or token too long; *out untouched on error. */
mg_status_t mg__bprog_join(const char *address, const char *token, uint64_t tag, int rank,
                           int nranks, int interval_ms, mg__bprog_own_t own, void *ctx,
                           mg__bprog_t **out);

/* Stops publishing p: own is called a last time here, and not again once this returns. The
 * publisher deletes p's key (bounded), or, when that last call said the rank stopped, publishes
 * the stop and keeps the key; then it frees p. When p was the last member the thread is joined
 * here, which takes at most a few short store deadlines. NULL is a no-op. */
void mg__bprog_leave(mg__bprog_t *p);

/* What rank r published, as last read by the publisher: MG_OK, or MG_ERR_NOT_SUPPORTED when
 * nothing was read of it (it published nothing yet, the store is gone, or reading is off).
 * Never blocks (a leaf mutex held for a copy); sets no error message. */
mg_status_t mg__bprog_peer(mg__bprog_t *p, int r, mg__progress_t *out);

/* Begins the publisher's next pass now rather than at its interval (a member stopped). Never
 * blocks beyond the registry lock; a no-op while no thread runs. */
void mg__bprog_wake(void);

/* A peer of p's rank that published a stop, as last read by the publisher: 1 with *rank and *how
 * (MG__STOP_*) set, the lowest such rank; else 0. Never blocks (a leaf mutex). */
int mg__bprog_stopped(mg__bprog_t *p, int *rank, int *how);

#endif
