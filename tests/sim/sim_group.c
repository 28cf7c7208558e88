/*
 * sim_group.c -- groups and the collective and send/recv calls of the simulated NCCL.
 *
 * A call checks its arguments as NCCL does (plus the buffers' memory, which NCCL checks only
 * with NCCL_CHECK_POINTERS=1 while a GPU would fault: the simulator always does), takes its
 * sequence number (collectives: the comm's nth; send/recv: the nth between the pair in that
 * direction), and is recorded in the calling thread's group. A call outside a group is a group
 * of one. The outermost ncclGroupEnd issues the group:
 *   - a call inside the group that failed fails the whole group (NCCL drops it);
 *   - blocking and nonblocking communicators may not be mixed (ncclInvalidArgument);
 *   - blocking communicators: issued inline, on the calling thread;
 *   - nonblocking: issued by a new thread of the simulator; ncclGroupEnd (or the call) returns
 *     ncclInProgress, and each communicator of the group reports ncclInProgress until that
 *     thread has enqueued its work (the cost mgcomm's blocking mode escapes).
 * Issuing is first the host side, where MGSIM_HOST_HANG holds a call as NCCL's lazy connection
 * to a peer that never comes would, then one stream item per communicator and stream (NCCL
 * launches one kernel per group and stream; sim_coll.c). Inits, splits and shrinks inside a
 * group are deferred to its end too (sim_comm.c and sim_life.c hand them over), where each runs
 * on a thread of its own, since they meet each other (mgcomm splits every rank of a process in
 * one group); a group may not mix them with operations (not simulated).
 *
 * Divisions: the thread's group; checks; issuing; the calls.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_nccl_int.h"

/* ---- the thread's group ---------------------------------------------------------------------- */

/* A call whose work waits for the end of the group: init, split, shrink. */
typedef struct sim_defer {
  sim_comm_t *c;                       /* the comm it belongs to (split: the parent) */
  const char *call;                    /* "ncclCommSplit" */
  mg__ncclResult_t (*run)(void *arg);  /* the work; it meets the other ranks */
  void (*done)(void *arg);             /* frees arg */
  void *arg;
  mg__ncclResult_t r;                  /* what run answered */
  pthread_t th;
  int started;
  struct sim_defer *next;
} sim_defer_t;

typedef struct sim_group {
  int depth;
  sim_op_t *ops, *ops_tail;   /* in call order */
  sim_defer_t *defers, *defers_tail;
  mg__ncclResult_t err;       /* the first failed call inside the group */
  int blocking;               /* of the group's communicators; -1 before the first */
} sim_group_t;

static _Thread_local sim_group_t sim_g = {0, NULL, NULL, NULL, NULL, MG__ncclSuccess, -1};

int sim_group_depth(void) { return sim_g.depth; }

/* Notes the blocking attribute of a communicator joining the group: NCCL refuses a mix. */
static mg__ncclResult_t sim_group_join(const sim_comm_t *c, const char *call) {
  if (sim_g.blocking < 0) sim_g.blocking = c->blocking;
  if (sim_g.blocking == c->blocking) return MG__ncclSuccess;
  return sim_fail(MG__ncclInvalidArgument, "%s: rank %d's comm is %s, but the group has %s "
                  "communicators already: blocking and nonblocking communicators cannot be in "
                  "one group", call, c->rank, c->blocking ? "blocking" : "nonblocking",
                  c->blocking ? "nonblocking" : "blocking");
}

mg__ncclResult_t sim_group_defer(sim_comm_t *c, const char *call,
                                 mg__ncclResult_t (*run)(void *arg), void (*done)(void *arg),
                                 void *arg) {
  mg__ncclResult_t r = sim_group_join(c, call);
  sim_defer_t *d = r == MG__ncclSuccess ? calloc(1, sizeof *d) : NULL;
  if (r == MG__ncclSuccess && d == NULL)
    r = sim_fail(MG__ncclSystemError, "%s: out of memory for a grouped call", call);
  if (r != MG__ncclSuccess) {
    if (sim_g.err == MG__ncclSuccess) sim_g.err = r;
    return r;
  }
  *d = (sim_defer_t){.c = c, .call = call, .run = run, .done = done, .arg = arg};
  if (sim_g.defers_tail != NULL)
    sim_g.defers_tail->next = d;
  else
    sim_g.defers = d;
  sim_g.defers_tail = d;
  return MG__ncclSuccess;
}

