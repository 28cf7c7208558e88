/*
 * fuzz.h -- what every fuzz target shares: CHECK stops the run (abort, which libFuzzer and the
 * replay report with the input) when a property of the code under test does not hold; the
 * replays' mutations draw from mg_fuzz_next, a fixed xorshift sequence, so a replay is the same
 * run every time.
 */
#ifndef MG_TESTS_FUZZ_H
#define MG_TESTS_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
      abort();                                                                  \
    }                                                                           \
  } while (0)

static uint64_t mg_fuzz_rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t mg_fuzz_next(void) {
  mg_fuzz_rng ^= mg_fuzz_rng << 13;
  mg_fuzz_rng ^= mg_fuzz_rng >> 7;
  mg_fuzz_rng ^= mg_fuzz_rng << 17;
  return mg_fuzz_rng;
}

#endif
