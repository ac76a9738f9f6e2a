/* SPDX-License-Identifier: Apache-2.0 */
/* Services, the record itself (service.h): the spec a user applies, validated and
 * normalised (defaults filled in, so a revision says everything it ran with), its
 * revisions, and its stored form in the store's settings. What the state does with a
 * service is in service_ctl.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/service.h"
#include "server/workloads/service.h"
#include "server/state/state.h"
#include "util/mem.h"

/* Keys of a spec that are a replica's job request, passed to the job parser as they are
 * (it checks them and names them in its errors). */
static const char *const job_keys[] = {"queue", "priority", "command", "env", "workdir", "gpus", "gpu_fraction",
                                       "gpu_mem_mib", "mig", "gpu_types", "cpus", "mem_mib", "grace_s", "signal",
                                       "node_selector", "allow_spot", "image", "container_env", "container_mounts",
                                       "container_workdir", "model", NULL};
static const char *const own_keys[] = {"name", "replicas", "probes", "rollout", "autoscale", NULL};

static int bad(gp_err *err, const char *field, const char *msg) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s", msg);
}

static bool is_key(const char *const *keys, const char *k) {
  for (int i = 0; keys[i]; i++)
    if (strcmp(keys[i], k) == 0) return true;
  return false;
}

/* An integer member in [lo, hi], or dflt when absent. */
static int get_int(const json_t *o, const char *key, const char *field, int64_t lo, int64_t hi, int64_t dflt,
                   int64_t *ret, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) {
    *ret = dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s must be an integer from %lld to %lld", field,
                      (long long)lo, (long long)hi);
  *ret = json_integer_value(v);
  return 0;
}

static int check_keys(const json_t *o, const char *const *keys, const char *field, gp_err *err) {
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    if (is_key(keys, k)) continue;
    char f[160];
    snprintf(f, sizeof f, "%s%s%.100s", field, *field ? "." : "", k);
    return gp_err_set(err, GP_EINVAL, NULL, 0, f, "unknown field %s", f);
  }
  return 0;
}

static int parse_replicas(const json_t *v, json_t **ret, gp_err *err) {
  int64_t mn, mx, init;
  if (!v || json_is_null(v)) {
    mn = mx = init = 1;
  } else if (json_is_integer(v)) {
    if (json_integer_value(v) < 0 || json_integer_value(v) > GP_SRV_SERVICE_REPLICAS_MAX)
      return bad(err, "replicas", "replicas must be from 0 to 1000");
    mn = mx = init = json_integer_value(v);
  } else if (json_is_object(v)) {
    static const char *const keys[] = {"min", "max", "initial", NULL};
    int r = check_keys(v, keys, "replicas", err);
    if (!r) r = get_int(v, "min", "replicas.min", 0, GP_SRV_SERVICE_REPLICAS_MAX, 1, &mn, err);
    if (!r) r = get_int(v, "max", "replicas.max", 0, GP_SRV_SERVICE_REPLICAS_MAX, mn > 1 ? mn : 1, &mx, err);
    if (!r) r = get_int(v, "initial", "replicas.initial", 0, GP_SRV_SERVICE_REPLICAS_MAX, mn, &init, err);
    if (r) return r;
  } else {
    return bad(err, "replicas", "replicas is a count or {min, max, initial}");
  }
  if (mx < 1) return bad(err, "replicas.max", "replicas.max must be at least 1");
  if (mn > mx) return bad(err, "replicas.min", "replicas.min must not exceed replicas.max");
  if (init < mn || init > mx) return bad(err, "replicas.initial", "replicas.initial must lie within [min, max]");
  *ret = json_pack("{s:I, s:I, s:I}", "min", (json_int_t)mn, "max", (json_int_t)mx, "initial", (json_int_t)init);
  return 0;
}

