/*
 * host_agree.c -- on the host backend the ranks of an operation end it the same way, and every
 * argument that must agree between them is compared.
 *
 *   host_agree late_threads | late_procs | stopped_inside | abort | p2p_threads | p2p_procs |
 *              p2p_abort | mismatch_threads | mismatch_procs | check_one_rank | premul_scalars
 *
 * Every receive buffer starts filled with a sentinel; "untouched" means it still is.
 *
 * late_threads / late_procs: for each path of the transport (mails, one-step, two-phase,
 *   pipelined, direct; rooted and not), ranks 0 and 1 of 3 time out of collective #1 because rank
 *   2 is late: a thread that waits until they have returned, or a process stopped (SIGSTOP)
 *   until then. Ranks 0 and 1: MG_ERR_TIMED_OUT naming #1. Rank 2, whose peers' inputs are all
 *   posted: MG_ERR_REMOTE naming #1 and the rank that timed out, never MG_OK. No buffer touched.
 * stopped_inside: process rank 2 is stopped inside all_reduce #1 (posted, waiting for rank 1);
 *   rank 0 times out; rank 1 arrives late and rank 2 is continued: neither returns MG_OK, both
 *   name #1, and no buffer is touched.
 * abort: another thread aborts rank 0 while ranks 0 and 1 wait in #1 for rank 2: rank 0 gets
 *   MG_ERR_ABORTED, rank 1 MG_ERR_REMOTE "rank 0 aborted" at once (not at its deadline), and
 *   rank 2, arriving afterwards with every input posted, MG_ERR_REMOTE "rank 0 aborted".
 * p2p_threads / p2p_procs: a receive times out before its sender comes (held back, or stopped):
 *   the send, though its message fits in the ring, fails with MG_ERR_REMOTE naming the receiver;
 *   a send larger than the ring times out before its receiver comes: the receive fails with
 *   MG_ERR_REMOTE naming the sender and leaves its buffer untouched (part of the message is in
 *   the ring).
 * p2p_abort: a sender blocked on a full ring is aborted from another thread: MG_ERR_ABORTED; the
 *   receive that comes afterwards fails with MG_ERR_REMOTE "rank 0 aborted", buffer untouched.
 * mismatch_threads / mismatch_procs: each argument that must agree, alone, on each collective
 *   that has it (root; count and dtype where a rank does not read the others; count 0; a count
 *   small enough for the mails against one that is not; PreMulSum against sum; each pair's
 *   all_to_allv counts): every rank gets MG_ERR_INVALID_USAGE naming #0, the ranks and what each
 *   passed, and no buffer is touched.
 * check_one_rank: process rank 0 alone has MGCOMM_CHECK_COLLECTIVES=1, so its check's exchange
 *   meets the others' all_reduce: every rank refuses it, and rank 0's message calls its side
 *   the check's exchange (the number the exchange carries, not "#0").
 * premul_scalars: PreMulSum with a different scalar on every rank (and both residences):
 *   all_reduce, reduce and reduce_scatter on every path give sum over r of s_r * x_r, as NCCL.
 *
 * The registration (host.cmake) shrinks the transport's thresholds so that every path is taken
 * with small buffers: slots of 4 KiB, one-step reductions up to 1 KiB, direct copies from 64 KiB
 * per rank, rings of 4 KiB.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "base/clock.h"
#include "progress_wait.h"
#include "test.h"

#define N 3
#define SENTINEL 0xa5
#define TIMEOUT 0.5 /* seconds: the deadline that the late ranks miss */

static mg_config_t config(double timeout) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout;
  return cfg;
}

static void assert_untouched(const void *buf, size_t bytes, int rank, const char *what) {
  const unsigned char *p = buf;
  for (size_t i = 0; i < bytes; i++)
    if (p[i] != SENTINEL)
      FAIL("%s: rank %d's receive buffer was written at byte %zu of %zu (0x%02x)", what, rank, i,
           bytes, p[i]);
}

/* ---- one collective, as every test calls it --------------------------------------------------- */

/* A rank's arguments for a collective. */
typedef struct {
  mg__opkind_t kind;
  size_t count;       /* elements (all_to_allv: per peer, unless sc/rc say otherwise) */
  int root;
  mg_dtype_t dtype;
  mg_op_t op;
  const size_t *sc, *rc; /* all_to_allv: this rank's counts (NULL: count for every peer) */
} call_t;

/* Elements of the largest buffer a call may use. */
#define MAX_EL (N * 8192)

