/*
 * fdpass.c -- boxes that receive file descriptors from other processes of the host (fdpass.h).
 *
 * A box is a listening Unix SOCK_SEQPACKET socket; each message is one connection: the sender
 * connects, checks that the box's owner is of its own user (SO_PEERCRED: the credentials of the
 * process that listens, so that a descriptor never goes to another user's process that took the
 * name of one that died), sends one packet with the descriptor attached, and closes. The receiver
 * accepts, checks the sender's user the same way, and reads the packet.
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

#define MG__FDBOX_MSG 256    /* bytes of a message at most */
#define MG__FDBOX_BACKLOG 64 /* messages a box holds before senders wait */

/* The socket address of the box named `name`: abstract (a NUL first, no file), of exactly the
 * name's length. */
static socklen_t mg__fdbox_addr(const char *name, struct sockaddr_un *a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  const size_t n = strnlen(name, MG__FDBOX_NAME - 1);
  memcpy(a->sun_path + 1, name, n);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Waits until fd is ready for events or deadline passes (in steps of at most a second). 1
 * ready, 0 the deadline passed. */
static int mg__fdbox_poll(int fd, short events, double deadline) {
  for (;;) {
    const double left = deadline - mg__now();
    if (left <= 0) return 0;
    struct pollfd p = {fd, events, 0};
    if (poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1) > 0) return 1;
  }
}

/* Whether the process at the other end of the connected socket s is of this user. */
static int mg__fdbox_same_user(int s) {
  struct ucred cr;
  socklen_t len = sizeof cr;
  return getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.uid == getuid();
}

mg_status_t mg__fdbox_open(mg__fdbox_t *box) {
  box->sock = -1;
  box->name[0] = '\0';
  uint64_t token = 0;
  if (getrandom(&token, sizeof token, 0) != (ssize_t)sizeof token)
    return mg__error_errno(MG_ERR_SYSTEM, errno, "a descriptor box's name: getrandom");
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return mg__error_errno(MG_ERR_SYSTEM, errno, "a descriptor box: socket");
  char name[MG__FDBOX_NAME];
  snprintf(name, sizeof name, "mgcomm-fd-%d-%016llx", (int)getpid(), (unsigned long long)token);
  struct sockaddr_un a;
  const socklen_t alen = mg__fdbox_addr(name, &a);
  const char *call = "bind";
  int ok = bind(s, (const struct sockaddr *)&a, alen) == 0;
  if (ok) {
    call = "listen";
    ok = listen(s, MG__FDBOX_BACKLOG) == 0;
  }
  if (!ok) {
    const int err = errno;
    close(s);
    return mg__error_errno(MG_ERR_SYSTEM, err, "a descriptor box %s: %s", name, call);
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

/* Connects s to the box `to`, retrying while its backlog is full until deadline. */
static mg_status_t mg__fdbox_connect(int s, const char *to, double deadline) {
  struct sockaddr_un a;
  const socklen_t alen = mg__fdbox_addr(to, &a);
  for (;;) {
    if (connect(s, (const struct sockaddr *)&a, alen) == 0) return MG_OK;
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EAGAIN)
      return mg__error_errno(MG_ERR_SYSTEM, err, "connecting to box %s (its process gone, or "
                             "in another network namespace?)", to);
    /* The box holds MG__FDBOX_BACKLOG messages already: a moment for its owner to take one. */
    if (mg__now() > deadline)
      return mg__error(MG_ERR_TIMED_OUT, "box %s did not take a message by the deadline", to);
    poll(NULL, 0, 1);
  }
}

mg_status_t mg__fdbox_send(const char *to, const void *msg, size_t len, int fd, double deadline) {
  if (len == 0 || len > MG__FDBOX_MSG)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "a message of %zu bytes to box %s (1 to %d)", len,
                     to, MG__FDBOX_MSG);
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return mg__error_errno(MG_ERR_SYSTEM, errno, "sending to box %s: socket", to);
  mg_status_t st = mg__fdbox_connect(s, to, deadline);
  if (st == MG_OK && !mg__fdbox_same_user(s))
    st = mg__error(MG_ERR_SYSTEM, "box %s belongs to another user: nothing sent", to);
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {(void *)msg, len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof ctl.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  while (st == MG_OK && sendmsg(s, &m, MSG_NOSIGNAL) != (ssize_t)len) {
    const int err = errno;
    if (err == EINTR) continue;
    if (err != EAGAIN)
      st = mg__error_errno(MG_ERR_SYSTEM, err, "sending to box %s", to);
    else if (!mg__fdbox_poll(s, POLLOUT, deadline))
      st = mg__error(MG_ERR_TIMED_OUT, "box %s did not take a message by the deadline", to);
  }
  close(s);
  return st;
}

/* Reads the one packet of the accepted connection c into msg (*got bytes) and its descriptor
 * into *fd (-1: none; any more are closed). 1, or 0 for a packet to drop (cut short, none by the
 * deadline); its descriptor is then closed. */
static int mg__fdbox_take(int c, void *msg, size_t len, size_t *got, int *fd, double deadline) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } ctl;
  struct iovec iov = {msg, len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                     .msg_controllen = sizeof ctl.buf};
  ssize_t n = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
  while (n < 0 && (errno == EINTR || (errno == EAGAIN && mg__fdbox_poll(c, POLLIN, deadline))))
    n = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
  if (n <= 0) return 0; /* nothing by the deadline, or closed without a packet */
  for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h != NULL; h = CMSG_NXTHDR(&m, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int d;
      memcpy(&d, CMSG_DATA(h) + i * sizeof(int), sizeof d);
      if (*fd < 0) *fd = d;
      else close(d);
    }
  }
  if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return 0;
  }
  *got = (size_t)n;
  return 1;
}

mg_status_t mg__fdbox_recv(mg__fdbox_t *box, void *msg, size_t len, size_t *got, int *fd,
                           double deadline) {
  *fd = -1;
  *got = 0;
  if (box->sock < 0) return mg__error(MG_ERR_INVALID_ARGUMENT, "a closed descriptor box");
  for (;;) {
    const int c = accept4(box->sock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c >= 0) {
      const int ok = mg__fdbox_same_user(c) && mg__fdbox_take(c, msg, len, got, fd, deadline);
      close(c);
      if (ok) return MG_OK;
      /* Another user's, or cut short: dropped. Then no later than the deadline, even if others
       * keep coming. */
      if (mg__now() > deadline)
        return mg__error(MG_ERR_TIMED_OUT, "box %s: no message by the deadline", box->name);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return mg__error_errno(MG_ERR_SYSTEM, errno, "receiving in box %s", box->name);
    if (!mg__fdbox_poll(box->sock, POLLIN, deadline))
      return mg__error(MG_ERR_TIMED_OUT, "box %s: no message by the deadline", box->name);
  }
}
