/*
 * redop.c -- custom reduction operations (PreMulSum) and their capture into posted operations.
 * Op values are unique in the process, so an op of another communicator is recognised.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/op.h"

static atomic_int mg__next_op_id = MG_OP_BUILTIN_COUNT;

mg_status_t mg__redop_capture(mg__op_t *op, const char *fn) {
  mg_op_t v = op->redop.op;
  if ((int)v < 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: op %d is not a reduction op", fn, (int)v);
  if (v < MG_OP_BUILTIN_COUNT) {
    memset(&op->redop, 0, sizeof op->redop);
    op->redop.op = v;
    return MG_OK;
  }
  mg_comm_t *comm = op->comm;
  mg_status_t st = MG_OK;
  pthread_mutex_lock(&comm->redop_lock);
  const mg__custom_op_t *c = comm->custom_ops;
  while (c != NULL && c->id != v) c = c->next;
  if (c == NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT,
                   "%s: op %d is not a custom op of this communicator (destroyed, or made for "
                   "another one)", fn, (int)v);
  else if (c->dtype != op->dtype)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: custom op %d was made for %s, not %s", fn,
                   (int)v, mg_dtype_name(c->dtype), mg_dtype_name(op->dtype));
  else
    op->redop = c->redop;
  pthread_mutex_unlock(&comm->redop_lock);
  return st;
}

static mg_status_t mg__op_create_premul_sum(mg_comm_t *comm, const void *scalar, mg_dtype_t dtype,
                                    mg_scalar_residence_t residence, mg_op_t *op, const char *fn) {
  mg_status_t st = MG_OK;
  if (scalar == NULL || op == NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, scalar == NULL ? "scalar" : "op");
  else if (mg_dtype_size(dtype) == 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: dtype %d is not a data type", fn, (int)dtype);
  else if (residence != MG_SCALAR_DEVICE && residence != MG_SCALAR_HOST_IMMEDIATE)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: residence %d is neither MG_SCALAR_DEVICE (0) "
                   "nor MG_SCALAR_HOST_IMMEDIATE (1)", fn, (int)residence);
  else if (!(comm->backend->caps & MG__CAP_PREMUL))
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend has no custom ops", fn,
                   comm->backend->name);
  if (st < 0) {
    mg__comm_save_error(comm);
    return st;
  }
  mg__custom_op_t *c = calloc(1, sizeof *c);
  if (c == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  c->dtype = dtype;
  c->redop.premul = 1;
  c->redop.residence = residence;
  if (residence == MG_SCALAR_HOST_IMMEDIATE)
    memcpy(c->redop.scalar, scalar, mg_dtype_size(dtype));
  else
    c->redop.scalar_ptr = scalar;
  st = comm->backend->redop_create(comm, dtype, &c->redop);
  if (st < 0) {
    mg__comm_save_error(comm);
    free(c);
    return st;
  }
  c->id = (mg_op_t)atomic_fetch_add(&mg__next_op_id, 1);
  c->redop.op = c->id;
  pthread_mutex_lock(&comm->redop_lock);
  c->next = comm->custom_ops;
  comm->custom_ops = c;
  pthread_mutex_unlock(&comm->redop_lock);
  *op = c->id;
  return MG_OK;
}

mg_status_t mg_op_create_premul_sum(mg_comm_t *comm, const void *scalar, mg_dtype_t dtype,
                                    mg_scalar_residence_t residence, mg_op_t *op) {
  static const char fn[] = "mg_op_create_premul_sum";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__op_create_premul_sum(comm, scalar, dtype, residence, op, fn);
  mg__comm_leave(comm);
  return st;
}

static mg_status_t mg__op_destroy(mg_comm_t *comm, mg_op_t op, const char *fn) {
  if ((int)op < MG_OP_BUILTIN_COUNT)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: op %d is %s, not a custom op", fn, (int)op,
                     (int)op < 0 ? "negative" : "built in");
  pthread_mutex_lock(&comm->redop_lock);
  mg__custom_op_t **pp = &comm->custom_ops;
  while (*pp != NULL && (*pp)->id != op) pp = &(*pp)->next;
  mg__custom_op_t *c = *pp;
  if (c != NULL) *pp = c->next;
  pthread_mutex_unlock(&comm->redop_lock);
  if (c == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: op %d is not a custom op of this communicator",
                     fn, (int)op);
  if (!atomic_load(&comm->aborting)) comm->backend->redop_destroy(comm, &c->redop);
  free(c);
  return MG_OK;
}

mg_status_t mg_op_destroy(mg_comm_t *comm, mg_op_t op) {
  static const char fn[] = "mg_op_destroy";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__op_destroy(comm, op, fn);
  mg__comm_leave(comm);
  return st;
}
