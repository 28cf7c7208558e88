/*
 * comm.c -- communicator lifecycle and queries: init (one rank, all ranks), split, shrink,
 * finalize, abort, destroy. Arguments and states are checked here; the backend does the work.
 *
 * Locking: lifecycle calls and operations take comm->lock. Abort does not wait for it before it
 * has set comm->aborting and interrupted the backend, so an operation blocked under the lock
 * notices the flag and returns; then abort takes the lock to release the backend's resources.
 * Every wait done under comm->lock watches comm->aborting (backend contract).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/handle.h"
#include "base/log.h"
#include "base/params.h"
#include "core/request.h"
#include "core/stream.h"
#include "core/trace.h"

#define MG__LINE 64 /* bytes of a cache line */

static const char *mg__state_name(int state) {
  switch (state) {
    case MG_COMM_READY: return "ready";
    case MG_COMM_ERROR: return "in the error state";
    case MG_COMM_ABORTED: return "aborted";
    case MG_COMM_FINALIZED: return "finalized";
  }
  return "in an unknown state";
}

static void mg__comm_ref(void *p, void *arg) {
  (void)arg;
  atomic_fetch_add(&((mg_comm_t *)p)->refs, 1);
}

int mg__comm_hold(mg_comm_t *comm) { return mg__handle_with(comm, MG__HANDLE_COMM, mg__comm_ref, NULL); }

void mg__comm_leave(mg_comm_t *comm) { atomic_fetch_sub(&comm->refs, 1); }

mg_status_t mg__comm_enter(mg_comm_t *comm, const char *fn) {
  if (comm == NULL) return mg__error(MG_ERR_INVALID_USAGE, "%s: comm is NULL", fn);
  if (!mg__comm_hold(comm))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: comm %p is not a live communicator (destroyed, or not a comm)", fn,
                     (void *)comm);
  return MG_OK;
}

mg_status_t mg__comm_enter_ready(mg_comm_t *comm, const char *fn) {
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__comm_check_state(comm, fn);
  if (st < 0) mg__comm_leave(comm);
  return st;
}

mg_status_t mg__comm_check_state(mg_comm_t *comm, const char *fn) {
  int state = atomic_load(&comm->state);
  if (state == MG_COMM_READY && atomic_load(&comm->suspended))
    return mg__error(MG_ERR_INVALID_USAGE, "%s: comm (rank %d of %d) is suspended; call "
                     "mg_comm_resume first", fn, comm->rank, comm->nranks);
  if (state == MG_COMM_READY) return MG_OK;
  if (state == MG_COMM_ERROR) {
    mg_status_t why = (mg_status_t)atomic_load(&comm->async_error);
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: comm (rank %d of %d) is in the error state after %s; only shrink, "
                     "abort, destroy and queries are accepted",
                     fn, comm->rank, comm->nranks, mg_status_name(why));
  }
  return mg__error(MG_ERR_INVALID_USAGE,
                   "%s: comm (rank %d of %d) is %s; only destroy and queries are accepted", fn,
                   comm->rank, comm->nranks, mg__state_name(state));
}

void mg__comm_save_error(mg_comm_t *comm) {
  pthread_mutex_lock(&comm->err_lock);
  mg_last_error_copy(comm->last_error, sizeof comm->last_error);
  pthread_mutex_unlock(&comm->err_lock);
}

void mg__comm_fail(mg_comm_t *comm, mg_status_t status) {
  int expected = MG_OK;
  atomic_compare_exchange_strong(&comm->async_error, &expected, (int)status);
  int ready = MG_COMM_READY;
  atomic_compare_exchange_strong(&comm->state, &ready, MG_COMM_ERROR);
  mg__comm_save_error(comm);
}

double mg__comm_deadline(const mg_comm_t *comm) { return mg__now() + comm->timeout_s; }

