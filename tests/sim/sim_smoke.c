/*
 * sim_smoke.c -- mgcomm's NCCL backend, unchanged, over the simulated CUDA driver and NCCL
 * (tests/sim/): what the library reports about them, then two ranks (threads, one simulated GPU
 * each) made with mg_comm_init_all that run, through the public API only, all-reduces (float32
 * sum, int64 max), a broadcast, an all-gather, a reduce, a reduce-scatter, grouped send/recv, a
 * split and a collective on the child, and finalize and destroy everything; before them, from
 * one thread, the stream's check (once per communicator and stream). At the end the simulator
 * must hold no communicator and no allocation.
 *
 * Environment (CMakeLists.txt sets it): MGCOMM_CUDA_LIBRARY, MGCOMM_NCCL_LIBRARY (the
 * simulator's files), MGCOMM_BACKEND=nccl, MGSIM_DEVICES=2.
 *
 * Divisions: helpers; what mgcomm reports; one rank's work; main.
 */
#include <pthread.h>

#include "sim.h"
#include "test.h"

#define NRANKS 2
#define N 1000      /* elements of the all-reduces */
#define C 37        /* elements each rank brings to the all-gather and reduce-scatter */
#define WAIT_S 30.0 /* bound of every stream wait */

static mg_comm_t *comms[NRANKS];
static mgsim_control_fn sim;

/* ---- helpers --------------------------------------------------------------------------------- */

/* Waits until everything the rank put on its stream (NULL: the device's default stream) ran. */
static void sync_stream(mg_comm_t *comm, const char *what) {
  mg_request_t *req = NULL;
  ASSERT_OK(mg_record(comm, NULL, &req));
  mg_status_t st = mg_request_wait(req, WAIT_S);
  if (st != MG_OK) FAIL("%s: the stream did not get there: %s", what, mg_last_error());
  ASSERT_OK(mg_request_free(req));
}

static void *dev_alloc(mg_comm_t *comm, size_t bytes) {
  void *p = NULL;
  ASSERT_OK(mg_mem_alloc(comm, bytes, &p));
  ASSERT(p != NULL);
  return p;
}

static void check_f32(const float *got, const float *want, size_t n, int rank, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i])
      FAIL("rank %d, %s: element %zu is %g, expected %g", rank, what, i, (double)got[i],
           (double)want[i]);
}

static void check_i64(const int64_t *got, const int64_t *want, size_t n, int rank,
                      const char *what) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i])
      FAIL("rank %d, %s: element %zu is %" PRId64 ", expected %" PRId64, rank, what, i, got[i],
           want[i]);
}

/* ---- what mgcomm reports --------------------------------------------------------------------- */

static void check_info(void) {
  const char *cuda_path = getenv("MGCOMM_CUDA_LIBRARY"), *nccl_path = getenv("MGCOMM_NCCL_LIBRARY");
  if (cuda_path == NULL || nccl_path == NULL)
    SKIP("MGCOMM_CUDA_LIBRARY / MGCOMM_NCCL_LIBRARY unset");
  mg_library_info_t li;
  ASSERT_OK(mg_library_info(MG_LIB_CUDA, &li));
  if (!li.loaded) FAIL("the simulated CUDA driver did not load: %s", li.error);
  ASSERT_STR_EQ(li.path, cuda_path);
  ASSERT_EQ(li.version, 13000);
  ASSERT_STR_EQ(li.version_string, "13.0");
  ASSERT_OK(mg_library_info(MG_LIB_NCCL, &li));
  if (!li.loaded) FAIL("the simulated NCCL did not load: %s", li.error);
  ASSERT_STR_EQ(li.path, nccl_path);
  ASSERT_EQ(li.version, 22809);
  ASSERT_STR_EQ(li.version_string, "2.28.9");
  printf("CUDA driver %s, NCCL %s (%s)\n", "13.0", li.version_string, li.path);

  mg_feature_info_t fi;
  ASSERT_OK(mg_feature_info(MG_FEATURE_NCCL_REVOKE, &fi));
  ASSERT_EQ(fi.available, 1);
  ASSERT_OK(mg_feature_info(MG_FEATURE_NCCL_SHRINK, &fi));
  ASSERT_EQ(fi.available, 1);
  /* The simulator leaves ncclAlltoAll, ncclGather and ncclScatter out. */
  ASSERT_OK(mg_feature_info(MG_FEATURE_NCCL_COLLECTIVES_2_28, &fi));
  ASSERT_EQ(fi.available, 0);

  int n = 0;
  ASSERT_OK(mg_device_count(&n));
  ASSERT_EQ(n, NRANKS);
  for (int d = 0; d < n; d++) {
    mg_device_info_t di;
    char name[32], bus[32];
    ASSERT_OK(mg_device_info(d, &di));
    snprintf(name, sizeof name, "mgsim GPU %d", d);
    snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x18 + d);
    ASSERT_STR_EQ(di.name, name);
    ASSERT_STR_EQ(di.pci_bus_id, bus);
    ASSERT_EQ(di.cc_major, 9);
    ASSERT_EQ(di.cc_minor, 0);
    ASSERT_EQ(di.total_memory, (size_t)80 << 30);
    printf("device %d: %s, %s, cc %d.%d\n", d, di.name, di.pci_bus_id, di.cc_major, di.cc_minor);
  }
  int peer = 0;
  ASSERT_OK(mg_device_can_access_peer(0, 1, &peer));
  ASSERT_EQ(peer, 1);
  mg_backend_t be;
  char why[256];
  ASSERT_OK(mg_backend_resolve(MG_BACKEND_AUTO, &be, why, sizeof why));
  ASSERT_EQ(be, MG_BACKEND_NCCL);

  sim = mgsim_control_find(nccl_path);
  ASSERT(sim != NULL);
  ASSERT_EQ(sim("version", 0), 22809);
}

