/*
 * trace_ends.c -- the flight recorder's ends (core/trace.c), as every dump must see them while
 * the operations run: an all_reduce that waits
 * for a late rank is "started" with no t_end; once done it is "completed" (MG_OK) with
 * t_start <= t_end; one that times out is "failed" (MG_ERR_TIMED_OUT). Then a thread dumps the
 * ring over and over while two thread ranks run 2000 all_reduces: in every dump an entry is
 * started with no end, or ended with both times and a status (run it under TSan too).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define ROUNDS 2000

static mg_comm_t *comms[2];
static atomic_int stop;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The dump of rank 0 as a string (malloc'd). */
static char *dump(const char *path) {
  ASSERT_OK(mg_comm_dump_trace(comms[0], path));
  FILE *f = fopen(path, "r");
  ASSERT(f != NULL);
  static const size_t cap = 1 << 22;
  char *buf = malloc(cap);
  ASSERT(buf != NULL);
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* Every entry of the dump d: ended entries have t_end, a status and t_start <= t_end; running
 * ones neither. Returns the last entry (a pointer into d). */
static const char *check_entries(const char *d) {
  const char *e = strstr(d, "\"entries\": ["), *last = NULL;
  ASSERT(e != NULL);
  while ((e = strstr(e + 1, "{\"id\": ")) != NULL) {
    last = e;
    const char *te = strstr(e, "\"t_end\": "), *ts = strstr(e, "\"t_start\": ");
    const char *state = strstr(e, "\"state\": \""), *status = strstr(e, "\"status\": \"");
    ASSERT(te != NULL && ts != NULL && state != NULL && status != NULL);
    const int ended =
        strncmp(state + 10, "completed", 9) == 0 || strncmp(state + 10, "failed", 6) == 0;
    const int has_end = strncmp(te + 9, "null", 4) != 0;
    const int has_status = status[11] != '"';
    if (ended != has_end || ended != has_status)
      FAIL("inconsistent entry: %.300s", e);
    if (ended && strtod(ts + 11, NULL) > strtod(te + 9, NULL)) FAIL("t_start > t_end: %.300s", e);
  }
  ASSERT(last != NULL);
  return last;
}

static void *rank_once(void *p) {
  const int r = (int)(intptr_t)p;
  if (r == 1) sleep_ms(300); /* late: rank 0 waits for it */
  float x = 1, y = 0;
  ASSERT_OK(mg_all_reduce(&x, &y, 1, MG_FLOAT32, MG_SUM, comms[r], NULL));
  return NULL;
}

static void *rank_loop(void *p) {
  const int r = (int)(intptr_t)p;
  float x = 1, y = 0;
  for (int i = 0; i < ROUNDS; i++)
    ASSERT_OK(mg_all_reduce(&x, &y, 1, MG_FLOAT32, MG_SUM, comms[r], NULL));
  return NULL;
}

static void *dumper(void *p) {
  const char *path = p;
  int n = 0;
  while (!atomic_load(&stop) || n == 0) {
    char *d = dump(path);
    check_entries(d);
    free(d);
    n++;
  }
  printf("trace_ends: %d dumps taken while the ranks ran\n", n);
  return NULL;
}

/* The last entry of rank 0's dump has this state and status. */
static void expect_last(const char *path, const char *state, const char *status) {
  char *d = dump(path);
  const char *e = check_entries(d);
  char want[96];
  snprintf(want, sizeof want, "\"state\": \"%s\", \"status\": \"%s\"}", state, status);
  if (strstr(e, want) == NULL) FAIL("want %s in the last entry: %s", want, e);
  free(d);
}

int main(void) {
  char dir[] = "/tmp/mg-trace-ends-XXXXXX";
  ASSERT(mkdtemp(dir) != NULL);
  char path[64];
  snprintf(path, sizeof path, "%s/r0.json", dir);
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 1;
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));

  /* In flight, then completed. */
  pthread_t t[2];
  for (int r = 0; r < 2; r++)
    ASSERT_EQ(pthread_create(&t[r], NULL, rank_once, (void *)(intptr_t)r), 0);
  sleep_ms(100);
  expect_last(path, "started", "");
  for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  expect_last(path, "completed", "MG_OK");

  /* Dumps beside the calls. */
  pthread_t d;
  ASSERT_EQ(pthread_create(&d, NULL, dumper, path), 0);
  for (int r = 0; r < 2; r++)
    ASSERT_EQ(pthread_create(&t[r], NULL, rank_loop, (void *)(intptr_t)r), 0);
  for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  atomic_store(&stop, 1);
  ASSERT_EQ(pthread_join(d, NULL), 0);
  expect_last(path, "completed", "MG_OK");

  /* Failed: rank 1 never comes. */
  float x = 1, y = 0;
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_all_reduce(&x, &y, 1, MG_FLOAT32, MG_SUM, comms[0], NULL));
  expect_last(path, "failed", "MG_ERR_TIMED_OUT");

  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  unlink(path);
  rmdir(dir);
  printf("trace_ends: in flight, completed, failed and racing dumps as expected\n");
  return 0;
}
