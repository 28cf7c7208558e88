/*
 * loader_threads.c -- many threads load every library and query features at once: each load
 * happens once, and every thread sees the same outcome (run under TSan by `make tsan`).
 */
#include <pthread.h>

#include "loader_util.h"

#define NTHREADS 8

typedef struct {
  mg_status_t st[MG_LIB_COUNT];
  int features;
  pthread_barrier_t *barrier;
} result_t;

static void *worker(void *arg) {
  result_t *r = arg;
  pthread_barrier_wait(r->barrier); /* start together; the serial thread's flag is not needed */
  for (int lib = 0; lib < MG_LIB_COUNT; lib++) r->st[lib] = mg__load((mg_library_t)lib);
  for (int f = 0; f < MG_FEATURE_COUNT; f++) r->features |= mg__feature((mg_feature_t)f) << f;
  return NULL;
}

int main(void) {
  pthread_t t[NTHREADS];
  result_t res[NTHREADS];
  pthread_barrier_t barrier;
  ASSERT_EQ(pthread_barrier_init(&barrier, NULL, NTHREADS), 0);
  for (int i = 0; i < NTHREADS; i++) {
    memset(&res[i], 0, sizeof res[i]);
    res[i].barrier = &barrier;
    ASSERT_EQ(pthread_create(&t[i], NULL, worker, &res[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) ASSERT_EQ(pthread_join(t[i], NULL), 0);
  ASSERT_EQ(pthread_barrier_destroy(&barrier), 0);
  for (int lib = 0; lib < MG_LIB_COUNT; lib++) {
    lt_dump((mg_library_t)lib);
    const mg__lib_report_t *r = mg__lib_report((mg_library_t)lib);
    for (int i = 0; i < NTHREADS; i++) {
      ASSERT_EQ(res[i].st[lib], res[0].st[lib]);
      ASSERT_EQ(res[i].st[lib] == MG_OK, r->loaded);
    }
    /* Loaded once: exactly one "loaded" attempt, and it is the last. */
    int nloaded = 0;
    for (int a = 0; a < r->nattempts; a++) nloaded += strcmp(r->attempts[a].outcome, "loaded") == 0;
    ASSERT_EQ(nloaded, r->loaded);
  }
  for (int i = 0; i < NTHREADS; i++) ASSERT_EQ(res[i].features, res[0].features);
  return 0;
}
