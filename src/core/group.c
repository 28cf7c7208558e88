/*
 * group.c -- posting operations: alone, or recorded in the calling thread's group and posted
 * together at the outermost mg_group_end. An operation on a host stream is numbered and queued
 * for its communicator's worker (stream.c), which runs it through the same launch below.
 *
 * A failed call inside a group records the first error; mg_group_end then posts nothing and
 * returns that error with its message, so a group is never half posted.
 *
 * Lock order: mg__launch locks the communicators of a batch in increasing address order, then
 * (per operation) its comm's seq_lock, then the flight recorder's lock.
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "core/collcheck.h"
#include "core/comm.h"
#include "base/log.h"
#include "core/op.h"
#include "core/stream.h"
#include "core/trace.h"

/* Operations a group records without the heap: a send and a receive, a few collectives. malloc
 * and free per operation and per group were ~20% of the instructions of a 2-rank sendrecv. */
enum { MG__GROUP_INLINE = 4 };

typedef struct {
  int depth;                    /* nesting of mg_group_begin */
  mg__op_t **ops;               /* recorded operations: inline_ptrs, or a heap array past it */
  int n, cap;
  mg__op_t *inline_ptrs[MG__GROUP_INLINE];
  mg__op_t inline_ops[MG__GROUP_INLINE]; /* copies of the first operations; the rest are on the
                                            heap */
  mg_status_t err;              /* first error raised inside the group, MG_OK if none */
  char errmsg[MG__ERROR_LEN];   /* its message */
} mg__group_t;

static _Thread_local mg__group_t mg__grp;

static mg_status_t mg__group_note(mg_status_t st) {
  if (mg__grp.depth > 0 && mg__grp.err == MG_OK) {
    mg__grp.err = st;
    mg_last_error_copy(mg__grp.errmsg, sizeof mg__grp.errmsg);
  }
  return st;
}

static int mg__ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (mg_comm_t *const *)a, y = (uintptr_t) * (mg_comm_t *const *)b;
  return (x > y) - (x < y);
}

void mg__op_number(mg__op_t *op, int started, double now) {
  mg_comm_t *c = op->comm;
  if (mg__opkind_is_collective(op->kind)) {
    op->seq = c->coll_seq++;
    if (c->backend->caps & MG__CAP_PROGRESS) c->backend->op_enqueued(op);
  } else {
    op->seq = c->p2p_seq[2 * (size_t)op->root + (op->kind == MG_OPK_RECV)]++;
  }
  mg__trace_enqueue(op, started, now);
}

/* The distinct communicators of ops[0..n), n > 1, in increasing address order (the lock order)
 * into a new array *out; their number, or -1 when memory runs out. */
static int mg__launch_comms(mg__op_t **ops, int n, mg_comm_t ***out) {
  mg_comm_t **comms = malloc(sizeof *comms * (unsigned)n);
  if (comms == NULL) return -1;
  for (int i = 0; i < n; i++) comms[i] = ops[i]->comm;
  qsort(comms, (size_t)n, sizeof *comms, mg__ptr_cmp);
  int nc = 0;
  for (int i = 0; i < n; i++)
    if (nc == 0 || comms[nc - 1] != comms[i]) comms[nc++] = comms[i];
  *out = comms;
  return nc;
}

/* Hands ops[0..n) to their backends: one launch per backend, keeping the order of the
 * operations. The first failure is returned. */
static mg_status_t mg__launch_by_backend(mg__op_t **ops, int n) {
  int one = 1; /* the usual case: one backend (one communicator), launched as it is */
  for (int i = 1; i < n && one; i++) one = ops[i]->comm->backend == ops[0]->comm->backend;
  if (one) return ops[0]->comm->backend->launch(ops, n);
  mg__op_t **batch = malloc(sizeof *batch * (unsigned)n);
  if (batch == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "mg_group_end: out of memory");
  mg_status_t st = MG_OK;
  for (int i = 0; i < n; i++) {
    const mg__backend_t *be = ops[i]->comm->backend;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = ops[j]->comm->backend == be;
    if (seen) continue;
    int k = 0;
    for (int j = i; j < n; j++)
      if (ops[j]->comm->backend == be) batch[k++] = ops[j];
    mg_status_t bst = be->launch(batch, k);
    if (bst < 0 && st == MG_OK) st = bst;
  }
  free(batch);
  return st;
}

/* The end of a launch in which an operation timed out: snapshots of the flight recorder of each
 * communicator with such an operation (one per communicator, 8 at most), taken under the
 * communicators' locks; then comms[0..nc) are unlocked, and the snapshots written into
 * MGCOMM_TRACE_DIR holding no lock, keeping the calling thread's message (that of st). */
