/*
 * host_coll.c -- the host backend's operations: every collective and send/recv as a
 * non-blocking state machine over the shared segment, and the engine that drives a group of them
 * to completion from one thread.
 *
 * Collectives move data in numbered steps (the step counter advances identically on every rank).
 * In step s a rank: (0) waits until every rank has finished reading step s-2 (the slots it is
 * about to fill are then free: mg__slot), copies its input into its slot (a scatter's root: each
 * reader's piece into the reader's slot) and publishes posted = s+1; (1) waits for the ranks it
 * reads from to have posted step s, then reduces or copies out (two-phase reductions first reduce
 * their own slice in place, publish reduced = s+1, and (2) wait for everyone's slice before
 * copying out); finally it publishes released = s+1. Messages longer than a slot are pipelined
 * through the two slots of each rank. Small all_reduce and reduce use one step in which every
 * reader reduces all inputs itself (lowest latency); large ones use the two-phase form in which
 * each rank reduces 1/nranks of the data (no rank does all the work); a large reduce between
 * threads of one process reduces those slices straight from the ranks' own buffers, and a
 * mid-sized one between two processes has its root read the other's input and reduce it all
 * (direct, below).
 *
 * send/recv use a ring per ordered pair of ranks (single producer, single consumer).
 *
 * Every rank that takes part in an operation ends it the same way (host_shm.h, "decisions"): a
 * rank succeeds only after settling the operation's decision word to "succeeded", and it writes
 * no output of a step once the word says that the operation failed. A collective is decided to
 * have succeeded only once every rank has posted all of it (and, two-phase, reduced it; direct,
 * read it), so that a rank that finds it decided so has everything it still needs and finishes,
 * even after its deadline. Every rank waits for every other in a collective's first step, where
 * it compares all the announcements (each argument that must agree), and in its last.
 *
 * Divisions: execution state; waiting and failure; collectives; send/recv; the engine.
 */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "backend/host/host_copy.h"
#include "backend/host/host_reduce.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/params.h"
#include "base/spinlock.h"
#include "core/dtype.h"
#include "core/trace.h"
#include "loader/fault.h"

/* ---- execution state ---------------------------------------------------------------------- */

/* CHUNK: pipelined through the slots; ONE: small reductions, every reader reduces all inputs in
 * one step; TWO: large reductions, each rank reduces its slice; MAIL: the smallest all_reduce,
 * reduce, broadcast, all_gather and reduce_scatter, whose data travels in the ranks' mails;
 * DIRECT: large data collectives, each reader copies once from the owner's buffer (a reduce
 * between threads: each rank reduces its slice from the owners' buffers into the root's; between
 * processes: the root reads and reduces every input), and owners wait until every reader is
 * done. */
enum { MG__ALG_CHUNK, MG__ALG_ONE, MG__ALG_TWO, MG__ALG_MAIL, MG__ALG_DIRECT };
enum { MG__LEND_THREAD = 1, MG__LEND_PROCESS = 2 }; /* mg__hx_t.lend */

/* ThreadSanitizer sees the ranks' counters through each rank's own mapping of the segment, at
 * different addresses, so it cannot tell that a published counter orders a direct copy from a
 * peer's buffer (ordinary memory, one address). These annotations say it, on the buffer itself:
 * the owner releases it before publishing its address, a reader acquires it after seeing it
 * posted and releases it before saying it is done, and the owner acquires it once all are. */
#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define MG__TSAN_ACQUIRE(p) __tsan_acquire((void *)(uintptr_t)(p))
#define MG__TSAN_RELEASE(p) __tsan_release((void *)(uintptr_t)(p))
#else
#define MG__TSAN_ACQUIRE(p) ((void)0)
#define MG__TSAN_RELEASE(p) ((void)0)
#endif
enum { MG__SET_NONE, MG__SET_ROOT, MG__SET_ALL };

typedef struct mg__hx {
  mg__op_t *op;
  mg_comm_t *comm;
  mg__hshm_t *s;
  struct mg__hx *after; /* must be done before this one starts (same comm, same lane) */
  int started, done;
  int n, me;
  size_t es;            /* element size */
  /* the outcome (host_shm.h, "decisions"), set when the operation starts */
  _Atomic uint64_t *dec; /* the decision word of its lane */
  uint64_t key;          /* its key there: a collective's first step, a message's sequence */
  int settled;           /* decided to have succeeded: no rank can fail it any more */
  /* collectives */
  int alg;
  int set1, set2;       /* whom phase 1 / phase 2 waits for (MG__SET_*) */
  uint64_t s0;          /* first step */
  uint64_t slot0;       /* its first step's number among the slot steps (mg__slot) */
  uint64_t nsteps;      /* UINT64_MAX until known (all_to_allv learns it in its first step) */
  uint64_t k;           /* current step index */
  int phase;            /* 0: copy in; 1: wait for posted; 2: wait for reduced */
  int announced;        /* the collective's descriptor is published */
  size_t E;             /* elements per step (or per peer piece) */
  const void **in;      /* nranks source pointers for reductions; all_to_allv: each rank's lent
                         * send buffer, NULL where it stages (read at the first step's match) */
  const void *in_inline[16];
  unsigned char *scal;  /* PreMulSum: each rank's scalar, 8 bytes per rank (malloc'd) */
  uint64_t mail_key;    /* MAIL: mg__mail_key of the operation, which every rank compares */
  /* send/recv */
  size_t bytes, moved;
  int framed;           /* through the ring: its header is written (send) or was read (receive) */
  int lend;             /* a send whose receiver copies it from the send buffer (phase 0, 1):
                         * MG__LEND_THREAD or MG__LEND_PROCESS (mg__p2p_lends) */
  int a2av_lend;        /* all_to_allv: this rank lends its pieces (the readers copy them from
                         * send in step 0) instead of staging them */
  int a2av_lent;        /* all_to_allv: some rank lends (known after step 0's posts) */
  int a2av_mailed;      /* all_to_allv in the mails: every rank's pieces fit (known at its match) */
  int lifted;           /* staged by the thresholds, direct because the slot stores are slow
                         * (mg__liftable); alike on every rank */
  double next_check;    /* time of the next liveness check */
  int look;             /* collectives: the first peer whose process the next check reads */
} mg__hx_t;

/* Processes of peers that one liveness check of a collective reads (/proc): every rank of a
 * collective that cannot go on waits and checks, so each peer is still read about this many
 * times a check, while W waiters reading all N peers every 100 ms (W x N reads) took a loaded
 * core from the ranks still on their way, at 1024 processes. Failed and departed peers are seen
 * by their state at every check. */
#define MG__COLL_LOOKS 4

static int mg__same_lane(const mg__op_t *a, const mg__op_t *b) {
  if (a->comm != b->comm) return 0;
  int ca = mg__opkind_is_collective(a->kind), cb = mg__opkind_is_collective(b->kind);
  if (ca || cb) return ca && cb;
  return a->kind == b->kind && a->root == b->root;
}

static const char *mg__desc(const mg__op_t *op, char *buf, size_t len) {
  if (mg__opkind_is_collective(op->kind))
    snprintf(buf, len, "%s #%llu (%s x %zu)", mg__opkind_name(op->kind),
             (unsigned long long)op->seq, mg_dtype_name(op->dtype), op->count);
  else
    snprintf(buf, len, "%s #%llu %s rank %d (%s x %zu)", mg__opkind_name(op->kind),
             (unsigned long long)op->seq, op->kind == MG_OPK_SEND ? "to" : "from", op->root,
             mg_dtype_name(op->dtype), op->count);
  return buf;
}

/* ---- waiting and failure ------------------------------------------------------------------ */

static void mg__publish(mg__hshm_t *s, _Atomic uint64_t *counter, uint64_t v) {
  atomic_store(counter, v); /* sequentially consistent: see mg__hshm_wake */
  mg__hshm_wake(s);
}

/* 1 when every rank in `set` (other than me) has `field` >= v. */
static int mg__ready(const mg__hx_t *x, int set, size_t field_off, uint64_t v) {
  if (set == MG__SET_NONE) return 1;
  for (int r = 0; r < x->n; r++) {
    if (r == x->me || (set == MG__SET_ROOT && r != x->op->root)) continue;
    const _Atomic uint64_t *f = (const _Atomic uint64_t *)((const char *)&x->s->ranks[r] + field_off);
    if (atomic_load_explicit(f, memory_order_acquire) < v) return 0;
  }
  return 1;
}
#define MG__READY(x, set, field, v) mg__ready((x), (set), offsetof(mg__hshm_rank_t, field), (v))

/* Settles x's outcome (host_shm.h, "decisions"): want is MG_OK, or the failure this rank met.
 * Returns the word that decides x: this rank's when it decided, else the earlier decision (a
 * word deciding a later operation of the lane stands for "x succeeded"). One load when the
 * word is decided already, else one compare-and-swap. */
static uint64_t mg__settle(mg__hx_t *x, mg_status_t want) {
  const uint64_t mine = mg__hdec_word(x->key, want, want < 0 ? x->me : -1);
  uint64_t w = atomic_load_explicit(x->dec, memory_order_acquire);
  for (;;) {
    const int c = mg__hdec_cmp(w, x->key);
    if (c > 0) return mg__hdec_word(x->key, MG_OK, -1);
    if (c == 0) return w;
    if (atomic_compare_exchange_weak_explicit(x->dec, &w, mine, memory_order_seq_cst,
                                              memory_order_acquire)) {
      if (want < 0) mg__hshm_wake(x->s); /* the ranks that wait in x look at the word */
      return mine;
    }
  }
}

static uint64_t mg__mail_fail(mg__hx_t *x, mg_status_t st);

/* 1 when the decision word w says that x succeeded (a word deciding a later operation of the
 * lane stands for "x succeeded"). */
static int mg__hdec_succeeded(const mg__hx_t *x, uint64_t w) {
  const int c = mg__hdec_cmp(w, x->key);
  return c > 0 || (c == 0 && mg__hdec_status(w) == MG_OK);
}

/* x ends with MG_ERR_REMOTE because w decided that it failed on another rank first: the
 * message names that rank and what happened there. */
static int mg__hx_remote(mg__hx_t *x, uint64_t w) {
  const int who = mg__hdec_who(w), n = x->n;
  const mg_status_t st = mg__hdec_status(w);
  char d[192], what[192];
  int culprit = who;
  if (st == MG_ERR_ABORTED) {
    snprintf(what, sizeof what, "rank %d aborted", who);
  } else if (st == MG_ERR_TIMED_OUT) {
    snprintf(what, sizeof what, "rank %d timed out", who);
    culprit = MG__CAUSE_TIMEOUT;
  } else {
    /* The rank that failed it published what caused that before it settled. */
    const int c = who >= 0 && who < n ? atomic_load(&x->s->ranks[who].cause) : -1;
    int cc;
    if (st != MG_ERR_REMOTE || c < 0 || c >= n || c == who ||
        mg__hshm_peer_status(x->s, c, what, sizeof what, &cc) == MG_OK)
      snprintf(what, sizeof what, "rank %d failed", who);
    else
      culprit = cc;
  }
  mg__error(MG_ERR_REMOTE, "%s during %s (it failed on rank %d first, with %s)", what,
            mg__desc(x->op, d, sizeof d), who, mg_status_name(st));
  x->op->status = MG_ERR_REMOTE;
  x->done = 1;
  mg__hshm_fail(x->s, culprit);
  return -1;
}

/* Before a step's output: 0 while x may still succeed; once it is decided that x failed, x
 * fails (naming where) and -1, so that nothing is written after the failure is known. */
static int mg__hx_doomed(mg__hx_t *x) {
  if (x->settled) return 0;
  const uint64_t w = atomic_load(x->dec); /* sequentially consistent: see mg__direct_drain */
  if (mg__hdec_succeeded(x, w)) {
    x->settled = 1;
    return 0;
  }
  return mg__hdec_cmp(w, x->key) < 0 ? 0 : mg__hx_remote(x, w);
}

/* x has what it needs to succeed, and every rank has posted what any rank needs of it. 0: it is
 * decided that x succeeded; -1: it failed first elsewhere, and x fails naming where. */
static int mg__hx_succeed(mg__hx_t *x) {
  if (x->settled) return 0;
  if (x->alg == MG__ALG_MAIL) {
    /* Every rank posted its mail: none can be poisoned any more. The shared word is settled
     * too at every MG__HDEC_REFRESH-th step, so that a long run of mailed collectives never
     * leaves it 2^39 keys behind (host_shm.h). */
    if ((x->key & (MG__HDEC_REFRESH - 1)) == 0) (void)mg__settle(x, MG_OK);
    x->settled = 1;
    return 0;
  }
  const uint64_t w = mg__settle(x, MG_OK);
  if (mg__hdec_status(w) != MG_OK) return mg__hx_remote(x, w);
  x->settled = 1;
  return 0;
}

/* x met failure st (message already set), caused by rank culprit (this rank, or another whose
 * failure it saw). Unless x was decided already, this decides that it failed, for every rank.
 * A timeout of an operation decided to have succeeded does not fail it: x goes on (0), since
 * everything it waits for was posted; in the mails nothing but an abort does (a peer seen gone
 * after it posted: every input is in the segment). An abort of this rank's communicator fails x
 * all the same; other failures keep their own status and message. -1: x failed. */
