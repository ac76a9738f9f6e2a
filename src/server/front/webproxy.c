/* SPDX-License-Identifier: Apache-2.0 */
/* The relay of one request under a console link (webproxy.h): a thread dials the job
 * task's agent like a port-forward session, sends the request as HTTP/1.0 (so the answer
 * ends with the connection, never chunked), reads the app's head, and hands it to the
 * suspended client connection; the body then streams through a bounded buffer, the client
 * connection suspended while the buffer is empty and the app not read while it is full. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "protocol/session.h"
#include "server/workloads/sessions.h"
#include "server/front/webproxy.h"
#include "tls/ws.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/thread.h"

#define HEAD_MS 30000       /* for the app's head, once the request is sent */
#define IDLE_MS 60000       /* without a byte either way while the body streams */
#define HEAD_MAX (64 * 1024)
#define RING_CAP (256 * 1024)
#define MAX_HDRS 100
#define OUT_CAP (2 * GP_TLS_WS_MSG_MAX + 64)

typedef struct gp_srv_wp {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int refs;                  /* the thread, the request, the response */
  gp_srv_sessions *S;
  struct MHD_Connection *c;
  char *spec;
  int port;
  gp_buf req;                /* the request as the app gets it */
  /* The head (set once, before head_done). */
  bool head_done;
  int status;
  char *error;               /* no head: why (status 502/504) */
  int n_hdr;
  char *hdr[2 * MAX_HDRS];   /* name, value */
  int64_t length;            /* Content-Length, -1: until the app closes */
  /* The body. */
  uint8_t *ring;
  size_t off, len;
  bool eof, failed, suspended, gone;
} gp_srv_wp;

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wp_release(gp_srv_wp *wp) {
  pthread_mutex_lock(&wp->lock);
  int left = --wp->refs;
  pthread_mutex_unlock(&wp->lock);
  if (left) return;
  for (int i = 0; i < 2 * wp->n_hdr; i++) free(wp->hdr[i]);
  free(wp->error);
  free(wp->spec);
  free(wp->ring);
  gp_buf_done(&wp->req);
  pthread_mutex_destroy(&wp->lock);
  pthread_cond_destroy(&wp->cond);
  free(wp);
}

/* Resumes the client connection if the relay suspended it. The connection stays suspended
 * until this resume (libmicrohttpd never closes a suspended one), so it is alive here. */
static void wake(gp_srv_wp *wp) {
  pthread_mutex_lock(&wp->lock);
  bool was = wp->suspended;
  wp->suspended = false;
  pthread_mutex_unlock(&wp->lock);
  if (was) MHD_resume_connection(wp->c);
}

static void head_fail(gp_srv_wp *wp, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void head_fail(gp_srv_wp *wp, int status, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&wp->lock);
  wp->status = status;
  wp->error = gp_xstrdup(msg);
  wp->head_done = true;
  pthread_mutex_unlock(&wp->lock);
  wake(wp);
}

/* The next message from the agent: 1 (*m set), 0 past `deadline`, -1 when the agent closed
 * or broke the protocol, -2 when the server stops. */
static int next_msg(gp_srv_wp *wp, gp_tls_ws *a, gp_tls_ws_msg *m, int64_t deadline) {
  for (;;) {
    if (gp__srv_sessions_stopping(wp->S)) return -2;
    int rc = gp_tls_ws_next(a, m);
    if (rc == 1) return 1;
    if (rc < 0 || gp_tls_ws_flush(a) < 0) return -1;
    if (mono_ms() >= deadline) return 0;
    bool buffered = gp_tls_ws_buffered(a);
    struct pollfd pf = {.fd = gp_tls_ws_fd(a), .events = (short)(POLLIN | (gp_tls_ws_wants_write(a) ? POLLOUT : 0))};
    if (poll(&pf, 1, buffered ? 0 : 100) < 0 && errno != EINTR) return -1;
    if ((pf.revents & (POLLIN | POLLHUP | POLLERR)) || buffered) {
      long k = gp_tls_ws_read(a);
      if (k == 0 || k == -2) return gp_tls_ws_next(a, m) == 1 ? 1 : -1;
    }
  }
}

