/*
 * trace.c -- `mgcomm trace <dir>`: merges the flight-recorder dumps of every rank
 * (mg_comm_dump_trace, MGCOMM_TRACE_DIR) and names, for each communicator, the first collective
 * where the ranks diverge: a rank that never enqueued it, or a rank that enqueued another kind,
 * count, dtype, op or root under that sequence number (and which of them differ); a rank whose
 * later collectives are the others' shifted by one is named as one collective behind or ahead.
 *
 * Divisions: a small JSON reader (the dump format only needs objects, arrays, strings, numbers,
 * true/false/null); loading the dumps; the analysis; the command.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- JSON ------------------------------------------------------------------------------------ */

typedef enum { MG_J_NULL, MG_J_BOOL, MG_J_NUM, MG_J_STR, MG_J_ARR, MG_J_OBJ } mg_jtype_t;

typedef struct mg_json {
  mg_jtype_t type;
  double num;          /* NUM, BOOL */
  char *str;           /* STR */
  struct mg_json *kid; /* ARR, OBJ: children */
  char **keys;         /* OBJ: keys[i] of kid[i] */
  int n;
} mg_json_t;

typedef struct {
  const char *p, *end;
  int depth;
} mg_jin_t;

static void mg_json_free(mg_json_t *j) {
  for (int i = 0; i < j->n; i++) {
    mg_json_free(&j->kid[i]);
    if (j->keys) free(j->keys[i]);
  }
  free(j->kid);
  free(j->keys);
  free(j->str);
}

static void mg_jws(mg_jin_t *in) {
  while (in->p < in->end && (*in->p == ' ' || *in->p == '\n' || *in->p == '\t' || *in->p == '\r'))
    in->p++;
}

static int mg_jparse(mg_jin_t *in, mg_json_t *out);

static int mg_jstring(mg_jin_t *in, char **out) {
  if (in->p >= in->end || *in->p != '"') return -1;
  in->p++;
  size_t cap = 16, n = 0;
  char *s = malloc(cap);
  if (s == NULL) return -1;
  while (in->p < in->end && *in->p != '"') {
    char c = *in->p++;
    if (c == '\\') {
      if (in->p >= in->end) break;
      c = *in->p++;
      switch (c) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': /* the dumps write no \u escapes; keep a placeholder for any other writer */
          if (in->end - in->p < 4) { free(s); return -1; }
          in->p += 4;
          c = '?';
          break;
        default: break; /* '"', '\\', '/' */
      }
    }
    if (n + 2 > cap) {
      cap *= 2;
      char *t = realloc(s, cap);
      if (t == NULL) { free(s); return -1; }
      s = t;
    }
    s[n++] = c;
  }
  if (in->p >= in->end) { free(s); return -1; }
  in->p++;
  s[n] = '\0';
  *out = s;
  return 0;
}

static int mg_jadd(mg_json_t *j, char *key, mg_json_t *v) {
  mg_json_t *k = realloc(j->kid, sizeof *k * (size_t)(j->n + 1));
  if (k == NULL) return -1;
  j->kid = k;
  if (j->type == MG_J_OBJ) {
    char **ks = realloc(j->keys, sizeof *ks * (size_t)(j->n + 1));
    if (ks == NULL) return -1;
    j->keys = ks;
    ks[j->n] = key;
  }
  j->kid[j->n++] = *v;
  return 0;
}

