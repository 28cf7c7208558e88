/*
 * sim_comm.c -- communicators of the simulated NCCL: the registry of live communicators and the
 * entry check of every call on one, unique ids and init (one rank, with a config, all ranks),
 * the queries and the asynchronous error, ncclMemAlloc / ncclMemFree, and registration.
 *
 * Init: the ranks of one id meet in a process-wide list of meetings; the last to arrive makes
 * the clique they share. A blocking init waits inline; a nonblocking one returns ncclInProgress
 * and waits on a thread of the simulator; inside a group both wait until the group ends
 * (sim_group.c). A waiting init stops when its communicator is aborted (the handle a
 * nonblocking init gave out). The device of a rank is that of the calling thread's current
 * context (device 0 without one, as the CUDA runtime's default device).
 *
 * Divisions: registry and entry; config; ids; init; queries; memory; registration.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "sim_nccl_int.h"

/* ---- registry and entry --------------------------------------------------------------------- */

static sim_comm_t *sim_comms; /* live communicators; under sim_lock */

sim_comm_t *sim_find(mg__ncclComm_t h) {
  sim_comm_t *c = sim_comms;
  while (c != NULL && c != h) c = c->next;
  return c;
}

sim_comm_t *sim_enter(mg__ncclComm_t h, const char *call) {
  sim_nccl_init();
  if (h == NULL) return NULL;
  pthread_mutex_lock(&sim_lock);
  sim_comm_t *c = sim_find(h);
  if (c == NULL)
    sim_violation("%s called on comm %p, which is not a live communicator (freed by "
                  "ncclCommAbort or ncclCommDestroy, or never made)", call, (void *)h);
  if (c->freeing != NULL)
    sim_violation("%s called on comm %p (rank %d) while %s is freeing it", call, (void *)c,
                  c->rank, c->freeing);
  c->inside++;
  for (int i = 0; i < SIM_MAX_INSIDE; i++)
    if (c->in[i].call == NULL) {
      c->in[i].th = pthread_self();
      c->in[i].call = call;
      break;
    }
  pthread_mutex_unlock(&sim_lock);
  return c;
}

void sim_leave(sim_comm_t *c) {
  pthread_mutex_lock(&sim_lock);
  c->inside--;
  const pthread_t me = pthread_self();
  for (int i = 0; i < SIM_MAX_INSIDE; i++)
    if (c->in[i].call != NULL && pthread_equal(c->in[i].th, me)) {
      c->in[i].call = NULL;
      break;
    }
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
}

static void sim_oom(const char *what) {
  fprintf(stderr, "mgsim: out of memory for %s\n", what);
  abort(); /* a test machine out of memory: nothing sensible to simulate */
}

sim_comm_t *sim_comm_new(int rank, int nranks, int device, const sim_attrs_t *a) {
  mg__CUdevice dev = 0;
  mg__CUcontext ctx = NULL;
  mg__CUresult cr = cuDeviceGet(&dev, device);
  if (cr == MG__CUDA_SUCCESS) cr = cuDevicePrimaryCtxRetain(&ctx, dev);
  if (cr != MG__CUDA_SUCCESS) {
    sim_fail(MG__ncclUnhandledCudaError, "rank %d: device %d: the CUDA driver answered %d", rank,
             device, cr);
    return NULL;
  }
  sim_comm_t *c = calloc(1, sizeof *c);
  uint64_t *seqs = calloc(2 * (size_t)nranks, sizeof *seqs);
  if (c == NULL || seqs == NULL) sim_oom("a communicator");
  c->magic = SIM_COMM_MAGIC;
  c->rank = rank;
  c->nranks = nranks;
  c->device = device;
  c->ctx = ctx;
  c->blocking = a->blocking;
  c->channels = a->channels;
  c->split_share = a->split_share;
  c->async = MG__ncclInProgress;
  c->send_seq = seqs;
  c->recv_seq = seqs + nranks;
  pthread_mutex_lock(&sim_lock);
  c->next = sim_comms;
  sim_comms = c;
  pthread_mutex_unlock(&sim_lock);
  return c;
}

