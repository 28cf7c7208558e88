/*
 * test_gpu_nccl29.c -- NCCL 2.29 to 2.32's host API on GPUs (issue 24), through mgcomm:
 *
 *   test_gpu_nccl29 one       1 GPU: properties; memory statistics, suspend (the device memory
 *                             really comes back: cuMemGetInfo), statistics, resume, a correct
 *                             all_reduce; every new config field; NCCL's parameters; a grow id;
 *                             window pointers. With an NCCL older than a feature, the calls are
 *                             MG_ERR_NOT_SUPPORTED naming the version that has it.
 *   test_gpu_nccl29 grow      2 or 4 GPUs: half the GPUs' ranks grow to all of them (threads,
 *                             one rank per GPU), then an all_reduce on the grown communicator
 *                             and on the old one
 *   test_gpu_nccl29 signals   2 GPUs: put with signal, signal, wait on symmetric registrations
 *
 * Each exits 77 with the reason where there are too few GPUs, no NCCL, or (grow, signals) an
 * NCCL older than 2.29.2.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

#define FLOATS (16u << 20) /* 64 MiB all_reduce */

static int nccl_version(void) { return mg__lib_version(MG_LIB_NCCL); }

static mg_config_t nccl_cfg(int device) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = GU_TIMEOUT_S;
  cfg.device = device;
  return cfg;
}

/* An all_reduce of i % 97 + rank over the ranks of comm, checked on the host. */
static void all_reduce_check(mg_comm_t *comm, gu_dev_t *d, int rank, int nranks, size_t n,
                             const char *label) {
  float *h = malloc(sizeof *h * n);
  ASSERT(h != NULL);
  for (size_t i = 0; i < n; i++) h[i] = (float)(i % 97 + (size_t)rank);
  void *buf = gu_alloc(d, sizeof *h * n);
  gu_put(d, buf, h, sizeof *h * n);
  ASSERT_OK(mg_all_reduce(buf, buf, n, MG_FLOAT32, MG_SUM, comm, (mg_stream_t)d->stream));
  gu_sync(d, GU_TIMEOUT_S, label);
  gu_get(d, h, buf, sizeof *h * n);
  gu_sync(d, GU_TIMEOUT_S, label);
  const float ranks = (float)nranks * (float)(nranks - 1) / 2.0f;
  for (size_t i = 0; i < n; i += 4099)
    if (h[i] != (float)nranks * (float)(i % 97) + ranks)
      FAIL("%s: element %zu is %g, expected %g", label, i, h[i],
           (float)nranks * (float)(i % 97) + ranks);
  gu_free(d, buf);
  free(h);
}

static size_t free_bytes(gu_dev_t *d) {
  size_t fr = 0, total = 0;
  if (mg__cuda.MemGetInfo == NULL) FAIL("this CUDA driver has no cuMemGetInfo_v2");
  ASSERT_EQ(mg__cuda.CtxSetCurrent(d->ctx), MG__CUDA_SUCCESS);
  ASSERT_EQ(mg__cuda.MemGetInfo(&fr, &total), MG__CUDA_SUCCESS);
  return fr;
}

static void print_stats(const char *when, const mg_comm_mem_stats_t *ms) {
  printf("  mem stats %-16s suspendable %12llu  persistent %12llu  total %12llu  suspended %d\n",
         when, (unsigned long long)ms->suspendable_bytes, (unsigned long long)ms->persistent_bytes,
         (unsigned long long)ms->total_bytes, ms->suspended);
}

/* A call that needs NCCL >= since: MG_OK from then on, MG_ERR_NOT_SUPPORTED naming it before. */
static int gated(mg_status_t st, int since, const char *since_s, const char *what) {
  if (nccl_version() >= since) {
    if (st != MG_OK) FAIL("%s: %s: %s", what, mg_status_name(st), mg_last_error());
    return 1;
  }
  if (st != MG_ERR_NOT_SUPPORTED)
    FAIL("%s on NCCL %d: %s, expected MG_ERR_NOT_SUPPORTED", what, nccl_version(),
         mg_status_name(st));
  ASSERT_CONTAINS(mg_last_error(), since_s);
  printf("  %s: not supported by NCCL %d, as expected (%s)\n", what, nccl_version(), since_s);
  return 0;
}

