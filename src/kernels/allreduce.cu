/*
 * allreduce.cu -- mgcomm's own all-reduce kernels over peer memory (docs/kernels.md).
 *
 * Every rank owns one device allocation that its peers map (peer pointers in one process, CUDA
 * IPC across processes): flags, the epoch of its calls and a staging area of two halves.
 * A call copies this rank's input into the half of the call's parity, meets the peers at a
 * barrier, and reduces from the peers' halves:
 *   one-shot: every rank reads every rank's whole input and reduces it;
 *   two-shot: rank r reduces segment r of the data (writing the result back into its own half),
 *             meets the peers at a second barrier, and gathers the other segments from them.
 *   push ("LL", the smallest sizes): every rank stores its input, with the call's epoch in every
 *             8-byte word, straight into a slot of every peer's push area, and reduces from its
 *             own area once every word it needs carries the epoch: no barrier, one one-way trip.
 * A pull algorithm may read a rank's own buffers in place instead of its staging half (direct:
 * buffers the peers can reach): the rank publishes where they are before the first barrier (an
 * address between ranks of one process; a registered buffer's slot and offset, which each
 * reader translates through its table, between processes), and waits at the end until every
 * peer is done reading them. Reading a
 * peer's addresses costs a round trip after the barrier, so it happens only in calls where ranks
 * may lend (exchange, the same on every rank: large messages); otherwise every rank reads the
 * others' staging halves, whose addresses it knows.
 * Ranks are combined in rank order 0..n-1, in float32 for the 16-bit types, and rounded once,
 * so every algorithm gives the same bits on every rank and in every run.
 *
 * Why one barrier per phase is enough, with no reset between calls: block b of every rank
 * touches the same elements in every phase (the same grid-stride pattern), so the barrier of
 * block b alone orders them. A flag holds the epoch of the call that wrote it (monotonic,
 * compared modulo 2^32), so nothing is ever reset. A rank writes the half of parity e & 1 in
 * call e only after its kernel of call e - 1 ended, every block of it past a barrier of call
 * e - 1, which every peer reached only once its whole kernel of call e - 2, the last one to read
 * that half, had ended (a rank's kernels run one after the other on its stream). The epoch is
 * one per call, the same in every block: calls of different sizes have different grids, and an
 * epoch per block would let block b write a half in which another block of a peer still reads
 * the previous call's data. It lives in device memory: the last block of a call to finish
 * advances it, so a CUDA graph replays correctly (nothing of a call is a host value). The
 * argument above needs only this of call e - 1: every rank's kernel heard from every peer's
 * kernel of call e - 1 (a barrier, or pushed data), which holds for every algorithm; so calls of
 * different algorithms may follow each other.
 *
 * The push slots: rank q stores into slot [e & 1][q] of rank r's area in call e only after its
 * kernel of call e - 1 ended, which needed rank r's data of call e - 1, which r pushed only after
 * its kernel of call e - 2, the last to read that slot, had ended. A word is ready when its epoch
 * equals e: a slot of parity p only ever holds epochs of parity p, and starts filled with an epoch
 * of the other parity (kern_ctx.c), so nothing stale matches. (A line left unwritten for 2^31
 * calls of its parity would match again after the epochs wrap: the limit of a 32-bit epoch.)
 * A rank's buffers read in place: it publishes their addresses in slot [e & 1] before barrier 0,
 * and its kernel ends only after every peer said (barrier 2) that it is done reading them, so
 * the caller may reuse them at once; the addresses themselves are reused as the halves are.
 *
 * Bounded waits: a block that spins on a peer's flag looks, every 1024 polls, at the abort word
 * (host memory mapped into the device, set by mgcomm's abort and watchdog) and at the device's
 * global timer against the wait's timeout; it then records why in the host-mapped error word and
 * ends, so the GPU never hangs on a peer that does not come. The other blocks see the error word
 * and end too. Host memory is read only there: a read over PCIe costs a microsecond or more, and
 * one by every thread at the start of each call (tried) made an 8-byte all_reduce take 35 us.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/kern_abi.h"

namespace {

__device__ __forceinline__ void st_release(unsigned *p, unsigned v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

/* A 16-byte pack of float32 accumulators' worth of elements. */
typedef uint4 pack_t;

