/*
 * sim_life.c -- the rest of a simulated communicator's life: split and shrink (a meeting of the
 * parent's participating ranks, whose last arrival makes the children), finalize, revoke, and
 * the two calls that free a communicator, ncclCommAbort and ncclCommDestroy, with the
 * use-after-free detector.
 *
 * Asynchronous work belongs to the parent (split, shrink) or the communicator (finalize,
 * revoke): on a nonblocking communicator the call returns ncclInProgress, a simulator thread
 * does the work, and the communicator reports ncclInProgress until it is done; on a blocking one
 * the call does it inline.
 *
 * The detector: NCCL frees a communicator in ncclCommAbort and ncclCommDestroy without waiting
 * for other threads that are inside a call on it; they then use freed memory. The simulator
 * counts those threads (sim_enter) and calls it a VIOLATION when the count is not 0, both when
 * the freeing call starts (deterministic: the other thread is there) and just before the free.
 *
 * Divisions: quiescing; split and shrink; finalize; revoke; abort and destroy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_nccl_int.h"

/* ---- quiescing ------------------------------------------------------------------------------ */

void sim_quiesce_locked(sim_comm_t *c, int own) {
  c->abort_epoch++;
  c->abort_flag = 1;
  pthread_cond_broadcast(&sim_cv);
  while (c->items > 0 || c->jobs > own) pthread_cond_wait(&sim_cv, &sim_lock);
}

/* The readiness rule of NCCL's ncclCommEnsureReady, with sim_lock held: ncclInvalidArgument
 * while an operation is in progress, the asynchronous error after one failed. */
static mg__ncclResult_t sim_ready_locked(const sim_comm_t *c, const char *call) {
  if (c->async == MG__ncclInProgress)
    return sim_fail(MG__ncclInvalidArgument, "%s: rank %d: called before the previous operation "
                    "returned ncclSuccess (poll ncclCommGetAsyncError)", call, c->rank);
  return c->async;
}

/* ---- split and shrink ----------------------------------------------------------------------- */

typedef struct sim_split {
  sim_comm_t *parent;
  int shrink;               /* 1: ncclCommShrink */
  int color, key;           /* split */
  int *exclude, nexclude;   /* shrink: sorted */
  int flags;                /* shrink: NCCL_SHRINK_* */
  sim_attrs_t child_attrs;
  int job;                  /* 1: runs as the parent's job (a simulator thread) */
  uint64_t seq;             /* the parent's nth split (or shrink) */
  mg__ncclComm_t *newcomm;  /* where the child goes, written by the participant's own thread */
  sim_comm_t *child;        /* made by whoever builds the children */
} sim_split_t;

