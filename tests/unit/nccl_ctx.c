/*
 * nccl_ctx.c -- which CUDA context an operation on the NCCL backend leaves current on the calling
 * thread (mgcomm.h, "Operations"): the caller's, as it was, except on a thread that had none,
 * which keeps the communicator's primary context (device/context.c, mg__device_ctx_leave_keep),
 * so that a program with no CUDA of its own does not switch contexts twice per call. On the
 * simulated driver and NCCL, two devices, a communicator of one rank on device 0:
 *   - a new thread, no current context: after an all_reduce device 0's primary context is
 *     current, and after a second one still;
 *   - a new thread on which device 1's primary context is current: after an all_reduce it still
 *     is (the caller's context is put back).
 * Every all_reduce's result is checked.
 */
#include <pthread.h>
#include <stdlib.h>

#include "loader/loader.h"
#include "test.h"

#define COUNT 64

typedef struct {
  mg_comm_t *comm;
  mg__CUcontext before; /* made current before the calls; NULL: none */
  mg__CUcontext after[2];
  float got;
  mg_status_t st;
} job_t;

/* One all_reduce of 1s over one rank, out of place, waited for; job->got is its last element. */
static mg_status_t all_reduce(job_t *job, float *send, float *recv) {
  mg_stream_t stream = NULL;
  mg_request_t *req = NULL;
  float host[COUNT];
  mg_status_t st = mg_comm_stream(job->comm, &stream);
  if (st == MG_OK) st = mg_all_reduce(send, recv, COUNT, MG_FLOAT32, MG_SUM, job->comm, stream);
  if (st == MG_OK) st = mg_record(job->comm, stream, &req);
  if (st == MG_OK) st = mg_request_wait(req, 30.0);
  if (req != NULL) (void)mg_request_free(req);
  if (st == MG_OK) st = mg_memcpy(job->comm, host, recv, sizeof host);
  if (st == MG_OK) job->got = host[COUNT - 1];
  return st;
}

static void *job_main(void *arg) {
  job_t *job = arg;
  float *send = NULL, *recv = NULL, ones[COUNT];
  for (int i = 0; i < COUNT; i++) ones[i] = 1.0f;
  if (job->before != NULL && mg__cuda.CtxSetCurrent(job->before) != MG__CUDA_SUCCESS) {
    job->st = MG_ERR_BACKEND;
    return NULL;
  }
  job->st = mg_mem_alloc(job->comm, sizeof ones, (void **)&send);
  if (job->st == MG_OK) job->st = mg_mem_alloc(job->comm, sizeof ones, (void **)&recv);
  if (job->st == MG_OK) job->st = mg_memcpy(job->comm, send, ones, sizeof ones);
  for (int i = 0; i < 2 && job->st == MG_OK; i++) {
    job->st = all_reduce(job, send, recv);
    if (job->st == MG_OK && mg__cuda.CtxGetCurrent(&job->after[i]) != MG__CUDA_SUCCESS)
      job->st = MG_ERR_BACKEND;
  }
  (void)mg_mem_free(send);
  (void)mg_mem_free(recv);
  return NULL;
}

static void run(job_t *job) {
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, job_main, job), 0);
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_OK(job->st);
  ASSERT_EQ((int)job->got, 1);
}

int main(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_all(&cfg, 1, NULL, &comm));
  mg__CUdevice dev[2];
  mg__CUcontext primary[2];
  for (int d = 0; d < 2; d++) {
    ASSERT_EQ(mg__cuda.DeviceGet(&dev[d], d), MG__CUDA_SUCCESS);
    ASSERT_EQ(mg__cuda.DevicePrimaryCtxRetain(&primary[d], dev[d]), MG__CUDA_SUCCESS);
  }

  job_t none = {.comm = comm};
  run(&none);
  if (none.after[0] != primary[0] || none.after[1] != primary[0])
    FAIL("a thread without a context: after the calls %p, %p is current, not device 0's "
         "primary context %p", (void *)none.after[0], (void *)none.after[1], (void *)primary[0]);

  job_t other = {.comm = comm, .before = primary[1]};
  run(&other);
  if (other.after[0] != primary[1] || other.after[1] != primary[1])
    FAIL("a thread on device 1's context: after the calls %p, %p is current, not %p as before",
         (void *)other.after[0], (void *)other.after[1], (void *)primary[1]);

  for (int d = 0; d < 2; d++) ASSERT_EQ(mg__cuda.DevicePrimaryCtxRelease(dev[d]), MG__CUDA_SUCCESS);
  ASSERT_OK(mg_comm_destroy(comm));
  printf("nccl_ctx: ok (no context: the communicator's kept; another: put back)\n");
  return 0;
}
