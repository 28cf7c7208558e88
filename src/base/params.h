/*
 * params.h -- the one declarative table of every MGCOMM_* environment variable.
 *
 * Each row: id, type (INT, DOUBLE, STRING, CHOICE, or SECRET: a string whose value is never
 * shown), default, minimum, maximum (numbers), choices (CHOICE type), help. The
 * table is read once, on first use; a value that does not parse or is out of range is a warning
 * naming the variable and the default used instead; an MGCOMM_* variable that is not in the
 * table is a warning naming the closest known one. `mgcomm info --config` prints the table.
 */
#ifndef MG_BASE_PARAMS_H
#define MG_BASE_PARAMS_H

#include <stdint.h>

#ifdef MGCOMM_TESTING
#define MG__PARAM_TESTING_ROWS(X)                                                             \
  X(FAULT, STRING, "", 0, 0, "",                                                        \
    "Test builds only: faults to inject, 'name:nth:code[:count]' separated by ','; see "     \
    "src/loader/fault.h")
#else
#define MG__PARAM_TESTING_ROWS(X)
#endif

#define MG_PARAM_TABLE(X)                                                                      \
  X(DEBUG, CHOICE, "WARN", 0, 0, "NONE|WARN|INFO|TRACE",                                \
    "Log level: NONE, WARN (default), INFO or TRACE")                                          \
  X(DEBUG_SUBSYS, STRING, "ALL", 0, 0, "",                                              \
    "Subsystems to log, comma-separated: INIT,LOAD,COLL,P2P,SHMEM,BOOT,ENV,WORLD,ALL; a "      \
    "leading ^ removes one")                                                                   \
  X(DEBUG_FILE, STRING, "", 0, 0, "",                                                   \
    "Log to this file instead of stderr; %h is the host name, %p the pid")                     \
  X(TIMEOUT, DOUBLE, "600", 0.001, 1e9, "",                                                    \
    "Default deadline of every wait, seconds (communicator init, operations, rendezvous)")     \
  X(BACKEND, CHOICE, "auto", 0, 0, "auto|host|nccl",                                    \
    "Backend used for MG_BACKEND_AUTO: auto (NCCL with a GPU, else host), host or nccl; an "   \
    "override that cannot run is an error")                                                    \
  X(CUDA_LIBRARY, STRING, "", 0, 0, "",                                                 \
    "Explicit path of libcuda.so.1, tried before any search")                                  \
  X(NCCL_LIBRARY, STRING, "", 0, 0, "",                                                 \
    "Explicit path of libnccl.so.2, tried before any search")                                  \
  X(NVSHMEM_LIBRARY, STRING, "", 0, 0, "",                                              \
    "Explicit path of libnvshmem_host.so.3, tried before any search")                          \
  X(NVML_LIBRARY, STRING, "", 0, 0, "",                                                 \
    "Explicit path of libnvidia-ml.so.1, tried before any search")                             \
  X(HOST_SLOT_BYTES, INT, "1048576", 4096, 1073741824.0, "",                                   \
    "Host backend: bytes of each rank's staging buffer (two per rank); larger messages are "   \
    "pipelined through it in chunks")                                                          \
  X(HOST_SMALL_BYTES, INT, "16384", 0, 1073741824.0, "",                                       \
    "Host backend: messages up to this size use the one-step low-latency algorithms")          \
  X(HOST_DIRECT_BYTES, INT, "-1", -1, 1e18, "",                                               \
    "Host backend: broadcast, gather, scatter, all_gather and all_to_all of at least this many "\
    "bytes per rank copy once, straight from the owner's buffer (process_vm_readv across "      \
    "processes), instead of through the staging slots; -1 = 2048 when the ranks are threads "   \
    "of one process and the thread that creates the communicator may run on as many CPUs as "  \
    "there are ranks, 32768 on at least 2 and at least half as many, else 262144, and between " \
    "processes 8192 where process_vm_readv is fast "                                           \
    "(HOST_READV_FAST), else 32768 where the machine has a CPU per rank. A send of at least "   \
    "this many bytes is read by its receiver straight from the send buffer (between "          \
    "processes with process_vm_readv; -1: from 262144 where it is fast, else 32768 with a CPU " \
    "per rank, else never)")                                                                   \
  X(HOST_READV_MAX_BYTES, INT, "-1", -1, 1e18, "",                                             \
    "Host backend: between processes, a direct broadcast, all_gather or gather of which a rank " \
    "would read at least this many bytes (process_vm_readv) goes through the staging slots "   \
    "instead, where the owner's and the readers' copies overlap; 0: no bound; -1 = 1 MiB "     \
    "(262144 with more ranks than CPUs) for scatter and all_to_all too, or where "             \
    "process_vm_readv is fast 131072 for broadcast "                                          \
    "and all_gather of more than two ranks (several readers of one buffer), 16 MiB for "      \
    "gather (one reader of every piece) and 32 MiB for a broadcast or scatter of two ranks "   \
    "whose root's call is in place (its CPU would idle). A reduce past HOST_SMALL_BYTES "      \
    "between processes is direct (its root reads every other input) below this bound; -1: "   \
    "only of two ranks where process_vm_readv is fast, below 524288")                          \
  X(HOST_READV_FAST, INT, "-1", -1, 1, "",                                                     \
    "Host backend: 1 when process_vm_readv copies at least 0.4 as fast as memcpy here, which " \
    "moves the defaults of HOST_DIRECT_BYTES and HOST_READV_MAX_BYTES between processes; -1 = " \
    "measured once per process (256 KiB each way, 20 times, about 0.7 ms)")                    \
  X(HOST_PACE_GBPS, DOUBLE, "5", 0, 1e6, "",                                                   \
    "Host backend: between processes, a rank whose copies into its staging slot (lines its "  \
    "readers just read) ran below this many GB/s in 6 of its last 8 collectives says so, and " \
    "from then on collectives that could read their peers' buffers directly do, until the "  \
    "staged ones kept every 128 of them measure faster; 0: never")                            \
  X(HOST_P2P_BYTES, INT, "262144", 4096, 1073741824.0, "",                                     \
    "Host backend: bytes of each send/recv channel between two ranks (the ring of the "       \
    "messages that are not lent: see HOST_DIRECT_BYTES)")                                      \
  X(HOST_SPIN_US, INT, "50", 0, 1000000, "",                                                   \
    "Host backend: microseconds a waiting rank spins before it sleeps on a futex")             \
  X(CHECK_POINTERS, INT, "1", 0, 1, "",                                                        \
    "NCCL backend: 1 checks every buffer before it is enqueued (memory space, device, "       \
    "extent: mgcomm's record for mg_mem_alloc and registered memory, cuPointerGetAttributes "  \
    "for the rest) and, once per stream, the stream's context; 0 skips these checks")          \
  X(CHECK_COLLECTIVES, INT, "0", 0, 1, "",                                                     \
    "Debugging aid, every backend: 1 makes the ranks compare each collective's kind, count, "  \
    "dtype, op, root and sequence number before it runs (one small all_gather per "            \
    "collective) and refuse a mismatch with MG_ERR_INVALID_USAGE naming every rank's call; "   \
    "read when a communicator is made; set it alike on every rank")                            \
  X(NCCL_BLOCKING, INT, "1", 0, 1, "",                                                         \
    "NCCL backend: 1 runs operations on blocking NCCL communicators (raw NCCL's speed; the "   \
    "watchdog revokes one that NCCL holds past its deadline), 0 on nonblocking ones")          \
  X(RANK, STRING, "", 0, 0, "",                                                                \
    "mg_comm_init_env: this process's rank (set by mgcomm launch; before RANK, "               \
    "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)")                                           \
  X(WORLD_SIZE, STRING, "", 0, 0, "",                                                          \
    "mg_comm_init_env: number of ranks of the job (set by mgcomm launch)")                     \
  X(LOCAL_RANK, STRING, "", 0, 0, "",                                                          \
    "mg_comm_init_env: rank among the job's processes on this machine; the default device")    \
  X(STORE, STRING, "", 0, 0, "",                                                               \
    "mg_comm_init_env: host:port of the rendezvous store that rank 0 serves (else "            \
    "MASTER_ADDR:MASTER_PORT)")                                                                \
  X(JOB_TOKEN, SECRET, "", 0, 0, "",                                                           \
    "Secret every client of the job's store presents (generated by mgcomm launch)")            \
  X(STORE_FRAME_TIMEOUT, DOUBLE, "10", 0.01, 3600, "",                                         \
    "Store server: seconds a connection may take to authenticate, to finish a message it "     \
    "began, or to read a reply; slower connections are closed")                                \
  X(TRACE_DIR, STRING, "", 0, 0, "",                                                           \
    "Flight recorder: folder into which a communicator dumps its trace (JSON) when one of "    \
    "its operations or requests times out; empty = no automatic dump")                        \
  X(TRACE_ENTRIES, INT, "2048", 0, 16777216, "",                                               \
    "Flight recorder: operations kept per communicator (a ring); 0 = no recorder")            \
  X(WATCHDOG_INTERVAL, DOUBLE, "0.1", 0.001, 60, "",                                           \
    "Watchdog: seconds between its checks of pending requests against their deadlines and "   \
    "of the backends' asynchronous errors")                                                    \
  X(ON_TIMEOUT, CHOICE, "abort", 0, 0, "abort|report",                                         \
    "What the watchdog does with a communicator whose request timed out: abort it (no thread " \
    "stays stuck) or report (the request fails, the communicator moves to the error state)")  \
  X(COMPLETION, CHOICE, "hostfn", 0, 0, "hostfn|poll|sync",                                    \
    "How requests learn that a stream passed them: hostfn (the stream calls back), poll "     \
    "(checked every MGCOMM_POLL_INTERVAL) or sync (the waiting thread blocks on the stream)") \
  X(POLL_INTERVAL, DOUBLE, "0.00005", 0.000001, 1, "",                                         \
    "Seconds between two checks of a pending request under the poll completion strategy")     \
  X(PROGRESS_INTERVAL_MS, INT, "100", 0, 60000, "",                                            \
    "NCCL communicators of mg_comm_init_env: milliseconds between publications of this "       \
    "rank's progress to the job's store (and reads of the others'); 0 = off")                  \
  X(WAIT_SPIN_US, INT, "20", 0, 1000000, "",                                                   \
    "Microseconds a thread waiting for a request, and an idle rank worker, spin before they "  \
    "sleep")                                                                                   \
  X(ALGO, CHOICE, "auto", 0, 0, "auto|nccl|mgcomm",                                          \
    "NCCL backend's all_reduce: auto (mgcomm's own kernels where every pair of GPUs has peer "  \
    "access and the size is under their limit, else NCCL), nccl, or mgcomm (an all_reduce "    \
    "they cannot run is an error); a communicator's config->all_reduce_algo overrides it")     \
  X(KERNELS_ONESHOT_BYTES, INT, "-1", -1, 1e18, "",                                            \
    "mgcomm's all-reduce kernels: bytes up to which one-shot runs, two-shot above; -1 = the "  \
    "table for the number of ranks (docs/kernels.md)")                                         \
  X(KERNELS_MAX_BYTES, INT, "-1", -1, 1e18, "",                                                \
    "mgcomm's all-reduce kernels: bytes above which NCCL runs (MGCOMM_ALGO=auto); -1 = the "    \
    "table; at most MGCOMM_KERNELS_STAGING_BYTES")                                             \
  X(KERNELS_STAGING_BYTES, INT, "4194304", 4096, 1073741824.0, "",                             \
    "mgcomm's all-reduce kernels: the largest message, bytes; each rank allocates twice this " \
    "on its GPU when its communicator first uses them; set alike on every rank")               \
  X(KERNELS_BLOCKS, INT, "0", 0, 128, "",                                                      \
    "mgcomm's all-reduce kernels: blocks of a launch at most; 0 = the table (64); set alike "   \
    "on every rank")                                                                           \
  X(KERNELS_LL_BYTES, INT, "-1", -1, 1073741824.0, "",                                         \
    "mgcomm's all-reduce kernels: bytes up to which the push (LL) algorithm runs; 0 = never, "  \
    "-1 = the table; each rank's push area holds twice this per rank and parity; at most "      \
    "MGCOMM_KERNELS_STAGING_BYTES; set alike on every rank")                                   \
  X(KERNELS_INPLACE_BYTES, INT, "-1", -1, 1e18, "",                                            \
    "mgcomm's all-reduce kernels: bytes from which buffers of mg_mem_alloc or a registration "  \
    "are read in place by the peers (no copy in; ranks of one process); -1 = the table; above " \
    "MGCOMM_KERNELS_STAGING_BYTES = never; set alike on every rank")                           \
  MG__PARAM_TESTING_ROWS(X)

typedef enum {
#define MG__PARAM_ID(id, type, def, lo, hi, choices, help) MG_PARAM_##id,
  MG_PARAM_TABLE(MG__PARAM_ID)
#undef MG__PARAM_ID
  MG_PARAM_COUNT
} mg__param_id_t;

/* Typed getters; the first use reads the whole table. Strings are never NULL. */
int64_t mg__param_int(mg__param_id_t id);
double mg__param_double(mg__param_id_t id);
const char *mg__param_str(mg__param_id_t id);
/* For the logger only: reads the table without emitting its warnings (the logger is what emits
 * them, once it is set up). */
const char *mg__param_str_quiet(mg__param_id_t id);
/* Emits the warnings found while reading the table, once per process. */
void mg__params_flush_warnings(void);

#endif
