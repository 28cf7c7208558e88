/*
 * loader_explicit.c -- an explicit MGCOMM_NCCL_LIBRARY that cannot be used is an error that
 * says so, and no other copy is searched (not even an NCCL the dynamic linker would find).
 * One mode per CTest entry:
 *   missing   a path that does not exist
 *   notlib    a file that is not a shared library (text)
 *   wronglib  a real shared library that is not NCCL (the C math library)
 *   folder    a folder
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>

#include "loader_util.h"

/* What every mode expects once MGCOMM_NCCL_LIBRARY=path is set. */
static void check_refused(const char *path, const char *why) {
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg__load_nccl());
  const char *msg = mg_last_error();
  printf("message: %s\n", msg);
  ASSERT_CONTAINS(msg, "MGCOMM_NCCL_LIBRARY");
  ASSERT_CONTAINS(msg, path);
  ASSERT_CONTAINS(msg, why);
  ASSERT_CONTAINS(msg, "no other copy was searched");
  lt_dump(MG_LIB_NCCL);
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_NCCL);
  ASSERT_EQ(r->loaded, 0);
  ASSERT(r->path == NULL);
  ASSERT_EQ(r->nattempts, 1);
  ASSERT_STR_EQ(r->attempts[0].path, path);
  ASSERT_CONTAINS(r->attempts[0].outcome, why);
  ASSERT(mg__nccl.GetVersion == NULL && mg__nccl.AllReduce == NULL); /* no half-loaded table */
  /* The failure is kept: a second load says the same, and features are unavailable. */
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg__load_nccl());
  ASSERT_CONTAINS(mg_last_error(), path);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_AVG), 0);
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg__feature_require(MG_FEATURE_NCCL_SPLIT, "mg_comm_split"));
  ASSERT_CONTAINS(mg_last_error(), "mg_comm_split");
  ASSERT_CONTAINS(mg_last_error(), "not loaded");
  mg_library_info_t li;
  ASSERT_OK(mg_library_info(MG_LIB_NCCL, &li));
  ASSERT_EQ(li.loaded, 0);
  ASSERT(li.path == NULL);
  ASSERT_CONTAINS(li.error, path);
  ASSERT_EQ(li.version, 0);
  ASSERT_STR_EQ(li.version_string, "");
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: loader_explicit missing|notlib|wronglib|folder");
  char dir[PATH_MAX], path[PATH_MAX + 32];
  lt_tempdir(dir, sizeof dir);
  const char *why = NULL;
  if (strcmp(argv[1], "missing") == 0) {
    snprintf(path, sizeof path, "%s/does/not/exist/libnccl.so.2", dir);
    why = "No such file or directory";
  } else if (strcmp(argv[1], "notlib") == 0) {
    snprintf(path, sizeof path, "%s/libnccl.so.2", dir);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    for (int i = 0; i < 8; i++) fprintf(f, "this is a text file, not a shared library\n");
    ASSERT_EQ(fclose(f), 0);
    why = "invalid ELF header";
  } else if (strcmp(argv[1], "wronglib") == 0) {
    Dl_info di;
    volatile double x = 0.5;
    double (*fn)(double) = cos;
    ASSERT(dladdr((void *)fn, &di) != 0 && di.dli_fname != NULL);
    ASSERT(cos(x) > 0.0);
    snprintf(path, sizeof path, "%s", di.dli_fname);
    why = "required symbols (ncclCommGetAsyncError, "; /* the first of the table */
  } else if (strcmp(argv[1], "folder") == 0) {
    snprintf(path, sizeof path, "%s", dir);
    why = "cannot read file data";
  } else {
    FAIL("unknown mode %s", argv[1]);
  }
  setenv("MGCOMM_NCCL_LIBRARY", path, 1);
  check_refused(path, why);
  lt_rmtree(dir);
  return 0;
}
