/*
 * test_gpu_kernels.c -- mgcomm's own all-reduce kernels (src/kernels/): N ranks of one process,
 * each on its own stream, driven by one thread (a kernel waits on the GPU for its peers' kernels,
 * so the launches need not be simultaneous); or N processes sharing their areas through CUDA
 * IPC. Rank r runs on GPU r % KT_GPUS (environment; default 1: every rank on GPU 0, where the
 * peer pointers are local); with several GPUs, peer access is enabled between all of them.
 *
 *   test_gpu_kernels correct N   every dtype, op, algorithm (push, one-shot, two-shot), placement
 *                                (in place, out of place, misaligned; staged, and for the pull
 *                                algorithms lent in place), sizes from 1 element to the limit,
 *                                NaN and signed zeros for max and min, against an exact
 *                                reference: bits equal on every rank and in every run
 *   test_gpu_kernels graph N     capture two all_reduces per rank in a CUDA graph, replay it
 *   test_gpu_kernels mixed N     24 calls queued on every rank without a wait between them, whose
 *                                sizes (hence grids) and algorithms alternate, each from its own
 *                                input to its own output: the staging halves' reuse across calls
 *   test_gpu_kernels timeout N [ll]  rank 0 never launches: the others end MG_ERR_TIMED_OUT
 *                                within the deadline, and the GPU is still usable (two-shot with
 *                                lent buffers, or the push algorithm)
 *   test_gpu_kernels abort N [ll]    rank 0 never launches: an abort ends the others at once
 *   test_gpu_kernels procs N     N processes, areas through CUDA IPC
 *   test_gpu_kernels lend N      N processes, each registering three buffers (mg_mem_alloc's
 *                                cuMem memory, passed as a descriptor; cuMemAlloc's, as an IPC
 *                                handle; one that only rank 0 can lend) and running all_reduces
 *                                from them that lend them in place to the other processes;
 *                                counted, and staged again once released
 *   test_gpu_kernels unmapped    2 processes; rank 1 alone releases a registration that rank 0
 *                                then lends: rank 1 gives up (MG_ERR_INVALID_USAGE) rather than
 *                                read unmapped memory, rank 0 times out
 *   test_gpu_kernels regwait     2 processes; rank 1 never sends its registered buffer: rank 0's
 *                                import ends at its deadline, and at an abort
 *   test_gpu_kernels ncclprocs N N processes on N GPUs, one NCCL communicator: a symmetric
 *                                registration lends mg_mem_alloc's memory to the kernels
 *   test_gpu_kernels nccl        the NCCL backend's choice on a communicator of one rank:
 *                                MGCOMM_ALGO=mgcomm runs float all_reduces through the kernels
 *                                and refuses an int32 one, which NCCL would run
 *   test_gpu_kernels bench       times (us) of the kernels; on one GPU beside NCCL's one rank
 *
 * The reference is the kernels' documented arithmetic done on the host: ranks combined in rank
 * order in float32, avg as the sum divided by N, one rounding to the type at the end; max and
 * min as the host backend's (a NaN wins, the earlier one if both are; max(-0, +0) = +0).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host_reduce.h"
#include "backend/nccl/nccl.h"
#include "gpu_util.h"
#include "kernels/kernels.h"
#include "reference.h"

#define KT_STAGING ((size_t)4 << 20) /* the limit in these tests: 4 MiB per rank */
#define KT_LL ((size_t)1 << 20)      /* the push algorithm's limit in these tests */
#define KT_GUARD 64                  /* bytes after a result that must stay untouched */
#define KT_BLOCKS 16 /* blocks of the correctness tests: 8 ranks sharing one GPU stay resident */

#define GU_CU(call, what)                                                                     \
  do {                                                                                        \
    mg__CUresult gu_r_ = (call);                                                              \
    if (gu_r_ != MG__CUDA_SUCCESS) {                                                          \
      mg__cu_error(gu_r_, what);                                                              \
      FAIL("%s", mg_last_error());                                                            \
    }                                                                                         \
  } while (0)

/* GPUs the ranks are spread over (KT_GPUS). */
static int kt_gpus = 1;

static double kt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the ranks ---------------------------------------------------------------------------- */

typedef struct kt_world {
  int n;
  gu_dev_t dev[MG_KERN_MAX_RANKS]; /* the GPUs: kt_gpus of them, at most n */
  int ndev;
  gu_dev_t rk[MG_KERN_MAX_RANKS];  /* each rank: its GPU with a stream of its own */
  mg__kern_ctx_t *ctx[MG_KERN_MAX_RANKS];
  char *send[MG_KERN_MAX_RANKS], *recv[MG_KERN_MAX_RANKS]; /* staging + 2 * KT_GUARD bytes */
} kt_world_t;

/* Makes rank r's GPU current (the kernels' calls use the current context). */
static void kt_use(kt_world_t *w, int r) {
  GU_CU(mg__cuda.CtxSetCurrent(w->rk[r].ctx), "cuCtxSetCurrent");
}

/* Enables peer access from every GPU of devs[0..n) to every other (the caller's job: the kernels
 * only map; CUDA IPC enables it itself). */
static void kt_peers(gu_dev_t *devs, int n) {
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      if (a == b) continue;
      int can = 0;
      GU_CU(mg__cuda.DeviceCanAccessPeer(&can, devs[a].dev, devs[b].dev), "cuDeviceCanAccessPeer");
      if (!can) SKIP("GPU %d cannot access GPU %d", a, b);
      GU_CU(mg__cuda.CtxSetCurrent(devs[a].ctx), "cuCtxSetCurrent");
      const mg__CUresult res = mg__cuda.CtxEnablePeerAccess(devs[b].ctx, 0);
      if (res != MG__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) GU_CU(res, "cuCtxEnablePeerAccess");
    }
}

static void kt_open(kt_world_t *w, int n, double timeout_s, int blocks) {
  memset(w, 0, sizeof *w);
  w->n = n;
  w->ndev = kt_gpus < n ? kt_gpus : n;
  for (int g = 0; g < w->ndev; g++) gu_dev_open(&w->dev[g], g);
  kt_peers(w->dev, w->ndev);
  mg__kern_peer_t rec[MG_KERN_MAX_RANKS];
  for (int r = 0; r < n; r++) {
    w->rk[r] = w->dev[r % w->ndev];
    kt_use(w, r);
    GU_CU(mg__cuda.StreamCreate(&w->rk[r].stream, MG__CU_STREAM_NON_BLOCKING), "a rank stream");
    if (mg__kern_ctx_create(r, n, KT_STAGING, KT_LL, blocks, timeout_s, &w->ctx[r], &rec[r]) !=
        MG_OK)
      FAIL("rank %d: %s", r, mg_last_error());
    w->send[r] = gu_alloc(&w->rk[r], KT_STAGING + 2 * KT_GUARD);
    w->recv[r] = gu_alloc(&w->rk[r], KT_STAGING + 2 * KT_GUARD);
  }
  for (int r = 0; r < n; r++) {
    kt_use(w, r);
    if (mg__kern_ctx_connect(w->ctx[r], rec) != MG_OK) FAIL("rank %d: %s", r, mg_last_error());
  }
}

static void kt_close(kt_world_t *w) {
  for (int r = 0; r < w->n; r++) {
    gu_sync(&w->rk[r], GU_TIMEOUT_S, "closing");
    kt_use(w, r);
    mg__kern_ctx_destroy(w->ctx[r]);
    gu_free(&w->rk[r], w->send[r]);
    gu_free(&w->rk[r], w->recv[r]);
    GU_CU(mg__cuda.StreamDestroy(w->rk[r].stream), "destroying a rank stream");
  }
  for (int g = 0; g < w->ndev; g++) gu_dev_close(&w->dev[g]);
}

/* ---- the reference ------------------------------------------------------------------------ */

static float kt_get(const void *b, size_t i, mg_dtype_t dt) {
  if (dt == MG_FLOAT32) return ((const float *)b)[i];
  if (dt == MG_FLOAT16) return mg__f16_to_f32(((const uint16_t *)b)[i]);
  return mg__bf16_to_f32(((const uint16_t *)b)[i]);
}

static void kt_put(void *b, size_t i, mg_dtype_t dt, float v) {
  if (dt == MG_FLOAT32) ((float *)b)[i] = v;
  else if (dt == MG_FLOAT16) ((uint16_t *)b)[i] = mg__f32_to_f16(v);
  else ((uint16_t *)b)[i] = mg__f32_to_bf16(v);
}

