/*
 * fuzz.h -- what every fuzz target shares: CHECK stops the run (abort, which libFuzzer and the
 * replay report with the input) when a property of the code under test does not hold.
 */
#ifndef MG_TESTS_FUZZ_H
#define MG_TESTS_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
      abort();                                                                  \
    }                                                                           \
  } while (0)

#endif
