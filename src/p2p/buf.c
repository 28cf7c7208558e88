/*
 * buf.c -- buffers with a generation (the seeds' GpuRef, done in C): device or host memory, the
 * generation of the world they belong to, and their last writer (a stream and an event of it).
 *
 * A buffer is a registered handle (MG__HANDLE_P2P_BUF) with a reference count: every call takes
 * a reference while it uses the buffer, so that mg_buf_destroy from another thread frees it only
 * after them. Its writer fields are under its own lock (a leaf).
 *
 * Live buffers are also listed by address (mg__bufs, sorted by `mem`), so that an operation on
 * plain pointers (a world collective) finds the buffer its output lies in and records itself as
 * its last writer. A world operation is enqueued by a rank's worker after the call returns: from
 * the call on, the buffer counts it as a pending write, and a reader waits (bounded) until the
 * worker has enqueued it and recorded its event, then waits for that event on the GPU.
 *
 * Lock order: mg__bufs.lock is a leaf (a reference is taken under it, nothing else).
 *
 * Divisions: the object; the table by address; creation and destruction; generation and writer;
 * writes of other operations; queries; copies.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/params.h"
#include "core/handle.h"
#include "loader/loader.h"
#include "p2p/p2p.h"

/* ---- the object --------------------------------------------------------------------------- */

struct mg_buf {
  int device;               /* CUDA ordinal, or MG_BUF_HOST */
  size_t bytes;
  void *mem;                /* owned: cuMemAlloc'd in device's primary context, or host memory */
  mg__gen_t *gen_src;       /* its world's generation counter (a reference), NULL: no world */
  uint64_t gen;             /* the generation it was made in */
  atomic_int refs;          /* the handle's, plus one per call using it */
  pthread_mutex_t lock;     /* leaf: the writer fields */
  pthread_cond_t posted;    /* broadcast when `pending` drops */
  int pending;              /* writes submitted (a world operation) but not yet enqueued */
  uint64_t writes;          /* recorded writes */
  mg__CUstream last_stream; /* the last writer's stream, NULL when none (or a host write) */
  mg__CUevent last_event;   /* recorded on last_stream after that write; owned */
  mg__CUcontext last_ctx;   /* the context last_event belongs to */
};

static void mg__buf_free(mg_buf_t *b) {
  if (b->last_event != NULL) {
    /* Destroying an event whose record is pending is allowed: CUDA frees it once reached. A
     * failure can only be a driver shut down at exit: nothing left to free. */
    (void)mg__cuda.EventDestroy(b->last_event);
  }
  if (b->device == MG_BUF_HOST) {
    free(b->mem);
  } else {
    mg__p2p_mem_free(b->device, (mg__CUdeviceptr)(uintptr_t)b->mem);
  }
  mg__gen_unref(b->gen_src);
  pthread_mutex_destroy(&b->lock);
  pthread_cond_destroy(&b->posted);
  free(b);
}

static void mg__buf_ref_cb(void *p, void *arg) {
  (void)arg;
  atomic_fetch_add(&((mg_buf_t *)p)->refs, 1);
}

/* A reference on a live buffer, or MG_ERR_INVALID_USAGE naming fn and arg. */
static mg_status_t mg__buf_get(mg_buf_t *b, const char *fn, const char *arg) {
  if (b == NULL) return mg__error(MG_ERR_INVALID_USAGE, "%s: %s is NULL", fn, arg);
  if (!mg__handle_with(b, MG__HANDLE_P2P_BUF, mg__buf_ref_cb, NULL))
    return mg__error(MG_ERR_INVALID_USAGE, "%s: %s %p is not a live buffer (freed, or not a "
                     "buffer)", fn, arg, (void *)b);
  return MG_OK;
}

/* ---- the table by address ----------------------------------------------------------------- */

static struct {
  pthread_mutex_t lock;
  mg_buf_t **v; /* live buffers, sorted by mem (their ranges never overlap) */
  int n, cap;
  atomic_int live; /* n, read without the lock: a program without buffers pays no lock per op */
} mg__bufs = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};

