/* SPDX-License-Identifier: Apache-2.0 */
/* /v1/services (docs/api.md, docs/services.md), on the state thread: list, show, apply
 * (PUT), delete, scale, restart, rollback and the ready endpoints. A service is its owner's
 * like a job: another user reads it (without its command and environment) but cannot
 * change it; admins can. A spec is checked as its replicas' jobs will be (queue, class,
 * limits, what the fleet can hold) before anything is kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/service.h"
#include "server/front/routes.h"
#include "server/state/server_int.h"
#include "server/elastic/autoscale.h"
#include "server/workloads/service.h"
#include "util/mem.h"

static bool may_change(const gp_srv_req *r, const gp_srv_service *v) {
  return gp__srv_req_admin(r) || strcmp(r->user, v->owner) == 0;
}

static json_t *spec_for(const gp_srv_req *r, const gp_srv_service *v, const json_t *spec) {
  json_t *o = json_deep_copy(spec);
  if (may_change(r, v) || !o) return o;
  /* A command line and an environment carry API keys: the owner's and the admins' only. */
  if (json_object_get(o, "command")) json_object_set_new(o, "command", json_string("(hidden)"));
  if (json_object_get(o, "env")) json_object_set_new(o, "env", json_string("(hidden)"));
  return o;
}

static json_t *service_json(gp_srv_state *s, const gp_srv_req *r, const gp_srv_service *v, bool full) {
  const json_t *spec = gp__srv_service_spec(v, v->rev);
  const json_t *rs = json_object_get(spec, "replicas");
  json_t *eps = gp__srv_service_endpoints(s, v);
  int running = 0, total = 0;
  json_t *reps = json_array();
  for (int a = 0; a < s->n_active; a++) {
    const gp_srv_job *j = s->active[a];
    if (!j->service || strcmp(j->service, v->name) != 0) continue;
    total++;
    running += j->state == GP_JOB_RUNNING;
    if (!full) continue;
    const char *node = j->n_alloc > 0 && j->alloc[0].node >= 0 && j->alloc[0].node < s->n_nodes
                           ? s->nodes[j->alloc[0].node]->name
                           : NULL;
    json_array_append_new(reps, json_pack("{s:s, s:s, s:i, s:s?, s:i, s:b, s:I, s:b, s:s}", "job", j->idstr, "state",
                                          gp_job_state_name(j->state), "revision", j->service_rev, "node", node,
                                          "port", j->svc_port, "ready", j->svc_ready, "ready_since",
                                          (json_int_t)j->svc_ready_at, "draining", j->svc_drain_at != 0,
                                          "last_probe", j->svc_probe));
  }
  json_t *o = json_pack("{s:s, s:s, s:i, s:i, s:i, s:{s:i, s:O, s:O, s:I, s:i, s:i}, s:{s:s, s:I, s:s}, s:b, s:I, s:I}",
                        "name", v->name, "owner", v->owner, "revision", v->rev, "stable_revision", v->stable_rev,
                        "serving_revision", gp__srv_service_serving_rev(v), "replicas", "desired",
                        v->deleting ? 0 : v->replicas, "min", json_object_get(rs, "min"), "max",
                        json_object_get(rs, "max"), "ready", (json_int_t)json_array_size(eps), "running", running,
                        "total", total, "rollout", "state", gp__srv_rollout_name(v->rollout), "since",
                        (json_int_t)v->rollout_since, "message", v->rollout_msg, "deleting", v->deleting,
                        "created_at", (json_int_t)v->created_at, "updated_at", (json_int_t)v->updated_at);
  json_object_set_new(o, "spec", spec_for(r, v, spec));
  json_decref(eps);
  if (!full) {
    json_decref(reps);
    return o;
  }
  json_object_set_new(o, "replica_jobs", reps);
  json_t *revs = json_array();
  size_t i;
  const json_t *e;
  json_array_foreach(v->revisions, i, e) {
    json_t *x = json_pack("{s:O, s:O, s:O, s:O}", "revision", json_object_get(e, "revision"), "at",
                          json_object_get(e, "at"), "by", json_object_get(e, "by"), "note", json_object_get(e, "note"));
    if (x) json_array_append_new(revs, x);
  }
  json_object_set_new(o, "revisions", revs);
  json_object_set_new(o, "decisions", v->decisions ? json_deep_copy(v->decisions) : json_array());
  return o;
}

