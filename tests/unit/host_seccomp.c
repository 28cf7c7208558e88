/*
 * host_seccomp.c -- a program whose ranks are all threads of one process never calls
 * process_vm_readv (host_readv.c): a sandbox may forbid it, and one that kills the process on it
 * would end the program. In a child process under a seccomp filter that kills on
 * process_vm_readv:
 *
 *  all      mg_comm_init_all of 2 thread ranks, a 1 MiB all_reduce, a sendrecv, a split of the
 *           communicator and an all_reduce on the child: the child exits 0;
 *  control  2 thread ranks made with mg_comm_init_rank, where the backend cannot know that they
 *           share the process: the creator times process_vm_readv and the filter kills the
 *           child with SIGSYS (in sanitizer builds, which measure nothing, it exits 0). This
 *           shows that the filter works, so that `all` can fail.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mgcomm.h"
#include "test.h"

/* The library's own test for a sanitizer build (host_readv.c), which then measures nothing. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define N 2
#define COUNT (256 * 1024) /* floats: 1 MiB */

/* Kills the calling process on process_vm_readv; 0 when installed. */
static int forbid_readv(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static mg_config_t host_cfg(void) {
  mg_config_t cfg = MG_CONFIG_INIT;
  cfg.backend = MG_BACKEND_HOST;
  cfg.timeout_s = 30;
  return cfg;
}

typedef struct {
  mg_comm_t *comm;
  int rank;
  const mg_unique_id_t *uid; /* control: init here */
} arg_t;

/* Traffic on comm: an all_reduce of 1 MiB (copied once between threads), a sendrecv. */
static void traffic(mg_comm_t *comm, int rank) {
  float *buf = malloc(sizeof *buf * COUNT);
  ASSERT(buf != NULL);
  for (size_t i = 0; i < COUNT; i++) buf[i] = (float)(rank + 1);
  ASSERT_OK(mg_all_reduce(buf, buf, COUNT, MG_FLOAT32, MG_SUM, comm, NULL));
  for (size_t i = 0; i < COUNT; i++) ASSERT_EQ(buf[i], 3.0f);
  int64_t out = rank, in = -1;
  ASSERT_OK(mg_group_begin());
  ASSERT_OK(mg_send(&out, 1, MG_INT64, 1 - rank, comm, NULL));
  ASSERT_OK(mg_recv(&in, 1, MG_INT64, 1 - rank, comm, NULL));
  ASSERT_OK(mg_group_end());
  ASSERT_EQ(in, 1 - rank);
  free(buf);
}

static void *all_rank(void *p) {
  arg_t *a = p;
  traffic(a->comm, a->rank);
  mg_comm_t *child;
  ASSERT_OK(mg_comm_split(a->comm, 0, a->rank, NULL, &child));
  traffic(child, a->rank);
  ASSERT_OK(mg_comm_destroy(child));
  return NULL;
}

static void *control_rank(void *p) {
  arg_t *a = p;
  mg_config_t cfg = host_cfg();
  ASSERT_OK(mg_comm_init_rank(&cfg, N, a->uid, a->rank, &a->comm));
  traffic(a->comm, a->rank);
  return NULL;
}

/* Runs one case in a child under the filter; returns its wait status. */
static int run_child(int control) {
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    if (forbid_readv() != 0) SKIP("no seccomp filter here");
    arg_t a[N];
    mg_comm_t *comms[N];
    mg_unique_id_t uid;
    if (control) {
      ASSERT_OK(mg_unique_id_create(MG_BACKEND_HOST, &uid));
    } else {
      mg_config_t cfg = host_cfg();
      ASSERT_OK(mg_comm_init_all(&cfg, N, NULL, comms));
    }
    pthread_t t[N];
    for (int r = 0; r < N; r++) {
      a[r] = (arg_t){control ? NULL : comms[r], r, &uid};
      ASSERT_EQ(pthread_create(&t[r], NULL, control ? control_rank : all_rank, &a[r]), 0);
    }
    for (int r = 0; r < N; r++) ASSERT_EQ(pthread_join(t[r], NULL), 0);
    for (int r = 0; r < N; r++) ASSERT_OK(mg_comm_destroy(a[r].comm));
    _exit(0);
  }
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == MG_TEST_SKIP_CODE)
    SKIP("no seccomp filter here");
  return status;
}

int main(void) {
  unsetenv("MGCOMM_HOST_READV_FAST"); /* the probe's own switches would skip it */
  unsetenv("MGCOMM_HOST_DIRECT_BYTES");
  unsetenv("MGCOMM_HOST_READV_MAX_BYTES");
  int st = run_child(0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    FAIL("all: the child ended with %s %d, expected exit 0",
         WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  printf("all: init_all, all_reduce, sendrecv, split: no process_vm_readv\n");
  st = run_child(1);
  if (SANITIZED) {
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("control: sanitizer build, no measurement: exit 0\n");
  } else {
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
      FAIL("control: the child ended with %s %d, expected SIGSYS",
           WIFSIGNALED(st) ? "signal" : "status",
           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    printf("control: init_rank threads measured process_vm_readv: killed by SIGSYS\n");
  }
  return 0;
}
