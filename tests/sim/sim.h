/*
 * sim.h -- the simulated CUDA driver (libcuda.so.1, target mgsim_cuda) and simulated NCCL
 * (libnccl.so.2, target mgsim_nccl) of the tests: what they export besides the CUDA and NCCL API
 * of src/loader/cuda_api.h and nccl_api.h.
 *
 * A test runs mgcomm's real NCCL backend on a machine without a GPU by pointing the loader at
 * the two files (${CMAKE_BINARY_DIR}/sim/):
 *     MGCOMM_CUDA_LIBRARY=<dir>/libcuda.so.1  MGCOMM_NCCL_LIBRARY=<dir>/libnccl.so.2
 * Ranks are threads of one process; "device" memory is host memory; every stream has a thread
 * of its own that runs its work in order; collectives really compute.
 *
 * Divisions: what is simulated; the environment; the detectors; the control API
 * (libnccl.so.2) and how a test reaches it; the internal API that the NCCL simulator calls in
 * the CUDA simulator (libcuda.so.1); the CUDA API's declarations.
 *
 * ---- What is simulated ----------------------------------------------------------------------
 * CUDA (sim_cuda.c, sim_mem.c, sim_stream.c): MGSIM_DEVICES devices (compute capability 9.0,
 * 80 GiB, "mgsim GPU <n>", PCI bus 0000:<0x18 + n>:00.0, all peers), driver 13.0; primary
 * contexts (retains counted; work on a released one is refused) and the thread's current
 * context; peer access by pair (MGSIM_PEERS and the faults below), the P2P attributes; memory from posix_memalign in a registry that cuPointerGetAttributes (memory CUDA
 * does not know: "nothing" values and CUDA_SUCCESS, as documented; device ordinal -2) and
 * cuMemGetAddressRange (CUDA_ERROR_INVALID_VALUE for it) answer from; double and foreign frees
 * are CUDA_ERROR_INVALID_VALUE; streams with a thread each, events with CLOCK_MONOTONIC times,
 * cuStreamWaitEvent, host functions on the stream's thread. Not simulated: the legacy default
 * stream's implicit synchronisation with blocking streams, per-thread default streams (they are
 * the legacy one), sticky context errors, cuMemFree's wait for the device.
 * NCCL (sim_nccl.c, sim_comm.c, sim_life.c, sim_group.c, sim_coll.c):
 *   - ids are random bytes; the ranks of one id meet in the process; a rank's device is the
 *     calling thread's current context's (device 0 without one);
 *   - config->blocking (NCCL_CONFIG_UNDEF_INT: blocking). A nonblocking call returns
 *     ncclInProgress and finishes on a thread of the simulator; the communicator reports
 *     ncclInProgress until then (ncclCommGetAsyncError), then ncclSuccess or the error. As NCCL's
 *     ncclCommEnsureReady: a call or query on a communicator whose previous call is still in
 *     progress answers ncclInvalidArgument; after an asynchronous error, that error;
 *   - groups: the outermost ncclGroupEnd issues; blocking communicators inline, nonblocking ones
 *     from a new thread (ncclGroupEnd answers ncclInProgress); mixing them is
 *     ncclInvalidArgument; inits, splits and shrinks in a group run at its end;
 *   - collectives and send/recv compute: int8, uint8, int32, uint32, int64, uint64, float32,
 *     float64 (other types: ncclInvalidArgument, "not simulated"); sum, prod, max, min, avg.
 *     Buffers must be CUDA memory of the communicator's device with room for the operation
 *     (ncclInvalidArgument: NCCL checks only with NCCL_CHECK_POINTERS=1, but a GPU would fault),
 *     and the stream one of its context (ncclUnhandledCudaError);
 *   - split, shrink (NCCL_SHRINK_ABORT stops the parent's work first), finalize (waits for this
 *     rank's work), revoke (2.28.7: stops the work in flight, then ncclSuccess; later
 *     operations are ncclInvalidUsage; a second revoke is ncclInvalidArgument), abort, destroy;
 *     ncclMemAlloc / ncclMemFree; ncclCommRegister and ncclCommDeregister record only.
 *   Not simulated: ncclAlltoAll, ncclGather, ncclScatter, windows and PreMulSum ops (absent
 *   optional symbols); float16, bfloat16, fp8; groups mixing operations with inits, splits or
 *   shrinks; NCCL's own timeouts and network errors (ncclRemoteError never comes).
 *
 * ---- The environment (read once, at the first call into the library that uses it) ----------
 *   MGSIM_DEVICES=<n>              simulated GPUs (default 2, at most 16; 0: cuInit answers
 *                                  CUDA_ERROR_NO_DEVICE)
 *   MGSIM_NCCL_VERSION=<code>      what ncclGetVersion answers (default 22809 = 2.28.9). Entry
 *                                  points newer than the version (config 21400, split 21800,
 *                                  register and ncclMemAlloc 21900, shrink 22700, revoke 22807)
 *                                  are a VIOLATION when called: a real NCCL of that version
 *                                  lacks the symbol, so the caller must not have called it.
 *   MGSIM_HOST_HANG=<rank>:<nth>   the nth collective or send/recv call made by rank `rank`
 *                                  (counted from 1 over all that rank's communicators, calls of
 *                                  count 0 included; "Ranks" below) blocks on the host: inside
 *                                  the call for a blocking communicator (ncclAllReduce, or
 *                                  ncclGroupEnd in a group), in the group's thread for a
 *                                  nonblocking one, until an abort or a revoke of a
 *                                  communicator of its group; it then fails with
 *                                  ncclInternalError ("aborted while waiting for a peer").
 *   MGSIM_NEVER_COMPLETE=<rank>:<nth>  that call returns normally but its stream work never
 *                                  completes (nor meets its peers) until its communicator is
 *                                  aborted, revoked or shrunk with NCCL_SHRINK_ABORT.
 *   MGSIM_PEERS=a>b,c>d,...        the ordered pairs that can access each other (a's context may
 *                                  map b's memory): cuDeviceCanAccessPeer and the P2P
 *                                  attributes answer 1 only for them, cuCtxEnablePeerAccess of
 *                                  any other pair is CUDA_ERROR_PEER_ACCESS_UNSUPPORTED. Unset:
 *                                  every pair; "none": no pair. Asymmetric lists are allowed.
 *   MGSIM_PEER_ENABLE_FAIL=a>b,... cuCtxEnablePeerAccess of those pairs (b's context, with a's
 *                                  current) answers CUDA_ERROR_TOO_MANY_PEERS.
 *   MGSIM_PEER_CORRUPT=a>b,...     a peer copy (cuMemcpyPeerAsync) from a's memory to b's while
 *                                  a's peer access to b is enabled flips the first byte it
 *                                  writes: "can access" that lies. Without peer access the
 *                                  driver stages the copy through the host, which stays right.
 *   MGSIM_PEER_COPY_FAIL=a>b,...   cuMemcpyPeerAsync from a's memory to b's answers
 *                                  CUDA_ERROR_UNKNOWN (nothing is enqueued).
 *   NCCL_COMM_BLOCKING=0|1         overrides every communicator's config->blocking, as in NCCL.
 *   NCCL_DEBUG=WARN|INFO           the NCCL simulator prints its errors to stderr.
 * Ranks: the knobs and the getters of mgsim_control name a rank by its device, the stable
 * identity of a rank in one process: with one rank per simulated GPU (mg_comm_init_all, a
 * world), rank r is device r, and its calls are counted over every communicator on that device
 * (mgcomm's own, split and shrunk children included, whatever rank they have there).
 *
 * ---- The detectors --------------------------------------------------------------------------
 * The simulator prints "mgsim: VIOLATION: ..." to stderr and calls abort() when the caller does
 * what would be undefined with the real libraries:
 *   - ncclCommAbort or ncclCommDestroy frees a communicator while another thread is inside an
 *     NCCL call on it (checked when the call starts and again when it frees);
 *   - any NCCL call on a communicator that is freed, being freed, or was never made;
 *   - ncclMemFree while an ncclCommAbort has not yet stopped its communicator's stream work
 *     (the kernels of a real one may still use the memory: CUDA error 700 on 2 H200s);
 *   - the ranks of a collective disagree (kind, count, dtype, op, root), or a send and its
 *     receive differ in size;
 *   - an entry point is called that the simulated NCCL version does not have.
 * CUDA calls made from a host function (cuLaunchHostFunc) answer CUDA_ERROR_NOT_PERMITTED, as
 * CUDA may.
 */
