/*
 * nccl_coll.c -- the NCCL backend's operations: one launch posts a batch (one operation, or one
 * mg_group of operations on communicators of this backend, e.g. every rank of an
 * mg_comm_init_all driven by one thread) as one NCCL group, then waits until NCCL has issued
 * it, within the deadline.
 *
 * In blocking mode (nc is a blocking communicator) NCCL issues the group on the calling thread
 * and there is nothing to wait for; the call is bounded by the watchdog instead (each
 * communicator's call_deadline is set around it), which aborts the communicator past the
 * deadline, and the interrupt's revoke lets the call return (MG_ERR_TIMED_OUT).
 *
 * Why the wait in nonblocking mode: NCCL issues the group's kernels from a thread of its own, and nothing else may be put on the streams before the communicators' state leaves
 * ncclInProgress (NCCL's rule); so the call returns once it has, and the caller's next kernel
 * on the stream is ordered after the operation. The wait is also where a peer that never posts
 * its side of a first send/recv (NCCL connects lazily) becomes MG_ERR_TIMED_OUT, and where an
 * abort from another thread is noticed (MG_ERR_ABORTED).
 *
 * All-to-all, gather and scatter are NCCL's own calls where the loaded NCCL has them (2.28),
 * grouped send/recv otherwise; all-to-allv is always grouped send/recv (zero counts skipped on
 * both sides, which agree on them). PreMulSum ops are made for the launch and destroyed after
 * it (NCCL copies the op into each operation when it is called), so that destroying a custom op
 * never affects an operation already posted.
 *
 * Errors in the middle of a group still end the group: NCCL records a failed call and its
 * ncclGroupEnd then drops the whole group, which fails every operation of it.
 *
 * Divisions: waiting; issuing one operation; the launch.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/nccl/nccl.h"
#include "base/clock.h"
#include "base/spinlock.h"
#include "core/trace.h"

/* ---- waiting -------------------------------------------------------------------------------- */

/* How long a wait spins, then yields, before it sleeps: NCCL's thread usually issues a group
 * within tens of microseconds, and sleeping that early would add the timer's slack (about
 * 50 us on Linux) to every operation. */
#define MG__NCCL_SPIN_S 200e-6
#define MG__NCCL_YIELD_S 5e-3
#define MG__NCCL_SLEEP_MAX_NS 1000000L

void mg__nccl_backoff(mg__nccl_backoff_t *b, double now) {
  if (b->start <= 0) {
    b->start = now;
    b->sleep_ns = 20000;
  }
  if (now - b->start < MG__NCCL_SPIN_S) {
    mg__cpu_relax(); /* one pause: a poll must see NCCL's answer within a fraction of a us */
  } else if (now - b->start < MG__NCCL_YIELD_S) {
    sched_yield();
  } else {
    struct timespec ts = {0, b->sleep_ns};
    nanosleep(&ts, NULL); /* an early wake-up (EINTR) only polls sooner */
    if (b->sleep_ns < MG__NCCL_SLEEP_MAX_NS) b->sleep_ns *= 2;
  }
}

static const char *mg__nccl_what(mg__op_t *const *ops, int n, const char *call, char *buf,
                                 size_t len);

/* mg__nccl_wait, naming the launch of ops[0..nops) in its messages when ops is not NULL (the
 * text is made only when an error needs it: formatting costs a microsecond). */
