/*
 * rma.c -- one-sided copies (put, get; blocking and on a stream) and the calls that order and
 * complete them (quiet, fence, barrier_all, sync_all). Every argument is checked before NVSHMEM
 * sees it: NVSHMEM itself checks none of them (a bad PE or address is a crash or a silent write
 * into another object).
 */
#include "base/error.h"
#include "shmem/shmem.h"

static mg_status_t mg__rma_check_pe(int pe, const char *fn) {
  if (pe < 0 || pe >= mg__shmem.n_pes)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: PE %d is out of range: there are %d PEs "
                     "(0..%d)", fn, pe, mg__shmem.n_pes, mg__shmem.n_pes - 1);
  return MG_OK;
}

/* put: dst is symmetric, src local; get: src symmetric, dst local. */
static mg_status_t mg__rma(int is_put, void *dst, const void *src, size_t bytes, int pe,
                           int on_stream, void *stream, const char *fn) {
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t st = mg__rma_check_pe(pe, fn);
  if (st == MG_OK)
    st = is_put ? mg__shmem_check_symmetric(dst, bytes, fn, "dst")
                : mg__shmem_check_symmetric(src, bytes, fn, "src");
  if (st == MG_OK)
    st = is_put ? mg__shmem_check_local(src, bytes, fn, "src")
                : mg__shmem_check_local(dst, bytes, fn, "dst");
  if (st == MG_OK && on_stream) st = mg__shmem_check_stream(stream, fn);
  mg__CUcontext saved = NULL;
  if (st == MG_OK && bytes > 0) st = mg__shmem_ctx_enter(&saved);
  if (st == MG_OK && bytes > 0) {
    mg__CUstream s = (mg__CUstream)stream;
    if (is_put && on_stream) mg__nvshmem.putmem_on_stream(dst, src, bytes, pe, s);
    else if (is_put) mg__nvshmem.putmem(dst, src, bytes, pe);
    else if (on_stream) mg__nvshmem.getmem_on_stream(dst, src, bytes, pe, s);
    else mg__nvshmem.getmem(dst, src, bytes, pe);
    mg__shmem_ctx_leave(saved);
  }
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_put(void *dst, const void *src, size_t bytes, int pe) {
  return mg__rma(1, dst, src, bytes, pe, 0, NULL, "mg_shmem_put");
}
mg_status_t mg_shmem_get(void *dst, const void *src, size_t bytes, int pe) {
  return mg__rma(0, dst, src, bytes, pe, 0, NULL, "mg_shmem_get");
}
mg_status_t mg_shmem_put_on_stream(void *dst, const void *src, size_t bytes, int pe,
                                   void *stream) {
  return mg__rma(1, dst, src, bytes, pe, 1, stream, "mg_shmem_put_on_stream");
}
mg_status_t mg_shmem_get_on_stream(void *dst, const void *src, size_t bytes, int pe,
                                   void *stream) {
  return mg__rma(0, dst, src, bytes, pe, 1, stream, "mg_shmem_get_on_stream");
}

typedef enum { MG__SYNC_QUIET, MG__SYNC_FENCE, MG__SYNC_BARRIER, MG__SYNC_BARRIER_STREAM,
               MG__SYNC_SYNC } mg__sync_kind_t;

static mg_status_t mg__sync(mg__sync_kind_t kind, void *stream, const char *fn) {
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t st = kind == MG__SYNC_BARRIER_STREAM ? mg__shmem_check_stream(stream, fn) : MG_OK;
  mg__CUcontext saved = NULL;
  if (st == MG_OK) st = mg__shmem_ctx_enter(&saved);
  if (st == MG_OK) {
    switch (kind) {
    case MG__SYNC_QUIET: mg__nvshmem.quiet(); break;
    case MG__SYNC_FENCE: mg__nvshmem.fence(); break;
    case MG__SYNC_BARRIER: mg__nvshmem.barrier_all(); break;
    case MG__SYNC_BARRIER_STREAM: mg__nvshmem.barrier_all_on_stream((mg__CUstream)stream); break;
    case MG__SYNC_SYNC: mg__nvshmem.sync_all(); break;
    }
    mg__shmem_ctx_leave(saved);
  }
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_quiet(void) { return mg__sync(MG__SYNC_QUIET, NULL, "mg_shmem_quiet"); }
mg_status_t mg_shmem_fence(void) { return mg__sync(MG__SYNC_FENCE, NULL, "mg_shmem_fence"); }
mg_status_t mg_shmem_barrier_all(void) {
  return mg__sync(MG__SYNC_BARRIER, NULL, "mg_shmem_barrier_all");
}
mg_status_t mg_shmem_barrier_all_on_stream(void *stream) {
  return mg__sync(MG__SYNC_BARRIER_STREAM, stream, "mg_shmem_barrier_all_on_stream");
}
mg_status_t mg_shmem_sync_all(void) { return mg__sync(MG__SYNC_SYNC, NULL, "mg_shmem_sync_all"); }
