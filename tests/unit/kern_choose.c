/*
 * kern_choose.c -- the choice between NCCL's all_reduce and mgcomm's own kernels
 * (src/kernels/kern_choose.c), without a GPU: the table, every reason for NCCL, the refusals of
 * MGCOMM_ALGO=mgcomm, the variables, and what a build without nvcc says.
 *
 *   kern_choose table     the table and the choice under it
 *   kern_choose env       run with the MGCOMM_* variables of kern_choose.cmake set
 *   kern_choose built     the kernels are in this build (nvcc was found): unavailable here only
 *                         for want of a driver
 *   kern_choose unbuilt   a build without nvcc (tests/unit/kernels_no_nvcc.sh): not built, and
 *                         every call says so
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "test.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

static mg__kern_case_t kc(int nranks, mg_dtype_t dt, mg_op_t op, size_t bytes) {
  mg__kern_case_t c = {nranks, NULL, NULL, dt, op, 0, bytes};
  return c;
}

/* The algorithm chosen for c under p (MG_OK expected), with the reason in why. */
static mg__kern_algo_t pick(const mg__kern_policy_t *p, mg__kern_case_t c, char *why) {
  mg__kern_algo_t a = (mg__kern_algo_t)-1;
  ASSERT_OK(mg__kern_choose(p, &c, &a, why, 200, "test"));
  return a;
}

