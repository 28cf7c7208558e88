/*
 * store_client.c -- the public store API (mgcomm.h, "Rendezvous"): handles, connecting with
 * retry, one request/reply exchange per call, and the mapping of wire statuses to mg_status_t.
 *
 * Divisions: the handle; checks; connecting; exchanges; the calls; close.
 *
 * Lock order: mg_store.lock, then mg_store.fd_lock (a leaf, held only while the socket is
 * replaced or shut down). A call holds lock for its whole exchange, so one request is in flight
 * per connection; close shuts the socket down under fd_lock first, so that a call blocked under
 * lock returns, and then takes lock to wait it out.
 *
 * Deadlines: a call's deadline bounds everything it does. A GET or BARRIER tells the server how
 * long to wait (the time left), and the client allows the reply MG__GRACE_S more to arrive;
 * past that the server is presumed hung, and the connection, whose state is now unknown, is
 * dropped (the next call reconnects once, and a refusal then means the server is gone).
 */
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "boot/net.h"
#include "boot/proto.h"
#include "boot/store.h"
#include "base/clock.h"
#include "base/error.h"
#include "core/handle.h"
#include "base/log.h"
#include "base/params.h"

#define MG__STORE_MAGIC 0x6d677374u /* "mgst" */
#define MG__GRACE_S 0.1             /* extra time a waiting call gives the server's own answer */
#define MG__ATTEMPT_S 2.0           /* longest single connection attempt before the next try */

struct mg_store {
  uint32_t magic;                       /* MG__STORE_MAGIC while open */
  pthread_mutex_t lock;                 /* serialises calls (one request in flight) */
  pthread_mutex_t fd_lock;              /* guards fd against close's shutdown (leaf) */
  int fd;                               /* the connection; -1 once lost (reconnect on next call) */
  atomic_int closing;                   /* set by mg_store_close before it shuts fd down */
  char host[MG__NET_HOST_MAX];
  int port;
  char address[MG__NET_HOST_MAX + 16];  /* host:port, for messages and mg_store_address */
  char token[MG_STORE_TOKEN_MAX + 1];
  double timeout_s;                     /* the store's timeout, seconds (resolved) */
  mg__store_server_t *server;           /* the handle of mg_store_serve: its server, owned */
  int last_eof;                         /* the last exchange failed because the peer closed */
  uint8_t *buf;                         /* request and reply frames, owned */
  size_t cap;
};

/* ---- checks ------------------------------------------------------------------------------- */

static mg_status_t mg__store_check(const mg_store_t *s, const char *fn) {
  if (s == NULL) return mg__error(MG_ERR_INVALID_USAGE, "%s: store is NULL", fn);
  if (!mg__handle_valid(s, MG__HANDLE_STORE) || s->magic != MG__STORE_MAGIC)
    return mg__error(MG_ERR_INVALID_USAGE,
                     "%s: store %p is not an open store (closed, or not a store)", fn,
                     (const void *)s);
  return MG_OK;
}

static mg_status_t mg__key_check(const char *key, const char *fn, const char *what) {
  if (key == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  size_t n = strnlen(key, MG_STORE_KEY_MAX + 1);
  if (n == 0 || n > MG_STORE_KEY_MAX)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s has %s bytes (want 1..%d)", fn, what,
                     n == 0 ? "0" : "more than MG_STORE_KEY_MAX", MG_STORE_KEY_MAX);
  return MG_OK;
}

static mg_status_t mg__timeout_check(double timeout_s, const char *fn) {
  if (!(timeout_s >= 0) || isinf(timeout_s))
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: timeout_s %g is not a finite number >= 0 (0 = the store's timeout)", fn,
                     timeout_s);
  return MG_OK;
}

/* The absolute deadline of a call on s. */
static mg_status_t mg__call_deadline(const mg_store_t *s, double timeout_s, const char *fn,
                                     double *deadline) {
  MG_CHECK(mg__timeout_check(timeout_s, fn));
  *deadline = mg__now() + (timeout_s > 0 ? timeout_s : s->timeout_s);
  return MG_OK;
}

mg_status_t mg__store_token(const char *token, const char *fn, const char **out) {
  if (token == NULL) token = mg__param_str(MG_PARAM_JOB_TOKEN);
  size_t n = strnlen(token, MG_STORE_TOKEN_MAX + 1);
  if (n == 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: no job token: pass one, or set MGCOMM_JOB_TOKEN to the same secret on "
                     "every process of the job (mgcomm launch does this)", fn);
  if (n > MG_STORE_TOKEN_MAX)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: the job token is longer than %d bytes", fn,
                     MG_STORE_TOKEN_MAX);
  *out = token;
  return MG_OK;
}