static mg_status_t call(const call_t *c, mg_comm_t *comm, const void *send, void *recv) {
  switch (c->kind) {
    case MG_OPK_ALL_REDUCE: return mg_all_reduce(send, recv, c->count, c->dtype, c->op, comm, NULL);
    case MG_OPK_BROADCAST: return mg_broadcast(send, recv, c->count, c->dtype, c->root, comm, NULL);
    case MG_OPK_REDUCE:
      return mg_reduce(send, recv, c->count, c->dtype, c->op, c->root, comm, NULL);
    case MG_OPK_ALL_GATHER: return mg_all_gather(send, recv, c->count, c->dtype, comm, NULL);
    case MG_OPK_REDUCE_SCATTER:
      return mg_reduce_scatter(send, recv, c->count, c->dtype, c->op, comm, NULL);
    case MG_OPK_ALL_TO_ALL: return mg_all_to_all(send, recv, c->count, c->dtype, comm, NULL);
    case MG_OPK_GATHER: return mg_gather(send, recv, c->count, c->dtype, c->root, comm, NULL);
    case MG_OPK_SCATTER: return mg_scatter(send, recv, c->count, c->dtype, c->root, comm, NULL);
    case MG_OPK_ALL_TO_ALLV: {
      size_t sc[N], sd[N], rc[N], rd[N];
      for (int p = 0; p < N; p++) {
        sc[p] = c->sc ? c->sc[p] : c->count;
        rc[p] = c->rc ? c->rc[p] : c->count;
        sd[p] = rd[p] = (size_t)p * 8192;
      }
      return mg_all_to_allv(send, sc, sd, recv, rc, rd, c->dtype, comm, NULL);
    }
    default: FAIL("kind %d", (int)c->kind);
  }
}

/* Buffers of one rank: send filled with its values, recv with the sentinel. */
typedef struct {
  int64_t send[MAX_EL];
  int64_t recv[MAX_EL];
} bufs_t;

static void fill(bufs_t *b, int rank) {
  for (size_t i = 0; i < MAX_EL; i++) b->send[i] = (int64_t)(rank * 1000003 + (int)i);
  memset(b->recv, SENTINEL, sizeof b->recv);
}

/* Every rank synchronises on #0, so that #1 starts together on the ranks that are not late. */
static void sync0(mg_comm_t *comm) {
  int64_t v = 1, all[N];
  ASSERT_OK(mg_all_gather(&v, all, 1, MG_INT64, comm, NULL));
}

/* ---- late_threads, late_procs ------------------------------------------------------------------- */

typedef struct {
  const char *name;
  call_t c;
} acase_t;

/* Every path of the transport with the thresholds of host.cmake: mails (<= 48 bytes per rank),
 * one-step (<= 1 KiB), two-phase and pipelined (several 4 KiB slots), direct (>= 64 KiB). */
static const acase_t late_cases[] = {
    {"all_reduce in the mails", {MG_OPK_ALL_REDUCE, 4, -1, MG_INT64, MG_SUM, NULL, NULL}},
    {"one-step all_reduce", {MG_OPK_ALL_REDUCE, 64, -1, MG_INT64, MG_SUM, NULL, NULL}},
    {"two-phase all_reduce", {MG_OPK_ALL_REDUCE, 2048, -1, MG_INT64, MG_SUM, NULL, NULL}},
    {"broadcast in the mails, from the late rank",
     {MG_OPK_BROADCAST, 4, 2, MG_INT64, MG_SUM, NULL, NULL}},
    {"pipelined broadcast from rank 0", {MG_OPK_BROADCAST, 2048, 0, MG_INT64, MG_SUM, NULL, NULL}},
    {"two-phase reduce to the late rank", {MG_OPK_REDUCE, 2048, 2, MG_INT64, MG_SUM, NULL, NULL}},
    {"one-step reduce to rank 0", {MG_OPK_REDUCE, 64, 0, MG_INT64, MG_SUM, NULL, NULL}},
    {"pipelined all_to_allv", {MG_OPK_ALL_TO_ALLV, 1024, -1, MG_INT64, MG_SUM, NULL, NULL}},
    {"pipelined scatter from rank 1", {MG_OPK_SCATTER, 2048, 1, MG_INT64, MG_SUM, NULL, NULL}},
    {"reduce_scatter", {MG_OPK_REDUCE_SCATTER, 1024, -1, MG_INT64, MG_SUM, NULL, NULL}},
    {"direct all_gather", {MG_OPK_ALL_GATHER, 8192, -1, MG_INT64, MG_SUM, NULL, NULL}},
    {"direct gather to rank 0", {MG_OPK_GATHER, 8192, 0, MG_INT64, MG_SUM, NULL, NULL}},
};
#define N_LATE (sizeof late_cases / sizeof late_cases[0])
/* Processes may not read each other's memory (ptrace rules): the direct cases are the threads'. */
#define N_LATE_PROCS (N_LATE - 2)

/* What ranks 0 and 1 must see: their deadline passed in #1, and nothing came out. */
static void check_timed_out(const acase_t *a, mg_status_t st, int r, const bufs_t *b) {
  if (st != MG_ERR_TIMED_OUT)
    FAIL("%s: rank %d: %s, expected MG_ERR_TIMED_OUT: %s", a->name, r, mg_status_name(st),
         mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), " #1 (");
  assert_untouched(b->recv, sizeof b->recv, r, a->name);
}

/* What the late rank must see: #1 failed elsewhere first, by a timeout; nothing came out. */
static void check_late(const acase_t *a, mg_status_t st, const bufs_t *b) {
  if (st != MG_ERR_REMOTE)
    FAIL("%s: the late rank: %s, expected MG_ERR_REMOTE: %s", a->name, mg_status_name(st),
         mg_last_error());
  const char *m = mg_last_error();
  ASSERT_CONTAINS(m, " timed out during ");
  ASSERT_CONTAINS(m, " #1 (");
  ASSERT_CONTAINS(m, "(it failed on rank ");
  ASSERT_CONTAINS(m, "first, with MG_ERR_TIMED_OUT)");
  assert_untouched(b->recv, sizeof b->recv, 2, a->name);
}

