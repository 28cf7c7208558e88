/*
 * trace_fuzz.c -- fuzz target of `mgcomm trace`'s reader and report (tools/mgcomm/trace_parse.c,
 * tools/mgcomm/trace.c).
 *
 * The input is a folder of dumps in one text: parts separated by a line "---", each the contents
 * of one file, named by a first line "# <name>" when it has one (so that a name of the form
 * mgcomm-trace-<comm>-r<rank>.json can disagree with what the dump holds), else dump-<i>.json.
 * Each part goes through mg_tr_set_add; the set then goes through mg_tr_report, which writes to
 * /dev/null. Beyond "no crash, no out-of-bounds access, no undefined behaviour" (ASan, UBSan),
 * every dump added must hold only values in their documented ranges, a refused one must leave
 * the set as it was and say why, and the set must stay within its record limit.
 *
 * Two builds, as store_fuzz.c:
 *  - with MGCOMM_FUZZ=ON and clang, `trace_fuzz` links libFuzzer (tests/fuzz/trace.cmake runs it
 *    as the CTest `fuzz_trace` on a copy of the seed corpus tests/fuzz/trace-seeds/):
 *      build-fuzz/tests/fuzz/trace_fuzz -dict=tests/fuzz/trace.dict CORPUS_COPY
 *  - always, `trace_fuzz_replay DIR [N]`: runs every file of DIR and N (default 100000)
 *    deterministic mutations of them through the same target (CTest `trace_fuzz_replay`).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_parse.h"
#include "fuzz.h"

/* Small enough that inputs reach it; large enough for every seed. */
#define MAX_RECORDS 4096

static int valid_comm(const char *c) {
  size_t n = strlen(c);
  if (n == 0 || n >= MG_TR_COMM_LEN) return 0;
  for (; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          *c == '.' || *c == '_' || *c == '-'))
      return 0;
  return 1;
}

static void check_dump(const mg_tr_set_t *s, const mg_tr_dump_t *d) {
  CHECK(d->file != NULL && valid_comm(d->comm));
  CHECK(d->nranks >= 1 && d->nranks <= MG_TR_NRANKS_MAX && d->rank >= 0 && d->rank < d->nranks);
  CHECK(d->last_enq >= -1 && d->last_enq <= MG_TR_SEQ_MAX);
  CHECK(d->last_done >= -1 && d->last_done <= MG_TR_SEQ_MAX);
  CHECK(d->recorded >= 0 && d->capacity >= 0);
  for (size_t i = 0; i < d->nops; i++) {
    const mg_tr_op_t *o = &d->ops[i];
    CHECK(o->seq >= 0 && o->seq <= MG_TR_SEQ_MAX && (i == 0 || o->seq > d->ops[i - 1].seq));
    CHECK(o->count >= 0 && o->root >= -1);
    CHECK(o->kind < s->nnames && o->dtype < s->nnames && o->op < s->nnames);
  }
}

static void check_views(const mg_tr_set_t *s) {
  for (size_t v = 0; v < s->nviews; v++) {
    const mg_tr_view_t *w = &s->views[v];
    CHECK(valid_comm(w->comm) && w->nranks >= 1 && w->nranks <= MG_TR_NRANKS_MAX);
    CHECK(mg_tr_set_view(s, w->comm, w->nranks) == w);
    for (int r = 0; r < w->nranks; r++)
      CHECK(w->rank[r].enq >= -2 && w->rank[r].enq <= MG_TR_SEQ_MAX &&
            w->rank[r].kind < s->nnames);
  }
  for (int i = 0; i < s->nnames; i++) CHECK(strlen(s->names[i]) < MG_TR_NAME_LEN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *devnull;
  if (devnull == NULL) devnull = fopen("/dev/null", "w");
  CHECK(devnull != NULL);
  mg_tr_set_t set;
  mg_tr_set_init(&set, MAX_RECORDS);
  const char *p = (const char *)data, *end = p + size;
  for (int part = 0;; part++) {
    const char *sep = memmem(p, (size_t)(end - p), "\n---\n", 5);
    const char *stop = sep != NULL ? sep : end;
    char name[128];
    if (stop - p >= 2 && p[0] == '#' && p[1] == ' ' && memchr(p, '\n', (size_t)(stop - p))) {
      const char *nl = memchr(p, '\n', (size_t)(stop - p));
      size_t n = (size_t)(nl - p - 2) < sizeof name - 1 ? (size_t)(nl - p - 2) : sizeof name - 1;
      memcpy(name, p + 2, n);
      name[n] = '\0';
      p = nl + 1;
    } else {
      snprintf(name, sizeof name, "dump-%d.json", part);
    }
    char why[MG_TR_WHY_LEN];
    const size_t ndumps = set.ndumps;
    const long long records = set.records;
    mg_tr_add_t a = mg_tr_set_add(&set, name, p, (size_t)(stop - p), why);
    if (a == MG_TR_ADDED) {
      CHECK(set.ndumps == ndumps + 1 && set.records > records);
      CHECK(strcmp(set.dumps[ndumps].file, name) == 0);
      check_dump(&set, &set.dumps[ndumps]);
    } else {
      CHECK(set.ndumps == ndumps && set.records == records);
    }
    if (a == MG_TR_INVALID || a == MG_TR_FULL) CHECK(why[0] != '\0' && strlen(why) < MG_TR_WHY_LEN);
    CHECK(set.records <= set.max_records);
    if (sep == NULL) break;
    p = sep + 5;
  }
  check_views(&set);
  CHECK(mg_tr_report(&set, devnull) == 0);
  mg_tr_set_free(&set);
  return 0;
}

#ifndef MG_FUZZ_LIBFUZZER
/* ---- trace_fuzz_replay: the seed corpus plus deterministic mutations, no libFuzzer needed ---- */

typedef struct {
  char *bytes;
  size_t len;
} seed_t;

static seed_t seeds[256];
static int nseeds;
static size_t longest;

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_seeds(const char *dir) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  char *names[256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    CHECK(n < 256);
    names[n++] = strdup(e->d_name);
  }
  closedir(d); /* read-only directory stream */
  qsort(names, (size_t)n, sizeof *names, name_cmp);
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long len = ftell(f);
    CHECK(len >= 0 && fseek(f, 0, SEEK_SET) == 0);
    seed_t *s = &seeds[nseeds++];
    s->bytes = malloc((size_t)len + 1);
    CHECK(s->bytes != NULL && fread(s->bytes, 1, (size_t)len, f) == (size_t)len);
    fclose(f); /* read-only */
    s->len = (size_t)len;
    if (s->len > longest) longest = s->len;
    free(names[i]);
  }
  CHECK(nseeds > 0);
}

