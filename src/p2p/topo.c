/*
 * topo.c -- the topology of this process's GPUs: the directional matrix of what each ordered
 * pair can do, read once; the links from NVML where it is loaded, else the driver's P2P
 * attributes; contexts and copy streams made on first use; mg_p2p_pair_info and the islands.
 *
 * Divisions: reading the matrix (driver, NVML); the state; queries; islands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "loader/loader.h"
#include "p2p/p2p.h"

/* ---- reading the matrix ------------------------------------------------------------------- */

/* The driver's P2P attributes of (a, b), a != b. A driver that does not know an attribute
 * answers CUDA_ERROR_INVALID_VALUE: the value stays unknown (-1 for the rank, 0 otherwise). */
static void mg__p2p_read_attributes(mg__CUdevice a, mg__CUdevice b, mg__p2p_pair_t *pp) {
  int v = 0;
  pp->perf_rank =
      mg__cuda.DeviceGetP2PAttribute(&v, MG__CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, a, b) ==
              MG__CUDA_SUCCESS
          ? v
          : -1;
  v = 0;
  pp->native_atomics = mg__cuda.DeviceGetP2PAttribute(
                           &v, MG__CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, a, b) ==
                           MG__CUDA_SUCCESS &&
                       v != 0;
  v = 0;
  pp->array_access = mg__cuda.DeviceGetP2PAttribute(
                         &v, MG__CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED, a, b) ==
                         MG__CUDA_SUCCESS &&
                     v != 0;
}

/* What NVML says of one GPU's NVLinks: the PCI addresses at the far end of its active links to
 * GPUs, and how many of its active links go to NVSwitches. */
typedef struct {
  mg__nvmlDevice_t h;           /* NULL: NVML does not know this GPU */
  unsigned domain, bus, device; /* its own PCI address (from CUDA) */
  int nlinks;                   /* active links to GPUs ... */
  unsigned peer[MG__NVML_NVLINK_MAX_LINKS][3]; /* ... and the PCI address at their far end */
  int switch_links;             /* active links to NVSwitches */
} mg__nvml_gpu_t;

static void mg__nvml_read_gpu(mg__CUdevice dev, mg__nvml_gpu_t *g) {
  memset(g, 0, sizeof *g);
  char bus_id[32];
  int v[3] = {0, 0, 0};
  if (mg__cuda.DeviceGetPCIBusId(bus_id, (int)sizeof bus_id, dev) != MG__CUDA_SUCCESS ||
      mg__cuda.DeviceGetAttribute(&v[0], MG__CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) != 0 ||
      mg__cuda.DeviceGetAttribute(&v[1], MG__CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) != 0 ||
      mg__cuda.DeviceGetAttribute(&v[2], MG__CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) != 0 ||
      mg__nvml.DeviceGetHandleByPciBusId(bus_id, &g->h) != MG__NVML_SUCCESS) {
    g->h = NULL;
    return;
  }
  g->domain = (unsigned)v[0];
  g->bus = (unsigned)v[1];
  g->device = (unsigned)v[2];
  for (unsigned l = 0; l < MG__NVML_NVLINK_MAX_LINKS; l++) {
    mg__nvmlEnableState_t on = 0;
    /* A link number the GPU does not have answers an error: it has no link there. */
    if (mg__nvml.DeviceGetNvLinkState(g->h, l, &on) != MG__NVML_SUCCESS ||
        on != MG__NVML_FEATURE_ENABLED)
      continue;
    mg__nvmlIntNvLinkDeviceType_t type = MG__NVML_NVLINK_DEVICE_TYPE_GPU;
    if (mg__nvml.DeviceGetNvLinkRemoteDeviceType != NULL &&
        mg__nvml.DeviceGetNvLinkRemoteDeviceType(g->h, l, &type) == MG__NVML_SUCCESS &&
        type == MG__NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      g->switch_links++;
      continue;
    }
    mg__nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    if (mg__nvml.DeviceGetNvLinkRemotePciInfo(g->h, l, &pci) != MG__NVML_SUCCESS) continue;
    g->peer[g->nlinks][0] = pci.domain;
    g->peer[g->nlinks][1] = pci.bus;
    g->peer[g->nlinks][2] = pci.device;
    g->nlinks++;
  }
}

