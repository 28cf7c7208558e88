/*
 * nccl_backend.c -- the NCCL backend's table and communicator lifecycle: availability, unique
 * ids, init (one rank, or every rank of this process in one NCCL group), split, shrink,
 * finalize, abort, destroy, the asynchronous error, custom ops.
 *
 * Lifecycle rules:
 *  - each rank has a nonblocking lifecycle communicator (lc); a call that answers
 *    ncclInProgress is followed by mg__nccl_wait (deadline, abort flag); an init that does not
 *    complete in time is ncclCommAbort-ed and reported as MG_ERR_TIMED_OUT;
 *  - in blocking mode the operations' communicator (nc) is split from lc, with blocking = 1, as
 *    the last step of every creation: the split is lc's job, so it is bounded as the rest is
 *    (NCCL runs a split on a thread when the parent is nonblocking, whatever the child's mode);
 *    split and shrink act on lc, and then split the child's nc from the child's lc;
 *  - abort is ncclCommAbort, which frees the NCCL communicator: it is never followed by
 *    ncclCommDestroy; destroy after a finalize is ncclCommDestroy (local by then); destroy of a
 *    communicator that was not finalized is an abort (the core does it), because a plain
 *    ncclCommDestroy is a collective of every rank of the node that hangs when one is missing;
 *  - a rank that passes MG_SPLIT_NOCOLOR gets no communicator (NCCL gives it none);
 *  - split and shrink write the new communicator from NCCL's thread when they finish, into the
 *    parent's state (pending_child), which outlives a timeout;
 *  - ncclCommAbort runs on a thread of its own (mg-abort<rank>), joined by destroy: it returns
 *    only once NCCL has freed the communicator's memory, which can wait for the kernels of the
 *    other GPUs of the process; with every communicator of the process aborting on its own
 *    thread, each stops its kernels before any free waits for them, and abort returns at once
 *    (mg_comm_abort never blocks) on any thread, the watchdog's included; mg_mem_free waits
 *    for every abort of the process to end (its kernels may use the memory until then).
 * Divisions: per-rank setup; availability and ids; init; split and shrink; the rest of the
 * lifecycle; custom ops; the table.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/nccl/nccl.h"
#include "base/clock.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/params.h"

_Static_assert(sizeof(mg__ncclUniqueId) == sizeof(mg_unique_id_t), "NCCL's id is 128 bytes");

/* ---- per-rank setup ----------------------------------------------------------------------- */

/* Binds comm to device: retains its primary context and reads what the checks need. */
mg_status_t mg__ncomm_setup(mg_comm_t *comm, int device, const char *fn) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  memset(nx, 0, sizeof *nx);
  MG_CHECK(mg__evpool_get(device, fn, &nx->evpool));
  MG_CHECK(mg__device_ctx_retain(device, fn, &nx->dev, &nx->ctx));
  nx->retained = 1;
  comm->device = device;
  mg__CUresult r = mg__cuda.DeviceGetAttribute(
      &nx->cc_major, MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, nx->dev);
  if (r == MG__CUDA_SUCCESS)
    r = mg__cuda.DeviceGetAttribute(&nx->cc_minor,
                                    MG__CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, nx->dev);
  if (r != MG__CUDA_SUCCESS) {
    mg_status_t st = mg__cu_error(r, "cuDeviceGetAttribute(COMPUTE_CAPABILITY)");
    mg__device_ctx_release(nx->dev);
    nx->retained = 0;
    return st;
  }
  nx->check_ptrs = (int)mg__param_int(MG_PARAM_CHECK_POINTERS);
  nx->native = mg__feature(MG_FEATURE_NCCL_COLLECTIVES_2_28);
  const int want = comm->config.nccl_blocking != MG_UNDEF_INT
                       ? comm->config.nccl_blocking != 0
                       : (int)mg__param_int(MG_PARAM_NCCL_BLOCKING);
  nx->blocking = mg__nccl_blocking_mode(&comm->config);
  if (want && !nx->blocking)
    MG_INFO(MG_SUBSYS_INIT, "rank %d: NCCL %d has no ncclCommSplit (2.18): nonblocking mode",
            comm->rank, mg__lib_version(MG_LIB_NCCL));
  comm->blocking_calls = nx->blocking;
  pthread_mutex_init(&nx->stop_lock, NULL);
  return MG_OK;
}

void mg__ncomm_release(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  if (nx->retained) {
    mg__device_ctx_release(nx->dev);
    pthread_mutex_destroy(&nx->stop_lock);
  }
  nx->retained = 0;
}

/* The NCCL communicator of a failed creation goes: ncclCommAbort frees it whatever state its
 * init is in (and joins NCCL's thread). */
void mg__nccl_drop(mg__ncclComm_t *nc) {
  if (*nc == NULL) return;
  /* It is being thrown away because something failed already; what abort answers changes
   * nothing (the communicator is freed either way). */
  (void)mg__nccl.CommAbort(*nc);
  *nc = NULL;
}

