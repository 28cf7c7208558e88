/*
 * test_host_faults.c -- nothing blocks forever on the host backend (contracts 3 and 4).
 *
 *   test_host_faults init_timeout | coll_timeout | killed_rank | exited_rank | abort_blocked |
 *                    revoke_blocked
 *
 * init_timeout: rank 2 of 3 never arrives: the others get MG_ERR_TIMED_OUT within the deadline +
 *   1 s, naming rank 2; the segment has no name left (in /dev/shm, or its meeting socket).
 * coll_timeout: rank 2 never calls the all_reduce: ranks 0 and 1 get MG_ERR_TIMED_OUT within the
 *   deadline + 1 s, the message names the operation, the waiting ranks and what rank 2 did last.
 * killed_rank: process rank 2 is killed while ranks 0 and 1 wait in an all_reduce (with a long
 *   deadline): they get MG_ERR_REMOTE within a second, naming rank 2, its pid, how it ended
 *   (SIGKILL: it is a zombie until the parent reaps it, after the others) and the operation.
 * exited_rank: process rank 2 ends after an all_reduce without destroying its communicator,
 *   through exit(), _exit(7) or SIGTERM: its peers name it, its pid and how it ended; after
 *   exit() it left (their asynchronous error stays MG_OK), otherwise it is their asynchronous
 *   error.
 * abort_blocked: a thread aborts a communicator while another thread is blocked in it: the
 *   blocked call returns MG_ERR_ABORTED at once and abort returns; the peer then fails with
 *   MG_ERR_REMOTE naming the aborted rank.
 * revoke_blocked: ranks 0 and 1 of 3 wait in an all_reduce that rank 2 withholds; another thread
 *   revokes rank 0: its call returns MG_ERR_ABORTED ("revoked") at once, rank 1's fails with
 *   MG_ERR_REMOTE naming rank 0, rank 0 refuses new work and finalize but not shrink; ranks 0
 *   and 1 shrink without rank 2 and their all_reduce is right.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "base/clock.h"
#include "core/trace.h"
#include "progress_wait.h"
#include "test.h"

static mg_unique_id_t uid;

/* 1 when the segment of id still has a name: a file in /dev/shm, or its meeting socket in the
 * abstract namespace (/proc/net/unix lists it as @mgcomm-<hex>). */
static int segment_linked(const mg_unique_id_t *id) {
  const mg__hid_t *h = (const mg__hid_t *)id->internal;
  char path[128], line[512];
  snprintf(path, sizeof path, "/dev/shm%s", h->name);
  if (access(path, F_OK) == 0) return 1;
  FILE *f = fopen("/proc/net/unix", "r");
  ASSERT(f != NULL);
  int found = 0;
  while (!found && fgets(line, sizeof line, f) != NULL) {
    char *at = strchr(line, '@');
    found = at != NULL && strncmp(at + 1, h->name + 1, strlen(h->name + 1)) == 0;
  }
  fclose(f);
  return found;
}

static mg_config_t config(double timeout) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout;
  return cfg;
}

/* ---- init_timeout ---- */
static void *init_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  mg_config_t cfg = config(1.0);
  mg_comm_t *comm = NULL;
  double t0 = mg__now();
  mg_status_t st = mg_comm_init_rank(&cfg, 3, &uid, r, &comm);
  double dt = mg__now() - t0;
  ASSERT_EQ(st, MG_ERR_TIMED_OUT);
  ASSERT(comm == NULL);
  ASSERT_CONTAINS(mg_last_error(), "rank 2 of 3");
  ASSERT_IN_F(dt, 0.9, 2.0);
  return NULL;
}

static void test_init_timeout(void) {
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
  pthread_t t[2];
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, init_thread, (void *)(intptr_t)r);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  ASSERT(!segment_linked(&uid));
}

/* ---- coll_timeout ---- */
static mg_comm_t *comms[3];

