/* SPDX-License-Identifier: Apache-2.0 */
/* Decayed usage (src/ledger/decay.c): exact against the closed form, the same however it
 * is split into updates, never truncated to zero by a small step, `off` and the reset
 * periods, the fair-share factor, and the `fairshare:` reader's errors. */
#include "ledger/decay.h"

#include <math.h>

#include "test.h"
#include "util/mem.h"

static gp_fairshare_config cfg(int64_t half_life, gp_decay_reset r) {
  gp_fairshare_config c;
  gp_fairshare_config_init(&c);
  c.half_life_s = half_life;
  c.reset = r;
  return c;
}

static void usage_halves_every_half_life_exactly(void) {
  gp_fairshare_config c = cfg(3600, GP_DECAY_RESET_NONE);
  CHECK_NEAR(50, gp_decay_at(&c, 100, 1000, 1000 + 3600), 1e-12);
  CHECK_NEAR(12.5, gp_decay_at(&c, 100, 1000, 1000 + 3 * 3600), 1e-12);
  /* Seen in two hops or one: the same. */
  double hop = gp_decay_at(&c, gp_decay_at(&c, 7, 0, 1234), 1234, 9999);
  CHECK_NEAR(gp_decay_at(&c, 7, 0, 9999), hop, 1e-12);
  CHECK_NEAR(7 * exp2(-9999.0 / 3600), hop, 1e-12);
  /* The default half-life is a week. */
  gp_fairshare_config_init(&c);
  CHECK_EQ_INT(7 * 86400, (int)c.half_life_s);
}

static void an_interval_matches_the_integral_however_it_is_split(void) {
  gp_fairshare_config c = cfg(86400, GP_DECAY_RESET_NONE);
  double tau = 86400 / M_LN2;
  /* 2 GPUs' worth of rate over [0, 10 h), seen at 30 h: rate*tau*(2^-(20/24) - 2^-(30/24)). */
  double want = 2 * tau * (exp2(-20.0 / 24) - exp2(-30.0 / 24));
  CHECK_NEAR(want, gp_decay_interval(&c, 2, 0, 36000, 108000), want * 1e-12);
  /* Charged per minute, each piece decayed as a kept value: the same. */
  double v = 0;
  int64_t at = 0;
  for (int64_t t = 0; t < 36000; t += 60) {
    v = gp_decay_at(&c, v, at, t + 60) + gp_decay_interval(&c, 2, t, t + 60, t + 60);
    at = t + 60;
  }
  CHECK_NEAR(want, gp_decay_at(&c, v, at, 108000), want * 1e-10);
  /* A steady rate for ever leaves rate * tau. */
  CHECK_NEAR(3 * tau, gp_decay_interval(&c, 3, 0, 200LL * 86400, 200LL * 86400), 1e-6);
  CHECK_NEAR(tau, gp_decay_tau(&c), 1e-9);
}

static void a_small_step_is_never_truncated_to_zero(void) {
  gp_fairshare_config c = cfg(7 * 86400, GP_DECAY_RESET_NONE);
  /* One second of a thousandth of the cluster: 1e-3 (to within the decay of 1 s). */
  double u = gp_decay_interval(&c, 1e-3, 0, 1, 1);
  CHECK(u > 0);
  CHECK_NEAR(1e-3, u, 1e-9);
  /* Added to a large value a million times, it still counts. */
  double v = 1e6;
  for (int i = 0; i < 1000000; i++) v += 1e-3;
  CHECK(v > 1e6 + 999);
}

