/*
 * group_many.c -- a group holds its first operations without the heap (group.c) and any number
 * after them: one rank sends itself K messages and receives them in one group, for K across the
 * inline array's end and several growths of the heap array, and every message arrives in order.
 * A group whose call past the inline operations fails posts nothing and returns that error, and
 * the next group runs (ASan: no operation leaks on either path).
 */
#include <stdint.h>

#include "test.h"

#define KMAX 40

int main(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  mg_comm_t *comm = NULL;
  ASSERT_OK(mg_comm_init_all(&cfg, 1, NULL, &comm));
  int64_t send[KMAX], recv[KMAX];
  const int ks[] = {1, 2, 3, 4, 5, 8, 9, 17, KMAX};
  for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
    const int k = ks[t]; /* k sends and k receives: 2k operations */
    for (int i = 0; i < k; i++) {
      send[i] = 1000 * k + i;
      recv[i] = -1;
    }
    ASSERT_OK(mg_group_begin());
    for (int i = 0; i < k; i++) ASSERT_OK(mg_send(&send[i], 1, MG_INT64, 0, comm, NULL));
    for (int i = 0; i < k; i++) ASSERT_OK(mg_recv(&recv[i], 1, MG_INT64, 0, comm, NULL));
    ASSERT_OK(mg_group_end());
    for (int i = 0; i < k; i++) ASSERT_EQ(recv[i], 1000 * k + i);
  }
  /* A bad call as the 7th operation: the group posts nothing (no message is sent, so the receive
   * of the next group would wait for one: it must find only its own). */
  ASSERT_OK(mg_group_begin());
  for (int i = 0; i < 6; i++) ASSERT_OK(mg_send(&send[i], 1, MG_INT64, 0, comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_send(&send[0], 1, MG_INT64, 5, comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_group_end());
  ASSERT_CONTAINS(mg_last_error(), "mg_group_end: nothing was posted");
  send[0] = 77;
  recv[0] = -1;
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_send(&send[0], 1, MG_INT64, 0, comm, NULL));
  ASSERT_OK(mg_recv(&recv[0], 1, MG_INT64, 0, comm, NULL));
  ASSERT_OK(mg_group_end());
  ASSERT_EQ(recv[0], 77);
  ASSERT_OK(mg_comm_destroy(comm));
  printf("group_many: groups of 2 to %d operations, and a failed one of 7\n", 2 * KMAX);
  return 0;
}
