/*
 * host_mail.c -- which small collectives travel in the ranks' mails (host_shm.h): all_reduce,
 * reduce_scatter, all_to_all, gather and scatter whose mailed input (reduce_scatter, all_to_all
 * and scatter: the whole send buffer, every rank's piece) is at most MG__MAIL_BYTES, which spans
 * several cache lines; one more element per rank goes through the slots.
 *
 * A rank that mails step s leaves its input in mail[s & 1] with step1 = s + 1, and nothing else
 * writes there: after each collective, each rank's mail of the collective's step says which path
 * ran (a scatter's non-root mails its key alone). 2 thread ranks, root 0; the results are
 * checked too.
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

enum { ALL_REDUCE, REDUCE_SCATTER, ALL_TO_ALL, GATHER, SCATTER, KINDS };
static const char *const names[KINDS] = {"all_reduce", "reduce_scatter", "all_to_all", "gather",
                                         "scatter"};

/* send[i] of rank r. */
static int32_t val(int r, size_t i) { return (int32_t)(i * 3 + (size_t)r * 1000); }

/* One collective of kind k with `bytes` of mailed input per rank (int32, sum); 1 when it went
 * through the mails. */
static int run_one(arg_t *a, int k, size_t bytes) {
  const size_t total = bytes / sizeof(int32_t); /* elements of the send buffer */
  const int pieces = k == REDUCE_SCATTER || k == ALL_TO_ALL || k == SCATTER;
  const size_t c = pieces ? total / N : total; /* the call's count */
  const size_t rtotal = k == ALL_TO_ALL || k == GATHER ? c * N : c;
  int32_t *send = malloc(total * sizeof *send), *recv = calloc(rtotal, sizeof *recv);
  ASSERT(send != NULL && recv != NULL);
  const int me = a->rank;
  for (size_t i = 0; i < total; i++) send[i] = val(me, i);
  mg__hcomm_t *hc = mg__hcomm(a->comm);
  const uint64_t s0 = hc->step;
  switch (k) {
    case ALL_REDUCE:
      ASSERT_OK(mg_all_reduce(send, recv, c, MG_INT32, MG_SUM, a->comm, NULL));
      break;
    case REDUCE_SCATTER:
      ASSERT_OK(mg_reduce_scatter(send, recv, c, MG_INT32, MG_SUM, a->comm, NULL));
      break;
    case ALL_TO_ALL: ASSERT_OK(mg_all_to_all(send, recv, c, MG_INT32, a->comm, NULL)); break;
    case GATHER: ASSERT_OK(mg_gather(send, recv, c, MG_INT32, 0, a->comm, NULL)); break;
    default: ASSERT_OK(mg_scatter(send, recv, c, MG_INT32, 0, a->comm, NULL)); break;
  }
  for (size_t i = 0; i < rtotal && (k != GATHER || me == 0); i++) {
    int32_t want = 0;
    const size_t r = i / c, j = i % c; /* all_to_all, gather: the piece of rank r */
    switch (k) {
      case ALL_REDUCE:
      case REDUCE_SCATTER:
        for (int q = 0; q < N; q++) want += val(q, (k == REDUCE_SCATTER ? (size_t)me * c : 0) + i);
        break;
      case ALL_TO_ALL: want = val((int)r, (size_t)me * c + j); break;
      case GATHER: want = val((int)r, j); break;
      default: want = val(0, (size_t)me * c + i); break;
    }
    if (recv[i] != want)
      FAIL("rank %d, %s of %zu bytes: recv[%zu] = %d, expected %d", me, names[k], bytes, i,
           recv[i], want);
  }
  const mg__hshm_mail_t *m = &hc->shm.ranks[me].mail[s0 & 1];
  const int data = k != SCATTER || me == 0;
  const int mailed =
      atomic_load(&m->step1) == s0 + 1 && (!data || memcmp(m->data, send, bytes) == 0);
  free(send);
  free(recv);
  return mailed;
}

static void *run_rank(void *p) {
  arg_t *a = p;
  const size_t max = MG__MAIL_BYTES / (N * sizeof(int32_t)) * N * sizeof(int32_t);
  for (int k = 0; k < KINDS; k++) {
    /* More than the first line holds, and the most that fits: mailed. */
    if (!run_one(a, k, 32 * N))
      FAIL("rank %d: %s of %d bytes did not go through the mails", a->rank, names[k], 32 * N);
    if (!run_one(a, k, max))
      FAIL("rank %d: %s of %zu bytes did not go through the mails", a->rank, names[k], max);
    /* One element per rank more: through the slots. */
    if (run_one(a, k, max + N * sizeof(int32_t)))
      FAIL("rank %d: %s of %zu bytes went through the mails (they hold %d)", a->rank, names[k],
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
  printf("host_mail: all_reduce, reduce_scatter, all_to_all, gather and scatter up to %d bytes "
         "go through the mails\n", MG__MAIL_BYTES);
  return 0;
}
