/*
 * store_fuzz.c -- fuzz target of the store's codec (src/boot/proto.c).
 *
 * The input is a stream as a server or a client would receive it: byte 0 says which side
 * (even: requests, as the server reads them; odd: replies, as the client reads them), the rest is
 * frames back to back. Each frame goes through mg__proto_header and, when its header is valid and
 * its body present, the decoder. Beyond "no crash, no out-of-bounds read" (ASan), every decoded
 * message must re-encode to exactly the bytes it came from (the codec is canonical), and an
 * integer value that parses must print back to the same number.
 *
 * Two builds:
 *  - with MGCOMM_FUZZ=ON and clang, `store_fuzz` links libFuzzer (-fsanitize=fuzzer,address):
 *      build-fuzz/tests/fuzz/store_fuzz -max_total_time=30 build-fuzz/tests/fuzz/corpus-store
 *    (tests/fuzz/boot.cmake registers that as the CTest `fuzz_store`, after writing the
 *    seed corpus with `store_fuzz_replay --write-seeds DIR`);
 *  - always, `store_fuzz_replay`: this file with a main() that runs the seeds and a fixed number
 *    of deterministic mutations of them through the same target (CTest `store_fuzz_replay`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/proto.h"
#include "fuzz.h"

static uint8_t reencoded[2 * MG_STORE_VALUE_MAX + 4096];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int replies = data[0] & 1;
  const uint8_t *p = data + 1;
  size_t left = size - 1;
  while (left >= MG__PROTO_HEADER_BYTES) {
    uint8_t op, version;
    uint32_t body;
    const char *why = NULL;
    if (mg__proto_header(p, replies, &op, &body, &version, &why) != MG__PROTO_OK) {
      CHECK(why != NULL);
      return 0; /* a receiver closes the connection here */
    }
    CHECK(body <= mg__proto_body_max(op));
    if (body > left - MG__PROTO_HEADER_BYTES) return 0; /* truncated: the receiver waits */
    const uint8_t *b = p + MG__PROTO_HEADER_BYTES;
    size_t frame = MG__PROTO_HEADER_BYTES + body;
    if (replies) {
      mg__reply_t r;
      uint8_t req_op = (uint8_t)(op & ~MG__OP_REPLY);
      if (mg__proto_decode_reply(req_op, b, body, &r, &why) != MG__PROTO_OK) {
        CHECK(why != NULL);
        return 0;
      }
      CHECK(r.payload.len == 0 || (r.payload.p >= b && r.payload.p + r.payload.len <= b + body));
      CHECK(mg__proto_reply_size(&r) == frame);
      CHECK(mg__proto_encode_reply(&r, reencoded) == frame);
    } else {
      mg__req_t q;
      if (mg__proto_decode_request(op, b, body, &q, &why) != MG__PROTO_OK) {
        CHECK(why != NULL);
        return 0;
      }
      CHECK(q.key.len >= 1 && q.key.p >= b && q.key.p + q.key.len <= b + body);
      CHECK(q.op == MG__OP_HELLO || memchr(q.key.p, 0, q.key.len) == NULL);
      CHECK(mg__proto_request_size(&q) == frame);
      CHECK(mg__proto_encode_request(&q, reencoded) == frame);
      /* A SET's value is what ADD may later parse. */
      int64_t v;
      if (q.op == MG__OP_SET && mg__proto_parse_i64(q.value.p, q.value.len, &v) == 0) {
        char text[24];
        int n = snprintf(text, sizeof text, "%lld", (long long)v);
        int64_t back;
        CHECK(mg__proto_parse_i64((const uint8_t *)text, (size_t)n, &back) == 0 && back == v);
      }
    }
    CHECK(memcmp(reencoded, p, frame) == 0);
    p += frame;
    left -= frame;
  }
  return 0;
}

#ifndef MG_FUZZ_LIBFUZZER
/* ---- store_fuzz_replay: seeds plus deterministic mutations, no libFuzzer needed ------------ */

#define MAX_SEED 1024

typedef struct {
  uint8_t bytes[MAX_SEED];
  size_t len;
} seed_t;

static seed_t seeds[64];
static int nseeds;

static void add_req(const mg__req_t *q) {
  seed_t *s = &seeds[nseeds++];
  s->bytes[0] = 0;
  s->len = 1 + mg__proto_encode_request(q, s->bytes + 1);
  CHECK(s->len > 1 && s->len <= MAX_SEED);
}

