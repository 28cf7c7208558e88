/*
 * init_env.c -- mg_comm_init_env: a communicator from the launcher's environment, meeting the
 * job's other processes at a store that rank 0 serves (contract in mgcomm.h).
 *
 * Divisions: the job's store (shared, counted); the id record rank 0 publishes; meeting; progress
 * through the store (boot/progress.c); the call.
 *
 * One store per process serves every communicator made this way: the first call opens it (rank 0
 * serves, the others connect) and each communicator holds a reference, dropped when it is freed.
 * Calls are numbered per process for its whole life (every process of the job makes them in the
 * same order), and call k keeps its keys under "mgcomm/init/<k>/", so communicators never read
 * each other's ids, also across a destroy and a new init.
 *
 * A job that destroys its communicators and makes new ones may find a rank other than 0 already
 * connected to rank 0's old store, which closes a moment later: a rank that opened the store for
 * this call and sees it go away reconnects (to rank 0's new store) until the deadline.
 *
 * Locking: mg__job_lock guards mg__job (the pointer and its refs) and mg__next_call; it is never
 * held across a wait on the store.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"
#include "boot/progress.h"
#include "base/clock.h"
#include "core/comm.h"
#include "core/config.h"
#include "base/error.h"
#include "base/log.h"
#include "base/params.h"

/* ---- the job's store ---------------------------------------------------------------------- */

struct mg__boot_job {
  mg_store_t *store;                   /* rank 0: serving handle; others: a client */
  char address[MG__NET_HOST_MAX + 16]; /* as read from the environment */
  int rank;
  int refs;                            /* communicators (or calls in progress) holding it */
};

static pthread_mutex_t mg__job_lock = PTHREAD_MUTEX_INITIALIZER;
static mg__boot_job_t *mg__job;   /* the process's job store, while something holds it */
static uint64_t mg__next_call;    /* number of the next mg_comm_init_env of this process */

/* A reference on the job's store, opened (served, or connected with retry until timeout_s) when
 * there is none. *fresh: this call opened it (no communicator shares it). */
