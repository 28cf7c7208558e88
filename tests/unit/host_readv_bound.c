/*
 * host_readv_bound.c -- which path a broadcast, scatter, gather, reduce or all_to_allv takes
 * (all_to_allv: whether each rank lends its pieces, under the same thresholds as all_to_all;
 * reduce: direct past MGCOMM_HOST_SMALL_BYTES, among threads each rank reducing its slice from the
 * others' send buffers into the root's receive buffer, between processes the root reading every
 * other input, below MGCOMM_HOST_READV_MAX_BYTES read, by default only of 2 processes where
 * process_vm_readv is fast, below 512 KiB). Between processes, a
 * direct one that would make a rank read MGCOMM_HOST_READV_MAX_BYTES or more with
 * process_vm_readv goes through the staging pipeline; below the bound, and among threads of one
 * process, it stays direct. By default (MGCOMM_HOST_DIRECT_BYTES -1) the direct path starts at 2
 * KiB per rank among threads that may run on as many CPUs as there are ranks, at 32 KiB where
 * they may run on at least 2 and at least half as many, else at 256 KiB.
 *
 * Where process_vm_readv is slow (MGCOMM_HOST_READV_FAST=0; measured by default) the bound holds
 * for scatter too, and the direct path between processes runs from 32 KiB up to 1 MiB read while
 * the machine has a CPU for every rank (else never: a run that expects the other side skips);
 * where it is fast (=1) the direct path between processes starts at 8 KiB, and
 * the bound holds only for a broadcast or all_gather of more than 2 ranks, at 128 KiB, and for a
 * gather at 16 MiB; and a broadcast or scatter of 2 ranks whose root's call is in place is staged
 * from 32 MiB (the root's choice, which its reader follows). A run that expects the direct path
 * skips where processes may not read each other's memory.
 *
 * The direct path is the only one that publishes a rank's buffer address (daddr): after a
 * collective of `bytes` per rank, the daddr of the rank whose buffer is read (the root; rank 1 in
 * a gather) says which path ran; for a reduce the root's receive buffer (raddr); for all_to_allv,
 * the send buffer a rank announced as lent. Arguments:
 * procs|threads|threads-1cpu|threads-2cpu bytes expect (direct|staged) [ranks (2, at most 4)
 * [broadcast|scatter|gather|reduce|all_to_allv|broadcast_in_place|scatter_in_place|
 * reduce_in_place]] (bytes: per rank, per pair for all_to_allv; _in_place: the root's call);
 * threads-1cpu and threads-2cpu bind the process to the first one or two CPUs it may run on
 * before the ranks start (threads-2cpu skips where it may run on one only). The result is checked
 * too.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "test.h"

#define MAX_RANKS 4

typedef struct {
  const mg_unique_id_t *id;
  int rank, nranks;
  size_t count;
  int direct;  /* 1: direct expected, 0: staged */
  char kind;  /* 'b'roadcast, 's'catter, 'g'ather, 'r'educe (root 0) or all_to_'v' (count per
                 pair) */
  int in_place; /* a broadcast, scatter or reduce in place on the root */
} arg_t;