/* One probe: {path, period_s, timeout_s, failure_threshold, initial_delay_s}, or a path. */
static int parse_probe(const json_t *v, const char *field, int period, int threshold, json_t **ret, gp_err *err) {
  *ret = NULL;
  if (!v || json_is_null(v)) return 0;
  char f[96];
  const json_t *path = json_is_string(v) ? v : json_object_get(v, "path");
  if (!json_is_string(v) && !json_is_object(v)) return bad(err, field, "a probe is a path or an object with a path");
  if (json_is_object(v)) {
    static const char *const keys[] = {"path", "period_s", "timeout_s", "failure_threshold", "initial_delay_s", NULL};
    int r = check_keys(v, keys, field, err);
    if (r) return r;
  }
  snprintf(f, sizeof f, "%s.path", field);
  if (!json_is_string(path) || !gp_proto_probe_path_valid(json_string_value(path)))
    return bad(err, f, "a probe path starts with / and holds printable ASCII without spaces (at most 127 bytes)");
  int64_t per, to, th, delay;
  const json_t *o = json_is_object(v) ? v : NULL;
  int r = 0;
  snprintf(f, sizeof f, "%s.period_s", field);
  r = get_int(o, "period_s", f, 1, 3600, period, &per, err);
  snprintf(f, sizeof f, "%s.timeout_s", field);
  if (!r) r = get_int(o, "timeout_s", f, 1, 60, 1, &to, err);
  snprintf(f, sizeof f, "%s.failure_threshold", field);
  if (!r) r = get_int(o, "failure_threshold", f, 1, 1000, threshold, &th, err);
  snprintf(f, sizeof f, "%s.initial_delay_s", field);
  if (!r) r = get_int(o, "initial_delay_s", f, 0, 86400, 0, &delay, err);
  if (r) return r;
  *ret = json_pack("{s:s, s:I, s:I, s:I, s:I}", "path", json_string_value(path), "period_s", (json_int_t)per,
                   "timeout_s", (json_int_t)to, "failure_threshold", (json_int_t)th, "initial_delay_s",
                   (json_int_t)delay);
  return 0;
}

static int parse_probes(const json_t *v, json_t **ret, gp_err *err) {
  json_t *out = json_object(), *p = NULL;
  if (v && !json_is_null(v) && !json_is_object(v)) {
    json_decref(out);
    return bad(err, "probes", "probes is an object: {startup, readiness, liveness}");
  }
  static const char *const keys[] = {"startup", "readiness", "liveness", NULL};
  int r = v && json_is_object(v) ? check_keys(v, keys, "probes", err) : 0;
  /* Readiness every 2 s, out after 3 failures; liveness every 5 s, restart after 3. */
  if (!r) r = parse_probe(json_object_get(v, "readiness"), "probes.readiness", 2, 3, &p, err);
  if (!r) json_object_set_new(out, "readiness", p ? p : json_null());
  if (!r) r = parse_probe(json_object_get(v, "liveness"), "probes.liveness", 5, 3, &p, err);
  if (!r) json_object_set_new(out, "liveness", p ? p : json_null());
  /* Startup: generous, since models take minutes to load (2 s x 300 = 10 minutes); by
   * default on the readiness probe's path. */
  if (!r) r = parse_probe(json_object_get(v, "startup"), "probes.startup", 2, 300, &p, err);
  if (!r && !p) {
    const json_t *rd = json_object_get(out, "readiness");
    if (json_is_object(rd))
      p = json_pack("{s:O, s:i, s:i, s:i, s:i}", "path", json_object_get(rd, "path"), "period_s", 2, "timeout_s", 1,
                    "failure_threshold", 300, "initial_delay_s", 0);
  }
  if (!r) json_object_set_new(out, "startup", p ? p : json_null());
  if (r) {
    json_decref(out);
    return r;
  }
  *ret = out;
  return 0;
}

static int parse_rollout(const json_t *v, json_t **ret, gp_err *err) {
  if (v && !json_is_null(v) && !json_is_object(v)) return bad(err, "rollout", "rollout is an object");
  static const char *const keys[] = {"min_healthy_s", "progress_deadline_s", "drain_s", NULL};
  int64_t healthy, deadline, drain;
  int r = v && json_is_object(v) ? check_keys(v, keys, "rollout", err) : 0;
  if (!r) r = get_int(v, "min_healthy_s", "rollout.min_healthy_s", 0, 3600, 5, &healthy, err);
  if (!r) r = get_int(v, "progress_deadline_s", "rollout.progress_deadline_s", 1, 86400, 600, &deadline, err);
  if (!r) r = get_int(v, "drain_s", "rollout.drain_s", 0, 600, 5, &drain, err);
  if (r) return r;
  *ret = json_pack("{s:I, s:I, s:I}", "min_healthy_s", (json_int_t)healthy, "progress_deadline_s",
                   (json_int_t)deadline, "drain_s", (json_int_t)drain);
  return 0;
}

