/*
 * test_gpu_coll.c -- the NCCL backend's results against the host backend's, for the same inputs:
 * every operation x every dtype x every op (built-ins, PreMulSum with a host-immediate and a
 * device scalar) x in place and out of place x counts 0, 1, 7, 1023, 70001 (the largest for
 * one dtype of each size), plus one case per operation over 16 MiB; then a group mixing
 * collectives and send/recv, split (colors, keys, MG_SPLIT_NOCOLOR), shrink, finalize.
 *
 *   test_gpu_coll all N     one process: mg_comm_init_all on GPUs 0..N-1; one thread posts
 *                           every rank's operation in one mg_group; split, shrink and
 *                           finalize run one thread per rank
 *   test_gpu_coll procs N   one process per GPU, forked with an NCCL unique id made by the
 *                           parent (which never touches CUDA)
 *   test_gpu_coll world N   one process: mg_world_create on GPUs 0..N-1; each case is one
 *                           world operation (send/recv: one world group) and its request,
 *                           posted by the ranks' worker threads on their own streams; built-in
 *                           ops only (the world refuses custom ops, which is checked)
 *   test_gpu_coll host N    no GPU: the same program against a second host-backend world in
 *                           host memory, which checks the test itself (cases, layouts, in-place
 *                           forms, bounds, split and shrink) on machines without a GPU
 *   test_gpu_coll hostworld N   no GPU: mode world on the host backend, likewise
 *
 * Inputs are random and different per rank (each process regenerates every rank's input from
 * the case's seed), outputs are poisoned first (0xA5), so an element that is not written is
 * caught, and a buffer a rank must not write (recv of a non-root reduce or gather) must stay as
 * it was. The reference is the host backend run in this process on all N ranks with the same
 * images (the host backend is itself checked against a sequential reference by
 * test_host_coll). Integers and every non-reducing operation must agree bit for bit (+0 == -0).
 * Floating reductions (sum, prod, avg, PreMulSum) may differ by the rounding of a different
 * order of operations: per element, 2 (N + 1) u sum_r |t_r| (sum-like; t_r is the possibly
 * pre-multiplied input of rank r) or 2 (N + 1) u prod_r |x_r| (prod), plus 2 (N + 1) times the
 * smallest subnormal, with u the unit roundoff of the dtype (2^-24 float32, 2^-53 float64,
 * 2^-11 float16, 2^-8 bfloat16, 2^-4 e4m3, 2^-3 e5m2). max and min must agree exactly.
 * Every mismatch prints the case, the rank, the index, both values and the allowed difference.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_util.h"
#include "reference.h"

enum { K_ALL_REDUCE, K_BROADCAST, K_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER, K_ALL_TO_ALL,
       K_ALL_TO_ALLV, K_GATHER, K_SCATTER, K_SENDRECV, K_COUNT };
static const char *const kname[K_COUNT] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                           "reduce_scatter", "all_to_all", "all_to_allv",
                                           "gather", "scatter", "sendrecv"};
enum { OP_PREMUL_HOST = MG_OP_BUILTIN_COUNT, OP_PREMUL_DEV, OP_N };
static const char *const opname[OP_N] = {"sum", "prod", "max", "min", "avg", "premul_host",
                                         "premul_dev"};

#define MAXR 16
static int nranks;             /* ranks of the communicator */
static int first, nlocal;      /* the ranks this process drives: first .. first + nlocal - 1 */
static mg_comm_t *gcomm[MAXR]; /* NCCL communicators of the local ranks */
static mg_comm_t *hcomm[MAXR]; /* host backend, every rank, in this process */
static gu_dev_t dev[MAXR];
static void *dsend[MAXR], *drecv[MAXR], *dscalar[MAXR];
static unsigned char *in[MAXR], *rimg[MAXR], *hres[MAXR], *gres[MAXR];
static size_t cap_el;          /* elements of 8 bytes each buffer holds */
static int on_host;            /* mode host: the "GPU" side is a second host-backend world */
static mg_world_t *gworld;     /* mode world: the side under test */
static long printed;           /* mismatch lines printed so far (capped) */
static long cases_run[K_COUNT], wrong_total;
static pthread_barrier_t ranks_done; /* mode all: the lifecycle threads meet before the end */

/* The side under test: GPU buffers and streams, or host memory in mode host. */
static void *buf_alloc(int r, size_t bytes) {
  if (!on_host) return gu_alloc(&dev[r], bytes);
  void *p = malloc(bytes);
  ASSERT(p != NULL);
  return p;
}
static void buf_free(int r, void *p) {
  if (on_host) free(p);
  else gu_free(&dev[r], p);
}
static void buf_put(int r, void *dst, const void *src, size_t n) {
  if (on_host) memcpy(dst, src, n);
  else gu_put(&dev[r], dst, src, n);
}
static void buf_get(int r, void *dst, const void *src, size_t n) {
  if (on_host) memcpy(dst, src, n);
  else gu_get(&dev[r], dst, src, n);
}
static void rank_sync(int r, const char *what) {
  if (!on_host) gu_sync(&dev[r], GU_TIMEOUT_S, what);
}
static mg_stream_t rank_stream(int r) { return on_host ? NULL : (mg_stream_t)dev[r].stream; }

