/*
 * access.c -- mg_p2p_enable_all: peer access for every pair that can have it, once, with what
 * failed recorded per pair, and the calling thread's current context put back.
 */
#include <stdio.h>

#include "base/error.h"
#include "loader/loader.h"
#include "p2p/p2p.h"

/* Enables a -> b in a's context. Already enabled (by us, or by the program through the runtime)
 * is success. A failure is the pair's, recorded in it; the status is MG_OK unless a context
 * could not be had. Under p->lock; the caller's current context is left as it was. */
mg_status_t mg__p2p_enable_locked(mg__p2p_t *p, int a, int b) {
  mg__p2p_pair_t *pp = mg__p2p_pair(p, a, b);
  mg__CUcontext ctx_a, ctx_b, saved;
  MG_CHECK(mg__p2p_ctx_locked(p, a, &ctx_a));
  MG_CHECK(mg__p2p_ctx_locked(p, b, &ctx_b));
  MG_CHECK(mg__device_ctx_enter(ctx_a, &saved));
  mg__CUresult r = mg__cuda.CtxEnablePeerAccess(ctx_b, 0);
  mg__device_ctx_leave(ctx_a, saved);
  if (r == MG__CUDA_SUCCESS || r == MG__CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
    pp->enabled = 1;
    pp->enable_status = MG_OK;
    pp->reason[0] = '\0';
    return MG_OK;
  }
  pp->enable_status = mg__cu_error(r, "cuCtxEnablePeerAccess");
  snprintf(pp->reason, sizeof pp->reason, "enabling peer access %d -> %d: %s", a, b,
           mg_last_error());
  return MG_OK;
}

mg_status_t mg_p2p_enable_all(int *failed) {
  mg__p2p_t *p;
  MG_CHECK(mg__p2p_get(&p));
  mg_status_t st = MG_OK;
  int nfailed = 0;
  pthread_mutex_lock(&p->lock);
  for (int a = 0; a < p->n && st == MG_OK; a++)
    for (int b = 0; b < p->n && st == MG_OK; b++) {
      mg__p2p_pair_t *pp = mg__p2p_pair(p, a, b);
      /* A pair whose probe failed had its access disabled on purpose: it stays so. */
      if (a == b || !pp->can_access || pp->enabled || pp->probe == MG_P2P_PROBE_FAILED) continue;
      st = mg__p2p_enable_locked(p, a, b);
      nfailed += st == MG_OK && pp->enable_status != MG_OK;
    }
  pthread_mutex_unlock(&p->lock);
  if (st != MG_OK) {
    mg__error_prefix("mg_p2p_enable_all");
    return st;
  }
  if (failed != NULL) *failed = nfailed;
  return MG_OK;
}
