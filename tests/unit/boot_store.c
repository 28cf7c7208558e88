/*
 * boot_store.c -- the rendezvous store through its public API, in one process: the semantics of
 * every call, waits that end when the key appears or the deadline passes, barriers, bad
 * arguments and bad handles for every function, tokens, addresses, and what clients see when
 * the server closes.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"

#define TOKEN "unit-test-token"

static char addr[128];

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static mg_store_t *client(void) {
  mg_store_t *c = NULL;
  ASSERT_OK(mg_store_connect(addr, TOKEN, 10, &c));
  return c;
}

static void test_basics(mg_store_t *s) {
  mg_store_t *c = client();
  char buf[64];
  size_t len = 0;
  int flag = -1;
  /* set on one connection, get on another; binary values keep their NUL bytes */
  ASSERT_OK(mg_store_set(s, "k1", "a\0b", 3, 0));
  ASSERT_OK(mg_store_get(c, "k1", buf, sizeof buf, &len, 0));
  ASSERT_EQ(len, 3);
  ASSERT(memcmp(buf, "a\0b", 3) == 0);
  /* replace; an empty value is a value */
  ASSERT_OK(mg_store_set(c, "k1", NULL, 0, 0));
  len = 99;
  ASSERT_OK(mg_store_get(s, "k1", NULL, 0, &len, 0));
  ASSERT_EQ(len, 0);
  ASSERT_OK(mg_store_check(c, "k1", &flag, 0));
  ASSERT_EQ(flag, 1);
  ASSERT_OK(mg_store_check(c, "nope", &flag, 0));
  ASSERT_EQ(flag, 0);
  /* delete */
  ASSERT_OK(mg_store_delete(c, "k1", &flag, 0));
  ASSERT_EQ(flag, 1);
  ASSERT_OK(mg_store_delete(c, "k1", &flag, 0));
  ASSERT_EQ(flag, 0);
  ASSERT_OK(mg_store_delete(c, "k1", NULL, 0));
  ASSERT_OK(mg_store_check(s, "k1", &flag, 0));
  ASSERT_EQ(flag, 0);
  /* add: absent is 0, the value is decimal text */
  int64_t r = 0;
  ASSERT_OK(mg_store_add(c, "n", 5, &r, 0));
  ASSERT_EQ(r, 5);
  ASSERT_OK(mg_store_add(s, "n", -7, &r, 0));
  ASSERT_EQ(r, -2);
  ASSERT_OK(mg_store_add(s, "n", 0, NULL, 0));
  ASSERT_OK(mg_store_get(c, "n", buf, sizeof buf, &len, 0));
  buf[len] = '\0';
  ASSERT_STR_EQ(buf, "-2");
  ASSERT_OK(mg_store_set(c, "n", "9223372036854775806", 19, 0));
  ASSERT_OK(mg_store_add(c, "n", 1, &r, 0));
  ASSERT_EQ(r, INT64_MAX);
  r = 77;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_add(c, "n", 1, &r, 0)); /* overflow */
  ASSERT_CONTAINS(mg_last_error(), "overflow");
  ASSERT_EQ(r, 77); /* untouched */
  ASSERT_OK(mg_store_get(c, "n", buf, sizeof buf, &len, 0));
  ASSERT_EQ(len, 19); /* unchanged */
  ASSERT_OK(mg_store_set(c, "text", "abc", 3, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_add(c, "text", 1, &r, 0));
  ASSERT_CONTAINS(mg_last_error(), "decimal");
  /* compare-and-set */
  int sw = -1;
  ASSERT_OK(mg_store_compare_set(c, "leader", NULL, 0, "r1", 2, &sw, 0));
  ASSERT_EQ(sw, 1);
  ASSERT_OK(mg_store_compare_set(s, "leader", NULL, 0, "r2", 2, &sw, 0));
  ASSERT_EQ(sw, 0); /* present: "absent" does not match */
  ASSERT_OK(mg_store_compare_set(s, "leader", "r9", 2, "r2", 2, &sw, 0));
  ASSERT_EQ(sw, 0);
  ASSERT_OK(mg_store_compare_set(s, "leader", "r1", 2, "r2", 2, &sw, 0));
  ASSERT_EQ(sw, 1);
  ASSERT_OK(mg_store_get(c, "leader", buf, sizeof buf, &len, 0));
  ASSERT(len == 2 && memcmp(buf, "r2", 2) == 0);
  ASSERT_OK(mg_store_compare_set(s, "leader", "r2", 2, "", 0, NULL, 0));
  ASSERT_OK(mg_store_compare_set(s, "leader", "", 0, "r3", 2, &sw, 0)); /* empty matches empty */
  ASSERT_EQ(sw, 1);
  ASSERT_OK(mg_store_compare_set(s, "absent-key", "", 0, "x", 1, &sw, 0));
  ASSERT_EQ(sw, 0); /* an empty expected value does not match an absent key */
  ASSERT_OK(mg_store_close(c));
}