typedef ref_case_t tcase_t;

static int is_rooted(int k) { return k == K_BROADCAST || k == K_REDUCE || k == K_GATHER || k == K_SCATTER; }
static int is_reduction(int k) { return k == K_ALL_REDUCE || k == K_REDUCE || k == K_REDUCE_SCATTER; }
static int is_float(int dt) { return dt >= MG_FLOAT16; }

/* Where a case's data lives on rank me, in elements. The send image is the rank's input; the
 * recv image starts poisoned, with the input inside it for the in-place forms. */
typedef struct {
  size_t s_el, r_el;   /* input elements; recv image elements */
  int sp_in_recv;      /* in place: send points into the recv image at sp_off */
  size_t sp_off, rp_off;
  size_t chk_off, chk_el; /* the part of the recv image compared */
} layout_t;

static layout_t layout(const tcase_t *c, int me) {
  const size_t n = (size_t)nranks, cnt = c->count;
  const int root_me = c->root == me;
  layout_t L = {0, 0, 0, 0, 0, 0, 0};
  switch (c->kind) {
    case K_ALL_GATHER: case K_GATHER: L.s_el = cnt, L.r_el = n * cnt; break;
    case K_REDUCE_SCATTER: case K_SCATTER: L.s_el = n * cnt, L.r_el = cnt; break;
    case K_ALL_TO_ALL: L.s_el = L.r_el = n * cnt; break;
    case K_ALL_TO_ALLV: {
      size_t sc[MAXR], sd[MAXR], rc[MAXR], rd[MAXR];
      ref_a2av_layout(c, nranks, me, sc, sd, rc, rd, &L.s_el, &L.r_el);
      break;
    }
    case K_SENDRECV: L.s_el = L.r_el = 2 * cnt; break; /* to the right neighbour, to myself */
    default: L.s_el = L.r_el = cnt; break;
  }
  if (c->inplace) {
    switch (c->kind) {
      case K_ALL_REDUCE: case K_REDUCE: case K_BROADCAST: L.sp_in_recv = 1; break;
      case K_ALL_GATHER: L.sp_in_recv = 1, L.sp_off = (size_t)me * cnt; break;
      case K_GATHER:
        if (root_me) L.sp_in_recv = 1, L.sp_off = (size_t)me * cnt;
        break;
      case K_REDUCE_SCATTER:
        L.r_el = n * cnt, L.sp_in_recv = 1, L.rp_off = (size_t)me * cnt;
        break;
      case K_SCATTER:
        if (root_me) L.r_el = n * cnt, L.sp_in_recv = 1, L.rp_off = (size_t)me * cnt;
        break;
      default: break;
    }
  }
  L.chk_off = 0, L.chk_el = L.r_el;
  if (c->inplace && (c->kind == K_REDUCE_SCATTER || (c->kind == K_SCATTER && root_me)))
    L.chk_off = (size_t)me * cnt, L.chk_el = cnt;
  return L;
}

/* The input and the recv image of rank me (host memory, images[] of cap_el * 8 bytes). */
static void build(const tcase_t *c, int me, const layout_t *L) {
  const mg_dtype_t dt = (mg_dtype_t)c->dtype;
  const size_t es = mg_dtype_size(dt);
  ref_fill(in[me], L->s_el, dt, ref_case_seed(c, me));
  memset(rimg[me], 0xA5, L->r_el * es);
  if (L->sp_in_recv) memcpy(rimg[me] + L->sp_off * es, in[me], L->s_el * es);
}

