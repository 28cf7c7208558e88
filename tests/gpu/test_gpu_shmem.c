/*
 * test_gpu_shmem.c -- NVSHMEM's host API through mgcomm on real GPUs (issue 19; label gpu).
 *   one   one PE, started through a one-rank NCCL communicator (so the rendezvous takes the
 *         GPU path): allocate, put and get to itself (blocking and on a stream), quiet, fence,
 *         barriers, a local buffer in host memory refused, teams, finalize refused while memory
 *         is live, then finalized
 *   two   N PEs, one process each under `mgcomm launch -n N` (MGCOMM is the tool), on a
 *         host-backend communicator of mg_comm_init_env; PE r uses GPU r mod the GPUs there, so
 *         two PEs share one GPU on a one-GPU machine: put/get across PEs (blocking, on a
 *         stream), barriers, sizes that differ refused on every PE, strided teams (refused
 *         where PEs share a GPU: NVSHMEM's limited MPG mode exits the process on a split),
 *         finalize
 * Exits 77 without a GPU, NCCL or NVSHMEM.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_util.h"
#include "mgcomm.h"
#include "test.h"

#define BYTES (1u << 20)

static void need_nvshmem(void) {
  int rel = 0;
  if (mg_shmem_version(&rel, NULL) != MG_OK) SKIP("no NVSHMEM: %s", mg_last_error());
  printf("NVSHMEM %d.%d.%d\n", rel / 10000, rel / 100 % 100, rel % 100);
}

static void fill(unsigned char *h, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 31 + (size_t)seed * 7 + 1);
}
static void expect(const unsigned char *h, size_t n, int seed, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (h[i] != (unsigned char)(i * 31 + (size_t)seed * 7 + 1))
      FAIL("%s: byte %zu is %u, expected %u", what, i, h[i],
           (unsigned char)(i * 31 + (size_t)seed * 7 + 1));
}

static void one(void) {
  gu_need(1);
  need_nvshmem();
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.device = 0;
  mg_unique_id_t id;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_NCCL, &id));
  ASSERT_OK(mg_comm_init_rank(&cfg, 1, &id, 0, &comm));
  double t0 = gu_now();
  ASSERT_OK(mg_shmem_init_comm(comm, MG_UNDEF_INT));
  printf("init through a one-rank NCCL communicator: %.3f s\n", gu_now() - t0);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_init_comm(comm, MG_UNDEF_INT));
  int v = -1;
  ASSERT_OK(mg_shmem_my_pe(&v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(mg_shmem_n_pes(&v));
  ASSERT_EQ(v, 1);

  gu_dev_t d;
  gu_dev_open(&d, 0);
  unsigned char *sym = NULL, *loc = NULL;
  ASSERT_OK(mg_shmem_malloc(BYTES, (void **)&sym));
  ASSERT_OK(mg_shmem_calloc(BYTES / 8, 8, (void **)&loc)); /* symmetric, used as local */
  unsigned char *h = malloc(BYTES), *z = malloc(BYTES);
  ASSERT(h != NULL && z != NULL);
  gu_get(&d, z, loc, BYTES);
  gu_sync(&d, GU_TIMEOUT_S, "calloc read back");
  for (size_t i = 0; i < BYTES; i++) ASSERT_EQ(z[i], 0);

  void *dev = gu_alloc(&d, BYTES); /* an ordinary device buffer as the local side */
  fill(h, BYTES, 1);
  gu_put(&d, dev, h, BYTES);
  gu_sync(&d, GU_TIMEOUT_S, "fill");
  ASSERT_OK(mg_shmem_put(sym, dev, BYTES, 0));
  ASSERT_OK(mg_shmem_quiet());
  ASSERT_OK(mg_shmem_barrier_all());
  ASSERT_OK(mg_shmem_get(loc, sym, BYTES, 0));
  gu_get(&d, z, loc, BYTES);
  gu_sync(&d, GU_TIMEOUT_S, "read back");
  expect(z, BYTES, 1, "blocking put then get");

  fill(h, BYTES, 2);
  gu_put(&d, dev, h, BYTES);
  ASSERT_OK(mg_shmem_put_on_stream(sym + 4096, dev, BYTES - 4096, 0, d.stream));
  ASSERT_OK(mg_shmem_barrier_all_on_stream(d.stream));
  ASSERT_OK(mg_shmem_get_on_stream(loc, sym + 4096, BYTES - 4096, 0, d.stream));
  gu_get(&d, z, loc, BYTES - 4096);
  gu_sync(&d, GU_TIMEOUT_S, "stream put/get");
  expect(z, BYTES - 4096, 2, "put/get on a stream");
  ASSERT_OK(mg_shmem_fence());
  ASSERT_OK(mg_shmem_sync_all());

  /* Checks that need the driver: a host buffer is not this PE's device memory. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(sym, h, 64, 0));
  printf("host buffer refused: %s\n", mg_last_error());
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_get(dev, sym + BYTES - 8, 64, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(dev, dev, 64, 0)); /* dst not symmetric */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(sym, dev, 64, 1));

  mg_shmem_team_t t;
  ASSERT_OK(mg_shmem_team_split_strided(MG_SHMEM_TEAM_WORLD, 0, 1, 1, &t));
  ASSERT_NE(t, MG_SHMEM_TEAM_NONE);
  ASSERT_OK(mg_shmem_team_my_pe(t, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(mg_shmem_team_translate_pe(t, 0, MG_SHMEM_TEAM_NODE, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(mg_shmem_team_n_pes(MG_SHMEM_TEAM_SHARED, &v));
  ASSERT_EQ(v, 1);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_team_destroy(MG_SHMEM_TEAM_WORLD));
  ASSERT_OK(mg_shmem_team_destroy(t));

  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_finalize());
  printf("finalize refused: %s\n", mg_last_error());
  ASSERT_OK(mg_shmem_free(loc));
  ASSERT_OK(mg_shmem_free(sym));
  gu_free(&d, dev);
  gu_dev_close(&d);
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_comm_destroy(comm));
  free(h);
  free(z);
  printf("gpu shmem one PE: ok\n");
}

