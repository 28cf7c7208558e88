/*
 * test_gpu_faults.c -- failures on GPUs, each provoked on purpose, each coming back as a status
 * with a message that says what happened, after which the communicators are aborted (abort
 * returns) and rebuilt, and the next operations are correct. Two GPUs, one process.
 *
 *   pointers     host memory, page-locked memory, memory of the other GPU, a buffer too short,
 *                a stream of the other GPU, a device scalar in host memory: each is
 *                MG_ERR_INVALID_ARGUMENT naming the argument, before anything is enqueued; the
 *                communicator stays ready; managed memory and in-place buffers pass
 *   nocheck      MGCOMM_CHECK_POINTERS=0: the checks are off and good operations still work
 *   inject       the loader's fault seam: an NCCL call (ncclAllReduce, then
 *                ncclCommInitRankConfig of one rank of an mg_comm_init_all) and a CUDA call
 *                (cuPointerGetAttributes) fail on purpose
 *   inittimeout  one rank of two calls mg_comm_init_rank: MG_ERR_TIMED_OUT within the
 *                deadline + 1 s, nothing left behind
 *   withheld     rank 1 never posts its side of a first send/recv: rank 0 gets MG_ERR_TIMED_OUT
 *                within the deadline + 1 s (NCCL connects the pair while the call waits); skipped
 *                where that wait is unbounded by design (host_waits_bounded)
 *   abort        rank 1 withholds an all_reduce that rank 0 has enqueued (its kernel waits on
 *                the GPU): another thread aborts rank 0 while it waits; abort returns, the
 *                stream drains, and a rebuilt pair of communicators gives correct results
 *   watchdog     rank 1 withholds an all_reduce that rank 0 has enqueued, and rank 0 waits on an
 *                mg_record request: the watchdog ends it with MG_ERR_TIMED_OUT within the
 *                deadline + 1 s, naming the operation and what rank 1 last enqueued, and aborts
 *                rank 0's communicator (on_timeout abort); rebuilt, the pair is correct again
 *   late         the same, then rank 1 is released and posts its side of that all_reduce after
 *                rank 0 gave up: it gets an error for it (MG_ERR_REMOTE, naming rank 0's abort;
 *                refused at the call since nothing may reach the buffers rank 0's abort freed),
 *                never MG_OK, well before its own deadline; GPU 1 stays usable: rebuilt, the pair
 *                is correct again
 *   revoke       mg_comm_revoke: with NCCL >= 2.28.7, rank 0's all_reduce that rank 1 withholds
 *                (its kernel waits on the GPU) is stopped, the stream drains, rank 0 is in the
 *                error state, and rebuilt communicators are correct; with an older NCCL the call
 *                is MG_ERR_NOT_SUPPORTED naming the version needed, and the pair still works
 *   world        a world of the two GPUs: a receive whose send never comes ends its request with
 *                MG_ERR_TIMED_OUT within the deadline + 1 s, naming the rank (the pair connected
 *                first where a wait inside NCCL is unbounded); the world refuses
 *                work until mg_world_rebuild; then a receive withheld on the GPU is ended by
 *                mg_world_abort from another thread (MG_ERR_ABORTED); after each rebuild an
 *                all_reduce through the world is correct, and old requests answer MG_ERR_STALE
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu_util.h"

#define N 2
#define SHORT_TIMEOUT_S 3.0

static gu_dev_t dev[N];

static mg_comm_t *make_all(mg_comm_t **comms, double timeout_s) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = timeout_s;
  mg_status_t st = mg_comm_init_all(&cfg, N, NULL, comms);
  if (st != MG_OK) FAIL("mg_comm_init_all: %s: %s", mg_status_name(st), mg_last_error());
  return comms[0];
}

/* Every rank's input of a checked all_reduce: rank + 1 as float32 x count, and its output
 * poisoned (-1), so that a result left from an earlier call cannot pass; returns a host buffer
 * of count floats for sum_check. */
static float *sum_inputs(void **sb, void **rb, size_t count, const char *what) {
  float *h = malloc(count * sizeof *h);
  ASSERT(h != NULL);
  for (int r = 0; r < N; r++) {
    for (size_t i = 0; i < count; i++) h[i] = -1.0f;
    gu_put(&dev[r], rb[r], h, count * sizeof *h);
    for (size_t i = 0; i < count; i++) h[i] = (float)(r + 1);
    gu_put(&dev[r], sb[r], h, count * sizeof *h);
    gu_sync(&dev[r], GU_TIMEOUT_S, what);
  }
  return h;
}

