/*
 * comm_suspend.c -- suspend and resume of a communicator, its memory statistics and its
 * properties (mgcomm.h, "Suspend, memory statistics, grow, properties").
 *
 * Suspend is collective and leaves the communicator READY with comm->suspended set: the state
 * check (comm.c) then refuses operations, split, shrink and finalize with a message that says
 * to resume, while abort, destroy, queries and resume still work. The flag changes only under
 * comm->lock, around the backend's call, so an operation that passed the check before suspend
 * took the lock finishes before the backend releases anything (operations run under the lock).
 */
#include <string.h>

#include "base/log.h"
#include "core/comm.h"
#include "core/stream.h"

/* Nothing of comm may be queued on its host streams when its memory goes: what they hold runs
 * first (as finalize does). */
static mg_status_t mg__suspend_drain(mg_comm_t *comm, const char *fn) {
  if (!comm->worker_owned) return MG_OK;
  if (mg__worker_is_current(comm->worker))
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: called on the communicator's own worker (from a callback), which "
                     "would wait for itself", fn);
  return mg__worker_drain(comm->worker, mg__comm_deadline(comm), fn);
}

static mg_status_t mg__comm_suspend(mg_comm_t *comm, int flags, const char *fn) {
  if (flags != MG_SUSPEND_MEM)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: flags 0x%x: MG_SUSPEND_MEM (0x%x) is the "
                     "only flag, and suspend needs it", fn, (unsigned)flags, MG_SUSPEND_MEM);
  if (comm->backend->comm_suspend == NULL)
    return mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend cannot suspend", fn,
                     comm->backend->name);
  MG_CHECK(mg__suspend_drain(comm, fn));
  pthread_mutex_lock(&comm->lock);
  mg__log_set_rank(comm->rank);
  /* Another thread may have suspended or broken comm while this one drained. */
  mg_status_t st = mg__comm_check_state(comm, fn);
  if (st == MG_OK) st = comm->backend->comm_suspend(comm, flags, mg__comm_deadline(comm));
  if (st == MG_OK) atomic_store(&comm->suspended, 1);
  if (mg__comm_breaks(st, 0)) mg__comm_fail(comm, st);
  mg__comm_unlock(comm);
  if (st == MG_OK) MG_INFO(MG_SUBSYS_INIT, "%s: rank %d suspended", fn, comm->rank);
  return st;
}

mg_status_t mg_comm_suspend(mg_comm_t *comm, int flags) {
  static const char fn[] = "mg_comm_suspend";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__comm_suspend(comm, flags, fn);
  if (st < 0) mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}

static mg_status_t mg__comm_resume(mg_comm_t *comm, const char *fn) {
  pthread_mutex_lock(&comm->lock);
  mg__log_set_rank(comm->rank);
  mg_status_t st = MG_OK;
  const int state = atomic_load(&comm->state);
  if (!atomic_load(&comm->suspended))
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: comm (rank %d of %d) is not suspended", fn,
                   comm->rank, comm->nranks);
  else if (state != MG_COMM_READY)
    st = mg__comm_check_state(comm, fn);
  else if (comm->backend->comm_resume == NULL) /* a backend that suspends resumes */
    st = mg__error(MG_ERR_INTERNAL, "%s: the %s backend cannot resume", fn, comm->backend->name);
  else
    st = comm->backend->comm_resume(comm, mg__comm_deadline(comm));
  if (st == MG_OK) atomic_store(&comm->suspended, 0);
  if (mg__comm_breaks(st, 0)) mg__comm_fail(comm, st);
  mg__comm_unlock(comm);
  if (st == MG_OK) MG_INFO(MG_SUBSYS_INIT, "%s: rank %d resumed", fn, comm->rank);
  return st;
}

mg_status_t mg_comm_resume(mg_comm_t *comm) {
  static const char fn[] = "mg_comm_resume";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__comm_resume(comm, fn);
  if (st < 0) mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_comm_mem_stats(mg_comm_t *comm, mg_comm_mem_stats_t *out) {
  static const char fn[] = "mg_comm_mem_stats";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = MG_OK;
  mg_comm_mem_stats_t ms;
  memset(&ms, 0, sizeof ms);
  ms.device = comm->device;
  if (out == NULL) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  } else if (comm->backend->comm_mem_stats == NULL) {
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend keeps no memory statistics", fn,
                   comm->backend->name);
  } else {
    pthread_mutex_lock(&comm->lock);
    /* An aborted communicator's memory is gone with its backend state. */
    if (atomic_load(&comm->aborting) || atomic_load(&comm->state) == MG_COMM_FINALIZED)
      st = mg__error(MG_ERR_INVALID_USAGE, "%s: comm (rank %d of %d) is %s", fn, comm->rank,
                     comm->nranks, atomic_load(&comm->aborting) ? "aborted" : "finalized");
    else
      st = comm->backend->comm_mem_stats(comm, &ms);
    mg__comm_unlock(comm);
  }
  if (st == MG_OK) {
    ms.suspended = atomic_load(&comm->suspended);
    *out = ms;
  } else {
    mg__comm_save_error(comm);
  }
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_comm_properties(mg_comm_t *comm, mg_comm_properties_t *out) {
  static const char fn[] = "mg_comm_properties";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = MG_OK;
  mg_comm_properties_t p;
  memset(&p, 0, sizeof p);
  p.rank = comm->rank;
  p.nranks = comm->nranks;
  p.device = comm->device;
  p.nvml_device = -1;
  p.device_api = p.multimem = p.gin_type = p.lsa_teams = p.host_rma = p.railed_gin_type = -1;
  p.cft = p.cft_multimem = -1;
  if (out == NULL) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  } else if (comm->backend->comm_properties == NULL) {
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend has no properties to say", fn,
                   comm->backend->name);
  } else {
    pthread_mutex_lock(&comm->lock);
    st = mg__comm_check_state(comm, fn);
    if (st == MG_OK) st = comm->backend->comm_properties(comm, &p);
    mg__comm_unlock(comm);
  }
  if (st == MG_OK)
    *out = p;
  else
    mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}
