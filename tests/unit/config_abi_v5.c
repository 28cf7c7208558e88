/*
 * config_abi_v5.c -- MG_CONFIG_VERSION 5 (NCCL 2.29-2.32's config fields) and the layout before
 * it: a program built against version 4's mgcomm.h (112 bytes on LP64) still runs, its fields
 * read and the fields of version 5 at their defaults, whatever lies after its struct; version
 * 5's own layout is read whole; a size that is neither is refused.
 */
#include <string.h>

#include "core/config.h"
#include "test.h"

#define V4_SIZE 112 /* mgcomm.h's contract: 4 -> 112 bytes on LP64 */

int main(void) {
  ASSERT_EQ(MG_CONFIG_VERSION, 5);
  ASSERT_EQ(sizeof(mg_config_t), 152);
  ASSERT_EQ(offsetof(mg_config_t, nccl_graph_usage_mode), V4_SIZE); /* appended after v4 */

  /* Version 4's struct, with garbage where version 5's fields would be. */
  _Alignas(mg_config_t) unsigned char buf[sizeof(mg_config_t) + 64];
  memset(buf, 0x5A, sizeof buf);
  mg_config_t v4 = MG_CONFIG_INIT;
  v4.size = V4_SIZE;
  v4.version = 4;
  v4.nccl_blocking = 0;
  v4.timeout_s = 7;
  memcpy(buf, &v4, V4_SIZE);
  mg_config_t out;
  ASSERT_OK(mg__config_read((const mg_config_t *)(void *)buf, "the_init", &out));
  ASSERT_EQ(out.version, 5);
  ASSERT_EQ(out.nccl_blocking, 0);
  ASSERT(out.timeout_s == 7);
  const int *v5 = &out.nccl_graph_usage_mode;
  for (int i = 0; i < 9; i++) ASSERT_EQ(v5[i], MG_UNDEF_INT); /* the nine fields of version 5 */
  ASSERT_EQ(out.nccl_nvls_host_mode, MG_UNDEF_INT);

  /* Version 5, whole. */
  mg_config_t c = MG_CONFIG_INIT;
  c.nccl_max_p2p_peers = 4;
  c.nccl_nvls_host_mode = 3;
  ASSERT_OK(mg__config_read(&c, "the_init", &out));
  ASSERT_EQ(out.nccl_max_p2p_peers, 4);
  ASSERT_EQ(out.nccl_nvls_host_mode, 3);

  /* Version 5 with version 4's size, and the reverse: not made with MG_CONFIG_INIT. */
  c.size = V4_SIZE;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg__config_read(&c, "the_init", &out));
  ASSERT_CONTAINS(mg_last_error(), "5 (size 152)");
  memcpy(buf, &v4, V4_SIZE);
  ((mg_config_t *)(void *)buf)->size = sizeof(mg_config_t);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg__config_read((const mg_config_t *)(void *)buf, "the_init", &out));
  printf("config version 5: read whole; version 4 read with version 5's defaults\n");
  return 0;
}