static void *run_rank(void *p) {
  arg_t *a = p;
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_rank(&cfg, a->nranks, a->id, a->rank, &comm));
  const size_t n = (size_t)a->nranks;
  const int v = a->kind == 'v';
  const size_t in = a->kind == 's' || v ? a->count * n : a->count;
  const size_t outn = a->kind == 'g' || v ? a->count * n : a->count;
  float *buf = malloc(in * sizeof *buf), *out = malloc(outn * sizeof *out);
  ASSERT(buf != NULL && out != NULL);
  /* In a gather or an all_to_allv, each rank's input continues the one before. */
  const size_t base = a->kind == 'g' || v ? (size_t)a->rank * in : 0;
  for (size_t i = 0; i < in; i++) buf[i] = (float)((base + i) % 1000);
  memset(out, 0, outn * sizeof *out);
  size_t counts[MAX_RANKS], displs[MAX_RANKS];
  for (size_t q = 0; q < n; q++) counts[q] = a->count, displs[q] = q * a->count;
  /* In place on the root (rank 0): its piece of a scatter is the first of buf. */
  float *res = a->in_place && a->rank == 0 ? buf : out;
  if (a->kind == 's')
    ASSERT_OK(mg_scatter(buf, res, a->count, MG_FLOAT32, 0, comm, NULL));
  else if (a->kind == 'g')
    ASSERT_OK(mg_gather(buf, out, a->count, MG_FLOAT32, 0, comm, NULL));
  else if (a->kind == 'r')
    ASSERT_OK(mg_reduce(buf, res, a->count, MG_FLOAT32, MG_SUM, 0, comm, NULL));
  else if (v)
    ASSERT_OK(mg_all_to_allv(buf, counts, displs, out, counts, displs, MG_FLOAT32, comm, NULL));
  else
    ASSERT_OK(mg_broadcast(buf, res, a->count, MG_FLOAT32, 0, comm, NULL));
  const size_t first = a->kind == 's' ? (size_t)a->rank * a->count : 0;
  const size_t check = (a->kind == 'g' || a->kind == 'r') && a->rank != 0 ? 0 : outn;
  for (size_t i = 0; i < check; i++) {
    /* all_to_allv: piece p of out is rank p's piece for this rank */
    const size_t want = v ? (i / a->count) * in + (size_t)a->rank * a->count + i % a->count
                          : first + i;
    const float times = a->kind == 'r' ? (float)n : 1; /* every rank's input is the same */
    if (res[i] != times * (float)(want % 1000))
      FAIL("rank %d: out[%zu] = %g", a->rank, i, (double)res[i]);
  }
  /* The ranks went through the same steps, whichever path each took: a collective after it
   * matches. */
  float one = 1, sum = 0;
  ASSERT_OK(mg_all_reduce(&one, &sum, 1, MG_FLOAT32, MG_SUM, comm, NULL));
  ASSERT_EQ(sum, (float)a->nranks);
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  if (!s->direct && a->direct) SKIP("these processes may not read each other's memory");
  if (v) { /* lent: this rank announced its send buffer (in the mail step's or the staged one's) */
    const uint64_t lent = atomic_load(&s->ranks[a->rank].desc[0].lent) |
                          atomic_load(&s->ranks[a->rank].desc[1].lent);
    ASSERT_EQ(lent, a->direct ? (uint64_t)(uintptr_t)buf : 0);
    ASSERT_OK(mg_comm_destroy(comm));
    free(buf);
    free(out);
    return NULL;
  }
  const int owner = a->kind == 'g' ? 1 : 0;
  const uint64_t daddr = a->kind == 'r' ? atomic_load(&s->ranks[owner].raddr)
                                        : atomic_load(&s->ranks[owner].daddr);
  if (!a->direct)
    ASSERT_EQ(daddr, 0); /* a fresh segment: never published */
  else if (a->rank == owner)
    ASSERT_EQ(daddr, (uint64_t)(uintptr_t)(a->kind == 'r' ? res : buf));
  else
    ASSERT_NE(daddr, 0);
  ASSERT_OK(mg_comm_destroy(comm));
  free(buf);
  free(out);
  return NULL;
}

/* Rank r of a[] in a process of its own. */
static void run_proc(int r, void *a) { run_rank((arg_t *)a + r); }

