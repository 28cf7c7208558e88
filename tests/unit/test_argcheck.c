/*
 * test_argcheck.c -- bad input is a status, never a crash, and nothing is posted (contract 2):
 * NULL, destroyed and foreign handles; count * size overflow; NULL buffers; unknown dtype or op;
 * root or peer out of range; a custom op of another communicator or dtype; operations on an
 * aborted or finalized communicator; a group end without a begin; illegal overlaps; bad
 * configs and ids. Each error names the function and the argument. Afterwards the two ranks run
 * real collectives: had anything been posted, their sequence numbers would disagree.
 */
#include <pthread.h>
#include <stdint.h>

#include "test.h"

static mg_comm_t *comms[2];

#define EXPECT(st, call, fn, what)                 \
  do {                                             \
    ASSERT_STATUS(st, call);                       \
    ASSERT_CONTAINS(mg_last_error(), fn);          \
    ASSERT_CONTAINS(mg_last_error(), what);        \
  } while (0)

static void *sum_thread(void *arg) {
  int r = (int)(intptr_t)arg;
  for (int i = 0; i < 3; i++) {
    int32_t v = r + 1, out = 0;
    ASSERT_OK(mg_all_reduce(&v, &out, 1, MG_INT32, MG_SUM, comms[r], NULL));
    ASSERT_EQ(out, 3);
  }
  return NULL;
}

static void both_ranks_still_agree(void) {
  pthread_t t[2];
  for (int r = 0; r < 2; r++) pthread_create(&t[r], NULL, sum_thread, (void *)(intptr_t)r);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
}

