/* host_loop.c -- the host backend's time per small collective without a clock read per call: K
 * thread ranks (mg_comm_init_all) call one collective back to back N times, twice; printed: rank
 * 0's second loop divided by N, in ns. The measurement behind the per-call changes of issue 22
 * (bench/results/2026-11-24-host-vs-mpi-2core-small.md); run two builds alternately, many times
 * (the VM's speed drifts by up to 1.7x within minutes).
 *   cc -O2 -Iinclude bench/host_loop.c -o host_loop -L<build> -lmgcomm -Wl,-rpath,<build> -lpthread
 *   ./host_loop [ranks (2)] [calls (200000)] [all_reduce|broadcast|all_gather|all_to_all|
 *                all_to_allv|sendrecv] [count (2)]
 * float32, sum, root 0; count is per rank (all_gather's send count; all_to_all(v): to each rank;
 * sendrecv: a send to the next rank and a receive from the one before, in one group); PIN=1
 * binds rank r to CPU r % 2. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgcomm.h"

#define MAX_RANKS 8
#define MAX_COUNT 1024

static int nranks = 2, calls = 200000;
static size_t count = 2;
static const char *coll = "all_reduce";
static mg_comm_t *comms[MAX_RANKS];
static pthread_barrier_t barrier;
static double ns_per_call;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *run_rank(void *arg) {
  const int r = (int)(long)arg;
  static _Thread_local float send[MAX_COUNT * MAX_RANKS], recv[MAX_COUNT * MAX_RANKS];
  if (getenv("PIN") != NULL) {
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(r % 2, &cs);
    pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
  }
  for (size_t i = 0; i < count * MAX_RANKS; i++) send[i] = (float)(i + (size_t)r);
  size_t counts[MAX_RANKS], displs[MAX_RANKS]; /* all_to_allv: count to and from every rank */
  for (int i = 0; i < nranks; i++) {
    counts[i] = count;
    displs[i] = (size_t)i * count;
  }
  for (int round = 0; round < 2; round++) { /* the first warms up */
    pthread_barrier_wait(&barrier);
    const double t0 = now();
    for (int i = 0; i < calls; i++) {
      mg_status_t st;
      if (strcmp(coll, "broadcast") == 0)
        st = mg_broadcast(send, recv, count, MG_FLOAT32, 0, comms[r], NULL);
      else if (strcmp(coll, "all_gather") == 0)
        st = mg_all_gather(send, recv, count, MG_FLOAT32, comms[r], NULL);
      else if (strcmp(coll, "all_to_all") == 0)
        st = mg_all_to_all(send, recv, count, MG_FLOAT32, comms[r], NULL);
      else if (strcmp(coll, "all_to_allv") == 0)
        st = mg_all_to_allv(send, counts, displs, recv, counts, displs, MG_FLOAT32, comms[r], NULL);
      else if (strcmp(coll, "sendrecv") == 0) {
        mg_group_begin();
        mg_send(send, count, MG_FLOAT32, (r + 1) % nranks, comms[r], NULL);
        mg_recv(recv, count, MG_FLOAT32, (r + nranks - 1) % nranks, comms[r], NULL);
        st = mg_group_end();
      }
      else
        st = mg_all_reduce(send, recv, count, MG_FLOAT32, MG_SUM, comms[r], NULL);
      if (st != MG_OK) {
        fprintf(stderr, "host_loop: rank %d: %s\n", r, mg_last_error());
        exit(1);
      }
    }
    if (r == 0) ns_per_call = (now() - t0) / calls * 1e9;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) nranks = atoi(argv[1]);
  if (argc > 2) calls = atoi(argv[2]);
  if (argc > 3) coll = argv[3];
  if (argc > 4) count = (size_t)atoi(argv[4]);
  if (nranks < 1 || nranks > MAX_RANKS || calls < 1 || count > MAX_COUNT) {
    fprintf(stderr, "host_loop: ranks 1..%d, calls >= 1, count <= %d\n", MAX_RANKS, MAX_COUNT);
    return 2;
  }
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  if (mg_comm_init_all(&cfg, nranks, NULL, comms) != MG_OK) {
    fprintf(stderr, "host_loop: %s\n", mg_last_error());
    return 1;
  }
  pthread_barrier_init(&barrier, NULL, (unsigned)nranks);
  pthread_t t[MAX_RANKS];
  for (int r = 0; r < nranks; r++) pthread_create(&t[r], NULL, run_rank, (void *)(long)r);
  for (int r = 0; r < nranks; r++) pthread_join(t[r], NULL);
  printf("%.1f\n", ns_per_call);
  for (int r = 0; r < nranks; r++) mg_comm_destroy(comms[r]);
  return 0;
}