/* Pieces of JSON and of dumps that mutations insert. */
static const char *const tokens[] = {
    "{", "}", "[", "]", "\"", ",", ":", "\\", "\\u00", "\\u0041", "null", "true", "false", "-",
    "-1", "0", "1e400", "-0", "1.5", "01", "4611686018427387904", "4611686018427387905",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1048576", "1048577",
    "2147483648", "\"seq\": ", "\"rank\": ", "\"nranks\": ", "\"comm\": ", "\"collective\": true",
    "\"known\": false", "\"last_enqueued\": ", "\"peers\": [", "\"entries\": [", "{}",
    "{\"rank\": 1, \"last_enqueued\": 4000000000000000000}", "\n---\n", "\n---\n# x.json\n",
    "# mgcomm-trace-c-r0.json\n", "\"format\": \"mgcomm-trace\"", "\t", "\x01", "\x7f", "\xff"};

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: trace_fuzz_replay CORPUS_DIR [ITERATIONS]\n");
    return 2;
  }
  load_seeds(argv[1]);
  long iterations = argc >= 3 ? atol(argv[2]) : 100000;
  for (int i = 0; i < nseeds; i++)
    LLVMFuzzerTestOneInput((const uint8_t *)seeds[i].bytes, seeds[i].len);
  const size_t cap = 2 * longest + 1024;
  char *buf = malloc(cap);
  CHECK(buf != NULL);
  for (long it = 0; it < iterations; it++) {
    const seed_t *s = &seeds[mg_fuzz_next() % (uint64_t)nseeds];
    size_t len = s->len;
    memcpy(buf, s->bytes, len);
    int edits = 1 + (int)(mg_fuzz_next() % 4);
    for (int e = 0; e < edits; e++) {
      size_t at = len ? (size_t)(mg_fuzz_next() % len) : 0;
      switch (mg_fuzz_next() % 7) {
        case 0: if (len) buf[at] ^= (char)(1u << (mg_fuzz_next() % 8)); break; /* flip a bit */
        case 1: if (len) buf[at] = (char)mg_fuzz_next(); break;                /* a random byte */
        case 2: len = at; break;                                      /* truncate */
        case 3: {                                                     /* insert a token */
          const char *t = tokens[mg_fuzz_next() % (sizeof tokens / sizeof tokens[0])];
          size_t n = strlen(t);
          if (len + n <= cap) {
            memmove(buf + at + n, buf + at, len - at);
            memcpy(buf + at, t, n);
            len += n;
          }
          break;
        }
        case 4: {                                                     /* delete a span */
          size_t n = (size_t)(mg_fuzz_next() % 64);
          if (n > len - at) n = len - at;
          memmove(buf + at, buf + at + n, len - at - n);
          len -= n;
          break;
        }
        case 5: {                                                     /* repeat a span */
          size_t n = (size_t)(mg_fuzz_next() % 256);
          if (n > len - at) n = len - at;
          if (len + n <= cap) {
            memmove(buf + at + n, buf + at, len - at);
            len += n;
          }
          break;
        }
        case 6: {                                                     /* a digit run */
          size_t n = 1 + (size_t)(mg_fuzz_next() % 24);
          if (len + n <= cap) {
            memmove(buf + at + n, buf + at, len - at);
            for (size_t k = 0; k < n; k++) buf[at + k] = (char)('0' + mg_fuzz_next() % 10);
            len += n;
          }
          break;
        }
      }
    }
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
  }
  printf("trace_fuzz_replay: %d seeds and %ld mutations read and reported without a defect\n",
         nseeds, iterations);
  free(buf);
  for (int i = 0; i < nseeds; i++) free(seeds[i].bytes);
  return 0;
}
#endif
