/* SPDX-License-Identifier: Apache-2.0 */
/* The server's threads. libmicrohttpd's thread pool reads requests, checks the token and
 * parses the JSON body; then it suspends the connection and hands the request to the
 * state thread through a queue. The state thread takes everything queued at once,
 * handles the batch inside one store transaction, commits (one fsync for the whole batch:
 * group commit), and only then answers, so an acknowledged change is durable. When a
 * commit fails, every request of the batch gets 503, the state is reloaded from the store
 * once, and the server refuses writes until the store takes them again (store_health.h).
 * The server listens before it loads the store and answers 503 "loading the store" until
 * the load is done. Between batches the state thread runs the scheduler (at most once per
 * schedule_min_gap_ms after an event, and every schedule_interval_ms), checks node
 * liveness and time limits, and answers agents' long polls when their orders are durable
 * or their wait is over. Helper threads keep slow peers and long reads off the HTTP
 * threads: the log proxy (logproxy.c) reads jobs' logs from agents, the reader threads
 * (readers.c) the job history, reports and advice; the connection table (tls/conns.h)
 * cuts requests that miss their deadline and makes room past the connection limits
 * (agents' connections have their own allowance); the raw request target is checked by
 * intake.c. What each commit changed goes to the open event streams (events.h) after the
 * commit. */
#include "server/server.h"

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

#include "server/autoscale.h"
#include "server/events.h"
#include "server/follower.h"
#include "server/leader.h"
#include "server/logproxy.h"
#include "server/readers.h"
#include "server/notify_job.h"
#include "server/advice.h"
#include "server/report.h"
#include "server/server_int.h"
#include "server/web.h"
#include "tls/conns.h"
#include "tls/dial.h"
#include "tls/listen.h"
#include "util/clock.h"
#include "util/fileperm.h"
#include "util/mem.h"
#include "util/units.h"

struct gp_server {
  const gp_server_config *cfg;
  gp_store *store;
  gp_srv_state *state;
  struct MHD_Daemon *mhd;
  gp_tls_listener *tls;     /* HTTPS files of the API (plain HTTP without tls.cert) */
  gp_tls_dial agent_dial;   /* how log reads verify agents (tls.agent_ca) */
  gp_tls_conns *conns;      /* request deadlines, connection limits (tls/conns.h) */
  gp_srv_proxy *proxy;      /* log reads from agents */
  gp_srv_readers *readers;  /* history lists, reports, advice (readers.h) */
  gp_srv_autoscale *autoscale; /* provider calls (autoscale.h), NULL: a fixed fleet */
  gp_srv_events *events;    /* GET /v1/events streams (events.h) */
  gp_srv_notify *notify;    /* the notification sender (notify.h), or NULL */
  int port;
  pthread_t thread;
  bool thread_running;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  gp_srv_req *inbox;        /* LIFO; reversed when taken */
  bool stopping;
  char *healthz;            /* GET /healthz's body, under `lock`; set by the state thread */
  bool healthy;             /* under `lock`: /healthz answers 200, else 503 */
  _Atomic bool loading;     /* listening while the store loads: everything answers 503 */
  bool reload_failed;       /* memory is not the store's truth: no writes until a reload works */
  gp_err reload_err;
  int64_t next_tick_ms, next_sched_ms, last_sched_ms;
  /* High availability (leader.h, follower.h): NULL leader: a server alone, always leading. */
  gp_srv_leader *leader;
  _Atomic int role;         /* gp_srv_role, read by HTTP threads */
  int64_t role_epoch;       /* the epoch the state thread acts under; 0: following */
  int64_t next_follow_ms;   /* a follower's next reload */
  char self_url[300];       /* this server's URL: ha.advertise, else the listen address */
};


/* ---- answers ---- */

void gp__srv_reply_json(gp_srv_req *r, int status, json_t *body) {
  free(r->resp);
  r->resp = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  r->status = status;
  r->answered = true;
}

