/*
 * nccl_suspend.c -- NCCL 2.29+'s suspend and resume (ncclCommSuspend / ncclCommResume, 2.29.7),
 * memory statistics (ncclCommMemStats, 2.29.7), properties (ncclCommQueryProperties, 2.29.2)
 * and grow (ncclCommGetUniqueId / ncclCommGrow, 2.29.2), bounded as the rest of the lifecycle.
 *
 * A rank has two NCCL communicators in blocking mode (nccl.h): both hold memory, so suspend,
 * resume and the statistics act on both. Suspend and resume are collective inside NCCL (a
 * bootstrap barrier of the communicator's ranks): on the blocking one (nc) the call is bounded by
 * the watchdog (mg__comm_call_enter), which revokes it past the deadline; on the nonblocking one
 * (lc) NCCL answers ncclInProgress and mg__nccl_wait polls it against the deadline. Every rank
 * takes them in the same order: nc, then lc.
 *
 * Grow runs on lc like split (NCCL's job belongs to the parent and writes pending_child); a new
 * rank's grow is its init. The child then gets its operations communicator as every creation
 * does (mg__nccl_opcomms).
 */
#include <stddef.h>
#include <string.h>

#include "backend/nccl/nccl.h"

/* One suspend (resume = 0) or resume of c, a communicator of comm: blocking or not. */
static mg_status_t mg__nsusp_one(mg_comm_t *comm, mg__ncclComm_t c, int resume, int flags,
                                 double deadline) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  const char *call = resume ? "ncclCommResume" : "ncclCommSuspend";
  const int blocking = c != nx->lc; /* nc of blocking mode */
  if (blocking) mg__comm_call_enter(comm, deadline);
  mg__ncclResult_t r = resume ? mg__nccl.CommResume(c) : mg__nccl.CommSuspend(c, flags);
  if (blocking) mg__comm_call_leave(comm);
  if (blocking && r != MG__ncclSuccess) return mg__nccl_call_error(comm, r, call);
  if (r != MG__ncclSuccess && r != MG__ncclInProgress) return mg__nccl_error(r, call, c);
  return blocking ? MG_OK : mg__nccl_wait(&comm, 1, deadline, call);
}

static mg_status_t mg__nsusp(mg_comm_t *comm, int resume, int flags, double deadline,
                             const char *fn) {
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_SUSPEND, fn));
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg_status_t st = MG_OK;
  if (nx->nc != nx->lc) st = mg__nsusp_one(comm, nx->nc, resume, flags, deadline);
  if (st == MG_OK) st = mg__nsusp_one(comm, nx->lc, resume, flags, deadline);
  mg__device_ctx_leave(nx->ctx, saved);
  if (st < 0) mg__error_prefix("%s", fn);
  return st;
}

mg_status_t mg__nccl_suspend(mg_comm_t *comm, int flags, double deadline) {
  (void)flags; /* MG_SUSPEND_MEM, the core checked it */
  return mg__nsusp(comm, 0, MG__NCCL_SUSPEND_MEM, deadline, "mg_comm_suspend");
}

mg_status_t mg__nccl_resume(mg_comm_t *comm, double deadline) {
  return mg__nsusp(comm, 1, 0, deadline, "mg_comm_resume");
}

/* Adds c's statistics to out. */
static mg_status_t mg__nstats_add(mg__ncclComm_t c, mg_comm_mem_stats_t *out) {
  uint64_t susp = 0, persist = 0, total = 0;
  MG_NCCL_CHECK(c, CommMemStats, c, MG__ncclStatGpuMemSuspend, &susp);
  MG_NCCL_CHECK(c, CommMemStats, c, MG__ncclStatGpuMemPersist, &persist);
  MG_NCCL_CHECK(c, CommMemStats, c, MG__ncclStatGpuMemTotal, &total);
  out->suspendable_bytes += susp;
  out->persistent_bytes += persist;
  out->total_bytes += total;
  return MG_OK;
}

mg_status_t mg__nccl_mem_stats(mg_comm_t *comm, mg_comm_mem_stats_t *out) {
  static const char fn[] = "mg_comm_mem_stats";
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_SUSPEND, fn));
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg_status_t st = mg__nstats_add(nx->lc, out);
  if (st == MG_OK && nx->nc != NULL && nx->nc != nx->lc) st = mg__nstats_add(nx->nc, out);
  if (st < 0) mg__error_prefix("%s", fn);
  return st;
}

