/*
 * test_reduce_ops.c -- mg__host_reduce for every dtype and op against a reference written
 * element by element, without the library's code: integers in exact 128-bit arithmetic reduced
 * modulo 2^width, float32 in long double rounded to float after each step (64 bits are enough
 * for that double rounding to be harmless), float64 in __float128 likewise, and fp16, bf16, fp8
 * through the format model of test_reduce_ref.c. k = 1..7; sizes around the edges of any block
 * size; dst separate (with a guard zone after it), dst == srcs[0], srcs[k/2] or srcs[k-1]; random
 * inputs that mix full-range bit patterns, moderate values, ties and special values.
 */
#include <math.h>

#include "backend/host/host_reduce.h"
#include "test.h"
#include "test_reduce_ref.h"

typedef unsigned __int128 u128;
typedef __int128 i128;

enum { K_INT, K_F32, K_F64, K_LOWP };

typedef struct dt {
  mg_dtype_t dtype;
  int kind;                /* K_* */
  size_t size;             /* bytes */
  int is_signed;           /* integers */
  const ref_format_t *fmt; /* K_LOWP */
} dt_t;

static const dt_t dts[] = {
    {MG_INT8, K_INT, 1, 1, NULL},        {MG_UINT8, K_INT, 1, 0, NULL},
    {MG_INT32, K_INT, 4, 1, NULL},       {MG_UINT32, K_INT, 4, 0, NULL},
    {MG_INT64, K_INT, 8, 1, NULL},       {MG_UINT64, K_INT, 8, 0, NULL},
    {MG_FLOAT16, K_LOWP, 2, 0, &ref_fp16}, {MG_FLOAT32, K_F32, 4, 0, NULL},
    {MG_FLOAT64, K_F64, 8, 0, NULL},     {MG_BFLOAT16, K_LOWP, 2, 0, &ref_bf16},
    {MG_FLOAT8_E4M3, K_LOWP, 1, 0, &ref_e4m3}, {MG_FLOAT8_E5M2, K_LOWP, 1, 0, &ref_e5m2},
};

/* The operations tested: the five built-ins (avg twice: nranks == k, and nranks > k, where the
 * divisor must still be nranks) and PreMulSum with each scalar residence. */
enum { T_SUM, T_PROD, T_MAX, T_MIN, T_AVG, T_AVG_MORE_RANKS, T_PREMUL_HOST, T_PREMUL_DEV, T_COUNT };
static const char *const t_names[T_COUNT] = {"sum", "prod", "max", "min", "avg", "avg(nranks>k)",
                                             "premul(host)", "premul(device)"};

