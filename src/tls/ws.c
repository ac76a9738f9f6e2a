/* SPDX-License-Identifier: Apache-2.0 */
/* WebSocket framing over a socket or a TLS session, with bounded buffers (ws.h). */
#include "tls/ws.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/mem.h"

/* Four frames' worth: one read takes several frames of a bulk stream (fewer system calls
 * per byte); still a fixed bound. */
#define IN_CAP (4 * (GP_TLS_WS_FRAME_MAX + GP_TLS_WS_HDR_MAX))

struct gp_tls_ws {
  int fd;
  gnutls_session_t tls;
  gnutls_certificate_credentials_t cred;
  bool client;
  bool keep_fd;
  bool tls_again;          /* the last TLS send said "again": resend with (NULL, 0) */
  uint8_t *in;             /* bytes read, not parsed; IN_CAP */
  size_t in_len;
  size_t consumed;         /* bytes of the frame last returned, dropped at the next call */
  uint8_t *out;            /* encoded frames not yet written */
  size_t out_off, out_len, out_cap;
  uint8_t *msg;            /* a fragmented message being reassembled (lazily allocated) */
  size_t msg_len;
  int msg_op;              /* its opcode, 0: none in progress */
  uint8_t pong[125];       /* the answer owed to the latest ping */
  size_t pong_len;
  bool pong_owed;
  bool close_sent;
  bool broken;
  char error[160];
};

gp_tls_ws *gp_tls_ws_new(int fd, void *tls, bool client, size_t out_cap) {
  gp_tls_ws *w = gp_xcalloc(1, sizeof *w);
  w->fd = fd;
  w->tls = tls;
  w->client = client;
  w->in = gp_xmalloc(IN_CAP);
  if (out_cap < IN_CAP) out_cap = IN_CAP;
  w->out_cap = out_cap;
  w->out = gp_xmalloc(out_cap);
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  return w;
}

void gp_tls_ws_free(gp_tls_ws *w) {
  if (!w) return;
  if (w->tls) gnutls_deinit(w->tls);
  if (w->cred) gnutls_certificate_free_credentials(w->cred);
  if (w->fd >= 0 && !w->keep_fd) close(w->fd);
  free(w->in);
  free(w->out);
  free(w->msg);
  free(w);
}

void gp_tls_ws_keep_fd(gp_tls_ws *w) { w->keep_fd = true; }

void gp_tls_ws_own_cred(gp_tls_ws *w, void *cred) { w->cred = cred; }

void gp_tls_ws_preload(gp_tls_ws *w, const void *data, size_t len) {
  if (len > IN_CAP - w->in_len) len = IN_CAP - w->in_len; /* the dialer bounds it below this */
  memcpy(w->in + w->in_len, data, len);
  w->in_len += len;
}

int gp_tls_ws_fd(const gp_tls_ws *w) { return w->fd; }

const char *gp_tls_ws_error(const gp_tls_ws *w) { return w->error; }

bool gp_tls_ws_close_sent(const gp_tls_ws *w) { return w->close_sent; }

static void drop_consumed(gp_tls_ws *w) {
  if (!w->consumed) return;
  memmove(w->in, w->in + w->consumed, w->in_len - w->consumed);
  w->in_len -= w->consumed;
  w->consumed = 0;
}

long gp_tls_ws_read(gp_tls_ws *w) {
  drop_consumed(w);
  size_t room = IN_CAP - w->in_len;
  if (!room) return -1;
  if (w->tls) {
    ssize_t n = gnutls_record_recv(w->tls, w->in + w->in_len, room);
    if (n > 0) {
      w->in_len += (size_t)n;
      return (long)n;
    }
    if (n == 0 || n == GNUTLS_E_PREMATURE_TERMINATION) return 0;
    if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) return -1;
    return -2;
  }
  for (;;) {
    ssize_t n = recv(w->fd, w->in + w->in_len, room, 0);
    if (n > 0) {
      w->in_len += (size_t)n;
      return (long)n;
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
  }
}

bool gp_tls_ws_wants_read(const gp_tls_ws *w) { return w->in_len - w->consumed < IN_CAP && !w->broken; }

bool gp_tls_ws_wants_write(const gp_tls_ws *w) { return w->out_len > w->out_off || w->pong_owed || w->tls_again; }

