/* SPDX-License-Identifier: Apache-2.0 */
/* Interactive sessions relayed by the server (sessions.h): the upgrade, the limits, one
 * thread per session between the client's WebSocket and the agent's. */
#include "server/workloads/sessions.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "protocol/session.h"
#include "tls/ws.h"
#include "tls/ws_upgrade.h"
#include "util/mem.h"

#define DIAL_TIMEOUT_MS 5000
#define OUT_CAP (256 * 1024)

typedef struct user_count {
  char *user;
  int open;
  struct user_count *next;
} user_count;

struct gp_srv_sessions {
  pthread_mutex_t lock;
  pthread_cond_t done;
  gp_tls_dial dial;
  int per_user, max, idle_s;
  int open;
  int proxies; /* console links' relays running (webproxy.c) */
  bool stopping;
  user_count *users;
  /* counters for /metrics (under lock) */
  unsigned long long opened, refused_limit, idle_closed, agent_failed;
  unsigned long long bytes_up, bytes_down;
};

typedef struct sess {
  gp_srv_sessions *S;
  char *user;
  char *spec; /* "URL\nTOKEN\nNODE" */
} sess;

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

gp_srv_sessions *gp__srv_sessions_new(const gp_tls_dial *dial, int per_user, int max, int idle_s) {
  gp_srv_sessions *S = gp_xcalloc(1, sizeof *S);
  pthread_mutex_init(&S->lock, NULL);
  pthread_cond_init(&S->done, NULL);
  if (dial) S->dial = *dial;
  S->per_user = per_user;
  S->max = max;
  S->idle_s = idle_s;
  return S;
}

