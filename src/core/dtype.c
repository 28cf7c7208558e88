/*
 * dtype.c -- names and sizes of data types, reduction operations and backends.
 */
#include <string.h>
#include <strings.h>

#include "core/dtype.h"
#include "base/error.h"

static const struct {
  const char *name;
  const char *alias; /* nccl-tests' short name */
} mg__dtypes[MG_DTYPE_COUNT] = {
    [MG_INT8] = {"int8", "char"},
    [MG_UINT8] = {"uint8", "uchar"},
    [MG_INT32] = {"int32", "int"},
    [MG_UINT32] = {"uint32", "uint"},
    [MG_INT64] = {"int64", "long"},
    [MG_UINT64] = {"uint64", "ulong"},
    [MG_FLOAT16] = {"float16", "half"},
    [MG_FLOAT32] = {"float32", "float"},
    [MG_FLOAT64] = {"float64", "double"},
    [MG_BFLOAT16] = {"bfloat16", "bf16"},
    [MG_FLOAT8_E4M3] = {"float8_e4m3", "f8e4m3"},
    [MG_FLOAT8_E5M2] = {"float8_e5m2", "f8e5m2"},
};

size_t mg_dtype_size(mg_dtype_t dtype) { return mg__dtype_size(dtype); }

const char *mg_dtype_name(mg_dtype_t dtype) {
  return ((unsigned)dtype < MG_DTYPE_COUNT) ? mg__dtypes[dtype].name : NULL;
}

mg_status_t mg_dtype_from_name(const char *name, mg_dtype_t *out) {
  if (name == NULL || out == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_dtype_from_name: %s is NULL",
                     name == NULL ? "name" : "out");
  for (int i = 0; i < MG_DTYPE_COUNT; i++) {
    if (strcasecmp(name, mg__dtypes[i].name) == 0 || strcasecmp(name, mg__dtypes[i].alias) == 0) {
      *out = (mg_dtype_t)i;
      return MG_OK;
    }
  }
  return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_dtype_from_name: unknown data type '%s'", name);
}

static const char *const mg__op_names[MG_OP_BUILTIN_COUNT] = {"sum", "prod", "max", "min", "avg"};

const char *mg_op_name(mg_op_t op) {
  if ((int)op < 0) return NULL;
  return op < MG_OP_BUILTIN_COUNT ? mg__op_names[op] : "premul_sum";
}

mg_status_t mg_op_from_name(const char *name, mg_op_t *out) {
  if (name == NULL || out == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_op_from_name: %s is NULL",
                     name == NULL ? "name" : "out");
  for (int i = 0; i < MG_OP_BUILTIN_COUNT; i++) {
    if (strcasecmp(name, mg__op_names[i]) == 0) {
      *out = (mg_op_t)i;
      return MG_OK;
    }
  }
  return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_op_from_name: unknown reduction op '%s'", name);
}

const char *mg_backend_name(mg_backend_t backend) {
  switch (backend) {
    case MG_BACKEND_AUTO: return "auto";
    case MG_BACKEND_HOST: return "host";
    case MG_BACKEND_NCCL: return "nccl";
  }
  return NULL;
}