/* Sends the request in stdin messages, waiting for room. 0, or -1 when the agent went. */
static int send_request(gp_srv_wp *wp, gp_tls_ws *a) {
  uint8_t *chunk = gp_xmalloc(GP_TLS_WS_MSG_MAX);
  int64_t deadline = mono_ms() + HEAD_MS;
  int rc = 0;
  for (size_t at = 0; at < wp->req.len && !rc;) {
    size_t n = wp->req.len - at;
    if (n > GP_TLS_WS_MSG_MAX - 1) n = GP_TLS_WS_MSG_MAX - 1;
    chunk[0] = GP_PROTO_SES_STDIN;
    memcpy(chunk + 1, wp->req.data + at, n);
    if (gp_tls_ws_send(a, GP_TLS_WS_BINARY, chunk, n + 1)) {
      at += n;
      continue;
    }
    if (gp_tls_ws_flush_wait(a, 100) < 0 && gp_tls_ws_flush(a) < 0) rc = -1;
    if (mono_ms() > deadline || gp__srv_sessions_stopping(wp->S)) rc = -1;
  }
  free(chunk);
  return rc || gp_tls_ws_flush(a) < 0 ? -1 : 0;
}

static bool hop_or_origin_wide(const char *name) {
  static const char *const drop[] = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                                     "proxy-connection", "te", "trailer", "trailers", "transfer-encoding", "upgrade",
                                     "content-length", "set-cookie", "set-cookie2", "strict-transport-security",
                                     "clear-site-data", "date", "referrer-policy", "alt-svc", "public-key-pins",
                                     "service-worker-allowed", NULL};
  for (int i = 0; drop[i]; i++)
    if (strcasecmp(name, drop[i]) == 0) return true;
  return false;
}

