/*
 * sim_cuda.c -- the simulated CUDA driver (libcuda.so.1): initialisation and version, error
 * names, devices, primary contexts and the thread's current context, peer access, and the
 * driver's getters of mgsim_cuda_control.
 *
 * Devices are MGSIM_DEVICES (default 2) H100-like GPUs: compute capability 9.0, 80 GiB, "mgsim
 * GPU <n>", PCI bus ids 0000:<0x18 + n>:00.0, every pair peer-capable. Memory is in sim_mem.c,
 * streams and events in sim_stream.c.
 *
 * Peer access follows MGSIM_PEERS and the peer faults of sim.h.
 *
 * Divisions: entry checks; initialisation, version and errors; devices; contexts; peer
 * access; control.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_cuda_int.h"

pthread_mutex_t sim_cu_lock = PTHREAD_MUTEX_INITIALIZER;
_Thread_local int sim_in_hostfn;

static int sim_cu_inited;        /* cuInit succeeded (written under sim_cu_lock, then read-only) */
static int sim_cu_ndev = -1;     /* MGSIM_DEVICES, read once */
static pthread_once_t sim_cu_once = PTHREAD_ONCE_INIT;
static struct mg__CUctx_st sim_ctx[SIM_MAX_DEVICES];
static _Thread_local mg__CUcontext sim_current; /* the thread's current context, as CUDA's */
/* The peer knobs (sim.h), [knob][a][b]; read once with MGSIM_DEVICES, read-only afterwards. */
static unsigned char sim_peer[SIM_PEER_KNOBS][SIM_MAX_DEVICES][SIM_MAX_DEVICES];

/* Reads a list "a>b,c>d" (or "none") of ordered pairs into m; an unset or malformed list
 * leaves dflt everywhere, the latter with a line on stderr. */
static void sim_cu_read_pairs(const char *var, unsigned char m[][SIM_MAX_DEVICES], int dflt) {
  for (int a = 0; a < SIM_MAX_DEVICES; a++)
    for (int b = 0; b < SIM_MAX_DEVICES; b++) m[a][b] = (unsigned char)dflt;
  const char *s = getenv(var);
  if (s == NULL || *s == '\0') return;
  unsigned char v[SIM_MAX_DEVICES][SIM_MAX_DEVICES];
  memset(v, 0, sizeof v);
  if (strcmp(s, "none") != 0) {
    for (const char *p = s;;) {
      char *end = NULL;
      long a = strtol(p, &end, 10), b = -1;
      if (end != p && *end == '>') {
        p = end + 1;
        b = strtol(p, &end, 10);
      }
      if (end == p || a < 0 || a >= SIM_MAX_DEVICES || b < 0 || b >= SIM_MAX_DEVICES ||
          (*end != ',' && *end != '\0')) {
        fprintf(stderr, "mgsim: %s=%s is not a list of pairs a>b (0 <= a, b < %d); ignored\n",
                var, s, SIM_MAX_DEVICES);
        return;
      }
      v[a][b] = 1;
      if (*end == '\0') break;
      p = end + 1;
    }
  }
  memcpy(m, v, sizeof v);
}


static void sim_cu_read_env(void) {
  const char *s = getenv("MGSIM_DEVICES");
  int n = 2;
  if (s != NULL && *s != '\0') {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > SIM_MAX_DEVICES) {
      fprintf(stderr, "mgsim: MGSIM_DEVICES=%s is not a number in [0, %d]; using 2\n", s,
              SIM_MAX_DEVICES);
    } else {
      n = (int)v;
    }
  }
  for (int d = 0; d < SIM_MAX_DEVICES; d++) {
    sim_ctx[d].magic = SIM_CTX_MAGIC;
    sim_ctx[d].device = d;
  }
  sim_cu_read_pairs("MGSIM_PEERS", sim_peer[SIM_PEER_CAN], 1);
  sim_cu_read_pairs("MGSIM_PEER_ENABLE_FAIL", sim_peer[SIM_PEER_ENABLE_FAIL], 0);
  sim_cu_read_pairs("MGSIM_PEER_CORRUPT", sim_peer[SIM_PEER_CORRUPT], 0);
  sim_cu_read_pairs("MGSIM_PEER_COPY_FAIL", sim_peer[SIM_PEER_COPY_FAIL], 0);
  sim_cu_ndev = n;
}

int sim_cu_peer_knob(int knob, int a, int b) {
  if (sim_cu_ndevices() <= 0 || a < 0 || b < 0 || a >= SIM_MAX_DEVICES || b >= SIM_MAX_DEVICES)
    return 0;
  return sim_peer[knob][a][b];
}

