/*
 * boot_store_load.c -- the store under load: 16 clients, each on its own connection and thread,
 * make 1,000 operations each (set, get, add, compare-and-set, check, in turn), and every result
 * is checked: its own keys read back what it wrote, the shared counter's sums are distinct and
 * end at the exact total, every compare-and-set swaps. Bounded time; prints operations per
 * second.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "base/clock.h"
#include "test.h"

#define TOKEN "load-test-token"
#define CLIENTS 16
#define OPS 1000
#define CYCLE 5 /* operations per round of each client */

static char addr[128];
static atomic_int sums_seen[CLIENTS * (OPS / CYCLE) + 1]; /* each counter value seen once */

static void *client_main(void *arg) {
  int id = (int)(intptr_t)arg;
  mg_store_t *c;
  ASSERT_OK(mg_store_connect(addr, TOKEN, 30, &c));
  char key[64], val[64], prev[64], buf[64];
  size_t len;
  prev[0] = '\0';
  for (int round = 0; round < OPS / CYCLE; round++) {
    snprintf(key, sizeof key, "client/%d/key/%d", id, round % 7);
    snprintf(val, sizeof val, "value %d of client %d", round, id);
    /* 1: set */
    ASSERT_OK(mg_store_set(c, key, val, strlen(val), 0));
    /* 2: get reads back exactly what this client wrote (nobody else writes its keys) */
    ASSERT_OK(mg_store_get(c, key, buf, sizeof buf, &len, 0));
    ASSERT_EQ(len, strlen(val));
    ASSERT(memcmp(buf, val, len) == 0);
    /* 3: add to the shared counter: every sum is handed out once */
    int64_t sum = 0;
    ASSERT_OK(mg_store_add(c, "shared/counter", 1, &sum, 0));
    ASSERT(sum >= 1 && sum <= CLIENTS * (OPS / CYCLE));
    ASSERT_EQ(atomic_fetch_add(&sums_seen[sum], 1), 0);
    /* 4: compare-and-set this client's chain from its previous value to the new one */
    char chain[48];
    snprintf(chain, sizeof chain, "client/%d/chain", id);
    int swapped = -1;
    ASSERT_OK(mg_store_compare_set(c, chain, round == 0 ? NULL : prev, strlen(prev), val,
                                   strlen(val), &swapped, 0));
    ASSERT_EQ(swapped, 1);
    snprintf(prev, sizeof prev, "%s", val);
    /* 5: check: the chain key exists from round 0 on */
    int exists = -1;
    ASSERT_OK(mg_store_check(c, chain, &exists, 0));
    ASSERT_EQ(exists, 1);
  }
  ASSERT_OK(mg_store_close(c));
  return NULL;
}

int main(void) {
  mg_store_t *s;
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 30, &s));
  ASSERT_OK(mg_store_address(s, addr, sizeof addr));
  pthread_t t[CLIENTS];
  double t0 = mg__now();
  for (int i = 0; i < CLIENTS; i++)
    ASSERT_EQ(pthread_create(&t[i], NULL, client_main, (void *)(intptr_t)i), 0);
  for (int i = 0; i < CLIENTS; i++) ASSERT_EQ(pthread_join(t[i], NULL), 0);
  double took = mg__now() - t0;
  /* the counter ends at the exact total, and every value in between was handed out once */
  char buf[32];
  size_t len;
  ASSERT_OK(mg_store_get(s, "shared/counter", buf, sizeof buf - 1, &len, 0));
  buf[len] = '\0';
  ASSERT_EQ(atoll(buf), CLIENTS * (OPS / CYCLE));
  for (int v = 1; v <= CLIENTS * (OPS / CYCLE); v++) ASSERT_EQ(atomic_load(&sums_seen[v]), 1);
  /* each chain holds its client's last value */
  for (int i = 0; i < CLIENTS; i++) {
    char key[48], want[64];
    snprintf(key, sizeof key, "client/%d/chain", i);
    snprintf(want, sizeof want, "value %d of client %d", OPS / CYCLE - 1, i);
    char got[64];
    ASSERT_OK(mg_store_get(s, key, got, sizeof got - 1, &len, 0));
    got[len] = '\0';
    ASSERT_STR_EQ(got, want);
  }
  ASSERT_OK(mg_store_close(s));
  double ops = (double)CLIENTS * OPS;
  printf("boot_store_load: %d clients x %d operations in %.3f s: %.0f operations/s\n", CLIENTS, OPS,
         took, ops / took);
  ASSERT_LT_F(took, 60.0);
  return 0;
}
