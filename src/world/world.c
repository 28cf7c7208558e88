/*
 * world.c -- a world's life: create (workers, then one communicator per rank made by its worker),
 * abort, rebuild (a new generation), destroy; the queries and the capability report.
 *
 * Creating and rebuilding send each worker a "make your communicator" item and wait for all of
 * them (a job); every communicator is made by mg_comm_init_rank on its own worker with one new
 * unique id, so a rank's communicator is only ever touched by its worker (abort excepted). The
 * wait is bounded: each init is bounded by the world's timeout_s, and the job by that plus a
 * margin for a worker that is busy in a long callback.
 *
 * Lock order: see world.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "core/config.h"
#include "core/handle.h"
#include "base/log.h"
#include "base/params.h"
#include "core/trace.h"
#include "p2p/p2p.h"
#include "world/world.h"

/* Seconds a create or rebuild waits beyond the init deadline for a busy worker. */
#define MG__WORLD_JOB_MARGIN_S 5.0

int mg__world_on_worker(const mg_world_t *w) {
  for (int r = 0; r < w->n; r++)
    if (mg__worker_is_current(w->workers[r])) return 1;
  return 0;
}

static int mg__breaks_world(mg_status_t st) {
  return st < 0 && st != MG_ERR_INVALID_ARGUMENT && st != MG_ERR_INVALID_USAGE &&
         st != MG_ERR_NOT_SUPPORTED && st != MG_ERR_STALE;
}

int mg__world_cause(mg_status_t have, mg_status_t st) {
  return st < 0 && (have == MG_OK || (have == MG_ERR_REMOTE && st != MG_ERR_REMOTE));
}

void mg__world_part_failed(mg_world_t *w, mg_status_t st, const char *msg) {
  if (!mg__breaks_world(st)) return;
  pthread_mutex_lock(&w->lock);
  if (w->state == MG__WORLD_READY ||
      (w->state == MG__WORLD_ERROR && mg__world_cause(w->error, st))) {
    w->state = MG__WORLD_ERROR;
    w->error = st;
    snprintf(w->errmsg, sizeof w->errmsg, "%s", msg);
  }
  pthread_mutex_unlock(&w->lock);
}

void mg__world_abort_comms(mg_world_t *w) {
  for (int r = 0; r < w->n; r++)
    if (w->comms[r] != NULL) mg__comm_abort_nowait(w->comms[r]);
}

/* ---- jobs: one item per worker, waited for by the thread that sent them ---------------------- */

typedef struct mg__wjob {
  atomic_int refs;          /* the waiter + each item */
  pthread_mutex_t lock;
  pthread_cond_t cv;
  int left;                 /* items not done */
  mg_status_t err;          /* the failure to report (mg__world_cause) */
  char errmsg[MG__ERROR_LEN];
  mg_world_t *w;
  mg_unique_id_t id;        /* the new communicators' */
  uint64_t gen;             /* the generation they belong to */
  int make;                 /* 1: make a communicator; 0: only destroy the old one */
} mg__wjob_t;

typedef struct {
  mg__item_t item;
  mg__wjob_t *job;
  int rank;
} mg__witem_t;

static void mg__wjob_unref(mg__wjob_t *j) {
  if (atomic_fetch_sub(&j->refs, 1) != 1) return;
  pthread_mutex_destroy(&j->lock);
  pthread_cond_destroy(&j->cv);
  free(j);
}

