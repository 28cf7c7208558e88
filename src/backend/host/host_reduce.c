/*
 * host_reduce.c -- element-wise reductions of the host backend (semantics in host_reduce.h).
 *
 * Divisions: bit casts; scalar conversions of the low-precision types; max/min with the NaN and
 * signed-zero rule; the kernels (integers, float32/float64, low-precision through float); the
 * entry point.
 *
 * Every kernel works on blocks of HR_BLOCK elements: it combines the block of each source, in
 * srcs order, into an accumulator on the stack (small, and apart from dst and every source), the
 * integer and float kernels the last source straight into dst, the low-precision ones writing
 * the accumulator out after it. All other sources of a block are read before its dst is written,
 * which is what makes dst == srcs[j] safe. The element loops are branch-free (selects, not ifs),
 * so that they vectorise.
 *
 * The conversions round subnormal results with a float addition, so they (like the float
 * arithmetic itself) assume the default floating-point environment: round to nearest, no
 * flush-to-zero.
 */
#include "backend/host/host_reduce.h"
#include "core/dtype.h"

#include <math.h>
#include <string.h>

/* Elements per block: 4 KiB of float accumulator, 8 KiB for the 8-byte types. */
#define HR_BLOCK 1024

/* ---------------------------------------------------------------------------------------------
 * Bit casts
 */
static inline uint32_t hr_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float hr_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* ---------------------------------------------------------------------------------------------
 * Scalar conversions. Decoding is exact. Encoding rounds to nearest even; a NaN becomes the
 * type's canonical NaN (0x7FFF, 0x7F), as CUDA's conversions do. Each encoder computes the
 * normal, subnormal and special results and selects one, to stay vectorisable. The results not
 * selected may raise floating-point exception flags; nothing here reads them (the file is built
 * with -fno-trapping-math).
 */

/* The magnitude bits are moved into float position, where a float's exponent is 127 - 15 = 112
 * too small; multiplying by 2^112 (exact) fixes that for normal and subnormal halves alike. */
static inline float hr_f16_dec(uint16_t h) {
  uint32_t t = (uint32_t)(h & 0x7FFF) << 13;
  uint32_t finite = hr_bits(hr_float(t) * 0x1p112f);
  uint32_t mag = (h & 0x7C00) == 0x7C00 ? t | 0x7F800000u : finite;
  return hr_float(mag | (uint32_t)(h & 0x8000) << 16);
}

/* Normal: add just under half an ulp plus the lsb (ties to even), shift, rebias. Subnormal
 * (|f| < 2^-14): adding 0.5f, whose ulp is 2^-24 (the smallest fp16 subnormal), makes the FPU
 * round |f| to a multiple of 2^-24; the excess mantissa bits are the fp16 code. Overflow starts
 * at 65520, halfway between 65504 and 65536, where ties-to-even goes up. */
static inline uint16_t hr_f16_enc(float f) {
  uint32_t u = hr_bits(f), a = u & 0x7FFFFFFFu;
  uint32_t normal = (a + 0xFFFu + ((a >> 13) & 1u) - 0x38000000u) >> 13;
  uint32_t sub = hr_bits(hr_float(a) + 0.5f) - 0x3F000000u;
  uint32_t r = a < 0x38800000u ? sub : normal;
  r = a >= 0x477FF000u ? 0x7C00u : r;
  return a > 0x7F800000u ? (uint16_t)0x7FFF : (uint16_t)(((u >> 16) & 0x8000u) | r);
}

static inline float hr_bf16_dec(uint16_t b) { return hr_float((uint32_t)b << 16); }

/* bf16 keeps float's exponent range: rounding the upper half is the whole job, and a carry out
 * of the largest finite value lands on infinity, as it should. */
static inline uint16_t hr_bf16_enc(float f) {
  uint32_t u = hr_bits(f);
  uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? (uint16_t)0x7FFF : (uint16_t)r;
}