/* ---- one rank's work ------------------------------------------------------------------------- */

static void reductions(mg_comm_t *comm, int r) {
  float *hf = malloc(sizeof(float) * N), *wf = malloc(sizeof(float) * N);
  int64_t *hi = malloc(sizeof(int64_t) * N), *wi = malloc(sizeof(int64_t) * N);
  ASSERT(hf != NULL && wf != NULL && hi != NULL && wi != NULL);
  float *df = dev_alloc(comm, sizeof(float) * N), *df_out = dev_alloc(comm, sizeof(float) * N);
  int64_t *di = dev_alloc(comm, sizeof(int64_t) * N);

  /* float32 sum: rank r brings (r + 1) * (i % 7); exact in float. */
  for (int i = 0; i < N; i++) {
    hf[i] = (float)((r + 1) * (i % 7));
    wf[i] = (float)(NRANKS * (NRANKS + 1) / 2 * (i % 7));
  }
  ASSERT_OK(mg_memcpy(comm, df, hf, sizeof(float) * N));
  ASSERT_OK(mg_all_reduce(df, df_out, N, MG_FLOAT32, MG_SUM, comm, NULL));
  sync_stream(comm, "all_reduce float32 sum");
  memset(hf, 0, sizeof(float) * N);
  ASSERT_OK(mg_memcpy(comm, hf, df_out, sizeof(float) * N));
  check_f32(hf, wf, N, r, "all_reduce float32 sum");

  /* int64 max, in place, with values beyond 32 bits and negative ones. */
  for (int i = 0; i < N; i++) {
    hi[i] = ((int64_t)r << 40) + i - 500;
    wi[i] = ((int64_t)(NRANKS - 1) << 40) + i - 500;
  }
  ASSERT_OK(mg_memcpy(comm, di, hi, sizeof(int64_t) * N));
  /* ... on the communicator's own stream: one handle, made once. */
  mg_stream_t own = NULL, again = NULL;
  ASSERT_OK(mg_comm_stream(comm, &own));
  ASSERT_OK(mg_comm_stream(comm, &again));
  ASSERT(own != NULL && own == again);
  ASSERT_OK(mg_all_reduce(di, di, N, MG_INT64, MG_MAX, comm, own));
  mg_request_t *req = NULL;
  ASSERT_OK(mg_record(comm, own, &req));
  ASSERT_OK(mg_request_wait(req, WAIT_S));
  ASSERT_OK(mg_request_free(req));
  memset(hi, 0, sizeof(int64_t) * N);
  ASSERT_OK(mg_memcpy(comm, hi, di, sizeof(int64_t) * N));
  check_i64(hi, wi, N, r, "all_reduce int64 max (in place)");

  /* reduce to root 0, float32 sum again: only the root's output changes. */
  for (int i = 0; i < N; i++) hf[i] = (float)((r + 1) * (i % 7));
  ASSERT_OK(mg_memcpy(comm, df, hf, sizeof(float) * N));
  for (int i = 0; i < N; i++) hf[i] = -1.0f;
  ASSERT_OK(mg_memcpy(comm, df_out, hf, sizeof(float) * N));
  ASSERT_OK(mg_reduce(df, df_out, N, MG_FLOAT32, MG_SUM, 0, comm, NULL));
  sync_stream(comm, "reduce");
  ASSERT_OK(mg_memcpy(comm, hf, df_out, sizeof(float) * N));
  if (r == 0) {
    check_f32(hf, wf, N, r, "reduce to root 0");
  } else {
    for (int i = 0; i < N; i++) wf[i] = -1.0f;
    check_f32(hf, wf, N, r, "reduce: a non-root's recv is untouched");
  }
  ASSERT_OK(mg_mem_free(df));
  ASSERT_OK(mg_mem_free(df_out));
  ASSERT_OK(mg_mem_free(di));
  free(hf);
  free(wf);
  free(hi);
  free(wi);
}

