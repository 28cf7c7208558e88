/*
 * host_shm.c -- creating, attaching and leaving the host backend's shared-memory segment; the
 * futex that waiting ranks sleep on; telling whether a peer process is alive.
 *
 * Divisions: layout; attach and detach; waiting for every rank; futex; liveness; randomness.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host_copy.h"
#include "backend/host/host_shm.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "base/params.h"
#include "core/backend.h"
#include "loader/fault.h"

#define MG__PAGE 4096u

static size_t mg__round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* ---- layout ---------------------------------------------------------------------------- */

typedef struct {
  size_t ranks, chans, vcounts, slots, rings, total;
} mg__layout_t;

/* *at += bytes rounded up to whole pages (pages: 1) or as they are; 0 when it overflows. */
static int mg__grow(size_t *at, size_t bytes, int pages) {
  if (pages) {
    if (bytes > SIZE_MAX - (MG__PAGE - 1)) return 0;
    bytes = mg__round_up(bytes, MG__PAGE);
  }
  return !__builtin_add_overflow(*at, bytes, at);
}

/* The layout of a segment for n ranks; 0 when a size does not fit in size_t (on LP64 no rank
 * count the backend takes gets there; the arithmetic is checked all the same). */
static int mg__layout(int n, size_t slot_bytes, size_t chan_bytes, mg__layout_t *l) {
  size_t nn, rank_area, chan_area, vcount_area, slot_area, ring_area;
  if (__builtin_mul_overflow((size_t)n, (size_t)n, &nn) ||
      __builtin_mul_overflow((size_t)n, sizeof(mg__hshm_rank_t), &rank_area) ||
      __builtin_mul_overflow(nn, sizeof(mg__hshm_chan_t), &chan_area) ||
      __builtin_mul_overflow(nn, 6 * sizeof(uint64_t), &vcount_area) ||
      __builtin_mul_overflow((size_t)n * 2, slot_bytes, &slot_area) ||
      __builtin_mul_overflow(nn, chan_bytes, &ring_area))
    return 0;
  l->ranks = MG__PAGE;
  l->chans = l->ranks;
  if (!mg__grow(&l->chans, rank_area, 1)) return 0;
  l->vcounts = l->chans;
  if (!mg__grow(&l->vcounts, chan_area, 1)) return 0;
  l->slots = l->vcounts;
  if (!mg__grow(&l->slots, vcount_area, 1)) return 0;
  l->rings = l->slots;
  if (!mg__grow(&l->rings, slot_area, 0)) return 0;
  l->total = l->rings;
  return mg__grow(&l->total, ring_area, 0);
}

static void mg__bind(mg__hshm_t *s) {
  const mg__hshm_header_t *h = (const mg__hshm_header_t *)s->base;
  mg__layout_t l;
  (void)mg__layout(h->nranks, h->slot_bytes, h->chan_bytes, &l); /* the creator's: it fitted */
  s->hdr = (mg__hshm_header_t *)s->base;
  s->ranks = (mg__hshm_rank_t *)(s->base + l.ranks);
  s->chans = (mg__hshm_chan_t *)(s->base + l.chans);
  s->vcounts = (_Atomic uint64_t *)(s->base + l.vcounts);
  s->slots = s->base + l.slots;
  s->rings = s->base + l.rings;
}

/* The CPUs the calling thread may run on, at least 1. */
static int mg__thread_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1; /* unknown: the fewest */
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

int mg__machine_cpus(void) {
  static atomic_int cpus = 0; /* read once: sysconf reads a file of /sys */
  int n = atomic_load_explicit(&cpus, memory_order_relaxed);
  if (n == 0) {
    const long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)c : 1;
    atomic_store_explicit(&cpus, n, memory_order_relaxed);
  }
  return n;
}

typedef struct {
  size_t slot, chan, small;
} mg__sizes_t;