/* Posts rank me's part of case c on comm (inside the caller's group for send/recv). */
static mg_status_t post(const tcase_t *c, int me, mg_comm_t *comm, const void *sp, void *rp,
                        mg_op_t op, mg_stream_t s) {
  const mg_dtype_t dt = (mg_dtype_t)c->dtype;
  const size_t cnt = c->count, es = mg_dtype_size(dt);
  switch (c->kind) {
    case K_ALL_REDUCE: return mg_all_reduce(sp, rp, cnt, dt, op, comm, s);
    case K_BROADCAST: return mg_broadcast(sp, rp, cnt, dt, c->root, comm, s);
    case K_REDUCE: return mg_reduce(sp, rp, cnt, dt, op, c->root, comm, s);
    case K_ALL_GATHER: return mg_all_gather(sp, rp, cnt, dt, comm, s);
    case K_REDUCE_SCATTER: return mg_reduce_scatter(sp, rp, cnt, dt, op, comm, s);
    case K_ALL_TO_ALL: return mg_all_to_all(sp, rp, cnt, dt, comm, s);
    case K_GATHER: return mg_gather(sp, rp, cnt, dt, c->root, comm, s);
    case K_SCATTER: return mg_scatter(sp, rp, cnt, dt, c->root, comm, s);
    case K_ALL_TO_ALLV: {
      size_t sc[MAXR], sd[MAXR], rc[MAXR], rd[MAXR], se, re;
      ref_a2av_layout(c, nranks, me, sc, sd, rc, rd, &se, &re);
      return mg_all_to_allv(sp, sc, sd, rp, rc, rd, dt, comm, s);
    }
    case K_SENDRECV: {
      /* The ring plus a message to oneself; "in place" stands for receives posted first. */
      const int right = (me + 1) % nranks, left = (me - 1 + nranks) % nranks;
      const char *sb = sp;
      char *rb = rp;
      mg_status_t st = MG_OK;
      if (c->inplace) {
        if (st == MG_OK) st = mg_recv(rb, cnt, dt, left, comm, s);
        if (st == MG_OK) st = mg_send(sb, cnt, dt, right, comm, s);
      } else {
        if (st == MG_OK) st = mg_send(sb, cnt, dt, right, comm, s);
        if (st == MG_OK) st = mg_recv(rb, cnt, dt, left, comm, s);
      }
      if (st == MG_OK) st = mg_send(sb + cnt * es, cnt, dt, me, comm, s);
      if (st == MG_OK) st = mg_recv(rb + cnt * es, cnt, dt, me, comm, s);
      return st;
    }
  }
  return MG_ERR_INTERNAL;
}

/* Submits case c as one world operation (every rank's part; sp[r] and rp[r] as post() takes
 * them) and makes *req. */
static mg_status_t post_world(const tcase_t *c, void *const *sp, void *const *rp,
                              mg_request_t **req) {
  const mg_dtype_t dt = (mg_dtype_t)c->dtype;
  const mg_op_t op = (mg_op_t)c->op;
  const size_t cnt = c->count, es = mg_dtype_size(dt);
  const void *const *s = (const void *const *)sp;
  switch (c->kind) {
    case K_ALL_REDUCE: return mg_world_all_reduce(gworld, s, rp, cnt, dt, op, req);
    case K_BROADCAST: return mg_world_broadcast(gworld, s, rp, cnt, dt, c->root, req);
    case K_REDUCE: return mg_world_reduce(gworld, s, rp, cnt, dt, op, c->root, req);
    case K_ALL_GATHER: return mg_world_all_gather(gworld, s, rp, cnt, dt, req);
    case K_REDUCE_SCATTER: return mg_world_reduce_scatter(gworld, s, rp, cnt, dt, op, req);
    case K_ALL_TO_ALL: return mg_world_all_to_all(gworld, s, rp, cnt, dt, req);
    case K_GATHER: return mg_world_gather(gworld, s, rp, cnt, dt, c->root, req);
    case K_SCATTER: return mg_world_scatter(gworld, s, rp, cnt, dt, c->root, req);
    case K_ALL_TO_ALLV: {
      size_t a[4][MAXR][MAXR], se, re;
      const size_t *v[4][MAXR];
      for (int r = 0; r < nranks; r++) {
        ref_a2av_layout(c, nranks, r, a[0][r], a[1][r], a[2][r], a[3][r], &se, &re);
        for (int j = 0; j < 4; j++) v[j][r] = a[j][r];
      }
      return mg_world_all_to_allv(gworld, s, v[0], v[1], rp, v[2], v[3], dt, req);
    }
    case K_SENDRECV: {
      /* post()'s ring and self-messages, every rank's in one world group. */
      mg_status_t st;
      MG_WORLD_GROUP(gworld, req, st) {
        for (int me = 0; me < nranks; me++) {
          const int right = (me + 1) % nranks, left = (me - 1 + nranks) % nranks;
          const char *sb = sp[me];
          char *rb = rp[me];
          (void)mg_world_send(gworld, me, sb, cnt, dt, right, NULL);
          (void)mg_world_recv(gworld, me, rb, cnt, dt, left, NULL);
          (void)mg_world_send(gworld, me, sb + cnt * es, cnt, dt, me, NULL);
          (void)mg_world_recv(gworld, me, rb + cnt * es, cnt, dt, me, NULL);
        }
      }
      return st; /* the first error inside, if any */
    }
  }
  return MG_ERR_INTERNAL;
}

static void describe(const tcase_t *c, int rank, char *buf, size_t len) {
  snprintf(buf, len, "rank %d of %d: %s %s op %s %s count %zu root %d", rank, nranks,
           kname[c->kind], mg_dtype_name((mg_dtype_t)c->dtype),
           is_reduction(c->kind) ? opname[c->op] : "-", c->inplace ? "in place" : "out of place",
           c->count, c->root);
}

