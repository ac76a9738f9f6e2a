/* SPDX-License-Identifier: Apache-2.0 */
/* WebSocket framing and handshake (src/tls/ws.c, ws_dial.c) over real TCP sockets on
 * 127.0.0.1: messages both ways, fragments reassembled, pings answered, every malformed
 * frame ends the endpoint with its close code, random bytes never crash it nor grow it,
 * the output buffer refuses past its cap, the dialer checks the server's answer, and the
 * accepting side on libmicrohttpd (ws_upgrade.c) checks an upgrade's headers, answers 101,
 * keeps the bytes sent with the handshake and gives the socket back before `done`. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#include "test.h"
#include "tls/ws.h"
#include "tls/ws_upgrade.h"

/* A connected TCP pair on 127.0.0.1: *a the connecting side, *b the accepted one. */
static void tcp_pair(int *a, int *b) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(l, 1) == 0);
  socklen_t sl = sizeof sa;
  getsockname(l, (struct sockaddr *)&sa, &sl);
  *a = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(connect(*a, (struct sockaddr *)&sa, sizeof sa) == 0);
  *b = accept(l, NULL, NULL);
  REQUIRE(*b >= 0);
  close(l);
}

/* Reads until a whole message is there (or the endpoint fails); 1, -1 or 0 on timeout. */
static int recv_msg(gp_tls_ws *w, gp_tls_ws_msg *m, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    int rc = gp_tls_ws_next(w, m);
    if (rc) return rc;
    gp_tls_ws_flush(w);
    struct pollfd pf = {.fd = gp_tls_ws_fd(w), .events = POLLIN};
    if (poll(&pf, 1, 10) == 1) {
      long k = gp_tls_ws_read(w);
      if (k == 0 || k == -2) return gp_tls_ws_next(w, m) ? 1 : -1;
    }
  }
  return 0;
}

static void ws_accept_key_matches_rfc(void) {
  char out[GP_TLS_WS_ACCEPT_LEN + 1];
  CHECK_EQ_INT(0, gp_tls_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out));
  CHECK_EQ_STR("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", out);
  CHECK_EQ_INT(-1, gp_tls_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ=", out));
  CHECK_EQ_INT(-1, gp_tls_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ!=", out));
  CHECK_EQ_INT(-1, gp_tls_ws_accept_key("dGhlIHNhbXBsZSBub25jZR==", out)); /* non-zero pad bits */
  CHECK_EQ_INT(-1, gp_tls_ws_accept_key("", out));
  CHECK_EQ_INT(-1, gp_tls_ws_accept_key(NULL, out));
  char key[GP_TLS_WS_KEY_LEN + 1];
  CHECK_EQ_INT(0, gp_tls_ws_new_key(key));
  CHECK_EQ_INT(0, gp_tls_ws_accept_key(key, out));
}

static void ws_messages_both_ways(void) {
  int a, b;
  tcp_pair(&a, &b);
  gp_tls_ws *c = gp_tls_ws_new(a, NULL, true, 0), *s = gp_tls_ws_new(b, NULL, false, 0);
  gp_tls_ws_msg m;
  REQUIRE(gp_tls_ws_send(c, GP_TLS_WS_TEXT, "hello", 5));
  CHECK_EQ_INT(0, gp_tls_ws_flush(c));
  REQUIRE(recv_msg(s, &m, 2000) == 1);
  CHECK_EQ_INT(GP_TLS_WS_TEXT, m.opcode);
  CHECK(m.len == 5 && memcmp(m.data, "hello", 5) == 0);
  /* The largest message, each length encoding, both ways. */
  size_t sizes[] = {0, 125, 126, 65535, 65536};
  unsigned char *big = malloc(65536);
  for (size_t i = 0; i < 65536; i++) big[i] = (unsigned char)(i * 7);
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    REQUIRE(gp_tls_ws_send(s, GP_TLS_WS_BINARY, big, sizes[k]));
    CHECK(gp_tls_ws_flush_wait(s, 2000) == 0);
    REQUIRE(recv_msg(c, &m, 2000) == 1);
    CHECK(m.opcode == GP_TLS_WS_BINARY && m.len == sizes[k] && memcmp(m.data, big, sizes[k]) == 0);
    REQUIRE(gp_tls_ws_send(c, GP_TLS_WS_BINARY, big, sizes[k]));
    CHECK(gp_tls_ws_flush_wait(c, 2000) == 0);
    REQUIRE(recv_msg(s, &m, 2000) == 1);
    CHECK(m.opcode == GP_TLS_WS_BINARY && m.len == sizes[k] && memcmp(m.data, big, sizes[k]) == 0);
  }
  CHECK(!gp_tls_ws_send(c, GP_TLS_WS_BINARY, big, 65537)); /* over the frame bound */
  CHECK(!gp_tls_ws_send(c, GP_TLS_WS_PING, big, 126));     /* a control frame over 125 */
  /* A close is echoed and ends both. */
  gp_tls_ws_close(c, GP_TLS_WS_NORMAL, "bye");
  gp_tls_ws_flush(c);
  REQUIRE(recv_msg(s, &m, 2000) == 1);
  CHECK_EQ_INT(GP_TLS_WS_CLOSE, m.opcode);
  CHECK_EQ_INT(1000, m.code);
  CHECK_EQ_STR("bye", m.reason);
  gp_tls_ws_flush(s);
  REQUIRE(recv_msg(c, &m, 2000) == 1);
  CHECK_EQ_INT(GP_TLS_WS_CLOSE, m.opcode);
  CHECK(!gp_tls_ws_send(c, GP_TLS_WS_TEXT, "x", 1)); /* nothing after a close */
  free(big);
  gp_tls_ws_free(c);
  gp_tls_ws_free(s);
}

