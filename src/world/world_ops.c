/*
 * world_ops.c -- the world forms of the operations, world groups, and batches: a batch is the
 * operations of one world call (or one world group), cut into one part per rank; each part is
 * one item on that rank's worker, which posts its operations on its communicator (inside
 * mg_group_begin/end when there are several) and then learns their completion from a mark on the
 * rank's stream (the host backend: at once; NCCL: the backend's completion hooks). The batch's
 * request completes when the last part does, with the first error (a rank's own before another's
 * MG_ERR_REMOTE about it), naming its rank.
 *
 * An operation whose output lies in an mgcomm buffer (src/p2p/buf.c) is that buffer's pending
 * write from the call on, and its part records it as the buffer's last writer once enqueued (a
 * failed part records nothing), so that a copy out of the buffer is ordered after it.
 *
 * Divisions: batches and parts; submission; world groups; the operations.
 *
 * Lock order: see world.h. A batch's lock is a leaf.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/handle.h"
#include "base/log.h"
#include "core/trace.h"
#include "p2p/p2p.h"
#include "world/world.h"

/* ---- batches and parts ---------------------------------------------------------------------- */

typedef struct mg__wbatch mg__wbatch_t;

typedef struct {
  mg__item_t item;
  mg__wbatch_t *b;
  int rank;
  int first, count;       /* its operations: b->ops[first .. first + count) */
  mg__mark_t mark;        /* their completion on the rank's stream */
  const mg__backend_t *be; /* the mark's backend: its release may come after the communicator
                              is gone (a host function signalled after a rebuild destroyed it) */
  atomic_int done;        /* 1 once the part has completed */
} mg__wpart_t;

/* What a world call is, kept as its parts and formatted only for a message. */
typedef struct {
  const char *fn;         /* "mg_world_all_reduce" (static storage) */
  mg__opkind_t kind;
  mg_dtype_t dtype;
  size_t count;
  int rank, peer;         /* send/recv: the rank and its peer */
  int nops;               /* a world group: its number of operations (fn etc.: the first) */
} mg__wwhat_t;

static void mg__wwhat_format(const mg__wwhat_t *w, char *buf, size_t len) {
  const char *dt = mg_dtype_name(w->dtype) ? mg_dtype_name(w->dtype) : "?";
  char one[128];
  if (w->kind == MG_OPK_SEND || w->kind == MG_OPK_RECV)
    snprintf(one, sizeof one, "%s (rank %d %s rank %d, %s x %zu)", w->fn, w->rank,
             w->kind == MG_OPK_SEND ? "to" : "from", w->peer, dt, w->count);
  else
    snprintf(one, sizeof one, "%s (%s x %zu)", w->fn, dt, w->count);
  if (w->nops > 1)
    snprintf(buf, len, "world group of %d operations (first: %s)", w->nops, one);
  else
    snprintf(buf, len, "%s", one);
}

struct mg__wbatch {
  atomic_int refs;        /* 1 for the parts together (until the last is done) + 1 for req */
  mg__wwhat_t what;
  mg_world_t *w;          /* alive while parts run (destroy stops the workers first) */
  uint64_t gen;
  mg_request_t *req;      /* the batch's reference, dropped when the last part is done */
  atomic_int left;        /* parts not done */
  pthread_mutex_t lock;   /* leaf: the first error */
  mg_status_t err;
  char *errmsg;           /* "rank N: ..." */
  int nparts, nops;
  mg__op_t *ops;          /* [nops], grouped by rank, in submission order within a rank */
  struct mg_buf **bufs;   /* [nops]: the mgcomm buffer ops[i] writes (a reference and a pending
                             write, src/p2p/buf.c), until its part enqueued it; NULL: none */
  mg__wpart_t *parts;     /* [nparts] */
};

/* Ends the pending writes of ops [first, first + count) of b: each is recorded as its buffer's
 * last writer when enqueued is 1 (on the op's stream), and nothing is when it is 0. The first
 * record's error (message set), or MG_OK. */
