/*
 * nccl_api.h -- NCCL's host API (libnccl.so.2, nccl.h of NCCL 2.28 to 2.32), declared here so that
 * building needs no NCCL or CUDA header.
 *
 * Names: NCCL's, with the prefix mg__ (mg__ncclResult_t, MG__ncclSum), so that a test can
 * include the real nccl.h next to this file and compare every value and layout
 * (tests/unit/loader_header_compat.c). mg_dtype_t and mg_op_t use the same numbering, so they
 * convert by value.
 *
 * Versions: NCCL encodes X.Y.Z as X*10000 + Y*100 + Z since 2.9 (2.28.9 = 22809) and as
 * X*1000 + Y*100 + Z before. The loader stores every version in the new encoding
 * (mg__nccl_version_code normalises), and so do the constants below.
 */
#ifndef MG_LOADER_NCCL_API_H
#define MG_LOADER_NCCL_API_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/cuda_api.h"

#define MG__NCCL_VERSION(x, y, z) ((x) * 10000 + (y) * 100 + (z))

typedef struct mg__ncclComm *mg__ncclComm_t;
typedef struct mg__ncclWindow *mg__ncclWindow_t;

#define MG__NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[MG__NCCL_UNIQUE_ID_BYTES];
} mg__ncclUniqueId;

/* ncclResult_t. Kept as int: a newer library may return codes this list does not know. */
typedef int mg__ncclResult_t;
enum {
  MG__ncclSuccess = 0,
  MG__ncclUnhandledCudaError = 1,
  MG__ncclSystemError = 2,
  MG__ncclInternalError = 3,
  MG__ncclInvalidArgument = 4,
  MG__ncclInvalidUsage = 5,
  MG__ncclRemoteError = 6,
  MG__ncclInProgress = 7,
  MG__ncclTimeout = 8, /* NCCL >= 2.30.3 */
  MG__ncclNumResults = 9
};

/* ncclRedOp_t: built-ins; values >= MG__ncclNumOps are made by ncclRedOpCreatePreMulSum. */
typedef int mg__ncclRedOp_t;
enum {
  MG__ncclSum = 0,
  MG__ncclProd = 1,
  MG__ncclMax = 2,
  MG__ncclMin = 3,
  MG__ncclAvg = 4,
  MG__ncclNumOps = 5
};

/* ncclDataType_t. */
typedef int mg__ncclDataType_t;
enum {
  MG__ncclInt8 = 0,
  MG__ncclUint8 = 1,
  MG__ncclInt32 = 2,
  MG__ncclUint32 = 3,
  MG__ncclInt64 = 4,
  MG__ncclUint64 = 5,
  MG__ncclFloat16 = 6,
  MG__ncclFloat32 = 7,
  MG__ncclFloat64 = 8,
  MG__ncclBfloat16 = 9,
  MG__ncclFloat8e4m3 = 10, /* NCCL >= 2.24 */
  MG__ncclFloat8e5m2 = 11, /* NCCL >= 2.24 */
  MG__ncclNumTypes = 12
};

/* ncclScalarResidence_t (NCCL's values: device 0, host immediate 1). */
typedef int mg__ncclScalarResidence_t;
enum {
  MG__ncclScalarDevice = 0,
  MG__ncclScalarHostImmediate = 1
};

#define MG__NCCL_SPLIT_NOCOLOR (-1)
#define MG__NCCL_CONFIG_UNDEF_INT INT_MIN
#define MG__NCCL_CONFIG_MAGIC 0xcafebeefu
#define MG__NCCL_WIN_DEFAULT 0x00
#define MG__NCCL_WIN_COLL_SYMMETRIC 0x01
#define MG__NCCL_SHRINK_DEFAULT 0x00
#define MG__NCCL_SHRINK_ABORT 0x01
#define MG__NCCL_REVOKE_DEFAULT 0x00
#define MG__NCCL_SUSPEND_MEM 0x01 /* NCCL >= 2.29.7 */

/* ncclConfig_t as of NCCL 2.32.3 (ncclConfig_v23100 plus nvlsHostMode). NCCL reads the fields
 * that the struct's version announces and copies min(size, its own sizeof) bytes, so an older
 * library is given its own version (mg__nccl_config_init) and ignores the rest.
 * New fields are only ever appended by NCCL. */
