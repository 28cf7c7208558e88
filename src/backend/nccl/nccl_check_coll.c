/*
 * nccl_check_coll.c -- the NCCL backend's check_exchange (the collective check,
 * core/collcheck.c): each exchange is an ncclAllGather of the records on the communicator, on a
 * stream of the check's own; the exchanges of a round are one launch of the backend (one NCCL
 * group, so that one thread may drive every rank, bounded as an operation is). The records go in
 * and out through page-locked host memory by copies on the same stream, and the call waits on
 * the host until the stream has passed them, within the deadline.
 *
 * NCCL runs the kernels of a communicator in the order they were issued, whatever their streams,
 * so the wait also waits for the communicator's earlier operations: with the check on, the host
 * no longer runs ahead of the GPU by more than one collective. That, more than the all_gather
 * itself, is what the check costs on this backend.
 */
#include <string.h>

#include "backend/nccl/nccl.h"
#include "base/clock.h"

/* The scratch of comm's check, made on its first exchange (comm's context is current). */
static mg_status_t mg__nchk_prepare(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  const size_t bytes = (size_t)(comm->nranks + 1) * MG__CHECK_BYTES;
  if (nx->chk_stream == NULL)
    MG_CU_CHECK(StreamCreate, &nx->chk_stream, MG__CU_STREAM_NON_BLOCKING);
  if (nx->chk_dev == 0) MG_CU_CHECK(MemAlloc, &nx->chk_dev, bytes);
  if (nx->chk_host == NULL) MG_CU_CHECK(MemAllocHost, &nx->chk_host, bytes);
  return MG_OK;
}

/* With comm's context current: copies its record in (before the all_gather, first: 1) or every
 * rank's out (after it, 0), on the check's stream. */
static mg_status_t mg__nchk_copy(const mg__xchg_t *x, int first) {
  mg_comm_t *comm = x->comm;
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg_status_t st = MG_OK;
  unsigned char *host = nx->chk_host;
  if (first) {
    MG_CHECK_GOTO(mg__nchk_prepare(comm), st, out);
    host = nx->chk_host;
    memcpy(host, x->mine, MG__CHECK_BYTES);
    MG_CU_CHECK_GOTO(st, out, MemcpyAsync, nx->chk_dev, (mg__CUdeviceptr)(uintptr_t)host,
                     MG__CHECK_BYTES, nx->chk_stream);
  } else {
    MG_CU_CHECK_GOTO(st, out, MemcpyAsync, (mg__CUdeviceptr)(uintptr_t)(host + MG__CHECK_BYTES),
                     nx->chk_dev + MG__CHECK_BYTES, (size_t)comm->nranks * MG__CHECK_BYTES,
                     nx->chk_stream);
  }
out:
  mg__device_ctx_leave(nx->ctx, saved);
  if (st < 0)
    mg__error_prefix("rank %d of %d (device %d): the collective check's copy %s", comm->rank,
                     comm->nranks, comm->device, first ? "to the device" : "from the device");
  return st;
}

/* Waits until every check stream of xs[0..n) has passed what was queued on it: MG_OK, the
 * stream's error, MG_ERR_ABORTED once a communicator is being aborted, MG_ERR_TIMED_OUT at the
 * earliest deadline. Sets the status of the exchange it fails. */
