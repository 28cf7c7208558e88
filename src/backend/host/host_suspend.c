/*
 * host_suspend.c -- the host backend's suspend, resume, memory statistics, properties and grow,
 * so that a program written for NCCL's (2.29+) runs unchanged on the host.
 *
 * What suspend releases: this rank's part of the segment's data area, its two staging slots and
 * the rings that carry messages to it (only this rank reads those). They are shared memory
 * (tmpfs), so madvise(MADV_REMOVE) gives the pages back to the system; the next touch after
 * resume maps zeroed pages, which is all the transport needs, since a slot or a ring holds data
 * only while an operation runs. The control area (progress counters, mail, cursors, the
 * small-message boxes) stays: a message in a box waits there through a suspend.
 *
 * Suspend is an internal all_gather (numbered like any collective, so it shows in the flight
 * recorder) in which each rank says that it suspends and whether a message to or from it is
 * still in its ring; the ranks then all suspend or all refuse. When it completes on a rank, every
 * rank has finished the operations before it (each joined the all_gather after them), so no
 * peer still reads this rank's slots; and the all_gather itself travels in the mail lines of the
 * control area, not in the slots. Resume is an all_gather too: no rank posts to a peer's slot
 * before that peer has resumed.
 *
 * The statistics count what suspend releases whether it is held or not, as NCCL's do;
 * tests/unit/test_host_suspend.c checks with mincore that the pages really go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/host/host.h"
#include "base/log.h"

#define MG__HSUSPEND_TAG 0x5355535045ll /* "SUSPE": this rank's all_gather is suspend's */
#define MG__HRESUME_TAG 0x524553554dll  /* "RESUM" */

/* Calls fn(ctx, p, bytes) for each region of the segment that suspend releases on this rank:
 * its staging slots, then the ring from each peer to it. */
static void mg__hsusp_regions(const mg__hshm_t *s,
                              void (*fn)(void *ctx, unsigned char *p, size_t bytes), void *ctx) {
  fn(ctx, mg__hshm_slot(s, s->me, 0), 2 * (size_t)s->hdr->slot_bytes);
  for (int src = 0; src < s->nranks; src++)
    if (s->hdr->chan_bytes > 0) fn(ctx, mg__hshm_ring(s, src, s->me), (size_t)s->hdr->chan_bytes);
}

/* The whole pages inside [p, p + bytes): what madvise acts on. */
static int mg__hsusp_pages(unsigned char *p, size_t bytes, unsigned char **start, size_t *len) {
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
  uintptr_t b = ((uintptr_t)p + bytes) & ~(page - 1);
  if (b <= a) return 0;
  *start = (unsigned char *)a;
  *len = (size_t)(b - a);
  return 1;
}

typedef struct {
  int err;       /* errno of the first madvise that failed */
  size_t bytes;  /* bytes counted */
} mg__hsusp_acc_t;

static void mg__hsusp_release(void *ctx, unsigned char *p, size_t bytes) {
  mg__hsusp_acc_t *acc = ctx;
  unsigned char *a;
  size_t len;
  if (!mg__hsusp_pages(p, bytes, &a, &len)) return;
  if (madvise(a, len, MADV_REMOVE) != 0 && acc->err == 0) acc->err = errno;
  acc->bytes += len;
}

static void mg__hsusp_size(void *ctx, unsigned char *p, size_t bytes) {
  (void)p;
  ((mg__hsusp_acc_t *)ctx)->bytes += bytes;
}

/* The first peer with a message in flight to or from this rank (written, not yet read), or -1. */
static int mg__hsusp_busy_peer(const mg__hshm_t *s) {
  for (int p = 0; p < s->nranks; p++) {
    const mg__hshm_chan_t *in = mg__hshm_chan(s, p, s->me), *out = mg__hshm_chan(s, s->me, p);
    if (atomic_load(&in->head) != atomic_load(&in->tail) ||
        atomic_load(&out->head) != atomic_load(&out->tail))
      return p;
  }
  return -1;
}

/* The all_gather of suspend and resume: (tag, busy peer + 1) from every rank. MG_OK when every
 * rank sent tag and none is busy. */
