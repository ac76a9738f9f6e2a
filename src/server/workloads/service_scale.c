/* SPDX-License-Identifier: Apache-2.0 */
/* Services' autoscaling on the replicas' own figure (docs/services.md#autoscaling): each
 * agent reads `metric` from its replicas' metrics page (e.g. vLLM's running + waiting
 * requests) and reports it with their readiness; the service wants ceil(sum / target)
 * replicas, within [min, max]. It scales up once the figures asked for more for up_delay_s,
 * at once when the load doubled (the sum reached twice what the current replicas carry at
 * target), and down only after they asked for fewer for the longer down_delay_s, to the
 * most they asked for in that time, so a dip does not drop replicas a burst needs again.
 * Every decision is kept with its figures (the service's `decisions`, the server's log) and
 * is a `service` event on /v1/events. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/service.h"
#include "server/streams/events.h"
#include "server/workloads/service.h"
#include "server/state/state.h"

#define DECISIONS_KEPT 20

static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t dflt, int64_t *ret, gp_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) {
    *ret = dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
  {
    char f[64];
    snprintf(f, sizeof f, "autoscale.%s", key);
    return gp_err_set(err, GP_EINVAL, NULL, 0, f, "%s must be an integer from %lld to %lld", f, (long long)lo,
                      (long long)hi);
  }
  *ret = json_integer_value(v);
  return 0;
}

int gp__srv_service_autoscale_parse(const json_t *v, json_t **ret, gp_err *err) {
  *ret = NULL;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_object(v))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "autoscale", "autoscale is an object: {metric, target, ...}");
  static const char *const keys[] = {"metric",       "path",     "target",        "up_delay_s",
                                     "down_delay_s", "period_s", "scale_to_zero", "source", NULL};
  const char *k;
  const json_t *x;
  json_object_foreach((json_t *)v, k, x) {
    bool known = false;
    for (int i = 0; keys[i]; i++) known = known || strcmp(keys[i], k) == 0;
    if (!known) return gp_err_set(err, GP_EINVAL, NULL, 0, "autoscale", "unknown field autoscale.%.64s", k);
  }
  /* source: the replicas' own figure (metrics, the default), or their GPUs' utilisation
   * from the agents' telemetry (a poor signal for inference: docs/services.md says why). */
  const json_t *src = json_object_get(v, "source");
  const char *source = src ? json_string_value(src) : "metrics";
  if (!source || (strcmp(source, "metrics") != 0 && strcmp(source, "gpu_utilization") != 0))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "autoscale.source",
                      "autoscale.source is metrics (the replicas' own figure, the default) or gpu_utilization");
  bool gpu = strcmp(source, "gpu_utilization") == 0;
  if (gpu && (json_object_get(v, "metric") || json_object_get(v, "path")))
    return gp_err_set(err, GP_EINVAL, NULL, 0, json_object_get(v, "metric") ? "autoscale.metric" : "autoscale.path",
                      "autoscale.source gpu_utilization reads the GPUs' telemetry: it takes no metric or path");
  const char *metric = json_string_value(json_object_get(v, "metric"));
  if (!gpu && (!metric || !gp_proto_metric_name_valid(metric)))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "autoscale.metric",
                      "autoscale.metric is the name of a figure on the replicas' metrics page "
                      "([a-zA-Z_:][a-zA-Z0-9_:]*), e.g. vllm:num_requests_running");
  const json_t *p = json_object_get(v, "path");
  const char *path = p ? json_string_value(p) : "/metrics";
  if (!gpu && (!path || !gp_proto_probe_path_valid(path)))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "autoscale.path", "autoscale.path starts with / (default /metrics)");
  const json_t *t = json_object_get(v, "target");
  if (!json_is_number(t) || !(json_number_value(t) > 0) || json_number_value(t) > 1e9)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "autoscale.target",
                      "autoscale.target is the figure one replica should carry: a number > 0");
  int64_t up, down, period;
  int r = get_int(v, "up_delay_s", 0, 3600, 5, &up, err);
  if (!r) r = get_int(v, "down_delay_s", 0, 86400, 60, &down, err);
  if (!r) r = get_int(v, "period_s", 1, 60, 2, &period, err);
  if (r) return r;
  const json_t *zero = json_object_get(v, "scale_to_zero");
  if (zero && !json_is_boolean(zero))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "autoscale.scale_to_zero", "autoscale.scale_to_zero is true or false");
  *ret = json_pack("{s:s, s:f, s:I, s:I, s:I, s:b}", "source", source, "target", json_number_value(t),
                   "up_delay_s", (json_int_t)up, "down_delay_s", (json_int_t)down, "period_s", (json_int_t)period,
                   "scale_to_zero", json_is_true(zero));
  if (!gpu) {
    json_object_set_new(*ret, "metric", json_string(metric));
    json_object_set_new(*ret, "path", json_string(path));
  }
  return 0;
}