void sim_comm_free_locked(sim_comm_t *c) {
  sim_comm_t **pp = &sim_comms;
  while (*pp != c) pp = &(*pp)->next;
  *pp = c->next;
  sim_clique_t *q = c->clique;
  if (q != NULL && --q->refs == 0) {
    /* Every meeting ends before its last communicator goes: items and jobs hold the comm. */
    while (q->slots != NULL) {
      sim_slot_t *s = q->slots;
      q->slots = s->next;
      free(s->contrib);
      free(s);
    }
    free(q);
  }
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  while (c->regs != NULL) {
    sim_reg_t *g = c->regs;
    c->regs = g->next;
    free(g);
  }
  /* It fails only for a context released more often than retained, which the driver reports. */
  (void)cuDevicePrimaryCtxRelease_v2(c->device);
  free(c->send_seq);
  c->magic = 0;
  free(c); /* really freed: a later use is ASan's to report */
}

int sim_comm_gauge(const char *what, int r) {
  int n = 0;
  for (sim_comm_t *c = sim_comms; c != NULL; c = c->next) {
    if (r >= 0 && c->device != r) continue; /* a rank is its device (sim.h) */
    if (strcmp(what, "inside") == 0) n += c->inside;
    else if (strcmp(what, "comms") == 0) n++;
    else if (strcmp(what, "items") == 0) n += c->items;
    else if (strcmp(what, "jobs") == 0) n += c->jobs;
    else if (strcmp(what, "channels") == 0) n += c->channels;
  }
  return n;
}

/* ---- config --------------------------------------------------------------------------------- */

/* config's int field at offset off, when config->size covers it and it is set; else UNDEF. */
static int sim_config_int(const mg__ncclConfig_t *config, size_t off) {
  int v = MG__NCCL_CONFIG_UNDEF_INT;
  if (config->size >= off + sizeof v) memcpy(&v, (const char *)config + off, sizeof v);
  return v;
}

mg__ncclResult_t sim_config_read(const mg__ncclConfig_t *config, const sim_comm_t *parent,
                                 sim_attrs_t *out, const char *call) {
  sim_attrs_t a = {1, SIM_CHANNELS, 0}; /* NCCL's defaults: blocking, every channel */
  if (parent != NULL) a = (sim_attrs_t){parent->blocking, parent->channels, parent->split_share};
  if (config != NULL) {
    if (config->magic != MG__NCCL_CONFIG_MAGIC)
      return sim_fail(MG__ncclInvalidArgument, "%s: config was not made with "
                      "NCCL_CONFIG_INITIALIZER (magic 0x%x)", call, config->magic);
    /* NCCL reads only what config->size covers; a config's unset fields take the defaults. */
    const int b = sim_config_int(config, offsetof(mg__ncclConfig_t, blocking));
    const int max = sim_config_int(config, offsetof(mg__ncclConfig_t, maxCTAs));
    const int share = sim_config_int(config, offsetof(mg__ncclConfig_t, splitShare));
    if (b != MG__NCCL_CONFIG_UNDEF_INT && b != 0 && b != 1)
      return sim_fail(MG__ncclInvalidArgument, "%s: config->blocking is %d (0 or 1)", call, b);
    a.blocking = b == MG__NCCL_CONFIG_UNDEF_INT ? 1 : b;
    a.channels = max == MG__NCCL_CONFIG_UNDEF_INT || max > SIM_CHANNELS ? SIM_CHANNELS
                 : max < 1                                            ? 1
                                                                      : max;
    a.split_share = share == 1;
  }
  const int env = sim_env_blocking();
  if (env >= 0) a.blocking = env; /* NCCL_COMM_BLOCKING overrides the config, as in NCCL */
  const char *share_env = getenv("NCCL_COMM_SPLIT_SHARE_RESOURCES");
  if (share_env != NULL && *share_env != '\0') a.split_share = atoi(share_env) == 1;
  if (parent != NULL && a.split_share && a.channels > parent->channels)
    a.channels = parent->channels;
  *out = a;
  return MG__ncclSuccess;
}

/* ---- ids ------------------------------------------------------------------------------------ */