static int mg_jparse(mg_jin_t *in, mg_json_t *out) {
  memset(out, 0, sizeof *out);
  mg_jws(in);
  if (in->p >= in->end || ++in->depth > 64) return -1;
  int rc = 0;
  char c = *in->p;
  if (c == '{' || c == '[') {
    out->type = c == '{' ? MG_J_OBJ : MG_J_ARR;
    const char close = c == '{' ? '}' : ']';
    in->p++;
    mg_jws(in);
    if (in->p < in->end && *in->p == close) {
      in->p++;
    } else {
      for (;;) {
        char *key = NULL;
        mg_json_t v;
        if (out->type == MG_J_OBJ) {
          mg_jws(in);
          if (mg_jstring(in, &key) != 0) { rc = -1; break; }
          mg_jws(in);
          if (in->p >= in->end || *in->p != ':') { free(key); rc = -1; break; }
          in->p++;
        }
        if (mg_jparse(in, &v) != 0 || mg_jadd(out, key, &v) != 0) {
          free(key);
          rc = -1;
          break;
        }
        mg_jws(in);
        if (in->p < in->end && *in->p == ',') { in->p++; continue; }
        if (in->p < in->end && *in->p == close) { in->p++; break; }
        rc = -1;
        break;
      }
    }
  } else if (c == '"') {
    out->type = MG_J_STR;
    rc = mg_jstring(in, &out->str);
  } else if (in->end - in->p >= 4 && strncmp(in->p, "null", 4) == 0) {
    in->p += 4;
  } else if (in->end - in->p >= 4 && strncmp(in->p, "true", 4) == 0) {
    out->type = MG_J_BOOL, out->num = 1, in->p += 4;
  } else if (in->end - in->p >= 5 && strncmp(in->p, "false", 5) == 0) {
    out->type = MG_J_BOOL, in->p += 5;
  } else {
    char *e = NULL;
    out->type = MG_J_NUM;
    out->num = strtod(in->p, &e);
    if (e == in->p || e > in->end) rc = -1;
    else in->p = e;
  }
  in->depth--;
  if (rc != 0) mg_json_free(out);
  return rc;
}

static const mg_json_t *mg_jget(const mg_json_t *o, const char *key) {
  if (o == NULL || o->type != MG_J_OBJ) return NULL;
  for (int i = 0; i < o->n; i++)
    if (strcmp(o->keys[i], key) == 0) return &o->kid[i];
  return NULL;
}

static double mg_jnum(const mg_json_t *o, const char *key, double dflt) {
  const mg_json_t *v = mg_jget(o, key);
  return v != NULL && v->type == MG_J_NUM ? v->num : dflt;
}

static const char *mg_jstr(const mg_json_t *o, const char *key) {
  const mg_json_t *v = mg_jget(o, key);
  return v != NULL && v->type == MG_J_STR ? v->str : "";
}

/* ---- loading the dumps -------------------------------------------------------------------------- */

typedef struct {
  long long seq;
  char kind[32], dtype[32], op[32], state[16]; /* op: reductions only ("" otherwise) */
  long long count;
  int root;
} mg_tr_op_t;

typedef struct {
  char file[512];
  char comm[32];
  int rank, nranks;
  char reason[32];
  long long last_enq, last_done;
  long long recorded, capacity;
  mg_tr_op_t *ops; /* the collectives, by increasing seq */
  int nops;
  /* What this rank saw of every rank (host backend: the shared segment), -2 when unknown. */
  long long *peer_enq;
  char (*peer_kind)[32];
} mg_tr_dump_t;

static int mg_tr_op_cmp(const void *a, const void *b) {
  long long x = ((const mg_tr_op_t *)a)->seq, y = ((const mg_tr_op_t *)b)->seq;
  return (x > y) - (x < y);
}

