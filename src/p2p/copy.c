/*
 * copy.c -- asynchronous peer copies: every argument checked, the copy enqueued after the
 * source's last writer (an event the stream waits for on the GPU), and a request: one pooled
 * event recorded after the copy, which mg_request_wait, mg_request_test and the watchdog query
 * (as the NCCL backend's marks are); a host function, on a stream of its own, only once the
 * program sets a callback. Nothing here waits on the host, except mg__p2p_event_wait, which
 * only the probe uses.
 *
 * Divisions: the request; checks; mg__p2p_copy; mg_p2p_copy; waiting for an event.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/params.h"
#include "core/handle.h"
#include "device/evpool.h"
#include "loader/loader.h"
#include "p2p/p2p.h"

static const char *const mg__path_names[] = {"local", "peer", "staged"};

/* ---- the request ------------------------------------------------------------------------- */

/* A copy's request: what it is, for its messages (written only when one is: formatting it for
 * every copy would cost more than the rest of the request), and the event recorded on the copy's
 * stream after it, which wait, test and the watchdog query (the request's owner ops). Owned by
 * the request, released with it. */
typedef struct {
  const char *fn;
  size_t bytes;
  int src, dst;
  mg_p2p_path_t path;
  int device;   /* the stream's device: its pool holds ev, its done stream runs the host function */
  mg__ev_t *ev; /* from device's pool (device/evpool.h) */
} mg__p2p_req_ctx_t;

static void mg__p2p_req_what(const void *ctx, char *buf, size_t len) {
  const mg__p2p_req_ctx_t *rc = ctx;
  snprintf(buf, len, "%s of %zu bytes from device %d to device %d (%s path)", rc->fn, rc->bytes,
           rc->src, rc->dst, mg__path_names[rc->path]);
}

/* There is nothing to abort: a copy that passed its deadline is one whose stream never reached
 * it (a stream blocked behind other work; a fault would have been found by a query). */
static void mg__p2p_req_expire(void *ctx, int abort, char *buf, size_t len) {
  (void)ctx;
  if (!abort)
    snprintf(buf, len, "its stream did not reach the end of the copy (work before it still "
             "runs)");
}

/* The event goes back to its pool without a CUDA call: this may run on a host function's thread
 * (the last reference dropped there). Its record may still be pending (a request freed before
 * its copy ended, request.h): recording it again for another copy is allowed, and a wait
 * enqueued on it before (a callback's host function) took the record current at its call. */
static void mg__p2p_req_release(void *ctx) {
  mg__p2p_req_ctx_t *rc = ctx;
  mg__ev_put(rc->ev);
  free(rc);
}

static mg_status_t mg__p2p_req_query(void *ctx) {
  mg__p2p_req_ctx_t *rc = ctx;
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(rc->ev->pool->ctx, &saved));
  mg__CUresult r = mg__cuda.EventQuery(rc->ev->ev);
  mg__device_ctx_leave(rc->ev->pool->ctx, saved);
  if (r == MG__CUDA_SUCCESS) return MG_OK;
  if (r == MG__CUDA_ERROR_NOT_READY) return MG_INPROGRESS;
  /* A fault of the context: the stream will never get there. */
  mg_status_t st = mg__cu_error(r, "cuEventQuery");
  mg__error_prefix("device %d: the stream failed before it finished the copy", rc->device);
  return st;
}

/* The host function: runs on a thread of the driver once the event is reached. It makes no CUDA
 * call (CUDA forbids them there) and runs no user code: callbacks go to the library's callback
 * thread. */
static void mg__p2p_copy_done(void *arg) {
  mg_request_t *req = arg;
  (void)mg__request_complete(req, MG_OK, NULL, 0); /* 0: completed before (a query, a timeout) */
  mg__request_unref(req);                          /* the host function's reference */
}

/* A callback was set: a host function completes req once its event is reached. It runs on a
 * stream of its own (p->done[d]) that waits for the event, because a CUDA host function holds
 * back the work of its stream until it returns, and the copy's stream must not wait for it. */
static mg_status_t mg__p2p_req_notify(void *ctx, mg_request_t *req) {
  mg__p2p_req_ctx_t *rc = ctx;
  mg__p2p_t *p;
  MG_CHECK(mg__p2p_get(&p));
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(rc->ev->pool->ctx, &saved));
  mg__request_ref(req); /* the host function's */
  mg_status_t st = MG_OK;
  pthread_mutex_lock(&p->lock);
  mg__CUresult r = MG__CUDA_SUCCESS;
  if (p->done[rc->device] == NULL)
    r = mg__cuda.StreamCreate(&p->done[rc->device], MG__CU_STREAM_NON_BLOCKING);
  if (r != MG__CUDA_SUCCESS) {
    p->done[rc->device] = NULL;
    st = mg__cu_error(r, "cuStreamCreate");
  }
  if (st == MG_OK && (r = mg__cuda.StreamWaitEvent(p->done[rc->device], rc->ev->ev, 0)) !=
                         MG__CUDA_SUCCESS)
    st = mg__cu_error(r, "cuStreamWaitEvent");
  if (st == MG_OK && (r = mg__cuda.LaunchHostFunc(p->done[rc->device], mg__p2p_copy_done, req)) !=
                         MG__CUDA_SUCCESS)
    st = mg__cu_error(r, "cuLaunchHostFunc");
  pthread_mutex_unlock(&p->lock);
  mg__device_ctx_leave(rc->ev->pool->ctx, saved);
  if (st != MG_OK) mg__request_unref(req);
  return st;
}

