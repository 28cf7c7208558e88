/*
 * bench_calc_test.c -- the arithmetic of `mgcomm bench` without a backend: nccl-tests' buffer
 * geometry and bus-bandwidth factors, and the checker against results built here from the
 * ranks' own input images (right ones count 0 wrong; corrupted, missing or misplaced elements are
 * counted).
 */
#include <math.h>

#include "../../tools/mgcomm/bench.h"
#include "test.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-12)

static void test_factors(void) {
  static const struct {
    mg_bench_coll_t c;
    double f4; /* factor at 4 ranks */
  } want[] = {
      {MG_BENCH_ALL_REDUCE, 1.5},  {MG_BENCH_ALL_GATHER, 0.75}, {MG_BENCH_REDUCE_SCATTER, 0.75},
      {MG_BENCH_ALL_TO_ALL, 0.75}, {MG_BENCH_GATHER, 0.75},     {MG_BENCH_SCATTER, 0.75},
      {MG_BENCH_BROADCAST, 1.0},   {MG_BENCH_REDUCE, 1.0},      {MG_BENCH_SENDRECV, 1.0},
  };
  ASSERT_EQ(sizeof want / sizeof want[0], MG_BENCH_COLL_COUNT);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    if (!NEAR(mg_bench_bus_factor(want[i].c, 4), want[i].f4))
      FAIL("%s: factor at 4 ranks %g, want %g", mg_bench_coll_name(want[i].c),
           mg_bench_bus_factor(want[i].c, 4), want[i].f4);
  }
  ASSERT(NEAR(mg_bench_bus_factor(MG_BENCH_ALL_REDUCE, 2), 1.0));
  ASSERT(NEAR(mg_bench_bus_factor(MG_BENCH_ALL_REDUCE, 8), 1.75));
  ASSERT(NEAR(mg_bench_bus_factor(MG_BENCH_ALL_GATHER, 8), 0.875));
  ASSERT(NEAR(mg_bench_bus_factor(MG_BENCH_ALL_REDUCE, 1), 0.0));
}

static void test_names(void) {
  for (int c = 0; c < MG_BENCH_COLL_COUNT; c++)
    ASSERT_EQ(mg_bench_coll_from_name(mg_bench_coll_name((mg_bench_coll_t)c)), c);
  ASSERT_EQ(mg_bench_coll_from_name("allreduce"), -1);
}

static void test_geometry(void) {
  /* all_reduce: count = size / element, both buffers that size, algbw over the size. */
  mg_bench_geom_t g = mg_bench_geometry(MG_BENCH_ALL_REDUCE, 1024, MG_FLOAT32, 4);
  ASSERT_EQ(g.count, 256);
  ASSERT_EQ(g.send_count, 256);
  ASSERT_EQ(g.recv_count, 256);
  ASSERT_EQ(g.bytes, 1024);
  ASSERT_EQ(g.algbw_bytes, 1024);
  /* all_gather: the size is the gathered total; per rank a multiple of 16 bytes. */
  g = mg_bench_geometry(MG_BENCH_ALL_GATHER, 1024, MG_FLOAT32, 3);
  ASSERT_EQ(g.count, 84); /* 256 / 3 = 85, down to a multiple of 4 floats */
  ASSERT_EQ(g.send_count, 84);
  ASSERT_EQ(g.recv_count, 252);
  ASSERT_EQ(g.send_ip_off, 84);
  ASSERT_EQ(g.recv_ip_off, 0);
  ASSERT_EQ(g.bytes, 1008);
  ASSERT_EQ(g.algbw_bytes, 1008);
  /* 8 bytes over 2 ranks is less than 16 bytes a rank: count 0, as nccl-tests prints it. */
  g = mg_bench_geometry(MG_BENCH_ALL_GATHER, 8, MG_FLOAT32, 2);
  ASSERT_EQ(g.count, 0);
  ASSERT_EQ(g.bytes, 0);
  g = mg_bench_geometry(MG_BENCH_REDUCE_SCATTER, 4096, MG_FLOAT64, 2);
  ASSERT_EQ(g.count, 256);
  ASSERT_EQ(g.send_count, 512);
  ASSERT_EQ(g.recv_count, 256);
  ASSERT_EQ(g.recv_ip_off, 256);
  ASSERT_EQ(g.bytes, 4096);
  g = mg_bench_geometry(MG_BENCH_ALL_TO_ALL, 4096, MG_INT8, 4);
  ASSERT_EQ(g.count, 1024);
  ASSERT_EQ(g.send_count, 4096);
  ASSERT_EQ(g.recv_count, 4096);
  ASSERT_EQ(g.algbw_bytes, 4096);
  g = mg_bench_geometry(MG_BENCH_SCATTER, 4096, MG_FLOAT16, 4);
  ASSERT_EQ(g.count, 512);
  ASSERT_EQ(g.send_count, 2048);
  ASSERT_EQ(g.recv_count, 512);
  ASSERT_EQ(g.recv_ip_off, 512);
  g = mg_bench_geometry(MG_BENCH_SENDRECV, 100, MG_FLOAT32, 4);
  ASSERT_EQ(g.count, 25);
  ASSERT_EQ(g.bytes, 100);
  ASSERT_EQ(g.algbw_bytes, 100);
}

