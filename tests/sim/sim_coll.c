/*
 * sim_coll.c -- what runs "on the GPU" in the simulated NCCL: meetings of the ranks (slots),
 * the stream items of collectives and send/recv, and the computation.
 *
 * A meeting is keyed within a clique by (kind, seq, a, b): a collective by the comm's sequence
 * number, a send/recv by (source, destination) and its number in that direction, a split or
 * shrink (sim_life.c) by the parent's count of them. Each participant posts what it brings; when
 * all are there the meeting is READY, one participant claims it (BUSY), computes every rank's
 * result with no lock held, and marks it DONE; each participant then leaves it, the last one
 * freeing it. A participant whose communicator is aborted or revoked while the meeting is not
 * yet READY withdraws from it: its peers go on waiting (as the kernels of the other GPUs would)
 * until they are aborted too.
 *
 * A stream item carries the operations of one communicator on one stream from one group, in
 * call order. It posts all of them first, then completes them in order, so that a group's sends
 * and receives cannot deadlock, whatever order they were called in (NCCL fuses a group into one
 * kernel). An item stopped by an abort completes without writing its outputs.
 *
 * Results: reductions go in rank order ((x0 op x1) op x2 ...); integers wrap; avg is the sum
 * divided by nranks for integers (truncated toward zero), the sum of x_i * (1/nranks rounded
 * to the type) for floating types, as NCCL; max and min propagate NaN.
 *
 * Divisions: data types and reductions; meetings; computing; stream items.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_nccl_int.h"

/* ---- data types and reductions ----------------------------------------------------------------
 * red(acc, x, n, op, first, last, nranks): acc = x (first) or acc op x, elementwise; the last
 * rank's call also finishes avg for integers. */
typedef void (*sim_red_fn)(void *acc, const void *x, size_t n, int op, int first, int last,
                           int nranks);

/* Integers: + and * in the unsigned type U of the same width, so that they wrap. */
#define SIM_INT_RED(NAME, T, U, W)                                                             \
  static void NAME(void *accv, const void *xv, size_t n, int op, int first, int last,          \
                   int nranks) {                                                               \
    T *acc = accv;                                                                             \
    const T *x = xv;                                                                           \
    for (size_t i = 0; i < n; i++) {                                                           \
      const T v = x[i];                                                                        \
      if (first) {                                                                             \
        acc[i] = v;                                                                            \
      } else {                                                                                 \
        switch (op) {                                                                          \
          case MG__ncclSum:                                                                    \
          case MG__ncclAvg: acc[i] = (T)(U)((U)acc[i] + (U)v); break;                          \
          case MG__ncclProd: acc[i] = (T)(U)((U)acc[i] * (U)v); break;                         \
          case MG__ncclMax: if (v > acc[i]) acc[i] = v; break;                                 \
          default: if (v < acc[i]) acc[i] = v; break;                                          \
        }                                                                                      \
      }                                                                                        \
      if (last && op == MG__ncclAvg) acc[i] = (T)((W)acc[i] / (W)nranks);                      \
    }                                                                                          \
  }

SIM_INT_RED(sim_red_i8, int8_t, uint8_t, int64_t)
SIM_INT_RED(sim_red_u8, uint8_t, uint8_t, uint64_t)
SIM_INT_RED(sim_red_i32, int32_t, uint32_t, int64_t)
SIM_INT_RED(sim_red_u32, uint32_t, uint32_t, uint64_t)
SIM_INT_RED(sim_red_i64, int64_t, uint64_t, int64_t)
SIM_INT_RED(sim_red_u64, uint64_t, uint64_t, uint64_t)

#define SIM_FLT_RED(NAME, T)                                                                   \
  static void NAME(void *accv, const void *xv, size_t n, int op, int first, int last,          \
                   int nranks) {                                                               \
    T *acc = accv;                                                                             \
    const T *x = xv;                                                                           \
    const T scale = (T)(1.0 / nranks);                                                         \
    (void)last;                                                                                \
    for (size_t i = 0; i < n; i++) {                                                           \
      const T v = op == MG__ncclAvg ? x[i] * scale : x[i];                                     \
      if (first) {                                                                             \
        acc[i] = v;                                                                            \
        continue;                                                                              \
      }                                                                                        \
      switch (op) {                                                                            \
        case MG__ncclSum:                                                                      \
        case MG__ncclAvg: acc[i] = acc[i] + v; break;                                          \
        case MG__ncclProd: acc[i] = acc[i] * v; break;                                         \
        case MG__ncclMax: if (isnan(v) || v > acc[i]) acc[i] = v; break;                       \
        default: if (isnan(v) || v < acc[i]) acc[i] = v; break;                                \
      }                                                                                        \
    }                                                                                          \
  }