static uint64_t rng_state = 0x2545F4914F6CDD1Du;
static uint64_t rnd64(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* ---------------------------------------------------------------------------------------------
 * Element access: every element is carried as up to 64 raw bits.
 */
static uint64_t load(const dt_t *d, const void *buf, size_t i) {
  uint64_t v = 0;
  memcpy(&v, (const unsigned char *)buf + i * d->size, d->size); /* little-endian host */
  return v;
}

static void store(const dt_t *d, void *buf, size_t i, uint64_t v) {
  memcpy((unsigned char *)buf + i * d->size, &v, d->size);
}

static float f32_of(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t bits_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static double f64_of(uint64_t v) {
  double f;
  memcpy(&f, &v, sizeof f);
  return f;
}

static uint64_t bits_f64(double f) {
  uint64_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* ---------------------------------------------------------------------------------------------
 * Reference
 */

/* max and min as documented: a NaN operand wins (the first if both are); of equal values
 * (+0 and -0), max prefers the unsigned one and min the signed one. */
static double ref_max(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a > b) return a;
  if (b > a) return b;
  return signbit(a) ? b : a;
}

static double ref_min(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a < b) return a;
  if (b < a) return b;
  return signbit(a) ? a : b;
}

/* Integers as residues modulo 2^w in a u128: sums and products of two residues fit. */
static u128 int_mask(const dt_t *d) { return ((u128)1 << (8 * d->size)) - 1; }

static i128 int_signed(const dt_t *d, u128 r) {
  u128 half = (u128)1 << (8 * d->size - 1);
  if (d->is_signed && r >= half) return (i128)r - (i128)(half << 1);
  return (i128)r;
}

static uint64_t ref_int(const dt_t *d, const uint64_t *x, int k, int t, uint64_t scalar,
                        int nranks) {
  u128 m = int_mask(d);
  int premul = t == T_PREMUL_HOST || t == T_PREMUL_DEV;
  u128 acc = 0;
  for (int j = 0; j < k; j++) {
    u128 y = premul ? ((u128)scalar * x[j]) & m : x[j];
    if (j == 0) {
      acc = y;
      continue;
    }
    switch (t) {
    case T_PROD: acc = (acc * y) & m; break;
    case T_MAX: acc = int_signed(d, y) > int_signed(d, acc) ? y : acc; break;
    case T_MIN: acc = int_signed(d, y) < int_signed(d, acc) ? y : acc; break;
    default: acc = (acc + y) & m; break; /* sum, avg, premul */
    }
  }
  if (t == T_AVG || t == T_AVG_MORE_RANKS) {
    i128 q = int_signed(d, acc) / nranks; /* C division: truncates toward zero */
    acc = (u128)q & m;
  }
  return (uint64_t)acc;
}

/* float32: each operation in long double, rounded to float. */
static uint64_t ref_f32(const uint64_t *x, int k, int t, float s) {
  int premul = t >= T_AVG;
  float acc = 0;
  for (int j = 0; j < k; j++) {
    float v = f32_of(x[j]);
    float y = premul ? (float)((long double)s * v) : v;
    if (j == 0) acc = y;
    else if (t == T_PROD) acc = (float)((long double)acc * y);
    else if (t == T_MAX) acc = (float)ref_max(acc, y);
    else if (t == T_MIN) acc = (float)ref_min(acc, y);
    else acc = (float)((long double)acc + y);
  }
  return bits_f32(acc);
}

/* float64: each operation in __float128, rounded to double. */
static uint64_t ref_f64(const uint64_t *x, int k, int t, double s) {
  int premul = t >= T_AVG;
  double acc = 0;
  for (int j = 0; j < k; j++) {
    double v = f64_of(x[j]);
    double y = premul ? (double)((__float128)s * v) : v;
    if (j == 0) acc = y;
    else if (t == T_PROD) acc = (double)((__float128)acc * y);
    else if (t == T_MAX) acc = ref_max(acc, y);
    else if (t == T_MIN) acc = ref_min(acc, y);
    else acc = (double)((__float128)acc + y);
  }
  return bits_f64(acc);
}

/* fp16, bf16, fp8: each step computed in long double, rounded to float, then to the format. */
static unsigned round_to(const ref_format_t *f, long double v) { return ref_encode(f, (float)v); }

static uint64_t ref_lowp(const ref_format_t *f, const uint64_t *x, int k, int t, unsigned s) {
  int premul = t >= T_AVG;
  double sv = ref_decode(f, s);
  unsigned acc = 0;
  for (int j = 0; j < k; j++) {
    double v = ref_decode(f, (unsigned)x[j]);
    unsigned y = premul ? round_to(f, (long double)sv * v) : (unsigned)x[j];
    double a = ref_decode(f, acc), yv = ref_decode(f, y);
    if (j == 0) acc = y;
    else if (t == T_PROD) acc = round_to(f, (long double)a * yv);
    else if (t == T_MAX) acc = ref_encode(f, ref_max(a, yv));
    else if (t == T_MIN) acc = ref_encode(f, ref_min(a, yv));
    else acc = round_to(f, (long double)a + yv);
  }
  return acc;
}

/* The scalar that MG_AVG uses, worked out here: 1/nranks in double, then float, then the type. */
static uint64_t avg_scalar(const dt_t *d, int nranks) {
  double inv = 1.0 / nranks;
  if (d->kind == K_F64) return bits_f64(inv);
  if (d->kind == K_F32) return bits_f32((float)inv);
  return ref_encode(d->fmt, (float)inv);
}

/* ---------------------------------------------------------------------------------------------
 * Inputs
 */
static uint64_t rnd_int(const dt_t *d) {
  static const int64_t edges[] = {0, -1, 1, 2, INT64_MIN, INT64_MAX, INT8_MIN, INT8_MAX,
                                  INT32_MIN, INT32_MAX, UINT8_MAX, UINT32_MAX};
  uint64_t r = rnd64();
  switch (r % 4) {
  case 0:
  case 1: return rnd64();
  case 2: return (uint64_t)((int64_t)(rnd64() % 17) - 8);
  default: return (uint64_t)edges[rnd64() % (sizeof edges / sizeof edges[0])];
  }
}

/* Moderate values, values that tie, full-range bit patterns, and the special values. */
static double rnd_moderate(void) {
  double m = 1.0 + (double)(rnd64() >> 11) / 0x1p53;
  return ldexp((rnd64() & 1) ? -m : m, (int)(rnd64() % 13) - 6);
}

static uint64_t rnd_f32(void) {
  static const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, INFINITY, -INFINITY, 0x1p-149f,
                               -0x1p-130f, 3.4e38f};
  uint64_t r = rnd64() % 50;
  if (r == 0) return 0x7FC00000u | (rnd64() & 0x803FFFFFu); /* NaN, random sign and payload */
  if (r < 10) return bits_f32(pool[rnd64() % (sizeof pool / sizeof pool[0])]);
  if (r < 15) return (uint32_t)rnd64() & 0xFF7FFFFFu;      /* any finite pattern */
  if (r < 25) return bits_f32((float)((int)(rnd64() % 33) - 16) / 4);
  return bits_f32((float)rnd_moderate());
}