static void sim_ops_free(sim_op_t *op) {
  while (op != NULL) {
    sim_op_t *next = op->next;
    free(op);
    op = next;
  }
}

/* ---- checks ---------------------------------------------------------------------------------- */

/* [p, p + bytes) as a buffer of c: memory of c's device (device, managed, or page-locked host
 * memory the device maps), all of it inside one allocation. */
static mg__ncclResult_t sim_check_buf(const sim_comm_t *c, const void *p, size_t bytes,
                                      const char *call, const char *what) {
  if (bytes == 0) return MG__ncclSuccess;
  if (p == NULL) return sim_fail(MG__ncclInvalidArgument, "%s: %s is NULL", call, what);
  unsigned int type = 0;
  int ordinal = -2;
  bool managed = 0;
  mg__CUdeviceptr start = 0;
  size_t size = 0;
  mg__CUpointer_attribute names[5] = {
      MG__CU_POINTER_ATTRIBUTE_MEMORY_TYPE, MG__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      MG__CU_POINTER_ATTRIBUTE_IS_MANAGED, MG__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
      MG__CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *data[5] = {&type, &ordinal, &managed, &start, &size};
  mg__CUresult cr = cuPointerGetAttributes(5, names, data, (mg__CUdeviceptr)(uintptr_t)p);
  if (cr != MG__CUDA_SUCCESS)
    return sim_fail(MG__ncclUnhandledCudaError, "%s: %s %p: cuPointerGetAttributes answered %d",
                    call, what, p, cr);
  if (type == 0)
    return sim_fail(MG__ncclInvalidArgument, "%s: %s %p is not CUDA memory (a GPU would fault)",
                    call, what, p);
  if (type == MG__CU_MEMORYTYPE_DEVICE && !managed && ordinal != c->device)
    return sim_fail(MG__ncclInvalidArgument, "%s: %s %p is memory of device %d; rank %d's "
                    "comm is on device %d", call, what, p, ordinal, c->rank, c->device);
  const uintptr_t at = (uintptr_t)p;
  if (bytes > size - (at - (uintptr_t)start))
    return sim_fail(MG__ncclInvalidArgument, "%s: %s [%p, +%zu) runs past the end of its "
                    "allocation [%p, +%zu) (a GPU would fault)", call, what, p, bytes,
                    (void *)(uintptr_t)start, size);
  return MG__ncclSuccess;
}

/* Everything NCCL would refuse at the call, and what the simulator refuses besides. */
static mg__ncclResult_t sim_check(const sim_comm_t *c, const sim_op_t *op) {
  const char *call = op->call;
  mg__ncclResult_t r = MG__ncclSuccess;
  pthread_mutex_lock(&sim_lock);
  if (c->revoked)
    r = sim_fail(MG__ncclInvalidUsage, "%s: rank %d's comm is revoked", call, c->rank);
  else if (c->finalized)
    r = sim_fail(MG__ncclInvalidUsage, "%s: rank %d's comm is finalized", call, c->rank);
  else if (c->async == MG__ncclInProgress)
    r = sim_fail(MG__ncclInvalidArgument, "%s: rank %d: called before the previous operation "
                 "returned ncclSuccess (poll ncclCommGetAsyncError)", call, c->rank);
  else
    r = c->async; /* an asynchronous error sticks, as in NCCL */
  pthread_mutex_unlock(&sim_lock);
  if (r != MG__ncclSuccess) return r;
  const size_t es = sim_dtype_size(op->dtype);
  if (es == 0) {
    if (op->dtype < 0 || op->dtype >= MG__ncclNumTypes)
      return sim_fail(MG__ncclInvalidArgument, "%s: invalid data type %d", call, op->dtype);
    return sim_fail(MG__ncclInvalidArgument, "%s: data type %s is not simulated (the simulator "
                    "computes int8, uint8, int32, uint32, int64, uint64, float32 and float64)",
                    call, sim_dtype_name(op->dtype));
  }
  const int reduction = op->kind == SIM_ALLREDUCE || op->kind == SIM_REDUCE ||
                        op->kind == SIM_REDUCESCATTER;
  if (reduction && (op->redop < 0 || op->redop >= MG__ncclNumOps))
    return sim_fail(MG__ncclInvalidArgument, "%s: reduction op %d is not simulated (sum, prod, "
                    "max, min, avg; no PreMulSum)", call, op->redop);
  const int rooted = op->kind == SIM_BROADCAST || op->kind == SIM_REDUCE ||
                     op->kind == SIM_SEND || op->kind == SIM_RECV;
  if (rooted && (op->root < 0 || op->root >= c->nranks))
    return sim_fail(MG__ncclInvalidArgument, "%s: %s %d is out of [0, %d)", call,
                    op->kind == SIM_SEND || op->kind == SIM_RECV ? "peer" : "root", op->root,
                    c->nranks);
  const size_t n = (size_t)c->nranks;
  if (op->count > SIZE_MAX / es / n)
    return sim_fail(MG__ncclInvalidArgument, "%s: count %zu overflows", call, op->count);
  const size_t one = op->count * es, all = one * n;
  const int root = op->root == c->rank;
  size_t sb = one, rb = one;
  switch (op->kind) {
    case SIM_BROADCAST: sb = root ? one : 0; break;
    case SIM_REDUCE: rb = root ? one : 0; break;
    case SIM_ALLGATHER: rb = all; break;
    case SIM_REDUCESCATTER: sb = all; break;
    case SIM_SEND: rb = 0; break;
    case SIM_RECV: sb = 0; break;
    default: break;
  }
  r = sim_check_buf(c, op->send, sb, call, "sendbuff");
  if (r == MG__ncclSuccess) r = sim_check_buf(c, op->recv, rb, call, "recvbuff");
  if (r != MG__ncclSuccess) return r;
  mg__CUcontext owner = NULL;
  mg__CUresult cr = mgsim_stream_owner(op->stream, c->ctx, &owner);
  if (cr != MG__CUDA_SUCCESS)
    return sim_fail(MG__ncclUnhandledCudaError, "%s: stream %p is not a usable stream (CUDA "
                    "%d)", call, (void *)op->stream, cr);
  if (owner != c->ctx)
    return sim_fail(MG__ncclUnhandledCudaError, "%s: stream %p belongs to another context "
                    "than rank %d's device %d", call, (void *)op->stream, c->rank, c->device);
  return MG__ncclSuccess;
}

/* ---- issuing --------------------------------------------------------------------------------- */

/* 1 when one of comms[0..n) was aborted or revoked since the epochs were noted (sim_lock). */
static int sim_any_stopped(sim_comm_t *const *comms, const unsigned *epochs, int n) {
  for (int i = 0; i < n; i++)
    if (sim_stopped(comms[i], epochs[i]) || comms[i]->revoked) return 1;
  return 0;
}

/* Issues ops (taken over) of the group whose communicators are comms[0..n): the host side, then
 * the stream items. */
static mg__ncclResult_t sim_issue(sim_op_t *ops, sim_comm_t *const *comms, int n) {
  for (sim_op_t *op = ops; op != NULL; op = op->next) {
    if (!op->hang) continue;
    /* MGSIM_HOST_HANG: a peer that never connects. Only an abort or a revoke ends the wait. */
    unsigned *epochs = malloc(sizeof *epochs * (size_t)n);
    if (epochs == NULL) {
      sim_ops_free(ops);
      return sim_fail(MG__ncclSystemError, "out of memory");
    }
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < n; i++) epochs[i] = comms[i]->abort_epoch;
    sim_knob_hung(op->comm->device, 1);
    pthread_cond_broadcast(&sim_cv); /* for tests waiting for the gauge */
    while (!sim_any_stopped(comms, epochs, n)) pthread_cond_wait(&sim_cv, &sim_lock);
    sim_knob_hung(op->comm->device, -1);
    mg__ncclResult_t r = sim_fail(MG__ncclInternalError, "rank %d (device %d): %s #%llu: "
                                  "aborted while waiting for a peer to connect "
                                  "(MGSIM_HOST_HANG)", op->comm->rank, op->comm->device,
                                  op->call, (unsigned long long)op->seq);
    pthread_mutex_unlock(&sim_lock);
    free(epochs);
    sim_ops_free(ops); /* nothing of the group is launched */
    return r;
  }
  /* One item per (communicator, stream), each with its operations in call order. */
  mg__ncclResult_t r = MG__ncclSuccess;
  while (ops != NULL) {
    sim_op_t *mine = NULL, **mt = &mine, *rest = NULL, **rt = &rest;
    const sim_op_t *first = ops;
    for (sim_op_t *op = ops, *next; op != NULL; op = next) {
      next = op->next;
      op->next = NULL;
      if (op->comm == first->comm && op->stream == first->stream) {
        *mt = op;
        mt = &op->next;
      } else {
        *rt = op;
        rt = &op->next;
      }
    }
    ops = rest;
    if (r == MG__ncclSuccess)
      r = sim_coll_enqueue(mine->comm, mine->stream, mine);
    else
      sim_ops_free(mine);
  }
  return r;
}