/* Parses the app's head (untrusted). 0, or -1 with a 502's message. */
static int parse_head(gp_srv_wp *wp, char *h, char *why, size_t cap) {
  char *line = h, *eol = strstr(line, "\r\n");
  *eol = '\0';
  int status = 0;
  if (strncmp(line, "HTTP/1.", 7) != 0 || strlen(line) < 12 || line[8] != ' ' ||
      strspn(line + 9, "0123456789") != 3 || (line[12] != ' ' && line[12] != '\0')) {
    snprintf(why, cap, "the app on port %d did not answer HTTP (its first line: %.80s)", wp->port, line);
    return -1;
  }
  status = atoi(line + 9);
  if (status < 200 || status > 599) {
    snprintf(why, cap, "the app on port %d answered status %d, which a link does not relay", wp->port, status);
    return -1;
  }
  wp->status = status;
  wp->length = -1;
  for (line = eol + 2; *line; line = eol + 2) {
    eol = strstr(line, "\r\n");
    *eol = '\0';
    char *colon = strchr(line, ':');
    size_t nl = colon ? (size_t)(colon - line) : 0;
    if (!colon || nl == 0 || strspn(line, "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != nl) {
      snprintf(why, cap, "the app on port %d sent a malformed header line: %.80s", wp->port, line);
      return -1;
    }
    *colon = '\0';
    char *v = colon + 1;
    v += strspn(v, " \t");
    for (char *q = v; *q; q++)
      if ((unsigned char)*q < 0x20 && *q != '\t') {
        snprintf(why, cap, "the app on port %d sent a control character in header %.60s", wp->port, line);
        return -1;
      }
    if (strcasecmp(line, "transfer-encoding") == 0 && strcasecmp(v, "identity") != 0) {
      snprintf(why, cap, "the app on port %d answered an HTTP/1.0 request with Transfer-Encoding %.40s", wp->port, v);
      return -1;
    }
    if (strcasecmp(line, "content-length") == 0) {
      size_t dl = strlen(v);
      while (dl && (v[dl - 1] == ' ' || v[dl - 1] == '\t')) v[--dl] = '\0';
      if (dl == 0 || dl > 15 || strspn(v, "0123456789") != dl) {
        snprintf(why, cap, "the app on port %d sent Content-Length %.40s", wp->port, v);
        return -1;
      }
      wp->length = strtoll(v, NULL, 10);
    }
    if (hop_or_origin_wide(line)) continue;
    if (wp->n_hdr >= MAX_HDRS) {
      snprintf(why, cap, "the app on port %d sent more than %d headers", wp->port, MAX_HDRS);
      return -1;
    }
    wp->hdr[2 * wp->n_hdr] = gp_xstrdup(line);
    wp->hdr[2 * wp->n_hdr + 1] = gp_xstrdup(v);
    wp->n_hdr++;
  }
  return 0;
}

/* A status message (channel 3) from the agent: an error's text, or NULL for an exit. */
static char *status_error(const gp_tls_ws_msg *m) {
  json_t *o = json_loadb((const char *)m->data + 1, m->len - 1, 0, NULL);
  const char *e = json_string_value(json_object_get(o, "error"));
  char *out = e ? gp_xstrdup(e) : NULL;
  json_decref(o);
  return out;
}

/* Reads the app's head; the bytes after it start the body. 0, or -1 (head_fail called). */
static int read_head(gp_srv_wp *wp, gp_tls_ws *a, const char *node) {
  gp_buf h;
  gp_buf_init(&h, HEAD_MAX + GP_TLS_WS_MSG_MAX);
  int64_t deadline = mono_ms() + HEAD_MS;
  char *end = NULL;
  int rc = -1;
  for (;;) {
    gp_tls_ws_msg m;
    int k = next_msg(wp, a, &m, deadline);
    if (k == 0) {
      head_fail(wp, 504, "the app on port %d did not answer within %d s", wp->port, HEAD_MS / 1000);
      break;
    }
    if (k == -2) {
      head_fail(wp, 503, "the server is stopping");
      break;
    }
    if (k < 0 || m.opcode == GP_TLS_WS_CLOSE) {
      head_fail(wp, 502, "the app on port %d closed without an answer (node %s)", wp->port, node);
      break;
    }
    if (m.opcode != GP_TLS_WS_BINARY || m.len < 1) continue;
    if (m.data[0] == GP_PROTO_SES_STATUS) {
      char *e = status_error(&m);
      head_fail(wp, 502, "%s", e ? e : "the app closed without an answer");
      free(e);
      break;
    }
    if (m.data[0] != GP_PROTO_SES_STDOUT) continue;
    gp_buf_append(&h, (const char *)m.data + 1, m.len - 1); /* kept NUL-ended */
    end = strstr(h.data, "\r\n\r\n");
    if (end || h.len > HEAD_MAX) break;
  }
  if (!wp->head_done && !end)
    head_fail(wp, 502, "the app on port %d sent a head over %d KiB", wp->port, HEAD_MAX / 1024);
  if (end) {
    char why[300];
    size_t hl = (size_t)(end - h.data) + 4;
    end[2] = '\0';
    if (parse_head(wp, h.data, why, sizeof why)) head_fail(wp, 502, "%s", why);
    else {
      pthread_mutex_lock(&wp->lock);
      memcpy(wp->ring, h.data + hl, h.len - hl);
      wp->len = h.len - hl;
      wp->head_done = true;
      pthread_mutex_unlock(&wp->lock);
      wake(wp);
      rc = 0;
    }
  }
  gp_buf_done(&h);
  return rc;
}

/* Moves the body from the agent into the ring until the app closes, the client goes, or
 * nothing moves for IDLE_MS. */
static void stream_body(gp_srv_wp *wp, gp_tls_ws *a) {
  bool failed = false;
  int64_t last = mono_ms();
  for (;;) {
    pthread_mutex_lock(&wp->lock);
    while (!wp->gone && RING_CAP - (wp->len - wp->off) < GP_TLS_WS_MSG_MAX && mono_ms() - last < IDLE_MS) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 100 * 1000000L;
      if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
      size_t before = wp->len - wp->off;
      pthread_cond_timedwait(&wp->cond, &wp->lock, &until);
      if (wp->len - wp->off < before) last = mono_ms();
      if (gp__srv_sessions_stopping(wp->S)) break;
    }
    bool gone = wp->gone, full = RING_CAP - (wp->len - wp->off) < GP_TLS_WS_MSG_MAX;
    if (!full && wp->off) { /* keep what waits at the start: room at the end */
      memmove(wp->ring, wp->ring + wp->off, wp->len - wp->off);
      wp->len -= wp->off;
      wp->off = 0;
    }
    pthread_mutex_unlock(&wp->lock);
    if (gone) return;
    if (full) { /* the client read nothing for IDLE_MS, or the server stops */
      failed = true;
      break;
    }
    gp_tls_ws_msg m;
    int k = next_msg(wp, a, &m, last + IDLE_MS);
    if (k <= 0) {
      failed = k != -1; /* the agent's close ends the body like the app's */
      break;
    }
    last = mono_ms();
    if (m.opcode == GP_TLS_WS_CLOSE) break;
    if (m.opcode != GP_TLS_WS_BINARY || m.len < 1) continue;
    if (m.data[0] == GP_PROTO_SES_STATUS) {
      char *e = status_error(&m);
      failed = e != NULL;
      free(e);
      break;
    }
    if (m.data[0] != GP_PROTO_SES_STDOUT) continue;
    pthread_mutex_lock(&wp->lock);
    memcpy(wp->ring + wp->len, m.data + 1, m.len - 1);
    wp->len += m.len - 1;
    pthread_mutex_unlock(&wp->lock);
    wake(wp);
  }
  pthread_mutex_lock(&wp->lock);
  wp->eof = true;
  wp->failed = failed;
  pthread_mutex_unlock(&wp->lock);
  wake(wp);
}

