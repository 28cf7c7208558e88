/*
 * loader.h -- the run-time loader: the only code of mgcomm that calls dlopen and dlsym.
 *
 * What a backend does with it (the NCCL backend, for example):
 *
 *     MG_CHECK(mg__load_nccl());                      // once per process; cheap afterwards
 *     MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_CONFIG, "mg_comm_init_rank"));
 *     mg__ncclConfig_t cfg;
 *     mg__nccl_config_init(&cfg);
 *     cfg.blocking = 0;
 *     MG_NCCL_CHECK(NULL, CommInitRankConfig, &comm, nranks, id, rank, &cfg);
 *     ...
 *     mg__ncclResult_t r = mg__nccl.AllReduce(send, recv, n, dt, op, comm, stream);
 *
 * Divisions: the four libraries and their call tables; loading; the record of a load (what
 * `mgcomm info` shows); features; errors of the foreign domains (CUDA, NCCL) and their check
 * macros.
 *
 * Rules:
 *  - Call through a table only after its mg__load_X() returned MG_OK. Required members are then
 *    never NULL. An optional member may be NULL: ask mg__feature() / mg__feature_require()
 *    (which also checks the version), never the pointer.
 *  - A load is attempted once per process (pthread_once), thread-safe, and its outcome is kept:
 *    a library that was not found is not searched again (environment changes after the first
 *    load are not seen). Loaded libraries are never unloaded.
 *  - Search order of each library; every candidate is recorded with its outcome (the dlerror()
 *    text, "loaded", or why an opened file was rejected):
 *      1. the explicit path MGCOMM_<LIB>_LIBRARY (CUDA, NCCL, NVSHMEM, NVML). When it is set,
 *         it is the only candidate: if it cannot be used the load fails and says so; no other
 *         copy is searched (an override that silently picks another copy hides mistakes);
 *      2. <lib>/lib and <lib>/lib64 of NCCL_HOME (NCCL) or NVSHMEM_HOME (NVSHMEM), then of
 *         CUDA_HOME (every library);
 *      3. the bare soname, i.e. the dynamic linker's own search (LD_LIBRARY_PATH, RUNPATH,
 *         ld.so.cache, /lib, /usr/lib);
 *      4. the CUDA toolkit: /usr/local/cuda/lib64, /usr/local/cuda/lib,
 *         /usr/local/cuda/targets/<arch>-linux/lib;
 *      5. NCCL and NVSHMEM only: Python wheels, site-packages/nvidia/{nccl|nvshmem,cu13,cu12}/lib
 *         under $VIRTUAL_ENV/lib/python3*, $CONDA_PREFIX/lib/python3*, /opt/x/.venv/lib/python3*,
 *         /usr/local/lib/python3* (site- and dist-packages), /usr/lib/python3 (dist-packages),
 *         ~/.local/lib/python3* -- expanded with glob(3), no process is spawned; a pattern that
 *         matches nothing is recorded as one candidate.
 *    A file that opens is accepted only if every required symbol resolves and its version can
 *    be read; otherwise it is closed, recorded, and the search goes on. The CUDA toolkit's stub
 *    libcuda.so (whose functions all return CUDA_ERROR_STUB_LIBRARY) is rejected that way.
 *  - Test builds route the RC and PTR members of every table through the fault registry
 *    (fault.h, table.h): no code here or in a backend needs to know.
 */
#ifndef MG_LOADER_LOADER_H
#define MG_LOADER_LOADER_H

#include "base/error.h"
#include "loader/cuda_api.h"
#include "loader/nccl_api.h"
#include "loader/nvml_api.h"
#include "loader/nvshmem_api.h"
#include "loader/table.h"
#include "mgcomm.h"

/* ---- Call tables: mg__cuda.DeviceGetCount(&n), mg__nccl.AllReduce(...), mg__nvshmem.quiet(),
 * mg__nvml.Init(). Written once by the load, read-only afterwards. */
