/*
 * test_nccl29_gating.c -- NCCL 2.29 to 2.32's host API, gated by the version of the NCCL that
 * is really loaded (MGCOMM_NCCL_LIBRARY: a wheel's libnccl.so.2; tests/unit/nccl29.cmake),
 * where no GPU is needed:
 *  - NCCL's parameter API (2.30.7): mg_nccl_params lists NCCL's parameters and mg_nccl_param_get
 *    reads one that the environment set; with an older NCCL (2.30.4 exports the same names with
 *    another handle type) both are MG_ERR_NOT_SUPPORTED naming 2.30.7 and the loaded version;
 *  - the features of suspend, grow, properties, window pointers and signals against the
 *    version; ncclTimeout (2.30.3) as MG_ERR_TIMED_OUT;
 *  - a config field the loaded NCCL lacks is refused naming the version that has it.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/nccl/nccl.h"
#include "test.h"

typedef struct {
  int count;
  int saw_subsys; /* NCCL_DEBUG_SUBSYS came with the value the test set */
} walk_t;

static int on_param(const char *key, const char *value, void *arg) {
  walk_t *w = arg;
  ASSERT(key != NULL && value != NULL);
  ASSERT(strncmp(key, "NCCL_", 5) == 0);
  if (strcmp(key, "NCCL_DEBUG_SUBSYS") == 0 && strcmp(value, "COLL,P2P") == 0) w->saw_subsys = 1;
  w->count++;
  return 0;
}

static int stop_first(const char *key, const char *value, void *arg) {
  (void)key;
  (void)value;
  ++*(int *)arg;
  return 1;
}

static void check_params(int version) {
  char value[64];
  walk_t w = {0, 0};
  if (version < MG__NCCL_VERSION(2, 30, 7)) {
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_nccl_param_get("NCCL_DEBUG_SUBSYS", value, sizeof value));
    ASSERT_CONTAINS(mg_last_error(), "mg_nccl_param_get");
    ASSERT_CONTAINS(mg_last_error(), "2.30.7");
    ASSERT_CONTAINS(mg_last_error(), mg__lib_report(MG_LIB_NCCL)->version_string);
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_nccl_params(on_param, &w));
    ASSERT_EQ(w.count, 0);
    return;
  }
  ASSERT_OK(mg_nccl_params(on_param, &w));
  printf("NCCL %d lists %d parameters\n", version, w.count);
  ASSERT_GT(w.count, 0);
  ASSERT_EQ(w.saw_subsys, 1);
  int calls = 0;
  ASSERT_OK(mg_nccl_params(stop_first, &calls));
  ASSERT_EQ(calls, 1); /* a non-zero return stops the walk */
  ASSERT_OK(mg_nccl_param_get("NCCL_DEBUG_SUBSYS", value, sizeof value));
  ASSERT_STR_EQ(value, "COLL,P2P");
  char small[5];
  ASSERT_OK(mg_nccl_param_get("NCCL_DEBUG_SUBSYS", small, sizeof small));
  ASSERT_STR_EQ(small, "COLL"); /* truncated, terminated */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_nccl_param_get("NCCL_NO_SUCH_THING", value, sizeof value));
  ASSERT_CONTAINS(mg_last_error(), "NCCL_NO_SUCH_THING");
}

static void check_args(void) {
  char value[8];
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_nccl_param_get(NULL, value, sizeof value));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_nccl_param_get("NCCL_PROTO", NULL, 8));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_nccl_param_get("NCCL_PROTO", value, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_nccl_params(NULL, NULL));
}

/* Each config field of 2.29 to 2.32: accepted from its version on, refused before it, naming
 * that version. */
