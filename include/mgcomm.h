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
#define MG_CONFIG_VERSION 6

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

/* Which all_reduce the NCCL backend runs (docs/kernels.md): NCCL's, or mgcomm's own kernels over
 * NVLink, which run where every pair of the ranks' GPUs has working peer access, for float32,
 * float16 and bfloat16 with sum, avg, max and min. The host backend has one all_reduce and
 * ignores the choice. */
typedef enum mg_algo {
  MG_ALGO_DEFAULT = 0, /* MGCOMM_ALGO (auto unless set) */
  MG_ALGO_AUTO = 1,    /* mgcomm's kernels where its measured table says they are faster (from 2
                          ranks, up to 4 MiB), NCCL's elsewhere */
  MG_ALGO_NCCL = 2,    /* always NCCL's */
  MG_ALGO_MGCOMM = 3   /* always mgcomm's kernels, up to their staging size: an all_reduce they
                          cannot run is MG_ERR_NOT_SUPPORTED, naming why */
} mg_algo_t;

/* Parameters of a communicator. Initialise with MG_CONFIG_INIT, then set the fields you want.
 * A NULL config means all defaults.
 *
 * Compatibility: fields are only ever appended, each new set with a new MG_CONFIG_VERSION, so a
 * program built against an older mgcomm.h runs with a newer library. The library accepts the
 * size and version that MG_CONFIG_INIT sets in its own mgcomm.h or in any older one: version 1
 * to MG_CONFIG_VERSION, each with the size of its layout (mg_config_t up to that version's last
 * field; on LP64: 1 -> 32 bytes, 2 -> 88, 3 -> 112, 4 -> 112, 5 -> 152, 6 -> 152: a field that
 * fits the padding of the layout before it leaves the size alone, and the version tells them
 * apart). It reads only the fields that the caller's version has and gives the fields appended
 * after it their MG_CONFIG_INIT defaults. A larger size than this library's sizeof(mg_config_t),
 * a version of 0 or above its MG_CONFIG_VERSION (a program built against a newer mgcomm.h), or a
 * size that is not its version's is MG_ERR_INVALID_USAGE, with a message that names the size and
 * version given and those accepted. Every entry point that takes a config (init, split, shrink,
 * mg_comm_init_env, mg_world_create) applies the same rule.
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
  /* NCCL 2.29 to 2.32's ncclConfig_t (MG_CONFIG_VERSION 5). */
  int nccl_graph_usage_mode;       /* graphUsageMode, NCCL >= 2.29.2 */
  int nccl_num_rma_ctx;            /* numRmaCtx, NCCL >= 2.29.2 */
  int nccl_max_p2p_peers;          /* maxP2pPeers, NCCL >= 2.30.3 */
  int nccl_graph_stream_ordering;  /* graphStreamOrdering, NCCL >= 2.30.7 */
  int nccl_launch_order_implicit;  /* launchOrderImplicit, NCCL >= 2.31 */
  int nccl_num_rma_sig;            /* numRmaSig, NCCL >= 2.31 */
  int nccl_rma_eager_init;         /* rmaEagerInit, NCCL >= 2.31 */
  int nccl_host_cft_mode;          /* hostCftMode, NCCL >= 2.31 */
  int nccl_nvls_host_mode;         /* nvlsHostMode, NCCL >= 2.32 */
  /* mgcomm's own kernels (MG_CONFIG_VERSION 6). */
  mg_algo_t all_reduce_algo; /* MG_ALGO_DEFAULT = MGCOMM_ALGO; fixed at the communicator's first
                                all_reduce */
} mg_config_t;

#define MG_CONFIG_INIT                                                                    \
  {sizeof(mg_config_t), MG_CONFIG_VERSION, MG_BACKEND_AUTO, 0.0, MG_UNDEF_INT,            \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, NULL, MG_UNDEF_INT, MG_UNDEF_INT, NULL,       \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT,    \
   0, MG_COMPLETION_DEFAULT, 0.0, MG_ON_TIMEOUT_DEFAULT, MG_UNDEF_INT, MG_UNDEF_INT,      \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT, MG_UNDEF_INT,    \
   MG_UNDEF_INT, MG_UNDEF_INT, MG_ALGO_DEFAULT}

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

/* ---------------------------------------------------------------------------------------------
 * Suspend, memory statistics, grow, properties, NCCL's parameters (NCCL 2.29 to 2.32)
 *
 * Each call below needs, on the NCCL backend, the NCCL version written next to it; with an older
 * NCCL it returns MG_ERR_NOT_SUPPORTED naming that version (mg_feature_info says the same). The
 * host backend provides suspend, resume, memory statistics, grow and properties itself.
 */

#define MG_SUSPEND_MEM 0x01 /* release the communicator's memory that can be made again */

/* Suspends comm: releases the memory that it can make again (NCCL: ncclCommSuspend with
 * NCCL_SUSPEND_MEM, NCCL >= 2.29.7; its buffers and connections; host: this rank's part of
 * the shared segment's data area). Collective: every rank calls it, with nothing of comm in
 * flight (synchronise the streams first). Until mg_comm_resume only queries, mg_comm_mem_stats,
 * mg_comm_resume, abort and destroy are accepted; operations are MG_ERR_INVALID_USAGE.
 * Errors: MG_ERR_INVALID_ARGUMENT (flags other than MG_SUSPEND_MEM), MG_ERR_INVALID_USAGE (bad
 * handle, comm not ready or suspended already, messages still in flight on the host backend),
 * MG_ERR_NOT_SUPPORTED (NCCL < 2.29.7, a backend without it), MG_ERR_TIMED_OUT (not every rank
 * came before the deadline), MG_ERR_REMOTE, MG_ERR_BACKEND. Only on MG_OK is comm suspended. */
