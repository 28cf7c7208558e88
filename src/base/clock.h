/*
 * clock.h -- monotonic time and deadlines. Every wait in mgcomm compares mg__now() with an
 * absolute deadline in the same clock.
 */
#ifndef MG_BASE_CLOCK_H
#define MG_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline double mg__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t mg__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