static mg_status_t mg__nccl_poll(mg_comm_t *const *comms, int n, double deadline,
                                 const char *call, mg__op_t *const *ops, int nops) {
  mg__nccl_backoff_t b = {0, 0};
  char w[400];
  for (;;) {
    int pending = 0;
    for (int i = 0; i < n; i++) {
      const mg__ncclComm_t nc = mg__ncomm(comms[i])->lc;
      mg__ncclResult_t state = MG__ncclSuccess;
      mg__ncclResult_t r = mg__nccl.CommGetAsyncError(nc, &state);
      if (r != MG__ncclSuccess) state = r; /* the query itself failed: report that */
      if (state == MG__ncclInProgress) {
        pending++;
      } else if (state != MG__ncclSuccess) {
        mg_status_t st = mg__nccl_error(state, mg__nccl_what(ops, nops, call, w, sizeof w), nc);
        mg__error_prefix("rank %d of %d (device %d)", comms[i]->rank, comms[i]->nranks,
                         comms[i]->device);
        return st;
      }
    }
    if (pending == 0) return MG_OK;
    for (int i = 0; i < n; i++)
      if (atomic_load(&comms[i]->aborting))
        return mg__error(MG_ERR_ABORTED,
                         "rank %d of %d (device %d): %s: the communicator was aborted while NCCL "
                         "was still at work", comms[i]->rank, comms[i]->nranks, comms[i]->device,
                         mg__nccl_what(ops, nops, call, w, sizeof w));
    const double now = mg__now();
    if (now > deadline) {
      const mg_comm_t *c = comms[0];
      return mg__error(MG_ERR_TIMED_OUT,
                       "rank %d of %d (device %d): %s: NCCL had not finished after %g s (%d of "
                       "%d communicators still in progress); NCCL waits here for peers that have "
                       "not posted the matching call (the first send/recv between two ranks, "
                       "init, split, finalize)",
                       c->rank, c->nranks, c->device, mg__nccl_what(ops, nops, call, w, sizeof w),
                       c->timeout_s, pending, n);
    }
    mg__nccl_backoff(&b, now);
  }
}

/* 1 when NCCL's first answer is that the launch's one communicator has issued everything: then
 * the wait costs one query, made here. Otherwise mg__nccl_poll asks again (NCCL's errors are
 * sticky) and waits. */
static inline int mg__nccl_issued(mg_comm_t *const *comms, int n) {
  mg__ncclResult_t state = MG__ncclInProgress;
  return n == 1 &&
         mg__nccl.CommGetAsyncError(mg__ncomm(comms[0])->lc, &state) == MG__ncclSuccess &&
         state == MG__ncclSuccess;
}

mg_status_t mg__nccl_wait(mg_comm_t *const *comms, int n, double deadline, const char *what) {
  return mg__nccl_poll(comms, n, deadline, what, NULL, 0);
}

mg_status_t mg__nccl_call_error(mg_comm_t *comm, mg__ncclResult_t r, const char *what) {
  if (atomic_load(&comm->call_expired)) {
    char where[768];
    mg__trace_describe(comm, where, sizeof where);
    return mg__error(MG_ERR_TIMED_OUT,
                     "%s: NCCL had not returned after %g s, and the watchdog aborted the "
                     "communicator; NCCL waits on the host for a peer that has not posted the "
                     "matching call (the first operation between two ranks), or for room in its "
                     "queue behind a GPU that does not progress; %s", what, comm->timeout_s,
                     where);
  }
  if (atomic_load(&comm->aborting))
    return mg__error(MG_ERR_ABORTED,
                     "%s: the communicator was aborted while NCCL held this call", what);
  return mg__nccl_error(r, what, mg__ncomm(comm)->nc);
}

/* ---- issuing one operation ---------------------------------------------------------------- */

static const char *mg__nccl_desc(const mg__op_t *op, char *buf, size_t len) {
  const mg_comm_t *c = op->comm;
  if (mg__opkind_is_collective(op->kind))
    snprintf(buf, len, "%s #%llu (%s x %zu) on rank %d of %d (device %d)",
             mg__opkind_name(op->kind), (unsigned long long)op->seq, mg_dtype_name(op->dtype),
             op->count, c->rank, c->nranks, c->device);
  else
    snprintf(buf, len, "%s #%llu %s rank %d (%s x %zu) on rank %d of %d (device %d)",
             mg__opkind_name(op->kind), (unsigned long long)op->seq,
             op->kind == MG_OPK_SEND ? "to" : "from", op->root, mg_dtype_name(op->dtype),
             op->count, c->rank, c->nranks, c->device);
  return buf;
}