template <typename T> struct elem;
template <> struct elem<float> {
  static constexpr int per_pack = 4;
  __device__ static float get(const pack_t &p, int i) {
    return __uint_as_float((&p.x)[i]);
  }
  __device__ static void set(pack_t &p, int i, float v) { (&p.x)[i] = __float_as_uint(v); }
  __device__ static float load(const void *b, size_t i) { return ((const float *)b)[i]; }
  __device__ static void store(void *b, size_t i, float v) { ((float *)b)[i] = v; }
};
template <> struct elem<__half> {
  static constexpr int per_pack = 8;
  __device__ static float get(const pack_t &p, int i) {
    return __half2float(((const __half *)&p)[i]);
  }
  __device__ static void set(pack_t &p, int i, float v) { ((__half *)&p)[i] = __float2half_rn(v); }
  __device__ static float load(const void *b, size_t i) {
    return __half2float(((const __half *)b)[i]);
  }
  __device__ static void store(void *b, size_t i, float v) {
    ((__half *)b)[i] = __float2half_rn(v);
  }
};
template <> struct elem<__nv_bfloat16> {
  static constexpr int per_pack = 8;
  __device__ static float get(const pack_t &p, int i) {
    return __bfloat162float(((const __nv_bfloat16 *)&p)[i]);
  }
  __device__ static void set(pack_t &p, int i, float v) {
    ((__nv_bfloat16 *)&p)[i] = __float2bfloat16_rn(v);
  }
  __device__ static float load(const void *b, size_t i) {
    return __bfloat162float(((const __nv_bfloat16 *)b)[i]);
  }
  __device__ static void store(void *b, size_t i, float v) {
    ((__nv_bfloat16 *)b)[i] = __float2bfloat16_rn(v);
  }
};

/* a is the earlier ranks' value. max and min as the host backend's (host_reduce.c): a NaN wins
 * (the earlier one if both are), and of two equal values max takes the one without a sign bit,
 * min the one with it (max(-0, +0) = +0 in either order). fmaxf would drop the NaN. */
template <int OP> __device__ __forceinline__ float combine(float a, float b) {
  if (OP == MG_KERN_OP_MAX || OP == MG_KERN_OP_MIN) {
    const bool neg = signbit(a);
    float r = OP == MG_KERN_OP_MAX ? (a > b ? a : b) : (a < b ? a : b); /* b if either is NaN */
    r = a == b && (OP == MG_KERN_OP_MAX ? !neg : neg) ? a : r;
    return a != a ? a : r;
  }
  return a + b; /* sum and avg */
}

/* Elements of the user's buffers, and the packs they make. */
struct shape {
  size_t count;   /* elements */
  size_t packs;   /* ceil(count / per_pack) */
  int aligned;    /* send and recv are 16-byte aligned: whole packs move as one access */
};

/* Pack j of the user's input (elements past the end are zero). */
template <typename T>
__device__ __forceinline__ pack_t load_user(const void *src, size_t j, const shape &s) {
  constexpr int E = elem<T>::per_pack;
  if (s.aligned && (j + 1) * E <= s.count) return ((const pack_t *)src)[j];
  pack_t p = make_uint4(0, 0, 0, 0);
  for (int i = 0; i < E && j * E + i < s.count; i++)
    elem<T>::set(p, i, elem<T>::load(src, j * E + i));
  return p;
}

/* Writes pack j into the user's output, without touching elements past the end. */
template <typename T>
__device__ __forceinline__ void store_user(void *dst, size_t j, const pack_t &p, const shape &s) {
  constexpr int E = elem<T>::per_pack;
  if (s.aligned && (j + 1) * E <= s.count) {
    ((pack_t *)dst)[j] = p;
    return;
  }
  for (int i = 0; i < E && j * E + i < s.count; i++) elem<T>::store(dst, j * E + i, elem<T>::get(p, i));
}

/* Pack j of a rank's buffer as this rank reads it: a staging half holds whole packs; a buffer
 * lent in place (16-byte aligned, the launch's rule) ends at count, so its last pack is read
 * element by element (zero past the end). Around the L1 cache: a line cached in an earlier call
 * would be stale. */
