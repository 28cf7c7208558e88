/*
 * loader_header_compat.c -- the CUDA and NCCL types and constants that src/loader declares
 * itself (so that mgcomm builds without those headers) equal the real ones. Built only where
 * the CUDA toolkit's headers exist (tests/unit/loader.cmake); every comparison is made at run
 * time so that a mismatch fails this test, not the whole build.
 */
#include <stddef.h>

#include <cuda.h>
#include <nccl.h>

#include "loader/loader.h"
#include "test.h"

#define SAME(ours, theirs) ASSERT_EQ((long long)(ours), (long long)(theirs))

static void nccl_values(void) {
  /* ncclResult_t */
  SAME(MG__ncclSuccess, ncclSuccess);
  SAME(MG__ncclUnhandledCudaError, ncclUnhandledCudaError);
  SAME(MG__ncclSystemError, ncclSystemError);
  SAME(MG__ncclInternalError, ncclInternalError);
  SAME(MG__ncclInvalidArgument, ncclInvalidArgument);
  SAME(MG__ncclInvalidUsage, ncclInvalidUsage);
  SAME(MG__ncclRemoteError, ncclRemoteError);
  SAME(MG__ncclInProgress, ncclInProgress);
#if NCCL_VERSION_CODE >= 23003
  SAME(MG__ncclTimeout, ncclTimeout);
  SAME(MG__ncclNumResults, ncclNumResults);
#else
  SAME(MG__ncclInProgress + 1, ncclNumResults); /* ncclTimeout came with 2.30.3 */
#endif
  SAME(sizeof(mg__ncclResult_t), sizeof(ncclResult_t));
  /* ncclDataType_t, and mg_dtype_t which passes through by value */
  SAME(MG__ncclInt8, ncclInt8);
  SAME(MG__ncclUint8, ncclUint8);
  SAME(MG__ncclInt32, ncclInt32);
  SAME(MG__ncclUint32, ncclUint32);
  SAME(MG__ncclInt64, ncclInt64);
  SAME(MG__ncclUint64, ncclUint64);
  SAME(MG__ncclFloat16, ncclFloat16);
  SAME(MG__ncclFloat32, ncclFloat32);
  SAME(MG__ncclFloat64, ncclFloat64);
  SAME(MG__ncclBfloat16, ncclBfloat16);
  SAME(MG__ncclFloat8e4m3, ncclFloat8e4m3);
  SAME(MG__ncclFloat8e5m2, ncclFloat8e5m2);
  SAME(MG__ncclNumTypes, ncclNumTypes);
  SAME(sizeof(mg__ncclDataType_t), sizeof(ncclDataType_t));
  SAME(MG_INT8, ncclInt8);
  SAME(MG_UINT8, ncclUint8);
  SAME(MG_INT32, ncclInt32);
  SAME(MG_UINT32, ncclUint32);
  SAME(MG_INT64, ncclInt64);
  SAME(MG_UINT64, ncclUint64);
  SAME(MG_FLOAT16, ncclFloat16);
  SAME(MG_FLOAT32, ncclFloat32);
  SAME(MG_FLOAT64, ncclFloat64);
  SAME(MG_BFLOAT16, ncclBfloat16);
  SAME(MG_FLOAT8_E4M3, ncclFloat8e4m3);
  SAME(MG_FLOAT8_E5M2, ncclFloat8e5m2);
  SAME(MG_DTYPE_COUNT, ncclNumTypes);
  /* ncclRedOp_t, and mg_op_t */
  SAME(MG__ncclSum, ncclSum);
  SAME(MG__ncclProd, ncclProd);
  SAME(MG__ncclMax, ncclMax);
  SAME(MG__ncclMin, ncclMin);
  SAME(MG__ncclAvg, ncclAvg);
  SAME(MG__ncclNumOps, ncclNumOps);
  SAME(sizeof(mg__ncclRedOp_t), sizeof(ncclRedOp_t));
  SAME(MG_SUM, ncclSum);
  SAME(MG_PROD, ncclProd);
  SAME(MG_MAX, ncclMax);
  SAME(MG_MIN, ncclMin);
  SAME(MG_AVG, ncclAvg);
  SAME(MG_OP_BUILTIN_COUNT, ncclNumOps);
  /* ncclScalarResidence_t (NCCL's values: device 0, host immediate 1) */
  SAME(MG__ncclScalarDevice, ncclScalarDevice);
  SAME(MG__ncclScalarHostImmediate, ncclScalarHostImmediate);
  SAME(sizeof(mg__ncclScalarResidence_t), sizeof(ncclScalarResidence_t));
  SAME(MG_SCALAR_DEVICE, ncclScalarDevice);
  SAME(MG_SCALAR_HOST_IMMEDIATE, ncclScalarHostImmediate);
  /* constants */
  SAME(MG__NCCL_SPLIT_NOCOLOR, NCCL_SPLIT_NOCOLOR);
  SAME(MG_SPLIT_NOCOLOR, NCCL_SPLIT_NOCOLOR);
  SAME(MG__NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT);
  SAME(MG__NCCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
  SAME(MG_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
  SAME(sizeof(mg__ncclUniqueId), sizeof(ncclUniqueId));
  SAME(MG__NCCL_WIN_DEFAULT, NCCL_WIN_DEFAULT);
  SAME(MG__NCCL_WIN_COLL_SYMMETRIC, NCCL_WIN_COLL_SYMMETRIC);
  SAME(MG__NCCL_SHRINK_DEFAULT, NCCL_SHRINK_DEFAULT);
  SAME(MG__NCCL_SHRINK_ABORT, NCCL_SHRINK_ABORT);
  SAME(MG__NCCL_REVOKE_DEFAULT, NCCL_REVOKE_DEFAULT);
  SAME(MG__NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_VERSION_CODE);
  SAME(MG__NCCL_VERSION(2, 28, 9), NCCL_VERSION(2, 28, 9));
  SAME(sizeof(mg__ncclComm_t), sizeof(ncclComm_t));
  SAME(sizeof(mg__ncclWindow_t), sizeof(ncclWindow_t));
}

/* ncclConfig_t: our 2.28 layout field by field; a header with more fields (a newer NCCL)
 * must still start with ours. */
static void nccl_config(void) {
  ncclConfig_t real = NCCL_CONFIG_INITIALIZER;
  mg__ncclConfig_t ours;
  mg__nccl_config_init(&ours);
  SAME(ours.magic, real.magic);
  SAME(MG__NCCL_CONFIG_MAGIC, real.magic);
  SAME(ours.blocking, real.blocking);
  SAME(ours.nvlinkCentricSched, real.nvlinkCentricSched);
  ASSERT(ours.netName == NULL && ours.commName == NULL);
  if (NCCL_VERSION_CODE >= MG__NCCL_CONFIG_LAYOUT_VERSION)
    ASSERT_LE(sizeof(mg__ncclConfig_t), sizeof(ncclConfig_t));
  if (NCCL_VERSION_CODE < MG__NCCL_VERSION(2, 28, 0))
    SKIP("nccl.h is %d, older than the 2.28 layout mgcomm declares", NCCL_VERSION_CODE);
#define FIELD(f)                                                 \
  do {                                                           \
    SAME(offsetof(mg__ncclConfig_t, f), offsetof(ncclConfig_t, f)); \
    SAME(sizeof(ours.f), sizeof(real.f));                       \
  } while (0)
  FIELD(size);
  FIELD(magic);
  FIELD(version);
  FIELD(blocking);
  FIELD(cgaClusterSize);
  FIELD(minCTAs);
  FIELD(maxCTAs);
  FIELD(netName);
  FIELD(splitShare);
  FIELD(trafficClass);
  FIELD(commName);
  FIELD(collnetEnable);
  FIELD(CTAPolicy);
  FIELD(shrinkShare);
  FIELD(nvlsCTAs);
  FIELD(nChannelsPerNetPeer);
  FIELD(nvlinkCentricSched);
#if NCCL_VERSION_CODE >= 23203 /* the layout mgcomm declares: 2.32.3's */
  FIELD(graphUsageMode);
  FIELD(numRmaCtx);
  FIELD(maxP2pPeers);
  FIELD(graphStreamOrdering);
  FIELD(launchOrderImplicit);
  FIELD(numRmaSig);
  FIELD(rmaEagerInit);
  FIELD(hostCftMode);
  FIELD(nvlsHostMode);
  SAME(MG__NCCL_SUSPEND_MEM, NCCL_SUSPEND_MEM);
  SAME(MG__ncclStatGpuMemSuspend, ncclStatGpuMemSuspend);
  SAME(MG__ncclStatGpuMemSuspended, ncclStatGpuMemSuspended);
  SAME(MG__ncclStatGpuMemPersist, ncclStatGpuMemPersist);
  SAME(MG__ncclStatGpuMemTotal, ncclStatGpuMemTotal);
  SAME(sizeof(mg__ncclWaitSignalDesc_t), sizeof(ncclWaitSignalDesc_t));
  SAME(offsetof(mg__ncclWaitSignalDesc_t, ctx), offsetof(ncclWaitSignalDesc_t, ctx));
#endif
#undef FIELD
  if (NCCL_VERSION_CODE == MG__NCCL_CONFIG_LAYOUT_VERSION)
    SAME(sizeof(mg__ncclConfig_t), sizeof(ncclConfig_t));
}

static void cuda_values(void) {
  SAME(sizeof(mg__CUresult), sizeof(CUresult));
  SAME(sizeof(mg__CUdevice), sizeof(CUdevice));
  SAME(sizeof(mg__CUdeviceptr), sizeof(CUdeviceptr));
  SAME(sizeof(mg__CUdevice_attribute), sizeof(CUdevice_attribute));
  SAME(sizeof(mg__CUpointer_attribute), sizeof(CUpointer_attribute));
  SAME(MG__CUDA_SUCCESS, CUDA_SUCCESS);
  SAME(MG__CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
  SAME(MG__CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
  SAME(MG__CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
  SAME(MG__CUDA_ERROR_DEINITIALIZED, CUDA_ERROR_DEINITIALIZED);
  SAME(MG__CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY);
  SAME(MG__CUDA_ERROR_DEVICE_UNAVAILABLE, CUDA_ERROR_DEVICE_UNAVAILABLE);
  SAME(MG__CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
  SAME(MG__CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
  SAME(MG__CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
  SAME(MG__CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
  SAME(MG__CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE);
  SAME(MG__CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY);
  SAME(MG__CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS);
  SAME(MG__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  SAME(MG__CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  SAME(MG__CUDA_ERROR_TOO_MANY_PEERS, CUDA_ERROR_TOO_MANY_PEERS);
  SAME(MG__CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED);
  SAME(MG__CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED);
  SAME(MG__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
  SAME(MG__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE);
  SAME(MG__CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN);
  SAME(MG__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  SAME(MG__CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
  SAME(MG__CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
  SAME(MG__CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING);
  SAME(MG__CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
  SAME(MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  SAME(MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  SAME(MG__CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
       CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
  SAME(MG__CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED);
  SAME(sizeof(mg__CUdevice_P2PAttribute), sizeof(CUdevice_P2PAttribute));
  SAME(MG__CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK);
  SAME(MG__CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED);
  SAME(MG__CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
       CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED);
  SAME(MG__CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED,
       CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED);
  SAME(MG__CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_CONTEXT);
  SAME(MG__CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE);
  SAME(MG__CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_DEVICE_POINTER);
  SAME(MG__CU_POINTER_ATTRIBUTE_HOST_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER);
  SAME(MG__CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_IS_MANAGED);
  SAME(MG__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL);
  SAME(MG__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR);
  SAME(MG__CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_RANGE_SIZE);
  SAME(MG__CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_MAPPED);
  SAME(MG__CU_MEMORYTYPE_HOST, CU_MEMORYTYPE_HOST);
  SAME(MG__CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE);
  SAME(MG__CU_MEMORYTYPE_ARRAY, CU_MEMORYTYPE_ARRAY);
  SAME(MG__CU_MEMORYTYPE_UNIFIED, CU_MEMORYTYPE_UNIFIED);
  SAME(MG__CU_STREAM_DEFAULT, CU_STREAM_DEFAULT);
  SAME(MG__CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
  SAME(MG__CU_EVENT_DEFAULT, CU_EVENT_DEFAULT);
  SAME(MG__CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING);
  SAME(MG__CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_GLOBAL);
  SAME(sizeof(mg__CUmemGenericAllocationHandle), sizeof(CUmemGenericAllocationHandle));
  SAME(sizeof(mg__CUmemLocation), sizeof(CUmemLocation));
  SAME(sizeof(mg__CUmemAccessDesc), sizeof(CUmemAccessDesc));
  SAME(offsetof(mg__CUmemAccessDesc, flags), offsetof(CUmemAccessDesc, flags));
  SAME(offsetof(mg__CUmemLocation, id), offsetof(CUmemLocation, id));
  SAME(MG__CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  SAME(MG__CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE);
  SAME(MG__CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT(MG__CU_STREAM_LEGACY == (mg__CUstream)CU_STREAM_LEGACY);
  ASSERT(MG__CU_STREAM_PER_THREAD == (mg__CUstream)CU_STREAM_PER_THREAD);
}

int main(void) {
  printf("nccl.h %d, cuda.h %d\n", NCCL_VERSION_CODE, CUDA_VERSION);
  nccl_values();
  cuda_values();
  nccl_config(); /* last: it may skip for an old header */
  return 0;
}
