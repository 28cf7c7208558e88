/*
 * host_meet.c -- how the ranks of a host communicator find its segment without a name in
 * /dev/shm, so that no end of a job, however abrupt, leaves anything behind.
 *
 * The segment is a memfd (anonymous shared memory: it lives while a descriptor or a mapping of
 * it does). The ranks meet at a unix socket in Linux's abstract namespace, named after the
 * communicator's id ("@mgcomm-<32 hex>"): no file, and the kernel drops the name with the last
 * descriptor of the socket. The first rank to arrive binds the name and creates the segment;
 * every rank that has the segment holds both descriptors until every rank has attached, and
 * hands both (SCM_RIGHTS) to each rank that connects: the listening socket itself travels, so
 * the meeting point outlives any rank that leaves or dies early. Once every rank has attached,
 * each closes its two descriptors; its mapping keeps the segment, and the name is gone.
 *
 * A connection is answered only for a process of the same user (SO_PEERCRED), and a rank takes
 * the segment only from one: the access that mode 0600 gave a file in /dev/shm. Ranks must share
 * the network namespace (abstract sockets belong to it), as they share the pid namespace for the
 * liveness checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backend/host/host_shm.h"
#include "base/clock.h"
#include "base/error.h"

/* Connections that may wait to be answered: ranks arriving together. The kernel caps it at
 * net.core.somaxconn; a rank that finds the queue full tries again. */
#define MG__MEET_BACKLOG 4096

static socklen_t mg__meet_addr(const char *name, struct sockaddr_un *a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  size_t n = strlen(name + 1); /* "/mgcomm-<hex>" without the slash, after a NUL: abstract */
  memcpy(a->sun_path + 1, name + 1, n);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int mg__same_user(int sock) {
  struct ucred cr;
  socklen_t len = sizeof cr;
  return getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && cr.uid == geteuid();
}

static void mg__meet_nap(void) {
  struct timespec ts = {0, 1000000}; /* 1 ms */
  nanosleep(&ts, NULL);              /* an early wake-up only shortens the nap */
}

/* Waits on connected socket c for a rank's answer: 1 and the two descriptors; 0 when the
 * connection ended without one (the rank that held the socket closed it: every rank attached,
 * or it left), and the caller starts over; < 0 on error (message set). */
static int mg__meet_receive(int c, const char *name, double deadline, const atomic_int *aborting,
                            int *fd, int *lfd) {
  for (;;) {
    if (aborting != NULL && atomic_load(aborting))
      return mg__error(MG_ERR_ABORTED, "attach: the communicator was aborted");
    if (mg__now() > deadline)
      return mg__error(MG_ERR_TIMED_OUT, "no rank that holds segment %s answered at its socket",
                       name);
    struct pollfd p = {c, POLLIN, 0};
    if (poll(&p, 1, 10) <= 0) continue; /* 10 ms, to look at the abort flag and the deadline */
    char byte;
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(2 * sizeof(int))];
    } ctl;
    struct iovec iov = {&byte, 1};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof ctl.buf;
    ssize_t got = recvmsg(c, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got > 0 && (m.msg_flags & MSG_CTRUNC))
      return mg__error(MG_ERR_SYSTEM, "receiving the descriptors of segment %s: the kernel "
                       "dropped them (is the process out of file descriptors? ulimit -n)", name);
    struct cmsghdr *h = got == 1 ? CMSG_FIRSTHDR(&m) : NULL;
    if (h != NULL && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
        h->cmsg_len == CMSG_LEN(2 * sizeof(int))) {
      memcpy(fd, CMSG_DATA(h), sizeof(int));
      memcpy(lfd, CMSG_DATA(h) + sizeof(int), sizeof(int));
      return 1;
    }
    if (h != NULL && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
      /* Not the two descriptors of a segment: close what came, and treat it as no answer. */
      int n = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < n; i++) {
        int x;
        memcpy(&x, CMSG_DATA(h) + (size_t)i * sizeof(int), sizeof x);
        close(x); /* not ours to keep */
      }
    }
    return 0; /* end of connection, reset, or a malformed answer */
  }
}

