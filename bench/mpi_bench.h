/*
 * mpi_bench.h -- what the Open MPI programs of bench/ share (mpi_peer.c, mpi_paired.c): the
 * collectives, -c's list of them and their MPI calls, sizes on the command line, the clock, the
 * timing rule's reduction over ranks, and a fatal error. Each includes it once, after setting
 * mb_name and mb_rank.
 */
#ifndef MG_BENCH_MPI_BENCH_H
#define MG_BENCH_MPI_BENCH_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *mb_name; /* the program, for messages */
static int mb_rank;

/* Says why on rank 0 and ends the job (every rank, or the one that failed alone). */
static void mb_die(const char *msg, const char *arg) {
  if (mb_rank == 0) fprintf(stderr, "%s: %s%s\n", mb_name, msg, arg);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

/* The collectives of the programs: their names, whether a size counts every rank's piece (the
 * count per rank is size / nranks), and whether they have an in-place form. The first
 * MB_NCOLL_BENCH are those of mgcomm bench, which mpi_peer.c is compared with; all_to_allv
 * (every count alike) only mpi_paired.c runs. */
enum { AR, AG, RS, A2A, BC, RED, GA, SC, SR, A2AV, NCOLL };
#define MB_NCOLL_BENCH A2AV
static const char *const coll_names[NCOLL] = {"all_reduce", "all_gather", "reduce_scatter",
                                              "all_to_all", "broadcast", "reduce", "gather",
                                              "scatter", "sendrecv", "all_to_allv"};
static const int divided[NCOLL] = {0, 1, 1, 1, 0, 0, 1, 1, 0, 1};
static const int has_inplace[NCOLL] = {1, 1, 1, 0, 1, 1, 1, 1, 0, 0};

/* -c's comma-separated collectives ("all": every one) among the first ncoll of coll_names, as
 * indices into it: how many. */
static int mb_parse_colls(const char *v, int *out, int ncoll) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", v);
  int k = 0;
  for (char *t = strtok(buf, ","); t != NULL; t = strtok(NULL, ",")) {
    if (!strcmp(t, "all")) {
      for (k = 0; k < ncoll; k++) out[k] = k;
      continue;
    }
    int c = 0;
    while (c < ncoll && strcmp(t, coll_names[c])) c++;
    if (c == ncoll) mb_die("unknown collective ", t);
    if (k < ncoll) out[k++] = c; /* a longer list keeps its first ncoll */
  }
  return k;
}

/* all_to_allv's counts and displacements of `count` elements to and from each rank: MPI's
 * (ints) and mgcomm's (size_t), 64 ranks at most. */
enum { MB_V_MAX = 64 };
static int mb_vc[MB_V_MAX], mb_vd[MB_V_MAX];
static size_t mb_vcz[MB_V_MAX], mb_vdz[MB_V_MAX];
static inline void mb_v_fill(size_t count) { /* inline: mpi_peer.c has no use for it */
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n > MB_V_MAX) mb_die("all_to_allv: too many ranks", "");
  for (int r = 0; r < n; r++) {
    mb_vcz[r] = count, mb_vdz[r] = (size_t)r * count;
    mb_vc[r] = (int)count, mb_vd[r] = r * (int)count;
  }
}

/* One call of collective c through MPI, on MPI_COMM_WORLD: count elements of dt (es bytes each;
 * per rank for the divided ones), reduction op, root; in place as MPI spells it when ip. Out of
 * place, broadcast is the root's copy of send into recv and then MPI_Bcast, which has one
 * buffer. sendrecv goes to the next rank and comes from the one before. all_to_allv uses
 * mb_v_fill's arrays, filled for count before the loop. */
static void mb_mpi_call(int c, int ip, void *send, void *recv, size_t count, MPI_Datatype dt,
                        size_t es, MPI_Op op, int root) {
  const int ic = (int)count, is_root = mb_rank == root;
  int n;
  switch (c) {
    case AR: MPI_Allreduce(ip ? MPI_IN_PLACE : send, recv, ic, dt, op, MPI_COMM_WORLD); break;
    case AG: MPI_Allgather(ip ? MPI_IN_PLACE : send, ic, dt, recv, ic, dt, MPI_COMM_WORLD); break;
    case RS:
      MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : send, recv, ic, dt, op, MPI_COMM_WORLD);
      break;
    case A2A: MPI_Alltoall(send, ic, dt, recv, ic, dt, MPI_COMM_WORLD); break;
    case A2AV: MPI_Alltoallv(send, mb_vc, mb_vd, dt, recv, mb_vc, mb_vd, dt, MPI_COMM_WORLD); break;
    case BC:
      if (!ip && is_root) memcpy(recv, send, count * es);
      MPI_Bcast(recv, ic, dt, root, MPI_COMM_WORLD);
      break;
    case RED:
      MPI_Reduce(ip && is_root ? MPI_IN_PLACE : ip ? recv : send, recv, ic, dt, op, root,
                 MPI_COMM_WORLD);
      break;
    case GA:
      MPI_Gather(ip && is_root ? MPI_IN_PLACE : send, ic, dt, recv, ic, dt, root, MPI_COMM_WORLD);
      break;
    case SC:
      MPI_Scatter(send, ic, dt, ip && is_root ? MPI_IN_PLACE : recv, ic, dt, root, MPI_COMM_WORLD);
      break;
    default: /* SR */
      MPI_Comm_size(MPI_COMM_WORLD, &n);
      MPI_Sendrecv(send, ic, dt, (mb_rank + 1) % n, 0, recv, ic, dt, (mb_rank - 1 + n) % n, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      break;
  }
}

/* "64", "4K", "16M", "1G": bytes. */
static size_t mb_parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10, end++;
  else if (*end == 'M' || *end == 'm') v <<= 20, end++;
  else if (*end == 'G' || *end == 'g') v <<= 30, end++;
  if (end == s || *end) mb_die("not a size: ", s);
  return (size_t)v;
}

static double mb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int mb_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted in place). */
static double mb_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, mb_cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The timing rule, after each rank stored iteration i's start in t[i] and its end in t[n + i]:
 * per iteration the last rank's end minus the last rank's start; their median, on every rank. */
static double mb_median_iteration(double *t, int n) {
  MPI_Allreduce(MPI_IN_PLACE, t, 2 * n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < n; i++) t[i] = t[n + i] - t[i];
  return mb_median(t, n);
}

#endif
