/*
 * host_box.c -- the box (host_coll.c): a message of up to MG__HSHM_BOX_BYTES goes in the line of
 * its lane's head while the receiver has taken the box's last message out, else through the
 * ring; a lent message (from MGCOMM_HOST_DIRECT_BYTES, 4096 here) is described there once the
 * box is free; the receiver takes them in order either way and compares the sizes (the box
 * word's, or the header of a message through the ring). Two thread ranks (mg_comm_init_all), a
 * fresh pair of communicators per case (with the argument `procs`: busy, lend, stream and
 * exchange between two processes, each a rank through mg_comm_init_rank, as test_fork_ranks
 * makes them):
 *
 *  busy      rank 0 sends three 8-byte messages in one group before rank 1 receives any: the
 *            first goes in the box, the other two through the ring (the box is full), and rank
 *            1 receives all three in order;
 *  lend      rank 0 sends 8 B and then 8 KiB in one group, rank 1 receives them one call
 *            each: the lent message waits for the box until rank 1 has taken the 8 bytes out,
 *            and nothing goes through the ring;
 *  stream    rank 0 sends 3000 messages of 0 B to 5000 B (around the box's size, and lent), one
 *            call each, while rank 1 receives them one call each: every message arrives whole
 *            and in order, through the box and the ring both;
 *  exchange  500 rounds of a group in which each rank sends the other 9 messages of those sizes
 *            and receives 9: the same, both ways at once;
 *  late      (timeout 2 s) rank 0 sends 8 B, then 8 KiB lent, which waits for the box; rank 1
 *            receives only after that send failed MG_ERR_TIMED_OUT ("did not take this rank's
 *            message before it out of the box"): the 8 B arrive, and the receive of the lent
 *            message fails MG_ERR_REMOTE naming rank 0's timeout at once, not at its own deadline;
 *  mismatches a receive of another size than its message (mismatch_t), once the sends have
 *            returned: 8 B in the box, 16 expected; 200 B through the ring (then 8 in the box),
 *            300 expected; 1000 B through the ring, 500 expected; an empty message (which carries
 *            nothing), then 300 B through the ring or 8 in the box, 300 expected for the first;
 *            300 B through the ring, or 8 in the box, 0 expected; 300 B twice, received as 0
 *            before they were sent (that receive ends at once) and then as 300: the receive fails
 *            MG_ERR_INVALID_USAGE naming both sizes (the last: the message left in the ring), from
 *            the box word or the ring's header, and writes nothing; the sends succeed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "test.h"

#define N 2

typedef struct {
  mg_comm_t *comm;
  int rank;
  mg_status_t st;     /* what the rank's operation returned (sizes) */
  char err[512];      /* and its message */
  atomic_int *gate;   /* late, mismatches: rank 1 receives once rank 0's sends returned */
} arg_t;

static const size_t sizes[] = {8, MG__HSHM_BOX_BYTES, MG__HSHM_BOX_BYTES + 1, 0, 100, 4, 1000, 1,
                               5000};
#define MAXB 5000
#define NSIZES (sizeof sizes / sizeof sizes[0])

static unsigned char pat(int rank, int msg, size_t i) {
  return (unsigned char)(i * 7 + (size_t)msg * 31 + (size_t)rank * 101 + 1);
}

static void fill(unsigned char *buf, int rank, int msg, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) buf[i] = pat(rank, msg, i);
}

static void check(const unsigned char *buf, int from, int msg, size_t bytes) {
  for (size_t i = 0; i < bytes; i++)
    if (buf[i] != pat(from, msg, i))
      FAIL("message %d of %zu bytes from rank %d: byte %zu is %u, expected %u", msg, bytes, from,
           i, buf[i], pat(from, msg, i));
}

static const mg__hshm_chan_t *lane(mg_comm_t *comm, int src, int dst) {
  return mg__hshm_chan(&mg__hcomm(comm)->shm, src, dst);
}

static double timeout_s = 60; /* of the next case's communicators */

