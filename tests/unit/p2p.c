/*
 * p2p.c -- the peer-to-peer layer (mgcomm.h "Peer-to-peer") without a GPU: the simulated CUDA
 * driver (tests/sim, MGCOMM_CUDA_LIBRARY) gives the GPUs, their peer matrix and the faults
 * (MGSIM_PEERS, MGSIM_PEER_ENABLE_FAIL, MGSIM_PEER_CORRUPT, MGSIM_PEER_COPY_FAIL); p2p.cmake
 * sets them per case. Host buffers and "no driver" need no simulator.
 *
 * Cases: topo4, islands8, islands_enable, links4, links_switch (the simulated NVML too), enable,
 * probe, pair_works, copy_checks, copy_order, copy_fail, copy_request, nodriver, nogpu, hostbuf,
 * world_writer, world_writer_gpu.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "loader/cuda_api.h"
#include "p2p/p2p.h"
#include "test.h"

/* ---- the simulator's own entry points, for what a program would do with CUDA itself ---- */

typedef struct {
  mg__CUresult (*Retain)(mg__CUcontext *, mg__CUdevice);
  mg__CUresult (*SetCurrent)(mg__CUcontext);
  mg__CUresult (*GetCurrent)(mg__CUcontext *);
  mg__CUresult (*EnablePeer)(mg__CUcontext, unsigned);
  mg__CUresult (*StreamCreate)(mg__CUstream *, unsigned);
  mg__CUresult (*LaunchHostFunc)(mg__CUstream, mg__CUhostFn, void *);
  mg__CUresult (*MemcpyAsync)(mg__CUdeviceptr, mg__CUdeviceptr, size_t, mg__CUstream);
  mg__CUresult (*StreamSynchronize)(mg__CUstream);
} sim_t;

static sim_t sim_get(void) {
  int n = 0;
  ASSERT_OK(mg_device_count(&n)); /* loads the simulator */
  const char *path = getenv("MGCOMM_CUDA_LIBRARY");
  ASSERT(path != NULL);
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  ASSERT(h != NULL);
  sim_t s;
  *(void **)&s.Retain = dlsym(h, "cuDevicePrimaryCtxRetain");
  *(void **)&s.SetCurrent = dlsym(h, "cuCtxSetCurrent");
  *(void **)&s.GetCurrent = dlsym(h, "cuCtxGetCurrent");
  *(void **)&s.EnablePeer = dlsym(h, "cuCtxEnablePeerAccess");
  *(void **)&s.StreamCreate = dlsym(h, "cuStreamCreate");
  *(void **)&s.LaunchHostFunc = dlsym(h, "cuLaunchHostFunc");
  *(void **)&s.MemcpyAsync = dlsym(h, "cuMemcpyAsync");
  *(void **)&s.StreamSynchronize = dlsym(h, "cuStreamSynchronize");
  ASSERT(s.Retain && s.SetCurrent && s.GetCurrent && s.EnablePeer && s.StreamCreate &&
         s.LaunchHostFunc && s.MemcpyAsync && s.StreamSynchronize);
  return s;
}

static mg__CUcontext sim_ctx(const sim_t *s, int d) {
  mg__CUcontext c = NULL;
  ASSERT_EQ(s->Retain(&c, d), 0);
  return c;
}

static mg_p2p_pair_info_t pair(int a, int b) {
  mg_p2p_pair_info_t pi;
  ASSERT_OK(mg_p2p_pair_info(a, b, &pi));
  ASSERT_EQ(pi.from, a);
  ASSERT_EQ(pi.to, b);
  return pi;
}

static void expect_islands(const int *want, int n, int nwant) {
  int got[16], k = -1;
  ASSERT_OK(mg_p2p_islands(got, 16, &k));
  ASSERT_EQ(k, nwant);
  for (int d = 0; d < n; d++)
    if (got[d] != want[d]) FAIL("device %d is in island %d, expected %d", d, got[d], want[d]);
}

/* ---- topology ---- */

/* MGSIM_DEVICES=4 MGSIM_PEERS=0>1,1>0,2>3: directional answers, no NVML, islands {0,1} {2,3}. */
static void t_topo4(void) {
  static const int can[4][4] = {{1, 1, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 0, 1}};
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      mg_p2p_pair_info_t pi = pair(a, b);
      if (pi.can_access != can[a][b]) FAIL("can_access %d -> %d is %d", a, b, pi.can_access);
      ASSERT_EQ(pi.link, a == b ? MG_P2P_LINK_SELF : MG_P2P_LINK_UNKNOWN);
      ASSERT_EQ(pi.native_atomics, a != b && can[a][b]);
      ASSERT_EQ(pi.enabled, a == b); /* nothing enabled before mg_p2p_enable_all */
      ASSERT_EQ(pi.probe, MG_P2P_PROBE_NOT_RUN);
      ASSERT_EQ(pi.path, a == b ? MG_P2P_PATH_LOCAL : MG_P2P_PATH_STAGED);
    }
  const int want[4] = {0, 0, 1, 1};
  expect_islands(want, 4, 2);
  /* Out of range, both ways, and outputs untouched. */
  mg_p2p_pair_info_t pi;
  memset(&pi, 0x5a, sizeof pi);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_pair_info(4, 0, &pi));
  ASSERT_CONTAINS(mg_last_error(), "from 4 is out of range: 4 CUDA devices");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_pair_info(0, -1, &pi));
  ASSERT_CONTAINS(mg_last_error(), "to -1 is out of range");
  ASSERT_EQ(pi.from, 0x5a5a5a5a);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_pair_info(0, 0, NULL));
  int isl[3], k = 7;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_islands(isl, 3, &k));
  ASSERT_CONTAINS(mg_last_error(), "capacity 3 is less than the 4 CUDA devices");
  ASSERT_EQ(k, 7);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_islands(NULL, 4, &k));
}