static void off_keeps_everything_until_a_reset(void) {
  gp_fairshare_config c = cfg(0, GP_DECAY_RESET_NONE);
  CHECK_NEAR(100, gp_decay_at(&c, 100, 0, 1000LL * 86400), 1e-12);
  CHECK_NEAR(7200, gp_decay_interval(&c, 2, 0, 3600, 99999), 1e-9);
  /* Monthly reset: 2026-03-31 23:00 counts nothing at 2026-04-01 01:00. */
  c.reset = GP_DECAY_RESET_MONTH;
  int64_t mar31 = 1774998000; /* 2026-03-31T23:00:00Z */
  int64_t apr1 = 1775001600;  /* 2026-04-01T00:00:00Z */
  CHECK(gp_decay_period_start(GP_DECAY_RESET_MONTH, mar31) == 1772323200); /* 2026-03-01 */
  CHECK(gp_decay_period_start(GP_DECAY_RESET_MONTH, apr1 + 3600) == apr1);
  CHECK(gp_decay_period_start(GP_DECAY_RESET_QUARTER, 1778371200) == apr1); /* 2026-05-10 */
  CHECK(gp_decay_period_start(GP_DECAY_RESET_QUARTER, mar31) == 1767225600); /* 2026-01-01 */
  CHECK_NEAR(0, gp_decay_at(&c, 50, mar31, apr1 + 3600), 1e-12);
  CHECK_NEAR(50, gp_decay_at(&c, 50, mar31, mar31 + 1800), 1e-12);
  /* An interval across the boundary counts only its part in the new period. */
  CHECK_NEAR(3600, gp_decay_interval(&c, 1, mar31, apr1 + 3600, apr1 + 3600), 1e-9);
}

static void the_factor_is_slurms(void) {
  CHECK_NEAR(1, gp_fairshare_factor(0, 0.5), 1e-12);
  CHECK_NEAR(0.5, gp_fairshare_factor(0.5, 0.5), 1e-12);
  CHECK_NEAR(0.25, gp_fairshare_factor(1, 0.5), 1e-12);
  CHECK_NEAR(0, gp_fairshare_factor(0, 0), 1e-12); /* weight 0: last, never first */
}

static int read_cfg(const char *yaml, gp_fairshare_config *c, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_string("s.yaml", yaml, strlen(yaml), &d, err);
  if (rc) return rc;
  gp_arena *a = gp_arena_new();
  gp_fairshare_config_init(c);
  rc = gp_fairshare_read(d, gp_doc_get(d->root, "fairshare"), "fairshare", a, c, err);
  if (!rc) CHECK_NEAR(2.5, gp_fairshare_weight(c, "h100-80gb"), 1e-12);
  if (!rc) CHECK_NEAR(1, gp_fairshare_weight(c, "T4"), 1e-12);
  gp_arena_free(a);
  gp_doc_free(d);
  return rc;
}

static void the_settings_read_and_refuse_with_their_field(void) {
  gp_fairshare_config c;
  gp_err e = {0};
  CHECK_EQ_INT(0, read_cfg("fairshare:\n  half_life: 1d\n  reset: quarter\n  model_weights:\n"
                       "    H100-80GB: 2.5\n", &c, &e));
  CHECK(c.half_life_s == 86400 && c.reset == GP_DECAY_RESET_QUARTER);
  CHECK_EQ_INT(0, read_cfg("fairshare:\n  half_life: off\n  model_weights: {H100-80GB: 2.5}\n", &c, &e));
  CHECK(c.half_life_s == 0);
  CHECK(read_cfg("fairshare:\n  half_life: 0s\n", &c, &e) < 0);
  CHECK_EQ_STR("fairshare.half_life", e.field);
  CHECK(read_cfg("fairshare:\n  reset: year\n", &c, &e) < 0);
  CHECK_EQ_STR("fairshare.reset", e.field);
  CHECK(read_cfg("fairshare:\n  model_weights: {A100: 0}\n", &c, &e) < 0);
  CHECK_EQ_STR("fairshare.model_weights.A100", e.field);
  CHECK(read_cfg("fairshare:\n  decay: 1\n", &c, &e) < 0);
}

GP_TESTS(usage_halves_every_half_life_exactly, an_interval_matches_the_integral_however_it_is_split,
         a_small_step_is_never_truncated_to_zero, off_keeps_everything_until_a_reset,
         the_factor_is_slurms, the_settings_read_and_refuse_with_their_field)
