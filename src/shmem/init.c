/*
 * init.c -- NVSHMEM's start and end in this process: from a communicator (the unique-id
 * bootstrap over a rendezvous that mgcomm bounds), from NVSHMEM's own bootstrap (environment),
 * and finalize. Divisions: the state and its lock; the device of a PE; the rendezvous record;
 * the start shared by both ways; mg_shmem_init_comm; mg_shmem_init_env; mg_shmem_finalize.
 *
 * NVSHMEM 3.x exports no nvshmem_init or nvshmem_finalize (inline functions of its headers):
 * the entry points are nvshmemx_hostlib_init_attr and nvshmemx_hostlib_finalize.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "boot/boot.h"
#include "shmem/shmem.h"

mg__shmem_t mg__shmem = {.lock = PTHREAD_MUTEX_INITIALIZER, .device = -1};

/* 1 while a thread is inside an init. A second thread that calls init meanwhile is refused at
 * once: it would otherwise wait for the lock while the first waits for it at the rendezvous (the
 * ranks of a communicator made of threads of one process; NVSHMEM has one PE per process). */
static atomic_int mg__shmem_starting;

static mg_status_t mg__shmem_busy(const char *fn) {
  return mg__error(MG_ERR_INVALID_USAGE, "%s: another thread of this process is starting NVSHMEM "
                   "already: NVSHMEM runs one PE per process, so a communicator whose ranks are "
                   "threads of one process cannot start it", fn);
}

static const char *mg__shmem_phase_why(void) {
  switch (mg__shmem.phase) {
  case MG__SHMEM_READY: return "NVSHMEM is initialised already (at most once per process)";
  case MG__SHMEM_FINALIZED:
    return "NVSHMEM was finalized in this process and cannot start again (at most once per "
           "process)";
  case MG__SHMEM_BROKEN:
    return "NVSHMEM's initialisation failed earlier in this process and cannot be tried again";
  default: return "NVSHMEM is not initialised (call mg_shmem_init_comm or mg_shmem_init_env)";
  }
}

mg_status_t mg__shmem_enter(const char *fn) {
  pthread_mutex_lock(&mg__shmem.lock);
  if (mg__shmem.phase == MG__SHMEM_READY) return MG_OK;
  mg_status_t st = mg__error(MG_ERR_INVALID_USAGE, "%s: %s", fn, mg__shmem_phase_why());
  pthread_mutex_unlock(&mg__shmem.lock);
  return st;
}

void mg__shmem_leave(void) { pthread_mutex_unlock(&mg__shmem.lock); }

/* ---- The device of a PE: the caller's, else the communicator's (NCCL), else the launcher's
 * local rank, else 0 when this is the only PE; -1 when nothing says. */
