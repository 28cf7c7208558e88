/*
 * backend.h -- the backend vtable: what the core asks of a backend, and the operation record
 * it hands over.
 *
 * The core checks every argument, handle and state before a backend sees an operation; a backend
 * checks only what only it can know (memory spaces, library versions). A backend is a versioned
 * table of functions plus capability bits; per-communicator backend state is "subclassed" by
 * size (comm_priv_size bytes after the core's struct, at comm->priv). The core never calls a
 * NULL method: optional methods are announced by capability bits, or may be NULL where their
 * comment says so.
 *
 * Every directory under src/backend/ has the same file set: <name>_backend.c (the table, init,
 * split, teardown), <name>_coll.c (operations), plus transport files of its own.
 */
#ifndef MG_CORE_BACKEND_H
#define MG_CORE_BACKEND_H

#include <stdint.h>

#include "mgcomm.h"

typedef enum mg__opkind {
  MG_OPK_ALL_REDUCE = 0,
  MG_OPK_BROADCAST,
  MG_OPK_REDUCE,
  MG_OPK_ALL_GATHER,
  MG_OPK_REDUCE_SCATTER,
  MG_OPK_ALL_TO_ALL,
  MG_OPK_ALL_TO_ALLV,
  MG_OPK_GATHER,
  MG_OPK_SCATTER,
  MG_OPK_SEND,
  MG_OPK_RECV,
  MG_OPK_COUNT
} mg__opkind_t;

/* "all_reduce", "send", ... */
const char *mg__opkind_name(mg__opkind_t kind);
/* 1 for the kinds that every rank of the communicator calls (all but send and recv). */
static inline int mg__opkind_is_collective(mg__opkind_t kind) {
  return kind != MG_OPK_SEND && kind != MG_OPK_RECV;
}
/* 1 for the kinds that take a reduction op. */
static inline int mg__opkind_is_reduction(mg__opkind_t kind) {
  return kind == MG_OPK_ALL_REDUCE || kind == MG_OPK_REDUCE || kind == MG_OPK_REDUCE_SCATTER;
}

/* A reduction operation as captured when an operation is posted: a built-in op, or a PreMulSum
 * with its scalar (copied at post time for MG_SCALAR_HOST_IMMEDIATE; a pointer read when the
 * operation runs for MG_SCALAR_DEVICE). Destroying the custom op later does not affect it. */
typedef struct mg__redop {
  mg_op_t op;                       /* the value the caller passed */
  int premul;                       /* 1: PreMulSum custom op */
  mg_scalar_residence_t residence;  /* premul only */
  unsigned char scalar[8];          /* premul, host immediate: the scalar's bytes (dtype) */
  const void *scalar_ptr;           /* premul, device residence: read when the op runs */
  int64_t backend_handle;           /* e.g. the ncclRedOp_t of the custom op */
} mg__redop_t;

/* One validated operation. Owned by the core; a backend may keep a pointer to it until it
 * reports completion. */
typedef struct mg__op {
  mg__opkind_t kind;
  mg_comm_t *comm;
  const void *send;       /* NULL where the rank does not read it (non-root of broadcast, ...) */
  void *recv;             /* NULL where the rank does not write it */
  size_t count;           /* elements, with NCCL's meaning for the kind */
  mg_dtype_t dtype;
  mg__redop_t redop;      /* reductions only */
  int root;               /* root, or the peer of send/recv; -1 when neither */
  const size_t *v[4];     /* all_to_allv: sendcounts, sdispls, recvcounts, rdispls ([nranks]
                             each): the caller's arrays while the op lives only in its call,
                             v_kept's once it outlives it (mg__op_keep) */
  size_t *v_kept;         /* the op's own copy of them, or NULL */
  mg_stream_t stream;
  struct mg_stream *hstream; /* the host stream (src/core/stream.c) when stream is one, else
                                NULL; set by the core before check_op */
  uint64_t seq;           /* collectives: sequence number on the comm, the same on every rank;
                             send/recv: per-peer sequence number */
  uint64_t trace_id;      /* the operation's entry in the comm's flight recorder (0: none) */
  uint32_t trace_slot;    /* and where the ring keeps it */
  double deadline;        /* absolute (mg__now()) time by which the operation must complete */
  mg_status_t status;     /* outcome, set by the backend's launch */
  size_t send_bytes;      /* bytes this rank reads from send / writes to recv (0 where it does */
  size_t recv_bytes;      /* not use the buffer), set by validation for the backend's checks */
} mg__op_t;