/* ---- connecting --------------------------------------------------------------------------- */

static void mg__set_fd(mg_store_t *s, int fd) {
  pthread_mutex_lock(&s->fd_lock);
  int old = s->fd;
  s->fd = fd;
  pthread_mutex_unlock(&s->fd_lock);
  if (old >= 0) close(old); /* a connection we give up on: nothing to flush */
}

static mg_status_t mg__ensure_buf(mg_store_t *s, size_t need, const char *fn) {
  if (need <= s->cap) return MG_OK;
  uint8_t *b = realloc(s->buf, need);
  if (b == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: out of memory for a frame", fn);
  s->buf = b;
  s->cap = need;
  return MG_OK;
}

/* One exchange on fd: sends q, reads the reply into s->buf and decodes it into *rep (whose
 * payload points into s->buf). Errors leave the connection in an unknown state. */
static mg_status_t mg__exchange(mg_store_t *s, int fd, const mg__req_t *q, mg__reply_t *rep,
                                double deadline, const char *fn) {
  size_t need = mg__proto_request_size(q);
  MG_ASSERT(need > 0); /* every argument was checked against the protocol's limits */
  MG_CHECK(mg__ensure_buf(s, need > 64 ? need : 64, fn));
  mg__proto_encode_request(q, s->buf);
  int err = 0;
  s->last_eof = 0;
  mg__io_t io = mg__net_send_all(fd, s->buf, need, deadline, &err);
  uint8_t op = 0, version = 0;
  uint32_t body = 0;
  const char *why = NULL;
  if (io == MG__IO_OK) io = mg__net_recv_all(fd, s->buf, MG__PROTO_HEADER_BYTES, deadline, &err);
  if (io == MG__IO_OK) {
    if (mg__proto_header(s->buf, 1, &op, &body, &version, &why) != MG__PROTO_OK)
      return mg__error(MG_ERR_REMOTE, "%s: the peer at %s is not an mgcomm store (%s)", fn,
                       s->address, why);
    if (op != (MG__OP_REPLY | q->op))
      return mg__error(MG_ERR_REMOTE, "%s: the store at %s answered opcode %u to opcode %u", fn,
                       s->address, op, q->op);
    MG_CHECK(mg__ensure_buf(s, MG__PROTO_HEADER_BYTES + (size_t)body, fn));
    io = mg__net_recv_all(fd, s->buf + MG__PROTO_HEADER_BYTES, body, deadline, &err);
  }
  switch (io) {
    case MG__IO_OK: break;
    case MG__IO_TIMEOUT:
      /* HELLO's key is the job token: never printed. */
      if (q->op != MG__OP_HELLO && q->key.len > 0)
        return mg__error(MG_ERR_TIMED_OUT, "%s(\"%.*s\"): the store at %s did not answer in time",
                         fn, (int)(q->key.len < 200 ? q->key.len : 200), (const char *)q->key.p,
                         s->address);
      return mg__error(MG_ERR_TIMED_OUT, "%s: the store at %s did not answer in time", fn,
                       s->address);
    case MG__IO_EOF:
      s->last_eof = 1;
      return mg__error(MG_ERR_REMOTE,
                       "%s: the store at %s closed the connection (its process exited or it "
                       "dropped this client)", fn, s->address);
    default:
      return mg__error_errno(MG_ERR_SYSTEM, err, "%s: talking to the store at %s", fn, s->address);
  }
  if (mg__proto_decode_reply(q->op, s->buf + MG__PROTO_HEADER_BYTES, body, rep, &why) !=
      MG__PROTO_OK)
    return mg__error(MG_ERR_REMOTE, "%s: malformed reply from the store at %s: %s", fn,
                     s->address, why);
  return MG_OK;
}

/* A wire status (not OK) as an mg_status_t with the server's message. */
static mg_status_t mg__wire_error(const mg_store_t *s, const mg__reply_t *r, const char *fn,
                                  const char *key) {
  int n = (int)r->payload.len;
  const char *m = (const char *)r->payload.p;
  switch (r->status) {
    case MG__WIRE_NOT_FOUND:
    case MG__WIRE_TIMED_OUT:
      return mg__error(MG_ERR_TIMED_OUT, "%s: '%s' at the store %s: %.*s", fn, key, s->address, n,
                       m);
    case MG__WIRE_BAD_REQUEST:
      return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: '%s' at the store %s: %.*s", fn, key,
                       s->address, n, m);
    case MG__WIRE_FULL:
      return mg__error(MG_ERR_OUT_OF_MEMORY, "%s: the store %s: %.*s", fn, s->address, n, m);
    case MG__WIRE_AUTH:
      return mg__error(MG_ERR_INVALID_ARGUMENT,
                       "%s: the store at %s rejected the job token (is MGCOMM_JOB_TOKEN the same "
                       "on every process?)", fn, s->address);
    case MG__WIRE_VERSION:
      return mg__error(MG_ERR_NOT_SUPPORTED, "%s: the store at %s: %.*s", fn, s->address, n, m);
  }
  return mg__error(MG_ERR_REMOTE, "%s: the store at %s sent status %u", fn, s->address, r->status);
}

