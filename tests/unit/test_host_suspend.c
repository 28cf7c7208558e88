/*
 * test_host_suspend.c -- the host backend's suspend, resume, memory statistics, properties and
 * grow (issue 24), with thread ranks and process ranks, and their argument checks.
 *
 *   test_host_suspend threads|procs   suspend/stats/resume, then grow from 2 to 4 ranks
 *   test_host_suspend inflight        suspend refused while a message waits in a ring
 *   test_host_suspend args            every argument and state check, one thread
 *
 * The memory check is real: the resident pages of the rank's staging slots (mincore on the
 * backend's mapping), which an all_reduce through the slots fills and suspend must give back
 * (madvise(MADV_REMOVE)). The cmake entry keeps the single-copy path off, so the all_reduce goes
 * through the slots.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "test.h"

#define N0 2         /* ranks before grow */
#define N1 4         /* after */
#define BIG 262144   /* int64 elements of the all_reduce that fills the slots (2 MiB) */

/* What the ranks share: the ids, and a flag that says the grow id is there (threads and the
 * processes of a fork, through a shared mapping). */
typedef struct {
  mg_unique_id_t uid;
  mg_unique_id_t gid;
  atomic_int gid_ready;
} shared_t;
static shared_t *sh;

static mg_config_t host_cfg(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 30;
  return cfg;
}

/* A sum over comm's ranks, checked. */
static void check_sum(mg_comm_t *comm, int64_t value, int64_t want) {
  int64_t out = -1;
  ASSERT_OK(mg_all_reduce(&value, &out, 1, MG_INT64, MG_SUM, comm, NULL));
  ASSERT_EQ(out, want);
}

/* A large all_reduce of rank + i, checked: it runs through the staging slots. */
static void big_all_reduce(mg_comm_t *comm, int rank, int nranks) {
  int64_t *in = malloc(sizeof *in * BIG), *out = malloc(sizeof *out * BIG);
  ASSERT(in != NULL && out != NULL);
  for (int i = 0; i < BIG; i++) in[i] = rank + i;
  ASSERT_OK(mg_all_reduce(in, out, BIG, MG_INT64, MG_SUM, comm, NULL));
  const int64_t ranks = (int64_t)nranks * (nranks - 1) / 2;
  for (int i = 0; i < BIG; i += 997) ASSERT_EQ(out[i], ranks + (int64_t)nranks * i);
  free(in);
  free(out);
}

/* Bytes of this rank's staging slots that are resident (mincore): what suspend must give back.
 * Read from the backend's own mapping, so that the check does not trust its statistics. */
static size_t resident_slot_bytes(mg_comm_t *comm) {
  const mg__hshm_t *s = &mg__hcomm(comm)->shm;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t len = 2 * (size_t)s->hdr->slot_bytes / page * page;
  unsigned char *p = mg__hshm_slot(s, s->me, 0);
  ASSERT_EQ((uintptr_t)p % page, 0);
  unsigned char *vec = malloc(len / page);
  ASSERT(vec != NULL);
  ASSERT_EQ(mincore(p, len, vec), 0);
  size_t n = 0;
  for (size_t i = 0; i < len / page; i++) n += (vec[i] & 1) ? page : 0;
  free(vec);
  return n;
}

