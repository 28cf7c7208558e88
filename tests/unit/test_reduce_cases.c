/*
 * test_reduce_cases.c -- the rules of host_reduce.h one by one, with values worked out by hand:
 * integer wrap-around, signed max/min, integer avg truncating toward zero (negative sums, sums
 * that wrap, nranks above the type's range), NaN propagation and signed zeros in max/min,
 * saturation of fp8 in a reduction, the avg scalar, PreMulSum with both residences (the device
 * scalar read once), k == 1 as a bit-exact copy and with a transform.
 */
#include <math.h>

#include "backend/host/host_reduce.h"
#include "test.h"

static mg__redop_t builtin(mg_op_t op) {
  mg__redop_t r;
  memset(&r, 0, sizeof r);
  r.op = op;
  return r;
}

static mg__redop_t premul_host(const void *scalar, size_t size) {
  mg__redop_t r = builtin((mg_op_t)(MG_OP_BUILTIN_COUNT + 1));
  r.premul = 1;
  r.residence = MG_SCALAR_HOST_IMMEDIATE;
  memcpy(r.scalar, scalar, size);
  return r;
}

static mg__redop_t premul_device(const void *scalar) {
  mg__redop_t r = builtin((mg_op_t)(MG_OP_BUILTIN_COUNT + 1));
  r.premul = 1;
  r.residence = MG_SCALAR_DEVICE;
  r.scalar_ptr = scalar;
  return r;
}

/* Reduces one element per source: out = x[0] op x[1] ... op x[k-1]. */
static void reduce1(void *out, const void *x, size_t size, int k, mg_dtype_t dt,
                    const mg__redop_t *op, int nranks) {
  const void *srcs[8];
  for (int j = 0; j < k; j++) srcs[j] = (const unsigned char *)x + (size_t)j * size;
  mg__host_reduce(out, srcs, k, 1, dt, op, nranks);
}