static uint64_t rnd_f64(void) {
  static const double pool[] = {0.0, -0.0, 1.0, -1.0, 0.5, INFINITY, -INFINITY, 0x1p-1074,
                                -0x1p-1030, 1.7e308};
  uint64_t r = rnd64() % 50;
  if (r == 0) return 0x7FF8000000000000u | (rnd64() & 0x8007FFFFFFFFFFFFu);
  if (r < 10) return bits_f64(pool[rnd64() % (sizeof pool / sizeof pool[0])]);
  if (r < 15) return rnd64() & 0xFFEFFFFFFFFFFFFFu;
  if (r < 25) return bits_f64((double)((int)(rnd64() % 33) - 16) / 4);
  return bits_f64(rnd_moderate());
}

/* Half any code at all (NaN and infinities included), half codes of moderate magnitude, where
 * sums and products round rather than saturate or vanish. */
static uint64_t rnd_lowp(const ref_format_t *f) {
  if (rnd64() & 1) return rnd64() & (ref_ncodes(f) - 1);
  unsigned e = (unsigned)f->bias - 2 + (unsigned)(rnd64() % 5);
  unsigned m = (unsigned)rnd64() & ((1u << f->mbits) - 1);
  unsigned sign = (rnd64() & 1) ? 1u << (f->ebits + f->mbits) : 0;
  return sign | e << f->mbits | m;
}

static uint64_t rnd_value(const dt_t *d) {
  switch (d->kind) {
  case K_INT: return rnd_int(d);
  case K_F32: return rnd_f32();
  case K_F64: return rnd_f64();
  default: return rnd_lowp(d->fmt);
  }
}

/* A PreMulSum scalar: small integers (any bits, now and then), moderate floats. */
static uint64_t rnd_scalar(const dt_t *d) {
  switch (d->kind) {
  case K_INT: return (rnd64() & 3) == 0 ? rnd64() : (uint64_t)((int64_t)(rnd64() % 9) - 4);
  case K_F32: return bits_f32((float)rnd_moderate());
  case K_F64: return bits_f64(rnd_moderate());
  default: return ref_encode(d->fmt, (float)(rnd_moderate() / 8));
  }
}

/* ---------------------------------------------------------------------------------------------
 * One call, checked
 */
enum { ALIAS_NONE, ALIAS_FIRST, ALIAS_MIDDLE, ALIAS_LAST, ALIAS_COUNT };
static const char *const alias_names[ALIAS_COUNT] = {"dst separate", "dst == srcs[0]",
                                                     "dst == srcs[k/2]", "dst == srcs[k-1]"};
#define GUARD 16
#define GUARD_BYTE 0xA5

static int results_match(const dt_t *d, int t, uint64_t got, uint64_t want) {
  if (got == want) return 1;
  /* An arithmetic NaN's bits are the FPU's business; max and min promise the operand's bits. */
  if (t == T_MAX || t == T_MIN) return 0;
  if (d->kind == K_F32) return isnan(f32_of(got)) && isnan(f32_of(want));
  if (d->kind == K_F64) return isnan(f64_of(got)) && isnan(f64_of(want));
  return 0;
}

