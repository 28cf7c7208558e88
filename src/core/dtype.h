/*
 * dtype.h -- the size of a data type, which every operation asks for (argcheck.c).
 */
#ifndef MG_CORE_DTYPE_H
#define MG_CORE_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "mgcomm.h"

/* Bytes of one element of dtype, 0 when dtype is not a data type: log2 of the size, four bits
 * per type, packed in one 64-bit value. */
#define MG__DTYPE_LOG2(t, l) ((uint64_t)(l) << (4 * (t)))
#define MG__DTYPE_LOG2_SIZES                                                                    \
  (MG__DTYPE_LOG2(MG_INT8, 0) | MG__DTYPE_LOG2(MG_UINT8, 0) | MG__DTYPE_LOG2(MG_INT32, 2) |     \
   MG__DTYPE_LOG2(MG_UINT32, 2) | MG__DTYPE_LOG2(MG_INT64, 3) | MG__DTYPE_LOG2(MG_UINT64, 3) |  \
   MG__DTYPE_LOG2(MG_FLOAT16, 1) | MG__DTYPE_LOG2(MG_FLOAT32, 2) |                             \
   MG__DTYPE_LOG2(MG_FLOAT64, 3) | MG__DTYPE_LOG2(MG_BFLOAT16, 1) |                            \
   MG__DTYPE_LOG2(MG_FLOAT8_E4M3, 0) | MG__DTYPE_LOG2(MG_FLOAT8_E5M2, 0))
_Static_assert(MG_DTYPE_COUNT == 12, "every data type has its size in MG__DTYPE_LOG2_SIZES");

static inline size_t mg__dtype_size(mg_dtype_t dtype) {
  return (unsigned)dtype < MG_DTYPE_COUNT
             ? (size_t)1 << ((MG__DTYPE_LOG2_SIZES >> (4 * (unsigned)dtype)) & 15u)
             : 0;
}

#endif
