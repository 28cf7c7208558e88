/*
 * context.c -- primary contexts: retained per user (a communicator, an allocation), made current
 * for the duration of a call and the caller's context put back afterwards.
 */
#include "base/error.h"
#include "device/device.h"
#include "loader/loader.h"

mg_status_t mg__device_ctx_retain(int ordinal, const char *fn, mg__CUdevice *dev,
                                  mg__CUcontext *ctx) {
  mg__CUdevice d;
  MG_CHECK(mg__device_get(ordinal, fn, &d));
  mg__CUcontext c = NULL;
  MG_CU_CHECK(DevicePrimaryCtxRetain, &c, d);
  *dev = d;
  *ctx = c;
  return MG_OK;
}

void mg__device_ctx_release(mg__CUdevice dev) {
  /* Fails only for a device that is not one, or a driver already shut down at process exit:
   * there is nothing left to release either way. */
  (void)mg__cuda.DevicePrimaryCtxRelease(dev);
}

mg_status_t mg__device_ctx_enter(mg__CUcontext ctx, mg__CUcontext *saved) {
  mg__CUcontext cur = NULL;
  MG_CU_CHECK(CtxGetCurrent, &cur);
  if (cur != ctx) MG_CU_CHECK(CtxSetCurrent, ctx);
  *saved = cur;
  return MG_OK;
}

void mg__device_ctx_leave(mg__CUcontext ctx, mg__CUcontext saved) {
  /* Setting back the caller's context fails only when the caller destroyed it meanwhile (from
   * another thread); then no context is current, which is the best that can be done. */
  if (saved != ctx) (void)mg__cuda.CtxSetCurrent(saved);
}
