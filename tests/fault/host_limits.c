/*
 * host_limits.c -- a host communicator too large to make is refused at once, with a message that
 * names the limit or the parameters that size its segment, and nothing is left behind.
 * Run with MGCOMM_HOST_SLOT_BYTES=1073741824 (1 GiB staging slots: 2 per rank).
 *
 *   host_limits ranks | huge | rlimit_rank | rlimit_all | rlimit_split
 *
 * ranks         65536 ranks (init_rank, init_all): MG_ERR_INVALID_ARGUMENT, "at most 65535".
 * huge          65535 ranks, rank 0 alone: the segment (128 TiB of slots) cannot be mapped:
 *               MG_ERR_OUT_OF_MEMORY naming MGCOMM_HOST_SLOT_BYTES, within a second.
 * rlimit_rank   4 ranks (an 8 GiB segment) under a 4 GiB address-space limit (RLIMIT_AS): likewise.
 * rlimit_all    mg_comm_init_all of 2 ranks (4 GiB, mapped once per rank) under a 6 GiB limit: the
 *               second rank's mapping fails, likewise; no communicator is returned.
 * rlimit_split  the two ranks of an init_all communicator split it into 1-rank children (2 GiB
 *               each) under a limit with room for one: the other split fails likewise, and the
 *               parent's all_reduce still works.
 * Afterwards this process holds nothing of a segment (no socket or memfd descriptor, no mapping).
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>

#include "backend/host/host.h"
#include "base/clock.h"
#include "test.h"

static mg_config_t config(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 5;
  return cfg;
}

/* What this process holds of host segments: descriptors of sockets or of a segment's memfd, and
 * mappings of one (the test opens no other socket). Other tests' segments are not counted. */
static int held(void) {
  int n = 0;
  char path[300], link[256], line[512];
  DIR *d = opendir("/proc/self/fd");
  ASSERT(d != NULL);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(path, link, sizeof link - 1);
    if (len <= 0) continue;
    link[len] = '\0';
    n += strncmp(link, "socket:", 7) == 0 || strstr(link, "memfd:mgcomm-") != NULL;
  }
  closedir(d);
  FILE *f = fopen("/proc/self/maps", "r");
  ASSERT(f != NULL);
  while (fgets(line, sizeof line, f) != NULL) n += strstr(line, "memfd:mgcomm-") != NULL;
  fclose(f);
  return n;
}

/* AddressSanitizer reserves terabytes of shadow address space: under an address-space limit it
 * cannot allocate at all, so these cases run only in builds without it. */
#if defined(__SANITIZE_ADDRESS__)
#define MG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MG_TEST_ASAN 1
#endif
#endif

static void limit_as(double gib) {
#ifdef MG_TEST_ASAN
  (void)gib;
  printf("SKIP: RLIMIT_AS cannot be set under AddressSanitizer (it reserves terabytes)\n");
  exit(77);
#endif
  struct rlimit rl;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &rl), 0);
  rl.rlim_cur = (rlim_t)(gib * (double)(1ull << 30));
  ASSERT_EQ(setrlimit(RLIMIT_AS, &rl), 0);
}

static void expect_too_big(mg_status_t st, double t0) {
  ASSERT_EQ(st, MG_ERR_OUT_OF_MEMORY);
  ASSERT_CONTAINS(mg_last_error(), "more than this process can map");
  ASSERT_CONTAINS(mg_last_error(), "staging slots of 1073741824 bytes (MGCOMM_HOST_SLOT_BYTES)");
  ASSERT_CONTAINS(mg_last_error(), "(MGCOMM_HOST_P2P_BYTES)");
  ASSERT_LT_F(mg__now() - t0, 1.0);
  printf("refused: %s\n", mg_last_error());
}

static void init_one(int nranks, mg_comm_t **comm, double t0) {
  mg_unique_id_t id;
  mg_config_t cfg = config();
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  mg_status_t st = mg_comm_init_rank(&cfg, nranks, &id, 0, comm);
  ASSERT(*comm == NULL);
  expect_too_big(st, t0);
}

