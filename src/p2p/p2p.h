/*
 * p2p.h -- the peer-to-peer layer (src/p2p/), what its files share: the process's GPUs and the
 * state of every ordered pair (topo.c), peer access (access.c), the functional probe
 * (probe.c), asynchronous copies (copy.c) and buffers with a generation (buf.c). The public
 * contracts are mgcomm.h's "Peer-to-peer".
 *
 * One state per process, because what it describes is the process's: CUDA devices, their
 * primary contexts (the ones the runtime and NCCL use) and the peer mappings between them. It
 * is read on first use and never freed; the primary contexts it retains stay retained for the
 * life of the process, because releasing the last reference would destroy the context and with
 * it every peer mapping that mg_p2p_enable_all made.
 *
 * Lock order: mg__p2p_t.lock, then a buffer's lock (buf.c). No library lock is held while a
 * request completes (copy.c's host function holds none).
 */
#ifndef MG_P2P_P2P_H
#define MG_P2P_P2P_H

#include <pthread.h>

#include "core/request.h"
#include "device/device.h"
#include "loader/cuda_api.h"
#include "mgcomm.h"

/* One ordered pair (from, to): what from's context can do with to's memory. */
typedef struct mg__p2p_pair {
  /* read once (topo.c) */
  int can_access;            /* cuDeviceCanAccessPeer; 1 on the diagonal */
  mg_p2p_link_t link;
  int nvlinks;
  int perf_rank, native_atomics, array_access; /* the driver's P2P attributes (-1/0: unknown) */
  /* changed by access.c and probe.c, under mg__p2p_t.lock */
  int enabled;               /* peer access enabled in from's context */
  mg_status_t enable_status; /* MG_OK, or the mapped driver error of the last attempt */
  mg_p2p_probe_t probe;
  double gbps;               /* the probe's timed copy, 0 when not timed */
  char reason[256];          /* why enabling or the probe failed */
} mg__p2p_pair_t;

typedef struct mg__p2p {
  int n;                     /* CUDA devices (0: a driver without GPUs) */
  pthread_mutex_t lock;      /* the fields below and the pairs' changing fields */
  mg__CUcontext *ctx;        /* [n]: primary contexts, retained on first use, never released */
  mg__CUstream *stream;      /* [n]: mgcomm's copy stream of each device, made on first use */
  mg__CUstream *done;        /* [n]: where the host functions of copies' requests with a
                                callback run (copy.c), made on first use */
  mg__p2p_pair_t *pair;      /* [n * n], row from, column to */
} mg__p2p_t;

/* ---- topo.c */

/* The process's state, read on the first call: MG_OK and *out, or the error of reading it
 * (MG_ERR_BACKEND_UNAVAILABLE without a driver; the same error on every later call). */
mg_status_t mg__p2p_get(mg__p2p_t **out);
static inline mg__p2p_pair_t *mg__p2p_pair(mg__p2p_t *p, int from, int to) {
  return &p->pair[(size_t)from * (size_t)p->n + (size_t)to];
}
/* MG_ERR_INVALID_ARGUMENT naming fn and arg when device is not in [0, n). */
mg_status_t mg__p2p_check_device(const mg__p2p_t *p, int device, const char *fn,
                                 const char *arg);
/* The path a copy from device `from` to device `to` takes now. Under p->lock. */
mg_p2p_path_t mg__p2p_path_locked(mg__p2p_t *p, int from, int to);
/* Device d's primary context (retained on first use) and mgcomm's copy stream on it (made on
 * first use, non-blocking). Under p->lock; the caller's current context is left as it was. */
mg_status_t mg__p2p_ctx_locked(mg__p2p_t *p, int d, mg__CUcontext *ctx);
mg_status_t mg__p2p_stream_locked(mg__p2p_t *p, int d, mg__CUstream *stream);
/* Frees device memory allocated in d's primary context, with that context current (the driver
 * wants one). Not under p->lock. Nothing to report: a failure leaves only the allocation, when
 * the driver is gone already (at exit) or no context could be made current. */
