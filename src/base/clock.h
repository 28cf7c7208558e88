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

/* The same clock as of the kernel's last tick (CLOCK_MONOTONIC_COARSE: 1-4 ms behind at most),
 * at a fraction of mg__now()'s cost: on the development VM two mg__now() per call were 26 of the
 * 355 ns of a 2-thread-rank 8-byte all_reduce on the host backend. For what every call records:
 * the flight recorder's times (read by a person looking at a stall, in ms) and, through
 * mg__deadline_coarse, the call's deadline. */
static inline double mg__now_coarse(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The deadline `timeout_s` after coarse time `coarse_now`, never earlier than the deadline that
 * mg__now() would give: the coarse clock is behind by less than its resolution, which is added
 * (read once per file that uses it). */
static inline double mg__deadline_coarse(double coarse_now, double timeout_s) {
  static _Atomic double res = -1;
  double r = atomic_load_explicit(&res, memory_order_relaxed);
  if (r < 0) {
    struct timespec ts;
    r = clock_getres(CLOCK_MONOTONIC_COARSE, &ts) == 0 ? (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9
                                                        : 0.01;
    atomic_store_explicit(&res, r, memory_order_relaxed);
  }
  return coarse_now + r + timeout_s;
}

static inline uint64_t mg__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
