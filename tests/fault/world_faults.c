/*
 * world_faults.c -- failures of requests, streams and the world on the host backend: each comes
 * back as a status on the right request, bounded in time, named, and recoverable.
 *
 *   world_faults never_submits | watchdog | watchdog_report | mismatch | count_mismatch |
 *                killed_rank | world_timeout | injected | comm_abort
 *
 * never_submits: rank 2 of 3 never enqueues all_reduce #1: the requests of ranks 0 and 1 fail with
 *   MG_ERR_TIMED_OUT within the deadline + 1 s, naming the operation and rank 2; they dumped their
 *   flight recorders into MGCOMM_TRACE_DIR; with rank 2's dump, `mgcomm trace` names #1 as the
 *   first divergence and rank 2 as the one that never enqueued it.
 * watchdog / watchdog_report: rank 0's worker is held by a long callback, so its queued
 *   all_reduce cannot even start: the watchdog ends the request at its deadline (+ its interval)
 *   with a message that names the operation and the ranks; the automatic dump is written. The
 *   abort policy aborts the comm (the peer's request fails naming rank 0); the report policy
 *   moves it to the error state with the timeout as its error and message.
 * mismatch / count_mismatch: rank 1 enqueues all_gather (or a different count) where the others
 *   enqueue all_reduce: every request fails within 2 s (no hang, no corruption: ASan), the
 *   message names the mismatch, and `mgcomm trace` names rank 1 and the operation; fresh
 *   communicators then give correct results.
 * killed_rank: process rank 2 of 3 is killed while the others wait on a host stream: their
 *   requests end with MG_ERR_REMOTE naming rank 2 within 2 s; they shrink to 2 ranks and get
 *   correct results on new streams.
 * world_timeout: a world request whose part cannot run (the worker is held by a callback) ends
 *   with MG_ERR_TIMED_OUT naming the rank; the world is aborted by the policy and refuses work;
 *   a rebuild while the worker is still held times out naming the rank that did not join; the
 *   next rebuild works and gives correct results.
 * injected: "host.fail" makes an operation fail inside the transport, "host.attach" makes a
 *   rebuild's communicator fail to attach: each comes back as the status of the right request
 *   (or of the rebuild), naming the rank; no request is lost; rebuild recovers.
 * comm_abort: mg_comm_abort from another thread while a host stream holds blocked and queued
 *   work: it returns at once, every pending request has ended with MG_ERR_ABORTED when it does.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "loader/fault.h"
#include "progress_wait.h"
#include "test.h"

#define MG_ERROR_BUF 1024

static mg_config_t config(double timeout) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout;
  return cfg;
}

static atomic_int holding; /* hold_cb has begun (the test resets it before each use) */

/* Waits until hold_cb holds a worker. */
static void wait_holding(void) {
  const double t0 = mg__now();
  while (!atomic_load(&holding)) {
    ASSERT_LT_F(mg__now() - t0, 10.0);
    usleep(1000);
  }
}

/* The flight-recorder folder the test was given (MGCOMM_TRACE_DIR), emptied. */
static const char *trace_dir(void) {
  const char *d = getenv("MGCOMM_TRACE_DIR");
  if (d == NULL || d[0] == '\0') SKIP("MGCOMM_TRACE_DIR is not set");
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", d, d);
  ASSERT_EQ(system(cmd), 0);
  return d;
}

static int count_dumps(const char *dir) {
  char cmd[1200], out[64] = "";
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '^mgcomm-trace-.*\\.json$'", dir);
  FILE *f = popen(cmd, "r");
  ASSERT(f != NULL);
  if (fgets(out, sizeof out, f) == NULL) out[0] = '\0';
  pclose(f);
  return atoi(out);
}

/* Runs `mgcomm trace dir` and returns its output (static). */
static const char *run_trace(const char *dir) {
  static char out[16384];
  const char *cli = getenv("MGCOMM");
  if (cli == NULL) SKIP("MGCOMM (the mgcomm command) is not set");
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "'%s' trace '%s' 2>&1", cli, dir);
  FILE *f = popen(cmd, "r");
  ASSERT(f != NULL);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  ASSERT_EQ(pclose(f), 0);
  printf("%s", out);
  return out;
}

static mg_comm_t *comms[3];
static mg_stream_t streams[3];