static void test_limits(mg_store_t *s) {
  static char big[MG_STORE_VALUE_MAX + 1];
  static char back[MG_STORE_VALUE_MAX];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 131u);
  char key[MG_STORE_KEY_MAX + 2];
  memset(key, 'k', sizeof key);
  key[MG_STORE_KEY_MAX] = '\0';
  size_t len = 0;
  ASSERT_OK(mg_store_set(s, key, big, MG_STORE_VALUE_MAX, 0));
  ASSERT_OK(mg_store_get(s, key, back, sizeof back, &len, 0));
  ASSERT_EQ(len, MG_STORE_VALUE_MAX);
  ASSERT(memcmp(big, back, len) == 0);
  /* too small a buffer: an error that says how long, nothing written */
  char small[8] = "unused";
  len = 12345;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_get(s, key, small, sizeof small, &len, 0));
  ASSERT_CONTAINS(mg_last_error(), "1048576 bytes");
  ASSERT_EQ(len, 12345);
  ASSERT_STR_EQ(small, "unused");
  key[MG_STORE_KEY_MAX] = 'k';
  key[MG_STORE_KEY_MAX + 1] = '\0';
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, key, "v", 1, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, "k", big, MG_STORE_VALUE_MAX + 1, 0));
  /* the connection is still good after client-side refusals */
  ASSERT_OK(mg_store_set(s, "after", "1", 1, 0));
  /* the server holds at most 256 MiB: then MG_ERR_OUT_OF_MEMORY, and room again after deletes */
  int full_at = -1;
  for (int i = 0; i < 300; i++) {
    char k[32];
    snprintf(k, sizeof k, "fill/%d", i);
    mg_status_t st = mg_store_set(s, k, big, MG_STORE_VALUE_MAX, 0);
    if (st == MG_ERR_OUT_OF_MEMORY) {
      ASSERT_CONTAINS(mg_last_error(), "full");
      full_at = i;
      break;
    }
    ASSERT_OK(st);
  }
  printf("the store refused a set when full, after %d values of 1 MiB\n", full_at);
  ASSERT(full_at >= 250 && full_at <= 256);
  for (int i = 0; i < full_at; i++) {
    char k[32];
    snprintf(k, sizeof k, "fill/%d", i);
    ASSERT_OK(mg_store_delete(s, k, NULL, 0));
  }
  ASSERT_OK(mg_store_set(s, "fill/again", big, MG_STORE_VALUE_MAX, 0));
  ASSERT_OK(mg_store_delete(s, "fill/again", NULL, 0));
}

typedef struct {
  const char *key;
  double delay;
} setter_t;

static void *setter(void *arg) {
  setter_t *a = arg;
  mg_store_t *c = client();
  sleep_s(a->delay);
  ASSERT_OK(mg_store_set(c, a->key, "late", 4, 0));
  ASSERT_OK(mg_store_close(c));
  return NULL;
}

static void test_waits(mg_store_t *s) {
  /* a get waits for the key, and returns as soon as it is set */
  pthread_t t;
  setter_t a = {"late-key", 0.2};
  ASSERT_EQ(pthread_create(&t, NULL, setter, &a), 0);
  char buf[16];
  size_t len = 0;
  double t0 = mg__now();
  ASSERT_OK(mg_store_get(s, "late-key", buf, sizeof buf, &len, 5));
  double took = mg__now() - t0;
  ASSERT_EQ(len, 4);
  ASSERT_IN_F(took, 0.15, 2.0);
  ASSERT_EQ(pthread_join(t, NULL), 0);
  /* a key that never comes: MG_ERR_TIMED_OUT at the deadline, not much later */
  t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_get(s, "never", buf, sizeof buf, &len, 0.3));
  took = mg__now() - t0;
  printf("get of a missing key, 0.3 s deadline: returned after %.3f s\n", took);
  ASSERT_IN_F(took, 0.29, 2.0); /* generous: loaded CI machines, sanitizers */
  ASSERT_CONTAINS(mg_last_error(), "never");
  /* and the connection still serves */
  ASSERT_OK(mg_store_set(s, "alive", "1", 1, 0));
  /* a deleted key is waited for again */
  ASSERT_OK(mg_store_delete(s, "late-key", NULL, 0));
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_get(s, "late-key", buf, sizeof buf, &len, 0.1));
}

