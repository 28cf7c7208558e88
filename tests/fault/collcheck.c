/*
 * collcheck.c -- the collective check (MGCOMM_CHECK_COLLECTIVES, set by the test's environment):
 * a collective that the ranks call differently is refused on every rank at once, with one
 * message naming every rank's call.
 *
 *   collcheck host threads [case]   3 ranks as threads of one process (mg_comm_init_all)
 *   collcheck host procs [case]     3 ranks as processes (mg_comm_init_rank)
 *     Each case on fresh communicators. match: every collective, and a group, with the same
 *     arguments on every rank, passes and is right. Then rank 1 alone differs in the kind, the
 *     count, the dtype, the op, the root, all_to_allv's counts, or is one collective ahead (it
 *     posted one collective more in a group, which was refused for another mismatch): every rank
 *     gets MG_ERR_INVALID_USAGE within a second (the deadline is 5 s), with the same message,
 *     which names the collective's number, the field, the ranks and what each called; the
 *     communicator stays ready and a matched all_reduce then works (ahead: it is refused again,
 *     the ranks' numbers differing for good). With a case (0 match ... 7 ahead), that one only.
 *   collcheck sim on|off     2 ranks on the simulated NCCL (tests/sim), or
 *   collcheck gpu on|off     on 2 GPUs with the real NCCL (label gpu; exit 77 with fewer): after
 *     a matched all_reduce (NCCL has connected the pair), rank 1 posts an all_reduce of count 0,
 *     which NCCL skips, against rank 0's count 4, which waits for rank 1 on the GPU for ever.
 *     on (MGCOMM_CHECK_COLLECTIVES=1): both calls are refused within a second, with the same
 *       message; then matched calls, and groups over both ranks from one thread (matched, and
 *       mismatched: refused), work; destroy leaves nothing in the simulator (the check's memory
 *       and streams).
 *     off (=0): rank 0's call is enqueued, and its request times out at the deadline (1 s).
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "loader/loader.h"
#include "sim.h"
#include "test.h"

#define N 3
#define MSG 1024

enum { C_MATCH, C_KIND, C_COUNT, C_DTYPE, C_OP, C_ROOT, C_A2AV, C_AHEAD, C_NCASES };
static const char *const case_names[C_NCASES] = {"match", "kind", "count", "dtype",
                                                 "op",    "root", "all_to_allv counts",
                                                 "one collective ahead"};

/* What the message must say, besides "rank 1 called" and "ranks 0,2 called" these. */
typedef struct {
  const char *differ, *others, *rank1;
} expect_t;
static const expect_t expects[C_NCASES] = {
    [C_KIND] = {"they differ in kind)", "all_reduce #0 (float32 x 4, op sum)",
                "broadcast #0 (float32 x 4, root 0)"},
    [C_COUNT] = {"they differ in count)", "all_reduce #0 (float32 x 4, op sum)",
                 "all_reduce #0 (float32 x 8, op sum)"},
    [C_DTYPE] = {"they differ in dtype)", "all_reduce #0 (float32 x 4, op sum)",
                 "all_reduce #0 (int32 x 4, op sum)"},
    [C_OP] = {"they differ in op)", "all_reduce #0 (float32 x 4, op sum)",
              "all_reduce #0 (float32 x 4, op max)"},
    [C_ROOT] = {"they differ in root)", "broadcast #0 (float32 x 4, root 0)",
                "broadcast #0 (float32 x 4, root 2)"},
    [C_AHEAD] = {"they differ in sequence number: rank 1 has called 1 collective more than "
                 "rank 0 on this communicator)",
                 "all_reduce #2 (float32 x 4, op sum)", "all_reduce #3 (float32 x 4, op sum)"},
};

static mg_config_t config(mg_backend_t be, double timeout) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = be;
  cfg.timeout_s = timeout;
  return cfg;
}

/* ---- host: one rank's part of a case ---------------------------------------------------- */

/* A matched all_reduce of r + 1 over the ranks: 1 + 2 + 3. */
static void all_reduce_ok(mg_comm_t *comm, int r) {
  float v[4] = {(float)(r + 1), (float)(r + 1), (float)(r + 1), (float)(r + 1)};
  ASSERT_OK(mg_all_reduce(v, v, 4, MG_FLOAT32, MG_SUM, comm, NULL));
  for (int i = 0; i < 4; i++)
    if (v[i] != 6.0f) FAIL("rank %d: all_reduce gave %g, expected 6", r, (double)v[i]);
}

