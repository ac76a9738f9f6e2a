/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes to and from JSON: what an agent registers (untrusted: bounded and validated), what
 * the store keeps (the facts plus the admin's drain/cordon state) and the NODE object of
 * the API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/state/reservations.h"
#include "server/state/state.h"
#include "util/mem.h"
#include "util/units.h"

#define MAX_LABELS 64

static bool ok_name(const char *s, size_t max) {
  if (!s || !*s || strlen(s) > max) return false;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (*c <= 0x20 || *c == 0x7f || *c == '/') return false;
  return true;
}

static bool ok_text(const char *s, size_t max) {
  if (!s || strlen(s) > max) return false;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++)
    if (*c < 0x20 || *c == 0x7f) return false;
  return true;
}

void gp__srv_node_free_facts(gp_srv_node *n) {
  free(n->model);
  n->model = NULL;
  for (int g = 0; g < GP_MAX_NODE_GPUS; g++) {
    gp_srv_gpu *gpu = &n->gpus[g];
    free(gpu->uuid);
    free(gpu->reason);
    for (int m = 0; m < gpu->n_mig; m++) {
      free((char *)gpu->mig[m].profile);
      free((char *)gpu->mig[m].uuid);
    }
    json_decref(gpu->telemetry);
    memset(gpu, 0, sizeof *gpu);
  }
  for (int i = 0; i < n->n_labels; i++) {
    free((char *)n->labels[i].key);
    free((char *)n->labels[i].value);
  }
  free(n->labels);
  n->labels = NULL;
  n->n_labels = 0;
  json_decref(n->nvlink_domains);
  n->nvlink_domains = NULL;
  free(n->agent_url);
  n->agent_url = NULL;
  free(n->gpu_backend);
  n->gpu_backend = NULL;
}

void gp__srv_node_free(gp_srv_node *n) {
  if (!n) return;
  gp__srv_node_free_facts(n);
  free(n->name);
  free(n->reason);
  free(n->provider_template);
  free(n->provider_instance);
  json_decref(n->conditions);
  json_decref(n->images);
  free(n->image_hashes);
  json_decref(n->models);
  free(n->model_hashes);
  free(n->pref_hashes);
  for (int i = 0; i < n->n_orders; i++) free(n->orders[i].doc);
  free(n->orders);
  free(n->report_ids);
  free(n);
}

static int fail(gp_err *err, const char *field, const char *msg) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s", msg);
}

/* An agent's number as an integer; a real out of int64's range (or not finite) reads as the
 * largest integer of its sign, so the range checks after this refuse it. */
static int64_t int_or(const json_t *o, const char *k, int64_t dflt) {
  const json_t *v = json_object_get(o, k);
  if (json_is_integer(v)) return json_integer_value(v);
  if (!json_is_real(v)) return dflt;
  int64_t x;
  if (gp_real_to_int64(json_real_value(v), &x)) return json_real_value(v) < 0 ? INT64_MIN : INT64_MAX;
  return x;
}

