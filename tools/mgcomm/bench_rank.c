/*
 * bench_rank.c -- one rank of a communicator measuring a case, the same whether the ranks are
 * threads of this process (bench_threads.c) or processes of a job (bench_procs.c); the mode
 * gives the barrier and the agreement.
 *
 * For each collective, size and placement, every rank:
 *   1. fills its buffers: its pattern where the operation reads, poison where it writes;
 *   2. meets the others (the barrier), runs the operation once and checks its result (#wrong);
 *   3. agrees with the others on whether that run failed, on #wrong, on its time, and from the
 *      time on the number of iterations (unless -n / -w fixed them): about
 *      MG_BENCH_SIZE_BUDGET_S of timed work, between MG_BENCH_ITERS_MIN and
 *      MG_BENCH_ITERS_DEFAULT iterations;
 *   4. runs the warm-up iterations back to back, then the timed iterations, each one after the
 *      barrier, reading the monotonic clock before and after the call.
 *
 * The time rule. When every rank reads one clock (threads; processes on one machine), the time
 * of an iteration runs from the last rank's start to the last rank's end: a collective cannot
 * finish before every rank has entered it, and a barrier lets ranks go at different moments (a
 * rank woken from a futex can leave tens of microseconds after another on a busy machine), which
 * a per-rank time would count as latency. Clocks of different machines cannot be compared; there
 * the time of an iteration is the slowest rank's own end - start, which does include that skew.
 * Either way the reported time is the median over iterations.
 */
#include <stdlib.h>

#include "bench.h"

/* start[0 .. n) and end[0 .. n) = start + n: this rank's clock readings around n runs. Turns
 * end[i] into the time of run i by the time rule, on every rank. 0 or -1 (agreement failed). */
static int mg_bench_rank_times(mg_bench_rank_t *r, double *start, int n) {
  mg_bench_part_t *p = &r->part;
  double *end = start + n;
  if (p->o->one_clock) {
    if (p->agree(p, start, 2 * (size_t)n, MG_MAX) != 0) return -1;
    for (int i = 0; i < n; i++) end[i] -= start[i];
    return 0;
  }
  for (int i = 0; i < n; i++) end[i] -= start[i];
  return p->agree(p, end, (size_t)n, MG_MAX);
}

mg_status_t mg_bench_rank_comm_barrier(mg_bench_rank_t *r) {
  double one = 0;
  return mg_all_reduce(&one, &one, 1, MG_FLOAT64, MG_MAX, r->comm, NULL);
}

/* Prints a failed run of this rank. */
static void mg_bench_rank_failed(mg_bench_rank_t *r, const mg_bench_case_t *k, mg_status_t st) {
  char who[32];
  snprintf(who, sizeof who, "rank %d", r->rank);
  mg_bench_failed(who, k, st);
}

/* Whether any rank failed (on every rank); -1 as well when they cannot agree. */
static int mg_bench_rank_any_failed(mg_bench_rank_t *r, mg_status_t st) {
  double failed = st != MG_OK;
  if (r->part.agree(&r->part, &failed, 1, MG_MAX) != 0 || failed != 0) return -1;
  return 0;
}

