/* SPDX-License-Identifier: Apache-2.0 */
/* The server's threads. libmicrohttpd's thread pool reads requests, checks the token and
 * parses the JSON body; then it suspends the connection and hands the request to the
 * state thread through a queue. The state thread takes everything queued at once,
 * handles the batch inside one store transaction, commits (one fsync for the whole batch:
 * group commit), and only then answers, so an acknowledged change is durable. When a
 * commit fails, every request of the batch gets 503 and the state is reloaded from the
 * store. Between batches the state thread runs the scheduler (at most once per
 * schedule_min_gap_ms after an event, and every schedule_interval_ms), checks node
 * liveness and time limits, and answers agents' long polls when their orders are durable
 * or their wait is over. */
#include "server/server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "server/server_int.h"
#include "util/mem.h"

struct gp_server {
  const gp_server_config *cfg;
  gp_store *store;
  gp_srv_state *state;
  struct MHD_Daemon *mhd;
  int port;
  pthread_t thread;
  bool thread_running;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  gp_srv_req *inbox;        /* LIFO; reversed when taken */
  bool stopping;
  int64_t next_tick_ms, next_sched_ms, last_sched_ms;
};

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- answers ---- */

void gp__srv_reply_json(gp_srv_req *r, int status, json_t *body) {
  free(r->resp);
  r->resp = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  r->status = status;
  r->answered = true;
}

void gp__srv_reply_error(gp_srv_req *r, int status, const char *code, const char *field,
                     const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *e = json_object();
  json_object_set_new(e, "code", json_string(code));
  json_object_set_new(e, "message", json_string(msg));
  json_object_set_new(e, "field", field && *field ? json_string(field) : json_null());
  json_t *o = json_object();
  json_object_set_new(o, "error", e);
  gp__srv_reply_json(r, status, o);
}

void gp__srv_reply_err(gp_srv_req *r, int code, const gp_err *err) {
  const char *msg = err && err->message[0] ? err->message : gp_strerror(code);
  const char *field = err ? err->field : NULL;
  switch (code) {
  case GP_EPERM: gp__srv_reply_error(r, 403, "permission_denied", field, "%s", msg); break;
  case GP_ENOENT: gp__srv_reply_error(r, 404, "not_found", field, "%s", msg); break;
  case GP_ESTATE:
  case GP_EEXIST: gp__srv_reply_error(r, 409, "conflict", field, "%s", msg); break;
  case GP_ELIMIT: gp__srv_reply_error(r, 413, "too_large", field, "%s", msg); break;
  case GP_EIO: gp__srv_reply_error(r, 503, "unavailable", NULL, "%s", msg); break;
  default: gp__srv_reply_error(r, 400, "invalid_argument", field, "%s", msg); break;
  }
}

static void req_free(gp_srv_req *r) {
  if (!r) return;
  gp__srv_job_free(r->job);
  free(r->path);
  json_decref(r->query);
  gp_buf_done(&r->body);
  json_decref(r->json);
  free(r->resp);
  free(r->proxy_url);
  free(r);
}

/* Hands an answered (or failed) request back to its HTTP thread. */
static void resume(gp_srv_req *r) {
  MHD_resume_connection(r->conn);
}

void gp__srv_req_resume(gp_srv_req *r) {
  /* A request of the current batch is resumed with the batch, exactly once. */
  if (!r->in_batch) resume(r);
}

static void fail_503(gp_srv_req *r, const char *why) {
  r->parked = false;
  gp__srv_reply_error(r, 503, "unavailable", NULL, "%s", why);
  resume(r);
}

/* ---- the state thread ---- */

static void drop_waiters(gp_srv_state *s, const char *why) {
  for (int i = 0; i < s->n_nodes; i++) {
    gp_srv_node *n = s->nodes[i];
    if (n->waiter) {
      fail_503(n->waiter, why);
      n->waiter = NULL;
    }
  }
}

