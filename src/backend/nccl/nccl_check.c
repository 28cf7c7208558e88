/*
 * nccl_check.c -- what only the NCCL backend can check before an operation is enqueued (the core
 * has checked everything else; the rules are mgcomm.h's "Operations"): the dtype and op against
 * the loaded NCCL and the device, then each buffer's memory space, device and extent, and the
 * stream's context. A buffer inside memory of mg_mem_alloc or a live registration of the
 * communicator is checked against mgcomm's own record of it (core/mem.c); any other takes one
 * cuPointerGetAttributes. A stream other than the special handles takes one cuStreamGetCtx when
 * the communicator first meets it: the communicator remembers the last stream found in its
 * context, and the check runs again only for another one. Asked at every call, that query cost
 * ~0.4 us of driver time per call where four threads launch on four GPUs at once (0.03 us on one
 * thread; bench/results/2026-11-28-nccl-paired-4xH200.md), and most programs post every call of a
 * communicator on one stream. MGCOMM_CHECK_POINTERS=0 turns the buffer and stream checks off
 * (bench/nccl_perf.c measures what they cost).
 */
#include <stdint.h>
#include <stdio.h>

#include "backend/nccl/nccl.h"

static inline int mg__nccl_is_fp8(mg_dtype_t dtype) {
  return dtype == MG_FLOAT8_E4M3 || dtype == MG_FLOAT8_E5M2;
}

/* 1 when the loaded NCCL or the device may lack the type or the op (fp8, PreMulSum, average):
 * the only cases mg__nccl_check_types looks at. */
static inline int mg__nccl_types_vary(mg_dtype_t dtype, const mg__redop_t *redop, int reduction) {
  return mg__nccl_is_fp8(dtype) || (reduction && (redop->premul || redop->op == MG_AVG));
}

mg_status_t mg__nccl_check_types(mg_dtype_t dtype, const mg__redop_t *redop, int reduction,
                                 int cc_major, int cc_minor, const char *fn) {
  if (!mg__nccl_types_vary(dtype, redop, reduction)) return MG_OK;
  if (mg__nccl_is_fp8(dtype)) {
    MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_FP8, fn));
    /* NCCL builds its fp8 reduction kernels for sm_90 and newer only. */
    if (reduction && cc_major < 9)
      return mg__error(MG_ERR_NOT_SUPPORTED,
                       "%s: NCCL reduces %s on GPUs of compute capability 9.0 or newer only; "
                       "this device is %d.%d",
                       fn, mg_dtype_name(dtype), cc_major, cc_minor);
  }
  if (reduction) {
    if (redop->premul)
      MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_PREMUL_SUM, fn));
    else if (redop->op == MG_AVG)
      MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_AVG, fn));
  }
  return MG_OK;
}

/* 1 when [a, a + na) lies inside [b, b + nb). */
static int mg__within(const void *a, size_t na, const void *b, size_t nb) {
  const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x >= y && x - y <= nb && na <= nb - (x - y);
}

/* NCCL runs PreMulSum on a communicator of one rank with a kernel of its own
 * (src/device/onerank.cu) that is wrong twice over: its fp8 cases are compiled only where
 * __CUDA_ARCH__ >= 900, which host code never defines (ncclInvalidArgument), and it leaves the
 * tail of a buffer that takes several blocks unwritten (2.28.3 on an H100: the last 17 of 70001
 * float32, the last of 70001 int8; the code is unchanged in 2.30.7). So premul_sum is refused
 * on one rank before anything is enqueued; an average over one rank is a sum (nccl_coll.c). */
static int mg__nccl_premul_one_rank(const mg__op_t *op) {
  return op->comm->nranks == 1 && mg__opkind_is_reduction(op->kind) && op->redop.premul;
}

/* What mg__nccl_check_op checks where there is anything to check. */
static __attribute__((noinline)) mg_status_t mg__nccl_check_all(const mg__op_t *op,
                                                                const char *fn) {
  const mg__ncomm_t *nx = mg__ncomm(op->comm);
  const int dev = op->comm->device;
  MG_CHECK(mg__nccl_check_types(op->dtype, &op->redop, mg__opkind_is_reduction(op->kind),
                                nx->cc_major, nx->cc_minor, fn));
  if (mg__nccl_premul_one_rank(op))
    return mg__error(MG_ERR_NOT_SUPPORTED,
                     "%s: NCCL's premul_sum on a communicator of one rank is wrong (its one-rank "
                     "kernel leaves the tail of larger buffers unwritten and has no fp8 case); "
                     "scale the buffer yourself, or use two ranks", fn);
  if (!nx->check_ptrs) return MG_OK;
  /* In place, send lies inside recv: recv's check covers both with one driver call. */
  if (op->send_bytes > 0 &&
      !(op->recv_bytes > 0 && mg__within(op->send, op->send_bytes, op->recv, op->recv_bytes)) &&
      !mg__mem_known(op->comm, op->send, op->send_bytes))
    MG_CHECK(mg__device_check_ptr(op->send, op->send_bytes, dev, fn, "send"));
  if (op->recv_bytes > 0 && !mg__mem_known(op->comm, op->recv, op->recv_bytes))
    MG_CHECK(mg__device_check_ptr(op->recv, op->recv_bytes, dev, fn, "recv"));
  return mg__nccl_check_stream(op->comm, op->stream, fn);
}

mg_status_t mg__nccl_check_stream(mg_comm_t *comm, mg_stream_t stream, const char *who) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  /* A stream once found in ctx stays there while it lives. Not caught: a stream destroyed after
   * its check whose handle CUDA gives to a new stream of another context; CUDA's answer to the
   * launch on it is then what the caller gets. */
  const uintptr_t s = (uintptr_t)stream;
  if (s == atomic_load_explicit(&nx->stream_ok, memory_order_relaxed)) return MG_OK;
  char rank[48]; /* made only here: formatting costs more than the remembered case */
  if (who == NULL) {
    snprintf(rank, sizeof rank, "rank %d of %d", comm->rank, comm->nranks);
    who = rank;
  }
  MG_CHECK(mg__device_check_stream((mg__CUstream)stream, nx->ctx, comm->device, who));
  atomic_store_explicit(&nx->stream_ok, s, memory_order_relaxed);
  return MG_OK;
}

mg_status_t mg__nccl_check_op(const mg__op_t *op, const char *fn) {
  /* MGCOMM_ALGO=mgcomm: an all_reduce our kernels cannot run is refused before it is posted. */
  int algo;
  if (op->kind == MG_OPK_ALL_REDUCE) MG_CHECK(mg__nccl_kern_pick(op, &algo, fn));
  /* Pointer checks off, and a type and op that every NCCL has: nothing to ask. */
  if (!mg__ncomm(op->comm)->check_ptrs &&
      !mg__nccl_types_vary(op->dtype, &op->redop, mg__opkind_is_reduction(op->kind)))
    return MG_OK;
  return mg__nccl_check_all(op, fn);
}
