/*
 * test_mem_host.c -- the public memory calls (mgcomm.h, "Memory") on the host backend, where
 * they make programs written for GPUs run unchanged: mg_mem_alloc gives aligned host memory,
 * mg_memcpy copies, registrations are checked and recorded. Every bad input is a status:
 * foreign and double frees, bad flags, overlapping symmetric registrations, a registration of
 * another communicator, calls after abort and destroy.
 */
#include <stdint.h>
#include <stdlib.h>

#include "test.h"

int main(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  mg_comm_t *comms[2];
  ASSERT_OK(mg_comm_init_all(&cfg, 2, NULL, comms));
  mg_comm_t *c = comms[0];

  /* mg_mem_alloc */
  void *p = NULL, *q = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_mem_alloc(NULL, 64, &p));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_mem_alloc(c, 0, &p));
  ASSERT_CONTAINS(mg_last_error(), "bytes is 0");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_mem_alloc(c, 64, NULL));
  ASSERT(p == NULL);
  ASSERT_OK(mg_mem_alloc(c, 1000, &p));
  ASSERT_OK(mg_mem_alloc(c, 1000, &q));
  ASSERT(p != NULL && q != NULL && p != q);
  ASSERT_EQ((uintptr_t)p % 4096, 0);
  memset(p, 0x3c, 1000);

  /* mg_memcpy */
  ASSERT_OK(mg_memcpy(c, q, p, 1000));
  ASSERT_EQ(memcmp(p, q, 1000), 0);
  ASSERT_OK(mg_memcpy(c, NULL, NULL, 0));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_memcpy(c, NULL, p, 8));
  ASSERT_CONTAINS(mg_last_error(), "dst is NULL");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_memcpy(c, (char *)p + 8, p, 16));
  ASSERT_CONTAINS(mg_last_error(), "overlap");
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_memcpy(NULL, q, p, 8));

  /* mg_mem_free: only what mg_mem_alloc gave, once. */
  ASSERT_OK(mg_mem_free(NULL));
  void *foreign = malloc(64);
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_mem_free(foreign));
  ASSERT_CONTAINS(mg_last_error(), "was not returned by mg_mem_alloc");
  free(foreign); /* still ours: mg_mem_free left it alone */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_mem_free((char *)p + 16));
  ASSERT_OK(mg_mem_free(q));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_mem_free(q));
  ASSERT_CONTAINS(mg_last_error(), "freed already");

  /* Registrations. */
  mg_reg_t *r1 = NULL, *r2 = NULL, *r3 = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_register(NULL, p, 64, MG_REGISTER_LOCAL, &r1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_register(c, NULL, 64, MG_REGISTER_LOCAL, &r1));
  ASSERT_CONTAINS(mg_last_error(), "buf is NULL");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_register(c, p, 0, MG_REGISTER_LOCAL, &r1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_register(c, p, 64, 7, &r1));
  ASSERT_CONTAINS(mg_last_error(), "flags 7");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_register(c, p, 64, MG_REGISTER_LOCAL, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_comm_register(c, (void *)(UINTPTR_MAX - 8), 64, MG_REGISTER_LOCAL, &r1));
  ASSERT(r1 == NULL);
  /* The communicator's last error keeps the detail of a failed call. */
  char buf[256];
  ASSERT_GT(mg_comm_last_error(c, buf, sizeof buf), 0);
  ASSERT_CONTAINS(buf, "mg_comm_register");
  ASSERT_OK(mg_comm_register(c, p, 1000, MG_REGISTER_LOCAL, &r1));
  ASSERT_OK(mg_comm_register(c, p, 1000, MG_REGISTER_LOCAL, &r2)); /* local twice: fine */
  ASSERT_OK(mg_comm_register(c, (char *)p + 500, 500, MG_REGISTER_SYMMETRIC, &r3));
  mg_reg_t *r4 = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_comm_register(c, p, 501, MG_REGISTER_SYMMETRIC, &r4));
  ASSERT_CONTAINS(mg_last_error(), "overlaps the symmetric registration");
  ASSERT(r4 == NULL);
  ASSERT_OK(mg_comm_register(c, p, 500, MG_REGISTER_SYMMETRIC, &r4)); /* adjacent: fine */
  /* Deregistration: only registrations of this comm, once. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_deregister(c, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_deregister(comms[1], r1));
  ASSERT_CONTAINS(mg_last_error(), "not a registration of this communicator");
  ASSERT_OK(mg_comm_deregister(c, r1));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_deregister(c, r1));
  ASSERT_OK(mg_comm_deregister(c, r3));
  /* Registered again after its end. */
  ASSERT_OK(mg_comm_register(c, (char *)p + 500, 500, MG_REGISTER_SYMMETRIC, &r3));

  /* After abort: no new registration; ending one still works; r2, r3, r4 end with the comm. */
  ASSERT_OK(mg_comm_abort(c));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_register(c, p, 64, MG_REGISTER_LOCAL, &r1));
  ASSERT_OK(mg_comm_deregister(c, r4));
  /* Memory does not belong to the communicator: allocated on an aborted one, freed after the
   * communicators are gone. */
  ASSERT_OK(mg_mem_alloc(c, 64, &q));
  ASSERT_OK(mg_comm_destroy(comms[0]));
  ASSERT_OK(mg_comm_destroy(comms[1]));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_deregister(c, r2));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_mem_alloc(c, 64, &q));
  ASSERT_OK(mg_mem_free(p));
  ASSERT_OK(mg_mem_free(q));
  printf("host memory calls: ok\n");
  return 0;
}
