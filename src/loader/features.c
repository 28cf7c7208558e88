/*
 * features.c -- the feature table (mg_feature_t): a feature is available when its library is
 * loaded, at least min_version, and exports every symbol the feature needs. Computed once, after
 * the library's load; a query is then one bit test.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "loader/loader.h"

static const mg__feature_desc_t mg__features[MG_FEATURE_COUNT] = {
    [MG_FEATURE_NCCL_AVG] = {"avg", MG_LIB_NCCL, MG__NCCL_VERSION(2, 10, 0), "2.10",
                             "the avg reduction", {NULL}},
    [MG_FEATURE_NCCL_PREMUL_SUM] = {"premul_sum", MG_LIB_NCCL, MG__NCCL_VERSION(2, 11, 0), "2.11",
                                    "PreMulSum custom reductions",
                                    {"ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", NULL}},
    [MG_FEATURE_NCCL_CONFIG] = {"config", MG_LIB_NCCL, MG__NCCL_VERSION(2, 14, 0), "2.14",
                                "configured (nonblocking) communicators",
                                {"ncclCommInitRankConfig", "ncclCommFinalize", NULL}},
    [MG_FEATURE_NCCL_SPLIT] = {"split", MG_LIB_NCCL, MG__NCCL_VERSION(2, 18, 0), "2.18",
                               "communicator split", {"ncclCommSplit", NULL}},
    [MG_FEATURE_NCCL_REGISTER] = {"register", MG_LIB_NCCL, MG__NCCL_VERSION(2, 19, 0), "2.19",
                                  "buffer registration and NCCL allocation",
                                  {"ncclCommRegister", "ncclCommDeregister", "ncclMemAlloc",
                                   "ncclMemFree"}},
    [MG_FEATURE_NCCL_FP8] = {"fp8", MG_LIB_NCCL, MG__NCCL_VERSION(2, 24, 0), "2.24",
                             "float8 data types (e4m3, e5m2)", {NULL}},
    [MG_FEATURE_NCCL_WINDOW] = {"window", MG_LIB_NCCL, MG__NCCL_VERSION(2, 27, 0), "2.27",
                                "symmetric window registration",
                                {"ncclCommWindowRegister", "ncclCommWindowDeregister", NULL}},
    [MG_FEATURE_NCCL_SHRINK] = {"shrink", MG_LIB_NCCL, MG__NCCL_VERSION(2, 27, 0), "2.27",
                                "communicator shrink", {"ncclCommShrink", NULL}},
    [MG_FEATURE_NCCL_COLLECTIVES_2_28] = {"alltoall_gather_scatter", MG_LIB_NCCL,
                                          MG__NCCL_VERSION(2, 28, 0), "2.28",
                                          "native all-to-all, gather and scatter",
                                          {"ncclAlltoAll", "ncclGather", "ncclScatter", NULL}},
    [MG_FEATURE_NCCL_REVOKE] = {"revoke", MG_LIB_NCCL, MG__NCCL_VERSION(2, 28, 7), "2.28.7",
                                "communicator revoke", {"ncclCommRevoke", NULL}},
    [MG_FEATURE_NCCL_GROW] = {"grow", MG_LIB_NCCL, MG__NCCL_VERSION(2, 29, 2), "2.29.2",
                              "communicator grow", {"ncclCommGrow", "ncclCommGetUniqueId", NULL}},
    [MG_FEATURE_NCCL_PROPERTIES] = {"properties", MG_LIB_NCCL, MG__NCCL_VERSION(2, 29, 2),
                                    "2.29.2", "communicator properties",
                                    {"ncclCommQueryProperties", NULL}},
    [MG_FEATURE_NCCL_WINDOW_PTRS] = {"window_pointers", MG_LIB_NCCL, MG__NCCL_VERSION(2, 29, 2),
                                     "2.29.2", "peer and user pointers of a window",
                                     {"ncclGetLsaDevicePointer", "ncclGetPeerDevicePointer",
                                      "ncclWinGetUserPtr", NULL}},
    [MG_FEATURE_NCCL_SIGNALS] = {"signals", MG_LIB_NCCL, MG__NCCL_VERSION(2, 29, 2), "2.29.2",
                                 "one-sided put with signal",
                                 {"ncclPutSignal", "ncclSignal", "ncclWaitSignal", NULL}},
    [MG_FEATURE_NCCL_SUSPEND] = {"suspend", MG_LIB_NCCL, MG__NCCL_VERSION(2, 29, 7), "2.29.7",
                                 "communicator suspend, resume and memory statistics",
                                 {"ncclCommSuspend", "ncclCommResume", "ncclCommMemStats", NULL}},
    /* 2.30.4 exports these names already, but its parameter handle is another type: the
     * version, not the symbols, decides. */
    [MG_FEATURE_NCCL_PARAMS] = {"params", MG_LIB_NCCL, MG__NCCL_VERSION(2, 30, 7), "2.30.7",
                                "NCCL's parameter API",
                                {"ncclParamGetParameter", "ncclParamGetAllParameterKeys", NULL}},
    [MG_FEATURE_CUDA_KERNELS] = {"kernels", MG_LIB_CUDA, 11000, "11.0",
                                 "mgcomm's own all-reduce kernels (modules, launches, IPC)",
                                 {"cuModuleLoadData", "cuLaunchKernel", "cuIpcOpenMemHandle_v2",
                                  "cuMemHostGetDevicePointer_v2"}},
};