/* ---------------------------------------------------------------------------------------- */
/* The checker against results made here. Reductions use types whose arithmetic C has: int32,
 * uint8 and float32; the real collectives of every dtype are checked end to end in
 * bench_cli.sh. */

#define MAXR 8

typedef struct world {
  mg_bench_case_t k;
  size_t e, bufn;
  unsigned char *send[MAXR], *img[MAXR];
} world_t;

/* Every rank's images as mg_bench_fill makes them: inputs and poison. */
static void world_fill(world_t *w) {
  for (int r = 0; r < w->k.nranks; r++) mg_bench_fill(&w->k, r, w->send[r], w->img[r]);
}

static void world_init(world_t *w, mg_bench_coll_t c, mg_dtype_t dt, mg_op_t op, int n, int ip) {
  memset(w, 0, sizeof *w);
  w->k = (mg_bench_case_t){c, dt, op, n > 1 ? 1 : 0, n, ip, mg_bench_geometry(c, 4096, dt, n)};
  w->e = mg_dtype_size(dt);
  w->bufn = w->k.g.send_count > w->k.g.recv_count ? w->k.g.send_count : w->k.g.recv_count;
  for (int r = 0; r < n; r++) {
    w->send[r] = malloc(w->k.g.send_count * w->e);
    w->img[r] = malloc(w->bufn * w->e);
    ASSERT(w->send[r] && w->img[r]);
  }
  world_fill(w);
}

static void world_free(world_t *w) {
  for (int r = 0; r < w->k.nranks; r++) free(w->send[r]), free(w->img[r]);
}

/* Rank r's input element j, as filled. */
static const unsigned char *in_el(const world_t *w, int r, size_t j) {
  const unsigned char *base = w->k.inplace ? w->img[r] + (size_t)r * w->k.g.send_ip_off * w->e
                                           : w->send[r];
  return base + j * w->e;
}

static double in_val(const world_t *w, int r, size_t j) {
  const unsigned char *p = in_el(w, r, j);
  switch (w->k.dtype) {
    case MG_INT32: return *(const int32_t *)p;
    case MG_UINT8: return *p;
    default: return *(const float *)p;
  }
}

static void put_val(const world_t *w, unsigned char *p, double v) {
  switch (w->k.dtype) {
    case MG_INT32: *(int32_t *)p = (int32_t)v; break;
    case MG_UINT8: *p = (uint8_t)v; break;
    default: *(float *)p = (float)v; break;
  }
}