void gp__srv_reply_doc(gp_srv_req *r, int status, json_t *doc) {
  free(r->resp);
  r->resp = NULL;
  json_decref(r->resp_doc);
  r->resp_doc = doc;
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
  free(r->target);
  free(r->location);
  json_decref(r->query);
  gp_buf_done(&r->body);
  json_decref(r->json);
  free(r->resp);
  json_decref(r->resp_doc);
  free(r->proxy_url);
  gp__srv_report_free(r->report);
  gp__srv_advice_free(r->advice);
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
  int64_t now_ms = gp_mono_ms();
  srv->reload_failed = gp__srv_state_load(s, time(NULL), now_ms, &err) != 0;
  if (srv->reload_failed) {
    fprintf(stderr, "gpool server: reloading the store failed: %s\n", err.message);
    srv->reload_err = err;
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
  s->autoscale = old->autoscale;
  s->events = old->events;
  s->notify = srv->notify; /* a reloaded leader's state; a follower's has none */
  s->store_health = old->store_health;
  gp__srv_usage_adopt(s, old);
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

/* Publishes what GET /healthz answers. */
static void set_healthz(gp_server *srv) {
  char *text = gp__srv_store_health_json(&srv->state->store_health);
  pthread_mutex_lock(&srv->lock);
  free(srv->healthz);
  srv->healthz = text;
  srv->healthy = !srv->state->store_health.degraded;
  pthread_mutex_unlock(&srv->lock);
}

/* A store transaction failed and was rolled back: /healthz says so before the batch is
 * answered. Memory may be ahead of the store, so the caller then reloads it (once: from
 * now on writes are refused before they touch memory). */
static void store_failed(gp_server *srv, const gp_err *err) {
  if (srv->leader && strcmp(gp_store_failure(srv->store), "fenced") == 0) {
    /* A newer leader exists: step down (ha_step), the store is not at fault. */
    gp__srv_leader_fenced(srv->leader, srv->role_epoch);
    return;
  }
  gp__srv_store_failed(&srv->state->store_health, srv->store, err->message, gp_mono_ms());
  set_healthz(srv);
}

/* While the store refuses writes, answers every request that would write (anything but a
 * GET) with 503 at once and returns the reads, in order. */
static gp_srv_req *refuse_writes(gp_server *srv, gp_srv_req *list) {
  gp_srv_store_health *h = &srv->state->store_health;
  gp_srv_req *reads = NULL, **tail = &reads;
  for (gp_srv_req *r = list, *next; r; r = next) {
    next = r->next;
    if (strcmp(r->method, "GET") == 0) {
      *tail = r;
      tail = &r->next;
      continue;
    }
    gp__srv_store_refused(h);
    char msg[160];
    snprintf(msg, sizeof msg, "store: %s; nothing was done, please retry later", h->cause);
    fail_503(r, msg);
  }
  *tail = NULL;
  return reads;
}

/* The state thread's view of the store is writable again: agents were refused meanwhile,
 * not silent, so their liveness clocks restart now. */
static void store_recovered(gp_server *srv, int64_t now_ms) {
  gp_srv_state *s = srv->state;
  for (int i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->last_seen_ms < now_ms) s->nodes[i]->last_seen_ms = now_ms;
  s->sched_dirty = true;
  srv->next_tick_ms = now_ms;
  srv->next_sched_ms = now_ms;
  set_healthz(srv);
}

/* Reads while the store refuses writes: outside a transaction, so that nothing waits on
 * the store; a handler that wrote would fail as any write does now. */
static void process_reads(gp_server *srv, gp_srv_req *list) {
  gp_srv_state *s = srv->state;
  int64_t now_s = time(NULL), now_ms = gp_mono_ms();
  gp_err err = {0};
  int rc = 0;
  for (gp_srv_req *r = list; r; r = r->next) r->in_batch = true;
  for (gp_srv_req *r = list; r && !rc; r = r->next) rc = handle(s, r, now_s, now_ms, &err);
  if (rc) store_failed(srv, &err);
  for (gp_srv_req *r = list, *next; r; r = next) {
    next = r->next;
    r->in_batch = false;
    if (rc) fail_503(r, "store: the change could not be written; nothing was done, please retry");
    else resume(r);
  }
  if (rc) reload(srv);
}

static void process_batch(gp_server *srv, gp_srv_req *list) {
  if (srv->state->store_health.degraded) {
    list = refuse_writes(srv, list);
    if (list) process_reads(srv, list);
    return;
  }
  gp_srv_state *s = srv->state;
  int64_t now_s = time(NULL), now_ms = gp_mono_ms();
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
    store_failed(srv, &err);
    for (gp_srv_req *r = list; r; r = r->next) r->in_batch = !r->parked;
    char msg[160];
    snprintf(msg, sizeof msg, "store: %s; nothing was done, please retry later",
             gp_store_failure(srv->store)[0] ? gp_store_failure(srv->store) : "I/O error");
    for (gp_srv_req *r = list, *next; r; r = next) {
      next = r->next;
      /* Parked polls live in nodes: the reload answers them (drop_waiters). */
      if (!r->in_batch) continue;
      r->in_batch = false;
      fail_503(r, msg);
    }
    reload(srv);
    return;
  }
  gp__srv_events_flush(s); /* committed: clients hear only of durable changes */
  gp__srv_notify_flush(s);  /* and mail and webhooks only of what is durable */
  gp__srv_ended_evict(s); /* committed, and no job pointer is held */
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
  int64_t now_ms = gp_mono_ms();
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
    store_failed(srv, &err);
    reload(srv);
    return;
  }
  gp__srv_events_flush(s);
  gp__srv_notify_flush(s);
  gp__srv_ended_evict(s);
  wake_waiters(srv->state, gp_mono_ms(), false);
}

