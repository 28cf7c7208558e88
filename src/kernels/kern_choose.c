/*
 * kern_choose.c -- which all-reduce runs: NCCL's or one of ours, and which of ours. The sizes
 * come from a table per number of ranks, which the MGCOMM_KERNELS_* variables override;
 * MGCOMM_ALGO forces either side. The choice itself is a pure function, so that every branch and
 * every refusal is tested without a GPU (tests/unit/kern_choose.c), and so that every rank,
 * given the same case, chooses the same algorithm.
 */
#include <stdio.h>
#include <string.h>

#include "base/params.h"
#include "kernels/kernels.h"

const char *mg__kern_algo_name(mg__kern_algo_t a) {
  switch (a) {
    case MG__KERN_NCCL: return "nccl";
    case MG__KERN_ONESHOT: return "one-shot";
    case MG__KERN_TWOSHOT: return "two-shot";
    case MG__KERN_LL: return "ll";
  }
  return "unknown";
}

#define MG__KIB ((size_t)1024)
#define MG__MIB (1024 * MG__KIB)

/* The table. Up to 4 ranks it is set from every algorithm timed against NCCL on 2 and 4 H200s
 * (NVSwitch; bench/results/2026-11-28-allreduce-crossovers-4xH200.md), plain and under CUDA
 * graphs:
 * - push is the fastest under a graph up to 256 KiB on 2 GPUs (3.1-4.8 us against one-shot's
 *   5.0-5.7) and up to 64 KiB on 4 (3.8-5.4 us against 5.4-6.0; one-shot 7.9 against 8.8 at
 *   256 KiB); one-shot from there, to 4 MiB on 2 ranks (19.4 us under a graph against two-shot's
 *   21.5; plain 21.4 against 23.3) and to 256 KiB on 4, where two-shot wins from 512 KiB plain
 *   and at 1 MiB under a graph (15.6 against 16.3). Plain, one thread launching every rank,
 *   the algorithms differ by less than the launches' noise below 1 MiB;
 * - lending never won on real GPUs: one-shot lent was slower than staged at every size on 2
 *   GPUs, and two-shot lent no faster than staged on 4 (31.6 against 31.1 us at 4 MiB under a
 *   graph), the barrier at the end costing what the copy in saves; so ranks stage, and
 *   MGCOMM_KERNELS_INPLACE_BYTES lends;
 * - 128 blocks were no faster than 64 (within 0.5 us either way at 1-4 MiB).
 * Above 4 ranks, not measured across GPUs: vLLM's crossover at 8 ranks (256 KB), push to 16
 * KiB (its bytes to each of 7 peers double), lent from 1 MiB as on one H100 shared by 8 ranks
 * (tests/gpu/results/2026-11-24-kernels2-1xH100.md). The limit, 4 MiB, is the targets' end;
 * NCCL's ring is as fast above it. */
void mg__kern_policy_table(int nranks, mg__kern_policy_t *out) {
  out->mode = MG_ALGO_AUTO;
  out->mode_from_config = 0;
  out->ll_max = nranks <= 2 ? 256 * MG__KIB : nranks <= 4 ? 64 * MG__KIB : 16 * MG__KIB;
  out->inplace_min = nranks <= 4 ? -1 : (int64_t)MG__MIB;
  out->oneshot_max = nranks <= 2 ? 4 * MG__MIB : 256 * MG__KIB;
  out->max_bytes = 4 * MG__MIB;
  out->staging = 4 * MG__MIB;
  out->max_blocks = 64; /* MGCOMM_KERNELS_BLOCKS tries up to 128 */
}

void mg__kern_policy_get(int nranks, mg_algo_t algo, mg__kern_policy_t *out) {
  mg__kern_policy_table(nranks, out);
  out->mode_from_config = algo != MG_ALGO_DEFAULT;
  if (algo == MG_ALGO_DEFAULT) {
    const char *mode = mg__param_str(MG_PARAM_ALGO);
    algo = strcmp(mode, "nccl") == 0     ? MG_ALGO_NCCL
           : strcmp(mode, "mgcomm") == 0 ? MG_ALGO_MGCOMM
                                         : MG_ALGO_AUTO;
  }
  out->mode = algo;
  const int64_t ll = mg__param_int(MG_PARAM_KERNELS_LL_BYTES);
  const int64_t inplace = mg__param_int(MG_PARAM_KERNELS_INPLACE_BYTES);
  const int64_t one = mg__param_int(MG_PARAM_KERNELS_ONESHOT_BYTES);
  const int64_t max = mg__param_int(MG_PARAM_KERNELS_MAX_BYTES);
  const int64_t blocks = mg__param_int(MG_PARAM_KERNELS_BLOCKS);
  out->staging = (size_t)mg__param_int(MG_PARAM_KERNELS_STAGING_BYTES);
  if (ll >= 0) out->ll_max = (size_t)ll;
  if (inplace >= 0) out->inplace_min = inplace;
  if (one >= 0) out->oneshot_max = (size_t)one;
  if (max >= 0) out->max_bytes = (size_t)max;
  if (blocks > 0) out->max_blocks = (int)blocks;
  if (out->max_bytes > out->staging) out->max_bytes = out->staging;
  if (out->ll_max > out->staging) out->ll_max = out->staging;
}

