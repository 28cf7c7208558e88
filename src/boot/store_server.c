/*
 * store_server.c -- the store's server: one thread ("mg-store") running poll(2) over a wake pipe,
 * the listening socket and every connection. Each connection is a small state machine with
 * bounded buffers; the codec is proto.c.
 *
 * Divisions: types; the table of keys; barriers; connections (buffers, replies, closing);
 * requests; reading; the loop; start and stop.
 *
 * Connection states:
 *   HELLO  reading the first frame, which must be a HELLO with the job's token, all of it before
 *          accept time + MGCOMM_STORE_FRAME_TIMEOUT.
 *   READ   authenticated, reading the next request. A frame once begun must be complete within
 *          the frame timeout; an idle connection (no partial frame) may stay as long as it likes.
 *   WAIT   a GET or a BARRIER is parked until its key appears, its barrier fills, or its wait_ms
 *          ends. The client sends nothing meanwhile (one request in flight per connection): data
 *          is a protocol violation, end of file a departure (a barrier stops counting it).
 *   WRITE  sending a reply, which must drain within the frame timeout (a client that does not
 *          read its replies is dropped); then READ, or closed after a refused HELLO.
 * Malformed, oversized, unauthenticated or late input closes that connection only; the loop
 * goes on serving the others.
 *
 * Memory is bounded: a connection holds at most one frame in and one reply out (each at most
 * mg__proto_body_max of its opcode; an unauthenticated one at most a HELLO), connections are at
 * most MG__STORE_MAX_CONNS, and keys plus values at most MG__STORE_MAX_BYTES.
 *
 * Only the server thread touches the table, the barriers and the connections, so they need no
 * lock. Start and stop reach the thread through the stop flag and the wake pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot/net.h"
#include "boot/proto.h"
#include "boot/store.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "base/params.h"

/* ---- types -------------------------------------------------------------------------------- */

typedef struct mg__entry {
  struct mg__entry *next; /* bucket chain */
  uint64_t hash;
  uint32_t klen, vlen;
  uint8_t *val;           /* vlen bytes, owned; NULL when vlen is 0 */
  uint8_t key[];          /* klen bytes */
} mg__entry_t;

typedef struct mg__barrier {
  struct mg__barrier *next;
  uint32_t nparties;
  uint32_t arrived;       /* connections waiting in it now */
  uint32_t nlen;
  uint8_t name[];
} mg__barrier_t;

enum { MG__C_HELLO, MG__C_READ, MG__C_WAIT, MG__C_WRITE, MG__C_DEAD };

#define MG__IN_SMALL 4096 /* input buffer kept between frames; larger ones are given back */

typedef struct mg__conn {
  int fd;
  int state;               /* MG__C_* */
  char peer[64];           /* "127.0.0.1:51234", for logs */
  double deadline;         /* the state's deadline (mg__now()); 0 = none */
  uint8_t *in;             /* the frame being read: header, then body */
  size_t in_cap, in_have, in_want;
  int hdr_done;            /* the header of the frame in `in` was validated */
  uint8_t op;              /* its opcode */
  uint8_t *out;            /* a reply being written */
  size_t out_cap, out_len, out_off;
  int close_after_write;   /* refused HELLO: close once the refusal is out */
  uint8_t wait_op;         /* WAIT: MG__OP_GET or MG__OP_BARRIER */
  mg__bytes_t wait_key;    /* WAIT: points into `in`, which is not read while waiting */
  mg__barrier_t *barrier;  /* WAIT on a barrier */
} mg__conn_t;

struct mg__store_server {
  pthread_t thread;
  int listen_fd;
  int wake[2];             /* pipe: stop writes a byte to wake[1] */
  atomic_int stop;
  uint8_t token[MG_STORE_TOKEN_MAX];
  size_t token_len;
  double frame_timeout;    /* seconds, MGCOMM_STORE_FRAME_TIMEOUT */
  char name[MG__NET_HOST_MAX + 16]; /* host:port, for logs */
  /* Everything below is the server thread's alone. */
  mg__entry_t **buckets;   /* nbuckets, a power of two */
  size_t nbuckets, nentries;
  size_t bytes;            /* accounted size of keys, values and entries */
  mg__barrier_t *barriers;
  mg__conn_t **conns;
  size_t nconns, conns_cap;
  struct pollfd *pfds;
  size_t pfds_cap;
  double accept_pause_until; /* after EMFILE: do not poll the listening socket until then */
  int full_warned;
};