/* Authenticates a fresh connection. */
static mg_status_t mg__hello(mg_store_t *s, int fd, double deadline, const char *fn) {
  mg__req_t q;
  memset(&q, 0, sizeof q);
  q.op = MG__OP_HELLO;
  q.key.p = (const uint8_t *)s->token;
  q.key.len = (uint32_t)strlen(s->token);
  mg__reply_t r;
  MG_CHECK(mg__exchange(s, fd, &q, &r, deadline, fn));
  if (r.status != MG__WIRE_OK) return mg__wire_error(s, &r, fn, "HELLO");
  return MG_OK;
}

static double mg__jitter(void) {
  static _Thread_local uint64_t x;
  if (x == 0) x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ mg__now_ns();
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return 0.5 + (double)(x >> 11) / 9007199254740992.0; /* [0.5, 1.5) */
}

/* Connects and authenticates. retry: keep trying until deadline while connections are refused
 * or closed before the handshake ends (a server starting, or one closing while its successor
 * starts); otherwise one refusal means the server is gone. */
static mg_status_t mg__dial(mg_store_t *s, double deadline, int retry, const char *fn) {
  double backoff = 0.01;
  int attempts = 0;
  for (;;) {
    int fd = -1, err = 0;
    double now = mg__now();
    double until = deadline < now + MG__ATTEMPT_S ? deadline : now + MG__ATTEMPT_S;
    mg__io_t io = mg__net_connect(s->host, s->port, until, &fd, &err);
    attempts++;
    if (io == MG__IO_OK) {
      /* Published before the handshake, so that mg_store_close can shut it down. */
      mg__set_fd(s, fd);
      mg_status_t st = mg__hello(s, fd, deadline, fn);
      if (st >= 0) {
        MG_INFO(MG_SUBSYS_BOOT, "%s: connected to the store at %s after %d attempt%s", fn,
                s->address, attempts, attempts == 1 ? "" : "s");
        return MG_OK;
      }
      mg__set_fd(s, -1); /* closes it: refused or failed handshake, nothing to flush */
      if (!(retry && s->last_eof)) return st;
      err = ECONNRESET; /* closed during the handshake: retried like a refusal */
      io = MG__IO_REFUSED;
    }
    if (io == MG__IO_ERROR) {
      if (err < 0)
        return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: cannot resolve the store host '%s': %s",
                         fn, s->host, gai_strerror(err));
      return mg__error_errno(MG_ERR_SYSTEM, err, "%s: cannot connect to the store at %s", fn,
                             s->address);
    }
    if (!retry)
      return mg__error_errno(MG_ERR_REMOTE, err,
                             "%s: the store at %s is gone (its process exited?)", fn, s->address);
    now = mg__now();
    if (now >= deadline)
      return mg__error_errno(MG_ERR_TIMED_OUT, io == MG__IO_TIMEOUT ? ETIMEDOUT : err,
                             "%s: no store answered at %s in %d attempts before the deadline", fn,
                             s->address, attempts);
    if (atomic_load(&s->closing))
      return mg__error(MG_ERR_REMOTE, "%s: the store handle was closed", fn);
    if (io == MG__IO_REFUSED) {
      double pause = backoff * mg__jitter();
      if (pause > deadline - now) pause = deadline - now;
      struct timespec ts = {(time_t)pause, (long)((pause - (double)(time_t)pause) * 1e9)};
      nanosleep(&ts, NULL); /* an interrupted sleep only retries sooner */
      backoff = backoff * 2 > 1.0 ? 1.0 : backoff * 2;
    }
  }
}

