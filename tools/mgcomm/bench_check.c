/*
 * bench_check.c -- the data of every checked run: per-rank input patterns, poison where the
 * operation must write, and the count of result elements that are not what the collective must
 * produce.
 *
 * Patterns. Element j of rank r's input is a small non-negative integer, its "level":
 *   copies (no reduction), max, min:  (j + 7r + 1) mod (top + 1)
 *   sum, avg:                         the same, but 0 unless (j + r) mod gate == 0
 *   prod:                             2 where (j + r) mod gate == 0, else 1
 * Neighbouring elements differ and ranks are shifted against each other, so a misplaced or
 * missing element shows. `top` and `gate` keep every result exact in every dtype: each dtype has
 * a limit L such that every integer in [0, L] is exactly representable and does not overflow
 * (127 for int8 and uint8, 2048 for fp16, 256 for bf16, 16 for fp8 e4m3, 8 for e5m2, 2^24 for the
 * others), and top, gate are chosen so that a sum or product over all ranks (and every partial
 * one, in any order) stays within L. Results are then compared bit for bit, except avg on
 * floating types: NCCL pre-multiplies by 1/nranks rounded to the dtype, so that result is
 * compared with sum/nranks within (nranks + 2) units of rounding.
 *
 * Poison is all bits set: NaN in every floating type, and for integers a value above L (or -1),
 * which no pattern or result reaches.
 */
#include <math.h>
#include <string.h>

#include "bench.h"

#define MG_BENCH_POISON 0xff

/* The limit L of a dtype (see above). */
static uint64_t mg_bench_limit(mg_dtype_t dt) {
  switch (dt) {
    case MG_INT8:
    case MG_UINT8: return 127;
    case MG_FLOAT16: return 2048;
    case MG_BFLOAT16: return 256;
    case MG_FLOAT8_E4M3: return 16;
    case MG_FLOAT8_E5M2: return 8;
    default: return (uint64_t)1 << 24;
  }
}

typedef enum { MG_PAT_COPY, MG_PAT_SUM, MG_PAT_PROD } mg_pat_kind_t;

typedef struct mg_pat {
  mg_pat_kind_t kind;
  uint64_t top;  /* largest level */
  uint64_t gate; /* >= 1 */
} mg_pat_t;

static mg_pat_t mg_bench_pattern(const mg_bench_case_t *k) {
  const uint64_t lim = mg_bench_limit(k->dtype), n = (uint64_t)k->nranks;
  mg_pat_t p = {MG_PAT_COPY, lim, 1};
  if (!mg_bench_coll_reduces(k->coll) || k->op == MG_MAX || k->op == MG_MIN) return p;
  if (k->op == MG_PROD) {
    /* At most floor(log2 L) ranks contribute a 2 to an element. */
    uint64_t twos = 0;
    while (((uint64_t)2 << twos) <= lim) twos++;
    p.kind = MG_PAT_PROD;
    p.gate = (n + twos - 1) / twos;
    if (p.gate < 2) p.gate = 2;
    return p;
  }
  p.kind = MG_PAT_SUM;
  if (lim / n >= 1) {
    p.top = lim / n;
  } else { /* more ranks than L: levels 0/1, at most L ranks non-zero per element */
    p.top = 1;
    p.gate = (n + lim - 1) / lim;
  }
  return p;
}

static inline uint64_t mg_bench_level(const mg_pat_t *p, int r, size_t j) {
  const uint64_t ur = (uint64_t)r, uj = (uint64_t)j;
  const int open = (uj + ur) % p->gate == 0;
  if (p->kind == MG_PAT_PROD) return open ? 2 : 1;
  if (!open) return 0;
  return (uj + 7 * ur + 1) % (p->top + 1);
}

/* An integer v <= 2^(mbits+1) as a small float format with mbits mantissa bits; exact. */
static uint32_t mg_bench_small_float(uint64_t v, int mbits, int bias) {
  if (v == 0) return 0;
  int e = 63 - __builtin_clzll(v);
  uint64_t frac = v - ((uint64_t)1 << e);
  uint64_t mant = e <= mbits ? frac << (mbits - e) : frac >> (e - mbits);
  return ((uint32_t)(e + bias) << mbits) | (uint32_t)mant;
}