/* ---- the table of keys -------------------------------------------------------------------- */

static uint64_t mg__hash(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static size_t mg__entry_cost(uint32_t klen, uint32_t vlen) {
  return sizeof(mg__entry_t) + klen + vlen;
}

static mg__entry_t **mg__find(mg__store_server_t *s, mg__bytes_t key, uint64_t h) {
  mg__entry_t **pp = &s->buckets[h & (s->nbuckets - 1)];
  for (; *pp != NULL; pp = &(*pp)->next)
    if ((*pp)->hash == h && (*pp)->klen == key.len && memcmp((*pp)->key, key.p, key.len) == 0)
      return pp;
  return pp;
}

static mg__entry_t *mg__lookup(mg__store_server_t *s, mg__bytes_t key) {
  return *mg__find(s, key, mg__hash(key.p, key.len));
}

/* Doubles the bucket array when the table is loaded; failing to grow only makes chains longer. */
static void mg__maybe_grow(mg__store_server_t *s) {
  if (s->nentries < s->nbuckets) return;
  size_t n = s->nbuckets * 2;
  mg__entry_t **nb = calloc(n, sizeof *nb);
  if (nb == NULL) return;
  for (size_t i = 0; i < s->nbuckets; i++) {
    for (mg__entry_t *e = s->buckets[i], *next; e != NULL; e = next) {
      next = e->next;
      e->next = nb[e->hash & (n - 1)];
      nb[e->hash & (n - 1)] = e;
    }
  }
  free(s->buckets);
  s->buckets = nb;
  s->nbuckets = n;
}

/* Sets key to value. MG__WIRE_OK, or MG__WIRE_FULL (byte limit, or out of memory). */
static mg__wire_t mg__put(mg__store_server_t *s, mg__bytes_t key, mg__bytes_t value) {
  uint64_t h = mg__hash(key.p, key.len);
  mg__entry_t **pp = mg__find(s, key, h);
  mg__entry_t *e = *pp;
  size_t old = e ? mg__entry_cost(e->klen, e->vlen) : 0;
  size_t cost = mg__entry_cost(key.len, value.len);
  if (s->bytes - old + cost > MG__STORE_MAX_BYTES) return MG__WIRE_FULL;
  uint8_t *val = NULL;
  if (value.len > 0) {
    val = malloc(value.len);
    if (val == NULL) return MG__WIRE_FULL;
    memcpy(val, value.p, value.len);
  }
  if (e == NULL) {
    e = malloc(sizeof *e + key.len);
    if (e == NULL) {
      free(val);
      return MG__WIRE_FULL;
    }
    e->next = NULL;
    e->hash = h;
    e->klen = key.len;
    memcpy(e->key, key.p, key.len);
    e->val = NULL;
    e->vlen = 0;
    *pp = e;
    s->nentries++;
  }
  free(e->val);
  e->val = val;
  e->vlen = value.len;
  s->bytes = s->bytes - old + cost;
  mg__maybe_grow(s);
  return MG__WIRE_OK;
}

static int mg__remove(mg__store_server_t *s, mg__bytes_t key) {
  mg__entry_t **pp = mg__find(s, key, mg__hash(key.p, key.len));
  mg__entry_t *e = *pp;
  if (e == NULL) return 0;
  *pp = e->next;
  s->bytes -= mg__entry_cost(e->klen, e->vlen);
  s->nentries--;
  free(e->val);
  free(e);
  return 1;
}

/* ---- barriers ----------------------------------------------------------------------------- */

static mg__barrier_t *mg__barrier_find(mg__store_server_t *s, mg__bytes_t name) {
  for (mg__barrier_t *b = s->barriers; b != NULL; b = b->next)
    if (b->nlen == name.len && memcmp(b->name, name.p, name.len) == 0) return b;
  return NULL;
}

static void mg__barrier_free(mg__store_server_t *s, mg__barrier_t *b) {
  for (mg__barrier_t **pp = &s->barriers; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == b) {
      *pp = b->next;
      free(b);
      return;
    }
  }
  MG_ASSERT(0 && "barrier not in the list");
}

