/*
 * trace.c -- the flight recorder (trace.h) and mg_comm_dump_trace.
 *
 * Divisions: the ring; describing a stall; snapshots and the JSON dump (its format is in
 * docs/world.md; tools/mgcomm/trace.c reads it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/comm.h"
#include "base/log.h"
#include "base/params.h"
#include "base/spinlock.h"
#include "core/trace.h"

enum { MG__TR_ENQUEUED = 1, MG__TR_STARTED = 2, MG__TR_COMPLETED = 3, MG__TR_FAILED = 4 };

static const char *mg__tr_state_name(int s) {
  switch (s) {
    case MG__TR_ENQUEUED: return "enqueued";
    case MG__TR_STARTED: return "started";
    case MG__TR_COMPLETED: return "completed";
    case MG__TR_FAILED: return "failed";
  }
  return "unknown";
}

/* One operation. Its id is not stored: the entry of id sits at (id - 1) % cap and holds it
 * while next_id - id < cap. An operation keeps its slot (op->trace_slot) for its start and end. */
typedef struct mg__trace_ent {
  uint64_t seq;    /* the operation's sequence number (per peer for send/recv) */
  uint64_t count;
  uintptr_t stream;
  double t_enq, t_start, t_end; /* mg__now_coarse() seconds (ms resolution); 0 until then */
  int root;
  int op;                       /* reductions: the built-in op, or -2 for a PreMulSum; else -1 */
  mg_status_t status;           /* MG_INPROGRESS until it ended */
  mg__opkind_t kind;
  mg_dtype_t dtype;
  int state;                    /* MG__TR_*; 0: slot never used */
} mg__trace_ent_t;

struct mg__trace {
  mg__spinlock_t lock;  /* a leaf: everything below; held for a few stores, or a copy of ent */
  uint32_t cap;
  uint64_t next_id;     /* entries made so far */
  uint64_t enq1, done1; /* collectives: last enqueued / completed sequence number + 1 */
  mg__trace_ent_t *ent; /* [cap] */
};

/* ---- the ring ------------------------------------------------------------------------------ */

mg_status_t mg__trace_create(mg_comm_t *comm, int entries) {
  comm->trace = NULL;
  if (entries <= 0) return MG_OK;
  mg__trace_t *t = calloc(1, sizeof *t);
  mg__trace_ent_t *ent = calloc((size_t)entries, sizeof *ent);
  if (t == NULL || ent == NULL) {
    free(t);
    free(ent);
    return mg__error(MG_ERR_OUT_OF_MEMORY, "cannot allocate a flight recorder of %d entries",
                     entries);
  }
  t->cap = (uint32_t)entries;
  t->ent = ent;
  comm->trace = t;
  return MG_OK;
}

void mg__trace_destroy(mg_comm_t *comm) {
  mg__trace_t *t = comm->trace;
  if (t == NULL) return;
  free(t->ent);
  free(t);
  comm->trace = NULL;
}

/* The entry of id (1 <= id <= next_id), or NULL when a newer one took its slot. */
static mg__trace_ent_t *mg__tr_slot(mg__trace_t *t, uint64_t id) {
  return t->next_id - id < t->cap ? &t->ent[(id - 1) % t->cap] : NULL;
}

/* op's entry, or NULL when a newer one took its slot. */
static mg__trace_ent_t *mg__tr_entry(mg__trace_t *t, const mg__op_t *op) {
  return t->next_id - op->trace_id < t->cap ? &t->ent[op->trace_slot] : NULL;
}

void mg__trace_enqueue(mg__op_t *op, int started, double now) {
  mg__trace_t *t = op->comm->trace;
  if (t == NULL) return;
  mg__spin_lock(&t->lock);
  const uint64_t id = ++t->next_id;
  const uint32_t slot = (uint32_t)((id - 1) % t->cap);
  mg__trace_ent_t *e = &t->ent[slot];
  e->seq = op->seq;
  e->count = op->count;
  e->stream = (uintptr_t)op->stream;
  e->t_enq = now;
  e->t_start = started ? now : 0;
  e->t_end = 0;
  e->kind = op->kind;
  e->dtype = op->dtype;
  e->root = op->root;
  e->op = !mg__opkind_is_reduction(op->kind) ? -1 : op->redop.premul ? -2 : (int)op->redop.op;
  e->state = started ? MG__TR_STARTED : MG__TR_ENQUEUED;
  e->status = MG_INPROGRESS;
  if (mg__opkind_is_collective(op->kind)) t->enq1 = op->seq + 1;
  mg__spin_unlock(&t->lock);
  op->trace_id = id;
  op->trace_slot = slot;
}

