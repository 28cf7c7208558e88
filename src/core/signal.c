/*
 * signal.c -- one-sided transfers on symmetric registrations (mg_put_signal, mg_signal,
 * mg_wait_signal) and device pointers into them (mg_reg_peer_ptr, mg_reg_lsa_ptr,
 * mg_reg_user_ptr): NCCL 2.29's windows behind the core's checks.
 *
 * Every argument is checked here, against the communicator and the registration, before the
 * backend sees it; the registration is looked up under comm->lock, so that a deregistration on
 * another thread cannot free its window while the backend uses it.
 */
#include <stdio.h>

#include "core/comm.h"
#include "core/dtype.h"

/* The window of reg: a live symmetric registration of comm (the caller holds comm->lock). */
static mg_status_t mg__sig_window(mg_comm_t *comm, const mg_reg_t *reg, size_t *bytes,
                                  void **win, const char *fn) {
  int flags;
  if (reg == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: reg is NULL", fn);
  if (mg__reg_lookup(comm, reg, &flags, bytes, win) != MG_OK)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: reg %p is not a registration of this "
                     "communicator (ended already, or made on another one)", fn, (const void *)reg);
  if (flags != MG_REGISTER_SYMMETRIC)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: reg is a local registration; one-sided "
                     "transfers and peer pointers need MG_REGISTER_SYMMETRIC", fn);
  return MG_OK;
}

static mg_status_t mg__sig_peer(const mg_comm_t *comm, int peer, const char *what,
                                const char *fn) {
  if (peer < 0 || peer >= comm->nranks)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s %d is out of [0, %d)", fn, what, peer,
                     comm->nranks);
  return MG_OK;
}

/* Runs op on comm's backend under comm->lock, after the checks that need the lock (the
 * registration of a put). */
static mg_status_t mg__sig_run(mg_comm_t *comm, mg__signal_op_t *op, const mg_reg_t *reg,
                               const char *fn) {
  mg_status_t st = MG_OK;
  if (comm->backend->signal_op == NULL)
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend has no one-sided transfers (no "
                   "windows: they are NCCL's, 2.29.2 and later)", fn, comm->backend->name);
  if (st < 0) return st;
  pthread_mutex_lock(&comm->lock);
  st = mg__comm_check_state(comm, fn);
  if (st == MG_OK && op->kind == MG__SIG_PUT) {
    size_t bytes = 0;
    st = mg__sig_window(comm, reg, &bytes, &op->win, fn);
    const size_t esize = mg__dtype_size(op->dtype);
    if (st == MG_OK && (op->offset > bytes || op->count > (bytes - op->offset) / esize))
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %zu elements of %zu bytes at offset %zu pass "
                     "the end of the registration (%zu bytes)", fn, op->count, esize, op->offset,
                     bytes);
  }
  if (st == MG_OK) {
    st = comm->backend->signal_op(comm, op, mg__comm_deadline(comm));
    if (mg__comm_breaks(st, 0)) mg__comm_fail(comm, st); /* a timeout, the library's error */
  }
  mg__comm_unlock(comm);
  return st;
}

mg_status_t mg_put_signal(const void *send, size_t count, mg_dtype_t dtype, int peer,
                          mg_reg_t *reg, size_t offset, int signal, mg_comm_t *comm,
                          mg_stream_t stream) {
  static const char fn[] = "mg_put_signal";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__sig_peer(comm, peer, "peer", fn);
  if (st == MG_OK && mg__dtype_size(dtype) == 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: dtype %d is not an mg_dtype_t", fn, (int)dtype);
  if (st == MG_OK && send == NULL && count > 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: send is NULL with count %zu", fn, count);
  if (st == MG_OK && signal < 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: signal %d is negative", fn, signal);
  if (st == MG_OK) {
    mg__signal_op_t op = {.kind = MG__SIG_PUT, .send = send, .count = count, .dtype = dtype,
                          .peer = peer, .offset = offset, .signal = signal, .stream = stream};
    st = mg__sig_run(comm, &op, reg, fn);
  }
  if (st < 0) mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_signal(int peer, int signal, mg_comm_t *comm, mg_stream_t stream) {
  static const char fn[] = "mg_signal";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__sig_peer(comm, peer, "peer", fn);
  if (st == MG_OK && signal < 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: signal %d is negative", fn, signal);
  if (st == MG_OK) {
    mg__signal_op_t op = {.kind = MG__SIG_SIGNAL, .peer = peer, .signal = signal,
                          .stream = stream};
    st = mg__sig_run(comm, &op, NULL, fn);
  }
  if (st < 0) mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_wait_signal(const mg_signal_wait_t *waits, int n, mg_comm_t *comm,
                           mg_stream_t stream) {
  static const char fn[] = "mg_wait_signal";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = MG_OK;
  if (n < 1 || waits == NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                   n < 1 ? "n is below 1" : "waits is NULL");
  for (int i = 0; i < n && st == MG_OK; i++) {
    char what[32];
    snprintf(what, sizeof what, "waits[%d].peer", i);
    st = mg__sig_peer(comm, waits[i].peer, what, fn);
    if (st == MG_OK && (waits[i].signal < 0 || waits[i].count < 1))
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: waits[%d]: signal %d, count %d (signal >= 0 "
                     "and count >= 1)", fn, i, waits[i].signal, waits[i].count);
  }
  if (st == MG_OK) {
    mg__signal_op_t op = {.kind = MG__SIG_WAIT, .waits = waits, .n = n, .stream = stream};
    st = mg__sig_run(comm, &op, NULL, fn);
  }
  if (st < 0) mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}

static mg_status_t mg__reg_ptr(mg_comm_t *comm, mg_reg_t *reg, int which, int rank,
                               size_t offset, void **ptr, const char *fn) {
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = MG_OK;
  if (ptr == NULL) st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", fn);
  if (st == MG_OK && which != MG__REGPTR_USER)
    st = mg__sig_peer(comm, rank, which == MG__REGPTR_PEER ? "peer" : "lsa_rank", fn);
  if (st == MG_OK && comm->backend->reg_ptr == NULL)
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend has no windows (NCCL's, 2.29.2 "
                   "and later)", fn, comm->backend->name);
  if (st == MG_OK) {
    pthread_mutex_lock(&comm->lock);
    size_t bytes = 0;
    void *win = NULL, *out = NULL;
    st = mg__sig_window(comm, reg, &bytes, &win, fn);
    if (st == MG_OK && offset >= bytes)
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: offset %zu is past the registration's %zu "
                     "bytes", fn, offset, bytes);
    if (st == MG_OK) st = comm->backend->reg_ptr(comm, win, which, rank, offset, &out);
    mg__comm_unlock(comm);
    if (st == MG_OK) *ptr = out;
  }
  if (st < 0) mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_reg_peer_ptr(mg_comm_t *comm, mg_reg_t *reg, int peer, size_t offset,
                            void **ptr) {
  return mg__reg_ptr(comm, reg, MG__REGPTR_PEER, peer, offset, ptr, "mg_reg_peer_ptr");
}

mg_status_t mg_reg_lsa_ptr(mg_comm_t *comm, mg_reg_t *reg, int lsa_rank, size_t offset,
                           void **ptr) {
  return mg__reg_ptr(comm, reg, MG__REGPTR_LSA, lsa_rank, offset, ptr, "mg_reg_lsa_ptr");
}

mg_status_t mg_reg_user_ptr(mg_comm_t *comm, mg_reg_t *reg, void **ptr) {
  return mg__reg_ptr(comm, reg, MG__REGPTR_USER, 0, 0, ptr, "mg_reg_user_ptr");
}
