/*
 * p2p_vs_memcpy_peer.c -- mgcomm's peer copies against cudaMemcpyPeerAsync, in one process, for
 * every ordered pair of GPUs (each GPU with itself too) and sizes from 64 KiB to 1 GiB (issue 18's
 * target, measured in issue 21: >= 0.97x).
 *
 * Built by bench/p2p_vs_memcpy_peer.sh with nvcc: it needs the CUDA runtime for its reference,
 * which mgcomm itself never links. Peer access is enabled by mg_p2p_enable_all (the runtime
 * shares the primary contexts, so cudaMemcpyPeerAsync takes the same direct path).
 *
 * Method: for each pair and size, `rounds` rounds; in each round the three methods run in an
 * order that rotates from round to round, each as `reps` copies back to back on one stream of
 * the destination device, timed by CUDA events around the reps (GPU time, which includes any gap
 * that the host leaves between two copies: a slow enqueue shows). The copies of a method are
 * enqueued without any host wait in between; mgcomm's requests are freed as they are made
 * (detached) and the last one is waited for. Reported: the median GB/s (1e9 bytes) over the
 * rounds, and each mgcomm method's ratio to cudaMemcpyPeerAsync; and the host's time per call
 * (the enqueue loop's wall time over reps, median), which is what limits small copies.
 *   mg_p2p_copy        plain pointers (every call asks the driver about both), with a request
 *   mg_p2p_copy, req NULL   the same without a request: ordered on its stream only
 *   mg_buf_copy        buffers (their own record replaces the pointer queries; the destination
 *                      records its last writer), with a request
 *
 * Usage: p2p_vs_memcpy_peer [--min-bytes N] [--max-bytes N] [--rounds R] [--pairs all|self|peers]
 * Prints a markdown table on stdout. Exit 0, 1 on an error, 77 without a GPU.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "mgcomm.h"

#define CK(call)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)
#define MK(call)                                                                         \
  do {                                                                                   \
    mg_status_t s_ = (call);                                                             \
    if (s_ != MG_OK) {                                                                   \
      fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, mg_status_name(s_), \
              mg_last_error());                                                          \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

enum { M_CUDA, M_P2P, M_NOREQ, M_BUF, M_COUNT };
static const char *const method_names[M_COUNT] = {"cudaMemcpyPeerAsync", "mg_p2p_copy",
                                                  "mg_p2p_copy req NULL", "mg_buf_copy"};

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
  int src, dst;
  mg_buf_t *bsrc, *bdst;
  void *psrc, *pdst;
  cudaStream_t stream; /* of dst */
  cudaEvent_t start, end;
} pair_t;

/* reps copies of bytes with method m on the pair's stream; the GPU time in seconds, and the
 * host's time per call in *host_s. */
static double timed(pair_t *p, int m, size_t bytes, int reps, double *host_s) {
  CK(cudaSetDevice(p->dst));
  CK(cudaEventRecord(p->start, p->stream));
  mg_request_t *req = NULL;
  const double t0 = wall();
  for (int i = 0; i < reps; i++) {
    switch (m) {
      case M_CUDA:
        CK(cudaMemcpyPeerAsync(p->pdst, p->dst, p->psrc, p->src, bytes, p->stream));
        break;
      case M_P2P:
        MK(mg_p2p_copy(p->pdst, p->dst, p->psrc, p->src, bytes, (mg_stream_t)p->stream, NULL,
                       &req));
        break;
      case M_NOREQ:
        MK(mg_p2p_copy(p->pdst, p->dst, p->psrc, p->src, bytes, (mg_stream_t)p->stream, NULL,
                       NULL));
        break;
      default:
        MK(mg_buf_copy(p->bdst, 0, p->bsrc, 0, bytes, (mg_stream_t)p->stream, NULL, &req));
        break;
    }
    if (req != NULL && i + 1 < reps) {
      MK(mg_request_free(req)); /* detached: it still completes */
      req = NULL;
    }
  }
  *host_s = (wall() - t0) / reps;
  CK(cudaEventRecord(p->end, p->stream));
  if (req != NULL) {
    MK(mg_request_wait(req, 600));
    MK(mg_request_free(req));
  }
  CK(cudaEventSynchronize(p->end));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, p->start, p->end));
  return (double)ms * 1e-3;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static size_t parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  else if (*end == 'M' || *end == 'm') v <<= 20;
  else if (*end == 'G' || *end == 'g') v <<= 30;
  return (size_t)v;
}

