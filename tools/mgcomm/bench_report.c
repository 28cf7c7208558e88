/*
 * bench_report.c -- what `mgcomm bench` writes: the table on stdout, with nccl-tests' columns,
 * widths and units (so that tools reading nccl-tests output read ours), the JSON document and
 * the CSV rows. The JSON field names are fixed: other tools read them (docs/bench.md). The
 * files are opened before the sweep (a path that cannot be written is bad input) and written
 * at its end, by the printing participant only.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

static const char *mg_bench_row_op(const mg_bench_opts_t *o, mg_bench_coll_t c) {
  return mg_bench_coll_reduces(c) ? mg_op_name(o->op) : "none";
}

const char *mg_bench_algo_name(mg_algo_t a) {
  switch (a) {
    case MG_ALGO_DEFAULT: return "default";
    case MG_ALGO_AUTO: return "auto";
    case MG_ALGO_NCCL: return "nccl";
    case MG_ALGO_MGCOMM: return "mgcomm";
  }
  return "unknown";
}

void mg_bench_print_preamble(FILE *f, const mg_bench_opts_t *o) {
  if (o->quick_default) {
    char ranks[32] = "";
    if (o->ranks == MG_BENCH_THREADS) snprintf(ranks, sizeof ranks, " -t %d", o->nranks);
    if (o->ranks == MG_BENCH_GPUS) snprintf(ranks, sizeof ranks, " -g %d", o->nranks);
    fprintf(f, "# no arguments: the quick default (mgcomm bench -c all_reduce,all_gather,"
               "reduce_scatter -b 8 -e 64M -f 4%s); mgcomm bench --help lists the options\n",
            ranks);
  }
  fprintf(f, "# mgcomm bench %s: backend %s (%s)\n", mg_version_string(),
          mg_backend_name(o->backend), o->backend_reason);
  fprintf(f, "# nranks %d ", o->nranks);
  switch (o->ranks) {
    case MG_BENCH_THREADS: fprintf(f, "(threads of this process)"); break;
    case MG_BENCH_PROCESSES:
      fprintf(f, "(processes, one rank each, from mg_comm_init_env: %s is set)", o->rank_var);
      break;
    case MG_BENCH_WORLD:
      fprintf(f, "(%s of this process: the workers of one world, driven from one thread "
                 "through mg_world_* and requests)",
              o->backend == MG_BACKEND_NCCL ? "GPUs" : "threads");
      break;
    case MG_BENCH_GPUS:
      fprintf(f, "(GPUs 0 .. %d of this process, one communicator each from mg_comm_init_all, "
                 "driven from one thread: one group per iteration)", o->nranks - 1);
      break;
  }
  fprintf(f, "  minBytes %zu maxBytes %zu step: %zu(%s)", o->minbytes, o->maxbytes,
          o->factor ? o->factor : o->increment, o->factor ? "factor" : "bytes");
  if (o->iters > 0)
    fprintf(f, "  iters: %d", o->iters);
  else
    fprintf(f, "  iters: adaptive, %d to %d (about %.1f s per size; -n fixes it)",
            MG_BENCH_ITERS_MIN, MG_BENCH_ITERS_DEFAULT, MG_BENCH_SIZE_BUDGET_S);
  if (o->warmup >= 0)
    fprintf(f, "  warmup iters: %d", o->warmup);
  else
    fprintf(f, "  warmup iters: adaptive, %d to %d (-w fixes it)", MG_BENCH_WARMUP_MIN,
            MG_BENCH_WARMUP_DEFAULT);
  fprintf(f, "  validation: %d\n", o->check);
  if (o->algo != MG_ALGO_DEFAULT)
    fprintf(f, "# all_reduce: %s (--algo: config->all_reduce_algo of every communicator)\n",
            mg_bench_algo_name(o->algo));
  for (int q = 0; o->gpus != NULL && q < o->nranks; q++)
    fprintf(f, "#   rank %d: GPU %d, %s, %s\n", q, o->gpus[q].ordinal, o->gpus[q].name,
            o->gpus[q].pci_bus_id);
  if (o->ranks == MG_BENCH_GPUS && !o->per_iter)
    fprintf(f, "# time (--timing loop): the slowest GPU's (end - start) over the batch, divided "
               "by its iterations, as nccl-tests times; start and end are CUDA events "
               "(mg_record_timed, mg_request_elapsed) recorded before and after the batch on "
               "its stream");
  else if (o->ranks == MG_BENCH_GPUS)
    fprintf(f, "# time (--timing median): median over iterations of the slowest GPU's (end - "
               "start), where start and end are CUDA events (mg_record_timed, "
               "mg_request_elapsed) recorded before and after the iteration on its stream");
  else if (o->ranks == MG_BENCH_WORLD)
    fprintf(f, "# time: median over iterations of (mg_request_wait returned - mg_world_<op> "
               "called) on the submitting thread, monotonic clock");
  else if (o->one_clock)
    fprintf(f, "# time: median over iterations of (last rank's end - last rank's start), "
               "monotonic clock%s", o->ranks == MG_BENCH_PROCESSES ? " (one machine)" : "");
  else
    fprintf(f, "# time: median over iterations of the slowest rank's (end - start), each rank on "
               "its own monotonic clock (the ranks are on more than one machine)");
  if (o->ranks == MG_BENCH_PROCESSES)
    fprintf(f, "; each iteration starts after an all_reduce of one float64 (the ranks' barrier)");
  fprintf(f, "; algbw = bytes / time; busbw = algbw x nccl-tests' factor\n");
}

void mg_bench_print_header(FILE *f, mg_bench_coll_t c) {
  fprintf(f, "#\n# Collective: %s\n", mg_bench_coll_name(c));
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place"
             "          \n", "", "", "", "", "");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
          "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
          "busbw", "#wrong");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
          "");
}

/* value in at most width characters: the most decimals that fit, else exponent form. */
static void mg_bench_fit(char *s, int width, double v) {
  for (int d = 2; d >= 0; d--)
    if (snprintf(s, (size_t)width + 1, "%*.*f", width, d, v) <= width) return;
  snprintf(s, (size_t)width + 1, "%*.*e", width, width >= 7 ? 1 : 0, v);
}

