/*
 * handle.c -- an open-addressing hash set of live handles. Lookups (every API call) read it;
 * registration and removal (create and destroy) write it.
 *
 * Two kinds of readers, neither of which writes a shared line:
 *  - mg__handle_valid, on every call, is a sequence lock's reader: it reads the sequence number,
 *    looks p up, and takes the answer only if the number is even and unchanged; otherwise a
 *    writer was at work, and it looks again. So the common lookup writes nothing at all. A table
 *    that a writer replaced (grow) is never freed while the process runs, since such a reader may
 *    still be reading it; tables double, so the kept ones take less room than the live one.
 *  - mg__handle_with, which must keep p registered while fn runs, counts itself in a cache line
 *    of its own (one of MG__RD_SLOTS, picked per thread), so that threads calling the library at
 *    once (the ranks of one process) do not all write one line, as a pthread read-write lock's
 *    reader count makes them do. A writer raises mg__set.writer and waits until every reader
 *    count is zero; a reader that finds it raised backs out and waits for it to fall. A thread
 *    that already reads looks up again without looking at mg__set.writer: the writer waits for
 *    it anyway, and has not yet made the sequence number odd.
 * Writers exclude each other with a mutex.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"
#include "core/handle.h"

typedef struct {
  _Atomic(const void *) p; /* NULL: empty; MG__TOMB: removed */
  atomic_int kind;
} mg__slot_t;

typedef struct mg__table {
  struct mg__table *replaced; /* the table this one replaced, kept (see above) */
  size_t cap;                 /* a power of two */
  mg__slot_t slots[];
} mg__table_t;

#define MG__TOMB ((const void *)(uintptr_t)1)
#define MG__RD_SLOTS 64

static struct {
  _Alignas(64) atomic_uint n;
} mg__readers[MG__RD_SLOTS];
/* What a lookup reads, on one line: written only by writers. */
static struct {
  _Alignas(64) atomic_uint seq;  /* odd while a writer changes the set */
  atomic_int writer;             /* a writer waits for mg__handle_with's readers */
  _Atomic(mg__table_t *) tab;    /* NULL until the first registration */
  size_t used;                   /* live entries and tombstones (the writers') */
} mg__set;
static atomic_uint mg__next_slot;
static pthread_mutex_t mg__write_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local struct {
  int slot;       /* this thread's reader count, -1 until its first read */
  unsigned depth; /* reads this thread holds */
} mg__me = {-1, 0};