/* On rank r's worker: destroy the old communicator, make the new one. */
static void mg__witem_run(mg__item_t *it) {
  mg__witem_t *wi = (mg__witem_t *)it;
  mg__wjob_t *j = wi->job;
  mg_world_t *w = j->w;
  const int r = wi->rank;
  pthread_mutex_lock(&w->lock);
  mg_comm_t *old = w->comms[r];
  w->comms[r] = NULL; /* from now on nobody else reaches it (nor its stream) */
  w->streams[r] = NULL;
  pthread_mutex_unlock(&w->lock);
  /* Aborted by whoever sent the job; destroying it cannot fail on a valid handle. */
  (void)mg_comm_destroy(old);
  mg_status_t st = MG_OK;
  if (j->make) {
    mg__log_set_rank(r);
    mg_config_t cfg = w->config;
    cfg.device = w->devices[r];
    mg_comm_t *c = NULL;
    mg_stream_t s = NULL;
    st = mg_comm_init_rank(&cfg, w->n, &j->id, r, &c);
    if (st == MG_OK && (c->backend->caps & MG__CAP_STREAM)) {
      st = c->backend->comm_stream(c, &s); /* owned by c: destroyed with it */
      if (st < 0) {
        char keep[MG__ERROR_LEN]; /* destroying c must not replace the reason */
        mg_last_error_copy(keep, sizeof keep);
        (void)mg_comm_destroy(c); /* a valid handle: cannot fail */
        mg__error(st, "rank %d: %s", r, keep);
      }
    } else if (st < 0) {
      mg__error_prefix("rank %d", r);
    }
    if (st == MG_OK) {
      pthread_mutex_lock(&w->lock);
      int current = atomic_load(&w->gen->current) == j->gen && w->state != MG__WORLD_ABORTED &&
                    w->state != MG__WORLD_DEAD;
      if (current) {
        w->comms[r] = c;
        w->streams[r] = s;
      }
      pthread_mutex_unlock(&w->lock);
      if (!current) {
        (void)mg_comm_destroy(c); /* the world moved on (aborted meanwhile): not wanted */
        st = mg__error(MG_ERR_ABORTED, "rank %d: the world was aborted while it was rebuilt", r);
      }
    }
  }
  pthread_mutex_lock(&j->lock);
  if (mg__world_cause(j->err, st)) {
    j->err = st;
    mg_last_error_copy(j->errmsg, sizeof j->errmsg);
  }
  if (--j->left == 0) pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->lock);
  mg__wjob_unref(j);
  free(wi);
}

/* Sends a job to every worker and waits for it (make: new communicators with a new id). */
static mg_status_t mg__world_job(mg_world_t *w, int make, uint64_t gen, const char *fn) {
  mg__wjob_t *j = calloc(1, sizeof *j);
  mg__witem_t **items = calloc((size_t)w->n, sizeof *items);
  mg_status_t st = j == NULL || items == NULL
                       ? mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn)
                       : MG_OK;
  for (int r = 0; r < w->n && st == MG_OK; r++) {
    items[r] = calloc(1, sizeof **items);
    if (items[r] == NULL) st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  if (st == MG_OK && make) {
    st = mg_unique_id_create(w->backend, &j->id);
    if (st < 0) mg__error_prefix("%s", fn);
  }
  if (st < 0) {
    for (int r = 0; items != NULL && r < w->n; r++) free(items[r]);
    free(items);
    free(j);
    return st;
  }
  atomic_init(&j->refs, w->n + 1);
  pthread_mutex_init(&j->lock, NULL);
  pthread_cond_init(&j->cv, NULL);
  j->left = w->n;
  j->w = w;
  j->gen = gen;
  j->make = make;
  for (int r = 0; r < w->n; r++) {
    items[r]->item.run = mg__witem_run;
    items[r]->job = j;
    items[r]->rank = r;
    mg__worker_push(w->workers[r], &items[r]->item);
  }
  free(items);
  const double deadline = mg__now() + w->timeout_s + MG__WORLD_JOB_MARGIN_S;
  pthread_mutex_lock(&j->lock);
  while (j->left > 0 && mg__now() < deadline) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_nsec * 1e-9 + fmin(deadline - mg__now(), 1.0);
    ts.tv_sec += (time_t)t;
    ts.tv_nsec = (long)((t - floor(t)) * 1e9);
    (void)pthread_cond_timedwait(&j->cv, &j->lock, &ts); /* the loop checks again */
  }
  if (j->left > 0)
    st = mg__error(MG_ERR_TIMED_OUT, "%s: %d of %d workers did not finish making their "
                   "communicator in %g s (busy in a callback?)", fn, j->left, w->n,
                   w->timeout_s + MG__WORLD_JOB_MARGIN_S);
  else if (j->err < 0)
    st = mg__error(j->err, "%s: %s", fn, j->errmsg);
  pthread_mutex_unlock(&j->lock);
  mg__wjob_unref(j);
  return st;
}

/* ---- create and destroy ----------------------------------------------------------------------- */