/* The gap between event-driven scheduling steps: at least schedule_min_gap_ms, and at
 * least four times the last step's cost, so that under a flood of submissions the state
 * thread spends at most a fifth of its time scheduling and the rest acknowledging. */
static int64_t sched_gap_ms(const gp_server *srv) {
  int64_t gap = srv->cfg->schedule_min_gap_ms;
  int64_t cost = (int64_t)(srv->state->counters.last_cycle_s * 4000.0);
  return cost > gap ? cost : gap;
}

/* ---- leading and following (leader.h, follower.h) ---- */

/* Follows the lease: leads under a new epoch (the whole state reloaded from the store,
 * the agents' liveness clocks restarted: they could not reach a leader meanwhile) or
 * steps down at once, before the lease can have expired. */
static void ha_step(gp_server *srv) {
  int64_t now = gp_mono_ms();
  int64_t epoch = gp__srv_leader_epoch(srv->leader, now);
  if (epoch == srv->role_epoch) return;
  if (srv->role_epoch > 0) {
    fprintf(stderr, "gpool server: ha: no longer the leader (epoch %lld); following\n",
            (long long)srv->role_epoch);
    atomic_store(&srv->role, GP_SRV_FOLLOWER);
    srv->role_epoch = 0;
    drop_waiters(srv->state, "this server no longer leads; please retry");
    srv->next_follow_ms = now;
  }
  if (epoch <= 0) return;
  srv->store->fence_epoch = epoch;
  reload(srv);
  if (srv->reload_failed) store_failed(srv, &srv->reload_err); /* the store_health path retries */
  now = gp_mono_ms();
  gp_srv_state *s = srv->state;
  for (int i = 0; i < s->n_nodes; i++) s->nodes[i]->last_seen_ms = now;
  s->sched_dirty = true;
  srv->next_tick_ms = srv->next_sched_ms = now;
  srv->role_epoch = epoch;
  atomic_store(&srv->role, GP_SRV_LEADER);
  fprintf(stderr, "gpool server: ha: leading under epoch %lld\n", (long long)epoch);
}

/* Whether the state thread may act (write, schedule) now; a server alone always may. */
static bool ha_leading(gp_server *srv) {
  if (!srv->leader) return true;
  ha_step(srv);
  return srv->role_epoch > 0;
}

/* A follower's batch: writes go to the leader, reads are answered from the state. */
static void follow_batch(gp_server *srv, gp_srv_req *list) {
  int64_t now_s = time(NULL), now_ms = gp_mono_ms();
  for (gp_srv_req *r = list, *next; r; r = next) {
    next = r->next;
    gp_err err = {0};
    if (gp__srv_follower_is_write(r)) gp__srv_follower_redirect(r, srv->leader);
    else if (handle(srv->state, r, now_s, now_ms, &err) != 0) {
      fail_503(r, "reading the state failed; please retry");
      continue;
    }
    r->parked = false;
    resume(r);
  }
}

/* A follower reloads its state from the store every GP_SRV_FOLLOW_REFRESH_MS; a failed
 * load keeps the last one. */