/* Checks that every rank's output is the sum of the sum_inputs; frees h. */
static void sum_check(void **rb, size_t count, float *h, const char *what) {
  for (int r = 0; r < N; r++) {
    gu_sync(&dev[r], GU_TIMEOUT_S, what);
    gu_get(&dev[r], h, rb[r], count * sizeof *h);
    gu_sync(&dev[r], GU_TIMEOUT_S, what);
    for (size_t i = 0; i < count; i++)
      if (h[i] != (float)(N * (N + 1) / 2))
        FAIL("%s: rank %d: [%zu] = %g, want %d", what, r, i, h[i], N * (N + 1) / 2);
  }
  free(h);
}

/* An all_reduce of N ranks in one group, checked. */
static void check_all_reduce(mg_comm_t **comms, void **sb, void **rb, size_t count,
                             const char *what) {
  float *h = sum_inputs(sb, rb, count, what);
  ASSERT_OK(mg_group_begin());
  for (int r = 0; r < N; r++)
    ASSERT_OK(mg_all_reduce(sb[r], rb[r], count, MG_FLOAT32, MG_SUM, comms[r],
                            (mg_stream_t)dev[r].stream));
  mg_status_t st = mg_group_end();
  if (st != MG_OK) FAIL("%s: mg_group_end: %s: %s", what, mg_status_name(st), mg_last_error());
  sum_check(rb, count, h, what);
}

/* The same through a world, and its request. */
static void check_world_all_reduce(mg_world_t *w, void **sb, void **rb, size_t count,
                                   const char *what) {
  float *h = sum_inputs(sb, rb, count, what);
  mg_request_t *req = NULL;
  ASSERT_OK(mg_world_all_reduce(w, (const void *const *)sb, rb, count, MG_FLOAT32, MG_SUM, &req));
  mg_status_t st = mg_request_wait(req, 0);
  if (st != MG_OK) FAIL("%s: the world's all_reduce: %s: %s", what, mg_status_name(st), mg_last_error());
  ASSERT_OK(mg_request_free(req));
  sum_check(rb, count, h, what);
}

static void expect_bad(mg_status_t st, const char *needle1, const char *needle2) {
  if (st != MG_ERR_INVALID_ARGUMENT)
    FAIL("expected MG_ERR_INVALID_ARGUMENT (%s), got %s: %s", needle2, mg_status_name(st),
         mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), needle1);
  ASSERT_CONTAINS(mg_last_error(), needle2);
  printf("  refused: %s\n", mg_last_error());
}