/* ---- completion tracking ------------------------------------------------------------------
 *
 * A mark is a point in a stream: it is reached once everything enqueued on the stream before it
 * has completed. The core makes one for mg_record (inside the request) and for each rank's part
 * of a world operation, then learns that it was reached in the way the communicator's
 * completion strategy says (mgcomm.h, mg_completion_t):
 *   HOSTFN  mark_notify: the backend calls mg__mark_signal(mark, status) when the stream passes
 *           the mark (NCCL: cuLaunchHostFunc on the stream, with a function that does nothing but
 *           call mg__mark_signal; the core never runs user code or CUDA calls on that thread);
 *   POLL    mark_query, called by the watchdog thread every poll interval (NCCL: cuEventQuery);
 *   SYNC    mark_wait, called by the thread in mg_request_wait (NCCL: cuEventSynchronize is not
 *           bounded, so a loop of cuEventQuery and short sleeps until the deadline).
 * Whatever the strategy, the core may call mark_query at any time (mg_request_test, the
 * watchdog's safety check), and the request's deadline bounds every wait: a HostFn that never
 * runs (CUDA skips host functions after a context fault) only delays the request until the
 * watchdog ends it with MG_ERR_TIMED_OUT.
 *
 * mark->stream is what the caller passed: NULL, a host stream (the host backend accepts those
 * of the mark's communicator), or a stream of the backend (NCCL: a CUstream). */
typedef struct mg__mark {
  mg_comm_t *comm;
  mg_stream_t stream;
  /* The core's: called through mg__mark_signal, once, for a mark armed by mark_notify. */
  void (*on_signal)(struct mg__mark *mark, mg_status_t status, const char *msg);
  void *owner;           /* the core's (the request or the world part); opaque to backends */
  const void *wowner;    /* set by mark_record when a thread of the library reaches the mark
                            (host: the stream's worker): that thread must never wait for it */
  int timed;             /* set by the core before mark_record: mark_elapsed will be asked for
                            the time between this mark and another (mg_record_timed) */
  _Alignas(16) unsigned char priv[48]; /* backend state (mark_priv_size <= 48 bytes), zeroed by
                                          the core before mark_record */
} mg__mark_t;

/* For backends: the mark armed by mark_notify was reached (status MG_OK) or never will be
 * (status < 0, msg its message, may be NULL). Call it once per armed mark, from any thread
 * (a CUDA host-function thread included: the core then runs no user code and no CUDA call on
 * it), holding no lock that a core call could need. It may be called from inside mark_notify
 * when the mark is reached already. After it returns the mark may be freed.
 * On a CUDA host-function thread it takes only the core's leaf locks (a request's, the
 * watchdog's, the callback queue's, a world batch's) and the backend's mark_release: none of
 * them is ever held across a CUDA or NCCL call, so the host function never waits for the
 * device (CUDA's rule for host functions). It never takes a world's or a communicator's lock
 * when status is MG_OK, which is what host functions pass. */
void mg__mark_signal(mg__mark_t *mark, mg_status_t status, const char *msg);

/* ---- progress, for timeout messages and the flight recorder -------------------------------- */
typedef struct mg__progress {
  uint64_t enqueued1;  /* sequence number + 1 of the last collective the rank enqueued; 0: none */
  uint64_t completed1; /* sequence number + 1 of the last collective it completed; 0: none */
  mg__opkind_t kind;   /* of the last enqueued collective */
  mg_dtype_t dtype;
  uint64_t count;
  int root;
} mg__progress_t;