mg_status_t mg__hmeet_open(const char *name, size_t bytes, double deadline,
                           const atomic_int *aborting, int *fd_out, int *lfd_out, int *created) {
  struct sockaddr_un a;
  socklen_t alen = mg__meet_addr(name, &a);
  for (;;) {
    if (aborting != NULL && atomic_load(aborting))
      return mg__error(MG_ERR_ABORTED, "attach: the communicator was aborted");
    if (mg__now() > deadline)
      return mg__error(MG_ERR_TIMED_OUT, "segment %s: the rank that made it never answered at "
                       "its socket", name);
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c < 0) return mg__error_errno(MG_ERR_SYSTEM, errno, "socket(AF_UNIX) for %s", name);
    if (connect(c, (const struct sockaddr *)&a, alen) == 0) {
      int fd = -1, lfd = -1, got = 0;
      if (!mg__same_user(c)) {
        close(c); /* refused below */
        return mg__error(MG_ERR_REMOTE, "segment %s is held by a process of another user",
                         name);
      }
      got = mg__meet_receive(c, name, deadline, aborting, &fd, &lfd);
      close(c); /* the answer, if any, is in fd and lfd */
      if (got < 0) return (mg_status_t)got;
      if (got == 1) {
        *fd_out = fd;
        *lfd_out = lfd;
        *created = 0;
        return MG_OK;
      }
      mg__meet_nap(); /* the holders closed the socket: the name is free again, or soon */
      continue;
    }
    int e = errno;
    close(c); /* never connected */
    if (e == EAGAIN || e == EINTR) { /* the queue is full: the holders are answering */
      mg__meet_nap();
      continue;
    }
    if (e != ECONNREFUSED)
      return mg__error_errno(MG_ERR_SYSTEM, e, "connecting to the socket of segment %s", name);
    /* Nobody listens: take the name and make the segment, unless another rank just took it. */
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l < 0) return mg__error_errno(MG_ERR_SYSTEM, errno, "socket(AF_UNIX) for %s", name);
    if (bind(l, (const struct sockaddr *)&a, alen) != 0) {
      e = errno;
      close(l); /* never bound */
      if (e != EADDRINUSE)
        return mg__error_errno(MG_ERR_SYSTEM, e, "binding the socket of segment %s", name);
      mg__meet_nap(); /* its holder is about to listen */
      continue;
    }
    int fd = memfd_create(name + 1, MFD_CLOEXEC);
    if (fd < 0) {
      e = errno;
      close(l); /* frees the name */
      return mg__error_errno(MG_ERR_SYSTEM, e, "memfd_create(%s)", name + 1);
    }
    if (ftruncate(fd, (off_t)bytes) != 0) {
      e = errno;
      close(fd); /* nothing else has it: freed */
      close(l);
      return mg__error_errno(MG_ERR_SYSTEM, e, "sizing segment %s to %zu bytes", name, bytes);
    }
    *fd_out = fd;
    *lfd_out = l;
    *created = 1;
    return MG_OK;
  }
}

mg_status_t mg__hmeet_listen(int lfd, const char *name) {
  if (listen(lfd, MG__MEET_BACKLOG) != 0)
    return mg__error_errno(MG_ERR_SYSTEM, errno, "listening at the socket of segment %s", name);
  return MG_OK;
}

void mg__hmeet_serve(int lfd, int fd) {
  for (;;) {
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return; /* EAGAIN: nobody waits (the socket is non-blocking) */
    }
    if (mg__same_user(c)) {
      int fds[2] = {fd, lfd};
      char byte = 'm';
      union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof fds)];
      } ctl;
      memset(&ctl, 0, sizeof ctl);
      struct iovec iov = {&byte, 1};
      struct msghdr m = {0};
      m.msg_iov = &iov;
      m.msg_iovlen = 1;
      m.msg_control = ctl.buf;
      m.msg_controllen = sizeof ctl.buf;
      struct cmsghdr *h = CMSG_FIRSTHDR(&m);
      h->cmsg_level = SOL_SOCKET;
      h->cmsg_type = SCM_RIGHTS;
      h->cmsg_len = CMSG_LEN(sizeof fds);
      memcpy(CMSG_DATA(h), fds, sizeof fds);
      /* A fresh connection's buffer takes it at once; a rank that went away in between gets
       * nothing and tries again (MSG_NOSIGNAL: no SIGPIPE here). */
      (void)sendmsg(c, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    close(c); /* the answer is queued; the rank reads it after the close */
  }
}
