/* SPDX-License-Identifier: Apache-2.0 */
/* The server's state thread (server.c tells the whole design): it takes the queued
 * requests as one batch, handles them in one store transaction, commits, then answers;
 * between batches it runs the scheduler, the ticks and the parked long polls; when a
 * commit fails it reloads the state and refuses writes until the store recovers; with
 * high availability it follows the lease (leads, steps down, or follows the leader). */
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

#include "server/cycle/agent_api.h"
#include "server/cycle/parts.h"
#include "server/cycle/schedule.h"
#include "server/elastic/autoscale.h"
#include "server/front/routes.h"
#include "server/streams/events.h"
#include "server/leadership/follower.h"
#include "server/leadership/leader.h"
#include "server/front/logproxy.h"
#include "server/front/readers.h"
#include "server/state/notify_job.h"
#include "server/accounting/advice.h"
#include "server/accounting/ledger.h"
#include "server/accounting/report.h"
#include "server/state/server_int.h"
#include "server/front/server_obj.h"
#include "server/front/web.h"
#include "tls/conns.h"
#include "tls/dial.h"
#include "tls/listen.h"
#include "util/clock.h"
#include "util/fileperm.h"
#include "util/mem.h"
#include "util/units.h"

static void fail_503(gp_srv_req *r, const char *why) {
  r->parked = false;
  gp__srv_reply_error(r, 503, "unavailable", NULL, "%s", why);
  gp__srv_conn_resume(r);
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
  gp_srv_state *s = gp__srv_state_make(srv->cfg, srv->store);
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
  s->sessions = old->sessions;
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
    gp__srv_conn_resume(w);
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
    else gp__srv_conn_resume(r);
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
    if (r->in_batch) gp__srv_conn_resume(r);
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
    gp__srv_conn_resume(r);
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
  s->sessions = old->sessions;
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

void gp__srv_loop_ha_wake(void *ctx) {
  gp_server *srv = ctx;
  pthread_mutex_lock(&srv->lock);
  pthread_cond_signal(&srv->cond);
  pthread_mutex_unlock(&srv->lock);
}

void *gp__srv_loop_main(void *arg) {
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
