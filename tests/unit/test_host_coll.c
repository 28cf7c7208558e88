/*
 * test_host_coll.c -- the reference checker of the host backend: every operation x every dtype x
 * every op x in place and out of place x several counts, against a plain sequential reference.
 *
 *   test_host_coll threads|threads-rank|procs NRANKS [big]
 *
 * threads: mg_comm_init_all and one thread per rank; threads-rank: one thread per rank calling
 * mg_comm_init_rank; procs: one forked process per rank sharing a unique id. Inputs are random
 * and different per rank (each rank regenerates every rank's input to compute its expected
 * output); outputs are poisoned before each run so an unwritten element is caught; buffers that
 * a rank must not write (recv of a non-root reduce or gather) are checked to stay poisoned.
 * `big` adds one case per collective whose largest buffer is over 16 MiB.
 */
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reference.h"
#include "test.h"

enum { K_ALL_REDUCE, K_BROADCAST, K_REDUCE, K_ALL_GATHER, K_REDUCE_SCATTER, K_ALL_TO_ALL,
       K_ALL_TO_ALLV, K_GATHER, K_SCATTER, K_SENDRECV, K_COUNT };
static const char *const kname[K_COUNT] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                           "reduce_scatter", "all_to_all", "all_to_allv",
                                           "gather", "scatter", "sendrecv"};
enum { OP_PREMUL_HOST = MG_OP_BUILTIN_COUNT, OP_PREMUL_PTR, OP_N };

static int nranks;
static int big;
static mg_comm_t *tcomms[16];
static mg_unique_id_t uid;

typedef ref_case_t tcase_t;

static int is_rooted(int k) {
  return k == K_BROADCAST || k == K_REDUCE || k == K_GATHER || k == K_SCATTER;
}

/* Sizes in elements of the send and recv buffers of a case on rank me. */
static void sizes(const tcase_t *c, int me, size_t *s, size_t *r) {
  size_t n = (size_t)nranks, cnt = c->count;
  switch (c->kind) {
    case K_ALL_GATHER: case K_GATHER: *s = cnt, *r = n * cnt; break;
    case K_REDUCE_SCATTER: case K_SCATTER: *s = n * cnt, *r = cnt; break;
    case K_ALL_TO_ALL: *s = *r = n * cnt; break;
    case K_ALL_TO_ALLV: {
      size_t sc[16], sd[16], rc[16], rd[16];
      ref_a2av_layout(c, nranks, me, sc, sd, rc, rd, s, r);
      break;
    }
    case K_SENDRECV: *s = *r = 2 * cnt; break; /* ring message, then self message */
    default: *s = *r = cnt; break;
  }
}

