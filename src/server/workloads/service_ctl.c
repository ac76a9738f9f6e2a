/* SPDX-License-Identifier: Apache-2.0 */
/* The services' controller (service.h): on every state tick and after each API change it
 * compares each service's replicas (its jobs) with what the service wants, and acts:
 *   - replicas of the serving revision are made up to the desired count, a replacement
 *     waiting out the service's restart backoff (1 s, doubling to 60 s) after replicas
 *     that ended on their own;
 *   - a new revision rolls one replica at a time: at most one replica above the desired
 *     count (max surge 1), and a ready old replica is drained only while the others keep
 *     at least the desired count ready (max unavailable 0); a new replica counts once it
 *     stayed ready for min_healthy_s; when none becomes healthy within the progress
 *     deadline the rollout fails and the new replicas are drained, the old ones serving;
 *   - a replica leaves the endpoints (drain) drain_s before it is stopped, so that the
 *     load balancers fed by `gpool service endpoints --watch` stop sending to it first.
 * Readiness comes from the agents' heartbeats (gp__srv_service_replica_report). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/service.h"
#include "server/elastic/autoscale.h"
#include "server/streams/events.h"
#include "server/workloads/service.h"
#include "server/state/state.h"
#include "util/buf.h"
#include "util/mem.h"

#define BACKOFF_RESET_S 10 /* ready this long: the restart backoff starts again from 0 */

typedef struct reps {
  gp_srv_job **v;
  int n;
  size_t cap;
} reps;

static void collect(const gp_srv_state *s, const gp_srv_service *v, reps *out) {
  out->n = 0;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    if (!j->service || strcmp(j->service, v->name) != 0) continue;
    gp_xgrow((void **)&out->v, &out->cap, (size_t)out->n + 1, sizeof *out->v);
    out->v[out->n++] = j;
  }
}

