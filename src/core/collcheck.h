/*
 * collcheck.h -- the collective check (MGCOMM_CHECK_COLLECTIVES=1): before the collectives of a
 * launch run, the ranks of each communicator compare what they called.
 */
#ifndef MG_CORE_COLLCHECK_H
#define MG_CORE_COLLCHECK_H

#include "core/backend.h"

/* Checks the collectives of ops[0..n) whose communicator has check_colls set (the others, and
 * send/recv, pass). Called by mg__launch with the communicators' locks held, after numbering
 * and before the backends see the batch. MG_OK when every rank of every such communicator called
 * the same; MG_ERR_INVALID_USAGE, with a message that is the same on every rank, when they did
 * not (nothing of the batch may then run); the exchange's error (MG_ERR_TIMED_OUT, ...) when it
 * failed. */
mg_status_t mg__collcheck(mg__op_t *const *ops, int n);

#endif