static void suspend_cycle(mg_comm_t *comm, int r) {
  mg_comm_mem_stats_t ms;
  big_all_reduce(comm, r, N0);
  ASSERT_OK(mg_comm_mem_stats(comm, &ms));
  const size_t resident = resident_slot_bytes(comm);
  printf("rank %d before suspend: suspendable %llu, persistent %llu, total %llu; slots resident "
         "%zu\n", r, (unsigned long long)ms.suspendable_bytes,
         (unsigned long long)ms.persistent_bytes, (unsigned long long)ms.total_bytes, resident);
  ASSERT_GT(resident, 0); /* the all_reduce went through the slots */
  ASSERT_GE(ms.suspendable_bytes, resident);
  ASSERT_GT(ms.persistent_bytes, 0);
  ASSERT_EQ(ms.total_bytes, ms.suspendable_bytes + ms.persistent_bytes);
  ASSERT_EQ(ms.suspended, 0);
  ASSERT_EQ(ms.device, -1);

  ASSERT_OK(mg_comm_suspend(comm, MG_SUSPEND_MEM));
  const uint64_t suspendable = ms.suspendable_bytes;
  ASSERT_OK(mg_comm_mem_stats(comm, &ms));
  printf("rank %d suspended: slots resident %zu\n", r, resident_slot_bytes(comm));
  ASSERT_EQ(resident_slot_bytes(comm), 0); /* the pages are gone */
  ASSERT_EQ(ms.suspendable_bytes, suspendable); /* what suspend releases, as NCCL counts it */
  ASSERT_EQ(ms.suspended, 1);
  /* Suspended: operations, split and a second suspend are refused, saying why. */
  int64_t one = 1, out = 0;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_all_reduce(&one, &out, 1, MG_INT64, MG_SUM, comm, NULL));
  ASSERT_CONTAINS(mg_last_error(), "suspended");
  mg_comm_t *child = NULL;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_split(comm, 0, r, NULL, &child));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_suspend(comm, MG_SUSPEND_MEM));
  mg_comm_state_t state;
  ASSERT_OK(mg_comm_state(comm, &state)); /* queries work */
  ASSERT_EQ(state, MG_COMM_READY);

  ASSERT_OK(mg_comm_resume(comm));
  ASSERT_OK(mg_comm_mem_stats(comm, &ms));
  ASSERT_EQ(ms.suspended, 0);
  big_all_reduce(comm, r, N0); /* correct after resume */
  ASSERT_GT(resident_slot_bytes(comm), 0); /* the slots were made again by use */
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_resume(comm));
  ASSERT_CONTAINS(mg_last_error(), "not suspended");
}

static void check_properties(mg_comm_t *comm, int rank, int nranks) {
  mg_comm_properties_t p;
  ASSERT_OK(mg_comm_properties(comm, &p));
  ASSERT_EQ(p.rank, rank);
  ASSERT_EQ(p.nranks, nranks);
  ASSERT_EQ(p.device, -1);
  ASSERT_EQ(p.nvml_device, -1);
  ASSERT_EQ(p.device_api, 0);
  ASSERT_EQ(p.host_rma, 0);
  ASSERT_EQ(p.nccl_version, 0);
}

/* The ranks of the old communicator (r < N0) and the new ones grow to N1 ranks; the old
 * communicator still works afterwards. */
static void grow(mg_comm_t *old, int r) {
  mg_config_t cfg = host_cfg();
  mg_comm_t *big = NULL;
  if (old != NULL) {
    if (r == 0) {
      ASSERT_OK(mg_comm_grow_id(old, &sh->gid));
      atomic_store(&sh->gid_ready, 1);
    } else {
      mg_unique_id_t x;
      ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_grow_id(old, &x)); /* rank 0 makes it */
    }
  }
  for (int i = 0; i < 30000 && !atomic_load(&sh->gid_ready); i++) usleep(1000);
  ASSERT(atomic_load(&sh->gid_ready));
  if (old != NULL)
    ASSERT_OK(mg_comm_grow(old, N1, &sh->gid, MG_GROW_EXISTING, NULL, &big));
  else
    ASSERT_OK(mg_comm_grow(NULL, N1, &sh->gid, r, &cfg, &big));
  int v;
  ASSERT_OK(mg_comm_rank(big, &v));
  ASSERT_EQ(v, r);
  ASSERT_OK(mg_comm_size(big, &v));
  ASSERT_EQ(v, N1);
  check_sum(big, r, N1 * (N1 - 1) / 2);
  big_all_reduce(big, r, N1);
  check_properties(big, r, N1);
  if (old != NULL) check_sum(old, 10 + r, 10 * N0 + N0 * (N0 - 1) / 2);
  ASSERT_OK(mg_comm_destroy(big));
}

static void rank_main(int r) {
  mg_comm_t *comm = NULL;
  if (r < N0) {
    mg_config_t cfg = host_cfg();
    ASSERT_OK(mg_comm_init_rank(&cfg, N0, &sh->uid, r, &comm));
    check_properties(comm, r, N0);
    suspend_cycle(comm, r);
  }
  grow(comm, r);
  ASSERT_OK(mg_comm_destroy(comm));
}

static void *thread_main(void *arg) {
  rank_main((int)(intptr_t)arg);
  return NULL;
}

