/*
 * test_nccl_config.c -- mg_config_t's NCCL fields into ncclConfig_t (nccl_config.c), checked
 * against the real struct of the installed nccl.h: every field lands where NCCL reads it, for
 * every NCCL version the table knows, and a field that a version lacks is MG_ERR_NOT_SUPPORTED
 * naming the field and the version that has it. Built only where nccl.h exists
 * (tests/unit/nccl.cmake); needs no GPU.
 */
#include <stddef.h>
#include <nccl.h>

#include "backend/nccl/nccl.h"
#include "test.h"

typedef struct {
  const char *name;
  size_t mg_off;     /* in mg_config_t */
  size_t real_off;   /* in the real ncclConfig_t */
  int is_str;
  int since;         /* NCCL version that has it */
} field_t;

#define F3(mgf, ncf, str, x, y, z) \
  {#mgf, offsetof(mg_config_t, mgf), offsetof(ncclConfig_t, ncf), str, MG__NCCL_VERSION(x, y, z)}
#define F(mgf, ncf, str, x, y) F3(mgf, ncf, str, x, y, 0)

static const field_t fields[] = {
    F(nccl_cga_cluster_size, cgaClusterSize, 0, 2, 17),
    F(nccl_min_ctas, minCTAs, 0, 2, 17),
    F(nccl_max_ctas, maxCTAs, 0, 2, 17),
    F(nccl_net_name, netName, 1, 2, 17),
    F(nccl_split_share, splitShare, 0, 2, 18),
    F(nccl_traffic_class, trafficClass, 0, 2, 26),
    F(nccl_comm_name, commName, 1, 2, 27),
    F(nccl_collnet_enable, collnetEnable, 0, 2, 27),
    F(nccl_cta_policy, CTAPolicy, 0, 2, 27),
    F(nccl_shrink_share, shrinkShare, 0, 2, 27),
    F(nccl_nvls_ctas, nvlsCTAs, 0, 2, 27),
    F(nccl_nchannels_per_net_peer, nChannelsPerNetPeer, 0, 2, 28),
    F(nccl_nvlink_centric_sched, nvlinkCentricSched, 0, 2, 28),
/* The fields of 2.29 to 2.32, where the header has them (tests/unit/nccl29.cmake builds this
 * test against the 2.32.3 wheel's nccl.h too). */
#if NCCL_VERSION_CODE >= 23203
    F3(nccl_graph_usage_mode, graphUsageMode, 0, 2, 29, 2),
    F3(nccl_num_rma_ctx, numRmaCtx, 0, 2, 29, 2),
    F3(nccl_max_p2p_peers, maxP2pPeers, 0, 2, 30, 3),
    F3(nccl_graph_stream_ordering, graphStreamOrdering, 0, 2, 30, 7),
    F(nccl_launch_order_implicit, launchOrderImplicit, 0, 2, 31),
    F(nccl_num_rma_sig, numRmaSig, 0, 2, 31),
    F(nccl_rma_eager_init, rmaEagerInit, 0, 2, 31),
    F(nccl_host_cft_mode, hostCftMode, 0, 2, 31),
    F(nccl_nvls_host_mode, nvlsHostMode, 0, 2, 32),
#endif
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static void set_field(mg_config_t *c, const field_t *f, int value, const char *str) {
  if (f->is_str)
    memcpy((char *)c + f->mg_off, &str, sizeof str);
  else
    memcpy((char *)c + f->mg_off, &value, sizeof value);
}

/* Our output read through the real header's layout. */
static ncclConfig_t as_real(const mg__ncclConfig_t *ours) {
  ncclConfig_t real = NCCL_CONFIG_INITIALIZER;
  /* As NCCL reads it: min(size, its own sizeof) bytes. */
  memcpy(&real, ours, sizeof *ours < sizeof real ? sizeof *ours : sizeof real);
  return real;
}

static void check_defaults(const ncclConfig_t *real, int version, const field_t *except) {
  ASSERT_EQ(real->magic, 0xcafebeefu);
  ASSERT_EQ(real->size, sizeof(mg__ncclConfig_t));
  ASSERT_EQ(real->blocking, 0); /* always nonblocking */
  ASSERT_EQ(real->version, version < MG__NCCL_CONFIG_LAYOUT_VERSION ? version
                                                                    : MG__NCCL_CONFIG_LAYOUT_VERSION);
  for (size_t i = 0; i < NFIELDS; i++) {
    if (&fields[i] == except) continue;
    const char *p = (const char *)real + fields[i].real_off;
    if (fields[i].is_str) {
      const char *s;
      memcpy(&s, p, sizeof s);
      if (s != NULL) FAIL("%s is set, expected NULL", fields[i].name);
    } else {
      int v;
      memcpy(&v, p, sizeof v);
      if (v != NCCL_CONFIG_UNDEF_INT) FAIL("%s is %d, expected NCCL_CONFIG_UNDEF_INT", fields[i].name, v);
    }
  }
}

int main(void) {
  if (NCCL_VERSION_CODE < MG__NCCL_VERSION(2, 28, 0))
    SKIP("nccl.h is %d, older than the 2.28 layout mgcomm declares", NCCL_VERSION_CODE);
  static const int versions[] = {MG__NCCL_VERSION(2, 14, 3), MG__NCCL_VERSION(2, 17, 1),
                                 MG__NCCL_VERSION(2, 18, 5), MG__NCCL_VERSION(2, 21, 5),
                                 MG__NCCL_VERSION(2, 26, 2), MG__NCCL_VERSION(2, 27, 3),
                                 MG__NCCL_VERSION(2, 28, 3), MG__NCCL_VERSION(2, 28, 9),
                                 MG__NCCL_VERSION(2, 29, 2), MG__NCCL_VERSION(2, 30, 4),
                                 MG__NCCL_VERSION(2, 30, 7), MG__NCCL_VERSION(2, 31, 2),
                                 MG__NCCL_VERSION(2, 32, 3)};
  const char *name = "mg-test-comm";
  int checked = 0, refused = 0;
  for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
    const int ver = versions[v];
    /* Nothing set: every field is NCCL's default, for any version. */
    mg_config_t none = MG_CONFIG_INIT;
    mg__ncclConfig_t out;
    ASSERT_OK(mg__nccl_config_build(&none, ver, &out, "the_test"));
    ncclConfig_t real = as_real(&out);
    check_defaults(&real, ver, NULL);
    for (size_t i = 0; i < NFIELDS; i++) {
      const field_t *f = &fields[i];
      mg_config_t c = MG_CONFIG_INIT;
      set_field(&c, f, 7 + (int)i, name);
      mg_status_t st = mg__nccl_config_build(&c, ver, &out, "the_test");
      if (ver < f->since) {
        ASSERT_EQ(st, MG_ERR_NOT_SUPPORTED);
        ASSERT_CONTAINS(mg_last_error(), "the_test");
        ASSERT_CONTAINS(mg_last_error(), f->name);
        char want[64];
        if (f->since % 100)
          snprintf(want, sizeof want, "needs NCCL >= %d.%d.%d;", f->since / 10000,
                   f->since / 100 % 100, f->since % 100);
        else
          snprintf(want, sizeof want, "needs NCCL >= %d.%d;", f->since / 10000,
                   f->since / 100 % 100);
        ASSERT_CONTAINS(mg_last_error(), want);
        snprintf(want, sizeof want, "the loaded NCCL is %d.%d.%d", ver / 10000, ver / 100 % 100,
                 ver % 100);
        ASSERT_CONTAINS(mg_last_error(), want);
        refused++;
        continue;
      }
      ASSERT_OK(st);
      real = as_real(&out);
      check_defaults(&real, ver, f);
      const char *p = (const char *)&real + f->real_off;
      if (f->is_str) {
        const char *s;
        memcpy(&s, p, sizeof s);
        ASSERT(s == name);
      } else {
        int got;
        memcpy(&got, p, sizeof got);
        ASSERT_EQ(got, 7 + (int)i);
      }
      checked++;
    }
  }
  /* The same fields: NCCL is given no config and inherits the parent's. */
  mg_config_t a = MG_CONFIG_INIT, b = MG_CONFIG_INIT;
  ASSERT_EQ(mg__nccl_config_same(&a, &b), 1);
  a.timeout_s = 5; /* not an NCCL field */
  ASSERT_EQ(mg__nccl_config_same(&a, &b), 1);
  for (size_t i = 0; i < NFIELDS; i++) {
    mg_config_t c = MG_CONFIG_INIT;
    set_field(&c, &fields[i], 1, name);
    ASSERT_EQ(mg__nccl_config_same(&c, &b), 0);
    mg_config_t d = c;
    ASSERT_EQ(mg__nccl_config_same(&c, &d), 1);
  }
  printf("ncclConfig_t: %d fields placed, %d refused by version\n", checked, refused);
  return 0;
}