static void *relay_main(void *arg) {
  gp_srv_wp *wp = arg;
  const char *node;
  gp_tls_ws *a = NULL;
  gp_tls_ws_refusal ref = {0};
  gp_err e = {0};
  int rc = gp__srv_sessions_dial_agent(wp->S, wp->spec, &node, &a, &ref, &e);
  if (rc == GP_EPERM) head_fail(wp, 502, "the agent of node %s refused the link's connection (%d)", node, ref.status);
  else if (rc) head_fail(wp, 502, "cannot reach the agent of node %s: %s", node, e.message);
  else {
    char start[64];
    int sl = snprintf(start, sizeof start, "{\"kind\":\"forward\",\"port\":%d}", wp->port);
    gp_tls_ws_send(a, GP_TLS_WS_TEXT, start, (size_t)sl);
    if (send_request(wp, a)) head_fail(wp, 502, "the connection to the agent of node %s was lost", node);
    else if (read_head(wp, a, node) == 0) stream_body(wp, a);
    gp_tls_ws_close(a, GP_TLS_WS_NORMAL, "done");
    gp_tls_ws_flush_wait(a, 500);
  }
  gp_tls_ws_free(a);
  gp_srv_sessions *S = wp->S;
  wp_release(wp);
  gp__srv_sessions_proxy_leave(S);
  return NULL;
}

/* ---- the client's side, on the HTTP threads ---- */

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  gp_srv_wp *wp = cls;
  pthread_mutex_lock(&wp->lock);
  ssize_t out;
  if (wp->len > wp->off) {
    size_t n = wp->len - wp->off < max ? wp->len - wp->off : max;
    memcpy(buf, wp->ring + wp->off, n);
    wp->off += n;
    if (wp->off == wp->len) wp->off = wp->len = 0;
    pthread_cond_signal(&wp->cond);
    out = (ssize_t)n;
  } else if (wp->eof) out = wp->failed ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
  else { /* nothing yet: the relay resumes the connection when bytes come */
    wp->suspended = true;
    MHD_suspend_connection(wp->c);
    out = 0;
  }
  pthread_mutex_unlock(&wp->lock);
  return out;
}