/* The allowed difference of each compared element of a floating reduction; NULL: exact. */
static double *bounds(const tcase_t *c, int me, const layout_t *L, const unsigned char *scalar) {
  const mg_dtype_t dt = (mg_dtype_t)c->dtype;
  if (!is_reduction(c->kind) || !is_float(dt) || c->op == MG_MAX || c->op == MG_MIN) return NULL;
  if (c->kind == K_REDUCE && c->root != me) return NULL; /* recv is not written */
  double *b = malloc(sizeof *b * (L->chk_el ? L->chk_el : 1));
  ASSERT(b != NULL);
  const double u = gu_unit_roundoff(dt), tiny = gu_min_subnormal(dt), k = 2.0 * (nranks + 1);
  const double s = c->op >= MG_OP_BUILTIN_COUNT ? ref_value(scalar, 0, dt)
                   : c->op == MG_AVG ? 1.0 / nranks : 1.0;
  const size_t base = c->kind == K_REDUCE_SCATTER ? (size_t)me * c->count : 0;
  for (size_t i = 0; i < L->chk_el; i++) {
    double acc = c->op == MG_PROD ? 1.0 : 0.0;
    for (int r = 0; r < nranks; r++) {
      const double x = fabs(ref_value(in[r], base + i, dt));
      acc = c->op == MG_PROD ? acc * x : acc + fabs(s) * x;
    }
    b[i] = k * u * acc + k * tiny;
  }
  return b;
}

/* Runs case c on the host backend (every rank, one group) and on the GPUs (the local ranks),
 * and compares. Returns the number of wrong elements. */
/* What the NCCL backend refuses before it enqueues anything (MG_ERR_NOT_SUPPORTED) and the host
 * backend does: premul_sum on a communicator of one rank, where NCCL's kernel is wrong
 * (nccl_check.c). */
static int nccl_refuses(const tcase_t *c) {
  return nranks == 1 && is_reduction(c->kind) && c->op >= MG_OP_BUILTIN_COUNT;
}
static long cases_refused;