/* After a failed commit: memory may be ahead of the store; the store is the truth. */
static void reload(gp_server *srv) {
  gp_srv_state *old = srv->state;
  drop_waiters(old, "the store failed; please retry");
  gp_srv_state *s = gp__srv_state_new(srv->cfg, srv->store);
  gp_err err = {0};
  int64_t now_ms = mono_ms();
  if (gp__srv_state_load(s, time(NULL), now_ms, &err)) {
    fprintf(stderr, "gpool server: reloading the store failed: %s\n", err.message);
  }
  /* Keep liveness clocks of nodes we were hearing from. */
  for (int i = 0; i < s->n_nodes; i++) {
    gp_srv_node *o = gp__srv_node_get(old, s->nodes[i]->name);
    if (o) {
      s->nodes[i]->alive = o->alive;
      s->nodes[i]->last_seen_ms = o->last_seen_ms;
      s->nodes[i]->last_heartbeat = o->last_heartbeat;
    }
  }
  s->counters = old->counters;
  gp__srv_state_free(old);
  srv->state = s;
}

/* Answers the parked polls that are due: new orders for their node (unless expire_only)
 * or their deadline passed. */
static void wake_waiters(gp_srv_state *s, int64_t now_ms, bool expire_only) {
  gp_srv_node *n;
  while ((n = gp__srv_waiter_next_due(s, now_ms, expire_only))) {
    gp_srv_req *w = n->waiter;
    gp__srv_agent_reply_orders(s, n, w, n->waiter_gen);
    w->parked = false;
    n->waiter = NULL;
    resume(w);
  }
}

static int handle(gp_srv_state *s, gp_srv_req *r, int64_t now_s, int64_t now_ms, gp_err *err) {
  if (strncmp(r->path, "/v1/agent/", 10) == 0) return gp__srv_agent_handle(s, r, now_s, now_ms, err);
  return gp__srv_api_handle(s, r, now_s, now_ms, err);
}

static void process_batch(gp_server *srv, gp_srv_req *list) {
  gp_srv_state *s = srv->state;
  int64_t now_s = time(NULL), now_ms = mono_ms();
  gp_err err = {0};
  for (gp_srv_req *r = list; r; r = r->next) r->in_batch = true;
  int rc = gp_store_begin(srv->store, &err);
  for (gp_srv_req *r = list; r && !rc; r = r->next) rc = handle(s, r, now_s, now_ms, &err);
  if (!rc && now_ms >= srv->next_tick_ms) {
    rc = gp__srv_state_tick(s, now_s, now_ms, &err);
    int64_t every = s->cfg->node_timeout_s * 1000 / 4;
    if (every > 1000) every = 1000;
    if (every < 50) every = 50;
    srv->next_tick_ms = now_ms + every;
  }
  if (!rc) rc = gp_store_commit(srv->store, &err);
  if (rc) {
    gp_store_rollback(srv->store);
    fprintf(stderr, "gpool server: store transaction failed: %s\n", err.message);
    for (gp_srv_req *r = list; r; r = r->next) r->in_batch = !r->parked;
    for (gp_srv_req *r = list, *next; r; r = next) {
      next = r->next;
      /* Parked polls live in nodes: the reload answers them (drop_waiters). */
      if (!r->in_batch) continue;
      r->in_batch = false;
      fail_503(r, "the store could not commit the change; nothing was done, please retry");
    }
    reload(srv);
    return;
  }
  /* Parked polls are no longer part of the batch: they are resumed when woken. */
  for (gp_srv_req *r = list; r; r = r->next) r->in_batch = r->parked ? false : true;
  for (gp_srv_req *r = list, *next; r; r = next) {
    next = r->next; /* read first: once resumed, the HTTP thread may free r */
    if (r->in_batch) resume(r);
  }
  wake_waiters(srv->state, now_ms, false);
}

