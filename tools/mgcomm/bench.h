/*
 * bench.h -- `mgcomm bench`, an nccl-tests-compatible benchmark of mgcomm's collectives.
 * Private to the tool; it uses the public API (mgcomm.h) only.
 *
 * Files, one concern each:
 *   bench.c         options, backend choice, how ranks run, the command's entry point
 *   bench_coll.c    the collectives: names, buffer geometry per size, bus-bandwidth factors, call
 *   bench_check.c   per-rank data patterns, poisoning and the checker (#wrong)
 *   bench_mem.c     where rank buffers live: host memory, or device memory (mg_mem_alloc)
 *   bench_run.c     the sweep, whoever runs it: sizes, iteration counts, medians, rows, progress,
 *                   the exit status every participant agrees on
 *   bench_rank.c    one rank of a communicator: its buffers, the checked run, barriers, the
 *                   timed iterations and the time rule (threads and processes alike)
 *   bench_threads.c ranks as threads of this process (mg_comm_init_all)
 *   bench_gpus.c    -g: ranks as GPUs of this process (mg_comm_init_all on the NCCL backend),
 *                   all posted from one thread in one group per iteration, timed by CUDA events
 *   bench_procs.c   this process as one rank of a launcher's job (mg_comm_init_env)
 *   bench_world.c   --world: every rank through the world and its requests, from one thread
 *   bench_report.c  the preamble and table (stdout), JSON and CSV
 */
#ifndef MG_CLI_BENCH_H
#define MG_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mgcomm.h"

/* ------------------------------------------------------------------------------------------ */
/* Collectives (bench_coll.c) */

typedef enum mg_bench_coll {
  MG_BENCH_ALL_REDUCE = 0,
  MG_BENCH_ALL_GATHER,
  MG_BENCH_REDUCE_SCATTER,
  MG_BENCH_ALL_TO_ALL,
  MG_BENCH_BROADCAST,
  MG_BENCH_REDUCE,
  MG_BENCH_GATHER,
  MG_BENCH_SCATTER,
  MG_BENCH_SENDRECV, /* ring: rank r sends to r+1 and receives from r-1, in one group */
  MG_BENCH_COLL_COUNT
} mg_bench_coll_t;

/* "all_reduce", ... as nccl-tests names its binaries, without "_perf". */
const char *mg_bench_coll_name(mg_bench_coll_t c);
/* Parses a name; -1 when unknown. */
int mg_bench_coll_from_name(const char *name);
int mg_bench_coll_reduces(mg_bench_coll_t c); /* takes a reduction op */
int mg_bench_coll_rooted(mg_bench_coll_t c);  /* takes a root */
int mg_bench_coll_has_inplace(mg_bench_coll_t c); /* mgcomm defines an in-place form */
/* nccl-tests' bus-bandwidth factor: busbw = algbw * factor. */
double mg_bench_bus_factor(mg_bench_coll_t c, int nranks);

/* The buffers of one size, with nccl-tests' meaning (counts in elements). */
typedef struct mg_bench_geom {
  size_t count;        /* the count argument of the call: nccl-tests' "count" column */
  size_t send_count;   /* elements of each rank's send buffer */
  size_t recv_count;   /* elements of each rank's receive buffer */
  size_t send_ip_off;  /* in place: send = buf + rank * send_ip_off */
  size_t recv_ip_off;  /* in place: recv = buf + rank * recv_ip_off */
  size_t bytes;        /* nccl-tests' "size" column: max(send, recv) in bytes */
  size_t algbw_bytes;  /* bytes that algbw divides by time (nccl-tests' GetBw) */
} mg_bench_geom_t;

/* Geometry of `bytes` (a size of the sweep) for collective c: per-rank parts are rounded down to
 * a multiple of 16 bytes, as nccl-tests does, so a size can give count 0. */
mg_bench_geom_t mg_bench_geometry(mg_bench_coll_t c, size_t bytes, mg_dtype_t dtype, int nranks);

/* One call of collective c on comm (rank `rank` of nranks) on stream (NULL on the host
 * backend). send/recv as the geometry says; root is used by rooted collectives. Returns the
 * library's status. */
mg_status_t mg_bench_call(mg_bench_coll_t c, const void *send, void *recv, size_t count,
                          mg_dtype_t dtype, mg_op_t op, int root, mg_comm_t *comm, int rank,
                          int nranks, mg_stream_t stream);