/* The expected recv of rank me, computed from every rank's regenerated input. */
static void expected(const tcase_t *c, int me, unsigned char *exp, size_t rlen) {
  const mg_dtype_t dt = (mg_dtype_t)c->dtype;
  const size_t es = mg_dtype_size(dt), n = (size_t)nranks, cnt = c->count;
  unsigned char *in[16];
  for (int r = 0; r < nranks; r++) {
    size_t s, rr;
    sizes(c, r, &s, &rr);
    in[r] = malloc(s * es + 1);
    ref_fill(in[r], s, dt, ref_case_seed(c, r));
  }
  unsigned char scalar[8];
  const void *pre = NULL;
  if (c->op >= MG_OP_BUILTIN_COUNT) {
    ref_fill(scalar, 1, dt, 4242), pre = scalar;
  }
  mg_op_t op = c->op >= MG_OP_BUILTIN_COUNT ? MG_SUM : (mg_op_t)c->op;
  const void *srcs[16];
  switch (c->kind) {
    case K_ALL_REDUCE:
    case K_REDUCE:
      for (int r = 0; r < nranks; r++) srcs[r] = in[r];
      ref_reduce(exp, srcs, nranks, cnt, dt, op, pre, nranks);
      break;
    case K_BROADCAST: memcpy(exp, in[c->root], cnt * es); break;
    case K_ALL_GATHER:
    case K_GATHER:
      for (int r = 0; r < nranks; r++) memcpy(exp + (size_t)r * cnt * es, in[r], cnt * es);
      break;
    case K_REDUCE_SCATTER:
      for (int r = 0; r < nranks; r++) srcs[r] = in[r] + (size_t)me * cnt * es;
      ref_reduce(exp, srcs, nranks, cnt, dt, op, pre, nranks);
      break;
    case K_ALL_TO_ALL:
      for (int r = 0; r < nranks; r++)
        memcpy(exp + (size_t)r * cnt * es, in[r] + (size_t)me * cnt * es, cnt * es);
      break;
    case K_SCATTER: memcpy(exp, in[c->root] + (size_t)me * cnt * es, cnt * es); break;
    case K_ALL_TO_ALLV: {
      memset(exp, 0xA5, rlen * es); /* the gaps stay poisoned */
      size_t sc[16], sd[16], rc[16], rd[16], se, re;
      ref_a2av_layout(c, nranks, me, sc, sd, rc, rd, &se, &re);
      for (int p = 0; p < nranks; p++) {
        size_t psc[16], psd[16], prc[16], prd[16], pse, pre_;
        ref_a2av_layout(c, nranks, p, psc, psd, prc, prd, &pse, &pre_);
        memcpy(exp + rd[p] * es, in[p] + psd[me] * es, rc[p] * es);
      }
      break;
    }
    case K_SENDRECV: {
      int left = (me - 1 + nranks) % nranks;
      memcpy(exp, in[left], cnt * es);                      /* from the left neighbour */
      memcpy(exp + cnt * es, in[me] + cnt * es, cnt * es);  /* from myself */
      break;
    }
  }
  for (int r = 0; r < nranks; r++) free(in[r]);
  (void)n;
}