int gp__srv_service_spec_parse(const json_t *body, json_t **ret, gp_err *err) {
  *ret = NULL;
  if (!json_is_object(body)) return bad(err, NULL, "a service spec is a JSON (or YAML) object");
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)body, k, v) {
    if (!is_key(job_keys, k) && !is_key(own_keys, k))
      return gp_err_set(err, GP_EINVAL, NULL, 0, k, "unknown field %.100s (see docs/services.md)", k);
  }
  if (!json_is_array(json_object_get(body, "command")))
    return bad(err, "command", "command is required: a list of strings (the replica's server)");
  json_t *spec = json_object();
  for (int i = 0; job_keys[i]; i++) {
    const json_t *x = json_object_get(body, job_keys[i]);
    if (x && !json_is_null(x)) json_object_set_new(spec, job_keys[i], json_deep_copy(x));
  }
  json_t *part = NULL;
  int r = parse_replicas(json_object_get(body, "replicas"), &part, err);
  if (!r) json_object_set_new(spec, "replicas", part);
  if (!r) r = parse_probes(json_object_get(body, "probes"), &part, err);
  if (!r) json_object_set_new(spec, "probes", part);
  if (!r) r = parse_rollout(json_object_get(body, "rollout"), &part, err);
  if (!r) json_object_set_new(spec, "rollout", part);
  if (!r) r = gp__srv_service_autoscale_parse(json_object_get(body, "autoscale"), &part, err);
  if (!r && part) json_object_set_new(spec, "autoscale", part);
  if (r) {
    json_decref(spec);
    return r;
  }
  *ret = spec;
  return 0;
}

json_t *gp__srv_service_job_body(const json_t *spec, const char *owner) {
  json_t *b = json_object();
  for (int i = 0; job_keys[i]; i++) {
    const json_t *x = json_object_get(spec, job_keys[i]);
    if (x) json_object_set(b, job_keys[i], (json_t *)x);
  }
  json_object_set_new(b, "user", json_string(owner));
  /* A replica preempted or whose node is lost goes back to pending (the same job); one that
   * exits is replaced by a new job (service_ctl.c). */
  json_object_set_new(b, "requeue", json_true());
  return b;
}

/* ---- the record ---- */

gp_srv_service *gp__srv_service_get(const gp_srv_state *s, const char *name) {
  const gp__srv_services *sv = s->services;
  for (int i = 0; sv && i < sv->n; i++)
    if (strcmp(sv->v[i]->name, name) == 0) return sv->v[i];
  return NULL;
}

const json_t *gp__srv_service_spec(const gp_srv_service *v, int rev) {
  size_t i;
  const json_t *e;
  json_array_foreach(v->revisions, i, e) {
    if (json_integer_value(json_object_get(e, "revision")) == rev) return json_object_get(e, "spec");
  }
  return NULL;
}

int gp__srv_service_serving_rev(const gp_srv_service *v) {
  if (v->rollout == GP_SRV_ROLLOUT_FAILED && v->stable_rev > 0) return v->stable_rev;
  return v->rev;
}

void gp__srv_service_add_rev(gp_srv_service *v, json_t *spec, const char *by, const char *note, int64_t now) {
  v->rev++;
  json_array_append_new(v->revisions, json_pack("{s:i, s:I, s:s, s:s, s:o}", "revision", v->rev, "at",
                                                (json_int_t)now, "by", by, "note", note, "spec", spec));
  /* The oldest go, but never the one that serves while this one rolls out. */
  for (size_t i = 0; json_array_size(v->revisions) > GP_SRV_SERVICE_REVS_KEPT && i < json_array_size(v->revisions);) {
    int r = (int)json_integer_value(json_object_get(json_array_get(v->revisions, i), "revision"));
    if (r == v->stable_rev || r == v->rev) {
      i++;
      continue;
    }
    json_array_remove(v->revisions, i);
  }
}

const char *gp__srv_rollout_name(gp_srv_rollout r) {
  return r == GP_SRV_ROLLOUT_PROGRESSING ? "progressing" : r == GP_SRV_ROLLOUT_FAILED ? "failed" : "complete";
}

json_t *gp__srv_service_doc(const gp_srv_service *v) {
  json_t *o = json_pack("{s:s, s:s, s:O, s:i, s:i, s:i, s:I, s:I, s:s, s:I, s:s, s:b, s:i, s:I}", "name", v->name,
                   "owner", v->owner, "revisions", v->revisions, "revision", v->rev, "stable_revision",
                   v->stable_rev, "replicas", v->replicas, "created_at", (json_int_t)v->created_at,
                   "updated_at", (json_int_t)v->updated_at, "rollout", gp__srv_rollout_name(v->rollout),
                   "rollout_since", (json_int_t)v->rollout_since, "rollout_message", v->rollout_msg, "deleting",
                   v->deleting, "failures", v->failures, "next_start_at", (json_int_t)v->next_start_at);
  if (v->decisions) json_object_set(o, "decisions", v->decisions);
  return o;
}

int gp__srv_service_persist(gp_srv_state *s, gp_srv_service *v, gp_err *err) {
  char name[GP_SRV_SETTING_NAME_MAX];
  snprintf(name, sizeof name, "%s%s", GP_SRV_SETTING_SERVICE, v->name);
  json_t *doc = gp__srv_service_doc(v);
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  int r = gp_store_put_setting(s->store, name, text, err);
  free(text);
  return r;
}