/* The size thresholds of a segment of n ranks, which its creator writes into its header h
 * (the other ranks adopt them).
 *
 * MGCOMM_HOST_DIRECT_BYTES -1: between threads of one process a direct copy is a memcpy, and from
 * 2 KiB it beats the staged one, which makes every cache line of the data cross between CPUs twice
 * (2 thread ranks on the 2-CPU development VM: broadcast 4-64 KiB 3-5x faster, gather, scatter and
 * all_to_all 2-4x; bench/results/2026-11-24-host-vs-mpi-2core-threads.md). But it adds to the
 * owner's call a wait for its readers, which costs a switch of the CPU where ranks outnumber CPUs:
 * on one CPU (2 threads under `taskset -c 0`) the staged copies win below 256 KiB (broadcast,
 * gather, scatter, all_gather at 32-128 KiB 1.05-1.65x slower read once), and so they do, or
 * nearly, with 4 ranks or more to a CPU; with up to 2 ranks to a CPU and several CPUs reading once
 * wins from 32 KiB per rank (3 and 4 threads on the 2-CPU VM, 32-512 KiB: gather, all_gather,
 * all_to_all, scatter and reduce 0.2-0.8x the staged time, broadcast 0.5-1.0x; the staged pipeline
 * there also swings 2-4x from run to run, the single copy does not;
 * bench/results/2026-11-29-host-threads-oversubscribed.md). The CPUs counted are those the
 * creating rank's thread may run on. Between processes the copy is a process_vm_readv. Where it is
 * slow (host_readv.c) and every rank may have a CPU of the machine, reading once wins from 32 KiB
 * up to 1 MiB read, and the staged pipeline, whose two copies overlap, from there (2-CPU VM, 2
 * processes, 128-512 KiB: all_gather, all_to_all, gather, scatter 0.75-1.00x Open MPI's time read
 * once, 0.79-1.83x staged; broadcast in place 32-128 KiB 0.98-0.99x against 1.19-1.79x; 2 MiB:
 * scatter in place 1.32-1.40x read once, 0.81-0.85x staged;
 * bench/results/2026-11-29-host-vs-mpi-2core-window.md). With more ranks than CPUs the staged
 * copies win (4 processes on it, 128-512 KiB: scatter in place 0.97-1.09x staged, 1.95-2.09x read
 * once; all_to_all 0.61-0.65x against 1.10-1.16x; noisy runs), as once on the same VM for 2
 * processes too (2026-11-25: scatter in place from 512 KiB 0.42-0.74x staged, 1.01-1.06x read
 * once): those collectives stay staged there. Where it is fast it wins from 8 KiB per rank (2
 * processes on the 16-CPU Xeon, 8-16 KiB per rank: gather, scatter, all_gather and all_to_all(v)
 * 0.39-0.69x Open MPI's time read once against 0.81-1.30x staged, broadcast 0.35-0.61x against
 * 0.91-1.22x; 4 processes, gather and all_to_all of 8-16 KiB per rank 0.40-0.65x against
 * 0.78-1.26x; bench/results/2026-11-29-host-direct-8k.md), except for broadcast and all_gather of
 * 3 or more ranks, whose readers all read one buffer at once: from 128 KiB read per rank those
 * stay staged (4 processes on the 16-CPU Xeon, broadcast 128 KiB-2 MiB: 0.91-1.40x Open MPI's time
 * read once, 0.50-0.80x staged; bench/results/2026-11-25-host-direct-threshold-2machines.md,
 * ...-readv-probe.md); and a gather, whose root reads every piece alone, from 16 MiB read, where
 * the owners' copies in, in parallel, let the root's copies out run at memcpy's speed (4
 * processes, 32-128 MiB: 1.24-1.43x Open MPI's time read once, 0.97-1.03x staged). Messages
 * between processes are read by the receiver from 256 KiB where process_vm_readv is fast
 * (0.31-0.79x Open MPI's time from 512 KiB against 0.98-1.25x through the ring;
 * bench/results/2026-11-25-host-p2p-lent-procs.md), and where it is slow from 32 KiB in the window
 * above (sendrecv, 2 processes on the 2-CPU VM, 32 KiB-32 MiB: 0.95-1.02x against 0.92-1.90x
 * through the ring, 1.09-1.90x below 32 MiB), else never (4 processes there, 32-512 KiB:
 * 0.42-0.95x through the ring, 0.90-1.00x read). Set by hand, MGCOMM_HOST_DIRECT_BYTES holds for
 * all of these, and MGCOMM_HOST_READV_MAX_BYTES for broadcast, all_gather, gather and reduce. One
 * rank has no peer to read: it measures nothing. */
