/*
 * device.h -- the CUDA driver layer (src/device/): what the other layers of mgcomm ask of the
 * GPU side. Only what is used today is here; contexts, streams, events and pointer checks are
 * added with the NCCL backend.
 */
#ifndef MG_DEVICE_DEVICE_H
#define MG_DEVICE_DEVICE_H

#include "loader/cuda_api.h"
#include "mgcomm.h"

/* Loads the CUDA driver and calls cuInit(0), once per process. MG_OK also when the driver has
 * no device (then mg_device_count gives 0). Otherwise MG_ERR_BACKEND_UNAVAILABLE (no driver,
 * with the loader's list of candidates) or the mapped cuInit error, with its message. */
mg_status_t mg__device_init(void);

/* The CUdevice of ordinal, after mg__device_init; MG_ERR_INVALID_ARGUMENT naming fn for an
 * ordinal out of range. */
mg_status_t mg__device_get(int ordinal, const char *fn, mg__CUdevice *dev);

#endif
