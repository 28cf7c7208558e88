/*
 * host_copy.h -- the host backend's copies of collective data.
 *
 * glibc's memcpy moves copies from 4 KiB to a few hundred KiB with `rep movsb`, which runs at
 * 2-3 GB/s instead of 35-50 on the development VM's AMD CPU when the destination lies 1 to 31
 * bytes past the source modulo 4 KiB (its loads wait on the stores just made to the same low 12
 * address bits), and at 25-37 GB/s from 40 to 56 bytes. That is the common case of a copy from
 * the backend's page-aligned slots and mails into a malloc'd buffer (16 bytes into its page):
 * found by bench/mpi_paired.c, where mgcomm's 128 KiB all_gather between two processes took 3x
 * Open MPI's time with such buffers and 0.9x with page-aligned ones. Copied backward, every load
 * comes before the stores that alias it: 22-25 GB/s whatever the offsets. From 512 KiB (the L2
 * size, where glibc stops using rep movsb on AMD) memcpy is fast at any offset again (33-35
 * GB/s) and keeps those copies.
 */
#ifndef MG_BACKEND_HOST_COPY_H
#define MG_BACKEND_HOST_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* memcpy(dst, src, n) for buffers that do not overlap. */
static inline void mg__copy(void *dst, const void *src, size_t n) {
  const uintptr_t ahead = ((uintptr_t)dst - (uintptr_t)src) & 4095;
  if (n < 2048 || n >= 512 * 1024 || ahead == 0 || ahead >= 64) { /* see above */
    memcpy(dst, src, n);
    return;
  }
  unsigned char *d = dst;
  const unsigned char *s = src;
  size_t i = n;
  while (i >= 64) {
    i -= 64;
    unsigned char t[64]; /* the compiler keeps it in registers */
    memcpy(t, s + i, 64);
    memcpy(d + i, t, 64);
  }
  memcpy(d, s, i);
}

#endif
