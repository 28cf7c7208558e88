/*
 * world.c -- the world on the host backend.
 *
 *   world ops | groups | callbacks | misuse | abort | stale | cause | exactly_once [threads ops]
 *
 * ops: every operation's world form on 3 ranks gives the single-rank results (in place too);
 *   queries, info and peer access; worker threads are named mg-rank<N>.
 * groups: a world group of sends and receives in a ring (and to self), nested groups, the
 *   MG_WORLD_GROUP scope, an error inside a group (nothing sent, the end returns it exactly
 *   once), an empty group, a group of another world.
 * callbacks: a callback runs once on a worker, may submit new world work and free its request;
 *   from a worker, waiting for a world request, rebuilding and destroying are refused.
 * misuse: NULL handles and arrays, a bad root naming the rank, custom ops, req NULL outside and
 *   non-NULL inside a group; none of them makes a request.
 * abort: a receive that never gets its send blocks rank 0's worker; more work queues behind it;
 *   mg_world_abort from another thread returns at once and every pending request has ended with
 *   MG_ERR_ABORTED when it returns; new work is refused; rebuild; correct results.
 * stale: requests of generation 1 answer MG_ERR_STALE after a rebuild (and after destroy), their
 *   callbacks having run once; generation 2 works.
 * cause: when a rank fails, its peers fail with MG_ERR_REMOTE about it, and either may be
 *   recorded first: the world's error state (and a batch's error, by the same rule) keeps the
 *   failing rank's own error and message, whichever order they came in; otherwise the first.
 * exactly_once: T threads submit N world all_reduces each, concurrently, alternating wait,
 *   test loops, callbacks and early frees; every request completes once, no callback twice, the
 *   results are right.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"
#include "world/world.h"

#define N 3

static mg_world_t *make_world(int n, double timeout) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout;
  mg_world_t *w = NULL;
  ASSERT_OK(mg_world_create(&cfg, n, NULL, &w));
  ASSERT(w != NULL);
  return w;
}

static void wait_ok(mg_request_t *req) {
  ASSERT_OK(mg_request_wait(req, 0));
  ASSERT_OK(mg_request_free(req));
}

/* ---- ops ---- */

