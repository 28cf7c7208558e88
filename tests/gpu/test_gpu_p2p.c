/*
 * test_gpu_p2p.c -- peer-to-peer (mgcomm.h "Peer-to-peer") on a real GPU, with what one GPU can
 * prove (the pairs of two GPUs wait for the multi-GPU runs of issue 21):
 *   - the topology: every device with itself is SELF and LOCAL; pairs, when there are several,
 *     answer consistently with the driver's cuDeviceCanAccessPeer;
 *   - enable (twice: idempotent) and the probe of every GPU with itself (and of every enabled
 *     pair), timed: a verdict of OK and a bandwidth;
 *   - the same-device copy path on the copy stream and on a stream of the caller, with every
 *     byte checked, and 1000 copies in a row whose requests all complete;
 *   - ordering on real streams: a copy out of a buffer waits, on the GPU, for the buffer's last
 *     writer (held behind a host function): its request stays pending and the destination
 *     untouched until the writer runs, then it holds the writer's bytes;
 *   - a copy's request completes with a callback on a library thread;
 *   - the checks against the real driver: host memory, a range past its allocation, overlap, a
 *     device out of range, are refused; a failed copy records no write;
 *   - buffer generations on a real GPU: a world of one rank on device 0 (NCCL backend), its
 *     buffer stale after mg_world_rebuild (skipped, with the reason, without NCCL).
 *   test_gpu_p2p
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu_util.h"

static int ndev;

static mg_p2p_pair_info_t pair(int a, int b) {
  mg_p2p_pair_info_t pi;
  ASSERT_OK(mg_p2p_pair_info(a, b, &pi));
  return pi;
}

static void topology(void) {
  int failed = -1;
  ASSERT_OK(mg_p2p_enable_all(&failed));
  ASSERT_OK(mg_p2p_enable_all(&failed));
  ASSERT_OK(mg_p2p_probe((size_t)64 << 20, 1, &failed));
  printf("probe: %d pair(s) failed\n", failed);
  for (int a = 0; a < ndev; a++)
    for (int b = 0; b < ndev; b++) {
      mg_p2p_pair_info_t pi = pair(a, b);
      int can = 0;
      ASSERT_OK(mg_device_can_access_peer(a, b, &can));
      ASSERT_EQ(pi.can_access, can);
      if (a == b) {
        ASSERT_EQ(pi.link, MG_P2P_LINK_SELF);
        ASSERT_EQ(pi.path, MG_P2P_PATH_LOCAL);
        ASSERT_EQ(pi.probe, MG_P2P_PROBE_OK);
        ASSERT_GT_F(pi.gbps, 1.0);
      }
      printf("pair %d -> %d: can_access %d enabled %d link %d nvlinks %d probe %d path %d "
             "%.1f GB/s%s%s\n", a, b, pi.can_access, pi.enabled, pi.link, pi.nvlinks, pi.probe,
             pi.path, pi.gbps, pi.reason[0] ? ": " : "", pi.reason);
    }
  int island[64], k = 0;
  ASSERT_OK(mg_p2p_islands(island, 64, &k));
  ASSERT_GE(k, 1);
  ASSERT_EQ(island[0], 0);
}

static void fill(unsigned char *h, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 131u + seed);
}

static void expect(const unsigned char *got, size_t n, unsigned seed, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != (unsigned char)(i * 131u + seed))
      FAIL("%s: byte %zu of %zu is 0x%02x, want 0x%02x", what, i, n, got[i],
           (unsigned char)(i * 131u + seed));
}

/* The same-device path: the copy stream, a stream of ours, 1000 copies in a row. */
static void local_copies(gu_dev_t *d) {
  const size_t n = (size_t)32 << 20;
  unsigned char *h = malloc(n), *back = malloc(n);
  ASSERT(h && back);
  char *a = gu_alloc(d, n), *b = gu_alloc(d, n);
  fill(h, n, 7);
  gu_put(d, a, h, n);
  gu_sync(d, GU_TIMEOUT_S, "put");
  mg_request_t *req;
  mg_p2p_path_t path = MG_P2P_PATH_PEER;
  ASSERT_OK(mg_p2p_copy(b, 0, a, 0, n, NULL, &path, &req));
  ASSERT_EQ(path, MG_P2P_PATH_LOCAL);
  ASSERT_OK(mg_request_wait(req, GU_TIMEOUT_S));
  ASSERT_OK(mg_request_free(req));
  gu_get(d, back, b, n);
  gu_sync(d, GU_TIMEOUT_S, "get");
  expect(back, n, 7, "copy on mgcomm's stream");
  /* On our stream, in 1000 pieces of n / 1000 bytes (and the rest), freed while pending. */
  const size_t piece = n / 1000;
  mg_request_t *last = NULL;
  fill(h, n, 9);
  gu_put(d, a, h, n);
  for (int i = 0; i < 1000; i++) {
    const size_t off = (size_t)i * piece, len = i == 999 ? n - off : piece;
    ASSERT_OK(mg_p2p_copy(b + off, 0, a + off, 0, len, (mg_stream_t)d->stream, NULL, &req));
    if (i < 999) ASSERT_OK(mg_request_free(req));
    else last = req;
  }
  ASSERT_OK(mg_request_wait(last, GU_TIMEOUT_S));
  ASSERT_OK(mg_request_free(last));
  gu_get(d, back, b, n);
  gu_sync(d, GU_TIMEOUT_S, "get");
  expect(back, n, 9, "1000 copies on the caller's stream");
  /* What the real driver lets us check. */
  char host[64];
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_copy(b, 0, host, 0, 64, NULL, NULL, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_copy(b + n - 8, 0, a, 0, 16, NULL, NULL, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_copy(a + 8, 0, a, 0, 16, NULL, NULL, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_copy(b, ndev, a, 0, 16, NULL, NULL, &req));
  ASSERT_CONTAINS(mg_last_error(), "out of range");
  gu_free(d, a);
  gu_free(d, b);
  free(h);
  free(back);
}

static atomic_int gate, cb_runs;
static pthread_t main_thread;

static void hold_stream(void *arg) {
  (void)arg;
  while (!atomic_load(&gate)) usleep(1000);
}

static void on_done(mg_request_t *req, mg_status_t st, void *arg) {
  (void)req;
  (void)arg;
  ASSERT_EQ(st, MG_OK);
  ASSERT(!pthread_equal(pthread_self(), main_thread));
  atomic_fetch_add(&cb_runs, 1);
}

/* The source's last writer orders the copy, on the GPU. */
static void ordering(gu_dev_t *d) {
  const size_t n = (size_t)8 << 20;
  mg_buf_t *src, *dst;
  ASSERT_OK(mg_buf_create(0, n, &src));
  ASSERT_OK(mg_buf_create(0, n, &dst));
  char *ps, *pd;
  ASSERT_OK(mg_buf_ptr(src, (void **)&ps));
  ASSERT_OK(mg_buf_ptr(dst, (void **)&pd));
  unsigned char *h = malloc(n), *back = malloc(n);
  ASSERT(h && back);
  char *fresh = gu_alloc(d, n);
  fill(h, n, 1);
  gu_put(d, ps, h, n);
  fill(h, n, 2);
  gu_put(d, fresh, h, n);
  memset(h, 0, n);
  gu_put(d, pd, h, n);
  gu_sync(d, GU_TIMEOUT_S, "fills");
  /* The writer: held behind a host function on our stream. */
  ASSERT_EQ(mg__cuda.LaunchHostFunc(d->stream, hold_stream, NULL), MG__CUDA_SUCCESS);
  ASSERT_EQ(mg__cuda.MemcpyAsync((mg__CUdeviceptr)(uintptr_t)ps, (mg__CUdeviceptr)(uintptr_t)fresh,
                                 n, d->stream), MG__CUDA_SUCCESS);
  ASSERT_OK(mg_buf_record_write(src, (mg_stream_t)d->stream));
  mg_request_t *req;
  main_thread = pthread_self();
  ASSERT_OK(mg_buf_copy(dst, 0, src, 0, n, NULL, NULL, &req)); /* mgcomm's stream */
  ASSERT_OK(mg_request_on_complete(req, on_done, NULL));
  usleep(200000);
  mg_status_t rs = MG_OK;
  ASSERT_OK(mg_request_test(req, &rs));
  ASSERT_EQ(rs, MG_INPROGRESS);
  /* A synchronous read on the legacy stream: the non-blocking streams are not waited for. */
  ASSERT_EQ(mg__cuda.MemcpyDtoH(back, (mg__CUdeviceptr)(uintptr_t)pd, 64), MG__CUDA_SUCCESS);
  for (int i = 0; i < 64; i++) ASSERT_EQ(back[i], 0);
  atomic_store(&gate, 1);
  ASSERT_OK(mg_request_wait(req, GU_TIMEOUT_S));
  ASSERT_OK(mg_request_free(req));
  gu_sync(d, GU_TIMEOUT_S, "writer");
  gu_get(d, back, pd, n);
  gu_sync(d, GU_TIMEOUT_S, "get");
  expect((unsigned char *)back, n, 2, "the copy after its source's writer");
  for (int i = 0; i < 2000 && atomic_load(&cb_runs) == 0; i++) usleep(1000);
  ASSERT_EQ(atomic_load(&cb_runs), 1);
  mg_buf_info_t bi;
  ASSERT_OK(mg_buf_info(dst, &bi));
  ASSERT_EQ(bi.writes, 1);
  ASSERT(bi.last_writer != NULL);
  /* A refused copy records nothing. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_buf_copy(dst, 8, src, 0, n, NULL, NULL, &req));
  ASSERT_OK(mg_buf_info(dst, &bi));
  ASSERT_EQ(bi.writes, 1);
  gu_free(d, fresh);
  ASSERT_OK(mg_buf_destroy(src));
  ASSERT_OK(mg_buf_destroy(dst));
  free(h);
  free(back);
}

/* A buffer of a world on device 0 goes stale with a rebuild. */
static void generations(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  mg_world_t *w;
  const int dev0 = 0;
  mg_status_t st = mg_world_create(&cfg, 1, &dev0, &w);
  if (st != MG_OK) {
    printf("generations: skipped: no NCCL world (%s: %s)\n", mg_status_name(st), mg_last_error());
    return;
  }
  mg_buf_t *b;
  ASSERT_OK(mg_world_buf_create(w, 0, 1 << 20, &b));
  mg_buf_info_t bi;
  ASSERT_OK(mg_buf_info(b, &bi));
  ASSERT_EQ(bi.device, 0);
  ASSERT_EQ(bi.generation, 1);
  void *p;
  ASSERT_OK(mg_buf_ptr(b, &p));
  mg__ptr_attr_t at;
  ASSERT_OK(mg__device_ptr_attr(p, &at));
  ASSERT_EQ(at.memory_type, MG__CU_MEMORYTYPE_DEVICE);
  ASSERT_EQ(at.ordinal, 0);
  ASSERT_OK(mg_world_rebuild(w));
  ASSERT_STATUS(MG_ERR_STALE, mg_buf_ptr(b, &p));
  ASSERT_CONTAINS(mg_last_error(), "rebuilt (generation 2 now)");
  ASSERT_OK(mg_buf_destroy(b));
  ASSERT_OK(mg_world_destroy(w));
  printf("generations: a device buffer of generation 1 is stale after the rebuild\n");
}

int main(void) {
  mg_status_t st = mg_device_count(&ndev);
  if (st != MG_OK) SKIP("no CUDA driver: %s", mg_last_error());
  if (ndev < 1) SKIP("no GPU");
  topology();
  gu_dev_t d;
  gu_dev_open(&d, 0);
  local_copies(&d);
  ordering(&d);
  gu_dev_close(&d);
  generations();
  printf("test_gpu_p2p: ok (%d GPU%s)\n", ndev, ndev == 1 ? "" : "s");
  return 0;
}
