/*
 * host_root_stages.c -- the paths of 2 processes on which one rank copies everything fail like any
 * other when one of them dies in the middle, where process_vm_readv is fast:
 *  - broadcast: a broadcast that its root chose to stage (in place on the root, 32 MiB:
 *    host_coll.c, mg__root_stages) and its reader followed into the staged path. The rank named
 *    by the argument (root or reader) kills itself (SIGKILL, from a thread of its own that
 *    watches its posted counter) once it has posted the third of the collective's 32 steps; the
 *    root's buffer address was never published (the staged path ran).
 *  - reduce: a reduce of 256 KiB whose root reads the other's input (mg__root_reduce), its reads
 *    held for 500 ms (MGCOMM_FAULT=host.direct_read:1:500); the victim kills itself once it has
 *    posted the collective's one step, while the root waits to read. The other rank's send
 *    buffer address was published (the direct path ran).
 * The other rank returns MG_ERR_REMOTE within a few seconds (its deadline is 30 s away), naming
 * the dead rank and how it ended.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "base/clock.h"
#include "test.h"

#define COUNT (8u << 20) /* floats: 32 MiB, 32 steps of the 1 MiB slots */
#define REDUCE_COUNT (64u << 10) /* floats: 256 KiB, one direct step */

typedef struct {
  mg__hshm_t *s;
  uint64_t at; /* the posted counter that sets it off */
} watch_t;

static void *watch(void *p) {
  const watch_t *w = p;
  while (atomic_load(&w->s->ranks[w->s->me].posted) < w->at) sched_yield();
  raise(SIGKILL);
  return NULL;
}

static const mg_unique_id_t *uid;
static int victim, reduce;

static void run_rank(int rank, void *arg) {
  (void)arg;
  mg_comm_t *comm = test_host_comm(2, uid, rank, 30);
  float *buf = malloc(COUNT * sizeof *buf), *out = malloc(COUNT * sizeof *out);
  ASSERT(buf != NULL && out != NULL);
  memset(buf, 0, COUNT * sizeof *buf);
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  watch_t w = {s, atomic_load(&s->ranks[rank].posted) + (reduce ? 1 : 3)};
  pthread_t t;
  if (rank == victim) ASSERT_EQ(pthread_create(&t, NULL, watch, &w), 0);
  const double t0 = mg__now();
  const mg_status_t st =
      reduce ? mg_reduce(buf, out, REDUCE_COUNT, MG_FLOAT32, MG_SUM, 0, comm, NULL)
             : mg_broadcast(buf, rank == 0 ? buf : out, COUNT, MG_FLOAT32, 0, comm, NULL);
  const double dt = mg__now() - t0;
  ASSERT(rank != victim); /* the victim never gets here */
  printf("rank %d after %.3f s: %s: %s\n", rank, dt, mg_status_name(st), mg_last_error());
  ASSERT_EQ(st, MG_ERR_REMOTE);
  char want[64];
  snprintf(want, sizeof want, "rank %d (pid ", victim);
  ASSERT_CONTAINS(mg_last_error(), want);
  ASSERT_CONTAINS(mg_last_error(), "killed by signal 9");
  ASSERT_LT_F(dt, 5.0);
  if (reduce)
    ASSERT_NE(atomic_load(&s->ranks[1].daddr), 0);
  else
    ASSERT_EQ(atomic_load(&s->ranks[0].daddr), 0);
  ASSERT_OK(mg_comm_destroy(comm));
  free(buf);
  free(out);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || (strcmp(argv[1], "root") != 0 && strcmp(argv[1], "reader") != 0) ||
      (argc == 3 && strcmp(argv[2], "broadcast") != 0 && strcmp(argv[2], "reduce") != 0))
    FAIL("usage: host_root_stages root|reader (the rank that dies) [broadcast|reduce]");
  victim = strcmp(argv[1], "root") == 0 ? 0 : 1;
  reduce = argc == 3 && strcmp(argv[2], "reduce") == 0;
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  uid = &id;
  pid_t pids[2];
  test_fork_ranks(pids, 2, run_rank, NULL);
  test_wait_ranks(&pids[1 - victim], 1);
  test_wait_killed(pids[victim]);
  printf("host_root_stages: %s: the %s died; its peer failed naming it\n",
         reduce ? "reduce" : "broadcast", argv[1]);
  return 0;
}
