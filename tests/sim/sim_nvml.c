/*
 * sim_nvml.c -- the simulated NVML (libnvidia-ml.so.1, target mgsim_nvml): the functions of
 * src/loader/nvml_api.h, describing the simulated CUDA driver's GPUs (MGSIM_DEVICES, PCI
 * addresses 0000:<0x18 + n>:00.0) and how they are wired:
 *
 *   MGSIM_NVLINKS=a-b:n,...      n NVLinks straight between GPUs a and b (both ends)
 *   MGSIM_NVSWITCH_LINKS=n       every GPU also has n links to NVSwitches (default 0)
 *   MGSIM_PCIE=a-b:LEVEL,...     the PCIe common ancestor of a and b: PIX, PXB, PHB, NODE or SYS
 *                                (default PHB)
 *
 * A GPU's links are numbered from 0: first its direct links in the order of the list, then its
 * switch links; a link number past them answers NVML_ERROR_INVALID_ARGUMENT, as on a GPU with
 * fewer links. The driver version is 580.65.06. Read once, at nvmlInit_v2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/nvml_api.h"

#define MGSIM_API __attribute__((visibility("default")))

/* Each function gets the type of its member of the loader's table (as sim.h does for CUDA), so
 * that a definition that differs from what mgcomm calls does not compile. */
#define SIM_NVML_MEMBER(req, form, member, sym, alt, ret, params, args) ret(*member) params;
typedef struct sim_nvml_sigs {
  MG__NVML_SYMBOLS(SIM_NVML_MEMBER)
} sim_nvml_sigs_t;
#define SIM_NVML_DECL(member, fn) \
  MGSIM_API extern __typeof__(*((sim_nvml_sigs_t *)0)->member) fn;
SIM_NVML_DECL(Init, nvmlInit_v2)
SIM_NVML_DECL(Shutdown, nvmlShutdown)
SIM_NVML_DECL(ErrorString, nvmlErrorString)
SIM_NVML_DECL(SystemGetDriverVersion, nvmlSystemGetDriverVersion)
SIM_NVML_DECL(SystemGetNVMLVersion, nvmlSystemGetNVMLVersion)
SIM_NVML_DECL(DeviceGetCount, nvmlDeviceGetCount_v2)
SIM_NVML_DECL(DeviceGetHandleByIndex, nvmlDeviceGetHandleByIndex_v2)
SIM_NVML_DECL(DeviceGetP2PStatus, nvmlDeviceGetP2PStatus)
SIM_NVML_DECL(DeviceGetHandleByPciBusId, nvmlDeviceGetHandleByPciBusId_v2)
SIM_NVML_DECL(DeviceGetTopologyCommonAncestor, nvmlDeviceGetTopologyCommonAncestor)
SIM_NVML_DECL(DeviceGetNvLinkState, nvmlDeviceGetNvLinkState)
SIM_NVML_DECL(DeviceGetNvLinkRemotePciInfo, nvmlDeviceGetNvLinkRemotePciInfo_v2)
SIM_NVML_DECL(DeviceGetNvLinkRemoteDeviceType, nvmlDeviceGetNvLinkRemoteDeviceType)
#define SIM_NVML_MAX 16
#define SIM_NVML_ERROR_INVALID_ARGUMENT 2
#define SIM_NVML_ERROR_NOT_FOUND 6

/* One GPU: its links' far ends (a GPU's index, or -1 for an NVSwitch). */
struct mg__nvmlDevice_st {
  int index;
  int nlinks;
  int peer[MG__NVML_NVLINK_MAX_LINKS];
};

static struct mg__nvmlDevice_st sim_gpu[SIM_NVML_MAX];
static int sim_ngpu;
static int sim_level[SIM_NVML_MAX][SIM_NVML_MAX];
static int sim_inited;

