/*
 * nccl_peer_stop.c -- a rank of the NCCL backend learns at once that a peer rank of the same
 * process stopped (run on the simulated driver and NCCL, tests/sim/): NCCL's abort and revoke
 * are local, so without it the rank's operations with that peer wait until its own deadline.
 *
 *   nccl_peer_stop abort       rank 0 posts an all_reduce that rank 1 never joins, and waits for
 *                              it (a request, the default completion); rank 1's communicator is
 *                              aborted: rank 0's request fails with MG_ERR_REMOTE naming rank 1
 *                              within 2 s (the deadline is 10 s), its communicator reports the
 *                              same and is in the error state
 *   nccl_peer_stop revoke      the same with mg_comm_revoke of rank 1 ("revoked")
 *   nccl_peer_stop destroyed   rank 1 is destroyed without finalize (an abort) before rank 0
 *                              waits: rank 0 still learns it
 *   nccl_peer_stop sync        the sync completion strategy: the wait itself fails within 0.5 s
 *   nccl_peer_stop finalized   no false alarm: both ranks finalize and rank 1 is destroyed; rank
 *                              0's communicator reports no error
 *   nccl_peer_stop late        rank 1 is aborted first; then rank 0 posts an all_reduce: the call
 *                              itself fails with MG_ERR_REMOTE naming rank 1 and the operation,
 *                              nothing is enqueued (NCCL would wait for rank 1 for ever, or reach
 *                              buffers its abort freed), and the communicator is in the error state
 * Nothing is left in the simulator at the end.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "loader/loader.h"
#include "sim.h"
#include "test.h"

#define COUNT 4
#define DEADLINE 10.0

static mg_comm_t *comms[2];
static void *buf[2];
static mgsim_control_fn sim;

static void make(mg_completion_t completion) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = DEADLINE;
  cfg.completion = completion;
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_mem_alloc(comms[r], COUNT * sizeof(float), &buf[r]));
}

static void release(void) {
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_mem_free(buf[r]));
    if (comms[r] != NULL) ASSERT_OK(mg_comm_destroy(comms[r]));
  }
  for (int r = 0; r < 2; r++) {
    ASSERT_EQ(sim("inside", r), 0);
    ASSERT_EQ(sim("comms", r), 0);
  }
  ASSERT_EQ(sim("allocs", 0), 0);
}

/* Rank 0's all_reduce, which rank 1 never joins: enqueued, and a request after it. */
static mg_request_t *post_alone(void) {
  ASSERT_OK(mg_all_reduce(buf[0], buf[0], COUNT, MG_FLOAT32, MG_SUM, comms[0], NULL));
  mg_request_t *req = NULL;
  ASSERT_OK(mg_record(comms[0], NULL, &req));
  return req;
}

/* Rank 0's request must fail with MG_ERR_REMOTE naming rank 1 (`how`) within `within` s. */
static void expect_told(mg_request_t *req, const char *how, double within) {
  const double t0 = mg__now();
  mg_status_t st = mg_request_wait(req, 0);
  const double dt = mg__now() - t0;
  printf("  rank 0: %s after %.3f s: %s\n", mg_status_name(st), dt,
         st == MG_OK ? "" : mg_last_error());
  ASSERT_EQ(st, MG_ERR_REMOTE);
  ASSERT_LT_F(dt, within);
  char want[64];
  snprintf(want, sizeof want, "rank 1, in this process, %s its communicator", how);
  ASSERT_CONTAINS(mg_last_error(), want);
  ASSERT_OK(mg_request_free(req));
  mg_status_t async;
  ASSERT_OK(mg_comm_async_error(comms[0], &async));
  ASSERT_EQ(async, MG_ERR_REMOTE);
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comms[0], &state));
  ASSERT_EQ(state, MG_COMM_ERROR);
}

static void mode_abort(void) {
  make(MG_COMPLETION_DEFAULT);
  mg_request_t *req = post_alone();
  ASSERT_OK(mg_comm_abort(comms[1]));
  expect_told(req, "aborted", 2.0);
  release();
}

static void mode_revoke(void) {
  make(MG_COMPLETION_DEFAULT);
  mg_request_t *req = post_alone();
  ASSERT_OK(mg_comm_revoke(comms[1]));
  expect_told(req, "revoked", 2.0);
  release();
}

static void mode_destroyed(void) {
  make(MG_COMPLETION_DEFAULT);
  mg_request_t *req = post_alone();
  ASSERT_OK(mg_comm_destroy(comms[1]));
  comms[1] = NULL;
  expect_told(req, "aborted", 2.0);
  release();
}

static void mode_sync(void) {
  make(MG_COMPLETION_SYNC);
  mg_request_t *req = post_alone();
  ASSERT_OK(mg_comm_abort(comms[1]));
  expect_told(req, "aborted", 0.5);
  release();
}

static void *finalize_main(void *arg) {
  ASSERT_OK(mg_comm_finalize(arg));
  return NULL;
}

static void mode_finalized(void) {
  make(MG_COMPLETION_DEFAULT);
  pthread_t th[2];
  for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_create(&th[r], NULL, finalize_main, comms[r]), 0);
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
  ASSERT_OK(mg_comm_destroy(comms[1]));
  comms[1] = NULL;
  mg_status_t async;
  ASSERT_OK(mg_comm_async_error(comms[0], &async));
  ASSERT_EQ(async, MG_OK);
  release();
}

static void mode_late(void) {
  make(MG_COMPLETION_DEFAULT);
  ASSERT_OK(mg_comm_abort(comms[1]));
  const double t0 = mg__now();
  mg_status_t st = mg_all_reduce(buf[0], buf[0], COUNT, MG_FLOAT32, MG_SUM, comms[0], NULL);
  const double dt = mg__now() - t0;
  printf("  rank 0's call: %s after %.3f s: %s\n", mg_status_name(st), dt,
         st == MG_OK ? "" : mg_last_error());
  ASSERT_EQ(st, MG_ERR_REMOTE);
  ASSERT_LT_F(dt, 0.5);
  ASSERT_CONTAINS(mg_last_error(), "all_reduce #0");
  ASSERT_CONTAINS(mg_last_error(), "rank 1, in this process, aborted its communicator");
  ASSERT_EQ(sim("items", 0), 0); /* nothing was enqueued */
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comms[0], &state));
  ASSERT_EQ(state, MG_COMM_ERROR);
  release();
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: %s abort|revoke|destroyed|sync|finalized|late", argv[0]);
  int n = 0;
  if (mg_device_count(&n) != MG_OK || n < 2) SKIP("the simulated driver is not loaded");
  if (mg__load_nccl() != MG_OK) SKIP("the simulated NCCL is not loaded: %s", mg_last_error());
  sim = mgsim_control_find(getenv("MGCOMM_NCCL_LIBRARY"));
  if (sim == NULL) FAIL("the simulator's control entry point is missing");
  if (strcmp(argv[1], "abort") == 0) mode_abort();
  else if (strcmp(argv[1], "revoke") == 0) mode_revoke();
  else if (strcmp(argv[1], "destroyed") == 0) mode_destroyed();
  else if (strcmp(argv[1], "sync") == 0) mode_sync();
  else if (strcmp(argv[1], "finalized") == 0) mode_finalized();
  else if (strcmp(argv[1], "late") == 0) mode_late();
  else FAIL("unknown mode %s", argv[1]);
  printf("nccl_peer_stop %s: ok\n", argv[1]);
  return 0;
}