#define MG__NCCL_CONFIG_LAYOUT_VERSION MG__NCCL_VERSION(2, 32, 3)
typedef struct {
  size_t size;              /* sizeof this struct */
  unsigned int magic;       /* MG__NCCL_CONFIG_MAGIC */
  unsigned int version;     /* NCCL version code the caller was written against */
  int blocking;             /* 0: nonblocking communicator (calls answer ncclInProgress) */
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;       /* 2.29.2 */
  int numRmaCtx;            /* 2.29.2 */
  int maxP2pPeers;          /* 2.30.3 */
  int graphStreamOrdering;  /* 2.30.7 */
  int launchOrderImplicit;  /* 2.31 */
  int numRmaSig;            /* 2.31 */
  int rmaEagerInit;         /* 2.31 */
  int hostCftMode;          /* 2.31 */
  int nvlsHostMode;         /* 2.32 */
} mg__ncclConfig_t;

/* ncclCommMemStat_t (NCCL >= 2.29.7). */
typedef int mg__ncclCommMemStat_t;
enum {
  MG__ncclStatGpuMemSuspend = 0,   /* bytes that suspend releases */
  MG__ncclStatGpuMemSuspended = 1, /* 1 while suspended */
  MG__ncclStatGpuMemPersist = 2,   /* bytes that stay */
  MG__ncclStatGpuMemTotal = 3
};

/* ncclCommProperties_t (nccl_device/core.h, NCCL >= 2.29.2), in its largest layout (2.32.3).
 * NCCL fills the fields of the layout that `version` names and checks only `magic`, so each
 * NCCL is given the version and size of its own layout (nccl_props.c). bool is one byte in
 * NCCL's C++ and in C11's _Bool; the enums are int. */
typedef struct {
  size_t size;
  unsigned int magic;              /* MG__NCCL_CONFIG_MAGIC (NCCL_API_MAGIC) */
  unsigned int version;
  int rank;
  int nRanks;
  int cudaDev;
  int nvmlDev;
  _Bool deviceApiSupport;
  _Bool multimemSupport;
  int ginType;                     /* ncclGinType_t: 0 none, 2 proxy, 3 GDAKI, 4 GPI, 5 EFA */
  int nLsaTeams;                   /* 2.29.7 */
  _Bool hostRmaSupport;            /* 2.29.7 */
  int railedGinType;               /* 2.29.7 */
  uint64_t commHash;            /* 2.31 */
  int ginMinStride;                /* 2.31 */
  int ginConnectionType;           /* 2.31 */
  _Bool ginSupport[64];            /* 2.31 */
  size_t devCommRuntimeVersionSize; /* 2.31 */
  _Bool cftSupport;                /* 2.32 */
  _Bool cftMulticastSupport;       /* 2.32 */
  _Bool cftCountedSupport;         /* 2.32 */
} mg__ncclCommProperties_t;

/* ncclWaitSignalDesc_t (NCCL >= 2.29.2). */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} mg__ncclWaitSignalDesc_t;

/* X(req, form, member, sym, alt, ret, params, args): see table.h. Optional symbols belong to a
 * feature (features.c) that says which version has them. */
