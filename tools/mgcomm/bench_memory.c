/*
 * bench_memory.c -- the memory each benchmarked communicator holds, in the preamble of
 * `mgcomm bench` (mg_comm_mem_stats: NCCL >= 2.29.7 on the NCCL backend, the rank's part of
 * the shared segment on the host backend), taken after the buffers were made and before the
 * first operation. The world's communicators are the library's own: `--world` has no such line.
 */
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

/* bytes as "512 B", "16.0 KiB", "84.2 MiB", "1.50 GiB". */
static const char *mg_bench_bytes(uint64_t b, char *buf, size_t len) {
  if (b < 1024)
    snprintf(buf, len, "%llu B", (unsigned long long)b);
  else if (b < (1ull << 20))
    snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
  else if (b < (1ull << 30))
    snprintf(buf, len, "%.1f MiB", (double)b / 1048576.0);
  else
    snprintf(buf, len, "%.2f GiB", (double)b / 1073741824.0);
  return buf;
}

void mg_bench_print_memory(FILE *f, mg_comm_t *const *comms, int n) {
  for (int q = 0; q < n; q++) {
    int rank = q;
    (void)mg_comm_rank(comms[q], &rank); /* a live communicator: cannot fail */
    mg_comm_mem_stats_t ms;
    const mg_status_t st = mg_comm_mem_stats(comms[q], &ms);
    if (st != MG_OK)
      fprintf(f, "# memory, rank %d's communicator: not known (%s: %s)\n", rank,
              mg_status_name(st), mg_last_error());
    else
    {
      char t[32], s[32], p[32];
      fprintf(f, "# memory, rank %d's communicator: %s (%s suspendable, %s persistent)\n", rank,
              mg_bench_bytes(ms.total_bytes, t, sizeof t),
              mg_bench_bytes(ms.suspendable_bytes, s, sizeof s),
              mg_bench_bytes(ms.persistent_bytes, p, sizeof p));
    }
  }
}
