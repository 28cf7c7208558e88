/*
 * kern_ctx.c -- one rank's context of the all-reduce kernels: its peer-visible area (flags,
 * epoch counters, staging: kern_abi.h), the host-mapped words through which the host stops the
 * kernels and they say why they gave up, and the peers' areas as this rank maps them.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/log.h"
#include "kernels/kern_ctx.h"

#define MG__KERN_PEER_MAGIC 0x6d67617233ULL /* "mgar3": with the descriptor box */

_Static_assert(MG_KERN_REG_OFF >= MG_KERN_PTR_OFF + 4 * 8, "the table overlaps the pointers");

/* Who made a record: the pid and a random token of this process, so that processes of other
 * PID namespaces never pass for this one. */
uint64_t mg__kern_process(void) {
  static _Atomic uint64_t token;
  uint64_t t = atomic_load(&token);
  if (t == 0) {
    if (getrandom(&t, sizeof t, 0) != (ssize_t)sizeof t) t = (uint64_t)(uintptr_t)&token;
    t |= 1;
    uint64_t zero = 0;
    if (!atomic_compare_exchange_strong(&token, &zero, t)) t = zero;
  }
  return t ^ ((uint64_t)getpid() << 32);
}

size_t mg__kern_ctx_staging(const mg__kern_ctx_t *ctx) { return ctx->half_bytes; }
size_t mg__kern_ctx_ll_bytes(const mg__kern_ctx_t *ctx) { return ctx->ll_bytes; }