static mg_status_t mg__job_acquire(const mg__boot_env_t *env, double timeout_s, const char *fn,
                                   mg__boot_job_t **out, int *fresh) {
  pthread_mutex_lock(&mg__job_lock);
  mg__boot_job_t *job = mg__job;
  if (job != NULL) {
    if (strcmp(job->address, env->address) != 0 || job->rank != env->rank) {
      mg_status_t st = mg__error(
          MG_ERR_INVALID_USAGE,
          "%s: communicators made by mg_comm_init_env as rank %d with the store %s are alive; "
          "this call is rank %d with %s (destroy them first)", fn, job->rank, job->address,
          env->rank, env->address);
      pthread_mutex_unlock(&mg__job_lock);
      return st;
    }
    job->refs++;
    pthread_mutex_unlock(&mg__job_lock);
    *out = job;
    *fresh = 0;
    return MG_OK;
  }
  /* Opening waits (a client retries until rank 0 serves): not under the lock. */
  pthread_mutex_unlock(&mg__job_lock);
  job = calloc(1, sizeof *job);
  if (job == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  snprintf(job->address, sizeof job->address, "%s", env->address);
  job->rank = env->rank;
  mg_status_t st =
      env->rank == 0 ? mg_store_serve(env->address, env->token, timeout_s, &job->store)
                     : mg_store_connect(env->address, env->token, timeout_s, &job->store);
  if (st < 0) {
    mg__error_prefix("%s: rank %d of %d (%s: %s; store from %s, token from %s)", fn, env->rank,
                     env->size, env->launcher, env->rank_var, env->address_from, env->token_from);
    free(job);
    return st;
  }
  pthread_mutex_lock(&mg__job_lock);
  if (mg__job != NULL) { /* another thread of this process opened one meanwhile: share it */
    mg__boot_job_t *won = mg__job;
    won->refs++;
    pthread_mutex_unlock(&mg__job_lock);
    mg_store_close(job->store); /* ours was never used: nothing to report */
    free(job);
    *out = won;
    *fresh = 0;
    return MG_OK;
  }
  job->refs = 1;
  mg__job = job;
  pthread_mutex_unlock(&mg__job_lock);
  *out = job;
  *fresh = 1;
  return MG_OK;
}

void mg__boot_release(mg__boot_job_t *job) {
  if (job == NULL) return;
  pthread_mutex_lock(&mg__job_lock);
  MG_ASSERT(job == mg__job && job->refs > 0);
  int last = --job->refs == 0;
  if (last) mg__job = NULL;
  pthread_mutex_unlock(&mg__job_lock);
  if (!last) return;
  MG_INFO(MG_SUBSYS_BOOT, "mg_comm_init_env: closing the job's store %s (rank %d)", job->address,
          job->rank);
  mg_store_close(job->store); /* a handle we own and never freed: always MG_OK */
  free(job);
}

/* ---- the id record ------------------------------------------------------------------------ */

/* What rank 0 publishes: "mgid", version 1, world size, backend, the unique id (little-endian
 * integers, so that ranks of any build read the same bytes). */
#define MG__ID_RECORD_BYTES (16 + MG_UNIQUE_ID_BYTES)

static void mg__put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t mg__get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void mg__id_record(unsigned char *r, int nranks, mg_backend_t be, const mg_unique_id_t *id) {
  memcpy(r, "mgid", 4);
  mg__put32(r + 4, 1);
  mg__put32(r + 8, (uint32_t)nranks);
  mg__put32(r + 12, (uint32_t)be);
  memcpy(r + 16, id->internal, MG_UNIQUE_ID_BYTES);
}

/* ---- meeting ----------------------------------------------------------------------------- */

/* Call number `call` at the store: claims this rank, then rank 0 publishes the id and the others
 * fetch and check it. */
static mg_status_t mg__meet(mg__boot_job_t *job, const mg__boot_env_t *env, uint64_t call,
                            mg_backend_t want, double deadline, const char *fn,
                            mg_unique_id_t *id, mg_backend_t *backend) {
  char key[96];
  snprintf(key, sizeof key, "mgcomm/init/%llu/rank/%d", (unsigned long long)call, env->rank);
  int64_t claims = 0;
  double left = deadline - mg__now();
  MG_CHECK(mg_store_add(job->store, key, 1, &claims, left > 0.001 ? left : 0.001));
  if (claims != 1)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: rank %d is claimed by %lld processes of this job; check %s on each", fn,
                     env->rank, (long long)claims, env->rank_var);
  unsigned char rec[MG__ID_RECORD_BYTES];
  snprintf(key, sizeof key, "mgcomm/init/%llu/id", (unsigned long long)call);
  if (env->rank == 0) {
    MG_CHECK(mg_backend_resolve(want, backend, NULL, 0));
    MG_CHECK(mg_unique_id_create(*backend, id));
    mg__id_record(rec, env->size, *backend, id);
    left = deadline - mg__now();
    return mg_store_set(job->store, key, rec, sizeof rec, left > 0.001 ? left : 0.001);
  }
  size_t len = 0;
  left = deadline - mg__now();
  mg_status_t st =
      mg_store_get(job->store, key, rec, sizeof rec, &len, left > 0.001 ? left : 0.001);
  if (st < 0) {
    mg__error_prefix("%s: rank %d of %d waiting for rank 0's unique id", fn, env->rank, env->size);
    return st;
  }
  if (len != sizeof rec || memcmp(rec, "mgid", 4) != 0 || mg__get32(rec + 4) != 1)
    return mg__error(MG_ERR_NOT_SUPPORTED,
                     "%s: rank 0's id record at %s is not of this version of mgcomm (%s)", fn, key,
                     mg_version_string());
  int nranks0 = (int)mg__get32(rec + 8);
  mg_backend_t be0 = (mg_backend_t)mg__get32(rec + 12);
  if (nranks0 != env->size)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: this process has %s=%d but rank 0 has a world size of %d", fn,
                     env->size_var, env->size, nranks0);
  if (want != MG_BACKEND_AUTO && want != be0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: this rank asks for the %s backend, rank 0 chose %s", fn,
                     mg_backend_name(want) ? mg_backend_name(want) : "unknown",
                     mg_backend_name(be0) ? mg_backend_name(be0) : "unknown");
  memcpy(id->internal, rec + 16, MG_UNIQUE_ID_BYTES);
  *backend = be0;
  return MG_OK;
}

/* ---- progress ---------------------------------------------------------------------------- */

/* This rank's progress as its backend publishes it inside the process (NCCL: the table of
 * nccl_progress.c, lock-free), and whether its communicator stopped: aborted (by its program,
 * its watchdog, or a destroy without finalize) or revoked. */
static mg_status_t mg__own_progress(void *ctx, mg__progress_t *out, int *stopped) {
  mg_comm_t *comm = ctx;
  *stopped = atomic_load(&comm->aborting);
  return comm->backend->peer_progress(comm, comm->rank, out);
}

/* A backend that shares progress only inside a process gets it shared through the job's store
 * (boot/progress.c): timeout messages then know the ranks of the other processes. A failure
 * only leaves them unknown. */
static void mg__progress_join(mg_comm_t *comm, const mg__boot_env_t *env, mg__bprog_t **out) {
  const int interval_ms = (int)mg__param_int(MG_PARAM_PROGRESS_INTERVAL_MS);
  if (!(comm->backend->caps & MG__CAP_PROGRESS_LOCAL) || interval_ms <= 0 || comm->nranks < 2)
    return;
  if (mg__bprog_join(env->address, env->token, comm->backend->comm_tag(comm), comm->rank,
                     comm->nranks, interval_ms, mg__own_progress, comm, out) < 0)
    MG_INFO(MG_SUBSYS_BOOT, "mg_comm_init_env: rank %d does not publish its progress (%s)",
            comm->rank, mg_last_error());
}

