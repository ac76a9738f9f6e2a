/* SPDX-License-Identifier: Apache-2.0 */
/* The queues' budgets as the server keeps them (budget.c): each queue's spend in its
 * current period, priced from the ledger's totals, its alerts, and the holds or demotions
 * of new jobs once a budget is spent. A budget's own terms are read by budget_read.c
 * (state/budget.h); a job's budget hold is a state of the job (budget_hold.c).
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_BUDGETS_H
#define GP_SERVER_BUDGETS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/state/state.h"

typedef struct gp__srv_budgets gp__srv_budgets;

/* A queue's budget in its current period. */
typedef struct gp_srv_budget_queue {
  char *queue;
  gp_budget budget;           /* as the queue has it now */
  bool active;                /* the queue has a budget and its spend is known */
  bool based;                 /* the ledger was read for the period before the first look */
  int64_t period_start, period_end;
  double base_gpu_s, base_cost;   /* the period's spend in the ledger at the first look */
  double mark_gpu_s, mark_cost;   /* the running totals at the first look */
  double spent;               /* in the budget's unit: GPU-hours or currency */
  int level;                  /* the alerts raised this period: 0, 80 or 100 */
  int64_t saved_period_start; /* the alert level kept in the store, for its period */
  int saved_level;
  uint64_t alerts_total[2];   /* 80% and 100% alerts this server raised */
} gp_srv_budget_queue;

/* Brings every budget up to `now`: reads the running totals, prices their growth, starts
 * new periods (releasing the jobs the last one's budget held), reads the ledger for queues
 * seen for the first time, and raises the 80% and 100% alerts. */
int gp__srv_budgets_tick(gp_srv_state *s, int64_t now, gp_err *err);
void gp__srv_budgets_free(gp__srv_budgets *b);
/* The queue's budget figures, or NULL. */
const gp_srv_budget_queue *gp__srv_budget_get(const gp_srv_state *s, const char *queue);
/* A new job j (inserted, pending or held) of a queue whose budget is spent: holds it or
 * demotes it as the budget's action says, with a timeline event that gives the reason. */
int gp__srv_budget_on_submit(gp_srv_state *s, gp_srv_job *j, int64_t now, gp_err *err);
/* Why a budget holds new jobs, in a sentence. */
void gp__srv_budget_message(const gp_srv_state *s, const gp_srv_budget_queue *e, char *buf,
                            size_t size);
/* The alert level stored for a queue ("budget/<queue>" setting), read at load. */
void gp__srv_budget_level_loaded(gp_srv_state *s, const char *queue, const char *doc);
/* Adds budget_unit, budget_spent, budget_used_ratio and the period to a queue's JSON. */
void gp__srv_budget_json(const gp_srv_state *s, const char *queue, json_t *o);
/* Cost since the server started per (queue, model, capacity); nothing without prices. */
void gp__srv_budget_costs(const gp_srv_state *s,
                          void (*fn)(void *ctx, const char *queue, const char *model,
                                     gp_capacity c, double cost),
                          void *ctx);
/* Calls fn for each queue whose budget is active. */
void gp__srv_budget_each(const gp_srv_state *s,
                         void (*fn)(void *ctx, const gp_srv_budget_queue *e), void *ctx);

#endif
