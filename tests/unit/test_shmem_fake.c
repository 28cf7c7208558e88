/*
 * test_shmem_fake.c -- mgcomm's NVSHMEM layer against a fake NVSHMEM (tests/fake/nvshmem_fake.c)
 * whose PEs are processes of this host sharing host memory: every argument check, the
 * comparison of collective allocations, the bounded rendezvous and the life cycle, without a
 * GPU. Two PEs, forked, on a host-backend communicator. Modes:
 *   checks    put/get across PEs, PE out of range, non-symmetric and overflowing ranges (and
 *             that the fake never saw a refused call), zero and overflowing sizes, teams,
 *             predefined-team destroy, finalize with live allocations, double init, idempotent
 *             finalize, no restart
 *   mismatch  PEs asking different sizes or freeing different objects: refused on both, naming
 *             them, and the heap still consistent afterwards
 *   timeout   rank 1 never comes to init: rank 0 gets MG_ERR_TIMED_OUT naming it
 *   remote    rank 1 cannot start (a bad device): rank 0 gets MG_ERR_REMOTE naming PE 1
 *   initfail  NVSHMEM's init fails (an injected code): MG_ERR_BACKEND, and no second try
 *   env       NVSHMEM's own bootstrap (one PE)
 *   heap      the record of live allocations over many allocations and frees in mixed order
 *             (growth, holes reused): every live one accepts its last byte and refuses one more,
 *             a freed one is refused, finalize counts exactly
 *   threads   a communicator whose ranks are threads of this process: the second thread's init
 *             is refused at once (one PE per process), the first times out naming that rank
 *   mpg       NVSHMEM in its limited MPG mode (PEs sharing a GPU): a team split, which would
 *             exit the process, is refused with MG_ERR_NOT_SUPPORTED
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loader/fault.h"
#include "mgcomm.h"
#include "test.h"

#define N 2
static mg_unique_id_t uid;

/* The fake's count of puts and gets that reached it. */
static int fake_rma_calls(void) {
  void *h = dlopen(getenv("MGCOMM_NVSHMEM_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ASSERT(h != NULL);
  atomic_int *c = (atomic_int *)dlsym(h, "nvshmem_fake_rma_calls");
  ASSERT(c != NULL);
  int v = atomic_load(c);
  dlclose(h);
  return v;
}

static mg_comm_t *make_comm(int r, double timeout_s) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout_s;
  mg_comm_t *c = NULL;
  ASSERT_OK(mg_comm_init_rank(&cfg, N, &uid, r, &c));
  return c;
}

static void checks(int r) {
  mg_comm_t *comm = make_comm(r, 30);
  int v = -1;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_my_pe(&v)); /* before init */
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_finalize());
  ASSERT_OK(mg_shmem_init_comm(comm, MG_UNDEF_INT));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_init_comm(comm, MG_UNDEF_INT));
  ASSERT_CONTAINS(mg_last_error(), "initialised already");
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_init_env(MG_UNDEF_INT));
  ASSERT_OK(mg_comm_destroy(comm)); /* NVSHMEM does not need the communicator after init */
  ASSERT_OK(mg_shmem_my_pe(&v));
  ASSERT_EQ(v, r);
  ASSERT_OK(mg_shmem_n_pes(&v));
  ASSERT_EQ(v, N);
  int rel = 0, spec = 0;
  ASSERT_OK(mg_shmem_version(&rel, &spec));
  ASSERT_EQ(rel, 39901); /* the fake's own release */
  ASSERT_EQ(spec, 103);

  /* Put to the peer, barrier, get back from the peer. */
  unsigned char *a = NULL, *b = NULL;
  ASSERT_OK(mg_shmem_malloc(4096, (void **)&a));
  ASSERT_OK(mg_shmem_align(1024, 512, (void **)&b));
  ASSERT((uintptr_t)b % 1024 == 0);
  unsigned char mine[256], got[256];
  for (int i = 0; i < 256; i++) mine[i] = (unsigned char)(i * 7 + r);
  int peer = 1 - r;
  ASSERT_OK(mg_shmem_put(a + 100, mine, sizeof mine, peer));
  ASSERT_OK(mg_shmem_quiet());
  ASSERT_OK(mg_shmem_barrier_all());
  for (int i = 0; i < 256; i++) ASSERT_EQ(a[100 + i], (unsigned char)(i * 7 + peer));
  ASSERT_OK(mg_shmem_get_on_stream(got, a + 100, sizeof got, peer, NULL));
  for (int i = 0; i < 256; i++) ASSERT_EQ(got[i], (unsigned char)(i * 7 + r)); /* mine, back */
  ASSERT_OK(mg_shmem_put_on_stream(b, mine, 512 - 256, r, NULL));
  ASSERT_OK(mg_shmem_fence());
  ASSERT_OK(mg_shmem_barrier_all_on_stream(NULL));
  ASSERT_OK(mg_shmem_sync_all());
  ASSERT_OK(mg_shmem_put(a, mine, 0, peer)); /* zero bytes: nothing to check, nothing copied */

  /* Refused before NVSHMEM sees them. */
  int calls = fake_rma_calls();
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(a, mine, 16, N));
  ASSERT_CONTAINS(mg_last_error(), "PE 2 is out of range");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_get(got, a, 16, -1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(got, mine, 16, peer)); /* got: not symmetric */
  ASSERT_CONTAINS(mg_last_error(), "is not symmetric");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(a + 4000, mine, 200, peer));
  ASSERT_CONTAINS(mg_last_error(), "runs past the end of its symmetric allocation");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_get_on_stream(got, b + 400, 113, peer, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(a, NULL, 16, peer));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_get(NULL, a, 16, peer));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(a + 4096, mine, 1, peer)); /* one past */
  ASSERT_EQ(fake_rma_calls(), calls);

  /* Zero and overflow, collectively. */
  void *z = (void *)1;
  ASSERT_OK(mg_shmem_malloc(0, &z));
  ASSERT(z == NULL);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_calloc(SIZE_MAX / 2, 3, &z));
  ASSERT_CONTAINS(mg_last_error(), "overflows");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_align(3, 64, &z));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_malloc(64, NULL));
  void *c = NULL;
  ASSERT_OK(mg_shmem_calloc(16, 4, &c));
  for (int i = 0; i < 64; i++) ASSERT_EQ(((unsigned char *)c)[i], 0);
  ASSERT_OK(mg_shmem_free(NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_free(a + 8)); /* inside, not the start */
  ASSERT_CONTAINS(mg_last_error(), "not the start");

  /* Teams: PE 1 alone in a team split from world; PE 0 gets "no team". */
  mg_shmem_team_t t = 77;
  ASSERT_OK(mg_shmem_team_split_strided(MG_SHMEM_TEAM_WORLD, 1, 1, 1, &t));
  if (r == 0) {
    ASSERT_EQ(t, MG_SHMEM_TEAM_NONE);
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_team_my_pe(t, &v));
  } else {
    ASSERT_NE(t, MG_SHMEM_TEAM_NONE);
    ASSERT_OK(mg_shmem_team_my_pe(t, &v));
    ASSERT_EQ(v, 0);
    ASSERT_OK(mg_shmem_team_n_pes(t, &v));
    ASSERT_EQ(v, 1);
    ASSERT_OK(mg_shmem_team_translate_pe(t, 0, MG_SHMEM_TEAM_WORLD, &v));
    ASSERT_EQ(v, 1);
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_team_translate_pe(t, 1, MG_SHMEM_TEAM_WORLD, &v));
  }
  ASSERT_OK(mg_shmem_team_translate_pe(MG_SHMEM_TEAM_WORLD, 0, MG_SHMEM_TEAM_NODE, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(mg_shmem_team_n_pes(MG_SHMEM_TEAM_SHARED, &v));
  ASSERT_EQ(v, N);
  mg_shmem_team_t t2;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_team_split_strided(MG_SHMEM_TEAM_WORLD, 0, 1, 3, &t2));
  ASSERT_CONTAINS(mg_last_error(), "past the parent");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_team_split_strided(MG_SHMEM_TEAM_WORLD, 0, 0, 1, &t2));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_team_split_strided(55, 0, 1, 1, &t2));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_team_n_pes(55, &v));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_team_destroy(MG_SHMEM_TEAM_WORLD));
  ASSERT_CONTAINS(mg_last_error(), "predefined");
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_team_destroy(MG_SHMEM_TEAM_SHARED));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_team_destroy(MG_SHMEM_TEAM_NODE));
  ASSERT_OK(mg_shmem_team_destroy(MG_SHMEM_TEAM_NONE));

  /* Finalize refuses while anything is live, and says how much. */
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_finalize());
  ASSERT_CONTAINS(mg_last_error(), "3 symmetric allocations are live");
  if (r == 1) {
    ASSERT_OK(mg_shmem_team_destroy(t));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_team_destroy(t)); /* destroyed already */
  }
  ASSERT_OK(mg_shmem_free(c));
  ASSERT_OK(mg_shmem_free(b));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_finalize());
  ASSERT_CONTAINS(mg_last_error(), "1 symmetric allocation is live");
  ASSERT_OK(mg_shmem_free(a));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(a, mine, 1, peer)); /* freed: not symmetric */
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_shmem_finalize()); /* idempotent */
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_barrier_all());
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_malloc(64, &z));
  ASSERT_OK(mg_shmem_free(NULL));
  comm = make_comm(r, 30);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_init_comm(comm, MG_UNDEF_INT));
  ASSERT_CONTAINS(mg_last_error(), "finalized");
  ASSERT_OK(mg_comm_destroy(comm));
}

