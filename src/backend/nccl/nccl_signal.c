/*
 * nccl_signal.c -- one-sided transfers and window pointers (NCCL >= 2.29.2): ncclPutSignal,
 * ncclSignal, ncclWaitSignal on the operations communicator (where mem_register made the
 * windows), and ncclGetPeerDevicePointer, ncclGetLsaDevicePointer, ncclWinGetUserPtr.
 *
 * The transfers are enqueued as operations are: a blocking communicator's call is bounded by the
 * watchdog (mg__comm_call_enter), a nonblocking one's answer ncclInProgress is waited for.
 */
#include <stdlib.h>

#include "backend/nccl/nccl.h"

mg_status_t mg__nccl_signal_op(mg_comm_t *comm, const mg__signal_op_t *op, double deadline) {
  static const char *const names[] = {"mg_put_signal", "mg_signal", "mg_wait_signal"};
  static const char *const calls[] = {"ncclPutSignal", "ncclSignal", "ncclWaitSignal"};
  const char *fn = names[op->kind], *call = calls[op->kind];
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_SIGNALS, fn));
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__ncclWaitSignalDesc_t *descs = NULL;
  if (op->kind == MG__SIG_WAIT) {
    descs = malloc(sizeof *descs * (size_t)op->n);
    if (descs == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (int i = 0; i < op->n; i++)
      descs[i] = (mg__ncclWaitSignalDesc_t){.opCnt = op->waits[i].count,
                                            .peer = op->waits[i].peer,
                                            .sigIdx = op->waits[i].signal,
                                            .ctx = 0};
  }
  mg__CUcontext saved = NULL;
  mg_status_t st = mg__device_ctx_enter(nx->ctx, &saved);
  if (st == MG_OK) {
    mg__CUstream s = (mg__CUstream)op->stream;
    if (nx->blocking) mg__comm_call_enter(comm, deadline);
    mg__ncclResult_t r =
        op->kind == MG__SIG_PUT
            ? mg__nccl.PutSignal(op->send, op->count, (mg__ncclDataType_t)op->dtype, op->peer,
                                 (mg__ncclWindow_t)op->win, op->offset, op->signal, 0, 0,
                                 nx->nc, s)
        : op->kind == MG__SIG_SIGNAL ? mg__nccl.Signal(op->peer, op->signal, 0, 0, nx->nc, s)
                                     : mg__nccl.WaitSignal(op->n, descs, nx->nc, s);
    if (nx->blocking) mg__comm_call_leave(comm);
    if (nx->blocking && r != MG__ncclSuccess)
      st = mg__nccl_call_error(comm, r, call);
    else if (r != MG__ncclSuccess && r != MG__ncclInProgress)
      st = mg__nccl_error(r, call, nx->nc);
    else if (!nx->blocking)
      st = mg__nccl_wait(&comm, 1, deadline, call);
    mg__device_ctx_leave(nx->ctx, saved);
  }
  free(descs);
  if (st < 0) mg__error_prefix("%s", fn);
  return st;
}

mg_status_t mg__nccl_reg_ptr(mg_comm_t *comm, void *win, int which, int rank, size_t offset,
                             void **out) {
  static const char *const names[] = {"mg_reg_peer_ptr", "mg_reg_lsa_ptr", "mg_reg_user_ptr"};
  static const char *const calls[] = {"ncclGetPeerDevicePointer", "ncclGetLsaDevicePointer",
                                      "ncclWinGetUserPtr"};
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_WINDOW_PTRS, names[which]));
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__ncclWindow_t w = (mg__ncclWindow_t)win;
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg__ncclResult_t r;
  if (which == MG__REGPTR_PEER)
    r = mg__nccl.GetPeerDevicePointer(w, offset, rank, out);
  else if (which == MG__REGPTR_LSA)
    r = mg__nccl.GetLsaDevicePointer(w, offset, rank, out);
  else
    r = mg__nccl.WinGetUserPtr(nx->nc, w, out);
  mg__device_ctx_leave(nx->ctx, saved);
  if (r != MG__ncclSuccess) {
    mg_status_t st = mg__nccl_error(r, calls[which], nx->nc);
    mg__error_prefix("%s", names[which]);
    return st;
  }
  return MG_OK;
}
