/*
 * bench.h -- `mgcomm bench`, an nccl-tests-compatible benchmark of mgcomm's collectives.
 * Private to the tool; it uses the public API (mgcomm.h) only.
 *
 * Files, one concern each:
 *   bench.c         options, backend choice, the command's entry point and exit code
 *   bench_coll.c    the collectives: names, buffer geometry per size, bus-bandwidth factors, call
 *   bench_check.c   per-rank data patterns, poisoning and the checker (#wrong)
 *   bench_mem.c     where rank buffers live (host memory today; the seam for GPU buffers)
 *   bench_run.c     ranks as threads, the sweep, timing, adaptive iteration counts, progress
 *   bench_report.c  the table (stdout), JSON and CSV
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
 * images that are copied in and out, so GPU buffers only add a mem table. */

typedef struct mg_bench_mem {
  const char *name;                                  /* "host" */
  void *(*alloc)(size_t bytes);                      /* NULL on failure */
  void (*release)(void *p);
  void (*put)(void *dst, const void *src, size_t n); /* host image -> rank buffer */
  void (*get)(void *dst, const void *src, size_t n); /* rank buffer -> host image */
} mg_bench_mem_t;

extern const mg_bench_mem_t mg_bench_mem_host;

/* ------------------------------------------------------------------------------------------ */
/* Options (bench.c) and the run (bench_run.c) */

#define MG_BENCH_ITERS_DEFAULT 20  /* nccl-tests' defaults */
#define MG_BENCH_WARMUP_DEFAULT 5
#define MG_BENCH_ITERS_MIN 5       /* adaptive counts never go below these */
#define MG_BENCH_WARMUP_MIN 1
#define MG_BENCH_SIZE_BUDGET_S 0.2 /* adaptive: timed iterations of one size take about this */

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
  int nranks;
  int iters, warmup;    /* -1: adaptive */
  int inplace_modes;    /* bit 0: out of place, bit 1: in place */
  int check;
} mg_bench_opts_t;

/* One measured row: one collective, one size, one of out of place / in place. */
typedef struct mg_bench_result {
  mg_bench_coll_t coll;
  mg_bench_geom_t g;
  int root;
  int inplace;
  double time_us;   /* median over iterations of last end - last start (bench_run.c) */
  double algbw_gbs, busbw_gbs;
  uint64_t wrong;   /* bad elements, summed over ranks; 0 when not checked */
  int iters, warmup;
} mg_bench_result_t;

typedef struct mg_bench_results {
  mg_bench_result_t *rows;
  size_t n, cap;
} mg_bench_results_t;

/* Runs the sweep of opts on opts->nranks threads, each rank on a communicator of one
 * mg_comm_init_all; prints the table as rows complete and appends them to res. Returns 0, or 1
 * after a runtime failure (printed on stderr). */
int mg_bench_run(const mg_bench_opts_t *opts, mg_bench_results_t *res);

/* ------------------------------------------------------------------------------------------ */
/* Reports (bench_report.c) */

void mg_bench_print_preamble(FILE *f, const mg_bench_opts_t *o);
void mg_bench_print_header(FILE *f, mg_bench_coll_t c);
/* Prints the line of one size: out of place then in place (either may be NULL: blank). */
void mg_bench_print_line(FILE *f, const mg_bench_opts_t *o, const mg_bench_result_t *oop,
                         const mg_bench_result_t *ip);
/* The footer of one collective's rows (nccl-tests' "Out of bounds values", "Avg bus bandwidth"),
 * or of all rows when c < 0. */
void mg_bench_print_footer(FILE *f, const mg_bench_results_t *res, int c);
/* The JSON document / the CSV rows (docs/bench.md gives their fields). */
void mg_bench_write_json(FILE *f, const mg_bench_opts_t *o, const mg_bench_results_t *res);
void mg_bench_write_csv(FILE *f, const mg_bench_opts_t *o, const mg_bench_results_t *res);

#endif