static void run_case(const dt_t *d, int t, int k, size_t n, int alias) {
  unsigned char *src[7];
  for (int j = 0; j < k; j++) {
    src[j] = malloc(n * d->size + GUARD);
    ASSERT(src[j] != NULL);
    for (size_t i = 0; i < n; i++) store(d, src[j], i, rnd_value(d));
  }
  unsigned char *own = malloc(n * d->size + GUARD);
  ASSERT(own != NULL);
  memset(own, GUARD_BYTE, n * d->size + GUARD);
  unsigned char *dst = alias == ALIAS_FIRST    ? src[0]
                       : alias == ALIAS_MIDDLE ? src[k / 2]
                       : alias == ALIAS_LAST   ? src[k - 1]
                                               : own;

  int nranks = t == T_AVG_MORE_RANKS ? k + 3 : k;
  mg__redop_t op;
  memset(&op, 0, sizeof op);
  uint64_t scalar = 0;
  if (t == T_PREMUL_HOST || t == T_PREMUL_DEV) {
    scalar = rnd_scalar(d);
    op.op = (mg_op_t)(MG_OP_BUILTIN_COUNT + 3);
    op.premul = 1;
    op.residence = t == T_PREMUL_HOST ? MG_SCALAR_HOST_IMMEDIATE : MG_SCALAR_DEVICE;
    memcpy(op.scalar, &scalar, d->size);
    op.scalar_ptr = t == T_PREMUL_DEV ? &scalar : NULL;
    if (t == T_PREMUL_DEV) memset(op.scalar, 0, sizeof op.scalar); /* must not be read */
  } else {
    op.op = t == T_AVG_MORE_RANKS ? MG_AVG : (mg_op_t)t;
    if (d->kind != K_INT && (t == T_AVG || t == T_AVG_MORE_RANKS)) scalar = avg_scalar(d, nranks);
  }

  uint64_t *want = malloc((n + 1) * sizeof *want);
  ASSERT(want != NULL);
  for (size_t i = 0; i < n; i++) {
    uint64_t x[7];
    for (int j = 0; j < k; j++) x[j] = load(d, src[j], i);
    int copy = k == 1 && t <= T_MIN;
    if (copy) want[i] = x[0];
    else if (d->kind == K_INT) want[i] = ref_int(d, x, k, t, scalar, nranks);
    else if (d->kind == K_F32) want[i] = ref_f32(x, k, t, f32_of(scalar));
    else if (d->kind == K_F64) want[i] = ref_f64(x, k, t, f64_of(scalar));
    else want[i] = ref_lowp(d->fmt, x, k, t, (unsigned)scalar);
  }

  const void *srcs[7];
  for (int j = 0; j < k; j++) srcs[j] = src[j];
  mg__host_reduce(dst, srcs, k, n, d->dtype, &op, nranks);

  for (size_t i = 0; i < n; i++) {
    uint64_t got = load(d, dst, i);
    if (!results_match(d, t, got, want[i])) {
      fprintf(stderr, "inputs at %zu:", i);
      for (int j = 0; j < k; j++)
        fprintf(stderr, " 0x%llx", (unsigned long long)(alias != ALIAS_NONE && src[j] == dst
                                                            ? 0 : load(d, src[j], i)));
      fprintf(stderr, " (aliased input shown as 0); scalar 0x%llx\n", (unsigned long long)scalar);
      FAIL("%s %s k=%d n=%zu nranks=%d %s: element %zu = 0x%llx, want 0x%llx",
           mg_dtype_name(d->dtype), t_names[t], k, n, nranks, alias_names[alias], i,
           (unsigned long long)got, (unsigned long long)want[i]);
    }
  }
  if (alias == ALIAS_NONE)
    for (size_t b = 0; b < GUARD; b++)
      if (own[n * d->size + b] != GUARD_BYTE)
        FAIL("%s %s k=%d n=%zu: wrote past the end (byte %zu)", mg_dtype_name(d->dtype),
             t_names[t], k, n, b);
  free(want);
  free(own);
  for (int j = 0; j < k; j++) free(src[j]);
}

int main(void) {
  static const size_t sizes[] = {0, 1, 2, 3, 7, 33, 255, 1023, 1024, 1025, 2500};
  for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
    for (int t = 0; t < T_COUNT; t++)
      for (int k = 1; k <= 7; k++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
          for (int alias = 0; alias < ALIAS_COUNT; alias++)
            run_case(&dts[di], t, k, sizes[si], alias);
  return 0;
}
