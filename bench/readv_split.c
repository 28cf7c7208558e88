/* readv_split.c -- how fast one process can fill its buffer from another's, by the ways the host
 * backend could do it: process_vm_readv by the reader alone (one call, or in chunks), or split
 * with the owner, which writes part of it with process_vm_writev at the same time; against
 * memcpy within one process on one and on two threads (the memory's own speed on one and two
 * CPUs). Each timed 7 times, alternating; printed: the median and best GB/s of each.
 *   cc -O2 bench/readv_split.c -o readv_split -lpthread && ./readv_split [MiB (128)]...
 * Linux only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 7, WAYS = 5 };
static const char *const way_name[WAYS] = {"memcpy, 1 thread", "memcpy, 2 threads",
                                           "readv, one call", "readv, 4 MiB calls",
                                           "readv half + writev half"};

typedef struct {
  _Atomic int go;   /* round * WAYS + way + 1 the owner asks the reader to run */
  _Atomic int done; /* 1 once the reader ran it */
  _Atomic unsigned long dst;
  double secs[WAYS][ROUNDS];
} shared_t;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct { unsigned char *d; const unsigned char *s; size_t n; } half_t;
static void *copy_half(void *arg) {
  half_t *h = arg;
  memcpy(h->d, h->s, h->n);
  return NULL;
}

static void readv_range(pid_t pid, unsigned char *dst, const unsigned char *src, size_t n,
                        size_t chunk) {
  for (size_t o = 0; o < n; o += chunk) {
    size_t len = n - o < chunk ? n - o : chunk;
    struct iovec l = {dst + o, len}, r = {(void *)(src + o), len};
    if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)len) { perror("readv"); exit(1); }
  }
}

int main(int argc, char **argv) {
  for (int a = 1; a < argc || a == 1; a++) {
    const size_t n = (size_t)(argc > 1 ? atol(argv[a]) : 128) << 20;
    shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
    unsigned char *src = malloc(n), *mine = malloc(n);
    memset(src, 1, n);
    memset(mine, 2, n);
    const pid_t owner = getpid();
    pid_t reader = fork();
    if (reader == 0) { /* the reader: its own buffer, filled from the owner's src */
      unsigned char *dst = malloc(n);
      memset(dst, 3, n);
      atomic_store(&sh->dst, (unsigned long)dst);
      for (int k = 1; k <= ROUNDS * WAYS; k++) {
        while (atomic_load(&sh->go) != k) {
        }
        const int way = (k - 1) % WAYS;
        if (way == 2) readv_range(owner, dst, src, n, n);
        if (way == 3) readv_range(owner, dst, src, n, 4u << 20);
        if (way == 4) readv_range(owner, dst, src, n / 2, n / 2);
        atomic_fetch_add(&sh->done, 1);
      }
      _exit(0);
    }
    while (atomic_load(&sh->dst) == 0) {
    }
    unsigned char *rdst = (unsigned char *)atomic_load(&sh->dst);
    for (int k = 1; k <= ROUNDS * WAYS; k++) {
      const int way = (k - 1) % WAYS, round = (k - 1) / WAYS;
      atomic_store(&sh->done, 0);
      double t0 = now();
      if (way == 0) {
        memcpy(mine, src, n);
      } else if (way == 1) {
        pthread_t t;
        half_t h = {mine + n / 2, src + n / 2, n - n / 2};
        pthread_create(&t, NULL, copy_half, &h);
        memcpy(mine, src, n / 2);
        pthread_join(t, NULL);
      } else {
        atomic_store(&sh->go, k);
        if (way == 4) { /* the owner writes the second half while the reader reads the first */
          struct iovec l = {src + n / 2, n - n / 2}, r = {rdst + n / 2, n - n / 2};
          if (process_vm_writev(reader, &l, 1, &r, 1, 0) != (ssize_t)(n - n / 2)) {
            perror("writev");
            return 1;
          }
        }
        while (atomic_load(&sh->done) != 1) {
        }
      }
      sh->secs[way][round] = now() - t0;
      if (way < 2) { /* the reader has nothing to do in the memcpy ways: it only counts them */
        atomic_store(&sh->go, k);
        while (atomic_load(&sh->done) != 1) {
        }
      }
    }
    waitpid(reader, NULL, 0);
    printf("%zu MiB:\n", n >> 20);
    for (int w = 0; w < WAYS; w++) {
      qsort(sh->secs[w], ROUNDS, sizeof(double), cmp);
      printf("  %-26s median %6.2f GB/s, best %6.2f GB/s\n", way_name[w],
             (double)n / sh->secs[w][ROUNDS / 2] * 1e-9, (double)n / sh->secs[w][0] * 1e-9);
    }
    free(src);
    free(mine);
    munmap(sh, sizeof *sh);
  }
  return 0;
}
