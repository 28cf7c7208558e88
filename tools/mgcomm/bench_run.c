/*
 * bench_run.c -- the sweep, the same whoever runs it: every rank of a communicator (threads of
 * this process, or processes of a job), or the one thread that drives a world.
 *
 * Every participant walks the same collectives, sizes and placements, measures each case (the
 * mode's measure: bench_rank.c, bench_world.c) and meets the others through the mode's agree
 * wherever a decision must be common: whether to start, whether a case failed, whether the
 * printer could record its row, and the exit status. The printer (rank 0, or the world's thread)
 * opens its files first, prints the preamble, the table as rows complete and the summary, and
 * writes the files at the end, also after a failure (with the rows measured until then).
 *
 * Also here: what the modes share about one case (the iteration counts, the row from the
 * iteration times) and the progress line.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

double mg_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

void mg_bench_extent(const mg_bench_opts_t *o, size_t *send_max, size_t *buf_max) {
  const size_t e = mg_dtype_size(o->dtype);
  *send_max = *buf_max = 0;
  for (int ci = 0; ci < o->ncolls; ci++) {
    size_t size = o->minbytes;
    do {
      mg_bench_geom_t g = mg_bench_geometry((mg_bench_coll_t)o->colls[ci], size, o->dtype,
                                            o->nranks);
      if (g.send_count * e > *send_max) *send_max = g.send_count * e;
      if (g.bytes > *buf_max) *buf_max = g.bytes;
    } while (mg_bench_next(o, &size));
  }
}

static int mg_bench_clamp(double x, int lo, int hi) {
  return x < lo ? lo : x > hi ? hi : (int)x;
}

void mg_bench_counts(const mg_bench_opts_t *o, double est_s, int *iters, int *warmup) {
  const double est = est_s > 1e-9 ? est_s : 1e-9;
  *iters = o->iters > 0 ? o->iters
                        : mg_bench_clamp(MG_BENCH_SIZE_BUDGET_S / est, MG_BENCH_ITERS_MIN,
                                         MG_BENCH_ITERS_DEFAULT);
  *warmup = o->warmup >= 0 ? o->warmup
                           : mg_bench_clamp(MG_BENCH_SIZE_BUDGET_S / 4 / est, MG_BENCH_WARMUP_MIN,
                                            MG_BENCH_WARMUP_DEFAULT);
}

static int mg_bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void mg_bench_row(const mg_bench_opts_t *o, const mg_bench_case_t *k, double *times, int iters,
                  int warmup, uint64_t wrong, mg_bench_result_t *row) {
  qsort(times, (size_t)iters, sizeof *times, mg_bench_cmp);
  const double sec = iters % 2 ? times[iters / 2] : (times[iters / 2 - 1] + times[iters / 2]) / 2;
  row->coll = k->coll;
  row->g = k->g;
  row->root = mg_bench_coll_rooted(k->coll) ? k->root : -1;
  row->inplace = k->inplace;
  row->time_us = sec * 1e6;
  row->algbw_gbs = (double)k->g.algbw_bytes / 1e9 / sec;
  row->busbw_gbs = row->algbw_gbs * mg_bench_bus_factor(k->coll, o->nranks);
  row->wrong = wrong;
  row->iters = iters;
  row->warmup = warmup;
  row->algo = o->algo;
}

void mg_bench_failed(const char *who, const mg_bench_case_t *k, mg_status_t st) {
  fprintf(stderr, "mgcomm bench: %s: %s %zu B%s: %s: %s\n", who, mg_bench_coll_name(k->coll),
          k->g.bytes, k->inplace ? " in place" : "", mg_status_name(st), mg_last_error());
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

/* The progress line on stderr (the printer only, when stderr is a terminal). */
typedef struct mg_bench_progress {
  double t0;
  size_t steps, done; /* lines of the sweep, lines printed */
  int shown, tty;
} mg_bench_progress_t;

static void mg_bench_progress_clear(mg_bench_progress_t *pr) {
  if (!pr->shown) return;
  fprintf(stderr, "\r\033[K");
  pr->shown = 0;
}

static void mg_bench_progress(mg_bench_progress_t *pr, mg_bench_coll_t c, size_t bytes) {
  pr->done++;
  if (!pr->tty || mg_bench_now() - pr->t0 < 2.0 || pr->done >= pr->steps) return;
  fprintf(stderr, "\r\033[K  bench: %s %zu B done (%zu/%zu), %.0f s", mg_bench_coll_name(c),
          bytes, pr->done, pr->steps, mg_bench_now() - pr->t0);
  pr->shown = 1;
}