static mg_status_t mg__wbufs_end(mg__wbatch_t *b, int first, int count, int enqueued) {
  mg_status_t first_err = MG_OK;
  for (int i = first; i < first + count; i++) {
    if (b->bufs[i] == NULL) continue;
    mg_status_t st = mg__buf_write_end(b->bufs[i], b->ops[i].stream, enqueued, b->what.fn);
    if (st < 0 && first_err == MG_OK) first_err = st;
    mg__buf_unref(b->bufs[i]);
    b->bufs[i] = NULL;
  }
  return first_err;
}

static void mg__wbatch_unref(mg__wbatch_t *b) {
  if (atomic_fetch_sub(&b->refs, 1) != 1) return;
  (void)mg__wbufs_end(b, 0, b->nops, 0); /* parts that never ran: nothing was written */
  for (int i = 0; i < b->nops; i++) mg__op_release(&b->ops[i]); /* parts that never ran */
  pthread_mutex_destroy(&b->lock);
  free(b->errmsg);
  free(b);
}

/* A part is done: record its error; the last part completes the request. */
static void mg__wpart_done(mg__wpart_t *p, mg_status_t st, const char *msg) {
  mg__wbatch_t *b = p->b;
  mg_world_t *w = b->w; /* not used once inflight is decremented: the world may go */
  if (st < 0) {
    char full[MG__ERROR_LEN];
    snprintf(full, sizeof full, "rank %d: %s", p->rank, msg != NULL ? msg : mg_status_string(st));
    /* A part of an older generation (signalled late) says nothing about the current one. */
    if (atomic_load(&w->gen->current) == b->gen) mg__world_part_failed(w, st, full);
    pthread_mutex_lock(&b->lock);
    if (mg__world_cause(b->err, st)) {
      b->err = st;
      free(b->errmsg);
      b->errmsg = strdup(full); /* NULL: the status goes without its message */
    }
    pthread_mutex_unlock(&b->lock);
  }
  atomic_store(&p->done, 1);
  atomic_fetch_sub(&w->inflight, 1);
  if (atomic_fetch_sub(&b->left, 1) != 1) return;
  mg__request_complete(b->req, b->err, b->errmsg, mg__on_library_thread());
  mg__request_unref(b->req);
  mg__wbatch_unref(b);
}

/* The mark after the part's operations was reached (inline on the host backend). */
static void mg__wpart_signalled(mg__mark_t *mark, mg_status_t st, const char *msg) {
  mg__wpart_t *p = mark->owner;
  mg__wbatch_t *b = p->b;
  const mg__backend_t *be = p->be; /* mark->comm may be gone (see mg__wpart_t) */
  atomic_fetch_add(&b->refs, 1); /* the mark lives in the batch: keep it until released */
  mg__wpart_done(p, st, msg);
  be->mark_release(mark);
  mg__wbatch_unref(b);
}

/* On rank p->rank's worker. */
static void mg__wpart_run(mg__item_t *it) {
  mg__wpart_t *p = (mg__wpart_t *)it;
  mg__wbatch_t *b = p->b;
  mg_world_t *w = b->w;
  mg_comm_t *comm = w->comms[p->rank]; /* this thread is the only writer of its slot */
  if (comm == NULL || atomic_load(&w->gen->current) != b->gen) {
    (void)mg__wbufs_end(b, p->first, p->count, 0);
    mg__wpart_done(p, MG_ERR_ABORTED, "the world was aborted or rebuilt before this part ran");
    return;
  }
  mg__log_set_rank(p->rank);
  mg_status_t st;
  if (p->count == 1) {
    st = mg__post_checked(&b->ops[p->first], "world");
  } else {
    st = mg_group_begin();
    for (int i = 0; i < p->count; i++) /* inside a group an error is kept for the end */
      (void)mg__post_checked(&b->ops[p->first + i], "world");
    st = mg_group_end();
  }
  for (int i = 0; i < p->count; i++) b->ops[p->first + i].v_kept = NULL; /* posted: it owned it */
  /* Enqueued: the buffers they write record them as their last writer (a failure records
   * nothing). An error of the record fails the part, as a failed mark would. */
  const mg_status_t rec = mg__wbufs_end(b, p->first, p->count, st >= 0);
  if (st >= 0 && rec < 0) st = rec;
  if (st < 0) {
    mg__wpart_done(p, st, mg_last_error());
    return;
  }
  memset(&p->mark, 0, sizeof p->mark);
  p->mark.comm = comm;
  p->mark.stream = b->ops[p->first].stream; /* every operation of the part is on it */
  p->mark.owner = p;
  p->mark.on_signal = mg__wpart_signalled;
  p->be = comm->backend;
  st = comm->backend->mark_record(&p->mark);
  if (st < 0) {
    mg__wpart_done(p, st, mg_last_error());
    return;
  }
  st = comm->backend->mark_notify(&p->mark); /* signals, maybe at once */
  if (st < 0) { /* nothing armed: the mark is ours to release */
    char msg[MG__ERROR_LEN];
    mg_last_error_copy(msg, sizeof msg);
    comm->backend->mark_release(&p->mark);
    mg__wpart_done(p, st, msg);
  }
}

