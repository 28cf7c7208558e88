/*
 * nvshmem_fake.c -- a fake libnvshmem_host.so.3 for machines without a GPU: it exports the
 * host API that mgcomm's loader requires (src/loader/nvshmem_api.h) and emulates PEs as the
 * processes of one host sharing their symmetric heaps in POSIX shared memory. mgcomm loads it
 * through MGCOMM_NVSHMEM_LIBRARY, and test builds run with MG_TEST_SHMEM_HOST_PES=1 so that
 * mgcomm treats the heap as host memory (src/shmem/space.c).
 *
 * What it emulates faithfully enough for mgcomm's tests: the unique-id bootstrap (the id names
 * the segment; nvshmemx_hostlib_init_attr refuses an attribute without NVSHMEM 3.x's version
 * stamps, as the real one does), collective allocation (every PE allocates at the same offset
 * of its own heap; allocation and free are barriers), put and get into another PE's heap,
 * barriers, and strided teams. Like NVSHMEM it checks nothing else: a bad PE, address or team
 * is undefined behaviour here too, which is what mgcomm's checks must prevent.
 * nvshmem_fake_rma_calls counts the puts and gets that reached it, so that a test can tell that
 * a refused call never did. NVSHMEM_FAKE_LIMITED_MPG=1 reports NVSHMEM's "limited MPG" status
 * (PEs sharing a GPU), in which, as the real library, it exits the process on a team split.
 * A barrier that waits 30 s aborts the process (a test bug).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_PES 8
#define FAKE_HEAP (4u << 20) /* bytes of symmetric heap per PE */
#define FAKE_MAX_TEAMS 32
#define FAKE_MAX_ALLOCS 256

/* NVSHMEM 3.x's layouts (device_host/nvshmem_types.h, bootstrap_device_host/nvshmem_uniqueid.h). */
typedef struct { int version; char internal[124]; } uid_t_;
typedef struct { int version; uid_t_ *id; int myrank; int nranks; } uid_args_t;
typedef struct { int version; uid_args_t uid_args; char content[96]; } init_args_t;
typedef struct { int version; void *mpi_comm; init_args_t args; } init_attr_t;
#define STAMP(t) ((1 << 16) + (int)sizeof(t))

typedef struct {
  atomic_int count;
  atomic_int generation;
} seg_hdr_t;
#define SEG_HDR 4096
#define SEG_BYTES (SEG_HDR + (size_t)FAKE_MAX_PES * FAKE_HEAP)

static unsigned char *seg;      /* the mapping: header, then each PE's heap */
static seg_hdr_t *hdr;
static int me = -1, npes = 0, status_v = 0;
static struct { size_t off, bytes; } allocs[FAKE_MAX_ALLOCS];
static int nallocs;
static struct { int used, start, stride, size; } teams[FAKE_MAX_TEAMS];

EXPORT atomic_int nvshmem_fake_rma_calls;

static unsigned char *heap_of(int pe) { return seg + SEG_HDR + (size_t)pe * FAKE_HEAP; }
static size_t off_of(const void *p) { return (size_t)((const unsigned char *)p - heap_of(me)); }

static void barrier(void) {
  atomic_thread_fence(memory_order_seq_cst);
  int gen = atomic_load(&hdr->generation);
  if (atomic_fetch_add(&hdr->count, 1) + 1 == npes) {
    atomic_store(&hdr->count, 0);
    atomic_fetch_add(&hdr->generation, 1);
    return;
  }
  time_t t0 = time(NULL);
  while (atomic_load(&hdr->generation) == gen) {
    if (time(NULL) - t0 > 30) {
      fprintf(stderr, "nvshmem_fake: PE %d waited 30 s at a barrier; aborting\n", me);
      abort();
    }
    sched_yield();
  }
}

