/*
 * nccl_perf.c -- mgcomm's NCCL backend measured the way nccl-tests measures NCCL, for
 * bench/nccl_vs_nccl_tests.sh (the same GPUs, the same call, the same method):
 *
 *   nccl_perf bw -g N [-c coll] [-b min] [-e max] [-f factor] [-n iters] [-w warmup] [-d dtype]
 *                [--impl mgcomm|raw-nonblocking|raw-blocking|paired] [--fill none|zero|random]
 *       One process, one thread, N GPUs (mg_comm_init_all; raw-*: NCCL called directly, its
 *       communicators nonblocking as mgcomm's, or blocking as nccl-tests'), so that a gap to
 *       nccl-tests can be told apart: NCCL's nonblocking mode, or mgcomm. Per size: the warm-up iterations,
 *       then the timed ones back to back, each one mg_group over the N ranks (nccl-tests -g N
 *       does one ncclGroup per iteration; one GPU calls alone, as nccl-tests -g 1 does), then a
 *       wait for every stream; time = elapsed / iters
 *       on the host clock, as nccl-tests does without -G. Out of place, then in place where
 *       mgcomm has the form. Prints nccl-tests' table (size count type redop root, then time
 *       algbw busbw #wrong twice), so one parser reads both; #wrong is N/A (no check: the GPU
 *       tests check results). The communicators get nvlinkCentricSched=1 on NCCL >= 2.28, as
 *       nccl-tests sets it. The buffers are left as allocated (--fill none, as nccl-tests -c 0
 *       leaves them), or written first (zero; random, as nccl-tests -c 1 writes them).
 *       --impl paired times raw NCCL (blocking communicators, as nccl-tests') and mgcomm in
 *       one process, on the same buffers (mgcomm's), a batch of each in turn 5 times per size
 *       and placement (the order swapped each time), up to 64 MiB, and prints the medians of
 *       both and their difference: a process's speed moves by up to 1.8x from one run to the
 *       next on the shared GPU machines, which a comparison of separate programs cannot take out.
 *
 *   nccl_perf overhead -g N [-n calls] [-B bytes] [-M 0|1] [-X 0|1]
 *       The host-side cost of one call: one thread per GPU, each with three communicators of
 *       the same ranks: raw NCCL blocking (NCCL's default), raw NCCL nonblocking (as mgcomm
 *       makes them: the call, then ncclCommGetAsyncError until it leaves ncclInProgress) and
 *       mgcomm. They are called in turn, the same sequence on every rank (the nonblocking
 *       forms swap places every round), an all_reduce of B bytes (default 8) each, and each
 *       call is timed alone on the host clock; every 32 rounds the streams are drained,
 *       outside the timed calls. Prints the median, 10th and 90th percentile of each,
 *       mgcomm's cost over each raw form (a difference of medians), and mgcomm's own share of
 *       its calls (each call's time less the span it spent in NCCL: the figure that NCCL's
 *       thread start does not blur), split into before and after NCCL and into the CUDA
 *       driver's calls (context, pointer checks) and mgcomm's own code, next to raw nonblocking
 *       NCCL's own time outside NCCL (the probe's floor). MGCOMM_CHECK_POINTERS decides whether
 *       mgcomm's pointer checks are on (run it twice to see both), MGCOMM_NCCL_BLOCKING its
 *       mode; -M 1 gives mgcomm buffers of mg_mem_alloc, which its checks find in its own record
 *       (no driver call), where by default it uses the raw forms' cuMemAlloc buffers; -X 1
 *       starts each mgcomm call with no current context on the thread (set back outside the
 *       timed calls), as every call of a program without CUDA of its own (mgcomm bench) finds
 *       it: mgcomm makes its context current for the call and puts none back. With
 *       MGCOMM_ALGO=mgcomm mgcomm's own kernel takes the all_reduce, and its cuLaunchKernel
 *       stands for NCCL's call in the own share (bench/host_cost.sh -K 1).
 *
 * Buffers and streams come from the CUDA driver through mgcomm's loader (this is a benchmark
 * program of the project, like its tests), raw NCCL through the loader's table; the operations
 * measured for mgcomm go through its public API only.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "device/device.h"
#include "loader/loader.h"

#define MAXG 16

static void die(const char *what, mg_status_t st) {
  fprintf(stderr, "nccl_perf: %s: %s: %s\n", what, mg_status_name(st), mg_last_error());
  exit(1);
}

#define CU(call, what)                                                       \
  do {                                                                       \
    mg__CUresult r_ = (call);                                                \
    if (r_ != MG__CUDA_SUCCESS) die(what, mg__cu_error(r_, #call));          \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
  mg__CUdevice dev;
  mg__CUcontext ctx;
  mg__CUstream stream;
} gpu_t;

static gpu_t gpus[MAXG];
static int ngpus = 2;

static void gpu_open(int g) {
  mg_status_t st = mg__device_ctx_retain(g, "nccl_perf", &gpus[g].dev, &gpus[g].ctx);
  if (st != MG_OK) die("device", st);
  CU(mg__cuda.CtxSetCurrent(gpus[g].ctx), "cuCtxSetCurrent");
  CU(mg__cuda.StreamCreate(&gpus[g].stream, MG__CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

static void *gpu_alloc(int g, size_t bytes) {
  mg__CUdeviceptr p = 0;
  CU(mg__cuda.CtxSetCurrent(gpus[g].ctx), "cuCtxSetCurrent");
  CU(mg__cuda.MemAlloc(&p, bytes ? bytes : 16), "cuMemAlloc");
  return (void *)(uintptr_t)p;
}

static void *gpu_zeroed(int g, size_t bytes) {
  void *p = gpu_alloc(g, bytes); /* leaves gpus[g]'s context current */
  CU(mg__cuda.MemsetD8((mg__CUdeviceptr)(uintptr_t)p, 0, bytes ? bytes : 16), "cuMemsetD8");
  return p;
}

