/*
 * host_shm.c -- creating, attaching and leaving the host backend's shared-memory segment; the
 * futex that waiting ranks sleep on; telling whether a peer process is alive.
 *
 * Divisions: layout; attach and detach; waiting for every rank; futex; liveness; randomness.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host_shm.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "base/params.h"
#include "loader/fault.h"

#define MG__PAGE 4096u

static size_t mg__round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* ---- layout ---------------------------------------------------------------------------- */

typedef struct {
  size_t ranks, chans, vcounts, slots, rings, total;
} mg__layout_t;

static mg__layout_t mg__layout(int n, size_t slot_bytes, size_t chan_bytes) {
  mg__layout_t l;
  size_t nn = (size_t)n * (size_t)n;
  l.ranks = MG__PAGE;
  l.chans = l.ranks + mg__round_up((size_t)n * sizeof(mg__hshm_rank_t), MG__PAGE);
  l.vcounts = l.chans + mg__round_up(nn * sizeof(mg__hshm_chan_t), MG__PAGE);
  l.slots = l.vcounts + mg__round_up(4 * nn * sizeof(uint64_t), MG__PAGE);
  l.rings = l.slots + (size_t)n * 2 * slot_bytes;
  l.total = l.rings + nn * chan_bytes;
  return l;
}

static void mg__bind(mg__hshm_t *s) {
  const mg__hshm_header_t *h = (const mg__hshm_header_t *)s->base;
  mg__layout_t l = mg__layout(h->nranks, h->slot_bytes, h->chan_bytes);
  s->hdr = (mg__hshm_header_t *)s->base;
  s->ranks = (mg__hshm_rank_t *)(s->base + l.ranks);
  s->chans = (mg__hshm_chan_t *)(s->base + l.chans);
  s->vcounts = (_Atomic uint64_t *)(s->base + l.vcounts);
  s->slots = s->base + l.slots;
  s->rings = s->base + l.rings;
}

/* The staging slot and channel sizes and the small-message threshold this process would create a
 * segment with; the other ranks adopt the creator's. */
static void mg__sizes(int n, size_t *slot, size_t *chan, size_t *small_out, size_t *direct_out) {
  *direct_out = (size_t)mg__param_int(MG_PARAM_HOST_DIRECT_BYTES);
  size_t small = (size_t)mg__param_int(MG_PARAM_HOST_SMALL_BYTES);
  size_t sb = mg__round_up((size_t)mg__param_int(MG_PARAM_HOST_SLOT_BYTES), MG__PAGE);
  if (sb < small) sb = mg__round_up(small, MG__PAGE);
  /* Per-peer pieces (reduce_scatter, all_to_all) need room for 8 bytes per rank at least. */
  if (sb < mg__round_up((size_t)n * 64, MG__PAGE)) sb = mg__round_up((size_t)n * 64, MG__PAGE);
  *small_out = small;
  /* The channel rings grow with nranks^2: keep their total under 256 MiB of address space. */
  size_t cb = (size_t)mg__param_int(MG_PARAM_HOST_P2P_BYTES);
  size_t cap = ((size_t)256 << 20) / ((size_t)n * (size_t)n);
  if (cb > cap) cb = cap;
  cb = cb / MG__PAGE * MG__PAGE;
  if (cb < MG__PAGE) cb = MG__PAGE;
  *slot = sb;
  *chan = cb;
}

/* ---- attach and detach ----------------------------------------------------------------- */

/* A word peers read at init to learn whether they can reach this process's memory. */
static const uint64_t mg__probe_word = 0x6d67636f6d6d3f21ull;

/* The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), and its
 * state letter; 0 when the process does not exist. */
static uint64_t mg__proc_start(pid_t pid, char *state) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd); /* read-only file: nothing to flush, a close error changes nothing */
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may contain spaces and parentheses */
  if (p == NULL || p[1] != ' ') return 0;
  p += 2;
  if (state != NULL) *state = *p;
  for (int field = 3; field < 22 && *p; p++)
    if (*p == ' ') field++;
  return strtoull(p, NULL, 10);
}

static mg_status_t mg__check_abort(const atomic_int *aborting, const char *what) {
  if (aborting != NULL && atomic_load(aborting))
    return mg__error(MG_ERR_ABORTED, "%s: the communicator was aborted", what);
  return MG_OK;
}