static void one_properties(mg_comm_t *comm) {
  mg_comm_properties_t p;
  if (!gated(mg_comm_properties(comm, &p), 22902, "2.29.2", "mg_comm_properties")) return;
  printf("  properties: rank %d nranks %d device %d nvml %d device_api %d multimem %d gin_type "
         "%d lsa_teams %d host_rma %d railed_gin_type %d cft %d cft_multimem %d comm_hash "
         "0x%llx nccl %d\n", p.rank, p.nranks, p.device, p.nvml_device, p.device_api, p.multimem,
         p.gin_type, p.lsa_teams, p.host_rma, p.railed_gin_type, p.cft, p.cft_multimem,
         (unsigned long long)p.comm_hash, p.nccl_version);
  ASSERT_EQ(p.rank, 0);
  ASSERT_EQ(p.nranks, 1);
  ASSERT_EQ(p.device, 0);
  ASSERT_GE(p.nvml_device, 0);
  ASSERT(p.device_api == 0 || p.device_api == 1);
  ASSERT_EQ(p.nccl_version, nccl_version());
  if (nccl_version() >= 22907) ASSERT(p.lsa_teams >= 0 && (p.host_rma == 0 || p.host_rma == 1));
  if (nccl_version() >= 23100) ASSERT(p.comm_hash != 0);
}

static void one_suspend(mg_comm_t *comm, gu_dev_t *d) {
  mg_comm_mem_stats_t before, during, after;
  all_reduce_check(comm, d, 0, 1, FLOATS, "all_reduce before suspend");
  if (!gated(mg_comm_mem_stats(comm, &before), 22907, "2.29.7", "mg_comm_mem_stats")) {
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_comm_suspend(comm, MG_SUSPEND_MEM));
    ASSERT_CONTAINS(mg_last_error(), "2.29.7");
    all_reduce_check(comm, d, 0, 1, FLOATS, "all_reduce after the refused suspend");
    return;
  }
  print_stats("before suspend", &before);
  ASSERT_EQ(before.suspended, 0);
  ASSERT_EQ(before.device, 0);
  ASSERT_GE(before.total_bytes, before.suspendable_bytes);
  const size_t free0 = free_bytes(d);
  ASSERT_OK(mg_comm_suspend(comm, MG_SUSPEND_MEM));
  const size_t free1 = free_bytes(d);
  ASSERT_OK(mg_comm_mem_stats(comm, &during));
  print_stats("suspended", &during);
  const long long released = (long long)free1 - (long long)free0;
  printf("  device free memory: %zu -> %zu bytes (%+lld) on suspend; suspendable was %llu\n",
         free0, free1, released, (unsigned long long)before.suspendable_bytes);
  ASSERT_EQ(during.suspended, 1);
  /* The memory really comes back to the device: at least half of what NCCL counted as
   * suspendable (the driver maps in 2 MiB pages, and NCCL may keep a pool). */
  if (before.suspendable_bytes >= (4u << 20))
    ASSERT_GE(released, (long long)(before.suspendable_bytes / 2));
  else
    printf("  (too little suspendable memory to measure a release: %llu bytes)\n",
           (unsigned long long)before.suspendable_bytes);
  /* Operations wait for resume. */
  float x = 1;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE,
                mg_all_reduce(&x, &x, 1, MG_FLOAT32, MG_SUM, comm, (mg_stream_t)d->stream));
  ASSERT_CONTAINS(mg_last_error(), "suspended");
  ASSERT_OK(mg_comm_resume(comm));
  const size_t free2 = free_bytes(d);
  all_reduce_check(comm, d, 0, 1, FLOATS, "all_reduce after resume");
  ASSERT_OK(mg_comm_mem_stats(comm, &after));
  print_stats("resumed, used", &after);
  printf("  device free memory after resume: %zu bytes (%+lld against suspended)\n", free2,
         (long long)free2 - (long long)free1);
  ASSERT_EQ(after.suspended, 0);
  /* A second cycle works too. */
  ASSERT_OK(mg_comm_suspend(comm, MG_SUSPEND_MEM));
  ASSERT_OK(mg_comm_resume(comm));
  all_reduce_check(comm, d, 0, 1, 1024, "all_reduce after a second cycle");
}

