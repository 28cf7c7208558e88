/*
 * gpu_util.c -- see gpu_util.h.
 */
#include "gpu_util.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host_reduce.h"
#include "backend/nccl/nccl.h"

double gu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void gu_need(int n) {
  int count = 0;
  mg_status_t st = mg_device_count(&count);
  if (st != MG_OK) SKIP("no usable CUDA driver: %s: %s", mg_status_name(st), mg_last_error());
  if (count < n) SKIP("needs %d GPUs, this machine has %d", n, count);
  mg_backend_t b;
  char why[512];
  st = mg_backend_resolve(MG_BACKEND_NCCL, &b, why, sizeof why);
  if (st != MG_OK) SKIP("the NCCL backend cannot run here: %s", mg_last_error());
}

void gu_probe(int n) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) FAIL("fork failed");
  if (pid == 0) {
    gu_need(n);
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) FAIL("waitpid failed");
  if (WIFEXITED(status) && WEXITSTATUS(status) == MG_TEST_SKIP_CODE) exit(MG_TEST_SKIP_CODE);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    FAIL("the probe of %d GPUs failed (status 0x%x)", n, status);
}

#define GU_CU(call, what)                                                                     \
  do {                                                                                        \
    mg__CUresult r_ = (call);                                                                 \
    if (r_ != MG__CUDA_SUCCESS) {                                                             \
      mg__cu_error(r_, #call);                                                                \
      FAIL("%s: %s", (what), mg_last_error());                                                \
    }                                                                                         \
  } while (0)

/* Makes d's context current on this thread (tests never restore: they own their threads). */
static void gu_use(gu_dev_t *d) { GU_CU(mg__cuda.CtxSetCurrent(d->ctx), "cuCtxSetCurrent"); }

void gu_dev_open(gu_dev_t *d, int ordinal) {
  memset(d, 0, sizeof *d);
  d->ordinal = ordinal;
  if (mg__device_ctx_retain(ordinal, "gu_dev_open", &d->dev, &d->ctx) != MG_OK)
    FAIL("device %d: %s", ordinal, mg_last_error());
  gu_use(d);
  GU_CU(mg__cuda.StreamCreate(&d->stream, MG__CU_STREAM_NON_BLOCKING), "creating a stream");
}

void gu_dev_close(gu_dev_t *d) {
  gu_use(d);
  GU_CU(mg__cuda.StreamDestroy(d->stream), "destroying a stream");
  mg__device_ctx_release(d->dev);
}

void *gu_alloc(gu_dev_t *d, size_t bytes) {
  gu_use(d);
  mg__CUdeviceptr p = 0;
  GU_CU(mg__cuda.MemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
  return (void *)(uintptr_t)p;
}

void gu_free(gu_dev_t *d, void *p) {
  gu_use(d);
  GU_CU(mg__cuda.MemFree((mg__CUdeviceptr)(uintptr_t)p), "cuMemFree");
}

void gu_put(gu_dev_t *d, void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return;
  gu_use(d);
  GU_CU(mg__cuda.MemcpyAsync((mg__CUdeviceptr)(uintptr_t)dst, (mg__CUdeviceptr)(uintptr_t)src,
                             bytes, d->stream),
        "host to device copy");
}

void gu_get(gu_dev_t *d, void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return;
  gu_use(d);
  GU_CU(mg__cuda.MemcpyAsync((mg__CUdeviceptr)(uintptr_t)dst, (mg__CUdeviceptr)(uintptr_t)src,
                             bytes, d->stream),
        "device to host copy");
}

int gu_done(gu_dev_t *d, const char *what) {
  mg__CUresult r = mg__cuda.StreamQuery(d->stream);
  if (r == MG__CUDA_SUCCESS) return 1;
  if (r == MG__CUDA_ERROR_NOT_READY) return 0;
  mg__cu_error(r, "cuStreamQuery");
  FAIL("%s: device %d: the stream failed: %s", what, d->ordinal, mg_last_error());
}

double gu_sync(gu_dev_t *d, double timeout_s, const char *what) {
  const double t0 = gu_now();
  for (;;) {
    if (gu_done(d, what)) return gu_now() - t0;
    if (gu_now() - t0 > timeout_s)
      FAIL("%s: device %d: the stream had not finished after %g s", what, d->ordinal, timeout_s);
    sched_yield();
  }
}

typedef struct {
  void (*fn)(int, void *);
  void *arg;
  int rank;
} gu_thread_t;

static void *gu_thread_main(void *p) {
  gu_thread_t *t = p;
  t->fn(t->rank, t->arg);
  return NULL;
}

void gu_run_ranks(int n, void (*fn)(int rank, void *arg), void *arg) {
  pthread_t th[64];
  gu_thread_t ts[64];
  ASSERT(n <= 64);
  for (int r = 0; r < n; r++) {
    ts[r] = (gu_thread_t){fn, arg, r};
    ASSERT_EQ(pthread_create(&th[r], NULL, gu_thread_main, &ts[r]), 0);
  }
  for (int r = 0; r < n; r++) ASSERT_EQ(pthread_join(th[r], NULL), 0);
}

static int gu_is_float(mg_dtype_t dt) { return dt >= MG_FLOAT16; }

double gu_get_f(const void *p, size_t i, mg_dtype_t dt) {
  switch (dt) {
    case MG_INT8: return ((const int8_t *)p)[i];
    case MG_UINT8: return ((const uint8_t *)p)[i];
    case MG_INT32: return ((const int32_t *)p)[i];
    case MG_UINT32: return ((const uint32_t *)p)[i];
    case MG_INT64: return (double)((const int64_t *)p)[i];
    case MG_UINT64: return (double)((const uint64_t *)p)[i];
    case MG_FLOAT16: return mg__f16_to_f32(((const uint16_t *)p)[i]);
    case MG_BFLOAT16: return mg__bf16_to_f32(((const uint16_t *)p)[i]);
    case MG_FLOAT8_E4M3: return mg__e4m3_to_f32(((const uint8_t *)p)[i]);
    case MG_FLOAT8_E5M2: return mg__e5m2_to_f32(((const uint8_t *)p)[i]);
    case MG_FLOAT32: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
  }
}

double gu_unit_roundoff(mg_dtype_t dt) {
  switch (dt) {
    case MG_FLOAT16: return ldexp(1, -11);
    case MG_BFLOAT16: return ldexp(1, -8);
    case MG_FLOAT8_E4M3: return ldexp(1, -4);
    case MG_FLOAT8_E5M2: return ldexp(1, -3);
    case MG_FLOAT32: return ldexp(1, -24);
    case MG_FLOAT64: return ldexp(1, -53);
    default: return 0;
  }
}

double gu_min_subnormal(mg_dtype_t dt) {
  switch (dt) {
    case MG_FLOAT16: return ldexp(1, -24);
    case MG_BFLOAT16: return ldexp(1, -133);
    case MG_FLOAT8_E4M3: return ldexp(1, -9);
    case MG_FLOAT8_E5M2: return ldexp(1, -16);
    case MG_FLOAT32: return ldexp(1, -149);
    case MG_FLOAT64: return ldexp(1, -1074);
    default: return 0;
  }
}

/* The bits of element i (for messages). */
static unsigned long long gu_bits(const void *p, size_t i, size_t es) {
  unsigned long long v = 0;
  memcpy(&v, (const char *)p + i * es, es); /* little-endian: the element's own value */
  return v;
}

long gu_compare(const void *got, const void *want, size_t n, mg_dtype_t dt, const double *bound,
                const char *label, int show) {
  const size_t es = mg_dtype_size(dt);
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0) continue;
    const double g = gu_get_f(got, i, dt), w = gu_get_f(want, i, dt);
    const double allowed = bound != NULL && gu_is_float(dt) ? bound[i] : 0.0;
    if (gu_is_float(dt)) {
      if (g == w || (isnan(g) && isnan(w))) continue; /* +0 and -0; NaN payloads */
      if (fabs(g - w) <= allowed) continue;
    }
    if (bad++ >= show) continue;
    if (gu_is_float(dt))
      fprintf(stderr, "  %s: [%zu] = %.9g (0x%0*llx), host backend %.9g (0x%0*llx), allowed "
              "difference %.3g\n", label, i, g, (int)(2 * es), gu_bits(got, i, es), w,
              (int)(2 * es), gu_bits(want, i, es), allowed);
    else
      fprintf(stderr, "  %s: [%zu] = 0x%0*llx, host backend 0x%0*llx (must be equal)\n", label,
              i, (int)(2 * es), gu_bits(got, i, es), (int)(2 * es), gu_bits(want, i, es));
  }
  return bad;
}