/* max and min of the earlier ranks' a and the next rank's b: a NaN wins (a's if both are); of
 * two equal values max takes the one without a sign bit, min the one with it. */
static float kt_maxmin(float a, float b, int max) {
  float r = max ? (a > b ? a : b) : (a < b ? a : b);
  if (a == b) r = max ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
  return a != a ? a : r;
}

static void kt_expect(void *out, char *const *in, int n, size_t count, mg_dtype_t dt, mg_op_t op) {
  for (size_t i = 0; i < count; i++) {
    float acc = kt_get(in[0], i, dt);
    for (int r = 1; r < n; r++) {
      const float x = kt_get(in[r], i, dt);
      acc = op == MG_MAX || op == MG_MIN ? kt_maxmin(acc, x, op == MG_MAX) : acc + x;
    }
    if (op == MG_AVG) acc = acc / (float)n;
    kt_put(out, i, dt, acc);
  }
}

/* ---- one case ----------------------------------------------------------------------------- */

enum { KT_INPLACE = 0, KT_OUTOFPLACE = 1, KT_MISALIGNED = 2 };
static const char *const kt_place_names[3] = {"in place", "out of place", "misaligned"};

typedef struct kt_case {
  mg_dtype_t dt;
  mg_op_t op;
  size_t count;
  int place;
  mg__kern_algo_t algo;
  uint64_t seed;
  mg__kern_lend_t lend; /* every rank the same here (mixed varies it) */
} kt_case_t;

/* Host memory of one case for every rank: inputs, results, expected. */
typedef struct kt_host {
  char *in[MG_KERN_MAX_RANKS], *out[MG_KERN_MAX_RANKS], *want;
} kt_host_t;

static void kt_host_alloc(kt_host_t *h, int n) {
  for (int r = 0; r < n; r++) {
    h->in[r] = malloc(KT_STAGING + 2 * KT_GUARD);
    h->out[r] = malloc(KT_STAGING + 2 * KT_GUARD);
    ASSERT(h->in[r] != NULL && h->out[r] != NULL);
  }
  h->want = malloc(KT_STAGING);
  ASSERT(h->want != NULL);
}

static void kt_host_free(kt_host_t *h, int n) {
  for (int r = 0; r < n; r++) {
    free(h->in[r]);
    free(h->out[r]);
  }
  free(h->want);
}

/* Where rank r's input and result are for the case's placement. */
static void kt_bufs(kt_world_t *w, const kt_case_t *c, int r, char **s, char **d) {
  const size_t es = mg_dtype_size(c->dt), shift = c->place == KT_MISALIGNED ? es : 0;
  *s = w->send[r] + shift;
  *d = c->place == KT_INPLACE ? *s : w->recv[r] + shift;
}

/* Writes every rank's input (and guard bytes of 0xA5 around the result). */
static void kt_stage(kt_world_t *w, kt_host_t *h, const kt_case_t *c) {
  const size_t bytes = c->count * mg_dtype_size(c->dt);
  for (int r = 0; r < w->n; r++) {
    char *s, *d;
    kt_bufs(w, c, r, &s, &d);
    ref_fill(h->in[r], c->count, c->dt, c->seed * 131 + (uint64_t)r);
    if ((c->op == MG_MAX || c->op == MG_MIN) && c->count > 4) {
      /* Element r: a NaN of rank r alone (the others' values must not win); element 4: a NaN
       * of every rank, each with its own payload (rank 0's wins, bit for bit in float32);
       * element 2: -0 on even ranks, +0 on odd ones. */
      const size_t at = (size_t)r % c->count;
      if (c->dt == MG_FLOAT32) {
        const uint32_t nan = 0x7fc00000u | (uint32_t)(r + 1);
        memcpy(h->in[r] + at * 4, &nan, 4);
        memcpy(h->in[r] + 4 * 4, &nan, 4);
      } else {
        const uint16_t nan = c->dt == MG_FLOAT16 ? 0x7e00 : 0x7fc0;
        memcpy(h->in[r] + at * 2, &nan, 2);
        memcpy(h->in[r] + 4 * 2, &nan, 2);
      }
      kt_put(h->in[r], 2, c->dt, r % 2 ? 0.0f : -0.0f);
    }
    memset(h->out[r], 0xA5, bytes + KT_GUARD);
    if (d != s) gu_put(&w->rk[r], d, h->out[r], bytes + KT_GUARD);
    else gu_put(&w->rk[r], s + bytes, h->out[r], KT_GUARD);
    gu_put(&w->rk[r], s, h->in[r], bytes);
  }
}

/* Reads every rank's result and checks it: the reference's bits, the same bits on every rank,
 * the guard untouched. Returns the number of wrong elements. */
static long kt_check(kt_world_t *w, kt_host_t *h, const kt_case_t *c, const char *label) {
  const size_t es = mg_dtype_size(c->dt), bytes = c->count * es;
  kt_expect(h->want, h->in, w->n, c->count, c->dt, c->op);
  long bad = 0;
  for (int r = 0; r < w->n; r++) {
    char *s, *d;
    kt_bufs(w, c, r, &s, &d);
    gu_get(&w->rk[r], h->out[r], d, bytes + KT_GUARD);
    gu_sync(&w->rk[r], GU_TIMEOUT_S, label);
    for (size_t i = 0; i < c->count; i++)
      if (memcmp(h->out[r] + i * es, h->want + i * es, es) != 0 ||
          memcmp(h->out[r] + i * es, h->out[0] + i * es, es) != 0) {
        if (bad++ < 5)
          fprintf(stderr, "%s: rank %d element %zu: got %.9g, want %.9g (rank 0: %.9g)\n", label, r,
                  i, kt_get(h->out[r], i, c->dt), kt_get(h->want, i, c->dt),
                  kt_get(h->out[0], i, c->dt));
      }
    for (size_t i = 0; i < KT_GUARD; i++)
      if ((unsigned char)h->out[r][bytes + i] != 0xA5) {
        if (bad++ < 5) fprintf(stderr, "%s: rank %d wrote guard byte %zu\n", label, r, i);
      }
  }
  return bad;
}

static void kt_label(const kt_case_t *c, int n, char *buf, size_t len) {
  snprintf(buf, len, "%d ranks, %s %s x %zu, %s, %s%s", n, mg__kern_algo_name(c->algo),
           mg_dtype_name(c->dt), c->count, mg_op_name(c->op), kt_place_names[c->place],
           c->lend == MG__KERN_LEND_YES ? ", lent" : "");
}

static void kt_launch(kt_world_t *w, const kt_case_t *c, int r) {
  char *s, *d;
  kt_bufs(w, c, r, &s, &d);
  kt_use(w, r);
  if (mg__kern_all_reduce(w->ctx[r], s, d, c->count, c->dt, c->op, c->algo, c->lend,
                          w->rk[r].stream) != MG_OK)
    FAIL("rank %d: %s", r, mg_last_error());
}

static long kt_run(kt_world_t *w, kt_host_t *h, const kt_case_t *c) {
  char label[160];
  kt_label(c, w->n, label, sizeof label);
  kt_stage(w, h, c);
  for (int r = 0; r < w->n; r++) gu_sync(&w->rk[r], GU_TIMEOUT_S, label); /* inputs in place */
  for (int r = 0; r < w->n; r++) kt_launch(w, c, r);
  return kt_check(w, h, c, label);
}

/* ---- modes -------------------------------------------------------------------------------- */

static const mg_dtype_t kt_dtypes[3] = {MG_FLOAT32, MG_FLOAT16, MG_BFLOAT16};
static const mg_op_t kt_ops[4] = {MG_SUM, MG_AVG, MG_MAX, MG_MIN};

