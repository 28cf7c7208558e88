/*
 * mem.c -- the public memory calls (mgcomm.h, "Memory"). The core keeps two records so that bad
 * input is a status, never a crash: the pointers mg_mem_alloc handed out (mg_mem_free frees
 * only those, through the backend that made them, also after their communicator is gone), and
 * each communicator's registrations (mg_comm_deregister ends only those; they end with their
 * communicator).
 *
 * A third record serves the NCCL backend's pointer checks (mg__mem_known): the ranges of those
 * allocations and registrations, which an operation may use without asking the driver. It
 * stays true: mg_mem_free takes an allocation out (and every registration inside it) before the
 * memory goes, mg_comm_deregister a registration before NCCL lets go of it, destroy the rest.
 *
 * Locks: registrations are kept under comm->lock; mg__alloc_lock guards the allocation records
 * and mg__known_lock (read by operations, written by the calls above) the ranges; both are
 * leaves (nothing is called while they are held).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/comm.h"

/* ---- the checks' record ------------------------------------------------------------------ */

typedef struct mg__known {
  uintptr_t base;
  size_t bytes;
  int device;            /* CUDA ordinal (-1 on host) */
  const mg_comm_t *comm; /* a registration's communicator; NULL for an allocation */
} mg__known_t;

static struct {
  pthread_rwlock_t lock;
  mg__known_t *v;
  int n, cap;
  atomic_int any; /* n > 0: lets operations skip the lock while nothing is recorded */
} mg__known_rec = {PTHREAD_RWLOCK_INITIALIZER, NULL, 0, 0, 0};

/* 1 when [p, p + bytes) lies inside one recorded range of comm's device: an allocation, or (when
 * registrations) a registration of comm. */
static int mg__known_find(const mg_comm_t *comm, const void *p, size_t bytes, int registrations) {
  if (atomic_load_explicit(&mg__known_rec.any, memory_order_acquire) == 0) return 0;
  const uintptr_t a = (uintptr_t)p;
  int found = 0;
  pthread_rwlock_rdlock(&mg__known_rec.lock);
  for (int i = 0; i < mg__known_rec.n && !found; i++) {
    const mg__known_t *k = &mg__known_rec.v[i];
    found = k->device == comm->device && (k->comm == NULL || (registrations && k->comm == comm)) &&
            a >= k->base && a - k->base <= k->bytes && bytes <= k->bytes - (a - k->base);
  }
  pthread_rwlock_unlock(&mg__known_rec.lock);
  return found;
}

int mg__mem_known(const mg_comm_t *comm, const void *p, size_t bytes) {
  return mg__known_find(comm, p, bytes, 1);
}

int mg__mem_allocated(const mg_comm_t *comm, const void *p, size_t bytes) {
  return mg__known_find(comm, p, bytes, 0);
}

/* Records a range. Without memory it stays out: its buffers are then checked by the driver. */
static void mg__known_add(const void *p, size_t bytes, int device, const mg_comm_t *comm) {
  pthread_rwlock_wrlock(&mg__known_rec.lock);
  if (mg__known_rec.n == mg__known_rec.cap) {
    int cap = mg__known_rec.cap ? 2 * mg__known_rec.cap : 16;
    mg__known_t *v = realloc(mg__known_rec.v, sizeof *v * (size_t)cap);
    if (v != NULL) {
      mg__known_rec.v = v;
      mg__known_rec.cap = cap;
    }
  }
  if (mg__known_rec.n < mg__known_rec.cap)
    mg__known_rec.v[mg__known_rec.n++] = (mg__known_t){(uintptr_t)p, bytes, device, comm};
  atomic_store(&mg__known_rec.any, mg__known_rec.n > 0);
  pthread_rwlock_unlock(&mg__known_rec.lock);
}

/* Takes out the ranges that match: of comm (NULL: any) that lie inside [p, p + bytes) (inside:
 * 1), or the one that is exactly that range of comm (inside: 0). */
static void mg__known_remove(const void *p, size_t bytes, const mg_comm_t *comm, int inside) {
  const uintptr_t a = (uintptr_t)p;
  pthread_rwlock_wrlock(&mg__known_rec.lock);
  for (int i = 0; i < mg__known_rec.n;) {
    const mg__known_t *k = &mg__known_rec.v[i];
    const int match = inside ? (comm == NULL || k->comm == comm) && k->base >= a &&
                                   k->base - a <= bytes && k->bytes <= bytes - (k->base - a)
                             : k->comm == comm && k->base == a && k->bytes == bytes;
    if (match)
      mg__known_rec.v[i] = mg__known_rec.v[--mg__known_rec.n];
    else
      i++;
    if (match && !inside) break;
  }
  atomic_store(&mg__known_rec.any, mg__known_rec.n > 0);
  pthread_rwlock_unlock(&mg__known_rec.lock);
}

/* ---- allocations ---------------------------------------------------------------------------- */