static void destroy_all(mg_comm_t **comms) {
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

static void mode_pointers(void) {
  mg_comm_t *c[N];
  make_all(c, GU_TIMEOUT_S);
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  mg_stream_t s0 = (mg_stream_t)dev[0].stream;
  /* Plain host memory. */
  float *host = calloc(1024, sizeof *host);
  expect_bad(mg_all_reduce(host, rb[0], 1024, MG_FLOAT32, MG_SUM, c[0], s0), "mg_all_reduce: send",
             "is host memory");
  expect_bad(mg_all_gather(sb[0], host, 512, MG_FLOAT32, c[0], s0), "mg_all_gather: recv",
             "is host memory");
  /* Page-locked host memory. */
  void *pinned = NULL;
  ASSERT_EQ(mg__cuda.CtxSetCurrent(dev[0].ctx), MG__CUDA_SUCCESS);
  ASSERT_EQ(mg__cuda.MemAllocHost(&pinned, 4096), MG__CUDA_SUCCESS);
  expect_bad(mg_broadcast(pinned, rb[0], 1024, MG_FLOAT32, 0, c[0], s0), "mg_broadcast: send",
             "page-locked host memory");
  /* Memory of the other GPU. */
  expect_bad(mg_all_reduce(sb[1], rb[0], 1024, MG_FLOAT32, MG_SUM, c[0], s0),
             "mg_all_reduce: send", "is memory of device 1; the communicator's device is 0");
  expect_bad(mg_send(sb[1], 16, MG_FLOAT32, 1, c[0], s0), "mg_send: send", "device 1");
  /* Too short, by what the driver says the allocation holds (at least the 4096 bytes asked). */
  mg__ptr_attr_t at;
  ASSERT_OK(mg__device_ptr_attr(sb[0], &at));
  printf("  a 4096-byte cuMemAlloc: the driver reports an allocation of %zu bytes\n", at.size);
  ASSERT(at.size >= 4096 && at.size % 8 == 0 && (uintptr_t)sb[0] == at.base);
  /* (Operations of one buffer, or in place: two allocations made one after the other may be
   * adjacent, and ranges that run past one would overlap the other, which the core refuses
   * first.) */
  expect_bad(mg_send(sb[0], at.size / 4 + 256, MG_FLOAT32, 1, c[0], s0), "mg_send: send",
             "extends 1024 bytes past the end of its allocation");
  expect_bad(mg_recv(rb[0], at.size / 4 + 2, MG_FLOAT32, 1, c[0], s0), "mg_recv: recv",
             "extends 8 bytes past");
  expect_bad(mg_reduce_scatter(sb[0], sb[0], (at.size + 704) / 8, MG_FLOAT32, MG_SUM, c[0], s0),
             "mg_reduce_scatter: send", "extends 704 bytes past");
  /* A stream of the other GPU. */
  expect_bad(mg_all_reduce(sb[0], rb[0], 16, MG_FLOAT32, MG_SUM, c[0], (mg_stream_t)dev[1].stream),
             "mg_all_reduce: stream", "another CUDA context");
  /* A device scalar that is host memory. */
  float scalar = 2;
  mg_op_t op;
  expect_bad(mg_op_create_premul_sum(c[0], &scalar, MG_FLOAT32, MG_SCALAR_DEVICE, &op),
             "mg_op_create_premul_sum: scalar", "is host memory");
  /* Inside a group: the group posts nothing and returns the first error. */
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_all_reduce(sb[1], rb[1], 16, MG_FLOAT32, MG_SUM, c[1], (mg_stream_t)dev[1].stream));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_all_reduce(host, rb[0], 16, MG_FLOAT32, MG_SUM, c[0], s0));
  expect_bad(mg_group_end(), "nothing was posted", "is host memory");
  /* None of that broke the communicators. */
  mg_comm_state_t state;
  for (int r = 0; r < N; r++) {
    ASSERT_OK(mg_comm_state(c[r], &state));
    ASSERT_EQ(state, MG_COMM_READY);
  }
  check_all_reduce(c, sb, rb, 1024, "after the refused calls");
  /* Managed memory is accepted on any device; in place is one buffer. */
  mg__CUdeviceptr m[N];
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(mg__cuda.CtxSetCurrent(dev[r].ctx), MG__CUDA_SUCCESS);
    ASSERT_EQ(mg__cuda.MemAllocManaged(&m[r], 4096, MG__CU_MEM_ATTACH_GLOBAL), MG__CUDA_SUCCESS);
  }
  void *ms[N] = {(void *)(uintptr_t)m[0], (void *)(uintptr_t)m[1]};
  check_all_reduce(c, ms, ms, 1024, "managed memory, in place");
  for (int r = 0; r < N; r++) {
    ASSERT_EQ(mg__cuda.CtxSetCurrent(dev[r].ctx), MG__CUDA_SUCCESS);
    ASSERT_EQ(mg__cuda.MemFree(m[r]), MG__CUDA_SUCCESS);
    gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  }
  ASSERT_EQ(mg__cuda.MemFreeHost(pinned), MG__CUDA_SUCCESS);
  free(host);
  destroy_all(c);
}

static void mode_nocheck(void) {
  mg_param_info_t pi;
  int found = 0;
  for (int i = 0; i < mg_param_count(); i++) {
    ASSERT_OK(mg_param_get(i, &pi));
    if (strcmp(pi.name, "MGCOMM_CHECK_POINTERS") == 0) {
      found = 1;
      ASSERT_STR_EQ(pi.value, "0");
    }
  }
  ASSERT(found);
  mg_comm_t *c[N];
  make_all(c, GU_TIMEOUT_S);
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  check_all_reduce(c, sb, rb, 1024, "pointer checks off");
  /* A stream of the other device is not checked any more; nothing is posted with it here. */
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  destroy_all(c);
}