/* The link of (a, b), a != b, from NVML: NVLinks straight to b's PCI address, else, when both
 * reach NVSwitches, the fewer of their switch links (`nvidia-smi topo -m` prints NV18 between
 * the GPUs of an HGX H100 that way); else the PCIe tree's common ancestor. */
static void mg__nvml_link(const mg__nvml_gpu_t *a, const mg__nvml_gpu_t *b, mg__p2p_pair_t *pp) {
  int direct = 0;
  for (int l = 0; l < a->nlinks; l++)
    direct += a->peer[l][0] == b->domain && a->peer[l][1] == b->bus && a->peer[l][2] == b->device;
  if (direct > 0) {
    pp->link = MG_P2P_LINK_NVLINK;
    pp->nvlinks = direct;
    return;
  }
  if (a->switch_links > 0 && b->switch_links > 0) {
    pp->link = MG_P2P_LINK_NVLINK;
    pp->nvlinks = a->switch_links < b->switch_links ? a->switch_links : b->switch_links;
    return;
  }
  mg__nvmlGpuTopologyLevel_t level = 0;
  if (mg__nvml.DeviceGetTopologyCommonAncestor(a->h, b->h, &level) != MG__NVML_SUCCESS) return;
  switch (level) {
    case MG__NVML_TOPOLOGY_INTERNAL: /* two GPUs of one board, behind its own switch */
    case MG__NVML_TOPOLOGY_SINGLE: pp->link = MG_P2P_LINK_PIX; break;
    case MG__NVML_TOPOLOGY_MULTIPLE: pp->link = MG_P2P_LINK_PXB; break;
    case MG__NVML_TOPOLOGY_HOSTBRIDGE: pp->link = MG_P2P_LINK_PHB; break;
    case MG__NVML_TOPOLOGY_NODE: pp->link = MG_P2P_LINK_NODE; break;
    case MG__NVML_TOPOLOGY_SYSTEM: pp->link = MG_P2P_LINK_SYS; break;
    default: break; /* a level newer than this code: unknown */
  }
}

/* The links of every pair from NVML, when it is loaded and has the optional functions; pairs
 * stay MG_P2P_LINK_UNKNOWN otherwise. */
static void mg__p2p_read_links(mg__p2p_t *p, const mg__CUdevice *dev) {
  if (p->n < 2 || mg__load_nvml() != MG_OK || mg__nvml.DeviceGetHandleByPciBusId == NULL ||
      mg__nvml.DeviceGetTopologyCommonAncestor == NULL || mg__nvml.DeviceGetNvLinkState == NULL ||
      mg__nvml.DeviceGetNvLinkRemotePciInfo == NULL)
    return;
  mg__nvml_gpu_t *g = calloc((size_t)p->n, sizeof *g);
  if (g == NULL) return; /* the links are a description: unknown rather than a failure */
  for (int d = 0; d < p->n; d++) mg__nvml_read_gpu(dev[d], &g[d]);
  for (int a = 0; a < p->n; a++)
    for (int b = 0; b < p->n; b++)
      if (a != b && g[a].h != NULL && g[b].h != NULL)
        mg__nvml_link(&g[a], &g[b], mg__p2p_pair(p, a, b));
  free(g);
}

/* ---- the state ------------------------------------------------------------------------------ */

static pthread_once_t mg__p2p_once = PTHREAD_ONCE_INIT;
static mg__p2p_t mg__p2p_state;
static mg_status_t mg__p2p_status;       /* outcome of the read */
static char mg__p2p_msg[MG__ERROR_LEN];  /* its message when it failed */

