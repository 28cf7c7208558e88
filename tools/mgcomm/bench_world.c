/*
 * bench_world.c -- --world: the collectives through the world and its requests. One world of
 * -t ranks on the host backend (each rank a worker thread of this process, mg-rank<N>), or of -g
 * GPUs on the NCCL backend (devices 0 .. N-1, each rank's worker posting on the library's own
 * stream of its device); this thread is the only submitter and the only participant of the sweep
 * (bench_run.c), so there is nothing to agree on.
 *
 * The world hands out no communicator, and GPU buffers are allocated and copied through one
 * (mg_mem_alloc, mg_memcpy): on the NCCL backend each device also gets a communicator of one
 * rank of its own, used for nothing else (mems). A copy in runs before the submission and
 * returns complete; a copy out runs after the request completed, so the world's streams and the
 * copies never overlap.
 *
 * For each collective, size and placement it fills every rank's buffers, submits the world
 * operation (mg_world_<op>, a world group of sends and receives for sendrecv), waits for its
 * request, and checks every rank's result; then it runs the warm-up and timed iterations back to
 * back. The time of an iteration runs from just before the submission to the return of
 * mg_request_wait, on this thread's monotonic clock: what a program that drives all ranks from
 * one thread waits for, the world's hand-off to its workers and the completion included.
 */
#include <stdlib.h>

#include "bench.h"

typedef struct mg_bench_world {
  mg_bench_part_t part;      /* first member: the sweep's view */
  const mg_bench_mem_t *mem;
  mg_world_t *world;
  int n;
  mg_comm_t **mems;          /* per rank: the communicator its memory goes through (NULL: host) */
  void **send, **buf;        /* per rank: the operation's buffers (mem) */
  const void **sp;           /* per rank: what one operation reads ... */
  void **rp;                 /* ... and writes */
  void *send_img, *img;      /* host images, one rank at a time */
  double *times;             /* per timed iteration, seconds */
} mg_bench_world_t;

static int mg_bench_world_agree(mg_bench_part_t *p, double *v, size_t n, mg_op_t op) {
  (void)p, (void)v, (void)n, (void)op; /* one participant: its values are the agreement */
  return 0;
}

/* Submits case k on every rank (buffers w->sp, w->rp); MG_OK and *req, or the world's refusal. */
static mg_status_t mg_bench_world_submit(mg_bench_world_t *w, const mg_bench_case_t *k,
                                         mg_request_t **req) {
  mg_world_t *wd = w->world;
  const void *const *s = w->sp;
  void *const *r = w->rp;
  const size_t c = k->g.count;
  switch (k->coll) {
    case MG_BENCH_ALL_REDUCE: return mg_world_all_reduce(wd, s, r, c, k->dtype, k->op, req);
    case MG_BENCH_ALL_GATHER: return mg_world_all_gather(wd, s, r, c, k->dtype, req);
    case MG_BENCH_REDUCE_SCATTER:
      return mg_world_reduce_scatter(wd, s, r, c, k->dtype, k->op, req);
    case MG_BENCH_ALL_TO_ALL: return mg_world_all_to_all(wd, s, r, c, k->dtype, req);
    case MG_BENCH_BROADCAST: return mg_world_broadcast(wd, s, r, c, k->dtype, k->root, req);
    case MG_BENCH_REDUCE: return mg_world_reduce(wd, s, r, c, k->dtype, k->op, k->root, req);
    case MG_BENCH_GATHER: return mg_world_gather(wd, s, r, c, k->dtype, k->root, req);
    case MG_BENCH_SCATTER: return mg_world_scatter(wd, s, r, c, k->dtype, k->root, req);
    case MG_BENCH_SENDRECV: {
      mg_status_t st;
      MG_WORLD_GROUP(wd, req, st) {
        for (int q = 0; q < w->n; q++) {
          /* Inside the group a failing call is recorded, and the group's end returns it. */
          (void)mg_world_send(wd, q, s[q], c, k->dtype, (q + 1) % w->n, NULL);
          (void)mg_world_recv(wd, q, r[q], c, k->dtype, (q - 1 + w->n) % w->n, NULL);
        }
      }
      return st;
    }
    case MG_BENCH_COLL_COUNT: break;
  }
  return MG_ERR_INVALID_ARGUMENT;
}

/* One operation from submission to completion; *sec its time. */
static mg_status_t mg_bench_world_once(mg_bench_world_t *w, const mg_bench_case_t *k,
                                       double *sec) {
  mg_request_t *req = NULL;
  const double t0 = mg_bench_now();
  mg_status_t st = mg_bench_world_submit(w, k, &req);
  if (st == MG_OK) st = mg_request_wait(req, 0);
  *sec = mg_bench_now() - t0;
  /* req is a live request of ours (or NULL): freeing it cannot fail, and leaves the wait's
   * message in place. */
  (void)mg_request_free(req);
  return st;
}

