/*
 * loader_fault.c -- the fault-injection seam of test builds (src/loader/fault.h), observed
 * through real call paths. One mode per CTest entry:
 *   api   rules set with mg__fault_set: the Nth ncclGetUniqueId call through the table fails
 *         with the chosen code and comes back through MG_NCCL_CHECK as a status and a message;
 *         count, wildcards, CUDA API names, internal points, clearing, bad rules
 *   env   MGCOMM_FAULT=ncclGetVersion:1:3:0 (set by CTest): the loader's own version call
 *         fails for every candidate, so NCCL is reported unusable, with the injected code in
 *         each outcome; malformed rules in the same variable are warned about and ignored
 */
#include "loader_util.h"

/* What a backend does: one checked call. */
static mg_status_t unique_id(mg__ncclUniqueId *id) {
  MG_NCCL_CHECK(NULL, GetUniqueId, id);
  return MG_OK;
}

static mg_status_t version(int *v) {
  MG_NCCL_CHECK(NULL, GetVersion, v);
  return MG_OK;
}

static int mode_api(void) {
  if (mg__load_nccl() != MG_OK) SKIP("no NCCL on this machine: %s", mg_last_error());
  mg__ncclUniqueId a, b, c;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  if (unique_id(&a) != MG_OK) SKIP("ncclGetUniqueId does not work here: %s", mg_last_error());

  /* The 2nd call from now fails with ncclSystemError, once; the library is not called. */
  ASSERT_OK(mg__fault_set("ncclGetUniqueId", 2, MG__ncclSystemError, 1));
  ASSERT_OK(unique_id(&a));
  memset(&b, 0x5a, sizeof b);
  ASSERT_STATUS(MG_ERR_BACKEND, unique_id(&b));
  ASSERT_CONTAINS(mg_last_error(), "ncclGetUniqueId failed: ncclSystemError (2)");
  for (size_t i = 0; i < sizeof b.internal; i++) ASSERT_EQ((unsigned char)b.internal[i], 0x5a);
  ASSERT_OK(unique_id(&c));
  ASSERT(memcmp(&a, &c, sizeof a) != 0); /* real ids again, and fresh ones */
  ASSERT_EQ(mg__fault_fired("ncclGetUniqueId"), 1);
  mg__fault_clear("ncclGetUniqueId");
  ASSERT_EQ(mg__fault_fired("ncclGetUniqueId"), 0);

  /* count 0: every call from the 1st on; the code maps to its status. */
  int v = 0;
  ASSERT_OK(mg__fault_set("ncclGetVersion", 1, MG__ncclInvalidUsage, 0));
  for (int i = 0; i < 3; i++) {
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, version(&v));
    ASSERT_CONTAINS(mg_last_error(), "ncclGetVersion failed: ncclInvalidUsage (5)");
  }
  ASSERT_EQ(mg__fault_fired("ncclGetVersion"), 3);
  mg__fault_clear(NULL);
  ASSERT_OK(version(&v)); /* the rule is gone: the library answers again */
  ASSERT_GT(v, 0);

  /* A prefix rule covers every NCCL symbol; an unknown code is still a clean error. */
  ASSERT_OK(mg__fault_set("nccl*", 1, 77, 1));
  ASSERT_STATUS(MG_ERR_BACKEND, version(&v));
  ASSERT_CONTAINS(mg_last_error(), "unknown ncclResult_t (77)");
  ASSERT_OK(version(&v));
  mg__fault_clear(NULL);

  /* Internal points share the registry: calls 3 and 4 fire. */
  ASSERT_OK(mg__fault_set("host.corrupt", 3, 42, 2));
  int got[6];
  for (int i = 0; i < 6; i++) got[i] = MG_FAULT_POINT("host.corrupt");
  int want[6] = {0, 0, 42, 42, 0, 0};
  for (int i = 0; i < 6; i++) ASSERT_EQ(got[i], want[i]);
  ASSERT_EQ(MG_FAULT_POINT("host.other"), 0);
  mg__fault_clear(NULL);

  /* A CUDA rule may use the API name of a versioned symbol (cuMemAlloc for cuMemAlloc_v2);
   * a name is not a prefix of another. */
  ASSERT_OK(mg__fault_set("cuMemAlloc", 1, 2, 0));
  ASSERT_EQ(mg__fault_point("cuMemAlloc_v2"), 2);
  ASSERT_EQ(mg__fault_point("cuMemAlloc"), 2);
  ASSERT_EQ(mg__fault_point("cuMemAllocHost_v2"), 0);
  ASSERT_EQ(mg__fault_point("cuMemAlloc_vx"), 0);
  mg__fault_clear(NULL);

  /* Bad rules are refused with a reason; the registry has a bound. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg__fault_set(NULL, 1, 1, 1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg__fault_set("", 1, 1, 1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg__fault_set("x", 0, 1, 1));
  ASSERT_CONTAINS(mg_last_error(), "nth >= 1");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg__fault_set("x", 1, 0, 1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg__fault_set("x", 1, 1, -1));
  for (int i = 0; i < MG__FAULT_MAX_RULES; i++) ASSERT_OK(mg__fault_set("host.fill", 1000, 1, 1));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg__fault_set("host.one_more", 1, 1, 1));
  mg__fault_clear("host.fill");
  ASSERT_OK(mg__fault_set("host.one_more", 1, 1, 1));
  mg__fault_clear(NULL);
  ASSERT_EQ(MG_FAULT_POINT("host.one_more"), 0);
  return 0;
}

static int mode_env(void) {
  /* Log to a file so that the warnings about the malformed rules can be read back. */
  char dir[PATH_MAX], log[PATH_MAX + 16];
  lt_tempdir(dir, sizeof dir);
  snprintf(log, sizeof log, "%s/log", dir);
  setenv("MGCOMM_DEBUG_FILE", log, 1);
  const char *rules = getenv("MGCOMM_FAULT");
  if (rules == NULL || strstr(rules, "ncclGetVersion:1:3:0") == NULL)
    FAIL("MGCOMM_FAULT must hold ncclGetVersion:1:3:0");

  mg_status_t st = mg__load_nccl();
  lt_dump(MG_LIB_NCCL);
  const mg__lib_report_t *r = mg__lib_report(MG_LIB_NCCL);
  int opened = 0;
  for (int i = 0; i < r->nattempts; i++)
    if (strstr(r->attempts[i].outcome, "opened, but ncclGetVersion returned ncclInternalError (3)"))
      opened++;
  if (opened == 0) {
    if (r->loaded) FAIL("NCCL loaded although every ncclGetVersion call was to fail");
    SKIP("no NCCL on this machine to inject into");
  }
  ASSERT_EQ(st, MG_ERR_BACKEND_UNAVAILABLE);
  ASSERT_EQ(r->loaded, 0);
  ASSERT_EQ(mg__fault_fired("ncclGetVersion"), opened);
  ASSERT(mg__nccl.GetVersion == NULL);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_AVG), 0);
  mg_library_info_t li;
  ASSERT_OK(mg_library_info(MG_LIB_NCCL, &li));
  ASSERT_CONTAINS(li.error, "ncclGetVersion returned ncclInternalError (3)");

  FILE *f = fopen(log, "r");
  ASSERT(f != NULL);
  char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  ASSERT_EQ(fclose(f), 0);
  printf("log:\n%s", text);
  ASSERT_CONTAINS(text, "MGCOMM_FAULT: rule 'not-a-rule' is not name:nth:code[:count]");
  ASSERT_CONTAINS(text, "MGCOMM_FAULT: rule 'cuInit:0:1' is not");
  lt_rmtree(dir);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: loader_fault api|env");
  if (strcmp(argv[1], "api") == 0) return mode_api();
  if (strcmp(argv[1], "env") == 0) return mode_env();
  FAIL("unknown mode %s", argv[1]);
}
