/*
 * dtype_table.c -- the data-type and reduction-op tables: NCCL's numbering, sizes, names, the
 * aliases mgcomm.h documents, and name -> value -> name round trips.
 */
#include "test.h"

int main(void) {
  static const struct {
    mg_dtype_t dt;
    int value;
    size_t size;
    const char *name;
    const char *alias; /* as listed in mgcomm.h */
  } want[MG_DTYPE_COUNT] = {
      {MG_INT8, 0, 1, "int8", "int8"},
      {MG_UINT8, 1, 1, "uint8", "uint8"},
      {MG_INT32, 2, 4, "int32", "int32"},
      {MG_UINT32, 3, 4, "uint32", "uint32"},
      {MG_INT64, 4, 8, "int64", "int64"},
      {MG_UINT64, 5, 8, "uint64", "uint64"},
      {MG_FLOAT16, 6, 2, "float16", "half"},
      {MG_FLOAT32, 7, 4, "float32", "float"},
      {MG_FLOAT64, 8, 8, "float64", "double"},
      {MG_BFLOAT16, 9, 2, "bfloat16", "bfloat16"},
      {MG_FLOAT8_E4M3, 10, 1, "float8_e4m3", "f8e4m3"},
      {MG_FLOAT8_E5M2, 11, 1, "float8_e5m2", "f8e5m2"},
  };
  ASSERT_EQ(MG_DTYPE_COUNT, 12);
  for (int i = 0; i < MG_DTYPE_COUNT; i++) {
    ASSERT_EQ((int)want[i].dt, want[i].value);
    ASSERT_EQ(mg_dtype_size(want[i].dt), want[i].size);
    ASSERT_STR_EQ(mg_dtype_name(want[i].dt), want[i].name);
    mg_dtype_t got = MG_DTYPE_COUNT;
    ASSERT_OK(mg_dtype_from_name(want[i].name, &got));
    ASSERT_EQ(got, want[i].dt);
    got = MG_DTYPE_COUNT;
    ASSERT_OK(mg_dtype_from_name(want[i].alias, &got));
    ASSERT_EQ(got, want[i].dt);
    /* name -> value -> name */
    ASSERT_STR_EQ(mg_dtype_name(got), want[i].name);
    for (int j = 0; j < i; j++) ASSERT(strcmp(want[i].name, want[j].name) != 0);
  }
  ASSERT_EQ(mg_dtype_size(MG_DTYPE_COUNT), 0);
  ASSERT_EQ(mg_dtype_size((mg_dtype_t)-1), 0);
  ASSERT(mg_dtype_name(MG_DTYPE_COUNT) == NULL);
  ASSERT(mg_dtype_name((mg_dtype_t)-1) == NULL);
  mg_dtype_t untouched = MG_FLOAT32;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_dtype_from_name("float128", &untouched));
  ASSERT_CONTAINS(mg_last_error(), "float128");
  ASSERT_EQ(untouched, MG_FLOAT32);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_dtype_from_name("", &untouched));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_dtype_from_name(NULL, &untouched));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_dtype_from_name("int8", NULL));
  ASSERT_EQ(untouched, MG_FLOAT32);

  static const char *const ops[MG_OP_BUILTIN_COUNT] = {"sum", "prod", "max", "min", "avg"};
  ASSERT_EQ(MG_SUM, 0);
  ASSERT_EQ(MG_AVG, 4);
  for (int i = 0; i < MG_OP_BUILTIN_COUNT; i++) {
    ASSERT_STR_EQ(mg_op_name((mg_op_t)i), ops[i]);
    mg_op_t op = MG_OP_BUILTIN_COUNT;
    ASSERT_OK(mg_op_from_name(ops[i], &op));
    ASSERT_EQ(op, i);
  }
  ASSERT_STR_EQ(mg_op_name(MG_OP_BUILTIN_COUNT), "premul_sum");
  ASSERT(mg_op_name((mg_op_t)-1) == NULL);
  mg_op_t op = MG_MAX;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_op_from_name("mean", &op));
  ASSERT_EQ(op, MG_MAX);
  return 0;
}