static int mg_bench_world_measure(mg_bench_part_t *p, const mg_bench_case_t *k,
                                  mg_bench_result_t *row) {
  mg_bench_world_t *w = (mg_bench_world_t *)p;
  const mg_bench_opts_t *o = p->o;
  const size_t e = mg_dtype_size(k->dtype);
  const size_t bufn = k->g.send_count > k->g.recv_count ? k->g.send_count : k->g.recv_count;
  mg_status_t st = MG_OK;
  for (int q = 0; q < w->n; q++) {
    char *buf = w->buf[q];
    mg_comm_t *mc = w->mems[q];
    w->sp[q] = k->inplace ? buf + (size_t)q * k->g.send_ip_off * e : w->send[q];
    w->rp[q] = buf + (k->inplace ? (size_t)q * k->g.recv_ip_off * e : 0);
    if (o->check && st == MG_OK) {
      mg_bench_fill(k, q, w->send_img, w->img);
      if (!k->inplace) st = w->mem->put(mc, w->send[q], w->send_img, k->g.send_count * e);
      if (st == MG_OK) st = w->mem->put(mc, buf, w->img, bufn * e);
    }
  }
  double est;
  if (st == MG_OK) st = mg_bench_world_once(w, k, &est);
  uint64_t wrong = 0;
  for (int q = 0; q < w->n && st == MG_OK && o->check; q++) {
    st = w->mem->get(w->mems[q], w->img, w->buf[q], bufn * e);
    if (st == MG_OK) wrong += mg_bench_check(k, q, w->img);
  }
  int iters = 0, warmup = 0;
  if (st == MG_OK) mg_bench_counts(o, est, &iters, &warmup);
  for (int i = 0; i < warmup && st == MG_OK; i++) st = mg_bench_world_once(w, k, &est);
  for (int i = 0; i < iters && st == MG_OK; i++) st = mg_bench_world_once(w, k, &w->times[i]);
  if (st != MG_OK) {
    mg_bench_failed("world", k, st); /* the world's message names the rank */
    return -1;
  }
  mg_bench_row(o, k, w->times, iters, warmup, wrong, row);
  return 0;
}

/* NCCL backend: a communicator of one rank on each device of the world, for its memory. */
static mg_status_t mg_bench_world_mems(mg_bench_world_t *w, const mg_config_t *cfg) {
  for (int q = 0; q < w->n; q++) {
    mg_status_t st = mg_comm_init_all(cfg, 1, &q, &w->mems[q]);
    if (st != MG_OK) {
      fprintf(stderr, "mgcomm bench: world: cannot create the communicator of device %d for its "
              "buffers: %s: %s\n", q, mg_status_name(st), mg_last_error());
      return st;
    }
  }
  return MG_OK;
}

int mg_bench_run_world(mg_bench_opts_t *o, mg_bench_report_t *rep) {
  o->one_clock = 1;
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = o->backend;
  cfg.all_reduce_algo = o->algo;
  const int n = o->nranks;
  const int gpus = o->backend == MG_BACKEND_NCCL;
  mg_bench_world_t w = {.part = {.o = o, .rep = rep, .agree = mg_bench_world_agree,
                                 .measure = mg_bench_world_measure},
                        .mem = gpus ? &mg_bench_mem_device : &mg_bench_mem_host, .n = n};
  mg_status_t st = mg_world_create(&cfg, n, NULL, &w.world);
  if (st != MG_OK) {
    fprintf(stderr, "mgcomm bench: cannot create a world of %d ranks on the %s backend: %s: %s\n",
            n, mg_backend_name(o->backend), mg_status_name(st), mg_last_error());
    return 1;
  }
  size_t send_max, buf_max;
  mg_bench_extent(o, &send_max, &buf_max);
  const int iters_max = o->iters > 0 ? o->iters : MG_BENCH_ITERS_DEFAULT;
  w.mems = calloc((size_t)n, sizeof *w.mems);
  w.send = calloc((size_t)n, sizeof *w.send);
  w.buf = calloc((size_t)n, sizeof *w.buf);
  w.sp = calloc((size_t)n, sizeof *w.sp);
  w.rp = calloc((size_t)n, sizeof *w.rp);
  w.send_img = calloc(1, send_max ? send_max : 1);
  w.img = calloc(1, buf_max ? buf_max : 1);
  w.times = malloc((size_t)iters_max * sizeof *w.times);
  int ready = w.mems && w.send && w.buf && w.sp && w.rp && w.send_img && w.img && w.times;
  if (ready && gpus) ready = mg_bench_world_mems(&w, &cfg) == MG_OK; /* printed */
  if (ready && gpus) ready = mg_bench_gpus_describe(o) == 0;        /* printed */
  for (int q = 0; q < n && ready; q++) {
    st = w.mem->alloc(w.mems[q], send_max, &w.send[q]);
    if (st == MG_OK) st = w.mem->alloc(w.mems[q], buf_max, &w.buf[q]);
    /* zeros, for runs without --check, which never fill them */
    if (st == MG_OK) st = w.mem->put(w.mems[q], w.send[q], w.send_img, send_max);
    if (st == MG_OK) st = w.mem->put(w.mems[q], w.buf[q], w.img, buf_max);
    if (st != MG_OK) {
      fprintf(stderr, "mgcomm bench: world: rank %d: cannot allocate and clear 2 x %zu bytes "
              "(%s): %s: %s\n", q, buf_max, w.mem->name, mg_status_name(st), mg_last_error());
      ready = 0;
    }
  }
  if (!(w.mems && w.send && w.buf && w.sp && w.rp && w.send_img && w.img && w.times))
    fprintf(stderr, "mgcomm bench: world: out of memory\n");
  /* A world has nothing to finalize: whatever the sweep's end, destroy ends it (after a failure
   * the world is in the error state). */
  const int status = mg_bench_sweep(&w.part, ready, NULL);
  (void)mg_world_destroy(w.world);
  for (int q = 0; q < n && w.send && w.buf; q++) {
    w.mem->release(w.send[q]);
    w.mem->release(w.buf[q]);
  }
  for (int q = 0; q < n && w.mems; q++) {
    /* Used only for copies, each complete when it returned: destroy has nothing to end. */
    (void)mg_comm_destroy(w.mems[q]);
  }
  free(w.mems);
  free(w.send);
  free(w.buf);
  free(w.sp);
  free(w.rp);
  free(w.send_img);
  free(w.img);
  free(w.times);
  return status;
}