static void mg_bench_print_body(FILE *f, const mg_bench_opts_t *o, const mg_bench_result_t *r) {
  if (r == NULL) {
    fprintf(f, "  %7s  %6s  %6s  %6s", "", "", "", "");
    return;
  }
  char t[8], a[7], b[7];
  mg_bench_fit(t, 7, r->time_us);
  mg_bench_fit(a, 6, r->algbw_gbs);
  mg_bench_fit(b, 6, r->busbw_gbs);
  if (o->check)
    fprintf(f, "  %7s  %6s  %6s  %6g", t, a, b, (double)r->wrong);
  else
    fprintf(f, "  %7s  %6s  %6s  %6s", t, a, b, "N/A");
}

void mg_bench_print_line(FILE *f, const mg_bench_opts_t *o, const mg_bench_result_t *oop,
                         const mg_bench_result_t *ip) {
  const mg_bench_result_t *r = oop ? oop : ip;
  fprintf(f, "%12zu  %12zu  %8s  %6s  %6d", r->g.bytes, r->g.count, mg_dtype_name(o->dtype),
          mg_bench_row_op(o, r->coll), r->root);
  mg_bench_print_body(f, o, oop);
  mg_bench_print_body(f, o, ip);
  fprintf(f, "\n");
}

void mg_bench_print_footer(FILE *f, const mg_bench_results_t *res, size_t from, int c) {
  uint64_t wrong = 0;
  double bw = 0;
  size_t n = 0;
  for (size_t i = from; i < res->n; i++) {
    if (c >= 0 && (int)res->rows[i].coll != c) continue;
    wrong += res->rows[i].wrong;
    bw += res->rows[i].busbw_gbs;
    n++;
  }
  const double avg = n ? bw / (double)n : 0.0;
  if (c >= 0) {
    fprintf(f, "# %-20s : %llu %s\n", "Out of bounds values", (unsigned long long)wrong,
            wrong ? "FAILED" : "OK");
    fprintf(f, "# %-20s : %g\n", "Avg bus bandwidth", avg);
  } else {
    fprintf(f, "#\n# Summary: %zu results, avg busbw %g GB/s, #wrong total %llu %s\n", n, avg,
            (unsigned long long)wrong, wrong ? "FAILED" : "OK");
  }
}

