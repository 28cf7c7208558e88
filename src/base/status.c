/*
 * status.c -- status names and messages (from MG_STATUS_MAP), the thread-local last error,
 * and the library version.
 */
#include <string.h>

#include "base/error.h"
#include "base/log.h"

static _Thread_local char mg__last_error[MG__ERROR_LEN];

int mg_version(void) { return MGCOMM_VERSION; }

const char *mg_version_string(void) { return MGCOMM_VERSION_STRING; }

const char *mg_status_name(mg_status_t status) {
  switch (status) {
#define MG__STATUS_NAME(name, value, msg) \
  case MG_##name:                         \
    return "MG_" #name;
    MG_STATUS_MAP(MG__STATUS_NAME)
#undef MG__STATUS_NAME
    default:
      return "MG_UNKNOWN_STATUS";
  }
}

const char *mg_status_string(mg_status_t status) {
  switch (status) {
#define MG__STATUS_MSG(name, value, msg) \
  case MG_##name:                        \
    return msg;
    MG_STATUS_MAP(MG__STATUS_MSG)
#undef MG__STATUS_MSG
    default:
      return "unknown status";
  }
}

const char *mg_last_error(void) { return mg__last_error; }

size_t mg_last_error_copy(char *buf, size_t len) {
  size_t n = strlen(mg__last_error);
  if (buf != NULL && len > 0) {
    size_t k = n < len - 1 ? n : len - 1;
    memcpy(buf, mg__last_error, k);
    buf[k] = '\0';
  }
  return n;
}

mg_status_t mg__verror(mg_status_t status, const char *fmt, va_list ap) {
  char tmp[MG__ERROR_LEN];
  /* Format into a temporary first: the arguments may point into mg__last_error itself. */
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  memcpy(mg__last_error, tmp, sizeof tmp);
  MG_INFO(MG_SUBSYS_ALL, "error %s: %s", mg_status_name(status), mg__last_error);
  return status;
}

mg_status_t mg__error(mg_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mg__verror(status, fmt, ap);
  va_end(ap);
  return status;
}

mg_status_t mg__error_errno(mg_status_t status, int err, const char *fmt, ...) {
  char msg[MG__ERROR_LEN];
  char ebuf[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* GNU strerror_r returns the message, which may not be in ebuf. */
  const char *es = strerror_r(err, ebuf, sizeof ebuf);
  return mg__error(status, "%s: %s (errno %d)", msg, es, err);
}

void mg__error_prefix(const char *fmt, ...) {
  char pre[256];
  char tmp[MG__ERROR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  snprintf(tmp, sizeof tmp, "%s: %s", pre, mg__last_error);
  memcpy(mg__last_error, tmp, sizeof tmp);
}