/* Reads one dump; 1 when it is not a dump (skipped), -1 on an error (printed), 0 when read. */
static int mg_tr_load(const char *path, mg_tr_dump_t *d) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "mgcomm trace: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *t = realloc(buf, cap *= 2);
      if (t == NULL) { free(buf); buf = NULL; }
      else buf = t;
    }
  }
  fclose(f); /* read-only: nothing to flush */
  if (buf == NULL) {
    fprintf(stderr, "mgcomm trace: out of memory reading %s\n", path);
    return -1;
  }
  mg_jin_t in = {buf, buf + n, 0};
  mg_json_t root;
  int rc = mg_jparse(&in, &root);
  free(buf);
  if (rc != 0) {
    fprintf(stderr, "mgcomm trace: %s is not valid JSON; skipped\n", path);
    return 1;
  }
  if (strcmp(mg_jstr(&root, "format"), "mgcomm-trace") != 0) {
    mg_json_free(&root);
    return 1;
  }
  memset(d, 0, sizeof *d);
  snprintf(d->file, sizeof d->file, "%s", path);
  snprintf(d->comm, sizeof d->comm, "%s", mg_jstr(&root, "comm"));
  snprintf(d->reason, sizeof d->reason, "%s", mg_jstr(&root, "reason"));
  d->rank = (int)mg_jnum(&root, "rank", -1);
  d->nranks = (int)mg_jnum(&root, "nranks", 0);
  d->last_enq = (long long)mg_jnum(&root, "last_enqueued", -1);
  d->last_done = (long long)mg_jnum(&root, "last_completed", -1);
  d->recorded = (long long)mg_jnum(&root, "recorded", 0);
  d->capacity = (long long)mg_jnum(&root, "capacity", 0);
  if (d->nranks < 1 || d->rank < 0 || d->rank >= d->nranks || d->nranks > 1 << 20) {
    fprintf(stderr, "mgcomm trace: %s has no valid rank and nranks; skipped\n", path);
    mg_json_free(&root);
    return 1;
  }
  d->peer_enq = malloc(sizeof *d->peer_enq * (size_t)d->nranks);
  d->peer_kind = calloc((size_t)d->nranks, sizeof *d->peer_kind);
  const mg_json_t *entries = mg_jget(&root, "entries");
  int ne = entries != NULL && entries->type == MG_J_ARR ? entries->n : 0;
  d->ops = calloc((size_t)(ne > 0 ? ne : 1), sizeof *d->ops);
  if (d->peer_enq == NULL || d->peer_kind == NULL || d->ops == NULL) {
    fprintf(stderr, "mgcomm trace: out of memory reading %s\n", path);
    mg_json_free(&root);
    return -1;
  }
  for (int r = 0; r < d->nranks; r++) d->peer_enq[r] = -2;
  const mg_json_t *peers = mg_jget(&root, "peers");
  for (int i = 0; peers != NULL && peers->type == MG_J_ARR && i < peers->n; i++) {
    const mg_json_t *p = &peers->kid[i];
    int r = (int)mg_jnum(p, "rank", -1);
    const mg_json_t *known = mg_jget(p, "known");
    if (r < 0 || r >= d->nranks || (known != NULL && known->num == 0)) continue;
    d->peer_enq[r] = (long long)mg_jnum(p, "last_enqueued", -1);
    snprintf(d->peer_kind[r], sizeof d->peer_kind[r], "%s", mg_jstr(p, "kind"));
  }
  for (int i = 0; i < ne; i++) {
    const mg_json_t *e = &entries->kid[i];
    const mg_json_t *coll = mg_jget(e, "collective");
    if (coll == NULL || coll->num == 0) continue;
    mg_tr_op_t *o = &d->ops[d->nops++];
    o->seq = (long long)mg_jnum(e, "seq", -1);
    o->count = (long long)mg_jnum(e, "count", 0);
    o->root = (int)mg_jnum(e, "root", -1);
    snprintf(o->kind, sizeof o->kind, "%s", mg_jstr(e, "kind"));
    snprintf(o->dtype, sizeof o->dtype, "%s", mg_jstr(e, "dtype"));
    snprintf(o->op, sizeof o->op, "%s", mg_jstr(e, "op"));
    snprintf(o->state, sizeof o->state, "%s", mg_jstr(e, "state"));
  }
  qsort(d->ops, (size_t)d->nops, sizeof *d->ops, mg_tr_op_cmp);
  mg_json_free(&root);
  return 0;
}

static void mg_tr_free(mg_tr_dump_t *d) {
  free(d->ops);
  free(d->peer_enq);
  free(d->peer_kind);
}