/* Both communicators of a failed creation go (nc first: it is split from lc). */
void mg__nccl_drop_both(mg__ncomm_t *nx) {
  if (nx->nc != nx->lc) mg__nccl_drop(&nx->nc);
  nx->nc = NULL;
  mg__nccl_drop(&nx->lc);             /* joins lc's job, which may still write pending_child */
  mg__nccl_drop(&nx->pending_child);
}

/* The last step of every creation, for comms[0..n) whose lifecycle communicators are ready:
 * their operation communicators. Nonblocking mode: lc itself. Blocking mode: a split of each lc
 * (all in one NCCL group, since the ranks of one process split together) into a blocking
 * communicator of the same ranks and configuration; each lc's job writes its comm's
 * pending_child, which outlives a timeout. */
mg_status_t mg__nccl_opcomms(mg_comm_t *const *comms, int n, double deadline,
                             const char *fn) {
  mg__ncomm_t *nx0 = mg__ncomm(comms[0]);
  if (!nx0->blocking) {
    for (int i = 0; i < n; i++) mg__ncomm(comms[i])->nc = mg__ncomm(comms[i])->lc;
    return MG_OK;
  }
  mg__ncclConfig_t cfg;
  MG_CHECK(mg__nccl_config_build(&comms[0]->config, mg__lib_version(MG_LIB_NCCL), &cfg, fn));
  cfg.blocking = 1;
  cfg.splitShare = 0; /* a sharing child would get lc's one channel (mg__nccl_config_lc) */
  mg_status_t st = MG_OK;
  mg__ncclResult_t r = n > 1 ? mg__nccl.GroupStart() : MG__ncclSuccess;
  if (r != MG__ncclSuccess) return mg__nccl_error(r, "ncclGroupStart", NULL);
  for (int i = 0; i < n && st == MG_OK; i++) {
    mg__ncomm_t *nx = mg__ncomm(comms[i]); /* new: its pending_child is NULL */
    r = mg__nccl.CommSplit(nx->lc, 0, comms[i]->rank, &nx->pending_child, &cfg);
    if (r != MG__ncclSuccess && r != MG__ncclInProgress)
      st = mg__nccl_error(r, "ncclCommSplit (the blocking communicator)", nx->lc);
  }
  r = n > 1 ? mg__nccl.GroupEnd() : MG__ncclSuccess;
  if (r != MG__ncclSuccess && r != MG__ncclInProgress && st == MG_OK)
    st = mg__nccl_error(r, "ncclGroupEnd", NULL);
  if (st == MG_OK) st = mg__nccl_wait(comms, n, deadline, "ncclCommSplit (the blocking communicator)");
  for (int i = 0; i < n && st == MG_OK; i++) {
    mg__ncomm_t *nx = mg__ncomm(comms[i]);
    nx->nc = nx->pending_child;
    nx->pending_child = NULL;
    mg__ncclResult_t state = MG__ncclSuccess;
    if (nx->nc == NULL)
      st = mg__error(MG_ERR_INTERNAL, "ncclCommSplit gave rank %d no blocking communicator",
                     comms[i]->rank);
    else if ((r = mg__nccl.CommGetAsyncError(nx->nc, &state)) != MG__ncclSuccess ||
             state != MG__ncclSuccess)
      st = mg__nccl_error(r != MG__ncclSuccess ? r : state, "the blocking communicator", nx->nc);
  }
  return st;
}

/* ---- availability and ids ----------------------------------------------------------------- */

mg_status_t mg__nccl_available(void) {
  mg_status_t st = mg__device_init(); /* its message names the driver and what was tried */
  if (st < 0) return MG_ERR_BACKEND_UNAVAILABLE;
  int n = 0;
  st = mg_device_count(&n);
  if (st < 0) {
    mg__error_prefix("cannot count CUDA devices");
    return MG_ERR_BACKEND_UNAVAILABLE;
  }
  if (n == 0)
    return mg__error(MG_ERR_BACKEND_UNAVAILABLE, "the CUDA driver sees no device");
  MG_CHECK(mg__load_nccl());
  st = mg__feature_require(MG_FEATURE_NCCL_CONFIG, "the NCCL backend");
  if (st < 0) {
    mg__error_prefix("mgcomm's NCCL communicators are nonblocking (abort, deadlines)");
    return MG_ERR_BACKEND_UNAVAILABLE;
  }
  return MG_OK;
}

static mg_status_t n_unique_id(mg_unique_id_t *uid) {
  /* ncclGetUniqueId needs the library only: no driver, no GPU. */
  MG_CHECK(mg__load_nccl());
  mg__ncclUniqueId id;
  mg__ncclResult_t r = mg__nccl.GetUniqueId(&id);
  if (r != MG__ncclSuccess) {
    mg_status_t st = mg__nccl_error(r, "ncclGetUniqueId", NULL);
    mg__error_prefix("mg_unique_id_create");
    return st;
  }
  memcpy(uid->internal, id.internal, sizeof uid->internal);
  return MG_OK;
}

