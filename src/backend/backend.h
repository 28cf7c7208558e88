/*
 * backend.h -- the backend vtable: what the core asks of a backend, and the operation record
 * it hands over.
 *
 * The core checks every argument, handle and state before a backend sees an operation; a backend
 * checks only what only it can know (memory spaces, library versions). A backend is a versioned
 * table of functions plus capability bits; per-communicator backend state is "subclassed" by
 * size (comm_priv_size bytes after the core's struct, at comm->priv). The core never calls a
 * NULL method: optional methods are announced by capability bits.
 *
 * Every directory under src/backend/ has the same file set: <name>_backend.c (the table, init,
 * split, teardown), <name>_coll.c (operations), plus transport files of its own.
 */
#ifndef MG_BACKEND_BACKEND_H
#define MG_BACKEND_BACKEND_H

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
int mg__opkind_is_collective(mg__opkind_t kind);

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
  size_t *v;              /* all_to_allv: sendcounts, sdispls, recvcounts, rdispls (4 x nranks),
                             owned by the op */
  mg_stream_t stream;
  uint64_t seq;           /* collectives: sequence number on the comm, the same on every rank;
                             send/recv: per-peer sequence number */
  double deadline;        /* absolute (mg__now()) time by which the operation must complete */
  mg_status_t status;     /* outcome, set by the backend's launch */
  size_t send_bytes;      /* bytes this rank reads from send / writes to recv (0 where it does */
  size_t recv_bytes;      /* not use the buffer), set by validation for the backend's checks */
} mg__op_t;

#define MG__BACKEND_VERSION 1

enum {
  MG__CAP_SPLIT = 1u << 0,   /* comm_split is provided */
  MG__CAP_SHRINK = 1u << 1,  /* comm_shrink is provided */
  MG__CAP_PREMUL = 1u << 2,  /* redop_create / redop_destroy are provided */
};

typedef struct mg__backend {
  int version;           /* MG__BACKEND_VERSION */
  const char *name;      /* "host", "nccl" */
  mg_backend_t id;
  unsigned caps;         /* MG__CAP_* */
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
  /* Backend-specific checks of a validated op before it is posted: dtype and op support by the
   * loaded library, memory space and extent of each buffer. MG_OK or the error, with a message
   * naming fn and the argument. */
  mg_status_t (*check_op)(const mg__op_t *op, const char *fn);
  mg_status_t (*redop_create)(mg_comm_t *comm, mg_dtype_t dtype, mg__redop_t *redop);
  void (*redop_destroy)(mg_comm_t *comm, mg__redop_t *redop);
  /* Posts ops[0..n), all of this backend and already checked, as one group: runs them (host,
   * NULL stream: returns when all are done) or enqueues them (streams). Sets each op's status;
   * returns the first error. Each op carries its own deadline. Communicators whose operation
   * failed are marked by the caller. */
  mg_status_t (*launch)(mg__op_t *const *ops, int n);

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
} mg__backend_t;

extern const mg__backend_t mg__backend_host;
extern const mg__backend_t mg__backend_nccl;

/* The backend for a concrete id, or NULL when it is not built into this library. */
const mg__backend_t *mg__backend_get(mg_backend_t id);

#endif