static void setup(int n, mg_config_t *cfg) {
  ASSERT_OK(mg_comm_init_all(cfg, n, NULL, comms));
  for (int r = 0; r < n; r++) ASSERT_OK(mg_stream_create(comms[r], &streams[r]));
}

static void teardown(int n) {
  for (int r = 0; r < n; r++) {
    ASSERT_OK(mg_stream_destroy(streams[r]));
    ASSERT_OK(mg_comm_destroy(comms[r]));
  }
}

/* ---- never_submits ---- */

static void test_never_submits(void) {
  const char *dir = trace_dir();
  mg_config_t cfg = config(1.0);
  /* Report, not abort: both requests expire within microseconds of each other, and an abort of
   * rank 0 by the first expiry would make rank 1's all_reduce fail (MG_ERR_REMOTE) before its
   * own request expires, which then finds nothing pending to name. test_watchdog covers the
   * abort policy. */
  cfg.on_timeout = MG_ON_TIMEOUT_REPORT;
  setup(3, &cfg);
  int64_t v[3] = {0, 1, 2}, g[3][3], out[3];
  for (int r = 0; r < 3; r++) /* #0 everywhere */
    ASSERT_OK(mg_all_gather(&v[r], g[r], 1, MG_INT64, comms[r], streams[r]));
  for (int r = 0; r < 3; r++) ASSERT_OK(mg_stream_sync(streams[r], 0));
  mg_request_t *req[2];
  double t0 = mg__now();
  for (int r = 0; r < 2; r++) { /* rank 2 withholds #1 */
    ASSERT_OK(mg_all_reduce(&v[r], &out[r], 1, MG_INT64, MG_SUM, comms[r], streams[r]));
    ASSERT_OK(mg_record(comms[r], streams[r], &req[r]));
  }
  for (int r = 0; r < 2; r++) {
    ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_request_wait(req[r], 0));
    const char *m = mg_last_error();
    ASSERT_CONTAINS(m, "all_reduce #1 (int64 x 1)");
    ASSERT_CONTAINS(m, "ranks 0,1 waiting");
    ASSERT_CONTAINS(m, "rank 2 last enqueued #0 (all_gather");
    ASSERT_OK(mg_request_free(req[r]));
  }
  double dt = mg__now() - t0;
  ASSERT_IN_F(dt, 0.9, 2.0);
  ASSERT_EQ(count_dumps(dir), 2); /* ranks 0 and 1, automatically */
  ASSERT_OK(mg_comm_dump_trace(comms[2], dir)); /* the silent rank, as its job would */
  const char *o = run_trace(dir);
  ASSERT_CONTAINS(o, "first divergence at collective #1: all_reduce (int64 x 1) enqueued by ranks 0,1");
  ASSERT_CONTAINS(o, "rank 2 never enqueued it; rank 2's last is #0 (all_gather)");
  /* Without rank 2's dump the others' view of it is enough. */
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm '%s'/*-r2.json", dir);
  ASSERT_EQ(system(cmd), 0);
  o = run_trace(dir);
  ASSERT_CONTAINS(o, "rank 2: no dump; the others saw it last enqueue #0 (all_gather)");
  ASSERT_CONTAINS(o, "rank 2 never enqueued it");
  teardown(3);
}

/* ---- watchdog ---- */

/* Holds the worker that runs it for arg microseconds; holding is 1 from its start. */
static void hold_cb(mg_request_t *req, mg_status_t status, void *arg) {
  atomic_store(&holding, 1);
  usleep((useconds_t)(uintptr_t)arg);
  ASSERT_OK(mg_request_free(req));
}