/* Element idx of base, of dtype dt, set to level v. */
static void mg_bench_put(mg_dtype_t dt, void *base, size_t idx, uint64_t v) {
  switch (dt) {
    case MG_INT8:
    case MG_UINT8: ((uint8_t *)base)[idx] = (uint8_t)v; break;
    case MG_INT32:
    case MG_UINT32: ((uint32_t *)base)[idx] = (uint32_t)v; break;
    case MG_INT64:
    case MG_UINT64: ((uint64_t *)base)[idx] = v; break;
    case MG_FLOAT32: ((float *)base)[idx] = (float)v; break;
    case MG_FLOAT64: ((double *)base)[idx] = (double)v; break;
    case MG_FLOAT16: ((uint16_t *)base)[idx] = (uint16_t)mg_bench_small_float(v, 10, 15); break;
    case MG_BFLOAT16: ((uint16_t *)base)[idx] = (uint16_t)mg_bench_small_float(v, 7, 127); break;
    case MG_FLOAT8_E4M3: ((uint8_t *)base)[idx] = (uint8_t)mg_bench_small_float(v, 3, 7); break;
    case MG_FLOAT8_E5M2: ((uint8_t *)base)[idx] = (uint8_t)mg_bench_small_float(v, 2, 15); break;
    case MG_DTYPE_COUNT: break;
  }
}

/* A small float format's bits as a double. ieee: all-ones exponent is infinity or NaN; else
 * (fp8 e4m3) only all-ones exponent and mantissa is NaN. */
static double mg_bench_small_decode(uint32_t bits, int ebits, int mbits, int bias, int ieee) {
  const uint32_t emax = (1u << ebits) - 1, mmax = (1u << mbits) - 1;
  const uint32_t ex = (bits >> mbits) & emax, m = bits & mmax;
  const int neg = (bits >> (ebits + mbits)) & 1;
  double v;
  if (ieee && ex == emax) {
    v = m ? NAN : INFINITY;
  } else if (!ieee && ex == emax && m == mmax) {
    v = NAN;
  } else if (ex == 0) {
    v = ldexp((double)m, 1 - bias - mbits);
  } else {
    v = ldexp((double)(m + (1u << mbits)), (int)ex - bias - mbits);
  }
  return neg ? -v : v;
}

/* Element idx of a floating-type buffer as a double. */
static double mg_bench_get_double(mg_dtype_t dt, const void *base, size_t idx) {
  switch (dt) {
    case MG_FLOAT32: return ((const float *)base)[idx];
    case MG_FLOAT64: return ((const double *)base)[idx];
    case MG_FLOAT16: return mg_bench_small_decode(((const uint16_t *)base)[idx], 5, 10, 15, 1);
    case MG_BFLOAT16: return mg_bench_small_decode(((const uint16_t *)base)[idx], 8, 7, 127, 1);
    case MG_FLOAT8_E4M3: return mg_bench_small_decode(((const uint8_t *)base)[idx], 4, 3, 7, 0);
    case MG_FLOAT8_E5M2: return mg_bench_small_decode(((const uint8_t *)base)[idx], 5, 2, 15, 1);
    default: return NAN;
  }
}

/* Unit of rounding (2^-precision) of a floating dtype. */
static double mg_bench_unit(mg_dtype_t dt) {
  switch (dt) {
    case MG_FLOAT16: return ldexp(1, -11);
    case MG_BFLOAT16: return ldexp(1, -8);
    case MG_FLOAT8_E4M3: return ldexp(1, -4);
    case MG_FLOAT8_E5M2: return ldexp(1, -3);
    case MG_FLOAT64: return ldexp(1, -53);
    default: return ldexp(1, -24);
  }
}

static int mg_bench_is_float(mg_dtype_t dt) {
  return dt >= MG_FLOAT16 && dt < MG_DTYPE_COUNT; /* mgcomm.h: the integers come first */
}

