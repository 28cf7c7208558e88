/*
 * host_reduce.h -- element-wise reductions and conversions of the host backend, for every dtype
 * and op (semantics in mgcomm.h, "Reduction operations").
 */
#ifndef MG_BACKEND_HOST_REDUCE_H
#define MG_BACKEND_HOST_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/backend.h"

/* dst[i] = x_0[i] op x_1[i] op ... op x_{k-1}[i] for i < n, combined left to right in the order
 * of srcs (the host backend passes them in rank order, so results are reproducible), k >= 1.
 *  - Integers wrap (two's complement). MG_MAX and MG_MIN compare as the type (signed or not).
 *    MG_AVG is the wrapped sum divided by nranks, truncated toward zero (signed division for the
 *    signed types). PreMulSum computes s * x_j wrapped, then the wrapped sum.
 *  - Floating MG_AVG is PreMulSum with s = 1/nranks rounded to the dtype the way NCCL does it:
 *    1.0 / nranks in double, rounded to float (float64 keeps the double), then to the dtype.
 *  - PreMulSum's scalar: redop->scalar (MG_SCALAR_HOST_IMMEDIATE) or *redop->scalar_ptr
 *    (MG_SCALAR_DEVICE: host memory here), in the dtype, read once at the start of the call.
 *    The pre-multiplication is rounded before the sum: y_j = round(s * x_j), no fused multiply.
 *  - float32 and float64: native IEEE arithmetic in the default floating-point environment.
 *  - fp16, bf16, fp8: each pairwise step (and each pre-multiplication) widens its operands to
 *    float, computes in float and rounds back to the type, to nearest even. fp16 and bf16
 *    overflow to infinity. fp8 saturates (CUDA's satfinite, which NCCL uses): anything beyond
 *    the largest finite value, infinities included, becomes +-448 (E4M3) or +-57344 (E5M2), so
 *    an E5M2 infinity that goes through any step comes out as +-57344. Below half the smallest
 *    subnormal a result is a zero of the same sign.
 *  - NaN: MG_MAX and MG_MIN return NaN if any x_j is NaN. On float32/float64 it is the first NaN
 *    in srcs order, bit for bit; arithmetic NaNs are the FPU's. A low-precision result that is
 *    NaN is the canonical positive NaN of the type: 0x7FFF (fp16, bf16), 0x7F (both fp8), as
 *    CUDA's conversions from float produce.
 *  - MG_MAX and MG_MIN on equal values: max(-0, +0) = +0 and min(-0, +0) = -0, in either order
 *    (IEEE 754-2019 maximum/minimum).
 *  - With k == 1 and no pre/post step (sum, prod, max, min) the data is copied bit for bit; avg
 *    and PreMulSum apply their transform even then.
 * dst may be the same pointer as any srcs[j] (element-wise aliasing only; no partial overlap).
 * n may be 0. */
void mg__host_reduce(void *dst, const void *const *srcs, int k, size_t n, mg_dtype_t dtype,
                     const mg__redop_t *op, int nranks);
/* mg__host_reduce, except that a PreMulSum multiplies each source by its own scalar, source j's
 * at scalars + 8 * j (the dtype's bytes): NCCL's PreMulSum, in which each rank multiplies its
 * input by the scalar it passed. scalars NULL, or an op that is not a PreMulSum: the same as
 * mg__host_reduce. */
void mg__host_reduce_scaled(void *dst, const void *const *srcs, int k, size_t n,
                            mg_dtype_t dtype, const mg__redop_t *op, int nranks,
                            const unsigned char *scalars);

/* Scalar conversions, exposed for the tests and the reference checker. Decoding is exact
 * (E5M2 and fp16 infinities decode to infinity; NaN codes to a NaN). Encoding follows the rules
 * above: round to nearest even, fp16 and bf16 overflow to infinity, fp8 saturates, a NaN gives
 * the canonical NaN. */
float mg__f16_to_f32(uint16_t h);
uint16_t mg__f32_to_f16(float f);
float mg__bf16_to_f32(uint16_t b);
uint16_t mg__f32_to_bf16(float f);
float mg__e4m3_to_f32(uint8_t v);
uint8_t mg__f32_to_e4m3(float f);
float mg__e5m2_to_f32(uint8_t v);
uint8_t mg__f32_to_e5m2(float f);

#endif
