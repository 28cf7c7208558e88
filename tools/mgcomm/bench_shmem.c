/*
 * bench_shmem.c -- `mgcomm bench shmem`: NVSHMEM put and get bandwidth and latency between PEs,
 * in nccl-tests-like columns, beside NCCL send/recv over the same ring when the PEs' communicator
 * is an NCCL one. One process per PE: under `mgcomm launch -n N` (or torchrun, mpirun, srun) the
 * PEs meet through mg_comm_init_env; alone, the process is one PE that puts to itself.
 *
 * Each PE copies to the next PE of the ring (r -> r + 1 mod N), all at once, as nccl-tests'
 * sendrecv does. put: `iters` blocking puts then one quiet (remote completion), timed on the host
 * between two barriers; get: `iters` blocking gets (each complete on return). time is per copy;
 * algbw = bytes / time. The sizes with few bytes give the latency.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "mgcomm.h"

static double bs_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char bs_usage[] =
    "usage: mgcomm bench shmem [-b minbytes] [-e maxbytes] [-f factor] [-n iters] [-w warmup]\n"
    "                          [--backend host|nccl]\n"
    "\n"
    "NVSHMEM put/get between PEs (each PE to the next one of the ring), beside NCCL send/recv\n"
    "when the communicator is NCCL's (--backend nccl: one GPU per process). Run one process per\n"
    "PE under `mgcomm launch -n N -- mgcomm bench shmem`; alone it is one PE putting to itself.\n"
    "PE r uses GPU r mod the GPUs of the machine. Defaults: -b 8 -e 64M -f 4 -n 50 -w 5 --backend host\n";

static size_t bs_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0, end++;
  else if (*end == 'M' || *end == 'm') v *= 1048576.0, end++;
  else if (*end == 'G' || *end == 'g') v *= 1073741824.0, end++;
  return *end == '\0' && v >= 1 ? (size_t)v : 0;
}

#define BS_CHECK(call)                                                                    \
  do {                                                                                    \
    mg_status_t st_ = (call);                                                             \
    if (st_ != MG_OK) {                                                                   \
      fprintf(stderr, "mgcomm bench shmem: %s: %s: %s\n", #call, mg_status_name(st_),     \
              mg_last_error());                                                           \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

/* NCCL send/recv around the ring, iters times, per-copy seconds (0 when not NCCL). */
static int bs_sendrecv(mg_comm_t *comm, void *src, void *dst, size_t bytes, int iters, int r,
                       int n, double *per) {
  mg_stream_t s;
  mg_request_t *req = NULL;
  BS_CHECK(mg_comm_stream(comm, &s));
  double t0 = 0;
  for (int i = -1; i < iters; i++) {
    if (i == 0) {
      BS_CHECK(mg_record(comm, s, &req));
      BS_CHECK(mg_request_wait(req, 0));
      BS_CHECK(mg_request_free(req));
      t0 = bs_now();
    }
    BS_CHECK(mg_group_begin());
    BS_CHECK(mg_send(src, bytes, MG_UINT8, (r + 1) % n, comm, s));
    BS_CHECK(mg_recv(dst, bytes, MG_UINT8, (r + n - 1) % n, comm, s));
    BS_CHECK(mg_group_end());
  }
  BS_CHECK(mg_record(comm, s, &req));
  BS_CHECK(mg_request_wait(req, 0));
  BS_CHECK(mg_request_free(req));
  *per = (bs_now() - t0) / iters;
  return 0;
}

