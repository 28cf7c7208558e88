/*
 * kern_inplace.c -- which buffers mgcomm's all-reduce kernels let the peers read in place (no
 * copy into the staging area): only those mgcomm's own record vouches for, and only while it
 * does (mg__nccl_kern_reachable, src/backend/nccl/nccl_kern.c). Two ranks of mg_comm_init_all on
 * two simulated GPUs (tests/sim/): an allocation of mg_mem_alloc is read in place until
 * mg_mem_free; a buffer of cuMemAlloc is staged until it is registered and again once it is
 * deregistered; a range past an allocation's end, or on another rank's GPU, is staged.
 */
#include <stdint.h>
#include <stdlib.h>

#include "backend/nccl/nccl.h"
#include "test.h"

int main(void) {
  if (getenv("MGCOMM_CUDA_LIBRARY") == NULL) SKIP("MGCOMM_CUDA_LIBRARY unset");
  mg_comm_t *comms[2] = {NULL, NULL};
  ASSERT_OK(mg_comm_init_all(NULL, 2, NULL, comms));
  const size_t mib = (size_t)1 << 20;
  char *p = NULL;
  ASSERT_OK(mg_mem_alloc(comms[0], mib, (void **)&p));
  ASSERT_EQ(mg__nccl_kern_reachable(comms[0], p, mib), 1);
  ASSERT_EQ(mg__nccl_kern_reachable(comms[0], p + 4096, 1000), 1);
  ASSERT_EQ(mg__nccl_kern_reachable(comms[0], p + 16, mib), 0);  /* past its end */
  ASSERT_EQ(mg__nccl_kern_reachable(comms[1], p, mib), 0);       /* rank 1's GPU is another */
  ASSERT_OK(mg_mem_free(p));
  ASSERT_EQ(mg__nccl_kern_reachable(comms[0], p, mib), 0);       /* freed: staged */
  printf("mg_mem_alloc: read in place until mg_mem_free, not past its end, not on another GPU\n");

  /* Memory of cuMemAlloc on rank 0's GPU, which mgcomm did not make. */
  mg__CUdevice dev;
  mg__CUcontext ctx;
  ASSERT_EQ(mg__cuda.DeviceGet(&dev, 0), MG__CUDA_SUCCESS);
  ASSERT_EQ(mg__cuda.DevicePrimaryCtxRetain(&ctx, dev), MG__CUDA_SUCCESS);
  ASSERT_EQ(mg__cuda.CtxSetCurrent(ctx), MG__CUDA_SUCCESS);
  mg__CUdeviceptr d = 0;
  ASSERT_EQ(mg__cuda.MemAlloc(&d, 8192), MG__CUDA_SUCCESS);
  void *buf = (void *)(uintptr_t)d;
  ASSERT_EQ(mg__nccl_kern_reachable(comms[0], buf, 8192), 0); /* unknown: staged */
  mg_reg_t *reg = NULL;
  ASSERT_OK(mg_comm_register(comms[0], buf, 8192, MG_REGISTER_LOCAL, &reg));
  ASSERT_EQ(mg__nccl_kern_reachable(comms[0], buf, 8192), 1);
  ASSERT_EQ(mg__nccl_kern_reachable(comms[1], buf, 8192), 0); /* another communicator's */
  ASSERT_OK(mg_comm_deregister(comms[0], reg));
  ASSERT_EQ(mg__nccl_kern_reachable(comms[0], buf, 8192), 0); /* deregistered: staged */
  printf("cuMemAlloc: staged, read in place while registered, staged once deregistered\n");
  ASSERT_EQ(mg__cuda.MemFree(d), MG__CUDA_SUCCESS);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  return 0;
}