static void mg__thresholds(int n, int local, mg__hshm_header_t *h) {
  const int64_t direct = mg__param_int(MG_PARAM_HOST_DIRECT_BYTES);
  const int64_t readv_max = mg__param_int(MG_PARAM_HOST_READV_MAX_BYTES);
  /* Ranks all in this process use direct_threads_bytes alone: nothing to measure for them. */
  const int fast = !local && n > 1 && (direct < 0 || readv_max < 0) && mg__readv_fast();
  /* Slow, with a CPU of the machine for every rank: read once from 32 KiB up to 1 MiB read. */
  const int window = !fast && n <= mg__machine_cpus();
  const uint64_t set = (uint64_t)direct; /* when direct >= 0 */
  h->direct_bytes = direct >= 0 ? set : fast ? 8 * 1024 : window ? 32 * 1024 : 256 * 1024;
  const int cpus = mg__thread_cpus();
  h->direct_threads_bytes = direct >= 0                 ? set
                            : n <= cpus                 ? 2048
                            : cpus > 1 && n <= 2 * cpus ? 32 * 1024
                                                        : 256 * 1024;
  h->lend_bytes = direct >= 0 ? set : fast ? 256 * 1024 : window ? 32 * 1024 : UINT64_MAX;
  uint64_t *max = h->readv_max_bytes; /* 0 (no bound) for the other kinds */
  /* A reduce of 2 processes past small_bytes: where it is fast, the root reads the other's input
   * with process_vm_readv and reduces it, instead of the two-phase form, in which every line of
   * data the other rank wrote crosses between the CPUs (32-256 KiB on the Xeon: 0.46-0.80x Open
   * MPI's time against 0.66-1.24x; from 1 MiB the two-phase form is ahead, and with 4 ranks at
   * every size: bench/results/2026-11-29-host-reduce-root-reads.md). Elsewhere its bound is 1
   * byte: it never reads directly between processes. */
  if (readv_max >= 0) {
    max[MG_OPK_BROADCAST] = max[MG_OPK_ALL_GATHER] = max[MG_OPK_GATHER] = (uint64_t)readv_max;
    max[MG_OPK_REDUCE] = (uint64_t)readv_max;
  } else if (fast) {
    max[MG_OPK_BROADCAST] = max[MG_OPK_ALL_GATHER] = n > 2 ? 128 * 1024 : 0;
    max[MG_OPK_GATHER] = 16 << 20;
    max[MG_OPK_REDUCE] = n == 2 ? 512 * 1024 : 1;
  } else {
    const uint64_t bound = window ? 1 << 20 : 256 * 1024;
    max[MG_OPK_BROADCAST] = max[MG_OPK_ALL_GATHER] = max[MG_OPK_GATHER] = bound;
    max[MG_OPK_SCATTER] = max[MG_OPK_ALL_TO_ALL] = bound;
    max[MG_OPK_REDUCE] = 1;
  }
  /* Where it is fast, a broadcast or scatter of 2 ranks goes direct however large, but its one
   * reader then copies on one CPU (process_vm_readv from memory: 4.2 GB/s on the Xeon, where
   * memcpy makes 5.5 on one CPU and 10.5 on two), and a root whose call is in place has nothing
   * to copy meanwhile: from 32 MiB such a root stages the data, and its copies in overlap the
   * reader's copies out (in place, 32-128 MiB: 0.92-1.19x Open MPI's time staged, 1.23-1.50x
   * direct; out of place, where the root copies its own part meanwhile, direct stays ahead:
   * bench/results/2026-11-29-host-root-stages.md). */
  h->root_stages_bytes = readv_max < 0 && fast && n == 2 ? 32u << 20 : 0;
  /* The slot stores' state (host_pace.c) moves only where reading once is slow and every rank
   * has a CPU: there it was measured to help (2 processes on the 2-CPU VM, whose CPUs move
   * between near and far cores). Where process_vm_readv is fast the thresholds already read
   * once wherever that won, and on a 32-CPU Xeon 4 processes' stores dipped below the line in
   * bursts of memory traffic (bench/results/2026-11-29-host-pace.md); with more ranks than
   * CPUs the staged copies win. */
  h->paced = window && !local && n > 1;
}

