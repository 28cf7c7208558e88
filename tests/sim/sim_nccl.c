/*
 * sim_nccl.c -- the simulated NCCL's process-wide state: its lock, the environment (version,
 * knobs, NCCL_COMM_BLOCKING, NCCL_DEBUG), errors (strings, the last error, violations), the
 * knob counters, mgsim_control, and the library calls that need no communicator
 * (ncclGetVersion, ncclGetErrorString, ncclGetLastError).
 *
 * Divisions: the lock and the environment; errors; knobs; control; threads.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_nccl_int.h"

pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_cv = PTHREAD_COND_INITIALIZER;

/* ---- the lock and the environment ----------------------------------------------------------- */

static pthread_once_t sim_once = PTHREAD_ONCE_INIT;
static int sim_ver = 22809;
static int sim_blocking_env = -1;
static int sim_debug;                 /* NCCL_DEBUG set: errors go to stderr too */

/* The knobs: rank and nth call (0: off), and per-rank counters. Under sim_lock. */
static int sim_hang_rank = -1, sim_never_rank = -1;
static long sim_hang_nth, sim_never_nth;
long sim_abort_delay_ms;
static long sim_calls[SIM_MAX_RANKS];
static int sim_hung[SIM_MAX_RANKS], sim_held[SIM_MAX_RANKS];

/* "<rank>:<nth>" into *rank and *nth; a malformed value is reported and ignored. */
static void sim_env_knob(const char *var, int *rank, long *nth) {
  const char *s = getenv(var);
  if (s == NULL || *s == '\0') return;
  char *end = NULL;
  long r = strtol(s, &end, 10);
  long n = 0;
  int ok = end != s && *end == ':' && r >= 0 && r < SIM_MAX_RANKS;
  if (ok) {
    const char *p = end + 1;
    n = strtol(p, &end, 10);
    ok = end != p && *end == '\0' && n >= 1;
  }
  if (!ok) {
    fprintf(stderr, "mgsim: %s=%s is not <rank>:<nth> (rank in [0, %d), nth >= 1); ignored\n",
            var, s, SIM_MAX_RANKS);
    return;
  }
  *rank = (int)r;
  *nth = n;
}

static void sim_read_env(void) {
  const char *v = getenv("MGSIM_NCCL_VERSION");
  if (v != NULL && *v != '\0') {
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (*end != '\0' || x < 10000 || x > 99999)
      fprintf(stderr, "mgsim: MGSIM_NCCL_VERSION=%s is not a version code like 22809; using "
              "%d\n", v, sim_ver);
    else
      sim_ver = (int)x;
  }
  const char *b = getenv("NCCL_COMM_BLOCKING");
  if (b != NULL && (strcmp(b, "0") == 0 || strcmp(b, "1") == 0)) sim_blocking_env = b[0] - '0';
  sim_debug = getenv("NCCL_DEBUG") != NULL && strcmp(getenv("NCCL_DEBUG"), "VERSION") != 0;
  pthread_mutex_lock(&sim_lock);
  sim_env_knob("MGSIM_HOST_HANG", &sim_hang_rank, &sim_hang_nth);
  sim_env_knob("MGSIM_NEVER_COMPLETE", &sim_never_rank, &sim_never_nth);
  pthread_mutex_unlock(&sim_lock);
  /* NCCL initialises CUDA itself. Without devices this fails, and so will every call that needs
   * a device, with CUDA's reason. */
  (void)cuInit(0);
}

void sim_nccl_init(void) { pthread_once(&sim_once, sim_read_env); }

int sim_version(void) {
  sim_nccl_init();
  return sim_ver;
}

int sim_env_blocking(void) {
  sim_nccl_init();
  return sim_blocking_env;
}

void sim_require(int since, const char *call) {
  const int v = sim_version();
  if (v < since)
    sim_violation("%s called, but the simulated NCCL is %d.%d.%d, which has no %s (it came in "
                  "%d.%d.%d): a real library of this version lacks the symbol",
                  call, v / 10000, v / 100 % 100, v % 100, call, since / 10000,
                  since / 100 % 100, since % 100);
}

MGSIM_API mg__ncclResult_t ncclGetVersion(int *version) {
  if (version == NULL) return MG__ncclInvalidArgument;
  *version = sim_version();
  return MG__ncclSuccess;
}

/* ---- errors --------------------------------------------------------------------------------- */

static pthread_mutex_t sim_err_lock = PTHREAD_MUTEX_INITIALIZER; /* leaf: sim_last */
static char sim_last[1024];
static _Thread_local char sim_last_copy[1024];

void sim_violation(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "mgsim: VIOLATION: %s\n", msg);
  fflush(stderr);
  abort();
}

mg__ncclResult_t sim_fail(mg__ncclResult_t r, const char *fmt, ...) {
  char msg[sizeof sim_last - 8];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&sim_err_lock);
  snprintf(sim_last, sizeof sim_last, "mgsim: %s", msg);
  pthread_mutex_unlock(&sim_err_lock);
  if (sim_debug) fprintf(stderr, "mgsim NCCL WARN %s\n", msg);
  return r;
}