static void test_ops(void) {
  mg_world_t *w = make_world(N, 20);
  int v;
  uint64_t g;
  ASSERT_OK(mg_world_size(w, &v));
  ASSERT_EQ(v, N);
  ASSERT_OK(mg_world_generation(w, &g));
  ASSERT_EQ(g, 1);
  mg_world_info_t info;
  ASSERT_OK(mg_world_info(w, &info));
  ASSERT_EQ(info.backend, MG_BACKEND_HOST);
  ASSERT_EQ(info.nranks, N);
  ASSERT_EQ(info.nccl_version, 0);
  ASSERT_STR_EQ(info.nccl_version_string, "");
  ASSERT_OK(mg_world_can_access_peer(w, 0, 2, &v));
  ASSERT_EQ(v, 1);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_can_access_peer(w, 0, N, &v));

  int64_t s[N][4 * N], r[N][4 * N];
  const void *sp[N];
  void *rp[N];
  for (int k = 0; k < N; k++) {
    for (int i = 0; i < 4 * N; i++) s[k][i] = 100 * (k + 1) + i, r[k][i] = -1;
    sp[k] = s[k];
    rp[k] = r[k];
  }
  mg_request_t *req;
  /* all_reduce */
  ASSERT_OK(mg_world_all_reduce(w, sp, rp, 4, MG_INT64, MG_SUM, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++)
    for (int i = 0; i < 4; i++) ASSERT_EQ(r[k][i], 600 + 3 * i);
  /* all_reduce in place */
  for (int k = 0; k < N; k++) r[k][0] = k + 1;
  ASSERT_OK(mg_world_all_reduce(w, (const void *const *)rp, rp, 1, MG_INT64, MG_MAX, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++) ASSERT_EQ(r[k][0], N);
  /* broadcast from 1 */
  ASSERT_OK(mg_world_broadcast(w, sp, rp, 4, MG_INT64, 1, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++)
    for (int i = 0; i < 4; i++) ASSERT_EQ(r[k][i], 200 + i);
  /* reduce to 2 */
  for (int k = 0; k < N; k++) r[k][0] = -1;
  ASSERT_OK(mg_world_reduce(w, sp, rp, 2, MG_INT64, MG_SUM, 2, &req));
  wait_ok(req);
  ASSERT_EQ(r[2][0], 600);
  ASSERT_EQ(r[0][0], -1);
  /* all_gather */
  ASSERT_OK(mg_world_all_gather(w, sp, rp, 2, MG_INT64, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++)
    for (int q = 0; q < N; q++) ASSERT_EQ(r[k][2 * q + 1], 100 * (q + 1) + 1);
  /* reduce_scatter */
  ASSERT_OK(mg_world_reduce_scatter(w, sp, rp, 1, MG_INT64, MG_SUM, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++) ASSERT_EQ(r[k][0], 600 + 3 * k);
  /* all_to_all */
  ASSERT_OK(mg_world_all_to_all(w, sp, rp, 1, MG_INT64, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++)
    for (int q = 0; q < N; q++) ASSERT_EQ(r[k][q], 100 * (q + 1) + k);
  /* all_to_allv: rank k sends q+1 elements to rank q */
  size_t sc[N][N], sd[N][N], rc[N][N], rd[N][N];
  const size_t *scp[N], *sdp[N], *rcp[N], *rdp[N];
  for (int k = 0; k < N; k++) {
    size_t so = 0, ro = 0;
    for (int q = 0; q < N; q++) {
      sc[k][q] = (size_t)q + 1, sd[k][q] = so, so += sc[k][q];
      rc[k][q] = (size_t)k + 1, rd[k][q] = ro, ro += rc[k][q];
    }
    scp[k] = sc[k], sdp[k] = sd[k], rcp[k] = rc[k], rdp[k] = rd[k];
  }
  ASSERT_OK(mg_world_all_to_allv(w, sp, scp, sdp, rp, rcp, rdp, MG_INT64, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++)
    for (int q = 0; q < N; q++)
      for (size_t e = 0; e < rc[k][q]; e++)
        ASSERT_EQ(r[k][rd[k][q] + e], s[q][sd[q][k] + e]);
  /* gather to 0, scatter from 2 */
  ASSERT_OK(mg_world_gather(w, sp, rp, 1, MG_INT64, 0, &req));
  wait_ok(req);
  for (int q = 0; q < N; q++) ASSERT_EQ(r[0][q], 100 * (q + 1));
  ASSERT_OK(mg_world_scatter(w, sp, rp, 2, MG_INT64, 2, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++) ASSERT_EQ(r[k][1], 301 + 2 * k);
  /* send/recv as two world calls, receive first */
  mg_request_t *rq, *sq;
  ASSERT_OK(mg_world_recv(w, 2, r[2], 3, MG_INT64, 0, &rq));
  ASSERT_OK(mg_world_send(w, 0, s[0], 3, MG_INT64, 2, &sq));
  wait_ok(sq);
  wait_ok(rq);
  for (int i = 0; i < 3; i++) ASSERT_EQ(r[2][i], 100 + i);
  /* The workers are named. */
  char cmd[128], out[256] = "";
  snprintf(cmd, sizeof cmd, "cat /proc/%d/task/*/comm | grep -c '^mg-rank[0-2]$'", (int)getpid());
  FILE *f = popen(cmd, "r");
  ASSERT(f != NULL);
  ASSERT(fgets(out, sizeof out, f) != NULL);
  pclose(f);
  ASSERT_EQ(atoi(out), N);
  ASSERT_OK(mg_world_destroy(w));
  ASSERT_OK(mg_world_destroy(NULL));
}

/* ---- groups ---- */

static void test_groups(void) {
  mg_world_t *w = make_world(N, 20), *other = make_world(2, 20);
  int64_t s[N][2], r[N][2];
  for (int k = 0; k < N; k++) s[k][0] = k, s[k][1] = 10 + k, r[k][0] = r[k][1] = -1;
  /* A ring plus a send to self, as one group; nested groups are one batch. */
  mg_request_t *req = NULL;
  ASSERT_OK(mg_world_group_begin(w));
  ASSERT_OK(mg_world_group_begin(w));
  for (int k = 0; k < N; k++) {
    ASSERT_OK(mg_world_send(w, k, &s[k][0], 1, MG_INT64, (k + 1) % N, NULL));
    ASSERT_OK(mg_world_recv(w, k, &r[k][0], 1, MG_INT64, (k + N - 1) % N, NULL));
  }
  ASSERT_OK(mg_world_group_end(w, NULL)); /* inner: nothing yet */
  ASSERT_OK(mg_world_send(w, 1, &s[1][1], 1, MG_INT64, 1, NULL));
  ASSERT_OK(mg_world_recv(w, 1, &r[1][1], 1, MG_INT64, 1, NULL));
  ASSERT_OK(mg_world_group_end(w, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++) ASSERT_EQ(r[k][0], (k + N - 1) % N);
  ASSERT_EQ(r[1][1], 11);
  /* The scope helper. */
  mg_status_t st;
  req = NULL;
  MG_WORLD_GROUP(w, &req, st) {
    ASSERT_OK(mg_world_send(w, 0, &s[0][1], 1, MG_INT64, 2, NULL));
    ASSERT_OK(mg_world_recv(w, 2, &r[2][1], 1, MG_INT64, 0, NULL));
  }
  ASSERT_OK(st);
  wait_ok(req);
  ASSERT_EQ(r[2][1], 10);
  /* An error inside: the scope still ends the group once, nothing is sent, st is the error. */
  req = NULL;
  r[2][1] = -1;
  MG_WORLD_GROUP(w, &req, st) {
    ASSERT_OK(mg_world_send(w, 0, &s[0][1], 1, MG_INT64, 2, NULL));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_recv(w, 2, NULL, 1, MG_INT64, 0, NULL));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_send(w, 7, &s[0][1], 1, MG_INT64, 2, NULL));
  }
  ASSERT_EQ(st, MG_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(mg_last_error(), "nothing was sent");
  ASSERT_CONTAINS(mg_last_error(), "rank 2");
  ASSERT(req == NULL);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_group_end(w, &req)); /* closed exactly once */
  usleep(50000);
  ASSERT_EQ(r[2][1], -1);
  /* Empty group: an already complete request. */
  ASSERT_OK(mg_world_group_begin(w));
  ASSERT_OK(mg_world_group_end(w, &req));
  mg_status_t rs;
  ASSERT_OK(mg_request_test(req, &rs));
  ASSERT_EQ(rs, MG_OK);
  ASSERT_OK(mg_request_free(req));
  /* Of another world; req NULL at the outermost end discards the group. */
  ASSERT_OK(mg_world_group_begin(w));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_group_begin(other));
  int64_t a[2] = {1, 2}, b[2];
  const void *ap[2] = {&a[0], &a[1]};
  void *bp[2] = {&b[0], &b[1]};
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(other, ap, bp, 1, MG_INT64, MG_SUM, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_group_end(other, &req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_group_end(w, NULL)); /* the error inside */
  ASSERT_OK(mg_world_group_begin(w));
  ASSERT_OK(mg_world_send(w, 0, &s[0][1], 1, MG_INT64, 0, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_group_end(w, NULL));
  /* The other world still works. */
  ASSERT_OK(mg_world_all_reduce(other, ap, bp, 1, MG_INT64, MG_SUM, &req));
  wait_ok(req);
  ASSERT_EQ(b[0], 3);
  ASSERT_OK(mg_world_destroy(other));
  ASSERT_OK(mg_world_destroy(w));
}

/* ---- callbacks ---- */

static mg_world_t *cw;
static atomic_int cb_runs, cb_left;
static int64_t cin[N], cout[N];
static const void *cinp[N];
static void *coutp[N];

static void chain(void);

static void world_cb(mg_request_t *req, mg_status_t status, void *arg) {
  ASSERT_EQ(status, MG_OK);
  atomic_fetch_add(&cb_runs, 1);
  for (int k = 0; k < N; k++) ASSERT_EQ(cout[k], 3); /* 0 + 1 + 2 */
  char name[32] = "";
  pthread_getname_np(pthread_self(), name, sizeof name);
  if (strncmp(name, "mg-rank", 7) == 0) {
    /* On a worker of the world: waiting for world work, rebuild and destroy would deadlock. */
    mg_request_t *next;
    ASSERT_OK(mg_world_all_reduce(cw, cinp, coutp, 1, MG_INT64, MG_SUM, &next));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_request_wait(next, 0));
    ASSERT_CONTAINS(mg_last_error(), "wait for itself");
    ASSERT_OK(mg_request_free(next));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_rebuild(cw));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_destroy(cw));
  }
  ASSERT_OK(mg_request_free(req));
  if (atomic_fetch_sub(&cb_left, 1) > 1) chain();
}

static void chain(void) {
  mg_request_t *req;
  ASSERT_OK(mg_world_all_reduce(cw, cinp, coutp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_OK(mg_request_on_complete(req, world_cb, NULL));
}

static void test_callbacks(void) {
  cw = make_world(N, 20);
  for (int k = 0; k < N; k++) cin[k] = k, cinp[k] = &cin[k], coutp[k] = &cout[k];
  atomic_store(&cb_left, 200);
  chain();
  double t0 = mg__now();
  while (atomic_load(&cb_left) > 0) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 30);
  }
  usleep(50000);
  ASSERT_EQ(atomic_load(&cb_runs), 200);
  ASSERT_OK(mg_world_destroy(cw));
}

/* ---- misuse ---- */

static void test_misuse(void) {
  mg_world_t *w = make_world(N, 20);
  int64_t s[N], r[N];
  const void *sp[N];
  void *rp[N];
  for (int k = 0; k < N; k++) sp[k] = &s[k], rp[k] = &r[k];
  mg_request_t *req = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_create(NULL, 2, NULL, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_create(NULL, 0, NULL, &w));
  mg_config_t bad = MG_CONFIG_INIT;
  bad.size = 3;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_create(&bad, 2, NULL, &w));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(NULL, sp, rp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce((mg_world_t *)&s, sp, rp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_all_reduce(w, NULL, rp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_all_reduce(w, sp, rp, 1, MG_INT64, (mg_op_t)7, &req));
  ASSERT_CONTAINS(mg_last_error(), "built-in");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_broadcast(w, sp, rp, 1, MG_INT64, N, &req));
  ASSERT_CONTAINS(mg_last_error(), "mg_world_broadcast: rank 0: root 3 is out of [0, 3)");
  rp[1] = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_CONTAINS(mg_last_error(), "rank 1: recv is NULL");
  rp[1] = &r[1];
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_all_to_allv(w, sp, NULL, NULL, rp, NULL, NULL, MG_INT64, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_send(w, -1, &s[0], 1, MG_INT64, 1, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_recv(w, 0, &r[0], 1, MG_INT64, 5, &req));
  ASSERT(req == NULL);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_group_end(w, &req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_abort(NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_rebuild(NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_size(w, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_dump_trace(w, NULL));
  /* Still fine afterwards. */
  for (int k = 0; k < N; k++) s[k] = 1;
  ASSERT_OK(mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &req));
  wait_ok(req);
  ASSERT_EQ(r[2], N);
  ASSERT_OK(mg_world_destroy(w));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_destroy(w));
}

/* ---- abort ---- */

static mg_world_t *aw;

static void *aborter(void *arg) {
  usleep(200000);
  double t0 = mg__now();
  ASSERT_OK(mg_world_abort(aw));
  ASSERT_LT_F(mg__now() - t0, 0.5);
  return NULL;
}

static atomic_int aborted_cbs;
static void aborted_cb(mg_request_t *req, mg_status_t status, void *arg) {
  ASSERT_EQ(status, MG_ERR_ABORTED);
  atomic_fetch_add(&aborted_cbs, 1);
  ASSERT_OK(mg_request_free(req));
}

static void check_sum(mg_world_t *w) {
  int64_t s[N], r[N];
  const void *sp[N];
  void *rp[N];
  for (int k = 0; k < N; k++) s[k] = k + 1, r[k] = 0, sp[k] = &s[k], rp[k] = &r[k];
  mg_request_t *req;
  ASSERT_OK(mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &req));
  wait_ok(req);
  for (int k = 0; k < N; k++) ASSERT_EQ(r[k], 6);
}

static void test_abort(void) {
  aw = make_world(N, 30);
  int64_t x = 0, s[N], r[N];
  const void *sp[N];
  void *rp[N];
  for (int k = 0; k < N; k++) sp[k] = &s[k], rp[k] = &r[k];
  mg_request_t *blocked, *queued[5];
  ASSERT_OK(mg_world_recv(aw, 0, &x, 1, MG_INT64, 1, &blocked)); /* no send ever comes */
  for (int i = 0; i < 5; i++) {
    ASSERT_OK(mg_world_all_reduce(aw, sp, rp, 1, MG_INT64, MG_SUM, &queued[i]));
    if (i % 2) ASSERT_OK(mg_request_on_complete(queued[i], aborted_cb, NULL));
  }
  pthread_t th;
  pthread_create(&th, NULL, aborter, NULL);
  double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_ABORTED, mg_request_wait(blocked, 0));
  ASSERT_LT_F(mg__now() - t0, 1.0);
  pthread_join(th, NULL);
  /* Every pending request ended when abort returned: test says so at once. */
  for (int i = 0; i < 5; i += 2) { /* the odd ones are freed by their callbacks */
    mg_status_t st;
    ASSERT_OK(mg_request_test(queued[i], &st));
    ASSERT_EQ(st, MG_ERR_ABORTED);
    ASSERT_CONTAINS(mg_last_error(), "the world was aborted");
    ASSERT_OK(mg_request_free(queued[i]));
  }
  ASSERT_OK(mg_request_free(blocked));
  t0 = mg__now();
  while (atomic_load(&aborted_cbs) < 2) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 5);
  }
  mg_request_t *req = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(aw, sp, rp, 1, MG_INT64, MG_SUM, &req));
  ASSERT_CONTAINS(mg_last_error(), "aborted");
  ASSERT_OK(mg_world_abort(aw)); /* again: fine */
  ASSERT_OK(mg_world_rebuild(aw));
  uint64_t g;
  ASSERT_OK(mg_world_generation(aw, &g));
  ASSERT_EQ(g, 2);
  for (int i = 0; i < 10; i++) check_sum(aw);
  ASSERT_OK(mg_world_destroy(aw));
}

/* ---- stale ---- */

static atomic_int stale_cbs;
static void stale_cb(mg_request_t *req, mg_status_t status, void *arg) {
  atomic_fetch_add(&stale_cbs, 1);
  ASSERT(status == MG_OK || status == MG_ERR_ABORTED);
}

static void test_stale(void) {
  mg_world_t *w = make_world(N, 20);
  int64_t x = 0;
  mg_request_t *done, *pending;
  int64_t s[N], r[N];
  const void *sp[N];
  void *rp[N];
  for (int k = 0; k < N; k++) s[k] = 1, sp[k] = &s[k], rp[k] = &r[k];
  ASSERT_OK(mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &done));
  ASSERT_OK(mg_request_wait(done, 0));
  ASSERT_OK(mg_request_on_complete(done, stale_cb, NULL));
  ASSERT_OK(mg_world_recv(w, 1, &x, 1, MG_INT64, 2, &pending));
  ASSERT_OK(mg_request_on_complete(pending, stale_cb, NULL));
  ASSERT_OK(mg_world_rebuild(w));
  mg_status_t st;
  ASSERT_STATUS(MG_ERR_STALE, mg_request_wait(done, 0));
  ASSERT_CONTAINS(mg_last_error(), "generation 1");
  ASSERT_STATUS(MG_ERR_STALE, mg_request_test(pending, &st));
  ASSERT_STATUS(MG_ERR_STALE, mg_request_on_complete(pending, stale_cb, NULL));
  double t0 = mg__now();
  while (atomic_load(&stale_cbs) < 2) {
    usleep(1000);
    ASSERT_LT_F(mg__now() - t0, 5);
  }
  ASSERT_OK(mg_request_free(done));
  ASSERT_OK(mg_request_free(pending));
  check_sum(w);
  mg_request_t *gen2;
  ASSERT_OK(mg_world_recv(w, 1, &x, 1, MG_INT64, 2, &gen2));
  ASSERT_OK(mg_world_destroy(w));
  ASSERT_STATUS(MG_ERR_STALE, mg_request_wait(gen2, 0));
  ASSERT_CONTAINS(mg_last_error(), "destroyed");
  ASSERT_OK(mg_request_free(gen2));
  usleep(50000);
  ASSERT_EQ(atomic_load(&stale_cbs), 2);
}