int mg_cli_bench_shmem(int argc, char **argv) {
  size_t minb = 8, maxb = (size_t)64 << 20;
  int factor = 4, iters = 50, warmup = 5;
  mg_backend_t backend = MG_BACKEND_HOST;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(bs_usage, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "mgcomm bench shmem: %s needs a value\n%s", argv[i], bs_usage);
      return 2;
    }
    const char *a = argv[i], *v = argv[++i];
    if (strcmp(a, "-b") == 0) minb = bs_size(v);
    else if (strcmp(a, "-e") == 0) maxb = bs_size(v);
    else if (strcmp(a, "-f") == 0) factor = atoi(v);
    else if (strcmp(a, "-n") == 0) iters = atoi(v);
    else if (strcmp(a, "-w") == 0) warmup = atoi(v);
    else if (strcmp(a, "--backend") == 0 && strcmp(v, "host") == 0) backend = MG_BACKEND_HOST;
    else if (strcmp(a, "--backend") == 0 && strcmp(v, "nccl") == 0) backend = MG_BACKEND_NCCL;
    else {
      fprintf(stderr, "mgcomm bench shmem: bad option %s %s\n%s", a, v, bs_usage);
      return 2;
    }
  }
  if (minb == 0 || maxb < minb || factor < 2 || iters < 1 || warmup < 0) {
    fprintf(stderr, "mgcomm bench shmem: bad sizes, factor, iterations or warmup\n%s", bs_usage);
    return 2;
  }

  int ndev = 0;
  BS_CHECK(mg_device_count(&ndev));
  if (ndev < 1) {
    fprintf(stderr, "mgcomm bench shmem: no GPU here\n");
    return 1;
  }
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = backend;
  mg_comm_t *comm = NULL;
  if (getenv("MGCOMM_RANK") != NULL) {
    BS_CHECK(mg_comm_init_env(&cfg, &comm));
  } else {
    mg_unique_id_t id;
    cfg.device = 0;
    BS_CHECK(mg_unique_id_create(backend, &id));
    BS_CHECK(mg_comm_init_rank(&cfg, 1, &id, 0, &comm));
  }
  int r = 0, n = 1;
  BS_CHECK(mg_comm_rank(comm, &r));
  BS_CHECK(mg_comm_size(comm, &n));
  BS_CHECK(mg_shmem_init_comm(comm, backend == MG_BACKEND_NCCL ? MG_UNDEF_INT : r % ndev));
  int rel = 0;
  BS_CHECK(mg_shmem_version(&rel, NULL));
  char *src = NULL, *dst = NULL, *nsrc = NULL, *ndst = NULL;
  BS_CHECK(mg_shmem_malloc(maxb, (void **)&src));
  BS_CHECK(mg_shmem_malloc(maxb, (void **)&dst));
  if (backend == MG_BACKEND_NCCL) {
    BS_CHECK(mg_mem_alloc(comm, maxb, (void **)&nsrc));
    BS_CHECK(mg_mem_alloc(comm, maxb, (void **)&ndst));
  }
  int right = (r + 1) % n;
  if (r == 0) {
    printf("# mgcomm bench shmem: %d PE%s (NVSHMEM %d.%d.%d), each to the next of the ring; "
           "%d iterations, %d warmup\n", n, n == 1 ? " putting to itself" : "s", rel / 10000,
           rel / 100 % 100, rel % 100, iters, warmup);
    printf("# put: blocking puts then one quiet; get: blocking gets; time per copy; "
           "sendrecv: NCCL over the %s communicator\n", mg_backend_name(backend));
    printf("#%13s %12s %6s   %9s %7s   %9s %7s   %9s %7s\n", "size", "count", "type",
           "put time", "algbw", "get time", "algbw", "s/r time", "algbw");
    printf("#%13s %12s %6s   %9s %7s   %9s %7s   %9s %7s\n", "(B)", "(elements)", "", "(us)",
           "(GB/s)", "(us)", "(GB/s)", "(us)", "(GB/s)");
  }
  for (size_t b = minb; b <= maxb; b *= (size_t)factor) {
    double put = 0, get = 0, sr = 0;
    for (int w = 0; w < warmup; w++) BS_CHECK(mg_shmem_put(dst, src, b, right));
    BS_CHECK(mg_shmem_quiet());
    BS_CHECK(mg_shmem_barrier_all());
    double t0 = bs_now();
    for (int i = 0; i < iters; i++) BS_CHECK(mg_shmem_put(dst, src, b, right));
    BS_CHECK(mg_shmem_quiet());
    put = (bs_now() - t0) / iters;
    BS_CHECK(mg_shmem_barrier_all());
    for (int w = 0; w < warmup; w++) BS_CHECK(mg_shmem_get(dst, src, b, right));
    BS_CHECK(mg_shmem_barrier_all());
    t0 = bs_now();
    for (int i = 0; i < iters; i++) BS_CHECK(mg_shmem_get(dst, src, b, right));
    get = (bs_now() - t0) / iters;
    BS_CHECK(mg_shmem_barrier_all());
    if (backend == MG_BACKEND_NCCL && bs_sendrecv(comm, nsrc, ndst, b, iters, r, n, &sr) != 0)
      return 1;
    if (r == 0) {
      char srt[16] = "n/a", srb[16] = "n/a";
      if (sr > 0) {
        snprintf(srt, sizeof srt, "%.2f", sr * 1e6);
        snprintf(srb, sizeof srb, "%.2f", (double)b / sr * 1e-9);
      }
      printf(" %13zu %12zu %6s   %9.2f %7.2f   %9.2f %7.2f   %9s %7s\n", b, b, "uint8",
             put * 1e6, (double)b / put * 1e-9, get * 1e6, (double)b / get * 1e-9, srt, srb);
      fflush(stdout);
    }
    if (b > maxb / (size_t)factor) break;
  }
  BS_CHECK(mg_shmem_free(dst));
  BS_CHECK(mg_shmem_free(src));
  BS_CHECK(mg_mem_free(nsrc));
  BS_CHECK(mg_mem_free(ndst));
  BS_CHECK(mg_shmem_finalize());
  BS_CHECK(mg_comm_destroy(comm));
  return 0;
}