/* A config that mg__config_read wrote (this library's layout), or the defaults for NULL. */
static void mg__config_copy(mg_config_t *dst, const mg_config_t *src) {
  mg_config_t def = MG_CONFIG_INIT;
  *dst = src != NULL ? *src : def;
}

mg_status_t mg__comm_alloc(const mg__backend_t *backend, const mg_config_t *config,
                           mg_comm_t **out) {
  /* The backend's state follows the core's. The whole object starts on a cache line and fills
   * whole lines: the rank threads of one process each write their own communicator on every
   * operation, and a line shared with another rank's communicator (adjacent allocations) would
   * make every one of those writes a miss for the other rank (a world's 8 submitting threads ran
   * 2.4 times slower with the object merely aligned for any type). */
  const size_t head = (sizeof(mg_comm_t) + MG__LINE - 1) / MG__LINE * MG__LINE;
  const size_t bytes = (head + backend->comm_priv_size + MG__LINE - 1) / MG__LINE * MG__LINE;
  mg_comm_t *comm = aligned_alloc(MG__LINE, bytes);
  if (comm == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot allocate a communicator");
  memset(comm, 0, bytes);
  comm->backend = backend;
  mg__config_copy(&comm->config, config);
  comm->config.backend = backend->id;
  comm->timeout_s =
      comm->config.timeout_s > 0 ? comm->config.timeout_s : mg__param_double(MG_PARAM_TIMEOUT);
  comm->check_colls =
      backend->check_exchange != NULL && mg__param_int(MG_PARAM_CHECK_COLLECTIVES) == 1;
  const mg_config_t *c = &comm->config;
  if (c->completion != MG_COMPLETION_DEFAULT) {
    comm->completion = c->completion;
  } else {
    const char *v = mg__param_str(MG_PARAM_COMPLETION);
    comm->completion = strcmp(v, "poll") == 0   ? MG_COMPLETION_POLL
                       : strcmp(v, "sync") == 0 ? MG_COMPLETION_SYNC
                                                : MG_COMPLETION_HOSTFN;
  }
  comm->poll_interval =
      c->poll_interval_s > 0 ? c->poll_interval_s : mg__param_double(MG_PARAM_POLL_INTERVAL);
  if (c->on_timeout != MG_ON_TIMEOUT_DEFAULT)
    comm->on_timeout = c->on_timeout;
  else if (strcmp(mg__param_str(MG_PARAM_ON_TIMEOUT), "report") == 0)
    comm->on_timeout = MG_ON_TIMEOUT_REPORT;
  else
    comm->on_timeout = MG_ON_TIMEOUT_ABORT;
  int entries = c->trace_entries == 0    ? (int)mg__param_int(MG_PARAM_TRACE_ENTRIES)
                : c->trace_entries < 0 ? 0
                                       : c->trace_entries;
  if (mg__trace_create(comm, entries) < 0) {
    free(comm);
    return MG_ERR_OUT_OF_MEMORY;
  }
  comm->device = -1;
  pthread_mutex_init(&comm->lock, NULL);
  pthread_mutex_init(&comm->err_lock, NULL);
  pthread_mutex_init(&comm->redop_lock, NULL);
  pthread_mutex_init(&comm->seq_lock, NULL);
  atomic_init(&comm->state, MG_COMM_READY);
  atomic_init(&comm->async_error, MG_OK);
  atomic_init(&comm->aborting, 0);
  atomic_init(&comm->abort_done, 0);
  atomic_init(&comm->refs, 0);
  atomic_init(&comm->call_deadline, 0.0);
  atomic_init(&comm->call_expired, 0);
  comm->priv = (char *)comm + head;
  *out = comm;
  return MG_OK;
}

void mg__comm_free(mg_comm_t *comm) {
  if (comm == NULL) return;
  /* A comm published and then thrown away with the rest of its creation (mg_comm_init_all)
   * leaves the watchdog here; destroy has done it already (a second time finds nothing). */
  if (comm->blocking_calls) mg__wd_guard(comm, 0);
  for (mg__custom_op_t *c = comm->custom_ops, *n; c != NULL; c = n) {
    n = c->next;
    free(c);
  }
  mg__reg_free_all(comm);
  if (comm->ext != NULL && comm->ext->release != NULL) comm->ext->release(comm->ext_state);
  mg__trace_destroy(comm);
  pthread_mutex_destroy(&comm->lock);
  pthread_mutex_destroy(&comm->err_lock);
  pthread_mutex_destroy(&comm->redop_lock);
  pthread_mutex_destroy(&comm->seq_lock);
  free(comm->p2p_seq);
  free(comm);
}

/* Sizes the per-peer tables and registers the handle: the last step of every creation. */
mg_status_t mg__comm_publish(mg_comm_t *comm) {
  comm->p2p_seq = calloc(2 * (size_t)comm->nranks, sizeof *comm->p2p_seq);
  if (comm->p2p_seq == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot allocate peer tables");
  MG_CHECK(mg__handle_register(comm, MG__HANDLE_COMM));
  if (comm->blocking_calls) mg__wd_guard(comm, 1);
  return MG_OK;
}

/* Reads the caller's config into cfg (core/config.c) and resolves its backend. */
mg_status_t mg__config_backend(const mg_config_t *config, const char *fn, mg_config_t *cfg,
                               const mg__backend_t **out) {
  MG_CHECK(mg__config_read(config, fn, cfg));
  mg_backend_t id;
  mg_status_t st = mg_backend_resolve(cfg->backend, &id, NULL, 0);
  if (st < 0) {
    mg__error_prefix("%s", fn);
    return st;
  }
  *out = mg__backend_get(id);
  MG_ASSERT(*out != NULL); /* resolve only returns backends that are built in */
  return MG_OK;
}

mg_status_t mg_unique_id_create(mg_backend_t backend, mg_unique_id_t *id) {
  if (id == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_unique_id_create: id is NULL");
  /* A backend asked for by name makes its id with what it needs for that alone (NCCL: the
   * library, no GPU), so that a launcher without a GPU can make ids for GPU ranks. AUTO has to
   * resolve as init will. */
  mg_backend_t resolved = backend;
  if (backend == MG_BACKEND_AUTO || mg_backend_name(backend) == NULL) {
    mg_status_t st = mg_backend_resolve(backend, &resolved, NULL, 0);
    if (st < 0) {
      mg__error_prefix("mg_unique_id_create");
      return st;
    }
  }
  const mg__backend_t *be = mg__backend_get(resolved);
  if (be == NULL)
    return mg__error(MG_ERR_BACKEND_UNAVAILABLE,
                     "mg_unique_id_create: the %s backend is not built into this version of "
                     "mgcomm", mg_backend_name(resolved));
  return be->unique_id(id);
}

mg_status_t mg_comm_init_rank(const mg_config_t *config, int nranks, const mg_unique_id_t *id,
                              int rank, mg_comm_t **out) {
  static const char fn[] = "mg_comm_init_rank";
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (id == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: id is NULL", fn);
  if (nranks < 1) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: nranks %d < 1", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d is out of [0, %d)", fn, rank, nranks);
  const mg__backend_t *be = NULL;
  mg_config_t cfg;
  MG_CHECK(mg__config_backend(config, fn, &cfg, &be));
  mg_comm_t *comm;
  MG_CHECK(mg__comm_alloc(be, &cfg, &comm));
  comm->rank = rank;
  comm->nranks = nranks;
  mg__log_set_rank(rank);
  mg_status_t st = be->comm_init(comm, id, mg__comm_deadline(comm));
  if (st >= 0) st = mg__comm_publish(comm);
  if (st < 0) {
    /* comm_init left nothing behind on failure; only the core object remains. */
    mg__comm_free(comm);
    return st;
  }
  MG_INFO(MG_SUBSYS_INIT, "%s: rank %d of %d ready on the %s backend", fn, rank, nranks, be->name);
  *out = comm;
  return MG_OK;
}

mg_status_t mg_comm_init_all(const mg_config_t *config, int nranks, const int *devices,
                             mg_comm_t **comms) {
  static const char fn[] = "mg_comm_init_all";
  if (comms == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: comms is NULL", fn);
  if (nranks < 1) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: nranks %d < 1", fn, nranks);
  const mg__backend_t *be = NULL;
  mg_config_t cfg;
  MG_CHECK(mg__config_backend(config, fn, &cfg, &be));
  if (devices != NULL && be->id == MG_BACKEND_NCCL) {
    for (int i = 0; i < nranks; i++)
      for (int j = 0; j < i; j++)
        if (devices[i] == devices[j])
          return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: devices[%d] and devices[%d] are both %d",
                           fn, j, i, devices[i]);
  }
  mg_comm_t **tmp = calloc((size_t)nranks, sizeof *tmp);
  if (tmp == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  mg_status_t st = MG_OK;
  int made = 0;
  for (; made < nranks; made++) {
    MG_CHECK_GOTO(mg__comm_alloc(be, &cfg, &tmp[made]), st, fail);
    tmp[made]->rank = made;
    tmp[made]->nranks = nranks;
  }
  MG_CHECK_GOTO(be->comm_init_all(tmp, nranks, devices, mg__comm_deadline(tmp[0])), st, fail);
  for (int i = 0; i < nranks; i++) {
    st = mg__comm_publish(tmp[i]);
    if (st < 0) {
      for (int j = 0; j < nranks; j++) {
        (void)mg__handle_take(tmp[j], MG__HANDLE_COMM);
        atomic_store(&tmp[j]->aborting, 1);
        be->comm_abort(tmp[j]);
        be->comm_destroy(tmp[j]);
      }
      goto fail;
    }
  }
  memcpy(comms, tmp, sizeof *tmp * (size_t)nranks);
  free(tmp);
  return MG_OK;
fail:
  for (int i = 0; i < made; i++) mg__comm_free(tmp[i]);
  free(tmp);
  return st;
}

/* Common part of split and shrink: the child's core object, inheriting comm's config. */
static mg_status_t mg__child_alloc(mg_comm_t *comm, const mg_config_t *config, const char *fn,
                                   mg_comm_t **child) {
  mg_config_t cfg = comm->config;
  if (config != NULL) {
    const mg__backend_t *be = NULL;
    MG_CHECK(mg__config_backend(config, fn, &cfg, &be));
    if (cfg.backend != MG_BACKEND_AUTO && be != comm->backend)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->backend %s differs from comm's %s",
                       fn, mg_backend_name(cfg.backend), comm->backend->name);
  }
  MG_CHECK(mg__comm_alloc(comm->backend, &cfg, child));
  (*child)->device = comm->device;
  return MG_OK;
}

static mg_status_t mg__comm_split(mg_comm_t *comm, int color, int key,
                                  const mg_config_t *config, mg_comm_t **out, const char *fn) {
  mg_status_t st;
  if (out == NULL) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    goto out_err;
  }
  if (color < 0 && color != MG_SPLIT_NOCOLOR) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: color %d is negative (MG_SPLIT_NOCOLOR is %d)",
                   fn, color, MG_SPLIT_NOCOLOR);
    goto out_err;
  }
  if (!(comm->backend->caps & MG__CAP_SPLIT)) {
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend cannot split", fn,
                   comm->backend->name);
    goto out_err;
  }
  mg_comm_t *child = NULL;
  if (color != MG_SPLIT_NOCOLOR) {
    st = mg__child_alloc(comm, config, fn, &child);
    if (st < 0) goto out_err;
  }
  pthread_mutex_lock(&comm->lock);
  mg__log_set_rank(comm->rank);
  st = comm->backend->comm_split(comm, color, key, child, mg__comm_deadline(comm));
  comm->split_seq++;
  if (st >= 0 && child != NULL) st = mg__comm_publish(child);
  if (mg__comm_breaks(st, 0)) mg__comm_fail(comm, st);
  mg__comm_unlock(comm);
  if (st < 0) {
    mg__comm_free(child);
    goto out_err;
  }
  *out = child;
  return MG_OK;
