/* readv_seg.c -- how fast one process reads another's buffer with process_vm_readv, by segment
 * size: the child holds a buffer of N bytes, the parent reads all of it in segments of 16 KiB to
 * N (one call per segment), best of R rounds; against memcpy within the process and a read of
 * the process's own buffer (process_vm_readv of its own pid, what src/backend/host/host_readv.c
 * times). The measurement behind MGCOMM_HOST_READV_MAX_BYTES (host_coll.c, mg__readv_bound).
 *   cc -O2 bench/readv_seg.c -o readv_seg && ./readv_seg [bytes (8 MiB)] [rounds (20)] */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 8u << 20;
  int rounds = argc > 2 ? atoi(argv[2]) : 20;
  unsigned char *src = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  unsigned char *dst = malloc(n);
  memset(src, 1, n);
  memset(dst, 2, n);
  int p[2];
  if (pipe(p) != 0) return 1;
  pid_t child = fork();
  if (child == 0) { /* owns a private copy of the buffer at the same address */
    unsigned char *own = malloc(n);
    memset(own, 3, n);
    uintptr_t a = (uintptr_t)own;
    if (write(p[1], &a, sizeof a) != sizeof a) _exit(1);
    pause();
    _exit(0);
  }
  uintptr_t remote;
  if (read(p[0], &remote, sizeof remote) != sizeof remote) return 1;
  double best = 1e9;
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    memcpy(dst, src, n);
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("bytes %zu memcpy %.2f GB/s\n", n, (double)n / best * 1e-9);
  best = 1e9; /* this process reading itself: what the host backend's creator can time alone */
  for (int r = 0; r < rounds; r++) {
    struct iovec l = {dst, n}, rm = {src, n};
    double t0 = now();
    if (process_vm_readv(getpid(), &l, 1, &rm, 1, 0) != (ssize_t)n) { perror("readv"); return 1; }
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("bytes %zu self readv %.2f GB/s\n", n, (double)n / best * 1e-9);
  for (size_t seg = 16384; seg <= n; seg *= 2) {
    best = 1e9;
    for (int r = 0; r < rounds; r++) {
      double t0 = now();
      for (size_t off = 0; off < n; off += seg) {
        size_t len = n - off < seg ? n - off : seg;
        struct iovec l = {dst + off, len}, rm = {(void *)(remote + off), len};
        if (process_vm_readv(child, &l, 1, &rm, 1, 0) != (ssize_t)len) { perror("readv"); return 1; }
      }
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("bytes %zu segment %8zu readv %.2f GB/s\n", n, seg, (double)n / best * 1e-9);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