/* `procs`: the ranks are processes (fork), each with its own communicator (mg_comm_init_rank). */
static void proc_rank(int r, void *p) {
  void **v = p; /* the case, the id */
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout_s;
  arg_t a = {NULL, r, MG_OK, "", NULL};
  ASSERT_OK(mg_comm_init_rank(&cfg, N, v[1], r, &a.comm));
  ((void *(*)(void *))v[0])(&a);
  ASSERT_OK(mg_comm_destroy(a.comm));
}

static void run_procs(void *(*fn)(void *)) {
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  void *v[2] = {(void *)fn, &id};
  pid_t pids[N];
  test_fork_ranks(pids, N, proc_rank, v);
  test_wait_ranks(pids, N);
}

static void wait_gate(const atomic_int *gate, int v) {
  while (atomic_load(gate) < v) usleep(1000);
}

static void run_case(void *(*fn)(void *), arg_t *a) {
  mg_comm_t *comms[N];
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout_s;
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  pthread_t t[N];
  for (int r = 0; r < N; r++) {
    a[r].comm = comms[r];
    a[r].rank = r;
    ASSERT_EQ(pthread_create(&t[r], NULL, fn, &a[r]), 0);
  }
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

/* Every rank has reached it (a collective: another lane than the messages'). */
static void barrier(mg_comm_t *comm) {
  int64_t one = 1, n = 0;
  ASSERT_OK(mg_all_reduce(&one, &n, 1, MG_INT64, MG_SUM, comm, NULL));
  ASSERT_EQ(n, N);
}

static void *busy_rank(void *p) {
  arg_t *a = p;
  unsigned char buf[3][8];
  if (a->rank == 0) {
    ASSERT_OK(mg_group_begin());
    for (int m = 0; m < 3; m++) {
      fill(buf[m], 0, m, 8);
      ASSERT_OK(mg_send(buf[m], 8, MG_UINT8, 1, a->comm, NULL));
    }
    ASSERT_OK(mg_group_end());
    const mg__hshm_chan_t *ch = lane(a->comm, 0, 1);
    ASSERT_EQ(atomic_load(&ch->box_word), mg__hbox_word(0, 8)); /* #0 in the box */
    /* #1 and #2 in the ring, each behind its header */
    ASSERT_EQ(atomic_load(&ch->head), 2 * (8 + sizeof(mg__hring_hdr_t)));
    barrier(a->comm);
  } else {
    barrier(a->comm); /* rank 0's group has returned */
    memset(buf, 0, sizeof buf);
    for (int m = 0; m < 3; m++) {
      ASSERT_OK(mg_recv(buf[m], 8, MG_UINT8, 0, a->comm, NULL));
      check(buf[m], 0, m, 8);
    }
    ASSERT_EQ(atomic_load(&lane(a->comm, 0, 1)->box_done), 1);
  }
  return NULL;
}

static void *lend_rank(void *p) {
  arg_t *a = p;
  if (!mg__hcomm(a->comm)->shm.direct) { /* processes that may not read each other: no lending */
    printf("lend: rank %d: skipped, this pair cannot read each other's memory\n", a->rank);
    return NULL;
  }
  static _Thread_local unsigned char small[8], big[8192];
  if (a->rank == 0) {
    fill(small, 0, 0, sizeof small);
    fill(big, 0, 1, sizeof big);
    ASSERT_OK(mg_group_begin());
    ASSERT_OK(mg_send(small, sizeof small, MG_UINT8, 1, a->comm, NULL));
    ASSERT_OK(mg_send(big, sizeof big, MG_UINT8, 1, a->comm, NULL));
    ASSERT_OK(mg_group_end());
    const mg__hshm_chan_t *ch = lane(a->comm, 0, 1);
    ASSERT_EQ(atomic_load(&ch->box_word), mg__hbox_word(1, MG__HBOX_LENT));
    ASSERT_EQ(atomic_load(&ch->box_done), 2); /* rank 1 copied it before the send ended */
    ASSERT_EQ(atomic_load(&ch->head), 0);
  } else {
    ASSERT_OK(mg_recv(small, sizeof small, MG_UINT8, 0, a->comm, NULL));
    check(small, 0, 0, sizeof small);
    ASSERT_OK(mg_recv(big, sizeof big, MG_UINT8, 0, a->comm, NULL));
    check(big, 0, 1, sizeof big);
  }
  return NULL;
}

static void *late_rank(void *p) {
  arg_t *a = p;
  static _Thread_local unsigned char small[8], big[8192];
  if (a->rank == 0) {
    ASSERT_OK(mg_send(small, sizeof small, MG_UINT8, 1, a->comm, NULL));
    a->st = mg_send(big, sizeof big, MG_UINT8, 1, a->comm, NULL);
    snprintf(a->err, sizeof a->err, "%s", mg_last_error());
    atomic_store(a->gate, 1);
  } else {
    wait_gate(a->gate, 1);
    ASSERT_OK(mg_recv(small, sizeof small, MG_UINT8, 0, a->comm, NULL));
    const double t0 = test_now();
    a->st = mg_recv(big, sizeof big, MG_UINT8, 0, a->comm, NULL);
    snprintf(a->err, sizeof a->err, "%s", mg_last_error());
    if (test_now() - t0 > 1.0) FAIL("the receive took %.2f s, not at once", test_now() - t0);
  }
  return NULL;
}

static void *stream_rank(void *p) {
  arg_t *a = p;
  unsigned char buf[MAXB];
  for (int m = 0; m < 3000; m++) {
    const size_t bytes = sizes[(size_t)m % NSIZES];
    if (a->rank == 0) {
      fill(buf, 0, m, bytes);
      ASSERT_OK(mg_send(buf, bytes, MG_UINT8, 1, a->comm, NULL));
    } else {
      memset(buf, 0, sizeof buf);
      ASSERT_OK(mg_recv(buf, bytes, MG_UINT8, 0, a->comm, NULL));
      check(buf, 0, m, bytes);
    }
  }
  if (a->rank == 0) { /* both ways were taken */
    const mg__hshm_chan_t *ch = lane(a->comm, 0, 1);
    ASSERT(mg__hbox_id(atomic_load(&ch->box_word)) > 0);
    ASSERT(atomic_load(&ch->head) > 0);
  }
  return NULL;
}

static void *exchange_rank(void *p) {
  arg_t *a = p;
  const int peer = 1 - a->rank;
  static _Thread_local unsigned char out[NSIZES][MAXB], in[NSIZES][MAXB];
  for (int round = 0; round < 500; round++) {
    ASSERT_OK(mg_group_begin());
    for (size_t m = 0; m < NSIZES; m++) {
      const size_t bytes = sizes[(m + (size_t)round) % NSIZES];
      fill(out[m], a->rank, round * (int)NSIZES + (int)m, bytes);
      memset(in[m], 0, bytes);
      ASSERT_OK(mg_send(out[m], bytes, MG_UINT8, peer, a->comm, NULL));
      ASSERT_OK(mg_recv(in[m], bytes, MG_UINT8, peer, a->comm, NULL));
    }
    ASSERT_OK(mg_group_end());
    for (size_t m = 0; m < NSIZES; m++)
      check(in[m], peer, round * (int)NSIZES + (int)m, sizes[(m + (size_t)round) % NSIZES]);
  }
  ASSERT(mg__hbox_id(atomic_load(&lane(a->comm, a->rank, peer)->box_word)) > 0);
  return NULL;
}

/* Mismatched sizes: rank 0 sends each of `sends` (one call each, 0 B included), then rank 1
 * receives each of `recvs` (one call each; with `early`, the first before rank 0 sends): every
 * receive but the last succeeds; the last fails naming `want` and writes nothing; every send
 * has succeeded (each was complete once published: the failing receive begins after the sends
 * returned, so that it cannot fail a send still under way). */
typedef struct {
  const char *name;
  size_t sends[2], recvs[2];
  int nsends, nrecvs, early;
  const char *want;
} mismatch_t;

static const mismatch_t mismatches[] = {
    {"sizes", {8}, {16}, 1, 1, 0, "rank 0 sends 8 bytes, this receive expects 16"},
    {"short", {200, 8}, {300}, 2, 1, 0, "rank 0 sends 200 bytes, this receive expects 300"},
    {"long", {1000}, {500}, 1, 1, 0, "rank 0 sends 1000 bytes, this receive expects 500"},
    {"empty", {0, 300}, {300}, 2, 1, 0, "rank 0 sends 0 bytes, this receive expects 300"},
    {"empty, then the box", {0, 8}, {300}, 2, 1, 0,
     "rank 0 sends 0 bytes, this receive expects 300"},
    {"empty receive", {300}, {0}, 1, 1, 0, "rank 0 sends 300 bytes, this receive expects 0"},
    {"empty receive, the box", {8}, {0}, 1, 1, 0, "rank 0 sends 8 bytes, this receive expects 0"},
    {"early empty receive", {300, 300}, {0, 300}, 2, 2, 1,
     "rank 0's message #0 (300 bytes) is still in the ring ahead of this receive's (which "
     "expects 300): its receive expected none"},
};
static const mismatch_t *mismatch;

static void *mismatch_rank(void *p) {
  arg_t *a = p;
  unsigned char buf[1000] = {0};
  a->st = MG_OK;
  if (a->rank == 0) {
    wait_gate(a->gate, mismatch->early);
    memset(buf, 0x5a, sizeof buf);
    for (int i = 0; i < mismatch->nsends && a->st == MG_OK; i++)
      a->st = mg_send(buf, mismatch->sends[i], MG_UINT8, 1, a->comm, NULL);
    atomic_store(a->gate, 2);
  } else {
    int i = 0;
    if (mismatch->early) { /* it ends at once: no message is there yet */
      ASSERT_OK(mg_recv(buf, mismatch->recvs[i++], MG_UINT8, 0, a->comm, NULL));
      atomic_store(a->gate, 1);
    }
    wait_gate(a->gate, 2);
    for (; i < mismatch->nrecvs - 1; i++)
      ASSERT_OK(mg_recv(buf, mismatch->recvs[i], MG_UINT8, 0, a->comm, NULL));
    a->st = mg_recv(buf, mismatch->recvs[i], MG_UINT8, 0, a->comm, NULL);
    for (size_t j = 0; j < sizeof buf; j++)
      if (buf[j] != 0) FAIL("rank 1: byte %zu of the failed receive was written", j);
  }
  snprintf(a->err, sizeof a->err, "%s", mg_last_error());
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    if (strcmp(argv[1], "procs") != 0) FAIL("usage: host_box [procs]");
    run_procs(busy_rank);
    run_procs(lend_rank);
    run_procs(stream_rank);
    run_procs(exchange_rank);
    printf("procs: busy, lend, stream and exchange between two processes\n");
    return 0;
  }
  arg_t a[N];
  atomic_int gate = 0;
  memset(a, 0, sizeof a);
  for (int r = 0; r < N; r++) a[r].gate = &gate;
  run_case(busy_rank, a);
  printf("busy: the first of three 8-byte messages in the box, the others through the ring\n");

  run_case(lend_rank, a);
  printf("lend: 8 B in the box, then 8 KiB lent once the box was free\n");

  run_case(stream_rank, a);
  printf("stream: 3000 messages of 0-5000 B in order, through the box and the ring, and lent\n");

  run_case(exchange_rank, a);
  printf("exchange: 500 rounds of 9 messages each way in one group, in order\n");

  atomic_store(&gate, 0);
  timeout_s = 2;
  run_case(late_rank, a);
  timeout_s = 60;
  ASSERT_EQ(a[0].st, MG_ERR_TIMED_OUT);
  ASSERT_CONTAINS(a[0].err, "did not take this rank's message before it out of the box");
  ASSERT_EQ(a[1].st, MG_ERR_REMOTE);
  ASSERT_CONTAINS(a[1].err, "rank 0 timed out");
  printf("late: send %s (%s); receive %s (%s)\n", mg_status_name(a[0].st), a[0].err,
         mg_status_name(a[1].st), a[1].err);

  for (size_t i = 0; i < sizeof mismatches / sizeof mismatches[0]; i++) {
    mismatch = &mismatches[i];
    atomic_store(&gate, 0);
    run_case(mismatch_rank, a);
    ASSERT_EQ(a[1].st, MG_ERR_INVALID_USAGE);
    ASSERT_CONTAINS(a[1].err, mismatch->want);
    ASSERT_OK(a[0].st);
    printf("%s: receive %s (%s); send %s\n", mismatch->name, mg_status_name(a[1].st), a[1].err,
           mg_status_name(a[0].st));
  }
  return 0;
}
