/*
 * host_readers_spin.c -- an owner whose readers copy out of its buffer does not sleep while they
 * do (host_coll.c, mg__readers_copy_s): in the last step of a direct collective every rank has
 * posted, the readers are copying on their CPUs, and a sleep on the wake word would only add
 * the futex's wake-up to the end of the collective.
 *
 * 2 thread ranks, each bound to a CPU of its own (so that the reader cannot run in the owner's
 * turns of the CPU); rank 0 broadcasts 16 MiB in place, 6 times after a first (not counted), each
 * time once rank 1 has posted the broadcast (so that rank 0 waits for nothing but rank 1's copy):
 * the reader's memcpy takes a millisecond or more, twenty times the 50 us an idle rank spins
 * before it sleeps, and well under the bound (10 ms for this size). Rank 0's count of sleeps
 * (mg__hshm_t.sleeps) must stay at 2 or under (a reader stopped for long by a busy machine may
 * still make it sleep; with a busy loop beside each rank on the 2-CPU VM it stayed at 0); it was
 * 6 of 6 before. Skips where the process may run on one CPU. The data is checked.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "test.h"

#define N 2
#define CALLS 6
#define COUNT ((size_t)4 << 20) /* float32: 16 MiB */

static mg_comm_t *comms[N];
static pthread_barrier_t barrier;
static float *buf[N];

static cpu_set_t cpu_of[N]; /* each rank on a CPU of its own */
static uint64_t slept_before; /* rank 0's count of sleeps after the first call (a warm-up) */

static void *run_rank(void *p) {
  const int r = (int)(intptr_t)p;
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof cpu_of[r], &cpu_of[r]), 0);
  for (int c = 0; c <= CALLS; c++) {
    for (size_t i = 0; i < COUNT; i += 4096) buf[r][i] = r == 0 ? (float)(c + i) : -1.0f;
    pthread_barrier_wait(&barrier);
    if (r == 0) { /* the owner starts once the reader has posted: its one wait is for the copy */
      const mg__hshm_t *s = &mg__hcomm(comms[0])->shm;
      const uint64_t step = mg__hcomm(comms[0])->step;
      while (atomic_load(&s->ranks[1].posted) <= step) sched_yield();
    }
    ASSERT_OK(mg_broadcast(buf[r], buf[r], COUNT, MG_FLOAT32, 0, comms[r], NULL));
    for (size_t i = 0; i < COUNT; i += 4096) ASSERT(buf[r][i] == (float)(c + i));
    if (r == 0 && c == 0) slept_before = mg__hcomm(comms[0])->shm.sleeps;
  }
  return NULL;
}

int main(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
  mg__hshm_t *owner = &mg__hcomm(comms[0])->shm;
  if (!owner->direct || owner->hdr->direct_threads_bytes > COUNT * sizeof(float))
    SKIP("the broadcast would not be direct here");
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < N) SKIP("this process may run on fewer than %d CPUs", N);
  for (int cpu = 0, r = 0; r < N; cpu++)
    if (CPU_ISSET(cpu, &mine)) {
      CPU_ZERO(&cpu_of[r]);
      CPU_SET(cpu, &cpu_of[r++]);
    }
  for (int r = 0; r < N; r++) { /* every page touched: no page faults in the timed copies */
    ASSERT((buf[r] = malloc(COUNT * sizeof(float))) != NULL);
    memset(buf[r], 0, COUNT * sizeof(float));
  }
  ASSERT_EQ(pthread_barrier_init(&barrier, NULL, N), 0);
  pthread_t t[N];
  for (int r = 0; r < N; r++)
    ASSERT_EQ(pthread_create(&t[r], NULL, run_rank, (void *)(intptr_t)r), 0);
  for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
  const uint64_t slept = owner->sleeps - slept_before;
  if (slept > 2)
    FAIL("the owner slept %llu times in %d broadcasts of 16 MiB", (unsigned long long)slept, CALLS);
  printf("host_readers_spin: the owner slept %llu times in %d broadcasts of 16 MiB\n",
         (unsigned long long)slept, CALLS);
  for (int r = 0; r < N; r++) {
    ASSERT_OK(mg_comm_destroy(comms[r]));
    free(buf[r]);
  }
  return 0;
}