typedef struct {
  const char *name;
  int n;
  double timeout;
  mg_status_t got;
} barrier_arg_t;

static void *barrier_thread(void *arg) {
  barrier_arg_t *a = arg;
  mg_store_t *c = client();
  a->got = mg_store_barrier(c, a->name, a->n, a->timeout);
  ASSERT_OK(mg_store_close(c));
  return NULL;
}

static void test_barriers(mg_store_t *s) {
  enum { N = 4 };
  for (int round = 0; round < 3; round++) { /* the same name, used again */
    pthread_t t[N - 1];
    barrier_arg_t a[N - 1];
    for (int i = 0; i < N - 1; i++) {
      a[i] = (barrier_arg_t){"B", N, 10, MG_ERR_INTERNAL};
      ASSERT_EQ(pthread_create(&t[i], NULL, barrier_thread, &a[i]), 0);
    }
    sleep_s(0.05);
    ASSERT_OK(mg_store_barrier(s, "B", N, 10));
    for (int i = 0; i < N - 1; i++) {
      ASSERT_EQ(pthread_join(t[i], NULL), 0);
      ASSERT_STATUS(MG_OK, a[i].got);
    }
  }
  /* too few parties: everybody times out, with the count */
  pthread_t t;
  barrier_arg_t a = {"short", 3, 0.4, MG_ERR_INTERNAL};
  ASSERT_EQ(pthread_create(&t, NULL, barrier_thread, &a), 0);
  sleep_s(0.05);
  double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_barrier(s, "short", 3, 0.3));
  ASSERT_LT_F(mg__now() - t0, 2.5);
  ASSERT_CONTAINS(mg_last_error(), "of 3 parties");
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_STATUS(MG_ERR_TIMED_OUT, a.got);
  /* parties that left do not count: two fresh arrivals of three still wait */
  a = (barrier_arg_t){"short", 3, 0.3, MG_ERR_INTERNAL};
  ASSERT_EQ(pthread_create(&t, NULL, barrier_thread, &a), 0);
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_barrier(s, "short", 3, 0.3));
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_STATUS(MG_ERR_TIMED_OUT, a.got);
  /* party counts that disagree: whichever arrives second is refused, naming the first's count;
   * the first waits out its deadline */
  a = (barrier_arg_t){"mismatch", 2, 1, MG_ERR_INTERNAL};
  ASSERT_EQ(pthread_create(&t, NULL, barrier_thread, &a), 0);
  mg_status_t mine = mg_store_barrier(s, "mismatch", 3, 1);
  char why[256];
  mg_last_error_copy(why, sizeof why);
  ASSERT_EQ(pthread_join(t, NULL), 0);
  if (mine == MG_ERR_INVALID_ARGUMENT) {
    ASSERT_CONTAINS(why, "has 2 parties; this call says 3");
    ASSERT_STATUS(MG_ERR_TIMED_OUT, a.got);
  } else {
    ASSERT_STATUS(MG_ERR_TIMED_OUT, mine);
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, a.got);
  }
  /* and the name works again */
  a = (barrier_arg_t){"mismatch", 2, 10, MG_ERR_INTERNAL};
  ASSERT_EQ(pthread_create(&t, NULL, barrier_thread, &a), 0);
  ASSERT_OK(mg_store_barrier(s, "mismatch", 2, 10));
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_STATUS(MG_OK, a.got);
  /* a barrier of one passes at once; names are apart from keys */
  ASSERT_OK(mg_store_barrier(s, "solo", 1, 1));
  int exists = -1;
  ASSERT_OK(mg_store_check(s, "solo", &exists, 0));
  ASSERT_EQ(exists, 0);
}

