/* SPDX-License-Identifier: Apache-2.0 */
/* The server's HTTP threads (libmicrohttpd's callbacks; server.c tells the whole design):
 * the token checked, the query and body read within their limits, health and loading
 * answers given at once, log reads, history, reports and advice handed to their helper
 * threads, and every other request suspended and queued for the state thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server/elastic/autoscale.h"
#include "server/front/routes.h"
#include "server/streams/events.h"
#include "server/leadership/follower.h"
#include "server/leadership/leader.h"
#include "server/front/logproxy.h"
#include "server/front/readers.h"
#include "server/state/notify_job.h"
#include "server/accounting/advice.h"
#include "server/accounting/report.h"
#include "server/state/server_int.h"
#include "server/front/server_obj.h"
#include "server/workloads/sessions.h"
#include "server/workloads/steps.h"
#include "server/front/web.h"
#include "server/front/webproxy.h"
#include "tls/conns.h"
#include "tls/dial.h"
#include "tls/listen.h"
#include "util/clock.h"
#include "util/fileperm.h"
#include "util/mem.h"
#include "util/units.h"

/* ---- HTTP threads ---- */

static void req_free(gp_srv_req *r) {
  if (!r) return;
  gp__srv_job_free(r->job);
  free(r->path);
  free(r->target);
  free(r->location);
  json_decref(r->query);
  gp_buf_done(&r->body);
  json_decref(r->json);
  free(r->resp);
  json_decref(r->resp_doc);
  free(r->proxy_url);
  free(r->session_spec);
  gp__srv_webproxy_req_done(r);
  free(r->job_key);
  gp__srv_report_free(r->report);
  gp__srv_advice_free(r->advice);
  free(r);
}

static const gp_token *find_token(const gp_server_config *cfg, const char *tok) {
  if (!tok) return NULL;
  size_t tl = strlen(tok);
  const gp_token *found = NULL;
  for (int i = 0; i < cfg->n_tokens; i++) {
    const char *t = cfg->tokens[i].token;
    size_t n = strlen(t);
    /* Compare every byte of every token, so timing says nothing about near misses. */
    unsigned diff = (unsigned)(n != tl);
    for (size_t k = 0; k < n; k++) diff |= (unsigned)(t[k] ^ (k < tl ? tok[k] : 0));
    if (!diff) found = &cfg->tokens[i];
  }
  return found;
}

/* Collects the decoded query into r->query. The raw target passed intake.c's limits; what
 * only shows once decoded (a name given twice, bytes that are not UTF-8) is refused here,
 * never dropped: a dropped filter would widen the answer. */
static enum MHD_Result refuse_query(gp_srv_req *r, const char *field, const char *what) {
  r->bad.status = 400;
  snprintf(r->bad.field, sizeof r->bad.field, "%s", field);
  if (strcmp(field, "query") == 0) snprintf(r->bad.message, sizeof r->bad.message, "%s", what);
  else snprintf(r->bad.message, sizeof r->bad.message, "the query parameter %s %s", field, what);
  return MHD_NO;
}

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
  (void)kind;
  gp_srv_req *r = cls;
  if (r->bad.status) return MHD_NO;
  json_t *k = key && strlen(key) <= GP_SRV_MAX_QUERY_KEY ? json_string(key) : NULL;
  bool key_ok = k != NULL;
  json_decref(k);
  if (!key_ok) return refuse_query(r, "query", "a query parameter name must be UTF-8 text of at most 64 bytes");
  if (json_object_get(r->query, key)) return refuse_query(r, key, "is given more than once");
  if (json_object_size(r->query) >= GP_SRV_MAX_QUERY_PARAMS)
    return refuse_query(r, "query", "a request may carry at most 32 query parameters");
  json_t *v = value && strlen(value) > GP_SRV_MAX_QUERY_VALUE ? NULL : json_string(value ? value : "");
  if (!v) return refuse_query(r, key, "must be UTF-8 text of at most 4096 bytes");
  json_object_set_new(r->query, key, v);
  return MHD_YES;
}

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *body,
                                 const char *type) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(resp, "Content-Type", type);
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
  MHD_destroy_response(resp);
  return ret;
}

/* A handled request's answer, with the headers it asks for (a redirect to the leader). */
static enum MHD_Result send_answer(struct MHD_Connection *c, const gp_srv_req *r, const char *type) {
  const char *body = r->resp ? r->resp : "{}";
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(resp, "Content-Type", type);
  if (r->location) MHD_add_response_header(resp, "Location", r->location);
  if (r->retry_after_s > 0) {
    char v[16];
    snprintf(v, sizeof v, "%d", r->retry_after_s);
    MHD_add_response_header(resp, "Retry-After", v);
  }
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
  MHD_destroy_response(resp);
  return ret;
}

