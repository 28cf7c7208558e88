/*
 * mpi_paired.c -- Open MPI and mgcomm's host backend timed in turn inside one MPI program, for
 * issue 22's target (bench/host_vs_mpi.sh -I 1). On the 2-CPU development VM a program's speed
 * moves by up to 1.7x within seconds (the two virtual CPUs' cache-line round trip goes from
 * ~0.13 to ~0.5 us and back), so separate programs alternated by a script cannot resolve 10% at
 * 8 B; here both libraries run on the same processes and buffers within milliseconds of each
 * other, and the ratio is taken per turn.
 *
 * usage: mpirun -np N mpi_paired [-c coll[,coll...]] [-b min] [-e max] [-f factor] [-n iters]
 *                                [-w warmup] [-T turns] [-B 0|1] [-S 0|1] [-t 0|1] [-P 0|1]
 *                                [--inplace 0|1|both]
 * Collectives (-c, default the first four; "all": every one): all_reduce, all_gather,
 * reduce_scatter, broadcast, all_to_all, reduce, gather, scatter, sendrecv (to the next rank,
 * from the one before; mgcomm's a send and a receive in one group), all_to_allv (every count
 * alike, so the same data as all_to_all), float32, sum, root 0, sizes as mgcomm bench and
 * nccl-tests count them; all_to_all, all_to_allv and sendrecv have no in-place form. Per
 * size and placement, T turns (default 5), each timing
 * one library's loop and then the other's, the first alternating; a loop is w untimed and n timed
 * iterations, each timed one after MPI_Barrier, from the last rank's start to the last rank's end;
 * its time is the median iteration (-B 1: see loop()). Before the first size, untimed turns of
 * it for 0.2 s (settle()). The buffers come from malloc, as a user's
 * do (mgcomm bench's are page-aligned), which is how this program found the host backend's slow
 * copies into them (src/backend/host/host_copy.h). Printed by rank 0: a markdown table of the
 * medians over the turns of each library's time and of the per-turn ratio mgcomm / MPI. Out of
 * place, MPI's broadcast is the root's copy of send into recv and then MPI_Bcast (mpi_peer.c says
 * why).
 * -S 1: before every call of a loop, the same library's all_reduce of 2 floats, untimed (-B 1:
 * inside the timed loop), as a training loop's small all_reduce between its large collectives;
 * it found the host backend's staged collectives slowed by such a neighbour
 * (bench/results/2026-11-29-host-slot-alternation.md).
 * -P 1: before each turn, the speed at which rank 0 stores into lines that rank 1 has just read
 * (probe(), below), printed with each turn's ratio: the state of the machine's CPUs that turn.
 * -t 1: mgcomm's ranks are N threads of rank 0's process instead (its other processes sleep
 * through mgcomm's turns, so that the threads have the CPUs the processes had), each with its own
 * malloc'd buffers and not bound to a CPU (Open MPI binds its processes); the timing rule is the
 * same, with a barrier of the threads for MPI's.
 * Results are not checked (the tests check mgcomm's).
 * Built by host_vs_mpi.sh: mpicc -Iinclude bench/mpi_paired.c -L<build> -lmgcomm.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgcomm.h"
#include "mpi_bench.h"

static int rank, nranks;

/* One call of collective c, count elements (per rank for the divided ones), by rank r through
 * MPI (mg NULL: mb_mpi_call) or its mgcomm communicator mg; in place as each library spells it.
 * float32, sum, root 0. */