static void kt_correct(int n) {
  kt_world_t w;
  kt_open(&w, n, 30.0, KT_BLOCKS);
  kt_host_t h;
  kt_host_alloc(&h, n);
  static const size_t small[] = {1, 2, 3, 7, 8, 9, 31, 33, 255, 1000, 4097, 8191, 65537};
  long bad = 0, cases = 0;
  uint64_t seed = 1;
  for (int t = 0; t < 3; t++)
    for (int o = 0; o < 4; o++)
      for (int a = MG__KERN_ONESHOT; a <= MG__KERN_LL; a++)
        for (int p = 0; p < 3; p++)
          for (int lend = 0; lend < (a == MG__KERN_LL ? 1 : 2); lend++) {
            const size_t es = mg_dtype_size(kt_dtypes[t]);
            const size_t limit = a == MG__KERN_LL ? KT_LL : KT_STAGING;
            /* Every small size; the large ones (up to the limit, the last element in place or
             * shifted by one) for sum and for float32, to keep the run short. */
            size_t sizes[20];
            int ns = 0;
            for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) sizes[ns++] = small[i];
            if (kt_ops[o] == MG_SUM || kt_dtypes[t] == MG_FLOAT32) {
              sizes[ns++] = 262143;
              sizes[ns++] = limit / es - (p == KT_MISALIGNED ? 1 : 0);
            }
            for (int i = 0; i < ns; i++) {
              kt_case_t c = {kt_dtypes[t], kt_ops[o], sizes[i], p, (mg__kern_algo_t)a, seed++,
                             lend ? MG__KERN_LEND_YES : MG__KERN_LEND_NONE};
              const long b = kt_run(&w, &h, &c);
              bad += b;
              cases++;
              /* Determinism: the same case again gives the same bits (checked again against the
               * reference, which is itself bit-exact), now at the other parity of the epochs. */
              if (b == 0 && (i % 5) == 0) bad += kt_run(&w, &h, &c), cases++;
            }
          }
  printf("correct %d ranks: %ld cases, %ld wrong elements\n", n, cases, bad);
  kt_host_free(&h, n);
  kt_close(&w);
  if (bad != 0) FAIL("%ld wrong elements", bad);
}

/* Two all_reduces per rank captured in a graph (send -> recv, then recv in place, so that the
 * second reduces n equal values), replayed with new inputs each time: one-shot lent (the second,
 * in place, staged), two-shot lent, push. */
static void kt_graph(int n) {
  if (mg__cuda.StreamBeginCapture == NULL || mg__cuda.GraphInstantiate == NULL)
    SKIP("the CUDA driver has no graph capture");
  kt_world_t w;
  kt_open(&w, n, 30.0, KT_BLOCKS);
  kt_host_t h;
  kt_host_alloc(&h, n);
  const kt_case_t cases[3] = {
      {MG_FLOAT32, MG_SUM, 50001, KT_OUTOFPLACE, MG__KERN_ONESHOT, 7, MG__KERN_LEND_YES},
      {MG_BFLOAT16, MG_AVG, 50001, KT_OUTOFPLACE, MG__KERN_TWOSHOT, 7, MG__KERN_LEND_YES},
      {MG_FLOAT16, MG_SUM, 50001, KT_OUTOFPLACE, MG__KERN_LL, 7, MG__KERN_LEND_NONE}};
  mg__CUgraph g[MG_KERN_MAX_RANKS];
  mg__CUgraphExec x[MG_KERN_MAX_RANKS];
  long bad = 0;
  for (int k = 0; k < 3; k++) {
    const kt_case_t *cc = &cases[k];
    for (int r = 0; r < n; r++) {
      char *s, *d;
      kt_bufs(&w, cc, r, &s, &d);
      kt_use(&w, r);
      GU_CU(mg__cuda.StreamBeginCapture(w.rk[r].stream, MG__CU_STREAM_CAPTURE_MODE_RELAXED),
            "cuStreamBeginCapture");
      if (mg__kern_all_reduce(w.ctx[r], s, d, cc->count, cc->dt, cc->op, cc->algo, cc->lend,
                              w.rk[r].stream) != MG_OK ||
          mg__kern_all_reduce(w.ctx[r], d, d, cc->count, cc->dt, cc->op, cc->algo, cc->lend,
                              w.rk[r].stream) != MG_OK)
        FAIL("capture, rank %d: %s", r, mg_last_error());
      GU_CU(mg__cuda.StreamEndCapture(w.rk[r].stream, &g[r]), "cuStreamEndCapture");
      GU_CU(mg__cuda.GraphInstantiate(&x[r], g[r], 0), "cuGraphInstantiateWithFlags");
    }
    for (int it = 0; it < 10; it++) {
      kt_case_t ci = *cc;
      ci.seed = 100 + (uint64_t)it;
      kt_stage(&w, &h, &ci);
      for (int r = 0; r < n; r++) gu_sync(&w.rk[r], GU_TIMEOUT_S, "graph inputs");
      for (int r = 0; r < n; r++) {
        kt_use(&w, r);
        GU_CU(mg__cuda.GraphLaunch(x[r], w.rk[r].stream), "cuGraphLaunch");
      }
      /* The reference of the pair: the first result, reduced again over n equal inputs. */
      kt_expect(h.want, h.in, n, ci.count, ci.dt, ci.op);
      char *again[MG_KERN_MAX_RANKS];
      for (int r = 0; r < n; r++) again[r] = h.want;
      char *want2 = malloc(KT_STAGING);
      ASSERT(want2 != NULL);
      kt_expect(want2, again, n, ci.count, ci.dt, ci.op);
      const size_t es = mg_dtype_size(ci.dt);
      for (int r = 0; r < n; r++) {
        char *s, *d;
        kt_bufs(&w, &ci, r, &s, &d);
        gu_get(&w.rk[r], h.out[r], d, ci.count * es);
        gu_sync(&w.rk[r], GU_TIMEOUT_S, "graph replay");
        for (size_t i = 0; i < ci.count; i++)
          if (memcmp(h.out[r] + i * es, want2 + i * es, es) != 0 && bad++ < 5)
            fprintf(stderr, "graph %d replay %d rank %d element %zu: got %.9g want %.9g\n", k, it,
                    r, i, kt_get(h.out[r], i, ci.dt), kt_get(want2, i, ci.dt));
      }
      free(want2);
    }
    for (int r = 0; r < n; r++) {
      kt_use(&w, r);
      GU_CU(mg__cuda.GraphExecDestroy(x[r]), "cuGraphExecDestroy");
      GU_CU(mg__cuda.GraphDestroy(g[r]), "cuGraphDestroy");
    }
  }
  printf("graph %d ranks: 3 graphs (one-shot lent, two-shot lent, push) x 10 replays of 2 "
         "all_reduces, %ld wrong elements\n", n, bad);
  kt_host_free(&h, n);
  kt_close(&w);
  if (bad != 0) FAIL("%ld wrong elements", bad);
}

/* Who lends in call k of kt_mixed: nobody (nothing exchanged), every rank, every other rank (the
 * others stage), nobody though addresses are exchanged; six calls each. */
static mg__kern_lend_t kt_mixed_lend(int k, int r) {
  switch ((k / 6) % 4) {
    case 0: return MG__KERN_LEND_NONE;
    case 1: return MG__KERN_LEND_YES;
    case 2: return r % 2 ? MG__KERN_LEND_YES : MG__KERN_LEND_MAYBE;
    default: return MG__KERN_LEND_MAYBE;
  }
}

/* Calls queued back to back: rank by rank, every call of a rank before the next rank's, so that
 * the ranks' kernels overlap in every way; sizes alternate between one block and KT_BLOCKS
 * blocks, algorithms (push, one-shot, two-shot) every second call, and every sixth call which
 * ranks lend their buffers (kt_mixed_lend). Each call has its own input and output. */
