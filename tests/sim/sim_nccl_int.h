/*
 * sim_nccl_int.h -- what the files of the simulated NCCL share.
 *
 * Files: sim_nccl.c (the lock, version, knobs, errors, mgsim_control), sim_comm.c (the
 * registry of communicators and the entry check of every call, init, queries, memory and
 * registration), sim_life.c (split, shrink, finalize, revoke, abort, destroy, and the
 * use-after-free detector), sim_group.c (groups and the collective and send/recv calls: their
 * checks, the host-side hang, issuing from a group thread or inline), sim_coll.c (the stream
 * items: meeting the other ranks and computing).
 *
 * One lock, sim_lock, guards all of the simulator's NCCL state (registry, communicators,
 * cliques, meeting slots, knob counters); every wait is on sim_cv, which is broadcast on every
 * change that a wait may be for (simple, and fast enough for tests). Nothing computes, and no
 * CUDA call is made, with sim_lock held: CUDA's stream threads run our items, which take it.
 */
#ifndef MGSIM_NCCL_INT_H
#define MGSIM_NCCL_INT_H

#include <pthread.h>
#include <stdint.h>

#include "loader/nccl_api.h"
#include "sim.h"

#define SIM_COMM_MAGIC 0x6c63636eu /* "ncl" */
#define SIM_MAX_INSIDE 8           /* threads inside one comm whose call is named */
#define SIM_MAX_RANKS 4096         /* ranks the knobs count for */

/* Entry points newer than NCCL 2.14 (mgcomm's features.c says who needs them). */
#define SIM_V_CONFIG 21400
#define SIM_V_SPLIT 21800
#define SIM_V_REGISTER 21900
#define SIM_V_SHRINK 22700
#define SIM_V_REVOKE 22807

/* ---- The NCCL API of libnccl.so.2, declared with the types of src/loader/nccl_api.h (as
 * sim.h does for CUDA). Not simulated (optional symbols, absent): ncclAlltoAll, ncclGather,
 * ncclScatter, ncclCommWindowRegister, ncclCommWindowDeregister, ncclRedOpCreatePreMulSum,
 * ncclRedOpDestroy. */
#define SIM_NCCL_MEMBER(req, form, member, sym, alt, ret, params, args) ret(*member) params;
typedef struct sim_nccl_sigs {
  MG__NCCL_SYMBOLS(SIM_NCCL_MEMBER)
} sim_nccl_sigs_t;
#define SIM_NCCL_DECL(member, fn) \
  MGSIM_API extern __typeof__(*((sim_nccl_sigs_t *)0)->member) fn;
SIM_NCCL_DECL(CommGetAsyncError, ncclCommGetAsyncError)
SIM_NCCL_DECL(AllReduce, ncclAllReduce)
SIM_NCCL_DECL(Broadcast, ncclBroadcast)
SIM_NCCL_DECL(Reduce, ncclReduce)
SIM_NCCL_DECL(AllGather, ncclAllGather)
SIM_NCCL_DECL(ReduceScatter, ncclReduceScatter)
SIM_NCCL_DECL(Send, ncclSend)
SIM_NCCL_DECL(Recv, ncclRecv)
SIM_NCCL_DECL(GroupStart, ncclGroupStart)
SIM_NCCL_DECL(GroupEnd, ncclGroupEnd)
SIM_NCCL_DECL(GetVersion, ncclGetVersion)
SIM_NCCL_DECL(GetUniqueId, ncclGetUniqueId)
SIM_NCCL_DECL(CommInitRank, ncclCommInitRank)
SIM_NCCL_DECL(CommInitRankConfig, ncclCommInitRankConfig)
SIM_NCCL_DECL(CommInitAll, ncclCommInitAll)
SIM_NCCL_DECL(CommFinalize, ncclCommFinalize)
SIM_NCCL_DECL(CommDestroy, ncclCommDestroy)
SIM_NCCL_DECL(CommAbort, ncclCommAbort)
SIM_NCCL_DECL(CommRevoke, ncclCommRevoke)
SIM_NCCL_DECL(CommSplit, ncclCommSplit)
SIM_NCCL_DECL(CommShrink, ncclCommShrink)
SIM_NCCL_DECL(GetErrorString, ncclGetErrorString)
SIM_NCCL_DECL(GetLastError, ncclGetLastError)
SIM_NCCL_DECL(CommCount, ncclCommCount)
SIM_NCCL_DECL(CommCuDevice, ncclCommCuDevice)
SIM_NCCL_DECL(CommUserRank, ncclCommUserRank)
SIM_NCCL_DECL(CommRegister, ncclCommRegister)
SIM_NCCL_DECL(CommDeregister, ncclCommDeregister)
SIM_NCCL_DECL(MemAlloc, ncclMemAlloc)
SIM_NCCL_DECL(MemFree, ncclMemFree)

