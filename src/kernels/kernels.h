/*
 * kernels.h -- mgcomm's own all-reduce kernels (docs/kernels.md): the layer beside the driver
 * layer that loads them (kern_module.c), the per-communicator context of peer-visible buffers
 * (kern_ctx.c), the launch (kern_launch.c), and the choice between them and NCCL (kern_choose.c).
 *
 * A context serves one rank of a communicator of at most MG_KERN_MAX_RANKS ranks, each on its own
 * GPU (or, for tests, all on one GPU). Its life:
 *   1. mg__kern_ctx_create (the rank's device context current): allocates this rank's flags and
 *      staging area, and fills the record this rank publishes to its peers;
 *   2. the caller all-gathers the records (the communicator's bootstrap, NCCL, or in one
 *      process a plain array) and enables peer access between the devices;
 *   3. mg__kern_ctx_connect maps every peer's area (a plain pointer in the same process, CUDA
 *      IPC across processes);
 *   3b. optionally, any number of times, all ranks alike: a buffer of each rank registered
 *      (mg__kern_reg_*), which ranks of other processes then map, so that it is lent to them in
 *      place rather than staged;
 *   4. mg__kern_all_reduce on a stream of the rank's device, any number of times, graph capture
 *      included; mg__kern_ctx_status says whether a kernel gave up (timeout, abort);
 *   5. mg__kern_ctx_destroy, once no kernel of the context runs any more (stream synchronised).
 * mg__kern_ctx_abort may be called at any time from any thread: it never blocks.
 */
#ifndef MG_KERNELS_KERNELS_H
#define MG_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/fdpass.h"
#include "kernels/kern_abi.h"
#include "loader/loader.h"
#include "mgcomm.h"

/* ---- The kernels themselves (kern_module.c) */

/* 1 when this build embeds the kernels (nvcc was found when it was configured). */
int mg__kern_built(void);
/* MG_OK when the kernels can run: built in, and the loaded CUDA driver has what they need
 * (feature "kernels"). Otherwise MG_ERR_NOT_SUPPORTED (built without nvcc; a driver without the
 * symbols) or MG_ERR_BACKEND_UNAVAILABLE (no driver), with the reason naming fn. */
mg_status_t mg__kern_available(const char *fn);

/* ---- The algorithms and the choice (kern_choose.c) */

typedef enum mg__kern_algo {
  MG__KERN_NCCL = 0,    /* not ours: NCCL's all_reduce */
  MG__KERN_ONESHOT = 1, /* every rank reads every rank's input and reduces it */
  MG__KERN_TWOSHOT = 2, /* reduce-scatter, then all-gather, over peer loads and stores */
  MG__KERN_LL = 3       /* push: every rank stores its input, flagged, into every peer's area */
} mg__kern_algo_t;

/* "nccl", "one-shot", "two-shot", "ll". */
const char *mg__kern_algo_name(mg__kern_algo_t a);

/* What decides the choice: the mode, and the sizes of the table or the variables. */
typedef struct mg__kern_policy {
  mg_algo_t mode;     /* AUTO, NCCL or MGCOMM (never DEFAULT) */
  int mode_from_config; /* mode is the config's all_reduce_algo, not MGCOMM_ALGO's */
  size_t ll_max;      /* bytes up to which the push algorithm is used (0: never) */
  size_t oneshot_max; /* bytes up to which one-shot is used, two-shot above */
  size_t max_bytes;   /* bytes above which NCCL is used (auto); at most the staging size */
  size_t staging;     /* bytes of a message the staging area holds */
  int max_blocks;     /* blocks of a launch at most (1..MG_KERN_MAX_BLOCKS) */
  int64_t inplace_min; /* bytes from which buffers the peers can reach are read in place by the
                        * pull algorithms (no copy in); -1: never */
} mg__kern_policy_t;

/* The measured table for a communicator of nranks ranks (mode auto, default staging). */
void mg__kern_policy_table(int nranks, mg__kern_policy_t *out);
/* The table, overridden by MGCOMM_KERNELS_LL_BYTES, _ONESHOT_BYTES, _MAX_BYTES, _STAGING_BYTES,
 * _BLOCKS and _INPLACE_BYTES (the limit is cut to the staging size, the push algorithm's to the
 * staging size too); the mode is algo's (the communicator's config->all_reduce_algo), or
 * MGCOMM_ALGO's when algo is MG_ALGO_DEFAULT. */
