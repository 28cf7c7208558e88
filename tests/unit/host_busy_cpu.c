/*
 * host_busy_cpu.c -- ranks bound to their CPUs beside a busy program do not yield their CPU to
 * it while they wait (host_coll.c, mg__bound_to_one_cpu). Two thread ranks, each bound to its own
 * CPU, and a busy thread bound to rank 1's CPU; the ranks run all_reduces of 256 KiB, whose steps
 * make each rank wait for the other. A rank that yielded at each wait handed its CPU to the busy
 * thread for a time slice: on the 2-CPU development VM rank 0's median call took 4.0 ms that
 * way in 2 of 3 runs (0.24 ms in the third), and 0.14-0.15 ms without the yields (0.6 ms in a
 * Debug build with AddressSanitizer). The bound is 2 ms; skipped with fewer than 2 CPUs. Run
 * alone (RUN_SERIAL): it times calls.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "mgcomm.h"
#include "test.h"

#define CALLS 60
#define COUNT (64 * 1024) /* floats: 256 KiB */

static mg_comm_t *comms[2];
static int cpus[2];
static double times[CALLS];
static atomic_int stop;

static void bind_to(int c) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(c, &set);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
}

static void *busy(void *p) {
  (void)p;
  bind_to(cpus[1]);
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
  }
  return NULL;
}

static void *rank(void *p) {
  const int r = (int)(intptr_t)p;
  bind_to(cpus[r]);
  float *x = malloc(COUNT * sizeof *x), *y = malloc(COUNT * sizeof *y);
  ASSERT(x != NULL && y != NULL);
  for (int i = 0; i < COUNT; i++) x[i] = 1;
  for (int i = 0; i < CALLS; i++) {
    double t0 = test_now();
    ASSERT_OK(mg_all_reduce(x, y, COUNT, MG_FLOAT32, MG_SUM, comms[r], NULL));
    if (r == 0) times[i] = test_now() - t0;
    ASSERT(y[0] == 2 && y[COUNT - 1] == 2);
  }
  free(x);
  free(y);
  return NULL;
}

int main(void) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
    if (CPU_ISSET(c, &mine)) cpus[n++] = c;
  if (n < 2) SKIP("needs 2 CPUs");
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  pthread_t b, t[2];
  ASSERT_EQ(pthread_create(&b, NULL, busy, NULL), 0);
  for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_create(&t[r], NULL, rank, (void *)(intptr_t)r), 0);
  for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  atomic_store(&stop, 1);
  ASSERT_EQ(pthread_join(b, NULL), 0);
  const double median = test_median(times, CALLS);
  printf("host_busy_cpu: ranks on CPUs %d and %d, a busy thread on %d: median call %.3f ms, "
         "fastest %.3f ms\n", cpus[0], cpus[1], cpus[1], median * 1e3, times[0] * 1e3);
  ASSERT_DBL(median, <, 2e-3);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  return 0;
}
