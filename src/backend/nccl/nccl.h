/*
 * nccl.h -- the NCCL backend's per-communicator state and the entry points its files share.
 *
 * Files: nccl_backend.c (the table; unique ids, init, split, shrink, finalize, abort, destroy),
 * nccl_coll.c (operations and groups: one NCCL group per launch, and the wait for NCCL's
 * nonblocking calls), nccl_check.c (what only this backend can check before anything is
 * enqueued), nccl_config.c (mg_config_t's NCCL fields into ncclConfig_t, by version),
 * nccl_mem.c (allocation, copies, registration), nccl_mark.c (completion: events, host
 * functions, the library's own streams), nccl_progress.c (comm tags, and the progress the ranks
 * of this process publish to each other), nccl_check_coll.c (the collective check's exchange),
 * nccl_kern.c (all_reduce through mgcomm's own kernels, docs/kernels.md).
 *
 * Two NCCL communicators per rank in blocking mode (the default):
 * `lc`, nonblocking, for what must stay bounded and abortable while it waits for peers (init,
 * split, shrink, finalize: each NCCL call that may answer ncclInProgress is followed by
 * mg__nccl_wait, which polls ncclCommGetAsyncError against the deadline and the abort flag), and
 * `nc`, blocking, split from lc at creation, for operations, which NCCL then issues on the
 * calling thread at raw NCCL's speed. A blocking call is bounded by the watchdog
 * (mg__comm_call_enter): past its deadline the comm is aborted, and the interrupt revokes nc
 * (NCCL >= 2.28.7), which sets NCCL's abort flag without freeing anything, so the call returns.
 * In nonblocking mode nc and lc are one communicator and operations wait as lifecycle calls do.
 *
 * NCCL is called only with comm->lock held, so that no two threads are ever in NCCL for one
 * communicator (NCCL's rule, and the condition for ncclCommAbort, which frees); the one
 * exception is the interrupt's revoke, which frees nothing and which abort joins before it frees
 * (stop_lock hands nc over between them).
 */
#ifndef MG_BACKEND_NCCL_H
#define MG_BACKEND_NCCL_H

#include "core/comm.h"
#include "device/device.h"
#include "device/evpool.h"
#include "loader/loader.h"

struct mg__evpool;
struct mg__nprog;

typedef struct mg__ncomm {
  mg__ncclComm_t nc;      /* operations: blocking, or lc itself in nonblocking mode; NULL
                             before init completes and after abort (which frees it) */
  mg__CUcontext ctx;      /* the device's primary context, retained while the comm lives */
  struct mg__nprog *prog; /* the progress table of tag in this process; NULL: none */
  int check_ptrs;         /* MGCOMM_CHECK_POINTERS, read when the comm was made */
  _Atomic(uintptr_t) stream_ok; /* the last stream the checks found in ctx (nccl_check.c) */
  int native;             /* the loaded NCCL has ncclAlltoAll, ncclGather, ncclScatter (2.28) */
  mg__CUdevice dev;
  int retained;           /* 1: ctx is retained (released by destroy) */
  int cc_major, cc_minor; /* the device's compute capability */
  mg__CUstream copy_stream; /* mg_memcpy's stream, made on first use; NULL until then */
  mg__CUstream own_stream;  /* comm_stream's (the world's rank stream), made on first use */
  struct mg__evpool *evpool; /* the device's pool of events for marks (process-wide) */
  uint64_t tag;             /* comm_tag: the same on every rank */
  pthread_t abort_th;       /* the thread running ncclCommAbort (abort_started) */
  int abort_started;        /* 1: abort_th runs or ran; destroy joins it */
  /* Where NCCL's background job writes the result of a split or shrink (the new comm) and of a
   * window registration: the job may finish after a timeout made us give up, so the storage
   * lives as long as this comm; abort joins the job and then frees a comm found here. */
  mg__ncclComm_t pending_child;
  mg__ncclWindow_t pending_win;
  mg__ncclComm_t lc;        /* lifecycle: nonblocking; == nc in nonblocking mode */
  int blocking;             /* nc is a blocking communicator (nccl_blocking) */
  pthread_mutex_t stop_lock; /* a leaf: nc's hand-over between the interrupt's revoke and abort */
  pthread_t revoke_th;      /* the interrupt's ncclCommRevoke of nc (mg-revoke<rank>) */
  int revoke_started;       /* 1: revoke_th runs or ran; joined before nc is freed */
  int revoked;              /* nc was revoked (by the interrupt or mg_comm_revoke) */
  /* The collective check's (nccl_check_coll.c), made on its first exchange, freed by destroy:
   * (nranks + 1) records of device memory (this rank's, then every rank's), the same of
   * page-locked host memory (what the copies read and write, so that they never block), and a
   * non-blocking stream. */
  mg__CUdeviceptr chk_dev;
  void *chk_host;
  mg__CUstream chk_stream;
  struct mg__nkern *kern;   /* mgcomm's own all-reduce kernels (nccl_kern.c); NULL: never asked */
} mg__ncomm_t;

