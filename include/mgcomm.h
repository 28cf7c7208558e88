/*
 * mgcomm.h -- the one public header of mgcomm, a C11 library for communication between GPUs
 * and between processes: NCCL's collectives and point-to-point operations, behind one checked,
 * bounded API, with a host-memory backend that runs the same calls on CPU memory.
 *
 * This header includes nothing from CUDA, NCCL or NVSHMEM; those libraries are loaded at run
 * time. It compiles as C11 and as C++.
 *
 * Conventions that hold for every function below:
 *  - Every function that can fail returns mg_status_t: MG_OK (0), MG_INPROGRESS (> 0), or an
 *    error (< 0). The detail of the last error of the calling thread is in mg_last_error().
 *  - Outputs are written only on success, unless a function says otherwise.
 *  - Destroy functions accept NULL and return MG_OK for it.
 *  - A handle that is NULL, freed, or of the wrong kind gives MG_ERR_INVALID_USAGE; nothing is
 *    touched.
 *  - Every wait has a deadline: the call's own, else the communicator's timeout_s, else
 *    MGCOMM_TIMEOUT (600 s by default). Expiry is MG_ERR_TIMED_OUT, never a hang.
 *  - Thread safety: a function may be called from any thread, concurrently with others, unless
 *    its comment says otherwise; calls on one communicator or one store are serialised by the
 *    library. Group state and mg_last_error() belong to the calling thread.
 *
 * Divisions of this file: export macro and version; status codes and errors; data types and
 * reduction operations; configuration; communicators; operations and groups; custom ops;
 * memory; rendezvous (the store, mg_comm_init_env); requests and streams; world; flight
 * recorder; diagnostics (parameters, libraries, features, devices).
 */
#ifndef MGCOMM_H
#define MGCOMM_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MGCOMM_BUILDING) && defined(__GNUC__)
#define MG_EXTERN __attribute__((visibility("default")))
#else
#define MG_EXTERN
#endif

/* ---------------------------------------------------------------------------------------------
 * Version
 *
 * MGCOMM_VERSION is the version of this header as MAJOR*10000 + MINOR*100 + PATCH. mg_version()
 * returns the version of the library actually loaded, so a program can check that both agree
 * (the major version is the SONAME: libmgcomm.so.MAJOR).
 */
#define MGCOMM_VERSION_MAJOR 0
#define MGCOMM_VERSION_MINOR 1
#define MGCOMM_VERSION_PATCH 0
#define MGCOMM_VERSION \
  (MGCOMM_VERSION_MAJOR * 10000 + MGCOMM_VERSION_MINOR * 100 + MGCOMM_VERSION_PATCH)
#define MGCOMM_VERSION_STRING "0.1.0"

/* The library's version, in MGCOMM_VERSION's encoding. Never fails; thread-safe. */
MG_EXTERN int mg_version(void);
/* The library's version as "MAJOR.MINOR.PATCH". Static storage; never fails; thread-safe. */
MG_EXTERN const char *mg_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Status codes
 *
 * One table, MG_STATUS_MAP, gives every status its value, name and message.
 * RULE: this table is append-only. A value is never renumbered, never removed and never reused;
 * a retired status keeps its line. Programs may store these values.
 */
#define MG_STATUS_MAP(XX)                                                                        \
  XX(OK, 0, "success")                                                                           \
  XX(INPROGRESS, 1, "operation in progress")                                                     \
  XX(ERR_INVALID_ARGUMENT, -1, "invalid argument")                                               \
  XX(ERR_INVALID_USAGE, -2, "invalid usage (bad handle, wrong state or wrong call order)")       \
  XX(ERR_NOT_SUPPORTED, -3, "not supported by this backend or library version")                  \
  XX(ERR_BACKEND_UNAVAILABLE, -4, "backend unavailable (library or device not found)")           \
  XX(ERR_OUT_OF_MEMORY, -5, "out of memory")                                                     \
  XX(ERR_TIMED_OUT, -6, "timed out")                                                             \
  XX(ERR_ABORTED, -7, "aborted")                                                                 \
  XX(ERR_REMOTE, -8, "a remote rank failed or exited")                                           \
  XX(ERR_BACKEND, -9, "a backend library call failed")                                           \
  XX(ERR_SYSTEM, -10, "an operating-system call failed")                                         \
  XX(ERR_STALE, -11, "handle belongs to an older generation")                                    \
  XX(ERR_INTERNAL, -12, "internal error")

typedef enum mg_status {
#define MG__STATUS_ENUM(name, value, msg) MG_##name = (value),
  MG_STATUS_MAP(MG__STATUS_ENUM)
#undef MG__STATUS_ENUM
  MG__STATUS_FORCE_INT = INT_MAX
} mg_status_t;

/* "MG_ERR_TIMED_OUT" for MG_ERR_TIMED_OUT; "MG_UNKNOWN_STATUS" for a value not in the table.
 * Static storage; never fails; thread-safe. */
MG_EXTERN const char *mg_status_name(mg_status_t status);
/* The one-line message of a status ("timed out"); "unknown status" for a value not in the table.
 * Static storage; never fails; thread-safe. */
MG_EXTERN const char *mg_status_string(mg_status_t status);

/* The detail of the last error raised on the calling thread: the function, the argument or the
 * foreign call and its code, the rank and the operation. "" when this thread has seen no error.
 * The string is thread-local and stays valid until the next failing mgcomm call on this thread.
 * A successful call does not clear it. Never fails. */
MG_EXTERN const char *mg_last_error(void);
/* Copies mg_last_error() into buf (always NUL-terminated when len > 0, truncated to fit) and
 * returns the length of the whole message, excluding the NUL, as snprintf does. buf may be NULL
 * when len is 0. Never fails; thread-safe. */
MG_EXTERN size_t mg_last_error_copy(char *buf, size_t len);

/* ---------------------------------------------------------------------------------------------
 * Data types and reduction operations
 *
 * mg_dtype_t uses NCCL's numbering (ncclDataType_t), so values can be passed through unchanged.
 * The fp8 types need NCCL >= 2.24 on the NCCL backend; the host backend supports all of them.
 */
typedef enum mg_dtype {
  MG_INT8 = 0,
  MG_UINT8 = 1,
  MG_INT32 = 2,
  MG_UINT32 = 3,
  MG_INT64 = 4,
  MG_UINT64 = 5,
  MG_FLOAT16 = 6,       /* IEEE 754 binary16 */
  MG_FLOAT32 = 7,
  MG_FLOAT64 = 8,
  MG_BFLOAT16 = 9,      /* upper 16 bits of a float32 */
  MG_FLOAT8_E4M3 = 10,  /* OCP fp8 E4M3 (FN): no infinities, one NaN pattern per sign, max 448 */
  MG_FLOAT8_E5M2 = 11,  /* OCP fp8 E5M2: IEEE-like, with infinities and NaNs, max 57344 */
  MG_DTYPE_COUNT = 12
} mg_dtype_t;

/* Size in bytes of one element of dtype; 0 for a value that is not a dtype. Never fails. */
MG_EXTERN size_t mg_dtype_size(mg_dtype_t dtype);
/* Lower-case name ("float32", "bfloat16", "float8_e4m3"); NULL for a value that is not a dtype.
 * Static storage. Never fails. */
MG_EXTERN const char *mg_dtype_name(mg_dtype_t dtype);
/* Parses a name as printed by mg_dtype_name, or one of the short aliases nccl-tests uses
 * ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16",
 * "f8e4m3", "f8e5m2"). MG_ERR_INVALID_ARGUMENT for NULL or an unknown name; *out is untouched. */
MG_EXTERN mg_status_t mg_dtype_from_name(const char *name, mg_dtype_t *out);

/* Reduction operations, with NCCL's numbering (ncclRedOp_t). Values >= MG_OP_BUILTIN_COUNT are
 * custom operations made by mg_op_create_premul_sum for one communicator.
 *
 * Semantics on every backend:
 *  - integers wrap on overflow (two's complement);
 *  - MG_AVG on integers is the sum divided by the number of ranks, truncated toward zero (as
 *    NCCL); on floating types it is the sum of s * x_i with s = 1/nranks rounded to the dtype
 *    (through float for the types narrower than float64; as NCCL, which pre-multiplies);
 *    PreMulSum likewise computes s * x_i, then sums;
 *  - fp16, bf16 and fp8 are converted to float, combined, and rounded back to the type with
 *    round-to-nearest-even after every pairwise step (and after each pre-multiplication);
 *    fp16 and bf16 overflow to infinity; fp8 (both kinds) saturates to the largest finite value
 *    on overflow, infinities included, as CUDA's satfinite conversion that NCCL uses; NaN stays
 *    NaN;
 *  - MG_MAX and MG_MIN propagate NaN on the host backend: if any rank's element is NaN, the
 *    result element is NaN (unlike C's fmax/fmin, which drop it), and max(-0, +0) is +0, min
 *    is -0. NCCL does not document a NaN rule for its max and min: on the NCCL backend the
 *    result of MG_MAX or MG_MIN over NaN inputs is NCCL's and is not specified here.
 * The host backend reduces in rank order (((x0 op x1) op x2) ...), so its results are bitwise
 * reproducible from run to run. */
typedef enum mg_op {
  MG_SUM = 0,
  MG_PROD = 1,
  MG_MAX = 2,
  MG_MIN = 3,
  MG_AVG = 4,
  MG_OP_BUILTIN_COUNT = 5,
  MG__OP_FORCE_INT = INT_MAX
} mg_op_t;

/* Name of a built-in op ("sum", "prod", "max", "min", "avg"), "premul_sum" for a custom op value,
 * NULL for a negative value. Static storage. Never fails. */
MG_EXTERN const char *mg_op_name(mg_op_t op);
/* Parses "sum", "prod", "max", "min" or "avg". MG_ERR_INVALID_ARGUMENT otherwise. */
MG_EXTERN mg_status_t mg_op_from_name(const char *name, mg_op_t *out);

/* ---------------------------------------------------------------------------------------------
 * Backends and configuration
 */