static void run_scheduler(gp_server *srv) {
  gp_srv_state *s = srv->state;
  int64_t now_ms = mono_ms();
  gp_err err = {0};
  struct timespec t0, t1, c0, c1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  int rc = gp_store_begin(srv->store, &err);
  bool wrote = false;
  if (!rc) {
    rc = gp__srv_schedule(s, time(NULL), &err);
    wrote = true;
    if (rc == GP_EINVAL) {
      /* The core refused the view: nothing was written; say so and go on. */
      fprintf(stderr, "gpool server: scheduling step refused the view: %s\n", err.message);
      rc = 0;
    }
  }
  if (!rc) rc = gp_store_commit(srv->store, &err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  s->counters.last_cycle_s = secs;
  /* Wall time counts waits for the CPU and the disk; CPU time is the cycle's own work. */
  s->counters.cycles_cpu_s += (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
  gp_hist_observe(&s->counters.cycle_s, secs);
  srv->last_sched_ms = now_ms;
  srv->next_sched_ms = now_ms + s->cfg->schedule_interval_ms;
  if (rc) {
    if (wrote) gp_store_rollback(srv->store);
    fprintf(stderr, "gpool server: could not commit a scheduling step: %s\n", err.message);
    reload(srv);
    return;
  }
  wake_waiters(srv->state, mono_ms(), false);
}

/* The gap between event-driven scheduling steps: at least schedule_min_gap_ms, and at
 * least four times the last step's cost, so that under a flood of submissions the state
 * thread spends at most a fifth of its time scheduling and the rest acknowledging. */
static int64_t sched_gap_ms(const gp_server *srv) {
  int64_t gap = srv->cfg->schedule_min_gap_ms;
  int64_t cost = (int64_t)(srv->state->counters.last_cycle_s * 4000.0);
  return cost > gap ? cost : gap;
}

static void *state_main(void *arg) {
  gp_server *srv = arg;
  pthread_mutex_lock(&srv->lock);
  for (;;) {
    while (!srv->inbox && !srv->stopping) {
      int64_t now = mono_ms();
      int64_t deadline = srv->next_tick_ms;
      if (srv->next_sched_ms < deadline) deadline = srv->next_sched_ms;
      if (srv->state->sched_dirty) {
        int64_t t = srv->last_sched_ms + sched_gap_ms(srv);
        if (t < deadline) deadline = t;
      }
      int64_t w = gp__srv_waiter_earliest(srv->state);
      if (w < deadline) deadline = w;
      if (deadline <= now) break;
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      int64_t wait = deadline - now;
      ts.tv_sec += wait / 1000;
      ts.tv_nsec += (wait % 1000) * 1000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
      if (mono_ms() >= deadline) break;
    }
    if (srv->stopping) break;
    gp_srv_req *taken = srv->inbox, *list = NULL;
    srv->inbox = NULL;
    pthread_mutex_unlock(&srv->lock);
    while (taken) { /* back to arrival order */
      gp_srv_req *n = taken->next;
      taken->next = list;
      list = taken;
      taken = n;
    }
    if (list) process_batch(srv, list);
    else if (mono_ms() >= srv->next_tick_ms) process_batch(srv, NULL);
    int64_t now = mono_ms();
    bool due = srv->state->sched_dirty && now >= srv->last_sched_ms + sched_gap_ms(srv);
    if (due || now >= srv->next_sched_ms) run_scheduler(srv);
    wake_waiters(srv->state, mono_ms(), true);
    pthread_mutex_lock(&srv->lock);
  }
  gp_srv_req *left = srv->inbox;
  srv->inbox = NULL;
  pthread_mutex_unlock(&srv->lock);
  for (gp_srv_req *r = left, *next; r; r = next) {
    next = r->next;
    fail_503(r, "the server is shutting down");
  }
  drop_waiters(srv->state, "the server is shutting down");
  return NULL;
}

/* ---- HTTP threads ---- */

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

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
  (void)kind;
  json_t *q = cls;
  if (json_object_size(q) >= 32 || !key || strlen(key) > 64) return MHD_YES;
  if (value && strlen(value) > 4096) return MHD_YES;
  json_object_set_new(q, key, json_string(value ? value : ""));
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

static enum MHD_Result send_error_now(struct MHD_Connection *c, int status, const char *code,
                                      const char *msg) {
  json_t *e = json_pack("{s:{s:s,s:s,s:n}}", "error", "code", code, "message", msg, "field");
  char *text = json_dumps(e, JSON_COMPACT);
  json_decref(e);
  enum MHD_Result r = send_text(c, status, text, "application/json");
  free(text);
  return r;
}

typedef struct fetch_buf {
  gp_buf b;
} fetch_buf;

static size_t fetch_write(char *p, size_t size, size_t n, void *ud) {
  fetch_buf *f = ud;
  gp_buf_append(&f->b, p, size * n);
  return f->b.truncated ? 0 : size * n;
}

/* Fetches a job's log from its agent for GET /v1/jobs/{id}/log. */
static enum MHD_Result proxy_log(struct MHD_Connection *c, const char *url_and_token) {
  char url[1200], auth[700];
  const char *nl = strchr(url_and_token, '\n');
  snprintf(url, sizeof url, "%.*s", nl ? (int)(nl - url_and_token) : (int)strlen(url_and_token), url_and_token);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", nl ? nl + 1 : "");
  CURL *h = curl_easy_init();
  if (!h) return send_error_now(c, 503, "unavailable", "cannot reach the agent");
  fetch_buf f;
  gp_buf_init(&f.b, GP_SRV_MAX_BODY * 4);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fetch_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &f);
  struct curl_slist *hdrs = curl_slist_append(NULL, auth);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  CURLcode cc = curl_easy_perform(h);
  curl_slist_free_all(hdrs);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(h);
  enum MHD_Result r;
  if (cc != CURLE_OK) {
    char msg[300];
    snprintf(msg, sizeof msg, "the node's agent did not answer: %s", curl_easy_strerror(cc));
    r = send_error_now(c, 503, "unavailable", msg);
  } else if (code == 200) {
    r = send_text(c, 200, f.b.data ? f.b.data : "", "application/json");
  } else if (code == 404) {
    r = send_error_now(c, 404, "not_found", "the agent has no log for this job");
  } else {
    r = send_error_now(c, 502, "bad_gateway", "the agent answered with an error");
  }
  gp_buf_done(&f.b);
  return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls) {
  (void)version;
  gp_server *srv = cls;
  gp_srv_req *r = *con_cls;
  if (!r) {
    r = gp_xcalloc(1, sizeof *r);
    r->conn = c;
    gp_buf_init(&r->body, GP_SRV_MAX_BODY + 1); /* (+1: the buffer keeps a NUL) */
    snprintf(r->method, sizeof r->method, "%s", method);
    r->path = gp_xstrdup(url);
    *con_cls = r;
    return MHD_YES;
  }
  if (r->answered) { /* resumed by the state thread */
    if (r->proxy_url && r->status == 200) return proxy_log(c, r->proxy_url);
    return send_text(c, r->status, r->resp ? r->resp : "{}",
                     r->status == 200 && r->resp && r->resp[0] != '{' ? "text/plain; version=0.0.4"
                                                                       : "application/json");
  }
  if (*upload_size) {
    if (!r->too_large) {
      if (r->body.len + *upload_size > GP_SRV_MAX_BODY) r->too_large = true;
      else gp_buf_append(&r->body, upload_data, *upload_size);
      /* A body is answered whole or refused, never parsed cut short. */
      if (r->body.truncated) r->too_large = true;
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->too_large)
    return send_error_now(c, 413, "too_large", "the request body is larger than 1 MiB");
  /* Public, unauthenticated routes answered without the state thread. */
  if (strcmp(r->path, "/healthz") == 0) return send_text(c, 200, "{\"ok\":true}", "application/json");
  bool is_metrics = strcmp(r->path, "/metrics") == 0;
  if (!is_metrics) {
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const gp_token *t = NULL;
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0) t = find_token(srv->cfg, auth + 7);
    if (!t) return send_error_now(c, 401, "unauthenticated",
                                  "a valid token is required: Authorization: Bearer <token>");
    r->user = t->user;
    r->token = t->token;
    r->role = t->role;
  }
  r->query = json_object();
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, r->query);
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
  /* Submissions are parsed and checked here, in parallel; the state thread only admits. */
  if (strcmp(r->path, "/v1/jobs") == 0 && strcmp(r->method, "POST") == 0 && r->role != GP_ROLE_AGENT &&
      r->json) {
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
  /* Suspend first, then enqueue: the state thread may resume at once. */
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

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)c;
  (void)toe;
  req_free(*con_cls);
  *con_cls = NULL;
}

