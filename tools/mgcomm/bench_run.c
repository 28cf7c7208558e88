/*
 * bench_run.c -- the sweep: ranks as threads of this process, each driving its own communicator
 * of one mg_comm_init_all through every collective, size and placement of the options.
 *
 * For each collective, size and placement (out of place, in place), every rank:
 *   1. fills its buffers: its pattern where the operation reads, poison where it writes;
 *   2. waits for the others, runs the operation once and checks its result (#wrong);
 *   3. agrees with the others on the time of that run, and from it on the number of iterations
 *      (unless -n / -w fixed them): about MG_BENCH_SIZE_BUDGET_S of timed work, between
 *      MG_BENCH_ITERS_MIN and MG_BENCH_ITERS_DEFAULT iterations;
 *   4. runs the warm-up iterations back to back, then the timed iterations, each one started
 *      after a barrier of all ranks, reading the monotonic clock before and after the call.
 * The time of an iteration runs from the last rank's start to the last rank's end: a collective
 * cannot finish before every rank has entered it, and the barrier lets ranks go at different
 * moments (a rank woken from a futex can leave tens of microseconds after another on a busy
 * machine), which a per-rank time would count as latency. The reported time is the median of
 * these over iterations. All ranks read one clock (CLOCK_MONOTONIC of this host).
 * Rank 0 prints and records the rows.
 *
 * Ranks meet at a pthread barrier and combine numbers through shared arrays (the team); a
 * failed operation is agreed on at the next meeting, after which every rank stops.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

typedef struct mg_bench_team {
  const mg_bench_opts_t *o;
  const mg_bench_mem_t *mem;
  mg_comm_t **comms;          /* one per rank, owned by mg_bench_run */
  int n;
  pthread_barrier_t barrier;
  double **share;             /* per rank: the array it offers to a team reduction */
  size_t send_max, buf_max;   /* bytes of the largest send and receive buffer of the sweep */
  mg_bench_results_t *res;    /* rank 0 appends */
  int status;                 /* 0, or 1 after a failure (written by rank 0 at the end) */
  /* The start gate: ranks wait until every thread exists (go = 1) or one could not be made
   * (go = -1: they leave at once). */
  pthread_mutex_t gate_lock;
  pthread_cond_t gate_cv;
  int go;
  /* Progress (rank 0 only). */
  double t0;
  size_t steps, done;
  int progress_shown, tty;
} mg_bench_team_t;

typedef struct mg_bench_rank {
  mg_bench_team_t *team;
  int rank;
} mg_bench_rank_t;

static double mg_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void mg_bench_barrier(mg_bench_team_t *t) {
  /* Returns 0 or PTHREAD_BARRIER_SERIAL_THREAD; it cannot fail on an initialised barrier. */
  (void)pthread_barrier_wait(&t->barrier);
}

/* v[0..n) := its sum (sum != 0) or maximum over ranks, on every rank. */
static void mg_bench_team_reduce(mg_bench_team_t *t, int rank, double *v, size_t n, int sum) {
  t->share[rank] = v;
  mg_bench_barrier(t);
  if (rank == 0)
    for (int q = 1; q < t->n; q++)
      for (size_t i = 0; i < n; i++)
        v[i] = sum ? v[i] + t->share[q][i] : fmax(v[i], t->share[q][i]);
  mg_bench_barrier(t);
  if (rank != 0) memcpy(v, t->share[0], n * sizeof *v);
  mg_bench_barrier(t);
}

/* Moves *size (<= maxbytes) to the next size of the sweep; 0 when it was the last. */
static int mg_bench_next(const mg_bench_opts_t *o, size_t *size) {
  if (o->factor) {
    if (*size > o->maxbytes / o->factor) return 0;
    *size *= o->factor;
  } else {
    if (o->increment > o->maxbytes - *size) return 0;
    *size += o->increment;
  }
  return 1;
}

static int mg_bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double mg_bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, mg_bench_cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int mg_bench_clamp(double x, int lo, int hi) {
  return x < lo ? lo : x > hi ? hi : (int)x;
}

static int mg_bench_push(mg_bench_results_t *res, const mg_bench_result_t *r) {
  if (res->n == res->cap) {
    size_t cap = res->cap ? 2 * res->cap : 64;
    mg_bench_result_t *rows = realloc(res->rows, cap * sizeof *rows);
    if (rows == NULL) return -1;
    res->rows = rows, res->cap = cap;
  }
  res->rows[res->n++] = *r;
  return 0;
}