static void reply_service(gp_srv_state *s, gp_srv_req *r, int status, const gp_srv_service *v) {
  gp__srv_reply_json(r, status, json_pack("{s:o}", "service", service_json(s, r, v, true)));
}

/* Checks a normalised spec as the owner's replicas will be checked, fills in the queue and
 * the class in force (the `inference` class by default, where the owner may have it).
 * Answers r and returns false when it does not admit. */
static bool admit(gp_srv_state *s, gp_srv_req *r, json_t *spec, const char *owner) {
  bool admin = gp__srv_req_admin(r);
  bool default_class = !json_object_get(spec, "priority");
  json_t *body = gp__srv_service_job_body(spec, owner);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  int rc = gp__srv_job_parse(s->cfg, body, r->user, admin, &j, &e);
  json_decref(body);
  if (!rc) rc = gp__srv_job_admit(s, j, admin, &e);
  if (!rc) gp__srv_job_fleet_models(s, j);
  if (!rc) rc = gp__srv_check_feasible(s, j, &e);
  if (rc) {
    gp__srv_job_free(j);
    gp__srv_reply_err(r, rc, &e);
    return false;
  }
  json_object_set_new(spec, "queue", json_string(j->queue));
  const gp_srv_queue *q = gp__srv_queue_get(s, j->queue);
  if (default_class && gp_priority_class_find(&s->cfg->policy, "inference") &&
      (admin || (q && gp__srv_queue_allows_class(s, q, "inference"))))
    json_object_set_new(spec, "priority", json_string("inference"));
  gp__srv_job_free(j);
  return true;
}

static int apply(gp_srv_state *s, gp_srv_req *r, const char *name, gp_srv_service *v, int64_t now, gp_err *err) {
  if (v && !may_change(r, v)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                        "service %s belongs to %s; only its owner or an admin may change it", name, v->owner);
    return 0;
  }
  if (v && v->deleting) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "service %s is being deleted", name);
    return 0;
  }
  const char *given = json_string_value(json_object_get(r->json, "name"));
  if (given && strcmp(given, name) != 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "name", "the spec names service %.64s, the path %s", given, name);
    return 0;
  }
  json_t *spec = NULL;
  gp_err e = {0};
  int rc = gp__srv_service_spec_parse(r->json, &spec, &e);
  if (rc) {
    gp__srv_reply_err(r, rc, &e);
    return 0;
  }
  if (!admit(s, r, spec, v ? v->owner : r->user)) {
    json_decref(spec);
    return 0;
  }
  /* An admin may grant what the owner could not ask for (a class): the replicas are then
   * made with an admin's rights. */
  if (gp__srv_req_admin(r)) json_object_set_new(spec, "admin_granted", json_true());
  if (v && json_equal(spec, gp__srv_service_spec(v, v->rev))) {
    json_decref(spec);
    reply_service(s, r, 200, v); /* unchanged: no new revision */
    return 0;
  }
  const json_t *rs = json_object_get(spec, "replicas");
  int mn = (int)json_integer_value(json_object_get(rs, "min")), mx = (int)json_integer_value(json_object_get(rs, "max"));
  bool created = !v;
  if (created) {
    if (s->services && s->services->n >= GP_SRV_SERVICES_MAX) {
      json_decref(spec);
      gp__srv_reply_error(r, 409, "conflict", NULL, "the pool holds %d services, the most it takes", GP_SRV_SERVICES_MAX);
      return 0;
    }
    v = gp_xcalloc(1, sizeof *v);
    v->name = gp_xstrdup(name);
    v->owner = gp_xstrdup(r->user);
    v->revisions = json_array();
    v->created_at = now;
    v->replicas = (int)json_integer_value(json_object_get(rs, "initial"));
    gp__srv_service_add(s, v);
  }
  if (v->replicas < mn) v->replicas = mn;
  if (v->replicas > mx) v->replicas = mx;
  gp__srv_service_add_rev(v, spec, r->user, created ? "created" : "applied", now);
  v->updated_at = now;
  v->rollout = GP_SRV_ROLLOUT_PROGRESSING;
  v->rollout_since = now;
  v->progress_healthy = 0;
  snprintf(v->rollout_msg, sizeof v->rollout_msg, "rolling out revision %d", v->rev);
  rc = gp__srv_service_persist(s, v, err);
  if (!rc) rc = gp__srv_service_reconcile(s, v, now, err);
  if (!rc) reply_service(s, r, created ? 201 : 200, v);
  return rc;
}

