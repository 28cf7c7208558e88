/*
 * loader_nvshmem.c -- NVSHMEM found in a Python wheel layout: $VIRTUAL_ENV/lib/python3.X/
 * site-packages/nvidia/nvshmem/lib, built in a temporary folder from links to the files of an
 * unpacked nvidia-nvshmem wheel (MG_TEST_NVSHMEM_DIR; skip when absent). Checks the glob
 * search, the version read from the library itself, the bootstrap plugin folder, the exported
 * host API (nvshmemx_hostlib_init_attr, not nvshmem_init) and one real call.
 */
#include <dirent.h>

#include "loader_util.h"

int main(void) {
  const char *src = getenv("MG_TEST_NVSHMEM_DIR");
  if (src == NULL) FAIL("MG_TEST_NVSHMEM_DIR must be set");
  char host[PATH_MAX];
  snprintf(host, sizeof host, "%s/libnvshmem_host.so.3", src);
  if (!lt_exists(host)) SKIP("%s is absent (see tests/unit/loader.cmake for how to get it)", host);

  char venv[PATH_MAX], lib[PATH_MAX + 64];
  lt_tempdir(venv, sizeof venv);
  snprintf(lib, sizeof lib, "%s/lib/python3.99/site-packages/nvidia/nvshmem/lib", venv);
  lt_mkdirs(lib);
  DIR *d = opendir(src);
  ASSERT(d != NULL);
  for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
    if (strstr(e->d_name, ".so") == NULL) continue;
    char target[PATH_MAX + 64], link[PATH_MAX + 128];
    snprintf(target, sizeof target, "%s/%s", src, e->d_name);
    snprintf(link, sizeof link, "%s/%s", lib, e->d_name);
    lt_symlink(target, link);
  }
  ASSERT_EQ(closedir(d), 0);

  setenv("VIRTUAL_ENV", venv, 1);
  unsetenv("NVSHMEM_HOME");
  unsetenv("MGCOMM_NVSHMEM_LIBRARY");
  char want_path[PATH_MAX + 128];
  snprintf(want_path, sizeof want_path, "%s/libnvshmem_host.so.3", lib);

  mg_status_t st = mg__load_nvshmem();
  lt_dump(MG_LIB_NVSHMEM);
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_NVSHMEM);
  if (st != MG_OK && lt_attempt_index(MG_LIB_NVSHMEM, want_path) < 0)
    FAIL("the wheel layout was not searched: %s", mg_last_error());
  ASSERT_OK(st);
  if (strcmp(r->path, want_path) != 0)
    SKIP("another NVSHMEM is found first on this machine (%s)", r->path);
  ASSERT_STR_EQ(r->attempts[r->nattempts - 1].outcome, "loaded");
  ASSERT_STR_EQ(r->plugin_dir, lib);
  const char *want_v = getenv("MG_TEST_NVSHMEM_VERSION");
  if (want_v != NULL) {
    ASSERT_EQ(r->version, atoi(want_v));
    char s[32];
    snprintf(s, sizeof s, "%d.%d.%d", r->version / 10000, r->version / 100 % 100, r->version % 100);
    ASSERT_STR_EQ(r->version_string, s);
  }
  /* The host library's real entry points, and a call that is valid before initialisation. */
  ASSERT(mg__nvshmem.hostlib_init_attr != NULL && mg__nvshmem.hostlib_finalize != NULL);
  ASSERT(mg__nvshmem.team_split_strided != NULL && mg__nvshmem.putmem_on_stream != NULL);
  ASSERT_EQ(mg__nvshmem.init_status(), 0); /* NVSHMEM_STATUS_NOT_INITIALIZED */
  int major = 0, minor = 0;
  mg__nvshmem.info_get_version(&major, &minor); /* the OpenSHMEM spec version, not the release */
  ASSERT_GE(major, 1);

  mg_library_info_t li;
  ASSERT_OK(mg_library_info(MG_LIB_NVSHMEM, &li));
  ASSERT_STR_EQ(li.plugin_dir, lib);
  ASSERT_STR_EQ(li.path, want_path);

  lt_rmtree(venv);
  return 0;
}
