/*
 * config_abi_v6.c -- MG_CONFIG_VERSION 6 (all_reduce_algo) and the two layouts before it: a
 * program built against version 4's mgcomm.h (112 bytes on LP64) or version 5's (152) still
 * runs, its fields read and the later versions' fields at their defaults, whatever lies after
 * them (version 6's field lies in version 5's tail padding: both layouts are 152 bytes, and the
 * version tells them apart); version 6's own layout is read whole; a size that is not its
 * version's is refused, and so is an all_reduce_algo that is no mg_algo_t.
 */
#include <string.h>

#include "core/config.h"
#include "test.h"

#define V4_SIZE 112 /* mgcomm.h's contract: 4 -> 112 bytes on LP64 */
#define V5_SIZE 152 /* 5 -> 152 */

/* An older layout's struct in a buffer, with garbage where the later fields would be. */
static const mg_config_t *older(unsigned char *buf, size_t len, const mg_config_t *c, size_t size) {
  memset(buf, 0x5A, len);
  memcpy(buf, c, size);
  return (const mg_config_t *)(void *)buf;
}

int main(void) {
  ASSERT_EQ(MG_CONFIG_VERSION, 6);
  ASSERT_EQ(sizeof(mg_config_t), V5_SIZE); /* version 6's field took version 5's tail padding */
  ASSERT_EQ(offsetof(mg_config_t, nccl_graph_usage_mode), V4_SIZE); /* appended after v4 */
  ASSERT_EQ(offsetof(mg_config_t, all_reduce_algo), V5_SIZE - 4);

  _Alignas(mg_config_t) unsigned char buf[sizeof(mg_config_t) + 64];
  mg_config_t out;

  /* Version 4. */
  mg_config_t v4 = MG_CONFIG_INIT;
  v4.size = V4_SIZE;
  v4.version = 4;
  v4.nccl_blocking = 0;
  v4.timeout_s = 7;
  ASSERT_OK(mg__config_read(older(buf, sizeof buf, &v4, V4_SIZE), "the_init", &out));
  ASSERT_EQ(out.version, 6);
  ASSERT_EQ(out.nccl_blocking, 0);
  ASSERT(out.timeout_s == 7);
  const int *v5 = &out.nccl_graph_usage_mode;
  for (int i = 0; i < 9; i++) ASSERT_EQ(v5[i], MG_UNDEF_INT); /* the nine fields of version 5 */
  ASSERT_EQ(out.all_reduce_algo, MG_ALGO_DEFAULT);

  /* Version 5: its last field read, version 6's at its default (the garbage after the field
   * lies where version 6 put all_reduce_algo). */
  mg_config_t v5c = MG_CONFIG_INIT;
  v5c.size = V5_SIZE;
  v5c.version = 5;
  v5c.nccl_nvls_host_mode = 3;
  ASSERT_OK(mg__config_read(older(buf, sizeof buf, &v5c, V5_SIZE - 4), "the_init", &out));
  ASSERT_EQ(out.nccl_nvls_host_mode, 3);
  ASSERT_EQ(out.all_reduce_algo, MG_ALGO_DEFAULT);

  /* Version 6, whole. */
  mg_config_t c = MG_CONFIG_INIT;
  ASSERT_EQ(c.all_reduce_algo, MG_ALGO_DEFAULT);
  c.nccl_max_p2p_peers = 4;
  c.all_reduce_algo = MG_ALGO_NCCL;
  ASSERT_OK(mg__config_read(&c, "the_init", &out));
  ASSERT_EQ(out.nccl_max_p2p_peers, 4);
  ASSERT_EQ(out.all_reduce_algo, MG_ALGO_NCCL);
  c.all_reduce_algo = (mg_algo_t)4;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg__config_read(&c, "the_init", &out));
  ASSERT_CONTAINS(mg_last_error(), "the_init: config->all_reduce_algo 4 is not an mg_algo_t");
  c.all_reduce_algo = MG_ALGO_MGCOMM;

  /* Version 6 with version 4's size, and version 4's struct with version 6's size: not made
   * with MG_CONFIG_INIT. */
  c.size = V4_SIZE;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg__config_read(&c, "the_init", &out));
  ASSERT_CONTAINS(mg_last_error(), "6 (size 152)");
  ASSERT_CONTAINS(mg_last_error(), "4 (size 112)");
  older(buf, sizeof buf, &v4, V4_SIZE);
  ((mg_config_t *)(void *)buf)->size = sizeof(mg_config_t);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE,
                mg__config_read((const mg_config_t *)(void *)buf, "the_init", &out));
  printf("config version 6: read whole; versions 4 and 5 read with the later defaults\n");
  return 0;
}