mg_status_t mg__nccl_id(const mg_unique_id_t *uid, mg__ncclUniqueId *id, const char *fn) {
  if (memcmp(uid->internal, MG__HOST_ID_MAGIC, sizeof MG__HOST_ID_MAGIC) == 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: id is a host-backend unique id; the NCCL backend needs one made by "
                     "mg_unique_id_create(MG_BACKEND_NCCL)", fn);
  size_t i = 0;
  while (i < sizeof uid->internal && uid->internal[i] == 0) i++;
  if (i == sizeof uid->internal)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: id is all zero bytes, not an id made by mg_unique_id_create", fn);
  memcpy(id->internal, uid->internal, sizeof id->internal);
  return MG_OK;
}

/* ---- init ----------------------------------------------------------------------------------- */

static mg_status_t n_init(mg_comm_t *comm, const mg_unique_id_t *uid, double deadline) {
  static const char fn[] = "mg_comm_init_rank";
  mg__ncclUniqueId id;
  mg__ncclConfig_t cfg;
  MG_CHECK(mg__nccl_id(uid, &id, fn));
  MG_CHECK(mg__nccl_config_lc(&comm->config, &cfg, fn));
  const int device = comm->config.device == MG_UNDEF_INT ? 0 : comm->config.device;
  MG_CHECK(mg__ncomm_setup(comm, device, fn));
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__CUcontext saved = NULL;
  mg_status_t st = mg__device_ctx_enter(nx->ctx, &saved);
  if (st == MG_OK) {
    /* NCCL takes the device of the rank from the current context. */
    mg__ncclResult_t r = mg__nccl.CommInitRankConfig(&nx->lc, comm->nranks, id, comm->rank, &cfg);
    if (r != MG__ncclSuccess && r != MG__ncclInProgress)
      st = mg__nccl_error(r, "ncclCommInitRankConfig", nx->lc);
    else
      st = mg__nccl_wait(&comm, 1, deadline, "ncclCommInitRankConfig");
    if (st == MG_OK) st = mg__nccl_opcomms(&comm, 1, deadline, fn);
    if (st < 0) mg__nccl_drop_both(nx);
    mg__device_ctx_leave(nx->ctx, saved);
  }
  if (st < 0) {
    mg__ncomm_release(comm);
    mg__error_prefix("%s", fn);
    return st;
  }
  nx->tag = mg__nccl_tag_of_id(&id);
  mg__nccl_progress_join(comm);
  return MG_OK;
}

static mg_status_t n_init_all(mg_comm_t **comms, int n, const int *devices, double deadline) {
  static const char fn[] = "mg_comm_init_all";
  int ndev = 0;
  MG_CHECK(mg_device_count(&ndev));
  for (int i = 0; i < n; i++) {
    const int d = devices != NULL ? devices[i] : i;
    if (d < 0 || d >= ndev)
      return devices != NULL
                 ? mg__error(MG_ERR_INVALID_ARGUMENT, "%s: devices[%d] = %d is out of range: %d "
                             "device%s", fn, i, d, ndev, ndev == 1 ? "" : "s")
                 : mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %d ranks on devices 0..%d, but there "
                             "%s %d device%s", fn, n, n - 1, ndev == 1 ? "is" : "are", ndev,
                             ndev == 1 ? "" : "s");
  }
  mg__ncclConfig_t cfg;
  MG_CHECK(mg__nccl_config_lc(&comms[0]->config, &cfg, fn));
  mg__ncclUniqueId id;
  MG_NCCL_CHECK(NULL, GetUniqueId, &id);
  mg_status_t st = MG_OK;
  int ready = 0;
  for (; ready < n && st == MG_OK; ready++) {
    st = mg__ncomm_setup(comms[ready], devices != NULL ? devices[ready] : ready, fn);
    if (st < 0) ready--; /* that one left nothing retained */
  }
  mg__CUcontext saved = NULL, cur = NULL;
  if (st == MG_OK) {
    cur = mg__ncomm(comms[0])->ctx;
    st = mg__device_ctx_enter(cur, &saved);
    if (st < 0) cur = NULL;
  }
  if (st == MG_OK) {
    /* One NCCL group: one thread inits every rank (ncclCommInitAll, but nonblocking). */
    mg__ncclResult_t r = mg__nccl.GroupStart();
    if (r != MG__ncclSuccess) {
      st = mg__nccl_error(r, "ncclGroupStart", NULL);
    } else {
      for (int i = 0; i < n && st == MG_OK; i++) {
        mg__ncomm_t *nx = mg__ncomm(comms[i]);
        r = mg__cuda.CtxSetCurrent(nx->ctx); /* NCCL takes each rank's device from it */
        if (r != MG__CUDA_SUCCESS) {
          st = mg__cu_error(r, "cuCtxSetCurrent");
          break;
        }
        cur = nx->ctx;
        r = mg__nccl.CommInitRankConfig(&nx->lc, n, id, i, &cfg);
        if (r != MG__ncclSuccess && r != MG__ncclInProgress)
          st = mg__nccl_error(r, "ncclCommInitRankConfig", nx->lc);
      }
      r = mg__nccl.GroupEnd();
      if (r != MG__ncclSuccess && r != MG__ncclInProgress && st == MG_OK)
        st = mg__nccl_error(r, "ncclGroupEnd", NULL);
      if (st == MG_OK) st = mg__nccl_wait(comms, n, deadline, "ncclCommInitRankConfig");
      if (st == MG_OK) st = mg__nccl_opcomms(comms, n, deadline, fn);
    }
  }
  if (cur != NULL) mg__device_ctx_leave(cur, saved);
  if (st < 0) {
    for (int i = 0; i < ready; i++) {
      mg__nccl_drop_both(mg__ncomm(comms[i]));
      mg__ncomm_release(comms[i]);
    }
    mg__error_prefix("%s", fn);
    return st;
  }
  for (int i = 0; i < n; i++) {
    mg__ncomm(comms[i])->tag = mg__nccl_tag_of_id(&id);
    mg__nccl_progress_join(comms[i]);
  }
  return MG_OK;
}

