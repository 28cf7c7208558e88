/*
 * agree.c -- before NVSHMEM runs a collective allocation or free, the PEs compare what each
 * asked for, so that a mismatch is an error on every PE instead of a corrupted heap (NVSHMEM
 * does not compare sizes: PEs that allocate different sizes get offsets that no longer agree).
 *
 * The exchange goes through NVSHMEM itself, which works however it was started: the symmetric
 * area ctl holds two rows of one 64-byte slot per PE and, after them, this PE's outgoing
 * record. Each PE writes its record there, puts it into slot `me` of the current row of every
 * PE, and waits at nvshmem_barrier_all, which completes every put before it returns; then each
 * PE reads its own row. Rows alternate by the exchange's number: a PE can write row r of
 * exchange k + 2 only after the barrier of exchange k + 1, which no PE passes before every PE
 * has finished reading row r of exchange k.
 *
 * Every PE calls the exchange, also one whose own arguments are wrong (it publishes its
 * verdict): a PE that refused alone would leave the others in NVSHMEM's barrier for ever.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "shmem/shmem.h"

#define MG__AGREE_SLOT 64
#define MG__AGREE_MAGIC 0x4d475348u /* "MGSH" */

typedef struct {
  uint32_t magic;
  uint32_t kind;  /* mg__agree_kind_t */
  uint64_t seq;   /* the exchange's number */
  uint64_t a, b;  /* what was asked: bytes; count, size; alignment, bytes; the serial freed */
  int32_t status; /* the PE's verdict on its own arguments */
  int32_t pe;
} mg__agree_rec_t;
_Static_assert(sizeof(mg__agree_rec_t) <= MG__AGREE_SLOT, "a record fits its slot");

size_t mg__shmem_ctl_bytes(int n_pes) { return ((size_t)2 * (size_t)n_pes + 1) * MG__AGREE_SLOT; }

static const char *mg__agree_name(uint32_t kind) {
  switch (kind) {
  case MG__AGREE_MALLOC: return "mg_shmem_malloc";
  case MG__AGREE_CALLOC: return "mg_shmem_calloc";
  case MG__AGREE_ALIGN: return "mg_shmem_align";
  case MG__AGREE_FREE: return "mg_shmem_free";
  default: return "an unknown call";
  }
}

static int mg__agree_describe(char *buf, size_t len, const mg__agree_rec_t *r) {
  switch (r->kind) {
  case MG__AGREE_MALLOC:
    return snprintf(buf, len, "mg_shmem_malloc(%" PRIu64 " bytes)", r->a);
  case MG__AGREE_CALLOC:
    return snprintf(buf, len, "mg_shmem_calloc(%" PRIu64 " x %" PRIu64 ")", r->a, r->b);
  case MG__AGREE_ALIGN:
    return snprintf(buf, len, "mg_shmem_align(%" PRIu64 ", %" PRIu64 " bytes)", r->a, r->b);
  case MG__AGREE_FREE:
    if (r->a == UINT64_MAX) return snprintf(buf, len, "mg_shmem_free(NULL)");
    return snprintf(buf, len, "mg_shmem_free(allocation #%" PRIu64 ")", r->a);
  default:
    return snprintf(buf, len, "%s", mg__agree_name(r->kind));
  }
}

static int mg__agree_same(const mg__agree_rec_t *x, const mg__agree_rec_t *y) {
  return x->kind == y->kind && x->a == y->a && x->b == y->b && x->seq == y->seq;
}

/* "PE 0,2 called X; PE 1 called Y": every distinct call once, with the PEs that made it. */
static void mg__agree_groups(char *out, size_t len, const mg__agree_rec_t *all, int n) {
  size_t o = 0;
  char *done = calloc((size_t)n, 1);
  for (int i = 0; i < n && o < len; i++) {
    if (done != NULL && done[i]) continue;
    char what[96];
    mg__agree_describe(what, sizeof what, &all[i]);
    o += (size_t)snprintf(out + o, len - o, "%sPE ", o ? "; " : "");
    int first = 1;
    for (int j = i; j < n && o < len; j++) {
      if (!mg__agree_same(&all[i], &all[j]) || (done != NULL && done[j])) continue;
      if (done != NULL) done[j] = 1;
      o += (size_t)snprintf(out + o, len - o, first ? "%d" : ",%d", j);
      first = 0;
      if (done == NULL) break;
    }
    if (o < len) o += (size_t)snprintf(out + o, len - o, " called %s #%" PRIu64, what, all[i].seq);
  }
  free(done);
}