static void mode_inject(void) {
#ifdef MGCOMM_TESTING
  mg_comm_t *c[N];
  make_all(c, SHORT_TIMEOUT_S);
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  check_all_reduce(c, sb, rb, 1024, "before the faults");
  /* A CUDA call of the pointer check fails: that operation only; the comm stays ready. */
  ASSERT_OK(mg__fault_set("cuPointerGetAttributes", 1, 999, 1));
  mg_status_t st = mg_all_reduce(sb[0], rb[0], 16, MG_FLOAT32, MG_SUM, c[0],
                                 (mg_stream_t)dev[0].stream);
  ASSERT_EQ(st, MG_ERR_BACKEND);
  ASSERT_CONTAINS(mg_last_error(), "cannot ask the driver");
  ASSERT_CONTAINS(mg_last_error(), "cuPointerGetAttributes failed");
  printf("  injected: %s\n", mg_last_error());
  mg__fault_clear(NULL);
  check_all_reduce(c, sb, rb, 1024, "after the injected CUDA failure");
  /* An NCCL call fails inside the group: the whole group fails, both comms break. */
  ASSERT_OK(mg__fault_set("ncclAllReduce", 1, 3 /* ncclInternalError */, 1));
  ASSERT_OK(mg_group_begin());
  for (int r = 0; r < N; r++)
    ASSERT_OK(mg_all_reduce(sb[r], rb[r], 16, MG_FLOAT32, MG_SUM, c[r], (mg_stream_t)dev[r].stream));
  st = mg_group_end();
  mg__fault_clear(NULL);
  ASSERT_EQ(st, MG_ERR_BACKEND);
  ASSERT_CONTAINS(mg_last_error(), "ncclAllReduce failed: ncclInternalError (3)");
  ASSERT_CONTAINS(mg_last_error(), "all_reduce #");
  printf("  injected: %s\n", mg_last_error());
  for (int r = 0; r < N; r++) {
    mg_comm_state_t state;
    mg_status_t async;
    ASSERT_OK(mg_comm_state(c[r], &state));
    ASSERT_EQ(state, MG_COMM_ERROR);
    ASSERT_OK(mg_comm_async_error(c[r], &async));
    ASSERT_EQ(async, MG_ERR_BACKEND);
    char buf[512];
    ASSERT_GT(mg_comm_last_error(c[r], buf, sizeof buf), 0);
    ASSERT_CONTAINS(buf, "ncclAllReduce failed");
  }
  const double t0 = gu_now();
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_abort(c[r]));
  printf("  abort of both ranks after the failure: %.3f s\n", gu_now() - t0);
  destroy_all(c);
  /* One rank's init fails inside mg_comm_init_all: nothing is left, the other rank's half-made
   * NCCL communicator is aborted (its init waited for the failed one). */
  ASSERT_OK(mg__fault_set("ncclCommInitRankConfig", 2, 2 /* ncclSystemError */, 1));
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = SHORT_TIMEOUT_S;
  mg_comm_t *d[N] = {NULL, NULL};
  const double t1 = gu_now();
  st = mg_comm_init_all(&cfg, N, NULL, d);
  mg__fault_clear(NULL);
  ASSERT_EQ(st, MG_ERR_BACKEND);
  ASSERT_CONTAINS(mg_last_error(), "ncclCommInitRankConfig failed: ncclSystemError (2)");
  ASSERT(d[0] == NULL && d[1] == NULL);
  printf("  injected: %s (%.3f s)\n", mg_last_error(), gu_now() - t1);
  ASSERT_LT_F(gu_now() - t1, SHORT_TIMEOUT_S + 10);
  /* The world is rebuilt and correct. */
  make_all(c, GU_TIMEOUT_S);
  check_all_reduce(c, sb, rb, 1024, "rebuilt after the injected failures");
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  destroy_all(c);
#else
  SKIP("the fault seam is compiled into test builds only (MGCOMM_TESTING)");
#endif
}

static void mode_inittimeout(void) {
  mg_unique_id_t uid;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_NCCL, &uid));
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = SHORT_TIMEOUT_S;
  cfg.device = 0;
  mg_comm_t *comm = NULL;
  const double t0 = gu_now();
  mg_status_t st = mg_comm_init_rank(&cfg, N, &uid, 0, &comm); /* rank 1 never comes */
  const double dt = gu_now() - t0;
  if (st != MG_ERR_TIMED_OUT) FAIL("expected MG_ERR_TIMED_OUT, got %s: %s", mg_status_name(st), mg_last_error());
  ASSERT(comm == NULL);
  ASSERT_CONTAINS(mg_last_error(), "mg_comm_init_rank");
  ASSERT_CONTAINS(mg_last_error(), "ncclCommInitRankConfig");
  ASSERT_CONTAINS(mg_last_error(), "had not finished after 3 s");
  printf("  timed out after %.3f s: %s\n", dt, mg_last_error());
  ASSERT_GE_F(dt, SHORT_TIMEOUT_S);
  ASSERT_LT_F(dt, SHORT_TIMEOUT_S + 1);
  mg_comm_t *c[N];
  make_all(c, GU_TIMEOUT_S);
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  check_all_reduce(c, sb, rb, 1024, "after an init that timed out");
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  destroy_all(c);
}