/* MGSIM_DEVICES=8 MGSIM_PEERS=0>1,1>2,3>2,4>5,6>6: chains joined in either direction. */
static void t_islands8(void) {
  const int want[8] = {0, 0, 0, 0, 1, 1, 2, 3};
  expect_islands(want, 8, 4);
  ASSERT_EQ(pair(3, 2).can_access, 1);
  ASSERT_EQ(pair(2, 3).can_access, 0);
}

/* MGSIM_DEVICES=4 MGSIM_PEERS=0>1,1>2,2>3 MGSIM_PEER_ENABLE_FAIL=1>2: one island until the
 * enable of 1 -> 2 fails, which cuts it in two. */
static void t_islands_enable(void) {
  const int before[4] = {0, 0, 0, 0}, after[4] = {0, 0, 1, 1};
  expect_islands(before, 4, 1);
  int failed = -1;
  ASSERT_OK(mg_p2p_enable_all(&failed));
  ASSERT_EQ(failed, 1);
  expect_islands(after, 4, 2);
}

/* With the simulated NVML (MGSIM_NVLINKS=0-1:4,2-3:2 MGSIM_PCIE=0-2:SYS,1-3:NODE,0-3:PIX): NVLink
 * counts from each link's far end, PCIe levels from the common ancestor, in both directions. */
static void t_links4(void) {
  static const struct {
    int a, b;
    mg_p2p_link_t link;
    int nvlinks;
  } want[] = {{0, 1, MG_P2P_LINK_NVLINK, 4}, {1, 0, MG_P2P_LINK_NVLINK, 4},
              {2, 3, MG_P2P_LINK_NVLINK, 2}, {0, 2, MG_P2P_LINK_SYS, 0},
              {2, 0, MG_P2P_LINK_SYS, 0},    {1, 3, MG_P2P_LINK_NODE, 0},
              {0, 3, MG_P2P_LINK_PIX, 0},    {1, 2, MG_P2P_LINK_PHB, 0},
              {3, 3, MG_P2P_LINK_SELF, 0}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    mg_p2p_pair_info_t pi = pair(want[i].a, want[i].b);
    if (pi.link != want[i].link || pi.nvlinks != want[i].nvlinks)
      FAIL("%d -> %d: link %d x%d, want %d x%d", want[i].a, want[i].b, pi.link, pi.nvlinks,
           want[i].link, want[i].nvlinks);
  }
}

/* MGSIM_DEVICES=8 MGSIM_NVSWITCH_LINKS=18 MGSIM_NVLINKS=6-7:2: every pair through NVSwitches is
 * NV18 (as nvidia-smi prints an HGX H100), and direct links count before switch links. */
static void t_links_switch(void) {
  for (int a = 0; a < 8; a++)
    for (int b = 0; b < 8; b++) {
      mg_p2p_pair_info_t pi = pair(a, b);
      const int direct = (a == 6 && b == 7) || (a == 7 && b == 6);
      ASSERT_EQ(pi.link, a == b ? MG_P2P_LINK_SELF : MG_P2P_LINK_NVLINK);
      ASSERT_EQ(pi.nvlinks, a == b ? 0 : direct ? 2 : a >= 6 || b >= 6 ? 16 : 18);
    }
}

/* ---- peer access ---- */

/* MGSIM_DEVICES=4 MGSIM_PEER_ENABLE_FAIL=2>3: every other pair enabled, 2 -> 3 recorded with the
 * driver's error; a pair the program enabled itself counts; the caller's context stays; twice
 * is the same. */
static void t_enable(void) {
  sim_t s = sim_get();
  mg__CUcontext c0 = sim_ctx(&s, 0), c1 = sim_ctx(&s, 1), c3 = sim_ctx(&s, 3), cur = NULL;
  ASSERT_EQ(s.SetCurrent(c0), 0);
  ASSERT_EQ(s.EnablePeer(c1, 0), 0); /* the program's own: 0 -> 1 */
  ASSERT_EQ(s.SetCurrent(c3), 0);
  for (int round = 0; round < 2; round++) {
    int failed = -1;
    ASSERT_OK(mg_p2p_enable_all(&failed));
    ASSERT_EQ(failed, 1);
    ASSERT_EQ(s.GetCurrent(&cur), 0);
    ASSERT(cur == c3);
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++) {
        mg_p2p_pair_info_t pi = pair(a, b);
        const int bad = a == 2 && b == 3;
        ASSERT_EQ(pi.enabled, !bad);
        ASSERT_EQ(pi.enable_status, bad ? MG_ERR_BACKEND : MG_OK);
        ASSERT_EQ(pi.path,
                  a == b ? MG_P2P_PATH_LOCAL : bad ? MG_P2P_PATH_STAGED : MG_P2P_PATH_PEER);
        if (bad) {
          ASSERT_CONTAINS(pi.reason, "enabling peer access 2 -> 3");
          ASSERT_CONTAINS(pi.reason, "CUDA_ERROR_TOO_MANY_PEERS");
        } else {
          ASSERT_STR_EQ(pi.reason, "");
        }
      }
  }
  ASSERT_OK(mg_p2p_enable_all(NULL));
}

/* MGSIM_DEVICES=4 MGSIM_PEER_CORRUPT=1>2 MGSIM_PEER_COPY_FAIL=3>0: "can access" lies for 1 -> 2
 * and the copy 3 -> 0 fails; both are found, reported and taken off the peer path, and a copy
 * 1 -> 2 afterwards (staged) delivers the bytes. */