/* Describes what a timed-out batch still waits for, and aborts the world when abort is 1. */
typedef struct {
  mg__wbatch_t *b;
  int abort;
  char *buf;
  size_t len;
} mg__wexp_t;

static void mg__wbatch_expire_world(void *wp, void *arg) {
  mg_world_t *w = wp;
  mg__wexp_t *x = arg;
  pthread_mutex_lock(&w->lock);
  if (x->abort) {
    int now = w->state == MG__WORLD_READY || w->state == MG__WORLD_ERROR;
    if (now) w->state = MG__WORLD_ABORTED;
    pthread_mutex_unlock(&w->lock);
    if (!now) return;
    /* As mg_world_abort: the requests end before the communicators do. */
    mg__wd_abort(NULL, w->gen, UINT64_MAX, "the world was aborted after a request timed out");
    pthread_mutex_lock(&w->lock);
    mg__world_abort_comms(w);
    pthread_mutex_unlock(&w->lock);
    return;
  }
  size_t o = 0;
  int first = 1;
  for (int i = 0; i < x->b->nparts && o + 64 < x->len; i++) {
    const mg__wpart_t *p = &x->b->parts[i];
    if (atomic_load(&p->done)) continue;
    mg_comm_t *comm = w->comms[p->rank];
    char where[512] = "its communicator is gone";
    if (comm != NULL) mg__trace_describe(comm, where, sizeof where);
    int n = snprintf(x->buf + o, x->len - o, "%srank %d has not completed its part (%s)",
                     first ? "" : "; ", p->rank, where);
    if (n > 0) o += (size_t)n;
    first = 0;
  }
  pthread_mutex_unlock(&w->lock);
}

static void mg__wbatch_expire(void *ctx, int abort, char *buf, size_t len) {
  mg__wbatch_t *b = ctx;
  mg__wexp_t x = {b, abort, buf, len};
  if (buf != NULL) snprintf(buf, len, "its world was destroyed");
  (void)mg__handle_with(b->w, MG__HANDLE_WORLD, mg__wbatch_expire_world, &x); /* gone: as set */
}

static void mg__wbatch_release(void *ctx) { mg__wbatch_unref(ctx); }

static void mg__wbatch_what(const void *ctx, char *buf, size_t len) {
  mg__wwhat_format(&((const mg__wbatch_t *)ctx)->what, buf, len);
}

const mg__req_owner_ops_t mg__wbatch_ops = {mg__wbatch_what, mg__wbatch_expire,
                                            mg__wbatch_release, NULL, NULL};

/* ---- submission ------------------------------------------------------------------------------ */

/* One rank's operation of a world call, before validation: the single-rank call's arguments. */
typedef struct {
  int rank;
  mg__op_t op;          /* comm unset; v NULL */
  const size_t *v_in[4];
} mg__wop_t;

/* The thread's world group. */
typedef struct {
  mg_world_t *w;
  int depth;
  mg__op_t *ops;        /* validated, with their ranks in rank_of */
  int *rank_of;
  int n, cap;
  mg_status_t err;      /* first error inside the group */
  char errmsg[MG__ERROR_LEN];
  mg__wwhat_t what;     /* the first operation, for the request */
} mg__wgroup_t;

static _Thread_local mg__wgroup_t mg__wg;

static mg_status_t mg__wg_note(mg_status_t st) {
  if (mg__wg.depth > 0 && mg__wg.err == MG_OK) {
    mg__wg.err = st;
    mg_last_error_copy(mg__wg.errmsg, sizeof mg__wg.errmsg);
  }
  return st;
}