static void mg__read_begin(void) {
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

static void mg__read_end(void) {
  mg__me.depth--;
  atomic_fetch_sub_explicit(&mg__readers[mg__me.slot].n, 1, memory_order_release);
}

static void mg__write_begin(void) {
  pthread_mutex_lock(&mg__write_lock);
  atomic_store(&mg__set.writer, 1); /* seq_cst: ordered before the loads of the reader counts */
  for (int i = 0; i < MG__RD_SLOTS; i++)
    while (atomic_load(&mg__readers[i].n) != 0) sched_yield();
  const unsigned v = atomic_load_explicit(&mg__set.seq, memory_order_relaxed);
  atomic_store_explicit(&mg__set.seq, v + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release); /* odd before any change is seen */
}

static void mg__write_end(void) {
  const unsigned v = atomic_load_explicit(&mg__set.seq, memory_order_relaxed);
  atomic_store_explicit(&mg__set.seq, v + 1, memory_order_release); /* after every change */
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

#define MG__LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define MG__STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/* p's slot in t, or NULL. Any reader; the slots may change under a sequence-lock reader, who
 * then discards what it found. */
static mg__slot_t *mg__find(mg__table_t *t, const void *p) {
  if (t == NULL || p == NULL || p == MG__TOMB) return NULL;
  const size_t mask = t->cap - 1;
  size_t j = mg__hash(p) & mask;
  for (size_t probes = 0; probes <= mask; probes++) {
    const void *q = MG__LOAD(t->slots[j].p);
    if (q == p) return &t->slots[j];
    if (q == NULL) return NULL;
    j = (j + 1) & mask;
  }
  return NULL;
}

/* The writers' table. */
static mg__table_t *mg__wtab(void) { return MG__LOAD(mg__set.tab); }

/* Inserts p into t, which has room and holds no p (a writer). Whether it took an empty slot. */
static int mg__insert(mg__table_t *t, const void *p, int kind) {
  size_t j = mg__hash(p) & (t->cap - 1);
  const void *q;
  while ((q = MG__LOAD(t->slots[j].p)) != NULL && q != MG__TOMB) j = (j + 1) & (t->cap - 1);
  MG__STORE(t->slots[j].kind, kind);
  MG__STORE(t->slots[j].p, p);
  return q == NULL;
}

/* Makes room for one more entry, when live entries and tombstones fill half the table: a table
 * twice as large when the live ones fill a quarter, else the same one rebuilt without its
 * tombstones (in place: lookups retry, as for any change). So the table's size follows the
 * number of live handles, however many come and go. */
static int mg__make_room(void) {
  mg__table_t *o = mg__wtab();
  if (o != NULL && (mg__set.used + 1) * 2 <= o->cap) return 0;
  size_t live = 0;
  for (size_t i = 0; o != NULL && i < o->cap; i++) {
    const void *p = MG__LOAD(o->slots[i].p);
    live += p != NULL && p != MG__TOMB;
  }
  const int bigger = o == NULL || (live + 1) * 4 > o->cap;
  const size_t ncap = o == NULL ? 64 : bigger ? o->cap * 2 : o->cap;
  mg__slot_t *keep = malloc((live ? live : 1) * sizeof *keep);
  mg__table_t *t = bigger ? calloc(1, sizeof *t + ncap * sizeof(mg__slot_t)) : o;
  if (keep == NULL || t == NULL) {
    free(keep);
    if (t != o) free(t);
    return -1;
  }
  size_t k = 0;
  for (size_t i = 0; o != NULL && i < o->cap; i++) {
    const void *p = MG__LOAD(o->slots[i].p);
    if (p == NULL || p == MG__TOMB) continue;
    MG__STORE(keep[k].p, p);
    MG__STORE(keep[k].kind, MG__LOAD(o->slots[i].kind));
    k++;
  }
  if (t == o) {
    for (size_t i = 0; i < t->cap; i++) MG__STORE(t->slots[i].p, NULL);
  } else {
    t->replaced = o;
    t->cap = ncap;
  }
  for (size_t i = 0; i < live; i++) mg__insert(t, MG__LOAD(keep[i].p), MG__LOAD(keep[i].kind));
  free(keep);
  if (t != o) atomic_store_explicit(&mg__set.tab, t, memory_order_release); /* filled first */
  mg__set.used = live;
  return 0;
}

size_t mg__handle_capacity(void) {
  pthread_mutex_lock(&mg__write_lock);
  const mg__table_t *t = mg__wtab();
  const size_t cap = t != NULL ? t->cap : 0;
  pthread_mutex_unlock(&mg__write_lock);
  return cap;
}

mg_status_t mg__handle_register(const void *p, mg__handle_kind_t kind) {
  mg__write_begin();
  if (mg__make_room() != 0) {
    mg__write_end();
    return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot grow the handle registry");
  }
  mg__set.used += (size_t)mg__insert(mg__wtab(), p, (int)kind);
  mg__write_end();
  return MG_OK;
}

void mg__handle_unregister(const void *p) {
  mg__write_begin();
  mg__slot_t *e = mg__find(mg__wtab(), p);
  if (e != NULL) MG__STORE(e->p, MG__TOMB);
  mg__write_end();
}

int mg__handle_take(const void *p, mg__handle_kind_t kind) {
  mg__write_begin();
  mg__slot_t *e = mg__find(mg__wtab(), p);
  const int ok = e != NULL && MG__LOAD(e->kind) == (int)kind;
  if (ok) MG__STORE(e->p, MG__TOMB);
  mg__write_end();
  return ok;
}

/* Out of line, so that a lookup that finds no writer at work saves no registers. */
static __attribute__((noinline, cold)) void mg__writer_wait(void) { sched_yield(); }

int mg__handle_valid(const void *p, mg__handle_kind_t kind) {
  for (;;) {
    const unsigned v = atomic_load_explicit(&mg__set.seq, memory_order_acquire);
    if (__builtin_expect(v & 1u, 0)) {
      mg__writer_wait();
      continue;
    }
    const mg__slot_t *e = mg__find(atomic_load_explicit(&mg__set.tab, memory_order_acquire), p);
    const int ok = e != NULL && MG__LOAD(e->kind) == (int)kind;
    atomic_thread_fence(memory_order_acquire); /* the lookup's loads before the second read */
    if (__builtin_expect(atomic_load_explicit(&mg__set.seq, memory_order_relaxed) == v, 1))
      return ok;
  }
}

int mg__handle_with(const void *p, mg__handle_kind_t kind, void (*fn)(void *p, void *arg),
                    void *arg) {
  mg__read_begin();
  const mg__slot_t *e = mg__find(atomic_load_explicit(&mg__set.tab, memory_order_acquire), p);
  const int ok = e != NULL && MG__LOAD(e->kind) == (int)kind;
  if (ok) fn((void *)p, arg);
  mg__read_end();
  return ok;
}