static void kt_mixed(int n) {
  enum { CALLS = 24 };
  const size_t big = 262144, small = 1000; /* float32 elements: 1 MiB, and 4000 bytes */
  kt_world_t w;
  kt_open(&w, n, 30.0, KT_BLOCKS);
  char *din[MG_KERN_MAX_RANKS], *dout[MG_KERN_MAX_RANKS];
  char *hin[MG_KERN_MAX_RANKS][CALLS];
  for (int r = 0; r < n; r++) {
    din[r] = gu_alloc(&w.rk[r], CALLS * big * 4);
    dout[r] = gu_alloc(&w.rk[r], CALLS * big * 4);
    for (int k = 0; k < CALLS; k++) {
      const size_t cnt = k % 2 ? small : big;
      hin[r][k] = malloc(big * 4);
      ASSERT(hin[r][k] != NULL);
      ref_fill(hin[r][k], cnt, MG_FLOAT32, 5000 + (uint64_t)(k * n + r));
      gu_put(&w.rk[r], din[r] + k * big * 4, hin[r][k], cnt * 4);
    }
    gu_sync(&w.rk[r], GU_TIMEOUT_S, "mixed inputs");
  }
  for (int r = 0; r < n; r++)
    for (int k = 0; k < CALLS; k++) {
      kt_use(&w, r);
      static const mg__kern_algo_t algos[3] = {MG__KERN_LL, MG__KERN_ONESHOT, MG__KERN_TWOSHOT};
      const mg__kern_algo_t algo = algos[(k / 2) % 3];
      if (mg__kern_all_reduce(w.ctx[r], din[r] + k * big * 4, dout[r] + k * big * 4,
                              k % 2 ? small : big, MG_FLOAT32, MG_SUM, algo, kt_mixed_lend(k, r),
                              w.rk[r].stream) != MG_OK)
        FAIL("rank %d call %d: %s", r, k, mg_last_error());
    }
  long bad = 0;
  float *want = malloc(big * 4), *got = malloc(big * 4);
  ASSERT(want != NULL && got != NULL);
  for (int k = 0; k < CALLS; k++) {
    const size_t cnt = k % 2 ? small : big;
    char *in[MG_KERN_MAX_RANKS];
    for (int r = 0; r < n; r++) in[r] = hin[r][k];
    kt_expect(want, in, n, cnt, MG_FLOAT32, MG_SUM);
    for (int r = 0; r < n; r++) {
      gu_get(&w.rk[r], got, dout[r] + k * big * 4, cnt * 4);
      gu_sync(&w.rk[r], GU_TIMEOUT_S, "mixed results");
      for (size_t i = 0; i < cnt; i++)
        if (memcmp(&got[i], &want[i], 4) != 0 && bad++ < 5)
          fprintf(stderr, "mixed: call %d rank %d element %zu: got %.9g want %.9g\n", k, r, i,
                  (double)got[i], (double)want[i]);
    }
  }
  printf("mixed %d ranks: %d calls queued back to back, grids of 1 and %d blocks, %ld wrong "
         "elements\n", n, CALLS, KT_BLOCKS, bad);
  free(want);
  free(got);
  for (int r = 0; r < n; r++) {
    for (int k = 0; k < CALLS; k++) free(hin[r][k]);
    gu_free(&w.rk[r], din[r]);
    gu_free(&w.rk[r], dout[r]);
  }
  kt_close(&w);
  if (bad != 0) FAIL("%ld wrong elements", bad);
}

/* Rank 0 never launches; the others wait on the GPU until their deadline (timeout) or the abort
 * (abort). Then the GPU must still work. */
static void kt_missing(int n, int abort_them, mg__kern_algo_t algo) {
  const double timeout = abort_them ? 30.0 : 1.0;
  kt_world_t w;
  kt_open(&w, n, timeout, KT_BLOCKS);
  kt_case_t c = {MG_FLOAT32, MG_SUM, 100000, KT_OUTOFPLACE, algo, 3, MG__KERN_LEND_YES};
  const double t0 = kt_now();
  for (int r = 1; r < n; r++) kt_launch(&w, &c, r);
  if (abort_them) {
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    for (int r = 1; r < n; r++) ASSERT(!gu_done(&w.rk[r], "before the abort"));
    for (int r = 1; r < n; r++) mg__kern_ctx_abort(w.ctx[r]);
  }
  double ended = 0;
  for (int r = 1; r < n; r++) {
    gu_sync(&w.rk[r], timeout + 10.0, abort_them ? "waiting after the abort" : "waiting for the timeout");
    ended = kt_now() - t0;
    const mg_status_t st = mg__kern_ctx_status(w.ctx[r]);
    printf("rank %d ended after %.3f s: %s: %s\n", r, ended, mg_status_name(st), mg_last_error());
    ASSERT_EQ(st, abort_them ? MG_ERR_ABORTED : MG_ERR_TIMED_OUT);
    /* The context is broken for good: a later launch is refused with the same status. */
    kt_case_t again = c;
    char *s, *d;
    kt_bufs(&w, &again, r, &s, &d);
    kt_use(&w, r);
    ASSERT_EQ(mg__kern_all_reduce(w.ctx[r], s, d, 8, MG_FLOAT32, MG_SUM, MG__KERN_ONESHOT,
                                  MG__KERN_LEND_NONE,
                                  w.rk[r].stream), abort_them ? MG_ERR_ABORTED : MG_ERR_TIMED_OUT);
  }
  if (abort_them) ASSERT_LT_F(ended, 0.3 + 2.0);
  else ASSERT_IN_F(ended, timeout * 0.9, timeout + 2.0);
  ASSERT_EQ(mg__kern_ctx_status(w.ctx[0]), MG_OK);
  kt_close(&w);
  /* The GPU is still usable: new contexts, a correct all_reduce. */
  kt_open(&w, n, 30.0, KT_BLOCKS);
  kt_host_t h;
  kt_host_alloc(&h, n);
  const long bad = kt_run(&w, &h, &c);
  kt_host_free(&h, n);
  kt_close(&w);
  ASSERT_EQ(bad, 0);
  printf("%s %d ranks (%s): the others ended %s after %.3f s; a new all_reduce is correct\n",
         abort_them ? "abort" : "timeout", n, mg__kern_algo_name(algo),
         abort_them ? "MG_ERR_ABORTED" : "MG_ERR_TIMED_OUT", ended);
}

/* The elements of out (n of dt) whose bits differ from want's, printing the first of them
 * with label (a process's rank and case) while *shown < 5. */
static long kt_diff(const char *out, const char *want, size_t n, mg_dtype_t dt, const char *label,
                    long *shown) {
  const size_t es = mg_dtype_size(dt);
  long bad = 0;
  for (size_t k = 0; k < n; k++) {
    if (memcmp(out + k * es, want + k * es, es) == 0) continue;
    bad++;
    if ((*shown)++ < 5)
      fprintf(stderr, "%s element %zu: got %.9g want %.9g\n", label, k, kt_get(out, k, dt),
              kt_get(want, k, dt));
  }
  return bad;
}

/* The host side of a test between processes: every rank's input (np of bytes), the expected
 * result and the result read back. */
typedef struct kt_io {
  char *in[MG_KERN_MAX_RANKS], *want, *out;
} kt_io_t;

static void kt_io_alloc(kt_io_t *io, int np, size_t bytes) {
  for (int q = 0; q < np; q++) {
    io->in[q] = malloc(bytes);
    ASSERT(io->in[q] != NULL);
  }
  io->want = malloc(bytes);
  io->out = malloc(bytes);
  ASSERT(io->want != NULL && io->out != NULL);
}

static void kt_io_free(kt_io_t *io, int np) {
  for (int q = 0; q < np; q++) free(io->in[q]);
  free(io->want);
  free(io->out);
}

/* Two processes on the one GPU; records exchanged through shared memory made before the fork
 * (no CUDA in the parent). Each computes the reference from both ranks' seeds. */
typedef struct kt_shared {
  _Atomic int ready;
  mg__kern_peer_t rec[MG_KERN_MAX_RANKS];
} kt_shared_t;

static int kt_proc(int r, int np, void *arg) {
  kt_shared_t *sh = arg;
  gu_dev_t dev;
  gu_dev_open(&dev, r % kt_gpus);
  mg__kern_ctx_t *ctx;
  if (mg__kern_ctx_create(r, np, KT_STAGING, KT_LL, KT_BLOCKS, 30.0, &ctx, &sh->rec[r]) != MG_OK)
    FAIL("rank %d: %s", r, mg_last_error());
  atomic_fetch_add(&sh->ready, 1);
  for (const double t0 = kt_now(); atomic_load(&sh->ready) < np;)
    if (kt_now() - t0 > 60) FAIL("rank %d: the peer process did not publish its record", r);
  if (mg__kern_ctx_connect(ctx, sh->rec) != MG_OK) FAIL("rank %d: %s", r, mg_last_error());
  char *buf = gu_alloc(&dev, KT_STAGING);
  kt_io_t io;
  kt_io_alloc(&io, np, KT_STAGING);
  long bad = 0, shown = 0;
  int cases = 0;
  static const size_t sizes[] = {1, 9, 1000, 65537, 262144};
  for (int t = 0; t < 3; t++)
    for (int a = MG__KERN_ONESHOT; a <= MG__KERN_LL; a++)
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const mg_dtype_t dt = kt_dtypes[t];
        const mg_op_t op = kt_ops[(t + (int)i) % 4];
        const size_t n = sizes[i], es = mg_dtype_size(dt);
        for (int q = 0; q < np; q++)
          ref_fill(io.in[q], n, dt, 9000 + (uint64_t)(cases * np + q));
        kt_expect(io.want, io.in, np, n, dt, op);
        gu_put(&dev, buf, io.in[r], n * es);
        if (mg__kern_all_reduce(ctx, buf, buf, n, dt, op, (mg__kern_algo_t)a, MG__KERN_LEND_NONE,
                                dev.stream) != MG_OK)
          FAIL("rank %d: %s", r, mg_last_error());
        gu_get(&dev, io.out, buf, n * es);
        gu_sync(&dev, GU_TIMEOUT_S, "an all_reduce between processes");
        char label[64];
        snprintf(label, sizeof label, "procs rank %d case %d", r, cases);
        bad += kt_diff(io.out, io.want, n, dt, label, &shown);
        cases++;
      }
  printf("procs: rank %d (pid %d): %d cases through CUDA IPC, %ld wrong elements\n", r,
         (int)getpid(), cases, bad);
  gu_free(&dev, buf);
  mg__kern_ctx_destroy(ctx);
  gu_dev_close(&dev);
  kt_io_free(&io, np);
  return bad == 0 ? 0 : 1;
}

