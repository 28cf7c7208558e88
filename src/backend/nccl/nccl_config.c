/*
 * nccl_config.c -- mg_config_t's nccl_* fields into NCCL's ncclConfig_t, by version.
 *
 * NCCL reads min(config->size, its own sizeof) bytes and ignores the fields that
 * config->version predates, so a field the loaded NCCL does not know would be dropped without a
 * word. mgcomm reports it instead: a field set for an NCCL that lacks it is
 * MG_ERR_NOT_SUPPORTED naming the version that has it. The versions are those of the first
 * nccl.h that declares each field.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/nccl/nccl.h"
#include "base/params.h"

typedef struct mg__ncfg_field {
  const char *name;   /* mg_config_t's field */
  size_t mg_off;      /* its offset in mg_config_t */
  size_t nc_off;      /* the offset of NCCL's field in ncclConfig_t */
  int is_str;         /* const char * (else int) */
  int since;          /* the NCCL version that has it */
} mg__ncfg_field_t;

#define MG__NCFG(field, ncfield, is_str, x, y) MG__NCFG3(field, ncfield, is_str, x, y, 0)
#define MG__NCFG3(field, ncfield, is_str, x, y, z)                                      \
  {#field, offsetof(mg_config_t, field), offsetof(mg__ncclConfig_t, ncfield), is_str, \
   MG__NCCL_VERSION(x, y, z)}

static const mg__ncfg_field_t mg__ncfg_fields[] = {
    MG__NCFG(nccl_cga_cluster_size, cgaClusterSize, 0, 2, 17),
    MG__NCFG(nccl_min_ctas, minCTAs, 0, 2, 17),
    MG__NCFG(nccl_max_ctas, maxCTAs, 0, 2, 17),
    MG__NCFG(nccl_net_name, netName, 1, 2, 17),
    MG__NCFG(nccl_split_share, splitShare, 0, 2, 18),
    MG__NCFG(nccl_traffic_class, trafficClass, 0, 2, 26),
    MG__NCFG(nccl_comm_name, commName, 1, 2, 27),
    MG__NCFG(nccl_collnet_enable, collnetEnable, 0, 2, 27),
    MG__NCFG(nccl_cta_policy, CTAPolicy, 0, 2, 27),
    MG__NCFG(nccl_shrink_share, shrinkShare, 0, 2, 27),
    MG__NCFG(nccl_nvls_ctas, nvlsCTAs, 0, 2, 27),
    MG__NCFG(nccl_nchannels_per_net_peer, nChannelsPerNetPeer, 0, 2, 28),
    MG__NCFG(nccl_nvlink_centric_sched, nvlinkCentricSched, 0, 2, 28),
    MG__NCFG3(nccl_graph_usage_mode, graphUsageMode, 0, 2, 29, 2),
    MG__NCFG3(nccl_num_rma_ctx, numRmaCtx, 0, 2, 29, 2),
    MG__NCFG3(nccl_max_p2p_peers, maxP2pPeers, 0, 2, 30, 3),
    MG__NCFG3(nccl_graph_stream_ordering, graphStreamOrdering, 0, 2, 30, 7),
    MG__NCFG(nccl_launch_order_implicit, launchOrderImplicit, 0, 2, 31),
    MG__NCFG(nccl_num_rma_sig, numRmaSig, 0, 2, 31),
    MG__NCFG(nccl_rma_eager_init, rmaEagerInit, 0, 2, 31),
    MG__NCFG(nccl_host_cft_mode, hostCftMode, 0, 2, 31),
    MG__NCFG(nccl_nvls_host_mode, nvlsHostMode, 0, 2, 32),
};
#define MG__NCFG_COUNT (sizeof mg__ncfg_fields / sizeof mg__ncfg_fields[0])

static int mg__ncfg_int(const void *base, size_t off) {
  int v;
  memcpy(&v, (const char *)base + off, sizeof v);
  return v;
}

static const char *mg__ncfg_str(const void *base, size_t off) {
  const char *v;
  memcpy(&v, (const char *)base + off, sizeof v);
  return v;
}