/* ---- cause ---- */

/* Records failures on a new world in the order given; its refusal then names the one kept. */
static void cause_case(mg_status_t first, const char *first_msg, mg_status_t second,
                       const char *second_msg, const char *kept) {
  mg_world_t *w = make_world(N, 20);
  mg__world_part_failed(w, first, first_msg);
  mg__world_part_failed(w, second, second_msg);
  int64_t x = 1, y[N];
  const void *xp[N] = {&x, &x, &x};
  void *yp[N] = {&y[0], &y[1], &y[2]};
  mg_request_t *none = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_all_reduce(w, xp, yp, 1, MG_INT64, MG_SUM, &none));
  ASSERT(none == NULL);
  ASSERT_CONTAINS(mg_last_error(), kept);
  ASSERT_OK(mg_world_rebuild(w));
  check_sum(w);
  ASSERT_OK(mg_world_destroy(w));
}

static void test_cause(void) {
  ASSERT(!mg__world_cause(MG_OK, MG_OK));
  ASSERT(mg__world_cause(MG_OK, MG_ERR_REMOTE));
  ASSERT(mg__world_cause(MG_ERR_REMOTE, MG_ERR_BACKEND));
  ASSERT(!mg__world_cause(MG_ERR_REMOTE, MG_ERR_REMOTE));
  ASSERT(!mg__world_cause(MG_ERR_BACKEND, MG_ERR_REMOTE));
  ASSERT(!mg__world_cause(MG_ERR_TIMED_OUT, MG_ERR_BACKEND));
  const char *remote = "rank 0: a remote rank failed: rank 1 failed the operation";
  const char *own = "rank 1: injected failure";
  cause_case(MG_ERR_REMOTE, remote, MG_ERR_BACKEND, own, "after MG_ERR_BACKEND (rank 1: inj");
  cause_case(MG_ERR_BACKEND, own, MG_ERR_REMOTE, remote, "after MG_ERR_BACKEND (rank 1: inj");
  cause_case(MG_ERR_TIMED_OUT, "rank 0: timed out", MG_ERR_BACKEND, own,
             "after MG_ERR_TIMED_OUT (rank 0: timed out)");
  /* An error that does not break a communicator leaves the world ready. */
  mg_world_t *w = make_world(N, 20);
  mg__world_part_failed(w, MG_ERR_INVALID_ARGUMENT, "rank 0: bad count");
  check_sum(w);
  ASSERT_OK(mg_world_destroy(w));
}

