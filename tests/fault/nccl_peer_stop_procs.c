/*
 * nccl_peer_stop_procs.c -- a rank of the NCCL backend learns that a peer rank of ANOTHER
 * process stopped, through the progress published in the job's store (src/boot/progress.c), on
 * the simulated driver and NCCL (tests/sim/).
 *
 * The simulator meets the ranks of a communicator inside one process only, so the NCCL
 * communicator (both ranks) lives in the parent, and the child process plays rank 1 as the store
 * sees it: it publishes rank 1's progress under the communicator's tag, as mg_comm_init_env's
 * rank would, then stops. The parent's rank 0 is joined to the store as mg_comm_init_env joins
 * it, with the same peer_stopped hook (init_env.c: mg__bprog_stopped). The parent's rank 1 never
 * stops, so the table of this process (nccl_progress.c) reports nothing: what rank 0 learns, it
 * learns through the store.
 *
 *   nccl_peer_stop_procs abort   the child publishes "aborted" while it stays joined, and wakes
 *                                its publisher (as an abort's interrupt does): its interval is
 *                                5 s, so the stop arrives in time only through the wake
 *   nccl_peer_stop_procs leave   the child sets "aborted" and leaves at once (a destroy without
 *                                finalize): the stop is published at leave, and the key stays
 *                                after the child exited
 *   nccl_peer_stop_procs finalized  no false alarm: the child leaves without a stop (its key is
 *                                deleted); rank 0, idle, reports no error 0.5 s later
 * In the first two, rank 0 posts an all_reduce that never completes and waits for a request
 * after it (deadline 20 s), and the child stops 2 s later: the request must fail with
 * MG_ERR_REMOTE naming rank 1 "in another process" within 1.6 s of the child's stop (rank 0's
 * reading interval, 100 ms, plus the watchdog's 1 s grace for asynchronous errors, plus slack;
 * about 0.1 s is measured, the request's mark being queried already).
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "boot/progress.h"
#include "core/comm.h"
#include "loader/loader.h"
#include "test.h"

#define COUNT 4
#define DEADLINE 20.0
#define INTERVAL_MS 100        /* rank 0's publishing and reading */
#define CHILD_INTERVAL_MS 5000 /* the child's: longer than the test allows for a stop to arrive */
#define TOKEN "peer-stop-procs-token"

typedef struct {
  char address[128];
  uint64_t tag;
} hello_t;

/* ---- the child: rank 1 as the store sees it ----------------------------------------------- */

static atomic_int child_stop;

static mg_status_t child_own(void *ctx, mg__progress_t *out, int *stopped) {
  (void)ctx;
  const mg__progress_t p = {.enqueued1 = 1, .kind = MG_OPK_ALL_REDUCE, .dtype = MG_FLOAT32,
                            .count = COUNT, .root = -1};
  *out = p;
  *stopped = atomic_load(&child_stop);
  return MG_OK;
}

static int full_read(int fd, void *b, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, (char *)b + got, n - got);
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

/* how: 'a' publish a stop and wake, 'l' stop and leave, 'f' leave without a stop. */
static int child_main(int in, int out, char how) {
  hello_t h;
  if (full_read(in, &h, sizeof h) < 0) return 2;
  mg__bprog_t *p = NULL;
  if (mg__bprog_join(h.address, TOKEN, h.tag, 1, 2, CHILD_INTERVAL_MS, child_own, NULL, &p) < 0)
    return 3;
  /* Published and read for a while, then the parent posts its operation (it says when). */
  char go;
  if (full_read(in, &go, 1) < 0) return 4;
  struct timespec ts = {2, 0}; /* past the 1 s the wait itself takes to consult errors */
  nanosleep(&ts, NULL);
  if (how != 'f') atomic_store(&child_stop, MG__STOP_ABORT);
  const double t_stop = mg__now(); /* CLOCK_MONOTONIC: the parent's clock too */
  if (how != 'a') {
    mg__bprog_leave(p);
    p = NULL;
  } else {
    mg__bprog_wake();
  }
  if (write(out, &t_stop, sizeof t_stop) != (ssize_t)sizeof t_stop) return 5;
  if (full_read(in, &go, 1) < 0) return 6; /* the parent is done */
  mg__bprog_leave(p);
  return 0;
}

/* ---- the parent: the communicator ---------------------------------------------------------- */

static mg_status_t parent_own(void *ctx, mg__progress_t *out, int *stopped) {
  mg_comm_t *comm = ctx;
  *stopped = atomic_load(&comm->aborting);
  return comm->backend->peer_progress(comm, comm->rank, out);
}

