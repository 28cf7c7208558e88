/*
 * kern_module.c -- the kernels as the driver sees them: the fatbin nvcc made at build time
 * (embedded in a generated C source, kern_fatbin.c in the build folder: empty when nvcc was not
 * found), loaded into the current context with cuModuleLoadData, and its entry points.
 */
#include <stdio.h>

#include "kernels/kernels.h"

/* The generated source's: the fatbin's bytes, and their number (0: built without nvcc). */
extern const unsigned char mg__kern_fatbin[];
extern const size_t mg__kern_fatbin_size;

int mg__kern_built(void) { return mg__kern_fatbin_size > 0; }

mg_status_t mg__kern_available(const char *fn) {
  if (!mg__kern_built())
    return mg__error(MG_ERR_NOT_SUPPORTED,
                     "%s: mgcomm's own kernels are not in this build (nvcc was not found when it "
                     "was configured); NCCL's all_reduce is used", fn);
  return mg__feature_require(MG_FEATURE_CUDA_KERNELS, fn);
}

static const char *const mg__kern_algo_names[3] = {"oneshot", "twoshot", "ll"};
static const char *const mg__kern_dtype_names[3] = {"f32", "f16", "bf16"};
static const char *const mg__kern_op_names[4] = {"sum", "avg", "max", "min"};

int mg__kern_dtype_index(mg_dtype_t dtype) {
  switch (dtype) {
    case MG_FLOAT32: return 0;
    case MG_FLOAT16: return 1;
    case MG_BFLOAT16: return 2;
    default: return -1;
  }
}

int mg__kern_op_index(mg_op_t op) {
  switch (op) {
    case MG_SUM: return MG_KERN_OP_SUM;
    case MG_AVG: return MG_KERN_OP_AVG;
    case MG_MAX: return MG_KERN_OP_MAX;
    case MG_MIN: return MG_KERN_OP_MIN;
    default: return -1;
  }
}

mg_status_t mg__kern_module_load(mg__kern_module_t *m) {
  MG_CHECK(mg__kern_available("loading mgcomm's kernels"));
  mg__CUmodule mod = NULL;
  MG_CU_CHECK(ModuleLoadData, &mod, mg__kern_fatbin);
  for (int a = 0; a < 3; a++)
    for (int t = 0; t < 3; t++)
      for (int o = 0; o < 4; o++) {
        char name[64];
        snprintf(name, sizeof name, "mg_ar_%s_%s_%s", mg__kern_algo_names[a],
                 mg__kern_dtype_names[t], mg__kern_op_names[o]);
        mg__CUresult r = mg__cuda.ModuleGetFunction(&m->fn[a][t][o], mod, name);
        if (r != MG__CUDA_SUCCESS) {
          mg_status_t st = mg__cu_error(r, "cuModuleGetFunction");
          mg__error_prefix("mgcomm's kernel %s", name);
          (void)mg__cuda.ModuleUnload(mod);
          return st;
        }
      }
  m->module = mod;
  return MG_OK;
}

void mg__kern_module_unload(mg__kern_module_t *m) {
  /* Fails only for a context already gone (process exit): nothing left to free then. */
  if (m->module != NULL) (void)mg__cuda.ModuleUnload(m->module);
  m->module = NULL;
}
