/*
 * test_gpu_launch.c -- a job of one process per GPU on the NCCL backend, made by
 * mg_comm_init_env under `mgcomm launch -n 2`: timeout messages know the progress of the rank in
 * the other process, published through the job's store (src/boot/progress.c).
 *
 * Run without arguments (the CTest entry): probes 2 GPUs and NCCL in a child (exit 77 without),
 * then runs itself as `$MGCOMM launch -n 2 --tag-output -- <self> rank`. Each rank:
 *   - makes its communicator with mg_comm_init_env (NCCL, timeout 3 s) and checks one
 *     all_reduce (#0);
 *   - rank 0 enqueues all_reduce #1, which rank 1 withholds, and waits on an mg_record request:
 *     it must end with MG_ERR_TIMED_OUT within the deadline + 1 s, naming all_reduce #1 and
 *     "rank 1 last enqueued #0 (all_reduce float32 x 1024)" (before the store carried progress: "rank 1's
 *     progress is unknown");
 *   - rank 1 stays alive (its key would go with its communicator) until rank 0 says it is done,
 *     through a key of the job's store; then both destroy their communicators.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_util.h"

#define SHORT_TIMEOUT_S 3.0
#define COUNT 1024

static int env_int(const char *name) {
  const char *v = getenv(name);
  if (v == NULL) FAIL("%s is not set: run under mgcomm launch", name);
  return atoi(v);
}

static void run_rank(void) {
  const int rank = env_int("MGCOMM_RANK");
  const int local = env_int("MGCOMM_LOCAL_RANK");
  ASSERT_EQ(env_int("MGCOMM_WORLD_SIZE"), 2);
  gu_need(local + 1); /* its own GPU: a "machine" of tests/gpu/two_machines.sh sees only one */
  gu_dev_t dev;
  gu_dev_open(&dev, local);
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = SHORT_TIMEOUT_S;
  mg_comm_t *comm = NULL;
  mg_status_t st = mg_comm_init_env(&cfg, &comm);
  if (st != MG_OK) FAIL("mg_comm_init_env: %s: %s", mg_status_name(st), mg_last_error());
  /* The test's own connection to the job's store, for "done". */
  mg_store_t *store = NULL;
  ASSERT_OK(mg_store_connect(getenv("MGCOMM_STORE"), NULL, 30, &store));

  void *sb = gu_alloc(&dev, COUNT * sizeof(float)), *rb = gu_alloc(&dev, COUNT * sizeof(float));
  float h[COUNT];
  for (int i = 0; i < COUNT; i++) h[i] = (float)(rank + 1);
  gu_put(&dev, sb, h, sizeof h);
  gu_sync(&dev, GU_TIMEOUT_S, "inputs");
  ASSERT_OK(mg_all_reduce(sb, rb, COUNT, MG_FLOAT32, MG_SUM, comm, (mg_stream_t)dev.stream));
  gu_sync(&dev, GU_TIMEOUT_S, "all_reduce #0");
  gu_get(&dev, h, rb, sizeof h);
  gu_sync(&dev, GU_TIMEOUT_S, "all_reduce #0's result");
  for (int i = 0; i < COUNT; i++)
    if (h[i] != 3.0f) FAIL("rank %d: all_reduce #0: [%d] = %g, want 3", rank, i, h[i]);

  if (rank == 0) {
    ASSERT_OK(mg_all_reduce(sb, rb, COUNT, MG_FLOAT32, MG_SUM, comm, (mg_stream_t)dev.stream));
    mg_request_t *req = NULL;
    const double t0 = gu_now();
    ASSERT_OK(mg_record(comm, (mg_stream_t)dev.stream, &req));
    st = mg_request_wait(req, 0);
    const double dt = gu_now() - t0;
    if (st != MG_ERR_TIMED_OUT)
      FAIL("expected MG_ERR_TIMED_OUT, got %s: %s", mg_status_name(st), mg_last_error());
    printf("  timed out after %.3f s: %s\n", dt, mg_last_error());
    ASSERT_CONTAINS(mg_last_error(), "all_reduce #1");
    ASSERT_CONTAINS(mg_last_error(), "rank 1 last enqueued #0 (all_reduce float32 x 1024)");
    ASSERT_IN_F(dt, SHORT_TIMEOUT_S - 0.05, SHORT_TIMEOUT_S + 1);
    ASSERT_OK(mg_request_free(req));
    gu_sync(&dev, 20, "the withheld all_reduce, after the watchdog's abort");
    ASSERT_OK(mg_store_set(store, "test/launch/done", "1", 1, 10));
  } else {
    char v[8];
    size_t len = 0;
    ASSERT_OK(mg_store_get(store, "test/launch/done", v, sizeof v, &len, 60));
  }
  ASSERT_OK(mg_store_close(store));
  const double t1 = gu_now();
  ASSERT_OK(mg_comm_destroy(comm));
  printf("  rank %d: destroyed in %.3f s\n", rank, gu_now() - t1);
  gu_free(&dev, sb);
  gu_free(&dev, rb);
  gu_dev_close(&dev);
  printf("gpu launch rank %d: ok\n", rank);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "rank") == 0) {
    run_rank();
    return 0;
  }
  if (argc != 1) FAIL("usage: %s (the driver) | %s rank (under mgcomm launch)", argv[0], argv[0]);
  gu_probe(2);
  const char *cli = getenv("MGCOMM");
  if (cli == NULL) FAIL("MGCOMM (the mgcomm command line) is not set");
  fflush(stdout);
  execl(cli, cli, "launch", "-n", "2", "--tag-output", "--", argv[0], "rank", (char *)NULL);
  FAIL("cannot run %s", cli);
}