static void test_watchdog(mg_on_timeout_t policy) {
  const char *dir = trace_dir();
  mg_config_t cfg = config(1.0);
  cfg.on_timeout = policy;
  setup(2, &cfg);
  int64_t v[2] = {1, 2}, out[2];
  /* Hold rank 0's worker in a callback for 2.5 s: the callback is registered before its marker
   * can be reached (rank 0's first all_reduce waits for rank 1's). */
  ASSERT_OK(mg_all_reduce(&v[0], &out[0], 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  mg_request_t *hold;
  ASSERT_OK(mg_record(comms[0], streams[0], &hold));
  atomic_store(&holding, 0);
  ASSERT_OK(mg_request_on_complete(hold, hold_cb, (void *)(uintptr_t)2500000));
  ASSERT_OK(mg_all_reduce(&v[1], &out[1], 1, MG_INT64, MG_SUM, comms[1], NULL)); /* #0 */
  wait_holding(); /* rank 0's worker is now in the callback */
  double t0 = mg__now();
  mg_request_t *req[2];
  for (int r = 0; r < 2; r++) { /* #1: rank 0's cannot start before the callback returns */
    ASSERT_OK(mg_all_reduce(&v[r], &out[r], 1, MG_INT64, MG_SUM, comms[r], streams[r]));
    ASSERT_OK(mg_record(comms[r], streams[r], &req[r]));
  }
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_request_wait(req[0], 0));
  double dt = mg__now() - t0;
  ASSERT_IN_F(dt, 0.9, 2.0);
  const char *m = mg_last_error();
  ASSERT_CONTAINS(m, "mg_record on rank 0 of 2 timed out after 1 s waiting for all_reduce #1 "
                     "(int64 x 1): ranks 0,1 waiting");
  /* Rank 1's request: under abort its all_reduce notices that rank 0 aborted; under report it
   * times out on its own (rank 0's all_reduce never started). */
  mg_status_t st = mg_request_wait(req[1], 0);
  if (policy == MG_ON_TIMEOUT_ABORT) {
    ASSERT(st == MG_ERR_REMOTE || st == MG_ERR_TIMED_OUT);
    if (st == MG_ERR_REMOTE) ASSERT_CONTAINS(mg_last_error(), "rank 0 aborted");
  } else {
    ASSERT_EQ(st, MG_ERR_TIMED_OUT);
  }
  ASSERT_LT_F(mg__now() - t0, 2.0);
  mg_comm_state_t cs;
  ASSERT_OK(mg_comm_state(comms[0], &cs));
  ASSERT_EQ(cs, policy == MG_ON_TIMEOUT_ABORT ? MG_COMM_ABORTED : MG_COMM_ERROR);
  mg_status_t async;
  ASSERT_OK(mg_comm_async_error(comms[0], &async));
  ASSERT_EQ(async, policy == MG_ON_TIMEOUT_ABORT ? MG_ERR_ABORTED : MG_ERR_TIMED_OUT);
  if (policy == MG_ON_TIMEOUT_REPORT) { /* the comm's message is the timeout's */
    char msg[MG_ERROR_BUF];
    mg_comm_last_error(comms[0], msg, sizeof msg);
    ASSERT_CONTAINS(msg, "timed out after 1 s waiting for all_reduce #1");
  }
  ASSERT(count_dumps(dir) >= 1);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_request_free(req[r]));
  teardown(2); /* waits for the callback (the worker finishes its queue) */
}

/* ---- mismatch ---- */

static void test_mismatch(int counts) {
  const char *dir = trace_dir();
  mg_config_t cfg = config(20);
  setup(3, &cfg);
  int64_t v[3][2] = {{1, 1}, {2, 2}, {3, 3}}, out[3][6];
  mg_request_t *req[3];
  double t0 = mg__now();
  for (int r = 0; r < 3; r++) {
    if (r == 1 && !counts)
      ASSERT_OK(mg_all_gather(v[r], out[r], 1, MG_INT64, comms[r], streams[r]));
    else
      ASSERT_OK(mg_all_reduce(v[r], out[r], r == 1 ? 2 : 1, MG_INT64, MG_SUM, comms[r], streams[r]));
    ASSERT_OK(mg_record(comms[r], streams[r], &req[r]));
  }
  int named = 0;
  for (int r = 0; r < 3; r++) {
    mg_status_t st = mg_request_wait(req[r], 0);
    ASSERT(st == MG_ERR_INVALID_USAGE || st == MG_ERR_REMOTE);
    named += strstr(mg_last_error(), "mismatched collectives") != NULL;
    ASSERT_OK(mg_request_free(req[r]));
  }
  ASSERT(named >= 1);
  ASSERT_LT_F(mg__now() - t0, 2.0);
  for (int r = 0; r < 3; r++) ASSERT_OK(mg_comm_dump_trace(comms[r], dir));
  const char *o = run_trace(dir);
  ASSERT_CONTAINS(o, "first divergence at collective #0: all_reduce (int64 x 1) enqueued by ranks 0,2");
  ASSERT_CONTAINS(o, counts ? "rank 1 enqueued all_reduce (int64 x 2)"
                            : "rank 1 enqueued all_gather (int64 x 1)");
  teardown(3);
  /* Recovery: fresh communicators and streams give correct results. */
  setup(3, &cfg);
  for (int r = 0; r < 3; r++) {
    ASSERT_OK(mg_all_reduce(v[r], out[r], 2, MG_INT64, MG_SUM, comms[r], streams[r]));
    ASSERT_OK(mg_record(comms[r], streams[r], &req[r]));
  }
  for (int r = 0; r < 3; r++) {
    ASSERT_OK(mg_request_wait(req[r], 0));
    ASSERT_OK(mg_request_free(req[r]));
    ASSERT_EQ(out[r][0], 6);
    ASSERT_EQ(out[r][1], 6);
  }
  teardown(3);
}