/* Each config field of 2.29 to 2.32 on a communicator of its own, with a value NCCL accepts. */
static void one_config(gu_dev_t *d) {
  static const struct {
    size_t off;
    const char *name;
    int value, since;
    const char *since_s;
  } f[] = {
      {offsetof(mg_config_t, nccl_graph_usage_mode), "nccl_graph_usage_mode", 2, 22902, "2.29.2"},
      {offsetof(mg_config_t, nccl_num_rma_ctx), "nccl_num_rma_ctx", 1, 22902, "2.29.2"},
      {offsetof(mg_config_t, nccl_max_p2p_peers), "nccl_max_p2p_peers", 1, 23003, "2.30.3"},
      {offsetof(mg_config_t, nccl_graph_stream_ordering), "nccl_graph_stream_ordering", 1, 23007,
       "2.30.7"},
      {offsetof(mg_config_t, nccl_launch_order_implicit), "nccl_launch_order_implicit", 0, 23100,
       "2.31"},
      {offsetof(mg_config_t, nccl_num_rma_sig), "nccl_num_rma_sig", 1, 23100, "2.31"},
      {offsetof(mg_config_t, nccl_rma_eager_init), "nccl_rma_eager_init", 0, 23100, "2.31"},
      {offsetof(mg_config_t, nccl_host_cft_mode), "nccl_host_cft_mode", 2, 23100, "2.31"},
      {offsetof(mg_config_t, nccl_nvls_host_mode), "nccl_nvls_host_mode", 0x7fffffff, 23200,
       "2.32"},
  };
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    mg_config_t cfg = nccl_cfg(0);
    memcpy((char *)&cfg + f[i].off, &f[i].value, sizeof(int));
    mg_comm_t *c = NULL;
    if (!gated(mg_comm_init_all(&cfg, 1, NULL, &c), f[i].since, f[i].since_s, f[i].name))
      continue;
    all_reduce_check(c, d, 0, 1, 4096, f[i].name);
    printf("  config %s = %d: init and all_reduce ok\n", f[i].name, f[i].value);
    ASSERT_OK(mg_comm_finalize(c));
    ASSERT_OK(mg_comm_destroy(c));
  }
}

static int print_param(const char *key, const char *value, void *arg) {
  int *n = arg;
  if (*n < 400) printf("    %s=%s\n", key, value);
  ++*n;
  return 0;
}

static void one_params(void) {
  int n = 0;
  printf("  NCCL's parameters:\n");
  if (!gated(mg_nccl_params(print_param, &n), 23007, "2.30.7", "mg_nccl_params")) return;
  printf("  %d parameters\n", n);
  ASSERT_GT(n, 0);
  /* A parameter that the environment set: NCCL's value is the environment's, where NCCL has
   * it registered by now (the key API knows only registered parameters). */
  char v[64];
  mg_status_t st = mg_nccl_param_get("NCCL_NVLS_ENABLE", v, sizeof v);
  printf("  NCCL_NVLS_ENABLE: %s%s%s\n", mg_status_name(st), st == MG_OK ? " = " : ": ",
         st == MG_OK ? v : mg_last_error());
  if (st == MG_OK)
    ASSERT_STR_EQ(v, "0");
  else
    ASSERT_EQ(st, MG_ERR_INVALID_ARGUMENT);
}

static void one_windows(mg_comm_t *comm) {
  mg_unique_id_t id;
  memset(&id, 0, sizeof id);
  if (gated(mg_comm_grow_id(comm, &id), 22902, "2.29.2", "mg_comm_grow_id")) {
    int nonzero = 0;
    for (size_t i = 0; i < sizeof id.internal; i++) nonzero |= id.internal[i];
    ASSERT(nonzero);
    printf("  grow id made\n");
  }
  void *buf = NULL, *p = NULL;
  ASSERT_OK(mg_mem_alloc(comm, 1u << 20, &buf));
  mg_reg_t *reg = NULL;
  mg_status_t st = mg_comm_register(comm, buf, 1u << 20, MG_REGISTER_SYMMETRIC, &reg);
  if (st != MG_OK) {
    printf("  symmetric registration: %s (%s): window pointers not tried\n", mg_status_name(st),
           mg_last_error());
    ASSERT_EQ(st, MG_ERR_NOT_SUPPORTED);
  } else {
    if (gated(mg_reg_user_ptr(comm, reg, &p), 22902, "2.29.2", "mg_reg_user_ptr")) {
      ASSERT(p == buf);
      ASSERT_OK(mg_reg_peer_ptr(comm, reg, 0, 4096, &p));
      printf("  window: user pointer %p, own peer pointer at +4096: %p\n", buf, p);
      ASSERT(p != NULL);
      ASSERT_OK(mg_reg_lsa_ptr(comm, reg, 0, 0, &p));
      ASSERT(p != NULL);
      ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_reg_peer_ptr(comm, reg, 0, 1u << 20, &p));
    }
    ASSERT_OK(mg_comm_deregister(comm, reg));
  }
  ASSERT_OK(mg_mem_free(buf));
}

