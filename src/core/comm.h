/*
 * comm.h -- the core's communicator object, which the backends and the layers above share.
 *
 * Lock order (two locks are never taken the other way round): a group launch takes the locks of
 * its communicators in increasing address order; then mg_comm.seq_lock (numbering; taken alone
 * by operations queued on host streams, which must not wait for a running operation), then the
 * flight recorder's lock; mg_comm.err_lock and mg_comm.redop_lock are leaves (taken last, held
 * for a copy or a list walk only).
 */
#ifndef MG_CORE_COMM_H
#define MG_CORE_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/backend.h"
#include "base/error.h"
#include "core/handle.h"

typedef struct mg__custom_op {
  mg_op_t id;                  /* process-wide unique value >= MG_OP_BUILTIN_COUNT */
  mg_dtype_t dtype;
  mg__redop_t redop;           /* what a posted operation captures */
  struct mg__custom_op *next;
} mg__custom_op_t;

enum { MG__STOP_ABORT = 1, MG__STOP_REVOKE = 2 }; /* values of mg_comm.aborting */

/* What a layer above core attaches to a communicator it made (mg_comm_init_env: the job's store,
 * and this rank's progress published there). Core and backends call these at the right moments
 * without knowing what they hold; every member may be NULL. */
typedef struct mg__comm_ext {
  /* Rank r's progress when the backend does not know it (a rank of another process). */
  mg_status_t (*peer_progress)(void *state, int r, mg__progress_t *out);
  /* Before the backend is destroyed: stop reading this rank's progress through it. */
  void (*leave)(void *state);
  /* When the communicator is freed: release state. */
  void (*release)(void *state);
  /* A peer rank (of another process) that stopped, as this layer last heard: 1 with *rank and
   * *how (MG__STOP_*) set, else 0. Never blocks: backends call it from their asynchronous error. */
  int (*peer_stopped)(void *state, int *rank, int *how);
  /* This rank's communicator is stopping (comm->aborting was just set): tell the others now
   * rather than later. Never blocks: called from an abort, also the watchdog's. */
  void (*stopping)(void *state);
} mg__comm_ext_t;

struct mg_comm {
  int rank;
  int nranks;
  int device;                     /* CUDA ordinal, -1 on host */
  int check_colls;                /* 1: collectives are checked (core/collcheck.c):
                                     MGCOMM_CHECK_COLLECTIVES=1 when the comm was made, and the
                                     backend has check_exchange */
  const mg__backend_t *backend;
  void *priv;                     /* backend state, comm_priv_size bytes */
  struct mg__trace *trace;        /* flight recorder (core/trace.c); NULL when off */
  double timeout_s;               /* resolved deadline length of every wait, seconds */
  atomic_int state;               /* mg_comm_state_t */
  atomic_int async_error;         /* mg_status_t: MG_OK, or what put the comm in MG_COMM_ERROR */
  atomic_int aborting;            /* set first thing by abort (MG__STOP_ABORT) or revoke
                                     (MG__STOP_REVOKE); backends' waits watch it: any non-zero
                                     value stops them */
  uint64_t coll_seq;              /* sequence number of the next collective (under seq_lock) */
  uint64_t *p2p_seq;              /* per peer: next send and recv sequence (2 x nranks) */
  pthread_mutex_t lock;           /* serialises operations and lifecycle calls on this comm */
  struct mg__worker *worker;      /* the rank's worker thread (host streams); NULL until one is
                                     needed; made holding lock and seq_lock */
  pthread_mutex_t seq_lock;       /* guards coll_seq, p2p_seq, worker creation */
  mg_config_t config;             /* copy of the caller's (defaults filled in) */
  pthread_mutex_t err_lock;       /* guards last_error */
  char last_error[MG__ERROR_LEN]; /* last error raised on this comm, by any thread */
  pthread_mutex_t redop_lock;     /* guards custom_ops (a leaf lock) */
  mg__custom_op_t *custom_ops;    /* custom reduction ops of this comm */
  uint64_t split_seq;             /* number of split/shrink calls made (under lock) */
  struct mg_reg *regs;            /* registrations of buffers (mem.c; under lock), owned */
  const mg__comm_ext_t *ext;      /* what a layer above attached (mg_comm_init_env: the job's
                                     store and the progress shared through it); NULL: nothing */
  void *ext_state;                /* ext's own state */
  atomic_int abort_done;          /* the backend's comm_abort ran (once) */
  atomic_int refs;                /* threads inside the communicator (mg__comm_enter): public
                                     calls, a request's query or wait, the watchdog's scan;
                                     destroy waits for them */
  int worker_owned;               /* 1: made by mg_stream_create, stopped by destroy; 0: the
                                     world's */
  double wd_error_since;           /* the watchdog: when it first saw the backend's async error
                                     while requests were pending (0: not seen; its thread's) */
  mg_completion_t completion;     /* resolved from the config (never DEFAULT) */
  double poll_interval;           /* seconds, resolved */
  mg_on_timeout_t on_timeout;     /* resolved */
  int blocking_calls;             /* set by the backend's init: its calls may block on the host
                                     (NCCL's blocking communicators), so the watchdog watches
                                     call_deadline from publication to destroy */
  _Atomic double call_deadline;   /* the deadline of the backend call a thread is in now, under
                                     lock (mg__comm_call_enter); 0: none */
  atomic_int call_expired;        /* the watchdog found call_deadline passed and aborted comm */
  int leaving;                    /* set by mg_comm_destroy before the abort it makes of a comm
                                     that was neither finalized nor aborted: the rank leaves, it
                                     did not fail (a backend may tell its peers so); read by the
                                     backend's comm_abort */
  atomic_int suspended;           /* 1 between mg_comm_suspend and mg_comm_resume (under lock;
                                     read without it by the state check) */
};