int mg_bench_sweep(mg_bench_part_t *p, int ready, int *completed) {
  const mg_bench_opts_t *o = p->o;
  mg_bench_report_t *rep = p->rep;
  mg_bench_progress_t pr = {.t0 = mg_bench_now(), .tty = isatty(STDERR_FILENO)};
  const size_t row0 = rep != NULL ? rep->res.n : 0; /* --algo: earlier sweeps' rows before it */
  for (int ci = 0; ci < o->ncolls; ci++)
    for (size_t size = o->minbytes, more = 1; more; more = (size_t)mg_bench_next(o, &size))
      pr.steps++;

  /* The printer's files are opened before anything runs: a path that cannot be written is bad
   * input, and nothing is printed on stdout for it. */
  double start[2] = {rep != NULL && mg_bench_report_open(rep) != 0, !ready};
  if (rep != NULL && start[0] == 0) mg_bench_print_preamble(stdout, o);
  if (rep != NULL && start[0] == 0 && p->comms != NULL)
    mg_bench_print_memory(stdout, p->comms, p->ncomms);
  double failed = 0;
  if (completed) *completed = 0;
  if (p->agree(p, start, 2, MG_MAX) != 0)
    failed = 1;
  else if (start[0] != 0)
    return 2; /* only the printer sets it, and it then has no file open */
  else
    failed = start[1];

  for (int ci = 0; ci < o->ncolls && failed == 0; ci++) {
    const mg_bench_coll_t c = (mg_bench_coll_t)o->colls[ci];
    if (o->inplace_modes == 2 && !mg_bench_coll_has_inplace(c)) {
      if (rep)
        printf("#\n# Collective: %s has no in-place form: nothing to run with --inplace 1\n",
               mg_bench_coll_name(c));
      continue;
    }
    if (rep) mg_bench_print_header(stdout, c);
    /* A part that warms (the GPUs') runs every size once before the first is timed. */
    for (size_t s = o->minbytes, more = p->warm != NULL; more && failed == 0;
         more = (size_t)mg_bench_next(o, &s)) {
      mg_bench_case_t k = {c, o->dtype, o->op, o->root, o->nranks, !(o->inplace_modes & 1),
                           mg_bench_geometry(c, s, o->dtype, o->nranks)};
      if (p->warm(p, &k) != 0) failed = 1;
    }
    size_t size = o->minbytes;
    do {
      mg_bench_case_t k = {c, o->dtype, o->op, o->root, o->nranks, 0,
                           mg_bench_geometry(c, size, o->dtype, o->nranks)};
      mg_bench_result_t rows[2];
      int have[2] = {0, 0};
      for (int ip = 0; ip < 2 && failed == 0; ip++) {
        if (!(o->inplace_modes & (1 << ip)) || (ip && !mg_bench_coll_has_inplace(c))) continue;
        k.inplace = ip;
        if (p->measure(p, &k, &rows[ip]) != 0) {
          failed = 1;
        } else if (rep) {
          have[ip] = 1;
          if (mg_bench_push(&rep->res, &rows[ip]) != 0) {
            fprintf(stderr, "mgcomm bench: out of memory\n");
            failed = 1;
          }
        }
      }
      /* Only the printer can fail alone (recording a row): tell the others. */
      if (p->agree(p, &failed, 1, MG_MAX) != 0) failed = 1;
      if (rep && failed == 0) {
        mg_bench_progress_clear(&pr);
        mg_bench_print_line(stdout, o, have[0] ? &rows[0] : NULL, have[1] ? &rows[1] : NULL);
        fflush(stdout);
        mg_bench_progress(&pr, c, k.g.bytes);
      }
    } while (failed == 0 && mg_bench_next(o, &size));
    if (rep && failed == 0) mg_bench_print_footer(stdout, &rep->res, row0, c);
  }

  if (completed) *completed = failed == 0;
  double status = failed != 0;
  if (rep) {
    mg_bench_progress_clear(&pr);
    mg_bench_print_footer(stdout, &rep->res, row0, -1);
    fflush(stdout);
    for (size_t i = 0; i < rep->res.n; i++)
      if (rep->res.rows[i].wrong) status = 1;
    if (mg_bench_report_close(rep, o) != 0) status = 1;
  }
  if (p->agree(p, &status, 1, MG_MAX) != 0) status = 1;
  return (int)status;
}