static int mg__hx_fail(mg__hx_t *x, mg_status_t st, int culprit) {
  char note[MG__ERROR_LEN];
  /* First the cause, which the ranks that find the decision read (a timeout blames nobody). */
  if (st != MG_ERR_TIMED_OUT) mg__hshm_fail(x->s, culprit);
  if (x->started) {
    const uint64_t w = x->alg == MG__ALG_MAIL ? mg__mail_fail(x, st) : mg__settle(x, st);
    const int who = mg__hdec_who(w);
    if (mg__hdec_status(w) == MG_OK) {
      /* A send lent to a thread that claimed it (it copies now) ends with that copy. */
      if (st == MG_ERR_TIMED_OUT || (x->alg == MG__ALG_MAIL && st != MG_ERR_ABORTED) ||
          x->lend == MG__LEND_THREAD) {
        x->settled = 1;
        return 0;
      }
      mg_last_error_copy(note, sizeof note);
      mg__error(st, "%s (it had succeeded on the other ranks)", note);
    } else if (who != x->me) {
      mg_last_error_copy(note, sizeof note);
      mg__error(st, "%s; it had failed on rank %d first, with %s", note, who,
                mg_status_name(mg__hdec_status(w)));
    }
  }
  if (st == MG_ERR_TIMED_OUT) mg__hshm_fail(x->s, MG__CAUSE_TIMEOUT);
  x->op->status = st;
  x->done = 1;
  return -1;
}

/* The timeout message of a collective: who is waiting in it, and where the others are. */
static int mg__coll_timeout(mg__hx_t *x) {
  char d[160], where[1024];
  mg__trace_ranks(x->comm, x->op->seq, 0, where, sizeof where);
  mg__error(MG_ERR_TIMED_OUT, "%s timed out after %g s at step %llu of %llu: %s",
            mg__desc(x->op, d, sizeof d), x->comm->timeout_s, (unsigned long long)x->k + 1,
            (unsigned long long)(x->nsteps == UINT64_MAX ? 0 : x->nsteps), where);
  return mg__hx_fail(x, MG_ERR_TIMED_OUT, MG__CAUSE_TIMEOUT);
}

static int mg__coll_match(mg__hx_t *x);
static int mg__lent_busy(const mg__hx_t *x);
static int mg__hx_decided_ok(const mg__hx_t *x);

/* A collective in the mails that every rank posted, but not every one mailed: some rank is in
 * another collective (one too large for the mails), whose rank fails it at once as mismatched;
 * the announcements say which. -1 when so (x fails, as mismatched), else 0. Looked at when the
 * decision says that x failed, and with the peers' processes (every 100 ms), not at every idle
 * pass: it reads each peer's counters, a line the peer writes twice in every collective, and
 * frequent reads made the peer's stores wait for that line. */
static int mg__mail_mismatch(mg__hx_t *x) {
  if (!x->started || x->alg != MG__ALG_MAIL || x->phase != 1 ||
      !MG__READY(x, MG__SET_ALL, posted, x->s0 + 1))
    return 0;
  return mg__coll_match(x);
}

/* x's communicator was aborted or revoked (stop): x fails with MG_ERR_ABORTED. */
static int mg__hx_aborted(mg__hx_t *x, int stop) {
  char d[160];
  mg__error(MG_ERR_ABORTED, "%s: the communicator was %s", mg__desc(x->op, d, sizeof d),
            stop == MG__STOP_REVOKE ? "revoked" : "aborted");
  return mg__hx_fail(x, MG_ERR_ABORTED, x->me);
}

/* Checks a blocked operation: abort, deadline, the decision of its lane, and (every 100 ms) the
 * peers it depends on. A failure decided elsewhere ends it at once, unless it was a timeout:
 * then this rank keeps to its own deadline, and names the rank that is really missing. */
static int mg__hx_check(mg__hx_t *x, double now) {
  char d[192], why[160];
  const int stop = atomic_load(&x->comm->aborting);
  if (stop && !mg__lent_busy(x)) return mg__hx_aborted(x, stop);
  if (x->settled) {
    /* Decided to have succeeded: it has all it needs and finishes at its next pass. Its bound
     * is one more timeout, should it not. */
    if (now <= x->op->deadline + x->comm->timeout_s) return 0;
    mg__error(MG_ERR_TIMED_OUT, "%s succeeded on another rank, but this rank could not finish "
              "it within twice the timeout (%g s)", mg__desc(x->op, d, sizeof d),
              x->comm->timeout_s);
    mg__hshm_fail(x->s, MG__CAUSE_TIMEOUT);
    x->op->status = MG_ERR_TIMED_OUT;
    x->done = 1;
    return -1;
  }
  if (now > x->op->deadline) {
    if (mg__opkind_is_collective(x->op->kind)) return mg__coll_timeout(x);
    if (x->lend && x->phase == 0)
      mg__error(MG_ERR_TIMED_OUT, "%s timed out after %g s: rank %d did not take this rank's "
                "message before it out of the box", mg__desc(x->op, d, sizeof d),
                x->comm->timeout_s, x->op->root);
    else if (x->lend)
      mg__error(MG_ERR_TIMED_OUT, "%s timed out after %g s: rank %d did not take the message "
                "from this rank's buffer", mg__desc(x->op, d, sizeof d), x->comm->timeout_s,
                x->op->root);
    else
      mg__error(MG_ERR_TIMED_OUT, "%s timed out after %g s with %zu of %zu bytes moved",
                mg__desc(x->op, d, sizeof d), x->comm->timeout_s, x->moved, x->bytes);
    return mg__hx_fail(x, MG_ERR_TIMED_OUT, MG__CAUSE_TIMEOUT);
  }
  if (x->started) { /* the mails' own outcome: mg__mail_ready, at every pass */
    const uint64_t w = atomic_load_explicit(x->dec, memory_order_acquire);
    if (mg__hdec_succeeded(x, w)) {
      x->settled = 1; /* nothing left to ask of the peers: see the peer loop below */
      return 0;
    }
    if (mg__hdec_cmp(w, x->key) == 0 && mg__hdec_status(w) != MG_ERR_TIMED_OUT)
      return mg__mail_mismatch(x) < 0 ? -1 : mg__hx_remote(x, w);
  }
  if (x->next_check == 0) {
    x->next_check = now + 0.1; /* the first look at the peers' processes comes 100 ms in */
  } else if (now >= x->next_check) {
    x->next_check = now + 0.1;
    if (mg__mail_mismatch(x) < 0) return -1;
    int lo = 0, hi = x->n;
    const int coll = mg__opkind_is_collective(x->op->kind), from = x->look;
    if (coll) x->look = (x->look + MG__COLL_LOOKS) % x->n;
    if (!coll) lo = x->op->root, hi = x->op->root + 1;
    for (int r = lo; r < hi; r++) {
      if (r == x->me) continue;
      if (coll && (r - from + x->n) % x->n >= MG__COLL_LOOKS &&
          atomic_load_explicit(&x->s->ranks[r].state, memory_order_acquire) == MG__HRANK_ATTACHED)
        continue;
      int culprit;
      mg_status_t ps = mg__hshm_peer_status(x->s, r, why, sizeof why, &culprit);
      if (ps < 0) {
        /* A rank whose operation returned may leave at once (destroy, finalize, exit): it
         * settled the decision before it returned, and an operation decided to have succeeded
         * has everything it needs in the segment (a direct collective is decided only once every
         * reader is done; a lent message's sender stays until its receiver's copy is). So a rank
         * seen gone is a failure only if, looked at after seeing it gone, the operation is not
         * decided yet. */
        if (x->started && mg__hx_decided_ok(x)) {
          x->settled = 1;
          return 0;
        }
        mg__error(ps, "%s during %s", why, mg__desc(x->op, d, sizeof d));
        return mg__hx_fail(x, ps, culprit);
      }
    }
  }
  return 0;
}

/* ---- collectives -------------------------------------------------------------------------- */

/* Rank r's slot in the current step. The slots of a step alternate with those of the last step
 * that used slots, not with the step's parity: with a mail or direct collective between every
 * two staged ones (a training loop's small all_reduce between its large ones, or a barrier
 * before every call), the parity would give the staged ones the same slot every time, whose
 * lines the readers of the last one still hold; then a 2 MiB gather of 2 processes took 151 us
 * instead of 66 on the development VM (bench/results/2026-11-29-host-slot-alternation.md). A
 * slot is still written only once every rank released the step two before (mg__coll_progress):
 * the slot step two before is at least that old. A direct reduce's root borrows its own slot of
 * the next slot step (mg__root_reduce), which every rank's wait for the direct step's readers
 * keeps apart from that step's writers. */
static inline unsigned char *mg__slot(const mg__hx_t *x, int r) {
  return mg__hshm_slot(x->s, r, x->slot0 + x->k);
}
static inline const unsigned char *mg__sb(const mg__hx_t *x) { return x->op->send; }
static inline unsigned char *mg__rb(const mg__hx_t *x) { return x->op->recv; }

/* Elements handled in step k when every step handles up to E of total. */
static inline size_t mg__step_len(size_t total, size_t E, uint64_t k) {
  size_t off = (size_t)k * E;
  return off >= total ? 0 : (total - off < E ? total - off : E);
}

/* The key a mail carries: the collective's sequence number and shape, so that a reader checks
 * the match without reading the peer's descriptor. */
static uint64_t mg__mail_key(const mg__op_t *op) {
  uint64_t k = op->seq * 0x9e3779b97f4a7c15ull;
  k ^= ((uint64_t)op->kind << 56) ^ ((uint64_t)op->dtype << 48) ^ ((uint64_t)(uint32_t)op->root << 16);
  k ^= (uint64_t)op->count * 0xc2b2ae3d27d4eb4full;
  k ^= (uint64_t)(op->redop.premul ? 0xffu : (unsigned)op->redop.op) << 40;
  return k ^ (k >> 29);
}

/* Bytes of x's input that a rank mails (MG__ALG_MAIL): its whole send buffer (reduce_scatter's,
 * all_to_all's and scatter's hold every rank's piece, and each rank takes its own from the
 * mails). The same on every rank, also where a rank mails no data (see mg__copy_in). */
static size_t mg__mail_len(const mg__hx_t *x) {
  const size_t c = x->op->count * x->es;
  const mg__opkind_t k = x->op->kind;
  const int pieces = k == MG_OPK_REDUCE_SCATTER || k == MG_OPK_ALL_TO_ALL || k == MG_OPK_SCATTER;
  return pieces ? c * (size_t)x->n : c;
}

/* 1 when x, between ranks in several processes, would make a rank read its kind's bound
 * (MGCOMM_HOST_READV_MAX_BYTES) or more from its peers directly (see mg__goes_direct): by default
 * 256 KiB for every kind where process_vm_readv is slow; where it is fast 128 KiB for a broadcast
 * or all_gather of more than 2 ranks, whose readers share a buffer, 16 MiB for a gather, whose
 * root reads alone, and 512 KiB for a reduce of 2 ranks, whose root reads and reduces alone; a
 * reduce of more ranks, or where it is slow, 1 byte: never (host_shm.c, mg__thresholds). */
static int mg__readv_bound(const mg__hx_t *x) {
  const mg__opkind_t k = x->op->kind;
  const uint64_t max = x->s->hdr->readv_max_bytes[k];
  if (!x->s->processes || max == 0) return 0;
  const size_t pieces = k == MG_OPK_BROADCAST || k == MG_OPK_SCATTER ? 1 : (size_t)x->n - 1;
  return pieces * x->op->count * x->es >= max;
}

/* all_to_allv: whether this rank lends its pieces (its readers copy them straight from its send
 * buffer in step 0, as a direct all_to_all's do: memcpy between threads of one process,
 * process_vm_readv between processes) rather than staging them through its slot, step by step.
 * Each rank chooses by its own largest piece, with the direct collectives' threshold (between
 * processes also all_to_all's bound on what a reader reads, mg__readv_bound), and says which in
 * its announcement (desc.lent): the counts differ between ranks and are known to the others only
 * after step 0. */
static int mg__a2av_lends(const mg__hx_t *x) {
  if (!x->s->direct) return 0;
  size_t most = 0;
  for (int p = 0; p < x->n; p++)
    if (p != x->me && x->op->v[0][p] > most) most = x->op->v[0][p];
  if (x->lifted) return most > 0; /* stores are slow: lend whatever goes past the mails */
  const size_t b = most * x->es;
  if (!x->s->processes) return most > 0 && b >= x->s->hdr->direct_threads_bytes;
  const uint64_t max = x->s->hdr->readv_max_bytes[MG_OPK_ALL_TO_ALL]; /* as all_to_all's */
  return most > 0 && b >= x->s->hdr->direct_bytes && (max == 0 || b * (size_t)(x->n - 1) < max);
}

/* 1 when x reads its peers' buffers in place (MG__ALG_DIRECT): a data collective copies once,
 * each reader from its owner's buffer; a reduce between threads of one process, past the
 * one-step size, has each rank reduce its slice straight from every rank's send buffer into the
 * root's receive buffer (mg__direct_reduce), where the two-phase form copies each slice in and
 * the root copies the results out through the slots; one between processes, past that size and
 * below its bound (mg__readv_bound), has the root read every other input and reduce it
 * (mg__root_reduce). */
static int mg__goes_direct(const mg__hx_t *x) {
  const mg__opkind_t k = x->op->kind;
  const int directable = k == MG_OPK_BROADCAST || k == MG_OPK_ALL_GATHER || k == MG_OPK_GATHER ||
                         k == MG_OPK_SCATTER || k == MG_OPK_ALL_TO_ALL || k == MG_OPK_REDUCE;
  if (x->lifted) return directable; /* all_to_allv's ranks lend instead (mg__a2av_lends) */
  if (k == MG_OPK_REDUCE && x->op->count * x->es <= x->s->hdr->small_bytes) return 0;
  /* Between processes a reader's copy is a process_vm_readv, on the reader's CPU alone; whether
   * it beats the staged pipeline, where the owner copies in while the readers copy out, depends
   * on the machine and the kind, and the creator chose the thresholds for it (host_shm.c,
   * mg__thresholds; host_readv.c). x->s->direct, x->s->processes and the thresholds (the
   * creator's) are the same on every rank. */
  const uint64_t from = x->s->processes ? x->s->hdr->direct_bytes : x->s->hdr->direct_threads_bytes;
  return directable && x->s->direct && x->op->count > 0 && x->op->count * x->es >= from &&
         !mg__readv_bound(x);
}

