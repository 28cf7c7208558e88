/*
 * nccl_blocking.c -- the NCCL backend's bounds, run on the simulated driver and NCCL
 * (tests/sim/), in the mode MGCOMM_NCCL_BLOCKING gives (the default: blocking communicators):
 *
 *   nccl_blocking hosthang    rank 0's second all_reduce blocks inside NCCL on the host
 *                             (MGSIM_HOST_HANG=0:2, a peer that never connects): the call comes
 *                             back MG_ERR_TIMED_OUT within deadline + 1 s (blocking: the watchdog
 *                             revokes the communicator; nonblocking: the poll), the communicator
 *                             ends aborted, fresh communicators work, nothing is left
 *   nccl_blocking abort       the same hang with a long deadline, and mg_comm_abort from another
 *                             thread: the call comes back MG_ERR_ABORTED within 1 s
 *   nccl_blocking norevoke    the same hang on an NCCL without revoke (MGSIM_NCCL_VERSION=22803,
 *                             blocking): what is not bounded there (docs/nccl.md): the call stays
 *                             inside NCCL, mg_comm_abort still returns within 1.5 s, and no
 *                             NCCL communicator is freed under it (the simulator would abort)
 *   nccl_blocking gpuhang     rank 1's second all_reduce never completes on its stream
 *                             (MGSIM_NEVER_COMPLETE=1:2): the calls return, their requests time
 *                             out within deadline + 1 s, the communicators end aborted
 *   nccl_blocking record      the pointer checks' record: with every cuPointerGetAttributes made
 *                             to fail (the fault seam), buffers of mg_mem_alloc and registered
 *                             ones pass without the driver; once freed or deregistered they go
 *                             to the driver again (whose failure refuses them), never passed
 *                             as checked
 *
 * The simulator aborts the process if NCCL frees a communicator while a thread is inside it.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loader/fault.h"
#include "loader/loader.h"
#include "sim.h"
#include "test.h"

#define N 2
#define COUNT 256

static mg_comm_t *comms[N];
static void *buf[N];
static mgsim_control_fn sim;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void make(double timeout_s) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = timeout_s;
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  for (int r = 0; r < N; r++) ASSERT_OK(mg_mem_alloc(comms[r], COUNT * sizeof(float), &buf[r]));
}

static void release(void) {
  for (int r = 0; r < N; r++) {
    ASSERT_OK(mg_mem_free(buf[r]));
    ASSERT_OK(mg_comm_destroy(comms[r]));
  }
}

/* One all_reduce per rank, each from its own thread; statuses and times in out. */
typedef struct {
  int r;
  mg_status_t st;
  double dt;
  char msg[512];
} call_t;

static void *all_reduce_main(void *arg) {
  call_t *c = arg;
  const double t0 = now();
  c->st = mg_all_reduce(buf[c->r], buf[c->r], COUNT, MG_FLOAT32, MG_SUM, comms[c->r], NULL);
  c->dt = now() - t0;
  snprintf(c->msg, sizeof c->msg, "%s", c->st == MG_OK ? "" : mg_last_error());
  return NULL;
}

static void all_reduce_both(call_t *c, pthread_t *th) {
  for (int r = 0; r < N; r++) {
    c[r] = (call_t){.r = r};
    ASSERT_EQ(pthread_create(&th[r], NULL, all_reduce_main, &c[r]), 0);
  }
}

/* One all_reduce on each rank, which succeeds (the fault knobs count from the first call), then
 * the second, left running: the one the knobs hold. */
static void second_round(call_t *c, pthread_t *th) {
  all_reduce_both(c, th);
  for (int r = 0; r < N; r++) {
    pthread_join(th[r], NULL);
    ASSERT_OK(c[r].st);
  }
  all_reduce_both(c, th);
}

/* A good all_reduce on fresh communicators, its result checked: what a rebuild gives. */
static void check_fresh(void) {
  make(10);
  float v[COUNT];
  for (int r = 0; r < N; r++) {
    for (int i = 0; i < COUNT; i++) v[i] = (float)(r + 1);
    ASSERT_OK(mg_memcpy(comms[r], buf[r], v, sizeof v));
  }
  call_t c[N];
  pthread_t th[N];
  all_reduce_both(c, th);
  for (int r = 0; r < N; r++) {
    pthread_join(th[r], NULL);
    if (c[r].st != MG_OK) FAIL("rank %d: %s: %s", r, mg_status_name(c[r].st), c[r].msg);
  }
  for (int r = 0; r < N; r++) {
    mg_request_t *req = NULL; /* mg_memcpy's stream is not ordered after the default one */
    ASSERT_OK(mg_record(comms[r], NULL, &req));
    ASSERT_OK(mg_request_wait(req, 0));
    ASSERT_OK(mg_request_free(req));
    ASSERT_OK(mg_memcpy(comms[r], v, buf[r], sizeof v));
    if (v[0] != 3.0f || v[COUNT - 1] != 3.0f) FAIL("rank %d: %g, expected 3", r, (double)v[0]);
  }
  release();
}

