/*
 * world.h -- the world's state, shared by world.c (create, destroy, abort, rebuild, queries,
 * worker items) and world_ops.c (the operations, world groups, batches).
 *
 * One worker per rank (stream.c's workers, named mg-rank<N>) owns its rank's communicator: it
 * creates it (mg_comm_init_rank, with a new unique id per generation) and, on a backend with
 * streams of its own (NCCL: a non-blocking CUDA stream of the rank's device), the stream the
 * rank posts on, posts every part on them, and destroys them. Other threads only read comms[r] under the world's lock to abort it (abort is
 * for any thread) or to read its flight recorder.
 *
 * Lock order: world->lock, then a worker's mailbox lock (submission keeps one order on every
 * worker), then the watchdog's lock (aborts). The handle registry comes before world->lock (the
 * watchdog reaches a world through mg__handle_with), so the world's handle is taken out of the
 * registry before world->lock is taken to destroy it, and no registration (a new request)
 * happens under world->lock.
 */
#ifndef MG_WORLD_WORLD_H
#define MG_WORLD_WORLD_H

#include "core/comm.h"
#include "core/op.h"
#include "core/request.h"
#include "core/stream.h"

#define MG__WORLD_MAGIC 0x6d67776fu /* "mgwo" */

enum {
  MG__WORLD_READY = 0,
  MG__WORLD_ERROR = 1,      /* a part failed with a communicator-breaking error */
  MG__WORLD_ABORTED = 2,
  MG__WORLD_REBUILDING = 3,
  MG__WORLD_DEAD = 4        /* being destroyed */
};

struct mg_world {
  uint32_t magic;
  int n;
  mg_config_t config;       /* the caller's, copied (full size) */
  mg_backend_t backend;     /* resolved */
  int *devices;             /* [n]: the device of each rank (NCCL); -1 on host */
  double timeout_s;         /* deadline of every world request */
  mg_on_timeout_t on_timeout;
  mg__gen_t *gen;           /* the generation, shared with the requests */
  mg__worker_t **workers;   /* [n] */
  atomic_int inflight;      /* parts sent and not yet done: a part's mark may be signalled on a
                               foreign thread (NCCL) after its worker stopped; free waits */
  pthread_mutex_t lock;     /* the fields below */
  int state;                /* MG__WORLD_* */
  mg_status_t error;        /* why it is in MG__WORLD_ERROR */
  char errmsg[MG__ERROR_LEN];
  mg_comm_t **comms;        /* [n]: written by the rank's worker only, under lock */
  mg_stream_t *streams;     /* [n]: the stream each rank posts on, with comms[r] (NCCL: its
                               communicator's own, made by its worker; NULL on host) */
  uint64_t submitted;       /* world operations submitted, for messages */
};

/* world.c: 1 when the calling thread is one of w's workers. */
int mg__world_on_worker(const mg_world_t *w);
/* world.c: records a part's failure: a communicator-breaking one moves the world to the error
 * state (the cause wins, see mg__world_cause). */
void mg__world_part_failed(mg_world_t *w, mg_status_t st, const char *msg);
/* world.c: 1 when failure st of a part should replace have (MG_OK: none yet) as the one a batch
 * or the world reports: the first failure, except that a rank's own error replaces
 * MG_ERR_REMOTE, which only says that another rank failed and may arrive before that rank's. */
int mg__world_cause(mg_status_t have, mg_status_t st);
/* world.c: aborts every rank's communicator without blocking; w->lock is held. */
void mg__world_abort_comms(mg_world_t *w);
/* world_ops.c: the expiry of a world request (its owner ops). */
extern const mg__req_owner_ops_t mg__wbatch_ops;

#endif