typedef struct mg__alloc {
  void *ptr;
  size_t bytes;
  const mg__backend_t *backend; /* frees it */
  int device;                   /* of the communicator it was made for (-1 on host) */
  struct mg__alloc *next;
} mg__alloc_t;

#define MG__ALLOC_BUCKETS 256
static mg__alloc_t *mg__allocs[MG__ALLOC_BUCKETS];
static pthread_mutex_t mg__alloc_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t mg__alloc_bucket(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p >> 12; /* allocations are at least page aligned */
  return (size_t)((x * 0x9e3779b97f4a7c15ull) >> 56) % MG__ALLOC_BUCKETS;
}

static mg_status_t mg__mem_alloc(mg_comm_t *comm, size_t bytes, void **ptr, const char *fn) {
  if (ptr == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", fn);
  if (bytes == 0) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: bytes is 0", fn);
  mg__alloc_t *rec = malloc(sizeof *rec);
  if (rec == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  void *p = NULL;
  mg_status_t st = comm->backend->mem_alloc(comm, bytes, &p);
  if (st < 0) {
    free(rec);
    mg__error_prefix("%s: %zu bytes for rank %d (device %d)", fn, bytes, comm->rank, comm->device);
    return st;
  }
  rec->ptr = p;
  rec->bytes = bytes;
  rec->backend = comm->backend;
  rec->device = comm->device;
  size_t b = mg__alloc_bucket(p);
  pthread_mutex_lock(&mg__alloc_lock);
  rec->next = mg__allocs[b];
  mg__allocs[b] = rec;
  pthread_mutex_unlock(&mg__alloc_lock);
  mg__known_add(p, bytes, comm->device, NULL);
  *ptr = p;
  return MG_OK;
}

mg_status_t mg_mem_alloc(mg_comm_t *comm, size_t bytes, void **ptr) {
  static const char fn[] = "mg_mem_alloc";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__mem_alloc(comm, bytes, ptr, fn);
  mg__comm_leave(comm);
  return st;
}

mg_status_t mg_mem_free(void *ptr) {
  if (ptr == NULL) return MG_OK;
  size_t b = mg__alloc_bucket(ptr);
  pthread_mutex_lock(&mg__alloc_lock);
  mg__alloc_t **pp = &mg__allocs[b];
  while (*pp != NULL && (*pp)->ptr != ptr) pp = &(*pp)->next;
  mg__alloc_t *rec = *pp;
  if (rec != NULL) *pp = rec->next;
  pthread_mutex_unlock(&mg__alloc_lock);
  if (rec == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "mg_mem_free: %p was not returned by mg_mem_alloc, or was freed already", ptr);
  /* The records go whatever the backend answers: the memory is not to be used again. No
   * operation passes as checked once this returns, a registration inside it neither. */
  mg__known_remove(ptr, rec->bytes, NULL, 1);
  mg_status_t st = rec->backend->mem_free(ptr, rec->device);
  free(rec);
  if (st < 0) mg__error_prefix("mg_mem_free: %p", ptr);
  return st;
}

static mg_status_t mg__memcpy(mg_comm_t *comm, void *dst, const void *src, size_t bytes, const char *fn) {
  if (bytes == 0) return MG_OK;
  if (dst == NULL || src == NULL)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL with %zu bytes to copy", fn,
                     dst == NULL ? "dst" : "src", bytes);
  const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  if (d > UINTPTR_MAX - bytes || s > UINTPTR_MAX - bytes)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s + %zu bytes wraps around memory", fn,
                     d > UINTPTR_MAX - bytes ? "dst" : "src", bytes);
  if (d < s + bytes && s < d + bytes)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: dst [%p, +%zu) and src [%p, +%zu) overlap",
                     fn, dst, bytes, src, bytes);
  pthread_mutex_lock(&comm->lock);
  mg_status_t st = comm->backend->mem_copy(comm, dst, src, bytes, mg__comm_deadline(comm));
  pthread_mutex_unlock(&comm->lock);
  if (st < 0) mg__comm_save_error(comm);
  return st;
}

mg_status_t mg_memcpy(mg_comm_t *comm, void *dst, const void *src, size_t bytes) {
  static const char fn[] = "mg_memcpy";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__memcpy(comm, dst, src, bytes, fn);
  mg__comm_leave(comm);
  return st;
}

/* ---- registrations ------------------------------------------------------------------------ */

struct mg_reg {
  int flags;            /* MG_REGISTER_* */
  void *buf;
  size_t bytes;
  void *handle;         /* the backend's */
  struct mg_reg *next;  /* comm->regs */
};

