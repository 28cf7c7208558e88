/*
 * request_stream.c -- requests and host streams on the host backend.
 *
 *   request_stream basics | strategy hostfn|poll|sync | sticky | callbacks | misuse | concurrent |
 *                  elapsed
 *
 * basics: mg_record with stream NULL is complete at once; operations on host streams of two
 *   ranks return at once, run in order on the workers and give the right results; mg_record and
 *   mg_stream_sync wait for them; mg_request_test never blocks.
 * strategy: the same through each completion strategy (the config's), including a request that
 *   nobody waits for and that is found complete by the watchdog (poll, sync) or the worker.
 * sticky: an operation that fails on a stream (a mismatched collective) makes every later record
 *   and sync report that first error with its message; the next stream on a fresh comm is fine.
 * callbacks: a callback runs exactly once, on a library thread, also when it is registered after
 *   completion; a callback that submits new work on the same stream and records it; a request
 *   freed while pending (detached) still runs its callback once; freeing inside the callback.
 * misuse: NULL and freed handles, double free, a stream of another communicator, a pointer that is
 *   not a host stream, a wait or sync from the stream's own worker (would wait for itself), a
 *   negative timeout, a second callback, a bad config field.
 * concurrent: 8 threads record on the same two streams while operations flow; every request
 *   completes exactly once (TSan checks the rest).
 * elapsed: mg_record_timed and mg_request_elapsed: on stream NULL the time between the two
 *   records, on a host stream the time the worker spent between the two marks (an all_reduce
 *   that waits 50 ms for its peer); reversed it is negative; every misuse (an untimed request,
 *   a pending one, one that was aborted, two communicators, NULL, a freed handle) is refused
 *   and writes nothing.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"

static mg_comm_t *comms[2];
static mg_stream_t streams[2];

static void setup(mg_completion_t strategy) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 20;
  cfg.completion = strategy;
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_stream_create(comms[r], &streams[r]));
}

static void teardown(void) {
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_stream_destroy(streams[r]));
    ASSERT_OK(mg_comm_destroy(comms[r]));
  }
}

/* Posts `n` all_reduces of rank-dependent values on both streams; recv[r][i] must end as the sum
 * over ranks. */
#define NOPS 64
static int64_t sendv[2][NOPS], recvv[2][NOPS];

static void post_all(int n) {
  for (int i = 0; i < n; i++)
    for (int r = 0; r < 2; r++) {
      sendv[r][i] = (int64_t)(r + 1) * (i + 1);
      recvv[r][i] = -1;
      ASSERT_OK(mg_all_reduce(&sendv[r][i], &recvv[r][i], 1, MG_INT64, MG_SUM, comms[r],
                              streams[r]));
    }
}

static void check_all(int n) {
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < n; i++) ASSERT_EQ(recvv[r][i], 3 * (i + 1));
}

static void test_basics(void) {
  setup(MG_COMPLETION_DEFAULT);
  /* Stream NULL: operations completed before they returned, so the request is complete. */
  mg_request_t *req;
  ASSERT_OK(mg_record(comms[0], NULL, &req));
  mg_status_t st = MG_INPROGRESS;
  ASSERT_OK(mg_request_test(req, &st));
  ASSERT_EQ(st, MG_OK);
  ASSERT_OK(mg_request_wait(req, 0));
  ASSERT_OK(mg_request_free(req));

  post_all(NOPS);
  mg_request_t *reqs[2];
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_record(comms[r], streams[r], &reqs[r]));
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_request_wait(reqs[r], 0));
    ASSERT_OK(mg_request_test(reqs[r], &st));
    ASSERT_EQ(st, MG_OK);
    ASSERT_OK(mg_request_free(reqs[r]));
  }
  check_all(NOPS);

  post_all(NOPS);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_stream_sync(streams[r], 0));
  check_all(NOPS);

  /* A group on a stream, and a direct call afterwards on the same comm (the worker is idle). */
  int64_t a[2] = {1, 2}, b[2] = {0, 0};
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_group_begin());
    ASSERT_OK(mg_send(&a[r], 1, MG_INT64, 1 - r, comms[r], streams[r]));
    ASSERT_OK(mg_recv(&b[r], 1, MG_INT64, 1 - r, comms[r], streams[r]));
    ASSERT_OK(mg_group_end());
  }
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_stream_sync(streams[r], 5));
  ASSERT_EQ(b[0], 2);
  ASSERT_EQ(b[1], 1);
  /* A wait with its own short timeout on work that cannot finish leaves the request pending. */
  int64_t x = 1, y[2];
  ASSERT_OK(mg_all_reduce(&x, &y[0], 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  ASSERT_OK(mg_record(comms[0], streams[0], &req));
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_request_wait(req, 0.05));
  ASSERT_CONTAINS(mg_last_error(), "still pending");
  ASSERT_OK(mg_request_test(req, &st));
  ASSERT_EQ(st, MG_INPROGRESS);
  ASSERT_OK(mg_all_reduce(&x, &y[1], 1, MG_INT64, MG_SUM, comms[1], streams[1]));
  ASSERT_OK(mg_request_wait(req, 0));
  ASSERT_EQ(y[0], 2);
  ASSERT_OK(mg_stream_sync(streams[1], 0));
  ASSERT_EQ(y[1], 2);
  ASSERT_OK(mg_request_free(req));
  teardown();
}