static mg_status_t mg__nchk_wait(mg__xchg_t *const *xs, int n) {
  double deadline = xs[0]->deadline;
  for (int i = 1; i < n; i++)
    if (xs[i]->deadline < deadline) deadline = xs[i]->deadline;
  const double start = mg__now();
  for (mg__nccl_backoff_t b = {0, 0};;) {
    int pending = 0;
    for (int i = 0; i < n; i++) {
      mg__xchg_t *x = xs[i];
      if (x->status == MG_OK) continue;
      mg_comm_t *comm = x->comm;
      mg__ncomm_t *nx = mg__ncomm(comm);
      mg__CUcontext saved = NULL;
      mg_status_t st = mg__device_ctx_enter(nx->ctx, &saved);
      if (st == MG_OK) {
        mg__CUresult r = mg__cuda.StreamQuery(nx->chk_stream);
        mg__device_ctx_leave(nx->ctx, saved);
        if (r == MG__CUDA_SUCCESS) {
          x->status = MG_OK;
          continue;
        }
        if (r != MG__CUDA_ERROR_NOT_READY) st = mg__cu_error(r, "cuStreamQuery");
      }
      if (st == MG_OK) st = mg__nccl_peers_stopped(comm); /* a peer that never comes */
      if (st == MG_OK && nx->nc != NULL) { /* NCCL's error: the stream never will pass */
        mg__ncclResult_t state = MG__ncclSuccess;
        mg__ncclResult_t r = mg__nccl.CommGetAsyncError(nx->nc, &state);
        if (r != MG__ncclSuccess) state = r;
        if (state != MG__ncclSuccess && state != MG__ncclInProgress)
          st = mg__nccl_error(state, "ncclCommGetAsyncError", nx->nc);
      }
      if (st == MG_OK && atomic_load(&comm->aborting))
        st = mg__error(MG_ERR_ABORTED, "the communicator was %s",
                       atomic_load(&comm->aborting) == MG__STOP_REVOKE ? "revoked" : "aborted");
      if (st < 0) {
        mg__error_prefix("rank %d of %d (device %d): the collective check's ncclAllGather",
                         comm->rank, comm->nranks, comm->device);
        x->status = st;
        return st;
      }
      pending++;
    }
    if (pending == 0) return MG_OK;
    const double now = mg__now();
    if (now > deadline) {
      for (int i = 0; i < n; i++) {
        if (xs[i]->status == MG_OK) continue;
        const mg_comm_t *c = xs[i]->comm;
        xs[i]->status = MG_ERR_TIMED_OUT;
        return mg__error(MG_ERR_TIMED_OUT, "rank %d of %d (device %d): the collective check's "
                         "ncclAllGather had not completed after %.3g s", c->rank, c->nranks,
                         c->device, now - start);
      }
    }
    mg__nccl_backoff(&b, now);
  }
}

mg_status_t mg__nccl_check_exchange(mg__xchg_t *const *xs, int n) {
  enum { INLINE = 8 };
  mg__op_t inline_ops[INLINE], *inline_p[INLINE] = {NULL};
  mg__op_t *ops = n <= INLINE ? inline_ops : calloc((unsigned)n, sizeof *ops);
  mg__op_t **p = n <= INLINE ? inline_p : malloc(sizeof *p * (unsigned)n);
  mg_status_t st = MG_OK;
  if (ops == NULL || p == NULL)
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "NCCL backend: out of memory for the collective check");
  for (int i = 0; i < n && st == MG_OK; i++) {
    mg__xchg_t *x = xs[i];
    x->status = MG_INPROGRESS;
    st = mg__nchk_copy(x, 1);
    if (st < 0) {
      x->status = st;
      break;
    }
    const mg__ncomm_t *nx = mg__ncomm(x->comm);
    ops[i] = (mg__op_t){.kind = MG_OPK_ALL_GATHER,
                        .comm = x->comm,
                        .send = (const void *)(uintptr_t)nx->chk_dev,
                        .recv = (void *)(uintptr_t)(nx->chk_dev + MG__CHECK_BYTES),
                        .count = MG__CHECK_BYTES,
                        .dtype = MG_UINT8,
                        .root = -1,
                        .stream = (mg_stream_t)nx->chk_stream,
                        .seq = x->seq,
                        .deadline = x->deadline,
                        .status = MG_INPROGRESS};
    p[i] = &ops[i];
  }
  if (st == MG_OK) {
    st = mg__nccl_launch(p, n);
    for (int i = 0; i < n; i++) xs[i]->status = ops[i].status < 0 ? ops[i].status : MG_INPROGRESS;
  }
  for (int i = 0; i < n && st == MG_OK; i++) {
    st = mg__nchk_copy(xs[i], 0);
    if (st < 0) xs[i]->status = st;
  }
  if (st == MG_OK) st = mg__nchk_wait(xs, n);
  for (int i = 0; i < n && st == MG_OK; i++)
    memcpy(xs[i]->all, (unsigned char *)mg__ncomm(xs[i]->comm)->chk_host + MG__CHECK_BYTES,
           (size_t)xs[i]->comm->nranks * MG__CHECK_BYTES);
  if (ops != inline_ops) free(ops);
  if (p != inline_p) free(p);
  return st;
}

void mg__nccl_check_release(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  /* Each fails only for what is gone already (a context torn down): nothing left to release.
   * The stream's work, if a timed-out exchange left some, ended with the NCCL communicator. */
  if (nx->chk_stream != NULL) (void)mg__cuda.StreamDestroy(nx->chk_stream);
  if (nx->chk_dev != 0) (void)mg__cuda.MemFree(nx->chk_dev);
  if (nx->chk_host != NULL) (void)mg__cuda.MemFreeHost(nx->chk_host);
  nx->chk_stream = NULL;
  nx->chk_dev = 0;
  nx->chk_host = NULL;
}