/* Stops the workers (each destroys its communicator first) and frees w. */
static void mg__world_free(mg_world_t *w, int nworkers) {
  for (int r = 0; r < nworkers; r++) {
    mg__witem_t *wi = calloc(1, sizeof *wi);
    mg__wjob_t *j = calloc(1, sizeof *j);
    if (wi != NULL && j != NULL) {
      atomic_init(&j->refs, 1);
      pthread_mutex_init(&j->lock, NULL);
      pthread_cond_init(&j->cv, NULL);
      j->left = 1;
      j->w = w;
      wi->item.run = mg__witem_run;
      wi->job = j;
      wi->rank = r;
      mg__worker_push(w->workers[r], &wi->item);
    } else {
      free(wi);
      free(j);
      /* No memory for the item: the worker is stopped anyway, its comm destroyed here. */
      mg__worker_stop(w->workers[r]);
      w->workers[r] = NULL;
      (void)mg_comm_destroy(w->comms[r]); /* a valid handle or NULL: cannot fail */
      w->comms[r] = NULL;
      w->streams[r] = NULL;
    }
  }
  for (int r = 0; r < nworkers; r++)
    if (w->workers[r] != NULL) mg__worker_stop(w->workers[r]);
  /* Parts whose marks a backend signals on its own thread (NCCL host functions) may still be
   * out: their communicators are aborted, so they come soon. The host backend has none left. */
  const double deadline = mg__now() + w->timeout_s;
  while (atomic_load(&w->inflight) > 0) {
    if (mg__now() > deadline) {
      MG_WARN("mg_world_destroy: %d parts were never signalled; the world's memory is kept",
              atomic_load(&w->inflight));
      return;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL); /* an early wake-up only shortens the nap */
  }
  atomic_store(&w->gen->current, UINT64_MAX);
  mg__gen_unref(w->gen);
  pthread_mutex_destroy(&w->lock);
  w->magic = 0;
  free(w->comms);
  free(w->streams);
  free(w->workers);
  free(w->devices);
  free(w);
}

mg_status_t mg_world_create(const mg_config_t *config, int nranks, const int *devices,
                            mg_world_t **out) {
  static const char fn[] = "mg_world_create";
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (nranks < 1) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: nranks %d < 1", fn, nranks);
  mg_config_t cfg;
  MG_CHECK(mg__config_read(config, fn, &cfg));
  mg_backend_t backend;
  mg_status_t st = mg_backend_resolve(cfg.backend, &backend, NULL, 0);
  if (st < 0) {
    mg__error_prefix("%s", fn);
    return st;
  }
  const mg__backend_t *be = mg__backend_get(backend);
  if (be == NULL || !(be->caps & MG__CAP_MARKS))
    return mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend does not track completion on its "
                     "streams yet, which the world needs", fn, mg_backend_name(backend));
  if (devices != NULL && backend == MG_BACKEND_NCCL)
    for (int i = 0; i < nranks; i++)
      for (int k = 0; k < i; k++)
        if (devices[i] == devices[k])
          return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: devices[%d] and devices[%d] are both %d",
                           fn, k, i, devices[i]);
  mg_world_t *w = calloc(1, sizeof *w);
  if (w == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  w->n = nranks;
  w->config = cfg;
  w->config.backend = backend;
  w->backend = backend;
  w->timeout_s = w->config.timeout_s > 0 ? w->config.timeout_s : mg__param_double(MG_PARAM_TIMEOUT);
  if (w->config.on_timeout != MG_ON_TIMEOUT_DEFAULT)
    w->on_timeout = w->config.on_timeout;
  else
    w->on_timeout = strcmp(mg__param_str(MG_PARAM_ON_TIMEOUT), "report") == 0
                        ? MG_ON_TIMEOUT_REPORT
                        : MG_ON_TIMEOUT_ABORT;
  w->devices = malloc(sizeof *w->devices * (size_t)nranks);
  w->workers = calloc((size_t)nranks, sizeof *w->workers);
  w->comms = calloc((size_t)nranks, sizeof *w->comms);
  w->streams = calloc((size_t)nranks, sizeof *w->streams);
  w->gen = calloc(1, sizeof *w->gen);
  if (w->devices == NULL || w->workers == NULL || w->comms == NULL || w->streams == NULL ||
      w->gen == NULL) {
    free(w->devices);
    free(w->workers);
    free(w->comms);
    free(w->streams);
    free(w->gen);
    free(w);
    return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  }
  for (int r = 0; r < nranks; r++)
    w->devices[r] = backend == MG_BACKEND_HOST ? -1 : devices != NULL ? devices[r] : r;
  atomic_init(&w->gen->current, 1);
  atomic_init(&w->gen->refs, 1);
  atomic_init(&w->inflight, 0);
  pthread_mutex_init(&w->lock, NULL);
  w->state = MG__WORLD_REBUILDING;
  w->magic = MG__WORLD_MAGIC;
  int started = 0;
  for (; started < nranks; started++) {
    char name[16];
    snprintf(name, sizeof name, "mg-rank%d", started);
    st = mg__worker_start(name, w, &w->workers[started]);
    if (st < 0) break;
  }
  if (st == MG_OK) st = mg__world_job(w, 1, 1, fn);
  if (st == MG_OK) st = mg__handle_register(w, MG__HANDLE_WORLD);
  if (st < 0) {
    char keep[MG__ERROR_LEN]; /* freeing must not replace the reason */
    mg_last_error_copy(keep, sizeof keep);
    pthread_mutex_lock(&w->lock);
    w->state = MG__WORLD_DEAD;
    mg__world_abort_comms(w);
    pthread_mutex_unlock(&w->lock);
    mg__world_free(w, started);
    return mg__error(st, "%s", keep);
  }
  pthread_mutex_lock(&w->lock);
  w->state = MG__WORLD_READY;
  pthread_mutex_unlock(&w->lock);
  MG_INFO(MG_SUBSYS_WORLD, "%s: %d ranks on the %s backend", fn, nranks, mg_backend_name(backend));
  *out = w;
  return MG_OK;
}

