/*
 * evpool.h -- pools of CUDA events, one per device, shared by everything in the process that
 * marks a point in a stream once per operation (the NCCL backend's marks, peer copies' requests):
 * an event is taken on an ordinary thread (evpool.c creates one when the pool is empty, and
 * destroys a surplus there) and put back without any CUDA call, so that the last reference to
 * its owner may drop on a CUDA host-function thread, where CUDA must not be called.
 *
 * A pool keeps the primary context of its device retained for the rest of the process, so that
 * pooled events stay valid when the last user of the device is gone (the CUDA runtime keeps it
 * as long). Timed events (made without CU_EVENT_DISABLE_TIMING, for elapsed times) and untimed
 * ones, which CUDA records more cheaply, are pooled apart.
 */
#ifndef MG_DEVICE_EVPOOL_H
#define MG_DEVICE_EVPOOL_H

#include <pthread.h>

#include "device/device.h"

typedef struct mg__ev {
  mg__CUevent ev;
  struct mg__evpool *pool;
  int timed;              /* made without CU_EVENT_DISABLE_TIMING */
  struct mg__ev *next;    /* in the pool's free list */
} mg__ev_t;

typedef struct mg__evpool {
  int ordinal;
  mg__CUdevice dev;
  mg__CUcontext ctx;      /* the device's primary context, retained for the process's life */
  pthread_mutex_t lock;   /* leaf, never held across a CUDA call: guards the free lists */
  mg__ev_t *free[2];      /* [timed] */
  int nfree[2];
  struct mg__evpool *next;
} mg__evpool_t;

/* The pool of device `ordinal`, made on first use. MG_OK or the error naming fn. */
mg_status_t mg__evpool_get(int ordinal, const char *fn, mg__evpool_t **out);
/* An event of the kind asked for, from p or new; p's context must be current. */
mg_status_t mg__ev_take(mg__evpool_t *p, int timed, mg__ev_t **out);
/* Back to its pool: no CUDA call (a host function may do it). */
void mg__ev_put(mg__ev_t *e);

#endif