static mg_status_t mg__p2p_read(mg__p2p_t *p) {
  int n = 0;
  MG_CHECK(mg_device_count(&n));
  p->n = n;
  if (n == 0) return MG_OK;
  mg__CUdevice *dev = calloc((size_t)n, sizeof *dev);
  p->ctx = calloc((size_t)n, sizeof *p->ctx);
  p->stream = calloc((size_t)n, sizeof *p->stream);
  p->done = calloc((size_t)n, sizeof *p->done);
  p->pair = calloc((size_t)n * (size_t)n, sizeof *p->pair);
  mg_status_t st = MG_OK;
  if (dev == NULL || p->ctx == NULL || p->stream == NULL || p->done == NULL || p->pair == NULL) {
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "the peer topology of %d GPUs: out of memory", n);
    goto out;
  }
  for (int d = 0; d < n && st == MG_OK; d++) st = mg__device_get(d, "mg_p2p", &dev[d]);
  for (int a = 0; a < n && st == MG_OK; a++) {
    for (int b = 0; b < n; b++) {
      mg__p2p_pair_t *pp = mg__p2p_pair(p, a, b);
      pp->perf_rank = -1;
      if (a == b) {
        pp->can_access = 1;
        pp->link = MG_P2P_LINK_SELF;
        continue;
      }
      int can = 0;
      MG_CU_CHECK_GOTO(st, out, DeviceCanAccessPeer, &can, dev[a], dev[b]);
      pp->can_access = can != 0;
      mg__p2p_read_attributes(dev[a], dev[b], pp);
    }
  }
  if (st == MG_OK) mg__p2p_read_links(p, dev);
out:
  free(dev);
  return st;
}

static void mg__p2p_once_fn(void) {
  mg__p2p_t *p = &mg__p2p_state;
  pthread_mutex_init(&p->lock, NULL);
  mg__p2p_status = mg__p2p_read(p);
  if (mg__p2p_status != MG_OK) {
    snprintf(mg__p2p_msg, sizeof mg__p2p_msg, "%s", mg_last_error());
    p->n = 0; /* nothing of it is used */
  }
}

mg_status_t mg__p2p_get(mg__p2p_t **out) {
  pthread_once(&mg__p2p_once, mg__p2p_once_fn);
  if (mg__p2p_status != MG_OK) return mg__error(mg__p2p_status, "%s", mg__p2p_msg);
  *out = &mg__p2p_state;
  return MG_OK;
}

mg_status_t mg__p2p_check_device(const mg__p2p_t *p, int device, const char *fn,
                                 const char *arg) {
  if (device < 0 || device >= p->n)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s %d is out of range: %d CUDA device%s", fn,
                     arg, device, p->n, p->n == 1 ? "" : "s");
  return MG_OK;
}

mg_p2p_path_t mg__p2p_path_locked(mg__p2p_t *p, int from, int to) {
  if (from == to) return MG_P2P_PATH_LOCAL;
  const mg__p2p_pair_t *pp = mg__p2p_pair(p, from, to);
  return pp->enabled && pp->probe != MG_P2P_PROBE_FAILED ? MG_P2P_PATH_PEER : MG_P2P_PATH_STAGED;
}

mg_status_t mg__p2p_ctx_locked(mg__p2p_t *p, int d, mg__CUcontext *ctx) {
  if (p->ctx[d] == NULL) {
    mg__CUdevice dev;
    MG_CHECK(mg__device_ctx_retain(d, "mg_p2p", &dev, &p->ctx[d]));
  }
  *ctx = p->ctx[d];
  return MG_OK;
}

mg_status_t mg__p2p_stream_locked(mg__p2p_t *p, int d, mg__CUstream *stream) {
  if (p->stream[d] == NULL) {
    mg__CUcontext ctx, saved;
    MG_CHECK(mg__p2p_ctx_locked(p, d, &ctx));
    MG_CHECK(mg__device_ctx_enter(ctx, &saved));
    mg__CUresult r = mg__cuda.StreamCreate(&p->stream[d], MG__CU_STREAM_NON_BLOCKING);
    mg__device_ctx_leave(ctx, saved);
    if (r != MG__CUDA_SUCCESS) {
      p->stream[d] = NULL;
      return mg__cu_error(r, "cuStreamCreate");
    }
  }
  *stream = p->stream[d];
  return MG_OK;
}

