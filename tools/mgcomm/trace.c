/*
 * trace.c -- `mgcomm trace <dir>`: merges the flight-recorder dumps of every rank
 * (mg_comm_dump_trace, MGCOMM_TRACE_DIR) and names, for each communicator, the first collective
 * where the ranks diverge: a rank that never enqueued it, or a rank that enqueued another kind,
 * count, dtype, op or root under that sequence number (and which of them differ); a rank whose
 * later collectives are the others' shifted by one is named as one collective behind or ahead.
 *
 * Any input is safe: only regular files are read, each up to a size limit, into a set bounded in
 * records (trace_parse.c); dumps of one communicator that disagree are named and skipped; the
 * analysis costs about its input (sorted once), never the span of the sequence numbers.
 *
 * Divisions: the analysis of one communicator; the report (trace_parse.h); reading the folder;
 * the command.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trace_parse.h"

/* Ranks, missing ranks and differing ranks are each described at most this many times. */
enum { MG_TR_SHOWN = 16 };

/* ---- the analysis of one communicator -------------------------------------------------------- */

static const mg_tr_op_t *mg_tr_find(const mg_tr_dump_t *d, long long seq) {
  size_t lo = 0, hi = d->nops;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (d->ops[mid].seq < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo < d->nops && d->ops[lo].seq == seq ? &d->ops[lo] : NULL;
}

/* "all_reduce (float32 x 4)", with ", op sum" when with_op and the dump has it. */
static void mg_tr_desc(const mg_tr_set_t *s, const mg_tr_op_t *o, int with_op, FILE *out) {
  fprintf(out, "%s (%s x %lld", s->names[o->kind], s->names[o->dtype], o->count);
  if (with_op && o->op != 0) fprintf(out, ", op %s", s->names[o->op]);
  if (o->root >= 0) fprintf(out, ", root %d", o->root);
  fprintf(out, ")");
}

/* The fields in which a and b differ (MG_TR_D_*); 0 when they are the same call. Across kinds
 * only the kind and the dtype are compared: count, op and root mean different things. */
enum { MG_TR_D_KIND = 1, MG_TR_D_COUNT = 2, MG_TR_D_DTYPE = 4, MG_TR_D_OP = 8, MG_TR_D_ROOT = 16 };
static int mg_tr_differ(const mg_tr_op_t *a, const mg_tr_op_t *b) {
  int d = a->dtype != b->dtype ? MG_TR_D_DTYPE : 0;
  if (a->kind != b->kind) return d | MG_TR_D_KIND;
  if (a->count != b->count) d |= MG_TR_D_COUNT;
  if (a->op != b->op) d |= MG_TR_D_OP;
  if (a->root != b->root) d |= MG_TR_D_ROOT;
  return d;
}

/* 1 when rank x's collectives from #from on are rank y's from #from + 1 on: every one that both
 * dumps hold (at least one) is the same call. x is then one collective behind y (y called
 * #from, which x did not), or, read the other way, y one ahead. At most x's ops are looked at. */
static int mg_tr_shifted(const mg_tr_dump_t *x, const mg_tr_dump_t *y, long long from) {
  int matched = 0;
  for (long long seq = from; seq < MG_TR_SEQ_MAX; seq++) {
    const mg_tr_op_t *a = mg_tr_find(x, seq), *b = mg_tr_find(y, seq + 1);
    if (a == NULL || b == NULL) break;
    if (mg_tr_differ(a, b) != 0) return 0;
    matched++;
  }
  return matched > 0;
}

/* Ranks r[0..n) (increasing) as "0,1,3-7", at most 64 runs of them. */
static void mg_tr_ranks(FILE *out, const int *r, size_t n) {
  size_t runs = 0;
  for (size_t i = 0; i < n; runs++) {
    size_t j = i;
    while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
    if (runs == 64) {
      fprintf(out, ",... (%zu ranks in all)", n);
      return;
    }
    fprintf(out, "%s%d", i ? "," : "", r[i]);
    if (j > i) fprintf(out, "%s%d", j == i + 1 ? "," : "-", r[j]);
    i = j + 1;
  }
}

static void mg_tr_last(const mg_tr_set_t *s, long long enq, uint8_t kind, FILE *out) {
  fprintf(out, "#%lld", enq);
  if (kind != 0) fprintf(out, " (%s)", s->names[kind]);
}

/* A collective of by_rank[rank]; 16 bytes, as there is one per collective read. */
typedef struct {
  long long seq;
  int rank;
} mg_tr_at_t;

static int mg_tr_at_cmp(const void *a, const void *b) {
  const mg_tr_at_t *x = a, *y = b;
  if (x->seq != y->seq) return (x->seq > y->seq) - (x->seq < y->seq);
  return (x->rank > y->rank) - (x->rank < y->rank);
}

static int mg_tr_ll_cmp(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

/* The first index of u[0..n) above v. */
static size_t mg_tr_above(const long long *u, size_t n, long long v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (u[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The same over the seq of u[0..n). */
static size_t mg_tr_at_above(const mg_tr_at_t *u, size_t n, long long v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (u[mid].seq <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The nranks the dumps g[0..n) of one communicator are read with: the most common, ties going to
 * the first dump's. *others: how many dumps have it. */
static int mg_tr_pick_nranks(mg_tr_dump_t *const *g, size_t n, long long *sorted, size_t *others) {
  for (size_t i = 0; i < n; i++) sorted[i] = g[i]->nranks;
  qsort(sorted, n, sizeof *sorted, mg_tr_ll_cmp);
  int best = g[0]->nranks;
  size_t best_n = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = mg_tr_above(sorted, n, g[i]->nranks) - mg_tr_above(sorted, n, g[i]->nranks - 1);
    if (k > best_n) best = g[i]->nranks, best_n = k;
  }
  *others = best_n;
  return best;
}

/* Analyses the dumps g[0..n) of one communicator, sorted by rank then by file name. */
static int mg_tr_analyse(const mg_tr_set_t *s, mg_tr_dump_t *const *g, size_t n, FILE *out) {
  long long *sorted = malloc(n * sizeof *sorted);
  if (sorted == NULL) return -1;
  size_t agree;
  const int nranks = mg_tr_pick_nranks(g, n, sorted, &agree);
  free(sorted);
  const char *comm = g[0]->comm;
  const mg_tr_dump_t **by_rank = calloc((size_t)nranks, sizeof *by_rank);
  long long *enq = malloc((size_t)nranks * sizeof *enq);
  uint8_t *kind = malloc((size_t)nranks);
  int *list = malloc((size_t)nranks * sizeof *list);  /* same, below */
  int *miss = malloc((size_t)nranks * sizeof *miss);  /* ranks that never enqueued it */
  int *other = malloc((size_t)nranks * sizeof *other); /* ranks that enqueued another call */
  size_t nat = 0;
  for (size_t i = 0; i < n; i++) nat += g[i]->nops;
  mg_tr_at_t *at = malloc((nat ? nat : 1) * sizeof *at);
  int rc = -1;
  if (by_rank == NULL || enq == NULL || kind == NULL || list == NULL || miss == NULL ||
      other == NULL || at == NULL)
    goto done;
  for (size_t i = 0; i < n; i++) {
    const mg_tr_dump_t *x = g[i];
    if (x->nranks != nranks)
      fprintf(out, "  %s: rank %d of %d ranks, but %zu other dump%s of communicator %s ha%s %d; "
              "skipped\n", x->file, x->rank, x->nranks, agree, agree > 1 ? "s" : "", comm,
              agree > 1 ? "ve" : "s", nranks);
    else if (by_rank[x->rank] != NULL)
      fprintf(out, "  %s: rank %d of communicator %s again (%s is read); skipped\n", x->file,
              x->rank, comm, by_rank[x->rank]->file);
    else
      by_rank[x->rank] = x;
  }
  size_t nlist = 0;
  for (int r = 0; r < nranks; r++)
    if (by_rank[r] != NULL) list[nlist++] = r;
  fprintf(out, "communicator %s: %d rank%s, dumps from rank%s ", comm, nranks,
          nranks > 1 ? "s" : "", nlist > 1 ? "s" : "");
  mg_tr_ranks(out, list, nlist);
  fprintf(out, "\n");

  /* Where each rank is: its own dump, else the most advanced view the others had of it. */
  const mg_tr_view_t *view = mg_tr_set_view(s, comm, nranks);
  long long lo = 0, hi = -1;
  for (int r = 0; r < nranks; r++) {
    const mg_tr_dump_t *x = by_rank[r];
    if (x != NULL) {
      const mg_tr_op_t *o = mg_tr_find(x, x->last_enq);
      enq[r] = x->last_enq;
      kind[r] = o != NULL ? o->kind : 0;
      if (x->recorded > x->capacity && x->nops > 0 && x->ops[0].seq > lo) lo = x->ops[0].seq;
    } else {
      enq[r] = view != NULL ? view->rank[r].enq : -2;
      kind[r] = view != NULL ? view->rank[r].kind : 0;
    }
    if (enq[r] > hi) hi = enq[r];
  }
  for (int r = 0; r < nranks;) {
    const mg_tr_dump_t *x = by_rank[r];
    if (x != NULL) {
      fprintf(out, "  rank %d: last enqueued ", r);
      if (x->last_enq >= 0) mg_tr_last(s, x->last_enq, kind[r], out);
      else fprintf(out, "none");
      fprintf(out, ", last completed ");
      if (x->last_done >= 0) fprintf(out, "#%lld", x->last_done);
      else fprintf(out, "none");
      fprintf(out, ", dumped %s\n", x->on_timeout ? "on a timeout" : "on request");
      r++;
      continue;
    }
    /* A run of ranks without a dump that the others saw alike is one line. */
    int e = r;
    while (e + 1 < nranks && by_rank[e + 1] == NULL && enq[e + 1] == enq[r] &&
           kind[e + 1] == kind[r])
      e++;
    if (e == r) fprintf(out, "  rank %d: ", r);
    else fprintf(out, "  ranks %d%s%d: ", r, e == r + 1 ? "," : "-", e);
    const char *it = e == r ? "it" : "them";
    if (enq[r] == -2) {
      fprintf(out, "no dump, and no other rank saw %s progress\n", e == r ? "its" : "their");
    } else if (enq[r] == -1) {
      fprintf(out, "no dump; the others saw %s enqueue no collective\n", it);
    } else {
      fprintf(out, "no dump; the others saw %s last enqueue ", it);
      mg_tr_last(s, enq[r], kind[r], out);
      fprintf(out, "\n");
    }
    r = e + 1;
  }

  /* Every collective that a dump holds in [lo, hi], by sequence number then rank; the first
   * divergence is the first of them where two ranks' calls differ, or where a rank that is known
   * to be behind it (enq < seq) does not hold it. */
  nat = 0;
  for (int r = 0; r < nranks; r++) {
    const mg_tr_dump_t *x = by_rank[r];
    for (size_t k = 0; x != NULL && k < x->nops; k++)
      if (x->ops[k].seq >= lo && x->ops[k].seq <= hi) at[nat++] = (mg_tr_at_t){x->ops[k].seq, r};
  }
  if (nat > 1) qsort(at, nat, sizeof *at, mg_tr_at_cmp);
  size_t nu = 0;         /* then at[0..nu) holds each sequence number once */
  long long first = -1;  /* the first divergence, -1 for none */
  for (size_t i = 0; i < nat;) {
    const long long seq = at[i].seq;
    const mg_tr_op_t *ref = mg_tr_find(by_rank[at[i].rank], seq);
    size_t j = i + 1;
    for (; j < nat && at[j].seq == seq; j++)
      if (first < 0 && mg_tr_differ(mg_tr_find(by_rank[at[j].rank], seq), ref) != 0) first = seq;
    at[nu++].seq = seq;
    i = j;
  }
  for (int r = 0; r < nranks; r++) {
    if (enq[r] == -2) continue; /* nothing known */
    size_t k = mg_tr_at_above(at, nu, enq[r]);
    const mg_tr_dump_t *x = by_rank[r];
    if (x != NULL) { /* past enq, the first of them that x does not hold */
      const mg_tr_op_t *o = k < nu ? mg_tr_find(x, at[k].seq) : NULL;
      for (; k < nu && o != NULL && o < x->ops + x->nops && o->seq == at[k].seq; k++, o++) {}
    }
    if (k < nu && (first < 0 || at[k].seq < first)) first = at[k].seq;
  }
  if (first < 0) {
    fprintf(out, "no divergence: the ranks agree on every collective they recorded "
            "(#%lld..#%lld)\n", lo, hi);
    rc = 0;
    goto done;
  }

  const long long seq = first;
  const mg_tr_op_t *ref = NULL;
  int ref_rank = -1, differ = 0;
  size_t nsame = 0, nmiss = 0, nother = 0;
  for (int r = 0; r < nranks; r++) {
    const mg_tr_op_t *o = by_rank[r] != NULL ? mg_tr_find(by_rank[r], seq) : NULL;
    if (o == NULL) {
      if (enq[r] >= seq) continue; /* enqueued it, but its record is not in the dump */
      if (enq[r] == -2) continue;  /* nothing known */
      miss[nmiss++] = r;
      continue;
    }
    if (ref == NULL) ref = o, ref_rank = r;
    const int diff = mg_tr_differ(o, ref);
    if (diff == 0) {
      list[nsame++] = r;
      continue;
    }
    differ |= diff;
    other[nother++] = r;
  }
  const int with_op = (differ & MG_TR_D_OP) != 0;
  fprintf(out, "first divergence at collective #%lld: ", seq);
  mg_tr_desc(s, ref, with_op, out);
  fprintf(out, " enqueued by rank%s ", nsame > 1 ? "s" : "");
  mg_tr_ranks(out, list, nsame);
  for (size_t i = 0; i < nother && i < MG_TR_SHOWN; i++) {
    fprintf(out, "; rank %d enqueued ", other[i]);
    mg_tr_desc(s, mg_tr_find(by_rank[other[i]], seq), with_op, out);
  }
  if (nother > MG_TR_SHOWN)
    fprintf(out, "; %zu more ranks enqueued other calls", nother - MG_TR_SHOWN);
  if (differ) {
    static const char *const names[] = {"kind", "count", "dtype", "op", "root"};
    const char *sep = " (they differ in ";
    for (int b = 0; b < 5; b++)
      if (differ & (1 << b)) fprintf(out, "%s%s", sep, names[b]), sep = ", ";
    fprintf(out, ")");
  }
  if (nmiss > 0) {
    fprintf(out, "; rank%s ", nmiss > 1 ? "s" : "");
    mg_tr_ranks(out, miss, nmiss);
    fprintf(out, " never enqueued it");
    for (size_t i = 0; i < nmiss && i < MG_TR_SHOWN; i++) {
      int r = miss[i];
      if (enq[r] < 0) {
        fprintf(out, "; rank %d enqueued no collective", r);
      } else {
        fprintf(out, "; rank %d's last is ", r);
        mg_tr_last(s, enq[r], kind[r], out);
      }
    }
    if (nmiss > MG_TR_SHOWN) fprintf(out, "; and %zu more", nmiss - MG_TR_SHOWN);
  }
  for (size_t i = 0; i < nother && i < MG_TR_SHOWN; i++) {
    const int r = other[i];
    const mg_tr_dump_t *x = by_rank[r], *y = by_rank[ref_rank];
    if (mg_tr_shifted(x, y, seq))
      fprintf(out, "; rank %d looks one collective behind rank %d: its collectives from #%lld on "
              "are rank %d's from #%lld on (it did not call rank %d's #%lld)", r, ref_rank, seq,
              ref_rank, seq + 1, ref_rank, seq);
    else if (mg_tr_shifted(y, x, seq))
      fprintf(out, "; rank %d looks one collective ahead of rank %d: its collectives from #%lld "
              "on are rank %d's from #%lld on (it called #%lld, which rank %d did not)", r,
              ref_rank, seq + 1, ref_rank, seq, seq, ref_rank);
  }
  fprintf(out, "\n");
  rc = 0;
done:
  free(by_rank);
  free(enq);
  free(kind);
  free(list);
  free(miss);
  free(other);
  free(at);
  return rc;
}

/* ---- the report ---------------------------------------------------------------------------- */

static int mg_tr_cmp_dump(const void *a, const void *b) {
  const mg_tr_dump_t *x = a, *y = b;
  int c = strcmp(x->comm, y->comm);
  if (c != 0) return c;
  if (x->rank != y->rank) return (x->rank > y->rank) - (x->rank < y->rank);
  return (x->order > y->order) - (x->order < y->order);
}

int mg_tr_report(mg_tr_set_t *s, FILE *out) {
  if (s->ndumps == 0) return 0;
  qsort(s->dumps, s->ndumps, sizeof *s->dumps, mg_tr_cmp_dump);
  mg_tr_dump_t **group = malloc(s->ndumps * sizeof *group);
  if (group == NULL) return -1;
  int rc = 0;
  for (size_t i = 0; i < s->ndumps && rc == 0;) {
    size_t k = 0;
    for (size_t j = i; j < s->ndumps && strcmp(s->dumps[j].comm, s->dumps[i].comm) == 0; j++)
      group[k++] = &s->dumps[j];
    rc = mg_tr_analyse(s, group, k, out);
    i += k;
  }
  free(group);
  return rc;
}

/* ---- reading the folder ---------------------------------------------------------------------- */

enum { MG_TR_READ_OK, MG_TR_READ_NOT_REGULAR, MG_TR_READ_TOO_BIG, MG_TR_READ_ERROR };

/* Reads the regular file name of the folder dfd, at most max bytes, into *buf (malloc) and *len.
 * It is opened without blocking (a FIFO would wait for a writer) and refused unless fstat says
 * it is a regular file; *size is its size when it is too big. */
static int mg_tr_read_file(int dfd, const char *name, size_t max, char **buf, size_t *len,
                           long long *size) {
  int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return MG_TR_READ_ERROR;
  struct stat st;
  int rc = MG_TR_READ_ERROR;
  char *b = NULL;
  size_t n = 0;
  if (fstat(fd, &st) != 0) goto out;
  if (!S_ISREG(st.st_mode)) {
    rc = MG_TR_READ_NOT_REGULAR;
    goto out;
  }
  *size = (long long)st.st_size;
  if (st.st_size < 0 || (unsigned long long)st.st_size > max) {
    rc = MG_TR_READ_TOO_BIG;
    goto out;
  }
  /* One byte more than its size, to see that it grew; then up to max + 1. */
  size_t cap = (size_t)st.st_size + 1;
  b = malloc(cap);
  if (b == NULL) goto out;
  for (;;) {
    if (n == cap) {
      if (cap > max) {
        *size = (long long)n;
        rc = MG_TR_READ_TOO_BIG;
        goto out;
      }
      size_t grown = cap > max / 2 ? max + 1 : 2 * cap;
      char *t = realloc(b, grown);
      if (t == NULL) goto out;
      b = t;
      cap = grown;
    }
    ssize_t got = read(fd, b + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) goto out;
    if (got == 0) break;
    n += (size_t)got;
  }
  *buf = b;
  *len = n;
  b = NULL;
  rc = MG_TR_READ_OK;
out:;
  int err = errno;
  free(b);
  close(fd); /* read-only: nothing is lost */
  errno = err;
  return rc;
}

static int mg_tr_strcmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first max (by name) of the *.json of dir, sorted; NULL with *n = 0 when there is none.
 * At most 2 * max names are held while listing. */
static char **mg_tr_list(DIR *dir, size_t max, size_t *n, int *failed) {
  char **names = NULL;
  size_t cap = 0, seen = 0;
  struct dirent *e;
  *n = 0;
  while ((e = readdir(dir)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    seen++;
    if (*n == 2 * max) { /* keep the first max by name */
      qsort(names, *n, sizeof *names, mg_tr_strcmp);
      for (size_t i = max; i < *n; i++) free(names[i]);
      *n = max;
    }
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      char **t = realloc(names, cap * sizeof *t);
      if (t == NULL) break;
      names = t;
    }
    if ((names[*n] = malloc(len + 1)) == NULL) break;
    memcpy(names[(*n)++], e->d_name, len + 1);
  }
  if (e != NULL) {
    fprintf(stderr, "mgcomm trace: out of memory listing the folder\n");
    *failed = 1;
  }
  if (*n > 0) qsort(names, *n, sizeof *names, mg_tr_strcmp);
  if (*n > max) {
    for (size_t i = max; i < *n; i++) free(names[i]);
    *n = max;
  }
  if (seen > max) { /* each takes MG_TR_DUMP_RECORDS: the others could not be read */
    fprintf(stderr, "mgcomm trace: %zu files named *.json, more than --max-entries holds as "
            "dumps (%zu); the first %zu by name are read\n", seen, max, max);
    *failed = 1;
  }
  return names;
}

/* ---- the command ---------------------------------------------------------------------------- */

static int mg_tr_usage(FILE *f) {
  fprintf(f, "usage: mgcomm trace [--max-file-mb N] [--max-entries N] <dir>\n\n"
             "Merges the flight-recorder dumps in <dir> (mg_comm_dump_trace, or written on a\n"
             "timeout into MGCOMM_TRACE_DIR) and names, for each communicator, the first\n"
             "collective where the ranks diverge: a rank that never enqueued it, or one that\n"
             "enqueued another kind, count, dtype, op or root (it says which differ, and names\n"
             "a rank whose later collectives are the others' shifted by one as one collective\n"
             "behind or ahead). Files that are not regular, not valid JSON, or dumps that\n"
             "disagree with the others of their communicator are named and skipped.\n\n"
             "  --max-file-mb N   read dumps of at most N MiB (%d)\n"
             "  --max-entries N   hold at most N records in all (%lld): %d for a dump, 1 for\n"
             "                    each of its collectives and for each rank whose progress\n"
             "                    dumps report; at most 40 bytes of memory each\n\n"
             "Exit 0 when the dumps were read (diverging or not), 1 when none could be, or one\n"
             "was over a limit or could not be read, 2 on a usage error.\n",
          MG_TR_FILE_MB_DEFAULT, (long long)MG_TR_RECORDS_DEFAULT, MG_TR_DUMP_RECORDS);
  return f == stdout ? 0 : 2;
}

/* A positive decimal number of at most hi, or -1. */
static long long mg_tr_count_arg(const char *s, long long hi) {
  long long v = 0;
  if (s == NULL || *s == '\0') return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (*s - '0');
    if (v > hi) return -1;
  }
  return v > 0 ? v : -1;
}

int mg_cli_trace(int argc, char **argv) {
  long long max_mb = MG_TR_FILE_MB_DEFAULT, max_records = MG_TR_RECORDS_DEFAULT;
  const char *path = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return mg_tr_usage(stdout);
    if (strcmp(a, "--max-file-mb") == 0 || strcmp(a, "--max-entries") == 0) {
      const int mb = strcmp(a, "--max-file-mb") == 0;
      long long v = mg_tr_count_arg(i + 1 < argc ? argv[i + 1] : NULL, mb ? 1 << 20 : 1LL << 40);
      if (v < 0) {
        fprintf(stderr, "mgcomm trace: %s takes a whole number from 1 to %lld\n", a,
                mb ? 1LL << 20 : 1LL << 40);
        return mg_tr_usage(stderr);
      }
      *(mb ? &max_mb : &max_records) = v;
      i++;
    } else if (a[0] == '-' || path != NULL) {
      return mg_tr_usage(stderr);
    } else {
      path = a;
    }
  }
  if (path == NULL) return mg_tr_usage(stderr);
  DIR *dir = opendir(path);
  if (dir == NULL) {
    fprintf(stderr, "mgcomm trace: cannot open %s: %s\n", path, strerror(errno));
    return 1;
  }
  int failed = 0;
  size_t nnames;
  long long max_files = max_records / MG_TR_DUMP_RECORDS;
  char **names = mg_tr_list(dir, max_files > 0 ? (size_t)max_files : 1, &nnames, &failed);
  mg_tr_set_t set;
  mg_tr_set_init(&set, max_records);
  const size_t max_bytes = (size_t)max_mb << 20;
  for (size_t i = 0; i < nnames; i++) {
    size_t plen = strlen(path) + strlen(names[i]) + 2;
    char *file = malloc(plen), *text = NULL, why[MG_TR_WHY_LEN];
    size_t len = 0;
    long long size = 0;
    if (file == NULL) {
      fprintf(stderr, "mgcomm trace: out of memory\n");
      failed = 1;
      break;
    }
    snprintf(file, plen, "%s/%s", path, names[i]);
    int rd = mg_tr_read_file(dirfd(dir), names[i], max_bytes, &text, &len, &size);
    mg_tr_add_t add = MG_TR_NOT_DUMP;
    if (rd == MG_TR_READ_NOT_REGULAR) {
      fprintf(stderr, "mgcomm trace: %s is not a regular file; skipped\n", file);
    } else if (rd == MG_TR_READ_TOO_BIG) {
      fprintf(stderr, "mgcomm trace: %s is %lld bytes, more than the limit of %lld MiB per dump "
              "(--max-file-mb); skipped\n", file, size, max_mb);
      failed = 1;
    } else if (rd == MG_TR_READ_ERROR) {
      fprintf(stderr, "mgcomm trace: cannot read %s: %s\n", file, strerror(errno));
      failed = 1;
    } else {
      add = mg_tr_set_add(&set, file, text, len, why);
      free(text);
    }
    if (add == MG_TR_INVALID) {
      fprintf(stderr, "mgcomm trace: %s %s; skipped\n", file, why);
    } else if (add == MG_TR_FULL) {
      fprintf(stderr, "mgcomm trace: %s %s: it and the %zu files after it are not read\n", file,
              why, nnames - i - 1);
      failed = 1;
    } else if (add == MG_TR_NOMEM) {
      fprintf(stderr, "mgcomm trace: out of memory reading %s; it and the %zu files after it "
              "are not read\n", file, nnames - i - 1);
      failed = 1;
    }
    free(file);
    if (add == MG_TR_FULL || add == MG_TR_NOMEM) break;
  }
  for (size_t i = 0; i < nnames; i++) free(names[i]);
  free(names);
  closedir(dir); /* read-only directory stream */
  if (set.ndumps == 0) {
    fprintf(stderr, "mgcomm trace: no flight-recorder dump in %s\n", path);
    mg_tr_set_free(&set);
    return 1;
  }
  printf("mgcomm trace: %zu dump%s in %s\n", set.ndumps, set.ndumps > 1 ? "s" : "", path);
  if (mg_tr_report(&set, stdout) != 0) {
    fflush(stdout);
    fprintf(stderr, "mgcomm trace: out of memory\n");
    failed = 1;
  }
  mg_tr_set_free(&set);
  return failed;
}
