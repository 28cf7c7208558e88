/*
 * comm_destroy_race.c -- mg_comm_destroy against calls on the same communicator in other
 * threads. Each round makes a one-rank host communicator, starts threads that call operations
 * (alone and in groups), queries and custom-op calls on it in a loop, and destroys it from the
 * main thread while they run. Every call must return MG_OK or a clean refusal (the
 * communicator is not live, aborted, or was destroyed before the group ended), and destroy must
 * succeed. Under ASan or TSan a call that touched the freed communicator is reported.
 *
 *   comm_destroy_race [rounds]      (default 2000)
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "mgcomm.h"
#include "test.h"

#define CALLERS 3

static mg_comm_t *comm;
static atomic_int stop;
static atomic_long calls;
static atomic_int bad;          /* a status that is not allowed */
static char bad_msg[512];

static void check(mg_status_t st, const char *what) {
  atomic_fetch_add(&calls, 1);
  if (st == MG_OK || st == MG_ERR_INVALID_USAGE || st == MG_ERR_ABORTED) return;
  if (atomic_exchange(&bad, 1) == 0)
    snprintf(bad_msg, sizeof bad_msg, "%s returned %s: %s", what, mg_status_name(st),
             mg_last_error());
}

static void *caller(void *arg) {
  const int id = (int)(intptr_t)arg;
  float x[4] = {1, 2, 3, 4}, y[4];
  for (unsigned i = 0; !atomic_load(&stop); i++) {
    switch ((i + (unsigned)id) % 6) {
      case 0: check(mg_all_reduce(x, y, 4, MG_FLOAT32, MG_SUM, comm, NULL), "mg_all_reduce"); break;
      case 1: {
        mg_status_t st = mg_group_begin();
        if (st == MG_OK) {
          (void)mg_broadcast(x, y, 4, MG_FLOAT32, 0, comm, NULL); /* its error ends the group */
          st = mg_group_end();
        }
        check(st, "mg_group_end");
        break;
      }
      case 2: {
        int r = -1;
        check(mg_comm_rank(comm, &r), "mg_comm_rank");
        break;
      }
      case 3: {
        mg_status_t ae;
        check(mg_comm_async_error(comm, &ae), "mg_comm_async_error");
        char buf[64];
        (void)mg_comm_last_error(comm, buf, sizeof buf);
        break;
      }
      case 4: {
        mg_comm_state_t s;
        check(mg_comm_state(comm, &s), "mg_comm_state");
        break;
      }
      case 5: {
        const float two = 2.0f;
        mg_op_t op;
        mg_status_t st = mg_op_create_premul_sum(comm, &two, MG_FLOAT32, MG_SCALAR_HOST_IMMEDIATE, &op);
        if (st == MG_OK) check(mg_op_destroy(comm, op), "mg_op_destroy");
        else if (st != MG_ERR_NOT_SUPPORTED) check(st, "mg_op_create_premul_sum");
        break;
      }
    }
    sched_yield(); /* lets the destroying thread run on a machine with fewer cores than threads */
  }
  return NULL;
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 2000;
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 5.0;
  long total = 0;
  for (int r = 0; r < rounds; r++) {
    ASSERT_OK(mg_comm_init_all(&cfg, 1, NULL, &comm));
    atomic_store(&stop, 0);
    atomic_store(&calls, 0);
    pthread_t th[CALLERS];
    for (int i = 0; i < CALLERS; i++)
      ASSERT_EQ(pthread_create(&th[i], NULL, caller, (void *)(intptr_t)i), 0);
    /* Destroy after a number of calls that changes from round to round, so that it meets the
     * callers at every point of their calls. */
    const long after = r % 64;
    while (atomic_load(&calls) < after) sched_yield();
    ASSERT_OK(mg_comm_destroy(comm));
    const long at_destroy = atomic_load(&calls);
    /* Calls that start now meet a destroyed handle. */
    while (atomic_load(&calls) < at_destroy + CALLERS) sched_yield();
    atomic_store(&stop, 1);
    for (int i = 0; i < CALLERS; i++) ASSERT_EQ(pthread_join(th[i], NULL), 0);
    if (atomic_load(&bad)) FAIL("round %d: %s", r, bad_msg);
    total += atomic_load(&calls);
  }
  printf("%d rounds, %ld calls: every call returned MG_OK or a clean refusal\n", rounds, total);
  return 0;
}
