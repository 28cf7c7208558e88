/*
 * bench_threads.c -- ranks as threads of this process (-t, the default): one communicator per
 * rank from one mg_comm_init_all, one thread per rank running the sweep (bench_rank.c).
 *
 * The threads meet at a pthread barrier and combine numbers through shared arrays (the team),
 * which never fail; all of them read one clock. Before a timed iteration they meet as processes
 * do, through the communicator (mg_bench_rank_comm_barrier), so that threads and processes are
 * timed alike. A thread that cannot start keeps the others from
 * starting (the gate), so that none waits for it at a barrier.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "bench.h"

typedef struct mg_bench_team {
  int n;
  pthread_barrier_t barrier;
  double **share;             /* per rank: the array it offers to a team reduction */
  /* The start gate: ranks wait until every thread exists (go = 1) or one could not be made
   * (go = -1: they leave at once). */
  pthread_mutex_t gate_lock;
  pthread_cond_t gate_cv;
  int go;
} mg_bench_team_t;

typedef struct mg_bench_thread {
  mg_bench_rank_t r;          /* first member: the rank layer's view */
  mg_bench_team_t *team;
  int status;                 /* the rank's exit status */
} mg_bench_thread_t;

static void mg_bench_team_wait(mg_bench_team_t *t) {
  /* Returns 0 or PTHREAD_BARRIER_SERIAL_THREAD; it cannot fail on an initialised barrier. */
  (void)pthread_barrier_wait(&t->barrier);
}

/* Rank 0 combines every rank's array into its own; the others copy the result. */
static int mg_bench_team_agree(mg_bench_part_t *p, double *v, size_t n, mg_op_t op) {
  mg_bench_thread_t *me = (mg_bench_thread_t *)p;
  mg_bench_team_t *t = me->team;
  const int rank = me->r.rank;
  t->share[rank] = v;
  mg_bench_team_wait(t);
  if (rank == 0)
    for (int q = 1; q < t->n; q++)
      for (size_t i = 0; i < n; i++)
        v[i] = op == MG_SUM ? v[i] + t->share[q][i] : fmax(v[i], t->share[q][i]);
  mg_bench_team_wait(t);
  if (rank != 0)
    for (size_t i = 0; i < n; i++) v[i] = t->share[0][i];
  mg_bench_team_wait(t);
  return 0;
}

static void *mg_bench_thread_main(void *arg) {
  mg_bench_thread_t *me = arg;
  mg_bench_team_t *t = me->team;
  pthread_mutex_lock(&t->gate_lock);
  while (t->go == 0) pthread_cond_wait(&t->gate_cv, &t->gate_lock);
  const int go = t->go;
  pthread_mutex_unlock(&t->gate_lock);
  if (go > 0) me->status = mg_bench_rank_run(&me->r);
  return NULL;
}

int mg_bench_run_threads(mg_bench_opts_t *o, mg_bench_report_t *rep) {
  o->one_clock = 1;
  mg_bench_team_t t = {.n = o->nranks, .gate_lock = PTHREAD_MUTEX_INITIALIZER,
                       .gate_cv = PTHREAD_COND_INITIALIZER};
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = o->backend;
  mg_comm_t **comms = calloc((size_t)t.n, sizeof *comms);
  t.share = calloc((size_t)t.n, sizeof *t.share);
  mg_bench_thread_t *ths = calloc((size_t)t.n, sizeof *ths);
  pthread_t *th = calloc((size_t)t.n, sizeof *th);
  int status = 1, started = 0;
  if (!comms || !t.share || !ths || !th) {
    fprintf(stderr, "mgcomm bench: out of memory\n");
    goto out;
  }
  mg_status_t st = mg_comm_init_all(&cfg, t.n, NULL, comms);
  if (st != MG_OK) {
    fprintf(stderr, "mgcomm bench: cannot create %d ranks on the %s backend: %s: %s\n", t.n,
            mg_backend_name(o->backend), mg_status_name(st), mg_last_error());
    goto out;
  }
  if (pthread_barrier_init(&t.barrier, NULL, (unsigned)t.n) != 0) {
    fprintf(stderr, "mgcomm bench: cannot create a barrier of %d threads\n", t.n);
    goto destroy;
  }
  for (; started < t.n; started++) {
    ths[started] = (mg_bench_thread_t){
        .r = {.part = {.o = o, .rep = started == 0 ? rep : NULL, .agree = mg_bench_team_agree},
              .mem = &mg_bench_mem_host, .comm = comms[started], .rank = started,
              .barrier = mg_bench_rank_comm_barrier},
        .team = &t};
    if (pthread_create(&th[started], NULL, mg_bench_thread_main, &ths[started]) != 0) break;
    char name[16];
    snprintf(name, sizeof name, "mg-bench%d", started);
    /* The name only helps a debugger; failing to set it changes nothing. */
    (void)pthread_setname_np(th[started], name);
  }
  pthread_mutex_lock(&t.gate_lock);
  t.go = started == t.n ? 1 : -1;
  pthread_cond_broadcast(&t.gate_cv);
  pthread_mutex_unlock(&t.gate_lock);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  if (started < t.n) {
    fprintf(stderr, "mgcomm bench: cannot start the thread of rank %d of %d\n", started, t.n);
  } else {
    status = 0;
    for (int i = 0; i < t.n; i++)
      if (ths[i].status > status) status = ths[i].status;
  }
  pthread_barrier_destroy(&t.barrier);
destroy:
  for (int i = 0; i < t.n; i++) {
    /* After a failure the communicators are in the error state; destroy aborts them, which is
     * what we want, and reports nothing we could act on. */
    (void)mg_comm_destroy(comms[i]);
  }
out:
  free(comms);
  free(t.share);
  free(ths);
  free(th);
  return status;
}
