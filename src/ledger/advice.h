/* SPDX-License-Identifier: Apache-2.0 */
/* Advice on waste (issue 19): a streaming engine fed the ledger's intervals, the ended jobs'
 * summaries, the fleet's GPU models and the jobs idle now, which says where GPU-hours and
 * money go unused and what to change, each piece with its evidence and its saving:
 *
 * - right_size: one-GPU tasks (whole, fraction or MIG) whose peak memory and average SM use,
 *   with headroom, fit a smaller MIG profile, a fraction, or a cheaper model in the fleet;
 *   per job, or per (user, job name) over its runs. A run whose use is unknown (MPS) makes
 *   its whole group unknown: no advice rather than a guess.
 * - spot: requeueable jobs that checkpointed and held non-spot capacity longer than a
 *   checkpoint interval in one go, priced at the model's spot rate.
 * - idle_week: GPU-hours held but not used, by queue and user (known use only).
 * - idle_now: running jobs idle now (the caller says which).
 * - quota: per queue, the GPU-hours its jobs waited against the quota it left idle; its
 *   deserved GPUs count only while the fleet had GPUs up, and never more than were up.
 * - utilisation: the fleet's allocated GPU-hours against its up GPU-hours (the 70-90% band);
 *   not with a queue filter, whose allocation is not the fleet's.
 *
 * Inputs may come in any order; finish joins them. Pure: no I/O, no clock, no threads. One
 * advice is used by one thread. */
#ifndef GP_LEDGER_ADVICE_H
#define GP_LEDGER_ADVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "ledger/prices.h"
#include "ledger/report.h"
#include "util/error.h"

#define GP_ADVICE_HEADROOM 0.20          /* default: need = use x 1.2 */
#define GP_ADVICE_MAX_HEADROOM 4.0       /* 400% */
#define GP_ADVICE_CHECKPOINT_S 1800      /* default checkpoint interval (spot) */
#define GP_ADVICE_MIN_SAVING 0.10        /* a change saving less than 10% is not advised */
#define GP_ADVICE_BAND_LOW 0.70          /* a healthy fleet's allocated share of its up GPUs */
#define GP_ADVICE_BAND_HIGH 0.90
#define GP_ADVICE_MAX_ITEMS 1000         /* per answer, the largest savings first */
#define GP_ADVICE_MAX_EVIDENCE 12

typedef enum gp_advice_kind { GP_ADVICE_RIGHT_SIZE, GP_ADVICE_SPOT, GP_ADVICE_IDLE_NOW,
  GP_ADVICE_IDLE_WEEK, GP_ADVICE_QUOTA, GP_ADVICE_UTILISATION } gp_advice_kind;
const char *gp_advice_kind_name(gp_advice_kind k);  /* "right_size", ... */

/* A GPU model the fleet has. */
typedef struct gp_advice_model {
  const char *name;
  int64_t mem_mib;      /* one GPU's memory */
  bool mig;             /* some GPU of it is partitioned: MIG profiles may be advised */
  bool shared;          /* some GPU of it takes fractions: --gpu-fraction may be advised */
} gp_advice_model;

typedef struct gp_advice_queue { const char *name; double deserved_gpus; } gp_advice_queue;

typedef struct gp_advice_params {
  int64_t from, to;              /* the period, [from, to) */
  int64_t now;                   /* idle_now durations end here */
  double headroom;               /* 0 .. GP_ADVICE_MAX_HEADROOM */
  int64_t checkpoint_s;          /* >= 1 */
  const gp_prices *prices;       /* NULL: GPU-hours only, money null */
  const char *queue;             /* only this queue and its sub-queues; NULL: all */
  const char *user;              /* only this user's jobs; NULL: all */
  const char *name;              /* only jobs of this name (right_size, spot, idle_now) */
  bool fleet;                    /* quota and utilisation items (an admin's) */
  int n_models; const gp_advice_model *models;   /* borrowed until free */
  int n_queues; const gp_advice_queue *queues;   /* deserved GPUs, for quota */
} gp_advice_params;

