/* SPDX-License-Identifier: Apache-2.0 */
/* Orders from the server, each executed at most once: executed ids are remembered in memory
 * and appended (fsync'd) to <data>/orders.log, so neither a re-sent order nor a restarted
 * agent runs one twice. Dispatch: start, stop, mig, drain_gpu, resume_gpu, inject. */
#include "agent/agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpu_sim.h"

/* ---- executed orders: kept on disk so a restarted agent still runs each at most once ---- */

static bool order_seen(const gp_agent *a, const char *id) {
  for (size_t i = 0; i < a->n_orders; i++)
    if (strcmp(a->orders[i], id) == 0) return true;
  return false;
}

static void order_remember_mem(gp_agent *a, const char *id) {
  snprintf(a->orders[a->next_order], GP_AGENT_ID_MAX, "%s", id);
  a->next_order = (a->next_order + 1) % GP_AGENT_MAX_ORDERS_KEPT;
  if (a->n_orders < GP_AGENT_MAX_ORDERS_KEPT) a->n_orders++;
}

static void orders_rewrite(gp_agent *a) {
  char path[700], tmp[710];
  snprintf(path, sizeof path, "%s/orders.log", a->cfg.data_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (!f) return;
  for (size_t i = 0; i < a->n_orders; i++) {
    size_t k = (a->next_order + GP_AGENT_MAX_ORDERS_KEPT - a->n_orders + i) %
               GP_AGENT_MAX_ORDERS_KEPT;
    fprintf(f, "%s\n", a->orders[k]);
  }
  fflush(f);
  fsync(fileno(f));
  fclose(f);
  rename(tmp, path);
  if (a->orders_log) fclose(a->orders_log);
  a->orders_log = fopen(path, "ae");
  a->orders_log_lines = a->n_orders;
}

static void order_remember(gp_agent *a, const char *id) {
  order_remember_mem(a, id);
  if (a->orders_log) {
    fprintf(a->orders_log, "%s\n", id);
    fflush(a->orders_log);
    fsync(fileno(a->orders_log));
    a->orders_log_lines++;
  }
  if (a->orders_log_lines > 2 * GP_AGENT_MAX_ORDERS_KEPT) orders_rewrite(a);
}

void gp__orders_load(gp_agent *a) {
  char path[700], line[256];
  snprintf(path, sizeof path, "%s/orders.log", a->cfg.data_dir);
  FILE *f = fopen(path, "re");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = '\0';
      if (line[0] && strlen(line) < GP_AGENT_ID_MAX) order_remember_mem(a, line);
      a->orders_log_lines++;
    }
    fclose(f);
  }
  a->orders_log = fopen(path, "ae");
}

void gp__order_execute(gp_agent *a, json_t *order) {
  const char *id = json_string_value(json_object_get(order, "id"));
  const char *kind = json_string_value(json_object_get(order, "kind"));
  if (!id || !kind || !*id || strlen(id) >= GP_AGENT_ID_MAX) {
    gp__log("ignoring an order without a valid id or kind");
    return;
  }
  if (order_seen(a, id)) return;
  order_remember(a, id);
  if (strcmp(kind, "start") == 0) {
    json_t *job = json_object_get(order, "job");
    if (!json_is_object(job)) {
      gp__log("order %s: start without a job object", id);
      return;
    }
    gp__job_start(a, id, job);
  } else if (strcmp(kind, "stop") == 0) {
    gp__job_stop(a, order);
  } else if (strcmp(kind, "mig") == 0) {
    json_t *jp = json_object_get(order, "profiles"), *js = json_object_get(order, "start_slots");
    json_int_t gpu = json_integer_value(json_object_get(order, "gpu"));
    json_t *ev = json_object();
    json_object_set_new(ev, "kind", json_string("mig_done"));
    json_object_set_new(ev, "gpu", json_integer(gpu));
    json_object_set_new(ev, "order", json_string(id));
    size_t n = json_array_size(jp);
    gp_err err = {0};
    int rc = 0;
    if (!json_is_array(jp) || n == 0 || n > GP_GPU_MAX_MIG ||
        (js && !json_is_null(js) && json_array_size(js) != n) || gpu < 0 || gpu >= a->n_gpus) {
      rc = gp_err_set(&err, GP_EINVAL, NULL, 0, "profiles",
                      "a mig order needs a GPU of this node and 1 to %d profiles (with as many "
                      "start slots)", GP_GPU_MAX_MIG);
    } else {
      const char *profiles[GP_GPU_MAX_MIG];
      int slots[GP_GPU_MAX_MIG];
      for (size_t k = 0; k < n; k++) {
        profiles[k] = json_string_value(json_array_get(jp, k));
        json_t *s = json_array_get(js, k);
        slots[k] = json_is_integer(s) ? (int)json_integer_value(s) : -1;
        if (!profiles[k]) rc = gp_err_set(&err, GP_EINVAL, NULL, 0, "profiles", "not a string");
      }
      if (rc == 0) rc = gp__mig_apply(a, (int)gpu, profiles, slots, (int)n, &err);
      gp_err rerr = {0};
      if (rc == 0 && a->tel && gp_telemetry_rediscover(a->tel, &rerr) != 0)
        gp__log("telemetry: %s", rerr.message);
    }
    json_object_set_new(ev, "ok", json_boolean(rc == 0));
    json_object_set_new(ev, "message", json_string(rc == 0 ? "MIG layout applied" : err.message));
    if (gpu >= 0 && gpu < a->n_gpus) json_object_set_new(ev, "mig", gp__mig_json(&a->gpus[gpu]));
    gp__log("order %s: mig on GPU %lld: %s", id, (long long)gpu,
            rc == 0 ? "applied" : err.message);
    gp__event(a, ev);
  } else if (strcmp(kind, "drain_gpu") == 0 || strcmp(kind, "resume_gpu") == 0) {
    json_int_t gpu = json_integer_value(json_object_get(order, "gpu"));
    if (gpu < 0 || gpu >= a->n_gpus) {
      gp__log("order %s: %s for GPU %lld, which this node does not have", id, kind,
              (long long)gpu);
      return;
    }
    bool drain = kind[0] == 'd';
    a->gpu_drained[gpu] = drain;
    if (!drain && a->health) gp_health_resume(a->health, (int)gpu);
    const char *reason = json_string_value(json_object_get(order, "reason"));
    snprintf(a->gpu_drain_reason[gpu], sizeof a->gpu_drain_reason[gpu], "%s",
             drain && reason ? reason : "");
    gp__log("order %s: GPU %lld %s%s%s", id, (long long)gpu, drain ? "drained" : "resumed",
            drain && reason ? ": " : "", drain && reason ? reason : "");
  } else if (strcmp(kind, "inject") == 0) {
    /* Simulated faults on order (admin API), for drills and tests. */
    const char *spec = json_string_value(json_object_get(order, "fault"));
    gp_err err = {0};
    int rc = spec ? gp_gpu_sim_inject_spec(a->gpu, spec, &err)
                  : gp_err_set(&err, GP_EINVAL, NULL, 0, "fault", "the order has no fault spec");
    json_t *ev = json_object();
    json_object_set_new(ev, "kind", json_string("inject_done"));
    json_object_set_new(ev, "order", json_string(id));
    json_object_set_new(ev, "ok", json_boolean(rc == 0));
    json_object_set_new(ev, "message", json_string(rc == 0 ? "fault injected" : err.message));
    gp__event(a, ev);
    gp__log("order %s: inject '%s': %s", id, spec ? spec : "", rc == 0 ? "done" : err.message);
  } else {
    gp__log("order %s: unknown kind '%s' ignored", id, kind);
  }
}