SIM_FLT_RED(sim_red_f32, float)
SIM_FLT_RED(sim_red_f64, double)

typedef struct {
  const char *name;
  size_t size;      /* 0: not simulated */
  sim_red_fn red;
} sim_dtype_t;

static const sim_dtype_t sim_dtypes[MG__ncclNumTypes] = {
    [MG__ncclInt8] = {"int8", 1, sim_red_i8},
    [MG__ncclUint8] = {"uint8", 1, sim_red_u8},
    [MG__ncclInt32] = {"int32", 4, sim_red_i32},
    [MG__ncclUint32] = {"uint32", 4, sim_red_u32},
    [MG__ncclInt64] = {"int64", 8, sim_red_i64},
    [MG__ncclUint64] = {"uint64", 8, sim_red_u64},
    [MG__ncclFloat16] = {"float16", 0, NULL},
    [MG__ncclFloat32] = {"float32", 4, sim_red_f32},
    [MG__ncclFloat64] = {"float64", 8, sim_red_f64},
    [MG__ncclBfloat16] = {"bfloat16", 0, NULL},
    [MG__ncclFloat8e4m3] = {"float8e4m3", 0, NULL},
    [MG__ncclFloat8e5m2] = {"float8e5m2", 0, NULL},
};

size_t sim_dtype_size(mg__ncclDataType_t dt) {
  return dt >= 0 && dt < MG__ncclNumTypes ? sim_dtypes[dt].size : 0;
}

const char *sim_dtype_name(mg__ncclDataType_t dt) {
  return dt >= 0 && dt < MG__ncclNumTypes ? sim_dtypes[dt].name : "unknown";
}

/* ---- meetings -------------------------------------------------------------------------------- */

static const char *const sim_meet_names[] = {"collective", "send/recv", "ncclCommSplit",
                                             "ncclCommShrink"};

sim_slot_t *sim_slot_post(sim_clique_t *q, int kind, uint64_t seq, int64_t a, int64_t b,
                          int needed, int index, void *contrib) {
  sim_slot_t *s = q->slots;
  while (s != NULL && !(s->kind == kind && s->seq == seq && s->a == a && s->b == b)) s = s->next;
  if (s == NULL) {
    s = calloc(1, sizeof *s);
    if (s == NULL || (s->contrib = calloc((size_t)needed, sizeof *s->contrib)) == NULL) {
      free(s);
      return NULL;
    }
    s->kind = kind;
    s->seq = seq;
    s->a = a;
    s->b = b;
    s->needed = needed;
    s->state = SIM_SLOT_OPEN;
    s->next = q->slots;
    q->slots = s;
  }
  if (index < 0 || index >= s->needed || s->contrib[index] != NULL || s->state != SIM_SLOT_OPEN)
    sim_violation("%s #%llu (%lld, %lld): participant %d of %d joins twice, or after the meeting "
                  "was complete", sim_meet_names[kind], (unsigned long long)seq, (long long)a,
                  (long long)b, index, s->needed);
  s->contrib[index] = contrib;
  if (++s->arrived == s->needed) s->state = SIM_SLOT_READY;
  pthread_cond_broadcast(&sim_cv);
  return s;
}

static void sim_slot_free(sim_clique_t *q, sim_slot_t *s) {
  sim_slot_t **pp = &q->slots;
  while (*pp != s) pp = &(*pp)->next;
  *pp = s->next;
  free(s->contrib);
  free(s);
}

void sim_slot_withdraw(sim_clique_t *q, sim_slot_t *s, int index) {
  s->contrib[index] = NULL;
  s->state = SIM_SLOT_OPEN;
  if (--s->arrived == 0) sim_slot_free(q, s);
  pthread_cond_broadcast(&sim_cv);
}

void sim_slot_release(sim_clique_t *q, sim_slot_t *s) {
  if (++s->released == s->needed) sim_slot_free(q, s);
}

/* ---- computing ------------------------------------------------------------------------------- */

