/*
 * argcheck.c -- the checks of one operation's arguments before anything is posted (mgcomm.h,
 * "Operations"): data type, root or peer, extents, NULL buffers, address wrap-around, and overlap
 * outside the in-place form each operation allows. The backend adds what only it can check
 * (memory spaces, extents of GPU allocations) in its check_op.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/dtype.h"
#include "core/op.h"

/* a * b without overflow; 0 on overflow. */
static int mg__mul(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return 0;
  *out = a * b;
  return 1;
}

static int mg__overlap(uintptr_t a, size_t na, uintptr_t b, size_t nb) {
  return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

const char *mg__opkind_name(mg__opkind_t kind) {
  static const char *const names[MG_OPK_COUNT] = {
      "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all",
      "all_to_allv", "gather", "scatter", "send", "recv"};
  return (unsigned)kind < MG_OPK_COUNT ? names[kind] : "unknown";
}

static const char *const mg__v_names[4] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};

/* The extent in elements of one side of an all_to_allv: max over peers of displ + count. */
static mg_status_t mg__v_extent(const size_t *counts, const size_t *displs, int n,
                                const char *fn, const char *cname, const char *dname,
                                size_t *ext) {
  size_t m = 0;
  for (int p = 0; p < n; p++) {
    if (counts[p] == 0) continue;
    if (displs[p] > SIZE_MAX - counts[p])
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s[%d] + %s[%d] overflows", fn, dname, p,
                       cname, p);
    if (displs[p] + counts[p] > m) m = displs[p] + counts[p];
  }
  *ext = m;
  return MG_OK;
}

/* all_to_allv's arrays: all four are there, the extents in elements of each side, and what the
 * rank sends itself is what it receives. */
static mg_status_t mg__v_check(const mg__op_t *op, const size_t *const v_in[4], const char *fn,
                               size_t *s_el, size_t *r_el) {
  const int n = op->comm->nranks, rank = op->comm->rank;
  for (int i = 0; i < 4; i++)
    if (v_in == NULL || v_in[i] == NULL)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, mg__v_names[i]);
  MG_CHECK(mg__v_extent(v_in[0], v_in[1], n, fn, mg__v_names[0], mg__v_names[1], s_el));
  MG_CHECK(mg__v_extent(v_in[2], v_in[3], n, fn, mg__v_names[2], mg__v_names[3], r_el));
  if (v_in[0][rank] != v_in[2][rank])
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: sendcounts[%d] (%zu) differs from recvcounts[%d] (%zu): what this "
                     "rank sends to itself must be what it receives from itself",
                     fn, rank, v_in[0][rank], rank, v_in[2][rank]);
  return MG_OK;
}