static int mg__ncfg_set(const mg_config_t *in, const mg__ncfg_field_t *f) {
  return f->is_str ? mg__ncfg_str(in, f->mg_off) != NULL
                   : mg__ncfg_int(in, f->mg_off) != MG_UNDEF_INT;
}

mg_status_t mg__nccl_config_build(const mg_config_t *in, int version, mg__ncclConfig_t *out,
                                  const char *fn) {
  mg__nccl_config_init(out);
  /* NCCL reads only the fields this version announces: never more than the loaded one has. */
  out->version = (unsigned)(version < MG__NCCL_CONFIG_LAYOUT_VERSION
                                ? version
                                : MG__NCCL_CONFIG_LAYOUT_VERSION);
  out->blocking = 0; /* the lifecycle communicator; nccl_backend.c splits the blocking one */
  for (size_t i = 0; i < MG__NCFG_COUNT; i++) {
    const mg__ncfg_field_t *f = &mg__ncfg_fields[i];
    if (!mg__ncfg_set(in, f)) continue;
    if (version < f->since) {
      char since[16]; /* "2.28", or "2.30.3" where a patch release brought the field */
      if (f->since % 100)
        snprintf(since, sizeof since, "%d.%d.%d", f->since / 10000, f->since / 100 % 100,
                 f->since % 100);
      else
        snprintf(since, sizeof since, "%d.%d", f->since / 10000, f->since / 100 % 100);
      return mg__error(MG_ERR_NOT_SUPPORTED,
                       "%s: config->%s needs NCCL >= %s; the loaded NCCL is %d.%d.%d", fn,
                       f->name, since, version / 10000, version / 100 % 100, version % 100);
    }
    memcpy((char *)out + f->nc_off, (const char *)in + f->mg_off,
           f->is_str ? sizeof(const char *) : sizeof(int));
  }
  return MG_OK;
}

/* 1 when `in` asks for blocking mode: config->nccl_blocking, else MGCOMM_NCCL_BLOCKING. */
static int mg__nccl_wants_blocking(const mg_config_t *in) {
  return in->nccl_blocking != MG_UNDEF_INT ? in->nccl_blocking != 0
                                           : (int)mg__param_int(MG_PARAM_NCCL_BLOCKING);
}

int mg__nccl_config_same(const mg_config_t *a, const mg_config_t *b) {
  for (size_t i = 0; i < MG__NCFG_COUNT; i++) {
    const mg__ncfg_field_t *f = &mg__ncfg_fields[i];
    if (f->is_str) {
      /* By pointer: an inherited config holds the parent's pointers, whose strings may be gone
       * (they are read during init only), so they are never read here. */
      if (mg__ncfg_str(a, f->mg_off) != mg__ncfg_str(b, f->mg_off)) return 0;
    } else if (mg__ncfg_int(a, f->mg_off) != mg__ncfg_int(b, f->mg_off)) {
      return 0;
    }
  }
  /* A child in the other mode must not inherit its parent's lc configuration (one channel in
   * blocking mode). A config whose mode differs from the parent's is the caller's own, not the
   * inherited copy, so its strings are still there. */
  return mg__nccl_wants_blocking(a) == mg__nccl_wants_blocking(b);
}

int mg__nccl_blocking_mode(const mg_config_t *in) {
  /* The blocking communicator is split from the lifecycle one: without split (NCCL < 2.18)
   * there is only the nonblocking one. */
  return mg__nccl_wants_blocking(in) && mg__feature(MG_FEATURE_NCCL_SPLIT);
}

mg_status_t mg__nccl_config_lc(const mg_config_t *in, mg__ncclConfig_t *out, const char *fn) {
  MG_CHECK(mg__nccl_config_build(in, mg__lib_version(MG_LIB_NCCL), out, fn));
  /* NCCL caps the channels of a child that shares its parent's resources at the parent's: with
   * NCCL_COMM_SPLIT_SHARE_RESOURCES=1 (every split shares) a one-channel lc would leave the
   * blocking communicator one channel. */
  const char *share = getenv("NCCL_COMM_SPLIT_SHARE_RESOURCES");
  if (mg__nccl_blocking_mode(in) && !(share != NULL && atoi(share) == 1)) {
    out->minCTAs = 1;
    out->maxCTAs = 1;
  }
  return MG_OK;
}