typedef enum mg_backend {
  MG_BACKEND_AUTO = 0, /* NCCL when a GPU and libnccl are usable, else host; MGCOMM_BACKEND
                          overrides, and an override that cannot run is an error */
  MG_BACKEND_HOST = 1, /* CPU memory; ranks are threads of one process or processes of one host */
  MG_BACKEND_NCCL = 2  /* GPU memory through NCCL, loaded at run time */
} mg_backend_t;

/* "auto", "host", "nccl"; NULL for another value. Static storage. Never fails. */
MG_EXTERN const char *mg_backend_name(mg_backend_t backend);

/* Resolves MG_BACKEND_AUTO (and the MGCOMM_BACKEND override) to the backend that init calls
 * would use, and says why in reason (may be NULL; truncated to reason_len). A concrete backend
 * that cannot run here gives MG_ERR_BACKEND_UNAVAILABLE with the cause. Thread-safe. */
MG_EXTERN mg_status_t mg_backend_resolve(mg_backend_t requested, mg_backend_t *out, char *reason,
                                         size_t reason_len);

#define MG_UNDEF_INT INT_MIN
#define MG_CONFIG_VERSION 4

/* How a request learns that a stream has passed the point it waits for (mg_record): one of three
 * strategies. All are bounded by the request's deadline (the watchdog). */
typedef enum mg_completion {
  MG_COMPLETION_DEFAULT = 0, /* MGCOMM_COMPLETION (hostfn unless set) */
  MG_COMPLETION_HOSTFN = 1,  /* the stream calls back: cuLaunchHostFunc on the NCCL backend, the
                                rank's worker itself on a host stream */
  MG_COMPLETION_POLL = 2,    /* checked every poll_interval_s (cuEventQuery; a host stream's
                                progress) by the watchdog thread */
  MG_COMPLETION_SYNC = 3     /* the thread in mg_request_wait blocks on the stream; a request
                                nobody waits for is found complete by mg_request_test or by the
                                watchdog's periodic check */
} mg_completion_t;

/* What the watchdog does with a communicator one of whose requests passed its deadline. */
typedef enum mg_on_timeout {
  MG_ON_TIMEOUT_DEFAULT = 0, /* MGCOMM_ON_TIMEOUT (abort unless set) */
  MG_ON_TIMEOUT_ABORT = 1,   /* abort the communicator (a world: every rank), so that no thread
                                stays stuck in it; its other requests end with MG_ERR_ABORTED */
  MG_ON_TIMEOUT_REPORT = 2   /* only fail the request; the communicator moves to MG_COMM_ERROR */
} mg_on_timeout_t;

/* Parameters of a communicator. Initialise with MG_CONFIG_INIT, then set the fields you want.
 * A NULL config means all defaults.
 *
 * Compatibility: fields are only ever appended, each new set with a new MG_CONFIG_VERSION, so a
 * program built against an older mgcomm.h runs with a newer library. The library accepts the
 * size and version that MG_CONFIG_INIT sets in its own mgcomm.h or in any older one: version 1
 * to MG_CONFIG_VERSION, each with the size of its layout (mg_config_t up to that version's last
 * field; on LP64: 1 -> 32 bytes, 2 -> 88, 3 -> 112, 4 -> 112). It reads only the fields that the
 * caller's version has and gives the fields appended after it their MG_CONFIG_INIT defaults. A
 * larger size than this library's sizeof(mg_config_t), a version of 0 or above its
 * MG_CONFIG_VERSION (a program built against a newer mgcomm.h), or a size that is not its
 * version's is MG_ERR_INVALID_USAGE, with a message that names the size and version given and
 * those accepted. Every entry point that takes a config (init, split, shrink, mg_comm_init_env,
 * mg_world_create) applies the same rule.
 *
 * The nccl_* fields are the fields of NCCL's ncclConfig_t, passed to NCCL as they are when set
 * (MG_UNDEF_INT or NULL: NCCL's default; NCCL checks the values). Each needs the NCCL version
 * written next to it: setting a field that the loaded NCCL does not have is MG_ERR_NOT_SUPPORTED
 * at init (or split, shrink), naming the version that has it. The strings are read during that
 * call only. Split and shrink with a NULL config inherit the parent's. The host backend ignores
 * them. NCCL's `blocking` is mgcomm's own field, nccl_blocking, since mgcomm bounds the waits of
 * both modes itself. */
typedef struct mg_config {
  size_t size;          /* sizeof(mg_config_t), set by MG_CONFIG_INIT */
  unsigned int version; /* MG_CONFIG_VERSION, set by MG_CONFIG_INIT */
  mg_backend_t backend; /* MG_BACKEND_AUTO by default */
  double timeout_s;     /* deadline of every wait on this communicator, seconds; 0 = MGCOMM_TIMEOUT */
  int device;           /* NCCL backend, mg_comm_init_rank: CUDA device ordinal of this rank;
                           MG_UNDEF_INT = the local rank (mg_comm_init_env) or device 0 */
  /* NCCL's ncclConfig_t (MG_CONFIG_VERSION 2; the fields above are version 1). */
  int nccl_cga_cluster_size;       /* cgaClusterSize, NCCL >= 2.17 */
  int nccl_min_ctas;               /* minCTAs, NCCL >= 2.17 */
  int nccl_max_ctas;               /* maxCTAs, NCCL >= 2.17 */
  const char *nccl_net_name;       /* netName, NCCL >= 2.17 */
  int nccl_split_share;            /* splitShare, NCCL >= 2.18 */
  int nccl_traffic_class;          /* trafficClass, NCCL >= 2.26 */
  const char *nccl_comm_name;      /* commName, NCCL >= 2.27 */
  int nccl_collnet_enable;         /* collnetEnable, NCCL >= 2.27 */
  int nccl_cta_policy;             /* CTAPolicy, NCCL >= 2.27 */
  int nccl_shrink_share;           /* shrinkShare, NCCL >= 2.27 */
  int nccl_nvls_ctas;              /* nvlsCTAs, NCCL >= 2.27 */
  int nccl_nchannels_per_net_peer; /* nChannelsPerNetPeer, NCCL >= 2.28 */
  int nccl_nvlink_centric_sched;   /* nvlinkCentricSched, NCCL >= 2.28 */
  /* Requests, the world and the flight recorder (MG_CONFIG_VERSION 3). */
  int trace_entries;    /* flight-recorder ring of the communicator, in operations; 0 =
                           MGCOMM_TRACE_ENTRIES (2048); -1 = no recorder */
  mg_completion_t completion; /* MG_COMPLETION_DEFAULT = MGCOMM_COMPLETION */
  double poll_interval_s;     /* MG_COMPLETION_POLL: seconds between checks; 0 =
                                 MGCOMM_POLL_INTERVAL (50 us) */
  mg_on_timeout_t on_timeout; /* MG_ON_TIMEOUT_DEFAULT = MGCOMM_ON_TIMEOUT */
  /* NCCL backend (MG_CONFIG_VERSION 4). */
  int nccl_blocking; /* operations on a blocking NCCL communicator: 1 (the default) as PyTorch
                        does, at raw NCCL's speed; an operation that NCCL holds on the host past
                        its deadline is released by the watchdog, which revokes the
                        communicator (NCCL >= 2.28.7; with an older NCCL such a call cannot be
                        interrupted and returns only when NCCL lets it). 0: nonblocking, each
                        launch on a thread of NCCL's (tens of us per operation) but the call
                        itself never blocks. MG_UNDEF_INT = MGCOMM_NCCL_BLOCKING. Creation is
                        bounded in both. */
} mg_config_t;

#define MG_CONFIG_INIT                                                                    \
  {sizeof(mg_config_t), MG_CONFIG_VERSION, MG_BACKEND_AUTO, 0.0, MG_UNDEF_INT,            \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, NULL, MG_UNDEF_INT, MG_UNDEF_INT, NULL,       \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT,    \
   0, MG_COMPLETION_DEFAULT, 0.0, MG_ON_TIMEOUT_DEFAULT, MG_UNDEF_INT}

/* ---------------------------------------------------------------------------------------------
 * Communicators
 *
 * A communicator (mg_comm_t) is one rank's membership in a group of nranks ranks. All ranks of a
 * communicator call its collective operations in the same order with matching arguments.
 *
 * Thread safety: a communicator may be used from any thread; calls on one communicator are
 * serialised by the library. Group state (mg_group_begin/end) belongs to the calling thread.
 *
 * NCCL mode: by default a communicator's operations run on a blocking NCCL communicator, at
 * NCCL's own speed. Such a call may wait inside NCCL on the host; the library's watchdog bounds
 * it: a call still inside past its deadline has its communicator revoked and aborted, and returns
 * MG_ERR_TIMED_OUT. With NCCL older than 2.28.7 (no ncclCommRevoke) a call stuck inside NCCL on
 * the host cannot be interrupted: it returns when NCCL does. config->nccl_blocking = 0 (when the
 * field is unset, MGCOMM_NCCL_BLOCKING=0) chooses nonblocking NCCL communicators instead: every
 * call returns within its deadline, at a cost of tens of microseconds per operation. NCCL older
 * than 2.18 (no ncclCommSplit) always gets nonblocking ones. Creating a communicator is bounded
 * in both modes.
 */
typedef struct mg_comm mg_comm_t;

/* Opaque handle of a stream. On the NCCL backend it is the caller's CUDA stream (cudaStream_t and
 * CUstream are the same handle: pass it with a cast). On the host backend NULL runs the operation
 * before the call returns, and a host stream (mg_stream_create) runs it on the rank's worker. */
typedef struct mg_stream *mg_stream_t;

/* 128 opaque bytes that every rank of one new communicator must receive, created by one rank with
 * mg_unique_id_create and sent to the others out of band (file, socket, MPI, the rendezvous
 * store). An id belongs to one backend and is used for one communicator. */
#define MG_UNIQUE_ID_BYTES 128
typedef struct mg_unique_id {
  char internal[MG_UNIQUE_ID_BYTES];
} mg_unique_id_t;

/* Creates a new unique id for backend (MG_BACKEND_AUTO is resolved as for init). For the host
 * backend the id carries a random, unguessable shared-memory name (from getrandom). For NCCL it is
 * ncclGetUniqueId's, which needs libnccl but no GPU, so a launcher without a GPU can make ids
 * for GPU ranks (it passes MG_BACKEND_NCCL: AUTO would pick host there); NCCL's bootstrap root
 * then runs in the creating process, which must stay alive until the ranks have met.
 * Errors: MG_ERR_INVALID_ARGUMENT (id NULL, unknown backend),
 * MG_ERR_BACKEND_UNAVAILABLE, MG_ERR_SYSTEM (no randomness), MG_ERR_BACKEND. Thread-safe. */
