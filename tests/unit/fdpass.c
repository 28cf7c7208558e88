/*
 * fdpass.c -- descriptor boxes (src/base/fdpass.c), between two real processes: a child sends
 * a memfd it wrote to the parent's box, which reads the child's bytes through it; a message
 * without a descriptor comes without one; a receive with nothing sent ends at its deadline; a
 * send to a box that does not exist fails at once; a full box makes the sender time out at its
 * deadline (never block), and every message queued is then received in order.
 */
#include "base/fdpass.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "test.h"

static void child(const char *to) {
  const int fd = memfd_create("fdpass-test", MFD_CLOEXEC);
  char text[64];
  const int n = snprintf(text, sizeof text, "written by pid %d", (int)getpid());
  if (fd < 0 || write(fd, text, (size_t)n) != n) _exit(2);
  const char msg[] = "with a descriptor";
  if (mg__fdbox_send(to, msg, sizeof msg, fd, mg__now() + 10) != MG_OK) _exit(3);
  close(fd); /* the parent's copy stays open */
  const char plain[] = "without";
  if (mg__fdbox_send(to, plain, sizeof plain, -1, mg__now() + 10) != MG_OK) _exit(4);
  _exit(0);
}

int main(void) {
  mg__fdbox_t box;
  ASSERT_OK(mg__fdbox_open(&box));
  ASSERT_CONTAINS(box.name, "mgcomm-fd-");
  fflush(stdout);
  const pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) child(box.name);

  char msg[256];
  size_t got = 0;
  int fd = -1;
  ASSERT_OK(mg__fdbox_recv(&box, msg, sizeof msg, &got, &fd, mg__now() + 10));
  ASSERT_STR_EQ(msg, "with a descriptor");
  ASSERT_EQ(got, sizeof "with a descriptor");
  ASSERT(fd >= 0);
  char text[64] = "", want[64];
  snprintf(want, sizeof want, "written by pid %d", (int)pid);
  ASSERT_EQ(pread(fd, text, sizeof text - 1, 0), (long)strlen(want));
  ASSERT_STR_EQ(text, want);
  close(fd);
  ASSERT_OK(mg__fdbox_recv(&box, msg, sizeof msg, &got, &fd, mg__now() + 10));
  ASSERT_STR_EQ(msg, "without");
  ASSERT_EQ(fd, -1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  printf("a memfd passed from pid %d: read \"%s\" through it\n", (int)pid, text);

  /* Nothing sent: the receive ends at its deadline. */
  double t0 = mg__now();
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg__fdbox_recv(&box, msg, sizeof msg, &got, &fd, t0 + 0.2));
  ASSERT_IN_F(mg__now() - t0, 0.19, 2.0);

  /* No such box. */
  ASSERT_STATUS(MG_ERR_SYSTEM, mg__fdbox_send("mgcomm-fd-0-none", "x", 1, -1, mg__now() + 1));

  /* A full box: the sender times out at its deadline; what was queued arrives in order. */
  int sent = 0;
  mg_status_t st = MG_OK;
  for (; sent < 100000 && st == MG_OK; sent++) {
    t0 = mg__now();
    st = mg__fdbox_send(box.name, &sent, sizeof sent, -1, t0 + 0.05);
  }
  ASSERT_EQ(st, MG_ERR_TIMED_OUT);
  ASSERT_IN_F(mg__now() - t0, 0.04, 2.0);
  sent--; /* the last one did not go */
  ASSERT_GT(sent, 0);
  for (int i = 0; i < sent; i++) {
    int v = -1;
    ASSERT_OK(mg__fdbox_recv(&box, &v, sizeof v, &got, &fd, mg__now() + 1));
    ASSERT_EQ(v, i);
  }
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg__fdbox_recv(&box, msg, sizeof msg, &got, &fd, mg__now()));
  printf("a full box after %d messages: the sender timed out; all %d received in order\n", sent,
         sent);
  mg__fdbox_close(&box);
  ASSERT_EQ(box.sock, -1);
  return 0;
}