static void mg__nap(void) {
  struct timespec ts = {0, 1000000}; /* 1 ms */
  nanosleep(&ts, NULL);              /* an early wake-up only shortens the nap */
}

mg_status_t mg__hshm_attach(mg__hshm_t *s, const char *name, int nranks, int me, double deadline,
                            const atomic_int *aborting) {
  memset(s, 0, sizeof *s);
  /* Test builds: "host.attach" fails the attach with the rule's code (MG_ERR_SYSTEM when it is
   * not a status), as a failing shm_open would. */
  int injected = MG_FAULT_POINT("host.attach");
  if (injected != 0)
    return mg__error(injected < 0 ? (mg_status_t)injected : MG_ERR_SYSTEM,
                     "attaching %s: injected failure (fault point host.attach)", name);
  if (nranks > MG__HDEC_MAX_RANKS)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "attaching %s: the host backend takes at most %d "
                     "ranks, not %d", name, MG__HDEC_MAX_RANKS, nranks);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->nranks = nranks;
  s->me = me;
  s->mypid = getpid();
  size_t slot_bytes, chan_bytes, small_bytes, direct_bytes;
  mg__sizes(nranks, &slot_bytes, &chan_bytes, &small_bytes, &direct_bytes);
  mg__layout_t l = mg__layout(nranks, slot_bytes, chan_bytes);
  mg_status_t st = MG_OK;
  int fd = -1;
  for (;;) {
    MG_CHECK(mg__check_abort(aborting, "attach"));
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) { /* we create it */
      if (ftruncate(fd, (off_t)l.total) != 0) {
        st = mg__error_errno(MG_ERR_SYSTEM, errno, "ftruncate(%s, %zu)", name, l.total);
        shm_unlink(name); /* best effort: the name must not outlive a failed creation */
        goto fail;
      }
      s->base = mmap(NULL, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (s->base == MAP_FAILED) {
        s->base = NULL;
        st = mg__error_errno(MG_ERR_SYSTEM, errno, "mmap of %zu bytes of %s", l.total, name);
        shm_unlink(name); /* best effort, as above */
        goto fail;
      }
      s->len = l.total;
      mg__hshm_header_t *h = (mg__hshm_header_t *)s->base;
      h->version = MG__HSHM_VERSION;
      h->nranks = nranks;
      h->slot_bytes = slot_bytes;
      h->small_bytes = small_bytes;
      h->direct_bytes = direct_bytes;
      h->chan_bytes = chan_bytes;
      h->seg_bytes = l.total;
      atomic_store_explicit(&h->magic, MG__HSHM_MAGIC, memory_order_release);
      break;
    }
    if (errno != EEXIST) {
      st = mg__error_errno(MG_ERR_SYSTEM, errno, "shm_open(%s)", name);
      goto fail;
    }
    fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
      if (errno == ENOENT) continue; /* unlinked in between: try to create it again */
      st = mg__error_errno(MG_ERR_SYSTEM, errno, "shm_open(%s)", name);
      goto fail;
    }
    struct stat sb;
    while (fstat(fd, &sb) == 0 && sb.st_size == 0) { /* the creator has not sized it yet */
      if (mg__now() > deadline) {
        st = mg__error(MG_ERR_TIMED_OUT, "segment %s was never initialised by its creator", name);
        goto fail;
      }
      MG_CHECK_GOTO(mg__check_abort(aborting, "attach"), st, fail);
      mg__nap();
    }
    if (sb.st_size < (off_t)MG__PAGE) {
      st = mg__error(MG_ERR_REMOTE, "segment %s has a size (%lld) no rank would give it", name,
                     (long long)sb.st_size);
      goto fail;
    }
    s->base = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s->base == MAP_FAILED) {
      s->base = NULL;
      st = mg__error_errno(MG_ERR_SYSTEM, errno, "mmap of %s", name);
      goto fail;
    }
    s->len = (size_t)sb.st_size;
    mg__hshm_header_t *h = (mg__hshm_header_t *)s->base;
    while (atomic_load_explicit(&h->magic, memory_order_acquire) != MG__HSHM_MAGIC) {
      if (mg__now() > deadline) {
        st = mg__error(MG_ERR_TIMED_OUT, "segment %s was never initialised by its creator", name);
        goto fail;
      }
      MG_CHECK_GOTO(mg__check_abort(aborting, "attach"), st, fail);
      mg__nap();
    }
    if (h->version != MG__HSHM_VERSION || h->seg_bytes != s->len) {
      st = mg__error(MG_ERR_REMOTE, "segment %s has version %u and size %llu; expected %u, %zu",
                     name, h->version, (unsigned long long)h->seg_bytes, MG__HSHM_VERSION, s->len);
      goto fail;
    }
    if (h->nranks != nranks) {
      st = mg__error(MG_ERR_REMOTE,
                     "the communicator was created by another rank for %d ranks; this rank (%d) "
                     "was given nranks %d",
                     h->nranks, me, nranks);
      goto fail;
    }
    break;
  }
  close(fd); /* the mapping keeps the segment; the descriptor is no longer needed */
  fd = -1;
  mg__bind(s);
  mg__hshm_rank_t *rb = &s->ranks[me];
  int expected = MG__HRANK_ABSENT;
  if (!atomic_compare_exchange_strong(&rb->state, &expected, MG__HRANK_ATTACHING)) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT,
                   "rank %d of this communicator is already taken (by pid %d): every rank must "
                   "pass a different rank", me, (int)atomic_load(&rb->pid));
    goto fail;
  }
  rb->starttime = mg__proc_start(s->mypid, NULL);
  atomic_store(&rb->probe_addr, (uint64_t)(uintptr_t)&mg__probe_word);
  atomic_store(&rb->cause, -1);
  atomic_store(&rb->pid, (int32_t)s->mypid);
  atomic_store(&rb->state, MG__HRANK_ATTACHED);
  uint32_t n = atomic_fetch_add(&s->hdr->attached, 1) + 1;
  if (n == (uint32_t)nranks) {
    /* Every rank has it mapped: the name is no longer needed. */
    if (shm_unlink(name) != 0)
      MG_INFO(MG_SUBSYS_INIT, "shm_unlink(%s): %s (already gone)", name, strerror(errno));
    s->unlinked = 1;
  }
  mg__hshm_wake(s);
  return MG_OK;