static void run_match(mg_comm_t *comm, int r) {
  all_reduce_ok(comm, r);
  float b[8], g[N * 2], one[N], sc[N], rc[N];
  for (int i = 0; i < 8; i++) b[i] = (float)(10 * r + i);
  ASSERT_OK(mg_broadcast(b, b, 8, MG_FLOAT32, 2, comm, NULL));
  ASSERT(b[7] == 27.0f);
  float mx = (float)r, out = -1;
  ASSERT_OK(mg_reduce(&mx, &out, 1, MG_FLOAT32, MG_MAX, 1, comm, NULL));
  if (r == 1) ASSERT(out == 2.0f);
  float two[2] = {(float)r, (float)r};
  ASSERT_OK(mg_all_gather(two, g, 2, MG_FLOAT32, comm, NULL));
  for (int q = 0; q < N; q++) ASSERT(g[2 * q] == (float)q && g[2 * q + 1] == (float)q);
  for (int i = 0; i < N * 2; i++) g[i] = 1;
  ASSERT_OK(mg_reduce_scatter(g, two, 2, MG_FLOAT32, MG_SUM, comm, NULL));
  ASSERT(two[0] == (float)N);
  for (int q = 0; q < N; q++) sc[q] = (float)(10 * r + q);
  ASSERT_OK(mg_all_to_all(sc, rc, 1, MG_FLOAT32, comm, NULL));
  for (int q = 0; q < N; q++) ASSERT(rc[q] == (float)(10 * q + r));
  const size_t cnt[N] = {1, 1, 1}, dis[N] = {0, 1, 2};
  ASSERT_OK(mg_all_to_allv(sc, cnt, dis, rc, cnt, dis, MG_FLOAT32, comm, NULL));
  for (int q = 0; q < N; q++) ASSERT(rc[q] == (float)(10 * q + r));
  float mine = (float)r;
  ASSERT_OK(mg_gather(&mine, one, 1, MG_FLOAT32, 0, comm, NULL));
  if (r == 0) for (int q = 0; q < N; q++) ASSERT(one[q] == (float)q);
  ASSERT_OK(mg_scatter(one, &mine, 1, MG_FLOAT32, 0, comm, NULL));
  ASSERT(mine == (float)r);
  /* A group of two collectives: each checked. */
  float a[4] = {1, 1, 1, 1}, c[4] = {(float)r, 0, 0, 0};
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_all_reduce(a, a, 4, MG_FLOAT32, MG_SUM, comm, NULL));
  ASSERT_OK(mg_broadcast(c, c, 4, MG_FLOAT32, 1, comm, NULL));
  ASSERT_OK(mg_group_end());
  ASSERT(a[0] == (float)N && c[0] == 1.0f);
}

/* Rank r's call of a mismatched case: rank 1 differs. Its status and message. */
static mg_status_t run_mismatch(int c, mg_comm_t *comm, int r, char *msg) {
  float f[8] = {0};
  int32_t i32[4] = {0};
  mg_status_t st = MG_OK;
  switch (c) {
    case C_KIND:
      st = r == 1 ? mg_broadcast(f, f, 4, MG_FLOAT32, 0, comm, NULL)
                  : mg_all_reduce(f, f, 4, MG_FLOAT32, MG_SUM, comm, NULL);
      break;
    case C_COUNT:
      st = mg_all_reduce(f, f, r == 1 ? 8 : 4, MG_FLOAT32, MG_SUM, comm, NULL);
      break;
    case C_DTYPE:
      st = r == 1 ? mg_all_reduce(i32, i32, 4, MG_INT32, MG_SUM, comm, NULL)
                  : mg_all_reduce(f, f, 4, MG_FLOAT32, MG_SUM, comm, NULL);
      break;
    case C_OP:
      st = mg_all_reduce(f, f, 4, MG_FLOAT32, r == 1 ? MG_MAX : MG_SUM, comm, NULL);
      break;
    case C_ROOT:
      st = mg_broadcast(f, f, 4, MG_FLOAT32, r == 1 ? 2 : 0, comm, NULL);
      break;
    case C_A2AV: { /* rank 1 sends 2 elements to rank 0, which expects 1 */
      size_t scnt[N] = {1, 1, 1}, rcnt[N] = {1, 1, 1}, dis[N] = {0, 2, 4};
      if (r == 1) scnt[0] = 2;
      float g[8];
      st = mg_all_to_allv(f, scnt, dis, g, rcnt, dis, MG_FLOAT32, comm, NULL);
      break;
    }
    case C_AHEAD: {
      /* Ranks 0 and 2 post #0 and #1 in a group, rank 1 #0, #1 and #2; #1's counts differ, so
       * every rank refuses its group, having numbered 2 collectives (rank 1: 3). */
      ASSERT_OK(mg_group_begin());
      ASSERT_OK(mg_all_reduce(f, f, 4, MG_FLOAT32, MG_SUM, comm, NULL));
      ASSERT_OK(mg_all_reduce(f, f, r == 1 ? 4 : 8, MG_FLOAT32, MG_SUM, comm, NULL));
      if (r == 1) ASSERT_OK(mg_all_reduce(f, f, 4, MG_FLOAT32, MG_SUM, comm, NULL));
      ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_group_end());
      ASSERT_CONTAINS(mg_last_error(), "they differ in count)");
      st = mg_all_reduce(f, f, 4, MG_FLOAT32, MG_SUM, comm, NULL);
      break;
    }
    default:
      FAIL("case %d is not a mismatch", c);
  }
  snprintf(msg, MSG, "%s", st == MG_OK ? "" : mg_last_error());
  return st;
}