static void t_probe(void) {
  int failed = -1;
  ASSERT_OK(mg_p2p_probe(0, 0, &failed));
  ASSERT_EQ(failed, 0); /* nothing enabled yet: only each GPU with itself */
  ASSERT_EQ(pair(1, 1).probe, MG_P2P_PROBE_OK);
  ASSERT_EQ(pair(1, 2).probe, MG_P2P_PROBE_NOT_RUN);
  ASSERT_OK(mg_p2p_enable_all(&failed));
  ASSERT_EQ(failed, 0);
  ASSERT_OK(mg_p2p_probe(65536, 1, &failed));
  ASSERT_EQ(failed, 2);
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      mg_p2p_pair_info_t pi = pair(a, b);
      const int lie = a == 1 && b == 2, broken = a == 3 && b == 0;
      ASSERT_EQ(pi.probe, lie || broken ? MG_P2P_PROBE_FAILED : MG_P2P_PROBE_OK);
      ASSERT_EQ(pi.enabled, !(lie || broken));
      if (!(lie || broken)) ASSERT_GT_F(pi.gbps, 0);
      ASSERT_EQ(pi.path, a == b ? MG_P2P_PATH_LOCAL
                               : lie || broken ? MG_P2P_PATH_STAGED : MG_P2P_PATH_PEER);
    }
  ASSERT_CONTAINS(pair(1, 2).reason, "the bytes copied 1 -> 2 differ: byte 0 of 65536");
  ASSERT_CONTAINS(pair(3, 0).reason, "cuMemcpyPeerAsync");
  /* Failed pairs stay off: enabling again leaves them, probing again keeps the verdict. */
  ASSERT_OK(mg_p2p_enable_all(&failed));
  ASSERT_EQ(pair(1, 2).enabled, 0);
  ASSERT_OK(mg_p2p_probe(0, 0, &failed));
  ASSERT_EQ(failed, 0);
  ASSERT_EQ(pair(1, 2).probe, MG_P2P_PROBE_FAILED);
  const int one[4] = {0, 0, 0, 0}; /* 2 -> 1 still works: one island */
  expect_islands(one, 4, 1);
  /* The lying pair's copies are staged, and right. */
  mg_buf_t *src, *dst;
  ASSERT_OK(mg_buf_create(1, 4096, &src));
  ASSERT_OK(mg_buf_create(2, 4096, &dst));
  void *ps, *pd;
  ASSERT_OK(mg_buf_ptr(src, &ps));
  ASSERT_OK(mg_buf_ptr(dst, &pd));
  memset(ps, 0x3c, 4096); /* simulated device memory is host memory */
  mg_request_t *req = NULL;
  mg_p2p_path_t path = MG_P2P_PATH_LOCAL;
  ASSERT_OK(mg_p2p_copy(pd, 2, ps, 1, 4096, NULL, &path, &req));
  ASSERT_EQ(path, MG_P2P_PATH_STAGED);
  ASSERT_OK(mg_request_wait(req, 10));
  ASSERT_OK(mg_request_free(req));
  ASSERT_EQ(memcmp(ps, pd, 4096), 0);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_probe((size_t)1 << 31, 0, NULL));
  ASSERT_OK(mg_buf_destroy(src));
  ASSERT_OK(mg_buf_destroy(dst));
}

/* MGSIM_DEVICES=4, 3 reached by nobody, MGSIM_PEER_CORRUPT=1>2: the question our kernels ask of
 * a pair enables it on its own, never probes it (a launch must not wait on the host), says no
 * for a pair that cannot access, and for a lying pair once the program's probe found it. */
static void t_pair_works(void) {
  char why[256] = "";
  ASSERT_EQ(pair(0, 1).enabled, 0);
  ASSERT_EQ(mg__p2p_pair_works(0, 1, why, sizeof why), 1);
  ASSERT_EQ(pair(0, 1).enabled, 1);
  ASSERT_EQ(pair(0, 1).probe, MG_P2P_PROBE_NOT_RUN);
  ASSERT_EQ(mg__p2p_pair_works(0, 1, why, sizeof why), 1); /* asked again: the same answer */
  ASSERT_EQ(mg__p2p_pair_works(2, 2, why, sizeof why), 1);
  ASSERT_EQ(mg__p2p_pair_works(1, 2, why, sizeof why), 1); /* not probed: capability stands */
  int failed = -1;
  ASSERT_OK(mg_p2p_probe(0, 0, &failed));
  ASSERT_EQ(failed, 1);
  ASSERT_EQ(mg__p2p_pair_works(1, 2, why, sizeof why), 0);
  ASSERT_CONTAINS(why, "the bytes copied 1 -> 2 differ");
  ASSERT_EQ(pair(1, 2).enabled, 0); /* taken off the peer path, and not enabled again */
  ASSERT_EQ(mg__p2p_pair_works(1, 2, why, sizeof why), 0);
  ASSERT_EQ(pair(1, 2).enabled, 0);
  ASSERT_EQ(mg__p2p_pair_works(0, 1, why, sizeof why), 1);
  ASSERT_EQ(mg__p2p_pair_works(0, 3, why, sizeof why), 0);
  ASSERT_CONTAINS(why, "cannot access");
  ASSERT_EQ(pair(0, 3).enabled, 0);
  ASSERT_EQ(mg__p2p_pair_works(0, 9, why, sizeof why), 0);
  ASSERT_CONTAINS(why, "not one of this process's 4");
}

/* ---- copies ---- */