int sim_cu_ndevices(void) {
  pthread_once(&sim_cu_once, sim_cu_read_env);
  return sim_cu_ndev;
}

/* ---- entry checks -------------------------------------------------------------------------- */

mg__CUresult sim_cu_enter(const char *call) {
  if (sim_in_hostfn) {
    /* CUDA forbids driver calls in host functions; it may answer this or deadlock. Saying so
     * on stderr makes the culprit easy to find. */
    fprintf(stderr, "mgsim: %s called from a host function (cuLaunchHostFunc): "
            "CUDA_ERROR_NOT_PERMITTED\n", call);
    return 800; /* CUDA_ERROR_NOT_PERMITTED */
  }
  pthread_mutex_lock(&sim_cu_lock);
  int ok = sim_cu_inited;
  pthread_mutex_unlock(&sim_cu_lock);
  return ok ? MG__CUDA_SUCCESS : MG__CUDA_ERROR_NOT_INITIALIZED;
}

#define SIM_ENTER(call)                                   \
  do {                                                    \
    mg__CUresult sim_r_ = sim_cu_enter(call);             \
    if (sim_r_ != MG__CUDA_SUCCESS) return sim_r_;        \
  } while (0)

/* ---- initialisation, version and errors ---------------------------------------------------- */

MGSIM_API mg__CUresult cuInit(unsigned int flags) {
  if (sim_in_hostfn) return sim_cu_enter("cuInit");
  if (flags != 0) return MG__CUDA_ERROR_INVALID_VALUE;
  if (sim_cu_ndevices() == 0) return MG__CUDA_ERROR_NO_DEVICE;
  pthread_mutex_lock(&sim_cu_lock);
  sim_cu_inited = 1;
  pthread_mutex_unlock(&sim_cu_lock);
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  *version = 13000; /* a driver of CUDA 13.0; answered without cuInit, as the real one */
  return MG__CUDA_SUCCESS;
}

typedef struct {
  mg__CUresult code;
  const char *name, *text;
} sim_cu_err_t;

static const sim_cu_err_t sim_cu_errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two "
                                                "devices"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", "peer mapping resources exhausted"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const sim_cu_err_t *sim_cu_err(mg__CUresult r) {
  for (size_t i = 0; i < sizeof sim_cu_errors / sizeof sim_cu_errors[0]; i++)
    if (sim_cu_errors[i].code == r) return &sim_cu_errors[i];
  return NULL;
}

