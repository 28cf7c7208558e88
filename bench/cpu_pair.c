/*
 * cpu_pair.c -- how fast one CPU stores into cache lines that another CPU has just read, and how
 * fast that other CPU then reads them: the two halves of every staged copy of the host backend
 * (a rank copies into its slot, its readers copy out of it).
 *
 * usage: cpu_pair BYTES [memcpy|stream] [WRITER_CPU READER_CPU] [ROUNDS]
 *
 * Two threads, pinned to the two CPUs (default 0 and 1), take turns on one buffer of BYTES: the
 * writer copies BYTES into it (memcpy, or `stream`: non-temporal 16-byte stores, which bypass
 * the caches), then the reader copies it out with memcpy; ROUNDS (default 2000) turns. Prints
 * the mean time and GB/s of each side's copy. Without the reader's copies the writer's are
 * plain local stores, which is how the cost of the other CPU holding the lines shows.
 * Built with any C11 compiler on x86-64 (`cc -O2 -pthread bench/cpu_pair.c -o cpu_pair`);
 * results: bench/results/2026-11-29-vm-cpu-pair-states.md.
 */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include <emmintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t bytes;
static int stream, rounds = 2000, cpu[2] = {0, 1};
static unsigned char *shared, *from, *to;
static _Atomic int turn; /* 0: the writer's, 1: the reader's */
static double spent[2];  /* seconds in the writer's and in the reader's copies */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* memcpy with non-temporal stores; n a multiple of 16, both buffers 16-byte aligned. */
static void copy_stream(unsigned char *d, const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n; i += 16)
    _mm_stream_si128((__m128i *)(void *)(d + i),
                     _mm_load_si128((const __m128i *)(const void *)(s + i)));
  _mm_sfence();
}

static void *side(void *arg) {
  const int me = (int)(size_t)arg; /* 0 writer, 1 reader */
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu[me], &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    fprintf(stderr, "cpu_pair: cannot pin to CPU %d\n", cpu[me]);
    exit(1);
  }
  for (int k = 0; k < rounds; k++) {
    while (atomic_load(&turn) != me) {
    }
    const double t0 = now();
    if (me == 1) memcpy(to, shared, bytes);
    else if (stream) copy_stream(shared, from, bytes);
    else memcpy(shared, from, bytes);
    spent[me] += now() - t0;
    atomic_store(&turn, 1 - me);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc == 4) {
    fprintf(stderr, "usage: cpu_pair BYTES [memcpy|stream] [WRITER_CPU READER_CPU] [ROUNDS]\n");
    return 2;
  }
  bytes = strtoul(argv[1], NULL, 0) / 64 * 64;
  stream = argc > 2 && !strcmp(argv[2], "stream");
  if (argc > 4) cpu[0] = atoi(argv[3]), cpu[1] = atoi(argv[4]);
  if (argc > 5) rounds = atoi(argv[5]);
  if (bytes == 0 || rounds < 1) return 2;
  shared = aligned_alloc(4096, bytes);
  from = aligned_alloc(4096, bytes);
  to = aligned_alloc(4096, bytes);
  if (!shared || !from || !to) return 1;
  memset(shared, 1, bytes);
  memset(from, 2, bytes);
  memset(to, 3, bytes);
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, side, (void *)(size_t)i) != 0) {
      fprintf(stderr, "cpu_pair: cannot start a thread\n");
      return 1;
    }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("CPUs %d -> %d, %zu B, %s: stores %.2f us (%.1f GB/s), reads %.2f us (%.1f GB/s)\n",
         cpu[0], cpu[1], bytes, stream ? "stream" : "memcpy", spent[0] / rounds * 1e6,
         (double)bytes * rounds / spent[0] * 1e-9, spent[1] / rounds * 1e6,
         (double)bytes * rounds / spent[1] * 1e-9);
  return 0;
}
