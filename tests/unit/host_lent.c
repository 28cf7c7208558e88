/*
 * host_lent.c -- lent messages (host_coll.c): between thread ranks, a message of
 * MGCOMM_HOST_DIRECT_BYTES or more (4096 here, set by the test's environment) is copied by its
 * receiver straight from the sender's buffer; the receiver compares the sizes, and the send ends
 * when that copy does. Two thread ranks (mg_comm_init_all), a fresh pair of communicators per
 * case:
 *
 *  order   in one group each rank sends its peer 1 KiB, 256 KiB, 100 B, 4 KiB and 4 KiB - 4 (every
 *          other one lent, the 100 B in the box) and receives the same: the data, and the
 *          lane's ring cursor, which counts only the bytes that went through the ring;
 *  sizes   128 KiB sent, 64 KiB expected: the receive fails MG_ERR_INVALID_USAGE naming both sizes,
 *          the send MG_ERR_REMOTE naming the receiver, nothing is written;
 *  late    a lent send whose receive is not posted: MG_ERR_TIMED_OUT (timeout 0.3 s) naming the
 *          receiver, or MG_ERR_ABORTED (mg_comm_abort); the send buffer is then freed, and the
 *          receive posted after that fails and writes nothing (ASan sees any read of the buffer);
 *  hold    (test builds) the sender's communicator aborted while its receiver copies, which the
 *          fault point host.lent_copy holds for 300 ms: the send ends only after the copy, and
 *          both ranks succeed;
 *  drain   (test builds) the same for collectives whose readers copy from the owners' send
 *          buffers: a direct all_gather of 256 KiB, an all_to_allv whose ranks lend their
 *          256 KiB pieces, and a direct reduce of 256 KiB, whose ranks also write their slices
 *          into the root's receive buffer. The fault point host.direct_read holds the reads of
 *          the rank that reaches it first, and the other rank's communicator is aborted
 *          meanwhile. The aborted rank fails MG_ERR_ABORTED only once the reads of its buffer
 *          are over (the reader's claim is clear when it returns), then frees its buffers (ASan
 *          sees a read or write after that); the reader fails MG_ERR_REMOTE.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "loader/fault.h"
#include "test.h"

#define N 2
#define KIB ((size_t)1 << 10)

typedef struct {
  mg_comm_t *comm;
  int rank;
  mg_status_t st;         /* what the rank's operation returned */
  char err[512];          /* and its message */
  atomic_int *gate;       /* late: the receiver posts once the sender has returned */
  uint64_t copied_at_end; /* hold: box_done of the lane when the send returned */
  uint64_t peer_reading;  /* drain: the peer's claim on direct reads when this rank returned */
} arg_t;

static unsigned char pat(int rank, int msg, size_t i) {
  return (unsigned char)(i * 7 + (size_t)msg * 31 + (size_t)rank * 101);
}

static void comms_new(double timeout_s, mg_comm_t **comms) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout_s;
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
}

static void run_ranks(arg_t *a, void *(*fn)(void *)) {
  pthread_t t[N];
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_create(&t[r], NULL, fn, &a[r]), 0);
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
}

static const mg__hshm_chan_t *lane(mg_comm_t *comm, int src, int dst) {
  return mg__hshm_chan(&mg__hcomm(comm)->shm, src, dst);
}