static atomic_int cb_calls;
static atomic_int cb_status;

static void count_cb(mg_request_t *req, mg_status_t status, void *arg) {
  atomic_fetch_add(&cb_calls, 1);
  atomic_store(&cb_status, status);
  if (arg != NULL) ASSERT_OK(mg_request_free(req)); /* freeing inside the callback */
}

static void test_strategy(mg_completion_t strategy) {
  setup(strategy);
  for (int round = 0; round < 20; round++) {
    post_all(8);
    mg_request_t *reqs[2];
    for (int r = 0; r < 2; r++) ASSERT_OK(mg_record(comms[r], streams[r], &reqs[r]));
    ASSERT_OK(mg_request_wait(reqs[0], 0));
    /* Rank 1's request: nobody waits; tested until done (poll, sync: the watchdog or the test
     * itself finds it). */
    mg_status_t st = MG_INPROGRESS;
    double t0 = mg__now();
    while (st == MG_INPROGRESS) {
      ASSERT_OK(mg_request_test(reqs[1], &st));
      ASSERT_LT_F(mg__now() - t0, 5);
    }
    ASSERT_EQ(st, MG_OK);
    for (int r = 0; r < 2; r++) ASSERT_OK(mg_request_free(reqs[r]));
    check_all(8);
  }
  /* A request that is only observed through its callback. */
  atomic_store(&cb_calls, 0);
  post_all(4);
  mg_request_t *reqs[2];
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_record(comms[r], streams[r], &reqs[r]));
    ASSERT_OK(mg_request_on_complete(reqs[r], count_cb, (void *)1));
  }
  double t0 = mg__now();
  while (atomic_load(&cb_calls) < 2) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 5); /* the watchdog's check (sync: its interval) ends them */
  }
  usleep(20000);
  ASSERT_EQ(atomic_load(&cb_calls), 2);
  check_all(4);
  teardown();
}

static void test_sticky(void) {
  setup(MG_COMPLETION_DEFAULT);
  int64_t v[2] = {1, 2}, out[4];
  /* Rank 0 all_reduce, rank 1 all_gather: a mismatch the host backend detects. */
  ASSERT_OK(mg_all_reduce(&v[0], &out[0], 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  ASSERT_OK(mg_all_gather(&v[1], &out[2], 1, MG_INT64, comms[1], streams[1]));
  for (int r = 0; r < 2; r++) {
    mg_request_t *req;
    ASSERT_OK(mg_record(comms[r], streams[r], &req));
    mg_status_t st = mg_request_wait(req, 0);
    ASSERT(st == MG_ERR_INVALID_USAGE || st == MG_ERR_REMOTE);
    if (st == MG_ERR_INVALID_USAGE) ASSERT_CONTAINS(mg_last_error(), "mismatched collectives");
    ASSERT_OK(mg_request_free(req));
    /* Later operations and records keep reporting the first error. */
    ASSERT_STATUS(st, mg_stream_sync(streams[r], 0));
    ASSERT_OK(mg_record(comms[r], streams[r], &req));
    ASSERT_STATUS(st, mg_request_wait(req, 0));
    ASSERT_OK(mg_request_free(req));
  }
  teardown();
}

/* ---- callbacks ---- */

static _Atomic(pthread_t) main_thread;
static atomic_int chain_left;
static int64_t chain_in[2], chain_out[2];

static void chain_cb(mg_request_t *req, mg_status_t status, void *arg);

/* Submits the next all_reduce of rank r on its stream and records it, from inside a callback. */
static void chain_next(int r) {
  ASSERT_OK(mg_all_reduce(&chain_in[r], &chain_out[r], 1, MG_INT64, MG_SUM, comms[r], streams[r]));
  mg_request_t *next;
  ASSERT_OK(mg_record(comms[r], streams[r], &next));
  ASSERT_OK(mg_request_on_complete(next, chain_cb, (void *)(intptr_t)r));
}

static void chain_cb(mg_request_t *req, mg_status_t status, void *arg) {
  int r = (int)(intptr_t)arg;
  ASSERT_EQ(status, MG_OK);
  ASSERT(!pthread_equal(pthread_self(), atomic_load(&main_thread)));
  ASSERT_EQ(chain_out[r], 3);
  ASSERT_OK(mg_request_free(req));
  if (atomic_fetch_sub(&chain_left, 1) > 2) chain_next(r);
}

/* Runs on rank 0's worker: it must not wait for its own stream. */
static atomic_int worker_cb_ok;
static void worker_cb(mg_request_t *req, mg_status_t status, void *arg) {
  char name[32] = "";
  ASSERT_EQ(pthread_getname_np(pthread_self(), name, sizeof name), 0);
  ASSERT_STR_EQ(name, "mg-rank0");
  ASSERT_EQ(status, MG_OK);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_stream_sync(streams[0], 1));
  ASSERT_CONTAINS(mg_last_error(), "wait for itself");
  mg_request_t *next;
  ASSERT_OK(mg_record(comms[0], streams[0], &next)); /* queued behind this very marker */
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_wait(next, 0));
  ASSERT_OK(mg_request_free(next));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_destroy(comms[0]));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_finalize(comms[0]));
  ASSERT_OK(mg_request_free(req));
  atomic_store(&worker_cb_ok, 1);
}