#ifndef MGSIM_SIM_H
#define MGSIM_SIM_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

#include "loader/cuda_api.h"

#define MGSIM_API __attribute__((visibility("default")))

/* ---- The control API (libnccl.so.2) ----------------------------------------------------------
 *
 * int mgsim_control(const char *key, long value): a setter answers 0, a getter the count asked
 * for; an unknown key answers -1 (with a line on stderr). Thread-safe. `r` below is a rank, i.e.
 * a device ("Ranks" above); r = -1 means every rank.
 *
 * Fault knobs (setters; the environment variables above set the same at the first call):
 *   "host_hang_rank" r, "host_hang_nth" n         MGSIM_HOST_HANG=r:n (n = 0 disarms)
 *   "never_complete_rank" r, "never_complete_nth" n   MGSIM_NEVER_COMPLETE=r:n (n = 0 disarms)
 *   "reset_calls" (any)   the per-rank call counts the knobs count start again from 0
 *   "abort_delay_ms" ms   ncclCommAbort waits this long after it began (the communicator
 *                         marked as being freed, its work still in flight) before it stops
 *                         that work: a kernel that takes long to see the abort (0: none)
 * Getters (NCCL):
 *   "inside" r        threads inside an NCCL call on rank r's communicators now
 *   "comms" r         live communicators of rank r (made, not yet freed; init in progress too)
 *   "calls" r         collective and send/recv calls rank r has made (what the knobs count)
 *   "host_hung" r     calls of rank r held by MGSIM_HOST_HANG now
 *   "never_held" r    stream items of rank r held by MGSIM_NEVER_COMPLETE now
 *   "items" r         stream items of rank r's communicators enqueued and not finished
 *   "jobs" r          simulator threads working for rank r's communicators (nonblocking init,
 *                     group, split, shrink, finalize, revoke)
 *   "channels" r      channels of rank r's live communicators, summed: what NCCL sizes a
 *                     communicator's device memory by (config->maxCTAs, else 64; a child sharing
 *                     its parent's resources has at most the parent's)
 *   "version" (any)   the simulated NCCL version
 * Any other key is passed to mgsim_cuda_control (below), so one entry point serves both.
 */