/* Runs case c on comm; returns the number of wrong elements (and prints the first few). */
static long run_case(mg_comm_t *comm, const tcase_t *c) {
  int me;
  ASSERT_OK(mg_comm_rank(comm, &me));
  const mg_dtype_t dt = (mg_dtype_t)c->dtype;
  const size_t es = mg_dtype_size(dt), cnt = c->count;
  size_t slen, rlen;
  sizes(c, me, &slen, &rlen);
  unsigned char *send = malloc(slen * es + 8), *recv = malloc(rlen * es + 8);
  unsigned char *exp = malloc(rlen * es + 8);
  ASSERT(send && recv && exp);
  ref_fill(send, slen, dt, ref_case_seed(c, me));
  memset(recv, 0xA5, rlen * es);
  const int root = c->root, is_root = root == me;
  /* In place: the input goes where the operation expects it inside recv. */
  const void *sp = send;
  if (c->inplace) {
    switch (c->kind) {
      case K_ALL_REDUCE: case K_REDUCE: case K_BROADCAST:
        memcpy(recv, send, cnt * es), sp = recv; break;
      case K_ALL_GATHER:
        memcpy(recv + (size_t)me * cnt * es, send, cnt * es), sp = recv + (size_t)me * cnt * es;
        break;
      case K_GATHER:
        if (is_root)
          memcpy(recv + (size_t)me * cnt * es, send, cnt * es), sp = recv + (size_t)me * cnt * es;
        break;
      default: break;
    }
  }
  const int writes = !((c->kind == K_REDUCE || c->kind == K_GATHER) && !is_root);
  if (!writes) memcpy(exp, recv, rlen * es); /* what must still be there afterwards */
  unsigned char scalar[8];
  mg_op_t op = (mg_op_t)c->op;
  int custom = c->op >= MG_OP_BUILTIN_COUNT;
  if (custom) {
    ref_fill(scalar, 1, dt, 4242);
    ASSERT_OK(mg_op_create_premul_sum(comm, scalar, dt,
                                      c->op == OP_PREMUL_HOST ? MG_SCALAR_HOST_IMMEDIATE : MG_SCALAR_DEVICE,
                                      &op));
    if (c->op == OP_PREMUL_HOST) memset(scalar, 0x7f, sizeof scalar); /* captured already */
  }
  mg_status_t st = MG_OK;
  switch (c->kind) {
    case K_ALL_REDUCE: st = mg_all_reduce(sp, recv, cnt, dt, op, comm, NULL); break;
    case K_BROADCAST: st = mg_broadcast(sp, recv, cnt, dt, root, comm, NULL); break;
    case K_REDUCE: st = mg_reduce(sp, recv, cnt, dt, op, root, comm, NULL); break;
    case K_ALL_GATHER: st = mg_all_gather(sp, recv, cnt, dt, comm, NULL); break;
    case K_REDUCE_SCATTER:
      if (c->inplace) {
        st = mg_reduce_scatter(send, send + (size_t)me * cnt * es, cnt, dt, op, comm, NULL);
        memcpy(recv, send + (size_t)me * cnt * es, cnt * es);
      } else {
        st = mg_reduce_scatter(send, recv, cnt, dt, op, comm, NULL);
      }
      break;
    case K_ALL_TO_ALL: st = mg_all_to_all(send, recv, cnt, dt, comm, NULL); break;
    case K_GATHER: st = mg_gather(sp, recv, cnt, dt, root, comm, NULL); break;
    case K_SCATTER:
      if (c->inplace && is_root) {
        st = mg_scatter(send, send + (size_t)me * cnt * es, cnt, dt, root, comm, NULL);
        memcpy(recv, send + (size_t)me * cnt * es, cnt * es);
      } else {
        st = mg_scatter(send, recv, cnt, dt, root, comm, NULL);
      }
      break;
    case K_ALL_TO_ALLV: {
      size_t sc[16], sd[16], rc[16], rd[16], se, re;
      ref_a2av_layout(c, nranks, me, sc, sd, rc, rd, &se, &re);
      st = mg_all_to_allv(send, sc, sd, recv, rc, rd, dt, comm, NULL);
      break;
    }
    case K_SENDRECV: {
      /* A ring in one group, sends first or receives first, plus a message to oneself. */
      int right = (me + 1) % nranks, left = (me - 1 + nranks) % nranks;
      ASSERT_OK(mg_group_begin());
      if (c->inplace) { /* reused as "receive first" */
        ASSERT_OK(mg_recv(recv, cnt, dt, left, comm, NULL));
        ASSERT_OK(mg_send(send, cnt, dt, right, comm, NULL));
      } else {
        ASSERT_OK(mg_send(send, cnt, dt, right, comm, NULL));
        ASSERT_OK(mg_recv(recv, cnt, dt, left, comm, NULL));
      }
      ASSERT_OK(mg_send(send + cnt * es, cnt, dt, me, comm, NULL));
      ASSERT_OK(mg_recv(recv + cnt * es, cnt, dt, me, comm, NULL));
      st = mg_group_end();
      break;
    }
  }
  if (st != MG_OK)
    FAIL("rank %d: %s %s op %d inplace %d count %zu root %d: %s: %s", me, kname[c->kind],
         mg_dtype_name(dt), c->op, c->inplace, cnt, root, mg_status_name(st), mg_last_error());
  if (custom) ASSERT_OK(mg_op_destroy(comm, op));
  long wrong = 0;
  if (writes) expected(c, me, exp, rlen);
  for (size_t i = 0; i < rlen; i++) {
    int ok = writes && c->kind != K_ALL_TO_ALLV ? ref_equal(recv, exp, i, dt)
                                                : memcmp(recv + i * es, exp + i * es, es) == 0;
    if (!ok && wrong++ < 3) {
      char a[48], b[48];
      fprintf(stderr, "rank %d: %s %s op %d inplace %d count %zu root %d: [%zu] = %s, want %s\n",
              me, kname[c->kind], mg_dtype_name(dt), c->op, c->inplace, cnt, root, i,
              ref_show(recv, i, dt, a, sizeof a), ref_show(exp, i, dt, b, sizeof b));
    }
  }
  free(send), free(recv), free(exp);
  return wrong;
}