MG_EXTERN mg_status_t mg_comm_suspend(mg_comm_t *comm, int flags);

/* Makes the memory of a suspended comm again and accepts operations again. Collective.
 * Errors: MG_ERR_INVALID_USAGE (bad handle, comm not suspended, aborted or in the error state),
 * MG_ERR_NOT_SUPPORTED, MG_ERR_TIMED_OUT, MG_ERR_REMOTE, MG_ERR_OUT_OF_MEMORY, MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_comm_resume(mg_comm_t *comm);

/* The memory a communicator holds (this rank's), in bytes. */
typedef struct mg_comm_mem_stats {
  uint64_t suspendable_bytes; /* what mg_comm_suspend releases; counted also while suspended,
                                 when it is not held (NCCL counts it so) */
  uint64_t persistent_bytes;  /* held until destroy */
  uint64_t total_bytes;       /* all the communicator's memory that the backend tracks */
  int suspended;              /* 1 while suspended */
  int device;                 /* where it lies: CUDA ordinal, -1 host memory */
} mg_comm_mem_stats_t;

/* Fills *out for comm (NCCL: ncclCommMemStats, NCCL >= 2.29.7, summed over the NCCL
 * communicators of the rank). Local. Errors: MG_ERR_INVALID_USAGE (bad handle, comm aborted),
 * MG_ERR_INVALID_ARGUMENT (out NULL), MG_ERR_NOT_SUPPORTED, MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_comm_mem_stats(mg_comm_t *comm, mg_comm_mem_stats_t *out);

/* A new unique id with which the ranks of comm and new ranks make a larger communicator
 * (mg_comm_grow). Called by rank 0 of comm only; the id is sent to the new ranks out of band.
 * NCCL: ncclCommGetUniqueId (NCCL >= 2.29.2; one id per grow, used once). Errors:
 * MG_ERR_INVALID_ARGUMENT (id NULL), MG_ERR_INVALID_USAGE (bad handle, comm not ready, a rank
 * other than 0), MG_ERR_NOT_SUPPORTED, MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_comm_grow_id(mg_comm_t *comm, mg_unique_id_t *id);

#define MG_GROW_EXISTING (-1) /* the rank argument of the ranks of the old communicator */

/* Makes a communicator of nranks ranks from comm's ranks and new ones (NCCL: ncclCommGrow,
 * NCCL >= 2.29.2). Collective over every rank of the new communicator, each of which passes
 * the id that rank 0 of comm made with mg_comm_grow_id (sent to the others out of band). The
 * ranks of comm pass comm and rank MG_GROW_EXISTING, and keep their rank numbers. A new rank
 * passes comm NULL and its rank in [comm's nranks, nranks); its config (NULL: defaults) chooses
 * its backend and device as for mg_comm_init_rank. The ranks of comm inherit comm's config when
 * config is NULL. comm stays as it was. Errors: MG_ERR_INVALID_ARGUMENT (out or id NULL, nranks
 * not larger than comm's, rank out of range or not MG_GROW_EXISTING for a rank of comm, the
 * ranks of comm disagree on nranks or the id), MG_ERR_INVALID_USAGE (comm not ready),
 * MG_ERR_NOT_SUPPORTED, MG_ERR_TIMED_OUT (a rank did not come; the message names it),
 * MG_ERR_REMOTE, MG_ERR_BACKEND. On error *out is untouched. */
MG_EXTERN mg_status_t mg_comm_grow(mg_comm_t *comm, int nranks, const mg_unique_id_t *id,
                                   int rank, const mg_config_t *config, mg_comm_t **out);

/* What a communicator supports. -1 in a field: the loaded NCCL does not say (the version that
 * does is written next to it). The host backend gives 0 for every capability. */
typedef struct mg_comm_properties {
  int rank;
  int nranks;
  int device;          /* CUDA ordinal; -1 on the host backend */
  int nvml_device;     /* NVML index; -1 on the host backend */
  int device_api;      /* NCCL's device API (symmetric kernels) works on it */
  int multimem;        /* NVLink SHARP multicast (multimem) works on it */
  int gin_type;        /* NCCL's GPU-initiated networking: 0 none, 2 proxy, 3 GDAKI, 4 GPI, 5 EFA */
  int lsa_teams;       /* load/store-accessible teams (NCCL >= 2.29.7) */
  int host_rma;        /* one-sided put/signal from the host work (NCCL >= 2.29.7) */
  int railed_gin_type; /* GIN type of the rail teams (NCCL >= 2.29.7) */
  int cft;             /* NCCL's cftSupport (NCCL >= 2.32) */
  int cft_multimem;    /* NCCL's cftMulticastSupport (NCCL >= 2.32) */
  uint64_t comm_hash;  /* NCCL's hash of the communicator, as its logs show it (NCCL >= 2.31;
                          0 when not said) */
  int nccl_version;    /* the NCCL that answered; 0 on the host backend */
} mg_comm_properties_t;

/* Fills *out for comm (NCCL: ncclCommQueryProperties, NCCL >= 2.29.2). Local. Errors:
 * MG_ERR_INVALID_USAGE (bad handle, comm not ready), MG_ERR_INVALID_ARGUMENT (out NULL),
 * MG_ERR_NOT_SUPPORTED, MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_comm_properties(mg_comm_t *comm, mg_comm_properties_t *out);

/* NCCL's own parameter `key` ("NCCL_PROTO", ...) as NCCL reads it (environment, its defaults),
 * through its parameter API (NCCL >= 2.30.7; loads NCCL). value gets the text, truncated to
 * value_len. Errors: MG_ERR_INVALID_ARGUMENT (key or value NULL, value_len 0, a key NCCL does
 * not know), MG_ERR_NOT_SUPPORTED (older NCCL), MG_ERR_BACKEND_UNAVAILABLE (no NCCL). */