MGSIM_API int mgsim_control(const char *key, long value);

/* CUDA getters (libcuda.so.1); -1 for an unknown key:
 *   "allocs" (any)    live allocations (cuMemAlloc, cuMemAllocManaged, cuMemAllocHost,
 *                     ncclMemAlloc)
 *   "streams" (any)   live streams made with cuStreamCreate (destroyed ones whose work still
 *                     runs are not counted)
 *   "events" (any)    live events
 *   "ctx_refs" d      retain count of device d's primary context
 *   "devices" (any)   simulated devices
 *   "hostfns" (any)   cuLaunchHostFunc calls that queued a function, since the start
 *   "stream_ctx" (any)  cuStreamGetCtx calls, since the start
 * CUDA setter:
 *   "query_fault" 1   cuEventQuery answers CUDA_ERROR_ILLEGAL_ADDRESS for an event not reached
 *                     yet, as after a context fault (0: CUDA_ERROR_NOT_READY again) */
MGSIM_API int mgsim_cuda_control(const char *key, long value);

typedef int (*mgsim_control_fn)(const char *key, long value);

/* The control entry point of the simulated NCCL already loaded from nccl_path (mgcomm's loader
 * opened it; RTLD_NOLOAD never loads a second copy); NULL, with the reason on stderr, when it is
 * not loaded or is not the simulator. */
