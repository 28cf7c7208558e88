/*
 * env.c -- launch conventions: where a process stands in its job (rank, size, local rank), where
 * the job's store is, and the job's token, from the variables of mgcomm launch, torchrun, Open
 * MPI, PMI and Slurm (the order and the rules are mgcomm.h's, at mg_comm_init_env).
 *
 * The reader takes a lookup function so that its rules can be tested on any table of variables;
 * the library passes mg__boot_env_process.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "boot/boot.h"
#include "boot/store.h"
#include "base/error.h"
#include "base/params.h"

/* The most ranks a job of mg_comm_init_env can have, whatever the backend: rank 0's store keeps
 * one connection per process and closes those beyond MG__STORE_MAX_CONNS. (The host backend's
 * segment for this many ranks, about 280 GiB of address space with the default sizes, still
 * maps.) */
#define MG__BOOT_MAX_RANKS MG__STORE_MAX_CONNS

/* The longest host:port: a host of MG__NET_HOST_MAX - 1 bytes in brackets, a colon, 5 digits. */
#define MG__BOOT_ADDRESS_MAX (MG__NET_HOST_MAX - 1 + 2 + 1 + 5)

static const struct {
  const char *launcher;
  const char *rank, *size, *local; /* local NULL: this launcher has no local rank */
} mg__sources[] = {
    {"mgcomm launch", "MGCOMM_RANK", "MGCOMM_WORLD_SIZE", "MGCOMM_LOCAL_RANK"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI", "PMI_RANK", "PMI_SIZE", NULL},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

/* Launchers' job ids that may stand in for MGCOMM_JOB_TOKEN: shared by the job, not secret. */
static const struct {
  const char *var;
  const char *prefix;
} mg__token_sources[] = {
    {"TORCHELASTIC_RUN_ID", "torchelastic:"},
    {"PMIX_NAMESPACE", "pmix:"},
    {"OMPI_MCA_ess_base_jobid", "ompi:"},
    {"SLURM_JOB_ID", "slurm:"},
};

const char *mg__boot_env_process(void *ctx, const char *name) {
  (void)ctx;
  static const struct {
    const char *name;
    mg__param_id_t id;
  } ours[] = {
      {"MGCOMM_RANK", MG_PARAM_RANK},   {"MGCOMM_WORLD_SIZE", MG_PARAM_WORLD_SIZE},
      {"MGCOMM_LOCAL_RANK", MG_PARAM_LOCAL_RANK}, {"MGCOMM_STORE", MG_PARAM_STORE},
      {"MGCOMM_JOB_TOKEN", MG_PARAM_JOB_TOKEN},
  };
  const char *v = NULL;
  int found = 0;
  for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
    if (strcmp(name, ours[i].name) == 0) {
      v = mg__param_str(ours[i].id);
      found = 1;
      break;
    }
  }
  /* The table refuses values longer than it holds (511 bytes) and keeps its empty default: the
   * value as set goes to the reader instead, whose checks name the variable and its limit. */
  if (!found || v[0] == '\0') v = getenv(name);
  return v != NULL && v[0] != '\0' ? v : NULL;
}

/* A non-negative decimal number without sign or spaces, INT_MAX for one above it (the callers
 * refuse it as out of range); -1 when s is not such a number. */
static int mg__parse_count(const char *s) {
  size_t n = strlen(s);
  if (n == 0) return -1;
  long long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    if (v <= INT_MAX) v = v * 10 + (s[i] - '0');
  }
  return v > INT_MAX ? INT_MAX : (int)v;
}

static mg_status_t mg__read_rank_size(mg__env_get_t get, void *ctx, mg__boot_env_t *e) {
  size_t n = sizeof mg__sources / sizeof mg__sources[0];
  size_t i = 0;
  for (; i < n; i++)
    if (get(ctx, mg__sources[i].rank) != NULL || get(ctx, mg__sources[i].size) != NULL) break;
  if (i == n)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "no rank in the environment: set MGCOMM_RANK and MGCOMM_WORLD_SIZE, or start "
                     "the program with mgcomm launch, torchrun, mpirun or srun (looked for "
                     "MGCOMM_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)");
  const char *rv = get(ctx, mg__sources[i].rank), *sv = get(ctx, mg__sources[i].size);
  if (rv == NULL || sv == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s is set but %s is not (%s's variables)",
                     rv ? mg__sources[i].rank : mg__sources[i].size,
                     rv ? mg__sources[i].size : mg__sources[i].rank, mg__sources[i].launcher);
  int rank = mg__parse_count(rv), size = mg__parse_count(sv);
  if (size < 1)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s='%s' is not a number of ranks >= 1",
                     mg__sources[i].size, sv);
  if (size > MG__BOOT_MAX_RANKS)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s=%s is more ranks than mg_comm_init_env supports: at most %d (rank 0's "
                     "store keeps one connection per process)", mg__sources[i].size, sv,
                     MG__BOOT_MAX_RANKS);
  if (rank < 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s='%s' is not a rank (a number >= 0)",
                     mg__sources[i].rank, rv);
  if (rank >= size)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s=%s is not below %s=%d", mg__sources[i].rank,
                     rv, mg__sources[i].size, size);
  int local = -1;
  const char *lv = mg__sources[i].local ? get(ctx, mg__sources[i].local) : NULL;
  if (lv != NULL) {
    local = mg__parse_count(lv);
    if (local < 0)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s='%s' is not a local rank (a number >= 0)",
                       mg__sources[i].local, lv);
    if (local >= size)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s=%s is not below %s=%d", mg__sources[i].local,
                       lv, mg__sources[i].size, size);
  }
  e->rank = rank;
  e->size = size;
  e->local_rank = local;
  e->launcher = mg__sources[i].launcher;
  e->rank_var = mg__sources[i].rank;
  e->size_var = mg__sources[i].size;
  e->local_var = lv ? mg__sources[i].local : NULL;
  return MG_OK;
}

