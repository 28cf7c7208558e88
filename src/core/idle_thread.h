/*
 * idle_thread.h -- a library thread that is started when work arrives and leaves after a while
 * with nothing to do (the callback queue's, the watchdog's). The owner keeps one in its state and
 * guards it with its own lock; every function here is called under that lock.
 */
#ifndef MG_CORE_IDLE_THREAD_H
#define MG_CORE_IDLE_THREAD_H

#include <pthread.h>

typedef struct mg__idle_thread {
  pthread_t th;
  int running;  /* a thread serves the owner */
  int joinable; /* a thread left and was not joined yet */
} mg__idle_thread_t;

/* When no thread runs: joins the one that left (at once: it has left its loop) and starts fn,
 * named `name` for debuggers and ps. 1 when a thread runs, 0 when none could be started. */
static inline int mg__idle_thread_ensure(mg__idle_thread_t *t, void *(*fn)(void *),
                                         const char *name) {
  if (t->running) return 1;
  if (t->joinable) {
    pthread_join(t->th, NULL);
    t->joinable = 0;
  }
  if (pthread_create(&t->th, NULL, fn, NULL) != 0) return 0;
  t->running = 1;
  (void)pthread_setname_np(t->th, name);
  return 1;
}

/* Called by the thread as it leaves its loop. */
static inline void mg__idle_thread_left(mg__idle_thread_t *t) {
  t->running = 0;
  t->joinable = 1;
}

/* At exit: 1 when a thread exists to be joined (outside the lock). */
static inline int mg__idle_thread_exists(const mg__idle_thread_t *t) {
  return t->running || t->joinable;
}

#endif