static void call(mg_comm_t *mg, int r, int c, int ip, float *send, float *recv, size_t count) {
  if (mg == NULL) {
    mb_mpi_call(c, ip, send, recv, count, MPI_FLOAT, sizeof(float), MPI_SUM, 0);
    return;
  }
  const size_t me = (size_t)r * count;
  mg_status_t st;
  switch (c) {
    case AR: st = mg_all_reduce(ip ? recv : send, recv, count, MG_FLOAT32, MG_SUM, mg, NULL); break;
    case AG: st = mg_all_gather(ip ? recv + me : send, recv, count, MG_FLOAT32, mg, NULL); break;
    case RS: /* in place, the input is recv, all nranks pieces of it */
      st = mg_reduce_scatter(ip ? recv : send, ip ? recv + me : recv, count, MG_FLOAT32, MG_SUM,
                             mg, NULL);
      break;
    case A2A: st = mg_all_to_all(send, recv, count, MG_FLOAT32, mg, NULL); break;
    case A2AV: /* every count alike: mb_v_fill's */
      st = mg_all_to_allv(send, mb_vcz, mb_vdz, recv, mb_vcz, mb_vdz, MG_FLOAT32, mg, NULL);
      break;
    case BC: st = mg_broadcast(ip ? recv : send, recv, count, MG_FLOAT32, 0, mg, NULL); break;
    case RED: /* in place: send is recv on every rank */
      st = mg_reduce(ip ? recv : send, recv, count, MG_FLOAT32, MG_SUM, 0, mg, NULL);
      break;
    case GA: /* in place on the root only (root 0: its piece is recv's first) */
      st = mg_gather(ip && r == 0 ? recv : send, recv, count, MG_FLOAT32, 0, mg, NULL);
      break;
    case SC:
      st = mg_scatter(send, ip && r == 0 ? send : recv, count, MG_FLOAT32, 0, mg, NULL);
      break;
    default: /* SR: to the next rank, from the one before, in one group */
      mg_group_begin();
      mg_send(send, count, MG_FLOAT32, (r + 1) % nranks, mg, NULL);
      mg_recv(recv, count, MG_FLOAT32, (r - 1 + nranks) % nranks, mg, NULL);
      st = mg_group_end();
      break;
  }
  if (st != MG_OK) mb_die("mgcomm: ", mg_last_error());
}

/* -P 1: rank 0 copies PROBE_BYTES into a window shared with rank 1, which then reads them, in
 * PROBE_ROUNDS rounds; the median of rank 0's copies after the first, in GB/s, on rank 0 (0 on
 * the others, or with one rank). Those are stores into cache lines that the other CPU holds, as
 * the host backend's staged copies into its slots are; Open MPI's copies of these sizes (one
 * process_vm_readv) only read the other process's memory. On the 2-CPU VM they ran at ~55, ~9
 * or ~2 GB/s, as its two virtual CPUs moved between the host's cores every few seconds
 * (bench/results/2026-11-29-vm-cpu-pair-states.md). The waits give the CPU away after a while:
 * with more ranks than CPUs, ranks 0 and 1 may share one. */
#define PROBE_BYTES (128 * 1024)
#define PROBE_ROUNDS 8
static MPI_Win probe_win;
static unsigned char *probe_mem; /* rank 0's part of the window: a flag's line, then the data */

static void probe_init(void) {
  void *base;
  MPI_Win_allocate_shared(rank == 0 ? 4096 + PROBE_BYTES : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                          &base, &probe_win);
  MPI_Aint size;
  int unit;
  MPI_Win_shared_query(probe_win, 0, &size, &unit, &probe_mem);
  if (rank == 0) memset(base, 0, 4096 + PROBE_BYTES); /* the others' parts are empty */
}

static void probe_wait(_Atomic unsigned *flag, unsigned want) {
  for (unsigned i = 0; atomic_load(flag) != want; i++)
    if (i > 4096) sched_yield();
}

