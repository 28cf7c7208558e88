/*
 * progress.c -- each rank's progress published through the job's store, and the other ranks'
 * read back, for communicators of mg_comm_init_env whose backend shares progress only inside a
 * process (NCCL). Contract in progress.h.
 *
 * Divisions: the value and its key; the registry and the thread's life; one member's pass; the
 * thread; the reader.
 *
 * One thread per process ("mg-progress") serves every member. Each pass (every interval, the
 * smallest interval_ms of the members) it reads each member's own progress through own(), and:
 *  - publishes it when it changed since the last publication: one `set` of
 *    "mg/progress/<tag, 16 hex digits>/<rank>" (a 48-byte value, below). The first pass always
 *    publishes, so that a rank that enqueued nothing yet reads "has not enqueued any".
 *    The value also says whether the rank stopped (own() reads its abort flag), so that ranks of
 *    other processes learn a stop that NCCL tells nobody: mg__bprog_wake begins a pass at once
 *    (an abort's interrupt calls it), and a member that leaves stopped has the stop published
 *    and its key kept rather than deleted;
 *  - while it did not change during the last interval (the rank waits, or is idle: the only time
 *    a timeout message can be written), reads the other ranks' keys into the member's cache,
 *    max(1, 128 / nranks) keys per pass, round robin. The store thus serves at most about 128
 *    reads per interval for the whole job, whatever its size: 1,280 a second at the default
 *    100 ms. A communicator of 8 ranks is read entirely every interval; one of 1,024 ranks every
 *    1,023 intervals (102 s). A busy rank (progress moving) reads nothing and writes one small
 *    value per interval. A key not seen yet is probed with `check` (one more round trip, until
 *    it appears) so that an absent key is not an error each time.
 * Each member has its own connection to the store, made by the thread (never by join), so that a
 * store that went away stops that member only, and the thread never shares a handle with a
 * caller of mg_comm_init_env (whose gets wait long).
 *
 * Never a hang: every store call has a short deadline (connect 2 s, set, check and delete 0.5 s,
 * get 2 ms for the key to exist plus the client's 0.1 s for the server to answer). A failed connect,
 * set or a read that finds the server gone (rank 0 exited) ends the member's publishing and
 * reading, logged once at INFO; a read that times out only leaves that peer's cache as it was.
 * The operations of the communicator never wait for this thread: own() and mg__bprog_peer are
 * copies under leaf locks.
 *
 * Lock order: mg__bp.life (join and leave: starting and joining the thread) before mg__bp.lock
 * (the member list, `gone`, `stop`, and own() calls); a member's cache_lock is a leaf. No lock
 * is held across a store call, and the thread never takes mg__bp.life (leave joins it under
 * that lock).
 */
#include "boot/progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "boot/net.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"

#define MG__BP_CONNECT_S 2.0 /* connecting (the client retries a refused connection) */
#define MG__BP_CALL_S 0.5    /* set and delete */
#define MG__BP_GET_S 0.002   /* how long a get waits for a key that is not there */
#define MG__BP_READS 128     /* keys read per interval, over every rank of the job */

/* ---- the value and its key ---------------------------------------------------------------- */

/* "mgpr", version 2, enqueued1, completed1, count (u64), kind, dtype, root (i32), stopped (u32:
 * 0, or the MG__STOP_* the rank stopped with), little-endian so that every build reads the same
 * bytes. */
#define MG__BP_VALUE_BYTES 48
#define MG__BP_VERSION 2

