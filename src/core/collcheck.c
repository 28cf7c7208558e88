/*
 * collcheck.c -- the collective check (MGCOMM_CHECK_COLLECTIVES=1), a debugging aid on every
 * backend: before a collective runs, the ranks of its communicator exchange a record of what each
 * called (kind, count, dtype, op, root, sequence number) through the backend's check_exchange,
 * and every rank compares all the records. A mismatch is refused on every rank with
 * MG_ERR_INVALID_USAGE and one message, the same on all of them, naming every rank's call;
 * without the check it would hang (NCCL) or fail later with a message that names two ranks only
 * (host). The price is one small all_gather per collective, and on NCCL a wait on the host for it.
 *
 * A launch is checked in rounds: round j exchanges the j-th checked collective of each
 * communicator of the launch, the communicators together (one thread may drive every rank of a
 * group), so that the ranks of a communicator make the same exchanges whatever else their
 * launches hold. A communicator whose records differ stops exchanging (its ranks all saw the
 * same records); the others finish their rounds, as their peers elsewhere do; then the launch is
 * refused as a whole (a group is never half posted).
 *
 * Send and receive are not checked: the two sides of a pair call different operations, and
 * the other ranks nothing, so there is no signature that every rank shares.
 *
 * Divisions: records; the message; the rounds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "core/collcheck.h"
#include "core/comm.h"
#include "core/trace.h"

/* ---- records --------------------------------------------------------------------------------- */

#define MG__CSIG_MAGIC 0x6b63676du /* "mgck" */
#define MG__CSIG_PREMUL (-2)       /* the op of a PreMulSum (its value differs between ranks) */

typedef struct mg__csig {
  uint64_t seq;   /* the collective's sequence number on its communicator */
  uint64_t count; /* the call's count; all_to_allv: sum over peers p of sendcounts[p] * w(me, p) */
  uint64_t vsum;  /* all_to_allv: sum over peers q of recvcounts[q] * w(q, me); else 0 */
  int32_t root;   /* broadcast, reduce, gather, scatter; else -1 */
  int32_t op;     /* reductions: the built-in op, or MG__CSIG_PREMUL; else -1 */
  uint16_t kind;  /* mg__opkind_t */
  uint16_t dtype; /* mg_dtype_t */
  uint32_t magic; /* MG__CSIG_MAGIC: a record, not what a rank without the check sent */
} mg__csig_t;
_Static_assert(sizeof(mg__csig_t) == MG__CHECK_BYTES, "a record is what the backends exchange");

static int mg__rooted(int kind) {
  return kind == MG_OPK_BROADCAST || kind == MG_OPK_REDUCE || kind == MG_OPK_GATHER ||
         kind == MG_OPK_SCATTER;
}

/* The weight of the pair (sender a, receiver b) in all_to_allv's sums: the sums over all ranks
 * of count and of vsum are equal exactly when (with overwhelming probability, the weights being
 * pseudo-random) sendcounts[p] of every rank r equals recvcounts[r] of rank p. */
static uint64_t mg__a2av_w(int a, int b) {
  return mg__mix64(((uint64_t)(uint32_t)a << 32) | (uint32_t)b) | 1;
}

static void mg__csig_make(const mg__op_t *op, mg__csig_t *s) {
  memset(s, 0, sizeof *s);
  s->seq = op->seq;
  s->kind = (uint16_t)op->kind;
  s->dtype = (uint16_t)op->dtype;
  s->magic = MG__CSIG_MAGIC;
  s->root = mg__rooted(op->kind) ? op->root : -1;
  s->op = !mg__opkind_is_reduction(op->kind) ? -1
          : op->redop.premul                 ? MG__CSIG_PREMUL
                                             : (int32_t)op->redop.op;
  if (op->kind != MG_OPK_ALL_TO_ALLV) {
    s->count = op->count;
    return;
  }
  const int n = op->comm->nranks, me = op->comm->rank;
  const size_t *sc = op->v[0], *rc = op->v[2];
  for (int p = 0; p < n; p++) {
    s->count += (uint64_t)sc[p] * mg__a2av_w(me, p);
    s->vsum += (uint64_t)rc[p] * mg__a2av_w(p, me);
  }
}

/* 1 when a and b are the same call (all_to_allv's sums are compared over all ranks instead). */
static int mg__csig_same(const mg__csig_t *a, const mg__csig_t *b) {
  return a->magic == b->magic && a->seq == b->seq && a->kind == b->kind &&
         a->dtype == b->dtype && a->root == b->root && a->op == b->op &&
         (a->count == b->count || a->kind == MG_OPK_ALL_TO_ALLV);
}