static long run_case(const tcase_t *c) {
  const mg_dtype_t dt = (mg_dtype_t)c->dtype;
  const size_t es = mg_dtype_size(dt);
  layout_t L[MAXR];
  unsigned char scalar[8];
  ref_fill(scalar, 1, dt, 4242 + c->seed);
  for (int r = 0; r < nranks; r++) {
    L[r] = layout(c, r);
    if (L[r].s_el * es > cap_el * 8 || L[r].r_el * es > cap_el * 8)
      FAIL("case larger than the buffers: %zu and %zu elements of %zu bytes", L[r].s_el,
           L[r].r_el, es);
    build(c, r, &L[r]);
  }
  const int custom = c->op >= MG_OP_BUILTIN_COUNT && is_reduction(c->kind);
  const mg_scalar_residence_t res =
      c->op == OP_PREMUL_DEV ? MG_SCALAR_DEVICE : MG_SCALAR_HOST_IMMEDIATE;
  char d[200];
  mg_op_t hop[MAXR], gop[MAXR];

  /* The reference: the host backend, every rank. */
  for (int r = 0; r < nranks; r++) {
    memcpy(hres[r], rimg[r], L[r].r_el * es);
    hop[r] = (mg_op_t)c->op;
    if (custom) ASSERT_OK(mg_op_create_premul_sum(hcomm[r], scalar, dt, res, &hop[r]));
  }
  ASSERT_OK(mg_group_begin());
  for (int r = 0; r < nranks; r++) {
    const void *sp = L[r].sp_in_recv ? hres[r] + L[r].sp_off * es : in[r];
    mg_status_t st = post(c, r, hcomm[r], sp, hres[r] + L[r].rp_off * es, hop[r], NULL);
    if (st != MG_OK) {
      describe(c, r, d, sizeof d);
      FAIL("host backend: %s: %s: %s", d, mg_status_name(st), mg_last_error());
    }
  }
  mg_status_t st = mg_group_end();
  if (st != MG_OK) {
    describe(c, 0, d, sizeof d);
    FAIL("host backend: %s: mg_group_end: %s: %s", d, mg_status_name(st), mg_last_error());
  }
  for (int r = 0; r < nranks && custom; r++) ASSERT_OK(mg_op_destroy(hcomm[r], hop[r]));

  /* The GPUs: images in, one group of the local ranks, wait, result out. */
  for (int r = first; r < first + nlocal; r++) {
    buf_put(r, dsend[r], in[r], L[r].s_el * es);
    buf_put(r, drecv[r], rimg[r], L[r].r_el * es);
    gop[r] = (mg_op_t)c->op;
    if (custom) {
      buf_put(r, dscalar[r], scalar, es);
      rank_sync(r, "copying the scalar"); /* a host-immediate one is read now */
      ASSERT_OK(mg_op_create_premul_sum(gcomm[r], res == MG_SCALAR_DEVICE ? dscalar[r] : scalar,
                                        dt, res, &gop[r]));
    }
  }
  if (nccl_refuses(c) && !on_host) {
    if (gworld != NULL) {
      mg_request_t *req = NULL;
      void *sp[MAXR] = {dsend[0]}, *rp[MAXR] = {drecv[0]};
      st = post_world(c, sp, rp, &req);
      if (st == MG_OK) {
        st = mg_request_wait(req, 0);
        ASSERT_OK(mg_request_free(req));
      }
    } else {
      st = post(c, 0, gcomm[0], dsend[0], drecv[0], gop[0], rank_stream(0));
    }
    ASSERT_EQ(st, MG_ERR_NOT_SUPPORTED);
    ASSERT_CONTAINS(mg_last_error(), "one rank");
    if (custom) ASSERT_OK(mg_op_destroy(gcomm[0], gop[0]));
    cases_refused++;
    return 0;
  }
  if (gworld != NULL) {
    /* The world's workers post on streams of their own: the inputs must be there first. */
    void *sp[MAXR], *rp[MAXR];
    for (int r = 0; r < nranks; r++) {
      rank_sync(r, "copying the inputs");
      sp[r] = L[r].sp_in_recv ? (char *)drecv[r] + L[r].sp_off * es : dsend[r];
      rp[r] = (char *)drecv[r] + L[r].rp_off * es;
    }
    mg_request_t *req = NULL;
    st = post_world(c, sp, rp, &req);
    if (st == MG_OK) {
      st = mg_request_wait(req, 0);
      ASSERT_OK(mg_request_free(req));
    }
    if (st != MG_OK) {
      describe(c, 0, d, sizeof d);
      FAIL("world: %s: %s: %s", d, mg_status_name(st), mg_last_error());
    }
  } else {
    /* The caller's context comes back after a launch over several ranks (docs/nccl.md), whether
     * one was current (the first rank's, which the launch leaves for the others') or none. */
    long ncases = 0;
    for (int k = 0; k < K_COUNT; k++) ncases += cases_run[k];
    const mg__CUcontext mine = ncases % 2 ? NULL : dev[first].ctx;
    if (!on_host && mg__cuda.CtxSetCurrent(mine) != MG__CUDA_SUCCESS)
      FAIL("cuCtxSetCurrent failed");
    ASSERT_OK(mg_group_begin());
    for (int r = first; r < first + nlocal; r++) {
      char *rb = drecv[r];
      const void *sp = L[r].sp_in_recv ? rb + L[r].sp_off * es : dsend[r];
      st = post(c, r, gcomm[r], sp, rb + L[r].rp_off * es, gop[r], rank_stream(r));
      if (st != MG_OK) {
        describe(c, r, d, sizeof d);
        FAIL("NCCL backend: %s: %s: %s", d, mg_status_name(st), mg_last_error());
      }
    }
    st = mg_group_end();
    if (st != MG_OK) {
      describe(c, first, d, sizeof d);
      FAIL("NCCL backend: %s: mg_group_end: %s: %s", d, mg_status_name(st), mg_last_error());
    }
    mg__CUcontext now = NULL;
    if (!on_host && (mg__cuda.CtxGetCurrent(&now) != MG__CUDA_SUCCESS || now != mine)) {
      describe(c, first, d, sizeof d);
      FAIL("NCCL backend: %s: the thread's context after the launch is %p, not the caller's %p",
           d, (void *)now, (void *)mine);
    }
  }
  for (int r = first; r < first + nlocal; r++) {
    describe(c, r, d, sizeof d);
    rank_sync(r, d);
    buf_get(r, gres[r], drecv[r], L[r].r_el * es);
    rank_sync(r, d);
    if (custom) ASSERT_OK(mg_op_destroy(gcomm[r], gop[r]));
  }

  long wrong = 0;
  for (int r = first; r < first + nlocal; r++) {
    describe(c, r, d, sizeof d);
    double *b = bounds(c, r, &L[r], scalar);
    const long w = gu_compare(gres[r] + L[r].chk_off * es, hres[r] + L[r].chk_off * es,
                              L[r].chk_el, dt, b, d, printed < 40 ? 3 : 0);
    if (w > 0) {
      printed += w < 3 ? w : 3;
      fprintf(stderr, "  %s: %ld wrong elements of %zu\n", d, w, L[r].chk_el);
    }
    wrong += w;
    free(b);
  }
  cases_run[c->kind]++;
  return wrong;
}