MG_EXTERN mg_status_t mg_unique_id_create(mg_backend_t backend, mg_unique_id_t *id);

/* Creates this process's (or thread's) rank `rank` of a communicator of nranks ranks. Collective:
 * every rank calls it with the same id and nranks; it returns when all have arrived.
 * Ranks may be threads of one process or processes of one host (host backend) or GPUs (NCCL; the
 * device is config->device). config may be NULL (defaults); it is copied.
 * Errors: MG_ERR_INVALID_ARGUMENT (id or out NULL, nranks < 1, rank out of [0, nranks), an id
 * of another backend, host backend: nranks > 65535), MG_ERR_INVALID_USAGE (config not
 * initialised), MG_ERR_TIMED_OUT (not all ranks arrived before the deadline; the message lists
 * the missing ranks), MG_ERR_REMOTE (a rank disagreed on nranks or exited),
 * MG_ERR_BACKEND_UNAVAILABLE, MG_ERR_OUT_OF_MEMORY (host backend: also a shared segment larger
 * than the process can map; the message names its size and MGCOMM_HOST_SLOT_BYTES),
 * MG_ERR_SYSTEM, MG_ERR_BACKEND. On error *out is untouched and nothing is left behind. */
MG_EXTERN mg_status_t mg_comm_init_rank(const mg_config_t *config, int nranks,
                                        const mg_unique_id_t *id, int rank, mg_comm_t **out);

/* Creates all nranks ranks of a communicator in this process: comms[i] is rank i. On the NCCL
 * backend rank i uses CUDA device devices[i] (devices NULL = 0..nranks-1); on the host backend
 * devices is ignored. comms must have room for nranks handles. Errors as mg_comm_init_rank, plus
 * MG_ERR_INVALID_ARGUMENT for duplicate devices; on error no comms[i] is written. */
MG_EXTERN mg_status_t mg_comm_init_all(const mg_config_t *config, int nranks, const int *devices,
                                       mg_comm_t **comms);

#define MG_SPLIT_NOCOLOR (-1)

/* Splits comm: the ranks that pass the same color form a new communicator, ranked by key (ties
 * by rank in comm). Collective over comm. A rank that passes MG_SPLIT_NOCOLOR joins none: *out is
 * set to NULL and the call returns MG_OK. config NULL inherits comm's configuration.
 * Errors: MG_ERR_INVALID_ARGUMENT (out NULL, color < 0 other than MG_SPLIT_NOCOLOR),
 * MG_ERR_INVALID_USAGE (comm not ready), the errors of a collective (timeout, remote). */
MG_EXTERN mg_status_t mg_comm_split(mg_comm_t *comm, int color, int key, const mg_config_t *config,
                                    mg_comm_t **out);

/* Makes a new communicator of the ranks of comm that are not in exclude[0 .. nexclude): only the
 * surviving ranks call it (as ncclCommShrink), in the same order; they are renumbered in their
 * old order. comm may be in the error state (this is how a job drops a dead rank). config NULL
 * inherits comm's. Errors: MG_ERR_INVALID_ARGUMENT (exclude NULL with nexclude > 0, a rank out
 * of range or repeated, the calling rank excluded, everybody excluded), MG_ERR_INVALID_USAGE
 * (comm aborted or destroyed), MG_ERR_NOT_SUPPORTED (NCCL < 2.27), timeout and remote errors. */
MG_EXTERN mg_status_t mg_comm_shrink(mg_comm_t *comm, const int *exclude, int nexclude,
                                     const mg_config_t *config, mg_comm_t **out);

/* Completes every operation issued on comm, then makes it quiescent: afterwards only queries and
 * mg_comm_destroy are accepted. Collective (all ranks call it). Errors: MG_ERR_INVALID_USAGE
 * (comm aborted or already finalized), MG_ERR_TIMED_OUT, the operations' own errors. */
MG_EXTERN mg_status_t mg_comm_finalize(mg_comm_t *comm);

/* Aborts comm: pending operations end with MG_ERR_ABORTED, waits of other threads on comm return,
 * backend resources are released. Local (other ranks are not told; they notice through their
 * deadlines or the transport). Always returns, from any thread, also with operations pending.
 * Afterwards only queries and mg_comm_destroy are accepted; a second abort is MG_OK. */
MG_EXTERN mg_status_t mg_comm_abort(mg_comm_t *comm);

/* Revokes comm (as ncclCommRevoke, NCCL >= 2.28.7; MPI's MPIX_Comm_revoke): every operation in
 * flight on comm stops and ends with MG_ERR_ABORTED ("the communicator was revoked"), pending
 * requests too, and the call returns once comm is quiescent (bounded by its timeout). Unlike
 * abort, the communicator's resources stay: afterwards comm is in the error state, where
 * mg_comm_shrink (to go on without a failed rank), mg_comm_abort, mg_comm_destroy and queries
 * are accepted, and finalize is not. Local: the other ranks are not asked. The host backend
 * tells them (their waits on this rank fail with MG_ERR_REMOTE naming it); NCCL does not (their
 * operations with this rank stop at their own deadlines, or when they revoke too). May be called
 * from any thread while another is blocked in an operation on comm. A second revoke is MG_OK.
 * Errors: MG_ERR_INVALID_USAGE (bad handle; comm aborted or finalized), MG_ERR_NOT_SUPPORTED
 * (the loaded NCCL is older than 2.28.7: nothing was done, comm is as it was),
 * MG_ERR_TIMED_OUT (NCCL did not become quiescent in time: comm is revoked, abort it). */
MG_EXTERN mg_status_t mg_comm_revoke(mg_comm_t *comm);

/* Releases comm. NULL is MG_OK. Destroy first takes the handle: a call on comm that starts after
 * that is refused with MG_ERR_INVALID_USAGE. A communicator that was not finalized is then aborted
 * (pending operations end with MG_ERR_ABORTED). Destroy waits, within the communicator's
 * timeout_s, for the calls in progress on other threads to return. If one is still inside after
 * that (an NCCL call that cannot be interrupted), destroy returns MG_ERR_INVALID_USAGE ("still
 * inside"): comm stays valid and aborted, and destroy may be called again once that call has
 * returned. Otherwise the handle is invalid after the call, and so are its registrations and
 * custom ops. Other errors: MG_ERR_INVALID_USAGE for a bad handle, a comm that another thread is
 * destroying, or a call from a callback running on the communicator's own worker. Thread-safe:
 * may be called from any thread, also while other threads are inside calls on comm.
 * NCCL backend: a graceful end is mg_comm_finalize (every rank; it waits, within the deadline,
 * for the work issued) and then destroy, which is then local. Destroy without finalize aborts
 * (ncclCommAbort: local, bounded) instead of calling ncclCommDestroy, which would be a
 * collective of every rank of the node that hangs when one of them does not come: work of this
 * rank still in flight is cancelled, so synchronise the streams first. */
MG_EXTERN mg_status_t mg_comm_destroy(mg_comm_t *comm);

typedef enum mg_comm_state {
  MG_COMM_READY = 0,     /* accepts operations */
  MG_COMM_ERROR = 1,     /* an operation failed in a way that breaks the communicator (timeout,
                            remote failure, backend error); only shrink, queries, abort, destroy */
  MG_COMM_ABORTED = 2,   /* mg_comm_abort was called */
  MG_COMM_FINALIZED = 3  /* mg_comm_finalize completed */
} mg_comm_state_t;

/* Queries. Each returns MG_ERR_INVALID_USAGE for a bad comm and MG_ERR_INVALID_ARGUMENT for a NULL
 * output; they work in every state, also after abort. Thread-safe. */
MG_EXTERN mg_status_t mg_comm_rank(const mg_comm_t *comm, int *rank);
MG_EXTERN mg_status_t mg_comm_size(const mg_comm_t *comm, int *size);
/* CUDA device ordinal of the rank; -1 on the host backend. */
MG_EXTERN mg_status_t mg_comm_device(const mg_comm_t *comm, int *device);
MG_EXTERN mg_status_t mg_comm_backend(const mg_comm_t *comm, mg_backend_t *backend);
MG_EXTERN mg_status_t mg_comm_state(const mg_comm_t *comm, mg_comm_state_t *state);
/* The communicator's sticky asynchronous error: MG_OK while healthy, otherwise the status that
 * moved it to MG_COMM_ERROR (or MG_ERR_ABORTED). Polls the backend (ncclCommGetAsyncError). */
MG_EXTERN mg_status_t mg_comm_async_error(mg_comm_t *comm, mg_status_t *async_error);
/* Copies the message of the last error raised on this communicator (by any thread) into buf, as
 * mg_last_error_copy does, and returns its full length; 0 and "" when there was none. */
MG_EXTERN size_t mg_comm_last_error(const mg_comm_t *comm, char *buf, size_t len);

/* ---------------------------------------------------------------------------------------------
 * Operations
 *
 * Signatures, argument order and semantics are NCCL's, so porting is renaming. `count` is in
 * elements of dtype. Each call validates every argument before anything is posted:
 * MG_ERR_INVALID_USAGE for a bad comm or a comm that is not ready (aborted, finalized, in error),
 * MG_ERR_INVALID_ARGUMENT for a NULL buffer with count > 0, count * size overflowing, an unknown
 * dtype or op, a custom op of another communicator, a root or peer out of range, a buffer in the
 * wrong memory space or too short (NCCL backend), or overlapping send and receive buffers other
 * than the in-place form each operation allows. The message names the function and argument.
 *
 * Completion: on the host backend with stream NULL the operation has completed when the call
 * returns (outside a group); on a host stream it is queued for the rank's worker and the call
 * returns (its errors are the stream's, see mg_record). On the NCCL backend it is enqueued on the
 * CUDA stream and the call returns (NCCL's stream semantics). Errors of the operation itself
 * (MG_ERR_TIMED_OUT, MG_ERR_REMOTE, MG_ERR_ABORTED, MG_ERR_BACKEND) move the communicator to
 * MG_COMM_ERROR. A stream of another communicator, or on the host backend a stream that is not a
 * host stream, is MG_ERR_INVALID_ARGUMENT.
 *
 * Inside mg_group_begin/end the call only validates and records the operation; it runs at
 * mg_group_end.
 *
 * Debugging aid: a communicator made while MGCOMM_CHECK_COLLECTIVES=1 is in the environment (set
 * it alike on every rank) has its ranks compare each collective's kind, count, dtype, op, root
 * and sequence number before it runs; a mismatch, which would otherwise hang or fail later, is
 * refused on every rank with MG_ERR_INVALID_USAGE and one message naming the collective's number,
 * the ranks and what each called, nothing of it runs, and the communicator stays ready. Each
 * collective of a group is checked; mg_send and mg_recv are not (a pair has no signature that
 * every rank shares). The price is one small all_gather per collective on the same
 * communicator, and on the NCCL backend a wait on the host for it: the call returns only once
 * every rank has called the collective and the communicator's earlier operations have completed,
 * so one thread that drives several ranks must post their calls in one group.
 */