static void *sim_tmp(size_t bytes) {
  void *p = malloc(bytes > 0 ? bytes : 1);
  if (p == NULL) {
    fprintf(stderr, "mgsim: out of memory for a collective of %zu bytes\n", bytes);
    abort();
  }
  return p;
}

/* A collective whose every rank is there: check that they agree, then write every output. */
static void sim_compute_coll(sim_slot_t *s) {
  sim_op_t **o = (sim_op_t **)s->contrib;
  const int n = s->needed;
  const sim_op_t *z = o[0];
  const int reduction = z->kind == SIM_ALLREDUCE || z->kind == SIM_REDUCE ||
                        z->kind == SIM_REDUCESCATTER;
  const int rooted = z->kind == SIM_BROADCAST || z->kind == SIM_REDUCE;
  for (int r = 1; r < n; r++)
    if (o[r]->kind != z->kind || o[r]->count != z->count || o[r]->dtype != z->dtype ||
        (reduction && o[r]->redop != z->redop) || (rooted && o[r]->root != z->root))
      sim_violation("collective #%llu of a communicator: rank 0 called %s(count %zu, %s, op %d, "
                    "root %d), rank %d called %s(count %zu, %s, op %d, root %d)",
                    (unsigned long long)s->seq, z->call, z->count, sim_dtype_name(z->dtype),
                    z->redop, z->root, r, o[r]->call, o[r]->count, sim_dtype_name(o[r]->dtype),
                    o[r]->redop, o[r]->root);
  const sim_dtype_t *t = &sim_dtypes[z->dtype];
  const size_t one = z->count * t->size, all = one * (size_t)n;
  const size_t elems = z->kind == SIM_REDUCESCATTER ? z->count * (size_t)n : z->count;
  void *tmp = sim_tmp(z->kind == SIM_ALLGATHER ? all : elems * t->size);
  /* Every input is read into tmp before any output is written: in-place forms are safe. */
  switch (z->kind) {
    case SIM_ALLREDUCE:
    case SIM_REDUCE:
    case SIM_REDUCESCATTER:
      for (int r = 0; r < n; r++) t->red(tmp, o[r]->send, elems, z->redop, r == 0, r == n - 1, n);
      break;
    case SIM_BROADCAST: memcpy(tmp, o[z->root]->send, one); break;
    case SIM_ALLGATHER:
      for (int r = 0; r < n; r++) memcpy((char *)tmp + (size_t)r * one, o[r]->send, one);
      break;
    default: break;
  }
  for (int r = 0; r < n; r++) {
    switch (z->kind) {
      case SIM_ALLREDUCE:
      case SIM_BROADCAST: memcpy(o[r]->recv, tmp, one); break;
      case SIM_REDUCE:
        if (r == z->root) memcpy(o[r]->recv, tmp, one);
        break;
      case SIM_ALLGATHER: memcpy(o[r]->recv, tmp, all); break;
      case SIM_REDUCESCATTER: memcpy(o[r]->recv, (char *)tmp + (size_t)r * one, one); break;
      default: break;
    }
  }
  free(tmp);
}

static void sim_compute_p2p(sim_slot_t *s) {
  const sim_op_t *snd = s->contrib[0], *rcv = s->contrib[1];
  const size_t sb = snd->count * sim_dtype_size(snd->dtype);
  const size_t rb = rcv->count * sim_dtype_size(rcv->dtype);
  if (sb != rb)
    sim_violation("send/recv #%llu from rank %lld to rank %lld: the send has %zu bytes (%zu x "
                  "%s), the receive %zu (%zu x %s)", (unsigned long long)s->seq, (long long)s->a,
                  (long long)s->b, sb, snd->count, sim_dtype_name(snd->dtype), rb, rcv->count,
                  sim_dtype_name(rcv->dtype));
  if (rcv->recv != snd->send) memcpy(rcv->recv, snd->send, sb);
}

/* ---- stream items ---------------------------------------------------------------------------- */

typedef struct sim_item {
  sim_comm_t *comm;
  sim_op_t *ops;   /* in call order */
  int never;       /* MGSIM_NEVER_COMPLETE picked one of them */
} sim_item_t;

/* Where op sits in its meeting. */
static int sim_op_index(const sim_op_t *op) {
  return op->kind == SIM_SEND ? 0 : op->kind == SIM_RECV ? 1 : op->comm->rank;
}

