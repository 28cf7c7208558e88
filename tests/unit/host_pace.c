/*
 * host_pace.c -- the slot stores' state (src/backend/host/host_pace.c): each rank's vote from its
 * timed stores, the agreement, and the collectives it sends direct while slow, with every
 * result right across the changes.
 *
 * usage: host_pace logic|slow|off
 *  logic: the rules on a bare mg__hpace_t: which steps are timed (warm), 6 slow measurements of
 *         the last 8 to vote slow and two fast in a row to vote fast again, too few bytes not
 *         voting, while slow the last 3 of every 128 liftable collectives staying staged, and a
 *         rank that measured nothing in those 3 withdrawing its slow vote.
 *  slow:  2 processes with MGCOMM_HOST_PACE_GBPS=1e6 (every timed store is slow), reading once
 *         taken as slow (MGCOMM_HOST_READV_FAST=0, where the state is followed) and every copy
 *         staged by the thresholds (MGCOMM_HOST_DIRECT_BYTES=1 GiB): rounds of every collective
 *         that can be lifted, each result checked. Both ranks find the slow state within the
 *         first two rounds, and from then on the collectives go direct but for the probes (counted
 *         in the state); then each rank takes every store as fast (gbps lowered in its own
 *         state), and at the next probes both go back to the slots. Every output is cleared
 *         before its call.
 *  off:   the same rounds with MGCOMM_HOST_PACE_GBPS=0: never slow, every collective staged.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "test.h"

#define N 16384u /* floats per rank and piece: 64 KiB, one slot step, past the mails */
#define KINDS 8  /* collectives per round, each liftable between 2 processes */
#define SMALL 2048u /* floats of the one-step reduce: 8 KiB, past the mails */

static const mg_unique_id_t *uid;
static int slow_mode;

/* One warm collective's stores of 64 KiB, slow (1 GB/s) or fast (32 GB/s) against 5 GB/s. */
static void measure(mg__hpace_t *p, int slow) {
  mg__hpace_filled(p, 0, 65536, slow ? 64e-6 : 2e-6);
  mg__hpace_ended(p, 0);
}

static void check_logic(void) {
  mg__hpace_t p;
  memset(&p, 0, sizeof p);
  p.gbps = 5;
  /* Slots nobody filled, or filled before a direct collective, are cold. */
  ASSERT(!mg__hpace_warm(&p, 0) && !mg__hpace_warm(&p, 1));
  mg__hpace_filled(&p, 0, 0, 0);
  ASSERT(mg__hpace_warm(&p, 2) && !mg__hpace_warm(&p, 1));
  mg__hpace_ended(&p, 1);
  ASSERT(!mg__hpace_warm(&p, 2));
  /* 64 KiB in 64 us (1 GB/s) is slow, in 2 us fast. Slow once 6 of the last 8 were. */
  const int seq[] = {1, 1, 0, 1, 1, 0, 1}; /* 5 of 7 */
  for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) measure(&p, seq[i]);
  ASSERT_EQ(p.vote, 0);
  measure(&p, 1); /* 6 of 8 */
  ASSERT_EQ(p.vote, 1);
  /* Too few bytes: no vote; one fast measurement changes nothing, two in a row vote fast. */
  mg__hpace_filled(&p, 0, 4096, 1e-3);
  mg__hpace_ended(&p, 0);
  measure(&p, 0);
  measure(&p, 1);
  measure(&p, 0);
  ASSERT_EQ(p.vote, 1);
  measure(&p, 0);
  ASSERT_EQ(p.vote, 0);
  /* The slow ones before count no more: 5 new ones are not enough. */
  for (int i = 0; i < 5; i++) measure(&p, 1);
  ASSERT_EQ(p.vote, 0);
  measure(&p, 1);
  ASSERT_EQ(p.vote, 1);
  measure(&p, 0);
  measure(&p, 0);
  ASSERT_EQ(p.vote, 0);
  /* Lifting: never while fast; while slow 125 of every 128, the last 3 staged. */
  ASSERT_EQ(mg__hpace_lift(&p), 0);
  mg__hpace_agree(&p, 1);
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < 125; i++) ASSERT_EQ(mg__hpace_lift(&p), 1);
    for (int i = 0; i < 3; i++) ASSERT_EQ(mg__hpace_lift(&p), 0);
  }
  mg__hpace_agree(&p, 0);
  ASSERT_EQ(mg__hpace_lift(&p), 0);
  /* A rank that measured nothing in a window's probes withdraws its slow vote; one that
   * measured slow there keeps it. */
  for (int measures = 0; measures < 2; measures++) {
    p.vote = 1;
    mg__hpace_agree(&p, 1);
    for (int i = 0; i < 125; i++) {
      ASSERT_EQ(mg__hpace_lift(&p), 1);
      mg__hpace_ended(&p, 1);
    }
    for (int i = 0; i < 3; i++) {
      ASSERT_EQ(mg__hpace_lift(&p), 0);
      if (measures && i == 2) measure(&p, 1);
      else mg__hpace_ended(&p, 0);
    }
    ASSERT_EQ(p.vote, measures);
    mg__hpace_agree(&p, 0);
  }
  /* Off: nothing is timed. */
  p.gbps = 0;
  mg__hpace_filled(&p, 0, 0, 0);
  ASSERT(!mg__hpace_warm(&p, 0));
}

static float val(int rank, int round, size_t i) {
  return (float)(rank * 1000 + round) + (float)(i % 13);
}

/* 1 when out holds rank 0's then rank 1's n values of round. */
static int gathered(const float *out, int round, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (out[i] != val(0, round, i) || out[n + i] != val(1, round, i)) return 0;
  return 1;
}