/* ---- split and shrink ----------------------------------------------------------------------- */

/* Takes nc out of nx, so that no revoke starts on it any more. *revoke: 1 when the interrupt's
 * revoke thread was started on it; it must be joined (it frees nothing, and must be out of
 * NCCL) before nc is freed. */
static mg__ncclComm_t mg__nccl_take_opcomm(mg__ncomm_t *nx, int *revoke) {
  pthread_mutex_lock(&nx->stop_lock);
  mg__ncclComm_t nc = nx->nc;
  nx->nc = NULL;
  *revoke = nx->revoke_started;
  nx->revoke_started = 0;
  pthread_mutex_unlock(&nx->stop_lock);
  return nc;
}

/* Aborts the blocking operation communicator of a comm whose lock this thread holds (no thread
 * is inside it): its kernels stop and NCCL frees it. */
static void mg__nccl_stop_opcomm(mg__ncomm_t *nx) {
  int revoke;
  mg__ncclComm_t nc = mg__nccl_take_opcomm(nx, &revoke);
  if (revoke) pthread_join(nx->revoke_th, NULL);
  mg__nccl_drop(&nc);
}

/* Makes child (NULL: this rank joins none) with ncclCommSplit (shrink == 0) or ncclCommShrink,
 * waits for it, reads the child's rank and size, and gives it its tag. */
static mg_status_t mg__nccl_child(mg_comm_t *comm, mg_comm_t *child, int shrink, int color,
                                  int key, int *exclude, int nexclude, int flags, uint64_t tag,
                                  double deadline, const char *fn) {
  mg__ncomm_t *px = mg__ncomm(comm);
  mg__ncclConfig_t cfg, *cfgp = NULL;
  /* The parent's own configuration is inherited by passing none (NCCL copies it). */
  if (child != NULL && !mg__nccl_config_same(&child->config, &comm->config)) {
    MG_CHECK(mg__nccl_config_lc(&child->config, &cfg, fn));
    cfgp = &cfg;
  }
  if (child != NULL) MG_CHECK(mg__ncomm_setup(child, comm->device, fn));
  mg__CUcontext saved = NULL;
  mg_status_t st = mg__device_ctx_enter(px->ctx, &saved);
  if (st == MG_OK) {
    const char *call = shrink ? "ncclCommShrink" : "ncclCommSplit";
    /* A parent in the error state whose operations run on a blocking communicator: NCCL's
     * shrink-abort stops the kernels of lc only, so nc, whose kernels may wait on a dead peer, is
     * aborted first (no thread is inside it: this one holds the lock). */
    if (shrink && (flags & MG__NCCL_SHRINK_ABORT) && px->nc != px->lc) mg__nccl_stop_opcomm(px);
    /* A communicator an earlier, timed-out split finished after all: freed, not overwritten. */
    mg__nccl_drop(&px->pending_child);
    mg__ncclResult_t r =
        shrink ? mg__nccl.CommShrink(px->lc, exclude, nexclude, &px->pending_child, cfgp, flags)
               : mg__nccl.CommSplit(px->lc, color, key, &px->pending_child, cfgp);
    if (r != MG__ncclSuccess && r != MG__ncclInProgress)
      st = mg__nccl_error(r, call, px->lc);
    else
      st = mg__nccl_wait(&comm, 1, deadline, call); /* NCCL's job belongs to the parent */
    if (st == MG_OK && child != NULL) {
      mg__ncomm_t *cx = mg__ncomm(child);
      cx->lc = px->pending_child;
      px->pending_child = NULL;
      if (cx->lc == NULL) {
        st = mg__error(MG_ERR_INTERNAL, "%s succeeded but gave this rank no communicator", call);
      } else {
        /* The new communicator is complete once its parent's job is: its state says how. */
        st = mg__nccl_wait(&child, 1, deadline, call);
        if (st == MG_OK) MG_NCCL_CHECK_GOTO(st, out, cx->lc, CommUserRank, cx->lc, &child->rank);
        if (st == MG_OK) MG_NCCL_CHECK_GOTO(st, out, cx->lc, CommCount, cx->lc, &child->nranks);
        if (st == MG_OK) st = mg__nccl_opcomms(&child, 1, deadline, fn);
      }
    } else if (st == MG_OK && px->pending_child != NULL) {
      /* MG_SPLIT_NOCOLOR: NCCL makes no communicator; one here would be a bug of NCCL's. */
      mg__nccl_drop(&px->pending_child);
    }
  out:
    mg__device_ctx_leave(px->ctx, saved);
  }
  if (st < 0 && child != NULL) {
    mg__nccl_drop_both(mg__ncomm(child));
    mg__ncomm_release(child);
  }
  if (st < 0) {
    mg__error_prefix("%s", fn);
    return st;
  }
  if (child != NULL) {
    mg__ncomm(child)->tag = tag;
    mg__nccl_progress_join(child);
  }
  return MG_OK;
}