/* What mg_comm_init_env attaches to its communicator (comm.h, mg__comm_ext_t). */
typedef struct {
  mg__boot_job_t *job; /* a reference on the job's store (rank 0 serves it) */
  mg__bprog_t *prog;   /* this rank's progress shared through it; NULL: not shared */
} mg__env_ext_t;

static mg_status_t mg__env_peer_progress(void *state, int r, mg__progress_t *out) {
  mg__env_ext_t *x = state;
  return x->prog != NULL ? mg__bprog_peer(x->prog, r, out) : MG_ERR_NOT_SUPPORTED;
}

static void mg__env_leave(void *state) {
  mg__env_ext_t *x = state;
  mg__bprog_leave(x->prog);
  x->prog = NULL;
}

static void mg__env_release(void *state) {
  mg__env_ext_t *x = state;
  mg__bprog_leave(x->prog); /* a communicator freed without destroy (a failed creation) */
  mg__boot_release(x->job);
  free(x);
}

static int mg__env_peer_stopped(void *state, int *rank, int *how) {
  mg__env_ext_t *x = state;
  return mg__bprog_stopped(x->prog, rank, how);
}

static void mg__env_stopping(void *state) {
  mg__env_ext_t *x = state;
  if (x->prog != NULL) mg__bprog_wake();
}

static const mg__comm_ext_t mg__env_ext = {.peer_progress = mg__env_peer_progress,
                                           .leave = mg__env_leave,
                                           .release = mg__env_release,
                                           .peer_stopped = mg__env_peer_stopped,
                                           .stopping = mg__env_stopping};

/* ---- the call ----------------------------------------------------------------------------- */

mg_status_t mg_comm_init_env(const mg_config_t *config, mg_comm_t **out) {
  static const char fn[] = "mg_comm_init_env";
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  mg_config_t cfg;
  MG_CHECK(mg__config_read(config, fn, &cfg));
  mg__boot_env_t env;
  mg_status_t st = mg__boot_env_read(mg__boot_env_process, NULL, &env);
  if (st < 0) {
    mg__error_prefix("%s", fn);
    return st;
  }
  mg__log_set_rank(env.rank);
  MG_INFO(MG_SUBSYS_BOOT, "%s: rank %d of %d from %s (%s, %s), store %s from %s, token from %s",
          fn, env.rank, env.size, env.launcher, env.rank_var, env.size_var, env.address,
          env.address_from, env.token_from);
  double timeout = cfg.timeout_s > 0 ? cfg.timeout_s : mg__param_double(MG_PARAM_TIMEOUT);
  double deadline = mg__now() + timeout;
  pthread_mutex_lock(&mg__job_lock);
  uint64_t call = mg__next_call++;
  pthread_mutex_unlock(&mg__job_lock);

  mg__boot_job_t *job = NULL;
  mg_unique_id_t id;
  mg_backend_t backend = MG_BACKEND_AUTO;
  for (;;) {
    int fresh = 0;
    double left = deadline - mg__now();
    /* Connecting retries by itself, also when a store closes during the handshake. */
    MG_CHECK(mg__job_acquire(&env, left > 0.001 ? left : 0.001, fn, &job, &fresh));
    st = mg__meet(job, &env, call, cfg.backend, deadline, fn, &id, &backend);
    if (st >= 0) break;
    mg__boot_release(job);
    job = NULL;
    if (!(st == MG_ERR_REMOTE && fresh && env.rank != 0 && mg__now() < deadline)) return st;
    /* The store this call connected to closed: rank 0 may be replacing its old one. */
    MG_INFO(MG_SUBSYS_BOOT, "%s: the store %s went away (%s); connecting again", fn, env.address,
            mg_last_error());
  }
  cfg.backend = backend;
  if (cfg.device == MG_UNDEF_INT) {
    if (env.local_rank >= 0) {
      cfg.device = env.local_rank;
    } else if (backend == MG_BACKEND_NCCL) {
      st = mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %s gives no local rank to choose a GPU with; set MGCOMM_LOCAL_RANK or "
                     "config->device", fn, env.launcher);
      goto fail;
    }
  }
  mg__env_ext_t *x = calloc(1, sizeof *x);
  if (x == NULL) {
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    goto fail;
  }
  mg_comm_t *comm;
  st = mg_comm_init_rank(&cfg, env.size, &id, env.rank, &comm);
  if (st < 0) {
    free(x);
    goto fail;
  }
  x->job = job; /* the reference acquired above now belongs to the communicator */
  mg__progress_join(comm, &env, &x->prog);
  comm->ext_state = x;
  comm->ext = &mg__env_ext;
  *out = comm;
  return MG_OK;
fail:
  mg__boot_release(job);
  return st;
}