void mg__kern_policy_get(int nranks, mg_algo_t algo, mg__kern_policy_t *out);

/* One all_reduce as the choice sees it. */
typedef struct mg__kern_case {
  int nranks;
  const char *unavailable; /* why the kernels cannot run here (built, driver); NULL: they can */
  const char *no_peers;    /* why some pair of the ranks' GPUs has no working peer access */
  mg_dtype_t dtype;
  mg_op_t op;
  int custom_op;           /* a premul_sum op (never ours) */
  size_t bytes;            /* of one rank's buffer */
} mg__kern_case_t;

/* The algorithm for c under p. MG_OK with *algo (MG__KERN_NCCL where ours cannot or should not
 * run; then, when why is not NULL, the reason is written there). With mode MGCOMM, a case ours
 * cannot run is MG_ERR_NOT_SUPPORTED naming fn and the reason. Pure: no driver, no variable. */
mg_status_t mg__kern_choose(const mg__kern_policy_t *p, const mg__kern_case_t *c,
                            mg__kern_algo_t *algo, char *why, size_t len, const char *fn);

/* ---- The context (kern_ctx.c) */

/* What a rank publishes to its peers (all-gathered by the caller; plain bytes). */
typedef struct mg__kern_peer {
  uint64_t magic;          /* MG__KERN_PEER_MAGIC: a record of this layout */
  uint64_t process;        /* who made it: pid and a random token of the process */
  uint64_t base;           /* the area's device address in its owner's process */
  uint64_t half_bytes;     /* bytes of a staging half */
  uint64_t ll_bytes;       /* the largest message of the push algorithm */
  int32_t max_blocks;
  int32_t rank;
  mg__CUipcMemHandle ipc;  /* the area, for peers in other processes */
  char box[MG__FDBOX_NAME]; /* where peers send their exported buffers ("": nowhere) */
} mg__kern_peer_t;

typedef struct mg__kern_ctx mg__kern_ctx_t;

/* A context for rank of nranks (1..MG_KERN_MAX_RANKS) with a staging area for messages of
 * staging bytes, a push area for messages of ll_bytes (0: none), launches of at most max_blocks
 * blocks, and waits of at most timeout_s; the device context of the rank current. Fills *mine.
 * MG_ERR_INVALID_ARGUMENT for a value out of range; MG_ERR_OUT_OF_MEMORY; the driver's error;
 * mg__kern_available's. */
mg_status_t mg__kern_ctx_create(int rank, int nranks, size_t staging, size_t ll_bytes,
                                int max_blocks, double timeout_s, mg__kern_ctx_t **out,
                                mg__kern_peer_t *mine);
/* Maps the peers' areas from their records (all[r] is rank r's). MG_ERR_INVALID_USAGE when the
 * records disagree with this context (rank, size, blocks: variables not set alike); the
 * driver's error (an IPC handle that does not open). Undone by destroy. */
mg_status_t mg__kern_ctx_connect(mg__kern_ctx_t *ctx, const mg__kern_peer_t *all);
/* Makes every waiting kernel of ctx give up (MG_ERR_ABORTED), now and for later launches. Never
 * blocks; NULL is ignored. */
void mg__kern_ctx_abort(mg__kern_ctx_t *ctx);
/* MG_OK, or why a kernel of ctx gave up: MG_ERR_TIMED_OUT (a peer did not arrive within the
 * timeout), MG_ERR_ABORTED, or MG_ERR_INVALID_USAGE (a peer lent a buffer this rank had
 * deregistered), with a message. The context is then broken for good. */
mg_status_t mg__kern_ctx_status(const mg__kern_ctx_t *ctx);
/* Frees ctx (NULL is ignored); no kernel of it may still run. The device context of the rank
 * current. */
