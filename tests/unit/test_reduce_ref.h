/*
 * test_reduce_ref.h -- an independent model of the low-precision formats for the reduction
 * tests: values come from the fields by ldexp, and rounding searches the sorted list of
 * representable values for the nearest one (ties to the even code). Slow, short and obviously
 * right, which is the point: it shares no code or bit tricks with host_reduce.c.
 */
#ifndef MG_TEST_REDUCE_REF_H
#define MG_TEST_REDUCE_REF_H

typedef struct ref_format {
  const char *name;
  int ebits, mbits, bias;
  int ieee;           /* 1: the top exponent holds inf and NaN; 0: E4M3FN (only S.1111.111 NaN) */
  int satfinite;      /* 1: overflow and infinities give the largest finite value */
  unsigned nan_code;  /* the canonical NaN a conversion from float produces */
} ref_format_t;

extern const ref_format_t ref_fp16, ref_bf16, ref_e4m3, ref_e5m2;

/* Number of codes (2^bits) and the largest finite positive code. */
unsigned ref_ncodes(const ref_format_t *f);
unsigned ref_max_code(const ref_format_t *f);
/* The exact value of a code; NAN for NaN codes, +-INFINITY for infinities. */
double ref_decode(const ref_format_t *f, unsigned code);
/* The code nearest to x, ties to the even code; overflow per f->satfinite; NaN -> nan_code. */
unsigned ref_encode(const ref_format_t *f, double x);

#endif