/* recv[i] = op over ranks of send[i], i < count, on every rank. In place when send == recv. */
MG_EXTERN mg_status_t mg_all_reduce(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                    mg_op_t op, mg_comm_t *comm, mg_stream_t stream);
/* recv = root's send on every rank. send is read on root only (may be NULL elsewhere). In place
 * when send == recv. */
MG_EXTERN mg_status_t mg_broadcast(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                   int root, mg_comm_t *comm, mg_stream_t stream);
/* recv on root = op over ranks of send. recv is used on root only (may be NULL elsewhere). In
 * place when send == recv. */
MG_EXTERN mg_status_t mg_reduce(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                mg_op_t op, int root, mg_comm_t *comm, mg_stream_t stream);
/* recv[r*sendcount + i] = send of rank r [i]; recv holds nranks*sendcount elements. In place when
 * send == recv + rank*sendcount. */
MG_EXTERN mg_status_t mg_all_gather(const void *send, void *recv, size_t sendcount,
                                    mg_dtype_t dtype, mg_comm_t *comm, mg_stream_t stream);
/* recv[i] = op over ranks of send[rank*recvcount + i]; send holds nranks*recvcount elements. In
 * place when recv == send + rank*recvcount. */
MG_EXTERN mg_status_t mg_reduce_scatter(const void *send, void *recv, size_t recvcount,
                                        mg_dtype_t dtype, mg_op_t op, mg_comm_t *comm,
                                        mg_stream_t stream);
/* recv[r*count + i] = send of rank r [rank*count + i]; both hold nranks*count elements. Not in
 * place: any overlap is an error. */
MG_EXTERN mg_status_t mg_all_to_all(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                    mg_comm_t *comm, mg_stream_t stream);
/* Each rank sends sendcounts[p] elements from send + sdispls[p] to rank p and receives
 * recvcounts[p] elements from rank p into recv + rdispls[p] (counts and displacements in
 * elements, one per rank). sendcounts[p] on this rank must equal recvcounts[this rank] on rank p.
 * Zero counts are allowed. Not in place. The arrays are read during the call only. */
MG_EXTERN mg_status_t mg_all_to_allv(const void *send, const size_t *sendcounts,
                                     const size_t *sdispls, void *recv, const size_t *recvcounts,
                                     const size_t *rdispls, mg_dtype_t dtype, mg_comm_t *comm,
                                     mg_stream_t stream);
/* recv on root [r*count + i] = send of rank r [i]. recv is used on root only. In place on root
 * when send == recv + root*count. */
MG_EXTERN mg_status_t mg_gather(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                int root, mg_comm_t *comm, mg_stream_t stream);
/* recv of rank r [i] = send on root [r*count + i]. send is used on root only. In place on root
 * when recv == send + root*count. */
MG_EXTERN mg_status_t mg_scatter(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                 int root, mg_comm_t *comm, mg_stream_t stream);
/* Sends count elements to peer, which posts a matching mg_recv (same count and dtype). Several
 * sends and receives must be in one group to be free of deadlock, as with NCCL; inside a group any
 * order is safe. A rank may send to itself inside a group. */
MG_EXTERN mg_status_t mg_send(const void *send, size_t count, mg_dtype_t dtype, int peer,
                              mg_comm_t *comm, mg_stream_t stream);
/* Receives count elements from peer into recv. See mg_send. */
MG_EXTERN mg_status_t mg_recv(void *recv, size_t count, mg_dtype_t dtype, int peer,
                              mg_comm_t *comm, mg_stream_t stream);

/* Groups. Between mg_group_begin and the matching mg_group_end, operations of the calling thread
 * are validated and recorded; the outermost mg_group_end posts them together (one thread may then
 * drive several communicators, e.g. every rank of mg_comm_init_all, without deadlock). Groups
 * nest; only the outermost end posts. If any call inside the group failed, mg_group_end posts
 * nothing and returns that first error. mg_group_end without a begin is MG_ERR_INVALID_USAGE.
 * On the host backend with NULL streams, mg_group_end returns when every operation completed.
 * Thread-local: groups of different threads are independent. */
MG_EXTERN mg_status_t mg_group_begin(void);
MG_EXTERN mg_status_t mg_group_end(void);

/* ---------------------------------------------------------------------------------------------
 * Custom reduction operations
 */
typedef enum mg_scalar_residence {
  MG_SCALAR_DEVICE = 0,         /* scalar points into the comm's memory space (GPU memory on the
                                   NCCL backend, host memory on the host backend) and is read
                                   each time the op runs; it must stay valid until then */
  MG_SCALAR_HOST_IMMEDIATE = 1  /* scalar points to host memory and is read during this call */
} mg_scalar_residence_t;

/* Creates the op out[i] = sum over ranks of (scalar * x_i), for dtype, usable on comm only (as
 * ncclRedOpCreatePreMulSum; NCCL's residence values). Local. Errors: MG_ERR_INVALID_ARGUMENT
 * (scalar or op NULL, unknown dtype or residence), MG_ERR_INVALID_USAGE (comm not ready),
 * MG_ERR_NOT_SUPPORTED (NCCL < 2.11). Using the op with another dtype or another comm is
 * MG_ERR_INVALID_ARGUMENT. */
MG_EXTERN mg_status_t mg_op_create_premul_sum(mg_comm_t *comm, const void *scalar, mg_dtype_t dtype,
                                              mg_scalar_residence_t residence, mg_op_t *op);
/* Destroys a custom op of comm. Operations already posted with it are unaffected. A built-in op,
 * or an op not of this comm, is MG_ERR_INVALID_ARGUMENT. Ops are destroyed with their comm. */
MG_EXTERN mg_status_t mg_op_destroy(mg_comm_t *comm, mg_op_t op);

/* ---------------------------------------------------------------------------------------------
 * Memory
 *
 * Buffers that suit a communicator, and their registration with it. On the NCCL backend these
 * are ncclMemAlloc, ncclCommRegister and ncclCommWindowRegister; on the host backend they do
 * what lets the same program run unchanged: host memory, and registrations that are checked and
 * recorded but change nothing.
 */

/* Allocates bytes (> 0) of memory for comm's operations and sets *ptr. NCCL backend: ncclMemAlloc
 * on comm's device (CUDA VMM memory that every peer GPU may access; the only kind that symmetric
 * registration accepts; the size is rounded up to the allocation granularity by NCCL). Host
 * backend: host memory aligned to 4096 bytes. Uninitialised. comm may be in any state; the
 * memory does not belong to comm and may outlive it. Errors: MG_ERR_INVALID_USAGE (bad comm),
 * MG_ERR_INVALID_ARGUMENT (bytes 0, ptr NULL), MG_ERR_OUT_OF_MEMORY, MG_ERR_NOT_SUPPORTED (NCCL
 * < 2.19), MG_ERR_BACKEND. Thread-safe. */
MG_EXTERN mg_status_t mg_mem_alloc(mg_comm_t *comm, size_t bytes, void **ptr);
/* Frees memory from mg_mem_alloc, whether or not its communicator still exists. NULL is MG_OK. A
 * pointer that mg_mem_alloc did not return, or that was freed already, is
 * MG_ERR_INVALID_ARGUMENT (nothing is freed). The caller makes sure that no operation still
 * uses the memory. Thread-safe. */
MG_EXTERN mg_status_t mg_mem_free(void *ptr);
/* Copies bytes from src to dst and returns when the copy is complete, within comm's deadline.
 * NCCL backend: either side may be memory of comm's device (or any memory the device can reach)
 * or host memory; the copy runs on a stream of its own, not ordered with any stream of the
 * caller's: wait for the operations that write src or read dst first. Host backend: memcpy.
 * dst and src must not overlap. For programs and tools without a CUDA binding of their own.
 * Errors: MG_ERR_INVALID_USAGE (bad comm), MG_ERR_INVALID_ARGUMENT (NULL with bytes > 0, a
 * device buffer too short), MG_ERR_TIMED_OUT, MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_memcpy(mg_comm_t *comm, void *dst, const void *src, size_t bytes);

/* A registration of a buffer with a communicator. */
typedef struct mg_reg mg_reg_t;

enum {
  MG_REGISTER_LOCAL = 0,     /* ncclCommRegister (NCCL >= 2.19): local to this rank; lets NCCL
                                use the buffer in place (zero copy) where it can */
  MG_REGISTER_SYMMETRIC = 1  /* ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC (NCCL >= 2.27):
                                collective (every rank registers its buffer, in the same order);
                                buffers from mg_mem_alloc only; operations that use the buffers at
                                the same offset on every rank take NCCL's symmetric kernels */
};

/* Registers [buf, buf + bytes) with comm (READY) as flags says, and sets *reg. The buffer must
 * be memory of comm's device (NCCL backend). A buffer already registered symmetrically may not be
 * registered symmetrically again (NCCL leaves that undefined). Errors: MG_ERR_INVALID_USAGE (bad
 * comm, comm not ready), MG_ERR_INVALID_ARGUMENT (buf NULL, bytes 0, reg NULL, unknown flags, a
 * buffer that is not memory of comm's device or is too short, overlapping symmetric
 * registrations), MG_ERR_NOT_SUPPORTED (the NCCL version, or NCCL has no symmetric support for
 * this buffer and system), MG_ERR_TIMED_OUT (symmetric: the other ranks did not register),
 * MG_ERR_BACKEND. A registration ends with mg_comm_deregister or with its communicator. */