/* ---- the collective check (MGCOMM_CHECK_COLLECTIVES; core/collcheck.c) ---------------------
 * Before a checked collective runs, the ranks of its communicator exchange a record of what each
 * called: an all_gather of MG__CHECK_BYTES per rank on that communicator, made by the backend's
 * check_exchange. */
#define MG__CHECK_BYTES 40
typedef struct mg__xchg {
  mg_comm_t *comm;
  const void *mine;   /* this rank's record, MG__CHECK_BYTES */
  void *all;          /* every rank's record in rank order, nranks x MG__CHECK_BYTES */
  uint64_t seq;       /* sequence number of the collective it precedes (numbered already) */
  double deadline;    /* absolute (mg__now()) time by which the exchange must complete */
  mg_status_t status; /* set by check_exchange */
} mg__xchg_t;

/* The first 8 bytes of every host-backend unique id: the other backends refuse such ids. */
#define MG__HOST_ID_MAGIC "MGHOST1"

/* 4: check_exchange was added. 5: suspend, resume, memory statistics, properties, grow, the
 * one-sided transfers and window pointers (all optional). */
#define MG__BACKEND_VERSION 5

enum {
  MG__CAP_SPLIT = 1u << 0,   /* comm_split is provided */
  MG__CAP_SHRINK = 1u << 1,  /* comm_shrink is provided */
  MG__CAP_PREMUL = 1u << 2,  /* redop_create / redop_destroy are provided */
  MG__CAP_PROGRESS = 1u << 3, /* op_enqueued / peer_progress / comm_tag are provided */
  MG__CAP_MARKS = 1u << 4,    /* mark_record / query / notify / wait / release / elapsed are
                                 provided: mg_record and the world work on this backend */
  MG__CAP_STREAM = 1u << 5,   /* comm_stream is provided: the world posts on a stream of the
                                 library's own per rank (else on stream NULL) */
  MG__CAP_ASYNC = 1u << 6,    /* operations complete on the device after launch returns: the
                                 flight recorder's "completed" means issued, and only marks tell
                                 when the device finished (timeout messages say so) */
  MG__CAP_REVOKE = 1u << 8,   /* comm_revoke is provided (the loaded library may still refuse) */
  MG__CAP_PROGRESS_LOCAL = 1u << 7, /* peer_progress knows only the ranks of this process: for
                                       communicators of mg_comm_init_env the core publishes and
                                       reads progress through the job's store (src/boot/
                                       progress.c) */
};

struct mg__signal_op; /* below the table */

