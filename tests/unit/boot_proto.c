/*
 * boot_proto.c -- the store's codec (src/boot/proto.c): every message round-trips to the same
 * bytes, and every kind of defect in a header or a body is refused (never read past the end:
 * the whole test also runs under ASan in `make asan`).
 */
#include <stdarg.h>

#include "boot/proto.h"
#include "test.h"

static uint8_t frame[2 * MG_STORE_VALUE_MAX + 4096];
static uint8_t big[MG_STORE_VALUE_MAX + 1];

/* Encodes q, checks the header, decodes the body, compares, and re-encodes to the same bytes. */
static void roundtrip_request(const mg__req_t *q) {
  size_t n = mg__proto_request_size(q);
  ASSERT_GT(n, MG__PROTO_HEADER_BYTES - 1);
  ASSERT_EQ(mg__proto_encode_request(q, frame), n);
  uint8_t op, version;
  uint32_t body;
  const char *why = NULL;
  ASSERT_EQ(mg__proto_header(frame, 0, &op, &body, &version, &why), MG__PROTO_OK);
  ASSERT_EQ(op, q->op);
  ASSERT_EQ(body + MG__PROTO_HEADER_BYTES, n);
  ASSERT_LE(body, mg__proto_body_max(op));
  /* A server refuses a request where it expects a reply, and vice versa. */
  ASSERT_EQ(mg__proto_header(frame, 1, &op, &body, &version, &why), MG__PROTO_BAD);
  mg__req_t d;
  ASSERT_EQ(mg__proto_decode_request(op, frame + MG__PROTO_HEADER_BYTES, body, &d, &why),
            MG__PROTO_OK);
  ASSERT_EQ(d.op, q->op);
  ASSERT_EQ(d.key.len, q->key.len);
  ASSERT(d.key.len == 0 || memcmp(d.key.p, q->key.p, d.key.len) == 0);
  ASSERT_EQ(d.value.len, q->value.len);
  ASSERT(d.value.len == 0 || memcmp(d.value.p, q->value.p, d.value.len) == 0);
  ASSERT_EQ(d.expected.len, q->expected.len);
  ASSERT_EQ(d.expect_present, q->expect_present);
  ASSERT_EQ(d.delta, q->delta);
  ASSERT_EQ(d.wait_ms, q->wait_ms);
  ASSERT_EQ(d.nparties, q->nparties);
  /* Every strict prefix of the body, and the body plus a byte, is malformed. */
  for (uint32_t cut = 0; cut < body; cut += body > 4096 ? 4093 : 1)
    ASSERT_EQ(mg__proto_decode_request(op, frame + MG__PROTO_HEADER_BYTES, cut, &d, &why),
              MG__PROTO_BAD);
  if (body < mg__proto_body_max(op))
    ASSERT_EQ(mg__proto_decode_request(op, frame + MG__PROTO_HEADER_BYTES, body + 1, &d, &why),
              MG__PROTO_BAD);
}

static void roundtrip_reply(const mg__reply_t *r) {
  size_t n = mg__proto_reply_size(r);
  ASSERT_GT(n, 0);
  ASSERT_EQ(mg__proto_encode_reply(r, frame), n);
  uint8_t op, version;
  uint32_t body;
  const char *why = NULL;
  ASSERT_EQ(mg__proto_header(frame, 1, &op, &body, &version, &why), MG__PROTO_OK);
  ASSERT_EQ(op, MG__OP_REPLY | r->op);
  mg__reply_t d;
  ASSERT_EQ(mg__proto_decode_reply(r->op, frame + MG__PROTO_HEADER_BYTES, body, &d, &why),
            MG__PROTO_OK);
  ASSERT_EQ(d.status, r->status);
  ASSERT_EQ(d.payload.len, r->payload.len);
  ASSERT(d.payload.len == 0 || memcmp(d.payload.p, r->payload.p, d.payload.len) == 0);
  ASSERT_EQ(d.number, r->number);
  for (uint32_t cut = 0; cut < body; cut += body > 4096 ? 4093 : 1)
    ASSERT_EQ(mg__proto_decode_reply(r->op, frame + MG__PROTO_HEADER_BYTES, cut, &d, &why),
              MG__PROTO_BAD);
}

