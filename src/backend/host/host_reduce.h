/*
 * host_reduce.h -- element-wise reductions and conversions of the host backend, for every dtype
 * and op (semantics in mgcomm.h, "Reduction operations").
 */
#ifndef MG_BACKEND_HOST_REDUCE_H
#define MG_BACKEND_HOST_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* dst[i] = x_0[i] op x_1[i] op ... op x_{k-1}[i] for i < n, combined left to right in the order
 * of srcs (the host backend passes them in rank order, so results are reproducible), k >= 1.
 * The op's pre-multiplication (PreMulSum; MG_AVG on floating types, with s = 1/nranks rounded
 * to the dtype) is applied to every x_j first; its post-division (MG_AVG on integers: by nranks,
 * truncating) to the result. A MG_SCALAR_DEVICE PreMulSum scalar is read once, at the start.
 * Low-precision types (fp16, bf16, fp8) are widened to float for each pairwise step and rounded
 * back with round-to-nearest-even. dst may be the same pointer as any srcs[j] (element-wise
 * aliasing only). With k == 1 and no pre/post step, this is a copy. */
void mg__host_reduce(void *dst, const void *const *srcs, int k, size_t n, mg_dtype_t dtype,
                     const mg__redop_t *op, int nranks);

/* Scalar conversions, exposed for the tests and the reference checker. */
float mg__f16_to_f32(uint16_t h);
uint16_t mg__f32_to_f16(float f);
float mg__bf16_to_f32(uint16_t b);
uint16_t mg__f32_to_bf16(float f);
float mg__e4m3_to_f32(uint8_t v);
uint8_t mg__f32_to_e4m3(float f);
float mg__e5m2_to_f32(uint8_t v);
uint8_t mg__f32_to_e5m2(float f);

#endif
