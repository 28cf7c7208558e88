/*
 * log.h -- leveled, subsystem-filtered logging (MGCOMM_DEBUG, MGCOMM_DEBUG_SUBSYS,
 * MGCOMM_DEBUG_FILE). The level check is one relaxed atomic load before any formatting.
 * Lines carry host:pid:tid and, when the thread is working for a rank, [rank].
 */
#ifndef MG_BASE_LOG_H
#define MG_BASE_LOG_H

#include <stdatomic.h>

enum {
  MG_LOG_NONE = 0,
  MG_LOG_WARN = 1,
  MG_LOG_INFO = 2,
  MG_LOG_TRACE = 3
};

enum {
  MG_SUBSYS_INIT = 1u << 0,
  MG_SUBSYS_LOAD = 1u << 1,
  MG_SUBSYS_COLL = 1u << 2,
  MG_SUBSYS_P2P = 1u << 3,
  MG_SUBSYS_SHMEM = 1u << 4,
  MG_SUBSYS_BOOT = 1u << 5,
  MG_SUBSYS_ENV = 1u << 6,
  MG_SUBSYS_WORLD = 1u << 7,
  MG_SUBSYS_ALL = 0xffffffffu
};

extern atomic_int mg__log_level_v;  /* -1 until initialised */
extern unsigned mg__log_mask_v;     /* written once, before mg__log_level_v is published */

int mg__log_init_level(void);
void mg__log(int level, unsigned subsys, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The rank this thread works for, shown in log lines; -1 for none. Set by every operation. */
extern _Thread_local int mg__log_rank;
static inline void mg__log_set_rank(int rank) { mg__log_rank = rank; }

static inline int mg__log_on(int level, unsigned subsys) {
  int l = atomic_load_explicit(&mg__log_level_v, memory_order_acquire);
  if (l < 0) l = mg__log_init_level();
  return l >= level && (mg__log_mask_v & subsys) != 0;
}

#define MG_WARN(...)                                                          \
  do {                                                                        \
    if (mg__log_on(MG_LOG_WARN, MG_SUBSYS_ALL))                               \
      mg__log(MG_LOG_WARN, MG_SUBSYS_ALL, __FILE__, __LINE__, __VA_ARGS__);   \
  } while (0)
#define MG_INFO(subsys, ...)                                                  \
  do {                                                                        \
    if (mg__log_on(MG_LOG_INFO, (subsys)))                                    \
      mg__log(MG_LOG_INFO, (subsys), __FILE__, __LINE__, __VA_ARGS__);        \
  } while (0)
#define MG_TRACE(subsys, ...)                                                 \
  do {                                                                        \
    if (mg__log_on(MG_LOG_TRACE, (subsys)))                                   \
      mg__log(MG_LOG_TRACE, (subsys), __FILE__, __LINE__, __VA_ARGS__);       \
  } while (0)

#endif