fail:
  if (fd >= 0) close(fd); /* error path: the status reports the real failure */
  if (s->base != NULL) munmap(s->base, s->len); /* error path: nothing else maps it here */
  s->base = NULL;
  return st;
}

void mg__hshm_detach(mg__hshm_t *s, int state) {
  if (s->base == NULL) return;
  if (state == MG__HRANK_FAILED) {
    mg__hshm_fail(s, s->me);
  } else {
    int attached = MG__HRANK_ATTACHED; /* a rank that failed stays failed */
    atomic_compare_exchange_strong(&s->ranks[s->me].state, &attached, state);
  }
  if (atomic_load(&s->hdr->attached) < (uint32_t)s->nranks && !s->unlinked) {
    /* Leaving before everyone came (failed or aborted init): do not leave the name behind. A
     * rank that comes later creates a fresh segment and times out there, naming the missing. */
    shm_unlink(s->name); /* ENOENT is fine: another rank removed it already */
  }
  mg__hshm_wake(s);
  munmap(s->base, s->len); /* unmapping valid memory cannot fail in a way we could act on */
  s->base = NULL;
}

/* ---- waiting for every rank -------------------------------------------------------------- */

/* Reads the probe word of every rank in another process, and publishes the verdict. */
static void mg__probe(mg__hshm_t *s) {
  int ok = 1;
  for (int r = 0; r < s->nranks && ok; r++) {
    if (r == s->me || atomic_load(&s->ranks[r].pid) == s->mypid) continue;
    uint64_t word = 0;
    ok = mg__hshm_read_peer(s, r, &word, atomic_load(&s->ranks[r].probe_addr), sizeof word) == MG_OK &&
         word == mg__probe_word;
  }
  if (!ok) MG_INFO(MG_SUBSYS_INIT, "rank %d cannot read its peers' memory (process_vm_readv): "
                   "direct copies are off for this communicator", s->me);
  s->probed = 1;
  atomic_store(&s->ranks[s->me].direct_ok, ok ? 1 : 2);
  mg__hshm_wake(s);
}

/* 1 when every rank has attached (and, with verdicts, has said whether it can read the others'
 * memory; s->direct is then set). A rank publishes its own verdict as soon as all attached.
 * *missing: ranks that have not attached. */