static mg_status_t mg__world_check(const mg_world_t *w, const char *fn) {
  if (w == NULL) return mg__error(MG_ERR_INVALID_USAGE, "%s: world is NULL", fn);
  if (!mg__handle_valid(w, MG__HANDLE_WORLD))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: world %p is not a live world (destroyed, or not a world)", fn,
                     (const void *)w);
  return MG_OK;
}

mg_status_t mg_world_destroy(mg_world_t *w) {
  static const char fn[] = "mg_world_destroy";
  if (w == NULL) return MG_OK;
  MG_CHECK(mg__world_check(w, fn));
  if (mg__world_on_worker(w))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: called on one of the world's workers (from a callback), which cannot "
                     "stop itself", fn);
  if (!mg__handle_take(w, MG__HANDLE_WORLD))
    return mg__error(MG_ERR_INVALID_USAGE, "%s: world %p was destroyed by another thread", fn,
                     (void *)w);
  pthread_mutex_lock(&w->lock);
  w->state = MG__WORLD_DEAD;
  pthread_mutex_unlock(&w->lock);
  mg__wd_abort(NULL, w->gen, UINT64_MAX, "the world was destroyed");
  atomic_store(&w->gen->current, UINT64_MAX);
  pthread_mutex_lock(&w->lock);
  mg__world_abort_comms(w);
  pthread_mutex_unlock(&w->lock);
  mg__world_free(w, w->n);
  return MG_OK;
}

mg_status_t mg_world_abort(mg_world_t *w) {
  MG_CHECK(mg__world_check(w, "mg_world_abort"));
  pthread_mutex_lock(&w->lock);
  if (w->state == MG__WORLD_ABORTED || w->state == MG__WORLD_DEAD) {
    pthread_mutex_unlock(&w->lock);
    return MG_OK;
  }
  w->state = MG__WORLD_ABORTED; /* refuses new work from now on */
  pthread_mutex_unlock(&w->lock);
  MG_INFO(MG_SUBSYS_WORLD, "mg_world_abort: %d ranks", w->n);
  /* The requests end first, so that none ends with what the aborted communicators answer. */
  mg__wd_abort(NULL, w->gen, UINT64_MAX, "the world was aborted");
  pthread_mutex_lock(&w->lock);
  mg__world_abort_comms(w);
  pthread_mutex_unlock(&w->lock);
  return MG_OK;
}

mg_status_t mg_world_rebuild(mg_world_t *w) {
  static const char fn[] = "mg_world_rebuild";
  MG_CHECK(mg__world_check(w, fn));
  if (mg__world_on_worker(w))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: called on one of the world's workers (from a callback), which would "
                     "wait for itself", fn);
  pthread_mutex_lock(&w->lock);
  if (w->state == MG__WORLD_REBUILDING || w->state == MG__WORLD_DEAD) {
    pthread_mutex_unlock(&w->lock);
    return mg__error(MG_ERR_INVALID_USAGE, "%s: another thread is rebuilding or destroying the "
                     "world", fn);
  }
  w->state = MG__WORLD_REBUILDING;
  const uint64_t gen = atomic_load(&w->gen->current) + 1;
  atomic_store(&w->gen->current, gen);
  pthread_mutex_unlock(&w->lock);
  char msg[96];
  snprintf(msg, sizeof msg, "the world was rebuilt (generation %llu)", (unsigned long long)gen);
  mg__wd_abort(NULL, w->gen, gen, msg); /* before the comms answer with their own errors */
  pthread_mutex_lock(&w->lock);
  mg__world_abort_comms(w);
  pthread_mutex_unlock(&w->lock);
  MG_INFO(MG_SUBSYS_WORLD, "%s: generation %llu", fn, (unsigned long long)gen);
  mg_status_t st = mg__world_job(w, 1, gen, fn);
  pthread_mutex_lock(&w->lock);
  if (w->state == MG__WORLD_REBUILDING) {
    w->state = st == MG_OK ? MG__WORLD_READY : MG__WORLD_ERROR;
    w->error = st;
    if (st < 0) mg_last_error_copy(w->errmsg, sizeof w->errmsg);
  } else if (st == MG_OK) {
    st = mg__error(MG_ERR_ABORTED, "%s: the world was aborted while it was rebuilt", fn);
  }
  pthread_mutex_unlock(&w->lock);
  return st;
}