/* "<call>: <first op> [and N more operations of its group]"; just call without ops. */
static const char *mg__nccl_what(mg__op_t *const *ops, int n, const char *call, char *buf,
                                 size_t len) {
  if (ops == NULL) return call;
  size_t at = (size_t)snprintf(buf, len, "%s%s", call != NULL ? call : "", call != NULL ? ": " : "");
  if (at < len) mg__nccl_desc(ops[0], buf + at, len - at);
  at = strlen(buf);
  if (n > 1 && at < len)
    snprintf(buf + at, len - at, " and %d more operation%s of its group", n - 1, n > 2 ? "s" : "");
  return buf;
}

/* 1 when the operation is one NCCL call on the loaded library (else several send/recv). */
static int mg__nccl_single_call(const mg__op_t *op, int native) {
  switch (op->kind) {
    case MG_OPK_ALL_TO_ALLV: return 0;
    case MG_OPK_ALL_TO_ALL:
    case MG_OPK_GATHER:
    case MG_OPK_SCATTER: return native;
    default: return 1;
  }
}

/* Issues op as grouped send/recv (inside the launch's group): all-to-all, gather and scatter on
 * an NCCL without them, all-to-allv always. Names the call that failed. */
static mg__ncclResult_t mg__nccl_issue_p2p(const mg__op_t *op,
                                                                     const char **call) {
  const mg__ncclComm_t nc = mg__ncomm(op->comm)->nc;
  const mg__CUstream st = (mg__CUstream)op->stream;
  const mg__ncclDataType_t dt = (mg__ncclDataType_t)op->dtype;
  const char *s = op->send;
  char *r = op->recv;
  const size_t c = op->count, es = mg_dtype_size(op->dtype), blk = c * es;
  const int n = op->comm->nranks, me = op->comm->rank, root = op->root;
  mg__ncclResult_t res = MG__ncclSuccess;
  switch (op->kind) {
    case MG_OPK_ALL_TO_ALL:
      for (int p = 0; p < n && c > 0 && res == MG__ncclSuccess; p++) {
        *call = "ncclSend";
        res = mg__nccl.Send(s + (size_t)p * blk, c, dt, p, nc, st);
        if (res != MG__ncclSuccess) break;
        *call = "ncclRecv";
        res = mg__nccl.Recv(r + (size_t)p * blk, c, dt, p, nc, st);
      }
      return res;
    case MG_OPK_GATHER:
      if (c == 0) return res;
      if (me != root) {
        *call = "ncclSend";
        return mg__nccl.Send(s, c, dt, root, nc, st);
      }
      for (int p = 0; p < n && res == MG__ncclSuccess; p++) {
        char *dst = r + (size_t)p * blk;
        if (p == me && dst == s) continue; /* in place: the root's part is there already */
        if (p == me) {
          *call = "ncclSend";
          res = mg__nccl.Send(s, c, dt, me, nc, st);
          if (res != MG__ncclSuccess) break;
        }
        *call = "ncclRecv";
        res = mg__nccl.Recv(dst, c, dt, p, nc, st);
      }
      return res;
    case MG_OPK_SCATTER:
      if (c == 0) return res;
      if (me != root) {
        *call = "ncclRecv";
        return mg__nccl.Recv(r, c, dt, root, nc, st);
      }
      for (int p = 0; p < n && res == MG__ncclSuccess; p++) {
        const char *src = s + (size_t)p * blk;
        if (p == me && src == r) continue; /* in place */
        *call = "ncclSend";
        res = mg__nccl.Send(src, c, dt, p, nc, st);
        if (res != MG__ncclSuccess || p != me) continue;
        *call = "ncclRecv";
        res = mg__nccl.Recv(r, c, dt, me, nc, st);
      }
      return res;
    case MG_OPK_ALL_TO_ALLV: {
      const size_t *sc = op->v[0], *sd = op->v[1], *rc = op->v[2], *rd = op->v[3];
      for (int p = 0; p < n && res == MG__ncclSuccess; p++) {
        if (sc[p] > 0) {
          *call = "ncclSend";
          res = mg__nccl.Send(s + sd[p] * es, sc[p], dt, p, nc, st);
          if (res != MG__ncclSuccess) break;
        }
        if (rc[p] > 0) {
          *call = "ncclRecv";
          res = mg__nccl.Recv(r + rd[p] * es, rc[p], dt, p, nc, st);
        }
      }
      return res;
    }
    default:
      *call = "(no NCCL call)";
      return MG__ncclInternalError; /* argcheck admits only the kinds above */
  }
}