/* E4M3: bias 7, so the float exponent is 120 too small: multiply by 2^120. S.1111.111 is NaN. */
static inline float hr_e4m3_dec(uint8_t v) {
  uint32_t t = (uint32_t)(v & 0x7F) << 20;
  uint32_t finite = hr_bits(hr_float(t) * 0x1p120f);
  uint32_t mag = (v & 0x7F) == 0x7F ? 0x7FC00000u : finite;
  return hr_float(mag | (uint32_t)(v & 0x80) << 24);
}

/* Saturating (satfinite): everything from 448 up, infinities included, is 448; the values in
 * (448, 464] would round to 448 anyway and 480 does not exist (it is the NaN code). Subnormals
 * (|f| < 2^-6) are rounded by adding 2^14, whose ulp is 2^-9. */
static inline uint8_t hr_e4m3_enc(float f) {
  uint32_t u = hr_bits(f), a = u & 0x7FFFFFFFu;
  uint32_t normal = (a + 0x7FFFFu + ((a >> 20) & 1u) - 0x3C000000u) >> 20;
  uint32_t sub = hr_bits(hr_float(a) + 0x1p14f) - 0x46800000u;
  uint32_t r = a < 0x3C800000u ? sub : normal;
  r = a >= 0x43E00000u ? 0x7Eu : r;
  return a > 0x7F800000u ? (uint8_t)0x7F : (uint8_t)(((u >> 24) & 0x80u) | r);
}

/* E5M2 is the upper byte of an fp16. */
static inline float hr_e5m2_dec(uint8_t v) { return hr_f16_dec((uint16_t)(v << 8)); }

/* Saturating: everything from 57344 up, infinities included, is 57344 (values below 61440 would
 * round to it anyway). Subnormals (|f| < 2^-14) are rounded by adding 128, whose ulp is 2^-16. */
static inline uint8_t hr_e5m2_enc(float f) {
  uint32_t u = hr_bits(f), a = u & 0x7FFFFFFFu;
  uint32_t normal = (a + 0xFFFFFu + ((a >> 21) & 1u) - 0x38000000u) >> 21;
  uint32_t sub = hr_bits(hr_float(a) + 128.0f) - 0x43000000u;
  uint32_t r = a < 0x38800000u ? sub : normal;
  r = a >= 0x47600000u ? 0x7Bu : r;
  return a > 0x7F800000u ? (uint8_t)0x7F : (uint8_t)(((u >> 24) & 0x80u) | r);
}

float mg__f16_to_f32(uint16_t h) { return hr_f16_dec(h); }
uint16_t mg__f32_to_f16(float f) { return hr_f16_enc(f); }
float mg__bf16_to_f32(uint16_t b) { return hr_bf16_dec(b); }
uint16_t mg__f32_to_bf16(float f) { return hr_bf16_enc(f); }
float mg__e4m3_to_f32(uint8_t v) { return hr_e4m3_dec(v); }
uint8_t mg__f32_to_e4m3(float f) { return hr_e4m3_enc(f); }
float mg__e5m2_to_f32(uint8_t v) { return hr_e5m2_dec(v); }
uint8_t mg__f32_to_e5m2(float f) { return hr_e5m2_enc(f); }

/* ---------------------------------------------------------------------------------------------
 * max and min of floating values: a NaN operand wins (a's if both are NaN, bit for bit); of two
 * equal values, max takes the one without a sign bit and min the one with it, so that
 * max(-0, +0) is +0 and min(-0, +0) is -0 in either order (IEEE 754-2019 maximum/minimum).
 */
