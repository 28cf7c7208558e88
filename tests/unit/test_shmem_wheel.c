/*
 * test_shmem_wheel.c -- the real NVSHMEM of the nvidia-nvshmem wheel (MGCOMM_NVSHMEM_LIBRARY)
 * on a process without a CUDA driver (MGCOMM_CUDA_LIBRARY names a file that does not exist, so
 * this holds on GPU machines too): the queries that need no initialisation work (release,
 * specification, the symbol table with its required entry points present and nvshmem_init
 * absent from it), and mg_shmem_init_comm fails before NVSHMEM is called, with a status and a
 * message that say the driver is missing; no state is left behind, so a second try says the
 * same. Skips when the wheel was not downloaded (tests/unit/loader.cmake says how).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgcomm.h"
#include "test.h"

int main(void) {
  const char *lib = getenv("MGCOMM_NVSHMEM_LIBRARY");
  if (lib == NULL || access(lib, R_OK) != 0)
    SKIP("%s is absent (see tests/unit/loader.cmake for how to get it)", lib ? lib : "NVSHMEM");
  int rel = 0, spec = 0;
  ASSERT_OK(mg_shmem_version(&rel, &spec));
  ASSERT_EQ(rel, 30405);
  ASSERT_EQ(spec, 103);
  ASSERT_OK(mg_shmem_version(NULL, NULL));

  int n = mg_shmem_symbol_count(), found_init = 0, found_fin = 0;
  ASSERT_GT(n, 20);
  for (int i = 0; i < n; i++) {
    const char *name = NULL;
    int req = -1, present = -1;
    ASSERT_OK(mg_shmem_symbol(i, &name, &req, &present));
    ASSERT(strcmp(name, "nvshmem_init") != 0); /* not exported by 3.x: never asked for */
    if (req) ASSERT_EQ(present, 1);
    if (strcmp(name, "nvshmemx_hostlib_init_attr") == 0) found_init = present;
    if (strcmp(name, "nvshmemx_hostlib_finalize") == 0) found_fin = present;
  }
  ASSERT(found_init && found_fin);
  const char *name;
  int present;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_symbol(n, &name, NULL, &present));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_shmem_symbol(0, NULL, NULL, &present));

  int v;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_my_pe(&v));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_finalize());

  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  mg_unique_id_t id;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  ASSERT_OK(mg_comm_init_rank(&cfg, 1, &id, 0, &comm));
  for (int attempt = 0; attempt < 2; attempt++) {
    ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_shmem_init_comm(comm, MG_UNDEF_INT));
    ASSERT_CONTAINS(mg_last_error(), "libcuda");
    ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_shmem_my_pe(&v));
  }
  printf("last error: %s\n", mg_last_error());
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_shmem_init_env(0));
  ASSERT_OK(mg_comm_destroy(comm));
  printf("shmem with the wheel's NVSHMEM %d, no driver: ok\n", rel);
  return 0;
}