static void test_callbacks(void) {
  setup(MG_COMPLETION_DEFAULT);
  atomic_store(&main_thread, pthread_self());
  /* Registered after completion: runs once, on a library thread. */
  atomic_store(&cb_calls, 0);
  mg_request_t *req;
  ASSERT_OK(mg_record(comms[0], NULL, &req));
  ASSERT_OK(mg_request_on_complete(req, count_cb, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_on_complete(req, count_cb, NULL));
  double t0 = mg__now();
  while (atomic_load(&cb_calls) == 0) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 5);
  }
  ASSERT_OK(mg_request_free(req));
  /* Detached while pending: the callback still runs once. */
  atomic_store(&cb_calls, 0);
  int64_t x = 1, y[2] = {0, 0};
  ASSERT_OK(mg_all_reduce(&x, &y[0], 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  ASSERT_OK(mg_record(comms[0], streams[0], &req));
  ASSERT_OK(mg_request_on_complete(req, count_cb, NULL));
  ASSERT_OK(mg_request_free(req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_free(req)); /* freed: nothing is touched */
  usleep(20000);
  ASSERT_EQ(atomic_load(&cb_calls), 0);
  ASSERT_OK(mg_all_reduce(&x, &y[1], 1, MG_INT64, MG_SUM, comms[1], NULL)); /* rank 1, directly */
  t0 = mg__now();
  while (atomic_load(&cb_calls) == 0) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 5);
  }
  usleep(20000);
  ASSERT_EQ(atomic_load(&cb_calls), 1);
  ASSERT_EQ(y[0], 2);
  /* A callback registered before its marker is reached runs on the worker itself. */
  ASSERT_OK(mg_all_reduce(&x, &y[0], 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  ASSERT_OK(mg_record(comms[0], streams[0], &req));
  ASSERT_OK(mg_request_on_complete(req, worker_cb, NULL));
  ASSERT_OK(mg_all_reduce(&x, &y[1], 1, MG_INT64, MG_SUM, comms[1], NULL));
  t0 = mg__now();
  while (!atomic_load(&worker_cb_ok)) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 5);
  }
  /* Callbacks that submit new work on their own stream, 50 rounds on each rank. */
  atomic_store(&chain_left, 100);
  for (int r = 0; r < 2; r++) chain_in[r] = r + 1;
  for (int r = 0; r < 2; r++) chain_next(r);
  t0 = mg__now();
  while (atomic_load(&chain_left) > 0) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 20);
  }
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_stream_sync(streams[r], 0));
  teardown();
}