/* The index of the first listed buffer whose memory starts above p. Under mg__bufs.lock. */
static int mg__bufs_upper(uintptr_t p) {
  int lo = 0, hi = mg__bufs.n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if ((uintptr_t)mg__bufs.v[mid]->mem <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static mg_status_t mg__bufs_add(mg_buf_t *b, const char *fn) {
  pthread_mutex_lock(&mg__bufs.lock);
  if (mg__bufs.n == mg__bufs.cap) {
    const int cap = mg__bufs.cap ? 2 * mg__bufs.cap : 64;
    mg_buf_t **v = realloc(mg__bufs.v, sizeof *v * (size_t)cap);
    if (v == NULL) {
      pthread_mutex_unlock(&mg__bufs.lock);
      return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    mg__bufs.v = v;
    mg__bufs.cap = cap;
  }
  const int i = mg__bufs_upper((uintptr_t)b->mem);
  memmove(&mg__bufs.v[i + 1], &mg__bufs.v[i], sizeof *mg__bufs.v * (size_t)(mg__bufs.n - i));
  mg__bufs.v[i] = b;
  atomic_store(&mg__bufs.live, ++mg__bufs.n);
  pthread_mutex_unlock(&mg__bufs.lock);
  return MG_OK;
}

static void mg__bufs_remove(mg_buf_t *b) {
  pthread_mutex_lock(&mg__bufs.lock);
  const int i = mg__bufs_upper((uintptr_t)b->mem) - 1;
  MG_ASSERT(i >= 0 && mg__bufs.v[i] == b);
  memmove(&mg__bufs.v[i], &mg__bufs.v[i + 1], sizeof *mg__bufs.v * (size_t)(mg__bufs.n - i - 1));
  atomic_store(&mg__bufs.live, --mg__bufs.n);
  pthread_mutex_unlock(&mg__bufs.lock);
}

mg_buf_t *mg__buf_find(const void *p) {
  /* A buffer made concurrently with the operation that writes it may be missed: the program
   * cannot have ordered the two anyway. */
  if (atomic_load_explicit(&mg__bufs.live, memory_order_relaxed) == 0) return NULL;
  mg_buf_t *b = NULL;
  pthread_mutex_lock(&mg__bufs.lock);
  const int i = mg__bufs_upper((uintptr_t)p) - 1;
  if (i >= 0 && (uintptr_t)p - (uintptr_t)mg__bufs.v[i]->mem < mg__bufs.v[i]->bytes) {
    b = mg__bufs.v[i];
    atomic_fetch_add(&b->refs, 1);
  }
  pthread_mutex_unlock(&mg__bufs.lock);
  return b;
}

void mg__buf_unref(mg_buf_t *b) {
  if (atomic_fetch_sub(&b->refs, 1) == 1) mg__buf_free(b);
}

/* ---- creation and destruction -------------------------------------------------------------- */

/* Device memory of d: cuMemAlloc in d's primary context, made current for the call only. */
static mg_status_t mg__buf_alloc_device(int d, size_t bytes, const char *fn, void **mem) {
  mg__p2p_t *p;
  MG_CHECK(mg__p2p_get(&p));
  MG_CHECK(mg__p2p_check_device(p, d, fn, "device"));
  mg__CUcontext ctx, saved;
  pthread_mutex_lock(&p->lock);
  mg_status_t st = mg__p2p_ctx_locked(p, d, &ctx);
  pthread_mutex_unlock(&p->lock);
  MG_CHECK(st);
  MG_CHECK(mg__device_ctx_enter(ctx, &saved));
  mg__CUdeviceptr ptr = 0;
  mg__CUresult r = mg__cuda.MemAlloc(&ptr, bytes);
  mg__device_ctx_leave(ctx, saved);
  if (r != MG__CUDA_SUCCESS) {
    st = mg__cu_error(r, "cuMemAlloc");
    mg__error_prefix("%s: %zu bytes on device %d", fn, bytes, d);
    return st;
  }
  *mem = (void *)(uintptr_t)ptr;
  return MG_OK;
}

/* A new buffer on device (or MG_BUF_HOST) belonging to generation gen of gen_src (NULL: none);
 * takes a reference on gen_src when it succeeds. For mg_world_buf_create too. */
mg_status_t mg__buf_new(int device, size_t bytes, mg__gen_t *gen_src, const char *fn,
                        mg_buf_t **out) {
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (bytes == 0) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: bytes is 0", fn);
  if (device < MG_BUF_HOST)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: device %d is neither a CUDA ordinal nor "
                     "MG_BUF_HOST (-1)", fn, device);
  mg_buf_t *b = calloc(1, sizeof *b);
  if (b == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  mg_status_t st = MG_OK;
  if (device == MG_BUF_HOST) {
    if (posix_memalign(&b->mem, 4096, bytes) != 0)
      st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: %zu bytes of host memory", fn, bytes);
  } else {
    st = mg__buf_alloc_device(device, bytes, fn, &b->mem);
  }
  if (st != MG_OK) {
    free(b);
    return st;
  }
  b->device = device;
  b->bytes = bytes;
  atomic_init(&b->refs, 1);
  pthread_mutex_init(&b->lock, NULL);
  pthread_cond_init(&b->posted, NULL);
  if (gen_src != NULL) {
    atomic_fetch_add(&gen_src->refs, 1);
    b->gen_src = gen_src;
    b->gen = atomic_load(&gen_src->current);
  }
  st = mg__bufs_add(b, fn);
  if (st != MG_OK) {
    mg__buf_free(b);
    return st;
  }
  st = mg__handle_register(b, MG__HANDLE_P2P_BUF);
  if (st != MG_OK) {
    mg__error_prefix("%s", fn);
    mg__bufs_remove(b);
    mg__buf_free(b);
    return st;
  }
  *out = b;
  return MG_OK;
}

mg_status_t mg_buf_create(int device, size_t bytes, mg_buf_t **out) {
  return mg__buf_new(device, bytes, NULL, "mg_buf_create", out);
}

mg_status_t mg_buf_destroy(mg_buf_t *buf) {
  if (buf == NULL) return MG_OK;
  if (!mg__handle_take(buf, MG__HANDLE_P2P_BUF))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "mg_buf_destroy: buf %p is not a live buffer (freed, or not a buffer)",
                     (void *)buf);
  mg__bufs_remove(buf); /* no operation finds it from here */
  mg__buf_unref(buf);   /* the handle's: freed now, or when the last call using it returns */
  return MG_OK;
}

/* ---- generation and writer ---------------------------------------------------------------- */

static mg_status_t mg__buf_wait_posted_locked(mg_buf_t *b, const char *fn);

/* MG_ERR_STALE, naming fn and arg, when b's world was rebuilt or destroyed. */
static mg_status_t mg__buf_fresh(const mg_buf_t *b, const char *fn, const char *arg) {
  if (b->gen_src == NULL) return MG_OK;
  const uint64_t cur = atomic_load(&b->gen_src->current);
  if (cur == b->gen) return MG_OK;
  if (cur == UINT64_MAX)
    return mg__error(MG_ERR_STALE, "%s: %s belongs to generation %llu of a world that was "
                     "destroyed", fn, arg, (unsigned long long)b->gen);
  return mg__error(MG_ERR_STALE, "%s: %s belongs to generation %llu of its world, which was "
                   "rebuilt (generation %llu now); make a new buffer (this one's memory is freed "
                   "by mg_buf_destroy)", fn, arg, (unsigned long long)b->gen,
                   (unsigned long long)cur);
}

mg_status_t mg__buf_order_after_writer(mg_buf_t *b, mg__CUstream stream, const char *fn) {
  pthread_mutex_lock(&b->lock);
  mg_status_t st = mg__buf_wait_posted_locked(b, fn);
  if (st == MG_OK && b->last_event != NULL) {
    mg__CUresult r = mg__cuda.StreamWaitEvent(stream, b->last_event, 0);
    if (r != MG__CUDA_SUCCESS) st = mg__cu_error(r, "cuStreamWaitEvent (the source's last writer)");
  }
  pthread_mutex_unlock(&b->lock);
  return st;
}

mg_status_t mg__buf_record(mg_buf_t *b, mg__CUstream stream, mg__CUcontext ctx) {
  /* The buffer's event is recorded again while the writes come from one context (a reader's
   * cuStreamWaitEvent took the record current at its call, so it is unaffected); a write from
   * another context needs an event of that context (ctx, current), as cuEventRecord requires. */
  pthread_mutex_lock(&b->lock);
  if (b->last_event != NULL && b->last_ctx == ctx) {
    mg__CUresult r = mg__cuda.EventRecord(b->last_event, stream);
    if (r == MG__CUDA_SUCCESS) {
      b->last_stream = stream;
      b->writes++;
    }
    pthread_mutex_unlock(&b->lock);
    return r == MG__CUDA_SUCCESS ? MG_OK : mg__cu_error(r, "cuEventRecord");
  }
  pthread_mutex_unlock(&b->lock);
  mg__CUevent ev = NULL;
  MG_CU_CHECK(EventCreate, &ev, MG__CU_EVENT_DISABLE_TIMING);
  mg__CUresult r = mg__cuda.EventRecord(ev, stream);
  if (r != MG__CUDA_SUCCESS) {
    (void)mg__cuda.EventDestroy(ev); /* never recorded: nothing can be pending on it */
    return mg__cu_error(r, "cuEventRecord");
  }
  pthread_mutex_lock(&b->lock);
  mg__CUevent old = b->last_event;
  b->last_event = ev;
  b->last_ctx = ctx;
  b->last_stream = stream;
  b->writes++;
  pthread_mutex_unlock(&b->lock);
  if (old != NULL) (void)mg__cuda.EventDestroy(old); /* as in mg__buf_free */
  return MG_OK;
}

/* A host buffer's write is done when recorded: no stream, no event. */
static void mg__buf_record_host(mg_buf_t *b) {
  pthread_mutex_lock(&b->lock);
  b->writes++;
  pthread_mutex_unlock(&b->lock);
}

/* Records a write of b's enqueued on stream (host buffers: done already, stream NULL): finds
 * the stream's context (the special handles name the buffer's device's) and records there. */
static mg_status_t mg__buf_record_on(mg_buf_t *b, mg_stream_t stream, const char *fn) {
  if (b->device == MG_BUF_HOST) {
    if (stream != NULL)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: a host buffer's writes are done when they "
                       "are recorded: pass stream NULL", fn);
    mg__buf_record_host(b);
    return MG_OK;
  }
  mg__p2p_t *p;
  mg__CUcontext ctx = NULL, saved;
  mg__CUstream s = (mg__CUstream)stream;
  MG_CHECK(mg__p2p_get(&p));
  pthread_mutex_lock(&p->lock);
  mg_status_t st = mg__p2p_ctx_locked(p, b->device, &ctx);
  pthread_mutex_unlock(&p->lock);
  MG_CHECK(st);
  if (s != NULL && s != MG__CU_STREAM_LEGACY && s != MG__CU_STREAM_PER_THREAD) {
    mg__CUresult r = mg__cuda.StreamGetCtx(s, &ctx);
    if (r != MG__CUDA_SUCCESS) {
      mg__cu_error(r, "cuStreamGetCtx");
      mg__error_prefix("%s: stream %p is not a usable CUDA stream", fn, (void *)s);
      return MG_ERR_INVALID_ARGUMENT;
    }
  }
  MG_CHECK(mg__device_ctx_enter(ctx, &saved));
  st = mg__buf_record(b, s, ctx);
  mg__device_ctx_leave(ctx, saved);
  return st;
}

mg_status_t mg_buf_record_write(mg_buf_t *buf, mg_stream_t stream) {
  static const char fn[] = "mg_buf_record_write";
  MG_CHECK(mg__buf_get(buf, fn, "buf"));
  mg_status_t st = mg__buf_fresh(buf, fn, "buf");
  if (st == MG_OK) st = mg__buf_record_on(buf, stream, fn);
  mg__buf_unref(buf);
  return st;
}

/* ---- writes of other operations ------------------------------------------------------------ */

void mg__buf_write_begin(mg_buf_t *b) {
  pthread_mutex_lock(&b->lock);
  b->pending++;
  pthread_mutex_unlock(&b->lock);
}

mg_status_t mg__buf_write_end(mg_buf_t *b, mg_stream_t stream, int enqueued, const char *fn) {
  /* Recorded before the pending count drops, so that a reader it wakes finds the new event. */
  const mg_status_t st = enqueued ? mg__buf_record_on(b, stream, fn) : MG_OK;
  pthread_mutex_lock(&b->lock);
  b->pending--;
  pthread_cond_broadcast(&b->posted);
  pthread_mutex_unlock(&b->lock);
  return st;
}

/* Waits until no write of b is pending (every one submitted before is enqueued and recorded, or
 * failed), for at most MGCOMM_TIMEOUT. Under b's lock; MG_OK or MG_ERR_TIMED_OUT naming fn. */
static mg_status_t mg__buf_wait_posted_locked(mg_buf_t *b, const char *fn) {
  if (b->pending == 0) return MG_OK;
  const double limit = mg__param_double(MG_PARAM_TIMEOUT);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t)limit;
  ts.tv_nsec += (long)((limit - (double)(time_t)limit) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  while (b->pending > 0)
    if (pthread_cond_timedwait(&b->posted, &b->lock, &ts) == ETIMEDOUT && b->pending > 0)
      return mg__error(MG_ERR_TIMED_OUT, "%s: a write of the source buffer submitted before "
                       "(a world operation) was not enqueued within MGCOMM_TIMEOUT (%g s): its "
                       "rank's worker is still busy", fn, limit);
  return MG_OK;
}

/* ---- queries ------------------------------------------------------------------------------ */

mg_status_t mg_buf_ptr(mg_buf_t *buf, void **ptr) {
  static const char fn[] = "mg_buf_ptr";
  MG_CHECK(mg__buf_get(buf, fn, "buf"));
  mg_status_t st = ptr == NULL ? mg__error(MG_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", fn)
                               : mg__buf_fresh(buf, fn, "buf");
  if (st == MG_OK) *ptr = buf->mem;
  mg__buf_unref(buf);
  return st;
}

mg_status_t mg_buf_info(mg_buf_t *buf, mg_buf_info_t *info) {
  static const char fn[] = "mg_buf_info";
  MG_CHECK(mg__buf_get(buf, fn, "buf"));
  if (info == NULL) {
    mg__buf_unref(buf);
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: info is NULL", fn);
  }
  mg_buf_info_t out;
  memset(&out, 0, sizeof out);
  out.device = buf->device;
  out.bytes = buf->bytes;
  out.generation = buf->gen;
  out.stale = buf->gen_src != NULL && atomic_load(&buf->gen_src->current) != buf->gen;
  pthread_mutex_lock(&buf->lock);
  out.writes = buf->writes;
  out.last_writer = (mg_stream_t)buf->last_stream;
  pthread_mutex_unlock(&buf->lock);
  mg__buf_unref(buf);
  *info = out;
  return MG_OK;
}

/* ---- copies ------------------------------------------------------------------------------- */

/* [offset, offset + bytes) inside b, without overflow; otherwise MG_ERR_INVALID_ARGUMENT (a copy
 * is never cut to fit). */
static mg_status_t mg__buf_range(const mg_buf_t *b, size_t offset, size_t bytes, const char *fn,
                                 const char *arg) {
  if (offset > b->bytes || bytes > b->bytes - offset)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s range [%zu, %zu + %zu) runs past the end "
                     "of its buffer of %zu bytes", fn, arg, offset, offset, bytes, b->bytes);
  return MG_OK;
}

/* Two host buffers: the copy is done in the call. */
static mg_status_t mg__buf_copy_host(mg_buf_t *dst, size_t doff, mg_buf_t *src, size_t soff,
                                     size_t bytes, mg_stream_t stream, const char *fn,
                                     mg_p2p_path_t *path, mg_request_t **req) {
  if (stream != NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: host buffers are copied in the call: pass "
                     "stream NULL", fn);
  if (dst == src && doff < soff + bytes && soff < doff + bytes)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: the ranges [%zu, +%zu) and [%zu, +%zu) of one "
                     "buffer overlap", fn, doff, bytes, soff, bytes);
  pthread_mutex_lock(&src->lock);
  mg_status_t st = mg__buf_wait_posted_locked(src, fn); /* its writes run when enqueued */
  pthread_mutex_unlock(&src->lock);
  MG_CHECK(st);
  mg_request_t *r = NULL;
  if (req != NULL) MG_CHECK(mg__request_done(MG__REQ_P2P, MG_ON_TIMEOUT_REPORT, &r, fn));
  memcpy((char *)dst->mem + doff, (const char *)src->mem + soff, bytes);
  mg__buf_record_host(dst);
  if (path != NULL) *path = MG_P2P_PATH_LOCAL;
  if (req != NULL) *req = r;
  return MG_OK;
}

