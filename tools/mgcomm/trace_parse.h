/*
 * trace_parse.h -- the pieces of `mgcomm trace`: reading flight-recorder dumps into a set
 * (trace_parse.c) and the report on a set (trace.c). They take bytes, not files, so that the fuzz
 * target tests/fuzz/trace_fuzz.c can feed them anything.
 *
 * Every value read is bounded: a dump claims at most MG_TR_NRANKS_MAX ranks, sequence numbers
 * are at most MG_TR_SEQ_MAX, names fit their buffers, and a set holds at most max_records
 * records in all: MG_TR_DUMP_RECORDS for a dump (its header and name), one for each of its
 * collectives, and one for each rank of a communicator whose progress a dump reports for the
 * others. A record is at most 24 bytes kept (40 while mg_tr_report runs), which bounds memory.
 */
#ifndef MG_TRACE_PARSE_H
#define MG_TRACE_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MG_TR_NRANKS_MAX (1 << 20)          /* ranks a dump may say its communicator has */
#define MG_TR_SEQ_MAX (1LL << 62)           /* sequence numbers: seq + 1 never overflows */
#define MG_TR_RECORDS_DEFAULT (1LL << 25)   /* --max-entries: 8192 ranks x 2048 entries fit */
#define MG_TR_FILE_MB_DEFAULT 256           /* --max-file-mb */
#define MG_TR_DUMP_RECORDS 16               /* what a dump counts for in max_records */
enum {
  MG_TR_NAME_LEN = 32,    /* a kind, dtype or op name, NUL included */
  MG_TR_NAMES_MAX = 256,  /* distinct names in a set; id 0 is "" */
  MG_TR_COMM_LEN = 65,    /* a communicator tag, NUL included */
  MG_TR_WHY_LEN = 256,    /* the message of mg_tr_set_add */
};

/* One collective of a dump. */
typedef struct {
  long long seq;           /* 0..MG_TR_SEQ_MAX */
  long long count;         /* >= 0 */
  int root;                /* -1: none */
  uint8_t kind, dtype, op; /* names[]; op 0 ("") for a collective that is not a reduction */
} mg_tr_op_t;

/* What the dumps of one communicator saw of one rank's progress. */
typedef struct {
  long long enq; /* the last collective it enqueued: -1 none, -2 unknown */
  uint8_t kind;  /* names[] of that collective, 0 if not known */
} mg_tr_seen_t;

/* The most advanced progress of every rank that the dumps of one (comm, nranks) report. */
typedef struct {
  char comm[MG_TR_COMM_LEN];
  int nranks;
  mg_tr_seen_t *rank; /* [nranks], owned */
} mg_tr_view_t;

typedef struct {
  char *file;                 /* as passed to mg_tr_set_add, owned */
  char comm[MG_TR_COMM_LEN];  /* [0-9A-Za-z._-], 1 to 64 of them */
  int rank, nranks;           /* 0 <= rank < nranks <= MG_TR_NRANKS_MAX */
  int on_timeout;             /* dumped on a timeout (else on request) */
  long long last_enq, last_done; /* -1..MG_TR_SEQ_MAX; -1: none */
  long long recorded, capacity;  /* >= 0: operations recorded, and the ring's size */
  mg_tr_op_t *ops;            /* [nops], owned: by increasing seq, no two alike */
  size_t nops;
  size_t order;               /* position among the dumps added */
} mg_tr_dump_t;

typedef struct {
  mg_tr_dump_t *dumps; /* [ndumps], owned */
  size_t ndumps, dumps_cap;
  mg_tr_view_t *views; /* [nviews], owned; found through view_slot */
  size_t nviews, views_cap;
  size_t *view_slot;   /* [view_slots]: index + 1 in views, 0 free; a power of two */
  size_t view_slots;
  char names[MG_TR_NAMES_MAX][MG_TR_NAME_LEN];
  int nnames;
  uint16_t name_slot[2 * MG_TR_NAMES_MAX]; /* id in names, 0 free (id 0 is never hashed) */
  long long records, max_records;
} mg_tr_set_t;

typedef enum {
  MG_TR_ADDED,    /* a dump, now in the set */
  MG_TR_NOT_DUMP, /* valid JSON, but not a flight-recorder dump */
  MG_TR_INVALID,  /* not valid JSON, or not a valid dump: why says which and where */
  MG_TR_FULL,     /* the set would exceed max_records: why names the limit */
  MG_TR_NOMEM,
} mg_tr_add_t;

void mg_tr_set_init(mg_tr_set_t *s, long long max_records);
void mg_tr_set_free(mg_tr_set_t *s);

/* Reads the dump text[0..len) (any bytes) from file (a path; a name of the form
 * mgcomm-trace-<comm>-r<rank>.json must match what the dump holds). The set is unchanged unless
 * MG_TR_ADDED. For MG_TR_INVALID and MG_TR_FULL, why[MG_TR_WHY_LEN] reads after the file's name:
 * "is not valid JSON: byte 12: ...", "is not a valid dump: ...", "would make more than ...". */
mg_tr_add_t mg_tr_set_add(mg_tr_set_t *s, const char *file, const char *text, size_t len,
                          char *why);

/* The view of (comm, nranks), NULL when no dump of them reported others' progress. */
const mg_tr_view_t *mg_tr_set_view(const mg_tr_set_t *s, const char *comm, int nranks);

/* trace.c: groups the set's dumps by communicator, names and skips those that disagree with the
 * others of theirs (nranks, a rank twice) and writes the analysis of each communicator to out.
 * 0, or -1 when out of memory (what was written stays). Sorts s->dumps. */
int mg_tr_report(mg_tr_set_t *s, FILE *out);

#endif
