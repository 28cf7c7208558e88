/*
 * loader_nccl.c -- NCCL through the loader, on real libraries. One mode per CTest entry:
 *   default   the search as a user gets it: if NCCL is found, the record, tables and feature
 *             table must agree with the library (skips when no NCCL is installed)
 *   expect    MGCOMM_NCCL_LIBRARY names a library whose version is MG_TEST_EXPECT_VERSION:
 *             exact version, and every feature available exactly when contract 8 says so
 *             (skips when the file is absent)
 *   home      NCCL_HOME=<tmp> with <tmp>/lib/libnccl.so.2 -> MG_TEST_NCCL_FILE: the home folder
 *             is searched before the dynamic linker's default (skips when the file is absent)
 */
#include "loader_util.h"

/* Every check that holds for any loaded NCCL. */
static void check_loaded_nccl(void) {
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_NCCL);
  ASSERT_EQ(r->loaded, 1);
  ASSERT_STR_EQ(r->name, "libnccl.so.2");
  ASSERT_STR_EQ(r->error, "");
  ASSERT(lt_exists(r->path));
  ASSERT_GE(r->nattempts, 1);
  /* The search stops at the first library that works: only the last attempt is "loaded". */
  for (int i = 0; i < r->nattempts - 1; i++) ASSERT(strcmp(r->attempts[i].outcome, "loaded") != 0);
  ASSERT_STR_EQ(r->attempts[r->nattempts - 1].outcome, "loaded");
  /* Version: the string spells the normalised code. */
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", r->version / 10000, r->version / 100 % 100,
           r->version % 100);
  ASSERT_STR_EQ(r->version_string, want);
  ASSERT_GE(r->version, MG__NCCL_VERSION(2, 0, 0));
  ASSERT_EQ(mg__lib_version(MG_LIB_NCCL), r->version);
  /* A real call through the table answers what the loader recorded. */
  int v = 0;
  ASSERT_EQ(mg__nccl.GetVersion(&v), MG__ncclSuccess);
  ASSERT_EQ(v >= 10000 ? v : MG__NCCL_VERSION(v / 1000, v % 1000 / 100, v % 100), r->version);
  ASSERT(mg__nccl.GetErrorString(MG__ncclInvalidArgument) != NULL);
  /* Required members are never NULL once loaded. */
  ASSERT(mg__nccl.AllReduce != NULL && mg__nccl.GroupEnd != NULL && mg__nccl.CommAbort != NULL);
  /* The public view says the same. */
  mg_library_info_t li;
  ASSERT_OK(mg_library_info(MG_LIB_NCCL, &li));
  ASSERT_EQ(li.loaded, 1);
  ASSERT_STR_EQ(li.path, r->path);
  ASSERT_EQ(li.version, r->version);
  ASSERT_EQ(li.attempts, r->nattempts);
  ASSERT(li.plugin_dir == NULL);
  const char *path = NULL, *outcome = NULL;
  ASSERT_OK(mg_library_attempt(MG_LIB_NCCL, li.attempts - 1, &path, &outcome));
  ASSERT_STR_EQ(outcome, "loaded");
}

/* Contract 8: a feature is available iff the version is high enough (every real NCCL of that
 * version exports the symbols). Checks the public view and the internal one, and the table
 * members that belong to the features. */
static void check_features(int version) {
  for (int f = 0; f < MG_FEATURE_COUNT; f++) {
    const mg__feature_desc_t *fd = mg__feature_desc((mg_feature_t)f);
    ASSERT(fd != NULL);
    if (fd->lib != MG_LIB_NCCL) continue; /* the driver's features: loader_cuda.c */
    int want = version >= fd->min_version;
    mg_feature_info_t fi;
    ASSERT_OK(mg_feature_info((mg_feature_t)f, &fi));
    printf("feature %-24s >= %-7s want %d got %d\n", fi.name, fi.min_version_string, want,
           fi.available);
    ASSERT_EQ(fi.available, want);
    ASSERT_EQ(mg__feature((mg_feature_t)f), want);
    ASSERT_STR_EQ(fi.library, "nccl");
    /* The parameter API's names exist from 2.30.4, with another handle type: a version below
     * the feature's may have them. */
    for (int s = 0; s < 4 && fd->symbols[s] != NULL; s++)
      if (want || f != MG_FEATURE_NCCL_PARAMS)
        ASSERT_EQ(mg__lib_has(MG_LIB_NCCL, fd->symbols[s]), want);
    mg_status_t st = mg__feature_require((mg_feature_t)f, "the_caller");
    if (want) {
      ASSERT_OK(st);
    } else {
      ASSERT_EQ(st, MG_ERR_NOT_SUPPORTED);
      /* The message names the caller, the version that has it and the version loaded. */
      ASSERT_CONTAINS(mg_last_error(), "the_caller");
      ASSERT_CONTAINS(mg_last_error(), fd->min_version_string);
      ASSERT_CONTAINS(mg_last_error(), mg__lib_report(MG_LIB_NCCL)->version_string);
    }
  }
  /* The members of version-gated symbols follow the same rule. */
  ASSERT_EQ(mg__nccl.CommShrink != NULL, version >= MG__NCCL_VERSION(2, 27, 0));
  ASSERT_EQ(mg__nccl.AlltoAll != NULL, version >= MG__NCCL_VERSION(2, 28, 0));
  ASSERT_EQ(mg__nccl.CommRevoke != NULL, version >= MG__NCCL_VERSION(2, 28, 7));
  ASSERT_EQ(mg__nccl.CommSplit != NULL, version >= MG__NCCL_VERSION(2, 18, 0));
  ASSERT_EQ(mg__nccl.CommGrow != NULL, version >= MG__NCCL_VERSION(2, 29, 2));
  ASSERT_EQ(mg__nccl.CommSuspend != NULL, version >= MG__NCCL_VERSION(2, 29, 7));
}