/* Makes the children of a complete meeting (no lock held: it retains contexts). */
static void sim_split_build(sim_slot_t *s) {
  sim_split_t **x = (sim_split_t **)s->contrib;
  const int n = s->needed;
  int *order = malloc(sizeof *order * (size_t)n);
  int *done = calloc((size_t)n, sizeof *done);
  if (order == NULL || done == NULL) {
    fprintf(stderr, "mgsim: out of memory for a split\n");
    abort();
  }
  if (x[0]->shrink)
    for (int i = 1; i < n; i++)
      if (x[i]->nexclude != x[0]->nexclude ||
          memcmp(x[i]->exclude, x[0]->exclude, sizeof(int) * (size_t)x[0]->nexclude) != 0)
        sim_violation("ncclCommShrink: the surviving ranks %d and %d of the parent pass "
                      "different exclude lists", x[0]->parent->rank, x[i]->parent->rank);
  for (int i = 0; i < n; i++) {
    if (done[i] || (!x[i]->shrink && x[i]->color == MG__NCCL_SPLIT_NOCOLOR)) continue;
    /* The members of i's color, ordered by key and then parent rank (shrink: parent rank). */
    int m = 0;
    for (int j = 0; j < n; j++)
      if (x[j]->shrink || x[j]->color == x[i]->color) order[m++] = j;
    for (int a = 1; a < m; a++)
      for (int b = a; b > 0; b--) {
        const sim_split_t *p = x[order[b - 1]], *q = x[order[b]];
        const int later = p->shrink ? 0
                          : p->key != q->key ? p->key > q->key
                                             : p->parent->rank > q->parent->rank;
        if (!later) break;
        const int t = order[b - 1];
        order[b - 1] = order[b];
        order[b] = t;
      }
    sim_clique_t *q = calloc(1, sizeof *q);
    if (q == NULL) {
      fprintf(stderr, "mgsim: out of memory for a split\n");
      abort();
    }
    q->nranks = q->refs = m;
    for (int r = 0; r < m; r++) {
      sim_split_t *y = x[order[r]];
      done[order[r]] = 1;
      y->child = sim_comm_new(r, m, y->parent->device, &y->child_attrs);
      if (y->child == NULL) {
        fprintf(stderr, "mgsim: a split cannot make its child: %s\n", ncclGetLastError(NULL));
        abort(); /* the parent's device was good a moment ago */
      }
    }
    pthread_mutex_lock(&sim_lock);
    for (int r = 0; r < m; r++) {
      x[order[r]]->child->clique = q;
      x[order[r]]->child->async = MG__ncclSuccess;
    }
    pthread_mutex_unlock(&sim_lock);
  }
  free(order);
  free(done);
}

/* One participant's split or shrink: meet the others, build or wait, write *newcomm. */
static mg__ncclResult_t sim_split_run(sim_split_t *x) {
  sim_comm_t *c = x->parent;
  const char *call = x->shrink ? "ncclCommShrink" : "ncclCommSplit";
  mg__ncclResult_t r = MG__ncclSuccess;
  pthread_mutex_lock(&sim_lock);
  if (x->shrink && (x->flags & MG__NCCL_SHRINK_ABORT)) {
    /* Stop what is in flight on the parent (a peer may be dead), then go on with it. */
    c->hold_async++;
    sim_quiesce_locked(c, x->job);
    c->abort_flag = 0;
    c->hold_async--;
  }
  int index = c->rank, needed = c->nranks;
  if (x->shrink) {
    needed = c->nranks - x->nexclude;
    for (int i = 0; i < x->nexclude; i++) index -= x->exclude[i] < c->rank;
  }
  sim_slot_t *s = sim_slot_post(c->clique, x->shrink ? SIM_MEET_SHRINK : SIM_MEET_SPLIT, x->seq,
                                0, 0, needed, index, x);
  if (s == NULL) {
    fprintf(stderr, "mgsim: out of memory for a split\n");
    abort();
  }
  if (s->needed != needed)
    sim_violation("%s #%llu: rank %d of the parent expects %d participants, another rank %d",
                  call, (unsigned long long)x->seq, c->rank, needed, s->needed);
  const unsigned epoch = c->abort_epoch;
  while (s->state == SIM_SLOT_OPEN && !sim_stopped(c, epoch)) pthread_cond_wait(&sim_cv, &sim_lock);
  if (s->state == SIM_SLOT_OPEN) {
    const int there = s->arrived;
    sim_slot_withdraw(c->clique, s, index);
    r = sim_fail(MG__ncclInternalError, "%s of rank %d: aborted while waiting for the other ranks "
                 "(%d of %d had arrived)", call, c->rank, there, needed);
  } else {
    if (s->state == SIM_SLOT_READY) {
      s->state = SIM_SLOT_BUSY;
      pthread_mutex_unlock(&sim_lock);
      sim_split_build(s);
      pthread_mutex_lock(&sim_lock);
      s->state = SIM_SLOT_DONE;
      pthread_cond_broadcast(&sim_cv);
    }
    while (s->state != SIM_SLOT_DONE) pthread_cond_wait(&sim_cv, &sim_lock);
    sim_slot_release(c->clique, s);
  }
  pthread_mutex_unlock(&sim_lock);
  if (r == MG__ncclSuccess) *x->newcomm = x->child; /* NULL for NCCL_SPLIT_NOCOLOR */
  return r;
}