static void gpu_release(int g, void *p) {
  CU(mg__cuda.CtxSetCurrent(gpus[g].ctx), "cuCtxSetCurrent");
  CU(mg__cuda.MemFree((mg__CUdeviceptr)(uintptr_t)p), "cuMemFree");
}

/* Waits for stream g (polling, at most 120 s: a stuck collective is an error, not a hang). */
static void gpu_wait(int g) {
  const double t0 = now_s();
  for (;;) {
    mg__CUresult r = mg__cuda.StreamQuery(gpus[g].stream);
    if (r == MG__CUDA_SUCCESS) return;
    if (r != MG__CUDA_ERROR_NOT_READY) die("cuStreamQuery", mg__cu_error(r, "cuStreamQuery"));
    if (now_s() - t0 > 120) die("a stream did not drain in 120 s", MG_ERR_TIMED_OUT);
  }
}

static size_t parse_size(const char *s) {
  char *end = NULL;
  double v = strtod(s, &end);
  switch (end && *end ? *end : ' ') {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return (size_t)v;
}

/* ---- bandwidth ------------------------------------------------------------------------------ */

enum { IMPL_MGCOMM, IMPL_RAW_NONBLOCKING, IMPL_RAW_BLOCKING, IMPL_PAIRED, IMPL_COUNT };
static const char *const impl_name[] = {"mgcomm", "raw-nonblocking", "raw-blocking", "paired"};
#define PAIRED_ROUNDS 5
#define PAIRED_MAX_BYTES ((size_t)64 << 20) /* the time target's end; beyond, the GPU's time */

typedef struct {
  mg_bench_coll_t coll;
  size_t minb, maxb, factor;
  int iters, warmup;
  mg_dtype_t dtype;
  int impl;
  int fill;
} bw_opts_t;

static mg__ncclComm_t raw[MAXG];

static void nccl_ok(mg__ncclResult_t r, mg__ncclComm_t c, const char *what) {
  if (r != MG__ncclSuccess && r != MG__ncclInProgress) die(what, mg__nccl_error(r, what, c));
}

/* Polls c until it leaves ncclInProgress (what a user of nonblocking NCCL must do). */
static void nccl_settle(mg__ncclComm_t c, const char *what) {
  for (;;) {
    mg__ncclResult_t state = MG__ncclSuccess;
    nccl_ok(mg__nccl.CommGetAsyncError(c, &state), c, "ncclCommGetAsyncError");
    if (state == MG__ncclSuccess) return;
    if (state != MG__ncclInProgress) die(what, mg__nccl_error(state, what, c));
  }
}

/* How the bandwidth buffers are filled before the timed runs: left as allocated (nccl-tests
 * -c 0 writes no send buffer), zeroed, or random bytes (nccl-tests -c 1 writes its send buffers
 * with data). On 4 H200s zeroed buffers move all_to_all 7-8 % slower than random data, and
 * buffers as allocated read either way from one session to the next
 * (bench/results/2026-11-22-a2a-fill-4xH200.md). */
enum { FILL_NONE, FILL_ZERO, FILL_RANDOM };
static const char *const fill_name[] = {"none", "zero", "random"};

static void bw_fill(int g, void *p, size_t bytes, int fill, uint64_t seed) {
  if (fill == FILL_NONE) return;
  CU(mg__cuda.CtxSetCurrent(gpus[g].ctx), "cuCtxSetCurrent");
  const mg__CUdeviceptr d = (mg__CUdeviceptr)(uintptr_t)p;
  if (fill == FILL_ZERO) {
    CU(mg__cuda.MemsetD8(d, 0, bytes), "cuMemsetD8");
    return;
  }
  const size_t words = (bytes + 7) / 8;
  uint64_t *h = malloc(words * 8), x = seed * 0x9e3779b97f4a7c15ull + 1;
  if (h == NULL) die("out of memory for a random fill", MG_ERR_OUT_OF_MEMORY);
  for (size_t i = 0; i < words; i++) { /* xorshift64 */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    h[i] = x;
  }
  CU(mg__cuda.MemcpyHtoD(d, h, bytes), "cuMemcpyHtoD");
  free(h);
}

/* A bandwidth buffer of GPU g: from ncclMemAlloc where the loaded NCCL has it, as nccl-tests
 * allocates its buffers (CUDA VMM memory that the peers map), so that the two programs differ
 * in nothing but the calls; mgcomm's through mg_mem_alloc, its public form of the same call. */
static void *bw_buffer(int g, size_t bytes, mg_comm_t *comm) {
  if (mg__nccl.MemAlloc == NULL) return gpu_alloc(g, bytes);
  void *p = NULL;
  CU(mg__cuda.CtxSetCurrent(gpus[g].ctx), "cuCtxSetCurrent");
  if (comm != NULL) {
    mg_status_t st = mg_mem_alloc(comm, bytes, &p);
    if (st != MG_OK) die("mg_mem_alloc", st);
  } else {
    nccl_ok(mg__nccl.MemAlloc(&p, bytes), NULL, "ncclMemAlloc");
  }
  return p;
}

static void bw_buffer_release(int g, void *p, int mgcomm) {
  if (mg__nccl.MemAlloc == NULL) {
    gpu_release(g, p);
  } else if (mgcomm) {
    mg_status_t st = mg_mem_free(p);
    if (st != MG_OK) die("mg_mem_free", st);
  } else {
    CU(mg__cuda.CtxSetCurrent(gpus[g].ctx), "cuCtxSetCurrent");
    nccl_ok(mg__nccl.MemFree(p), NULL, "ncclMemFree");
  }
}

/* Raw communicators of every GPU in one group, as mgcomm's init_all makes them. */
static void raw_init(int blocking) {
  mg__ncclUniqueId id;
  nccl_ok(mg__nccl.GetUniqueId(&id), NULL, "ncclGetUniqueId");
  mg__ncclConfig_t cfg;
  mg__nccl_config_init(&cfg);
  cfg.blocking = blocking;
  if (mg__lib_version(MG_LIB_NCCL) >= 22800) cfg.nvlinkCentricSched = 1; /* as nccl-tests */
  nccl_ok(mg__nccl.GroupStart(), NULL, "ncclGroupStart");
  for (int r = 0; r < ngpus; r++) {
    CU(mg__cuda.CtxSetCurrent(gpus[r].ctx), "cuCtxSetCurrent");
    nccl_ok(mg__nccl.CommInitRankConfig(&raw[r], ngpus, id, r, &cfg), NULL, "ncclCommInitRankConfig");
  }
  nccl_ok(mg__nccl.GroupEnd(), NULL, "ncclGroupEnd");
  for (int r = 0; r < ngpus && !blocking; r++) nccl_settle(raw[r], "ncclCommInitRankConfig");
}

/* One raw NCCL call of collective c for rank r (inside the caller's group). */
static void raw_call(mg_bench_coll_t c, const void *s, void *d, size_t count, mg_dtype_t dt,
                     int r) {
  const mg__ncclComm_t nc = raw[r];
  const mg__CUstream st = gpus[r].stream;
  const mg__ncclDataType_t t = (mg__ncclDataType_t)dt;
  mg__ncclResult_t res = MG__ncclSuccess;
  switch (c) {
    case MG_BENCH_ALL_REDUCE: res = mg__nccl.AllReduce(s, d, count, t, MG__ncclSum, nc, st); break;
    case MG_BENCH_ALL_GATHER: res = mg__nccl.AllGather(s, d, count, t, nc, st); break;
    case MG_BENCH_REDUCE_SCATTER: res = mg__nccl.ReduceScatter(s, d, count, t, MG__ncclSum, nc, st); break;
    case MG_BENCH_ALL_TO_ALL:
      if (!mg__feature(MG_FEATURE_NCCL_COLLECTIVES_2_28)) die("raw all_to_all needs NCCL 2.28", MG_ERR_NOT_SUPPORTED);
      res = mg__nccl.AlltoAll(s, d, count, t, nc, st);
      break;
    case MG_BENCH_BROADCAST: res = mg__nccl.Broadcast(s, d, count, t, 0, nc, st); break;
    case MG_BENCH_SENDRECV:
      res = mg__nccl.Send(s, count, t, (r + 1) % ngpus, nc, st);
      if (res == MG__ncclSuccess) res = mg__nccl.Recv(d, count, t, (r - 1 + ngpus) % ngpus, nc, st);
      break;
    default: die("this collective has no raw form here", MG_ERR_INVALID_ARGUMENT);
  }
  nccl_ok(res, nc, "a raw NCCL collective");
}

static int cmp_d(const void *a, const void *b);

/* One timed point of impl (not paired): seconds per iteration. Each iteration is one group
 * over the GPUs; one GPU posts its call alone, as nccl-tests -g 1 does, except a send and recv
 * to itself, which NCCL takes only inside a group. */
static double bw_point(const bw_opts_t *o, int impl, mg_comm_t **comms, void **sb, void **rb,
                       const mg_bench_geom_t *g, int inplace) {
  const size_t e = mg_dtype_size(o->dtype);
  const int grouped = ngpus > 1 || o->coll == MG_BENCH_SENDRECV;
  for (int pass = 0; pass < 2; pass++) {
    const int n = pass == 0 ? o->warmup : o->iters;
    const double t0 = now_s();
    for (int i = 0; i < n; i++) {
      if (impl != IMPL_MGCOMM) {
        if (grouped) nccl_ok(mg__nccl.GroupStart(), NULL, "ncclGroupStart");
        for (int r = 0; r < ngpus; r++) {
          char *send = inplace ? (char *)rb[r] + (size_t)r * g->send_ip_off * e : sb[r];
          char *recv = (char *)rb[r] + (inplace ? (size_t)r * g->recv_ip_off * e : 0);
          raw_call(o->coll, send, recv, g->count, o->dtype, r);
        }
        if (grouped) nccl_ok(mg__nccl.GroupEnd(), NULL, "ncclGroupEnd");
        for (int r = 0; r < ngpus && impl == IMPL_RAW_NONBLOCKING; r++)
          nccl_settle(raw[r], "ncclGroupEnd");
        continue;
      }
      mg_status_t st = grouped ? mg_group_begin() : MG_OK;
      for (int r = 0; r < ngpus && st == MG_OK; r++) {
        char *send = inplace ? (char *)rb[r] + (size_t)r * g->send_ip_off * e : sb[r];
        char *recv = (char *)rb[r] + (inplace ? (size_t)r * g->recv_ip_off * e : 0);
        st = mg_bench_call(o->coll, send, recv, g->count, o->dtype, MG_SUM, 0, comms[r], r,
                           ngpus, (mg_stream_t)gpus[r].stream);
      }
      mg_status_t end = grouped ? mg_group_end() : MG_OK;
      if (st != MG_OK) die(mg_bench_coll_name(o->coll), st);
      if (end != MG_OK) die(mg_bench_coll_name(o->coll), end);
    }
    for (int r = 0; r < ngpus; r++) gpu_wait(r);
    if (pass == 1) return (now_s() - t0) / (n > 0 ? n : 1);
  }
  return 0;
}

static int run_bw(const bw_opts_t *o) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  mg_library_info_t li;
  if (mg_library_info(MG_LIB_NCCL, &li) == MG_OK && li.version >= 22800)
    cfg.nccl_nvlink_centric_sched = 1; /* as nccl-tests sets it */
  mg_comm_t *comms[MAXG] = {NULL};
  const int paired = o->impl == IMPL_PAIRED;
  const size_t maxb = paired && o->maxb > PAIRED_MAX_BYTES ? PAIRED_MAX_BYTES : o->maxb;
  const int with_mg = o->impl == IMPL_MGCOMM || paired, with_raw = o->impl != IMPL_MGCOMM;
  if (with_mg) {
    mg_status_t st = mg_comm_init_all(&cfg, ngpus, NULL, comms);
    if (st != MG_OK) die("mg_comm_init_all", st);
  }
  if (with_raw) raw_init(o->impl != IMPL_RAW_NONBLOCKING);
  size_t smax = 16, rmax = 16;
  for (size_t b = o->minb;; b *= o->factor) {
    mg_bench_geom_t g = mg_bench_geometry(o->coll, b, o->dtype, ngpus);
    const size_t e = mg_dtype_size(o->dtype);
    if (g.send_count * e > smax) smax = g.send_count * e;
    if (g.bytes > rmax) rmax = g.bytes;
    if (b > maxb / o->factor) break;
  }
  void *sb[MAXG], *rb[MAXG];
  for (int r = 0; r < ngpus; r++) {
    mg_comm_t *owner = with_mg ? comms[r] : NULL; /* paired: raw NCCL uses mgcomm's too */
    sb[r] = bw_buffer(r, smax, owner), rb[r] = bw_buffer(r, rmax, owner);
    bw_fill(r, sb[r], smax, o->fill, 2 * (uint64_t)r + 1);
    bw_fill(r, rb[r], rmax, o->fill, 2 * (uint64_t)r + 2);
  }
  printf("# nccl_perf bw: %s (mgcomm %s), %d GPUs of one process, NCCL %s, -n %d -w %d, "
         "buffers from %s, filled: %s\n", impl_name[o->impl], mg_version_string(), ngpus,
         li.version_string, o->iters, o->warmup,
         mg__nccl.MemAlloc != NULL ? "ncclMemAlloc" : "cuMemAlloc", fill_name[o->fill]);
  printf("# Collective test starting: %s_perf\n", mg_bench_coll_name(o->coll));
  if (paired)
    printf("# paired: us per iteration, medians of %d turns; raw: NCCL's blocking communicators "
           "called directly; diff: mgcomm - raw\n"
           "#       size         count      type   redop    root  raw-oop   mg-oop     diff"
           "   raw-ip    mg-ip     diff\n", PAIRED_ROUNDS);
  else
    printf("#       size         count      type   redop    root     time   algbw   busbw #wrong"
           "     time   algbw   busbw #wrong\n");
  const double factor = mg_bench_bus_factor(o->coll, ngpus);
  for (size_t b = o->minb;; b *= o->factor) {
    mg_bench_geom_t g = mg_bench_geometry(o->coll, b, o->dtype, ngpus);
    printf("%12zu  %12zu  %8s  %6s  %6d", g.bytes, g.count, mg_dtype_name(o->dtype),
           mg_bench_coll_reduces(o->coll) ? "sum" : "none",
           mg_bench_coll_rooted(o->coll) ? 0 : -1);
    for (int ip = 0; ip < 2; ip++) {
      if (ip && !mg_bench_coll_has_inplace(o->coll)) {
        printf(paired ? "  %7s  %7s  %7s" : "  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      if (paired) {
        double t[2][PAIRED_ROUNDS]; /* [0]: raw, [1]: mgcomm */
        for (int k = 0; k < PAIRED_ROUNDS; k++)
          for (int j = 0; j < 2; j++) {
            const int w = (j + k) % 2; /* who goes first swaps each turn */
            t[w][k] = bw_point(o, w ? IMPL_MGCOMM : IMPL_RAW_BLOCKING, comms, sb, rb, &g, ip);
          }
        qsort(t[0], PAIRED_ROUNDS, sizeof(double), cmp_d);
        qsort(t[1], PAIRED_ROUNDS, sizeof(double), cmp_d);
        const double raw_us = t[0][PAIRED_ROUNDS / 2] * 1e6, mg_us = t[1][PAIRED_ROUNDS / 2] * 1e6;
        printf("  %7.2f  %7.2f  %+7.2f", raw_us, mg_us, mg_us - raw_us);
        continue;
      }
      const double sec = bw_point(o, o->impl, comms, sb, rb, &g, ip);
      const double algbw = (double)g.algbw_bytes / 1e9 / sec;
      printf("  %7.2f  %6.2f  %6.2f  %5s", sec * 1e6, algbw, algbw * factor, "N/A");
    }
    printf("\n");
    fflush(stdout);
    if (b > maxb / o->factor) break;
  }
  for (int r = 0; r < ngpus; r++) {
    bw_buffer_release(r, sb[r], with_mg);
    bw_buffer_release(r, rb[r], with_mg);
    if (with_mg && mg_comm_destroy(comms[r]) != MG_OK) die("mg_comm_destroy", MG_ERR_INTERNAL);
  }
  /* Raw communicators: one group of ncclCommDestroy (a collective of the node's ranks). */
  if (with_raw) {
    nccl_ok(mg__nccl.GroupStart(), NULL, "ncclGroupStart");
    for (int r = 0; r < ngpus; r++) nccl_ok(mg__nccl.CommDestroy(raw[r]), raw[r], "ncclCommDestroy");
    nccl_ok(mg__nccl.GroupEnd(), NULL, "ncclGroupEnd");
  }
  return 0;
}

/* ---- host-side cost per call ------------------------------------------------------------- */

enum {
  V_RAW_BLOCKING, V_RAW_NONBLOCKING, V_RAW_OUTSIDE, V_MGCOMM, V_MGCOMM_OWN, V_MGCOMM_PRE,
  V_MGCOMM_POST, V_MGCOMM_DRIVER, V_MGCOMM_CODE, V_COUNT
};
static const char *const vname[V_COUNT] = {
    "raw NCCL, blocking comm", "raw NCCL, nonblocking comm + poll",
    "raw nonblocking, outside NCCL", "mgcomm", "mgcomm's own share", "own share before NCCL",
    "own share after NCCL", "own share in the CUDA driver", "own share in mgcomm's code"};

/* mgcomm's own share of a call: its time less the span from its first call into NCCL to the
 * return of its last one (the poll included). NCCL's thread start, whose jitter (tens of us)
 * blurs a difference of two calls' times, falls inside that span. The loader's table is
 * pointed at these shims for the timed calls; each notes when the calling thread first
 * entered NCCL and last left it. */
static _Thread_local double nccl_first, nccl_last;
static mg__nccl_table_t nccl_real;

#define NOTE_NCCL(call)                              \
  do {                                               \
    const double t_ = now_s();                       \
    if (nccl_first == 0) nccl_first = t_;            \
    __typeof__(call) r_ = (call);                    \
    nccl_last = now_s();                             \
    return r_;                                       \
  } while (0)

static mg__ncclResult_t shim_all_reduce(const void *s, void *d, size_t n, mg__ncclDataType_t t,
                                        mg__ncclRedOp_t op, mg__ncclComm_t c, mg__CUstream st) {
  NOTE_NCCL(nccl_real.AllReduce(s, d, n, t, op, c, st));
}
static mg__ncclResult_t shim_async_error(mg__ncclComm_t c, mg__ncclResult_t *e) {
  NOTE_NCCL(nccl_real.CommGetAsyncError(c, e));
}
static mg__ncclResult_t shim_group_start(void) { NOTE_NCCL(nccl_real.GroupStart()); }
static mg__ncclResult_t shim_group_end(void) { NOTE_NCCL(nccl_real.GroupEnd()); }

/* The driver calls mgcomm makes around NCCL (its context and pointer checks): during a timed
 * mgcomm call (cuda_timing), each adds its time to the calling thread's sum, so that the own
 * share splits into the driver's and mgcomm's own code. */
static _Thread_local int cuda_timing;
static _Thread_local double cuda_sum;
static mg__cuda_table_t cuda_real;

#define NOTE_CUDA(call)                              \
  do {                                               \
    if (!cuda_timing) return (call);                 \
    const double t_ = now_s();                       \
    mg__CUresult r_ = (call);                        \
    cuda_sum += now_s() - t_;                        \
    return r_;                                       \
  } while (0)

static mg__CUresult shim_ctx_get(mg__CUcontext *c) { NOTE_CUDA(cuda_real.CtxGetCurrent(c)); }
static mg__CUresult shim_ctx_set(mg__CUcontext c) { NOTE_CUDA(cuda_real.CtxSetCurrent(c)); }
static mg__CUresult shim_ptr_attrs(unsigned n, mg__CUpointer_attribute *a, void **d,
                                   mg__CUdeviceptr p) {
  NOTE_CUDA(cuda_real.PointerGetAttributes(n, a, d, p));
}
static mg__CUresult shim_stream_ctx(mg__CUstream s, mg__CUcontext *c) {
  NOTE_CUDA(cuda_real.StreamGetCtx(s, c));
}
/* Where mgcomm's own kernel takes the all_reduce (MGCOMM_ALGO=mgcomm), its launch stands where
 * NCCL's call stood: the own share is then mgcomm's cost around cuLaunchKernel. */
static mg__CUresult shim_launch(mg__CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                mg__CUstream st, void **params, void **extra) {
  NOTE_NCCL(cuda_real.LaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, st, params, extra));
}