/* A broadcast or scatter of two ranks in two processes, large enough that its root may stage it
 * although it could lend its buffer (host_shm.c, root_stages_bytes): its reader would copy on its
 * CPU alone. Alike on all ranks. */
static int mg__root_may_stage(const mg__hx_t *x) {
  const mg__opkind_t k = x->op->kind;
  const uint64_t from = x->s->hdr->root_stages_bytes;
  return (k == MG_OPK_BROADCAST || k == MG_OPK_SCATTER) && x->s->processes && x->n == 2 &&
         from > 0 && x->op->count * x->es >= from && !x->lifted;
}

/* 1 when x could read its peers' buffers directly between processes but the creator's
 * thresholds keep it staged (or let its root stage it): past the mails, a broadcast, scatter,
 * gather, all_gather or all_to_all below the direct threshold or past its readv bound, a reduce
 * of two ranks that its root does not read (one-step, two-phase); any all_to_allv (each rank
 * chooses whether it lends). While the slot stores are slow such a collective goes direct
 * (host_pace.c). Alike on all ranks: the shape and the creator's thresholds decide. */
static int mg__liftable(const mg__hx_t *x) {
  const mg__opkind_t k = x->op->kind;
  if (!x->s->paced || !x->s->direct) return 0;
  if (k == MG_OPK_ALL_TO_ALLV) return 1; /* its counts are per pair */
  if (x->op->count == 0) return 0;
  if (mg__mail_len(x) <= MG__MAIL_BYTES) return 0;
  if (k == MG_OPK_REDUCE) return x->n == 2 && !mg__goes_direct(x);
  const int directable = k == MG_OPK_BROADCAST || k == MG_OPK_ALL_GATHER || k == MG_OPK_GATHER ||
                         k == MG_OPK_SCATTER || k == MG_OPK_ALL_TO_ALL;
  return directable && (!mg__goes_direct(x) || mg__root_may_stage(x));
}

/* 1 on the root of such a collective whose call is in place: with no copy of its own to make,
 * its CPU copies the data into its slots while the reader copies it out, rather than wait. Only
 * the root knows: it says so in its announcement (desc.staged), and its reader, which starts as
 * on the direct path (whose first post is the same), goes on staged from its first step's match
 * (mg__reader_stages). */
static int mg__root_stages(const mg__hx_t *x) {
  const mg__op_t *op = x->op;
  if (op->root != x->me || !mg__root_may_stage(x)) return 0;
  const size_t own = op->kind == MG_OPK_SCATTER ? (size_t)x->me * op->count * x->es : 0;
  return (const unsigned char *)op->recv == (const unsigned char *)op->send + own;
}

/* The reader of a collective whose root stages it (mg__root_stages) goes on as the staged
 * path's reader, in as many steps as its root. */
static void mg__reader_stages(mg__hx_t *x) {
  x->alg = MG__ALG_CHUNK;
  x->E = x->s->hdr->slot_bytes / x->es;
  x->nsteps = (x->op->count + x->E - 1) / x->E;
}

/* all_to_allv in the mails: a mail starts with its rank's counts, 8 bytes each, sendcounts
 * then recvcounts (so that the readers find them in the lines they read anyway), and then holds
 * the rank's pieces in rank order without its own, if they fit. */
#define MG__A2AV_HEAD(n) (16 * (size_t)(n))

/* Chooses the algorithm and step count of a collective, and publishes what it is. */
static void mg__coll_start(mg__hx_t *x) {
  mg__op_t *op = x->op;
  mg__hcomm_t *hc = mg__hcomm(x->comm);
  const size_t c = op->count;
  const int is_root = op->root == x->me;
  x->s0 = hc->step;
  x->slot0 = hc->slot_steps;
  x->set1 = MG__SET_ALL;
  x->set2 = MG__SET_NONE;
  x->lifted = 0; /* mg__liftable asks the thresholds (mg__goes_direct) */
  x->lifted = mg__liftable(x) && mg__hpace_lift(&hc->pace);
  /* Mails up to their size, unless the data is copied once (between threads, from 2 KiB per
   * rank: one copy beat the mails at 4 KiB, bench/results/2026-11-25-host-mail-4k.md). */
  /* Alike on all, as the mails' test, but for a root that stages (its reader follows). */
  const int direct = mg__goes_direct(x) && !mg__root_stages(x);
  /* all_to_allv: the ranks learn each other's counts only once all have posted, so they choose
   * as the last one ended (alike on all): after one whose pieces all fit in the mails (or none)
   * each starts in the mails, its pieces there if they fit, and all go on staged
   * (mg__a2av_restage) when some rank's did not; after one whose did not, staged at once. */
  const int mail = op->kind == MG_OPK_ALL_TO_ALLV
                       ? !hc->a2av_staged && MG__A2AV_HEAD(x->n) <= MG__MAIL_BYTES
                       : !direct && mg__mail_len(x) <= MG__MAIL_BYTES;
  if (mail) {
    x->alg = MG__ALG_MAIL; /* one step, in which every rank waits for all (mg__set1) */
    x->E = c;
    x->nsteps = 1;
    x->mail_key = mg__mail_key(op);
    return;
  }
  const size_t slot_el = x->s->hdr->slot_bytes / x->es;
  x->alg = MG__ALG_CHUNK;
  x->E = slot_el;
  switch (op->kind) {
    case MG_OPK_ALL_REDUCE:
    case MG_OPK_REDUCE: {
      /* The creator's threshold, so that every rank picks the same algorithm. */
      int one = c * x->es <= x->s->hdr->small_bytes;
      x->alg = one ? MG__ALG_ONE : MG__ALG_TWO;
      if (op->kind == MG_OPK_REDUCE) {
        if (one) x->set1 = is_root ? MG__SET_ALL : MG__SET_NONE;
        else x->set2 = is_root ? MG__SET_ALL : MG__SET_NONE;
      } else if (!one) {
        x->set2 = MG__SET_ALL;
      }
      if (one) x->E = c; /* fits: small messages are at most a slot */
      break;
    }
    case MG_OPK_BROADCAST:
    case MG_OPK_SCATTER:
      x->set1 = is_root ? MG__SET_NONE : MG__SET_ROOT;
      break;
    case MG_OPK_GATHER:
      x->set1 = is_root ? MG__SET_ALL : MG__SET_NONE;
      break;
    case MG_OPK_REDUCE_SCATTER:
    case MG_OPK_ALL_TO_ALL:
    case MG_OPK_ALL_TO_ALLV:
      x->E = slot_el / (size_t)x->n;
      break;
    default:
      break;
  }
  if (direct) {
    x->alg = MG__ALG_DIRECT;
    x->E = c;
    x->set2 = MG__SET_NONE;
  }
  if (op->kind == MG_OPK_ALL_TO_ALLV) {
    x->nsteps = UINT64_MAX; /* the stagers' largest count decides, known after step 0 */
    x->a2av_lend = mg__a2av_lends(x);
  } else { /* at least one step, in which every rank compares the others' arguments with its own */
    x->nsteps = c == 0 ? 1 : (c + x->E - 1) / x->E;
  }
}

/* Whom phase 1 of step k waits for: every rank in the first step, where the announcements are
 * compared, and in the last, since no rank may decide that the collective succeeded before
 * every rank has posted all of it; set1 in between. */
static inline int mg__set1(const mg__hx_t *x) {
  return x->k == 0 || x->k + 1 == x->nsteps ? MG__SET_ALL : x->set1;
}
/* Whom phase 2 of a two-phase step waits for: every rank in the last step, as above. */
static inline int mg__set2(const mg__hx_t *x) {
  return x->k + 1 == x->nsteps ? MG__SET_ALL : x->set2;
}

static inline mg__hshm_mail_t *mg__mail(const mg__hx_t *x, int r) {
  return &x->s->ranks[r].mail[(x->s0 + x->k) & 1];
}

/* Mails decide their collective themselves (host_shm.h, mg__hmail_poison): it succeeded once
 * every rank's mail holds its step s, with no write to the shared decision word, whose line one
 * rank would otherwise take and every other read at every small collective (5-15% of an 8-64
 * byte collective's time, 2 ranks on the 2-CPU VM, docs/design.md). A mail's step word says
 * that its rank posted s when it holds s + 1, or a poison of a later step (whose rank had seen
 * every rank post s). */
static int mg__mail_posted(uint64_t w, uint64_t s) {
  return (w & MG__HMAIL_POISON) ? mg__hmail_cmp(w, s) > 0 : w >= s + 1;
}

/* Posts this rank's mail of step s, its data and key in place: the step word goes from its
 * previous step to s + 1, unless a rank that failed the collective poisoned it first; then x
 * fails (-1), naming that rank. Only this rank stores anything but a poison there. The posted
 * counter goes first (mismatches: a rank in another collective of this step waits for it; a
 * post refused by a poison leaves it said, as for a rank that failed after posting), and
 * the compare-and-swap, sequentially consistent, orders both before the look for sleepers
 * (mg__hshm_wake): one locked instruction where mg__publish would add a second. */
static int mg__mail_post(mg__hx_t *x, uint64_t s) {
  _Atomic uint64_t *w = &mg__mail(x, x->me)->step1;
  atomic_store_explicit(&x->s->ranks[x->me].posted, s + 1, memory_order_release);
  uint64_t old = atomic_load_explicit(w, memory_order_relaxed);
  if ((old & MG__HMAIL_POISON) || !atomic_compare_exchange_strong(w, &old, s + 1))
    return mg__hx_remote(x, old);
  mg__hshm_wake(x->s);
  return 0;
}

/* Phase 1 of a mail step (the collective's only one): 1 when every rank has mailed it, 0 not yet,
 * -1 when x failed: a rank that failed it poisoned a mail (a poison of a timeout is waited out,
 * as a timeout in the decision word is: this rank keeps to its own deadline and names the rank
 * that is really missing). */
static int mg__mail_ready(mg__hx_t *x, uint64_t s) {
  for (int r = 0; r < x->n; r++) {
    if (r == x->me) continue;
    const uint64_t w = atomic_load_explicit(&mg__mail(x, r)->step1, memory_order_acquire);
    if (mg__mail_posted(w, s)) continue;
    if (!(w & MG__HMAIL_POISON) || mg__hdec_status(w) == MG_ERR_TIMED_OUT) return 0;
    return mg__mail_mismatch(x) < 0 ? -1 : mg__hx_remote(x, w);
  }
  return 1;
}

/* x, in the mails, failed on this rank with st (other than a mismatch): poisons every mail that
 * does not hold its step, so that its rank cannot post it. Returns the word that decides x: "succeeded" when every rank
 * had posted after all (no rank can fail it any more), else the decision word, which this rank
 * settles too for the ranks that look there (a rank in another collective at this step). */
static uint64_t mg__mail_fail(mg__hx_t *x, mg_status_t st) {
  /* Mismatched: every rank compares the same mails and refuses alike; nothing to decide. */
  if (st == MG_ERR_INVALID_USAGE) return mg__hdec_word(x->key, st, x->me);
  const uint64_t s = x->s0, poison = mg__hmail_poison(s, st, x->me);
  int failed = 0;
  for (int r = 0; r < x->n; r++) {
    _Atomic uint64_t *w = &mg__mail(x, r)->step1;
    uint64_t v = atomic_load(w);
    while (!mg__mail_posted(v, s) && !(v & MG__HMAIL_POISON) &&
           !atomic_compare_exchange_weak(w, &v, poison)) {
    }
    failed |= !mg__mail_posted(v, s); /* poisoned now, or before */
  }
  if (!failed) return mg__hdec_word(x->key, MG_OK, -1);
  const uint64_t w = mg__settle(x, st);
  mg__hshm_wake(x->s); /* the ranks asleep in mg__mail_ready, should another have settled */
  return w;
}

/* 1 when x is decided to have succeeded: every rank posted its mails, or its decision word (or
 * a later one of its lane) says so. */
static int mg__hx_decided_ok(const mg__hx_t *x) {
  if (x->alg != MG__ALG_MAIL)
    return mg__hdec_succeeded(x, atomic_load_explicit(x->dec, memory_order_acquire));
  for (int r = 0; r < x->n; r++) {
    const uint64_t w = atomic_load_explicit(&mg__mail(x, r)->step1, memory_order_acquire);
    if (!mg__mail_posted(w, x->s0)) return 0;
  }
  return 1;
}

/* Announces the collective in desc[s0 & 1] (and all_to_allv's counts in their slot of the same
 * parity). Called once every rank has finished step s0 - 2, so that no peer can still be about
 * to read the collective this slot held before. */