mg_status_t mg__shmem_agree(mg__agree_kind_t kind, uint64_t a, uint64_t b, mg_status_t local,
                            const char *fn) {
  int n = mg__shmem.n_pes, me = mg__shmem.my_pe;
  /* The local verdict's message, kept: the exchange may set the thread's message. */
  char mine_msg[MG__ERROR_LEN] = "";
  if (local != MG_OK) mg_last_error_copy(mine_msg, sizeof mine_msg);

  uint64_t seq = mg__shmem.agree_seq++;
  unsigned char *row = mg__shmem.ctl + (size_t)(seq & 1) * (size_t)n * MG__AGREE_SLOT;
  unsigned char *out = mg__shmem.ctl + (size_t)2 * (size_t)n * MG__AGREE_SLOT;
  unsigned char slot[MG__AGREE_SLOT] = {0};
  mg__agree_rec_t rec = {MG__AGREE_MAGIC, (uint32_t)kind, seq, a, b, (int32_t)local, me};
  memcpy(slot, &rec, sizeof rec);

  mg__agree_rec_t *all = malloc(sizeof *all * (size_t)n);
  unsigned char *raw = malloc((size_t)n * MG__AGREE_SLOT);
  if (all == NULL || raw == NULL) {
    free(all);
    free(raw);
    /* The peers would wait for this PE's record in NVSHMEM's barrier: there is no way to tell
     * them without memory, which is what this status says. */
    return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of host memory for the PEs' comparison", fn);
  }
  mg__CUcontext saved = NULL;
  mg_status_t st = mg__shmem_ctx_enter(&saved);
  if (st == MG_OK) st = mg__shmem_to_device(out, slot, sizeof slot);
  if (st == MG_OK) {
    for (int p = 0; p < n; p++) mg__nvshmem.putmem(row + (size_t)me * MG__AGREE_SLOT, out,
                                                   MG__AGREE_SLOT, p);
    mg__nvshmem.barrier_all();
    st = mg__shmem_from_device(raw, row, (size_t)n * MG__AGREE_SLOT);
  }
  mg__shmem_ctx_leave(saved);
  if (st != MG_OK) goto done;

  for (int p = 0; p < n; p++) memcpy(&all[p], raw + (size_t)p * MG__AGREE_SLOT, sizeof all[p]);
  char list[512];
  int bad_args = 0, bad_shape = 0;
  for (int p = 0; p < n; p++) {
    if (all[p].magic != MG__AGREE_MAGIC || all[p].pe != p) {
      st = mg__error(MG_ERR_INTERNAL, "%s: the record of PE %d in the comparison #%" PRIu64
                     " is not one of mgcomm's (did every PE call through mgcomm?)", fn, p, seq);
      goto done;
    }
    if (all[p].status != MG_OK) bad_args = 1;
    if (!mg__agree_same(&all[p], &all[0])) bad_shape = 1;
  }
  if (bad_args) {
    if (local != MG_OK) {
      st = mg__error(local, "%s", mine_msg);
      goto done;
    }
    size_t o = 0;
    for (int p = 0; p < n && o < sizeof list; p++)
      if (all[p].status != MG_OK)
        o += (size_t)snprintf(list + o, sizeof list - o, "%sPE %d (%s)", o ? ", " : "", p,
                              mg_status_name((mg_status_t)all[p].status));
    st = mg__error(MG_ERR_INVALID_ARGUMENT,
                   "%s: refused on every PE: the arguments of %s were wrong there; nothing was "
                   "allocated or freed", fn, list);
  } else if (bad_shape) {
    mg__agree_groups(list, sizeof list, all, n);
    st = mg__error(MG_ERR_INVALID_USAGE,
                   "%s: the PEs made different collective calls (%s); every PE must make the "
                   "same symmetric allocations and frees in the same order; refused on every "
                   "PE, the heap is as it was", fn, list);
  }
done:
  free(all);
  free(raw);
  return st;
}