/* Who forced the mode: the variable, or the communicator's config. */
static const char *mg__kern_forced_by(const mg__kern_policy_t *p) {
  if (p->mode == MG_ALGO_NCCL)
    return p->mode_from_config ? "config->all_reduce_algo = MG_ALGO_NCCL" : "MGCOMM_ALGO=nccl";
  return p->mode_from_config ? "config->all_reduce_algo = MG_ALGO_MGCOMM" : "MGCOMM_ALGO=mgcomm";
}

/* Why ours cannot run c at all (whatever the size limit), or NULL. The reason is written into
 * buf only when buf is not NULL (formatting costs more than the rest of the choice, and most
 * calls need no text); otherwise a non-NULL empty string says "cannot". */
static const char *mg__kern_cannot(const mg__kern_policy_t *p, const mg__kern_case_t *c,
                                   char *buf, size_t len) {
  if (c->unavailable != NULL) return c->unavailable;
  if (c->no_peers != NULL && c->nranks >= 1 && c->nranks <= MG_KERN_MAX_RANKS) return c->no_peers;
  if (c->nranks < 1 || c->nranks > MG_KERN_MAX_RANKS) {
    if (buf != NULL)
      snprintf(buf, len, "they serve 1 to %d ranks, not %d", MG_KERN_MAX_RANKS, c->nranks);
  } else if (mg__kern_dtype_index(c->dtype) < 0) {
    if (buf != NULL)
      snprintf(buf, len, "they reduce float32, float16 and bfloat16, not %s",
               mg_dtype_name(c->dtype));
  } else if (c->custom_op || mg__kern_op_index(c->op) < 0) {
    if (buf != NULL)
      snprintf(buf, len, "they reduce with sum, avg, max and min, not %s",
               c->custom_op ? "premul_sum" : mg_op_name(c->op));
  } else if (c->bytes > p->staging) {
    if (buf != NULL)
      snprintf(buf, len, "%zu bytes exceed their staging area of %zu bytes "
               "(MGCOMM_KERNELS_STAGING_BYTES)", c->bytes, p->staging);
  } else {
    return NULL;
  }
  return buf != NULL ? buf : "";
}

mg_status_t mg__kern_choose(const mg__kern_policy_t *p, const mg__kern_case_t *c,
                            mg__kern_algo_t *algo, char *why, size_t len, const char *fn) {
  char buf[160];
  /* Text only where someone reads it: the caller's why, or the refusal of a forced MGCOMM. */
  char *text = (why != NULL && len > 0) || p->mode == MG_ALGO_MGCOMM ? buf : NULL;
  const char *reason = NULL;
  mg__kern_algo_t a = MG__KERN_NCCL;
  if (p->mode == MG_ALGO_NCCL) {
    reason = mg__kern_forced_by(p);
  } else if ((reason = mg__kern_cannot(p, c, text, sizeof buf)) != NULL) {
    if (p->mode == MG_ALGO_MGCOMM)
      return mg__error(MG_ERR_NOT_SUPPORTED,
                       "%s: %s, but mgcomm's all-reduce kernels cannot run this all_reduce "
                       "(%s x %zu bytes, %s, %d ranks): %s", fn, mg__kern_forced_by(p),
                       mg_dtype_name(c->dtype), c->bytes, c->custom_op ? "premul_sum" : mg_op_name(c->op),
                       c->nranks, reason);
  } else if (p->mode == MG_ALGO_AUTO && c->nranks == 1) {
    /* Nothing crosses GPUs: NCCL's one-rank all_reduce is a copy, or nothing in place (0.4 us
     * on an H100), which ours, staging and meeting itself, cannot beat. */
    reason = "one rank: NCCL's one-rank path (a copy, nothing in place)";
  } else if (p->mode == MG_ALGO_AUTO && c->bytes > p->max_bytes) {
    if (text != NULL)
      snprintf(buf, sizeof buf, "%zu bytes are above the kernels' limit of %zu bytes "
               "(MGCOMM_KERNELS_MAX_BYTES)", c->bytes, p->max_bytes);
    reason = text != NULL ? text : "";
  } else {
    a = c->bytes <= p->ll_max        ? MG__KERN_LL
        : c->bytes <= p->oneshot_max ? MG__KERN_ONESHOT
                                     : MG__KERN_TWOSHOT;
  }
  if (why != NULL && len > 0) snprintf(why, len, "%s", reason != NULL ? reason : mg__kern_algo_name(a));
  *algo = a;
  return MG_OK;
}
