/*
 * argcheck.h -- the checks of one operation's arguments before anything is posted
 * (ARCHITECTURE.md contract 2). mg__op_check is always inlined: each public operation (ops.c)
 * has its own copy, in which the kind is a constant and the other kinds' checks fold away (no
 * jump table, a few lines of code); mg__op_validate (argcheck.c) is the copy for any kind. The
 * backend adds what only it can check (memory spaces, extents of GPU allocations) in check_op.
 */
#ifndef MG_CORE_ARGCHECK_H
#define MG_CORE_ARGCHECK_H

#include <stdint.h>

#include "core/comm.h"
#include "core/dtype.h"
#include "core/op.h"

/* a * b without overflow; 0 on overflow. */
static inline int mg__mul(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return 0;
  *out = a * b;
  return 1;
}

static inline int mg__overlap(uintptr_t a, size_t na, uintptr_t b, size_t nb) {
  return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

/* all_to_allv's side of mg__op_check (argcheck.c): the four arrays are there, the extents in
 * elements of each side, and what the rank sends itself is what it receives. */
mg_status_t mg__op_check_v(const mg__op_t *op, const size_t *const v_in[4], const char *fn,
                           size_t *s_el, size_t *r_el);
/* Copies all_to_allv's arrays into op->v (freed by mg__op_release). */
mg_status_t mg__op_copy_v(mg__op_t *op, const size_t *const v_in[4], const char *fn);

/* mg__op_validate (op.h), always inlined. kind is op->kind, read by the caller before it made
 * any call: afterwards the compiler no longer knows what the record holds. */
static inline __attribute__((always_inline)) mg_status_t
mg__op_check(mg__op_t *op, mg__opkind_t kind, const size_t *const v_in[4], const char *fn) {
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
    case MG_OPK_ALL_TO_ALLV: MG_CHECK(mg__op_check_v(op, v_in, fn, &s_el, &r_el)); break;
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
  return kind == MG_OPK_ALL_TO_ALLV ? mg__op_copy_v(op, v_in, fn) : MG_OK;
}

#endif