mg_status_t mg__op_keep(mg__op_t *op, const char *fn) {
  if (op->kind != MG_OPK_ALL_TO_ALLV || op->v_kept != NULL) return MG_OK;
  const size_t n = (size_t)op->comm->nranks;
  op->v_kept = malloc(4 * n * sizeof(size_t));
  if (op->v_kept == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  for (size_t i = 0; i < 4; i++) {
    memcpy(op->v_kept + i * n, op->v[i], sizeof(size_t) * n);
    op->v[i] = op->v_kept + i * n;
  }
  return MG_OK;
}

mg_status_t mg__op_validate(mg__op_t *op, const size_t *const v_in[4], const char *fn) {
  const mg__opkind_t kind = op->kind;
  const int n = op->comm->nranks, rank = op->comm->rank;
  const size_t c = op->count;
  const size_t sz = mg__dtype_size(op->dtype);
  if (sz == 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: dtype %d is not a data type", fn,
                     (int)op->dtype);
  if (mg__opkind_is_reduction(kind)) {
    if ((unsigned)op->redop.op < MG_OP_BUILTIN_COUNT)
      op->redop = (mg__redop_t){.op = op->redop.op};
    else
      MG_CHECK(mg__redop_capture(op, fn));
  }
  const int rooted = kind == MG_OPK_BROADCAST || kind == MG_OPK_REDUCE ||
                     kind == MG_OPK_GATHER || kind == MG_OPK_SCATTER;
  const int p2p = kind == MG_OPK_SEND || kind == MG_OPK_RECV;
  if (rooted || p2p) {
    if (op->root < 0 || op->root >= n)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s %d is out of [0, %d)", fn,
                       p2p ? "peer" : "root", op->root, n);
  } else {
    op->root = -1;
  }
  const int is_root = rooted && op->root == rank;

  /* Extents in elements; a side the calling rank does not use has use_* = 0. nc: n x count, for
   * the kinds whose buffers hold one block per rank. */
  size_t s_el = 0, r_el = 0, nc = 0;
  int use_s = 1, use_r = 1;
  if ((kind == MG_OPK_ALL_GATHER || kind == MG_OPK_REDUCE_SCATTER || kind == MG_OPK_ALL_TO_ALL ||
       kind == MG_OPK_GATHER || kind == MG_OPK_SCATTER) &&
      !mg__mul((size_t)n, c, &nc))
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: count %zu x %d ranks overflows", fn, c, n);
  switch (kind) {
    case MG_OPK_ALL_REDUCE: s_el = r_el = c; break;
    case MG_OPK_BROADCAST: s_el = c, r_el = c, use_s = is_root; break;
    case MG_OPK_REDUCE: s_el = c, r_el = c, use_r = is_root; break;
    case MG_OPK_ALL_GATHER: s_el = c, r_el = nc; break;
    case MG_OPK_REDUCE_SCATTER: s_el = nc, r_el = c; break;
    case MG_OPK_ALL_TO_ALL: s_el = r_el = nc; break;
    case MG_OPK_GATHER: s_el = c, r_el = nc, use_r = is_root; break;
    case MG_OPK_SCATTER: s_el = nc, r_el = c, use_s = is_root; break;
    case MG_OPK_SEND: s_el = c, use_r = 0; break;
    case MG_OPK_RECV: r_el = c, use_s = 0; break;
    case MG_OPK_ALL_TO_ALLV: MG_CHECK(mg__v_check(op, v_in, fn, &s_el, &r_el)); break;
    default:
      return mg__error(MG_ERR_INTERNAL, "%s: unknown operation kind %d", fn, (int)kind);
  }
  if (!use_s) op->send = NULL, s_el = 0;
  if (!use_r) op->recv = NULL, r_el = 0;
  size_t s_b, r_b;
  if (!mg__mul(s_el, sz, &s_b) || !mg__mul(r_el, sz, &r_b))
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: count %zu x %zu bytes (%s) overflows", fn, c,
                     sz, mg_dtype_name(op->dtype));
  const uintptr_t s = (uintptr_t)op->send, r = (uintptr_t)op->recv;
  if (s_b > 0 && s == 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: send is NULL with %zu elements to read", fn,
                     s_el);
  if (r_b > 0 && r == 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: recv is NULL with %zu elements to write", fn,
                     r_el);
  if (s_b > 0 && s > UINTPTR_MAX - s_b)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: send + %zu bytes wraps around memory", fn, s_b);
  if (r_b > 0 && r > UINTPTR_MAX - r_b)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: recv + %zu bytes wraps around memory", fn, r_b);

  /* The in-place form each operation allows; any other overlap is an error. */
  int in_place = 0;
  switch (kind) {
    case MG_OPK_ALL_REDUCE:
    case MG_OPK_BROADCAST:
    case MG_OPK_REDUCE: in_place = s == r; break;
    case MG_OPK_ALL_GATHER: in_place = s == r + (uintptr_t)rank * c * sz; break;
    case MG_OPK_REDUCE_SCATTER: in_place = r == s + (uintptr_t)rank * c * sz; break;
    case MG_OPK_GATHER: in_place = is_root && s == r + (uintptr_t)rank * c * sz; break;
    case MG_OPK_SCATTER: in_place = is_root && r == s + (uintptr_t)rank * c * sz; break;
    default: break;
  }
  if (!in_place && mg__overlap(s, s_b, r, r_b))
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: send [%p, +%zu) and recv [%p, +%zu) overlap, and not in the in-place "
                     "form of %s",
                     fn, op->send, s_b, (void *)op->recv, r_b, mg__opkind_name(kind));

  op->send_bytes = s_b;
  op->recv_bytes = r_b;
  if (kind == MG_OPK_ALL_TO_ALLV)
    for (int i = 0; i < 4; i++) op->v[i] = v_in[i];
  return MG_OK;
}
