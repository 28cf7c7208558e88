/*
 * net.c -- TCP plumbing for the store (see net.h): addresses, listen, connect, bounded I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/net.h"
#include "base/clock.h"
#include "base/error.h"

mg_status_t mg__net_parse(const char *address, int allow_port0, const char *what, char *host,
                          size_t hostlen, int *port) {
  if (address == NULL || address[0] == '\0')
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: the store address is empty (want host:port)",
                     what);
  const char *colon;
  const char *hbeg = address;
  size_t hlen;
  if (address[0] == '[') {
    const char *close = strchr(address, ']');
    if (close == NULL || close[1] != ':')
      return mg__error(MG_ERR_INVALID_ARGUMENT,
                       "%s='%s' is not [v6-address]:port", what, address);
    hbeg = address + 1;
    hlen = (size_t)(close - hbeg);
    colon = close + 1;
  } else {
    colon = strrchr(address, ':');
    if (colon == NULL)
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s='%s' has no port (want host:port)", what,
                       address);
    hlen = (size_t)(colon - address);
    if (memchr(address, ':', hlen) != NULL)
      return mg__error(MG_ERR_INVALID_ARGUMENT,
                       "%s='%s': an IPv6 address goes in brackets ([::1]:29500)", what, address);
  }
  if (hlen == 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s='%s' has no host (the store binds only the address it is given; write "
                     "0.0.0.0 to mean every interface)", what, address);
  if (hlen >= hostlen)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s='%s': the host is longer than %zu bytes", what,
                     address, hostlen - 1);
  const char *ps = colon + 1;
  char *end = NULL;
  errno = 0;
  long p = strtol(ps, &end, 10);
  if (ps[0] < '0' || ps[0] > '9' || errno != 0 || *end != '\0' || p < (allow_port0 ? 0 : 1) ||
      p > 65535)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s='%s': the port is not a number in %d..65535",
                     what, address, allow_port0 ? 0 : 1);
  memcpy(host, hbeg, hlen);
  host[hlen] = '\0';
  *port = (int)p;
  return MG_OK;
}

void mg__net_format(const char *host, int port, char *buf, size_t len) {
  if (strchr(host, ':') != NULL)
    snprintf(buf, len, "[%s]:%d", host, port);
  else
    snprintf(buf, len, "%s:%d", host, port);
}

static int mg__resolve(const char *host, int port, int passive, struct addrinfo **res) {
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  return getaddrinfo(host, ps, &hints, res);
}

static int mg__port_of(int fd) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  return -1;
}

mg_status_t mg__net_listen(const char *host, int port, int *fd_out, int *bound_port) {
  struct addrinfo *res = NULL;
  int gai = mg__resolve(host, port, 1, &res);
  if (gai != 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "cannot resolve store host '%s': %s", host,
                     gai_strerror(gai));
  int err = 0;
  mg_status_t st = MG_ERR_SYSTEM;
  for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    /* Failing to set SO_REUSEADDR only makes a quick restart on the same port fail with
     * EADDRINUSE, which bind reports below. */
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      int p = mg__port_of(fd);
      if (p >= 0) {
        *fd_out = fd;
        *bound_port = p;
        st = MG_OK;
        break;
      }
    }
    err = errno;
    close(fd); /* a socket that never connected: nothing to lose on close */
  }
  freeaddrinfo(res);
  if (st < 0) {
    char a[MG__NET_HOST_MAX + 16];
    mg__net_format(host, port, a, sizeof a);
    return mg__error_errno(MG_ERR_SYSTEM, err,
                           "cannot listen on %s (another store or program may hold the port)", a);
  }
  return MG_OK;
}

/* Milliseconds poll may sleep before deadline: at least 0, rounded up so it never spins. */
static int mg__ms_left(double deadline) {
  double left = deadline - mg__now();
  if (left <= 0) return 0;
  double ms = ceil(left * 1000.0);
  return ms > 1e9 ? 1000000000 : (int)ms;
}

static int mg__is_refusal(int e) {
  return e == ECONNREFUSED || e == ENETUNREACH || e == EHOSTUNREACH || e == ETIMEDOUT ||
         e == ECONNRESET || e == EADDRNOTAVAIL || e == ENETDOWN || e == EHOSTDOWN;
}

mg__io_t mg__net_connect(const char *host, int port, double deadline, int *fd_out, int *err) {
  struct addrinfo *res = NULL;
  int gai = mg__resolve(host, port, 0, &res);
  if (gai != 0) {
    if (gai == EAI_AGAIN) {
      *err = EAGAIN;
      return MG__IO_REFUSED; /* the resolver is busy: worth another try */
    }
    *err = gai < 0 ? gai : -gai; /* negative: the caller reports gai_strerror(*err) (glibc) */
    return MG__IO_ERROR;
  }
  mg__io_t out = MG__IO_REFUSED;
  *err = ECONNREFUSED;
  for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      *err = errno;
      out = MG__IO_ERROR;
      continue;
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      struct pollfd pfd = {fd, POLLOUT, 0};
      for (;;) {
        int n = poll(&pfd, 1, mg__ms_left(deadline));
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
          errno = ETIMEDOUT;
          rc = -2;
        } else if (n < 0) {
          rc = -1;
        } else {
          int soerr = 0;
          socklen_t sl = sizeof soerr;
          if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) soerr = errno;
          errno = soerr;
          rc = soerr == 0 ? 0 : -1;
        }
        break;
      }
    }
    if (rc == 0) {
      int one = 1;
      /* Without TCP_NODELAY requests are only slower (Nagle), never wrong. */
      (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      *fd_out = fd;
      out = MG__IO_OK;
      break;
    }
    *err = errno;
    close(fd); /* never connected: nothing to flush */
    if (rc == -2) {
      out = MG__IO_TIMEOUT;
      break;
    }
    out = mg__is_refusal(*err) ? MG__IO_REFUSED : MG__IO_ERROR;
  }
  freeaddrinfo(res);
  return out;
}

static int mg__gone(int e) { return e == ECONNRESET || e == EPIPE || e == ENOTCONN; }

mg__io_t mg__net_send_all(int fd, const void *buf, size_t len, double deadline, int *err) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      *err = errno;
      return mg__gone(errno) ? MG__IO_EOF : MG__IO_ERROR;
    }
    struct pollfd pfd = {fd, POLLOUT, 0};
    int r = poll(&pfd, 1, mg__ms_left(deadline));
    if (r < 0 && errno != EINTR) {
      *err = errno;
      return MG__IO_ERROR;
    }
    if (r == 0) return MG__IO_TIMEOUT;
  }
  return MG__IO_OK;
}

mg__io_t mg__net_recv_all(int fd, void *buf, size_t len, double deadline, int *err) {
  char *p = buf;
  while (len > 0) {
    ssize_t n = recv(fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n == 0) return MG__IO_EOF;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *err = errno;
      return mg__gone(errno) ? MG__IO_EOF : MG__IO_ERROR;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = poll(&pfd, 1, mg__ms_left(deadline));
    if (r < 0 && errno != EINTR) {
      *err = errno;
      return MG__IO_ERROR;
    }
    if (r == 0) return MG__IO_TIMEOUT;
  }
  return MG__IO_OK;
}
