/*
 * fdpass.h -- passing file descriptors between processes of one host: a box (a listening Unix
 * socket of this process, named in the abstract namespace, so nothing is left in the file
 * system) that other processes send small messages to, each with at most one descriptor
 * attached (SCM_RIGHTS). What moves a cuMem export handle (a POSIX descriptor) from the process
 * that owns the memory to those that map it, which no byte stream between hosts can carry.
 *
 * Each message is one connection to the box (a SOCK_SEQPACKET socket): the sender sends only to
 * a box whose owner is of its own user, the receiver drops a message of another user's process
 * unread (both check SO_PEERCRED), so a descriptor never reaches another user's process, even
 * one that took the name of a box whose owner died. Every wait is bounded by a deadline
 * (base/clock.h). Thread-safe as far as the socket calls are: one box serves one receiver at a
 * time.
 */
#ifndef MG_BASE_FDPASS_H
#define MG_BASE_FDPASS_H

#include <stddef.h>

#include "mgcomm.h"

#define MG__FDBOX_NAME 48 /* bytes of a box's name, its terminating NUL included */

typedef struct mg__fdbox {
  int sock;                  /* -1: closed */
  char name[MG__FDBOX_NAME]; /* what senders address it by (printable; "" while closed) */
} mg__fdbox_t;

/* Opens a box with a fresh name (the pid and a random token). MG_ERR_SYSTEM on failure, with
 * the reason. */
mg_status_t mg__fdbox_open(mg__fdbox_t *box);
/* Closes box (a closed one is ignored); descriptors queued in it and not received are closed by
 * the kernel. */
void mg__fdbox_close(mg__fdbox_t *box);
/* Sends len (1..256) bytes of msg, with fd attached unless it is -1, to the box named `to`,
 * retrying while it holds 64 messages already until deadline. MG_ERR_INVALID_ARGUMENT (len);
 * MG_ERR_TIMED_OUT; MG_ERR_SYSTEM (no such box: its process is gone, or lives in another network
 * namespace; a box of another user). */
mg_status_t mg__fdbox_send(const char *to, const void *msg, size_t len, int fd, double deadline);
/* Receives one message into msg (at most len bytes; *got says how many came), and the
 * descriptor attached to it into *fd (-1: none), waiting until deadline. Messages of other
 * users, and longer than len, are dropped (their descriptors closed). MG_ERR_TIMED_OUT;
 * MG_ERR_SYSTEM; MG_ERR_INVALID_ARGUMENT (a closed box). */
mg_status_t mg__fdbox_recv(mg__fdbox_t *box, void *msg, size_t len, size_t *got, int *fd,
                           double deadline);

#endif