static pthread_once_t mg__features_once = PTHREAD_ONCE_INIT;
static unsigned mg__feature_bits;      /* bit f: feature f available; written once */
static atomic_int mg__features_known;  /* 1 once mg__feature_bits is written: no pthread_once */

/* The first needed symbol the loaded library lacks, or NULL. */
static const char *mg__feature_missing(const mg__feature_desc_t *fd) {
  for (int i = 0; i < 4 && fd->symbols[i] != NULL; i++)
    if (!mg__lib_has(fd->lib, fd->symbols[i])) return fd->symbols[i];
  return NULL;
}

static void mg__features_compute(void) {
  unsigned bits = 0;
  for (int f = 0; f < MG_FEATURE_COUNT; f++) {
    const mg__feature_desc_t *fd = &mg__features[f];
    if (!mg__loaded(fd->lib) || mg__lib_version(fd->lib) < fd->min_version) continue;
    if (mg__feature_missing(fd) == NULL) bits |= 1u << f;
  }
  mg__feature_bits = bits;
  atomic_store_explicit(&mg__features_known, 1, memory_order_release);
}

const mg__feature_desc_t *mg__feature_desc(mg_feature_t f) {
  return (unsigned)f < MG_FEATURE_COUNT ? &mg__features[f] : NULL;
}

int mg__feature(mg_feature_t f) {
  if ((unsigned)f >= MG_FEATURE_COUNT) return 0;
  if (!atomic_load_explicit(&mg__features_known, memory_order_acquire))
    pthread_once(&mg__features_once, mg__features_compute);
  return (mg__feature_bits >> f) & 1u;
}

mg_status_t mg__feature_require(mg_feature_t f, const char *fn) {
  const mg__feature_desc_t *fd = mg__feature_desc(f);
  if (fd == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: feature %d is not a feature", fn, (int)f);
  if (mg__feature(f)) return MG_OK;
  const mg__lib_report_t *rep = mg__lib_report(fd->lib);
  if (!rep->loaded)
    return mg__error(MG_ERR_BACKEND_UNAVAILABLE, "%s: %s needs %s >= %s, which is not loaded: %s",
                     fn, fd->what, rep->label, fd->min_version_string, rep->error);
  if (rep->version < fd->min_version)
    return mg__error(MG_ERR_NOT_SUPPORTED,
                     "%s: %s (feature %s) needs %s >= %s; the loaded %s is %s (%s)", fn, fd->what,
                     fd->name, rep->label, fd->min_version_string, rep->label,
                     rep->version_string, rep->path);
  const char *missing = mg__feature_missing(fd);
  return mg__error(MG_ERR_NOT_SUPPORTED, "%s: %s (feature %s) needs %s, which %s %s (%s) does not export",
                   fn, fd->what, fd->name, missing != NULL ? missing : "a symbol", rep->label,
                   rep->version_string, rep->path);
}