out_err:
  mg__comm_save_error(comm);
  return st;
}

mg_status_t mg_comm_split(mg_comm_t *comm, int color, int key, const mg_config_t *config,
                          mg_comm_t **out) {
  static const char fn[] = "mg_comm_split";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__comm_split(comm, color, key, config, out, fn);
  mg__comm_leave(comm);
  return st;
}

static int mg__int_cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static mg_status_t mg__comm_shrink(mg_comm_t *comm, const int *exclude, int nexclude,
                                   const mg_config_t *config, mg_comm_t **out, const char *fn) {
  mg_status_t st;
  int *sorted = NULL;
  int state = atomic_load(&comm->state);
  if (state != MG_COMM_READY && state != MG_COMM_ERROR) {
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: comm is %s", fn, mg__state_name(state));
    goto out_err;
  }
  if (out == NULL || (exclude == NULL && nexclude > 0) || nexclude < 0) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                   out == NULL ? "out is NULL"
                               : nexclude < 0 ? "nexclude is negative" : "exclude is NULL");
    goto out_err;
  }
  if (!(comm->backend->caps & MG__CAP_SHRINK)) {
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend cannot shrink", fn,
                   comm->backend->name);
    goto out_err;
  }
  sorted = malloc(sizeof(int) * (size_t)(nexclude > 0 ? nexclude : 1));
  if (sorted == NULL) {
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    goto out_err;
  }
  if (nexclude > 0) memcpy(sorted, exclude, sizeof(int) * (size_t)nexclude);
  qsort(sorted, (size_t)nexclude, sizeof(int), mg__int_cmp);
  for (int i = 0; i < nexclude; i++) {
    if (sorted[i] < 0 || sorted[i] >= comm->nranks) {
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: excluded rank %d is out of [0, %d)", fn,
                     sorted[i], comm->nranks);
      goto out_err;
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d is excluded twice", fn, sorted[i]);
      goto out_err;
    }
    if (sorted[i] == comm->rank) {
      st = mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: the calling rank %d is in the exclude list (excluded ranks do not call "
                     "shrink)", fn, comm->rank);
      goto out_err;
    }
  }
  mg_comm_t *child;
  st = mg__child_alloc(comm, config, fn, &child);
  if (st < 0) goto out_err;
  pthread_mutex_lock(&comm->lock);
  mg__log_set_rank(comm->rank);
  st = comm->backend->comm_shrink(comm, sorted, nexclude, child, mg__comm_deadline(comm));
  comm->split_seq++;
  if (st >= 0) st = mg__comm_publish(child);
  mg__comm_unlock(comm);
  if (st < 0) {
    mg__comm_free(child);
    goto out_err;
  }
  free(sorted);
  *out = child;
  return MG_OK;
