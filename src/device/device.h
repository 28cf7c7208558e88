/*
 * device.h -- the CUDA driver layer (src/device/): what the other layers of mgcomm ask of the
 * GPU side: driver initialisation and devices (device.c), primary contexts, pointer and stream
 * checks (context.c, memcheck.c).
 *
 * Contexts: mgcomm uses each device through its primary context, the one the CUDA runtime uses,
 * so programs that use the runtime (cudaMalloc, cudaStream_t) interoperate with mgcomm, and NCCL
 * (which uses the runtime) sees the device mgcomm made current. A call that makes a context
 * current restores the caller's afterwards (mg__device_ctx_enter / _leave).
 */
#ifndef MG_DEVICE_DEVICE_H
#define MG_DEVICE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "loader/cuda_api.h"
#include "mgcomm.h"

/* Loads the CUDA driver and calls cuInit(0), once per process. MG_OK also when the driver has
 * no device (then mg_device_count gives 0). Otherwise MG_ERR_BACKEND_UNAVAILABLE (no driver,
 * with the loader's list of candidates) or the mapped cuInit error, with its message. */
mg_status_t mg__device_init(void);

/* The CUdevice of ordinal, after mg__device_init; MG_ERR_INVALID_ARGUMENT naming fn for an
 * ordinal out of range. */
mg_status_t mg__device_get(int ordinal, const char *fn, mg__CUdevice *dev);

/* ---- Primary contexts (context.c) */

/* Retains the primary context of device ordinal (creating it on first use) and returns it with
 * the device handle. Errors as mg__device_get, or the mapped cuDevicePrimaryCtxRetain error.
 * Each successful retain is paired with one mg__device_ctx_release(dev). */
mg_status_t mg__device_ctx_retain(int ordinal, const char *fn, mg__CUdevice *dev,
                                  mg__CUcontext *ctx);
void mg__device_ctx_release(mg__CUdevice dev);
/* Makes ctx current on the calling thread and stores the caller's current context in *saved;
 * mg__device_ctx_leave(ctx, *saved) puts it back. Cheap when ctx is already current. */
mg_status_t mg__device_ctx_enter(mg__CUcontext ctx, mg__CUcontext *saved);
void mg__device_ctx_leave(mg__CUcontext ctx, mg__CUcontext saved);

/* ---- Pointer and stream checks (memcheck.c; the rules are mgcomm.h's "Operations") */

/* What the driver knows about one address (cuPointerGetAttributes). */
typedef struct mg__ptr_attr {
  unsigned memory_type; /* CUmemorytype; 0: memory the driver does not know (plain host memory) */
  int ordinal;          /* device memory: the device it lives on */
  int managed;          /* 1: managed memory, usable from every device */
  uintptr_t base;       /* the allocation that holds the address: its start ... */
  size_t size;          /* ... and its size in bytes (0 when unknown) */
} mg__ptr_attr_t;

/* Asks the driver about p (one cuPointerGetAttributes call). MG_OK, or the mapped CUDA error. */
mg_status_t mg__device_ptr_attr(const void *p, mg__ptr_attr_t *attr);
/* Decides whether [p, p + bytes) may be used as a buffer of a communicator on device `device`,
 * given what the driver said about p: device memory of that device (or managed memory), and the
 * whole range inside one allocation. Otherwise MG_ERR_INVALID_ARGUMENT with a message that names
 * fn and the argument (arg: "send", "recv", ...) and says what is wrong. Pure: no driver call,
 * so that its every branch is tested without a GPU. */
mg_status_t mg__device_check_buffer(const mg__ptr_attr_t *attr, const void *p, size_t bytes,
                                    int device, const char *fn, const char *arg);
/* mg__device_ptr_attr + mg__device_check_buffer; bytes == 0 is always MG_OK. */
mg_status_t mg__device_check_ptr(const void *p, size_t bytes, int device, const char *fn,
                                 const char *arg);
/* MG_OK when stream may carry work of ctx (the primary context of device `device`): one of the
 * special handles (NULL, the legacy and the per-thread default streams), or a stream created in
 * ctx. Otherwise MG_ERR_INVALID_ARGUMENT naming fn. One cuStreamGetCtx call. */
mg_status_t mg__device_check_stream(mg__CUstream stream, mg__CUcontext ctx, int device,
                                    const char *fn);

#endif