static void expect_clean(void) {
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(sim("inside", r), 0);
    ASSERT_EQ(sim("comms", r), 0);
  }
  ASSERT_EQ(sim("allocs", 0), 0);
}

static void mode_hosthang(void) {
  const double T = 2;
  make(T);
  call_t c[N];
  pthread_t th[N];
  second_round(c, th); /* rank 0 stays inside NCCL */
  pthread_join(th[0], NULL);
  printf("  rank 0: %s after %.3f s: %s\n", mg_status_name(c[0].st), c[0].dt, c[0].msg);
  ASSERT_EQ(c[0].st, MG_ERR_TIMED_OUT);
  ASSERT_IN_F(c[0].dt, T, T + 1);
  mg_comm_state_t state; /* blocking: the watchdog aborted it; nonblocking: the poll failed it */
  ASSERT_OK(mg_comm_state(comms[0], &state));
  ASSERT(state == MG_COMM_ABORTED || state == MG_COMM_ERROR);
  /* Rank 1's stream waits for rank 0 on the GPU: a job aborts every rank (as a world does). */
  ASSERT_OK(mg_comm_abort(comms[1]));
  pthread_join(th[1], NULL);
  release();
  expect_clean();
  check_fresh();
  expect_clean();
}

/* Waits until rank r has a call held inside NCCL by MGSIM_HOST_HANG. */
static void wait_hung(int r) {
  const double t0 = now();
  while (sim("host_hung", r) < 1) {
    ASSERT_LT_F(now() - t0, 10.0);
    usleep(1000);
  }
}

static void *abort_later(void *arg) {
  wait_hung(0); /* the call is inside NCCL: abort must get it out */
  ASSERT_OK(mg_comm_abort(arg));
  return NULL;
}

static void mode_abort(void) {
  make(60);
  call_t c[N];
  pthread_t th[N], ab;
  second_round(c, th);
  ASSERT_EQ(pthread_create(&ab, NULL, abort_later, comms[0]), 0);
  pthread_join(th[0], NULL);
  pthread_join(ab, NULL);
  printf("  rank 0: %s after %.3f s: %s\n", mg_status_name(c[0].st), c[0].dt, c[0].msg);
  ASSERT_EQ(c[0].st, MG_ERR_ABORTED);
  ASSERT_LT_F(c[0].dt, 1.5);
  ASSERT_OK(mg_comm_abort(comms[1]));
  pthread_join(th[1], NULL);
  release();
  expect_clean();
}

static void mode_norevoke(void) {
  ASSERT(!mg__feature(MG_FEATURE_NCCL_REVOKE));
  make(1);
  call_t c[N];
  pthread_t th[N];
  second_round(c, th);
  /* Past the deadline (1 s) the watchdog aborts rank 0's communicator. */
  wait_hung(0);
  mg_comm_state_t state = MG_COMM_READY;
  const double hung = now();
  while (state != MG_COMM_ABORTED && now() - hung < 10) {
    ASSERT_OK(mg_comm_state(comms[0], &state));
    usleep(1000);
  }
  printf("  the watchdog aborted rank 0's communicator %.3f s after its call hung\n",
         now() - hung);
  ASSERT_EQ(state, MG_COMM_ABORTED);
  ASSERT_EQ(sim("inside", 0), 1); /* nothing could set NCCL's flag without freeing */
  const double t0 = now();
  ASSERT_OK(mg_comm_abort(comms[0]));
  const double dt = now() - t0;
  printf("  mg_comm_abort returned after %.3f s; the call is still inside NCCL\n", dt);
  ASSERT_LT_F(dt, 1.5);
  ASSERT_EQ(sim("inside", 0), 1);
  /* Destroy waits for the call inside for the communicator's timeout (1 s), then refuses and
   * leaves the communicator, aborted, for a later destroy: nothing is freed under the call. */
  const double t_destroy = now();
  ASSERT_EQ(mg_comm_destroy(comms[0]), MG_ERR_INVALID_USAGE);
  const double dd = now() - t_destroy;
  printf("  mg_comm_destroy refused after %.3f s: %s\n", dd, mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), "1 call is still inside");
  ASSERT_IN_F(dd, 0.9, 2.5);
  ASSERT_OK(mg_comm_state(comms[0], &state));
  ASSERT_EQ(state, MG_COMM_ABORTED);
  /* The thread never returns: leave without joining it (no leak report for what it holds). */
  fflush(stdout);
  _exit(0);
}