static inline mgsim_control_fn mgsim_control_find(const char *nccl_path) {
  void *h = nccl_path != NULL ? dlopen(nccl_path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (h == NULL) {
    fprintf(stderr, "mgsim_control_find: %s is not loaded: %s\n",
            nccl_path != NULL ? nccl_path : "(null)", dlerror());
    return NULL;
  }
  mgsim_control_fn fn;
  *(void **)&fn = dlsym(h, "mgsim_control"); /* POSIX: function pointers convert both ways */
  if (fn == NULL) fprintf(stderr, "mgsim_control_find: %s is not the simulator\n", nccl_path);
  /* The library stays loaded: the loader holds its own reference. */
  (void)dlclose(h);
  return fn;
}

/* ---- The internal API of libcuda.so.1, for the NCCL simulator ---------------------------------
 * Stream handles are resolved as the driver does; the special handles (NULL, CU_STREAM_LEGACY,
 * CU_STREAM_PER_THREAD) name the default stream of ctx, or of the calling thread's current
 * context when ctx is NULL (NCCL runs on the communicator's device, not on whatever context its
 * own thread has). */
typedef void (*mgsim_fn_t)(void *arg);

/* The context that owns stream: CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE for a stream that is not
 * one (or was destroyed), CUDA_ERROR_INVALID_CONTEXT for a default stream without a context. */
MGSIM_API mg__CUresult mgsim_stream_owner(mg__CUstream stream, mg__CUcontext ctx,
                                          mg__CUcontext *owner);
/* Queues fn(arg) on stream, behind everything queued there before; it runs on the stream's
 * thread. Errors as mgsim_stream_owner; CUDA_ERROR_OUT_OF_MEMORY; CUDA_ERROR_INVALID_CONTEXT when
 * the owner is a primary context nobody retains. */
MGSIM_API mg__CUresult mgsim_stream_enqueue(mg__CUstream stream, mg__CUcontext ctx,
                                            mgsim_fn_t fn, void *arg);
/* ncclMemAlloc's memory: device memory of ctx's device that cuMemFree refuses (NCCL's is VMM
 * memory) and mgsim_mem_free_vmm frees. CUDA_ERROR_INVALID_VALUE for 0 bytes or a pointer that
 * is not such an allocation's start. */
MGSIM_API mg__CUresult mgsim_mem_alloc_vmm(mg__CUcontext ctx, void **ptr, size_t bytes);
MGSIM_API mg__CUresult mgsim_mem_free_vmm(void *ptr);

/* ---- The CUDA API of libcuda.so.1, declared with the types of src/loader/cuda_api.h ---------
 * Each function gets the type of its member of the loader's table, so that a definition that
 * differs from what mgcomm calls does not compile. */
#define MGSIM_CU_MEMBER(req, form, member, sym, alt, ret, params, args) ret(*member) params;
typedef struct mgsim_cuda_sigs {
  MG__CUDA_SYMBOLS(MGSIM_CU_MEMBER)
} mgsim_cuda_sigs_t;
#define MGSIM_CU_DECL(member, fn) \
  MGSIM_API extern __typeof__(*((mgsim_cuda_sigs_t *)0)->member) fn;
MGSIM_CU_DECL(CtxGetCurrent, cuCtxGetCurrent)
MGSIM_CU_DECL(CtxSetCurrent, cuCtxSetCurrent)
MGSIM_CU_DECL(PointerGetAttributes, cuPointerGetAttributes)
MGSIM_CU_DECL(StreamGetCtx, cuStreamGetCtx)
MGSIM_CU_DECL(Init, cuInit)
MGSIM_CU_DECL(DriverGetVersion, cuDriverGetVersion)
MGSIM_CU_DECL(GetErrorName, cuGetErrorName)
MGSIM_CU_DECL(GetErrorString, cuGetErrorString)
MGSIM_CU_DECL(DeviceGetCount, cuDeviceGetCount)
MGSIM_CU_DECL(DeviceGet, cuDeviceGet)
MGSIM_CU_DECL(DeviceGetName, cuDeviceGetName)
MGSIM_CU_DECL(DeviceTotalMem, cuDeviceTotalMem_v2)
MGSIM_CU_DECL(DeviceGetAttribute, cuDeviceGetAttribute)
MGSIM_CU_DECL(DeviceGetPCIBusId, cuDeviceGetPCIBusId)
MGSIM_CU_DECL(DeviceCanAccessPeer, cuDeviceCanAccessPeer)
MGSIM_CU_DECL(DeviceGetP2PAttribute, cuDeviceGetP2PAttribute)
MGSIM_CU_DECL(CtxDisablePeerAccess, cuCtxDisablePeerAccess)
MGSIM_CU_DECL(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)
MGSIM_CU_DECL(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)
MGSIM_CU_DECL(CtxGetDevice, cuCtxGetDevice)
MGSIM_CU_DECL(CtxSynchronize, cuCtxSynchronize)
MGSIM_CU_DECL(CtxEnablePeerAccess, cuCtxEnablePeerAccess)
MGSIM_CU_DECL(MemGetAddressRange, cuMemGetAddressRange_v2)
MGSIM_CU_DECL(MemAlloc, cuMemAlloc_v2)
MGSIM_CU_DECL(MemFree, cuMemFree_v2)
MGSIM_CU_DECL(Memcpy, cuMemcpy)
MGSIM_CU_DECL(MemcpyHtoD, cuMemcpyHtoD_v2)
MGSIM_CU_DECL(MemcpyDtoH, cuMemcpyDtoH_v2)
MGSIM_CU_DECL(MemsetD8, cuMemsetD8_v2)
MGSIM_CU_DECL(MemcpyAsync, cuMemcpyAsync)
MGSIM_CU_DECL(MemAllocManaged, cuMemAllocManaged)
MGSIM_CU_DECL(MemAllocHost, cuMemAllocHost_v2)
MGSIM_CU_DECL(MemFreeHost, cuMemFreeHost)
MGSIM_CU_DECL(MemcpyPeerAsync, cuMemcpyPeerAsync)
MGSIM_CU_DECL(StreamCreate, cuStreamCreate)
MGSIM_CU_DECL(StreamDestroy, cuStreamDestroy_v2)
MGSIM_CU_DECL(StreamSynchronize, cuStreamSynchronize)
MGSIM_CU_DECL(StreamQuery, cuStreamQuery)
MGSIM_CU_DECL(StreamWaitEvent, cuStreamWaitEvent)
MGSIM_CU_DECL(EventCreate, cuEventCreate)
MGSIM_CU_DECL(EventDestroy, cuEventDestroy_v2)
MGSIM_CU_DECL(EventRecord, cuEventRecord)
MGSIM_CU_DECL(EventQuery, cuEventQuery)
MGSIM_CU_DECL(EventSynchronize, cuEventSynchronize)
MGSIM_CU_DECL(EventElapsedTime, cuEventElapsedTime_v2)
MGSIM_CU_DECL(LaunchHostFunc, cuLaunchHostFunc)

#endif