/* Every public call that uses a communicator enters it first and leaves it before it returns:
 * comm is live (NULL, destroyed or foreign is MG_ERR_INVALID_USAGE naming fn) and is not freed
 * before the matching mg__comm_leave, since mg_comm_destroy waits for the threads inside. */
mg_status_t mg__comm_enter(mg_comm_t *comm, const char *fn);
/* mg__comm_enter, and comm is in state READY; on error comm was not entered. */
mg_status_t mg__comm_enter_ready(mg_comm_t *comm, const char *fn);
/* Enters comm when it is live: 1, else 0 with no message (requests, the watchdog). */
int mg__comm_hold(mg_comm_t *comm);
void mg__comm_leave(mg_comm_t *comm);
/* State READY, for a communicator the calling thread is inside: MG_OK or MG_ERR_INVALID_USAGE
 * saying what state it is in. */
mg_status_t mg__comm_check_state(mg_comm_t *comm, const char *fn);
/* Copies the calling thread's last error into comm's last error. */
void mg__comm_save_error(mg_comm_t *comm);
/* 1 when an error that an operation or a lifecycle call met breaks the communicator: every error
 * but running out of memory and the caller's own (a bad argument, a wrong call, something not
 * supported), which are found before anything is posted. ran: the backend ran the operation and
 * ended it with st; then MG_ERR_INVALID_USAGE is a mismatch with the other ranks' calls found
 * while it ran, and breaks it too: the ranks no longer agree on what comes next. */
static inline int mg__comm_breaks(mg_status_t st, int ran) {
  if (ran && st == MG_ERR_INVALID_USAGE) return 1;
  return st < 0 && st != MG_ERR_INVALID_ARGUMENT && st != MG_ERR_INVALID_USAGE &&
         st != MG_ERR_NOT_SUPPORTED && st != MG_ERR_OUT_OF_MEMORY;
}
/* Moves comm to MG_COMM_ERROR with status as its async error (first error wins). */
void mg__comm_fail(mg_comm_t *comm, mg_status_t status);
/* Aborts comm without waiting for its lock (the watchdog): sets the flags, ends its pending
 * requests with MG_ERR_ABORTED, interrupts its waits; the backend's release runs now if the lock
 * is free, else at the next mg_comm_abort or mg_comm_destroy. Never blocks. */
void mg__comm_abort_nowait(mg_comm_t *comm);
/* Releases comm->lock; first runs the backend's release of an abort that came while the lock
 * was held (an abort never waits long for the lock: a thread inside a blocking backend call may
 * hold it until the watchdog's revoke lets it return). */
void mg__comm_unlock(mg_comm_t *comm);
/* A thread holding comm->lock enters (leaves) a backend call that may block on the host until
 * deadline; the watchdog aborts comm once deadline passed while it is still inside. */
static inline void mg__comm_call_enter(mg_comm_t *comm, double deadline) {
  atomic_store_explicit(&comm->call_deadline, deadline, memory_order_release);
}
static inline void mg__comm_call_leave(mg_comm_t *comm) {
  atomic_store_explicit(&comm->call_deadline, 0.0, memory_order_release);
}
static inline int mg__comm_call_inside(mg_comm_t *comm) {
  return atomic_load_explicit(&comm->call_deadline, memory_order_acquire) != 0.0;
}
/* Absolute deadline (mg__now() seconds) for a wait on comm. */
double mg__comm_deadline(const mg_comm_t *comm);
/* Allocates a communicator object for backend with defaults from config (may be NULL). */
mg_status_t mg__comm_alloc(const mg__backend_t *backend, const mg_config_t *config,
                           mg_comm_t **out);
void mg__comm_free(mg_comm_t *comm);
/* The last step of every creation: sizes the per-peer tables and registers the handle. */
mg_status_t mg__comm_publish(mg_comm_t *comm);
/* Reads the caller's config into cfg (core/config.c) and resolves its backend, naming fn. */
mg_status_t mg__config_backend(const mg_config_t *config, const char *fn, mg_config_t *cfg,
                               const mg__backend_t **out);
/* 1 when [p, p + bytes) lies inside memory that mg_mem_alloc made on comm's device, or inside a
 * live registration of comm (mem.c): device memory the backend checked when it was recorded.
 * The record is taken out before such memory is freed or deregistered. Thread-safe. */
int mg__mem_known(const mg_comm_t *comm, const void *p, size_t bytes);
/* 1 when [p, p + bytes) lies inside memory that mg_mem_alloc made on comm's device (a subset of
 * mg__mem_known: no registration), until mg_mem_free takes it out. Thread-safe. */
int mg__mem_allocated(const mg_comm_t *comm, const void *p, size_t bytes);
/* reg's flags, size and backend handle when it is a live registration of comm (mem.c; the
 * caller holds comm->lock), else MG_ERR_INVALID_ARGUMENT with no message. */
mg_status_t mg__reg_lookup(mg_comm_t *comm, const mg_reg_t *reg, int *flags, size_t *bytes,
                           void **handle);
/* Frees the handles of comm's registrations (mem.c), when the backend has released comm. */
void mg__reg_free_all(mg_comm_t *comm);

#endif