static void mode_gpuhang(void) {
  const double T = 2;
  make(T);
  call_t c[N];
  pthread_t th[N];
  second_round(c, th);
  for (int r = 0; r < N; r++) {
    pthread_join(th[r], NULL);
    ASSERT_OK(c[r].st);
  } /* enqueued */
  mg_request_t *req[N];
  const double t0 = now();
  for (int r = 0; r < N; r++) ASSERT_OK(mg_record(comms[r], NULL, &req[r]));
  for (int r = 0; r < N; r++) {
    mg_status_t st = mg_request_wait(req[r], 0);
    const double dt = now() - t0;
    printf("  rank %d: request %s after %.3f s: %s\n", r, mg_status_name(st), dt,
           mg_last_error());
    ASSERT(st == MG_ERR_TIMED_OUT || st == MG_ERR_ABORTED);
    ASSERT_LT_F(dt, T + 1);
    ASSERT_OK(mg_request_free(req[r]));
  }
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_abort(comms[r]));
  release();
  expect_clean();
  check_fresh();
  expect_clean();
}

/* An operation on p went to the driver (the fault seam's nth failed query) and was refused. */
static void expect_driver_refusal(void *p, int nth) {
  mg_status_t st = mg_all_reduce(p, p, COUNT, MG_FLOAT32, MG_SUM, comms[0], NULL);
  printf("  %p: %s: %s\n", p, mg_status_name(st), mg_last_error());
  ASSERT(st < 0);
  ASSERT_CONTAINS(mg_last_error(), "cuPointerGetAttributes");
  ASSERT_EQ(mg__fault_fired("cuPointerGetAttributes"), nth);
}

static void mode_record(void) {
  make(10);
  void *other = NULL; /* memory mgcomm did not allocate: cuMemAlloc on device 0 */
  mg__CUcontext ctx = NULL;
  mg__CUdevice d0 = 0;
  ASSERT_EQ(mg__cuda.DevicePrimaryCtxRetain(&ctx, d0), MG__CUDA_SUCCESS);
  ASSERT_EQ(mg__cuda.CtxSetCurrent(ctx), MG__CUDA_SUCCESS);
  mg__CUdeviceptr p = 0;
  ASSERT_EQ(mg__cuda.MemAlloc(&p, COUNT * sizeof(float)), MG__CUDA_SUCCESS);
  other = (void *)(uintptr_t)p;
  mg_reg_t *reg = NULL;
  ASSERT_OK(mg_comm_register(comms[0], other, COUNT * sizeof(float), MG_REGISTER_LOCAL, &reg));
  /* From now on the driver answers no pointer query. */
  ASSERT_OK(mg__fault_set("cuPointerGetAttributes", 1, 1, 0));
  ASSERT_OK(mg_all_reduce(buf[0], buf[0], COUNT, MG_FLOAT32, MG_SUM, comms[0], NULL));
  ASSERT_OK(mg_all_reduce(other, other, COUNT, MG_FLOAT32, MG_SUM, comms[0], NULL));
  ASSERT_EQ(mg__fault_fired("cuPointerGetAttributes"), 0);
  /* Deregistered: the driver is asked again (and, made to fail, refuses). */
  ASSERT_OK(mg_comm_deregister(comms[0], reg));
  expect_driver_refusal(other, 1);
  /* Freed: the same. */
  void *freed = buf[0];
  ASSERT_OK(mg_mem_free(freed));
  ASSERT_OK(mg_mem_alloc(comms[0], 64, &buf[0])); /* release() frees this one */
  if (buf[0] == freed) SKIP("the allocator gave the freed address back at once");
  expect_driver_refusal(freed, 2);
  mg__fault_clear(NULL);
  /* Rank 1 never took part: its communicator is aborted by destroy. */
  ASSERT_OK(mg_comm_abort(comms[0]));
  ASSERT_OK(mg_comm_abort(comms[1]));
  release();
  ASSERT_EQ(mg__cuda.MemFree(p), MG__CUDA_SUCCESS);
  ASSERT_EQ(mg__cuda.DevicePrimaryCtxRelease(d0), MG__CUDA_SUCCESS);
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: %s hosthang|abort|norevoke|gpuhang|record", argv[0]);
  int n = 0;
  if (mg_device_count(&n) != MG_OK || n < N) SKIP("the simulated driver is not loaded");
  if (mg__load_nccl() != MG_OK) SKIP("the simulated NCCL is not loaded: %s", mg_last_error());
  sim = mgsim_control_find(getenv("MGCOMM_NCCL_LIBRARY"));
  if (sim == NULL) FAIL("the simulator's control entry point is missing");
  const char *blocking = getenv("MGCOMM_NCCL_BLOCKING");
  printf("nccl_blocking %s (MGCOMM_NCCL_BLOCKING=%s, NCCL %d)\n", argv[1],
         blocking != NULL ? blocking : "default", mg__lib_version(MG_LIB_NCCL));
  const double t0 = now();
  if (strcmp(argv[1], "hosthang") == 0) mode_hosthang();
  else if (strcmp(argv[1], "abort") == 0) mode_abort();
  else if (strcmp(argv[1], "norevoke") == 0) mode_norevoke();
  else if (strcmp(argv[1], "gpuhang") == 0) mode_gpuhang();
  else if (strcmp(argv[1], "record") == 0) mode_record();
  else FAIL("unknown mode %s", argv[1]);
  printf("nccl_blocking %s: ok (%.1f s)\n", argv[1], now() - t0);
  return 0;
}