int main(int argc, char **argv) {
  if (argc < 4 || argc > 6)
    FAIL("usage: host_readv_bound procs|threads|threads-1cpu|threads-2cpu bytes direct|staged "
         "[ranks [broadcast|scatter|gather|reduce|all_to_allv|broadcast_in_place|"
         "scatter_in_place|reduce_in_place]]");
  const int procs = strcmp(argv[1], "procs") == 0;
  const int n = argc >= 5 ? atoi(argv[4]) : 2;
  if (n < 2 || n > MAX_RANKS) FAIL("ranks: 2 to %d, not %s", MAX_RANKS, argv[4]);
  const char *coll = argc == 6 ? argv[5] : "broadcast";
  const int in_place = strstr(coll, "_in_place") != NULL;
  if (strcmp(coll, "broadcast") != 0 && strcmp(coll, "scatter") != 0 &&
      strcmp(coll, "gather") != 0 && strcmp(coll, "reduce") != 0 &&
      strcmp(coll, "all_to_allv") != 0 && strcmp(coll, "broadcast_in_place") != 0 &&
      strcmp(coll, "scatter_in_place") != 0 && strcmp(coll, "reduce_in_place") != 0)
    FAIL("the collective is broadcast, scatter, reduce (each _in_place too), gather or "
         "all_to_allv, not %s", coll);
  cpu_set_t cpus;
  ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const int bind = strcmp(argv[1], "threads-1cpu") == 0   ? 1
                   : strcmp(argv[1], "threads-2cpu") == 0 ? 2
                                                          : 0;
  if (bind > 0) {
    if (CPU_COUNT(&cpus) < bind) SKIP("this process may run on one CPU only");
    cpu_set_t some;
    CPU_ZERO(&some);
    for (int cpu = 0, kept = 0; kept < bind; cpu++)
      if (CPU_ISSET(cpu, &cpus)) {
        CPU_SET(cpu, &some);
        kept++;
      }
    ASSERT_EQ(sched_setaffinity(0, sizeof some, &some), 0);
  } else if (strcmp(argv[1], "threads") == 0 && strcmp(argv[3], "direct") == 0 &&
             CPU_COUNT(&cpus) < n && getenv("MGCOMM_HOST_DIRECT_BYTES") == NULL) {
    SKIP("%d thread ranks on %d CPUs: the default threshold is higher here", n, CPU_COUNT(&cpus));
  }
  /* Where process_vm_readv is slow, the window (32 KiB to 1 MiB read) depends on the machine. */
  const char *fast = getenv("MGCOMM_HOST_READV_FAST");
  const long machine = sysconf(_SC_NPROCESSORS_ONLN);
  const unsigned long long bytes = strtoull(argv[2], NULL, 0);
  const unsigned long long read =
      coll[0] == 'g' || coll[0] == 'a' ? bytes * (unsigned)(n - 1) : bytes;
  if (procs && fast != NULL && strcmp(fast, "0") == 0 && coll[0] != 'r' &&
      getenv("MGCOMM_HOST_DIRECT_BYTES") == NULL && getenv("MGCOMM_HOST_READV_MAX_BYTES") == NULL &&
      bytes >= 32768 && read < (1u << 20) && (machine >= n) != (argv[3][0] == 'd'))
    SKIP("%d processes on %ld CPUs: the other side of the slow machine's window", n, machine);
  arg_t a[MAX_RANKS];
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  for (int r = 0; r < n; r++)
    a[r] = (arg_t){&id, r, n, strtoull(argv[2], NULL, 0) / sizeof(float),
                   strcmp(argv[3], "direct") == 0, coll[0] == 'a' ? 'v' : coll[0], in_place};
  if (procs) {
    pid_t pids[MAX_RANKS];
    test_fork_ranks(pids, n, run_proc, a);
    test_wait_ranks(pids, n);
  } else {
    pthread_t t[MAX_RANKS];
    for (int r = 0; r < n; r++) ASSERT_EQ(pthread_create(&t[r], NULL, run_rank, &a[r]), 0);
    for (int r = 0; r < n; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  }
  printf("host_readv_bound: %s, %d %s, %s bytes: %s as expected\n", coll, n, argv[1], argv[2],
         argv[3]);
  return 0;
}