/* The staging slot and channel sizes this thread would create a segment of n ranks with, and
 * the small messages' bound. */
static void mg__sizes(int n, mg__sizes_t *z) {
  size_t small = (size_t)mg__param_int(MG_PARAM_HOST_SMALL_BYTES);
  size_t sb = mg__round_up((size_t)mg__param_int(MG_PARAM_HOST_SLOT_BYTES), MG__PAGE);
  if (sb < small) sb = mg__round_up(small, MG__PAGE);
  /* Per-peer pieces (reduce_scatter, all_to_all) need room for 8 bytes per rank at least. */
  if (sb < mg__round_up((size_t)n * 64, MG__PAGE)) sb = mg__round_up((size_t)n * 64, MG__PAGE);
  z->small = small;
  /* The channel rings grow with nranks^2: keep their total under 256 MiB of address space. */
  size_t cb = (size_t)mg__param_int(MG_PARAM_HOST_P2P_BYTES);
  size_t cap = ((size_t)256 << 20) / ((size_t)n * (size_t)n);
  if (cb > cap) cb = cap;
  cb = cb / MG__PAGE * MG__PAGE;
  if (cb < MG__PAGE) cb = MG__PAGE;
  z->slot = sb;
  z->chan = cb;
}

/* ---- attach and detach ----------------------------------------------------------------- */

/* A word peers read at init to learn whether they can reach this process's memory. */
static const uint64_t mg__probe_word = 0x6d67636f6d6d3f21ull;

/* Reads /proc/<pid>/stat into buf and returns its field 3 (the state letter: what follows the
 * command name, which may contain spaces and parentheses), or NULL when the process does not
 * exist or the line is not as expected. */
static const char *mg__proc_stat(pid_t pid, char *buf, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  ssize_t n = read(fd, buf, len - 1);
  close(fd); /* read-only file: nothing to flush, a close error changes nothing */
  if (n <= 0) return NULL;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  return p == NULL || p[1] != ' ' ? NULL : p + 2;
}

/* Field `want` (counted from 1) of a /proc/<pid>/stat line whose field 3 starts at p. */
static const char *mg__stat_field(const char *p, int want) {
  for (int field = 3; field < want && *p; p++)
    if (*p == ' ') field++;
  return p;
}

/* The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), and its
 * state letter; 0 when the process does not exist. */
static uint64_t mg__proc_start(pid_t pid, char *state) {
  char buf[1024];
  const char *p = mg__proc_stat(pid, buf, sizeof buf);
  if (p == NULL) return 0;
  if (state != NULL) *state = *p;
  return strtoull(mg__stat_field(p, 22), NULL, 10);
}

/* The exit status of zombie `pid` as waitpid(2) would give it (field 52 of /proc/<pid>/stat,
 * shown to processes that may trace it), or 0 when unknown. */
static int mg__proc_exit_code(pid_t pid) {
  char buf[1024];
  const char *p = mg__proc_stat(pid, buf, sizeof buf);
  if (p == NULL) return 0;
  p = mg__stat_field(p, 52);
  return *p ? atoi(p) : 0;
}

