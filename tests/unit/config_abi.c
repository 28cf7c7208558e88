/*
 * config_abi.c -- a program built against an older mgcomm.h runs with this library: each older
 * layout of mg_config_t is accepted, its fields take effect and the fields appended after it get
 * their defaults; a newer or inconsistent size and version are refused with a message.
 *
 *   config_abi comm    mg_comm_init_all, mg_comm_init_rank and mg_comm_split (host backend)
 *   config_abi world   mg_world_create
 *   config_abi env     mg_comm_init_env, one rank serving its own store
 *
 * The old layouts are declared here as mgcomm.h declared them. Each lies at the start of a buffer
 * filled with 0x5A, so a library that read past the caller's version would find garbage
 * (trace_entries 0x5A5A5A5A, nccl_blocking likewise) instead of the defaults.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"
#include "world/world.h"

/* MG_CONFIG_VERSION 1. */
typedef struct {
  size_t size;
  unsigned int version;
  mg_backend_t backend;
  double timeout_s;
  int device;
} cfg_v1_t;
#define CFG_V1_INIT {sizeof(cfg_v1_t), 1, MG_BACKEND_AUTO, 0.0, MG_UNDEF_INT}

/* MG_CONFIG_VERSION 2: NCCL's ncclConfig_t fields. */
typedef struct {
  size_t size;
  unsigned int version;
  mg_backend_t backend;
  double timeout_s;
  int device;
  int nccl_cga_cluster_size, nccl_min_ctas, nccl_max_ctas;
  const char *nccl_net_name;
  int nccl_split_share, nccl_traffic_class;
  const char *nccl_comm_name;
  int nccl_collnet_enable, nccl_cta_policy, nccl_shrink_share, nccl_nvls_ctas,
      nccl_nchannels_per_net_peer, nccl_nvlink_centric_sched;
} cfg_v2_t;
#define CFG_V2_INIT                                                                            \
  {sizeof(cfg_v2_t), 2, MG_BACKEND_AUTO, 0.0, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT,        \
   MG_UNDEF_INT, NULL, MG_UNDEF_INT, MG_UNDEF_INT, NULL, MG_UNDEF_INT, MG_UNDEF_INT,           \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT}

/* MG_CONFIG_VERSION 3: requests, the world, the flight recorder. */
typedef struct {
  size_t size;
  unsigned int version;
  mg_backend_t backend;
  double timeout_s;
  int device;
  int nccl_cga_cluster_size, nccl_min_ctas, nccl_max_ctas;
  const char *nccl_net_name;
  int nccl_split_share, nccl_traffic_class;
  const char *nccl_comm_name;
  int nccl_collnet_enable, nccl_cta_policy, nccl_shrink_share, nccl_nvls_ctas,
      nccl_nchannels_per_net_peer, nccl_nvlink_centric_sched;
  int trace_entries;
  mg_completion_t completion;
  double poll_interval_s;
  mg_on_timeout_t on_timeout;
} cfg_v3_t;
#define CFG_V3_INIT                                                                            \
  {sizeof(cfg_v3_t), 3, MG_BACKEND_AUTO, 0.0, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT,        \
   MG_UNDEF_INT, NULL, MG_UNDEF_INT, MG_UNDEF_INT, NULL, MG_UNDEF_INT, MG_UNDEF_INT,           \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, 0, MG_COMPLETION_DEFAULT, 0.0,      \
   MG_ON_TIMEOUT_DEFAULT}

/* What a program built against a newer mgcomm.h would pass: one more field, one more version. */
typedef struct {
  mg_config_t cur;
  int newer_field;
} cfg_next_t;

/* Room for any layout, older or newer, with garbage after it. */
typedef union {
  cfg_v1_t v1;
  cfg_v2_t v2;
  cfg_v3_t v3;
  mg_config_t cur;
  cfg_next_t next;
  unsigned char raw[sizeof(cfg_next_t) + 64];
} cfg_buf_t;

static void garbage(cfg_buf_t *b) { memset(b->raw, 0x5A, sizeof b->raw); }

/* Copies an old layout's fields into a garbage-filled buffer field by field (a struct assignment
 * may copy the initialiser's zero padding): the padding stays 0x5A too. */
#define PLACE(buf, member, init)                                                           \
  do {                                                                                     \
    garbage(buf);                                                                          \
    __typeof__((buf)->member) mg_t_ = init;                                                \
    memcpy(&(buf)->member, &mg_t_, sizeof mg_t_);                                          \
  } while (0)

