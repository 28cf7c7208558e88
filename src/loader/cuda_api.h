/*
 * cuda_api.h -- the part of the CUDA driver API (libcuda.so.1, cuda.h) that mgcomm calls,
 * declared here so that building needs no CUDA header. Never the runtime (libcudart).
 *
 * Names: CUDA's, with the prefix mg__ (mg__CUresult), so that a test can include the real
 * cuda.h next to this file and compare every value (tests/unit/loader_header_compat.c).
 * Values and layouts are fixed by NVIDIA's ABI; the driver keeps them across versions.
 *
 * Symbols: the exported names that cuda.h (CUDA 13.0) maps the API names to. We call the
 * legacy-default-stream variants (no _ptsz / _ptds): every stream we pass is explicit.
 */
#ifndef MG_LOADER_CUDA_API_H
#define MG_LOADER_CUDA_API_H

#include <stddef.h>

typedef int mg__CUresult;                 /* CUresult (an enum in cuda.h); unknown codes occur */
typedef int mg__CUdevice;                 /* CUdevice: an ordinal */
typedef unsigned long long mg__CUdeviceptr; /* CUdeviceptr_v2 */
typedef struct mg__CUctx_st *mg__CUcontext;
typedef struct mg__CUstream_st *mg__CUstream;
typedef struct mg__CUevent_st *mg__CUevent;
typedef void (*mg__CUhostFn)(void *user_data);
typedef int mg__CUdevice_attribute;
typedef int mg__CUpointer_attribute;
/* Our own kernels (src/kernels/): modules, IPC handles, graphs. */
typedef struct mg__CUmod_st *mg__CUmodule;
typedef struct mg__CUfunc_st *mg__CUfunction;
typedef struct mg__CUgraph_st *mg__CUgraph;
typedef struct mg__CUgraphExec_st *mg__CUgraphExec;
typedef struct mg__CUipcMemHandle {
  char reserved[64];
} mg__CUipcMemHandle; /* CU_IPC_HANDLE_SIZE bytes, passed by value */
enum {
  MG__CU_MEMHOSTALLOC_PORTABLE = 1,
  MG__CU_MEMHOSTALLOC_DEVICEMAP = 2,
  MG__CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1,
  MG__CU_STREAM_CAPTURE_MODE_RELAXED = 2
};

/* Virtual memory (cuMem*): how the kernels map a peer process's cuMem allocation (ncclMemAlloc's
 * memory), exported as a POSIX file descriptor. */