static mg_status_t n_split(mg_comm_t *comm, int color, int key, mg_comm_t *child,
                           double deadline) {
  static const char fn[] = "mg_comm_split";
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_SPLIT, fn));
  const uint64_t tag = mg__nccl_tag_child(mg__ncomm(comm)->tag, 0, comm->split_seq,
                                          (uint64_t)(uint32_t)color);
  return mg__nccl_child(comm, child, 0, color == MG_SPLIT_NOCOLOR ? MG__NCCL_SPLIT_NOCOLOR : color,
                        key, NULL, 0, 0, tag, deadline, fn);
}

static mg_status_t n_shrink(mg_comm_t *comm, const int *exclude, int nexclude, mg_comm_t *child,
                            double deadline) {
  static const char fn[] = "mg_comm_shrink";
  /* A parent in the error state may have kernels stuck on a dead peer: NCCL_SHRINK_ABORT stops
   * them first. */
  const int failed = atomic_load(&comm->state) == MG_COMM_ERROR;
  if (nexclude == 0) {
    /* NCCL's shrink wants at least one excluded rank; a copy of a healthy communicator is a
     * split with one color. */
    if (failed)
      return mg__error(MG_ERR_INVALID_ARGUMENT,
                       "%s: NCCL cannot shrink a communicator in the error state by no rank; "
                       "exclude the failed ones", fn);
    MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_SPLIT, fn));
    return mg__nccl_child(comm, child, 0, 0, comm->rank, NULL, 0, 0,
                          mg__nccl_tag_child(mg__ncomm(comm)->tag, 1, comm->split_seq, 0),
                          deadline, fn);
  }
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_SHRINK, fn));
  int *ex = malloc(sizeof *ex * (size_t)nexclude); /* NCCL sorts the list in place */
  if (ex == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  memcpy(ex, exclude, sizeof *ex * (size_t)nexclude);
  uint64_t h = (uint64_t)nexclude; /* exclude is sorted: every survivor hashes the same list */
  for (int i = 0; i < nexclude; i++) h = mg__mix64(h ^ (uint64_t)(uint32_t)exclude[i]);
  mg_status_t st =
      mg__nccl_child(comm, child, 1, 0, 0, ex, nexclude,
                     failed ? MG__NCCL_SHRINK_ABORT : MG__NCCL_SHRINK_DEFAULT,
                     mg__nccl_tag_child(mg__ncomm(comm)->tag, 1, comm->split_seq, h), deadline,
                     fn);
  free(ex);
  return st;
}

/* ---- the rest of the lifecycle ------------------------------------------------------------ */

static mg_status_t n_finalize(mg_comm_t *comm, double deadline) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg_status_t st = MG_OK;
  mg__ncclResult_t r;
  if (nx->nc != nx->lc) {
    /* The blocking communicator finalizes on this thread: it waits for every operation issued
     * on it, bounded by the watchdog. */
    mg__comm_call_enter(comm, deadline);
    r = mg__nccl.CommFinalize(nx->nc);
    mg__comm_call_leave(comm);
    if (r != MG__ncclSuccess) {
      char what[96];
      snprintf(what, sizeof what, "ncclCommFinalize on rank %d of %d (device %d)", comm->rank,
               comm->nranks, comm->device);
      st = mg__nccl_call_error(comm, r, what);
    }
  }
  if (st == MG_OK) {
    /* ncclCommFinalize waits (in NCCL's thread) for every operation issued on lc. */
    r = mg__nccl.CommFinalize(nx->lc);
    st = r != MG__ncclSuccess && r != MG__ncclInProgress
             ? mg__nccl_error(r, "ncclCommFinalize", nx->lc)
             : mg__nccl_wait(&comm, 1, deadline, "ncclCommFinalize");
  }
  mg__device_ctx_leave(nx->ctx, saved);
  if (st < 0) mg__error_prefix("mg_comm_finalize");
  return st;
}

static mg_status_t n_revoke(mg_comm_t *comm, double deadline) {
  static const char fn[] = "mg_comm_revoke";
  MG_CHECK(mg__feature_require(MG_FEATURE_NCCL_REVOKE, fn));
  mg__nccl_kern_abort(comm); /* our kernels in flight stop too */
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__device_ctx_enter(nx->ctx, &saved));
  mg_status_t st = MG_OK;
  /* NCCL stops what is in flight on nc (the operations' communicator) and reports
   * ncclInProgress until it is quiescent; a blocking nc does all that in the call. The
   * interrupt's revoke (stop_lock) may have done it already. */
  pthread_mutex_lock(&nx->stop_lock);
  if (!nx->revoked && nx->nc != NULL) {
    nx->revoked = 1;
    mg__ncclResult_t r = mg__nccl.CommRevoke(nx->nc, MG__NCCL_REVOKE_DEFAULT);
    if (r != MG__ncclSuccess && r != MG__ncclInProgress)
      st = mg__nccl_error(r, "ncclCommRevoke", nx->nc);
    else if (!nx->blocking)
      st = mg__nccl_wait(&comm, 1, deadline, "ncclCommRevoke");
  }
  pthread_mutex_unlock(&nx->stop_lock);
  mg__device_ctx_leave(nx->ctx, saved);
  if (st < 0) mg__error_prefix(fn);
  return st;
}