static void mg__wg_clear(void) {
  for (int i = 0; i < mg__wg.n; i++) mg__op_release(&mg__wg.ops[i]);
  free(mg__wg.ops);
  free(mg__wg.rank_of);
  mg__wg.ops = NULL;
  mg__wg.rank_of = NULL;
  mg__wg.n = mg__wg.cap = 0;
  mg__wg.err = MG_OK;
  mg__wg.w = NULL;
}

/* Validates wops[0..n) against the current communicators (the caller holds w->lock), writing
 * the validated ops to out[0..n) (each with its own all_to_allv arrays). On error every op made
 * is released. */
static mg_status_t mg__wvalidate(mg_world_t *w, mg__wop_t *wops, int n, mg__op_t *out,
                                 const char *fn) {
  for (int i = 0; i < n; i++) {
    const int r = wops[i].rank;
    mg__op_t *op = &out[i];
    *op = wops[i].op;
    op->comm = w->comms[r];
    op->stream = w->streams[r];
    mg_status_t st = mg__op_validate(op, wops[i].v_in, fn);
    if (st >= 0) st = op->comm->backend->check_op(op, fn);
    if (st >= 0) st = mg__op_keep(op, fn); /* it runs on the rank's worker */
    if (st < 0) {
      for (int k = 0; k <= i; k++) mg__op_release(&out[k]);
      /* "fn: what" becomes "fn: rank r: what" (formatted only on this path). */
      char msg[MG__ERROR_LEN];
      mg_last_error_copy(msg, sizeof msg);
      size_t skip = strncmp(msg, fn, strlen(fn)) == 0 && msg[strlen(fn)] == ':' ? strlen(fn) + 2 : 0;
      return mg__error(st, "%s: rank %d: %s", fn, r, msg + skip);
    }
  }
  return MG_OK;
}

/* MG_OK when w accepts operations now (the caller holds w->lock). */
static mg_status_t mg__wready(const mg_world_t *w, const char *fn) {
  switch (w->state) {
    case MG__WORLD_READY: return MG_OK;
    case MG__WORLD_ERROR:
      return mg__error(MG_ERR_INVALID_USAGE,
                       "%s: the world is in the error state after %s (%s); rebuild it", fn,
                       mg_status_name(w->error), w->errmsg);
    case MG__WORLD_ABORTED:
      return mg__error(MG_ERR_INVALID_USAGE, "%s: the world was aborted; rebuild or destroy it",
                       fn);
    default:
      return mg__error(MG_ERR_INVALID_USAGE, "%s: the world is being rebuilt or destroyed", fn);
  }
}

/* Makes the batch of ops[0..n) (validated; rank_of[i] is the rank of ops[i]), with a request
 * listed with the watchdog; nothing is sent yet. The batch's copies of the ops share their `v`:
 * once the batch is sent it owns them. */