/* v3's bytes after on_timeout are padding (where version 4 put nccl_blocking on LP64). */
static void v3_dirty_padding(cfg_buf_t *b) {
  const size_t end = offsetof(cfg_v3_t, on_timeout) + sizeof(mg_on_timeout_t);
  memset(b->raw + end, 0x5A, sizeof(cfg_v3_t) - end);
}

/* The fields that no older layout has hold their defaults, and the copy is in the current
 * layout. */
static void check_newer_defaults(const mg_config_t *c, unsigned from_version) {
  ASSERT_EQ(c->size, sizeof(mg_config_t));
  ASSERT_EQ(c->version, MG_CONFIG_VERSION);
  if (from_version < 2) {
    ASSERT_EQ(c->nccl_min_ctas, MG_UNDEF_INT);
    ASSERT(c->nccl_net_name == NULL);
    ASSERT(c->nccl_comm_name == NULL);
    ASSERT_EQ(c->nccl_nvlink_centric_sched, MG_UNDEF_INT);
  }
  if (from_version < 3) {
    ASSERT_EQ(c->trace_entries, 0);
    ASSERT_EQ(c->completion, MG_COMPLETION_DEFAULT);
    ASSERT(c->poll_interval_s == 0.0);
    ASSERT_EQ(c->on_timeout, MG_ON_TIMEOUT_DEFAULT);
  }
  if (from_version < 4) ASSERT_EQ(c->nccl_blocking, MG_UNDEF_INT);
  if (from_version < 6) ASSERT_EQ(c->all_reduce_algo, MG_ALGO_DEFAULT);
}

/* Every way of not being a layout of this library: (size, version) and the expected word. */
typedef struct {
  size_t size;
  unsigned version;
  const char *why;
} bad_t;
static const bad_t bads[] = {
    {sizeof(cfg_next_t), MG_CONFIG_VERSION + 1, "larger"}, /* a newer mgcomm.h */
    {sizeof(mg_config_t) + 8, MG_CONFIG_VERSION, "larger"},
    {sizeof(mg_config_t), 0, "version 0"},
    {sizeof(mg_config_t), MG_CONFIG_VERSION + 1, "newer"},
    {sizeof(cfg_v1_t), 3, "layout has size"},
    {sizeof(cfg_v2_t), 1, "layout has size"},
    {sizeof(cfg_v2_t), MG_CONFIG_VERSION, "layout has size"},
    {0, 1, "layout has size"},
};

static void place_bad(cfg_buf_t *b, const bad_t *bad) {
  garbage(b);
  mg_config_t c = MG_CONFIG_INIT;
  c.backend = MG_BACKEND_HOST;
  b->cur = c;
  b->cur.size = bad->size;
  b->cur.version = bad->version;
}

/* The refusal names the function, the size and version given, and what is accepted. */
static void check_refusal(const char *fn, const bad_t *bad) {
  char want[96];
  const char *msg = mg_last_error();
  ASSERT_CONTAINS(msg, fn);
  snprintf(want, sizeof want, "size %zu, version %u", bad->size, bad->version);
  ASSERT_CONTAINS(msg, want);
  ASSERT_CONTAINS(msg, bad->why);
  snprintf(want, sizeof want, "1 (size %zu)", sizeof(cfg_v1_t));
  ASSERT_CONTAINS(msg, want);
  snprintf(want, sizeof want, "2 (size %zu)", sizeof(cfg_v2_t));
  ASSERT_CONTAINS(msg, want);
  snprintf(want, sizeof want, "3 (size %zu)", sizeof(cfg_v3_t));
  ASSERT_CONTAINS(msg, want);
  snprintf(want, sizeof want, "%u (size %zu)", MG_CONFIG_VERSION, sizeof(mg_config_t));
  ASSERT_CONTAINS(msg, want);
}