static void mg__coll_announce(mg__hx_t *x) {
  const mg__op_t *op = x->op;
  uint64_t count = op->count;
  mg__hshm_desc_t *d = &x->s->ranks[x->me].desc[x->s0 & 1];
  if (op->kind == MG_OPK_ALL_TO_ALLV) {
    atomic_store_explicit(&d->lent, x->a2av_lend ? (uint64_t)(uintptr_t)op->send : 0,
                          memory_order_relaxed);
    _Atomic uint64_t *vc = mg__hshm_vcounts(x->s, x->me, x->s0);
    const size_t *sc = op->v[0], *sd = op->v[1], *rc = op->v[2];
    count = 0;
    for (int p = 0; p < x->n; p++) {
      if (sc[p] > count) count = sc[p];
      atomic_store_explicit(&vc[p], sc[p], memory_order_relaxed);
      atomic_store_explicit(&vc[x->n + p], rc[p], memory_order_relaxed);
      atomic_store_explicit(&vc[2 * x->n + p], sd[p], memory_order_relaxed);
    }
  }
  if (op->redop.premul) { /* as the scalar reads now: at the start of the call */
    uint64_t scalar = 0;
    memcpy(&scalar,
           op->redop.residence == MG_SCALAR_DEVICE ? op->redop.scalar_ptr : op->redop.scalar,
           x->es);
    atomic_store_explicit(&d->scalar, scalar, memory_order_relaxed);
  }
  /* Relaxed: the release of seq1, and the posted counter after it, publish them. */
  atomic_store_explicit(&d->count, count, memory_order_relaxed);
  atomic_store_explicit(&d->kind, (int32_t)op->kind, memory_order_relaxed);
  atomic_store_explicit(&d->dtype, (int32_t)op->dtype, memory_order_relaxed);
  atomic_store_explicit(&d->root, (int32_t)op->root, memory_order_relaxed);
  atomic_store_explicit(&d->redop, op->redop.premul ? -1 : (int32_t)op->redop.op,
                        memory_order_relaxed);
  atomic_store_explicit(&d->staged, mg__root_stages(x), memory_order_relaxed);
  atomic_store_explicit(&d->slow, mg__hcomm(x->comm)->pace.vote, memory_order_relaxed);
  atomic_store_explicit(&d->seq1, op->seq + 1, memory_order_release);
  x->announced = 1;
}

/* What a rank called, as its announcement says: "broadcast #4 (int64 x 1, root 0)". */
static const char *mg__call_desc(char *buf, size_t len, uint64_t seq1, mg__opkind_t kind,
                                 mg_dtype_t dt, uint64_t count, int root, int redop) {
  const char *dn = mg_dtype_name(dt) ? mg_dtype_name(dt) : "?";
  int o = snprintf(buf, len, "%s #%llu (%s ", mg__opkind_name(kind),
                   (unsigned long long)(seq1 - 1), dn);
  if (o < 0 || (size_t)o >= len) return buf;
  if (kind == MG_OPK_ALL_TO_ALLV)
    o += snprintf(buf + o, len - (size_t)o, "with up to %llu per peer", (unsigned long long)count);
  else
    o += snprintf(buf + o, len - (size_t)o, "x %llu", (unsigned long long)count);
  if ((size_t)o < len && root >= 0) o += snprintf(buf + o, len - (size_t)o, ", root %d", root);
  if ((size_t)o < len && mg__opkind_is_reduction(kind))
    o += snprintf(buf + o, len - (size_t)o, ", op %s",
                  redop < 0 ? "premul_sum" : mg_op_name((mg_op_t)redop));
  if ((size_t)o < len) snprintf(buf + o, len - (size_t)o, ")");
  return buf;
}

/* all_to_allv: rank r's count idx (sendcounts[idx] for idx < n, recvcounts[idx - n] after), from
 * its mail when the collective is in the mails, else from its announcement. */
static uint64_t mg__a2av_count(const mg__hx_t *x, int r, int idx) {
  if (x->alg != MG__ALG_MAIL)
    return atomic_load_explicit(&mg__hshm_vcounts(x->s, r, x->s0)[idx], memory_order_relaxed);
  uint64_t v;
  memcpy(&v, mg__mail(x, r)->data + 8 * (size_t)idx, sizeof v);
  return v;
}

/* all_to_allv in the mails: the offset in rank r's mail of its piece for rank `to`, or (to = n)
 * the bytes of all it mails; more than MG__MAIL_BYTES is MG__MAIL_BYTES + 1. */
static size_t mg__a2av_mail_off(const mg__hx_t *x, int r, int to) {
  size_t b = MG__A2AV_HEAD(x->n);
  if (b > MG__MAIL_BYTES) return MG__MAIL_BYTES + 1; /* too many ranks for the mails */
  for (int p = 0; p < to; p++) {
    if (p == r) continue;
    const uint64_t piece = mg__a2av_count(x, r, p);
    if (piece > (MG__MAIL_BYTES - b) / x->es) return MG__MAIL_BYTES + 1;
    b += (size_t)piece * x->es;
  }
  return b;
}

/* all_to_allv: what each rank sends to each other must be what that one expects from it. Every
 * rank checks every pair, so that all of them name the same one. */
static int mg__a2av_match(mg__hx_t *x) {
  const int n = x->n;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      if (i == j) continue; /* argcheck compared a rank's own two counts */
      const uint64_t sent = mg__a2av_count(x, i, j), expected = mg__a2av_count(x, j, n + i);
      if (sent == expected) continue;
      mg__error(MG_ERR_INVALID_USAGE,
                "mismatched collectives: all_to_allv #%llu: rank %d sends %llu elements to rank "
                "%d (its sendcounts[%d]), but rank %d expects %llu from rank %d (its "
                "recvcounts[%d]); sendcounts[p] on every rank r must equal recvcounts[r] on "
                "rank p", (unsigned long long)x->op->seq, i, (unsigned long long)sent, j, j, j,
                (unsigned long long)expected, i, i);
      return mg__hx_fail(x, MG_ERR_INVALID_USAGE, x->me);
    }
  }
  return 0;
}

/* In the first step, once every rank has posted it: every rank is in this collective, with the
 * same arguments (kind, count, dtype, root, the reduction op, PreMulSum or not; all_to_allv:
 * the counts of every pair). Every rank compares them all, so that each one refuses a mismatch.
 * Also gathers what the steps need of the announcements: PreMulSum's scalars, which may differ
 * between ranks (each multiplies its own input), and all_to_allv's largest count. */
static int mg__coll_match(mg__hx_t *x) {
  const mg__op_t *op = x->op;
  const int my_redop = !mg__opkind_is_reduction(op->kind) ? -1
                       : op->redop.premul                 ? -1
                                                          : (int)op->redop.op;
  int same = 0;
  if (x->alg == MG__ALG_MAIL) { /* one cache line per peer: compare the keys of the mails */
    same = 1;
    for (int r = 0; r < x->n && same; r++)
      same = r == x->me ||
             atomic_load_explicit(&mg__mail(x, r)->key, memory_order_relaxed) == x->mail_key;
  }
  for (int r = 0; r < x->n && !same; r++) { /* else the descriptors say what differs */
    if (r == x->me) continue;
    const mg__hshm_desc_t *pd = &x->s->ranks[r].desc[x->s0 & 1];
    uint64_t q = atomic_load(&pd->seq1);
    mg__opkind_t k = (mg__opkind_t)atomic_load(&pd->kind);
    mg_dtype_t dt = (mg_dtype_t)atomic_load(&pd->dtype);
    uint64_t cnt = atomic_load(&pd->count);
    int root = atomic_load(&pd->root), redop = atomic_load(&pd->redop);
    const char *what = q != op->seq + 1                                      ? "sequence numbers"
                       : k != op->kind                                       ? "operations"
                       : dt != op->dtype                                     ? "data types"
                       : cnt != op->count && op->kind != MG_OPK_ALL_TO_ALLV ? "counts"
                       : root != op->root                                    ? "roots"
                       : mg__opkind_is_reduction(k) && redop != my_redop     ? "reduction ops"
                                                                             : NULL;
    if (what == NULL) continue;
    char mine[160], theirs[160];
    uint64_t my_count = op->count;
    if (op->kind == MG_OPK_ALL_TO_ALLV)
      my_count = atomic_load(&x->s->ranks[x->me].desc[x->s0 & 1].count);
    mg__error(MG_ERR_INVALID_USAGE,
              "mismatched collectives: rank %d called %s, rank %d called %s: the %s differ; "
              "every rank must call the same collectives in the same order, with the same "
              "arguments", x->me,
              mg__call_desc(mine, sizeof mine, op->seq + 1, op->kind, op->dtype, my_count,
                            op->root, my_redop),
              r, mg__call_desc(theirs, sizeof theirs, q, k, dt, cnt, root, redop), what);
    return mg__hx_fail(x, MG_ERR_INVALID_USAGE, x->me);
  }
  if (op->kind == MG_OPK_ALL_TO_ALLV) {
    if (mg__a2av_match(x) < 0) return -1;
    int fit = 1; /* every rank's pieces fit in its mail: the next one starts there */
    for (int r = 0; r < x->n && fit; r++) fit = mg__a2av_mail_off(x, r, x->n) <= MG__MAIL_BYTES;
    mg__hcomm(x->comm)->a2av_staged = !fit;
    x->a2av_mailed = x->alg == MG__ALG_MAIL && fit;
  }
  if (op->kind == MG_OPK_ALL_TO_ALLV && x->alg != MG__ALG_MAIL) {
    uint64_t mx = 0; /* the largest piece staged: the lenders' go in step 0 */
    for (int r = 0; r < x->n; r++) {
      const mg__hshm_desc_t *pd = &x->s->ranks[r].desc[x->s0 & 1];
      const uint64_t lent = atomic_load_explicit(&pd->lent, memory_order_relaxed);
      x->in[r] = (const void *)(uintptr_t)lent;
      x->a2av_lent |= lent != 0;
      uint64_t v = atomic_load(&pd->count);
      if (lent == 0 && v > mx) mx = v;
    }
    x->nsteps = mx == 0 ? 1 : (mx + x->E - 1) / x->E;
  }
  if (x->alg != MG__ALG_MAIL && x->s->paced) { /* the votes (host_pace.c) */
    int slow = 0;
    for (int r = 0; r < x->n; r++)
      slow |= atomic_load_explicit(&x->s->ranks[r].desc[x->s0 & 1].slow, memory_order_relaxed);
    mg__hpace_agree(&mg__hcomm(x->comm)->pace, slow);
  }
  if (x->alg == MG__ALG_DIRECT && op->root != x->me && mg__root_may_stage(x) &&
      atomic_load_explicit(&x->s->ranks[op->root].desc[x->s0 & 1].staged, memory_order_relaxed))
    mg__reader_stages(x);
  if (x->scal != NULL)
    for (int r = 0; r < x->n; r++) {
      uint64_t v = atomic_load_explicit(&x->s->ranks[r].desc[x->s0 & 1].scalar,
                                        memory_order_relaxed);
      memcpy(x->scal + (size_t)r * 8, &v, 8);
    }
  return 0;
}

/* Reduces srcs (one per rank, in rank order) into dst: op, with each rank's own PreMulSum
 * scalar. */
static inline void mg__reduce(const mg__hx_t *x, void *dst, size_t len) {
  mg__host_reduce_scaled(dst, x->in, x->n, len, x->op->dtype, &x->op->redop, x->n, x->scal);
}

/* The slice of rank r in a reduction of count elements over n ranks: [*lo, *hi). */
static void mg__slice(size_t count, int n, int r, size_t *lo, size_t *hi) {
  *lo = count * (size_t)r / (size_t)n;
  *hi = count * (size_t)(r + 1) / (size_t)n;
}

/* Copies len bytes of this rank's input into a slot, and returns len. */
static size_t mg__fill(unsigned char *slot, const unsigned char *from, size_t len) {
  mg__copy(slot, from, len);
  return len;
}

/* Phase 0 of step k: this rank's input into its slot. Returns the bytes it stored into slots. */
static size_t mg__copy_in(mg__hx_t *x) {
  const mg__op_t *op = x->op;
  const size_t es = x->es, c = op->count, E = x->E;
  const size_t off = (size_t)x->k * E;
  if (x->alg == MG__ALG_DIRECT) { /* peers read send itself; its address goes before posted */
    MG__TSAN_RELEASE(op->send);
    atomic_store_explicit(&x->s->ranks[x->me].daddr, (uint64_t)(uintptr_t)op->send,
                          memory_order_relaxed);
    if (op->kind == MG_OPK_REDUCE) { /* and recv, which the others write on the root */
      MG__TSAN_RELEASE(op->recv);
      atomic_store_explicit(&x->s->ranks[x->me].raddr, (uint64_t)(uintptr_t)op->recv,
                            memory_order_relaxed);
    }
    return 0;
  }
  if (x->alg == MG__ALG_MAIL) {
    /* Everybody mails (the key, which everybody compares); the non-roots of a broadcast or a
     * scatter, whose data nobody reads, nothing else. */
    mg__hshm_mail_t *m = mg__mail(x, x->me);
    const int from_root = op->kind == MG_OPK_BROADCAST || op->kind == MG_OPK_SCATTER;
    if (op->kind == MG_OPK_ALL_TO_ALLV) { /* its counts, and its pieces but its own if they fit */
      const size_t *sc = op->v[0], *sd = op->v[1], *rc = op->v[2];
      for (int p = 0; p < x->n; p++) {
        const uint64_t sent = sc[p], expected = rc[p];
        memcpy(m->data + 8 * (size_t)p, &sent, 8);
        memcpy(m->data + 8 * (size_t)(x->n + p), &expected, 8);
      }
      if (mg__a2av_mail_off(x, x->me, x->n) <= MG__MAIL_BYTES) {
        unsigned char *at = m->data + MG__A2AV_HEAD(x->n);
        for (int p = 0; p < x->n; p++) {
          if (p == x->me) continue;
          mg__copy(at, mg__sb(x) + sd[p] * es, sc[p] * es);
          at += sc[p] * es;
        }
      }
    } else if (c > 0 && (!from_root || op->root == x->me)) {
      mg__copy(m->data, mg__sb(x), mg__mail_len(x));
    }
    atomic_store_explicit(&m->key, x->mail_key, memory_order_relaxed); /* mg__mail_post */
    return 0;
  }
  if (c == 0 && op->kind != MG_OPK_ALL_TO_ALLV) return 0; /* nothing but the post */
  unsigned char *mine = mg__slot(x, x->me);
  size_t in = 0;
  switch (op->kind) {
    case MG_OPK_ALL_REDUCE:
    case MG_OPK_REDUCE:
      if (x->alg == MG__ALG_TWO) {
        /* Only the slices other ranks reduce: this rank reads its own from send directly. */
        size_t len = mg__step_len(c, E, x->k);
        for (int j = 0; j < x->n; j++) {
          if (j == x->me) continue;
          size_t lo, hi;
          mg__slice(len, x->n, j, &lo, &hi);
          in += mg__fill(mine + lo * es, mg__sb(x) + (off + lo) * es, (hi - lo) * es);
        }
        break;
      }
      /* fall through */
    case MG_OPK_ALL_GATHER:
    case MG_OPK_GATHER:
      /* A root of gather or reduce reads its own input from send: nobody else needs it. */
      if ((op->kind == MG_OPK_GATHER || op->kind == MG_OPK_REDUCE) && op->root == x->me) break;
      in += mg__fill(mine, mg__sb(x) + off * es, mg__step_len(c, E, x->k) * es);
      break;
    case MG_OPK_BROADCAST:
      if (op->root == x->me)
        in += mg__fill(mine, mg__sb(x) + off * es, mg__step_len(c, E, x->k) * es);
      break;
    case MG_OPK_REDUCE_SCATTER:
    case MG_OPK_ALL_TO_ALL: {
      size_t len = mg__step_len(c, E, x->k);
      for (int j = 0; j < x->n; j++)
        if (j != x->me || op->kind == MG_OPK_REDUCE_SCATTER)
          in += mg__fill(mine + (size_t)j * E * es, mg__sb(x) + ((size_t)j * c + off) * es,
                         len * es);
      break;
    }
    case MG_OPK_SCATTER: /* the root writes each reader's piece into that reader's own slot */
      if (op->root != x->me) break;
      for (int j = 0; j < x->n; j++)
        if (j != x->me)
          in += mg__fill(mg__slot(x, j), mg__sb(x) + ((size_t)j * c + off) * es,
                         mg__step_len(c, E, x->k) * es);
      break;
    case MG_OPK_ALL_TO_ALLV: {
      if (x->a2av_lend) { /* its readers copy from send, announced (mg__coll_announce) */
        if (x->k == 0) MG__TSAN_RELEASE(op->send);
        break;
      }
      const size_t *sc = op->v[0], *sd = op->v[1];
      for (int j = 0; j < x->n; j++)
        if (j != x->me)
          in += mg__fill(mine + (size_t)j * E * es, mg__sb(x) + (sd[j] + off) * es,
                         mg__step_len(sc[j], E, x->k) * es);
      break;
    }
    default:
      break;
  }
  return in;
}

