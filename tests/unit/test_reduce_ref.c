/*
 * test_reduce_ref.c -- the reference model of the low-precision formats (see the header).
 */
#include "test_reduce_ref.h"

#include <math.h>

const ref_format_t ref_fp16 = {"float16", 5, 10, 15, 1, 0, 0x7FFF};
const ref_format_t ref_bf16 = {"bfloat16", 8, 7, 127, 1, 0, 0x7FFF};
const ref_format_t ref_e4m3 = {"float8_e4m3", 4, 3, 7, 0, 1, 0x7F};
const ref_format_t ref_e5m2 = {"float8_e5m2", 5, 2, 15, 1, 1, 0x7F};

unsigned ref_ncodes(const ref_format_t *f) { return 1u << (1 + f->ebits + f->mbits); }

unsigned ref_max_code(const ref_format_t *f) {
  unsigned emax = (1u << f->ebits) - 1, mmax = (1u << f->mbits) - 1;
  return f->ieee ? ((emax - 1) << f->mbits) | mmax : (emax << f->mbits) | (mmax - 1);
}

double ref_decode(const ref_format_t *f, unsigned code) {
  unsigned sign = code >> (f->ebits + f->mbits);
  unsigned e = (code >> f->mbits) & ((1u << f->ebits) - 1);
  unsigned m = code & ((1u << f->mbits) - 1);
  unsigned emax = (1u << f->ebits) - 1;
  double v;
  if (f->ieee && e == emax)
    v = m != 0 ? NAN : INFINITY;
  else if (!f->ieee && e == emax && m == (1u << f->mbits) - 1)
    v = NAN;
  else if (e == 0)
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  else
    v = ldexp((double)(m + (1u << f->mbits)), (int)e - f->bias - f->mbits);
  return sign ? -v : v;
}

unsigned ref_encode(const ref_format_t *f, double x) {
  if (isnan(x)) return f->nan_code;
  unsigned sign = signbit(x) ? 1u << (f->ebits + f->mbits) : 0;
  double ax = fabs(x);
  unsigned top = ref_max_code(f);
  double max = ref_decode(f, top);
  double beyond = max + (max - ref_decode(f, top - 1)); /* where the next binade would start */
  unsigned inf_code = ((1u << f->ebits) - 1) << f->mbits;
  if (ax > max) {
    if (f->satfinite) return sign | top;
    /* Between max and the next value up: nearest, and a tie goes to the even code, which is the
     * one above max (max's code is odd), i.e. infinity. */
    return sign | (ax - max < beyond - ax ? top : inf_code);
  }
  /* Largest code whose value is <= ax. */
  unsigned lo = 0, hi = top;
  while (lo < hi) {
    unsigned mid = (lo + hi + 1) / 2;
    if (ref_decode(f, mid) <= ax)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == top) return sign | top;
  double below = ref_decode(f, lo), above = ref_decode(f, lo + 1);
  unsigned c;
  if (ax - below < above - ax)
    c = lo;
  else if (ax - below > above - ax)
    c = lo + 1;
  else
    c = (lo & 1) ? lo + 1 : lo;
  return sign | c;
}