static int64_t spec_int(const json_t *spec, const char *obj, const char *key, int64_t dflt) {
  const json_t *v = json_object_get(json_object_get(spec, obj), key);
  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static void note(gp_srv_service *v, const char *msg) {
  char buf[sizeof v->rollout_msg];
  snprintf(buf, sizeof buf, "%s", msg);
  if (strcmp(buf, v->rollout_msg) != 0) {
    snprintf(v->rollout_msg, sizeof v->rollout_msg, "%s", buf);
    v->dirty = true;
  }
}

/* Makes one replica of revision `rev`. A spec that no longer admits (its queue went, the
 * fleet cannot hold it) is said in the service's message, and nothing is made. */
static int make_replica(gp_srv_state *s, gp_srv_service *v, int rev, int64_t now, gp_err *err) {
  const json_t *spec = gp__srv_service_spec(v, rev);
  if (!spec) return 0;
  json_t *body = gp__srv_service_job_body(spec, v->owner);
  json_object_set_new(body, "name", json_string(v->name));
  gp_srv_job *j = NULL;
  gp_err e = {0};
  /* With the owner's rights now (a queue that no longer admits them makes no replica), or
   * an admin's where an admin applied the spec (a class the queue does not grant). */
  bool admin = json_is_true(json_object_get(spec, "admin_granted"));
  int r = gp__srv_job_parse(s->cfg, body, v->owner, admin, &j, &e);
  json_decref(body);
  if (!r) r = gp__srv_job_admit(s, j, admin, &e);
  if (!r) gp__srv_job_fleet_models(s, j);
  if (!r) r = gp__srv_check_feasible(s, j, &e);
  if (r) {
    gp__srv_job_free(j);
    char msg[sizeof v->rollout_msg];
    snprintf(msg, sizeof msg, "cannot make a replica: %.200s", e.message);
    note(v, msg);
    return 0;
  }
  j->service = gp_xstrdup(v->name);
  j->service_rev = rev;
  j->id = s->next_job_id;
  snprintf(j->idstr, sizeof j->idstr, "%lld", (long long)j->id);
  j->submitted_at = now;
  gp__srv_job_insert(s, j);
  s->sched_dirty = true;
  s->counters.submissions++;
  v->replicas_started++;
  json_t *extra = json_pack("{s:s, s:s, s:i}", "user", j->user, "service", v->name, "revision", rev);
  r = gp__srv_job_event(s, j, "submitted", now, extra, err);
  if (!r) r = gp__srv_persist_job(s, j, err);
  return r;
}

/* Takes a replica out of the endpoints; it is stopped drain_s later (finish_drain). A
 * replica that does not run yet ends at once. */
static int drain(gp_srv_state *s, gp_srv_service *v, gp_srv_job *j, const char *why, int64_t now, gp_err *err) {
  (void)v;
  if (j->svc_drain_at) return 0;
  j->svc_drain_at = now;
  gp__srv_events_note_job(s, j);
  if (j->state == GP_JOB_PENDING || j->state == GP_JOB_HELD)
    return gp__srv_job_end(s, j, GP_JOB_CANCELLED, why, now, err);
  if (j->state != GP_JOB_RUNNING) return 0;
  return gp__srv_job_event(s, j, "draining", now, json_pack("{s:s}", "reason", why), err);
}

static int finish_drain(gp_srv_state *s, gp_srv_job *j, int64_t drain_s, int64_t now, gp_err *err) {
  if (j->state != GP_JOB_RUNNING || now < j->svc_drain_at + drain_s) return 0;
  return gp__srv_job_stop(s, j, "cancelled", now, err);
}

static bool healthy(const gp_srv_job *j, int64_t min_healthy, int64_t now) {
  return j->state == GP_JOB_RUNNING && j->svc_ready && !j->svc_drain_at && now - j->svc_ready_at >= min_healthy;
}

/* Which replica to take away first: one not running, then one not ready, then the newest. */
static gp_srv_job *pick_victim(reps *cur, bool ready_too) {
  gp_srv_job *best = NULL;
  int best_rank = -1;
  for (int i = 0; i < cur->n; i++) {
    gp_srv_job *j = cur->v[i];
    if (j->svc_drain_at || j->state == GP_JOB_STOPPING) continue;
    int rank = j->state != GP_JOB_RUNNING ? 3 : !j->svc_ready ? 2 : ready_too ? 1 : -1;
    if (rank < 0) continue;
    if (rank > best_rank || (rank == best_rank && j->id > best->id)) {
      best = j;
      best_rank = rank;
    }
  }
  return best;
}

static int set_rollout(gp_srv_state *s, gp_srv_service *v, gp_srv_rollout ro, const char *msg, int64_t now,
                       gp_err *err) {
  v->rollout = ro;
  v->rollout_since = now;
  snprintf(v->rollout_msg, sizeof v->rollout_msg, "%s", msg);
  fprintf(stderr, "gpool server: service %s: revision %d: %s\n", v->name, v->rev, msg);
  return gp__srv_service_persist(s, v, err);
}

int gp__srv_service_reconcile(gp_srv_state *s, gp_srv_service *v, int64_t now, gp_err *err) {
  const json_t *spec = gp__srv_service_spec(v, v->rev);
  int serving = gp__srv_service_serving_rev(v);
  int64_t min_healthy = spec_int(spec, "rollout", "min_healthy_s", 5);
  int64_t deadline = spec_int(spec, "rollout", "progress_deadline_s", 600);
  int64_t drain_s = spec_int(spec, "rollout", "drain_s", 5);
  reps all = {0}, cur = {0}, old = {0};
  collect(s, v, &all);
  int r = 0;
  int ready_old = 0, healthy_cur = 0, unhealthy_cur = 0;
  for (int i = 0; i < all.n && !r; i++) {
    gp_srv_job *j = all.v[i];
    if (j->state == GP_JOB_STOPPING) continue;
    if (j->svc_drain_at) {
      r = finish_drain(s, j, drain_s, now, err);
      continue;
    }
    /* A replica of an equal spec counts as the serving revision's: a rollback to the spec
     * that runs keeps its replicas. */
    const json_t *js = j->service_rev == serving ? NULL : gp__srv_service_spec(v, j->service_rev);
    bool same = j->service_rev == serving || (js && json_equal(js, gp__srv_service_spec(v, serving)));
    reps *to = same ? &cur : &old;
    /* The backoff starts again from 0 once a replica stayed ready for a while (one that
     * crashes just after it starts must not reset it). */
    if (v->failures && j->state == GP_JOB_RUNNING && j->svc_ready && now - j->svc_ready_at >= BACKOFF_RESET_S) {
      v->failures = 0;
      v->next_start_at = 0;
      v->dirty = true;
    }
    gp_xgrow((void **)&to->v, &to->cap, (size_t)to->n + 1, sizeof *to->v);
    to->v[to->n++] = j;
    if (to == &old) ready_old += j->state == GP_JOB_RUNNING && j->svc_ready;
    else if (healthy(j, min_healthy, now)) healthy_cur++;
    else unhealthy_cur++;
  }
  if (!r && !v->deleting) r = gp__srv_service_autoscale(s, v, now, err);
  int desired = v->deleting ? 0 : v->replicas;
  bool rolling = v->rollout == GP_SRV_ROLLOUT_PROGRESSING && serving == v->rev;
  if (!r && rolling && healthy_cur > v->progress_healthy) { /* progress: the deadline starts again */
    v->progress_healthy = healthy_cur;
    v->rollout_since = now;
  }
  if (!r && rolling && unhealthy_cur > 0 && now - v->rollout_since > deadline) {
    /* The new revision missed its deadline: its replicas go, the last good one serves. */
    char msg[200];
    snprintf(msg, sizeof msg, "rollout failed: no new replica became healthy within %llds; %s",
             (long long)deadline, v->stable_rev ? "the last good revision keeps serving" : "no revision to fall back to");
    v->rollouts_failed++;
    r = set_rollout(s, v, GP_SRV_ROLLOUT_FAILED, msg, now, err);
    for (int i = 0; i < cur.n && !r && v->stable_rev; i++) r = drain(s, v, cur.v[i], "rollout failed", now, err);
    goto out;
  }
  if (!r && v->rollout == GP_SRV_ROLLOUT_FAILED) { /* the failed revision's leftovers */
    for (int i = 0; i < old.n && !r && v->stable_rev; i++)
      if (old.v[i]->service_rev == v->rev) r = drain(s, v, old.v[i], "rollout failed", now, err);
  }
  if (r) goto out;
  /* Old replicas: unready ones go at once while the count allows it; a ready one only when
   * the others keep `desired` ready. */
  for (int guard = 0; guard < old.n && !r; guard++) {
    gp_srv_job *o = pick_victim(&old, false);
    int live = cur.n + old.n;
    if (o && (live > desired || v->deleting)) {
      r = drain(s, v, o, "replaced by a new revision", now, err);
      for (int i = 0; i < old.n; i++)
        if (old.v[i] == o) old.v[i] = old.v[--old.n];
      continue;
    }
    o = pick_victim(&old, true);
    if (o && (v->deleting || healthy_cur + ready_old - 1 >= desired)) {
      r = drain(s, v, o, v->deleting ? "service deleted" : "replaced by a new revision", now, err);
      for (int i = 0; i < old.n; i++)
        if (old.v[i] == o) old.v[i] = old.v[--old.n];
      ready_old--;
      continue;
    }
    break;
  }
  /* New replicas: up to desired, one above the total while old ones remain (surge 1). */
  int room = old.n > 0 ? desired + 1 - (cur.n + old.n) : desired - cur.n;
  if (room > desired - cur.n) room = desired - cur.n;
  if (room > 0 && now < v->next_start_at) {
    char msg[96];
    snprintf(msg, sizeof msg, "replicas restart with backoff (%d s left)", (int)(v->next_start_at - now));
    note(v, msg);
  }
  for (int k = 0; k < room && !r && now >= v->next_start_at; k++) r = make_replica(s, v, serving, now, err);
  /* Too many of the serving revision (scaled down, or deleted). */
  for (int extra = cur.n - desired; extra > 0 && !r; extra--) {
    gp_srv_job *o = pick_victim(&cur, true);
    if (!o) break;
    r = drain(s, v, o, v->deleting ? "service deleted" : "scaled down", now, err);
  }
  /* Complete once every replica runs the current revision, healthy (also after a deadline
   * missed by a first revision, which had nothing to fall back to and kept trying). */
  if (!r && serving == v->rev && v->rollout != GP_SRV_ROLLOUT_COMPLETE && old.n == 0 && healthy_cur >= desired) {
    v->stable_rev = v->rev;
    v->progress_healthy = 0;
    r = set_rollout(s, v, GP_SRV_ROLLOUT_COMPLETE, "every replica runs the current revision", now, err);
  }
out:
  if (!r && v->dirty) {
    v->dirty = false;
    r = gp__srv_service_persist(s, v, err);
  }
  if (!r && v->deleting && all.n == 0) {
    fprintf(stderr, "gpool server: service %s deleted\n", v->name);
    r = gp__srv_service_unpersist(s, v->name, err);
    if (!r) gp__srv_service_remove(s, v);
  }
  free(all.v);
  free(cur.v);
  free(old.v);
  return r;
}

int gp__srv_services_tick(gp_srv_state *s, int64_t now, gp_err *err) {
  gp__srv_services *sv = s->services;
  int r = 0;
  /* Backwards: a deleted service leaves the list. */
  for (int i = sv ? sv->n - 1 : -1; i >= 0 && !r; i--) r = gp__srv_service_reconcile(s, sv->v[i], now, err);
  return r;
}

void gp__srv_service_replica_moved(gp_srv_state *s, gp_srv_job *j, int old, int st) {
  if (st == GP_JOB_RUNNING) return;
  j->svc_ready = false;
  j->svc_ready_at = 0;
  if (st != GP_JOB_STOPPING) j->svc_port = 0;
  if (!gp_job_state_is_final((gp_job_state)st) || old == st) return;
  gp_srv_service *v = gp__srv_service_get(s, j->service);
  if (!v || j->svc_drain_at) return;
  /* It ended on its own (exited, failed a probe, was cancelled by hand): replaced after a
   * backoff that doubles with each such end in a row, up to a minute. */
  v->failures++;
  v->replicas_failed++;
  int shift = v->failures - 1 > 6 ? 6 : v->failures - 1;
  int64_t wait = (int64_t)1 << shift;
  v->next_start_at = (int64_t)time(NULL) + (wait > 60 ? 60 : wait);
  v->dirty = true;
}

int gp__srv_service_replica_report(gp_srv_state *s, gp_srv_job *j, const json_t *entry, int64_t now, gp_err *err) {
  if (j->state != GP_JOB_RUNNING) return 0;
  const json_t *port = json_object_get(entry, "port"), *ready = json_object_get(entry, "ready");
  const char *probe = json_string_value(json_object_get(entry, "probe"));
  if (json_is_integer(port) && json_integer_value(port) > 0 && json_integer_value(port) <= 65535)
    j->svc_port = (int)json_integer_value(port);
  if (probe) { /* the agent's words, untrusted: bounded, one printable line */
    snprintf(j->svc_probe, sizeof j->svc_probe, "%s", probe);
    for (char *c = j->svc_probe; *c; c++)
      if ((unsigned char)*c < ' ' || *c == 0x7f) *c = ' ';
  }
  const json_t *metric = json_object_get(entry, "metric");
  /* The replica's own figure: untrusted twice over (the replica, then the agent). */
  if (json_is_number(metric) && json_number_value(metric) >= 0 && json_number_value(metric) <= 1e12) {
    j->svc_metric = json_number_value(metric);
    j->svc_metric_at = now;
  }
  if (!json_is_boolean(ready)) return 0;
  bool now_ready = json_is_true(ready) && j->svc_port > 0;
  if (now_ready == j->svc_ready) return 0;
  j->svc_ready = now_ready;
  j->svc_ready_at = now_ready ? now : 0;
  gp__srv_events_note_job(s, j);
  gp_srv_service *v = gp__srv_service_get(s, j->service);
  if (v && !now_ready) v->unready_total++;
  return gp__srv_job_event(s, j, now_ready ? "ready" : "unready", now,
                           json_pack("{s:i, s:s}", "port", j->svc_port, "probe", j->svc_probe), err);
}

static void probe_from(const json_t *o, gp_proto_probe *p) {
  memset(p, 0, sizeof *p);
  const char *path = json_string_value(json_object_get(o, "path"));
  if (!path || !gp_proto_probe_path_valid(path)) return;
  snprintf(p->path, sizeof p->path, "%s", path);
  p->period_s = (int)json_integer_value(json_object_get(o, "period_s"));
  p->timeout_s = (int)json_integer_value(json_object_get(o, "timeout_s"));
  p->failure_threshold = (int)json_integer_value(json_object_get(o, "failure_threshold"));
  p->initial_delay_s = (int)json_integer_value(json_object_get(o, "initial_delay_s"));
  p->set = true;
}

bool gp__srv_service_replica_order(const gp_srv_state *s, const gp_srv_job *j, gp_proto_service *ret) {
  memset(ret, 0, sizeof *ret);
  gp_srv_service *v = gp__srv_service_get(s, j->service);
  const json_t *spec = v ? gp__srv_service_spec(v, j->service_rev) : NULL;
  if (!spec) return false;
  snprintf(ret->name, sizeof ret->name, "%s", v->name);
  const json_t *pr = json_object_get(spec, "probes");
  probe_from(json_object_get(pr, "startup"), &ret->startup);
  probe_from(json_object_get(pr, "readiness"), &ret->readiness);
  probe_from(json_object_get(pr, "liveness"), &ret->liveness);
  const json_t *as = json_object_get(spec, "autoscale");
  const char *path = json_string_value(json_object_get(as, "path")), *m = json_string_value(json_object_get(as, "metric"));
  if (path && m && gp_proto_probe_path_valid(path) && gp_proto_metric_name_valid(m)) {
    snprintf(ret->metrics_path, sizeof ret->metrics_path, "%s", path);
    snprintf(ret->metric, sizeof ret->metric, "%s", m);
    ret->metrics_period_s = (int)json_integer_value(json_object_get(as, "period_s"));
  }
  return true;
}

void gp__srv_services_rebuild(gp_srv_state *s) {
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    if (!j->service || j->state != GP_JOB_RUNNING) continue;
    /* This run's readiness and drain, from its timeline since its last start. */
    size_t n = json_array_size(j->timeline), from = 0;
    for (size_t i = n; i-- > 0;) {
      const char *ev = json_string_value(json_object_get(json_array_get(j->timeline, i), "event"));
      if (ev && strcmp(ev, "started") == 0) {
        from = i;
        break;
      }
    }
    for (size_t i = from; i < n; i++) {
      const json_t *e = json_array_get(j->timeline, i);
      const char *ev = json_string_value(json_object_get(e, "event"));
      int64_t at = json_integer_value(json_object_get(e, "at"));
      json_int_t port = json_integer_value(json_object_get(e, "port"));
      if (!ev) continue;
      if (strcmp(ev, "ready") == 0 && port > 0 && port <= 65535) {
        j->svc_ready = true;
        j->svc_ready_at = at;
        j->svc_port = (int)port;
      } else if (strcmp(ev, "unready") == 0) {
        j->svc_ready = false;
        j->svc_ready_at = 0;
      } else if (strcmp(ev, "draining") == 0) {
        j->svc_drain_at = at > 0 ? at : 1;
      }
    }
  }
}