static void *order_rank(void *p) {
  arg_t *a = p;
  enum { M = 5 };
  static const size_t sizes[M] = {1 * KIB, 256 * KIB, 100, 4 * KIB, 4 * KIB - 4};
  const int me = a->rank, peer = 1 - me;
  unsigned char *send[M], *recv[M];
  for (int m = 0; m < M; m++) {
    send[m] = malloc(sizes[m]);
    recv[m] = calloc(sizes[m], 1);
    ASSERT(send[m] != NULL && recv[m] != NULL);
    for (size_t i = 0; i < sizes[m]; i++) send[m][i] = pat(me, m, i);
  }
  ASSERT_OK(mg_group_begin());
  for (int m = 0; m < M; m++) ASSERT_OK(mg_send(send[m], sizes[m], MG_UINT8, peer, a->comm, NULL));
  for (int m = 0; m < M; m++) ASSERT_OK(mg_recv(recv[m], sizes[m], MG_UINT8, peer, a->comm, NULL));
  ASSERT_OK(mg_group_end());
  for (int m = 0; m < M; m++)
    for (size_t i = 0; i < sizes[m]; i++)
      if (recv[m][i] != pat(peer, m, i))
        FAIL("rank %d, message %d of %zu bytes: byte %zu is %u, expected %u", me, m, sizes[m], i,
             recv[m][i], pat(peer, m, i));
  /* Only the messages under 4 KiB went through the ring, each behind its header, but for #2
   * (100 B, in the box); the last in the box was #3, lent, and the send ended once the peer had
   * copied it. */
  const mg__hshm_chan_t *ch = lane(a->comm, me, peer);
  ASSERT_EQ(atomic_load(&ch->head), 1 * KIB + 4 * KIB - 4 + 2 * sizeof(mg__hring_hdr_t));
  ASSERT_EQ(atomic_load(&ch->box_word), mg__hbox_word(3, MG__HBOX_LENT));
  ASSERT_EQ(atomic_load(&ch->box_done), 4);
  for (int m = 0; m < M; m++) {
    free(send[m]);
    free(recv[m]);
  }
  return NULL;
}

static void *sizes_rank(void *p) {
  arg_t *a = p;
  unsigned char *buf = calloc(128 * KIB, 1);
  ASSERT(buf != NULL);
  if (a->rank == 0) {
    memset(buf, 0x5a, 128 * KIB);
    a->st = mg_send(buf, 128 * KIB, MG_UINT8, 1, a->comm, NULL);
  } else {
    a->st = mg_recv(buf, 64 * KIB, MG_UINT8, 0, a->comm, NULL);
    for (size_t i = 0; i < 128 * KIB; i++)
      if (buf[i] != 0) FAIL("rank 1: byte %zu of the failed receive was written", i);
  }
  snprintf(a->err, sizeof a->err, "%s", mg_last_error());
  free(buf);
  return NULL;
}

static void *late_rank(void *p) {
  arg_t *a = p;
  const size_t bytes = 256 * KIB;
  if (a->rank == 0) {
    unsigned char *buf = malloc(bytes);
    ASSERT(buf != NULL);
    memset(buf, 0x5a, bytes);
    a->st = mg_send(buf, bytes, MG_UINT8, 1, a->comm, NULL);
    snprintf(a->err, sizeof a->err, "%s", mg_last_error());
    free(buf); /* the receive below must not read it */
    atomic_store(a->gate, 1);
  } else {
    unsigned char *buf = calloc(bytes, 1);
    ASSERT(buf != NULL);
    while (!atomic_load(a->gate)) usleep(1000);
    a->st = mg_recv(buf, bytes, MG_UINT8, 0, a->comm, NULL);
    snprintf(a->err, sizeof a->err, "%s", mg_last_error());
    for (size_t i = 0; i < bytes; i++)
      if (buf[i] != 0) FAIL("rank 1: byte %zu of the failed receive was written", i);
    free(buf);
  }
  return NULL;
}

static void *hold_rank(void *p) {
  arg_t *a = p;
  const size_t bytes = 256 * KIB;
  unsigned char *buf = malloc(bytes);
  ASSERT(buf != NULL);
  if (a->rank == 0) {
    for (size_t i = 0; i < bytes; i++) buf[i] = pat(0, 0, i);
    a->st = mg_send(buf, bytes, MG_UINT8, 1, a->comm, NULL);
    a->copied_at_end = atomic_load(&lane(a->comm, 0, 1)->box_done);
    memset(buf, 0, bytes); /* what a copy still running would see */
  } else {
    memset(buf, 0, bytes);
    a->st = mg_recv(buf, bytes, MG_UINT8, 0, a->comm, NULL);
    for (size_t i = 0; i < bytes; i++)
      if (buf[i] != pat(0, 0, i)) FAIL("rank 1: byte %zu is %u, expected %u", i, buf[i], pat(0, 0, i));
  }
  snprintf(a->err, sizeof a->err, "%s", mg_last_error());
  free(buf);
  return NULL;
}

