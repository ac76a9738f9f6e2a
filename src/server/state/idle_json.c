/* SPDX-License-Identifier: Apache-2.0 */
/* The idle policy in the API: a queue's `idle_policy` field, read through the same document
 * reader as the config file (so both refuse the same things with the same words), and a
 * running job's `idle` object (docs/api.md). */
#include <stdlib.h>
#include <string.h>

#include "server/state/state.h"

int gp__srv_idle_policy_from_json(const json_t *v, const char *field, gp_idle_policy *ret,
                                  gp_err *err) {
  if (!v || json_is_null(v)) {
    *ret = (gp_idle_policy){0};
    return 0;
  }
  if (!json_is_object(v))
    return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                      "must be an object {threshold_pct, window, grace, action, interactive}, "
                      "or null");
  char *text = json_dumps(v, JSON_COMPACT);
  if (!text) return gp_err_set(err, GP_EINVAL, NULL, 0, field, "cannot be read");
  gp_doc *d = NULL;
  int r = gp_doc_load_string(field, text, strlen(text), &d, err);
  free(text);
  if (!r) r = gp_idle_policy_read(d, d->root, field, ret, err);
  gp_doc_free(d);
  if (r && err) {
    /* The document is this one value: its name and line say nothing to an API caller. */
    err->file[0] = '\0';
    err->line = 0;
  }
  return r;
}

static json_t *rule_json(const gp_idle_rule *r) {
  json_t *o = json_object();
  json_object_set_new(o, "threshold_pct", json_real(r->threshold_pct));
  json_object_set_new(o, "window", json_integer(r->window_s));
  json_object_set_new(o, "grace", json_integer(r->grace_s));
  json_object_set_new(o, "action", json_string(gp_idle_action_name(r->action)));
  return o;
}

json_t *gp__srv_idle_policy_to_json(const gp_idle_policy *p) {
  if (!p->set) return json_null();
  json_t *o = rule_json(&p->rule);
  json_object_set_new(o, "interactive",
                      p->has_interactive ? rule_json(&p->interactive) : json_null());
  return o;
}

json_t *gp__srv_idle_job_json(const gp_srv_state *s, const gp_srv_job *j, int64_t now) {
  const gp_idle_track *t = &j->idle;
  if (!s || j->state != GP_JOB_RUNNING || (t->last_pct < 0 && !t->idle_since)) return json_null();
  const gp_idle_rule *r = gp__srv_idle_rule(s, j);
  json_t *o = json_object();
  json_object_set_new(o, "since", t->idle_since ? json_integer(t->idle_since) : json_null());
  json_object_set_new(o, "util_pct", t->last_pct >= 0 ? json_real(t->last_pct) : json_null());
  json_object_set_new(o, "threshold_pct", json_real(r ? r->threshold_pct : GP_SRV_IDLE_PCT));
  json_object_set_new(o, "window_s", json_integer(r ? r->window_s : GP_SRV_IDLE_WINDOW_S));
  json_object_set_new(o, "idle_for_s",
                      t->idle_since && now > t->idle_since ? json_integer(now - t->idle_since)
                                                           : json_integer(0));
  const char *why = NULL;
  gp_idle_action a = r ? gp_idle_effective(r, j->requeue, gp__srv_idle_class(s, j), &why)
                       : GP_IDLE_NOTIFY;
  json_object_set_new(o, "action", r ? json_string(gp_idle_action_name(a)) : json_null());
  if (why) json_object_set_new(o, "why", json_string(why));
  int64_t due = r ? gp_idle_due(r, j->started_at, t->idle_since) : 0;
  json_object_set_new(o, "due_at", due ? json_integer(due) : json_null());
  json_object_set_new(o, "acted", json_boolean(t->idle_since && j->idle_acted_since == t->idle_since));
  return o;
}