static int mg__shmem_pick_device(int device, mg_comm_t *comm, int size) {
  if (device != MG_UNDEF_INT) return device;
  mg_backend_t be;
  int cdev = -1;
  if (comm != NULL && mg_comm_backend(comm, &be) == MG_OK && be == MG_BACKEND_NCCL &&
      mg_comm_device(comm, &cdev) == MG_OK && cdev >= 0)
    return cdev;
  mg__boot_env_t env;
  if (mg__boot_env_read(mg__boot_env_process, NULL, &env) == MG_OK && env.local_rank >= 0)
    return env.local_rank;
  /* Without a store address mg_comm_init_env's conventions do not apply, but a job under
   * NVSHMEM's own bootstrap still has its launcher's local rank: nvshmrun and MPICH (Hydra),
   * Open MPI, Slurm. */
  static const char *const local_vars[] = {"MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "SLURM_LOCALID"};
  for (size_t i = 0; i < sizeof local_vars / sizeof local_vars[0]; i++) {
    const char *v = getenv(local_vars[i]);
    char *end;
    long l = v != NULL ? strtol(v, &end, 10) : -1;
    if (v != NULL && *v != '\0' && *end == '\0' && l >= 0 && l < 1024) return (int)l;
  }
  return size == 1 ? 0 : -1;
}

/* ---- The record each rank brings to the rendezvous. */
typedef struct {
  uint32_t magic;
  int32_t status;  /* this rank's readiness: library loaded, device selected, id made (rank 0) */
  int32_t version; /* NVSHMEM's release as loaded here */
  int32_t device;
  char why[112];   /* the start of the message when status is an error */
  mg__nvshmemx_uniqueid_t uid; /* rank 0's NVSHMEM unique id */
} mg__shmem_hello_t;
#define MG__SHMEM_HELLO_MAGIC 0x4d474849u

/* All-gathers bytes of every rank over comm, bounded by comm's deadline. On the NCCL backend the
 * records travel through a device buffer on the communicator's own stream. */
static mg_status_t mg__shmem_comm_allgather(mg_comm_t *comm, const void *mine, void *all,
                                            size_t bytes, int n) {
  mg_backend_t be;
  MG_CHECK(mg_comm_backend(comm, &be));
  if (be != MG_BACKEND_NCCL) return mg_all_gather(mine, all, bytes, MG_UINT8, comm, NULL);
  unsigned char *d = NULL;
  mg_stream_t s = NULL;
  mg_request_t *req = NULL;
  mg_status_t st;
  MG_CHECK(mg_mem_alloc(comm, bytes * ((size_t)n + 1), (void **)&d));
  MG_CHECK_GOTO(mg_memcpy(comm, d, mine, bytes), st, out);
  MG_CHECK_GOTO(mg_comm_stream(comm, &s), st, out);
  MG_CHECK_GOTO(mg_all_gather(d, d + bytes, bytes, MG_UINT8, comm, s), st, out);
  MG_CHECK_GOTO(mg_record(comm, s, &req), st, out);
  st = mg_request_wait(req, 0);
  /* The request ended (its status is st); freeing a completed request cannot fail. */
  (void)mg_request_free(req);
  if (st == MG_OK) st = mg_memcpy(comm, all, d + bytes, bytes * (size_t)n);
out:
  /* d came from mg_mem_alloc and is freed once: this cannot fail. */
  (void)mg_mem_free(d);
  return st;
}

/* ---- The start shared by both ways: NVSHMEM's init, then the checks and the comparison area.
 * Called with the lock held and the device open. */
static mg_status_t mg__shmem_start(unsigned flags, mg__nvshmemx_init_attr_t *attr, int want_pe,
                                   int want_n, const char *fn) {
  int rc = mg__nvshmem.hostlib_init_attr(flags, attr);
  if (rc != 0) {
    mg__shmem.phase = MG__SHMEM_BROKEN;
    return mg__error(MG_ERR_BACKEND, "%s: nvshmemx_hostlib_init_attr failed: NVSHMEM returned %d "
                     "(NVSHMEM_DEBUG=INFO says why); NVSHMEM cannot be started again in this "
                     "process", fn, rc);
  }
  int me = mg__nvshmem.my_pe(), n = mg__nvshmem.n_pes();
  mg_status_t st = MG_OK;
  if (n < 1 || me < 0 || me >= n || (want_n > 0 && (me != want_pe || n != want_n))) {
    st = mg__error(MG_ERR_BACKEND, "%s: NVSHMEM started as PE %d of %d, expected PE %d of %d",
                   fn, me, n, want_pe, want_n);
  } else {
    mg__shmem.my_pe = me;
    mg__shmem.n_pes = n;
    mg__shmem.limited_mpg = mg__nvshmem.init_status() == MG__NVSHMEM_STATUS_LIMITED_MPG;
    mg__CUcontext saved = NULL;
    st = mg__shmem_ctx_enter(&saved);
    if (st == MG_OK) {
      /* Collective, as every allocation: every PE makes it at the same point of init. */
      mg__shmem.ctl = mg__nvshmem.malloc(mg__shmem_ctl_bytes(n));
      mg__shmem_ctx_leave(saved);
      if (mg__shmem.ctl == NULL)
        st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: NVSHMEM could not allocate %zu bytes of its "
                       "symmetric heap for mgcomm's checks", fn, mg__shmem_ctl_bytes(n));
    }
  }
  if (st != MG_OK) {
    mg__nvshmem.hostlib_finalize();
    mg__shmem.phase = MG__SHMEM_BROKEN;
    return st;
  }
  mg__shmem.agree_seq = 0;
  mg__shmem.next_serial = 0;
  mg__shmem.phase = MG__SHMEM_READY;
  return MG_OK;
}