/* MGSIM_DEVICES=2: every bad argument is refused before anything is enqueued. */
static void t_copy_checks(void) {
  sim_t s = sim_get();
  mg_buf_t *b0, *b1;
  ASSERT_OK(mg_buf_create(0, 1024, &b0));
  ASSERT_OK(mg_buf_create(1, 1024, &b1));
  char *p0, *p1;
  ASSERT_OK(mg_buf_ptr(b0, (void **)&p0));
  ASSERT_OK(mg_buf_ptr(b1, (void **)&p1));
  mg_request_t *req = (mg_request_t *)&req, *const untouched = req;
  char host[64];
#define REFUSED(needle, call)                       \
  do {                                              \
    ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, call);   \
    ASSERT_CONTAINS(mg_last_error(), needle);       \
    ASSERT(req == untouched);                       \
  } while (0)
  REFUSED("dst is NULL", mg_p2p_copy(NULL, 1, p0, 0, 8, NULL, NULL, &req));
  REFUSED("dst_device 2 is out of range: 2 CUDA devices",
          mg_p2p_copy(p1, 2, p0, 0, 8, NULL, NULL, &req));
  REFUSED("src_device -1 is out of range", mg_p2p_copy(p1, 1, p0, -1, 8, NULL, NULL, &req));
  REFUSED("src", mg_p2p_copy(p1, 1, p0, 1, 8, NULL, NULL, &req));         /* p0 is on 0 */
  REFUSED("src", mg_p2p_copy(p1, 1, host, 0, 8, NULL, NULL, &req));       /* host memory */
  REFUSED("dst", mg_p2p_copy(p1 + 1000, 1, p0, 0, 25, NULL, NULL, &req)); /* past the end */
  REFUSED("overlap", mg_p2p_copy(p0 + 8, 0, p0, 0, 16, NULL, NULL, &req));
  /* A stream of neither device. */
  mg__CUstream other = NULL;
  {
    mg__CUcontext c1 = sim_ctx(&s, 1);
    ASSERT_EQ(s.SetCurrent(c1), 0);
    ASSERT_EQ(s.StreamCreate(&other, MG__CU_STREAM_NON_BLOCKING), 0);
    ASSERT_EQ(s.SetCurrent(NULL), 0);
  }
  REFUSED("belongs neither to device 0",
          mg_p2p_copy(p0 + 512, 0, p0, 0, 8, (mg_stream_t)other, NULL, &req));
  /* Buffers: ranges are never cut to fit. */
  REFUSED("dst range [1000, 1000 + 25) runs past the end of its buffer of 1024 bytes",
          mg_buf_copy(b1, 1000, b0, 0, 25, NULL, NULL, &req));
  REFUSED("src range", mg_buf_copy(b1, 0, b0, (size_t)-1, 2, NULL, NULL, &req));
  REFUSED("overlap", mg_buf_copy(b0, 4, b0, 0, 8, NULL, NULL, &req));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_buf_copy(b1, 0, NULL, 0, 8, NULL, NULL, &req));
  ASSERT(req == untouched);
#undef REFUSED
  /* What works: the same device (local), to the peer (staged, nothing enabled), bytes == 0, a
   * stream of the source's device. */
  mg_p2p_path_t path;
  memset(p0, 7, 1024);
  ASSERT_OK(mg_p2p_copy(p0 + 512, 0, p0, 0, 256, NULL, &path, &req));
  ASSERT_EQ(path, MG_P2P_PATH_LOCAL);
  ASSERT_OK(mg_request_wait(req, 10));
  ASSERT_OK(mg_request_free(req));
  ASSERT_OK(mg_p2p_copy(p1, 1, p0, 0, 1024, (mg_stream_t)other, &path, &req));
  ASSERT_EQ(path, MG_P2P_PATH_STAGED);
  ASSERT_OK(mg_request_wait(req, 10));
  ASSERT_OK(mg_request_free(req));
  ASSERT_EQ(p1[1023], 7);
  /* Without a request: ordered on its stream only. */
  memset(p0, 9, 64);
  ASSERT_OK(mg_p2p_copy(p1, 1, p0, 0, 64, (mg_stream_t)other, &path, NULL));
  ASSERT_EQ(s.StreamSynchronize(other), 0);
  ASSERT_EQ(p1[63], 9);
  ASSERT_OK(mg_p2p_copy(p1, 1, p0, 0, 0, NULL, &path, &req));
  mg_status_t rs = MG_INPROGRESS;
  ASSERT_OK(mg_request_test(req, &rs));
  ASSERT_EQ(rs, MG_OK);
  ASSERT_OK(mg_request_free(req));
  ASSERT_OK(mg_buf_destroy(b0));
  ASSERT_OK(mg_buf_destroy(b1));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_buf_destroy(b1));
  ASSERT_OK(mg_buf_destroy(NULL));
}

static atomic_int gate;      /* 1 releases the host function that holds stream A */
static atomic_int cb_runs;
static pthread_t main_thread;

static void hold_stream(void *arg) {
  (void)arg;
  while (!atomic_load(&gate)) usleep(1000);
}

static void on_done(mg_request_t *req, mg_status_t st, void *arg) {
  (void)req;
  (void)arg;
  ASSERT_EQ(st, MG_OK);
  ASSERT(!pthread_equal(pthread_self(), main_thread)); /* a library thread */
  atomic_fetch_add(&cb_runs, 1);
}

/* MGSIM_DEVICES=2: a copy out of a buffer waits, on the GPU, for the buffer's last writer. The
 * writer is held behind a host function on stream A; mg_buf_copy returns at once, its request
 * stays pending and the destination untouched until A runs, and then it holds A's bytes, not
 * the older ones. */
