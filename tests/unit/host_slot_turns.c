/*
 * host_slot_turns.c -- staged collectives take the two staging slots in turn, whatever mail or
 * direct collectives come between them (host_coll.c, mg__slot), and stay correct when they do.
 *
 * Each rank runs ROUNDS rounds. A round is a staged broadcast of 16 KiB from rank 0 (its root
 * copies its input into its own slot), then a mail all_reduce of 2 floats, then, between
 * processes, a reduce of 256 KiB and a scatter of 32 KiB per rank. Every result is checked.
 * Between threads, after each broadcast, rank 0 looks at its own two slots: one holds this
 * round's input, and from the second round on the other holds the round before's. Numbered by
 * step parity, as they were, every broadcast there would land on the same slot (a round is two
 * steps), so the other slot would never hold a broadcast's data.
 *
 * usage: host_slot_turns threads|procs. The test's environment keeps every copy staged
 * (MGCOMM_HOST_DIRECT_BYTES=1 GiB); "procs" also runs with MGCOMM_HOST_READV_FAST=1 and the
 * direct threshold at 64 KiB (tests/unit/host.cmake), where the reduce goes direct, its root
 * borrowing its own slot of the next slot step while the scatter after it writes into the
 * readers' slots.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "test.h"

#define ROUNDS 6
#define BCAST_COUNT 4096u     /* floats: 16 KiB, past the mails, one step of a slot */
#define REDUCE_COUNT 65536u   /* floats: 256 KiB */
#define SCATTER_COUNT 8192u   /* floats per rank: 32 KiB */

static const mg_unique_id_t *uid;
static int procs;

/* 1 when the first count floats of p all equal v. */
static int all_equal(const void *p, size_t count, float v) {
  const float *f = p;
  for (size_t i = 0; i < count; i++)
    if (f[i] != v) return 0;
  return 1;
}

static void check_slots(mg_comm_t *comm, int round) {
  const mg__hshm_t *s = &mg__hcomm(comm)->shm;
  const unsigned char *a = mg__hshm_slot(s, 0, 0), *b = mg__hshm_slot(s, 0, 1);
  const float now = (float)(round + 1), before = (float)round;
  const int in_a = all_equal(a, BCAST_COUNT, now), in_b = all_equal(b, BCAST_COUNT, now);
  ASSERT(in_a != in_b); /* this round's input is in exactly one slot */
  if (round > 0) ASSERT(all_equal(in_a ? b : a, BCAST_COUNT, before));
}

static void run(int rank) {
  mg_comm_t *comm = test_host_comm(2, uid, rank, 60);
  float *in = malloc(REDUCE_COUNT * sizeof *in), *out = malloc(REDUCE_COUNT * sizeof *out);
  ASSERT(in != NULL && out != NULL);
  for (int round = 0; round < ROUNDS; round++) {
    const float v = (float)(round + 1);
    for (size_t i = 0; i < BCAST_COUNT; i++) in[i] = rank == 0 ? v : -1.0f;
    ASSERT_OK(mg_broadcast(in, out, BCAST_COUNT, MG_FLOAT32, 0, comm, NULL));
    ASSERT(all_equal(out, BCAST_COUNT, v));
    if (rank == 0 && !procs) check_slots(comm, round);
    float two[2] = {v, (float)rank}, sum[2];
    ASSERT_OK(mg_all_reduce(two, sum, 2, MG_FLOAT32, MG_SUM, comm, NULL));
    ASSERT(sum[0] == 2 * v && sum[1] == 1.0f);
    if (!procs) continue;
    for (size_t i = 0; i < REDUCE_COUNT; i++) in[i] = (float)(rank + 1) * v + (float)(i % 7);
    ASSERT_OK(mg_reduce(in, out, REDUCE_COUNT, MG_FLOAT32, MG_SUM, 0, comm, NULL));
    if (rank == 0)
      for (size_t i = 0; i < REDUCE_COUNT; i++) ASSERT(out[i] == 3 * v + 2 * (float)(i % 7));
    for (size_t i = 0; i < 2 * SCATTER_COUNT; i++) in[i] = v * 1000 + (float)(i / SCATTER_COUNT);
    ASSERT_OK(mg_scatter(in, out, SCATTER_COUNT, MG_FLOAT32, 0, comm, NULL));
    ASSERT(all_equal(out, SCATTER_COUNT, v * 1000 + (float)rank));
  }
  ASSERT_OK(mg_comm_destroy(comm));
  free(in);
  free(out);
}

static void run_proc(int rank, void *arg) {
  (void)arg;
  run(rank);
}

static void *run_thread(void *arg) {
  run((int)(intptr_t)arg);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "threads") != 0 && strcmp(argv[1], "procs") != 0))
    FAIL("usage: host_slot_turns threads|procs");
  procs = strcmp(argv[1], "procs") == 0;
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  uid = &id;
  if (procs) {
    pid_t pids[2];
    test_fork_ranks(pids, 2, run_proc, NULL);
    test_wait_ranks(pids, 2);
  } else {
    pthread_t t[2];
    for (int r = 0; r < 2; r++)
      ASSERT_EQ(pthread_create(&t[r], NULL, run_thread, (void *)(intptr_t)r), 0);
    for (int r = 0; r < 2; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  }
  printf("host_slot_turns %s: %d rounds, results right%s\n",
         argv[1], ROUNDS, procs ? "" : ", the broadcasts taking the slots in turn");
  return 0;
}
