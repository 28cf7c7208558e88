/*
 * kern_launch.c -- the launch of one all-reduce: its argument (kern_abi.h) by value, and a grid
 * that depends only on the message, the algorithm and the context's settings, so that every
 * rank launches the same blocks (block b of every rank meets at the same flags).
 */
#include "kernels/kernels.h"

/* Blocks for `packs` 16-byte packs (push: 8-byte lines) handled by each rank's grid: one per
 * thread, at most max_blocks blocks. */
static unsigned mg__kern_blocks(size_t packs, int max_blocks) {
  size_t b = (packs + MG_KERN_THREADS - 1) / MG_KERN_THREADS;
  if (b < 1) b = 1;
  return (unsigned)(b < (size_t)max_blocks ? b : (size_t)max_blocks);
}

/* Whether the peers may read send and recv in place for algo (where they can reach them): the
 * pull algorithms read whole 16-byte packs of them; one-shot writes recv while the peers still
 * read send, so the two must not overlap (two-shot writes only the segment no peer reads
 * then). */
static int mg__kern_direct(const void *send, const void *recv, size_t bytes, mg__kern_algo_t algo) {
  const uintptr_t s = (uintptr_t)send, r = (uintptr_t)recv;
  if (algo == MG__KERN_LL || s % 16 != 0 || r % 16 != 0) return 0;
  return algo == MG__KERN_TWOSHOT || s + bytes <= r || r + bytes <= s;
}

mg_status_t mg__kern_all_reduce(mg__kern_ctx_t *ctx, const void *send, void *recv, size_t count,
                                mg_dtype_t dtype, mg_op_t op, mg__kern_algo_t algo,
                                mg__kern_lend_t lend, mg__CUstream stream) {
  static const char fn[] = "mgcomm's all-reduce kernel";
  const int t = mg__kern_dtype_index(dtype), o = mg__kern_op_index(op);
  if (ctx == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: NULL context", fn);
  if (t < 0 || o < 0 ||
      (algo != MG__KERN_ONESHOT && algo != MG__KERN_TWOSHOT && algo != MG__KERN_LL))
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: no kernel for %s with op %d (algorithm %s): float32, float16, "
                     "bfloat16 with sum, avg, max, min only", fn, mg_dtype_name(dtype), (int)op,
                     mg__kern_algo_name(algo));
  const size_t bytes = count * mg_dtype_size(dtype), packs = (bytes + 15) / 16;
  if (count == 0) return MG_OK;
  mg_kern_args_t a;
  const mg__kern_module_t *mod;
  int max_blocks;
  MG_CHECK(mg__kern_ctx_args(ctx, &a, &mod, &max_blocks));
  if (algo == MG__KERN_LL && bytes > mg__kern_ctx_ll_bytes(ctx))
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %zu bytes do not fit the push area, made for %zu bytes "
                     "(MGCOMM_KERNELS_LL_BYTES)", fn, bytes, mg__kern_ctx_ll_bytes(ctx));
  if (packs * 16 > a.half_bytes)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %zu bytes do not fit the staging area of %zu bytes "
                     "(MGCOMM_KERNELS_STAGING_BYTES)", fn, bytes, (size_t)a.half_bytes);
  a.send = send;
  a.recv = recv;
  a.count = count;
  a.exchange = lend != MG__KERN_LEND_NONE && algo != MG__KERN_LL;
  if (a.exchange && mg__kern_direct(send, recv, bytes, algo)) {
    if (mg__kern_reg_lend(ctx, send, recv, bytes, a.pub)) {
      a.direct = 1; /* registered: every rank mapped them */
    } else if (lend == MG__KERN_LEND_YES) {
      a.direct = 1; /* the caller vouched for the addresses */
      a.pub[0] = (unsigned long long)(uintptr_t)send;
      a.pub[1] = (unsigned long long)(uintptr_t)recv;
    }
  }
  const size_t per_rank = algo == MG__KERN_TWOSHOT ? (packs + a.nranks - 1) / a.nranks
                          : algo == MG__KERN_LL    ? (bytes + 7) / 8
                                                   : packs;
  void *params[] = {&a};
  MG_CU_CHECK(LaunchKernel, mod->fn[algo - 1][t][o], mg__kern_blocks(per_rank, max_blocks), 1, 1,
              MG_KERN_THREADS, 1, 1, 0, stream, params, NULL);
  return MG_OK;
}
