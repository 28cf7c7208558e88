/*
 * progress_wait.h -- waits on what ranks publish instead of sleeping: a test that kills, aborts
 * or revokes under a waiting rank first waits until the ranks are in the operation.
 */
#ifndef MG_TEST_PROGRESS_WAIT_H
#define MG_TEST_PROGRESS_WAIT_H

#include <stdint.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/comm.h"
#include "test.h"

/* Waits (at most 10 s) until ranks [0, n) of comm have published, through the backend's
 * progress (the host backend's segment), that they enqueued collective #seq: then they wait in
 * it, or are about to. */
static inline void test_wait_enqueued(mg_comm_t *comm, int n, uint64_t seq) {
  const double t0 = mg__now();
  for (int r = 0; r < n; r++) {
    mg__progress_t p = {0};
    while (comm->backend->peer_progress(comm, r, &p) != MG_OK || p.enqueued1 < seq + 1) {
      if (mg__now() - t0 > 10)
        FAIL("rank %d never published collective #%llu (last: %llu)", r,
             (unsigned long long)seq, (unsigned long long)p.enqueued1);
      usleep(1000);
    }
  }
}

#endif