/* Two-phase reductions, phase 1: reduce this rank's slice of the step, its own part read from
 * send, the others' from their slots. The result goes straight to recv where this rank keeps it
 * (all_reduce, and reduce on the root) and to its slot where others gather it. */
static void mg__reduce_slice(mg__hx_t *x) {
  const mg__op_t *op = x->op;
  const size_t es = x->es, off = (size_t)x->k * x->E;
  const size_t len = mg__step_len(op->count, x->E, x->k);
  size_t lo, hi;
  mg__slice(len, x->n, x->me, &lo, &hi);
  for (int r = 0; r < x->n; r++)
    x->in[r] = r == x->me ? mg__sb(x) + (off + lo) * es : mg__slot(x, r) + lo * es;
  const int keep = op->kind == MG_OPK_ALL_REDUCE || op->root == x->me;
  const int share = op->kind == MG_OPK_ALL_REDUCE || op->root != x->me;
  unsigned char *dst = keep ? mg__rb(x) + (off + lo) * es : mg__slot(x, x->me) + lo * es;
  mg__reduce(x, dst, hi - lo);
  if (keep && share) mg__copy(mg__slot(x, x->me) + lo * es, dst, (hi - lo) * es);
}

/* A direct reduce between threads: this rank's slice reduced straight from every rank's send
 * buffer (its own published too) into the root's receive buffer. */
static void mg__direct_reduce(mg__hx_t *x) {
  const size_t es = x->es;
  size_t lo, hi;
  mg__slice(x->op->count, x->n, x->me, &lo, &hi);
  for (int r = 0; r < x->n; r++)
    x->in[r] = (const unsigned char *)(uintptr_t)atomic_load(&x->s->ranks[r].daddr) + lo * es;
  unsigned char *dst = (unsigned char *)(uintptr_t)atomic_load(&x->s->ranks[x->op->root].raddr);
  MG__TSAN_ACQUIRE(dst);
  mg__reduce(x, dst + lo * es, hi - lo);
  MG__TSAN_RELEASE(dst);
}

/* Bytes of each rank's input that the root of a direct reduce between processes reads at a
 * time: the pieces and the root's own stay in its L2 while it reduces them. */
#define MG__ROOT_PIECE (64 * 1024)

/* A direct reduce between processes (a process cannot write another's buffer): the root alone
 * reads the others' send buffers, a piece of each at a time into its own slot (free in a direct
 * step), and reduces the pieces with its own input into recv; the others only lend their
 * buffers. On failure *from is the rank whose memory could not be read. */
static mg_status_t mg__root_reduce(mg__hx_t *x, int *from) {
  const mg__op_t *op = x->op;
  if (x->me != op->root) return MG_OK;
  const size_t es = x->es, c = op->count;
  size_t piece = x->s->hdr->slot_bytes / (size_t)(x->n - 1); /* at least 64 bytes: mg__sizes */
  if (piece > MG__ROOT_PIECE) piece = MG__ROOT_PIECE;
  piece /= es; /* elements */
  unsigned char *scratch = mg__slot(x, x->me);
  for (size_t off = 0; off < c; off += piece) {
    const size_t len = c - off < piece ? c - off : piece;
    unsigned char *at = scratch;
    for (int r = 0; r < x->n; r++) {
      if (r == x->me) {
        x->in[r] = mg__sb(x) + off * es;
        continue;
      }
      *from = r;
      mg_status_t st = mg__hshm_read_peer(x->s, r, at,
                                          atomic_load(&x->s->ranks[r].daddr) + off * es, len * es);
      if (st < 0) return st;
      x->in[r] = at;
      at += piece * es;
    }
    mg__reduce(x, mg__rb(x) + off * es, len);
  }
  return MG_OK;
}

/* The output of a direct step: each piece read once, from the buffer its owner published. On
 * failure *from is the rank whose memory could not be read. */
static mg_status_t mg__direct_out(mg__hx_t *x, int *from) {
  const mg__op_t *op = x->op;
  const size_t b = op->count * x->es;
  const int me = x->me, root = op->root;
  unsigned char *recv = mg__rb(x);
  const unsigned char *send = mg__sb(x);
  mg_status_t st = MG_OK;
  switch (op->kind) {
    case MG_OPK_BROADCAST:
      *from = root;
      if (me != root)
        st = mg__hshm_read_peer(x->s, root, recv, atomic_load(&x->s->ranks[root].daddr), b);
      else if (recv != send)
        mg__copy(recv, send, b);
      break;
    case MG_OPK_SCATTER:
      *from = root;
      if (me != root)
        st = mg__hshm_read_peer(x->s, root, recv,
                                atomic_load(&x->s->ranks[root].daddr) + (uint64_t)me * b, b);
      else if (recv != send + (size_t)me * b)
        mg__copy(recv, send + (size_t)me * b, b);
      break;
    case MG_OPK_GATHER:
    case MG_OPK_ALL_GATHER:
    case MG_OPK_ALL_TO_ALL: {
      if (op->kind == MG_OPK_GATHER && me != root) break;
      const uint64_t piece = op->kind == MG_OPK_ALL_TO_ALL ? (uint64_t)me * b : 0;
      for (int r = 0; r < x->n && st == MG_OK; r++) {
        unsigned char *dst = recv + (size_t)r * b;
        *from = r;
        if (r != me)
          st = mg__hshm_read_peer(x->s, r, dst, atomic_load(&x->s->ranks[r].daddr) + piece, b);
        else if (dst != send + piece) /* not in place */
          mg__copy(dst, send + piece, b);
      }
      break;
    }
    default:
      break;
  }
  return st;
}

/* all_to_allv's step 0: the pieces for this rank that their ranks lend, each read whole from its
 * rank's send buffer at the displacement for this rank that the rank announced (memcpy within a
 * process, process_vm_readv between processes). On failure *from is the rank whose memory could
 * not be read. */
static mg_status_t mg__a2av_lent_out(mg__hx_t *x, int *from) {
  const mg__op_t *op = x->op;
  const int n = x->n, me = x->me;
  const size_t *rc = op->v[2], *rd = op->v[3];
  for (int r = 0; r < n; r++) {
    if (r == me || x->in[r] == NULL) continue;
    *from = r;
    const uint64_t disp = atomic_load_explicit(&mg__hshm_vcounts(x->s, r, x->s0)[2 * n + me],
                                               memory_order_relaxed);
    MG__TSAN_ACQUIRE(x->in[r]);
    const mg_status_t st = mg__hshm_read_peer(
        x->s, r, mg__rb(x) + rd[r] * x->es, (uint64_t)(uintptr_t)x->in[r] + disp * x->es,
        rc[r] * x->es);
    MG__TSAN_RELEASE(x->in[r]);
    if (st < 0) return st;
  }
  return MG_OK;
}

/* The last phase of step k: this rank's output. */
static void mg__copy_out(mg__hx_t *x) {
  const mg__op_t *op = x->op;
  const size_t es = x->es, c = op->count, E = x->E;
  const size_t off = (size_t)x->k * E;
  const size_t len = mg__step_len(c, E, x->k);
  const int me = x->me, n = x->n, is_root = op->root == me;
  if (c == 0 && op->kind != MG_OPK_ALL_TO_ALLV) return;
  if (x->alg == MG__ALG_MAIL) {
    switch (op->kind) {
      case MG_OPK_ALL_REDUCE:
      case MG_OPK_REDUCE:
        if (op->kind == MG_OPK_REDUCE && !is_root) break;
        for (int r = 0; r < n; r++) x->in[r] = mg__mail(x, r)->data;
        mg__reduce(x, mg__rb(x), c);
        break;
      case MG_OPK_REDUCE_SCATTER:
        for (int r = 0; r < n; r++) x->in[r] = mg__mail(x, r)->data + (size_t)me * c * es;
        mg__reduce(x, mg__rb(x), c);
        break;
      case MG_OPK_BROADCAST:
      case MG_OPK_SCATTER: { /* the root's mail holds every piece of a scatter */
        const size_t piece = op->kind == MG_OPK_SCATTER ? (size_t)me * c * es : 0;
        const unsigned char *src = (is_root ? mg__sb(x) : mg__mail(x, op->root)->data) + piece;
        if (mg__rb(x) != src) mg__copy(mg__rb(x), src, c * es);
        break;
      }
      case MG_OPK_ALL_TO_ALLV: { /* each mail's piece for me, where its rank packed it */
        if (!x->a2av_mailed) break; /* mg__a2av_restage */
        const size_t *sd = op->v[1], *rc = op->v[2], *rd = op->v[3];
        for (int r = 0; r < n; r++) {
          const unsigned char *src = r != me ? mg__mail(x, r)->data + mg__a2av_mail_off(x, r, me)
                                             : mg__sb(x) + sd[me] * es;
          mg__copy(mg__rb(x) + rd[r] * es, src, rc[r] * es);
        }
        break;
      }
      default: { /* all_gather, gather (on the root), all_to_all (each mail's piece for me) */
        if (op->kind == MG_OPK_GATHER && !is_root) break;
        const size_t piece = op->kind == MG_OPK_ALL_TO_ALL ? (size_t)me * c * es : 0;
        for (int r = 0; r < n; r++) {
          unsigned char *dst = mg__rb(x) + (size_t)r * c * es;
          const unsigned char *src = r != me ? mg__mail(x, r)->data + piece : mg__sb(x) + piece;
          if (dst != src) mg__copy(dst, src, c * es);
        }
        break;
      }
    }
    return;
  }
  switch (op->kind) {
    case MG_OPK_ALL_REDUCE:
    case MG_OPK_REDUCE:
      if (op->kind == MG_OPK_REDUCE && !is_root) break;
      if (x->alg == MG__ALG_ONE) { /* this rank's input read from send (recv may be it) */
        for (int r = 0; r < n; r++) x->in[r] = r == me ? mg__sb(x) : mg__slot(x, r);
        mg__reduce(x, mg__rb(x), c);
      } else {
        for (int r = 0; r < n; r++) { /* this rank's slice is in recv already */
          if (r == me) continue;
          size_t lo, hi;
          mg__slice(len, n, r, &lo, &hi);
          mg__copy(mg__rb(x) + (off + lo) * es, mg__slot(x, r) + lo * es, (hi - lo) * es);
        }
      }
      break;
    case MG_OPK_BROADCAST:
      if (!is_root)
        mg__copy(mg__rb(x) + off * es, mg__slot(x, op->root), len * es);
      else if (mg__rb(x) != mg__sb(x))
        mg__copy(mg__rb(x) + off * es, mg__sb(x) + off * es, len * es);
      break;
    case MG_OPK_ALL_GATHER:
    case MG_OPK_GATHER:
      if (op->kind == MG_OPK_GATHER && !is_root) break;
      for (int r = 0; r < n; r++) {
        unsigned char *dst = mg__rb(x) + ((size_t)r * c + off) * es;
        if (r != me)
          mg__copy(dst, mg__slot(x, r), len * es);
        else if (dst != mg__sb(x) + off * es) /* not in place */
          mg__copy(dst, mg__sb(x) + off * es, len * es);
      }
      break;
    case MG_OPK_REDUCE_SCATTER:
      for (int r = 0; r < n; r++) x->in[r] = mg__slot(x, r) + (size_t)me * E * es;
      mg__reduce(x, mg__rb(x) + off * es, len);
      break;
    case MG_OPK_ALL_TO_ALL:
      for (int r = 0; r < n; r++) {
        unsigned char *dst = mg__rb(x) + ((size_t)r * c + off) * es;
        if (r != me)
          mg__copy(dst, mg__slot(x, r) + (size_t)me * E * es, len * es);
        else
          mg__copy(dst, mg__sb(x) + ((size_t)me * c + off) * es, len * es);
      }
      break;
    case MG_OPK_SCATTER: {
      const unsigned char *src = is_root ? mg__sb(x) + ((size_t)me * c + off) * es
                                         : mg__slot(x, me);
      if (mg__rb(x) + off * es != src) mg__copy(mg__rb(x) + off * es, src, len * es);
      break;
    }
    case MG_OPK_ALL_TO_ALLV: {
      const size_t *rc = op->v[2], *rd = op->v[3];
      for (int r = 0; r < n; r++) {
        if (r == me) {
          if (x->k == 0) /* the own part moves in one go; argcheck made both counts equal */
            mg__copy(mg__rb(x) + rd[me] * es, mg__sb(x) + op->v[1][me] * es, rc[me] * es);
          continue;
        }
        if (x->in[r] != NULL) continue; /* lent: read in step 0 (mg__a2av_lent_out) */
        mg__copy(mg__rb(x) + (rd[r] + off) * es, mg__slot(x, r) + (size_t)me * E * es,
               mg__step_len(rc[r], E, x->k) * es);
      }
      break;
    }
    default:
      break;
  }
}

