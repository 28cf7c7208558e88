/*
 * host_check.c -- the host backend's check_exchange (the collective check, core/collcheck.c):
 * each exchange is an all_gather of the record through the communicator's segment, run by the
 * engine of host_coll.c with the exchanges of the round together (one thread may drive every
 * rank). A record fits in the first line of a mail (MG__MAIL_LINE0_BYTES), so it travels in the
 * ranks' mails: one step, one cache line per peer.
 *
 * The exchange is a collective of the engine like any other: it takes the next step on every
 * rank, is matched against the peers' (a rank that runs the real collective there instead, its
 * check being off, is refused as a mismatch), and is bounded by the deadline, the abort flag and
 * the peers' liveness. It carries one sequence number on every rank, MG__HCHK_SEQ, which no
 * collective has: ranks whose own numbers differ (one is a collective ahead) must still meet in
 * it, for the records to say so. The engine publishes that number + 1 as the rank's last
 * completed collective; the exchange puts back what was there, so that what the peers read of
 * this rank's progress stays true.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/host/host.h"
#include "base/error.h"

_Static_assert(MG__CHECK_BYTES <= MG__MAIL_LINE0_BYTES, "a record travels in one mail line");

#define MG__HCHK_SEQ UINT64_MAX

/* The engine's messages name an exchange as its all_gather, "all_gather #<MG__HCHK_SEQ> (uint8 x
 * 40...)": they say "the check's exchange" instead, keeping the status st. */
static void mg__hchk_rename(mg_status_t st) {
  char msg[MG__ERROR_LEN], out[MG__ERROR_LEN], token[64];
  snprintf(token, sizeof token, "all_gather #%llu", (unsigned long long)MG__HCHK_SEQ);
  mg_last_error_copy(msg, sizeof msg);
  size_t o = 0;
  const char *p = msg, *at;
  while ((at = strstr(p, token)) != NULL && o < sizeof out) {
    o += (size_t)snprintf(out + o, sizeof out - o, "%.*sthe check's exchange", (int)(at - p), p);
    p = at + strlen(token);
    const char *close = strncmp(p, " (", 2) == 0 ? strchr(p, ')') : NULL;
    if (close != NULL) p = close + 1; /* its shape: the record's, the same on every rank */
  }
  if (p == msg) return; /* not named */
  if (o < sizeof out) snprintf(out + o, sizeof out - o, "%s", p);
  mg__error(st, "%s", out);
}

/* This rank's block of comm's segment. */
static mg__hshm_rank_t *mg__hrank_of(mg_comm_t *comm) {
  mg__hshm_t *s = &mg__hcomm(comm)->shm;
  return &s->ranks[s->me];
}

mg_status_t mg__host_check_exchange(mg__xchg_t *const *xs, int n) {
  /* Per exchange: its all_gather, and this rank's last completed collective before it. */
  struct item {
    mg__op_t op;
    uint64_t done1;
  } inline_items[4], *items = inline_items;
  mg__op_t *inline_p[4] = {NULL}, **p = inline_p;
  if (n > 4) {
    items = malloc(sizeof *items * (unsigned)n);
    p = malloc(sizeof *p * (unsigned)n);
    if (items == NULL || p == NULL) {
      free(items);
      free(p);
      return mg__error(MG_ERR_OUT_OF_MEMORY, "host backend: out of memory for the collective "
                       "check");
    }
  }
  for (int i = 0; i < n; i++) {
    const mg__xchg_t *x = xs[i];
    items[i].op = (mg__op_t){.kind = MG_OPK_ALL_GATHER,
                             .comm = x->comm,
                             .send = x->mine,
                             .recv = x->all,
                             .count = MG__CHECK_BYTES,
                             .dtype = MG_UINT8,
                             .root = -1,
                             .seq = MG__HCHK_SEQ,
                             .deadline = x->deadline,
                             .status = MG_INPROGRESS};
    items[i].done1 = atomic_load(&mg__hrank_of(x->comm)->done_seq);
    p[i] = &items[i].op;
  }
  mg_status_t st = mg__host_launch(p, n);
  for (int i = 0; i < n; i++) {
    xs[i]->status = items[i].op.status;
    atomic_store_explicit(&mg__hrank_of(xs[i]->comm)->done_seq, items[i].done1,
                          memory_order_release);
  }
  if (st < 0) mg__hchk_rename(st);
  if (items != inline_items) {
    free(items);
    free(p);
  }
  return st;
}