/* ---- sim_nccl.c ---- */
extern pthread_mutex_t sim_lock;
extern pthread_cond_t sim_cv;
/* Reads the environment once and initialises the CUDA simulator (cuInit), as NCCL does on its
 * first call. Every entry point calls it. */
void sim_nccl_init(void);
int sim_version(void);
/* A VIOLATION when the simulated version is older than since (the symbol would be absent). */
void sim_require(int since, const char *call);
/* Prints "mgsim: VIOLATION: <text>" to stderr and aborts the process. */
__attribute__((noreturn, format(printf, 1, 2))) void sim_violation(const char *fmt, ...);
/* Sets the process's last error (ncclGetLastError) to "mgsim: <text>", prints it when
 * NCCL_DEBUG is set, and returns r. Takes no lock of ours: callable with sim_lock held. */
__attribute__((format(printf, 2, 3))) mg__ncclResult_t sim_fail(mg__ncclResult_t r,
                                                                const char *fmt, ...);
/* NCCL_COMM_BLOCKING: 0 or 1 when set, else -1. */
int sim_env_blocking(void);
/* Starts fn(arg) on a detached thread named name. 0, or an errno. */
int sim_spawn(void *(*fn)(void *), void *arg, const char *name);
/* The knobs, under sim_lock: counts a collective or send/recv call of rank (its device: sim.h)
 * and says whether MGSIM_HOST_HANG or MGSIM_NEVER_COMPLETE picked it. */
void sim_knob_count(int rank, int *hang, int *never);
/* Gauges of mgsim_control, under sim_lock. */
void sim_knob_hung(int rank, int delta);
void sim_knob_held(int rank, int delta);
/* "abort_delay_ms" (mgsim_control), under sim_lock. */
extern long sim_abort_delay_ms;

/* ---- sim_comm.c ---- */
typedef struct sim_slot sim_slot_t;

/* What the ranks of one communicator share: made when the last rank of its init arrives, freed
 * with the last of them. */
typedef struct sim_clique {
  int nranks;
  int refs;           /* its communicators */
  sim_slot_t *slots;  /* meetings in progress (sim_coll.c) */
} sim_clique_t;

typedef struct sim_inside {
  pthread_t th;
  const char *call;   /* the NCCL call it is in */
} sim_inside_t;

typedef struct sim_reg {
  void *buf;
  size_t size;
  struct sim_reg *next;
} sim_reg_t;

/* What a comm is made with (sim_config_read). SIM_CHANNELS: the channels NCCL gives one rank
 * of an H100 by default (64), each with device memory of its own (bench/nccl_comm_memory.sh). */
#define SIM_CHANNELS 64
typedef struct sim_attrs {
  int blocking, channels, split_share;
} sim_attrs_t;