/* 1 when x is a collective whose peers copy out of its send buffer (direct, or an all_to_allv
 * that lends it). */
static int mg__lends_send(const mg__hx_t *x) {
  return x->started && mg__opkind_is_collective(x->op->kind) &&
         (x->alg == MG__ALG_DIRECT || x->a2av_lend);
}

static void mg__coll_finish(mg__hx_t *x) {
  if (mg__lends_send(x)) MG__TSAN_ACQUIRE(x->op->send); /* its readers released it when done */
  /* Test builds: "host.corrupt" flips the first byte this rank wrote, so that checkers can
   * prove they notice a wrong result. */
  if (x->op->recv != NULL && x->op->count > 0 && MG_FAULT_POINT("host.corrupt"))
    *(unsigned char *)x->op->recv ^= 0xff;
  atomic_store_explicit(&x->s->ranks[x->me].done_seq, x->op->seq + 1, memory_order_release);
  mg__hcomm_t *hc = mg__hcomm(x->comm);
  hc->step = x->s0 + x->k;
  if (x->alg != MG__ALG_MAIL && x->alg != MG__ALG_DIRECT) hc->slot_steps = x->slot0 + x->k;
  if (x->alg != MG__ALG_MAIL && x->s->paced)
    mg__hpace_ended(&hc->pace, x->alg == MG__ALG_DIRECT || x->a2av_lent);
  x->op->status = MG_OK;
  x->done = 1;
}

/* A copy out of rank from's memory failed with st. Its process is gone, most often because it
 * failed on its own read of a rank that died first (and exited): names the first culprit, as
 * the liveness checks do, rather than from; else the read's own error. Fails x. */
static int mg__read_failed(mg__hx_t *x, int from, mg_status_t st) {
  char d[160], why[160];
  int culprit;
  if (from != x->me && mg__hshm_peer_status(x->s, from, why, sizeof why, &culprit) < 0) {
    mg__error(MG_ERR_REMOTE, "%s during %s", why, mg__desc(x->op, d, sizeof d));
    return mg__hx_fail(x, MG_ERR_REMOTE, culprit);
  }
  mg__error_prefix("%s", mg__desc(x->op, d, sizeof d));
  return mg__hx_fail(x, st, x->me);
}

/* Before a step's reads from the peers' own buffers (direct, or lent by all_to_allv): the claim
 * on them, then the look at the decision (mg__direct_drain says why). 0, or -1 (claim withdrawn)
 * when x failed. */
static int mg__claim_reads(mg__hx_t *x, uint64_t s) {
  _Atomic uint64_t *reading = &x->s->ranks[x->me].reading;
  atomic_store(reading, s + 1);
  if (mg__hx_doomed(x) < 0) {
    atomic_store_explicit(reading, 0, memory_order_release);
    return -1;
  }
  /* Test builds: "host.direct_read" holds this rank's reads for the rule's code in
   * milliseconds, so that a test can fail an owner while its buffer is being read. */
  const int hold_ms = MG_FAULT_POINT("host.direct_read");
  if (hold_ms > 0) usleep((useconds_t)hold_ms * 1000);
  return 0;
}

/* An all_to_allv whose mail step found some rank's pieces too large for the mails (every rank
 * finds the same, from the same counts) goes on as a staged collective from the next step, of
 * its own: announced again, decided in the decision word. Its match set hc->a2av_staged, so
 * mg__coll_start chooses the slots. 1 when so. */
static int mg__a2av_restage(mg__hx_t *x) {
  if (x->op->kind != MG_OPK_ALL_TO_ALLV || x->alg != MG__ALG_MAIL || x->a2av_mailed) return 0;
  mg__hcomm_t *hc = mg__hcomm(x->comm);
  hc->step = x->s0 + x->k;
  x->key = hc->step;
  x->settled = 0;
  x->announced = 0;
  x->k = 0;
  x->phase = 0;
  mg__coll_start(x);
  return 1;
}

/* Advances a collective as far as it can go without waiting. 1: progress, 0: blocked, -1: failed.
 * Phases of a step: 0 copy in and post; 1 wait for the posts it reads, then output (or, TWO:
 * reduce its slice; DIRECT: copy from the owners, or reduce its slice from them); 2 (TWO) wait
 * for every slice, then output; 3 (DIRECT) wait until every reader released the step. The
 * outcome is settled in the last step before the output (DIRECT: once every reader is done), and
 * every earlier output is preceded by a look at the decision. */
static int mg__coll_progress(mg__hx_t *x) {
  int progressed = 0;
  mg__hshm_rank_t *mine = &x->s->ranks[x->me];
  mg__hcomm_t *hc = mg__hcomm(x->comm);
  for (;;) {
    const uint64_t s = x->s0 + x->k;
    if (x->phase == 0 && s >= 2 && hc->all_released < s - 1) {
      if (!MG__READY(x, MG__SET_ALL, released, s - 1)) return progressed;
      hc->all_released = s - 1;
    }
    if (!x->announced) mg__coll_announce(x);
    if (x->k >= x->nsteps) {
      if (mg__a2av_restage(x)) continue;
      mg__coll_finish(x);
      return 1;
    }
    int step_done = 0;
    if (x->phase == 0) {
      if (x->alg == MG__ALG_MAIL || x->alg == MG__ALG_DIRECT || !x->s->paced) {
        mg__copy_in(x);
      } else { /* into the slots: timed where they are warm (host_pace.c) */
        const uint64_t t = x->slot0 + x->k;
        const int timed = mg__hpace_warm(&hc->pace, t);
        const double t0 = timed ? mg__now() : 0;
        const size_t in = mg__copy_in(x);
        mg__hpace_filled(&hc->pace, t, timed ? in : 0, timed ? mg__now() - t0 : 0);
      }
      if (x->alg != MG__ALG_MAIL)
        mg__publish(x->s, &mine->posted, s + 1);
      else if (mg__mail_post(x, s) < 0)
        return -1;
      x->phase = 1;
      progressed = 1;
    }
    if (x->phase == 1) {
      const int set = mg__set1(x);
      const int ready =
          x->alg == MG__ALG_MAIL ? mg__mail_ready(x, s) : MG__READY(x, set, posted, s + 1);
      if (ready <= 0) return ready < 0 ? -1 : progressed;
      if (set == MG__SET_ALL && hc->all_released < s) hc->all_released = s;
      if (x->k == 0 && mg__coll_match(x) < 0) return -1;
      progressed = 1;
      const int last = x->k + 1 == x->nsteps;
      if (x->alg == MG__ALG_DIRECT) {
        if (mg__claim_reads(x, s) < 0) return -1;
        for (int r = 0; r < x->n; r++) MG__TSAN_ACQUIRE(atomic_load(&x->s->ranks[r].daddr));
        int from = x->me;
        mg_status_t st = MG_OK;
        if (x->op->kind != MG_OPK_REDUCE) st = mg__direct_out(x, &from);
        else if (x->s->processes) st = mg__root_reduce(x, &from);
        else mg__direct_reduce(x); /* threads: it cannot fail */
        for (int r = 0; r < x->n; r++) MG__TSAN_RELEASE(atomic_load(&x->s->ranks[r].daddr));
        atomic_store_explicit(&mine->reading, 0, memory_order_release);
        if (st < 0) return mg__read_failed(x, from, st);
        mg__publish(x->s, &mine->released, s + 1);
        x->phase = 3;
      } else if (x->alg == MG__ALG_TWO) {
        if (mg__hx_doomed(x) < 0) return -1;
        mg__reduce_slice(x);
        mg__publish(x->s, &mine->reduced, s + 1);
        x->phase = 2;
      } else {
        /* Reads from lenders' buffers (all_to_allv's step 0) are claimed as a direct step's
         * are, and a collective of one step with such reads is decided only once every reader
         * is done, as a direct one is (phase 3). */
        const int lent = x->a2av_lent && x->k == 0;
        if ((lent ? mg__claim_reads(x, s) : last ? mg__hx_succeed(x) : mg__hx_doomed(x)) < 0)
          return -1;
        int from = x->me;
        const mg_status_t st = lent ? mg__a2av_lent_out(x, &from) : MG_OK;
        if (st < 0) {
          atomic_store_explicit(&mine->reading, 0, memory_order_release);
          return mg__read_failed(x, from, st);
        }
        mg__copy_out(x);
        if (lent) atomic_store_explicit(&mine->reading, 0, memory_order_release);
        mg__publish(x->s, &mine->released, s + 1);
        if (lent && last)
          x->phase = 3;
        else
          step_done = 1;
      }
    }
    if (x->phase == 2) {
      if (!MG__READY(x, mg__set2(x), reduced, s + 1)) return progressed;
      if ((x->k + 1 == x->nsteps ? mg__hx_succeed(x) : mg__hx_doomed(x)) < 0) return -1;
      mg__copy_out(x);
      mg__publish(x->s, &mine->released, s + 1);
      step_done = 1;
    }
    if (x->phase == 3) {
      if (!MG__READY(x, MG__SET_ALL, released, s + 1)) return progressed;
      MG__TSAN_ACQUIRE(x->op->send);
      if (x->op->recv != NULL) MG__TSAN_ACQUIRE(x->op->recv); /* a direct reduce's root's */
      hc->all_released = s + 1;
      if (mg__hx_succeed(x) < 0) return -1; /* its only step: every reader is done */
      step_done = 1;
    }
    if (step_done) {
      x->phase = 0;
      x->k++;
      progressed = 1;
    }
  }
}

/* A collective that failed after publishing its buffer (direct, or an all_to_allv that lends
 * it): readers in this process may still be copying out of it, since a failure (an abort, a
 * timeout, a peer's) can be decided while they read. It returns only once none is, so that its
 * caller may free the buffer. A reader claims its reads (`reading`) before it looks at the
 * decision, and this looks at the claims after the failure was decided, all four accesses
 * sequentially consistent (the decision's compare-and-swap, and mg__hx_doomed's load): a reader
 * that claims later finds the failure and reads nothing. The wait is for memcpy calls, which
 * wait on nothing; it is bounded all the same, by one more timeout past the operation's
 * deadline, as a claimed lent message's is. Readers in other processes copy with
 * process_vm_readv, which a freed buffer only makes fail. */
static void mg__direct_drain(const mg__hx_t *x) {
  const uint64_t claim = x->s0 + 1; /* the readers' copies from it are all in the first step */
  const double bound = x->op->deadline + x->comm->timeout_s;
  for (int r = 0; r < x->n; r++) {
    const mg__hshm_rank_t *rb = &x->s->ranks[r];
    if (r == x->me || atomic_load_explicit(&rb->pid, memory_order_relaxed) != x->s->mypid)
      continue;
    while (atomic_load(&rb->reading) == claim) {
      if (mg__now() > bound) {
        MG_WARN("rank %d: rank %d still copies out of this rank's buffer "
                "after twice the timeout; the failed collective returns anyway", x->me, r);
        return;
      }
      sched_yield();
    }
  }
  MG__TSAN_ACQUIRE(x->op->send); /* the readers released it when done */
  if (x->op->recv != NULL) MG__TSAN_ACQUIRE(x->op->recv); /* a direct reduce's root's, too */
}

/* ---- send/recv ------------------------------------------------------------------------------ */

/* A message moved whole (or, lent, copied): its operation succeeded. 1, as progress. */
static int mg__p2p_done(mg__hx_t *x) {
  x->moved = x->bytes;
  x->op->status = MG_OK;
  x->done = 1;
  return 1;
}

/* Lent messages. Between two threads of one process, a message of direct_threads_bytes or more
 * (host_shm.c: 2 KiB when the ranks have a CPU each, as for the direct collectives) does not go
 * through the ring, where the sender copies it in and the receiver out, so that every cache line
 * of it crosses between the CPUs twice: the sender describes its buffer (address and size) in
 * the box, once the box is free, and waits; the receiver claims the message by settling its
 * outcome (success), copies it straight from the sender's buffer and stores box_done, which ends
 * the send. A lent send that finds the box full waits for its receiver to take the message before
 * it, which that receiver does before it takes this one. Once claimed, the send waits for that
 * copy whatever happens (an abort included), so that its buffer is never given back while it is
 * read; the copy is a memcpy of the other thread, which waits on nothing. The receiver compares
 * the sizes first. Such a send waits for its receive, as a large MPI message does: sends and
 * receives that depend on each other must be in one group (mgcomm.h).
 * Between processes, from lend_bytes (256 KiB where process_vm_readv is fast, else never:
 * host_shm.c, mg__thresholds), the receiver copies with process_vm_readv and claims the message
 * only after its copy: a copy in another process may be stopped with it, so the sender must not
 * wait for one, and a read of a buffer given back meanwhile only fails or reads what the claim
 * then refuses. 2 and 4 processes on a 16-CPU Xeon: sendrecv of 512 KiB-128 MiB 0.31-0.79x Open
 * MPI's time against 0.98-1.25x through the ring; on the 2-CPU VM, whose process_vm_readv is
 * slow, 0.95-1.02x against 0.80-0.94x (bench/results/2026-11-25-host-p2p-lent-procs.md). */