static int is_reduction(int k) {
  return k == K_ALL_REDUCE || k == K_REDUCE || k == K_REDUCE_SCATTER;
}

/* all_to_allv's count and displacement arrays are the caller's only for the call: an operation
 * that outlives it (in a group, until the group's end; on a host stream, until the worker runs
 * it) must have taken its own copy. Each rank overwrites its arrays with zeros (which would move
 * nothing, or fail as mismatched) right after the call; on the host stream the last rank posts
 * 50 ms after the others, so that their all_to_allv, behind an all_reduce, runs after that. */
static void a2av_outlives_call(mg_comm_t *comm) {
  int me;
  ASSERT_OK(mg_comm_rank(comm, &me));
  mg_stream_t stream;
  ASSERT_OK(mg_stream_create(comm, &stream));
  for (int way = 0; way < 2; way++) {
    int64_t send[32], recv[32], one = 1, sum = 0;
    size_t sc[16], sd[16], rc[16], rd[16];
    for (int p = 0; p < nranks; p++) {
      sc[p] = rc[p] = 2, sd[p] = rd[p] = 2 * (size_t)p;
      for (int i = 0; i < 2; i++) send[2 * p + i] = me * 100 + p * 10 + i, recv[2 * p + i] = -1;
    }
    if (way == 0) {
      ASSERT_OK(mg_group_begin());
      ASSERT_OK(mg_all_to_allv(send, sc, sd, recv, rc, rd, MG_INT64, comm, NULL));
      memset(sc, 0, sizeof sc), memset(rc, 0, sizeof rc);
      ASSERT_OK(mg_group_end());
    } else {
      if (me == nranks - 1) usleep(50000);
      ASSERT_OK(mg_all_reduce(&one, &sum, 1, MG_INT64, MG_SUM, comm, stream));
      ASSERT_OK(mg_all_to_allv(send, sc, sd, recv, rc, rd, MG_INT64, comm, stream));
      memset(sc, 0, sizeof sc), memset(rc, 0, sizeof rc);
      mg_status_t st = mg_stream_sync(stream, 30);
      if (st != MG_OK) FAIL("rank %d: all_to_allv on a host stream: %s", me, mg_last_error());
      ASSERT_EQ(sum, nranks);
    }
    for (int p = 0; p < nranks; p++)
      for (int i = 0; i < 2; i++) ASSERT_EQ(recv[2 * p + i], p * 100 + me * 10 + i);
  }
  ASSERT_OK(mg_stream_destroy(stream));
}