static void mg_bench_progress_clear(mg_bench_team_t *t) {
  if (!t->progress_shown) return;
  fprintf(stderr, "\r\033[K");
  t->progress_shown = 0;
}

static void mg_bench_progress(mg_bench_team_t *t, mg_bench_coll_t c, size_t bytes) {
  t->done++;
  if (!t->tty || mg_bench_now() - t->t0 < 2.0 || t->done >= t->steps) return;
  fprintf(stderr, "\r\033[K  bench: %s %zu B done (%zu/%zu), %.0f s", mg_bench_coll_name(c),
          bytes, t->done, t->steps, mg_bench_now() - t->t0);
  t->progress_shown = 1;
}

/* The buffers and scratch of one rank. */
typedef struct mg_bench_bufs {
  void *send, *buf;          /* the operation's buffers (mem) */
  void *send_img, *img;      /* host images */
  double *stamps;            /* per iteration: start times, then end times (seconds) */
} mg_bench_bufs_t;

static void mg_bench_failed(int rank, const mg_bench_case_t *k, mg_status_t st) {
  fprintf(stderr, "mgcomm bench: rank %d: %s %zu B%s: %s: %s\n", rank, mg_bench_coll_name(k->coll),
          k->g.bytes, k->inplace ? " in place" : "", mg_status_name(st), mg_last_error());
}

/* Measures one (collective, size, placement) on every rank. Returns 0, or -1 once every rank
 * knows that some rank failed. Rank 0 fills *row. */
static int mg_bench_one(mg_bench_team_t *t, int rank, mg_bench_bufs_t *b,
                        const mg_bench_case_t *k, mg_bench_result_t *row) {
  const mg_bench_opts_t *o = t->o;
  const size_t e = mg_dtype_size(k->dtype);
  const size_t bufn = k->g.send_count > k->g.recv_count ? k->g.send_count : k->g.recv_count;
  char *send = k->inplace ? (char *)b->buf + (size_t)rank * k->g.send_ip_off * e : b->send;
  char *recv = (char *)b->buf + (k->inplace ? (size_t)rank * k->g.recv_ip_off * e : 0);
  mg_comm_t *comm = t->comms[rank];
  mg_status_t st = MG_OK;
#define MG_BENCH_CALL()                                                                        \
  mg_bench_call(k->coll, send, recv, k->g.count, k->dtype, k->op, k->root, comm, rank, t->n, NULL)

  if (o->check) {
    mg_bench_fill(k, rank, b->send_img, b->img);
    if (!k->inplace) t->mem->put(b->send, b->send_img, k->g.send_count * e);
    t->mem->put(b->buf, b->img, bufn * e);
  }
  mg_bench_barrier(t);
  double t0 = mg_bench_now();
  st = MG_BENCH_CALL();
  double agree[3] = {t0, mg_bench_now(), st != MG_OK}, wrong = 0;
  if (st == MG_OK && o->check) {
    t->mem->get(b->img, b->buf, bufn * e);
    wrong = (double)mg_bench_check(k, rank, b->img);
  }
  if (st != MG_OK) mg_bench_failed(rank, k, st);
  mg_bench_team_reduce(t, rank, agree, 3, 0);
  mg_bench_team_reduce(t, rank, &wrong, 1, 1);
  if (agree[2] != 0) return -1;

  const double est = agree[1] - agree[0] > 1e-9 ? agree[1] - agree[0] : 1e-9;
  const int iters = o->iters > 0 ? o->iters
                                 : mg_bench_clamp(MG_BENCH_SIZE_BUDGET_S / est, MG_BENCH_ITERS_MIN,
                                                  MG_BENCH_ITERS_DEFAULT);
  const int warmup = o->warmup >= 0 ? o->warmup
                                    : mg_bench_clamp(MG_BENCH_SIZE_BUDGET_S / 4 / est,
                                                     MG_BENCH_WARMUP_MIN, MG_BENCH_WARMUP_DEFAULT);
  for (int i = 0; i < warmup && st == MG_OK; i++) st = MG_BENCH_CALL();
  double *start = b->stamps, *end = b->stamps + iters;
  for (int i = 0; i < iters; i++) {
    mg_bench_barrier(t);
    start[i] = mg_bench_now();
    if (st == MG_OK) st = MG_BENCH_CALL();
    end[i] = mg_bench_now();
  }
#undef MG_BENCH_CALL
  if (st != MG_OK) mg_bench_failed(rank, k, st);
  double failed = st != MG_OK;
  mg_bench_team_reduce(t, rank, &failed, 1, 0);
  if (failed != 0) return -1;
  mg_bench_team_reduce(t, rank, b->stamps, 2 * (size_t)iters, 0);
  if (rank == 0) {
    for (int i = 0; i < iters; i++) end[i] -= start[i];
    const double sec = mg_bench_median(end, iters);
    row->coll = k->coll;
    row->g = k->g;
    row->root = mg_bench_coll_rooted(k->coll) ? k->root : -1;
    row->inplace = k->inplace;
    row->time_us = sec * 1e6;
    row->algbw_gbs = (double)k->g.algbw_bytes / 1e9 / sec;
    row->busbw_gbs = row->algbw_gbs * mg_bench_bus_factor(k->coll, t->n);
    row->wrong = (uint64_t)wrong;
    row->iters = iters;
    row->warmup = warmup;
  }
  return 0;
}