/* c stops counting in its barrier (timeout or departure). */
static void mg__barrier_leave(mg__store_server_t *s, mg__conn_t *c) {
  mg__barrier_t *b = c->barrier;
  c->barrier = NULL;
  MG_ASSERT(b != NULL && b->arrived > 0);
  if (--b->arrived == 0) mg__barrier_free(s, b);
}

/* ---- connections -------------------------------------------------------------------------- */

static void mg__conn_close(mg__store_server_t *s, mg__conn_t *c, const char *why) {
  if (c->state == MG__C_DEAD) return;
  if (why != NULL)
    MG_INFO(MG_SUBSYS_BOOT, "store %s: closing the connection from %s: %s", s->name, c->peer,
            why);
  if (c->state == MG__C_WAIT && c->barrier != NULL) mg__barrier_leave(s, c);
  close(c->fd); /* a dropped client: nothing left to deliver, so close's result does not matter */
  c->fd = -1;
  free(c->in);
  free(c->out);
  c->in = c->out = NULL;
  c->in_cap = c->out_cap = 0;
  c->state = MG__C_DEAD;
}

/* Back to reading the next request (after a reply went out). */
static void mg__conn_to_read(mg__conn_t *c) {
  c->state = MG__C_READ;
  c->deadline = 0;
  c->wait_key.p = NULL;
  c->wait_key.len = 0;
  if (c->out_cap > MG__IN_SMALL) {
    free(c->out);
    c->out = NULL;
    c->out_cap = 0;
  }
}

/* Sends what it can of the pending reply. */
static void mg__conn_write(mg__store_server_t *s, mg__conn_t *c) {
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_off += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; /* POLLOUT will resume */
    mg__conn_close(s, c, "the reply cannot be sent (the client went away)");
    return;
  }
  if (c->close_after_write) {
    mg__conn_close(s, c, NULL);
    return;
  }
  mg__conn_to_read(c);
}

/* Queues a reply and starts sending it. */
static void mg__reply(mg__store_server_t *s, mg__conn_t *c, uint8_t op, mg__wire_t status,
                      const void *payload, size_t plen, int64_t number) {
  mg__reply_t r;
  memset(&r, 0, sizeof r);
  r.op = op;
  r.status = (uint8_t)status;
  r.payload.p = payload;
  r.payload.len = (uint32_t)plen;
  r.number = number;
  size_t need = mg__proto_reply_size(&r);
  MG_ASSERT(need > 0); /* the server only builds replies within the protocol's limits */
  if (need > c->out_cap) {
    uint8_t *o = malloc(need > MG__IN_SMALL ? need : MG__IN_SMALL);
    if (o == NULL) {
      mg__conn_close(s, c, "out of memory for a reply");
      return;
    }
    free(c->out);
    c->out = o;
    c->out_cap = need > MG__IN_SMALL ? need : MG__IN_SMALL;
  }
  c->out_len = mg__proto_encode_reply(&r, c->out);
  c->out_off = 0;
  c->state = MG__C_WRITE;
  c->deadline = mg__now() + s->frame_timeout;
  mg__conn_write(s, c);
}