void mg__kern_ctx_destroy(mg__kern_ctx_t *ctx);
/* The context's staging size (the largest message), in bytes. */
size_t mg__kern_ctx_staging(const mg__kern_ctx_t *ctx);
/* The largest message of the context's push algorithm, in bytes (0: none). */
size_t mg__kern_ctx_ll_bytes(const mg__kern_ctx_t *ctx);
/* Launches of ctx that lent a registered buffer to the peers (kern_reg.c), so far. */
unsigned long long mg__kern_ctx_lent(const mg__kern_ctx_t *ctx);

/* ---- Registered buffers (kern_reg.c)
 *
 * Ranks of other processes cannot read a buffer at its address: each must map it. A
 * registration, collective (every rank registers one buffer of its own, in the same order),
 * does that once, so that later calls lend the buffer in place:
 *   1. mg__kern_reg_export: this rank's record of its buffer (a CUDA IPC handle for memory of
 *      cuMemAlloc; for a cuMem allocation, such as ncclMemAlloc's, a file descriptor that
 *      import sends to the peers' boxes, since no byte stream can carry it);
 *   2. the caller all-gathers the records;
 *   3. mg__kern_reg_import: maps every rank's buffer here, says which it mapped (*mapped);
 *   4. the caller all-gathers the masks; mg__kern_reg_commit: this rank's buffer is lent from
 *      then on only if every rank mapped it;
 *   5. mg__kern_reg_release (local; also at destroy) when no kernel may read the buffers any more.
 * A rank that cannot lend its buffer (not device memory of a kind that can be shared; no free
 * slot; a driver without the calls) still takes part: its record says why, and it stages. */

/* How a registered buffer of a rank is mapped in another rank's process. */
typedef enum mg__kern_map {
  MG__KERN_MAP_NONE = 0, /* not mapped there (or: cannot be) */
  MG__KERN_MAP_SAME = 1, /* a rank of the same process: its address as it is */
  MG__KERN_MAP_IPC = 2,  /* cuIpcOpenMemHandle (memory of cuMemAlloc) */
  MG__KERN_MAP_CUMEM = 3 /* a cuMem allocation imported from a file descriptor, mapped there */
} mg__kern_map_t;

/* What a rank publishes of one registration (plain bytes). */
typedef struct mg__kern_reg_rec {
  uint64_t seq;          /* the registration's number: the same on every rank */
  uint64_t process;      /* mg__kern_peer_t.process of the owner */
  uint64_t base, bytes;  /* the buffer, in the owner's process */
  uint64_t alloc_off;    /* base minus the start of its allocation */
  uint64_t alloc_bytes;  /* the allocation's size (what a peer maps) */
  int32_t slot;          /* the owner's slot; -1: the owner cannot lend the buffer (why) */
  int32_t kind;          /* mg__kern_map_t: IPC or CUMEM (its descriptor comes through a box) */
  mg__CUipcMemHandle ipc;
  char why[120];
} mg__kern_reg_rec_t;

/* Begins registration ctx's next registration of [buf, buf + bytes) (memory of the context's
 * device) and fills *mine. MG_OK also when the buffer cannot be lent (mine->slot -1, with why);
 * MG_ERR_INVALID_USAGE before connect, MG_ERR_INVALID_ARGUMENT for NULL or 0 bytes. Every rank
 * calls it, in the same order. The device context of the rank current. */
mg_status_t mg__kern_reg_export(mg__kern_ctx_t *ctx, const void *buf, size_t bytes,
                                mg__kern_reg_rec_t *mine);
/* Maps every rank's buffer of the registration (all[r]: rank r's record, all-gathered): sends
 * this rank's descriptor to the peers of other processes and receives theirs, within deadline.
 * Sets bit r of *mapped for every rank r whose buffer this rank can now read. MG_OK, or the
 * exchange's error (a peer's descriptor not received by the deadline: MG_ERR_TIMED_OUT); a
 * buffer that does not map is only a missing bit (logged). */
mg_status_t mg__kern_reg_import(mg__kern_ctx_t *ctx, const mg__kern_reg_rec_t *all,
                                double deadline, uint32_t *mapped);
/* Ends the registration of all[] with every rank's mask (masks[r]: rank r's *mapped): this
 * rank's buffer is lent from now on when every rank mapped it. Returns 1 when it is. */
int mg__kern_reg_commit(mg__kern_ctx_t *ctx, const mg__kern_reg_rec_t *all,
                        const uint32_t *masks);
