/*
 * fdpass.c -- descriptor boxes (src/base/fdpass.c), between two real processes: a child sends
 * a memfd it wrote to the parent's box, which reads the child's bytes through it; a message
 * without a descriptor comes without one; a receive with nothing sent ends at its deadline; a
 * send to a box that does not exist fails at once; a full box makes the sender time out at its
 * deadline (never block), and every message queued is then received in order; run as root, a
 * box of another user (a child that dropped to nobody) gets nothing, in either direction.
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

/* As root: a child that became nobody opens a box; this process's send to it is refused, and
 * the child's send to this process's box is refused on its side. */
static void other_user(mg__fdbox_t *mine) {
  if (getuid() != 0) {
    printf("not root: the other-user case is skipped\n");
    return;
  }
  int names[2], done[2];
  ASSERT_EQ(pipe(names), 0);
  ASSERT_EQ(pipe(done), 0);
  fflush(stdout);
  const pid_t pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    mg__fdbox_t theirs;
    if (setgid(65534) != 0 || setuid(65534) != 0 || mg__fdbox_open(&theirs) != MG_OK) _exit(2);
    if (write(names[1], theirs.name, sizeof theirs.name) != (ssize_t)sizeof theirs.name) _exit(3);
    const mg_status_t st = mg__fdbox_send(mine->name, "x", 1, -1, mg__now() + 5);
    char c;
    if (read(done[0], &c, 1) != 1) _exit(4); /* the box stays open until the parent is done */
    _exit(st == MG_ERR_SYSTEM && strstr(mg_last_error(), "another user") != NULL ? 0 : 5);
  }
  char name[MG__FDBOX_NAME];
  ASSERT_EQ(read(names[0], name, sizeof name), (long)sizeof name);
  ASSERT_STATUS(MG_ERR_SYSTEM, mg__fdbox_send(name, "x", 1, 0, mg__now() + 5));
  ASSERT_CONTAINS(mg_last_error(), "another user");
  char msg[8];
  size_t got;
  int fd;
  ASSERT_STATUS(MG_ERR_TIMED_OUT, mg__fdbox_recv(mine, msg, sizeof msg, &got, &fd, mg__now() + 0.3));
  ASSERT_EQ(write(done[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  printf("another user's box: nothing sent to it, nothing taken from it\n");
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
  other_user(&box);
  mg__fdbox_close(&box);
  ASSERT_EQ(box.sock, -1);
  return 0;
}