#define HR_DEFINE_MAXMIN(T, SUFFIX)                                               \
  static inline T hr_max_##SUFFIX(T a, T b) {                                     \
    T r = a > b ? a : b; /* b when either is NaN */                               \
    r = a == b && !signbit(a) ? a : r;                                            \
    return a != a ? a : r;                                                        \
  }                                                                               \
  static inline T hr_min_##SUFFIX(T a, T b) {                                     \
    T r = a < b ? a : b; /* b when either is NaN */                               \
    r = a == b && signbit(a) ? a : r;                                             \
    return a != a ? a : r;                                                        \
  }
HR_DEFINE_MAXMIN(float, f32)
HR_DEFINE_MAXMIN(double, f64)

/* ---------------------------------------------------------------------------------------------
 * Kernels. kind says what to do with each source; its first four values are mg_op_t's.
 */
typedef enum hr_kind {
  HR_SUM = MG_SUM,
  HR_PROD = MG_PROD,
  HR_MAX = MG_MAX,
  HR_MIN = MG_MIN,
  HR_PREMUL /* sum of scalar * x_j */
} hr_kind_t;

/* scalar: the PreMulSum scalar in the dtype (HR_PREMUL only); with sstride > 0, source j's
 * scalar is at scalar + j * sstride. divisor: 0, or the number the integer sum is divided by at
 * the end (integer MG_AVG). */
typedef void hr_kernel_fn(void *dst, const void *const *srcs, int k, size_t n, hr_kind_t kind,
                          const unsigned char *scalar, size_t sstride, int divisor);

static inline size_t hr_block_len(size_t n, size_t base) {
  return n - base < HR_BLOCK ? n - base : HR_BLOCK;
}

/* The body of the integer and float kernels NAME: per block, the first source (scaled into acc by
 * NAME##_scale for a PreMulSum), each next source combined into acc by NAME##_step (out[i] =
 * a[i] op x[i], with source j's scalar), and the last one straight into dst. Only that last step
 * writes dst, after every other source of the block was read, so dst may be any source; with two
 * sources each block goes from them to dst in one pass (1.5-1.9x the speed of combining in acc
 * and copying it out, float32 sum of 16 KiB-8 MiB on the development VM). NAME##_finish then
 * divides the block for an integer MG_AVG, while it is in cache. */
#define HR_BLOCKS(NAME, T)                                                                     \
  T s;                                                                                         \
  memcpy(&s, scalar, sizeof s);                                                                \
  for (size_t base = 0; base < n; base += HR_BLOCK) {                                          \
    const size_t b = hr_block_len(n, base);                                                    \
    T acc[HR_BLOCK];                                                                           \
    T *out = (T *)dst + base;                                                                  \
    const T *a = (const T *)srcs[0] + base;                                                    \
    if (kind == HR_PREMUL) {                                                                   \
      if (sstride != 0) memcpy(&s, scalar, sizeof s);                                          \
      for (size_t i = 0; i < b; i++) acc[i] = NAME##_scale(s, a[i]);                           \
      a = acc;                                                                                 \
    }                                                                                          \
    for (int j = 1; j < k; j++) {                                                              \
      if (kind == HR_PREMUL && sstride != 0)                                                   \
        memcpy(&s, scalar + (size_t)j * sstride, sizeof s);                                    \
      NAME##_step(j + 1 == k ? out : acc, a, (const T *)srcs[j] + base, b, kind, s);           \
      a = acc;                                                                                 \
    }                                                                                          \
    if (k == 1 && a != out) memcpy(out, a, b * sizeof(T));                                     \
    NAME##_finish(out, b, divisor);                                                            \
  }

/* Integers: S is the element type (signed or not; it decides max, min and the division), U the
 * unsigned type of the same width that sums and products wrap in, D the 64-bit type of S's
 * signedness for the division (so that a divisor above S's range stays correct). */