MGSIM_API mg__ncclResult_t ncclGetUniqueId(mg__ncclUniqueId *id) {
  sim_nccl_init();
  if (id == NULL) return sim_fail(MG__ncclInvalidArgument, "ncclGetUniqueId: id is NULL");
  size_t got = 0;
  while (got < sizeof id->internal) {
    ssize_t n = getrandom(id->internal + got, sizeof id->internal - got, 0);
    if (n <= 0) break;
    got += (size_t)n;
  }
  if (got < sizeof id->internal) {
    /* No kernel randomness: ids of one process need only differ from each other. */
    static unsigned long ctr;
    unsigned long x = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 20) ^ ++ctr;
    for (size_t i = 0; i < sizeof id->internal; i++) {
      x = x * 6364136223846793005ul + 1442695040888963407ul;
      id->internal[i] = (char)(x >> 56);
    }
  }
  id->internal[0] |= 1; /* never all zero bytes (mgcomm refuses such an id) */
  return MG__ncclSuccess;
}

/* ---- init ----------------------------------------------------------------------------------- */

typedef struct sim_meet {
  mg__ncclUniqueId id;
  int nranks, arrived;
  sim_comm_t **comms;   /* by rank; NULL where nobody is yet */
  struct sim_meet *next;
} sim_meet_t;

static sim_meet_t *sim_meets; /* inits in progress; under sim_lock */

static void sim_meet_drop(sim_meet_t *m) {
  sim_meet_t **pp = &sim_meets;
  while (*pp != m) pp = &(*pp)->next;
  *pp = m->next;
  free(m->comms);
  free(m);
}

mg__ncclResult_t sim_init_run(sim_comm_t *c, const mg__ncclUniqueId *id) {
  mg__ncclResult_t r = MG__ncclSuccess;
  pthread_mutex_lock(&sim_lock);
  sim_meet_t *m = sim_meets;
  while (m != NULL && memcmp(m->id.internal, id->internal, sizeof id->internal) != 0) m = m->next;
  if (m == NULL) {
    m = calloc(1, sizeof *m);
    if (m == NULL || (m->comms = calloc((size_t)c->nranks, sizeof *m->comms)) == NULL)
      sim_oom("an init");
    m->id = *id;
    m->nranks = c->nranks;
    m->next = sim_meets;
    sim_meets = m;
  }
  if (m->nranks != c->nranks) {
    r = sim_fail(MG__ncclInvalidUsage, "init of rank %d: nranks %d, but the ranks already there "
                 "use %d for this id", c->rank, c->nranks, m->nranks);
  } else if (m->comms[c->rank] != NULL) {
    r = sim_fail(MG__ncclInvalidUsage, "init of rank %d: another init of rank %d with this id "
                 "is in progress", c->rank, c->rank);
  } else {
    m->comms[c->rank] = c;
    if (++m->arrived == m->nranks) {
      sim_clique_t *q = calloc(1, sizeof *q);
      if (q == NULL) sim_oom("a clique");
      q->nranks = m->nranks;
      q->refs = m->nranks;
      for (int i = 0; i < m->nranks; i++) m->comms[i]->clique = q;
      sim_meet_drop(m);
      pthread_cond_broadcast(&sim_cv);
    } else {
      const unsigned epoch = c->abort_epoch;
      while (c->clique == NULL && !sim_stopped(c, epoch)) pthread_cond_wait(&sim_cv, &sim_lock);
      if (c->clique == NULL) {
        const int there = m->arrived;
        m->comms[c->rank] = NULL;
        if (--m->arrived == 0) sim_meet_drop(m);
        r = sim_fail(MG__ncclInternalError, "init of rank %d of %d: aborted while waiting for the "
                     "other ranks (%d of %d had arrived)", c->rank, c->nranks, there, c->nranks);
      }
    }
  }
  c->async = r;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  return r;
}

typedef struct {
  sim_comm_t *c;
  mg__ncclUniqueId id;
} sim_init_job_t;

static void *sim_init_job(void *arg) {
  sim_init_job_t *j = arg;
  (void)sim_init_run(j->c, &j->id); /* its outcome is the comm's async state */
  pthread_mutex_lock(&sim_lock);
  j->c->jobs--;
  pthread_cond_broadcast(&sim_cv);
  pthread_mutex_unlock(&sim_lock);
  free(j);
  return NULL;
}

static mg__ncclResult_t sim_init_deferred(void *arg) {
  const sim_init_job_t *j = arg;
  return sim_init_run(j->c, &j->id);
}

