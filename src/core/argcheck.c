/*
 * argcheck.c -- what the checks of an operation's arguments (argcheck.h) keep out of line: the
 * copy for any kind, all_to_allv's arrays, and the names of the kinds.
 */
#include <stdlib.h>
#include <string.h>

#include "core/argcheck.h"

const char *mg__opkind_name(mg__opkind_t kind) {
  static const char *const names[MG_OPK_COUNT] = {
      "all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "all_to_all",
      "all_to_allv", "gather", "scatter", "send", "recv"};
  return (unsigned)kind < MG_OPK_COUNT ? names[kind] : "unknown";
}

mg_status_t mg__op_validate(mg__op_t *op, const size_t *const v_in[4], const char *fn) {
  return mg__op_check(op, op->kind, v_in, fn);
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

mg_status_t mg__op_check_v(const mg__op_t *op, const size_t *const v_in[4], const char *fn,
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

mg_status_t mg__op_copy_v(mg__op_t *op, const size_t *const v_in[4], const char *fn) {
  const size_t n = (size_t)op->comm->nranks;
  op->v = malloc(4 * n * sizeof(size_t));
  if (op->v == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  for (int i = 0; i < 4; i++) memcpy(op->v + (size_t)i * n, v_in[i], sizeof(size_t) * n);
  return MG_OK;
}