typedef struct {
  sim_op_t *ops;
  sim_comm_t **comms;
  int n;
} sim_gjob_t;

static void *sim_group_job(void *arg) {
  sim_gjob_t *j = arg;
  mg__ncclResult_t r = sim_issue(j->ops, j->comms, j->n);
  pthread_mutex_lock(&sim_lock);
  for (int i = 0; i < j->n; i++) {
    sim_set_async(j->comms[i], r);
    j->comms[i]->jobs--;
  }
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  free(j->comms);
  free(j);
  return NULL;
}

static void *sim_defer_main(void *arg) {
  sim_defer_t *d = arg;
  mg__ncclResult_t r = d->run(d->arg);
  pthread_mutex_lock(&sim_lock);
  /* Each call's run has set its comm's async state already: setting it again here could undo
   * the InProgress of the next call, which the caller may have made on that answer. */
  d->r = r;
  d->c->jobs--;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  return NULL;
}

/* The deferred calls of a group (taken over), each on a thread of its own since they meet each
 * other, joined before it returns; their communicators' job counts were raised by the caller
 * and each thread lowers its own. The first error, else ncclSuccess. */
static mg__ncclResult_t sim_defers_run(sim_defer_t *list) {
  mg__ncclResult_t r = MG__ncclSuccess;
  for (sim_defer_t *d = list; d != NULL; d = d->next) {
    d->started = pthread_create(&d->th, NULL, sim_defer_main, d) == 0;
    if (!d->started) sim_defer_main(d); /* no thread: here (it may wait for the others) */
  }
  for (sim_defer_t *d = list, *next; d != NULL; d = next) {
    next = d->next;
    if (d->started) pthread_join(d->th, NULL);
    if (r == MG__ncclSuccess) r = d->r;
    d->done(d->arg);
    free(d);
  }
  return r;
}