static mg_comm_t *comms[N];
static bufs_t bufs[N];
static const acase_t *cur;
static atomic_int returned; /* ranks 0 and 1 that have returned from #1 */

static void *late_thread(void *arg) {
  const int r = (int)(intptr_t)arg;
  sync0(comms[r]);
  if (r == 2) { /* held back until the others gave up */
    const double t0 = mg__now();
    while (atomic_load(&returned) < 2) {
      ASSERT_LT_F(mg__now() - t0, 10.0);
      usleep(1000);
    }
    check_late(cur, call(&cur->c, comms[r], bufs[r].send, bufs[r].recv), &bufs[r]);
  } else {
    check_timed_out(cur, call(&cur->c, comms[r], bufs[r].send, bufs[r].recv), r, &bufs[r]);
    atomic_fetch_add(&returned, 1);
  }
  return NULL;
}

static void test_late_threads(void) {
  mg_config_t cfg = config(TIMEOUT);
  for (size_t i = 0; i < N_LATE; i++) {
    cur = &late_cases[i];
    atomic_store(&returned, 0);
    ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
    for (int r = 0; r < N; r++) fill(&bufs[r], r);
    pthread_t t[N];
    for (int r = 0; r < N; r++) pthread_create(&t[r], NULL, late_thread, (void *)(intptr_t)r);
    for (int r = 0; r < N; r++) pthread_join(t[r], NULL);
    for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
    printf("  %s: ok\n", cur->name);
  }
}

/* Forked ranks report to the parent through one pipe and wait for its word on their own. */
static int up[2], down[N][2];

static void tell_parent(void) { ASSERT_EQ(write(up[1], "x", 1), 1); }
static void from_parent(int r) {
  char ch;
  ASSERT_EQ(read(down[r][0], &ch, 1), 1);
}
static void tell_rank(int r) { ASSERT_EQ(write(down[r][1], "x", 1), 1); }
/* A rank that failed never reports: the parent gives up after 20 s (and its ranks die with it). */
static void from_ranks(int n) {
  for (int i = 0; i < n; i++) {
    struct pollfd p = {.fd = up[0], .events = POLLIN};
    if (poll(&p, 1, 20000) != 1) FAIL("a rank did not report within 20 s");
    char ch;
    ASSERT_EQ(read(up[0], &ch, 1), 1);
  }
}

/* Waits until process pid has stopped (SIGSTOP). */
static void wait_stopped(pid_t pid) {
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
  ASSERT(WIFSTOPPED(status));
}

static void fork_ranks(pid_t *pids, void (*rank_main)(int)) {
  ASSERT_EQ(pipe(up), 0);
  for (int r = 0; r < N; r++) ASSERT_EQ(pipe(down[r]), 0);
  for (int r = 0; r < N; r++) {
    pids[r] = fork();
    ASSERT(pids[r] >= 0);
    if (pids[r] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); /* a parent that failed takes its ranks along */
      rank_main(r);
      _exit(0);
    }
  }
}

static mg_unique_id_t uids[32];

static void late_rank(int r) {
  mg_config_t cfg = config(TIMEOUT);
  static bufs_t b;
  for (size_t i = 0; i < N_LATE_PROCS; i++) {
    const acase_t *a = &late_cases[i];
    from_parent(r); /* every rank starts the case together */
    mg_comm_t *comm;
    ASSERT_OK(mg_comm_init_rank(&cfg, N, &uids[i], r, &comm));
    fill(&b, r);
    sync0(comm);
    if (r == 2) {
      test_wait_enqueued(comm, 2, 1); /* ranks 0 and 1 are in #1 */
      raise(SIGSTOP);                  /* until they gave up */
      check_late(a, call(&a->c, comm, b.send, b.recv), &b);
    } else {
      check_timed_out(a, call(&a->c, comm, b.send, b.recv), r, &b);
    }
    ASSERT_OK(mg_comm_destroy(comm));
    tell_parent();
  }
}

static void test_late_procs(void) {
  for (size_t i = 0; i < N_LATE_PROCS; i++) ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uids[i]));
  pid_t pids[N];
  fork_ranks(pids, late_rank);
  for (size_t i = 0; i < N_LATE_PROCS; i++) {
    for (int r = 0; r < N; r++) tell_rank(r);
    wait_stopped(pids[2]);
    from_ranks(2); /* ranks 0 and 1 timed out */
    ASSERT_EQ(kill(pids[2], SIGCONT), 0);
    from_ranks(1);
    printf("  %s: ok\n", late_cases[i].name);
  }
  test_wait_ranks(pids, N);
}

/* ---- stopped_inside --------------------------------------------------------------------------- */