/* ---- properties --------------------------------------------------------------------------- */

/* The size of ncclCommProperties_t whose last field is f, as a C compiler lays it out. */
#define MG__NPROP_END(f) (offsetof(mg__ncclCommProperties_t, f) + \
                          sizeof(((mg__ncclCommProperties_t *)0)->f))
#define MG__NPROP_SIZE(f) \
  ((MG__NPROP_END(f) + _Alignof(mg__ncclCommProperties_t) - 1) / \
   _Alignof(mg__ncclCommProperties_t) * _Alignof(mg__ncclCommProperties_t))

/* The layout of the loaded NCCL's ncclCommProperties_t: the version to announce (that of the
 * newest layout this NCCL has, never more than the loaded one) and its size. */
static void mg__nprop_layout(int loaded, unsigned *version, size_t *size) {
  if (loaded >= MG__NCCL_VERSION(2, 32, 0)) {
    *size = MG__NPROP_SIZE(cftCountedSupport);
  } else if (loaded >= MG__NCCL_VERSION(2, 31, 0)) {
    *size = MG__NPROP_SIZE(devCommRuntimeVersionSize);
  } else if (loaded >= MG__NCCL_VERSION(2, 29, 7)) {
    *size = MG__NPROP_SIZE(railedGinType);
  } else {
    *size = MG__NPROP_SIZE(ginType);
  }
  *version = (unsigned)(loaded < MG__NCCL_VERSION(2, 32, 3) ? loaded : MG__NCCL_VERSION(2, 32, 3));
}

mg_status_t mg__nccl_properties(mg_comm_t *comm, mg_comm_properties_t *out) {
  static const char fn[] = "mg_comm_properties";
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_PROPERTIES, fn));
  mg__ncomm_t *nx = mg__ncomm(comm);
  const int loaded = mg__lib_version(MG_LIB_NCCL);
  mg__ncclCommProperties_t p;
  memset(&p, 0, sizeof p);
  p.magic = MG__NCCL_CONFIG_MAGIC; /* NCCL_API_MAGIC */
  mg__nprop_layout(loaded, &p.version, &p.size);
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg__ncclResult_t r = mg__nccl.CommQueryProperties(nx->nc, &p);
  mg__device_ctx_leave(nx->ctx, saved);
  if (r != MG__ncclSuccess) {
    mg_status_t st = mg__nccl_error(r, "ncclCommQueryProperties", nx->nc);
    mg__error_prefix("%s", fn);
    return st;
  }
  out->nvml_device = p.nvmlDev;
  out->device_api = p.deviceApiSupport;
  out->multimem = p.multimemSupport;
  out->gin_type = p.ginType;
  if (loaded >= MG__NCCL_VERSION(2, 29, 7)) {
    out->lsa_teams = p.nLsaTeams;
    out->host_rma = p.hostRmaSupport;
    out->railed_gin_type = p.railedGinType;
  }
  if (loaded >= MG__NCCL_VERSION(2, 31, 0)) out->comm_hash = p.commHash;
  if (loaded >= MG__NCCL_VERSION(2, 32, 0)) {
    out->cft = p.cftSupport;
    out->cft_multimem = p.cftMulticastSupport;
  }
  out->nccl_version = loaded;
  return MG_OK;
}

/* ---- grow --------------------------------------------------------------------------------- */

mg_status_t mg__nccl_grow_id(mg_comm_t *comm, mg_unique_id_t *id) {
  static const char fn[] = "mg_comm_grow_id";
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_GROW, fn));
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__ncclUniqueId nid;
  memset(&nid, 0, sizeof nid);
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg__ncclResult_t r = mg__nccl.CommGetUniqueId(nx->lc, &nid);
  mg__device_ctx_leave(nx->ctx, saved);
  if (r != MG__ncclSuccess) {
    mg_status_t st = mg__nccl_error(r, "ncclCommGetUniqueId", nx->lc);
    mg__error_prefix("%s", fn);
    return st;
  }
  memcpy(id->internal, nid.internal, sizeof nid.internal);
  return MG_OK;
}

/* A rank of the old communicator: ncclCommGrow on its lc (rank -1; the id only on rank 0, as
 * NCCL wants), then the child's own lc and nc. */