static mg__wbatch_t *mg__wbatch_new(mg_world_t *w, const mg__op_t *ops, const int *rank_of,
                                    int n, const mg__wwhat_t *what, const char *fn) {
  int nparts = 0;
  for (int r = 0; r < w->n; r++) {
    int has = 0;
    for (int i = 0; i < n && !has; i++) has = rank_of[i] == r;
    nparts += has;
  }
  /* One block: the batch, its parts (whose marks want 16-byte alignment), its ops. */
  const size_t a = _Alignof(mg__wpart_t);
  const size_t parts_off = (sizeof(mg__wbatch_t) + a - 1) / a * a;
  const size_t ops_off = parts_off + sizeof(mg__wpart_t) * (size_t)nparts;
  const size_t bufs_off = ops_off + sizeof(mg__op_t) * (size_t)n;
  mg__wbatch_t *b = calloc(1, bufs_off + sizeof(struct mg_buf *) * (size_t)n);
  if (b == NULL) {
    mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  b->parts = (mg__wpart_t *)((char *)b + parts_off);
  b->ops = (mg__op_t *)((char *)b + ops_off);
  b->bufs = (struct mg_buf **)((char *)b + bufs_off);
  b->nops = n;
  b->nparts = nparts;
  b->w = w;
  pthread_mutex_init(&b->lock, NULL);
  atomic_init(&b->refs, 2);
  atomic_init(&b->left, nparts);
  int k = 0, pi = 0;
  for (int r = 0; r < w->n; r++) {
    int first = k;
    for (int i = 0; i < n; i++)
      if (rank_of[i] == r) b->ops[k++] = ops[i];
    if (k == first) continue;
    mg__wpart_t *p = &b->parts[pi++];
    p->item.run = mg__wpart_run;
    p->b = b;
    p->rank = r;
    p->first = first;
    p->count = k - first;
    atomic_init(&p->done, 0);
  }
  b->gen = atomic_load(&w->gen->current);
  b->req = mg__request_new(MG__REQ_WORLD, mg__now() + w->timeout_s, w->on_timeout, fn);
  if (b->req == NULL) {
    pthread_mutex_destroy(&b->lock);
    free(b);
    return NULL;
  }
  b->what = *what;
  mg_request_t *req = b->req;
  req->gen_src = w->gen;
  atomic_fetch_add(&w->gen->refs, 1);
  req->gen = b->gen;
  req->wowner = w;
  req->oops = &mg__wbatch_ops;
  req->octx = b;
  mg__request_ref(req); /* the batch's, dropped by the last part */
  (void)mg__wd_add(req, NULL); /* no comm: never refused */
  /* From here a reader of a buffer that an op writes waits until its part has enqueued it. */
  for (int i = 0; i < n; i++) {
    const mg__op_t *op = &b->ops[i];
    b->bufs[i] = op->recv != NULL && op->recv_bytes > 0 ? mg__buf_find(op->recv) : NULL;
    if (b->bufs[i] != NULL) mg__buf_write_begin(b->bufs[i]);
  }
  return b;
}

/* Undoes mg__wbatch_new for a batch that was never sent; the caller's ops keep their `v`. */
static void mg__wbatch_discard(mg__wbatch_t *b) {
  (void)mg__wbufs_end(b, 0, b->nops, 0);
  b->nops = 0;
  mg__wd_remove(b->req);
  mg_request_t *req = b->req;
  req->oops = NULL; /* the batch goes here, not through the request */
  mg__request_discard(req);
  pthread_mutex_destroy(&b->lock);
  free(b);
}

/* Sends a batch made of ops[0..n) (validated under w->lock, which the caller holds and which
 * this releases) and returns its request. */
static mg_status_t mg__wsend(mg_world_t *w, mg__op_t *ops, const int *rank_of, int n,
                             const mg__wwhat_t *what, const char *fn, mg_request_t **out) {
  pthread_mutex_unlock(&w->lock);
  /* The request is made outside the world's lock (the registry comes first, see world.h). */
  mg__wbatch_t *b = mg__wbatch_new(w, ops, rank_of, n, what, fn);
  if (b == NULL) {
    for (int i = 0; i < n; i++) mg__op_release(&ops[i]);
    return MG_ERR_OUT_OF_MEMORY;
  }
  pthread_mutex_lock(&w->lock);
  mg_status_t st = mg__wready(w, fn);
  if (st == MG_OK && atomic_load(&w->gen->current) != b->gen)
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: the world was rebuilt meanwhile", fn);
  if (st < 0) {
    pthread_mutex_unlock(&w->lock);
    mg__wbatch_discard(b);
    for (int i = 0; i < n; i++) mg__op_release(&ops[i]);
    return st;
  }
  mg_request_t *req = b->req;
  w->submitted++;
  /* One order on every worker: all parts go out under the world's lock. */
  atomic_fetch_add(&w->inflight, b->nparts);
  for (int i = 0; i < b->nparts; i++) mg__worker_push(w->workers[b->parts[i].rank], &b->parts[i].item);
  pthread_mutex_unlock(&w->lock);
  *out = req;
  return MG_OK;
}

static mg_status_t mg__world_check_live(mg_world_t *w, const char *fn) {
  if (w == NULL) return mg__error(MG_ERR_INVALID_USAGE, "%s: world is NULL", fn);
  if (!mg__handle_valid(w, MG__HANDLE_WORLD))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: world %p is not a live world (destroyed, or not a world)", fn, (void *)w);
  return MG_OK;
}

/* Validates and sends (or, inside a world group, records) the world call wops[0..n). */
static mg_status_t mg__wsubmit(mg_world_t *w, mg__wop_t *wops, int n, const char *fn,
                               const mg__wwhat_t *what, mg_request_t **req) {
  mg_status_t st = MG_OK; /* the caller checked the handle */
  const int grouped = mg__wg.depth > 0;
  if (st == MG_OK && grouped && mg__wg.w != w)
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: the calling thread is in a group of another world", fn);
  if (st == MG_OK && grouped && req != NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: req must be NULL inside a world group (the group "
                   "end makes the request)", fn);
  if (st == MG_OK && !grouped && req == NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: req is NULL", fn);
  for (int i = 0; i < n && st == MG_OK; i++)
    if (wops[i].op.kind != MG_OPK_ALL_REDUCE && wops[i].op.kind != MG_OPK_REDUCE &&
        wops[i].op.kind != MG_OPK_REDUCE_SCATTER)
      continue;
    else if ((unsigned)wops[i].op.redop.op >= MG_OP_BUILTIN_COUNT)
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: op %d is not a built-in reduction (custom ops "
                     "belong to one communicator)", fn, (int)wops[i].op.redop.op);
  if (st < 0) return mg__wg_note(st);
  mg__op_t one[8];
  int rk[8];
  mg__op_t *ops = n <= 8 ? one : malloc(sizeof *ops * (size_t)n);
  int *rank_of = n <= 8 ? rk : malloc(sizeof *rank_of * (size_t)n);
  if (ops == NULL || rank_of == NULL) {
    if (ops != one) free(ops);
    if (rank_of != rk) free(rank_of);
    return mg__wg_note(mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn));
  }
  for (int i = 0; i < n; i++) rank_of[i] = wops[i].rank;
  pthread_mutex_lock(&w->lock);
  st = mg__wready(w, fn);
  if (st == MG_OK) st = mg__wvalidate(w, wops, n, ops, fn);
  if (st < 0) {
    pthread_mutex_unlock(&w->lock);
  } else if (!grouped) {
    st = mg__wsend(w, ops, rank_of, n, what, fn, req); /* releases the lock */
  } else {
    pthread_mutex_unlock(&w->lock);
    if (mg__wg.n + n > mg__wg.cap) {
      int cap = mg__wg.cap ? 2 * mg__wg.cap : 16;
      while (cap < mg__wg.n + n) cap *= 2;
      mg__op_t *nops = realloc(mg__wg.ops, sizeof *nops * (size_t)cap);
      if (nops != NULL) mg__wg.ops = nops;
      int *nr = realloc(mg__wg.rank_of, sizeof *nr * (size_t)cap);
      if (nr != NULL) mg__wg.rank_of = nr;
      if (nops == NULL || nr == NULL) {
        for (int i = 0; i < n; i++) mg__op_release(&ops[i]);
        st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
      } else {
        mg__wg.cap = cap;
      }
    }
    if (st == MG_OK) {
      if (mg__wg.n == 0) mg__wg.what = *what;
      memcpy(mg__wg.ops + mg__wg.n, ops, sizeof *ops * (size_t)n);
      memcpy(mg__wg.rank_of + mg__wg.n, rank_of, sizeof *rank_of * (size_t)n);
      mg__wg.n += n;
    }
  }
  if (ops != one) free(ops);
  if (rank_of != rk) free(rank_of);
  return st < 0 ? mg__wg_note(st) : st;
}

/* ---- world groups ----------------------------------------------------------------------------- */

mg_status_t mg_world_group_begin(mg_world_t *w) {
  static const char fn[] = "mg_world_group_begin";
  MG_CHECK(mg__world_check_live(w, fn));
  if (mg__wg.depth > 0 && mg__wg.w != w)
    return mg__error(MG_ERR_INVALID_USAGE, "%s: the calling thread is in a group of another "
                     "world", fn);
  if (mg__wg.depth == 0) {
    mg__wg.w = w;
    mg__wg.err = MG_OK;
    mg__wg.n = 0;
  }
  mg__wg.depth++;
  return MG_OK;
}

mg_status_t mg_world_group_end(mg_world_t *w, mg_request_t **req) {
  static const char fn[] = "mg_world_group_end";
  if (mg__wg.depth == 0)
    return mg__error(MG_ERR_INVALID_USAGE, "%s: no world group is open on this thread", fn);
  if (mg__wg.w != w)
    return mg__error(MG_ERR_INVALID_USAGE, "%s: the open group is of another world", fn);
  if (--mg__wg.depth > 0) return MG_OK;
  mg_status_t st = mg__wg.err;
  if (st < 0) {
    mg__error(st, "%s: nothing was sent; the group's first error was: %s", fn, mg__wg.errmsg);
  } else if (req == NULL) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: req is NULL (the group is discarded)", fn);
  } else if (mg__wg.n == 0) {
    st = mg__request_done(MG__REQ_WORLD, w->on_timeout, req, fn);
  } else {
    mg__wwhat_t what = mg__wg.what;
    what.nops = mg__wg.n;
    st = mg__world_check_live(w, fn);
    if (st == MG_OK) {
      pthread_mutex_lock(&w->lock);
      st = mg__wready(w, fn);
      /* Validated against the communicators of the generation they were recorded in. */
      for (int i = 0; i < mg__wg.n && st == MG_OK; i++)
        if (mg__wg.ops[i].comm != w->comms[mg__wg.rank_of[i]])
          st = mg__error(MG_ERR_INVALID_USAGE, "%s: the world was rebuilt during the group", fn);
      if (st == MG_OK) {
        st = mg__wsend(w, mg__wg.ops, mg__wg.rank_of, mg__wg.n, &what, fn, req);
        mg__wg.n = 0; /* sent or released by mg__wsend */
      } else {
        pthread_mutex_unlock(&w->lock);
      }
    }
  }
  mg__wg_clear();
  return st;
}

/* ---- the operations --------------------------------------------------------------------------- */

#define MG__WOP(kind_, send_, recv_, count_, dtype_, redop_, root_)                                \
  (mg__op_t) {                                                                                     \
    .kind = (kind_), .send = (send_), .recv = (recv_), .count = (count_), .dtype = (dtype_),       \
    .redop = {.op = (redop_)}, .root = (root_)                                                     \
  }

/* A world call of one operation on every rank: send[r] and recv[r] for rank r. */
static mg_status_t mg__wall(mg_world_t *w, const char *fn, mg__opkind_t kind,
                            const void *const *send, void *const *recv, size_t count,
                            mg_dtype_t dtype, mg_op_t op, int root,
                            const size_t *const *v[4], mg_request_t **req) {
  MG_CHECK(mg__wg_note(mg__world_check_live(w, fn)));
  if (send == NULL || recv == NULL)
    return mg__wg_note(mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL (an array of %d "
                                 "pointers, one per rank)", fn, send == NULL ? "send" : "recv",
                                 w->n));
  for (int i = 0; v != NULL && i < 4; i++)
    if (v[i] == NULL)
      return mg__wg_note(mg__error(MG_ERR_INVALID_ARGUMENT, "%s: a counts or displacements "
                                   "array is NULL", fn));
  mg__wop_t one[8];
  mg__wop_t *wops = w->n <= 8 ? one : calloc((size_t)w->n, sizeof *wops);
  if (wops == NULL) return mg__wg_note(mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn));
  for (int r = 0; r < w->n; r++) {
    wops[r].rank = r;
    wops[r].op = MG__WOP(kind, send[r], recv[r], count, dtype, op, root);
    for (int i = 0; i < 4; i++) wops[r].v_in[i] = v != NULL ? v[i][r] : NULL;
  }
  const mg__wwhat_t what = {fn, kind, dtype, count, -1, -1, 1};
  mg_status_t st = mg__wsubmit(w, wops, w->n, fn, &what, req);
  if (wops != one) free(wops);
  return st;
}

