/*
 * evpool.c -- pools of CUDA events per device (evpool.h says who uses them and why).
 */
#include <stdlib.h>

#include "base/error.h"
#include "device/evpool.h"
#include "loader/loader.h"

/* Pooled events beyond this many per kind and device are destroyed by the next mg__ev_take. */
#define MG__EV_KEEP 1024

static pthread_mutex_t mg__evpools_lock = PTHREAD_MUTEX_INITIALIZER;
static mg__evpool_t *mg__evpools; /* one per device used, never freed */

mg_status_t mg__evpool_get(int ordinal, const char *fn, mg__evpool_t **out) {
  pthread_mutex_lock(&mg__evpools_lock);
  mg__evpool_t *p = mg__evpools;
  while (p != NULL && p->ordinal != ordinal) p = p->next;
  mg_status_t st = MG_OK;
  if (p == NULL) {
    p = calloc(1, sizeof *p);
    if (p == NULL) {
      st = mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory for the event pool of device %d",
                     fn, ordinal);
    } else {
      st = mg__device_ctx_retain(ordinal, fn, &p->dev, &p->ctx);
      if (st == MG_OK) {
        p->ordinal = ordinal;
        pthread_mutex_init(&p->lock, NULL);
        p->next = mg__evpools;
        mg__evpools = p;
      } else {
        free(p);
        p = NULL;
      }
    }
  }
  pthread_mutex_unlock(&mg__evpools_lock);
  if (st == MG_OK) *out = p;
  return st;
}

/* An event of the kind asked for, from the pool or new; p's context is current. Destroys what
 * the pool holds beyond MG__EV_KEEP of that kind. */
mg_status_t mg__ev_take(mg__evpool_t *p, int timed, mg__ev_t **out) {
  mg__ev_t *e, *surplus = NULL;
  pthread_mutex_lock(&p->lock);
  e = p->free[timed];
  if (e != NULL) {
    p->free[timed] = e->next;
    p->nfree[timed]--;
  }
  while (p->nfree[timed] > MG__EV_KEEP) {
    mg__ev_t *x = p->free[timed];
    p->free[timed] = x->next;
    p->nfree[timed]--;
    x->next = surplus;
    surplus = x;
  }
  pthread_mutex_unlock(&p->lock);
  while (surplus != NULL) {
    mg__ev_t *x = surplus;
    surplus = x->next;
    /* Fails only for an event that is not one: there is nothing left to release then. */
    (void)mg__cuda.EventDestroy(x->ev);
    free(x);
  }
  if (e != NULL) {
    *out = e;
    return MG_OK;
  }
  e = calloc(1, sizeof *e);
  if (e == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "out of memory for an event");
  mg__CUresult r = mg__cuda.EventCreate(&e->ev, timed ? MG__CU_EVENT_DEFAULT
                                                      : MG__CU_EVENT_DISABLE_TIMING);
  if (r != MG__CUDA_SUCCESS) {
    free(e);
    return mg__cu_error(r, timed ? "cuEventCreate(CU_EVENT_DEFAULT)"
                                 : "cuEventCreate(CU_EVENT_DISABLE_TIMING)");
  }
  e->pool = p;
  e->timed = timed;
  *out = e;
  return MG_OK;
}

/* Back to its pool: no CUDA call, so that a host function may do it. */
void mg__ev_put(mg__ev_t *e) {
  mg__evpool_t *p = e->pool;
  pthread_mutex_lock(&p->lock);
  e->next = p->free[e->timed];
  p->free[e->timed] = e;
  p->nfree[e->timed]++;
  pthread_mutex_unlock(&p->lock);
}