/* ---- queries ------------------------------------------------------------------------------------ */

mg_status_t mg_world_size(const mg_world_t *w, int *nranks) {
  MG_CHECK(mg__world_check(w, "mg_world_size"));
  if (nranks == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_world_size: nranks is NULL");
  *nranks = w->n;
  return MG_OK;
}

mg_status_t mg_world_generation(const mg_world_t *w, uint64_t *generation) {
  MG_CHECK(mg__world_check(w, "mg_world_generation"));
  if (generation == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_world_generation: generation is NULL");
  *generation = atomic_load(&w->gen->current);
  return MG_OK;
}

mg_status_t mg_world_info(const mg_world_t *w, mg_world_info_t *info) {
  static const char fn[] = "mg_world_info";
  MG_CHECK(mg__world_check(w, fn));
  if (info == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: info is NULL", fn);
  mg_world_info_t out = {w->backend, w->n, atomic_load(&w->gen->current), 0, "", 0, 0};
  if (w->backend == MG_BACKEND_NCCL) {
    mg_library_info_t li;
    if (mg_library_info(MG_LIB_NCCL, &li) == MG_OK && li.loaded) {
      out.nccl_version = li.version;
      out.nccl_version_string = li.version_string;
    }
    if (mg_library_info(MG_LIB_CUDA, &li) == MG_OK && li.loaded) out.cuda_version = li.version;
    for (int f = 0; f < MG_FEATURE_COUNT; f++) {
      mg_feature_info_t fi;
      if (mg_feature_info((mg_feature_t)f, &fi) == MG_OK && fi.available) out.features |= 1u << f;
    }
  }
  *info = out;
  return MG_OK;
}

mg_status_t mg_world_can_access_peer(const mg_world_t *w, int from, int to, int *can_access) {
  static const char fn[] = "mg_world_can_access_peer";
  MG_CHECK(mg__world_check(w, fn));
  if (can_access == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: can_access is NULL", fn);
  if (from < 0 || from >= w->n || to < 0 || to >= w->n)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: ranks %d and %d must be in [0, %d)", fn, from,
                     to, w->n);
  if (w->backend == MG_BACKEND_HOST || from == to) {
    *can_access = 1;
    return MG_OK;
  }
  return mg_device_can_access_peer(w->devices[from], w->devices[to], can_access);
}

mg_status_t mg_world_buf_create(mg_world_t *w, int rank, size_t bytes, mg_buf_t **out) {
  static const char fn[] = "mg_world_buf_create";
  MG_CHECK(mg__world_check(w, fn));
  if (rank < 0 || rank >= w->n)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d must be in [0, %d)", fn, rank, w->n);
  /* The buffer shares the world's generation counter: a rebuild makes it stale. */
  const int device = w->backend == MG_BACKEND_HOST ? MG_BUF_HOST : w->devices[rank];
  return mg__buf_new(device, bytes, w->gen, fn, out);
}

mg_status_t mg_world_dump_trace(mg_world_t *w, const char *dir) {
  static const char fn[] = "mg_world_dump_trace";
  MG_CHECK(mg__world_check(w, fn));
  if (dir == NULL || dir[0] == '\0')
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: dir is NULL or empty", fn);
  mg_status_t first = MG_OK;
  char firstmsg[MG__ERROR_LEN] = "";
  for (int r = 0; r < w->n; r++) {
    pthread_mutex_lock(&w->lock);
    mg__trace_snap_t *snap = w->comms[r] != NULL ? mg__trace_snapshot(w->comms[r], "request") : NULL;
    int none = w->comms[r] == NULL;
    pthread_mutex_unlock(&w->lock);
    mg_status_t st = MG_OK;
    if (none)
      st = mg__error(MG_ERR_INVALID_USAGE, "%s: rank %d has no communicator (rebuild failed?)",
                     fn, r);
    else if (snap == NULL)
      st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: rank %d: %s", fn, r, mg_last_error());
    else
      st = mg__trace_write(snap, dir, fn);
    mg__trace_snap_free(snap);
    if (st < 0 && first == MG_OK) {
      first = st;
      mg_last_error_copy(firstmsg, sizeof firstmsg);
    }
  }
  return first < 0 ? mg__error(first, "%s", firstmsg) : MG_OK;
}