static void follow_refresh(gp_server *srv) {
  int64_t now = gp_mono_ms();
  if (now < srv->next_follow_ms) return;
  srv->next_follow_ms = now + GP_SRV_FOLLOW_REFRESH_MS;
  gp_err err = {0};
  gp_srv_state *s = gp__srv_follower_load(srv->cfg, srv->store, time(NULL), now, &err);
  if (!s) {
    fprintf(stderr, "gpool server: ha: reloading the state failed: %s\n", err.message);
    return;
  }
  gp_srv_state *old = srv->state;
  drop_waiters(old, "this server does not lead; please retry");
  s->counters = old->counters;
  s->autoscale = old->autoscale;
  s->events = old->events;
  gp__srv_state_free(old);
  srv->state = s;
  /* A follower writes nothing: what the store refused while it led no longer holds. */
  set_healthz(srv);
  atomic_store(&srv->role, GP_SRV_FOLLOWER);
}

/* When a follower next wakes (its reload), or a leader at the latest (its lease's end). */
static int64_t ha_deadline(gp_server *srv, int64_t deadline) {
  if (srv->role_epoch <= 0) return srv->next_follow_ms;
  int64_t until = gp__srv_leader_valid_until(srv->leader);
  return until < deadline ? until : deadline;
}

static void ha_wake(void *ctx) {
  gp_server *srv = ctx;
  pthread_mutex_lock(&srv->lock);
  pthread_cond_signal(&srv->cond);
  pthread_mutex_unlock(&srv->lock);
}