mg_status_t mg_world_all_reduce(mg_world_t *w, const void *const *send, void *const *recv,
                                size_t count, mg_dtype_t dtype, mg_op_t op, mg_request_t **req) {
  return mg__wall(w, "mg_world_all_reduce", MG_OPK_ALL_REDUCE, send, recv, count, dtype, op, -1,
                  NULL, req);
}

mg_status_t mg_world_broadcast(mg_world_t *w, const void *const *send, void *const *recv,
                               size_t count, mg_dtype_t dtype, int root, mg_request_t **req) {
  return mg__wall(w, "mg_world_broadcast", MG_OPK_BROADCAST, send, recv, count, dtype, MG_SUM,
                  root, NULL, req);
}

mg_status_t mg_world_reduce(mg_world_t *w, const void *const *send, void *const *recv,
                            size_t count, mg_dtype_t dtype, mg_op_t op, int root,
                            mg_request_t **req) {
  return mg__wall(w, "mg_world_reduce", MG_OPK_REDUCE, send, recv, count, dtype, op, root, NULL,
                  req);
}

mg_status_t mg_world_all_gather(mg_world_t *w, const void *const *send, void *const *recv,
                                size_t sendcount, mg_dtype_t dtype, mg_request_t **req) {
  return mg__wall(w, "mg_world_all_gather", MG_OPK_ALL_GATHER, send, recv, sendcount, dtype,
                  MG_SUM, -1, NULL, req);
}