MG_EXTERN mg_status_t mg_comm_register(mg_comm_t *comm, void *buf, size_t bytes, int flags,
                                       mg_reg_t **reg);
/* Ends a registration of comm (comm in any state; after an abort it only frees the handle).
 * Local. No operation may use the buffer through it any more. Errors: MG_ERR_INVALID_USAGE (bad
 * comm), MG_ERR_INVALID_ARGUMENT (reg NULL or not a registration of comm), MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_comm_deregister(mg_comm_t *comm, mg_reg_t *reg);

/* ---------------------------------------------------------------------------------------------
 * Rendezvous: the store and mg_comm_init_env
 *
 * The processes of one job meet through a small key-value store served over TCP by one of them
 * (rank 0 under mg_comm_init_env). They use it to pass the unique id, to publish progress, and to
 * meet at barriers. Every client authenticates with the job's token; the server drops a
 * connection that sends a malformed, oversized or unauthenticated message, or that stalls in the
 * middle of one, and keeps serving the others.
 *
 * Addresses are "host:port": a host name, an IPv4 address, or an IPv6 address in brackets
 * ("[::1]:29500"). The server binds exactly the address it is given (use 127.0.0.1 for a job on
 * one machine; 0.0.0.0 must be asked for explicitly).
 *
 * Deadlines: every call takes timeout_s. 0 means the store's timeout (the timeout_s given to
 * mg_store_serve or mg_store_connect, whose own 0 means MGCOMM_TIMEOUT); a positive value is the
 * call's own; a negative or NaN value is MG_ERR_INVALID_ARGUMENT. A call that cannot finish in
 * time returns MG_ERR_TIMED_OUT (a waiting get or barrier whose server does not answer at all
 * gives it 0.1 s more before it returns); the server's process exiting or closing gives
 * MG_ERR_REMOTE. Never a hang.
 *
 * Threads: a store handle may be used from any thread; its calls are serialised (one request is
 * in flight per connection), so a thread that waits in mg_store_get or mg_store_barrier holds the
 * handle until the wait ends. Threads that wait concurrently use one handle each.
 *
 * A key is a NUL-terminated string of 1..MG_STORE_KEY_MAX bytes; a value is 0..MG_STORE_VALUE_MAX
 * arbitrary bytes; a token is 1..MG_STORE_TOKEN_MAX bytes. The server holds at most 256 MiB of keys
 * and values (MG_ERR_OUT_OF_MEMORY beyond).
 */
typedef struct mg_store mg_store_t;

#define MG_STORE_KEY_MAX 512
#define MG_STORE_VALUE_MAX 1048576
#define MG_STORE_TOKEN_MAX 256

/* Starts a store server bound to address (port 0 picks a free port; mg_store_address tells
 * which) on a thread of this process, and returns a client handle connected to it. The server
 * lives until mg_store_close on this handle; its clients then get MG_ERR_REMOTE. token is the
 * job's secret (NULL: MGCOMM_JOB_TOKEN). timeout_s is the store's timeout (0: MGCOMM_TIMEOUT).
 * Errors: MG_ERR_INVALID_ARGUMENT (address, token or out NULL where required, address malformed,
 * no token, token too long, bad timeout_s), MG_ERR_SYSTEM (the address cannot be bound, e.g. it is
 * in use, or the thread cannot start; the message names the address and errno),
 * MG_ERR_OUT_OF_MEMORY. On error *out is untouched and nothing is left behind. Thread-safe. */
MG_EXTERN mg_status_t mg_store_serve(const char *address, const char *token, double timeout_s,
                                     mg_store_t **out);

/* Connects to the store at address (port 1..65535), retrying with exponential backoff (10 ms to
 * 1 s, jittered) while it is refused or unreachable, until timeout_s (0: MGCOMM_TIMEOUT), then
 * authenticates with token (NULL: MGCOMM_JOB_TOKEN). Errors: MG_ERR_INVALID_ARGUMENT (arguments as
 * for mg_store_serve, a host name that does not resolve, or the server rejected the token),
 * MG_ERR_TIMED_OUT (no server accepted before the deadline; the message has the last errno),
 * MG_ERR_REMOTE (the peer is not an mgcomm store, or closed the connection),
 * MG_ERR_NOT_SUPPORTED (the server speaks another protocol version), MG_ERR_SYSTEM,
 * MG_ERR_OUT_OF_MEMORY. On error *out is untouched. Thread-safe. */
MG_EXTERN mg_status_t mg_store_connect(const char *address, const char *token, double timeout_s,
                                       mg_store_t **out);

/* Writes the address of the store ("127.0.0.1:40123": the host as given, the port as bound) into
 * buf, as snprintf would, and returns MG_OK; MG_ERR_INVALID_ARGUMENT when buf is NULL or len too
 * small (nothing written), MG_ERR_INVALID_USAGE for a bad handle. Never blocks. */
MG_EXTERN mg_status_t mg_store_address(mg_store_t *store, char *buf, size_t len);

/* Sets key to value[0 .. length) (value may be NULL when length is 0), replacing any value, and
 * wakes the callers waiting for key. Errors: MG_ERR_INVALID_USAGE (bad handle),
 * MG_ERR_INVALID_ARGUMENT (key NULL, empty or too long, value NULL with length > 0, length above
 * MG_STORE_VALUE_MAX, bad timeout_s), MG_ERR_OUT_OF_MEMORY (the server's limit), MG_ERR_TIMED_OUT,
 * MG_ERR_REMOTE. After MG_ERR_TIMED_OUT or MG_ERR_REMOTE the set may or may not have happened. */
MG_EXTERN mg_status_t mg_store_set(mg_store_t *store, const char *key, const void *value,
                                   size_t length, double timeout_s);

/* Waits until key exists (at most timeout_s), then copies its value into value[0 .. capacity) and
 * its length into *length. Errors: MG_ERR_INVALID_USAGE, MG_ERR_INVALID_ARGUMENT (key as for set,
 * length NULL, value NULL with capacity > 0, or the value is longer than capacity: the message
 * says how long; nothing is written), MG_ERR_TIMED_OUT (the key did not appear in time),
 * MG_ERR_REMOTE. Outputs are written only on success. */
MG_EXTERN mg_status_t mg_store_get(mg_store_t *store, const char *key, void *value,
                                   size_t capacity, size_t *length, double timeout_s);

/* *exists = 1 when key exists now, else 0; does not wait for it (timeout_s bounds the round
 * trip). Errors as mg_store_set, plus MG_ERR_INVALID_ARGUMENT for exists NULL. */
MG_EXTERN mg_status_t mg_store_check(mg_store_t *store, const char *key, int *exists,
                                     double timeout_s);

/* Atomically adds delta to the integer stored at key (an absent key counts as 0; the value is
 * kept as decimal text, so mg_store_get reads "42") and sets *result (may be NULL) to the sum.
 * Wakes waiters as set does. Errors as mg_store_set, plus MG_ERR_INVALID_ARGUMENT when the value
 * is not a decimal int64 or the sum overflows (the value is left unchanged). */
MG_EXTERN mg_status_t mg_store_add(mg_store_t *store, const char *key, int64_t delta,
                                   int64_t *result, double timeout_s);

/* Atomically sets key to desired when its current value is expected (expected NULL: when key is
 * absent), and sets *swapped (may be NULL) to 1 when it did, 0 when not. An empty expected value
 * (non-NULL, length 0) matches an existing empty value. Errors as mg_store_set. */
MG_EXTERN mg_status_t mg_store_compare_set(mg_store_t *store, const char *key,
                                           const void *expected, size_t expected_length,
                                           const void *desired, size_t desired_length,
                                           int *swapped, double timeout_s);

/* Removes key; *existed (may be NULL) says whether it was there. Callers waiting for the key keep
 * waiting. Errors as mg_store_set. */
MG_EXTERN mg_status_t mg_store_delete(mg_store_t *store, const char *key, int *existed,
                                      double timeout_s);

/* Waits until nparties callers (any clients of this store) have entered the barrier called name,
 * then releases them all; the name can then be used again. A caller whose deadline expires leaves
 * the barrier (it no longer counts) and gets MG_ERR_TIMED_OUT with how many had arrived; so does a
 * client whose connection closes. Barrier names are apart from keys. Errors: MG_ERR_INVALID_USAGE,
 * MG_ERR_INVALID_ARGUMENT (name as a key, nparties < 1, or another party waits on name with a
 * different nparties), MG_ERR_TIMED_OUT, MG_ERR_REMOTE. */
MG_EXTERN mg_status_t mg_store_barrier(mg_store_t *store, const char *name, int nparties,
                                       double timeout_s);

/* Closes the handle: its connection, and on the handle made by mg_store_serve the server (its
 * clients get MG_ERR_REMOTE). A call of another thread blocked on the handle returns
 * MG_ERR_REMOTE first. NULL is MG_OK; a bad handle is MG_ERR_INVALID_USAGE. */
MG_EXTERN mg_status_t mg_store_close(mg_store_t *store);