static void test_misuse(void) {
  setup(MG_COMPLETION_DEFAULT);
  mg_request_t *req = NULL;
  mg_status_t st;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_wait(NULL, 0));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_test(NULL, &st));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_on_complete(NULL, count_cb, NULL));
  ASSERT_OK(mg_request_free(NULL));
  ASSERT_OK(mg_stream_destroy(NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_stream_sync(NULL, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_record(comms[0], NULL, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_record(NULL, NULL, &req));
  ASSERT(req == NULL);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_stream_create(comms[0], NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_stream(comms[0], NULL));
  mg_stream_t own = NULL; /* the host backend has none: NULL or host streams */
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_comm_stream(comms[0], &own));
  ASSERT(own == NULL);
  /* A stream of another communicator, and a pointer that is no host stream. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_record(comms[0], streams[1], &req));
  ASSERT(req == NULL);
  int64_t x = 1, y;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_all_reduce(&x, &y, 1, MG_INT64, MG_SUM, comms[0], streams[1]));
  ASSERT_CONTAINS(mg_last_error(), "another communicator");
  mg_stream_t fake = (mg_stream_t)&x;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(&x, &y, 1, MG_INT64, MG_SUM, comms[0], fake));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_record(comms[0], fake, &req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_stream_sync(fake, 0));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_stream_destroy(fake));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_stream_sync(streams[0], -1));
  ASSERT_OK(mg_record(comms[0], NULL, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_request_wait(req, -1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_request_test(req, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_request_on_complete(req, NULL, NULL));
  ASSERT_OK(mg_request_free(req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_free(req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_wait(req, 0));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_test(req, &st));
  /* Configs: the appended fields are checked. */
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  mg_comm_t *c[1];
  cfg.completion = (mg_completion_t)7;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_all(&cfg, 1, NULL, c));
  cfg.completion = MG_COMPLETION_DEFAULT;
  cfg.on_timeout = (mg_on_timeout_t)9;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_all(&cfg, 1, NULL, c));
  cfg.on_timeout = MG_ON_TIMEOUT_DEFAULT;
  cfg.trace_entries = -2;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_all(&cfg, 1, NULL, c));
  cfg.trace_entries = 0;
  cfg.poll_interval_s = -1;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_all(&cfg, 1, NULL, c));
  cfg.poll_interval_s = 0;
  cfg.trace_entries = -1; /* no recorder: a dump says so */
  ASSERT_OK(mg_comm_init_all(&cfg, 1, NULL, c));
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_comm_dump_trace(c[0], "/tmp"));
  ASSERT_OK(mg_comm_destroy(c[0]));
  teardown();
}

/* ---- concurrent ---- */

#define NREC 8
#define PER_THREAD 2000
static atomic_int done_count[NREC];

static void conc_cb(mg_request_t *req, mg_status_t status, void *arg) {
  ASSERT_EQ(status, MG_OK);
  atomic_fetch_add(&done_count[(intptr_t)arg], 1);
  ASSERT_OK(mg_request_free(req));
}

static void *recorder(void *arg) {
  intptr_t t = (intptr_t)arg;
  for (int i = 0; i < PER_THREAD; i++) {
    mg_request_t *req;
    ASSERT_OK(mg_record(comms[t & 1], streams[t & 1], &req));
    if (i % 3 == 0) {
      ASSERT_OK(mg_request_wait(req, 0));
      atomic_fetch_add(&done_count[t], 1);
      ASSERT_OK(mg_request_free(req));
    } else {
      ASSERT_OK(mg_request_on_complete(req, conc_cb, (void *)t));
    }
  }
  return NULL;
}

static void *feeder(void *arg) {
  intptr_t r = (intptr_t)arg;
  static int64_t in[2], out[2];
  for (int i = 0; i < 2000; i++)
    ASSERT_OK(mg_all_reduce(&in[r], &out[r], 1, MG_INT64, MG_SUM, comms[r], streams[r]));
  return NULL;
}

static void test_concurrent(void) {
  setup(MG_COMPLETION_DEFAULT);
  pthread_t th[NREC + 2];
  for (intptr_t t = 0; t < NREC; t++) pthread_create(&th[t], NULL, recorder, (void *)t);
  for (intptr_t r = 0; r < 2; r++) pthread_create(&th[NREC + r], NULL, feeder, (void *)r);
  for (int t = 0; t < NREC + 2; t++) pthread_join(th[t], NULL);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_stream_sync(streams[r], 0));
  double t0 = mg__now();
  for (int t = 0; t < NREC; t++) {
    while (atomic_load(&done_count[t]) < PER_THREAD) {
      usleep(1000);
      ASSERT_LT_F(mg__now() - t0, 30);
    }
  }
  usleep(50000);
  for (int t = 0; t < NREC; t++) ASSERT_EQ(atomic_load(&done_count[t]), PER_THREAD);
  teardown();
}

/* ---- elapsed ---- */

static void *late_peer(void *arg) {
  static int64_t in = 5, out;
  usleep((useconds_t)(uintptr_t)arg);
  ASSERT_OK(mg_all_reduce(&in, &out, 1, MG_INT64, MG_SUM, comms[1], streams[1]));
  return NULL;
}