mg_status_t mg_world_reduce_scatter(mg_world_t *w, const void *const *send, void *const *recv,
                                    size_t recvcount, mg_dtype_t dtype, mg_op_t op,
                                    mg_request_t **req) {
  return mg__wall(w, "mg_world_reduce_scatter", MG_OPK_REDUCE_SCATTER, send, recv, recvcount,
                  dtype, op, -1, NULL, req);
}

mg_status_t mg_world_all_to_all(mg_world_t *w, const void *const *send, void *const *recv,
                                size_t count, mg_dtype_t dtype, mg_request_t **req) {
  return mg__wall(w, "mg_world_all_to_all", MG_OPK_ALL_TO_ALL, send, recv, count, dtype, MG_SUM,
                  -1, NULL, req);
}

mg_status_t mg_world_all_to_allv(mg_world_t *w, const void *const *send,
                                 const size_t *const *sendcounts, const size_t *const *sdispls,
                                 void *const *recv, const size_t *const *recvcounts,
                                 const size_t *const *rdispls, mg_dtype_t dtype,
                                 mg_request_t **req) {
  const size_t *const *v[4] = {sendcounts, sdispls, recvcounts, rdispls};
  return mg__wall(w, "mg_world_all_to_allv", MG_OPK_ALL_TO_ALLV, send, recv, 0, dtype, MG_SUM,
                  -1, v, req);
}