static mg_status_t mg__check_abort(const atomic_int *aborting, const char *what) {
  if (aborting != NULL && atomic_load(aborting))
    return mg__error(MG_ERR_ABORTED, "%s: the communicator was aborted", what);
  return MG_OK;
}

/* The mappings of this process, for the exit hook (mg__hshm_exit). */
static pthread_mutex_t mg__live_lock = PTHREAD_MUTEX_INITIALIZER;
static mg__hshm_t *mg__live;

/* The message for a segment this process cannot map (or whose size overflows): its parts and the
 * parameters that size them. */
static mg_status_t mg__too_big(const mg__hshm_t *s, size_t slot, size_t chan,
                               const mg__layout_t *l, int err) {
  const int n = s->nranks;
  if (l == NULL)
    return mg__error(MG_ERR_OUT_OF_MEMORY, "attaching rank %d to %s: the segment for %d ranks "
                     "does not fit in size_t: %d x 2 staging slots of %zu bytes "
                     "(MGCOMM_HOST_SLOT_BYTES) and %d x %d send/recv rings of %zu bytes "
                     "(MGCOMM_HOST_P2P_BYTES)", s->me, s->name, n, n, slot, n, n, chan);
  return mg__error_errno(MG_ERR_OUT_OF_MEMORY, err, "attaching rank %d to %s: the segment for %d "
                         "ranks takes %zu bytes, more than this process can map next to what it "
                         "maps already (each rank of a process maps it): %zu of control, %d x 2 "
                         "staging slots of %zu bytes (MGCOMM_HOST_SLOT_BYTES), %d x %d send/recv "
                         "rings of %zu bytes (MGCOMM_HOST_P2P_BYTES); use fewer ranks or smaller "
                         "slots", s->me, s->name, n, l->total, l->slots, n, slot, n, n, chan);
}

/* Closes this rank's descriptors of the segment and of the meeting socket: every rank has
 * attached, or this one leaves. The last rank to close them drops the socket's name. */
static void mg__hshm_met(mg__hshm_t *s) {
  pthread_mutex_lock(&mg__live_lock); /* another rank of this process may be copying s->fd */
  if (s->fd >= 0) close(s->fd); /* the mapping keeps the segment */
  if (s->lfd >= 0) close(s->lfd);
  if (s->efd >= 0) close(s->efd);
  s->fd = s->lfd = s->efd = -1;
  pthread_mutex_unlock(&mg__live_lock);
}

/* Copies of the descriptors of segment `name` and of its socket, held by a rank of this process
 * that waits for the others: threads of one process (and mg_comm_init_all, which attaches every
 * rank in one thread before any could answer at the socket) share them without the socket, and
 * hold one pair between them. 1: copied; 0: no rank here holds them; -1: a copy failed (errno). */
static int mg__local_fds(const char *name, int *fd, int *lfd) {
  pthread_mutex_lock(&mg__live_lock);
  pid_t me = getpid();
  int found = 0;
  for (const mg__hshm_t *s = mg__live; s != NULL && !found; s = s->next)
    if (s->fd >= 0 && s->mypid == me && strcmp(s->name, name) == 0) {
      found = 1;
      *fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
      *lfd = *fd < 0 ? -1 : fcntl(s->lfd, F_DUPFD_CLOEXEC, 0);
      if (*lfd < 0) {
        if (*fd >= 0) close(*fd); /* a copy: nothing else to undo */
        *fd = -1;
        found = -1;
      }
    }
  pthread_mutex_unlock(&mg__live_lock);
  return found;
}