/* Creates this process's rank of a communicator of the job this process was started in, from the
 * launcher's environment, meeting the other processes through a store:
 *
 *  - rank, size and local rank from the first of these sets that is present: MGCOMM_RANK /
 *    MGCOMM_WORLD_SIZE / MGCOMM_LOCAL_RANK (mgcomm launch); RANK / WORLD_SIZE / LOCAL_RANK
 *    (torchrun); OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_RANK
 *    (Open MPI's mpirun); PMI_RANK / PMI_SIZE (MPICH, Intel MPI; no local rank);
 *    SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID (srun). A set whose rank or size is missing,
 *    not a decimal number, or out of range (rank >= size, local rank >= size, a size above
 *    8192: rank 0's store keeps one connection per process) is an error naming the variables;
 *    so is no set at all;
 *  - the store address from MGCOMM_STORE (host:port, at most 263 bytes: a host of up to 255
 *    bytes, in brackets for IPv6, and a port), else MASTER_ADDR and MASTER_PORT. Under
 *    torchrun (TORCHELASTIC_USE_AGENT_STORE=True) MASTER_PORT is the agent's own store, so
 *    MGCOMM_STORE is required there;
 *  - the job token from MGCOMM_JOB_TOKEN, else the launcher's job id (TORCHELASTIC_RUN_ID,
 *    PMIX_NAMESPACE or OMPI_MCA_ess_base_jobid, SLURM_JOB_ID.SLURM_STEP_ID), which is shared but
 *    not secret;
 *  - the device (NCCL backend) from config->device, else the local rank; without either it is an
 *    error on the NCCL backend.
 *
 * Rank 0 serves the store at the address (it binds exactly that address), creates the unique id
 * for config's backend (MG_BACKEND_AUTO resolved on rank 0) and publishes it with the world size;
 * the other ranks connect (retrying until the deadline) and fetch it. Each rank checks that its
 * world size and backend agree with rank 0's and that no other process claimed its rank; then
 * they call mg_comm_init_rank. The meeting at the store is bounded by config's timeout_s (else
 * MGCOMM_TIMEOUT), and so is mg_comm_init_rank after it. Collective: every process of the job
 * calls it, the same number of times in the same order; the communicators made by successive
 * calls are distinct, also when earlier ones were destroyed. Rank 0's store lives while any
 * communicator it made this way does; a rank that finds the store gone while it waits for the id
 * connects again until the deadline (rank 0 may be serving a new one).
 *
 * Errors: MG_ERR_INVALID_ARGUMENT (out NULL; the environment as above; world size or backend
 * differ from rank 0's; a rank claimed twice), MG_ERR_INVALID_USAGE (config not initialised),
 * MG_ERR_TIMED_OUT (the store or rank 0's id did not come in time; the message names the address
 * and the key), MG_ERR_REMOTE (rank 0's store went away, or the address is not an mgcomm
 * store), MG_ERR_NOT_SUPPORTED (rank 0 runs another version of mgcomm), MG_ERR_SYSTEM (rank 0
 * cannot bind the address), and the errors of mg_unique_id_create and mg_comm_init_rank. On error
 * *out is untouched and nothing is left behind. */
MG_EXTERN mg_status_t mg_comm_init_env(const mg_config_t *config, mg_comm_t **out);

/* ---------------------------------------------------------------------------------------------
 * Requests and streams
 *
 * A request (mg_request_t) stands for work that completes later. It ends exactly once: with
 * MG_OK, an error of the work, MG_ERR_TIMED_OUT (its deadline passed: the communicator's
 * timeout_s from the moment it was made), or MG_ERR_ABORTED (mg_comm_abort, mg_world_abort,
 * mg_world_rebuild, or a destroy, ended it). A call that returns an error makes no request.
 *
 * Callbacks (mg_request_on_complete) run once, on a thread of the library (a rank's worker, the
 * watchdog's helper), never under a lock of the library: a callback may call any mgcomm function,
 * submit new work and free its request. It should return promptly: the thread that runs it
 * completes other requests after it. Inside a callback, mg_last_error() is the request's message
 * when status < 0.
 *
 * Host streams (host backend): mg_stream_create makes an ordered queue served by the rank's
 * worker thread (one per communicator, named mg-rank<N>). An operation or mg_record on a host
 * stream returns at once and runs, in order, on that thread. The operations of one communicator
 * must reach every rank in the same order; with several streams on one communicator they run in
 * the order they were submitted to the communicator (the worker serves them first come, first
 * served). An operation that fails on a stream makes the stream's error sticky: every later
 * mg_record and mg_stream_sync on it reports that first error (with its message).
 * On the NCCL backend mg_stream_t is the caller's CUDA stream, and the library creates none.
 */
typedef struct mg_request mg_request_t;

/* A completion callback: req is the request (valid until freed; the callback may free it),
 * status its outcome, arg the value given to mg_request_on_complete. */
typedef void (*mg_request_cb_t)(mg_request_t *req, mg_status_t status, void *arg);

/* Creates a host stream on comm (host backend). Errors: MG_ERR_INVALID_USAGE (bad comm, comm not
 * ready), MG_ERR_INVALID_ARGUMENT (stream NULL), MG_ERR_NOT_SUPPORTED (NCCL backend: pass your
 * CUDA stream), MG_ERR_OUT_OF_MEMORY, MG_ERR_SYSTEM (the worker thread cannot start).
 * Thread-safe. */
MG_EXTERN mg_status_t mg_stream_create(mg_comm_t *comm, mg_stream_t *stream);

/* Releases a host stream. Work already submitted to it still runs and its requests still
 * complete; the handle is invalid afterwards. NULL is MG_OK; a bad handle is
 * MG_ERR_INVALID_USAGE. Thread-safe. (mg_comm_destroy of its communicator aborts what is queued
 * and stops the worker, waiting for a callback that runs on it to return.) */
MG_EXTERN mg_status_t mg_stream_destroy(mg_stream_t stream);

/* Waits until everything submitted to the host stream before the call has run, and returns the
 * stream's sticky error (MG_OK when nothing failed). timeout_s > 0 is this call's deadline, 0 the
 * communicator's timeout_s; MG_ERR_TIMED_OUT when it passes, naming the operation the stream is
 * in. Errors: MG_ERR_INVALID_USAGE (bad handle; called from the stream's own worker, which would
 * wait for itself), MG_ERR_INVALID_ARGUMENT (timeout_s negative or NaN). */
MG_EXTERN mg_status_t mg_stream_sync(mg_stream_t stream, double timeout_s);

/* The communicator's own stream, for programs without a CUDA binding (the mgcomm tool): on the
 * NCCL backend a non-blocking CUDA stream of the communicator's device, made on the first call,
 * the same handle on every later one, owned by the communicator and destroyed with it (CUDA frees
 * it once its work has run). Use it as any stream of yours; mg_memcpy is not ordered after it
 * (wait for an mg_record first). Errors: MG_ERR_INVALID_USAGE (bad comm, comm not ready),
 * MG_ERR_INVALID_ARGUMENT (stream NULL), MG_ERR_NOT_SUPPORTED (host backend: pass NULL, or a host
 * stream of mg_stream_create), MG_ERR_BACKEND (the driver refused). Thread-safe. */
MG_EXTERN mg_status_t mg_comm_stream(mg_comm_t *comm, mg_stream_t *stream);

/* Makes a request that completes when everything submitted to stream on comm before this call has
 * completed (as cuEventRecord), with the stream's error: on a host stream, the sticky error; on
 * the host backend with stream NULL the operations completed before they returned, so the
 * request is already complete (MG_OK). How the request learns of it is the config's completion
 * strategy. A communicator in the error state still records (the request reports the stream's
 * error). Errors: MG_ERR_INVALID_USAGE (bad comm; comm aborted or finalized),
 * MG_ERR_INVALID_ARGUMENT (req NULL, a stream of another communicator or, on the host backend,
 * not a host stream), MG_ERR_OUT_OF_MEMORY, MG_ERR_BACKEND. On error *req is untouched.
 * Thread-safe. */
MG_EXTERN mg_status_t mg_record(mg_comm_t *comm, mg_stream_t stream, mg_request_t **req);

/* mg_record, and the request can be timed against another one with mg_request_elapsed (as a
 * CUDA event made with timing enabled: torch.cuda.Event(enable_timing=True)). The NCCL backend
 * records an event that takes the GPU's timestamp, which makes it a little dearer than
 * mg_record's; the host backend notes the time at which the mark is reached. Errors as
 * mg_record. */
MG_EXTERN mg_status_t mg_record_timed(mg_comm_t *comm, mg_stream_t stream, mg_request_t **req);

/* *seconds = the time from the completion of start to the completion of end, two requests of
 * mg_record_timed on one communicator that completed with MG_OK. What "completion" is:
 *  - NCCL backend: when the GPU reached each point of its stream (cuEventElapsedTime of the two
 *    events, resolution about half a microsecond); the host threads that learn of it are not
 *    involved. The two may be on different streams of the communicator's device.
 *  - host backend: the monotonic clock (CLOCK_MONOTONIC) at which the host engine reached each
 *    mark: on a host stream when the rank's worker got to it (everything submitted before it on
 *    that stream had run); on stream NULL when mg_record_timed was called (the operations
 *    before it ran inside their own calls). It includes whatever the worker did in between,
 *    callbacks too.
 * Negative when end was reached before start. Returns MG_OK; MG_INPROGRESS while either request
 * is pending (nothing is written: wait for both, then ask); MG_ERR_INVALID_USAGE (a bad or freed
 * handle; a request that ended with an error, whose time is not known);
 * MG_ERR_INVALID_ARGUMENT (seconds NULL, a request not made by mg_record_timed, the two made on
 * different communicators); MG_ERR_BACKEND (the driver refused, e.g. an event of a context that
 * faulted). The communicator may have been destroyed meanwhile. Thread-safe. */
MG_EXTERN mg_status_t mg_request_elapsed(mg_request_t *start, mg_request_t *end,
                                         double *seconds);

/* Waits until req has completed and returns its outcome (its message in mg_last_error()).
 * timeout_s > 0 bounds this wait only: MG_ERR_TIMED_OUT then leaves the request pending
 * (mg_request_test tells it apart from a request that itself timed out). timeout_s == 0 waits
 * until the request ends, which its own deadline bounds. Errors of the call: MG_ERR_INVALID_USAGE
 * (bad handle; called from the worker thread that must complete req, which would wait for
 * itself), MG_ERR_INVALID_ARGUMENT (timeout_s negative or NaN), MG_ERR_STALE (a request of a
 * world generation that mg_world_rebuild or mg_world_destroy ended; the request itself completed,
 * its callback ran). Thread-safe; several threads may wait for one request. */
MG_EXTERN mg_status_t mg_request_wait(mg_request_t *req, double timeout_s);

/* Never blocks. *status = MG_INPROGRESS while req is pending, else its outcome (and for an error,
 * its message in mg_last_error()). Returns MG_OK, or MG_ERR_INVALID_USAGE (bad handle),
 * MG_ERR_INVALID_ARGUMENT (status NULL), MG_ERR_STALE (as mg_request_wait). Thread-safe. */
MG_EXTERN mg_status_t mg_request_test(mg_request_t *req, mg_status_t *status);