mg_status_t mg_world_gather(mg_world_t *w, const void *const *send, void *const *recv,
                            size_t count, mg_dtype_t dtype, int root, mg_request_t **req) {
  return mg__wall(w, "mg_world_gather", MG_OPK_GATHER, send, recv, count, dtype, MG_SUM, root,
                  NULL, req);
}

mg_status_t mg_world_scatter(mg_world_t *w, const void *const *send, void *const *recv,
                             size_t count, mg_dtype_t dtype, int root, mg_request_t **req) {
  return mg__wall(w, "mg_world_scatter", MG_OPK_SCATTER, send, recv, count, dtype, MG_SUM, root,
                  NULL, req);
}

/* A point-to-point world call: one operation, on rank `rank` only. */
static mg_status_t mg__wp2p(mg_world_t *w, const char *fn, mg__opkind_t kind, int rank,
                            const void *send, void *recv, size_t count, mg_dtype_t dtype,
                            int peer, mg_request_t **req) {
  MG_CHECK(mg__wg_note(mg__world_check_live(w, fn)));
  if (rank < 0 || rank >= w->n)
    return mg__wg_note(mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d is out of [0, %d)", fn,
                                 rank, w->n));
  mg__wop_t wop = {rank, MG__WOP(kind, send, recv, count, dtype, MG_SUM, peer), {NULL}};
  const mg__wwhat_t what = {fn, kind, dtype, count, rank, peer, 1};
  return mg__wsubmit(w, &wop, 1, fn, &what, req);
}

mg_status_t mg_world_send(mg_world_t *w, int rank, const void *send, size_t count,
                          mg_dtype_t dtype, int peer, mg_request_t **req) {
  return mg__wp2p(w, "mg_world_send", MG_OPK_SEND, rank, send, NULL, count, dtype, peer, req);
}

mg_status_t mg_world_recv(mg_world_t *w, int rank, void *recv, size_t count, mg_dtype_t dtype,
                          int peer, mg_request_t **req) {
  return mg__wp2p(w, "mg_world_recv", MG_OPK_RECV, rank, NULL, recv, count, dtype, peer, req);
}