/* Element j reduced over ranks, as the collective must produce it. */
static double reduced(const world_t *w, size_t j) {
  double acc = in_val(w, 0, j);
  for (int q = 1; q < w->k.nranks; q++) {
    double v = in_val(w, q, j);
    switch (w->k.op) {
      case MG_PROD: acc *= v; break;
      case MG_MAX: acc = v > acc ? v : acc; break;
      case MG_MIN: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  if (w->k.op == MG_AVG) acc = w->k.dtype == MG_FLOAT32 ? acc / w->k.nranks : floor(acc / w->k.nranks);
  return acc;
}

/* Fills the images afresh, then writes into each rank's image the result the collective must
 * produce. Ranks that receive nothing keep their poison. */
static void world_run(world_t *w) {
  const mg_bench_case_t *k = &w->k;
  world_fill(w);
  const size_t c = k->g.count, e = w->e;
  const int n = k->nranks;
  /* Results go to scratch first: in place, inputs and outputs share the images. */
  unsigned char *out[MAXR];
  for (int r = 0; r < n; r++) {
    out[r] = malloc(k->g.recv_count * e + 1);
    ASSERT(out[r]);
    for (size_t i = 0; i < k->g.recv_count; i++) {
      unsigned char *o = out[r] + i * e;
      switch (k->coll) {
        case MG_BENCH_ALL_REDUCE:
        case MG_BENCH_REDUCE: put_val(w, o, reduced(w, i)); break;
        case MG_BENCH_REDUCE_SCATTER: put_val(w, o, reduced(w, (size_t)r * c + i)); break;
        case MG_BENCH_ALL_GATHER:
        case MG_BENCH_GATHER: memcpy(o, in_el(w, (int)(i / c), i % c), e); break;
        case MG_BENCH_ALL_TO_ALL: memcpy(o, in_el(w, (int)(i / c), (size_t)r * c + i % c), e); break;
        case MG_BENCH_BROADCAST: memcpy(o, in_el(w, k->root, i), e); break;
        case MG_BENCH_SCATTER: memcpy(o, in_el(w, k->root, (size_t)r * c + i), e); break;
        case MG_BENCH_SENDRECV: memcpy(o, in_el(w, (r - 1 + n) % n, i), e); break;
        case MG_BENCH_COLL_COUNT: break;
      }
    }
  }
  for (int r = 0; r < n; r++) {
    const int receives = (k->coll != MG_BENCH_REDUCE && k->coll != MG_BENCH_GATHER) || r == k->root;
    if (receives)
      memcpy(w->img[r] + (k->inplace ? (size_t)r * k->g.recv_ip_off * e : 0), out[r],
             k->g.recv_count * e);
    free(out[r]);
  }
}

static uint64_t world_wrong(const world_t *w) {
  uint64_t wrong = 0;
  for (int r = 0; r < w->k.nranks; r++) wrong += mg_bench_check(&w->k, r, w->img[r]);
  return wrong;
}

/* A rank that receives the result: the root of reduce and gather, anyone else otherwise. */
static int receiver(const world_t *w) { return w->k.nranks - 1 == w->k.root ? 0 : w->k.nranks - 1; }
static int result_rank(const world_t *w) {
  return w->k.coll == MG_BENCH_REDUCE || w->k.coll == MG_BENCH_GATHER ? w->k.root : receiver(w);
}

static unsigned char *result_el(const world_t *w, int r, size_t i) {
  return w->img[r] + ((w->k.inplace ? (size_t)r * w->k.g.recv_ip_off : 0) + i) * w->e;
}

static void check_case(mg_bench_coll_t c, mg_dtype_t dt, mg_op_t op, int n, int ip) {
  world_t w;
  world_init(&w, c, dt, op, n, ip);
  const char *what = mg_bench_coll_name(c);
  const size_t rc = w.k.g.recv_count;
  ASSERT_GT(rc, 1);
  /* Nothing written: every result element of every receiving rank is wrong, unless in place
   * left the input where the output goes and the input happens to be the answer. */
  uint64_t untouched = world_wrong(&w);
  if (!ip) ASSERT_GE(untouched, rc);
  world_run(&w);
  if (world_wrong(&w) != 0)
    FAIL("%s %s %s n=%d inplace=%d: %llu wrong in a right result", what, mg_dtype_name(dt),
         mg_op_name(op), n, ip, (unsigned long long)world_wrong(&w));
  const int r = result_rank(&w);
  /* One bit flipped in the high byte (an exponent bit of a float). */
  result_el(&w, r, rc / 2)[w.e - 1] ^= 0x40;
  ASSERT_EQ(world_wrong(&w), 1);
  result_el(&w, r, rc / 2)[w.e - 1] ^= 0x40;
  /* One element missing (still poison). */
  memset(result_el(&w, r, 0), 0xff, w.e);
  ASSERT_EQ(world_wrong(&w), 1);
  world_run(&w);
  /* Two neighbours swapped: the patterns differ from one element to the next, except where a
   * sum's or a product's gate makes both equal; copies always differ. */
  if (!mg_bench_coll_reduces(c) || op == MG_MAX || op == MG_MIN) {
    unsigned char tmp[8];
    memcpy(tmp, result_el(&w, r, 1), w.e);
    memcpy(result_el(&w, r, 1), result_el(&w, r, 2), w.e);
    memcpy(result_el(&w, r, 2), tmp, w.e);
    ASSERT_EQ(world_wrong(&w), 2);
  }
  world_free(&w);
}

static void test_checker(void) {
  static const int ranks[] = {2, 3, 8};
  static const mg_dtype_t dts[] = {MG_INT32, MG_UINT8, MG_FLOAT32};
  for (size_t ri = 0; ri < sizeof ranks / sizeof ranks[0]; ri++)
    for (int c = 0; c < MG_BENCH_COLL_COUNT; c++)
      for (int ip = 0; ip <= mg_bench_coll_has_inplace((mg_bench_coll_t)c); ip++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
          if (!mg_bench_coll_reduces((mg_bench_coll_t)c)) {
            check_case((mg_bench_coll_t)c, dts[d], MG_SUM, ranks[ri], ip);
            continue;
          }
          for (int op = 0; op < MG_OP_BUILTIN_COUNT; op++)
            check_case((mg_bench_coll_t)c, dts[d], (mg_op_t)op, ranks[ri], ip);
        }
}

/* Ranks shifted against each other: an all_gather that puts rank 1's part where rank 2's
 * belongs is caught. */
static void test_misplaced_rank(void) {
  world_t w;
  world_init(&w, MG_BENCH_ALL_GATHER, MG_FLOAT32, MG_SUM, 3, 0);
  world_run(&w);
  const size_t c = w.k.g.count;
  memcpy(result_el(&w, 0, 2 * c), result_el(&w, 0, c), c * w.e);
  ASSERT_EQ(world_wrong(&w), c);
  world_free(&w);
}

int main(void) {
  test_factors();
  test_names();
  test_geometry();
  test_checker();
  test_misplaced_rank();
  printf("bench_calc: ok\n");
  return 0;
}