/* The matrix, in the same order in every process. */
static void run_matrix(void) {
  static const size_t counts[] = {0, 1, 7, 1023, 70001};
  uint64_t seed = 1;
  for (int k = 0; k < K_COUNT; k++)
    for (int dt = 0; dt < MG_DTYPE_COUNT; dt++)
      for (int op = 0; op < (!is_reduction(k) ? 1 : gworld ? MG_OP_BUILTIN_COUNT : OP_N); op++)
        for (int ip = 0; ip < 2; ip++)
          for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            if (ci == 4 && !(dt == MG_FLOAT32 || dt == MG_BFLOAT16 || dt == MG_INT8 ||
                             dt == MG_UINT64 || dt == MG_FLOAT8_E5M2))
              continue;
            if ((k == K_ALL_TO_ALL || k == K_ALL_TO_ALLV) && ip) continue; /* no in-place form */
            tcase_t c = {k, dt, op, ip, 0, counts[ci], seed};
            if (is_rooted(k)) c.root = (int)(seed % (uint64_t)nranks);
            seed++;
            wrong_total += run_case(&c);
          }
  /* Over 16 MiB per rank: NCCL's pipelined paths. */
  for (int k = 0; k < K_COUNT; k++) {
    size_t cnt = (size_t)17 << 18; /* float32: 17 MiB */
    if (k == K_ALL_GATHER || k == K_REDUCE_SCATTER || k == K_ALL_TO_ALL || k == K_GATHER ||
        k == K_SCATTER || k == K_ALL_TO_ALLV)
      cnt = cnt / (size_t)nranks + 1;
    if (k == K_SENDRECV) cnt /= 2; /* two messages per rank */
    tcase_t c = {k, MG_FLOAT32, MG_SUM, 0, is_rooted(k) ? nranks - 1 : 0, cnt, seed++};
    wrong_total += run_case(&c);
  }
}

/* ---- the lifecycle: one call per rank, in parallel ---------------------------------------- */

/* out = sum over the ranks of comm of `mine`, through an all_reduce on rank r's device. */
static int64_t allreduce_i64(mg_comm_t *comm, int r, int64_t mine, const char *what) {
  int64_t out = -1;
  buf_put(r, dsend[r], &mine, sizeof mine);
  mg_status_t st = mg_all_reduce(dsend[r], drecv[r], 1, MG_INT64, MG_SUM, comm, rank_stream(r));
  if (st != MG_OK) FAIL("rank %d: %s: mg_all_reduce: %s: %s", r, what, mg_status_name(st), mg_last_error());
  rank_sync(r, what);
  buf_get(r, &out, drecv[r], sizeof out);
  rank_sync(r, what);
  return out;
}

static void finalize_destroy(mg_comm_t *comm, int r, const char *what) {
  mg_status_t st = mg_comm_finalize(comm);
  if (st != MG_OK) FAIL("rank %d: %s: mg_comm_finalize: %s: %s", r, what, mg_status_name(st), mg_last_error());
  ASSERT_OK(mg_comm_destroy(comm));
}

/* A group that mixes collectives and send/recv (one rank's part; all ranks at once). */
static void mixed_group(int r, void *arg) {
  (void)arg;
  const int right = (r + 1) % nranks, left = (r - 1 + nranks) % nranks;
  int64_t mine = r + 1, got[2 + MAXR];
  char *s = dsend[r], *o = drecv[r];
  buf_put(r, s, &mine, sizeof mine);
  mg_stream_t st = rank_stream(r);
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_all_reduce(s, o, 1, MG_INT64, MG_SUM, gcomm[r], st));
  ASSERT_OK(mg_send(s, 1, MG_INT64, right, gcomm[r], st));
  ASSERT_OK(mg_all_gather(s, o + 16, 1, MG_INT64, gcomm[r], st));
  ASSERT_OK(mg_recv(o + 8, 1, MG_INT64, left, gcomm[r], st));
  mg_status_t e = mg_group_end();
  if (e != MG_OK) FAIL("rank %d: mixed group: %s: %s", r, mg_status_name(e), mg_last_error());
  rank_sync(r, "mixed group");
  buf_get(r, got, o, sizeof(int64_t) * (2 + (size_t)nranks));
  rank_sync(r, "mixed group");
  ASSERT_EQ(got[0], (int64_t)nranks * (nranks + 1) / 2);
  ASSERT_EQ(got[1], left + 1);
  for (int q = 0; q < nranks; q++) ASSERT_EQ(got[2 + q], q + 1);
}