int main(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 10;
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  mg_comm_t *c = comms[0];
  float a[64], b[64];
  memset(a, 0, sizeof a);

  /* Handles. */
  EXPECT(MG_ERR_INVALID_USAGE, mg_all_reduce(a, b, 1, MG_FLOAT32, MG_SUM, NULL, NULL),
         "mg_all_reduce", "comm is NULL");
  uint64_t junk[64] = {0};
  EXPECT(MG_ERR_INVALID_USAGE, mg_broadcast(a, b, 1, MG_FLOAT32, 0, (mg_comm_t *)junk, NULL),
         "mg_broadcast", "not a live communicator");
  EXPECT(MG_ERR_INVALID_USAGE, mg_comm_finalize((mg_comm_t *)junk), "mg_comm_finalize",
         "not a live communicator");
  ASSERT_OK(mg_comm_destroy(NULL));

  /* Counts, buffers, dtypes, ops, roots, peers. */
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, SIZE_MAX / 2, MG_FLOAT32, MG_SUM, c, NULL),
         "mg_all_reduce", "overflows");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_gather(a, b, SIZE_MAX / 2 + 1, MG_INT8, c, NULL),
         "mg_all_gather", "overflows");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(NULL, b, 4, MG_FLOAT32, MG_SUM, c, NULL),
         "mg_all_reduce", "send is NULL");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, NULL, 4, MG_FLOAT32, MG_SUM, c, NULL),
         "mg_all_reduce", "recv is NULL");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_reduce(a, NULL, 4, MG_FLOAT32, MG_SUM, 0, c, NULL),
         "mg_reduce", "recv is NULL"); /* rank 0 is the root: it needs recv */
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, 4, (mg_dtype_t)12, MG_SUM, c, NULL),
         "mg_all_reduce", "dtype 12");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, 4, (mg_dtype_t)-1, MG_SUM, c, NULL),
         "mg_all_reduce", "dtype -1");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, 4, MG_FLOAT32, (mg_op_t)-3, c, NULL),
         "mg_all_reduce", "op -3");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_reduce_scatter(a, b, 4, MG_FLOAT32, (mg_op_t)1000, c, NULL),
         "mg_reduce_scatter", "op 1000");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_broadcast(a, b, 4, MG_FLOAT32, 2, c, NULL), "mg_broadcast",
         "root 2");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_gather(a, b, 4, MG_FLOAT32, -1, c, NULL), "mg_gather",
         "root -1");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_send(a, 4, MG_FLOAT32, 5, c, NULL), "mg_send", "peer 5");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_recv(b, 4, MG_FLOAT32, -1, c, NULL), "mg_recv", "peer -1");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, 4, MG_FLOAT32, MG_SUM, c, (mg_stream_t)a),
         "mg_all_reduce", "stream");
  size_t cnt[2] = {1, 1}, dsp[2] = {0, 1};
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_to_allv(a, NULL, dsp, b, cnt, dsp, MG_FLOAT32, c, NULL),
         "mg_all_to_allv", "sendcounts is NULL");
  size_t cnt2[2] = {2, 1};
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_to_allv(a, cnt2, dsp, b, cnt, dsp, MG_FLOAT32, c, NULL),
         "mg_all_to_allv", "sendcounts[0]");
  size_t huge[2] = {SIZE_MAX, 0};
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_to_allv(a, cnt, huge, b, cnt, dsp, MG_FLOAT32, c, NULL),
         "mg_all_to_allv", "overflows");

  /* Overlaps other than the in-place forms. */
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, a + 1, 4, MG_FLOAT32, MG_SUM, c, NULL),
         "mg_all_reduce", "overlap");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_gather(a + 1, a, 4, MG_FLOAT32, c, NULL),
         "mg_all_gather", "overlap"); /* in place would be send == recv + 0 on rank 0 */
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_reduce_scatter(a, a + 5, 4, MG_FLOAT32, MG_SUM, c, NULL),
         "mg_reduce_scatter", "overlap");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_to_all(a, a, 4, MG_FLOAT32, c, NULL), "mg_all_to_all",
         "overlap");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_scatter(a, a + 1, 4, MG_FLOAT32, 0, c, NULL), "mg_scatter",
         "overlap");

  /* Custom ops: of another communicator, of another dtype, destroyed, built-in. */
  float scalar = 2;
  mg_op_t mine, theirs;
  ASSERT_OK(mg_op_create_premul_sum(c, &scalar, MG_FLOAT32, MG_SCALAR_HOST_IMMEDIATE, &mine));
  ASSERT_OK(mg_op_create_premul_sum(comms[1], &scalar, MG_FLOAT32, MG_SCALAR_DEVICE, &theirs));
  ASSERT_NE(mine, theirs);
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, 4, MG_FLOAT32, theirs, c, NULL),
         "mg_all_reduce", "not a custom op of this communicator");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, 4, MG_FLOAT64, mine, c, NULL),
         "mg_all_reduce", "made for float32");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_op_destroy(c, theirs), "mg_op_destroy", "not a custom op");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_op_destroy(c, MG_SUM), "mg_op_destroy", "built in");
  EXPECT(MG_ERR_INVALID_ARGUMENT,
         mg_op_create_premul_sum(c, NULL, MG_FLOAT32, MG_SCALAR_DEVICE, &mine),
         "mg_op_create_premul_sum", "scalar is NULL");
  EXPECT(MG_ERR_INVALID_ARGUMENT,
         mg_op_create_premul_sum(c, &scalar, MG_FLOAT32, (mg_scalar_residence_t)2, &mine),
         "mg_op_create_premul_sum", "residence 2");
  ASSERT_OK(mg_op_destroy(c, mine));
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_all_reduce(a, b, 4, MG_FLOAT32, mine, c, NULL),
         "mg_all_reduce", "not a custom op of this communicator");
  ASSERT_OK(mg_op_destroy(comms[1], theirs));

  /* Groups: an end without a begin; a failed call poisons the group, which posts nothing. */
  EXPECT(MG_ERR_INVALID_USAGE, mg_group_end(), "mg_group_end", "no group");
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_all_reduce(a, b, 4, MG_FLOAT32, MG_SUM, c, NULL));
  ASSERT_OK(mg_group_begin());
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_send(a, 4, MG_FLOAT32, 9, c, NULL));
  ASSERT_OK(mg_all_gather(a, b, 4, MG_FLOAT32, c, NULL));
  ASSERT_OK(mg_group_end()); /* inner end: nothing happens yet */
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_group_end(), "nothing was posted", "peer 9");
  char buf[512];
  ASSERT(mg_comm_last_error(c, buf, sizeof buf) > 0);
  ASSERT_CONTAINS(buf, "peer 9");

  /* Configs and ids. */
  mg_config_t raw;
  memset(&raw, 0, sizeof raw);
  mg_comm_t *out = NULL;
  mg_unique_id_t id;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  EXPECT(MG_ERR_INVALID_USAGE, mg_comm_init_rank(&raw, 2, &id, 0, &out), "mg_comm_init_rank",
         "MG_CONFIG_INIT");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_comm_init_rank(&cfg, 0, &id, 0, &out), "mg_comm_init_rank",
         "nranks 0");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_comm_init_rank(&cfg, 2, &id, 2, &out), "mg_comm_init_rank",
         "rank 2");
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_comm_init_rank(&cfg, 2, NULL, 0, &out), "mg_comm_init_rank",
         "id is NULL");
  mg_unique_id_t bogus;
  memset(&bogus, 0x42, sizeof bogus);
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_comm_init_rank(&cfg, 2, &bogus, 0, &out), "mg_comm_init_rank",
         "not a host-backend unique id");
  ASSERT(out == NULL); /* outputs are written only on success */
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_unique_id_create((mg_backend_t)7, &id), "mg_backend_resolve",
         "backend 7");
  mg_config_t neg = cfg;
  neg.timeout_s = -1;
  EXPECT(MG_ERR_INVALID_ARGUMENT, mg_comm_init_all(&neg, 2, NULL, comms), "mg_comm_init_all",
         "negative");

  /* Nothing above was posted: both ranks still agree on what comes next. */
  both_ranks_still_agree();

  /* Lifecycle: after finalize or abort, operations are refused. */
  mg_comm_t *pair[2];
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, pair));
  ASSERT_OK(mg_comm_abort(pair[0]));
  ASSERT_OK(mg_comm_abort(pair[0])); /* a second abort is fine */
  EXPECT(MG_ERR_INVALID_USAGE, mg_all_reduce(a, b, 1, MG_FLOAT32, MG_SUM, pair[0], NULL),
         "mg_all_reduce", "aborted");
  EXPECT(MG_ERR_INVALID_USAGE, mg_comm_finalize(pair[0]), "mg_comm_finalize", "aborted");
  EXPECT(MG_ERR_INVALID_USAGE, mg_comm_split(pair[0], 0, 0, NULL, &out), "mg_comm_split",
         "aborted");
  int rank;
  ASSERT_OK(mg_comm_rank(pair[0], &rank)); /* queries still work */
  ASSERT_OK(mg_comm_destroy(pair[0]));
  ASSERT_OK(mg_comm_destroy(pair[1]));
  EXPECT(MG_ERR_INVALID_USAGE, mg_all_reduce(a, b, 1, MG_FLOAT32, MG_SUM, pair[1], NULL),
         "mg_all_reduce", "not a live communicator");
  EXPECT(MG_ERR_INVALID_USAGE, mg_comm_destroy(pair[1]), "mg_comm_destroy",
         "not a live communicator");

  ASSERT_OK(mg_comm_destroy(comms[0]));
  ASSERT_OK(mg_comm_destroy(comms[1]));
  printf("bad input: every case refused, nothing posted\n");
  return 0;
}