int main(int argc, char **argv) {
  size_t min_bytes = (size_t)64 << 10, max_bytes = (size_t)1 << 30;
  int rounds = 7;
  const char *which = "all";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--min-bytes") == 0) min_bytes = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "--max-bytes") == 0) max_bytes = parse_size(argv[i + 1]);
    else if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--pairs") == 0) which = argv[i + 1];
    else {
      fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (rounds < 1 || rounds > 99 || min_bytes == 0 || max_bytes < min_bytes) {
    fprintf(stderr, "bad --rounds or sizes\n");
    return 2;
  }
  int n = 0;
  if (mg_device_count(&n) != MG_OK || n == 0) {
    printf("SKIP: no GPU: %s\n", mg_last_error());
    return 77;
  }
  int failed = 0;
  MK(mg_p2p_enable_all(&failed));
  MK(mg_p2p_probe(0, 0, &failed));
  printf("GB/s (ratio to %s) | host us per call, for", method_names[M_CUDA]);
  for (int m = 0; m < M_COUNT; m++) printf("%s %s", m ? "," : "", method_names[m]);
  printf("\n\n| src | dst | path | bytes | reps |");
  for (int m = 0; m < M_COUNT; m++) printf(" %s |", method_names[m]);
  printf(" host us: cuda / p2p / req NULL / buf |\n|---|---|---|---|---|");
  for (int m = 0; m <= M_COUNT; m++) printf("---|");
  printf("\n");
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      if ((strcmp(which, "self") == 0 && a != b) || (strcmp(which, "peers") == 0 && a == b))
        continue;
      pair_t p = {a, b, NULL, NULL, NULL, NULL, 0, 0, 0};
      MK(mg_buf_create(a, max_bytes, &p.bsrc));
      MK(mg_buf_create(b, max_bytes, &p.bdst));
      MK(mg_buf_ptr(p.bsrc, &p.psrc));
      MK(mg_buf_ptr(p.bdst, &p.pdst));
      CK(cudaSetDevice(b));
      CK(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking));
      CK(cudaEventCreate(&p.start));
      CK(cudaEventCreate(&p.end));
      mg_p2p_pair_info_t pi;
      MK(mg_p2p_pair_info(a, b, &pi));
      static const char *const paths[] = {"local", "peer", "staged"};
      for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
        /* Enough copies that a round lasts about 2 ms or more at NVLink speed, at most 200. */
        size_t r = ((size_t)512 << 20) / bytes;
        const int reps = r < 4 ? 4 : r > 200 ? 200 : (int)r;
        double gbps[M_COUNT][99], host[M_COUNT][99], h;
        for (int m = 0; m < M_COUNT; m++) (void)timed(&p, m, bytes, 2, &h); /* warm-up */
        for (int k = 0; k < rounds; k++)
          for (int j = 0; j < M_COUNT; j++) {
            const int m = (j + k) % M_COUNT;
            gbps[m][k] = (double)bytes * reps / timed(&p, m, bytes, reps, &host[m][k]) / 1e9;
          }
        double med[M_COUNT], hmed[M_COUNT];
        for (int m = 0; m < M_COUNT; m++) {
          qsort(gbps[m], (size_t)rounds, sizeof gbps[m][0], cmp_dbl);
          qsort(host[m], (size_t)rounds, sizeof host[m][0], cmp_dbl);
          med[m] = gbps[m][rounds / 2];
          hmed[m] = host[m][rounds / 2];
        }
        printf("| %d | %d | %s | %zu | %d | %.1f |", a, b, paths[pi.path], bytes, reps,
               med[M_CUDA]);
        for (int m = 1; m < M_COUNT; m++) printf(" %.1f (%.3f) |", med[m], med[m] / med[M_CUDA]);
        for (int m = 0; m < M_COUNT; m++) printf("%s%.1f", m ? " / " : " ", hmed[m] * 1e6);
        printf(" |\n");
        fflush(stdout);
      }
      CK(cudaStreamDestroy(p.stream));
      CK(cudaEventDestroy(p.start));
      CK(cudaEventDestroy(p.end));
      MK(mg_buf_destroy(p.bsrc));
      MK(mg_buf_destroy(p.bdst));
    }
  return 0;
}