/* One rank's whole part of case c on comm; its message of the refused call in msg. */
static void run_rank(int c, mg_comm_t *comm, int r, char *msg) {
  if (c == C_MATCH) {
    run_match(comm, r);
    return;
  }
  const double t0 = mg__now();
  mg_status_t st = run_mismatch(c, comm, r, msg);
  const double dt = mg__now() - t0;
  if (st != MG_ERR_INVALID_USAGE)
    FAIL("case %s, rank %d: %s, expected MG_ERR_INVALID_USAGE: %s", case_names[c], r,
         mg_status_name(st), msg);
  ASSERT_LT_F(dt, 1.0); /* at once: the deadline is 5 s */
  ASSERT_CONTAINS(msg, "MGCOMM_CHECK_COLLECTIVES=1");
  ASSERT_CONTAINS(msg, "nothing of it ran on any rank");
  if (c == C_A2AV) {
    ASSERT_CONTAINS(msg, "every rank called all_to_allv #0 (float32)");
    ASSERT_CONTAINS(msg, "counts do not pair up");
  } else {
    const expect_t *e = &expects[c];
    char want[256];
    ASSERT_CONTAINS(msg, e->differ);
    snprintf(want, sizeof want, "ranks 0,2 called %s", e->others);
    ASSERT_CONTAINS(msg, want);
    snprintf(want, sizeof want, "rank 1 called %s", e->rank1);
    ASSERT_CONTAINS(msg, want);
  }
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comm, &state));
  ASSERT_EQ(state, MG_COMM_READY);
  if (c != C_AHEAD) {
    all_reduce_ok(comm, r);
  } else {
    float f[4] = {0};
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(f, f, 4, MG_FLOAT32, MG_SUM, comm, NULL));
    ASSERT_CONTAINS(mg_last_error(), "all_reduce #4 (float32 x 4, op sum)");
  }
}

/* Every rank's message must be the same: the verdict is made of what all of them sent. */
static void same_messages(int c, char (*msgs)[MSG]) {
  if (c == C_MATCH) return;
  printf("  %s: %s\n", case_names[c], msgs[0]);
  for (int r = 1; r < N; r++)
    if (strcmp(msgs[r], msgs[0]) != 0)
      FAIL("case %s: rank %d's message differs from rank 0's:\n  %s\n  %s", case_names[c], r,
           msgs[r], msgs[0]);
}

/* ---- host: threads and processes ---------------------------------------------------------- */

typedef struct {
  int c, r;
  mg_comm_t *comm;
  char *msg;
} rank_arg_t;

static void *rank_main(void *p) {
  rank_arg_t *a = p;
  run_rank(a->c, a->comm, a->r, a->msg);
  return NULL;
}

static int only = -1; /* the one case to run, or -1: all */

static void host_threads(void) {
  static char msgs[N][MSG];
  for (int c = 0; c < C_NCASES; c++) {
    if (only >= 0 && c != only) continue;
    mg_comm_t *comms[N];
    mg_config_t cfg = config(MG_BACKEND_HOST, 5);
    ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
    pthread_t th[N];
    rank_arg_t args[N];
    for (int r = 0; r < N; r++) {
      args[r] = (rank_arg_t){c, r, comms[r], msgs[r]};
      ASSERT_EQ(pthread_create(&th[r], NULL, rank_main, &args[r]), 0);
    }
    for (int r = 0; r < N; r++) pthread_join(th[r], NULL);
    same_messages(c, msgs);
    for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  }
}