static const mg_tr_op_t *mg_tr_find(const mg_tr_dump_t *d, long long seq) {
  int lo = 0, hi = d->nops - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (d->ops[mid].seq == seq) return &d->ops[mid];
    if (d->ops[mid].seq < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

/* ---- the analysis ------------------------------------------------------------------------------ */

/* "all_reduce (float32 x 4)", with ", op sum" when with_op and the dump has it. */
static void mg_tr_desc(const mg_tr_op_t *o, int with_op, char *buf, size_t len) {
  snprintf(buf, len, "%s (%s x %lld", o->kind, o->dtype, o->count);
  size_t n = strlen(buf);
  if (with_op && o->op[0]) snprintf(buf + n, len - n, ", op %s", o->op);
  n = strlen(buf);
  if (o->root >= 0) snprintf(buf + n, len - n, ", root %d)", o->root);
  else snprintf(buf + n, len - n, ")");
}

/* The fields in which a and b differ (MG_TR_D_*); 0 when they are the same call. Across kinds
 * only the kind and the dtype are compared: count, op and root mean different things. */
enum { MG_TR_D_KIND = 1, MG_TR_D_COUNT = 2, MG_TR_D_DTYPE = 4, MG_TR_D_OP = 8, MG_TR_D_ROOT = 16 };
static int mg_tr_differ(const mg_tr_op_t *a, const mg_tr_op_t *b) {
  int d = strcmp(a->dtype, b->dtype) != 0 ? MG_TR_D_DTYPE : 0;
  if (strcmp(a->kind, b->kind) != 0) return d | MG_TR_D_KIND;
  if (a->count != b->count) d |= MG_TR_D_COUNT;
  if (strcmp(a->op, b->op) != 0) d |= MG_TR_D_OP;
  if (a->root != b->root) d |= MG_TR_D_ROOT;
  return d;
}

static int mg_tr_same(const mg_tr_op_t *a, const mg_tr_op_t *b) { return mg_tr_differ(a, b) == 0; }

/* 1 when rank x's collectives from #from on are rank y's from #from + 1 on: every one that both
 * dumps hold (at least one) is the same call. x is then one collective behind y (y called
 * #from, which x did not), or, read the other way, y one ahead. */
static int mg_tr_shifted(const mg_tr_dump_t *x, const mg_tr_dump_t *y, long long from) {
  int matched = 0;
  for (long long seq = from;; seq++) {
    const mg_tr_op_t *a = mg_tr_find(x, seq), *b = mg_tr_find(y, seq + 1);
    if (a == NULL || b == NULL) break;
    if (!mg_tr_same(a, b)) return 0;
    matched++;
  }
  return matched > 0;
}

/* Appends "r" to a comma-separated list. */
static void mg_tr_list(char *buf, size_t len, int r) {
  size_t n = strlen(buf);
  snprintf(buf + n, len - n, "%s%d", n ? "," : "", r);
}

/* Analyses the dumps d[0..n) of one communicator. */
static void mg_tr_analyse(mg_tr_dump_t **d, int n) {
  const int nranks = d[0]->nranks;
  mg_tr_dump_t **by_rank = calloc((size_t)nranks, sizeof *by_rank);
  if (by_rank == NULL) return;
  char have[1024] = "";
  for (int i = 0; i < n; i++) {
    if (d[i]->nranks != nranks || by_rank[d[i]->rank] != NULL) {
      printf("  %s: rank %d of %d conflicts with another dump of this communicator; ignored\n",
             d[i]->file, d[i]->rank, d[i]->nranks);
      continue;
    }
    by_rank[d[i]->rank] = d[i];
  }
  for (int r = 0; r < nranks; r++)
    if (by_rank[r] != NULL) mg_tr_list(have, sizeof have, r);
  printf("communicator %s: %d rank%s, dumps from rank%s %s\n", d[0]->comm, nranks,
         nranks > 1 ? "s" : "", strchr(have, ',') ? "s" : "", have);
  /* Where each rank is: its own dump, else the most advanced view another rank had of it. */
  long long *enq = malloc(sizeof *enq * (size_t)nranks);
  const char **kind = calloc((size_t)nranks, sizeof *kind);
  int *other = malloc(sizeof *other * (size_t)nranks); /* the ranks that differ at a seq */
  if (enq == NULL || kind == NULL || other == NULL) {
    free(enq);
    free(kind);
    free(other);
    free(by_rank);
    return;
  }
  long long lo = 0, hi = -1;
  for (int r = 0; r < nranks; r++) {
    const mg_tr_dump_t *x = by_rank[r];
    enq[r] = -2;
    kind[r] = "";
    if (x != NULL) {
      enq[r] = x->last_enq;
      const mg_tr_op_t *o = mg_tr_find(x, x->last_enq);
      kind[r] = o != NULL ? o->kind : "";
      if (x->recorded > x->capacity && x->nops > 0 && x->ops[0].seq > lo) lo = x->ops[0].seq;
      char enqs[96] = "none", dones[32] = "none";
      if (x->last_enq >= 0)
        snprintf(enqs, sizeof enqs, "#%lld%s%s%s", x->last_enq, kind[r][0] ? " (" : "", kind[r],
                 kind[r][0] ? ")" : "");
      if (x->last_done >= 0) snprintf(dones, sizeof dones, "#%lld", x->last_done);
      printf("  rank %d: last enqueued %s, last completed %s, dumped %s\n", r, enqs, dones,
             strcmp(x->reason, "timeout") == 0 ? "on a timeout" : "on request");
    } else {
      for (int i = 0; i < n; i++)
        if (d[i]->peer_enq[r] > enq[r]) enq[r] = d[i]->peer_enq[r], kind[r] = d[i]->peer_kind[r];
      if (enq[r] == -2)
        printf("  rank %d: no dump, and no other rank saw its progress\n", r);
      else if (enq[r] == -1)
        printf("  rank %d: no dump; the others saw it enqueue no collective\n", r);
      else
        printf("  rank %d: no dump; the others saw it last enqueue #%lld%s%s%s\n", r, enq[r],
               kind[r][0] ? " (" : "", kind[r], kind[r][0] ? ")" : "");
    }
    if (enq[r] > hi) hi = enq[r];
  }
  int found = 0;
  for (long long seq = lo; seq <= hi && !found; seq++) {
    const mg_tr_op_t *ref = NULL;
    int ref_rank = -1, differ = 0, nother = 0;
    char same[512] = "", missing[512] = "", missing_why[1024] = "", shift[1024] = "";
    for (int r = 0; r < nranks; r++) {
      const mg_tr_op_t *o = by_rank[r] != NULL ? mg_tr_find(by_rank[r], seq) : NULL;
      if (o == NULL) {
        if (enq[r] >= seq) continue; /* enqueued it, but its record is not in the dump */
        if (enq[r] == -2) continue;  /* nothing known */
        mg_tr_list(missing, sizeof missing, r);
        size_t m = strlen(missing_why);
        if (enq[r] < 0)
          snprintf(missing_why + m, sizeof missing_why - m, "; rank %d enqueued no collective", r);
        else
          snprintf(missing_why + m, sizeof missing_why - m, "; rank %d's last is #%lld%s%s%s", r,
                   enq[r], kind[r][0] ? " (" : "", kind[r], kind[r][0] ? ")" : "");
        continue;
      }
      if (ref == NULL) ref = o, ref_rank = r;
      const int diff = mg_tr_differ(o, ref);
      if (diff == 0) {
        mg_tr_list(same, sizeof same, r);
        continue;
      }
      differ |= diff;
      /* Described once every difference is known (the op is shown when the ops differ). */
      other[nother++] = r;
      const mg_tr_dump_t *x = by_rank[r], *y = by_rank[ref_rank];
      size_t m = strlen(shift);
      if (mg_tr_shifted(x, y, seq))
        snprintf(shift + m, sizeof shift - m, "; rank %d looks one collective behind rank %d: "
                 "its collectives from #%lld on are rank %d's from #%lld on (it did not call "
                 "rank %d's #%lld)", r, ref_rank, seq, ref_rank, seq + 1, ref_rank, seq);
      else if (mg_tr_shifted(y, x, seq))
        snprintf(shift + m, sizeof shift - m, "; rank %d looks one collective ahead of rank %d: "
                 "its collectives from #%lld on are rank %d's from #%lld on (it called #%lld, "
                 "which rank %d did not)", r, ref_rank, seq + 1, ref_rank, seq, seq, ref_rank);
    }
    if (ref == NULL || (missing[0] == '\0' && nother == 0)) continue;
    found = 1;
    const int with_op = (differ & MG_TR_D_OP) != 0;
    char rd[160];
    mg_tr_desc(ref, with_op, rd, sizeof rd);
    printf("first divergence at collective #%lld: %s enqueued by rank%s %s", seq, rd,
           strchr(same, ',') ? "s" : "", same);
    for (int i = 0; i < nother; i++) {
      char od[160];
      mg_tr_desc(mg_tr_find(by_rank[other[i]], seq), with_op, od, sizeof od);
      printf("; rank %d enqueued %s", other[i], od);
    }
    if (differ) {
      static const char *const names[] = {"kind", "count", "dtype", "op", "root"};
      const char *sep = " (they differ in ";
      for (int b = 0; b < 5; b++)
        if (differ & (1 << b)) printf("%s%s", sep, names[b]), sep = ", ";
      printf(")");
    }
    if (missing[0])
      printf("; rank%s %s never enqueued it%s", strchr(missing, ',') ? "s" : "", missing,
             missing_why);
    printf("%s\n", shift);
  }
  if (!found)
    printf("no divergence: the ranks agree on every collective they recorded (#%lld..#%lld)\n",
           lo, hi);
  free(enq);
  free(kind);
  free(other);
  free(by_rank);
}

/* ---- the command ------------------------------------------------------------------------------ */

static int mg_tr_cmp_dump(const void *a, const void *b) {
  const mg_tr_dump_t *x = a, *y = b;
  int c = strcmp(x->comm, y->comm);
  return c != 0 ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

int mg_cli_trace(int argc, char **argv) {
  if (argc != 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
    FILE *f = argc == 1 ? stdout : stderr;
    fprintf(f, "usage: mgcomm trace <dir>\n\n"
               "Merges the flight-recorder dumps in <dir> (mg_comm_dump_trace, or written on a\n"
               "timeout into MGCOMM_TRACE_DIR) and names, for each communicator, the first\n"
               "collective where the ranks diverge: a rank that never enqueued it, or one that\n"
               "enqueued another kind, count, dtype, op or root (it says which differ, and names\n"
               "a rank whose later collectives are the others' shifted by one as one collective\n"
               "behind or ahead). Exit 0 when the dumps were read (diverging or not), 1 when\n"
               "none could be, 2 on a usage error.\n");
    return argc == 1 ? 0 : 2;
  }
  DIR *dir = opendir(argv[0]);
  if (dir == NULL) {
    fprintf(stderr, "mgcomm trace: cannot open %s: %s\n", argv[0], strerror(errno));
    return 1;
  }
  mg_tr_dump_t *dumps = NULL;
  int n = 0, cap = 0, failed = 0;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      mg_tr_dump_t *t = realloc(dumps, sizeof *t * (size_t)cap);
      if (t == NULL) {
        failed = 1;
        break;
      }
      dumps = t;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", argv[0], e->d_name);
    int rc = mg_tr_load(path, &dumps[n]);
    if (rc == 0) n++;
    else if (rc < 0) failed = 1;
  }
  closedir(dir); /* read-only directory stream */
  if (n == 0) {
    fprintf(stderr, "mgcomm trace: no flight-recorder dump in %s\n", argv[0]);
    free(dumps);
    return 1;
  }
  qsort(dumps, (size_t)n, sizeof *dumps, mg_tr_cmp_dump);
  printf("mgcomm trace: %d dump%s in %s\n", n, n > 1 ? "s" : "", argv[0]);
  mg_tr_dump_t **group = malloc(sizeof *group * (size_t)n);
  for (int i = 0; group != NULL && i < n;) {
    int k = 0;
    for (int j = i; j < n && strcmp(dumps[j].comm, dumps[i].comm) == 0; j++) group[k++] = &dumps[j];
    mg_tr_analyse(group, k);
    i += k;
  }
  if (group == NULL) failed = 1;
  free(group);
  for (int i = 0; i < n; i++) mg_tr_free(&dumps[i]);
  free(dumps);
  return failed;
}