static void data_movement(mg_comm_t *comm, int r) {
  int32_t h[NRANKS * C], w[NRANKS * C];
  int32_t *ds = dev_alloc(comm, sizeof h), *dr = dev_alloc(comm, sizeof h);

  /* broadcast from root 1 */
  for (int i = 0; i < C; i++) h[i] = r == 1 ? 3 * i + 1 : -7;
  ASSERT_OK(mg_memcpy(comm, ds, h, sizeof(int32_t) * C));
  ASSERT_OK(mg_broadcast(ds, dr, C, MG_INT32, 1, comm, NULL));
  sync_stream(comm, "broadcast");
  ASSERT_OK(mg_memcpy(comm, h, dr, sizeof(int32_t) * C));
  for (int i = 0; i < C; i++)
    if (h[i] != 3 * i + 1)
      FAIL("rank %d, broadcast: element %d is %d, expected %d", r, i, h[i], 3 * i + 1);

  /* all-gather: rank q's block is 100 * q + i */
  for (int i = 0; i < C; i++) h[i] = 100 * r + i;
  ASSERT_OK(mg_memcpy(comm, ds, h, sizeof(int32_t) * C));
  ASSERT_OK(mg_all_gather(ds, dr, C, MG_INT32, comm, NULL));
  sync_stream(comm, "all_gather");
  ASSERT_OK(mg_memcpy(comm, h, dr, sizeof h));
  for (int q = 0; q < NRANKS; q++)
    for (int i = 0; i < C; i++) w[q * C + i] = 100 * q + i;
  for (int i = 0; i < NRANKS * C; i++)
    if (h[i] != w[i]) FAIL("rank %d, all_gather: element %d is %d, expected %d", r, i, h[i], w[i]);

  /* reduce-scatter, sum: everybody brings j + r at position j; rank q keeps block q */
  for (int j = 0; j < NRANKS * C; j++) h[j] = j + r;
  ASSERT_OK(mg_memcpy(comm, ds, h, sizeof h));
  ASSERT_OK(mg_reduce_scatter(ds, dr, C, MG_INT32, MG_SUM, comm, NULL));
  sync_stream(comm, "reduce_scatter");
  ASSERT_OK(mg_memcpy(comm, h, dr, sizeof(int32_t) * C));
  for (int i = 0; i < C; i++) {
    const int j = r * C + i, want = NRANKS * j + NRANKS * (NRANKS - 1) / 2;
    if (h[i] != want)
      FAIL("rank %d, reduce_scatter: element %d is %d, expected %d", r, i, h[i], want);
  }

  /* send/recv in one group, both directions of a ring */
  const int next = (r + 1) % NRANKS, prev = (r + NRANKS - 1) % NRANKS;
  for (int i = 0; i < C; i++) h[i] = 1000 * r + i;
  ASSERT_OK(mg_memcpy(comm, ds, h, sizeof(int32_t) * C));
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_send(ds, C, MG_INT32, next, comm, NULL));
  ASSERT_OK(mg_recv(dr, C, MG_INT32, prev, comm, NULL));
  ASSERT_OK(mg_group_end());
  sync_stream(comm, "send/recv");
  ASSERT_OK(mg_memcpy(comm, h, dr, sizeof(int32_t) * C));
  for (int i = 0; i < C; i++)
    if (h[i] != 1000 * prev + i)
      FAIL("rank %d, recv from %d: element %d is %d, expected %d", r, prev, i, h[i],
           1000 * prev + i);
  ASSERT_OK(mg_mem_free(ds));
  ASSERT_OK(mg_mem_free(dr));
}