static inline mg__ncomm_t *mg__ncomm(const mg_comm_t *comm) { return (mg__ncomm_t *)comm->priv; }

/* nccl_backend.c: MG_OK when libnccl and a CUDA device are usable (MG_ERR_BACKEND_UNAVAILABLE
 * with the reason otherwise). */
mg_status_t mg__nccl_available(void);
/* nccl_backend.c, for the other ways of making a communicator (nccl_suspend.c's grow): */
/* Binds comm to device: retains its primary context and reads what the checks need. */
mg_status_t mg__ncomm_setup(mg_comm_t *comm, int device, const char *fn);
/* Releases what mg__ncomm_setup took. */
void mg__ncomm_release(mg_comm_t *comm);
/* Frees the NCCL communicator of a failed creation (ncclCommAbort) and clears *nc. */
void mg__nccl_drop(mg__ncclComm_t *nc);
/* Both communicators of a failed creation, and a pending child. */
void mg__nccl_drop_both(mg__ncomm_t *nx);
/* The last step of every creation: the operation communicators of comms[0..n), whose
 * lifecycle communicators are ready (blocking mode: a split of each; else lc itself). */
mg_status_t mg__nccl_opcomms(mg_comm_t *const *comms, int n, double deadline, const char *fn);
/* NCCL's id from uid: MG_ERR_INVALID_ARGUMENT for an id of another backend or all zero. */
mg_status_t mg__nccl_id(const mg_unique_id_t *uid, mg__ncclUniqueId *id, const char *fn);

/* nccl_suspend.c: the table's suspend, resume, memory statistics, properties and grow. */
mg_status_t mg__nccl_suspend(mg_comm_t *comm, int flags, double deadline);
mg_status_t mg__nccl_resume(mg_comm_t *comm, double deadline);
mg_status_t mg__nccl_mem_stats(mg_comm_t *comm, mg_comm_mem_stats_t *out);
mg_status_t mg__nccl_properties(mg_comm_t *comm, mg_comm_properties_t *out);
mg_status_t mg__nccl_grow_id(mg_comm_t *comm, mg_unique_id_t *id);
mg_status_t mg__nccl_grow(mg_comm_t *comm, const mg_unique_id_t *id, mg_comm_t *child,
                          double deadline);

/* nccl_signal.c: the table's signal_op and reg_ptr (NCCL >= 2.29.2). */
mg_status_t mg__nccl_signal_op(mg_comm_t *comm, const mg__signal_op_t *op, double deadline);
mg_status_t mg__nccl_reg_ptr(mg_comm_t *comm, void *win, int which, int rank, size_t offset,
                             void **out);

/* nccl_coll.c */
/* The pace of a polling wait: call with the current time after each unsuccessful poll. Spins
 * for 200 us, yields until 5 ms, then sleeps 20 us doubling up to 1 ms. Start it zeroed. */
typedef struct mg__nccl_backoff {
  double start;  /* time of the first poll */
  long sleep_ns; /* the next sleep */
} mg__nccl_backoff_t;
void mg__nccl_backoff(mg__nccl_backoff_t *b, double now);
/* Polls ncclCommGetAsyncError of the lifecycle communicators (lc) of comms[0..n) until none
 * answers ncclInProgress. MG_OK; the first
 * error NCCL reports (with its last-error text), prefixed by what; MG_ERR_ABORTED as soon as one
 * of the comms is being aborted; MG_ERR_TIMED_OUT after deadline. Spins briefly, then sleeps
 * in growing steps of at most 1 ms. */
mg_status_t mg__nccl_wait(mg_comm_t *const *comms, int n, double deadline, const char *what);
mg_status_t mg__nccl_launch(mg__op_t *const *ops, int n);
/* The error of a blocking NCCL call on comm (a thread that entered it with mg__comm_call_enter)
 * that answered r: MG_ERR_TIMED_OUT when the watchdog stopped it, MG_ERR_ABORTED when an abort
 * did, NCCL's error otherwise; the message starts with `what` (the call, the operation). */
mg_status_t mg__nccl_call_error(mg_comm_t *comm, mg__ncclResult_t r, const char *what);