void mg__p2p_mem_free(int d, mg__CUdeviceptr ptr);

/* ---- access.c, probe.c */

/* Enables peer access from -> to (access.c; see mg__p2p_enable_locked's comment). */
mg_status_t mg__p2p_enable_locked(mg__p2p_t *p, int from, int to);
/* Whether from's context can load and store to's memory through peer access, for code that
 * moves data itself (our kernels): the pair can access, its access is enabled (now, if it was
 * not), and the probe has not found it lying. It does not run the probe: that waits on the host
 * with synchronous copies, which wait for every blocking stream of the context, and a launch
 * must not (a peer's kernel on such a stream may wait for this very rank); a program takes a
 * lying pair off this path by running mg_p2p_probe (or mgcomm topo) first. 1; or 0 with the
 * reason in why. Devices are this process's ordinals; a device with itself works. */
int mg__p2p_pair_works(int from, int to, char *why, size_t len);

/* ---- copy.c */

/* One copy as mg_p2p_copy and mg_buf_copy describe it. The buffers (may be NULL) are the ones the
 * pointers lie in: src's last writer orders the copy, dst records it. */
typedef struct mg__p2p_copy {
  void *dst;
  int dst_device;
  const void *src;
  int src_device;
  size_t bytes;
  mg_stream_t stream;
  struct mg_buf *dst_buf, *src_buf;
} mg__p2p_copy_t;

/* Checks and enqueues c (mgcomm.h's mg_p2p_copy), returning *path and *req. fn names the public
 * call in messages. */
mg_status_t mg__p2p_copy(const mg__p2p_copy_t *c, const char *fn, mg_p2p_path_t *path,
                         mg_request_t **req);
/* Waits until `event` has been reached, polling without holding any lock, until the absolute
 * mg__now() time `deadline`: MG_OK, MG_ERR_TIMED_OUT (naming what), or the mapped driver error.
 * For the probe: a copy's own requests never wait on the host. */
mg_status_t mg__p2p_event_wait(mg__CUevent event, double deadline, const char *what);

/* ---- buf.c */

/* A new buffer on device (or MG_BUF_HOST) of the current generation of gen_src (NULL: no world;
 * a reference is taken). Errors as mg_buf_create's, naming fn. */
mg_status_t mg__buf_new(int device, size_t bytes, mg__gen_t *gen_src, const char *fn,
                        struct mg_buf **out);

/* Under the buffer's lock: makes stream wait for buf's last recorded write (nothing when there
 * is none), after waiting (bounded by MGCOMM_TIMEOUT, MG_ERR_TIMED_OUT naming fn) until its
 * pending writes are enqueued (mg__buf_write_begin). */
mg_status_t mg__buf_order_after_writer(struct mg_buf *buf, mg__CUstream stream, const char *fn);
/* Records a write enqueued on stream (of context ctx, current) as buf's last writer. Called
 * only after the write was enqueued, so that a failed write records nothing. */
mg_status_t mg__buf_record(struct mg_buf *buf, mg__CUstream stream, mg__CUcontext ctx);

/* The live buffer whose memory contains p, with a reference (mg__buf_unref), or NULL. */
struct mg_buf *mg__buf_find(const void *p);
void mg__buf_unref(struct mg_buf *buf);
/* A write of buf that another operation (a world collective) will enqueue later: from
 * mg__buf_write_begin on, readers wait until mg__buf_write_end, which records the write as buf's
 * last writer when `enqueued` (on stream; NULL for a host buffer, whose write is done then) and
 * nothing when it failed. Every begin is paired with one end. The end's status is the record's
 * (message naming fn); the pending count drops either way. */
void mg__buf_write_begin(struct mg_buf *buf);
mg_status_t mg__buf_write_end(struct mg_buf *buf, mg_stream_t stream, int enqueued,
                              const char *fn);

#endif