/* The device of the calling thread's current context, or 0 without one. */
static int sim_current_device(void) {
  mg__CUcontext ctx = NULL;
  mg__CUdevice dev = 0;
  if (cuCtxGetCurrent(&ctx) == MG__CUDA_SUCCESS && ctx != NULL &&
      cuCtxGetDevice(&dev) == MG__CUDA_SUCCESS)
    return dev;
  return 0;
}

static mg__ncclResult_t sim_init(mg__ncclComm_t *comm, int nranks, const mg__ncclUniqueId *id,
                                 int rank, const mg__ncclConfig_t *config, const char *call) {
  if (comm == NULL) return sim_fail(MG__ncclInvalidArgument, "%s: comm is NULL", call);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return sim_fail(MG__ncclInvalidArgument, "%s: rank %d, nranks %d", call, rank, nranks);
  sim_attrs_t a;
  mg__ncclResult_t r = sim_config_read(config, NULL, &a, call);
  if (r != MG__ncclSuccess) return r;
  sim_comm_t *c = sim_comm_new(rank, nranks, sim_current_device(), &a);
  if (c == NULL) return MG__ncclUnhandledCudaError;
  if (sim_group_depth() > 0) {
    /* NCCL hands the communicator out now and initialises it when the group ends. */
    sim_init_job_t *j = malloc(sizeof *j);
    if (j == NULL) sim_oom("an init");
    j->c = c;
    j->id = *id;
    r = sim_group_defer(c, call, sim_init_deferred, free, j);
    if (r != MG__ncclSuccess) {
      free(j);
      pthread_mutex_lock(&sim_lock);
      sim_comm_free_locked(c);
      return r;
    }
    *comm = c;
    return MG__ncclSuccess;
  }
  if (a.blocking) {
    r = sim_init_run(c, id);
    if (r != MG__ncclSuccess) {
      pthread_mutex_lock(&sim_lock);
      sim_comm_free_locked(c);
      return r;
    }
    *comm = c;
    return MG__ncclSuccess;
  }
  sim_init_job_t *j = malloc(sizeof *j);
  if (j == NULL) sim_oom("an init");
  j->c = c;
  j->id = *id;
  pthread_mutex_lock(&sim_lock);
  c->jobs++;
  pthread_mutex_unlock(&sim_lock);
  char name[16];
  snprintf(name, sizeof name, "mgsim-init%d", rank);
  if (sim_spawn(sim_init_job, j, name) != 0) {
    free(j);
    pthread_mutex_lock(&sim_lock);
    c->jobs--;
    sim_comm_free_locked(c);
    return sim_fail(MG__ncclSystemError, "%s: cannot start a thread", call);
  }
  *comm = c;
  return MG__ncclInProgress;
}

MGSIM_API mg__ncclResult_t ncclCommInitRank(mg__ncclComm_t *comm, int nranks,
                                            mg__ncclUniqueId id, int rank) {
  sim_nccl_init();
  return sim_init(comm, nranks, &id, rank, NULL, "ncclCommInitRank");
}

MGSIM_API mg__ncclResult_t ncclCommInitRankConfig(mg__ncclComm_t *comm, int nranks,
                                                  mg__ncclUniqueId id, int rank,
                                                  mg__ncclConfig_t *config) {
  sim_require(SIM_V_CONFIG, "ncclCommInitRankConfig");
  return sim_init(comm, nranks, &id, rank, config, "ncclCommInitRankConfig");
}

