/*
 * sim_mem.c -- memory of the simulated CUDA driver: "device" memory is host memory from
 * posix_memalign, kept in a registry of ranges (base, size, kind, context) so that pointer
 * queries answer as the driver's do, and copies that CUDA orders on streams are stream items.
 *
 * Sizes are never rounded up (the driver rounds to its granularity): an operation that runs
 * past what was asked for then shows up under AddressSanitizer. Frees do not wait for the
 * device (cudaFree would): work still using the memory reads freed memory, which ASan reports
 * as the caller's bug.
 *
 * Divisions: the registry; allocation and free; pointer queries; copies and memset.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sim_cuda_int.h"

/* ---- the registry -------------------------------------------------------------------------- */

static pthread_mutex_t sim_mem_lock = PTHREAD_MUTEX_INITIALIZER; /* leaf */
static sim_alloc_t *sim_mem;  /* sorted by base; under sim_mem_lock */
static int sim_mem_n, sim_mem_cap;

/* Index of the first allocation whose base is > p; under the lock. */
static int sim_mem_upper(uintptr_t p) {
  int lo = 0, hi = sim_mem_n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (sim_mem[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int sim_mem_add(const sim_alloc_t *a) {
  pthread_mutex_lock(&sim_mem_lock);
  if (sim_mem_n == sim_mem_cap) {
    int cap = sim_mem_cap ? 2 * sim_mem_cap : 64;
    sim_alloc_t *m = realloc(sim_mem, sizeof *m * (size_t)cap);
    if (m == NULL) {
      pthread_mutex_unlock(&sim_mem_lock);
      return -1;
    }
    sim_mem = m;
    sim_mem_cap = cap;
  }
  int at = sim_mem_upper(a->base);
  memmove(&sim_mem[at + 1], &sim_mem[at], sizeof *sim_mem * (size_t)(sim_mem_n - at));
  sim_mem[at] = *a;
  sim_mem_n++;
  pthread_mutex_unlock(&sim_mem_lock);
  return 0;
}

int sim_mem_find(uintptr_t p, sim_alloc_t *out) {
  pthread_mutex_lock(&sim_mem_lock);
  int at = sim_mem_upper(p) - 1;
  int found = at >= 0 && p - sim_mem[at].base < sim_mem[at].size;
  if (found) *out = sim_mem[at];
  pthread_mutex_unlock(&sim_mem_lock);
  return found;
}

int sim_mem_count(void) {
  pthread_mutex_lock(&sim_mem_lock);
  int n = sim_mem_n;
  pthread_mutex_unlock(&sim_mem_lock);
  return n;
}

/* Takes the allocation that starts at p out of the registry if its kind is `kind`.
 * CUDA_ERROR_INVALID_VALUE for a pointer that is not the start of such an allocation (freed
 * already, never allocated, an interior pointer, another kind). */
static mg__CUresult sim_mem_take(uintptr_t p, int kind) {
  mg__CUresult r = MG__CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim_mem_lock);
  int at = sim_mem_upper(p) - 1;
  if (at >= 0 && sim_mem[at].base == p && sim_mem[at].kind == kind) {
    memmove(&sim_mem[at], &sim_mem[at + 1], sizeof *sim_mem * (size_t)(sim_mem_n - at - 1));
    sim_mem_n--;
    r = MG__CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&sim_mem_lock);
  return r;
}

/* ---- allocation and free -------------------------------------------------------------------- */

#define SIM_ALIGN 256 /* what cuMemAlloc guarantees */

static mg__CUresult sim_alloc(mg__CUcontext ctx, size_t bytes, int kind, void **out) {
  if (bytes == 0) return MG__CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (posix_memalign(&p, SIM_ALIGN, bytes) != 0) return MG__CUDA_ERROR_OUT_OF_MEMORY;
  sim_alloc_t a = {(uintptr_t)p, bytes, kind, ctx};
  if (sim_mem_add(&a) != 0) {
    free(p);
    return MG__CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = p;
  return MG__CUDA_SUCCESS;
}

static mg__CUresult sim_free(uintptr_t p, int kind) {
  mg__CUresult r = sim_mem_take(p, kind);
  if (r == MG__CUDA_SUCCESS) free((void *)p);
  return r;
}

#define SIM_ENTER(call)                                   \
  do {                                                    \
    mg__CUresult sim_r_ = sim_cu_enter(call);             \
    if (sim_r_ != MG__CUDA_SUCCESS) return sim_r_;        \
  } while (0)

MGSIM_API mg__CUresult cuMemAlloc_v2(mg__CUdeviceptr *ptr, size_t bytes) {
  SIM_ENTER("cuMemAlloc_v2");
  if (ptr == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  mg__CUcontext ctx = NULL;
  mg__CUresult r = sim_cu_active(&ctx);
  void *p = NULL;
  if (r == MG__CUDA_SUCCESS) r = sim_alloc(ctx, bytes, SIM_MEM_DEVICE, &p);
  if (r == MG__CUDA_SUCCESS) *ptr = (mg__CUdeviceptr)(uintptr_t)p;
  return r;
}

MGSIM_API mg__CUresult cuMemAllocManaged(mg__CUdeviceptr *ptr, size_t bytes, unsigned int flags) {
  SIM_ENTER("cuMemAllocManaged");
  /* CU_MEM_ATTACH_GLOBAL (1) or CU_MEM_ATTACH_HOST (2), exactly one. */
  if (ptr == NULL || (flags != MG__CU_MEM_ATTACH_GLOBAL && flags != 2))
    return MG__CUDA_ERROR_INVALID_VALUE;
  mg__CUcontext ctx = NULL;
  mg__CUresult r = sim_cu_active(&ctx);
  void *p = NULL;
  if (r == MG__CUDA_SUCCESS) r = sim_alloc(ctx, bytes, SIM_MEM_MANAGED, &p);
  if (r == MG__CUDA_SUCCESS) *ptr = (mg__CUdeviceptr)(uintptr_t)p;
  return r;
}

MGSIM_API mg__CUresult cuMemAllocHost_v2(void **ptr, size_t bytes) {
  SIM_ENTER("cuMemAllocHost_v2");
  if (ptr == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  mg__CUcontext ctx = NULL;
  mg__CUresult r = sim_cu_active(&ctx);
  if (r == MG__CUDA_SUCCESS) r = sim_alloc(ctx, bytes, SIM_MEM_HOST, ptr);
  return r;
}

MGSIM_API mg__CUresult cuMemFree_v2(mg__CUdeviceptr ptr) {
  SIM_ENTER("cuMemFree_v2");
  if (ptr == 0) return MG__CUDA_SUCCESS;
  sim_alloc_t a;
  /* Device and managed memory; VMM memory (ncclMemAlloc's) is refused, as by the driver. */
  if (sim_mem_find((uintptr_t)ptr, &a) && a.base == (uintptr_t)ptr && a.kind == SIM_MEM_MANAGED)
    return sim_free((uintptr_t)ptr, SIM_MEM_MANAGED);
  return sim_free((uintptr_t)ptr, SIM_MEM_DEVICE);
}

MGSIM_API mg__CUresult cuMemFreeHost(void *ptr) {
  SIM_ENTER("cuMemFreeHost");
  return sim_free((uintptr_t)ptr, SIM_MEM_HOST);
}

MGSIM_API mg__CUresult mgsim_mem_alloc_vmm(mg__CUcontext ctx, void **ptr, size_t bytes) {
  if (ptr == NULL || sim_cu_ctx_check(ctx) == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  return sim_alloc(ctx, bytes, SIM_MEM_VMM, ptr);
}

MGSIM_API mg__CUresult mgsim_mem_free_vmm(void *ptr) {
  return sim_free((uintptr_t)ptr, SIM_MEM_VMM);
}

/* ---- pointer queries ------------------------------------------------------------------------ */

/* Writes one attribute of [found ? a : nothing] into data, with the type the driver writes.
 * CUDA_ERROR_INVALID_VALUE for an attribute this driver does not know. */
static mg__CUresult sim_ptr_attr(mg__CUpointer_attribute attr, void *data, int found,
                                 const sim_alloc_t *a, uintptr_t p) {
  const int dev_side = found && a->kind != SIM_MEM_HOST;
  const int host_side = found && (a->kind == SIM_MEM_HOST || a->kind == SIM_MEM_MANAGED);
  switch (attr) {
    case MG__CU_POINTER_ATTRIBUTE_CONTEXT:
      *(mg__CUcontext *)data = found ? a->ctx : NULL;
      break;
    case MG__CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      /* Managed memory is reported as device memory with IS_MANAGED set. */
      *(unsigned int *)data =
          !found ? 0u : a->kind == SIM_MEM_HOST ? MG__CU_MEMORYTYPE_HOST : MG__CU_MEMORYTYPE_DEVICE;
      break;
    case MG__CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *(mg__CUdeviceptr *)data = found ? (mg__CUdeviceptr)p : 0; /* unified addressing */
      break;
    case MG__CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *(void **)data = host_side ? (void *)p : NULL;
      break;
    case MG__CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *(bool *)data = found && a->kind == SIM_MEM_MANAGED; /* a bool: one byte is written */
      break;
    case MG__CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      /* -2 names no device, as cudaPointerGetAttributes reports for memory CUDA does not know */
      *(int *)data = found ? a->ctx->device : -2;
      break;
    case MG__CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *(mg__CUdeviceptr *)data = found ? (mg__CUdeviceptr)a->base : 0;
      break;
    case MG__CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *(size_t *)data = found ? a->size : 0;
      break;
    case MG__CU_POINTER_ATTRIBUTE_MAPPED:
      *(bool *)data = dev_side || host_side;
      break;
    case MG__CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: /* cuMemAlloc's, not cuMem's */
      *(bool *)data = found && a->kind == SIM_MEM_DEVICE;
      break;
    default:
      return MG__CUDA_ERROR_INVALID_VALUE;
  }
  return MG__CUDA_SUCCESS;
}

/* As the driver documents for this call (unlike cuPointerGetAttribute): memory it does not know
 * is not an error; every attribute gets its "nothing" value and CUDA_SUCCESS is returned. */
MGSIM_API mg__CUresult cuPointerGetAttributes(unsigned int n, mg__CUpointer_attribute *attributes,
                                              void **data, mg__CUdeviceptr ptr) {
  SIM_ENTER("cuPointerGetAttributes");
  if (n == 0 || attributes == NULL || data == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
  sim_alloc_t a;
  const uintptr_t p = (uintptr_t)ptr;
  const int found = sim_mem_find(p, &a);
  for (unsigned int i = 0; i < n; i++) {
    if (data[i] == NULL) return MG__CUDA_ERROR_INVALID_VALUE;
    mg__CUresult r = sim_ptr_attr(attributes[i], data[i], found, &a, p);
    if (r != MG__CUDA_SUCCESS) return r;
  }
  return MG__CUDA_SUCCESS;
}

MGSIM_API mg__CUresult cuMemGetAddressRange_v2(mg__CUdeviceptr *base, size_t *size,
                                               mg__CUdeviceptr ptr) {
  SIM_ENTER("cuMemGetAddressRange_v2");
  sim_alloc_t a;
  /* Only memory allocated on a device has a range; pinned host memory and memory CUDA does not
   * know are CUDA_ERROR_INVALID_VALUE here. Either output may be NULL. */
  if (!sim_mem_find((uintptr_t)ptr, &a) || a.kind == SIM_MEM_HOST)
    return MG__CUDA_ERROR_INVALID_VALUE;
  if (base != NULL) *base = (mg__CUdeviceptr)a.base;
  if (size != NULL) *size = a.size;
  return MG__CUDA_SUCCESS;
}

/* ---- copies and memset ---------------------------------------------------------------------- */

/* [p, p + bytes) as one side of a copy: inside an allocation it must fit in it; elsewhere it is
 * pageable host memory, which must_be_cuda refuses. 1 for CUDA memory, 0 for pageable memory,
 * -1 when it is refused. */
static int sim_side(uintptr_t p, size_t bytes, int must_be_cuda) {
  sim_alloc_t a;
  if (!sim_mem_find(p, &a)) return must_be_cuda ? -1 : 0;
  return bytes <= a.size - (p - a.base) ? 1 : -1;
}

typedef struct {
  void *dst;
  const void *src;
  size_t bytes;
  void *staged;   /* the copy of pageable source memory it reads, freed when done */
  int set;        /* memset: dst = value */
  unsigned char value;
  int corrupt;    /* MGSIM_PEER_CORRUPT: flip the first byte written */
} sim_copy_t;

static void sim_copy_run(void *arg) {
  sim_copy_t *c = arg;
  if (c->set)
    memset(c->dst, c->value, c->bytes);
  else
    memcpy(c->dst, c->src, c->bytes); /* never overlapping: ASan says so when they do */
  if (c->corrupt) *(unsigned char *)c->dst ^= 0xff;
  free(c->staged);
  free(c);
}

/* Queues the copy (or memset) on stream, with CUDA's host synchronisation: pageable source
 * memory is staged before the call returns; a copy into pageable memory, and a synchronous
 * call (sync), returns when the copy is done. */
static mg__CUresult sim_copy(uintptr_t dst, uintptr_t src, size_t bytes, int dst_cuda,
                             int src_cuda, int set, unsigned char value, mg__CUstream stream,
                             int sync, int corrupt) {
  const int ds = sim_side(dst, bytes, dst_cuda);
  const int ss = set ? 1 : sim_side(src, bytes, src_cuda);
  if (ds < 0 || ss < 0) return MG__CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0) return MG__CUDA_SUCCESS;
  sim_copy_t *c = calloc(1, sizeof *c);
  if (c == NULL) return MG__CUDA_ERROR_OUT_OF_MEMORY;
  c->dst = (void *)dst;
  c->src = (const void *)src;
  c->bytes = bytes;
  c->set = set;
  c->value = value;
  c->corrupt = corrupt;
  if (!set && ss == 0 && !sync) {
    c->staged = malloc(bytes);
    if (c->staged == NULL) {
      free(c);
      return MG__CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(c->staged, c->src, bytes);
    c->src = c->staged;
  }
  if (sync || ds == 0) return sim_stream_run_sync(stream, sim_copy_run, c);
  mg__CUresult r = mgsim_stream_enqueue(stream, NULL, sim_copy_run, c);
  if (r != MG__CUDA_SUCCESS) {
    free(c->staged);
    free(c);
  }
  return r;
}

/* The synchronous calls run on the current context's default stream, behind its work, as the
 * driver's do; they need a current context. */
static mg__CUresult sim_copy_sync(uintptr_t dst, uintptr_t src, size_t bytes, int dst_cuda,
                                  int src_cuda, int set, unsigned char value) {
  mg__CUcontext ctx = NULL;
  mg__CUresult r = sim_cu_active(&ctx);
  if (r != MG__CUDA_SUCCESS) return r;
  return sim_copy(dst, src, bytes, dst_cuda, src_cuda, set, value, NULL, 1, 0);
}

MGSIM_API mg__CUresult cuMemcpy(mg__CUdeviceptr dst, mg__CUdeviceptr src, size_t bytes) {
  SIM_ENTER("cuMemcpy");
  return sim_copy_sync((uintptr_t)dst, (uintptr_t)src, bytes, 0, 0, 0, 0);
}

MGSIM_API mg__CUresult cuMemcpyHtoD_v2(mg__CUdeviceptr dst, const void *src, size_t bytes) {
  SIM_ENTER("cuMemcpyHtoD_v2");
  return sim_copy_sync((uintptr_t)dst, (uintptr_t)src, bytes, 1, 0, 0, 0);
}

MGSIM_API mg__CUresult cuMemcpyDtoH_v2(void *dst, mg__CUdeviceptr src, size_t bytes) {
  SIM_ENTER("cuMemcpyDtoH_v2");
  return sim_copy_sync((uintptr_t)dst, (uintptr_t)src, bytes, 0, 1, 0, 0);
}

MGSIM_API mg__CUresult cuMemsetD8_v2(mg__CUdeviceptr dst, unsigned char value, size_t n) {
  SIM_ENTER("cuMemsetD8_v2");
  return sim_copy_sync((uintptr_t)dst, 0, n, 1, 0, 1, value);
}

MGSIM_API mg__CUresult cuMemcpyAsync(mg__CUdeviceptr dst, mg__CUdeviceptr src, size_t bytes,
                                     mg__CUstream stream) {
  SIM_ENTER("cuMemcpyAsync");
  return sim_copy((uintptr_t)dst, (uintptr_t)src, bytes, 0, 0, 0, 0, stream, 0, 0);
}

MGSIM_API mg__CUresult cuMemcpyPeerAsync(mg__CUdeviceptr dst, mg__CUcontext dst_ctx,
                                         mg__CUdeviceptr src, mg__CUcontext src_ctx, size_t bytes,
                                         mg__CUstream stream) {
  SIM_ENTER("cuMemcpyPeerAsync");
  if (sim_cu_ctx_check(dst_ctx) == NULL || sim_cu_ctx_check(src_ctx) == NULL)
    return MG__CUDA_ERROR_INVALID_CONTEXT;
  const int a = src_ctx->device, b = dst_ctx->device;
  if (sim_cu_peer_knob(SIM_PEER_COPY_FAIL, a, b)) return MG__CUDA_ERROR_UNKNOWN;
  const int corrupt =
      a != b && sim_cu_peer_enabled(a, b) && sim_cu_peer_knob(SIM_PEER_CORRUPT, a, b);
  return sim_copy((uintptr_t)dst, (uintptr_t)src, bytes, 1, 1, 0, 0, stream, 0, corrupt);
}