static double probe(void) {
  static unsigned char mine[PROBE_BYTES];
  _Atomic unsigned *flag = (_Atomic unsigned *)(void *)probe_mem;
  unsigned char *data = probe_mem + 4096;
  double t[PROBE_ROUNDS];
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) atomic_store(flag, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  for (unsigned k = 0; k < PROBE_ROUNDS && nranks > 1 && rank <= 1; k++) {
    if (rank == 1) {
      probe_wait(flag, 2 * k + 1);
      memcpy(mine, data, PROBE_BYTES);
      atomic_store(flag, 2 * k + 2);
      continue;
    }
    probe_wait(flag, 2 * k);
    const double t0 = mb_now();
    memcpy(data, mine, PROBE_BYTES);
    t[k] = mb_now() - t0;
    atomic_store(flag, 2 * k + 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0 || nranks < 2) return 0;
  return PROBE_BYTES / mb_median(t + 1, PROBE_ROUNDS - 1) * 1e-9;
}

static int back_to_back; /* -B 1 */
static int probing;      /* -P 1 */
static int small_between; /* -S 1 */

/* -S 1: the same library's all_reduce of 2 floats, before each call of the loop. */
static void small_call(mg_comm_t *mg) {
  float two[2] = {1.0f, 2.0f};
  if (mg == NULL) {
    MPI_Allreduce(MPI_IN_PLACE, two, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return;
  }
  if (mg_all_reduce(two, two, 2, MG_FLOAT32, MG_SUM, mg, NULL) != MG_OK)
    mb_die("mgcomm: ", mg_last_error());
}

/* What one loop runs (one library, one collective, size and placement). */
typedef struct job {
  int c, ip, iters, warmup;
  size_t count;
} job_t;

/* One rank's loop: its timed calls' starts and ends in times[0..2 iters) (-B 1: the loop's time
 * in times[0]); barrier() before each timed call (-B 1: once). */
static void run_loop(mg_comm_t *mg, int r, const job_t *j, float *send, float *recv,
                     double *times, void (*barrier)(void)) {
  if (back_to_back) {
    for (int it = 0; it < j->warmup; it++) {
      if (small_between) small_call(mg);
      call(mg, r, j->c, j->ip, send, recv, j->count);
    }
    barrier();
    double t = mb_now();
    for (int it = 0; it < j->iters; it++) {
      if (small_between) small_call(mg);
      call(mg, r, j->c, j->ip, send, recv, j->count);
    }
    times[0] = mb_now() - t;
    return;
  }
  for (int it = -j->warmup; it < j->iters; it++) {
    if (small_between) small_call(mg);
    if (it >= 0) barrier();
    if (it >= 0) times[it] = mb_now();
    call(mg, r, j->c, j->ip, send, recv, j->count);
    if (it >= 0) times[j->iters + it] = mb_now();
  }
}

static void mpi_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

/* One rank's buffers: recv holds every rank's piece of the largest size (cap floats), send as
 * much (reduce_scatter's input), times run_loop's. From malloc, as a user's are. */
typedef struct bufs {
  float *send, *recv;
  double *times;
} bufs_t;

static bufs_t bufs_new(size_t cap, int iters) {
  bufs_t b = {malloc(cap * sizeof(float)), malloc(cap * sizeof(float)),
              malloc(sizeof(double) * 2 * (size_t)iters)};
  if (!b.send || !b.recv || !b.times) mb_die("out of memory", "");
  for (size_t i = 0; i < cap; i++) b.send[i] = b.recv[i] = 1.0f;
  return b;
}

static void bufs_free(bufs_t *b) {
  free(b->send);
  free(b->recv);
  free(b->times);
}

/* ---- -t 1: mgcomm's ranks as threads of rank 0's process ---- */

typedef struct trank {
  pthread_t tid;
  int r;
  mg_comm_t *comm;
  bufs_t b;
} trank_t;

static trank_t *tranks;
static mg_unique_id_t tid_uid;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static int pool_gen, pool_done, pool_quit; /* jobs posted; threads done with the last; the end */
static job_t pool_job;

/* The threads' barrier before each timed call: a spin on a generation count that gives the CPU
 * away after 64 looks, as Open MPI's barrier does when ranks outnumber CPUs. */
static atomic_uint tbar_count, tbar_gen;
static void thread_barrier(void) {
  const unsigned g = atomic_load(&tbar_gen);
  if (atomic_fetch_add(&tbar_count, 1) == (unsigned)nranks - 1) {
    atomic_store(&tbar_count, 0);
    atomic_fetch_add(&tbar_gen, 1);
    return;
  }
  for (unsigned i = 0; atomic_load(&tbar_gen) == g; i++)
    if (i > 64) sched_yield();
}

static void *trank_main(void *arg) {
  trank_t *t = arg;
  cpu_set_t all; /* not bound: Open MPI bound this process to one CPU */
  CPU_ZERO(&all);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) CPU_SET(cpu, &all);
  sched_setaffinity(0, sizeof all, &all); /* 0: this thread; the CPUs that exist are kept */
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  if (mg_comm_init_rank(&cfg, nranks, &tid_uid, t->r, &t->comm) != MG_OK)
    mb_die("mg_comm_init_rank (thread): ", mg_last_error());
  for (int seen = 0;;) {
    pthread_mutex_lock(&pool_lock);
    while (pool_gen == seen && !pool_quit) pthread_cond_wait(&pool_cv, &pool_lock);
    seen = pool_gen;
    const int quit = pool_quit;
    pthread_mutex_unlock(&pool_lock);
    if (quit) break;
    run_loop(t->comm, t->r, &pool_job, t->b.send, t->b.recv, t->b.times, thread_barrier);
    pthread_mutex_lock(&pool_lock);
    if (++pool_done == nranks) pthread_cond_broadcast(&pool_cv);
    pthread_mutex_unlock(&pool_lock);
  }
  mg_comm_destroy(t->comm);
  return NULL;
}

static void threads_start(size_t cap, int iters) {
  if (mg_unique_id_create(MG_BACKEND_HOST, &tid_uid) != MG_OK)
    mb_die("mg_unique_id_create: ", mg_last_error());
  tranks = calloc((size_t)nranks, sizeof *tranks);
  if (tranks == NULL) mb_die("out of memory", "");
  for (int r = 0; r < nranks; r++) {
    trank_t *t = &tranks[r];
    t->r = r;
    t->b = bufs_new(cap, iters);
    if (pthread_create(&t->tid, NULL, trank_main, t) != 0) mb_die("pthread_create failed", "");
  }
}

static void threads_stop(void) {
  pthread_mutex_lock(&pool_lock);
  pool_quit = 1;
  pthread_cond_broadcast(&pool_cv);
  pthread_mutex_unlock(&pool_lock);
  for (int r = 0; r < nranks; r++) {
    pthread_join(tranks[r].tid, NULL);
    bufs_free(&tranks[r].b);
  }
  free(tranks);
}

/* Every process waits here asleep (Open MPI's barrier polls, which would take a CPU from the
 * threads). */
static void sleeping_barrier(void) {
  MPI_Request rq;
  MPI_Ibarrier(MPI_COMM_WORLD, &rq);
  for (int done = 0;;) {
    MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (done) break;
    nanosleep(&(struct timespec){0, 50000}, NULL);
  }
}

/* mgcomm's loop on the threads (rank 0; the others sleep), by the same rule as loop(). */
static double threads_loop(const job_t *j) {
  double t = 0;
  if (rank == 0) {
    pthread_mutex_lock(&pool_lock);
    pool_job = *j;
    pool_done = 0;
    pool_gen++;
    pthread_cond_broadcast(&pool_cv);
    while (pool_done < nranks) pthread_cond_wait(&pool_cv, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
    if (back_to_back) {
      for (int r = 0; r < nranks; r++)
        if (tranks[r].b.times[0] > t) t = tranks[r].b.times[0];
      t /= j->iters;
    } else {
      double *v = tranks[0].b.times; /* per iteration: the last thread's end - the last start */
      for (int it = 0; it < j->iters; it++) {
        double s = 0, e = 0;
        for (int r = 0; r < nranks; r++) {
          if (tranks[r].b.times[it] > s) s = tranks[r].b.times[it];
          if (tranks[r].b.times[j->iters + it] > e) e = tranks[r].b.times[j->iters + it];
        }
        v[it] = e - s;
      }
      t = mb_median(v, j->iters);
    }
  }
  sleeping_barrier();
  return t;
}

static int threads; /* -t 1 */
static mg_comm_t *comm; /* this process's rank (-t 0) */

/* One library's loop, in seconds per call: the median iteration, last start to last end; with
 * -B 1 the iterations run back to back after one barrier, and the loop's time is the slowest
 * rank's, divided by the iterations (as the OSU benchmarks time latency). */
static double loop(int mg, const job_t *j, float *send, float *recv, double *times) {
  if (j->c == A2AV) mb_v_fill(j->count);
  if (mg && threads) return threads_loop(j);
  run_loop(mg ? comm : NULL, rank, j, send, recv, times, mpi_barrier);
  if (!back_to_back) return mb_median_iteration(times, j->iters);
  MPI_Allreduce(MPI_IN_PLACE, times, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return times[0] / j->iters;
}

/* Untimed turns of job j, both libraries, until 0.2 s have passed (rank 0's clock decides for
 * all), before anything is timed. Without them the first size's first turns after start-up ran
 * up to 6x slower with 16 MiB buffers (-t 1, sendrecv of 1 KiB: 5x in three turns of three,
 * 1.0-1.2x with 64 KiB buffers; nine turns: only the first ones); the cause was not isolated. */
static void settle(const job_t *j, bufs_t *b) {
  const double t0 = MPI_Wtime();
  for (int more = 1; more;) {
    loop(0, j, b->send, b->recv, b->times);
    loop(1, j, b->send, b->recv, b->times);
    more = MPI_Wtime() - t0 < 0.2;
    MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  mb_name = "mpi_paired";
  mb_rank = rank;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int colls[NCOLL] = {AR, AG, RS, BC}, ncolls = 4, iters = 1000, warmup = 100, turns = 5;
  int modes = 3;
  size_t minb = 8, maxb = 4096, factor = 4;
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) mb_die("option without a value: ", a);
    if (!strcmp(a, "-c")) {
      ncolls = mb_parse_colls(v, colls, NCOLL);
    } else if (!strcmp(a, "-b")) {
      minb = mb_parse_size(v);
    } else if (!strcmp(a, "-e")) {
      maxb = mb_parse_size(v);
    } else if (!strcmp(a, "-f")) {
      factor = mb_parse_size(v);
    } else if (!strcmp(a, "-n")) {
      iters = atoi(v);
    } else if (!strcmp(a, "-w")) {
      warmup = atoi(v);
    } else if (!strcmp(a, "-B")) {
      back_to_back = atoi(v) != 0;
    } else if (!strcmp(a, "-S")) {
      small_between = atoi(v) != 0;
    } else if (!strcmp(a, "-t")) {
      threads = atoi(v) != 0;
    } else if (!strcmp(a, "-P")) {
      probing = atoi(v) != 0;
    } else if (!strcmp(a, "-T")) {
      turns = atoi(v);
    } else if (!strcmp(a, "--inplace")) {
      modes = !strcmp(v, "0") ? 1 : !strcmp(v, "1") ? 2 : 3;
    } else {
      mb_die("unknown option ", a);
    }
  }
  if (iters < 1 || warmup < 0 || turns < 1 || turns > 99 || factor < 2 || minb == 0 ||
      minb > maxb)
    mb_die("bad arguments (see the comment at the top of mpi_paired.c)", "");

  const size_t cap = maxb / sizeof(float) + 16; /* the buffers' floats (bufs_new) */
  if (threads && rank == 0) {
    threads_start(cap, iters);
  } else if (!threads) {
    mg_unique_id_t id;
    if (rank == 0 && mg_unique_id_create(MG_BACKEND_HOST, &id) != MG_OK)
      mb_die("mg_unique_id_create: ", mg_last_error());
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    mg_config_t cfg = MG_CONFIG_INIT;
    cfg.backend = MG_BACKEND_HOST;
    if (mg_comm_init_rank(&cfg, nranks, &id, rank, &comm) != MG_OK)
      mb_die("mg_comm_init_rank: ", mg_last_error());
  }
  bufs_t b = bufs_new(cap, iters);
  if (probing) probe_init();

  if (rank == 0) {
    printf("| collective | in place | size (B) | MPI µs | mgcomm µs | mgcomm / MPI (median of "
           "%d turns) | turns' ratios, min - max |%s\n", turns,
           probing ? " each turn's ratio (rank 0's stores into rank 1's lines, GB/s) |" : "");
    printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |%s\n", probing ? " --- |" : "");
  }
  {
    const size_t total = minb / sizeof(float);
    const job_t first = {colls[0], 0, iters, warmup, divided[colls[0]] ? total / nranks : total};
    settle(&first, &b);
  }
  for (int ci = 0; ci < ncolls; ci++) {
    const int c = colls[ci];
    for (size_t bytes = minb; bytes <= maxb; bytes *= factor) {
      const size_t total = bytes / sizeof(float), n = (size_t)nranks;
      const size_t count = divided[c] ? total / n : total;
      if (count == 0) continue;
      for (int ip = 0; ip < 2; ip++) {
        if (!(modes & (1 << ip)) || (ip && !has_inplace[c])) continue;
        double t[2][99], r[99], gbs[99], turn_r[99];
        for (int k = 0; k < turns; k++) {
          if (probing) gbs[k] = probe();
          for (int j = 0; j < 2; j++) {
            const int mg = (j + k) % 2; /* MPI first in even turns, mgcomm in odd ones */
            const job_t j = {c, ip, iters, warmup, count};
            t[mg][k] = loop(mg, &j, b.send, b.recv, b.times);
          }
          r[k] = turn_r[k] = t[1][k] / t[0][k];
        }
        if (rank == 0) {
          const double tm = mb_median(t[0], turns) * 1e6, tg = mb_median(t[1], turns) * 1e6;
          const double rm = mb_median(r, turns); /* sorts r */
          printf("| %s | %s | %zu | %.3f | %.3f | %.2f | %.2f - %.2f |", coll_names[c],
                 ip ? "yes" : "no", (divided[c] ? count * n : count) * sizeof(float), tm, tg, rm,
                 r[0], r[turns - 1]);
          for (int k = 0; k < turns && probing; k++)
            printf("%s%.2f (%.1f)", k ? ", " : " ", turn_r[k], gbs[k]);
          printf("%s\n", probing ? " |" : "");
          fflush(stdout);
        }
      }
    }
  }
  if (threads && rank == 0) threads_stop();
  if (!threads) mg_comm_destroy(comm);
  if (probing) MPI_Win_free(&probe_win);
  bufs_free(&b);
  MPI_Finalize();
  return 0;
}