/* Does rank r read its send buffer / write its receive buffer in this case? */
static int mg_bench_reads(const mg_bench_case_t *k, int r) {
  return (k->coll != MG_BENCH_BROADCAST && k->coll != MG_BENCH_SCATTER) || r == k->root;
}
static int mg_bench_writes(const mg_bench_case_t *k, int r) {
  return (k->coll != MG_BENCH_REDUCE && k->coll != MG_BENCH_GATHER) || r == k->root;
}

void mg_bench_fill(const mg_bench_case_t *k, int rank, void *send_img, void *img) {
  const mg_pat_t p = mg_bench_pattern(k);
  const size_t e = mg_dtype_size(k->dtype), g_s = k->g.send_count, g_r = k->g.recv_count;
  const size_t buf = g_s > g_r ? g_s : g_r;
  memset(img, MG_BENCH_POISON, buf * e);
  if (!mg_bench_reads(k, rank)) return;
  char *in = k->inplace ? (char *)img + (size_t)rank * k->g.send_ip_off * e : (char *)send_img;
  for (size_t j = 0; j < g_s; j++) mg_bench_put(k->dtype, in, j, mg_bench_level(&p, rank, j));
}

/* The level or value that element i of rank r's result must have. */
static uint64_t mg_bench_reduce_levels(const mg_bench_case_t *k, const mg_pat_t *p, size_t j,
                                       uint64_t *sum) {
  uint64_t acc = mg_bench_level(p, 0, j);
  *sum = acc;
  for (int q = 1; q < k->nranks; q++) {
    const uint64_t v = mg_bench_level(p, q, j);
    *sum += v;
    switch (k->op) {
      case MG_PROD: acc *= v; break;
      case MG_MAX: acc = v > acc ? v : acc; break;
      case MG_MIN: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  if (k->op == MG_AVG) acc /= (uint64_t)k->nranks; /* integers truncate; sums are >= 0 */
  return acc;
}

uint64_t mg_bench_check(const mg_bench_case_t *k, int rank, const void *img) {
  if (!mg_bench_writes(k, rank)) return 0;
  const mg_pat_t p = mg_bench_pattern(k);
  const mg_dtype_t dt = k->dtype;
  const size_t e = mg_dtype_size(dt), c = k->g.count;
  const int n = k->nranks, root = k->root;
  const char *out = (const char *)img + (k->inplace ? (size_t)rank * k->g.recv_ip_off * e : 0);
  const int reduces = mg_bench_coll_reduces(k->coll);
  const int float_avg = reduces && k->op == MG_AVG && mg_bench_is_float(dt);
  const double tol_rel = (n + 2) * mg_bench_unit(dt);
  uint64_t wrong = 0;
  unsigned char want[8] = {0};
  for (size_t i = 0; i < k->g.recv_count; i++) {
    uint64_t v = 0, sum = 0;
    switch (k->coll) {
      case MG_BENCH_ALL_REDUCE:
      case MG_BENCH_REDUCE: v = mg_bench_reduce_levels(k, &p, i, &sum); break;
      case MG_BENCH_REDUCE_SCATTER:
        v = mg_bench_reduce_levels(k, &p, (size_t)rank * c + i, &sum);
        break;
      case MG_BENCH_ALL_GATHER:
      case MG_BENCH_GATHER: v = mg_bench_level(&p, (int)(i / c), i % c); break;
      case MG_BENCH_ALL_TO_ALL: v = mg_bench_level(&p, (int)(i / c), (size_t)rank * c + i % c); break;
      case MG_BENCH_BROADCAST: v = mg_bench_level(&p, root, i); break;
      case MG_BENCH_SCATTER: v = mg_bench_level(&p, root, (size_t)rank * c + i); break;
      case MG_BENCH_SENDRECV: v = mg_bench_level(&p, (rank - 1 + n) % n, i); break;
      case MG_BENCH_COLL_COUNT: break;
    }
    if (float_avg) {
      const double want_d = (double)sum / n, got = mg_bench_get_double(dt, out, i);
      wrong += !(fabs(got - want_d) <= tol_rel * want_d);
    } else {
      mg_bench_put(dt, want, 0, v);
      wrong += memcmp(out + i * e, want, e) != 0;
    }
  }
  return wrong;
}