static void *sim_split_job(void *arg) {
  sim_split_t *x = arg;
  mg__ncclResult_t r = sim_split_run(x);
  pthread_mutex_lock(&sim_lock);
  sim_set_async(x->parent, r);
  x->parent->jobs--;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  free(x->exclude);
  free(x);
  return NULL;
}

/* In a group: a nonblocking parent reports the outcome here, before the group's thread ends (an
 * init reports its own the same way, in sim_init_run). */
static mg__ncclResult_t sim_split_deferred(void *arg) {
  sim_split_t *x = arg;
  mg__ncclResult_t r = sim_split_run(x);
  pthread_mutex_lock(&sim_lock);
  if (!x->parent->blocking) sim_set_async(x->parent, r);
  pthread_mutex_unlock(&sim_lock);
  return r;
}

static void sim_split_free(void *arg) {
  sim_split_t *x = arg;
  free(x->exclude);
  free(x);
}

/* Runs x inline (blocking parent), as the parent's job, or at the end of the thread's group;
 * takes x over. c is entered. */
static mg__ncclResult_t sim_split_start(sim_comm_t *c, sim_split_t *x) {
  const char *call = x->shrink ? "ncclCommShrink" : "ncclCommSplit";
  *x->newcomm = NULL;
  pthread_mutex_lock(&sim_lock);
  x->seq = x->shrink ? c->shrink_seq++ : c->split_seq++;
  pthread_mutex_unlock(&sim_lock);
  if (sim_group_depth() > 0) {
    x->job = 1; /* the group counts it as the parent's job */
    mg__ncclResult_t r = sim_group_defer(c, call, sim_split_deferred, sim_split_free, x);
    if (r != MG__ncclSuccess) sim_split_free(x);
    return r;
  }
  if (c->blocking) {
    mg__ncclResult_t r = sim_split_run(x);
    free(x->exclude);
    free(x);
    return r;
  }
  x->job = 1;
  pthread_mutex_lock(&sim_lock);
  c->async = MG__ncclInProgress;
  c->jobs++;
  pthread_mutex_unlock(&sim_lock);
  char name[16];
  snprintf(name, sizeof name, "mgsim-%s%d", x->shrink ? "shrk" : "splt", c->rank);
  if (sim_spawn(sim_split_job, x, name) != 0) {
    pthread_mutex_lock(&sim_lock);
    c->jobs--;
    c->async = sim_fail(MG__ncclSystemError, "%s: cannot start a thread", call);
    pthread_mutex_unlock(&sim_lock);
    free(x->exclude);
    free(x);
    return MG__ncclSystemError;
  }
  return MG__ncclInProgress;
}

/* What split and shrink check of the parent (sim_lock held). */
static mg__ncclResult_t sim_parent_check(sim_comm_t *c, int ready, const char *call) {
  if (c->finalized)
    return sim_fail(MG__ncclInvalidUsage, "%s: rank %d's comm is finalized", call, c->rank);
  if (c->clique == NULL)
    return sim_fail(MG__ncclInvalidUsage, "%s: rank %d's comm has not completed its init", call,
                    c->rank);
  return ready ? sim_ready_locked(c, call) : MG__ncclSuccess;
}

