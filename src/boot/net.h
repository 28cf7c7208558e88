/*
 * net.h -- the TCP plumbing under the store: address parsing, listening, connecting and whole-
 * buffer I/O, each bounded by an absolute deadline in mg__now()'s clock. Every socket is
 * close-on-exec and, on the client side, non-blocking with poll(2) doing the waiting, so no call
 * here can block past its deadline. Writes use MSG_NOSIGNAL: a peer that went away is an error
 * status, never a SIGPIPE in the user's process.
 */
#ifndef MG_BOOT_NET_H
#define MG_BOOT_NET_H

#include <stddef.h>

#include "mgcomm.h"

#define MG__NET_HOST_MAX 256 /* bytes of a host name or address, NUL included */

/* Splits "host:port" or "[v6]:port". port 0 is accepted only when allow_port0 (a server asking for
 * a free port). MG_ERR_INVALID_ARGUMENT naming `what` (e.g. "MGCOMM_STORE") and the text. */
mg_status_t mg__net_parse(const char *address, int allow_port0, const char *what, char *host,
                          size_t hostlen, int *port);

/* Formats host and port back into "host:port" ("[host]:port" when host holds a ':'). */
void mg__net_format(const char *host, int port, char *buf, size_t len);

/* A listening socket bound to exactly host:port (SO_REUSEADDR, non-blocking, close-on-exec), and
 * the port it got. MG_ERR_INVALID_ARGUMENT when host does not resolve, MG_ERR_SYSTEM naming the
 * address when it cannot be bound. */
mg_status_t mg__net_listen(const char *host, int port, int *fd, int *bound_port);

/* Outcome of one connection attempt or one transfer. */
typedef enum mg__io {
  MG__IO_OK = 0,
  MG__IO_TIMEOUT = 1,  /* the deadline passed */
  MG__IO_EOF = 2,      /* the peer closed the connection (or reset it) */
  MG__IO_REFUSED = 3,  /* connect: nobody listens there (yet), or it is unreachable */
  MG__IO_ERROR = 4     /* anything else; *err has errno */
} mg__io_t;

/* One attempt to connect to host:port before deadline. On MG__IO_OK *fd is a connected,
 * non-blocking, close-on-exec socket with TCP_NODELAY. *err gets the errno of a failure; a host
 * name that does not resolve is MG__IO_ERROR with *err negative: the EAI_* code (glibc). */
mg__io_t mg__net_connect(const char *host, int port, double deadline, int *fd, int *err);

/* Sends or receives exactly len bytes before deadline. *err gets errno on MG__IO_ERROR. */
mg__io_t mg__net_send_all(int fd, const void *buf, size_t len, double deadline, int *err);
mg__io_t mg__net_recv_all(int fd, void *buf, size_t len, double deadline, int *err);

#endif