/* ---- mg_shmem_init_comm */

static mg_status_t mg__shmem_init_comm(mg_comm_t *comm, int device, const char *fn) {
  int rank, size;
  mg_comm_state_t state;
  MG_CHECK(mg_comm_rank(comm, &rank));
  MG_CHECK(mg_comm_size(comm, &size));
  MG_CHECK(mg_comm_state(comm, &state));
  if (state != MG_COMM_READY)
    return mg__error(MG_ERR_INVALID_USAGE, "%s: the communicator is not ready (state %d)", fn,
                     (int)state);

  /* This rank's readiness. A rank that cannot start still comes to the rendezvous and says
   * why, so that the others fail at once, naming it, instead of waiting inside NVSHMEM. */
  mg__shmem_hello_t mine;
  memset(&mine, 0, sizeof mine);
  mine.magic = MG__SHMEM_HELLO_MAGIC;
  mine.device = mg__shmem_pick_device(device, comm, size);
  int opened = 0;
  mg_status_t local = mg__load_nvshmem();
  if (local == MG_OK && device != MG_UNDEF_INT && device < 0)
    local = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: device %d is not a device ordinal", fn, device);
  if (local == MG_OK) {
    local = mg__shmem_space_open(mine.device, fn);
    opened = local == MG_OK;
  }
  if (local == MG_OK) mine.version = mg__lib_report(MG_LIB_NVSHMEM)->version;
  if (local == MG_OK && rank == 0) {
    mine.uid.version = MG__NVSHMEMX_UNIQUEID_VERSION;
    int rc = mg__nvshmem.get_uniqueid(&mine.uid);
    if (rc != 0)
      local = mg__error(MG_ERR_BACKEND, "%s: nvshmemx_get_uniqueid failed: NVSHMEM returned %d",
                        fn, rc);
  }
  char local_msg[MG__ERROR_LEN] = "";
  if (local != MG_OK) {
    mine.status = local;
    mg_last_error_copy(local_msg, sizeof local_msg);
    snprintf(mine.why, sizeof mine.why, "%s", local_msg);
  }

  mg__shmem_hello_t *all = calloc((size_t)size, sizeof *all);
  mg_status_t st;
  if (all == NULL) {
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    goto fail;
  }
  st = mg__shmem_comm_allgather(comm, &mine, all, sizeof mine, size);
  if (st != MG_OK) {
    mg__error_prefix("%s: the PEs' rendezvous over the communicator failed (rank %d of %d)", fn,
                     rank, size);
    goto fail;
  }
  if (local != MG_OK) {
    st = mg__error(local, "%s", local_msg);
    goto fail;
  }
  for (int r = 0; r < size; r++) {
    if (all[r].magic != MG__SHMEM_HELLO_MAGIC) {
      st = mg__error(MG_ERR_REMOTE, "%s: rank %d sent no mgcomm record to the rendezvous (does "
                     "every rank call mg_shmem_init_comm?)", fn, r);
      goto fail;
    }
    if (all[r].status != MG_OK) {
      all[r].why[sizeof all[r].why - 1] = '\0';
      st = mg__error(MG_ERR_REMOTE, "%s: PE %d could not start NVSHMEM (%s: %s); no PE started "
                     "it", fn, r, mg_status_name((mg_status_t)all[r].status), all[r].why);
      goto fail;
    }
    if (all[r].version != all[0].version) {
      st = mg__error(MG_ERR_INVALID_USAGE, "%s: the PEs loaded different NVSHMEM releases: PE 0 "
                     "has %d, PE %d has %d", fn, all[0].version, r, all[r].version);
      goto fail;
    }
  }

  mg__nvshmemx_init_attr_t attr;
  mg__shmem_attr_init(&attr);
  int rc = mg__nvshmem.set_attr_uniqueid_args(rank, size, &all[0].uid, &attr);
  if (rc != 0) {
    st = mg__error(MG_ERR_BACKEND, "%s: nvshmemx_set_attr_uniqueid_args failed: NVSHMEM "
                   "returned %d", fn, rc);
    goto fail;
  }
  st = mg__shmem_start(MG__NVSHMEMX_INIT_WITH_UNIQUEID, &attr, rank, size, fn);
  if (st != MG_OK) goto fail;
  free(all);
  return MG_OK;
fail:
  free(all);
  if (opened) mg__shmem_space_close();
  return st;
}