static int parent_peer_stopped(void *state, int *rank, int *how) {
  return mg__bprog_stopped(state, rank, how);
}

static const mg__comm_ext_t parent_ext = {.peer_stopped = parent_peer_stopped};

/* Rank 0's all_reduce, which rank 1 never joins, and a request after it; the child stops; the
 * request must fail with MG_ERR_REMOTE naming rank 1 soon after. */
static void expect_told(mg_comm_t *comm, void *buf, int down, int up) {
  ASSERT_OK(mg_all_reduce(buf, buf, COUNT, MG_FLOAT32, MG_SUM, comm, NULL));
  mg_request_t *req = NULL;
  ASSERT_OK(mg_record(comm, NULL, &req));
  ASSERT_EQ(write(down, "g", 1), 1);
  mg_status_t st = mg_request_wait(req, 0);
  const double t_fail = mg__now();
  double t_stop = 0;
  ASSERT_EQ(full_read(up, &t_stop, sizeof t_stop), 0);
  printf("  rank 0: %s %.3f s after rank 1's process stopped: %s\n", mg_status_name(st),
         t_fail - t_stop, st == MG_OK ? "" : mg_last_error());
  ASSERT_EQ(st, MG_ERR_REMOTE);
  ASSERT_CONTAINS(mg_last_error(), "rank 1, in another process, aborted its communicator");
  ASSERT_LT_F(t_fail - t_stop, 1.6);
  ASSERT_OK(mg_request_free(req));
  mg_status_t async;
  ASSERT_OK(mg_comm_async_error(comm, &async));
  ASSERT_EQ(async, MG_ERR_REMOTE);
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comm, &state));
  ASSERT_EQ(state, MG_COMM_ERROR);
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "abort") != 0 && strcmp(argv[1], "leave") != 0 &&
                    strcmp(argv[1], "finalized") != 0))
    FAIL("usage: %s abort|leave|finalized", argv[0]);
  const char how = argv[1][0];
  int down[2], up[2];
  ASSERT_EQ(pipe(down), 0);
  ASSERT_EQ(pipe(up), 0);
  /* Forked before this process has threads. */
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    _exit(child_main(down[0], up[1], how));
  }
  close(down[0]);
  close(up[1]);

  int n = 0;
  if (mg_device_count(&n) != MG_OK || n < 2 || mg__load_nccl() != MG_OK) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    SKIP("the simulated driver or NCCL is not loaded");
  }
  mg_store_t *srv = NULL;
  hello_t h;
  memset(&h, 0, sizeof h);
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 10, &srv));
  ASSERT_OK(mg_store_address(srv, h.address, sizeof h.address));

  mg_comm_t *comms[2];
  void *buf[2];
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = DEADLINE;
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_mem_alloc(comms[r], COUNT * sizeof(float), &buf[r]));
  h.tag = comms[0]->backend->comm_tag(comms[0]);
  ASSERT_EQ(write(down[1], &h, sizeof h), (ssize_t)sizeof h);

  /* Rank 0 joined as mg_comm_init_env joins it, with its hook. */
  mg__bprog_t *p0 = NULL;
  ASSERT_OK(mg__bprog_join(h.address, TOKEN, h.tag, 0, 2, INTERVAL_MS, parent_own, comms[0],
                           &p0));
  comms[0]->ext_state = p0;
  comms[0]->ext = &parent_ext;

  if (how == 'f') {
    ASSERT_EQ(write(down[1], "g", 1), 1);
    double t_left = 0;
    ASSERT_EQ(full_read(up[0], &t_left, sizeof t_left), 0);
    struct timespec ts = {0, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    mg_status_t async;
    ASSERT_OK(mg_comm_async_error(comms[0], &async));
    ASSERT_EQ(async, MG_OK);
  } else {
    expect_told(comms[0], buf[0], down[1], up[0]);
  }

  ASSERT_EQ(write(down[1], "d", 1), 1);
  int wst = 0;
  ASSERT_EQ(waitpid(pid, &wst, 0), pid);
  ASSERT(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  comms[0]->ext = NULL;
  mg__bprog_leave(p0);
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_mem_free(buf[r]));
    ASSERT_OK(mg_comm_destroy(comms[r]));
  }
  ASSERT_OK(mg_store_close(srv));
  printf("nccl_peer_stop_procs %s: ok\n", argv[1]);
  return 0;
}