static void test_elapsed(void) {
  setup(MG_COMPLETION_DEFAULT);
  double sec = -1;
  /* Stream NULL: the records themselves are the completions. */
  mg_request_t *a, *b;
  ASSERT_OK(mg_record_timed(comms[0], NULL, &a));
  usleep(20000);
  ASSERT_OK(mg_record_timed(comms[0], NULL, &b));
  ASSERT_OK(mg_request_wait(a, 0));
  ASSERT_OK(mg_request_wait(b, 0));
  ASSERT_OK(mg_request_elapsed(a, b, &sec));
  printf("  stream NULL, 20 ms apart: %.6f s\n", sec);
  ASSERT_IN_F(sec, 0.020, 1.0);
  ASSERT_OK(mg_request_elapsed(b, a, &sec));
  ASSERT_LE_F(sec, -0.020);
  ASSERT_OK(mg_request_free(a));
  ASSERT_OK(mg_request_free(b));

  /* A host stream: the all_reduce between the marks waits 50 ms for rank 1. */
  int64_t x = 1, y = 0;
  ASSERT_OK(mg_record_timed(comms[0], streams[0], &a));
  ASSERT_OK(mg_all_reduce(&x, &y, 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  ASSERT_OK(mg_record_timed(comms[0], streams[0], &b));
  /* b is pending until rank 1 comes: nothing is written, and it is not an error. */
  sec = -1;
  ASSERT_STATUS(MG_INPROGRESS, mg_request_elapsed(a, b, &sec));
  ASSERT(sec == -1);
  pthread_t th;
  ASSERT_EQ(pthread_create(&th, NULL, late_peer, (void *)(uintptr_t)50000), 0);
  ASSERT_OK(mg_request_wait(b, 0));
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_OK(mg_request_elapsed(a, b, &sec));
  printf("  host stream, an all_reduce that waits 50 ms for its peer: %.6f s\n", sec);
  ASSERT_IN_F(sec, 0.045, 2.0);
  ASSERT_EQ(y, 6);

  /* Misuse: each refused, nothing written. */
  mg_request_t *plain, *other;
  ASSERT_OK(mg_record(comms[0], streams[0], &plain));
  ASSERT_OK(mg_request_wait(plain, 0));
  ASSERT_OK(mg_record_timed(comms[1], NULL, &other));
  sec = -1;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_request_elapsed(a, plain, &sec));
  ASSERT_CONTAINS(mg_last_error(), "end was not made by mg_record_timed");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_request_elapsed(a, other, &sec));
  ASSERT_CONTAINS(mg_last_error(), "different communicators");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_request_elapsed(a, b, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_elapsed(NULL, b, &sec));
  ASSERT_OK(mg_request_free(plain));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_elapsed(a, plain, &sec)); /* freed */
  ASSERT(sec == -1);
  ASSERT_OK(mg_request_free(other));
  ASSERT_OK(mg_request_free(b));
  /* A request that the abort ended has no time. */
  ASSERT_OK(mg_all_reduce(&x, &y, 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  ASSERT_OK(mg_record_timed(comms[0], streams[0], &b)); /* rank 1 never comes */
  ASSERT_OK(mg_comm_abort(comms[0]));
  ASSERT_STATUS(MG_ERR_ABORTED, mg_request_wait(b, 0));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_elapsed(a, b, &sec));
  ASSERT_CONTAINS(mg_last_error(), "end ended with MG_ERR_ABORTED");
  ASSERT(sec == -1);
  ASSERT_OK(mg_request_free(a));
  ASSERT_OK(mg_request_free(b));
  teardown();
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s TEST", argv[0]);
  const char *t = argv[1];
  if (strcmp(t, "basics") == 0) test_basics();
  else if (strcmp(t, "strategy") == 0 && argc > 2) {
    mg_completion_t s = strcmp(argv[2], "poll") == 0   ? MG_COMPLETION_POLL
                        : strcmp(argv[2], "sync") == 0 ? MG_COMPLETION_SYNC
                                                       : MG_COMPLETION_HOSTFN;
    test_strategy(s);
  } else if (strcmp(t, "sticky") == 0) test_sticky();
  else if (strcmp(t, "callbacks") == 0) test_callbacks();
  else if (strcmp(t, "misuse") == 0) test_misuse();
  else if (strcmp(t, "concurrent") == 0) test_concurrent();
  else if (strcmp(t, "elapsed") == 0) test_elapsed();
  else FAIL("unknown test %s", t);
  printf("%s: ok\n", t);
  return 0;
}
