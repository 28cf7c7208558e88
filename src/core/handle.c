/*
 * handle.c -- the registry of live handles: an open-addressing hash set behind a reader-writer
 * lock. Lookups (every API call) take it for reading; registration and removal (create and
 * destroy) for writing. A removed entry leaves a tombstone; when entries and tombstones fill half
 * the table, the writer rebuilds it (twice as large when the live entries fill a quarter) and
 * frees the old one, so the table's size follows the number of live handles.
 *
 * The lock is striped: a reader takes the read lock of its own thread's stripe only, a writer
 * the write locks of all stripes (in order). Taking a read lock writes the lock's cache line, and
 * with one lock the threads of a process that call at once (thread ranks) passed that line back
 * and forth on every call: 2 thread ranks took 0.41 us per 8-byte all_reduce, against 0.34 us
 * with no lock at all (2-CPU VM); with a stripe each, as fast as without.
 */
#include <pthread.h>
#include <stdatomic.h>
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

#define MG__STRIPES 16 /* threads beyond 16 share stripes, round robin */
typedef struct {
  _Alignas(64) pthread_rwlock_t lock; /* a cache line (or two) of its own */
} mg__stripe_t;
#define MG__STRIPE {PTHREAD_RWLOCK_INITIALIZER}
static mg__stripe_t mg__stripes[MG__STRIPES] = {
    MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE,
    MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE, MG__STRIPE};
static atomic_uint mg__next_stripe;             /* the stripe of the next new reader thread */
static _Thread_local int mg__my_stripe = -1;    /* this thread's; -1 until its first lookup */
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

/* Read-locks the calling thread's stripe; the lock to release. */
static pthread_rwlock_t *mg__read_lock(void) {
  if (mg__my_stripe < 0)
    mg__my_stripe = (int)(atomic_fetch_add_explicit(&mg__next_stripe, 1, memory_order_relaxed) %
                          MG__STRIPES);
  pthread_rwlock_t *l = &mg__stripes[mg__my_stripe].lock;
  pthread_rwlock_rdlock(l);
  return l;
}

static void mg__write_lock(void) {
  for (int i = 0; i < MG__STRIPES; i++) pthread_rwlock_wrlock(&mg__stripes[i].lock);
}

static void mg__write_unlock(void) {
  for (int i = MG__STRIPES - 1; i >= 0; i--) pthread_rwlock_unlock(&mg__stripes[i].lock);
}

/* p's slot when it is registered with this kind, else NULL. Under a read lock or the write
 * lock. */
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
  mg__write_lock();
  const int ok = mg__make_room() == 0;
  if (ok) mg__used += (size_t)mg__insert(mg__slots, mg__cap, p, (int)kind);
  mg__write_unlock();
  return ok ? MG_OK : mg__error(MG_ERR_OUT_OF_MEMORY, "cannot grow the handle registry");
}

int mg__handle_take(const void *p, mg__handle_kind_t kind) {
  mg__write_lock();
  mg__slot_t *s = mg__find(p, kind);
  if (s != NULL) s->p = MG__TOMB;
  mg__write_unlock();
  return s != NULL;
}

size_t mg__handle_capacity(void) {
  pthread_rwlock_t *l = mg__read_lock();
  const size_t cap = mg__cap;
  pthread_rwlock_unlock(l);
  return cap;
}

int mg__handle_valid(const void *p, mg__handle_kind_t kind) {
  pthread_rwlock_t *l = mg__read_lock();
  const int ok = mg__find(p, kind) != NULL;
  pthread_rwlock_unlock(l);
  return ok;
}

int mg__handle_with(const void *p, mg__handle_kind_t kind, void (*fn)(void *p, void *arg),
                    void *arg) {
  pthread_rwlock_t *l = mg__read_lock();
  const int ok = mg__find(p, kind) != NULL;
  if (ok) fn((void *)p, arg);
  pthread_rwlock_unlock(l);
  return ok;
}