/* ---- exchanges ---------------------------------------------------------------------------- */

/* Sends q and gets its reply under s->lock (held by the caller). waits: q carries wait_ms, set
 * here from the time left; the server's TIMED_OUT ends the call only once the deadline passed. */
static mg_status_t mg__call(mg_store_t *s, mg__req_t *q, mg__reply_t *rep, double deadline,
                            int waits, const char *fn) {
  if (atomic_load(&s->closing))
    return mg__error(MG_ERR_REMOTE, "%s: the store handle is being closed", fn);
  if (s->fd < 0) MG_CHECK(mg__dial(s, deadline, 0, fn));
  for (;;) {
    double left = deadline - mg__now();
    if (waits) {
      double ms = floor(left * 1000.0);
      q->wait_ms = ms <= 0 ? 0 : ms >= 4e9 ? 4000000000u : (uint32_t)ms;
    }
    mg_status_t st = mg__exchange(s, s->fd, q, rep, waits ? deadline + MG__GRACE_S : deadline, fn);
    if (st < 0) {
      mg__set_fd(s, -1);
      return st;
    }
    if (waits && (rep->status == MG__WIRE_TIMED_OUT || rep->status == MG__WIRE_NOT_FOUND) &&
        deadline - mg__now() > 0.001)
      continue; /* the server's wait was shorter (clamped or rounded): wait the rest */
    return MG_OK;
  }
}

/* The prologue of every call on a key: handle, key, deadline, then the lock. */
#define MG__CALL_BEGIN(s, key, what, timeout_s, fn, deadline)  \
  MG_CHECK(mg__store_check((s), (fn)));                        \
  MG_CHECK(mg__key_check((key), (fn), (what)));                \
  MG_CHECK(mg__call_deadline((s), (timeout_s), (fn), &(deadline)))

static void mg__req_key(mg__req_t *q, uint8_t op, const char *key) {
  memset(q, 0, sizeof *q);
  q->op = op;
  q->key.p = (const uint8_t *)key;
  q->key.len = (uint32_t)strlen(key);
}

/* ---- the calls ---------------------------------------------------------------------------- */

static mg_status_t mg__store_new(const char *host, int port, const char *token, double timeout_s,
                                 mg_store_t **out) {
  mg_store_t *s = calloc(1, sizeof *s);
  if (s == NULL) return mg__error(MG_ERR_OUT_OF_MEMORY, "store: out of memory for a handle");
  s->magic = MG__STORE_MAGIC;
  pthread_mutex_init(&s->lock, NULL);
  pthread_mutex_init(&s->fd_lock, NULL);
  s->fd = -1;
  atomic_init(&s->closing, 0);
  snprintf(s->host, sizeof s->host, "%s", host);
  s->port = port;
  mg__net_format(host, port, s->address, sizeof s->address);
  snprintf(s->token, sizeof s->token, "%s", token);
  s->timeout_s = timeout_s > 0 ? timeout_s : mg__param_double(MG_PARAM_TIMEOUT);
  *out = s;
  return MG_OK;
}

static void mg__store_free(mg_store_t *s) {
  mg__set_fd(s, -1);
  mg__store_server_stop(s->server);
  s->magic = 0;
  memset(s->token, 0, sizeof s->token);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->fd_lock);
  free(s->buf);
  free(s);
}

/* Common part of serve and connect: arguments, then a handle connected (with retry) to host:port,
 * and, for serve, the server started first. */