static void inside_rank(int r) {
  mg_config_t cfg = config(TIMEOUT);
  static bufs_t b;
  const call_t c = {MG_OPK_ALL_REDUCE, 64, -1, MG_INT64, MG_SUM, NULL, NULL};
  mg_comm_t *comm;
  ASSERT_OK(mg_comm_init_rank(&cfg, N, &uids[0], r, &comm));
  fill(&b, r);
  sync0(comm);
  mg_status_t st;
  if (r == 1) {
    /* Ranks 0 and 2 have posted #1 (one step past this rank's) before the parent stops 2. */
    const mg__hshm_t *s = &mg__hcomm(comm)->shm;
    const uint64_t mine = atomic_load(&s->ranks[1].posted);
    const double t0 = mg__now();
    while (atomic_load(&s->ranks[0].posted) <= mine || atomic_load(&s->ranks[2].posted) <= mine) {
      ASSERT_LT_F(mg__now() - t0, 10.0);
      usleep(1000);
    }
    tell_parent();
    from_parent(1); /* rank 2 is stopped and rank 0 timed out */
    st = call(&c, comm, b.send, b.recv);
    if (st != MG_ERR_REMOTE) FAIL("rank 1: %s: %s", mg_status_name(st), mg_last_error());
    ASSERT_CONTAINS(mg_last_error(), " timed out during all_reduce #1 (");
  } else {
    st = call(&c, comm, b.send, b.recv);
    if (r == 0 && st != MG_ERR_TIMED_OUT) FAIL("rank 0: %s: %s", mg_status_name(st), mg_last_error());
    /* Rank 2 went past its deadline while stopped: whether it notices that first or the
     * decision, it fails. */
    if (r == 2 && st != MG_ERR_REMOTE && st != MG_ERR_TIMED_OUT)
      FAIL("rank 2: %s: %s", mg_status_name(st), mg_last_error());
  }
  ASSERT_CONTAINS(mg_last_error(), "all_reduce #1 (");
  assert_untouched(b.recv, sizeof b.recv, r, "stopped_inside");
  ASSERT_OK(mg_comm_destroy(comm));
  tell_parent();
}

static void test_stopped_inside(void) {
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uids[0]));
  pid_t pids[N];
  fork_ranks(pids, inside_rank);
  from_ranks(1); /* rank 1: ranks 0 and 2 posted #1 */
  ASSERT_EQ(kill(pids[2], SIGSTOP), 0);
  wait_stopped(pids[2]);
  from_ranks(1); /* rank 0 timed out */
  tell_rank(1);
  from_ranks(1); /* rank 1 failed */
  ASSERT_EQ(kill(pids[2], SIGCONT), 0);
  test_wait_ranks(pids, N);
}

/* ---- abort ------------------------------------------------------------------------------------ */

static mg_status_t abort_st[N];
static double abort_dt[N];

static void *abort_thread(void *arg) {
  const int r = (int)(intptr_t)arg;
  const call_t c = {MG_OPK_ALL_REDUCE, 64, -1, MG_INT64, MG_SUM, NULL, NULL};
  sync0(comms[r]);
  if (r == 2) return NULL; /* comes to #1 later */
  double t0 = mg__now();
  abort_st[r] = call(&c, comms[r], bufs[r].send, bufs[r].recv);
  abort_dt[r] = mg__now() - t0;
  if (r == 0 && abort_st[r] == MG_ERR_ABORTED) ASSERT_CONTAINS(mg_last_error(), "aborted");
  if (r == 1 && abort_st[r] == MG_ERR_REMOTE) {
    ASSERT_CONTAINS(mg_last_error(), "rank 0 aborted");
    ASSERT_CONTAINS(mg_last_error(), "during all_reduce #1 (");
  }
  return NULL;
}

static void test_abort(void) {
  mg_config_t cfg = config(5); /* far: rank 1 must learn of the abort, not time out */
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  for (int r = 0; r < N; r++) fill(&bufs[r], r);
  pthread_t t[N];
  for (int r = 0; r < N; r++) pthread_create(&t[r], NULL, abort_thread, (void *)(intptr_t)r);
  pthread_join(t[2], NULL);
  test_wait_enqueued(comms[2], 2, 1); /* ranks 0 and 1 are in #1 */
  ASSERT_OK(mg_comm_abort(comms[0]));
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  ASSERT_EQ(abort_st[0], MG_ERR_ABORTED);
  ASSERT_EQ(abort_st[1], MG_ERR_REMOTE);
  ASSERT_LT_F(abort_dt[1], 2.0);
  /* Rank 2 arrives with every input posted: the abort decided #1. */
  const call_t c = {MG_OPK_ALL_REDUCE, 64, -1, MG_INT64, MG_SUM, NULL, NULL};
  ASSERT_STATUS(MG_ERR_REMOTE, call(&c, comms[2], bufs[2].send, bufs[2].recv));
  ASSERT_CONTAINS(mg_last_error(), "rank 0 aborted during all_reduce #1 (");
  ASSERT_CONTAINS(mg_last_error(), "with MG_ERR_ABORTED");
  for (int r = 0; r < N; r++) assert_untouched(bufs[r].recv, sizeof bufs[r].recv, r, "abort");
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

/* ---- p2p_threads, p2p_procs, p2p_abort ------------------------------------------------------------ */

/* A message that fits in the 4 KiB ring, and one that does not. */
#define SMALL_EL 8
#define LARGE_EL 2048

/* Rank 1 receives first and times out; rank 0 sends afterwards: the send must fail. */
static void late_sender_check(mg_status_t st) {
  if (st != MG_ERR_REMOTE) FAIL("late send: %s: %s", mg_status_name(st), mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), "rank 1 timed out during send #0 to rank 1 (int64 x 8)");
}
static void early_recv_check(mg_status_t st, const bufs_t *b) {
  if (st != MG_ERR_TIMED_OUT) FAIL("recv: %s: %s", mg_status_name(st), mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), "recv #0 ");
  assert_untouched(b->recv, sizeof b->recv, 1, "recv that timed out");
}
/* Rank 0 sends more than the ring holds and times out; rank 1 receives afterwards. */
static void early_send_check(mg_status_t st) {
  if (st != MG_ERR_TIMED_OUT) FAIL("send: %s: %s", mg_status_name(st), mg_last_error());
  ASSERT_CONTAINS(mg_last_error(), "send #0 ");
  ASSERT_CONTAINS(mg_last_error(), " timed out");
}
static void late_recv_check(mg_status_t st, const bufs_t *b, const char *what) {
  if (st != MG_ERR_REMOTE) FAIL("late recv: %s: %s", mg_status_name(st), mg_last_error());
  assert_untouched(b->recv, sizeof b->recv, 1, "late recv");
  ASSERT_CONTAINS(mg_last_error(), what);
}