mg_status_t mg__hshm_attach(mg__hshm_t *s, const char *name, int nranks, int me, int local,
                            double deadline, const atomic_int *aborting) {
  memset(s, 0, sizeof *s);
  s->fd = s->lfd = s->efd = -1;
  /* Test builds: "host.attach" fails the attach with the rule's code (MG_ERR_SYSTEM when it is
   * not a status), as a failing memfd_create would. */
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
  s->look = (me + 1) % nranks;
  s->mypid = getpid();
  mg__sizes_t z;
  mg__sizes(nranks, &z);
  mg__layout_t l;
  if (!mg__layout(nranks, z.slot, z.chan, &l)) return mg__too_big(s, z.slot, z.chan, NULL, 0);
  mg_status_t st = MG_OK;
  int created = 0, fd = -1, cfd = -1, clfd = -1; /* cfd, clfd: copies of another rank's */
  int copied = mg__local_fds(name, &cfd, &clfd);
  if (copied < 0) return mg__error_errno(MG_ERR_SYSTEM, errno, "duplicating %s's descriptors", name);
  if (copied) {
    fd = cfd;
  } else {
    MG_CHECK(mg__hmeet_open(name, l.total, deadline, aborting, &s->fd, &s->lfd, &created));
    fd = s->fd;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    st = mg__error_errno(MG_ERR_SYSTEM, errno, "fstat of segment %s", name);
    goto fail;
  }
  if (sb.st_size < (off_t)MG__PAGE) {
    st = mg__error(MG_ERR_REMOTE, "segment %s has a size (%lld) no rank would give it", name,
                   (long long)sb.st_size);
    goto fail;
  }
  s->base = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    st = errno == ENOMEM ? mg__too_big(s, z.slot, z.chan, &l, ENOMEM)
                         : mg__error_errno(MG_ERR_SYSTEM, errno, "mmap of segment %s", name);
    goto fail;
  }
  s->len = (size_t)sb.st_size;
  if (cfd >= 0) close(cfd); /* the mapping keeps the segment */
  cfd = fd = -1;
  mg__hshm_header_t *h = (mg__hshm_header_t *)s->base;
  if (created) {
    h->version = MG__HSHM_VERSION;
    h->nranks = nranks;
    h->slot_bytes = z.slot;
    h->small_bytes = z.small;
    h->chan_bytes = z.chan;
    mg__thresholds(nranks, local, h);
    h->seg_bytes = l.total;
    atomic_store_explicit(&h->magic, MG__HSHM_MAGIC, memory_order_release);
    /* Only now may other ranks have it: they find it whole. */
    MG_CHECK_GOTO(mg__hmeet_listen(s->lfd, name), st, fail);
  }
  if (atomic_load_explicit(&h->magic, memory_order_acquire) != MG__HSHM_MAGIC ||
      h->version != MG__HSHM_VERSION || h->seg_bytes != s->len) {
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
    /* Every rank has it mapped: the ranks that wait at the socket find it shut and wake up, and
     * nobody can connect any more; then this rank lets go of it. */
    int sock = s->lfd >= 0 ? s->lfd : clfd;
    if (sock >= 0) (void)shutdown(sock, SHUT_RDWR); /* fails only for a socket that is not one */
    mg__hshm_met(s);
  }
  if (clfd >= 0) close(clfd); /* a copy */
  pthread_mutex_lock(&mg__live_lock);
  s->next = mg__live;
  mg__live = s;
  pthread_mutex_unlock(&mg__live_lock);
  mg__hshm_wake(s);
  return MG_OK;
fail:
  if (cfd >= 0) close(cfd); /* error path, copies: the status reports the real failure */
  if (clfd >= 0) close(clfd);
  mg__hshm_met(s);
  if (s->base != NULL) munmap(s->base, s->len); /* error path: nothing else maps it here */
  s->base = NULL;
  return st;
}