/* Undoes registration seq (mine.seq) on this rank: its buffer is no longer lent, and the
 * peers' buffers of it are unmapped here. No kernel of ctx may still read them (the caller
 * synchronised its streams, as for any deregistration); a later kernel to which a peer still
 * lends one gives up (mg__kern_ctx_status: MG_ERR_INVALID_USAGE). An unknown seq is ignored. */
void mg__kern_reg_release(mg__kern_ctx_t *ctx, uint64_t seq);
/* For the launch: whether send and recv (bytes each) both lie in lendable registrations of
 * ctx; then pub[] is what the kernel publishes for them (MG_KERN_PUB_REG), and the launch is
 * counted (mg__kern_ctx_lent). */
int mg__kern_reg_lend(mg__kern_ctx_t *ctx, const void *send, const void *recv, size_t bytes,
                      unsigned long long pub[2]);

/* ---- The launch (kern_launch.c) */

/* Whether the ranks lend their buffers to the pull algorithms in one call (mg__kern_all_reduce).
 * NONE or not is the same on every rank; MAYBE and YES may differ between ranks. */
typedef enum mg__kern_lend {
  MG__KERN_LEND_NONE = 0,  /* no rank lends: nothing is exchanged (no round trip) */
  MG__KERN_LEND_MAYBE = 1, /* ranks may lend (their addresses are exchanged); this one lends
                            * send and recv only if they lie in lendable registrations */
  MG__KERN_LEND_YES = 2    /* this rank lends send and recv where the algorithm can: from their
                            * registrations, else at their addresses (the caller vouches) */
} mg__kern_lend_t;

/* Enqueues the all_reduce of count elements of dtype (float32, float16, bfloat16) with op
 * (sum, avg, max, min) from send to recv (the same buffer in place: any device memory of the
 * rank's device) on stream, with algo (one-shot, two-shot or ll; every rank the same). With
 * lend MAYBE or YES, the pull algorithms let the peers read send and recv in place instead of
 * copying send into the staging area when both lie in lendable registrations; with YES also
 * when they do not, at their addresses: only for buffers every peer can load from there (ranks
 * of one process, peer access, memory mapped for the peers). This rank stages where the
 * algorithm cannot lend (one-shot with overlapping send and recv; buffers not 16-byte aligned).
 * ll ignores lend. Returns once enqueued; nothing waits on the host,
 * nothing is allocated, so it may be captured in a CUDA graph. MG_ERR_INVALID_ARGUMENT for a
 * message larger than the staging area (ll: the push area), a dtype or op the kernels lack, or
 * MG__KERN_NCCL; MG_ERR_INVALID_USAGE before connect; the context's status once a kernel gave
 * up; the driver's launch error. */
mg_status_t mg__kern_all_reduce(mg__kern_ctx_t *ctx, const void *send, void *recv, size_t count,
                                mg_dtype_t dtype, mg_op_t op, mg__kern_algo_t algo,
                                mg__kern_lend_t lend, mg__CUstream stream);

/* kern_module.c, for kern_ctx.c and kern_launch.c: the module loaded into the current context
 * and its kernel for (algo, dtype, op); NULL function when the kernels lack the combination. */
typedef struct mg__kern_module {
  mg__CUmodule module;
  mg__CUfunction fn[3][3][4]; /* [algo - 1][f32, f16, bf16][sum, avg, max, min] */
} mg__kern_module_t;
mg_status_t mg__kern_module_load(mg__kern_module_t *m);
void mg__kern_module_unload(mg__kern_module_t *m);
/* The kernel's dtype and op index, or -1 for one the kernels lack. */
int mg__kern_dtype_index(mg_dtype_t dtype);
int mg__kern_op_index(mg_op_t op);

/* kern_ctx.c, for kern_launch.c: the launch argument of ctx (every field but send, recv and
 * count), its module and its blocks at most. MG_ERR_INVALID_USAGE before connect; the status
 * once a kernel gave up; MG_ERR_ABORTED after mg__kern_ctx_abort. */
mg_status_t mg__kern_ctx_args(const mg__kern_ctx_t *ctx, mg_kern_args_t *a,
                              const mg__kern_module_t **mod, int *max_blocks);

#endif