template <typename T>
__device__ __forceinline__ pack_t load_peer(const void *src, bool lent, size_t j, size_t count) {
  constexpr int E = elem<T>::per_pack;
  if (!lent || (j + 1) * E <= count) return __ldcg((const pack_t *)src + j);
  pack_t p = make_uint4(0, 0, 0, 0);
  for (int i = 0; i < E && j * E + i < count; i++) {
    if (sizeof(T) == 4) (&p.x)[i] = __ldcg((const unsigned *)src + j * E + i);
    else ((unsigned short *)&p)[i] = __ldcg((const unsigned short *)src + j * E + i);
  }
  return p;
}

/* Where this rank reads each rank's input and reduced segments in one call (shared memory,
 * filled at barrier 0 from the pointers the ranks published). */
struct sources {
  const char *in[MG_KERN_MAX_RANKS];
  const char *out[MG_KERN_MAX_RANKS];
  bool lent[MG_KERN_MAX_RANKS];
};

/* Pack j of every rank, combined in rank order. Every rank's load is issued before the first
 * is used (a peer's load over NVLink takes a microsecond or so: one after the other, 8 ranks
 * would wait 8 times). */
template <typename T, int OP>
__device__ __forceinline__ pack_t reduce_pack(const mg_kern_args_t &a, const sources &src,
                                              size_t j) {
  constexpr int E = elem<T>::per_pack;
  pack_t p[MG_KERN_MAX_RANKS];
#pragma unroll
  for (int r = 0; r < MG_KERN_MAX_RANKS; r++)
    if (r < a.nranks) p[r] = load_peer<T>(src.in[r], src.lent[r], j, a.count);
  float acc[E];
  for (int i = 0; i < E; i++) acc[i] = elem<T>::get(p[0], i);
#pragma unroll
  for (int r = 1; r < MG_KERN_MAX_RANKS; r++)
    if (r < a.nranks)
      for (int i = 0; i < E; i++) acc[i] = combine<OP>(acc[i], elem<T>::get(p[r], i));
  if (OP == MG_KERN_OP_AVG)
    for (int i = 0; i < E; i++) acc[i] = acc[i] / (float)a.nranks;
  pack_t out;
  for (int i = 0; i < E; i++) elem<T>::set(out, i, acc[i]);
  return out;
}

/* Records why this rank gave up (the first reason stays) and tells the caller to end. */
__device__ void give_up(const mg_kern_args_t &a, int why) {
  atomicCAS((int *)a.error, 0, why);
  __threadfence_system();
}

/* One poll of a bounded wait, every 1024th of which looks at the abort word, the error word and
 * the timer (host memory is read only then: a read over PCIe costs a microsecond or more).
 * false once the wait must give up; the reason is then recorded. */
__device__ __forceinline__ bool still_waiting(const mg_kern_args_t &a, unsigned polls,
                                              unsigned long long &start) {
  if ((polls & 1023) != 0) return true;
  if (*(volatile int *)a.abort != 0 || *(volatile int *)a.error != 0) {
    give_up(a, MG_KERN_GAVE_UP_ABORT); /* keeps a block's earlier timeout as the reason */
    return false;
  }
  const unsigned long long now = global_ns();
  if (start == 0) start = now;
  if (now - start > a.timeout_ns) {
    give_up(a, MG_KERN_GAVE_UP_TIMEOUT);
    return false;
  }
  return true;
}

/* Where this rank reads a buffer that rank r published as `pub`: its address (ranks of one
 * process), or its registered slot's mapping here plus the offset (a rank of another process:
 * the table, in this rank's own area, filled when the buffer was registered). NULL when this
 * rank no longer maps it (the entry is 0: it deregistered the buffer, the owner did not). */
__device__ __forceinline__ const char *lent_at(const mg_kern_args_t &a, int r,
                                               unsigned long long pub) {
  if (!(pub & MG_KERN_PUB_REG)) return (const char *)pub;
  const unsigned slot = (unsigned)(pub >> MG_KERN_PUB_SLOT_SHIFT) & (MG_KERN_MAX_REGS - 1);
  const unsigned long long *table =
      (const unsigned long long *)((const char *)a.flags[a.rank] + MG_KERN_REG_OFF);
  const unsigned long long at = __ldcg(table + r * MG_KERN_MAX_REGS + slot);
  return at == 0 ? NULL : (const char *)at + (pub & MG_KERN_PUB_OFFSET_MASK);
}

