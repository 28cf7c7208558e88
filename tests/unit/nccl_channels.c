/*
 * nccl_channels.c -- what a rank's NCCL communicators are sized by, on the simulated driver and
 * NCCL (tests/sim/, whose "channels" getter sums config->maxCTAs, else 64, over a rank's live
 * communicators, as NCCL sizes each communicator's device memory by its channels):
 *
 *   nccl_channels blocking     (MGCOMM_NCCL_BLOCKING=1) the lifecycle communicator has one
 *                              channel and the blocking one all 64: 65 per rank, not 128; a
 *                              split child the same; a child split in nonblocking mode (its own
 *                              config) runs operations on its lifecycle communicator, which
 *                              must then have every channel, not inherit its parent's one; a
 *                              config's nccl_max_ctas reaches the blocking communicator
 *   nccl_channels nonblocking  (MGCOMM_NCCL_BLOCKING=0) one communicator per rank, all 64
 *   nccl_channels share        (NCCL_COMM_SPLIT_SHARE_RESOURCES=1, blocking) every split shares
 *                              its parent's resources, so the lifecycle communicator keeps every
 *                              channel (NCCL caps a sharing child's at its parent's): 128
 * Every communicator is checked with an all_reduce too.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader.h"
#include "sim.h"
#include "test.h"

#define N 2
#define COUNT 64

static mgsim_control_fn sim;

static int channels(int r) { return sim("channels", r); }

/* An all_reduce of 1s on every rank of comms, each from its own thread; every element must
 * come back as N. */
typedef struct {
  mg_comm_t *comm;
  mg_status_t st;
  float got;
} ar_t;

static void *ar_main(void *arg) {
  ar_t *a = arg;
  float *buf = NULL, host[COUNT];
  mg_stream_t stream = NULL;
  for (int i = 0; i < COUNT; i++) host[i] = 1.0f;
  a->st = mg_mem_alloc(a->comm, sizeof host, (void **)&buf);
  if (a->st == MG_OK) a->st = mg_memcpy(a->comm, buf, host, sizeof host);
  if (a->st == MG_OK) a->st = mg_comm_stream(a->comm, &stream);
  if (a->st == MG_OK)
    a->st = mg_all_reduce(buf, buf, COUNT, MG_FLOAT32, MG_SUM, a->comm, stream);
  mg_request_t *req = NULL;
  if (a->st == MG_OK) a->st = mg_record(a->comm, stream, &req);
  if (a->st == MG_OK) a->st = mg_request_wait(req, 30.0);
  if (req != NULL) (void)mg_request_free(req);
  if (a->st == MG_OK) a->st = mg_memcpy(a->comm, host, buf, sizeof host);
  a->got = host[COUNT - 1];
  if (buf != NULL) (void)mg_mem_free(buf);
  return NULL;
}

static void check_all_reduce(mg_comm_t **comms) {
  pthread_t th[N];
  ar_t a[N];
  for (int r = 0; r < N; r++) {
    a[r] = (ar_t){comms[r], MG_OK, 0};
    ASSERT_EQ(pthread_create(&th[r], NULL, ar_main, &a[r]), 0);
  }
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(pthread_join(th[r], NULL), 0);
    ASSERT_OK(a[r].st);
    ASSERT_EQ((int)a[r].got, N);
  }
}

/* Every rank splits comms (color 0) with config, from its own thread. */
typedef struct {
  mg_comm_t *parent, *child;
  const mg_config_t *config;
  mg_status_t st;
} split_t;

static void *split_main(void *arg) {
  split_t *s = arg;
  s->st = mg_comm_split(s->parent, 0, 0, s->config, &s->child);
  return NULL;
}

static void split(mg_comm_t **parents, const mg_config_t *config, mg_comm_t **children) {
  pthread_t th[N];
  split_t s[N];
  for (int r = 0; r < N; r++) {
    s[r] = (split_t){parents[r], NULL, config, MG_OK};
    ASSERT_EQ(pthread_create(&th[r], NULL, split_main, &s[r]), 0);
  }
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(pthread_join(th[r], NULL), 0);
    ASSERT_OK(s[r].st);
    children[r] = s[r].child;
  }
}

static void destroy(mg_comm_t **comms) {
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

/* Channels every rank's communicators add up to, after `what`. */
static void expect(int want, const char *what) {
  for (int r = 0; r < N; r++) {
    const int got = channels(r);
    if (got != want) FAIL("%s: rank %d's communicators have %d channels, expected %d", what, r, got, want);
  }
  printf("  %s: %d channels per rank\n", what, want);
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: %s blocking|nonblocking|share", argv[0]);
  int n = 0;
  if (mg_device_count(&n) != MG_OK || n < N) SKIP("the simulated driver is not loaded");
  if (mg__load_nccl() != MG_OK) SKIP("the simulated NCCL is not loaded: %s", mg_last_error());
  sim = mgsim_control_find(getenv("MGCOMM_NCCL_LIBRARY"));
  if (sim == NULL) FAIL("the simulator's control entry point is missing");
  const int full = 64; /* the simulator's channels per communicator by default (sim.h) */
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  mg_comm_t *world[N], *child[N];
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, world));
  check_all_reduce(world);

  if (strcmp(argv[1], "nonblocking") == 0) {
    expect(full, "init_all, nonblocking");
    split(world, NULL, child);
    check_all_reduce(child);
    expect(2 * full, "and a split child");
    destroy(child);
  } else if (strcmp(argv[1], "blocking") == 0) {
    expect(1 + full, "init_all, blocking");
    split(world, NULL, child);
    check_all_reduce(child);
    expect(2 * (1 + full), "and a split child (config inherited)");
    destroy(child);
    mg_config_t nb = cfg;
    nb.nccl_blocking = 0;
    split(world, &nb, child);
    check_all_reduce(child);
    expect(1 + full + full, "and a nonblocking child of the blocking parent");
    destroy(child);
    mg_config_t small = cfg;
    small.nccl_max_ctas = 8;
    split(world, &small, child);
    check_all_reduce(child);
    expect(1 + full + 1 + 8, "and a child with nccl_max_ctas = 8");
    destroy(child);
  } else if (strcmp(argv[1], "share") == 0) {
    expect(2 * full, "init_all, blocking, NCCL_COMM_SPLIT_SHARE_RESOURCES=1");
  } else {
    FAIL("unknown mode %s", argv[1]);
  }
  destroy(world);
  for (int r = 0; r < N; r++) ASSERT_EQ(sim("comms", r), 0);
  printf("nccl_channels %s: ok\n", argv[1]);
  return 0;
}