/* The row of all_reduce of `bytes`, placement ip, under algo; NULL when not measured. */
static const mg_bench_result_t *mg_bench_find(const mg_bench_results_t *res, mg_algo_t algo,
                                              size_t bytes, int ip) {
  for (size_t i = 0; i < res->n; i++) {
    const mg_bench_result_t *r = &res->rows[i];
    if (r->coll == MG_BENCH_ALL_REDUCE && r->algo == algo && r->g.bytes == bytes &&
        r->inplace == ip)
      return r;
  }
  return NULL;
}

void mg_bench_print_algos(FILE *f, const mg_bench_opts_t *o, const mg_bench_results_t *res) {
  fprintf(f, "#\n# all_reduce by implementation (--algo): time (us); ratio: each / %s\n",
          mg_bench_algo_name(o->algos[0]));
  for (int ip = 0; ip < 2; ip++) {
    if (!(o->inplace_modes & (1 << ip))) continue;
    fprintf(f, "# %s\n# %10s", ip ? "in place" : "out of place", "size (B)");
    for (int a = 0; a < o->nalgos; a++) fprintf(f, "  %8s", mg_bench_algo_name(o->algos[a]));
    for (int a = 1; a < o->nalgos; a++) fprintf(f, "  %8s", "ratio");
    fprintf(f, "\n");
    /* Every size that some sweep measured, once, in the order run (a sweep that failed early
     * leaves N/A, the first included). */
    for (size_t i = 0; i < res->n; i++) {
      const mg_bench_result_t *row = &res->rows[i];
      if (row->coll != MG_BENCH_ALL_REDUCE || row->algo == MG_ALGO_DEFAULT || row->inplace != ip)
        continue;
      int seen = 0;
      for (size_t j = 0; j < i && !seen; j++)
        seen = res->rows[j].coll == MG_BENCH_ALL_REDUCE && res->rows[j].inplace == ip &&
               res->rows[j].g.bytes == row->g.bytes;
      if (seen) continue;
      const mg_bench_result_t *first = mg_bench_find(res, o->algos[0], row->g.bytes, ip);
      fprintf(f, "# %10zu", row->g.bytes); /* comments: nccl-tests' readers skip them */
      for (int a = 0; a < o->nalgos; a++) {
        const mg_bench_result_t *r = mg_bench_find(res, o->algos[a], row->g.bytes, ip);
        if (r != NULL) fprintf(f, "  %8.2f", r->time_us);
        else fprintf(f, "  %8s", "N/A");
      }
      for (int a = 1; a < o->nalgos; a++) {
        const mg_bench_result_t *r = mg_bench_find(res, o->algos[a], row->g.bytes, ip);
        if (r != NULL && first != NULL && first->time_us > 0)
          fprintf(f, "  %8.3f", r->time_us / first->time_us);
        else
          fprintf(f, "  %8s", "N/A");
      }
      fprintf(f, "\n");
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Files */

/* Finite numbers only: JSON has no NaN or infinity. */
static double mg_bench_finite(double v) { return isfinite(v) ? v : 0.0; }

static void mg_bench_write_json(FILE *f, const mg_bench_opts_t *o, const mg_bench_results_t *res) {
  char host[256] = "";
  /* On failure the host stays "": the name is information, not a reason to fail the run. */
  (void)gethostname(host, sizeof host - 1);
  char date[32];
  time_t now = time(NULL);
  struct tm tm;
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
  fprintf(f, "{\"mgcomm_version\": ");
  mg_cli_json_str(f, mg_version_string());
  fprintf(f, ", \"backend\": \"%s\", \"backend_reason\": ", mg_backend_name(o->backend));
  mg_cli_json_str(f, o->backend_reason);
  fprintf(f, ", \"nranks\": %d, \"ranks_are\": \"%s\", \"api\": \"%s\", \"date\": \"%s\",\n",
          o->nranks,
          o->ranks == MG_BENCH_PROCESSES ? "processes"
          : o->backend == MG_BACKEND_NCCL ? "gpus"
                                          : "threads",
          o->ranks == MG_BENCH_WORLD ? "world" : "comm", date);
  fprintf(f, " \"machine\": {\"host\": ");
  mg_cli_json_str(f, host);
  fprintf(f, ", \"cpus\": %ld, \"gpus\": [", sysconf(_SC_NPROCESSORS_ONLN));
  for (int q = 0; o->gpus != NULL && q < o->nranks; q++) {
    if (q) fprintf(f, ", ");
    mg_cli_json_str(f, o->gpus[q].name);
  }
  fprintf(f, "]},\n \"results\": [");
  for (size_t i = 0; i < res->n; i++) {
    const mg_bench_result_t *r = &res->rows[i];
    fprintf(f,
            "%s\n  {\"collective\": \"%s\", \"bytes\": %zu, \"count\": %zu, \"dtype\": \"%s\", "
            "\"op\": \"%s\", \"root\": %d, \"inplace\": %s, \"time_us\": %.6g, \"algbw_gbs\": "
            "%.6g, \"busbw_gbs\": %.6g, \"wrong\": %llu, \"iters\": %d, \"warmup\": %d, "
            "\"algo\": \"%s\"}",
            i ? "," : "", mg_bench_coll_name(r->coll), r->g.bytes, r->g.count,
            mg_dtype_name(o->dtype), mg_bench_row_op(o, r->coll), r->root,
            r->inplace ? "true" : "false", mg_bench_finite(r->time_us),
            mg_bench_finite(r->algbw_gbs), mg_bench_finite(r->busbw_gbs),
            (unsigned long long)r->wrong, r->iters, r->warmup, mg_bench_algo_name(r->algo));
  }
  fprintf(f, "\n ]}\n");
}

static void mg_bench_write_csv(FILE *f, const mg_bench_opts_t *o, const mg_bench_results_t *res) {
  fprintf(f, "collective,bytes,count,dtype,op,root,inplace,time_us,algbw_gbs,busbw_gbs,wrong,"
             "iters,warmup,algo\n");
  for (size_t i = 0; i < res->n; i++) {
    const mg_bench_result_t *r = &res->rows[i];
    fprintf(f, "%s,%zu,%zu,%s,%s,%d,%s,%.6g,%.6g,%.6g,%llu,%d,%d,%s\n", mg_bench_coll_name(r->coll),
            r->g.bytes, r->g.count, mg_dtype_name(o->dtype), mg_bench_row_op(o, r->coll), r->root,
            r->inplace ? "true" : "false", mg_bench_finite(r->time_us),
            mg_bench_finite(r->algbw_gbs), mg_bench_finite(r->busbw_gbs),
            (unsigned long long)r->wrong, r->iters, r->warmup, mg_bench_algo_name(r->algo));
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Opening and closing */

static FILE *mg_bench_open(const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) fprintf(stderr, "mgcomm bench: cannot write %s: %s\n", path, strerror(errno));
  return f;
}

int mg_bench_report_open(mg_bench_report_t *rep) {
  rep->json = rep->json_path ? mg_bench_open(rep->json_path) : NULL;
  rep->csv = rep->csv_path ? mg_bench_open(rep->csv_path) : NULL;
  if ((!rep->json_path || rep->json) && (!rep->csv_path || rep->csv)) return 0;
  /* Nothing was written to them; a failing close would change nothing. */
  if (rep->json) (void)fclose(rep->json);
  if (rep->csv) (void)fclose(rep->csv);
  rep->json = rep->csv = NULL;
  return 2;
}

/* Closes f; 0, or -1 after a message when something could not be written. */
static int mg_bench_close(FILE *f, const char *path) {
  int bad = ferror(f);
  bad |= fclose(f) != 0;
  if (bad) fprintf(stderr, "mgcomm bench: could not write all of %s\n", path);
  return bad ? -1 : 0;
}

int mg_bench_report_close(mg_bench_report_t *rep, const mg_bench_opts_t *o) {
  int bad = 0;
  if (rep->json) {
    mg_bench_write_json(rep->json, o, &rep->res);
    bad |= mg_bench_close(rep->json, rep->json_path) != 0;
  }
  if (rep->csv) {
    mg_bench_write_csv(rep->csv, o, &rep->res);
    bad |= mg_bench_close(rep->csv, rep->csv_path) != 0;
  }
  rep->json = rep->csv = NULL;
  return bad;
}
