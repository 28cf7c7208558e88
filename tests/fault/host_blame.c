/*
 * host_blame.c -- a failure is named by the rank that failed first, also on the direct path.
 *
 * Three process ranks run a direct all_gather (the registration lowers the direct threshold).
 * Rank 2 posts its buffer late and is killed at once (SIGKILL, by a thread of its own that
 * watches its posted counter); rank 1 fails reading rank 2's memory and exits; rank 0, stopped
 * (SIGSTOP) right after it posted, is continued only once rank 1 has exited. Rank 0 then finds
 * the collective failed by rank 1, or rank 1's memory gone; either way its error must name rank
 * 2, which died first, not rank 1, which failed because of it.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "test.h"

#define N 3
#define COUNT (4u << 20) /* floats per rank: 16 MiB, so that reading a peer takes a while */

typedef struct {
  mg_comm_t *comm;
  int sig;
  uint64_t before; /* the rank's posted counter before the collective */
} watch_t;

/* Sends this process sig as soon as its rank has posted the collective's step. */
static void *watch(void *p) {
  watch_t *w = p;
  mg__hshm_t *s = &mg__hcomm(w->comm)->shm;
  while (atomic_load(&s->ranks[s->me].posted) == w->before) sched_yield();
  raise(w->sig);
  return NULL;
}

static void run_rank(const mg_unique_id_t *id, int rank) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 30;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_rank(&cfg, N, id, rank, &comm));
  float *send = calloc(COUNT, sizeof *send), *recv = calloc((size_t)N * COUNT, sizeof *recv);
  ASSERT(send != NULL && recv != NULL);
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  watch_t w = {comm, rank == 2 ? SIGKILL : SIGSTOP, atomic_load(&s->ranks[rank].posted)};
  pthread_t t;
  if (rank != 1) ASSERT_EQ(pthread_create(&t, NULL, watch, &w), 0);
  if (rank == 2) {
    struct timespec ts = {0, 200000000}; /* late: the others wait for its post */
    nanosleep(&ts, NULL);
  }
  mg_status_t st = mg_all_gather(send, recv, COUNT, MG_FLOAT32, comm, NULL);
  printf("rank %d: %s: %s\n", rank, mg_status_name(st), mg_last_error());
  fflush(stdout);
  if (rank == 0) {
    ASSERT_EQ(st, MG_ERR_REMOTE);
    ASSERT_CONTAINS(mg_last_error(), "rank 2 (pid");
    if (strstr(mg_last_error(), "of rank 1") != NULL || strstr(mg_last_error(), "rank 1 failed"))
      FAIL("rank 0 blames rank 1: %s", mg_last_error());
  }
  _exit(st == MG_OK ? 0 : 1);
}

int main(void) {
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  pid_t pids[N];
  fflush(NULL);
  for (int r = 0; r < N; r++) {
    pids[r] = fork();
    ASSERT(pids[r] >= 0);
    if (pids[r] == 0) run_rank(&id, r);
  }
  test_wait_killed(pids[2]);
  int status = 0;
  ASSERT_EQ(waitpid(pids[1], &status, 0), pids[1]);
  ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  /* Rank 0 stopped itself after it posted; it reads the others once continued. */
  ASSERT_EQ(waitpid(pids[0], &status, WUNTRACED), pids[0]);
  ASSERT(WIFSTOPPED(status));
  ASSERT_EQ(kill(pids[0], SIGCONT), 0);
  ASSERT_EQ(waitpid(pids[0], &status, 0), pids[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) FAIL("rank 0 ended with 0x%x", status);
  printf("host_blame: rank 0 named the rank that died first\n");
  return 0;
}