static void *sim_defers_job(void *arg) {
  (void)sim_defers_run(arg); /* each comm's async state says how its call went */
  return NULL;
}

/* Issues the deferred calls of a group: inline (blocking: this thread waits inside
 * ncclGroupEnd on their communicators), or joined by a simulator thread while ncclGroupEnd
 * returns ncclInProgress. */
static mg__ncclResult_t sim_group_launch_defers(sim_defer_t *list, int blocking) {
  int n = 0;
  pthread_mutex_lock(&sim_lock);
  for (sim_defer_t *d = list; d != NULL; d = d->next, n++) {
    if (sim_find(d->c) == NULL || d->c->freeing != NULL)
      sim_violation("ncclGroupEnd: comm %p of a grouped %s was freed before the group ended",
                    (void *)d->c, d->call);
    d->c->jobs++;
    if (!blocking) d->c->async = MG__ncclInProgress;
  }
  pthread_mutex_unlock(&sim_lock);
  if (!blocking) {
    if (sim_spawn(sim_defers_job, list, "mgsim-gdefer") == 0) return MG__ncclInProgress;
    mg__ncclResult_t r = sim_defers_run(list); /* no thread: inline */
    return r != MG__ncclSuccess ? r : MG__ncclInProgress;
  }
  sim_comm_t **in = malloc(sizeof *in * (size_t)n);
  n = 0;
  for (sim_defer_t *d = list; d != NULL && in != NULL; d = d->next)
    in[n++] = sim_enter(d->c, "ncclGroupEnd");
  mg__ncclResult_t r = sim_defers_run(list);
  for (int i = 0; in != NULL && i < n; i++) sim_leave(in[i]);
  free(in); /* without memory for it, the calling thread is just not counted inside */
  return r;
}

/* Issues the group the thread has collected. `inside` is the communicator the calling thread
 * is inside already (a call outside a group), or NULL (ncclGroupEnd: it enters each). */