/* ---- exactly once ---- */

static mg_world_t *ew;
static int eops;
static atomic_int *ecount; /* per request: callback or wait completions */
static atomic_int ecb_total;

typedef struct {
  int t;
  int64_t s[N], r[N];
} eslot_t;

/* arg: the request's number * 2, + 1 when the callback frees the request. */
static void exact_cb(mg_request_t *req, mg_status_t status, void *arg) {
  ASSERT_EQ(status, MG_OK);
  intptr_t a = (intptr_t)arg;
  ASSERT_EQ(atomic_fetch_add(&ecount[a >> 1], 1), 0);
  atomic_fetch_add(&ecb_total, 1);
  if (a & 1) ASSERT_OK(mg_request_free(req));
}

#define EW 2 /* ranks of the exactly-once world */

static void *exact_thread(void *arg) {
  eslot_t *sl = arg;
  const void *sp[EW];
  void *rp[EW];
  for (int k = 0; k < EW; k++) sp[k] = &sl->s[k], rp[k] = &sl->r[k];
  for (int i = 0; i < eops; i++) {
    intptr_t id = (intptr_t)sl->t * eops + i;
    for (int k = 0; k < EW; k++) sl->s[k] = id + k, sl->r[k] = -1;
    mg_request_t *req;
    ASSERT_OK(mg_world_all_reduce(ew, sp, rp, 1, MG_INT64, MG_SUM, &req));
    switch (i % 4) {
      case 0:
        ASSERT_OK(mg_request_wait(req, 0));
        ASSERT_EQ(atomic_fetch_add(&ecount[id], 1), 0);
        ASSERT_OK(mg_request_free(req));
        break;
      case 1: {
        mg_status_t st = MG_INPROGRESS;
        while (st == MG_INPROGRESS) ASSERT_OK(mg_request_test(req, &st));
        ASSERT_EQ(st, MG_OK);
        ASSERT_EQ(atomic_fetch_add(&ecount[id], 1), 0);
        ASSERT_OK(mg_request_free(req));
        break;
      }
      case 2: /* the callback frees it: not touched here any more */
        ASSERT_OK(mg_request_on_complete(req, exact_cb, (void *)(id * 2 + 1)));
        break;
      default: /* freed before completion: detached, the callback still runs once */
        ASSERT_OK(mg_request_on_complete(req, exact_cb, (void *)(id * 2)));
        ASSERT_OK(mg_request_free(req));
        break;
    }
    if (i % 4 >= 2) { /* the buffers are reused: this one must be done first */
      double t0 = mg__now();
      while (atomic_load(&ecount[id]) == 0) {
        sched_yield();
        ASSERT_LT_F(mg__now() - t0, 30);
      }
    }
    for (int k = 0; k < EW; k++) ASSERT_EQ(sl->r[k], 2 * id + 1);
  }
  return NULL;
}

