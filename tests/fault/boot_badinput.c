/*
 * boot_badinput.c -- hostile and broken peers of the store, over raw sockets: garbage, a foreign
 * protocol, truncated frames, huge lengths, requests before authentication, a wrong token,
 * another protocol version, a client that stays silent, one that sends while it waits, one that
 * never reads its replies. Each such connection must be closed by the server within a bound
 * (MGCOMM_STORE_FRAME_TIMEOUT is 2 s here), while a well-behaved client, including one blocked in
 * a wait the whole time, is still served.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "boot/proto.h"
#include "base/clock.h"
#include "test.h"

#define TOKEN "bad-input-token"
#define FRAME_TIMEOUT 2.0 /* MGCOMM_STORE_FRAME_TIMEOUT, set by tests/fault/boot.cmake */

static char addr[128];
static int port;
static mg_store_t *good;

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static int raw_connect(int rcvbuf) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT(fd >= 0);
  if (rcvbuf > 0) ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf), 0);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static void send_bytes(int fd, const void *p, size_t n) {
  ASSERT_EQ(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until the server closes the connection; fails if that takes longer than max_s. Returns
 * how long it took and copies the first bytes received (a refusal) into got. */
static double expect_closed(int fd, double max_s, uint8_t *got, size_t cap, size_t *got_len) {
  double t0 = mg__now();
  size_t have = 0;
  for (;;) {
    double left = t0 + max_s - mg__now();
    if (left <= 0) FAIL("the server did not close the connection within %.1f s", max_s);
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, (int)(left * 1000) + 1);
    ASSERT(n >= 0);
    if (n == 0) continue;
    uint8_t buf[65536];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r == 0 || (r < 0 && errno == ECONNRESET)) break;
    ASSERT(r > 0);
    if (got != NULL && have < cap)
      memcpy(got + have, buf, (size_t)r < cap - have ? (size_t)r : cap - have);
    have += (size_t)r;
  }
  close(fd);
  if (got_len) *got_len = have;
  return mg__now() - t0;
}

/* The well-behaved client is served, with a value it can check. */
static void good_is_served(const char *what) {
  static int n;
  char v[32], back[32];
  size_t len;
  snprintf(v, sizeof v, "%d", ++n);
  ASSERT_OK(mg_store_set(good, "good/key", v, strlen(v), 5));
  ASSERT_OK(mg_store_get(good, "good/key", back, sizeof back, &len, 5));
  ASSERT(len == strlen(v) && memcmp(back, v, len) == 0);
  printf("  %-58s dropped; a good client is still served\n", what);
}

static size_t frame_of(const mg__req_t *q, uint8_t *out) {
  size_t n = mg__proto_encode_request(q, out);
  ASSERT_GT(n, 0);
  return n;
}

static size_t hello_frame(uint8_t *out, const char *token) {
  mg__req_t q;
  memset(&q, 0, sizeof q);
  q.op = MG__OP_HELLO;
  q.key.p = (const uint8_t *)token;
  q.key.len = (uint32_t)strlen(token);
  return frame_of(&q, out);
}

/* Connects and authenticates; reads the OK. */
static int authed_connect(int rcvbuf) {
  int fd = raw_connect(rcvbuf);
  uint8_t f[512];
  send_bytes(fd, f, hello_frame(f, TOKEN));
  uint8_t r[MG__PROTO_HEADER_BYTES + 1];
  ASSERT_EQ(recv(fd, r, sizeof r, MSG_WAITALL), (ssize_t)sizeof r);
  ASSERT_EQ(r[5], MG__OP_REPLY | MG__OP_HELLO);
  ASSERT_EQ(r[MG__PROTO_HEADER_BYTES], MG__WIRE_OK);
  return fd;
}

static void header(uint8_t *h, uint8_t version, uint8_t op, uint32_t len) {
  memcpy(h, "mgst", 4);
  h[4] = version;
  h[5] = op;
  h[6] = h[7] = 0;
  h[8] = (uint8_t)len;
  h[9] = (uint8_t)(len >> 8);
  h[10] = (uint8_t)(len >> 16);
  h[11] = (uint8_t)(len >> 24);
}