static mg_status_t mg__hsusp_agree(mg_comm_t *comm, int64_t tag, int busy, double deadline,
                                   const char *fn) {
  const int n = comm->nranks;
  int64_t mine[2] = {tag, busy + 1};
  int64_t *all = malloc(sizeof *all * 2 * (size_t)n);
  if (all == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  mg_status_t st = mg__internal(comm, MG_OPK_ALL_GATHER, mine, all, 2, deadline);
  if (st < 0) mg__error_prefix("%s: agreeing with the other ranks", fn);
  for (int r = 0; r < n && st == MG_OK; r++) {
    if (all[2 * r] != tag)
      st = mg__error(MG_ERR_INVALID_USAGE, "%s: rank %d called another collective (every rank "
                     "calls %s together)", fn, r, fn);
    else if (all[2 * r + 1] != 0)
      st = mg__error(MG_ERR_INVALID_USAGE, "%s: rank %d has a message to or from rank %lld in "
                     "flight; receive it first", fn, r, (long long)all[2 * r + 1] - 1);
  }
  free(all);
  return st;
}

mg_status_t mg__host_suspend(mg_comm_t *comm, int flags, double deadline) {
  static const char fn[] = "mg_comm_suspend";
  (void)flags; /* MG_SUSPEND_MEM, checked by the core */
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  MG_CHECK(mg__hsusp_agree(comm, MG__HSUSPEND_TAG, mg__hsusp_busy_peer(s), deadline, fn));
  mg__hsusp_acc_t acc = {0, 0};
  mg__hsusp_regions(s, mg__hsusp_release, &acc);
  /* Every rank has agreed: failing now would leave the others suspended and this rank not. The
   * memory that could not be released is only still held; say so and go on. */
  if (acc.err != 0)
    MG_WARN("%s: rank %d: madvise(MADV_REMOVE) failed (%s): its segment memory stays held", fn,
            comm->rank, strerror(acc.err));
  return MG_OK;
}

mg_status_t mg__host_resume(mg_comm_t *comm, double deadline) {
  return mg__hsusp_agree(comm, MG__HRESUME_TAG, -1, deadline, "mg_comm_resume");
}

mg_status_t mg__host_mem_stats(mg_comm_t *comm, mg_comm_mem_stats_t *out) {
  const mg__hshm_t *s = &mg__hcomm(comm)->shm;
  mg__hsusp_acc_t mine = {0, 0};
  mg__hsusp_regions(s, mg__hsusp_size, &mine);
  /* Every rank's releasable part is the same size: the rest is the control area, which every
   * rank maps and none releases. */
  const uint64_t data = (uint64_t)s->nranks * mine.bytes;
  out->suspendable_bytes = mine.bytes;
  out->persistent_bytes = s->hdr->seg_bytes > data ? s->hdr->seg_bytes - data : 0;
  out->total_bytes = out->suspendable_bytes + out->persistent_bytes;
  return MG_OK;
}

mg_status_t mg__host_properties(mg_comm_t *comm, mg_comm_properties_t *out) {
  /* No GPU, no device API, no multicast, no GPU-initiated networking, no one-sided host API. */
  out->device_api = out->multimem = out->gin_type = out->lsa_teams = 0;
  out->host_rma = out->railed_gin_type = out->cft = out->cft_multimem = 0;
  out->comm_hash = comm->backend->comm_tag(comm);
  return MG_OK;
}

mg_status_t mg__host_grow_id(mg_comm_t *comm, mg_unique_id_t *id) {
  (void)comm;
  return mg__host_unique_id(id);
}

/* Words of the all_gather of grow: nranks, then the id. */
#define MG__HGROW_WORDS (1 + MG_UNIQUE_ID_BYTES / 8)

mg_status_t mg__host_grow(mg_comm_t *comm, const mg_unique_id_t *id, mg_comm_t *child,
                          double deadline) {
  static const char fn[] = "mg_comm_grow";
  if (comm == NULL) return mg__host_join(child, id, deadline, fn);
  /* The ranks of comm check that they agree on the size and the id (rank 0's). */
  const int n = comm->nranks;
  int64_t mine[MG__HGROW_WORDS];
  memset(mine, 0, sizeof mine);
  mine[0] = child->nranks;
  memcpy(&mine[1], id->internal, MG_UNIQUE_ID_BYTES);
  int64_t *all = malloc(sizeof *all * MG__HGROW_WORDS * (size_t)n);
  if (all == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  mg_status_t st = mg__internal(comm, MG_OPK_ALL_GATHER, mine, all, MG__HGROW_WORDS, deadline);
  if (st < 0) mg__error_prefix("%s: exchanging the id", fn);
  for (int r = 1; r < n && st == MG_OK; r++)
    if (all[(size_t)r * MG__HGROW_WORDS] != child->nranks)
      st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d grows to %lld ranks, rank %d to %d", fn,
                     r, (long long)all[(size_t)r * MG__HGROW_WORDS], comm->rank, child->nranks);
  if (st == MG_OK && all[0] != child->nranks)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank 0 grows to %lld ranks, rank %d to %d", fn,
                   (long long)all[0], comm->rank, child->nranks);
  if (st == MG_OK && memcmp(&all[1], id->internal, MG_UNIQUE_ID_BYTES) != 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d passed another id than rank 0 made",
                   fn, comm->rank);
  mg_unique_id_t uid;
  if (st == MG_OK) {
    memcpy(uid.internal, &all[1], MG_UNIQUE_ID_BYTES);
    st = mg__host_join(child, &uid, deadline, fn);
  }
  free(all);
  return st;
}