static int run_ranks(int threads) {
  if (threads) {
    pthread_t t[N1];
    for (int r = 0; r < N1; r++)
      ASSERT_EQ(pthread_create(&t[r], NULL, thread_main, (void *)(intptr_t)r), 0);
    for (int r = 0; r < N1; r++) pthread_join(t[r], NULL);
  } else {
    pid_t pids[N1];
    for (int r = 0; r < N1; r++) {
      pids[r] = fork();
      ASSERT(pids[r] >= 0);
      if (pids[r] == 0) {
        rank_main(r);
        _exit(0);
      }
    }
    test_wait_ranks(pids, N1);
  }
  printf("suspend, resume, statistics and grow, %s: ok\n", threads ? "threads" : "processes");
  return 0;
}

/* Rank 0 sends two messages that rank 1 has not received, 8 bytes (in the box) and 1000 (in the
 * ring, which suspend releases): neither rank may suspend until the ring's is received. Then a
 * message in the box alone, which suspend keeps (the control area stays): both suspend, and it
 * arrives after resume. */
static void *inflight_rank(void *arg) {
  const int r = (int)(intptr_t)arg;
  mg_config_t cfg = host_cfg();
  mg_comm_t *comm;
  ASSERT_OK(mg_comm_init_rank(&cfg, 2, &sh->uid, r, &comm));
  int64_t msg = 42, got = 0, big[125] = {0};
  if (r == 0) { /* both fit: the sends return */
    ASSERT_OK(mg_send(&msg, 1, MG_INT64, 1, comm, NULL));
    ASSERT_OK(mg_send(big, 125, MG_INT64, 1, comm, NULL));
  }
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_suspend(comm, MG_SUSPEND_MEM));
  ASSERT_CONTAINS(mg_last_error(), "in flight");
  if (r == 1) {
    ASSERT_OK(mg_recv(&got, 1, MG_INT64, 0, comm, NULL));
    ASSERT_EQ(got, 42);
    ASSERT_OK(mg_recv(big, 125, MG_INT64, 0, comm, NULL));
  }
  check_sum(comm, r, 1); /* rank 0 waits here until the messages were received */
  msg = 43;
  if (r == 0) ASSERT_OK(mg_send(&msg, 1, MG_INT64, 1, comm, NULL)); /* in the box */
  ASSERT_OK(mg_comm_suspend(comm, MG_SUSPEND_MEM));
  ASSERT_OK(mg_comm_resume(comm));
  if (r == 1) {
    ASSERT_OK(mg_recv(&got, 1, MG_INT64, 0, comm, NULL));
    ASSERT_EQ(got, 43);
  }
  check_sum(comm, r, 1);
  ASSERT_OK(mg_comm_suspend(comm, MG_SUSPEND_MEM));
  ASSERT_OK(mg_comm_resume(comm));
  check_sum(comm, r, 1);
  ASSERT_OK(mg_comm_destroy(comm));
  return NULL;
}

static int mode_inflight(void) {
  pthread_t t[2];
  for (int r = 0; r < 2; r++)
    ASSERT_EQ(pthread_create(&t[r], NULL, inflight_rank, (void *)(intptr_t)r), 0);
  for (int r = 0; r < 2; r++) pthread_join(t[r], NULL);
  printf("suspend with a message in flight: refused on both ranks, then ok\n");
  return 0;
}