EXPORT int nvshmemx_get_uniqueid(uid_t_ *id) {
  /* A new name: an id that no rank initialised with is never unlinked, and a later process with
   * the same pid (random() starts alike in every process) would find its name taken. */
  char name[64];
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 1000; tries++) {
    snprintf(name, sizeof name, "/mgfake-%d-%ld", (int)getpid(), (long)random());
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno != EEXIST) return 1;
  }
  if (fd < 0) return 1;
  int rc = ftruncate(fd, (off_t)SEG_BYTES);
  close(fd);
  if (rc != 0) return 2;
  memset(id->internal, 0, sizeof id->internal);
  snprintf(id->internal, sizeof id->internal, "%s", name);
  return 0;
}

EXPORT int nvshmemx_set_attr_uniqueid_args(const int rank, const int nranks, const uid_t_ *id,
                                           init_attr_t *attr) {
  attr->args.uid_args.id = (uid_t_ *)id;
  attr->args.uid_args.myrank = rank;
  attr->args.uid_args.nranks = nranks;
  return 0;
}

EXPORT int nvshmemx_hostlib_init_attr(unsigned int flags, init_attr_t *attr) {
  if (status_v != 0) return 3;
  if (attr == NULL || attr->version != STAMP(init_attr_t) ||
      attr->args.version != STAMP(init_args_t) ||
      attr->args.uid_args.version != STAMP(uid_args_t))
    return 4; /* NVSHMEM refuses an attribute without its version stamps */
  if (flags & 8u) {
    const uid_args_t *u = &attr->args.uid_args;
    if (u->id == NULL || u->nranks < 1 || u->nranks > FAKE_MAX_PES || u->myrank < 0 ||
        u->myrank >= u->nranks)
      return 5;
    int fd = shm_open(u->id->internal, O_RDWR, 0600);
    if (fd < 0) return 6;
    seg = mmap(NULL, SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) return 7;
    me = u->myrank;
    npes = u->nranks;
  } else {
    /* NVSHMEM's own bootstrap: this fake knows no launcher, so every process is a job of one. */
    seg = mmap(NULL, SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (seg == MAP_FAILED) return 7;
    me = 0;
    npes = 1;
  }
  hdr = (seg_hdr_t *)seg;
  for (int t = 0; t < 3; t++) teams[t].used = 1, teams[t].start = 0, teams[t].stride = 1,
                              teams[t].size = npes;
  /* NVSHMEM_STATUS_IS_INITIALIZED, or LIMITED_MPG (PEs sharing a GPU) when a test asks. */
  const char *mpg = getenv("NVSHMEM_FAKE_LIMITED_MPG");
  status_v = mpg != NULL && strcmp(mpg, "1") == 0 ? 3 : 2;
  barrier();
  if ((flags & 8u) && me == 0) shm_unlink(attr->args.uid_args.id->internal); /* all mapped it */
  return 0;
}

EXPORT void nvshmemx_hostlib_finalize(void) {
  barrier();
  munmap(seg, SEG_BYTES);
  seg = NULL;
  status_v = 0;
  me = -1;
}

EXPORT int nvshmemx_init_status(void) { return status_v; }
EXPORT int nvshmem_my_pe(void) { return me; }
EXPORT int nvshmem_n_pes(void) { return npes; }
EXPORT void nvshmem_info_get_version(int *major, int *minor) { *major = 1, *minor = 3; }
EXPORT void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch) {
  *major = 3, *minor = 99, *patch = 1; /* a release no real NVSHMEM has: tests tell it apart */
}

static void *fake_alloc(size_t alignment, size_t bytes) {
  if (alignment < 256) alignment = 256;
  size_t off = 0;
  int at = 0;
  for (; at < nallocs; at++) { /* first fit between the sorted allocations */
    size_t a = (off + alignment - 1) & ~(alignment - 1);
    if (a + bytes <= allocs[at].off) break;
    off = allocs[at].off + allocs[at].bytes;
  }
  off = (off + alignment - 1) & ~(alignment - 1);
  if (off + bytes > FAKE_HEAP || nallocs == FAKE_MAX_ALLOCS) {
    barrier();
    return NULL;
  }
  memmove(&allocs[at + 1], &allocs[at], sizeof allocs[0] * (size_t)(nallocs - at));
  allocs[at].off = off;
  allocs[at].bytes = bytes;
  nallocs++;
  barrier();
  return heap_of(me) + off;
}