static mg__bytes_t B(const char *s) {
  mg__bytes_t b = {(const uint8_t *)s, (uint32_t)strlen(s)};
  return b;
}

static void test_requests(void) {
  mg__req_t q;
  memset(&q, 0, sizeof q);
  q.op = MG__OP_HELLO;
  q.key = B("secret");
  roundtrip_request(&q);

  memset(big, 'k', sizeof big);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_SET;
  q.key.p = big;
  q.key.len = MG_STORE_KEY_MAX;        /* the longest key */
  q.value.p = big;
  q.value.len = MG_STORE_VALUE_MAX;    /* the longest value */
  roundtrip_request(&q);
  q.value.len = 0;                      /* an empty value */
  roundtrip_request(&q);

  memset(&q, 0, sizeof q);
  q.op = MG__OP_GET;
  q.key = B("a");
  q.wait_ms = 0xfffffffeu;
  roundtrip_request(&q);
  q.op = MG__OP_CHECK;
  q.wait_ms = 0;
  roundtrip_request(&q);
  q.op = MG__OP_DELETE;
  roundtrip_request(&q);

  memset(&q, 0, sizeof q);
  q.op = MG__OP_ADD;
  q.key = B("counter");
  q.delta = INT64_MIN;
  roundtrip_request(&q);
  q.delta = -1;
  roundtrip_request(&q);

  memset(&q, 0, sizeof q);
  q.op = MG__OP_CAS;
  q.key = B("leader");
  q.value = B("rank3");
  roundtrip_request(&q);                /* expect absent */
  q.expect_present = 1;
  q.expected = B("rank1");
  roundtrip_request(&q);

  memset(&q, 0, sizeof q);
  q.op = MG__OP_BARRIER;
  q.key = B("b");
  q.nparties = 16;
  q.wait_ms = 1000;
  roundtrip_request(&q);
}

static void test_replies(void) {
  mg__reply_t r;
  for (uint8_t op = MG__OP_HELLO; op < MG__OP_COUNT; op++) {
    memset(&r, 0, sizeof r);
    r.op = op;
    if (op == MG__OP_GET) r.payload = B("value\0with");
    if (op == MG__OP_ADD) r.number = -42;
    if (op == MG__OP_CHECK || op == MG__OP_CAS || op == MG__OP_DELETE) r.number = 1;
    roundtrip_reply(&r);
    memset(&r, 0, sizeof r);
    r.op = op;
    r.status = MG__WIRE_BAD_REQUEST;
    r.payload = B("a message");
    roundtrip_reply(&r);
  }
  memset(&r, 0, sizeof r);
  r.op = MG__OP_GET;
  r.payload.p = big;
  r.payload.len = MG_STORE_VALUE_MAX;
  roundtrip_reply(&r);
}

/* Writes a header by hand. */
static void hdr(uint8_t *h, const char *magic, uint8_t version, uint8_t op, uint16_t reserved,
                uint32_t len) {
  memcpy(h, magic, 4);
  h[4] = version;
  h[5] = op;
  h[6] = (uint8_t)reserved;
  h[7] = (uint8_t)(reserved >> 8);
  h[8] = (uint8_t)len;
  h[9] = (uint8_t)(len >> 8);
  h[10] = (uint8_t)(len >> 16);
  h[11] = (uint8_t)(len >> 24);
}