static void lifecycle_rank(int r, void *arg) {
  (void)arg;
  mg_comm_t *comm = gcomm[r];
  char what[96];
  /* Split by parity, ranked by descending old rank. */
  mg_comm_t *child = NULL;
  ASSERT_OK(mg_comm_split(comm, r % 2, nranks - r, NULL, &child));
  ASSERT(child != NULL);
  int csize = 0, crank = -1, want_size = 0, want_rank = 0, dev_of = -1;
  for (int q = r % 2; q < nranks; q += 2) want_size++;
  for (int q = r + 2; q < nranks; q += 2) want_rank++;
  ASSERT_OK(mg_comm_size(child, &csize));
  ASSERT_OK(mg_comm_rank(child, &crank));
  ASSERT_OK(mg_comm_device(child, &dev_of));
  ASSERT_EQ(csize, want_size);
  ASSERT_EQ(crank, want_rank);
  ASSERT_EQ(dev_of, on_host ? -1 : r);
  int64_t want = 0;
  for (int q = r % 2; q < nranks; q += 2) want += q + 1;
  snprintf(what, sizeof what, "split by parity, rank %d", r);
  ASSERT_EQ(allreduce_i64(child, r, r + 1, what), want);
  finalize_destroy(child, r, what);
  /* MG_SPLIT_NOCOLOR: rank 0 joins none. */
  child = (mg_comm_t *)&child; /* must be overwritten */
  ASSERT_OK(mg_comm_split(comm, r == 0 ? MG_SPLIT_NOCOLOR : 3, 0, NULL, &child));
  if (r == 0) {
    ASSERT(child == NULL);
  } else {
    ASSERT_OK(mg_comm_size(child, &csize));
    ASSERT_EQ(csize, nranks - 1);
    ASSERT_OK(mg_comm_rank(child, &crank));
    ASSERT_EQ(crank, r - 1);
    snprintf(what, sizeof what, "split with NOCOLOR, rank %d", r);
    ASSERT_EQ(allreduce_i64(child, r, 1, what), nranks - 1);
    finalize_destroy(child, r, what);
  }
  /* Shrink: the last rank is left out and does not call. */
  mg_feature_info_t fi;
  ASSERT_OK(mg_feature_info(MG_FEATURE_NCCL_SHRINK, &fi));
  if (r != nranks - 1) {
    const int ex = nranks - 1;
    mg_status_t st = mg_comm_shrink(comm, &ex, 1, NULL, &child);
    if (!fi.available) {
      ASSERT_EQ(st, MG_ERR_NOT_SUPPORTED);
      if (r == 0) printf("shrink: not supported by this NCCL (%s)\n", mg_last_error());
    } else {
      if (st != MG_OK) FAIL("rank %d: mg_comm_shrink: %s: %s", r, mg_status_name(st), mg_last_error());
      ASSERT_OK(mg_comm_size(child, &csize));
      ASSERT_EQ(csize, nranks - 1);
      ASSERT_OK(mg_comm_rank(child, &crank));
      ASSERT_EQ(crank, r);
      snprintf(what, sizeof what, "shrink without rank %d, rank %d", ex, r);
      ASSERT_EQ(allreduce_i64(child, r, r + 1, what), (int64_t)(nranks - 1) * nranks / 2);
      finalize_destroy(child, r, what);
    }
  }
  /* The parent still works after its children came and went. One process driving every GPU
   * waits first until each rank is done with its children: freeing a communicator's memory can
   * wait for every GPU that maps it, and the last rank (not in the shrink) would otherwise have
   * a kernel waiting on the others' parent all_reduce already, while they still free (CUDA's
   * implicit synchronisation; NCCL's documented hazard of several GPUs per process). */
  if (nlocal > 1) (void)pthread_barrier_wait(&ranks_done);
  snprintf(what, sizeof what, "parent after split and shrink, rank %d", r);
  ASSERT_EQ(allreduce_i64(comm, r, 2, what), 2 * nranks);
  finalize_destroy(comm, r, "parent");
  gcomm[r] = NULL;
}

/* ---- setup and modes ------------------------------------------------------------------------ */

static void setup_local(void) {
  /* Buffers for the largest case: all_to_all(v) of 70001 (+3) elements of 8 bytes per rank,
   * or 17 MiB of float32. */
  size_t small = (size_t)(nranks < 2 ? 2 : nranks) * (70001 + 3) + 64;
  size_t big = ((size_t)17 << 18) / 2 + (size_t)nranks * 8 + 64; /* in 8-byte elements */
  cap_el = small > big ? small : big;
  for (int r = 0; r < nranks; r++) {
    in[r] = malloc(cap_el * 8);
    rimg[r] = malloc(cap_el * 8);
    hres[r] = malloc(cap_el * 8);
    gres[r] = malloc(cap_el * 8);
    ASSERT(in[r] && rimg[r] && hres[r] && gres[r]);
  }
  for (int r = first; r < first + nlocal; r++) {
    if (!on_host) gu_dev_open(&dev[r], r);
    dsend[r] = buf_alloc(r, cap_el * 8);
    drecv[r] = buf_alloc(r, cap_el * 8);
    dscalar[r] = buf_alloc(r, 8);
  }
  mg_config_t hc = MG_CONFIG_INIT;
  hc.backend = MG_BACKEND_HOST;
  hc.timeout_s = GU_TIMEOUT_S;
  ASSERT_OK(mg_comm_init_all(&hc, nranks, NULL, hcomm));
}

static void teardown_local(void) {
  for (int r = 0; r < nranks; r++) {
    ASSERT_OK(mg_comm_destroy(hcomm[r]));
    free(in[r]), free(rimg[r]), free(hres[r]), free(gres[r]);
  }
  for (int r = first; r < first + nlocal; r++) {
    buf_free(r, dsend[r]);
    buf_free(r, drecv[r]);
    buf_free(r, dscalar[r]);
    if (!on_host) gu_dev_close(&dev[r]);
  }
}

