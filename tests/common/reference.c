/*
 * reference.c -- see reference.h.
 */
#include "reference.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/host/host_reduce.h"

uint64_t ref_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int is_int(mg_dtype_t dt) { return dt <= MG_UINT64; }
static int is_signed(mg_dtype_t dt) {
  return dt == MG_INT8 || dt == MG_INT32 || dt == MG_INT64;
}

/* Integers travel as uint64 (two's complement), floats as double. */
static uint64_t get_u(const void *p, size_t i, mg_dtype_t dt) {
  switch (dt) {
    case MG_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case MG_UINT8: return ((const uint8_t *)p)[i];
    case MG_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case MG_UINT32: return ((const uint32_t *)p)[i];
    case MG_INT64: return (uint64_t)((const int64_t *)p)[i];
    case MG_UINT64: return ((const uint64_t *)p)[i];
    default: return 0;
  }
}

static void put_u(void *p, size_t i, mg_dtype_t dt, uint64_t v) {
  switch (dt) {
    case MG_INT8: case MG_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case MG_INT32: case MG_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
  }
}

static double get_f(const void *p, size_t i, mg_dtype_t dt) {
  switch (dt) {
    case MG_FLOAT16: return mg__f16_to_f32(((const uint16_t *)p)[i]);
    case MG_BFLOAT16: return mg__bf16_to_f32(((const uint16_t *)p)[i]);
    case MG_FLOAT8_E4M3: return mg__e4m3_to_f32(((const uint8_t *)p)[i]);
    case MG_FLOAT8_E5M2: return mg__e5m2_to_f32(((const uint8_t *)p)[i]);
    case MG_FLOAT32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
  }
}

/* Stores v rounded to dt (float32 first for the narrow types, as the library works in float). */
static void put_f(void *p, size_t i, mg_dtype_t dt, double v) {
  switch (dt) {
    case MG_FLOAT16: ((uint16_t *)p)[i] = mg__f32_to_f16((float)v); break;
    case MG_BFLOAT16: ((uint16_t *)p)[i] = mg__f32_to_bf16((float)v); break;
    case MG_FLOAT8_E4M3: ((uint8_t *)p)[i] = mg__f32_to_e4m3((float)v); break;
    case MG_FLOAT8_E5M2: ((uint8_t *)p)[i] = mg__f32_to_e5m2((float)v); break;
    case MG_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
  }
}

/* The value v as the dtype represents it. */
static double round_to(double v, mg_dtype_t dt) {
  unsigned char tmp[8];
  put_f(tmp, 0, dt, v);
  return get_f(tmp, 0, dt);
}

static uint64_t sx(uint64_t v, mg_dtype_t dt) { /* wrap to the type, sign-extended */
  unsigned char tmp[8];
  put_u(tmp, 0, dt, v);
  return get_u(tmp, 0, dt);
}

static uint64_t int_op(uint64_t a, uint64_t b, mg_op_t op, mg_dtype_t dt) {
  switch (op) {
    case MG_PROD: return sx(a * b, dt);
    case MG_MAX: return is_signed(dt) ? ((int64_t)a > (int64_t)b ? a : b) : (a > b ? a : b);
    case MG_MIN: return is_signed(dt) ? ((int64_t)a < (int64_t)b ? a : b) : (a < b ? a : b);
    default: return sx(a + b, dt); /* sum, avg, premul */
  }
}

/* Pairwise float step in the precision the library documents: double for float64, float for
 * every other floating type. */
static double flt_op(double a, double b, mg_op_t op, mg_dtype_t dt) {
  double r;
  if (op == MG_MAX || op == MG_MIN) {
    if (isnan(a) || isnan(b)) return NAN;
    r = op == MG_MAX ? (a > b ? a : b) : (a < b ? a : b);
    if (a == b && a == 0) r = op == MG_MAX ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
    return r;
  }
  if (dt == MG_FLOAT64) r = op == MG_PROD ? a * b : a + b;
  else r = op == MG_PROD ? (double)((float)a * (float)b) : (double)((float)a + (float)b);
  return round_to(r, dt);
}