/* ---- lifetime ---- */

int gp_server_new(const gp_server_config *cfg, gp_store *store, gp_server **ret, gp_err *err) {
  if (!store) {
    if (mkdir(cfg->data_dir, 0700) != 0 && errno != EEXIST)
      return gp_err_set(err, GP_EIO, cfg->data_dir, 0, "data_dir", "cannot create the data directory: %s",
                        strerror(errno));
    char path[1200];
    snprintf(path, sizeof path, "%s/gpool.db", cfg->data_dir);
    int r = gp_store_sqlite_open(path, &store, err);
    if (r) return r;
  }
  gp_server *srv = gp_xcalloc(1, sizeof *srv);
  srv->cfg = cfg;
  srv->store = store;
  srv->state = gp__srv_state_new(cfg, store);
  int64_t now_ms = mono_ms();
  int r = gp__srv_state_load(srv->state, time(NULL), now_ms, err);
  if (r) {
    gp__srv_state_free(srv->state);
    gp_store_close(store);
    free(srv);
    return r;
  }
  pthread_mutex_init(&srv->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&srv->cond, &ca);
  pthread_condattr_destroy(&ca);
  srv->next_tick_ms = now_ms;
  srv->next_sched_ms = now_ms;
  *ret = srv;
  return 0;
}