static void test_bad_headers(void) {
  uint8_t h[12], op, version;
  uint32_t body;
  const char *why;
  hdr(h, "mgst", 1, MG__OP_SET, 0, 10);
  ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_OK);
  hdr(h, "MGST", 1, MG__OP_SET, 0, 10);
  ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_BAD);
  ASSERT_CONTAINS(why, "magic");
  hdr(h, "mgst", 2, MG__OP_SET, 0, 10);
  ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_BAD);
  ASSERT_EQ(version, 2);
  hdr(h, "mgst", 1, MG__OP_SET, 1, 10);
  ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_BAD);
  hdr(h, "mgst", 1, MG__OP_SET, 0x100, 10);
  ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_BAD);
  static const uint8_t bad_ops[] = {0, MG__OP_COUNT, 0x7f, MG__OP_REPLY, 0xff};
  for (size_t i = 0; i < sizeof bad_ops; i++) {
    hdr(h, "mgst", 1, bad_ops[i], 0, 4);
    ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_BAD);
    ASSERT_EQ(mg__proto_header(h, 1, &op, &body, &version, &why), MG__PROTO_BAD);
  }
  for (uint8_t o = MG__OP_HELLO; o < MG__OP_COUNT; o++) {
    uint32_t max = mg__proto_body_max(o);
    ASSERT_GT(max, 0);
    hdr(h, "mgst", 1, o, 0, max);
    ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_OK);
    hdr(h, "mgst", 1, o, 0, max + 1);
    ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_BAD);
    hdr(h, "mgst", 1, o, 0, 0xffffffffu);
    ASSERT_EQ(mg__proto_header(h, 0, &op, &body, &version, &why), MG__PROTO_BAD);
    ASSERT_CONTAINS(why, "length");
  }
  /* A HELLO is small: an unauthenticated peer cannot make the server allocate much. */
  ASSERT_LE(mg__proto_body_max(MG__OP_HELLO), MG_STORE_TOKEN_MAX + 4);
}

/* Builds a body from (kind, value) pieces: 'u' u32, 'b' u8, 'q' i64, 's' string. */
static uint32_t body_of(uint8_t *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  uint8_t *p = out;
  for (const char *f = fmt; *f; f++) {
    if (*f == 'u' || *f == 'b' || *f == 'q') {
      uint64_t v = va_arg(ap, uint64_t);
      int n = *f == 'u' ? 4 : *f == 'b' ? 1 : 8;
      for (int i = 0; i < n; i++) *p++ = (uint8_t)(v >> (8 * i));
    } else {
      const char *s = va_arg(ap, const char *);
      uint32_t n = va_arg(ap, uint32_t);
      for (int i = 0; i < 4; i++) *p++ = (uint8_t)(n >> (8 * i));
      memcpy(p, s, n);
      p += n;
    }
  }
  va_end(ap);
  return (uint32_t)(p - out);
}

static void expect_bad_request(uint8_t op, const uint8_t *b, uint32_t n, const char *want_why) {
  mg__req_t q;
  const char *why = NULL;
  ASSERT_EQ(mg__proto_decode_request(op, b, n, &q, &why), MG__PROTO_BAD);
  ASSERT(why != NULL);
  if (want_why) ASSERT_CONTAINS(why, want_why);
}

static void test_bad_bodies(void) {
  uint8_t b[2048];
  uint32_t n;
  char key[MG_STORE_KEY_MAX + 1];
  memset(key, 'k', sizeof key);
  n = body_of(b, "s", "", (uint32_t)0);
  expect_bad_request(MG__OP_HELLO, b, n, "token");
  n = body_of(b, "s", key, (uint32_t)MG_STORE_TOKEN_MAX + 1);
  expect_bad_request(MG__OP_HELLO, b, n, "token");
  n = body_of(b, "s", "", (uint32_t)0);
  expect_bad_request(MG__OP_CHECK, b, n, "key");
  n = body_of(b, "s", key, (uint32_t)MG_STORE_KEY_MAX + 1);
  expect_bad_request(MG__OP_CHECK, b, n, "key");
  n = body_of(b, "s", "a\0b", (uint32_t)3);
  expect_bad_request(MG__OP_CHECK, b, n, "NUL");
  n = body_of(b, "u", (uint64_t)0xffffffffu); /* a string length far past the end */
  expect_bad_request(MG__OP_CHECK, b, n, "past the end");
  n = body_of(b, "ss", "k", (uint32_t)1, "v", (uint32_t)1);
  expect_bad_request(MG__OP_CHECK, b, n, "trailing");
  n = body_of(b, "sbss", "k", (uint32_t)1, (uint64_t)2, "", (uint32_t)0, "", (uint32_t)0);
  expect_bad_request(MG__OP_CAS, b, n, "expect_present");
  n = body_of(b, "sbss", "k", (uint32_t)1, (uint64_t)0, "x", (uint32_t)1, "", (uint32_t)0);
  expect_bad_request(MG__OP_CAS, b, n, "expected");
  n = body_of(b, "suu", "k", (uint32_t)1, (uint64_t)0, (uint64_t)5);
  expect_bad_request(MG__OP_BARRIER, b, n, "party");
  n = body_of(b, "suu", "k", (uint32_t)1, (uint64_t)0x80000000u, (uint64_t)5);
  expect_bad_request(MG__OP_BARRIER, b, n, "party");
  n = body_of(b, "s", "k", (uint32_t)1);
  expect_bad_request(MG__OP_ADD, b, n, "truncated");
  expect_bad_request(0, b, n, "opcode");
  expect_bad_request(MG__OP_COUNT, b, n, "opcode");

  mg__reply_t r;
  const char *why;
  n = body_of(b, "b", (uint64_t)MG__WIRE_COUNT);
  ASSERT_EQ(mg__proto_decode_reply(MG__OP_SET, b, n, &r, &why), MG__PROTO_BAD);
  n = body_of(b, "bb", (uint64_t)0, (uint64_t)2);
  ASSERT_EQ(mg__proto_decode_reply(MG__OP_CHECK, b, n, &r, &why), MG__PROTO_BAD);
  n = body_of(b, "bs", (uint64_t)MG__WIRE_TIMED_OUT, key, (uint32_t)MG__PROTO_MSG_MAX + 1);
  ASSERT_EQ(mg__proto_decode_reply(MG__OP_GET, b, n, &r, &why), MG__PROTO_BAD);
  ASSERT_EQ(mg__proto_decode_reply(0, b, n, &r, &why), MG__PROTO_BAD);
  ASSERT_EQ(mg__proto_decode_reply(MG__OP_GET, b, 0, &r, &why), MG__PROTO_BAD);
}

