/*
 * mpi_peer.c -- the Open MPI peer of `mgcomm bench` for bench/compare.sh: the same collectives,
 * sizes (nccl-tests' geometry), iterations and timing rule as mgcomm bench, through MPI, printed
 * as the same JSON document (backend "mpi", ranks are processes). Built by compare.sh with mpicc.
 *
 * usage: mpirun -np N mpi_peer [-c coll[,coll...]] [-b min] [-e max] [-f factor | -i incr]
 *                              [-d dtype] [-o op] [-r root] [-n iters] [-w warmup]
 *                              [--inplace 0|1|both] --json FILE
 * Timing as mgcomm bench's: each timed iteration starts after MPI_Barrier; its time runs from the
 * last rank's start to the last rank's end, on CLOCK_MONOTONIC (one host, one clock); the time of
 * a size is the median over iterations. In place uses MPI_IN_PLACE. MPI_Bcast has one buffer:
 * in place it is the call alone; out of place the root first copies send into recv, which is what
 * an MPI program writes to get what mgcomm's out-of-place broadcast gives (the root's recv filled,
 * its send untouched). Results are not checked.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_bench.h"

/* MPI's handles are not constants in every MPI: look them up at run time. */
#define H(fn, handle) \
  static MPI_Datatype mpi_##fn(void) { return handle; }
H(int8, MPI_INT8_T)
H(uint8, MPI_UINT8_T)
H(int32, MPI_INT32_T)
H(uint32, MPI_UINT32_T)
H(int64, MPI_INT64_T)
H(uint64, MPI_UINT64_T)
H(float, MPI_FLOAT)
H(double, MPI_DOUBLE)
#undef H

static const struct {
  const char *name;
  MPI_Datatype (*type)(void);
  size_t size;
} dtypes[] = {
#define T(name, mpi, sz) {name, mpi_##mpi, sz}
    T("int8", int8, 1),   T("uint8", uint8, 1),   T("int32", int32, 4),  T("uint32", uint32, 4),
    T("int64", int64, 8), T("uint64", uint64, 8), T("float32", float, 4), T("float64", double, 8),
#undef T
};