/* Writes hand-made frames as they are (each carries its own mask bit and key). */
static void raw(int fd, const void *p, size_t n) { REQUIRE(write(fd, p, n) == (ssize_t)n); }

static void ws_fragments_and_ping(void) {
  int a, b;
  tcp_pair(&a, &b);
  gp_tls_ws *s = gp_tls_ws_new(b, NULL, false, 0);
  /* "Hel" (text, no FIN), a ping "p" in between, "lo" (continuation, FIN); masks zero. */
  const unsigned char f1[] = {0x01, 0x83, 0, 0, 0, 0, 'H', 'e', 'l'};
  const unsigned char f2[] = {0x89, 0x81, 0, 0, 0, 0, 'p'};
  const unsigned char f3[] = {0x80, 0x82, 1, 2, 3, 4, 'l' ^ 1, 'o' ^ 2};
  raw(a, f1, sizeof f1);
  raw(a, f2, sizeof f2);
  raw(a, f3, sizeof f3);
  gp_tls_ws_msg m;
  REQUIRE(recv_msg(s, &m, 2000) == 1);
  CHECK(m.opcode == GP_TLS_WS_TEXT && m.len == 5 && memcmp(m.data, "Hello", 5) == 0);
  CHECK_EQ_INT(0, gp_tls_ws_flush(s));
  unsigned char pong[8];
  CHECK_EQ_INT(3, read(a, pong, sizeof pong));
  CHECK(pong[0] == 0x8A && pong[1] == 1 && pong[2] == 'p');
  gp_tls_ws_free(s);
  close(a);
}

typedef struct bad_case {
  const char *what;
  unsigned char bytes[16];
  size_t len;
  int code;
} bad_case;

