/*
 * boot_progress.c -- progress through the job's store (src/boot/progress.c) with a real store
 * server: ranks publish fake progress and read each other's through mg__bprog_peer (what the
 * core's timeout messages use); a rank that never joins stays unknown; a change reaches the
 * others; a leaving rank's key goes; the thread stops with the last member; a store that dies
 * hangs nothing.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "boot/progress.h"
#include "base/clock.h"
#include "test.h"

#define TOKEN "progress-test-token"
#define INTERVAL_MS 20

typedef struct {
  pthread_mutex_t lock;
  mg__progress_t p;
} fake_t;

static mg_status_t own(void *ctx, mg__progress_t *out, int *stopped) {
  fake_t *f = ctx;
  pthread_mutex_lock(&f->lock);
  *out = f->p;
  *stopped = 0;
  pthread_mutex_unlock(&f->lock);
  return MG_OK;
}

static void set_fake(fake_t *f, uint64_t enq1, mg__opkind_t kind, uint64_t count) {
  pthread_mutex_lock(&f->lock);
  f->p.enqueued1 = enq1;
  f->p.kind = kind;
  f->p.count = count;
  f->p.dtype = MG_FLOAT32;
  f->p.root = -1;
  pthread_mutex_unlock(&f->lock);
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* Waits (at most 5 s) until p has read rank r with enqueued1 == want. */
static void await_peer(mg__bprog_t *p, int r, uint64_t want, mg__progress_t *got) {
  double until = mg__now() + 5;
  for (;;) {
    double t0 = mg__now();
    mg_status_t st = mg__bprog_peer(p, r, got);
    ASSERT_LT_F((mg__now() - t0) * 1000, 50); /* never blocks */
    if (st == MG_OK && got->enqueued1 == want) return;
    if (mg__now() > until) FAIL("rank %d never read as enqueued1 %llu (status %d)", r,
                                (unsigned long long)want, (int)st);
    sleep_s(0.005);
  }
}

static int progress_threads(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    if (fgets(name, sizeof name, f) != NULL && strncmp(name, "mg-progress", 11) == 0) n++;
    fclose(f);
  }
  closedir(d);
  return n;
}

static void test_publish_read(void) {
  mg_store_t *srv = NULL, *cli = NULL;
  char addr[128];
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 10, &srv));
  ASSERT_OK(mg_store_address(srv, addr, sizeof addr));
  ASSERT_OK(mg_store_connect(addr, TOKEN, 10, &cli));
  const uint64_t tag = 0x1234abcd5678ef00ull;
  fake_t f0 = {PTHREAD_MUTEX_INITIALIZER, {0}}, f1 = {PTHREAD_MUTEX_INITIALIZER, {0}};
  set_fake(&f0, 5, MG_OPK_ALL_GATHER, 7);
  /* rank 1 has enqueued nothing yet; rank 2 never joins */
  mg__bprog_t *p0 = NULL, *p1 = NULL;
  ASSERT_OK(mg__bprog_join(addr, TOKEN, tag, 0, 3, INTERVAL_MS, own, &f0, &p0));
  ASSERT_OK(mg__bprog_join(addr, TOKEN, tag, 1, 3, INTERVAL_MS, own, &f1, &p1));
  ASSERT_EQ(progress_threads(), 1);

  mg__progress_t got;
  await_peer(p1, 0, 5, &got);
  ASSERT_EQ(got.kind, MG_OPK_ALL_GATHER);
  ASSERT_EQ(got.count, 7);
  ASSERT_EQ(got.dtype, MG_FLOAT32);
  ASSERT_EQ(got.root, -1);
  ASSERT_EQ(got.completed1, 0);
  await_peer(p0, 1, 0, &got); /* published: "has not enqueued any", not unknown */
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__bprog_peer(p0, 2, &got));
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__bprog_peer(p1, 2, &got));
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__bprog_peer(p1, 3, &got)); /* out of range */

  /* The value is where the documentation says, in its documented size. */
  char key[64], val[64];
  size_t len = 0;
  snprintf(key, sizeof key, "mg/progress/%016llx/0", (unsigned long long)tag);
  ASSERT_OK(mg_store_get(cli, key, val, sizeof val, &len, 1));
  ASSERT_EQ(len, 48);
  ASSERT(memcmp(val, "mgpr", 4) == 0);

  /* Progress moves: rank 1 enqueues #0 and #1, rank 0 (still) reads it. */
  set_fake(&f1, 1, MG_OPK_BROADCAST, 3);
  await_peer(p0, 1, 1, &got);
  set_fake(&f1, 2, MG_OPK_ALL_REDUCE, 11);
  await_peer(p0, 1, 2, &got);
  ASSERT_EQ(got.kind, MG_OPK_ALL_REDUCE);
  ASSERT_EQ(got.count, 11);

  /* Leaving removes the key; the thread keeps serving the other member. */
  mg__bprog_leave(p1);
  snprintf(key, sizeof key, "mg/progress/%016llx/1", (unsigned long long)tag);
  double until = mg__now() + 5;
  int exists = 1;
  while (exists && mg__now() < until) {
    ASSERT_OK(mg_store_check(cli, key, &exists, 1));
    if (exists) sleep_s(0.01);
  }
  ASSERT_EQ(exists, 0);
  ASSERT_EQ(progress_threads(), 1);
  double t0 = mg__now();
  mg__bprog_leave(p0);
  ASSERT_LT_F(mg__now() - t0, 1.0);
  ASSERT_EQ(progress_threads(), 0);
  snprintf(key, sizeof key, "mg/progress/%016llx/0", (unsigned long long)tag);
  ASSERT_OK(mg_store_check(cli, key, &exists, 1));
  ASSERT_EQ(exists, 0);
  mg__bprog_leave(NULL);
  ASSERT_OK(mg_store_close(cli));
  ASSERT_OK(mg_store_close(srv));
}

