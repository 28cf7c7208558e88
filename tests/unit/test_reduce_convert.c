/*
 * test_reduce_convert.c -- the host backend's fp16, bf16 and fp8 conversions against the
 * reference model (test_reduce_ref.c), and fp16 against the compiler's _Float16 where it has
 * one: every code decoded and round-tripped; every tie between neighbouring codes and the floats
 * on either side of it; every rounding class of every upper bit pattern; overflow, saturation,
 * underflow and NaN cases by name; random floats.
 */
#include <float.h>
#include <math.h>

#include "backend/host/host_reduce.h"
#include "test.h"
#include "test_reduce_ref.h"

typedef struct conv {
  const ref_format_t *fmt;
  float (*dec)(unsigned code);
  unsigned (*enc)(float f);
} conv_t;

static float dec_fp16(unsigned c) { return mg__f16_to_f32((uint16_t)c); }
static unsigned enc_fp16(float f) { return mg__f32_to_f16(f); }
static float dec_bf16(unsigned c) { return mg__bf16_to_f32((uint16_t)c); }
static unsigned enc_bf16(float f) { return mg__f32_to_bf16(f); }
static float dec_e4m3(unsigned c) { return mg__e4m3_to_f32((uint8_t)c); }
static unsigned enc_e4m3(float f) { return mg__f32_to_e4m3(f); }
static float dec_e5m2(unsigned c) { return mg__e5m2_to_f32((uint8_t)c); }
static unsigned enc_e5m2(float f) { return mg__f32_to_e5m2(f); }

static const conv_t convs[] = {
    {&ref_fp16, dec_fp16, enc_fp16},
    {&ref_bf16, dec_bf16, enc_bf16},
    {&ref_e4m3, dec_e4m3, enc_e4m3},
    {&ref_e5m2, dec_e5m2, enc_e5m2},
};

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint32_t rnd32(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}

/* One float through the converter and the model; prints both on a mismatch. */
static void check_enc(const conv_t *c, float f) {
  unsigned got = c->enc(f), want = ref_encode(c->fmt, f);
  if (got != want)
    FAIL("%s: encode(%a, bits 0x%08x) = 0x%x, want 0x%x", c->fmt->name, (double)f, bits_of(f),
         got, want);
}

/* Every code decodes to the model's value (same sign for zeros, NaN for NaN) and re-encodes to
 * itself; a NaN code re-encodes to the canonical NaN. */
static void test_every_code(const conv_t *c) {
  for (unsigned code = 0; code < ref_ncodes(c->fmt); code++) {
    float got = c->dec(code);
    double want = ref_decode(c->fmt, code);
    if (isnan(want)) {
      if (!isnan(got)) FAIL("%s: decode(0x%x) = %a, want NaN", c->fmt->name, code, (double)got);
      ASSERT_EQ(c->enc(got), c->fmt->nan_code);
      continue;
    }
    if ((double)got != want || !signbit(got) != !signbit(want))
      FAIL("%s: decode(0x%x) = %a, want %a", c->fmt->name, code, (double)got, want);
    /* Identity, except that a saturating format's infinity comes back as its largest value. */
    unsigned back = code;
    if (isinf(want) && c->fmt->satfinite)
      back = (code & ~(ref_ncodes(c->fmt) / 2 - 1)) | ref_max_code(c->fmt);
    if (c->enc(got) != back)
      FAIL("%s: encode(decode(0x%x)) = 0x%x, want 0x%x", c->fmt->name, code, c->enc(got), back);
  }
}

/* The midpoint of every pair of neighbouring finite codes (exact in float: it needs two more
 * bits than the format has), and the floats just below and above it, both signs. Counts the
 * ties that went up and down: both directions must have been seen. */
static void test_ties(const conv_t *c) {
  unsigned top = ref_max_code(c->fmt), ups = 0, downs = 0;
  for (unsigned code = 0; code < top; code++) {
    double lo = ref_decode(c->fmt, code), hi = ref_decode(c->fmt, code + 1);
    float mid = (float)((lo + hi) / 2);
    ASSERT((double)mid == (lo + hi) / 2);
    float probes[] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY)};
    for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
      check_enc(c, probes[p]);
      check_enc(c, -probes[p]);
    }
    unsigned r = c->enc(mid);
    if (r != code && r != code + 1)
      FAIL("%s: tie %a between 0x%x and 0x%x went to 0x%x", c->fmt->name, (double)mid, code,
           code + 1, r);
    ASSERT_EQ(r & 1, 0);
    if (r == code) downs++; else ups++;
    ASSERT_EQ(c->enc(nextafterf(mid, 0.0f)), code);
    ASSERT_EQ(c->enc(nextafterf(mid, INFINITY)), code + 1);
  }
  ASSERT_GT(ups, 0);
  ASSERT_GT(downs, 0);
}