static void response_gone(void *cls) {
  gp_srv_wp *wp = cls;
  pthread_mutex_lock(&wp->lock);
  wp->gone = true;
  pthread_cond_signal(&wp->cond);
  pthread_mutex_unlock(&wp->lock);
  wp_release(wp);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg) {
  json_t *e = json_pack("{s:{s:s,s:s,s:n}}", "error", "code",
                        status == 504 ? "timeout" : status == 503 ? "unavailable" : status == 400 ? "invalid_argument" : "bad_gateway",
                        "message", msg, "field");
  char *t = json_dumps(e, JSON_COMPACT);
  json_decref(e);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(t), t, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  MHD_add_response_header(r, "Content-Security-Policy", GP_SRV_LINK_CSP);
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static bool request_header_dropped(const char *name) {
  static const char *const drop[] = {"host", "authorization", "cookie", "connection", "keep-alive",
                                     "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding",
                                     "upgrade", "content-length", "expect", NULL};
  for (int i = 0; drop[i]; i++)
    if (strcasecmp(name, drop[i]) == 0) return true;
  return false;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  gp_buf *b = cls;
  if (key && value && !request_header_dropped(key)) gp_buf_printf(b, "%s: %s\r\n", key, value);
  return MHD_YES;
}

static enum MHD_Result start(gp_srv_sessions *S, struct MHD_Connection *c, gp_srv_req *r) {
  /* The app's path: the raw target after /proxy/<capability>/<port>. */
  const char *t = r->target;
  size_t tl = strlen(t);
  bool plain = tl > 7 + 64 + 1 && strspn(t + 7, "0123456789abcdef") == 64 && t[7 + 64] == '/';
  const char *rest = plain ? t + 7 + 64 + 1 : t + tl;
  rest += strspn(rest, "0123456789");
  if (!plain || rest == t + 7 + 64 + 1 || *rest != '/')
    return send_error(c, 400, "write a link as /proxy/<capability>/<port>/..., its capability and port unescaped");
  int in = S ? gp__srv_sessions_proxy_enter(S) : -1;
  if (in == -1) return send_error(c, 503, "the server is stopping");
  if (in == -2) return send_error(c, 503, "too many link requests are in flight (sessions_max); retry shortly");
  gp_srv_wp *wp = gp_xcalloc(1, sizeof *wp);
  pthread_mutex_init(&wp->lock, NULL);
  pthread_cond_init(&wp->cond, NULL);
  wp->refs = 2; /* the thread and the request */
  wp->S = S;
  wp->c = c;
  wp->spec = r->session_spec;
  r->session_spec = NULL;
  wp->port = r->link_port;
  wp->ring = gp_xmalloc(RING_CAP);
  gp_buf_init(&wp->req, GP_SRV_MAX_BODY + 256 * 1024);
  gp_buf_printf(&wp->req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n", r->method, rest, wp->port);
  MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, &wp->req);
  if (r->body.len || !strcmp(r->method, "POST") || !strcmp(r->method, "PUT") || !strcmp(r->method, "PATCH"))
    gp_buf_printf(&wp->req, "Content-Length: %zu\r\n", r->body.len);
  gp_buf_puts(&wp->req, "\r\n");
  if (r->body.len) gp_buf_append(&wp->req, r->body.data, r->body.len);
  r->wp = wp;
  if (wp->req.truncated) {
    wp->refs = 1;
    gp__srv_sessions_proxy_leave(S);
    return send_error(c, 400, "the request's headers and body are too large to relay");
  }
  wp->suspended = true;
  MHD_suspend_connection(c);
  if (gp_thread_start_detached(relay_main, wp) != 0) { /* answered once resumed */
    wp->refs = 1;
    wp->suspended = false;
    wp->status = 503;
    wp->error = gp_xstrdup("no thread for the link's request; retry");
    wp->head_done = true;
    gp__srv_sessions_proxy_leave(S);
    MHD_resume_connection(c);
  }
  return MHD_YES;
}

enum MHD_Result gp__srv_webproxy_serve(gp_srv_sessions *S, struct MHD_Connection *c, gp_srv_req *r) {
  if (!r->wp) return start(S, c, r);
  gp_srv_wp *wp = r->wp;
  pthread_mutex_lock(&wp->lock);
  bool done = wp->head_done;
  pthread_mutex_unlock(&wp->lock);
  if (!done) { /* resumed without a head (cannot happen): wait on */
    return MHD_YES;
  }
  if (wp->error) return send_error(c, (unsigned)wp->status, wp->error);
  pthread_mutex_lock(&wp->lock);
  wp->refs++; /* the response's */
  pthread_mutex_unlock(&wp->lock);
  struct MHD_Response *resp = MHD_create_response_from_callback(
      wp->length >= 0 ? (uint64_t)wp->length : MHD_SIZE_UNKNOWN, 32 * 1024, reader, wp, response_gone);
  if (!resp) {
    wp_release(wp);
    return MHD_NO;
  }
  for (int i = 0; i < wp->n_hdr; i++) MHD_add_response_header(resp, wp->hdr[2 * i], wp->hdr[2 * i + 1]);
  MHD_add_response_header(resp, "Content-Security-Policy", GP_SRV_LINK_CSP);
  MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)wp->status, resp);
  MHD_destroy_response(resp);
  return ok;
}

void gp__srv_webproxy_req_done(gp_srv_req *r) {
  if (r->wp) wp_release(r->wp);
  r->wp = NULL;
}
