/*
 * backend_select.c -- which backends are built in, and which one MG_BACKEND_AUTO means here
 * (mgcomm.h, mg_backend_t): NCCL when a GPU and libnccl are usable, else host. MGCOMM_BACKEND
 * overrides; an override that cannot run is an error, never a silent fallback.
 */
#include <stdio.h>
#include <string.h>

#include "core/backend.h"
#include "base/error.h"
#include "base/params.h"

const mg__backend_t *mg__backend_get(mg_backend_t id) {
  switch (id) {
    case MG_BACKEND_HOST: return &mg__backend_host;
    case MG_BACKEND_NCCL: return &mg__backend_nccl;
    default: return NULL;
  }
}

static void mg__say(char *reason, size_t len, const char *text) {
  if (reason != NULL && len > 0) snprintf(reason, len, "%s", text);
}

mg_status_t mg_backend_resolve(mg_backend_t requested, mg_backend_t *out, char *reason,
                               size_t reason_len) {
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_backend_resolve: out is NULL");
  if (mg_backend_name(requested) == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_backend_resolve: backend %d is not a backend",
                     (int)requested);
  const char *source = "requested by the caller";
  if (requested == MG_BACKEND_AUTO) {
    const char *env = mg__param_str(MG_PARAM_BACKEND);
    if (strcmp(env, "host") == 0) requested = MG_BACKEND_HOST;
    if (strcmp(env, "nccl") == 0) requested = MG_BACKEND_NCCL;
    if (requested != MG_BACKEND_AUTO) source = "MGCOMM_BACKEND";
  }
  if (requested == MG_BACKEND_AUTO) {
    const mg__backend_t *nccl = mg__backend_get(MG_BACKEND_NCCL);
    if (nccl != NULL && nccl->available() == MG_OK) {
      mg__say(reason, reason_len, "auto: a CUDA device and libnccl are usable");
      *out = MG_BACKEND_NCCL;
      return MG_OK;
    }
    char why[512];
    snprintf(why, sizeof why, "auto: no usable NCCL backend (%s); using host",
             nccl == NULL ? "the NCCL backend is not built into this version" : mg_last_error());
    mg__say(reason, reason_len, why);
    *out = MG_BACKEND_HOST;
    return MG_OK;
  }
  const mg__backend_t *be = mg__backend_get(requested);
  if (be == NULL)
    return mg__error(MG_ERR_BACKEND_UNAVAILABLE,
                     "the %s backend (%s) is not built into this version of mgcomm",
                     mg_backend_name(requested), source);
  if (be->available() != MG_OK) {
    mg__error_prefix("the %s backend (%s) cannot run here", be->name, source);
    return MG_ERR_BACKEND_UNAVAILABLE;
  }
  char why[128];
  snprintf(why, sizeof why, "%s %s", be->name, source);
  mg__say(reason, reason_len, why);
  *out = requested;
  return MG_OK;
}