static void table(void) {
  mg__kern_policy_t p;
  char why[200];
  static const struct { int n; size_t ll, one; int64_t lend; } rows[] = {
      {1, 256 * KIB, 4 * MIB, -1}, {2, 256 * KIB, 4 * MIB, -1}, {3, 64 * KIB, 256 * KIB, -1},
      {4, 64 * KIB, 256 * KIB, -1}, {8, 16 * KIB, 256 * KIB, (int64_t)MIB}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    mg__kern_policy_table(rows[i].n, &p);
    ASSERT_EQ(p.mode, MG_ALGO_AUTO);
    ASSERT_EQ(p.oneshot_max, rows[i].one);
    ASSERT_EQ(p.ll_max, rows[i].ll);
    ASSERT_EQ(p.inplace_min, rows[i].lend);
    ASSERT_EQ(p.max_bytes, 4 * MIB);
    ASSERT(p.max_bytes <= p.staging);
    ASSERT(p.max_blocks >= 1 && p.max_blocks <= MG_KERN_MAX_BLOCKS);
    if (rows[i].n == 1) { /* nothing crosses GPUs: NCCL's copy, or nothing in place */
      ASSERT_EQ(pick(&p, kc(1, MG_FLOAT32, MG_SUM, 8), why), MG__KERN_NCCL);
      ASSERT_CONTAINS(why, "one rank");
      p.mode = MG_ALGO_MGCOMM; /* forced, ours still serve it */
      ASSERT_EQ(pick(&p, kc(1, MG_FLOAT32, MG_SUM, 8), why), MG__KERN_LL);
      continue;
    }
    /* The crossovers: push up to the first, one-shot up to the second, two-shot above, NCCL
     * above the limit. */
    ASSERT_EQ(pick(&p, kc(rows[i].n, MG_FLOAT32, MG_SUM, 8), why), MG__KERN_LL);
    ASSERT_STR_EQ(why, "ll");
    ASSERT_EQ(pick(&p, kc(rows[i].n, MG_FLOAT16, MG_MIN, rows[i].ll), why), MG__KERN_LL);
    ASSERT_EQ(pick(&p, kc(rows[i].n, MG_FLOAT16, MG_MIN, rows[i].ll + 2), why), MG__KERN_ONESHOT);
    ASSERT_EQ(pick(&p, kc(rows[i].n, MG_BFLOAT16, MG_AVG, rows[i].one), why), MG__KERN_ONESHOT);
    ASSERT_STR_EQ(why, "one-shot");
    /* Two-shot above one-shot's end, up to the limit (2 ranks: one-shot runs to the limit). */
    const mg__kern_algo_t top = rows[i].one < 4 * MIB ? MG__KERN_TWOSHOT : MG__KERN_ONESHOT;
    if (top == MG__KERN_TWOSHOT)
      ASSERT_EQ(pick(&p, kc(rows[i].n, MG_FLOAT16, MG_MAX, rows[i].one + 2), why), MG__KERN_TWOSHOT);
    ASSERT_EQ(pick(&p, kc(rows[i].n, MG_FLOAT32, MG_MIN, 4 * MIB), why), top);
    ASSERT_EQ(pick(&p, kc(rows[i].n, MG_FLOAT32, MG_SUM, 4 * MIB + 4), why), MG__KERN_NCCL);
    ASSERT_CONTAINS(why, "4194308 bytes");
    p.staging = 8 * MIB; /* a limit below the staging size is the reason then */
    ASSERT_EQ(pick(&p, kc(rows[i].n, MG_FLOAT32, MG_SUM, 4 * MIB + 4), why), MG__KERN_NCCL);
    ASSERT_CONTAINS(why, "MGCOMM_KERNELS_MAX_BYTES");
  }
  mg__kern_policy_table(4, &p);
  /* Every reason for NCCL, in auto mode. */
  ASSERT_EQ(pick(&p, kc(4, MG_INT32, MG_SUM, 64), why), MG__KERN_NCCL);
  ASSERT_CONTAINS(why, "not int32");
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT64, MG_SUM, 64), why), MG__KERN_NCCL);
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_PROD, 64), why), MG__KERN_NCCL);
  ASSERT_CONTAINS(why, "not prod");
  mg__kern_case_t c = kc(4, MG_FLOAT32, MG_SUM, 64);
  c.custom_op = 1;
  ASSERT_EQ(pick(&p, c, why), MG__KERN_NCCL);
  ASSERT_CONTAINS(why, "premul_sum");
  ASSERT_EQ(pick(&p, kc(9, MG_FLOAT32, MG_SUM, 64), why), MG__KERN_NCCL);
  ASSERT_CONTAINS(why, "1 to 8 ranks");
  c = kc(4, MG_FLOAT32, MG_SUM, 64);
  c.no_peers = "rank 1 (GPU a) cannot access rank 2's GPU b";
  ASSERT_EQ(pick(&p, c, why), MG__KERN_NCCL);
  ASSERT_STR_EQ(why, c.no_peers);
  c = kc(4, MG_FLOAT32, MG_SUM, 64);
  c.unavailable = "not in this build";
  ASSERT_EQ(pick(&p, c, why), MG__KERN_NCCL);
  ASSERT_STR_EQ(why, "not in this build");
  /* Without a why (the NCCL backend's every call) the same choices, with no text made. */
  static const mg__kern_case_t quiet[] = {{4, NULL, NULL, MG_INT32, MG_SUM, 0, 64},
                                          {9, NULL, NULL, MG_FLOAT32, MG_SUM, 0, 64},
                                          {4, NULL, NULL, MG_FLOAT32, MG_SUM, 0, 5 * MIB},
                                          {4, NULL, NULL, MG_FLOAT32, MG_SUM, 0, 64},
                                          {4, NULL, NULL, MG_FLOAT32, MG_SUM, 0, 1 * MIB}};
  static const mg__kern_algo_t quiet_want[] = {MG__KERN_NCCL, MG__KERN_NCCL, MG__KERN_NCCL,
                                               MG__KERN_LL, MG__KERN_TWOSHOT};
  for (int i = 0; i < 5; i++) {
    mg__kern_algo_t q = (mg__kern_algo_t)-1;
    ASSERT_OK(mg__kern_choose(&p, &quiet[i], &q, NULL, 0, "test"));
    ASSERT_EQ(q, quiet_want[i]);
  }
  /* MGCOMM_ALGO=nccl: never ours. */
  p.mode = MG_ALGO_NCCL;
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 8), why), MG__KERN_NCCL);
  ASSERT_STR_EQ(why, "MGCOMM_ALGO=nccl");
  /* MGCOMM_ALGO=mgcomm: ours above the limit (up to the staging size); what they cannot run is
   * refused, never given to NCCL. */
  p.mode = MG_ALGO_MGCOMM;
  p.max_bytes = 1 * MIB;
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 2 * MIB), why), MG__KERN_TWOSHOT);
  mg__kern_algo_t a = MG__KERN_ONESHOT;
  mg__kern_case_t bad = kc(4, MG_INT32, MG_SUM, 64);
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__kern_choose(&p, &bad, &a, why, sizeof why, "mg_all_reduce"));
  ASSERT_CONTAINS(mg_last_error(), "mg_all_reduce: MGCOMM_ALGO=mgcomm");
  ASSERT_CONTAINS(mg_last_error(), "not int32");
  ASSERT_EQ(a, MG__KERN_ONESHOT); /* outputs written only on success */
  bad = kc(4, MG_FLOAT32, MG_SUM, p.staging + 4);
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__kern_choose(&p, &bad, &a, NULL, 0, "f"));
  ASSERT_CONTAINS(mg_last_error(), "MGCOMM_KERNELS_STAGING_BYTES");
  bad = kc(4, MG_FLOAT32, MG_SUM, 64);
  bad.no_peers = "no peer access";
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__kern_choose(&p, &bad, &a, NULL, 0, "f"));
  ASSERT_CONTAINS(mg_last_error(), "no peer access");
  ASSERT_STR_EQ(mg__kern_algo_name(MG__KERN_TWOSHOT), "two-shot");
  ASSERT_STR_EQ(mg__kern_algo_name(MG__KERN_LL), "ll");
  printf("table: every branch of the choice as documented\n");
}