MG_EXTERN mg_status_t mg_nccl_param_get(const char *key, char *value, size_t value_len);

/* Calls fn(key, value, arg) for each of NCCL's documented parameters (all of them with
 * NCCL_PARAM_DUMP_ALL=1), in NCCL's order; fn's strings are valid during the call only; a
 * non-zero return of fn stops the walk. Errors as mg_nccl_param_get. */
typedef int (*mg_nccl_param_fn)(const char *key, const char *value, void *arg);
MG_EXTERN mg_status_t mg_nccl_params(mg_nccl_param_fn fn, void *arg);

/* One-sided transfers on symmetric registrations (MG_REGISTER_SYMMETRIC: NCCL windows; struct
 * mg_reg is mg_reg_t, see "Memory"). NCCL >= 2.29.2 (ncclPutSignal, ncclSignal, ncclWaitSignal:
 * copy engines on NVLink, the proxy on the network, no SMs); NCCL says whether this
 * communicator can (mg_comm_properties' host_rma). The host backend has no windows:
 * MG_ERR_NOT_SUPPORTED. Each is enqueued on stream (a CUDA stream; NULL: the default stream) and
 * returns once enqueued (bounded by comm's timeout); stream order gives completion. Errors:
 * MG_ERR_INVALID_USAGE (bad comm, comm not ready), MG_ERR_INVALID_ARGUMENT (reg NULL, not a
 * symmetric registration of comm, offset or the transfer past its end, peer out of range, a
 * negative signal or count, unknown dtype), MG_ERR_NOT_SUPPORTED, MG_ERR_TIMED_OUT,
 * MG_ERR_BACKEND. */

struct mg_reg;

/* Writes count elements of send into peer's buffer of the symmetric registration reg, at byte
 * offset, then raises signal number `signal` on peer (which waits for it with mg_wait_signal). */
MG_EXTERN mg_status_t mg_put_signal(const void *send, size_t count, mg_dtype_t dtype, int peer,
                                    struct mg_reg *reg, size_t offset, int signal, mg_comm_t *comm,
                                    mg_stream_t stream);
/* Raises signal number `signal` on peer without data. */
MG_EXTERN mg_status_t mg_signal(int peer, int signal, mg_comm_t *comm, mg_stream_t stream);

typedef struct mg_signal_wait {
  int peer;   /* the rank whose signals are awaited */
  int signal; /* the signal number */
  int count;  /* how many of them (puts with signal and signals), >= 1 */
} mg_signal_wait_t;
/* Makes stream wait until each of waits[0..n) arrived. */
MG_EXTERN mg_status_t mg_wait_signal(const mg_signal_wait_t *waits, int n, mg_comm_t *comm,
                                     mg_stream_t stream);

/* Device pointers into a symmetric registration (NCCL >= 2.29.2), for kernels of one's own:
 * peer's buffer at byte offset (ncclGetPeerDevicePointer; NULL where the peer's memory cannot be
 * reached with loads and stores), the same by the rank in the load/store-accessible team
 * (mg_reg_lsa_ptr, ncclGetLsaDevicePointer), and the buffer that was registered
 * (ncclWinGetUserPtr). Errors as above. */
MG_EXTERN mg_status_t mg_reg_peer_ptr(mg_comm_t *comm, struct mg_reg *reg, int peer, size_t offset,
                                      void **ptr);
MG_EXTERN mg_status_t mg_reg_lsa_ptr(mg_comm_t *comm, struct mg_reg *reg, int lsa_rank,
                                     size_t offset, void **ptr);
MG_EXTERN mg_status_t mg_reg_user_ptr(mg_comm_t *comm, struct mg_reg *reg, void **ptr);

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
                                the same offset on every rank take NCCL's symmetric kernels;
                                between ranks of several processes, mgcomm's own all-reduce
                                kernels read them in place (docs/kernels.md) */
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
 * Peer-to-peer: topology, peer access, peer copies, buffers with a generation
 *
 * The GPUs of this process and what each ordered pair (from, to) can do: whether from's
 * context may map to's memory (cuDeviceCanAccessPeer), whether mgcomm enabled that access and
 * why not, the link between them, and whether a copy through the peer path really delivers
 * the bytes (the probe: "can access" is sometimes a lie on virtualised hosts). Every answer is
 * directional. The topology is read once per process, on the first call that needs it; peer
 * access and the probe's verdicts change only through mg_p2p_enable_all and mg_p2p_probe.
 *
 * Copies (mg_p2p_copy, mg_buf_copy) are asynchronous: they are enqueued on a CUDA stream and
 * return a request (mg_request_t) that completes when the copy has; nothing waits on the host.
 * A pair whose peer access is not enabled, or whose probe failed, is copied through the
 * driver's staged path (through host memory); the copy says which path it took.
 *
 * Devices are CUDA ordinals. Without a CUDA driver every function here that needs one returns
 * MG_ERR_BACKEND_UNAVAILABLE; with a driver but no GPU, every device number is out of range
 * (MG_ERR_INVALID_ARGUMENT). Buffers of host memory (MG_BUF_HOST) need neither.
 * Thread-safe. No function here changes the calling thread's current CUDA context.
 */

/* Declared with their sections below (requests, world); C11 and C++ allow the repetition. */
typedef struct mg_request mg_request_t;
typedef struct mg_world mg_world_t;

/* The link between two GPUs, as `nvidia-smi topo -m` names it. From NVML when it is loaded;
 * otherwise only SELF or UNKNOWN (the driver's P2P attributes say what a pair can do, not how
 * they are wired). */