/* Reads one entry of gpu_list into a scratch GPU. */
static int read_gpu(const json_t *g, int i, gp_srv_gpu *out, gp_err *err) {
  char f[64];
  snprintf(f, sizeof f, "node.gpu_list[%d]", i);
  if (!json_is_object(g)) return fail(err, f, "must be an object");
  const char *uuid = json_string_value(json_object_get(g, "uuid"));
  if (uuid && !ok_text(uuid, 128)) return fail(err, f, "uuid is too long");
  out->uuid = uuid ? gp_xstrdup(uuid) : NULL;
  const char *health = json_string_value(json_object_get(g, "health"));
  if (health && gp_gpu_health_parse(health, &out->health))
    return fail(err, f, "health must be healthy, drained or failed");
  const char *reason = json_string_value(json_object_get(g, "reason"));
  if (reason && ok_text(reason, 512)) out->reason = gp_xstrdup(reason);
  const char *mode = json_string_value(json_object_get(g, "mode"));
  if (mode && gp_share_mode_parse(mode, &out->mode))
    return fail(err, f, "mode must be exclusive, shared, timeslice or mig");
  int64_t replicas = int_or(g, "replicas", 0);
  if (replicas < 0 || replicas > 64) return fail(err, f, "replicas must be 0..64");
  out->replicas = (int)replicas;
  if (out->mode == GP_SHARE_TIMESLICE && out->replicas < 2) out->replicas = 2;
  out->mem_mib = int_or(g, "mem_mib", 0);
  if (out->mem_mib < 0 || out->mem_mib > (INT64_C(1) << 30)) return fail(err, f, "bad mem_mib");
  out->admin_drained = json_is_true(json_object_get(g, "admin_drained"));
  out->nvlink_domain = -1;
  const json_t *mig = json_object_get(g, "mig");
  if (json_is_array(mig)) {
    if (json_array_size(mig) > GP_MAX_MIG_INSTANCES) return fail(err, f, "at most 7 MIG instances");
    for (size_t m = 0; m < json_array_size(mig); m++) {
      const json_t *mi = json_array_get(mig, m);
      const char *prof = json_string_value(json_object_get(mi, "profile"));
      if (!prof || !ok_text(prof, 32)) return fail(err, f, "each MIG instance needs a profile");
      int64_t slot = int_or(mi, "start_slot", -1);
      if (slot < 0 || slot > 7) return fail(err, f, "MIG start_slot must be 0..7");
      const char *mu = json_string_value(json_object_get(mi, "uuid"));
      out->mig[out->n_mig].profile = gp_xstrdup(prof);
      out->mig[out->n_mig].start_slot = (int)slot;
      out->mig[out->n_mig].uuid = mu && ok_text(mu, 128) ? gp_xstrdup(mu) : NULL;
      out->n_mig++;
    }
  }
  return 0;
}

static void gpu_scratch_free(gp_srv_gpu *g) {
  free(g->uuid);
  free(g->reason);
  for (int m = 0; m < g->n_mig; m++) {
    free((char *)g->mig[m].profile);
    free((char *)g->mig[m].uuid);
  }
}

/* The provider fields of a stored node (gp__srv_node_set_provider wrote them); anything
 * malformed reads as none. */
static void read_provider(const json_t *p, gp_srv_node *n) {
  const char *t = json_string_value(json_object_get(p, "template"));
  const char *id = json_string_value(json_object_get(p, "instance_id"));
  free(n->provider_template);
  free(n->provider_instance);
  n->provider_template = n->provider_instance = NULL;
  n->provider_price = -1;
  if (!t || !id || !ok_text(t, 128) || !ok_text(id, 128) || !*t || !*id) return;
  n->provider_template = gp_xstrdup(t);
  n->provider_instance = gp_xstrdup(id);
  const json_t *price = json_object_get(p, "price");
  if (json_is_number(price) && json_number_value(price) >= 0) n->provider_price = json_number_value(price);
}

static json_t *provider_json(const gp_srv_node *n) {
  if (!n->provider_template) return json_null();
  return json_pack("{s:s,s:s,s:o}", "template", n->provider_template, "instance_id",
                   n->provider_instance, "price",
                   n->provider_price >= 0 ? json_real(n->provider_price) : json_null());
}

