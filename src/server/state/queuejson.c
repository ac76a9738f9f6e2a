/* SPDX-License-Identifier: Apache-2.0 */
/* Queues to and from JSON: the body of PUT /v1/queues/{name} (validated), the stored
 * document, and the queue tree of GET /v1/queues with live usage and the last fair shares. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/state.h"
#include "snapshot/policy_read.h"
#include "util/mem.h"

static void names_free(char **names, int n) {
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
}

void gp__srv_queue_free(gp_srv_queue *q) {
  if (!q) return;
  free(q->name);
  free(q->default_priority);
  names_free(q->users, q->n_users);
  names_free(q->classes, q->n_classes);
  gp__srv_ulimits_free(&q->user_limits);
  free(q);
}

/* A list of at most max_items names of 1..max_len bytes (users, priority classes) into a new
 * array. Returns 0, or GP_EINVAL naming `key` (list_msg) or `key[i]` (item_msg). */
static int read_names(const json_t *v, const char *key, size_t max_items, size_t max_len,
                      const char *list_msg, const char *item_msg, char ***ret, int *ret_n,
                      gp_err *err) {
  if (!json_is_array(v) || json_array_size(v) > max_items)
    return gp_err_set(err, GP_EINVAL, NULL, 0, key, "%s", list_msg);
  int n = (int)json_array_size(v);
  char **names = gp_xcalloc((size_t)n + 1, sizeof *names);
  for (int i = 0; i < n; i++) {
    const json_t *c = json_array_get(v, (size_t)i);
    if (!json_is_string(c) || json_string_length(c) == 0 || json_string_length(c) > max_len) {
      names_free(names, i);
      char f[64];
      snprintf(f, sizeof f, "%s[%d]", key, i);
      return gp_err_set(err, GP_EINVAL, NULL, 0, f, "%s", item_msg);
    }
    names[i] = gp_xstrdup(json_string_value(c));
  }
  *ret = names;
  *ret_n = n;
  return 0;
}

/* `spot`: {"prefer": "neutral|prefer|avoid|never", "share": (0, 1] or null}; a key left
 * out keeps its value. */
static int read_spot(const json_t *v, gp_spot_pref *pref, double *share, gp_err *err) {
  if (!json_is_object(v))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "spot", "must be an object {prefer, share}");
  const char *k;
  const json_t *x;
  json_object_foreach((json_t *)v, k, x) {
    if (strcmp(k, "prefer") != 0 && strcmp(k, "share") != 0) {
      char f[128];
      snprintf(f, sizeof f, "spot.%.100s", k);
      return gp_err_set(err, GP_EINVAL, NULL, 0, f, "unknown field");
    }
  }
  if ((x = json_object_get(v, "prefer")) &&
      (!json_is_string(x) || gp_spot_pref_parse(json_string_value(x), pref)))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "spot.prefer",
                      "must be one of: neutral, prefer, avoid, never");
  if ((x = json_object_get(v, "share"))) {
    if (json_is_null(x)) *share = 0;
    else if (!json_is_number(x) || !(json_number_value(x) > 0) || json_number_value(x) > 1)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "spot.share",
                        "must be a share of GPUs above 0 and at most 1, or null");
    else *share = json_number_value(x);
  }
  return 0;
}