MGSIM_API mg__ncclResult_t ncclCommInitAll(mg__ncclComm_t *comms, int ndev, const int *devlist) {
  static const char call[] = "ncclCommInitAll";
  sim_nccl_init();
  if (comms == NULL || ndev < 1)
    return sim_fail(MG__ncclInvalidArgument, "%s: comms %p, ndev %d", call, (void *)comms, ndev);
  int count = 0;
  if (cuDeviceGetCount(&count) != MG__CUDA_SUCCESS) count = 0;
  for (int i = 0; i < ndev; i++) {
    const int d = devlist != NULL ? devlist[i] : i;
    if (d < 0 || d >= count)
      return sim_fail(MG__ncclInvalidArgument, "%s: device %d of rank %d: %d devices", call, d, i,
                      count);
    for (int j = 0; j < i; j++)
      if (devlist != NULL && devlist[j] == d)
        return sim_fail(MG__ncclInvalidArgument, "%s: device %d is listed twice", call, d);
  }
  sim_attrs_t a;
  (void)sim_config_read(NULL, NULL, &a, call); /* a NULL config cannot be refused */
  sim_comm_t **made = calloc((size_t)ndev, sizeof *made);
  sim_clique_t *q = calloc(1, sizeof *q);
  if (made == NULL || q == NULL) sim_oom("ncclCommInitAll");
  for (int i = 0; i < ndev; i++) {
    made[i] = sim_comm_new(i, ndev, devlist != NULL ? devlist[i] : i, &a);
    if (made[i] == NULL) {
      pthread_mutex_lock(&sim_lock);
      for (int j = 0; j < i; j++) {
        sim_comm_free_locked(made[j]);
        pthread_mutex_lock(&sim_lock);
      }
      pthread_mutex_unlock(&sim_lock);
      free(made);
      free(q);
      return MG__ncclUnhandledCudaError;
    }
  }
  pthread_mutex_lock(&sim_lock);
  q->nranks = ndev;
  q->refs = ndev;
  for (int i = 0; i < ndev; i++) {
    made[i]->clique = q;
    made[i]->async = MG__ncclSuccess;
    comms[i] = made[i];
  }
  pthread_mutex_unlock(&sim_lock);
  free(made);
  return MG__ncclSuccess;
}

/* ---- queries -------------------------------------------------------------------------------- */

MGSIM_API mg__ncclResult_t ncclCommGetAsyncError(mg__ncclComm_t comm,
                                                 mg__ncclResult_t *async_error) {
  sim_comm_t *c = sim_enter(comm, "ncclCommGetAsyncError");
  if (c == NULL || async_error == NULL) {
    if (c != NULL) sim_leave(c);
    return sim_fail(MG__ncclInvalidArgument, "ncclCommGetAsyncError: %s is NULL",
                    c == NULL ? "comm" : "asyncError");
  }
  pthread_mutex_lock(&sim_lock);
  *async_error = c->async;
  pthread_mutex_unlock(&sim_lock);
  sim_leave(c);
  return MG__ncclSuccess;
}

/* A query answers once the comm is ready, as NCCL's (ncclCommEnsureReady): while an operation
 * is in progress it is ncclInvalidArgument; after an asynchronous error, that error. */
static mg__ncclResult_t sim_query(mg__ncclComm_t comm, int *out, int which, const char *call) {
  sim_comm_t *c = sim_enter(comm, call);
  if (c == NULL || out == NULL) {
    if (c != NULL) sim_leave(c);
    return sim_fail(MG__ncclInvalidArgument, "%s: %s is NULL", call, c == NULL ? "comm" : "out");
  }
  pthread_mutex_lock(&sim_lock);
  mg__ncclResult_t r = c->async;
  pthread_mutex_unlock(&sim_lock);
  if (r == MG__ncclInProgress)
    r = sim_fail(MG__ncclInvalidArgument, "%s: rank %d: called before the previous operation "
                 "returned ncclSuccess (poll ncclCommGetAsyncError)", call, c->rank);
  else if (r == MG__ncclSuccess)
    *out = which == 0 ? c->nranks : which == 1 ? c->device : c->rank;
  sim_leave(c);
  return r;
}

MGSIM_API mg__ncclResult_t ncclCommCount(const mg__ncclComm_t comm, int *count) {
  return sim_query(comm, count, 0, "ncclCommCount");
}

MGSIM_API mg__ncclResult_t ncclCommCuDevice(const mg__ncclComm_t comm, int *device) {
  return sim_query(comm, device, 1, "ncclCommCuDevice");
}

MGSIM_API mg__ncclResult_t ncclCommUserRank(const mg__ncclComm_t comm, int *rank) {
  return sim_query(comm, rank, 2, "ncclCommUserRank");
}

/* ---- memory --------------------------------------------------------------------------------- */