/* Runs fn(r, np, arg) in np child processes and fails unless every one exits 0. */
static void kt_children(int np, int (*fn)(int r, int np, void *arg), void *arg) {
  pid_t pid[MG_KERN_MAX_RANKS];
  for (int r = 0; r < np; r++) {
    fflush(stdout);
    pid[r] = fork();
    ASSERT(pid[r] >= 0);
    if (pid[r] == 0) _exit(fn(r, np, arg));
  }
  int fails = 0;
  for (int r = 0; r < np; r++) {
    int status = 0;
    ASSERT_EQ(waitpid(pid[r], &status, 0), pid[r]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fails++;
  }
  ASSERT_EQ(fails, 0);
}

static void kt_procs(int np) {
  kt_shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT(sh != MAP_FAILED);
  memset(sh, 0, sizeof *sh);
  kt_children(np, kt_proc, sh);
}

/* ---- registered buffers lent across processes ----------------------------------------------- */

#define KT_REGS 3
typedef struct kt_lend_shared {
  _Atomic int arrived; /* the processes' barrier */
  mg__kern_peer_t rec[MG_KERN_MAX_RANKS];
  mg__kern_reg_rec_t reg[KT_REGS][MG_KERN_MAX_RANKS];
  uint32_t mask[KT_REGS][MG_KERN_MAX_RANKS];
} kt_lend_shared_t;

/* Barrier number k of np processes (k = 1, 2, ...), bounded. */
static void kt_bar(kt_lend_shared_t *sh, int np, int k, int r) {
  atomic_fetch_add(&sh->arrived, 1);
  for (const double t0 = kt_now(); atomic_load(&sh->arrived) < np * k;)
    if (kt_now() - t0 > 60) FAIL("rank %d: the other processes did not reach barrier %d", r, k);
}

/* A communicator of this process alone, on rank r's GPU: for mg_mem_alloc's memory
 * (ncclMemAlloc's cuMem allocations, which are shared as file descriptors). */
static mg_comm_t *kt_alloc_comm(int r) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  const int ordinal = r % kt_gpus;
  mg_comm_t *one = NULL;
  ASSERT_OK(mg_comm_init_all(&cfg, 1, &ordinal, &one));
  return one;
}

/* Rank r's context, its record published and every rank's mapped (barrier *bar). */
static mg__kern_ctx_t *kt_join(kt_lend_shared_t *sh, int r, int np, double timeout, int *bar) {
  mg__kern_ctx_t *ctx;
  if (mg__kern_ctx_create(r, np, KT_STAGING, KT_LL, KT_BLOCKS, timeout, &ctx, &sh->rec[r]) !=
      MG_OK)
    FAIL("rank %d: %s", r, mg_last_error());
  kt_bar(sh, np, ++*bar, r);
  if (mg__kern_ctx_connect(ctx, sh->rec) != MG_OK) FAIL("rank %d: %s", r, mg_last_error());
  return ctx;
}

/* Registration k of [buf, buf + bytes) on every rank (export, import, commit: barriers *bar);
 * whether this rank's buffer is lent from now on. */
static int kt_register(kt_lend_shared_t *sh, mg__kern_ctx_t *ctx, int k, void *buf, size_t bytes,
                       int r, int np, int *bar) {
  ASSERT_OK(mg__kern_reg_export(ctx, buf, bytes, &sh->reg[k][r]));
  kt_bar(sh, np, ++*bar, r);
  ASSERT_OK(mg__kern_reg_import(ctx, sh->reg[k], kt_now() + 30, &sh->mask[k][r]));
  kt_bar(sh, np, ++*bar, r);
  return mg__kern_reg_commit(ctx, sh->reg[k], sh->mask[k]);
}

/* One process of kt_lend: registers three buffers with its context and runs all_reduces from
 * them with MG__KERN_LEND_MAYBE, so that only what the registrations vouch for is lent. */
