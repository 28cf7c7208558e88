/*
 * host_scatter_steps.c -- a staged scatter's root writes each reader's piece into that reader's
 * own slot, so a step moves a whole slot to every reader, as a gather's step moves a slot from
 * every rank: a scatter of c elements per rank takes ceil(c / slot elements) transport steps, not
 * nranks times as many through pieces of the root's one slot.
 *
 * 4 thread ranks with 64 KiB slots and the direct copies out of reach (the creator's threshold,
 * which every rank reads from the segment); roots 1 and 3, in place and out of place, 1, 2.5 and
 * 4 slots per rank; the steps each rank's communicator advanced and the results are checked.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "test.h"

#define N 4

static mg_comm_t *comms[N];

static int32_t val(int piece, size_t i) { return (int32_t)(piece * 1000003 + (int)i); }

static void *run_rank(void *p) {
  const int me = (int)(intptr_t)p;
  mg_comm_t *comm = comms[me];
  mg__hcomm_t *hc = mg__hcomm(comm);
  const size_t slot_el = hc->shm.hdr->slot_bytes / sizeof(int32_t);
  static const size_t per_slot_x2[] = {2, 5, 8}; /* slots per rank, times 2 */
  for (int root = 1; root < N; root += 2)
    for (int in_place = 0; in_place < 2; in_place++)
      for (size_t i = 0; i < sizeof per_slot_x2 / sizeof per_slot_x2[0]; i++) {
        const size_t c = slot_el * per_slot_x2[i] / 2;
        int32_t *send = NULL, *recv = malloc(c * sizeof *recv);
        ASSERT(recv != NULL);
        if (me == root) {
          send = malloc((size_t)N * c * sizeof *send);
          ASSERT(send != NULL);
          for (int r = 0; r < N; r++)
            for (size_t e = 0; e < c; e++) send[(size_t)r * c + e] = val(r, e);
        }
        int32_t *dst = me == root && in_place ? send + (size_t)me * c : recv;
        if (dst == recv)
          for (size_t e = 0; e < c; e++) dst[e] = -1;
        const uint64_t s0 = hc->step;
        ASSERT_OK(mg_scatter(send, dst, c, MG_INT32, root, comm, NULL));
        const uint64_t steps = hc->step - s0, want = (c + slot_el - 1) / slot_el;
        if (steps != want)
          FAIL("rank %d: a scatter of %zu elements per rank (root %d, slots of %zu) took %llu "
               "steps, not %llu",
               me, c, root, slot_el, (unsigned long long)steps, (unsigned long long)want);
        for (size_t e = 0; e < c; e++)
          if (dst[e] != val(me, e))
            FAIL("rank %d, root %d, count %zu: [%zu] = %d, expected %d", me, root, c, e, dst[e],
                 val(me, e));
        free(send);
        free(recv);
      }
  return NULL;
}

int main(void) {
  setenv("MGCOMM_HOST_SLOT_BYTES", "65536", 1);
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  mg__hcomm(comms[0])->shm.hdr->direct_threads_bytes = UINT64_MAX;
  pthread_t t[N];
  for (int r = 0; r < N; r++)
    ASSERT_EQ(pthread_create(&t[r], NULL, run_rank, (void *)(intptr_t)r), 0);
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(comms[r]));
  printf("host_scatter_steps: a staged scatter takes a step per slot of each reader's piece\n");
  return 0;
}
