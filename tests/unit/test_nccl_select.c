/*
 * test_nccl_select.c -- the NCCL backend where no GPU can be used (the CPU machines): how it is
 * selected, what it says, and what works without a driver.
 *
 *   test_nccl_select nodriver   no usable CUDA driver: AUTO is host and says why; asking for
 *                               nccl (argument, MGCOMM_BACKEND) is MG_ERR_BACKEND_UNAVAILABLE
 *                               naming the driver; init and ids of AUTO follow
 *   test_nccl_select uid        mg_unique_id_create(MG_BACKEND_NCCL) needs libnccl only: ids
 *                               are made, differ, and are refused by the host backend; the
 *                               NCCL backend refuses host ids and all-zero ids
 *   test_nccl_select fault      an injected ncclGetUniqueId failure (loader seam) comes back as
 *                               MG_ERR_BACKEND with NCCL's names, and nothing is left behind
 * Each mode skips (77) where its premise does not hold (a GPU machine, no libnccl).
 */
#include <stdlib.h>

#include "backend/nccl/nccl.h"
#include "test.h"

static int driver_usable(void) {
  int n = 0;
  return mg_device_count(&n) == MG_OK && n > 0;
}

static void need_no_driver(void) {
  if (driver_usable()) SKIP("a CUDA device is usable here; this test is for machines without");
}

static void need_nccl(void) {
  mg_library_info_t li;
  ASSERT_OK(mg_library_info(MG_LIB_NCCL, &li));
  if (!li.loaded) SKIP("no libnccl.so.2 here: %s", li.error);
}

static void mode_nodriver(void) {
  need_no_driver();
  mg_backend_t b = MG_BACKEND_NCCL;
  char why[512];
  /* AUTO: host, and the reason names what is missing. */
  unsetenv("MGCOMM_BACKEND");
  ASSERT_OK(mg_backend_resolve(MG_BACKEND_AUTO, &b, why, sizeof why));
  ASSERT_EQ(b, MG_BACKEND_HOST);
  ASSERT_CONTAINS(why, "auto: no usable NCCL backend");
  ASSERT_CONTAINS(why, "no usable CUDA driver (libcuda.so.1)");
  printf("auto: %s\n", why);
  /* Asked for by name: an error naming the driver, never a silent fallback. */
  b = MG_BACKEND_HOST;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_backend_resolve(MG_BACKEND_NCCL, &b, why, sizeof why));
  ASSERT_EQ(b, MG_BACKEND_HOST); /* untouched */
  ASSERT_CONTAINS(mg_last_error(), "the nccl backend (requested by the caller) cannot run here");
  ASSERT_CONTAINS(mg_last_error(), "libcuda.so.1");
  printf("nccl: %s\n", mg_last_error());
  mg_comm_t *comms[2] = {NULL, NULL};
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_NCCL;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_comm_init_all(&cfg, 2, NULL, comms));
  ASSERT_CONTAINS(mg_last_error(), "mg_comm_init_all");
  ASSERT_CONTAINS(mg_last_error(), "libcuda.so.1");
  ASSERT(comms[0] == NULL && comms[1] == NULL);
}

/* Run with MGCOMM_BACKEND=nccl: AUTO means nccl, which cannot run; the override is an error. */
static void mode_env(void) {
  need_no_driver();
  mg_backend_t b;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_backend_resolve(MG_BACKEND_AUTO, &b, NULL, 0));
  ASSERT_CONTAINS(mg_last_error(), "the nccl backend (MGCOMM_BACKEND) cannot run here");
  ASSERT_CONTAINS(mg_last_error(), "libcuda.so.1");
  mg_comm_t *comm = NULL;
  mg_unique_id_t id;
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_unique_id_create(MG_BACKEND_AUTO, &id));
  ASSERT_CONTAINS(mg_last_error(), "mg_unique_id_create");
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &id));
  ASSERT_STATUS(MG_ERR_BACKEND_UNAVAILABLE, mg_comm_init_rank(NULL, 1, &id, 0, &comm));
  ASSERT_CONTAINS(mg_last_error(), "MGCOMM_BACKEND");
  ASSERT(comm == NULL);
  /* A config that names host is not overridden. */
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  ASSERT_OK(mg_comm_init_rank(&cfg, 1, &id, 0, &comm));
  ASSERT_OK(mg_comm_destroy(comm));
}