MGSIM_API const char *ncclGetErrorString(mg__ncclResult_t result) {
  switch (result) {
    case MG__ncclSuccess: return "no error";
    case MG__ncclUnhandledCudaError: return "unhandled cuda error (the simulated CUDA driver "
                                            "refused a call)";
    case MG__ncclSystemError: return "unhandled system error (out of memory, or no thread)";
    case MG__ncclInternalError: return "internal error (in the simulator: aborted, or a "
                                       "simulated fault)";
    case MG__ncclInvalidArgument: return "invalid argument";
    case MG__ncclInvalidUsage: return "invalid usage";
    case MG__ncclRemoteError: return "remote process exited or there was a network error";
    case MG__ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

/* NCCL keeps one last error for the process and ignores comm. The text is copied into a buffer
 * of the calling thread, so that another thread's failure cannot change it while it is read. */
MGSIM_API const char *ncclGetLastError(mg__ncclComm_t comm) {
  (void)comm;
  pthread_mutex_lock(&sim_err_lock);
  memcpy(sim_last_copy, sim_last, sizeof sim_last_copy);
  pthread_mutex_unlock(&sim_err_lock);
  return sim_last_copy;
}

/* ---- knobs ---------------------------------------------------------------------------------- */

void sim_knob_count(int rank, int *hang, int *never) {
  *hang = *never = 0;
  if (rank < 0 || rank >= SIM_MAX_RANKS) return;
  const long n = ++sim_calls[rank];
  *hang = rank == sim_hang_rank && n == sim_hang_nth;
  *never = rank == sim_never_rank && n == sim_never_nth;
}

void sim_knob_hung(int rank, int delta) {
  if (rank >= 0 && rank < SIM_MAX_RANKS) sim_hung[rank] += delta;
}

void sim_knob_held(int rank, int delta) {
  if (rank >= 0 && rank < SIM_MAX_RANKS) sim_held[rank] += delta;
}

/* Sum of a per-rank counter over rank r, or every rank for r = -1. */
static long sim_sum_l(const long *v, long r) {
  if (r >= 0) return r < SIM_MAX_RANKS ? v[r] : 0;
  long s = 0;
  for (int i = 0; i < SIM_MAX_RANKS; i++) s += v[i];
  return s;
}

static long sim_sum_i(const int *v, long r) {
  if (r >= 0) return r < SIM_MAX_RANKS ? v[r] : 0;
  long s = 0;
  for (int i = 0; i < SIM_MAX_RANKS; i++) s += v[i];
  return s;
}

/* ---- control -------------------------------------------------------------------------------- */

MGSIM_API int mgsim_control(const char *key, long value) {
  sim_nccl_init();
  if (key == NULL) return -1;
  int out = 0;
  pthread_mutex_lock(&sim_lock);
  if (strcmp(key, "host_hang_rank") == 0) {
    sim_hang_rank = (int)value;
  } else if (strcmp(key, "host_hang_nth") == 0) {
    sim_hang_nth = value;
  } else if (strcmp(key, "never_complete_rank") == 0) {
    sim_never_rank = (int)value;
  } else if (strcmp(key, "never_complete_nth") == 0) {
    sim_never_nth = value;
  } else if (strcmp(key, "abort_delay_ms") == 0) {
    sim_abort_delay_ms = value;
  } else if (strcmp(key, "reset_calls") == 0) {
    memset(sim_calls, 0, sizeof sim_calls);
  } else if (strcmp(key, "calls") == 0) {
    out = (int)sim_sum_l(sim_calls, value);
  } else if (strcmp(key, "host_hung") == 0) {
    out = (int)sim_sum_i(sim_hung, value);
  } else if (strcmp(key, "never_held") == 0) {
    out = (int)sim_sum_i(sim_held, value);
  } else if (strcmp(key, "version") == 0) {
    out = sim_ver;
  } else if (strcmp(key, "inside") == 0 || strcmp(key, "comms") == 0 ||
             strcmp(key, "items") == 0 || strcmp(key, "jobs") == 0 ||
             strcmp(key, "channels") == 0) {
    out = sim_comm_gauge(key, (int)value);
  } else {
    pthread_mutex_unlock(&sim_lock);
    return mgsim_cuda_control(key, value); /* the driver's getters, or "unknown key" */
  }
  pthread_mutex_unlock(&sim_lock);
  return out;
}

/* ---- threads -------------------------------------------------------------------------------- */

/* What a spawned thread runs: it names itself (for debuggers only), then runs fn. Named by
 * itself, not by its creator: a detached thread may have ended, and its handle be gone, by the
 * time pthread_create returns (the likely cause of a crash of nccl_sim_smoke_nonblocking in CI). */
typedef struct {
  void *(*fn)(void *);
  void *arg;
  char name[16];
} sim_spawned_t;

static void *sim_spawned_main(void *p) {
  sim_spawned_t sp = *(sim_spawned_t *)p;
  free(p);
  (void)pthread_setname_np(pthread_self(), sp.name);
  return sp.fn(sp.arg);
}

int sim_spawn(void *(*fn)(void *), void *arg, const char *name) {
  sim_spawned_t *sp = malloc(sizeof *sp);
  if (sp == NULL) return ENOMEM;
  sp->fn = fn;
  sp->arg = arg;
  snprintf(sp->name, sizeof sp->name, "%s", name);
  pthread_attr_t at;
  pthread_t th;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&th, &at, sim_spawned_main, sp);
  pthread_attr_destroy(&at);
  if (rc != 0) free(sp);
  return rc;
}