static int kt_lender(int r, int np, void *arg) {
  kt_lend_shared_t *sh = arg;
  int bar = 0;
  gu_dev_t dev;
  gu_dev_open(&dev, r % kt_gpus);
  mg_comm_t *one = kt_alloc_comm(r);
  const size_t half = KT_STAGING;
  char *a = NULL, *b = gu_alloc(&dev, 2 * half), *c = gu_alloc(&dev, 2 * half),
       *d = gu_alloc(&dev, 2 * half), *host = malloc(4096);
  ASSERT_OK(mg_mem_alloc(one, 2 * half, (void **)&a));
  ASSERT(host != NULL);
  mg__kern_ctx_t *ctx = kt_join(sh, r, np, 30.0, &bar);
  /* 0: mg_mem_alloc's cuMem memory (a descriptor through the boxes); 1: cuMemAlloc's (an IPC
   * handle); 2: rank 0 a device buffer, the others host memory, which cannot be lent. */
  char *const regbuf[KT_REGS] = {a, b, r == 0 ? c : host};
  const size_t regbytes[KT_REGS] = {2 * half, 2 * half, r == 0 ? 2 * half : 4096};
  int lendable[KT_REGS];
  for (int k = 0; k < KT_REGS; k++) {
    lendable[k] = kt_register(sh, ctx, k, regbuf[k], regbytes[k], r, np, &bar);
    if (sh->reg[k][r].slot < 0)
      printf("lend: rank %d registration %d not lendable: %s\n", r, k, sh->reg[k][r].why);
  }
  ASSERT_EQ(lendable[0], 1);
  ASSERT_EQ(lendable[1], 1);
  ASSERT_EQ(lendable[2], r == 0);
  if (r > 0) ASSERT_CONTAINS(sh->reg[2][r].why, "not within one device allocation");

  kt_io_t io;
  kt_io_alloc(&io, np, half);
  long bad = 0, shown = 0;
  int cases = 0;
  unsigned long long lent_want = 0;
  static const size_t sizes[] = {1, 9, 1000, 65537, 262144};
  /* Placements: 0 out of place in a; 1 in place in b; 2 from b into a; 3 rank 0 out of place in
   * c (lent by rank 0 only), the others in d (never registered); 4 (after the release) in a. */
  for (int phase = 0; phase < 2; phase++) {
    if (phase == 1) { /* every registration released: nothing is lent any more */
      gu_sync(&dev, GU_TIMEOUT_S, "the lent calls");
      kt_bar(sh, np, ++bar, r);
      for (int k = 0; k < KT_REGS; k++) mg__kern_reg_release(ctx, sh->reg[k][r].seq);
      kt_bar(sh, np, ++bar, r);
    }
    for (int t = 0; t < 3; t++)
      for (int alg = MG__KERN_ONESHOT; alg <= MG__KERN_TWOSHOT; alg++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
          for (int p = phase == 0 ? 0 : 4; p < (phase == 0 ? 4 : 5); p++) {
            const mg_dtype_t dt = kt_dtypes[t];
            const mg_op_t op = kt_ops[(t + (int)i + p) % 4];
            const size_t n = sizes[i], es = mg_dtype_size(dt);
            char *src = p == 0 || p == 4 ? a : p == 1 || p == 2 ? b : r == 0 ? c : d;
            char *dst = p == 1 ? b : p == 2 ? a : src + half;
            for (int q = 0; q < np; q++)
              ref_fill(io.in[q], n, dt, 7000 + (uint64_t)(cases * np + q));
            kt_expect(io.want, io.in, np, n, dt, op);
            gu_put(&dev, src, io.in[r], n * es);
            if (mg__kern_all_reduce(ctx, src, dst, n, dt, op, (mg__kern_algo_t)alg,
                                    MG__KERN_LEND_MAYBE, dev.stream) != MG_OK)
              FAIL("rank %d: %s", r, mg_last_error());
            /* Lent: registered (not p 3 on ranks > 0, not after the release), and the algorithm
             * can (one-shot only with send and recv apart). */
            lent_want += p < 3 || (p == 3 && r == 0) ? (alg == MG__KERN_TWOSHOT || p != 1) : 0;
            gu_get(&dev, io.out, dst, n * es);
            gu_sync(&dev, GU_TIMEOUT_S, "an all_reduce of lent buffers between processes");
            char label[96];
            snprintf(label, sizeof label, "lend rank %d case %d (%s, %s, %zu, placement %d)", r,
                     cases, mg_dtype_name(dt), mg__kern_algo_name((mg__kern_algo_t)alg), n, p);
            bad += kt_diff(io.out, io.want, n, dt, label, &shown);
            cases++;
          }
  }
  const unsigned long long lent = mg__kern_ctx_lent(ctx);
  printf("lend: rank %d (pid %d): %d cases, %llu of them lent registered buffers (want %llu), "
         "%ld wrong elements\n", r, (int)getpid(), cases, lent, lent_want, bad);
  mg__kern_ctx_destroy(ctx);
  ASSERT_OK(mg_mem_free(a));
  gu_free(&dev, b);
  gu_free(&dev, c);
  gu_free(&dev, d);
  ASSERT_OK(mg_comm_destroy(one));
  gu_dev_close(&dev);
  kt_io_free(&io, np);
  free(host);
  return bad == 0 && lent == lent_want ? 0 : 1;
}

/* One process of kt_unmapped: every rank registers cuMemAlloc memory; rank 1 alone releases it
 * (a deregistration on one rank only), then every rank runs an all_reduce from it. Rank 0 still
 * lends: rank 1's kernel must give up with MG_ERR_INVALID_USAGE instead of reading memory it no
 * longer maps, and rank 0's must end MG_ERR_TIMED_OUT (rank 1 never says it is done). */
static int kt_unmapper(int r, int np, void *arg) {
  kt_lend_shared_t *sh = arg;
  int bar = 0;
  const double timeout = 2.0;
  gu_dev_t dev;
  gu_dev_open(&dev, r % kt_gpus);
  const size_t bytes = 1 << 20;
  char *b = gu_alloc(&dev, 2 * bytes);
  mg__kern_ctx_t *ctx = kt_join(sh, r, np, timeout, &bar);
  ASSERT_EQ(kt_register(sh, ctx, 0, b, 2 * bytes, r, np, &bar), 1);
  if (r == 1) mg__kern_reg_release(ctx, sh->reg[0][r].seq);
  kt_bar(sh, np, ++bar, r);
  const double t0 = kt_now();
  ASSERT_OK(mg__kern_all_reduce(ctx, b, b + bytes, bytes / 4, MG_FLOAT32, MG_SUM,
                                MG__KERN_TWOSHOT, MG__KERN_LEND_MAYBE, dev.stream));
  gu_sync(&dev, timeout + 10, "an all_reduce that must give up");
  const double took = kt_now() - t0;
  const mg_status_t st = mg__kern_ctx_status(ctx);
  printf("unmapped: rank %d ended after %.2f s: %s: %s\n", r, took, mg_status_name(st),
         mg_last_error());
  ASSERT_EQ(st, r == 1 ? MG_ERR_INVALID_USAGE : MG_ERR_TIMED_OUT);
  if (r == 1) ASSERT_CONTAINS(mg_last_error(), "had deregistered");
  ASSERT_LT_F(took, timeout + 5);
  mg__kern_ctx_destroy(ctx);
  gu_free(&dev, b);
  gu_dev_close(&dev);
  return 0;
}

/* Aborts ctx after 0.3 s (a thread of kt_regwaiter's rank 0). */
static void *kt_abort_later(void *ctx) {
  struct timespec ts = {0, 300000000};
  nanosleep(&ts, NULL);
  mg__kern_ctx_abort(ctx);
  return NULL;
}

/* One process of kt_regwait: both ranks export mg_mem_alloc's memory (a descriptor to pass), but
 * rank 1 never sends its own: rank 0's import ends at its deadline (MG_ERR_TIMED_OUT), and, in a
 * second registration, at an abort (MG_ERR_ABORTED) long before it. */
static int kt_regwaiter(int r, int np, void *arg) {
  kt_lend_shared_t *sh = arg;
  int bar = 0;
  gu_dev_t dev;
  gu_dev_open(&dev, r % kt_gpus);
  mg_comm_t *one = kt_alloc_comm(r);
  char *a = NULL;
  ASSERT_OK(mg_mem_alloc(one, 1 << 20, (void **)&a));
  mg__kern_ctx_t *ctx = kt_join(sh, r, np, 30.0, &bar);
  for (int k = 0; k < 2; k++) {
    ASSERT_OK(mg__kern_reg_export(ctx, a, 1 << 20, &sh->reg[k][r]));
    ASSERT(sh->reg[k][r].slot >= 0);
    kt_bar(sh, np, ++bar, r);
    if (r == 0) {
      pthread_t t;
      if (k == 1) ASSERT_EQ(pthread_create(&t, NULL, kt_abort_later, ctx), 0);
      const double t0 = kt_now();
      const mg_status_t st = mg__kern_reg_import(ctx, sh->reg[k], t0 + (k == 0 ? 0.5 : 30),
                                                 &sh->mask[k][r]);
      const double took = kt_now() - t0;
      if (k == 1) ASSERT_EQ(pthread_join(t, NULL), 0);
      printf("regwait: rank 0, %s: ended after %.2f s: %s: %s\n",
             k == 0 ? "deadline 0.5 s" : "abort after 0.3 s", took, mg_status_name(st),
             mg_last_error());
      ASSERT_EQ(st, k == 0 ? MG_ERR_TIMED_OUT : MG_ERR_ABORTED);
      ASSERT_CONTAINS(mg_last_error(), "waiting for 1 peers' buffers");
      if (k == 0) ASSERT_IN_F(took, 0.45, 2.0);
      else ASSERT_IN_F(took, 0.25, 1.0);
    }
    mg__kern_reg_release(ctx, sh->reg[k][r].seq);
    kt_bar(sh, np, ++bar, r);
  }
  mg__kern_ctx_destroy(ctx);
  ASSERT_OK(mg_mem_free(a));
  ASSERT_OK(mg_comm_destroy(one));
  gu_dev_close(&dev);
  return 0;
}

/* np processes running fn (kt_lender, kt_unmapper, kt_regwaiter) with shared records. */
static void kt_lend(int np, int (*fn)(int r, int np, void *arg)) {
  kt_lend_shared_t *sh =
      mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT(sh != MAP_FAILED);
  memset(sh, 0, sizeof *sh);
  kt_children(np, fn, sh);
}

/* One rank of kt_ncclprocs: a symmetric registration of mg_mem_alloc's memory, then
 * all_reduces from it (lent in place: counted) and from a buffer never registered (staged),
 * checked against the host's reduction of every rank's input. */
static int kt_ncclrank(int r, int np, void *arg) {
  const mg_unique_id_t *uid = arg;
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.device = r;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_rank(&cfg, np, uid, r, &comm));
  gu_dev_t dev;
  gu_dev_open(&dev, r);
  const size_t n = 1 << 18, bytes = n * 4; /* 1 MiB of float32, under the default limit */
  char *a = NULL, *plain = gu_alloc(&dev, 2 * bytes);
  ASSERT_OK(mg_mem_alloc(comm, 2 * bytes, (void **)&a));
  mg_reg_t *reg = NULL;
  ASSERT_OK(mg_comm_register(comm, a, 2 * bytes, MG_REGISTER_SYMMETRIC, &reg));
  kt_io_t io;
  kt_io_alloc(&io, np, bytes);
  long bad = 0, shown = 0;
  for (int k = 0; k < 6; k++) {
    char *src = k < 4 ? a : plain, *dst = src + bytes; /* apart: every algorithm can lend */
    for (int q = 0; q < np; q++) ref_fill(io.in[q], n, MG_FLOAT32, 500 + (uint64_t)(k * np + q));
    kt_expect(io.want, io.in, np, n, MG_FLOAT32, MG_SUM);
    gu_put(&dev, src, io.in[r], bytes);
    ASSERT_OK(mg_all_reduce(src, dst, n, MG_FLOAT32, MG_SUM, comm, (mg_stream_t)dev.stream));
    gu_get(&dev, io.out, dst, bytes);
    gu_sync(&dev, GU_TIMEOUT_S, "an all_reduce of the NCCL backend's kernels");
    char label[64];
    snprintf(label, sizeof label, "ncclprocs rank %d call %d", r, k);
    bad += kt_diff(io.out, io.want, n, MG_FLOAT32, label, &shown);
  }
  const unsigned long long lent = mg__nccl_kern_lent(comm);
  printf("ncclprocs: rank %d: 6 all_reduces of %zu bytes, %llu lent registered buffers (want 4), "
         "%ld wrong elements\n", r, bytes, lent, bad);
  ASSERT_OK(mg_comm_deregister(comm, reg));
  ASSERT_OK(mg_comm_finalize(comm));
  ASSERT_OK(mg_comm_destroy(comm));
  ASSERT_OK(mg_mem_free(a));
  gu_free(&dev, plain);
  gu_dev_close(&dev);
  kt_io_free(&io, np);
  return bad == 0 && lent == 4 ? 0 : 1;
}