static long report(const char *mode, double t0) {
  long cases = 0;
  for (int k = 0; k < K_COUNT; k++) cases += cases_run[k];
  printf("gpu coll %s, %d ranks%s: %ld cases (", mode, nranks,
         nlocal == 1 ? " (this process: one)" : "", cases);
  for (int k = 0; k < K_COUNT; k++) printf("%s%s %ld", k ? ", " : "", kname[k], cases_run[k]);
  printf("), %ld refused as NCCL cannot run them, %ld wrong elements, %.1f s\n", cases_refused,
         wrong_total, gu_now() - t0);
  fflush(stdout);
  return wrong_total;
}

static mg_config_t nccl_config(void) {
  mg_config_t c = MG_CONFIG_INIT;
  c.backend = on_host ? MG_BACKEND_HOST : MG_BACKEND_NCCL;
  c.timeout_s = GU_TIMEOUT_S;
  return c;
}

static int mode_all(void) {
  if (!on_host) gu_need(nranks);
  const double t0 = gu_now();
  first = 0, nlocal = nranks;
  mg_config_t cfg = nccl_config();
  ASSERT_OK(mg_comm_init_all(&cfg, nranks, NULL, gcomm));
  setup_local();
  run_matrix();
  gu_run_ranks(nranks, mixed_group, NULL);
  ASSERT_EQ(pthread_barrier_init(&ranks_done, NULL, (unsigned)nranks), 0);
  gu_run_ranks(nranks, lifecycle_rank, NULL);
  ASSERT_EQ(pthread_barrier_destroy(&ranks_done), 0);
  long wrong = report(on_host ? "host (the test against itself)" : "all", t0);
  teardown_local();
  return wrong == 0 ? 0 : 1;
}

static int mode_world(void) {
  if (!on_host) gu_need(nranks);
  const double t0 = gu_now();
  first = 0, nlocal = nranks;
  mg_config_t cfg = nccl_config();
  ASSERT_OK(mg_world_create(&cfg, nranks, NULL, &gworld));
  setup_local();
  run_matrix();
  /* A custom op belongs to one communicator: the world refuses it, and makes no request. */
  void *sp[MAXR], *rp[MAXR];
  for (int r = 0; r < nranks; r++) sp[r] = dsend[r], rp[r] = drecv[r];
  mg_request_t *req = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_world_all_reduce(gworld, (const void *const *)sp, rp, 1, MG_FLOAT32,
                                    (mg_op_t)MG_OP_BUILTIN_COUNT, &req));
  ASSERT(req == NULL);
  long wrong = report(on_host ? "world on the host backend (the test against itself)" : "world", t0);
  ASSERT_OK(mg_world_destroy(gworld));
  gworld = NULL;
  teardown_local();
  return wrong == 0 ? 0 : 1;
}

static int mode_procs(void) {
  gu_probe(nranks); /* this process stays free of CUDA: it forks the ranks */
  mg_unique_id_t uid;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_NCCL, &uid));
  fflush(stdout);
  pid_t pids[MAXR];
  for (int r = 0; r < nranks; r++) {
    pids[r] = fork();
    ASSERT(pids[r] >= 0);
    if (pids[r] != 0) continue;
    const double t0 = gu_now();
    first = r, nlocal = 1;
    mg_config_t cfg = nccl_config();
    cfg.device = r;
    mg_status_t st = mg_comm_init_rank(&cfg, nranks, &uid, r, &gcomm[r]);
    if (st != MG_OK) FAIL("rank %d: mg_comm_init_rank: %s: %s", r, mg_status_name(st), mg_last_error());
    setup_local();
    run_matrix();
    mixed_group(r, NULL);
    lifecycle_rank(r, NULL);
    char mode[32];
    snprintf(mode, sizeof mode, "procs, rank %d", r);
    long wrong = report(mode, t0);
    teardown_local();
    _exit(wrong == 0 ? 0 : 1);
  }
  int failed = 0;
  for (int r = 0; r < nranks; r++) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d (pid %d) failed: %s %d\n", r, (int)pids[r],
              WIFEXITED(status) ? "exit code" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      failed++;
    }
  }
  return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 3) FAIL("usage: %s all|procs|world|host|hostworld NRANKS", argv[0]);
  nranks = atoi(argv[2]);
  ASSERT(nranks >= 1 && nranks <= MAXR);
  int rc;
  on_host = strcmp(argv[1], "host") == 0 || strcmp(argv[1], "hostworld") == 0;
  if (strcmp(argv[1], "all") == 0 || strcmp(argv[1], "host") == 0) rc = mode_all();
  else if (strcmp(argv[1], "world") == 0 || strcmp(argv[1], "hostworld") == 0) rc = mode_world();
  else if (strcmp(argv[1], "procs") == 0) rc = mode_procs();
  else FAIL("unknown mode %s", argv[1]);
  if (rc != 0) {
    /* An exit code, not an abort: the harness test reads this line (tests/gpu/nccl.cmake). */
    fprintf(stderr, "%s %d: results differ from the host backend's (see above)\n", argv[1], nranks);
    return 1;
  }
  return 0;
}