/* ------------------------------------------------------------------------------------------ */
/* Data patterns and the checker (bench_check.c) */

/* What one check needs to know; the same on every rank. */
typedef struct mg_bench_case {
  mg_bench_coll_t coll;
  mg_dtype_t dtype;
  mg_op_t op;
  int root;
  int nranks;
  int inplace;
  mg_bench_geom_t g;
} mg_bench_case_t;

/* Writes rank `rank`'s whole buffer image for case k into host memory `img` (the receive
 * buffer's bytes, or for out of place the send buffer's to `send_img`): poison where the
 * operation must write, the rank's pattern where it reads. img has g.recv_count elements (in
 * place: max(send, recv)); send_img has g.send_count (unused in place). */
void mg_bench_fill(const mg_bench_case_t *k, int rank, void *send_img, void *img);

/* Number of elements of rank `rank`'s result (host copy of the receive buffer, img as for fill)
 * that differ from what case k must produce; 0 where the rank receives nothing. */
uint64_t mg_bench_check(const mg_bench_case_t *k, int rank, const void *img);

/* ------------------------------------------------------------------------------------------ */
/* Rank buffers (bench_mem.c): where the operation's memory lives. Fill and check work on host
 * images that are copied in and out, so GPU buffers only add a mem table. comm is the rank's
 * communicator (the device memory belongs to its device; host memory ignores it). */

typedef struct mg_bench_mem {
  const char *name;                                       /* "host", "device" */
  mg_status_t (*alloc)(mg_comm_t *comm, size_t bytes, void **p); /* bytes may be 0 */
  void (*release)(void *p);                               /* NULL is nothing */
  /* Host image -> rank buffer, and back; complete when they return. MG_OK or why not. */
  mg_status_t (*put)(mg_comm_t *comm, void *dst, const void *src, size_t n);
  mg_status_t (*get)(mg_comm_t *comm, void *dst, const void *src, size_t n);
} mg_bench_mem_t;

extern const mg_bench_mem_t mg_bench_mem_host;
extern const mg_bench_mem_t mg_bench_mem_device; /* NCCL backend: mg_mem_alloc, mg_memcpy */

/* ------------------------------------------------------------------------------------------ */
/* Options (bench.c) */

#define MG_BENCH_ITERS_DEFAULT 20  /* nccl-tests' defaults */
#define MG_BENCH_WARMUP_DEFAULT 5
#define MG_BENCH_ITERS_MIN 5       /* adaptive counts never go below these */
#define MG_BENCH_WARMUP_MIN 1
#define MG_BENCH_SIZE_BUDGET_S 0.2 /* adaptive: timed iterations of one size take about this */

/* How the ranks run. */
typedef enum mg_bench_ranks {
  MG_BENCH_THREADS = 0, /* -t (default): threads of this process, one communicator each */
  MG_BENCH_PROCESSES,   /* under a launcher: this process is one rank (mg_comm_init_env) */
  MG_BENCH_WORLD,       /* --world: the workers of one world, driven from one thread (host or
                           NCCL backend) */
  MG_BENCH_GPUS         /* -g (or auto with GPUs): GPUs of this process, from one thread */
} mg_bench_ranks_t;

typedef struct mg_bench_opts {
  int colls[MG_BENCH_COLL_COUNT]; /* collectives to run, in order */
  int ncolls;
  size_t minbytes, maxbytes;
  size_t factor;        /* multiply the size by this (>= 2), or ... */
  size_t increment;     /* ... add this when factor is 0 */
  mg_dtype_t dtype;
  mg_op_t op;
  int root;
  mg_backend_t backend; /* as resolved */
  char backend_reason[512];
  mg_bench_ranks_t ranks;
  const char *rank_var; /* processes: the launcher's variable that made this process a rank */
  int nranks;           /* processes: set once the communicator exists */
  mg_device_info_t *gpus; /* NCCL backend: the devices of ranks 0 .. nranks-1, once known
                             (mg_bench_gpus_describe; freed by mg_cli_bench); else NULL */
  int one_clock;        /* every rank reads the same CLOCK_MONOTONIC (set before the sweep) */
  int iters, warmup;    /* -1: adaptive */
  int inplace_modes;    /* bit 0: out of place, bit 1: in place */
  int check;
  int quick_default;    /* no arguments were given */
  int per_iter;         /* -g: 1 times each iteration (median); 0 one loop between two events,
                           divided by its iterations, as nccl-tests (the default) */
  mg_algo_t algos[3];   /* --algo: the NCCL backend's all_reduces to run, in order ... */
  int nalgos;           /* ... (0: no --algo, the library's choice) */
  mg_algo_t algo;       /* the sweep's: its communicators' config->all_reduce_algo */
} mg_bench_opts_t;