static void two_rank(void) {
  int ndev = 0;
  if (mg_device_count(&ndev) != MG_OK || ndev < 1) SKIP("no GPU: %s", mg_last_error());
  need_nvshmem();
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 120;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_env(&cfg, &comm));
  int r = -1, n = 0;
  ASSERT_OK(mg_comm_rank(comm, &r));
  ASSERT_OK(mg_comm_size(comm, &n));
  int device = r % ndev;
  double t0 = gu_now();
  ASSERT_OK(mg_shmem_init_comm(comm, device));
  printf("rank %d: PE on GPU %d, init %.3f s\n", r, device, gu_now() - t0);
  int v;
  ASSERT_OK(mg_shmem_my_pe(&v));
  ASSERT_EQ(v, r);
  ASSERT_OK(mg_shmem_n_pes(&v));
  ASSERT_EQ(v, n);

  gu_dev_t d;
  gu_dev_open(&d, device);
  unsigned char *sym = NULL, *loc = NULL;
  ASSERT_OK(mg_shmem_malloc(BYTES, (void **)&sym));
  ASSERT_OK(mg_shmem_malloc(BYTES, (void **)&loc));
  unsigned char *h = malloc(BYTES), *z = malloc(BYTES);
  ASSERT(h != NULL && z != NULL);
  int right = (r + 1) % n, left = (r + n - 1) % n;
  fill(h, BYTES, r);
  gu_put(&d, loc, h, BYTES);
  gu_sync(&d, GU_TIMEOUT_S, "fill");
  ASSERT_OK(mg_shmem_put(sym, loc, BYTES, right)); /* to the right neighbour's copy */
  ASSERT_OK(mg_shmem_barrier_all());
  gu_get(&d, z, sym, BYTES);
  gu_sync(&d, GU_TIMEOUT_S, "read back");
  expect(z, BYTES, left, "blocking put from the left neighbour");
  ASSERT_OK(mg_shmem_get(loc, sym, BYTES, right)); /* right's copy holds my data */
  gu_get(&d, z, loc, BYTES);
  gu_sync(&d, GU_TIMEOUT_S, "get");
  expect(z, BYTES, r, "blocking get from the right neighbour");
  ASSERT_OK(mg_shmem_barrier_all());

  fill(h, BYTES, 100 + r);
  gu_put(&d, loc, h, BYTES);
  ASSERT_OK(mg_shmem_put_on_stream(sym, loc, BYTES, left, d.stream));
  ASSERT_OK(mg_shmem_barrier_all_on_stream(d.stream));
  gu_get(&d, z, sym, BYTES);
  gu_sync(&d, GU_TIMEOUT_S, "stream put");
  expect(z, BYTES, 100 + right, "put on a stream from the right neighbour");
  ASSERT_OK(mg_shmem_barrier_all());

  /* Different sizes: refused on every PE, naming them; the heap stays usable. */
  void *p = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_malloc(4096 * (size_t)(r + 1), &p));
  if (r == 0) printf("mismatch refused: %s\n", mg_last_error());
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_put(sym, loc, 16, n));

  mg_shmem_team_t t = MG_SHMEM_TEAM_NONE;
  if (n > ndev) {
    /* PEs sharing a GPU: NVSHMEM's limited MPG mode, where a split would exit the process. */
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED,
                  mg_shmem_team_split_strided(MG_SHMEM_TEAM_WORLD, 1, 1, n - 1, &t));
    if (r == 0) printf("split refused: %s\n", mg_last_error());
  } else {
    ASSERT_OK(mg_shmem_team_split_strided(MG_SHMEM_TEAM_WORLD, 1, 1, n - 1, &t));
    if (r == 0) {
      ASSERT_EQ(t, MG_SHMEM_TEAM_NONE);
    } else {
      ASSERT_OK(mg_shmem_team_my_pe(t, &v));
      ASSERT_EQ(v, r - 1);
      ASSERT_OK(mg_shmem_team_translate_pe(t, 0, MG_SHMEM_TEAM_WORLD, &v));
      ASSERT_EQ(v, 1);
      ASSERT_OK(mg_shmem_team_destroy(t));
    }
  }
  ASSERT_OK(mg_shmem_team_translate_pe(MG_SHMEM_TEAM_WORLD, n - 1, MG_SHMEM_TEAM_NODE, &v));
  ASSERT_EQ(v, n - 1);
  ASSERT_OK(mg_shmem_team_n_pes(MG_SHMEM_TEAM_NODE, &v));
  ASSERT_EQ(v, n);
  ASSERT_OK(mg_shmem_free(loc));
  ASSERT_OK(mg_shmem_free(sym));
  gu_dev_close(&d);
  ASSERT_OK(mg_shmem_finalize());
  ASSERT_OK(mg_comm_destroy(comm));
  free(h);
  free(z);
  printf("rank %d: gpu shmem %d PEs: ok\n", r, n);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "one";
  if (strcmp(mode, "one") == 0) {
    one();
  } else if (strcmp(mode, "two") == 0) {
    if (getenv("MGCOMM_RANK") != NULL) {
      two_rank();
      return 0;
    }
    const char *tool = getenv("MGCOMM");
    if (tool == NULL) SKIP("MGCOMM (the mgcomm tool) is not set");
    gu_probe(1);
    const char *np = argc > 2 ? argv[2] : "2";
    execl(tool, tool, "launch", "-n", np, "--", argv[0], "two", (char *)NULL);
    FAIL("exec %s failed", tool);
  } else {
    FAIL("unknown mode %s", mode);
  }
  return 0;
}