typedef enum mg_p2p_link {
  MG_P2P_LINK_UNKNOWN = 0, /* no NVML: see perf_rank, native_atomics */
  MG_P2P_LINK_SELF = 1,    /* "X": the same GPU */
  MG_P2P_LINK_NVLINK = 2,  /* "NV<n>": n NVLink links (direct, or through NVSwitches) */
  MG_P2P_LINK_PIX = 3,     /* at most one PCIe bridge */
  MG_P2P_LINK_PXB = 4,     /* several PCIe bridges, no host bridge */
  MG_P2P_LINK_PHB = 5,     /* a PCIe host bridge (the CPU) */
  MG_P2P_LINK_NODE = 6,    /* host bridges of one NUMA node */
  MG_P2P_LINK_SYS = 7      /* across NUMA nodes (QPI/UPI, Infinity Fabric) */
} mg_p2p_link_t;

/* How a copy between two devices travels. */
typedef enum mg_p2p_path {
  MG_P2P_PATH_LOCAL = 0,  /* the same device (or host memory on both sides) */
  MG_P2P_PATH_PEER = 1,   /* directly, through the source's peer access to the destination */
  MG_P2P_PATH_STAGED = 2  /* through host memory, by the driver (cuMemcpyPeerAsync without
                             peer access) */
} mg_p2p_path_t;

/* The probe's verdict on a pair. */
typedef enum mg_p2p_probe {
  MG_P2P_PROBE_NOT_RUN = 0, /* not probed yet, or peer access not enabled */
  MG_P2P_PROBE_OK = 1,      /* the pattern arrived intact */
  MG_P2P_PROBE_FAILED = 2   /* it did not (reason says how); the pair is not used as peers */
} mg_p2p_probe_t;

typedef struct mg_p2p_pair_info {
  int from, to;                /* device ordinals */
  int can_access;              /* cuDeviceCanAccessPeer(from, to); 1 when from == to */
  int enabled;                 /* from's context has peer access to to's (mg_p2p_enable_all) */
  mg_status_t enable_status;   /* MG_OK, or why enabling failed (not tried: MG_OK, enabled 0) */
  mg_p2p_link_t link;
  int nvlinks;                 /* NVLink links between them (MG_P2P_LINK_NVLINK), else 0 */
  int perf_rank;               /* the driver's relative rank of the link (lower is faster);
                                  -1 unknown or from == to */
  int native_atomics;          /* the driver: every atomic works over the link */
  int array_access;            /* the driver: CUDA arrays are accessible over the link */
  mg_p2p_probe_t probe;
  double gbps;                 /* the probe's timed copy from -> to, in GB/s (1e9 bytes); 0 when
                                  not timed */
  mg_p2p_path_t path;          /* the path mg_p2p_copy takes from from's memory to to's */
  char reason[256];            /* why enabling or the probe failed; "" when nothing did */
} mg_p2p_pair_info_t;

/* Describes the ordered pair (from, to) as it stands now. Errors: MG_ERR_INVALID_ARGUMENT (info
 * NULL, a device out of range), MG_ERR_BACKEND_UNAVAILABLE (no CUDA driver), MG_ERR_BACKEND (the
 * driver refused a query). */
MG_EXTERN mg_status_t mg_p2p_pair_info(int from, int to, mg_p2p_pair_info_t *info);

/* The islands: groups of GPUs joined by working peer access (a pair counts, whatever its
 * direction, when one of its directions can access and neither enabling nor the probe failed
 * it). island[d] receives the island of device d for every device; islands are numbered 0, 1,
 * ... in the order of their smallest device; *nislands their number. capacity is the length of
 * island (at least the number of devices). A device without peers is an island of its own.
 * Errors: MG_ERR_INVALID_ARGUMENT (island or nislands NULL, capacity too small: the message says
 * how many devices), the errors of mg_p2p_pair_info. No GPU: *nislands = 0. */
MG_EXTERN mg_status_t mg_p2p_islands(int *island, int capacity, int *nislands);

/* Enables peer access for every ordered pair that can access (cuCtxEnablePeerAccess in from's
 * primary context, which mgcomm retains for the rest of the process), leaving the calling
 * thread's current context as it was. Idempotent: a pair that is enabled already (by mgcomm or by
 * the program) counts as enabled. A pair that fails keeps its status and the driver's message in
 * mg_p2p_pair_info (enable_status, reason) and is copied through the staged path. *failed (may
 * be NULL) receives the number of pairs that failed. Returns MG_OK also when some pairs failed;
 * errors: MG_ERR_BACKEND_UNAVAILABLE (no CUDA driver), MG_ERR_BACKEND (the driver refused a
 * context). No GPU: MG_OK, nothing to do. */
MG_EXTERN mg_status_t mg_p2p_enable_all(int *failed);

/* The functional probe. For every pair (from, to) with peer access enabled, and for every GPU
 * with itself, writes a pattern of bytes (0: 1 MiB) into from's memory, copies it into to's
 * through the path a copy would take, reads it back and compares. A pair whose bytes differ,
 * or whose copy fails, gets MG_P2P_PROBE_FAILED with the reason (the first byte that differs, or
 * the driver's error); its peer access is disabled again, so that its copies take the staged
 * path. With timed = 1 each copy is also timed on the GPU (one untimed copy first) and
 * mg_p2p_pair_info reports its GB/s. Blocking: returns when every pair is probed, each copy
 * bounded by MGCOMM_TIMEOUT. *failed (may be NULL): the number of pairs that failed. Errors:
 * MG_ERR_INVALID_ARGUMENT (bytes above 1 GiB), MG_ERR_OUT_OF_MEMORY, MG_ERR_TIMED_OUT,
 * MG_ERR_BACKEND_UNAVAILABLE, MG_ERR_BACKEND (setting up a probe failed: not a verdict). */
