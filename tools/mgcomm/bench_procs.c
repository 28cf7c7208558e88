/*
 * bench_procs.c -- this process as one rank of a job that a launcher started (mgcomm launch,
 * mpirun, torchrun, srun): the communicator comes from mg_comm_init_env, the rank runs the sweep
 * on this thread (bench_rank.c), and rank 0 prints.
 *
 * The ranks meet, and combine numbers, through small all_reduces of float64 on the benchmark's
 * own communicator: the same transport as what is measured, a few microseconds, and released
 * by the data itself. (The store's barrier, mg_store_barrier, is a TCP round trip through rank
 * 0's server that releases the ranks one after another: slower by two orders of magnitude and
 * more skewed.) The barrier before a timed iteration is such an all_reduce of one value; it is
 * not timed.
 *
 * The clock: processes on one machine read one CLOCK_MONOTONIC, so the threads' time rule holds
 * (last rank's end - last rank's start). The ranks check it at the start: each names its clock
 * by the kernel's boot id (one per boot of one kernel, shared by its containers), and an
 * all_reduce tells whether all names are equal. Otherwise the time of an iteration is the
 * slowest rank's own (bench_rank.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

typedef struct mg_bench_proc {
  mg_bench_rank_t r; /* first member: the rank layer's view */
  int broken;        /* an agreement failed: the communicator is not to be used for more */
} mg_bench_proc_t;

static int mg_bench_proc_agree(mg_bench_part_t *p, double *v, size_t n, mg_op_t op) {
  mg_bench_proc_t *me = (mg_bench_proc_t *)p;
  if (me->broken) return -1;
  mg_status_t st = mg_all_reduce(v, v, n, MG_FLOAT64, op, me->r.comm, NULL);
  if (st == MG_OK) return 0;
  fprintf(stderr, "mgcomm bench: rank %d: cannot agree with the other ranks (all_reduce of %zu "
          "float64): %s: %s\n", me->r.rank, n, mg_status_name(st), mg_last_error());
  me->broken = 1;
  return -1;
}

/* A name of this process's CLOCK_MONOTONIC: a hash of the kernel's boot id (of the host name
 * where it cannot be read). */
static uint64_t mg_bench_clock_name(void) {
  char id[256] = "";
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f != NULL) {
    if (fgets(id, sizeof id, f) == NULL) id[0] = '\0';
    fclose(f);
  }
  /* Without a boot id the host name stands in; without either, "" (every such rank agrees). */
  if (id[0] == '\0' && gethostname(id, sizeof id - 1) != 0) id[0] = '\0';
  uint64_t h = 14695981039346656037ull; /* FNV-1a */
  for (const char *c = id; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  return h;
}

/* 1 when every rank's clock has the same name, 0 when not, -1 after a failure (printed). */
static int mg_bench_one_clock(mg_comm_t *comm) {
  /* The maxima of {name, ~name} are max(name) and ~min(name): equal names iff they match. */
  const uint64_t name = mg_bench_clock_name();
  uint64_t v[2] = {name, ~name};
  mg_status_t st = mg_all_reduce(v, v, 2, MG_UINT64, MG_MAX, comm, NULL);
  if (st != MG_OK) {
    fprintf(stderr, "mgcomm bench: cannot compare the ranks' clocks (all_reduce): %s: %s\n",
            mg_status_name(st), mg_last_error());
    return -1;
  }
  return v[0] == ~v[1];
}

int mg_bench_run_processes(mg_bench_opts_t *o, mg_bench_report_t *rep) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = o->backend;
  mg_bench_proc_t me = {.r = {.part = {.o = o, .agree = mg_bench_proc_agree},
                              .mem = &mg_bench_mem_host, .barrier = mg_bench_rank_comm_barrier}};
  mg_status_t st = mg_comm_init_env(&cfg, &me.r.comm);
  if (st != MG_OK) {
    fprintf(stderr, "mgcomm bench: %s is set, so this process is one rank of a job, but "
            "mg_comm_init_env failed (-t N runs ranks as threads instead): %s: %s\n",
            o->rank_var, mg_status_name(st), mg_last_error());
    return 1;
  }
  int status = 1;
  /* Queries of a live communicator: they cannot fail. */
  (void)mg_comm_rank(me.r.comm, &me.r.rank);
  (void)mg_comm_size(me.r.comm, &o->nranks);
  if (o->root >= o->nranks) {
    status = mg_bench_bad("-r %d is not a rank of %d", o->root, o->nranks);
    goto out;
  }
  const int one = mg_bench_one_clock(me.r.comm);
  if (one < 0) goto out;
  o->one_clock = one;
  me.r.part.rep = me.r.rank == 0 ? rep : NULL;
  status = mg_bench_rank_run(&me.r);
out:
  /* After a failure the communicator may be in the error state; destroy aborts it, which is
   * what we want, and reports nothing we could act on. */
  (void)mg_comm_destroy(me.r.comm);
  return status;
}
