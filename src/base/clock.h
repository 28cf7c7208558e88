/*
 * clock.h -- monotonic time and deadlines. Every wait in mgcomm compares mg__now() with an
 * absolute deadline in the same clock.
 */
#ifndef MG_BASE_CLOCK_H
#define MG_BASE_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static inline double mg__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The same clock as of the kernel's last tick (CLOCK_MONOTONIC_COARSE: behind by a tick or so;
 * at most 5.1 ms in 2 million samples and 3000 wake-ups from sleep on the development VM, HZ
 * 250), at a quarter of mg__now()'s cost there (6 against 27 ns; two mg__now() per call were 26
 * of the 355 ns of a 2-thread-rank 8-byte all_reduce). For what every call records: the flight
 * recorder's times (a person reads them in ms) and, through mg__deadline_coarse, its deadline. */
static inline double mg__now_coarse(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The deadline `timeout_s` after coarse time `coarse_now`, plus two of the coarse clock's ticks
 * (its resolution, read once per file): later than mg__now()'s deadline by up to two ticks,
 * never earlier unless the kernel's tick came more than two ticks late. */
static inline double mg__deadline_coarse(double coarse_now, double timeout_s) {
  static _Atomic double tick = -1;
  double r = atomic_load_explicit(&tick, memory_order_relaxed);
  if (r < 0) {
    struct timespec ts;
    r = clock_getres(CLOCK_MONOTONIC_COARSE, &ts) == 0
            ? (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9
            : 0.01; /* a tick at HZ 100, the coarsest kernel */
    atomic_store_explicit(&tick, r, memory_order_relaxed);
  }
  return coarse_now + 2 * r + timeout_s;
}

static inline uint64_t mg__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