static void mismatch(int r) {
  mg_comm_t *comm = make_comm(r, 30);
  ASSERT_OK(mg_shmem_init_comm(comm, MG_UNDEF_INT));
  void *p = NULL, *q = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_malloc(r == 0 ? 100 : 200, &p));
  ASSERT_CONTAINS(mg_last_error(), "PE 0 called mg_shmem_malloc(100 bytes)");
  ASSERT_CONTAINS(mg_last_error(), "PE 1 called mg_shmem_malloc(200 bytes)");
  ASSERT(p == NULL);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, r == 0 ? mg_shmem_malloc(64, &p) : mg_shmem_calloc(8, 8, &p));
  /* One PE's own wrong argument fails both, naming it. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_malloc(64, r == 1 ? NULL : &p));
  if (r == 0) ASSERT_CONTAINS(mg_last_error(), "PE 1 (MG_ERR_INVALID_ARGUMENT)");
  else ASSERT_CONTAINS(mg_last_error(), "ptr is NULL");
  /* The heap is as it was: matched calls work, at matching places. */
  ASSERT_OK(mg_shmem_malloc(128, &p));
  ASSERT_OK(mg_shmem_malloc(128, &q));
  unsigned char x = (unsigned char)(0x40 + r), y = 0;
  ASSERT_OK(mg_shmem_put((unsigned char *)q + 127, &x, 1, 1 - r));
  ASSERT_OK(mg_shmem_barrier_all());
  ASSERT_EQ(((unsigned char *)q)[127], 0x40 + (1 - r));
  ASSERT_OK(mg_shmem_get(&y, (unsigned char *)p, 1, r));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_free(r == 0 ? p : q)); /* different objects */
  ASSERT_CONTAINS(mg_last_error(), "mg_shmem_free(allocation #");
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_free(r == 0 ? p : NULL));
  ASSERT_OK(mg_shmem_free(q));
  ASSERT_OK(mg_shmem_free(p));
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_comm_destroy(comm));
}