/* The barrier of `phase` for this block in call e: tell every rank that this block of this rank
 * arrived (only the ranks that lent their buffers, when tell is not NULL), then (when wait)
 * wait until every rank's block arrived. Thread r < nranks handles rank r; at phase 0 it also
 * reads where rank r lent its buffers into src. false when the wait gave up (abort, timeout),
 * or when rank r lent a buffer this rank no longer maps. */
__device__ bool barrier(const mg_kern_args_t &a, int phase, unsigned e, bool wait,
                        sources *src, const bool *tell = NULL) {
  __shared__ int failed;
  if (threadIdx.x == 0) failed = 0;
  __syncthreads(); /* this block's stores of the phase happen before the flag (release) */
  const int r = threadIdx.x;
  if (r < a.nranks) {
    const size_t slot = ((size_t)phase * MG_KERN_MAX_BLOCKS + blockIdx.x) * MG_KERN_MAX_RANKS;
    if (tell == NULL || tell[r]) st_release(a.flags[r] + slot + a.rank, e);
    const unsigned *mine = a.flags[a.rank] + slot + r;
    unsigned long long start = 0;
    for (unsigned polls = 1; wait && (int)(ld_acquire(mine) - e) < 0; polls++)
      if (!still_waiting(a, polls, start)) {
        failed = 1;
        break;
      }
    if (src != NULL && !failed && !a.exchange) { /* nobody lends: every rank's staging half */
      src->lent[r] = false;
      src->in[r] = src->out[r] = (const char *)a.stage[r] + ((e & 1) ? a.half_bytes : 0);
    } else if (src != NULL && !failed) {
      const unsigned long long *pub =
          (const unsigned long long *)((const char *)a.flags[r] + MG_KERN_PTR_OFF) + 2 * (e & 1);
      const unsigned long long in = __ldcg(pub), out = __ldcg(pub + 1);
      const char *half = (const char *)a.stage[r] + ((e & 1) ? a.half_bytes : 0);
      src->lent[r] = in != 0;
      src->in[r] = in != 0 ? lent_at(a, r, in) : half;
      src->out[r] = in != 0 ? lent_at(a, r, out) : half;
      if (src->in[r] == NULL || src->out[r] == NULL) { /* never read through it */
        give_up(a, MG_KERN_GAVE_UP_UNMAPPED);
        failed = 1;
      }
    }
  }
  __syncthreads();
  return failed == 0;
}

/* The end of every kernel: the last block to finish advances the epoch. Every block of the call
 * read it before: that one is the last to finish, after every other block started. */
__device__ void finish(const mg_kern_args_t &a, unsigned e) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence(); /* this block's read of the epoch happens before the count below */
    if (atomicAdd(&a.counter[MG_KERN_FINISHED], 1u) == gridDim.x - 1) {
      a.counter[MG_KERN_FINISHED] = 0;
      a.counter[MG_KERN_EPOCH] = e; /* the next call is ordered after this kernel's end */
    }
  }
}

__device__ unsigned call_epoch(const mg_kern_args_t &a) {
  __shared__ unsigned epoch;
  if (threadIdx.x == 0) epoch = a.counter[MG_KERN_EPOCH] + 1;
  __syncthreads();
  return epoch;
}

/* Packs a thread moves at once in the all-gather and the copy in: their loads are all issued
 * before the first store, so that more of them are in flight (a peer's load is a round trip). */
#define MG_KERN_UNROLL 4

/* dst[lo + j] = src[lo + j] for this thread's j < len, MG_KERN_UNROLL loads before the stores. */
template <typename T, typename LOAD, typename STORE>
__device__ __forceinline__ void move(size_t len, size_t first, size_t stride, LOAD load,
                                     STORE store) {
  size_t j = first;
  for (; j + (MG_KERN_UNROLL - 1) * stride < len; j += MG_KERN_UNROLL * stride) {
    pack_t p[MG_KERN_UNROLL];
#pragma unroll
    for (int u = 0; u < MG_KERN_UNROLL; u++) p[u] = load(j + u * stride);
#pragma unroll
    for (int u = 0; u < MG_KERN_UNROLL; u++) store(j + u * stride, p[u]);
  }
  for (; j < len; j += stride) store(j, load(j));
}