void mg__p2p_mem_free(int d, mg__CUdeviceptr ptr) {
  mg__p2p_t *p = &mg__p2p_state;
  pthread_mutex_lock(&p->lock);
  mg__CUcontext ctx = d >= 0 && d < p->n ? p->ctx[d] : NULL;
  pthread_mutex_unlock(&p->lock);
  mg__CUcontext saved;
  if (ctx == NULL || mg__device_ctx_enter(ctx, &saved) != MG_OK) return; /* see p2p.h */
  /* cuMemFree fails only for a pointer that is not an allocation (never ours) or at exit. */
  (void)mg__cuda.MemFree(ptr);
  mg__device_ctx_leave(ctx, saved);
}

/* ---- queries ------------------------------------------------------------------------------ */

mg_status_t mg_p2p_pair_info(int from, int to, mg_p2p_pair_info_t *info) {
  static const char fn[] = "mg_p2p_pair_info";
  if (info == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: info is NULL", fn);
  mg__p2p_t *p;
  MG_CHECK(mg__p2p_get(&p));
  MG_CHECK(mg__p2p_check_device(p, from, fn, "from"));
  MG_CHECK(mg__p2p_check_device(p, to, fn, "to"));
  mg_p2p_pair_info_t out;
  memset(&out, 0, sizeof out);
  pthread_mutex_lock(&p->lock);
  const mg__p2p_pair_t *pp = mg__p2p_pair(p, from, to);
  out.from = from;
  out.to = to;
  out.can_access = pp->can_access;
  out.enabled = from == to || pp->enabled;
  out.enable_status = pp->enable_status;
  out.link = pp->link;
  out.nvlinks = pp->nvlinks;
  out.perf_rank = pp->perf_rank;
  out.native_atomics = pp->native_atomics;
  out.array_access = pp->array_access;
  out.probe = pp->probe;
  out.gbps = pp->gbps;
  out.path = mg__p2p_path_locked(p, from, to);
  snprintf(out.reason, sizeof out.reason, "%s", pp->reason);
  pthread_mutex_unlock(&p->lock);
  *info = out;
  return MG_OK;
}

/* ---- islands ------------------------------------------------------------------------------ */

static int mg__uf_find(int *parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

/* 1 when a -> b is peer access that works or may: possible, and neither enabling nor the probe
 * failed it. */
static int mg__p2p_joins(const mg__p2p_pair_t *pp) {
  return pp->can_access && pp->enable_status == MG_OK && pp->probe != MG_P2P_PROBE_FAILED;
}

mg_status_t mg_p2p_islands(int *island, int capacity, int *nislands) {
  static const char fn[] = "mg_p2p_islands";
  if (island == NULL || nislands == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                     island == NULL ? "island" : "nislands");
  mg__p2p_t *p;
  MG_CHECK(mg__p2p_get(&p));
  const int n = p->n;
  if (capacity < n)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: capacity %d is less than the %d CUDA devices",
                     fn, capacity, n);
  if (n == 0) {
    *nislands = 0;
    return MG_OK;
  }
  int *parent = malloc(sizeof *parent * 2 * (size_t)n);
  if (parent == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  int *number = parent + n;
  for (int d = 0; d < n; d++) parent[d] = d;
  pthread_mutex_lock(&p->lock);
  for (int a = 0; a < n; a++)
    for (int b = a + 1; b < n; b++)
      if (mg__p2p_joins(mg__p2p_pair(p, a, b)) || mg__p2p_joins(mg__p2p_pair(p, b, a))) {
        int ra = mg__uf_find(parent, a), rb = mg__uf_find(parent, b);
        /* The smaller root wins, so each island's root is its smallest device. */
        if (ra < rb) parent[rb] = ra;
        else if (rb < ra) parent[ra] = rb;
      }
  pthread_mutex_unlock(&p->lock);
  /* Numbered in the order of their smallest device: the roots, met in increasing order. */
  int k = 0;
  for (int d = 0; d < n; d++) number[d] = -1;
  for (int d = 0; d < n; d++) {
    int r = mg__uf_find(parent, d);
    if (number[r] < 0) number[r] = k++;
    island[d] = number[r];
  }
  free(parent);
  *nislands = k;
  return MG_OK;
}