#define HR_DEFINE_INT_KERNEL(NAME, S, U, D)                                                   \
  static inline S NAME##_scale(S s, S x) { return (S)((U)s * (U)x); }                          \
  /* integer MG_AVG: the wrapped sum, divided */                                               \
  static inline void NAME##_finish(S *out, size_t b, int divisor) {                            \
    if (divisor != 0)                                                                          \
      for (size_t i = 0; i < b; i++) out[i] = (S)((D)out[i] / (D)divisor);                     \
  }                                                                                            \
  static inline void NAME##_step(S *out, const S *a, const S *x, size_t b, hr_kind_t kind,     \
                                 S s) {                                                        \
    switch (kind) {                                                                            \
    case HR_SUM:                                                                               \
      for (size_t i = 0; i < b; i++) out[i] = (S)((U)a[i] + (U)x[i]);                          \
      break;                                                                                   \
    case HR_PROD:                                                                              \
      for (size_t i = 0; i < b; i++) out[i] = (S)((U)a[i] * (U)x[i]);                          \
      break;                                                                                   \
    case HR_MAX:                                                                               \
      for (size_t i = 0; i < b; i++) out[i] = x[i] > a[i] ? x[i] : a[i];                       \
      break;                                                                                   \
    case HR_MIN:                                                                               \
      for (size_t i = 0; i < b; i++) out[i] = x[i] < a[i] ? x[i] : a[i];                       \
      break;                                                                                   \
    case HR_PREMUL:                                                                            \
      for (size_t i = 0; i < b; i++) out[i] = (S)((U)a[i] + (U)NAME##_scale(s, x[i]));         \
      break;                                                                                   \
    }                                                                                          \
  }                                                                                            \
  static void NAME(void *dst, const void *const *srcs, int k, size_t n, hr_kind_t kind,        \
                   const unsigned char *scalar, size_t sstride, int divisor) {                 \
    HR_BLOCKS(NAME, S)                                                                         \
  }

HR_DEFINE_INT_KERNEL(hr_int8, int8_t, uint8_t, int64_t)
HR_DEFINE_INT_KERNEL(hr_uint8, uint8_t, uint8_t, uint64_t)
HR_DEFINE_INT_KERNEL(hr_int32, int32_t, uint32_t, int64_t)
HR_DEFINE_INT_KERNEL(hr_uint32, uint32_t, uint32_t, uint64_t)
HR_DEFINE_INT_KERNEL(hr_int64, int64_t, uint64_t, int64_t)
HR_DEFINE_INT_KERNEL(hr_uint64, uint64_t, uint64_t, uint64_t)

/* float32 and float64: native IEEE arithmetic. The pre-multiplication is its own statement so
 * that it is rounded before the addition (the file is built with -ffp-contract=off as well). */
#define HR_DEFINE_FLOAT_KERNEL(NAME, T, SUFFIX)                                               \
  static inline T NAME##_scale(T s, T x) { return s * x; }                                     \
  static inline void NAME##_finish(T *out, size_t b, int divisor) { /* avg: a PreMulSum */    \
    (void)out, (void)b, (void)divisor;                                                         \
  }                                                                                            \
  static inline void NAME##_step(T *out, const T *a, const T *x, size_t b, hr_kind_t kind,     \
                                 T s) {                                                        \
    switch (kind) {                                                                            \
    case HR_SUM:                                                                               \
      for (size_t i = 0; i < b; i++) out[i] = a[i] + x[i];                                     \
      break;                                                                                   \
    case HR_PROD:                                                                              \
      for (size_t i = 0; i < b; i++) out[i] = a[i] * x[i];                                     \
      break;                                                                                   \
    case HR_MAX:                                                                               \
      for (size_t i = 0; i < b; i++) out[i] = hr_max_##SUFFIX(a[i], x[i]);                     \
      break;                                                                                   \
    case HR_MIN:                                                                               \
      for (size_t i = 0; i < b; i++) out[i] = hr_min_##SUFFIX(a[i], x[i]);                     \
      break;                                                                                   \
    case HR_PREMUL:                                                                            \
      for (size_t i = 0; i < b; i++) {                                                         \
        T y = s * x[i];                                                                        \
        out[i] = a[i] + y;                                                                     \
      }                                                                                        \
      break;                                                                                   \
    }                                                                                          \
  }                                                                                            \
  static void NAME(void *dst, const void *const *srcs, int k, size_t n, hr_kind_t kind,        \
                   const unsigned char *scalar, size_t sstride, int divisor) {                 \
    HR_BLOCKS(NAME, T)                                                                         \
  }

