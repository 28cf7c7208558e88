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
/* One element as text, for failure messages. */
const char *ref_show(const void *p, size_t i, mg_dtype_t dt, char *buf, size_t len);

#endif