static void host_procs(void) {
  char(*msgs)[MSG] = mmap(NULL, sizeof(char[N][MSG]), PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT(msgs != MAP_FAILED);
  for (int c = 0; c < C_NCASES; c++) {
    if (only >= 0 && c != only) continue;
    mg_unique_id_t id;
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
    pid_t pids[N];
    for (int r = 0; r < N; r++) {
      fflush(stdout);
      pids[r] = fork();
      ASSERT(pids[r] >= 0);
      if (pids[r] != 0) continue;
      mg_config_t cfg = config(MG_BACKEND_HOST, 5);
      mg_comm_t *comm;
      ASSERT_OK(mg_comm_init_rank(&cfg, N, &id, r, &comm));
      run_rank(c, comm, r, msgs[r]);
      ASSERT_OK(mg_comm_destroy(comm));
      _exit(0);
    }
    test_wait_ranks(pids, N);
    same_messages(c, msgs);
  }
  munmap(msgs, sizeof(char[N][MSG]));
}

/* ---- NCCL: the simulated one, or real GPUs --------------------------------------------------- */

#define COUNT 4
static mg_comm_t *scomms[2];
static void *sbuf[2];

typedef struct {
  int r;
  size_t count;
  mg_status_t st;
  double dt;
  char msg[MSG];
} nc_call_t;

static void *nc_all_reduce(void *p) {
  nc_call_t *c = p;
  const double t0 = mg__now();
  c->st = mg_all_reduce(sbuf[c->r], sbuf[c->r], c->count, MG_FLOAT32, MG_SUM, scomms[c->r], NULL);
  c->dt = mg__now() - t0;
  snprintf(c->msg, sizeof c->msg, "%s", c->st == MG_OK ? "" : mg_last_error());
  return NULL;
}

/* rank r's all_reduce of counts[r], each from its own thread. */
static void nc_both(nc_call_t *c, const size_t *counts) {
  pthread_t th[2];
  for (int r = 0; r < 2; r++) {
    c[r] = (nc_call_t){.r = r, .count = counts[r]};
    ASSERT_EQ(pthread_create(&th[r], NULL, nc_all_reduce, &c[r]), 0);
  }
  for (int r = 0; r < 2; r++) pthread_join(th[r], NULL);
}

/* Waits for everything posted on rank r's default stream. */
static void nc_sync(int r) {
  mg_request_t *req = NULL;
  ASSERT_OK(mg_record(scomms[r], NULL, &req));
  ASSERT_OK(mg_request_wait(req, 0));
  ASSERT_OK(mg_request_free(req));
}

static void nc_set(float v) {
  float h[COUNT];
  for (int i = 0; i < COUNT; i++) h[i] = v;
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_memcpy(scomms[r], sbuf[r], h, sizeof h));
}

static void nc_expect(float v) {
  for (int r = 0; r < 2; r++) {
    float h[COUNT];
    nc_sync(r);
    ASSERT_OK(mg_memcpy(scomms[r], h, sbuf[r], sizeof h));
    if (h[0] != v || h[COUNT - 1] != v)
      FAIL("rank %d: %g, expected %g", r, (double)h[0], (double)v);
  }
}

static void nc_make(double timeout) {
  mg_config_t cfg = config(MG_BACKEND_NCCL, timeout);
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, scomms));
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_mem_alloc(scomms[r], COUNT * sizeof(float), &sbuf[r]));
}

static void nc_release(mgsim_control_fn sim) {
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_mem_free(sbuf[r]));
    ASSERT_OK(mg_comm_destroy(scomms[r]));
  }
  if (sim == NULL) return; /* real GPUs */
  for (int r = 0; r < 2; r++) {
    ASSERT_EQ(sim("inside", r), 0);
    ASSERT_EQ(sim("comms", r), 0);
  }
  ASSERT_EQ(sim("allocs", 0), 0);
  ASSERT_EQ(sim("streams", 0), 0);
}

