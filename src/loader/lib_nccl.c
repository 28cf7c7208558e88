/*
 * lib_nccl.c -- NCCL (libnccl.so.2): its table, its version, and the NCCL error helpers of
 * loader.h.
 */
#include <stdio.h>
#include <string.h>

#include "loader/loader_int.h"

mg__nccl_table_t mg__nccl;
static mg__nccl_table_t mg__nccl_real;

#define X(req, form, member, sym, alt, ret, params, args) \
  MG__WRAP_##form(mg__nccl, member, sym, ret, params, args)
MG__NCCL_SYMBOLS(X)
#undef X

static const mg__sym_desc_t mg__nccl_syms[] = {
#define X(req, form, member, sym, alt, ret, params, args) \
  MG__DESC_ONE(mg__nccl, mg__nccl_table_t, req, form, member, sym, alt)
    MG__NCCL_SYMBOLS(X)
#undef X
};

/* NCCL < 2.9 encoded X.Y.Z as X*1000 + Y*100 + Z; later ones as X*10000 + Y*100 + Z. */
static int mg__nccl_normalise(int code) {
  if (code >= 10000) return code;
  return MG__NCCL_VERSION(code / 1000, (code % 1000) / 100, code % 100);
}

static int mg__nccl_probe(int *version, char *vstr, size_t vlen, char *err, size_t errlen) {
  int v = 0;
  mg__ncclResult_t r = mg__nccl.GetVersion(&v);
  if (r != MG__ncclSuccess || v <= 0) {
    snprintf(err, errlen, "opened, but ncclGetVersion returned %s (%d), version %d",
             mg__nccl_result_name(r), r, v);
    return -1;
  }
  v = mg__nccl_normalise(v);
  *version = v;
  snprintf(vstr, vlen, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  return 0;
}

const mg__lib_desc_t mg__lib_desc_nccl = {
    .id = MG_LIB_NCCL,
    .label = "NCCL",
    .soname = "libnccl.so.2",
    .param = MG_PARAM_NCCL_LIBRARY,
    .param_name = "MGCOMM_NCCL_LIBRARY",
    .home_var = "NCCL_HOME",
    .wheel_dirs = "{nccl,cu13,cu12}",
    .syms = mg__nccl_syms,
    .nsyms = (int)(sizeof mg__nccl_syms / sizeof mg__nccl_syms[0]),
    .table = &mg__nccl,
    .real = &mg__nccl_real,
    .table_size = sizeof(mg__nccl_table_t),
    .probe = mg__nccl_probe,
};

const char *mg__nccl_result_name(mg__ncclResult_t r) {
  static const char *const names[MG__ncclNumResults] = {
      "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",     "ncclRemoteError", "ncclInProgress",
      "ncclTimeout"};
  return (r >= 0 && r < MG__ncclNumResults) ? names[r] : "unknown ncclResult_t";
}

mg_status_t mg__nccl_status(mg__ncclResult_t r) {
  switch (r) {
    case MG__ncclSuccess: return MG_OK;
    case MG__ncclInProgress: return MG_INPROGRESS;
    case MG__ncclInvalidArgument: return MG_ERR_INVALID_ARGUMENT;
    case MG__ncclInvalidUsage: return MG_ERR_INVALID_USAGE;
    case MG__ncclRemoteError: return MG_ERR_REMOTE;
    case MG__ncclTimeout: return MG_ERR_TIMED_OUT; /* NCCL >= 2.30.3: a wait inside NCCL expired */
    default: return MG_ERR_BACKEND;
  }
}

mg_status_t mg__nccl_error(mg__ncclResult_t r, const char *call, mg__ncclComm_t comm) {
  const char *text = mg__nccl.GetErrorString != NULL ? mg__nccl.GetErrorString(r) : NULL;
  const char *last = NULL;
  /* NCCL keeps one last error for the process and ignores comm, which may be NULL. */
  if (mg__nccl.GetLastError != NULL) last = mg__nccl.GetLastError(comm);
  return mg__error(mg__nccl_status(r), "%s failed: %s (%d): %s%s%s", call,
                   mg__nccl_result_name(r), r, text != NULL ? text : "no description",
                   last != NULL && last[0] ? "; NCCL's last error: " : "",
                   last != NULL && last[0] ? last : "");
}

void mg__nccl_config_init(mg__ncclConfig_t *config) {
  int loaded = mg__lib_version(MG_LIB_NCCL);
  memset(config, 0, sizeof *config);
  config->size = sizeof *config;
  config->magic = MG__NCCL_CONFIG_MAGIC;
  config->version = (unsigned)(loaded > 0 && loaded < MG__NCCL_CONFIG_LAYOUT_VERSION
                                   ? loaded
                                   : MG__NCCL_CONFIG_LAYOUT_VERSION);
  config->blocking = MG__NCCL_CONFIG_UNDEF_INT;
  config->cgaClusterSize = MG__NCCL_CONFIG_UNDEF_INT;
  config->minCTAs = MG__NCCL_CONFIG_UNDEF_INT;
  config->maxCTAs = MG__NCCL_CONFIG_UNDEF_INT;
  config->netName = NULL;
  config->splitShare = MG__NCCL_CONFIG_UNDEF_INT;
  config->trafficClass = MG__NCCL_CONFIG_UNDEF_INT;
  config->commName = NULL;
  config->collnetEnable = MG__NCCL_CONFIG_UNDEF_INT;
  config->CTAPolicy = MG__NCCL_CONFIG_UNDEF_INT;
  config->shrinkShare = MG__NCCL_CONFIG_UNDEF_INT;
  config->nvlsCTAs = MG__NCCL_CONFIG_UNDEF_INT;
  config->nChannelsPerNetPeer = MG__NCCL_CONFIG_UNDEF_INT;
  config->nvlinkCentricSched = MG__NCCL_CONFIG_UNDEF_INT;
  config->graphUsageMode = MG__NCCL_CONFIG_UNDEF_INT;
  config->numRmaCtx = MG__NCCL_CONFIG_UNDEF_INT;
  config->maxP2pPeers = MG__NCCL_CONFIG_UNDEF_INT;
  config->graphStreamOrdering = MG__NCCL_CONFIG_UNDEF_INT;
  config->launchOrderImplicit = MG__NCCL_CONFIG_UNDEF_INT;
  config->numRmaSig = MG__NCCL_CONFIG_UNDEF_INT;
  config->rmaEagerInit = MG__NCCL_CONFIG_UNDEF_INT;
  config->hostCftMode = MG__NCCL_CONFIG_UNDEF_INT;
  config->nvlsHostMode = MG__NCCL_CONFIG_UNDEF_INT;
}
