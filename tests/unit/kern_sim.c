/*
 * kern_sim.c -- MGCOMM_ALGO=mgcomm on the NCCL backend where the kernels cannot run: the
 * simulated CUDA driver (tests/sim/) has no module or launch calls, so the feature "kernels" is
 * missing, and every all_reduce is refused with MG_ERR_NOT_SUPPORTED that says so, before
 * anything is posted (the communicator stays ready). With MGCOMM_ALGO=auto the same machine runs
 * them on NCCL (nccl_sim_smoke). Two ranks of mg_comm_init_all on two simulated GPUs.
 */
#include <stdlib.h>

#include "test.h"

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
  return 0;
}