typedef unsigned long long mg__CUmemGenericAllocationHandle;
typedef struct mg__CUmemLocation {
  int type; /* MG__CU_MEM_LOCATION_TYPE_DEVICE */
  int id;   /* the device ordinal */
} mg__CUmemLocation;
typedef struct mg__CUmemAccessDesc {
  mg__CUmemLocation location;
  int flags; /* MG__CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
} mg__CUmemAccessDesc;
enum {
  MG__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
  MG__CU_MEM_LOCATION_TYPE_DEVICE = 1,
  MG__CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
};

/* CUresult values we name in messages or branch on. */
enum {
  MG__CUDA_SUCCESS = 0,
  MG__CUDA_ERROR_INVALID_VALUE = 1,
  MG__CUDA_ERROR_OUT_OF_MEMORY = 2,
  MG__CUDA_ERROR_NOT_INITIALIZED = 3,
  MG__CUDA_ERROR_DEINITIALIZED = 4,
  MG__CUDA_ERROR_STUB_LIBRARY = 34,        /* the toolkit's link-time stub, not a driver */
  MG__CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  MG__CUDA_ERROR_NO_DEVICE = 100,
  MG__CUDA_ERROR_INVALID_DEVICE = 101,
  MG__CUDA_ERROR_INVALID_CONTEXT = 201,
  MG__CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  MG__CUDA_ERROR_INVALID_HANDLE = 400,
  MG__CUDA_ERROR_NOT_READY = 600,
  MG__CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  MG__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  MG__CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
  MG__CUDA_ERROR_TOO_MANY_PEERS = 711,
  MG__CUDA_ERROR_LAUNCH_FAILED = 719,
  MG__CUDA_ERROR_NOT_SUPPORTED = 801,
  MG__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  MG__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
  MG__CUDA_ERROR_UNKNOWN = 999
};

/* CUdevice_attribute values. MULTICAST_SUPPORTED is read only: mgcomm never creates a multicast
 * object (cuMulticastCreate can take shared GPU machines down). */
enum {
  MG__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  MG__CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  MG__CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
  MG__CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  MG__CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
  MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  MG__CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  MG__CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 132
};

/* CUdevice_P2PAttribute values (cuDeviceGetP2PAttribute; 4 is also the deprecated
 * ACCESS_ACCESS_SUPPORTED). */
typedef int mg__CUdevice_P2PAttribute;
enum {
  MG__CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 1,
  MG__CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED = 2,
  MG__CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 3,
  MG__CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED = 4
};

/* CUpointer_attribute values (for cuPointerGetAttributes). */
enum {
  MG__CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  MG__CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  MG__CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  MG__CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
  MG__CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  MG__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  MG__CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10, /* cuMemAlloc'd, not cuMem (VMM) */
  MG__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  MG__CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
  MG__CU_POINTER_ATTRIBUTE_MAPPED = 13
};

/* CUmemorytype values (the result of CU_POINTER_ATTRIBUTE_MEMORY_TYPE; 0 = not CUDA memory). */
enum {
  MG__CU_MEMORYTYPE_HOST = 1,
  MG__CU_MEMORYTYPE_DEVICE = 2,
  MG__CU_MEMORYTYPE_ARRAY = 3,
  MG__CU_MEMORYTYPE_UNIFIED = 4
};

/* Flags. */
enum {
  MG__CU_STREAM_DEFAULT = 0,
  MG__CU_STREAM_NON_BLOCKING = 1,
  MG__CU_EVENT_DEFAULT = 0,
  MG__CU_EVENT_DISABLE_TIMING = 2,
  MG__CU_MEM_ATTACH_GLOBAL = 1
};

/* The special stream handles of cuda.h: the legacy default stream and the per-thread default
 * stream. They name a stream of whatever context is current, so they have no context of their
 * own to check. */
#define MG__CU_STREAM_LEGACY ((mg__CUstream)0x1)
#define MG__CU_STREAM_PER_THREAD ((mg__CUstream)0x2)

/* X(req, form, member, sym, alt, ret, params, args): see table.h. */
#define MG__CUDA_SYMBOLS(X)                                                                      \
  X(REQ, RC, CtxGetCurrent, "cuCtxGetCurrent", NULL, mg__CUresult, (mg__CUcontext *ctx), (ctx))  \
  X(REQ, RC, CtxSetCurrent, "cuCtxSetCurrent", NULL, mg__CUresult, (mg__CUcontext ctx), (ctx))   \
  X(REQ, RC, PointerGetAttributes, "cuPointerGetAttributes", NULL, mg__CUresult,                 \
    (unsigned int n, mg__CUpointer_attribute *attributes, void **data, mg__CUdeviceptr ptr),     \
    (n, attributes, data, ptr))                                                                  \
  X(REQ, RC, StreamGetCtx, "cuStreamGetCtx", NULL, mg__CUresult,                                 \
    (mg__CUstream stream, mg__CUcontext *ctx), (stream, ctx))                                    \
  X(REQ, RC, Init, "cuInit", NULL, mg__CUresult, (unsigned int flags), (flags))                  \
  X(REQ, RC, DriverGetVersion, "cuDriverGetVersion", NULL, mg__CUresult, (int *version),         \
    (version))                                                                                   \
  X(REQ, NONE, GetErrorName, "cuGetErrorName", NULL, mg__CUresult,                               \
    (mg__CUresult error, const char **name), (error, name))                                      \
  X(REQ, NONE, GetErrorString, "cuGetErrorString", NULL, mg__CUresult,                           \
    (mg__CUresult error, const char **str), (error, str))                                        \
  X(REQ, RC, DeviceGetCount, "cuDeviceGetCount", NULL, mg__CUresult, (int *count), (count))      \
  X(REQ, RC, DeviceGet, "cuDeviceGet", NULL, mg__CUresult, (mg__CUdevice *dev, int ordinal),     \
    (dev, ordinal))                                                                              \
  X(REQ, RC, DeviceGetName, "cuDeviceGetName", NULL, mg__CUresult,                               \
    (char *name, int len, mg__CUdevice dev), (name, len, dev))                                   \
  X(REQ, RC, DeviceTotalMem, "cuDeviceTotalMem_v2", NULL, mg__CUresult,                          \
    (size_t *bytes, mg__CUdevice dev), (bytes, dev))                                             \
  X(OPT, RC, MemGetInfo, "cuMemGetInfo_v2", NULL, mg__CUresult, /* the GPU tests' only */        \
    (size_t *free_bytes, size_t *total_bytes), (free_bytes, total_bytes))                        \
  X(REQ, RC, DeviceGetAttribute, "cuDeviceGetAttribute", NULL, mg__CUresult,                     \
    (int *value, mg__CUdevice_attribute attrib, mg__CUdevice dev), (value, attrib, dev))         \
  X(REQ, RC, DeviceGetPCIBusId, "cuDeviceGetPCIBusId", NULL, mg__CUresult,                       \
    (char *bus_id, int len, mg__CUdevice dev), (bus_id, len, dev))                               \
  X(REQ, RC, DeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL, mg__CUresult,                   \
    (int *can_access, mg__CUdevice dev, mg__CUdevice peer), (can_access, dev, peer))             \
  X(REQ, RC, DeviceGetP2PAttribute, "cuDeviceGetP2PAttribute", NULL, mg__CUresult,             \
    (int *value, mg__CUdevice_P2PAttribute attrib, mg__CUdevice src, mg__CUdevice dst),          \
    (value, attrib, src, dst))                                                                   \
  X(REQ, RC, CtxDisablePeerAccess, "cuCtxDisablePeerAccess", NULL, mg__CUresult,                 \
    (mg__CUcontext peer), (peer))                                                                \
  X(REQ, RC, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, mg__CUresult,             \
    (mg__CUcontext *ctx, mg__CUdevice dev), (ctx, dev))                                          \
  X(REQ, RC, DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", NULL, mg__CUresult,        \
    (mg__CUdevice dev), (dev))                                                                   \
  X(REQ, RC, CtxGetDevice, "cuCtxGetDevice", NULL, mg__CUresult, (mg__CUdevice *dev), (dev))     \
  X(REQ, RC, CtxSynchronize, "cuCtxSynchronize", NULL, mg__CUresult, (void), ())                 \
  X(REQ, RC, CtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL, mg__CUresult,                   \
    (mg__CUcontext peer, unsigned int flags), (peer, flags))                                     \
  X(REQ, RC, MemGetAddressRange, "cuMemGetAddressRange_v2", NULL, mg__CUresult,                  \
    (mg__CUdeviceptr *base, size_t *size, mg__CUdeviceptr ptr), (base, size, ptr))               \
  X(REQ, RC, MemAlloc, "cuMemAlloc_v2", NULL, mg__CUresult,                                      \
    (mg__CUdeviceptr *ptr, size_t bytes), (ptr, bytes))                                          \
  X(REQ, RC, MemFree, "cuMemFree_v2", NULL, mg__CUresult, (mg__CUdeviceptr ptr), (ptr))          \
  X(REQ, RC, Memcpy, "cuMemcpy", NULL, mg__CUresult,                                             \
    (mg__CUdeviceptr dst, mg__CUdeviceptr src, size_t bytes), (dst, src, bytes))                 \
  X(REQ, RC, MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, mg__CUresult,                                  \
    (mg__CUdeviceptr dst, const void *src, size_t bytes), (dst, src, bytes))                     \
  X(REQ, RC, MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, mg__CUresult,                                  \
    (void *dst, mg__CUdeviceptr src, size_t bytes), (dst, src, bytes))                           \
  X(REQ, RC, MemsetD8, "cuMemsetD8_v2", NULL, mg__CUresult,                                      \
    (mg__CUdeviceptr dst, unsigned char value, size_t n), (dst, value, n))                       \
  X(REQ, RC, MemcpyAsync, "cuMemcpyAsync", NULL, mg__CUresult,                                   \
    (mg__CUdeviceptr dst, mg__CUdeviceptr src, size_t bytes, mg__CUstream stream),               \
    (dst, src, bytes, stream))                                                                   \
  X(REQ, RC, MemAllocManaged, "cuMemAllocManaged", NULL, mg__CUresult,                           \
    (mg__CUdeviceptr *ptr, size_t bytes, unsigned int flags), (ptr, bytes, flags))               \
  X(REQ, RC, MemAllocHost, "cuMemAllocHost_v2", NULL, mg__CUresult, (void **ptr, size_t bytes),  \
    (ptr, bytes))                                                                                \
  X(REQ, RC, MemFreeHost, "cuMemFreeHost", NULL, mg__CUresult, (void *ptr), (ptr))               \
  X(REQ, RC, MemcpyPeerAsync, "cuMemcpyPeerAsync", NULL, mg__CUresult,                           \
    (mg__CUdeviceptr dst, mg__CUcontext dst_ctx, mg__CUdeviceptr src, mg__CUcontext src_ctx,     \
     size_t bytes, mg__CUstream stream),                                                         \
    (dst, dst_ctx, src, src_ctx, bytes, stream))                                                 \
  X(REQ, RC, StreamCreate, "cuStreamCreate", NULL, mg__CUresult,                                 \
    (mg__CUstream *stream, unsigned int flags), (stream, flags))                                 \
  X(REQ, RC, StreamDestroy, "cuStreamDestroy_v2", NULL, mg__CUresult, (mg__CUstream stream),     \
    (stream))                                                                                    \
  X(REQ, RC, StreamSynchronize, "cuStreamSynchronize", NULL, mg__CUresult,                       \
    (mg__CUstream stream), (stream))                                                             \
  X(REQ, RC, StreamQuery, "cuStreamQuery", NULL, mg__CUresult, (mg__CUstream stream), (stream))  \
  X(REQ, RC, StreamWaitEvent, "cuStreamWaitEvent", NULL, mg__CUresult,                           \
    (mg__CUstream stream, mg__CUevent event, unsigned int flags), (stream, event, flags))        \
  X(REQ, RC, EventCreate, "cuEventCreate", NULL, mg__CUresult,                                   \
    (mg__CUevent *event, unsigned int flags), (event, flags))                                    \
  X(REQ, RC, EventDestroy, "cuEventDestroy_v2", NULL, mg__CUresult, (mg__CUevent event),         \
    (event))                                                                                     \
  X(REQ, RC, EventRecord, "cuEventRecord", NULL, mg__CUresult,                                   \
    (mg__CUevent event, mg__CUstream stream), (event, stream))                                   \
  X(REQ, RC, EventQuery, "cuEventQuery", NULL, mg__CUresult, (mg__CUevent event), (event))       \
  X(REQ, RC, EventSynchronize, "cuEventSynchronize", NULL, mg__CUresult, (mg__CUevent event),    \
    (event))                                                                                     \
  /* CUDA 12.8 added _v2 and cuda.h 13 maps the API name to it; older drivers lack it. */        \
  X(REQ, RC, EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", mg__CUresult,      \
    (float *ms, mg__CUevent start, mg__CUevent end), (ms, start, end))                           \
  X(REQ, RC, LaunchHostFunc, "cuLaunchHostFunc", NULL, mg__CUresult,                             \
    (mg__CUstream stream, mg__CUhostFn fn, void *user_data), (stream, fn, user_data))            \
  /* Our own kernels (src/kernels/, feature "kernels"): modules, launches, IPC, mapped host    \
   * memory; the graph calls are for the tests that capture the kernels. */                    \
  X(OPT, RC, ModuleLoadData, "cuModuleLoadData", NULL, mg__CUresult,                             \
    (mg__CUmodule *module, const void *image), (module, image))                                  \
  X(OPT, RC, ModuleUnload, "cuModuleUnload", NULL, mg__CUresult, (mg__CUmodule module), (module)) \
  X(OPT, RC, ModuleGetFunction, "cuModuleGetFunction", NULL, mg__CUresult,                       \
    (mg__CUfunction *fn, mg__CUmodule module, const char *name), (fn, module, name))             \
  X(OPT, RC, LaunchKernel, "cuLaunchKernel", NULL, mg__CUresult,                                 \
    (mg__CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,          \
     unsigned bz, unsigned shared_bytes, mg__CUstream stream, void **params, void **extra),      \
    (f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra))                            \
  X(OPT, RC, IpcGetMemHandle, "cuIpcGetMemHandle", NULL, mg__CUresult,                           \
    (mg__CUipcMemHandle *handle, mg__CUdeviceptr ptr), (handle, ptr))                            \
  X(OPT, RC, IpcOpenMemHandle, "cuIpcOpenMemHandle_v2", NULL, mg__CUresult,                      \
    (mg__CUdeviceptr *ptr, mg__CUipcMemHandle handle, unsigned int flags), (ptr, handle, flags)) \
  X(OPT, RC, IpcCloseMemHandle, "cuIpcCloseMemHandle", NULL, mg__CUresult,                       \
    (mg__CUdeviceptr ptr), (ptr))                                                                \
  /* Lending cuMem buffers to peer processes (src/kernels/kern_reg.c): optional, as without them \
   * the buffers are staged. */                                                                \
  X(OPT, RC, MemRetainAllocationHandle, "cuMemRetainAllocationHandle", NULL, mg__CUresult,       \
    (mg__CUmemGenericAllocationHandle *handle, void *addr), (handle, addr))                      \
  X(OPT, RC, MemRelease, "cuMemRelease", NULL, mg__CUresult,                                     \
    (mg__CUmemGenericAllocationHandle handle), (handle))                                         \
  X(OPT, RC, MemExportToShareableHandle, "cuMemExportToShareableHandle", NULL, mg__CUresult,     \
    (void *shareable, mg__CUmemGenericAllocationHandle handle, int type, unsigned long long flags), \
    (shareable, handle, type, flags))                                                            \
  X(OPT, RC, MemImportFromShareableHandle, "cuMemImportFromShareableHandle", NULL, mg__CUresult, \
    (mg__CUmemGenericAllocationHandle *handle, void *os_handle, int type),                       \
    (handle, os_handle, type))                                                                   \
  X(OPT, RC, MemAddressReserve, "cuMemAddressReserve", NULL, mg__CUresult,                       \
    (mg__CUdeviceptr *ptr, size_t size, size_t alignment, mg__CUdeviceptr addr,                  \
     unsigned long long flags), (ptr, size, alignment, addr, flags))                             \
  X(OPT, RC, MemAddressFree, "cuMemAddressFree", NULL, mg__CUresult,                             \
    (mg__CUdeviceptr ptr, size_t size), (ptr, size))                                             \
  X(OPT, RC, MemMap, "cuMemMap", NULL, mg__CUresult,                                             \
    (mg__CUdeviceptr ptr, size_t size, size_t offset, mg__CUmemGenericAllocationHandle handle,   \
     unsigned long long flags), (ptr, size, offset, handle, flags))                              \
  X(OPT, RC, MemUnmap, "cuMemUnmap", NULL, mg__CUresult, (mg__CUdeviceptr ptr, size_t size),     \
    (ptr, size))                                                                                 \
  X(OPT, RC, MemSetAccess, "cuMemSetAccess", NULL, mg__CUresult,                                 \
    (mg__CUdeviceptr ptr, size_t size, const mg__CUmemAccessDesc *desc, size_t count),           \
    (ptr, size, desc, count))                                                                    \
  X(OPT, RC, MemHostAlloc, "cuMemHostAlloc", NULL, mg__CUresult,                                 \
    (void **ptr, size_t bytes, unsigned int flags), (ptr, bytes, flags))                         \
  X(OPT, RC, MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", NULL, mg__CUresult,        \
    (mg__CUdeviceptr *dptr, void *ptr, unsigned int flags), (dptr, ptr, flags))                  \
  X(OPT, RC, StreamBeginCapture, "cuStreamBeginCapture_v2", NULL, mg__CUresult,                  \
    (mg__CUstream stream, int mode), (stream, mode))                                             \
  X(OPT, RC, StreamEndCapture, "cuStreamEndCapture", NULL, mg__CUresult,                         \
    (mg__CUstream stream, mg__CUgraph *graph), (stream, graph))                                  \
  X(OPT, RC, GraphInstantiate, "cuGraphInstantiateWithFlags", NULL, mg__CUresult,                \
    (mg__CUgraphExec *exec, mg__CUgraph graph, unsigned long long flags), (exec, graph, flags))  \
  X(OPT, RC, GraphLaunch, "cuGraphLaunch", NULL, mg__CUresult,                                   \
    (mg__CUgraphExec exec, mg__CUstream stream), (exec, stream))                                 \
  X(OPT, RC, GraphExecDestroy, "cuGraphExecDestroy", NULL, mg__CUresult,                         \
    (mg__CUgraphExec exec), (exec))                                                              \
  X(OPT, RC, GraphDestroy, "cuGraphDestroy", NULL, mg__CUresult, (mg__CUgraph graph), (graph))

#endif