static void timeout(int r) {
  mg_comm_t *comm = make_comm(r, 2);
  if (r == 1) {
    sleep(4); /* never comes to mg_shmem_init_comm */
    mg_comm_destroy(comm);
    return;
  }
  double t0 = (double)time(NULL);
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_shmem_init_comm(comm, MG_UNDEF_INT));
  ASSERT_CONTAINS(mg_last_error(), "rendezvous");
  ASSERT_CONTAINS(mg_last_error(), "1");
  fprintf(stderr, "rank 0: %s\n", mg_last_error());
  ASSERT((double)time(NULL) - t0 < 10);
  int v;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_my_pe(&v)); /* nothing initialised */
  mg_comm_destroy(comm);
}

static void remote(int r) {
  mg_comm_t *comm = make_comm(r, 30);
  if (r == 1) {
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_init_comm(comm, -5));
  } else {
    ASSERT_STATUS(MG_ERR_REMOTE, mg_shmem_init_comm(comm, MG_UNDEF_INT));
    ASSERT_CONTAINS(mg_last_error(), "PE 1 could not start NVSHMEM (MG_ERR_INVALID_ARGUMENT");
    ASSERT_CONTAINS(mg_last_error(), "device -5");
  }
  /* Nothing started: both may still start, together. */
  ASSERT_OK(mg_shmem_init_comm(comm, MG_UNDEF_INT));
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_comm_destroy(comm));
}