bool gp_tls_ws_buffered(const gp_tls_ws *w) { return w->tls && gnutls_record_check_pending(w->tls) > 0; }

/* ---- output ---- */

bool gp_tls_ws_room(const gp_tls_ws *w, size_t len) {
  return w->out_cap - (w->out_len - w->out_off) >= len + GP_TLS_WS_HDR_MAX;
}

static bool queue_frame(gp_tls_ws *w, int opcode, const void *data, size_t len) {
  if (!gp_tls_ws_room(w, len)) return false;
  if (w->out_off && w->out_cap - w->out_len < len + GP_TLS_WS_HDR_MAX) { /* compact */
    memmove(w->out, w->out + w->out_off, w->out_len - w->out_off);
    w->out_len -= w->out_off;
    w->out_off = 0;
  }
  uint8_t *p = w->out + w->out_len;
  size_t h = 0;
  p[h++] = (uint8_t)(0x80 | (opcode & 0x0F));
  uint8_t maskbit = w->client ? 0x80 : 0;
  if (len < 126) p[h++] = (uint8_t)(maskbit | len);
  else if (len <= 0xFFFF) {
    p[h++] = (uint8_t)(maskbit | 126);
    p[h++] = (uint8_t)(len >> 8);
    p[h++] = (uint8_t)len;
  } else {
    p[h++] = (uint8_t)(maskbit | 127);
    for (int i = 7; i >= 0; i--) p[h++] = (uint8_t)((uint64_t)len >> (8 * i));
  }
  uint8_t key[4] = {0};
  if (w->client) {
    /* A fresh key per frame (RFC 6455 §5.3): the mask guards proxies on the path. */
    if (gnutls_rnd(GNUTLS_RND_NONCE, key, sizeof key) != 0) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      memcpy(key, &ts.tv_nsec, sizeof key);
    }
    memcpy(p + h, key, 4);
    h += 4;
  }
  if (len) memcpy(p + h, data, len);
  if (w->client)
    for (size_t i = 0; i < len; i++) p[h + i] ^= key[i & 3];
  w->out_len += h + len;
  return true;
}

bool gp_tls_ws_send(gp_tls_ws *w, int opcode, const void *data, size_t len) {
  if (w->close_sent || len > GP_TLS_WS_FRAME_MAX || (opcode >= 0x8 && len > 125)) return false;
  return queue_frame(w, opcode, data, len);
}

void gp_tls_ws_close(gp_tls_ws *w, int code, const char *reason) {
  if (w->close_sent) return;
  uint8_t b[125];
  size_t rl = reason ? strlen(reason) : 0;
  if (rl > 123) rl = 123;
  b[0] = (uint8_t)(code >> 8);
  b[1] = (uint8_t)code;
  if (rl) memcpy(b + 2, reason, rl);
  /* A close must go out even when the buffer is full of data: room is made for it by
   * dropping nothing but waiting; when there is none, the close is the last frame anyway
   * and the connection is ended by its owner. */
  if (queue_frame(w, GP_TLS_WS_CLOSE, b, rl + 2)) w->close_sent = true;
  else w->close_sent = true, w->broken = true;
}

static int write_some(gp_tls_ws *w, const uint8_t *p, size_t n) {
  if (w->tls) {
    ssize_t k = w->tls_again ? gnutls_record_send(w->tls, NULL, 0) : gnutls_record_send(w->tls, p, n);
    if (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED) {
      w->tls_again = true;
      return -1;
    }
    w->tls_again = false;
    return k < 0 ? -2 : (int)k;
  }
  for (;;) {
    ssize_t k = send(w->fd, p, n, MSG_NOSIGNAL);
    if (k >= 0) return (int)k;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
  }
}

int gp_tls_ws_flush(gp_tls_ws *w) {
  if (w->pong_owed && !w->close_sent && queue_frame(w, GP_TLS_WS_PONG, w->pong, w->pong_len)) w->pong_owed = false;
  while (w->out_len > w->out_off || w->tls_again) {
    size_t n = w->out_len - w->out_off;
    if (n > 1 << 16) n = 1 << 16; /* a TLS record's worth at a time */
    int k = write_some(w, w->out + w->out_off, n);
    if (k == -1) return 1;
    if (k < 0) return -1;
    w->out_off += (size_t)k;
  }
  w->out_off = w->out_len = 0;
  return 0;
}

