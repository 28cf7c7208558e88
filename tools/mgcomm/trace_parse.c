/*
 * trace_parse.c -- reads flight-recorder dumps (their format is in docs/world.md) into a set for
 * `mgcomm trace` (trace_parse.h).
 *
 * A dump is read without building a tree: a first pass checks the whole text against the JSON
 * grammar and notes where the top-level values it needs begin; a second reads those values, each
 * checked for its type and range, straight into the dump. Nothing is allocated per JSON value,
 * so memory follows what is kept (the collectives, and the views of the others' progress), and
 * every count of it is charged to the set's max_records before it is allocated.
 *
 * Divisions: JSON tokens; the first pass; typed values; the dump; the set.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trace_parse.h"

enum { MG_TR_DEPTH_MAX = 64 }; /* nesting of JSON containers; a dump needs 3 */

typedef struct {
  const char *base, *p, *end;
  int depth;
  char *why; /* [MG_TR_WHY_LEN] */
} mg_jr_t;

static int mg_jr_syntax(mg_jr_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int mg_jr_syntax(mg_jr_t *r, const char *fmt, ...) {
  int n = snprintf(r->why, MG_TR_WHY_LEN, "is not valid JSON: byte %zu: ",
                   (size_t)(r->p - r->base));
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why + n, MG_TR_WHY_LEN - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static int mg_jr_dump(mg_jr_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int mg_jr_dump(mg_jr_t *r, const char *fmt, ...) {
  int n = snprintf(r->why, MG_TR_WHY_LEN, "is not a valid dump: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why + n, MG_TR_WHY_LEN - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- JSON tokens -------------------------------------------------------------------------- */

static void mg_jr_ws(mg_jr_t *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')) r->p++;
}

static int mg_jr_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The string at r->p. Its text goes to out[cap] (when out is not NULL) as printable ASCII, '?'
 * standing for any other character, cut to cap - 1 bytes; *len (when not NULL) is its whole
 * length, so that a caller can refuse a cut one. */
static int mg_jr_string(mg_jr_t *r, char *out, size_t cap, size_t *len) {
  if (r->p >= r->end || *r->p != '"') return mg_jr_syntax(r, "expected a string");
  r->p++;
  size_t n = 0;
  for (;;) {
    if (r->p >= r->end) return mg_jr_syntax(r, "the text ends inside a string");
    unsigned char c = (unsigned char)*r->p;
    if (c == '"') break;
    if (c < 0x20) return mg_jr_syntax(r, "a control character (0x%02x) inside a string", c);
    r->p++;
    if (c == '\\') {
      if (r->p >= r->end) return mg_jr_syntax(r, "the text ends inside a string");
      char e = *r->p;
      switch (e) {
        case '"': case '\\': case '/': c = (unsigned char)e; break;
        case 'b': case 'f': case 'n': case 'r': case 't': c = '?'; break;
        case 'u': {
          unsigned v = 0;
          for (int k = 1; k <= 4; k++) {
            int h = r->end - r->p > k ? mg_jr_hex(r->p[k]) : -1;
            if (h < 0) return mg_jr_syntax(r, "a \\u escape needs four hex digits");
            v = v * 16 + (unsigned)h;
          }
          r->p += 4;
          c = v >= 0x20 && v < 0x7f ? (unsigned char)v : '?';
          break;
        }
        default:
          return mg_jr_syntax(r, "an unknown escape '\\%c'", e >= 0x20 && e < 0x7f ? e : '?');
      }
      r->p++;
    } else if (c >= 0x7f) {
      c = '?';
    }
    if (out != NULL && n + 1 < cap) out[n] = (char)c;
    n++;
  }
  r->p++;
  if (out != NULL) out[n < cap ? n : cap - 1] = '\0';
  if (len != NULL) *len = n;
  return 0;
}

/* The number at r->p, by the JSON grammar. *is_int: it has no fraction or exponent and fits a
 * long long, which *v then holds. */
static int mg_jr_number(mg_jr_t *r, long long *v, int *is_int) {
  const char *p = r->p, *end = r->end;
  int neg = 0, fits = 1, whole = 1;
  unsigned long long mag = 0;
  if (p < end && *p == '-') neg = 1, p++;
  if (p >= end || *p < '0' || *p > '9') {
    r->p = p;
    return mg_jr_syntax(r, "expected a digit");
  }
  if (*p == '0' && p + 1 < end && p[1] >= '0' && p[1] <= '9') {
    r->p = p;
    return mg_jr_syntax(r, "a number with a leading zero");
  }
  for (; p < end && *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (mag > (9223372036854775808ull - d) / 10) fits = 0;
    else mag = mag * 10 + d;
  }
  if (p < end && *p == '.') {
    whole = 0;
    if (++p >= end || *p < '0' || *p > '9') {
      r->p = p;
      return mg_jr_syntax(r, "expected a digit after '.'");
    }
    while (p < end && *p >= '0' && *p <= '9') p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    whole = 0;
    if (++p < end && (*p == '+' || *p == '-')) p++;
    if (p >= end || *p < '0' || *p > '9') {
      r->p = p;
      return mg_jr_syntax(r, "expected a digit in an exponent");
    }
    while (p < end && *p >= '0' && *p <= '9') p++;
  }
  r->p = p;
  if (!neg && mag > 9223372036854775807ull) fits = 0;
  *is_int = whole && fits;
  if (*is_int) *v = neg ? (mag == 9223372036854775808ull ? (-9223372036854775807ll - 1)
                                                        : -(long long)mag)
                        : (long long)mag;
  return 0;
}

static int mg_jr_literal(mg_jr_t *r, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
    return mg_jr_syntax(r, "unexpected '%c'", *r->p >= 0x20 && *r->p < 0x7f ? *r->p : '?');
  r->p += n;
  return 0;
}

/* Containers: mg_jr_open consumes the opening bracket; mg_jr_next then answers 1 while there is
 * another member (r->p at it), 0 after the closing bracket. */
static int mg_jr_open(mg_jr_t *r, char open) {
  mg_jr_ws(r);
  if (r->p >= r->end || *r->p != open)
    return mg_jr_syntax(r, "expected '%c'", open);
  if (++r->depth > MG_TR_DEPTH_MAX)
    return mg_jr_syntax(r, "containers nested deeper than %d", MG_TR_DEPTH_MAX);
  r->p++;
  return 0;
}

static int mg_jr_next(mg_jr_t *r, char close, int *first) {
  mg_jr_ws(r);
  if (r->p >= r->end) return mg_jr_syntax(r, "the text ends before '%c'", close);
  if (*r->p == close) { /* "[1,]" does not get here: the member after ',' is missing */
    r->p++;
    r->depth--;
    return 0;
  }
  if (!*first) {
    if (*r->p != ',') return mg_jr_syntax(r, "expected ',' or '%c'", close);
    r->p++;
    mg_jr_ws(r);
    if (r->p >= r->end) return mg_jr_syntax(r, "the text ends before '%c'", close);
  }
  *first = 0;
  return 1;
}

/* An object member's key (cut to cap - 1 bytes; "" when longer, which no dump key is) and its
 * colon. */
static int mg_jr_key(mg_jr_t *r, char *key, size_t cap) {
  size_t len;
  mg_jr_ws(r);
  if (mg_jr_string(r, key, cap, &len) != 0) return -1;
  if (len >= cap) key[0] = '\0';
  mg_jr_ws(r);
  if (r->p >= r->end || *r->p != ':') return mg_jr_syntax(r, "expected ':' after a key");
  r->p++;
  return 0;
}

/* Checks and passes the value at r->p. */
static int mg_jr_skip(mg_jr_t *r) {
  mg_jr_ws(r);
  if (r->p >= r->end) return mg_jr_syntax(r, "the text ends where a value should be");
  char c = *r->p;
  int first = 1, more;
  long long v;
  int is_int;
  switch (c) {
    case '{':
      if (mg_jr_open(r, '{') != 0) return -1;
      while ((more = mg_jr_next(r, '}', &first)) == 1) {
        char key[2];
        if (mg_jr_key(r, key, sizeof key) != 0 || mg_jr_skip(r) != 0) return -1;
      }
      return more;
    case '[':
      if (mg_jr_open(r, '[') != 0) return -1;
      while ((more = mg_jr_next(r, ']', &first)) == 1)
        if (mg_jr_skip(r) != 0) return -1;
      return more;
    case '"': return mg_jr_string(r, NULL, 0, NULL);
    case 't': return mg_jr_literal(r, "true");
    case 'f': return mg_jr_literal(r, "false");
    case 'n': return mg_jr_literal(r, "null");
    default:
      if (c == '-' || (c >= '0' && c <= '9')) return mg_jr_number(r, &v, &is_int);
      return mg_jr_syntax(r, "unexpected '%c'", c >= 0x20 && c < 0x7f ? c : '?');
  }
}

/* ---- the first pass: the whole text, and where the dump's top-level values are -------------- */

enum {
  MG_TK_FORMAT, MG_TK_VERSION, MG_TK_COMM, MG_TK_RANK, MG_TK_NRANKS, MG_TK_REASON,
  MG_TK_LAST_ENQ, MG_TK_LAST_DONE, MG_TK_RECORDED, MG_TK_CAPACITY, MG_TK_PEERS, MG_TK_ENTRIES,
  MG_TK_COUNT
};
static const char *const mg_top_keys[MG_TK_COUNT] = {
    "format", "version", "comm", "rank", "nranks", "reason", "last_enqueued", "last_completed",
    "recorded", "capacity", "peers", "entries"};

/* Checks the text; at[k] is where top-level key k's value begins (NULL when absent). 1 when the
 * text is valid JSON but not an object. */
static int mg_jr_top(mg_jr_t *r, const char *at[MG_TK_COUNT]) {
  for (int k = 0; k < MG_TK_COUNT; k++) at[k] = NULL;
  mg_jr_ws(r);
  int object = r->p < r->end && *r->p == '{';
  if (!object) {
    if (mg_jr_skip(r) != 0) return -1;
  } else {
    int first = 1, more;
    if (mg_jr_open(r, '{') != 0) return -1;
    while ((more = mg_jr_next(r, '}', &first)) == 1) {
      char key[24];
      if (mg_jr_key(r, key, sizeof key) != 0) return -1;
      mg_jr_ws(r);
      for (int k = 0; k < MG_TK_COUNT; k++)
        if (strcmp(key, mg_top_keys[k]) == 0) at[k] = r->p;
      if (mg_jr_skip(r) != 0) return -1;
    }
    if (more < 0) return -1;
  }
  mg_jr_ws(r);
  if (r->p != r->end) return mg_jr_syntax(r, "text after the JSON value");
  return object ? 0 : 1;
}

/* ---- typed values, read again from where the first pass found them --------------------------- */

/* The value at `at` as the message shows it: its first 24 bytes, printable. */
static const char *mg_jr_shown(const mg_jr_t *r, const char *at, char buf[40]) {
  size_t n = 0;
  for (const char *p = at; p < r->end && n < 24 && *p != ',' && *p != '}' && *p != ']'; p++)
    buf[n++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
  if (n == 24) memcpy(buf + n, "...", 3), n += 3;
  buf[n] = '\0';
  return buf;
}

/* An integer in [lo, hi] at `at` into *v. */
static int mg_jr_int_at(mg_jr_t *r, const char *at, const char *what, long long lo, long long hi,
                        long long *v) {
  char shown[40];
  int is_int = 0;
  r->p = at;
  if (*at != '-' && (*at < '0' || *at > '9'))
    return mg_jr_dump(r, "%s %s is not a number", what, mg_jr_shown(r, at, shown));
  if (mg_jr_number(r, v, &is_int) != 0) return -1;
  if (!is_int || *v < lo || *v > hi)
    return mg_jr_dump(r, "%s %s is not an integer in %lld..%lld", what, mg_jr_shown(r, at, shown),
                      lo, hi);
  return 0;
}

/* A string at `at` of at most cap - 1 bytes into out. */
static int mg_jr_str_at(mg_jr_t *r, const char *at, const char *what, char *out, size_t cap) {
  char shown[40];
  size_t len;
  r->p = at;
  if (*at != '"') return mg_jr_dump(r, "%s %s is not a string", what, mg_jr_shown(r, at, shown));
  if (mg_jr_string(r, out, cap, &len) != 0) return -1;
  if (len >= cap)
    return mg_jr_dump(r, "%s %s is longer than %zu bytes", what, mg_jr_shown(r, at, shown),
                      cap - 1);
  return 0;
}

/* true or false at `at`. */
static int mg_jr_bool_at(mg_jr_t *r, const char *at, const char *what, int *v) {
  char shown[40];
  if (*at == 't' || *at == 'f') {
    *v = *at == 't';
    return 0;
  }
  return mg_jr_dump(r, "%s %s is not true or false", what, mg_jr_shown(r, at, shown));
}

/* The members of the object at r->p whose keys are keys[0..n): at[k] where each value begins. */
static int mg_jr_members(mg_jr_t *r, const char *const *keys, int n, const char **at) {
  int first = 1, more;
  for (int k = 0; k < n; k++) at[k] = NULL;
  if (mg_jr_open(r, '{') != 0) return -1;
  while ((more = mg_jr_next(r, '}', &first)) == 1) {
    char key[24];
    if (mg_jr_key(r, key, sizeof key) != 0) return -1;
    mg_jr_ws(r);
    for (int k = 0; k < n; k++)
      if (strcmp(key, keys[k]) == 0) at[k] = r->p;
    if (mg_jr_skip(r) != 0) return -1;
  }
  return more;
}

/* ---- the set's tables ---------------------------------------------------------------------- */

static uint64_t mg_tr_hash(const char *s, uint64_t h) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The id of name in s->names, added when new; -1 when the table is full. */
static int mg_tr_name_id(mg_tr_set_t *s, const char *name) {
  if (name[0] == '\0') return 0;
  const size_t mask = sizeof s->name_slot / sizeof s->name_slot[0] - 1;
  for (size_t i = mg_tr_hash(name, 14695981039346656037ull) & mask;; i = (i + 1) & mask) {
    int id = s->name_slot[i];
    if (id == 0) {
      if (s->nnames >= MG_TR_NAMES_MAX) return -1;
      snprintf(s->names[s->nnames], MG_TR_NAME_LEN, "%s", name);
      s->name_slot[i] = (uint16_t)s->nnames;
      return s->nnames++;
    }
    if (strcmp(s->names[id], name) == 0) return id;
  }
}

static size_t mg_tr_view_hash(const char *comm, int nranks) {
  return (size_t)mg_tr_hash(comm, 14695981039346656037ull ^ (uint64_t)(unsigned)nranks);
}

/* The slot of (comm, nranks) in s->view_slot: the view's, or the free one it would take. */
static size_t mg_tr_view_slot(const mg_tr_set_t *s, const char *comm, int nranks) {
  const size_t mask = s->view_slots - 1;
  for (size_t i = mg_tr_view_hash(comm, nranks) & mask;; i = (i + 1) & mask) {
    size_t v = s->view_slot[i];
    if (v == 0) return i;
    if (s->views[v - 1].nranks == nranks && strcmp(s->views[v - 1].comm, comm) == 0) return i;
  }
}

const mg_tr_view_t *mg_tr_set_view(const mg_tr_set_t *s, const char *comm, int nranks) {
  if (s->view_slots == 0) return NULL;
  size_t v = s->view_slot[mg_tr_view_slot(s, comm, nranks)];
  return v != 0 ? &s->views[v - 1] : NULL;
}

/* The view of (comm, nranks), made (every rank unknown) when new; NULL when out of memory. */
static mg_tr_view_t *mg_tr_view_make(mg_tr_set_t *s, const char *comm, int nranks) {
  if (2 * (s->nviews + 1) > s->view_slots) { /* keep the table at most half full */
    size_t slots = s->view_slots ? 2 * s->view_slots : 16;
    size_t *t = calloc(slots, sizeof *t);
    if (t == NULL) return NULL;
    for (size_t v = 0; v < s->nviews; v++) {
      size_t i = mg_tr_view_hash(s->views[v].comm, s->views[v].nranks) & (slots - 1);
      while (t[i] != 0) i = (i + 1) & (slots - 1);
      t[i] = v + 1;
    }
    free(s->view_slot);
    s->view_slot = t;
    s->view_slots = slots;
  }
  if (s->nviews == s->views_cap) {
    size_t cap = s->views_cap ? 2 * s->views_cap : 8;
    mg_tr_view_t *t = realloc(s->views, cap * sizeof *t);
    if (t == NULL) return NULL;
    s->views = t;
    s->views_cap = cap;
  }
  mg_tr_view_t *v = &s->views[s->nviews];
  v->rank = malloc((size_t)nranks * sizeof *v->rank);
  if (v->rank == NULL) return NULL;
  for (int i = 0; i < nranks; i++) v->rank[i].enq = -2, v->rank[i].kind = 0;
  snprintf(v->comm, sizeof v->comm, "%s", comm);
  v->nranks = nranks;
  s->view_slot[mg_tr_view_slot(s, comm, nranks)] = ++s->nviews;
  return v;
}

/* ---- the dump -------------------------------------------------------------------------------- */

static int mg_tr_op_cmp(const void *a, const void *b) {
  long long x = ((const mg_tr_op_t *)a)->seq, y = ((const mg_tr_op_t *)b)->seq;
  return (x > y) - (x < y);
}

/* A name field at `at` (NULL: "") as an id of s->names into *id. */
static int mg_tr_name_at(mg_jr_t *r, mg_tr_set_t *s, const char *at, const char *what,
                         uint8_t *id) {
  char name[MG_TR_NAME_LEN] = "";
  /* null (the only value that starts with 'n', as the first pass checked) is "" */
  if (at != NULL && *at != 'n' && mg_jr_str_at(r, at, what, name, sizeof name) != 0) return -1;
  int k = mg_tr_name_id(s, name);
  if (k < 0)
    return mg_jr_dump(r, "%s: more than %d distinct kind, dtype and op names", what,
                      MG_TR_NAMES_MAX - 1);
  *id = (uint8_t)k;
  return 0;
}

/* Whether `file` is named as mg_comm_dump_trace names a dump in a folder,
 * mgcomm-trace-<comm>-r<rank>.json; then *comm and *rank point into it (rank: its digits). */
static int mg_tr_default_name(const char *file, const char **comm, size_t *comm_len,
                              const char **rank, size_t *rank_len) {
  static const char prefix[] = "mgcomm-trace-", suffix[] = ".json";
  const char *base = strrchr(file, '/');
  base = base != NULL ? base + 1 : file;
  size_t n = strlen(base), pl = sizeof prefix - 1, sl = sizeof suffix - 1;
  if (n <= pl + sl || strncmp(base, prefix, pl) != 0 || strcmp(base + n - sl, suffix) != 0)
    return 0;
  const char *digits_end = base + n - sl, *d = digits_end;
  while (d > base + pl && d[-1] >= '0' && d[-1] <= '9') d--;
  if (d == digits_end || d - (base + pl) < 3 || d[-1] != 'r' || d[-2] != '-') return 0;
  *comm = base + pl;
  *comm_len = (size_t)(d - 2 - *comm);
  *rank = d;
  *rank_len = (size_t)(digits_end - d);
  return 1;
}

/* The header's fields into d; 1 when the text is not a dump. */
static int mg_tr_header(mg_jr_t *r, const char *const at[MG_TK_COUNT], const char *file,
                        mg_tr_dump_t *d) {
  char format[16], shown[40];
  if (at[MG_TK_FORMAT] == NULL || *at[MG_TK_FORMAT] != '"') return 1;
  r->p = at[MG_TK_FORMAT];
  size_t len;
  if (mg_jr_string(r, format, sizeof format, &len) != 0) return -1;
  if (len >= sizeof format || strcmp(format, "mgcomm-trace") != 0) return 1;
  long long v;
  if (at[MG_TK_VERSION] != NULL) {
    if (mg_jr_int_at(r, at[MG_TK_VERSION], "version", 1, 1000000, &v) != 0) return -1;
    if (v != 1) return mg_jr_dump(r, "format version %lld; this mgcomm reads version 1", v);
  }
  if (at[MG_TK_COMM] == NULL) return mg_jr_dump(r, "no comm (the communicator's tag)");
  if (mg_jr_str_at(r, at[MG_TK_COMM], "comm", d->comm, sizeof d->comm) != 0) return -1;
  if (d->comm[0] == '\0') return mg_jr_dump(r, "comm is empty");
  for (const char *c = d->comm; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          *c == '.' || *c == '_' || *c == '-'))
      return mg_jr_dump(r, "comm %s holds '%c' (a tag is letters, digits, '.', '_' and '-')",
                        mg_jr_shown(r, at[MG_TK_COMM], shown), *c);
  if (at[MG_TK_NRANKS] == NULL) return mg_jr_dump(r, "no nranks");
  if (mg_jr_int_at(r, at[MG_TK_NRANKS], "nranks", 1, MG_TR_NRANKS_MAX, &v) != 0) return -1;
  d->nranks = (int)v;
  if (at[MG_TK_RANK] == NULL) return mg_jr_dump(r, "no rank");
  if (mg_jr_int_at(r, at[MG_TK_RANK], "rank", 0, MG_TR_NRANKS_MAX, &v) != 0) return -1;
  if (v >= d->nranks) return mg_jr_dump(r, "rank %lld is not below nranks %d", v, d->nranks);
  d->rank = (int)v;
  const char *fc, *fr;
  size_t fcl, frl;
  if (mg_tr_default_name(file, &fc, &fcl, &fr, &frl)) {
    char rank[16];
    int rl = snprintf(rank, sizeof rank, "%d", d->rank);
    if (fcl != strlen(d->comm) || strncmp(fc, d->comm, fcl) != 0 || frl != (size_t)rl ||
        strncmp(fr, rank, frl) != 0)
      return mg_jr_dump(r, "it is named for communicator %.*s rank %.*s but holds communicator "
                        "%s rank %d", (int)(fcl < 64 ? fcl : 64), fc, (int)(frl < 16 ? frl : 16),
                        fr, d->comm, d->rank);
  }
  char reason[16] = "";
  if (at[MG_TK_REASON] != NULL) {
    r->p = at[MG_TK_REASON];
    if (*r->p != '"') return mg_jr_dump(r, "reason %s is not a string",
                                        mg_jr_shown(r, at[MG_TK_REASON], shown));
    if (mg_jr_string(r, reason, sizeof reason, NULL) != 0) return -1;
  }
  d->on_timeout = strcmp(reason, "timeout") == 0;
  d->last_enq = d->last_done = -1;
  d->recorded = d->capacity = 0;
  if ((at[MG_TK_LAST_ENQ] != NULL &&
       mg_jr_int_at(r, at[MG_TK_LAST_ENQ], "last_enqueued", -1, MG_TR_SEQ_MAX, &d->last_enq)) ||
      (at[MG_TK_LAST_DONE] != NULL &&
       mg_jr_int_at(r, at[MG_TK_LAST_DONE], "last_completed", -1, MG_TR_SEQ_MAX, &d->last_done)) ||
      (at[MG_TK_RECORDED] != NULL &&
       mg_jr_int_at(r, at[MG_TK_RECORDED], "recorded", 0, 9223372036854775807ll, &d->recorded)) ||
      (at[MG_TK_CAPACITY] != NULL &&
       mg_jr_int_at(r, at[MG_TK_CAPACITY], "capacity", 0, 9223372036854775807ll, &d->capacity)))
    return -1;
  for (int k = MG_TK_PEERS; k <= MG_TK_ENTRIES; k++)
    if (at[k] != NULL && *at[k] != '[')
      return mg_jr_dump(r, "%s is not an array", mg_top_keys[k]);
  return 0;
}

enum { MG_EK_SEQ, MG_EK_KIND, MG_EK_COLL, MG_EK_DTYPE, MG_EK_COUNT, MG_EK_ROOT, MG_EK_OP, MG_EK_N };
static const char *const mg_entry_keys[MG_EK_N] = {"seq", "kind", "collective", "dtype",
                                                   "count", "root", "op"};

/* The collectives of the entries array at `at` into d->ops: -2 when there are more than budget,
 * -1 (with *nomem when out of memory) on an error. */
static int mg_tr_entries(mg_jr_t *r, mg_tr_set_t *s, const char *at, mg_tr_dump_t *d,
                         long long budget, int *nomem) {
  size_t cap = 0;
  int first = 1, more;
  r->p = at;
  if (mg_jr_open(r, '[') != 0) return -1;
  for (size_t i = 0; (more = mg_jr_next(r, ']', &first)) == 1; i++) {
    const char *f[MG_EK_N];
    char what[48];
    if (*r->p != '{') return mg_jr_dump(r, "entry %zu is not an object", i);
    if (mg_jr_members(r, mg_entry_keys, MG_EK_N, f) != 0) return -1;
    const char *next = r->p;
    int coll = 0;
    snprintf(what, sizeof what, "entry %zu: collective", i);
    if (f[MG_EK_COLL] != NULL && mg_jr_bool_at(r, f[MG_EK_COLL], what, &coll) != 0) return -1;
    if (!coll) continue; /* a send or a receive (r->p is past it) */
    if ((long long)d->nops >= budget) return -2;
    if (d->nops == cap) {
      cap = cap ? 2 * cap : 64;
      mg_tr_op_t *t = realloc(d->ops, cap * sizeof *t);
      if (t == NULL) return *nomem = 1, -1;
      d->ops = t;
    }
    mg_tr_op_t *o = &d->ops[d->nops];
    long long v;
    snprintf(what, sizeof what, "entry %zu: seq", i);
    if (f[MG_EK_SEQ] == NULL) return mg_jr_dump(r, "entry %zu, a collective, has no seq", i);
    if (mg_jr_int_at(r, f[MG_EK_SEQ], what, 0, MG_TR_SEQ_MAX, &o->seq) != 0) return -1;
    o->count = 0;
    snprintf(what, sizeof what, "entry %zu: count", i);
    if (f[MG_EK_COUNT] != NULL &&
        mg_jr_int_at(r, f[MG_EK_COUNT], what, 0, 9223372036854775807ll, &o->count) != 0)
      return -1;
    o->root = -1;
    snprintf(what, sizeof what, "entry %zu: root", i);
    if (f[MG_EK_ROOT] != NULL) {
      if (mg_jr_int_at(r, f[MG_EK_ROOT], what, -1, MG_TR_NRANKS_MAX, &v) != 0) return -1;
      o->root = (int)v;
    }
    if (f[MG_EK_KIND] == NULL) return mg_jr_dump(r, "entry %zu, a collective, has no kind", i);
    snprintf(what, sizeof what, "entry %zu: kind", i);
    if (mg_tr_name_at(r, s, f[MG_EK_KIND], what, &o->kind) != 0) return -1;
    snprintf(what, sizeof what, "entry %zu: dtype", i);
    if (mg_tr_name_at(r, s, f[MG_EK_DTYPE], what, &o->dtype) != 0) return -1;
    snprintf(what, sizeof what, "entry %zu: op", i);
    if (mg_tr_name_at(r, s, f[MG_EK_OP], what, &o->op) != 0) return -1;
    d->nops++;
    r->p = next;
  }
  if (more < 0) return -1;
  if (d->nops > 1) qsort(d->ops, d->nops, sizeof *d->ops, mg_tr_op_cmp);
  for (size_t i = 1; i < d->nops; i++)
    if (d->ops[i].seq == d->ops[i - 1].seq)
      return mg_jr_dump(r, "two collectives are numbered #%lld", d->ops[i].seq);
  return 0;
}

enum { MG_PK_RANK, MG_PK_KNOWN, MG_PK_LAST_ENQ, MG_PK_KIND, MG_PK_N };
static const char *const mg_peer_keys[MG_PK_N] = {"rank", "known", "last_enqueued", "kind"};

/* The peers array at `at`: checked when view is NULL (*known says whether any rank's progress is
 * known), merged into view otherwise (the furthest progress wins). */
static int mg_tr_peers(mg_jr_t *r, mg_tr_set_t *s, const char *at, const mg_tr_dump_t *d,
                       mg_tr_view_t *view, int *known) {
  int first = 1, more;
  r->p = at;
  if (mg_jr_open(r, '[') != 0) return -1;
  for (size_t i = 0; (more = mg_jr_next(r, ']', &first)) == 1; i++) {
    const char *f[MG_PK_N];
    char what[48];
    if (*r->p != '{') return mg_jr_dump(r, "peer %zu is not an object", i);
    if (mg_jr_members(r, mg_peer_keys, MG_PK_N, f) != 0) return -1;
    const char *next = r->p;
    long long rank, enq;
    int is_known = 1;
    uint8_t kind;
    if (f[MG_PK_RANK] == NULL) return mg_jr_dump(r, "peer %zu has no rank", i);
    snprintf(what, sizeof what, "peer %zu: rank", i);
    if (mg_jr_int_at(r, f[MG_PK_RANK], what, 0, d->nranks - 1, &rank) != 0) return -1;
    snprintf(what, sizeof what, "peer %zu: known", i);
    if (f[MG_PK_KNOWN] != NULL && mg_jr_bool_at(r, f[MG_PK_KNOWN], what, &is_known) != 0)
      return -1;
    if (is_known) {
      if (f[MG_PK_LAST_ENQ] == NULL) return mg_jr_dump(r, "peer %zu has no last_enqueued", i);
      snprintf(what, sizeof what, "peer %zu: last_enqueued", i);
      if (mg_jr_int_at(r, f[MG_PK_LAST_ENQ], what, -1, MG_TR_SEQ_MAX, &enq) != 0) return -1;
      snprintf(what, sizeof what, "peer %zu: kind", i);
      if (mg_tr_name_at(r, s, f[MG_PK_KIND], what, &kind) != 0) return -1;
      *known = 1;
      if (view != NULL && enq > view->rank[rank].enq) {
        view->rank[rank].enq = enq;
        view->rank[rank].kind = kind;
      }
    }
    r->p = next;
  }
  return more;
}

/* ---- the set --------------------------------------------------------------------------------- */

void mg_tr_set_init(mg_tr_set_t *s, long long max_records) {
  memset(s, 0, sizeof *s);
  s->nnames = 1; /* names[0] is "" */
  s->max_records = max_records;
}

void mg_tr_set_free(mg_tr_set_t *s) {
  for (size_t i = 0; i < s->ndumps; i++) {
    free(s->dumps[i].file);
    free(s->dumps[i].ops);
  }
  for (size_t v = 0; v < s->nviews; v++) free(s->views[v].rank);
  free(s->dumps);
  free(s->views);
  free(s->view_slot);
  memset(s, 0, sizeof *s);
}

mg_tr_add_t mg_tr_set_add(mg_tr_set_t *s, const char *file, const char *text, size_t len,
                          char *why) {
  mg_jr_t r = {text, text, text + len, 0, why};
  const char *at[MG_TK_COUNT];
  mg_tr_dump_t d;
  memset(&d, 0, sizeof d);
  why[0] = '\0';
  int rc = mg_jr_top(&r, at);
  if (rc != 0) return rc > 0 ? MG_TR_NOT_DUMP : MG_TR_INVALID;
  rc = mg_tr_header(&r, at, file, &d);
  if (rc != 0) return rc > 0 ? MG_TR_NOT_DUMP : MG_TR_INVALID;
  /* Its records: the dump, its collectives, and a view of nranks ranks if it is the first of its
   * communicator to report the others' progress. */
  long long left = s->max_records - s->records - MG_TR_DUMP_RECORDS;
  int nomem = 0, known = 0;
  mg_tr_add_t out = MG_TR_INVALID;
  if (s->ndumps == s->dumps_cap) {
    size_t cap = s->dumps_cap ? 2 * s->dumps_cap : 16;
    mg_tr_dump_t *t = realloc(s->dumps, cap * sizeof *t);
    if (t == NULL) return MG_TR_NOMEM;
    s->dumps = t;
    s->dumps_cap = cap;
  }
  if (left < 0) goto full;
  if (at[MG_TK_ENTRIES] != NULL) {
    rc = mg_tr_entries(&r, s, at[MG_TK_ENTRIES], &d, left, &nomem);
    if (rc == -2) goto full;
    if (rc != 0) goto fail;
  }
  left -= (long long)d.nops;
  if (at[MG_TK_PEERS] != NULL) {
    if (mg_tr_peers(&r, s, at[MG_TK_PEERS], &d, NULL, &known) != 0) goto fail;
    mg_tr_view_t *view = NULL;
    if (known) {
      const mg_tr_view_t *v = mg_tr_set_view(s, d.comm, d.nranks);
      if (v == NULL && d.nranks > left) goto full;
      if (v == NULL) {
        view = mg_tr_view_make(s, d.comm, d.nranks);
        if (view == NULL) goto nomem;
        left -= d.nranks;
      } else {
        view = (mg_tr_view_t *)v;
      }
      if (mg_tr_peers(&r, s, at[MG_TK_PEERS], &d, view, &known) != 0) goto fail;
    }
  }
  d.file = malloc(strlen(file) + 1);
  if (d.file == NULL) goto nomem;
  memcpy(d.file, file, strlen(file) + 1);
  d.order = s->ndumps;
  s->dumps[s->ndumps++] = d;
  s->records = s->max_records - left;
  return MG_TR_ADDED;
full:
  snprintf(why, MG_TR_WHY_LEN, "would make more than %lld records in all (%d for a dump, 1 "
           "for a collective or a rank that dumps saw; the limit of --max-entries)",
           s->max_records, MG_TR_DUMP_RECORDS);
  out = MG_TR_FULL;
  goto fail;
nomem:
  nomem = 1;
fail:
  free(d.ops);
  return nomem ? MG_TR_NOMEM : out;
}