/* Registers cb to run once when req completes, or soon (on a library thread) when it already
 * has. One callback per request. Errors: MG_ERR_INVALID_USAGE (bad handle, a callback is already
 * registered), MG_ERR_INVALID_ARGUMENT (cb NULL), MG_ERR_STALE. Thread-safe. */
MG_EXTERN mg_status_t mg_request_on_complete(mg_request_t *req, mg_request_cb_t cb, void *arg);

/* Releases the caller's handle. A pending request is detached: it still completes and its
 * callback still runs once (with req as argument, which must then not be used); its memory is
 * reclaimed after that. NULL is MG_OK; a freed or foreign handle is MG_ERR_INVALID_USAGE and
 * nothing is touched. Allowed inside the request's own callback. Thread-safe. */
MG_EXTERN mg_status_t mg_request_free(mg_request_t *req);

/* ---------------------------------------------------------------------------------------------
 * World: all ranks of a communicator in this process, one worker thread per rank
 *
 * A world owns nranks ranks (one per CUDA device on the NCCL backend, one per thread on the host
 * backend), each served by a worker thread named mg-rank<N> with an ordered mailbox; the worker
 * creates its rank's communicator with mg_comm_init_rank and no other thread posts to it. A world
 * operation takes one buffer per rank (arrays indexed by rank), validates everything, sends one
 * message to each rank's worker, which posts its part inside mg_group_begin/end (each rank on
 * its own thread, as NCCL's one-thread-per-GPU model), and returns one request. The request
 * completes when every part has completed, with MG_OK or the first error, whose message starts
 * with "rank N: ". Any number of threads may submit concurrently: every worker sees the world's
 * operations in one order. The buffers must stay valid until the request completes.
 *
 * Built-in reduction ops only (custom ops belong to one communicator). mg_world_* functions
 * that take a world return MG_ERR_INVALID_USAGE for a bad handle.
 *
 * Failures: a part that fails with a communicator-breaking error (timeout, remote, backend)
 * moves the world to the error state: new operations are MG_ERR_INVALID_USAGE until
 * mg_world_rebuild. The watchdog ends a world request that passes its deadline with
 * MG_ERR_TIMED_OUT and, by the config's on_timeout, aborts the world.
 */
typedef struct mg_world mg_world_t;

/* Creates a world of nranks ranks (config: backend, timeout_s, ...; NULL = defaults; copied). On
 * the NCCL backend rank i uses device devices[i] (NULL: 0..nranks-1); the host backend ignores
 * devices. Returns when every rank's communicator is ready. Errors: MG_ERR_INVALID_ARGUMENT (out
 * NULL, nranks < 1, duplicate devices), MG_ERR_INVALID_USAGE (config not initialised), the errors
 * of mg_comm_init_rank (the first, naming the rank), MG_ERR_SYSTEM (a worker thread cannot
 * start), MG_ERR_OUT_OF_MEMORY. On error nothing is left behind. Thread-safe. */
MG_EXTERN mg_status_t mg_world_create(const mg_config_t *config, int nranks, const int *devices,
                                      mg_world_t **out);

/* Aborts every rank's communicator, ends every pending request of the world with MG_ERR_ABORTED
 * (before returning; their callbacks run on a library thread), stops the workers and releases
 * everything. A callback running on a worker is waited for (a callback that never returns keeps
 * this call too). NULL is MG_OK. Must not be called from a callback running on one of the
 * world's workers (MG_ERR_INVALID_USAGE). */
MG_EXTERN mg_status_t mg_world_destroy(mg_world_t *world);

/* Aborts every rank's communicator; every pending request of the world ends with MG_ERR_ABORTED
 * before the call returns (callbacks run on a library thread). Always returns, promptly, from any
 * thread (also from a callback), with operations pending. Afterwards the world accepts only
 * mg_world_rebuild, queries and mg_world_destroy; a second abort is MG_OK. */
MG_EXTERN mg_status_t mg_world_abort(mg_world_t *world);

/* After a failure (or at any time): aborts what is left of the current communicators, ends their
 * pending requests with MG_ERR_ABORTED, makes fresh communicators (a new unique id) and bumps the
 * generation. Requests of older generations answer MG_ERR_STALE afterwards. Returns when every
 * rank is ready again; the next operations run on the new communicators. Errors: the errors of
 * mg_comm_init_rank (naming the rank; the world stays in the error state and may be rebuilt
 * again), MG_ERR_INVALID_USAGE (called from one of the world's workers, or while another thread
 * rebuilds it). */
MG_EXTERN mg_status_t mg_world_rebuild(mg_world_t *world);

/* Queries; MG_ERR_INVALID_ARGUMENT for a NULL output. */
MG_EXTERN mg_status_t mg_world_size(const mg_world_t *world, int *nranks);
/* The generation: 1 after mg_world_create, + 1 per successful or attempted mg_world_rebuild. */
MG_EXTERN mg_status_t mg_world_generation(const mg_world_t *world, uint64_t *generation);

/* What the world can do, from the loader: the backend, versions of the libraries it uses, and
 * the features they have. MG_ERR_INVALID_ARGUMENT for a NULL info. */
typedef struct mg_world_info {
  mg_backend_t backend;
  int nranks;
  uint64_t generation;
  int nccl_version;                /* NCCL's encoding (22809); 0 on the host backend */
  const char *nccl_version_string; /* "2.28.9"; "" on the host backend (static storage) */
  int cuda_version;                /* the driver's (13000); 0 on the host backend */
  unsigned features;               /* bit f is set when mg_feature_info(f) says available */
} mg_world_info_t;
MG_EXTERN mg_status_t mg_world_info(const mg_world_t *world, mg_world_info_t *info);
/* *can_access = 1 when rank from can read rank to's buffers directly: the two devices are peers
 * (cuDeviceCanAccessPeer) or the same; always 1 on the host backend. MG_ERR_INVALID_ARGUMENT for
 * a rank out of range or a NULL can_access; otherwise the errors of mg_device_can_access_peer. */
MG_EXTERN mg_status_t mg_world_can_access_peer(const mg_world_t *world, int from, int to,
                                               int *can_access);

/* World forms of the operations: buffers are arrays of nranks pointers, [r] for rank r, with the
 * meaning the single-rank operation gives them; *req receives the request (req must not be NULL,
 * except inside mg_world_group_begin/end, where it must be NULL). Errors (no request is made):
 * MG_ERR_INVALID_USAGE (bad world, world aborted, in the error state or being rebuilt; inside a
 * group of another world), MG_ERR_INVALID_ARGUMENT (an array NULL, any per-rank argument as the
 * single-rank operation checks it, a custom op; the message names the rank), MG_ERR_OUT_OF_MEMORY. */
MG_EXTERN mg_status_t mg_world_all_reduce(mg_world_t *world, const void *const *send,
                                          void *const *recv, size_t count, mg_dtype_t dtype,
                                          mg_op_t op, mg_request_t **req);
MG_EXTERN mg_status_t mg_world_broadcast(mg_world_t *world, const void *const *send,
                                         void *const *recv, size_t count, mg_dtype_t dtype,
                                         int root, mg_request_t **req);
MG_EXTERN mg_status_t mg_world_reduce(mg_world_t *world, const void *const *send,
                                      void *const *recv, size_t count, mg_dtype_t dtype,
                                      mg_op_t op, int root, mg_request_t **req);
MG_EXTERN mg_status_t mg_world_all_gather(mg_world_t *world, const void *const *send,
                                          void *const *recv, size_t sendcount, mg_dtype_t dtype,
                                          mg_request_t **req);
MG_EXTERN mg_status_t mg_world_reduce_scatter(mg_world_t *world, const void *const *send,
                                              void *const *recv, size_t recvcount,
                                              mg_dtype_t dtype, mg_op_t op, mg_request_t **req);
MG_EXTERN mg_status_t mg_world_all_to_all(mg_world_t *world, const void *const *send,
                                          void *const *recv, size_t count, mg_dtype_t dtype,
                                          mg_request_t **req);
/* sendcounts[r], sdispls[r], recvcounts[r], rdispls[r]: rank r's arrays of nranks elements, as
 * mg_all_to_allv takes them; copied during the call. */
MG_EXTERN mg_status_t mg_world_all_to_allv(mg_world_t *world, const void *const *send,
                                           const size_t *const *sendcounts,
                                           const size_t *const *sdispls, void *const *recv,
                                           const size_t *const *recvcounts,
                                           const size_t *const *rdispls, mg_dtype_t dtype,
                                           mg_request_t **req);
MG_EXTERN mg_status_t mg_world_gather(mg_world_t *world, const void *const *send,
                                      void *const *recv, size_t count, mg_dtype_t dtype, int root,
                                      mg_request_t **req);
MG_EXTERN mg_status_t mg_world_scatter(mg_world_t *world, const void *const *send,
                                       void *const *recv, size_t count, mg_dtype_t dtype,
                                       int root, mg_request_t **req);
/* Point to point: rank `rank` sends count elements to peer (mg_send on that rank only), or
 * receives them from peer. A send and its receive are separate world operations on different
 * workers, so they may be submitted in either order; inside one world group they are posted
 * together (needed when a rank sends to itself). */
MG_EXTERN mg_status_t mg_world_send(mg_world_t *world, int rank, const void *send, size_t count,
                                    mg_dtype_t dtype, int peer, mg_request_t **req);
MG_EXTERN mg_status_t mg_world_recv(mg_world_t *world, int rank, void *recv, size_t count,
                                    mg_dtype_t dtype, int peer, mg_request_t **req);

/* World groups: between mg_world_group_begin and mg_world_group_end the calling thread's world
 * operations (with req NULL) are validated and recorded; the outermost end sends them to the
 * workers as one batch (each worker posts its parts inside one mg_group_begin/end) and makes one
 * request for the batch. Groups nest; a group covers one world. If an operation inside failed,
 * the end sends nothing, makes no request and returns that first error. An empty group gives an
 * already complete request. Errors of end: MG_ERR_INVALID_USAGE (no group open, or one of
 * another world), MG_ERR_INVALID_ARGUMENT (req NULL at the outermost end: the group is then
 * discarded), the first error inside. Thread-local, as mg_group_begin/end. */