static void t_copy_order(void) {
  sim_t s = sim_get();
  main_thread = pthread_self();
  int failed;
  ASSERT_OK(mg_p2p_enable_all(&failed));
  mg_buf_t *src, *dst, *fresh;
  const size_t n = 1 << 16;
  ASSERT_OK(mg_buf_create(0, n, &src));
  ASSERT_OK(mg_buf_create(1, n, &dst));
  ASSERT_OK(mg_buf_create(0, n, &fresh));
  unsigned char *ps, *pd, *pf;
  ASSERT_OK(mg_buf_ptr(src, (void **)&ps));
  ASSERT_OK(mg_buf_ptr(dst, (void **)&pd));
  ASSERT_OK(mg_buf_ptr(fresh, (void **)&pf));
  memset(ps, 'A', n);
  memset(pd, 0, n);
  memset(pf, 'B', n);
  mg__CUstream a = NULL;
  ASSERT_EQ(s.SetCurrent(sim_ctx(&s, 0)), 0);
  ASSERT_EQ(s.StreamCreate(&a, MG__CU_STREAM_NON_BLOCKING), 0);
  ASSERT_EQ(s.LaunchHostFunc(a, hold_stream, NULL), 0);
  ASSERT_EQ(s.MemcpyAsync((mg__CUdeviceptr)(uintptr_t)ps, (mg__CUdeviceptr)(uintptr_t)pf, n, a), 0);
  ASSERT_OK(mg_buf_record_write(src, (mg_stream_t)a));
  mg_buf_info_t bi;
  ASSERT_OK(mg_buf_info(src, &bi));
  ASSERT_EQ(bi.writes, 1);
  ASSERT(bi.last_writer == (mg_stream_t)a);
  mg_request_t *req = NULL;
  mg_p2p_path_t path;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ASSERT_OK(mg_buf_copy(dst, 0, src, 0, n, NULL, &path, &req));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ASSERT_LT_F((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), 1.0);
  ASSERT_EQ(path, MG_P2P_PATH_PEER);
  ASSERT_OK(mg_request_on_complete(req, on_done, NULL));
  usleep(100000);
  mg_status_t rs = MG_OK;
  ASSERT_OK(mg_request_test(req, &rs));
  ASSERT_EQ(rs, MG_INPROGRESS);
  ASSERT_EQ(pd[0], 0);
  ASSERT_OK(mg_buf_info(dst, &bi));
  ASSERT_EQ(bi.writes, 1); /* recorded when enqueued */
  atomic_store(&gate, 1);
  ASSERT_OK(mg_request_wait(req, 10));
  for (size_t k = 0; k < n; k++)
    if (pd[k] != 'B') FAIL("dst[%zu] = 0x%02x: copied before its source's writer ran", k, pd[k]);
  ASSERT_OK(mg_request_free(req));
  for (int i = 0; i < 1000 && atomic_load(&cb_runs) == 0; i++) usleep(1000);
  ASSERT_EQ(atomic_load(&cb_runs), 1);
  ASSERT_EQ(s.StreamSynchronize(a), 0);
  /* A second write from the same context re-records the buffer's event: the next copy waits for
   * that one, not the first (which has long been reached). */
  atomic_store(&gate, 0);
  memset(pf, 'C', n);
  ASSERT_EQ(s.LaunchHostFunc(a, hold_stream, NULL), 0);
  ASSERT_EQ(s.MemcpyAsync((mg__CUdeviceptr)(uintptr_t)ps, (mg__CUdeviceptr)(uintptr_t)pf, n, a), 0);
  ASSERT_OK(mg_buf_record_write(src, (mg_stream_t)a));
  ASSERT_OK(mg_buf_copy(dst, 0, src, 0, n, NULL, NULL, &req));
  usleep(100000);
  ASSERT_OK(mg_request_test(req, &rs));
  ASSERT_EQ(rs, MG_INPROGRESS);
  ASSERT_EQ(pd[0], 'B');
  atomic_store(&gate, 1);
  ASSERT_OK(mg_request_wait(req, 10));
  ASSERT_OK(mg_request_free(req));
  for (size_t k = 0; k < n; k++)
    if (pd[k] != 'C') FAIL("dst[%zu] = 0x%02x: the second copy did not wait", k, pd[k]);
  ASSERT_OK(mg_buf_info(src, &bi));
  ASSERT_EQ(bi.writes, 2);
  ASSERT_EQ(s.StreamSynchronize(a), 0);
  ASSERT_EQ(s.SetCurrent(NULL), 0);
  ASSERT_OK(mg_buf_destroy(src));
  ASSERT_OK(mg_buf_destroy(dst));
  ASSERT_OK(mg_buf_destroy(fresh));
}

