/*
 * probe.c -- mg_p2p_probe: for every enabled pair, and every GPU with itself, a pattern copied
 * through the path a copy would take, read back and compared, optionally timed. A pair that
 * fails loses its peer access, so that its copies take the driver's staged path.
 *
 * mg__p2p_pair_works reads the verdicts for our kernels' choice.
 *
 * The probe is a diagnostic, so unlike a copy it waits on the host, for each copy's event,
 * polling within MGCOMM_TIMEOUT. It holds the topology's lock throughout: copies made meanwhile
 * wait for the verdicts rather than use a pair being probed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/params.h"
#include "loader/loader.h"
#include "p2p/p2p.h"

#define MG__PROBE_DEFAULT_BYTES ((size_t)1 << 20)
#define MG__PROBE_MAX_BYTES ((size_t)1 << 30)

/* One probe's resources: memory on both devices, host copies of the pattern, two events. */
typedef struct {
  int a, b;                   /* from (source memory), to (destination memory) */
  mg__CUcontext ca, cb;
  mg__CUstream s;             /* b's copy stream */
  mg__CUdeviceptr src, dst;
  unsigned char *pattern, *back;
  size_t bytes;
  mg__CUevent start, end;
  double deadline;
} mg__probe_t;

/* A device allocation in ctx, made current for the call. */
static mg_status_t mg__probe_alloc(mg__CUcontext ctx, size_t bytes, mg__CUdeviceptr *out) {
  mg__CUcontext saved;
  MG_CHECK(mg__device_ctx_enter(ctx, &saved));
  mg__CUresult r = mg__cuda.MemAlloc(out, bytes);
  mg__device_ctx_leave(ctx, saved);
  return r == MG__CUDA_SUCCESS ? MG_OK : mg__cu_error(r, "cuMemAlloc");
}

/* Frees an allocation of ctx with ctx current (the lock is held: not mg__p2p_mem_free). */
static void mg__probe_free(mg__CUcontext ctx, mg__CUdeviceptr ptr) {
  mg__CUcontext saved;
  if (mg__device_ctx_enter(ctx, &saved) != MG_OK) return; /* as in mg__p2p_mem_free */
  (void)mg__cuda.MemFree(ptr);
  mg__device_ctx_leave(ctx, saved);
}

/* One copy a -> b on the stream (b's context is current), waited for; with timing, *ms is its
 * time on the GPU. A failure to enqueue is the pair's verdict: *verdict gets the message. */
static mg_status_t mg__probe_copy(mg__probe_t *pr, int timed, float *ms, char *verdict,
                                  size_t vlen) {
  if (timed) MG_CU_CHECK(EventRecord, pr->start, pr->s);
  mg__CUresult r =
      pr->a == pr->b
          ? mg__cuda.MemcpyAsync(pr->dst, pr->src, pr->bytes, pr->s)
          : mg__cuda.MemcpyPeerAsync(pr->dst, pr->cb, pr->src, pr->ca, pr->bytes, pr->s);
  if (r != MG__CUDA_SUCCESS) {
    mg__cu_error(r, pr->a == pr->b ? "cuMemcpyAsync" : "cuMemcpyPeerAsync");
    snprintf(verdict, vlen, "the copy %d -> %d failed: %s", pr->a, pr->b, mg_last_error());
    return MG_OK;
  }
  MG_CU_CHECK(EventRecord, pr->end, pr->s);
  char what[64];
  snprintf(what, sizeof what, "the probe's copy %d -> %d", pr->a, pr->b);
  MG_CHECK(mg__p2p_event_wait(pr->end, pr->deadline, what));
  if (timed) MG_CU_CHECK(EventElapsedTime, ms, pr->start, pr->end);
  return MG_OK;
}

/* Orders the work just enqueued on ctx's legacy stream before stream s. cuMemcpyHtoD from
 * pageable memory may return before its DMA has landed, and cuMemsetD8 on device memory does not
 * wait at all; both run on the legacy stream, which a non-blocking stream such as the copy stream
 * does not wait for. Without this the copy could read the pattern before it arrived, or the
 * memset could zero the destination after the copy (seen on an H200: "byte 4224 of 1048576 is
 * 0x00"). ctx is current. */
