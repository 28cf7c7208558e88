/*
 * error.h -- internal error reporting and the check-macro family.
 *
 * A failing function sets the calling thread's message with mg__error() at the place where the
 * error starts and returns the status; callers propagate the status without rewriting the
 * message (MG_CHECK). Foreign error domains (errno, CUDA, NCCL) get their own macros in the
 * layer that calls them; all of them end in mg__error().
 */
#ifndef MG_BASE_ERROR_H
#define MG_BASE_ERROR_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mgcomm.h"

#define MG__ERROR_LEN 1024 /* bytes of a thread's or communicator's last-error message */

/* Sets the calling thread's last error to the formatted message and returns status. Also logs it
 * at INFO (subsystem ALL) so MGCOMM_DEBUG=INFO shows where every error started. */
mg_status_t mg__error(mg_status_t status, const char *fmt, ...)
    __attribute__((cold, format(printf, 2, 3)));
mg_status_t mg__verror(mg_status_t status, const char *fmt, va_list ap)
    __attribute__((cold, format(printf, 2, 0)));
/* The same, for an errno value: appends ": <strerror(err)> (errno N)". */
mg_status_t mg__error_errno(mg_status_t status, int err, const char *fmt, ...)
    __attribute__((cold, format(printf, 3, 4)));
/* Prefixes the calling thread's current message with "prefix: " (used when an error crosses a
 * layer that adds context, such as the rank and operation). */
void mg__error_prefix(const char *fmt, ...) __attribute__((cold, format(printf, 1, 2)));

/* Propagate a status; the message was set where the error started. */
#define MG_CHECK(call)                                    \
  do {                                                    \
    mg_status_t mg__st_ = (call);                         \
    if (__builtin_expect(mg__st_ < 0, 0)) return mg__st_; \
  } while (0)

#define MG_CHECK_GOTO(call, st, label)         \
  do {                                         \
    (st) = (call);                             \
    if ((st) < 0) goto label;                  \
  } while (0)

/* An operating-system call returning -1 with errno; EINTR is retried. */
#define MG_SYS_CHECK_GOTO(call, st, label, what)                                \
  do {                                                                         \
    int mg__rc_;                                                               \
    do {                                                                       \
      mg__rc_ = (int)(call);                                                   \
    } while (mg__rc_ == -1 && errno == EINTR);                                 \
    if (mg__rc_ == -1) {                                                       \
      (st) = mg__error_errno(MG_ERR_SYSTEM, errno, "%s", (what));              \
      goto label;                                                              \
    }                                                                          \
  } while (0)

/* Broken internal invariant: never caller error. Active in every build; aborts with location. */
#define MG_ASSERT(cond)                                                                     \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "mgcomm: internal invariant failed at %s:%d: %s\n", __FILE__,         \
              __LINE__, #cond);                                                             \
      abort();                                                                              \
    }                                                                                       \
  } while (0)

#endif
