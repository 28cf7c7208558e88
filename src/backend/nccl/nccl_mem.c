/*
 * nccl_mem.c -- memory on the NCCL backend (mgcomm.h, "Memory"): ncclMemAlloc / ncclMemFree,
 * bounded copies on a stream of the communicator's own, and registration with ncclCommRegister
 * (local) or ncclCommWindowRegister (symmetric, collective).
 *
 * An allocation retains the primary context of its device until it is freed: its memory lives
 * in that context, which must not go away with the last communicator on the device.
 */
#include "backend/nccl/nccl.h"
#include "base/clock.h"

mg_status_t mg__nccl_mem_alloc(mg_comm_t *comm, size_t bytes, void **ptr) {
  static const char fn[] = "mg_mem_alloc";
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_REGISTER, fn));
  mg__CUdevice dev;
  mg__CUcontext ctx, saved = NULL;
  MG_CHECK(mg__device_ctx_retain(comm->device, fn, &dev, &ctx));
  mg_status_t st = mg__device_ctx_enter(ctx, &saved);
  if (st == MG_OK) {
    void *p = NULL;
    mg__ncclResult_t r = mg__nccl.MemAlloc(&p, bytes); /* on the current device */
    if (r != MG__ncclSuccess)
      st = mg__nccl_error(r, "ncclMemAlloc", NULL);
    else
      *ptr = p;
    mg__device_ctx_leave(ctx, saved);
  }
  if (st < 0) mg__device_ctx_release(dev);
  return st;
}

mg_status_t mg__nccl_mem_free(void *ptr, int device) {
  static const char fn[] = "mg_mem_free";
  /* An aborted communicator's kernel may still run until its abort ends: freeing the memory
   * under it was an illegal access on 2 H200s (a test that aborted both ranks of a hung
   * all_reduce and then freed their buffers; tests/fault/collcheck.c, gpu_collcheck_off). */
  MG_CHECK(mg__nccl_aborts_wait(fn, ptr));
  mg__CUdevice dev;
  mg__CUcontext ctx, saved = NULL;
  /* A second reference for the duration of the call; the allocation's goes at the end. */
  MG_CHECK(mg__device_ctx_retain(device, fn, &dev, &ctx));
  mg_status_t st = mg__device_ctx_enter(ctx, &saved);
  if (st == MG_OK) {
    /* With the allocation's device current, NCCL's switch to it changes nothing. */
    mg__ncclResult_t r = mg__nccl.MemFree(ptr);
    if (r != MG__ncclSuccess) st = mg__nccl_error(r, "ncclMemFree", NULL);
    mg__device_ctx_leave(ctx, saved);
  }
  mg__device_ctx_release(dev);
  if (st == MG_OK) mg__device_ctx_release(dev);
  return st;
}

/* [p, p + bytes) of a copy: when it is CUDA device or managed memory, the whole range must lie
 * in its allocation (host memory has no extent the driver knows). */
static mg_status_t mg__nccl_copy_side(const void *p, size_t bytes, const char *fn,
                                      const char *arg) {
  mg__ptr_attr_t a = {0, 0, 0, 0, 0};
  mg_status_t st = mg__device_ptr_attr(p, &a);
  if (st < 0) {
    mg__error_prefix("%s: %s %p: cannot ask the driver about it", fn, arg, p);
    return st;
  }
  if (a.memory_type != MG__CU_MEMORYTYPE_DEVICE && a.memory_type != MG__CU_MEMORYTYPE_UNIFIED &&
      !a.managed)
    return MG_OK;
  return mg__device_check_buffer(&a, p, bytes, a.ordinal, fn, arg);
}

mg_status_t mg__nccl_mem_copy(mg_comm_t *comm, void *dst, const void *src, size_t bytes,
                              double deadline) {
  static const char fn[] = "mg_memcpy";
  mg__ncomm_t *nx = mg__ncomm(comm);
  MG_CHECK(mg__nccl_copy_side(dst, bytes, fn, "dst"));
  MG_CHECK(mg__nccl_copy_side(src, bytes, fn, "src"));
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg_status_t st = MG_OK;
  if (nx->copy_stream == NULL)
    /* Non-blocking: it does not wait for the legacy default stream (nor it for this one). */
    MG_CU_CHECK_GOTO(st, out, StreamCreate, &nx->copy_stream, MG__CU_STREAM_NON_BLOCKING);
  MG_CU_CHECK_GOTO(st, out, MemcpyAsync, (mg__CUdeviceptr)(uintptr_t)dst,
                   (mg__CUdeviceptr)(uintptr_t)src, bytes, nx->copy_stream);
  for (mg__nccl_backoff_t b = {0, 0};;) {
    mg__CUresult r = mg__cuda.StreamQuery(nx->copy_stream);
    if (r == MG__CUDA_SUCCESS) break;
    if (r != MG__CUDA_ERROR_NOT_READY) {
      st = mg__cu_error(r, "cuStreamQuery");
      break;
    }
    if (atomic_load(&comm->aborting)) {
      st = mg__error(MG_ERR_ABORTED, "the communicator was aborted");
      break;
    }
    const double now = mg__now();
    if (now > deadline) {
      st = mg__error(MG_ERR_TIMED_OUT, "the copy had not finished after %g s", comm->timeout_s);
      break;
    }
    mg__nccl_backoff(&b, now);
  }
out:
  mg__device_ctx_leave(nx->ctx, saved);
  if (st < 0)
    mg__error_prefix("%s: %zu bytes from %p to %p on rank %d (device %d)", fn, bytes, src, dst,
                     comm->rank, comm->device);
  return st;
}

