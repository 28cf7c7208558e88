/*
 * fdpass.c -- boxes that receive file descriptors from other processes of the host (fdpass.h).
 */
#include "base/fdpass.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"

#define MG__FDBOX_MSG 256 /* bytes of a message at most */

/* The socket address of the box named `name`: abstract (a NUL first, no file), of exactly the
 * name's length. */
static socklen_t mg__fdbox_addr(const char *name, struct sockaddr_un *a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  const size_t n = strnlen(name, MG__FDBOX_NAME - 1);
  memcpy(a->sun_path + 1, name, n);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Milliseconds until deadline for poll, at least 1 while it has not passed; -1 when it has. */
static int mg__fdbox_wait_ms(double deadline) {
  const double left = deadline - mg__now();
  if (left <= 0) return -1;
  return left > 1000 ? 1000 : (int)(left * 1000) + 1;
}

mg_status_t mg__fdbox_open(mg__fdbox_t *box) {
  box->sock = -1;
  box->name[0] = '\0';
  uint64_t token = 0;
  if (getrandom(&token, sizeof token, 0) != (ssize_t)sizeof token)
    return mg__error_errno(MG_ERR_SYSTEM, errno, "a descriptor box's name: getrandom");
  const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return mg__error_errno(MG_ERR_SYSTEM, errno, "a descriptor box: socket");
  const int on = 1;
  char name[MG__FDBOX_NAME];
  snprintf(name, sizeof name, "mgcomm-fd-%d-%016llx", (int)getpid(), (unsigned long long)token);
  struct sockaddr_un a;
  const socklen_t alen = mg__fdbox_addr(name, &a);
  if (setsockopt(s, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0 ||
      bind(s, (const struct sockaddr *)&a, alen) != 0) {
    const int err = errno;
    close(s);
    return mg__error_errno(MG_ERR_SYSTEM, err, "a descriptor box %s", name);
  }
  box->sock = s;
  memcpy(box->name, name, sizeof name);
  return MG_OK;
}

void mg__fdbox_close(mg__fdbox_t *box) {
  if (box->sock >= 0) close(box->sock);
  box->sock = -1;
  box->name[0] = '\0';
}

mg_status_t mg__fdbox_send(const char *to, const void *msg, size_t len, int fd, double deadline) {
  if (len == 0 || len > MG__FDBOX_MSG)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "a message of %zu bytes to box %s (1 to %d)", len,
                     to, MG__FDBOX_MSG);
  const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return mg__error_errno(MG_ERR_SYSTEM, errno, "sending to box %s: socket", to);
  struct sockaddr_un a;
  const socklen_t alen = mg__fdbox_addr(to, &a);
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {(void *)msg, len};
  struct msghdr m = {.msg_name = &a, .msg_namelen = alen, .msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof ctl.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  mg_status_t st = MG_OK;
  for (;;) {
    if (sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)len) break;
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK && err != ENOBUFS) {
      st = mg__error_errno(MG_ERR_SYSTEM, err, "sending to box %s (its process gone, or in "
                           "another network namespace?)", to);
      break;
    }
    /* The receiver's queue is full: a datagram socket cannot wait for room; retry shortly. */
    const int ms = mg__fdbox_wait_ms(deadline);
    if (ms < 0) {
      st = mg__error(MG_ERR_TIMED_OUT, "box %s did not take a message by the deadline", to);
      break;
    }
    poll(NULL, 0, ms < 2 ? ms : 2);
  }
  close(s);
  return st;
}

/* The descriptors of a received message's control data: the first into *fd, any more closed;
 * whether its sender is of this user. */
static int mg__fdbox_take(struct msghdr *m, int *fd) {
  int same_user = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c != NULL; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level != SOL_SOCKET) continue;
    if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
      struct ucred cr;
      memcpy(&cr, CMSG_DATA(c), sizeof cr);
      same_user = cr.uid == getuid();
    } else if (c->cmsg_type == SCM_RIGHTS) {
      const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < n; i++) {
        int d;
        memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
        if (*fd < 0) *fd = d;
        else close(d);
      }
    }
  }
  return same_user;
}

mg_status_t mg__fdbox_recv(mg__fdbox_t *box, void *msg, size_t len, size_t *got, int *fd,
                           double deadline) {
  *fd = -1;
  *got = 0;
  if (box->sock < 0) return mg__error(MG_ERR_INVALID_ARGUMENT, "a closed descriptor box");
  for (;;) {
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
    } ctl;
    struct iovec iov = {msg, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    const ssize_t n = recvmsg(box->sock, &m, MSG_CMSG_CLOEXEC);
    if (n >= 0) {
      int d = -1;
      if (mg__fdbox_take(&m, &d) && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        *fd = d;
        *got = (size_t)n;
        return MG_OK;
      }
      if (d >= 0) close(d); /* another user's, or cut short: dropped */
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return mg__error_errno(MG_ERR_SYSTEM, errno, "receiving in box %s", box->name);
    const int ms = mg__fdbox_wait_ms(deadline);
    if (ms < 0)
      return mg__error(MG_ERR_TIMED_OUT, "box %s: no message by the deadline", box->name);
    struct pollfd p = {box->sock, POLLIN, 0};
    poll(&p, 1, ms);
  }
}