/* For every pattern of the bits a normal result keeps, every class of the bits it drops: below
 * half, exactly half, above half (each at its edges). A format's rounding of a normal value
 * depends on nothing else, so this covers the normal range exhaustively; the tie test covers
 * the subnormal results. */
static void test_rounding_classes(const conv_t *c) {
  int drop = 23 - c->fmt->mbits;
  uint32_t half = 1u << (drop - 1);
  uint32_t lows[] = {0, 1, half - 1, half, half + 1, 2 * half - 1, 0};
  for (uint32_t upper = 0; upper < (1u << (32 - drop)); upper++) {
    lows[6] = rnd32() & (2 * half - 1);
    for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++)
      check_enc(c, float_of(upper << drop | lows[l]));
  }
}

static void test_random(const conv_t *c) {
  for (int i = 0; i < 1 << 18; i++) {
    check_enc(c, float_of(rnd32()));
    /* A float within the format's range: a random mantissa at a random exponent near it. */
    int span = (1 << c->fmt->ebits) + c->fmt->mbits + 4;
    int e = (int)(rnd32() % (uint32_t)span) - c->fmt->bias - c->fmt->mbits - 2;
    float f = ldexpf((float)(rnd32() & 0xFFFFFF) / 0x1p24f + 1.0f, e);
    check_enc(c, (rnd32() & 1) ? -f : f);
  }
}

/* The rules of host_reduce.h stated case by case, so that a failure names the rule. */
static void test_named_cases(void) {
  float max4 = 448.0f, max5 = 57344.0f;
  /* fp8 saturates, infinities included; NaN is 0x7F whatever its sign. */
  ASSERT_EQ(mg__f32_to_e4m3(INFINITY), 0x7E);
  ASSERT_EQ(mg__f32_to_e4m3(-INFINITY), 0xFE);
  ASSERT_EQ(mg__f32_to_e4m3(1e30f), 0x7E);
  ASSERT_EQ(mg__f32_to_e4m3(max4), 0x7E);
  ASSERT_EQ(mg__f32_to_e4m3(464.0f), 0x7E);
  ASSERT_EQ(mg__f32_to_e4m3(nextafterf(464.0f, INFINITY)), 0x7E);
  ASSERT_EQ(mg__f32_to_e4m3(NAN), 0x7F);
  ASSERT_EQ(mg__f32_to_e4m3(-NAN), 0x7F);
  ASSERT(isnan(mg__e4m3_to_f32(0x7F)) && isnan(mg__e4m3_to_f32(0xFF)));
  ASSERT(mg__e4m3_to_f32(0x7E) == max4);
  ASSERT_EQ(mg__f32_to_e5m2(INFINITY), 0x7B);
  ASSERT_EQ(mg__f32_to_e5m2(-INFINITY), 0xFB);
  ASSERT_EQ(mg__f32_to_e5m2(61440.0f), 0x7B);
  ASSERT_EQ(mg__f32_to_e5m2(max5), 0x7B);
  ASSERT_EQ(mg__f32_to_e5m2(NAN), 0x7F);
  ASSERT(isinf(mg__e5m2_to_f32(0x7C)) && mg__e5m2_to_f32(0xFC) < 0);
  ASSERT(isnan(mg__e5m2_to_f32(0x7D)) && isnan(mg__e5m2_to_f32(0xFE)));
  /* Below half the smallest subnormal: signed zero; exactly half: ties to even, zero; above
   * half: the smallest subnormal. */
  ASSERT_EQ(mg__f32_to_e4m3(0x1p-10f), 0x00);
  ASSERT_EQ(mg__f32_to_e4m3(-0x1p-10f), 0x80);
  ASSERT_EQ(mg__f32_to_e4m3(nextafterf(0x1p-10f, 1.0f)), 0x01);
  ASSERT_EQ(mg__f32_to_e4m3(-0x1p-12f), 0x80);
  ASSERT_EQ(mg__f32_to_e4m3(0x3p-10f), 0x02); /* 1.5 subnormal ulps: tie, to even */
  ASSERT_EQ(mg__f32_to_e5m2(0x1p-17f), 0x00);
  ASSERT_EQ(mg__f32_to_e5m2(nextafterf(0x1p-17f, 1.0f)), 0x01);
  ASSERT_EQ(mg__f32_to_e5m2(-0.0f), 0x80);
  /* fp16 and bf16 overflow to infinity; NaN is 0x7FFF. */
  ASSERT_EQ(mg__f32_to_f16(65520.0f), 0x7C00);
  ASSERT_EQ(mg__f32_to_f16(nextafterf(65520.0f, 0.0f)), 0x7BFF);
  ASSERT_EQ(mg__f32_to_f16(-INFINITY), 0xFC00);
  ASSERT_EQ(mg__f32_to_f16(-NAN), 0x7FFF);
  ASSERT_EQ(mg__f32_to_f16(0x1p-25f), 0x0000);
  ASSERT_EQ(mg__f32_to_f16(nextafterf(0x1p-25f, 1.0f)), 0x0001);
  ASSERT_EQ(mg__f32_to_f16(0x1p-14f - 0x1p-26f), 0x0400); /* rounds up into the normals */
  ASSERT_EQ(mg__f32_to_bf16(FLT_MAX), 0x7F80);
  ASSERT_EQ(mg__f32_to_bf16(-FLT_MAX), 0xFF80);
  ASSERT_EQ(mg__f32_to_bf16(NAN), 0x7FFF);
  ASSERT_EQ(mg__f32_to_bf16(float_of(0x3F808000u)), 0x3F80); /* tie, down to even */
  ASSERT_EQ(mg__f32_to_bf16(float_of(0x3F818000u)), 0x3F82); /* tie, up to even */
  ASSERT_EQ(mg__f32_to_bf16(float_of(0x00008000u)), 0x0000); /* float subnormal tie */
  ASSERT_EQ(mg__f32_to_bf16(float_of(0x00018000u)), 0x0002);
}

