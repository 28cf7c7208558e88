/*
 * gpu_util.h -- what the GPU tests share: skipping where there are not enough GPUs (exit 77,
 * with the reason), device buffers and streams through the loader's CUDA table (tests may use
 * the library's internals; the library itself never needs the runtime), bounded waits on
 * streams (cuStreamQuery polled against a deadline, never cuStreamSynchronize), threads that
 * run one function per rank, and the comparison of a GPU result with the host backend's.
 *
 * Every helper that fails prints what it was doing and aborts the test (FAIL): a test that
 * does not finish must still say where it stopped.
 */
#ifndef MG_TEST_GPU_UTIL_H
#define MG_TEST_GPU_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "device/device.h"
#include "loader/loader.h"
#include "test.h"

/* The deadline of every wait in the GPU tests (operations, streams), seconds. */
#define GU_TIMEOUT_S 60.0

/* Exits 77 unless n CUDA devices and the NCCL backend are usable, printing why. Initialises
 * CUDA in the calling process: a parent that forks ranks uses gu_probe instead. */
void gu_need(int n);
/* gu_need in a child process, so that the caller's process never initialises CUDA (a process
 * that did cannot fork ranks that use it). Skips the caller when the child skipped. */
void gu_probe(int n);

/* One device as a test uses it: its primary context and a stream of its own. */
typedef struct gu_dev {
  int ordinal;
  mg__CUdevice dev;
  mg__CUcontext ctx;
  mg__CUstream stream; /* non-blocking */
} gu_dev_t;

void gu_dev_open(gu_dev_t *d, int ordinal);
void gu_dev_close(gu_dev_t *d);
void *gu_alloc(gu_dev_t *d, size_t bytes);
void gu_free(gu_dev_t *d, void *p);
/* Copies ordered on d->stream (host memory is pageable; the calls return once the host side
 * is done with it). */
void gu_put(gu_dev_t *d, void *dst, const void *src, size_t bytes);
void gu_get(gu_dev_t *d, void *dst, const void *src, size_t bytes);
/* Waits for d->stream, polling cuStreamQuery, at most timeout_s; FAIL naming what otherwise.
 * Returns the seconds waited. */
double gu_sync(gu_dev_t *d, double timeout_s, const char *what);
/* cuStreamQuery once: 1 done, 0 still running; FAIL on an error. */
int gu_done(gu_dev_t *d, const char *what);

/* Runs fn(rank, arg) on n threads, one per rank, and joins them. */
void gu_run_ranks(int n, void (*fn)(int rank, void *arg), void *arg);

/* Compares n elements of got with want (the host backend's result) for dtype dt. exact: bits
 * must agree (+0 and -0 are equal for floats); otherwise, for floating types, element i may
 * differ by bound[i]. Prints at most `show` mismatches with label and returns their count. */
long gu_compare(const void *got, const void *want, size_t n, mg_dtype_t dt, const double *bound,
                const char *label, int show);
/* The unit roundoff of a floating dtype (2^-24 for float32) and its smallest subnormal; 0 for
 * integers. */
double gu_unit_roundoff(mg_dtype_t dt);
double gu_min_subnormal(mg_dtype_t dt);
/* Element i of p as a double (integers and floats). */
double gu_get_f(const void *p, size_t i, mg_dtype_t dt);

double gu_now(void);

#endif