static int8_t i8(int k, const int8_t *x, mg_op_t op, int nranks) {
  int8_t out;
  mg__redop_t r = builtin(op);
  reduce1(&out, x, 1, k, MG_INT8, &r, nranks);
  return out;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32(int k, const float *x, mg_op_t op) {
  float out;
  mg__redop_t r = builtin(op);
  reduce1(&out, x, sizeof(float), k, MG_FLOAT32, &r, k);
  return out;
}

static double f64(int k, const double *x, mg_op_t op) {
  double out;
  mg__redop_t r = builtin(op);
  reduce1(&out, x, sizeof(double), k, MG_FLOAT64, &r, k);
  return out;
}

static unsigned code16(int k, const uint16_t *x, mg_dtype_t dt, mg_op_t op, int nranks) {
  uint16_t out;
  mg__redop_t r = builtin(op);
  reduce1(&out, x, 2, k, dt, &r, nranks);
  return out;
}

static unsigned code8(int k, const uint8_t *x, mg_dtype_t dt, mg_op_t op, int nranks) {
  uint8_t out;
  mg__redop_t r = builtin(op);
  reduce1(&out, x, 1, k, dt, &r, nranks);
  return out;
}

static void test_integers(void) {
  /* Wrap-around, on signed types too. */
  ASSERT_EQ(i8(2, (int8_t[]){127, 1}, MG_SUM, 2), -128);
  ASSERT_EQ(i8(2, (int8_t[]){-128, -1}, MG_SUM, 2), 127);
  ASSERT_EQ(i8(2, (int8_t[]){64, 4}, MG_PROD, 2), 0);
  ASSERT_EQ(i8(3, (int8_t[]){-128, -1, 1}, MG_PROD, 3), -128);
  uint8_t u8out, u8in[] = {250, 10};
  mg__redop_t sum = builtin(MG_SUM), prod = builtin(MG_PROD), max = builtin(MG_MAX),
              min = builtin(MG_MIN), avg = builtin(MG_AVG);
  reduce1(&u8out, u8in, 1, 2, MG_UINT8, &sum, 2);
  ASSERT_EQ(u8out, 4);
  int32_t i32out, i32in[] = {INT32_MAX, 1};
  reduce1(&i32out, i32in, 4, 2, MG_INT32, &sum, 2);
  ASSERT_EQ(i32out, INT32_MIN);
  uint64_t u64out, u64in[] = {UINT64_MAX, 2};
  reduce1(&u64out, u64in, 8, 2, MG_UINT64, &sum, 2);
  ASSERT_EQ(u64out, 1);
  int64_t i64out, i64in[] = {INT64_C(1) << 32, INT64_C(1) << 32, 5};
  reduce1(&i64out, i64in, 8, 2, MG_INT64, &prod, 2);
  ASSERT_EQ(i64out, 0);
  i64in[0] = INT64_MIN;
  i64in[1] = -1;
  reduce1(&i64out, i64in, 8, 2, MG_INT64, &prod, 2);
  ASSERT(i64out == INT64_MIN);

  /* max and min compare as the type: signed for int*, unsigned for uint*. */
  ASSERT_EQ(i8(3, (int8_t[]){-1, 1, -128}, MG_MAX, 3), 1);
  ASSERT_EQ(i8(3, (int8_t[]){-1, 1, -128}, MG_MIN, 3), -128);
  u8in[0] = 0xFF;
  u8in[1] = 1;
  reduce1(&u8out, u8in, 1, 2, MG_UINT8, &max, 2);
  ASSERT_EQ(u8out, 0xFF);
  reduce1(&u8out, u8in, 1, 2, MG_UINT8, &min, 2);
  ASSERT_EQ(u8out, 1);
  int64_t big[] = {-1, INT64_MIN + 1};
  reduce1(&i64out, big, 8, 2, MG_INT64, &min, 2);
  ASSERT(i64out == INT64_MIN + 1);
  uint64_t ubig[] = {UINT64_MAX, 1};
  reduce1(&u64out, ubig, 8, 2, MG_UINT64, &max, 2);
  ASSERT(u64out == UINT64_MAX);

  /* avg: the wrapped sum divided by nranks, truncated toward zero. */
  i32in[0] = -7;
  i32in[1] = 0;
  reduce1(&i32out, i32in, 4, 2, MG_INT32, &avg, 2);
  ASSERT_EQ(i32out, -3); /* floor would give -4 */
  i32in[0] = 7;
  reduce1(&i32out, i32in, 4, 2, MG_INT32, &avg, 2);
  ASSERT_EQ(i32out, 3);
  ASSERT_EQ(i8(2, (int8_t[]){-100, -100}, MG_AVG, 2), 28); /* -200 wraps to 56 */
  ASSERT_EQ(i8(2, (int8_t[]){-100, -27}, MG_AVG, 200), 0);
  ASSERT_EQ(i8(2, (int8_t[]){-100, -27}, MG_AVG, 100), -1); /* nranks above int8's range */
  ASSERT_EQ(i8(1, (int8_t[]){-9}, MG_AVG, 4), -2);          /* k == 1 still divides */
  ASSERT_EQ(i8(2, (int8_t[]){-9, 0}, MG_AVG, 4), -2);       /* nranks, not k */
  u8in[0] = 250;
  u8in[1] = 10;
  reduce1(&u8out, u8in, 1, 2, MG_UINT8, &avg, 2);
  ASSERT_EQ(u8out, 2);
  u8in[0] = 255;
  u8in[1] = 0;
  reduce1(&u8out, u8in, 1, 2, MG_UINT8, &avg, 2);
  ASSERT_EQ(u8out, 127); /* unsigned: 255 / 2, not -1 / 2 */
  uint32_t u32out, u32in[] = {UINT32_MAX, 0, 0};
  reduce1(&u32out, u32in, 4, 3, MG_UINT32, &avg, 3);
  ASSERT_EQ(u32out, UINT32_MAX / 3);
  int64_t i64avg[] = {INT64_MIN, 0, 0};
  reduce1(&i64out, i64avg, 8, 3, MG_INT64, &avg, 3);
  ASSERT(i64out == INT64_MIN / 3);

  /* PreMulSum on integers: s * x wrapped, then summed. */
  int8_t s8 = -3, x8[] = {50, 1}, o8;
  mg__redop_t pm = premul_host(&s8, 1);
  reduce1(&o8, x8, 1, 2, MG_INT8, &pm, 2);
  ASSERT_EQ(o8, (int8_t)(-150 + -3)); /* -150 wraps to 106; 106 - 3 = 103 */
  ASSERT_EQ(o8, 103);
}

static void test_float_max_min(void) {
  float nan_a, nan_b;
  uint32_t ua = 0x7FC00001u, ub = 0xFFC00002u;
  memcpy(&nan_a, &ua, 4);
  memcpy(&nan_b, &ub, 4);
  /* A NaN anywhere gives NaN, whichever position; of two NaNs, the first one's bits. */
  ASSERT_EQ(f32_bits(f32(3, (float[]){1, nan_a, 2}, MG_MAX)), 0x7FC00001u);
  ASSERT_EQ(f32_bits(f32(3, (float[]){nan_a, 1, 2}, MG_MIN)), 0x7FC00001u);
  ASSERT_EQ(f32_bits(f32(3, (float[]){1, 2, nan_b}, MG_MAX)), 0xFFC00002u);
  ASSERT_EQ(f32_bits(f32(3, (float[]){1, nan_b, nan_a}, MG_MIN)), 0xFFC00002u);
  ASSERT(isnan(f64(2, (double[]){NAN, 1}, MG_MAX)) && isnan(f64(2, (double[]){-1, NAN}, MG_MIN)));
  ASSERT(isnan(f64(3, (double[]){INFINITY, 0, NAN}, MG_MAX)));
  /* max(-0, +0) = +0 and min(-0, +0) = -0, in either order. */
  ASSERT_EQ(f32_bits(f32(2, (float[]){-0.0f, 0.0f}, MG_MAX)), 0x00000000u);
  ASSERT_EQ(f32_bits(f32(2, (float[]){0.0f, -0.0f}, MG_MAX)), 0x00000000u);
  ASSERT_EQ(f32_bits(f32(2, (float[]){-0.0f, 0.0f}, MG_MIN)), 0x80000000u);
  ASSERT_EQ(f32_bits(f32(2, (float[]){0.0f, -0.0f}, MG_MIN)), 0x80000000u);
  ASSERT(!signbit(f64(2, (double[]){-0.0, 0.0}, MG_MAX)));
  ASSERT(!signbit(f64(2, (double[]){0.0, -0.0}, MG_MAX)));
  ASSERT(signbit(f64(2, (double[]){0.0, -0.0}, MG_MIN)));
  ASSERT(signbit(f64(2, (double[]){-0.0, 0.0}, MG_MIN)));
  ASSERT(f32(3, (float[]){-INFINITY, -1, -5}, MG_MAX) == -1.0f);

  /* Low-precision types: the canonical NaN, and the same zero rule on the codes. */
  ASSERT_EQ(code16(2, (uint16_t[]){0x3C00, 0x7E01}, MG_FLOAT16, MG_MAX, 2), 0x7FFF);
  ASSERT_EQ(code16(2, (uint16_t[]){0xFE01, 0x3C00}, MG_FLOAT16, MG_MIN, 2), 0x7FFF);
  ASSERT_EQ(code16(2, (uint16_t[]){0x8000, 0x0000}, MG_BFLOAT16, MG_MAX, 2), 0x0000);
  ASSERT_EQ(code16(2, (uint16_t[]){0x0000, 0x8000}, MG_BFLOAT16, MG_MIN, 2), 0x8000);
  ASSERT_EQ(code16(2, (uint16_t[]){0xFFC1, 0x3F80}, MG_BFLOAT16, MG_MAX, 2), 0x7FFF);
  ASSERT_EQ(code8(2, (uint8_t[]){0x38, 0xFF}, MG_FLOAT8_E4M3, MG_MAX, 2), 0x7F);
  ASSERT_EQ(code8(2, (uint8_t[]){0x80, 0x00}, MG_FLOAT8_E4M3, MG_MAX, 2), 0x00);
  ASSERT_EQ(code8(2, (uint8_t[]){0x00, 0x80}, MG_FLOAT8_E4M3, MG_MIN, 2), 0x80);
  ASSERT_EQ(code8(2, (uint8_t[]){0x7D, 0x3C}, MG_FLOAT8_E5M2, MG_MIN, 2), 0x7F);
  /* An E5M2 infinity through max becomes the largest finite value (every step saturates). */
  ASSERT_EQ(code8(2, (uint8_t[]){0x7C, 0x3C}, MG_FLOAT8_E5M2, MG_MAX, 2), 0x7B);
  ASSERT_EQ(code8(2, (uint8_t[]){0xFC, 0x3C}, MG_FLOAT8_E5M2, MG_MIN, 2), 0xFB);
}

static void test_lowp_arithmetic(void) {
  /* fp8 saturates in a reduction, infinities included; fp16 and bf16 overflow to infinity. */
  ASSERT_EQ(code8(2, (uint8_t[]){0x7E, 0x7E}, MG_FLOAT8_E4M3, MG_SUM, 2), 0x7E); /* 448+448 */
  ASSERT_EQ(code8(2, (uint8_t[]){0xFE, 0xFE}, MG_FLOAT8_E4M3, MG_SUM, 2), 0xFE);
  ASSERT_EQ(code8(2, (uint8_t[]){0x7E, 0x48}, MG_FLOAT8_E4M3, MG_PROD, 2), 0x7E); /* 448*2 */
  ASSERT_EQ(code8(2, (uint8_t[]){0x7B, 0x7B}, MG_FLOAT8_E5M2, MG_SUM, 2), 0x7B);
  ASSERT_EQ(code8(2, (uint8_t[]){0x7C, 0x3C}, MG_FLOAT8_E5M2, MG_SUM, 2), 0x7B);  /* inf+1 */
  ASSERT_EQ(code8(2, (uint8_t[]){0xFC, 0x3C}, MG_FLOAT8_E5M2, MG_SUM, 2), 0xFB);
  ASSERT_EQ(code8(2, (uint8_t[]){0x7C, 0xFC}, MG_FLOAT8_E5M2, MG_SUM, 2), 0x7F);  /* inf-inf */
  ASSERT_EQ(code16(2, (uint16_t[]){0x7BFF, 0x7BFF}, MG_FLOAT16, MG_SUM, 2), 0x7C00);
  ASSERT_EQ(code16(2, (uint16_t[]){0xFF7F, 0xFF7F}, MG_BFLOAT16, MG_SUM, 2), 0xFF80);
  /* Each step rounds: in fp16, 2048 + 1 = 2048 (tie to even) and again, where one float sum
   * of all three would give 2050. */
  ASSERT_EQ(code16(3, (uint16_t[]){0x6800, 0x3C00, 0x3C00}, MG_FLOAT16, MG_SUM, 3), 0x6800);
  /* In E4M3, 1 + 0.0625 is a tie between 1 and 1.125: to even, 1. Then 1 + 0.125 = 1.125. */
  ASSERT_EQ(code8(2, (uint8_t[]){0x38, 0x18}, MG_FLOAT8_E4M3, MG_SUM, 2), 0x38);
  ASSERT_EQ(code8(2, (uint8_t[]){0x38, 0x20}, MG_FLOAT8_E4M3, MG_SUM, 2), 0x39);

  /* avg: s = 1/nranks rounded to the type, then premultiplied and rounded, then summed.
   * 1/3 in E4M3 is 0.34375 (0x2B); 3 * 0.34375 = 1.03125, rounded to 1.0 (0x38); the sum of
   * three of those is 3 (0x44). In bf16, 1/3 is 0x3EAB (0.333984375). */
  ASSERT_EQ(code8(3, (uint8_t[]){0x44, 0x44, 0x44}, MG_FLOAT8_E4M3, MG_AVG, 3), 0x44);
  ASSERT_EQ(code16(1, (uint16_t[]){0x3F80}, MG_BFLOAT16, MG_AVG, 3), 0x3EAB);
  ASSERT_EQ(code16(1, (uint16_t[]){0x3C00}, MG_FLOAT16, MG_AVG, 4), 0x3400); /* k == 1: 0.25 */
  float favg = f32(2, (float[]){1.0f, 2.0f}, MG_AVG);
  ASSERT(favg == 1.5f);
  float f3[] = {1.0f, 1.0f, 1.0f}, out;
  mg__redop_t avg = builtin(MG_AVG);
  reduce1(&out, f3, 4, 3, MG_FLOAT32, &avg, 3);
  ASSERT(out == (float)(1.0f / 3) + (float)(1.0f / 3) + (float)(1.0f / 3));
}

/* k == 1 without a transform copies bits, even a non-canonical NaN and an E5M2 infinity. */
static void test_copy(void) {
  ASSERT_EQ(code16(1, (uint16_t[]){0x7E01}, MG_FLOAT16, MG_SUM, 1), 0x7E01);
  ASSERT_EQ(code16(1, (uint16_t[]){0xFFC1}, MG_BFLOAT16, MG_MAX, 1), 0xFFC1);
  ASSERT_EQ(code8(1, (uint8_t[]){0x7C}, MG_FLOAT8_E5M2, MG_PROD, 1), 0x7C);
  ASSERT_EQ(code8(1, (uint8_t[]){0xFF}, MG_FLOAT8_E4M3, MG_MIN, 1), 0xFF);
  uint32_t snan = 0x7F800001u, got;
  mg__redop_t sum = builtin(MG_SUM);
  reduce1(&got, &snan, 4, 1, MG_FLOAT32, &sum, 1);
  ASSERT_EQ(got, 0x7F800001u);
}

/* PreMulSum: y_j = round(s * x_j), then summed; the scalar in the op (host immediate) or behind
 * scalar_ptr (device residence, which on the host backend is host memory). */
static void test_premul(void) {
  float s = 0.5f, x[] = {3.0f, 5.0f}, out;
  mg__redop_t ph = premul_host(&s, sizeof s), pd = premul_device(&s);
  reduce1(&out, x, 4, 2, MG_FLOAT32, &ph, 2);
  ASSERT(out == 4.0f);
  reduce1(&out, x, 4, 2, MG_FLOAT32, &pd, 2);
  ASSERT(out == 4.0f);
  s = 2.0f; /* the device scalar is read when the reduction runs */
  reduce1(&out, x, 4, 2, MG_FLOAT32, &pd, 2);
  ASSERT(out == 16.0f);
  reduce1(&out, x, 4, 1, MG_FLOAT32, &pd, 1); /* k == 1 still multiplies */
  ASSERT(out == 6.0f);

  /* fp16, s = 0x3555 (0.333251953125), x = {1, 5}: the products round to 0x3555 and 0x3EAA
   * (1.666259765625 -> 1.666015625), whose sum 1.999267578125 rounds to 0x3FFF. Without the
   * rounding of the products the sum would be 1.99951171875, a tie that goes to 2.0. */
  uint16_t s16 = 0x3555, x16[] = {0x3C00, 0x4500}, o16;
  mg__redop_t p16 = premul_host(&s16, 2);
  reduce1(&o16, x16, 2, 2, MG_FLOAT16, &p16, 2);
  ASSERT_EQ(o16, 0x3FFF);
  double s64 = 0.1, x64[] = {3.0, 7.0}, o64;
  mg__redop_t p64 = premul_device(&s64);
  reduce1(&o64, x64, 8, 2, MG_FLOAT64, &p64, 2);
  ASSERT(o64 == 0.1 * 3.0 + 0.1 * 7.0);

  /* Read once, at the start: the scalar lives in dst[0], which the first block overwrites.
   * Every element must still be scaled by the original value (2), in every block. */
  enum { N = 5000 };
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *dst = malloc(N * sizeof *dst);
  ASSERT(a != NULL && b != NULL && dst != NULL);
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = 1.0f;
  }
  dst[0] = 2.0f;
  mg__redop_t pin = premul_device(&dst[0]);
  const void *srcs[] = {a, b};
  mg__host_reduce(dst, srcs, 2, N, MG_FLOAT32, &pin, 2);
  for (int i = 0; i < N; i++)
    if (dst[i] != 2.0f * (float)i + 2.0f)
      FAIL("element %d = %g, want %g", i, (double)dst[i], 2.0 * i + 2.0);
  free(a);
  free(b);
  free(dst);
}

int main(void) {
  test_integers();
  test_float_max_min();
  test_lowp_arithmetic();
  test_copy();
  test_premul();
  return 0;
}