MG_EXTERN mg_status_t mg_world_group_begin(mg_world_t *world);
MG_EXTERN mg_status_t mg_world_group_end(mg_world_t *world, mg_request_t **req);

/* A scope for C that ends the group exactly once, also when an operation inside fails:
 *
 *     mg_status_t st;
 *     mg_request_t *req = NULL;
 *     MG_WORLD_GROUP(world, &req, st) {
 *       mg_world_send(world, 0, a, n, MG_FLOAT32, 1, NULL);
 *       mg_world_recv(world, 1, b, n, MG_FLOAT32, 0, NULL);
 *     }
 *     if (st == MG_OK) st = mg_request_wait(req, 0);
 *
 * st is mg_world_group_begin's error (the body does not run) or mg_world_group_end's result.
 * Leave the body normally (or with continue); break, return or goto would skip the end. */
#define MG__WG_CAT2(a, b) a##b
#define MG__WG_CAT(a, b) MG__WG_CAT2(a, b)
#define MG_WORLD_GROUP(world, req, st)                                                         \
  for (int MG__WG_CAT(mg__wg_once_, __LINE__) = ((st) = mg_world_group_begin(world)) == MG_OK; \
       MG__WG_CAT(mg__wg_once_, __LINE__);                                                     \
       MG__WG_CAT(mg__wg_once_, __LINE__) = 0, (st) = mg_world_group_end((world), (req)))

/* ---------------------------------------------------------------------------------------------
 * Flight recorder
 *
 * Every communicator keeps a ring of its last operations (config trace_entries, default 2048):
 * sequence number, kind, dtype, count, root or peer, stream, the times it was enqueued, started
 * and ended, and its state. Ranks publish their progress (last collective enqueued and
 * completed) where the others can read it (host backend: the shared segment), so a timeout says
 * "all_reduce #42 (float32 x 1048576): ranks 0,1,3 waiting, rank 2 last enqueued #41
 * (all_gather)". On a timeout the communicator dumps its ring into MGCOMM_TRACE_DIR when that is
 * set; `mgcomm trace <dir>` merges the dumps of all ranks and names the first operation where
 * they diverge. A dump is one JSON object ("format": "mgcomm-trace", "version": 1) with the
 * communicator's id, rank and size, the peers' last known progress, and the ring's entries.
 */

/* Writes comm's ring as JSON to path; when path is an existing directory, to
 * <path>/mgcomm-trace-<comm id>-r<rank>.json. Works in every state, also after abort. Errors:
 * MG_ERR_INVALID_USAGE (bad comm), MG_ERR_INVALID_ARGUMENT (path NULL or empty),
 * MG_ERR_NOT_SUPPORTED (the recorder is off), MG_ERR_SYSTEM (the file cannot be written; the
 * message names it). Thread-safe. */
MG_EXTERN mg_status_t mg_comm_dump_trace(mg_comm_t *comm, const char *path);

/* Every rank of the world dumps its ring into the directory dir (as mg_comm_dump_trace with a
 * directory). Errors: as mg_comm_dump_trace, the first one naming the rank. */
MG_EXTERN mg_status_t mg_world_dump_trace(mg_world_t *world, const char *dir);

/* ---------------------------------------------------------------------------------------------
 * Diagnostics: parameters, libraries, features, devices
 *
 * What `mgcomm info` prints, for any program. Every string returned here has static storage (it
 * lives as long as the process). All functions are thread-safe.
 */

/* One MGCOMM_* environment parameter, as read (once) by the library. */
typedef struct mg_param_info {
  const char *name;          /* "MGCOMM_TIMEOUT" */
  const char *type;          /* "int", "double", "string", "choice" or "secret" */
  const char *value;         /* the value in effect; a secret shows "(set, not shown)" or "" */
  const char *default_value; /* the table's default */
  const char *source;        /* "environment" or "default" (a bad value falls back to default) */
  const char *allowed;       /* "NONE|WARN|INFO|TRACE", "0.001..1e+09", or "" */
  const char *help;          /* one line */
} mg_param_info_t;

/* Number of parameters. Never fails. */
MG_EXTERN int mg_param_count(void);
/* Parameter index (0 <= index < mg_param_count()). MG_ERR_INVALID_ARGUMENT for a bad index or a
 * NULL info. */
MG_EXTERN mg_status_t mg_param_get(int index, mg_param_info_t *info);

/* The foreign libraries mgcomm loads at run time. */
typedef enum mg_library {
  MG_LIB_CUDA = 0,    /* libcuda.so.1: the CUDA driver API (never the runtime) */
  MG_LIB_NCCL = 1,    /* libnccl.so.2 */
  MG_LIB_NVSHMEM = 2, /* libnvshmem_host.so.3 */
  MG_LIB_NVML = 3,    /* libnvidia-ml.so.1 */
  MG_LIB_COUNT = 4
} mg_library_t;

typedef struct mg_library_info {
  const char *name;           /* "libnccl.so.2" */
  int loaded;                 /* 1 when found, its required symbols resolved and version read */
  const char *path;           /* the path it was loaded from; NULL when not loaded */
  int version;                /* the library's own encoding (CUDA 13000, NCCL 22809); 0 if unknown */
  const char *version_string; /* "13.0", "2.28.9", "3.4.5"; "" if unknown */
  const char *error;          /* why it is not loaded, with every candidate tried; "" if loaded */
  int attempts;               /* how many candidates were tried (see mg_library_attempt) */
  const char *plugin_dir;     /* NVSHMEM: the folder holding its bootstrap plugins; else NULL */
} mg_library_info_t;

/* Loads lib if that was not tried yet (once per process; the search spawns no process) and
 * describes the outcome. A library that is absent is not an error here: info->loaded is 0 and
 * info->error says why. MG_ERR_INVALID_ARGUMENT for an unknown lib or NULL info.
 * Search order: MGCOMM_<LIB>_LIBRARY alone when set (an explicit path that fails is reported,
 * never replaced by another copy); NCCL_HOME / NVSHMEM_HOME, then CUDA_HOME (lib, lib64); the
 * dynamic linker's default; /usr/local/cuda; Python wheels (NCCL, NVSHMEM). */
MG_EXTERN mg_status_t mg_library_info(mg_library_t lib, mg_library_info_t *info);
/* Candidate number index (0 <= index < info.attempts) of lib's search, in search order: the path
 * tried and the outcome ("loaded", or the dlerror() text). MG_ERR_INVALID_ARGUMENT otherwise. */
MG_EXTERN mg_status_t mg_library_attempt(mg_library_t lib, int index, const char **path,
                                         const char **outcome);

/* Features that depend on the loaded library's version and symbols. A feature is available when
 * its library is loaded, is at least min_version and exports every symbol the feature needs. A
 * call that needs a feature the loaded library lacks returns MG_ERR_NOT_SUPPORTED naming the
 * version that has it. */
typedef enum mg_feature {
  MG_FEATURE_NCCL_AVG = 0,          /* MG_AVG, NCCL >= 2.10 */
  MG_FEATURE_NCCL_PREMUL_SUM = 1,   /* custom PreMulSum ops, NCCL >= 2.11 */
  MG_FEATURE_NCCL_CONFIG = 2,       /* ncclCommInitRankConfig (nonblocking), NCCL >= 2.14 */
  MG_FEATURE_NCCL_SPLIT = 3,        /* ncclCommSplit, NCCL >= 2.18 */
  MG_FEATURE_NCCL_REGISTER = 4,     /* ncclCommRegister, ncclMemAlloc, NCCL >= 2.19 */
  MG_FEATURE_NCCL_FP8 = 5,          /* float8 e4m3/e5m2, NCCL >= 2.24 */
  MG_FEATURE_NCCL_WINDOW = 6,       /* symmetric window registration, NCCL >= 2.27 */
  MG_FEATURE_NCCL_SHRINK = 7,       /* ncclCommShrink, NCCL >= 2.27 */
  MG_FEATURE_NCCL_COLLECTIVES_2_28 = 8, /* native ncclAlltoAll, ncclGather, ncclScatter, 2.28 */
  MG_FEATURE_NCCL_REVOKE = 9,       /* ncclCommRevoke, NCCL >= 2.28.7 */
  MG_FEATURE_COUNT = 10
} mg_feature_t;

typedef struct mg_feature_info {
  const char *name;      /* "fp8" */
  const char *library;   /* "nccl" */
  int min_version;       /* in the library's encoding, e.g. 22400 */
  const char *min_version_string; /* "2.24" */
  int available;         /* 1 when the loaded library has it (version and symbols) */
} mg_feature_info_t;

/* Describes feature f for the library as loaded (loading it if needed). MG_ERR_INVALID_ARGUMENT
 * for an unknown feature or NULL info. */
MG_EXTERN mg_status_t mg_feature_info(mg_feature_t f, mg_feature_info_t *info);

typedef struct mg_device_info {
  int ordinal;              /* CUDA device ordinal */
  char name[256];           /* "NVIDIA H200" */
  size_t total_memory;      /* bytes */
  int cc_major, cc_minor;   /* compute capability */
  char pci_bus_id[32];      /* "0000:19:00.0" */
  int multicast_supported;  /* read-only attribute; mgcomm never creates a multicast object */
} mg_device_info_t;

/* Number of CUDA devices. A driver without devices (cuInit answers CUDA_ERROR_NO_DEVICE) is
 * 0 devices and MG_OK. MG_ERR_BACKEND_UNAVAILABLE when there is no usable CUDA driver (none
 * found: the message lists every candidate tried; only the toolkit's stub libcuda; cuInit
 * reporting a driver/kernel-module mismatch); MG_ERR_BACKEND when cuInit fails otherwise. */
MG_EXTERN mg_status_t mg_device_count(int *count);
/* Describes device ordinal. Errors as mg_device_count, plus MG_ERR_INVALID_ARGUMENT for an
 * ordinal out of range or NULL info. */
MG_EXTERN mg_status_t mg_device_info(int ordinal, mg_device_info_t *info);
/* *can_access = 1 when device from can access device to's memory directly
 * (cuDeviceCanAccessPeer); 1 when from == to. Errors as mg_device_info. */
MG_EXTERN mg_status_t mg_device_can_access_peer(int from, int to, int *can_access);

#ifdef __cplusplus
}
#endif

#endif /* MGCOMM_H */
