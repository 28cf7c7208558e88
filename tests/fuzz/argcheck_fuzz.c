/*
 * argcheck_fuzz.c -- libFuzzer target over the argument validation of every operation.
 *
 * Each input is decoded into one call: the operation, its count (small, or huge enough to
 * overflow), dtype and op values (any int), root or peer (any int), send and recv pointers
 * (NULL, or anywhere in one arena, so that every overlap is tried), all_to_allv's arrays, a
 * stream, a custom op of this or another communicator. The call is made inside a group on a
 * one-rank communicator, so whatever validation accepts also runs (and completes) for real:
 * a valid call that reads or writes out of the arena, or any crash, is a finding. Counts are
 * bounded so that accepted calls stay inside the arena (the library cannot know the length of
 * host buffers; that bound is the caller's contract).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mgcomm.h"

#define ARENA 4096

static mg_comm_t *comm, *other;
static mg_op_t mine, theirs;
/* Pointers start in the first ARENA bytes; accepted calls reach at most 2 x 63 elements of 8
 * bytes further (all_to_allv: a displacement plus a count), inside the second half. */
static unsigned char arena[2 * ARENA];
static unsigned char peer[ARENA]; /* where a matching self send/recv reads or writes */

typedef struct {
  const uint8_t *p;
  size_t n;
} rd_t;

static uint64_t take(rd_t *r, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v = (v << 8) | (r->n ? (r->n--, *r->p++) : 0);
  return v;
}

/* NULL, or a pointer into the arena. */
static unsigned char *ptr(rd_t *r) {
  uint64_t v = take(r, 2);
  return (v & 0x8000) ? NULL : arena + (v % ARENA);
}

static size_t count(rd_t *r) {
  uint64_t v = take(r, 2);
  if (v & 0x8000) return SIZE_MAX - (v & 0xff); /* overflows, or wraps past the arena */
  return (size_t)(v % 64);                            /* 64 x 8 bytes fits in the arena */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (comm == NULL) {
    mg_config_t cfg = MG_CONFIG_INIT;
    cfg.backend = MG_BACKEND_HOST;
    cfg.timeout_s = 5;
    if (mg_comm_init_all(&cfg, 1, NULL, &comm) != MG_OK) __builtin_trap();
    if (mg_comm_init_all(&cfg, 1, NULL, &other) != MG_OK) __builtin_trap();
    float s = 2;
    mg_op_create_premul_sum(comm, &s, MG_FLOAT32, MG_SCALAR_HOST_IMMEDIATE, &mine);
    mg_op_create_premul_sum(other, &s, MG_FLOAT32, MG_SCALAR_HOST_IMMEDIATE, &theirs);
  }
  rd_t r = {data, size};
  int kind = (int)(take(&r, 1) % 11);
  size_t cnt = count(&r);
  int sel = (int)take(&r, 1);
  mg_dtype_t dt = (sel & 0x80) ? (mg_dtype_t)(int8_t)take(&r, 1) : (mg_dtype_t)(sel % 12);
  sel = (int)take(&r, 1);
  mg_op_t op = (sel & 0x80) ? (mg_op_t)(int8_t)take(&r, 1)
               : (sel & 0x40) ? ((sel & 1) ? mine : theirs) : (mg_op_t)(sel % 5);
  int root = (int8_t)take(&r, 1) % 3;
  unsigned char *s = ptr(&r), *d = ptr(&r);
  mg_stream_t stream = take(&r, 1) == 0xff ? (mg_stream_t)arena : NULL;
  size_t v[4];
  for (int i = 0; i < 4; i++) v[i] = count(&r);
  const size_t *vp[4];
  for (int i = 0; i < 4; i++) vp[i] = take(&r, 1) == 0xee ? NULL : &v[i];

  mg_group_begin();
  switch (kind) {
    case 0: mg_all_reduce(s, d, cnt, dt, op, comm, stream); break;
    case 1: mg_broadcast(s, d, cnt, dt, root, comm, stream); break;
    case 2: mg_reduce(s, d, cnt, dt, op, root, comm, stream); break;
    case 3: mg_all_gather(s, d, cnt, dt, comm, stream); break;
    case 4: mg_reduce_scatter(s, d, cnt, dt, op, comm, stream); break;
    case 5: mg_all_to_all(s, d, cnt, dt, comm, stream); break;
    case 6: mg_all_to_allv(s, vp[0], vp[1], d, vp[2], vp[3], dt, comm, stream); break;
    case 7: mg_gather(s, d, cnt, dt, root, comm, stream); break;
    case 8: mg_scatter(s, d, cnt, dt, root, comm, stream); break;
    case 9:
      if (mg_send(s, cnt, dt, root, comm, stream) == MG_OK)
        mg_recv(peer, cnt, dt, 0, comm, NULL); /* the matching receive */
      break;
    default:
      if (mg_recv(d, cnt, dt, root, comm, stream) == MG_OK)
        mg_send(peer, cnt, dt, 0, comm, NULL);
      break;
  }
  mg_status_t st = mg_group_end();
  /* A one-rank communicator never breaks: a failure here can only be a validation error. */
  if (st != MG_OK && st != MG_ERR_INVALID_ARGUMENT && st != MG_ERR_INVALID_USAGE) __builtin_trap();
  mg_comm_state_t state;
  if (mg_comm_state(comm, &state) != MG_OK || state != MG_COMM_READY) __builtin_trap();
  return 0;
}