/* 1 when the message shows a and b as one call: the same call, or neither a record. */
static int mg__csig_alike(const mg__csig_t *a, const mg__csig_t *b) {
  if (a->magic != MG__CSIG_MAGIC || b->magic != MG__CSIG_MAGIC)
    return a->magic != MG__CSIG_MAGIC && b->magic != MG__CSIG_MAGIC;
  return mg__csig_same(a, b);
}

/* ---- the message ----------------------------------------------------------------------------- */

/* Appends to buf[0..len) at *at, keeping it terminated. */
static void mg__cat(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mg__cat(char *buf, size_t len, size_t *at, const char *fmt, ...) {
  if (*at >= len) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *at, len - *at, fmt, ap);
  va_end(ap);
  if (k > 0) *at = *at + (size_t)k < len ? *at + (size_t)k : len;
}

/* "all_reduce #5 (float32 x 4, op sum)", "broadcast #5 (int8 x 16, root 1)". */
static void mg__csig_desc(const mg__csig_t *s, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  if (s->magic != MG__CSIG_MAGIC) {
    mg__cat(buf, len, &at, "something that is no record of the check (is "
            "MGCOMM_CHECK_COLLECTIVES=1 set on every rank?)");
    return;
  }
  const char *dt = mg_dtype_name((mg_dtype_t)s->dtype);
  mg__cat(buf, len, &at, "%s #%llu (%s", mg__opkind_name((mg__opkind_t)s->kind),
          (unsigned long long)s->seq, dt != NULL ? dt : "?");
  if (s->kind != MG_OPK_ALL_TO_ALLV)
    mg__cat(buf, len, &at, " x %llu", (unsigned long long)s->count);
  if (s->op == MG__CSIG_PREMUL) mg__cat(buf, len, &at, ", op premul_sum");
  else if (s->op >= 0) {
    const char *on = mg_op_name((mg_op_t)s->op);
    mg__cat(buf, len, &at, ", op %s", on != NULL ? on : "?");
  }
  if (s->root >= 0) mg__cat(buf, len, &at, ", root %d", s->root);
  mg__cat(buf, len, &at, ")");
}

/* Ranks r of [0, n) with in[r] set, as "0,2-5". */
static void mg__rank_list(const unsigned char *in, int n, char *buf, size_t len, int *count) {
  size_t at = 0;
  buf[0] = '\0';
  *count = 0;
  for (int r = 0; r < n; r++) {
    if (!in[r]) continue;
    int e = r;
    while (e + 1 < n && in[e + 1]) e++;
    *count += e - r + 1;
    mg__cat(buf, len, &at, "%s%d", at ? "," : "", r);
    if (e > r) mg__cat(buf, len, &at, "%s%d", e == r + 1 ? "," : "-", e);
    r = e;
  }
}

/* The verdict on the records all[0..n) of one communicator's exchange: 1 when they agree; else
 * 0 and the message in msg, made of the records only, so that every rank writes the same. */
