/*
 * bench_mem.c -- where a rank's buffers live: host memory for ranks on the host backend, device
 * memory for ranks on GPUs (the NCCL backend). The patterns and the checker only ever see host
 * images; these tables copy them in and out.
 *
 * Device memory goes through the public API, as everything in the tool: mg_mem_alloc on the
 * rank's communicator (ncclMemAlloc on its device) and mg_memcpy, which returns when the copy is
 * complete and is bounded by the communicator's timeout. mg_memcpy runs on a stream of the
 * library's own, not ordered with the stream the collectives run on: the caller copies only
 * when nothing is in flight (before a run, or after waiting for its completion).
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static mg_status_t mg_bench_host_alloc(mg_comm_t *comm, size_t bytes, void **out) {
  (void)comm;
  void *p = NULL;
  /* Page-aligned, as a GPU allocation would be, so that host timings do not depend on where
   * malloc happened to put a large buffer. */
  if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) return MG_ERR_OUT_OF_MEMORY;
  *out = p;
  return MG_OK;
}

static mg_status_t mg_bench_host_copy(mg_comm_t *comm, void *dst, const void *src, size_t n) {
  (void)comm;
  memcpy(dst, src, n);
  return MG_OK;
}

const mg_bench_mem_t mg_bench_mem_host = {"host", mg_bench_host_alloc, free, mg_bench_host_copy,
                                          mg_bench_host_copy};

static mg_status_t mg_bench_device_alloc(mg_comm_t *comm, size_t bytes, void **out) {
  return mg_mem_alloc(comm, bytes ? bytes : 1, out); /* it refuses 0 bytes */
}

static void mg_bench_device_release(void *p) {
  /* p came from mg_mem_alloc and no operation uses it any more (the communicator is finalized
   * or destroyed, or the sweep never ran): a failure could only be reported, not acted on. */
  (void)mg_mem_free(p);
}

static mg_status_t mg_bench_device_copy(mg_comm_t *comm, void *dst, const void *src, size_t n) {
  return mg_memcpy(comm, dst, src, n);
}

const mg_bench_mem_t mg_bench_mem_device = {"device", mg_bench_device_alloc,
                                            mg_bench_device_release, mg_bench_device_copy,
                                            mg_bench_device_copy};