static int mode_one(void) {
  gu_need(1);
  ASSERT_OK(mg__load_nccl());
  printf("NCCL %s from %s\n", mg__lib_report(MG_LIB_NCCL)->version_string,
         mg__lib_report(MG_LIB_NCCL)->path);
  gu_dev_t d;
  gu_dev_open(&d, 0);
  mg_config_t cfg = nccl_cfg(0);
  mg_comm_t *comm;
  ASSERT_OK(mg_comm_init_all(&cfg, 1, NULL, &comm));
  printf("properties:\n");
  one_properties(comm);
  printf("suspend and resume:\n");
  one_suspend(comm, &d);
  printf("config fields:\n");
  one_config(&d);
  printf("parameters:\n");
  one_params();
  printf("grow id and windows:\n");
  one_windows(comm);
  ASSERT_OK(mg_comm_finalize(comm));
  ASSERT_OK(mg_comm_destroy(comm));
  gu_dev_close(&d);
  printf("gpu nccl29 one: ok\n");
  return 0;
}

/* ---- two GPUs and more ----------------------------------------------------------------------- */

typedef struct {
  int nold, nnew;
  mg_comm_t *old[4];
  mg_unique_id_t id;
} grow_t;

static void grow_rank(int r, void *arg) {
  grow_t *g = arg;
  gu_dev_t d;
  gu_dev_open(&d, r);
  const int n = g->nold + g->nnew;
  mg_comm_t *big = NULL;
  if (r < g->nold) {
    ASSERT_OK(mg_comm_grow(g->old[r], n, &g->id, MG_GROW_EXISTING, NULL, &big));
  } else {
    mg_config_t cfg = nccl_cfg(r);
    ASSERT_OK(mg_comm_grow(NULL, n, &g->id, r, &cfg, &big));
  }
  int v;
  ASSERT_OK(mg_comm_rank(big, &v));
  ASSERT_EQ(v, r);
  all_reduce_check(big, &d, r, n, FLOATS / 4, "all_reduce on the grown communicator");
  ASSERT_OK(mg_comm_finalize(big)); /* collective: every rank has its own thread */
  ASSERT_OK(mg_comm_destroy(big));
  if (r < g->nold)
    all_reduce_check(g->old[r], &d, r, g->nold, 4096, "all_reduce on the old communicator");
  gu_dev_close(&d);
}

static int mode_grow(void) {
  gu_need(2);
  ASSERT_OK(mg__load_nccl());
  if (nccl_version() < 22902) SKIP("NCCL %d has no ncclCommGrow (2.29.2)", nccl_version());
  int ngpu = 0;
  ASSERT_OK(mg_device_count(&ngpu));
  grow_t g;
  memset(&g, 0, sizeof g);
  g.nold = ngpu >= 4 ? 2 : 1;
  g.nnew = ngpu >= 4 ? 2 : 1;
  mg_config_t cfg = nccl_cfg(MG_UNDEF_INT);
  ASSERT_OK(mg_comm_init_all(&cfg, g.nold, NULL, g.old));
  ASSERT_OK(mg_comm_grow_id(g.old[0], &g.id));
  gu_run_ranks(g.nold + g.nnew, grow_rank, &g);
  for (int r = 0; r < g.nold; r++) ASSERT_OK(mg_comm_destroy(g.old[r]));
  printf("gpu nccl29 grow %d -> %d: ok\n", g.nold, g.nold + g.nnew);
  return 0;
}