/* The role HTTP threads answer with: the state thread's, but never "leader" once the
 * lease lapsed, even while the state thread is still stuck in a store call. */
static int http_role(gp_server *srv) {
  int role = atomic_load(&srv->role);
  if (role == GP_SRV_LEADER && srv->leader && gp__srv_leader_epoch(srv->leader, gp_mono_ms()) <= 0)
    role = GP_SRV_FOLLOWER;
  return role;
}

/* GET /livez and GET /readyz, without a token: the process serves; it has a state to
 * answer from (a leader, or a follower that loaded the store). */
static enum MHD_Result send_health(struct MHD_Connection *c, gp_server *srv, bool ready) {
  if (!ready) return send_text(c, 200, "{\"ok\":true}", "application/json");
  int role = http_role(srv);
  if (role == GP_SRV_LOADING || atomic_load(&srv->loading))
    return send_text(c, 503, "{\"ok\":false,\"role\":\"loading\"}", "application/json");
  return send_text(c, 200, role == GP_SRV_LEADER ? "{\"ok\":true,\"role\":\"leader\"}"
                                                 : "{\"ok\":true,\"role\":\"follower\"}",
                   "application/json");
}

static enum MHD_Result send_error_now(struct MHD_Connection *c, int status, const char *code,
                                      const char *msg) {
  json_t *e = json_pack("{s:{s:s,s:s,s:n}}", "error", "code", code, "message", msg, "field");
  char *text = json_dumps(e, JSON_COMPACT);
  json_decref(e);
  enum MHD_Result r = send_text(c, status, text, "application/json");
  free(text);
  return r;
}

/* Whether r, on c, is an agent's protocol request with an agent's token. */
static bool agent_request(gp_server *srv, struct MHD_Connection *c, const gp_srv_req *r) {
  if (strncmp(r->path, "/v1/agent/", 10) != 0) return false;
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  const gp_token *t =
      auth && strncasecmp(auth, "Bearer ", 7) == 0 ? find_token(srv->cfg, auth + 7) : NULL;
  return t && t->role == GP_ROLE_AGENT;
}

/* Called once the request line is in, before libmicrohttpd decodes the target: the raw
 * target is checked here (intake.c), and the request's state is born. */
void *gp__srv_http_on_target(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)cls;
  gp_srv_req *r = gp_xcalloc(1, sizeof *r);
  r->conn = c;
  r->target = gp_xstrdup(uri);
  gp_buf_init(&r->body, GP_SRV_MAX_BODY + 1); /* (+1: the buffer keeps a NUL) */
  if (!gp__srv_intake_target_ok(uri, &r->bad)) {
    /* libmicrohttpd parses the query after this call, into the connection's fixed memory
     * pool: a few hundred parameters exhaust it and the connection is then never answered.
     * The refusal is decided already, so the query it would parse is cut to nothing (the
     * buffer is the connection's own, written by libmicrohttpd just before; r->target
     * keeps the whole target). */
    char *q = strchr(uri, '?');
    if (q) q[1] = '\0';
  }
  return r;
}

/* Answers the refusal intake found (r->bad). */
static enum MHD_Result send_bad(struct MHD_Connection *c, const gp_srv_req *r) {
  json_t *e = json_pack("{s:{s:s,s:s,s:s}}", "error", "code", "invalid_argument", "message",
                        r->bad.message, "field", r->bad.field);
  char *text = json_dumps(e, JSON_COMPACT);
  json_decref(e);
  enum MHD_Result res = send_text(c, r->bad.status, text, "application/json");
  free(text);
  return res;
}

/* The first handler call: the headers are in, the body (if any) is not. Answers at once
 * what can be refused from them, before a byte of the body is read. */