/* An error reply with a formatted message (truncated to the protocol's limit). */
static void mg__reply_err(mg__store_server_t *s, mg__conn_t *c, uint8_t op, mg__wire_t status,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void mg__reply_err(mg__store_server_t *s, mg__conn_t *c, uint8_t op, mg__wire_t status,
                          const char *fmt, ...) {
  char msg[MG__PROTO_MSG_MAX + 1];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t len = n < 0 ? 0 : (size_t)n > MG__PROTO_MSG_MAX ? MG__PROTO_MSG_MAX : (size_t)n;
  mg__reply(s, c, op, status, msg, len, 0);
}

/* A key changed: the GETs waiting for it get its value. */
static void mg__wake_key(mg__store_server_t *s, mg__bytes_t key) {
  mg__entry_t *e = NULL;
  for (size_t i = 0; i < s->nconns; i++) {
    mg__conn_t *w = s->conns[i];
    if (w->state != MG__C_WAIT || w->wait_op != MG__OP_GET || w->wait_key.len != key.len ||
        memcmp(w->wait_key.p, key.p, key.len) != 0)
      continue;
    if (e == NULL) e = mg__lookup(s, key);
    MG_ASSERT(e != NULL); /* called right after the key was written */
    mg__reply(s, w, MG__OP_GET, MG__WIRE_OK, e->val, e->vlen, 0);
  }
}

/* ---- requests ----------------------------------------------------------------------------- */

static int mg__token_ok(const mg__store_server_t *s, mg__bytes_t t) {
  /* Constant time in the token's content: every byte up to the maximum is compared. */
  unsigned diff = (unsigned)(t.len ^ s->token_len);
  for (size_t i = 0; i < MG_STORE_TOKEN_MAX; i++) {
    uint8_t a = i < t.len ? t.p[i] : 0, b = i < s->token_len ? s->token[i] : 0;
    diff |= (unsigned)(a ^ b);
  }
  return diff == 0;
}

static void mg__wait(mg__store_server_t *s, mg__conn_t *c, uint8_t op, mg__bytes_t key,
                     uint32_t wait_ms) {
  c->state = MG__C_WAIT;
  c->wait_op = op;
  c->wait_key = key;
  c->deadline = mg__now() + wait_ms / 1000.0;
}

static void mg__request(mg__store_server_t *s, mg__conn_t *c, const mg__req_t *q) {
  MG_TRACE(MG_SUBSYS_BOOT, "store %s: %s: opcode %u, key of %u bytes", s->name, c->peer, q->op,
           q->key.len);
  switch (q->op) {
    case MG__OP_HELLO:
      if (!mg__token_ok(s, q->key)) {
        MG_INFO(MG_SUBSYS_BOOT, "store %s: %s presented a wrong job token", s->name, c->peer);
        c->close_after_write = 1;
        mg__reply_err(s, c, q->op, MG__WIRE_AUTH, "wrong job token");
        return;
      }
      mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, 0);
      return;
    case MG__OP_SET: {
      mg__wire_t w = mg__put(s, q->key, q->value);
      if (w != MG__WIRE_OK) {
        if (!s->full_warned++)
          MG_WARN("store %s: full (%u MiB of keys and values); refusing sets", s->name,
                  MG__STORE_MAX_BYTES >> 20);
        mg__reply_err(s, c, q->op, w, "the store is full (%u MiB)", MG__STORE_MAX_BYTES >> 20);
        return;
      }
      mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, 0);
      mg__wake_key(s, q->key);
      return;
    }
    case MG__OP_GET: {
      mg__entry_t *e = mg__lookup(s, q->key);
      if (e != NULL)
        mg__reply(s, c, q->op, MG__WIRE_OK, e->val, e->vlen, 0);
      else if (q->wait_ms == 0)
        mg__reply_err(s, c, q->op, MG__WIRE_NOT_FOUND, "no such key");
      else
        mg__wait(s, c, q->op, q->key, q->wait_ms);
      return;
    }
    case MG__OP_CHECK:
      mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, mg__lookup(s, q->key) != NULL);
      return;
    case MG__OP_ADD: {
      mg__entry_t *e = mg__lookup(s, q->key);
      int64_t cur = 0;
      if (e != NULL && mg__proto_parse_i64(e->val, e->vlen, &cur) != 0) {
        mg__reply_err(s, c, q->op, MG__WIRE_BAD_REQUEST, "the value is not a decimal int64");
        return;
      }
      if ((q->delta > 0 && cur > INT64_MAX - q->delta) ||
          (q->delta < 0 && cur < INT64_MIN - q->delta)) {
        mg__reply_err(s, c, q->op, MG__WIRE_BAD_REQUEST, "%lld + %lld overflows int64",
                      (long long)cur, (long long)q->delta);
        return;
      }
      char text[24];
      int n = snprintf(text, sizeof text, "%lld", (long long)(cur + q->delta));
      mg__bytes_t v = {(const uint8_t *)text, (uint32_t)n};
      mg__wire_t w = mg__put(s, q->key, v);
      if (w != MG__WIRE_OK) {
        mg__reply_err(s, c, q->op, w, "the store is full");
        return;
      }
      mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, cur + q->delta);
      mg__wake_key(s, q->key);
      return;
    }
    case MG__OP_CAS: {
      mg__entry_t *e = mg__lookup(s, q->key);
      int match = q->expect_present
                      ? e != NULL && e->vlen == q->expected.len &&
                            (e->vlen == 0 || memcmp(e->val, q->expected.p, e->vlen) == 0)
                      : e == NULL;
      if (!match) {
        mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, 0);
        return;
      }
      mg__wire_t w = mg__put(s, q->key, q->value);
      if (w != MG__WIRE_OK) {
        mg__reply_err(s, c, q->op, w, "the store is full");
        return;
      }
      mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, 1);
      mg__wake_key(s, q->key);
      return;
    }
    case MG__OP_DELETE:
      mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, mg__remove(s, q->key));
      return;
    case MG__OP_BARRIER: {
      mg__barrier_t *b = mg__barrier_find(s, q->key);
      if (b != NULL && b->nparties != q->nparties) {
        mg__reply_err(s, c, q->op, MG__WIRE_BAD_REQUEST,
                      "barrier '%.*s' has %u parties; this call says %u",
                      (int)(q->key.len > 64 ? 64 : q->key.len), (const char *)q->key.p,
                      b->nparties, q->nparties);
        return;
      }
      if (b == NULL) {
        b = malloc(sizeof *b + q->key.len);
        if (b == NULL) {
          mg__reply_err(s, c, q->op, MG__WIRE_FULL, "out of memory for a barrier");
          return;
        }
        b->nparties = q->nparties;
        b->arrived = 0;
        b->nlen = q->key.len;
        memcpy(b->name, q->key.p, q->key.len);
        b->next = s->barriers;
        s->barriers = b;
      }
      if (b->arrived + 1 == b->nparties) {
        /* The last party: release everybody, and the name is free for its next use. */
        for (size_t i = 0; i < s->nconns; i++) {
          mg__conn_t *w = s->conns[i];
          if (w->state == MG__C_WAIT && w->barrier == b) {
            w->barrier = NULL;
            mg__reply(s, w, q->op, MG__WIRE_OK, NULL, 0, 0);
          }
        }
        mg__barrier_free(s, b);
        mg__reply(s, c, q->op, MG__WIRE_OK, NULL, 0, 0);
        return;
      }
      if (q->wait_ms == 0) {
        uint32_t arrived = b->arrived;
        if (arrived == 0) mg__barrier_free(s, b);
        mg__reply_err(s, c, q->op, MG__WIRE_TIMED_OUT, "%u of %u parties had arrived",
                      arrived + 1, q->nparties);
        return;
      }
      b->arrived++;
      c->barrier = b;
      mg__wait(s, c, q->op, q->key, q->wait_ms);
      return;
    }
  }
  MG_ASSERT(0 && "decoded request with an unknown opcode");
}

