/*
 * test_host_comm.c -- communicator management on the host backend: split (with keys and
 * MG_SPLIT_NOCOLOR, nested), shrink (also of a communicator in the error state), finalize,
 * queries; operations on the children and on the parent afterwards. Thread ranks and process
 * ranks.
 *
 *   test_host_comm threads|procs
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define N 4
static mg_unique_id_t uid;
static int use_threads;

/* Sum over the ranks of comm of (value), checked against want. */
static void check_sum(mg_comm_t *comm, int64_t value, int64_t want) {
  int64_t out = -1;
  ASSERT_OK(mg_all_reduce(&value, &out, 1, MG_INT64, MG_SUM, comm, NULL));
  ASSERT_EQ(out, want);
}

static void rank_main(int r) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 20;
  mg_comm_t *world;
  ASSERT_OK(mg_comm_init_rank(&cfg, N, &uid, r, &world));

  /* Queries. */
  int v;
  mg_backend_t be;
  mg_comm_state_t state;
  mg_status_t async;
  ASSERT_OK(mg_comm_rank(world, &v));
  ASSERT_EQ(v, r);
  ASSERT_OK(mg_comm_size(world, &v));
  ASSERT_EQ(v, N);
  ASSERT_OK(mg_comm_device(world, &v));
  ASSERT_EQ(v, -1);
  ASSERT_OK(mg_comm_backend(world, &be));
  ASSERT_EQ(be, MG_BACKEND_HOST);
  ASSERT_OK(mg_comm_state(world, &state));
  ASSERT_EQ(state, MG_COMM_READY);
  ASSERT_OK(mg_comm_async_error(world, &async));
  ASSERT_EQ(async, MG_OK);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_rank(world, NULL));

  /* Split by parity, keys reversing the order: child rank = position from the end. */
  mg_comm_t *half;
  ASSERT_OK(mg_comm_split(world, r % 2, -r, NULL, &half));
  ASSERT(half != NULL);
  ASSERT_OK(mg_comm_size(half, &v));
  ASSERT_EQ(v, 2);
  ASSERT_OK(mg_comm_rank(half, &v));
  ASSERT_EQ(v, r < 2 ? 1 : 0);
  check_sum(half, r, r % 2 == 0 ? 0 + 2 : 1 + 3);
  /* The parent still works, between operations on the child. */
  check_sum(world, 1, N);
  check_sum(half, 10, 20);

  /* Nested split of the child, everybody alone: a 1-rank communicator. */
  mg_comm_t *solo;
  ASSERT_OK(mg_comm_split(half, r, 0, NULL, &solo));
  ASSERT_OK(mg_comm_size(solo, &v));
  ASSERT_EQ(v, 1);
  check_sum(solo, 7, 7);

  /* MG_SPLIT_NOCOLOR: rank 3 joins nothing, and gets NULL with MG_OK. */
  mg_comm_t *three = (mg_comm_t *)&three; /* a non-NULL value that must be overwritten */
  ASSERT_OK(mg_comm_split(world, r == 3 ? MG_SPLIT_NOCOLOR : 5, r, NULL, &three));
  if (r == 3) {
    ASSERT(three == NULL);
  } else {
    ASSERT_OK(mg_comm_size(three, &v));
    ASSERT_EQ(v, 3);
    check_sum(three, r, 0 + 1 + 2);
  }
  mg_comm_t *unused;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_split(world, -2, 0, NULL, &unused));

  /* Shrink: rank 1 leaves; the others renumber in their old order. */
  mg_comm_t *shrunk = NULL;
  int excl[1] = {1};
  if (r != 1) {
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_shrink(world, (int[]){r}, 1, NULL, &shrunk));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_shrink(world, (int[]){N}, 1, NULL, &shrunk));
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_shrink(world, (int[]){1, 1}, 2, NULL, &shrunk));
    ASSERT_OK(mg_comm_shrink(world, excl, 1, NULL, &shrunk));
    ASSERT_OK(mg_comm_size(shrunk, &v));
    ASSERT_EQ(v, N - 1);
    ASSERT_OK(mg_comm_rank(shrunk, &v));
    ASSERT_EQ(v, r < 1 ? r : r - 1);
    check_sum(shrunk, r, 0 + 2 + 3);
  }

  /* Shrink of a communicator in the error state: rank 2 aborts its copy of `shrunk`; the
   * survivors' next operation fails naming it; they shrink it away and carry on. */
  if (r != 1) {
    if (r == 2) {
      ASSERT_OK(mg_comm_abort(shrunk));
      ASSERT_OK(mg_comm_state(shrunk, &state));
      ASSERT_EQ(state, MG_COMM_ABORTED);
      ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(&v, &v, 1, MG_INT32, MG_SUM, shrunk, NULL));
    } else {
      int64_t one = 1, out;
      mg_status_t st = mg_all_reduce(&one, &out, 1, MG_INT64, MG_SUM, shrunk, NULL);
      ASSERT_EQ(st, MG_ERR_REMOTE);
      ASSERT_CONTAINS(mg_last_error(), "rank 1"); /* rank 2 of world is rank 1 of shrunk */
      ASSERT_OK(mg_comm_state(shrunk, &state));
      ASSERT_EQ(state, MG_COMM_ERROR);
      ASSERT_OK(mg_comm_async_error(shrunk, &async));
      ASSERT_EQ(async, MG_ERR_REMOTE);
      char buf[512];
      ASSERT(mg_comm_last_error(shrunk, buf, sizeof buf) > 0);
      ASSERT_CONTAINS(buf, "rank 1");
      mg_comm_t *two;
      ASSERT_OK(mg_comm_shrink(shrunk, (int[]){1}, 1, NULL, &two));
      ASSERT_OK(mg_comm_size(two, &v));
      ASSERT_EQ(v, 2);
      check_sum(two, r, 0 + 3);
      ASSERT_OK(mg_comm_finalize(two));
      ASSERT_OK(mg_comm_destroy(two));
    }
    ASSERT_OK(mg_comm_destroy(shrunk));
  }

  /* Finalize: collective, then only queries and destroy. */
  ASSERT_OK(mg_comm_finalize(half));
  ASSERT_OK(mg_comm_state(half, &state));
  ASSERT_EQ(state, MG_COMM_FINALIZED);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(&v, &v, 1, MG_INT32, MG_SUM, half, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_finalize(half));
  ASSERT_OK(mg_comm_destroy(half));
  ASSERT_OK(mg_comm_destroy(solo));
  ASSERT_OK(mg_comm_destroy(three)); /* NULL for rank 3 */
  ASSERT_OK(mg_comm_destroy(world));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_rank(world, &v)); /* destroyed handle */
}

static void *thread_main(void *arg) {
  rank_main((int)(intptr_t)arg);
  return NULL;
}

int main(int argc, char **argv) {
  use_threads = argc < 2 || strcmp(argv[1], "procs") != 0;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
  if (use_threads) {
    pthread_t t[N];
    for (int r = 0; r < N; r++) ASSERT_EQ(pthread_create(&t[r], NULL, thread_main, (void *)(intptr_t)r), 0);
    for (int r = 0; r < N; r++) pthread_join(t[r], NULL);
  } else {
    pid_t pids[N];
    for (int r = 0; r < N; r++) {
      pids[r] = fork();
      ASSERT(pids[r] >= 0);
      if (pids[r] == 0) {
        rank_main(r);
        _exit(0);
      }
    }
    test_wait_ranks(pids, N);
  }
  printf("communicator management, %s: ok\n", use_threads ? "threads" : "processes");
  return 0;
}