/* The host of an agent's URL ("http://10.0.0.5:9090" -> "10.0.0.5"; "[::1]" kept whole). */
static void url_host(const char *url, char *buf, size_t size) {
  buf[0] = '\0';
  if (!url) return;
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  size_t n = p[0] == '[' ? strcspn(p, "]") + 1 : strcspn(p, ":/");
  if (n >= size) n = size - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
}

json_t *gp__srv_service_endpoints(const gp_srv_state *s, const gp_srv_service *v) {
  json_t *list = json_array();
  for (int a = 0; a < s->n_active; a++) {
    const gp_srv_job *j = s->active[a];
    if (!j->service || strcmp(j->service, v->name) != 0 || j->state != GP_JOB_RUNNING || !j->svc_ready ||
        j->svc_drain_at || j->svc_port <= 0 || j->n_alloc < 1)
      continue;
    int ni = j->alloc[0].node;
    if (ni < 0 || ni >= s->n_nodes) continue;
    const gp_srv_node *n = s->nodes[ni];
    char host[256];
    url_host(n->agent_url, host, sizeof host);
    if (!host[0]) continue;
    json_array_append_new(list, json_pack("{s:s, s:i, s:s, s:s, s:i}", "host", host, "port", j->svc_port, "node",
                                          n->name, "job", j->idstr, "revision", j->service_rev));
  }
  return list;
}