struct mg__ncclComm {
  unsigned magic;
  int rank, nranks, device;
  mg__CUcontext ctx;        /* the device's primary context, retained while the comm lives */
  int blocking;             /* config->blocking as resolved (NCCL_COMM_BLOCKING included) */
  int channels;             /* what NCCL's per-channel device memory would be sized by */
  int split_share;          /* its config's splitShare: what a child of a NULL config inherits */
  sim_clique_t *clique;     /* NULL until init completes */
  mg__ncclResult_t async;   /* what ncclCommGetAsyncError answers */
  int abort_flag;           /* set by abort, revoke, shrink-abort; revoke and shrink clear it */
  unsigned abort_epoch;     /* +1 at each of those: a wait that began before one ends */
  int revoked, finalized;
  const char *freeing;      /* the call freeing it (abort, destroy); NULL before */
  int inside;               /* user threads inside an NCCL call on it */
  sim_inside_t in[SIM_MAX_INSIDE];
  int jobs;                 /* simulator threads working for it */
  int hold_async;           /* a revoke or a shrink's abort owns async (sim_set_async) */
  int items;                /* its stream items enqueued and not finished */
  uint64_t coll_seq, split_seq, shrink_seq; /* calls made, in call order */
  uint64_t *send_seq, *recv_seq;            /* per peer: sends to it, receives from it */
  sim_reg_t *regs;          /* ncclCommRegister's records */
  struct mg__ncclComm *next; /* in the registry */
};
typedef struct mg__ncclComm sim_comm_t;

/* The entry check of a call on h: NULL for a NULL handle (the caller answers
 * ncclInvalidArgument); a VIOLATION for a handle that is not a live communicator, or one being
 * freed; otherwise the comm, with the calling thread counted inside it under the name call.
 * sim_leave undoes the count. */
sim_comm_t *sim_enter(mg__ncclComm_t h, const char *call);
void sim_leave(sim_comm_t *c);
/* The comm of handle h if it is live, under sim_lock; NULL otherwise. */
sim_comm_t *sim_find(mg__ncclComm_t h);
/* A new comm of rank/nranks on device, retaining its primary context, entered in the registry
 * with async ncclInProgress and no clique. NULL when out of memory or the device is bad (the
 * last error says which). No lock held. */
sim_comm_t *sim_comm_new(int rank, int nranks, int device, const sim_attrs_t *a);
/* Takes c out of the registry and frees it: its clique reference, records, context. sim_lock
 * is held on entry and released. */
void sim_comm_free_locked(sim_comm_t *c);
/* The attributes a new comm takes from config and, for a split or shrink, from its parent
 * (NULL for an init): a NULL config copies the parent's (an init's: blocking, SIM_CHANNELS); a
 * config has its own (maxCTAs, else SIM_CHANNELS); a child that shares its parent's resources
 * (splitShare, or NCCL_COMM_SPLIT_SHARE_RESOURCES=1) has at most the parent's channels, as
 * NCCL's connect.cc. ncclInvalidArgument for a config that NCCL_CONFIG_INITIALIZER did not make. */
mg__ncclResult_t sim_config_read(const mg__ncclConfig_t *config, const sim_comm_t *parent,
                                 sim_attrs_t *out, const char *call);
/* 1 while c's wait that began at epoch `epoch` must stop: an abort or revoke came. */
static inline int sim_stopped(const sim_comm_t *c, unsigned epoch) {
  return c->abort_flag || c->abort_epoch != epoch;
}
/* A job's outcome becomes c's async state (sim_lock held), unless a nonblocking revoke or a
 * shrink's abort owns that state now: those report ncclInProgress until c is quiescent, then
 * their own outcome, so the error of a call they stopped is not seen in between. */
static inline void sim_set_async(sim_comm_t *c, mg__ncclResult_t r) {
  if (c->hold_async == 0) c->async = r;
}
/* Runs the init of c (made by sim_comm_new) against id: meets the other ranks, or stops with
 * ncclInternalError when c is aborted first. Sets c->async. No lock held. */
mg__ncclResult_t sim_init_run(sim_comm_t *c, const mg__ncclUniqueId *id);
/* Counts for mgsim_control over the communicators of device r (-1: all), under sim_lock. */
int sim_comm_gauge(const char *what, int r);

