/*
 * params.c -- reading and validating the parameter table of params.h, and the public listing
 * (mg_param_count, mg_param_get) that `mgcomm info --config` prints.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/log.h"
#include "base/params.h"

extern char **environ;

typedef enum { MG_PT_INT, MG_PT_DOUBLE, MG_PT_STRING, MG_PT_CHOICE, MG_PT_SECRET } mg__ptype_t;
#define MG__PT_INT MG_PT_INT
#define MG__PT_DOUBLE MG_PT_DOUBLE
#define MG__PT_STRING MG_PT_STRING
#define MG__PT_CHOICE MG_PT_CHOICE
#define MG__PT_SECRET MG_PT_SECRET

typedef struct {
  const char *name;    /* MGCOMM_... */
  mg__ptype_t type;
  const char *deflt;   /* default, as text */
  double lo, hi;       /* numeric range (lo == hi == 0: none) */
  const char *choices; /* CHOICE: "a|b|c" */
  const char *help;
} mg__param_row_t;

static const mg__param_row_t mg__rows[MG_PARAM_COUNT] = {
#define MG__PARAM_ROW(id, type, def, lo, hi, choices, help) \
  {"MGCOMM_" #id, MG__PT_##type, def, lo, hi, choices, help},
    MG_PARAM_TABLE(MG__PARAM_ROW)
#undef MG__PARAM_ROW
};

typedef struct {
  int64_t i;
  double d;
  char text[512];   /* the value in effect, canonical text */
  char allowed[96]; /* allowed values or range, for the listing */
  int from_env;
} mg__param_val_t;

#define MG__MAX_WARNINGS 32
static mg__param_val_t mg__vals[MG_PARAM_COUNT];
static char mg__warnings[MG__MAX_WARNINGS][320];
static int mg__nwarnings;
static atomic_int mg__warnings_flushed;
static pthread_once_t mg__params_once = PTHREAD_ONCE_INIT;

static void mg__warn_later(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mg__warn_later(const char *fmt, ...) {
  if (mg__nwarnings >= MG__MAX_WARNINGS) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mg__warnings[mg__nwarnings++], sizeof mg__warnings[0], fmt, ap);
  va_end(ap);
}

/* Parses text for row r into v; 0 on success. */
static int mg__parse(const mg__param_row_t *r, const char *text, mg__param_val_t *v) {
  char *end = NULL;
  int ranged = !(r->lo == 0 && r->hi == 0);
  switch (r->type) {
    case MG_PT_INT: {
      errno = 0;
      long long x = strtoll(text, &end, 0);
      if (errno != 0 || end == text || *end != '\0') return -1;
      if (ranged && ((double)x < r->lo || (double)x > r->hi)) return -1;
      v->i = x;
      v->d = (double)x;
      snprintf(v->text, sizeof v->text, "%lld", x);
      return 0;
    }
    case MG_PT_DOUBLE: {
      errno = 0;
      double x = strtod(text, &end);
      if (errno != 0 || end == text || *end != '\0' || !isfinite(x)) return -1;
      if (ranged && (x < r->lo || x > r->hi)) return -1;
      v->d = x;
      v->i = (int64_t)x;
      snprintf(v->text, sizeof v->text, "%g", x);
      return 0;
    }
    case MG_PT_CHOICE: {
      const char *c = r->choices;
      size_t n = strlen(text);
      while (*c) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncasecmp(c, text, n) == 0) {
          snprintf(v->text, sizeof v->text, "%.*s", (int)len, c);
          return 0;
        }
        c += len + (bar ? 1 : 0);
      }
      return -1;
    }
    case MG_PT_STRING:
    case MG_PT_SECRET:
      if (strlen(text) >= sizeof v->text) return -1;
      snprintf(v->text, sizeof v->text, "%s", text);
      return 0;
  }
  return -1;
}

/* Levenshtein distance, for "did you mean". */
static size_t mg__edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 64;
  size_t prev[64], cur[64];
  for (size_t j = 0; j <= lb; j++) prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, sizeof(size_t) * (lb + 1));
  }
  return prev[lb];
}