/* late with an abort: the receiver waits for the gate, the abort comes from here. */
static void *abort_later(void *p) {
  usleep(200 * 1000);
  ASSERT_OK(mg_comm_abort(p));
  return NULL;
}

#ifdef MGCOMM_TESTING
/* hold: the abort comes once the receiver has claimed the message and holds its copy. */
static void *abort_in_hold(void *p) {
  while (mg__fault_fired("host.lent_copy") == 0) usleep(1000);
  ASSERT_OK(mg_comm_abort(p));
  return NULL;
}

enum { DRAIN_ALL_GATHER, DRAIN_ALL_TO_ALLV, DRAIN_REDUCE, DRAIN_KINDS };
static const char *const drain_names[DRAIN_KINDS] = {"all_gather", "all_to_allv", "reduce"};
static int drain_kind;

static void *drain_rank(void *p) {
  arg_t *a = p;
  const size_t bytes = 256 * KIB;
  unsigned char *send = malloc(bytes), *recv = malloc(N * bytes);
  ASSERT(send != NULL && recv != NULL);
  for (size_t i = 0; i < bytes; i++) send[i] = pat(a->rank, 0, i);
  if (drain_kind == DRAIN_ALL_TO_ALLV) { /* all of send to the peer, nothing to itself */
    size_t counts[N] = {0}, displs[N] = {0};
    counts[1 - a->rank] = bytes;
    a->st = mg_all_to_allv(send, counts, displs, recv, counts, displs, MG_UINT8, a->comm, NULL);
  } else if (drain_kind == DRAIN_REDUCE) {
    a->st = mg_reduce(send, recv, bytes, MG_UINT8, MG_SUM, 0, a->comm, NULL);
  } else {
    a->st = mg_all_gather(send, recv, bytes, MG_UINT8, a->comm, NULL);
  }
  snprintf(a->err, sizeof a->err, "%s", mg_last_error());
  a->peer_reading = atomic_load(&mg__hcomm(a->comm)->shm.ranks[1 - a->rank].reading);
  memset(send, 0, bytes); /* what a read still running would see */
  free(send);             /* and then an unmapped buffer (malloc maps 256 KiB on its own) */
  free(recv);
  return NULL;
}

/* drain: once the fault point holds a rank's reads (the other rank's quick reads are long over
 * 50 ms later), the other rank's communicator is aborted. */
static void *abort_in_read(void *p) {
  mg_comm_t **comms = p;
  while (mg__fault_fired("host.direct_read") == 0) usleep(1000);
  usleep(50 * 1000);
  int holder = -1;
  for (int r = 0; r < N; r++)
    if (atomic_load(&mg__hcomm(comms[r])->shm.ranks[r].reading) != 0) holder = r;
  ASSERT(holder >= 0);
  ASSERT_OK(mg_comm_abort(comms[1 - holder]));
  return NULL;
}
#endif

static void late_case(int aborted) {
  mg_comm_t *comms[N];
  comms_new(aborted ? 60 : 0.3, comms);
  atomic_int gate = 0;
  arg_t a[N] = {{comms[0], 0, MG_OK, "", &gate, 0, 0}, {comms[1], 1, MG_OK, "", &gate, 0, 0}};
  pthread_t ab;
  if (aborted) ASSERT_EQ(pthread_create(&ab, NULL, abort_later, comms[0]), 0);
  run_ranks(a, late_rank);
  if (aborted) ASSERT_EQ(pthread_join(ab, NULL), 0);
  if (aborted) {
    ASSERT_EQ(a[0].st, MG_ERR_ABORTED);
  } else {
    ASSERT_EQ(a[0].st, MG_ERR_TIMED_OUT);
    ASSERT_CONTAINS(a[0].err, "rank 1 did not take the message");
  }
  ASSERT(a[1].st < 0);
  printf("late (%s): send %s (%s); receive %s (%s)\n", aborted ? "abort" : "timeout",
         mg_status_name(a[0].st), a[0].err, mg_status_name(a[1].st), a[1].err);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
}

