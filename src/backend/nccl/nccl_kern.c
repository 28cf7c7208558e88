/*
 * nccl_kern.c -- the NCCL backend's all_reduce through mgcomm's own kernels (src/kernels/,
 * docs/kernels.md) where they can run and the size is under their limit; NCCL's otherwise.
 *
 * The choice (kern_choose.c) depends only on what every rank shares: the number of ranks, the
 * dtype, op and size, the variables (set alike), and whether every pair of the ranks' GPUs has
 * peer access, which the ranks agree on. So every rank of a communicator picks the same
 * algorithm for the same call.
 *
 * Set-up, at the first all_reduce of a communicator that would be ours: each rank makes its
 * context (flags and staging on its GPU) and the ranks all-gather their records over NCCL on the
 * communicator itself (the records carry each rank's GPU, process and CUDA IPC handle); each rank
 * checks peer access to every other rank's GPU (enabling it in one process), maps the peers'
 * areas, and a second all-gather makes the verdict common: every rank ready, or the first reason
 * why not, after which NCCL runs every all_reduce of the communicator (or, with
 * MGCOMM_ALGO=mgcomm, they are refused). The set-up of a launch is one NCCL group per exchange
 * over every communicator of the launch, so that one thread may drive every rank.
 *
 * Buffers in place: a rank whose ranks are all threads of this process, whose message is at
 * least MGCOMM_KERNELS_INPLACE_BYTES, and whose send and recv the peers can reach
 * (mg__nccl_kern_reachable: mgcomm's own record of its allocations and registrations, never a
  * guess) lends them to the pull algorithms instead of copying send into its staging area. Each
 * rank decides for itself whether it lends; whether the ranks exchange their addresses at all
 * (a round trip) depends only on what they share, so smaller calls pay nothing for it. Ranks of
 * several processes lend only buffers of a symmetric registration, which every rank mapped when
 * it was made (mg__nccl_kern_register: the kernels' registration, after NCCL's window).
 *
 * Failures: a kernel that waited past the communicator's timeout for a peer, that an abort
 * stopped, or to which a peer lent a buffer this rank had deregistered, records it in its
 * context; the backend's async_error reports it (MG_ERR_TIMED_OUT, MG_ERR_ABORTED,
 * MG_ERR_INVALID_USAGE), and the watchdog acts on it as on NCCL's errors. The abort's interrupt sets
 * the kernels' abort word, so no kernel of ours keeps a GPU waiting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/nccl/nccl.h"
#include "base/clock.h"
#include "base/log.h"
#include "kernels/kernels.h"
#include "p2p/p2p.h"

typedef struct mg__nkern {
  int state;              /* 0: not set up; 1: ready; -1: the kernels cannot run here */
  int local;              /* state 1: every rank is a thread of this process */
  int registered;         /* a symmetric registration was tried through the kernels (on every
                           * rank alike): calls may lend from then on */
  struct {
    void *win;            /* the registration's NCCL window (NULL: a free entry) */
    uint64_t seq;         /* and the kernels' (mg__kern_reg_rec_t.seq) */
  } regs[MG_KERN_MAX_REGS];
  char why[200];          /* state -1: the ranks' agreed reason */
  mg__kern_policy_t pol;
  mg__kern_ctx_t *ctx;
} mg__nkern_t;

/* What a rank tells its peers, in both exchanges. */
typedef struct mg__nkern_rec {
  mg__kern_peer_t peer;
  char bus[32];           /* the PCI bus id of the rank's GPU */
  int32_t ok;             /* 1: this rank can go on */
  char why[156];          /* ok == 0: why not */
} mg__nkern_rec_t;

/* comm's state, made on first use (the first all_reduce's check, which may run outside the
 * comm's lock): published with release, read with acquire, so that the watchdog (async_error)
 * and the abort's interrupt see it whole or not at all. */