static void ws_malformed_frames_close_with_code(void) {
  static const bad_case cases[] = {
      {"unmasked from a client", {0x82, 0x01, 'x'}, 3, 1002},
      {"reserved bit", {0xC2, 0x80, 0, 0, 0, 0}, 6, 1002},
      {"unknown opcode", {0x83, 0x80, 0, 0, 0, 0}, 6, 1002},
      {"long ping", {0x89, 0xFE, 0x00, 0x7E}, 4, 1002},
      {"fragmented ping", {0x09, 0x80, 0, 0, 0, 0}, 6, 1002},
      {"continuation first", {0x80, 0x80, 0, 0, 0, 0}, 6, 1002},
      {"64-bit top bit", {0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1}, 10, 1002},
      {"too big", {0x82, 0xFF, 0, 0, 0, 0, 0, 0x10, 0, 0}, 10, 1009},
      {"short form", {0x82, 0xFE, 0x00, 0x05}, 4, 1002},
      {"bad utf-8", {0x81, 0x82, 0, 0, 0, 0, 0xC0, 0x80}, 8, 1007},
      {"bad close code", {0x88, 0x82, 0, 0, 0, 0, 0x03, 0xED}, 8, 1002},
      {"one-byte close", {0x88, 0x81, 0, 0, 0, 0, 0x03}, 7, 1002},
      {"new message inside one", {0x01, 0x80, 0, 0, 0, 0, 0x01, 0x80, 0, 0, 0, 0}, 12, 1002},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int a, b;
    tcp_pair(&a, &b);
    gp_tls_ws *s = gp_tls_ws_new(b, NULL, false, 0);
    raw(a, cases[i].bytes, cases[i].len);
    gp_tls_ws_msg m;
    int rc = recv_msg(s, &m, 2000);
    if (rc != -1) GP_FAIL_("%s: expected a protocol error, got %d", cases[i].what, rc);
    CHECK_EQ_INT(0, gp_tls_ws_flush(s));
    unsigned char back[200];
    ssize_t n = read(a, back, sizeof back);
    int code = n >= 4 ? back[2] << 8 | back[3] : -1;
    if (n < 4 || back[0] != 0x88 || code != cases[i].code)
      GP_FAIL_("%s: expected close %d, got %zd bytes, code %d", cases[i].what, cases[i].code, n, code);
    gp_tls_ws_free(s);
    close(a);
  }
  /* A server's masked frame, to a client. */
  int a, b;
  tcp_pair(&a, &b);
  gp_tls_ws *c = gp_tls_ws_new(a, NULL, true, 0);
  raw(b, (const unsigned char[]){0x82, 0x80, 0, 0, 0, 0}, 6);
  gp_tls_ws_msg m;
  CHECK_EQ_INT(-1, recv_msg(c, &m, 2000));
  CHECK_CONTAINS(gp_tls_ws_error(c), "masked");
  gp_tls_ws_free(c);
  close(b);
}

/* Random frames, bounded in size: the endpoint parses, fails or waits, never crashes nor
 * reads past its bounds (ASan watches). */
static void ws_random_bytes_never_crash(void) {
  unsigned seed = 12345;
  for (int round = 0; round < 300; round++) {
    int a, b;
    tcp_pair(&a, &b);
    gp_tls_ws *s = gp_tls_ws_new(b, NULL, round & 1, 0);
    unsigned char buf[512];
    size_t n = 2 + (size_t)(rand_r(&seed) % (sizeof buf - 2));
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)rand_r(&seed);
    /* Half the rounds start with a plausible header, to reach deeper branches. */
    if (round % 4 < 2) {
      buf[0] = (unsigned char)((buf[0] & 0x8F) | 0);
      buf[1] = (unsigned char)((round & 1 ? 0 : 0x80) | (buf[1] & 0x7F));
    }
    raw(a, buf, n);
    shutdown(a, SHUT_WR);
    gp_tls_ws_msg m;
    for (int k = 0; k < 64; k++) {
      int rc = recv_msg(s, &m, 200);
      if (rc != 1 || m.opcode == GP_TLS_WS_CLOSE) break;
      CHECK(m.len <= GP_TLS_WS_MSG_MAX);
    }
    gp_tls_ws_flush(s);
    gp_tls_ws_free(s);
    close(a);
  }
}

/* A peer that does not read: sends are refused once the output cap is reached, and the
 * buffer never grows past it. */
