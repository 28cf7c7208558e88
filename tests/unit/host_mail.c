/*
 * host_mail.c -- which small collectives travel in the ranks' mails (host_shm.h): all_reduce and
 * reduce_scatter whose mailed input (reduce_scatter: the whole send buffer) is at most
 * MG__MAIL_BYTES, which spans several cache lines; one more element goes through the slots.
 *
 * A rank that mails step s leaves its input in mail[s & 1] with step1 = s + 1, and nothing else
 * writes there: after each collective, each rank's mail of the collective's step says which path
 * ran. 2 thread ranks; the results are checked too.
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
} arg_t;

/* One collective of `bytes` of mailed input (int32 sum); 1 when it went through the mails. */
static int run_one(arg_t *a, int reduce_scatter, size_t bytes) {
  const size_t total = bytes / sizeof(int32_t); /* elements of the send buffer */
  const size_t rcount = reduce_scatter ? total / N : total;
  int32_t *send = malloc(total * sizeof *send), *recv = calloc(rcount, sizeof *recv);
  ASSERT(send != NULL && recv != NULL);
  for (size_t i = 0; i < total; i++) send[i] = (int32_t)(i * 3 + (size_t)a->rank * 1000);
  mg__hcomm_t *hc = mg__hcomm(a->comm);
  const uint64_t s0 = hc->step;
  if (reduce_scatter)
    ASSERT_OK(mg_reduce_scatter(send, recv, rcount, MG_INT32, MG_SUM, a->comm, NULL));
  else
    ASSERT_OK(mg_all_reduce(send, recv, rcount, MG_INT32, MG_SUM, a->comm, NULL));
  const size_t off = reduce_scatter ? (size_t)a->rank * rcount : 0;
  for (size_t i = 0; i < rcount; i++) {
    int32_t want = 0;
    for (int r = 0; r < N; r++) want += (int32_t)((off + i) * 3 + (size_t)r * 1000);
    if (recv[i] != want)
      FAIL("rank %d, %s of %zu bytes: recv[%zu] = %d, expected %d", a->rank,
           reduce_scatter ? "reduce_scatter" : "all_reduce", bytes, i, recv[i], want);
  }
  const mg__hshm_mail_t *m = &hc->shm.ranks[a->rank].mail[s0 & 1];
  const int mailed = atomic_load(&m->step1) == s0 + 1 && memcmp(m->data, send, bytes) == 0;
  free(send);
  free(recv);
  return mailed;
}

static void *run_rank(void *p) {
  arg_t *a = p;
  const size_t max = MG__MAIL_BYTES / (N * sizeof(int32_t)) * N * sizeof(int32_t);
  for (int rs = 0; rs <= 1; rs++) {
    const char *name = rs ? "reduce_scatter" : "all_reduce";
    /* More than the first line holds, and the most that fits: mailed. */
    if (!run_one(a, rs, 32 * N))
      FAIL("rank %d: %s of %d bytes did not go through the mails", a->rank, name, 32 * N);
    if (!run_one(a, rs, max))
      FAIL("rank %d: %s of %zu bytes did not go through the mails", a->rank, name, max);
    /* One element per rank more: through the slots. */
    if (run_one(a, rs, max + N * sizeof(int32_t)))
      FAIL("rank %d: %s of %zu bytes went through the mails (they hold %d)", a->rank, name,
           max + N * sizeof(int32_t), MG__MAIL_BYTES);
  }
  return NULL;
}

int main(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  mg_comm_t *comms[N];
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  arg_t a[N];
  pthread_t t[N];
  for (int r = 0; r < N; r++) {
    a[r] = (arg_t){comms[r], r};
    ASSERT_EQ(pthread_create(&t[r], NULL, run_rank, &a[r]), 0);
  }
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  printf("host_mail: all_reduce and reduce_scatter up to %d bytes go through the mails\n",
         MG__MAIL_BYTES);
  return 0;
}