static mg__nkern_t *mg__nkern(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__nkern_t *k = __atomic_load_n(&nx->kern, __ATOMIC_ACQUIRE);
  if (k != NULL) return k;
  k = calloc(1, sizeof *k);
  if (k == NULL) return NULL;
  mg__kern_policy_get(comm->nranks, comm->config.all_reduce_algo, &k->pol);
  mg__nkern_t *none = NULL;
  if (__atomic_compare_exchange_n(&nx->kern, &none, k, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return k;
  free(k); /* another thread's is there */
  return none;
}

/* Why the kernels cannot run in this process (not built, no driver support), or NULL. */
static const char *mg__nkern_unavailable(void) {
  static char why[MG__ERROR_LEN];
  static _Atomic int known; /* 1: available; -1: not, why says it */
  int k = atomic_load(&known);
  if (k == 0) {
    k = mg__kern_available("the NCCL backend's all_reduce") == MG_OK ? 1 : -1;
    if (k < 0) snprintf(why, sizeof why, "%s", mg_last_error());
    atomic_store(&known, k);
  }
  return k > 0 ? NULL : why;
}

mg_status_t mg__nccl_kern_pick(const mg__op_t *op, int *algo, const char *fn) {
  *algo = MG__KERN_NCCL;
  if (op->kind != MG_OPK_ALL_REDUCE) return MG_OK;
  mg__kern_algo_t a = MG__KERN_NCCL;
  mg__nkern_t *k = mg__nkern(op->comm);
  if (k == NULL) return MG_OK; /* no memory for the state: NCCL, which needs none */
  if (k->pol.mode == MG_ALGO_NCCL) return MG_OK;
  const mg__kern_case_t c = {op->comm->nranks, mg__nkern_unavailable(),
                             k->state < 0 ? k->why : NULL, op->dtype, op->redop.op,
                             op->redop.premul, op->count * mg_dtype_size(op->dtype)};
  const mg_status_t s = mg__kern_choose(&k->pol, &c, &a, NULL, 0, fn);
  *algo = (int)a;
  return s;
}

/* ---- peer access ------------------------------------------------------------------------- */

/* The local ordinal of the GPU with PCI bus id `bus`, or -1 when this process does not see it. */
static int mg__nkern_ordinal(const char *bus) {
  int n = 0;
  if (mg__cuda.DeviceGetCount(&n) != MG__CUDA_SUCCESS) return -1;
  for (int i = 0; i < n; i++) {
    char b[32] = "";
    mg__CUdevice d;
    if (mg__cuda.DeviceGet(&d, i) == MG__CUDA_SUCCESS &&
        mg__cuda.DeviceGetPCIBusId(b, (int)sizeof b, d) == MG__CUDA_SUCCESS && strcmp(b, bus) == 0)
      return i;
  }
  return -1;
}

/* Whether this rank's GPU can load and store the memory of every other rank's GPU (all[]: the
 * records of exchange 1). A rank of this process: the peer-to-peer layer's answer for the pair,
 * which enables the access and refuses a pair its functional probe found lying ("can access" is
 * sometimes a lie). A rank of another process maps the memory through IPC; enabling that pair
 * here would make a context on the other GPU in every process (hundreds of MiB each), so
 * capability has to do (cuDeviceCanAccessPeer). 1, or 0 with the reason. */
static int mg__nccl_peers_work(mg_comm_t *comm, const mg__nkern_rec_t *all, char *why,
                               size_t len) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  const mg__nkern_rec_t *me = &all[comm->rank];
  for (int r = 0; r < comm->nranks; r++) {
    if (r == comm->rank || strcmp(all[r].bus, me->bus) == 0) continue; /* the same GPU */
    const int ord = mg__nkern_ordinal(all[r].bus);
    char pair[256];
    mg__CUdevice peer;
    int can = 0;
    if (ord < 0) {
      snprintf(why, len, "rank %d (GPU %s) cannot access rank %d's GPU %s, which this process "
               "does not see", comm->rank, me->bus, r, all[r].bus);
      return 0;
    }
    if (all[r].peer.process == me->peer.process) {
      if (!mg__p2p_pair_works(comm->device, ord, pair, sizeof pair)) {
        snprintf(why, len, "rank %d to rank %d: %s", comm->rank, r, pair);
        return 0;
      }
    } else if (mg__cuda.DeviceGet(&peer, ord) != MG__CUDA_SUCCESS ||
               mg__cuda.DeviceCanAccessPeer(&can, nx->dev, peer) != MG__CUDA_SUCCESS || !can) {
      snprintf(why, len, "rank %d (GPU %s) cannot access rank %d's GPU %s", comm->rank, me->bus,
               r, all[r].bus);
      return 0;
    }
  }
  return 1;
}

/* ---- the exchange ------------------------------------------------------------------------- */

/* All-gathers the records mine[i] (rb bytes) of comms[i] into all[i] (nranks records each), as
 * one NCCL group on a stream of its own per communicator, and waits for it on the host within
 * deadline.
 * The copies go through page-locked memory on that (non-blocking) stream, so that nothing waits
 * for other streams or blocks the host. The contexts are not current on entry. */
static mg_status_t mg__nkern_allgather(mg_comm_t *const *comms, int n, void *const *mine,
                                       void *const *all, size_t rb, double deadline) {
  mg__op_t *ops = calloc((size_t)n, sizeof *ops);
  mg__op_t **p = calloc((size_t)n, sizeof *p);
  mg__CUdeviceptr *buf = calloc((size_t)n, sizeof *buf);
  mg__CUstream *st = calloc((size_t)n, sizeof *st);
  char **host = calloc((size_t)n, sizeof *host);
  mg_status_t s = MG_OK;
  int launched = 0; /* the all-gather was posted */
  if (ops == NULL || p == NULL || buf == NULL || st == NULL || host == NULL)
    s = mg__error(MG_ERR_OUT_OF_MEMORY, "out of memory for the kernels' set-up");
  for (int i = 0; i < n && s == MG_OK; i++) {
    mg__ncomm_t *nx = mg__ncomm(comms[i]);
    mg__CUcontext saved = NULL;
    MG_CHECK_GOTO(mg__device_ctx_enter(nx->ctx, &saved), s, out);
    const size_t bytes = (size_t)(comms[i]->nranks + 1) * rb;
    mg__CUresult r = mg__cuda.StreamCreate(&st[i], MG__CU_STREAM_NON_BLOCKING);
    if (r == MG__CUDA_SUCCESS) r = mg__cuda.MemAlloc(&buf[i], bytes);
    if (r == MG__CUDA_SUCCESS) r = mg__cuda.MemAllocHost((void **)&host[i], bytes);
    if (r == MG__CUDA_SUCCESS) {
      memcpy(host[i], mine[i], rb);
      r = mg__cuda.MemcpyAsync(buf[i], (mg__CUdeviceptr)(uintptr_t)host[i], rb, st[i]);
    }
    mg__device_ctx_leave(nx->ctx, saved);
    if (r != MG__CUDA_SUCCESS) s = mg__cu_error(r, "preparing the kernels' exchange");
    ops[i] = (mg__op_t){.kind = MG_OPK_ALL_GATHER, .comm = comms[i],
                        .send = (const void *)(uintptr_t)buf[i],
                        .recv = (void *)(uintptr_t)(buf[i] + rb), .count = rb,
                        .dtype = MG_UINT8, .root = -1, .stream = (mg_stream_t)st[i],
                        .deadline = deadline, .status = MG_INPROGRESS};
    p[i] = &ops[i];
  }
  if (s == MG_OK) {
    launched = 1;
    s = mg__nccl_launch(p, n);
  }
  for (int i = 0; i < n && s == MG_OK; i++) { /* every rank's record back, behind the gather */
    mg__ncomm_t *nx = mg__ncomm(comms[i]);
    mg__CUcontext saved = NULL;
    MG_CHECK_GOTO(mg__device_ctx_enter(nx->ctx, &saved), s, out);
    const mg__CUresult r = mg__cuda.MemcpyAsync((mg__CUdeviceptr)(uintptr_t)(host[i] + rb),
                                                buf[i] + rb, (size_t)comms[i]->nranks * rb, st[i]);
    mg__device_ctx_leave(nx->ctx, saved);
    if (r != MG__CUDA_SUCCESS) s = mg__cu_error(r, "reading the kernels' exchange");
  }
  /* Wait for every stream, polling, within the deadline; an abort ends the wait. */
  for (mg__nccl_backoff_t b = {0, 0}; s == MG_OK;) {
    int pending = 0;
    for (int i = 0; i < n && s == MG_OK; i++) {
      mg__ncomm_t *nx = mg__ncomm(comms[i]);
      mg__CUcontext saved = NULL;
      MG_CHECK_GOTO(mg__device_ctx_enter(nx->ctx, &saved), s, out);
      const mg__CUresult r = mg__cuda.StreamQuery(st[i]);
      mg__device_ctx_leave(nx->ctx, saved);
      if (r == MG__CUDA_ERROR_NOT_READY) pending++;
      else if (r != MG__CUDA_SUCCESS) s = mg__cu_error(r, "cuStreamQuery");
      else if (atomic_load(&comms[i]->aborting))
        s = mg__error(MG_ERR_ABORTED, "the communicator was aborted");
    }
    if (s != MG_OK || pending == 0) break;
    const double now = mg__now();
    if (now > deadline)
      s = mg__error(MG_ERR_TIMED_OUT, "the ranks' exchange (ncclAllGather) had not completed "
                    "by the deadline: a rank did not call this all_reduce");
    else mg__nccl_backoff(&b, now);
  }
  for (int i = 0; i < n && s == MG_OK; i++)
    memcpy(all[i], host[i] + rb, (size_t)comms[i]->nranks * rb);
out:
  for (int i = 0; buf != NULL && st != NULL && i < n; i++) {
    mg__ncomm_t *nx = mg__ncomm(comms[i]);
    mg__CUcontext saved = NULL;
    if (mg__device_ctx_enter(nx->ctx, &saved) != MG_OK) continue;
    /* Each fails only for a context that is gone. An exchange that failed once launched may
     * still be queued (a peer that never came): its buffers stay (a few hundred bytes, once per
     * communicator, which is broken by then), as freeing them would wait for it. */
    if (st[i] != NULL) (void)mg__cuda.StreamDestroy(st[i]);
    if (!(launched && s != MG_OK)) {
      if (buf[i] != 0) (void)mg__cuda.MemFree(buf[i]);
      if (host != NULL && host[i] != NULL) (void)mg__cuda.MemFreeHost(host[i]);
    }
    mg__device_ctx_leave(nx->ctx, saved);
  }
  free(ops);
  free(p);
  free(buf);
  free(st);
  free(host);
  return s;
}

/* ---- set-up ------------------------------------------------------------------------------- */

/* Sets up the kernels on comms[0..n) (each not set up yet): contexts, exchange, peer access,
 * verdict. MG_OK when each communicator has a verdict (ready or not); an error when the exchange
 * itself failed (the communicator breaks, as any failed operation's). */
static mg_status_t mg__nkern_setup(mg_comm_t *const *comms, int n, double deadline) {
  mg__nkern_rec_t **mine = calloc((size_t)n, sizeof *mine), **all = calloc((size_t)n, sizeof *all);
  mg_status_t s = mine != NULL && all != NULL ? MG_OK
                                              : mg__error(MG_ERR_OUT_OF_MEMORY, "kernels' set-up");
  for (int i = 0; i < n && s == MG_OK; i++) {
    mine[i] = calloc(1, sizeof **mine);
    all[i] = calloc((size_t)comms[i]->nranks, sizeof **all);
    if (mine[i] == NULL || all[i] == NULL) s = mg__error(MG_ERR_OUT_OF_MEMORY, "kernels' set-up");
  }
  /* Each rank's context and record; a rank that cannot make one still takes part. */
  for (int i = 0; i < n && s == MG_OK; i++) {
    mg_comm_t *c = comms[i];
    mg__ncomm_t *nx = mg__ncomm(c);
    mg__nkern_t *k = nx->kern;
    mg__nkern_rec_t *m = mine[i];
    mg__CUcontext saved = NULL;
    MG_CHECK_GOTO(mg__device_ctx_enter(nx->ctx, &saved), s, out);
    m->ok = mg__cuda.DeviceGetPCIBusId(m->bus, (int)sizeof m->bus, nx->dev) == MG__CUDA_SUCCESS &&
            mg__kern_ctx_create(c->rank, c->nranks, k->pol.staging, k->pol.ll_max,
                                k->pol.max_blocks, c->timeout_s, &k->ctx, &m->peer) == MG_OK;
    mg__device_ctx_leave(nx->ctx, saved);
    if (!m->ok) snprintf(m->why, sizeof m->why, "rank %d: %s", c->rank, mg_last_error());
  }
  if (s == MG_OK)
    s = mg__nkern_allgather(comms, n, (void *const *)mine, (void *const *)all, sizeof **mine,
                            deadline);
  /* Peer access and the mapping, then the common verdict. */
  for (int i = 0; i < n && s == MG_OK; i++) {
    mg_comm_t *c = comms[i];
    mg__ncomm_t *nx = mg__ncomm(c);
    mg__nkern_rec_t *m = mine[i];
    for (int r = 0; r < c->nranks && m->ok; r++)
      if (!all[i][r].ok) {
        snprintf(m->why, sizeof m->why, "%s", all[i][r].why);
        m->ok = 0;
      }
    mg__kern_peer_t peers[MG_KERN_MAX_RANKS];
    mg__CUcontext saved = NULL;
    MG_CHECK_GOTO(mg__device_ctx_enter(nx->ctx, &saved), s, out);
    if (m->ok) m->ok = mg__nccl_peers_work(c, all[i], m->why, sizeof m->why);
    for (int r = 0; r < c->nranks && m->ok; r++) peers[r] = all[i][r].peer;
    if (m->ok && mg__kern_ctx_connect(nx->kern->ctx, peers) != MG_OK) {
      snprintf(m->why, sizeof m->why, "rank %d: %s", c->rank, mg_last_error());
      m->ok = 0;
    }
    mg__device_ctx_leave(nx->ctx, saved);
  }
  if (s == MG_OK)
    s = mg__nkern_allgather(comms, n, (void *const *)mine, (void *const *)all, sizeof **mine,
                            deadline);
  for (int i = 0; i < n && s == MG_OK; i++) {
    mg__nkern_t *k = mg__ncomm(comms[i])->kern;
    k->state = 1;
    k->local = 1;
    for (int r = 0; r < comms[i]->nranks; r++)
      k->local = k->local && all[i][r].peer.process == all[i][comms[i]->rank].peer.process;
    for (int r = 0; r < comms[i]->nranks && k->state > 0; r++)
      if (!all[i][r].ok) {
        k->state = -1;
        snprintf(k->why, sizeof k->why, "%s", all[i][r].why);
      }
    if (k->state < 0)
      MG_INFO(MG_SUBSYS_COLL, "rank %d: mgcomm's all-reduce kernels cannot run: %s",
              comms[i]->rank, k->why);
  }
out:
  /* The contexts of communicators the verdict found unable go. After a failed exchange they stay
   * until destroy (mg__nccl_kern_release): freeing device memory can wait for the exchange still
   * queued, which only the abort of the broken communicator ends. */
  for (int i = 0; i < n && s == MG_OK; i++) {
    mg__ncomm_t *nx = mg__ncomm(comms[i]);
    if (nx->kern->state > 0 || nx->kern->ctx == NULL) continue;
    mg__CUcontext saved = NULL;
    if (mg__device_ctx_enter(nx->ctx, &saved) == MG_OK) {
      mg__kern_ctx_t *gone = nx->kern->ctx;
      __atomic_store_n(&nx->kern->ctx, NULL, __ATOMIC_RELEASE); /* the interrupt's view first */
      mg__kern_ctx_destroy(gone);
      mg__device_ctx_leave(nx->ctx, saved);
    }
  }
  for (int i = 0; i < n && mine != NULL && all != NULL; i++) {
    free(mine[i]);
    free(all[i]);
  }
  free(mine);
  free(all);
  return s;
}

/* ---- the launch --------------------------------------------------------------------------- */

int mg__nccl_kern_reachable(mg_comm_t *comm, const void *p, size_t bytes) {
  /* ncclMemAlloc maps its memory for every GPU with peer access to it (cuMemSetAccess), and
   * peer access maps all of a GPU's cuMemAlloc memory. A registration may be anything the
   * caller had: a cuMem allocation of someone else's (PyTorch's expandable segments) is mapped
   * only where its owner set the access, so it is asked of the driver. */
  if (mg__mem_allocated(comm, p, bytes)) return 1;
  if (!mg__mem_known(comm, p, bytes)) return 0;
  int legacy = 0; /* the driver writes a bool: the rest stays zero */
  mg__CUpointer_attribute what = MG__CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE;
  void *data = &legacy;
  return mg__cuda.PointerGetAttributes(1, &what, &data, (mg__CUdeviceptr)(uintptr_t)p) ==
             MG__CUDA_SUCCESS && legacy != 0;
}

/* Whether op's rank lends its buffers to the pull algorithms (see the top of this file). NONE
 * depends only on what every rank shares (the ranks' processes, whether a registration went
 * through the kernels, the size, the variables), so that below the in-place size no call pays
 * for the exchange of addresses. Ranks of several processes lend only registered buffers
 * (MAYBE: the kernels look them up). */
static mg__kern_lend_t mg__nccl_kern_lends(const mg__nkern_t *k, const mg__op_t *op) {
  const size_t bytes = op->count * mg_dtype_size(op->dtype);
  if ((!k->local && !k->registered) || k->pol.inplace_min < 0 ||
      bytes < (uint64_t)k->pol.inplace_min)
    return MG__KERN_LEND_NONE;
  if (!k->local) return MG__KERN_LEND_MAYBE;
  return mg__nccl_kern_reachable(op->comm, op->send, bytes) &&
                 (op->recv == op->send || mg__nccl_kern_reachable(op->comm, op->recv, bytes))
             ? MG__KERN_LEND_YES
             : MG__KERN_LEND_MAYBE;
}

int mg__nccl_kern_wanted(mg__op_t *const *ops, int n) {
  for (int i = 0; i < n; i++) {
    int a;
    if (ops[i]->kind == MG_OPK_ALL_REDUCE && mg__nccl_kern_pick(ops[i], &a, "mg_all_reduce") == MG_OK &&
        a != MG__KERN_NCCL)
      return 1;
  }
  return 0;
}

#define MG__NKERN_INLINE 16

mg_status_t mg__nccl_kern_launch(mg__op_t *const *ops, int n) {
  /* A launch of a few operations allocates nothing (the common case: one all_reduce). */
  mg_comm_t *todo_in[MG__NKERN_INLINE];
  mg__op_t *rest_in[MG__NKERN_INLINE];
  int algo_in[MG__NKERN_INLINE];
  const int heap = n > MG__NKERN_INLINE;
  mg_comm_t **todo = heap ? calloc((size_t)n, sizeof *todo) : todo_in;
  mg__op_t **rest = heap ? calloc((size_t)n, sizeof *rest) : rest_in;
  int *algo = heap ? calloc((size_t)n, sizeof *algo) : algo_in;
  mg_status_t s = MG_OK;
  if (todo == NULL || rest == NULL || algo == NULL)
    s = mg__error(MG_ERR_OUT_OF_MEMORY, "NCCL backend: out of memory for a launch of %d", n);
  /* The communicators of the launch whose kernels are not set up yet. */
  int ntodo = 0;
  double deadline = n > 0 ? ops[0]->deadline : 0;
  for (int i = 0; i < n && s == MG_OK; i++) {
    s = mg__nccl_kern_pick(ops[i], &algo[i], "mg_all_reduce");
    if (s != MG_OK || algo[i] == MG__KERN_NCCL || mg__ncomm(ops[i]->comm)->kern->state != 0) continue;
    int seen = 0;
    for (int j = 0; j < ntodo && !seen; j++) seen = todo[j] == ops[i]->comm;
    if (!seen) todo[ntodo++] = ops[i]->comm;
    if (ops[i]->deadline < deadline) deadline = ops[i]->deadline;
  }
  if (s == MG_OK && ntodo > 0) s = mg__nkern_setup(todo, ntodo, deadline);
  /* Ours, each on its stream, then the others as one NCCL group. A thread that drives several
   * ranks makes each rank's context current in turn and puts its own back once, at the end
   * (a driver call per rank, not three). */
  int nrest = 0, entered = 0;
  mg__CUcontext saved = NULL, cur = NULL;
  for (int i = 0; i < n && s == MG_OK; i++) {
    mg__op_t *op = ops[i];
    s = mg__nccl_kern_pick(op, &algo[i], "mg_all_reduce"); /* again: the verdict may be known */
    if (s != MG_OK) break;
    if (algo[i] == MG__KERN_NCCL) {
      rest[nrest++] = op;
      continue;
    }
    mg__ncomm_t *nx = mg__ncomm(op->comm);
    if (!entered) {
      s = mg__device_ctx_enter(nx->ctx, &saved);
      entered = s == MG_OK;
    } else if (cur != nx->ctx) {
      const mg__CUresult r = mg__cuda.CtxSetCurrent(nx->ctx);
      if (r != MG__CUDA_SUCCESS) s = mg__cu_error(r, "cuCtxSetCurrent");
    }
    if (s == MG_OK) {
      cur = nx->ctx;
      s = mg__kern_all_reduce(nx->kern->ctx, op->send, op->recv, op->count, op->dtype,
                              op->redop.op, (mg__kern_algo_t)algo[i],
                              mg__nccl_kern_lends(nx->kern, op), (mg__CUstream)op->stream);
    }
    op->status = s;
    if (s != MG_OK)
      mg__error_prefix("all_reduce #%llu on rank %d of %d (device %d), mgcomm's %s kernel",
                       (unsigned long long)op->seq, op->comm->rank, op->comm->nranks,
                       op->comm->device, mg__kern_algo_name((mg__kern_algo_t)algo[i]));
  }
  if (entered) mg__device_ctx_leave(cur, saved);
  if (s == MG_OK && nrest > 0) s = mg__nccl_launch_nccl(rest, nrest);
  for (int i = 0; i < n; i++) ops[i]->status = s;
  if (heap) {
    free(todo);
    free(rest);
    free(algo);
  }
  return s;
}

/* ---- registrations ------------------------------------------------------------------------ */

/* The kernels' part of a symmetric registration (kernels.h, "Registered buffers"): export,
 * exchange of the records, import, exchange of the masks, commit. Collective like the
 * registration; in the communicator's device context. */
static mg_status_t mg__nkern_register(mg_comm_t *comm, mg__nkern_t *k, const void *buf,
                                      size_t bytes, double deadline, uint64_t *seq) {
  const int n = comm->nranks;
  mg__kern_reg_rec_t *mine = calloc(1, sizeof *mine), *all = calloc((size_t)n, sizeof *all);
  uint32_t *mask = calloc(1, sizeof *mask), *masks = calloc((size_t)n, sizeof *masks);
  mg_status_t s = mine != NULL && all != NULL && mask != NULL && masks != NULL
                      ? MG_OK
                      : mg__error(MG_ERR_OUT_OF_MEMORY, "the kernels' part of a registration");
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__CUcontext saved = NULL;
  if (s == MG_OK && (s = mg__device_ctx_enter(nx->ctx, &saved)) == MG_OK) {
    s = mg__kern_reg_export(k->ctx, buf, bytes, mine);
    mg__device_ctx_leave(nx->ctx, saved);
  }
  if (s == MG_OK) {
    *seq = mine->seq;
    /* From the attempt on, calls of the in-place size exchange addresses, whatever its outcome:
     * alike on every rank even when it fails on some ranks only (a deadline met at the edge). */
    k->registered = 1;
    s = mg__nkern_allgather(&comm, 1, (void *const *)&mine, (void *const *)&all, sizeof *mine,
                            deadline);
  }
  if (s == MG_OK && (s = mg__device_ctx_enter(nx->ctx, &saved)) == MG_OK) {
    s = mg__kern_reg_import(k->ctx, all, deadline, mask);
    mg__device_ctx_leave(nx->ctx, saved);
  }
  if (s == MG_OK)
    s = mg__nkern_allgather(&comm, 1, (void *const *)&mask, (void *const *)&masks, sizeof *mask,
                            deadline);
  if (s == MG_OK) {
    const int lent = mg__kern_reg_commit(k->ctx, all, masks);
    MG_INFO(MG_SUBSYS_COLL, "rank %d: [%p, +%zu) %s", comm->rank, buf, bytes,
            lent ? "is lent in place to the kernels of the other processes"
                 : "stays staged for the kernels");
  }
  free(mine);
  free(all);
  free(mask);
  free(masks);
  return s;
}

/* Releases the kernels' registration seq, in the communicator's device context. */
static void mg__nccl_kern_unregister(mg_comm_t *comm, uint64_t seq) {
  const mg__nkern_t *k = mg__ncomm(comm)->kern;
  mg__CUcontext saved = NULL;
  if (k == NULL || k->ctx == NULL || mg__device_ctx_enter(mg__ncomm(comm)->ctx, &saved) != MG_OK)
    return;
  mg__kern_reg_release(k->ctx, seq);
  mg__device_ctx_leave(mg__ncomm(comm)->ctx, saved);
}

mg_status_t mg__nccl_kern_register(mg_comm_t *comm, void *win, const void *buf, size_t bytes,
                                   double deadline) {
  mg__nkern_t *k = mg__nkern(comm);
  if (k == NULL || k->pol.mode == MG_ALGO_NCCL || mg__nkern_unavailable() != NULL ||
      comm->nranks > MG_KERN_MAX_RANKS)
    return MG_OK; /* the kernels never run on this communicator */
  if (k->state == 0) MG_CHECK(mg__nkern_setup(&comm, 1, deadline));
  if (k->state < 0 || k->local) return MG_OK; /* ranks of one process lend without it */
  uint64_t seq = 0;
  const mg_status_t s = mg__nkern_register(comm, k, buf, bytes, deadline, &seq);
  int kept = 0;
  for (int i = 0; i < MG_KERN_MAX_REGS && s == MG_OK && !kept; i++)
    if (k->regs[i].win == NULL) {
      k->regs[i].win = win;
      k->regs[i].seq = seq;
      kept = 1;
    }
  /* Failed; or no entry, which happens only when the kernels had no slot either (they keep as
   * many), so that there is nothing to undo but the sequence number. */
  if (!kept) mg__nccl_kern_unregister(comm, seq);
  if (s != MG_OK) mg__error_prefix("the kernels' part of the registration");
  return s;
}

void mg__nccl_kern_deregister(mg_comm_t *comm, void *win) {
  mg__nkern_t *k = mg__ncomm(comm)->kern;
  if (k == NULL || win == NULL) return;
  for (int i = 0; i < MG_KERN_MAX_REGS; i++)
    if (k->regs[i].win == win) {
      mg__nccl_kern_unregister(comm, k->regs[i].seq);
      k->regs[i].win = NULL;
    }
}

unsigned long long mg__nccl_kern_lent(mg_comm_t *comm) {
  const mg__nkern_t *k = __atomic_load_n(&mg__ncomm(comm)->kern, __ATOMIC_ACQUIRE);
  return k != NULL && k->ctx != NULL ? mg__kern_ctx_lent(k->ctx) : 0;
}

/* ---- life --------------------------------------------------------------------------------- */

void mg__nccl_kern_abort(mg_comm_t *comm) {
  const mg__nkern_t *k = __atomic_load_n(&mg__ncomm(comm)->kern, __ATOMIC_ACQUIRE);
  if (k != NULL) mg__kern_ctx_abort(__atomic_load_n(&k->ctx, __ATOMIC_ACQUIRE));
}

mg_status_t mg__nccl_kern_status(mg_comm_t *comm) {
  const mg__nkern_t *k = __atomic_load_n(&mg__ncomm(comm)->kern, __ATOMIC_ACQUIRE);
  if (k == NULL || k->ctx == NULL) return MG_OK;
  mg_status_t s = mg__kern_ctx_status(k->ctx);
  if (s != MG_OK) mg__error_prefix("device %d", comm->device);
  return s;
}

void mg__nccl_kern_release(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  if (nx->kern == NULL) return;
  /* Kernels still waiting end at once (the abort word), so freeing does not wait long. */
  mg__kern_ctx_abort(nx->kern->ctx);
  mg__kern_ctx_destroy(nx->kern->ctx);
  free(nx->kern);
  nx->kern = NULL;
}