static int mg__csig_judge(const mg__csig_t *all, int n, char *msg, size_t len) {
  int same = 1;
  for (int r = 1; r < n && same; r++) same = mg__csig_same(&all[0], &all[r]);
  if (same && all[0].kind == MG_OPK_ALL_TO_ALLV) {
    uint64_t out = 0, in = 0;
    for (int r = 0; r < n; r++) out += all[r].count, in += all[r].vsum;
    if (out == in) return 1;
    char d[160];
    mg__csig_desc(&all[0], d, sizeof d);
    snprintf(msg, len, "mismatched collectives (MGCOMM_CHECK_COLLECTIVES=1): every rank called %s, "
             "but their counts do not pair up: sendcounts[p] of rank r must equal recvcounts[r] "
             "of rank p; nothing of it ran on any rank", d);
    return 0;
  }
  if (same) return 1;

  /* What differs, over all ranks that sent a record. */
  int bad_magic = 0, d_kind = 0, d_count = 0, d_dtype = 0, d_op = 0, d_root = 0;
  int lo = -1, hi = -1; /* the ranks with the lowest and the highest sequence number */
  const mg__csig_t *ref = NULL;
  for (int r = 0; r < n; r++) {
    const mg__csig_t *s = &all[r];
    if (s->magic != MG__CSIG_MAGIC) {
      bad_magic = 1;
      continue;
    }
    if (ref == NULL) ref = s, lo = hi = r;
    d_kind |= s->kind != ref->kind;
    d_dtype |= s->dtype != ref->dtype;
    if (s->kind == ref->kind) { /* across kinds, op, root and count mean different things */
      d_op |= s->op != ref->op;
      d_root |= s->root != ref->root;
      d_count |= s->count != ref->count && s->kind != MG_OPK_ALL_TO_ALLV;
    }
    if (s->seq < all[lo].seq) lo = r;
    if (s->seq > all[hi].seq) hi = r;
  }
  size_t at = 0;
  mg__cat(msg, len, &at, "mismatched collectives at #%llu on a communicator of %d ranks "
          "(MGCOMM_CHECK_COLLECTIVES=1; they differ in",
          (unsigned long long)(lo >= 0 ? all[lo].seq : all[0].seq), n);
  const char *sep = " ";
  if (d_kind) mg__cat(msg, len, &at, "%skind", sep), sep = ", ";
  if (d_count) mg__cat(msg, len, &at, "%scount", sep), sep = ", ";
  if (d_dtype) mg__cat(msg, len, &at, "%sdtype", sep), sep = ", ";
  if (d_op) mg__cat(msg, len, &at, "%sop", sep), sep = ", ";
  if (d_root) mg__cat(msg, len, &at, "%sroot", sep), sep = ", ";
  if (lo >= 0 && all[lo].seq != all[hi].seq) {
    const unsigned long long more = (unsigned long long)(all[hi].seq - all[lo].seq);
    mg__cat(msg, len, &at, "%ssequence number: rank %d has called %llu collective%s more than "
            "rank %d on this communicator", sep, hi, more, more > 1 ? "s" : "", lo);
    sep = ", ";
  }
  if (bad_magic) mg__cat(msg, len, &at, "%swhat was exchanged", sep);
  mg__cat(msg, len, &at, "):");
  /* Every distinct call once, with the ranks that made it; at most 6 of them. */
  unsigned char *done = calloc((unsigned)n, 1), *in = calloc((unsigned)n, 1);
  if (done == NULL || in == NULL) {
    free(done);
    free(in);
    mg__cat(msg, len, &at, " (no memory to say more)");
  } else {
    int shown = 0, left = 0;
    for (int r = 0; r < n; r++) {
      if (done[r]) continue;
      if (shown == 6) {
        left++;
        continue;
      }
      memset(in, 0, (unsigned)n);
      for (int q = r; q < n; q++)
        if (!done[q] && mg__csig_alike(&all[r], &all[q])) in[q] = done[q] = 1;
      char ranks[128], d[160];
      int k;
      mg__rank_list(in, n, ranks, sizeof ranks, &k);
      mg__csig_desc(&all[r], d, sizeof d);
      mg__cat(msg, len, &at, "%s rank%s %s called %s", shown ? ";" : "", k > 1 ? "s" : "", ranks,
              d);
      shown++;
    }
    if (left > 0) mg__cat(msg, len, &at, "; %d more rank%s called other collectives", left,
                          left > 1 ? "s" : "");
    free(done);
    free(in);
  }
  mg__cat(msg, len, &at, ". Every rank must call the same collectives in the same order, with "
          "the same count, dtype, op and root; nothing of it ran on any rank");
  return 0;
}

/* ---- the rounds ------------------------------------------------------------------------------ */

/* A communicator of one rank is checked too: there is nothing to compare, but its exchange
 * costs what it costs elsewhere (`mgcomm bench -g 1` measures it on one GPU). */
static int mg__checked(const mg__op_t *op) {
  return op->comm->check_colls && mg__opkind_is_collective(op->kind);
}

/* The exchange before op failed with st: its message, naming the collective it checks. */
static mg_status_t mg__collcheck_failed(const mg__op_t *op, mg_status_t st) {
  mg_comm_t *c = op->comm;
  char d[160];
  mg__csig_t s;
  mg__csig_make(op, &s);
  mg__csig_desc(&s, d, sizeof d);
  if (st == MG_ERR_TIMED_OUT) {
    char where[600];
    mg__trace_ranks(c, op->seq, 0, where, sizeof where);
    return mg__error(st, "%s on rank %d of %d: the collective check (MGCOMM_CHECK_COLLECTIVES=1) "
                     "timed out after %g s exchanging what the ranks called: %s (a rank that has "
                     "not called it, or that runs without the check, leaves the others waiting "
                     "here)", d, c->rank, c->nranks, c->timeout_s, where);
  }
  mg__error_prefix("%s on rank %d of %d: the collective check (MGCOMM_CHECK_COLLECTIVES=1) could "
                   "not exchange what the ranks called", d, c->rank, c->nranks);
  return st;
}