MG_EXTERN mg_status_t mg_p2p_probe(size_t bytes, int timed, int *failed);

/* Copies bytes from src, memory of device src_device, to dst, memory of device dst_device
 * (the same device is allowed), asynchronously: enqueued on stream (a CUDA stream of
 * dst_device or src_device; NULL: a stream mgcomm keeps for dst_device, in which copies run in
 * the order they were made) and *req receives a request that completes once the copy has
 * (callbacks on a library thread; a copy that never completes, e.g. in a context that faulted,
 * ends with MG_ERR_TIMED_OUT after MGCOMM_TIMEOUT). req may be NULL: no request is made and the
 * copy is ordered on its stream only, as cudaMemcpyPeerAsync's (the request costs a few
 * microseconds of host time per copy: for many small copies on one stream, ask for a request
 * on the last one only). *path (may be NULL) receives the path it takes. Every argument is
 * checked before anything is enqueued: both pointers must be device (or managed) memory of the
 * devices named, each range [p, p + bytes) inside one allocation, and on one device the ranges
 * must not overlap. bytes == 0 gives a request complete already.
 * The caller keeps both ranges alive, and writes neither, until the request completes.
 * Errors (no request is made, nothing is enqueued): MG_ERR_INVALID_ARGUMENT (a NULL pointer, a
 * device out of range, a pointer not on its device or a range outside its allocation,
 * overlap, a stream of another device), MG_ERR_OUT_OF_MEMORY, MG_ERR_BACKEND_UNAVAILABLE,
 * MG_ERR_BACKEND (the driver refused the copy; the message has its error). */
MG_EXTERN mg_status_t mg_p2p_copy(void *dst, int dst_device, const void *src, int src_device,
                                  size_t bytes, mg_stream_t stream, mg_p2p_path_t *path,
                                  mg_request_t **req);

/* A buffer: memory of one device (or of the host), the generation of the world it belongs to,
 * and its last writer. mgcomm's copies into a buffer record themselves as its last writer (an
 * event on the copy's stream); a copy out of a buffer makes its stream wait for that event on
 * the GPU, never on the host. A write that fails records nothing. Rebuilding the buffer's world
 * (mg_world_rebuild) makes it stale: every use but mg_buf_info and mg_buf_destroy is then
 * MG_ERR_STALE, and its memory is freed only by mg_buf_destroy. Buffers are optional: every
 * operation also takes plain pointers. */
typedef struct mg_buf mg_buf_t;

#define MG_BUF_HOST (-1) /* the device of a buffer of host memory (no GPU needed) */

typedef struct mg_buf_info {
  int device;               /* CUDA ordinal, or MG_BUF_HOST */
  size_t bytes;
  uint64_t generation;      /* its world's generation when it was made; 0 without a world */
  int stale;                /* 1 once its world was rebuilt or destroyed */
  uint64_t writes;          /* writes recorded on it so far */
  mg_stream_t last_writer;  /* the stream of the last recorded write; NULL if none, or a host
                               write (host buffers are written in the call) */
} mg_buf_info_t;

/* Allocates bytes (> 0) on device (a CUDA ordinal: cuMemAlloc in its primary context; or
 * MG_BUF_HOST: host memory aligned to 4096 bytes), belonging to no world (never stale).
 * Uninitialised. Errors: MG_ERR_INVALID_ARGUMENT (out NULL, bytes 0, a device out of range),
 * MG_ERR_OUT_OF_MEMORY, MG_ERR_BACKEND_UNAVAILABLE (a device without a CUDA driver),
 * MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_buf_create(int device, size_t bytes, mg_buf_t **out);
/* As mg_buf_create, on the device of world's rank (host memory on the host backend), with the
 * world's current generation. Errors: those of mg_buf_create, MG_ERR_INVALID_USAGE (bad world),
 * MG_ERR_INVALID_ARGUMENT (rank out of range). */
MG_EXTERN mg_status_t mg_world_buf_create(mg_world_t *world, int rank, size_t bytes,
                                          mg_buf_t **out);
/* Frees the buffer and its memory; waits for nothing: the caller makes sure that no work on it
 * is pending (wait for the requests that use it). NULL is MG_OK; a bad handle
 * MG_ERR_INVALID_USAGE. */
MG_EXTERN mg_status_t mg_buf_destroy(mg_buf_t *buf);
/* *ptr = the buffer's memory. Errors: MG_ERR_INVALID_USAGE (bad handle), MG_ERR_INVALID_ARGUMENT
 * (ptr NULL), MG_ERR_STALE (its world was rebuilt or destroyed: the message says which
 * generation it belongs to and which is current). */
MG_EXTERN mg_status_t mg_buf_ptr(mg_buf_t *buf, void **ptr);
/* Describes the buffer (also a stale one). Errors: MG_ERR_INVALID_USAGE, MG_ERR_INVALID_ARGUMENT
 * (info NULL). */
MG_EXTERN mg_status_t mg_buf_info(mg_buf_t *buf, mg_buf_info_t *info);
/* Records a write of the caller's (a kernel, a copy of its own) enqueued on stream, a CUDA stream
 * of any device, as the buffer's last writer: later copies out of it wait for that point of the
 * stream. A host buffer takes stream NULL (its write is done). Errors: MG_ERR_INVALID_USAGE (bad
 * handle), MG_ERR_STALE, MG_ERR_INVALID_ARGUMENT (a stream that is not one, a stream given for a
 * host buffer), MG_ERR_BACKEND. */