static void *coll_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  int64_t v = r, out;
  ASSERT_OK(mg_all_gather(&v, (int64_t[3]){0}, 1, MG_INT64, comms[r], NULL)); /* #0, everyone */
  if (r == 2) return NULL; /* withholds #1 */
  double t0 = mg__now();
  mg_status_t st = mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comms[r], NULL);
  double dt = mg__now() - t0;
  ASSERT_EQ(st, MG_ERR_TIMED_OUT);
  const char *m = mg_last_error();
  ASSERT_CONTAINS(m, "all_reduce #1 (int64 x 1)");
  ASSERT_CONTAINS(m, "ranks 0,1 waiting");
  ASSERT_CONTAINS(m, "rank 2 last enqueued #0 (all_gather int64 x 1)");
  ASSERT_IN_F(dt, 0.9, 2.0);
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comms[r], &state));
  ASSERT_EQ(state, MG_COMM_ERROR);
  return NULL;
}

static void test_coll_timeout(void) {
  mg_config_t cfg = config(1.0);
  ASSERT_OK(mg_comm_init_all(&cfg, 3, NULL, comms));
  pthread_t t[3];
  for (int r = 0; r < 3; r++) pthread_create(&t[r], NULL, coll_thread, (void *)(intptr_t)r);
  for (int r = 0; r < 3; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < 3; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

/* ---- killed_rank ---- */
static void test_killed_rank(void) {
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pids[3];
  for (int r = 0; r < 3; r++) {
    pids[r] = fork();
    ASSERT(pids[r] >= 0);
    if (pids[r] != 0) continue;
    mg_config_t cfg = config(60); /* far away: the failure must be seen through the process */
    mg_comm_t *comm;
    ASSERT_OK(mg_comm_init_rank(&cfg, 3, &uid, r, &comm));
    int64_t v = r, out;
    for (int i = 0; i < 17; i++) ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comm, NULL));
    if (r == 2) {
      test_wait_enqueued(comm, 2, 17); /* ranks 0 and 1 are in #17 */
      ASSERT_EQ(write(pipefd[1], "x", 1), 1); /* tell the parent to kill me now */
      pause();
      _exit(3);
    }
    double t0 = mg__now();
    mg_status_t st = mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comm, NULL); /* #17 */
    double dt = mg__now() - t0;
    ASSERT_EQ(st, MG_ERR_REMOTE);
    ASSERT_CONTAINS(mg_last_error(), "rank 2 (pid ");
    ASSERT_CONTAINS(mg_last_error(), ") exited (killed by signal 9, Killed) during all_reduce #17 "
                                     "(int64 x 1)");
    ASSERT_LT_F(dt, 1.5); /* includes the parent's reaction to the pipe */
    ASSERT_OK(mg_comm_destroy(comm));
    _exit(0);
  }
  char ch;
  ASSERT_EQ(read(pipefd[0], &ch, 1), 1);
  ASSERT_EQ(kill(pids[2], SIGKILL), 0);
  /* Rank 2 is not reaped before the others finished: a zombie must also count as dead. */
  test_wait_ranks(pids, 2);
  test_wait_killed(pids[2]);
  ASSERT(!segment_linked(&uid));
}