EXPORT void *nvshmem_malloc(size_t bytes) { return fake_alloc(256, bytes); }
EXPORT void *nvshmem_align(size_t alignment, size_t bytes) { return fake_alloc(alignment, bytes); }
EXPORT void *nvshmem_calloc(size_t count, size_t size) {
  void *p = fake_alloc(256, count * size);
  if (p != NULL) memset(p, 0, count * size);
  return p;
}

EXPORT void nvshmem_free(void *p) {
  size_t off = off_of(p);
  for (int i = 0; i < nallocs; i++)
    if (allocs[i].off == off) {
      memmove(&allocs[i], &allocs[i + 1], sizeof allocs[0] * (size_t)(nallocs - i - 1));
      nallocs--;
      break;
    }
  barrier();
}

EXPORT void nvshmem_putmem(void *dest, const void *source, size_t bytes, int pe) {
  atomic_fetch_add(&nvshmem_fake_rma_calls, 1);
  memcpy(heap_of(pe) + off_of(dest), source, bytes);
}
EXPORT void nvshmem_getmem(void *dest, const void *source, size_t bytes, int pe) {
  atomic_fetch_add(&nvshmem_fake_rma_calls, 1);
  memcpy(dest, heap_of(pe) + off_of(source), bytes);
}
EXPORT void nvshmemx_putmem_on_stream(void *dest, const void *source, size_t bytes, int pe,
                                      void *stream) {
  (void)stream;
  nvshmem_putmem(dest, source, bytes, pe);
}
EXPORT void nvshmemx_getmem_on_stream(void *dest, const void *source, size_t bytes, int pe,
                                      void *stream) {
  (void)stream;
  nvshmem_getmem(dest, source, bytes, pe);
}
EXPORT void nvshmem_quiet(void) { atomic_thread_fence(memory_order_seq_cst); }
EXPORT void nvshmem_fence(void) { atomic_thread_fence(memory_order_seq_cst); }
EXPORT void nvshmem_barrier_all(void) { barrier(); }
EXPORT void nvshmemx_barrier_all_on_stream(void *stream) {
  (void)stream;
  barrier();
}
EXPORT void nvshmem_sync_all(void) { barrier(); }

/* Teams: members are world PEs start, start + stride, ... (size of them). */
static int member_index(int t, int world_pe) {
  int d = world_pe - teams[t].start;
  if (d < 0 || d % teams[t].stride != 0 || d / teams[t].stride >= teams[t].size) return -1;
  return d / teams[t].stride;
}

EXPORT int nvshmem_team_split_strided(int parent, int start, int stride, int size,
                                      const void *config, long mask, int *new_team) {
  (void)config;
  (void)mask;
  if (status_v == 3) { /* as NVSHMEM 3.4.5 does in limited MPG mode */
    fprintf(stderr, "nvshmem_fake: team split is not supported with limited MPG; exiting\n");
    exit(-1);
  }
  int t = 3;
  while (t < FAKE_MAX_TEAMS && teams[t].used) t++;
  if (t == FAKE_MAX_TEAMS) return 1;
  /* Every PE of the parent takes the same slot, members or not, so that slots agree. */
  teams[t].used = 1;
  teams[t].start = teams[parent].start + start * teams[parent].stride;
  teams[t].stride = teams[parent].stride * stride;
  teams[t].size = size;
  *new_team = member_index(t, me) >= 0 ? t : -1;
  return 0;
}
EXPORT int nvshmem_team_my_pe(int team) { return member_index(team, me); }
EXPORT int nvshmem_team_n_pes(int team) { return teams[team].size; }
EXPORT int nvshmem_team_translate_pe(int src, int src_pe, int dest) {
  return member_index(dest, teams[src].start + src_pe * teams[src].stride);
}
EXPORT void nvshmem_team_destroy(int team) { teams[team].used = 0; }