static void shims_install(void) {
  nccl_real = mg__nccl;
  mg__nccl.AllReduce = shim_all_reduce;
  mg__nccl.CommGetAsyncError = shim_async_error;
  mg__nccl.GroupStart = shim_group_start;
  mg__nccl.GroupEnd = shim_group_end;
  cuda_real = mg__cuda;
  mg__cuda.CtxGetCurrent = shim_ctx_get;
  mg__cuda.CtxSetCurrent = shim_ctx_set;
  mg__cuda.PointerGetAttributes = shim_ptr_attrs;
  mg__cuda.StreamGetCtx = shim_stream_ctx;
  if (cuda_real.LaunchKernel != NULL) mg__cuda.LaunchKernel = shim_launch;
}

typedef struct {
  int calls;
  size_t bytes;
  int mgmem; /* -M 1: mgcomm's buffers come from mg_mem_alloc (checked against its record) */
  int noctx; /* -X 1: no current context when an mgcomm call begins */
  mg__ncclUniqueId id_b, id_nb;
  mg_comm_t *mg[MAXG];
  double *samples[MAXG][V_COUNT];
  double check_ptr_s[MAXG], check_stream_s[MAXG]; /* mean cost of one check, seconds */
  pthread_barrier_t barrier;
} ovh_t;