/* The whole matrix, in the same order on every rank. */
static long run_matrix(mg_comm_t *comm) {
  static const size_t counts[] = {0, 1, 7, 1023, 70001};
  long wrong = 0;
  uint64_t seed = 1;
  for (int k = 0; k < K_COUNT; k++)
    for (int dt = 0; dt < MG_DTYPE_COUNT; dt++)
      for (int op = 0; op < (is_reduction(k) ? OP_N : 1); op++)
        for (int ip = 0; ip < 2; ip++)
          for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            /* The largest count only for one dtype of each size, to bound the time. */
            if (ci == 4 && !(dt == MG_FLOAT32 || dt == MG_BFLOAT16 || dt == MG_INT8 ||
                             dt == MG_UINT64 || dt == MG_FLOAT8_E5M2))
              continue;
            if (k == K_ALL_TO_ALL && ip) continue; /* all_to_all has no in-place form */
            if (k == K_ALL_TO_ALLV && ip) continue;
            const uint64_t cs = seed++; /* one read: an initializer's order is unspecified */
            tcase_t c = {k, dt, op, ip, is_rooted(k) ? (int)(cs % (uint64_t)nranks) : -1,
                         counts[ci], cs};
            wrong += run_case(comm, &c);
          }
  if (big) {
    /* Over 16 MiB: per-rank buffers of 17 MiB (all_reduce...) or nranks x that. */
    for (int k = 0; k < K_COUNT; k++) {
      size_t cnt = (size_t)17 << 18; /* float32: 17 MiB */
      if (nranks > 4 && (k == K_ALL_GATHER || k == K_REDUCE_SCATTER || k == K_ALL_TO_ALL ||
                         k == K_GATHER || k == K_SCATTER || k == K_ALL_TO_ALLV))
        cnt = ((size_t)17 << 18) / (size_t)nranks + 1;
      tcase_t c = {k, MG_FLOAT32, MG_SUM, 0, is_rooted(k) ? nranks - 1 : -1, cnt, seed++};
      wrong += run_case(comm, &c);
    }
  }
  /* A group mixing collectives and send/recv. */
  {
    int me;
    ASSERT_OK(mg_comm_rank(comm, &me));
    int64_t a = me + 1, sum = 0, all[16], ring = -1;
    int right = (me + 1) % nranks, left = (me - 1 + nranks) % nranks;
    ASSERT_OK(mg_group_begin());
    ASSERT_OK(mg_all_reduce(&a, &sum, 1, MG_INT64, MG_SUM, comm, NULL));
    ASSERT_OK(mg_send(&a, 1, MG_INT64, right, comm, NULL));
    ASSERT_OK(mg_all_gather(&a, all, 1, MG_INT64, comm, NULL));
    ASSERT_OK(mg_recv(&ring, 1, MG_INT64, left, comm, NULL));
    ASSERT_OK(mg_group_end());
    ASSERT_EQ(sum, (int64_t)nranks * (nranks + 1) / 2);
    for (int r = 0; r < nranks; r++) ASSERT_EQ(all[r], r + 1);
    ASSERT_EQ(ring, left + 1);
  }
  a2av_outlives_call(comm);
  return wrong;
}

static void *thread_main(void *arg) {
  int r = (int)(intptr_t)arg;
  mg_comm_t *comm = tcomms[r];
  if (comm == NULL) ASSERT_OK(mg_comm_init_rank(NULL, nranks, &uid, r, &comm));
  long wrong = run_matrix(comm);
  ASSERT_OK(mg_comm_destroy(comm));
  return (void *)(intptr_t)wrong;
}

int main(int argc, char **argv) {
  if (argc < 3) FAIL("usage: %s threads|threads-rank|procs NRANKS [big]", argv[0]);
  nranks = atoi(argv[2]);
  big = argc > 3 && strcmp(argv[3], "big") == 0;
  ASSERT(nranks >= 1 && nranks <= 16);
  setenv("MGCOMM_BACKEND", "host", 1);
  long wrong = 0;
  if (strcmp(argv[1], "procs") == 0) {
    ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
    pid_t pids[16];
    for (int r = 0; r < nranks; r++) {
      pids[r] = fork();
      ASSERT(pids[r] >= 0);
      if (pids[r] == 0) {
        mg_comm_t *comm;
        ASSERT_OK(mg_comm_init_rank(NULL, nranks, &uid, r, &comm));
        long w = run_matrix(comm);
        ASSERT_OK(mg_comm_destroy(comm));
        _exit(w == 0 ? 0 : 1);
      }
    }
    for (int r = 0; r < nranks; r++) {
      int status;
      ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "rank %d (pid %d) failed: status 0x%x\n", r, (int)pids[r], status);
        wrong++;
      }
    }
  } else {
    if (strcmp(argv[1], "threads") == 0) {
      mg_config_t cfg = MG_CONFIG_INIT;
      cfg.backend = MG_BACKEND_HOST;
      ASSERT_OK(mg_comm_init_all(&cfg, nranks, NULL, tcomms));
    } else {
      ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
    }
    pthread_t t[16];
    for (int r = 0; r < nranks; r++)
      ASSERT_EQ(pthread_create(&t[r], NULL, thread_main, (void *)(intptr_t)r), 0);
    for (int r = 0; r < nranks; r++) {
      void *ret;
      pthread_join(t[r], &ret);
      wrong += (long)(intptr_t)ret;
    }
  }
  if (wrong) FAIL("%ld wrong elements", wrong);
  printf("host collectives, %s, %d ranks%s: all correct\n", argv[1], nranks, big ? ", big" : "");
  return 0;
}