static void ws_output_is_bounded(void) {
  int a, b;
  tcp_pair(&a, &b);
  int small = 4096;
  setsockopt(a, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(b, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  gp_tls_ws *c = gp_tls_ws_new(a, NULL, true, 128 * 1024);
  char chunk[16384] = {0};
  size_t queued = 0;
  int refused = 0;
  for (int i = 0; i < 1000 && !refused; i++) {
    if (gp_tls_ws_send(c, GP_TLS_WS_BINARY, chunk, sizeof chunk)) queued += sizeof chunk;
    else refused = 1;
    gp_tls_ws_flush(c);
  }
  CHECK(refused);
  CHECK(queued < 16u << 20); /* what the kernel and the cap hold, not 16 MiB */
  CHECK(!gp_tls_ws_room(c, sizeof chunk));
  gp_tls_ws_free(c);
  close(b);
}

/* ---- the dialer against a hand-written server ---- */

typedef struct fake_srv {
  int listen_fd;
  int mode; /* 0: a good 101; 1: a 403 with a body; 2: a wrong accept; 3: endless headers */
  char request[4096];
} fake_srv;

static void *serve_one(void *arg) {
  fake_srv *f = arg;
  int fd = accept(f->listen_fd, NULL, NULL);
  if (fd < 0) return NULL;
  size_t n = 0;
  while (n < sizeof f->request - 1 && !strstr(f->request, "\r\n\r\n")) {
    ssize_t k = read(fd, f->request + n, sizeof f->request - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
    f->request[n] = '\0';
  }
  const char *kh = strstr(f->request, "Sec-WebSocket-Key: ");
  char key[25] = "", acc[GP_TLS_WS_ACCEPT_LEN + 1] = "";
  if (kh) snprintf(key, sizeof key, "%.24s", kh + 19);
  gp_tls_ws_accept_key(key, acc);
  char out[512];
  if (f->mode == 0) {
    /* The answer and a first frame in one write: the dialer must keep the frame. */
    int k = snprintf(out, sizeof out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n\x82\x02hi", acc);
    raw(fd, out, (size_t)k);
  } else if (f->mode == 1) {
    const char *body = "{\"error\":{\"code\":\"permission_denied\"}}";
    int k = snprintf(out, sizeof out, "HTTP/1.1 403 Forbidden\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body);
    raw(fd, out, (size_t)k);
  } else if (f->mode == 2) {
    int k = snprintf(out, sizeof out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n");
    raw(fd, out, (size_t)k);
  } else {
    raw(fd, "HTTP/1.1 101 OK\r\n", 17);
    char line[64];
    memset(line, 'x', sizeof line);
    line[62] = '\r';
    line[63] = '\n';
    for (int i = 0; i < 1000; i++)
      if (write(fd, line, sizeof line) < 0) break;
  }
  usleep(100000);
  close(fd);
  return NULL;
}

static void dial_mode(int mode, int *rc, gp_tls_ws **w, gp_tls_ws_refusal *ref, fake_srv *f, gp_err *e) {
  f->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  f->mode = mode;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(f->listen_fd, 1) == 0);
  socklen_t sl = sizeof sa;
  getsockname(f->listen_fd, (struct sockaddr *)&sa, &sl);
  pthread_t t;
  pthread_create(&t, NULL, serve_one, f);
  char base[64];
  snprintf(base, sizeof base, "http://127.0.0.1:%d/pre/", ntohs(sa.sin_port));
  *rc = gp_tls_ws_dial(base, "/v1/x?y=1", "tok", NULL, 2000, w, ref, e);
  pthread_join(t, NULL);
  close(f->listen_fd);
}

static void ws_dial_checks_the_answer(void) {
  fake_srv f = {0};
  gp_tls_ws *w = NULL;
  gp_tls_ws_refusal ref = {0};
  gp_err e = {0};
  int rc;
  dial_mode(0, &rc, &w, &ref, &f, &e);
  CHECK_EQ_INT(0, rc);
  CHECK_CONTAINS(f.request, "GET /pre/v1/x?y=1 HTTP/1.1\r\n");
  CHECK_CONTAINS(f.request, "Authorization: Bearer tok\r\n");
  CHECK_CONTAINS(f.request, "Sec-WebSocket-Version: 13\r\n");
  gp_tls_ws_msg m;
  REQUIRE(w && recv_msg(w, &m, 2000) == 1);
  CHECK(m.len == 2 && memcmp(m.data, "hi", 2) == 0);
  gp_tls_ws_free(w);
  w = NULL;
  memset(&f, 0, sizeof f);
  dial_mode(1, &rc, &w, &ref, &f, &e);
  CHECK_EQ_INT(GP_EPERM, rc);
  CHECK_EQ_INT(403, ref.status);
  CHECK_CONTAINS(ref.body, "permission_denied");
  CHECK(!w);
  memset(&f, 0, sizeof f);
  dial_mode(2, &rc, &w, &ref, &f, &e);
  CHECK_EQ_INT(GP_EIO, rc);
  CHECK_CONTAINS(e.message, "Sec-WebSocket-Accept");
  memset(&f, 0, sizeof f);
  dial_mode(3, &rc, &w, &ref, &f, &e);
  CHECK_EQ_INT(GP_EIO, rc);
  CHECK_CONTAINS(e.message, "8 KiB");
  gp_tls_ws *none = NULL;
  CHECK_EQ_INT(GP_EINVAL, gp_tls_ws_dial("ftp://x", "/", NULL, NULL, 100, &none, &ref, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_tls_ws_dial("http://127.0.0.1:1", "/a\r\nX: y", NULL, NULL, 100, &none, &ref, &e));
  CHECK_EQ_INT(GP_EINVAL, gp_tls_ws_dial("http://127.0.0.1:1", "/", "a\nb", NULL, 100, &none, &ref, &e));
  CHECK_EQ_INT(GP_EIO, gp_tls_ws_dial("http://127.0.0.1:1", "/", NULL, NULL, 500, &none, &ref, &e));
}

/* ---- the accepting side, on a libmicrohttpd daemon (ws_upgrade.c) ---- */

static int runs, dones; /* what the upgraded thread did, read under the lock */
static pthread_mutex_t up_lock = PTHREAD_MUTEX_INITIALIZER;

/* Echoes the first message, then returns (the helper closes the socket). */
static void echo_run(void *arg, gp_tls_ws *w) {
  (void)arg;
  pthread_mutex_lock(&up_lock);
  runs++;
  pthread_mutex_unlock(&up_lock);
  gp_tls_ws_msg m;
  if (recv_msg(w, &m, 2000) == 1 && m.opcode == GP_TLS_WS_TEXT) {
    gp_tls_ws_send(w, GP_TLS_WS_TEXT, m.data, m.len);
    gp_tls_ws_flush_wait(w, 1000);
  }
}

static void count_done(void *arg) {
  (void)arg;
  pthread_mutex_lock(&up_lock);
  dones++;
  pthread_mutex_unlock(&up_lock);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *data, size_t *size, void **req) {
  (void)cls, (void)url, (void)method, (void)version, (void)data, (void)size, (void)req;
  char accept[GP_TLS_WS_ACCEPT_LEN + 1];
  const char *why;
  const char *bad = gp_tls_ws_upgrade_check(c, accept, &why);
  if (!bad) return gp_tls_ws_upgrade(c, accept, 256 * 1024, echo_run, count_done, NULL);
  char body[200];
  int n = snprintf(body, sizeof body, "%s: %s", bad, why);
  struct MHD_Response *r = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
  enum MHD_Result ok = MHD_queue_response(c, 400, r);
  MHD_destroy_response(r);
  return ok;
}

static struct MHD_Daemon *upgrade_daemon(int *port) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_UPGRADE, 0, NULL, NULL,
                                          on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                          MHD_OPTION_END);
  REQUIRE(d);
  *port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
  return d;
}

static int counted(int *what) {
  pthread_mutex_lock(&up_lock);
  int v = *what;
  pthread_mutex_unlock(&up_lock);
  return v;
}

/* A raw request on a fresh connection (with what follows it in the same write); the
 * answer's bytes until the peer closes or 2 s pass. */
static void raw_exchange(int port, const char *req, size_t len, char *out, size_t cap) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
  raw(fd, req, len);
  size_t n = 0;
  struct pollfd pf = {.fd = fd, .events = POLLIN};
  while (n < cap - 1 && poll(&pf, 1, 2000) == 1) {
    ssize_t k = read(fd, out + n, cap - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
  }
  out[n] = '\0';
  close(fd);
}

static void ws_upgrade_echoes_then_gives_back(void) {
  int port;
  struct MHD_Daemon *d = upgrade_daemon(&port);
  char base[64];
  snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
  gp_tls_ws *w = NULL;
  gp_tls_ws_refusal ref = {0};
  gp_err e = {0};
  REQUIRE(gp_tls_ws_dial(base, "/s", NULL, NULL, 2000, &w, &ref, &e) == 0);
  REQUIRE(gp_tls_ws_send(w, GP_TLS_WS_TEXT, "hello", 5));
  gp_tls_ws_msg m;
  REQUIRE(recv_msg(w, &m, 2000) == 1);
  CHECK(m.opcode == GP_TLS_WS_TEXT && m.len == 5 && memcmp(m.data, "hello", 5) == 0);
  gp_tls_ws_free(w);
  for (int i = 0; i < 200 && counted(&dones) < 1; i++) usleep(10000);
  CHECK_EQ_INT(1, counted(&runs));
  CHECK_EQ_INT(1, counted(&dones));
  MHD_stop_daemon(d);
}

static void ws_upgrade_keeps_the_bytes_after_the_handshake(void) {
  int port;
  struct MHD_Daemon *d = upgrade_daemon(&port);
  /* The handshake and a masked text frame ("hey", mask 0) in one write. */
  static const char req[] = "GET /s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
                            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
                            "\x81\x83\0\0\0\0hey";
  char out[1024];
  raw_exchange(port, req, sizeof req - 1, out, sizeof out);
  CHECK_CONTAINS(out, "HTTP/1.1 101");
  CHECK_CONTAINS(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  const char *body = strstr(out, "\r\n\r\n");
  REQUIRE(body);
  CHECK(memcmp(body + 4, "\x81\x03hey", 5) == 0);
  for (int i = 0; i < 200 && counted(&dones) < 1; i++) usleep(10000);
  CHECK_EQ_INT(1, counted(&dones));
  MHD_stop_daemon(d);
}

static void ws_upgrade_check_names_the_header(void) {
  int port;
  struct MHD_Daemon *d = upgrade_daemon(&port);
  static const struct {
    const char *headers, *want;
  } cases[] = {
      {"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
       "Upgrade: a session is a WebSocket"},
      {"Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Version: 13\r\n"
       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
       "Upgrade: a session is a WebSocket"},
      {"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 12\r\n"
       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
       "Sec-WebSocket-Version: Sec-WebSocket-Version must be 13"},
      {"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short\r\n",
       "Sec-WebSocket-Key: Sec-WebSocket-Key must be the base64 of 16 bytes"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char req[512], out[1024];
    int n = snprintf(req, sizeof req, "GET /s HTTP/1.1\r\nHost: x\r\n%s\r\n", cases[i].headers);
    REQUIRE(n > 0 && (size_t)n < sizeof req);
    raw_exchange(port, req, (size_t)n, out, sizeof out);
    CHECK_CONTAINS(out, "HTTP/1.1 400");
    CHECK_CONTAINS(out, cases[i].want);
  }
  CHECK_EQ_INT(0, counted(&runs));
  CHECK_EQ_INT(0, counted(&dones));
  MHD_stop_daemon(d);
}

GP_TESTS(ws_accept_key_matches_rfc, ws_messages_both_ways, ws_fragments_and_ping,
         ws_malformed_frames_close_with_code, ws_random_bytes_never_crash, ws_output_is_bounded,
         ws_dial_checks_the_answer, ws_upgrade_echoes_then_gives_back,
         ws_upgrade_keeps_the_bytes_after_the_handshake, ws_upgrade_check_names_the_header)