static mg_status_t mg__ngrow_existing(mg_comm_t *comm, const mg__ncclUniqueId *id,
                                      mg_comm_t *child, double deadline, const char *fn) {
  mg__ncomm_t *px = mg__ncomm(comm);
  mg__ncclConfig_t cfg, *cfgp = NULL;
  if (!mg__nccl_config_same(&child->config, &comm->config)) {
    MG_CHECK(mg__nccl_config_lc(&child->config, &cfg, fn));
    cfgp = &cfg;
  }
  MG_CHECK(mg__ncomm_setup(child, comm->device, fn));
  mg__CUcontext saved = NULL;
  mg_status_t st = mg__device_ctx_enter(px->ctx, &saved);
  if (st == MG_OK) {
    mg__nccl_drop(&px->pending_child); /* one a timed-out split or grow finished after all */
    mg__ncclResult_t r = mg__nccl.CommGrow(px->lc, child->nranks, comm->rank == 0 ? id : NULL,
                                           -1, &px->pending_child, cfgp);
    if (r != MG__ncclSuccess && r != MG__ncclInProgress)
      st = mg__nccl_error(r, "ncclCommGrow", px->lc);
    else
      st = mg__nccl_wait(&comm, 1, deadline, "ncclCommGrow");
    if (st == MG_OK) {
      mg__ncomm_t *cx = mg__ncomm(child);
      cx->lc = px->pending_child;
      px->pending_child = NULL;
      if (cx->lc == NULL)
        st = mg__error(MG_ERR_INTERNAL, "ncclCommGrow succeeded but gave no communicator");
      if (st == MG_OK) st = mg__nccl_wait(&child, 1, deadline, "ncclCommGrow");
      if (st == MG_OK) st = mg__nccl_opcomms(&child, 1, deadline, fn);
    }
    mg__device_ctx_leave(px->ctx, saved);
  }
  if (st < 0) {
    mg__nccl_drop_both(mg__ncomm(child));
    mg__ncomm_release(child);
  }
  return st;
}

/* A new rank: ncclCommGrow without a communicator, on config->device (as init). */
static mg_status_t mg__ngrow_new(const mg__ncclUniqueId *id, mg_comm_t *child, double deadline,
                                 const char *fn) {
  mg__ncclConfig_t cfg;
  MG_CHECK(mg__nccl_config_lc(&child->config, &cfg, fn));
  const int device = child->config.device == MG_UNDEF_INT ? 0 : child->config.device;
  MG_CHECK(mg__ncomm_setup(child, device, fn));
  mg__ncomm_t *nx = mg__ncomm(child);
  mg__CUcontext saved = NULL;
  mg_status_t st = mg__device_ctx_enter(nx->ctx, &saved);
  if (st == MG_OK) {
    mg__ncclResult_t r = mg__nccl.CommGrow(NULL, child->nranks, id, child->rank, &nx->lc, &cfg);
    if (r != MG__ncclSuccess && r != MG__ncclInProgress)
      st = mg__nccl_error(r, "ncclCommGrow", nx->lc);
    else
      st = mg__nccl_wait(&child, 1, deadline, "ncclCommGrow");
    if (st == MG_OK) st = mg__nccl_opcomms(&child, 1, deadline, fn);
    if (st < 0) mg__nccl_drop_both(nx);
    mg__device_ctx_leave(nx->ctx, saved);
  }
  if (st < 0) mg__ncomm_release(child);
  return st;
}

mg_status_t mg__nccl_grow(mg_comm_t *comm, const mg_unique_id_t *uid, mg_comm_t *child,
                          double deadline) {
  static const char fn[] = "mg_comm_grow";
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_GROW, fn));
  mg__ncclUniqueId id;
  MG_CHECK(mg__nccl_id(uid, &id, fn));
  mg_status_t st = comm != NULL ? mg__ngrow_existing(comm, &id, child, deadline, fn)
                                : mg__ngrow_new(&id, child, deadline, fn);
  if (st < 0) {
    mg__error_prefix("%s", fn);
    return st;
  }
  /* Every rank of the child has the id: its tag is the same on all. */
  mg__ncomm(child)->tag = mg__nccl_tag_of_id(&id);
  mg__nccl_progress_join(child);
  return MG_OK;
}
