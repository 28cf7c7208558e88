/*
 * host_lent_procs.c -- lent messages between processes (host_coll.c, mg__p2p_lends): a message of
 * MGCOMM_HOST_DIRECT_BYTES or more (64 KiB here, set by the test's environment; by default 256
 * KiB where process_vm_readv is fast, MGCOMM_HOST_READV_FAST=1 in `lent`) is copied by its
 * receiver straight from the sender's buffer with process_vm_readv, and claimed only once copied,
 * so that the sender never waits for a copy it cannot see. Two processes, a communicator each:
 *
 *  data  in one group each rank sends its peer 1 MiB + 12 bytes and 256 KiB (lent) and 1 KiB
 *        (through the ring) and receives the same: the data, and the lane's ring cursor, which
 *        counts only the bytes that went through the ring;
 *  hold  (test builds) the receiver's copy held 3 s by the fault point host.lent_copy, the
 *        operations' timeout 0.5 s: the send fails MG_ERR_TIMED_OUT within 2 s (a sender in the
 *        same process would have waited for the copy), then overwrites its buffer; the receive
 *        fails MG_ERR_REMOTE naming the sender's timeout.
 * With the argument `lent` only data runs; with `ring` only data, expecting every message
 * through the ring; with `slow` (MGCOMM_HOST_READV_FAST=0) as `lent` where the machine has a CPU
 * for each of the two ranks (lent from 32 KiB), else as `ring` (nothing lent by default).
 * Skipped where processes may not read each other's memory (ptrace rules: no lending then).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "loader/fault.h"
#include "test.h"

#define N 2
#define KIB ((size_t)1 << 10)
#define MSGS 3

static const size_t sizes[MSGS] = {1024 * KIB + 12, KIB, 256 * KIB};
static int lent = 1; /* 0: every message is expected through the ring */

static unsigned char pat(int rank, int msg, size_t i) {
  return (unsigned char)(i * 7 + (size_t)msg * 31 + (size_t)rank * 101);
}

static mg_comm_t *join(const mg_unique_id_t *id, int rank) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_rank(&cfg, N, id, rank, &comm));
  if (!mg__hcomm(comm)->shm.direct) SKIP("these processes may not read each other's memory");
  return comm;
}

static void data_rank(int me, void *id) {
  mg_comm_t *comm = join(id, me);
  const int peer = 1 - me;
  unsigned char *send[MSGS], *recv[MSGS];
  for (int m = 0; m < MSGS; m++) {
    send[m] = malloc(sizes[m]);
    recv[m] = calloc(sizes[m], 1);
    ASSERT(send[m] != NULL && recv[m] != NULL);
    for (size_t i = 0; i < sizes[m]; i++) send[m][i] = pat(me, m, i);
  }
  const mg__hshm_chan_t *in = mg__hshm_chan(&mg__hcomm(comm)->shm, peer, me);
  ASSERT_OK(mg_group_begin());
  for (int m = 0; m < MSGS; m++) {
    ASSERT_OK(mg_send(send[m], sizes[m], MG_UINT8, peer, comm, NULL));
    ASSERT_OK(mg_recv(recv[m], sizes[m], MG_UINT8, peer, comm, NULL));
  }
  ASSERT_OK(mg_group_end());
  for (int m = 0; m < MSGS; m++)
    for (size_t i = 0; i < sizes[m]; i++)
      if (recv[m][i] != pat(peer, m, i))
        FAIL("rank %d, message %d (%zu bytes): byte %zu is %u, expected %u", me, m, sizes[m], i,
             recv[m][i], pat(peer, m, i));
  /* Only the 1 KiB message went through the ring from the peer, or all of them, each behind its
   * header (the ring of a new communicator starts at 0; the peer may have sent before this rank
   * could look). */
  const size_t hdr = sizeof(mg__hring_hdr_t);
  ASSERT_EQ(atomic_load(&in->head), lent ? KIB + hdr : sizes[0] + sizes[1] + sizes[2] + 3 * hdr);
  for (int m = 0; m < MSGS; m++) {
    free(send[m]);
    free(recv[m]);
  }
  ASSERT_OK(mg_comm_destroy(comm));
}

#ifdef MGCOMM_TESTING
static void hold_rank(int me, void *id) {
  mg_comm_t *comm = join(id, me);
  comm->timeout_s = 0.5; /* the operation's, not the init's: the ranks meet first */
  const size_t bytes = 1024 * KIB;
  unsigned char *buf = malloc(bytes);
  ASSERT(buf != NULL);
  if (me == 0) { /* the sender */
    memset(buf, 0x5a, bytes);
    const double t0 = test_now();
    ASSERT_EQ(mg_send(buf, bytes, MG_UINT8, 1, comm, NULL), MG_ERR_TIMED_OUT);
    const double took = test_now() - t0;
    printf("hold: the send failed after %.2f s (%s)\n", took, mg_last_error());
    if (took > 2) FAIL("the send waited %.2f s for a copy held 3 s", took);
    memset(buf, 0xee, bytes); /* what the held copy may read now */
    usleep(3500 * 1000);      /* the receiver's read finds this process alive */
  } else {
    ASSERT_OK(mg__fault_set("host.lent_copy", 1, 3000, 1));
    ASSERT_EQ(mg_recv(buf, bytes, MG_UINT8, 0, comm, NULL), MG_ERR_REMOTE);
    ASSERT_EQ(mg__fault_fired("host.lent_copy"), 1); /* it took the lent path */
    ASSERT_CONTAINS(mg_last_error(), "rank 0 timed out");
    printf("hold: the receive failed: %s\n", mg_last_error());
  }
  free(buf);
  (void)mg_comm_destroy(comm); /* after a failure: MG_OK, or the failure's status again */
}
#endif

/* Runs fn as rank r of a new pair of processes, which meet through a new unique id. */
static void run_pair(void (*fn)(int r, void *id)) {
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  pid_t pids[N];
  test_fork_ranks(pids, N, fn, &id);
  test_wait_ranks(pids, N);
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (only != NULL && strcmp(only, "lent") != 0 && strcmp(only, "ring") != 0 &&
      strcmp(only, "slow") != 0)
    FAIL("usage: host_lent_procs [lent|ring|slow]");
  lent = only == NULL || strcmp(only, "lent") == 0 ||
         (strcmp(only, "slow") == 0 && sysconf(_SC_NPROCESSORS_ONLN) >= N);
  run_pair(data_rank);
  if (lent)
    printf("data: 1 MiB + 12 and 256 KiB lent, 1 KiB through the ring, both ways, in one group\n");
  else
    printf("data: 1 MiB + 12, 256 KiB and 1 KiB through the ring, both ways, in one group\n");
#ifdef MGCOMM_TESTING
  if (only == NULL) run_pair(hold_rank);
#endif
  return 0;
}