/* 1 when the first operation between the pair, which waits for the peer inside NCCL on the host
 * while NCCL connects them, is bounded: nonblocking communicators (MGCOMM_NCCL_BLOCKING=0), or
 * an NCCL that can revoke a blocking one under the waiting thread (2.28.7). On NCCL 2.18-2.28.6
 * in blocking mode it is not (docs/nccl.md, "What is bounded, by NCCL version"): on 2 of 4 H200s
 * with NCCL 2.28.3 (2026-11-28) a withheld first receive was still inside NCCL after 190 s. */
static int host_waits_bounded(void) {
  const char *b = getenv("MGCOMM_NCCL_BLOCKING");
  mg_feature_info_t fi;
  ASSERT_OK(mg_feature_info(MG_FEATURE_NCCL_REVOKE, &fi));
  return fi.available || (b != NULL && atoi(b) == 0);
}

/* Connects the pair of world w (a send/recv between them), so that a later receive waits on the
 * GPU, not inside NCCL. */
static void world_connect(mg_world_t *w, void **sb, void **rb) {
  mg_request_t *req = NULL;
  mg_status_t st;
  float one = 1.0f;
  gu_put(&dev[0], sb[0], &one, sizeof one);
  gu_sync(&dev[0], GU_TIMEOUT_S, "the send's input");
  MG_WORLD_GROUP(w, &req, st) {
    (void)mg_world_send(w, 0, sb[0], 1, MG_FLOAT32, 1, NULL);
    (void)mg_world_recv(w, 1, rb[1], 1, MG_FLOAT32, 0, NULL);
  }
  ASSERT_OK(st);
  ASSERT_OK(mg_request_wait(req, 0));
  ASSERT_OK(mg_request_free(req));
}

static void mode_withheld(void) {
  if (!host_waits_bounded())
    SKIP("blocking communicators on an NCCL that cannot revoke (2.28.7): a withheld first "
         "send/recv waits inside NCCL unbounded (docs/nccl.md); MGCOMM_NCCL_BLOCKING=0 runs it");
  mg_comm_t *c[N];
  make_all(c, SHORT_TIMEOUT_S);
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  /* The first send/recv between the pair: rank 1 never posts its send. */
  const double t0 = gu_now();
  mg_status_t st = mg_recv(rb[0], 16, MG_FLOAT32, 1, c[0], (mg_stream_t)dev[0].stream);
  const double dt = gu_now() - t0;
  if (st == MG_OK) {
    /* NCCL enqueued it without the peer (connected already, or lazily on the GPU): the wait is
     * then on the GPU, which the watchdog of the requests work watches. Say so, then abort. */
    printf("  NCCL enqueued the receive without its peer (%.3f s): its wait is on the GPU\n", dt);
    ASSERT_EQ(gu_done(&dev[0], "the withheld receive"), 0);
  } else {
    if (st != MG_ERR_TIMED_OUT) FAIL("expected MG_ERR_TIMED_OUT, got %s: %s", mg_status_name(st), mg_last_error());
    ASSERT_CONTAINS(mg_last_error(), "recv #0 from rank 1");
    ASSERT_CONTAINS(mg_last_error(), "had not finished after 3 s");
    printf("  timed out after %.3f s: %s\n", dt, mg_last_error());
    ASSERT_GE_F(dt, SHORT_TIMEOUT_S);
    ASSERT_LT_F(dt, SHORT_TIMEOUT_S + 1);
    mg_comm_state_t state;
    ASSERT_OK(mg_comm_state(c[0], &state));
    ASSERT_EQ(state, MG_COMM_ERROR);
  }
  const double t1 = gu_now();
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_abort(c[r]));
  printf("  abort returned after %.3f s\n", gu_now() - t1);
  gu_sync(&dev[0], 20, "the withheld receive, after abort");
  destroy_all(c);
  make_all(c, GU_TIMEOUT_S);
  check_all_reduce(c, sb, rb, 1024, "rebuilt after a withheld rank");
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  destroy_all(c);
}

typedef struct {
  mg_comm_t *comm;
  double delay_s, took_s;
  mg_status_t st;
} aborter_t;

static void *aborter(void *p) {
  aborter_t *a = p;
  usleep((useconds_t)(a->delay_s * 1e6));
  const double t0 = gu_now();
  a->st = mg_comm_abort(a->comm);
  a->took_s = gu_now() - t0;
  return NULL;
}