/* Runs the exchanges xs[0..n) of one round: one check_exchange per backend, in the order of
 * the batch. The first error, with its message. */
static mg_status_t mg__collcheck_round(mg__xchg_t **xs, int n, mg__op_t **of) {
  for (int i = 0; i < n; i++) {
    const mg__backend_t *be = xs[i]->comm->backend;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = xs[j]->comm->backend == be;
    if (seen) continue;
    mg__xchg_t *one[1];
    mg__xchg_t **batch = xs + i, **sub = NULL;
    int k = 0;
    for (int j = i; j < n; j++) k += xs[j]->comm->backend == be;
    if (k < n - i) { /* several backends: this one's exchanges only */
      sub = k == 1 ? one : malloc(sizeof *sub * (unsigned)k);
      if (sub == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "collective check: out of memory");
      k = 0;
      for (int j = i; j < n; j++)
        if (xs[j]->comm->backend == be) sub[k++] = xs[j];
      batch = sub;
    }
    mg_status_t st = be->check_exchange(batch, k);
    if (sub != NULL && sub != one) free(sub);
    if (st < 0) {
      int f = i;
      for (int j = i; j < n; j++)
        if (xs[j]->comm->backend == be && xs[j]->status < 0) {
          f = j;
          break;
        }
      return mg__collcheck_failed(of[f], st);
    }
  }
  return MG_OK;
}

mg_status_t mg__collcheck(mg__op_t *const *ops, int n) {
  int m = 0, all_recs = 0;
  for (int i = 0; i < n; i++)
    if (mg__checked(ops[i])) m++, all_recs += ops[i]->comm->nranks;
  if (m == 0) return MG_OK;

  /* One block: for each checked op its record, its exchange, the op, a round's exchanges and
   * their ops, its round (its place among its comm's checked ops), whether its comm stopped;
   * then every rank's records of all of them. */
  const size_t head = (sizeof(mg__csig_t) + sizeof(mg__xchg_t) + 3 * sizeof(void *) +
                       2 * sizeof(int)) * (unsigned)m;
  const size_t align = _Alignof(mg__csig_t), pad = (head + align - 1) / align * align;
  unsigned char *block = malloc(pad + sizeof(mg__csig_t) * (unsigned)all_recs);
  if (block == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "collective check: out of memory");
  mg__csig_t *mine = (mg__csig_t *)block;
  mg__xchg_t *x = (mg__xchg_t *)(mine + m);
  mg__op_t **of = (mg__op_t **)(x + m);
  mg__xchg_t **round_x = (mg__xchg_t **)(of + m);
  mg__op_t **round_of = (mg__op_t **)(round_x + m);
  int *round = (int *)(round_of + m), *stopped = round + m;
  mg__csig_t *all = (mg__csig_t *)(block + pad);

  int k = 0, at = 0;
  for (int i = 0; i < n; i++) {
    if (!mg__checked(ops[i])) continue;
    mg__op_t *op = ops[i];
    of[k] = op;
    mg__csig_make(op, &mine[k]);
    x[k] = (mg__xchg_t){op->comm, &mine[k], &all[at], op->seq, op->deadline, MG_INPROGRESS};
    round[k] = 0;
    for (int j = 0; j < k; j++) round[k] += of[j]->comm == op->comm;
    stopped[k] = 0;
    at += op->comm->nranks;
    k++;
  }
  mg_status_t st = MG_OK;
  char first[MG__ERROR_LEN] = "";
  for (int j = 0; st == MG_OK; j++) {
    int nx = 0;
    for (int i = 0; i < m; i++)
      if (round[i] == j && !stopped[i]) round_x[nx] = &x[i], round_of[nx++] = of[i];
    if (nx == 0) break;
    st = mg__collcheck_round(round_x, nx, round_of);
    for (int i = 0; i < m && st == MG_OK; i++) {
      if (round[i] != j || stopped[i]) continue;
      char msg[MG__ERROR_LEN];
      if (mg__csig_judge(x[i].all, of[i]->comm->nranks, msg, sizeof msg)) continue;
      if (first[0] == '\0') memcpy(first, msg, sizeof first);
      for (int q = 0; q < m; q++) stopped[q] |= of[q]->comm == of[i]->comm;
    }
  }
  if (st == MG_OK && first[0] != '\0') st = mg__error(MG_ERR_INVALID_USAGE, "%s", first);
  free(block);
  return st;
}
