/*
 * ops.c -- the public operations: each builds an operation record with NCCL's argument meaning,
 * checks it and posts it (group.c). Nothing else happens here.
 */
#include "base/log.h"
#include "core/comm.h"
#include "core/op.h"
#include "core/stream.h"

/* Checks op (the communicator, every argument, the stream, then what only the backend can) and
 * posts it, inside the communicator (comm.h). v_in: all_to_allv's four arrays, else NULL. */
static mg_status_t mg__post(mg__op_t *op, const size_t *const v_in[4], const char *fn) {
  mg_comm_t *comm = op->comm;
  mg_status_t st = mg__comm_enter_ready(comm, fn);
  if (st < 0) return mg__post_refused(op, st, 0);
  mg__log_set_rank(comm->rank);
  st = mg__op_validate(op, v_in, fn);
  if (st >= 0 && op->stream != NULL && mg__hstreams_any()) st = mg__op_stream(op, fn);
  if (st >= 0) st = comm->backend->check_op(op, fn);
  st = st < 0 ? mg__post_refused(op, st, 1) : mg__post_checked(op, fn);
  mg__comm_leave(comm);
  return st;
}

#define MG__OP(kind_, comm_, send_, recv_, count_, dtype_, redop_, root_, stream_) \
  {.kind = (kind_), .comm = (comm_), .send = (send_), .recv = (recv_), .count = (count_), \
   .dtype = (dtype_), .redop = {.op = (redop_)}, .root = (root_), .stream = (stream_)}

mg_status_t mg_all_reduce(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                  mg_op_t op, mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_ALL_REDUCE, comm, send, recv, count, dtype, op, -1, stream);
  return mg__post(&o, NULL, "mg_all_reduce");
}

mg_status_t mg_broadcast(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                 int root, mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_BROADCAST, comm, send, recv, count, dtype, MG_SUM, root, stream);
  return mg__post(&o, NULL, "mg_broadcast");
}

mg_status_t mg_reduce(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                              mg_op_t op, int root, mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_REDUCE, comm, send, recv, count, dtype, op, root, stream);
  return mg__post(&o, NULL, "mg_reduce");
}

mg_status_t mg_all_gather(const void *send, void *recv, size_t sendcount, mg_dtype_t dtype,
                                  mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_ALL_GATHER, comm, send, recv, sendcount, dtype, MG_SUM, -1, stream);
  return mg__post(&o, NULL, "mg_all_gather");
}

mg_status_t mg_reduce_scatter(const void *send, void *recv, size_t recvcount,
                                      mg_dtype_t dtype, mg_op_t op, mg_comm_t *comm,
                                      mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_REDUCE_SCATTER, comm, send, recv, recvcount, dtype, op, -1, stream);
  return mg__post(&o, NULL, "mg_reduce_scatter");
}

mg_status_t mg_all_to_all(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                                  mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_ALL_TO_ALL, comm, send, recv, count, dtype, MG_SUM, -1, stream);
  return mg__post(&o, NULL, "mg_all_to_all");
}

mg_status_t mg_all_to_allv(const void *send, const size_t *sendcounts,
                                   const size_t *sdispls, void *recv, const size_t *recvcounts,
                                   const size_t *rdispls, mg_dtype_t dtype, mg_comm_t *comm,
                                   mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_ALL_TO_ALLV, comm, send, recv, 0, dtype, MG_SUM, -1, stream);
  const size_t *const v[4] = {sendcounts, sdispls, recvcounts, rdispls};
  return mg__post(&o, v, "mg_all_to_allv");
}

mg_status_t mg_gather(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                              int root, mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_GATHER, comm, send, recv, count, dtype, MG_SUM, root, stream);
  return mg__post(&o, NULL, "mg_gather");
}

mg_status_t mg_scatter(const void *send, void *recv, size_t count, mg_dtype_t dtype,
                               int root, mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_SCATTER, comm, send, recv, count, dtype, MG_SUM, root, stream);
  return mg__post(&o, NULL, "mg_scatter");
}

mg_status_t mg_send(const void *send, size_t count, mg_dtype_t dtype, int peer,
                            mg_comm_t *comm, mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_SEND, comm, send, NULL, count, dtype, MG_SUM, peer, stream);
  return mg__post(&o, NULL, "mg_send");
}

mg_status_t mg_recv(void *recv, size_t count, mg_dtype_t dtype, int peer, mg_comm_t *comm,
                            mg_stream_t stream) {
  mg__op_t o = MG__OP(MG_OPK_RECV, comm, NULL, recv, count, dtype, MG_SUM, peer, stream);
  return mg__post(&o, NULL, "mg_recv");
}