static int mg__p2p_lends(const mg__hx_t *x) {
  const mg__hshm_t *s = x->s;
  if (x->op->kind != MG_OPK_SEND || x->bytes == 0) return 0;
  if (atomic_load_explicit(&s->ranks[x->op->root].pid, memory_order_relaxed) == s->mypid)
    return x->bytes >= s->hdr->direct_threads_bytes ? MG__LEND_THREAD : 0;
  return s->direct && x->bytes >= s->hdr->lend_bytes ? MG__LEND_PROCESS : 0;
}

/* The sender of a lent message: phase 0, describe it in the box once the box is free; 1, wait
 * for the receiver's copy. */
static int mg__p2p_lend(mg__hx_t *x, mg__hshm_chan_t *ch) {
  const uint64_t id = x->key + 1;
  int progressed = 0;
  if (x->phase == 0) {
    if (mg__hx_doomed(x) < 0) return -1;
    if (!mg__hbox_free(ch)) return 0;
    const uint64_t desc[2] = {(uint64_t)(uintptr_t)x->op->send, x->bytes};
    memcpy(ch->box, desc, sizeof desc);
    MG__TSAN_RELEASE(x->op->send);
    mg__publish(x->s, &ch->box_word, mg__hbox_word(x->key, MG__HBOX_LENT));
    x->phase = 1;
    progressed = 1;
  }
  /* Done once acknowledged; between processes already once claimed, which follows the copy. */
  if (atomic_load_explicit(&ch->box_done, memory_order_acquire) != id &&
      !(x->lend == MG__LEND_PROCESS &&
        mg__hdec_succeeded(x, atomic_load_explicit(x->dec, memory_order_acquire))))
    return progressed;
  MG__TSAN_ACQUIRE(x->op->send);
  if (mg__hx_succeed(x) < 0) return -1; /* a load: the receiver decided */
  return mg__p2p_done(x);
}

/* 1 while a thread of this process copies out of a message this rank lent: it claimed it, and
 * the send may not end before the copy does. */
static int mg__lent_busy(const mg__hx_t *x) {
  return x->lend == MG__LEND_THREAD && x->phase == 1 && !x->done &&
         mg__hdec_succeeded(x, atomic_load_explicit(x->dec, memory_order_acquire));
}

/* A receive whose message has `bytes` (in the box, lent, or as the ring's header says): fails as
 * misused unless the sizes agree. */
static int mg__p2p_mismatch(mg__hx_t *x, uint64_t bytes) {
  char d[160];
  mg__error(MG_ERR_INVALID_USAGE, "%s: rank %d sends %llu bytes, this receive expects %zu; a "
            "send and its receive must have the same count and dtype",
            mg__desc(x->op, d, sizeof d), x->op->root, (unsigned long long)bytes, x->bytes);
  return mg__hx_fail(x, MG_ERR_INVALID_USAGE, x->me);
}

/* The receiver of a lent message, described in ch's box: compare, claim, copy, acknowledge (from
 * another process: compare, copy, claim, acknowledge). */
static int mg__p2p_take(mg__hx_t *x, mg__hshm_chan_t *ch) {
  uint64_t desc[2]; /* address, size */
  memcpy(desc, ch->box, sizeof desc);
  const uint64_t from = desc[0], bytes = desc[1];
  if (bytes != x->bytes) return mg__p2p_mismatch(x, bytes);
  const int other = atomic_load_explicit(&x->s->ranks[x->op->root].pid, memory_order_relaxed) !=
                    x->s->mypid;
  if ((other ? mg__hx_doomed(x) : mg__hx_succeed(x)) < 0) return -1;
  /* Test builds: "host.lent_copy" holds the copy for the rule's code in milliseconds, so that a
   * test can abort the sender while its buffer is being read. */
  const int hold_ms = MG_FAULT_POINT("host.lent_copy");
  if (hold_ms > 0) usleep((useconds_t)hold_ms * 1000);
  if (other) { /* copy, then claim: see mg__p2p_lends */
    const mg_status_t st = mg__hshm_read_peer(x->s, x->op->root, x->op->recv, from, x->bytes);
    if (st != MG_OK) return mg__hx_doomed(x) < 0 ? -1 : mg__read_failed(x, x->op->root, st);
    if (mg__hx_succeed(x) < 0) return -1;
  } else {
    MG__TSAN_ACQUIRE(from);
    mg__copy(x->op->recv, (const void *)(uintptr_t)from, x->bytes);
    MG__TSAN_RELEASE(from);
  }
  mg__publish(x->s, &ch->box_done, x->key + 1);
  return mg__p2p_done(x);
}

/* The box (host_shm.h). A send of at most MG__HSHM_BOX_BYTES that can be published whole in
 * this pass (the ring has room for it and its header, as far as the sender knows without
 * reading the receiver's line) settles its outcome first, which takes the line of the head, the
 * outcome and the box; then, if the receiver has taken the box's last message out (box_done, in
 * that line), it copies its bytes into the box and publishes the box word, else it goes through
 * the ring. The receiver of message k reads the head first and then the box word: if the word
 * is not k's, the ring's bytes from the tail begin with k's header, a later message's if k was
 * empty, or an earlier one's that an empty receive left there (mg__ring_header); the sender
 * wrote a later message's bytes only after k's box word, so a message in the box, boxed or
 * lent, is never taken from the ring or overtaken by one. The receiver compares the sizes,
 * copies the bytes out and stores box_done (waking a lent send that waits for the box). Only
 * the first 32 bytes share the head's line; the rest lie in the next two, which the receiver
 * fetches together. Sendrecv of 8-128 B between processes:
 * bench/results/2026-11-25-host-p2p-box.md. */
static int mg__p2p_box(mg__hx_t *x, mg__hshm_chan_t *ch) {
  memcpy(ch->box, x->op->send, x->bytes);
  mg__publish(x->s, &ch->box_word, mg__hbox_word(x->key, x->bytes));
  return mg__p2p_done(x);
}

static int mg__p2p_unbox(mg__hx_t *x, mg__hshm_chan_t *ch, uint64_t word) {
  if (mg__hbox_bytes(word) != x->bytes) return mg__p2p_mismatch(x, mg__hbox_bytes(word));
  if (mg__hx_succeed(x) < 0) return -1; /* a load: the sender settled before it published */
  memcpy(x->op->recv, ch->box, x->bytes);
  mg__publish(x->s, &ch->box_done, mg__hbox_id(word));
  return mg__p2p_done(x);
}

/* A receive whose message is described in the box: 1 when taken, -1 when it failed, 0 when the
 * box holds another message. */
static int mg__p2p_from_box(mg__hx_t *x, mg__hshm_chan_t *ch) {
  const uint64_t w = atomic_load_explicit(&ch->box_word, memory_order_acquire);
  if (mg__hbox_id(w) != x->key + 1) return 0;
  return mg__hbox_bytes(w) == MG__HBOX_LENT ? mg__p2p_take(x, ch) : mg__p2p_unbox(x, ch, w);
}

/* Copies n bytes into the ring of cap bytes at stream position pos (wrapping), and out of it. */
static void mg__ring_put(unsigned char *ring, uint64_t cap, uint64_t pos, const void *src,
                         size_t n) {
  const size_t at = (size_t)(pos % cap), first = n < cap - at ? n : (size_t)(cap - at);
  mg__copy(ring + at, src, first);
  mg__copy(ring, (const unsigned char *)src + first, n - first);
}

static void mg__ring_get(void *dst, const unsigned char *ring, uint64_t cap, uint64_t pos,
                         size_t n) {
  const size_t at = (size_t)(pos % cap), first = n < cap - at ? n : (size_t)(cap - at);
  mg__copy(dst, ring + at, first);
  mg__copy((unsigned char *)dst + first, ring, n - first);
}

/* The receiver's look at the header of the message at the ring's tail: 0 when it is this
 * receive's, of its size; else x fails as misused, naming what the sender sent. A later number:
 * this receive's message was empty, and went nowhere; an earlier one: an empty receive ended
 * without that message. */
static int mg__ring_header(mg__hx_t *x, const mg__hring_hdr_t *h) {
  if (h->id < x->key + 1) {
    char d[160];
    mg__error(MG_ERR_INVALID_USAGE, "%s: rank %d's message #%llu (%llu bytes) is still in the "
              "ring ahead of this receive's (which expects %zu): its receive expected none; a "
              "send and its receive must have the same count and dtype",
              mg__desc(x->op, d, sizeof d), x->op->root, (unsigned long long)(h->id - 1),
              (unsigned long long)h->bytes, x->bytes);
    return mg__hx_fail(x, MG_ERR_INVALID_USAGE, x->me);
  }
  const uint64_t bytes = h->id == x->key + 1 ? h->bytes : 0;
  return bytes == x->bytes ? 0 : mg__p2p_mismatch(x, bytes);
}

/* Moves as many bytes as the ring allows (or a lent or boxed message). 1: progress, 0: blocked,
 * -1: failed. A message through the ring begins with its header (host_shm.h), which the sender
 * publishes together with the message's first bytes, so that the receiver compares the sizes
 * before it copies anything. The sender settles the message's outcome before it publishes its
 * last bytes, so that a receiver that has them all finds it decided; the receiver looks at the
 * decision (in the line of the head it reads anyway) before it copies anything out. An empty
 * message carries nothing. */
static int mg__p2p_progress(mg__hx_t *x) {
  const mg__op_t *op = x->op;
  const int send = op->kind == MG_OPK_SEND;
  const int src = send ? x->me : op->root, dst = send ? op->root : x->me;
  mg__hshm_chan_t *ch = mg__hshm_chan(x->s, src, dst);
  if (send && x->lend) return mg__p2p_lend(x, ch);
  unsigned char *ring = mg__hshm_ring(x->s, src, dst);
  const uint64_t cap = x->s->hdr->chan_bytes;
  const size_t hdr = sizeof(mg__hring_hdr_t);
  int r;
  if (!send && x->bytes == 0) {
    /* An empty receive refuses a message of its number that is already there, in the box or at
     * the ring's tail (it has bytes); one that comes first ends at once, unable to tell
     * (docs/design.md, failure model). The head before the box: see "the box". */
    const uint64_t head = atomic_load_explicit(&ch->head, memory_order_acquire);
    const uint64_t tail = atomic_load_explicit(&ch->tail, memory_order_relaxed);
    if ((r = mg__p2p_from_box(x, ch)) != 0) return r;
    if (head - tail > hdr) {
      mg__hring_hdr_t h;
      mg__ring_get(&h, ring, cap, tail, hdr);
      if (h.id == x->key + 1) return mg__p2p_mismatch(x, h.bytes);
    }
  }
  if (send && !x->framed && x->bytes > 0 && x->bytes <= MG__HSHM_BOX_BYTES &&
      cap - (ch->sent - ch->tail_seen) >= hdr + x->bytes) {
    if (mg__hx_succeed(x) < 0) return -1;
    if (mg__hbox_free(ch)) return mg__p2p_box(x, ch);
  }
  int progressed = 0;
  while (x->moved < x->bytes) {
    const size_t lead = x->framed ? 0 : hdr; /* the header, unless it went with earlier bytes */
    const size_t want = x->bytes - x->moved;
    uint64_t head, tail, avail;
    if (send) {
      head = ch->sent;
      tail = ch->tail_seen;
      avail = cap - (head - tail);
      if (avail < lead + want) {
        tail = ch->tail_seen = atomic_load_explicit(&ch->tail, memory_order_acquire);
        avail = cap - (head - tail);
      }
    } else {
      head = atomic_load_explicit(&ch->head, memory_order_acquire);
      tail = atomic_load_explicit(&ch->tail, memory_order_relaxed);
      avail = head - tail;
      if (!x->framed) {
        /* In the box? Looked at after the head: see "the box". */
        if ((r = mg__p2p_from_box(x, ch)) != 0) return r;
        /* A later message in the box while the ring is empty: this receive's message was
         * empty (the head is read again after the box word, to have every byte before it). */
        if (avail == 0 &&
            mg__hbox_id(atomic_load_explicit(&ch->box_word, memory_order_acquire)) > x->key + 1 &&
            atomic_load_explicit(&ch->head, memory_order_acquire) == tail)
          return mg__p2p_mismatch(x, 0);
      }
    }
    if (avail <= lead) break; /* a header comes with at least one byte after it */
    const size_t nb = (size_t)(avail - lead < want ? avail - lead : want);
    if (send) {
      if (lead > 0) {
        const mg__hring_hdr_t h = {x->key + 1, x->bytes};
        mg__ring_put(ring, cap, head, &h, hdr);
      }
      mg__ring_put(ring, cap, head + lead, (const unsigned char *)op->send + x->moved, nb);
      if ((x->moved + nb == x->bytes ? mg__hx_succeed(x) : mg__hx_doomed(x)) < 0) return -1;
      atomic_store(&ch->head, head + lead + nb); /* sequentially consistent: see mg__hshm_wake */
      ch->sent = head + lead + nb;
    } else {
      if (mg__hx_doomed(x) < 0) return -1;
      if (lead > 0) {
        mg__hring_hdr_t h;
        mg__ring_get(&h, ring, cap, tail, hdr);
        if (mg__ring_header(x, &h) < 0) return -1;
      }
      mg__ring_get((unsigned char *)op->recv + x->moved, ring, cap, tail + lead, nb);
      atomic_store(&ch->tail, tail + lead + nb);
    }
    mg__hshm_wake(x->s);
    x->framed = 1;
    x->moved += nb;
    progressed = 1;
  }
  /* A receive that waits: a pair has no third rank to blame, so a failure of its message
   * decided by the sender, a timeout included, ends it now (a lent send that timed out waiting
   * for the box published nothing this receive could find). */
  if (!send && !progressed && x->moved < x->bytes && mg__hx_doomed(x) < 0) return -1;
  if (x->moved == x->bytes) {
    if (mg__hx_succeed(x) < 0) return -1; /* a load: decided by the sender (or empty) */
    return mg__p2p_done(x);
  }
  return progressed;
}

