/*
 * spinlock.h -- the CPU's spin-wait hint, and a lock for sections of a few stores that every
 * operation enters (the flight recorder's ring).
 *
 * Why not a pthread mutex there: an uncontended lock and unlock pair of glibc's mutex is ~55
 * instructions and two locked instructions; this lock is one atomic exchange to take and a plain
 * release store to give back (the recorder's two pairs were 261 of the ~1850 instructions of an
 * 8-byte host all_reduce, callgrind, 2026-11-24). A waiter spins on a plain load and gives its
 * CPU away after 64 tries, so that a holder that was preempted, or one that copies a whole ring
 * for a dump, can run. Never hold it across anything that can block.
 */
#ifndef MG_BASE_SPINLOCK_H
#define MG_BASE_SPINLOCK_H

#include <sched.h>
#include <stdatomic.h>

/* The hint for a spin-wait loop: the CPU slows the loop down and gives a sibling thread its
 * resources. */
static inline void mg__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

typedef struct mg__spinlock {
  atomic_int held; /* 0 (as calloc leaves it): free */
} mg__spinlock_t;

static inline void mg__spin_lock(mg__spinlock_t *l) {
  unsigned tries = 0;
  while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire)) {
    while (atomic_load_explicit(&l->held, memory_order_relaxed)) {
      if (++tries < 64)
        mg__cpu_relax();
      else
        sched_yield();
    }
  }
}

static inline void mg__spin_unlock(mg__spinlock_t *l) {
  atomic_store_explicit(&l->held, 0, memory_order_release);
}

#endif
