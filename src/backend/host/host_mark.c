/*
 * host_mark.c -- completion on the host backend (backend.h, "completion tracking"): a mark on
 * stream NULL is reached when it is recorded (the operations before it ran inside their calls);
 * a mark on a host stream is a marker (core/stream.h) queued on the stream's worker, reached when
 * the worker runs it, with the stream's sticky error at that point.
 */
#include "backend/host/host.h"
#include "base/clock.h"
#include "core/stream.h"

typedef struct {
  mg__marker_t *mk; /* NULL: stream NULL, reached at once */
  double t_reached; /* stream NULL: mg__now() at mark_record */
} mg__hmark_t;
_Static_assert(sizeof(mg__hmark_t) == MG__HMARK_PRIV_SIZE, "the host table's mark_priv_size");

static mg__hmark_t *mg__hm(mg__mark_t *m) { return (mg__hmark_t *)m->priv; }

mg_status_t mg__hmark_record(mg__mark_t *m) {
  mg__hmark_t *hm = mg__hm(m);
  hm->mk = NULL;
  if (m->stream == NULL) {
    hm->t_reached = mg__now(); /* what came before on stream NULL ran inside its calls */
    return MG_OK;
  }
  return mg__marker_push(m->comm, m->stream, &hm->mk, &m->wowner);
}

mg_status_t mg__hmark_query(mg__mark_t *m) {
  const mg__marker_t *mk = mg__hm(m)->mk;
  if (mk == NULL) return MG_OK;
  mg_status_t st;
  const char *msg;
  if (!mg__marker_reached(mk, &st, &msg, NULL)) return MG_INPROGRESS;
  if (st < 0) return mg__error(st, "%s", msg != NULL ? msg : "");
  return MG_OK;
}

mg_status_t mg__hmark_doomed(mg__mark_t *m) {
  const mg__marker_t *mk = mg__hm(m)->mk;
  if (mk == NULL || mg__marker_reached(mk, NULL, NULL, NULL)) return MG_OK;
  /* The worker runs items in order: a sticky error set before the marker ran came from an item
   * before it, and the marker will report it. */
  return mg__marker_stream_error(mk);
}

static void mg__hmark_signal(void *mark, mg_status_t status, const char *msg) {
  mg__mark_signal(mark, status, msg);
}

mg_status_t mg__hmark_notify(mg__mark_t *m) {
  mg__marker_t *mk = mg__hm(m)->mk;
  if (mk == NULL)
    mg__mark_signal(m, MG_OK, NULL);
  else
    mg__marker_arm(mk, mg__hmark_signal, m);
  return MG_OK;
}

mg_status_t mg__hmark_wait(mg__mark_t *m, double deadline) {
  const mg__marker_t *mk = mg__hm(m)->mk;
  if (mk == NULL || mg__marker_wait(mk, deadline)) return mg__hmark_query(m);
  if (atomic_load(&m->comm->aborting))
    return mg__error(MG_ERR_ABORTED, "rank %d: the communicator was aborted", m->comm->rank);
  return mg__error(MG_ERR_TIMED_OUT, "rank %d: the stream did not reach the mark in time",
                   m->comm->rank);
}

void mg__hmark_release(mg__mark_t *m) {
  mg__marker_t *mk = mg__hm(m)->mk;
  if (mk != NULL) mg__marker_unref(mk);
}

/* When the host engine reached a mark: the worker's clock for a host stream, the record's for
 * stream NULL. Both are reached (their requests completed). */
static double mg__hmark_time(mg__mark_t *m) {
  const mg__hmark_t *hm = mg__hm(m);
  double t = hm->t_reached;
  if (hm->mk != NULL) (void)mg__marker_reached(hm->mk, NULL, NULL, &t); /* reached: t is set */
  return t;
}

mg_status_t mg__hmark_elapsed(mg__mark_t *start, mg__mark_t *end, double *seconds) {
  *seconds = mg__hmark_time(end) - mg__hmark_time(start);
  return MG_OK;
}