static void sim_item_run(void *arg) {
  sim_item_t *it = arg;
  sim_comm_t *c = it->comm;
  pthread_mutex_lock(&sim_lock);
  sim_clique_t *q = c->clique;
  const unsigned epoch = c->abort_epoch;
  if (it->never) {
    /* A kernel that never finishes: it does not even meet its peers, who wait for it. */
    sim_knob_held(c->device, 1);
    pthread_cond_broadcast(&sim_cv); /* for tests waiting for the gauge */
    while (!sim_stopped(c, epoch)) pthread_cond_wait(&sim_cv, &sim_lock);
    sim_knob_held(c->device, -1);
  } else {
    for (sim_op_t *op = it->ops; op != NULL; op = op->next) {
      if (op->skip) continue;
      const int p2p = op->kind == SIM_SEND || op->kind == SIM_RECV;
      const int me = c->rank;
      op->slot = sim_slot_post(q, p2p ? SIM_MEET_P2P : SIM_MEET_COLL, op->seq,
                               p2p ? (op->kind == SIM_SEND ? me : op->root) : 0,
                               p2p ? (op->kind == SIM_SEND ? op->root : me) : 0,
                               p2p ? 2 : c->nranks, sim_op_index(op), op);
      if (op->slot == NULL) {
        fprintf(stderr, "mgsim: out of memory for a meeting\n");
        abort();
      }
    }
    int stopped = 0;
    for (sim_op_t *op = it->ops; op != NULL; op = op->next) {
      if (op->skip) continue;
      sim_slot_t *s = op->slot;
      while (!stopped && s->state == SIM_SLOT_OPEN) {
        stopped = sim_stopped(c, epoch);
        if (!stopped) pthread_cond_wait(&sim_cv, &sim_lock);
      }
      if (s->state == SIM_SLOT_OPEN) {
        sim_slot_withdraw(q, s, sim_op_index(op)); /* aborted: the output is not written */
        continue;
      }
      if (s->state == SIM_SLOT_READY) {
        s->state = SIM_SLOT_BUSY;
        pthread_mutex_unlock(&sim_lock);
        if (s->kind == SIM_MEET_P2P)
          sim_compute_p2p(s);
        else
          sim_compute_coll(s);
        pthread_mutex_lock(&sim_lock);
        s->state = SIM_SLOT_DONE;
        pthread_cond_broadcast(&sim_cv);
      }
      while (s->state != SIM_SLOT_DONE) pthread_cond_wait(&sim_cv, &sim_lock);
      sim_slot_release(q, s);
    }
  }
  c->items--;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  while (it->ops != NULL) {
    sim_op_t *next = it->ops->next;
    free(it->ops);
    it->ops = next;
  }
  free(it);
}

mg__ncclResult_t sim_coll_enqueue(sim_comm_t *c, mg__CUstream stream, sim_op_t *ops) {
  int work = 0, never = 0;
  for (const sim_op_t *op = ops; op != NULL; op = op->next) {
    work |= !op->skip;
    never |= op->never;
  }
  sim_item_t *it = NULL;
  mg__ncclResult_t r = MG__ncclSuccess;
  if (!work && !never) goto drop; /* only zero-count calls: NCCL launches nothing */
  it = malloc(sizeof *it);
  if (it == NULL) {
    r = sim_fail(MG__ncclSystemError, "out of memory for a stream item");
    goto drop;
  }
  *it = (sim_item_t){c, ops, never};
  pthread_mutex_lock(&sim_lock);
  if (c->revoked || c->abort_flag) {
    r = sim_fail(MG__ncclInvalidUsage, "%s on rank %d: the comm was %s while the group was "
                 "issued", ops->call, c->rank, c->revoked ? "revoked" : "aborted");
  } else {
    c->items++;
  }
  pthread_mutex_unlock(&sim_lock);
  if (r != MG__ncclSuccess) goto drop;
  mg__CUresult cr = mgsim_stream_enqueue(stream, c->ctx, sim_item_run, it);
  if (cr == MG__CUDA_SUCCESS) return MG__ncclSuccess;
  pthread_mutex_lock(&sim_lock);
  c->items--;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  r = sim_fail(MG__ncclUnhandledCudaError, "%s on rank %d: stream %p took no work (CUDA %d)",
               ops->call, c->rank, (void *)stream, cr);
drop:
  free(it);
  while (ops != NULL) {
    sim_op_t *next = ops->next;
    free(ops);
    ops = next;
  }
  return r;
}