int gp__srv_service_unpersist(gp_srv_state *s, const char *svc, gp_err *err) {
  char name[GP_SRV_SETTING_NAME_MAX];
  snprintf(name, sizeof name, "%s%s", GP_SRV_SETTING_SERVICE, svc);
  return gp_store_put_setting(s->store, name, NULL, err);
}

void gp__srv_service_add(gp_srv_state *s, gp_srv_service *v) {
  if (!s->services) s->services = gp_xcalloc(1, sizeof *s->services);
  gp__srv_services *sv = s->services;
  gp_xgrow((void **)&sv->v, &sv->cap, (size_t)sv->n + 1, sizeof *sv->v);
  sv->v[sv->n++] = v;
}

void gp__srv_service_remove(gp_srv_state *s, gp_srv_service *v) {
  gp__srv_services *sv = s->services;
  for (int i = 0; sv && i < sv->n; i++) {
    if (sv->v[i] != v) continue;
    memmove(&sv->v[i], &sv->v[i + 1], (size_t)(sv->n - i - 1) * sizeof *sv->v);
    sv->n--;
    gp__srv_service_free(v);
    return;
  }
}

void gp__srv_service_free(gp_srv_service *v) {
  if (!v) return;
  free(v->name);
  free(v->owner);
  json_decref(v->revisions);
  json_decref(v->decisions);
  free(v);
}

void gp__srv_services_free(gp_srv_state *s) {
  gp__srv_services *sv = s->services;
  if (!sv) return;
  for (int i = 0; i < sv->n; i++) gp__srv_service_free(sv->v[i]);
  free(sv->v);
  free(sv);
  s->services = NULL;
}

/* The stored document is the server's own, but a damaged one must not take the server
 * down: a service whose document does not read is left out, with a log line. */
void gp__srv_service_loaded(gp_srv_state *s, const char *name, const char *doc) {
  json_error_t je;
  json_t *o = json_loads(doc, 0, &je);
  const json_t *revs = json_object_get(o, "revisions");
  const char *owner = json_string_value(json_object_get(o, "owner"));
  if (!gp_proto_service_name_valid(name) || !json_is_array(revs) || !owner ||
      json_array_size(revs) > GP_SRV_SERVICE_REVS_KEPT + 2 || gp__srv_service_get(s, name)) {
    fprintf(stderr, "gpool server: stored service %.64s does not read; left out\n", name);
    json_decref(o);
    return;
  }
  gp_srv_service *v = gp_xcalloc(1, sizeof *v);
  v->name = gp_xstrdup(name);
  v->owner = gp_xstrdup(owner);
  v->revisions = json_deep_copy(revs);
  v->rev = (int)json_integer_value(json_object_get(o, "revision"));
  v->stable_rev = (int)json_integer_value(json_object_get(o, "stable_revision"));
  json_int_t n = json_integer_value(json_object_get(o, "replicas"));
  v->replicas = n >= 0 && n <= GP_SRV_SERVICE_REPLICAS_MAX ? (int)n : 0;
  v->created_at = json_integer_value(json_object_get(o, "created_at"));
  v->updated_at = json_integer_value(json_object_get(o, "updated_at"));
  const char *ro = json_string_value(json_object_get(o, "rollout"));
  v->rollout = ro && !strcmp(ro, "progressing") ? GP_SRV_ROLLOUT_PROGRESSING
               : ro && !strcmp(ro, "failed")    ? GP_SRV_ROLLOUT_FAILED
                                                : GP_SRV_ROLLOUT_COMPLETE;
  v->rollout_since = json_integer_value(json_object_get(o, "rollout_since"));
  const char *msg = json_string_value(json_object_get(o, "rollout_message"));
  snprintf(v->rollout_msg, sizeof v->rollout_msg, "%s", msg ? msg : "");
  v->deleting = json_is_true(json_object_get(o, "deleting"));
  v->failures = (int)json_integer_value(json_object_get(o, "failures"));
  v->next_start_at = json_integer_value(json_object_get(o, "next_start_at"));
  const json_t *dec = json_object_get(o, "decisions");
  if (json_is_array(dec) && json_array_size(dec) <= 64) v->decisions = json_deep_copy(dec);
  json_decref(o);
  if (!gp__srv_service_spec(v, v->rev)) {
    fprintf(stderr, "gpool server: stored service %.64s lacks its revision %d; left out\n", name, v->rev);
    gp__srv_service_free(v);
    return;
  }
  gp__srv_service_add(s, v);
}