static mg_status_t mg__probe_order(mg__CUstream s) {
  mg__CUevent ev;
  MG_CU_CHECK(EventCreate, &ev, MG__CU_EVENT_DISABLE_TIMING);
  mg__CUresult r = mg__cuda.EventRecord(ev, MG__CU_STREAM_LEGACY);
  if (r == MG__CUDA_SUCCESS) r = mg__cuda.StreamWaitEvent(s, ev, 0);
  (void)mg__cuda.EventDestroy(ev); /* released once the wait has passed it */
  return r == MG__CUDA_SUCCESS ? MG_OK : mg__cu_error(r, "ordering the probe's copy");
}

/* Writes the pattern at a, copies it to b (twice when timed: the first warms the path up),
 * reads it back and compares. MG_OK with verdict[0] == 0 when the bytes arrived; MG_OK with the
 * reason in verdict when the pair failed; an error when the probe itself could not be set up. */
static mg_status_t mg__probe_run(mg__probe_t *pr, int timed, double *gbps, char *verdict,
                                 size_t vlen) {
  mg__CUcontext saved;
  for (size_t k = 0; k < pr->bytes; k++)
    pr->pattern[k] = (unsigned char)(k * 131u + (unsigned)pr->a * 7u + (unsigned)pr->b * 13u + 1u);
  MG_CHECK(mg__device_ctx_enter(pr->ca, &saved));
  mg__CUresult r = mg__cuda.MemcpyHtoD(pr->src, pr->pattern, pr->bytes);
  mg_status_t st = r == MG__CUDA_SUCCESS ? mg__probe_order(pr->s) : mg__cu_error(r, "cuMemcpyHtoD");
  mg__device_ctx_leave(pr->ca, saved);
  MG_CHECK(st);
  MG_CHECK(mg__device_ctx_enter(pr->cb, &saved));
  float ms = 0;
  MG_CU_CHECK_GOTO(st, out, MemsetD8, pr->dst, 0, pr->bytes);
  st = mg__probe_order(pr->s);
  if (st != MG_OK) goto out;
  for (int round = 0; round < 1 + timed && st == MG_OK && verdict[0] == '\0'; round++)
    st = mg__probe_copy(pr, timed && round == 1, &ms, verdict, vlen);
  if (st != MG_OK || verdict[0] != '\0') goto out;
  MG_CU_CHECK_GOTO(st, out, MemcpyDtoH, pr->back, pr->dst, pr->bytes);
  for (size_t k = 0; k < pr->bytes; k++)
    if (pr->back[k] != pr->pattern[k]) {
      snprintf(verdict, vlen, "the bytes copied %d -> %d differ: byte %zu of %zu is 0x%02x, "
               "written 0x%02x", pr->a, pr->b, k, pr->bytes, pr->back[k], pr->pattern[k]);
      goto out;
    }
  if (timed && ms > 0) *gbps = (double)pr->bytes / ((double)ms * 1e-3) / 1e9;
out:
  mg__device_ctx_leave(pr->cb, saved);
  return st;
}

/* Probes the pair (a, b) and records the verdict. Under p->lock. */
static mg_status_t mg__probe_pair(mg__p2p_t *p, int a, int b, size_t bytes, int timed,
                                  unsigned char *pattern, unsigned char *back) {
  mg__probe_t pr = {a, b, NULL, NULL, NULL, 0, 0, pattern, back, bytes, NULL, NULL, 0};
  pr.deadline = mg__now() + mg__param_double(MG_PARAM_TIMEOUT);
  MG_CHECK(mg__p2p_ctx_locked(p, a, &pr.ca));
  MG_CHECK(mg__p2p_ctx_locked(p, b, &pr.cb));
  MG_CHECK(mg__p2p_stream_locked(p, b, &pr.s));
  mg_status_t st = mg__probe_alloc(pr.ca, bytes, &pr.src);
  if (st == MG_OK) st = mg__probe_alloc(pr.cb, bytes, &pr.dst);
  mg__CUcontext saved;
  if (st == MG_OK) st = mg__device_ctx_enter(pr.cb, &saved);
  if (st == MG_OK) {
    mg__CUresult r = mg__cuda.EventCreate(&pr.start, MG__CU_EVENT_DEFAULT);
    if (r == MG__CUDA_SUCCESS) r = mg__cuda.EventCreate(&pr.end, MG__CU_EVENT_DEFAULT);
    if (r != MG__CUDA_SUCCESS) st = mg__cu_error(r, "cuEventCreate");
    mg__device_ctx_leave(pr.cb, saved);
  }
  char verdict[256] = "";
  double gbps = 0;
  if (st == MG_OK) st = mg__probe_run(&pr, timed, &gbps, verdict, sizeof verdict);
  mg__p2p_pair_t *pp = mg__p2p_pair(p, a, b);
  if (st == MG_OK) {
    pp->probe = verdict[0] == '\0' ? MG_P2P_PROBE_OK : MG_P2P_PROBE_FAILED;
    pp->gbps = gbps;
    snprintf(pp->reason, sizeof pp->reason, "%s", verdict);
  }
  /* Frees: each answers an error only for a handle that is not one, and these are ours. */
  if (pr.start != NULL) (void)mg__cuda.EventDestroy(pr.start);
  if (pr.end != NULL) (void)mg__cuda.EventDestroy(pr.end);
  if (pr.src != 0) mg__probe_free(pr.ca, pr.src);
  if (pr.dst != 0) mg__probe_free(pr.cb, pr.dst);
  if (st == MG_OK && pp->probe == MG_P2P_PROBE_FAILED && a != b) {
    /* Not used as peers any more: without peer access the driver stages the pair's copies. */
    st = mg__device_ctx_enter(pr.ca, &saved);
    if (st == MG_OK) {
      mg__CUresult r = mg__cuda.CtxDisablePeerAccess(pr.cb);
      mg__device_ctx_leave(pr.ca, saved);
      if (r != MG__CUDA_SUCCESS && r != MG__CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)
        st = mg__cu_error(r, "cuCtxDisablePeerAccess");
      else
        pp->enabled = 0;
    }
  }
  if (st != MG_OK) mg__error_prefix("probing %d -> %d", a, b);
  return st;
}