static int mode_default(void) {
  if (mg__load_nccl() != MG_OK) SKIP("no NCCL on this machine: %s", mg_last_error());
  lt_dump(MG_LIB_NCCL);
  check_loaded_nccl();
  check_features(mg__lib_version(MG_LIB_NCCL));
  return 0;
}

static int mode_expect(void) {
  const char *file = getenv("MGCOMM_NCCL_LIBRARY");
  const char *want_s = getenv("MG_TEST_EXPECT_VERSION");
  if (want_s == NULL || file == NULL) FAIL("MGCOMM_NCCL_LIBRARY and MG_TEST_EXPECT_VERSION must be set");
  if (!lt_exists(file)) SKIP("%s is absent (see tests/unit/loader.cmake for how to get it)", file);
  int want = atoi(want_s);
  ASSERT_OK(mg__load_nccl());
  lt_dump(MG_LIB_NCCL);
  check_loaded_nccl();
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_NCCL);
  ASSERT_EQ(r->nattempts, 1); /* an explicit path is the only candidate */
  ASSERT_STR_EQ(r->attempts[0].path, file);
  ASSERT_EQ(r->version, want);
  check_features(want);
  /* FP8, shrink and revoke, spelled out. */
  int modern = want >= MG__NCCL_VERSION(2, 28, 7);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_FP8), want >= MG__NCCL_VERSION(2, 24, 0));
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_SHRINK), want >= MG__NCCL_VERSION(2, 27, 0));
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_REVOKE), modern);
  if (want < MG__NCCL_VERSION(2, 24, 0)) {
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__feature_require(MG_FEATURE_NCCL_FP8, "mg_all_reduce"));
    ASSERT_CONTAINS(mg_last_error(), "mg_all_reduce");
    ASSERT_CONTAINS(mg_last_error(), "NCCL >= 2.24");
  }
  return 0;
}

static int mode_home(void) {
  const char *file = getenv("MG_TEST_NCCL_FILE");
  if (file == NULL) FAIL("MG_TEST_NCCL_FILE must be set");
  if (!lt_exists(file)) SKIP("%s is absent (see tests/unit/loader.cmake for how to get it)", file);
  char home[PATH_MAX], lib[PATH_MAX], link[PATH_MAX];
  lt_tempdir(home, sizeof home);
  snprintf(lib, sizeof lib, "%s/lib", home);
  lt_mkdirs(lib);
  snprintf(link, sizeof link, "%s/libnccl.so.2", lib);
  lt_symlink(file, link);
  setenv("NCCL_HOME", home, 1);
  unsetenv("MGCOMM_NCCL_LIBRARY");
  ASSERT_OK(mg__load_nccl());
  lt_dump(MG_LIB_NCCL);
  check_loaded_nccl();
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_NCCL);
  ASSERT_EQ(r->nattempts, 1); /* <NCCL_HOME>/lib is the first folder searched */
  ASSERT_STR_EQ(r->attempts[0].path, link);
  ASSERT_STR_EQ(r->path, link);
  int v = 0;
  ASSERT_EQ(mg__nccl.GetVersion(&v), MG__ncclSuccess);
  ASSERT_EQ(r->version, v >= 10000 ? v : MG__NCCL_VERSION(v / 1000, v % 1000 / 100, v % 100));
  lt_rmtree(home);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: loader_nccl default|expect|home");
  if (strcmp(argv[1], "default") == 0) return mode_default();
  if (strcmp(argv[1], "expect") == 0) return mode_expect();
  if (strcmp(argv[1], "home") == 0) return mode_home();
  FAIL("unknown mode %s", argv[1]);
}