static int decide(gp_srv_state *s, gp_srv_service *v, int to, double sum, int measured, double target,
                  const char *why, int64_t now, gp_err *err);

int gp__srv_service_wake(gp_srv_state *s, gp_srv_service *v, const char *by, int64_t now, gp_err *err) {
  if (v->replicas > 0) return 0;
  const json_t *rs = json_object_get(gp__srv_service_spec(v, v->rev), "replicas");
  int mn = (int)json_integer_value(json_object_get(rs, "min"));
  char why[128];
  snprintf(why, sizeof why, "wake call by %.64s", by);
  return decide(s, v, mn > 1 ? mn : 1, 0, 0, json_number_value(json_object_get(json_object_get(
                                                  gp__srv_service_spec(v, v->rev), "autoscale"), "target")),
                why, now, err);
}

static int decide(gp_srv_state *s, gp_srv_service *v, int to, double sum, int measured, double target,
                  const char *why, int64_t now, gp_err *err) {
  int from = v->replicas;
  v->replicas = to;
  v->up_since = v->down_since = 0;
  if (to > from) v->scale_ups++;
  else v->scale_downs++;
  json_t *d = json_pack("{s:I, s:i, s:i, s:f, s:i, s:f, s:f, s:s}", "at", (json_int_t)now, "from", from, "to", to,
                        "metric_sum", sum, "replicas_measured", measured, "per_replica", measured ? sum / measured : 0.0,
                        "target",
                        target, "reason", why);
  /* The feed's event: the decision with the service's name (names and figures every user
   * may read; the spec is the owner's). */
  json_t *ev = json_deep_copy(d);
  json_object_set_new(ev, "service", json_string(v->name));
  char *text = json_dumps(ev, JSON_COMPACT);
  json_decref(ev);
  if (text) gp__srv_events_note_service(s, text);
  free(text);
  if (!v->decisions) v->decisions = json_array();
  json_array_append_new(v->decisions, d);
  while (json_array_size(v->decisions) > DECISIONS_KEPT) json_array_remove(v->decisions, 0);
  fprintf(stderr, "gpool server: service %s: scaled %d -> %d: %s (metric sum %.3g over %d replicas, target %.3g)\n",
          v->name, from, to, why, sum, measured, target);
  return gp__srv_service_persist(s, v, err);
}

/* A replica's GPU utilisation (%): the mean of its GPUs' last telemetry on live nodes;
 * false when none has any (no GPU, a node not heard from). */