/* Issues op (inside the launch's group, or alone when it is a single call). rop is the
 * reduction op to pass. Returns NCCL's answer and names the call that gave it. */
static mg__ncclResult_t mg__nccl_issue(const mg__op_t *op, mg__ncclRedOp_t rop, int native,
                                               const char **call) {
  const mg__ncclComm_t nc = mg__ncomm(op->comm)->nc;
  const mg__CUstream st = (mg__CUstream)op->stream;
  const mg__ncclDataType_t dt = (mg__ncclDataType_t)op->dtype;
  const void *s = op->send;
  void *r = op->recv;
  const size_t c = op->count;
  const int root = op->root;
  switch (op->kind) {
    case MG_OPK_ALL_REDUCE:
      *call = "ncclAllReduce";
      return mg__nccl.AllReduce(s, r, c, dt, rop, nc, st);
    case MG_OPK_BROADCAST:
      *call = "ncclBroadcast";
      return mg__nccl.Broadcast(s, r, c, dt, root, nc, st);
    case MG_OPK_REDUCE:
      *call = "ncclReduce";
      return mg__nccl.Reduce(s, r, c, dt, rop, root, nc, st);
    case MG_OPK_ALL_GATHER:
      *call = "ncclAllGather";
      return mg__nccl.AllGather(s, r, c, dt, nc, st);
    case MG_OPK_REDUCE_SCATTER:
      *call = "ncclReduceScatter";
      return mg__nccl.ReduceScatter(s, r, c, dt, rop, nc, st);
    case MG_OPK_SEND:
      *call = "ncclSend";
      return mg__nccl.Send(s, c, dt, root, nc, st);
    case MG_OPK_RECV:
      *call = "ncclRecv";
      return mg__nccl.Recv(r, c, dt, root, nc, st);
    case MG_OPK_ALL_TO_ALL:
      if (!native) return mg__nccl_issue_p2p(op, call);
      *call = "ncclAlltoAll";
      return mg__nccl.AlltoAll(s, r, c, dt, nc, st);
    case MG_OPK_GATHER:
      if (!native) return mg__nccl_issue_p2p(op, call);
      *call = "ncclGather";
      return mg__nccl.Gather(s, r, c, dt, root, nc, st);
    case MG_OPK_SCATTER:
      if (!native) return mg__nccl_issue_p2p(op, call);
      *call = "ncclScatter";
      return mg__nccl.Scatter(s, r, c, dt, root, nc, st);
    case MG_OPK_ALL_TO_ALLV: return mg__nccl_issue_p2p(op, call);
    default:
      *call = "(no NCCL call)";
      return MG__ncclInternalError; /* argcheck admits only the kinds above */
  }
}

/* NCCL refused op's call (or its group's end). A blocking call that the watchdog stopped, or
 * one an abort stopped, says so (mg__nccl_call_error); otherwise NCCL's own error. Out of line:
 * an error is rare. */
static __attribute__((noinline, cold)) mg_status_t mg__nccl_issue_error(const mg__op_t *op,
                                                                       mg__ncclResult_t r,
                                                                       const char *call) {
  char d[320];
  mg_comm_t *c = op->comm;
  if (mg__ncomm(c)->blocking && (atomic_load(&c->call_expired) || atomic_load(&c->aborting)))
    return mg__nccl_call_error(c, r, mg__nccl_desc(op, d, sizeof d));
  mg_status_t st = mg__nccl_error(r, call, mg__ncomm(c)->nc);
  mg__error_prefix("%s", mg__nccl_desc(op, d, sizeof d));
  return st;
}

/* ---- the launch --------------------------------------------------------------------------- */

#define MG__NCCL_INLINE_OPS 16