static mg_status_t mg__store_open(const char *address, const char *token, double timeout_s,
                                  mg_store_t **out, int serve, const char *fn) {
  if (out == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  if (address == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: address is NULL", fn);
  MG_CHECK(mg__timeout_check(timeout_s, fn));
  const char *tok = NULL;
  MG_CHECK(mg__store_token(token, fn, &tok));
  char host[MG__NET_HOST_MAX];
  int port;
  MG_CHECK(mg__net_parse(address, serve, fn, host, sizeof host, &port));
  mg__store_server_t *srv = NULL;
  if (serve) MG_CHECK(mg__store_server_start(host, port, tok, &srv, &port));
  mg_store_t *s = NULL;
  mg_status_t st = mg__store_new(host, port, tok, timeout_s, &s);
  if (st < 0) {
    mg__store_server_stop(srv);
    return st;
  }
  s->server = srv;
  double deadline = mg__now() + s->timeout_s;
  MG_CHECK_GOTO(mg__dial(s, deadline, 1, fn), st, fail);
  MG_CHECK_GOTO(mg__handle_register(s, MG__HANDLE_STORE), st, fail);
  *out = s;
  return MG_OK;
fail:
  mg__store_free(s);
  return st;
}

mg_status_t mg_store_serve(const char *address, const char *token, double timeout_s,
                           mg_store_t **out) {
  return mg__store_open(address, token, timeout_s, out, 1, "mg_store_serve");
}

mg_status_t mg_store_connect(const char *address, const char *token, double timeout_s,
                             mg_store_t **out) {
  return mg__store_open(address, token, timeout_s, out, 0, "mg_store_connect");
}

mg_status_t mg_store_address(mg_store_t *s, char *buf, size_t len) {
  static const char fn[] = "mg_store_address";
  MG_CHECK(mg__store_check(s, fn));
  size_t n = strlen(s->address);
  if (buf == NULL || len <= n)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s (the address needs %zu bytes)", fn,
                     buf == NULL ? "buf is NULL" : "len is too small", n + 1);
  memcpy(buf, s->address, n + 1);
  return MG_OK;
}

mg_status_t mg_store_set(mg_store_t *s, const char *key, const void *value, size_t length,
                         double timeout_s) {
  static const char fn[] = "mg_store_set";
  double deadline;
  MG__CALL_BEGIN(s, key, "key", timeout_s, fn, deadline);
  if (value == NULL && length > 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: value is NULL with length %zu", fn, length);
  if (length > MG_STORE_VALUE_MAX)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: length %zu exceeds MG_STORE_VALUE_MAX (%d)",
                     fn, length, MG_STORE_VALUE_MAX);
  mg__req_t q;
  mg__req_key(&q, MG__OP_SET, key);
  q.value.p = value;
  q.value.len = (uint32_t)length;
  mg__reply_t r;
  pthread_mutex_lock(&s->lock);
  mg_status_t st = mg__call(s, &q, &r, deadline, 0, fn);
  if (st >= 0 && r.status != MG__WIRE_OK) st = mg__wire_error(s, &r, fn, key);
  pthread_mutex_unlock(&s->lock);
  return st;
}

mg_status_t mg_store_get(mg_store_t *s, const char *key, void *value, size_t capacity,
                         size_t *length, double timeout_s) {
  static const char fn[] = "mg_store_get";
  double deadline;
  MG__CALL_BEGIN(s, key, "key", timeout_s, fn, deadline);
  if (length == NULL) return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: length is NULL", fn);
  if (value == NULL && capacity > 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: value is NULL with capacity %zu", fn, capacity);
  mg__req_t q;
  mg__req_key(&q, MG__OP_GET, key);
  mg__reply_t r;
  pthread_mutex_lock(&s->lock);
  mg_status_t st = mg__call(s, &q, &r, deadline, 1, fn);
  if (st >= 0 && r.status != MG__WIRE_OK) {
    st = mg__wire_error(s, &r, fn, key);
  } else if (st >= 0 && r.payload.len > capacity) {
    st = mg__error(MG_ERR_INVALID_ARGUMENT, "%s: the value of '%s' has %u bytes; capacity is %zu",
                   fn, key, r.payload.len, capacity);
  } else if (st >= 0) {
    if (r.payload.len > 0) memcpy(value, r.payload.p, r.payload.len);
    *length = r.payload.len;
  }
  pthread_mutex_unlock(&s->lock);
  return st;
}

/* CHECK and DELETE: a key in, a flag out. */
static mg_status_t mg__flag_call(mg_store_t *s, uint8_t op, const char *key, int *flag,
                                 int flag_required, double timeout_s, const char *fn) {
  double deadline;
  MG__CALL_BEGIN(s, key, "key", timeout_s, fn, deadline);
  if (flag == NULL && flag_required)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: exists is NULL", fn);
  mg__req_t q;
  mg__req_key(&q, op, key);
  mg__reply_t r;
  pthread_mutex_lock(&s->lock);
  mg_status_t st = mg__call(s, &q, &r, deadline, 0, fn);
  if (st >= 0 && r.status != MG__WIRE_OK) st = mg__wire_error(s, &r, fn, key);
  if (st >= 0 && flag != NULL) *flag = (int)r.number;
  pthread_mutex_unlock(&s->lock);
  return st;
}

mg_status_t mg_store_check(mg_store_t *s, const char *key, int *exists, double timeout_s) {
  return mg__flag_call(s, MG__OP_CHECK, key, exists, 1, timeout_s, "mg_store_check");
}

mg_status_t mg_store_delete(mg_store_t *s, const char *key, int *existed, double timeout_s) {
  return mg__flag_call(s, MG__OP_DELETE, key, existed, 0, timeout_s, "mg_store_delete");
}

mg_status_t mg_store_add(mg_store_t *s, const char *key, int64_t delta, int64_t *result,
                         double timeout_s) {
  static const char fn[] = "mg_store_add";
  double deadline;
  MG__CALL_BEGIN(s, key, "key", timeout_s, fn, deadline);
  mg__req_t q;
  mg__req_key(&q, MG__OP_ADD, key);
  q.delta = delta;
  mg__reply_t r;
  pthread_mutex_lock(&s->lock);
  mg_status_t st = mg__call(s, &q, &r, deadline, 0, fn);
  if (st >= 0 && r.status != MG__WIRE_OK) st = mg__wire_error(s, &r, fn, key);
  if (st >= 0 && result != NULL) *result = r.number;
  pthread_mutex_unlock(&s->lock);
  return st;
}

mg_status_t mg_store_compare_set(mg_store_t *s, const char *key, const void *expected,
                                 size_t expected_length, const void *desired,
                                 size_t desired_length, int *swapped, double timeout_s) {
  static const char fn[] = "mg_store_compare_set";
  double deadline;
  MG__CALL_BEGIN(s, key, "key", timeout_s, fn, deadline);
  if (expected == NULL && expected_length > 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT,
                     "%s: expected is NULL (meaning: key absent) with expected_length %zu", fn,
                     expected_length);
  if (desired == NULL && desired_length > 0)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: desired is NULL with desired_length %zu", fn,
                     desired_length);
  if (expected_length > MG_STORE_VALUE_MAX || desired_length > MG_STORE_VALUE_MAX)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: %s_length exceeds MG_STORE_VALUE_MAX (%d)", fn,
                     expected_length > MG_STORE_VALUE_MAX ? "expected" : "desired",
                     MG_STORE_VALUE_MAX);
  mg__req_t q;
  mg__req_key(&q, MG__OP_CAS, key);
  q.expect_present = expected != NULL;
  q.expected.p = expected;
  q.expected.len = (uint32_t)expected_length;
  q.value.p = desired;
  q.value.len = (uint32_t)desired_length;
  mg__reply_t r;
  pthread_mutex_lock(&s->lock);
  mg_status_t st = mg__call(s, &q, &r, deadline, 0, fn);
  if (st >= 0 && r.status != MG__WIRE_OK) st = mg__wire_error(s, &r, fn, key);
  if (st >= 0 && swapped != NULL) *swapped = (int)r.number;
  pthread_mutex_unlock(&s->lock);
  return st;
}