/* bf16 against the rounding rule written on the bits: truncate, then add one if the dropped
 * half is above 0x8000, or equal to it with an odd result. Every upper half, every class. */
static void test_bf16_formula(void) {
  uint32_t lows[] = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0};
  for (uint32_t upper = 0; upper < 0x10000; upper++) {
    lows[6] = rnd32() & 0xFFFF;
    for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++) {
      uint32_t u = upper << 16 | lows[l];
      unsigned want = upper;
      if (lows[l] > 0x8000 || (lows[l] == 0x8000 && (upper & 1))) want++;
      if ((u & 0x7FFFFFFFu) > 0x7F800000u) want = 0x7FFF;
      if (mg__f32_to_bf16(float_of(u)) != want)
        FAIL("bf16 encode(0x%08x) = 0x%x, want 0x%x", u, mg__f32_to_bf16(float_of(u)), want);
    }
  }
}

/* fp16 against the compiler's own conversions (libgcc's or the F16C instructions), an oracle
 * that shares nothing with ours or with the model. */
static int test_fp16_compiler(void) {
#ifdef __FLT16_MAX__
  for (uint32_t code = 0; code < 0x10000; code++) {
    uint16_t c16 = (uint16_t)code;
    _Float16 h;
    memcpy(&h, &c16, sizeof h);
    float want = (float)h, got = mg__f16_to_f32(c16);
    if (isnan(want) ? !isnan(got) : bits_of(want) != bits_of(got))
      FAIL("fp16 decode(0x%04x) = 0x%08x, compiler 0x%08x", code, bits_of(got), bits_of(want));
  }
  uint32_t lows[] = {0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF, 0};
  for (uint32_t upper = 0; upper < (1u << 19); upper++) {
    lows[6] = rnd32() & 0x1FFF;
    for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++) {
      float f = float_of(upper << 13 | lows[l]);
      _Float16 h = (_Float16)f;
      uint16_t want;
      memcpy(&want, &h, sizeof want);
      if (isnan(f)) want = 0x7FFF; /* the compiler keeps the payload; we canonicalise */
      if (mg__f32_to_f16(f) != want)
        FAIL("fp16 encode(%a) = 0x%04x, compiler 0x%04x", (double)f, mg__f32_to_f16(f), want);
    }
  }
  for (int i = 0; i < 1 << 22; i++) {
    float f = float_of(rnd32());
    if (isnan(f)) continue;
    _Float16 h = (_Float16)f;
    uint16_t want;
    memcpy(&want, &h, sizeof want);
    if (mg__f32_to_f16(f) != want)
      FAIL("fp16 encode(%a) = 0x%04x, compiler 0x%04x", (double)f, mg__f32_to_f16(f), want);
  }
  return 1;
#else
  return 0;
#endif
}

int main(void) {
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
    test_every_code(&convs[i]);
    test_ties(&convs[i]);
    test_rounding_classes(&convs[i]);
    test_random(&convs[i]);
  }
  test_named_cases();
  test_bf16_formula();
  if (!test_fp16_compiler()) printf("note: no _Float16 in this compiler; fp16 checked by model\n");
  return 0;
}
