/*
 * test_gpu_mem.c -- the memory calls on the NCCL backend (mgcomm.h, "Memory"), on N GPUs of one
 * process (mg_comm_init_all; collective calls run one thread per rank):
 *   - mg_mem_alloc gives memory of the communicator's device (checked with the driver), which
 *     outlives its communicator and is freed once (a second free, a foreign pointer: refused);
 *   - mg_memcpy: host -> device -> device -> host, and a device range that runs past its
 *     allocation is refused;
 *   - local registration (ncclCommRegister) of mg_mem_alloc and cuMemAlloc memory, an
 *     all_reduce through registered buffers, deregistration; host memory is refused;
 *   - symmetric registration (ncclCommWindowRegister, NCCL >= 2.27) of mg_mem_alloc memory on
 *     every rank, an all_reduce at the same offsets, a second overlapping registration refused
 *     (or MG_ERR_NOT_SUPPORTED where NCCL has no symmetric memory for this system: printed);
 *   - PreMulSum with its scalar in mg_mem_alloc memory.
 *   test_gpu_mem N
 */
#include <stdlib.h>

#include "gpu_util.h"

#define MAXR 16
static int nranks;
static mg_comm_t *comm[MAXR];
static gu_dev_t dev[MAXR];
static const size_t BYTES = (size_t)4 << 20;

/* Fills rank r's buffer with r + 1 (float32), all_reduces it over every rank (in place when
 * sb == rb) and checks the sum. op: MG_SUM, or a custom op that multiplies by 2 first. */
static void reduce_check(int r, void *sb, void *rb, size_t count, mg_op_t op, float factor,
                         const char *what) {
  float *h = malloc(count * sizeof *h);
  ASSERT(h != NULL);
  for (size_t i = 0; i < count; i++) h[i] = (float)(r + 1);
  gu_put(&dev[r], sb, h, count * sizeof *h);
  mg_status_t st = mg_all_reduce(sb, rb, count, MG_FLOAT32, op, comm[r], (mg_stream_t)dev[r].stream);
  if (st != MG_OK) FAIL("rank %d: %s: %s: %s", r, what, mg_status_name(st), mg_last_error());
  gu_sync(&dev[r], GU_TIMEOUT_S, what);
  gu_get(&dev[r], h, rb, count * sizeof *h);
  gu_sync(&dev[r], GU_TIMEOUT_S, what);
  const float want = factor * (float)(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < count; i++)
    if (h[i] != want) FAIL("rank %d: %s: [%zu] = %g, want %g", r, what, i, h[i], want);
  free(h);
}