/* Parses "a-b:v,..." calling fn(a, b, v) for each; v through value(). 0 when well formed. */
static int sim_parse(const char *var, int (*value)(const char *s, int *v),
                     void (*fn)(int a, int b, int v)) {
  const char *s = getenv(var);
  if (s == NULL || *s == '\0') return 0;
  for (const char *p = s; *p;) {
    char item[64];
    size_t len = strcspn(p, ",");
    if (len >= sizeof item) goto bad;
    memcpy(item, p, len);
    item[len] = '\0';
    int a, b, off = 0;
    if (sscanf(item, "%d-%d:%n", &a, &b, &off) != 2 || off == 0 || a < 0 || b < 0 ||
        a >= sim_ngpu || b >= sim_ngpu || a == b)
      goto bad;
    int v;
    if (value(item + off, &v) != 0) goto bad;
    fn(a, b, v);
    p += len;
    if (*p == ',') p++;
  }
  return 0;
bad:
  fprintf(stderr, "mgsim: %s=%s is not a list of a-b:value (GPUs 0..%d); ignored\n", var, s,
          sim_ngpu - 1);
  return -1;
}

static int sim_count(const char *s, int *v) {
  char *end;
  long n = strtol(s, &end, 10);
  if (*end != '\0' || n < 1 || n > MG__NVML_NVLINK_MAX_LINKS) return -1;
  *v = (int)n;
  return 0;
}

static int sim_level_of(const char *s, int *v) {
  static const struct {
    const char *name;
    int level;
  } names[] = {{"PIX", MG__NVML_TOPOLOGY_SINGLE},   {"PXB", MG__NVML_TOPOLOGY_MULTIPLE},
               {"PHB", MG__NVML_TOPOLOGY_HOSTBRIDGE}, {"NODE", MG__NVML_TOPOLOGY_NODE},
               {"SYS", MG__NVML_TOPOLOGY_SYSTEM}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0) {
      *v = names[i].level;
      return 0;
    }
  return -1;
}

static void sim_add_links(int a, int b, int n) {
  for (int k = 0; k < n; k++) {
    if (sim_gpu[a].nlinks < MG__NVML_NVLINK_MAX_LINKS) sim_gpu[a].peer[sim_gpu[a].nlinks++] = b;
    if (sim_gpu[b].nlinks < MG__NVML_NVLINK_MAX_LINKS) sim_gpu[b].peer[sim_gpu[b].nlinks++] = a;
  }
}

static void sim_set_level(int a, int b, int level) { sim_level[a][b] = sim_level[b][a] = level; }

MGSIM_API mg__nvmlReturn_t nvmlInit_v2(void) {
  if (sim_inited) return MG__NVML_SUCCESS;
  const char *d = getenv("MGSIM_DEVICES");
  sim_ngpu = d != NULL && *d != '\0' ? atoi(d) : 2;
  if (sim_ngpu < 0 || sim_ngpu > SIM_NVML_MAX) sim_ngpu = 2;
  for (int a = 0; a < sim_ngpu; a++) {
    sim_gpu[a].index = a;
    for (int b = 0; b < sim_ngpu; b++) sim_level[a][b] = MG__NVML_TOPOLOGY_HOSTBRIDGE;
  }
  (void)sim_parse("MGSIM_NVLINKS", sim_count, sim_add_links);
  (void)sim_parse("MGSIM_PCIE", sim_level_of, sim_set_level);
  const char *sw = getenv("MGSIM_NVSWITCH_LINKS");
  const int nsw = sw != NULL ? atoi(sw) : 0;
  for (int a = 0; a < sim_ngpu; a++)
    for (int k = 0; k < nsw && sim_gpu[a].nlinks < MG__NVML_NVLINK_MAX_LINKS; k++)
      sim_gpu[a].peer[sim_gpu[a].nlinks++] = -1;
  sim_inited = 1;
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlShutdown(void) { return MG__NVML_SUCCESS; }

MGSIM_API const char *nvmlErrorString(mg__nvmlReturn_t r) {
  return r == MG__NVML_SUCCESS ? "Success" : "mgsim NVML error";
}

MGSIM_API mg__nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  if (version == NULL) return SIM_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(version, length, "580.65.06");
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
  if (version == NULL) return SIM_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(version, length, "13.580.65.06");
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
  if (!sim_inited) return MG__NVML_ERROR_UNINITIALIZED;
  if (count == NULL) return SIM_NVML_ERROR_INVALID_ARGUMENT;
  *count = (unsigned)sim_ngpu;
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                         mg__nvmlDevice_t *device) {
  if (!sim_inited) return MG__NVML_ERROR_UNINITIALIZED;
  if (device == NULL || index >= (unsigned)sim_ngpu) return SIM_NVML_ERROR_INVALID_ARGUMENT;
  *device = &sim_gpu[index];
  return MG__NVML_SUCCESS;
}

