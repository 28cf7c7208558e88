/*
 * nvshmem_api.h -- the NVSHMEM host API that libnvshmem_host.so.3 exports (checked against
 * NVSHMEM 3.4.5), declared here so that building needs no NVSHMEM header.
 *
 * NVSHMEM 3.x does NOT export nvshmem_init, nvshmem_finalize or nvshmemx_init_attr: those are
 * static inline functions of its headers that call into the static device library. A host-only
 * program initialises with nvshmemx_hostlib_init_attr and finalises with
 * nvshmemx_hostlib_finalize, which the table requires.
 *
 * nvshmemx_init_attr_t has a version-specific layout; it stays opaque here (the shmem layer
 * that builds one owns its definition).
 *
 * Version: nvshmemx_vendor_get_version_info gives the library's release (3.4.5, stored as
 * 30405); nvshmem_info_get_version gives the OpenSHMEM specification it implements (1.3).
 */
#ifndef MG_LOADER_NVSHMEM_API_H
#define MG_LOADER_NVSHMEM_API_H

#include <stddef.h>
#include <stdint.h>

#include "loader/cuda_api.h"

typedef int32_t mg__nvshmem_team_t;
enum {
  MG__NVSHMEM_TEAM_INVALID = -1,
  MG__NVSHMEM_TEAM_WORLD = 0,
  MG__NVSHMEM_TEAM_SHARED = 1,
  MG__NVSHMEMX_TEAM_NODE = 2
};

/* nvshmemx_init_attr_t flags of nvshmemx_hostlib_init_attr. */
enum {
  MG__NVSHMEMX_INIT_THREAD_PES = 1,
  MG__NVSHMEMX_INIT_WITH_MPI_COMM = 2,
  MG__NVSHMEMX_INIT_WITH_SHMEM = 4,
  MG__NVSHMEMX_INIT_WITH_UNIQUEID = 8
};

/* nvshmemx_init_status() (nvshmemx_init_status_t). LIMITED_MPG: several PEs share a GPU
 * without MPS, a mode in which some calls (team split) exit the process. */
enum {
  MG__NVSHMEM_STATUS_NOT_INITIALIZED = 0,
  MG__NVSHMEM_STATUS_IS_BOOTSTRAPPED = 1,
  MG__NVSHMEM_STATUS_IS_INITIALIZED = 2,
  MG__NVSHMEM_STATUS_LIMITED_MPG = 3,
  MG__NVSHMEM_STATUS_FULL_MPG = 4
};

/* nvshmemx_uniqueid_t (nvshmemx_uniqueid_v1): 128 bytes; version = (1 << 16) + 128. */
typedef struct {
  int version;
  char internal[124];
} mg__nvshmemx_uniqueid_t;
#define MG__NVSHMEMX_UNIQUEID_VERSION ((1 << 16) + (int)sizeof(mg__nvshmemx_uniqueid_t))

typedef struct mg__nvshmemx_init_attr mg__nvshmemx_init_attr_t;  /* opaque, see above */
typedef struct mg__nvshmem_team_config mg__nvshmem_team_config_t; /* opaque; we pass NULL */

