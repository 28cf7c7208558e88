/*
 * bench_gpus.c -- -g N: ranks as the GPUs 0 .. N-1 of this process on the NCCL backend, as
 * nccl-tests runs with -g: one communicator per GPU from one mg_comm_init_all, and this one
 * thread posting every rank's call of an iteration inside one mg_group_begin/end. It is the only
 * participant of the sweep (bench_run.c): there is nothing to agree on.
 *
 * Buffers are device memory of each rank's GPU (bench_mem.c: mg_mem_alloc, mg_memcpy). The
 * operations go on each communicator's own stream (mg_comm_stream: a non-blocking CUDA stream,
 * as nccl-tests makes one per GPU; the legacy default stream cost 1-3 us per call on one H100);
 * mg_memcpy copies on another stream of the library's, never while work is in flight.
 *
 * The time: on every rank, mg_record_timed before the first iteration of a batch and after the
 * last (requests of CUDA events that take the GPU's timestamp), each waited for within the
 * communicator's timeout; the slowest GPU's time between them divided by the iterations is the
 * row's time, as nccl-tests times (--timing loop, the default), so that the two tables compare
 * line by line. --timing median marks every iteration instead and reports the median of the
 * slowest GPU's iteration times, as on the host backend (a mark costs the host a microsecond or
 * two between iterations). The communicators learn of completion by polling
 * (MG_COMPLETION_POLL), so that no host function sits on a stream between two timed events.
 *
 * For each collective: first every size of its sweep runs its warm-up iterations once (as
 * nccl-tests does); then for each size and placement: fill and copy in every rank's images, run
 * one checked iteration (timed as a batch of one: it sets the iteration counts), copy out and
 * check every rank, then the warm-up batch and the timed batch.
 *
 * At the end the communicators are destroyed without mg_comm_finalize: every batch was waited
 * for, so nothing is in flight, and finalize is collective (one thread calling it on one rank
 * after another would have the first wait for the others).
 */
#include <stdlib.h>

#include "bench.h"

typedef struct mg_bench_gpus {
  mg_bench_part_t part;   /* first member: the sweep's view */
  mg_comm_t **comms;      /* rank q, on device q */
  mg_stream_t *streams;   /* rank q's: its communicator's own (mg_comm_stream) */
  int n;
  void **send, **buf;     /* per rank: its device memory (mg_bench_mem_device) */
  const void **sp;        /* per rank: what one operation reads ... */
  void **rp;              /* ... and writes */
  void *send_img, *img;   /* host images, one rank at a time */
  int iters_max;          /* the longest batch */
  mg_request_t **marks;   /* mark i of rank q at [i * n + q]: before iteration i (i <= iters) */
  double *times;          /* per iteration of the last batch: the slowest rank's time */
} mg_bench_gpus_t;

static int mg_bench_gpus_agree(mg_bench_part_t *p, double *v, size_t n, mg_op_t op) {
  (void)p, (void)v, (void)n, (void)op; /* one participant: its values are the agreement */
  return 0;
}

int mg_bench_gpus_describe(mg_bench_opts_t *o) {
  free(o->gpus); /* --algo: the sweep before described them already */
  o->gpus = calloc((size_t)o->nranks, sizeof *o->gpus);
  if (o->gpus == NULL) {
    fprintf(stderr, "mgcomm bench: out of memory\n");
    return -1;
  }
  for (int q = 0; q < o->nranks; q++) {
    mg_status_t st = mg_device_info(q, &o->gpus[q]);
    if (st != MG_OK) {
      fprintf(stderr, "mgcomm bench: cannot describe GPU %d: %s: %s\n", q, mg_status_name(st),
              mg_last_error());
      return -1;
    }
  }
  return 0;
}

/* Posts `iters` iterations of case k, each one group over every GPU, with a timed mark on every
 * rank before the first and after the last (per_iter: after each), and waits for all of them.
 * times[i] = the slowest rank's time of iteration i (without per_iter, every one is the batch's
 * mean). MG_OK, or the first failure (its message in mg_last_error()). */