MGSIM_API mg__ncclResult_t ncclCommSplit(mg__ncclComm_t comm, int color, int key,
                                         mg__ncclComm_t *newcomm, mg__ncclConfig_t *config) {
  static const char call[] = "ncclCommSplit";
  sim_require(SIM_V_SPLIT, call);
  sim_comm_t *c = sim_enter(comm, call);
  if (c == NULL || newcomm == NULL || (color < 0 && color != MG__NCCL_SPLIT_NOCOLOR)) {
    if (c != NULL) sim_leave(c);
    return sim_fail(MG__ncclInvalidArgument, "%s: comm %p, newcomm %p, color %d", call,
                    (void *)comm, (void *)newcomm, color);
  }
  pthread_mutex_lock(&sim_lock);
  mg__ncclResult_t r = c->revoked ? sim_fail(MG__ncclInvalidUsage, "%s: rank %d's comm is "
                                             "revoked", call, c->rank)
                                  : sim_parent_check(c, 1, call);
  pthread_mutex_unlock(&sim_lock);
  sim_attrs_t child_attrs;
  if (r == MG__ncclSuccess) r = sim_config_read(config, c, &child_attrs, call);
  if (r == MG__ncclSuccess) {
    sim_split_t *x = calloc(1, sizeof *x);
    if (x == NULL) {
      r = sim_fail(MG__ncclSystemError, "%s: out of memory", call);
    } else {
      *x = (sim_split_t){.parent = c, .color = color, .key = key, .newcomm = newcomm,
                         .child_attrs = child_attrs};
      r = sim_split_start(c, x);
    }
  }
  sim_leave(c);
  return r;
}