static void test_bad_arguments(mg_store_t *s) {
  char buf[8];
  size_t len;
  int flag;
  int64_t r;
  int not_a_store = 0;
  mg_store_t *foreign = (mg_store_t *)&not_a_store;
  mg_store_t *bad[] = {NULL, foreign};
  for (int i = 0; i < 2; i++) {
    mg_store_t *b = bad[i];
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_set(b, "k", "v", 1, 0));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_get(b, "k", buf, sizeof buf, &len, 0));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_check(b, "k", &flag, 0));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_add(b, "k", 1, &r, 0));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_compare_set(b, "k", NULL, 0, "v", 1, &flag, 0));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_delete(b, "k", &flag, 0));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_barrier(b, "k", 1, 0));
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_address(b, buf, sizeof buf));
  }
  ASSERT_OK(mg_store_close(NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_close(foreign));
  /* a closed handle is detected without touching its memory */
  mg_store_t *c = client();
  ASSERT_OK(mg_store_close(c));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_set(c, "k", "v", 1, 0));
  ASSERT_CONTAINS(mg_last_error(), "not an open store");
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_store_close(c));

  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, NULL, "v", 1, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, "", "v", 1, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, "k", NULL, 1, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, "k", "v", 1, -1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, "k", "v", 1, NAN));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_set(s, "k", "v", 1, INFINITY));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_get(s, "k", buf, sizeof buf, NULL, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_get(s, "k", NULL, 4, &len, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_get(s, NULL, buf, sizeof buf, &len, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_check(s, "k", NULL, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_check(s, "", &flag, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_add(s, NULL, 1, &r, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_compare_set(s, "k", NULL, 1, "v", 1, &flag, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_compare_set(s, "k", NULL, 0, NULL, 1, &flag, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_store_compare_set(s, "k", "x", MG_STORE_VALUE_MAX + 1, "v", 1, &flag, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_delete(s, NULL, &flag, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_barrier(s, "b", 0, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_barrier(s, "b", -3, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_barrier(s, NULL, 2, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_address(s, NULL, 0));
  char tiny[4] = "xyz";
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_address(s, tiny, sizeof tiny));
  ASSERT_STR_EQ(tiny, "xyz");
  mg_store_t *out = (mg_store_t *)&not_a_store;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(NULL, TOKEN, 1, &out));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(addr, TOKEN, 1, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(addr, TOKEN, -1, &out));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(addr, "", 1, &out));
  char long_token[MG_STORE_TOKEN_MAX + 2];
  memset(long_token, 't', sizeof long_token - 1);
  long_token[sizeof long_token - 1] = '\0';
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(addr, long_token, 1, &out));
  /* no token at all (this test runs without MGCOMM_JOB_TOKEN) */
  ASSERT(getenv("MGCOMM_JOB_TOKEN") == NULL);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(addr, NULL, 1, &out));
  ASSERT_CONTAINS(mg_last_error(), "MGCOMM_JOB_TOKEN");
  static const char *bad_addresses[] = {
      "", "localhost", "127.0.0.1:", ":29500", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:-1",
      "127.0.0.1:12x", "::1:29500", "[::1]29500", "[::1", "127.0.0.1: 5"};
  for (size_t i = 0; i < sizeof bad_addresses / sizeof bad_addresses[0]; i++) {
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(bad_addresses[i], TOKEN, 1, &out));
    ASSERT_CONTAINS(mg_last_error(), "mg_store_connect");
  }
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_serve(":0", TOKEN, 1, &out));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_store_connect("no-such-host.invalid:5", TOKEN, 1, &out));
  ASSERT(out == (mg_store_t *)&not_a_store); /* never written on failure */
}

static void test_tokens_and_addresses(void) {
  mg_store_t *out = NULL;
  /* the wrong token is refused by the server, with a message that says so */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_store_connect(addr, "wrong-token", 2, &out));
  ASSERT_CONTAINS(mg_last_error(), "rejected the job token");
  ASSERT(out == NULL);
  /* the same address cannot be served twice */
  ASSERT_STATUS(MG_ERR_SYSTEM, mg_store_serve(addr, TOKEN, 1, &out));
  ASSERT_CONTAINS(mg_last_error(), addr);
  /* nobody listening: retries until the deadline, then MG_ERR_TIMED_OUT naming the address */
  mg_store_t *tmp;
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 5, &tmp));
  char dead[128];
  ASSERT_OK(mg_store_address(tmp, dead, sizeof dead));
  ASSERT_OK(mg_store_close(tmp));
  double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_connect(dead, TOKEN, 0.5, &out));
  double took = mg__now() - t0;
  printf("connect to %s with nobody listening: MG_ERR_TIMED_OUT after %.3f s\n", dead, took);
  ASSERT_IN_F(took, 0.45, 2.5);
  ASSERT_CONTAINS(mg_last_error(), dead);
  ASSERT(out == NULL);
  /* IPv6 loopback, where the machine has it */
  if (mg_store_serve("[::1]:0", TOKEN, 5, &tmp) == MG_OK) {
    char a6[128];
    ASSERT_OK(mg_store_address(tmp, a6, sizeof a6));
    ASSERT(strncmp(a6, "[::1]:", 6) == 0);
    mg_store_t *c6;
    ASSERT_OK(mg_store_connect(a6, TOKEN, 5, &c6));
    ASSERT_OK(mg_store_set(c6, "v6", "yes", 3, 0));
    ASSERT_OK(mg_store_close(c6));
    ASSERT_OK(mg_store_close(tmp));
  } else {
    printf("no IPv6 loopback here: %s\n", mg_last_error());
  }
}