/* N processes on N GPUs, one NCCL communicator: the backend's registration path (needs N GPUs:
 * NCCL refuses two ranks on one). Run with MGCOMM_ALGO=mgcomm and
 * MGCOMM_KERNELS_INPLACE_BYTES=0. */
static void kt_ncclprocs(int np) {
  static mg_unique_id_t uid; /* the children's copies */
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_NCCL, &uid));
  kt_children(np, kt_ncclrank, &uid);
}

/* The NCCL backend with MGCOMM_ALGO=mgcomm (set by the caller): a communicator of one rank runs
 * float32 all_reduces through the kernels, correctly, in place and not, and refuses what they
 * cannot run (int32; a message above the staging size), which NCCL alone would have run. */
static void kt_nccl(void) {
  const char *algo = getenv("MGCOMM_ALGO");
  if (algo == NULL || strcmp(algo, "mgcomm") != 0) FAIL("run with MGCOMM_ALGO=mgcomm");
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_all(&cfg, 1, NULL, &comm));
  gu_dev_t d;
  gu_dev_open(&d, 0);
  const size_t n = 100003;
  float *h = malloc(n * 4), *o = malloc(n * 4);
  ASSERT(h != NULL && o != NULL);
  for (size_t i = 0; i < n; i++) h[i] = (float)i * 0.25f - 7.0f;
  char *buf = gu_alloc(&d, n * 4 * 2 + (8u << 20));
  gu_put(&d, buf, h, n * 4);
  gu_sync(&d, GU_TIMEOUT_S, "input");
  for (int k = 0; k < 3; k++) {
    ASSERT_OK(mg_all_reduce(buf, buf + n * 4, n, MG_FLOAT32, MG_SUM, comm, (mg_stream_t)d.stream));
    ASSERT_OK(mg_all_reduce(buf, buf, n, MG_FLOAT32, MG_AVG, comm, (mg_stream_t)d.stream));
  }
  gu_get(&d, o, buf + n * 4, n * 4);
  gu_sync(&d, GU_TIMEOUT_S, "result");
  for (size_t i = 0; i < n; i++)
    if (o[i] != h[i]) FAIL("element %zu: %g, want %g", i, (double)o[i], (double)h[i]);
  ASSERT_EQ(mg_all_reduce(buf, buf, n, MG_INT32, MG_SUM, comm, (mg_stream_t)d.stream),
            MG_ERR_NOT_SUPPORTED);
  printf("nccl: int32 refused: %s\n", mg_last_error());
  ASSERT_EQ(mg_all_reduce(buf, buf, (8u << 20) / 4, MG_FLOAT32, MG_SUM, comm,
                          (mg_stream_t)d.stream), MG_ERR_NOT_SUPPORTED);
  printf("nccl: 8 MiB refused: %s\n", mg_last_error());
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comm, &state));
  ASSERT_EQ(state, MG_COMM_READY); /* a refusal is the caller's error: the comm stays */
  ASSERT_OK(mg_comm_finalize(comm));
  ASSERT_OK(mg_comm_destroy(comm));
  gu_free(&d, buf);
  gu_dev_close(&d);
  free(h);
  free(o);
  printf("nccl: 6 float32 all_reduces of one rank through the kernels, correct\n");
}

/* ---- bench: one GPU, for information ------------------------------------------------------ */

/* Microseconds per all_reduce of `bytes` float32 on n ranks sharing the GPU: eager (one thread
 * launches every rank's kernel, iters times) and in CUDA graphs of iters launches per rank. In
 * place; lent: one-shot out of place (in place it cannot lend), two-shot in place. */
