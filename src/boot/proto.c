/*
 * proto.c -- the codec of the store's wire protocol (format in proto.h).
 *
 * Divisions: byte order helpers; limits; header; a bounded reader for bodies; request decode;
 * reply decode; encoders; integer values.
 *
 * Decoding never reads outside [body, body + len) and never trusts a length before comparing it
 * with what is left: every field goes through mg__rd_*, which fail once the body is exhausted.
 */
#include <string.h>

#include "boot/proto.h"

static const uint8_t mg__magic[4] = {'m', 'g', 's', 't'};

/* ---- byte order --------------------------------------------------------------------------- */

static uint32_t mg__ld32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t mg__ld64(const uint8_t *p) {
  return (uint64_t)mg__ld32(p) | (uint64_t)mg__ld32(p + 4) << 32;
}

static uint8_t *mg__st32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
  return p + 4;
}

static uint8_t *mg__st64(uint8_t *p, uint64_t v) {
  mg__st32(p, (uint32_t)v);
  return mg__st32(p + 4, (uint32_t)(v >> 32));
}

static uint8_t *mg__stbytes(uint8_t *p, mg__bytes_t b) {
  p = mg__st32(p, b.len);
  if (b.len > 0) memcpy(p, b.p, b.len);
  return p + b.len;
}

/* ---- limits ------------------------------------------------------------------------------- */

#define MG__STR(n) (4u + (uint32_t)(n)) /* a byte string of at most n bytes */

uint32_t mg__proto_body_max(uint8_t opcode) {
  int reply = (opcode & MG__OP_REPLY) != 0;
  uint8_t op = (uint8_t)(opcode & ~MG__OP_REPLY);
  if (reply) {
    /* status, then the larger of the payload and an error message */
    switch (op) {
      case MG__OP_GET: return 1 + MG__STR(MG_STORE_VALUE_MAX);
      case MG__OP_ADD: return 1 + (8 > MG__STR(MG__PROTO_MSG_MAX) ? 8 : MG__STR(MG__PROTO_MSG_MAX));
      case MG__OP_HELLO: case MG__OP_SET: case MG__OP_CHECK: case MG__OP_CAS:
      case MG__OP_DELETE: case MG__OP_BARRIER:
        return 1 + MG__STR(MG__PROTO_MSG_MAX);
    }
    return 0;
  }
  switch (op) {
    case MG__OP_HELLO: return MG__STR(MG_STORE_TOKEN_MAX);
    case MG__OP_SET: return MG__STR(MG_STORE_KEY_MAX) + MG__STR(MG_STORE_VALUE_MAX);
    case MG__OP_GET: return MG__STR(MG_STORE_KEY_MAX) + 4;
    case MG__OP_CHECK: return MG__STR(MG_STORE_KEY_MAX);
    case MG__OP_ADD: return MG__STR(MG_STORE_KEY_MAX) + 8;
    case MG__OP_CAS: return MG__STR(MG_STORE_KEY_MAX) + 1 + 2 * MG__STR(MG_STORE_VALUE_MAX);
    case MG__OP_DELETE: return MG__STR(MG_STORE_KEY_MAX);
    case MG__OP_BARRIER: return MG__STR(MG_STORE_KEY_MAX) + 8;
  }
  return 0;
}

/* ---- header ------------------------------------------------------------------------------- */

int mg__proto_header(const uint8_t *hdr, int want_reply, uint8_t *opcode, uint32_t *body_len,
                     uint8_t *version, const char **why) {
  *version = hdr[4];
  if (memcmp(hdr, mg__magic, 4) != 0) {
    *why = "not an mgcomm store frame (bad magic)";
    return MG__PROTO_BAD;
  }
  if (hdr[4] != MG__PROTO_VERSION) {
    *why = "protocol version differs";
    return MG__PROTO_BAD;
  }
  if (hdr[6] != 0 || hdr[7] != 0) {
    *why = "reserved header bytes are not zero";
    return MG__PROTO_BAD;
  }
  uint8_t op = hdr[5];
  if (((op & MG__OP_REPLY) != 0) != (want_reply != 0)) {
    *why = want_reply ? "a request where a reply was expected"
                      : "a reply where a request was expected";
    return MG__PROTO_BAD;
  }
  uint32_t max = mg__proto_body_max(op);
  if (max == 0) {
    *why = "unknown opcode";
    return MG__PROTO_BAD;
  }
  uint32_t len = mg__ld32(hdr + 8);
  if (len > max) {
    *why = "body length exceeds the limit of its opcode";
    return MG__PROTO_BAD;
  }
  *opcode = op;
  *body_len = len;
  return MG__PROTO_OK;
}