static mg_status_t mg_bench_gpus_batch(mg_bench_gpus_t *gp, const mg_bench_case_t *k, int iters,
                                       int per_iter, double *times) {
  const int n = gp->n, nspans = per_iter ? iters : 1, nmarks = (nspans + 1) * n;
  mg_request_t **m = gp->marks;
  mg_status_t st = MG_OK;
  for (int j = 0; j < nmarks; j++) m[j] = NULL;
  for (int q = 0; q < n && st == MG_OK; q++)
    st = mg_record_timed(gp->comms[q], gp->streams[q], &m[q]);
  for (int i = 0; i < iters && st == MG_OK; i++) {
    /* One GPU posts its call alone, as nccl-tests does (a group of one costs a little more). */
    if (n == 1) {
      st = mg_bench_call(k->coll, gp->sp[0], gp->rp[0], k->g.count, k->dtype, k->op, k->root,
                         gp->comms[0], 0, 1, gp->streams[0]);
    } else {
      st = mg_group_begin();
      if (st != MG_OK) break;
      for (int q = 0; q < n; q++) {
        /* Inside the group a failing call is recorded, and mg_group_end returns it. */
        (void)mg_bench_call(k->coll, gp->sp[q], gp->rp[q], k->g.count, k->dtype, k->op,
                            k->root, gp->comms[q], q, n, gp->streams[q]);
      }
      st = mg_group_end();
    }
    const int span = per_iter ? i + 1 : i == iters - 1 ? 1 : 0; /* the mark after it, if any */
    for (int q = 0; q < n && st == MG_OK && span > 0; q++)
      st = mg_record_timed(gp->comms[q], gp->streams[q], &m[span * n + q]);
  }
  /* 0: each wait is bounded by the request's own deadline, the communicator's timeout. */
  for (int j = 0; j < nmarks && st == MG_OK; j++) st = mg_request_wait(m[j], 0);
  for (int i = 0; i < nspans && st == MG_OK; i++) {
    times[i] = 0;
    for (int q = 0; q < n && st == MG_OK; q++) {
      double s = 0;
      st = mg_request_elapsed(m[i * n + q], m[(i + 1) * n + q], &s);
      if (st == MG_OK && s > times[i]) times[i] = s;
    }
  }
  if (st == MG_OK && !per_iter) {
    const double mean = times[0] / iters;
    for (int i = 0; i < iters; i++) times[i] = mean;
  }
  for (int j = 0; j < nmarks; j++) {
    /* Our own requests or NULL: freeing cannot fail (a pending one is detached, after a failure)
     * and leaves the failure's message in place. */
    (void)mg_request_free(m[j]);
  }
  return st;
}

/* Where each rank's operation of case k reads and writes (gp->sp, gp->rp). */
static void mg_bench_gpus_place(mg_bench_gpus_t *gp, const mg_bench_case_t *k) {
  const size_t e = mg_dtype_size(k->dtype);
  for (int q = 0; q < gp->n; q++) {
    char *buf = gp->buf[q];
    gp->sp[q] = k->inplace ? buf + (size_t)q * k->g.send_ip_off * e : gp->send[q];
    gp->rp[q] = buf + (k->inplace ? (size_t)q * k->g.recv_ip_off * e : 0);
  }
}

static int mg_bench_gpus_measure(mg_bench_part_t *p, const mg_bench_case_t *k,
                                 mg_bench_result_t *row) {
  mg_bench_gpus_t *gp = (mg_bench_gpus_t *)p;
  const mg_bench_opts_t *o = p->o;
  const mg_bench_mem_t *mem = &mg_bench_mem_device;
  const size_t e = mg_dtype_size(k->dtype);
  const size_t bufn = k->g.send_count > k->g.recv_count ? k->g.send_count : k->g.recv_count;
  mg_status_t st = MG_OK;
  mg_bench_gpus_place(gp, k);
  for (int q = 0; q < gp->n && o->check && st == MG_OK; q++) {
    mg_bench_fill(k, q, gp->send_img, gp->img);
    if (!k->inplace) st = mem->put(gp->comms[q], gp->send[q], gp->send_img, k->g.send_count * e);
    if (st == MG_OK) st = mem->put(gp->comms[q], gp->buf[q], gp->img, bufn * e);
  }
  double est = 0;
  if (st == MG_OK) st = mg_bench_gpus_batch(gp, k, 1, 1, &est);
  uint64_t wrong = 0;
  for (int q = 0; q < gp->n && st == MG_OK && o->check; q++) {
    st = mem->get(gp->comms[q], gp->img, gp->buf[q], bufn * e);
    if (st == MG_OK) wrong += mg_bench_check(k, q, gp->img);
  }
  int iters = 0, warmup = 0;
  if (st == MG_OK) mg_bench_counts(o, est, &iters, &warmup);
  if (st == MG_OK && warmup > 0) st = mg_bench_gpus_batch(gp, k, warmup, o->per_iter, gp->times);
  if (st == MG_OK) st = mg_bench_gpus_batch(gp, k, iters, o->per_iter, gp->times);
  if (st != MG_OK) {
    mg_bench_failed("gpus", k, st); /* the library's message names the rank */
    return -1;
  }
  mg_bench_row(o, k, gp->times, iters, warmup, wrong, row);
  return 0;
}

/* Before a collective's first timed size, every size of its sweep runs its warm-up iterations,
 * as nccl-tests warms every size before it times any: otherwise the first sizes are timed on a
 * GPU and a host that have only just begun (one H100, NCCL's one-rank all_reduce of 8-128 B: 7.0-
 * 7.5 us per call in the first of three runs, 5.0 in the third, against nccl-tests' 4.8-5.0;
 * bench/results/2026-11-24-nccl-vs-nccl-tests-1xH100-after-merges.md). */