/* A PreMulSum op for op, made for this launch (out of the common path: custom ops are rare). */
static __attribute__((noinline, cold)) mg_status_t mg__nccl_premul_make(const mg__op_t *op,
                                                                         mg__ncclRedOp_t *rop) {
  const mg__ncclComm_t nc = mg__ncomm(op->comm)->nc;
  void *scalar = op->redop.residence == MG_SCALAR_HOST_IMMEDIATE ? (void *)op->redop.scalar
                                                                 : (void *)op->redop.scalar_ptr;
  mg__ncclResult_t r = mg__nccl.RedOpCreatePreMulSum(rop, scalar, (mg__ncclDataType_t)op->dtype,
                                                     (mg__ncclScalarResidence_t)op->redop.residence,
                                                     nc);
  if (r == MG__ncclSuccess) return MG_OK;
  char d[320];
  mg_status_t st = mg__nccl_error(r, "ncclRedOpCreatePreMulSum", nc);
  mg__error_prefix("%s", mg__nccl_desc(op, d, sizeof d));
  return st;
}

/* The distinct communicators of ops[0..n) into comms (n entries at most); the earliest deadline. */
static int mg__nccl_comms_of(mg__op_t *const *ops, int n, mg_comm_t **comms, double *deadline) {
  int ncomms = 0;
  *deadline = ops[0]->deadline;
  for (int i = 0; i < n; i++) {
    mg_comm_t *c = ops[i]->comm;
    int seen = 0;
    for (int j = 0; j < ncomms && !seen; j++) seen = comms[j] == c;
    if (!seen) comms[ncomms++] = c;
    if (ops[i]->deadline < *deadline) *deadline = ops[i]->deadline;
  }
  return ncomms;
}

/* The launch of n operations, for one operation (mg__nccl_launch) or a group
 * (mg__nccl_launch_batch). */
static inline __attribute__((always_inline)) mg_status_t mg__nccl_launch_n(mg__op_t *const *ops,
                                                                           int n) {
  mg__ncclRedOp_t rops_inline[MG__NCCL_INLINE_OPS];
  mg_comm_t *comms_inline[MG__NCCL_INLINE_OPS];
  mg__ncclRedOp_t *rops = rops_inline;
  mg_comm_t **comms = comms_inline;
  if (__builtin_expect(n > MG__NCCL_INLINE_OPS, 0)) {
    rops = malloc(sizeof *rops * (size_t)n);
    comms = malloc(sizeof *comms * (size_t)n);
    if (rops == NULL || comms == NULL) {
      free(rops);
      free(comms);
      return mg__error(MG_ERR_OUT_OF_MEMORY, "NCCL backend: out of memory for a group of %d", n);
    }
  }
  char what[400];
  const int native = mg__ncomm(ops[0]->comm)->native; /* one library: the same on every comm */
  double deadline;
  const int ncomms = mg__nccl_comms_of(ops, n, comms, &deadline);

  /* The first communicator's device is current for the whole launch: NCCL needs a context on
   * the calling thread, not the device of each communicator (it sets that itself). */
  mg__CUcontext saved = NULL, ctx = mg__ncomm(ops[0]->comm)->ctx;
  mg_status_t st = mg__device_ctx_enter(ctx, &saved);
  if (st < 0) {
    mg__error_prefix("%s", mg__nccl_what(ops, n, NULL, what, sizeof what));
    goto out;
  }

  /* Custom ops, for this launch only. */
  int made = 0;
  for (; made < n && st == MG_OK; made++) {
    rops[made] = (mg__ncclRedOp_t)ops[made]->redop.op;
    /* Over one rank an average is the value itself: NCCL's one-rank PreMulSum kernel, which it
     * would use, is wrong (nccl_check.c), its copy is not. */
    if (ops[made]->redop.op == MG_AVG && ops[made]->comm->nranks == 1)
      rops[made] = (mg__ncclRedOp_t)MG_SUM;
    if (__builtin_expect(ops[made]->redop.premul, 0)) st = mg__nccl_premul_make(ops[made], &rops[made]);
  }
  if (st < 0) made--; /* the op that failed has none */

  const int blocking = mg__ncomm(ops[0]->comm)->blocking;
  for (int i = 1; i < ncomms && st == MG_OK; i++)
    if (mg__ncomm(comms[i])->blocking != blocking)
      st = mg__error(MG_ERR_INVALID_USAGE,
                     "%s: a group cannot mix blocking and nonblocking NCCL communicators (NCCL "
                     "refuses it): rank %d's is %s, rank %d's is %s",
                     mg__nccl_what(ops, n, NULL, what, sizeof what), comms[0]->rank,
                     blocking ? "blocking" : "nonblocking", comms[i]->rank,
                     blocking ? "nonblocking" : "blocking");
  if (st == MG_OK) {
    const int grouped = n > 1 || !mg__nccl_single_call(ops[0], native);
    if (blocking)
      for (int i = 0; i < ncomms; i++) mg__comm_call_enter(comms[i], deadline);
    mg__ncclResult_t r = grouped ? mg__nccl.GroupStart() : MG__ncclSuccess;
    if (r != MG__ncclSuccess) {
      st = mg__nccl_error(r, "ncclGroupStart", NULL);
      mg__error_prefix("%s", mg__nccl_what(ops, n, NULL, what, sizeof what));
    } else {
      for (int i = 0; i < n; i++) {
        const char *call = NULL;
        r = mg__nccl_issue(ops[i], rops[i], native, &call);
        if (__builtin_expect(r != MG__ncclSuccess && r != MG__ncclInProgress, 0)) {
          st = mg__nccl_issue_error(ops[i], r, call);
          break; /* NCCL recorded it: its ncclGroupEnd drops the whole group */
        }
      }
      if (grouped) {
        r = mg__nccl.GroupEnd();
        if (r != MG__ncclSuccess && r != MG__ncclInProgress && st == MG_OK) {
          st = mg__nccl_issue_error(ops[0], r, "ncclGroupEnd");
          if (n > 1) mg__error_prefix("%s", mg__nccl_what(ops, n, NULL, what, sizeof what));
        }
      }
      if (blocking)
        for (int i = 0; i < ncomms; i++) mg__comm_call_leave(comms[i]);
      else if (st == MG_OK && !mg__nccl_issued(comms, ncomms))
        st = mg__nccl_poll(comms, ncomms, deadline, grouped ? "ncclGroupEnd" : "the NCCL call",
                           ops, n);
    }
  }

  for (int i = 0; i < made; i++)
    if (__builtin_expect(ops[i]->redop.premul, 0))
      /* Fails only for an op NCCL does not know, which cannot be: nothing to undo. */
      (void)mg__nccl.RedOpDestroy(rops[i], mg__ncomm(ops[i]->comm)->nc);
  mg__device_ctx_leave(ctx, saved);
out:
  /* One NCCL group succeeds or fails as a whole. */
  for (int i = 0; i < n; i++) ops[i]->status = st;
  if (rops != rops_inline) free(rops);
  if (comms != comms_inline) free(comms);
  return st;
}