void mg__trace_start(const mg__op_t *op) {
  mg__trace_t *t = op->comm->trace;
  if (t == NULL || op->trace_id == 0) return;
  double now = mg__now_coarse();
  mg__spin_lock(&t->lock);
  mg__trace_ent_t *e = mg__tr_entry(t, op);
  if (e != NULL) {
    e->t_start = now;
    e->state = MG__TR_STARTED;
  }
  mg__spin_unlock(&t->lock);
}

void mg__trace_end(const mg__op_t *op) {
  mg__trace_t *t = op->comm->trace;
  if (t == NULL || op->trace_id == 0) return;
  double now = mg__now_coarse();
  mg__spin_lock(&t->lock);
  mg__trace_ent_t *e = mg__tr_entry(t, op);
  if (e != NULL) {
    if (e->t_start == 0) e->t_start = now; /* failed before it started */
    e->t_end = now;
    e->status = op->status;
    e->state = op->status < 0 ? MG__TR_FAILED : MG__TR_COMPLETED;
  }
  if (op->status >= 0 && mg__opkind_is_collective(op->kind) && op->seq + 1 > t->done1)
    t->done1 = op->seq + 1;
  mg__spin_unlock(&t->lock);
}

/* ---- describing a stall ---------------------------------------------------------------------- */

static size_t mg__cat(char *buf, size_t len, size_t o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t mg__cat(char *buf, size_t len, size_t o, const char *fmt, ...) {
  if (o >= len) return o;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + o, len - o, fmt, ap);
  va_end(ap);
  return n < 0 ? o : o + (size_t)n;
}

static const char *mg__dt(mg_dtype_t dtype) {
  const char *n = mg_dtype_name(dtype);
  return n ? n : "?";
}

/* Rank r's progress as its backend knows it, else (a rank of another process, on a backend that
 * shares progress only inside one) as what the communicator's maker attached knows it. */
static mg_status_t mg__peer_progress(mg_comm_t *comm, int r, mg__progress_t *p) {
  mg_status_t st = comm->backend->peer_progress(comm, r, p);
  if (st < 0 && comm->ext != NULL && comm->ext->peer_progress != NULL &&
      comm->ext->peer_progress(comm->ext_state, r, p) == MG_OK)
    return MG_OK;
  return st;
}

void mg__trace_describe(mg_comm_t *comm, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = '\0';
  mg__trace_t *t = comm->trace;
  mg__trace_ent_t pend = {0}, p2p = {0}, last = {0};
  if (t != NULL) {
    mg__spin_lock(&t->lock);
    uint64_t first = t->next_id > t->cap ? t->next_id - t->cap + 1 : 1;
    for (uint64_t id = first; id <= t->next_id; id++) {
      mg__trace_ent_t *e = mg__tr_slot(t, id);
      last = *e;
      if (e->state == MG__TR_COMPLETED || e->state == MG__TR_FAILED) continue;
      if (mg__opkind_is_collective(e->kind)) {
        if (pend.state == 0) pend = *e;
      } else if (p2p.state == 0) {
        p2p = *e;
      }
    }
    mg__spin_unlock(&t->lock);
  }
  /* A backend whose operations finish on the device after they were issued (NCCL) marks them
   * completed when issued: what the device may still be running is then the last operation
   * issued, or one before it. */
  const int issued = pend.state == 0 && p2p.state == 0 && last.state != 0 &&
                     (comm->backend->caps & MG__CAP_ASYNC) != 0 && last.status >= 0;
  if (issued) {
    if (mg__opkind_is_collective(last.kind))
      pend = last;
    else
      p2p = last;
  }
  const char *on_device = issued ? ", the last operation this rank issued to the device (it, or "
                                   "one before it on a stream, has not finished there)" : "";
  if (pend.state == 0 && p2p.state != 0) {
    mg__cat(buf, len, o, "%s #%llu %s rank %d (%s x %llu)%s", mg__opkind_name(p2p.kind),
            (unsigned long long)p2p.seq, p2p.kind == MG_OPK_SEND ? "to" : "from", p2p.root,
            mg__dt(p2p.dtype), (unsigned long long)p2p.count,
            issued ? on_device : p2p.state == MG__TR_STARTED ? " is in progress" : " is queued");
    return;
  }
  if (pend.state == 0) {
    o = mg__cat(buf, len, o, "rank %d of %d has no operation pending%s", comm->rank, comm->nranks,
                t == NULL ? " (no flight recorder)" : "");
    /* What was awaited may have just failed (e.g. a peer's abort reached it first). */
    if (last.state == MG__TR_FAILED)
      mg__cat(buf, len, o, "; its last operation, %s #%llu (%s x %llu), failed with %s",
              mg__opkind_name(last.kind), (unsigned long long)last.seq, mg__dt(last.dtype),
              (unsigned long long)last.count, mg_status_name(last.status));
    return;
  }
  o = mg__cat(buf, len, o, "%s #%llu (%s x %llu)%s", mg__opkind_name(pend.kind),
              (unsigned long long)pend.seq, mg__dt(pend.dtype), (unsigned long long)pend.count,
              on_device);
  if (!(comm->backend->caps & MG__CAP_PROGRESS)) {
    mg__cat(buf, len, o, ": the %s backend does not publish the progress of the other ranks",
            comm->backend->name);
    return;
  }
  o = mg__cat(buf, len, o, ": ");
  if (o < len) mg__trace_ranks(comm, pend.seq, issued, buf + o, len - o);
}