/* kern_choose.cmake sets MGCOMM_ALGO=mgcomm, MGCOMM_KERNELS_ONESHOT_BYTES=1000,
 * MGCOMM_KERNELS_MAX_BYTES=9000000, MGCOMM_KERNELS_STAGING_BYTES=65536, MGCOMM_KERNELS_BLOCKS=4,
 * MGCOMM_KERNELS_LL_BYTES=100, MGCOMM_KERNELS_INPLACE_BYTES=0. */
static void env(void) {
  mg__kern_policy_t p;
  mg__kern_policy_get(4, MG_ALGO_DEFAULT, &p);
  ASSERT_EQ(p.mode, MG_ALGO_MGCOMM);
  ASSERT_EQ(p.oneshot_max, 1000);
  ASSERT_EQ(p.staging, 65536);
  ASSERT_EQ(p.max_bytes, 65536); /* cut to the staging size */
  ASSERT_EQ(p.max_blocks, 4);
  ASSERT_EQ(p.ll_max, 100);
  ASSERT_EQ(p.inplace_min, 0);
  char why[200];
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 100), why), MG__KERN_LL);
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 104), why), MG__KERN_ONESHOT);
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 1000), why), MG__KERN_ONESHOT);
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 1004), why), MG__KERN_TWOSHOT);
  printf("env: the variables override the table\n");

  /* A communicator's config->all_reduce_algo overrides MGCOMM_ALGO (not the sizes), and the
   * choice names it. */
  mg__kern_policy_get(4, MG_ALGO_NCCL, &p);
  ASSERT_EQ(p.mode, MG_ALGO_NCCL);
  ASSERT_EQ(p.ll_max, 100);
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 100), why), MG__KERN_NCCL);
  ASSERT_STR_EQ(why, "config->all_reduce_algo = MG_ALGO_NCCL");
  mg__kern_policy_get(4, MG_ALGO_AUTO, &p);
  ASSERT_EQ(p.mode, MG_ALGO_AUTO);
  ASSERT_EQ(pick(&p, kc(4, MG_FLOAT32, MG_SUM, 1004), why), MG__KERN_TWOSHOT);
  ASSERT_EQ(pick(&p, kc(1, MG_FLOAT32, MG_SUM, 1004), why), MG__KERN_NCCL); /* auto: one rank */
  mg__kern_policy_get(4, MG_ALGO_MGCOMM, &p);
  ASSERT_EQ(p.mode, MG_ALGO_MGCOMM);
  mg__kern_algo_t a;
  const mg__kern_case_t bad = kc(4, MG_INT32, MG_SUM, 64);
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__kern_choose(&p, &bad, &a, NULL, 0, "mg_all_reduce"));
  ASSERT_CONTAINS(mg_last_error(), "config->all_reduce_algo = MG_ALGO_MGCOMM, but");
  mg__kern_policy_get(4, MG_ALGO_DEFAULT, &p);
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__kern_choose(&p, &bad, &a, NULL, 0, "mg_all_reduce"));
  ASSERT_CONTAINS(mg_last_error(), "MGCOMM_ALGO=mgcomm, but");
  printf("env: a config's all_reduce_algo overrides MGCOMM_ALGO, and is named\n");
}

static void built(int want) {
  ASSERT_EQ(mg__kern_built(), want);
  const mg_status_t st = mg__kern_available("test");
  if (!want) {
    ASSERT_EQ(st, MG_ERR_NOT_SUPPORTED);
    ASSERT_CONTAINS(mg_last_error(), "nvcc was not found");
    mg__kern_ctx_t *ctx = NULL;
    mg__kern_peer_t rec;
    ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg__kern_ctx_create(0, 2, 4096, 1024, 4, 1.0, &ctx, &rec));
    ASSERT(ctx == NULL);
  } else if (!mg__loaded(MG_LIB_CUDA)) {
    ASSERT_EQ(st, MG_ERR_BACKEND_UNAVAILABLE); /* built in; no driver on this machine */
  }
  printf("%s: mg__kern_available says %s: %s\n", want ? "built" : "unbuilt", mg_status_name(st),
         st == MG_OK ? "" : mg_last_error());
}

/* The table per number of ranks, one line each: ranks ll_max oneshot_max inplace_min (-1:
 * never), for bench/allreduce_report.py's copy to be compared with (kern_table_report.py). */
static void print_table(void) {
  for (int n = 2; n <= MG_KERN_MAX_RANKS; n++) {
    mg__kern_policy_t p;
    mg__kern_policy_table(n, &p);
    printf("%d %zu %zu %lld\n", n, p.ll_max, p.oneshot_max, (long long)p.inplace_min);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "table";
  if (strcmp(mode, "table") == 0) table();
  else if (strcmp(mode, "print") == 0) print_table();
  else if (strcmp(mode, "env") == 0) env();
  else if (strcmp(mode, "built") == 0) built(1);
  else if (strcmp(mode, "unbuilt") == 0) built(0);
  else FAIL("unknown mode %s", mode);
  return 0;
}
