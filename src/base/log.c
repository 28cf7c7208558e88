/*
 * log.c -- the log sink. Configuration comes from the parameter table (params.c), read once.
 * MGCOMM_DEBUG_FILE may contain %h (host name) and %p (pid); it is opened once, for appending.
 *
 * Each line is formatted whole and written with one write(2), past any stdio buffering of the
 * program's stderr: a line (at most MG__LOG_LINE_MAX bytes, below PIPE_BUF) is then written at
 * once to a pipe and to a file opened for appending, so the lines of threads and of the
 * processes of a job sharing a stderr or a log file never mix.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/params.h"

atomic_int mg__log_level_v = -1;
unsigned mg__log_mask_v = MG_SUBSYS_ALL;

#define MG__LOG_LINE_MAX 2048 /* bytes of a line: the message (1536 at most) and its prefix */

static pthread_once_t mg__log_once = PTHREAD_ONCE_INIT;
static int mg__log_fd = 2;             /* stderr or MGCOMM_DEBUG_FILE's descriptor; never closed */
static char mg__log_host[64];
_Thread_local int mg__log_rank = -1;

static const struct {
  const char *name;
  unsigned bit;
} mg__subsys_names[] = {
    {"INIT", MG_SUBSYS_INIT}, {"LOAD", MG_SUBSYS_LOAD},   {"COLL", MG_SUBSYS_COLL},
    {"P2P", MG_SUBSYS_P2P},   {"SHMEM", MG_SUBSYS_SHMEM}, {"BOOT", MG_SUBSYS_BOOT},
    {"ENV", MG_SUBSYS_ENV},   {"WORLD", MG_SUBSYS_WORLD}, {"ALL", MG_SUBSYS_ALL},
};

static unsigned mg__parse_subsys(const char *s) {
  unsigned mask = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    int neg = tok[0] == '^';
    for (size_t i = 0; i < sizeof mg__subsys_names / sizeof mg__subsys_names[0]; i++) {
      if (strcasecmp(tok + neg, mg__subsys_names[i].name) == 0) {
        if (neg)
          mask = (mask ? mask : MG_SUBSYS_ALL) & ~mg__subsys_names[i].bit;
        else
          mask |= mg__subsys_names[i].bit;
      }
    }
  }
  return mask ? mask : MG_SUBSYS_ALL;
}

/* Writes line (n bytes as snprintf counted them, into a buffer of cap) with one write(2); a line
 * that did not fit is cut and still ends with a newline. A failed write is dropped: the log has
 * nowhere else to go. */
static void mg__log_write(char *line, int n, size_t cap) {
  if (n <= 0) return;
  size_t len = (size_t)n < cap ? (size_t)n : cap - 1;
  line[len - 1] = '\n';
  ssize_t w;
  do {
    w = write(mg__log_fd, line, len);
  } while (w < 0 && errno == EINTR);
}

/* Expands %h and %p of a MGCOMM_DEBUG_FILE pattern. */
static void mg__expand_path(const char *pat, char *out, size_t len) {
  size_t o = 0;
  for (const char *p = pat; *p && o + 1 < len; p++) {
    if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
      int n = p[1] == 'h' ? snprintf(out + o, len - o, "%s", mg__log_host)
                          : snprintf(out + o, len - o, "%d", (int)getpid());
      if (n > 0) o += (size_t)n;
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o < len ? o : len - 1] = '\0';
}

static void mg__log_setup(void) {
  if (gethostname(mg__log_host, sizeof mg__log_host) != 0)
    snprintf(mg__log_host, sizeof mg__log_host, "unknown");
  mg__log_host[sizeof mg__log_host - 1] = '\0';
  const char *lvl = mg__param_str_quiet(MG_PARAM_DEBUG);
  int level = MG_LOG_WARN;
  if (strcasecmp(lvl, "NONE") == 0) level = MG_LOG_NONE;
  else if (strcasecmp(lvl, "INFO") == 0) level = MG_LOG_INFO;
  else if (strcasecmp(lvl, "TRACE") == 0) level = MG_LOG_TRACE;
  mg__log_mask_v = mg__parse_subsys(mg__param_str_quiet(MG_PARAM_DEBUG_SUBSYS));
  const char *path = mg__param_str_quiet(MG_PARAM_DEBUG_FILE);
  if (path[0] != '\0') {
    char full[512];
    mg__expand_path(path, full, sizeof full);
    int fd = open(full, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd >= 0) {
      mg__log_fd = fd;
    } else {
      char line[640];
      int n = snprintf(line, sizeof line,
                       "mgcomm: cannot open MGCOMM_DEBUG_FILE %s (%s); logging to stderr\n", full,
                       strerror(errno));
      mg__log_write(line, n, sizeof line);
    }
  }
  atomic_store_explicit(&mg__log_level_v, level, memory_order_release);
}

int mg__log_init_level(void) {
  pthread_once(&mg__log_once, mg__log_setup);
  mg__params_flush_warnings();
  return atomic_load_explicit(&mg__log_level_v, memory_order_acquire);
}

void mg__log(int level, unsigned subsys, const char *file, int line, const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char rank[24] = "";
  if (mg__log_rank >= 0) snprintf(rank, sizeof rank, " [%d]", mg__log_rank);
  const char *lname = level == MG_LOG_WARN ? "WARN" : level == MG_LOG_INFO ? "INFO" : "TRACE";
  const char *sname = "";
  if (level != MG_LOG_WARN) {
    for (size_t i = 0; i < sizeof mg__subsys_names / sizeof mg__subsys_names[0]; i++)
      if (mg__subsys_names[i].bit == subsys) sname = mg__subsys_names[i].name;
  }
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  char out[MG__LOG_LINE_MAX];
  int n = snprintf(out, sizeof out, "%s:%d:%ld%s mgcomm %s %s%s%s:%d %s\n", mg__log_host,
                   (int)getpid(), (long)syscall(SYS_gettid), rank, lname, sname,
                   sname[0] ? " " : "", base, line, msg);
  mg__log_write(out, n, sizeof out);
}