MG_EXTERN mg_status_t mg_buf_record_write(mg_buf_t *buf, mg_stream_t stream);
/* mg_p2p_copy from [src + src_offset, + bytes) to [dst + dst_offset, + bytes), ordered after
 * src's last writer, recorded as dst's last writer once enqueued. A world operation whose output
 * lies in a buffer is its last writer from the world call on (unless it fails): the copy first
 * waits, on the host and at most MGCOMM_TIMEOUT, until the rank's worker has enqueued it, then
 * on the GPU for it. Two host buffers are copied in
 * the call (path LOCAL; the request is complete already; stream must be NULL); a host buffer with
 * a device buffer is MG_ERR_INVALID_ARGUMENT. Errors: those of mg_p2p_copy, MG_ERR_INVALID_USAGE
 * (a bad handle), MG_ERR_STALE (either buffer), MG_ERR_INVALID_ARGUMENT (a range past the end of
 * its buffer: never truncated; the same buffer with overlapping ranges), MG_ERR_TIMED_OUT (a world
 * operation writing src was not enqueued in time). */
MG_EXTERN mg_status_t mg_buf_copy(mg_buf_t *dst, size_t dst_offset, mg_buf_t *src,
                                  size_t src_offset, size_t bytes, mg_stream_t stream,
                                  mg_p2p_path_t *path, mg_request_t **req);

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
 * with "rank N: " (a rank's own error before a peer's MG_ERR_REMOTE about it). Any number of
 * threads may submit concurrently: every worker sees the world's operations in one order. The
 * buffers must stay valid until the request completes.
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
  MG_FEATURE_NCCL_GROW = 10,        /* ncclCommGrow, ncclCommGetUniqueId, NCCL >= 2.29.2 */
  MG_FEATURE_NCCL_PROPERTIES = 11,  /* ncclCommQueryProperties, NCCL >= 2.29.2 */
  MG_FEATURE_NCCL_WINDOW_PTRS = 12, /* peer and user pointers of a window, NCCL >= 2.29.2 */
  MG_FEATURE_NCCL_SIGNALS = 13,     /* ncclPutSignal, ncclSignal, ncclWaitSignal, NCCL >= 2.29.2 */
  MG_FEATURE_NCCL_SUSPEND = 14,     /* ncclCommSuspend/Resume, ncclCommMemStats, NCCL >= 2.29.7 */
  MG_FEATURE_NCCL_PARAMS = 15,      /* NCCL's parameter API, NCCL >= 2.30.7 */
  MG_FEATURE_CUDA_KERNELS = 16,     /* the CUDA driver can load and run mgcomm's own kernels */
  MG_FEATURE_COUNT = 17
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

/* ---------------------------------------------------------------------------------------------
 * NVSHMEM (the host API of libnvshmem_host.so.3, loaded at run time; docs/shmem.md)
 *
 * A PE (processing element) is one process with one GPU; the PEs of a job share a symmetric
 * heap: every PE allocates the same objects in the same order, and an address of a symmetric
 * object on this PE names the same object on every PE, so that put and get read and write
 * another PE's copy. NVSHMEM is initialised at most once per process, by mg_shmem_init_comm or
 * mg_shmem_init_env; mg_shmem_finalize ends it.
 *
 * Checks: every call checks its arguments before NVSHMEM sees them: the PE in range, the
 * symmetric address inside one live allocation of this library (mgcomm keeps the record of every
 * live symmetric allocation), the local buffer in the PE's device memory as the operations of
 * communicators check theirs, the team one of the predefined teams or one split and not yet
 * destroyed. Collective calls (allocation, free, split, barrier, finalize) must be made by every
 * PE, in the same order.
 *
 * Deadlines: the rendezvous of mg_shmem_init_comm runs over the communicator and is bounded by
 * its timeout_s: a PE that never arrives makes the others return MG_ERR_TIMED_OUT naming it, and
 * a PE that cannot start (no library, no device) makes the others fail naming it, before NVSHMEM
 * waits for anybody. NVSHMEM's own waits have no deadline and no abort: its initialisation after
 * that rendezvous, its collectives (allocation, free, split, barrier_all, sync_all, finalize)
 * and quiet wait until every PE arrives or the transfers complete; a PE that dies or never calls
 * leaves the others inside NVSHMEM. What a program can do about it: docs/shmem.md.
 *
 * Threads: the calls may come from any thread; the library serialises them. NVSHMEM's
 * initialisation asks for NVSHMEM_THREAD_SERIALIZED.
 */

/* A team of PEs (nvshmem_team_t). */
typedef int32_t mg_shmem_team_t;
#define MG_SHMEM_TEAM_NONE ((mg_shmem_team_t)-1)  /* "no team": this PE is not a member */
#define MG_SHMEM_TEAM_WORLD ((mg_shmem_team_t)0)  /* every PE */
#define MG_SHMEM_TEAM_SHARED ((mg_shmem_team_t)1) /* the PEs that can share memory with this one */
#define MG_SHMEM_TEAM_NODE ((mg_shmem_team_t)2)   /* the PEs of this node */

/* Starts NVSHMEM with one PE per rank of comm (PE number = rank), through NVSHMEM's unique-id
 * bootstrap: rank 0 makes the id (nvshmemx_get_uniqueid), the ranks share it over comm, each
 * sets it in an init attribute stamped as NVSHMEM's NVSHMEMX_INIT_ATTR_INITIALIZER stamps it and
 * calls nvshmemx_hostlib_init_attr with NVSHMEMX_INIT_WITH_UNIQUEID. Works on communicators of
 * either backend, however they were made (mg_comm_init_env under mgcomm launch, torchrun,
 * mpirun or srun; mg_comm_init_rank). Collective over comm (READY). comm is used during the call
 * only and may be destroyed afterwards.
 * device: the CUDA device of this PE; MG_UNDEF_INT = comm's device on the NCCL backend, else the
 * launcher's local rank (as mg_comm_init_env reads it), else 0 when comm has one rank. It is
 * made current on the calling thread before NVSHMEM starts (NVSHMEM uses the current device).
 * Errors: MG_ERR_INVALID_USAGE (bad comm, comm not ready, NVSHMEM already initialised or once
 * finalized in this process: NVSHMEM starts at most once; another thread of this process is
 * starting it: one PE per process, so a communicator of threads cannot start it),
 * MG_ERR_INVALID_ARGUMENT (no device can
 * be chosen, device out of range), MG_ERR_BACKEND_UNAVAILABLE (NVSHMEM or the CUDA driver not
 * found: the message names what is missing), MG_ERR_TIMED_OUT (a rank did not arrive at the
 * rendezvous; the message names it), MG_ERR_REMOTE (another PE could not start: named, with its
 * status), MG_ERR_BACKEND (an NVSHMEM call failed: named, with its code; NVSHMEM is then not
 * usable in this process), MG_ERR_OUT_OF_MEMORY. On error nothing stays initialised. */