static enum MHD_Result on_headers(struct MHD_Connection *c, gp_srv_req *r, const char *url,
                                  const char *method) {
  r->started = true;
  snprintf(r->method, sizeof r->method, "%s", method);
  r->path = gp_xstrdup(url);
  if (r->bad.status) return send_bad(c, r);
  const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  int64_t n = 0;
  bool bad_len = len && (gp_parse_int64(len, &n) || n < 0);
  if (bad_len || (uint64_t)n > GP_SRV_MAX_BODY) {
    /* A client that waits for "100 Continue" sends nothing more: refused at once. Most
     * others (Python's urllib, browsers' fetch) send the whole body before they read an
     * answer, and a connection closed on unread bytes reaches them as a reset, not as the
     * 413: so up to GP_SRV_DRAIN_MAX bytes are read and thrown away (within the request
     * deadline) and the 413 follows the body's last byte. */
    const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    bool waits = expect && strcasecmp(expect, "100-continue") == 0;
    if (bad_len || waits || (uint64_t)n > GP_SRV_DRAIN_MAX)
      return send_error_now(c, 413, "too_large", "the request body is larger than 1 MiB");
    r->too_large = true;
  }
  return MHD_YES;
}

/* A log read the state thread resolved to an agent's URL: handed to the proxy thread with
 * the connection suspended, or refused at once when the proxy is full. */
static enum MHD_Result start_proxy(gp_server *srv, struct MHD_Connection *c, gp_srv_req *r) {
  MHD_suspend_connection(c);
  if (srv->proxy && gp__srv_proxy_take(srv->proxy, r)) return MHD_YES;
  free(r->proxy_url);
  r->proxy_url = NULL;
  gp__srv_reply_error(r, 503, "unavailable", NULL,
                      "too many log reads are in flight (at most %d); retry shortly", GP_SRV_PROXY_MAX);
  MHD_resume_connection(c);
  return MHD_YES;
}

/* A heavy read (readers.h): handed to a reader thread with the connection suspended, or
 * refused at once (503, Retry-After) when every reader is busy. */
static enum MHD_Result start_heavy(gp_server *srv, struct MHD_Connection *c, gp_srv_req *r) {
  MHD_suspend_connection(c);
  if (srv->readers && gp__srv_readers_take(srv->readers, r)) return MHD_YES;
  gp__srv_readers_busy(srv->readers, r);
  MHD_resume_connection(c);
  return MHD_YES;
}

/* While the store loads: 503, and how far it got (srv->state is not replaced meanwhile). */
static enum MHD_Result send_loading(struct MHD_Connection *c, gp_server *srv, bool healthz) {
  char msg[96];
  snprintf(msg, sizeof msg, "loading the store: %lld jobs",
           (long long)atomic_load_explicit(&srv->state->jobs_loaded, memory_order_relaxed));
  if (!healthz) return send_error_now(c, 503, "unavailable", msg);
  json_t *o = json_pack("{s:b,s:b,s:s}", "ok", 0, "loading", 1, "message", msg);
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  enum MHD_Result r = send_text(c, 503, text, "application/json");
  free(text);
  return r;
}

/* What the agents' listener (agent_listen) serves: what comes from nodes. The agent
 * protocol, the health probes, and a job's step credential on its steps and requeue routes
 * (a job's srun reaches the server at the agent's GPOOL_SERVER). */
static bool agent_listener_path(const char *path) {
  char job[32];
  return strncmp(path, "/v1/agent/", 10) == 0 || strcmp(path, "/livez") == 0 ||
         strcmp(path, "/readyz") == 0 || gp__srv_steps_path(path, job, sizeof job) ||
         gp__srv_requeue_path(path, job, sizeof job);
}

static enum MHD_Result to_state_thread(gp_server *srv, struct MHD_Connection *c, gp_srv_req *r);

