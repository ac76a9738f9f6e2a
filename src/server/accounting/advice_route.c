/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/advice on the state thread (advice.h): checks the query and the caller, then
 * copies out the fleet's GPU models, the queues' deserved GPUs (an admin's advice) and the
 * running jobs idle past their queue's window now, so nothing the HTTP thread reads later
 * belongs to the state. Every parameter is a user's: each is bounded and a refusal names it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/accounting/advice.h"
#include "server/accounting/ledger.h"
#include "server/accounting/prices.h"
#include "server/state/state.h"
#include "util/calendar.h"
#include "util/mem.h"
#include "util/units.h"

#define MAX_FILTER 256 /* bytes of a queue, user or name filter */

static int bad_time(const char *field, const char *v, gp_err *err) {
  return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                    "%s \"%.64s\" is not a time: use RFC 3339 (2026-01-31T12:00:00Z), a date "
                    "(2026-01-31, 00:00 UTC) or Unix seconds", field, v);
}

/* "0.2" or "20%": a fraction of the use, 0 to 4. */
static int parse_headroom(const char *v, double *ret, gp_err *err) {
  char num[32];
  size_t n = strlen(v);
  bool pct = n > 0 && v[n - 1] == '%';
  double d = 0;
  if (n == 0 || n >= sizeof num) d = NAN;
  else {
    memcpy(num, v, n - pct);
    num[n - pct] = '\0';
    if (gp_parse_double(num, &d)) d = NAN;
  }
  if (pct) d /= 100;
  if (!(d >= 0 && d <= GP_ADVICE_MAX_HEADROOM))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "headroom",
                      "headroom \"%.32s\" must be a fraction from 0 to %g (0.2) or a percentage (20%%)",
                      v, GP_ADVICE_MAX_HEADROOM);
  *ret = d;
  return 0;
}

int gp__srv_advice_query(const json_t *query, int64_t now, gp_advice_params *p, gp_err *err) {
  gp_advice_params q = {.headroom = GP_ADVICE_HEADROOM, .checkpoint_s = GP_ADVICE_CHECKPOINT_S,
                        .now = now};
  bool has_from = false, has_to = false;
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)query, key, val) {
    const char *v = json_string_value(val);
    if (!v) v = "";
    int rc = 0;
    if (strcmp(key, "from") == 0) {
      if (!gp_parse_time(v, &q.from)) rc = bad_time("from", v, err);
      has_from = true;
    } else if (strcmp(key, "to") == 0) {
      if (!gp_parse_time(v, &q.to)) rc = bad_time("to", v, err);
      has_to = true;
    } else if (strcmp(key, "queue") == 0 || strcmp(key, "user") == 0 || strcmp(key, "name") == 0) {
      if (!*v || strlen(v) > MAX_FILTER)
        rc = gp_err_set(err, GP_EINVAL, NULL, 0, key, "%s must be 1 to %d bytes", key, MAX_FILTER);
      else if (key[0] == 'q') q.queue = v;
      else if (key[0] == 'u') q.user = v;
      else q.name = v;
    } else if (strcmp(key, "headroom") == 0) {
      rc = parse_headroom(v, &q.headroom, err);
    } else if (strcmp(key, "checkpoint") == 0) {
      int64_t s = 0;
      if (gp_parse_duration_s(v, &s) || s < 60 || s > 30 * 86400)
        rc = gp_err_set(err, GP_EINVAL, NULL, 0, "checkpoint",
                        "checkpoint \"%.32s\" must be a duration from 1m to 30d (30m)", v);
      q.checkpoint_s = s;
    } else {
      rc = gp_err_set(err, GP_EINVAL, NULL, 0, key,
                      "unknown parameter \"%.64s\": advice takes from, to, queue, user, name, "
                      "headroom and checkpoint", key);
    }
    if (rc) return rc;
  }
  if (!has_to) q.to = now;
  if (!has_from) q.from = q.to - GP_SRV_ADVICE_DEFAULT_S;
  if (q.from >= q.to)
    return gp_err_set(err, GP_EINVAL, NULL, 0, has_from ? "from" : "to",
                      "from must come before to");
  if (q.to - q.from > GP_SRV_ADVICE_MAX_SPAN_S)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "to",
                      "advice covers at most 3 years; ask for a shorter period");
  *p = q;
  return 0;
}

void gp__srv_advice_free(gp_srv_advice *adv) {
  if (!adv) return;
  gp_prices_free(adv->prices);
  free(adv->queue);
  free(adv->user);
  free(adv->name);
  for (int i = 0; i < adv->p.n_models; i++) free((char *)adv->models[i].name);
  free(adv->models);
  for (int i = 0; i < adv->p.n_queues; i++) free((char *)adv->queues[i].name);
  free(adv->queues);
  for (int i = 0; i < adv->n_idle; i++) {
    free((char *)adv->idle[i].name);
    free((char *)adv->idle[i].user);
    free((char *)adv->idle[i].queue);
    free((char *)adv->idle[i].model);
  }
  free(adv->idle);
  free(adv);
}

