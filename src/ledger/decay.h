/* SPDX-License-Identifier: Apache-2.0 */
/* Decayed usage for fair share over time (docs/scheduling.md "Fair share over time"): the
 * `fairshare:` settings and the closed-form arithmetic of usage that halves every
 * half-life. A usage is kept as (value, at): its value as of time `at`; seen at a later
 * `now` it is value * 2^-((now - at) / half_life), exactly, however often or seldom it is
 * updated, and never rounded to zero by a small step. With a reset period (month or
 * quarter, UTC) usage from before the current period counts for nothing. Pure: no I/O, no
 * clock; the server and the simulator share it. */
#ifndef GP_LEDGER_DECAY_H
#define GP_LEDGER_DECAY_H

#include <stdbool.h>
#include <stdint.h>

#include "util/doc.h"
#include "util/error.h"

#define GP_DECAY_DEFAULT_HALF_LIFE_S (7 * 86400)
#define GP_DECAY_MAX_WEIGHTS 256  /* entries of `fairshare.model_weights` */

typedef enum gp_decay_reset {
  GP_DECAY_RESET_NONE = 0,
  GP_DECAY_RESET_MONTH,
  GP_DECAY_RESET_QUARTER,
} gp_decay_reset;

typedef struct gp_model_weight {
  const char *model;   /* GPU model as nodes report it, compared case-insensitively */
  double weight;       /* > 0 */
} gp_model_weight;

typedef struct gp_fairshare_config {
  int64_t half_life_s;         /* 0: `off`, no decay (usage only grows, until a reset) */
  gp_decay_reset reset;
  int n_weights;
  const gp_model_weight *weights; /* models not listed weigh 1 */
} gp_fairshare_config;

/* The defaults: a half-life of 7 days, no reset, every model 1. */
void gp_fairshare_config_init(gp_fairshare_config *c);

/* Reads the `fairshare:` map: half_life (a duration, or `off`), reset (none, month,
 * quarter), model_weights (a map model -> number > 0). Strings go to `arena`. Errors
 * name the file, line and field ("fairshare.half_life: ..."). */
struct gp_arena;
int gp_fairshare_read(const gp_doc *d, const gp_doc_node *map, const char *path,
                      struct gp_arena *arena, gp_fairshare_config *ret, gp_err *err);

/* The weight of a GPU model (1 when not listed). */
double gp_fairshare_weight(const gp_fairshare_config *c, const char *model);

/* The start (UTC, epoch seconds) of the reset period that holds t; INT64_MIN when there is
 * no reset. */
int64_t gp_decay_period_start(gp_decay_reset r, int64_t t);

/* A usage of `value` as of `at`, seen at `now` (>= at; an earlier now is taken as at). */
double gp_decay_at(const gp_fairshare_config *c, double value, int64_t at, int64_t now);

/* What a constant rate (usage per second) held over [t0, t1) leaves at `now` (>= t1):
 * rate * integral over s of 2^-((now - s) / half_life), the part before the current reset
 * period left out. */
double gp_decay_interval(const gp_fairshare_config *c, double rate, int64_t t0, int64_t t1,
                         int64_t now);

/* The mean life, half_life / ln 2, in seconds: a steady rate r kept for ever leaves a
 * usage of r * tau, so usage / tau reads as "the rate of late". With `off`, that of the
 * default half-life, so figures stay comparable. */
double gp_decay_tau(const gp_fairshare_config *c);

/* Slurm's fair-share factor 2^-(usage / share): 1 for no usage, 0.5 at exactly one's
 * share, towards 0 beyond; share <= 0 gives 0 (a weight-0 queue is always last). */
double gp_fairshare_factor(double usage_fraction, double share_fraction);

#endif