static void *p2p_thread(void *arg) {
  const int r = (int)(intptr_t)arg;
  if (r == 1) {
    early_recv_check(mg_recv(bufs[1].recv, SMALL_EL, MG_INT64, 0, comms[1], NULL), &bufs[1]);
    atomic_fetch_add(&returned, 1);
  } else {
    while (atomic_load(&returned) < 1) usleep(1000);
    late_sender_check(mg_send(bufs[0].send, SMALL_EL, MG_INT64, 1, comms[0], NULL));
  }
  return NULL;
}

static void *p2p_thread_large(void *arg) {
  const int r = (int)(intptr_t)arg;
  if (r == 0) {
    early_send_check(mg_send(bufs[0].send, LARGE_EL, MG_INT64, 1, comms[0], NULL));
    atomic_fetch_add(&returned, 1);
  } else {
    while (atomic_load(&returned) < 1) usleep(1000);
    late_recv_check(mg_recv(bufs[1].recv, LARGE_EL, MG_INT64, 0, comms[1], NULL), &bufs[1],
                    "rank 0 timed out during recv #0 from rank 0 (int64 x 2048)");
  }
  return NULL;
}

static void test_p2p_threads(void) {
  mg_config_t cfg = config(TIMEOUT);
  pthread_t t[2];
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  for (int r = 0; r < 2; r++) fill(&bufs[r], r);
  atomic_store(&returned, 0);
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, p2p_thread, (void *)(intptr_t)r);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));

  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  for (int r = 0; r < 2; r++) fill(&bufs[r], r);
  atomic_store(&returned, 0);
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, p2p_thread_large, (void *)(intptr_t)r);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

/* Processes: the late side is stopped before it calls, until the other side gave up. */
static void p2p_rank(int r) {
  mg_config_t cfg = config(TIMEOUT);
  static bufs_t b;
  if (r == 2) return; /* two ranks only */
  mg_comm_t *comm;
  fill(&b, r);
  /* The late sender. */
  from_parent(r);
  ASSERT_OK(mg_comm_init_rank(&cfg, 2, &uids[0], r, &comm));
  if (r == 0) {
    raise(SIGSTOP);
    late_sender_check(mg_send(b.send, SMALL_EL, MG_INT64, 1, comm, NULL));
  } else {
    early_recv_check(mg_recv(b.recv, SMALL_EL, MG_INT64, 0, comm, NULL), &b);
  }
  ASSERT_OK(mg_comm_destroy(comm));
  tell_parent();
  /* The late receiver. */
  from_parent(r);
  ASSERT_OK(mg_comm_init_rank(&cfg, 2, &uids[1], r, &comm));
  if (r == 1) {
    raise(SIGSTOP);
    late_recv_check(mg_recv(b.recv, LARGE_EL, MG_INT64, 0, comm, NULL), &b,
                    "rank 0 timed out during recv #0 from rank 0 (int64 x 2048)");
  } else {
    early_send_check(mg_send(b.send, LARGE_EL, MG_INT64, 1, comm, NULL));
  }
  ASSERT_OK(mg_comm_destroy(comm));
  tell_parent();
}

static void test_p2p_procs(void) {
  for (int i = 0; i < 2; i++) ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uids[i]));
  pid_t pids[N];
  fork_ranks(pids, p2p_rank);
  for (int r = 0; r < 2; r++) tell_rank(r);
  wait_stopped(pids[0]);
  from_ranks(1); /* rank 1's receive timed out */
  ASSERT_EQ(kill(pids[0], SIGCONT), 0);
  from_ranks(1);
  for (int r = 0; r < 2; r++) tell_rank(r);
  wait_stopped(pids[1]);
  from_ranks(1); /* rank 0's send timed out */
  ASSERT_EQ(kill(pids[1], SIGCONT), 0);
  from_ranks(1);
  test_wait_ranks(pids, N);
}

static void *blocked_sender(void *arg) {
  (void)arg;
  const double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_ABORTED, mg_send(bufs[0].send, LARGE_EL, MG_INT64, 1, comms[0], NULL));
  ASSERT_LT_F(mg__now() - t0, 2.0);
  return NULL;
}

