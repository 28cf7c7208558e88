/*
 * heap.c -- symmetric allocations: mg_shmem_malloc, _calloc, _align and _free, each compared
 * between the PEs first (agree.c), and the record of live allocations (sorted by address) that
 * every put and get checks its symmetric side against.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "shmem/shmem.h"

/* Index of the first allocation whose base is above p. */
static int mg__heap_upper(uintptr_t p) {
  int lo = 0, hi = mg__shmem.nallocs;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (mg__shmem.allocs[mid].base <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The live allocation holding address p, or -1. */
static int mg__heap_find(uintptr_t p) {
  int i = mg__heap_upper(p) - 1;
  if (i < 0) return -1;
  const mg__shmem_alloc_t *a = &mg__shmem.allocs[i];
  return p - a->base < a->bytes ? i : -1;
}

mg_status_t mg__shmem_check_symmetric(const void *p, size_t bytes, const char *fn,
                                      const char *arg) {
  if (bytes == 0) return MG_OK;
  if (p == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, arg);
  uintptr_t u = (uintptr_t)p;
  int i = mg__heap_find(u);
  if (i < 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %s (%p) is not symmetric: it is in no live allocation of "
                     "mg_shmem_malloc, mg_shmem_calloc or mg_shmem_align (%d live)", fn, arg, p,
                     mg__shmem.nallocs);
  const mg__shmem_alloc_t *a = &mg__shmem.allocs[i];
  size_t room = a->bytes - (size_t)(u - a->base);
  if (bytes > room)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: %s + %zu bytes runs past the end of its symmetric allocation (%p, %zu "
                     "bytes: %zu bytes left from %s)", fn, arg, bytes, (void *)a->base, a->bytes,
                     room, arg);
  return MG_OK;
}

/* Room for one more record, made before NVSHMEM allocates: a symmetric allocation that could
 * not be recorded would have to be freed collectively again. */
static mg_status_t mg__heap_reserve(void) {
  if (mg__shmem.nallocs < mg__shmem.cap_allocs) return MG_OK;
  int cap = mg__shmem.cap_allocs ? 2 * mg__shmem.cap_allocs : 16;
  mg__shmem_alloc_t *n = realloc(mg__shmem.allocs, sizeof *n * (size_t)cap);
  if (n == NULL)
    return mg__error(MG_ERR_OUT_OF_MEMORY, "out of memory for the record of symmetric "
                     "allocations");
  mg__shmem.allocs = n;
  mg__shmem.cap_allocs = cap;
  return MG_OK;
}

static void mg__heap_insert(void *p, size_t bytes) {
  MG_ASSERT(mg__shmem.nallocs < mg__shmem.cap_allocs);
  int i = mg__heap_upper((uintptr_t)p);
  memmove(&mg__shmem.allocs[i + 1], &mg__shmem.allocs[i],
          sizeof *mg__shmem.allocs * (size_t)(mg__shmem.nallocs - i));
  mg__shmem.allocs[i] = (mg__shmem_alloc_t){(uintptr_t)p, bytes, mg__shmem.next_serial++};
  mg__shmem.nallocs++;
}

/* The allocation of every form, after the PEs agreed: NVSHMEM's call, then the record. */
static mg_status_t mg__heap_alloc(mg__agree_kind_t kind, size_t a, size_t b, size_t bytes,
                                  mg_status_t local, void **ptr, const char *fn) {
  /* Room in the record is made before the PEs compare, so that a PE out of host memory fails
   * with the others instead of after they allocated. */
  if (local == MG_OK && bytes > 0) local = mg__heap_reserve();
  MG_CHECK(mg__shmem_agree(kind, a, b, local, fn));
  if (bytes == 0) {
    *ptr = NULL;
    return MG_OK;
  }
  mg__CUcontext saved = NULL;
  MG_CHECK(mg__shmem_ctx_enter(&saved));
  void *p = kind == MG__AGREE_CALLOC  ? mg__nvshmem.calloc(a, b)
            : kind == MG__AGREE_ALIGN ? mg__nvshmem.align(a, b)
                                      : mg__nvshmem.malloc(bytes);
  mg__shmem_ctx_leave(saved);
  if (p == NULL)
    return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: NVSHMEM's symmetric heap has no room for %zu "
                     "bytes (its size is NVSHMEM_SYMMETRIC_SIZE)", fn, bytes);
  mg__heap_insert(p, bytes);
  *ptr = p;
  return MG_OK;
}

mg_status_t mg_shmem_malloc(size_t bytes, void **ptr) {
  const char *fn = "mg_shmem_malloc";
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t local = ptr == NULL ? mg__error(MG_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", fn)
                                  : MG_OK;
  mg_status_t st = mg__heap_alloc(MG__AGREE_MALLOC, bytes, 0, bytes, local, ptr, fn);
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_calloc(size_t count, size_t size, void **ptr) {
  const char *fn = "mg_shmem_calloc";
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t local = MG_OK;
  size_t bytes = 0;
  if (ptr == NULL)
    local = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", fn);
  else if (__builtin_mul_overflow(count, size, &bytes))
    local = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: count %zu x size %zu overflows size_t", fn,
                      count, size);
  else if (mg__nvshmem.calloc == NULL)
    local = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the loaded NVSHMEM does not export "
                      "nvshmem_calloc", fn);
  mg_status_t st = mg__heap_alloc(MG__AGREE_CALLOC, count, size, bytes, local, ptr, fn);
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_align(size_t alignment, size_t bytes, void **ptr) {
  const char *fn = "mg_shmem_align";
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t local = MG_OK;
  if (ptr == NULL)
    local = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", fn);
  else if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    local = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: alignment %zu is not a power of two", fn,
                      alignment);
  else if (mg__nvshmem.align == NULL)
    local = mg__error(MG_ERR_NOT_SUPPORTED, "%s: the loaded NVSHMEM does not export "
                      "nvshmem_align", fn);
  mg_status_t st = mg__heap_alloc(MG__AGREE_ALIGN, alignment, bytes, bytes, local, ptr, fn);
  mg__shmem_leave();
  return st;
}

mg_status_t mg_shmem_free(void *ptr) {
  const char *fn = "mg_shmem_free";
  pthread_mutex_lock(&mg__shmem.lock);
  int ready = mg__shmem.phase == MG__SHMEM_READY;
  pthread_mutex_unlock(&mg__shmem.lock);
  if (!ready && ptr == NULL) return MG_OK; /* destroy accepts NULL */
  MG_CHECK(mg__shmem_enter(fn));
  mg_status_t local = MG_OK;
  uint64_t serial = UINT64_MAX; /* NULL */
  int i = -1;
  if (ptr != NULL) {
    i = mg__heap_find((uintptr_t)ptr);
    if (i < 0 || mg__shmem.allocs[i].base != (uintptr_t)ptr)
      local = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %p is not the start of a live symmetric "
                        "allocation%s", fn, ptr, i < 0 ? "" : " (it is inside one)");
    else
      serial = mg__shmem.allocs[i].serial;
  }
  mg_status_t st = mg__shmem_agree(MG__AGREE_FREE, serial, 0, local, fn);
  if (st == MG_OK && ptr != NULL) {
    mg__CUcontext saved = NULL;
    st = mg__shmem_ctx_enter(&saved);
    if (st == MG_OK) {
      mg__nvshmem.free(ptr);
      mg__shmem_ctx_leave(saved);
      memmove(&mg__shmem.allocs[i], &mg__shmem.allocs[i + 1],
              sizeof *mg__shmem.allocs * (size_t)(mg__shmem.nallocs - i - 1));
      mg__shmem.nallocs--;
    }
  }
  mg__shmem_leave();
  return st;
}