void mg__trace_ranks(mg_comm_t *comm, uint64_t seq, int issued, char *buf, size_t len) {
  const uint64_t want = seq + 1;
  char waiting[256] = "";
  size_t w = 0;
  int nwait = 0;
  char others[768] = "";
  size_t ot = 0;
  for (int r = 0; r < comm->nranks; r++) {
    mg__progress_t p;
    if (mg__peer_progress(comm, r, &p) < 0) {
      ot = mg__cat(others, sizeof others, ot, ", rank %d's progress is unknown", r);
      continue;
    }
    if (p.enqueued1 >= want && p.completed1 < want) {
      w = mg__cat(waiting, sizeof waiting, w, "%s%d", nwait ? "," : "", r);
      nwait++;
    } else if (p.completed1 >= want) {
      ot = mg__cat(others, sizeof others, ot, ", rank %d completed it", r);
    } else if (p.enqueued1 == 0) {
      ot = mg__cat(others, sizeof others, ot, ", rank %d has not enqueued any collective", r);
    } else {
      ot = mg__cat(others, sizeof others, ot, ", rank %d last enqueued #%llu (%s %s x %llu)", r,
                   (unsigned long long)(p.enqueued1 - 1), mg__opkind_name(p.kind),
                   mg__dt(p.dtype), (unsigned long long)p.count);
    }
  }
  if (nwait > 0)
    mg__cat(buf, len, 0, "rank%s %s %s%s", nwait > 1 ? "s" : "", waiting,
            issued ? "enqueued it" : "waiting", others);
  else
    mg__cat(buf, len, 0, "%s", others[0] ? others + 2 : "every rank is past it");
}

/* ---- snapshots and the JSON dump ------------------------------------------------------------ */

struct mg__trace_snap {
  int rank, nranks;
  const char *backend;
  uint64_t tag;
  char reason[32];
  double at;
  uint32_t cap;
  uint64_t recorded;
  uint64_t enq1, done1;
  int npeers;              /* nranks when the backend publishes progress, else 0 */
  mg__progress_t *peers;   /* [npeers] */
  int *peer_known;         /* [npeers] */
  size_t n;
  mg__trace_ent_t *ent;    /* [n], oldest first: ids recorded - n + 1 .. recorded */
};

void mg__trace_snap_free(mg__trace_snap_t *s) {
  if (s == NULL) return;
  free(s->peers);
  free(s->peer_known);
  free(s->ent);
  free(s);
}