int gp_tls_ws_flush_wait(gp_tls_ws *w, int timeout_ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int rc = gp_tls_ws_flush(w);
    if (rc <= 0) return rc;
    clock_gettime(CLOCK_MONOTONIC, &t);
    long left = timeout_ms - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) return 1;
    struct pollfd pf = {.fd = w->fd, .events = POLLOUT};
    if (poll(&pf, 1, (int)left) < 0 && errno != EINTR) return -1;
  }
}

/* ---- input ---- */

static int fail(gp_tls_ws *w, int code, const char *why) {
  snprintf(w->error, sizeof w->error, "%s", why);
  gp_tls_ws_close(w, code, why);
  w->broken = true;
  return -1;
}

static bool utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t k;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) k = 1, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) k = 2, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) k = 3, cp = c & 0x07;
    else return false;
    for (size_t j = 1; j <= k; j++) {
      if (i + j >= n || (s[i + j] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += k + 1;
  }
  return true;
}

static int deliver(gp_tls_ws *w, gp_tls_ws_msg *m, int op, const uint8_t *data, size_t len) {
  if (op == GP_TLS_WS_TEXT && !utf8_valid(data, len)) return fail(w, GP_TLS_WS_BAD_DATA, "a text message is not UTF-8");
  m->opcode = op;
  m->data = data;
  m->len = len;
  m->code = 0;
  m->reason[0] = '\0';
  return 1;
}

int gp_tls_ws_next(gp_tls_ws *w, gp_tls_ws_msg *m) {
  drop_consumed(w);
  for (;;) {
    if (w->broken) return -1;
    if (w->in_len < 2) return 0;
    const uint8_t *p = w->in;
    bool fin = p[0] & 0x80, masked = p[1] & 0x80;
    int op = p[0] & 0x0F;
    if (p[0] & 0x70) return fail(w, GP_TLS_WS_PROTOCOL, "a frame sets reserved bits (no extension was agreed)");
    if (op != GP_TLS_WS_CONT && op != GP_TLS_WS_TEXT && op != GP_TLS_WS_BINARY && op != GP_TLS_WS_CLOSE &&
        op != GP_TLS_WS_PING && op != GP_TLS_WS_PONG)
      return fail(w, GP_TLS_WS_PROTOCOL, "a frame has an unknown opcode");
    if (masked != !w->client)
      return fail(w, GP_TLS_WS_PROTOCOL, w->client ? "the server masked a frame" : "the client sent an unmasked frame");
    uint64_t len = p[1] & 0x7F;
    size_t h = 2;
    if (len == 126) {
      if (w->in_len < 4) return 0;
      len = ((uint64_t)p[2] << 8) | p[3];
      h = 4;
      if (len < 126) return fail(w, GP_TLS_WS_PROTOCOL, "a frame's length is not in its shortest form");
    } else if (len == 127) {
      if (w->in_len < 10) return 0;
      len = 0;
      for (int i = 0; i < 8; i++) len = (len << 8) | p[2 + i];
      h = 10;
      if (len >> 63) return fail(w, GP_TLS_WS_PROTOCOL, "a frame's 64-bit length has its top bit set");
      if (len <= 0xFFFF) return fail(w, GP_TLS_WS_PROTOCOL, "a frame's length is not in its shortest form");
    }
    bool control = op >= 0x8;
    if (control && (len > 125 || !fin))
      return fail(w, GP_TLS_WS_PROTOCOL, "a control frame is fragmented or longer than 125 bytes");
    if (len > GP_TLS_WS_FRAME_MAX) return fail(w, GP_TLS_WS_TOO_BIG, "a frame is larger than 65536 bytes");
    if (masked) h += 4;
    if (w->in_len < h + len) return 0;
    uint8_t *data = w->in + h;
    if (masked)
      for (size_t i = 0; i < len; i++) data[i] ^= p[h - 4 + (i & 3)];
    w->consumed = h + (size_t)len;
    if (op == GP_TLS_WS_PING) {
      memcpy(w->pong, data, (size_t)len);
      w->pong_len = (size_t)len;
      w->pong_owed = true;
      if (!w->close_sent && queue_frame(w, GP_TLS_WS_PONG, w->pong, w->pong_len)) w->pong_owed = false;
      drop_consumed(w);
      continue;
    }
    if (op == GP_TLS_WS_PONG) {
      drop_consumed(w);
      continue;
    }
    if (op == GP_TLS_WS_CLOSE) {
      if (len == 1) return fail(w, GP_TLS_WS_PROTOCOL, "a close frame has a one-byte body");
      int code = len >= 2 ? (data[0] << 8) | data[1] : GP_TLS_WS_NORMAL;
      bool code_ok = (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) || (code >= 3000 && code <= 4999);
      if (!code_ok) return fail(w, GP_TLS_WS_PROTOCOL, "a close frame has an invalid code");
      if (len > 2 && !utf8_valid(data + 2, (size_t)len - 2))
        return fail(w, GP_TLS_WS_BAD_DATA, "a close frame's reason is not UTF-8");
      m->opcode = GP_TLS_WS_CLOSE;
      m->data = data;
      m->len = (size_t)len;
      m->code = code;
      snprintf(m->reason, sizeof m->reason, "%.*s", (int)(len > 2 ? len - 2 : 0), (const char *)data + 2);
      gp_tls_ws_close(w, code == GP_TLS_WS_NORMAL || code == GP_TLS_WS_GOING_AWAY ? code : GP_TLS_WS_NORMAL, NULL);
      w->broken = true; /* nothing is read after a close */
      return 1;
    }
    if (op == GP_TLS_WS_CONT) {
      if (!w->msg_op) return fail(w, GP_TLS_WS_PROTOCOL, "a continuation frame without a message to continue");
      if (w->msg_len + len > GP_TLS_WS_MSG_MAX) return fail(w, GP_TLS_WS_TOO_BIG, "a message is larger than 65536 bytes");
      if (!w->msg) w->msg = gp_xmalloc(GP_TLS_WS_MSG_MAX);
      memcpy(w->msg + w->msg_len, data, (size_t)len);
      w->msg_len += (size_t)len;
      if (!fin) {
        drop_consumed(w);
        continue;
      }
      int mop = w->msg_op;
      w->msg_op = 0;
      size_t ml = w->msg_len;
      w->msg_len = 0;
      return deliver(w, m, mop, w->msg, ml);
    }
    /* TEXT or BINARY */
    if (w->msg_op) return fail(w, GP_TLS_WS_PROTOCOL, "a new message began before the last one ended");
    if (fin) return deliver(w, m, op, data, (size_t)len);
    if (!w->msg) w->msg = gp_xmalloc(GP_TLS_WS_MSG_MAX);
    memcpy(w->msg, data, (size_t)len);
    w->msg_len = (size_t)len;
    w->msg_op = op;
    drop_consumed(w);
  }
}

/* ---- handshake keys ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(const uint8_t *in, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
    out[o++] = b64[(v >> 18) & 63];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < n ? b64[v & 63] : '=';
  }
  out[o] = '\0';
}

int gp_tls_ws_accept_key(const char *key, char out[GP_TLS_WS_ACCEPT_LEN + 1]) {
  out[0] = '\0';
  /* 16 bytes in base64: 22 characters of the alphabet and "==", the 22nd one with its
   * low four bits zero. */
  if (!key || strlen(key) != GP_TLS_WS_KEY_LEN || strcmp(key + 22, "==") != 0) return -1;
  for (int i = 0; i < 22; i++)
    if (!strchr(b64, key[i]) || !key[i]) return -1;
  if ((strchr(b64, key[21]) - b64) & 15) return -1;
  static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  char cat[GP_TLS_WS_KEY_LEN + sizeof guid];
  snprintf(cat, sizeof cat, "%s%s", key, guid);
  uint8_t d[20];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA1, cat, strlen(cat), d) != 0) return -1;
  b64_encode(d, sizeof d, out);
  return 0;
}

int gp_tls_ws_new_key(char out[GP_TLS_WS_KEY_LEN + 1]) {
  uint8_t r[16];
  if (gnutls_rnd(GNUTLS_RND_NONCE, r, sizeof r) != 0) return -1;
  b64_encode(r, sizeof r, out);
  return 0;
}