#define SIG_FLOATS 4096
typedef struct {
  mg_comm_t *comm[2];
  void *buf[2];
  mg_reg_t *reg[2];
  pthread_barrier_t bar;
} sigtest_t;

static void sig_rank(int r, void *arg) {
  sigtest_t *s = arg;
  gu_dev_t d;
  gu_dev_open(&d, r);
  mg_comm_t *comm = s->comm[r];
  ASSERT_OK(mg_mem_alloc(comm, SIG_FLOATS * sizeof(float), &s->buf[r]));
  ASSERT_OK(mg_comm_register(comm, s->buf[r], SIG_FLOATS * sizeof(float), MG_REGISTER_SYMMETRIC,
                             &s->reg[r]));
  mg_comm_properties_t p;
  ASSERT_OK(mg_comm_properties(comm, &p));
  printf("  rank %d: host_rma %d\n", r, p.host_rma);
  if (p.host_rma == 0) SKIP("NCCL says this communicator has no host RMA (ncclPutSignal)");
  void *peer = NULL;
  ASSERT_OK(mg_reg_peer_ptr(comm, s->reg[r], 1 - r, 0, &peer));
  printf("  rank %d: peer %d's buffer at %p\n", r, 1 - r, peer);
  float h[SIG_FLOATS];
  if (r == 0) {
    for (int i = 0; i < SIG_FLOATS; i++) h[i] = (float)i * 0.5f;
    void *src = gu_alloc(&d, sizeof h);
    gu_put(&d, src, h, sizeof h);
    /* Half of the buffer at offset 1/4, then a signal without data. */
    ASSERT_OK(mg_put_signal(src, SIG_FLOATS / 2, MG_FLOAT32, 1, s->reg[0],
                            SIG_FLOATS / 4 * sizeof(float), 3, comm, (mg_stream_t)d.stream));
    ASSERT_OK(mg_signal(1, 5, comm, (mg_stream_t)d.stream));
    mg_signal_wait_t w = {1, 7, 1}; /* rank 1's answer */
    ASSERT_OK(mg_wait_signal(&w, 1, comm, (mg_stream_t)d.stream));
    gu_sync(&d, GU_TIMEOUT_S, "rank 0: put, signal, wait for the answer");
    gu_free(&d, src);
  } else {
    mg_signal_wait_t w[2] = {{0, 3, 1}, {0, 5, 1}};
    ASSERT_OK(mg_wait_signal(w, 2, comm, (mg_stream_t)d.stream));
    gu_get(&d, h, s->buf[1], sizeof h);
    gu_sync(&d, GU_TIMEOUT_S, "rank 1: wait for the put and the signal");
    for (int i = 0; i < SIG_FLOATS / 2; i++)
      if (h[SIG_FLOATS / 4 + i] != (float)i * 0.5f)
        FAIL("rank 1: element %d is %g, expected %g", SIG_FLOATS / 4 + i, h[SIG_FLOATS / 4 + i],
             (float)i * 0.5f);
    ASSERT_OK(mg_signal(0, 7, comm, (mg_stream_t)d.stream));
    gu_sync(&d, GU_TIMEOUT_S, "rank 1: answer");
  }
  pthread_barrier_wait(&s->bar);
  ASSERT_OK(mg_comm_deregister(comm, s->reg[r]));
  ASSERT_OK(mg_mem_free(s->buf[r]));
  gu_dev_close(&d);
}

static int mode_signals(void) {
  gu_need(2);
  ASSERT_OK(mg__load_nccl());
  if (nccl_version() < 22902) SKIP("NCCL %d has no ncclPutSignal (2.29.2)", nccl_version());
  sigtest_t s;
  memset(&s, 0, sizeof s);
  pthread_barrier_init(&s.bar, NULL, 2);
  mg_config_t cfg = nccl_cfg(MG_UNDEF_INT);
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, s.comm));
  gu_run_ranks(2, sig_rank, &s);
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_comm_destroy(s.comm[r]));
  printf("gpu nccl29 signals: ok\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "one";
  if (strcmp(mode, "one") == 0) return mode_one();
  if (strcmp(mode, "grow") == 0) return mode_grow();
  if (strcmp(mode, "signals") == 0) return mode_signals();
  FAIL("unknown mode %s", mode);
}