/* The simulator's count of cuLaunchHostFunc calls, and its context-fault knob (sim.h). */
static int sim_control(const char *key, long value) {
  void *h = dlopen(getenv("MGCOMM_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
  ASSERT(h != NULL);
  int (*control)(const char *, long);
  *(void **)&control = dlsym(h, "mgsim_cuda_control");
  ASSERT(control != NULL);
  return control(key, value);
}

static atomic_int fail_runs;
static atomic_int fail_status;

static void on_fail(mg_request_t *req, mg_status_t st, void *arg) {
  (void)req;
  (void)arg;
  atomic_store(&fail_status, st);
  atomic_fetch_add(&fail_runs, 1);
}

/* MGSIM_DEVICES=2 MGCOMM_WATCHDOG_INTERVAL=0.01: a copy's request is an event recorded after the
 * copy, and nothing more: no host function per copy (the simulator counts them); test and wait
 * find its completion by querying the event; a callback adds one host function, and runs once;
 * a stream that faults ends the request with the fault, found by the watchdog's query when
 * nobody waits. */
static void t_copy_request(void) {
  sim_t s = sim_get();
  unsigned char *p0;
  mg_buf_t *b;
  const size_t n = 4096;
  ASSERT_OK(mg_buf_create(0, 2 * n, &b));
  ASSERT_OK(mg_buf_ptr(b, (void **)&p0));
  memset(p0, 'X', n);
  memset(p0 + n, 0, n);
  mg__CUstream a = NULL;
  ASSERT_EQ(s.SetCurrent(sim_ctx(&s, 0)), 0);
  ASSERT_EQ(s.StreamCreate(&a, MG__CU_STREAM_NON_BLOCKING), 0);
  atomic_store(&gate, 0);
  ASSERT_EQ(s.LaunchHostFunc(a, hold_stream, NULL), 0);
  const int h0 = sim_control("hostfns", 0);
  ASSERT(h0 >= 1);
  mg_request_t *req[8];
  mg_status_t rs = MG_OK;
  for (int i = 0; i < 8; i++)
    ASSERT_OK(mg_p2p_copy(p0 + n, 0, p0, 0, n, (mg_stream_t)a, NULL, &req[i]));
  ASSERT_EQ(sim_control("hostfns", 0), h0); /* no host function for a copy */
  /* Requests freed at once, their copies still held: each gives its event back to the pool
   * when freed, so that the next copy records it again rather than making one. */
  mg_request_t *dr = NULL;
  ASSERT_OK(mg_p2p_copy(p0 + n, 0, p0, 0, n, (mg_stream_t)a, NULL, &dr));
  ASSERT_OK(mg_request_free(dr));
  const int ev0 = sim_control("events", 0);
  for (int i = 0; i < 50; i++) {
    ASSERT_OK(mg_p2p_copy(p0 + n, 0, p0, 0, n, (mg_stream_t)a, NULL, &dr));
    ASSERT_OK(mg_request_free(dr));
  }
  ASSERT_EQ(sim_control("events", 0), ev0);
  ASSERT_OK(mg_request_test(req[0], &rs));
  ASSERT_EQ(rs, MG_INPROGRESS);
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_request_wait(req[7], 0.05));
  /* A callback on a pending request: one host function. */
  ASSERT_OK(mg_request_on_complete(req[1], on_done, NULL));
  ASSERT_EQ(sim_control("hostfns", 0), h0 + 1);
  atomic_store(&cb_runs, 0);
  main_thread = pthread_self();
  atomic_store(&gate, 1);
  ASSERT_OK(mg_request_wait(req[7], 10));
  for (size_t k = 0; k < n; k++)
    if (p0[n + k] != 'X') FAIL("dst[%zu] = 0x%02x after the copy's request completed", k, p0[n + k]);
  for (int i = 0; i < 8; i++) {
    /* Reached, so the first query completes it, whatever the watchdog did meanwhile. */
    ASSERT_OK(mg_request_test(req[i], &rs));
    ASSERT_EQ(rs, MG_OK);
  }
  for (int i = 0; i < 1000 && atomic_load(&cb_runs) == 0; i++) usleep(1000);
  ASSERT_EQ(atomic_load(&cb_runs), 1);
  /* A callback on a completed request runs on the library's thread, without a host function. */
  ASSERT_OK(mg_request_on_complete(req[2], on_done, NULL));
  for (int i = 0; i < 1000 && atomic_load(&cb_runs) == 1; i++) usleep(1000);
  ASSERT_EQ(atomic_load(&cb_runs), 2);
  ASSERT_EQ(sim_control("hostfns", 0), h0 + 1);
  for (int i = 0; i < 8; i++) ASSERT_OK(mg_request_free(req[i]));

  /* The context faults while copies wait on a held stream. Nobody waits for the first: the
   * watchdog's query ends it, and its callback gets the fault; wait reports it for the second. */
  atomic_store(&gate, 0);
  ASSERT_EQ(s.LaunchHostFunc(a, hold_stream, NULL), 0);
  ASSERT_OK(mg_p2p_copy(p0 + n, 0, p0, 0, n, (mg_stream_t)a, NULL, &req[0]));
  ASSERT_OK(mg_p2p_copy(p0 + n, 0, p0, 0, n, (mg_stream_t)a, NULL, &req[1]));
  ASSERT_OK(mg_request_on_complete(req[0], on_fail, NULL));
  ASSERT_EQ(sim_control("query_fault", 1), 0);
  for (int i = 0; i < 2000 && atomic_load(&fail_runs) == 0; i++) usleep(1000);
  ASSERT_EQ(atomic_load(&fail_runs), 1);
  ASSERT(atomic_load(&fail_status) < 0);
  mg_status_t st = mg_request_wait(req[1], 10);
  ASSERT(st < 0 && st != MG_ERR_TIMED_OUT);
  ASSERT_CONTAINS(mg_last_error(), "CUDA_ERROR_ILLEGAL_ADDRESS");
  ASSERT_CONTAINS(mg_last_error(), "the stream failed before it finished the copy");
  ASSERT_EQ(sim_control("query_fault", 0), 0);
  atomic_store(&gate, 1); /* the host function of req[0]'s callback runs now: it finds it done */
  ASSERT_EQ(s.StreamSynchronize(a), 0);
  usleep(20000);
  ASSERT_EQ(atomic_load(&fail_runs), 1); /* exactly once */
  ASSERT_OK(mg_request_test(req[1], &rs));
  ASSERT_EQ(rs, st); /* the outcome stays */
  ASSERT_OK(mg_request_free(req[0]));
  ASSERT_OK(mg_request_free(req[1]));
  ASSERT_EQ(s.SetCurrent(NULL), 0);
  ASSERT_OK(mg_buf_destroy(b));
}

/* MGSIM_DEVICES=2 MGSIM_PEER_COPY_FAIL=0>1: the driver refuses the copy; no request, and the
 * destination buffer records no write. */
static void t_copy_fail(void) {
  mg_buf_t *src, *dst;
  ASSERT_OK(mg_buf_create(0, 4096, &src));
  ASSERT_OK(mg_buf_create(1, 4096, &dst));
  mg_request_t *req = (mg_request_t *)&req, *const untouched = req;
  ASSERT_STATUS(MG_ERR_BACKEND, mg_buf_copy(dst, 0, src, 0, 4096, NULL, NULL, &req));
  ASSERT_CONTAINS(mg_last_error(), "mg_buf_copy");
  ASSERT_CONTAINS(mg_last_error(), "cuMemcpyPeerAsync failed: CUDA_ERROR_UNKNOWN");
  ASSERT(req == untouched);
  mg_buf_info_t bi;
  ASSERT_OK(mg_buf_info(dst, &bi));
  ASSERT_EQ(bi.writes, 0);
  ASSERT(bi.last_writer == NULL);
  /* The other direction works, and records. */
  ASSERT_OK(mg_buf_copy(src, 0, dst, 0, 4096, NULL, NULL, &req));
  ASSERT_OK(mg_request_wait(req, 10));
  ASSERT_OK(mg_request_free(req));
  ASSERT_OK(mg_buf_info(src, &bi));
  ASSERT_EQ(bi.writes, 1);
  ASSERT(bi.last_writer != NULL);
  ASSERT_OK(mg_buf_destroy(src));
  ASSERT_OK(mg_buf_destroy(dst));
}

/* ---- without a driver, without a GPU ---- */

/* MGCOMM_CUDA_LIBRARY=/nonexistent: statuses, never a crash; host buffers still work. */
static void t_nodriver(void) {
  mg_p2p_pair_info_t pi;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_p2p_pair_info(0, 0, &pi));
  ASSERT_CONTAINS(mg_last_error(), "MGCOMM_CUDA_LIBRARY");
  int isl[4], k;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_p2p_islands(isl, 4, &k));
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_p2p_enable_all(NULL));
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_p2p_probe(0, 0, NULL));
  char a[8], b[8];
  mg_request_t *req;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_p2p_copy(a, 0, b, 0, 8, NULL, NULL, &req));
  mg_buf_t *buf;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_buf_create(0, 8, &buf));
  ASSERT_OK(mg_buf_create(MG_BUF_HOST, 8, &buf));
  ASSERT_OK(mg_buf_destroy(buf));
}