static void destroy_all(mg_comm_t **comms, int n) {
  for (int r = 0; r < n; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

/* ---- comm ---------------------------------------------------------------------------------- */

static void test_comm(void) {
  cfg_buf_t b;
  mg_comm_t *comms[2];

  /* Version 1: timeout_s takes effect, observably (a receive nobody answers times out). */
  PLACE(&b, v1, CFG_V1_INIT);
  b.v1.backend = MG_BACKEND_HOST;
  b.v1.timeout_s = 0.3;
  ASSERT_OK(mg_comm_init_all((const mg_config_t *)&b.v1, 2, NULL, comms));
  check_newer_defaults(&comms[0]->config, 1);
  ASSERT(comms[0]->config.timeout_s == 0.3);
  ASSERT(comms[1]->timeout_s == 0.3);
  int32_t x = 0;
  double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_recv(&x, 1, MG_INT32, 1, comms[0], NULL));
  double took = mg__now() - t0;
  ASSERT(took >= 0.25 && took < 5.0);
  destroy_all(comms, 2);

  /* Version 2: its NCCL fields are kept (the host backend ignores them). */
  static const char name[] = "abi";
  PLACE(&b, v2, CFG_V2_INIT);
  b.v2.backend = MG_BACKEND_HOST;
  b.v2.nccl_min_ctas = 4;
  b.v2.nccl_comm_name = name;
  b.v2.nccl_nvlink_centric_sched = 1;
  ASSERT_OK(mg_comm_init_all((const mg_config_t *)&b.v2, 2, NULL, comms));
  check_newer_defaults(&comms[1]->config, 2);
  ASSERT_EQ(comms[1]->config.nccl_min_ctas, 4);
  ASSERT(comms[1]->config.nccl_comm_name == name);
  ASSERT_EQ(comms[1]->config.nccl_nvlink_centric_sched, 1);
  ASSERT_EQ(comms[1]->config.nccl_max_ctas, MG_UNDEF_INT);
  destroy_all(comms, 2);

  /* Version 3, with garbage in its padding where version 4 has nccl_blocking. */
  PLACE(&b, v3, CFG_V3_INIT);
  b.v3.backend = MG_BACKEND_HOST;
  b.v3.trace_entries = -1;
  b.v3.completion = MG_COMPLETION_POLL;
  b.v3.poll_interval_s = 0.002;
  b.v3.on_timeout = MG_ON_TIMEOUT_REPORT;
  v3_dirty_padding(&b);
  ASSERT_OK(mg_comm_init_all((const mg_config_t *)&b.v3, 2, NULL, comms));
  check_newer_defaults(&comms[0]->config, 3);
  ASSERT_EQ(comms[0]->config.trace_entries, -1);
  ASSERT_EQ(comms[0]->completion, MG_COMPLETION_POLL);
  ASSERT(comms[0]->poll_interval == 0.002);
  ASSERT_EQ(comms[0]->on_timeout, MG_ON_TIMEOUT_REPORT);
  destroy_all(comms, 2);

  /* mg_comm_init_rank (one rank) and a split given an older layout. */
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  PLACE(&b, v1, CFG_V1_INIT);
  b.v1.backend = MG_BACKEND_HOST;
  b.v1.timeout_s = 9;
  mg_comm_t *one, *child;
  ASSERT_OK(mg_comm_init_rank((const mg_config_t *)&b.v1, 1, &id, 0, &one));
  check_newer_defaults(&one->config, 1);
  ASSERT(one->timeout_s == 9);
  PLACE(&b, v2, CFG_V2_INIT);
  b.v2.backend = MG_BACKEND_HOST;
  b.v2.timeout_s = 11;
  ASSERT_OK(mg_comm_split(one, 0, 0, (const mg_config_t *)&b.v2, &child));
  check_newer_defaults(&child->config, 2);
  ASSERT(child->timeout_s == 11);
  ASSERT_OK(mg_comm_destroy(child));

  /* The current layout still works; field values are checked whatever the layout. */
  mg_config_t cur = MG_CONFIG_INIT;
  cur.backend = MG_BACKEND_HOST;
  cur.nccl_blocking = 0;
  ASSERT_OK(mg_comm_init_all(&cur, 1, NULL, comms));
  ASSERT_EQ(comms[0]->config.nccl_blocking, 0);
  destroy_all(comms, 1);
  PLACE(&b, v1, CFG_V1_INIT);
  b.v1.backend = MG_BACKEND_HOST;
  b.v1.timeout_s = -1;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_all((const mg_config_t *)&b.v1, 1, NULL,
                                                          comms));
  ASSERT_CONTAINS(mg_last_error(), "timeout_s");
  PLACE(&b, v3, CFG_V3_INIT);
  b.v3.trace_entries = -2;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_all((const mg_config_t *)&b.v3, 1, NULL,
                                                          comms));
  ASSERT_CONTAINS(mg_last_error(), "trace_entries");

  /* Refusals, on every entry point of this file. */
  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    mg_comm_t *untouched = (mg_comm_t *)&b;
    place_bad(&b, &bads[i]);
    comms[0] = untouched;
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_init_all(&b.cur, 2, NULL, comms));
    check_refusal("mg_comm_init_all", &bads[i]);
    ASSERT(comms[0] == untouched);
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_init_rank(&b.cur, 1, &id, 0, comms));
    check_refusal("mg_comm_init_rank", &bads[i]);
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_split(one, 0, 0, &b.cur, comms));
    check_refusal("mg_comm_split", &bads[i]);
    ASSERT(comms[0] == untouched);
  }
  ASSERT_OK(mg_comm_destroy(one));
}

