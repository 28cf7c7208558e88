/*
 * host_mail.c -- which small collectives travel in the ranks' mails (host_shm.h): all_reduce,
 * reduce_scatter, all_to_all, gather and scatter whose mailed input (reduce_scatter, all_to_all
 * and scatter: the whole send buffer, every rank's piece) is at most MG__MAIL_BYTES, which spans
 * several cache lines; one more element per rank goes through the slots. Gather, scatter and
 * all_to_all whose piece per rank reaches the direct threshold are copied once instead (2 KiB
 * between threads that have a CPU each): checked with that threshold and without it.
 *
 * A rank that mails step s leaves its input in mail[s & 1] with step1 = s + 1, and nothing else
 * writes there: after each collective, each rank's mail of the collective's step says which path
 * ran (a scatter's non-root mails its key alone). 2 thread ranks, root 0; the results are
 * checked too.
 *
 * all_to_allv starts in the mails (its counts first in each mail, then its pieces) when the one
 * before it on the communicator had every rank's pieces fit there (or there was none): mailed in
 * one step when they fit again; when some rank's do not, every rank goes on staged from the next
 * step, and the next all_to_allv starts staged at once (its own step in the mails untouched), the
 * one after that in the mails again. Uneven counts; the results are checked.
 *
 * The mails decide their collectives themselves (host_shm.h, mg__hmail_poison): 200 mailed
 * all_reduces leave the communicator's decision word as it was, until the one at step
 * MG__HDEC_REFRESH settles it (so that it never falls far behind); and when rank 0 times out of an
 * all_reduce that rank 1 has not called yet, rank 1's step word holds rank 0's poison (that
 * step, MG_ERR_TIMED_OUT, rank 0), so that rank 1, coming late, fails MG_ERR_REMOTE naming
 * rank 0 without touching its buffer.
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
  const mg__hshm_t *s = &mg__hcomm(a->comm)->shm;
  const uint64_t direct_from = s->direct ? s->hdr->direct_threads_bytes : UINT64_MAX;
  for (int k = 0; k < KINDS; k++) {
    /* More than the first line holds, and the most that fits: mailed, unless the data is copied
     * once (gather, scatter, all_to_all from the direct threshold per rank). */
    const int pieces = k == REDUCE_SCATTER || k == ALL_TO_ALL || k == SCATTER;
    const int direct = (k == ALL_TO_ALL || k == GATHER || k == SCATTER) &&
                       (pieces ? max / N : max) >= direct_from;
    if (!run_one(a, k, 32 * N))
      FAIL("rank %d: %s of %d bytes did not go through the mails", a->rank, names[k], 32 * N);
    if (run_one(a, k, max) == direct)
      FAIL("rank %d: %s of %zu bytes %s through the mails (direct from %llu bytes per rank)",
           a->rank, names[k], max, direct ? "went" : "did not go",
           (unsigned long long)direct_from);
    /* One element per rank more: through the slots. */
    if (run_one(a, k, max + N * sizeof(int32_t)))
      FAIL("rank %d: %s of %zu bytes went through the mails (they hold %d)", a->rank, names[k],
           max + N * sizeof(int32_t), MG__MAIL_BYTES);
  }
  return NULL;
}

/* One all_to_allv where rank r sends cnt[r][p] int32 to rank p, packed in rank order on both
 * sides; the result is checked. *steps: the transport steps it took; returns 1 when this rank's
 * mail of its first step holds it (its step word and counts). */
static int a2av_once(arg_t *a, const size_t cnt[N][N], uint64_t *steps) {
  const int me = a->rank;
  size_t sc[N], sd[N], rc[N], rd[N], st = 0, rt = 0;
  for (int p = 0; p < N; p++) {
    sc[p] = cnt[me][p], sd[p] = st, st += sc[p];
    rc[p] = cnt[p][me], rd[p] = rt, rt += rc[p];
  }
  int32_t *send = malloc((st + 1) * sizeof *send), *recv = calloc(rt + 1, sizeof *recv);
  ASSERT(send != NULL && recv != NULL);
  for (size_t i = 0; i < st; i++) send[i] = val(me, i);
  mg__hcomm_t *hc = mg__hcomm(a->comm);
  const uint64_t s0 = hc->step;
  ASSERT_OK(mg_all_to_allv(send, sc, sd, recv, rc, rd, MG_INT32, a->comm, NULL));
  *steps = hc->step - s0;
  for (int p = 0; p < N; p++) { /* rank p's piece for me: after its pieces for the ranks before */
    size_t from = 0;
    for (int q = 0; q < me; q++) from += cnt[p][q];
    for (size_t i = 0; i < rc[p]; i++)
      if (recv[rd[p] + i] != val(p, from + i))
        FAIL("rank %d, all_to_allv: recv[%zu] = %d, expected %d", me, rd[p] + i, recv[rd[p] + i],
             val(p, from + i));
  }
  const mg__hshm_mail_t *m = &hc->shm.ranks[me].mail[s0 & 1];
  uint64_t first;
  memcpy(&first, m->data, sizeof first);
  free(send);
  free(recv);
  return atomic_load(&m->step1) == s0 + 1 && first == sc[0];
}