int gp__srv_node_from_json(const json_t *o, gp_srv_node *n, bool stored, gp_err *err) {
  if (!json_is_object(o)) return fail(err, "node", "must be an object");
  const char *name = json_string_value(json_object_get(o, "name"));
  if (!ok_name(name, 253)) return fail(err, "node.name", "must be a host name without spaces or '/'");
  if (n->name && strcmp(n->name, name) != 0) return fail(err, "node.name", "does not match");
  const char *model = json_string_value(json_object_get(o, "model"));
  if (!ok_text(model ? model : "", 64)) return fail(err, "node.model", "is too long");
  int64_t ngpus = int_or(o, "gpus", -1);
  const json_t *list = json_object_get(o, "gpu_list");
  if (ngpus < 0) ngpus = json_is_array(list) ? (int64_t)json_array_size(list) : 0;
  if (ngpus > GP_MAX_NODE_GPUS) return fail(err, "node.gpus", "at most 32 GPUs per node");
  if (list && !json_is_array(list)) return fail(err, "node.gpu_list", "must be a list");
  if (json_is_array(list) && (int64_t)json_array_size(list) != ngpus)
    return fail(err, "node.gpu_list", "must have one entry per GPU");
  double cpus = json_is_number(json_object_get(o, "cpus")) ? json_number_value(json_object_get(o, "cpus")) : 0;
  int64_t mem = int_or(o, "mem_mib", 0);
  if (cpus < 0 || cpus > 1e6 || mem < 0 || mem > (INT64_C(1) << 40))
    return fail(err, "node.cpus", "cpus and mem_mib must be non-negative and sane");
  gp_capacity cap = GP_CAP_ON_DEMAND;
  const char *capname = json_string_value(json_object_get(o, "capacity"));
  if (capname && gp_capacity_parse(capname, &cap))
    return fail(err, "node.capacity", "must be on-demand, reserved, spot or on-prem");
  const json_t *labels = json_object_get(o, "labels");
  if (labels && !json_is_null(labels) && (!json_is_object(labels) || json_object_size(labels) > MAX_LABELS))
    return fail(err, "node.labels", "must be an object of at most 64 string values");
  const char *url = json_string_value(json_object_get(o, "agent_url"));
  if (url && (!ok_text(url, 512) || strncmp(url, "http", 4) != 0))
    return fail(err, "agent_url", "must be an http URL");
  const char *backend = json_string_value(json_object_get(o, "gpu_backend"));
  if (backend && !ok_name(backend, 32)) return fail(err, "node.gpu_backend", "must be a short name");
  gp_srv_gpu scratch[GP_MAX_NODE_GPUS];
  memset(scratch, 0, sizeof scratch);
  for (int i = 0; i < ngpus; i++) {
    scratch[i].nvlink_domain = -1;
    if (json_is_array(list)) {
      int64_t idx = int_or(json_array_get(list, (size_t)i), "index", i);
      if (idx != i) {
        for (int k = 0; k < i; k++) gpu_scratch_free(&scratch[k]);
        return fail(err, "node.gpu_list", "entries must be in index order 0, 1, ...");
      }
      int r = read_gpu(json_array_get(list, (size_t)i), i, &scratch[i], err);
      if (r) {
        for (int k = 0; k <= i; k++) gpu_scratch_free(&scratch[k]);
        return r;
      }
    }
  }
  const json_t *nv = json_object_get(o, "nvlink_domains");
  if (json_is_array(nv) && json_array_size(nv) <= GP_MAX_NODE_GPUS) {
    for (size_t d = 0; d < json_array_size(nv); d++) {
      const json_t *dom = json_array_get(nv, d);
      for (size_t k = 0; json_is_array(dom) && k < json_array_size(dom); k++) {
        int64_t g = json_integer_value(json_array_get(dom, k));
        if (g >= 0 && g < ngpus) scratch[g].nvlink_domain = (int)d;
      }
    }
  }
  /* Everything validated: replace the facts, keeping admin choices made on the server. */
  bool drained[GP_MAX_NODE_GPUS] = {0};
  char *dreason[GP_MAX_NODE_GPUS] = {0};
  for (int g = 0; g < GP_MAX_NODE_GPUS; g++) {
    drained[g] = n->gpus[g].admin_drained;
    if (drained[g]) dreason[g] = gp_xstrdup(n->gpus[g].reason);
  }
  gp__srv_node_free_facts(n);
  if (!n->name) n->name = gp_xstrdup(name);
  n->model = gp_xstrdup(model ? model : "");
  n->n_gpus = (int)ngpus;
  memcpy(n->gpus, scratch, sizeof scratch);
  n->gpu_mem_mib = ngpus > 0 ? n->gpus[0].mem_mib : 0;
  for (int g = 0; g < ngpus; g++) {
    if (!stored && drained[g]) {
      n->gpus[g].admin_drained = true;
      if (n->gpus[g].health == GP_GPU_HEALTHY) n->gpus[g].health = GP_GPU_DRAINED;
      free(n->gpus[g].reason);
      n->gpus[g].reason = dreason[g];
      dreason[g] = NULL;
    }
  }
  for (int g = 0; g < GP_MAX_NODE_GPUS; g++) free(dreason[g]);
  n->cpu_milli = (int64_t)(cpus * 1000.0);
  n->mem_mib = mem;
  n->capacity = cap;
  if (json_is_object(labels)) {
    n->labels = gp_xcalloc(json_object_size(labels) + 1, sizeof *n->labels);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)labels, k, v) {
      if (!json_is_string(v) || !ok_text(k, 256) || !ok_text(json_string_value(v), 256)) continue;
      n->labels[n->n_labels].key = gp_xstrdup(k);
      n->labels[n->n_labels].value = gp_xstrdup(json_string_value(v));
      n->n_labels++;
    }
  }
  if (json_is_array(nv)) n->nvlink_domains = json_deep_copy(nv);
  n->agent_url = url ? gp_xstrdup(url) : NULL;
  n->gpu_backend = backend ? gp_xstrdup(backend) : NULL;
  if (stored) {
    const char *st = json_string_value(json_object_get(o, "admin_state"));
    gp_node_state ns = GP_NODE_UP;
    if (st && !gp_node_state_parse(st, &ns) && ns != GP_NODE_DOWN) n->admin_state = ns;
    const char *reason = json_string_value(json_object_get(o, "reason"));
    free(n->reason);
    n->reason = reason && *reason ? gp_xstrdup(reason) : NULL;
    n->last_heartbeat = int_or(o, "last_heartbeat", 0);
    read_provider(json_object_get(o, "provider"), n);
  }
  return 0;
}

