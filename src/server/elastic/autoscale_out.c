/* SPDX-License-Identifier: Apache-2.0 */
/* What users see of the autoscaler: the pending reason of a job waiting for new nodes,
 * GET /v1/templates and the autoscaler's metrics. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/elastic/autoscale_int.h"
#include "server/state/server_int.h"

void gp__srv_as_clock(int64_t t, char out[16]) {
  snprintf(out, 16, "??:??:??");
  time_t tt = (time_t)t;
  struct tm tm;
  if (gmtime_r(&tt, &tm)) strftime(out, 16, "%H:%M:%S", &tm);
}

static void backoff_message(const gp_srv_as_tmpl *st, int64_t now, char *buf, size_t size) {
  const char *name = st->nt->t.name;
  char c1[16];
  gp__srv_as_clock(st->retry_at > now ? st->retry_at : now, c1);
  if (!st->listed && !st->err_class[0])
    snprintf(buf, size, "Template %s would hold it; its provider is listing the instances that "
             "exist.", name);
  else
    snprintf(buf, size, "Template %s would hold it; its provider failed (%s: %s); next try %s.",
             name, st->err_class, st->err_message, c1);
}

void gp__srv_as_note_message(const gp_srv_autoscale *a, const gp_srv_as_note *n, int64_t now,
                             char *buf, size_t size) {
  const gp_srv_as_tmpl *st = &a->tmpl[n->tmpl];
  const char *name = st->nt->t.name;
  char c1[16], c2[16];
  /* A job whose new nodes failed hears of that failure while their template backs off,
   * whichever template the proposal names first now. */
  if (n->state != GP_SCALE_WAITING && n->waited >= 0 && n->waited < a->n_tmpl &&
      a->tmpl[n->waited].retry_at > now && a->tmpl[n->waited].err_class[0]) {
    backoff_message(&a->tmpl[n->waited], now, buf, size);
    return;
  }
  switch (n->state) {
  case GP_SCALE_WAITING: {
    int64_t asked = st->last_asked ? st->last_asked : now;
    for (int i = 0; i < a->n_inst; i++)
      if (a->inst[i].tmpl == n->tmpl && a->inst[i].phase == GP_SRV_AS_CREATING &&
          a->inst[i].asked_at > 0 && a->inst[i].asked_at < asked)
        asked = a->inst[i].asked_at;
    gp__srv_as_clock(asked, c1);
    gp__srv_as_clock(asked + a->cfg->autoscale.resume_timeout_s, c2);
    snprintf(buf, size, "Waiting for %d new node%s of template %s (asked %s, resume timeout %s).",
             n->count, n->count == 1 ? "" : "s", name, c1, c2);
    break;
  }
  case GP_SCALE_BACKOFF:
    backoff_message(st, now, buf, size);
    break;
  case GP_SCALE_MAX_NODES:
    snprintf(buf, size, "Template %s would hold it; its max_nodes %d reached.", name,
             st->nt->t.max_nodes);
    break;
  case GP_SCALE_COST_CAP:
    snprintf(buf, size, "Template %s would hold it; max_hourly_cost %.2f/h would be passed.", name,
             a->cfg->autoscale.max_hourly_cost);
    break;
  default:
    snprintf(buf, size, "No node template could hold it.");
    break;
  }
}

/* Counts per template: registered nodes (up or not), being created, being deleted. */
static void template_counts(const gp_srv_state *s, const gp_srv_autoscale *a, int t, int *nodes,
                            int *creating, int *deleting, int *orphans) {
  const gp_srv_as_tmpl *st = &a->tmpl[t];
  *nodes = 0;
  *creating = st->creating_calls;
  *deleting = *orphans = 0;
  for (int i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->provider_template && strcmp(s->nodes[i]->provider_template, st->nt->t.name) == 0)
      (*nodes)++;
  for (int i = 0; i < a->n_inst; i++) {
    if (a->inst[i].tmpl != t) continue;
    if (a->inst[i].phase == GP_SRV_AS_CREATING) (*creating)++;
    else (*deleting)++;
    if (a->inst[i].orphan) (*orphans)++;
  }
}