mg__trace_snap_t *mg__trace_snapshot(mg_comm_t *comm, const char *reason) {
  mg__trace_t *t = comm->trace;
  if (t == NULL) {
    mg__error(MG_ERR_NOT_SUPPORTED, "rank %d has no flight recorder (trace_entries -1, or "
              "MGCOMM_TRACE_ENTRIES=0)", comm->rank);
    return NULL;
  }
  mg__trace_snap_t *s = calloc(1, sizeof *s);
  int progress = (comm->backend->caps & MG__CAP_PROGRESS) != 0;
  if (s != NULL) {
    s->ent = malloc(sizeof *s->ent * t->cap);
    if (progress) {
      s->peers = calloc((size_t)comm->nranks, sizeof *s->peers);
      s->peer_known = calloc((size_t)comm->nranks, sizeof *s->peer_known);
    }
  }
  if (s == NULL || s->ent == NULL || (progress && (s->peers == NULL || s->peer_known == NULL))) {
    mg__trace_snap_free(s);
    mg__error(MG_ERR_OUT_OF_MEMORY, "cannot copy the flight recorder of rank %d", comm->rank);
    return NULL;
  }
  s->rank = comm->rank;
  s->nranks = comm->nranks;
  s->backend = comm->backend->name;
  s->tag = progress ? comm->backend->comm_tag(comm) : (uint64_t)(uintptr_t)comm;
  snprintf(s->reason, sizeof s->reason, "%s", reason);
  s->at = mg__now();
  s->cap = t->cap;
  if (progress) {
    s->npeers = comm->nranks;
    for (int r = 0; r < comm->nranks; r++)
      s->peer_known[r] = mg__peer_progress(comm, r, &s->peers[r]) == MG_OK;
  }
  mg__spin_lock(&t->lock);
  s->recorded = t->next_id;
  s->enq1 = t->enq1;
  s->done1 = t->done1;
  uint64_t first = t->next_id > t->cap ? t->next_id - t->cap + 1 : 1;
  for (uint64_t id = first; id <= t->next_id; id++) s->ent[s->n++] = *mg__tr_slot(t, id);
  mg__spin_unlock(&t->lock);
  return s;
}

static void mg__json_time(FILE *f, const char *key, double t, const char *sep) {
  if (t == 0)
    fprintf(f, "\"%s\": null%s", key, sep);
  else
    fprintf(f, "\"%s\": %.9f%s", key, t, sep);
}

static void mg__json_seq1(FILE *f, const char *key, uint64_t v1, const char *sep) {
  if (v1 == 0)
    fprintf(f, "\"%s\": -1%s", key, sep);
  else
    fprintf(f, "\"%s\": %llu%s", key, (unsigned long long)(v1 - 1), sep);
}

static void mg__default_name(const mg__trace_snap_t *s, const char *dir, char *out, size_t len) {
  snprintf(out, len, "%s/mgcomm-trace-%016llx-r%d.json", dir, (unsigned long long)s->tag, s->rank);
}