static void mode_abort(void) {
  mg_comm_t *c[N];
  make_all(c, GU_TIMEOUT_S);
  const size_t count = (size_t)64 << 20; /* 256 MiB of float32 */
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], count * 4), rb[r] = gu_alloc(&dev[r], count * 4);
  /* The same size first, on both ranks: NCCL has made every connection it will use. */
  check_all_reduce(c, sb, rb, count, "warm-up (connections made)");
  /* Rank 0 enqueues a large all_reduce; rank 1 withholds its own. */
  mg_status_t st = mg_all_reduce(sb[0], rb[0], count, MG_FLOAT32, MG_SUM, c[0],
                                 (mg_stream_t)dev[0].stream);
  if (st != MG_OK) FAIL("rank 0's all_reduce: %s: %s", mg_status_name(st), mg_last_error());
  usleep(500000);
  ASSERT_EQ(gu_done(&dev[0], "the withheld all_reduce"), 0); /* waits on the GPU for rank 1 */
  aborter_t a = {c[0], 0.2, 0, MG_ERR_INTERNAL};
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, aborter, &a), 0);
  /* Meanwhile this thread waits on rank 0's stream (bounded) as a user would. */
  const double waited = gu_sync(&dev[0], 30, "rank 0's all_reduce, aborted from another thread");
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_OK(a.st);
  printf("  abort from another thread returned after %.3f s; the stream drained %.3f s after the "
         "wait began\n", a.took_s, waited);
  ASSERT_LT_F(a.took_s, 10);
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(c[0], &state));
  ASSERT_EQ(state, MG_COMM_ABORTED);
  mg_status_t async;
  ASSERT_OK(mg_comm_async_error(c[0], &async));
  ASSERT_EQ(async, MG_ERR_ABORTED);
  /* New operations on the aborted rank are refused; queries still answer. */
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(sb[0], rb[0], 16, MG_FLOAT32, MG_SUM, c[0],
                                                    (mg_stream_t)dev[0].stream));
  int rank = -1;
  ASSERT_OK(mg_comm_rank(c[0], &rank));
  ASSERT_EQ(rank, 0);
  /* Rank 1 learns of it out of band here; it aborts too. The world is rebuilt. */
  ASSERT_OK(mg_comm_abort(c[1]));
  destroy_all(c);
  make_all(c, GU_TIMEOUT_S);
  check_all_reduce(c, sb, rb, count, "rebuilt after the abort (256 MiB)");
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  destroy_all(c);
}

/* A pair with the short deadline and 4 KiB buffers: rank 0 enqueues all_reduce #1 (after a
 * warm-up that made NCCL's connections) and waits on a request for it while rank 1 withholds its
 * own: the watchdog ends the wait with MG_ERR_TIMED_OUT at the deadline, naming the operation and
 * rank 1's progress, and aborts rank 0. */
static void rank0_times_out(mg_comm_t **c, void **sb, void **rb) {
  make_all(c, SHORT_TIMEOUT_S);
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  check_all_reduce(c, sb, rb, 1024, "warm-up (connections made)");
  ASSERT_OK(mg_all_reduce(sb[0], rb[0], 1024, MG_FLOAT32, MG_SUM, c[0],
                          (mg_stream_t)dev[0].stream));
  mg_request_t *req = NULL;
  const double t0 = gu_now();
  ASSERT_OK(mg_record(c[0], (mg_stream_t)dev[0].stream, &req));
  mg_status_t st = mg_request_wait(req, 0);
  const double dt = gu_now() - t0;
  if (st != MG_ERR_TIMED_OUT)
    FAIL("expected MG_ERR_TIMED_OUT, got %s: %s", mg_status_name(st), mg_last_error());
  printf("  timed out after %.3f s: %s\n", dt, mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), "all_reduce #1");
  ASSERT_CONTAINS(mg_last_error(), "rank 1 last enqueued #0 (all_reduce float32 x 1024)");
  ASSERT_IN_F(dt, SHORT_TIMEOUT_S - 0.05, SHORT_TIMEOUT_S + 1);
  ASSERT_OK(mg_request_free(req));
  /* on_timeout abort: the watchdog aborted rank 0, whose stream drains. */
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(c[0], &state));
  ASSERT_EQ(state, MG_COMM_ABORTED);
  gu_sync(&dev[0], 20, "the withheld all_reduce, after the watchdog's abort");
}

/* The pair rebuilt after a failure gives correct results; then everything is freed. */
static void rebuild_check(mg_comm_t **c, void **sb, void **rb, const char *what) {
  destroy_all(c);
  make_all(c, GU_TIMEOUT_S);
  check_all_reduce(c, sb, rb, 1024, what);
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  destroy_all(c);
}

