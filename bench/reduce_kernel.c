/* reduce_kernel.c -- the host backend's reduction kernel (mg__host_reduce, float32 sum of two
 * sources) against a plain two-input loop compiled here, out of place (dst 16 bytes into its
 * page, as a malloc'd buffer is) and in place (dst the first source), at each size given; each
 * timed over ~400 MB of output, 3 rounds; printed: GB/s of output. Built with the project
 * (bench/CMakeLists.txt: it links the static library, whose internal symbol it calls):
 *   <build>/bench/reduce_kernel [bytes (131072)]... */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/host/host_reduce.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void plain(float *d, const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i];
}

static void measure(size_t bytes) {
  const size_t n = bytes / sizeof(float);
  float *a = aligned_alloc(4096, bytes + 4096), *b = aligned_alloc(4096, bytes + 4096);
  unsigned char *page = aligned_alloc(4096, bytes + 4096);
  if (a == NULL || b == NULL || page == NULL) {
    fprintf(stderr, "reduce_kernel: no memory for %zu bytes\n", bytes);
    exit(1);
  }
  float *d = (float *)(void *)(page + 16);
  for (size_t i = 0; i < n; i++) a[i] = (float)i, b[i] = (float)(2 * i);
  mg__redop_t op;
  memset(&op, 0, sizeof op);
  op.op = MG_SUM;
  const void *apart[2] = {a, b}, *in_place[2] = {d, b};
  const int reps = bytes >= 40000000 ? 10 : (int)(400000000 / bytes);
  for (int round = 0; round < 3; round++) {
    double t[5];
    t[0] = now();
    for (int r = 0; r < reps; r++) mg__host_reduce(d, apart, 2, n, MG_FLOAT32, &op, 2);
    t[1] = now();
    for (int r = 0; r < reps; r++) {
      plain(d, a, b, n);
      __asm__ volatile("" ::: "memory"); /* every call's stores happen */
    }
    t[2] = now();
    for (int r = 0; r < reps; r++) mg__host_reduce(d, in_place, 2, n, MG_FLOAT32, &op, 2);
    t[3] = now();
    for (int r = 0; r < reps; r++) {
      plain(d, d, b, n);
      __asm__ volatile("" ::: "memory");
    }
    t[4] = now();
    const double gb = (double)bytes * reps * 1e-9;
    printf("%zu B: mg__host_reduce %.1f GB/s, plain loop %.1f; in place %.1f and %.1f\n", bytes,
           gb / (t[1] - t[0]), gb / (t[2] - t[1]), gb / (t[3] - t[2]), gb / (t[4] - t[3]));
  }
  free(a);
  free(b);
  free(page);
}

int main(int argc, char **argv) {
  if (argc < 2) measure(131072);
  for (int i = 1; i < argc; i++) measure(strtoull(argv[i], NULL, 0));
  return 0;
}