int gp__srv_queue_from_json(const json_t *o, const char *name, gp_srv_queue *q, gp_err *err) {
  static const char *const keys[] = {"name", "deserved", "limit", "weight", "users",
                                     "default_priority", "default_time_limit",
                                     "priority_classes", "budget", "idle_policy", "spot",
                                     "user_limits", NULL};
  if (!json_is_object(o)) return gp_err_set(err, GP_EINVAL, NULL, 0, NULL, "the body must be a JSON object");
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    bool known = false;
    for (int i = 0; keys[i] && !known; i++) known = strcmp(keys[i], k) == 0;
    if (!known) {
      char f[128];
      snprintf(f, sizeof f, "%.100s", k);
      return gp_err_set(err, GP_EINVAL, NULL, 0, f, "unknown field");
    }
  }
  if (!gp_queue_name_ok(name)) return gp_err_set(err, GP_EINVAL, NULL, 0, "name", "%s", GP_QUEUE_NAME_RULE);
  const char *bn = json_string_value(json_object_get(o, "name"));
  if (bn && strcmp(bn, name) != 0)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "name", "does not match the queue in the URL");
  double deserved = q->deserved, limit = q->limit, weight = q->weight;
  if ((v = json_object_get(o, "deserved"))) {
    if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e7)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "deserved", "must be a number of GPUs >= 0");
    deserved = json_number_value(v);
  }
  if ((v = json_object_get(o, "limit"))) {
    if (json_is_null(v)) limit = GP_NO_LIMIT;
    else if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e7)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "limit", "must be a number of GPUs >= 0, or null");
    else limit = json_number_value(v);
  }
  if (limit != GP_NO_LIMIT && limit < deserved)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "limit", "must not be below deserved");
  if ((v = json_object_get(o, "weight"))) {
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || json_number_value(v) > 1e6)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "weight", "must be a number from 0 to 1000000");
    weight = json_number_value(v);
  }
  gp_spot_pref spot = q->spot;
  double spot_share = q->spot_share;
  if ((v = json_object_get(o, "spot")) && read_spot(v, &spot, &spot_share, err)) return GP_EINVAL;
  char *prio = NULL;
  if ((v = json_object_get(o, "default_priority")) && !json_is_null(v)) {
    if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > GP_READ_MAX_NAME)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "default_priority", "must be a priority class name");
    prio = gp_xstrdup(json_string_value(v));
  }
  int64_t dtl = q->default_time_limit;
  if ((v = json_object_get(o, "default_time_limit")) && !json_is_null(v)) {
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT64_C(366) * 86400) {
      free(prio);
      return gp_err_set(err, GP_EINVAL, NULL, 0, "default_time_limit", "must be seconds >= 0");
    }
    dtl = json_integer_value(v);
  }
  /* Checked against the policy's classes by the caller (it has the config). */
  char **classes = NULL;
  int n_classes = -2; /* -2: not in the body; -1: null, the default */
  if ((v = json_object_get(o, "priority_classes"))) {
    if (json_is_null(v)) {
      n_classes = -1;
    } else if (read_names(v, "priority_classes", 64, GP_READ_MAX_NAME,
                          "must be a list of at most 64 priority class names, or null",
                          "must be a priority class name", &classes, &n_classes, err)) {
      free(prio);
      return GP_EINVAL;
    }
  }
  gp_budget budget = q->budget;
  if ((v = json_object_get(o, "budget")) && gp_budget_from_json(v, "budget", &budget, err)) {
    names_free(classes, n_classes);
    free(prio);
    return GP_EINVAL;
  }
  gp_idle_policy idle_policy = q->idle_policy;
  if ((v = json_object_get(o, "idle_policy")) &&
      gp__srv_idle_policy_from_json(v, "idle_policy", &idle_policy, err)) {
    names_free(classes, n_classes);
    free(prio);
    return GP_EINVAL;
  }
  gp_srv_ulimits ulim = {0};
  bool has_ulim = (v = json_object_get(o, "user_limits")) != NULL;
  if (has_ulim && gp__srv_ulimits_from_json(v, &ulim, err)) {
    names_free(classes, n_classes);
    free(prio);
    return GP_EINVAL;
  }
  char **users = NULL;
  int n_users = -1;
  if ((v = json_object_get(o, "users")) &&
      read_names(v, "users", 10000, 64, "must be a list of user names (\"*\": everyone)",
                 "must be a user name", &users, &n_users, err)) {
    names_free(classes, n_classes);
    free(prio);
    gp__srv_ulimits_free(&ulim);
    return GP_EINVAL;
  }
  /* Validated: apply. */
  if (!q->name) q->name = gp_xstrdup(name);
  q->deserved = deserved;
  q->limit = limit;
  q->weight = weight;
  q->default_time_limit = dtl;
  q->budget = budget;
  q->idle_policy = idle_policy;
  q->spot = spot;
  q->spot_share = spot_share;
  if (has_ulim) {
    gp__srv_ulimits_free(&q->user_limits);
    q->user_limits = ulim;
  }
  if (prio) {
    free(q->default_priority);
    q->default_priority = prio;
  }
  if (n_classes >= -1) {
    names_free(q->classes, q->n_classes);
    q->classes = classes;
    q->n_classes = n_classes;
  }
  if (n_users >= 0) {
    names_free(q->users, q->n_users);
    q->users = users;
    q->n_users = n_users;
  }
  return 0;
}

json_t *gp__srv_queue_to_json(const gp_srv_queue *q) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(q->name));
  json_object_set_new(o, "deserved", json_real(q->deserved));
  json_object_set_new(o, "limit", q->limit == GP_NO_LIMIT ? json_null() : json_real(q->limit));
  json_object_set_new(o, "weight", json_real(q->weight));
  json_t *u = json_array();
  for (int i = 0; i < q->n_users; i++) json_array_append_new(u, json_string(q->users[i]));
  json_object_set_new(o, "users", u);
  json_object_set_new(o, "default_priority",
                      q->default_priority ? json_string(q->default_priority) : json_null());
  json_object_set_new(o, "default_time_limit", json_integer(q->default_time_limit));
  json_t *pc = json_null();
  if (q->n_classes >= 0) {
    pc = json_array();
    for (int i = 0; i < q->n_classes; i++) json_array_append_new(pc, json_string(q->classes[i]));
  }
  json_object_set_new(o, "priority_classes", pc);
  json_object_set_new(o, "budget", gp_budget_to_json(&q->budget));
  json_object_set_new(o, "idle_policy", gp__srv_idle_policy_to_json(&q->idle_policy));
  json_t *spot = json_object();
  json_object_set_new(spot, "prefer", json_string(gp_spot_pref_name(q->spot)));
  json_object_set_new(spot, "share", q->spot_share > 0 ? json_real(q->spot_share) : json_null());
  json_object_set_new(o, "spot", spot);
  json_object_set_new(o, "user_limits", gp__srv_ulimits_to_json(&q->user_limits));
  return o;
}