static bool replica_gpu_util(const gp_srv_state *s, const gp_srv_job *j, double *ret) {
  double sum = 0;
  int n = 0;
  for (int t = 0; t < j->n_alloc; t++) {
    const gp_srv_alloc *al = &j->alloc[t];
    if (al->node < 0 || al->node >= s->n_nodes || !s->nodes[al->node]->alive) continue;
    const gp_srv_node *nd = s->nodes[al->node];
    for (int g = 0; g < nd->n_gpus && g < GP_MAX_NODE_GPUS; g++) {
      if (!(al->gpu_mask & (1u << g))) continue;
      const json_t *u = json_object_get(nd->gpus[g].telemetry, "gpu_util_pct");
      if (!json_is_number(u) || !(json_number_value(u) >= 0) || json_number_value(u) > 100) continue;
      sum += json_number_value(u);
      n++;
    }
  }
  if (!n) return false;
  *ret = sum / n;
  return true;
}

int gp__srv_service_autoscale(gp_srv_state *s, gp_srv_service *v, int64_t now, gp_err *err) {
  const json_t *spec = gp__srv_service_spec(v, v->rev);
  const json_t *as = json_object_get(spec, "autoscale");
  if (!json_is_object(as)) return 0;
  double target = json_number_value(json_object_get(as, "target"));
  int64_t period = json_integer_value(json_object_get(as, "period_s"));
  int64_t up_delay = json_integer_value(json_object_get(as, "up_delay_s"));
  int64_t down_delay = json_integer_value(json_object_get(as, "down_delay_s"));
  const json_t *rs = json_object_get(spec, "replicas");
  int mn = (int)json_integer_value(json_object_get(rs, "min")), mx = (int)json_integer_value(json_object_get(rs, "max"));
  /* Down to zero only where asked for: a service at zero has no figure to wake on, only a
   * wake call (gp__srv_service_wake). */
  if (mn < 1 && !json_is_true(json_object_get(as, "scale_to_zero"))) mn = 1 <= mx ? 1 : mx;
  /* Fresh figures of ready replicas only: a replica still loading has no load to tell. */
  int64_t fresh = 3 * period > 10 ? 3 * period : 10;
  bool gpu = json_is_string(json_object_get(as, "source")) &&
             strcmp(json_string_value(json_object_get(as, "source")), "gpu_utilization") == 0;
  double sum = 0;
  int n = 0;
  for (int a = 0; a < s->n_active; a++) {
    const gp_srv_job *j = s->active[a];
    if (!j->service || strcmp(j->service, v->name) != 0 || j->state != GP_JOB_RUNNING || !j->svc_ready ||
        j->svc_drain_at)
      continue;
    double f;
    if (gpu ? !replica_gpu_util(s, j, &f) : (!j->svc_metric_at || now - j->svc_metric_at > fresh)) continue;
    sum += gpu ? f : j->svc_metric;
    n++;
  }
  if (n == 0 || !(target > 0)) return 0;
  int cur = v->replicas;
  double need = ceil(sum / target - 1e-9);
  int want = need > mx ? mx : need < mn ? mn : (int)need;
  char why[160];
  if (want > cur) {
    v->down_since = 0;
    if (!v->up_since) v->up_since = now;
    if (cur > 0 && sum >= 2.0 * cur * target) {
      snprintf(why, sizeof why, "load doubled: %.3g per replica against a target of %.3g", sum / cur, target);
      return decide(s, v, want, sum, n, target, why, now, err);
    }
    if (now - v->up_since >= up_delay) {
      snprintf(why, sizeof why, "above target for %llds (up_delay_s %lld)", (long long)(now - v->up_since),
               (long long)up_delay);
      return decide(s, v, want, sum, n, target, why, now, err);
    }
  } else if (want < cur) {
    v->up_since = 0;
    if (!v->down_since) {
      v->down_since = now;
      v->down_max = want;
    } else if (want > v->down_max) {
      v->down_max = want;
    }
    if (now - v->down_since >= down_delay) {
      snprintf(why, sizeof why, "below target for %llds (down_delay_s %lld)", (long long)(now - v->down_since),
               (long long)down_delay);
      return decide(s, v, v->down_max, sum, n, target, why, now, err);
    }
  } else {
    v->up_since = v->down_since = 0;
  }
  return 0;
}