/* One line on stderr ("mgcomm bench: ..."); returns 2, the exit code of bad input. */
int mg_bench_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One measured row: one collective, one size, one of out of place / in place. */
typedef struct mg_bench_result {
  mg_bench_coll_t coll;
  mg_bench_geom_t g;
  int root;
  int inplace;
  double time_us;   /* median over iterations of the time rule (bench_rank.c, bench_world.c) */
  double algbw_gbs, busbw_gbs;
  uint64_t wrong;   /* bad elements, summed over ranks; 0 when not checked */
  int iters, warmup;
  mg_algo_t algo;   /* the sweep's all_reduce (MG_ALGO_DEFAULT: no --algo) */
} mg_bench_result_t;

typedef struct mg_bench_results {
  mg_bench_result_t *rows;
  size_t n, cap;
} mg_bench_results_t;

/* What the printing participant (rank 0, or the world's one thread) owns: the files asked for,
 * open while the sweep runs, and the rows. */
typedef struct mg_bench_report {
  const char *json_path, *csv_path; /* NULL: not asked for */
  FILE *json, *csv;
  mg_bench_results_t res;           /* in the order run; rows owned here (free(res.rows)) */
} mg_bench_report_t;

/* ------------------------------------------------------------------------------------------ */
/* The sweep (bench_run.c) */

/* One participant of the sweep: a rank (threads, processes) or the world's submitting thread.
 * Every participant runs the same sweep and meets the others in agree, in the same order. */
typedef struct mg_bench_part mg_bench_part_t;
struct mg_bench_part {
  const mg_bench_opts_t *o;
  mg_bench_report_t *rep; /* the printer's report; NULL on the other participants */
  /* v[0 .. n) := its sum (MG_SUM) or maximum (MG_MAX) over the participants, on every one. 0, or
   * -1 after a message when the participants cannot meet any more. */
  int (*agree)(mg_bench_part_t *p, double *v, size_t n, mg_op_t op);
  /* Measures case k; on the printer fills *row. 0, or -1 once every participant knows that one
   * failed (the failure is printed where it happened). */
  int (*measure)(mg_bench_part_t *p, const mg_bench_case_t *k, mg_bench_result_t *row);
  /* NULL, or runs case k untimed and unchecked: called for every size of a collective before
   * the first of them is measured. 0, or -1 after a message. */
  int (*warm)(mg_bench_part_t *p, const mg_bench_case_t *k);
  /* The communicators of this participant whose memory the preamble shows (bench_memory.c);
   * NULL: none. */
  mg_comm_t *const *comms;
  int ncomms;
};

/* Runs the sweep of p->o: the printer opens its files and prints the preamble, then every
 * collective, size and placement is measured, printed and recorded; at the end the printer
 * prints the summary and writes the files. ready = 0: this participant could not get ready
 * (printed); nothing is run. Returns the exit status, the same on every participant that could
 * still agree: 0, 1 (a wrong result or a failure), 2 (a file cannot be written: nothing ran).
 * *completed (when not NULL) = 1 when every participant ran every case (the ranks are in step:
 * a communicator can be finalized), else 0. */
int mg_bench_sweep(mg_bench_part_t *p, int ready, int *completed);

/* Bytes of the largest send and receive buffer of one rank over the whole sweep. */
void mg_bench_extent(const mg_bench_opts_t *o, size_t *send_max, size_t *buf_max);
/* Iteration counts of one size whose checked run took est_s: -n / -w, or adaptive. */
void mg_bench_counts(const mg_bench_opts_t *o, double est_s, int *iters, int *warmup);
/* The row of case k from the times of its iters timed iterations (seconds; reordered). */
void mg_bench_row(const mg_bench_opts_t *o, const mg_bench_case_t *k, double *times, int iters,
                  int warmup, uint64_t wrong, mg_bench_result_t *row);