void gp__srv_services_metrics(const gp_srv_state *s, gp_buf *out) {
  const gp__srv_services *sv = s->services;
  if (!sv || sv->n == 0) return;
  static const char *const names[][2] = {
      {"gpool_service_replicas_desired", "gauge"},   {"gpool_service_replicas_ready", "gauge"},
      {"gpool_service_replicas_running", "gauge"},   {"gpool_service_revision", "gauge"},
      {"gpool_service_replicas_failed_total", "counter"}, {"gpool_service_rollouts_failed_total", "counter"},
      {"gpool_service_unready_total", "counter"}, {"gpool_service_scale_ups_total", "counter"},
      {"gpool_service_scale_downs_total", "counter"}};
  for (size_t m = 0; m < sizeof names / sizeof names[0]; m++) {
    gp_buf_printf(out, "# TYPE %s %s\n", names[m][0], names[m][1]);
    for (int i = 0; i < sv->n; i++) {
      const gp_srv_service *v = sv->v[i];
      long long val = 0;
      if (m == 0) val = v->deleting ? 0 : v->replicas;
      else if (m == 1) {
        json_t *e = gp__srv_service_endpoints(s, v);
        val = (long long)json_array_size(e);
        json_decref(e);
      } else if (m == 2) {
        for (int a = 0; a < s->n_active; a++)
          val += s->active[a]->service && !strcmp(s->active[a]->service, v->name) &&
                 s->active[a]->state == GP_JOB_RUNNING;
      } else if (m == 3) val = v->rev;
      else if (m == 4) val = (long long)v->replicas_failed;
      else if (m == 5) val = (long long)v->rollouts_failed;
      else if (m == 6) val = (long long)v->unready_total;
      else if (m == 7) val = (long long)v->scale_ups;
      else val = (long long)v->scale_downs;
      gp_buf_printf(out, "%s{service=\"%s\"} %lld\n", names[m][0], v->name, val);
    }
  }
}