/* One rank's whole sweep. */
static void *mg_bench_rank_main(void *arg) {
  const mg_bench_rank_t *me = arg;
  mg_bench_team_t *t = me->team;
  const mg_bench_opts_t *o = t->o;
  const int rank = me->rank;
  pthread_mutex_lock(&t->gate_lock);
  while (t->go == 0) pthread_cond_wait(&t->gate_cv, &t->gate_lock);
  const int go = t->go;
  pthread_mutex_unlock(&t->gate_lock);
  if (go < 0) return NULL;
  mg_bench_bufs_t b = {0};
  const int iters_max = o->iters > 0 ? o->iters : MG_BENCH_ITERS_DEFAULT;
  b.send = t->mem->alloc(t->send_max);
  b.buf = t->mem->alloc(t->buf_max);
  b.send_img = calloc(1, t->send_max ? t->send_max : 1);
  b.img = calloc(1, t->buf_max ? t->buf_max : 1);
  b.stamps = malloc(2 * (size_t)iters_max * sizeof *b.stamps);
  double failed = !b.send || !b.buf || !b.send_img || !b.img || !b.stamps;
  if (failed)
    fprintf(stderr, "mgcomm bench: rank %d: cannot allocate 2 x %zu bytes (%s) and as many on the "
            "host\n", rank, t->buf_max, t->mem->name);
  if (failed == 0) { /* zeros, for runs without --check, which never fill them */
    t->mem->put(b.send, b.send_img, t->send_max);
    t->mem->put(b.buf, b.img, t->buf_max);
  }
  mg_bench_team_reduce(t, rank, &failed, 1, 0);

  for (int ci = 0; ci < o->ncolls && failed == 0; ci++) {
    const mg_bench_coll_t c = (mg_bench_coll_t)o->colls[ci];
    if (o->inplace_modes == 2 && !mg_bench_coll_has_inplace(c)) {
      if (rank == 0)
        printf("#\n# Collective: %s has no in-place form: nothing to run with --inplace 1\n",
               mg_bench_coll_name(c));
      continue;
    }
    if (rank == 0) mg_bench_print_header(stdout, c);
    size_t size = o->minbytes;
    do {
      mg_bench_case_t k = {c, o->dtype, o->op, o->root, t->n, 0,
                           mg_bench_geometry(c, size, o->dtype, t->n)};
      mg_bench_result_t rows[2];
      int have[2] = {0, 0};
      for (int ip = 0; ip < 2 && failed == 0; ip++) {
        if (!(o->inplace_modes & (1 << ip)) || (ip && !mg_bench_coll_has_inplace(c))) continue;
        k.inplace = ip;
        if (mg_bench_one(t, rank, &b, &k, &rows[ip]) != 0) {
          failed = 1;
        } else if (rank == 0) {
          have[ip] = 1;
          if (mg_bench_push(t->res, &rows[ip]) != 0) {
            fprintf(stderr, "mgcomm bench: out of memory\n");
            failed = 1;
          }
        }
      }
      /* Only rank 0 can have failed to record a row: tell the others. */
      mg_bench_team_reduce(t, rank, &failed, 1, 0);
      if (rank == 0 && failed == 0) {
        mg_bench_progress_clear(t);
        mg_bench_print_line(stdout, o, have[0] ? &rows[0] : NULL, have[1] ? &rows[1] : NULL);
        fflush(stdout);
        mg_bench_progress(t, c, k.g.bytes);
      }
    } while (failed == 0 && mg_bench_next(o, &size));
    if (rank == 0 && failed == 0) mg_bench_print_footer(stdout, t->res, c);
  }
  if (failed == 0) {
    mg_status_t st = mg_comm_finalize(t->comms[rank]);
    if (st != MG_OK)
      fprintf(stderr, "mgcomm bench: rank %d: mg_comm_finalize: %s: %s\n", rank,
              mg_status_name(st), mg_last_error());
    failed = st != MG_OK;
    mg_bench_team_reduce(t, rank, &failed, 1, 0);
  }
  if (rank == 0) {
    mg_bench_progress_clear(t);
    t->status = failed != 0;
  }
  t->mem->release(b.send);
  t->mem->release(b.buf);
  free(b.send_img);
  free(b.img);
  free(b.stamps);
  return NULL;
}