typedef struct mg__cuda_table {
  MG__CUDA_SYMBOLS(MG__TABLE_MEMBER)
} mg__cuda_table_t;
typedef struct mg__nccl_table {
  MG__NCCL_SYMBOLS(MG__TABLE_MEMBER)
} mg__nccl_table_t;
typedef struct mg__nvshmem_table {
  MG__NVSHMEM_SYMBOLS(MG__TABLE_MEMBER)
} mg__nvshmem_table_t;
typedef struct mg__nvml_table {
  MG__NVML_SYMBOLS(MG__TABLE_MEMBER)
} mg__nvml_table_t;

extern mg__cuda_table_t mg__cuda;
extern mg__nccl_table_t mg__nccl;
extern mg__nvshmem_table_t mg__nvshmem;
extern mg__nvml_table_t mg__nvml;

/* ---- Loading. MG_OK, or MG_ERR_BACKEND_UNAVAILABLE with a message (in the thread's error)
 * that says why and lists every candidate tried. An unknown lib is MG_ERR_INVALID_ARGUMENT. */
mg_status_t mg__load(mg_library_t lib);
static inline mg_status_t mg__load_cuda(void) { return mg__load(MG_LIB_CUDA); }
static inline mg_status_t mg__load_nccl(void) { return mg__load(MG_LIB_NCCL); }
static inline mg_status_t mg__load_nvshmem(void) { return mg__load(MG_LIB_NVSHMEM); }
static inline mg_status_t mg__load_nvml(void) { return mg__load(MG_LIB_NVML); }
/* 1 when lib is loaded (loading it if that was not tried yet); never touches the thread's
 * error. */
int mg__loaded(mg_library_t lib);
/* The loaded library's version in its own encoding (CUDA 13000, NCCL 22809, NVSHMEM 30405,
 * NVML: the driver's 580.65 as 58065); 0 when not loaded or unknown. */
int mg__lib_version(mg_library_t lib);
/* 1 when the loaded lib exports sym (an exported name of its table, e.g. "ncclCommShrink"). */
int mg__lib_has(mg_library_t lib, const char *sym);

/* ---- The record of a load (mg_library_info prints it). Loads lib first. Static storage. */
typedef struct mg__lib_attempt {
  const char *path;    /* the path or pattern tried */
  const char *outcome; /* "loaded", the dlerror() text, or why the opened file was rejected */
} mg__lib_attempt_t;

typedef struct mg__lib_report {
  const char *label;          /* "CUDA driver", "NCCL", "NVSHMEM", "NVML" */
  const char *name;           /* soname: "libnccl.so.2" */
  int loaded;
  const char *path;           /* where it was loaded from; NULL if not loaded */
  int version;                /* as mg__lib_version */
  const char *version_string; /* "2.28.9"; "" if unknown */
  const char *error;          /* why not loaded, with every candidate; "" if loaded */
  int nattempts;
  const mg__lib_attempt_t *attempts;
  const char *plugin_dir;     /* NVSHMEM: the folder of nvshmem_bootstrap_*.so*; else NULL */
} mg__lib_report_t;

const mg__lib_report_t *mg__lib_report(mg_library_t lib);

/* ---- Features (mg_feature_t): available when the library is loaded, its version is at least
 * min_version and it exports every symbol the feature needs. A call that needs a missing one
 * fails through mg__feature_require: MG_ERR_NOT_SUPPORTED, or MG_ERR_BACKEND_UNAVAILABLE when
 * the library is not loaded. */
typedef struct mg__feature_desc {
  const char *name;               /* "fp8" */
  mg_library_t lib;
  int min_version;                /* 22400 */
  const char *min_version_string; /* "2.24" */
  const char *what;               /* "float8 data types" */
  const char *symbols[4];         /* exported names it needs; NULL ends a shorter list */
} mg__feature_desc_t;

/* The table row of f; NULL for a value that is not a feature. */
const mg__feature_desc_t *mg__feature_desc(mg_feature_t f);
/* 1 when f is available (loads its library if needed); never touches the thread's error. */
int mg__feature(mg_feature_t f);
/* MG_OK when f is available. Otherwise MG_ERR_NOT_SUPPORTED naming fn, the feature, the
 * version that has it and the version loaded (or the missing symbol), or
 * MG_ERR_BACKEND_UNAVAILABLE when the library itself is not loaded. */
