/*
 * info_and_allreduce.c -- a first mgcomm program:
 *   1. check that the library loaded at run time is the one this program was compiled for;
 *   2. print what mgcomm found here (GPU libraries, devices, the backend it would pick);
 *   3. sum a vector across two ranks, each a thread of this process, on the host backend
 *      (CPU memory: it runs on any machine, GPU or not).
 *
 * Build: see CMakeLists.txt beside it (find_package(mgcomm)), or
 *   cc info_and_allreduce.c $(pkg-config --cflags --libs mgcomm) -lpthread
 * Exit status: 0 when the sum is right, 1 on any error.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mgcomm.h>

#define NRANKS 2
#define COUNT 4096

typedef struct {
  const mg_unique_id_t *id; /* the same id for both ranks */
  int rank;
  mg_status_t status;       /* the first error of this rank, or MG_OK */
  char error[512];
} rank_t;

/* Records the first error of rank r, with the library's detail message. */
static void fail(rank_t *r, const char *what, mg_status_t st) {
  if (r->status != MG_OK) return;
  char detail[400];
  mg_last_error_copy(detail, sizeof detail);
  r->status = st;
  snprintf(r->error, sizeof r->error, "%s: %s (%s)", what, mg_status_name(st), detail);
}

static void *rank_main(void *arg) {
  rank_t *r = arg;
  mg_config_t config = MG_CONFIG_INIT;
  config.backend = MG_BACKEND_HOST;
  config.timeout_s = 60; /* no wait lasts longer than this */
  mg_comm_t *comm = NULL;
  mg_status_t st = mg_comm_init_rank(&config, NRANKS, r->id, r->rank, &comm);
  if (st != MG_OK) {
    fail(r, "mg_comm_init_rank", st);
    return NULL;
  }
  static float send[NRANKS][COUNT], recv[NRANKS][COUNT];
  for (int i = 0; i < COUNT; i++) send[r->rank][i] = (float)((r->rank + 1) * i);
  /* NULL stream on the host backend: the sum is complete when the call returns. */
  st = mg_all_reduce(send[r->rank], recv[r->rank], COUNT, MG_FLOAT32, MG_SUM, comm, NULL);
  if (st != MG_OK) fail(r, "mg_all_reduce", st);
  for (int i = 0; st == MG_OK && i < COUNT; i++) {
    float want = (float)(3 * i); /* 1*i + 2*i: exact in float for these sizes */
    if (recv[r->rank][i] != want) {
      snprintf(r->error, sizeof r->error, "element %d is %g, expected %g", i,
               (double)recv[r->rank][i], (double)want);
      r->status = MG_ERR_INTERNAL;
      break;
    }
  }
  st = mg_comm_destroy(comm);
  if (st != MG_OK) fail(r, "mg_comm_destroy", st);
  return NULL;
}

static void print_environment(void) {
  static const char *const labels[MG_LIB_COUNT] = {"CUDA driver", "NCCL", "NVSHMEM", "NVML"};
  for (int lib = 0; lib < MG_LIB_COUNT; lib++) {
    mg_library_info_t info;
    if (mg_library_info((mg_library_t)lib, &info) != MG_OK) continue; /* lib is valid */
    if (info.loaded)
      printf("  %-12s %s from %s\n", labels[lib], info.version_string, info.path);
    else
      printf("  %-12s not found (%d places tried; `mgcomm info` lists them)\n", labels[lib],
             info.attempts);
  }
  int ndev = 0;
  if (mg_device_count(&ndev) == MG_OK)
    printf("  GPUs         %d\n", ndev);
  else
    printf("  GPUs         none usable\n");
  mg_backend_t backend;
  char why[256];
  if (mg_backend_resolve(MG_BACKEND_AUTO, &backend, why, sizeof why) == MG_OK)
    printf("  backend      %s (%s)\n", mg_backend_name(backend), why);
}

int main(void) {
  /* 1. The library's major version is its ABI: it must be the header's. */
  if (mg_version() / 10000 != MGCOMM_VERSION_MAJOR) {
    fprintf(stderr, "compiled against mgcomm %s but running with %s\n", MGCOMM_VERSION_STRING,
            mg_version_string());
    return 1;
  }
  printf("mgcomm %s\n", mg_version_string());

  /* 2. What is here. */
  print_environment();

  /* 3. Two ranks, one thread each, one communicator. One rank creates the id; here both
   * threads simply share it (processes would send it to each other). */
  mg_unique_id_t id;
  mg_status_t st = mg_unique_id_create(MG_BACKEND_HOST, &id);
  if (st != MG_OK) {
    fprintf(stderr, "mg_unique_id_create: %s: %s\n", mg_status_name(st), mg_last_error());
    return 1;
  }
  pthread_t threads[NRANKS];
  rank_t ranks[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    memset(&ranks[r], 0, sizeof ranks[r]);
    ranks[r].id = &id;
    ranks[r].rank = r;
    if (pthread_create(&threads[r], NULL, rank_main, &ranks[r]) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 1;
    }
  }
  int ok = 1;
  for (int r = 0; r < NRANKS; r++) {
    if (pthread_join(threads[r], NULL) != 0) ok = 0;
    if (ranks[r].status != MG_OK) {
      fprintf(stderr, "rank %d: %s\n", r, ranks[r].error);
      ok = 0;
    }
  }
  if (!ok) return 1;
  printf("all_reduce of %d floats over %d ranks: correct\n", COUNT, NRANKS);
  return 0;
}