/* X(req, form, member, sym, alt, ret, params, args): see table.h. */
#define MG__NVSHMEM_SYMBOLS(X)                                                                   \
  X(REQ, RC, hostlib_init_attr, "nvshmemx_hostlib_init_attr", NULL, int,                         \
    (unsigned int flags, mg__nvshmemx_init_attr_t *attr), (flags, attr))                         \
  X(REQ, NONE, hostlib_finalize, "nvshmemx_hostlib_finalize", NULL, void, (void), ())            \
  X(REQ, NONE, init_status, "nvshmemx_init_status", NULL, int, (void), ())                       \
  X(REQ, RC, get_uniqueid, "nvshmemx_get_uniqueid", NULL, int, (mg__nvshmemx_uniqueid_t *id),    \
    (id))                                                                                        \
  X(REQ, RC, set_attr_uniqueid_args, "nvshmemx_set_attr_uniqueid_args", NULL, int,               \
    (const int rank, const int nranks, const mg__nvshmemx_uniqueid_t *id,                        \
     mg__nvshmemx_init_attr_t *attr),                                                            \
    (rank, nranks, id, attr))                                                                    \
  X(REQ, NONE, my_pe, "nvshmem_my_pe", NULL, int, (void), ())                                    \
  X(REQ, NONE, n_pes, "nvshmem_n_pes", NULL, int, (void), ())                                    \
  X(REQ, NONE, info_get_version, "nvshmem_info_get_version", NULL, void,                         \
    (int *major, int *minor), (major, minor))                                                    \
  X(OPT, NONE, vendor_get_version_info, "nvshmemx_vendor_get_version_info", NULL, void,          \
    (int *major, int *minor, int *patch), (major, minor, patch))                                 \
  X(REQ, PTR, malloc, "nvshmem_malloc", NULL, void *, (size_t size), (size))                     \
  X(OPT, PTR, calloc, "nvshmem_calloc", NULL, void *, (size_t count, size_t size),               \
    (count, size))                                                                               \
  X(OPT, PTR, align, "nvshmem_align", NULL, void *, (size_t alignment, size_t size),             \
    (alignment, size))                                                                           \
  X(REQ, NONE, free, "nvshmem_free", NULL, void, (void *ptr), (ptr))                             \
  X(REQ, NONE, putmem, "nvshmem_putmem", NULL, void,                                             \
    (void *dest, const void *source, size_t bytes, int pe), (dest, source, bytes, pe))           \
  X(REQ, NONE, getmem, "nvshmem_getmem", NULL, void,                                             \
    (void *dest, const void *source, size_t bytes, int pe), (dest, source, bytes, pe))           \
  X(REQ, NONE, putmem_on_stream, "nvshmemx_putmem_on_stream", NULL, void,                        \
    (void *dest, const void *source, size_t bytes, int pe, mg__CUstream stream),                 \
    (dest, source, bytes, pe, stream))                                                           \
  X(REQ, NONE, getmem_on_stream, "nvshmemx_getmem_on_stream", NULL, void,                        \
    (void *dest, const void *source, size_t bytes, int pe, mg__CUstream stream),                 \
    (dest, source, bytes, pe, stream))                                                           \
  X(REQ, NONE, barrier_all, "nvshmem_barrier_all", NULL, void, (void), ())                       \
  X(REQ, NONE, barrier_all_on_stream, "nvshmemx_barrier_all_on_stream", NULL, void,              \
    (mg__CUstream stream), (stream))                                                             \
  X(REQ, NONE, sync_all, "nvshmem_sync_all", NULL, void, (void), ())                             \
  X(REQ, NONE, quiet, "nvshmem_quiet", NULL, void, (void), ())                                   \
  X(REQ, NONE, fence, "nvshmem_fence", NULL, void, (void), ())                                   \
  X(REQ, RC, team_split_strided, "nvshmem_team_split_strided", NULL, int,                        \
    (mg__nvshmem_team_t parent, int start, int stride, int size,                                 \
     const mg__nvshmem_team_config_t *config, long config_mask, mg__nvshmem_team_t *new_team),   \
    (parent, start, stride, size, config, config_mask, new_team))                                \
  X(REQ, NONE, team_my_pe, "nvshmem_team_my_pe", NULL, int, (mg__nvshmem_team_t team), (team))   \
  X(REQ, NONE, team_n_pes, "nvshmem_team_n_pes", NULL, int, (mg__nvshmem_team_t team), (team))   \
  X(REQ, NONE, team_translate_pe, "nvshmem_team_translate_pe", NULL, int,                        \
    (mg__nvshmem_team_t src_team, int src_pe, mg__nvshmem_team_t dest_team),                     \
    (src_team, src_pe, dest_team))                                                               \
  X(REQ, NONE, team_destroy, "nvshmem_team_destroy", NULL, void, (mg__nvshmem_team_t team),      \
    (team))

#endif
