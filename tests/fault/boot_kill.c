/*
 * boot_kill.c -- processes of a store that die or hang:
 *  - the server's process is killed while clients wait and while they are idle: MG_ERR_REMOTE,
 *    promptly, never a hang; a new client gets MG_ERR_TIMED_OUT at its deadline;
 *  - the server's process is stopped (SIGSTOP): calls end with MG_ERR_TIMED_OUT at their
 *    deadlines;
 *  - a client's process is killed inside a barrier and in the middle of a frame: the server
 *    stops counting it, and keeps serving the others.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"

#define TOKEN "kill-test-token"

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* Forks a process that serves a store and waits to be killed; its address goes into addr. */
static pid_t fork_server(char *addr, size_t len) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    mg_store_t *s;
    if (mg_store_serve("127.0.0.1:0", TOKEN, 30, &s) != MG_OK) _exit(3);
    char a[128];
    if (mg_store_address(s, a, sizeof a) != MG_OK) _exit(4);
    if (write(p[1], a, strlen(a) + 1) != (ssize_t)strlen(a) + 1) _exit(5);
    for (;;) pause();
  }
  close(p[1]);
  ssize_t n = read(p[0], addr, len);
  ASSERT_GT(n, 0);
  close(p[0]);
  return pid;
}

static void reap(pid_t pid, int want_signal) {
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT(WIFSIGNALED(status));
  ASSERT_EQ(WTERMSIG(status), want_signal);
}

typedef struct {
  mg_store_t *c;
  mg_status_t got;
  double took;
} wait_arg_t;

static void *waiting_get(void *arg) {
  wait_arg_t *a = arg;
  char buf[8];
  size_t len;
  double t0 = mg__now();
  a->got = mg_store_get(a->c, "never-set", buf, sizeof buf, &len, 60);
  a->took = mg__now() - t0;
  return NULL;
}

static void test_killed_server(void) {
  char addr[128];
  pid_t pid = fork_server(addr, sizeof addr);
  mg_store_t *waiting, *idle;
  ASSERT_OK(mg_store_connect(addr, TOKEN, 10, &waiting));
  ASSERT_OK(mg_store_connect(addr, TOKEN, 10, &idle));
  ASSERT_OK(mg_store_set(idle, "k", "v", 1, 0));
  pthread_t t;
  wait_arg_t a = {waiting, MG_ERR_INTERNAL, 0};
  ASSERT_EQ(pthread_create(&t, NULL, waiting_get, &a), 0);
  sleep_s(0.3);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  reap(pid, SIGKILL);
  ASSERT_EQ(pthread_join(t, NULL), 0);
  printf("server killed: the waiting get returned %s after %.3f s (deadline 60 s)\n",
         mg_status_name(a.got), a.took);
  ASSERT_STATUS(MG_ERR_REMOTE, a.got);
  ASSERT_LT_F(a.took, 2.0);
  double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_REMOTE, mg_store_set(idle, "k", "v", 1, 30));
  ASSERT_LT_F(mg__now() - t0, 2.0);
  ASSERT_STATUS(MG_ERR_REMOTE, mg_store_check(waiting, "k", &(int){0}, 30));
  /* a new client finds nobody, and gives up at its deadline */
  mg_store_t *late = NULL;
  t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_connect(addr, TOKEN, 0.5, &late));
  ASSERT_LT_F(mg__now() - t0, 2.5);
  ASSERT(late == NULL);
  ASSERT_OK(mg_store_close(waiting));
  ASSERT_OK(mg_store_close(idle));
}

typedef struct {
  mg_store_t *c;
  mg_status_t got;
  double took;
  atomic_int calling; /* set just before the call */
} set_arg_t;

static void *slow_set(void *arg) {
  set_arg_t *a = arg;
  double t0 = mg__now();
  atomic_store(&a->calling, 1);
  a->got = mg_store_set(a->c, "k", "v", 1, 30);
  a->took = mg__now() - t0;
  return NULL;
}

static void test_stopped_server(void) {
  char addr[128];
  pid_t pid = fork_server(addr, sizeof addr);
  mg_store_t *c;
  ASSERT_OK(mg_store_connect(addr, TOKEN, 10, &c));
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  char buf[8];
  size_t len;
  double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_get(c, "never-set", buf, sizeof buf, &len, 0.5));
  double took = mg__now() - t0;
  printf("server stopped: get with a 0.5 s deadline: MG_ERR_TIMED_OUT after %.3f s\n", took);
  ASSERT_IN_F(took, 0.45, 2.5); /* the deadline, not a hang; generous for loaded CI */
  t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_set(c, "k", "v", 1, 0.3));
  took = mg__now() - t0;
  ASSERT_IN_F(took, 0.25, 2.5);
  /* The connection was dropped; the next call reconnects, and the stopped server's kernel still
   * accepts, so it waits in the handshake: closing the handle must end that wait at once. */
  pthread_t t;
  set_arg_t a = {c, MG_ERR_INTERNAL, 0, 0};
  ASSERT_EQ(pthread_create(&t, NULL, slow_set, &a), 0);
  while (!atomic_load(&a.calling)) sleep_s(0.01);
  sleep_s(0.5);
  ASSERT_OK(mg_store_close(c));
  ASSERT_EQ(pthread_join(t, NULL), 0);
  printf("server stopped: close ended a reconnecting call (30 s deadline) after %.3f s: %s\n",
         a.took, mg_status_name(a.got));
  ASSERT_STATUS(MG_ERR_REMOTE, a.got);
  ASSERT_LT_F(a.took, 5.0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  reap(pid, SIGKILL);
}

