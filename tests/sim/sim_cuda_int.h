/*
 * sim_cuda_int.h -- what the files of the simulated CUDA driver share: devices and primary
 * contexts (sim_cuda.c), the memory registry (sim_mem.c), streams (sim_stream.c). The exported
 * CUDA functions are declared in sim.h.
 *
 * Lock order: a file's own locks are leaves, except that a stream's lock is taken under the
 * stream registry's lock (sim_stream.c says why). No lock is held while a stream item runs.
 */
#ifndef MGSIM_CUDA_INT_H
#define MGSIM_CUDA_INT_H

#include <pthread.h>
#include <stdint.h>

#include "sim.h"

#define SIM_MAX_DEVICES 16
#define SIM_CTX_MAGIC 0x63747873u /* "sxtc" */

/* A primary context: one per device, never freed, so that its handle stays the same across
 * retain/release cycles (as the driver's does). */
struct mg__CUctx_st {
  unsigned magic;
  int device;
  int refs;                      /* retains minus releases; under sim_cu_lock */
  int peer[SIM_MAX_DEVICES];     /* cuCtxEnablePeerAccess done for that device's context */
  struct mg__CUstream_st *legacy; /* its default stream, made on first use, never destroyed */
};

/* ---- sim_cuda.c ---- */
extern pthread_mutex_t sim_cu_lock; /* leaf: contexts' refs and peers */
/* Answers the entry checks of every call that needs the driver: CUDA_ERROR_NOT_PERMITTED inside
 * a host function (with a line on stderr naming the call), CUDA_ERROR_NOT_INITIALIZED before
 * cuInit; else CUDA_SUCCESS. */
mg__CUresult sim_cu_enter(const char *call);
/* 1 while the calling thread runs a host function (sim_stream.c sets it). */
extern _Thread_local int sim_in_hostfn;
int sim_cu_ndevices(void);
mg__CUcontext sim_cu_current(void);
/* The context handle if ctx is one of ours, else NULL. */
mg__CUcontext sim_cu_ctx_check(mg__CUcontext ctx);
/* The current context when it is retained: CUDA_SUCCESS; CUDA_ERROR_INVALID_CONTEXT when there
 * is none or nobody retains it (its primary context is inactive). */
mg__CUresult sim_cu_active(mg__CUcontext *ctx);
int sim_cu_ctx_refs(mg__CUcontext ctx);
/* The peer knobs of sim.h for the ordered pair (a, b): 1 when the list names it. */
enum { SIM_PEER_CAN, SIM_PEER_ENABLE_FAIL, SIM_PEER_CORRUPT, SIM_PEER_COPY_FAIL, SIM_PEER_KNOBS };
int sim_cu_peer_knob(int knob, int a, int b);
/* 1 when a's context has peer access to b's enabled. */
int sim_cu_peer_enabled(int a, int b);

/* ---- sim_mem.c ---- */
enum { SIM_MEM_DEVICE = 1, SIM_MEM_MANAGED, SIM_MEM_HOST, SIM_MEM_VMM };
typedef struct sim_alloc {
  uintptr_t base;
  size_t size;        /* bytes asked for (no rounding: ASan then sees every overrun) */
  int kind;           /* SIM_MEM_* */
  mg__CUcontext ctx;  /* the context it was made in */
} sim_alloc_t;
/* 1 and *out when p lies in a live allocation; 0 otherwise. */
int sim_mem_find(uintptr_t p, sim_alloc_t *out);
int sim_mem_count(void);

/* ---- sim_stream.c ---- */
int sim_stream_count(void);
int sim_event_count(void);
int sim_hostfn_count(void);
int sim_stream_ctx_count(void);
void sim_query_fault_set(int on);
/* Waits until every stream of ctx (its default stream included) has run what it held when the
 * call began. */
void sim_stream_sync_ctx(mg__CUcontext ctx);
/* Queues fn(arg) on stream (resolved as mgsim_stream_enqueue) and waits until it has run: the
 * copies CUDA makes synchronous with the host (to pageable memory). */
mg__CUresult sim_stream_run_sync(mg__CUstream stream, mgsim_fn_t fn, void *arg);

#endif