static int mg_bench_rank_measure(mg_bench_part_t *p, const mg_bench_case_t *k,
                                 mg_bench_result_t *row) {
  mg_bench_rank_t *r = (mg_bench_rank_t *)p;
  const mg_bench_opts_t *o = p->o;
  const int rank = r->rank;
  const size_t e = mg_dtype_size(k->dtype);
  const size_t bufn = k->g.send_count > k->g.recv_count ? k->g.send_count : k->g.recv_count;
  char *send = k->inplace ? (char *)r->buf + (size_t)rank * k->g.send_ip_off * e : r->send;
  char *recv = (char *)r->buf + (k->inplace ? (size_t)rank * k->g.recv_ip_off * e : 0);
#define MG_BENCH_CALL()                                                                        \
  mg_bench_call(k->coll, send, recv, k->g.count, k->dtype, k->op, k->root, r->comm, rank,       \
                o->nranks, NULL)

  mg_status_t put = MG_OK;
  if (o->check) {
    mg_bench_fill(k, rank, r->send_img, r->img);
    if (!k->inplace) put = r->mem->put(r->comm, r->send, r->send_img, k->g.send_count * e);
    if (put == MG_OK) put = r->mem->put(r->comm, r->buf, r->img, bufn * e);
  }
  /* Every rank meets the others, whatever its copy did: none may wait for one that left. */
  mg_status_t st = r->barrier(r);
  if (st == MG_OK) st = put;
  double est[2] = {mg_bench_now(), 0};
  if (st == MG_OK) st = MG_BENCH_CALL();
  est[1] = mg_bench_now();
  double wrong = 0;
  if (st == MG_OK && o->check) {
    st = r->mem->get(r->comm, r->img, r->buf, bufn * e);
    if (st == MG_OK) wrong = (double)mg_bench_check(k, rank, r->img);
  }
  if (st != MG_OK) mg_bench_rank_failed(r, k, st);
  if (mg_bench_rank_any_failed(r, st) != 0 || p->agree(p, &wrong, 1, MG_SUM) != 0 ||
      mg_bench_rank_times(r, est, 1) != 0)
    return -1;

  int iters, warmup;
  mg_bench_counts(o, est[1], &iters, &warmup);
  for (int i = 0; i < warmup && st == MG_OK; i++) st = MG_BENCH_CALL();
  double *start = r->stamps, *end = r->stamps + iters;
  for (int i = 0; i < iters; i++) {
    if (st == MG_OK) st = r->barrier(r);
    start[i] = mg_bench_now();
    if (st == MG_OK) st = MG_BENCH_CALL();
    end[i] = mg_bench_now();
  }
#undef MG_BENCH_CALL
  if (st != MG_OK) mg_bench_rank_failed(r, k, st);
  if (mg_bench_rank_any_failed(r, st) != 0 || mg_bench_rank_times(r, start, iters) != 0)
    return -1;
  if (p->rep) mg_bench_row(o, k, end, iters, warmup, (uint64_t)wrong, row);
  return 0;
}

int mg_bench_rank_run(mg_bench_rank_t *r) {
  const mg_bench_opts_t *o = r->part.o;
  const int iters_max = o->iters > 0 ? o->iters : MG_BENCH_ITERS_DEFAULT;
  size_t send_max, buf_max;
  mg_bench_extent(o, &send_max, &buf_max);
  r->part.measure = mg_bench_rank_measure;
  r->part.comms = &r->comm;
  r->part.ncomms = 1;
  r->send = r->buf = NULL;
  mg_status_t st = r->mem->alloc(r->comm, send_max, &r->send);
  if (st == MG_OK) st = r->mem->alloc(r->comm, buf_max, &r->buf);
  r->send_img = calloc(1, send_max ? send_max : 1);
  r->img = calloc(1, buf_max ? buf_max : 1);
  r->stamps = malloc(2 * (size_t)iters_max * sizeof *r->stamps);
  int ready = st == MG_OK && r->send_img && r->img && r->stamps;
  if (!ready) {
    fprintf(stderr, "mgcomm bench: rank %d: cannot allocate 2 x %zu bytes (%s) and as many on the "
            "host\n", r->rank, buf_max, r->mem->name);
  } else { /* zeros, for runs without --check, which never fill them */
    st = r->mem->put(r->comm, r->send, r->send_img, send_max);
    if (st == MG_OK) st = r->mem->put(r->comm, r->buf, r->img, buf_max);
    ready = st == MG_OK;
    if (!ready)
      fprintf(stderr, "mgcomm bench: rank %d: cannot clear its buffers: %s: %s\n", r->rank,
              mg_status_name(st), mg_last_error());
  }

  int completed;
  int status = mg_bench_sweep(&r->part, ready, &completed);
  if (completed) {
    st = mg_comm_finalize(r->comm);
    if (st != MG_OK) {
      fprintf(stderr, "mgcomm bench: rank %d: mg_comm_finalize: %s: %s\n", r->rank,
              mg_status_name(st), mg_last_error());
      status = 1;
    }
  }
  r->mem->release(r->send);
  r->mem->release(r->buf);
  free(r->send_img);
  free(r->img);
  free(r->stamps);
  return status;
}
