/*
 * memcheck.c -- checks of buffers and streams before anything is enqueued on a GPU (the rules
 * are mgcomm.h's "Operations"): one cuPointerGetAttributes call per buffer gives its memory
 * space, its device and the allocation that holds it; one cuStreamGetCtx call per stream gives
 * its context. The decision itself (mg__device_check_buffer) is a pure function.
 */
#include <stdint.h>

#include "base/error.h"
#include "device/device.h"
#include "loader/loader.h"

mg_status_t mg__device_ptr_attr(const void *p, mg__ptr_attr_t *attr) {
  /* Each attribute is written with its documented type; the zeroed storage makes a narrower
   * write (a bool) read correctly too. Memory the driver does not know gives zeroes, not an
   * error. */
  unsigned int type = 0, managed = 0;
  int ordinal = -1;
  mg__CUdeviceptr start = 0;
  size_t size = 0;
  mg__CUpointer_attribute names[5] = {
      MG__CU_POINTER_ATTRIBUTE_MEMORY_TYPE, MG__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      MG__CU_POINTER_ATTRIBUTE_IS_MANAGED, MG__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
      MG__CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *data[5] = {&type, &ordinal, &managed, &start, &size};
  MG_CU_CHECK(PointerGetAttributes, 5, names, data, (mg__CUdeviceptr)(uintptr_t)p);
  attr->memory_type = type;
  attr->ordinal = ordinal;
  attr->managed = managed != 0;
  attr->base = (uintptr_t)start;
  attr->size = size;
  return MG_OK;
}

mg_status_t mg__device_check_buffer(const mg__ptr_attr_t *a, const void *p, size_t bytes,
                                    int device, const char *fn, const char *arg) {
  if (!a->managed && a->memory_type != MG__CU_MEMORYTYPE_UNIFIED) {
    switch (a->memory_type) {
      case MG__CU_MEMORYTYPE_DEVICE:
        if (a->ordinal != device)
          return mg__error(MG_ERR_INVALID_ARGUMENT,
                           "%s: %s %p is memory of device %d; the communicator's device is %d",
                           fn, arg, p, a->ordinal, device);
        break;
      case 0:
        return mg__error(MG_ERR_INVALID_ARGUMENT,
                         "%s: %s %p is host memory (not allocated by CUDA); it must be "
                         "memory of device %d (cudaMalloc, cuMemAlloc, mg_mem_alloc)",
                         fn, arg, p, device);
      case MG__CU_MEMORYTYPE_HOST:
        return mg__error(MG_ERR_INVALID_ARGUMENT,
                         "%s: %s %p is page-locked host memory (cudaHostAlloc, cuMemAllocHost or "
                         "registered host memory); it must be memory of device %d",
                         fn, arg, p, device);
      default:
        return mg__error(MG_ERR_INVALID_ARGUMENT,
                         "%s: %s %p is CUDA memory of type %u, not device memory of device %d",
                         fn, arg, p, a->memory_type, device);
    }
  }
  if (a->size == 0) return MG_OK; /* the driver gave no extent: nothing more to check */
  const uintptr_t at = (uintptr_t)p;
  if (at < a->base || at - a->base >= a->size)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %s %p lies outside the allocation the driver reports for it [%p, +%zu)",
                     fn, arg, p, (void *)a->base, a->size);
  const size_t room = a->size - (at - a->base);
  if (bytes > room)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %s [%p, +%zu) extends %zu bytes past the end of its allocation "
                     "[%p, +%zu)",
                     fn, arg, p, bytes, bytes - room, (void *)a->base, a->size);
  return MG_OK;
}

mg_status_t mg__device_check_ptr(const void *p, size_t bytes, int device, const char *fn,
                                 const char *arg) {
  if (bytes == 0) return MG_OK;
  mg__ptr_attr_t a = {0, 0, 0, 0, 0};
  mg_status_t st = mg__device_ptr_attr(p, &a);
  if (st < 0) {
    mg__error_prefix("%s: %s %p: cannot ask the driver about it", fn, arg, p);
    return st;
  }
  return mg__device_check_buffer(&a, p, bytes, device, fn, arg);
}

mg_status_t mg__device_check_stream(mg__CUstream stream, mg__CUcontext ctx, int device,
                                    const char *fn) {
  if (stream == NULL || stream == MG__CU_STREAM_LEGACY || stream == MG__CU_STREAM_PER_THREAD)
    return MG_OK;
  mg__CUcontext owner = NULL;
  mg__CUresult r = mg__cuda.StreamGetCtx(stream, &owner);
  if (r != MG__CUDA_SUCCESS) {
    mg__cu_error(r, "cuStreamGetCtx");
    mg__error_prefix("%s: stream %p is not a usable CUDA stream", fn, (void *)stream);
    return MG_ERR_INVALID_ARGUMENT;
  }
  if (owner != ctx)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: stream %p belongs to another CUDA context than the primary context of "
                     "device %d, the communicator's device (a stream of another device, or of a "
                     "context made with cuCtxCreate)",
                     fn, (void *)stream, device);
  return MG_OK;
}