mg_status_t mg__feature_require(mg_feature_t f, const char *fn);

/* ---- NCCL helpers. */
/* "ncclInvalidArgument"; "unknown ncclResult_t" for a code this file does not know. */
const char *mg__nccl_result_name(mg__ncclResult_t r);
/* ncclSuccess MG_OK, ncclInProgress MG_INPROGRESS, InvalidArgument MG_ERR_INVALID_ARGUMENT,
 * InvalidUsage MG_ERR_INVALID_USAGE, RemoteError MG_ERR_REMOTE, anything else MG_ERR_BACKEND. */
mg_status_t mg__nccl_status(mg__ncclResult_t r);
/* Sets the thread's error to "<call> failed: <name> (<code>): <NCCL's string>[; NCCL's last
 * error: <ncclGetLastError(comm)>]" and returns mg__nccl_status(r). comm may be NULL. */
mg_status_t mg__nccl_error(mg__ncclResult_t r, const char *call, mg__ncclComm_t comm);
/* NCCL_CONFIG_INITIALIZER for the loaded library: size, magic, every field undefined, and the
 * version min(loaded NCCL, the 2.28 layout) so that an older NCCL reads only what it knows. */
void mg__nccl_config_init(mg__ncclConfig_t *config);

/* Calls mg__nccl.fn(...) and returns mg__nccl_error(...) from the calling function unless it
 * returned ncclSuccess or ncclInProgress (a nonblocking communicator's normal answer: the
 * caller polls ncclCommGetAsyncError). */
#define MG_NCCL_CHECK(comm, fn, ...)                                                 \
  do {                                                                               \
    mg__ncclResult_t mg__r_ = mg__nccl.fn(__VA_ARGS__);                              \
    if (mg__r_ != MG__ncclSuccess && mg__r_ != MG__ncclInProgress)                   \
      return mg__nccl_error(mg__r_, "nccl" #fn, (comm));                             \
  } while (0)
#define MG_NCCL_CHECK_GOTO(st, label, comm, fn, ...)                                 \
  do {                                                                               \
    mg__ncclResult_t mg__r_ = mg__nccl.fn(__VA_ARGS__);                              \
    if (mg__r_ != MG__ncclSuccess && mg__r_ != MG__ncclInProgress) {                 \
      (st) = mg__nccl_error(mg__r_, "nccl" #fn, (comm));                             \
      goto label;                                                                    \
    }                                                                                \
  } while (0)

/* ---- CUDA driver helpers. */
/* CUDA_ERROR_OUT_OF_MEMORY MG_ERR_OUT_OF_MEMORY; no device, stub library, driver/device
 * mismatched MG_ERR_BACKEND_UNAVAILABLE; anything else MG_ERR_BACKEND. */
mg_status_t mg__cu_status(mg__CUresult r);
/* Sets the thread's error to "<call> failed: CUDA_ERROR_X (<code>): <driver's string>" and
 * returns mg__cu_status(r). */
mg_status_t mg__cu_error(mg__CUresult r, const char *call);

/* Calls mg__cuda.fn(...) and returns mg__cu_error(...) unless it returned CUDA_SUCCESS. */
#define MG_CU_CHECK(fn, ...)                                                         \
  do {                                                                               \
    mg__CUresult mg__r_ = mg__cuda.fn(__VA_ARGS__);                                  \
    if (mg__r_ != MG__CUDA_SUCCESS) return mg__cu_error(mg__r_, "cu" #fn);           \
  } while (0)
#define MG_CU_CHECK_GOTO(st, label, fn, ...)                                         \
  do {                                                                               \
    mg__CUresult mg__r_ = mg__cuda.fn(__VA_ARGS__);                                  \
    if (mg__r_ != MG__CUDA_SUCCESS) {                                                \
      (st) = mg__cu_error(mg__r_, "cu" #fn);                                         \
      goto label;                                                                    \
    }                                                                                \
  } while (0)

#endif