mg_status_t mg_p2p_probe(size_t bytes, int timed, int *failed) {
  static const char fn[] = "mg_p2p_probe";
  if (bytes > MG__PROBE_MAX_BYTES)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: bytes %zu is above 1 GiB", fn, bytes);
  if (bytes == 0) bytes = MG__PROBE_DEFAULT_BYTES;
  mg__p2p_t *p;
  MG_CHECK(mg__p2p_get(&p));
  if (p->n == 0) {
    if (failed != NULL) *failed = 0;
    return MG_OK;
  }
  unsigned char *pattern = malloc(bytes), *back = malloc(bytes);
  mg_status_t st = MG_OK;
  if (pattern == NULL || back == NULL)
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: two host buffers of %zu bytes", fn, bytes);
  int nfailed = 0;
  pthread_mutex_lock(&p->lock);
  for (int a = 0; a < p->n && st == MG_OK; a++)
    for (int b = 0; b < p->n && st == MG_OK; b++) {
      mg__p2p_pair_t *pp = mg__p2p_pair(p, a, b);
      if (a != b && !pp->enabled) continue; /* failed pairs were disabled: their verdict stays */
      st = mg__probe_pair(p, a, b, bytes, timed != 0, pattern, back);
      nfailed += st == MG_OK && pp->probe == MG_P2P_PROBE_FAILED;
    }
  pthread_mutex_unlock(&p->lock);
  free(pattern);
  free(back);
  if (st != MG_OK) {
    mg__error_prefix("%s", fn);
    return st;
  }
  if (failed != NULL) *failed = nfailed;
  return MG_OK;
}

int mg__p2p_pair_works(int from, int to, char *why, size_t len) {
  mg__p2p_t *p;
  if (mg__p2p_get(&p) != MG_OK) {
    snprintf(why, len, "%s", mg_last_error());
    return 0;
  }
  if (from < 0 || to < 0 || from >= p->n || to >= p->n) {
    snprintf(why, len, "GPU %d or GPU %d is not one of this process's %d", from, to, p->n);
    return 0;
  }
  if (from == to) return 1;
  mg__p2p_pair_t *pp = mg__p2p_pair(p, from, to);
  mg_status_t st = MG_OK;
  pthread_mutex_lock(&p->lock);
  if (pp->can_access && !pp->enabled && pp->probe != MG_P2P_PROBE_FAILED)
    st = mg__p2p_enable_locked(p, from, to);
  const int ok = st == MG_OK && pp->enabled && pp->probe != MG_P2P_PROBE_FAILED;
  if (st != MG_OK)
    snprintf(why, len, "GPU %d -> GPU %d: %s", from, to, mg_last_error());
  else if (!pp->can_access)
    snprintf(why, len, "GPU %d cannot access GPU %d's memory (cuDeviceCanAccessPeer)", from, to);
  else if (!ok)
    snprintf(why, len, "GPU %d -> GPU %d: %s", from, to, pp->reason);
  pthread_mutex_unlock(&p->lock);
  return ok;
}