static mg__ncclResult_t sim_group_launch(sim_comm_t *inside) {
  sim_group_t g = sim_g;
  sim_g.ops = sim_g.ops_tail = NULL;
  sim_g.defers = sim_g.defers_tail = NULL;
  sim_g.err = MG__ncclSuccess;
  sim_g.blocking = -1;
  mg__ncclResult_t r = g.err;
  if (r == MG__ncclSuccess && g.ops != NULL && g.defers != NULL)
    r = sim_fail(MG__ncclInvalidUsage, "a group with both operations and inits, splits or "
                 "shrinks is not simulated");
  if (r != MG__ncclSuccess) {
    sim_ops_free(g.ops);
    for (sim_defer_t *d = g.defers, *next; d != NULL; d = next) {
      next = d->next;
      pthread_mutex_lock(&sim_lock);
      if (d->c->clique == NULL) d->c->async = r; /* an init handed out: its owner aborts it */
      pthread_mutex_unlock(&sim_lock);
      d->done(d->arg);
      free(d);
    }
    return r;
  }
  if (g.defers != NULL) return sim_group_launch_defers(g.defers, g.blocking);
  if (g.ops == NULL) return MG__ncclSuccess;
  /* The distinct communicators: the job's list, and this thread's copy to leave them by. */
  int n = 0;
  for (sim_op_t *op = g.ops; op != NULL; op = op->next) n++;
  sim_comm_t **comms = malloc(sizeof *comms * (size_t)n);
  sim_comm_t **mine = malloc(sizeof *mine * (size_t)n);
  sim_gjob_t *j = malloc(sizeof *j);
  if (comms == NULL || mine == NULL || j == NULL) {
    free(comms);
    free(mine);
    free(j);
    sim_ops_free(g.ops);
    return sim_fail(MG__ncclSystemError, "out of memory for a group");
  }
  n = 0;
  for (sim_op_t *op = g.ops; op != NULL; op = op->next) {
    int seen = 0;
    for (int i = 0; i < n && !seen; i++) seen = comms[i] == op->comm;
    if (!seen) comms[n++] = op->comm;
  }
  memcpy(mine, comms, sizeof *mine * (size_t)n);
  /* This thread is inside ncclGroupEnd on each (a VIOLATION if one was freed meanwhile). */
  for (int i = 0; i < n; i++)
    if (mine[i] != inside) (void)sim_enter(mine[i], "ncclGroupEnd");
  if (g.blocking) {
    r = sim_issue(g.ops, comms, n);
    free(comms);
    free(j);
  } else {
    pthread_mutex_lock(&sim_lock);
    for (int i = 0; i < n; i++) {
      comms[i]->async = MG__ncclInProgress;
      comms[i]->jobs++;
    }
    pthread_mutex_unlock(&sim_lock);
    *j = (sim_gjob_t){g.ops, comms, n};
    if (sim_spawn(sim_group_job, j, "mgsim-group") == 0) {
      r = MG__ncclInProgress;
    } else {
      sim_group_job(j); /* no thread: inline; it frees j and comms */
      pthread_mutex_lock(&sim_lock);
      r = mine[0]->async;
      pthread_mutex_unlock(&sim_lock);
    }
  }
  for (int i = 0; i < n; i++)
    if (mine[i] != inside) sim_leave(mine[i]);
  free(mine);
  return r;
}

/* ---- the calls ------------------------------------------------------------------------------- */

MGSIM_API mg__ncclResult_t ncclGroupStart(void) {
  sim_nccl_init();
  sim_g.depth++;
  return MG__ncclSuccess;
}

MGSIM_API mg__ncclResult_t ncclGroupEnd(void) {
  sim_nccl_init();
  if (sim_g.depth == 0)
    return sim_fail(MG__ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--sim_g.depth > 0) return MG__ncclSuccess;
  return sim_group_launch(NULL);
}