static void check_config(int version) {
  static const struct {
    size_t off;
    const char *name;
    int since;
    const char *since_s;
  } f[] = {
      {offsetof(mg_config_t, nccl_graph_usage_mode), "nccl_graph_usage_mode", 22902, "2.29.2"},
      {offsetof(mg_config_t, nccl_num_rma_ctx), "nccl_num_rma_ctx", 22902, "2.29.2"},
      {offsetof(mg_config_t, nccl_max_p2p_peers), "nccl_max_p2p_peers", 23003, "2.30.3"},
      {offsetof(mg_config_t, nccl_graph_stream_ordering), "nccl_graph_stream_ordering", 23007,
       "2.30.7"},
      {offsetof(mg_config_t, nccl_launch_order_implicit), "nccl_launch_order_implicit", 23100,
       "2.31"},
      {offsetof(mg_config_t, nccl_num_rma_sig), "nccl_num_rma_sig", 23100, "2.31"},
      {offsetof(mg_config_t, nccl_rma_eager_init), "nccl_rma_eager_init", 23100, "2.31"},
      {offsetof(mg_config_t, nccl_host_cft_mode), "nccl_host_cft_mode", 23100, "2.31"},
      {offsetof(mg_config_t, nccl_nvls_host_mode), "nccl_nvls_host_mode", 23200, "2.32"},
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    mg_config_t c = MG_CONFIG_INIT;
    int one = 1;
    memcpy((char *)&c + f[i].off, &one, sizeof one);
    mg__ncclConfig_t out;
    mg_status_t st = mg__nccl_config_build(&c, version, &out, "the_init");
    if (version >= f[i].since) {
      ASSERT_OK(st);
      ASSERT_EQ(out.version, (unsigned)(version < MG__NCCL_CONFIG_LAYOUT_VERSION
                                            ? version : MG__NCCL_CONFIG_LAYOUT_VERSION));
    } else {
      ASSERT_EQ(st, MG_ERR_NOT_SUPPORTED);
      ASSERT_CONTAINS(mg_last_error(), f[i].name);
      char want[32];
      snprintf(want, sizeof want, "NCCL >= %s;", f[i].since_s);
      ASSERT_CONTAINS(mg_last_error(), want);
    }
  }
}

int main(void) {
  const char *file = getenv("MGCOMM_NCCL_LIBRARY");
  const char *want_s = getenv("MG_TEST_EXPECT_VERSION");
  if (file == NULL || want_s == NULL) FAIL("MGCOMM_NCCL_LIBRARY and MG_TEST_EXPECT_VERSION must be set");
  if (access(file, R_OK) != 0)
    SKIP("%s is absent (tests/unit/nccl29.cmake says how to get it)", file);
  /* NCCL reads its parameters from the environment when it first needs them. */
  setenv("NCCL_DEBUG_SUBSYS", "COLL,P2P", 1);
  check_args();
  const int version = atoi(want_s);
  ASSERT_OK(mg__load_nccl());
  ASSERT_EQ(mg__lib_version(MG_LIB_NCCL), version);
  check_params(version);
  check_config(version);
  /* The features of this issue, spelled out. */
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_GROW), version >= 22902);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_PROPERTIES), version >= 22902);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_WINDOW_PTRS), version >= 22902);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_SIGNALS), version >= 22902);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_SUSPEND), version >= 22907);
  ASSERT_EQ(mg__feature(MG_FEATURE_NCCL_PARAMS), version >= 23007);
  if (version < 22907) {
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__feature_require(MG_FEATURE_NCCL_SUSPEND, "mg_comm_suspend"));
    ASSERT_CONTAINS(mg_last_error(), "needs NCCL >= 2.29.7");
  }
  /* ncclTimeout, and the name NCCL's own table gives it. */
  ASSERT_EQ(mg__nccl_status(MG__ncclTimeout), MG_ERR_TIMED_OUT);
  ASSERT_STR_EQ(mg__nccl_result_name(MG__ncclTimeout), "ncclTimeout");
  if (version >= 23003) ASSERT_CONTAINS(mg__nccl.GetErrorString(MG__ncclTimeout), "imeout");
  printf("NCCL %d: gating ok\n", version);
  return 0;
}