static void add_reply(const mg__reply_t *r) {
  seed_t *s = &seeds[nseeds++];
  s->bytes[0] = 1;
  s->len = 1 + mg__proto_encode_reply(r, s->bytes + 1);
  CHECK(s->len > 1 && s->len <= MAX_SEED);
}

static mg__bytes_t B(const char *s) {
  mg__bytes_t b = {(const uint8_t *)s, (uint32_t)strlen(s)};
  return b;
}

static void make_seeds(void) {
  mg__req_t q;
  memset(&q, 0, sizeof q);
  q.op = MG__OP_HELLO;
  q.key = B("token");
  add_req(&q);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_SET;
  q.key = B("key");
  q.value = B("-1234");
  add_req(&q);
  q.op = MG__OP_GET;
  q.value = B("");
  q.wait_ms = 1000;
  add_req(&q);
  q.op = MG__OP_CHECK;
  q.wait_ms = 0;
  add_req(&q);
  q.op = MG__OP_DELETE;
  add_req(&q);
  q.op = MG__OP_ADD;
  q.delta = -5;
  add_req(&q);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_CAS;
  q.key = B("leader");
  q.expect_present = 1;
  q.expected = B("a");
  q.value = B("b");
  add_req(&q);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_BARRIER;
  q.key = B("barrier");
  q.nparties = 4;
  q.wait_ms = 10;
  add_req(&q);
  for (uint8_t op = MG__OP_HELLO; op < MG__OP_COUNT; op++) {
    mg__reply_t r;
    memset(&r, 0, sizeof r);
    r.op = op;
    if (op == MG__OP_GET) r.payload = B("value");
    if (op == MG__OP_ADD) r.number = 7;
    add_reply(&r);
    r.status = MG__WIRE_TIMED_OUT;
    r.payload = B("message");
    r.number = 0;
    add_reply(&r);
  }
  /* two requests back to back */
  seed_t *s = &seeds[nseeds++];
  memcpy(s->bytes, seeds[1].bytes, seeds[1].len);
  memcpy(s->bytes + seeds[1].len, seeds[2].bytes + 1, seeds[2].len - 1);
  s->len = seeds[1].len + seeds[2].len - 1;
}

int main(int argc, char **argv) {
  make_seeds();
  if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
    for (int i = 0; i < nseeds; i++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/seed-%02d", argv[2], i);
      FILE *f = fopen(path, "wb");
      CHECK(f != NULL);
      CHECK(fwrite(seeds[i].bytes, 1, seeds[i].len, f) == seeds[i].len);
      CHECK(fclose(f) == 0);
    }
    printf("store_fuzz_replay: wrote %d seeds to %s\n", nseeds, argv[2]);
    return 0;
  }
  long iterations = argc == 2 ? atol(argv[1]) : 2000000;
  for (int i = 0; i < nseeds; i++) LLVMFuzzerTestOneInput(seeds[i].bytes, seeds[i].len);
  static uint8_t buf[2 * MAX_SEED];
  for (long it = 0; it < iterations; it++) {
    const seed_t *s = &seeds[mg_fuzz_next() % (uint64_t)nseeds];
    size_t len = s->len;
    memcpy(buf, s->bytes, len);
    int edits = 1 + (int)(mg_fuzz_next() % 4);
    for (int e = 0; e < edits; e++) {
      switch (mg_fuzz_next() % 5) {
        case 0: /* flip a bit */
          buf[mg_fuzz_next() % len] ^= (uint8_t)(1u << (mg_fuzz_next() % 8));
          break;
        case 1: buf[mg_fuzz_next() % len] = (uint8_t)mg_fuzz_next(); break; /* a random byte */
        case 2: if (len > 1) len = 1 + (size_t)(mg_fuzz_next() % (len - 1)); break; /* truncate */
        case 3: /* extreme byte */
          buf[mg_fuzz_next() % len] = (mg_fuzz_next() & 1) ? 0xff : 0x00;
          break;
        case 4:                                                             /* append junk */
          if (len + 8 <= sizeof buf) {
            for (int k = 0; k < 8; k++) buf[len + (size_t)k] = (uint8_t)mg_fuzz_next();
            len += 8;
          }
          break;
      }
    }
    LLVMFuzzerTestOneInput(buf, len);
  }
  printf("store_fuzz_replay: %d seeds and %ld mutations decoded without a defect\n", nseeds,
         iterations);
  return 0;
}
#endif