/* nccl_kern.c: all_reduce through mgcomm's own kernels (docs/kernels.md). */
/* The algorithm of op: MG__KERN_NCCL for every op but an all_reduce the kernels take. With
 * MGCOMM_ALGO=mgcomm, an all_reduce they cannot run is MG_ERR_NOT_SUPPORTED naming fn. */
mg_status_t mg__nccl_kern_pick(const mg__op_t *op, int *algo, const char *fn);
/* 1 when some op of ops[0..n) goes to the kernels: then mg__nccl_kern_launch launches them. */
int mg__nccl_kern_wanted(mg__op_t *const *ops, int n);
/* The launch of a batch with ops for the kernels: sets them up on first use, launches those
 * and posts the others through mg__nccl_launch_nccl. */
mg_status_t mg__nccl_kern_launch(mg__op_t *const *ops, int n);
/* NCCL alone (no kernels of ours), for mg__nccl_kern_launch. */
mg_status_t mg__nccl_launch_nccl(mg__op_t *const *ops, int n);
/* The interrupt's part (never blocks), the async error (a kernel that gave up), the release
 * (destroy, the comm's context current). */
void mg__nccl_kern_abort(mg_comm_t *comm);
mg_status_t mg__nccl_kern_status(mg_comm_t *comm);
void mg__nccl_kern_release(mg_comm_t *comm);
/* The kernels' part of a symmetric registration (window win of [buf, buf + bytes)), collective:
 * between ranks of several processes, the buffer is mapped by every rank so that the kernels
 * lend it in place (kernels.h, "Registered buffers"); nothing otherwise. An error is the
 * exchange's (the registration then fails). Deregister undoes it on this rank. */
mg_status_t mg__nccl_kern_register(mg_comm_t *comm, void *win, const void *buf, size_t bytes,
                                   double deadline);
void mg__nccl_kern_deregister(mg_comm_t *comm, void *win);
/* Calls of comm that lent a registered buffer to ranks of other processes, so far. */
unsigned long long mg__nccl_kern_lent(mg_comm_t *comm);
/* 1 when the peers of comm (ranks of this process with peer access) can load [p, p + bytes) at
 * this address, so that the kernels may read it in place: inside memory of mg_mem_alloc, or a
 * live registration of comm whose memory the driver says is cuMemAlloc's. 0 for anything else,
 * which is staged. */
int mg__nccl_kern_reachable(mg_comm_t *comm, const void *p, size_t bytes);

/* nccl_check_coll.c: the table's check_exchange (ncclAllGather of the records on nc), and the
 * release of what it made (destroy, with the comm's context current). */
mg_status_t mg__nccl_check_exchange(mg__xchg_t *const *xs, int n);
void mg__nccl_check_release(mg_comm_t *comm);

/* nccl_check.c */
/* The backend's check_op: dtype and op against the loaded NCCL and the device; then, unless
 * MGCOMM_CHECK_POINTERS=0, the buffers and the stream. */
mg_status_t mg__nccl_check_op(const mg__op_t *op, const char *fn);
/* The stream's check (one of the special handles, or a stream of comm's context), once per
 * stream: comm remembers the last stream that passed. who names the caller in the message
 * (NULL: comm's rank). */
mg_status_t mg__nccl_check_stream(mg_comm_t *comm, mg_stream_t stream, const char *who);
/* dtype (and, for reductions, the reduction op) against the loaded NCCL's features and a device
 * of compute capability cc_major.cc_minor. MG_ERR_NOT_SUPPORTED naming what is missing. */
mg_status_t mg__nccl_check_types(mg_dtype_t dtype, const mg__redop_t *redop, int reduction,
                                 int cc_major, int cc_minor, const char *fn);

/* nccl_backend.c: the backend's async_error: MG_ERR_REMOTE when another rank of comm in this
 * process was aborted or revoked (mg__nccl_peers_stopped); else ncclCommGetAsyncError, unless
 * another thread is in NCCL for comm (it reports what NCCL says itself) or comm was aborted:
 * then MG_OK. Never blocks. */
mg_status_t mg__nccl_async_error(mg_comm_t *comm);

/* nccl_mark.c */
mg_status_t mg__nccl_mark_record(mg__mark_t *mark);
mg_status_t mg__nccl_mark_query(mg__mark_t *mark);
mg_status_t mg__nccl_mark_notify(mg__mark_t *mark);
mg_status_t mg__nccl_mark_wait(mg__mark_t *mark, double deadline);
void mg__nccl_mark_release(mg__mark_t *mark);
mg_status_t mg__nccl_mark_elapsed(mg__mark_t *start, mg__mark_t *end, double *seconds);
/* Bytes of mark->priv the marks use. */
#define MG__NMARK_PRIV_SIZE sizeof(void *)
mg_status_t mg__nccl_comm_stream(mg_comm_t *comm, mg_stream_t *out);

