/*
 * shmem.h -- NVSHMEM's host API (src/shmem/, docs/shmem.md): the process's one NVSHMEM state and
 * what the files of this layer share.
 *
 * Files: init.c (init from a communicator or NVSHMEM's own bootstrap, finalize), attr.c (the
 * version-stamped init attribute), space.c (the PE's device: selection, context, local pointer
 * checks, copies), agree.c (the PEs compare a collective call before NVSHMEM runs it), heap.c
 * (symmetric allocations and their record), rma.c (put, get, quiet, fence, barriers), team.c
 * (teams), query.c (my PE, versions, symbols).
 *
 * Locking: one mutex, mg__shmem.lock, held by every public call for its whole length (NVSHMEM is
 * initialised THREAD_SERIALIZED, and the record must not change under a check). No other lock is
 * taken under it except the communicator's own inside mg_shmem_init_comm's exchange.
 */
#ifndef MG_SHMEM_SHMEM_H
#define MG_SHMEM_SHMEM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/loader.h"
#include "mgcomm.h"

typedef enum {
  MG__SHMEM_NEVER = 0,     /* not initialised yet: init may be called */
  MG__SHMEM_READY = 1,     /* initialised */
  MG__SHMEM_FINALIZED = 2, /* finalized: NVSHMEM starts at most once per process */
  MG__SHMEM_BROKEN = 3     /* NVSHMEM's init failed: it cannot be tried again */
} mg__shmem_phase_t;

typedef struct {
  uintptr_t base; /* the allocation's address on this PE */
  size_t bytes;   /* its size as asked (> 0) */
  uint64_t serial; /* its number in the order of allocation: the same on every PE */
} mg__shmem_alloc_t;

typedef struct {
  pthread_mutex_t lock;
  mg__shmem_phase_t phase;
  int my_pe, n_pes;
  int device;          /* CUDA ordinal of this PE's GPU; -1 with host PEs */
  int host_pes;        /* test builds: a fake NVSHMEM whose PEs live in host memory */
  int limited_mpg;     /* NVSHMEM started in its "limited MPG" mode (several PEs share a GPU
                          without MPS): it exits the process on the calls it lacks there */
  mg__CUdevice dev;    /* retained primary context of device, while initialised */
  mg__CUcontext ctx;
  mg__shmem_alloc_t *allocs; /* live allocations, sorted by base */
  int nallocs, cap_allocs;
  uint64_t next_serial;
  mg__nvshmem_team_t *teams; /* teams split by this library and not destroyed */
  int nteams, cap_teams;
  unsigned char *ctl;  /* symmetric area of agree.c (not in allocs) */
  uint64_t agree_seq;  /* exchanges made: the same on every PE */
} mg__shmem_t;

extern mg__shmem_t mg__shmem;

/* Takes the lock; MG_OK when NVSHMEM is initialised, else releases it and returns
 * MG_ERR_INVALID_USAGE naming fn. mg__shmem_leave releases. */
mg_status_t mg__shmem_enter(const char *fn);
void mg__shmem_leave(void);

/* ---- attr.c */

/* nvshmemx_init_attr_t of NVSHMEM 3.x (nvshmemx_init_attr_v1, 144 bytes), owned here as
 * loader/nvshmem_api.h says. */
typedef struct {
  int version;
  mg__nvshmemx_uniqueid_t *id;
  int myrank;
  int nranks;
} mg__shmem_uid_args_t;
typedef struct {
  int version;
  mg__shmem_uid_args_t uid_args;
  char content[96];
} mg__shmem_init_args_t;
struct mg__nvshmemx_init_attr {
  int version;
  void *mpi_comm;
  mg__shmem_init_args_t args;
};
/* Fills attr as NVSHMEMX_INIT_ATTR_INITIALIZER does: the version stamps ((1 << 16) + the size of
 * each versioned struct), no MPI communicator, no unique id (rank and size -1). */
void mg__shmem_attr_init(mg__nvshmemx_init_attr_t *attr);

/* ---- space.c: the PE's device */

/* Chooses the device (device, else fallback; -1 = none: MG_ERR_INVALID_ARGUMENT naming fn),
 * retains its primary context and makes it current on the calling thread, where NVSHMEM's
 * initialisation finds it. With host PEs (test builds) nothing is done. */
mg_status_t mg__shmem_space_open(int device, const char *fn);
void mg__shmem_space_close(void);
/* Makes the PE's context current around an NVSHMEM call from any thread. */
mg_status_t mg__shmem_ctx_enter(mg__CUcontext *saved);
void mg__shmem_ctx_leave(mg__CUcontext saved);
/* The local side of a put or get: device memory of this PE's GPU, [p, p + bytes). */
mg_status_t mg__shmem_check_local(const void *p, size_t bytes, const char *fn, const char *arg);
mg_status_t mg__shmem_check_stream(void *stream, const char *fn);
/* Copies between host memory and this PE's (symmetric) device memory, synchronously. */
mg_status_t mg__shmem_to_device(void *dst, const void *src, size_t bytes);
mg_status_t mg__shmem_from_device(void *dst, const void *src, size_t bytes);
/* 1 when this process runs a fake NVSHMEM in host memory (MGCOMM_TESTING builds only). */
int mg__shmem_host_pes_wanted(void);

/* ---- agree.c */

typedef enum {
  MG__AGREE_MALLOC = 1,
  MG__AGREE_CALLOC = 2,
  MG__AGREE_ALIGN = 3,
  MG__AGREE_FREE = 4
} mg__agree_kind_t;

/* Bytes of the symmetric area agree.c needs for n PEs (allocated at init). */
size_t mg__shmem_ctl_bytes(int n_pes);
/* Every PE calls it for the same collective: publishes (kind, a, b) and its own verdict on its
 * arguments (local: MG_OK, or the status whose message is set), waits at NVSHMEM's barrier,
 * and compares. MG_OK when every PE asked the same with valid arguments; otherwise the same
 * refusal on every PE: this PE's own status when its arguments were wrong, else
 * MG_ERR_INVALID_ARGUMENT naming the PEs whose arguments were wrong, or MG_ERR_INVALID_USAGE
 * naming the PEs and what each asked. */
mg_status_t mg__shmem_agree(mg__agree_kind_t kind, uint64_t a, uint64_t b, mg_status_t local,
                            const char *fn);

/* ---- heap.c */

/* The live allocation that holds [p, p + bytes), or an MG_ERR_INVALID_ARGUMENT naming fn and
 * arg ("not symmetric", "runs past the end of its allocation"). */
mg_status_t mg__shmem_check_symmetric(const void *p, size_t bytes, const char *fn,
                                      const char *arg);

/* ---- team.c */

/* MG_OK when team is a predefined team or one split by this library and not destroyed. */
mg_status_t mg__shmem_check_team(mg_shmem_team_t team, const char *fn, const char *arg);

#endif
