/* SPDX-License-Identifier: Apache-2.0 */
/* Reads and writes a queue's budget (budget.h) and computes its periods in UTC. The JSON
 * form of the queues API goes through the same document reader as the config file. */
#include "server/state/budget.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/calendar.h"

static const char *const period_names[] = {"day", "week", "month"};
static const char *const period_adjectives[] = {"daily", "weekly", "monthly"};
static const char *const action_names[] = {"none", "hold_new", "demote"};

const char *gp_budget_period_name(gp_budget_period p) {
  return (unsigned)p < 3 ? period_names[p] : "?";
}

const char *gp_budget_period_adjective(gp_budget_period p) {
  return (unsigned)p < 3 ? period_adjectives[p] : "?";
}

const char *gp_budget_action_name(gp_budget_action a) {
  return (unsigned)a < 3 ? action_names[a] : "?";
}

int gp_budget_read(const gp_doc *d, const gp_doc_node *n, const char *path, gp_budget *ret,
                   gp_err *err) {
  gp_budget b = {0};
  if (!n || gp_doc_is_null(n)) {
    *ret = b;
    return 0;
  }
  static const char *const keys[] = {"gpu_hours", "amount", "period", "action", NULL};
  int r = gp_doc_expect(d, n, path, GP_DOC_MAP, err);
  if (r || (r = gp_doc_check_keys(d, n, path, keys, err))) return r;
  char f[200];
  const gp_doc_node *hours = gp_doc_get(n, "gpu_hours"), *amount = gp_doc_get(n, "amount");
  if (!hours == !amount)
    return gp_err_set(err, GP_EINVAL, d->name, n->line, path,
                      "give exactly one of gpu_hours and amount");
  const gp_doc_node *lim = hours ? hours : amount;
  snprintf(f, sizeof f, "%s.%s", path, hours ? "gpu_hours" : "amount");
  if ((r = gp_doc_double(d, lim, f, &b.limit, err))) return r;
  if (!(b.limit > 0) || !isfinite(b.limit) || b.limit > GP_BUDGET_MAX)
    return gp_err_set(err, GP_EINVAL, d->name, lim->line, f, "must be a number > 0 and <= %g",
                      GP_BUDGET_MAX);
  b.money = amount != NULL;
  snprintf(f, sizeof f, "%s.period", path);
  const gp_doc_node *pn = gp_doc_get(n, "period");
  if (!pn) return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "missing (day, week or month)");
  int v = 0;
  if ((r = gp_doc_enum(d, pn, f, period_names, 3, &v, err))) return r;
  b.period = (gp_budget_period)v;
  const gp_doc_node *an = gp_doc_get(n, "action");
  if (an) {
    snprintf(f, sizeof f, "%s.action", path);
    if ((r = gp_doc_enum(d, an, f, action_names, 3, &v, err))) return r;
    b.action = (gp_budget_action)v;
  }
  b.set = true;
  *ret = b;
  return 0;
}

int gp_budget_from_json(const json_t *v, const char *field, gp_budget *ret, gp_err *err) {
  if (!v || json_is_null(v)) {
    *ret = (gp_budget){0};
    return 0;
  }
  if (!json_is_object(v))
    return gp_err_set(err, GP_EINVAL, NULL, 0, field,
                      "must be an object {gpu_hours|amount, period, action}, or null");
  char *text = json_dumps(v, JSON_COMPACT);
  if (!text) return gp_err_set(err, GP_EINVAL, NULL, 0, field, "cannot be read");
  gp_doc *d = NULL;
  int r = gp_doc_load_string(field, text, strlen(text), &d, err);
  free(text);
  if (!r) r = gp_budget_read(d, d->root, field, ret, err);
  gp_doc_free(d);
  if (r && err) {
    /* The document is this one value: its name and line say nothing to an API caller. */
    err->file[0] = '\0';
    err->line = 0;
  }
  return r;
}

json_t *gp_budget_to_json(const gp_budget *b) {
  if (!b->set) return json_null();
  json_t *o = json_object();
  json_object_set_new(o, b->money ? "amount" : "gpu_hours", json_real(b->limit));
  json_object_set_new(o, "period", json_string(gp_budget_period_name(b->period)));
  json_object_set_new(o, "action", json_string(gp_budget_action_name(b->action)));
  return o;
}

int64_t gp_budget_period_start(gp_budget_period p, int64_t at) {
  if (at < 0) at = 0; /* before 1970: no budget period a server lives in */
  if (p == GP_BUDGET_DAY) return gp_day_start(at);
  if (p == GP_BUDGET_WEEK) return gp_week_start(at);
  return gp_month_start(at);
}

int64_t gp_budget_period_end(gp_budget_period p, int64_t at) {
  int64_t start = gp_budget_period_start(p, at);
  if (p == GP_BUDGET_DAY) return start + GP_DAY_S;
  if (p == GP_BUDGET_WEEK) return start + 7 * GP_DAY_S;
  return gp_next_month(start);
}

static _Atomic int64_t clock_shift_s;

void gp_budget_test_clock_shift(int64_t seconds) { atomic_store(&clock_shift_s, seconds); }

int64_t gp_budget_clock(int64_t now) { return now + atomic_load(&clock_shift_s); }