out_err:
  free(sorted);
  mg__comm_save_error(comm);
  return st;
}

mg_status_t mg_comm_shrink(mg_comm_t *comm, const int *exclude, int nexclude,
                           const mg_config_t *config, mg_comm_t **out) {
  static const char fn[] = "mg_comm_shrink";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__comm_shrink(comm, exclude, nexclude, config, out, fn);
  mg__comm_leave(comm);
  return st;
}

static mg_status_t mg__comm_finalize(mg_comm_t *comm, const char *fn) {
  if (comm->worker_owned) {
    /* What the host streams hold is "issued on comm": it runs first. */
    if (mg__worker_is_current(comm->worker))
      return mg__error(MG_ERR_INVALID_USAGE,
                       "%s: called on the communicator's own worker (from a callback), which "
                       "would wait for itself", fn);
    MG_CHECK(mg__worker_drain(comm->worker, mg__comm_deadline(comm), fn));
  }
  pthread_mutex_lock(&comm->lock);
  mg_status_t st = atomic_load(&comm->aborting)
                       ? mg__error(MG_ERR_ABORTED, "%s: comm was aborted", fn)
                       : comm->backend->comm_finalize(comm, mg__comm_deadline(comm));
  if (st >= 0) {
    int ready = MG_COMM_READY;
    atomic_compare_exchange_strong(&comm->state, &ready, MG_COMM_FINALIZED);
  } else {
    mg__comm_fail(comm, st);
  }
  mg__comm_unlock(comm);
  return st;
}

