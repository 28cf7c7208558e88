/*
 * world_cost.c -- what the world and the watchdog cost on the host backend (2 thread ranks).
 *
 *   world_cost [--iters N] [--runs R] [--ranks K] [--watchdog 0]
 *
 * 1. direct: K threads (2 by default), each rank calls mg_all_reduce(8 bytes, NULL stream) back to back; the
 *    time of one call on rank 0 (it includes waiting for rank 1), median over N calls.
 * 2. world: one thread calls mg_world_all_reduce (8 bytes per rank) + mg_request_wait +
 *    mg_request_free; the time of the three, median over N.
 *    Both are run R times, alternating, so that both see the same load; reported: the medians of
 *    the R medians, and the median of the R paired differences (world run minus the direct run
 *    just before it).
 *    For scale: one round trip of a flag between two threads, the floor of any hand-off to a
 *    worker on this machine (the world makes one per call).
 * 3. the watchdog, per request: listing and unlisting a request (mg__wd_add + the removal in its
 *    completion) against completing an unlisted one, median over N of batches of 100.
 * 4. the watchdog thread's CPU use at the default interval (MGCOMM_WATCHDOG_INTERVAL) with 10,000
 *    pending requests for 3 s, from /proc/self/task/<tid>/stat.
 *    --watchdog 0 skips 3 and 4 (for profiling 1 and 2).
 *
 * Exit 0 when every call succeeded. Prints a Markdown table (bench/results/ keeps dated ones).
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/request.h"
#include "mgcomm.h"

#define MAX_RANKS 8
static int iters = 20000, runs = 5, nranks = 2, watchdog = 1;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, mg_status_t st) {
  fprintf(stderr, "world_cost: %s: %s: %s\n", what, mg_status_name(st), mg_last_error());
  exit(1);
}

static mg_config_t host_config(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 60;
  return cfg;
}

/* ---- direct ---- */

typedef struct {
  mg_comm_t *comm;
  pthread_barrier_t *bar;
  double *times; /* rank 0: per call, seconds */
} direct_arg_t;

static void *direct_rank(void *p) {
  direct_arg_t *a = p;
  int64_t in = 1, out = 0;
  pthread_barrier_wait(a->bar); /* returns 0 or the serial value; cannot fail here */
  for (int i = 0; i < iters / 10; i++) { /* warm-up */
    mg_status_t st = mg_all_reduce(&in, &out, 1, MG_INT64, MG_SUM, a->comm, NULL);
    if (st != MG_OK) die("direct all_reduce", st);
  }
  for (int i = 0; i < iters; i++) {
    double t0 = mg__now();
    mg_status_t st = mg_all_reduce(&in, &out, 1, MG_INT64, MG_SUM, a->comm, NULL);
    double t1 = mg__now();
    if (st != MG_OK || out != nranks) die("direct all_reduce", st);
    if (a->times != NULL) a->times[i] = t1 - t0;
  }
  return NULL;
}

static double run_direct(double *times) {
  mg_config_t cfg = host_config();
  mg_comm_t *comms[MAX_RANKS];
  mg_status_t st = mg_comm_init_all(&cfg, nranks, NULL, comms);
  if (st != MG_OK) die("mg_comm_init_all", st);
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)nranks);
  direct_arg_t a[MAX_RANKS];
  pthread_t th[MAX_RANKS];
  for (int r = 0; r < nranks; r++) a[r] = (direct_arg_t){comms[r], &bar, r == 0 ? times : NULL};
  for (int r = 1; r < nranks; r++) pthread_create(&th[r], NULL, direct_rank, &a[r]);
  direct_rank(&a[0]);
  for (int r = 1; r < nranks; r++) pthread_join(th[r], NULL);
  pthread_barrier_destroy(&bar);
  for (int r = 0; r < nranks; r++) mg_comm_destroy(comms[r]); /* healthy comms: cannot fail */
  return median(times, iters);
}

/* ---- world ---- */

