/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user limits of a queue (user_limits.h): readers from the config and from JSON, the
 * JSON form, and the scheduler's copy. Every number is bounded and named in its error. */
#include "server/state/user_limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static const char *const period_names[] = {"day", "week", "month"};

static void make_core(gp_srv_ulimits *u) {
  free(u->core);
  u->core = gp_xcalloc((size_t)u->n + 1, sizeof *u->core);
  for (int i = 0; i < u->n; i++)
    u->core[i] = (gp_user_limit){u->l[i].user, u->l[i].max_gpus, u->l[i].max_gpu_hours};
}

void gp__srv_ulimits_free(gp_srv_ulimits *u) {
  for (int i = 0; i < u->n; i++) free(u->l[i].user);
  free(u->l);
  free(u->core);
  memset(u, 0, sizeof *u);
  u->period = GP_BUDGET_MONTH;
}

void gp__srv_ulimits_copy(gp_srv_ulimits *dst, const gp_srv_ulimits *src) {
  memset(dst, 0, sizeof *dst);
  dst->period = src->period;
  dst->n = src->n;
  dst->l = gp_xcalloc((size_t)src->n + 1, sizeof *dst->l);
  for (int i = 0; i < src->n; i++) {
    dst->l[i] = src->l[i];
    dst->l[i].user = gp_xstrdup(src->l[i].user);
  }
  make_core(dst);
}

const gp_srv_ulimit *gp__srv_ulimit_for(const gp_srv_ulimits *u, const char *user) {
  const gp_srv_ulimit *any = NULL;
  for (int i = 0; u && i < u->n; i++) {
    if (user && strcmp(u->l[i].user, user) == 0) return &u->l[i];
    if (strcmp(u->l[i].user, "*") == 0) any = &u->l[i];
  }
  return any;
}

static bool user_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64) return false;
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x21 || *p == 0x7f || *p == ':') return false;
  return true;
}

/* One limit's number: GPUs up to 1e7, GPU-hours up to 1e9, jobs up to 1e7; null: none. */
static int check_num(double v, double max, const char *field, gp_err *err) {
  if (!(v >= 0) || !isfinite(v) || v > max)
    return gp_err_set(err, GP_EINVAL, NULL, 0, field, "must be a number from 0 to %g, or null", max);
  return 0;
}

/* ---- JSON ---- */

int gp__srv_ulimits_from_json(const json_t *v, gp_srv_ulimits *ret, gp_err *err) {
  gp_srv_ulimits u = {.period = GP_BUDGET_MONTH};
  if (json_is_null(v)) {
    *ret = u;
    return 0;
  }
  if (!json_is_object(v))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "user_limits", "must be an object {period, users} or null");
  const char *k;
  json_t *x;
  json_object_foreach((json_t *)v, k, x) if (strcmp(k, "period") && strcmp(k, "users")) {
    char f[160];
    snprintf(f, sizeof f, "user_limits.%.100s", k);
    return gp_err_set(err, GP_EINVAL, NULL, 0, f, "unknown field");
  }
  json_t *p = json_object_get(v, "period");
  if (p) {
    int found = -1;
    for (int i = 0; i < 3 && json_is_string(p); i++)
      if (strcmp(json_string_value(p), period_names[i]) == 0) found = i;
    if (found < 0) return gp_err_set(err, GP_EINVAL, NULL, 0, "user_limits.period", "must be day, week or month");
    u.period = (gp_budget_period)found;
  }
  json_t *us = json_object_get(v, "users");
  if (!json_is_object(us))
    return gp_err_set(err, GP_EINVAL, NULL, 0, "user_limits.users", "must be an object user -> limits (\"*\": every user)");
  if (json_object_size(us) > GP_SRV_MAX_USER_LIMITS)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "user_limits.users", "at most %d users", GP_SRV_MAX_USER_LIMITS);
  u.l = gp_xcalloc(json_object_size(us) + 1, sizeof *u.l);
  int rc = 0;
  json_object_foreach(us, k, x) {
    char f[200];
    snprintf(f, sizeof f, "user_limits.users.%.64s", k);
    if (!user_name_ok(k)) {
      rc = gp_err_set(err, GP_EINVAL, NULL, 0, f, "a user name of 1 to 64 printable characters without ':'");
      break;
    }
    gp_srv_ulimit *l = &u.l[u.n];
    *l = (gp_srv_ulimit){.user = gp_xstrdup(k), .max_gpus = GP_NO_LIMIT, .max_gpu_hours = GP_NO_LIMIT,
                         .max_pending_jobs = -1};
    u.n++;
    if (!json_is_object(x)) {
      rc = gp_err_set(err, GP_EINVAL, NULL, 0, f, "must be an object {max_gpus, max_pending_jobs, max_gpu_hours}");
      break;
    }
    const char *lk;
    json_t *lv;
    json_object_foreach(x, lk, lv) {
      char g[260];
      snprintf(g, sizeof g, "%s.%.40s", f, lk);
      bool gpus = !strcmp(lk, "max_gpus"), hours = !strcmp(lk, "max_gpu_hours"), jobs = !strcmp(lk, "max_pending_jobs");
      if (!gpus && !hours && !jobs) rc = gp_err_set(err, GP_EINVAL, NULL, 0, g, "unknown field");
      else if (json_is_null(lv)) continue;
      else if (!json_is_number(lv)) rc = gp_err_set(err, GP_EINVAL, NULL, 0, g, "must be a number or null");
      else if (jobs && (!json_is_integer(lv) || json_integer_value(lv) < 0 || json_integer_value(lv) > 10000000))
        rc = gp_err_set(err, GP_EINVAL, NULL, 0, g, "must be a whole number from 0 to 10000000, or null");
      else if (!jobs) rc = check_num(json_number_value(lv), gpus ? 1e7 : 1e9, g, err);
      if (rc) break;
      if (gpus) l->max_gpus = json_number_value(lv);
      else if (hours) l->max_gpu_hours = json_number_value(lv);
      else l->max_pending_jobs = json_integer_value(lv);
    }
    if (rc) break;
  }
  if (rc) {
    gp__srv_ulimits_free(&u);
    return rc;
  }
  make_core(&u);
  *ret = u;
  return 0;
}

