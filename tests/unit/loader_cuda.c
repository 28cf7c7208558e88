/*
 * loader_cuda.c -- the CUDA driver through the loader. One mode per CTest entry:
 *   missing        no driver here: every device query says so, with every candidate tried
 *                  (skips where a driver is installed)
 *   stub-explicit  MGCOMM_CUDA_LIBRARY names the toolkit's stub libcuda.so: refused as a stub
 *   stub-in-path   CUDA_HOME=<tmp> whose lib64/libcuda.so.1 links to the stub: the candidate
 *                  is opened, recognised as the stub, refused, and the search goes on
 * The stub modes take the stub's path from MG_TEST_CUDA_STUB (skip when it is absent).
 */
#include "loader_util.h"

static int mode_missing(void) {
  if (mg__loaded(MG_LIB_CUDA))
    SKIP("a CUDA driver is installed here (%s)", mg__lib_report(MG_LIB_CUDA)->path);
  int n = -1;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_device_count(&n));
  ASSERT_EQ(n, -1); /* outputs are written only on success */
  const char *msg = mg_last_error();
  printf("message: %s\n", msg);
  ASSERT_CONTAINS(msg, "no usable CUDA driver (libcuda.so.1) was found");
  ASSERT_CONTAINS(msg, "candidates tried");
  ASSERT_CONTAINS(msg, "/usr/local/cuda/lib64/libcuda.so.1");
  lt_dump(MG_LIB_CUDA);
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_CUDA);
  ASSERT_EQ(r->loaded, 0);
  ASSERT_GE(r->nattempts, 3);
  ASSERT(lt_attempt_index(MG_LIB_CUDA, "libcuda.so.1") >= 0); /* the dynamic linker's turn */
  ASSERT(lt_attempt_index(MG_LIB_CUDA, "/usr/local/cuda/lib64/libcuda.so.1") >= 0);
  for (int i = 0; i < r->nattempts; i++) {
    ASSERT(r->attempts[i].outcome[0] != '\0');
    ASSERT(strcmp(r->attempts[i].outcome, "loaded") != 0);
    ASSERT(strstr(r->attempts[i].path, "stubs") == NULL); /* stubs folders are never searched */
    ASSERT_CONTAINS(msg, r->attempts[i].path);            /* the message lists every one */
  }
  /* Every device query fails the same way, after checking its arguments. */
  mg_device_info_t di;
  int can = -1;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_device_info(0, &di));
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_device_can_access_peer(0, 1, &can));
  ASSERT_EQ(can, -1);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_device_count(NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_device_info(0, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_device_can_access_peer(0, 0, NULL));
  ASSERT(mg__cuda.Init == NULL && mg__cuda.DeviceGetCount == NULL);
  return 0;
}

static const char *stub_path(void) {
  const char *stub = getenv("MG_TEST_CUDA_STUB");
  if (stub == NULL) FAIL("MG_TEST_CUDA_STUB must be set");
  if (!lt_exists(stub)) SKIP("no CUDA toolkit stub at %s", stub);
  return stub;
}

static int mode_stub_explicit(void) {
  const char *stub = stub_path();
  setenv("MGCOMM_CUDA_LIBRARY", stub, 1);
  int n = -1;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_device_count(&n));
  const char *msg = mg_last_error();
  printf("message: %s\n", msg);
  ASSERT_CONTAINS(msg, "MGCOMM_CUDA_LIBRARY");
  ASSERT_CONTAINS(msg, "stub library");
  ASSERT_CONTAINS(msg, "CUDA_ERROR_STUB_LIBRARY");
  lt_dump(MG_LIB_CUDA);
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_CUDA);
  ASSERT_EQ(r->loaded, 0);
  ASSERT_EQ(r->nattempts, 1);
  ASSERT_CONTAINS(r->attempts[0].outcome, "not a driver");
  ASSERT(mg__cuda.Init == NULL); /* the stub's table was cleared before it was closed */
  return 0;
}

static int mode_stub_in_path(void) {
  const char *stub = stub_path();
  char home[PATH_MAX], lib[PATH_MAX], link[PATH_MAX];
  lt_tempdir(home, sizeof home);
  snprintf(lib, sizeof lib, "%s/lib64", home);
  lt_mkdirs(lib);
  snprintf(link, sizeof link, "%s/libcuda.so.1", lib);
  lt_symlink(stub, link);
  setenv("CUDA_HOME", home, 1);
  unsetenv("MGCOMM_CUDA_LIBRARY");
  mg_status_t st = mg__load_cuda();
  lt_dump(MG_LIB_CUDA);
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_CUDA);
  int i = lt_attempt_index(MG_LIB_CUDA, link);
  ASSERT_GE(i, 0);
  ASSERT_CONTAINS(r->attempts[i].outcome, "stub library");
  ASSERT_LT(i, r->nattempts - 1); /* the search went on after refusing the stub */
  if (st == MG_OK) {
    /* A machine with a driver: it was found later, and it is not the stub. */
    ASSERT(strcmp(r->path, link) != 0);
    ASSERT_GT(r->version, 0);
  } else {
    ASSERT_EQ(st, MG_ERR_BACKEND_UNAVAILABLE);
    ASSERT_CONTAINS(mg_last_error(), link);
    ASSERT_CONTAINS(mg_last_error(), "stub library");
  }
  lt_rmtree(home);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: loader_cuda missing|stub-explicit|stub-in-path");
  if (strcmp(argv[1], "missing") == 0) return mode_missing();
  if (strcmp(argv[1], "stub-explicit") == 0) return mode_stub_explicit();
  if (strcmp(argv[1], "stub-in-path") == 0) return mode_stub_in_path();
  FAIL("unknown mode %s", argv[1]);
}