mg_status_t mg__nccl_mem_register(mg_comm_t *comm, void *buf, size_t bytes, int flags,
                                  double deadline, void **handle) {
  static const char fn[] = "mg_comm_register";
  mg__ncomm_t *nx = mg__ncomm(comm);
  const int sym = flags == MG_REGISTER_SYMMETRIC;
  MG_CHECK(mg__feature_require(sym ? MG_FEATURE_NCCL_WINDOW : MG_FEATURE_NCCL_REGISTER, fn));
  /* Registration is rare: the buffer is always checked, whatever MGCOMM_CHECK_POINTERS says. */
  MG_CHECK(mg__device_check_ptr(buf, bytes, comm->device, fn, "buf"));
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg_status_t st = MG_OK;
  const char *call = sym ? "ncclCommWindowRegister" : "ncclCommRegister";
  void *local = NULL;
  nx->pending_win = NULL;
  /* A window is written by NCCL's thread when the collective registration completes: into the
   * comm's state, which outlives a timeout. */
  /* On a blocking communicator the call does it all (a window: with every peer), bounded by the
   * watchdog; on a nonblocking one NCCL's thread does, and this one polls. */
  if (nx->blocking) mg__comm_call_enter(comm, deadline);
  mg__ncclResult_t r =
      sym ? mg__nccl.CommWindowRegister(nx->nc, buf, bytes, &nx->pending_win,
                                        MG__NCCL_WIN_COLL_SYMMETRIC)
          : mg__nccl.CommRegister(nx->nc, buf, bytes, &local);
  if (nx->blocking) mg__comm_call_leave(comm);
  if (r != MG__ncclSuccess && r != MG__ncclInProgress)
    st = nx->blocking ? mg__nccl_call_error(comm, r, call) : mg__nccl_error(r, call, nx->nc);
  else if (!nx->blocking)
    st = mg__nccl_wait(&comm, 1, deadline, call);
  if (st == MG_OK && sym) {
    if (nx->pending_win == NULL)
      st = mg__error(MG_ERR_NOT_SUPPORTED,
                     "%s registered no window: NCCL has no symmetric memory for this buffer here "
                     "(it needs memory from mg_mem_alloc and GPUs that reach each other over "
                     "NVLink)", call);
    local = nx->pending_win;
    nx->pending_win = NULL;
  }
  mg__device_ctx_leave(nx->ctx, saved);
  if (st == MG_OK && sym) {
    st = mg__nccl_kern_register(comm, local, buf, bytes, deadline);
    if (st < 0) (void)mg__nccl_mem_deregister(comm, local, flags); /* the error is the first */
  }
  if (st < 0) {
    mg__error_prefix("%s: [%p, +%zu) on rank %d of %d (device %d)", fn, buf, bytes, comm->rank,
                     comm->nranks, comm->device);
    return st;
  }
  *handle = local;
  return MG_OK;
}

mg_status_t mg__nccl_mem_deregister(mg_comm_t *comm, void *handle, int flags) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  if (nx->nc == NULL) return MG_OK; /* aborted: NCCL released every registration with it */
  if (flags == MG_REGISTER_SYMMETRIC) mg__nccl_kern_deregister(comm, handle);
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg__ncclResult_t r = flags == MG_REGISTER_SYMMETRIC
                           ? mg__nccl.CommWindowDeregister(nx->nc, (mg__ncclWindow_t)handle)
                           : mg__nccl.CommDeregister(nx->nc, handle);
  mg__device_ctx_leave(nx->ctx, saved);
  if (r != MG__ncclSuccess) {
    mg_status_t st = mg__nccl_error(r, flags == MG_REGISTER_SYMMETRIC ? "ncclCommWindowDeregister"
                                                                      : "ncclCommDeregister",
                                    nx->nc);
    mg__error_prefix("mg_comm_deregister: rank %d", comm->rank);
    return st;
  }
  return MG_OK;
}
