/*
 * handle.c -- the registry of live handles: an open-addressing hash set behind a reader-writer
 * lock. Lookups (every API call) take it for reading; registration and removal (create and
 * destroy) for writing. A removed entry leaves a tombstone; when entries and tombstones fill half
 * the table, the writer rebuilds it (twice as large when the live entries fill a quarter) and
 * frees the old one, so the table's size follows the number of live handles.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"
#include "core/handle.h"

typedef struct {
  const void *p; /* NULL: empty; MG__TOMB: removed */
  int kind;
} mg__slot_t;

#define MG__TOMB ((const void *)(uintptr_t)1)
#define MG__MIN_CAP 64

static pthread_rwlock_t mg__lock = PTHREAD_RWLOCK_INITIALIZER;
static mg__slot_t *mg__slots; /* NULL until the first registration */
static size_t mg__cap;        /* a power of two, or 0 */
static size_t mg__used;       /* live entries and tombstones */

static size_t mg__hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

/* p's slot when it is registered with this kind, else NULL. Under the lock. */
static mg__slot_t *mg__find(const void *p, mg__handle_kind_t kind) {
  if (mg__cap == 0 || p == NULL || p == MG__TOMB) return NULL;
  const size_t mask = mg__cap - 1;
  for (size_t j = mg__hash(p) & mask, probes = 0; probes < mg__cap; j = (j + 1) & mask, probes++) {
    if (mg__slots[j].p == p) return mg__slots[j].kind == (int)kind ? &mg__slots[j] : NULL;
    if (mg__slots[j].p == NULL) return NULL;
  }
  return NULL;
}

/* Puts p into slots (cap a power of two, with a free slot, p not in it). Whether it took an empty
 * slot rather than a tombstone. */
static int mg__insert(mg__slot_t *slots, size_t cap, const void *p, int kind) {
  size_t j = mg__hash(p) & (cap - 1);
  while (slots[j].p != NULL && slots[j].p != MG__TOMB) j = (j + 1) & (cap - 1);
  const int fresh = slots[j].p == NULL;
  slots[j].p = p;
  slots[j].kind = kind;
  return fresh;
}

/* Makes room for one more entry (under the write lock): 0, or -1 when memory runs out. */
static int mg__make_room(void) {
  if ((mg__used + 1) * 2 <= mg__cap) return 0;
  size_t live = 0;
  for (size_t i = 0; i < mg__cap; i++) live += mg__slots[i].p != NULL && mg__slots[i].p != MG__TOMB;
  size_t cap = mg__cap < MG__MIN_CAP ? MG__MIN_CAP : mg__cap;
  while ((live + 1) * 4 > cap) cap *= 2;
  mg__slot_t *slots = calloc(cap, sizeof *slots);
  if (slots == NULL) return -1;
  for (size_t i = 0; i < mg__cap; i++)
    if (mg__slots[i].p != NULL && mg__slots[i].p != MG__TOMB)
      mg__insert(slots, cap, mg__slots[i].p, mg__slots[i].kind);
  free(mg__slots);
  mg__slots = slots;
  mg__cap = cap;
  mg__used = live;
  return 0;
}

mg_status_t mg__handle_register(const void *p, mg__handle_kind_t kind) {
  pthread_rwlock_wrlock(&mg__lock);
  const int ok = mg__make_room() == 0;
  if (ok) mg__used += (size_t)mg__insert(mg__slots, mg__cap, p, (int)kind);
  pthread_rwlock_unlock(&mg__lock);
  return ok ? MG_OK : mg__error(MG_ERR_OUT_OF_MEMORY, "cannot grow the handle registry");
}

int mg__handle_take(const void *p, mg__handle_kind_t kind) {
  pthread_rwlock_wrlock(&mg__lock);
  mg__slot_t *s = mg__find(p, kind);
  if (s != NULL) s->p = MG__TOMB;
  pthread_rwlock_unlock(&mg__lock);
  return s != NULL;
}

size_t mg__handle_capacity(void) {
  pthread_rwlock_rdlock(&mg__lock);
  const size_t cap = mg__cap;
  pthread_rwlock_unlock(&mg__lock);
  return cap;
}

int mg__handle_valid(const void *p, mg__handle_kind_t kind) {
  pthread_rwlock_rdlock(&mg__lock);
  const int ok = mg__find(p, kind) != NULL;
  pthread_rwlock_unlock(&mg__lock);
  return ok;
}

int mg__handle_with(const void *p, mg__handle_kind_t kind, void (*fn)(void *p, void *arg),
                    void *arg) {
  pthread_rwlock_rdlock(&mg__lock);
  const int ok = mg__find(p, kind) != NULL;
  if (ok) fn((void *)p, arg);
  pthread_rwlock_unlock(&mg__lock);
  return ok;
}