mg_status_t mg_comm_finalize(mg_comm_t *comm) {
  static const char fn[] = "mg_comm_finalize";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__comm_finalize(comm, fn);
  mg__comm_leave(comm);
  return st;
}

/* The part of abort that never blocks: flags, pending requests, waking the waits. Not under the
 * lock: a thread blocked under it must be woken first. */
static void mg__comm_abort_start(mg_comm_t *comm) {
  /* Already aborting or aborted: nothing to do. A revoked comm is aborted now. */
  if (atomic_exchange(&comm->aborting, MG__STOP_ABORT) == MG__STOP_ABORT) return;
  atomic_store(&comm->state, MG_COMM_ABORTED);
  int expected = MG_OK;
  atomic_compare_exchange_strong(&comm->async_error, &expected, MG_ERR_ABORTED);
  MG_INFO(MG_SUBSYS_INIT, "mg_comm_abort: rank %d of %d", comm->rank, comm->nranks);
  char msg[96];
  snprintf(msg, sizeof msg, "rank %d of %d: the communicator was aborted", comm->rank,
           comm->nranks);
  mg__wd_abort(comm, NULL, 0, msg);
  comm->backend->comm_interrupt(comm);
}

/* The backend's release, once; the caller holds comm->lock. */
static void mg__comm_abort_finish(mg_comm_t *comm) {
  if (atomic_load(&comm->aborting) && !atomic_exchange(&comm->abort_done, 1))
    comm->backend->comm_abort(comm);
}