void mg__hshm_detach(mg__hshm_t *s, int state) {
  if (s->base == NULL) return;
  pthread_mutex_lock(&mg__live_lock);
  for (mg__hshm_t **p = &mg__live; *p != NULL; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&mg__live_lock);
  if (state == MG__HRANK_FAILED) {
    mg__hshm_fail(s, s->me);
  } else {
    int attached = MG__HRANK_ATTACHED; /* a rank that failed stays failed */
    atomic_compare_exchange_strong(&s->ranks[s->me].state, &attached, state);
  }
  /* Leaving before everyone came (failed or aborted init): the others still answer at the
   * socket; when none is left, a rank that comes later makes a fresh segment and times out
   * there, naming the missing. */
  mg__hshm_met(s);
  mg__hshm_wake(s);
  munmap(s->base, s->len); /* unmapping valid memory cannot fail in a way we could act on */
  s->base = NULL;
}

static void mg__hshm_atfork_child(void) {
  /* Only the forking thread exists in the child: nobody holds the lock there. */
  pthread_mutex_init(&mg__live_lock, NULL);
}

__attribute__((constructor)) static void mg__hshm_init(void) {
  /* Without the handler, a child forked while another thread attached would block at exit;
   * failing to install it (ENOMEM at load time) only matters to such a child. */
  (void)pthread_atfork(NULL, NULL, mg__hshm_atfork_child);
}

/* At exit (also when the library is unloaded), every rank of this process whose init returned
 * leaves as destroy would have it leave, and says that its process exited: a peer still waiting
 * for it names it ("exited without destroying its communicator") instead of taking it for a
 * crash, and its peers' asynchronous error stays MG_OK. Other threads may still be in
 * operations: the mappings stay. A child of fork() has the parent's list but not its ranks. */
__attribute__((destructor)) static void mg__hshm_exit(void) {
  pthread_mutex_lock(&mg__live_lock);
  pid_t me = getpid();
  for (mg__hshm_t *s = mg__live; s != NULL; s = s->next) {
    if (s->mypid != me) continue;
    mg__hshm_rank_t *rb = &s->ranks[s->me];
    atomic_store(&rb->exited, 1);
    int attached = MG__HRANK_ATTACHED;
    if (s->ready) atomic_compare_exchange_strong(&rb->state, &attached, MG__HRANK_LEFT);
    mg__hshm_wake(s);
  }
  pthread_mutex_unlock(&mg__live_lock);
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
  s->processes = 0;
  for (int r = 1; r < s->nranks; r++)
    s->processes |= atomic_load(&s->ranks[r].pid) != atomic_load(&s->ranks[0].pid);
  s->paced = s->processes && s->hdr->paced;
  return 1;
}

#define MG__INIT_LOOKS 2 /* processes of peers read at each look of a rank waiting in init */

/* An epoll instance that waits at listening socket lfd, waking one of its waiters per
 * connection; -1 when the kernel has none (poll then wakes them all). */
static int mg__meet_epoll(int lfd) {
  int efd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE};
  if (efd >= 0 && epoll_ctl(efd, EPOLL_CTL_ADD, lfd, &ev) != 0) {
    close(efd); /* never used */
    efd = -1;
  }
  return efd;
}

