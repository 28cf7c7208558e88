/*
 * kern_sim.c -- MGCOMM_ALGO=mgcomm on the NCCL backend where the kernels cannot run: the
 * simulated CUDA driver (tests/sim/) has no module or launch calls, so the feature "kernels" is
 * missing, and every all_reduce is refused with MG_ERR_NOT_SUPPORTED that says so, before
 * anything is posted (the communicator stays ready). With MGCOMM_ALGO=auto the same machine runs
 * them on NCCL (nccl_sim_smoke). Two ranks of mg_comm_init_all on two simulated GPUs. Then a
 * communicator's config->all_reduce_algo, which overrides the variable.
 */
#include <pthread.h>
#include <stdlib.h>

#include "test.h"

static mg_comm_t *child[2];

/* A split (a collective: one thread per rank) whose config forces mgcomm's kernels. */
static void *split_forced(void *arg) {
  mg_comm_t *comm = *(mg_comm_t **)arg;
  int r = -1;
  ASSERT_OK(mg_comm_rank(comm, &r));
  mg_config_t forced = MG_CONFIG_INIT;
  forced.all_reduce_algo = MG_ALGO_MGCOMM;
  ASSERT_OK(mg_comm_split(comm, 0, r, &forced, &child[r]));
  return NULL;
}

int main(void) {
  if (getenv("MGCOMM_CUDA_LIBRARY") == NULL) SKIP("MGCOMM_CUDA_LIBRARY unset");
  mg_comm_t *comms[2] = {NULL, NULL};
  ASSERT_OK(mg_comm_init_all(NULL, 2, NULL, comms));
  for (int r = 0; r < 2; r++) {
    void *buf = NULL;
    ASSERT_OK(mg_mem_alloc(comms[r], 4096, &buf));
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED,
                  mg_all_reduce(buf, buf, 100, MG_FLOAT32, MG_SUM, comms[r], NULL));
    ASSERT_CONTAINS(mg_last_error(), "MGCOMM_ALGO=mgcomm");
    ASSERT_CONTAINS(mg_last_error(), "cuModuleLoadData");
    printf("rank %d: %s\n", r, mg_last_error());
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED,
                  mg_all_reduce(buf, buf, 100, MG_INT32, MG_SUM, comms[r], NULL));
    mg_comm_state_t state;
    ASSERT_OK(mg_comm_state(comms[r], &state));
    ASSERT_EQ(state, MG_COMM_READY);
    ASSERT_OK(mg_mem_free(buf));
  }
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  printf("MGCOMM_ALGO=mgcomm without the kernels: every all_reduce refused, the comms ready\n");

  /* A communicator's config->all_reduce_algo overrides the variable: MG_ALGO_NCCL runs NCCL's
   * all_reduce (correctly), MG_ALGO_MGCOMM is refused naming the config, on a split too. */
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.all_reduce_algo = MG_ALGO_NCCL;
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  float *buf[2], host[100];
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_mem_alloc(comms[r], sizeof host, (void **)&buf[r]));
    for (int i = 0; i < 100; i++) host[i] = (float)(r + 1) * (float)i;
    ASSERT_OK(mg_memcpy(comms[r], buf[r], host, sizeof host));
  }
  ASSERT_OK(mg_group_begin());
  for (int r = 0; r < 2; r++)
    ASSERT_OK(mg_all_reduce(buf[r], buf[r], 100, MG_FLOAT32, MG_SUM, comms[r], NULL));
  ASSERT_OK(mg_group_end());
  for (int r = 0; r < 2; r++) {
    mg_request_t *req = NULL; /* mg_memcpy is not ordered after the stream: wait for it */
    ASSERT_OK(mg_record(comms[r], NULL, &req));
    ASSERT_OK(mg_request_wait(req, 0));
    ASSERT_OK(mg_request_free(req));
    ASSERT_OK(mg_memcpy(comms[r], host, buf[r], sizeof host));
    for (int i = 0; i < 100; i++) ASSERT(host[i] == 3.0f * (float)i);
    ASSERT_OK(mg_mem_free(buf[r]));
  }
  pthread_t t[2];
  for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_create(&t[r], NULL, split_forced, &comms[r]), 0);
  for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  for (int r = 0; r < 2; r++) {
    void *b = NULL;
    ASSERT_OK(mg_mem_alloc(child[r], 4096, &b));
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED,
                  mg_all_reduce(b, b, 100, MG_FLOAT32, MG_SUM, child[r], NULL));
    ASSERT_CONTAINS(mg_last_error(), "config->all_reduce_algo = MG_ALGO_MGCOMM, but");
    printf("split rank %d: %s\n", r, mg_last_error());
    ASSERT_OK(mg_mem_free(b));
  }
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(child[r]));
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  printf("config->all_reduce_algo overrides MGCOMM_ALGO: NCCL's ran, mgcomm's refused by name\n");
  return 0;
}
