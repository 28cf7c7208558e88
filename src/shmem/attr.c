/*
 * attr.c -- the init attribute of nvshmemx_hostlib_init_attr, stamped as NVSHMEM 3.x's
 * NVSHMEMX_INIT_ATTR_INITIALIZER stamps it (device_host/nvshmem_types.h). NVSHMEM checks the
 * stamps: a zeroed attribute (what nvshmemx_set_attr_uniqueid_args alone leaves) is refused, and
 * the seeds' init failed for exactly that reason (shared/reference/seed-system.md, section 11).
 */
#include <string.h>

#include "shmem/shmem.h"

/* The layouts of NVSHMEM 3.4.5, which asserts these sizes in its headers. */
_Static_assert(sizeof(mg__nvshmemx_uniqueid_t) == 128, "nvshmemx_uniqueid_v1 is 128 bytes");
_Static_assert(sizeof(mg__shmem_uid_args_t) == 24, "nvshmemx_uniqueid_args_v1 is 24 bytes");
_Static_assert(sizeof(mg__shmem_init_args_t) == 128, "nvshmemx_init_args_v1 is 128 bytes");
_Static_assert(sizeof(struct mg__nvshmemx_init_attr) == 144, "nvshmemx_init_attr_v1 is 144 bytes");

/* NVSHMEM's version stamp of a struct: its layout version (1) in the high half, its size low. */
#define MG__SHMEM_STAMP(type) ((1 << 16) + (int)sizeof(type))

void mg__shmem_attr_init(mg__nvshmemx_init_attr_t *attr) {
  memset(attr, 0, sizeof *attr);
  attr->version = MG__SHMEM_STAMP(struct mg__nvshmemx_init_attr);
  attr->mpi_comm = NULL;
  attr->args.version = MG__SHMEM_STAMP(mg__shmem_init_args_t);
  attr->args.uid_args.version = MG__SHMEM_STAMP(mg__shmem_uid_args_t);
  attr->args.uid_args.id = NULL;
  attr->args.uid_args.myrank = -1; /* UNIQUEID_ARGS_INVALID */
  attr->args.uid_args.nranks = -1;
}