static int mg__hshm_joined(mg__hshm_t *s, int verdicts, int *missing) {
  int ready = 0, judged = 0, all_ok = 1;
  *missing = 0;
  for (int r = 0; r < s->nranks; r++) {
    int st = atomic_load_explicit(&s->ranks[r].state, memory_order_acquire);
    int v = atomic_load(&s->ranks[r].direct_ok);
    /* A rank that left (destroyed its communicator) had found every rank attached and every
     * verdict published: its init returned. */
    ready += st == MG__HRANK_ATTACHED || st == MG__HRANK_LEFT;
    *missing += st == MG__HRANK_ABSENT || st == MG__HRANK_ATTACHING;
    judged += v != 0;
    all_ok &= v == 1;
  }
  if (ready != s->nranks) return 0;
  if (!s->probed) {
    mg__probe(s);
    return mg__hshm_joined(s, verdicts, missing); /* its own verdict is in now */
  }
  if (!verdicts) return 1;
  if (judged != s->nranks) return 0;
  s->direct = all_ok;
  return 1;
}

static mg_status_t mg__hshm_wait(mg__hshm_t *s, double deadline, const atomic_int *aborting,
                                 const char *fn, int verdicts) {
  double next_check = mg__now() + 0.1;
  int missing;
  for (;;) {
    if (mg__hshm_joined(s, verdicts, &missing)) return MG_OK;
    MG_CHECK(mg__check_abort(aborting, fn));
    double now = mg__now();
    if (now > next_check) {
      next_check = now + 0.1;
      for (int r = 0; r < s->nranks; r++) {
        char why[160];
        int culprit;
        if (atomic_load(&s->ranks[r].state) == MG__HRANK_LEFT) continue; /* see mg__hshm_joined */
        mg_status_t ps = mg__hshm_peer_status(s, r, why, sizeof why, &culprit);
        if (ps >= 0) continue;
        /* A rank whose init returned may leave at once (destroy, exit); it saw every rank
         * joined before it did, so a second look finds this one joined too. */
        if (mg__hshm_joined(s, verdicts, &missing)) return MG_OK;
        return mg__error(ps, "%s: %s while the communicator was being created", fn, why);
      }
    }
    if (now > deadline) {
      char list[512] = "";
      size_t o = 0;
      for (int r = 0; r < s->nranks && o < sizeof list - 16; r++) {
        int st = atomic_load(&s->ranks[r].state);
        if (st == MG__HRANK_ABSENT || st == MG__HRANK_ATTACHING)
          o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", o ? "," : "", r);
      }
      if (missing == 0)
        return mg__error(MG_ERR_TIMED_OUT, "%s: every rank joined, but not all of them told "
                         "whether they can read the others' memory", fn);
      return mg__error(MG_ERR_TIMED_OUT,
                       "%s: timed out waiting for rank%s %s of %d to join (%d of %d arrived)", fn,
                       missing > 1 ? "s" : "", list, s->nranks, s->nranks - missing, s->nranks);
    }
    uint32_t seen = mg__hshm_sleep_begin(s);
    if (!mg__hshm_joined(s, verdicts, &missing)) mg__hshm_sleep(s, seen, 0.05);
    mg__hshm_sleep_end(s);
  }
}

mg_status_t mg__hshm_wait_attached(mg__hshm_t *s, double deadline, const atomic_int *aborting,
                                   const char *fn) {
  return mg__hshm_wait(s, deadline, aborting, fn, 0);
}

mg_status_t mg__hshm_wait_all(mg__hshm_t *s, double deadline, const atomic_int *aborting,
                              const char *fn) {
  return mg__hshm_wait(s, deadline, aborting, fn, 1);
}

/* ---- futex ------------------------------------------------------------------------------- */

void mg__hshm_wake(mg__hshm_t *s) {
  if (atomic_load(&s->hdr->sleepers) == 0) return;
  atomic_fetch_add(&s->hdr->wake, 1);
  syscall(SYS_futex, &s->hdr->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0); /* wakes or no-op */
}

uint32_t mg__hshm_sleep_begin(mg__hshm_t *s) {
  atomic_fetch_add(&s->hdr->sleepers, 1);
  return atomic_load(&s->hdr->wake);
}