static void mg__params_read(void) {
  for (int id = 0; id < MG_PARAM_COUNT; id++) {
    const mg__param_row_t *r = &mg__rows[id];
    mg__param_val_t *v = &mg__vals[id];
    if (r->type == MG_PT_CHOICE)
      snprintf(v->allowed, sizeof v->allowed, "%s", r->choices);
    else if (!(r->lo == 0 && r->hi == 0))
      snprintf(v->allowed, sizeof v->allowed, "%g..%g", r->lo, r->hi);
    MG_ASSERT(mg__parse(r, r->deflt, v) == 0); /* the table's own defaults must parse */
    const char *env = getenv(r->name);
    if (env == NULL) continue;
    mg__param_val_t tmp = *v;
    if (mg__parse(r, env, &tmp) == 0) {
      *v = tmp;
      v->from_env = 1;
    } else {
      /* A warning holds 320 bytes: a long value is shown by its start and its length, so that
       * the reason after it is never cut off. */
      char shown[96];
      size_t len = strlen(env);
      if (r->type == MG_PT_SECRET)
        snprintf(shown, sizeof shown, "(not shown, %zu bytes)", len);
      else if (len > 64)
        snprintf(shown, sizeof shown, "'%.64s...' (%zu bytes)", env, len);
      else
        snprintf(shown, sizeof shown, "'%s'", env);
      const char *deflt = r->deflt[0] ? r->deflt : "''";
      if (r->type == MG_PT_STRING || r->type == MG_PT_SECRET) /* only a length is refused */
        mg__warn_later("%s=%s: longer than %zu bytes; using the default %s", r->name, shown,
                       sizeof v->text - 1, deflt);
      else
        mg__warn_later("%s=%s is not valid (%s%s); using the default %s", r->name, shown,
                       r->type == MG_PT_CHOICE ? "one of " : "a number in ", v->allowed, deflt);
    }
  }
  /* Variables that look like ours but are not in the table. */
  for (char **e = environ; e != NULL && *e != NULL; e++) {
    if (strncmp(*e, "MGCOMM_", 7) != 0) continue;
    char name[128];
    size_t n = strcspn(*e, "=");
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, *e, n);
    name[n] = '\0';
    int known = 0;
    size_t best = (size_t)-1;
    const char *closest = NULL;
    for (int id = 0; id < MG_PARAM_COUNT; id++) {
      if (strcmp(name, mg__rows[id].name) == 0) known = 1;
      size_t dist = mg__edit_distance(name, mg__rows[id].name);
      if (dist < best) best = dist, closest = mg__rows[id].name;
    }
    if (!known)
      mg__warn_later("unknown variable %s is ignored; did you mean %s?", name, closest);
  }
}

static void mg__params_ensure_quiet(void) { pthread_once(&mg__params_once, mg__params_read); }

void mg__params_flush_warnings(void) {
  if (atomic_load_explicit(&mg__warnings_flushed, memory_order_acquire)) return; /* hot path */
  mg__params_ensure_quiet();
  if (atomic_exchange(&mg__warnings_flushed, 1)) return;
  for (int i = 0; i < mg__nwarnings; i++) MG_WARN("%s", mg__warnings[i]);
}

static const mg__param_val_t *mg__val(mg__param_id_t id) {
  MG_ASSERT(id >= 0 && id < MG_PARAM_COUNT);
  mg__params_flush_warnings();
  return &mg__vals[id];
}

int64_t mg__param_int(mg__param_id_t id) { return mg__val(id)->i; }
double mg__param_double(mg__param_id_t id) { return mg__val(id)->d; }
const char *mg__param_str(mg__param_id_t id) { return mg__val(id)->text; }

const char *mg__param_str_quiet(mg__param_id_t id) {
  mg__params_ensure_quiet();
  return mg__vals[id].text;
}

int mg_param_count(void) { return MG_PARAM_COUNT; }

mg_status_t mg_param_get(int index, mg_param_info_t *info) {
  if (info == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_param_get: info is NULL");
  if (index < 0 || index >= MG_PARAM_COUNT)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "mg_param_get: index %d is out of [0, %d)", index,
                     MG_PARAM_COUNT);
  static const char *const type_names[] = {"int", "double", "string", "choice", "secret"};
  const mg__param_row_t *r = &mg__rows[index];
  const mg__param_val_t *v = mg__val((mg__param_id_t)index);
  info->name = r->name;
  info->type = type_names[r->type];
  /* A secret is never shown, only whether it is set. */
  info->value = r->type != MG_PT_SECRET ? v->text : v->text[0] ? "(set, not shown)" : "";
  info->default_value = r->deflt;
  info->source = v->from_env ? "environment" : "default";
  info->allowed = v->allowed;
  info->help = r->help;
  return MG_OK;
}