static void test_encoder_limits(void) {
  mg__req_t q;
  memset(&q, 0, sizeof q);
  q.op = MG__OP_SET;
  q.key.p = big;
  q.key.len = MG_STORE_KEY_MAX + 1;
  ASSERT_EQ(mg__proto_request_size(&q), 0);
  ASSERT_EQ(mg__proto_encode_request(&q, frame), 0);
  q.key.len = 1;
  q.value.p = big;
  q.value.len = MG_STORE_VALUE_MAX + 1;
  ASSERT_EQ(mg__proto_request_size(&q), 0);
  q.value.len = 0;
  q.key = B("a\0b");
  q.key.len = 3;
  ASSERT_EQ(mg__proto_request_size(&q), 0);
  q.op = 0;
  ASSERT_EQ(mg__proto_request_size(&q), 0);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_BARRIER;
  q.key = B("b");
  ASSERT_EQ(mg__proto_request_size(&q), 0); /* nparties 0 */
  mg__reply_t r;
  memset(&r, 0, sizeof r);
  r.op = MG__OP_CHECK;
  r.number = 2;
  ASSERT_EQ(mg__proto_reply_size(&r), 0);
  r.status = MG__WIRE_COUNT;
  ASSERT_EQ(mg__proto_reply_size(&r), 0);
}

static void test_integers(void) {
  struct {
    const char *text;
    int ok;
    int64_t value;
  } cases[] = {
      {"0", 1, 0},
      {"42", 1, 42},
      {"-42", 1, -42},
      {"007", 1, 7},
      {"9223372036854775807", 1, INT64_MAX},
      {"-9223372036854775808", 1, INT64_MIN},
      {"9223372036854775808", 0, 0},
      {"-9223372036854775809", 0, 0},
      {"99999999999999999999", 0, 0},
      {"", 0, 0},
      {"-", 0, 0},
      {"+1", 0, 0},
      {" 1", 0, 0},
      {"1a", 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t v = 12345;
    int rc = mg__proto_parse_i64((const uint8_t *)cases[i].text, strlen(cases[i].text), &v);
    if (cases[i].ok) {
      ASSERT_EQ(rc, 0);
      ASSERT_EQ(v, cases[i].value);
    } else {
      ASSERT_EQ(rc, -1);
      ASSERT_EQ(v, 12345); /* untouched on failure */
    }
  }
}

int main(void) {
  test_requests();
  test_replies();
  test_bad_headers();
  test_bad_bodies();
  test_encoder_limits();
  test_integers();
  printf("boot_proto: ok\n");
  return 0;
}