void mg__hshm_sleep(mg__hshm_t *s, uint32_t seen, double timeout_s) {
  struct timespec ts;
  ts.tv_sec = (time_t)timeout_s;
  ts.tv_nsec = (long)((timeout_s - (double)ts.tv_sec) * 1e9);
  /* Returns at once if the word already changed; EINTR and timeouts are just early returns. */
  syscall(SYS_futex, &s->hdr->wake, FUTEX_WAIT, seen, &ts, NULL, 0);
}

void mg__hshm_sleep_end(mg__hshm_t *s) { atomic_fetch_sub(&s->hdr->sleepers, 1); }

/* ---- liveness ---------------------------------------------------------------------------- */

mg_status_t mg__hshm_peer_status(const mg__hshm_t *s, int r, char *why, size_t len, int *culprit) {
  const mg__hshm_rank_t *rb = &s->ranks[r];
  int state = atomic_load_explicit(&rb->state, memory_order_acquire);
  *culprit = r;
  if (state == MG__HRANK_FAILED) {
    int c = atomic_load(&rb->cause);
    if (c == MG__CAUSE_TIMEOUT) return MG_OK; /* it gave up waiting; it is not the culprit */
    if (c >= 0 && c < s->nranks && c != r) {
      /* Name the first culprit in its own words ("rank 2 (pid 4711) exited") when it tells. */
      const mg__hshm_rank_t *cb = &s->ranks[c];
      int cstate = atomic_load_explicit(&cb->state, memory_order_acquire);
      if ((cstate != MG__HRANK_FAILED || atomic_load(&cb->cause) == c) &&
          mg__hshm_peer_status(s, c, why, len, culprit) < 0)
        return MG_ERR_REMOTE;
      *culprit = c;
      snprintf(why, len, "rank %d failed (rank %d lost its communicator because of it)", c, r);
    } else {
      snprintf(why, len, "rank %d aborted or lost its communicator", r);
    }
    return MG_ERR_REMOTE;
  }
  if (state == MG__HRANK_LEFT) {
    snprintf(why, len, "rank %d destroyed its communicator", r);
    return MG_ERR_REMOTE;
  }
  if (state != MG__HRANK_ATTACHED) return MG_OK;
  pid_t pid = (pid_t)atomic_load(&rb->pid);
  if (pid == s->mypid) return MG_OK; /* a thread of this process */
  char pstate = '?';
  uint64_t start = 0;
  if (kill(pid, 0) == 0 || errno == EPERM) start = mg__proc_start(pid, &pstate);
  if (start == 0 || pstate == 'Z' || pstate == 'X' || (rb->starttime && start != rb->starttime)) {
    snprintf(why, len, "rank %d (pid %d) exited", r, (int)pid);
    return MG_ERR_REMOTE;
  }
  return MG_OK;
}

void mg__hshm_fail(mg__hshm_t *s, int culprit) {
  if (s->base == NULL) return;
  mg__hshm_rank_t *rb = &s->ranks[s->me];
  if (atomic_load(&rb->state) == MG__HRANK_FAILED) return; /* the first cause stays */
  int attached = MG__HRANK_ATTACHED;
  atomic_store(&rb->cause, culprit);
  atomic_compare_exchange_strong(&rb->state, &attached, MG__HRANK_FAILED);
  mg__hshm_wake(s);
}

/* ---- direct reads ------------------------------------------------------------------------ */

mg_status_t mg__hshm_read_peer(const mg__hshm_t *s, int r, void *dst, uint64_t from, size_t bytes) {
  pid_t pid = (pid_t)atomic_load(&s->ranks[r].pid);
  if (pid == s->mypid) {
    memcpy(dst, (const void *)(uintptr_t)from, bytes);
    return MG_OK;
  }
  unsigned char *d = dst;
  while (bytes > 0) {
    struct iovec local = {d, bytes}, remote = {(void *)(uintptr_t)from, bytes};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return mg__error_errno(MG_ERR_REMOTE, got < 0 ? errno : EFAULT,
                             "reading %zu bytes of rank %d (pid %d) at 0x%llx", bytes, r,
                             (int)pid, (unsigned long long)from);
    }
    d += got, from += (uint64_t)got, bytes -= (size_t)got;
  }
  return MG_OK;
}

/* ---- randomness -------------------------------------------------------------------------- */

mg_status_t mg__random_bytes(void *buf, size_t len) {
  unsigned char *p = buf;
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return mg__error_errno(MG_ERR_SYSTEM, errno, "getrandom");
    }
    p += n;
    len -= (size_t)n;
  }
  return MG_OK;
}