mg_status_t mg_shmem_init_comm(mg_comm_t *comm, int device) {
  const char *fn = "mg_shmem_init_comm";
  if (atomic_exchange(&mg__shmem_starting, 1)) return mg__shmem_busy(fn);
  pthread_mutex_lock(&mg__shmem.lock);
  mg_status_t st = mg__shmem.phase == MG__SHMEM_NEVER
                       ? mg__shmem_init_comm(comm, device, fn)
                       : mg__error(MG_ERR_INVALID_USAGE, "%s: %s", fn, mg__shmem_phase_why());
  pthread_mutex_unlock(&mg__shmem.lock);
  atomic_store(&mg__shmem_starting, 0);
  return st;
}

/* ---- mg_shmem_init_env */

static mg_status_t mg__shmem_init_env(int device, const char *fn) {
  MG_CHECK(mg__load_nvshmem());
  if (device != MG_UNDEF_INT && device < 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: device %d is not a device ordinal", fn, device);
  /* Alone or unnamed by the launcher, a PE takes device 0 (as nvshmrun's users expect). */
  int dev = mg__shmem_pick_device(device, NULL, 1);
  MG_CHECK(mg__shmem_space_open(dev, fn));
  mg__nvshmemx_init_attr_t attr;
  mg__shmem_attr_init(&attr);
  mg_status_t st = mg__shmem_start(0, &attr, -1, 0, fn);
  if (st != MG_OK) mg__shmem_space_close();
  return st;
}

mg_status_t mg_shmem_init_env(int device) {
  const char *fn = "mg_shmem_init_env";
  if (atomic_exchange(&mg__shmem_starting, 1)) return mg__shmem_busy(fn);
  pthread_mutex_lock(&mg__shmem.lock);
  mg_status_t st = mg__shmem.phase == MG__SHMEM_NEVER
                       ? mg__shmem_init_env(device, fn)
                       : mg__error(MG_ERR_INVALID_USAGE, "%s: %s", fn, mg__shmem_phase_why());
  pthread_mutex_unlock(&mg__shmem.lock);
  atomic_store(&mg__shmem_starting, 0);
  return st;
}

/* ---- mg_shmem_finalize */

mg_status_t mg_shmem_finalize(void) {
  const char *fn = "mg_shmem_finalize";
  pthread_mutex_lock(&mg__shmem.lock);
  mg_status_t st = MG_OK;
  if (mg__shmem.phase == MG__SHMEM_FINALIZED) {
    /* Idempotent after a success. */
  } else if (mg__shmem.phase != MG__SHMEM_READY) {
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: %s", fn, mg__shmem_phase_why());
  } else if (mg__shmem.nallocs > 0) {
    /* Every PE has the same live allocations (they were compared), so every PE refuses alike
     * and none is left waiting in NVSHMEM's finalize. Teams differ between members and the
     * others; NVSHMEM's finalize destroys those still live. */
    st = mg__error(MG_ERR_INVALID_USAGE, "%s: refused while %d symmetric allocation%s live: "
                   "free %s first, on every PE", fn, mg__shmem.nallocs,
                   mg__shmem.nallocs == 1 ? " is" : "s are", mg__shmem.nallocs == 1 ? "it" : "them");
  } else {
    mg__CUcontext saved = NULL;
    st = mg__shmem_ctx_enter(&saved);
    if (st == MG_OK) {
      mg__nvshmem.free(mg__shmem.ctl);
      mg__nvshmem.hostlib_finalize();
      mg__shmem_ctx_leave(saved);
      mg__shmem.ctl = NULL;
      free(mg__shmem.allocs);
      free(mg__shmem.teams);
      mg__shmem.allocs = NULL;
      mg__shmem.teams = NULL;
      mg__shmem.cap_allocs = mg__shmem.cap_teams = mg__shmem.nteams = 0;
      mg__shmem_space_close();
      mg__shmem.phase = MG__SHMEM_FINALIZED;
    }
  }
  pthread_mutex_unlock(&mg__shmem.lock);
  return st;
}
