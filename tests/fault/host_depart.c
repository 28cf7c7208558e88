/*
 * host_depart.c -- on the host backend a rank whose operation has returned may leave at once:
 * destroy its communicator, finalize then destroy, or exit without either; no peer fails
 * because of it, and none reports the departure as an abort.
 *
 *   host_depart procs|threads <nranks> <rounds> destroy|finalize|exit|init
 *   host_depart launch destroy|finalize|exit|init      (one rank; under mgcomm launch)
 *
 * Each round is a job of nranks ranks (processes forked from this one, or threads of it) that
 * make a communicator and run three collectives, each result checked, then leave as asked:
 *   destroy   mg_comm_destroy right after the last collective returned;
 *   finalize  mg_comm_finalize, then mg_comm_destroy;
 *   exit      the process exits (procs, launch) or the thread returns (threads) without either;
 *   init      no collective: destroy right after init returned.
 * The last collective goes, round by round, through the transport's paths: a two-phase
 * all_reduce, an all_reduce small enough for the mails, and an all_gather that copies directly
 * from the peers' buffers (the registration shrinks the thresholds so that small buffers take
 * them). The last rank arrives 150 ms late at the last collective (at init in mode init, at
 * finalize in mode finalize), so that the others have waited long enough to be looking at their
 * peers' liveness while the first ranks to return leave, which they do at once. Every rank must
 * return MG_OK from every call and exit 0. In modes destroy and finalize, rank 0 then waits until
 * every other rank has destroyed its communicator, and mg_comm_async_error must still say MG_OK:
 * ranks that left break nothing by themselves. In modes procs and threads the test pins itself
 * to one core (its first allowed one), as a machine with far fewer cores than ranks.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define COUNT 1024   /* elements of the large collectives (floats) */
#define MAIL_COUNT 2 /* elements of the small one */
#define LATE_S 0.15  /* how late the last rank is */

enum { LEAVE_DESTROY, LEAVE_FINALIZE, LEAVE_EXIT, LEAVE_INIT };

typedef struct {
  const mg_unique_id_t *id;
  int nranks, rank, round, leave;
  atomic_int *left; /* ranks whose destroy returned (shared by the round's processes) */
} rank_arg_t;

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL); /* an early wake-up only makes the rank less late */
}

