/*
 * boot.h -- what the rest of the library needs from src/boot/ besides the public store API: the
 * launch conventions (env.c) and the job's store that mg_comm_init_env shares between the
 * communicators it makes (init_env.c).
 */
#ifndef MG_BOOT_BOOT_H
#define MG_BOOT_BOOT_H

#include "boot/net.h"
#include "mgcomm.h"

/* Looks up an environment variable: its value, or NULL when it is unset or empty. */
typedef const char *(*mg__env_get_t)(void *ctx, const char *name);

/* The process's environment: MGCOMM_* through the parameter table (read once), the launchers'
 * variables through getenv. ctx is unused. */
const char *mg__boot_env_process(void *ctx, const char *name);

/* Where this process stands in its job, as its launcher described it. */
typedef struct mg__boot_env {
  int rank, size;
  int local_rank;                        /* -1 when the launcher gives none (PMI) */
  const char *launcher;                  /* "mgcomm launch", "torchrun", "Open MPI", ... */
  const char *rank_var, *size_var;       /* the variables rank and size came from */
  const char *local_var;                 /* NULL when local_rank is -1 */
  char address[MG__NET_HOST_MAX + 16];   /* the store, host:port */
  const char *address_from;              /* "MGCOMM_STORE" or "MASTER_ADDR/MASTER_PORT" */
  char token[MG_STORE_TOKEN_MAX + 1];
  const char *token_from;                /* "MGCOMM_JOB_TOKEN", "TORCHELASTIC_RUN_ID", ... */
} mg__boot_env_t;

/* Reads rank, size, local rank, store address and token by the conventions of mgcomm.h
 * (mg_comm_init_env). MG_ERR_INVALID_ARGUMENT with a message naming the variables when they are
 * missing, malformed or inconsistent; *out is written only on success. */
mg_status_t mg__boot_env_read(mg__env_get_t get, void *ctx, mg__boot_env_t *out);

/* The job's store as held by the communicators of mg_comm_init_env in this process. */
typedef struct mg__boot_job mg__boot_job_t;

/* Drops a communicator's reference; the last one closes the store (on rank 0: stops serving).
 * NULL is a no-op. Called when the communicator is freed. */
void mg__boot_release(mg__boot_job_t *job);

#endif
