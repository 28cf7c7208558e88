/*
 * mpi_paired.c -- Open MPI and mgcomm's host backend timed in turn inside one MPI program, for
 * issue 22's target (bench/host_vs_mpi.sh -I 1). On the 2-CPU development VM a program's speed
 * moves by up to 1.7x within seconds (the two virtual CPUs' cache-line round trip goes from
 * ~0.13 to ~0.5 us and back), so separate programs alternated by a script cannot resolve 10% at
 * 8 B; here both libraries run on the same processes and buffers within milliseconds of each
 * other, and the ratio is taken per turn.
 *
 * usage: mpirun -np N mpi_paired [-c coll[,coll...]] [-b min] [-e max] [-f factor] [-n iters]
 *                                [-w warmup] [-T turns] [-B 0|1] [--inplace 0|1|both]
 * Collectives: all_reduce, all_gather, reduce_scatter, broadcast (float32, sum, root 0), sizes as
 * mgcomm bench and nccl-tests count them. Per size and placement, T turns (default 5), each timing
 * one library's loop and then the other's, the first alternating; a loop is w untimed and n timed
 * iterations, each timed one after MPI_Barrier, from the last rank's start to the last rank's end;
 * its time is the median iteration (-B 1: see loop()). The buffers come from malloc, as a user's
 * do (mgcomm bench's are page-aligned), which is how this program found the host backend's slow
 * copies into them (src/backend/host/host_copy.h). Printed by rank 0: a markdown table of the
 * medians over the turns of each library's time and of the per-turn ratio mgcomm / MPI. Out of
 * place, MPI's broadcast is the root's copy of send into recv and then MPI_Bcast (mpi_peer.c says
 * why).
 * Results are not checked (the tests check mgcomm's).
 * Built by host_vs_mpi.sh: mpicc -Iinclude bench/mpi_paired.c -L<build> -lmgcomm.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgcomm.h"
#include "mpi_bench.h"

enum { AR, AG, RS, BC, NCOLL };
static const char *const coll_names[NCOLL] = {"all_reduce", "all_gather", "reduce_scatter",
                                              "broadcast"};
static const int divided[NCOLL] = {0, 1, 1, 0};

static int rank, nranks;
static mg_comm_t *comm;

/* One call of collective c, count elements (per rank for the divided ones), through MPI (mg 0)
 * or mgcomm (mg 1); in place as each library spells it. */
static void call(int mg, int c, int ip, float *send, float *recv, size_t count) {
  const int ic = (int)count;
  const size_t me = (size_t)rank * count;
  mg_status_t st = MG_OK;
  switch (c) {
    case AR:
      if (mg) st = mg_all_reduce(ip ? recv : send, recv, count, MG_FLOAT32, MG_SUM, comm, NULL);
      else MPI_Allreduce(ip ? MPI_IN_PLACE : send, recv, ic, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case AG:
      if (mg) st = mg_all_gather(ip ? recv + me : send, recv, count, MG_FLOAT32, comm, NULL);
      else MPI_Allgather(ip ? MPI_IN_PLACE : send, ic, MPI_FLOAT, recv, ic, MPI_FLOAT,
                         MPI_COMM_WORLD);
      break;
    case RS: /* in place, MPI's input and mgcomm's are recv, all nranks pieces of it */
      if (mg) st = mg_reduce_scatter(ip ? recv : send, ip ? recv + me : recv, count, MG_FLOAT32,
                                     MG_SUM, comm, NULL);
      else MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : send, recv, ic, MPI_FLOAT, MPI_SUM,
                                    MPI_COMM_WORLD);
      break;
    default: /* BC */
      if (mg) {
        st = mg_broadcast(ip ? recv : send, recv, count, MG_FLOAT32, 0, comm, NULL);
      } else {
        if (!ip && rank == 0) memcpy(recv, send, count * sizeof *recv);
        MPI_Bcast(recv, ic, MPI_FLOAT, 0, MPI_COMM_WORLD);
      }
      break;
  }
  if (st != MG_OK) mb_die("mgcomm: ", mg_last_error());
}