int mg_bench_run(const mg_bench_opts_t *o, mg_bench_results_t *res) {
  mg_bench_team_t t = {.o = o, .mem = &mg_bench_mem_host, .n = o->nranks, .res = res,
                       .gate_lock = PTHREAD_MUTEX_INITIALIZER, .gate_cv = PTHREAD_COND_INITIALIZER};
  /* The largest buffers of the sweep, and the number of lines for the progress report. */
  for (int ci = 0; ci < o->ncolls; ci++) {
    const mg_bench_coll_t c = (mg_bench_coll_t)o->colls[ci];
    size_t size = o->minbytes;
    do {
      mg_bench_geom_t g = mg_bench_geometry(c, size, o->dtype, t.n);
      const size_t e = mg_dtype_size(o->dtype);
      if (g.send_count * e > t.send_max) t.send_max = g.send_count * e;
      if (g.bytes > t.buf_max) t.buf_max = g.bytes;
      t.steps++;
    } while (mg_bench_next(o, &size));
  }
  t.tty = isatty(STDERR_FILENO);
  t.t0 = mg_bench_now();

  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = o->backend;
  mg_comm_t **comms = calloc((size_t)t.n, sizeof *comms);
  double **share = calloc((size_t)t.n, sizeof *share);
  mg_bench_rank_t *ranks = calloc((size_t)t.n, sizeof *ranks);
  pthread_t *th = calloc((size_t)t.n, sizeof *th);
  int status = 1, started = 0;
  if (!comms || !share || !ranks || !th) {
    fprintf(stderr, "mgcomm bench: out of memory\n");
    goto out;
  }
  mg_status_t st = mg_comm_init_all(&cfg, t.n, NULL, comms);
  if (st != MG_OK) {
    fprintf(stderr, "mgcomm bench: cannot create %d ranks on the %s backend: %s: %s\n", t.n,
            mg_backend_name(o->backend), mg_status_name(st), mg_last_error());
    goto out;
  }
  t.comms = comms;
  t.share = share;
  if (pthread_barrier_init(&t.barrier, NULL, (unsigned)t.n) != 0) {
    fprintf(stderr, "mgcomm bench: cannot create a barrier of %d threads\n", t.n);
    goto destroy;
  }
  for (; started < t.n; started++) {
    ranks[started] = (mg_bench_rank_t){&t, started};
    if (pthread_create(&th[started], NULL, mg_bench_rank_main, &ranks[started]) != 0) break;
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
  if (started < t.n)
    fprintf(stderr, "mgcomm bench: cannot start the thread of rank %d of %d\n", started, t.n);
  else
    status = t.status;
  pthread_barrier_destroy(&t.barrier);
destroy:
  for (int i = 0; i < t.n; i++) {
    /* After a failure the communicators are in the error state; destroy aborts them, which is
     * what we want, and reports nothing we could act on. */
    (void)mg_comm_destroy(comms[i]);
  }
out:
  free(comms);
  free(share);
  free(ranks);
  free(th);
  return status;
}