static int mg_bench_gpus_warm(mg_bench_part_t *p, const mg_bench_case_t *k) {
  mg_bench_gpus_t *gp = (mg_bench_gpus_t *)p;
  const int iters = p->o->warmup >= 0 ? p->o->warmup : MG_BENCH_WARMUP_DEFAULT;
  mg_bench_gpus_place(gp, k);
  mg_status_t st = iters > 0 ? mg_bench_gpus_batch(gp, k, iters, 0, gp->times) : MG_OK;
  if (st != MG_OK) {
    mg_bench_failed("gpus", k, st);
    return -1;
  }
  return 0;
}

int mg_bench_run_gpus(mg_bench_opts_t *o, mg_bench_report_t *rep) {
  const int n = o->nranks;
  const mg_bench_mem_t *mem = &mg_bench_mem_device;
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.completion = MG_COMPLETION_POLL;
  cfg.all_reduce_algo = o->algo;
  mg_bench_gpus_t gp = {.part = {.o = o, .rep = rep, .agree = mg_bench_gpus_agree,
                                 .measure = mg_bench_gpus_measure, .warm = mg_bench_gpus_warm},
                        .n = n};
  size_t send_max, buf_max;
  mg_bench_extent(o, &send_max, &buf_max);
  gp.comms = calloc((size_t)n, sizeof *gp.comms);
  gp.streams = calloc((size_t)n, sizeof *gp.streams);
  gp.send = calloc((size_t)n, sizeof *gp.send);
  gp.buf = calloc((size_t)n, sizeof *gp.buf);
  gp.sp = calloc((size_t)n, sizeof *gp.sp);
  gp.rp = calloc((size_t)n, sizeof *gp.rp);
  gp.iters_max = o->iters > 0 ? o->iters : MG_BENCH_ITERS_DEFAULT;
  if (o->warmup > gp.iters_max) gp.iters_max = o->warmup;
  gp.marks = calloc((size_t)(gp.iters_max + 1) * (size_t)n, sizeof *gp.marks);
  gp.times = calloc((size_t)gp.iters_max, sizeof *gp.times);
  gp.send_img = calloc(1, send_max ? send_max : 1);
  gp.img = calloc(1, buf_max ? buf_max : 1);
  int status = 1;
  if (!gp.comms || !gp.streams || !gp.send || !gp.buf || !gp.sp || !gp.rp || !gp.marks ||
      !gp.times || !gp.send_img || !gp.img) {
    fprintf(stderr, "mgcomm bench: out of memory\n");
    goto out;
  }
  mg_status_t st = mg_comm_init_all(&cfg, n, NULL, gp.comms);
  if (st != MG_OK) {
    fprintf(stderr, "mgcomm bench: cannot create %d ranks on GPUs 0 .. %d (nccl backend): %s: "
            "%s\n", n, n - 1, mg_status_name(st), mg_last_error());
    goto out;
  }
  int ready = mg_bench_gpus_describe(o) == 0; /* printed */
  for (int q = 0; q < n && ready; q++) {
    st = mg_comm_stream(gp.comms[q], &gp.streams[q]);
    if (st == MG_OK) st = mem->alloc(gp.comms[q], send_max, &gp.send[q]);
    if (st == MG_OK) st = mem->alloc(gp.comms[q], buf_max, &gp.buf[q]);
    /* zeros, for runs without --check, which never fill them */
    if (st == MG_OK) st = mem->put(gp.comms[q], gp.send[q], gp.send_img, send_max);
    if (st == MG_OK) st = mem->put(gp.comms[q], gp.buf[q], gp.img, buf_max);
    if (st != MG_OK) {
      fprintf(stderr, "mgcomm bench: rank %d (GPU %d): cannot get its stream, or allocate and "
              "clear %zu and %zu bytes of device memory: %s: %s\n", q, q, send_max, buf_max, mg_status_name(st),
              mg_last_error());
      ready = 0;
    }
  }
  gp.part.comms = gp.comms;
  gp.part.ncomms = n;
  status = mg_bench_sweep(&gp.part, ready, NULL);
  for (int q = 0; q < n; q++) {
    /* Nothing is in flight (every batch was waited for, or failed and its communicator is in
     * the error state): destroy ends the communicator, and reports nothing to act on. */
    (void)mg_comm_destroy(gp.comms[q]);
  }
  for (int q = 0; q < n; q++) {
    mem->release(gp.send[q]);
    mem->release(gp.buf[q]);
  }
out:
  free(gp.comms);
  free(gp.streams);
  free(gp.send);
  free(gp.buf);
  free(gp.sp);
  free(gp.rp);
  free(gp.marks);
  free(gp.times);
  free(gp.send_img);
  free(gp.img);
  return status;
}