static int mg__truthy(const char *v) {
  return v != NULL && (strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

static mg_status_t mg__read_address(mg__env_get_t get, void *ctx, mg__boot_env_t *e) {
  char host[MG__NET_HOST_MAX];
  int port;
  const char *store = get(ctx, "MGCOMM_STORE");
  if (store != NULL) {
    size_t len = strlen(store);
    if (len > MG__BOOT_ADDRESS_MAX)
      return mg__error(MG_ERR_INVALID_ARGUMENT,
                       "MGCOMM_STORE ('%.40s...') is %zu bytes long; a host:port is at most %d "
                       "(a host of at most %d bytes)", store, len, MG__BOOT_ADDRESS_MAX,
                       MG__NET_HOST_MAX - 1);
    MG_CHECK(mg__net_parse(store, 0, "MGCOMM_STORE", host, sizeof host, &port));
    e->address_from = "MGCOMM_STORE";
  } else {
    if (mg__truthy(get(ctx, "TORCHELASTIC_USE_AGENT_STORE")))
      return mg__error(MG_ERR_INVALID_ARGUMENT,
                       "under torchrun, MASTER_ADDR:MASTER_PORT is the agent's own store; set "
                       "MGCOMM_STORE=host:port to a free port of the first node for mgcomm's");
    const char *ma = get(ctx, "MASTER_ADDR"), *mp = get(ctx, "MASTER_PORT");
    if (ma == NULL && mp == NULL)
      return mg__error(MG_ERR_INVALID_ARGUMENT,
                       "no store address: set MGCOMM_STORE=host:port (where rank 0 serves the "
                       "job's store), or MASTER_ADDR and MASTER_PORT");
    if (ma == NULL || mp == NULL)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s is set but %s is not",
                       ma ? "MASTER_ADDR" : "MASTER_PORT", ma ? "MASTER_PORT" : "MASTER_ADDR");
    char joined[MG__NET_HOST_MAX + 16];
    if (strlen(ma) >= MG__NET_HOST_MAX)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "MASTER_ADDR is longer than %d bytes",
                       MG__NET_HOST_MAX - 1);
    snprintf(joined, sizeof joined, strchr(ma, ':') && ma[0] != '[' ? "[%s]:%s" : "%s:%s", ma, mp);
    MG_CHECK(mg__net_parse(joined, 0, "MASTER_ADDR:MASTER_PORT", host, sizeof host, &port));
    e->address_from = "MASTER_ADDR/MASTER_PORT";
  }
  mg__net_format(host, port, e->address, sizeof e->address);
  return MG_OK;
}

static mg_status_t mg__read_token(mg__env_get_t get, void *ctx, mg__boot_env_t *e) {
  const char *t = get(ctx, "MGCOMM_JOB_TOKEN");
  if (t != NULL) {
    if (strlen(t) > MG_STORE_TOKEN_MAX)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "MGCOMM_JOB_TOKEN is longer than %d bytes",
                       MG_STORE_TOKEN_MAX);
    snprintf(e->token, sizeof e->token, "%s", t);
    e->token_from = "MGCOMM_JOB_TOKEN";
    return MG_OK;
  }
  for (size_t i = 0; i < sizeof mg__token_sources / sizeof mg__token_sources[0]; i++) {
    const char *v = get(ctx, mg__token_sources[i].var);
    if (v == NULL) continue;
    const char *step = strcmp(mg__token_sources[i].var, "SLURM_JOB_ID") == 0
                           ? get(ctx, "SLURM_STEP_ID") : NULL;
    int n = snprintf(e->token, sizeof e->token, "%s%s%s%s", mg__token_sources[i].prefix, v,
                     step ? "." : "", step ? step : "");
    if (n < 0 || (size_t)n >= sizeof e->token)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s is too long to serve as the job token",
                       mg__token_sources[i].var);
    e->token_from = mg__token_sources[i].var;
    return MG_OK;
  }
  return mg__error(MG_ERR_INVALID_ARGUMENT,
                   "no job token: set MGCOMM_JOB_TOKEN to the same secret on every process (mgcomm "
                   "launch does; torchrun, mpirun and srun give a job id that is used instead)");
}

mg_status_t mg__boot_env_read(mg__env_get_t get, void *ctx, mg__boot_env_t *out) {
  mg__boot_env_t e;
  memset(&e, 0, sizeof e);
  MG_CHECK(mg__read_rank_size(get, ctx, &e));
  MG_CHECK(mg__read_address(get, ctx, &e));
  MG_CHECK(mg__read_token(get, ctx, &e));
  *out = e;
  return MG_OK;
}