/* ---- world --------------------------------------------------------------------------------- */

static void test_world(void) {
  cfg_buf_t b;
  mg_world_t *w;
  PLACE(&b, v1, CFG_V1_INIT);
  b.v1.backend = MG_BACKEND_HOST;
  b.v1.timeout_s = 7;
  ASSERT_OK(mg_world_create((const mg_config_t *)&b.v1, 2, NULL, &w));
  check_newer_defaults(&w->config, 1);
  ASSERT(w->timeout_s == 7);
  ASSERT_EQ(w->on_timeout, MG_ON_TIMEOUT_ABORT); /* MGCOMM_ON_TIMEOUT's default */
  int32_t in[2] = {1, 2}, out[2] = {0, 0};
  const void *send[2] = {&in[0], &in[1]};
  void *recv[2] = {&out[0], &out[1]};
  mg_request_t *req = NULL;
  ASSERT_OK(mg_world_all_reduce(w, send, recv, 1, MG_INT32, MG_SUM, &req));
  ASSERT_OK(mg_request_wait(req, 0));
  ASSERT_OK(mg_request_free(req));
  ASSERT_EQ(out[0], 3);
  ASSERT_EQ(out[1], 3);
  ASSERT_OK(mg_world_destroy(w));

  PLACE(&b, v3, CFG_V3_INIT);
  b.v3.backend = MG_BACKEND_HOST;
  b.v3.on_timeout = MG_ON_TIMEOUT_REPORT;
  v3_dirty_padding(&b);
  ASSERT_OK(mg_world_create((const mg_config_t *)&b.v3, 1, NULL, &w));
  check_newer_defaults(&w->config, 3);
  ASSERT_EQ(w->on_timeout, MG_ON_TIMEOUT_REPORT);
  ASSERT_OK(mg_world_destroy(w));

  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    place_bad(&b, &bads[i]);
    w = (mg_world_t *)&b;
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_create(&b.cur, 2, NULL, &w));
    check_refusal("mg_world_create", &bads[i]);
    ASSERT(w == (mg_world_t *)&b);
  }
}

/* ---- env ----------------------------------------------------------------------------------- */

/* A TCP port of 127.0.0.1 that was free a moment ago. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

static void test_env(void) {
  /* Before any call of the library, which reads its variables once. */
  char store[64];
  snprintf(store, sizeof store, "127.0.0.1:%d", free_port());
  setenv("MGCOMM_STORE", store, 1);
  setenv("MGCOMM_RANK", "0", 1);
  setenv("MGCOMM_WORLD_SIZE", "1", 1);
  setenv("MGCOMM_JOB_TOKEN", "config_abi", 1);

  cfg_buf_t b;
  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    place_bad(&b, &bads[i]);
    mg_comm_t *comm = (mg_comm_t *)&b;
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_init_env(&b.cur, &comm));
    check_refusal("mg_comm_init_env", &bads[i]);
    ASSERT(comm == (mg_comm_t *)&b);
  }
  PLACE(&b, v2, CFG_V2_INIT);
  b.v2.backend = MG_BACKEND_HOST;
  b.v2.timeout_s = 20;
  b.v2.nccl_max_ctas = 8;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_env((const mg_config_t *)&b.v2, &comm));
  check_newer_defaults(&comm->config, 2);
  ASSERT(comm->timeout_s == 20);
  ASSERT_EQ(comm->config.nccl_max_ctas, 8);
  ASSERT_OK(mg_comm_destroy(comm));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: config_abi comm|world|env\n");
    return 2;
  }
  if (strcmp(argv[1], "comm") == 0)
    test_comm();
  else if (strcmp(argv[1], "world") == 0)
    test_world();
  else if (strcmp(argv[1], "env") == 0)
    test_env();
  else
    FAIL("unknown mode %s", argv[1]);
  printf("config_abi %s: ok\n", argv[1]);
  return 0;
}
