/*
 * test.h -- the test harness: each test is a small C program run by CTest in its own process.
 * Assertions print both operands and abort; exit code 77 means "skipped", with the reason on
 * stdout.
 */
#ifndef MG_TEST_H
#define MG_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mgcomm.h"

#define MG_TEST_SKIP_CODE 77

#define SKIP(...)                                 \
  do {                                            \
    printf("SKIP: ");                             \
    printf(__VA_ARGS__);                          \
    printf("\n");                                 \
    fflush(stdout);                               \
    exit(MG_TEST_SKIP_CODE);                      \
  } while (0)

#define FAIL(...)                                                        \
  do {                                                                   \
    fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                \
    fprintf(stderr, __VA_ARGS__);                                        \
    fprintf(stderr, "\n");                                               \
    abort();                                                             \
  } while (0)

#define ASSERT(cond)                                                     \
  do {                                                                   \
    if (!(cond)) FAIL("%s", #cond);                                      \
  } while (0)

#define ASSERT_INT(a, op, b)                                                            \
  do {                                                                                  \
    long long mg_a_ = (long long)(a), mg_b_ = (long long)(b);                           \
    if (!(mg_a_ op mg_b_))                                                              \
      FAIL("%s %s %s: %lld vs %lld", #a, #op, #b, mg_a_, mg_b_);                        \
  } while (0)
#define ASSERT_EQ(a, b) ASSERT_INT(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_INT(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_INT(a, >, b)
#define ASSERT_GE(a, b) ASSERT_INT(a, >=, b)

/* The same for doubles (durations and clock values, in seconds): a failure shows the measured
 * value and the bound, where ASSERT_INT would truncate them. */
#define ASSERT_DBL(a, op, b)                                                            \
  do {                                                                                  \
    double mg_a_ = (double)(a), mg_b_ = (double)(b);                                    \
    if (!(mg_a_ op mg_b_)) FAIL("%s %s %s: %.6g vs %.6g", #a, #op, #b, mg_a_, mg_b_);   \
  } while (0)
#define ASSERT_LT_F(a, b) ASSERT_DBL(a, <, b)
#define ASSERT_LE_F(a, b) ASSERT_DBL(a, <=, b)
#define ASSERT_GT_F(a, b) ASSERT_DBL(a, >, b)
#define ASSERT_GE_F(a, b) ASSERT_DBL(a, >=, b)
/* lo <= a < hi, for a time that must be neither early nor late. */
#define ASSERT_IN_F(a, lo, hi)                                                          \
  do {                                                                                  \
    double mg_a_ = (double)(a), mg_lo_ = (double)(lo), mg_hi_ = (double)(hi);           \
    if (!(mg_a_ >= mg_lo_ && mg_a_ < mg_hi_))                                           \
      FAIL("%s in [%s, %s): %.6g not in [%.6g, %.6g)", #a, #lo, #hi, mg_a_, mg_lo_,     \
           mg_hi_);                                                                     \
  } while (0)

#define ASSERT_STR_EQ(a, b)                                                             \
  do {                                                                                  \
    const char *mg_a_ = (a), *mg_b_ = (b);                                              \
    if (mg_a_ == NULL || mg_b_ == NULL || strcmp(mg_a_, mg_b_) != 0)                    \
      FAIL("%s == %s: \"%s\" vs \"%s\"", #a, #b, mg_a_ ? mg_a_ : "(null)",             \
           mg_b_ ? mg_b_ : "(null)");                                                   \
  } while (0)

#define ASSERT_CONTAINS(hay, needle)                                                    \
  do {                                                                                  \
    const char *mg_h_ = (hay), *mg_n_ = (needle);                                       \
    if (mg_h_ == NULL || strstr(mg_h_, mg_n_) == NULL)                                  \
      FAIL("%s does not contain \"%s\": \"%s\"", #hay, mg_n_, mg_h_ ? mg_h_ : "(null)"); \
  } while (0)

/* A call returning mg_status_t must return exactly `want`; prints the message otherwise. */
#define ASSERT_STATUS(want, call)                                                       \
  do {                                                                                  \
    mg_status_t mg_st_ = (call);                                                        \
    if (mg_st_ != (want))                                                               \
      FAIL("%s returned %s, expected %s; last error: %s", #call, mg_status_name(mg_st_), \
           mg_status_name(want), mg_last_error());                                      \
  } while (0)
#define ASSERT_OK(call) ASSERT_STATUS(MG_OK, call)

/* The monotonic clock, in seconds. */
static inline double test_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int test_dbl_cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v[0 .. n) and returns its median (the upper one for even n). */
static inline double test_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, test_dbl_cmp);
  return v[n / 2];
}

/* Rank `rank` of nranks of a host-backend communicator made from uid, every wait bounded by
 * timeout_s seconds; asserts that it is made. */
static inline mg_comm_t *test_host_comm(int nranks, const mg_unique_id_t *uid, int rank,
                                        double timeout_s) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout_s;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_rank(&cfg, nranks, uid, rank, &comm));
  return comm;
}

/* Forks n ranks: rank r runs fn(r, arg) in a child of its own, which then exits with 0 (fn may
 * exit itself, e.g. SKIP). Their pids go to pids[0 .. n); see test_wait_ranks. */
static inline void test_fork_ranks(pid_t *pids, int n, void (*fn)(int r, void *arg), void *arg) {
  fflush(NULL);
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    ASSERT(pids[r] >= 0);
    if (pids[r] == 0) {
      fn(r, arg);
      fflush(NULL); /* _exit flushes nothing */
      _exit(0);
    }
  }
}

/* Reaps the forked ranks pids[0 .. n): each must have exited with 0, or all of them skipped. */
static inline void test_wait_ranks(const pid_t *pids, int n) {
  int skipped = 0;
  for (int r = 0; r < n; r++) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
    if (WIFEXITED(status) && WEXITSTATUS(status) == MG_TEST_SKIP_CODE)
      skipped++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      FAIL("rank %d failed (0x%x)", r, status);
  }
  if (skipped == n) SKIP("every rank skipped");
  if (skipped > 0) FAIL("%d of %d ranks skipped", skipped, n);
}

/* Reaps a rank the test killed: it must have ended by a signal. */
static inline void test_wait_killed(pid_t pid) {
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT(WIFSIGNALED(status));
}

#endif