static double run_world(mg_world_t *w, double *times) {
  int64_t in[MAX_RANKS], out[MAX_RANKS];
  const void *sp[MAX_RANKS];
  void *rp[MAX_RANKS];
  for (int r = 0; r < nranks; r++) in[r] = 1, out[r] = 0, sp[r] = &in[r], rp[r] = &out[r];
  for (int i = -iters / 10; i < iters; i++) {
    mg_request_t *req;
    double t0 = mg__now();
    mg_status_t st = mg_world_all_reduce(w, sp, rp, 1, MG_INT64, MG_SUM, &req);
    if (st == MG_OK) st = mg_request_wait(req, 0);
    mg_request_free(req); /* a live handle: cannot fail */
    double t1 = mg__now();
    if (st != MG_OK || out[0] != nranks || out[nranks - 1] != nranks)
      die("world all_reduce", st);
    if (i >= 0) times[i] = t1 - t0;
  }
  return median(times, iters);
}

/* ---- a thread round trip: what any hand-off to a worker costs here ---- */

static atomic_int baton;

static void *bounce(void *arg) {
  for (int i = 0; i < iters; i++) {
    for (unsigned k = 0; atomic_load(&baton) != 1; k++) (void)mg__spin_round(k, INFINITY);
    atomic_store(&baton, 0);
  }
  return NULL;
}

/* One round trip of a flag between this thread and another, spinning as the library's waits do
 * (mg__spin_round); median over iters. */
static double run_handoff(double *times) {
  pthread_t th;
  atomic_store(&baton, 0);
  pthread_create(&th, NULL, bounce, NULL);
  for (int i = 0; i < iters; i++) {
    double t0 = mg__now();
    atomic_store(&baton, 1);
    for (unsigned k = 0; atomic_load(&baton) != 0; k++) (void)mg__spin_round(k, INFINITY);
    times[i] = mg__now() - t0;
  }
  pthread_join(th, NULL);
  return median(times, iters);
}

/* ---- the watchdog, per request ---- */

static double wd_batch(int listed) {
  enum { B = 100 };
  mg_request_t *r[B];
  for (int i = 0; i < B; i++) {
    r[i] = mg__request_new(MG__REQ_WORLD, mg__now() + 600, MG_ON_TIMEOUT_REPORT, "world_cost");
    if (r[i] == NULL) die("mg__request_new", MG_ERR_OUT_OF_MEMORY);
  }
  double t0 = mg__now();
  for (int i = 0; i < B; i++) {
    if (listed) (void)mg__wd_add(r[i], NULL); /* no comm: never refused */
    mg__request_complete(r[i], MG_OK, NULL, 1);
  }
  double t1 = mg__now();
  for (int i = 0; i < B; i++) mg_request_free(r[i]); /* live handles: cannot fail */
  return (t1 - t0) / B;
}

/* ---- the watchdog thread's CPU ---- */

/* utime + stime of the thread named name, in seconds; -1 when there is none. */
static double thread_cpu(const char *name) {
  DIR *d = opendir("/proc/self/task");
  if (d == NULL) return -1;
  struct dirent *e;
  double cpu = -1;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char path[300], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f); /* read-only */
    buf[n] = '\0';
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    if (open == NULL || close == NULL) continue;
    if ((size_t)(close - open - 1) != strlen(name) || strncmp(open + 1, name, strlen(name)) != 0)
      continue;
    unsigned long ut = 0, st = 0;
    char *p = close + 2;
    for (int field = 3; field < 14 && *p; p++) /* utime is field 14 */
      if (*p == ' ') field++;
    if (sscanf(p, "%lu %lu", &ut, &st) == 2) cpu = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
  }
  closedir(d);
  return cpu;
}