typedef struct qrow {
  char *name;
  const gp_srv_queue *q; /* NULL for an implied parent */
  double deserved, allocated, pending;
  int running_jobs, pending_jobs;
} qrow;

static int find_row(qrow *rows, int n, const char *name, size_t len) {
  for (int i = 0; i < n; i++)
    if (strlen(rows[i].name) == len && strncmp(rows[i].name, name, len) == 0) return i;
  return -1;
}

/* GPUs a job asks for (pending) or holds (running), fractions as fractions. */
static double job_gpus(const gp_srv_job *j) {
  if (j->n_alloc > 0) {
    double g = 0;
    for (int t = 0; t < j->n_alloc; t++)
      g += __builtin_popcount(j->alloc[t].gpu_mask) * (j->alloc[t].gpu_milli / 1000.0);
    return g;
  }
  return gp__srv_job_asked_gpus(j);
}

json_t *gp__srv_queues_json(const gp_srv_state *s) {
  int cap = s->n_queues * 4 + 4, n = 0;
  qrow *rows = gp_xcalloc((size_t)cap, sizeof *rows);
  for (int i = 0; i < s->n_queues; i++) {
    const char *name = s->queues[i]->name;
    /* Every prefix ending before a '/' is a parent. */
    for (const char *p = name;; p++) {
      if (*p == '/' || *p == '\0') {
        size_t len = (size_t)(p - name);
        int r = find_row(rows, n, name, len);
        if (r < 0) {
          if (n == cap) {
            cap *= 2;
            rows = gp_xrealloc(rows, sizeof *rows * (size_t)cap);
          }
          memset(&rows[n], 0, sizeof rows[n]);
          rows[n].name = gp_xstrndup(name, len);
          r = n++;
        }
        if (*p == '\0') rows[r].q = s->queues[i];
      }
      if (!*p) break;
    }
  }
  for (int a = 0; a < s->n_active; a++) {
    const gp_srv_job *j = s->active[a];
    bool running = j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING;
    bool pending = j->state == GP_JOB_PENDING;
    if (!running && !pending) continue;
    double g = job_gpus(j);
    for (const char *p = j->queue;; p++) {
      if (*p == '/' || *p == '\0') {
        int r = find_row(rows, n, j->queue, (size_t)(p - j->queue));
        if (r >= 0) {
          if (running) rows[r].allocated += g, rows[r].running_jobs++;
          else rows[r].pending += g, rows[r].pending_jobs++;
        }
      }
      if (!*p) break;
    }
  }
  json_t *list = json_array();
  for (int i = 0; i < n; i++) {
    qrow *r = &rows[i];
    const gp_srv_queue_fig *fig = NULL;
    for (int k = 0; k < s->n_figs; k++)
      if (strcmp(s->figs[k].name, r->name) == 0) fig = &s->figs[k];
    double deserved = 0;
    if (r->q) deserved = r->q->deserved;
    else {
      size_t len = strlen(r->name);
      for (int k = 0; k < n; k++)
        if (rows[k].q && strncmp(rows[k].name, r->name, len) == 0 && rows[k].name[len] == '/' &&
            !strchr(rows[k].name + len + 1, '/'))
          deserved += rows[k].q->deserved;
    }
    json_t *o = r->q ? gp__srv_queue_to_json(r->q) : json_object();
    json_object_set_new(o, "name", json_string(r->name));
    const char *slash = strrchr(r->name, '/');
    json_object_set_new(o, "parent", slash ? json_stringn(r->name, (size_t)(slash - r->name)) : json_null());
    json_object_set_new(o, "deserved", json_real(deserved));
    if (!r->q) {
      json_object_set_new(o, "limit", json_null());
      json_object_set_new(o, "weight", json_real(1));
      json_object_set_new(o, "users", json_array());
      json_object_set_new(o, "default_priority", json_null());
      json_object_set_new(o, "priority_classes", json_null());
      json_object_set_new(o, "spot", json_pack("{s:s,s:n}", "prefer", "neutral", "share"));
    }
    json_object_set_new(o, "implied", json_boolean(r->q == NULL));
    json_object_set_new(o, "from_config", json_boolean(r->q && r->q->from_config));
    json_object_set_new(o, "fair_share", json_real(fig ? fig->fig.fair_share : 0));
    json_object_set_new(o, "allocated", json_real(r->allocated));
    json_object_set_new(o, "pending", json_real(r->pending));
    json_object_set_new(o, "running_jobs", json_integer(r->running_jobs));
    json_object_set_new(o, "pending_jobs", json_integer(r->pending_jobs));
    /* The features' fields (a budget's spend); the handlers only read the state. */
    gp__srv_hook_fire((gp_srv_state *)s, &s->hooks, GP_SRV_HOOK_QUEUE_DOC,
                      &(gp_srv_hook_ev){.name = r->name, .out = o}, NULL);
    json_array_append_new(list, o);
  }
  for (int i = 0; i < n; i++) free(rows[i].name);
  free(rows);
  return list;
}
