/*
 * fault.c -- the fault-injection registry (fault.h). Compiled to nothing in release builds.
 */
#ifdef MGCOMM_TESTING
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/params.h"
#include "loader/fault.h"

typedef struct {
  char name[MG__FAULT_NAME_LEN]; /* as set; a trailing '*' matches by prefix */
  long long nth;                 /* first call that fires, 1-based */
  long long count;               /* calls that fire; 0 = all from nth on */
  int code;
  long long calls;               /* matching calls seen since the rule was set */
  int fired;                     /* calls failed by this rule */
} mg__fault_rule_t;

atomic_int mg__fault_nrules;
static mg__fault_rule_t mg__rules[MG__FAULT_MAX_RULES];
static pthread_mutex_t mg__fault_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t mg__fault_once = PTHREAD_ONCE_INIT;

/* Does the rule name `pat` cover symbol or point `name`? Exact; prefix for "x*"; and a CUDA
 * ABI suffix "_v<digits>" on name may be dropped (cuMemAlloc matches cuMemAlloc_v2). */
static int mg__fault_covers(const char *pat, const char *name) {
  size_t lp = strlen(pat);
  if (lp > 0 && pat[lp - 1] == '*') return strncmp(pat, name, lp - 1) == 0;
  if (strcmp(pat, name) == 0) return 1;
  const char *v = strrchr(name, '_');
  if (v == NULL || v[1] != 'v' || v[2] == '\0' || strspn(v + 2, "0123456789") != strlen(v + 2))
    return 0;
  return (size_t)(v - name) == lp && strncmp(pat, name, lp) == 0;
}

static mg_status_t mg__fault_add(const char *name, long long nth, int code, long long count) {
  if (name == NULL || name[0] == '\0' || strlen(name) >= MG__FAULT_NAME_LEN)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "fault rule: the name must have 1 to %d characters",
                     MG__FAULT_NAME_LEN - 1);
  if (nth < 1 || code == 0 || count < 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "fault rule %s: needs nth >= 1 (got %lld), code != 0 (got %d), count >= 0 "
                     "(got %lld)", name, nth, code, count);
  mg_status_t st = MG_OK;
  pthread_mutex_lock(&mg__fault_lock);
  int n = atomic_load_explicit(&mg__fault_nrules, memory_order_relaxed);
  if (n >= MG__FAULT_MAX_RULES) {
    st = mg__error(MG_ERR_INVALID_USAGE, "fault rule %s: %d rules are set already", name, n);
  } else {
    mg__fault_rule_t *r = &mg__rules[n];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->nth = nth;
    r->count = count;
    r->code = code;
    atomic_store_explicit(&mg__fault_nrules, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&mg__fault_lock);
  return st;
}

/* Parses one "name:nth:code[:count]"; 0 on success. */
static int mg__fault_parse_rule(char *spec) {
  char *fields[4] = {NULL, NULL, NULL, NULL};
  int nf = 0;
  char *save = NULL;
  for (char *tok = strtok_r(spec, ":", &save); tok != NULL; tok = strtok_r(NULL, ":", &save)) {
    if (nf == 4) return -1;
    fields[nf++] = tok;
  }
  if (nf < 3) return -1;
  long long num[3] = {0, 0, 1};
  for (int i = 1; i < nf; i++) {
    char *end = NULL;
    errno = 0;
    num[i - 1] = strtoll(fields[i], &end, 0);
    if (errno != 0 || end == fields[i] || *end != '\0') return -1;
  }
  if (num[1] < INT_MIN || num[1] > INT_MAX) return -1;
  return mg__fault_add(fields[0], num[0], (int)num[1], num[2]) == MG_OK ? 0 : -1;
}

static void mg__fault_read_env(void) {
  const char *env = mg__param_str(MG_PARAM_FAULT);
  if (env[0] == '\0') return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", env);
  char *save = NULL;
  for (char *spec = strtok_r(buf, ",", &save); spec != NULL; spec = strtok_r(NULL, ",", &save)) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", spec);
    if (mg__fault_parse_rule(spec) != 0)
      MG_WARN("MGCOMM_FAULT: rule '%s' is not name:nth:code[:count] with nth >= 1, code != 0 "
              "and count >= 0; it is ignored", copy);
  }
}

void mg__fault_init(void) { pthread_once(&mg__fault_once, mg__fault_read_env); }

mg_status_t mg__fault_set(const char *name, int nth, int code, int count) {
  mg__fault_init();
  return mg__fault_add(name, nth, code, count);
}

void mg__fault_clear(const char *name) {
  mg__fault_init();
  pthread_mutex_lock(&mg__fault_lock);
  int n = atomic_load_explicit(&mg__fault_nrules, memory_order_relaxed), kept = 0;
  for (int i = 0; i < n; i++) {
    if (name != NULL && strcmp(mg__rules[i].name, name) != 0) mg__rules[kept++] = mg__rules[i];
  }
  atomic_store_explicit(&mg__fault_nrules, kept, memory_order_release);
  pthread_mutex_unlock(&mg__fault_lock);
}

int mg__fault_fired(const char *name) {
  int fired = 0;
  pthread_mutex_lock(&mg__fault_lock);
  int n = atomic_load_explicit(&mg__fault_nrules, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    if (name != NULL && strcmp(mg__rules[i].name, name) == 0) fired += mg__rules[i].fired;
  pthread_mutex_unlock(&mg__fault_lock);
  return fired;
}

int mg__fault_match(const char *sym, int *code) {
  int hit = 0;
  long long call = 0;
  pthread_mutex_lock(&mg__fault_lock);
  int n = atomic_load_explicit(&mg__fault_nrules, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    mg__fault_rule_t *r = &mg__rules[i];
    if (!mg__fault_covers(r->name, sym)) continue;
    long long c = ++r->calls; /* every covering rule counts the call, fired or not */
    if (!hit && c >= r->nth && (r->count == 0 || c < r->nth + r->count)) {
      hit = 1;
      call = c;
      *code = r->code;
      r->fired++;
    }
  }
  pthread_mutex_unlock(&mg__fault_lock);
  if (hit) MG_INFO(MG_SUBSYS_LOAD, "fault injected: call %lld of %s returns %d", call, sym, *code);
  return hit;
}

int mg__fault_point(const char *name) {
  mg__fault_init();
  int code = 0;
  return mg__fault_foreign(name, &code) ? code : 0;
}

#else
/* Release build: no registry (ISO C wants a translation unit to declare something). */
typedef int mg__fault_release_build_t;
#endif