mg_status_t mg__kern_ctx_create(int rank, int nranks, size_t staging, size_t ll_bytes,
                                int max_blocks, double timeout_s, mg__kern_ctx_t **out,
                                mg__kern_peer_t *mine) {
  static const char fn[] = "mgcomm's all-reduce kernels";
  if (out == NULL || mine == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: NULL output", fn);
  if (nranks < 1 || nranks > MG_KERN_MAX_RANKS || rank < 0 || rank >= nranks)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: rank %d of %d: they serve 1 to %d ranks", fn,
                     rank, nranks, MG_KERN_MAX_RANKS);
  if (max_blocks < 1 || max_blocks > MG_KERN_MAX_BLOCKS || staging == 0 || !(timeout_s > 0) ||
      ll_bytes > staging)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %d blocks (1 to %d), staging of %zu bytes, push area for %zu bytes (at "
                     "most the staging size), timeout %g s", fn, max_blocks, MG_KERN_MAX_BLOCKS,
                     staging, ll_bytes, timeout_s);
  mg__kern_ctx_t *c = calloc(1, sizeof *c);
  if (c == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
  c->box.sock = -1;
  for (int i = 0; i < MG_KERN_MAX_REGS; i++) c->reg[i].fd = -1;
  c->rank = rank;
  c->nranks = nranks;
  c->max_blocks = max_blocks;
  c->timeout_s = timeout_s;
  c->half_bytes = (staging + 255) & ~(size_t)255;
  c->ll_bytes = ll_bytes;
  c->ll_slot = (2 * ll_bytes + 255) & ~(size_t)255; /* a 16-byte line carries 8 bytes */
  const size_t ll_half = (size_t)nranks * c->ll_slot; /* the slots of one parity */
  c->stage_off = MG_KERN_LL_OFF + 2 * ll_half;
  mg_status_t st = mg__kern_module_load(&c->mod);
  if (st < 0) goto fail;
  MG_CU_CHECK_GOTO(st, fail, MemAlloc, &c->area, c->stage_off + 2 * c->half_bytes);
  /* Flags and counters start at 0 before any peer can see the area: epochs start at 1. The
   * push slots of parity 0 (even epochs) start as odd epochs (0xFFFFFFFF), those of parity 1
   * as even ones (0): no word is ready before a peer wrote it in the call. */
  MG_CU_CHECK_GOTO(st, fail, MemsetD8, c->area, 0, MG_KERN_LL_OFF);
  if (ll_half > 0) {
    MG_CU_CHECK_GOTO(st, fail, MemsetD8, c->area + MG_KERN_LL_OFF, 0xFF, ll_half);
    MG_CU_CHECK_GOTO(st, fail, MemsetD8, c->area + MG_KERN_LL_OFF + ll_half, 0, ll_half);
  }
  void *words = NULL;
  MG_CU_CHECK_GOTO(st, fail, MemHostAlloc, &words, 64,
                   MG__CU_MEMHOSTALLOC_PORTABLE | MG__CU_MEMHOSTALLOC_DEVICEMAP);
  c->words = words;
  memset(words, 0, 64);
  MG_CU_CHECK_GOTO(st, fail, MemHostGetDevicePointer, &c->words_dev, words, 0);
  mg__kern_peer_t rec;
  memset(&rec, 0, sizeof rec);
  rec.magic = MG__KERN_PEER_MAGIC;
  rec.process = mg__kern_process();
  rec.base = c->area;
  rec.half_bytes = c->half_bytes;
  rec.ll_bytes = c->ll_bytes;
  rec.max_blocks = max_blocks;
  rec.rank = rank;
  MG_CU_CHECK_GOTO(st, fail, IpcGetMemHandle, &rec.ipc, c->area);
  /* Without a box this rank's peers cannot send it their cuMem buffers, which it then does not
   * map: they are staged (kern_reg.c). */
  if (mg__fdbox_open(&c->box) == MG_OK) memcpy(rec.box, c->box.name, sizeof rec.box);
  else MG_INFO(MG_SUBSYS_COLL, "rank %d: no descriptor box (%s): peers in other processes "
               "stage their cuMem buffers", rank, mg_last_error());
  *mine = rec;
  *out = c;
  return MG_OK;
fail:
  mg__error_prefix("%s, rank %d of %d", fn, rank, nranks);
  mg__kern_ctx_destroy(c);
  return st;
}

mg_status_t mg__kern_ctx_connect(mg__kern_ctx_t *c, const mg__kern_peer_t *all) {
  static const char fn[] = "mgcomm's all-reduce kernels";
  if (c == NULL || all == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
  if (c->connected) return mg__error(MG_ERR_INVALID_USAGE, "%s: already connected", fn);
  for (int r = 0; r < c->nranks; r++) {
    const mg__kern_peer_t *p = &all[r];
    if (p->magic != MG__KERN_PEER_MAGIC || p->rank != r)
      return mg__error(MG_ERR_INVALID_USAGE, "%s, rank %d: record %d is not rank %d's", fn,
                       c->rank, r, r);
    if (p->half_bytes != c->half_bytes || p->max_blocks != c->max_blocks ||
        p->ll_bytes != c->ll_bytes)
      return mg__error(MG_ERR_INVALID_USAGE,
                       "%s, rank %d: rank %d stages %llu bytes, pushes %llu, in at most %d "
                       "blocks, this rank %zu, %zu, in %d: set MGCOMM_KERNELS_STAGING_BYTES, "
                       "MGCOMM_KERNELS_LL_BYTES and MGCOMM_KERNELS_BLOCKS alike on every rank",
                       fn, c->rank, r, (unsigned long long)p->half_bytes,
                       (unsigned long long)p->ll_bytes, (int)p->max_blocks, c->half_bytes,
                       c->ll_bytes, c->max_blocks);
  }
  const uint64_t me = mg__kern_process();
  for (int r = 0; r < c->nranks; r++) {
    c->rec[r] = all[r];
    c->rec[r].box[sizeof c->rec[r].box - 1] = '\0';
  }
  for (int r = 0; r < c->nranks; r++) {
    if (r == c->rank) {
      c->peer[r] = c->area;
    } else if (all[r].process == me) {
      c->peer[r] = all[r].base; /* one address space: the caller enabled peer access */
    } else {
      mg__CUresult res = mg__cuda.IpcOpenMemHandle(&c->peer[r], all[r].ipc,
                                                   MG__CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      if (res != MG__CUDA_SUCCESS) {
        mg_status_t st = mg__cu_error(res, "cuIpcOpenMemHandle");
        mg__error_prefix("%s, rank %d: mapping rank %d's buffers", fn, c->rank, r);
        return st; /* what was opened is closed by destroy */
      }
      c->opened[r] = 1;
    }
  }
  c->connected = 1;
  return MG_OK;
}

void mg__kern_ctx_abort(mg__kern_ctx_t *c) {
  if (c == NULL || c->words == NULL) return;
  atomic_store((_Atomic int *)&c->words[0], 1);
}

mg_status_t mg__kern_ctx_status(const mg__kern_ctx_t *c) {
  const int why = atomic_load((_Atomic int *)&c->words[1]);
  if (why == 0) return MG_OK;
  if (why == MG_KERN_GAVE_UP_UNMAPPED)
    return mg__error(MG_ERR_INVALID_USAGE,
                     "rank %d of %d: mgcomm's all-reduce kernel gave up: a peer lent a registered "
                     "buffer that this rank had deregistered (deregister a symmetric registration "
                     "on every rank, its operations complete)", c->rank, c->nranks);
  if (why == MG_KERN_GAVE_UP_TIMEOUT)
    return mg__error(MG_ERR_TIMED_OUT,
                     "rank %d of %d: mgcomm's all-reduce kernel gave up after waiting %g s for a "
                     "peer's kernel (a rank that did not call the all_reduce, or a GPU that does "
                     "not progress)", c->rank, c->nranks, c->timeout_s);
  return mg__error(MG_ERR_ABORTED,
                   "rank %d of %d: mgcomm's all-reduce kernel gave up: the communicator was "
                   "aborted", c->rank, c->nranks);
}

void mg__kern_ctx_destroy(mg__kern_ctx_t *c) {
  if (c == NULL) return;
  /* Each release fails only for a context already gone (process exit): nothing to free then. */
  for (int i = 0; i < MG_KERN_MAX_REGS; i++)
    if (c->reg[i].used) mg__kern_reg_release(c, c->reg[i].seq);
  mg__fdbox_close(&c->box);
  for (int r = 0; r < MG_KERN_MAX_RANKS; r++)
    if (c->opened[r]) (void)mg__cuda.IpcCloseMemHandle(c->peer[r]);
  if (c->area != 0) (void)mg__cuda.MemFree(c->area);
  if (c->words != NULL) (void)mg__cuda.MemFreeHost(c->words);
  mg__kern_module_unload(&c->mod);
  free(c);
}

mg_status_t mg__kern_ctx_args(const mg__kern_ctx_t *c, mg_kern_args_t *a,
                              const mg__kern_module_t **mod, int *max_blocks) {
  if (!c->connected)
    return mg__error(MG_ERR_INVALID_USAGE, "rank %d of %d: mgcomm's kernels are not connected",
                     c->rank, c->nranks);
  MG_CHECK(mg__kern_ctx_status(c));
  if (atomic_load((_Atomic int *)&c->words[0]))
    return mg__error(MG_ERR_ABORTED, "rank %d of %d: mgcomm's kernels were aborted", c->rank,
                     c->nranks);
  memset(a, 0, sizeof *a);
  for (int r = 0; r < c->nranks; r++) {
    a->stage[r] = (void *)(uintptr_t)(c->peer[r] + c->stage_off);
    a->flags[r] = (unsigned *)(uintptr_t)c->peer[r];
  }
  a->counter = (unsigned *)(uintptr_t)(c->area + MG_KERN_COUNTER_OFF);
  a->abort = (const int *)(uintptr_t)c->words_dev;
  a->error = (int *)(uintptr_t)(c->words_dev + sizeof(int));
  a->half_bytes = c->half_bytes;
  a->ll_slot = c->ll_slot;
  a->timeout_ns = (unsigned long long)(c->timeout_s * 1e9);
  a->rank = c->rank;
  a->nranks = c->nranks;
  *mod = &c->mod;
  *max_blocks = c->max_blocks;
  return MG_OK;
}
