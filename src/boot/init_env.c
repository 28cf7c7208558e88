/*
 * init_env.c -- mg_comm_init_env: a communicator from the launcher's environment, meeting the
 * job's other processes at a store that rank 0 serves (contract in mgcomm.h).
 *
 * Divisions: the job's store (shared, counted); the id record rank 0 publishes; the call.
 *
 * One store per process serves every communicator made this way: the first call opens it (rank 0
 * serves, the others connect) and each communicator holds a reference, dropped when it is freed.
 * Calls are numbered per process (every process makes them in the same order), and call k keeps
 * its keys under "mgcomm/init/<k>/", so successive communicators never read each other's ids.
 *
 * Locking: mg__job_lock guards mg__job (the pointer, refs, next_call); it is never held across
 * a wait on the store.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"
#include "core/clock.h"
#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"
#include "core/params.h"

/* ---- the job's store ---------------------------------------------------------------------- */

struct mg__boot_job {
  mg_store_t *store;                   /* rank 0: serving handle; others: a client */
  char address[MG__NET_HOST_MAX + 16]; /* as read from the environment */
  int rank;
  int refs;                            /* communicators holding it (under mg__job_lock) */
  uint64_t next_call;                  /* number of the next mg_comm_init_env (under lock) */
};

static pthread_mutex_t mg__job_lock = PTHREAD_MUTEX_INITIALIZER;
static mg__boot_job_t *mg__job; /* the process's job store, while a communicator holds it */

/* A reference on the job's store, opened (served or connected) when there is none; the call's
 * number in *call. */
static mg_status_t mg__job_acquire(const mg__boot_env_t *env, double timeout_s, const char *fn,
                                   mg__boot_job_t **out, uint64_t *call) {
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
    *call = job->next_call++;
    pthread_mutex_unlock(&mg__job_lock);
    *out = job;
    return MG_OK;
  }
  /* Opening waits (a client retries until rank 0 serves): not under the lock. Two threads of one
   * process making the first two communicators at once is not a job's pattern; the second one
   * then finds the first one's store or opens its own and fails to bind, as documented. */
  pthread_mutex_unlock(&mg__job_lock);
  job = calloc(1, sizeof *job);
  if (job == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  snprintf(job->address, sizeof job->address, "%s", env->address);
  job->rank = env->rank;
  mg_status_t st = env->rank == 0 ? mg_store_serve(env->address, env->token, timeout_s, &job->store)
                                  : mg_store_connect(env->address, env->token, timeout_s, &job->store);
  if (st < 0) {
    mg__error_prefix("%s: rank %d of %d (%s, from %s and %s)", fn, env->rank, env->size,
                     env->launcher, env->rank_var, env->address_from);
    free(job);
    return st;
  }
  pthread_mutex_lock(&mg__job_lock);
  if (mg__job != NULL) { /* another thread won the race above: use its store */
    mg__boot_job_t *won = mg__job;
    won->refs++;
    *call = won->next_call++;
    pthread_mutex_unlock(&mg__job_lock);
    mg_store_close(job->store); /* ours was never used: nothing to report */
    free(job);
    *out = won;
    return MG_OK;
  }
  job->refs = 1;
  *call = job->next_call++;
  mg__job = job;
  pthread_mutex_unlock(&mg__job_lock);
  *out = job;
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

/* ---- the call ----------------------------------------------------------------------------- */

mg_status_t mg_comm_init_env(const mg_config_t *config, mg_comm_t **out) {
  static const char fn[] = "mg_comm_init_env";
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  mg_config_t cfg = MG_CONFIG_INIT;
  if (config != NULL) {
    if (config->size != sizeof(mg_config_t) || config->version != MG_CONFIG_VERSION)
      return mg__error(MG_ERR_INVALID_USAGE,
                       "%s: config was not initialised with MG_CONFIG_INIT (size %zu, version %u)",
                       fn, config->size, config->version);
    if (!(config->timeout_s >= 0))
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->timeout_s %g is negative", fn,
                       config->timeout_s);
    cfg = *config;
  }
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

  mg__boot_job_t *job = NULL;
  uint64_t call = 0;
  MG_CHECK(mg__job_acquire(&env, timeout, fn, &job, &call));
  char key[96];
  /* No process may claim a rank another one has. */
  snprintf(key, sizeof key, "mgcomm/init/%llu/rank/%d", (unsigned long long)call, env.rank);
  int64_t claims = 0;
  double left = deadline - mg__now();
  MG_CHECK_GOTO(mg_store_add(job->store, key, 1, &claims, left > 0.001 ? left : 0.001), st, fail);
  if (claims != 1) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT,
                   "%s: rank %d (%s) is claimed by %lld processes of this job; check %s on each",
                   fn, env.rank, env.rank_var, (long long)claims, env.rank_var);
    goto fail;
  }

  unsigned char rec[MG__ID_RECORD_BYTES];
  mg_unique_id_t id;
  mg_backend_t backend;
  snprintf(key, sizeof key, "mgcomm/init/%llu/id", (unsigned long long)call);
  if (env.rank == 0) {
    MG_CHECK_GOTO(mg_backend_resolve(cfg.backend, &backend, NULL, 0), st, fail);
    MG_CHECK_GOTO(mg_unique_id_create(backend, &id), st, fail);
    mg__id_record(rec, env.size, backend, &id);
    left = deadline - mg__now();
    MG_CHECK_GOTO(mg_store_set(job->store, key, rec, sizeof rec, left > 0.001 ? left : 0.001), st,
                  fail);
  } else {
    size_t len = 0;
    left = deadline - mg__now();
    st = mg_store_get(job->store, key, rec, sizeof rec, &len, left > 0.001 ? left : 0.001);
    if (st < 0) {
      mg__error_prefix("%s: rank %d of %d waiting for rank 0's unique id", fn, env.rank, env.size);
      goto fail;
    }
    if (len != sizeof rec || memcmp(rec, "mgid", 4) != 0 || mg__get32(rec + 4) != 1) {
      st = mg__error(MG_ERR_REMOTE, "%s: rank 0's record at %s is not an mgcomm id record", fn,
                     key);
      goto fail;
    }
    int nranks0 = (int)mg__get32(rec + 8);
    backend = (mg_backend_t)mg__get32(rec + 12);
    memcpy(id.internal, rec + 16, MG_UNIQUE_ID_BYTES);
    if (nranks0 != env.size) {
      st = mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: this process has %s=%d but rank 0 has a world size of %d", fn,
                     env.size_var, env.size, nranks0);
      goto fail;
    }
    if (cfg.backend != MG_BACKEND_AUTO && cfg.backend != backend) {
      st = mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: this rank asks for the %s backend, rank 0 chose %s", fn,
                     mg_backend_name(cfg.backend) ? mg_backend_name(cfg.backend) : "unknown",
                     mg_backend_name(backend) ? mg_backend_name(backend) : "unknown");
      goto fail;
    }
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
  mg_comm_t *comm;
  MG_CHECK_GOTO(mg_comm_init_rank(&cfg, env.size, &id, env.rank, &comm), st, fail);
  comm->boot = job; /* the reference acquired above now belongs to the communicator */
  *out = comm;
  return MG_OK;
fail:
  mg__boot_release(job);
  return st;
}