/* A new revision with the spec of revision `from` (restart: the current one, marked so that
 * its replicas count as different and are replaced). */
static int new_rev_from(gp_srv_state *s, gp_srv_req *r, gp_srv_service *v, int from, const char *note, bool restart,
                        int64_t now, gp_err *err) {
  const json_t *src = gp__srv_service_spec(v, from);
  if (!src) {
    gp__srv_reply_error(r, 404, "not_found", "revision", "service %s keeps no revision %d", v->name, from);
    return 0;
  }
  json_t *spec = json_deep_copy(src);
  if (restart) json_object_set_new(spec, "restarted_at", json_integer(now));
  else json_object_del(spec, "restarted_at");
  gp__srv_service_add_rev(v, spec, r->user, note, now);
  v->updated_at = now;
  v->rollout = GP_SRV_ROLLOUT_PROGRESSING;
  v->rollout_since = now;
  v->progress_healthy = 0;
  snprintf(v->rollout_msg, sizeof v->rollout_msg, "rolling out revision %d (%s)", v->rev, note);
  int rc = gp__srv_service_persist(s, v, err);
  if (!rc) rc = gp__srv_service_reconcile(s, v, now, err);
  if (!rc) reply_service(s, r, 200, v);
  return rc;
}

static int action(gp_srv_state *s, gp_srv_req *r, gp_srv_service *v, const char *what, int64_t now, gp_err *err) {
  if (!gp__srv_req_method(r, "POST")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/services/{name}/%s", what);
    return 0;
  }
  if (!may_change(r, v)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                        "service %s belongs to %s; only its owner or an admin may %s it", v->name, v->owner, what);
    return 0;
  }
  if (v->deleting) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "service %s is being deleted", v->name);
    return 0;
  }
  if (r->json && !json_is_object(r->json)) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON object");
    return 0;
  }
  if (strcmp(what, "scale") == 0) {
    const json_t *rs = json_object_get(gp__srv_service_spec(v, v->rev), "replicas");
    json_int_t mn = json_integer_value(json_object_get(rs, "min")), mx = json_integer_value(json_object_get(rs, "max"));
    const json_t *n = json_object_get(r->json, "replicas");
    if (!json_is_integer(n) || json_integer_value(n) < mn || json_integer_value(n) > mx) {
      gp__srv_reply_error(r, 400, "invalid_argument", "replicas",
                          "replicas must be an integer within the spec's [min, max] = [%lld, %lld]", (long long)mn,
                          (long long)mx);
      return 0;
    }
    v->replicas = (int)json_integer_value(n);
    v->updated_at = now;
    int rc = gp__srv_service_persist(s, v, err);
    if (!rc) rc = gp__srv_service_reconcile(s, v, now, err);
    if (!rc) reply_service(s, r, 200, v);
    return rc;
  }
  if (strcmp(what, "restart") == 0) return new_rev_from(s, r, v, v->rev, "restart", true, now, err);
  if (strcmp(what, "wake") == 0) {
    int rc = gp__srv_service_wake(s, v, r->user, now, err);
    if (!rc) rc = gp__srv_service_reconcile(s, v, now, err);
    if (!rc) reply_service(s, r, 200, v);
    return rc;
  }
  if (strcmp(what, "rollback") == 0) {
    const json_t *to = json_object_get(r->json, "revision");
    int target = 0;
    if (to && !json_is_null(to)) {
      if (!json_is_integer(to) || json_integer_value(to) < 1 || json_integer_value(to) >= v->rev) {
        gp__srv_reply_error(r, 400, "invalid_argument", "revision", "revision must be an earlier revision's number");
        return 0;
      }
      target = (int)json_integer_value(to);
    } else if (v->rollout == GP_SRV_ROLLOUT_FAILED && v->stable_rev) {
      target = v->stable_rev; /* back to what serves */
    } else {
      size_t i;
      const json_t *e;
      json_array_foreach(v->revisions, i, e) {
        int x = (int)json_integer_value(json_object_get(e, "revision"));
        if (x < v->rev && x > target) target = x;
      }
    }
    if (!target) {
      gp__srv_reply_error(r, 409, "conflict", "revision", "service %s has no earlier revision to go back to", v->name);
      return 0;
    }
    char note[64];
    snprintf(note, sizeof note, "rollback to revision %d", target);
    return new_rev_from(s, r, v, target, note, false, now, err);
  }
  gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, r->path);
  return 0;
}