/* Fails the rank (its process, or the whole test for a thread) with the call's error. */
#define RANK_OK(call, rank)                                                                     \
  do {                                                                                          \
    mg_status_t st_ = (call);                                                                   \
    if (st_ != MG_OK)                                                                           \
      FAIL("rank %d: %s returned %s: %s", (rank), #call, mg_status_name(st_), mg_last_error()); \
  } while (0)

static void check_all_reduce(const float *buf, size_t count, int nranks, int rank, int seq) {
  /* Every rank r contributed (r + 1) * (i % 7 + 1) + seq: integers, so the sum is exact. */
  const float ranks_sum = (float)nranks * (float)(nranks + 1) / 2.0f;
  for (size_t i = 0; i < count; i++) {
    float want = ranks_sum * (float)(i % 7 + 1) + (float)(nranks * seq);
    if (buf[i] != want)
      FAIL("rank %d: all_reduce #%d: element %zu is %g, expected %g", rank, seq, i,
           (double)buf[i], (double)want);
  }
}

static void all_reduce(mg_comm_t *comm, size_t count, int nranks, int rank, int seq) {
  float *buf = malloc(count * sizeof *buf);
  ASSERT(buf != NULL);
  for (size_t i = 0; i < count; i++) buf[i] = (float)((rank + 1) * (int)(i % 7 + 1) + seq);
  RANK_OK(mg_all_reduce(buf, buf, count, MG_FLOAT32, MG_SUM, comm, NULL), rank);
  check_all_reduce(buf, count, nranks, rank, seq);
  free(buf);
}

static void all_gather(mg_comm_t *comm, int nranks, int rank) {
  float *send = malloc(COUNT * sizeof *send);
  float *recv = malloc((size_t)nranks * COUNT * sizeof *recv);
  ASSERT(send != NULL && recv != NULL);
  for (int i = 0; i < COUNT; i++) send[i] = (float)(rank * 2000 + i);
  RANK_OK(mg_all_gather(send, recv, COUNT, MG_FLOAT32, comm, NULL), rank);
  for (int r = 0; r < nranks; r++)
    for (int i = 0; i < COUNT; i++)
      if (recv[(size_t)r * COUNT + (size_t)i] != (float)(r * 2000 + i))
        FAIL("rank %d: all_gather: element %d of rank %d is %g, expected %d", rank, i, r,
             (double)recv[(size_t)r * COUNT + (size_t)i], r * 2000 + i);
  free(send);
  free(recv);
}

/* One rank of one round, from init to its departure. */
static void run_rank(const rank_arg_t *a, mg_comm_t *(*init)(const rank_arg_t *)) {
  const int late = a->rank == a->nranks - 1;
  if (late && a->leave == LEAVE_INIT) nap(LATE_S);
  mg_comm_t *comm = init(a);
  if (a->leave != LEAVE_INIT) {
    all_reduce(comm, COUNT, a->nranks, a->rank, 0);
    all_gather(comm, a->nranks, a->rank);
    if (late && a->leave != LEAVE_FINALIZE) nap(LATE_S);
    switch (a->round % 3) {
      case 0: all_reduce(comm, COUNT, a->nranks, a->rank, 2); break;
      case 1: all_reduce(comm, MAIL_COUNT, a->nranks, a->rank, 2); break;
      default: all_gather(comm, a->nranks, a->rank); break;
    }
  }
  if (a->leave == LEAVE_FINALIZE) {
    if (late) nap(LATE_S);
    RANK_OK(mg_comm_finalize(comm), a->rank);
  }
  if (a->rank == 0 && a->left != NULL &&
      (a->leave == LEAVE_DESTROY || a->leave == LEAVE_FINALIZE)) {
    for (int i = 0; atomic_load(a->left) < a->nranks - 1; i++) {
      if (i == 60000) FAIL("rank 0: the others did not all destroy within 60 s");
      nap(0.001);
    }
    mg_status_t async = MG_OK;
    RANK_OK(mg_comm_async_error(comm, &async), 0);
    if (async != MG_OK)
      FAIL("rank 0: every other rank destroyed its communicator after the last operation "
           "returned, and mg_comm_async_error says %s: %s", mg_status_name(async),
           mg_last_error());
  }
  if (a->leave != LEAVE_EXIT) {
    RANK_OK(mg_comm_destroy(comm), a->rank);
    if (a->left != NULL) atomic_fetch_add(a->left, 1);
  }
}

static mg_config_t config(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  return cfg;
}

static mg_comm_t *init_rank(const rank_arg_t *a) {
  mg_config_t cfg = config();
  mg_comm_t *comm = NULL;
  RANK_OK(mg_comm_init_rank(&cfg, a->nranks, a->id, a->rank, &comm), a->rank);
  return comm;
}

static mg_comm_t *init_env(const rank_arg_t *a) {
  mg_config_t cfg = config();
  mg_comm_t *comm = NULL;
  RANK_OK(mg_comm_init_env(&cfg, &comm), a->rank);
  return comm;
}

static void *thread_main(void *p) {
  run_rank(p, init_rank);
  return NULL;
}

static int parse_leave(const char *s) {
  if (strcmp(s, "destroy") == 0) return LEAVE_DESTROY;
  if (strcmp(s, "finalize") == 0) return LEAVE_FINALIZE;
  if (strcmp(s, "exit") == 0) return LEAVE_EXIT;
  if (strcmp(s, "init") == 0) return LEAVE_INIT;
  FAIL("unknown departure '%s' (destroy, finalize, exit or init)", s);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "launch") == 0) {
    const char *r = getenv("MGCOMM_RANK"), *n = getenv("MGCOMM_WORLD_SIZE");
    if (r == NULL || n == NULL) FAIL("launch: run under mgcomm launch");
    rank_arg_t a = {NULL, atoi(n), atoi(r), 0, parse_leave(argv[2]), NULL};
    run_rank(&a, init_env);
    return 0;
  }
  if (argc != 5)
    FAIL("usage: host_depart procs|threads <nranks> <rounds> destroy|finalize|exit|init");
  const int threads = strcmp(argv[1], "threads") == 0;
  const int nranks = atoi(argv[2]), rounds = atoi(argv[3]), leave = parse_leave(argv[4]);
  ASSERT(nranks >= 2 && rounds >= 1);
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &cpus)) continue;
    CPU_ZERO(&cpus);
    CPU_SET(c, &cpus);
    ASSERT_EQ(sched_setaffinity(0, sizeof cpus, &cpus), 0);
    break;
  }
  for (int round = 0; round < rounds; round++) {
    mg_unique_id_t id;
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
    rank_arg_t *args = calloc((size_t)nranks, sizeof *args);
    atomic_int *left = mmap(NULL, sizeof *left, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                            -1, 0);
    ASSERT(args != NULL && left != MAP_FAILED);
    atomic_init(left, 0);
    for (int r = 0; r < nranks; r++) args[r] = (rank_arg_t){&id, nranks, r, round, leave, left};
    if (threads) {
      pthread_t *t = calloc((size_t)nranks, sizeof *t);
      ASSERT(t != NULL);
      for (int r = 0; r < nranks; r++)
        ASSERT_EQ(pthread_create(&t[r], NULL, thread_main, &args[r]), 0);
      for (int r = 0; r < nranks; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
      free(t);
    } else {
      pid_t *pids = calloc((size_t)nranks, sizeof *pids);
      ASSERT(pids != NULL);
      fflush(NULL);
      for (int r = 0; r < nranks; r++) {
        pids[r] = fork();
        ASSERT(pids[r] >= 0);
        if (pids[r] == 0) {
          run_rank(&args[r], init_rank);
          _exit(0); /* at once: no destroy, no flush beyond what the rank printed */
        }
      }
      test_wait_ranks(pids, nranks);
      free(pids);
    }
    free(args);
    ASSERT_EQ(munmap(left, sizeof *left), 0);
  }
  printf("host_depart %s: %d rounds of %d ranks, each leaving by %s: all ok\n", argv[1], rounds,
         nranks, argv[4]);
  return 0;
}