static ovh_t ovh;

static void *ovh_rank(void *arg) {
  const int r = (int)(intptr_t)arg;
  CU(mg__cuda.CtxSetCurrent(gpus[r].ctx), "cuCtxSetCurrent");
  mg__ncclComm_t cb = NULL, cn = NULL;
  nccl_ok(mg__nccl.CommInitRank(&cb, ngpus, ovh.id_b, r), NULL, "ncclCommInitRank");
  mg__ncclConfig_t cfg;
  mg__nccl_config_init(&cfg);
  cfg.blocking = 0;
  nccl_ok(mg__nccl.CommInitRankConfig(&cn, ngpus, ovh.id_nb, r, &cfg), NULL, "ncclCommInitRankConfig");
  nccl_settle(cn, "ncclCommInitRankConfig");
  const size_t count = ovh.bytes / 4 ? ovh.bytes / 4 : 1;
  void *s = gpu_zeroed(r, count * 4), *d = gpu_zeroed(r, count * 4);
  void *ms = s, *md = d; /* mgcomm's: the same buffers, or its own memory with -M 1 */
  if (ovh.mgmem) {
    mg_status_t m = mg_mem_alloc(ovh.mg[r], count * 4, &ms);
    if (m == MG_OK) m = mg_mem_alloc(ovh.mg[r], count * 4, &md);
    if (m != MG_OK) die("mg_mem_alloc", m);
  }
  mg__CUstream st = gpus[r].stream;
  /* Warm-up: connections made, first-call costs paid, on every communicator. */
  for (int i = 0; i < 50; i++) {
    nccl_ok(mg__nccl.AllReduce(s, d, count, MG__ncclFloat32, MG__ncclSum, cb, st), cb, "ncclAllReduce");
    nccl_ok(mg__nccl.AllReduce(s, d, count, MG__ncclFloat32, MG__ncclSum, cn, st), cn, "ncclAllReduce");
    nccl_settle(cn, "ncclAllReduce");
    mg_status_t m = mg_all_reduce(ms, md, count, MG_FLOAT32, MG_SUM, ovh.mg[r], (mg_stream_t)st);
    if (m != MG_OK) die("mg_all_reduce", m);
    gpu_wait(r);
  }
  /* What the pointer checks cost alone (mgcomm makes one per buffer, one per stream). */
  const int nchk = 10000;
  double tc0 = now_s();
  for (int i = 0; i < nchk; i++)
    if (mg__device_check_ptr(s, count * 4, r, "nccl_perf", "send") != MG_OK) die("check", MG_ERR_INTERNAL);
  double tc1 = now_s();
  for (int i = 0; i < nchk; i++)
    if (mg__device_check_stream(st, gpus[r].ctx, r, "nccl_perf") != MG_OK) die("check", MG_ERR_INTERNAL);
  double tc2 = now_s();
  ovh.check_ptr_s[r] = (tc1 - tc0) / nchk;
  ovh.check_stream_s[r] = (tc2 - tc1) / nchk;
  (void)pthread_barrier_wait(&ovh.barrier);
  for (int i = 0; i < ovh.calls; i++) {
    double t0 = now_s();
    mg__ncclResult_t res = mg__nccl.AllReduce(s, d, count, MG__ncclFloat32, MG__ncclSum, cb, st);
    double t1 = now_s();
    nccl_ok(res, cb, "ncclAllReduce");
    /* Nonblocking raw NCCL and mgcomm take turns at going first: each call pays for the thread
     * NCCL made for the call before it, so a fixed order would bias the difference. */
    for (int k = 0; k < 2; k++) {
      nccl_first = nccl_last = 0;
      cuda_sum = 0;
      const double ta = now_s();
      if ((k == 0) == (i % 2 == 0)) {
        res = mg__nccl.AllReduce(s, d, count, MG__ncclFloat32, MG__ncclSum, cn, st);
        if (res == MG__ncclInProgress) nccl_settle(cn, "ncclAllReduce");
        const double te = now_s();
        ovh.samples[r][V_RAW_NONBLOCKING][i] = te - ta;
        ovh.samples[r][V_RAW_OUTSIDE][i] = (te - ta) - (nccl_last - nccl_first);
        nccl_ok(res, cn, "ncclAllReduce");
      } else {
        if (ovh.noctx) CU(cuda_real.CtxSetCurrent(NULL), "cuCtxSetCurrent"); /* untimed */
        const double tm = now_s();
        cuda_timing = 1;
        mg_status_t m = mg_all_reduce(ms, md, count, MG_FLOAT32, MG_SUM, ovh.mg[r], (mg_stream_t)st);
        const double te = now_s();
        cuda_timing = 0;
        if (ovh.noctx) CU(cuda_real.CtxSetCurrent(gpus[r].ctx), "cuCtxSetCurrent");
        if (m != MG_OK) die("mg_all_reduce", m);
        if (nccl_first == 0) die("mg_all_reduce made no NCCL call", MG_ERR_INTERNAL);
        ovh.samples[r][V_MGCOMM][i] = te - tm;
        ovh.samples[r][V_MGCOMM_OWN][i] = (te - tm) - (nccl_last - nccl_first);
        ovh.samples[r][V_MGCOMM_PRE][i] = nccl_first - tm;
        ovh.samples[r][V_MGCOMM_POST][i] = te - nccl_last;
        ovh.samples[r][V_MGCOMM_DRIVER][i] = cuda_sum;
        ovh.samples[r][V_MGCOMM_CODE][i] = ovh.samples[r][V_MGCOMM_OWN][i] - cuda_sum;
      }
    }
    ovh.samples[r][V_RAW_BLOCKING][i] = t1 - t0;
    if (i % 32 == 31) gpu_wait(r); /* outside the timed calls */
  }
  gpu_wait(r);
  gpu_release(r, s), gpu_release(r, d);
  if (ovh.mgmem && (mg_mem_free(ms) != MG_OK || mg_mem_free(md) != MG_OK))
    die("mg_mem_free", MG_ERR_INTERNAL);
  /* Collective teardown: every rank's thread destroys its own raw communicators. */
  nccl_ok(mg__nccl.CommDestroy(cb), cb, "ncclCommDestroy");
  nccl_ok(mg__nccl.CommFinalize(cn), cn, "ncclCommFinalize");
  nccl_settle(cn, "ncclCommFinalize");
  nccl_ok(mg__nccl.CommDestroy(cn), cn, "ncclCommDestroy");
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int run_overhead(int calls, size_t bytes) {
  ovh.calls = calls;
  ovh.bytes = bytes;
  nccl_ok(mg__nccl.GetUniqueId(&ovh.id_b), NULL, "ncclGetUniqueId");
  nccl_ok(mg__nccl.GetUniqueId(&ovh.id_nb), NULL, "ncclGetUniqueId");
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  mg_status_t st = mg_comm_init_all(&cfg, ngpus, NULL, ovh.mg);
  if (st != MG_OK) die("mg_comm_init_all", st);
  for (int r = 0; r < ngpus; r++)
    for (int v = 0; v < V_COUNT; v++) {
      ovh.samples[r][v] = malloc(sizeof(double) * (size_t)calls);
      if (ovh.samples[r][v] == NULL) die("out of memory", MG_ERR_OUT_OF_MEMORY);
    }
  pthread_barrier_init(&ovh.barrier, NULL, (unsigned)ngpus);
  /* For every form alike (two clock reads per NCCL call); installed and removed while no
   * thread of ours is inside NCCL and mgcomm's communicators are idle. */
  shims_install();
  pthread_t th[MAXG];
  for (int r = 0; r < ngpus; r++) pthread_create(&th[r], NULL, ovh_rank, (void *)(intptr_t)r);
  for (int r = 0; r < ngpus; r++) pthread_join(th[r], NULL);
  mg__nccl = nccl_real;
  mg__cuda = cuda_real;
  const char *chk = getenv("MGCOMM_CHECK_POINTERS");
  const char *blk = getenv("MGCOMM_NCCL_BLOCKING");
  printf("# nccl_perf overhead: all_reduce of %zu bytes, %d GPUs, %d calls per rank and form, "
         "MGCOMM_CHECK_POINTERS=%s, MGCOMM_NCCL_BLOCKING=%s, mgcomm's buffers from %s\n", bytes,
         ngpus, calls, chk != NULL ? chk : "1 (default)", blk != NULL ? blk : "1 (default)",
         ovh.mgmem ? "mg_mem_alloc" : "cuMemAlloc (as the raw forms')");
  printf("# %-36s %10s %10s %10s\n", "form", "median us", "p10 us", "p90 us");
  double med[V_COUNT];
  const size_t total = (size_t)calls * (size_t)ngpus;
  double *all = malloc(sizeof(double) * total);
  if (all == NULL) die("out of memory", MG_ERR_OUT_OF_MEMORY);
  for (int v = 0; v < V_COUNT; v++) {
    for (int r = 0; r < ngpus; r++)
      memcpy(all + (size_t)r * (size_t)calls, ovh.samples[r][v], sizeof(double) * (size_t)calls);
    qsort(all, total, sizeof *all, cmp_d);
    med[v] = all[total / 2];
    printf("  %-36s %10.3f %10.3f %10.3f\n", vname[v], med[v] * 1e6, all[total / 10] * 1e6,
           all[total * 9 / 10] * 1e6);
  }
  double cp = 0, cs = 0;
  for (int r = 0; r < ngpus; r++) cp += ovh.check_ptr_s[r] / ngpus, cs += ovh.check_stream_s[r] / ngpus;
  printf("  %-36s %10.3f\n", "one buffer check (cuPointerGetAttributes)", cp * 1e6);
  printf("  %-36s %10.3f\n", "one stream check (cuStreamGetCtx)", cs * 1e6);
  printf("overhead_us_vs_nonblocking %.3f\n", (med[V_MGCOMM] - med[V_RAW_NONBLOCKING]) * 1e6);
  printf("overhead_us_vs_blocking %.3f\n", (med[V_MGCOMM] - med[V_RAW_BLOCKING]) * 1e6);
  printf("own_share_us %.3f\n", med[V_MGCOMM_OWN] * 1e6);
  printf("raw_outside_us %.3f\n", med[V_RAW_OUTSIDE] * 1e6);
  printf("own_driver_us %.3f\n", med[V_MGCOMM_DRIVER] * 1e6);
  printf("own_code_us %.3f\n", med[V_MGCOMM_CODE] * 1e6);
  free(all);
  for (int r = 0; r < ngpus; r++) {
    for (int v = 0; v < V_COUNT; v++) free(ovh.samples[r][v]);
    if (mg_comm_destroy(ovh.mg[r]) != MG_OK) die("mg_comm_destroy", MG_ERR_INTERNAL);
  }
  return 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: nccl_perf bw -g N [-c coll] [-b min] [-e max] [-f factor] [-n iters] "
          "[-w warmup] [-d dtype] [--impl mgcomm|raw-nonblocking|raw-blocking|paired]\n"
          "                [--fill none|zero|random]\n"
          "       nccl_perf overhead -g N [-n calls] [-B bytes] [-M 0|1] [-X 0|1]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  const int bw = strcmp(argv[1], "bw") == 0;
  if (!bw && strcmp(argv[1], "overhead") != 0) usage();
  bw_opts_t o = {MG_BENCH_ALL_REDUCE, 8, (size_t)128 << 20, 2, 20, 5, MG_FLOAT32, IMPL_MGCOMM,
                 FILL_NONE};
  int calls = 20000;
  size_t bytes = 8;
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (strcmp(a, "-g") == 0) ngpus = atoi(v);
    else if (strcmp(a, "-c") == 0) {
      int c = mg_bench_coll_from_name(v);
      if (c < 0) usage();
      o.coll = (mg_bench_coll_t)c;
    } else if (strcmp(a, "-b") == 0) o.minb = parse_size(v);
    else if (strcmp(a, "-e") == 0) o.maxb = parse_size(v);
    else if (strcmp(a, "-f") == 0) o.factor = (size_t)atoi(v);
    else if (strcmp(a, "-n") == 0) o.iters = calls = atoi(v);
    else if (strcmp(a, "-w") == 0) o.warmup = atoi(v);
    else if (strcmp(a, "-B") == 0) bytes = parse_size(v);
    else if (strcmp(a, "-M") == 0) ovh.mgmem = atoi(v) != 0;
    else if (strcmp(a, "-X") == 0) ovh.noctx = atoi(v) != 0;
    else if (strcmp(a, "--impl") == 0) {
      o.impl = -1;
      for (int k = 0; k < IMPL_COUNT; k++)
        if (strcmp(v, impl_name[k]) == 0) o.impl = k;
      if (o.impl < 0) usage();
    } else if (strcmp(a, "--fill") == 0) {
      o.fill = -1;
      for (int k = 0; k < 3; k++)
        if (strcmp(v, fill_name[k]) == 0) o.fill = k;
      if (o.fill < 0) usage();
    }
    else if (strcmp(a, "-d") == 0) {
      if (mg_dtype_from_name(v, &o.dtype) != MG_OK) usage();
    } else usage();
  }
  if (ngpus < 1 || ngpus > MAXG || o.factor < 2 || o.minb == 0 || o.minb > o.maxb || calls < 1)
    usage();
  int count = 0;
  mg_status_t st = mg_device_count(&count);
  if (st != MG_OK) die("mg_device_count", st);
  if (count < ngpus) {
    fprintf(stderr, "nccl_perf: %d GPUs asked, %d here\n", ngpus, count);
    return 2;
  }
  if ((st = mg__load_nccl()) != MG_OK) die("libnccl", st);
  for (int g = 0; g < ngpus; g++) gpu_open(g);
  return bw ? run_bw(&o) : run_overhead(calls, bytes);
}