static void endpoints(gp_srv_state *s, gp_srv_req *r, const gp_srv_service *v) {
  static const char *const keys[] = {"format", NULL};
  if (!gp__srv_query_known(r, keys, "the endpoints take format (json or http_sd)")) return;
  const char *fmt = gp__srv_req_query(r, "format");
  json_t *eps = gp__srv_service_endpoints(s, v);
  if (!fmt || strcmp(fmt, "json") == 0) {
    gp__srv_reply_json(r, 200, json_pack("{s:s, s:i, s:o}", "service", v->name, "revision",
                                         gp__srv_service_serving_rev(v), "endpoints", eps));
    return;
  }
  if (strcmp(fmt, "http_sd") != 0) {
    json_decref(eps);
    gp__srv_reply_error(r, 400, "invalid_argument", "format", "format is json or http_sd");
    return;
  }
  /* Prometheus's HTTP service discovery: [{"targets": [...], "labels": {...}}]. */
  json_t *targets = json_array();
  size_t i;
  const json_t *e;
  json_array_foreach(eps, i, e) {
    char t[300];
    const char *h = json_string_value(json_object_get(e, "host"));
    snprintf(t, sizeof t, strchr(h, ':') && h[0] != '[' ? "[%s]:%lld" : "%s:%lld", h,
             (long long)json_integer_value(json_object_get(e, "port")));
    json_array_append_new(targets, json_string(t));
  }
  json_decref(eps);
  json_t *list = json_array();
  if (json_array_size(targets) > 0)
    json_array_append_new(list, json_pack("{s:o, s:{s:s}}", "targets", targets, "labels", "service", v->name));
  else json_decref(targets);
  gp__srv_reply_json(r, 200, list);
}

int gp__srv_services_route(gp_srv_state *s, gp_srv_req *r, const char *rest, int64_t now, gp_err *err) {
  if (!*rest || strcmp(rest, "/") == 0) {
    if (!gp__srv_req_method(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/services");
      return 0;
    }
    json_t *list = json_array();
    for (int i = 0; s->services && i < s->services->n; i++)
      json_array_append_new(list, service_json(s, r, s->services->v[i], false));
    gp__srv_reply_json(r, 200, json_pack("{s:o}", "services", list));
    return 0;
  }
  rest++; /* past the '/' */
  char name[GP_PROTO_SERVICE_NAME_MAX];
  size_t len = strcspn(rest, "/");
  if (len >= sizeof name) len = sizeof name; /* too long: not valid below */
  snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), rest);
  const char *act = rest[len] == '/' ? rest + len + 1 : "";
  if (len >= sizeof name || !gp_proto_service_name_valid(name)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "name",
                        "a service name is [a-z][a-z0-9-]*, at most %d bytes", GP_PROTO_SERVICE_NAME_MAX - 1);
    return 0;
  }
  gp_srv_service *v = gp__srv_service_get(s, name);
  if (!*act && gp__srv_req_method(r, "PUT")) {
    if (!json_is_object(r->json)) {
      gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a service spec (a JSON object)");
      return 0;
    }
    return apply(s, r, name, v, now, err);
  }
  if (!v) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "no service %s", name);
    return 0;
  }
  if (!*act && gp__srv_req_method(r, "GET")) {
    reply_service(s, r, 200, v);
    return 0;
  }
  if (!*act && gp__srv_req_method(r, "DELETE")) {
    if (!may_change(r, v)) {
      gp__srv_reply_error(r, 403, "permission_denied", NULL,
                          "service %s belongs to %s; only its owner or an admin may delete it", v->name, v->owner);
      return 0;
    }
    v->deleting = true;
    v->updated_at = now;
    int rc = gp__srv_service_persist(s, v, err);
    json_t *o = rc ? NULL : service_json(s, r, v, true);
    if (!rc) rc = gp__srv_service_reconcile(s, v, now, err); /* may free v */
    if (!rc) gp__srv_reply_json(r, 202, json_pack("{s:o}", "service", o));
    else json_decref(o);
    return rc;
  }
  if (!*act) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET, PUT or DELETE on /v1/services/{name}");
    return 0;
  }
  if (strcmp(act, "endpoints") == 0) {
    if (!gp__srv_req_method(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/services/{name}/endpoints");
      return 0;
    }
    endpoints(s, r, v);
    return 0;
  }
  return action(s, r, v, act, now, err);
}
