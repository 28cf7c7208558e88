/*
 * host.h -- the host backend's per-communicator state and the entry points its files share.
 */
#ifndef MG_BACKEND_HOST_H
#define MG_BACKEND_HOST_H

#include "backend/host/host_shm.h"
#include "core/comm.h"

/* The unique id of a host communicator: a random segment name, plus a secret from which the
 * names of split and shrink children are derived (unguessable without it). */
typedef struct mg__hid {
  char magic[8];                /* MG__HOST_ID_MAGIC */
  unsigned char secret[16];     /* from getrandom */
  char name[MG__HSHM_NAME_MAX]; /* "/mgcomm-<32 hex>" */
} mg__hid_t;
_Static_assert(sizeof(mg__hid_t) <= MG_UNIQUE_ID_BYTES, "host id fits in mg_unique_id_t");

/* Whether stores into the staging slots are slow now (host_pace.c), per communicator. */
typedef struct mg__hpace {
  double gbps;       /* MGCOMM_HOST_PACE_GBPS: slower stores are slow (0: never measured) */
  int slow;          /* some rank voted slow in the last announcements read: alike on every rank */
  int vote;          /* this rank's vote, which its next announcement carries */
  unsigned history;  /* the last measurements, newest in bit 0: 1 where slow */
  int measured;      /* a measurement since the probes began (mg__hpace_lift) */
  int closing;       /* the collective running is the last probe */
  uint64_t lifted;   /* collectives that the slow state could send direct, since it began */
  uint64_t directs;  /* collectives that read their peers' buffers directly, on this rank */
  uint64_t filled[2]; /* directs + 1 when each slot was last filled: one filled since the last
                         direct collective, which its readers then read, is warm */
  size_t bytes;      /* the current collective's warm stores: bytes and seconds */
  double secs;
} mg__hpace_t;

/* host_pace.c */
void mg__hpace_init(mg__hpace_t *p);
/* For a collective that could read its peers' buffers directly but stays staged by the
 * creator's thresholds: 1 when the slow state sends it direct. Alike on every rank. */
int mg__hpace_lift(mg__hpace_t *p);
/* 1 when the step about to fill slot step t's slot should time its stores: its slot is warm. */
int mg__hpace_warm(const mg__hpace_t *p, uint64_t t);
/* That step filled its slot with `bytes` (0: not timed) in secs. */
void mg__hpace_filled(mg__hpace_t *p, uint64_t t, size_t bytes, double secs);
/* A collective ended: it read its peers' buffers directly, or else votes by its warm stores. */
void mg__hpace_ended(mg__hpace_t *p, int direct);
/* The announcements of a collective, read at its match: whether any rank voted slow. */
void mg__hpace_agree(mg__hpace_t *p, int any_slow);

typedef struct mg__hcomm {
  mg__hshm_t shm;   /* this rank's mapping of the segment */
  mg__hid_t id;     /* the id it was created from */
  uint64_t step;    /* number of the next transport step (the same on every rank) */
  uint64_t slot_steps; /* steps so far that went through the staging slots (the same on every
                          rank): such a step takes the slot its predecessor did not, whatever
                          mail or direct steps came between (host_coll.c, mg__slot) */
  uint64_t all_released; /* every rank is known to have released at least this many steps (a
                            rank that posted step s had released step s - 1): spares the reads
                            of the slot-free check when an earlier wait already saw them */
  int a2av_staged;  /* the last all_to_allv's pieces did not all fit in the mails: the next one
                       starts staged (host_coll.c, mg__coll_start); alike on every rank */
  mg__hpace_t pace; /* whether stores into the slots are slow now */
} mg__hcomm_t;

static inline mg__hcomm_t *mg__hcomm(const mg_comm_t *comm) { return (mg__hcomm_t *)comm->priv; }

/* host_coll.c: runs ops[0..n) of one group to completion (contract of mg__backend_t.launch). */
mg_status_t mg__host_launch(mg__op_t *const *ops, int n);

/* host_backend.c */
/* A new host unique id (the table's unique_id). */
mg_status_t mg__host_unique_id(mg_unique_id_t *uid);
/* Attaches comm (rank and nranks set) to the segment of uid and waits for every rank: init's
 * work, for init and grow; messages name fn. */
mg_status_t mg__host_join(mg_comm_t *comm, const mg_unique_id_t *uid, double deadline,
                          const char *fn);
/* Runs one internal collective on comm (the caller holds comm->lock): it takes a sequence
 * number like any other, so that every rank agrees on the numbering; int64 elements, max. */
mg_status_t mg__internal(mg_comm_t *comm, mg__opkind_t kind, const void *send, void *recv,
                         size_t count, double deadline);

/* host_suspend.c: the table's suspend, resume, memory statistics, properties and grow. */
mg_status_t mg__host_suspend(mg_comm_t *comm, int flags, double deadline);
mg_status_t mg__host_resume(mg_comm_t *comm, double deadline);
mg_status_t mg__host_mem_stats(mg_comm_t *comm, mg_comm_mem_stats_t *out);
mg_status_t mg__host_properties(mg_comm_t *comm, mg_comm_properties_t *out);
mg_status_t mg__host_grow_id(mg_comm_t *comm, mg_unique_id_t *id);
mg_status_t mg__host_grow(mg_comm_t *comm, const mg_unique_id_t *id, mg_comm_t *child,
                          double deadline);

/* host_check.c: the table's check_exchange (an all_gather of each record through the engine). */
mg_status_t mg__host_check_exchange(mg__xchg_t *const *xs, int n);

/* host_mark.c: the table's mark_* methods. A mark on stream NULL is reached at once; on a host
 * stream, when the stream's worker reaches it. */
mg_status_t mg__hmark_record(mg__mark_t *mark);
mg_status_t mg__hmark_query(mg__mark_t *mark);
mg_status_t mg__hmark_doomed(mg__mark_t *mark);
mg_status_t mg__hmark_notify(mg__mark_t *mark);
mg_status_t mg__hmark_wait(mg__mark_t *mark, double deadline);
void mg__hmark_release(mg__mark_t *mark);
/* end's time minus start's: the mg__now() at which the host engine reached each (the worker
 * ran the marker; for stream NULL, mark_record). */
mg_status_t mg__hmark_elapsed(mg__mark_t *start, mg__mark_t *end, double *seconds);
/* Bytes of mark->priv the host marks use (a marker and a time). */
#define MG__HMARK_PRIV_SIZE (sizeof(void *) + sizeof(double))

#endif