static void mode_watchdog(void) {
  mg_comm_t *c[N];
  void *sb[N], *rb[N];
  rank0_times_out(c, sb, rb);
  ASSERT_OK(mg_comm_abort(c[1])); /* rank 1 learns of it out of band here */
  rebuild_check(c, sb, rb, "rebuilt after the watchdog's abort");
}

static void mode_late(void) {
  mg_comm_t *c[N];
  void *sb[N], *rb[N];
  rank0_times_out(c, sb, rb);
  /* Rank 1, released, posts its side of #1 and waits for it: refused at the call, or its request
   * fails; either way with the peer's abort, and before rank 1's own deadline. */
  const double t0 = gu_now();
  mg_status_t st = mg_all_reduce(sb[1], rb[1], 1024, MG_FLOAT32, MG_SUM, c[1],
                                 (mg_stream_t)dev[1].stream);
  const char *where = "the call";
  if (st == MG_OK) {
    mg_request_t *req = NULL;
    ASSERT_OK(mg_record(c[1], (mg_stream_t)dev[1].stream, &req));
    st = mg_request_wait(req, 0);
    ASSERT_OK(mg_request_free(req));
    where = "its request";
  }
  const double dt = gu_now() - t0;
  if (st != MG_ERR_REMOTE) FAIL("rank 1's late all_reduce #1: expected MG_ERR_REMOTE, got %s: %s",
                                mg_status_name(st), st == MG_OK ? "" : mg_last_error());
  printf("  rank 1, late: %s failed after %.3f s: %s\n", where, dt, mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), "rank 0, in this process, aborted its communicator");
  ASSERT_LT_F(dt, SHORT_TIMEOUT_S - 0.5);
  ASSERT_OK(mg_comm_abort(c[1]));
  gu_sync(&dev[1], 20, "rank 1's late all_reduce, after its abort");
  rebuild_check(c, sb, rb, "rebuilt after the late rank's error");
}

static void mode_revoke(void) {
  mg_comm_t *c[N];
  make_all(c, GU_TIMEOUT_S);
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  check_all_reduce(c, sb, rb, 1024, "warm-up (connections made)");
  mg_feature_info_t fi;
  ASSERT_OK(mg_feature_info(MG_FEATURE_NCCL_REVOKE, &fi));
  if (!fi.available) {
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_comm_revoke(c[0]));
    ASSERT_CONTAINS(mg_last_error(), "2.28.7");
    printf("  refused: %s\n", mg_last_error());
    check_all_reduce(c, sb, rb, 1024, "after a refused revoke");
  } else {
    ASSERT_OK(mg_all_reduce(sb[0], rb[0], 1024, MG_FLOAT32, MG_SUM, c[0],
                            (mg_stream_t)dev[0].stream)); /* rank 1 withholds its own */
    usleep(300000);
    ASSERT_EQ(gu_done(&dev[0], "the withheld all_reduce"), 0);
    const double t0 = gu_now();
    mg_status_t st = mg_comm_revoke(c[0]);
    if (st != MG_OK) FAIL("mg_comm_revoke: %s: %s", mg_status_name(st), mg_last_error());
    printf("  revoke returned after %.3f s\n", gu_now() - t0);
    gu_sync(&dev[0], 20, "the withheld all_reduce, after revoke");
    mg_comm_state_t state;
    ASSERT_OK(mg_comm_state(c[0], &state));
    ASSERT_EQ(state, MG_COMM_ERROR);
    ASSERT_OK(mg_comm_abort(c[1]));
    destroy_all(c);
    make_all(c, GU_TIMEOUT_S);
    check_all_reduce(c, sb, rb, 1024, "rebuilt after a revoke");
  }
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
  destroy_all(c);
}

typedef struct {
  mg_world_t *world;
  double delay_s, took_s;
  mg_status_t st;
} world_aborter_t;

static void *world_aborter(void *p) {
  world_aborter_t *a = p;
  usleep((useconds_t)(a->delay_s * 1e6));
  const double t0 = gu_now();
  a->st = mg_world_abort(a->world);
  a->took_s = gu_now() - t0;
  return NULL;
}