/* One round: every liftable collective of 2 ranks, 64 KiB per rank or piece (and a one-step
 * reduce), each result checked. */
static void round_of_all(mg_comm_t *comm, int rank, int round, float *in, float *out) {
  const int peer = 1 - rank;
  for (size_t i = 0; i < 2 * N; i++) in[i] = val(rank, round, i);
#define CLEAR() memset(out, 0xff, 2 * N * sizeof *out) /* NaN: no call finds its result there */
  CLEAR();
  ASSERT_OK(mg_all_gather(in, out, N, MG_FLOAT32, comm, NULL));
  ASSERT(gathered(out, round, N));
  CLEAR();
  ASSERT_OK(mg_broadcast(in, out, N, MG_FLOAT32, 1, comm, NULL));
  for (size_t i = 0; i < N; i++) ASSERT(out[i] == val(1, round, i));
  CLEAR();
  ASSERT_OK(mg_scatter(in, out, N, MG_FLOAT32, 0, comm, NULL));
  for (size_t i = 0; i < N; i++) ASSERT(out[i] == val(0, round, (size_t)rank * N + i));
  CLEAR();
  ASSERT_OK(mg_gather(in, out, N, MG_FLOAT32, 0, comm, NULL));
  if (rank == 0) ASSERT(gathered(out, round, N));
  CLEAR();
  ASSERT_OK(mg_all_to_all(in, out, N, MG_FLOAT32, comm, NULL));
  for (size_t i = 0; i < N; i++)
    ASSERT(out[(size_t)peer * N + i] == val(peer, round, (size_t)rank * N + i));
  const size_t counts[2] = {N, N}, displs[2] = {0, N};
  CLEAR();
  ASSERT_OK(mg_all_to_allv(in, counts, displs, out, counts, displs, MG_FLOAT32, comm, NULL));
  for (size_t i = 0; i < N; i++)
    ASSERT(out[(size_t)peer * N + i] == val(peer, round, (size_t)rank * N + i));
  CLEAR();
  ASSERT_OK(mg_reduce(in, out, 2 * N, MG_FLOAT32, MG_SUM, 0, comm, NULL));
  if (rank == 0)
    for (size_t i = 0; i < 2 * N; i++) ASSERT(out[i] == val(0, round, i) + val(1, round, i));
  CLEAR();
  ASSERT_OK(mg_reduce(in, out, SMALL, MG_FLOAT32, MG_SUM, 1, comm, NULL));
  if (rank == 1)
    for (size_t i = 0; i < SMALL; i++) ASSERT(out[i] == val(0, round, i) + val(1, round, i));
#undef CLEAR
}

static void run(int rank, void *arg) {
  (void)arg;
  mg_comm_t *comm = test_host_comm(2, uid, rank, 60);
  mg__hcomm_t *hc = mg__hcomm(comm);
  if (!hc->shm.direct) SKIP("the ranks cannot read each other's memory here");
  if (!hc->shm.hdr->paced) SKIP("fewer CPUs than ranks here: the stores are not timed");
  float *in = malloc(2 * N * sizeof *in), *out = malloc(2 * N * sizeof *out);
  ASSERT(in != NULL && out != NULL);
  /* The first round: a rank votes slow at its sixth warm measurement (the eighth collective),
   * and all agree at the next match. */
  round_of_all(comm, rank, 0, in, out);
  ASSERT_EQ(hc->pace.slow, 0);
  round_of_all(comm, rank, 1, in, out);
  ASSERT_EQ(hc->pace.slow, slow_mode);
  /* Collectives that read their peers' buffers directly (an all_to_allv whose ranks lend
   * counts too), on this rank. */
  uint64_t directs0 = hc->pace.directs;
  const int rounds = 40; /* 312 more collectives: two windows of 128 and more */
  for (int round = 2; round <= rounds; round++) round_of_all(comm, rank, round, in, out);
  const uint64_t calls = (uint64_t)(rounds - 1) * KINDS, direct = hc->pace.directs - directs0;
  if (!slow_mode) {
    ASSERT_EQ(hc->pace.slow, 0);
    ASSERT_EQ(direct, 0);
  } else {
    ASSERT_EQ(hc->pace.slow, 1);
    ASSERT_LE(direct, calls - 6); /* the probes of two windows at least stayed staged */
    ASSERT_GE(direct, calls - 12);
    hc->pace.gbps = 1e-9; /* every store fast from now on: the next two probes vote so */
    for (int round = rounds + 1; round <= 3 * rounds; round++)
      round_of_all(comm, rank, round, in, out);
    ASSERT_EQ(hc->pace.slow, 0);
    directs0 = hc->pace.directs;
    round_of_all(comm, rank, 3 * rounds + 1, in, out);
    ASSERT_EQ(hc->pace.directs, directs0);
  }
  ASSERT_OK(mg_comm_destroy(comm));
  free(in);
  free(out);
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: host_pace logic|slow|off");
  if (strcmp(argv[1], "logic") == 0) {
    check_logic();
    printf("host_pace logic: votes, warm steps and lifting as the rules say\n");
    return 0;
  }
  if (strcmp(argv[1], "slow") != 0 && strcmp(argv[1], "off") != 0)
    FAIL("usage: host_pace logic|slow|off");
  slow_mode = strcmp(argv[1], "slow") == 0;
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  uid = &id;
  pid_t pids[2];
  test_fork_ranks(pids, 2, run, NULL);
  test_wait_ranks(pids, 2);
  printf("host_pace %s: every result right, %s\n", argv[1],
         slow_mode ? "slow found, collectives direct but the probes, then staged again"
                   : "every collective staged");
  return 0;
}