static void test_exactly_once(int threads, int ops) {
  ew = make_world(EW, 60);
  eops = ops;
  ecount = calloc((size_t)threads * (size_t)ops, sizeof *ecount);
  eslot_t *slots = calloc((size_t)threads, sizeof *slots);
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  double t0 = mg__now();
  for (int t = 0; t < threads; t++) {
    slots[t].t = t;
    pthread_create(&th[t], NULL, exact_thread, &slots[t]);
  }
  for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
  usleep(100000);
  for (long i = 0; i < (long)threads * ops; i++) ASSERT_EQ(atomic_load(&ecount[i]), 1);
  printf("exactly_once: %d threads x %d world all_reduces in %.2f s, %d callbacks\n", threads,
         ops, mg__now() - t0, atomic_load(&ecb_total));
  ASSERT_OK(mg_world_destroy(ew));
  free(ecount);
  free(slots);
  free(th);
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s TEST", argv[0]);
  const char *t = argv[1];
  if (strcmp(t, "ops") == 0) test_ops();
  else if (strcmp(t, "groups") == 0) test_groups();
  else if (strcmp(t, "callbacks") == 0) test_callbacks();
  else if (strcmp(t, "misuse") == 0) test_misuse();
  else if (strcmp(t, "abort") == 0) test_abort();
  else if (strcmp(t, "stale") == 0) test_stale();
  else if (strcmp(t, "cause") == 0) test_cause();
  else if (strcmp(t, "exactly_once") == 0)
    test_exactly_once(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atoi(argv[3]) : 10000);
  else FAIL("unknown test %s", t);
  printf("%s: ok\n", t);
  return 0;
}