int gp_server_start(gp_server *srv, gp_err *err) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)srv->cfg->listen_port);
  const char *host = srv->cfg->listen_host;
  if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
    return gp_err_set(err, GP_EINVAL, srv->cfg->file, 0, "listen",
                      "\"%s\" is not an IPv4 address", srv->cfg->listen_host);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_TURBO;
  srv->mhd = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
      MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->cfg->http_threads,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)srv->cfg->max_connections,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
      MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
  if (!srv->mhd)
    return gp_err_set(err, GP_EIO, srv->cfg->file, 0, "listen", "cannot listen on %s:%d (in use?)",
                      srv->cfg->listen_host, srv->cfg->listen_port);
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
  srv->port = info ? info->port : srv->cfg->listen_port;
  if (pthread_create(&srv->thread, NULL, state_main, srv) != 0) {
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot start the state thread");
  }
  srv->thread_running = true;
  return 0;
}

int gp_server_port(const gp_server *srv) { return srv->port; }

gp_store *gp_server_store(gp_server *srv) { return srv->store; }

void gp_server_stop(gp_server *srv) {
  if (!srv) return;
  pthread_mutex_lock(&srv->lock);
  srv->stopping = true;
  pthread_cond_signal(&srv->cond);
  pthread_mutex_unlock(&srv->lock);
  if (srv->thread_running) {
    pthread_join(srv->thread, NULL);
    srv->thread_running = false;
  }
  if (srv->mhd) {
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
  }
}

void gp_server_free(gp_server *srv) {
  if (!srv) return;
  gp_server_stop(srv);
  gp__srv_state_free(srv->state);
  gp_store_close(srv->store);
  pthread_mutex_destroy(&srv->lock);
  pthread_cond_destroy(&srv->cond);
  free(srv);
}
