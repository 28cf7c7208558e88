/*
 * bench_mem.c -- where a rank's buffers live. Host memory here: the ranks are threads of this
 * process on the host backend. Ranks on GPUs add a table whose alloc, put and get are the
 * device's allocation and copies; the patterns and the checker only ever see host images.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void *mg_bench_host_alloc(size_t bytes) {
  void *p = NULL;
  /* Page-aligned, as a GPU allocation would be, so that host timings do not depend on where
   * malloc happened to put a large buffer. */
  return posix_memalign(&p, 4096, bytes ? bytes : 1) == 0 ? p : NULL;
}

static void mg_bench_host_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

const mg_bench_mem_t mg_bench_mem_host = {"host", mg_bench_host_alloc, free, mg_bench_host_copy,
                                          mg_bench_host_copy};