/* ---- killed_rank ---- */

static void test_killed_rank(void) {
  mg_unique_id_t uid;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pids[3];
  for (int r = 0; r < 3; r++) {
    pids[r] = fork();
    ASSERT(pids[r] >= 0);
    if (pids[r] != 0) continue;
    mg_config_t cfg = config(60); /* far: the death must be seen through the process */
    mg_comm_t *comm;
    mg_stream_t s;
    ASSERT_OK(mg_comm_init_rank(&cfg, 3, &uid, r, &comm));
    ASSERT_OK(mg_stream_create(comm, &s));
    int64_t v = r, out;
    for (int i = 0; i < 9; i++) ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comm, s));
    ASSERT_OK(mg_stream_sync(s, 0));
    ASSERT_EQ(out, 3);
    if (r == 2) {
      test_wait_enqueued(comm, 2, 9); /* ranks 0 and 1 are in #9 */
      ASSERT_EQ(write(pipefd[1], "x", 1), 1); /* kill me now */
      pause();
      _exit(3);
    }
    ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comm, s)); /* #9: rank 2 never comes */
    mg_request_t *req;
    ASSERT_OK(mg_record(comm, s, &req));
    double t0 = mg__now();
    ASSERT_STATUS(MG_ERR_REMOTE, mg_request_wait(req, 0));
    ASSERT_CONTAINS(mg_last_error(), "rank 2 (pid ");
    ASSERT_CONTAINS(mg_last_error(), ") exited (");      /* and how, where it can be known */
    ASSERT_CONTAINS(mg_last_error(), ") during all_reduce #9 (int64 x 1)");
    ASSERT_LT_F(mg__now() - t0, 2.0);
    ASSERT_OK(mg_request_free(req));
    /* Recovery in the process: the survivors shrink and go on. */
    int dead = 2;
    mg_comm_t *two;
    ASSERT_OK(mg_comm_shrink(comm, &dead, 1, NULL, &two));
    mg_stream_t s2;
    ASSERT_OK(mg_stream_create(two, &s2));
    v = 10 + r;
    ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, two, s2));
    ASSERT_OK(mg_stream_sync(s2, 0));
    ASSERT_EQ(out, 21);
    ASSERT_OK(mg_stream_destroy(s2));
    ASSERT_OK(mg_stream_destroy(s));
    ASSERT_OK(mg_comm_destroy(two));
    ASSERT_OK(mg_comm_destroy(comm));
    _exit(0);
  }
  char ch;
  ASSERT_EQ(read(pipefd[0], &ch, 1), 1);
  ASSERT_EQ(kill(pids[2], SIGKILL), 0);
  test_wait_ranks(pids, 2);
  test_wait_killed(pids[2]);
}

/* ---- world_timeout ---- */