static void *state_main(void *arg) {
  gp_server *srv = arg;
  pthread_mutex_lock(&srv->lock);
  for (;;) {
    while (!srv->inbox && !srv->stopping) {
      int64_t now = gp_mono_ms();
      const gp_srv_store_health *h = &srv->state->store_health;
      int64_t deadline = srv->next_tick_ms;
      if (srv->next_sched_ms < deadline) deadline = srv->next_sched_ms;
      if (srv->state->sched_dirty) {
        int64_t t = srv->last_sched_ms + sched_gap_ms(srv);
        if (t < deadline) deadline = t;
      }
      if (h->degraded) deadline = h->next_probe_ms; /* nothing else may write */
      if (srv->leader) {
        if (gp__srv_leader_epoch(srv->leader, now) != srv->role_epoch) break;
        deadline = ha_deadline(srv, deadline);
      }
      int64_t w = gp__srv_waiter_earliest(srv->state);
      if (w < deadline) deadline = w;
      if (deadline <= now) break;
      gp_cond_wait_until_ms(&srv->cond, &srv->lock, deadline);
      if (gp_mono_ms() >= deadline) break;
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
    if (!ha_leading(srv)) {
      follow_batch(srv, list);
      follow_refresh(srv);
      pthread_mutex_lock(&srv->lock);
      continue;
    }
    if (list) process_batch(srv, list);
    else if (gp_mono_ms() >= srv->next_tick_ms && !srv->state->store_health.degraded)
      process_batch(srv, NULL);
    int64_t now = gp_mono_ms();
    if (!ha_leading(srv)) {
      /* Stepped down during the batch: the next round follows. */
    } else if (srv->state->store_health.degraded) {
      if (gp__srv_store_probe(&srv->state->store_health, srv->store, now)) {
        /* A state that did not reload whole would write over the store with its holes. */
        if (srv->reload_failed) reload(srv);
        if (srv->reload_failed) store_failed(srv, &srv->reload_err);
        else store_recovered(srv, now);
      }
    } else {
      bool due = srv->state->sched_dirty && now >= srv->last_sched_ms + sched_gap_ms(srv);
      if (due || now >= srv->next_sched_ms) run_scheduler(srv);
    }
    wake_waiters(srv->state, gp_mono_ms(), true);
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
static void *on_target(void *cls, const char *uri, struct MHD_Connection *c) {
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls) {
  (void)version;
  gp_server *srv = cls;
  gp_srv_req *r = *con_cls;
  if (!r) *con_cls = r = on_target(srv, url, c);
  if (!r->started) return on_headers(c, r, url, method);
  if (r->answered) { /* resumed by the state thread (or the log proxy) */
    if (r->proxy_url && r->status == 200) return start_proxy(srv, c, r);
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
  /* Public, unauthenticated routes answered without the state thread. */
  if (strcmp(r->path, "/livez") == 0 || strcmp(r->path, "/readyz") == 0)
    return send_health(c, srv, r->path[1] == 'r');
  if (gp__srv_web_owns(r->path)) return gp__srv_web_serve(c, r->path, r->method); /* console */
  if (atomic_load(&srv->loading)) return send_loading(c, srv, strcmp(r->path, "/healthz") == 0);
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
    if (!t) return send_error_now(c, 401, "unauthenticated",
                                  "a valid token is required: Authorization: Bearer <token>");
    r->user = t->user;
    r->token = t->token;
    r->role = t->role;
    if (t->role == GP_ROLE_AGENT && strncmp(r->path, "/v1/agent/", 10) == 0) gp_tls_conns_trust(c);
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
  /* The job history is the store's: read by a reader thread, never on the state thread
   * nor on this one. */
  if (gp__srv_readers_wants(r)) return start_heavy(srv, c, r);
  /* Submissions are parsed and checked here, in parallel; the state thread only admits. */
  if (strcmp(r->path, "/v1/jobs") == 0 && strcmp(r->method, "POST") == 0 && r->role != GP_ROLE_AGENT &&
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
  (void)toe;
  gp_tls_conns_answered(c);
  req_free(*con_cls);
  *con_cls = NULL;
}

/* ---- lifetime ---- */

/* Says what lets other local users read secrets; the store's own files are made private
 * whatever the directory's mode (sqlite.c), so these are warnings, not refusals. */
static void warn_open_files(const gp_server_config *cfg) {
  if (gp_fileperm_open_to_others(cfg->data_dir))
    fprintf(stderr, "gpool server: warning: other users may enter the data directory %s; "
                    "chmod 700 %s\n", cfg->data_dir, cfg->data_dir);
  if (cfg->tokens_inline && cfg->file[0] && gp_fileperm_open_to_others(cfg->file))
    fprintf(stderr, "gpool server: warning: %s lists tokens and other users may read it; "
                    "chmod 600 it, or move the tokens to a token_file\n", cfg->file);
}

int gp_server_new(const gp_server_config *cfg, gp_store *store, gp_server **ret, gp_err *err) {
  if (!store) {
    /* The directory holds the database (every job's environment): 0700 when created. */
    if (mkdir(cfg->data_dir, 0700) != 0 && errno != EEXIST)
      return gp_err_set(err, GP_EIO, cfg->data_dir, 0, "data_dir", "cannot create the data directory: %s",
                        strerror(errno));
    warn_open_files(cfg);
    char path[1200];
    snprintf(path, sizeof path, "%s/gpool.db", cfg->data_dir);
    int r = gp_store_open(cfg->store ? cfg->store : path, &store, err);
    if (r) return r;
  }
  gp_server *srv = gp_xcalloc(1, sizeof *srv);
  srv->cfg = cfg;
  srv->store = store;
  srv->state = gp__srv_state_new(cfg, store);
  atomic_init(&srv->loading, true);
  int64_t now_ms = gp_mono_ms();
  pthread_mutex_init(&srv->lock, NULL);
  gp_cond_init_monotonic(&srv->cond);
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
  int rc = gp_tls_listener_new(&srv->cfg->tls, "tls", &srv->tls, err);
  if (rc) return rc;
  srv->agent_dial = (gp_tls_dial){.ca = srv->cfg->tls.peer_ca, .cert = srv->cfg->tls.cert,
                                  .key = srv->cfg->tls.key, .https_only = srv->cfg->tls.peer_ca[0]};
  gp_tls_conns_limits lim = {.max = srv->cfg->max_connections,
                             .per_address = srv->cfg->max_connections_per_address,
                             .request_timeout_s = srv->cfg->http_request_timeout_s};
  srv->conns = gp_tls_conns_new(&lim);
  srv->proxy = gp__srv_proxy_new(&srv->agent_dial);
  srv->readers = gp__srv_readers_new(GP_SRV_READERS(srv->cfg->http_threads), srv->store);
  if (!srv->conns || !srv->proxy || !srv->readers)
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot start the HTTP helper threads");
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_TURBO | gp_tls_listener_flags(srv->tls);
  srv->mhd = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
      MHD_OPTION_THREAD_POOL_SIZE, (unsigned)srv->cfg->http_threads,
      MHD_OPTION_CONNECTION_LIMIT, gp_tls_conns_hard_limit(srv->cfg->max_connections),
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)srv->cfg->http_idle_timeout_s,
      MHD_OPTION_URI_LOG_CALLBACK, on_target, srv,
      MHD_OPTION_NOTIFY_CONNECTION, gp_tls_conns_notify, srv->conns,
      MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
      MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
      MHD_OPTION_ARRAY, gp_tls_listener_options(srv->tls), MHD_OPTION_END);
  if (!srv->mhd)
    return gp_err_set(err, GP_EIO, srv->cfg->file, 0, "listen", "cannot listen on %s:%d (in use?)",
                      srv->cfg->listen_host, srv->cfg->listen_port);
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_BIND_PORT);
  srv->port = info ? info->port : srv->cfg->listen_port;
  snprintf(srv->self_url, sizeof srv->self_url, "%s://%s:%d", srv->cfg->tls.cert[0] ? "https" : "http",
           host, srv->port);
  /* A server of several loads as a follower (nothing written) until it holds the lease. */
  if (srv->cfg->ha.on) srv->state->ledger_off = true;
  /* Clients and agents get 503 "loading" rather than a refused connection meanwhile. */
  int r = gp__srv_state_load(srv->state, time(NULL), gp_mono_ms(), err);
  if (r) {
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
    return r;
  }
  /* Agents could not heartbeat during the load: their timeout starts now. */
  int64_t now_ms = gp_mono_ms();
  for (int i = 0; i < srv->state->n_nodes; i++) srv->state->nodes[i]->last_seen_ms = now_ms;
  srv->next_tick_ms = srv->next_sched_ms = now_ms;
  srv->autoscale = gp__srv_autoscale_new(srv->cfg);
  srv->state->autoscale = srv->autoscale;
  /* Streams open once the store is loaded (until then every request gets 503). */
  srv->events = gp__srv_events_new(srv->cfg);
  srv->state->events = srv->events;
  /* Notifications go out only from a leader: a follower's state is reloaded as it leads. */
  srv->notify = gp__srv_notify_new(&srv->cfg->notify);
  if (!srv->cfg->ha.on) srv->state->notify = srv->notify;
  if (srv->cfg->ha.on) {
    srv->next_follow_ms = gp_mono_ms() + GP_SRV_FOLLOW_REFRESH_MS;
    r = gp__srv_leader_new(&srv->cfg->ha, srv->self_url, ha_wake, srv, &srv->leader, err);
    if (!r) r = gp__srv_leader_start(srv->leader, err);
    if (r) {
      MHD_stop_daemon(srv->mhd);
      srv->mhd = NULL;
      return r;
    }
  }
  atomic_store(&srv->role, srv->leader ? GP_SRV_FOLLOWER : GP_SRV_LEADER);
  atomic_store(&srv->loading, false);
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
  /* Log reads in flight are answered (503) and resumed: libmicrohttpd must not stop with
   * a connection suspended. */
  gp__srv_proxy_stop(srv->proxy);
  gp__srv_readers_stop(srv->readers); /* the same for long reads */
  gp__srv_events_close(srv->events); /* the same for event streams */
  if (srv->mhd) {
    MHD_stop_daemon(srv->mhd);
    srv->mhd = NULL;
  }
  /* Nothing writes any more: the lease goes, and a follower takes over at once. */
  gp__srv_leader_free(srv->leader);
  srv->leader = NULL;
  gp_tls_listener_free(srv->tls);
  srv->tls = NULL;
}

void gp_server_free(gp_server *srv) {
  if (!srv) return;
  gp_server_stop(srv);
  gp__srv_proxy_free(srv->proxy);
  gp__srv_readers_free(srv->readers);
  gp_tls_conns_free(srv->conns);
  gp__srv_autoscale_free(srv->autoscale);
  gp__srv_events_free(srv->events);
  gp__srv_notify_free(srv->notify); /* after the state thread: it queued the last ones */
  gp__srv_state_free(srv->state);
  gp_store_close(srv->store);
  free(srv->healthz);
  pthread_mutex_destroy(&srv->lock);
  pthread_cond_destroy(&srv->cond);
  free(srv);
}
