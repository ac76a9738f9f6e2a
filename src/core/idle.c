/* SPDX-License-Identifier: Apache-2.0 */
/* The idle policy's reader and arithmetic declared in idle.h. */
#include "core/idle.h"

#include <math.h>
#include <string.h>

static const char *const action_names[] = {"notify", "requeue", "cancel"};

const char *gp_idle_action_name(gp_idle_action a) {
  return (unsigned)a < 3 ? action_names[a] : "?";
}

static int read_rule(const gp_doc *d, const gp_doc_node *n, const char *path, bool outer,
                     gp_idle_rule *r, gp_err *err) {
  static const char *const outer_keys[] = {"threshold_pct", "window", "grace", "action",
                                           "interactive", NULL};
  static const char *const inner_keys[] = {"threshold_pct", "window", "grace", "action", NULL};
  int rc = gp_doc_expect(d, n, path, GP_DOC_MAP, err);
  if (rc || (rc = gp_doc_check_keys(d, n, path, outer ? outer_keys : inner_keys, err))) return rc;
  char f[200];
  const gp_doc_node *v;
  if ((v = gp_doc_get(n, "threshold_pct"))) {
    gp_doc_path(f, sizeof f, path, "threshold_pct");
    if ((rc = gp_doc_double(d, v, f, &r->threshold_pct, err))) return rc;
    if (!(r->threshold_pct > 0 && r->threshold_pct <= 100))
      return gp_err_set(err, GP_EINVAL, d->name, v->line, f, "must be above 0 and at most 100");
  }
  const char *durs[] = {"window", "grace"};
  int64_t *dst[] = {&r->window_s, &r->grace_s};
  for (int i = 0; i < 2; i++) {
    if (!(v = gp_doc_get(n, durs[i]))) continue;
    gp_doc_path(f, sizeof f, path, durs[i]);
    if ((rc = gp_doc_duration_s(d, v, f, dst[i], err))) return rc;
    if (*dst[i] < (i == 0 ? 1 : 0) || *dst[i] > GP_IDLE_MAX_WINDOW_S)
      return gp_err_set(err, GP_EINVAL, d->name, v->line, f, "must be %s and at most 30 days",
                        i == 0 ? "at least 1s" : "0 or more");
  }
  if ((v = gp_doc_get(n, "action"))) {
    gp_doc_path(f, sizeof f, path, "action");
    int a = 0;
    if ((rc = gp_doc_enum(d, v, f, action_names, 3, &a, err))) return rc;
    r->action = (gp_idle_action)a;
  }
  return 0;
}

int gp_idle_policy_read(const gp_doc *d, const gp_doc_node *n, const char *path,
                        gp_idle_policy *ret, gp_err *err) {
  gp_idle_policy p = {0};
  if (!n || gp_doc_is_null(n)) {
    *ret = p;
    return 0;
  }
  p.set = true;
  p.rule = (gp_idle_rule){.threshold_pct = 5, .window_s = 600, .grace_s = 600,
                          .action = GP_IDLE_NOTIFY};
  int rc = read_rule(d, n, path, true, &p.rule, err);
  if (rc) return rc;
  const gp_doc_node *in = gp_doc_get(n, "interactive");
  if (in && !gp_doc_is_null(in)) {
    char f[200];
    gp_doc_path(f, sizeof f, path, "interactive");
    p.has_interactive = true;
    p.interactive = p.rule;
    if ((rc = read_rule(d, in, f, false, &p.interactive, err))) return rc;
  }
  *ret = p;
  return 0;
}

static bool is_class(const char *priority_class, const char *name) {
  return priority_class && strcmp(priority_class, name) == 0;
}

const gp_idle_rule *gp_idle_rule_for(const gp_idle_policy *p, const char *priority_class) {
  if (p->has_interactive && is_class(priority_class, "interactive")) return &p->interactive;
  return &p->rule;
}

gp_idle_action gp_idle_effective(const gp_idle_rule *r, bool requeueable,
                                 const char *priority_class, const char **why) {
  if (why) *why = NULL;
  if (r->action == GP_IDLE_REQUEUE && !requeueable) {
    if (why) *why = "the job is not requeueable";
    return GP_IDLE_NOTIFY;
  }
  if (r->action == GP_IDLE_CANCEL && !is_class(priority_class, "opportunistic")) {
    if (why) *why = "only opportunistic jobs are cancelled for idling";
    return GP_IDLE_NOTIFY;
  }
  return r->action;
}

int64_t gp_idle_due(const gp_idle_rule *r, int64_t started_at, int64_t idle_since) {
  if (idle_since <= 0) return 0;
  int64_t due = idle_since + r->window_s;
  int64_t graced = started_at + r->grace_s;
  return due > graced ? due : graced;
}

void gp_idle_track_update(gp_idle_track *t, double busy_gpu_s, double share_gpus,
                          double threshold_pct, int64_t at) {
  if (!(busy_gpu_s >= 0) || !isfinite(busy_gpu_s) || !(share_gpus > 0)) {
    *t = (gp_idle_track){.last_pct = -1};
    return;
  }
  /* A first figure, or a total that went down (the agent started counting again): a new
   * base to measure from. */
  if (!t->base_at || busy_gpu_s < t->base_busy_gpu_s || at < t->base_at) {
    t->base_at = at;
    t->base_busy_gpu_s = busy_gpu_s;
    if (!t->idle_since) t->last_pct = -1;
    return;
  }
  int64_t span = at - t->base_at;
  if (span < GP_IDLE_MIN_SPAN_S) return;
  double pct = (busy_gpu_s - t->base_busy_gpu_s) / ((double)span * share_gpus) * 100.0;
  if (pct > 100) pct = 100;
  t->last_pct = pct;
  if (pct < threshold_pct) {
    if (!t->idle_since) t->idle_since = t->base_at;
  } else {
    t->idle_since = 0;
  }
  t->base_at = at;
  t->base_busy_gpu_s = busy_gpu_s;
}