/* A well-behaved client blocked in a wait for the whole test: it must end well. */
static void *waiter(void *arg) {
  (void)arg;
  mg_store_t *c;
  ASSERT_OK(mg_store_connect(addr, TOKEN, 10, &c));
  char buf[16];
  size_t len;
  ASSERT_OK(mg_store_get(c, "released-at-the-end", buf, sizeof buf, &len, 120));
  ASSERT_EQ(len, 4);
  ASSERT_OK(mg_store_close(c));
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* what was printed survives a failed assertion */
  mg_store_t *srv;
  ASSERT_OK(mg_store_serve("127.0.0.1:0", TOKEN, 10, &srv));
  ASSERT_OK(mg_store_address(srv, addr, sizeof addr));
  port = atoi(strrchr(addr, ':') + 1);
  ASSERT_OK(mg_store_connect(addr, TOKEN, 10, &good));
  pthread_t wt;
  ASSERT_EQ(pthread_create(&wt, NULL, waiter, NULL), 0);
  uint8_t f[4096], got[512];
  size_t got_len;
  double took;

  /* garbage */
  int fd = raw_connect(0);
  for (size_t i = 0; i < 64; i++) f[i] = (uint8_t)(i * 37 + 11);
  send_bytes(fd, f, 64);
  took = expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("64 bytes of garbage");

  /* another protocol */
  fd = raw_connect(0);
  const char *http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  send_bytes(fd, http, strlen(http));
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("an HTTP request");

  /* a huge length before authentication: closed at the header, nothing allocated */
  fd = raw_connect(0);
  header(f, MG__PROTO_VERSION, MG__OP_HELLO, 0xffffffffu);
  send_bytes(fd, f, MG__PROTO_HEADER_BYTES);
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("a HELLO header claiming 4 GiB");

  /* a huge length after authentication */
  fd = authed_connect(0);
  header(f, MG__PROTO_VERSION, MG__OP_SET, mg__proto_body_max(MG__OP_SET) + 1);
  send_bytes(fd, f, MG__PROTO_HEADER_BYTES);
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("a SET header one byte over its limit");

  /* an unknown opcode, reserved bits set */
  fd = authed_connect(0);
  header(f, MG__PROTO_VERSION, 0x55, 4);
  send_bytes(fd, f, MG__PROTO_HEADER_BYTES + 4);
  expect_closed(fd, 3.0, NULL, 0, NULL);
  fd = authed_connect(0);
  header(f, MG__PROTO_VERSION, MG__OP_CHECK, 5);
  f[6] = 1;
  send_bytes(fd, f, MG__PROTO_HEADER_BYTES);
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("an unknown opcode; reserved header bits");

  /* a well-framed body that does not decode (key length past the end) */
  fd = authed_connect(0);
  header(f, MG__PROTO_VERSION, MG__OP_CHECK, 8);
  static const uint8_t past_end[8] = {0xff, 0xff, 0, 0, 'a', 'b', 'c', 'd'};
  memcpy(f + MG__PROTO_HEADER_BYTES, past_end, 8);
  send_bytes(fd, f, MG__PROTO_HEADER_BYTES + 8);
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("a body whose key length runs past its end");

  /* a request before authentication */
  fd = raw_connect(0);
  mg__req_t q;
  memset(&q, 0, sizeof q);
  q.op = MG__OP_SET;
  q.key.p = (const uint8_t *)"good/key";
  q.key.len = 8;
  q.value.p = (const uint8_t *)"pwned";
  q.value.len = 5;
  send_bytes(fd, f, frame_of(&q, f));
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("a SET before HELLO (unauthenticated)");
  char back[32];
  size_t len;
  ASSERT_OK(mg_store_get(good, "good/key", back, sizeof back, &len, 5));
  ASSERT(len != 5 || memcmp(back, "pwned", 5) != 0); /* the SET was not applied */

  /* a wrong token: refused with AUTH, then closed */
  fd = raw_connect(0);
  send_bytes(fd, f, hello_frame(f, "guess"));
  expect_closed(fd, 3.0, got, sizeof got, &got_len);
  ASSERT_GT(got_len, MG__PROTO_HEADER_BYTES);
  ASSERT_EQ(got[MG__PROTO_HEADER_BYTES], MG__WIRE_AUTH);
  good_is_served("a HELLO with a wrong token (answered AUTH)");

  /* a second HELLO */
  fd = authed_connect(0);
  send_bytes(fd, f, hello_frame(f, TOKEN));
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("a second HELLO");

  /* another protocol version: answered VERSION, then closed */
  fd = raw_connect(0);
  size_t n = hello_frame(f, TOKEN);
  f[4] = MG__PROTO_VERSION + 1;
  send_bytes(fd, f, n);
  expect_closed(fd, 3.0, got, sizeof got, &got_len);
  ASSERT_GT(got_len, MG__PROTO_HEADER_BYTES);
  ASSERT_EQ(got[MG__PROTO_HEADER_BYTES], MG__WIRE_VERSION);
  good_is_served("protocol version 2 (answered VERSION)");

  /* a truncated frame, then end of file */
  fd = authed_connect(0);
  n = frame_of(&q, f);
  send_bytes(fd, f, n - 3);
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("a truncated frame, then end of file");

  /* a truncated frame, then silence: closed after the frame timeout, not before */
  fd = authed_connect(0);
  send_bytes(fd, f, n - 3);
  took = expect_closed(fd, FRAME_TIMEOUT + 4.0, NULL, 0, NULL);
  printf("  truncated frame then silence: closed after %.2f s\n", took);
  ASSERT_GE_F(took, FRAME_TIMEOUT * 0.9);
  good_is_served("a truncated frame, then silence");

  /* a client that connects and says nothing */
  fd = raw_connect(0);
  took = expect_closed(fd, FRAME_TIMEOUT + 4.0, NULL, 0, NULL);
  printf("  silent client: closed after %.2f s\n", took);
  ASSERT_GE_F(took, FRAME_TIMEOUT * 0.9);
  good_is_served("a client that connects and stays silent");

  /* a HELLO trickled byte by byte, within the timeout, is fine: slowness is judged per frame */
  fd = raw_connect(0);
  n = hello_frame(f, TOKEN);
  for (size_t i = 0; i < n; i++) { /* about 0.1 s in all: well within the frame timeout */
    send_bytes(fd, f + i, 1);
    sleep_s(0.003);
  }
  uint8_t r[MG__PROTO_HEADER_BYTES + 1];
  ASSERT_EQ(recv(fd, r, sizeof r, MSG_WAITALL), (ssize_t)sizeof r);
  ASSERT_EQ(r[MG__PROTO_HEADER_BYTES], MG__WIRE_OK);
  /* and an authenticated connection may then stay idle longer than the frame timeout */
  sleep_s(FRAME_TIMEOUT * 1.5);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_CHECK;
  q.key.p = (const uint8_t *)"good/key";
  q.key.len = 8;
  send_bytes(fd, f, frame_of(&q, f));
  uint8_t r2[MG__PROTO_HEADER_BYTES + 2];
  ASSERT_EQ(recv(fd, r2, sizeof r2, MSG_WAITALL), (ssize_t)sizeof r2);
  ASSERT_EQ(r2[MG__PROTO_HEADER_BYTES], MG__WIRE_OK);
  ASSERT_EQ(r2[MG__PROTO_HEADER_BYTES + 1], 1);
  close(fd);
  printf("  %-58s served\n", "a HELLO sent byte by byte, then an idle pause");

  /* data sent while a request waits (more than one request in flight) */
  fd = authed_connect(0);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_GET;
  q.key.p = (const uint8_t *)"absent";
  q.key.len = 6;
  q.wait_ms = 60000;
  n = frame_of(&q, f);
  send_bytes(fd, f, n);
  sleep_s(0.1);
  send_bytes(fd, f, n);
  expect_closed(fd, 3.0, NULL, 0, NULL);
  good_is_served("a second request while the first one waits");

  /* a client that never reads its replies: 16 pipelined GETs of a 1 MiB value */
  static uint8_t mib[MG_STORE_VALUE_MAX];
  memset(mib, 'm', sizeof mib);
  ASSERT_OK(mg_store_set(good, "one-mib", mib, sizeof mib, 10));
  fd = authed_connect(4096);
  memset(&q, 0, sizeof q);
  q.op = MG__OP_GET;
  q.key.p = (const uint8_t *)"one-mib";
  q.key.len = 7;
  n = frame_of(&q, f);
  for (int i = 0; i < 16; i++) send_bytes(fd, f, n);
  sleep_s(FRAME_TIMEOUT + 2.0);
  expect_closed(fd, 5.0, NULL, 0, &got_len);
  printf("  reader that never reads: closed after %zu of %zu reply bytes\n", got_len,
         16 * (MG__PROTO_HEADER_BYTES + 5 + sizeof mib));
  ASSERT_LT(got_len, 16 * (MG__PROTO_HEADER_BYTES + 5 + sizeof mib));
  good_is_served("a client that does not read its replies");

  /* the waiter has been blocked all along; release it */
  ASSERT_OK(mg_store_set(good, "released-at-the-end", "done", 4, 5));
  ASSERT_EQ(pthread_join(wt, NULL), 0);
  ASSERT_OK(mg_store_close(good));
  ASSERT_OK(mg_store_close(srv));
  printf("boot_badinput: ok\n");
  return 0;
}
