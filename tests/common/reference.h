/*
 * reference.h -- a plain, element-by-element sequential reference for reductions, written
 * independently of the library's kernels (it shares only the scalar fp16/bf16/fp8 conversions,
 * which have their own exhaustive tests), and deterministic test data.
 */
#ifndef MG_TEST_REFERENCE_H
#define MG_TEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "mgcomm.h"

/* out[i] = in[0][i] op in[1][i] op ... (left to right) for i < n, with the documented
 * pre-multiplication (premul != 0: scalar bytes of dtype; MG_AVG on floats) and integer
 * post-division (MG_AVG). */
void ref_reduce(void *out, const void *const *in, int k, size_t n, mg_dtype_t dt, mg_op_t op,
                const void *premul_scalar, int nranks);
/* 1 when element i of a and b are equal: the same bits, the same number (+0 == -0), or both
 * NaN. */
int ref_equal(const void *a, const void *b, size_t i, mg_dtype_t dt);
/* Fills n elements with values derived from seed: finite, moderate magnitudes, sign mixed. */
void ref_fill(void *buf, size_t n, mg_dtype_t dt, uint64_t seed);
uint64_t ref_rand(uint64_t *state);
/* Element i of any dtype as a double (int64 values beyond 2^53 lose bits). */
double ref_value(const void *p, size_t i, mg_dtype_t dt);

/* One case of a collective test, the same on every rank; inputs derive from its seed. */
typedef struct ref_case {
  int kind, dtype, op, inplace, root;
  size_t count;
  uint64_t seed;
} ref_case_t;
/* The seed of rank `rank`'s input in case c. */
uint64_t ref_case_seed(const ref_case_t *c, int rank);
/* all_to_allv of case c: elements rank i sends to rank j (a quarter of the pairs send none). */
size_t ref_a2av_count(const ref_case_t *c, int i, int j);
/* Rank me's counts and displacements (packed, with a gap of 3 poisoned elements after each
 * block) and the extents of its send and recv buffers. */
void ref_a2av_layout(const ref_case_t *c, int nranks, int me, size_t *sc, size_t *sd, size_t *rc,
                     size_t *rd, size_t *sext, size_t *rext);

/* One element as text, for failure messages. */
const char *ref_show(const void *p, size_t i, mg_dtype_t dt, char *buf, size_t len);

#endif