/* As the driver: an unknown code is CUDA_ERROR_INVALID_VALUE and *out is set to NULL. */
MGSIM_API mg__CUresult cuGetErrorName(mg__CUresult error, const char **name) {
  if (name == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  const sim_cu_err_t *e = sim_cu_err(error);
  *name = e != NULL ? e->name : NULL;
  return e != NULL ? MG__CUDA_SUCCESS : MG__CUDA_ERROR_INVALID_VALUE;
}

MGSIM_API mg__CUresult cuGetErrorString(mg__CUresult error, const char **str) {
  if (str == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  const sim_cu_err_t *e = sim_cu_err(error);
  *str = e != NULL ? e->text : NULL;
  return e != NULL ? MG__CUDA_SUCCESS : MG__CUDA_ERROR_INVALID_VALUE;
}

/* ---- devices ------------------------------------------------------------------------------- */

static int sim_dev_ok(mg__CUdevice dev) { return dev >= 0 && dev < sim_cu_ndevices(); }

MGSIM_API mg__CUresult cuDeviceGetCount(int *count) {
  SIM_ENTER("cuDeviceGetCount");
  if (count == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  *count = sim_cu_ndevices();
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDeviceGet(mg__CUdevice *dev, int ordinal) {
  SIM_ENTER("cuDeviceGet");
  if (dev == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  if (!sim_dev_ok(ordinal)) return MG__CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal; /* as the driver: a CUdevice is the ordinal */
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDeviceGetName(char *name, int len, mg__CUdevice dev) {
  SIM_ENTER("cuDeviceGetName");
  if (name == NULL || len <= 0) return MG__CUDA_ERROR_INVALID_VALUE;
  if (!sim_dev_ok(dev)) return MG__CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "mgsim GPU %d", dev); /* truncated to len, as the driver does */
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDeviceTotalMem_v2(size_t *bytes, mg__CUdevice dev) {
  SIM_ENTER("cuDeviceTotalMem_v2");
  if (bytes == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  if (!sim_dev_ok(dev)) return MG__CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)80 << 30;
  return MG__CUDA_SUCCESS;
}

#define SIM_PCI_BUS(dev) (0x18 + (dev))

MGSIM_API mg__CUresult cuDeviceGetAttribute(int *value, mg__CUdevice_attribute attrib,
                                            mg__CUdevice dev) {
  SIM_ENTER("cuDeviceGetAttribute");
  if (value == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  if (!sim_dev_ok(dev)) return MG__CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
    case MG__CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case MG__CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = SIM_PCI_BUS(dev); break;
    case MG__CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = 0; break;
    case MG__CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; break;
    case MG__CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
    case MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
    case MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case MG__CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *value = 1; break;
    /* No NVLink SHARP here: the simulated GPUs do not share a switch. */
    case MG__CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: *value = 0; break;
    default: return MG__CUDA_ERROR_INVALID_VALUE; /* what the driver says of an unknown one */
  }
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDeviceGetPCIBusId(char *bus_id, int len, mg__CUdevice dev) {
  SIM_ENTER("cuDeviceGetPCIBusId");
  if (bus_id == NULL || len <= 0) return MG__CUDA_ERROR_INVALID_VALUE;
  if (!sim_dev_ok(dev)) return MG__CUDA_ERROR_INVALID_DEVICE;
  snprintf(bus_id, (size_t)len, "0000:%02x:00.0", SIM_PCI_BUS(dev));
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDeviceCanAccessPeer(int *can_access, mg__CUdevice dev,
                                             mg__CUdevice peer) {
  SIM_ENTER("cuDeviceCanAccessPeer");
  if (can_access == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  if (!sim_dev_ok(dev) || !sim_dev_ok(peer)) return MG__CUDA_ERROR_INVALID_DEVICE;
  /* Host memory: every simulated GPU could reach every other; MGSIM_PEERS says which may. */
  *can_access = dev == peer || sim_peer[SIM_PEER_CAN][dev][peer];
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDeviceGetP2PAttribute(int *value, mg__CUdevice_P2PAttribute attrib,
                                               mg__CUdevice src, mg__CUdevice dst) {
  SIM_ENTER("cuDeviceGetP2PAttribute");
  if (value == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  /* As the driver: a device with itself is not a pair. */
  if (!sim_dev_ok(src) || !sim_dev_ok(dst) || src == dst) return MG__CUDA_ERROR_INVALID_DEVICE;
  const int can = sim_peer[SIM_PEER_CAN][src][dst];
  switch (attrib) {
    case MG__CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; break;
    case MG__CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case MG__CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case MG__CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = can; break;
    default: return MG__CUDA_ERROR_INVALID_VALUE;
  }
  return MG__CUDA_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------------------ */

mg__CUcontext sim_cu_ctx_check(mg__CUcontext ctx) {
  for (int d = 0; d < sim_cu_ndevices(); d++)
    if (ctx == &sim_ctx[d]) return ctx;
  return NULL;
}

mg__CUcontext sim_cu_current(void) { return sim_current; }

int sim_cu_ctx_refs(mg__CUcontext ctx) {
  pthread_mutex_lock(&sim_cu_lock);
  int n = ctx->refs;
  pthread_mutex_unlock(&sim_cu_lock);
  return n;
}

mg__CUresult sim_cu_active(mg__CUcontext *ctx) {
  mg__CUcontext c = sim_current;
  /* A released primary context is inactive: the driver would have destroyed everything in it,
   * so new work there is refused rather than silently accepted. */
  if (c == NULL || sim_cu_ctx_refs(c) <= 0) return MG__CUDA_ERROR_INVALID_CONTEXT;
  *ctx = c;
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDevicePrimaryCtxRetain(mg__CUcontext *ctx, mg__CUdevice dev) {
  SIM_ENTER("cuDevicePrimaryCtxRetain");
  if (ctx == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  if (!sim_dev_ok(dev)) return MG__CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&sim_cu_lock);
  sim_ctx[dev].refs++;
  pthread_mutex_unlock(&sim_cu_lock);
  *ctx = &sim_ctx[dev];
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuDevicePrimaryCtxRelease_v2(mg__CUdevice dev) {
  SIM_ENTER("cuDevicePrimaryCtxRelease_v2");
  if (!sim_dev_ok(dev)) return MG__CUDA_ERROR_INVALID_DEVICE;
  mg__CUresult r = MG__CUDA_SUCCESS;
  pthread_mutex_lock(&sim_cu_lock);
  if (sim_ctx[dev].refs <= 0)
    r = MG__CUDA_ERROR_INVALID_CONTEXT; /* released more often than retained */
  else
    sim_ctx[dev].refs--;
  pthread_mutex_unlock(&sim_cu_lock);
  if (r != MG__CUDA_SUCCESS)
    fprintf(stderr, "mgsim: cuDevicePrimaryCtxRelease_v2(%d): the primary context is not "
            "retained (more releases than retains)\n", dev);
  return r;
}

MGSIM_API mg__CUresult cuCtxGetCurrent(mg__CUcontext *ctx) {
  SIM_ENTER("cuCtxGetCurrent");
  if (ctx == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  *ctx = sim_current;
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuCtxSetCurrent(mg__CUcontext ctx) {
  SIM_ENTER("cuCtxSetCurrent");
  if (ctx != NULL && sim_cu_ctx_check(ctx) == NULL) return MG__CUDA_ERROR_INVALID_CONTEXT;
  sim_current = ctx;
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuCtxGetDevice(mg__CUdevice *dev) {
  SIM_ENTER("cuCtxGetDevice");
  if (dev == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  if (sim_current == NULL) return MG__CUDA_ERROR_INVALID_CONTEXT;
  *dev = sim_current->device;
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuCtxSynchronize(void) {
  SIM_ENTER("cuCtxSynchronize");
  mg__CUcontext ctx = NULL;
  mg__CUresult r = sim_cu_active(&ctx);
  if (r != MG__CUDA_SUCCESS) return r;
  sim_stream_sync_ctx(ctx);
  return MG__CUDA_SUCCESS;
}

/* ---- peer access --------------------------------------------------------------------------- */

MGSIM_API mg__CUresult cuCtxEnablePeerAccess(mg__CUcontext peer, unsigned int flags) {
  SIM_ENTER("cuCtxEnablePeerAccess");
  if (flags != 0) return MG__CUDA_ERROR_INVALID_VALUE;
  mg__CUcontext cur = NULL;
  mg__CUresult r = sim_cu_active(&cur);
  if (r != MG__CUDA_SUCCESS) return r;
  if (sim_cu_ctx_check(peer) == NULL) return MG__CUDA_ERROR_INVALID_CONTEXT;
  if (peer == cur) return MG__CUDA_ERROR_INVALID_VALUE; /* the driver refuses a context itself */
  if (!sim_peer[SIM_PEER_CAN][cur->device][peer->device])
    return MG__CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (sim_peer[SIM_PEER_ENABLE_FAIL][cur->device][peer->device])
    return MG__CUDA_ERROR_TOO_MANY_PEERS;
  pthread_mutex_lock(&sim_cu_lock);
  if (cur->peer[peer->device])
    r = MG__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  else
    cur->peer[peer->device] = 1;
  pthread_mutex_unlock(&sim_cu_lock);
  return r;
}

MGSIM_API mg__CUresult cuCtxDisablePeerAccess(mg__CUcontext peer) {
  SIM_ENTER("cuCtxDisablePeerAccess");
  mg__CUcontext cur = NULL;
  mg__CUresult r = sim_cu_active(&cur);
  if (r != MG__CUDA_SUCCESS) return r;
  if (sim_cu_ctx_check(peer) == NULL) return MG__CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&sim_cu_lock);
  if (!cur->peer[peer->device])
    r = MG__CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  else
    cur->peer[peer->device] = 0;
  pthread_mutex_unlock(&sim_cu_lock);
  return r;
}

int sim_cu_peer_enabled(int a, int b) {
  if (a < 0 || b < 0 || a >= sim_cu_ndevices() || b >= sim_cu_ndevices()) return 0;
  pthread_mutex_lock(&sim_cu_lock);
  int on = sim_ctx[a].peer[b];
  pthread_mutex_unlock(&sim_cu_lock);
  return on;
}

/* ---- control ------------------------------------------------------------------------------- */

MGSIM_API int mgsim_cuda_control(const char *key, long value) {
  if (key == NULL) return -1;
  if (strcmp(key, "allocs") == 0) return sim_mem_count();
  if (strcmp(key, "streams") == 0) return sim_stream_count();
  if (strcmp(key, "events") == 0) return sim_event_count();
  if (strcmp(key, "devices") == 0) return sim_cu_ndevices();
  if (strcmp(key, "hostfns") == 0) return sim_hostfn_count();
  if (strcmp(key, "stream_ctx") == 0) return sim_stream_ctx_count();
  if (strcmp(key, "query_fault") == 0) {
    sim_query_fault_set(value != 0);
    return 0;
  }
  if (strcmp(key, "ctx_refs") == 0) {
    if (value < 0 || value >= sim_cu_ndevices()) return -1;
    return sim_cu_ctx_refs(&sim_ctx[value]);
  }
  fprintf(stderr, "mgsim: mgsim_control: unknown key \"%s\"\n", key);
  return -1;
}