/* MGSIM_DEVICES=0: a driver without GPUs. Nothing to do is not an error; every device number is
 * out of range. */
static void t_nogpu(void) {
  int isl[1], k = -1, failed = -1;
  ASSERT_OK(mg_p2p_islands(isl, 0, &k));
  ASSERT_EQ(k, 0);
  ASSERT_OK(mg_p2p_enable_all(&failed));
  ASSERT_EQ(failed, 0);
  failed = -1;
  ASSERT_OK(mg_p2p_probe(0, 1, &failed));
  ASSERT_EQ(failed, 0);
  mg_p2p_pair_info_t pi;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_p2p_pair_info(0, 0, &pi));
  ASSERT_CONTAINS(mg_last_error(), "from 0 is out of range: 0 CUDA devices");
  mg_buf_t *buf;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_buf_create(0, 8, &buf));
}

/* ---- buffers with a generation, on the host backend ---- */

static void t_hostbuf(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  mg_world_t *w;
  ASSERT_OK(mg_world_create(&cfg, 2, NULL, &w));
  mg_buf_t *a, *b, *solo;
  ASSERT_OK(mg_world_buf_create(w, 0, 256, &a));
  ASSERT_OK(mg_world_buf_create(w, 1, 256, &b));
  ASSERT_OK(mg_buf_create(MG_BUF_HOST, 256, &solo));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_buf_create(w, 2, 256, &a));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_world_buf_create(w, 0, 0, &a));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_world_buf_create(NULL, 0, 8, &a));
  mg_buf_info_t bi;
  ASSERT_OK(mg_buf_info(a, &bi));
  ASSERT_EQ(bi.device, MG_BUF_HOST);
  ASSERT_EQ(bi.bytes, 256);
  ASSERT_EQ(bi.generation, 1);
  ASSERT_EQ(bi.stale, 0);
  unsigned char *pa, *pb;
  ASSERT_OK(mg_buf_ptr(a, (void **)&pa));
  ASSERT_OK(mg_buf_ptr(b, (void **)&pb));
  for (int k = 0; k < 256; k++) pa[k] = (unsigned char)k;
  ASSERT_OK(mg_buf_record_write(a, NULL));
  mg_request_t *req;
  mg_p2p_path_t path = MG_P2P_PATH_PEER;
  ASSERT_OK(mg_buf_copy(b, 16, a, 32, 64, NULL, &path, &req));
  ASSERT_EQ(path, MG_P2P_PATH_LOCAL);
  ASSERT_OK(mg_request_wait(req, 1));
  ASSERT_OK(mg_request_free(req));
  for (int k = 0; k < 64; k++) ASSERT_EQ(pb[16 + k], 32 + k);
  ASSERT_OK(mg_buf_info(b, &bi));
  ASSERT_EQ(bi.writes, 1);
  /* A failed write records nothing. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_buf_copy(b, 200, a, 0, 64, NULL, NULL, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_buf_copy(b, 0, a, 0, 8, (mg_stream_t)&req, NULL, &req));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_buf_record_write(b, (mg_stream_t)&req));
  ASSERT_OK(mg_buf_info(b, &bi));
  ASSERT_EQ(bi.writes, 1);
  /* Rebuild: the world's buffers are stale, the buffer without a world is not. */
  ASSERT_OK(mg_world_rebuild(w));
  void *p;
  ASSERT_STATUS(MG_ERR_STALE, mg_buf_ptr(a, &p));
  ASSERT_CONTAINS(mg_last_error(),
                  "generation 1 of its world, which was rebuilt (generation 2 now)");
  ASSERT_STATUS(MG_ERR_STALE, mg_buf_copy(solo, 0, a, 0, 8, NULL, NULL, &req));
  ASSERT_CONTAINS(mg_last_error(), "src belongs to generation 1");
  ASSERT_STATUS(MG_ERR_STALE, mg_buf_record_write(b, NULL));
  ASSERT_OK(mg_buf_info(a, &bi));
  ASSERT_EQ(bi.stale, 1);
  ASSERT_OK(mg_buf_ptr(solo, &p));
  mg_buf_t *c;
  ASSERT_OK(mg_world_buf_create(w, 1, 64, &c));
  ASSERT_OK(mg_buf_info(c, &bi));
  ASSERT_EQ(bi.generation, 2);
  ASSERT_OK(mg_buf_ptr(c, &p));
  ASSERT_OK(mg_world_destroy(w));
  ASSERT_STATUS(MG_ERR_STALE, mg_buf_ptr(c, &p));
  ASSERT_CONTAINS(mg_last_error(), "a world that was destroyed");
  ASSERT_OK(mg_buf_destroy(a));
  ASSERT_OK(mg_buf_destroy(b));
  ASSERT_OK(mg_buf_destroy(c));
  ASSERT_OK(mg_buf_destroy(solo));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_buf_ptr(solo, &p));
}

/* MGCOMM_CUDA_LIBRARY=/nonexistent MGCOMM_FAULT=host.fail:3:1:2: a world all_reduce into the
 * world's buffers records itself as their last writer, and a copy out of one submitted right
 * after the call is ordered after it (the copy waits until the rank's worker has run it: host
 * buffers are written when enqueued); the second all_reduce fails on both ranks (the fault's
 * 3rd and 4th operation) and records nothing, and a copy after it does not wait for it. Large
 * buffers, so that a copy not ordered after the all_reduce would see its inputs, or a part. */