void mg__comm_unlock(mg_comm_t *comm) {
  mg__comm_abort_finish(comm);
  pthread_mutex_unlock(&comm->lock);
}

void mg__comm_abort_nowait(mg_comm_t *comm) {
  mg__comm_abort_start(comm);
  if (pthread_mutex_trylock(&comm->lock) == 0) mg__comm_unlock(comm);
}

static mg_status_t mg__comm_revoke(mg_comm_t *comm, const char *fn) {
  int state = atomic_load(&comm->state);
  if (state != MG_COMM_READY && state != MG_COMM_ERROR)
    return mg__error(MG_ERR_INVALID_USAGE, "%s: comm (rank %d of %d) is %s", fn, comm->rank,
                     comm->nranks, mg__state_name(state));
  if (atomic_load(&comm->aborting) == MG__STOP_REVOKE) return MG_OK; /* revoked already */
  if (!(comm->backend->caps & MG__CAP_REVOKE))
    return mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend cannot revoke", fn,
                     comm->backend->name);
  mg_status_t st = comm->backend->comm_revoke(comm, mg__comm_deadline(comm));
  if (st == MG_ERR_NOT_SUPPORTED) return st; /* nothing was done */
  int zero = 0;
  if (!atomic_compare_exchange_strong(&comm->aborting, &zero, MG__STOP_REVOKE) &&
      zero != MG__STOP_REVOKE)
    return mg__error(MG_ERR_INVALID_USAGE, "%s: comm (rank %d of %d) was aborted meanwhile", fn,
                     comm->rank, comm->nranks);
  int ready = MG_COMM_READY;
  atomic_compare_exchange_strong(&comm->state, &ready, MG_COMM_ERROR);
  int ok = MG_OK;
  atomic_compare_exchange_strong(&comm->async_error, &ok, MG_ERR_ABORTED);
  MG_INFO(MG_SUBSYS_INIT, "%s: rank %d of %d", fn, comm->rank, comm->nranks);
  char msg[96];
  snprintf(msg, sizeof msg, "rank %d of %d: the communicator was revoked", comm->rank,
           comm->nranks);
  mg__wd_abort(comm, NULL, 0, msg);
  comm->backend->comm_interrupt(comm);
  pthread_mutex_lock(&comm->lock); /* the calls in flight have returned */
  pthread_mutex_unlock(&comm->lock);
  if (st < 0) { /* the backend did not become quiescent in time */
    mg__comm_save_error(comm);
    return st;
  }
  return MG_OK;
}