static void kt_time(kt_world_t *w, size_t bytes, mg__kern_algo_t algo, int lent, double *eager,
                    double *graph) {
  const int iters = 100;
  const size_t count = bytes / 4;
  mg__CUevent e0, e1;
  kt_use(w, 0); /* the events live on rank 0's GPU */
  GU_CU(mg__cuda.EventCreate(&e0, MG__CU_EVENT_DEFAULT), "cuEventCreate");
  GU_CU(mg__cuda.EventCreate(&e1, MG__CU_EVENT_DEFAULT), "cuEventCreate");
  kt_case_t c = {MG_FLOAT32, MG_SUM, count,
                 lent && algo == MG__KERN_ONESHOT ? KT_OUTOFPLACE : KT_INPLACE, algo, 1,
                 lent ? MG__KERN_LEND_YES : MG__KERN_LEND_NONE};
  for (int r = 0; r < w->n; r++) kt_launch(w, &c, r); /* warm up */
  for (int r = 0; r < w->n; r++) gu_sync(&w->rk[r], GU_TIMEOUT_S, "bench warm-up");
  kt_use(w, 0);
  GU_CU(mg__cuda.EventRecord(e0, w->rk[0].stream), "cuEventRecord");
  for (int i = 0; i < iters; i++)
    for (int r = 0; r < w->n; r++) kt_launch(w, &c, r);
  kt_use(w, 0);
  GU_CU(mg__cuda.EventRecord(e1, w->rk[0].stream), "cuEventRecord");
  for (int r = 0; r < w->n; r++) gu_sync(&w->rk[r], GU_TIMEOUT_S, "bench eager");
  float ms = 0;
  GU_CU(mg__cuda.EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
  *eager = 1e3 * ms / iters;
  mg__CUgraph g[MG_KERN_MAX_RANKS];
  mg__CUgraphExec x[MG_KERN_MAX_RANKS];
  for (int r = 0; r < w->n; r++) {
    kt_use(w, r);
    GU_CU(mg__cuda.StreamBeginCapture(w->rk[r].stream, MG__CU_STREAM_CAPTURE_MODE_RELAXED), "capture");
    for (int i = 0; i < iters; i++) kt_launch(w, &c, r);
    kt_use(w, r);
    GU_CU(mg__cuda.StreamEndCapture(w->rk[r].stream, &g[r]), "end capture");
    GU_CU(mg__cuda.GraphInstantiate(&x[r], g[r], 0), "instantiate");
  }
  for (int r = 0; r < w->n; r++) { /* warm up */
    kt_use(w, r);
    GU_CU(mg__cuda.GraphLaunch(x[r], w->rk[r].stream), "launch");
  }
  for (int r = 0; r < w->n; r++) gu_sync(&w->rk[r], GU_TIMEOUT_S, "bench graph warm-up");
  kt_use(w, 0);
  GU_CU(mg__cuda.EventRecord(e0, w->rk[0].stream), "cuEventRecord");
  for (int r = 0; r < w->n; r++) {
    kt_use(w, r);
    GU_CU(mg__cuda.GraphLaunch(x[r], w->rk[r].stream), "launch");
  }
  kt_use(w, 0);
  GU_CU(mg__cuda.EventRecord(e1, w->rk[0].stream), "cuEventRecord");
  for (int r = 0; r < w->n; r++) gu_sync(&w->rk[r], GU_TIMEOUT_S, "bench graph");
  GU_CU(mg__cuda.EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
  *graph = 1e3 * ms / iters;
  for (int r = 0; r < w->n; r++) {
    kt_use(w, r);
    GU_CU(mg__cuda.GraphExecDestroy(x[r]), "cuGraphExecDestroy");
    GU_CU(mg__cuda.GraphDestroy(g[r]), "cuGraphDestroy");
  }
  kt_use(w, 0);
  GU_CU(mg__cuda.EventDestroy(e0), "cuEventDestroy");
  GU_CU(mg__cuda.EventDestroy(e1), "cuEventDestroy");
}

/* NCCL's all_reduce on a communicator of one rank (the only one one GPU allows), eager and in a
 * graph, float32 sum in place. */
static void kt_time_nccl(gu_dev_t *d, void *buf, size_t bytes, double *eager, double *graph) {
  static mg__ncclComm_t comm;
  if (comm == NULL) {
    int dev = 0;
    if (mg__nccl.CommInitAll(&comm, 1, &dev) != MG__ncclSuccess) FAIL("ncclCommInitAll failed");
  }
  const int iters = 100;
  mg__CUevent e0, e1;
  GU_CU(mg__cuda.EventCreate(&e0, MG__CU_EVENT_DEFAULT), "cuEventCreate");
  GU_CU(mg__cuda.EventCreate(&e1, MG__CU_EVENT_DEFAULT), "cuEventCreate");
  const mg__ncclDataType_t f32 = (mg__ncclDataType_t)MG_FLOAT32;
  const mg__ncclRedOp_t sum = (mg__ncclRedOp_t)MG_SUM;
  for (int i = 0; i < 10; i++) (void)mg__nccl.AllReduce(buf, buf, bytes / 4, f32, sum, comm, d->stream);
  gu_sync(d, GU_TIMEOUT_S, "nccl warm-up");
  GU_CU(mg__cuda.EventRecord(e0, d->stream), "cuEventRecord");
  for (int i = 0; i < iters; i++)
    if (mg__nccl.AllReduce(buf, buf, bytes / 4, f32, sum, comm, d->stream) != MG__ncclSuccess)
      FAIL("ncclAllReduce failed");
  GU_CU(mg__cuda.EventRecord(e1, d->stream), "cuEventRecord");
  gu_sync(d, GU_TIMEOUT_S, "nccl eager");
  float ms = 0;
  GU_CU(mg__cuda.EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
  *eager = 1e3 * ms / iters;
  mg__CUgraph g;
  mg__CUgraphExec x;
  GU_CU(mg__cuda.StreamBeginCapture(d->stream, MG__CU_STREAM_CAPTURE_MODE_RELAXED), "capture");
  for (int i = 0; i < iters; i++)
    (void)mg__nccl.AllReduce(buf, buf, bytes / 4, f32, sum, comm, d->stream);
  GU_CU(mg__cuda.StreamEndCapture(d->stream, &g), "end capture");
  GU_CU(mg__cuda.GraphInstantiate(&x, g, 0), "instantiate");
  GU_CU(mg__cuda.GraphLaunch(x, d->stream), "launch");
  gu_sync(d, GU_TIMEOUT_S, "nccl graph warm-up");
  GU_CU(mg__cuda.EventRecord(e0, d->stream), "cuEventRecord");
  GU_CU(mg__cuda.GraphLaunch(x, d->stream), "launch");
  GU_CU(mg__cuda.EventRecord(e1, d->stream), "cuEventRecord");
  gu_sync(d, GU_TIMEOUT_S, "nccl graph");
  GU_CU(mg__cuda.EventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
  *graph = 1e3 * ms / iters;
  GU_CU(mg__cuda.GraphExecDestroy(x), "cuGraphExecDestroy");
  GU_CU(mg__cuda.GraphDestroy(g), "cuGraphDestroy");
  GU_CU(mg__cuda.EventDestroy(e0), "cuEventDestroy");
  GU_CU(mg__cuda.EventDestroy(e1), "cuEventDestroy");
}

static void kt_bench(void) {
  if (mg__cuda.StreamBeginCapture == NULL) SKIP("the CUDA driver has no graph capture");
  static const size_t sizes[] = {8, 1024, 16384, 32768, 65536, 262144, 1048576, 2097152, 4194304};
  /* Blocks: MGCOMM_KERNELS_BLOCKS (default the table's 64); ranks sharing one GPU share its
   * 2 x 132 resident blocks, so there at most 256 / n each. */
  const char *env = getenv("MGCOMM_KERNELS_BLOCKS");
  const int want = env != NULL && atoi(env) > 0 ? atoi(env) : 64;
  printf("| ranks (GPUs: %d) | algorithm | bytes | eager us | graph us |\n|---|---|---:|---:|---:|\n",
         kt_gpus);
  for (int n = kt_gpus > 1 ? kt_gpus : 1; n <= 8; n *= 2) {
    kt_world_t w;
    const int cap = kt_gpus > 1 ? MG_KERN_MAX_BLOCKS : 256 / n;
    kt_open(&w, n, 30.0, want < cap ? want : cap);
    static const struct { mg__kern_algo_t algo; int lent; const char *name; } rows[] = {
        {MG__KERN_LL, 0, "ll"}, {MG__KERN_ONESHOT, 0, "one-shot"},
        {MG__KERN_TWOSHOT, 0, "two-shot"}, {MG__KERN_ONESHOT, 1, "one-shot lent"},
        {MG__KERN_TWOSHOT, 1, "two-shot lent"}};
    for (size_t a = 0; a < sizeof rows / sizeof rows[0]; a++)
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (rows[a].algo == MG__KERN_LL && sizes[i] > KT_LL) continue;
        double e, g;
        kt_time(&w, sizes[i], rows[a].algo, rows[a].lent, &e, &g);
        printf("| %d | %s | %zu | %.2f | %.2f |\n", n, rows[a].name, sizes[i], e, g);
      }
    if (n == 1 && kt_gpus == 1)
      for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double e, g;
        kt_time_nccl(&w.rk[0], w.send[0], sizes[i], &e, &g);
        printf("| 1 | NCCL %d | %zu | %.2f | %.2f |\n", mg__lib_version(MG_LIB_NCCL), sizes[i], e, g);
      }
    kt_close(&w);
    if (kt_gpus > 1) break; /* one rank per GPU */
  }
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *mode = argc > 1 ? argv[1] : "correct";
  const int n = argc > 2 ? atoi(argv[2]) : 2;
  if (getenv("KT_GPUS") != NULL) kt_gpus = atoi(getenv("KT_GPUS"));
  if (kt_gpus < 1 || kt_gpus > MG_KERN_MAX_RANKS) FAIL("KT_GPUS: 1 to %d", MG_KERN_MAX_RANKS);
  if (!mg__kern_built()) SKIP("mgcomm was built without nvcc: its kernels are not in it");
  if (strcmp(mode, "ncclprocs") == 0) {
    if (n < 2) FAIL("ncclprocs: 2 processes at least (one lends nothing to itself)");
    gu_probe(n); /* one GPU per process */
  } else if (strcmp(mode, "procs") == 0 || strcmp(mode, "lend") == 0 ||
             strcmp(mode, "unmapped") == 0 || strcmp(mode, "regwait") == 0) {
    gu_probe(kt_gpus); /* no CUDA in this process: its children use it */
  } else {
    gu_need(kt_gpus);
    if (mg__kern_available("test_gpu_kernels") != MG_OK) SKIP("%s", mg_last_error());
  }
  if (n < 1 || n > MG_KERN_MAX_RANKS) FAIL("ranks: 1 to %d", MG_KERN_MAX_RANKS);
  if (strcmp(mode, "correct") == 0) kt_correct(n);
  else if (strcmp(mode, "graph") == 0) kt_graph(n);
  else if (strcmp(mode, "mixed") == 0) kt_mixed(n);
  else if (strcmp(mode, "timeout") == 0 || strcmp(mode, "abort") == 0)
    kt_missing(n, mode[0] == 'a',
               argc > 3 && strcmp(argv[3], "ll") == 0 ? MG__KERN_LL : MG__KERN_TWOSHOT);
  else if (strcmp(mode, "procs") == 0) kt_procs(n);
  else if (strcmp(mode, "lend") == 0) kt_lend(n, kt_lender);
  else if (strcmp(mode, "unmapped") == 0) kt_lend(2, kt_unmapper);
  else if (strcmp(mode, "regwait") == 0) kt_lend(2, kt_regwaiter);
  else if (strcmp(mode, "ncclprocs") == 0) kt_ncclprocs(n);
  else if (strcmp(mode, "bench") == 0) kt_bench();
  else if (strcmp(mode, "nccl") == 0) kt_nccl();
  else FAIL("unknown mode %s", mode);
  printf("PASS %s %d\n", mode, n);
  return 0;
}