int gp__srv_templates_route(gp_srv_state *s, gp_srv_req *r, int64_t now, gp_err *err) {
  (void)err;
  if (strcmp(r->method, "GET") != 0) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/templates");
    return 0;
  }
  const gp_srv_autoscale *a = s->autoscale;
  json_t *list = json_array();
  for (int t = 0; a && t < a->n_tmpl; t++) {
    const gp_srv_as_tmpl *st = &a->tmpl[t];
    const gp_provider_template *pt = &st->nt->t;
    int nodes, creating, deleting, orphans;
    template_counts(s, a, t, &nodes, &creating, &deleting, &orphans);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(pt->name));
    json_object_set_new(o, "model", json_string(pt->model));
    json_object_set_new(o, "gpus", json_integer(pt->gpus));
    json_object_set_new(o, "capacity", json_string(pt->capacity));
    json_object_set_new(o, "price_per_gpu_hour",
                        pt->price_per_gpu_hour >= 0 ? json_real(pt->price_per_gpu_hour) : json_null());
    json_object_set_new(o, "max_nodes", json_integer(pt->max_nodes));
    json_object_set_new(o, "nodes", json_integer(nodes));
    json_object_set_new(o, "creating", json_integer(creating));
    json_object_set_new(o, "deleting", json_integer(deleting));
    json_object_set_new(o, "orphans", json_integer(orphans));
    json_object_set_new(o, "listed", json_boolean(st->listed));
    if (st->retry_at > now)
      json_object_set_new(o, "backoff", json_pack("{s:I,s:s,s:s}", "until", (json_int_t)st->retry_at,
                                                  "class", st->err_class, "message", st->err_message));
    else
      json_object_set_new(o, "backoff", json_null());
    if (st->err_at)
      json_object_set_new(o, "last_error", json_pack("{s:I,s:s,s:s}", "at", (json_int_t)st->err_at,
                                                     "class", st->err_class, "message", st->err_message));
    else
      json_object_set_new(o, "last_error", json_null());
    json_array_append_new(list, o);
  }
  gp__srv_reply_json(r, 200, json_pack("{s:o}", "templates", list));
  return 0;
}

void gp__srv_autoscale_metrics(const gp_srv_state *s, gp_buf *out) {
  const gp_srv_autoscale *a = s->autoscale;
  if (!a) return;
  static const char *const results[] = {"ok", "capacity", "quota", "auth", "transient", "invalid",
                                        "broken"};
  gp_buf_puts(out, "# HELP gpool_provider_calls_total Provider calls by template, verb and result.\n"
                   "# TYPE gpool_provider_calls_total counter\n");
  for (int t = 0; t < a->n_tmpl; t++)
    for (int v = 0; v < 3; v++)
      for (int c = 0; c <= GP_PROVIDER_BROKEN; c++) {
        if (!a->tmpl[t].calls[v][c]) continue;
        gp_buf_puts(out, "gpool_provider_calls_total{template=\"");
        gp_prom_escape(out, a->tmpl[t].nt->t.name);
        gp_buf_printf(out, "\",verb=\"%s\",result=\"%s\"} %llu\n",
                      gp_provider_verb_name((gp_provider_verb)v), results[c],
                      (unsigned long long)a->tmpl[t].calls[v][c]);
      }
  gp_prom_histogram(out, "gpool_provider_call_seconds", "Time of a provider call.", &a->call_s);
  gp_buf_puts(out, "# HELP gpool_template_nodes Nodes of a template by state (registered, "
                   "creating, deleting).\n# TYPE gpool_template_nodes gauge\n");
  static const char *const states[] = {"registered", "creating", "deleting"};
  for (int t = 0; t < a->n_tmpl; t++) {
    int c[3], orphans;
    template_counts(s, a, t, &c[0], &c[1], &c[2], &orphans);
    for (int k = 0; k < 3; k++) {
      gp_buf_puts(out, "gpool_template_nodes{template=\"");
      gp_prom_escape(out, a->tmpl[t].nt->t.name);
      gp_buf_printf(out, "\",state=\"%s\"} %d\n", states[k], c[k]);
    }
  }
  gp_prom_histogram(out, "gpool_autoscale_pending_to_call_seconds",
                    "From a job's submission to the provider create call made for it.",
                    &a->pending_to_call_s);
}