static void check_world_sum(mg_world_t *w, int n) {
  int64_t s[3], r[3];
  const void *sp[3];
  void *rp[3];
  for (int k = 0; k < n; k++) s[k] = k + 1, r[k] = 0, sp[k] = &s[k], rp[k] = &r[k];
  mg_request_t *req;
  ASSERT_OK(mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_OK(mg_request_wait(req, 0));
  ASSERT_OK(mg_request_free(req));
  for (int k = 0; k < n; k++) ASSERT_EQ(r[k], n * (n + 1) / 2);
}

static void test_world_timeout(void) {
  mg_config_t cfg = config(1.0);
  cfg.on_timeout = MG_ON_TIMEOUT_ABORT;
  mg_world_t *w;
  ASSERT_OK(mg_world_create(&cfg, 2, NULL, &w));
  check_world_sum(w, 2);
  /* A callback that holds the worker that completes its request for 4 s. */
  int64_t x[2] = {1, 1}, y[2];
  const void *xp[2] = {&x[0], &x[1]};
  void *yp[2] = {&y[0], &y[1]};
  mg_request_t *hold, *late;
  ASSERT_OK(mg_world_recv(w, 1, &y[1], 1, MG_INT64, 0, &hold));
  atomic_store(&holding, 0);
  ASSERT_OK(mg_request_on_complete(hold, hold_cb, (void *)(uintptr_t)4000000));
  ASSERT_OK(mg_world_send(w, 0, &x[0], 1, MG_INT64, 1, &late)); /* completes hold on worker 1 */
  ASSERT_OK(mg_request_wait(late, 0));
  ASSERT_OK(mg_request_free(late));
  wait_holding(); /* worker 1 is in the callback */
  double t0 = mg__now();
  ASSERT_OK(mg_world_all_reduce(w, xp, yp, 1, MG_INT64, MG_SUM, &late));
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_request_wait(late, 0));
  double dt = mg__now() - t0;
  ASSERT_IN_F(dt, 0.9, 2.0);
  ASSERT_CONTAINS(mg_last_error(), "mg_world_all_reduce (int64 x 1) timed out");
  ASSERT_CONTAINS(mg_last_error(), "rank 1 has not completed its part");
  ASSERT_OK(mg_request_free(late));
  /* The policy aborted the world. */
  mg_request_t *req = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(w, xp, yp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_CONTAINS(mg_last_error(), "aborted");
  /* Rebuilding while worker 1 is still held: rank 0's new communicator times out waiting for
   * rank 1, and the rebuild says so; once the callback has returned, a rebuild works. */
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_world_rebuild(w));
  ASSERT_CONTAINS(mg_last_error(), "rank 1 of 2 to join");
  ASSERT_OK(mg_world_rebuild(w));
  for (int i = 0; i < 5; i++) check_world_sum(w, 2);
  ASSERT_OK(mg_world_destroy(w));
}

/* ---- injected ---- */