static int mode_args(void) {
  mg_config_t cfg = host_cfg();
  cfg.timeout_s = 2;
  mg_comm_t *comm, *out = NULL;
  ASSERT_OK(mg_comm_init_rank(&cfg, 1, &sh->uid, 0, &comm));
  mg_comm_mem_stats_t ms;
  mg_comm_properties_t p;
  mg_unique_id_t id;
  /* Handles. */
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_suspend(NULL, MG_SUSPEND_MEM));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_resume(NULL));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_mem_stats(NULL, &ms));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_properties(NULL, &p));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_grow_id(NULL, &id));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_suspend((mg_comm_t *)&cfg, MG_SUSPEND_MEM));
  /* Outputs and flags. */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_mem_stats(comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_properties(comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow_id(comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_suspend(comm, 0));
  ASSERT_CONTAINS(mg_last_error(), "MG_SUSPEND_MEM");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_suspend(comm, MG_SUSPEND_MEM | 0x10));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_resume(comm));
  /* Grow's arguments, on the old communicator's side and on a new rank's. */
  ASSERT_OK(mg_comm_grow_id(comm, &id));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(comm, 2, &id, MG_GROW_EXISTING, NULL, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(comm, 1, &id, MG_GROW_EXISTING, NULL, &out));
  ASSERT_CONTAINS(mg_last_error(), "not larger");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(comm, 2, &id, 0, NULL, &out));
  ASSERT_CONTAINS(mg_last_error(), "MG_GROW_EXISTING");
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(comm, 2, NULL, MG_GROW_EXISTING, NULL, &out));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(NULL, 2, NULL, 1, &cfg, &out));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(NULL, 2, &id, 2, &cfg, &out));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(NULL, 2, &id, -1, &cfg, &out));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_comm_grow(NULL, 1, &id, 0, &cfg, &out));
  mg_config_t bad = cfg;
  bad.version = 99;
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_grow(NULL, 2, &id, 1, &bad, &out));
  ASSERT(out == NULL);
  /* A new rank that nobody meets: bounded by its deadline, nothing left behind. */
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_comm_grow(NULL, 2, &id, 1, &cfg, &out));
  ASSERT(out == NULL);
  /* One-sided transfers and window pointers: the host backend has no windows; the arguments
   * are checked first. */
  int64_t x = 1;
  void *ptr = NULL;
  mg_signal_wait_t w = {0, 0, 1};
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_signal(0, 3, comm, NULL));
  ASSERT_CONTAINS(mg_last_error(), "one-sided");
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_wait_signal(&w, 1, comm, NULL));
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_put_signal(&x, 1, MG_INT64, 0, NULL, 0, 0, comm, NULL));
  ASSERT_STATUS(MG_ERR_NOT_SUPPORTED, mg_reg_user_ptr(comm, NULL, &ptr));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_signal(1, 3, comm, NULL)); /* one rank: peer 0 */
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_signal(0, -1, comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_wait_signal(NULL, 1, comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_wait_signal(&w, 0, comm, NULL));
  w.count = 0;
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_wait_signal(&w, 1, comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT,
                mg_put_signal(&x, 1, (mg_dtype_t)99, 0, NULL, 0, 0, comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_put_signal(NULL, 1, MG_INT64, 0, NULL, 0, 0, comm, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_reg_peer_ptr(comm, NULL, 0, 0, NULL));
  ASSERT_STATUS(MG_ERR_INVALID_ARGUMENT, mg_reg_lsa_ptr(comm, NULL, 2, 0, &ptr));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_signal(0, 3, NULL, NULL));
  /* Suspended: statistics and destroy work; properties and grow wait for resume. */
  ASSERT_OK(mg_comm_suspend(comm, MG_SUSPEND_MEM));
  ASSERT_OK(mg_comm_mem_stats(comm, &ms));
  ASSERT_EQ(ms.suspended, 1);
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_properties(comm, &p));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_grow_id(comm, &id));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_finalize(comm));
  ASSERT_OK(mg_comm_resume(comm));
  /* After abort only destroy and queries. */
  ASSERT_OK(mg_comm_abort(comm));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_suspend(comm, MG_SUSPEND_MEM));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_resume(comm));
  ASSERT_STATUS(MG_ERR_INVALID_USAGE, mg_comm_mem_stats(comm, &ms));
  ASSERT_OK(mg_comm_destroy(comm));
  /* A suspended communicator may be destroyed. */
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &sh->uid));
  ASSERT_OK(mg_comm_init_rank(&cfg, 1, &sh->uid, 0, &comm));
  ASSERT_OK(mg_comm_suspend(comm, MG_SUSPEND_MEM));
  ASSERT_OK(mg_comm_destroy(comm));
  printf("argument and state checks: ok\n");
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "threads";
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT(sh != MAP_FAILED);
  atomic_init(&sh->gid_ready, 0);
  ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &sh->uid));
  if (strcmp(mode, "threads") == 0) return run_ranks(1);
  if (strcmp(mode, "procs") == 0) return run_ranks(0);
  if (strcmp(mode, "inflight") == 0) return mode_inflight();
  if (strcmp(mode, "args") == 0) return mode_args();
  FAIL("unknown mode %s", mode);
}
