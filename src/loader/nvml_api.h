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

/* nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs on the PCIe tree (the letters
 * of `nvidia-smi topo -m`: SINGLE PIX, MULTIPLE PXB, HOSTBRIDGE PHB, NODE NODE, SYSTEM SYS). */
typedef int mg__nvmlGpuTopologyLevel_t;
enum {
  MG__NVML_TOPOLOGY_INTERNAL = 0,
  MG__NVML_TOPOLOGY_SINGLE = 10,
  MG__NVML_TOPOLOGY_MULTIPLE = 20,
  MG__NVML_TOPOLOGY_HOSTBRIDGE = 30,
  MG__NVML_TOPOLOGY_NODE = 40,
  MG__NVML_TOPOLOGY_SYSTEM = 50
};

/* nvmlEnableState_t, nvmlIntNvLinkDeviceType_t. */
typedef int mg__nvmlEnableState_t;
typedef int mg__nvmlIntNvLinkDeviceType_t;
enum {
  MG__NVML_FEATURE_ENABLED = 1,
  MG__NVML_NVLINK_DEVICE_TYPE_GPU = 0,
  MG__NVML_NVLINK_DEVICE_TYPE_SWITCH = 2
};
#define MG__NVML_NVLINK_MAX_LINKS 18

/* nvmlPciInfo_t (the _v2 functions' layout). */
typedef struct mg__nvmlPciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} mg__nvmlPciInfo_t;

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
    (a, b, index, status))                                                                       \
  /* The links of `mgcomm topo` (src/p2p/topo.c): optional, the driver's attributes stand in. */ \
  X(OPT, RC, DeviceGetHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2", NULL,                \
    mg__nvmlReturn_t, (const char *bus_id, mg__nvmlDevice_t *device), (bus_id, device))          \
  X(OPT, RC, DeviceGetTopologyCommonAncestor, "nvmlDeviceGetTopologyCommonAncestor", NULL,       \
    mg__nvmlReturn_t, (mg__nvmlDevice_t a, mg__nvmlDevice_t b, mg__nvmlGpuTopologyLevel_t *level), \
    (a, b, level))                                                                               \
  X(OPT, RC, DeviceGetNvLinkState, "nvmlDeviceGetNvLinkState", NULL, mg__nvmlReturn_t,           \
    (mg__nvmlDevice_t device, unsigned int link, mg__nvmlEnableState_t *active),                 \
    (device, link, active))                                                                      \
  X(OPT, RC, DeviceGetNvLinkRemotePciInfo, "nvmlDeviceGetNvLinkRemotePciInfo_v2", NULL,          \
    mg__nvmlReturn_t, (mg__nvmlDevice_t device, unsigned int link, mg__nvmlPciInfo_t *pci),      \
    (device, link, pci))                                                                         \
  X(OPT, RC, DeviceGetNvLinkRemoteDeviceType, "nvmlDeviceGetNvLinkRemoteDeviceType", NULL,       \
    mg__nvmlReturn_t,                                                                            \
    (mg__nvmlDevice_t device, unsigned int link, mg__nvmlIntNvLinkDeviceType_t *type),           \
    (device, link, type))

#endif