bool gp__srv_sessions_path(const char *path) {
  if (strncmp(path, "/v1/jobs/", 9) != 0) return false;
  const char *slash = strchr(path + 9, '/');
  return slash && slash > path + 9 && strcmp(slash, "/session") == 0;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *code, const char *field,
                                  const char *msg) {
  json_t *e = json_pack("{s:{s:s,s:s,s:s?}}", "error", "code", code, "message", msg, "field", field);
  char *t = json_dumps(e, JSON_COMPACT);
  json_decref(e);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(t), t, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (status == 429) MHD_add_response_header(r, "Retry-After", "5");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

enum MHD_Result gp__srv_sessions_check(struct MHD_Connection *c, const gp_srv_req *r, bool *answered) {
  *answered = true;
  if (strcmp(r->method, "GET") != 0)
    return send_error(c, 405, "method_not_allowed", NULL, "use GET (a WebSocket upgrade) on /v1/jobs/{id}/session");
  char accept[GP_TLS_WS_ACCEPT_LEN + 1];
  const char *why;
  const char *bad = gp_tls_ws_upgrade_check(c, accept, &why);
  if (bad) return send_error(c, 400, "invalid_argument", bad, why);
  *answered = false;
  return MHD_YES;
}

static user_count *user_get(gp_srv_sessions *S, const char *user) {
  for (user_count *u = S->users; u; u = u->next)
    if (strcmp(u->user, user) == 0) return u;
  user_count *u = gp_xcalloc(1, sizeof *u);
  u->user = gp_xstrdup(user);
  u->next = S->users;
  S->users = u;
  return u;
}

static void release(gp_srv_sessions *S, const char *user) {
  pthread_mutex_lock(&S->lock);
  user_get(S, user)->open--;
  S->open--;
  pthread_cond_broadcast(&S->done);
  pthread_mutex_unlock(&S->lock);
}

/* A status message (channel 3) with an error, then a close. */
static void fail_client(gp_tls_ws *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_client(gp_tls_ws *c, int code, const char *fmt, ...) {
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *o = json_pack("{s:s}", "error", msg);
  size_t n;
  uint8_t *m = gp_proto_session_status(o, &n);
  json_decref(o);
  gp_tls_ws_flush_wait(c, 1000);
  gp_tls_ws_send(c, GP_TLS_WS_BINARY, m, n);
  gp_tls_ws_close(c, code, code == GP_TLS_WS_GOING_AWAY ? "the server is stopping" : "session ended");
  gp_tls_ws_flush_wait(c, 2000);
  free(m);
}

static bool stopping(gp_srv_sessions *S) {
  pthread_mutex_lock(&S->lock);
  bool s = S->stopping;
  pthread_mutex_unlock(&S->lock);
  return s;
}

/* Moves whole messages from src to dst while dst has room for the largest. Returns 0 to go
 * on, 1 when src closed (its close passed on), -1 when src broke the protocol. */
static int move(gp_tls_ws *src, gp_tls_ws *dst, unsigned long long *bytes, int64_t *last) {
  while (gp_tls_ws_room(dst, GP_TLS_WS_MSG_MAX)) {
    gp_tls_ws_msg m;
    int rc = gp_tls_ws_next(src, &m);
    if (rc == 0) return 0;
    if (rc < 0) return -1;
    if (m.opcode == GP_TLS_WS_CLOSE) {
      gp_tls_ws_close(dst, m.code, m.reason);
      return 1;
    }
    gp_tls_ws_send(dst, m.opcode, m.data, m.len);
    *bytes += m.len;
    *last = mono_ms();
  }
  return 0;
}

static void relay(sess *x, gp_tls_ws *c, gp_tls_ws *a, const char *node) {
  gp_srv_sessions *S = x->S;
  int64_t last = mono_ms();
  unsigned long long up = 0, down = 0;
  for (;;) {
    if (stopping(S)) {
      fail_client(c, GP_TLS_WS_GOING_AWAY, "the server is stopping; the session ended and the job keeps running");
      gp_tls_ws_close(a, GP_TLS_WS_GOING_AWAY, "the server is stopping");
      gp_tls_ws_flush_wait(a, 1000);
      break;
    }
    if (mono_ms() - last > (int64_t)S->idle_s * 1000) {
      pthread_mutex_lock(&S->lock);
      S->idle_closed++;
      pthread_mutex_unlock(&S->lock);
      fail_client(c, GP_TLS_WS_POLICY, "the session was closed after %d s without input or output", S->idle_s);
      gp_tls_ws_close(a, GP_TLS_WS_NORMAL, "idle");
      gp_tls_ws_flush_wait(a, 1000);
      break;
    }
    int from_c = move(c, a, &up, &last), from_a = move(a, c, &down, &last);
    if (from_c || from_a) {
      /* One side closed (its close is queued on the other) or broke the protocol. */
      if (from_c < 0) gp_tls_ws_close(a, GP_TLS_WS_NORMAL, "the client broke the protocol");
      if (from_a < 0) fail_client(c, GP_TLS_WS_INTERNAL, "the agent of node %s broke the session's protocol", node);
      gp_tls_ws_flush_wait(c, 2000);
      gp_tls_ws_flush_wait(a, 2000);
      break;
    }
    struct pollfd pf[2] = {{.fd = gp_tls_ws_fd(c)}, {.fd = gp_tls_ws_fd(a)}};
    /* A side is read only while the other has room for what it could send. */
    if (gp_tls_ws_wants_read(c) && gp_tls_ws_room(a, GP_TLS_WS_MSG_MAX)) pf[0].events |= POLLIN;
    if (gp_tls_ws_wants_write(c)) pf[0].events |= POLLOUT;
    if (gp_tls_ws_wants_read(a) && gp_tls_ws_room(c, GP_TLS_WS_MSG_MAX)) pf[1].events |= POLLIN;
    if (gp_tls_ws_wants_write(a)) pf[1].events |= POLLOUT;
    bool buffered = (pf[1].events & POLLIN) && gp_tls_ws_buffered(a);
    if (poll(pf, 2, buffered ? 0 : 100) < 0 && errno != EINTR) break;
    if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      long k = gp_tls_ws_read(c);
      if (k == 0 || k == -2) { /* the client left without a close */
        gp_tls_ws_close(a, GP_TLS_WS_NORMAL, "the client left");
        gp_tls_ws_flush_wait(a, 1000);
        break;
      }
    }
    if ((pf[1].revents & (POLLIN | POLLHUP | POLLERR)) || buffered) {
      long k = gp_tls_ws_read(a);
      if (k == 0 || k == -2) {
        move(a, c, &down, &last); /* what it sent before it went */
        fail_client(c, GP_TLS_WS_INTERNAL, "the connection to the agent of node %s was lost", node);
        break;
      }
    }
    if (gp_tls_ws_flush(c) < 0) {
      gp_tls_ws_close(a, GP_TLS_WS_NORMAL, "the client left");
      gp_tls_ws_flush_wait(a, 1000);
      break;
    }
    if (gp_tls_ws_flush(a) < 0) {
      fail_client(c, GP_TLS_WS_INTERNAL, "the connection to the agent of node %s was lost", node);
      break;
    }
  }
  pthread_mutex_lock(&S->lock);
  S->bytes_up += up;
  S->bytes_down += down;
  pthread_mutex_unlock(&S->lock);
}

/* On the session's own thread (tls/ws_upgrade.h), with the client's endpoint `c`. */
static void session_run(void *arg, gp_tls_ws *c) {
  sess *x = arg;
  gp_srv_sessions *S = x->S;
  const char *node;
  gp_tls_ws *a = NULL;
  gp_tls_ws_refusal ref = {0};
  gp_err e = {0};
  int rc = gp__srv_sessions_dial_agent(S, x->spec, &node, &a, &ref, &e);
  if (rc) {
    pthread_mutex_lock(&S->lock);
    S->agent_failed++;
    pthread_mutex_unlock(&S->lock);
    if (rc == GP_EPERM) {
      json_t *doc = json_loads(ref.body, 0, NULL);
      const char *m = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
      fail_client(c, GP_TLS_WS_INTERNAL, "the agent of node %s refused the session (%d): %s", node, ref.status,
                  m ? m : "no reason given");
      json_decref(doc);
    } else fail_client(c, GP_TLS_WS_INTERNAL, "cannot reach the agent of node %s: %s", node, e.message);
  } else relay(x, c, a, node);
  gp_tls_ws_free(a);
}

/* Once the upgraded socket went back, or when the upgrade never happened. */
static void session_end(void *arg) {
  sess *x = arg;
  release(x->S, x->user);
  free(x->user);
  free(x->spec);
  free(x);
}

enum MHD_Result gp__srv_sessions_upgrade(gp_srv_sessions *S, struct MHD_Connection *c, gp_srv_req *r) {
  const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
  char accept[GP_TLS_WS_ACCEPT_LEN + 1];
  if (!S || gp_tls_ws_accept_key(key, accept) != 0 || !r->user)
    return send_error(c, 503, "unavailable", NULL, "sessions are not available");
  const char *user = r->user;
  pthread_mutex_lock(&S->lock);
  user_count *u = user_get(S, user);
  const char *why = S->stopping ? "the server is stopping"
                    : u->open >= S->per_user ? "per_user"
                    : S->open >= S->max      ? "max"
                                             : NULL;
  if (!why) {
    u->open++;
    S->open++;
    S->opened++;
  } else S->refused_limit++;
  int per_user = S->per_user, max = S->max;
  pthread_mutex_unlock(&S->lock);
  if (why) {
    char msg[200];
    if (!strcmp(why, "per_user"))
      snprintf(msg, sizeof msg, "%s has %d sessions open, the most one user may (sessions_per_user)", user, per_user);
    else if (!strcmp(why, "max"))
      snprintf(msg, sizeof msg, "the server has %d sessions open, the most it takes (sessions_max)", max);
    else snprintf(msg, sizeof msg, "%s", why);
    return send_error(c, why[0] == 't' ? 503 : 429, why[0] == 't' ? "unavailable" : "too_many_requests", NULL, msg);
  }
  sess *x = gp_xcalloc(1, sizeof *x);
  x->S = S;
  x->user = gp_xstrdup(user);
  x->spec = r->session_spec;
  r->session_spec = NULL;
  enum MHD_Result ok = gp_tls_ws_upgrade(c, accept, OUT_CAP, session_run, session_end, x);
  if (ok == MHD_YES) r->upgraded = true;
  return ok;
}

int gp__srv_sessions_dial_agent(gp_srv_sessions *S, char *spec, const char **node, gp_tls_ws **ret,
                                gp_tls_ws_refusal *refused, gp_err *err) {
  /* spec: "URL\nTOKEN\nNODE"; the URL's path starts at /sessions/. */
  char *tok = strchr(spec, '\n');
  *tok++ = '\0';
  char *n = strchr(tok, '\n');
  *n++ = '\0';
  *node = n;
  char *path = strstr(spec, "/sessions/");
  char base[600];
  snprintf(base, sizeof base, "%.*s", (int)(path - spec), spec);
  return gp_tls_ws_dial(base, path, tok, &S->dial, DIAL_TIMEOUT_MS, ret, refused, err);
}

int gp__srv_sessions_proxy_enter(gp_srv_sessions *S) {
  pthread_mutex_lock(&S->lock);
  int rc = S->stopping ? -1 : S->proxies >= S->max ? -2 : 0;
  if (!rc) S->proxies++;
  pthread_mutex_unlock(&S->lock);
  return rc;
}

void gp__srv_sessions_proxy_leave(gp_srv_sessions *S) {
  pthread_mutex_lock(&S->lock);
  S->proxies--;
  pthread_cond_broadcast(&S->done);
  pthread_mutex_unlock(&S->lock);
}

bool gp__srv_sessions_stopping(gp_srv_sessions *S) { return stopping(S); }

void gp__srv_sessions_metrics(gp_srv_sessions *S, gp_buf *out) {
  if (!S) return;
  pthread_mutex_lock(&S->lock);
  gp_buf_printf(out,
                "# HELP gpool_sessions_open Interactive sessions (exec, run, port-forward) open now.\n"
                "# TYPE gpool_sessions_open gauge\ngpool_sessions_open %d\n"
                "# HELP gpool_sessions_opened_total Interactive sessions opened.\n"
                "# TYPE gpool_sessions_opened_total counter\ngpool_sessions_opened_total %llu\n"
                "# HELP gpool_sessions_refused_total Sessions refused by sessions_per_user or sessions_max.\n"
                "# TYPE gpool_sessions_refused_total counter\ngpool_sessions_refused_total %llu\n"
                "# HELP gpool_sessions_idle_closed_total Sessions closed by session_idle_timeout_s.\n"
                "# TYPE gpool_sessions_idle_closed_total counter\ngpool_sessions_idle_closed_total %llu\n"
                "# HELP gpool_sessions_agent_failed_total Sessions whose agent could not be reached or refused.\n"
                "# TYPE gpool_sessions_agent_failed_total counter\ngpool_sessions_agent_failed_total %llu\n"
                "# HELP gpool_sessions_bytes_total Payload bytes relayed by ended sessions, by direction.\n"
                "# TYPE gpool_sessions_bytes_total counter\n"
                "gpool_sessions_bytes_total{direction=\"to_job\"} %llu\n"
                "gpool_sessions_bytes_total{direction=\"from_job\"} %llu\n"
                "# HELP gpool_links_relays_open Requests under console links being relayed now.\n"
                "# TYPE gpool_links_relays_open gauge\ngpool_links_relays_open %d\n",
                S->open, S->opened, S->refused_limit, S->idle_closed, S->agent_failed, S->bytes_up, S->bytes_down,
                S->proxies);
  pthread_mutex_unlock(&S->lock);
}

void gp__srv_sessions_stop(gp_srv_sessions *S) {
  if (!S) return;
  pthread_mutex_lock(&S->lock);
  S->stopping = true;
  /* Each session sees the flag within its poll (100 ms) and closes; an upgrade whose
   * client vanished before libmicrohttpd handed it over never runs: not waited for past
   * 10 s. */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  while (S->open + S->proxies > 0 && pthread_cond_timedwait(&S->done, &S->lock, &until) == 0) {}
  pthread_mutex_unlock(&S->lock);
}

void gp__srv_sessions_free(gp_srv_sessions *S) {
  if (!S) return;
  gp__srv_sessions_stop(S);
  for (user_count *u = S->users, *n; u; u = n) {
    n = u->next;
    free(u->user);
    free(u);
  }
  pthread_mutex_destroy(&S->lock);
  pthread_cond_destroy(&S->done);
  free(S);
}
