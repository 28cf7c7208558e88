/*
 * space.c -- the PE's GPU: which device NVSHMEM starts on, its primary context around every
 * NVSHMEM call, the checks of local buffers and streams (those of communicators, memcheck.c),
 * and the small copies agree.c makes to and from symmetric memory.
 *
 * Test builds have one more mode: a fake NVSHMEM (tests/fake/nvshmem_fake.c) whose PEs are
 * processes sharing host memory, chosen by MG_TEST_SHMEM_HOST_PES=1, so that every check
 * of this layer runs on machines without a CUDA driver. Then no device is selected, a local
 * buffer is checked for NULL only, and copies are memcpy. Release builds have no such mode.
 */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "device/device.h"
#include "shmem/shmem.h"

int mg__shmem_host_pes_wanted(void) {
#ifdef MGCOMM_TESTING
  const char *v = getenv("MG_TEST_SHMEM_HOST_PES");
  return v != NULL && strcmp(v, "1") == 0;
#else
  return 0;
#endif
}

mg_status_t mg__shmem_space_open(int device, const char *fn) {
  mg__shmem.host_pes = mg__shmem_host_pes_wanted();
  if (mg__shmem.host_pes) {
    mg__shmem.device = -1;
    return MG_OK;
  }
  if (device < 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: no device for this PE: pass one, or start the process under a "
                     "launcher that gives its local rank (mgcomm launch, torchrun, mpirun, srun)",
                     fn);
  MG_CHECK(mg__device_init());
  mg__CUdevice dev;
  mg__CUcontext ctx, saved;
  MG_CHECK(mg__device_ctx_retain(device, fn, &dev, &ctx));
  /* The context stays current on this thread after init: NVSHMEM binds to the device that is
   * current when it starts, and the caller chose that device for this PE. */
  mg_status_t st = mg__device_ctx_enter(ctx, &saved);
  if (st != MG_OK) {
    mg__device_ctx_release(dev);
    return st;
  }
  mg__shmem.device = device;
  mg__shmem.dev = dev;
  mg__shmem.ctx = ctx;
  return MG_OK;
}

void mg__shmem_space_close(void) {
  if (mg__shmem.host_pes || mg__shmem.device < 0) return;
  mg__device_ctx_release(mg__shmem.dev);
  mg__shmem.device = -1;
}

mg_status_t mg__shmem_ctx_enter(mg__CUcontext *saved) {
  if (mg__shmem.host_pes) return MG_OK;
  return mg__device_ctx_enter(mg__shmem.ctx, saved);
}

void mg__shmem_ctx_leave(mg__CUcontext saved) {
  if (mg__shmem.host_pes) return;
  mg__device_ctx_leave(mg__shmem.ctx, saved);
}

mg_status_t mg__shmem_check_local(const void *p, size_t bytes, const char *fn, const char *arg) {
  if (bytes == 0) return MG_OK;
  if (p == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, arg);
  if (mg__shmem.host_pes) return MG_OK;
  return mg__device_check_ptr(p, bytes, mg__shmem.device, fn, arg);
}

mg_status_t mg__shmem_check_stream(void *stream, const char *fn) {
  if (mg__shmem.host_pes) return MG_OK;
  return mg__device_check_stream((mg__CUstream)stream, mg__shmem.ctx, mg__shmem.device, fn);
}

mg_status_t mg__shmem_to_device(void *dst, const void *src, size_t bytes) {
  if (mg__shmem.host_pes) {
    memcpy(dst, src, bytes);
    return MG_OK;
  }
  MG_CU_CHECK(MemcpyHtoD, (mg__CUdeviceptr)(uintptr_t)dst, src, bytes);
  return MG_OK;
}

mg_status_t mg__shmem_from_device(void *dst, const void *src, size_t bytes) {
  if (mg__shmem.host_pes) {
    memcpy(dst, src, bytes);
    return MG_OK;
  }
  MG_CU_CHECK(MemcpyDtoH, dst, (mg__CUdeviceptr)(uintptr_t)src, bytes);
  return MG_OK;
}