static void rank_main(int r, void *arg) {
  (void)arg;
  mg_comm_t *c = comm[r];
  /* mg_mem_alloc: memory of this rank's device. */
  void *a = NULL, *b = NULL;
  ASSERT_OK(mg_mem_alloc(c, BYTES, &a));
  ASSERT_OK(mg_mem_alloc(c, BYTES, &b));
  mg__ptr_attr_t at;
  ASSERT_OK(mg__device_ptr_attr(a, &at));
  ASSERT_EQ(at.memory_type, MG__CU_MEMORYTYPE_DEVICE);
  ASSERT_EQ(at.ordinal, r);
  ASSERT_GE(at.size, BYTES);

  /* mg_memcpy: round trip, and a device range past its allocation. */
  unsigned char *h = malloc(BYTES), *back = malloc(BYTES);
  ASSERT(h && back);
  for (size_t i = 0; i < BYTES; i++) h[i] = (unsigned char)(i * 7 + (size_t)r);
  ASSERT_OK(mg_memcpy(c, a, h, BYTES));
  ASSERT_OK(mg_memcpy(c, b, a, BYTES));
  ASSERT_OK(mg_memcpy(c, back, b, BYTES));
  ASSERT_EQ(memcmp(h, back, BYTES), 0);
  const size_t room = at.size - ((uintptr_t)a - at.base);
  mg_status_t st = mg_memcpy(c, (char *)a + room - 16, h, 32);
  ASSERT_EQ(st, MG_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(mg_last_error(), "mg_memcpy: dst");
  ASSERT_CONTAINS(mg_last_error(), "extends 16 bytes past");
  if (r == 0) printf("  refused: %s\n", mg_last_error());

  /* Local registration. */
  mg_reg_t *ra = NULL, *rb = NULL, *rh = NULL;
  void *plain = gu_alloc(&dev[r], BYTES);
  ASSERT_OK(mg_comm_register(c, a, BYTES, MG_REGISTER_LOCAL, &ra));
  ASSERT_OK(mg_comm_register(c, plain, BYTES, MG_REGISTER_LOCAL, &rb));
  st = mg_comm_register(c, h, BYTES, MG_REGISTER_LOCAL, &rh);
  ASSERT_EQ(st, MG_ERR_INVALID_ARGUMENT);
  ASSERT_CONTAINS(mg_last_error(), "mg_comm_register: buf");
  ASSERT_CONTAINS(mg_last_error(), "is host memory");
  ASSERT(rh == NULL);
  reduce_check(r, a, plain, BYTES / 4, MG_SUM, 1, "all_reduce through locally registered buffers");
  ASSERT_OK(mg_comm_deregister(c, ra));
  ASSERT_OK(mg_comm_deregister(c, rb));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_deregister(c, ra));

  /* Symmetric registration: collective, every rank in this order. */
  mg_reg_t *sa = NULL, *sb = NULL, *sc = NULL;
  st = mg_comm_register(c, a, BYTES, MG_REGISTER_SYMMETRIC, &sa);
  if (st == MG_ERR_NOT_SUPPORTED) {
    if (r == 0) printf("  symmetric registration: not here: %s\n", mg_last_error());
  } else {
    if (st != MG_OK) FAIL("rank %d: symmetric registration: %s: %s", r, mg_status_name(st), mg_last_error());
    ASSERT_OK(mg_comm_register(c, b, BYTES, MG_REGISTER_SYMMETRIC, &sb));
    st = mg_comm_register(c, (char *)a + 4096, 4096, MG_REGISTER_SYMMETRIC, &sc);
    ASSERT_EQ(st, MG_ERR_INVALID_ARGUMENT);
    ASSERT_CONTAINS(mg_last_error(), "overlaps the symmetric registration");
    /* The same offsets on every rank: NCCL's symmetric kernels may take it. */
    reduce_check(r, (char *)a + 4096, (char *)b + 4096, 1024, MG_SUM, 1,
                 "all_reduce through symmetric windows (small)");
    reduce_check(r, a, b, BYTES / 4, MG_SUM, 1, "all_reduce through symmetric windows (4 MiB)");
    ASSERT_OK(mg_comm_deregister(c, sa));
    ASSERT_OK(mg_comm_deregister(c, sb));
    if (r == 0) printf("  symmetric registration: registered, used, ended\n");
  }

  /* PreMulSum with its scalar in mg_mem_alloc memory. */
  void *scalar = NULL;
  ASSERT_OK(mg_mem_alloc(c, sizeof(float), &scalar));
  const float two = 2;
  ASSERT_OK(mg_memcpy(c, scalar, &two, sizeof two));
  mg_op_t op;
  ASSERT_OK(mg_op_create_premul_sum(c, scalar, MG_FLOAT32, MG_SCALAR_DEVICE, &op));
  reduce_check(r, a, a, 4096, op, 2, "PreMulSum with a device scalar, in place");
  ASSERT_OK(mg_op_destroy(c, op));
  ASSERT_OK(mg_mem_free(scalar));

  gu_free(&dev[r], plain);
  free(h), free(back);
  ASSERT_OK(mg_mem_free(b));
  /* a outlives the communicator (freed in main). */
  ASSERT_OK(mg_comm_finalize(c));
  ASSERT_OK(mg_comm_destroy(c));
  ASSERT_OK(mg_mem_free(a));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_mem_free(a));
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: %s NRANKS", argv[0]);
  nranks = atoi(argv[1]);
  ASSERT(nranks >= 1 && nranks <= MAXR);
  gu_need(nranks);
  const double t0 = gu_now();
  for (int r = 0; r < nranks; r++) gu_dev_open(&dev[r], r);
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  cfg.timeout_s = GU_TIMEOUT_S;
  ASSERT_OK(mg_comm_init_all(&cfg, nranks, NULL, comm));
  /* Huge requests fail with a status. */
  void *p = NULL;
  mg_status_t st = mg_mem_alloc(comm[0], (size_t)1 << 50, &p);
  ASSERT(st == MG_ERR_BACKEND || st == MG_ERR_OUT_OF_MEMORY);
  ASSERT(p == NULL);
  printf("  1 PiB: %s: %s\n", mg_status_name(st), mg_last_error());
  void *foreign = gu_alloc(&dev[0], 64);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_mem_free(foreign));
  gu_free(&dev[0], foreign);
  gu_run_ranks(nranks, rank_main, NULL);
  for (int r = 0; r < nranks; r++) gu_dev_close(&dev[r]);
  printf("gpu mem, %d ranks: ok (%.1f s)\n", nranks, gu_now() - t0);
  return 0;
}
