/*
 * boot_job.c -- one rank of a multi-process job made with mg_comm_init_env on the host backend,
 * started by `mgcomm launch` or by mpirun (tests/fault/boot.cmake, boot_mpirun.sh).
 *
 *   boot_job all        every collective (all-reduce, broadcast, reduce, all-gather,
 *                       reduce-scatter, all-to-all, all-to-allv, gather, scatter, send/recv, a
 *                       group of several), each result checked; a second communicator alive at
 *                       the same time; then all destroyed and a third one made
 *   boot_job badsize    the last rank claims a different world size: it must get
 *                       MG_ERR_INVALID_ARGUMENT naming the variable; the others time out
 *   boot_job duprank    the last rank claims rank 1 as well: one of the two must be told the rank
 *                       is claimed twice (boot_launch.sh counts the messages); the others fail
 *                       by their deadline
 *   boot_job norank0    rank 0 never calls init: the others must get MG_ERR_TIMED_OUT at the
 *                       deadline (MGCOMM_TIMEOUT), naming the store
 *   boot_job logline    with stderr fully buffered and text of its own pending there, makes
 *                       mgcomm log a warning (MGCOMM_NOT_A_PARAM must be set): the line must
 *                       reach stderr at once and in one write (boot_launch_stop.sh lines)
 *   boot_job --free-port   prints a free TCP port of 127.0.0.1 (for mpirun's MGCOMM_STORE)
 *
 * Each rank exits 0 when what happened is what its mode expects; an assertion aborts it, and the
 * launcher then fails the job.
 */
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define C 1000 /* elements per rank and operation */

static int me, n;

static int32_t val(int r, int i) { return (int32_t)(r * 100000 + i); }

static mg_comm_t *init_host(double timeout_s) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout_s;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_env(&cfg, &comm));
  ASSERT(comm != NULL);
  int v;
  ASSERT_OK(mg_comm_rank(comm, &v));
  ASSERT_EQ(v, me);
  ASSERT_OK(mg_comm_size(comm, &v));
  ASSERT_EQ(v, n);
  mg_backend_t be;
  ASSERT_OK(mg_comm_backend(comm, &be));
  ASSERT_EQ(be, MG_BACKEND_HOST);
  return comm;
}

