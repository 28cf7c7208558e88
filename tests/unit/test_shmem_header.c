/*
 * test_shmem_header.c -- mgcomm's own declaration of NVSHMEM 3.x's init attribute and constants
 * (src/shmem/shmem.h, src/loader/nvshmem_api.h) against the real headers of the nvidia-nvshmem
 * wheel: the layout (sizes and offsets of every field mgcomm writes), the version stamps that
 * mg__shmem_attr_init writes compared with NVSHMEMX_INIT_ATTR_INITIALIZER's, the predefined
 * teams, the init statuses and the unique id's version. (The init flags are declared in
 * host/nvshmemx_api.h, which needs CUDA's C++ half types; the GPU run proves the unique-id flag.) A wrong stamp makes
 * NVSHMEM refuse the attribute (the seeds' failure): this is where it would show first.
 */
#include <assert.h> /* static_assert, which the NVSHMEM headers use */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "device_host/nvshmem_types.h"
#include "device_host/nvshmem_common.cuh"
#include "device_host_transport/nvshmem_constants.h"
#include "shmem/shmem.h"
#include "test.h"

#define SAME_OFFSET(ours, theirs, field) ASSERT_EQ(offsetof(ours, field), offsetof(theirs, field))

int main(void) {
  ASSERT_EQ(sizeof(struct mg__nvshmemx_init_attr), sizeof(nvshmemx_init_attr_t));
  ASSERT_EQ(sizeof(mg__shmem_init_args_t), sizeof(nvshmemx_init_args_t));
  ASSERT_EQ(sizeof(mg__shmem_uid_args_t), sizeof(nvshmemx_uniqueid_args_t));
  ASSERT_EQ(sizeof(mg__nvshmemx_uniqueid_t), sizeof(nvshmemx_uniqueid_t));
  SAME_OFFSET(struct mg__nvshmemx_init_attr, nvshmemx_init_attr_t, version);
  SAME_OFFSET(struct mg__nvshmemx_init_attr, nvshmemx_init_attr_t, mpi_comm);
  SAME_OFFSET(struct mg__nvshmemx_init_attr, nvshmemx_init_attr_t, args);
  SAME_OFFSET(mg__shmem_init_args_t, nvshmemx_init_args_t, uid_args);
  SAME_OFFSET(mg__shmem_init_args_t, nvshmemx_init_args_t, content);
  SAME_OFFSET(mg__shmem_uid_args_t, nvshmemx_uniqueid_args_t, id);
  SAME_OFFSET(mg__shmem_uid_args_t, nvshmemx_uniqueid_args_t, myrank);
  SAME_OFFSET(mg__shmem_uid_args_t, nvshmemx_uniqueid_args_t, nranks);

  static const nvshmemx_init_attr_t want = NVSHMEMX_INIT_ATTR_INITIALIZER;
  mg__nvshmemx_init_attr_t got;
  memset(&got, 0xa5, sizeof got);
  mg__shmem_attr_init(&got);
  ASSERT_EQ(got.version, want.version);
  ASSERT(got.mpi_comm == want.mpi_comm);
  ASSERT_EQ(got.args.version, want.args.version);
  ASSERT_EQ(got.args.uid_args.version, want.args.uid_args.version);
  ASSERT(got.args.uid_args.id == NULL && want.args.uid_args.id == NULL);
  ASSERT_EQ(got.args.uid_args.myrank, want.args.uid_args.myrank);
  ASSERT_EQ(got.args.uid_args.nranks, want.args.uid_args.nranks);
  ASSERT(memcmp(got.args.content, want.args.content, sizeof got.args.content) == 0);

  static const nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
  ASSERT_EQ(MG__NVSHMEMX_UNIQUEID_VERSION, uid.version);
  ASSERT_EQ(MG_SHMEM_TEAM_NONE, NVSHMEM_TEAM_INVALID);
  ASSERT_EQ(MG_SHMEM_TEAM_WORLD, NVSHMEM_TEAM_WORLD);
  ASSERT_EQ(MG_SHMEM_TEAM_SHARED, NVSHMEM_TEAM_SHARED);
  ASSERT_EQ(MG_SHMEM_TEAM_NODE, NVSHMEMX_TEAM_NODE);
  ASSERT_EQ(MG__NVSHMEM_STATUS_IS_INITIALIZED, NVSHMEM_STATUS_IS_INITIALIZED);
  ASSERT_EQ(MG__NVSHMEM_STATUS_LIMITED_MPG, NVSHMEM_STATUS_LIMITED_MPG);
  ASSERT_EQ(MG__NVSHMEM_STATUS_FULL_MPG, NVSHMEM_STATUS_FULL_MPG);
  printf("init attribute, teams and statuses agree with NVSHMEM %d.%d.%d's headers\n",
         NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION);
  return 0;
}