MG_EXTERN mg_status_t mg_shmem_init_comm(mg_comm_t *comm, int device);

/* Starts NVSHMEM through its own bootstrap (NVSHMEM_BOOTSTRAP: PMI, PMI-2, PMIx, MPI, ...), for
 * programs started by nvshmrun, mpirun or srun that already use it: nvshmemx_hostlib_init_attr
 * without flags. device as for mg_shmem_init_comm (MG_UNDEF_INT = the launcher's local rank:
 * mg_comm_init_env's variables, else MPI_LOCALRANKID, OMPI_COMM_WORLD_LOCAL_RANK or
 * SLURM_LOCALID; else 0). Collective over the job; NVSHMEM's bootstrap has no deadline of mgcomm's. Errors as
 * mg_shmem_init_comm, without the communicator's. */
MG_EXTERN mg_status_t mg_shmem_init_env(int device);

/* Ends NVSHMEM (nvshmemx_hostlib_finalize): collective. Refused with MG_ERR_INVALID_USAGE while
 * symmetric allocations are live (the message says how many; free them first: every PE has the
 * same ones, so every PE refuses alike). Teams split and not destroyed are destroyed by it. MG_OK
 * when NVSHMEM was finalized already (idempotent after a success). MG_ERR_INVALID_USAGE when it
 * was never initialised, or its initialisation failed. Afterwards NVSHMEM cannot be started
 * again in this process. */
MG_EXTERN mg_status_t mg_shmem_finalize(void);

/* This PE's number and the number of PEs. MG_ERR_INVALID_USAGE before init or after finalize,
 * MG_ERR_INVALID_ARGUMENT for a NULL output. */
MG_EXTERN mg_status_t mg_shmem_my_pe(int *pe);
MG_EXTERN mg_status_t mg_shmem_n_pes(int *n);

/* NVSHMEM's release (3.4.5 = 30405, nvshmemx_vendor_get_version_info; 0 when the library does
 * not say) and the OpenSHMEM specification it implements (nvshmem_info_get_version; 1.3 = 103).
 * Either output may be NULL. Loads the library if needed; needs no initialisation. Errors:
 * MG_ERR_BACKEND_UNAVAILABLE (no NVSHMEM; the message lists the candidates tried). */
MG_EXTERN mg_status_t mg_shmem_version(int *release, int *spec);

/* What the loaded NVSHMEM exports of the host API mgcomm uses: entry index (0 <= index <
 * mg_shmem_symbol_count()) is the exported name, whether mgcomm requires it (a library without
 * it is refused) and whether it is present. The count does not depend on the library; the
 * entries need it loaded. Errors: MG_ERR_INVALID_ARGUMENT (index out of range, name or present
 * NULL; required may be NULL), MG_ERR_BACKEND_UNAVAILABLE (no NVSHMEM). */
MG_EXTERN int mg_shmem_symbol_count(void);
MG_EXTERN mg_status_t mg_shmem_symbol(int index, const char **name, int *required, int *present);

/* Symmetric allocation: collective; every PE calls with the same arguments, in the same order.
 * Before NVSHMEM allocates, the PEs compare what each asked for (an exchange through NVSHMEM
 * itself, ended by a barrier), so that a mismatch fails on every PE, naming the PEs and what
 * each asked, and leaves the heap as it was; a PE whose own arguments are wrong (a NULL output,
 * an overflow, a bad alignment) makes every PE fail the same way. bytes 0 (or a count or size
 * of 0) is compared too and gives *ptr = NULL without allocating. The memory is device memory
 * of the PE's GPU, uninitialised except for mg_shmem_calloc (zeroed).
 * Errors: MG_ERR_INVALID_USAGE (not initialised; the PEs asked for different sizes: the
 * message names them), MG_ERR_INVALID_ARGUMENT (ptr NULL; count * size overflows; alignment not
 * a power of two; another PE's own arguments were wrong: named), MG_ERR_NOT_SUPPORTED (the
 * library lacks nvshmem_calloc or nvshmem_align), MG_ERR_OUT_OF_MEMORY (NVSHMEM's heap is
 * full: NVSHMEM_SYMMETRIC_SIZE sets its size). */
MG_EXTERN mg_status_t mg_shmem_malloc(size_t bytes, void **ptr);
MG_EXTERN mg_status_t mg_shmem_calloc(size_t count, size_t size, void **ptr);
MG_EXTERN mg_status_t mg_shmem_align(size_t alignment, size_t bytes, void **ptr);
/* Frees a symmetric allocation: collective, checked as allocation is (every PE must free the
 * same object). NULL is MG_OK when NVSHMEM is not initialised; otherwise it takes part in the
 * comparison (so pass NULL on every PE or on none) and frees nothing. Errors:
 * MG_ERR_INVALID_ARGUMENT (ptr is not the start of a live symmetric allocation; named when it
 * was another PE's), MG_ERR_INVALID_USAGE (the PEs freed different objects: named). */