static void every_collective(mg_comm_t *comm) {
  int32_t *send = calloc((size_t)n * C * 4, sizeof *send);
  int32_t *recv = calloc((size_t)n * C * 4, sizeof *recv);
  ASSERT(send != NULL && recv != NULL);
  int64_t tri = 100000LL * n * (n - 1) / 2; /* sum over r of r * 100000 */

  /* all-reduce, out of place and in place */
  for (int i = 0; i < C; i++) send[i] = val(me, i);
  ASSERT_OK(mg_all_reduce(send, recv, C, MG_INT32, MG_SUM, comm, NULL));
  for (int i = 0; i < C; i++) ASSERT_EQ(recv[i], tri + (int64_t)n * i);
  ASSERT_OK(mg_all_reduce(send, send, C, MG_INT32, MG_MAX, comm, NULL));
  for (int i = 0; i < C; i++) ASSERT_EQ(send[i], val(n - 1, i));
  float f = (float)(me + 1), favg = 0;
  ASSERT_OK(mg_all_reduce(&f, &favg, 1, MG_FLOAT32, MG_AVG, comm, NULL));
  ASSERT(favg > (float)(n + 1) / 2 - 1e-5f && favg < (float)(n + 1) / 2 + 1e-5f);

  /* broadcast from rank 1 % n */
  int root = 1 % n;
  for (int i = 0; i < C; i++) send[i] = val(me, i), recv[i] = -1;
  ASSERT_OK(mg_broadcast(send, recv, C, MG_INT32, root, comm, NULL));
  for (int i = 0; i < C; i++) ASSERT_EQ(recv[i], val(root, i));

  /* reduce (min) to rank 2 % n */
  root = 2 % n;
  for (int i = 0; i < C; i++) recv[i] = -1;
  ASSERT_OK(mg_reduce(send, recv, C, MG_INT32, MG_MIN, root, comm, NULL));
  if (me == root)
    for (int i = 0; i < C; i++) ASSERT_EQ(recv[i], val(0, i));

  /* all-gather */
  ASSERT_OK(mg_all_gather(send, recv, C, MG_INT32, comm, NULL));
  for (int q = 0; q < n; q++)
    for (int i = 0; i < C; i++) ASSERT_EQ(recv[(size_t)q * C + i], val(q, i));

  /* reduce-scatter */
  for (int j = 0; j < n * C; j++) send[j] = val(me, j);
  ASSERT_OK(mg_reduce_scatter(send, recv, C, MG_INT32, MG_SUM, comm, NULL));
  for (int i = 0; i < C; i++) ASSERT_EQ(recv[i], tri + (int64_t)n * (me * C + i));

  /* all-to-all */
  ASSERT_OK(mg_all_to_all(send, recv, C, MG_INT32, comm, NULL));
  for (int q = 0; q < n; q++)
    for (int i = 0; i < C; i++) ASSERT_EQ(recv[(size_t)q * C + i], val(q, me * C + i));

  /* all-to-allv: rank a sends (a + 2b) % 4 + 1 elements to rank b */
  size_t *v = calloc(4 * (size_t)n, sizeof *v);
  ASSERT(v != NULL);
  size_t *sc = v, *sd = v + n, *rc = v + 2 * n, *rd = v + 3 * n;
  size_t so = 0, ro = 0;
  for (int p = 0; p < n; p++) {
    sc[p] = (size_t)((me + 2 * p) % 4 + 1);
    sd[p] = so;
    so += sc[p];
    rc[p] = (size_t)((p + 2 * me) % 4 + 1);
    rd[p] = ro;
    ro += rc[p];
    for (size_t j = 0; j < sc[p]; j++) send[sd[p] + j] = val(me, p * 1000 + (int)j);
  }
  ASSERT_OK(mg_all_to_allv(send, sc, sd, recv, rc, rd, MG_INT32, comm, NULL));
  for (int q = 0; q < n; q++)
    for (size_t j = 0; j < rc[q]; j++) ASSERT_EQ(recv[rd[q] + j], val(q, me * 1000 + (int)j));
  free(v);

  /* gather to rank 3 % n */
  root = 3 % n;
  for (int i = 0; i < C; i++) send[i] = val(me, i);
  ASSERT_OK(mg_gather(send, recv, C, MG_INT32, root, comm, NULL));
  if (me == root)
    for (int q = 0; q < n; q++)
      for (int i = 0; i < C; i++) ASSERT_EQ(recv[(size_t)q * C + i], val(q, i));

  /* scatter from rank 0 */
  for (int j = 0; j < n * C; j++) send[j] = val(me, j);
  ASSERT_OK(mg_scatter(send, recv, C, MG_INT32, 0, comm, NULL));
  for (int i = 0; i < C; i++) ASSERT_EQ(recv[i], val(0, me * C + i));

  /* send/recv around the ring, in a group */
  int next = (me + 1) % n, prev = (me + n - 1) % n;
  for (int i = 0; i < C; i++) send[i] = val(me, i);
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_send(send, C, MG_INT32, next, comm, NULL));
  ASSERT_OK(mg_recv(recv, C, MG_INT32, prev, comm, NULL));
  ASSERT_OK(mg_group_end());
  for (int i = 0; i < C; i++) ASSERT_EQ(recv[i], val(prev, i));

  /* a group of several collectives */
  int64_t a = me, b = -1;
  int32_t c = me == 0 ? 42 : 0;
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_all_reduce(&a, &b, 1, MG_INT64, MG_SUM, comm, NULL));
  ASSERT_OK(mg_broadcast(&c, &c, 1, MG_INT32, 0, comm, NULL));
  ASSERT_OK(mg_group_end());
  ASSERT_EQ(b, (int64_t)n * (n - 1) / 2);
  ASSERT_EQ(c, 42);
  free(send);
  free(recv);
}

static int sum_check(mg_comm_t *comm, int64_t x) {
  int64_t out = -1;
  ASSERT_OK(mg_all_reduce(&x, &out, 1, MG_INT64, MG_SUM, comm, NULL));
  return out == (int64_t)n * x;
}

static void mode_all(void) {
  mg_comm_t *world = init_host(60);
  every_collective(world);
  /* a second communicator made the same way, alive with the first */
  mg_comm_t *second = init_host(60);
  ASSERT(sum_check(second, 7));
  ASSERT(sum_check(world, 3));
  ASSERT_OK(mg_comm_destroy(second));
  ASSERT_OK(mg_comm_destroy(world));
  /* after everything is destroyed (rank 0's store closed), a new one; a rank that reaches the old
   * store before it closes must find the new one */
  mg_comm_t *again = init_host(60);
  ASSERT(sum_check(again, 11));
  every_collective(again);
  ASSERT_OK(mg_comm_destroy(again));
  printf("rank %d of %d: every collective ok, twice; three communicators from the environment\n",
         me, n);
}