/* rlimit_split: one thread per rank of a 2-rank communicator made before the limit. */
static mg_comm_t *parent[2], *child[2];
static mg_status_t split_st[2];
static pthread_barrier_t barrier;
static void *split_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  pthread_barrier_wait(&barrier); /* after the limit */
  split_st[r] = mg_comm_split(parent[r], r, 0, NULL, &child[r]);
  if (split_st[r] != MG_OK) printf("rank %d: %s\n", r, mg_last_error());
  pthread_barrier_wait(&barrier);
  int64_t v = r + 1, out = 0;
  ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT64, MG_SUM, parent[r], NULL));
  ASSERT_EQ(out, 3);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: host_limits ranks|huge|rlimit_rank|rlimit_all|rlimit_split");
  const char *t = argv[1];
  const char *slot = getenv("MGCOMM_HOST_SLOT_BYTES");
  if (slot == NULL || strcmp(slot, "1073741824") != 0)
    FAIL("run with MGCOMM_HOST_SLOT_BYTES=1073741824");
  const double t0 = mg__now();
  mg_comm_t *comm = NULL;
  if (strcmp(t, "ranks") == 0) {
    mg_unique_id_t id;
    mg_config_t cfg = config();
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
    /* init_all first: the core makes its 65536 communicators before the backend refuses, and
     * after a 1 MiB block was freed, malloc would make them on the heap, 20 times slower. */
    mg_comm_t **many = calloc(65536, sizeof *many);
    ASSERT(many != NULL);
    mg_status_t st = mg_comm_init_all(&cfg, 65536, NULL, many);
    if (st == MG_ERR_OUT_OF_MEMORY) { /* the core's 65536 communicators come first: 64 GiB */
      printf("init_all: refused before the backend: %s\n", mg_last_error());
    } else {
      if (st != MG_ERR_INVALID_ARGUMENT) FAIL("init_all: %s: %s", mg_status_name(st), mg_last_error());
      ASSERT_CONTAINS(mg_last_error(), "the host backend takes at most 65535 ranks, not 65536");
    }
    for (int i = 0; i < 65536; i++) ASSERT(many[i] == NULL);
    free(many);
    ASSERT_EQ(mg_comm_init_rank(&cfg, 65536, &id, 0, &comm), MG_ERR_INVALID_ARGUMENT);
    ASSERT_CONTAINS(mg_last_error(), "the host backend takes at most 65535 ranks, not 65536");
  } else if (strcmp(t, "huge") == 0) {
    init_one(65535, &comm, t0);
  } else if (strcmp(t, "rlimit_rank") == 0) {
    limit_as(4);
    init_one(4, &comm, t0);
  } else if (strcmp(t, "rlimit_all") == 0) {
    limit_as(6);
    mg_comm_t *comms[2] = {NULL, NULL};
    mg_config_t cfg = config();
    mg_status_t st = mg_comm_init_all(&cfg, 2, NULL, comms);
    ASSERT(comms[0] == NULL && comms[1] == NULL);
    expect_too_big(st, t0);
    ASSERT_CONTAINS(mg_last_error(), "attaching rank 1 to");
  } else if (strcmp(t, "rlimit_split") == 0) {
    mg_config_t cfg = config();
    ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, parent));
    limit_as(11); /* the parent's two 4 GiB mappings and one 2 GiB child, not two */
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_t th[2];
    for (int r = 0; r < 2; r++) pthread_create(&th[r], NULL, split_thread, (void *)(intptr_t)r);
    for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
    ASSERT_EQ((split_st[0] == MG_OK) + (split_st[1] == MG_OK), 1);
    for (int r = 0; r < 2; r++) {
      if (split_st[r] == MG_OK) continue;
      ASSERT_EQ(split_st[r], MG_ERR_OUT_OF_MEMORY);
      ASSERT(child[r] == NULL);
    }
    for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(child[r]));
    for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(parent[r]));
  } else {
    FAIL("unknown case %s", t);
  }
  ASSERT(comm == NULL);
  ASSERT_EQ(held(), 0);
  printf("%s: ok\n", t);
  return 0;
}