/* A waiting request reached its wait_ms. */
static void mg__wait_expired(mg__store_server_t *s, mg__conn_t *c) {
  if (c->wait_op == MG__OP_BARRIER) {
    uint32_t arrived = c->barrier->arrived, n = c->barrier->nparties;
    mg__barrier_leave(s, c);
    mg__reply_err(s, c, MG__OP_BARRIER, MG__WIRE_TIMED_OUT, "%u of %u parties had arrived",
                  arrived, n);
  } else {
    mg__reply_err(s, c, MG__OP_GET, MG__WIRE_TIMED_OUT, "the key did not appear in time");
  }
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Reads into the frame buffer; handles a frame once it is complete. */
static void mg__conn_read(mg__store_server_t *s, mg__conn_t *c) {
  if (c->in_have < c->in_want) {
    ssize_t n = recv(c->fd, c->in + c->in_have, c->in_want - c->in_have, 0);
    if (n == 0) {
      mg__conn_close(s, c, c->in_have > 0 ? "end of file in the middle of a frame" : NULL);
      return;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      mg__conn_close(s, c, "receive error");
      return;
    }
    if (c->in_have == 0 && c->state == MG__C_READ) c->deadline = mg__now() + s->frame_timeout;
    c->in_have += (size_t)n;
    if (c->in_have < c->in_want) return;
  }
  if (!c->hdr_done) {
    uint32_t body_len;
    uint8_t version;
    const char *why;
    if (mg__proto_header(c->in, 0, &c->op, &body_len, &version, &why) != MG__PROTO_OK) {
      if (memcmp(c->in, "mgst", 4) == 0 && version != MG__PROTO_VERSION) {
        /* Say which version we speak, so the client can report it, then close. */
        c->close_after_write = 1;
        mg__reply_err(s, c, MG__OP_HELLO, MG__WIRE_VERSION,
                      "this store speaks protocol version %d, the client %u", MG__PROTO_VERSION,
                      version);
        return;
      }
      mg__conn_close(s, c, why);
      return;
    }
    if (c->state == MG__C_HELLO && c->op != MG__OP_HELLO) {
      mg__conn_close(s, c, "the first message is not a HELLO (unauthenticated)");
      return;
    }
    if (c->state == MG__C_READ && c->op == MG__OP_HELLO) {
      mg__conn_close(s, c, "a second HELLO");
      return;
    }
    size_t want = MG__PROTO_HEADER_BYTES + body_len;
    if (want > c->in_cap) {
      uint8_t *in = realloc(c->in, want);
      if (in == NULL) {
        mg__conn_close(s, c, "out of memory for a frame");
        return;
      }
      c->in = in;
      c->in_cap = want;
    }
    c->hdr_done = 1;
    c->in_want = want;
    if (c->in_have < c->in_want) return;
  }
  mg__req_t q;
  const char *why;
  if (mg__proto_decode_request(c->op, c->in + MG__PROTO_HEADER_BYTES,
                               (uint32_t)(c->in_want - MG__PROTO_HEADER_BYTES), &q,
                               &why) != MG__PROTO_OK) {
    mg__conn_close(s, c, why);
    return;
  }
  c->hdr_done = 0;
  c->in_have = 0;
  c->in_want = MG__PROTO_HEADER_BYTES;
  mg__request(s, c, &q); /* q's fields point into c->in until the reply is built */
  if (c->state != MG__C_WAIT && c->state != MG__C_DEAD && c->in_cap > MG__IN_SMALL) {
    uint8_t *in = malloc(MG__IN_SMALL);
    if (in != NULL) { /* keeping the large buffer instead is harmless */
      free(c->in);
      c->in = in;
      c->in_cap = MG__IN_SMALL;
    }
  }
}

/* Input while a request waits: end of file is a departure, data a protocol violation. */
static void mg__conn_read_waiting(mg__store_server_t *s, mg__conn_t *c) {
  uint8_t b;
  ssize_t n = recv(c->fd, &b, 1, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  mg__conn_close(s, c, n > 0 ? "data while a request was waiting (one request in flight)" : NULL);
}

/* ---- the loop ----------------------------------------------------------------------------- */

static void mg__accept(mg__store_server_t *s) {
  for (;;) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      /* Out of descriptors or memory: pause accepting instead of spinning on the socket. */
      MG_WARN("store %s: accept: %s; pausing new connections for 100 ms", s->name,
              strerror(errno));
      s->accept_pause_until = mg__now() + 0.1;
      return;
    }
    if (s->nconns >= MG__STORE_MAX_CONNS) {
      MG_WARN("store %s: %d connections already; closing a new one", s->name,
              MG__STORE_MAX_CONNS);
      close(fd); /* refused: the client sees the connection end */
      continue;
    }
    mg__conn_t *c = calloc(1, sizeof *c);
    uint8_t *in = malloc(MG__IN_SMALL);
    if (s->nconns == s->conns_cap) {
      size_t ncap = s->conns_cap ? s->conns_cap * 2 : 16;
      mg__conn_t **nc = realloc(s->conns, ncap * sizeof *nc);
      if (nc != NULL) {
        s->conns = nc;
        s->conns_cap = ncap;
      }
    }
    if (c == NULL || in == NULL || s->nconns == s->conns_cap) {
      MG_WARN("store %s: out of memory for a connection; closing it", s->name);
      free(c);
      free(in);
      close(fd); /* refused for want of memory */
      continue;
    }
    int one = 1;
    /* Without TCP_NODELAY replies are only slower (Nagle), never wrong. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss.ss_family == AF_INET) {
      struct sockaddr_in *a = (struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof host); /* fits by construction */
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host); /* fits by construction */
      port = ntohs(a->sin6_port);
    }
    mg__net_format(host, port, c->peer, sizeof c->peer);
    c->fd = fd;
    c->state = MG__C_HELLO;
    c->in = in;
    c->in_cap = MG__IN_SMALL;
    c->in_want = MG__PROTO_HEADER_BYTES;
    c->deadline = mg__now() + s->frame_timeout;
    s->conns[s->nconns++] = c;
    MG_TRACE(MG_SUBSYS_BOOT, "store %s: connection from %s", s->name, c->peer);
  }
}