static void mg__launch_timed_out(mg__op_t **ops, int n,
                                                                 mg_comm_t **comms, int nc,
                                                                 mg_status_t st) {
  mg__trace_snap_t *snaps[8];
  int nsnaps = 0;
  for (int i = 0; i < n && nsnaps < 8; i++) {
    int first = ops[i]->status == MG_ERR_TIMED_OUT;
    for (int j = 0; j < i && first; j++) first = ops[j]->comm != ops[i]->comm || ops[j]->status != MG_ERR_TIMED_OUT;
    if (!first) continue;
    snaps[nsnaps] = mg__trace_autodump_snap(ops[i]->comm);
    nsnaps += snaps[nsnaps] != NULL;
  }
  for (int i = nc - 1; i >= 0; i--) mg__comm_unlock(comms[i]);
  if (nsnaps == 0) return;
  char keep[MG__ERROR_LEN]; /* writing the dumps must not replace the operation's message */
  mg_last_error_copy(keep, sizeof keep);
  for (int i = 0; i < nsnaps; i++) mg__trace_autodump_write(snaps[i]);
  mg__error(st, "%s", keep);
}

/* Posts ops[0..n) as one batch: locks their communicators, numbers the operations (unless a host
 * stream numbered them when they were queued: `numbered`), checks the collectives of
 * communicators made with MGCOMM_CHECK_COLLECTIVES=1 (collcheck.c), hands them to their
 * backends, records failures on the communicators and in the flight recorder, and dumps the
 * recorder of a communicator whose operation timed out into MGCOMM_TRACE_DIR (snapshots taken
 * under the locks, written after). */
static mg_status_t mg__launch(mg__op_t **ops, int n, int numbered) {
  if (n == 0) return MG_OK;
  mg_comm_t *one[1] = {ops[0]->comm};
  mg_comm_t **comms = one;
  int nc = 1;
  for (int i = 1; i < n && nc == 1; i++) nc += ops[i]->comm != ops[0]->comm;
  if (nc > 1 && (nc = mg__launch_comms(ops, n, &comms)) < 0)
    return mg__error(MG_ERR_OUT_OF_MEMORY, "mg_group_end: out of memory");
  for (int i = 0; i < nc; i++) pthread_mutex_lock(&comms[i]->lock);

  mg_status_t st = MG_OK;
  for (int i = 0; i < nc && st == MG_OK; i++) { /* an abort may have come since validation */
    if (numbered && atomic_load(&comms[i]->aborting))
      st = mg__error(MG_ERR_ABORTED, "%s on rank %d: the communicator was %s before the "
                     "operation ran", mg__opkind_name(ops[0]->kind), comms[i]->rank,
                     atomic_load(&comms[i]->aborting) == MG__STOP_REVOKE ? "revoked" : "aborted");
    else if (atomic_load(&comms[i]->state) != MG_COMM_READY)
      st = mg__comm_check_state(comms[i], mg__opkind_name(ops[0]->kind));
  }
  const int launched = st == MG_OK;
  if (launched) {
    const double now = mg__now_coarse(); /* clock.h: the recorder's and the deadline's time */
    int check = 0;
    for (int i = 0; i < n; i++) {
      mg__op_t *op = ops[i];
      mg_comm_t *c = op->comm;
      check |= c->check_colls;
      op->deadline = mg__deadline_coarse(now, c->timeout_s);
      op->status = MG_INPROGRESS;
      if (numbered) {
        mg__trace_start(op);
      } else if (c->worker == NULL) {
        /* No host stream can number on c (its worker is made under c->lock, which this thread
         * holds): c->lock guards the numbering alone (op.h). */
        mg__op_number(op, 1, now);
      } else {
        pthread_mutex_lock(&c->seq_lock);
        mg__op_number(op, 1, now);
        pthread_mutex_unlock(&c->seq_lock);
      }
    }
    if (check) st = mg__collcheck(ops, n); /* MGCOMM_CHECK_COLLECTIVES: refused on every rank */
    if (st == MG_OK) st = mg__launch_by_backend(ops, n);
  }
  int timed_out = 0;
  for (int i = 0; i < n; i++) {
    mg__op_t *op = ops[i];
    if (!launched) {
      if (numbered) { /* it was recorded when queued: it ends here */
        op->status = st;
        mg__trace_end(op);
      }
      continue;
    }
    const int ran = op->status != MG_INPROGRESS; /* its backend ended it */
    if (!ran && st < 0) op->status = st;          /* never launched */
    mg__trace_end(op);
    if (op->status < 0) {
      if (mg__comm_breaks(op->status, ran))
        mg__comm_fail(op->comm, op->status);
      else
        mg__comm_save_error(op->comm);
      timed_out |= op->status == MG_ERR_TIMED_OUT;
    }
  }
  if (timed_out)
    mg__launch_timed_out(ops, n, comms, nc, st);
  else
    for (int i = nc - 1; i >= 0; i--) mg__comm_unlock(comms[i]);
  if (comms != one) free(comms);
  return st;
}

mg_status_t mg__launch_numbered(mg__op_t **ops, int n) { return mg__launch(ops, n, 1); }

mg_status_t mg__op_stream(mg__op_t *op, const char *fn) {
  op->hstream = NULL;
  if (op->stream == NULL) return MG_OK;
  struct mg_stream *hs = mg__hstream_lookup(op->stream);
  if (hs == NULL) return MG_OK; /* a stream of the backend: its check_op judges it */
  if (mg__hstream_comm(hs) != op->comm)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: stream %p is a host stream of another communicator", fn,
                     (void *)op->stream);
  op->hstream = hs;
  return MG_OK;
}