/* ---- the engine ----------------------------------------------------------------------------- */

/* Starts x if what it waits for is done. 1: started (or finished), 0: not yet, -1: failed. */
static int mg__hx_start(mg__hx_t *x) {
  if (x->after != NULL && !x->after->done) return 0;
  if (x->after != NULL && x->after->op->status < 0) {
    /* An earlier operation of the same lane failed: this one cannot run. */
    x->op->status = x->after->op->status;
    x->done = 1;
    return -1;
  }
  const int coll = mg__opkind_is_collective(x->op->kind);
  /* An abort or a revoke that came after the operation was numbered: that, not the failed state
   * it left in the segment, is why x does not run. */
  const int stop = atomic_load(&x->comm->aborting);
  if (stop) return mg__hx_aborted(x, stop);
  if (atomic_load_explicit(&x->s->ranks[x->me].state, memory_order_relaxed) == MG__HRANK_FAILED) {
    /* An earlier operation failed here (mismatched, which leaves the communicator ready): this
     * rank's part of the segment is out of step with the others', and the decisions of its
     * lanes count on no rank going past an operation that failed. */
    char d[160];
    mg__error(MG_ERR_INVALID_USAGE, "%s: refused: an earlier operation of this communicator "
              "failed on this rank; destroy the communicator (or shrink it)",
              mg__desc(x->op, d, sizeof d));
    x->op->status = MG_ERR_INVALID_USAGE;
    x->done = 1;
    return -1;
  }
  if (coll) {
    x->dec = &x->s->hdr->decision;
    x->key = mg__hcomm(x->comm)->step;
  } else {
    const int send = x->op->kind == MG_OPK_SEND;
    x->dec = &mg__hshm_chan(x->s, send ? x->me : x->op->root, send ? x->op->root : x->me)->decision;
    x->key = x->op->seq;
    x->lend = mg__p2p_lends(x);
  }
  x->started = 1;
  /* Test builds: "host.fail" fails the operation as a broken transport would, with the rule's
   * code (MG_ERR_BACKEND when it is not a status); the peers see this rank fail. */
  int injected = MG_FAULT_POINT("host.fail");
  if (injected != 0) {
    char d[160];
    mg_status_t st = injected < 0 ? (mg_status_t)injected : MG_ERR_BACKEND;
    mg__error(st, "%s: injected failure (fault point host.fail)", mg__desc(x->op, d, sizeof d));
    return mg__hx_fail(x, st, x->me);
  }
  if (coll) mg__coll_start(x);
  return 1;
}

static int mg__hx_progress(mg__hx_t *x) {
  if (!x->started) {
    int r = mg__hx_start(x);
    if (r <= 0) return r;
  }
  return mg__opkind_is_collective(x->op->kind) ? mg__coll_progress(x) : mg__p2p_progress(x);
}

/* Advances every pending operation once. 1 when anything moved. */
static int mg__pass(mg__hx_t *xs, int n, int *remaining, mg_status_t *st, char *first_err) {
  int progressed = 0;
  for (int i = 0; i < n; i++) {
    mg__hx_t *x = &xs[i];
    if (x->done) continue;
    if (mg__hx_progress(x) != 0) progressed = 1;
    if (x->done) {
      (*remaining)--;
      if (x->op->status < 0 && *st == MG_OK) {
        *st = x->op->status;
        mg_last_error_copy(first_err, MG__ERROR_LEN);
      }
    }
  }
  return progressed;
}

/* Publishes the CPU this rank begins to wait on, and whether a peer of x last waited on the same
 * one: that peer then most likely cannot run until this rank gives the CPU away (ranks are not
 * bound to CPUs, and the kernel often leaves two busy ranks on one CPU for many milliseconds),
 * so a long spin only delays it. A stale answer (the peer moved since) costs a sched_yield per
 * idle pass, which returns at once when the CPU has nothing else to run. */
static int mg__shares_cpu(const mg__hx_t *x) {
  const int cpu = sched_getcpu();
  if (cpu < 0) return 0;
  _Atomic int32_t *mine = &x->s->ranks[x->me].cpu;
  /* Stored only when it changed: peers read this line at every wait, and a store, even of the
   * same value, takes it from them. */
  if (atomic_load_explicit(mine, memory_order_relaxed) != cpu + 1)
    atomic_store_explicit(mine, cpu + 1, memory_order_relaxed);
  for (int r = 0; r < x->n; r++)
    if (r != x->me && atomic_load_explicit(&x->s->ranks[r].cpu, memory_order_relaxed) == cpu + 1)
      return 1;
  return 0;
}

/* 1 when the calling thread may run on one CPU only (bound, as mpirun and Slurm bind ranks). No
 * peer can then be waiting for this CPU, unless one is bound to it too or was placed on it
 * unbound, which mg__shares_cpu sees once that peer waited here; a yield can only hand the CPU to
 * another program, for a whole time slice. With one busy program beside 2 processes bound to
 * the 2-CPU VM's CPUs, yielding made an in-place broadcast of 128 KiB take 4 ms instead of 15
 * us, and the 2-8 MiB collectives 2.1-16.9x Open MPI's time, where Open MPI (which polls) lost
 * little (bench/results/2026-11-25-host-busy-neighbour.md). */
static int mg__bound_to_one_cpu(double now) {
  static _Thread_local struct {
    double at; /* when this thread last asked (a system call: at most once a second) */
    int bound;
  } seen = {-1, 0};
  if (seen.at < 0 || now - seen.at > 1.0) {
    cpu_set_t set;
    seen.bound = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1;
    seen.at = now;
  }
  return seen.bound;
}

/* How long a launch may wait without sleeping when every operation it has pending only waits
 * for its readers: the last step of a direct collective, which every rank posted and whose other
 * ranks copy out of this rank's buffer now, on their CPUs (a process_vm_readv of megabytes takes
 * hundreds of microseconds). Sleeping there only adds the futex's wake-up to the collective, at
 * its end (gather of 2 processes at 2-8 MiB on a 16-CPU Xeon: 0.98-1.09x Open MPI's time sleeping
 * after 50 us, 0.86-1.02x polling; bench/results/2026-11-29-host-readers-spin-xeon.md). The
 * bound: what the readers read together at 1 GB/s, at most 10 ms; 0 when anything else is
 * pending, which sleeps after MGCOMM_HOST_SPIN_US as before. */
static double mg__readers_copy_s(const mg__hx_t *xs, int n) {
  double t = 0;
  for (int i = 0; i < n; i++) {
    const mg__hx_t *x = &xs[i];
    if (x->done) continue;
    if (!x->started || x->alg != MG__ALG_DIRECT || x->phase != 3) return 0;
    t += (double)x->bytes * (double)(x->n - 1) * 1e-9;
  }
  return t < 0.01 ? t : 0.01;
}

mg_status_t mg__host_launch(mg__op_t *const *ops, int n) {
  mg__hx_t inline_x[4];
  mg__hx_t *xs = n <= 4 ? inline_x : calloc((size_t)n, sizeof *xs);
  if (xs == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "host backend: out of memory");
  if (xs == inline_x) memset(inline_x, 0, sizeof inline_x[0] * (size_t)n);
  mg_status_t st = MG_OK;
  for (int i = 0; i < n; i++) {
    mg__hx_t *x = &xs[i];
    x->op = ops[i];
    x->comm = ops[i]->comm;
    x->s = &mg__hcomm(x->comm)->shm;
    x->n = x->comm->nranks;
    x->me = x->comm->rank;
    x->look = (x->me + 1) % x->n;
    x->es = mg__dtype_size(ops[i]->dtype);
    x->bytes = ops[i]->count * x->es;
    x->in = x->n <= 16 ? x->in_inline : malloc(sizeof *x->in * (size_t)x->n);
    if (x->in != NULL && ops[i]->redop.premul && mg__opkind_is_reduction(ops[i]->kind)) {
      x->scal = malloc(8 * (size_t)x->n);
      if (x->scal == NULL && x->in != x->in_inline) free(x->in);
      if (x->scal == NULL) x->in = NULL;
    }
    if (x->in == NULL) {
      for (int j = 0; j < i; j++) {
        if (xs[j].in != xs[j].in_inline) free(xs[j].in);
        free(xs[j].scal);
      }
      if (xs != inline_x) free(xs);
      return mg__error(MG_ERR_OUT_OF_MEMORY, "host backend: out of memory");
    }
    for (int j = i - 1; j >= 0 && x->after == NULL; j--)
      if (mg__same_lane(ops[j], ops[i])) x->after = &xs[j];
  }
  static _Atomic double spin_s = -1; /* MGCOMM_HOST_SPIN_US, read once */
  double spin = atomic_load_explicit(&spin_s, memory_order_relaxed);
  if (spin < 0) {
    spin = (double)mg__param_int(MG_PARAM_HOST_SPIN_US) * 1e-6;
    atomic_store_explicit(&spin_s, spin, memory_order_relaxed);
  }
  const int ncpu = mg__machine_cpus();
  /* The first idle passes only spin (~2 us): a peer running on another CPU answers sooner. A
   * longer wait most often means that the peer is not running (more busy threads than CPUs:
   * more ranks than CPUs, or other programs), and it may be waiting for this CPU; from then on
   * every idle pass gives the CPU away. With more ranks than CPUs that is the case at once (Open
   * MPI yields at every poll when oversubscribed); sooner when a peer waited on this rank's CPU
   * (mg__shares_cpu); never when this thread is bound to one CPU (mg__bound_to_one_cpu). */
  unsigned spin_passes = xs[0].n > ncpu ? 0 : 64;
  double idle_since = -1;
  /* Passes without progress. The clock is read, the operations checked and the CPU published at
   * the 16th and every 16th after it, not at the first: a small collective's wait for its peers
   * is most often over within a few passes, and that first look (a clock read alone ~27 ns on the
   * development VM) delayed the pass that would see the peers' data. */
  unsigned idle = 0;
  int remaining = n;
  char first_err[MG__ERROR_LEN]; /* set with st; not cleared: 1 KiB of stores per call */
  first_err[0] = '\0';
  while (remaining > 0) {
    if (mg__pass(xs, n, &remaining, &st, first_err)) {
      idle_since = -1;
      idle = 0;
      continue;
    }
    if (remaining == 0) break;
    if ((++idle & 15) != 0) {
      if (idle > spin_passes) sched_yield();
      else mg__cpu_relax();
      continue;
    }
    double now = mg__now();
    if (idle_since < 0) { /* the first look of this launch */
      idle_since = now;
      /* With a peer on this CPU, ~0.6 us: on one CPU an 8-byte all_reduce of 2 ranks took 4.6
       * us per iteration with the long spin, 3.1 with this one, 2.5 without any; but ranks
       * that never spun stayed together on one CPU about twice as often (30 against 17 of 160
       * sizes of `mgcomm bench -t 2`, 2-CPU VM), since the kernel then rarely moved them. */
      if (spin_passes > 0)
        spin_passes = mg__shares_cpu(&xs[0])   ? 16
                      : mg__bound_to_one_cpu(now) ? UINT_MAX
                                                  : spin_passes;
    }
    for (int i = 0; i < n; i++) {
      mg__hx_t *x = &xs[i];
      if (x->done || mg__hx_check(x, now) == 0) continue;
      remaining--;
      if (st == MG_OK) {
        st = x->op->status;
        mg_last_error_copy(first_err, sizeof first_err);
      }
    }
    if (remaining == 0) break;
    /* Spinning: back to the passes at once. A burst of pauses here would leave this rank blind
     * to a peer's publication for its length (32 pauses are ~0.8 us on AMD Zen, where one is ~60
     * cycles), and a small collective is a chain of such waits. */
    const double idle_s = now - idle_since;
    if (idle_s < spin || idle_s < mg__readers_copy_s(xs, n)) continue;
    /* Sleep on the segment of the first pending operation; with several segments a wake on
     * another one is not seen here, so sleep briefly. Announce the sleep, then look once more
     * (mg__hshm_sleep_begin's contract), so that no publication is missed. */
    mg__hshm_t *sleep_on = NULL;
    int several = 0;
    for (int i = 0; i < n; i++) {
      if (xs[i].done) continue;
      if (sleep_on == NULL) sleep_on = xs[i].s;
      else if (xs[i].s != sleep_on) several = 1;
    }
    uint32_t seen = mg__hshm_sleep_begin(sleep_on);
    int aborting = 0; /* an abort also bumps the word only for announced sleepers */
    for (int i = 0; i < n; i++) aborting |= !xs[i].done && atomic_load(&xs[i].comm->aborting);
    if (!aborting && !mg__pass(xs, n, &remaining, &st, first_err) && remaining > 0)
      mg__hshm_sleep(sleep_on, seen, several ? 0.001 : 0.05);
    mg__hshm_sleep_end(sleep_on);
  }
  for (int i = 0; i < n; i++) {
    if (xs[i].op->status < 0 && mg__lends_send(&xs[i])) mg__direct_drain(&xs[i]);
    if (xs[i].in != xs[i].in_inline) free(xs[i].in);
    free(xs[i].scal);
  }
  if (xs != inline_x) free(xs);
  if (st < 0) mg__error(st, "%s", first_err);
  return st;
}