static void mg__expire(mg__store_server_t *s, double now) {
  for (size_t i = 0; i < s->nconns; i++) {
    mg__conn_t *c = s->conns[i];
    if (c->state == MG__C_DEAD || c->deadline == 0 || now < c->deadline) continue;
    switch (c->state) {
      case MG__C_HELLO: mg__conn_close(s, c, "no HELLO in time"); break;
      case MG__C_READ: mg__conn_close(s, c, "a frame was not completed in time"); break;
      case MG__C_WRITE: mg__conn_close(s, c, "the client did not read its reply in time"); break;
      case MG__C_WAIT: mg__wait_expired(s, c); break;
    }
  }
}

static void mg__compact(mg__store_server_t *s) {
  size_t j = 0;
  for (size_t i = 0; i < s->nconns; i++) {
    if (s->conns[i]->state == MG__C_DEAD)
      free(s->conns[i]);
    else
      s->conns[j++] = s->conns[i];
  }
  s->nconns = j;
}

/* Milliseconds until the earliest deadline, -1 when there is none. */
static int mg__poll_timeout(const mg__store_server_t *s, double now) {
  double first = 0;
  for (size_t i = 0; i < s->nconns; i++) {
    double d = s->conns[i]->deadline;
    if (d != 0 && (first == 0 || d < first)) first = d;
  }
  if (s->accept_pause_until > now && (first == 0 || s->accept_pause_until < first))
    first = s->accept_pause_until;
  if (first == 0) return -1;
  double ms = ceil((first - now) * 1000.0);
  return ms < 0 ? 0 : ms > 1e9 ? 1000000000 : (int)ms;
}