static const mg__req_owner_ops_t mg__p2p_req_ops = {mg__p2p_req_what, mg__p2p_req_expire,
                                                    mg__p2p_req_release, mg__p2p_req_query,
                                                    mg__p2p_req_notify};

/* ---- checks --------------------------------------------------------------------------------- */

static int mg__ranges_overlap(uintptr_t a, uintptr_t b, size_t bytes) {
  return a < b + bytes && b < a + bytes;
}

/* The stream's context: NULL and the default-stream handles name the one made current for the
 * copy (dst's); any other stream must be one of dst's or src's primary context. */
static mg_status_t mg__p2p_stream_ctx(mg__CUstream s, mg__CUcontext dst_ctx,
                                      mg__CUcontext src_ctx, const mg__p2p_copy_t *c,
                                      const char *fn, mg__CUcontext *ctx) {
  if (s == MG__CU_STREAM_LEGACY || s == MG__CU_STREAM_PER_THREAD) {
    *ctx = dst_ctx;
    return MG_OK;
  }
  if (mg__handle_valid(s, MG__HANDLE_STREAM))
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: stream %p is a host stream of the host backend, not a CUDA stream", fn,
                     (void *)s);
  mg__CUcontext owner = NULL;
  mg__CUresult r = mg__cuda.StreamGetCtx(s, &owner);
  if (r != MG__CUDA_SUCCESS) {
    mg__cu_error(r, "cuStreamGetCtx");
    mg__error_prefix("%s: stream %p is not a usable CUDA stream", fn, (void *)s);
    return MG_ERR_INVALID_ARGUMENT;
  }
  if (owner != dst_ctx && owner != src_ctx)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: stream %p belongs neither to device %d (dst) nor to device %d (src): "
                     "pass a stream of either primary context, or NULL", fn, (void *)s,
                     c->dst_device, c->src_device);
  *ctx = owner;
  return MG_OK;
}

/* Everything about c that needs no context: pointers, devices, ranges, overlap. */
static mg_status_t mg__p2p_check(mg__p2p_t *p, const mg__p2p_copy_t *c, const char *fn) {
  if (c->dst == NULL || c->src == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                     c->dst == NULL ? "dst" : "src");
  MG_CHECK(mg__p2p_check_device(p, c->dst_device, fn, "dst_device"));
  MG_CHECK(mg__p2p_check_device(p, c->src_device, fn, "src_device"));
  /* The driver knows every allocation: a pointer on another device, host memory, or a range
   * that runs past its allocation's end is refused here rather than faulting on the GPU. A
   * buffer's side needs no driver call: its record (device, size) was checked already. */
  if (c->dst_buf == NULL)
    MG_CHECK(mg__device_check_ptr(c->dst, c->bytes, c->dst_device, fn, "dst"));
  if (c->src_buf == NULL)
    MG_CHECK(mg__device_check_ptr(c->src, c->bytes, c->src_device, fn, "src"));
  if (c->dst_device == c->src_device &&
      mg__ranges_overlap((uintptr_t)c->dst, (uintptr_t)c->src, c->bytes))
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: dst %p and src %p overlap on device %d (%zu bytes each): a copy's "
                     "result would depend on its order", fn, c->dst, c->src, c->dst_device,
                     c->bytes);
  return MG_OK;
}

/* ---- mg__p2p_copy ------------------------------------------------------------------------- */

/* Enqueues the copy and what orders it, in the stream's context (current). */
static mg_status_t mg__p2p_enqueue(const mg__p2p_copy_t *c, mg_p2p_path_t path,
                                   mg__CUcontext dst_ctx, mg__CUcontext src_ctx,
                                   mg__CUstream s, const char *fn) {
  if (c->src_buf != NULL) MG_CHECK(mg__buf_order_after_writer(c->src_buf, s, fn));
  const mg__CUdeviceptr d = (mg__CUdeviceptr)(uintptr_t)c->dst;
  const mg__CUdeviceptr from = (mg__CUdeviceptr)(uintptr_t)c->src;
  /* Both paths between two devices are cuMemcpyPeerAsync: with the source's peer access enabled
   * the driver copies directly, without it the driver stages through host memory. */
  if (path == MG_P2P_PATH_LOCAL)
    MG_CU_CHECK(MemcpyAsync, d, from, c->bytes, s);
  else
    MG_CU_CHECK(MemcpyPeerAsync, d, dst_ctx, from, src_ctx, c->bytes, s);
  return MG_OK;
}

/* The request of a copy that is enqueued: an event recorded on s after it, and the request
 * listed with the watchdog (its deadline, and its queries). Device d's context is current. */