static int rank, nranks;

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  mb_name = "mpi_peer";
  mb_rank = rank;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int colls[NCOLL] = {AR, AG, RS}, ncolls = 3, root = 0, iters = 20, warmup = 5, modes = 3, di = 6;
  size_t minb = 8, maxb = (size_t)64 << 20, factor = 4, incr = 0;
  const char *op_name = "sum", *json = NULL;
  MPI_Op op = MPI_SUM;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) mb_die("option without a value: ", a);
    i++;
    if (!strcmp(a, "-c")) {
      ncolls = mb_parse_colls(v, colls, MB_NCOLL_BENCH);
    } else if (!strcmp(a, "-b")) {
      minb = mb_parse_size(v);
    } else if (!strcmp(a, "-e")) {
      maxb = mb_parse_size(v);
    } else if (!strcmp(a, "-f")) {
      factor = mb_parse_size(v), incr = 0;
    } else if (!strcmp(a, "-i")) {
      incr = mb_parse_size(v), factor = 0;
    } else if (!strcmp(a, "-d")) {
      for (di = 0; di < (int)(sizeof dtypes / sizeof dtypes[0]); di++)
        if (!strcmp(v, dtypes[di].name)) break;
      if (di == (int)(sizeof dtypes / sizeof dtypes[0])) mb_die("no MPI type for ", v);
    } else if (!strcmp(a, "-o")) {
      op_name = v;
      if (!strcmp(v, "sum")) op = MPI_SUM;
      else if (!strcmp(v, "prod")) op = MPI_PROD;
      else if (!strcmp(v, "max")) op = MPI_MAX;
      else if (!strcmp(v, "min")) op = MPI_MIN;
      else mb_die("no MPI op for ", v);
    } else if (!strcmp(a, "-r")) {
      root = atoi(v);
    } else if (!strcmp(a, "-n")) {
      iters = atoi(v);
    } else if (!strcmp(a, "-w")) {
      warmup = atoi(v);
    } else if (!strcmp(a, "--inplace")) {
      modes = !strcmp(v, "0") ? 1 : !strcmp(v, "1") ? 2 : 3;
    } else if (!strcmp(a, "--json")) {
      json = v;
    } else {
      mb_die("unknown option ", a);
    }
  }
  if (json == NULL || iters < 1 || warmup < 0 || root < 0 || root >= nranks ||
      (factor < 2 && incr == 0) || minb == 0 || minb > maxb)
    mb_die("bad arguments (needs --json FILE; see the comment at the top of mpi_peer.c)", "");
  const MPI_Datatype dt = dtypes[di].type();
  const size_t e = dtypes[di].size, n = (size_t)nranks;
  char *send = malloc(maxb + 64), *recv = malloc(maxb + 64);
  double *times = malloc(sizeof(double) * 2 * (size_t)iters); /* starts, then ends */
  if (!send || !recv || !times) mb_die("out of memory", "");
  memset(send, 1, maxb + 64);
  memset(recv, 0, maxb + 64);
  FILE *f = rank == 0 ? fopen(json, "w") : NULL;
  if (rank == 0 && f == NULL) mb_die("cannot write ", json);
  if (f) {
    int len;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_library_version(lib, &len);
    MPI_Get_processor_name(host, &len);
    lib[strcspn(lib, "\n,")] = 0;
    fprintf(f, "{\"backend\": \"mpi\", \"peer\": \"%s\", "
               "\"nranks\": %d, \"ranks_are\": \"processes\",\n \"machine\": {\"host\": \"%s\", "
               "\"gpus\": []},\n \"results\": [", lib, nranks, host);
  }
  int rows = 0;
  for (int ci = 0; ci < ncolls; ci++) {
    const int c = colls[ci];
    for (size_t bytes = minb; bytes && bytes <= maxb; bytes = factor ? bytes * factor : bytes + incr) {
      /* nccl-tests' geometry, as mgcomm bench computes it. */
      const size_t total = bytes / e, part = (total / n) & ~(16 / e - 1);
      const size_t count = divided[c] ? part : total;
      const size_t nbytes = divided[c] ? part * n * e : total * e; /* the size column, and
                                                                        what algbw counts */
      for (int ip = 0; ip < 2; ip++) {
        if (!(modes & (1 << ip)) || (ip && !has_inplace[c])) continue;
        for (int it = -warmup; it < iters; it++) {
          if (it >= 0) MPI_Barrier(MPI_COMM_WORLD);
          if (it >= 0) times[it] = mb_now();
          mb_mpi_call(c, ip, send, recv, count, dt, e, op, root);
          if (it >= 0) times[iters + it] = mb_now();
        }
        const double sec = mb_median_iteration(times, iters);
        const double alg = (double)nbytes / 1e9 / sec;
        const double fac = c == AR ? 2.0 * (n - 1) / n : divided[c] ? (double)(n - 1) / n : 1.0;
        const int reduces = c == AR || c == RS || c == RED;
        const int rooted = c == BC || c == RED || c == GA || c == SC;
        if (f)
          fprintf(f,
                  "%s\n  {\"collective\": \"%s\", \"bytes\": %zu, \"count\": %zu, \"dtype\": "
                  "\"%s\", \"op\": \"%s\", \"root\": %d, \"inplace\": %s, \"time_us\": %.6g, "
                  "\"algbw_gbs\": %.6g, \"busbw_gbs\": %.6g, \"wrong\": 0, \"iters\": %d, "
                  "\"warmup\": %d}",
                  rows++ ? "," : "", coll_names[c], nbytes, count, dtypes[di].name,
                  reduces ? op_name : "none", rooted ? root : -1, ip ? "true" : "false",
                  sec * 1e6, alg, alg * fac, iters, warmup);
      }
      if (factor && bytes > maxb / factor) break;
    }
  }
  if (f) {
    fprintf(f, "\n ]}\n");
    fclose(f);
  }
  free(send);
  free(recv);
  free(times);
  MPI_Finalize();
  return 0;
}