mg_status_t mg_comm_revoke(mg_comm_t *comm) {
  static const char fn[] = "mg_comm_revoke";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__comm_revoke(comm, fn);
  mg__comm_leave(comm);
  return st;
}

/* How long abort waits for a call under the lock to notice the flags: every wait of a backend
 * does within a millisecond, and a blocking NCCL call returns once the interrupt's revoke lands;
 * on an NCCL without revoke it may not, and the thread that holds the lock releases the backend
 * when it leaves (mg__comm_unlock), or destroy does. */
#define MG__ABORT_LOCK_WAIT_S 1.0

/* Abort: the part that never blocks, then the backend's release under the lock. */
static void mg__comm_abort(mg_comm_t *comm) {
  mg__comm_abort_start(comm);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += (time_t)MG__ABORT_LOCK_WAIT_S;
  if (pthread_mutex_timedlock(&comm->lock, &until) == 0)
    mg__comm_unlock(comm);
  else
    MG_INFO(MG_SUBSYS_INIT, "mg_comm_abort: rank %d: a call still holds the communicator; it "
            "releases the backend when it returns", comm->rank);
}

mg_status_t mg_comm_abort(mg_comm_t *comm) {
  MG_CHECK(mg__comm_enter(comm, "mg_comm_abort"));
  mg__comm_abort(comm);
  mg__comm_leave(comm);
  return MG_OK;
}

/* Waits until the calling thread is the only one inside comm, or the deadline: 1 when it is. The
 * others watch comm->aborting (an aborted comm) or are about to leave (a finalized one). */
static int mg__comm_wait_alone(mg_comm_t *comm, double deadline) {
  while (atomic_load(&comm->refs) > 1) {
    if (mg__now() >= deadline) return 0;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return 1;
}

mg_status_t mg_comm_destroy(mg_comm_t *comm) {
  static const char fn[] = "mg_comm_destroy";
  if (comm == NULL) return MG_OK;
  MG_CHECK(mg__comm_enter(comm, fn));
  if (comm->worker_owned && mg__worker_is_current(comm->worker)) {
    mg__comm_leave(comm);
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: called on the communicator's own worker (from a callback), which "
                     "cannot stop itself", fn);
  }
  /* From here no call can enter comm; of two destroys, one goes on. */
  if (!mg__handle_take(comm, MG__HANDLE_COMM)) {
    mg__comm_leave(comm);
    return mg__error(MG_ERR_INVALID_USAGE, "%s: comm %p is being destroyed by another thread", fn,
                     (void *)comm);
  }
  if (atomic_load(&comm->state) != MG_COMM_FINALIZED) {
    comm->leaving = !atomic_load(&comm->aborting);
    mg__comm_abort(comm);
  }
  /* A finalized comm was not aborted: a request whose mark its backend has not signalled yet
   * (NCCL: the host function runs a little after the stream got there) is still listed, and
   * must not outlive the comm. After this the watchdog reaches the comm no more. */
  char msg[96];
  snprintf(msg, sizeof msg, "rank %d of %d: the communicator was destroyed", comm->rank,
           comm->nranks);
  mg__wd_abort(comm, NULL, 0, msg);
  if (comm->blocking_calls) mg__wd_guard(comm, 0);
  if (!mg__comm_wait_alone(comm, mg__comm_deadline(comm))) {
    /* A call did not return in time (an NCCL call that cannot be interrupted): comm stays, aborted,
     * for a later destroy. */
    const int inside = atomic_load(&comm->refs) - 1;
    mg_status_t st = mg__handle_register(comm, MG__HANDLE_COMM);
    mg__comm_leave(comm);
    if (st < 0) return st;
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: rank %d: %d call%s still inside the communicator %g s after it was "
                     "aborted; it stays, aborted: destroy it again once they returned",
                     fn, comm->rank, inside, inside == 1 ? " is" : "s are", comm->timeout_s);
  }
  /* What its streams still hold runs now and fails fast (the comm is aborted or finalized). */
  if (comm->worker_owned) mg__worker_stop(comm->worker);
  pthread_mutex_lock(&comm->lock);
  mg__comm_unlock(comm); /* an abort's release that a call left to its end */
  if (!atomic_load(&comm->aborting)) /* custom ops go before their communicator */
    for (mg__custom_op_t *c = comm->custom_ops; c != NULL; c = c->next)
      comm->backend->redop_destroy(comm, &c->redop);
  /* What the layer above attached may read this rank's progress through the backend. */
  if (comm->ext != NULL && comm->ext->leave != NULL) comm->ext->leave(comm->ext_state);
  comm->backend->comm_destroy(comm);
  mg__comm_free(comm);
  return MG_OK;
}

