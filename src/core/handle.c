/*
 * handle.c -- an open-addressing hash set of live handles. Lookups (every API call) read it;
 * registration and removal (create and destroy) write it.
 *
 * The lock scales with readers: a reader counts itself in a cache line of its own (one of
 * MG__RD_SLOTS, picked per thread), so that threads calling the library at once (the ranks of
 * one process) do not all write one shared line on every call, as a pthread read-write lock's
 * reader count makes them do (a line bouncing between two cores costs about as much as a small
 * collective between them). A writer raises mg__set.writer and waits until every reader count
 * is zero; a reader that finds it raised backs out and waits for it to fall. A thread that
 * already reads (fn of mg__handle_with looking up another handle) reads again without looking at
 * mg__set.writer: the writer waits for it anyway. Writers exclude each other with a mutex.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/handle.h"
#include "core/hot.h"

typedef struct {
  const void *p; /* NULL: empty; MG__TOMB: removed */
  int kind;
} mg__slot_t;

#define MG__TOMB ((const void *)(uintptr_t)1)
#define MG__RD_SLOTS 64

static struct {
  _Alignas(64) atomic_uint n;
} mg__readers[MG__RD_SLOTS];
/* What a lookup reads, on one line: written only by writers. */
static struct {
  _Alignas(64) atomic_int writer;
  mg__slot_t *slots; /* capacity cap, a power of two */
  size_t cap, used;  /* used counts live entries and tombstones */
} mg__set;
static atomic_uint mg__next_slot;
static pthread_mutex_t mg__write_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local struct {
  int slot;       /* this thread's reader count, -1 until its first read */
  unsigned depth; /* reads this thread holds */
} mg__me = {-1, 0};

MG__HOT static void mg__read_begin(void) {
  if (mg__me.slot < 0) mg__me.slot = (int)(atomic_fetch_add(&mg__next_slot, 1) % MG__RD_SLOTS);
  atomic_uint *n = &mg__readers[mg__me.slot].n;
  if (mg__me.depth++ > 0) {
    atomic_fetch_add(n, 1);
    return;
  }
  for (;;) {
    atomic_fetch_add(n, 1); /* seq_cst: ordered before the load of mg__set.writer */
    if (!atomic_load(&mg__set.writer)) return;
    atomic_fetch_sub(n, 1);
    while (atomic_load_explicit(&mg__set.writer, memory_order_relaxed)) sched_yield();
  }
}

MG__HOT static void mg__read_end(void) {
  mg__me.depth--;
  atomic_fetch_sub_explicit(&mg__readers[mg__me.slot].n, 1, memory_order_release);
}

static void mg__write_begin(void) {
  pthread_mutex_lock(&mg__write_lock);
  atomic_store(&mg__set.writer, 1); /* seq_cst: ordered before the loads of the reader counts */
  for (int i = 0; i < MG__RD_SLOTS; i++)
    while (atomic_load(&mg__readers[i].n) != 0) sched_yield();
}

static void mg__write_end(void) {
  atomic_store(&mg__set.writer, 0);
  pthread_mutex_unlock(&mg__write_lock);
}

static size_t mg__hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

static int mg__grow(void) {
  size_t ncap = mg__set.cap ? mg__set.cap * 2 : 64;
  mg__slot_t *n = calloc(ncap, sizeof *n);
  if (n == NULL) return -1;
  size_t live = 0;
  for (size_t i = 0; i < mg__set.cap; i++) {
    if (mg__set.slots[i].p == NULL || mg__set.slots[i].p == MG__TOMB) continue;
    size_t j = mg__hash(mg__set.slots[i].p) & (ncap - 1);
    while (n[j].p != NULL) j = (j + 1) & (ncap - 1);
    n[j] = mg__set.slots[i];
    live++;
  }
  free(mg__set.slots);
  mg__set.slots = n;
  mg__set.cap = ncap;
  mg__set.used = live;
  return 0;
}

mg_status_t mg__handle_register(const void *p, mg__handle_kind_t kind) {
  mg__write_begin();
  if ((mg__set.used + 1) * 2 > mg__set.cap && mg__grow() != 0) {
    mg__write_end();
    return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot grow the handle registry");
  }
  size_t j = mg__hash(p) & (mg__set.cap - 1);
  while (mg__set.slots[j].p != NULL && mg__set.slots[j].p != MG__TOMB)
    j = (j + 1) & (mg__set.cap - 1);
  if (mg__set.slots[j].p == NULL) mg__set.used++;
  mg__set.slots[j].p = p;
  mg__set.slots[j].kind = (int)kind;
  mg__write_end();
  return MG_OK;
}

/* Caller holds the lock. Index of p, or -1. */
static long mg__find(const void *p) {
  if (mg__set.cap == 0 || p == NULL || p == MG__TOMB) return -1;
  size_t j = mg__hash(p) & (mg__set.cap - 1);
  for (size_t probes = 0; probes < mg__set.cap && mg__set.slots[j].p != NULL; probes++) {
    if (mg__set.slots[j].p == p) return (long)j;
    j = (j + 1) & (mg__set.cap - 1);
  }
  return -1;
}

void mg__handle_unregister(const void *p) {
  mg__write_begin();
  long j = mg__find(p);
  if (j >= 0) mg__set.slots[j].p = MG__TOMB;
  mg__write_end();
}

int mg__handle_take(const void *p, mg__handle_kind_t kind) {
  mg__write_begin();
  long j = mg__find(p);
  int ok = j >= 0 && mg__set.slots[j].kind == (int)kind;
  if (ok) mg__set.slots[j].p = MG__TOMB;
  mg__write_end();
  return ok;
}

MG__HOT int mg__handle_valid(const void *p, mg__handle_kind_t kind) {
  mg__read_begin();
  long j = mg__find(p);
  int ok = j >= 0 && mg__set.slots[j].kind == (int)kind;
  mg__read_end();
  return ok;
}

int mg__handle_with(const void *p, mg__handle_kind_t kind, void (*fn)(void *p, void *arg),
                    void *arg) {
  mg__read_begin();
  long j = mg__find(p);
  int ok = j >= 0 && mg__set.slots[j].kind == (int)kind;
  if (ok) fn((void *)p, arg);
  mg__read_end();
  return ok;
}