typedef struct {
  mg_store_t *c;
  mg_status_t got;
  double took;
  atomic_int calling; /* set just before the call */
} blocked_t;

static void *blocked_get(void *arg) {
  blocked_t *b = arg;
  char buf[8];
  size_t len;
  double t0 = mg__now();
  atomic_store(&b->calling, 1);
  b->got = mg_store_get(b->c, "never-set", buf, sizeof buf, &len, 20);
  b->took = mg__now() - t0;
  return NULL;
}

static void test_server_close(void) {
  mg_store_t *srv, *c;
  char a[128];
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 5, &srv));
  ASSERT_OK(mg_store_address(srv, a, sizeof a));
  ASSERT_OK(mg_store_connect(a, TOKEN, 5, &c));
  /* a client waiting in a get when the server closes: MG_ERR_REMOTE at once */
  pthread_t t;
  blocked_t b = {c, MG_ERR_INTERNAL, 0, 0};
  ASSERT_EQ(pthread_create(&t, NULL, blocked_get, &b), 0);
  sleep_s(0.2);
  ASSERT_OK(mg_store_close(srv));
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_STATUS(MG_ERR_REMOTE, b.got);
  ASSERT_LT_F(b.took, 2.0);
  /* and every later call: the server is gone */
  ASSERT_STATUS(MG_ERR_REMOTE, mg_store_set(c, "k", "v", 1, 1));
  ASSERT_CONTAINS(mg_last_error(), "gone");
  ASSERT_OK(mg_store_close(c));

  /* closing a handle while another thread waits on it: that call returns MG_ERR_REMOTE */
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 5, &srv));
  ASSERT_OK(mg_store_address(srv, a, sizeof a));
  ASSERT_OK(mg_store_connect(a, TOKEN, 5, &c));
  b = (blocked_t){c, MG_ERR_INTERNAL, 0, 0};
  ASSERT_EQ(pthread_create(&t, NULL, blocked_get, &b), 0);
  /* The call must have begun (a call after close is MG_ERR_INVALID_USAGE, tested above). */
  while (!atomic_load(&b.calling)) sleep_s(0.01);
  sleep_s(0.5);
  ASSERT_OK(mg_store_close(c));
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_STATUS(MG_ERR_REMOTE, b.got);
  ASSERT_LT_F(b.took, 2.0);
  ASSERT_OK(mg_store_set(srv, "still", "serving", 7, 0));
  ASSERT_OK(mg_store_close(srv));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* what was printed survives a failed assertion */
  unsetenv("MGCOMM_JOB_TOKEN");
  mg_store_t *s = NULL;
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 10, &s));
  ASSERT_OK(mg_store_address(s, addr, sizeof addr));
  ASSERT(strncmp(addr, "127.0.0.1:", 10) == 0);
  ASSERT(strcmp(addr, "127.0.0.1:0") != 0);
  printf("serving on %s\n", addr);
  test_basics(s);
  test_limits(s);
  test_waits(s);
  test_barriers(s);
  test_bad_arguments(s);
  test_tokens_and_addresses();
  test_server_close();
  ASSERT_OK(mg_store_close(s));
  printf("boot_store: ok\n");
  return 0;
}