static void mpg(int r) {
  mg_comm_t *comm = make_comm(r, 30);
  setenv("NVSHMEM_FAKE_LIMITED_MPG", "1", 1);
  ASSERT_OK(mg_shmem_init_comm(comm, MG_UNDEF_INT));
  mg_shmem_team_t t = 5;
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_shmem_team_split_strided(MG_SHMEM_TEAM_WORLD, 0, 1, 1, &t));
  ASSERT_CONTAINS(mg_last_error(), "limited MPG");
  ASSERT_EQ(t, 5);
  int v;
  ASSERT_OK(mg_shmem_team_n_pes(MG_SHMEM_TEAM_WORLD, &v));
  ASSERT_EQ(v, N);
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_comm_destroy(comm));
}

#define HEAP_N 48

/* Every allocation of a[0..n) is live: its last byte is accepted, two bytes from there refused. */
static void heap_check(unsigned char **a, const size_t *sizes, int n, int peer) {
  unsigned char x[2] = {1, 1};
  for (int i = 0; i < n; i++) {
    ASSERT_OK(mg_shmem_put(a[i] + sizes[i] - 1, x, 1, peer));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_get(x, a[i] + sizes[i] - 1, 2, peer));
  }
}

static void heap(int r) {
  mg_comm_t *comm = make_comm(r, 30);
  ASSERT_OK(mg_shmem_init_comm(comm, MG_UNDEF_INT));
  unsigned char *a[HEAP_N + 16];
  size_t sizes[HEAP_N + 16];
  for (int i = 0; i < HEAP_N; i++) {
    sizes[i] = 100 + 37 * (size_t)i;
    ASSERT_OK(mg_shmem_malloc(sizes[i], (void **)&a[i]));
  }
  heap_check(a, sizes, HEAP_N, 1 - r);
  for (int i = HEAP_N - 1; i >= 0; i -= 2) { /* every other one, from the end */
    ASSERT_OK(mg_shmem_free(a[i]));
    sizes[i] = 0;
  }
  for (int i = 0; i < HEAP_N; i += 6) {
    ASSERT_OK(mg_shmem_free(a[i]));
    sizes[i] = 0;
  }
  int live = 0;
  for (int i = 0; i < HEAP_N; i++) live += sizes[i] > 0;
  for (int i = HEAP_N; i < HEAP_N + 16; i++) { /* small ones, into the holes */
    sizes[i] = 16 + (size_t)i;
    ASSERT_OK(mg_shmem_malloc(sizes[i], (void **)&a[i]));
    live++;
  }
  /* The freed ones whose place was not taken again must still be refused. */
  unsigned char x = 2;
  for (int i = 0; i < HEAP_N; i++) {
    if (sizes[i] > 0) continue;
    int reused = 0;
    for (int j = HEAP_N; j < HEAP_N + 16; j++) reused |= a[j] <= a[i] && a[i] < a[j] + sizes[j];
    if (!reused) ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(a[i], &x, 1, 1 - r));
  }
  for (int i = 0; i < HEAP_N + 16; i++)
    if (sizes[i] > 0) {
      ASSERT_OK(mg_shmem_put(a[i] + sizes[i] - 1, &x, 1, 1 - r));
      ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(a[i] + sizes[i] - 1, &x, 2, 1 - r));
    }
  char want[64];
  snprintf(want, sizeof want, "%d symmetric allocations are live", live);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_finalize());
  ASSERT_CONTAINS(mg_last_error(), want);
  for (int i = 0; i < HEAP_N + 16; i++)
    if (sizes[i] > 0) ASSERT_OK(mg_shmem_free(a[i]));
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_comm_destroy(comm));
}