/* Groups: apart from the launch of one operation, the common case. */
static __attribute__((noinline)) mg_status_t mg__nccl_launch_batch(mg__op_t *const *ops, int n) {
  return mg__nccl_launch_n(ops, n);
}

mg_status_t mg__nccl_launch_nccl(mg__op_t *const *ops, int n) {
  return n == 1 ? mg__nccl_launch_n(ops, 1) : mg__nccl_launch_batch(ops, n);
}

/* A peer of this process stopped (nccl_progress.c): nothing of ops[0..n) is enqueued, since the
 * work would wait for that peer for ever, or reach buffers that its abort freed. */
static __attribute__((noinline, cold)) mg_status_t mg__nccl_refuse_stopped(mg__op_t *const *ops,
                                                                          int n, mg_status_t st) {
  char what[400];
  mg__error_prefix("%s", mg__nccl_what(ops, n, NULL, what, sizeof what));
  for (int i = 0; i < n; i++) ops[i]->status = st;
  return st;
}

mg_status_t mg__nccl_launch(mg__op_t *const *ops, int n) {
  for (int i = 0; i < n; i++) {
    const mg_status_t st = mg__nccl_peers_stopped(ops[i]->comm);
    if (__builtin_expect(st < 0, 0)) return mg__nccl_refuse_stopped(ops, n, st);
  }
  if (mg__nccl_kern_wanted(ops, n)) return mg__nccl_kern_launch(ops, n); /* nccl_kern.c */
  return mg__nccl_launch_nccl(ops, n);
}