static void t_world_writer(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  mg_world_t *w;
  ASSERT_OK(mg_world_create(&cfg, 2, NULL, &w));
  const size_t count = (size_t)4 << 20, bytes = count * sizeof(float);
  mg_buf_t *b[2], *out;
  float *p[2], *po;
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_world_buf_create(w, r, bytes, &b[r]));
    ASSERT_OK(mg_buf_ptr(b[r], (void **)&p[r]));
    for (size_t k = 0; k < count; k++) p[r][k] = (float)(r + 1);
  }
  ASSERT_OK(mg_buf_create(MG_BUF_HOST, bytes, &out));
  ASSERT_OK(mg_buf_ptr(out, (void **)&po));
  const void *send[2] = {p[0], p[1]};
  void *recv[2] = {p[0], p[1]};
  mg_request_t *ar, *cp;
  ASSERT_OK(mg_world_all_reduce(w, send, recv, count, MG_FLOAT32, MG_SUM, &ar));
  ASSERT_OK(mg_buf_copy(out, 0, b[1], 0, bytes, NULL, NULL, &cp));
  for (size_t k = 0; k < count; k++)
    if (po[k] != 3.0f) FAIL("out[%zu] = %g: the copy ran before the all_reduce", k, (double)po[k]);
  ASSERT_OK(mg_request_wait(ar, 10));
  ASSERT_OK(mg_request_free(ar));
  ASSERT_OK(mg_request_free(cp));
  mg_buf_info_t bi;
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_buf_info(b[r], &bi));
    ASSERT_EQ(bi.writes, 1);
  }
  ASSERT_OK(mg_buf_info(out, &bi));
  ASSERT_EQ(bi.writes, 1);
  /* The failed one: nothing recorded, and the copy after it neither waits for ever nor fails. */
  ASSERT_OK(mg_world_all_reduce(w, send, recv, count, MG_FLOAT32, MG_SUM, &ar));
  ASSERT_OK(mg_buf_copy(out, 0, b[0], 0, bytes, NULL, NULL, &cp));
  ASSERT(mg_request_wait(ar, 10) < 0);
  ASSERT_CONTAINS(mg_last_error(), "host.fail");
  ASSERT_OK(mg_request_free(ar));
  ASSERT_OK(mg_request_free(cp));
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_buf_info(b[r], &bi));
    ASSERT_EQ(bi.writes, 1);
  }
  ASSERT_EQ(po[0], 3.0f);
  ASSERT_OK(mg_world_destroy(w));
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_buf_destroy(b[r]));
  ASSERT_OK(mg_buf_destroy(out));
}

/* MGSIM_DEVICES=2 MGSIM_NEVER_COMPLETE=0:1, the simulated NCCL: a world all_reduce on the NCCL
 * backend into world buffers records its event on each rank's stream as the buffers' last
 * writer; a copy out of rank 0's buffer returns at once (no host wait for the GPU) and its
 * request stays pending, the destination untouched, while rank 0's all_reduce is held on its
 * stream; aborting the world releases it, and the copy then runs. */
static void t_world_writer_gpu(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = 30;
  const int devices[2] = {0, 1};
  mg_world_t *w;
  ASSERT_OK(mg_world_create(&cfg, 2, devices, &w));
  const size_t count = 1024, bytes = count * sizeof(float);
  mg_buf_t *b[2], *out;
  float *p[2], *po;
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(mg_world_buf_create(w, r, bytes, &b[r]));
    ASSERT_OK(mg_buf_ptr(b[r], (void **)&p[r]));
    for (size_t k = 0; k < count; k++) p[r][k] = (float)(r + 1);
  }
  ASSERT_OK(mg_buf_create(0, bytes, &out));
  ASSERT_OK(mg_buf_ptr(out, (void **)&po));
  memset(po, 0, bytes);
  const void *send[2] = {p[0], p[1]};
  void *recv[2] = {p[0], p[1]};
  mg_request_t *ar, *cp;
  ASSERT_OK(mg_world_all_reduce(w, send, recv, count, MG_FLOAT32, MG_SUM, &ar));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ASSERT_OK(mg_buf_copy(out, 0, b[0], 0, bytes, NULL, NULL, &cp));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ASSERT_LT_F((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), 1.0);
  mg_buf_info_t bi;
  ASSERT_OK(mg_buf_info(b[0], &bi));
  ASSERT_EQ(bi.writes, 1);
  ASSERT(bi.last_writer != NULL); /* the rank's stream */
  usleep(200000);
  mg_status_t rs = MG_OK;
  ASSERT_OK(mg_request_test(cp, &rs));
  ASSERT_EQ(rs, MG_INPROGRESS);
  ASSERT_EQ(po[0], 0.0f);
  ASSERT_OK(mg_world_abort(w));
  ASSERT_OK(mg_request_wait(cp, 10));
  ASSERT(mg_request_wait(ar, 10) < 0); /* aborted */
  ASSERT_OK(mg_request_free(ar));
  ASSERT_OK(mg_request_free(cp));
  ASSERT_OK(mg_world_destroy(w));
  for (int r = 0; r < 2; r++) ASSERT_OK(mg_buf_destroy(b[r]));
  ASSERT_OK(mg_buf_destroy(out));
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {{"topo4", t_topo4},           {"islands8", t_islands8},
               {"islands_enable", t_islands_enable}, {"enable", t_enable},
               {"probe", t_probe},           {"pair_works", t_pair_works},
               {"copy_checks", t_copy_checks},
               {"copy_order", t_copy_order}, {"copy_fail", t_copy_fail},
               {"copy_request", t_copy_request},
               {"nodriver", t_nodriver},     {"nogpu", t_nogpu},
               {"links4", t_links4},         {"links_switch", t_links_switch},
               {"hostbuf", t_hostbuf},       {"world_writer", t_world_writer},
               {"world_writer_gpu", t_world_writer_gpu}};
  if (argc != 2) FAIL("usage: p2p <case>");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (strcmp(argv[1], cases[i].name) == 0) {
      cases[i].fn();
      printf("p2p %s: ok\n", argv[1]);
      return 0;
    }
  FAIL("unknown case %s", argv[1]);
}