int main(void) {
  mg_comm_t *comms[N];
  arg_t a[N];

  comms_new(60, comms);
  for (int r = 0; r < N; r++) a[r] = (arg_t){comms[r], r, MG_OK, "", NULL, 0, 0};
  run_ranks(a, order_rank);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  printf("order: 4 KiB and 256 KiB lent, 1 KiB, 100 B and 4 KiB - 4 through the ring\n");

  comms_new(60, comms);
  for (int r = 0; r < N; r++) a[r] = (arg_t){comms[r], r, MG_OK, "", NULL, 0, 0};
  run_ranks(a, sizes_rank);
  ASSERT_EQ(a[1].st, MG_ERR_INVALID_USAGE);
  ASSERT_CONTAINS(a[1].err, "rank 0 sends 131072 bytes, this receive expects 65536");
  ASSERT_EQ(a[0].st, MG_ERR_REMOTE);
  ASSERT_CONTAINS(a[0].err, "rank 1");
  printf("sizes: receive %s (%s); send %s (%s)\n", mg_status_name(a[1].st), a[1].err,
         mg_status_name(a[0].st), a[0].err);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));

  late_case(0);
  late_case(1);

#ifdef MGCOMM_TESTING
  comms_new(60, comms);
  for (int r = 0; r < N; r++) a[r] = (arg_t){comms[r], r, MG_OK, "", NULL, 0, 0};
  ASSERT_OK(mg__fault_set("host.lent_copy", 1, 300, 1));
  pthread_t ab;
  ASSERT_EQ(pthread_create(&ab, NULL, abort_in_hold, comms[0]), 0);
  run_ranks(a, hold_rank);
  ASSERT_EQ(pthread_join(ab, NULL), 0);
  ASSERT_EQ(mg__fault_fired("host.lent_copy"), 1);
  mg__fault_clear(NULL);
  ASSERT_EQ(a[0].copied_at_end, 1); /* the send ended after the copy */
  ASSERT_OK(a[1].st);
  ASSERT_OK(a[0].st);
  printf("hold: an abort during the receiver's copy; the send ended after it, both succeeded\n");
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));

  for (drain_kind = 0; drain_kind < DRAIN_KINDS; drain_kind++) {
    comms_new(60, comms);
    for (int r = 0; r < N; r++) a[r] = (arg_t){comms[r], r, MG_OK, "", NULL, 0, 0};
    ASSERT_OK(mg__fault_set("host.direct_read", 1, 300, 1));
    ASSERT_EQ(pthread_create(&ab, NULL, abort_in_read, comms), 0);
    run_ranks(a, drain_rank);
    ASSERT_EQ(pthread_join(ab, NULL), 0);
    ASSERT_EQ(mg__fault_fired("host.direct_read"), 1);
    mg__fault_clear(NULL);
    const int owner = a[0].st == MG_ERR_ABORTED ? 0 : 1, reader = 1 - owner;
    ASSERT_EQ(a[owner].st, MG_ERR_ABORTED);
    ASSERT_EQ(a[owner].peer_reading, 0); /* it returned after the reads of its buffer */
    ASSERT_EQ(a[reader].st, MG_ERR_REMOTE);
    ASSERT_CONTAINS(a[reader].err, "aborted");
    printf("drain (%s): rank %d aborted while rank %d read its buffer: it returned after the "
           "reads (%s); the reader: %s\n", drain_names[drain_kind], owner,
           reader, a[owner].err, a[reader].err);
    for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  }
#endif
  return 0;
}