/* A collective or send/recv: checks, numbering, then the group (of one, outside a group). */
static mg__ncclResult_t sim_call(const sim_op_t *tmpl, mg__ncclComm_t comm) {
  sim_comm_t *c = sim_enter(comm, tmpl->call);
  if (c == NULL) return sim_fail(MG__ncclInvalidArgument, "%s: comm is NULL", tmpl->call);
  const int implicit = sim_g.depth == 0;
  mg__ncclResult_t r = sim_check(c, tmpl);
  if (r == MG__ncclSuccess) r = sim_group_join(c, tmpl->call);
  sim_op_t *op = NULL;
  if (r == MG__ncclSuccess && (op = malloc(sizeof *op)) == NULL)
    r = sim_fail(MG__ncclSystemError, "%s: out of memory", tmpl->call);
  if (r != MG__ncclSuccess) {
    if (implicit)
      sim_g.blocking = -1; /* a group of one that never started */
    else if (sim_g.err == MG__ncclSuccess)
      sim_g.err = r; /* the group fails as a whole */
    sim_leave(c);
    return r;
  }
  *op = *tmpl;
  op->comm = c;
  op->next = NULL;
  op->slot = NULL;
  op->skip = op->count == 0; /* NCCL issues nothing for it */
  pthread_mutex_lock(&sim_lock);
  switch (op->kind) {
    case SIM_SEND: op->seq = c->send_seq[op->root]++; break;
    case SIM_RECV: op->seq = c->recv_seq[op->root]++; break;
    default: op->seq = c->coll_seq++; break;
  }
  sim_knob_count(c->device, &op->hang, &op->never); /* a rank is its device (sim.h) */
  pthread_mutex_unlock(&sim_lock);
  if (sim_g.ops_tail != NULL)
    sim_g.ops_tail->next = op;
  else
    sim_g.ops = op;
  sim_g.ops_tail = op;
  if (implicit) r = sim_group_launch(c);
  sim_leave(c);
  return r;
}

#define SIM_OP(kind_, call_, send_, recv_, count_, dtype_, redop_, root_, stream_)            \
  (sim_op_t) {                                                                               \
    .kind = (kind_), .call = (call_), .send = (send_), .recv = (recv_), .count = (count_),   \
    .dtype = (dtype_), .redop = (redop_), .root = (root_), .stream = (stream_)               \
  }

MGSIM_API mg__ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                                         mg__ncclDataType_t dtype, mg__ncclRedOp_t op,
                                         mg__ncclComm_t comm, mg__CUstream stream) {
  const sim_op_t t =
      SIM_OP(SIM_ALLREDUCE, "ncclAllReduce", send, recv, count, dtype, op, 0, stream);
  return sim_call(&t, comm);
}

MGSIM_API mg__ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
                                         mg__ncclDataType_t dtype, int root, mg__ncclComm_t comm,
                                         mg__CUstream stream) {
  const sim_op_t t =
      SIM_OP(SIM_BROADCAST, "ncclBroadcast", send, recv, count, dtype, 0, root, stream);
  return sim_call(&t, comm);
}

MGSIM_API mg__ncclResult_t ncclReduce(const void *send, void *recv, size_t count,
                                      mg__ncclDataType_t dtype, mg__ncclRedOp_t op, int root,
                                      mg__ncclComm_t comm, mg__CUstream stream) {
  const sim_op_t t = SIM_OP(SIM_REDUCE, "ncclReduce", send, recv, count, dtype, op, root, stream);
  return sim_call(&t, comm);
}

MGSIM_API mg__ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount,
                                         mg__ncclDataType_t dtype, mg__ncclComm_t comm,
                                         mg__CUstream stream) {
  const sim_op_t t =
      SIM_OP(SIM_ALLGATHER, "ncclAllGather", send, recv, sendcount, dtype, 0, 0, stream);
  return sim_call(&t, comm);
}

MGSIM_API mg__ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount,
                                             mg__ncclDataType_t dtype, mg__ncclRedOp_t op,
                                             mg__ncclComm_t comm, mg__CUstream stream) {
  const sim_op_t t = SIM_OP(SIM_REDUCESCATTER, "ncclReduceScatter", send, recv, recvcount, dtype,
                            op, 0, stream);
  return sim_call(&t, comm);
}

MGSIM_API mg__ncclResult_t ncclSend(const void *send, size_t count, mg__ncclDataType_t dtype,
                                    int peer, mg__ncclComm_t comm, mg__CUstream stream) {
  const sim_op_t t = SIM_OP(SIM_SEND, "ncclSend", send, NULL, count, dtype, 0, peer, stream);
  return sim_call(&t, comm);
}

MGSIM_API mg__ncclResult_t ncclRecv(void *recv, size_t count, mg__ncclDataType_t dtype, int peer,
                                    mg__ncclComm_t comm, mg__CUstream stream) {
  const sim_op_t t = SIM_OP(SIM_RECV, "ncclRecv", NULL, recv, count, dtype, 0, peer, stream);
  return sim_call(&t, comm);
}