static mg_comm_t *thread_comms[N];
static mg_status_t thread_status[N];
static char thread_msg[N][1024];

static void *thread_init(void *arg) {
  int r = (int)(intptr_t)arg;
  if (r == 1) usleep(300 * 1000); /* rank 0 is inside init by then */
  thread_status[r] = mg_shmem_init_comm(thread_comms[r], MG_UNDEF_INT);
  mg_last_error_copy(thread_msg[r], sizeof thread_msg[r]);
  return NULL;
}

static void threads(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 2;
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, thread_comms));
  pthread_t t[N];
  for (int r = 0; r < N; r++)
    ASSERT_EQ(pthread_create(&t[r], NULL, thread_init, (void *)(intptr_t)r), 0);
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  ASSERT_EQ(thread_status[1], MG_ERR_INVALID_USAGE);
  ASSERT_CONTAINS(thread_msg[1], "one PE per process");
  ASSERT_EQ(thread_status[0], MG_ERR_TIMED_OUT);
  ASSERT_CONTAINS(thread_msg[0], "rendezvous");
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(thread_comms[r]));
}

static void run_ranks(void (*fn)(int)) {
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
  pid_t pids[N];
  for (int r = 0; r < N; r++) {
    pids[r] = fork();
    ASSERT(pids[r] >= 0);
    if (pids[r] == 0) {
      fn(r);
      _exit(0);
    }
  }
  test_wait_ranks(pids, N);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "checks";
  if (strcmp(mode, "checks") == 0) run_ranks(checks);
  else if (strcmp(mode, "mismatch") == 0) run_ranks(mismatch);
  else if (strcmp(mode, "timeout") == 0) run_ranks(timeout);
  else if (strcmp(mode, "remote") == 0) run_ranks(remote);
  else if (strcmp(mode, "mpg") == 0) run_ranks(mpg);
  else if (strcmp(mode, "threads") == 0) threads();
  else if (strcmp(mode, "heap") == 0) run_ranks(heap);
  else if (strcmp(mode, "initfail") == 0) {
    mg_config_t cfg = MG_CONFIG_INIT;
    cfg.backend = MG_BACKEND_HOST;
    mg_unique_id_t id;
    mg_comm_t *comm = NULL;
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
    ASSERT_OK(mg_comm_init_rank(&cfg, 1, &id, 0, &comm));
    ASSERT_OK(mg__fault_set("nvshmemx_hostlib_init_attr", 1, 7, 1));
    ASSERT_STATUS(MG_ERR_BACKEND, mg_shmem_init_comm(comm, MG_UNDEF_INT));
    ASSERT_CONTAINS(mg_last_error(), "nvshmemx_hostlib_init_attr failed: NVSHMEM returned 7");
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_init_comm(comm, MG_UNDEF_INT));
    ASSERT_CONTAINS(mg_last_error(), "cannot be tried again");
    ASSERT_OK(mg_comm_destroy(comm));
  } else if (strcmp(mode, "env") == 0) {
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_init_env(-1));
    ASSERT_OK(mg_shmem_init_env(MG_UNDEF_INT));
    int v = -1;
    ASSERT_OK(mg_shmem_n_pes(&v));
    ASSERT_EQ(v, 1);
    long *p = NULL;
    ASSERT_OK(mg_shmem_malloc(sizeof(long) * 4, (void **)&p));
    long x = 42, y = 0;
    ASSERT_OK(mg_shmem_put(p + 3, &x, sizeof x, 0));
    ASSERT_OK(mg_shmem_get(&y, p + 3, sizeof y, 0));
    ASSERT_EQ(y, 42);
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(p + 3, &x, sizeof x, 1));
    ASSERT_OK(mg_shmem_free(p));
    ASSERT_OK(mg_shmem_finalize());
  } else {
    FAIL("unknown mode %s", mode);
  }
  printf("shmem fake %s: ok\n", mode);
  return 0;
}