typedef struct mg__backend {
  int version; /* MG__BACKEND_VERSION */
  unsigned caps;            /* MG__CAP_* */
  /* Backend-specific checks of a validated op before it is posted: dtype and op support by the
   * loaded library, memory space and extent of each buffer. MG_OK or the error, with a message
   * naming fn and the argument. */
  mg_status_t (*check_op)(const mg__op_t *op, const char *fn);
  /* Posts ops[0..n), all of this backend and already checked, as one group: runs them (host,
   * NULL stream: returns when all are done) or enqueues them (streams). Sets each op's status;
   * returns the first error. Each op carries its own deadline. Communicators whose operation
   * failed are marked by the caller. */
  mg_status_t (*launch)(mg__op_t *const *ops, int n);
  /* MG__CAP_PROGRESS (with peer_progress and comm_tag below). The core numbered op (a
   * collective) and is about to run or queue it: publish it where the other ranks can read it
   * (host: the shared segment; NCCL: a table of this process, which the ranks of other
   * processes cannot read). Called while the op is numbered (op.h, mg__op_number: calls on
   * one comm are ordered); never blocks. */
  void (*op_enqueued)(const mg__op_t *op);

  const char *name;      /* "host", "nccl" */
  mg_backend_t id;
  size_t comm_priv_size; /* bytes of backend state per communicator, at comm->priv */

  /* MG_OK when this backend can run in this process; else MG_ERR_BACKEND_UNAVAILABLE with the
   * reason in the thread's error. */
  mg_status_t (*available)(void);
  mg_status_t (*unique_id)(mg_unique_id_t *id);
  /* Creates one rank. The core has set comm->rank, nranks, config, timeout_s. */
  mg_status_t (*comm_init)(mg_comm_t *comm, const mg_unique_id_t *id, double deadline);
  /* Creates comms[0..n) of one communicator in this process. */
  mg_status_t (*comm_init_all)(mg_comm_t **comms, int n, const int *devices, double deadline);
  /* Collective over comm. child is NULL for MG_SPLIT_NOCOLOR; otherwise the backend sets
   * child->rank, child->nranks and its state. */
  mg_status_t (*comm_split)(mg_comm_t *comm, int color, int key, mg_comm_t *child,
                            double deadline);
  /* Survivors only; exclude is sorted and free of duplicates. */
  mg_status_t (*comm_shrink)(mg_comm_t *comm, const int *exclude, int nexclude, mg_comm_t *child,
                             double deadline);
  /* Completes issued work and makes the communicator quiescent. */
  mg_status_t (*comm_finalize)(mg_comm_t *comm, double deadline);
  /* mg_comm_revoke, before the core stops comm's waits: stops what the backend has in flight on
   * comm, tells the peers where the transport can, and returns once the backend is quiescent
   * (bounded by deadline). MG_ERR_NOT_SUPPORTED, with nothing done, when the loaded library
   * cannot revoke. Called without comm->lock (an operation may be running). */
  mg_status_t (*comm_revoke)(mg_comm_t *comm, double deadline);
  /* Wakes every wait on comm so that it sees comm->aborting; called from any thread, without
   * comm->lock, possibly while an operation runs. Must not block. */
  void (*comm_interrupt)(mg_comm_t *comm);
  /* Releases backend resources after comm->aborting was set and the waits returned; called
   * once, with comm->lock held. Returns promptly. */
  void (*comm_abort)(mg_comm_t *comm);
  /* Releases what is left, after finalize or abort (called exactly once). */
  void (*comm_destroy)(mg_comm_t *comm);
  /* Polls the backend's asynchronous error: MG_OK or the error. */
  mg_status_t (*async_error)(mg_comm_t *comm);
  mg_status_t (*redop_create)(mg_comm_t *comm, mg_dtype_t dtype, mg__redop_t *redop);
  void (*redop_destroy)(mg_comm_t *comm, mg__redop_t *redop);

  /* Memory (mgcomm.h, "Memory"). The core checks the arguments and keeps the records: which
   * pointers mem_alloc returned (mem_free gets only those, with the device of the comm they
   * were made for) and which registrations exist (mem_deregister gets only those). */
  mg_status_t (*mem_alloc)(mg_comm_t *comm, size_t bytes, void **ptr);
  mg_status_t (*mem_free)(void *ptr, int device);
  /* Called with comm->lock held. */
  mg_status_t (*mem_copy)(mg_comm_t *comm, void *dst, const void *src, size_t bytes,
                          double deadline);
  /* Called with comm->lock held, comm READY; flags is MG_REGISTER_*. *handle is the backend's. */
  mg_status_t (*mem_register)(mg_comm_t *comm, void *buf, size_t bytes, int flags,
                              double deadline, void **handle);
  /* Called with comm->lock held, in any state (after abort too). */
  mg_status_t (*mem_deregister)(mg_comm_t *comm, void *handle, int flags);

  /* ---- completion tracking (see mg__mark_t above); MG__CAP_MARKS: all five provided ---- */
  size_t mark_priv_size; /* bytes of mark->priv the backend uses (<= sizeof mark->priv) */
  /* Places mark after everything enqueued so far on mark->stream of mark->comm (NCCL:
   * cuEventRecord on the stream, in the comm's device context). Called under no lock of the
   * core, from any thread; never waits for the stream. MG_OK, or the error (message naming the
   * call); on error nothing was made and mark_release is not called. MG_ERR_INVALID_ARGUMENT for
   * a stream the backend does not accept. */
  mg_status_t (*mark_record)(mg__mark_t *mark);
  /* Never blocks: MG_INPROGRESS while not reached, MG_OK once reached, or the error that means it
   * never will be (NCCL: cuEventQuery's CUDA_SUCCESS / CUDA_ERROR_NOT_READY / other, and the
   * communicator's asynchronous error). May run on any thread, concurrently with mark_notify,
   * mark_wait and mg__mark_signal of the same mark, never with or after mark_release. */
  mg_status_t (*mark_query)(mg__mark_t *mark);
  /* Optional (NULL: not known early). Never blocks: the error a mark not reached yet is bound to
   * report, when that is already decided (host streams: an item before it failed, and the mark
   * will carry that sticky error), else MG_OK. Used when a request expires, so that it reports
   * the failure it is waiting behind rather than a bare timeout. Same threads as mark_query. */
  mg_status_t (*mark_doomed)(mg__mark_t *mark);
  /* Arms the HOSTFN strategy: mg__mark_signal(mark, st) will be called once (NCCL:
   * cuLaunchHostFunc). MG_OK or an error (nothing armed; the core then polls). */
  mg_status_t (*mark_notify)(mg__mark_t *mark);
  /* Blocks until the mark is reached (its status), deadline passes (MG_ERR_TIMED_OUT) or
   * mark->comm->aborting is set (MG_ERR_ABORTED); never past the deadline. */
  mg_status_t (*mark_wait)(mg__mark_t *mark, double deadline);
  /* Releases the mark (cuEventDestroy, or back to a pool); called once per successful
   * mark_record, after the last query and wait, and after mg__mark_signal if the mark was armed
   * (the core keeps an armed mark alive until it is signalled, so a host function queued on a
   * stream that never runs it keeps one request's memory: CUDA skips host functions after a
   * context fault). The communicator may be destroyed already: do not use mark->comm. It may
   * run on any thread, a CUDA host-function thread included (from within mg__mark_signal): it
   * must not call CUDA there (NCCL: return the event to a pool that a library thread drains). */
  void (*mark_release)(mg__mark_t *mark);
  /* Seconds from start to end (negative when end was reached first), both recorded with
   * timed = 1 on one communicator and both reached (their requests completed with MG_OK);
   * NCCL: cuEventElapsedTime. Before mark_release of either; the communicator may be destroyed
   * already. MG_OK or the error (message naming the call). */
  mg_status_t (*mark_elapsed)(mg__mark_t *start, mg__mark_t *end, double *seconds);

  /* ---- progress (MG__CAP_PROGRESS: these two and op_enqueued above are provided) ---- */
  /* Where rank r of comm is, as r published it. Never blocks. MG_OK, or MG_ERR_NOT_SUPPORTED when
   * r's progress cannot be read (then the core says so). */
  mg_status_t (*peer_progress)(mg_comm_t *comm, int r, mg__progress_t *out);
  /* A 64-bit name of comm, the same on every rank and different for different communicators
   * (host: from the segment name; NCCL: a hash of the unique id), for trace files. */
  uint64_t (*comm_tag)(const mg_comm_t *comm);

  /* ---- the library's own stream (MG__CAP_STREAM) ---- */
  /* A stream of the library's own for comm's operations, made on the first call and destroyed
   * with comm (NCCL: a non-blocking CUDA stream of the device's primary context). Called only by
   * the thread that owns comm (a world's rank worker). MG_OK or the error. */
  mg_status_t (*comm_stream)(mg_comm_t *comm, mg_stream_t *out);

  /* ---- the collective check ---- */
  /* Optional (NULL: MGCOMM_CHECK_COLLECTIVES checks nothing on this backend). One round of the
   * check: for each of xs[0..n) (at most one per communicator), an all_gather
   * of MG__CHECK_BYTES from x->mine into x->all over the ranks of x->comm. Every rank of a
   * communicator makes the same exchanges between the same collectives, so an exchange is
   * ordered on its communicator as a collective would be (host: the next steps; NCCL: the next
   * call on the operations communicator). All of them progress together: one thread may drive
   * every rank of a communicator (a group over mg_comm_init_all). Returns when all completed
   * (their data is in x->all), or the first error: MG_ERR_TIMED_OUT at x->deadline, MG_ERR_ABORTED,
   * MG_ERR_REMOTE, the library's error; x->status is set for each. Called by mg__launch with
   * the communicators' locks held, after numbering; what the ranks publish of their progress
   * (peer_progress, the flight recorder) stays as it was. */
  mg_status_t (*check_exchange)(mg__xchg_t *const *xs, int n);

  /* ---- suspend, memory statistics, grow, properties (core/comm_suspend.c, comm_grow.c) ----
   * Each is optional: NULL makes the core answer MG_ERR_NOT_SUPPORTED. A method whose library
   * lacks it answers MG_ERR_NOT_SUPPORTED itself (mg__feature_require), with comm as it was. */
  /* Collective; called with comm->lock held, comm READY, not suspended, nothing in flight. */
  mg_status_t (*comm_suspend)(mg_comm_t *comm, int flags, double deadline);
  /* Collective; called with comm->lock held, comm READY and suspended. */
  mg_status_t (*comm_resume)(mg_comm_t *comm, double deadline);
  /* Local; called with comm->lock held, comm not aborted; the core has zeroed out. */
  mg_status_t (*comm_mem_stats)(mg_comm_t *comm, mg_comm_mem_stats_t *out);
  /* Local; called with comm->lock held, comm READY; the core has set rank, nranks, device,
   * nvml_device (-1), nccl_version (0) and every capability to -1 (not said). */
  mg_status_t (*comm_properties)(mg_comm_t *comm, mg_comm_properties_t *out);
  /* comm's rank 0, comm->lock held, comm READY: an id for comm_grow. */
  mg_status_t (*grow_id)(mg_comm_t *comm, mg_unique_id_t *id);
  /* Collective over the new communicator. comm: a rank of the old one (comm->lock held, READY)
   * or NULL for a new rank; id: what rank 0 of the old one made (every rank passes it). The
   * core has set child->rank and child->nranks; the backend sets up child's state. */
  mg_status_t (*comm_grow)(mg_comm_t *comm, const mg_unique_id_t *id, mg_comm_t *child,
                           double deadline);

  /* ---- one-sided transfers on symmetric registrations (core/signal.c) ----
   * Optional (NULL: MG_ERR_NOT_SUPPORTED from the core). Called with comm->lock held, comm
   * READY, the arguments checked (win: the handle mem_register gave a symmetric registration). */
  mg_status_t (*signal_op)(mg_comm_t *comm, const struct mg__signal_op *op, double deadline);
  /* which: MG__REGPTR_PEER (rank = a peer), _LSA (rank in the LSA team), _USER (rank unused). */
  mg_status_t (*reg_ptr)(mg_comm_t *comm, void *win, int which, int rank, size_t offset,
                         void **out);
} mg__backend_t;

enum { MG__SIG_PUT = 0, MG__SIG_SIGNAL = 1, MG__SIG_WAIT = 2 };
enum { MG__REGPTR_PEER = 0, MG__REGPTR_LSA = 1, MG__REGPTR_USER = 2 };
typedef struct mg__signal_op {
  int kind;                     /* MG__SIG_* */
  const void *send;             /* put */
  size_t count;                 /* put: elements */
  mg_dtype_t dtype;             /* put */
  int peer;                     /* put, signal */
  void *win;                    /* put: the symmetric registration's handle */
  size_t offset;                /* put: bytes into the peer's buffer */
  int signal;                   /* put, signal */
  const mg_signal_wait_t *waits; /* wait: n of them */
  int n;
  mg_stream_t stream;
} mg__signal_op_t;

extern const mg__backend_t mg__backend_host;
extern const mg__backend_t mg__backend_nccl;

/* The backend for a concrete id, or NULL when it is not built into this library. */
const mg__backend_t *mg__backend_get(mg_backend_t id);

#endif
