/*
 * hash.h -- the 64-bit mixing function that names communicators: the host backend derives the
 * segment names of split and shrink children with it, both backends make comm tags with it
 * (the same on every rank, for trace files and progress tables). Not cryptographic: the host
 * backend's unguessable names come from the secret it mixes, not from the function.
 */
#ifndef MG_BASE_HASH_H
#define MG_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* SplitMix64's finaliser: every input bit affects every output bit. */
static inline uint64_t mg__mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A hash of n bytes, eight at a time (the tail zero-padded). */
static inline uint64_t mg__hash_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = mg__mix64(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t w = 0;
    memcpy(&w, b + i, n - i < 8 ? n - i : 8);
    h = mg__mix64(h ^ w);
  }
  return h;
}

#endif