double mg_bench_now(void); /* CLOCK_MONOTONIC, seconds */
/* "mgcomm bench: WHO: coll size [in place]: STATUS: message" on stderr. */
void mg_bench_failed(const char *who, const mg_bench_case_t *k, mg_status_t st);

/* ------------------------------------------------------------------------------------------ */
/* How ranks run (bench_rank.c, bench_threads.c, bench_procs.c, bench_world.c) */

/* One rank of a communicator, run by one thread. */
typedef struct mg_bench_rank {
  mg_bench_part_t part;      /* first member: the sweep's view (agree is the mode's) */
  const mg_bench_mem_t *mem;
  mg_comm_t *comm;
  int rank;
  /* Meets every rank before each run that is timed. MG_OK, or why the ranks cannot meet. */
  mg_status_t (*barrier)(struct mg_bench_rank *r);
  void *send, *buf;          /* the operation's buffers (mem) */
  void *send_img, *img;      /* host images */
  double *stamps;            /* per iteration: start times, then end times (seconds) */
} mg_bench_rank_t;

/* Allocates r's buffers, runs the sweep (r->part.measure is set here), finalizes the
 * communicator when nothing failed, frees the buffers. Returns the sweep's exit status, or 1
 * when finalizing failed. The communicator stays r's caller's to destroy. */
int mg_bench_rank_run(mg_bench_rank_t *r);
/* The barrier before a timed iteration on the host backend: an all_reduce of one value on the
 * benchmark's own communicator, released by the data itself, so that every rank leaves it hot
 * (a pthread or futex barrier leaves the last rank to wake from the kernel, and its first
 * microsecond would be counted as the operation's). */
mg_status_t mg_bench_rank_comm_barrier(mg_bench_rank_t *r);

/* The whole run in each mode: make the ranks, run the sweep, take the ranks down. o->nranks
 * (processes) and o->one_clock are set here. Return the exit status (0, 1 or 2). */
int mg_bench_run_threads(mg_bench_opts_t *o, mg_bench_report_t *rep);
int mg_bench_run_processes(mg_bench_opts_t *o, mg_bench_report_t *rep);
int mg_bench_run_world(mg_bench_opts_t *o, mg_bench_report_t *rep);
int mg_bench_run_gpus(mg_bench_opts_t *o, mg_bench_report_t *rep);
/* Sets o->gpus from mg_device_info of devices 0 .. nranks-1; 0, or -1 after a message. */
int mg_bench_gpus_describe(mg_bench_opts_t *o);

/* ------------------------------------------------------------------------------------------ */
/* Reports (bench_report.c) */

/* Opens the files of rep; 0, or 2 after one line on stderr (nothing is left open). */
int mg_bench_report_open(mg_bench_report_t *rep);
/* Writes rep's rows to its files and closes them; 0, or 1 after a message. */
int mg_bench_report_close(mg_bench_report_t *rep, const mg_bench_opts_t *o);
void mg_bench_print_preamble(FILE *f, const mg_bench_opts_t *o);
/* bench_memory.c: one preamble line per communicator ("# memory, rank q's communicator: ..."),
 * with its memory as mg_comm_mem_stats says (NCCL >= 2.29.7 on the NCCL backend), or why not. */
void mg_bench_print_memory(FILE *f, mg_comm_t *const *comms, int n);
void mg_bench_print_header(FILE *f, mg_bench_coll_t c);
/* Prints the line of one size: out of place then in place (either may be NULL: blank). */
void mg_bench_print_line(FILE *f, const mg_bench_opts_t *o, const mg_bench_result_t *oop,
                         const mg_bench_result_t *ip);
/* The footer of one collective's rows from row `from` on (nccl-tests' "Out of bounds values",
 * "Avg bus bandwidth"), or of all those rows when c < 0. */
void mg_bench_print_footer(FILE *f, const mg_bench_results_t *res, size_t from, int c);
/* "auto", "nccl", "mgcomm" ("default" for MG_ALGO_DEFAULT). */
const char *mg_bench_algo_name(mg_algo_t a);
/* --algo with several: all_reduce's time per size under each, and the ratios to the first. */
void mg_bench_print_algos(FILE *f, const mg_bench_opts_t *o, const mg_bench_results_t *res);

#endif
