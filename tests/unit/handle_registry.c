/*
 * handle_registry.c -- the registry of live handles (src/core/handle.c): what it answers alone,
 * and that lookups from several threads never give a wrong answer while another thread
 * registers and removes handles, the table growing and filling with tombstones meanwhile; and
 * that the table's size follows the live handles, not the number ever registered.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/handle.h"
#include "test.h"

#define STABLE 64
#define READERS 3
#define ROUNDS 200
#define BURST 300

static char stable[STABLE];      /* registered before the readers start, never removed */
static char transient[ROUNDS][BURST]; /* registered and removed by the writer, a new address each
                                         time, so that tombstones pile up */
static char never;               /* never registered */
static atomic_int done;
static atomic_long wrong, lookups;

static void in_with(void *p, void *arg) {
  if (p != &stable[1]) atomic_fetch_add(&wrong, 1);
  *(int *)arg = 1;
}

/* Readers 0 and 1 look up only (mg__handle_valid); reader 2 also runs a function under the
 * registry's read lock (mg__handle_with). */
static void *reader(void *arg) {
  const int with = (int)(intptr_t)arg == 2;
  long n = 0;
  while (!atomic_load(&done)) {
    for (int i = 0; i < STABLE; i++) {
      const mg__handle_kind_t k = i % 2 ? MG__HANDLE_COMM : MG__HANDLE_STREAM;
      if (!mg__handle_valid(&stable[i], k)) atomic_fetch_add(&wrong, 1);
      if (mg__handle_valid(&stable[i], k == MG__HANDLE_COMM ? MG__HANDLE_STREAM : MG__HANDLE_COMM))
        atomic_fetch_add(&wrong, 1);
      n += 2;
    }
    if (mg__handle_valid(&never, MG__HANDLE_COMM)) atomic_fetch_add(&wrong, 1);
    n++;
    if (!with) {
      sched_yield(); /* lets the writer run on a machine of few cores */
      continue;
    }
    int ran = 0;
    if (!mg__handle_with(&stable[1], MG__HANDLE_COMM, in_with, &ran) || !ran)
      atomic_fetch_add(&wrong, 1);
    n += 2;
  }
  atomic_fetch_add(&lookups, n);
  return NULL;
}

int main(void) {
  /* Alone. */
  ASSERT_EQ(mg__handle_valid(NULL, MG__HANDLE_COMM), 0);
  ASSERT_EQ(mg__handle_valid(&never, MG__HANDLE_COMM), 0);
  for (int i = 0; i < STABLE; i++)
    ASSERT_EQ(mg__handle_register(&stable[i], i % 2 ? MG__HANDLE_COMM : MG__HANDLE_STREAM), MG_OK);
  ASSERT_EQ(mg__handle_register(&never, MG__HANDLE_WORLD), MG_OK);
  ASSERT_EQ(mg__handle_valid(&never, MG__HANDLE_WORLD), 1);
  ASSERT_EQ(mg__handle_valid(&never, MG__HANDLE_COMM), 0);
  ASSERT_EQ(mg__handle_take(&never, MG__HANDLE_COMM), 0); /* another kind: not taken */
  ASSERT_EQ(mg__handle_take(&never, MG__HANDLE_WORLD), 1);
  ASSERT_EQ(mg__handle_take(&never, MG__HANDLE_WORLD), 0); /* of two takes, one gets it */
  ASSERT_EQ(mg__handle_valid(&never, MG__HANDLE_WORLD), 0);
  for (int i = 0; i < STABLE; i++)
    ASSERT_EQ(mg__handle_valid(&stable[i], i % 2 ? MG__HANDLE_COMM : MG__HANDLE_STREAM), 1);

  /* Readers against a writer: each round registers BURST handles (the table grows in the first
   * rounds), checks them, then removes them (tombstones, until a growth clears them). */
  pthread_t th[READERS];
  for (int i = 0; i < READERS; i++) ASSERT_EQ(pthread_create(&th[i], NULL, reader, (void *)(intptr_t)i), 0);
  for (int r = 0; r < ROUNDS; r++) {
    char *h = transient[r];
    for (int i = 0; i < BURST; i++)
      ASSERT_EQ(mg__handle_register(&h[i], MG__HANDLE_REQUEST), MG_OK);
    for (int i = 0; i < BURST; i++) ASSERT_EQ(mg__handle_valid(&h[i], MG__HANDLE_REQUEST), 1);
    for (int i = 0; i < BURST; i++) ASSERT_EQ(mg__handle_take(&h[i], MG__HANDLE_REQUEST), 1);
    for (int i = 0; i < BURST; i++) ASSERT_EQ(mg__handle_valid(&h[i], MG__HANDLE_REQUEST), 0);
  }
  atomic_store(&done, 1);
  for (int i = 0; i < READERS; i++) ASSERT_EQ(pthread_join(th[i], NULL), 0);
  const long nwrong = atomic_load(&wrong), nlookups = atomic_load(&lookups);
  ASSERT_EQ(nwrong, 0);
  ASSERT_GT(nlookups, 0);
  printf("%ld lookups by %d readers during %d rounds of %d registrations and removals\n",
         nlookups, READERS, ROUNDS, BURST);
  /* The table follows the live handles (at most 64 + BURST + 1 here, which 2048 slots hold at a
   * quarter full), not the 60,000 registrations made. */
  printf("table: %zu slots\n", mg__handle_capacity());
  ASSERT_LE(mg__handle_capacity(), 2048);
  return 0;
}