#define MG__NCCL_SYMBOLS(X)                                                                      \
  X(REQ, RC, CommGetAsyncError, "ncclCommGetAsyncError", NULL, mg__ncclResult_t,                 \
    (mg__ncclComm_t comm, mg__ncclResult_t *async_error), (comm, async_error))                   \
  X(REQ, RC, AllReduce, "ncclAllReduce", NULL, mg__ncclResult_t,                                 \
    (const void *send, void *recv, size_t count, mg__ncclDataType_t dtype, mg__ncclRedOp_t op,   \
     mg__ncclComm_t comm, mg__CUstream stream),                                                  \
    (send, recv, count, dtype, op, comm, stream))                                                \
  X(REQ, RC, Broadcast, "ncclBroadcast", NULL, mg__ncclResult_t,                                 \
    (const void *send, void *recv, size_t count, mg__ncclDataType_t dtype, int root,             \
     mg__ncclComm_t comm, mg__CUstream stream),                                                  \
    (send, recv, count, dtype, root, comm, stream))                                              \
  X(REQ, RC, Reduce, "ncclReduce", NULL, mg__ncclResult_t,                                       \
    (const void *send, void *recv, size_t count, mg__ncclDataType_t dtype, mg__ncclRedOp_t op,   \
     int root, mg__ncclComm_t comm, mg__CUstream stream),                                        \
    (send, recv, count, dtype, op, root, comm, stream))                                          \
  X(REQ, RC, AllGather, "ncclAllGather", NULL, mg__ncclResult_t,                                 \
    (const void *send, void *recv, size_t sendcount, mg__ncclDataType_t dtype,                   \
     mg__ncclComm_t comm, mg__CUstream stream),                                                  \
    (send, recv, sendcount, dtype, comm, stream))                                                \
  X(REQ, RC, ReduceScatter, "ncclReduceScatter", NULL, mg__ncclResult_t,                         \
    (const void *send, void *recv, size_t recvcount, mg__ncclDataType_t dtype,                   \
     mg__ncclRedOp_t op, mg__ncclComm_t comm, mg__CUstream stream),                              \
    (send, recv, recvcount, dtype, op, comm, stream))                                            \
  X(REQ, RC, Send, "ncclSend", NULL, mg__ncclResult_t,                                           \
    (const void *send, size_t count, mg__ncclDataType_t dtype, int peer, mg__ncclComm_t comm,    \
     mg__CUstream stream),                                                                       \
    (send, count, dtype, peer, comm, stream))                                                    \
  X(REQ, RC, Recv, "ncclRecv", NULL, mg__ncclResult_t,                                           \
    (void *recv, size_t count, mg__ncclDataType_t dtype, int peer, mg__ncclComm_t comm,          \
     mg__CUstream stream),                                                                       \
    (recv, count, dtype, peer, comm, stream))                                                    \
  X(REQ, RC, GroupStart, "ncclGroupStart", NULL, mg__ncclResult_t, (void), ())                   \
  X(REQ, RC, GroupEnd, "ncclGroupEnd", NULL, mg__ncclResult_t, (void), ())                       \
  X(OPT, RC, AlltoAll, "ncclAlltoAll", NULL, mg__ncclResult_t,                                   \
    (const void *send, void *recv, size_t count, mg__ncclDataType_t dtype, mg__ncclComm_t comm,  \
     mg__CUstream stream),                                                                       \
    (send, recv, count, dtype, comm, stream))                                                    \
  X(OPT, RC, Gather, "ncclGather", NULL, mg__ncclResult_t,                                       \
    (const void *send, void *recv, size_t count, mg__ncclDataType_t dtype, int root,             \
     mg__ncclComm_t comm, mg__CUstream stream),                                                  \
    (send, recv, count, dtype, root, comm, stream))                                              \
  X(OPT, RC, Scatter, "ncclScatter", NULL, mg__ncclResult_t,                                     \
    (const void *send, void *recv, size_t count, mg__ncclDataType_t dtype, int root,             \
     mg__ncclComm_t comm, mg__CUstream stream),                                                  \
    (send, recv, count, dtype, root, comm, stream))                                              \
  X(REQ, RC, GetVersion, "ncclGetVersion", NULL, mg__ncclResult_t, (int *version), (version))    \
  X(REQ, RC, GetUniqueId, "ncclGetUniqueId", NULL, mg__ncclResult_t, (mg__ncclUniqueId *id),     \
    (id))                                                                                        \
  X(REQ, RC, CommInitRank, "ncclCommInitRank", NULL, mg__ncclResult_t,                           \
    (mg__ncclComm_t *comm, int nranks, mg__ncclUniqueId id, int rank),                           \
    (comm, nranks, id, rank))                                                                    \
  X(OPT, RC, CommInitRankConfig, "ncclCommInitRankConfig", NULL, mg__ncclResult_t,               \
    (mg__ncclComm_t *comm, int nranks, mg__ncclUniqueId id, int rank,                            \
     mg__ncclConfig_t *config),                                                                  \
    (comm, nranks, id, rank, config))                                                            \
  X(REQ, RC, CommInitAll, "ncclCommInitAll", NULL, mg__ncclResult_t,                             \
    (mg__ncclComm_t *comms, int ndev, const int *devlist), (comms, ndev, devlist))               \
  X(OPT, RC, CommFinalize, "ncclCommFinalize", NULL, mg__ncclResult_t, (mg__ncclComm_t comm),    \
    (comm))                                                                                      \
  X(REQ, RC, CommDestroy, "ncclCommDestroy", NULL, mg__ncclResult_t, (mg__ncclComm_t comm),      \
    (comm))                                                                                      \
  X(REQ, RC, CommAbort, "ncclCommAbort", NULL, mg__ncclResult_t, (mg__ncclComm_t comm), (comm))  \
  X(OPT, RC, CommRevoke, "ncclCommRevoke", NULL, mg__ncclResult_t,                               \
    (mg__ncclComm_t comm, int flags), (comm, flags))                                             \
  X(OPT, RC, CommSplit, "ncclCommSplit", NULL, mg__ncclResult_t,                                 \
    (mg__ncclComm_t comm, int color, int key, mg__ncclComm_t *newcomm,                           \
     mg__ncclConfig_t *config),                                                                  \
    (comm, color, key, newcomm, config))                                                         \
  X(OPT, RC, CommShrink, "ncclCommShrink", NULL, mg__ncclResult_t,                               \
    (mg__ncclComm_t comm, int *exclude, int nexclude, mg__ncclComm_t *newcomm,                   \
     mg__ncclConfig_t *config, int flags),                                                       \
    (comm, exclude, nexclude, newcomm, config, flags))                                           \
  X(REQ, NONE, GetErrorString, "ncclGetErrorString", NULL, const char *,                         \
    (mg__ncclResult_t result), (result))                                                         \
  X(OPT, NONE, GetLastError, "ncclGetLastError", NULL, const char *, (mg__ncclComm_t comm),      \
    (comm))                                                                                      \
  X(REQ, RC, CommCount, "ncclCommCount", NULL, mg__ncclResult_t,                                 \
    (const mg__ncclComm_t comm, int *count), (comm, count))                                      \
  X(REQ, RC, CommCuDevice, "ncclCommCuDevice", NULL, mg__ncclResult_t,                           \
    (const mg__ncclComm_t comm, int *device), (comm, device))                                    \
  X(REQ, RC, CommUserRank, "ncclCommUserRank", NULL, mg__ncclResult_t,                           \
    (const mg__ncclComm_t comm, int *rank), (comm, rank))                                        \
  X(OPT, RC, CommRegister, "ncclCommRegister", NULL, mg__ncclResult_t,                           \
    (const mg__ncclComm_t comm, void *buff, size_t size, void **handle),                         \
    (comm, buff, size, handle))                                                                  \
  X(OPT, RC, CommDeregister, "ncclCommDeregister", NULL, mg__ncclResult_t,                       \
    (const mg__ncclComm_t comm, void *handle), (comm, handle))                                   \
  X(OPT, RC, CommWindowRegister, "ncclCommWindowRegister", NULL, mg__ncclResult_t,               \
    (mg__ncclComm_t comm, void *buff, size_t size, mg__ncclWindow_t *win, int flags),            \
    (comm, buff, size, win, flags))                                                              \
  X(OPT, RC, CommWindowDeregister, "ncclCommWindowDeregister", NULL, mg__ncclResult_t,           \
    (mg__ncclComm_t comm, mg__ncclWindow_t win), (comm, win))                                    \
  X(OPT, RC, MemAlloc, "ncclMemAlloc", NULL, mg__ncclResult_t, (void **ptr, size_t size),        \
    (ptr, size))                                                                                 \
  X(OPT, RC, MemFree, "ncclMemFree", NULL, mg__ncclResult_t, (void *ptr), (ptr))                 \
  X(OPT, RC, RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum", NULL, mg__ncclResult_t,           \
    (mg__ncclRedOp_t *op, void *scalar, mg__ncclDataType_t dtype,                                \
     mg__ncclScalarResidence_t residence, mg__ncclComm_t comm),                                  \
    (op, scalar, dtype, residence, comm))                                                        \
  X(OPT, RC, RedOpDestroy, "ncclRedOpDestroy", NULL, mg__ncclResult_t,                           \
    (mg__ncclRedOp_t op, mg__ncclComm_t comm), (op, comm))                                       \
  MG__NCCL_SYMBOLS_2_29(X)

/* NCCL 2.29 to 2.32 (features.c says which version has each). */
#define MG__NCCL_SYMBOLS_2_29(X)                                                                 \
  X(OPT, RC, CommSuspend, "ncclCommSuspend", NULL, mg__ncclResult_t,                             \
    (mg__ncclComm_t comm, int flags), (comm, flags))                                             \
  X(OPT, RC, CommResume, "ncclCommResume", NULL, mg__ncclResult_t, (mg__ncclComm_t comm),        \
    (comm))                                                                                      \
  X(OPT, RC, CommMemStats, "ncclCommMemStats", NULL, mg__ncclResult_t,                           \
    (mg__ncclComm_t comm, mg__ncclCommMemStat_t stat, uint64_t *value),                \
    (comm, stat, value))                                                                         \
  X(OPT, RC, CommGetUniqueId, "ncclCommGetUniqueId", NULL, mg__ncclResult_t,                     \
    (mg__ncclComm_t comm, mg__ncclUniqueId *id), (comm, id))                                     \
  X(OPT, RC, CommGrow, "ncclCommGrow", NULL, mg__ncclResult_t,                                   \
    (mg__ncclComm_t comm, int nranks, const mg__ncclUniqueId *id, int rank,                      \
     mg__ncclComm_t *newcomm, mg__ncclConfig_t *config),                                         \
    (comm, nranks, id, rank, newcomm, config))                                                   \
  X(OPT, RC, CommQueryProperties, "ncclCommQueryProperties", NULL, mg__ncclResult_t,             \
    (mg__ncclComm_t comm, mg__ncclCommProperties_t *props), (comm, props))                       \
  X(OPT, RC, GetLsaDevicePointer, "ncclGetLsaDevicePointer", NULL, mg__ncclResult_t,             \
    (mg__ncclWindow_t win, size_t offset, int lsa_rank, void **out), (win, offset, lsa_rank, out)) \
  X(OPT, RC, GetPeerDevicePointer, "ncclGetPeerDevicePointer", NULL, mg__ncclResult_t,           \
    (mg__ncclWindow_t win, size_t offset, int peer, void **out), (win, offset, peer, out))       \
  X(OPT, RC, WinGetUserPtr, "ncclWinGetUserPtr", NULL, mg__ncclResult_t,                         \
    (mg__ncclComm_t comm, mg__ncclWindow_t win, void **out), (comm, win, out))                   \
  X(OPT, RC, PutSignal, "ncclPutSignal", NULL, mg__ncclResult_t,                                 \
    (const void *send, size_t count, mg__ncclDataType_t dtype, int peer, mg__ncclWindow_t win,   \
     size_t offset, int sig, int ctx, unsigned int flags, mg__ncclComm_t comm,                   \
     mg__CUstream stream),                                                                       \
    (send, count, dtype, peer, win, offset, sig, ctx, flags, comm, stream))                      \
  X(OPT, RC, Signal, "ncclSignal", NULL, mg__ncclResult_t,                                       \
    (int peer, int sig, int ctx, unsigned int flags, mg__ncclComm_t comm, mg__CUstream stream),  \
    (peer, sig, ctx, flags, comm, stream))                                                       \
  X(OPT, RC, WaitSignal, "ncclWaitSignal", NULL, mg__ncclResult_t,                               \
    (int n, mg__ncclWaitSignalDesc_t *descs, mg__ncclComm_t comm, mg__CUstream stream),          \
    (n, descs, comm, stream))                                                                    \
  X(OPT, RC, ParamGetParameter, "ncclParamGetParameter", NULL, mg__ncclResult_t,                 \
    (const char *key, const char **value, int *len), (key, value, len))                          \
  X(OPT, RC, ParamGetAllParameterKeys, "ncclParamGetAllParameterKeys", NULL, mg__ncclResult_t,   \
    (const char ***keys, int *n), (keys, n))

#endif