static enum MHD_Result on_request(gp_server *srv, bool agent_side, struct MHD_Connection *c,
                                  const char *url, const char *method, const char *upload_data,
                                  size_t *upload_size, void **con_cls) {
  gp_srv_req *r = *con_cls;
  if (!r) *con_cls = r = gp__srv_http_on_target(srv, url, c);
  if (!r->started) return on_headers(c, r, url, method);
  if (r->answered) { /* resumed by the state thread (or the log proxy) */
    if (r->proxy_url && r->status == 200) return start_proxy(srv, c, r);
    if (r->link_port && (r->wp || (r->session_spec && r->status == 200)))
      return gp__srv_webproxy_serve(srv->sessions, c, r); /* a console link (webproxy.h) */
    if (r->session_spec && r->status == 200) return gp__srv_sessions_upgrade(srv->sessions, c, r);
    if (gp__srv_readers_wants(r)) return start_heavy(srv, c, r); /* a report, advice */
    if (r->history_job && r->status == 200) gp__srv_history_job(srv->store, r); /* from the store */
    if (r->resp_doc) {
      free(r->resp);
      r->resp = json_dumps(r->resp_doc, JSON_COMPACT);
      json_decref(r->resp_doc);
      r->resp_doc = NULL;
    }
    const char *type = r->resp_type ? r->resp_type
                       : r->status == 200 && r->resp && r->resp[0] != '{' ? "text/plain; version=0.0.4"
                                                                          : "application/json";
    return send_answer(c, r, type);
  }
  if (*upload_size) {
    if (r->too_large) {
      r->discarded += *upload_size;
      if (r->discarded > GP_SRV_DRAIN_MAX) { /* a chunked body without end: refused now */
        *upload_size = 0;
        return send_error_now(c, 413, "too_large", "the request body is larger than 1 MiB");
      }
    } else {
      if (r->body.len + *upload_size > GP_SRV_MAX_BODY) r->too_large = true;
      else gp_buf_append(&r->body, upload_data, *upload_size);
      /* A body is answered whole or refused, never parsed cut short. */
      if (r->body.truncated) r->too_large = true;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  gp_tls_conns_request_in(c);
  if (r->too_large)
    return send_error_now(c, 413, "too_large", "the request body is larger than 1 MiB");
  /* Admitted past its address's limit with nothing of the address idle: only an agent's
   * request may use it (so a job cannot lock its own agent out). */
  if (gp_tls_conns_on_probation(c) && !agent_request(srv, c, r)) return gp_tls_conns_refuse(c);
  if (agent_side && !agent_listener_path(r->path))
    return send_error_now(c, 404, "not_found",
                          "this address (agent_listen) serves only the agent protocol; use the API address");
  /* Public, unauthenticated routes answered without the state thread. */
  if (strcmp(r->path, "/livez") == 0 || strcmp(r->path, "/readyz") == 0)
    return send_health(c, srv, r->path[1] == 'r');
  if (gp__srv_web_owns(r->path)) return gp__srv_web_serve(c, r->path, r->method); /* console */
  if (atomic_load(&srv->loading)) return send_loading(c, srv, strcmp(r->path, "/healthz") == 0);
  /* A console link: its capability is its credential, checked by the state thread; no
   * token, query or body is parsed here (the app gets them as they came). */
  if (!agent_side && gp__srv_webproxy_path(r->path)) {
    r->role = GP_ROLE_NONE;
    return to_state_thread(srv, c, r);
  }
  if (strcmp(r->path, "/healthz") == 0) {
    pthread_mutex_lock(&srv->lock);
    char *body = gp_xstrdup(srv->healthz ? srv->healthz : "{\"ok\":true}");
    int status = srv->healthz && !srv->healthy ? 503 : 200;
    pthread_mutex_unlock(&srv->lock);
    enum MHD_Result res = send_text(c, status, body, "application/json");
    free(body);
    return res;
  }
  bool is_metrics = strcmp(r->path, "/metrics") == 0;
  if (strncmp(r->path, "/v1/agent/", 10) == 0) { /* with tls.client_ca: agents show a cert */
    char why[400];
    if (gp_tls_listener_check_client(srv->tls, c, why, sizeof why))
      return send_error_now(c, 401, "unauthenticated", why);
  }
  if (!is_metrics) {
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const gp_token *t = NULL;
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) t = find_token(srv->cfg, auth + 7);
    /* A browser's EventSource cannot set headers: the stream also takes ?token=. */
    bool is_events = strcmp(r->path, "/v1/events") == 0;
    if (!t && !auth && is_events)
      t = find_token(srv->cfg, MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token"));
    /* A job's step credential (srun inside a job): good for that job's steps and its own
     * requeue only, which the state thread checks against the job's run (steps_api.c,
     * requeue_api.c). */
    char step_job[32];
    bool job_key = !t && auth && strncasecmp(auth, "Bearer " GP_SRV_STEP_KEY_PREFIX, 7 + strlen(GP_SRV_STEP_KEY_PREFIX)) == 0 &&
                   strlen(auth + 7) < GP_PROTO_JOB_KEY_MAX && (gp__srv_steps_path(r->path, step_job, sizeof step_job) ||
                                                               gp__srv_requeue_path(r->path, step_job, sizeof step_job));
    if (!t && !job_key) return send_error_now(c, 401, "unauthenticated",
                                  "a valid token is required: Authorization: Bearer <token>");
    if (job_key) {
      r->job_key = gp_xstrdup(auth + 7);
      r->role = GP_ROLE_NONE;
    } else {
      r->user = t->user;
      r->token = t->token;
      r->role = t->role;
    }
    if (t && t->role == GP_ROLE_AGENT && strncmp(r->path, "/v1/agent/", 10) == 0) gp_tls_conns_trust(c);
    else if (agent_side && !job_key) /* a user's token: the API address is theirs */
      return send_error_now(c, 403, "forbidden",
                            "this address (agent_listen) serves only agents (an agent token) and jobs' steps");
    if (is_events) return gp__srv_events_serve(srv->events, c, r->method, r->user, r->role);
  }
  r->query = json_object();
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, r);
  if (r->bad.status) return send_bad(c, r);
  if (r->body.len > 0) {
    json_error_t je;
    r->json = json_loadb(r->body.data, r->body.len, JSON_REJECT_DUPLICATES, &je);
    if (!r->json) {
      char msg[300];
      snprintf(msg, sizeof msg, "the body is not valid JSON (line %d, column %d): %s", je.line,
               je.column, je.text);
      return send_error_now(c, 400, "invalid_argument", msg);
    }
  }
  if (strcmp(r->path, "/v1/leader") == 0 && strcmp(r->method, "GET") == 0) {
    json_t *doc = gp__srv_follower_leader_doc(srv->leader, srv->self_url, http_role(srv));
    gp__srv_reply_json(r, 200, doc);
    return send_answer(c, r, "application/json");
  }
  /* Only the leader writes: elsewhere a write is sent on to it (or refused while none). */
  if (srv->leader && http_role(srv) != GP_SRV_LEADER && gp__srv_follower_is_write(r)) {
    gp__srv_follower_redirect(r, srv->leader);
    return send_answer(c, r, "application/json");
  }
  /* A session's upgrade headers are checked before the state thread sees it. */
  if (!r->job_key && gp__srv_sessions_path(r->path)) {
    bool answered = false;
    enum MHD_Result res = gp__srv_sessions_check(c, r, &answered);
    if (answered) return res;
  }
  /* The job history is the store's: read by a reader thread, never on the state thread
   * nor on this one. */
  if (gp__srv_readers_wants(r)) return start_heavy(srv, c, r);
  /* Submissions are parsed and checked here, in parallel; the state thread only admits. */
  if (strcmp(r->path, "/v1/jobs") == 0 && strcmp(r->method, "POST") == 0 && !r->job_key && r->role != GP_ROLE_AGENT &&
      r->role != GP_ROLE_VIEWER && r->json) {
    gp_err e = {0};
    int rc = gp__srv_job_parse(srv->cfg, r->json, r->user, r->role == GP_ROLE_ADMIN, &r->job, &e);
    if (rc) {
      gp_srv_req tmp = {0};
      gp__srv_reply_err(&tmp, rc, &e);
      enum MHD_Result res = send_text(c, tmp.status, tmp.resp, "application/json");
      free(tmp.resp);
      return res;
    }
  }
  return to_state_thread(srv, c, r);
}

/* Suspend first, then enqueue: the state thread may resume at once. */
static enum MHD_Result to_state_thread(gp_server *srv, struct MHD_Connection *c, gp_srv_req *r) {
  MHD_suspend_connection(c);
  pthread_mutex_lock(&srv->lock);
  if (srv->stopping) {
    pthread_mutex_unlock(&srv->lock);
    r->answered = true;
    r->status = 503;
    r->resp = gp_xstrdup("{\"error\":{\"code\":\"unavailable\",\"message\":\"the server is shutting down\",\"field\":null}}");
    MHD_resume_connection(c);
    return MHD_YES;
  }
  r->next = srv->inbox;
  srv->inbox = r;
  pthread_cond_signal(&srv->cond);
  pthread_mutex_unlock(&srv->lock);
  return MHD_YES;
}

enum MHD_Result gp__srv_http_on_request(void *cls, struct MHD_Connection *c, const char *url,
                                        const char *method, const char *version,
                                        const char *upload_data, size_t *upload_size,
                                        void **con_cls) {
  (void)version;
  return on_request(cls, false, c, url, method, upload_data, upload_size, con_cls);
}

enum MHD_Result gp__srv_http_on_agent_request(void *cls, struct MHD_Connection *c, const char *url,
                                              const char *method, const char *version,
                                              const char *upload_data, size_t *upload_size,
                                              void **con_cls) {
  (void)version;
  return on_request(cls, true, c, url, method, upload_data, upload_size, con_cls);
}

void gp__srv_http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)toe;
  gp_srv_req *r = *con_cls;
  /* An upgraded connection stays busy (never closed to make room): it is a session's. */
  if (!r || !r->upgraded) gp_tls_conns_answered(c);
  req_free(*con_cls);
  *con_cls = NULL;
}