static gp_node_state effective_state(const gp_srv_node *n) {
  return n->alive ? n->admin_state : GP_NODE_DOWN;
}

/* `only_for`: NULL, or a user who may see the telemetry of a GPU only while every job on
 * it is theirs (the live figures of a GPU are its jobs' measured use: docs/security.md). */
static json_t *node_json(const gp_srv_state *s, const gp_srv_node *n, bool for_store,
                         const char *only_for) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(n->name));
  if (for_store) {
    json_object_set_new(o, "admin_state", json_string(gp_node_state_name(n->admin_state)));
    json_object_set_new(o, "last_heartbeat", json_integer(n->last_heartbeat));
  } else {
    json_object_set_new(o, "state", json_string(gp_node_state_name(effective_state(n))));
  }
  json_object_set_new(o, "reason", n->reason ? json_string(n->reason) : json_null());
  if (!for_store && s) { /* the advance reservation holding it now, else the next (reservations.c) */
    int64_t now = time(NULL);
    const gp__srv_resv *rv = gp__srv_resv_of_node(s, n->name, now);
    json_t *ro = json_null();
    if (rv) {
      ro = json_object();
      json_object_set_new(ro, "name", json_string(rv->name));
      json_object_set_new(ro, "start", json_integer(rv->start));
      json_object_set_new(ro, "end", json_integer(rv->end));
      json_object_set_new(ro, "maint", json_boolean(rv->maint));
      json_object_set_new(ro, "active", json_boolean(rv->start <= now));
    }
    json_object_set_new(o, "reservation", ro);
  }
  if (!for_store)
    json_object_set_new(o, "conditions", n->conditions ? json_incref(n->conditions) : json_array());
  if (!for_store && n->images) json_object_set(o, "images", n->images);
  if (!for_store && n->models) json_object_set(o, "models", n->models);
  json_object_set_new(o, "model", json_string(n->model ? n->model : ""));
  json_object_set_new(o, "gpus", json_integer(n->n_gpus));
  json_object_set_new(o, "cpus", json_real((double)n->cpu_milli / 1000.0));
  json_object_set_new(o, "mem_mib", json_integer(n->mem_mib));
  json_t *labels = json_object();
  for (int i = 0; i < n->n_labels; i++)
    json_object_set_new(labels, n->labels[i].key, json_string(n->labels[i].value));
  json_object_set_new(o, "labels", labels);
  json_object_set_new(o, "capacity", json_string(gp_capacity_name(n->capacity)));
  json_object_set_new(o, "nvlink_domains", n->nvlink_domains ? json_incref(n->nvlink_domains) : json_array());
  if (!for_store)
    json_object_set_new(o, "last_heartbeat", n->last_heartbeat ? json_integer(n->last_heartbeat) : json_null());
  json_object_set_new(o, "agent_url", n->agent_url ? json_string(n->agent_url) : json_null());
  json_object_set_new(o, "gpu_backend", n->gpu_backend ? json_string(n->gpu_backend) : json_null());
  if (!for_store || n->provider_template) json_object_set_new(o, "provider", provider_json(n));
  /* Which jobs hold each GPU (API only). */
  json_t *jobs_on[GP_MAX_NODE_GPUS] = {0};
  bool others_on[GP_MAX_NODE_GPUS] = {0};
  int idx = s ? gp__srv_node_index(s, n->name) : -1;
  if (!for_store && s && idx >= 0) {
    for (int g = 0; g < n->n_gpus; g++) jobs_on[g] = json_array();
    for (int a = 0; a < s->n_active; a++) {
      const gp_srv_job *j = s->active[a];
      for (int t = 0; t < j->n_alloc; t++) {
        if (j->alloc[t].node != idx) continue;
        for (int g = 0; g < n->n_gpus; g++)
          if (j->alloc[t].gpu_mask & (UINT32_C(1) << g)) {
            json_array_append_new(jobs_on[g], json_string(j->idstr));
            if (only_for && strcmp(j->user, only_for) != 0) others_on[g] = true;
          }
      }
    }
  }
  json_t *list = json_array();
  for (int g = 0; g < n->n_gpus; g++) {
    const gp_srv_gpu *gpu = &n->gpus[g];
    json_t *e = json_object();
    json_object_set_new(e, "index", json_integer(g));
    json_object_set_new(e, "uuid", gpu->uuid ? json_string(gpu->uuid) : json_null());
    json_object_set_new(e, "health", json_string(gp_gpu_health_name(gpu->health)));
    json_object_set_new(e, "reason", gpu->reason ? json_string(gpu->reason) : json_null());
    json_object_set_new(e, "mode", json_string(gp_share_mode_name(gpu->mode)));
    json_object_set_new(e, "replicas", json_integer(gpu->replicas));
    json_object_set_new(e, "mem_mib", json_integer(gpu->mem_mib));
    json_t *mig = json_array();
    for (int m = 0; m < gpu->n_mig; m++) {
      json_t *mi = json_object();
      json_object_set_new(mi, "uuid", gpu->mig[m].uuid ? json_string(gpu->mig[m].uuid) : json_null());
      json_object_set_new(mi, "profile", json_string(gpu->mig[m].profile));
      json_object_set_new(mi, "start_slot", json_integer(gpu->mig[m].start_slot));
      json_array_append_new(mig, mi);
    }
    json_object_set_new(e, "mig", mig);
    if (for_store) {
      json_object_set_new(e, "admin_drained", json_boolean(gpu->admin_drained));
    } else {
      json_object_set_new(e, "jobs", jobs_on[g] ? jobs_on[g] : json_array());
      /* Figures only while the agent reports them: a lost node's are stale. null: they
       * are another user's job's. */
      json_object_set_new(e, "telemetry", others_on[g]                    ? json_null()
                                          : gpu->telemetry && n->alive ? json_incref(gpu->telemetry)
                                                                       : json_object());
    }
    json_array_append_new(list, e);
  }
  json_object_set_new(o, "gpu_list", list);
  return o;
}

json_t *gp__srv_node_to_json(const gp_srv_state *s, const gp_srv_node *n, bool for_store) {
  return node_json(s, n, for_store, NULL);
}

json_t *gp__srv_node_to_json_for(const gp_srv_state *s, const gp_srv_node *n, const char *user,
                                 gp_role role) {
  return node_json(s, n, false, gp_role_reads_all(role) ? NULL : user);
}