/* A failure every rank expects: which status, and a word of its message. */
static void expect_failure(double timeout_s, mg_status_t want, const char *word) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = timeout_s;
  mg_comm_t *comm = (mg_comm_t *)&comm;
  double t0 = test_now();
  mg_status_t st = mg_comm_init_env(&cfg, &comm);
  double took = test_now() - t0;
  printf("rank %d: mg_comm_init_env: %s after %.2f s: %s\n", me, mg_status_name(st), took,
         mg_last_error());
  ASSERT(comm == (mg_comm_t *)&comm); /* never written on failure */
  if (want == MG_ERR_TIMED_OUT) {
    /* the others of a broken job end at their deadline: timed out, or told by rank 0's store */
    ASSERT(st == MG_ERR_TIMED_OUT || st == MG_ERR_REMOTE);
    ASSERT_LT_F(took, 2 * timeout_s + 2);
  } else {
    ASSERT_STATUS(want, st);
  }
  if (word) ASSERT_CONTAINS(mg_last_error(), word);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--free-port") == 0) {
    mg_store_t *s;
    if (mg_store_serve("127.0.0.1:0", "probe", 5, &s) != MG_OK) return 1;
    char a[64];
    ASSERT_OK(mg_store_address(s, a, sizeof a));
    ASSERT_OK(mg_store_close(s));
    printf("%s\n", strrchr(a, ':') + 1);
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: boot_job all|badsize|duprank|norank0|logline|--free-port\n");
    return 2;
  }
  /* The rank and size as the launcher gave them, before mgcomm reads them. */
  const char *r = getenv("MGCOMM_RANK") ? getenv("MGCOMM_RANK") : getenv("OMPI_COMM_WORLD_RANK");
  const char *s = getenv("MGCOMM_WORLD_SIZE") ? getenv("MGCOMM_WORLD_SIZE")
                                              : getenv("OMPI_COMM_WORLD_SIZE");
  if (r == NULL || s == NULL) SKIP("not started by mgcomm launch or mpirun");
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines reach the launcher as they are printed */
  me = atoi(r);
  n = atoi(s);
  const char *mode = argv[1];
  if (strcmp(mode, "all") == 0) {
    mode_all();
  } else if (strcmp(mode, "badsize") == 0) {
    if (me == n - 1) {
      char b[16];
      snprintf(b, sizeof b, "%d", n + 1);
      setenv("MGCOMM_WORLD_SIZE", b, 1); /* read by mgcomm at its first use, below */
      expect_failure(3, MG_ERR_INVALID_ARGUMENT, "MGCOMM_WORLD_SIZE");
    } else {
      expect_failure(3, MG_ERR_TIMED_OUT, NULL);
    }
  } else if (strcmp(mode, "duprank") == 0) {
    if (me == n - 1) setenv("MGCOMM_RANK", "1", 1);
    mg_config_t cfg = MG_CONFIG_INIT;
    cfg.backend = MG_BACKEND_HOST;
    cfg.timeout_s = 3;
    mg_comm_t *comm = NULL;
    mg_status_t st = mg_comm_init_env(&cfg, &comm);
    printf("rank %d: mg_comm_init_env: %s: %s\n", me, mg_status_name(st), mg_last_error());
    ASSERT(st == MG_ERR_INVALID_ARGUMENT || st == MG_ERR_TIMED_OUT || st == MG_ERR_REMOTE);
  } else if (strcmp(mode, "logline") == 0) {
    static char buf[1 << 16];
    setvbuf(stderr, buf, _IOFBF, sizeof buf);
    fprintf(stderr, "boot_job: rank %d, pending; ", me);
    mg_param_info_t info;
    ASSERT_OK(mg_param_get(0, &info)); /* the parameters' first use: their warnings are logged */
    fprintf(stderr, "done\n");
  } else if (strcmp(mode, "norank0") == 0) {
    if (me == 0) {
      sleep(4); /* serves nothing; the others must not wait for ever */
    } else {
      expect_failure(2, MG_ERR_TIMED_OUT, "127.0.0.1");
    }
  } else {
    fprintf(stderr, "boot_job: unknown mode '%s'\n", mode);
    return 2;
  }
  return 0;
}