static mg_status_t mg__p2p_request(const mg__p2p_copy_t *c, mg_p2p_path_t pth, int d,
                                   mg__CUstream s, const char *fn, mg_request_t **out) {
  mg__evpool_t *pool;
  MG_CHECK(mg__evpool_get(d, fn, &pool));
  mg__p2p_req_ctx_t *rc = malloc(sizeof *rc);
  if (rc == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  *rc = (mg__p2p_req_ctx_t){fn, c->bytes, c->src_device, c->dst_device, pth, d, NULL};
  mg_status_t st = mg__ev_take(pool, 0, &rc->ev);
  if (st != MG_OK) {
    free(rc);
    return st;
  }
  mg__CUresult r = mg__cuda.EventRecord(rc->ev->ev, s);
  if (r != MG__CUDA_SUCCESS) {
    mg__p2p_req_release(rc);
    return mg__cu_error(r, "cuEventRecord");
  }
  const double deadline = mg__now() + mg__param_double(MG_PARAM_TIMEOUT);
  mg_request_t *req = mg__request_new(MG__REQ_P2P, deadline, MG_ON_TIMEOUT_REPORT, fn);
  if (req == NULL) {
    mg__p2p_req_release(rc);
    return MG_ERR_OUT_OF_MEMORY;
  }
  req->oops = &mg__p2p_req_ops;
  req->octx = rc; /* the request owns it from here: released with it */
  (void)mg__wd_add(req, NULL); /* no comm: never refused */
  *out = req;
  return MG_OK;
}

mg_status_t mg__p2p_copy(const mg__p2p_copy_t *c, const char *fn, mg_p2p_path_t *path,
                         mg_request_t **req) {
  mg__p2p_t *p;
  MG_CHECK(mg__p2p_get(&p));
  MG_CHECK(mg__p2p_check(p, c, fn));
  mg__CUcontext dst_ctx = NULL, src_ctx = NULL, ctx = NULL, saved = NULL;
  mg__CUstream s = (mg__CUstream)c->stream;
  pthread_mutex_lock(&p->lock);
  const mg_p2p_path_t pth = mg__p2p_path_locked(p, c->src_device, c->dst_device);
  mg_status_t st = mg__p2p_ctx_locked(p, c->dst_device, &dst_ctx);
  if (st == MG_OK) st = mg__p2p_ctx_locked(p, c->src_device, &src_ctx);
  if (st == MG_OK && s == NULL) st = mg__p2p_stream_locked(p, c->dst_device, &s);
  pthread_mutex_unlock(&p->lock);
  if (st == MG_OK) st = mg__p2p_stream_ctx(s, dst_ctx, src_ctx, c, fn, &ctx);
  if (st != MG_OK) return st;
  mg_request_t *r = NULL;
  if (c->bytes == 0) {
    if (req != NULL) MG_CHECK(mg__request_done(MG__REQ_P2P, MG_ON_TIMEOUT_REPORT, &r, fn));
  } else {
    MG_CHECK(mg__device_ctx_enter(ctx, &saved));
    st = mg__p2p_enqueue(c, pth, dst_ctx, src_ctx, s, fn);
    /* From here the copy is enqueued: its destination buffer records it, and the request
     * follows it. A failure below still returns an error (no request), but the copy runs. */
    if (st == MG_OK && c->dst_buf != NULL) st = mg__buf_record(c->dst_buf, s, ctx);
    if (st == MG_OK && req != NULL)
      st = mg__p2p_request(c, pth, ctx == dst_ctx ? c->dst_device : c->src_device, s, fn, &r);
    mg__device_ctx_leave(ctx, saved);
    if (st != MG_OK) {
      mg__error_prefix("%s", fn);
      return st;
    }
  }
  if (path != NULL) *path = pth;
  if (req != NULL) *req = r;
  return MG_OK;
}

mg_status_t mg_p2p_copy(void *dst, int dst_device, const void *src, int src_device,
                        size_t bytes, mg_stream_t stream, mg_p2p_path_t *path,
                        mg_request_t **req) {
  const mg__p2p_copy_t c = {dst, dst_device, src, src_device, bytes, stream, NULL, NULL};
  return mg__p2p_copy(&c, "mg_p2p_copy", path, req);
}

/* ---- waiting for an event ----------------------------------------------------------------- */

mg_status_t mg__p2p_event_wait(mg__CUevent event, double deadline, const char *what) {
  /* Poll with a growing pause (1 us to 1 ms): a probe's copy takes microseconds to
   * milliseconds, and cuEventSynchronize could not be bounded. */
  for (long pause_ns = 1000;; pause_ns = pause_ns < 1000000 ? pause_ns * 2 : pause_ns) {
    mg__CUresult r = mg__cuda.EventQuery(event);
    if (r == MG__CUDA_SUCCESS) return MG_OK;
    if (r != MG__CUDA_ERROR_NOT_READY) return mg__cu_error(r, "cuEventQuery");
    if (mg__now() >= deadline)
      return mg__error(MG_ERR_TIMED_OUT, "%s did not complete within MGCOMM_TIMEOUT", what);
    struct timespec ts = {0, pause_ns};
    nanosleep(&ts, NULL); /* interrupted early: the loop looks again */
  }
}
