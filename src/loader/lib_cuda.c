/*
 * lib_cuda.c -- the CUDA driver (libcuda.so.1): its table, how to tell a driver from the
 * toolkit's stub, and the CUDA error helpers of loader.h.
 */
#include <stdio.h>

#include "loader/loader_int.h"

mg__cuda_table_t mg__cuda;
static mg__cuda_table_t mg__cuda_real;

#define X(req, form, member, sym, alt, ret, params, args) \
  MG__WRAP_##form(mg__cuda, member, sym, ret, params, args)
MG__CUDA_SYMBOLS(X)
#undef X

static const mg__sym_desc_t mg__cuda_syms[] = {
#define X(req, form, member, sym, alt, ret, params, args) \
  MG__DESC_ONE(mg__cuda, mg__cuda_table_t, req, form, member, sym, alt)
    MG__CUDA_SYMBOLS(X)
#undef X
};

/* A real driver answers cuDriverGetVersion without cuInit and without a GPU; the stub answers
 * every call with CUDA_ERROR_STUB_LIBRARY. */
static int mg__cuda_probe(int *version, char *vstr, size_t vlen, char *err, size_t errlen) {
  int v = 0;
  mg__CUresult r = mg__cuda.DriverGetVersion(&v);
  if (r == MG__CUDA_ERROR_STUB_LIBRARY) {
    snprintf(err, errlen,
             "opened, but it is the CUDA toolkit's stub library (cuDriverGetVersion returned "
             "CUDA_ERROR_STUB_LIBRARY), not a driver");
    return -1;
  }
  if (r != MG__CUDA_SUCCESS || v <= 0) {
    snprintf(err, errlen, "opened, but cuDriverGetVersion returned %d (version %d)", r, v);
    return -1;
  }
  *version = v;
  snprintf(vstr, vlen, "%d.%d", v / 1000, (v % 1000) / 10);
  return 0;
}

const mg__lib_desc_t mg__lib_desc_cuda = {
    .id = MG_LIB_CUDA,
    .label = "CUDA driver",
    .soname = "libcuda.so.1",
    .param = MG_PARAM_CUDA_LIBRARY,
    .param_name = "MGCOMM_CUDA_LIBRARY",
    .home_var = NULL,
    .wheel_dirs = NULL,
    .syms = mg__cuda_syms,
    .nsyms = (int)(sizeof mg__cuda_syms / sizeof mg__cuda_syms[0]),
    .table = &mg__cuda,
    .real = &mg__cuda_real,
    .table_size = sizeof(mg__cuda_table_t),
    .probe = mg__cuda_probe,
};

mg_status_t mg__cu_status(mg__CUresult r) {
  switch (r) {
    case MG__CUDA_SUCCESS: return MG_OK;
    case MG__CUDA_ERROR_OUT_OF_MEMORY: return MG_ERR_OUT_OF_MEMORY;
    case MG__CUDA_ERROR_NO_DEVICE:
    case MG__CUDA_ERROR_STUB_LIBRARY:
    case MG__CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case MG__CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
      return MG_ERR_BACKEND_UNAVAILABLE;
    default: return MG_ERR_BACKEND;
  }
}

mg_status_t mg__cu_error(mg__CUresult r, const char *call) {
  const char *name = NULL, *text = NULL;
  if (mg__cuda.GetErrorName != NULL && mg__cuda.GetErrorName(r, &name) != MG__CUDA_SUCCESS)
    name = NULL;
  if (mg__cuda.GetErrorString != NULL && mg__cuda.GetErrorString(r, &text) != MG__CUDA_SUCCESS)
    text = NULL;
  return mg__error(mg__cu_status(r), "%s failed: %s (%d): %s", call,
                   name != NULL ? name : "unknown CUresult", r,
                   text != NULL ? text : "no description from the driver");
}