mg_status_t mg_buf_copy(mg_buf_t *dst, size_t dst_offset, mg_buf_t *src, size_t src_offset,
                        size_t bytes, mg_stream_t stream, mg_p2p_path_t *path,
                        mg_request_t **req) {
  static const char fn[] = "mg_buf_copy";
  MG_CHECK(mg__buf_get(dst, fn, "dst"));
  mg_status_t st = mg__buf_get(src, fn, "src");
  if (st != MG_OK) {
    mg__buf_unref(dst);
    return st;
  }
  st = mg__buf_fresh(dst, fn, "dst");
  if (st == MG_OK) st = mg__buf_fresh(src, fn, "src");
  if (st == MG_OK) st = mg__buf_range(dst, dst_offset, bytes, fn, "dst");
  if (st == MG_OK) st = mg__buf_range(src, src_offset, bytes, fn, "src");
  if (st == MG_OK && (dst->device == MG_BUF_HOST) != (src->device == MG_BUF_HOST))
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: one buffer is host memory and the other device "
                   "memory: peer copies are between devices, or between host buffers", fn);
  if (st == MG_OK && dst->device == MG_BUF_HOST) {
    st = mg__buf_copy_host(dst, dst_offset, src, src_offset, bytes, stream, fn, path, req);
  } else if (st == MG_OK) {
    const mg__p2p_copy_t c = {(char *)dst->mem + dst_offset, dst->device,
                              (const char *)src->mem + src_offset, src->device, bytes, stream,
                              dst, src};
    st = mg__p2p_copy(&c, fn, path, req);
  }
  mg__buf_unref(src);
  mg__buf_unref(dst);
  return st;
}