/* nccl_progress.c */
/* The tag of a communicator made from an NCCL unique id. */
uint64_t mg__nccl_tag_of_id(const mg__ncclUniqueId *id);
/* The tag of a child of the communicator tagged parent: split (shrink 0; a = color) or shrink
 * (shrink 1; a = a hash of the excluded ranks), at the parent's split_seq. The same on every
 * member of the child. */
uint64_t mg__nccl_tag_child(uint64_t parent, int shrink, uint64_t split_seq, uint64_t a);
/* Enters comm (rank, nranks and tag set, NCCL communicator made) into this process's progress
 * table; without memory it stays out (its peers' progress is then unknown, nothing fails). */
void mg__nccl_progress_join(mg_comm_t *comm);
/* Takes comm out of the table (destroy); the slot keeps whether it left aborted or revoked. */
void mg__nccl_progress_leave(mg_comm_t *comm);
/* comm is being aborted or revoked (comm->aborting is set): counted in its table. */
void mg__nccl_progress_stopping(mg_comm_t *comm);
/* MG_ERR_REMOTE, naming it, when another rank of comm in this process was aborted or revoked
 * (still there, or destroyed since); else MG_OK. Never blocks (the table's lock, a leaf, taken
 * only once some member stopped). */
mg_status_t mg__nccl_peers_stopped(mg_comm_t *comm);
void mg__nccl_op_enqueued(const mg__op_t *op);
mg_status_t mg__nccl_peer_progress(mg_comm_t *comm, int r, mg__progress_t *out);
uint64_t mg__nccl_comm_tag(const mg_comm_t *comm);

/* nccl_config.c */
/* ncclConfig_t for an NCCL of version `version` from in's NCCL fields, nonblocking. A field set
 * in `in` that this version lacks is MG_ERR_NOT_SUPPORTED naming fn, the field and the version
 * that has it. */
mg_status_t mg__nccl_config_build(const mg_config_t *in, int version, mg__ncclConfig_t *out,
                                  const char *fn);
/* 1 when a communicator of configuration `in` runs its operations on a blocking communicator
 * split from its lifecycle one (blocking mode): config->nccl_blocking, else MGCOMM_NCCL_BLOCKING,
 * and an NCCL with ncclCommSplit (2.18). */
int mg__nccl_blocking_mode(const mg_config_t *in);
/* The configuration of a lifecycle communicator (lc) of configuration `in`, for the loaded NCCL:
 * mg__nccl_config_build's, and in blocking mode one channel (minCTAs = maxCTAs = 1). In that
 * mode lc runs no operation (the blocking communicator split from it runs them all), and NCCL
 * gives a communicator as many channels as the topology allows, each with device memory of its
 * own: one rank on an H100, NCCL 2.28.3 or 2.32.3, 64 channels and 390 MiB per communicator
 * (bench/results/2026-11-24-nccl-comm-memory-1xH100.md), so a full lc doubled what blocking mode
 * costs. Errors: mg__nccl_config_build's. */
mg_status_t mg__nccl_config_lc(const mg_config_t *in, mg__ncclConfig_t *out, const char *fn);
/* 1 when a and b have the same NCCL fields (strings by pointer, never read) and ask for the same
 * mode (nccl_blocking, else MGCOMM_NCCL_BLOCKING). */
int mg__nccl_config_same(const mg_config_t *a, const mg_config_t *b);

/* nccl_mem.c */
mg_status_t mg__nccl_mem_alloc(mg_comm_t *comm, size_t bytes, void **ptr);
mg_status_t mg__nccl_mem_free(void *ptr, int device);
/* nccl_backend.c: waits until no communicator of this process is still aborting on its thread
 * (ncclCommAbort returns once NCCL stopped its kernels, which may use any memory until then),
 * for MGCOMM_TIMEOUT at most: MG_OK, or MG_ERR_TIMED_OUT naming fn and ptr. */
mg_status_t mg__nccl_aborts_wait(const char *fn, const void *ptr);
mg_status_t mg__nccl_mem_copy(mg_comm_t *comm, void *dst, const void *src, size_t bytes,
                              double deadline);
mg_status_t mg__nccl_mem_register(mg_comm_t *comm, void *buf, size_t bytes, int flags,
                                  double deadline, void **handle);
mg_status_t mg__nccl_mem_deregister(mg_comm_t *comm, void *handle, int flags);

#endif