/* ---- exited_rank ---- */
/* Waits until process pid has ended (a zombie, or gone): 10 s at most. */
static void wait_ended(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  for (int i = 0; i < 10000; i++) {
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    if (p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X')) return;
    usleep(1000);
  }
  FAIL("pid %d never ended", (int)pid);
}

/* Rank 2 of 3 ends after one all_reduce without destroying its communicator: through exit(0),
 * through _exit(7), or killed by SIGTERM. Ranks 0 and 1 wait until its process has ended (it
 * stays a zombie until they are done). Rank 0's asynchronous error is MG_OK after exit() (a rank
 * that exits leaves, as one that destroys), else MG_ERR_REMOTE saying how it ended; rank 1's
 * next all_reduce fails naming rank 2, its pid and how it ended. */
static void test_exited_rank(void) {
  static const char *const how[3] = {"exit", "_exit", "term"};
  for (int mode = 0; mode < 3; mode++) {
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
    pid_t pids[3];
    for (int r = 0; r < 3; r++) {
      pids[r] = fork();
      ASSERT(pids[r] >= 0);
      if (pids[r] != 0) continue;
      mg_config_t cfg = config(60); /* far away: the end must be seen through the process */
      mg_comm_t *comm;
      ASSERT_OK(mg_comm_init_rank(&cfg, 3, &uid, r, &comm));
      int64_t v = r, out;
      ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comm, NULL)); /* #0 */
      if (r == 2) {
        if (mode == 0) exit(0);
        if (mode == 1) _exit(7);
        raise(SIGTERM);
        _exit(99); /* not reached */
      }
      pid_t pid2 = (pid_t)atomic_load(&mg__hcomm(comm)->shm.ranks[2].pid);
      wait_ended(pid2);
      char ended[128];
      if (mode == 0)
        snprintf(ended, sizeof ended, "rank 2 (pid %d) exited (exit() without mg_comm_destroy)",
                 (int)pid2);
      else if (mode == 1)
        snprintf(ended, sizeof ended, "rank 2 (pid %d) exited (_exit(7) without mg_comm_destroy)",
                 (int)pid2);
      else
        snprintf(ended, sizeof ended, "rank 2 (pid %d) exited (killed by signal 15, %s)",
                 (int)pid2, strsignal(SIGTERM));
      if (r == 0) { /* its asynchronous error; it stays until rank 1 is done */
        mg_status_t async = MG_OK;
        ASSERT_OK(mg_comm_async_error(comm, &async));
        if (mode == 0) {
          ASSERT_EQ(async, MG_OK);
        } else {
          ASSERT_EQ(async, MG_ERR_REMOTE);
          ASSERT_CONTAINS(mg_last_error(), ended);
        }
        wait_ended((pid_t)atomic_load(&mg__hcomm(comm)->shm.ranks[1].pid));
      } else { /* an operation that needs rank 2 (rank 0, alive, is not in it either) */
        mg_status_t st = mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comm, NULL); /* #1 */
        if (st != MG_ERR_REMOTE) FAIL("all_reduce #1: %s: %s", mg_status_name(st), mg_last_error());
        ASSERT_CONTAINS(mg_last_error(), ended);
        ASSERT_CONTAINS(mg_last_error(), " during all_reduce #1 (int64 x 1)");
      }
      ASSERT_OK(mg_comm_destroy(comm));
      _exit(0);
    }
    test_wait_ranks(pids, 2);
    int status;
    ASSERT_EQ(waitpid(pids[2], &status, 0), pids[2]);
    printf("rank 2 ended by %s: named as such\n", how[mode]);
  }
}

/* ---- abort_blocked ---- */
static void *blocked_thread(void *arg) {
  mg_comm_t *comm = arg;
  float v = 1, out;
  double t0 = mg__now();
  mg_status_t st = mg_all_reduce(&v, &out, 1, MG_FLOAT32, MG_SUM, comm, NULL);
  ASSERT_EQ(st, MG_ERR_ABORTED);
  ASSERT_LT_F(mg__now() - t0, 2.0);
  return NULL;
}

static void test_abort_blocked(void) {
  mg_config_t cfg = config(30);
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  pthread_t t;
  pthread_create(&t, NULL, blocked_thread, comms[0]); /* rank 1 never joins the all_reduce */
  test_wait_enqueued(comms[0], 1, 0);
  double t0 = mg__now();
  ASSERT_OK(mg_comm_abort(comms[0]));
  double dt = mg__now() - t0;
  ASSERT_LT_F(dt, 0.5);
  pthread_join(t, NULL);
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comms[0], &state));
  ASSERT_EQ(state, MG_COMM_ABORTED);
  mg_status_t async;
  ASSERT_OK(mg_comm_async_error(comms[0], &async));
  ASSERT_EQ(async, MG_ERR_ABORTED);
  /* The peer: rank 0 had posted its input before it was aborted, so the pending all_reduce may
   * still complete; the next one fails at once, naming the aborted rank. */
  float v = 1, out;
  mg_status_t st = mg_all_reduce(&v, &out, 1, MG_FLOAT32, MG_SUM, comms[1], NULL);
  ASSERT(st == MG_OK || st == MG_ERR_REMOTE);
  if (st == MG_OK) {
    t0 = mg__now();
    ASSERT_STATUS(MG_ERR_REMOTE, mg_all_reduce(&v, &out, 1, MG_FLOAT32, MG_SUM, comms[1], NULL));
    ASSERT_LT_F(mg__now() - t0, 1.0);
  }
  ASSERT_CONTAINS(mg_last_error(), "rank 0 aborted");
  /* What a request expiring now on rank 1 would say: nothing pending, and why. */
  char where[512];
  mg__trace_describe(comms[1], where, sizeof where);
  ASSERT_CONTAINS(where, "rank 1 of 2 has no operation pending; its last operation, all_reduce #");
  ASSERT_CONTAINS(where, "failed with MG_ERR_REMOTE");
  ASSERT_OK(mg_comm_destroy(comms[0]));
  ASSERT_OK(mg_comm_destroy(comms[1]));
}