static mg_status_t mg__hshm_wait(mg__hshm_t *s, double deadline, const atomic_int *aborting,
                                 const char *fn, int verdicts) {
  double next_check = mg__now() + 0.1;
  int missing;
  for (;;) {
    if (s->lfd >= 0) { /* answer the ranks that wait at the socket, until every rank came */
      if (atomic_load(&s->hdr->attached) == (uint32_t)s->nranks)
        mg__hshm_met(s);
      else
        mg__hmeet_serve(s->lfd, s->fd);
    }
    if (mg__hshm_joined(s, verdicts, &missing)) {
      mg__hshm_met(s); /* every rank has its mapping */
      s->ready = verdicts;
      return MG_OK;
    }
    MG_CHECK(mg__check_abort(aborting, fn));
    double now = mg__now();
    if (now > next_check) {
      next_check = now + 0.1;
      /* A failed peer is seen by its state at every look; the processes of attached peers are
       * read MG__INIT_LOOKS at a time, going round from where the last look stopped: with
       * hundreds of ranks waiting on a few cores, each reading every peer's /proc entry every
       * 100 ms took the time that the late ranks needed to arrive. The waiters are the attached
       * ranks, so a dead one is still read by about MG__INIT_LOOKS of them at each look; the
       * first to see it fails naming it, which the others then see by its state. */
      const int from = s->look, n = s->nranks;
      s->look = (s->look + MG__INIT_LOOKS) % n;
      for (int r = 0; r < n; r++) {
        char why[160];
        int culprit;
        int state = atomic_load(&s->ranks[r].state);
        if (state == MG__HRANK_LEFT) continue; /* see mg__hshm_joined */
        if (state == MG__HRANK_ATTACHED && (r - from + n) % n >= MG__INIT_LOOKS) continue;
        mg_status_t ps = mg__hshm_peer_status(s, r, why, sizeof why, &culprit);
        if (ps >= 0) continue;
        /* A rank whose init returned may leave at once (destroy, exit); it saw every rank
         * joined before it did, so a second look finds this one joined too. */
        if (mg__hshm_joined(s, verdicts, &missing)) {
          mg__hshm_met(s);
          s->ready = verdicts;
          return MG_OK;
        }
        mg__hshm_fail(s, culprit); /* the others name the rank that failed first, too */
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
    if (s->lfd >= 0) {
      /* Ranks are missing: wait at the socket, which wakes one waiter for each rank that
       * connects (EPOLLEXCLUSIVE: hundreds of ranks wait on a few cores) and every waiter when
       * the last rank attached (it shuts the socket). An abort or a failure is seen at the next
       * look, within 100 ms. */
      if (s->efd < 0) s->efd = mg__meet_epoll(s->lfd);
      struct epoll_event ev;
      struct pollfd p = {s->lfd, POLLIN, 0};
      if (s->efd >= 0)
        (void)epoll_wait(s->efd, &ev, 1, 100); /* any return: the loop looks again */
      else
        (void)poll(&p, 1, 100);
      continue;
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
  s->sleeps++;
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
    if (atomic_load(&rb->exited))
      snprintf(why, len, "rank %d (pid %d) exited (exit() without mg_comm_destroy)", r,
               (int)atomic_load(&rb->pid));
    else
      snprintf(why, len, "rank %d destroyed its communicator", r);
    return MG_ERR_REMOTE;
  }
  if (state != MG__HRANK_ATTACHED) return MG_OK;
  pid_t pid = (pid_t)atomic_load(&rb->pid);
  if (pid == s->mypid) return MG_OK; /* a thread of this process */
  char pstate = '?';
  uint64_t start = 0;
  if (kill(pid, 0) == 0 || errno == EPERM) start = mg__proc_start(pid, &pstate);
  int reused = rb->starttime && start != 0 && start != rb->starttime;
  if (start != 0 && pstate != 'Z' && pstate != 'X' && !reused) return MG_OK;
  /* How it ended: its own word if it called exit(); a zombie's status if we may read it. */
  int code = pstate == 'Z' && !reused ? mg__proc_exit_code(pid) : 0;
  if (atomic_load(&rb->exited))
    snprintf(why, len, "rank %d (pid %d) exited (exit() without mg_comm_destroy)", r, (int)pid);
  else if (code != 0 && WIFSIGNALED(code))
    snprintf(why, len, "rank %d (pid %d) exited (killed by signal %d, %s)", r, (int)pid,
             WTERMSIG(code), strsignal(WTERMSIG(code)));
  else if (code != 0)
    snprintf(why, len, "rank %d (pid %d) exited (_exit(%d) without mg_comm_destroy)", r,
             (int)pid, WEXITSTATUS(code));
  else
    snprintf(why, len, "rank %d (pid %d) exited (not through exit(): killed by a signal, crashed "
             "or _exit)", r, (int)pid);
  return MG_ERR_REMOTE;
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
    mg__copy(dst, (const void *)(uintptr_t)from, bytes);
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