static void mg__bp_put(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t mg__bp_get(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void mg__bp_encode(unsigned char *b, const mg__progress_t *p, int stopped) {
  memcpy(b, "mgpr", 4);
  mg__bp_put(b + 4, MG__BP_VERSION, 4);
  mg__bp_put(b + 8, p->enqueued1, 8);
  mg__bp_put(b + 16, p->completed1, 8);
  mg__bp_put(b + 24, p->count, 8);
  mg__bp_put(b + 32, (uint32_t)p->kind, 4);
  mg__bp_put(b + 36, (uint32_t)p->dtype, 4);
  mg__bp_put(b + 40, (uint32_t)p->root, 4);
  mg__bp_put(b + 44, (uint32_t)stopped, 4);
}

/* 1 when b is a value of this version (else the peer's key is ignored, as if absent). */
static int mg__bp_decode(const unsigned char *b, size_t len, mg__progress_t *p, int *stopped) {
  if (len != MG__BP_VALUE_BYTES || memcmp(b, "mgpr", 4) != 0 ||
      mg__bp_get(b + 4, 4) != MG__BP_VERSION)
    return 0;
  uint32_t kind = (uint32_t)mg__bp_get(b + 32, 4);
  if (kind >= MG_OPK_COUNT) return 0;
  p->enqueued1 = mg__bp_get(b + 8, 8);
  p->completed1 = mg__bp_get(b + 16, 8);
  p->count = mg__bp_get(b + 24, 8);
  p->kind = (mg__opkind_t)kind;
  p->dtype = (mg_dtype_t)(int32_t)(uint32_t)mg__bp_get(b + 36, 4);
  p->root = (int)(int32_t)(uint32_t)mg__bp_get(b + 40, 4);
  *stopped = (int)(int32_t)(uint32_t)mg__bp_get(b + 44, 4);
  return 1;
}

static int mg__bp_same(const mg__progress_t *a, const mg__progress_t *b) {
  return a->enqueued1 == b->enqueued1 && a->completed1 == b->completed1 && a->kind == b->kind &&
         a->dtype == b->dtype && a->count == b->count && a->root == b->root;
}

/* ---- the registry and the thread's life --------------------------------------------------- */

struct mg__bprog {
  /* Set by join, then read-only. */
  char address[MG__NET_HOST_MAX + 16];
  char token[MG_STORE_TOKEN_MAX + 1];
  uint64_t tag;
  int rank, nranks;
  int interval_ms;
  mg__bprog_own_t own;
  void *ctx;
  /* Under mg__bp.lock. */
  struct mg__bprog *next;
  int gone;                   /* left: dispose of it on the next pass */
  int cur_ok;                 /* own() answered for this pass */
  mg__progress_t cur;         /* what own() answered */
  int cur_stopped;            /* and whether the rank stopped (MG__STOP_*, 0) */
  int fin_ok, fin_stopped;    /* own()'s last answer, read by leave: a stopped rank's key is */
  mg__progress_t fin;         /* then published with it and kept, not deleted */
  /* The thread's only. */
  int gone_seen;              /* the pass's copy of gone (0 for members that joined since) */
  mg_store_t *store;          /* its connection; NULL before the first pass and after failure */
  int failed;                 /* the store failed once: no more calls */
  int published;              /* last_pub holds what the store has */
  int still;                  /* passes since its progress last changed */
  int next_peer;              /* the next peer to read, round robin */
  unsigned char *probe;       /* [nranks]: 1 while r's key was not seen: `check` before `get`,
                                 so that an absent key is not an error (logged at INFO) */
  mg__progress_t last_pub;
  int last_pub_stopped;
  /* The cache: under cache_lock (a leaf). */
  pthread_mutex_t cache_lock;
  unsigned char *known;       /* [nranks]: peers[r] holds what r published */
  mg__progress_t *peers;      /* [nranks] */
  int stop_rank, stop_how;    /* the lowest peer read as stopped (-1: none) and its MG__STOP_*:
                                 a stop is final, so it is kept (O(1) for mg__bprog_stopped) */
};

static struct {
  pthread_mutex_t life;       /* serialises join and leave around starting and joining */
  pthread_mutex_t lock;       /* the list and the fields marked so above */
  pthread_cond_t cv;          /* wakes the thread for stop (CLOCK_MONOTONIC) */
  pthread_once_t once;
  mg__bprog_t *head;
  int live;                   /* members not gone */
  int running;                /* the thread exists (under life) */
  int wake;                   /* mg__bprog_wake: begin the next pass now (under lock) */
  atomic_int stop;
  pthread_t th;
} mg__bp = {.life = PTHREAD_MUTEX_INITIALIZER, .lock = PTHREAD_MUTEX_INITIALIZER,
            .once = PTHREAD_ONCE_INIT};

static void mg__bp_init_cv(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  (void)pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* mg__now's clock; fails on no Linux */
  pthread_cond_init(&mg__bp.cv, &a);
  pthread_condattr_destroy(&a);
}

static void *mg__bp_main(void *arg);

mg_status_t mg__bprog_join(const char *address, const char *token, uint64_t tag, int rank,
                           int nranks, int interval_ms, mg__bprog_own_t own, void *ctx,
                           mg__bprog_t **out) {
  if (strlen(address) >= sizeof((mg__bprog_t *)0)->address ||
      strlen(token) >= sizeof((mg__bprog_t *)0)->token)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "progress: store address or token too long");
  mg__bprog_t *p = calloc(1, sizeof *p);
  if (p != NULL) {
    p->known = calloc((size_t)nranks, 1);
    p->peers = calloc((size_t)nranks, sizeof *p->peers);
    p->probe = malloc((size_t)nranks);
  }
  if (p == NULL || p->known == NULL || p->peers == NULL || p->probe == NULL) {
    if (p != NULL) {
      free(p->known);
      free(p->peers);
      free(p->probe);
      free(p);
    }
    return mg__error(MG_ERR_OUT_OF_MEMORY, "progress: no memory for a communicator of %d ranks",
                     nranks);
  }
  snprintf(p->address, sizeof p->address, "%s", address);
  snprintf(p->token, sizeof p->token, "%s", token);
  p->tag = tag;
  p->rank = rank;
  p->nranks = nranks;
  p->interval_ms = interval_ms > 0 ? interval_ms : 1;
  p->own = own;
  p->ctx = ctx;
  p->next_peer = (rank + 1) % nranks;
  p->stop_rank = -1;
  memset(p->probe, 1, (size_t)nranks);
  pthread_mutex_init(&p->cache_lock, NULL);
  pthread_once(&mg__bp.once, mg__bp_init_cv);

  pthread_mutex_lock(&mg__bp.life);
  pthread_mutex_lock(&mg__bp.lock);
  p->next = mg__bp.head;
  mg__bp.head = p;
  mg__bp.live++;
  pthread_mutex_unlock(&mg__bp.lock);
  if (!mg__bp.running) {
    atomic_store(&mg__bp.stop, 0);
    if (pthread_create(&mg__bp.th, NULL, mg__bp_main, NULL) == 0) {
      mg__bp.running = 1;
      (void)pthread_setname_np(mg__bp.th, "mg-progress"); /* for debuggers and ps only */
    } else {
      /* The member stays listed and unread: its peers stay "unknown", as without a store. */
      MG_INFO(MG_SUBSYS_BOOT, "progress: cannot start the mg-progress thread; rank %d's "
              "progress is not published", rank);
    }
  }
  pthread_mutex_unlock(&mg__bp.life);
  *out = p;
  return MG_OK;
}

static void mg__bp_free(mg__bprog_t *p) {
  pthread_mutex_destroy(&p->cache_lock);
  free(p->known);
  free(p->peers);
  free(p->probe);
  free(p);
}

void mg__bprog_wake(void) {
  pthread_mutex_lock(&mg__bp.lock);
  mg__bp.wake = 1;
  pthread_cond_signal(&mg__bp.cv);
  pthread_mutex_unlock(&mg__bp.lock);
}

void mg__bprog_leave(mg__bprog_t *p) {
  if (p == NULL) return;
  pthread_mutex_lock(&mg__bp.life);
  pthread_mutex_lock(&mg__bp.lock);
  /* The rank's last word: when it stopped, the thread publishes that and keeps its key. */
  p->fin_ok = p->own(p->ctx, &p->fin, &p->fin_stopped) == MG_OK;
  p->gone = 1; /* own() is called only under this lock, for members not gone */
  int last = --mg__bp.live == 0;
  if (last) {
    atomic_store(&mg__bp.stop, 1);
    pthread_cond_signal(&mg__bp.cv);
  }
  pthread_mutex_unlock(&mg__bp.lock);
  if (last && mg__bp.running) {
    pthread_join(mg__bp.th, NULL); /* bounded: the thread's store calls are */
    mg__bp.running = 0;
  }
  if (last && !mg__bp.running) { /* no thread ever ran (it could not start): free here */
    pthread_mutex_lock(&mg__bp.lock);
    for (mg__bprog_t *q = mg__bp.head, *n; q != NULL; q = n) {
      n = q->next;
      mg__bp_free(q);
    }
    mg__bp.head = NULL;
    pthread_mutex_unlock(&mg__bp.lock);
  }
  pthread_mutex_unlock(&mg__bp.life);
}

/* ---- one member's pass (the thread, no lock held) ----------------------------------------- */

static void mg__bp_key(const mg__bprog_t *p, int r, char *key, size_t len) {
  snprintf(key, len, "mg/progress/%016llx/%d", (unsigned long long)p->tag, r);
}

/* The store failed for p: say so once and make no more calls for it. */
static void mg__bp_fail(mg__bprog_t *p, const char *what) {
  MG_INFO(MG_SUBSYS_BOOT, "progress: rank %d of communicator %016llx stops publishing and reading "
          "progress through the store %s (%s: %s); timeout messages will call the ranks of other "
          "processes unknown", p->rank, (unsigned long long)p->tag, p->address, what,
          mg_last_error());
  p->failed = 1;
  mg_store_close(p->store); /* our handle (or NULL): its close cannot fail */
  p->store = NULL;
}

static void mg__bp_read_peers(mg__bprog_t *p) {
  int budget = MG__BP_READS / p->nranks;
  if (budget < 1) budget = 1;
  if (budget > p->nranks - 1) budget = p->nranks - 1;
  for (int i = 0; i < budget && !atomic_load(&mg__bp.stop); i++) {
    int r = p->next_peer;
    p->next_peer = (r + 1) % p->nranks;
    if (r == p->rank) {
      r = p->next_peer;
      p->next_peer = (r + 1) % p->nranks;
    }
    char key[64];
    mg__bp_key(p, r, key, sizeof key);
    unsigned char b[MG__BP_VALUE_BYTES];
    size_t len = 0;
    int exists = 1;
    mg_status_t st = MG_OK;
    if (p->probe[r]) st = mg_store_check(p->store, key, &exists, MG__BP_CALL_S);
    if (st == MG_OK && !exists) continue; /* r published nothing yet, or left */
    if (st == MG_OK) st = mg_store_get(p->store, key, b, sizeof b, &len, MG__BP_GET_S);
    p->probe[r] = st != MG_OK;
    mg__progress_t v;
    int stopped = 0;
    if (st == MG_OK && mg__bp_decode(b, len, &v, &stopped)) {
      pthread_mutex_lock(&p->cache_lock);
      p->peers[r] = v;
      p->known[r] = 1;
      if (stopped != 0 && (p->stop_rank < 0 || r < p->stop_rank)) {
        p->stop_rank = r;
        p->stop_how = stopped;
      }
      pthread_mutex_unlock(&p->cache_lock);
    } else if (st == MG_ERR_TIMED_OUT || st == MG_ERR_INVALID_ARGUMENT || st == MG_OK) {
      /* Absent (r published nothing yet, or left), or not ours (longer, another version): the
       * cache keeps what it had. */
    } else {
      mg__bp_fail(p, "reading a peer");
      return;
    }
  }
}

/* Publishes v (and stopped) as p's value when the store does not have it yet: 1 when it was
 * published, 0 when there was nothing new, -1 when the store failed (p failed). */
static int mg__bp_publish(mg__bprog_t *p, const mg__progress_t *v, int stopped) {
  if (p->published && stopped == p->last_pub_stopped && mg__bp_same(v, &p->last_pub)) return 0;
  char key[64];
  unsigned char b[MG__BP_VALUE_BYTES];
  mg__bp_key(p, p->rank, key, sizeof key);
  mg__bp_encode(b, v, stopped);
  if (mg_store_set(p->store, key, b, sizeof b, MG__BP_CALL_S) < 0) {
    mg__bp_fail(p, "publishing");
    return -1;
  }
  p->last_pub = *v;
  p->last_pub_stopped = stopped;
  return 1;
}

static void mg__bp_pass(mg__bprog_t *p) {
  if (p->failed || atomic_load(&mg__bp.stop)) return;
  if (p->store == NULL &&
      mg_store_connect(p->address, p->token, MG__BP_CONNECT_S, &p->store) < 0) {
    p->store = NULL;
    mg__bp_fail(p, "connecting");
    return;
  }
  const int pub = p->cur_ok ? mg__bp_publish(p, &p->cur, p->cur_stopped) : 0;
  if (pub < 0) return;
  if (pub > 0) {
    p->still = p->published ? 0 : 1; /* after the first publication, read at once */
    p->published = 1;
  } else {
    p->still++;
  }
  if (p->still > 0 && p->nranks > 1) mg__bp_read_peers(p);
}

/* The member left: remove its key (so that the store does not grow with every communicator a
 * long job makes) and its connection. A rank that left stopped publishes that instead and keeps
 * its key, so that a peer still waiting for it learns it (one key per stopped rank stays). */
static void mg__bp_dispose(mg__bprog_t *p) {
  if (p->store == NULL) return;
  if (p->fin_ok && p->fin_stopped != 0) {
    if (mg__bp_publish(p, &p->fin, p->fin_stopped) < 0) return; /* p->store closed */
  } else if (p->published) {
    char key[64];
    mg__bp_key(p, p->rank, key, sizeof key);
    /* Best effort: a store that is gone has no key to remove. */
    (void)mg_store_delete(p->store, key, NULL, MG__BP_CALL_S);
  }
  mg_store_close(p->store); /* our handle: its close cannot fail */
  p->store = NULL;
}

/* ---- the thread ------------------------------------------------------------------------- */

static void *mg__bp_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mg__bp.lock);
  for (;;) {
    const int stopping = atomic_load(&mg__bp.stop);
    int interval_ms = 60000;
    for (mg__bprog_t *p = mg__bp.head; p != NULL; p = p->next) {
      p->gone_seen = p->gone;
      if (!p->gone) {
        p->cur_ok = p->own(p->ctx, &p->cur, &p->cur_stopped) == MG_OK;
        if (p->interval_ms < interval_ms) interval_ms = p->interval_ms;
      }
    }
    /* Members joined from now on are ahead of `first`: this pass does not touch them. join only
     * pushes at the head and only this thread unlinks, so the walk below is safe unlocked. */
    mg__bprog_t *first = mg__bp.head;
    pthread_mutex_unlock(&mg__bp.lock);
    for (mg__bprog_t *p = first; p != NULL; p = p->next) {
      if (p->gone_seen)
        mg__bp_dispose(p);
      else
        mg__bp_pass(p);
    }
    pthread_mutex_lock(&mg__bp.lock);
    for (mg__bprog_t **at = &mg__bp.head; *at != NULL;) {
      mg__bprog_t *p = *at;
      if (p->gone_seen) {
        *at = p->next;
        mg__bp_free(p);
      } else {
        at = &p->next;
      }
    }
    if (stopping && mg__bp.head == NULL) break;
    if (!atomic_load(&mg__bp.stop) && !mg__bp.wake) {
      double until = mg__now() + interval_ms / 1000.0;
      struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
      /* A timeout, a stop or a spurious wake-up all begin the next pass. */
      (void)pthread_cond_timedwait(&mg__bp.cv, &mg__bp.lock, &ts);
    }
    mg__bp.wake = 0;
  }
  pthread_mutex_unlock(&mg__bp.lock);
  return NULL;
}

/* ---- the reader ------------------------------------------------------------------------- */

mg_status_t mg__bprog_peer(mg__bprog_t *p, int r, mg__progress_t *out) {
  if (p == NULL || r < 0 || r >= p->nranks) return MG_ERR_NOT_SUPPORTED;
  pthread_mutex_lock(&p->cache_lock);
  const int known = p->known[r];
  if (known) *out = p->peers[r];
  pthread_mutex_unlock(&p->cache_lock);
  return known ? MG_OK : MG_ERR_NOT_SUPPORTED;
}

int mg__bprog_stopped(mg__bprog_t *p, int *rank, int *how) {
  if (p == NULL) return 0;
  pthread_mutex_lock(&p->cache_lock);
  const int who = p->stop_rank;
  if (who >= 0) {
    *rank = who;
    *how = p->stop_how;
  }
  pthread_mutex_unlock(&p->cache_lock);
  return who >= 0;
}