static void *mg__server_main(void *arg) {
  mg__store_server_t *s = arg;
  /* The name only helps debuggers; failing to set it changes nothing else. */
  (void)pthread_setname_np(pthread_self(), "mg-store");
  while (!atomic_load(&s->stop)) {
    double now = mg__now();
    size_t polled = s->nconns;
    if (polled + 2 > s->pfds_cap) {
      size_t ncap = (polled + 2) * 2;
      struct pollfd *p = realloc(s->pfds, ncap * sizeof *p);
      if (p == NULL) {
        MG_WARN("store %s: out of memory for the poll set; retrying", s->name);
        usleep(10000); /* interrupted sleep only shortens the retry */
        continue;
      }
      s->pfds = p;
      s->pfds_cap = ncap;
    }
    s->pfds[0] = (struct pollfd){s->wake[0], POLLIN, 0};
    s->pfds[1] = (struct pollfd){now < s->accept_pause_until ? -1 : s->listen_fd, POLLIN, 0};
    for (size_t i = 0; i < polled; i++) {
      mg__conn_t *c = s->conns[i];
      s->pfds[i + 2] = (struct pollfd){c->fd, c->state == MG__C_WRITE ? POLLOUT : POLLIN, 0};
    }
    int n = poll(s->pfds, polled + 2, mg__poll_timeout(s, now));
    if (n < 0) {
      if (errno != EINTR) {
        MG_WARN("store %s: poll: %s", s->name, strerror(errno));
        usleep(10000); /* ENOMEM is the only plausible cause; wait and retry */
      }
      continue;
    }
    if (s->pfds[0].revents) break; /* stop */
    for (size_t i = 0; i < polled; i++) {
      mg__conn_t *c = s->conns[i];
      short ev = s->pfds[i + 2].revents;
      if (ev == 0 || c->state == MG__C_DEAD) continue;
      switch (c->state) {
        case MG__C_HELLO:
        case MG__C_READ:
          if (ev & (POLLIN | POLLHUP | POLLERR)) mg__conn_read(s, c);
          break;
        case MG__C_WAIT:
          if (ev & (POLLIN | POLLHUP | POLLERR)) mg__conn_read_waiting(s, c);
          break;
        case MG__C_WRITE:
          /* The state may have become WRITE in this round (woken); act on POLLOUT only. */
          if (ev & POLLERR)
            mg__conn_close(s, c, "socket error");
          else if (s->pfds[i + 2].events == POLLOUT && (ev & (POLLOUT | POLLHUP)))
            mg__conn_write(s, c);
          break;
      }
    }
    if (s->pfds[1].revents & POLLIN) mg__accept(s);
    mg__expire(s, mg__now());
    mg__compact(s);
  }
  for (size_t i = 0; i < s->nconns; i++) {
    mg__conn_close(s, s->conns[i], NULL);
    free(s->conns[i]);
  }
  s->nconns = 0;
  return NULL;
}

