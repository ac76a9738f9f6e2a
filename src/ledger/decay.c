/* SPDX-License-Identifier: Apache-2.0 */
/* Decayed usage (decay.h): the closed forms, the reset periods and the `fairshare:`
 * settings. expm1 keeps a short interval's usage exact where 1 - 2^-x would lose it to
 * rounding (the failure of usage truncated to zero). */
#include "ledger/decay.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "util/mem.h"

void gp_fairshare_config_init(gp_fairshare_config *c) {
  memset(c, 0, sizeof *c);
  c->half_life_s = GP_DECAY_DEFAULT_HALF_LIFE_S;
}

double gp_fairshare_weight(const gp_fairshare_config *c, const char *model) {
  for (int i = 0; c && model && i < c->n_weights; i++)
    if (strcasecmp(c->weights[i].model, model) == 0) return c->weights[i].weight;
  return 1;
}

/* Days from 1970-01-01 to the given civil date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int64_t gp_decay_period_start(gp_decay_reset r, int64_t t) {
  if (r == GP_DECAY_RESET_NONE) return INT64_MIN;
  /* civil_from_days, for the year and month of t. */
  int64_t z = (t >= 0 ? t / 86400 : (t - 86399) / 86400) + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int m = (int)(mp < 10 ? mp + 3 : mp - 9);
  int64_t y = yoe + era * 400 + (m <= 2);
  if (r == GP_DECAY_RESET_QUARTER) m = ((m - 1) / 3) * 3 + 1;
  return days_from_civil(y, m, 1) * 86400;
}

double gp_decay_tau(const gp_fairshare_config *c) {
  int64_t h = c->half_life_s > 0 ? c->half_life_s : GP_DECAY_DEFAULT_HALF_LIFE_S;
  return (double)h / M_LN2;
}

double gp_decay_at(const gp_fairshare_config *c, double value, int64_t at, int64_t now) {
  if (now <= at) return value;
  if (gp_decay_period_start(c->reset, now) > at) return 0;
  if (c->half_life_s <= 0) return value;
  return value * exp2(-(double)(now - at) / (double)c->half_life_s);
}

double gp_decay_interval(const gp_fairshare_config *c, double rate, int64_t t0, int64_t t1,
                         int64_t now) {
  int64_t p = gp_decay_period_start(c->reset, now);
  if (t0 < p) t0 = p;
  if (now < t1) now = t1;
  if (t1 <= t0 || !(rate > 0)) return 0;
  if (c->half_life_s <= 0) return rate * (double)(t1 - t0);
  double tau = (double)c->half_life_s / M_LN2;
  /* rate * tau * (2^-((now - t1)/h) - 2^-((now - t0)/h)) = rate * tau * e^-((now-t1)/tau)
   * * (1 - e^-((t1 - t0)/tau)), the last factor by expm1. */
  return rate * tau * exp(-(double)(now - t1) / tau) * -expm1(-(double)(t1 - t0) / tau);
}

double gp_fairshare_factor(double usage_fraction, double share_fraction) {
  if (!(share_fraction > 0)) return 0;
  if (!(usage_fraction > 0)) return 1;
  return exp2(-usage_fraction / share_fraction);
}

int gp_fairshare_read(const gp_doc *d, const gp_doc_node *map, const char *path,
                      struct gp_arena *arena, gp_fairshare_config *ret, gp_err *err) {
  static const char *const keys[] = {"half_life", "reset", "model_weights", NULL};
  static const char *const resets[] = {"none", "month", "quarter"};
  int r = gp_doc_expect(d, map, path, GP_DOC_MAP, err);
  if (r || (r = gp_doc_check_keys(d, map, path, keys, err))) return r;
  gp_fairshare_config c = *ret;
  char f[160];
  const gp_doc_node *n;
  if ((n = gp_doc_get(map, "half_life"))) {
    gp_doc_path(f, sizeof f, path, "half_life");
    if (n->kind == GP_DOC_SCALAR && n->scalar && strcmp(n->scalar, "off") == 0) {
      c.half_life_s = 0;
    } else {
      int64_t s;
      if ((r = gp_doc_duration_s(d, n, f, &s, err))) return r;
      if (s < 60 || s > 10LL * 365 * 86400)
        return gp_err_set(err, GP_EINVAL, d->name, n->line, f,
                          "must be from 1 minute to 10 years, or off (no decay)");
      c.half_life_s = s;
    }
  }
  if ((n = gp_doc_get(map, "reset"))) {
    int k;
    if ((r = gp_doc_enum(d, n, gp_doc_path(f, sizeof f, path, "reset"), resets, 3, &k, err))) return r;
    c.reset = (gp_decay_reset)k;
  }
  if ((n = gp_doc_get(map, "model_weights"))) {
    gp_doc_path(f, sizeof f, path, "model_weights");
    if ((r = gp_doc_expect(d, n, f, GP_DOC_MAP, err))) return r;
    if (n->n > GP_DECAY_MAX_WEIGHTS)
      return gp_err_set(err, GP_EINVAL, d->name, n->line, f, "at most %d models", GP_DECAY_MAX_WEIGHTS);
    gp_model_weight *w = gp_arena_alloc(arena, ((size_t)n->n + 1) * sizeof *w);
    for (int i = 0; i < n->n; i++) {
      char g[240];
      gp_doc_path(g, sizeof g, f, n->keys[i]);
      if (!n->keys[i][0] || strlen(n->keys[i]) > 64)
        return gp_err_set(err, GP_EINVAL, d->name, n->items[i]->line, g, "a model name of 1 to 64 bytes");
      double v;
      if ((r = gp_doc_double(d, n->items[i], g, &v, err))) return r;
      if (!(v > 0) || v > 1e6)
        return gp_err_set(err, GP_EINVAL, d->name, n->items[i]->line, g, "must be a number above 0 (at most 1000000)");
      w[i] = (gp_model_weight){gp_arena_strdup(arena, n->keys[i]), v};
    }
    c.n_weights = n->n;
    c.weights = w;
  }
  *ret = c;
  return 0;
}