HR_DEFINE_FLOAT_KERNEL(hr_float32, float, f32)
HR_DEFINE_FLOAT_KERNEL(hr_float64, double, f64)

/* fp16, bf16, fp8: the accumulator holds floats that are always values of the type (each step
 * is rounded back through ENC then DEC), so a step costs one decode of the source, the float
 * operation and one rounding. max and min return one of their operands, which needs no
 * rounding; ENC at the end also canonicalises a NaN. */
#define HR_DEFINE_LOWP_KERNEL(NAME, T, DEC, ENC)                                              \
  static void NAME(void *dst, const void *const *srcs, int k, size_t n, hr_kind_t kind,        \
                   const unsigned char *scalar, size_t sstride, int divisor) {                 \
    T s_code;                                                                                  \
    memcpy(&s_code, scalar, sizeof s_code);                                                    \
    float s = DEC(s_code);                                                                     \
    for (size_t base = 0; base < n; base += HR_BLOCK) {                                        \
      size_t b = hr_block_len(n, base);                                                        \
      float acc[HR_BLOCK];                                                                     \
      const T *x = (const T *)srcs[0] + base;                                                  \
      if (sstride != 0) {                                                                      \
        memcpy(&s_code, scalar, sizeof s_code);                                                \
        s = DEC(s_code);                                                                       \
      }                                                                                        \
      if (kind == HR_PREMUL)                                                                   \
        for (size_t i = 0; i < b; i++) acc[i] = DEC(ENC(s * DEC(x[i])));                       \
      else                                                                                     \
        for (size_t i = 0; i < b; i++) acc[i] = DEC(x[i]);                                     \
      for (int j = 1; j < k; j++) {                                                            \
        x = (const T *)srcs[j] + base;                                                         \
        switch (kind) {                                                                        \
        case HR_SUM:                                                                           \
          for (size_t i = 0; i < b; i++) acc[i] = DEC(ENC(acc[i] + DEC(x[i])));                \
          break;                                                                               \
        case HR_PROD:                                                                          \
          for (size_t i = 0; i < b; i++) acc[i] = DEC(ENC(acc[i] * DEC(x[i])));                \
          break;                                                                               \
        case HR_MAX:                                                                           \
          for (size_t i = 0; i < b; i++) acc[i] = hr_max_f32(acc[i], DEC(x[i]));               \
          break;                                                                               \
        case HR_MIN:                                                                           \
          for (size_t i = 0; i < b; i++) acc[i] = hr_min_f32(acc[i], DEC(x[i]));               \
          break;                                                                               \
        case HR_PREMUL:                                                                        \
          if (sstride != 0) {                                                                  \
            memcpy(&s_code, scalar + (size_t)j * sstride, sizeof s_code);                      \
            s = DEC(s_code);                                                                   \
          }                                                                                    \
          for (size_t i = 0; i < b; i++) {                                                     \
            float y = DEC(ENC(s * DEC(x[i])));                                                 \
            acc[i] = DEC(ENC(acc[i] + y));                                                     \
          }                                                                                    \
          break;                                                                               \
        }                                                                                      \
      }                                                                                        \
      T *out = (T *)dst + base;                                                                \
      for (size_t i = 0; i < b; i++) out[i] = ENC(acc[i]);                                     \
    }                                                                                          \
  }