/* One color, keys in reverse: the child's ranks are the parent's reversed. */
static void split(mg_comm_t *comm, int r) {
  mg_comm_t *child = NULL;
  ASSERT_OK(mg_comm_split(comm, 0, NRANKS - 1 - r, NULL, &child));
  ASSERT(child != NULL);
  int cr = -1, cn = 0;
  ASSERT_OK(mg_comm_rank(child, &cr));
  ASSERT_OK(mg_comm_size(child, &cn));
  ASSERT_EQ(cr, NRANKS - 1 - r);
  ASSERT_EQ(cn, NRANKS);
  int32_t *d = dev_alloc(child, sizeof(int32_t) * C);
  int32_t h[C];
  for (int i = 0; i < C; i++) h[i] = (cr + 1) * i; /* the child's rank, not the parent's */
  ASSERT_OK(mg_memcpy(child, d, h, sizeof h));
  ASSERT_OK(mg_all_reduce(d, d, C, MG_INT32, MG_SUM, child, NULL));
  sync_stream(child, "all_reduce on the child");
  ASSERT_OK(mg_memcpy(child, h, d, sizeof h));
  for (int i = 0; i < C; i++)
    if (h[i] != NRANKS * (NRANKS + 1) / 2 * i)
      FAIL("rank %d, child's all_reduce: element %d is %d, expected %d", r, i, h[i],
           NRANKS * (NRANKS + 1) / 2 * i);
  ASSERT_OK(mg_mem_free(d));
  ASSERT_OK(mg_comm_finalize(child));
  ASSERT_OK(mg_comm_destroy(child));
}

/* The stream's check, from one thread posting groups over both ranks (as `mgcomm bench -g`
 * does): a communicator asks the driver about a stream once, not at every call, and a stream of
 * another context is still refused on a communicator that remembers a good one. */
static void stream_checks(void) {
  enum { CALLS = 5 };
  mg_stream_t s[NRANKS];
  float *buf[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    ASSERT_OK(mg_comm_stream(comms[r], &s[r]));
    buf[r] = dev_alloc(comms[r], sizeof(float) * N);
  }
  const int before = sim("stream_ctx", 0);
  for (int i = 0; i < CALLS; i++) {
    ASSERT_OK(mg_group_begin());
    for (int r = 0; r < NRANKS; r++)
      ASSERT_OK(mg_all_reduce(buf[r], buf[r], N, MG_FLOAT32, MG_SUM, comms[r], s[r]));
    ASSERT_OK(mg_group_end());
  }
  ASSERT_EQ(sim("stream_ctx", 0) - before, NRANKS); /* CALLS * NRANKS when asked every call */
  /* Rank 1's stream belongs to device 1's context: refused on rank 0, before anything is
   * posted, though rank 1's communicator remembers it as good. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_all_reduce(buf[0], buf[0], N, MG_FLOAT32, MG_SUM, comms[0], s[1]));
  ASSERT_CONTAINS(mg_last_error(), "another CUDA context");
  mg_request_t *none = NULL; /* mg_record's check names the rank */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_record(comms[0], s[1], &none));
  ASSERT_CONTAINS(mg_last_error(), "rank 0 of 2: stream");
  for (int r = 0; r < NRANKS; r++) {
    mg_request_t *req = NULL;
    ASSERT_OK(mg_record(comms[r], s[r], &req));
    ASSERT_OK(mg_request_wait(req, WAIT_S));
    ASSERT_OK(mg_request_free(req));
    ASSERT_OK(mg_mem_free(buf[r]));
  }
}

static void *rank_main(void *arg) {
  const int r = (int)(intptr_t)arg;
  mg_comm_t *comm = comms[r];
  reductions(comm, r);
  data_movement(comm, r);
  split(comm, r);
  ASSERT_OK(mg_comm_finalize(comm));
  ASSERT_OK(mg_comm_destroy(comm));
  return NULL;
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void) {
  check_info();
  ASSERT_OK(mg_comm_init_all(NULL, NRANKS, NULL, comms));
  for (int r = 0; r < NRANKS; r++) {
    int rank = -1, size = 0, device = -1;
    mg_backend_t be;
    ASSERT_OK(mg_comm_rank(comms[r], &rank));
    ASSERT_OK(mg_comm_size(comms[r], &size));
    ASSERT_OK(mg_comm_device(comms[r], &device));
    ASSERT_OK(mg_comm_backend(comms[r], &be));
    ASSERT_EQ(rank, r);
    ASSERT_EQ(size, NRANKS);
    ASSERT_EQ(device, r);
    ASSERT_EQ(be, MG_BACKEND_NCCL);
  }
  /* One NCCL communicator per rank, or two in mgcomm's blocking mode (its lifecycle one and a
   * blocking one split from it). */
  ASSERT_GE(sim("comms", -1), NRANKS);
  stream_checks();
  pthread_t th[NRANKS];
  for (int r = 0; r < NRANKS; r++)
    ASSERT_EQ(pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r), 0);
  for (int r = 0; r < NRANKS; r++) ASSERT_EQ(pthread_join(th[r], NULL), 0);
  /* Everything made was freed: communicators (parents and children) and memory. */
  ASSERT_EQ(sim("comms", -1), 0);
  ASSERT_EQ(sim("inside", -1), 0);
  ASSERT_EQ(sim("allocs", 0), 0);
  printf("calls per rank: %d, %d\n", sim("calls", 0), sim("calls", 1));
  printf("PASS\n");
  return 0;
}