static double watchdog_cpu(int pending, double seconds) {
  mg_request_t **r = calloc((size_t)pending, sizeof *r);
  if (r == NULL) die("calloc", MG_ERR_OUT_OF_MEMORY);
  for (int i = 0; i < pending; i++) {
    r[i] = mg__request_new(MG__REQ_WORLD, mg__now() + 600, MG_ON_TIMEOUT_REPORT, "world_cost");
    if (r[i] == NULL) die("mg__request_new", MG_ERR_OUT_OF_MEMORY);
    (void)mg__wd_add(r[i], NULL); /* no comm: never refused */
  }
  usleep(200000);
  double c0 = thread_cpu("mg-watchdog"), t0 = mg__now();
  usleep((useconds_t)(seconds * 1e6));
  double c1 = thread_cpu("mg-watchdog"), t1 = mg__now();
  for (int i = 0; i < pending; i++) {
    mg__request_complete(r[i], MG_OK, NULL, 1);
    mg_request_free(r[i]); /* live handles: cannot fail */
  }
  free(r);
  return c0 < 0 || c1 < 0 ? -1 : (c1 - c0) / (t1 - t0);
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--iters") == 0) iters = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--ranks") == 0) nranks = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--watchdog") == 0) watchdog = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
  }
  if (iters < 10 || runs < 1 || nranks < 1 || nranks > MAX_RANKS) {
    fprintf(stderr, "usage: world_cost [--iters N >= 10] [--runs R >= 1] [--ranks 1..8]\n");
    return 2;
  }
  double *times = malloc(sizeof *times * (size_t)iters);
  double *d = malloc(sizeof *d * (size_t)runs), *wv = malloc(sizeof *wv * (size_t)runs);
  if (times == NULL || d == NULL || wv == NULL) die("malloc", MG_ERR_OUT_OF_MEMORY);
  mg_config_t cfg = host_config();
  mg_world_t *w;
  mg_status_t st = mg_world_create(&cfg, nranks, NULL, &w);
  if (st != MG_OK) die("mg_world_create", st);
  for (int r = 0; r < runs; r++) {
    d[r] = run_direct(times);
    wv[r] = run_world(w, times);
  }
  mg_world_destroy(w); /* a live world: cannot fail */
  /* Medians of the per-run medians, and of the paired differences (each world run against the
   * direct run just before it: the same minute, often the same placement of threads on cores). */
  double *tmp = malloc(sizeof *tmp * (size_t)runs);
  if (tmp == NULL) die("malloc", MG_ERR_OUT_OF_MEMORY);
  memcpy(tmp, d, sizeof *tmp * (size_t)runs);
  const double dm = median(tmp, runs);
  memcpy(tmp, wv, sizeof *tmp * (size_t)runs);
  const double wm = median(tmp, runs);
  for (int r = 0; r < runs; r++) tmp[r] = wv[r] - d[r];
  const double dd = median(tmp, runs);
  free(tmp);
  double hand = run_handoff(times);
  double listed[101], unlisted[101], per_req = 0, cpu = -1;
  if (watchdog) {
    for (int i = 0; i < 101; i++) {
      listed[i] = wd_batch(1);
      unlisted[i] = wd_batch(0);
    }
    per_req = median(listed, 101) - median(unlisted, 101);
    cpu = watchdog_cpu(10000, 3.0);
  }
  char host[128] = "?";
  gethostname(host, sizeof host - 1); /* informative only */
  printf("| measure | value |\n| --- | --- |\n");
  printf("| direct mg_all_reduce, 8 B, %d thread ranks (median of %d x %d) | %.2f us |\n",
         nranks, runs, iters, dm * 1e6);
  printf("| world submit + wait + free, 8 B, %d ranks (median of %d x %d) | %.2f us |\n", nranks,
         runs, iters, wm * 1e6);
  printf("| world - direct, median of the paired runs | %+.2f us (target <= +2 us) |\n", dd * 1e6);
  printf("| world - direct, difference of the medians | %+.2f us |\n", (wm - dm) * 1e6);
  printf("| a round trip between two threads (spin, yield every 64 rounds) | %.2f us |\n",
         hand * 1e6);
  if (watchdog) printf("| watchdog: listing + unlisting one request | %.0f ns |\n", per_req * 1e9);
  if (!watchdog)
    ;
  else if (cpu >= 0)
    printf("| watchdog thread CPU, 10,000 pending requests, interval %s s | %.2f %% of a core |\n",
           getenv("MGCOMM_WATCHDOG_INTERVAL") ? getenv("MGCOMM_WATCHDOG_INTERVAL") : "0.1",
           cpu * 100);
  else
    printf("| watchdog thread CPU | not found |\n");
  printf("\nper run, in order (median us, direct / world):");
  for (int r = 0; r < runs; r++) printf(" %.2f/%.2f", d[r] * 1e6, wv[r] * 1e6);
  printf("\n");
  free(times);
  free(d);
  free(wv);
  return 0;
}