/* The fleet's GPU models: memory, and whether any GPU of it is partitioned or shared. */
static void copy_models(const gp_srv_state *s, gp_srv_advice *adv) {
  size_t cap = 0;
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    if (!n || !n->model || n->n_gpus <= 0) continue;
    int k = 0;
    while (k < adv->p.n_models && strcasecmp(adv->models[k].name, n->model) != 0) k++;
    if (k == adv->p.n_models) {
      gp_xgrow((void **)&adv->models, &cap, (size_t)k + 1, sizeof *adv->models);
      adv->models[k] = (gp_advice_model){.name = gp_xstrdup(n->model), .mem_mib = n->gpu_mem_mib};
      adv->p.n_models++;
    }
    for (int g = 0; g < n->n_gpus; g++) {
      if (n->gpus[g].mode == GP_SHARE_MIG) adv->models[k].mig = true;
      if (n->gpus[g].mode == GP_SHARE_SHARED) adv->models[k].shared = true;
    }
  }
}

/* Running jobs idle past their rule's window now (the default window where the queue has
 * no policy). */
static void copy_idle(const gp_srv_state *s, gp_srv_advice *adv, int64_t now) {
  size_t cap = 0;
  for (int i = 0; i < s->n_active; i++) {
    const gp_srv_job *j = s->active[i];
    if (j->n_alloc <= 0 || !gp__srv_idle_now(s, j, now)) continue;
    if (adv->user && strcmp(adv->user, j->user) != 0) continue;
    const gp_idle_rule *rule = gp__srv_idle_rule(s, j);
    double share = 0;
    const gp_srv_node *n = NULL;
    for (int t = 0; t < j->n_alloc; t++) {
      const gp_srv_alloc *a = &j->alloc[t];
      if (a->node < 0 || a->node >= s->n_nodes) continue;
      n = s->nodes[a->node];
      share += gp__srv_task_share(s, a);
    }
    if (!n) continue;
    gp_xgrow((void **)&adv->idle, &cap, (size_t)adv->n_idle + 1, sizeof *adv->idle);
    adv->idle[adv->n_idle++] = (gp_advice_idle){
        .job = j->id,
        .name = gp_xstrdup(j->name ? j->name : ""),
        .user = gp_xstrdup(j->user),
        .queue = gp_xstrdup(j->queue),
        .model = gp_xstrdup(n->model ? n->model : ""),
        .capacity = n->capacity,
        .share_gpus = share,
        .idle_since = j->idle.idle_since,
        .last_pct = j->idle.last_pct,
        .threshold_pct = rule ? rule->threshold_pct : GP_SRV_IDLE_PCT,
    };
  }
}

/* Whether `name` is a queue or the parent of one. */
static bool queue_known(const gp_srv_state *s, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < s->n_queues; i++) {
    const char *q = s->queues[i] ? s->queues[i]->name : NULL;
    if (q && strncmp(q, name, n) == 0 && (q[n] == '\0' || q[n] == '/')) return true;
  }
  return false;
}

void gp__srv_advice_route(gp_srv_state *s, gp_srv_req *r, int64_t now) {
  if (strcmp(r->method, "GET") != 0) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/advice");
    return;
  }
  bool admin = gp_role_reads_all(r->role);
  gp_advice_params q;
  gp_err err = {0};
  int rc = gp__srv_advice_query(r->query, now, &q, &err);
  if (rc) {
    gp__srv_reply_err(r, rc, &err);
    return;
  }
  /* A queue filter names a queue of the pool (or a parent of some): a misspelt one would
   * otherwise answer "nothing to advise", which reads as a clean bill. */
  if (q.queue && !queue_known(s, q.queue)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "queue",
                        "no queue \"%.128s\" in this pool (gpool queues lists them)", q.queue);
    return;
  }
  if (!admin && q.user && strcmp(q.user, r->user) != 0) {
    gp__srv_reply_error(r, 403, "permission_denied", "user",
                        "a user reads only their own advice; only admins may name another user");
    return;
  }
  gp_srv_advice *adv = gp_xcalloc(1, sizeof *adv);
  adv->store = s->store;
  adv->admin = admin;
  adv->max_in_flight = s->cfg->http_threads > 2 ? s->cfg->http_threads / 2 : 1;
  adv->prices = gp__srv_prices_ref(s);
  adv->queue = gp_xstrdup(q.queue);
  adv->user = gp_xstrdup(admin ? q.user : r->user);
  adv->name = gp_xstrdup(q.name);
  copy_models(s, adv);
  copy_idle(s, adv, now);
  /* Quota and the fleet's band are the whole fleet's: an admin's, and not for one name. */
  if (admin && !q.user && !q.name && s->n_queues > 0) {
    adv->queues = gp_xcalloc((size_t)s->n_queues, sizeof *adv->queues);
    for (int i = 0; i < s->n_queues; i++)
      adv->queues[i] = (gp_advice_queue){gp_xstrdup(s->queues[i]->name), s->queues[i]->deserved};
    adv->p.n_queues = s->n_queues;
  }
  int n_models = adv->p.n_models, n_queues = adv->p.n_queues;
  adv->p = q;
  adv->p.prices = adv->prices;
  adv->p.queue = adv->queue;
  adv->p.user = adv->user;
  adv->p.name = adv->name;
  adv->p.fleet = admin && !q.user && !q.name;
  adv->p.n_models = n_models;
  adv->p.models = adv->models;
  adv->p.n_queues = n_queues;
  adv->p.queues = adv->queues;
  gp__srv_advice_free(r->advice);
  r->advice = adv;
  /* Decided here; the HTTP thread makes the answer's body (gp__srv_advice_run). */
  free(r->resp);
  r->resp = NULL;
  r->status = 200;
  r->answered = true;
}
