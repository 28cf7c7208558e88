/*
 * handle.c -- an open-addressing hash set of live handles under a read-write lock. Lookups (every
 * API call) take the read side; registration and removal (create and destroy) the write side.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/handle.h"

typedef struct {
  const void *p; /* NULL: empty; MG__TOMB: removed */
  int kind;
} mg__slot_t;

#define MG__TOMB ((const void *)(uintptr_t)1)

static pthread_rwlock_t mg__reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static mg__slot_t *mg__slots;  /* capacity mg__cap, a power of two */
static size_t mg__cap, mg__used; /* used counts live entries and tombstones */

static size_t mg__hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

static int mg__grow(void) {
  size_t ncap = mg__cap ? mg__cap * 2 : 64;
  mg__slot_t *n = calloc(ncap, sizeof *n);
  if (n == NULL) return -1;
  size_t live = 0;
  for (size_t i = 0; i < mg__cap; i++) {
    if (mg__slots[i].p == NULL || mg__slots[i].p == MG__TOMB) continue;
    size_t j = mg__hash(mg__slots[i].p) & (ncap - 1);
    while (n[j].p != NULL) j = (j + 1) & (ncap - 1);
    n[j] = mg__slots[i];
    live++;
  }
  free(mg__slots);
  mg__slots = n;
  mg__cap = ncap;
  mg__used = live;
  return 0;
}

mg_status_t mg__handle_register(const void *p, mg__handle_kind_t kind) {
  pthread_rwlock_wrlock(&mg__reg_lock);
  if ((mg__used + 1) * 2 > mg__cap && mg__grow() != 0) {
    pthread_rwlock_unlock(&mg__reg_lock);
    return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot grow the handle registry");
  }
  size_t j = mg__hash(p) & (mg__cap - 1);
  while (mg__slots[j].p != NULL && mg__slots[j].p != MG__TOMB) j = (j + 1) & (mg__cap - 1);
  if (mg__slots[j].p == NULL) mg__used++;
  mg__slots[j].p = p;
  mg__slots[j].kind = (int)kind;
  pthread_rwlock_unlock(&mg__reg_lock);
  return MG_OK;
}

/* Caller holds the lock. Index of p, or -1. */
static long mg__find(const void *p) {
  if (mg__cap == 0 || p == NULL || p == MG__TOMB) return -1;
  size_t j = mg__hash(p) & (mg__cap - 1);
  for (size_t probes = 0; probes < mg__cap && mg__slots[j].p != NULL; probes++) {
    if (mg__slots[j].p == p) return (long)j;
    j = (j + 1) & (mg__cap - 1);
  }
  return -1;
}

void mg__handle_unregister(const void *p) {
  pthread_rwlock_wrlock(&mg__reg_lock);
  long j = mg__find(p);
  if (j >= 0) mg__slots[j].p = MG__TOMB;
  pthread_rwlock_unlock(&mg__reg_lock);
}

int mg__handle_take(const void *p, mg__handle_kind_t kind) {
  pthread_rwlock_wrlock(&mg__reg_lock);
  long j = mg__find(p);
  int ok = j >= 0 && mg__slots[j].kind == (int)kind;
  if (ok) mg__slots[j].p = MG__TOMB;
  pthread_rwlock_unlock(&mg__reg_lock);
  return ok;
}

int mg__handle_valid(const void *p, mg__handle_kind_t kind) {
  pthread_rwlock_rdlock(&mg__reg_lock);
  long j = mg__find(p);
  int ok = j >= 0 && mg__slots[j].kind == (int)kind;
  pthread_rwlock_unlock(&mg__reg_lock);
  return ok;
}

int mg__handle_with(const void *p, mg__handle_kind_t kind, void (*fn)(void *p, void *arg),
                    void *arg) {
  pthread_rwlock_rdlock(&mg__reg_lock);
  long j = mg__find(p);
  int ok = j >= 0 && mg__slots[j].kind == (int)kind;
  if (ok) fn((void *)p, arg);
  pthread_rwlock_unlock(&mg__reg_lock);
  return ok;
}