static void mode_world(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = SHORT_TIMEOUT_S;
  mg_world_t *w = NULL;
  mg_status_t st = mg_world_create(&cfg, N, NULL, &w);
  if (st != MG_OK) FAIL("mg_world_create: %s: %s", mg_status_name(st), mg_last_error());
  void *sb[N], *rb[N];
  for (int r = 0; r < N; r++) sb[r] = gu_alloc(&dev[r], 4096), rb[r] = gu_alloc(&dev[r], 4096);
  check_world_all_reduce(w, sb, rb, 1024, "a new world");

  /* Rank 1 receives from rank 0, which never sends: the first send/recv of the pair, whose wait
   * is inside NCCL, where that is bounded; on the GPU otherwise. */
  if (!host_waits_bounded()) {
    printf("  the pair connected first: NCCL cannot revoke a blocking call here\n");
    world_connect(w, sb, rb);
  }
  mg_request_t *req = NULL;
  double t0 = gu_now();
  ASSERT_OK(mg_world_recv(w, 1, rb[1], 16, MG_FLOAT32, 0, &req));
  st = mg_request_wait(req, 0);
  double dt = gu_now() - t0;
  if (st != MG_ERR_TIMED_OUT) FAIL("expected MG_ERR_TIMED_OUT, got %s: %s", mg_status_name(st), mg_last_error());
  printf("  timed out after %.3f s: %s\n", dt, mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), "rank 1");
  ASSERT_CONTAINS(mg_last_error(), "recv");
  ASSERT_IN_F(dt, SHORT_TIMEOUT_S - 0.05, SHORT_TIMEOUT_S + 1);
  mg_request_t *none = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(w, (const void *const *)sb, rb, 1,
                                                          MG_FLOAT32, MG_SUM, &none));
  ASSERT(none == NULL);
  t0 = gu_now();
  ASSERT_OK(mg_world_rebuild(w));
  printf("  rebuilt after %.3f s\n", gu_now() - t0);
  mg_status_t old;
  ASSERT_STATUS(MG_ERR_STALE, mg_request_test(req, &old));
  ASSERT_OK(mg_request_free(req));
  uint64_t gen = 0;
  ASSERT_OK(mg_world_generation(w, &gen));
  ASSERT_EQ(gen, 2);
  check_world_all_reduce(w, sb, rb, 1024, "rebuilt after a timeout");

  /* Connect the pair, then withhold a receive on the GPU and abort the world from another
   * thread while this one waits. */
  world_connect(w, sb, rb);
  ASSERT_OK(mg_world_recv(w, 1, rb[1], 16, MG_FLOAT32, 0, &req));
  world_aborter_t a = {w, 0.5, 0, MG_ERR_INTERNAL};
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, world_aborter, &a), 0);
  t0 = gu_now();
  st = mg_request_wait(req, 0);
  dt = gu_now() - t0;
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_OK(a.st);
  if (st != MG_ERR_ABORTED) FAIL("expected MG_ERR_ABORTED, got %s: %s", mg_status_name(st), mg_last_error());
  printf("  mg_world_abort from another thread returned after %.3f s; the wait ended after "
         "%.3f s: %s\n", a.took_s, dt, mg_last_error());
  ASSERT_LT_F(a.took_s, 10);
  ASSERT_LT_F(dt, SHORT_TIMEOUT_S);
  ASSERT_OK(mg_request_free(req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(w, (const void *const *)sb, rb, 1,
                                                          MG_FLOAT32, MG_SUM, &none));
  ASSERT_OK(mg_world_rebuild(w));
  check_world_all_reduce(w, sb, rb, 1024, "rebuilt after an abort");
  ASSERT_OK(mg_world_destroy(w));
  for (int r = 0; r < N; r++) gu_free(&dev[r], sb[r]), gu_free(&dev[r], rb[r]);
}

int main(int argc, char **argv) {
  if (argc != 2)
    FAIL("usage: %s pointers|nocheck|inject|inittimeout|withheld|abort|watchdog|late|revoke|world",
         argv[0]);
  gu_need(N);
  for (int r = 0; r < N; r++) gu_dev_open(&dev[r], r);
  const double t0 = gu_now();
  if (strcmp(argv[1], "pointers") == 0) mode_pointers();
  else if (strcmp(argv[1], "nocheck") == 0) mode_nocheck();
  else if (strcmp(argv[1], "inject") == 0) mode_inject();
  else if (strcmp(argv[1], "inittimeout") == 0) mode_inittimeout();
  else if (strcmp(argv[1], "withheld") == 0) mode_withheld();
  else if (strcmp(argv[1], "abort") == 0) mode_abort();
  else if (strcmp(argv[1], "watchdog") == 0) mode_watchdog();
  else if (strcmp(argv[1], "late") == 0) mode_late();
  else if (strcmp(argv[1], "revoke") == 0) mode_revoke();
  else if (strcmp(argv[1], "world") == 0) mode_world();
  else FAIL("unknown mode %s", argv[1]);
  for (int r = 0; r < N; r++) gu_dev_close(&dev[r]);
  printf("gpu faults %s: ok (%.1f s)\n", argv[1], gu_now() - t0);
  return 0;
}