static void nc_on(mgsim_control_fn sim) {
  nc_make(10);
  nc_set(1);
  nc_call_t c[2];
  nc_both(c, (const size_t[2]){COUNT, COUNT}); /* matched: passes */
  for (int r = 0; r < 2; r++) ASSERT_OK(c[r].st);
  nc_expect(2);
  nc_both(c, (const size_t[2]){COUNT, 0}); /* NCCL would leave rank 0 waiting for ever */
  for (int r = 0; r < 2; r++) {
    printf("  rank %d: %s after %.3f s: %s\n", r, mg_status_name(c[r].st), c[r].dt, c[r].msg);
    ASSERT_EQ(c[r].st, MG_ERR_INVALID_USAGE);
    ASSERT_LT_F(c[r].dt, 1.0);
    ASSERT_CONTAINS(c[r].msg, "mismatched collectives at #1 on a communicator of 2 ranks "
                    "(MGCOMM_CHECK_COLLECTIVES=1; they differ in count): rank 0 called all_reduce "
                    "#1 (float32 x 4, op sum); rank 1 called all_reduce #1 (float32 x 0, op sum)");
  }
  ASSERT_STR_EQ(c[0].msg, c[1].msg);
  nc_both(c, (const size_t[2]){COUNT, COUNT}); /* the communicators are still ready */
  for (int r = 0; r < 2; r++) ASSERT_OK(c[r].st);
  nc_expect(4);
  /* Both ranks from this thread, in one group: their exchanges are one NCCL group too. */
  ASSERT_OK(mg_group_begin());
  for (int r = 0; r < 2; r++)
    ASSERT_OK(mg_all_reduce(sbuf[r], sbuf[r], COUNT, MG_FLOAT32, MG_SUM, scomms[r], NULL));
  ASSERT_OK(mg_group_end());
  nc_expect(8);
  ASSERT_OK(mg_group_begin());
  for (int r = 0; r < 2; r++)
    ASSERT_OK(mg_all_reduce(sbuf[r], sbuf[r], r == 0 ? COUNT : 2, MG_FLOAT32, MG_SUM, scomms[r],
                            NULL));
  const double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_group_end());
  ASSERT_LT_F(mg__now() - t0, 1.0);
  ASSERT_CONTAINS(mg_last_error(), "rank 1 called all_reduce #4 (float32 x 2, op sum)");
  nc_expect(8); /* nothing of the refused group ran */
  nc_release(sim);
}

static void nc_off(mgsim_control_fn sim) {
  const double T = 1;
  nc_make(T);
  /* The simulator's aborts stop their work only after 300 ms, as a real one's kernels see it
   * late: nc_release's free comes within that time unless mg_mem_free waits for the aborts. */
  if (sim != NULL) ASSERT_EQ(sim("abort_delay_ms", 300), 0);
  nc_call_t c[2];
  /* Matched first: a first call that a peer withholds would wait inside NCCL's connection of
   * the pair, which nothing bounds before NCCL 2.28.7 (docs/nccl.md). */
  nc_both(c, (const size_t[2]){COUNT, COUNT});
  for (int r = 0; r < 2; r++) ASSERT_OK(c[r].st);
  nc_both(c, (const size_t[2]){COUNT, 0});
  for (int r = 0; r < 2; r++) ASSERT_OK(c[r].st); /* enqueued: NCCL checks nothing */
  mg_request_t *req = NULL;
  ASSERT_OK(mg_record(scomms[0], NULL, &req));
  const double t0 = mg__now();
  mg_status_t st = mg_request_wait(req, 0);
  const double dt = mg__now() - t0;
  printf("  rank 0's request: %s after %.3f s: %s\n", mg_status_name(st), dt,
         st == MG_OK ? "" : mg_last_error());
  ASSERT_EQ(st, MG_ERR_TIMED_OUT);
  ASSERT_IN_F(dt, 0.5 * T, T + 1.5);
  ASSERT_OK(mg_request_free(req));
  ASSERT_OK(mg_comm_abort(scomms[1]));
  nc_release(sim);
}

/* where: "sim" (the simulated driver and NCCL, which the test's environment names) or "gpu". */
static void run_nccl(const char *where, const char *mode) {
  const int on_sim = strcmp(where, "sim") == 0;
  int n = 0;
  if (mg_device_count(&n) != MG_OK || n < 2)
    SKIP("%s", on_sim ? "the simulated driver is not loaded" : "needs 2 GPUs");
  if (mg__load_nccl() != MG_OK) SKIP("NCCL is not loaded: %s", mg_last_error());
  mgsim_control_fn sim = NULL;
  if (on_sim) {
    sim = mgsim_control_find(getenv("MGCOMM_NCCL_LIBRARY"));
    ASSERT(sim != NULL);
  }
  if (strcmp(mode, "on") == 0) nc_on(sim);
  else if (strcmp(mode, "off") == 0) nc_off(sim);
  else FAIL("unknown mode %s", mode);
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 4)
    FAIL("usage: %s host threads|procs [case], or sim|gpu on|off", argv[0]);
  if (argc == 4) only = atoi(argv[3]);
  if (strcmp(argv[1], "host") == 0 && strcmp(argv[2], "threads") == 0) host_threads();
  else if (strcmp(argv[1], "host") == 0 && strcmp(argv[2], "procs") == 0) host_procs();
  else if (strcmp(argv[1], "sim") == 0 || strcmp(argv[1], "gpu") == 0) run_nccl(argv[1], argv[2]);
  else FAIL("unknown test %s %s", argv[1], argv[2]);
  printf("collcheck %s %s: ok\n", argv[1], argv[2]);
  return 0;
}
