/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's spot inputs (replay.h): `--spot-interruptions RATE[:MODEL=RATE,...]`, a
 * rate's mean time between interruptions, and the seeded life of each spot node. What an
 * interruption does to the jobs is the engine's (events.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "sim/replay/mix.h"
#include "sim/replay/replay.h"
#include "util/units.h"

#define FLAG "--spot-interruptions"
#define MONTH_S (30.0 * 86400.0)
#define MAX_LIFE_S 1e12

/* "0.05" or "5%", from 0 up to but not including 1 (a node reclaimed within the month for
 * sure would have no mean time to it). */
static int parse_rate(const char *s, size_t n, double *ret, gp_err *err) {
  char buf[64];
  if (n == 0 || n >= sizeof buf)
    return gp_err_set(err, GP_EINVAL, NULL, 0, FLAG, "expected a rate such as 0.05 or 5%%");
  memcpy(buf, s, n);
  buf[n] = '\0';
  bool pct = buf[n - 1] == '%';
  if (pct) buf[n - 1] = '\0';
  double v;
  if (gp_parse_double(buf, &v) || !isfinite(v))
    return gp_err_set(err, GP_EINVAL, NULL, 0, FLAG, "'%.*s' is not a rate (0.05 or 5%%)",
                      (int)n, s);
  if (pct) v /= 100;
  if (!(v >= 0 && v < 1))
    return gp_err_set(err, GP_EINVAL, NULL, 0, FLAG,
                      "rate '%.*s' must be at least 0 and below 1 (100%%): the probability "
                      "that a spot node is reclaimed within 30 days", (int)n, s);
  *ret = v;
  return 0;
}

int gp_replay_spot_parse(const char *s, gp_replay_spot *spot, gp_err *err) {
  const char *colon = strchr(s, ':');
  size_t n = colon ? (size_t)(colon - s) : strlen(s);
  double rate;
  int rc = parse_rate(s, n, &rate, err);
  if (rc) return rc;
  int n_models = 0;
  char model[GP_REPLAY_SPOT_MAX_MODELS][GP_REPLAY_SPOT_MODEL_LEN];
  double model_rate[GP_REPLAY_SPOT_MAX_MODELS];
  for (const char *p = colon ? colon + 1 : NULL; p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    if (!eq || eq == p)
      return gp_err_set(err, GP_EINVAL, NULL, 0, FLAG, "expected MODEL=RATE after ':', got '%.*s'",
                        (int)len, p);
    size_t mlen = (size_t)(eq - p);
    if (mlen >= GP_REPLAY_SPOT_MODEL_LEN)
      return gp_err_set(err, GP_EINVAL, NULL, 0, FLAG, "a GPU model name of 1 to %d bytes",
                        GP_REPLAY_SPOT_MODEL_LEN - 1);
    if (n_models == GP_REPLAY_SPOT_MAX_MODELS)
      return gp_err_set(err, GP_ELIMIT, NULL, 0, FLAG, "more than %d models",
                        GP_REPLAY_SPOT_MAX_MODELS);
    memcpy(model[n_models], p, mlen);
    model[n_models][mlen] = '\0';
    for (int k = 0; k < n_models; k++)
      if (strcasecmp(model[k], model[n_models]) == 0)
        return gp_err_set(err, GP_EINVAL, NULL, 0, FLAG, "model '%s' given twice", model[k]);
    if ((rc = parse_rate(eq + 1, len - mlen - 1, &model_rate[n_models], err))) return rc;
    n_models++;
    p = comma ? comma + 1 : NULL;
  }
  spot->rate = rate;
  spot->n_models = n_models;
  memcpy(spot->model, model, sizeof model);
  memcpy(spot->model_rate, model_rate, sizeof model_rate);
  return 0;
}

double gp_replay_spot_rate(const gp_replay_spot *spot, const char *model) {
  for (int k = 0; model && k < spot->n_models; k++)
    if (strcasecmp(spot->model[k], model) == 0) return spot->model_rate[k];
  return spot->rate;
}

double gp_replay_spot_mean_s(double rate) {
  if (!(rate > 0) || !(rate < 1)) return 0;
  return MONTH_S / -log1p(-rate);
}

gp_time gp_replay_spot_life(uint64_t seed, int node, int k, double mean_s) {
  /* A salt keeps these draws apart from the idle model's, which hash the seed too. */
  uint64_t key = ((uint64_t)(uint32_t)node << 32) | (uint32_t)k;
  double u = gp__sim_unit(gp__sim_mix64(seed ^ 0x5370bd1e5370bd1eull ^ gp__sim_mix64(key)));
  double x = -log1p(-u) * mean_s; /* u < 1, so finite */
  if (x > MAX_LIFE_S) x = MAX_LIFE_S;
  return x < 1 ? 1 : (gp_time)ceil(x);
}