HR_DEFINE_LOWP_KERNEL(hr_float16, uint16_t, hr_f16_dec, hr_f16_enc)
HR_DEFINE_LOWP_KERNEL(hr_bfloat16, uint16_t, hr_bf16_dec, hr_bf16_enc)
HR_DEFINE_LOWP_KERNEL(hr_float8_e4m3, uint8_t, hr_e4m3_dec, hr_e4m3_enc)
HR_DEFINE_LOWP_KERNEL(hr_float8_e5m2, uint8_t, hr_e5m2_dec, hr_e5m2_enc)

static hr_kernel_fn *const hr_kernels[MG_DTYPE_COUNT] = {
    [MG_INT8] = hr_int8,         [MG_UINT8] = hr_uint8,
    [MG_INT32] = hr_int32,       [MG_UINT32] = hr_uint32,
    [MG_INT64] = hr_int64,       [MG_UINT64] = hr_uint64,
    [MG_FLOAT16] = hr_float16,   [MG_FLOAT32] = hr_float32,
    [MG_FLOAT64] = hr_float64,   [MG_BFLOAT16] = hr_bfloat16,
    [MG_FLOAT8_E4M3] = hr_float8_e4m3, [MG_FLOAT8_E5M2] = hr_float8_e5m2,
};

/* ---------------------------------------------------------------------------------------------
 * Entry point
 */

/* MG_AVG's scalar on a floating dtype, as NCCL computes it: 1.0 / nranks in double, rounded to
 * float (kept as is for float64), then rounded to the dtype. */
static void hr_avg_scalar(mg_dtype_t dtype, int nranks, unsigned char *scalar) {
  double d = 1.0 / nranks;
  float f = (float)d;
  if (dtype == MG_FLOAT64) {
    memcpy(scalar, &d, sizeof d);
  } else if (dtype == MG_FLOAT32) {
    memcpy(scalar, &f, sizeof f);
  } else if (dtype == MG_FLOAT16 || dtype == MG_BFLOAT16) {
    uint16_t h = dtype == MG_FLOAT16 ? hr_f16_enc(f) : hr_bf16_enc(f);
    memcpy(scalar, &h, sizeof h);
  } else {
    uint8_t q = dtype == MG_FLOAT8_E4M3 ? hr_e4m3_enc(f) : hr_e5m2_enc(f);
    memcpy(scalar, &q, sizeof q);
  }
}

void mg__host_reduce(void *dst, const void *const *srcs, int k, size_t n, mg_dtype_t dtype,
                     const mg__redop_t *op, int nranks) {
  mg__host_reduce_scaled(dst, srcs, k, n, dtype, op, nranks, NULL);
}

void mg__host_reduce_scaled(void *dst, const void *const *srcs, int k, size_t n,
                            mg_dtype_t dtype, const mg__redop_t *op, int nranks,
                            const unsigned char *scalars) {
  size_t size = mg__dtype_size(dtype);
  unsigned char scalar[8] = {0};
  hr_kind_t kind;
  int divisor = 0;
  if (op->premul && scalars != NULL) {
    hr_kernels[dtype](dst, srcs, k, n, HR_PREMUL, scalars, 8, 0);
    return;
  }
  if (op->premul) {
    kind = HR_PREMUL;
    memcpy(scalar, op->residence == MG_SCALAR_DEVICE ? op->scalar_ptr : op->scalar, size);
  } else if (op->op == MG_AVG && dtype <= MG_UINT64) { /* the integers are dtypes 0..5 */
    kind = HR_SUM;
    divisor = nranks;
  } else if (op->op == MG_AVG) {
    kind = HR_PREMUL;
    hr_avg_scalar(dtype, nranks, scalar);
  } else {
    kind = (hr_kind_t)op->op;
  }
  if (k == 1 && kind != HR_PREMUL && divisor == 0) {
    if (dst != srcs[0]) memcpy(dst, srcs[0], n * size);
    return;
  }
  hr_kernels[dtype](dst, srcs, k, n, kind, scalar, 0, divisor);
}