void ref_reduce(void *out, const void *const *in, int k, size_t n, mg_dtype_t dt, mg_op_t op,
                const void *premul_scalar, int nranks) {
  for (size_t i = 0; i < n; i++) {
    if (is_int(dt)) {
      uint64_t s = premul_scalar ? get_u(premul_scalar, 0, dt) : 1;
      uint64_t acc = 0;
      for (int j = 0; j < k; j++) {
        uint64_t x = get_u(in[j], i, dt);
        if (premul_scalar) x = sx(s * x, dt);
        acc = j == 0 ? x : int_op(acc, x, op, dt);
      }
      if (op == MG_AVG) {
        if (is_signed(dt)) acc = (uint64_t)((int64_t)acc / (int64_t)nranks);
        else acc = acc / (uint64_t)nranks;
        acc = sx(acc, dt);
      }
      put_u(out, i, dt, acc);
    } else {
      double s = 1;
      int pre = premul_scalar != NULL || op == MG_AVG;
      if (premul_scalar) s = get_f(premul_scalar, 0, dt);
      else if (op == MG_AVG) s = round_to(1.0 / nranks, dt);
      double acc = 0;
      for (int j = 0; j < k; j++) {
        double x = get_f(in[j], i, dt);
        if (pre) x = flt_op(s, x, MG_PROD, dt);
        acc = j == 0 ? x : flt_op(acc, x, op == MG_AVG ? MG_SUM : op, dt);
      }
      put_f(out, i, dt, acc);
    }
  }
}

int ref_equal(const void *a, const void *b, size_t i, mg_dtype_t dt) {
  size_t es = mg_dtype_size(dt);
  if (memcmp((const char *)a + i * es, (const char *)b + i * es, es) == 0) return 1;
  if (is_int(dt)) return 0;
  double x = get_f(a, i, dt), y = get_f(b, i, dt);
  return x == y || (isnan(x) && isnan(y)); /* +0 and -0 are equal: their order is unspecified */
}

void ref_fill(void *buf, size_t n, mg_dtype_t dt, uint64_t seed) {
  uint64_t st = seed * 0x2545f4914f6cdd1dull + 1;
  for (size_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&st);
    if (is_int(dt)) {
      put_u(buf, i, dt, r);
    } else {
      /* Multiples of 1/8 in [-4, 4): exact in every type but fp8's coarse grid, where they are
       * rounded on the way in like any input. */
      double v = (double)((int64_t)(r % 64) - 32) / 8.0;
      put_f(buf, i, dt, v);
    }
  }
}

const char *ref_show(const void *p, size_t i, mg_dtype_t dt, char *buf, size_t len) {
  if (is_int(dt))
    snprintf(buf, len, "%lld", (long long)get_u(p, i, dt));
  else
    snprintf(buf, len, "%.9g", get_f(p, i, dt));
  return buf;
}

double ref_value(const void *p, size_t i, mg_dtype_t dt) {
  if (!is_int(dt)) return get_f(p, i, dt);
  uint64_t v = get_u(p, i, dt);
  return is_signed(dt) ? (double)(int64_t)v : (double)v;
}

uint64_t ref_case_seed(const ref_case_t *c, int rank) {
  return c->seed * 1000003u + (uint64_t)rank * 7919u + 17;
}

size_t ref_a2av_count(const ref_case_t *c, int i, int j) {
  uint64_t st = c->seed ^ ((uint64_t)i << 20) ^ ((uint64_t)j << 40);
  uint64_t r = ref_rand(&st);
  return (r & 3) == 0 ? 0 : (size_t)(r % (c->count + 1));
}

void ref_a2av_layout(const ref_case_t *c, int nranks, int me, size_t *sc, size_t *sd, size_t *rc,
                     size_t *rd, size_t *sext, size_t *rext) {
  size_t so = 0, ro = 0;
  for (int p = 0; p < nranks; p++) {
    sc[p] = ref_a2av_count(c, me, p), sd[p] = so, so += sc[p] + 3;
    rc[p] = ref_a2av_count(c, p, me), rd[p] = ro, ro += rc[p] + 3;
  }
  *sext = so, *rext = ro;
}