MG_EXTERN mg_status_t mg_shmem_free(void *ptr);

/* One-sided copies. put copies bytes from the local buffer src into the copy of the symmetric
 * object dst held by PE pe; get copies from PE pe's copy of the symmetric object src into the
 * local buffer dst. The symmetric side must lie inside one live allocation of mg_shmem_malloc
 * (and friends); the local side must be memory of this PE's device (or managed memory), as the
 * buffers of operations on communicators; pe in [0, n_pes); bytes 0 is MG_OK and copies nothing.
 * Ordering, as NVSHMEM defines it: a blocking put returns when src may be reused (local
 * completion); the data is delivered at PE pe only after mg_shmem_quiet or mg_shmem_barrier_all.
 * A blocking get returns when dst holds the data. The _on_stream forms are ordered on stream (a
 * CUDA stream of this PE's device, NULL the default stream) and return at once: the copy happens
 * when the stream reaches it; remote delivery of a put needs a quiet or a barrier (on the
 * stream: mg_shmem_barrier_all_on_stream) after it.
 * Errors: MG_ERR_INVALID_USAGE (not initialised), MG_ERR_INVALID_ARGUMENT (pe out of range; a
 * NULL buffer with bytes > 0; the symmetric address not in a live allocation, or the range
 * running past its end: the message gives the allocation; the local buffer not device memory of
 * this PE's GPU, or too short; a stream of another device). */
MG_EXTERN mg_status_t mg_shmem_put(void *dst, const void *src, size_t bytes, int pe);
MG_EXTERN mg_status_t mg_shmem_get(void *dst, const void *src, size_t bytes, int pe);
MG_EXTERN mg_status_t mg_shmem_put_on_stream(void *dst, const void *src, size_t bytes, int pe,
                                             void *stream);
MG_EXTERN mg_status_t mg_shmem_get_on_stream(void *dst, const void *src, size_t bytes, int pe,
                                             void *stream);

/* Ordering and synchronisation (NVSHMEM's definitions). quiet: returns when every put issued by
 * this PE, to any PE, is complete and visible at its target (remote completion). fence: orders
 * this PE's puts to each one PE: those issued before it are delivered before those issued after
 * it, to the same PE; it completes nothing. barrier_all: collective; returns when every PE has
 * arrived and every put issued before it by any PE is complete (a quiet, then a sync).
 * barrier_all_on_stream: the same, ordered on stream. sync_all: collective; every PE has arrived;
 * completes no put. None has a deadline (see above). Errors: MG_ERR_INVALID_USAGE (not
 * initialised), MG_ERR_INVALID_ARGUMENT (a stream of another device). */
MG_EXTERN mg_status_t mg_shmem_quiet(void);
MG_EXTERN mg_status_t mg_shmem_fence(void);
MG_EXTERN mg_status_t mg_shmem_barrier_all(void);
MG_EXTERN mg_status_t mg_shmem_barrier_all_on_stream(void *stream);
MG_EXTERN mg_status_t mg_shmem_sync_all(void);

/* Teams. split_strided: collective over parent (every PE of parent calls it with the same
 * arguments): the new team holds the parent's PEs start, start + stride, ..., size of them
 * (indices in parent). A PE of parent outside the new team gets *team = MG_SHMEM_TEAM_NONE and
 * MG_OK: "no team" is not an error. The arguments are checked on each PE before NVSHMEM is
 * called, not compared between PEs: a PE refused alone leaves the others waiting in NVSHMEM.
 * Errors: MG_ERR_INVALID_USAGE (not initialised), MG_ERR_INVALID_ARGUMENT (parent not a live
 * team, start out of range, stride or size < 1, the last member past the parent's end, team
 * NULL), MG_ERR_NOT_SUPPORTED (NVSHMEM runs in its limited MPG mode, PEs sharing a GPU without
 * MPS, where NVSHMEM 3.4.5 exits the process on a split), MG_ERR_BACKEND (NVSHMEM refused, e.g.
 * out of team slots). */
MG_EXTERN mg_status_t mg_shmem_team_split_strided(mg_shmem_team_t parent, int start, int stride,
                                                  int size, mg_shmem_team_t *team);
/* This PE's number in team, and team's size. Errors: MG_ERR_INVALID_USAGE (not initialised),
 * MG_ERR_INVALID_ARGUMENT (team not a live team, including MG_SHMEM_TEAM_NONE; NULL output). */
MG_EXTERN mg_status_t mg_shmem_team_my_pe(mg_shmem_team_t team, int *pe);
MG_EXTERN mg_status_t mg_shmem_team_n_pes(mg_shmem_team_t team, int *n);
/* The number in dest of PE src_pe of src; -1 when that PE is not in dest. Errors as
 * mg_shmem_team_my_pe, plus MG_ERR_INVALID_ARGUMENT for src_pe out of [0, size of src). */
MG_EXTERN mg_status_t mg_shmem_team_translate_pe(mg_shmem_team_t src, int src_pe,
                                                 mg_shmem_team_t dest, int *dest_pe);
/* Destroys a team made by mg_shmem_team_split_strided (collective over its members).
 * MG_SHMEM_TEAM_NONE is MG_OK (as NULL for other destroys). Errors: MG_ERR_INVALID_USAGE (not
 * initialised; a predefined team: WORLD, SHARED and NODE cannot be destroyed),
 * MG_ERR_INVALID_ARGUMENT (not a live team: never made, or destroyed already). */
MG_EXTERN mg_status_t mg_shmem_team_destroy(mg_shmem_team_t team);

#ifdef __cplusplus
}
#endif

#endif /* MGCOMM_H */