static int nonzero(const mg_unique_id_t *id) {
  for (size_t i = 0; i < sizeof id->internal; i++)
    if (id->internal[i] != 0) return 1;
  return 0;
}

static void mode_uid(void) {
  need_nccl();
  mg_unique_id_t a, b;
  memset(&a, 0, sizeof a);
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_NCCL, &a));
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_NCCL, &b));
  ASSERT(nonzero(&a) && nonzero(&b));
  ASSERT(memcmp(&a, &b, sizeof a) != 0);
  /* The host backend refuses an NCCL id. */
  mg_config_t host = MG_CONFIG_INIT;
  host.backend = MG_BACKEND_HOST;
  mg_comm_t *comm = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_rank(&host, 1, &a, 0, &comm));
  ASSERT_CONTAINS(mg_last_error(), "not a host-backend unique id");
  ASSERT(comm == NULL);
  if (!driver_usable()) {
    printf("ncclGetUniqueId works without a CUDA driver: ids made and distinct\n");
    return;
  }
  /* With a GPU: the NCCL backend refuses host ids and all-zero ids before it calls NCCL. */
  mg_unique_id_t h, z;
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &h));
  memset(&z, 0, sizeof z);
  mg_config_t nccl = MG_CONFIG_INIT;
  nccl.backend = MG_BACKEND_NCCL;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_rank(&nccl, 1, &h, 0, &comm));
  ASSERT_CONTAINS(mg_last_error(), "host-backend unique id");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_init_rank(&nccl, 1, &z, 0, &comm));
  ASSERT_CONTAINS(mg_last_error(), "all zero bytes");
  ASSERT(comm == NULL);
}

static void mode_fault(void) {
#ifdef MGCOMM_TESTING
  need_nccl();
  mg_unique_id_t id;
  memset(&id, 0x5a, sizeof id);
  mg_unique_id_t before = id;
  ASSERT_OK(mg__fault_set("ncclGetUniqueId", 1, 3 /* ncclInternalError */, 1));
  ASSERT_STATUS(MG_ERR_BACKEND, mg_unique_id_create(MG_BACKEND_NCCL, &id));
  ASSERT_CONTAINS(mg_last_error(), "mg_unique_id_create");
  ASSERT_CONTAINS(mg_last_error(), "ncclGetUniqueId failed: ncclInternalError (3)");
  ASSERT(memcmp(&id, &before, sizeof id) == 0); /* outputs only on success */
  ASSERT_EQ(mg__fault_fired("ncclGetUniqueId"), 1);
  /* The rule was for one call: the next one works. */
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_NCCL, &id));
  ASSERT(nonzero(&id));
  mg__fault_clear(NULL);
  /* ncclRemoteError maps to MG_ERR_REMOTE, ncclInvalidUsage to MG_ERR_INVALID_USAGE. */
  ASSERT_OK(mg__fault_set("ncclGetUniqueId", 1, 6, 1));
  ASSERT_STATUS(MG_ERR_REMOTE, mg_unique_id_create(MG_BACKEND_NCCL, &id));
  ASSERT_CONTAINS(mg_last_error(), "ncclRemoteError (6)");
  ASSERT_OK(mg__fault_set("ncclGetUniqueId", 1, 5, 1));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_unique_id_create(MG_BACKEND_NCCL, &id));
  mg__fault_clear(NULL);
  printf("injected ncclGetUniqueId failures: %s\n", mg_last_error());
#else
  SKIP("the fault seam is compiled into test builds only (MGCOMM_TESTING)");
#endif
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: %s nodriver|env|uid|fault", argv[0]);
  if (strcmp(argv[1], "nodriver") == 0) mode_nodriver();
  else if (strcmp(argv[1], "env") == 0) mode_env();
  else if (strcmp(argv[1], "uid") == 0) mode_uid();
  else if (strcmp(argv[1], "fault") == 0) mode_fault();
  else FAIL("unknown mode %s", argv[1]);
  printf("%s: ok\n", argv[1]);
  return 0;
}