static int back_to_back; /* -B 1 */

/* One library's loop, in seconds per call: the median iteration, last start to last end; with
 * -B 1 the iterations run back to back after one barrier, and the loop's time is the slowest
 * rank's, divided by the iterations (as the OSU benchmarks time latency). */
static double loop(int mg, int c, int ip, float *send, float *recv, size_t count, int iters,
                   int warmup, double *times) {
  if (back_to_back) {
    for (int it = 0; it < warmup; it++) call(mg, c, ip, send, recv, count);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = mb_now();
    for (int it = 0; it < iters; it++) call(mg, c, ip, send, recv, count);
    t = mb_now() - t;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t / iters;
  }
  for (int it = -warmup; it < iters; it++) {
    if (it >= 0) MPI_Barrier(MPI_COMM_WORLD);
    if (it >= 0) times[it] = mb_now();
    call(mg, c, ip, send, recv, count);
    if (it >= 0) times[iters + it] = mb_now();
  }
  return mb_median_iteration(times, iters);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  mb_name = "mpi_paired";
  mb_rank = rank;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int colls[NCOLL] = {AR, AG, RS, BC}, ncolls = NCOLL, iters = 1000, warmup = 100, turns = 5;
  int modes = 3;
  size_t minb = 8, maxb = 4096, factor = 4;
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) mb_die("option without a value: ", a);
    if (!strcmp(a, "-c")) {
      ncolls = mb_parse_colls(v, coll_names, NCOLL, colls);
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

  mg_unique_id_t id;
  if (rank == 0 && mg_unique_id_create(MG_BACKEND_HOST, &id) != MG_OK)
    mb_die("mg_unique_id_create: ", mg_last_error());
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  if (mg_comm_init_rank(&cfg, nranks, &id, rank, &comm) != MG_OK)
    mb_die("mg_comm_init_rank: ", mg_last_error());

  /* recv holds every rank's piece of the largest size; send as much (reduce_scatter's input). */
  const size_t cap = maxb / sizeof(float) + 16;
  float *send = malloc(cap * sizeof(float)), *recv = malloc(cap * sizeof(float));
  double *times = malloc(sizeof(double) * 2 * (size_t)iters);
  if (!send || !recv || !times) mb_die("out of memory", "");
  for (size_t i = 0; i < cap; i++) send[i] = recv[i] = 1.0f;

  if (rank == 0) {
    printf("| collective | in place | size (B) | MPI µs | mgcomm µs | mgcomm / MPI (median of "
           "%d turns) | turns' ratios, min - max |\n", turns);
    printf("| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
  }
  for (int ci = 0; ci < ncolls; ci++) {
    const int c = colls[ci];
    for (size_t bytes = minb; bytes <= maxb; bytes *= factor) {
      const size_t total = bytes / sizeof(float), n = (size_t)nranks;
      const size_t count = divided[c] ? total / n : total;
      if (count == 0) continue;
      for (int ip = 0; ip < 2; ip++) {
        if (!(modes & (1 << ip))) continue;
        double t[2][99], r[99];
        for (int k = 0; k < turns; k++) {
          for (int j = 0; j < 2; j++) {
            const int mg = (j + k) % 2; /* MPI first in even turns, mgcomm in odd ones */
            t[mg][k] = loop(mg, c, ip, send, recv, count, iters, warmup, times);
          }
          r[k] = t[1][k] / t[0][k];
        }
        if (rank == 0) {
          const double tm = mb_median(t[0], turns) * 1e6, tg = mb_median(t[1], turns) * 1e6;
          const double rm = mb_median(r, turns); /* sorts r */
          printf("| %s | %s | %zu | %.3f | %.3f | %.2f | %.2f - %.2f |\n", coll_names[c],
                 ip ? "yes" : "no", (divided[c] ? count * n : count) * sizeof(float), tm, tg, rm,
                 r[0], r[turns - 1]);
          fflush(stdout);
        }
      }
    }
  }
  mg_comm_destroy(comm);
  free(send);
  free(recv);
  free(times);
  MPI_Finalize();
  return 0;
}