template <typename T, int OP, int TWO_SHOT> __device__ void all_reduce(const mg_kern_args_t &a) {
  constexpr int E = elem<T>::per_pack;
  __shared__ sources src;
  const unsigned e = call_epoch(a);
  const size_t half_off = (e & 1) ? a.half_bytes : 0;
  shape s;
  s.count = a.count;
  s.packs = (a.count + E - 1) / E;
  s.aligned = ((uintptr_t)a.send % 16 == 0) && ((uintptr_t)a.recv % 16 == 0);
  const int n = TWO_SHOT ? a.nranks : 1;
  const size_t seg = (s.packs + n - 1) / n; /* packs per segment */
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  pack_t *own = (pack_t *)((char *)a.stage[a.rank] + half_off);

  if (a.direct) {
    /* Lend send and recv: the peers read them where they are (every block publishes the same
     * values, before its barrier's release). */
    if (threadIdx.x == 0) {
      unsigned long long *pub =
          (unsigned long long *)((char *)a.flags[a.rank] + MG_KERN_PTR_OFF) + 2 * (e & 1);
      pub[0] = a.pub[0];
      pub[1] = a.pub[1];
    }
  } else {
    if (threadIdx.x == 0 && a.exchange) /* "read my staging half" */
      ((unsigned long long *)((char *)a.flags[a.rank] + MG_KERN_PTR_OFF))[2 * (e & 1)] = 0;
    /* Copy in: this block's packs of every segment. */
    for (int g = 0; g < n; g++) {
      const size_t lo = g * seg, len = lo < s.packs ? min(seg, s.packs - lo) : 0;
      move<T>(len, first, stride, [&](size_t j) { return load_user<T>(a.send, lo + j, s); },
              [&](size_t j, const pack_t &p) { own[lo + j] = p; });
    }
  }
  if (!barrier(a, 0, e, true, &src)) return;

  if (!TWO_SHOT) {
    for (size_t j = first; j < s.packs; j += stride)
      store_user<T>(a.recv, j, reduce_pack<T, OP>(a, src, j), s);
  } else {
    const size_t lo = a.rank * seg, len = lo < s.packs ? min(seg, s.packs - lo) : 0;
    for (size_t j = first; j < len; j += stride) {
      const pack_t p = reduce_pack<T, OP>(a, src, lo + j);
      if (!a.direct) own[lo + j] = p; /* where the peers gather it from; else from recv */
      store_user<T>(a.recv, lo + j, p, s);
    }
    if (!barrier(a, 1, e, true, NULL)) return;
    for (int d = 1; d < n; d++) {
      const int g = (a.rank + d) % n; /* spread the readers over the owners */
      const size_t glo = g * seg, glen = glo < s.packs ? min(seg, s.packs - glo) : 0;
      const char *from = src.out[g];
      const bool lent = src.lent[g];
      move<T>(glen, first, stride,
              [&](size_t j) { return load_peer<T>(from, lent, glo + j, a.count); },
              [&](size_t j, const pack_t &p) { store_user<T>(a.recv, glo + j, p, s); });
    }
  }
  /* Done reading the peers: tell those that lent their buffers, which wait for every peer to
   * say so. Skipped when no rank lent (src is the same in the whole block; never without
   * exchange). */
  bool any = false;
  for (int r = 0; r < a.nranks; r++) any = any || src.lent[r];
  if (any && !barrier(a, 2, e, a.direct != 0, NULL, src.lent)) return;
  finish(a, e);
}

/* ---- push ("LL") ---------------------------------------------------------------------------- */

/* 8 bytes of the user's buffer: line i of the message (elements past the end are zero). */
template <typename T>
__device__ __forceinline__ uint2 load_line(const void *src, size_t i, size_t count) {
  constexpr int E = 8 / (int)sizeof(T);
  if ((uintptr_t)src % 8 == 0 && (i + 1) * E <= count) return ((const uint2 *)src)[i];
  uint2 v = make_uint2(0, 0);
  for (int k = 0; k < E && i * E + k < count; k++) {
    if (sizeof(T) == 4) (&v.x)[k] = ((const unsigned *)src)[i * E + k];
    else ((unsigned short *)&v)[k] = ((const unsigned short *)src)[i * E + k];
  }
  return v;
}

template <typename T> __device__ __forceinline__ float line_get(const uint2 &v, int k) {
  pack_t p = make_uint4(v.x, v.y, 0, 0);
  return elem<T>::get(p, k);
}