static void test_injected(void) {
#ifndef MGCOMM_TESTING
  SKIP("fault injection is compiled into test builds only");
#else
  mg_config_t cfg = config(2.0);
  mg_world_t *w;
  ASSERT_OK(mg_world_create(&cfg, 3, NULL, &w));
  check_world_sum(w, 3);
  /* Every rank starts each operation once: call 5 is the second operation, on some rank. */
  ASSERT_OK(mg__fault_set("host.fail", 5, MG_ERR_BACKEND, 1));
  int64_t s[3] = {1, 2, 3}, r[3];
  const void *sp[3] = {&s[0], &s[1], &s[2]};
  void *rp[3] = {&r[0], &r[1], &r[2]};
  mg_request_t *req[4];
  mg_status_t st[4];
  for (int i = 0; i < 2; i++) {
    ASSERT_OK(mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &req[i]));
    st[i] = mg_request_wait(req[i], 0);
    if (i == 1) {
      ASSERT_EQ(st[i], MG_ERR_BACKEND);
      ASSERT_CONTAINS(mg_last_error(), "injected failure (fault point host.fail)");
      ASSERT_CONTAINS(mg_last_error(), "rank ");
    }
    ASSERT_OK(mg_request_free(req[i]));
  }
  ASSERT_EQ(st[0], MG_OK);
  ASSERT_EQ(mg__fault_fired("host.fail"), 1);
  mg__fault_clear("host.fail");
  /* The world is in the error state: refused until rebuilt. */
  mg_request_t *none = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &none));
  ASSERT_CONTAINS(mg_last_error(), "error state after MG_ERR_BACKEND");
  ASSERT_OK(mg_world_rebuild(w));
  check_world_sum(w, 3);
  /* A rebuild whose attach fails on one rank: the rebuild fails, naming it; the next works. */
  ASSERT_OK(mg__fault_set("host.attach", 1, MG_ERR_SYSTEM, 1));
  mg_status_t rs = mg_world_rebuild(w);
  ASSERT_EQ(rs, MG_ERR_SYSTEM);
  ASSERT_CONTAINS(mg_last_error(), "injected failure (fault point host.attach)");
  ASSERT_CONTAINS(mg_last_error(), "rank ");
  mg__fault_clear("host.attach");
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &none));
  ASSERT_OK(mg_world_rebuild(w));
  for (int i = 0; i < 5; i++) check_world_sum(w, 3);
  /* Host streams: the failure is the stream's sticky error, on the request after it. */
  mg_comm_t *c[2];
  mg_stream_t hs[2];
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, c));
  for (int k = 0; k < 2; k++) ASSERT_OK(mg_stream_create(c[k], &hs[k]));
  ASSERT_OK(mg__fault_set("host.fail", 1, MG_ERR_BACKEND, 1));
  mg_request_t *sr[2];
  for (int k = 0; k < 2; k++) {
    ASSERT_OK(mg_all_reduce(&s[k], &r[k], 1, MG_INT64, MG_SUM, c[k], hs[k]));
    ASSERT_OK(mg_record(c[k], hs[k], &sr[k]));
  }
  int backend = 0;
  for (int k = 0; k < 2; k++) {
    mg_status_t e = mg_request_wait(sr[k], 0);
    ASSERT(e == MG_ERR_BACKEND || e == MG_ERR_REMOTE);
    backend += e == MG_ERR_BACKEND;
    ASSERT_OK(mg_request_free(sr[k]));
  }
  ASSERT_EQ(backend, 1);
  mg__fault_clear(NULL);
  for (int k = 0; k < 2; k++) {
    ASSERT_OK(mg_stream_destroy(hs[k]));
    ASSERT_OK(mg_comm_destroy(c[k]));
  }
  ASSERT_OK(mg_world_destroy(w));
#endif
}

/* ---- comm_abort ---- */

static mg_comm_t *abort_me;

static void *abort_thread(void *arg) {
  usleep(200000);
  double t0 = mg__now();
  ASSERT_OK(mg_comm_abort(abort_me));
  ASSERT_LT_F(mg__now() - t0, 0.5);
  return NULL;
}

static void test_comm_abort(void) {
  mg_config_t cfg = config(30);
  setup(2, &cfg);
  int64_t v = 1, out[8];
  mg_request_t *req[8];
  for (int i = 0; i < 8; i++) { /* rank 1 never joins: the first blocks, the rest queue */
    ASSERT_OK(mg_all_reduce(&v, &out[i], 1, MG_INT64, MG_SUM, comms[0], streams[0]));
    ASSERT_OK(mg_record(comms[0], streams[0], &req[i]));
  }
  abort_me = comms[0];
  pthread_t th;
  pthread_create(&th, NULL, abort_thread, NULL);
  pthread_join(th, NULL);
  for (int i = 0; i < 8; i++) {
    mg_status_t st;
    ASSERT_OK(mg_request_test(req[i], &st));
    ASSERT_EQ(st, MG_ERR_ABORTED);
    ASSERT_OK(mg_request_free(req[i]));
  }
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(&v, &out[0], 1, MG_INT64, MG_SUM, comms[0], streams[0]));
  teardown(2);
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s TEST", argv[0]);
  const char *t = argv[1];
  if (strcmp(t, "never_submits") == 0) test_never_submits();
  else if (strcmp(t, "watchdog") == 0) test_watchdog(MG_ON_TIMEOUT_ABORT);
  else if (strcmp(t, "watchdog_report") == 0) test_watchdog(MG_ON_TIMEOUT_REPORT);
  else if (strcmp(t, "mismatch") == 0) test_mismatch(0);
  else if (strcmp(t, "count_mismatch") == 0) test_mismatch(1);
  else if (strcmp(t, "killed_rank") == 0) test_killed_rank();
  else if (strcmp(t, "world_timeout") == 0) test_world_timeout();
  else if (strcmp(t, "injected") == 0) test_injected();
  else if (strcmp(t, "comm_abort") == 0) test_comm_abort();
  else FAIL("unknown test %s", t);
  printf("%s: ok\n", t);
  return 0;
}