static void *run_a2av(void *p) {
  arg_t *a = p;
  static const size_t small[N][N] = {{1, 3}, {2, 5}};
  static const size_t big[N][N] = {{4, 7}, {2000, 1}}; /* rank 1's 8000 bytes to rank 0 */
  uint64_t steps;
  if (!a2av_once(a, small, &steps) || steps != 1)
    FAIL("rank %d: a small all_to_allv was not mailed in one step (%llu)", a->rank,
         (unsigned long long)steps);
  a2av_once(a, big, &steps);
  if (steps < 2)
    FAIL("rank %d: an all_to_allv too large for the mails took %llu step, not its mail step and "
         "then the staged ones", a->rank, (unsigned long long)steps);
  if (a2av_once(a, small, &steps) || steps != 1)
    FAIL("rank %d: the all_to_allv after one too large for the mails was not staged at once",
         a->rank);
  if (!a2av_once(a, small, &steps) || steps != 1)
    FAIL("rank %d: the second small all_to_allv after a large one was not mailed", a->rank);
  return NULL;
}

static pthread_barrier_t bar;

/* 200 mailed all_reduces between two looks at the decision word, which no rank writes in them;
 * then more, up to past step MG__HDEC_REFRESH (1024 in test builds), whose collective settles
 * it. */
static void *run_decided(void *p) {
  arg_t *a = p;
  const _Atomic uint64_t *dec = &mg__hcomm(a->comm)->shm.hdr->decision;
  float x = 1, y = 0;
  pthread_barrier_wait(&bar);
  const uint64_t before = atomic_load(dec);
  ASSERT(mg__hcomm(a->comm)->step + 200 < MG__HDEC_REFRESH);
  pthread_barrier_wait(&bar);
  for (int i = 0; i < 200; i++)
    ASSERT_OK(mg_all_reduce(&x, &y, 1, MG_FLOAT32, MG_SUM, a->comm, NULL));
  pthread_barrier_wait(&bar);
  if (atomic_load(dec) != before)
    FAIL("rank %d: mailed all_reduces wrote the decision word (%#llx -> %#llx)", a->rank,
         (unsigned long long)before, (unsigned long long)atomic_load(dec));
  while (mg__hcomm(a->comm)->step <= MG__HDEC_REFRESH)
    ASSERT_OK(mg_all_reduce(&x, &y, 1, MG_FLOAT32, MG_SUM, a->comm, NULL));
  pthread_barrier_wait(&bar);
  const uint64_t w = atomic_load(dec);
  if (mg__hdec_cmp(w, MG__HDEC_REFRESH) != 0 || mg__hdec_status(w) != MG_OK)
    FAIL("rank %d: after step %llu the decision word is %#llx, not its success", a->rank,
         (unsigned long long)MG__HDEC_REFRESH, (unsigned long long)w);
  return NULL;
}

/* Rank 0 times out of an all_reduce before rank 1 calls it. */
static void *run_late(void *p) {
  arg_t *a = p;
  mg__hcomm_t *hc = mg__hcomm(a->comm);
  const uint64_t s = hc->step;
  float x = 1, y = -7;
  if (a->rank == 0) {
    ASSERT_EQ(mg_all_reduce(&x, &y, 1, MG_FLOAT32, MG_SUM, a->comm, NULL), MG_ERR_TIMED_OUT);
    pthread_barrier_wait(&bar);
    return NULL;
  }
  pthread_barrier_wait(&bar);
  const uint64_t w = atomic_load(&hc->shm.ranks[1].mail[s & 1].step1);
  if (!(w & MG__HMAIL_POISON) || mg__hmail_cmp(w, s) != 0 ||
      mg__hdec_status(w) != MG_ERR_TIMED_OUT || mg__hdec_who(w) != 0)
    FAIL("rank 1's step word after rank 0 timed out of step %llu: %#llx, not rank 0's poison",
         (unsigned long long)s, (unsigned long long)w);
  ASSERT_EQ(mg_all_reduce(&x, &y, 1, MG_FLOAT32, MG_SUM, a->comm, NULL), MG_ERR_REMOTE);
  ASSERT(strstr(mg_last_error(), "rank 0 timed out") != NULL);
  ASSERT(y == -7);
  return NULL;
}

static void run_ranks(mg_comm_t **comms, void *(*fn)(void *)) {
  arg_t a[N];
  pthread_t t[N];
  for (int r = 0; r < N; r++) {
    a[r] = (arg_t){comms[r], r};
    ASSERT_EQ(pthread_create(&t[r], NULL, fn, &a[r]), 0);
  }
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
}

int main(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  mg_comm_t *comms[N];
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  ASSERT_EQ(pthread_barrier_init(&bar, NULL, N), 0);
  run_ranks(comms, run_rank);
  /* Again with the direct copies out of reach (the creator's threshold, which every rank reads
   * from the segment): every kind mailed up to the mails' size. */
  mg__hcomm(comms[0])->shm.hdr->direct_threads_bytes = UINT64_MAX;
  run_ranks(comms, run_rank);
  run_ranks(comms, run_a2av);
  run_ranks(comms, run_decided);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  cfg.timeout_s = 0.2;
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  run_ranks(comms, run_late);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  pthread_barrier_destroy(&bar);
  printf("host_mail: all_reduce, reduce_scatter, all_to_all, gather and scatter up to %d bytes "
         "go through the mails, which decide them; all_to_allv there as the one before it\n",
         MG__MAIL_BYTES);
  return 0;
}