/* "0000:19:00.0" (CUDA's form) or "00000000:19:00.0" (NVML's). */
MGSIM_API mg__nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id,
                                                            mg__nvmlDevice_t *device) {
  if (!sim_inited) return MG__NVML_ERROR_UNINITIALIZED;
  unsigned dom, bus, dev, fn;
  if (bus_id == NULL || device == NULL ||
      sscanf(bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
    return SIM_NVML_ERROR_INVALID_ARGUMENT;
  if (dom != 0 || dev != 0 || fn != 0 || bus < 0x18 || bus >= 0x18u + (unsigned)sim_ngpu)
    return SIM_NVML_ERROR_NOT_FOUND;
  *device = &sim_gpu[bus - 0x18];
  return MG__NVML_SUCCESS;
}

static int sim_dev_ok(mg__nvmlDevice_t d) {
  return sim_inited && d != NULL && d >= &sim_gpu[0] && d < &sim_gpu[sim_ngpu];
}

MGSIM_API mg__nvmlReturn_t nvmlDeviceGetP2PStatus(mg__nvmlDevice_t a, mg__nvmlDevice_t b,
                                                  mg__nvmlGpuP2PCapsIndex_t index,
                                                  mg__nvmlGpuP2PStatus_t *status) {
  (void)index;
  if (!sim_dev_ok(a) || !sim_dev_ok(b) || status == NULL) return SIM_NVML_ERROR_INVALID_ARGUMENT;
  *status = MG__NVML_P2P_STATUS_OK;
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(mg__nvmlDevice_t a,
                                                               mg__nvmlDevice_t b,
                                                               mg__nvmlGpuTopologyLevel_t *level) {
  if (!sim_dev_ok(a) || !sim_dev_ok(b) || level == NULL) return SIM_NVML_ERROR_INVALID_ARGUMENT;
  *level = a == b ? MG__NVML_TOPOLOGY_INTERNAL : sim_level[a->index][b->index];
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlDeviceGetNvLinkState(mg__nvmlDevice_t d, unsigned int link,
                                                    mg__nvmlEnableState_t *active) {
  if (!sim_dev_ok(d) || active == NULL || link >= (unsigned)d->nlinks)
    return SIM_NVML_ERROR_INVALID_ARGUMENT;
  *active = MG__NVML_FEATURE_ENABLED;
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    mg__nvmlDevice_t d, unsigned int link, mg__nvmlIntNvLinkDeviceType_t *type) {
  if (!sim_dev_ok(d) || type == NULL || link >= (unsigned)d->nlinks)
    return SIM_NVML_ERROR_INVALID_ARGUMENT;
  *type = d->peer[link] < 0 ? MG__NVML_NVLINK_DEVICE_TYPE_SWITCH : MG__NVML_NVLINK_DEVICE_TYPE_GPU;
  return MG__NVML_SUCCESS;
}

MGSIM_API mg__nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(mg__nvmlDevice_t d,
                                                               unsigned int link,
                                                               mg__nvmlPciInfo_t *pci) {
  if (!sim_dev_ok(d) || pci == NULL || link >= (unsigned)d->nlinks)
    return SIM_NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  pci->bus = d->peer[link] < 0 ? 0xf0u : 0x18u + (unsigned)d->peer[link]; /* 0xf0: a switch */
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02x:00.0", pci->bus);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02x:00.0", pci->bus);
  return MG__NVML_SUCCESS;
}