/* ---- bounded reader ----------------------------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  uint32_t left;
  const char *why; /* first defect, NULL while none */
} mg__rd_t;

static void mg__rd_fail(mg__rd_t *r, const char *why) {
  if (r->why == NULL) r->why = why;
  r->left = 0;
}

static uint8_t mg__rd_u8(mg__rd_t *r) {
  if (r->left < 1) {
    mg__rd_fail(r, "truncated field");
    return 0;
  }
  r->left--;
  return *r->p++;
}

static uint32_t mg__rd_u32(mg__rd_t *r) {
  if (r->left < 4) {
    mg__rd_fail(r, "truncated field");
    return 0;
  }
  uint32_t v = mg__ld32(r->p);
  r->p += 4;
  r->left -= 4;
  return v;
}

static int64_t mg__rd_i64(mg__rd_t *r) {
  if (r->left < 8) {
    mg__rd_fail(r, "truncated field");
    return 0;
  }
  uint64_t v = mg__ld64(r->p);
  r->p += 8;
  r->left -= 8;
  int64_t s;
  memcpy(&s, &v, sizeof s); /* two's complement, without an implementation-defined cast */
  return s;
}

/* A byte string of min..max bytes. */
static mg__bytes_t mg__rd_bytes(mg__rd_t *r, uint32_t min, uint32_t max, const char *what) {
  mg__bytes_t b = {NULL, 0};
  uint32_t n = mg__rd_u32(r);
  if (r->why != NULL) return b;
  if (n > r->left) {
    mg__rd_fail(r, "string length runs past the end of the body");
    return b;
  }
  if (n < min || n > max) {
    mg__rd_fail(r, what);
    return b;
  }
  b.p = r->p;
  b.len = n;
  r->p += n;
  r->left -= n;
  return b;
}

static mg__bytes_t mg__rd_key(mg__rd_t *r) {
  mg__bytes_t k = mg__rd_bytes(r, 1, MG_STORE_KEY_MAX, "key length out of 1..MG_STORE_KEY_MAX");
  if (r->why == NULL && memchr(k.p, 0, k.len) != NULL) mg__rd_fail(r, "key contains a NUL byte");
  return k;
}

static int mg__rd_end(mg__rd_t *r, const char **why) {
  if (r->why == NULL && r->left != 0) r->why = "trailing bytes after the last field";
  if (r->why != NULL) {
    *why = r->why;
    return MG__PROTO_BAD;
  }
  return MG__PROTO_OK;
}

/* ---- requests ----------------------------------------------------------------------------- */

int mg__proto_decode_request(uint8_t op, const uint8_t *body, uint32_t len, mg__req_t *req,
                             const char **why) {
  mg__rd_t r = {body, len, NULL};
  memset(req, 0, sizeof *req);
  req->op = op;
  switch (op) {
    case MG__OP_HELLO:
      req->key =
          mg__rd_bytes(&r, 1, MG_STORE_TOKEN_MAX, "token length out of 1..MG_STORE_TOKEN_MAX");
      break;
    case MG__OP_SET:
      req->key = mg__rd_key(&r);
      req->value = mg__rd_bytes(&r, 0, MG_STORE_VALUE_MAX, "value longer than MG_STORE_VALUE_MAX");
      break;
    case MG__OP_GET:
      req->key = mg__rd_key(&r);
      req->wait_ms = mg__rd_u32(&r);
      break;
    case MG__OP_CHECK:
    case MG__OP_DELETE:
      req->key = mg__rd_key(&r);
      break;
    case MG__OP_ADD:
      req->key = mg__rd_key(&r);
      req->delta = mg__rd_i64(&r);
      break;
    case MG__OP_CAS:
      req->key = mg__rd_key(&r);
      req->expect_present = mg__rd_u8(&r);
      if (r.why == NULL && req->expect_present > 1) mg__rd_fail(&r, "expect_present is not 0 or 1");
      req->expected = mg__rd_bytes(&r, 0, req->expect_present ? MG_STORE_VALUE_MAX : 0,
                                   "expected value with expect_present 0, or too long");
      req->value = mg__rd_bytes(&r, 0, MG_STORE_VALUE_MAX, "value longer than MG_STORE_VALUE_MAX");
      break;
    case MG__OP_BARRIER:
      req->key = mg__rd_key(&r);
      req->nparties = mg__rd_u32(&r);
      req->wait_ms = mg__rd_u32(&r);
      if (r.why == NULL && (req->nparties < 1 || req->nparties > INT32_MAX))
        mg__rd_fail(&r, "barrier party count out of 1..INT32_MAX");
      break;
    default:
      *why = "unknown request opcode";
      return MG__PROTO_BAD;
  }
  return mg__rd_end(&r, why);
}

