/*
 * op.h -- from a public call to a posted operation: validation (argcheck.c), custom-op capture
 * (redop.c), and posting, alone or in a group (group.c).
 */
#ifndef MG_CORE_OP_H
#define MG_CORE_OP_H

#include <stdlib.h>

#include "core/backend.h"

/* Checks every argument of op against the rules of mgcomm.h's "Operations"; clears the buffers
 * the calling rank does not use; captures the reduction op; points op->v at all_to_allv's arrays
 * (the caller's: mg__op_keep copies them for an op that outlives the call). Errors name fn and
 * the argument. */
mg_status_t mg__op_validate(mg__op_t *op, const size_t *const v_in[4], const char *fn);
/* Gives an all_to_allv op that outlives its call (in a group, on a host stream, in a world) its
 * own copy of the arrays it points at (op->v_kept, freed by mg__op_release); nothing for one that
 * has its copy already, or for the other kinds. MG_OK or MG_ERR_OUT_OF_MEMORY, naming fn. */
mg_status_t mg__op_keep(mg__op_t *op, const char *fn);
/* Captures op->redop.op (built-in, or a custom op of op->comm for op->dtype) into op->redop. */
mg_status_t mg__redop_capture(mg__op_t *op, const char *fn);
/* Frees what op owns (all_to_allv's kept arrays; the others own nothing). */
static inline void mg__op_release(mg__op_t *op) {
  if (op->v_kept == NULL) return;
  free(op->v_kept);
  op->v_kept = NULL;
}
/* Posts an op that was validated already (ops.c's mg__post, the world's workers): runs it now,
 * or records it when the calling thread is in a group. */
mg_status_t mg__post_checked(mg__op_t *op, const char *fn);
/* An operation that failed its checks with st (< 0) before it was posted: releases it, keeps the
 * message on its communicator when comm_live (the error is not about the handle itself), and
 * notes the error for the calling thread's open group. Returns st. */
mg_status_t mg__post_refused(mg__op_t *op, mg_status_t st, int comm_live) __attribute__((cold));
/* Numbers op on its communicator, publishes it to the backend (op_enqueued) and records it in
 * the flight recorder at time now (mg__now()), as started when started is 1. The caller holds
 * op->comm->seq_lock, or op->comm->lock while op->comm has no worker (comm.h). */
void mg__op_number(mg__op_t *op, int started, double now);
/* Runs ops[0..n) of one item of a host stream on the worker (numbered by mg__op_number): as a
 * group end does, with their communicators' locks. Returns the first error. */
mg_status_t mg__launch_numbered(mg__op_t **ops, int n);
/* Validates op->stream against op->comm: NULL, a host stream of op->comm (op->hstream is set),
 * or a foreign stream the backend judges in check_op. */
mg_status_t mg__op_stream(mg__op_t *op, const char *fn);

#endif