/* The server goes away (rank 0 exited): nothing hangs, reads stay non-blocking, members leave
 * promptly, and a later member starts a new thread. */
static void test_dead_server(void) {
  mg_store_t *srv = NULL;
  char addr[128];
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 10, &srv));
  ASSERT_OK(mg_store_address(srv, addr, sizeof addr));
  fake_t f0 = {PTHREAD_MUTEX_INITIALIZER, {0}}, f1 = {PTHREAD_MUTEX_INITIALIZER, {0}};
  set_fake(&f0, 1, MG_OPK_ALL_REDUCE, 1);
  set_fake(&f1, 1, MG_OPK_ALL_REDUCE, 1);
  mg__bprog_t *p0 = NULL, *p1 = NULL;
  ASSERT_OK(mg__bprog_join(addr, TOKEN, 77, 0, 2, INTERVAL_MS, own, &f0, &p0));
  ASSERT_OK(mg__bprog_join(addr, TOKEN, 77, 1, 2, INTERVAL_MS, own, &f1, &p1));
  mg__progress_t got;
  await_peer(p0, 1, 1, &got);
  ASSERT_OK(mg_store_close(srv));
  /* Both publish again and fail; reading what was cached never blocks. */
  set_fake(&f0, 2, MG_OPK_BROADCAST, 1);
  set_fake(&f1, 2, MG_OPK_BROADCAST, 1);
  double until = mg__now() + 1.0;
  while (mg__now() < until) {
    double t0 = mg__now();
    mg_status_t st = mg__bprog_peer(p0, 1, &got);
    ASSERT_LT_F((mg__now() - t0) * 1000, 50);
    if (st == MG_OK) ASSERT_EQ(got.enqueued1, 1); /* the last value read, kept */
    sleep_s(0.01);
  }
  double t0 = mg__now();
  mg__bprog_leave(p0);
  mg__bprog_leave(p1);
  ASSERT_LT_F(mg__now() - t0, 3.0);
  ASSERT_EQ(progress_threads(), 0);

  /* An address where nothing listens: connecting gives up within its bound. */
  ASSERT_OK(mg__bprog_join(addr, TOKEN, 78, 0, 2, INTERVAL_MS, own, &f0, &p0));
  ASSERT_EQ(progress_threads(), 1);
  sleep_s(0.1);
  t0 = mg__now();
  mg__bprog_leave(p0);
  ASSERT_LT_F(mg__now() - t0, 3.0);
  ASSERT_EQ(progress_threads(), 0);
}

int main(void) {
  test_publish_read();
  test_dead_server();
  printf("boot_progress: ok\n");
  return 0;
}