/* ---- replies ------------------------------------------------------------------------------ */

int mg__proto_decode_reply(uint8_t op, const uint8_t *body, uint32_t len, mg__reply_t *rep,
                           const char **why) {
  mg__rd_t r = {body, len, NULL};
  memset(rep, 0, sizeof *rep);
  if (op < MG__OP_HELLO || op >= MG__OP_COUNT) {
    *why = "unknown reply opcode";
    return MG__PROTO_BAD;
  }
  rep->op = op;
  rep->status = mg__rd_u8(&r);
  if (r.why == NULL && rep->status >= MG__WIRE_COUNT) mg__rd_fail(&r, "unknown reply status");
  if (r.why == NULL && rep->status != MG__WIRE_OK) {
    rep->payload = mg__rd_bytes(&r, 0, MG__PROTO_MSG_MAX, "error message too long");
    return mg__rd_end(&r, why);
  }
  switch (op) {
    case MG__OP_GET:
      rep->payload =
          mg__rd_bytes(&r, 0, MG_STORE_VALUE_MAX, "value longer than MG_STORE_VALUE_MAX");
      break;
    case MG__OP_ADD:
      rep->number = mg__rd_i64(&r);
      break;
    case MG__OP_CHECK:
    case MG__OP_CAS:
    case MG__OP_DELETE:
      rep->number = mg__rd_u8(&r);
      if (r.why == NULL && rep->number > 1) mg__rd_fail(&r, "flag is not 0 or 1");
      break;
    default:
      break; /* HELLO, SET, BARRIER: no payload */
  }
  return mg__rd_end(&r, why);
}

/* ---- encoders ----------------------------------------------------------------------------- */

static uint8_t *mg__header(uint8_t *out, uint8_t opcode, uint32_t body_len) {
  memcpy(out, mg__magic, 4);
  out[4] = MG__PROTO_VERSION;
  out[5] = opcode;
  out[6] = 0;
  out[7] = 0;
  return mg__st32(out + 8, body_len);
}

static int mg__key_ok(mg__bytes_t k) {
  return k.len >= 1 && k.len <= MG_STORE_KEY_MAX && k.p != NULL && memchr(k.p, 0, k.len) == NULL;
}

/* Body size of req, or 0 when it cannot be encoded (every valid body has at least 4 bytes). */
static size_t mg__req_body(const mg__req_t *q) {
  switch (q->op) {
    case MG__OP_HELLO:
      if (q->key.len < 1 || q->key.len > MG_STORE_TOKEN_MAX || q->key.p == NULL) return 0;
      return MG__STR(q->key.len);
    case MG__OP_SET:
      if (!mg__key_ok(q->key) || q->value.len > MG_STORE_VALUE_MAX) return 0;
      return MG__STR(q->key.len) + MG__STR(q->value.len);
    case MG__OP_GET:
      return mg__key_ok(q->key) ? MG__STR(q->key.len) + 4 : 0;
    case MG__OP_CHECK:
    case MG__OP_DELETE:
      return mg__key_ok(q->key) ? MG__STR(q->key.len) : 0;
    case MG__OP_ADD:
      return mg__key_ok(q->key) ? MG__STR(q->key.len) + 8 : 0;
    case MG__OP_CAS:
      if (!mg__key_ok(q->key) || q->expect_present > 1 || q->value.len > MG_STORE_VALUE_MAX ||
          q->expected.len > (q->expect_present ? MG_STORE_VALUE_MAX : 0))
        return 0;
      return MG__STR(q->key.len) + 1 + MG__STR(q->expected.len) + MG__STR(q->value.len);
    case MG__OP_BARRIER:
      if (!mg__key_ok(q->key) || q->nparties < 1 || q->nparties > INT32_MAX) return 0;
      return MG__STR(q->key.len) + 8;
  }
  return 0;
}

