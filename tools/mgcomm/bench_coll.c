/*
 * bench_coll.c -- the collectives of `mgcomm bench`: names, the buffers of each size and the
 * bytes that bandwidth counts, both with nccl-tests' meaning (src/<coll>.cu there: GetCollByteCount
 * and GetBw), and the one call that runs each.
 */
#include <string.h>

#include "bench.h"

static const struct {
  const char *name;
  int reduces, rooted, inplace;
  int divided; /* the size is split over ranks: per-rank parts, rounded to 16 bytes */
} mg_bench_colls[MG_BENCH_COLL_COUNT] = {
    [MG_BENCH_ALL_REDUCE] = {"all_reduce", 1, 0, 1, 0},
    [MG_BENCH_ALL_GATHER] = {"all_gather", 0, 0, 1, 1},
    [MG_BENCH_REDUCE_SCATTER] = {"reduce_scatter", 1, 0, 1, 1},
    /* mgcomm defines no in-place all_to_all (any overlap is an error), nor a ring of send/recv
     * on one buffer (a rank would overwrite what it has not sent yet). */
    [MG_BENCH_ALL_TO_ALL] = {"all_to_all", 0, 0, 0, 1},
    [MG_BENCH_BROADCAST] = {"broadcast", 0, 1, 1, 0},
    [MG_BENCH_REDUCE] = {"reduce", 1, 1, 1, 0},
    [MG_BENCH_GATHER] = {"gather", 0, 1, 1, 1},
    [MG_BENCH_SCATTER] = {"scatter", 0, 1, 1, 1},
    [MG_BENCH_SENDRECV] = {"sendrecv", 0, 0, 0, 0},
};

const char *mg_bench_coll_name(mg_bench_coll_t c) { return mg_bench_colls[c].name; }

int mg_bench_coll_from_name(const char *name) {
  for (int c = 0; c < MG_BENCH_COLL_COUNT; c++)
    if (strcmp(name, mg_bench_colls[c].name) == 0) return c;
  return -1;
}

int mg_bench_coll_reduces(mg_bench_coll_t c) { return mg_bench_colls[c].reduces; }
int mg_bench_coll_rooted(mg_bench_coll_t c) { return mg_bench_colls[c].rooted; }
int mg_bench_coll_has_inplace(mg_bench_coll_t c) { return mg_bench_colls[c].inplace; }

double mg_bench_bus_factor(mg_bench_coll_t c, int nranks) {
  const double n = nranks;
  switch (c) {
    case MG_BENCH_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case MG_BENCH_ALL_GATHER:
    case MG_BENCH_REDUCE_SCATTER:
    case MG_BENCH_ALL_TO_ALL:
    case MG_BENCH_GATHER:
    case MG_BENCH_SCATTER: return (n - 1) / n;
    case MG_BENCH_BROADCAST:
    case MG_BENCH_REDUCE:
    case MG_BENCH_SENDRECV:
    case MG_BENCH_COLL_COUNT: break;
  }
  return 1.0;
}

mg_bench_geom_t mg_bench_geometry(mg_bench_coll_t c, size_t bytes, mg_dtype_t dtype, int nranks) {
  const size_t e = mg_dtype_size(dtype), n = (size_t)nranks, total = bytes / e;
  mg_bench_geom_t g = {0};
  if (!mg_bench_colls[c].divided) {
    g.count = g.send_count = g.recv_count = total;
    g.algbw_bytes = total * e;
  } else {
    const size_t part = (total / n) & ~(16 / e - 1); /* per rank, a multiple of 16 bytes */
    g.count = part;
    g.send_count = c == MG_BENCH_ALL_GATHER || c == MG_BENCH_GATHER ? part : part * n;
    g.recv_count = c == MG_BENCH_REDUCE_SCATTER || c == MG_BENCH_SCATTER ? part : part * n;
    if (c == MG_BENCH_ALL_GATHER || c == MG_BENCH_GATHER) g.send_ip_off = part;
    if (c == MG_BENCH_REDUCE_SCATTER || c == MG_BENCH_SCATTER) g.recv_ip_off = part;
    g.algbw_bytes = part * n * e;
  }
  g.bytes = (g.send_count > g.recv_count ? g.send_count : g.recv_count) * e;
  return g;
}

mg_status_t mg_bench_call(mg_bench_coll_t c, const void *send, void *recv, size_t count,
                          mg_dtype_t dtype, mg_op_t op, int root, mg_comm_t *comm, int rank,
                          int nranks, mg_stream_t s) {
  switch (c) {
    case MG_BENCH_ALL_REDUCE: return mg_all_reduce(send, recv, count, dtype, op, comm, s);
    case MG_BENCH_ALL_GATHER: return mg_all_gather(send, recv, count, dtype, comm, s);
    case MG_BENCH_REDUCE_SCATTER:
      return mg_reduce_scatter(send, recv, count, dtype, op, comm, s);
    case MG_BENCH_ALL_TO_ALL: return mg_all_to_all(send, recv, count, dtype, comm, s);
    case MG_BENCH_BROADCAST: return mg_broadcast(send, recv, count, dtype, root, comm, s);
    case MG_BENCH_REDUCE: return mg_reduce(send, recv, count, dtype, op, root, comm, s);
    case MG_BENCH_GATHER: return mg_gather(send, recv, count, dtype, root, comm, s);
    case MG_BENCH_SCATTER: return mg_scatter(send, recv, count, dtype, root, comm, s);
    case MG_BENCH_SENDRECV: {
      mg_status_t st = mg_group_begin();
      if (st != MG_OK) return st;
      /* Inside the group a failing call is recorded, and mg_group_end returns it: the group
       * must be closed whatever they return. */
      (void)mg_send(send, count, dtype, (rank + 1) % nranks, comm, s);
      (void)mg_recv(recv, count, dtype, (rank - 1 + nranks) % nranks, comm, s);
      return mg_group_end();
    }
    case MG_BENCH_COLL_COUNT: break;
  }
  return MG_ERR_INVALID_ARGUMENT;
}
