/*
 * comm_grow.c -- mg_comm_grow_id and mg_comm_grow: a larger communicator made of an existing
 * one's ranks, which keep their numbers, and new ranks (NCCL's ncclCommGrow; the counterpart
 * of shrink).
 *
 * The ranks of the old communicator call grow on it (under its lock, as split does); a new rank
 * has no communicator and calls it as it would call mg_comm_init_rank. Both end in the backend's
 * comm_grow, which makes the child; the old communicator stays as it was.
 */
#include "base/log.h"
#include "core/comm.h"

mg_status_t mg_comm_grow_id(mg_comm_t *comm, mg_unique_id_t *id) {
  static const char fn[] = "mg_comm_grow_id";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st;
  if (id == NULL) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: id is NULL", fn);
  } else if (comm->rank != 0) {
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: rank %d called it; rank 0 of comm makes the id "
                   "(and passes it to mg_comm_grow)", fn, comm->rank);
  } else if (comm->backend->grow_id == NULL || comm->backend->comm_grow == NULL) {
    st = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend cannot grow", fn,
                   comm->backend->name);
  } else {
    pthread_mutex_lock(&comm->lock);
    st = mg__comm_check_state(comm, fn);
    if (st == MG_OK) st = comm->backend->grow_id(comm, id);
    mg__comm_unlock(comm);
  }
  if (st < 0) mg__comm_save_error(comm);
  mg__comm_leave(comm);
  return st;
}

/* A rank of comm: the child inherits comm's config (or takes config, of the same backend). */
static mg_status_t mg__grow_existing(mg_comm_t *comm, int nranks, const mg_unique_id_t *id,
                                     int rank, const mg_config_t *config, mg_comm_t **out,
                                     const char *fn) {
  if (rank != MG_GROW_EXISTING)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d: a rank of comm passes "
                     "MG_GROW_EXISTING (%d) and keeps its number", fn, rank, MG_GROW_EXISTING);
  if (nranks <= comm->nranks)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: nranks %d is not larger than comm's %d", fn,
                     nranks, comm->nranks);
  if (id == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: id is NULL (every rank passes the id that "
                     "rank 0 made with mg_comm_grow_id)", fn);
  if (comm->backend->comm_grow == NULL)
    return mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend cannot grow", fn,
                     comm->backend->name);
  mg_config_t cfg = comm->config;
  if (config != NULL) {
    const mg__backend_t *be = NULL;
    MG_CHECK(mg__config_backend(config, fn, &cfg, &be));
    if (cfg.backend != MG_BACKEND_AUTO && be != comm->backend)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: config->backend %s differs from comm's %s",
                       fn, mg_backend_name(cfg.backend), comm->backend->name);
  }
  mg_comm_t *child = NULL;
  MG_CHECK(mg__comm_alloc(comm->backend, &cfg, &child));
  child->device = comm->device;
  child->rank = comm->rank;
  child->nranks = nranks;
  pthread_mutex_lock(&comm->lock);
  mg__log_set_rank(comm->rank);
  mg_status_t st = mg__comm_check_state(comm, fn);
  if (st == MG_OK)
    st = comm->backend->comm_grow(comm, id, child, mg__comm_deadline(comm));
  if (st >= 0) st = mg__comm_publish(child);
  /* As split: a failure after the ranks began to exchange leaves them disagreeing on what
   * comm did last. */
  if (mg__comm_breaks(st, 0)) mg__comm_fail(comm, st);
  mg__comm_unlock(comm);
  if (st < 0) {
    mg__comm_free(child);
    return st;
  }
  *out = child;
  return MG_OK;
}

/* A new rank: as mg_comm_init_rank, with the backend's grow instead of its init. */
static mg_status_t mg__grow_new(int nranks, const mg_unique_id_t *id, int rank,
                                const mg_config_t *config, mg_comm_t **out, const char *fn) {
  if (id == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: id is NULL on a new rank", fn);
  if (nranks < 2) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: nranks %d < 2", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d of a new rank is out of [0, %d)", fn,
                     rank, nranks);
  const mg__backend_t *be = NULL;
  mg_config_t cfg;
  MG_CHECK(mg__config_backend(config, fn, &cfg, &be));
  if (be->comm_grow == NULL)
    return mg__error(MG_ERR_NOT_SUPPORTED, "%s: the %s backend cannot grow", fn, be->name);
  mg_comm_t *comm;
  MG_CHECK(mg__comm_alloc(be, &cfg, &comm));
  comm->rank = rank;
  comm->nranks = nranks;
  mg__log_set_rank(rank);
  mg_status_t st = be->comm_grow(NULL, id, comm, mg__comm_deadline(comm));
  if (st >= 0) st = mg__comm_publish(comm);
  if (st < 0) {
    mg__comm_free(comm);
    return st;
  }
  *out = comm;
  return MG_OK;
}

mg_status_t mg_comm_grow(mg_comm_t *comm, int nranks, const mg_unique_id_t *id, int rank,
                         const mg_config_t *config, mg_comm_t **out) {
  static const char fn[] = "mg_comm_grow";
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  mg_status_t st;
  if (comm == NULL) {
    st = mg__grow_new(nranks, id, rank, config, out, fn);
  } else {
    MG_CHECK(mg__comm_enter_ready(comm, fn));
    st = mg__grow_existing(comm, nranks, id, rank, config, out, fn);
    if (st < 0) mg__comm_save_error(comm);
    mg__comm_leave(comm);
  }
  if (st == MG_OK)
    MG_INFO(MG_SUBSYS_INIT, "%s: rank %d of %d ready", fn, (*out)->rank, (*out)->nranks);
  return st;
}