size_t mg__proto_request_size(const mg__req_t *req) {
  size_t body = mg__req_body(req);
  return body ? MG__PROTO_HEADER_BYTES + body : 0;
}

size_t mg__proto_encode_request(const mg__req_t *q, uint8_t *out) {
  size_t body = mg__req_body(q);
  if (body == 0) return 0;
  uint8_t *p = mg__header(out, q->op, (uint32_t)body);
  p = mg__stbytes(p, q->key);
  switch (q->op) {
    case MG__OP_SET: p = mg__stbytes(p, q->value); break;
    case MG__OP_GET: p = mg__st32(p, q->wait_ms); break;
    case MG__OP_ADD: p = mg__st64(p, (uint64_t)q->delta); break;
    case MG__OP_CAS:
      *p++ = q->expect_present;
      p = mg__stbytes(p, q->expected);
      p = mg__stbytes(p, q->value);
      break;
    case MG__OP_BARRIER:
      p = mg__st32(p, q->nparties);
      p = mg__st32(p, q->wait_ms);
      break;
    default: break;
  }
  return (size_t)(p - out);
}

static size_t mg__reply_body(const mg__reply_t *r) {
  if (r->op < MG__OP_HELLO || r->op >= MG__OP_COUNT || r->status >= MG__WIRE_COUNT) return 0;
  if (r->status != MG__WIRE_OK)
    return r->payload.len <= MG__PROTO_MSG_MAX ? 1 + MG__STR(r->payload.len) : 0;
  switch (r->op) {
    case MG__OP_GET: return r->payload.len <= MG_STORE_VALUE_MAX ? 1 + MG__STR(r->payload.len) : 0;
    case MG__OP_ADD: return 1 + 8;
    case MG__OP_CHECK: case MG__OP_CAS: case MG__OP_DELETE:
      return r->number == 0 || r->number == 1 ? 2 : 0;
  }
  return 1;
}

size_t mg__proto_reply_size(const mg__reply_t *rep) {
  size_t body = mg__reply_body(rep);
  return body ? MG__PROTO_HEADER_BYTES + body : 0;
}

size_t mg__proto_encode_reply(const mg__reply_t *r, uint8_t *out) {
  size_t body = mg__reply_body(r);
  if (body == 0) return 0;
  uint8_t *p = mg__header(out, (uint8_t)(MG__OP_REPLY | r->op), (uint32_t)body);
  *p++ = r->status;
  if (r->status != MG__WIRE_OK || r->op == MG__OP_GET) {
    p = mg__stbytes(p, r->payload);
  } else if (r->op == MG__OP_ADD) {
    p = mg__st64(p, (uint64_t)r->number);
  } else if (r->op == MG__OP_CHECK || r->op == MG__OP_CAS || r->op == MG__OP_DELETE) {
    *p++ = (uint8_t)r->number;
  }
  return (size_t)(p - out);
}

/* ---- integer values ----------------------------------------------------------------------- */

int mg__proto_parse_i64(const uint8_t *p, size_t len, int64_t *out) {
  size_t i = 0;
  int neg = 0;
  if (len > 0 && p[0] == '-') {
    neg = 1;
    i = 1;
  }
  if (i == len || len - i > 20) return -1;
  uint64_t mag = 0;
  for (; i < len; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    uint64_t d = (uint64_t)(p[i] - '0');
    if (mag > (UINT64_MAX - d) / 10) return -1;
    mag = mag * 10 + d;
  }
  if (neg) {
    if (mag > (uint64_t)INT64_MAX + 1) return -1;
    *out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
  } else {
    if (mag > (uint64_t)INT64_MAX) return -1;
    *out = (int64_t)mag;
  }
  return 0;
}
