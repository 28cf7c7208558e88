/*
 * proto.h -- the rendezvous store's wire protocol and its codec.
 *
 * The codec is pure: functions over byte buffers, no I/O, no allocation, no library state, so the
 * fuzzer (tests/fuzz/store_fuzz.c) can compile it on its own and drive it with any input. The
 * server and the client (store_server.c, store_client.c) do the I/O around it.
 *
 * A frame is a 12-byte header followed by a body:
 *
 *   bytes 0..3   magic "mgst"            a peer that is not an mgcomm store is recognised at once
 *   byte  4      protocol version (1)    a different version is refused, never guessed at
 *   byte  5      opcode                  a request (1..8), or a reply (0x80 | the request's opcode)
 *   bytes 6..7   reserved, zero
 *   bytes 8..11  body length, u32 little-endian, at most mg__proto_body_max(opcode)
 *
 * Body fields are u8, u32 and i64 (little-endian) and byte strings (u32 length, then the bytes).
 * Request bodies (every key is 1..MG_STORE_KEY_MAX bytes without NUL):
 *
 *   HELLO    token (1..MG_STORE_TOKEN_MAX bytes)     must be the first request of a connection
 *   SET      key, value (0..MG_STORE_VALUE_MAX)
 *   GET      key, u32 wait_ms                        waits up to wait_ms for the key to exist
 *   CHECK    key
 *   ADD      key, i64 delta                          the value is a decimal integer (absent = 0)
 *   CAS      key, u8 expect_present, expected, desired   expected is empty when !expect_present
 *   DELETE   key
 *   BARRIER  name (as a key), u32 nparties, u32 wait_ms
 *
 * A reply body is a u8 status (mg__wire_t); after MG__WIRE_OK the payload of its opcode (GET: the
 * value; CHECK, CAS, DELETE: u8 0/1; ADD: i64 the new value; others: nothing); after an error a
 * message (0..MG__PROTO_MSG_MAX bytes of text). A body must be consumed exactly: trailing bytes
 * are malformed, so every message has one encoding.
 *
 * One request is in flight per connection: a client sends the next request only after it has
 * read the reply to the previous one.
 */
#ifndef MG_BOOT_PROTO_H
#define MG_BOOT_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "mgcomm.h"

#define MG__PROTO_VERSION 1
#define MG__PROTO_HEADER_BYTES 12
#define MG__PROTO_MSG_MAX 256 /* bytes of the message of an error reply */

typedef enum mg__proto_op {
  MG__OP_HELLO = 1,
  MG__OP_SET = 2,
  MG__OP_GET = 3,
  MG__OP_CHECK = 4,
  MG__OP_ADD = 5,
  MG__OP_CAS = 6,
  MG__OP_DELETE = 7,
  MG__OP_BARRIER = 8,
  MG__OP_COUNT = 9
} mg__proto_op_t;

#define MG__OP_REPLY 0x80 /* reply opcode = MG__OP_REPLY | request opcode */

/* Status of a reply on the wire; the client maps it to an mg_status_t. */
typedef enum mg__wire {
  MG__WIRE_OK = 0,
  MG__WIRE_NOT_FOUND = 1,   /* GET with wait 0 on an absent key */
  MG__WIRE_TIMED_OUT = 2,   /* GET or BARRIER waited wait_ms */
  MG__WIRE_BAD_REQUEST = 3, /* well-formed but not acceptable (ADD on a non-integer, ...) */
  MG__WIRE_FULL = 4,        /* the store's byte limit would be exceeded */
  MG__WIRE_AUTH = 5,        /* HELLO with a wrong token; the server closes the connection */
  MG__WIRE_VERSION = 6,     /* the header's version is not the server's; connection closed */
  MG__WIRE_COUNT = 7
} mg__wire_t;

/* A byte string inside a decoded frame: points into the buffer that was decoded. */
typedef struct mg__bytes {
  const uint8_t *p;
  uint32_t len;
} mg__bytes_t;

/* A request, decoded (views into the body) or to be encoded. Fields an opcode lacks are 0. */
typedef struct mg__req {
  uint8_t op;             /* mg__proto_op_t */
  mg__bytes_t key;        /* the key or barrier name; HELLO: the token */
  mg__bytes_t value;      /* SET: the value; CAS: the desired value */
  mg__bytes_t expected;   /* CAS */
  uint8_t expect_present; /* CAS: 0 = the key must be absent, 1 = its value must be expected */
  int64_t delta;          /* ADD */
  uint32_t wait_ms;       /* GET, BARRIER */
  uint32_t nparties;      /* BARRIER, >= 1 */
} mg__req_t;

typedef struct mg__reply {
  uint8_t op;          /* the request's opcode (without MG__OP_REPLY) */
  uint8_t status;      /* mg__wire_t */
  mg__bytes_t payload; /* GET ok: the value; an error: the message; else empty */
  int64_t number;      /* ADD ok: the new value; CHECK, CAS, DELETE ok: 0 or 1 */
} mg__reply_t;

/* Outcome of a decode. On MG__PROTO_BAD *why names the defect (static text). */
enum { MG__PROTO_OK = 0, MG__PROTO_BAD = -1 };

/* Largest body a frame with this opcode (request, or MG__OP_REPLY | request) may carry; 0 for an
 * opcode that does not exist. Checked before a receiver allocates anything for the body. */
uint32_t mg__proto_body_max(uint8_t opcode);

/* Validates a 12-byte header. want_reply: 1 when the receiver expects a reply frame (client),
 * 0 when it expects a request (server). Sets *opcode (as on the wire) and *body_len. A header of
 * another version gives MG__PROTO_BAD with *version set, so a server can say which one it has. */
int mg__proto_header(const uint8_t *hdr, int want_reply, uint8_t *opcode, uint32_t *body_len,
                     uint8_t *version, const char **why);

/* Decodes the body of a request with opcode op (from mg__proto_header). */
int mg__proto_decode_request(uint8_t op, const uint8_t *body, uint32_t len, mg__req_t *req,
                             const char **why);
/* Decodes the body of a reply to op (the opcode without MG__OP_REPLY). */
int mg__proto_decode_reply(uint8_t op, const uint8_t *body, uint32_t len, mg__reply_t *rep,
                           const char **why);

/* Frame size of req, header included; 0 when req is not encodable (bad op, or a field beyond its
 * limit). encode writes exactly that many bytes to out and returns the count (0: nothing). */
size_t mg__proto_request_size(const mg__req_t *req);
size_t mg__proto_encode_request(const mg__req_t *req, uint8_t *out);
size_t mg__proto_reply_size(const mg__reply_t *rep);
size_t mg__proto_encode_reply(const mg__reply_t *rep, uint8_t *out);

/* Parses the value of a key that ADD updates: an optional '-', then 1..20 decimal digits, the
 * whole fitting in int64 (ADD writes its result in this form). 0 on success, -1 otherwise. */
int mg__proto_parse_i64(const uint8_t *p, size_t len, int64_t *out);

#endif