/* ---- revoke_blocked ---- */
static mg_status_t revoke_st[2];
static double revoke_dt[2];
static mg_comm_t *shrunk[2];

static void *revoked_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  int64_t v = r + 1, out = 0;
  double t0 = mg__now();
  revoke_st[r] = mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comms[r], NULL);
  revoke_dt[r] = mg__now() - t0;
  if (revoke_st[r] == MG_ERR_ABORTED) ASSERT_CONTAINS(mg_last_error(), "revoked");
  if (revoke_st[r] == MG_ERR_REMOTE) ASSERT_CONTAINS(mg_last_error(), "rank 0 aborted");
  return NULL;
}

static void *shrink_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  const int gone = 2;
  mg_status_t st = mg_comm_shrink(comms[r], &gone, 1, NULL, &shrunk[r]);
  if (st != MG_OK) FAIL("rank %d: mg_comm_shrink: %s: %s", r, mg_status_name(st), mg_last_error());
  int64_t v = r + 1, out = 0;
  ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, shrunk[r], NULL));
  ASSERT_EQ(out, 3);
  return NULL;
}

static void test_revoke_blocked(void) {
  mg_config_t cfg = config(30);
  ASSERT_OK(mg_comm_init_all(&cfg, 3, NULL, comms));
  pthread_t t[2];
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, revoked_thread, (void *)(intptr_t)r);
  test_wait_enqueued(comms[0], 2, 0); /* both wait for rank 2 */
  double t0 = mg__now();
  ASSERT_OK(mg_comm_revoke(comms[0]));
  ASSERT_LT_F(mg__now() - t0, 0.5);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  ASSERT_EQ(revoke_st[0], MG_ERR_ABORTED);
  ASSERT_EQ(revoke_st[1], MG_ERR_REMOTE);
  ASSERT_LT_F(revoke_dt[0], 1.0);
  ASSERT_LT_F(revoke_dt[1], 1.5);
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comms[0], &state));
  ASSERT_EQ(state, MG_COMM_ERROR);
  mg_status_t async;
  ASSERT_OK(mg_comm_async_error(comms[0], &async));
  ASSERT_EQ(async, MG_ERR_ABORTED);
  ASSERT_OK(mg_comm_revoke(comms[0])); /* a second revoke */
  int64_t v = 1, out;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, comms[0], NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_finalize(comms[0]));
  /* The survivors go on without rank 2, which drops out. */
  ASSERT_OK(mg_comm_abort(comms[2]));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_revoke(comms[2]));
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, shrink_thread, (void *)(intptr_t)r);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(shrunk[r]));
  for (int r = 0; r < 3; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_revoke(NULL));
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s TEST", argv[0]);
  const char *t = argv[1];
  if (strcmp(t, "init_timeout") == 0) test_init_timeout();
  else if (strcmp(t, "coll_timeout") == 0) test_coll_timeout();
  else if (strcmp(t, "killed_rank") == 0) test_killed_rank();
  else if (strcmp(t, "exited_rank") == 0) test_exited_rank();
  else if (strcmp(t, "abort_blocked") == 0) test_abort_blocked();
  else if (strcmp(t, "revoke_blocked") == 0) test_revoke_blocked();
  else FAIL("unknown test %s", t);
  printf("%s: ok\n", t);
  return 0;
}
