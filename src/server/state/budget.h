/* SPDX-License-Identifier: Apache-2.0 */
/* A queue's budget: a limit in GPU-hours or money per UTC day, week (from Monday) or
 * calendar month, and what happens to new jobs once the period's spend reaches it. The
 * config file and the queues API read it with one reader (gp_budget_read), so a key means
 * the same thing in both; docs/config.md ("Budgets") is the reference. */
#ifndef GP_SERVER_BUDGET_H
#define GP_SERVER_BUDGET_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/doc.h"
#include "util/error.h"

typedef enum gp_budget_period { GP_BUDGET_DAY, GP_BUDGET_WEEK, GP_BUDGET_MONTH } gp_budget_period;

typedef enum gp_budget_action {
  GP_BUDGET_NONE,     /* events and metrics only */
  GP_BUDGET_HOLD_NEW, /* new submissions are held until the period ends or an admin releases */
  GP_BUDGET_DEMOTE    /* new jobs run at the lowest preemptible priority class */
} gp_budget_action;

#define GP_BUDGET_MAX 1e12 /* GPU-hours or currency units */

typedef struct gp_budget {
  bool set;                 /* false: the queue has no budget */
  bool money;               /* limit in the price catalogue's currency, else GPU-hours */
  double limit;             /* > 0 */
  gp_budget_period period;
  gp_budget_action action;
} gp_budget;

/* Reads `budget: {gpu_hours: N | amount: X, period: day|week|month, action: ...}` at node
 * `n` (a map; null: no budget). Errors name `path` and the key ("queues[2].budget.period").
 * *ret is untouched on failure. */
int gp_budget_read(const gp_doc *d, const gp_doc_node *n, const char *path, gp_budget *ret,
                   gp_err *err);
/* The same from a JSON value (the queues API; null: no budget). Errors name `field`. */
int gp_budget_from_json(const json_t *v, const char *field, gp_budget *ret, gp_err *err);
/* {"gpu_hours"|"amount": N, "period": ..., "action": ...}, or null without a budget. */
json_t *gp_budget_to_json(const gp_budget *b);

const char *gp_budget_period_name(gp_budget_period p);  /* "day", "week", "month" */
const char *gp_budget_period_adjective(gp_budget_period p); /* "daily", "weekly", "monthly" */
const char *gp_budget_action_name(gp_budget_action a);  /* "none", "hold_new", "demote" */
/* The start of the period holding `at` (Unix seconds, UTC): 00:00 of the day, of the
 * Monday, of the 1st of the month. */
int64_t gp_budget_period_start(gp_budget_period p, int64_t at);
/* The start of the next period after the one holding `at`. */
int64_t gp_budget_period_end(gp_budget_period p, int64_t at);

/* Tests: shifts the clock that budget periods are read from by `seconds` (0: none), so a
 * test can step into the next period. Safe from any thread. */
void gp_budget_test_clock_shift(int64_t seconds);
int64_t gp_budget_clock(int64_t now);

#endif