/* ---- start and stop ----------------------------------------------------------------------- */

static void mg__server_free(mg__store_server_t *s) {
  if (s->listen_fd >= 0) close(s->listen_fd); /* listening only: nothing to lose */
  if (s->wake[0] >= 0) close(s->wake[0]);      /* our own pipe */
  if (s->wake[1] >= 0) close(s->wake[1]);      /* our own pipe */
  for (size_t i = 0; i < s->nbuckets; i++) {
    for (mg__entry_t *e = s->buckets[i], *next; e != NULL; e = next) {
      next = e->next;
      free(e->val);
      free(e);
    }
  }
  while (s->barriers != NULL) {
    mg__barrier_t *b = s->barriers;
    s->barriers = b->next;
    free(b);
  }
  free(s->buckets);
  free(s->conns);
  free(s->pfds);
  free(s);
}

mg_status_t mg__store_server_start(const char *host, int port, const char *token,
                                   mg__store_server_t **out, int *bound_port) {
  mg_status_t st = MG_OK;
  mg__store_server_t *s = calloc(1, sizeof *s);
  if (s == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "store: out of memory for the server");
  s->listen_fd = s->wake[0] = s->wake[1] = -1;
  s->token_len = strlen(token);
  MG_ASSERT(s->token_len >= 1 && s->token_len <= MG_STORE_TOKEN_MAX); /* mg__store_token checked */
  memcpy(s->token, token, s->token_len);
  s->frame_timeout = mg__param_double(MG_PARAM_STORE_FRAME_TIMEOUT);
  s->nbuckets = 64;
  s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
  if (s->buckets == NULL) {
    st = mg__error(MG_ERR_OUT_OF_MEMORY, "store: out of memory for the server");
    goto fail;
  }
  MG_SYS_CHECK_GOTO(pipe2(s->wake, O_CLOEXEC | O_NONBLOCK), st, fail, "store: pipe2");
  MG_CHECK_GOTO(mg__net_listen(host, port, &s->listen_fd, bound_port), st, fail);
  mg__net_format(host, *bound_port, s->name, sizeof s->name);
  atomic_init(&s->stop, 0);
  int rc = pthread_create(&s->thread, NULL, mg__server_main, s);
  if (rc != 0) {
    st = mg__error_errno(MG_ERR_SYSTEM, rc, "store %s: cannot start the server thread", s->name);
    goto fail;
  }
  MG_INFO(MG_SUBSYS_BOOT, "store: serving on %s", s->name);
  *out = s;
  return MG_OK;
fail:
  mg__server_free(s);
  return st;
}

void mg__store_server_stop(mg__store_server_t *s) {
  if (s == NULL) return;
  atomic_store(&s->stop, 1);
  char b = 1;
  /* The pipe is empty or already holds a wake-up; either way the thread wakes. */
  ssize_t w;
  do {
    w = write(s->wake[1], &b, 1);
  } while (w < 0 && errno == EINTR);
  int rc = pthread_join(s->thread, NULL);
  MG_ASSERT(rc == 0); /* joined exactly once, by the owner */
  MG_INFO(MG_SUBSYS_BOOT, "store %s: stopped", s->name);
  mg__server_free(s);
}
