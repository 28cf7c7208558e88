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
 * Ranks are combined in rank order 0..n-1, in float32 for the 16-bit types, and rounded once,
 * so both algorithms give the same bits on every rank and in every run.
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
 * advances it, so a CUDA graph replays correctly (nothing of a call is a host value).
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

template <int OP> __device__ __forceinline__ float combine(float a, float b) {
  if (OP == MG_KERN_OP_MAX) return fmaxf(a, b);
  if (OP == MG_KERN_OP_MIN) return fminf(a, b);
  return a + b; /* sum and avg */
}

/* Bytes of one half, elements of the user's buffers, and the packs they make. */
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

/* Pack j of every rank, combined in rank order. Every rank's load is issued before the first
 * is used (a peer's load over NVLink takes a microsecond or so: one after the other, 8 ranks
 * would wait 8 times). Peers' memory is read around the L1 cache: a line cached in an earlier
 * call of the same parity would be stale. */
template <typename T, int OP>
__device__ __forceinline__ pack_t reduce_pack(const mg_kern_args_t &a, size_t half_off, size_t j) {
  constexpr int E = elem<T>::per_pack;
  pack_t p[MG_KERN_MAX_RANKS];
#pragma unroll
  for (int r = 0; r < MG_KERN_MAX_RANKS; r++)
    if (r < a.nranks) p[r] = __ldcg((const pack_t *)((const char *)a.stage[r] + half_off) + j);
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

/* The barrier of `phase` for this block in call e: tell every rank that this block of this rank
 * arrived, then wait until every rank's block arrived. Thread r < nranks handles rank r. 0 when
 * the wait gave up (abort, or timeout). */
__device__ bool barrier(const mg_kern_args_t &a, int phase, unsigned e) {
  __shared__ int failed;
  if (threadIdx.x == 0) failed = 0;
  __syncthreads(); /* this block's stores of the phase happen before the flag (release) */
  const int r = threadIdx.x;
  if (r < a.nranks) {
    const size_t slot = ((size_t)phase * MG_KERN_MAX_BLOCKS + blockIdx.x) * MG_KERN_MAX_RANKS;
    st_release(a.flags[r] + slot + a.rank, e);
    const unsigned *mine = a.flags[a.rank] + slot + r;
    unsigned long long start = 0;
    for (unsigned polls = 1; (int)(ld_acquire(mine) - e) < 0; polls++) {
      if ((polls & 1023) != 0) continue;
      if (*(volatile int *)a.abort != 0 || *(volatile int *)a.error != 0) {
        give_up(a, MG_KERN_GAVE_UP_ABORT); /* keeps a block's earlier timeout as the reason */
        failed = 1;
        break;
      }
      const unsigned long long now = global_ns();
      if (start == 0) start = now;
      if (now - start > a.timeout_ns) {
        give_up(a, MG_KERN_GAVE_UP_TIMEOUT);
        failed = 1;
        break;
      }
    }
  }
  __syncthreads();
  return failed == 0;
}

template <typename T, int OP, int TWO_SHOT> __device__ void all_reduce(const mg_kern_args_t &a) {
  constexpr int E = elem<T>::per_pack;
  __shared__ unsigned epoch;
  /* Every block of the call reads it before the last one advances it: that one is the last to
   * finish, after every other block started. */
  if (threadIdx.x == 0) epoch = a.counter[MG_KERN_EPOCH] + 1;
  __syncthreads();
  const unsigned e = epoch;
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

  /* Copy in: this block's packs of every segment. */
  for (int g = 0; g < n; g++) {
    const size_t lo = g * seg, len = lo < s.packs ? min(seg, s.packs - lo) : 0;
    for (size_t j = first; j < len; j += stride) own[lo + j] = load_user<T>(a.send, lo + j, s);
  }
  if (!barrier(a, 0, e)) return;

  if (!TWO_SHOT) {
    for (size_t j = first; j < s.packs; j += stride)
      store_user<T>(a.recv, j, reduce_pack<T, OP>(a, half_off, j), s);
  } else {
    const size_t lo = a.rank * seg, len = lo < s.packs ? min(seg, s.packs - lo) : 0;
    for (size_t j = first; j < len; j += stride) {
      const pack_t p = reduce_pack<T, OP>(a, half_off, lo + j);
      own[lo + j] = p; /* where the peers gather it from */
      store_user<T>(a.recv, lo + j, p, s);
    }
    if (!barrier(a, 1, e)) return;
    for (int d = 1; d < n; d++) {
      const int g = (a.rank + d) % n; /* spread the readers over the owners */
      const size_t glo = g * seg, glen = glo < s.packs ? min(seg, s.packs - glo) : 0;
      const pack_t *peer = (const pack_t *)((const char *)a.stage[g] + half_off);
      for (size_t j = first; j < glen; j += stride)
        store_user<T>(a.recv, glo + j, __ldcg(peer + glo + j), s);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence(); /* this block's read of the epoch happens before the count below */
    if (atomicAdd(&a.counter[MG_KERN_FINISHED], 1u) == gridDim.x - 1) {
      a.counter[MG_KERN_FINISHED] = 0;
      a.counter[MG_KERN_EPOCH] = e; /* the next call is ordered after this kernel's end */
    }
  }
}

}  // namespace

/* One entry point per algorithm, dtype and op, named mg_ar_<algo>_<dtype>_<op> (kern_module.c
 * looks them up by these names). */
#define MG_KERN_ENTRY(algo, two, tname, T, oname, OP)                                          \
  extern "C" __global__ void __launch_bounds__(MG_KERN_THREADS, 2)                              \
      mg_ar_##algo##_##tname##_##oname(const mg_kern_args_t a) {                               \
    all_reduce<T, OP, two>(a);                                                                 \
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