/* A client process: connects, tells the parent, enters a barrier of n, and is killed there. */
static pid_t fork_client(const char *addr, const char *barrier, int n) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    mg_store_t *c;
    if (mg_store_connect(addr, TOKEN, 10, &c) != MG_OK) _exit(3);
    if (write(p[1], "r", 1) != 1) _exit(4);
    mg_store_barrier(c, barrier, n, 60); /* killed in here */
    _exit(5);
  }
  close(p[1]);
  char r;
  ASSERT_EQ(read(p[0], &r, 1), 1);
  close(p[0]);
  return pid;
}

typedef struct {
  const char *addr;
  const char *name;
  int n;
  double timeout;
  mg_status_t got;
} barrier_arg_t;

static void *barrier_thread(void *arg) {
  barrier_arg_t *a = arg;
  mg_store_t *c;
  ASSERT_OK(mg_store_connect(a->addr, TOKEN, 10, &c));
  a->got = mg_store_barrier(c, a->name, a->n, a->timeout);
  ASSERT_OK(mg_store_close(c));
  return NULL;
}

static void test_killed_client(void) {
  mg_store_t *srv;
  char addr[128];
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 10, &srv));
  ASSERT_OK(mg_store_address(srv, addr, sizeof addr));
  pid_t pid = fork_client(addr, "kb", 3);
  /* Make sure the child is in the barrier: a short visit of ours must see 2 of 3 there. */
  int seen = 0;
  for (int i = 0; i < 100 && !seen; i++) {
    ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_barrier(srv, "kb", 3, 0.05));
    seen = strstr(mg_last_error(), "2 of 3 parties") != NULL;
  }
  ASSERT(seen);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  reap(pid, SIGKILL);
  /* Once the server has seen the connection end, a visit of ours is alone there: 1 of 3. */
  seen = 0;
  for (int i = 0; i < 200 && !seen; i++) {
    ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_barrier(srv, "kb", 3, 0.05));
    seen = strstr(mg_last_error(), "1 of 3 parties") != NULL;
  }
  ASSERT(seen);
  /* Had the dead client still counted, these two would complete a barrier of three. */
  pthread_t t;
  barrier_arg_t a = {addr, "kb", 3, 0.5, MG_ERR_INTERNAL};
  ASSERT_EQ(pthread_create(&t, NULL, barrier_thread, &a), 0);
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg_store_barrier(srv, "kb", 3, 0.5));
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_STATUS(MG_ERR_TIMED_OUT, a.got);
  /* three live parties pass */
  pthread_t t2[2];
  barrier_arg_t a2[2] = {{addr, "kb", 3, 10, MG_ERR_INTERNAL},
                         {addr, "kb", 3, 10, MG_ERR_INTERNAL}};
  for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&t2[i], NULL, barrier_thread, &a2[i]), 0);
  ASSERT_OK(mg_store_barrier(srv, "kb", 3, 10));
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(pthread_join(t2[i], NULL), 0);
    ASSERT_STATUS(MG_OK, a2[i].got);
  }
  printf("client killed in a barrier: no longer counted; three live parties pass\n");

  /* a client killed in the middle of a frame */
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    mg_store_t *c;
    if (mg_store_connect(addr, TOKEN, 10, &c) != MG_OK) _exit(3);
    static char big[MG_STORE_VALUE_MAX];
    memset(big, 'x', sizeof big);
    if (write(p[1], "r", 1) != 1) _exit(4);
    for (;;) mg_store_set(c, "big", big, sizeof big, 60); /* killed while sending */
  }
  char r;
  ASSERT_EQ(read(p[0], &r, 1), 1);
  /* Its first value has arrived: it is sending the next ones. */
  int sent = 0;
  const double t0 = mg__now();
  while (!sent) {
    ASSERT_OK(mg_store_check(srv, "big", &sent, 5));
    ASSERT_LT_F(mg__now() - t0, 10.0);
    if (!sent) sleep_s(0.001);
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  reap(pid, SIGKILL);
  close(p[0]);
  close(p[1]);
  ASSERT_OK(mg_store_set(srv, "after", "ok", 2, 5));
  char buf[8];
  size_t len;
  ASSERT_OK(mg_store_get(srv, "after", buf, sizeof buf, &len, 5));
  ASSERT_EQ(len, 2);
  printf("client killed while sending 1 MiB frames: the server serves on\n");
  ASSERT_OK(mg_store_close(srv));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* what was printed survives a failed assertion */
  test_killed_server();
  test_stopped_server();
  test_killed_client();
  printf("boot_kill: ok\n");
  return 0;
}