/* An ended job, from its document. Strings are borrowed for the call. */
typedef struct gp_advice_run {
  int64_t job;
  const char *name, *user, *queue;
  int tasks, gpus, gpu_milli;    /* per task */
  const char *mig;               /* profile, or NULL */
  bool requeue;
  int64_t last_checkpoint_at;    /* 0: never checkpointed */
  int64_t submitted_at, started_at;
  int64_t peak_mem_mib;          /* < 0: unknown */
  double avg_sm_util_pct;        /* as the agent measures it: of the MIG instance for a slice,
                                    of the whole GPU otherwise (a fraction too); < 0: unknown */
} gp_advice_run;

/* A running job idle now. */
typedef struct gp_advice_idle {
  int64_t job;
  const char *name, *user, *queue, *model;
  gp_capacity capacity;
  double share_gpus;             /* GPUs held, counted by share */
  int64_t idle_since;
  double last_pct;               /* SM use over the last measured span */
  double threshold_pct;
} gp_advice_idle;

typedef struct gp_advice_figure { const char *key; double value; } gp_advice_figure;

typedef struct gp_advice_item {
  gp_advice_kind kind;
  const char *queue, *user, *name;   /* the subject; NULL where not one */
  int64_t job;                       /* 0: not one job */
  const char *message;               /* one sentence */
  const char *suggestion;            /* what to change ("--mig 2g.20gb"), or NULL */
  int n_evidence;
  gp_advice_figure evidence[GP_ADVICE_MAX_EVIDENCE];
  double saving_gpu_h;
  double saving_cost;                /* in prices->currency */
  bool cost_known;                   /* false: no prices (or none for a model) */
} gp_advice_item;

typedef struct gp_advice gp_advice;
/* Params are copied; the arrays and prices they point to are borrowed until free. */
gp_advice *gp_advice_new(const gp_advice_params *p);
void gp_advice_add_node(gp_advice *a, const gp_ledger_node_iv *iv);
void gp_advice_add_interval(gp_advice *a, const gp_ledger_job_iv *iv);
void gp_advice_add_run(gp_advice *a, const gp_advice_run *r);
void gp_advice_add_idle(gp_advice *a, const gp_advice_idle *j);
/* Daily roll-ups (advice_days in the server; docs/accounting.md, "Roll-ups"): a job's figures
 * over one whole UTC day, summed from its closed intervals, stand for those intervals on
 * that day; the intervals of the other days are added clipped to them by a window. */
typedef struct gp_advice_held_day {
  int64_t day, job;                  /* day: its first second */
  const char *user, *queue, *model;  /* borrowed for the call */
  gp_capacity capacity;
  double gpu_s, used_gpu_s, known_gpu_s;
  int64_t first_start;               /* the first second the job held that day */
  int64_t longest_s;                 /* its longest interval there, whole */
} gp_advice_held_day;
/* Whether [day, day + 1 day) lies inside the period and no price changes inside it. */
bool gp_advice_day_whole(const gp_advice *a, int64_t day);
/* Intervals added from now on count only inside [from, to) as well; 0, 0: the period. */
void gp_advice_window(gp_advice *a, int64_t from, int64_t to);
/* One day's sums of one job; a day that is not whole is ignored. */
void gp_advice_add_held_day(gp_advice *a, const gp_advice_held_day *d);
/* The items, largest saving first, at most GP_ADVICE_MAX_ITEMS (*truncated says when cut).
 * Valid until free. GP_EINVAL names a bad parameter (from, headroom, checkpoint). */
int gp_advice_finish(gp_advice *a, const gp_advice_item **items, int *n, bool *truncated,
                     gp_err *err);
void gp_advice_free(gp_advice *a);   /* accepts NULL */

#endif