/* Starts fn on a thread of its own, named "<name><rank>" (for debuggers), with a heap copy of
 * the size bytes at arg, which fn frees. 1 when it runs, 0 when it could not start. */
static int mg__nccl_thread(pthread_t *th, void *(*fn)(void *), const void *arg, size_t size,
                           const char *name, int rank) {
  void *copy = malloc(size);
  if (copy == NULL) return 0;
  memcpy(copy, arg, size);
  if (pthread_create(th, NULL, fn, copy) != 0) {
    free(copy);
    return 0;
  }
  char label[16];
  snprintf(label, sizeof label, "%s%d", name, rank);
  (void)pthread_setname_np(*th, label); /* for debuggers only */
  return 1;
}

/* The interrupt's revoke, on a thread of its own: a blocking revoke does NCCL's whole job (its
 * streams synchronised, its proxy stopped) in the call. */
typedef struct {
  mg__ncclComm_t nc;
  mg__CUcontext ctx;
  int rank;
} mg__nrevoke_t;

static void *mg__nrevoke_main(void *arg) {
  mg__nrevoke_t *a = arg;
  mg__CUcontext saved = NULL;
  const int entered = mg__device_ctx_enter(a->ctx, &saved) == MG_OK; /* NCCL sets its device */
  mg__ncclResult_t r = mg__nccl.CommRevoke(a->nc, MG__NCCL_REVOKE_DEFAULT);
  /* Its job is done or failed: the abort that follows frees nc either way. */
  MG_INFO(MG_SUBSYS_INIT, "rank %d: ncclCommRevoke of the blocking communicator answered %s",
          a->rank, mg__nccl_result_name(r));
  if (entered) mg__device_ctx_leave(a->ctx, saved);
  free(a);
  return NULL;
}

static void n_interrupt(mg_comm_t *comm) {
  /* comm->aborting is set: ranks of this process learn it through the progress table, those of
   * other processes through the layer above, now. */
  mg__nccl_progress_stopping(comm);
  if (comm->ext != NULL && comm->ext->stopping != NULL) comm->ext->stopping(comm->ext_state);
  mg__nccl_kern_abort(comm); /* our kernels waiting for peers end now */
  /* Every wait of this backend (mg__nccl_wait, the copy stream's, mark_wait) reads
   * comm->aborting at least every millisecond; a thread inside a blocking NCCL call reads
   * NCCL's abort flag only, which a revoke sets without freeing anything. */
  mg__ncomm_t *nx = mg__ncomm(comm);
  if (!nx->blocking || !mg__comm_call_inside(comm)) return;
  if (!mg__feature(MG_FEATURE_NCCL_REVOKE)) {
    MG_WARN("rank %d: a thread is inside NCCL on a blocking communicator, and NCCL %d cannot "
            "revoke it (2.28.7): that call returns when NCCL does (nonblocking mode, "
            "MGCOMM_NCCL_BLOCKING=0, bounds it)", comm->rank, mg__lib_version(MG_LIB_NCCL));
    return;
  }
  pthread_mutex_lock(&nx->stop_lock);
  if (nx->nc != NULL && !nx->revoked) {
    const mg__nrevoke_t a = {nx->nc, nx->ctx, comm->rank};
    nx->revoke_started = nx->revoked =
        mg__nccl_thread(&nx->revoke_th, mg__nrevoke_main, &a, sizeof a, "mg-revoke", comm->rank);
    if (!nx->revoked)
      MG_WARN("rank %d: cannot start a thread to revoke the blocking communicator", comm->rank);
  }
  pthread_mutex_unlock(&nx->stop_lock);
}

/* What the abort thread needs: the NCCL communicators, taken out of the comm's state, and the
 * state itself for pending_child (alive until destroy joins the thread). */
typedef struct {
  mg__ncclComm_t nc, lc;
  mg__ncomm_t *nx;
  int rank;
  int revoke; /* nx->revoke_th is to be joined before nc is freed */
} mg__nabort_t;

/* ncclCommAbort frees the communicator whatever it answers; the answer only says whether
 * everything was released cleanly, which changes nothing for us. */
static void mg__nabort_one(mg__ncclComm_t c, int rank) {
  mg__ncclResult_t r = mg__nccl.CommAbort(c);
  if (r != MG__ncclSuccess)
    MG_INFO(MG_SUBSYS_INIT, "ncclCommAbort of rank %d answered %s", rank,
            mg__nccl_result_name(r));
}