#define MG__QUERY(fnname, type, outname, expr)                                               \
  mg_status_t fnname(const mg_comm_t *comm_, type *outname) {                                \
    mg_comm_t *comm = (mg_comm_t *)comm_;                                                    \
    MG_CHECK(mg__comm_enter(comm, #fnname));                                                 \
    mg_status_t st = MG_OK;                                                                  \
    if (outname == NULL)                                                                     \
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", #fnname, #outname);          \
    else                                                                                     \
      *outname = (expr);                                                                     \
    mg__comm_leave(comm);                                                                    \
    return st;                                                                               \
  }

MG__QUERY(mg_comm_rank, int, rank, comm->rank)
MG__QUERY(mg_comm_size, int, size, comm->nranks)
MG__QUERY(mg_comm_device, int, device, comm->device)
MG__QUERY(mg_comm_backend, mg_backend_t, backend, comm->backend->id)
MG__QUERY(mg_comm_state, mg_comm_state_t, state, (mg_comm_state_t)atomic_load(&comm->state))

mg_status_t mg_comm_async_error(mg_comm_t *comm, mg_status_t *async_error) {
  static const char fn[] = "mg_comm_async_error";
  MG_CHECK(mg__comm_enter(comm, fn));
  if (async_error == NULL) {
    mg__comm_leave(comm);
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: async_error is NULL", fn);
  }
  mg_status_t st = (mg_status_t)atomic_load(&comm->async_error);
  if (st == MG_OK && atomic_load(&comm->state) == MG_COMM_READY) {
    mg_status_t be = comm->backend->async_error(comm);
    if (be < 0) {
      mg__comm_fail(comm, be);
      st = be;
    }
  }
  *async_error = st;
  mg__comm_leave(comm);
  return MG_OK;
}

size_t mg_comm_last_error(const mg_comm_t *comm_, char *buf, size_t len) {
  mg_comm_t *comm = (mg_comm_t *)comm_;
  if (buf != NULL && len > 0) buf[0] = '\0';
  if (mg__comm_enter(comm, "mg_comm_last_error") < 0) return 0;
  pthread_mutex_lock(&comm->err_lock);
  size_t n = strlen(comm->last_error);
  if (buf != NULL && len > 0) {
    size_t k = n < len - 1 ? n : len - 1;
    memcpy(buf, comm->last_error, k);
    buf[k] = '\0';
  }
  pthread_mutex_unlock(&comm->err_lock);
  mg__comm_leave(comm);
  return n;
}
