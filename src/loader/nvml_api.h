/*
 * nvml_api.h -- the few NVML functions (libnvidia-ml.so.1) mgcomm calls, declared here so that
 * building needs no NVML header. The loader initialises NVML once (nvmlInit_v2) to read the
 * driver's version and leaves it initialised for the process.
 */
#ifndef MG_LOADER_NVML_API_H
#define MG_LOADER_NVML_API_H

typedef int mg__nvmlReturn_t;
enum {
  MG__NVML_SUCCESS = 0,
  MG__NVML_ERROR_UNINITIALIZED = 1,
  MG__NVML_ERROR_NOT_SUPPORTED = 3,
  MG__NVML_ERROR_DRIVER_NOT_LOADED = 9,
  MG__NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  MG__NVML_ERROR_UNKNOWN = 999
};

typedef struct mg__nvmlDevice_st *mg__nvmlDevice_t;

/* nvmlGpuP2PCapsIndex_t and nvmlGpuP2PStatus_t. */
typedef int mg__nvmlGpuP2PCapsIndex_t;
typedef int mg__nvmlGpuP2PStatus_t;
enum {
  MG__NVML_P2P_CAPS_INDEX_READ = 0,
  MG__NVML_P2P_CAPS_INDEX_WRITE = 1,
  MG__NVML_P2P_CAPS_INDEX_NVLINK = 2,
  MG__NVML_P2P_STATUS_OK = 0
};

#define MG__NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define MG__NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80

/* X(req, form, member, sym, alt, ret, params, args): see table.h. */
#define MG__NVML_SYMBOLS(X)                                                                      \
  X(REQ, RC, Init, "nvmlInit_v2", NULL, mg__nvmlReturn_t, (void), ())                            \
  X(REQ, RC, Shutdown, "nvmlShutdown", NULL, mg__nvmlReturn_t, (void), ())                       \
  X(REQ, NONE, ErrorString, "nvmlErrorString", NULL, const char *, (mg__nvmlReturn_t result),    \
    (result))                                                                                    \
  X(REQ, RC, SystemGetDriverVersion, "nvmlSystemGetDriverVersion", NULL, mg__nvmlReturn_t,       \
    (char *version, unsigned int length), (version, length))                                     \
  X(REQ, RC, SystemGetNVMLVersion, "nvmlSystemGetNVMLVersion", NULL, mg__nvmlReturn_t,           \
    (char *version, unsigned int length), (version, length))                                     \
  X(REQ, RC, DeviceGetCount, "nvmlDeviceGetCount_v2", NULL, mg__nvmlReturn_t,                    \
    (unsigned int *count), (count))                                                              \
  X(REQ, RC, DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", NULL, mg__nvmlReturn_t,    \
    (unsigned int index, mg__nvmlDevice_t *device), (index, device))                             \
  X(OPT, RC, DeviceGetP2PStatus, "nvmlDeviceGetP2PStatus", NULL, mg__nvmlReturn_t,               \
    (mg__nvmlDevice_t a, mg__nvmlDevice_t b, mg__nvmlGpuP2PCapsIndex_t index,                    \
     mg__nvmlGpuP2PStatus_t *status),                                                            \
    (a, b, index, status))

#endif
