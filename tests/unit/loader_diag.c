/*
 * loader_diag.c -- the public diagnostics of mgcomm.h (library, attempt, feature and device
 * queries): argument checks, the feature table's names (golden), and, where a driver is
 * installed, sane device descriptions. Runs on every machine; the device part skips its
 * checks where there is no driver, after checking the error it gets there.
 */

#include "loader_util.h"

static void check_libraries(void) {
  static const char *const names[MG_LIB_COUNT] = {"libcuda.so.1", "libnccl.so.2",
                                                  "libnvshmem_host.so.3", "libnvidia-ml.so.1"};
  mg_library_info_t li;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_info(MG_LIB_COUNT, &li));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_info((mg_library_t)-1, &li));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_info(MG_LIB_NCCL, NULL));
  for (int lib = 0; lib < MG_LIB_COUNT; lib++) {
    ASSERT_OK(mg_library_info((mg_library_t)lib, &li));
    ASSERT_STR_EQ(li.name, names[lib]);
    ASSERT_GE(li.attempts, 1);
    /* loaded: a path, a version string, no error; not loaded: none of these, and a reason. */
    if (li.loaded) {
      ASSERT(li.path != NULL && li.path[0] == '/');
      ASSERT_STR_EQ(li.error, "");
    } else {
      ASSERT(li.path == NULL);
      ASSERT_EQ(li.version, 0);
      ASSERT_CONTAINS(li.error, names[lib]);
    }
    if (lib != MG_LIB_NVSHMEM) ASSERT(li.plugin_dir == NULL);
    const char *p = NULL, *o = NULL;
    for (int a = 0; a < li.attempts; a++) {
      ASSERT_OK(mg_library_attempt((mg_library_t)lib, a, &p, &o));
      ASSERT(p != NULL && p[0] != '\0' && o != NULL && o[0] != '\0');
    }
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_attempt((mg_library_t)lib, li.attempts, &p, &o));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_attempt((mg_library_t)lib, -1, &p, &o));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_attempt((mg_library_t)lib, 0, NULL, &o));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_attempt((mg_library_t)lib, 0, &p, NULL));
  }
  const char *p = NULL, *o = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_library_attempt(MG_LIB_COUNT, 0, &p, &o));
}

static void check_features(void) {
  /* Golden: names, libraries and minimum versions of contract 8, in mg_feature_t order. */
  static const struct {
    const char *name;
    int min;
    const char *min_s;
  } want[MG_FEATURE_COUNT] = {
      {"avg", 21000, "2.10"},         {"premul_sum", 21100, "2.11"},
      {"config", 21400, "2.14"},      {"split", 21800, "2.18"},
      {"register", 21900, "2.19"},    {"fp8", 22400, "2.24"},
      {"window", 22700, "2.27"},      {"shrink", 22700, "2.27"},
      {"alltoall_gather_scatter", 22800, "2.28"}, {"revoke", 22807, "2.28.7"},
      {"grow", 22902, "2.29.2"},      {"properties", 22902, "2.29.2"},
      {"window_pointers", 22902, "2.29.2"}, {"signals", 22902, "2.29.2"},
      {"suspend", 22907, "2.29.7"},   {"params", 23007, "2.30.7"},
      {"kernels", 11000, "11.0"},
  };
  mg_feature_info_t fi;
  for (int f = 0; f < MG_FEATURE_COUNT; f++) {
    ASSERT_OK(mg_feature_info((mg_feature_t)f, &fi));
    ASSERT_STR_EQ(fi.name, want[f].name);
    const int cuda = f == MG_FEATURE_CUDA_KERNELS; /* the one feature of the driver */
    ASSERT_STR_EQ(fi.library, cuda ? "cuda" : "nccl");
    ASSERT_EQ(fi.min_version, want[f].min);
    ASSERT_STR_EQ(fi.min_version_string, want[f].min_s);
    ASSERT(fi.available == 0 || fi.available == 1);
    if (!mg__loaded(cuda ? MG_LIB_CUDA : MG_LIB_NCCL)) ASSERT_EQ(fi.available, 0);
  }
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_feature_info(MG_FEATURE_COUNT, &fi));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_feature_info((mg_feature_t)-1, &fi));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_feature_info(MG_FEATURE_NCCL_FP8, NULL));
}

static void check_devices(void) {
  int n = -1;
  mg_status_t st = mg_device_count(&n);
  if (!mg__loaded(MG_LIB_CUDA)) {
    ASSERT_EQ(st, MG_ERR_BACKEND_UNAVAILABLE);
    ASSERT_EQ(n, -1);
    printf("no CUDA driver: device checks limited to the error\n");
    return;
  }
  ASSERT_OK(st);
  ASSERT_GE(n, 0);
  printf("%d device(s)\n", n);
  mg_device_info_t di;
  for (int d = 0; d < n; d++) {
    ASSERT_OK(mg_device_info(d, &di));
    printf("  [%d] %s %zu bytes cc %d.%d %s mc %d\n", d, di.name, di.total_memory, di.cc_major,
           di.cc_minor, di.pci_bus_id, di.multicast_supported);
    ASSERT_EQ(di.ordinal, d);
    ASSERT(di.name[0] != '\0');
    ASSERT_GT(di.total_memory, 0);
    ASSERT_GE(di.cc_major, 3);
    ASSERT(di.multicast_supported == 0 || di.multicast_supported == 1);
    /* "0000:19:00.0": domain:bus:device.function in hex */
    ASSERT_EQ(strlen(di.pci_bus_id), 12);
    ASSERT(di.pci_bus_id[4] == ':' && di.pci_bus_id[7] == ':' && di.pci_bus_id[10] == '.');
    for (int e = 0; e < n; e++) {
      int can = -1;
      ASSERT_OK(mg_device_can_access_peer(d, e, &can));
      ASSERT(can == 0 || can == 1);
      if (d == e) ASSERT_EQ(can, 1);
    }
  }
  memset(&di, 0x33, sizeof di);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_device_info(n, &di));
  ASSERT_CONTAINS(mg_last_error(), "out of range");
  ASSERT_EQ((unsigned char)di.name[0], 0x33); /* untouched on error */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_device_info(-1, &di));
  int can = -1;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_device_can_access_peer(0, n, &can));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_device_can_access_peer(-1, 0, &can));
}

int main(void) {
  check_libraries();
  check_features();
  check_devices();
  return 0;
}