static mg_status_t mg__register(mg_comm_t *comm, void *buf, size_t bytes, int flags,
                             mg_reg_t **reg, const char *fn) {
  mg_status_t st = MG_OK;
  if (reg == NULL || buf == NULL)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, reg == NULL ? "reg" : "buf");
  else if (bytes == 0)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: bytes is 0", fn);
  else if ((uintptr_t)buf > UINTPTR_MAX - bytes)
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: buf + %zu bytes wraps around memory", fn, bytes);
  else if (flags != MG_REGISTER_LOCAL && flags != MG_REGISTER_SYMMETRIC)
    st = mg__error(MG_ERR_INVALID_ARGUMENT,
                   "%s: flags %d is neither MG_REGISTER_LOCAL (0) nor MG_REGISTER_SYMMETRIC (1)",
                   fn, flags);
  struct mg_reg *r = NULL;
  if (st == MG_OK && (r = calloc(1, sizeof *r)) == NULL)
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  if (st < 0) {
    mg__comm_save_error(comm);
    return st;
  }
  r->flags = flags;
  r->buf = buf;
  r->bytes = bytes;
  pthread_mutex_lock(&comm->lock);
  st = mg__comm_check_state(comm, fn); /* an abort may have come meanwhile */
  if (st == MG_OK && flags == MG_REGISTER_SYMMETRIC) {
    const uintptr_t a = (uintptr_t)buf;
    for (const struct mg_reg *o = comm->regs; o != NULL && st == MG_OK; o = o->next) {
      const uintptr_t b = (uintptr_t)o->buf;
      if (o->flags == MG_REGISTER_SYMMETRIC && a < b + o->bytes && b < a + bytes)
        st = mg__error(MG_ERR_INVALID_ARGUMENT,
                       "%s: [%p, +%zu) overlaps the symmetric registration [%p, +%zu) of this "
                       "communicator; a buffer may be registered symmetrically once",
                       fn, buf, bytes, o->buf, o->bytes);
    }
  }
  if (st == MG_OK)
    st = comm->backend->mem_register(comm, buf, bytes, flags, mg__comm_deadline(comm), &r->handle);
  if (st == MG_OK) {
    r->next = comm->regs;
    comm->regs = r;
    mg__known_add(buf, bytes, comm->device, comm); /* the backend checked it */
  } else if (mg__comm_breaks(st, 0)) {
    mg__comm_fail(comm, st);
  } else {
    mg__comm_save_error(comm);
  }
  pthread_mutex_unlock(&comm->lock);
  if (st < 0) {
    free(r);
    return st;
  }
  *reg = r;
  return MG_OK;
}

mg_status_t mg_comm_register(mg_comm_t *comm, void *buf, size_t bytes, int flags,
                             mg_reg_t **reg) {
  static const char fn[] = "mg_comm_register";
  MG_CHECK(mg__comm_enter_ready(comm, fn));
  mg_status_t st = mg__register(comm, buf, bytes, flags, reg, fn);
  mg__comm_leave(comm);
  return st;
}

static mg_status_t mg__deregister(mg_comm_t *comm, mg_reg_t *reg, const char *fn) {
  if (reg == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: reg is NULL", fn);
  pthread_mutex_lock(&comm->lock);
  struct mg_reg **pp = &comm->regs;
  while (*pp != NULL && *pp != reg) pp = &(*pp)->next; /* reg is not read before it is found */
  mg_status_t st;
  if (*pp == NULL) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT,
                   "%s: reg %p is not a registration of this communicator (ended already, or "
                   "made on another one)", fn, (void *)reg);
  } else {
    *pp = reg->next;
    mg__known_remove(reg->buf, reg->bytes, comm, 0);
    /* The handle goes whatever the backend answers: the registration is unusable either way,
     * and the backend releases what is left of it with the communicator. */
    st = comm->backend->mem_deregister(comm, reg->handle, reg->flags);
    free(reg);
  }
  if (st < 0) mg__comm_save_error(comm);
  pthread_mutex_unlock(&comm->lock);
  return st;
}

mg_status_t mg__reg_lookup(mg_comm_t *comm, const mg_reg_t *reg, int *flags, size_t *bytes,
                           void **handle) {
  const struct mg_reg *r = comm->regs;
  while (r != NULL && r != reg) r = r->next; /* reg is not read before it is found */
  if (r == NULL) return MG_ERR_INVALID_ARGUMENT;
  *flags = r->flags;
  *bytes = r->bytes;
  *handle = r->handle;
  return MG_OK;
}

mg_status_t mg_comm_deregister(mg_comm_t *comm, mg_reg_t *reg) {
  static const char fn[] = "mg_comm_deregister";
  MG_CHECK(mg__comm_enter(comm, fn));
  mg_status_t st = mg__deregister(comm, reg, fn);
  mg__comm_leave(comm);
  return st;
}

void mg__reg_free_all(mg_comm_t *comm) {
  for (struct mg_reg *r = comm->regs, *n; r != NULL; r = n) {
    n = r->next;
    mg__known_remove(r->buf, r->bytes, comm, 0);
    free(r);
  }
  comm->regs = NULL;
}