/* ---- sim_coll.c ---- */
enum {
  SIM_ALLREDUCE,
  SIM_BROADCAST,
  SIM_REDUCE,
  SIM_ALLGATHER,
  SIM_REDUCESCATTER,
  SIM_SEND,
  SIM_RECV
};

typedef struct sim_op {
  int kind;                   /* SIM_* */
  const char *call;           /* "ncclAllReduce" */
  const void *send;
  void *recv;
  size_t count;               /* as passed: per rank (allgather, reducescatter: the block) */
  mg__ncclDataType_t dtype;
  mg__ncclRedOp_t redop;
  int root;                   /* root, or the peer of a send/recv */
  sim_comm_t *comm;
  mg__CUstream stream;
  uint64_t seq;               /* collective: the comm's nth; p2p: nth in this direction */
  int skip;                   /* count 0: NCCL issues nothing */
  int hang, never;            /* picked by MGSIM_HOST_HANG / MGSIM_NEVER_COMPLETE */
  sim_slot_t *slot;           /* its meeting, while its item runs */
  struct sim_op *next;
} sim_op_t;

/* Meeting kinds; a meeting is keyed by (kind, seq, a, b) within a clique. */
enum { SIM_MEET_COLL, SIM_MEET_P2P, SIM_MEET_SPLIT, SIM_MEET_SHRINK };
enum { SIM_SLOT_OPEN, SIM_SLOT_READY, SIM_SLOT_BUSY, SIM_SLOT_DONE };

struct sim_slot {
  int kind;
  uint64_t seq;
  int64_t a, b;
  int needed, arrived, released;
  int state;                  /* SIM_SLOT_* */
  void **contrib;             /* needed entries: what each participant brought */
  struct sim_slot *next;
};

/* Under sim_lock. Joins the meeting of that key (made if absent) as participant `index`;
 * READY once all `needed` are there. NULL when out of memory. */
sim_slot_t *sim_slot_post(sim_clique_t *q, int kind, uint64_t seq, int64_t a, int64_t b,
                          int needed, int index, void *contrib);
/* Leaves a meeting that is not BUSY or DONE (an abort), freeing it when nobody is left. */
void sim_slot_withdraw(sim_clique_t *q, sim_slot_t *s, int index);
/* Leaves a DONE meeting; the last to leave frees it. */
void sim_slot_release(sim_clique_t *q, sim_slot_t *s);
/* Queues ops (one comm, one stream, in call order; the list is taken over) as one stream item,
 * as NCCL launches one kernel per group and stream. ncclSuccess or the error (last error set).
 * No lock held. */
mg__ncclResult_t sim_coll_enqueue(sim_comm_t *c, mg__CUstream stream, sim_op_t *ops);
/* Bytes of one element of a simulated dtype; 0 for one the simulator does not compute. */
size_t sim_dtype_size(mg__ncclDataType_t dt);
const char *sim_dtype_name(mg__ncclDataType_t dt);

/* ---- sim_group.c ---- */
/* The thread's group depth: inits, splits and shrinks inside a group wait for its end. */
int sim_group_depth(void);
/* Defers run(arg) on c to the end of the thread's group, where each deferred call runs on a
 * thread of its own (they meet each other); done(arg) frees arg afterwards, also when the group
 * fails. A nonblocking comm reports ncclInProgress until its call is done. ncclSuccess, or the
 * error (recorded for the group, and arg is not taken over). */
mg__ncclResult_t sim_group_defer(sim_comm_t *c, const char *call,
                                 mg__ncclResult_t (*run)(void *arg), void (*done)(void *arg),
                                 void *arg);

/* ---- sim_life.c ---- */
/* Sets the abort flag of c and waits (sim_lock held) until its stream items have stopped and
 * its simulator threads other than `own` (the caller's job, 0 or 1) are done. */
void sim_quiesce_locked(sim_comm_t *c, int own);

#endif