mg_status_t mg_store_barrier(mg_store_t *s, const char *name, int nparties, double timeout_s) {
  static const char fn[] = "mg_store_barrier";
  double deadline;
  MG__CALL_BEGIN(s, name, "name", timeout_s, fn, deadline);
  if (nparties < 1)
    return mg__error(MG_ERR_INVALID_ARGUMENT, "%s: nparties %d < 1", fn, nparties);
  mg__req_t q;
  mg__req_key(&q, MG__OP_BARRIER, name);
  q.nparties = (uint32_t)nparties;
  mg__reply_t r;
  pthread_mutex_lock(&s->lock);
  mg_status_t st = mg__call(s, &q, &r, deadline, 1, fn);
  if (st >= 0 && r.status != MG__WIRE_OK) st = mg__wire_error(s, &r, fn, name);
  pthread_mutex_unlock(&s->lock);
  return st;
}

/* ---- close -------------------------------------------------------------------------------- */

mg_status_t mg_store_close(mg_store_t *s) {
  if (s == NULL) return MG_OK;
  MG_CHECK(mg__store_check(s, "mg_store_close"));
  (void)mg__handle_take(s, MG__HANDLE_STORE);
  atomic_store(&s->closing, 1);
  pthread_mutex_lock(&s->fd_lock);
  /* Wakes a call blocked on the socket; on a socket already dead it fails harmlessly. */
  if (s->fd >= 0) (void)shutdown(s->fd, SHUT_RDWR);
  pthread_mutex_unlock(&s->fd_lock);
  pthread_mutex_lock(&s->lock);
  pthread_mutex_unlock(&s->lock); /* waits out a call that passed the handle check */
  mg__store_free(s);
  return MG_OK;
}