static void test_p2p_abort(void) {
  mg_config_t cfg = config(5);
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  for (int r = 0; r < 2; r++) fill(&bufs[r], r);
  pthread_t t;
  pthread_create(&t, NULL, blocked_sender, NULL);
  /* The ring is full: the sender waits for the receiver. */
  const mg__hshm_t *s = &mg__hcomm(comms[0])->shm;
  const double t0 = mg__now();
  while (atomic_load(&mg__hshm_chan(s, 0, 1)->head) < s->hdr->chan_bytes) {
    ASSERT_LT_F(mg__now() - t0, 10.0);
    usleep(1000);
  }
  ASSERT_OK(mg_comm_abort(comms[0]));
  pthread_join(t, NULL);
  late_recv_check(mg_recv(bufs[1].recv, LARGE_EL, MG_INT64, 0, comms[1], NULL), &bufs[1],
                  "rank 0 aborted during recv #0 from rank 0 (int64 x 2048)");
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

/* ---- mismatch_threads, mismatch_procs ------------------------------------------------------------ */

static const size_t a2av_sc0[N] = {1, 2, 1}; /* rank 0 sends 2 to rank 1 ... */
static const size_t a2av_rc1[N] = {3, 1, 1}; /* ... which expects 3 from rank 0 */

typedef struct {
  const char *name;
  call_t c;          /* what ranks 1 and 2 call (and rank 0, but for what `differs` changes) */
  enum { ROOT, COUNT, DTYPE, PREMUL, A2AV } differs;
  size_t count0;     /* COUNT: rank 0's count */
  const char *says[2]; /* what every rank's message must contain besides "mismatched collectives" */
} mcase_t;

static const mcase_t mismatch_cases[] = {
    /* Roots: rank 0 says 0, ranks 1 and 2 say 1. */
    {"broadcast root, mails", {MG_OPK_BROADCAST, 4, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 0)", "the roots differ"}},
    {"broadcast root, staged", {MG_OPK_BROADCAST, 64, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 0)", "the roots differ"}},
    {"broadcast root, direct", {MG_OPK_BROADCAST, 8192, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 0)", "the roots differ"}},
    {"reduce root, mails", {MG_OPK_REDUCE, 4, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 1, op sum)", "the roots differ"}},
    {"reduce root, two-phase", {MG_OPK_REDUCE, 2048, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 0, op sum)", "the roots differ"}},
    {"gather root, staged", {MG_OPK_GATHER, 64, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 0)", "the roots differ"}},
    {"gather root, direct", {MG_OPK_GATHER, 8192, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 1)", "the roots differ"}},
    {"scatter root, staged", {MG_OPK_SCATTER, 64, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 0)", "the roots differ"}},
    {"scatter root, direct", {MG_OPK_SCATTER, 8192, 1, MG_INT64, MG_SUM, 0, 0}, ROOT, 0,
     {"root 1)", "the roots differ"}},
    /* Counts and dtypes where some rank reads nobody (the root of a broadcast, the non-roots of a
     * reduce), a count of 0, and a count for the mails against one that is not. */
    {"broadcast count at the root", {MG_OPK_BROADCAST, 4, 0, MG_INT64, MG_SUM, 0, 0}, COUNT, 5,
     {"broadcast #0 (int64 x 5, root 0)", "the counts differ"}},
    {"gather count at a non-root", {MG_OPK_GATHER, 64, 1, MG_INT64, MG_SUM, 0, 0}, COUNT, 63,
     {"gather #0 (int64 x 63, root 1)", "the counts differ"}},
    {"reduce dtype at a non-root", {MG_OPK_REDUCE, 64, 1, MG_INT64, MG_SUM, 0, 0}, DTYPE, 0,
     {"reduce #0 (uint64 x 64, root 1, op sum)", "the data types differ"}},
    {"all_reduce count 0", {MG_OPK_ALL_REDUCE, 1, -1, MG_INT64, MG_SUM, 0, 0}, COUNT, 0,
     {"all_reduce #0 (int64 x 0, op sum)", "the counts differ"}},
    {"all_reduce count, mails against one-step", {MG_OPK_ALL_REDUCE, 4, -1, MG_INT64, MG_SUM, 0, 0},
     COUNT, 64, {"all_reduce #0 (int64 x 64, op sum)", "the counts differ"}},
    /* PreMulSum on rank 0, sum on the others. */
    {"all_reduce PreMulSum, mails", {MG_OPK_ALL_REDUCE, 4, -1, MG_INT64, MG_SUM, 0, 0}, PREMUL, 0,
     {"op premul_sum)", "the reduction ops differ"}},
    {"all_reduce PreMulSum, one-step", {MG_OPK_ALL_REDUCE, 64, -1, MG_INT64, MG_SUM, 0, 0}, PREMUL,
     0, {"op premul_sum)", "the reduction ops differ"}},
    {"all_reduce PreMulSum, two-phase", {MG_OPK_ALL_REDUCE, 2048, -1, MG_INT64, MG_SUM, 0, 0},
     PREMUL, 0, {"op premul_sum)", "the reduction ops differ"}},
    {"reduce PreMulSum", {MG_OPK_REDUCE, 64, 2, MG_INT64, MG_SUM, 0, 0}, PREMUL, 0,
     {"root 2, op premul_sum)", "the reduction ops differ"}},
    {"reduce_scatter PreMulSum", {MG_OPK_REDUCE_SCATTER, 64, -1, MG_INT64, MG_SUM, 0, 0}, PREMUL,
     0, {"op premul_sum)", "the reduction ops differ"}},
    /* all_to_allv: rank 0 sends 2 elements to rank 1, which expects 3. */
    {"all_to_allv pair counts", {MG_OPK_ALL_TO_ALLV, 1, -1, MG_INT64, MG_SUM, 0, 0}, A2AV, 0,
     {"rank 0 sends 2 elements to rank 1 (its sendcounts[1])",
      "rank 1 expects 3 from rank 0 (its recvcounts[0])"}},
};
#define N_MISMATCH (sizeof mismatch_cases / sizeof mismatch_cases[0])

/* Rank r's call in case m. */
static call_t mismatch_call(const mcase_t *m, int r, mg_comm_t *comm) {
  call_t c = m->c;
  if (r != 0) {
    if (m->differs == A2AV && r == 1) c.rc = a2av_rc1;
    return c;
  }
  switch (m->differs) {
    case ROOT: c.root = 0; break;
    case COUNT: c.count = m->count0; break;
    case DTYPE: c.dtype = MG_UINT64; break;
    case PREMUL: {
      const int64_t scalar = 3;
      ASSERT_OK(mg_op_create_premul_sum(comm, &scalar, MG_INT64, MG_SCALAR_HOST_IMMEDIATE, &c.op));
      break;
    }
    case A2AV: c.sc = a2av_sc0; break;
  }
  return c;
}

static void check_mismatch(const mcase_t *m, int r, mg_status_t st, const bufs_t *b) {
  if (st != MG_ERR_INVALID_USAGE)
    FAIL("%s: rank %d: %s, expected MG_ERR_INVALID_USAGE: %s", m->name, r, mg_status_name(st),
         mg_last_error());
  const char *msg = mg_last_error();
  ASSERT_CONTAINS(msg, "mismatched collectives: ");
  ASSERT_CONTAINS(msg, " #0");
  for (int i = 0; i < 2; i++) ASSERT_CONTAINS(msg, m->says[i]);
  assert_untouched(b->recv, sizeof b->recv, r, m->name);
}

static const mcase_t *mcur;

/* A mismatch found while the collective ran leaves the ranks disagreeing on what comes next: the
 * communicator is in the error state, and says why. */
static void assert_broken(mg_comm_t *comm, const char *name) {
  mg_comm_state_t s;
  ASSERT_OK(mg_comm_state(comm, &s));
  if (s != MG_COMM_ERROR) FAIL("%s: the communicator is in state %d after a mismatch", name, (int)s);
  mg_status_t why;
  ASSERT_OK(mg_comm_async_error(comm, &why));
  ASSERT_EQ(why, MG_ERR_INVALID_USAGE);
}

static void *mismatch_thread(void *arg) {
  const int r = (int)(intptr_t)arg;
  const call_t c = mismatch_call(mcur, r, comms[r]);
  check_mismatch(mcur, r, call(&c, comms[r], bufs[r].send, bufs[r].recv), &bufs[r]);
  assert_broken(comms[r], mcur->name);
  return NULL;
}

static void test_mismatch_threads(void) {
  mg_config_t cfg = config(5); /* a mismatch is found at once, not at the deadline */
  for (size_t i = 0; i < N_MISMATCH; i++) {
    mcur = &mismatch_cases[i];
    ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
    for (int r = 0; r < N; r++) fill(&bufs[r], r);
    const double t0 = mg__now();
    pthread_t t[N];
    for (int r = 0; r < N; r++) pthread_create(&t[r], NULL, mismatch_thread, (void *)(intptr_t)r);
    for (int r = 0; r < N; r++) pthread_join(t[r], NULL);
    ASSERT_LT_F(mg__now() - t0, 2.0);
    for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
    printf("  %s: ok\n", mcur->name);
  }
}

static void mismatch_rank(int r) {
  mg_config_t cfg = config(5);
  static bufs_t b;
  for (size_t i = 0; i < N_MISMATCH; i++) {
    mg_comm_t *comm;
    ASSERT_OK(mg_comm_init_rank(&cfg, N, &uids[i], r, &comm));
    fill(&b, r);
    const call_t c = mismatch_call(&mismatch_cases[i], r, comm);
    const double t0 = mg__now();
    check_mismatch(&mismatch_cases[i], r, call(&c, comm, b.send, b.recv), &b);
    ASSERT_LT_F(mg__now() - t0, 2.0);
    assert_broken(comm, mismatch_cases[i].name);
    ASSERT_OK(mg_comm_destroy(comm));
  }
}

static void test_mismatch_procs(void) {
  for (size_t i = 0; i < N_MISMATCH; i++) ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uids[i]));
  pid_t pids[N];
  fork_ranks(pids, mismatch_rank);
  test_wait_ranks(pids, N);
}

/* ---- check_one_rank --------------------------------------------------------------------------- */

/* Rank 0 makes the id and hands it to the others, so that the parent calls nothing before the
 * fork and rank 0's environment is read as it sets it. */
static void check_rank(int r) {
  mg_unique_id_t id;
  if (r == 0) {
    ASSERT_EQ(setenv("MGCOMM_CHECK_COLLECTIVES", "1", 1), 0);
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
    for (int q = 1; q < N; q++) ASSERT_EQ(write(down[q][1], &id, sizeof id), (ssize_t)sizeof id);
  } else {
    ASSERT_EQ(read(down[r][0], &id, sizeof id), (ssize_t)sizeof id);
  }
  mg_config_t cfg = config(5);
  mg_comm_t *comm;
  ASSERT_OK(mg_comm_init_rank(&cfg, N, &id, r, &comm));
  int64_t v[4] = {1, 2, 3, 4}, out[4];
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(v, out, 4, MG_INT64, MG_SUM, comm, NULL));
  ASSERT_CONTAINS(mg_last_error(), "mismatched collectives");
  if (r == 0) {
    ASSERT_CONTAINS(mg_last_error(), "rank 0 called the check's exchange, rank 1 called all_reduce");
  } else {
    ASSERT_CONTAINS(mg_last_error(), "called all_reduce #0 (int64 x 4, op sum)");
  }
  ASSERT_OK(mg_comm_destroy(comm));
}

static void test_check_one_rank(void) {
  pid_t pids[N];
  fork_ranks(pids, check_rank);
  test_wait_ranks(pids, N);
}

/* ---- premul_scalars ----------------------------------------------------------------------------- */

static const call_t premul_cases[] = {
    {MG_OPK_ALL_REDUCE, 4, -1, MG_INT64, MG_SUM, 0, 0},      /* mails */
    {MG_OPK_ALL_REDUCE, 64, -1, MG_INT64, MG_SUM, 0, 0},     /* one-step */
    {MG_OPK_ALL_REDUCE, 2048, -1, MG_INT64, MG_SUM, 0, 0},   /* two-phase */
    {MG_OPK_REDUCE, 4, 1, MG_INT64, MG_SUM, 0, 0},           /* mails */
    {MG_OPK_REDUCE, 2048, 2, MG_INT64, MG_SUM, 0, 0},        /* two-phase */
    {MG_OPK_REDUCE_SCATTER, 64, -1, MG_INT64, MG_SUM, 0, 0}, /* one slot */
    {MG_OPK_REDUCE_SCATTER, 2048, -1, MG_INT64, MG_SUM, 0, 0}, /* pipelined */
};
static const call_t *pcur;
static int64_t scalars[N];

static void *premul_thread(void *arg) {
  const int r = (int)(intptr_t)arg;
  call_t c = *pcur;
  /* Rank 2's scalar is read where it lies when the operation runs (device residence). */
  ASSERT_OK(mg_op_create_premul_sum(comms[r], &scalars[r], MG_INT64,
                                    r == 2 ? MG_SCALAR_DEVICE : MG_SCALAR_HOST_IMMEDIATE, &c.op));
  ASSERT_OK(call(&c, comms[r], bufs[r].send, bufs[r].recv));
  if (c.kind == MG_OPK_REDUCE && r != c.root) return NULL;
  /* Element i of the result: sum over ranks q of s_q * (q's send at the element's place). */
  const size_t base = c.kind == MG_OPK_REDUCE_SCATTER ? (size_t)r * c.count : 0;
  for (size_t i = 0; i < c.count; i++) {
    int64_t want = 0;
    for (int q = 0; q < N; q++) want += scalars[q] * (int64_t)(q * 1000003 + (int)(base + i));
    if (bufs[r].recv[i] != want)
      FAIL("%s x %zu: rank %d, element %zu: %lld, expected %lld", mg__opkind_name(c.kind),
           c.count, r, i, (long long)bufs[r].recv[i], (long long)want);
  }
  return NULL;
}

static void test_premul_scalars(void) {
  mg_config_t cfg = config(5);
  for (int r = 0; r < N; r++) scalars[r] = 2 + 3 * r;
  for (size_t i = 0; i < sizeof premul_cases / sizeof premul_cases[0]; i++) {
    pcur = &premul_cases[i];
    ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
    for (int r = 0; r < N; r++) fill(&bufs[r], r);
    pthread_t t[N];
    for (int r = 0; r < N; r++) pthread_create(&t[r], NULL, premul_thread, (void *)(intptr_t)r);
    for (int r = 0; r < N; r++) pthread_join(t[r], NULL);
    for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  }
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s TEST", argv[0]);
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {
      {"late_threads", test_late_threads},       {"late_procs", test_late_procs},
      {"stopped_inside", test_stopped_inside},   {"abort", test_abort},
      {"p2p_threads", test_p2p_threads},         {"p2p_procs", test_p2p_procs},
      {"p2p_abort", test_p2p_abort},             {"mismatch_threads", test_mismatch_threads},
      {"mismatch_procs", test_mismatch_procs},   {"check_one_rank", test_check_one_rank},
      {"premul_scalars", test_premul_scalars},
  };
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    if (strcmp(argv[1], tests[i].name) != 0) continue;
    tests[i].fn();
    printf("%s: ok\n", argv[1]);
    return 0;
  }
  FAIL("unknown test %s", argv[1]);
}
