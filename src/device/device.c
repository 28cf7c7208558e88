/*
 * device.c -- the CUDA driver layer: driver initialisation (once per process) and the device
 * queries of mgcomm.h (mg_device_count, mg_device_info, mg_device_can_access_peer).
 *
 * Nothing here creates a context: every query works on device handles. Nothing here creates a
 * multicast object either; multicast support is a read-only attribute.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "device/device.h"
#include "loader/loader.h"

static pthread_once_t mg__cu_once = PTHREAD_ONCE_INIT;
static mg_status_t mg__cu_status_v;        /* outcome of load + cuInit */
static int mg__cu_no_device;               /* cuInit said CUDA_ERROR_NO_DEVICE */
static char mg__cu_msg[MG__ERROR_LEN];     /* the error of a failed init */

static void mg__cu_init_once(void) {
  mg_status_t st = mg__load_cuda();
  if (st == MG_OK) {
    mg__CUresult r = mg__cuda.Init(0);
    if (r == MG__CUDA_ERROR_NO_DEVICE) {
      mg__cu_no_device = 1; /* a driver without devices: zero devices, not an error */
    } else if (r != MG__CUDA_SUCCESS) {
      st = mg__cu_error(r, "cuInit");
    }
  }
  mg__cu_status_v = st;
  if (st != MG_OK) snprintf(mg__cu_msg, sizeof mg__cu_msg, "%s", mg_last_error());
}

mg_status_t mg__device_init(void) {
  pthread_once(&mg__cu_once, mg__cu_init_once);
  if (mg__cu_status_v != MG_OK) return mg__error(mg__cu_status_v, "%s", mg__cu_msg);
  return MG_OK;
}

/* The number of devices, after a successful mg__device_init. */
static mg_status_t mg__device_count(int *count) {
  if (mg__cu_no_device) {
    *count = 0;
    return MG_OK;
  }
  int n = 0;
  MG_CU_CHECK(DeviceGetCount, &n);
  *count = n;
  return MG_OK;
}

mg_status_t mg__device_get(int ordinal, const char *fn, mg__CUdevice *dev) {
  int n = 0;
  MG_CHECK(mg__device_init());
  MG_CHECK(mg__device_count(&n));
  if (ordinal < 0 || ordinal >= n)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: device %d is out of range: %d device%s", fn,
                     ordinal, n, n == 1 ? "" : "s");
  MG_CU_CHECK(DeviceGet, dev, ordinal);
  return MG_OK;
}

mg_status_t mg_device_count(int *count) {
  if (count == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_device_count: count is NULL");
  int n = 0;
  MG_CHECK(mg__device_init());
  MG_CHECK(mg__device_count(&n));
  *count = n;
  return MG_OK;
}

mg_status_t mg_device_info(int ordinal, mg_device_info_t *info) {
  if (info == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_device_info: info is NULL");
  mg__CUdevice dev;
  MG_CHECK(mg__device_get(ordinal, "mg_device_info", &dev));
  mg_device_info_t d;
  memset(&d, 0, sizeof d);
  d.ordinal = ordinal;
  MG_CU_CHECK(DeviceGetName, d.name, (int)sizeof d.name, dev);
  MG_CU_CHECK(DeviceTotalMem, &d.total_memory, dev);
  MG_CU_CHECK(DeviceGetAttribute, &d.cc_major, MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
              dev);
  MG_CU_CHECK(DeviceGetAttribute, &d.cc_minor, MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
              dev);
  MG_CU_CHECK(DeviceGetPCIBusId, d.pci_bus_id, (int)sizeof d.pci_bus_id, dev);
  /* Drivers older than CUDA 12.1 do not know the attribute: for them it is unsupported. */
  int mc = 0;
  mg__CUresult r =
      mg__cuda.DeviceGetAttribute(&mc, MG__CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, dev);
  if (r == MG__CUDA_ERROR_INVALID_VALUE) mc = 0;
  else if (r != MG__CUDA_SUCCESS) return mg__cu_error(r, "cuDeviceGetAttribute(MULTICAST_SUPPORTED)");
  d.multicast_supported = mc != 0;
  *info = d;
  return MG_OK;
}

mg_status_t mg_device_can_access_peer(int from, int to, int *can_access) {
  if (can_access == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_device_can_access_peer: can_access is NULL");
  mg__CUdevice a, b;
  MG_CHECK(mg__device_get(from, "mg_device_can_access_peer", &a));
  MG_CHECK(mg__device_get(to, "mg_device_can_access_peer", &b));
  if (from == to) {
    *can_access = 1;
    return MG_OK;
  }
  int can = 0;
  MG_CU_CHECK(DeviceCanAccessPeer, &can, a, b);
  *can_access = can != 0;
  return MG_OK;
}