static int sim_int_cmp(const void *a, const void *b) {
  const int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

MGSIM_API mg__ncclResult_t ncclCommShrink(mg__ncclComm_t comm, int *exclude, int nexclude,
                                          mg__ncclComm_t *newcomm, mg__ncclConfig_t *config,
                                          int flags) {
  static const char call[] = "ncclCommShrink";
  sim_require(SIM_V_SHRINK, call);
  sim_comm_t *c = sim_enter(comm, call);
  mg__ncclResult_t r = MG__ncclSuccess;
  if (c == NULL || newcomm == NULL || exclude == NULL || nexclude < 1 ||
      (flags != MG__NCCL_SHRINK_DEFAULT && flags != MG__NCCL_SHRINK_ABORT)) {
    r = sim_fail(MG__ncclInvalidArgument, "%s: comm %p, exclude %p, nexclude %d, newcomm %p, "
                 "flags %d", call, (void *)comm, (void *)exclude, nexclude, (void *)newcomm, flags);
  } else {
    qsort(exclude, (size_t)nexclude, sizeof *exclude, sim_int_cmp); /* in place, as NCCL */
    for (int i = 0; i < nexclude && r == MG__ncclSuccess; i++)
      if (exclude[i] < 0 || exclude[i] >= c->nranks || (i > 0 && exclude[i] == exclude[i - 1]) ||
          exclude[i] == c->rank || nexclude >= c->nranks)
        r = sim_fail(MG__ncclInvalidArgument, "%s: rank %d of %d: exclude[%d] = %d (out of range, "
                     "repeated, the caller, or every rank)", call, c->rank, c->nranks, i,
                     exclude[i]);
  }
  if (r == MG__ncclSuccess) {
    /* A shrink is how a failed or revoked communicator goes on: only one in progress is
     * refused, and NCCL_SHRINK_ABORT stops that first. */
    pthread_mutex_lock(&sim_lock);
    r = sim_parent_check(c, 0, call);
    if (r == MG__ncclSuccess && flags == MG__NCCL_SHRINK_DEFAULT && c->async == MG__ncclInProgress)
      r = sim_ready_locked(c, call);
    pthread_mutex_unlock(&sim_lock);
  }
  sim_attrs_t child_attrs;
  if (r == MG__ncclSuccess) r = sim_config_read(config, c, &child_attrs, call);
  if (r == MG__ncclSuccess) {
    sim_split_t *x = calloc(1, sizeof *x);
    int *ex = malloc(sizeof *ex * (size_t)nexclude);
    if (x == NULL || ex == NULL) {
      free(x);
      free(ex);
      r = sim_fail(MG__ncclSystemError, "%s: out of memory", call);
    } else {
      memcpy(ex, exclude, sizeof *ex * (size_t)nexclude);
      *x = (sim_split_t){.parent = c, .shrink = 1, .exclude = ex, .nexclude = nexclude,
                         .flags = flags, .newcomm = newcomm, .child_attrs = child_attrs};
      r = sim_split_start(c, x);
    }
  }
  if (c != NULL) sim_leave(c);
  return r;
}

/* ---- finalize ------------------------------------------------------------------------------- */

/* Waits (sim_lock held) for c's stream work; an abort or revoke ends the wait. */
static mg__ncclResult_t sim_finalize_locked(sim_comm_t *c) {
  const unsigned epoch = c->abort_epoch;
  while (c->items > 0 && !sim_stopped(c, epoch)) pthread_cond_wait(&sim_cv, &sim_lock);
  c->finalized = 1;
  if (c->items > 0)
    return sim_fail(MG__ncclInternalError, "ncclCommFinalize of rank %d: aborted while %d "
                    "operation(s) were in flight", c->rank, c->items);
  return MG__ncclSuccess;
}

static void *sim_finalize_job(void *arg) {
  sim_comm_t *c = arg;
  pthread_mutex_lock(&sim_lock);
  sim_set_async(c, sim_finalize_locked(c));
  c->jobs--;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  return NULL;
}

MGSIM_API mg__ncclResult_t ncclCommFinalize(mg__ncclComm_t comm) {
  static const char call[] = "ncclCommFinalize";
  sim_require(SIM_V_CONFIG, call);
  sim_comm_t *c = sim_enter(comm, call);
  if (c == NULL) return sim_fail(MG__ncclInvalidArgument, "%s: comm is NULL", call);
  pthread_mutex_lock(&sim_lock);
  mg__ncclResult_t r = c->finalized ? sim_fail(MG__ncclInvalidUsage, "%s: rank %d's comm is "
                                               "finalized already", call, c->rank)
                                    : sim_ready_locked(c, call);
  if (r == MG__ncclSuccess && c->blocking) {
    r = sim_finalize_locked(c);
  } else if (r == MG__ncclSuccess) {
    c->async = MG__ncclInProgress;
    c->jobs++;
    char name[16];
    snprintf(name, sizeof name, "mgsim-fin%d", c->rank);
    if (sim_spawn(sim_finalize_job, c, name) != 0) {
      c->jobs--;
      c->async = r = sim_fail(MG__ncclSystemError, "%s: cannot start a thread", call);
    } else {
      r = MG__ncclInProgress;
    }
  }
  pthread_mutex_unlock(&sim_lock);
  sim_leave(c);
  return r;
}

/* ---- revoke --------------------------------------------------------------------------------- */

static void *sim_revoke_job(void *arg) {
  sim_comm_t *c = arg;
  pthread_mutex_lock(&sim_lock);
  sim_quiesce_locked(c, 1);
  c->abort_flag = 0;
  c->hold_async--;
  c->async = MG__ncclSuccess; /* quiescent: what was in flight has stopped */
  c->jobs--;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  return NULL;
}

MGSIM_API mg__ncclResult_t ncclCommRevoke(mg__ncclComm_t comm, int flags) {
  static const char call[] = "ncclCommRevoke";
  sim_require(SIM_V_REVOKE, call);
  sim_comm_t *c = sim_enter(comm, call);
  if (c == NULL || flags != MG__NCCL_REVOKE_DEFAULT) {
    if (c != NULL) sim_leave(c);
    return sim_fail(MG__ncclInvalidArgument, "%s: comm %p, flags %d", call, (void *)comm, flags);
  }
  mg__ncclResult_t r = MG__ncclSuccess;
  pthread_mutex_lock(&sim_lock);
  if (c->revoked) {
    r = sim_fail(MG__ncclInvalidArgument, "%s: rank %d's comm is revoked already", call, c->rank);
  } else if (c->clique == NULL) {
    r = sim_fail(MG__ncclInvalidUsage, "%s: rank %d's comm has not completed its init", call,
                 c->rank);
  } else {
    c->revoked = 1;
    /* Stop now, from this call: the waits in flight (host and stream) see the flag at once. */
    c->abort_epoch++;
    c->abort_flag = 1;
    pthread_cond_broadcast(&sim_cv);
    if (c->blocking) {
      sim_quiesce_locked(c, 0);
      c->abort_flag = 0;
      c->async = MG__ncclSuccess;
    } else {
      c->async = MG__ncclInProgress;
      c->jobs++;
      c->hold_async++;
      char name[16];
      snprintf(name, sizeof name, "mgsim-rvk%d", c->rank);
      if (sim_spawn(sim_revoke_job, c, name) != 0) {
        c->jobs--;
        c->hold_async--;
        sim_quiesce_locked(c, 0); /* no thread: inline, as a blocking comm */
        c->abort_flag = 0;
        c->async = MG__ncclSuccess;
      } else {
        r = MG__ncclInProgress;
      }
    }
  }
  pthread_mutex_unlock(&sim_lock);
  sim_leave(c);
  return r;
}

/* ---- abort and destroy ---------------------------------------------------------------------- */

/* The detector, with sim_lock held: nobody may be inside a call on c while call frees it. */
static void sim_check_inside(const sim_comm_t *c, const char *call) {
  if (c->inside == 0) return;
  const char *in = "an NCCL call";
  for (int i = 0; i < SIM_MAX_INSIDE; i++)
    if (c->in[i].call != NULL) {
      in = c->in[i].call;
      break;
    }
  sim_violation("%s freed comm %p (rank %d) while %d thread(s) were inside %s", call,
                (void *)c, c->rank, c->inside, in);
}

static mg__ncclResult_t sim_free_comm(mg__ncclComm_t comm, int abort_it, const char *call) {
  sim_nccl_init();
  if (comm == NULL) return sim_fail(MG__ncclInvalidArgument, "%s: comm is NULL", call);
  pthread_mutex_lock(&sim_lock);
  sim_comm_t *c = sim_find(comm);
  if (c == NULL)
    sim_violation("%s called on comm %p, which is not a live communicator (freed already, or "
                  "never made)", call, (void *)comm);
  if (c->freeing != NULL)
    sim_violation("%s called on comm %p (rank %d) while %s is freeing it", call, (void *)c,
                  c->rank, c->freeing);
  sim_check_inside(c, call);
  c->freeing = call;
  if (abort_it) {
    if (sim_abort_delay_ms > 0) { /* its work still in flight (ncclMemFree's detector) */
      pthread_mutex_unlock(&sim_lock);
      const struct timespec d = {sim_abort_delay_ms / 1000, sim_abort_delay_ms % 1000 * 1000000};
      nanosleep(&d, NULL);
      pthread_mutex_lock(&sim_lock);
    }
    /* Stops what is in flight: waits for peers end, stream items complete without writing. */
    sim_quiesce_locked(c, 0);
  } else {
    /* ncclCommDestroy waits for the communicator's work, however long it takes. */
    while (c->items > 0 || c->jobs > 0) pthread_cond_wait(&sim_cv, &sim_lock);
  }
  sim_check_inside(c, call);
  sim_comm_free_locked(c); /* releases sim_lock */
  return MG__ncclSuccess;
}

MGSIM_API mg__ncclResult_t ncclCommAbort(mg__ncclComm_t comm) {
  return sim_free_comm(comm, 1, "ncclCommAbort");
}

MGSIM_API mg__ncclResult_t ncclCommDestroy(mg__ncclComm_t comm) {
  return sim_free_comm(comm, 0, "ncclCommDestroy");
}