template <typename T, int OP> __device__ void all_reduce_ll(const mg_kern_args_t &a) {
  constexpr int E = 8 / (int)sizeof(T); /* elements of a line */
  const unsigned e = call_epoch(a);
  const size_t lines = (a.count + E - 1) / E;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  /* Slot [e & 1][sender] of rank q's push area, as this rank maps it. */
  auto slot = [&](int q, int sender) {
    return (uint4 *)((char *)a.flags[q] + MG_KERN_LL_OFF +
                     ((size_t)(e & 1) * a.nranks + sender) * a.ll_slot);
  };
  __shared__ int failed;
  if (threadIdx.x == 0) failed = 0;
  __syncthreads();
  bool ok = true;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; ok && i < lines; i += stride) {
    const uint2 mine = load_line<T>(a.send, i, a.count);
    /* The epoch in each 8-byte half: a half is written whole, so its data is there when its
     * epoch is. */
    const uint4 line = make_uint4(mine.x, e, mine.y, e);
    for (int d = 1; d < a.nranks; d++) {
      uint4 *to = slot((a.rank + d) % a.nranks, a.rank) + i;
      asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(to), "r"(line.x),
                   "r"(line.y), "r"(line.z), "r"(line.w) : "memory");
    }
    float acc[E];
    for (int q = 0; q < a.nranks && ok; q++) {
      uint2 v = mine;
      if (q != a.rank) {
        const uint4 *from = slot(a.rank, q) + i;
        uint4 got;
        unsigned long long start = 0;
        for (unsigned polls = 1;; polls++) {
          asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                       : "=r"(got.x), "=r"(got.y), "=r"(got.z), "=r"(got.w) : "l"(from)
                       : "memory");
          if (got.y == e && got.w == e) break;
          if (!still_waiting(a, polls, start)) {
            ok = false;
            break;
          }
        }
        v = make_uint2(got.x, got.z);
      }
      for (int k = 0; k < E; k++)
        acc[k] = q == 0 ? line_get<T>(v, k) : combine<OP>(acc[k], line_get<T>(v, k));
    }
    if (!ok) break;
    if (OP == MG_KERN_OP_AVG)
      for (int k = 0; k < E; k++) acc[k] = acc[k] / (float)a.nranks;
    if ((uintptr_t)a.recv % 8 == 0 && (i + 1) * E <= a.count) {
      pack_t p = make_uint4(0, 0, 0, 0);
      for (int k = 0; k < E; k++) elem<T>::set(p, k, acc[k]);
      ((uint2 *)a.recv)[i] = make_uint2(p.x, p.y);
    } else {
      for (int k = 0; k < E && i * E + k < a.count; k++) elem<T>::store(a.recv, i * E + k, acc[k]);
    }
  }
  if (!ok) failed = 1;
  __syncthreads();
  if (failed) return;
  finish(a, e);
}

}  // namespace

/* One entry point per algorithm, dtype and op, named mg_ar_<algo>_<dtype>_<op> (kern_module.c
 * looks them up by these names). two: 0 one-shot, 1 two-shot, 2 push. */
#define MG_KERN_ENTRY(algo, two, tname, T, oname, OP)                                          \
  extern "C" __global__ void __launch_bounds__(MG_KERN_THREADS, 2)                              \
      mg_ar_##algo##_##tname##_##oname(const mg_kern_args_t a) {                               \
    if constexpr (two == 2) all_reduce_ll<T, OP>(a);                                           \
    else all_reduce<T, OP, two>(a);                                                            \
  }
#define MG_KERN_OPS(algo, two, tname, T)                                                       \
  MG_KERN_ENTRY(algo, two, tname, T, sum, MG_KERN_OP_SUM)                                      \
  MG_KERN_ENTRY(algo, two, tname, T, avg, MG_KERN_OP_AVG)                                      \
  MG_KERN_ENTRY(algo, two, tname, T, max, MG_KERN_OP_MAX)                                      \
  MG_KERN_ENTRY(algo, two, tname, T, min, MG_KERN_OP_MIN)
#define MG_KERN_TYPES(algo, two)                                                               \
  MG_KERN_OPS(algo, two, f32, float)                                                           \
  MG_KERN_OPS(algo, two, f16, __half)                                                          \
  MG_KERN_OPS(algo, two, bf16, __nv_bfloat16)

MG_KERN_TYPES(oneshot, 0)
MG_KERN_TYPES(twoshot, 1)
MG_KERN_TYPES(ll, 2)