static void mg__nabort_run(mg__nabort_t *a) {
  mg__CUcontext saved = NULL;
  /* Abort goes on without the context if it cannot be made current: NCCL sets its device. */
  const int entered = mg__device_ctx_enter(a->nx->ctx, &saved) == MG_OK;
  if (a->revoke) pthread_join(a->nx->revoke_th, NULL);
  if (a->nc != NULL && a->nc != a->lc) mg__nabort_one(a->nc, a->rank);
  /* Aborting lc joins NCCL's thread, so a split or shrink still running has written
   * pending_child by then. */
  if (a->lc != NULL) mg__nabort_one(a->lc, a->rank);
  mg__nccl_drop(&a->nx->pending_child);
  if (entered) mg__device_ctx_leave(a->nx->ctx, saved);
}

/* Aborts running on their own threads in this process (mg__nccl_aborts_wait). */
static atomic_int mg__aborts_running;

static void *mg__nabort_main(void *arg) {
  mg__nabort_run(arg);
  free(arg);
  atomic_fetch_sub(&mg__aborts_running, 1);
  return NULL;
}

mg_status_t mg__nccl_aborts_wait(const char *fn, const void *ptr) {
  const double timeout = mg__param_double(MG_PARAM_TIMEOUT), deadline = mg__now() + timeout;
  while (atomic_load(&mg__aborts_running) > 0) {
    if (mg__now() > deadline)
      return mg__error(MG_ERR_TIMED_OUT, "%s: %p: a communicator's abort has not ended after %g s "
                       "(MGCOMM_TIMEOUT), and a kernel of it may still use the memory: it "
                       "stays allocated", fn, ptr, timeout);
    const struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return MG_OK;
}

static void n_abort(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  if (nx->lc == NULL) return; /* never made (or aborted already): nothing of NCCL's is left */
  /* From now on only the abort touches them; it joins a revoke of nc still running first. */
  mg__nabort_t local = {NULL, nx->lc, nx, comm->rank, 0};
  local.nc = mg__nccl_take_opcomm(nx, &local.revoke);
  nx->lc = NULL;
  atomic_fetch_add(&mg__aborts_running, 1);
  nx->abort_started = mg__nccl_thread(&nx->abort_th, mg__nabort_main, &local, sizeof local,
                                      "mg-abort", comm->rank);
  if (nx->abort_started) return;
  atomic_fetch_sub(&mg__aborts_running, 1);
  /* No thread: abort here. It returns once NCCL has freed the communicator. */
  MG_WARN("rank %d: cannot start a thread for ncclCommAbort; aborting on this thread",
          comm->rank);
  mg__nabort_run(&local);
}

static void n_destroy(mg_comm_t *comm) {
  mg__ncomm_t *nx = mg__ncomm(comm);
  if (nx->abort_started) {
    /* The one wait mgcomm cannot bound: NCCL's free of the communicator (docs/nccl.md). */
    pthread_join(nx->abort_th, NULL);
    nx->abort_started = 0;
  }
  mg__nccl_progress_leave(comm);
  mg__CUcontext saved = NULL;
  const int entered = mg__device_ctx_enter(nx->ctx, &saved) == MG_OK;
  /* Finalized (the core aborts every other communicator first): destroy is local now. */
  int revoke;
  mg__ncclComm_t nc = mg__nccl_take_opcomm(nx, &revoke);
  if (revoke) pthread_join(nx->revoke_th, NULL);
  mg__ncclComm_t both[2] = {nc != nx->lc ? nc : NULL, nx->lc};
  for (int i = 0; i < 2; i++) {
    if (both[i] == NULL) continue;
    mg__ncclResult_t r = mg__nccl.CommDestroy(both[i]);
    if (r != MG__ncclSuccess) {
      mg__nccl_error(r, "ncclCommDestroy", NULL);
      MG_WARN("rank %d: %s", comm->rank, mg_last_error());
    }
  }
  nx->lc = NULL;
  /* Each fails only for a stream that is gone already: nothing left to release. Work still on
   * them completes first (cuStreamDestroy returns at once and CUDA frees the stream then). */
  if (nx->copy_stream != NULL) (void)mg__cuda.StreamDestroy(nx->copy_stream);
  if (nx->own_stream != NULL) (void)mg__cuda.StreamDestroy(nx->own_stream);
  nx->copy_stream = nx->own_stream = NULL;
  mg__nccl_check_release(comm);
  mg__nccl_kern_release(comm);
  if (entered) mg__device_ctx_leave(nx->ctx, saved);
  mg__ncomm_release(comm);
}

mg_status_t mg__nccl_async_error(mg_comm_t *comm) {
  /* A peer of this process that stopped: NCCL would not say so (nccl_progress.c). */
  if (!atomic_load(&comm->aborting)) MG_CHECK(mg__nccl_peers_stopped(comm));
  /* One of another process, as the layer that made the communicator heard it (mg_comm_init_env:
   * the progress published through the job's store). */
  int who = -1, how = 0;
  if (!atomic_load(&comm->aborting) && comm->ext != NULL && comm->ext->peer_stopped != NULL &&
      comm->ext->peer_stopped(comm->ext_state, &who, &how))
    return mg__error(MG_ERR_REMOTE, "rank %d of %d (device %d): rank %d, in another process, %s "
                     "its communicator (as it published through the job's store): an operation "
                     "that needs it never completes (NCCL tells a peer of no abort or revoke)",
                     comm->rank, comm->nranks, comm->device, who,
                     how == MG__STOP_REVOKE ? "revoked" : "aborted");
  /* NCCL is called for a communicator by one thread at a time. A call that holds the lock is
   * in NCCL now and reports what NCCL says itself, so this poll does not wait for it. */
  if (pthread_mutex_trylock(&comm->lock) != 0) return MG_OK;
  mg__ncomm_t *nx = mg__ncomm(comm);
  mg_status_t st = MG_OK;
  if (nx->nc != NULL) {
    mg__ncclResult_t state = MG__ncclSuccess;
    mg__ncclResult_t r = mg__nccl.CommGetAsyncError(nx->nc, &state);
    if (r != MG__ncclSuccess) state = r;
    if (state != MG__ncclSuccess && state != MG__ncclInProgress) {
      st = mg__nccl_error(state, "ncclCommGetAsyncError", nx->nc);
      mg__error_prefix("rank %d of %d (device %d)", comm->rank, comm->nranks, comm->device);
    }
  }
  /* One of our kernels that gave up waiting for a peer (nccl_kern.c; its state is set up and
   * freed under the lock). */
  if (st == MG_OK && !atomic_load(&comm->aborting)) st = mg__nccl_kern_status(comm);
  pthread_mutex_unlock(&comm->lock);
  return st;
}

/* ---- custom ops --------------------------------------------------------------------------- */

static mg_status_t n_redop_create(mg_comm_t *comm, mg_dtype_t dtype, mg__redop_t *redop) {
  static const char fn[] = "mg_op_create_premul_sum";
  const mg__ncomm_t *nx = mg__ncomm(comm);
  MG_CHECK(mg__nccl_check_types(dtype, redop, 1, nx->cc_major, nx->cc_minor, fn));
  if (redop->residence == MG_SCALAR_DEVICE && nx->check_ptrs)
    MG_CHECK(mg__device_check_ptr(redop->scalar_ptr, mg_dtype_size(dtype), comm->device, fn,
                                  "scalar"));
  /* NCCL's op is made by each launch that uses it (nccl_coll.c). */
  return MG_OK;
}

static void n_redop_destroy(mg_comm_t *comm, mg__redop_t *redop) {
  /* Nothing lives in NCCL between launches (nccl_coll.c destroys its ops after each). */
}

/* ---- the table ---------------------------------------------------------------------------- */

static mg_status_t n_available(void) { return mg__nccl_available(); }

const mg__backend_t mg__backend_nccl = {
    .version = MG__BACKEND_VERSION,
    .name = "nccl",
    .id = MG_BACKEND_NCCL,
    .caps = MG__CAP_SPLIT | MG__CAP_SHRINK | MG__CAP_REVOKE | MG__CAP_PREMUL | MG__CAP_PROGRESS |
            MG__CAP_MARKS | MG__CAP_STREAM | MG__CAP_ASYNC | MG__CAP_PROGRESS_LOCAL,
    .comm_priv_size = sizeof(mg__ncomm_t),
    .available = n_available,
    .unique_id = n_unique_id,
    .comm_init = n_init,
    .comm_init_all = n_init_all,
    .comm_split = n_split,
    .comm_shrink = n_shrink,
    .comm_revoke = n_revoke,
    .comm_finalize = n_finalize,
    .comm_interrupt = n_interrupt,
    .comm_abort = n_abort,
    .comm_destroy = n_destroy,
    .async_error = mg__nccl_async_error,
    .check_op = mg__nccl_check_op,
    .redop_create = n_redop_create,
    .redop_destroy = n_redop_destroy,
    .launch = mg__nccl_launch,
    .mem_alloc = mg__nccl_mem_alloc,
    .mem_free = mg__nccl_mem_free,
    .mem_copy = mg__nccl_mem_copy,
    .mem_register = mg__nccl_mem_register,
    .mem_deregister = mg__nccl_mem_deregister,
    .mark_priv_size = MG__NMARK_PRIV_SIZE,
    .mark_record = mg__nccl_mark_record,
    .mark_query = mg__nccl_mark_query,
    .mark_notify = mg__nccl_mark_notify,
    .mark_wait = mg__nccl_mark_wait,
    .mark_release = mg__nccl_mark_release,
    .mark_elapsed = mg__nccl_mark_elapsed,
    .op_enqueued = mg__nccl_op_enqueued,
    .peer_progress = mg__nccl_peer_progress,
    .comm_tag = mg__nccl_comm_tag,
    .comm_stream = mg__nccl_comm_stream,
    .check_exchange = mg__nccl_check_exchange,
    .comm_suspend = mg__nccl_suspend,
    .comm_resume = mg__nccl_resume,
    .comm_mem_stats = mg__nccl_mem_stats,
    .comm_properties = mg__nccl_properties,
    .grow_id = mg__nccl_grow_id,
    .comm_grow = mg__nccl_grow,
    .signal_op = mg__nccl_signal_op,
    .reg_ptr = mg__nccl_reg_ptr,
};