MGSIM_API mg__ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  sim_require(SIM_V_REGISTER, "ncclMemAlloc");
  if (ptr == NULL || size == 0)
    return sim_fail(MG__ncclInvalidArgument, "ncclMemAlloc: ptr %p, size %zu", (void *)ptr, size);
  mg__CUcontext ctx = NULL;
  mg__CUresult cr = cuCtxGetCurrent(&ctx);
  if (cr == MG__CUDA_SUCCESS && ctx == NULL)
    return sim_fail(MG__ncclUnhandledCudaError, "ncclMemAlloc: no current CUDA context (the "
                    "simulator does not make device 0's, as the CUDA runtime would)");
  if (cr == MG__CUDA_SUCCESS) cr = mgsim_mem_alloc_vmm(ctx, ptr, size);
  if (cr != MG__CUDA_SUCCESS)
    return sim_fail(MG__ncclUnhandledCudaError, "ncclMemAlloc of %zu bytes: the CUDA driver "
                    "answered %d", size, cr);
  return MG__ncclSuccess;
}

MGSIM_API mg__ncclResult_t ncclMemFree(void *ptr) {
  sim_require(SIM_V_REGISTER, "ncclMemFree");
  if (ptr == NULL) return MG__ncclSuccess;
  /* The detector: a real abort's kernels may use any memory until it has stopped them. */
  pthread_mutex_lock(&sim_lock);
  for (const sim_comm_t *c = sim_comms; c != NULL; c = c->next)
    if (c->freeing != NULL && strcmp(c->freeing, "ncclCommAbort") == 0 && c->items > 0)
      sim_violation("ncclMemFree(%p) while ncclCommAbort of comm %p (rank %d) has not stopped "
                    "its %d stream item(s): a kernel may still use the memory", ptr,
                    (void *)c, c->rank, c->items);
  pthread_mutex_unlock(&sim_lock);
  mg__CUresult cr = mgsim_mem_free_vmm(ptr);
  if (cr != MG__CUDA_SUCCESS)
    return sim_fail(MG__ncclUnhandledCudaError, "ncclMemFree(%p): not memory of ncclMemAlloc, or "
                    "freed already (the CUDA driver answered %d)", ptr, cr);
  return MG__ncclSuccess;
}

/* ---- registration --------------------------------------------------------------------------- */

MGSIM_API mg__ncclResult_t ncclCommRegister(const mg__ncclComm_t comm, void *buff, size_t size,
                                            void **handle) {
  sim_require(SIM_V_REGISTER, "ncclCommRegister");
  sim_comm_t *c = sim_enter(comm, "ncclCommRegister");
  mg__ncclResult_t r = MG__ncclSuccess;
  if (c == NULL || buff == NULL || size == 0 || handle == NULL) {
    r = sim_fail(MG__ncclInvalidArgument, "ncclCommRegister: comm %p, buff %p, size %zu, handle "
                 "%p", (void *)comm, buff, size, (void *)handle);
  } else {
    sim_reg_t *g = calloc(1, sizeof *g);
    if (g == NULL) sim_oom("a registration");
    g->buf = buff;
    g->size = size;
    pthread_mutex_lock(&sim_lock);
    g->next = c->regs;
    c->regs = g;
    pthread_mutex_unlock(&sim_lock);
    *handle = g;
  }
  if (c != NULL) sim_leave(c);
  return r;
}

MGSIM_API mg__ncclResult_t ncclCommDeregister(const mg__ncclComm_t comm, void *handle) {
  sim_require(SIM_V_REGISTER, "ncclCommDeregister");
  sim_comm_t *c = sim_enter(comm, "ncclCommDeregister");
  if (c == NULL) return sim_fail(MG__ncclInvalidArgument, "ncclCommDeregister: comm is NULL");
  pthread_mutex_lock(&sim_lock);
  sim_reg_t **pp = &c->regs;
  while (*pp != NULL && *pp != handle) pp = &(*pp)->next;
  sim_reg_t *g = *pp;
  if (g != NULL) *pp = g->next;
  pthread_mutex_unlock(&sim_lock);
  free(g);
  mg__ncclResult_t r = MG__ncclSuccess;
  if (g == NULL)
    r = sim_fail(MG__ncclInvalidArgument, "ncclCommDeregister: handle %p is not a registration "
                 "of rank %d's comm", handle, c->rank);
  sim_leave(c);
  return r;
}