json_t *gp__srv_ulimits_to_json(const gp_srv_ulimits *u) {
  if (!u || u->n == 0) return json_null();
  json_t *us = json_object();
  for (int i = 0; i < u->n; i++) {
    const gp_srv_ulimit *l = &u->l[i];
    json_object_set_new(us, l->user,
                        json_pack("{s:o, s:o, s:o}", "max_gpus", l->max_gpus == GP_NO_LIMIT ? json_null() : json_real(l->max_gpus),
                                  "max_pending_jobs", l->max_pending_jobs < 0 ? json_null() : json_integer(l->max_pending_jobs),
                                  "max_gpu_hours", l->max_gpu_hours == GP_NO_LIMIT ? json_null() : json_real(l->max_gpu_hours)));
  }
  return json_pack("{s:s, s:o}", "period", period_names[u->period], "users", us);
}

/* ---- config ---- */

int gp__srv_ulimits_read(const gp_doc *d, const gp_doc_node *n, const char *path,
                         gp_srv_ulimits *ret, gp_err *err) {
  static const char *const keys[] = {"period", "users", NULL};
  static const char *const lkeys[] = {"max_gpus", "max_pending_jobs", "max_gpu_hours", NULL};
  gp_srv_ulimits u = {.period = GP_BUDGET_MONTH};
  if (!n || gp_doc_is_null(n)) {
    *ret = u;
    return 0;
  }
  int r = gp_doc_check_keys(d, n, path, keys, err);
  if (r) return r;
  char f[200];
  const gp_doc_node *p = gp_doc_get(n, "period");
  int per = GP_BUDGET_MONTH;
  if (p && (r = gp_doc_enum(d, p, gp_doc_path(f, sizeof f, path, "period"), period_names, 3, &per, err))) return r;
  u.period = (gp_budget_period)per;
  const gp_doc_node *us = gp_doc_get(n, "users");
  gp_doc_path(f, sizeof f, path, "users");
  if (!us) return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "required: a map user -> limits (\"*\": every user)");
  if ((r = gp_doc_expect(d, us, f, GP_DOC_MAP, err))) return r;
  if (us->n > GP_SRV_MAX_USER_LIMITS)
    return gp_err_set(err, GP_EINVAL, d->name, us->line, f, "at most %d users", GP_SRV_MAX_USER_LIMITS);
  u.l = gp_xcalloc((size_t)us->n + 1, sizeof *u.l);
  for (int i = 0; i < us->n && !r; i++) {
    char g[260];
    snprintf(g, sizeof g, "%.180s.%.64s", f, us->keys[i]);
    if (!user_name_ok(us->keys[i])) {
      r = gp_err_set(err, GP_EINVAL, d->name, us->items[i]->line, g, "a user name of 1 to 64 printable characters without ':'");
      break;
    }
    gp_srv_ulimit *l = &u.l[u.n++];
    *l = (gp_srv_ulimit){.user = gp_xstrdup(us->keys[i]), .max_gpus = GP_NO_LIMIT,
                         .max_gpu_hours = GP_NO_LIMIT, .max_pending_jobs = -1};
    const gp_doc_node *m = us->items[i];
    if ((r = gp_doc_check_keys(d, m, g, lkeys, err))) break;
    for (int k = 0; k < 3 && !r; k++) {
      const gp_doc_node *v = gp_doc_get(m, lkeys[k]);
      if (!v || gp_doc_is_null(v)) continue;
      char h[320];
      snprintf(h, sizeof h, "%s.%s", g, lkeys[k]);
      if (k == 1) {
        int64_t jobs;
        if (!(r = gp_doc_int(d, v, h, &jobs, err)) && (jobs < 0 || jobs > 10000000))
          r = gp_err_set(err, GP_EINVAL, d->name, v->line, h, "must be from 0 to 10000000");
        if (!r) l->max_pending_jobs = jobs;
        continue;
      }
      double x;
      if (!(r = gp_doc_double(d, v, h, &x, err)) && (!(x >= 0) || !isfinite(x) || x > (k ? 1e9 : 1e7)))
        r = gp_err_set(err, GP_EINVAL, d->name, v->line, h, "must be a number from 0 to %g", k ? 1e9 : 1e7);
      if (!r) *(k ? &l->max_gpu_hours : &l->max_gpus) = x;
    }
  }
  if (r) {
    gp__srv_ulimits_free(&u);
    return r;
  }
  make_core(&u);
  *ret = u;
  return 0;
}