mg_status_t mg__trace_write(const mg__trace_snap_t *s, const char *path, const char *fn) {
  char file[4096];
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
    mg__default_name(s, path, file, sizeof file);
  else
    snprintf(file, sizeof file, "%s", path);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", file, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (f == NULL) return mg__error_errno(MG_ERR_SYSTEM, errno, "%s: cannot write %s", fn, tmp);
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0'; /* the name is informative only */
  for (char *c = host; *c; c++)
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = '_';
  fprintf(f, "{\n  \"format\": \"mgcomm-trace\",\n  \"version\": 1,\n");
  fprintf(f, "  \"comm\": \"%016llx\",\n  \"rank\": %d,\n  \"nranks\": %d,\n",
          (unsigned long long)s->tag, s->rank, s->nranks);
  fprintf(f, "  \"backend\": \"%s\",\n  \"host\": \"%s\",\n  \"pid\": %d,\n", s->backend, host,
          (int)getpid());
  fprintf(f, "  \"reason\": \"%s\",\n  \"dumped_at\": %.9f,\n", s->reason, s->at);
  fprintf(f, "  \"capacity\": %u,\n  \"recorded\": %llu,\n  ", s->cap,
          (unsigned long long)s->recorded);
  mg__json_seq1(f, "last_enqueued", s->enq1, ",\n  ");
  mg__json_seq1(f, "last_completed", s->done1, ",\n");
  fprintf(f, "  \"peers\": [");
  for (int r = 0; r < s->npeers; r++) {
    const mg__progress_t *p = &s->peers[r];
    fprintf(f, "%s\n    {\"rank\": %d, ", r ? "," : "", r);
    if (!s->peer_known[r]) {
      fprintf(f, "\"known\": false}");
      continue;
    }
    mg__json_seq1(f, "last_enqueued", p->enqueued1, ", ");
    mg__json_seq1(f, "last_completed", p->completed1, "");
    if (p->enqueued1 != 0)
      fprintf(f, ", \"kind\": \"%s\", \"dtype\": \"%s\", \"count\": %llu, \"root\": %d",
              mg__opkind_name(p->kind), mg__dt(p->dtype), (unsigned long long)p->count, p->root);
    fprintf(f, "}");
  }
  fprintf(f, "%s],\n  \"entries\": [", s->npeers ? "\n  " : "");
  for (size_t i = 0; i < s->n; i++) {
    const mg__trace_ent_t *e = &s->ent[i];
    const int coll = mg__opkind_is_collective(e->kind);
    fprintf(f, "%s\n    {\"id\": %llu, \"seq\": %llu, \"kind\": \"%s\", \"collective\": %s, ",
            i ? "," : "", (unsigned long long)(s->recorded - s->n + 1 + i),
            (unsigned long long)e->seq,
            mg__opkind_name(e->kind), coll ? "true" : "false");
    fprintf(f, "\"dtype\": \"%s\", \"count\": %llu, \"root\": %d, \"peer\": %d, ",
            mg__dt(e->dtype), (unsigned long long)e->count, coll ? e->root : -1,
            coll ? -1 : e->root);
    if (e->op == -1) fprintf(f, "\"op\": null, ");
    else fprintf(f, "\"op\": \"%s\", ", e->op == -2 ? "premul_sum" : mg_op_name((mg_op_t)e->op));
    fprintf(f, "\"stream\": \"0x%llx\", ", (unsigned long long)e->stream);
    mg__json_time(f, "t_enqueue", e->t_enq, ", ");
    mg__json_time(f, "t_start", e->t_start, ", ");
    mg__json_time(f, "t_end", e->t_end, ", ");
    fprintf(f, "\"state\": \"%s\", \"status\": \"%s\"}", mg__tr_state_name(e->state),
            e->status == MG_INPROGRESS ? "" : mg_status_name(e->status));
  }
  fprintf(f, "%s]\n}\n", s->n ? "\n  " : "");
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    int err = errno;
    unlink(tmp); /* best effort: do not leave a partial file behind */
    return mg__error_errno(MG_ERR_SYSTEM, err, "%s: cannot write %s", fn, tmp);
  }
  if (rename(tmp, file) != 0) {
    int err = errno;
    unlink(tmp); /* as above */
    return mg__error_errno(MG_ERR_SYSTEM, err, "%s: cannot rename %s to %s", fn, tmp, file);
  }
  MG_INFO(MG_SUBSYS_COLL, "%s: rank %d's flight recorder written to %s", fn, s->rank, file);
  return MG_OK;
}

mg__trace_snap_t *mg__trace_autodump_snap(mg_comm_t *comm) {
  if (mg__param_str(MG_PARAM_TRACE_DIR)[0] == '\0' || comm->trace == NULL) return NULL;
  return mg__trace_snapshot(comm, "timeout");
}

void mg__trace_autodump_write(mg__trace_snap_t *snap) {
  if (snap == NULL) return;
  const char *dir = mg__param_str(MG_PARAM_TRACE_DIR);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST)
    MG_WARN("MGCOMM_TRACE_DIR %s cannot be created: %s", dir, strerror(errno));
  char file[4096];
  mg__default_name(snap, dir, file, sizeof file);
  /* The timeout is what the caller reports; a dump that fails is only worth a warning. */
  if (mg__trace_write(snap, file, "flight recorder") < 0) MG_WARN("%s", mg_last_error());
  mg__trace_snap_free(snap);
}

mg_status_t mg_comm_dump_trace(mg_comm_t *comm, const char *path) {
  static const char fn[] = "mg_comm_dump_trace";
  if (path == NULL || path[0] == '\0')
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: path is NULL or empty", fn);
  MG_CHECK(mg__comm_enter(comm, fn));
  mg__trace_snap_t *s = mg__trace_snapshot(comm, "request");
  mg_status_t st;
  if (s == NULL) {
    mg__error_prefix("%s", fn);
    st = comm->trace == NULL ? MG_ERR_NOT_SUPPORTED : MG_ERR_OUT_OF_MEMORY;
  } else {
    st = mg__trace_write(s, path, fn);
    mg__trace_snap_free(s);
  }
  mg__comm_leave(comm);
  return st;
}