/* Runs or queues ops[0..n) (outside a group, or at its end): those on host streams go to their
 * workers, the others run now; nothing is posted if memory runs out. */
static mg_status_t mg__dispatch(mg__op_t **ops, int n) {
  int ns = 0;
  for (int i = 0; i < n; i++) ns += ops[i]->hstream != NULL;
  if (ns == 0) return mg__launch(ops, n, 0);
  if (ns == n) return mg__stream_submit(ops, n);
  mg__op_t **split = malloc(sizeof *split * (unsigned)n);
  if (split == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "mg_group_end: out of memory");
  int a = 0, b = ns;
  for (int i = 0; i < n; i++) split[ops[i]->hstream != NULL ? a++ : b++] = ops[i];
  mg_status_t st = mg__stream_submit(split, ns);
  if (st == MG_OK) st = mg__launch(split + ns, n - ns, 0);
  free(split);
  return st;
}

/* mg__dispatch for the operations of a group, recorded while their communicators could still be
 * destroyed: each is entered (comm.h) for the launch, or nothing is posted. A run of operations
 * on one communicator (a send and a receive) enters it once. */
static mg_status_t mg__dispatch_entered(mg__op_t **ops, int n) {
  int entered = 0;
  while (entered < n && ((entered > 0 && ops[entered]->comm == ops[entered - 1]->comm) ||
                         mg__comm_hold(ops[entered]->comm)))
    entered++;
  mg_status_t st;
  if (entered < n)
    st = mg__error(MG_ERR_INVALID_USAGE,
                   "mg_group_end: nothing was posted; the communicator %p of operation %d of "
                   "the group (%s) was destroyed before the group ended",
                   (void *)ops[entered]->comm, entered, mg__opkind_name(ops[entered]->kind));
  else
    st = mg__dispatch(ops, n);
  for (int i = 0; i < entered; i++)
    if (i == 0 || ops[i]->comm != ops[i - 1]->comm) mg__comm_leave(ops[i]->comm);
  return st;
}

mg_status_t mg__post_refused(mg__op_t *op, mg_status_t st, int comm_live) {
  mg__op_release(op);
  if (comm_live) mg__comm_save_error(op->comm);
  return mg__group_note(st);
}

/* Room for more operations in g->ops (full): the inline array first, then the heap. 0, or -1
 * when memory runs out. */
static int mg__group_grow(mg__group_t *g) {
  if (g->cap == 0) {
    g->ops = g->inline_ptrs;
    g->cap = MG__GROUP_INLINE;
    return 0;
  }
  const int ncap = 2 * g->cap;
  const int inl = g->ops == g->inline_ptrs;
  mg__op_t **nops = inl ? malloc(sizeof *nops * (size_t)ncap)
                        : realloc(g->ops, sizeof *nops * (size_t)ncap);
  if (nops == NULL) return -1;
  if (inl) memcpy(nops, g->inline_ptrs, sizeof g->inline_ptrs);
  g->ops = nops;
  g->cap = ncap;
  return 0;
}

mg_status_t mg__post_checked(mg__op_t *op, const char *fn) {
  mg__group_t *g = &mg__grp;
  if (g->depth == 0) {
    mg__op_t *one = op;
    mg_status_t st = mg__dispatch(&one, 1);
    mg__op_release(op);
    return st;
  }
  mg__op_t *copy = NULL;
  mg_status_t st = mg__op_keep(op, fn); /* it runs at the group's end */
  if (st >= 0 && (g->n < g->cap || mg__group_grow(g) == 0))
    copy = g->n < MG__GROUP_INLINE ? &g->inline_ops[g->n] : malloc(sizeof *copy);
  if (copy == NULL) {
    mg__op_release(op);
    return mg__group_note(st < 0 ? st : mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn));
  }
  *copy = *op; /* takes over op->v_kept */
  g->ops[g->n++] = copy;
  return MG_OK;
}

mg_status_t mg_group_begin(void) {
  mg__group_t *g = &mg__grp;
  if (g->depth == 0) g->err = MG_OK;
  g->depth++;
  return MG_OK;
}

mg_status_t mg_group_end(void) {
  mg__group_t *g = &mg__grp;
  if (g->depth == 0)
    return mg__error(MG_ERR_INVALID_USAGE, "mg_group_end: no group is open on this thread");
  if (--g->depth > 0) return MG_OK;
  mg_status_t st = g->err;
  if (st < 0)
    mg__error(st, "mg_group_end: nothing was posted; the group's first error was: %s", g->errmsg);
  else
    st = mg__dispatch_entered(g->ops, g->n);
  for (int i = 0; i < g->n; i++) {
    mg__op_release(g->ops[i]);
    if (i >= MG__GROUP_INLINE) free(g->ops[i]);
  }
  /* Nothing stays behind: a thread may end right after its group (no destructor would run). */
  if (g->ops != g->inline_ptrs) free(g->ops);
  g->ops = NULL;
  g->n = g->cap = 0;
  g->err = MG_OK;
  return st;
}
