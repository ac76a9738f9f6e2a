/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger report: a streaming accumulator that turns node state intervals and job
 * allocation intervals into rows of GPU-seconds, use, energy and cost, grouped by any subset
 * of queue, user, model, capacity, node, service and job, per day, week or month. Besides the job
 * rows it accounts for every GPU-second the fleet paid for: idle capacity on up nodes,
 * capacity on drained or down nodes, and reserved capacity committed but not present, so
 * that Σ job cost + idle + drained/down + unused commitment = the fleet's cost (the
 * conservation rule of issue 18, checked by tests/ledger/conservation_test.c).
 *
 * It keeps per-group sums, never rows: strings are interned, each interval is split at step
 * and price boundaries against precomputed timelines, and nothing is allocated per interval.
 * Pure: no I/O, no clock, no threads. One report is used by one thread. */
#ifndef GP_LEDGER_REPORT_H
#define GP_LEDGER_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "ledger/prices.h"
#include "util/error.h"

typedef enum gp_ledger_node_state { GP_LEDGER_UP, GP_LEDGER_DRAINED, GP_LEDGER_DOWN } gp_ledger_node_state;
typedef struct gp_ledger_job_iv {
  int64_t job; int attempt;
  const char *queue, *user, *node, *model;   /* borrowed for the call */
  gp_capacity capacity;
  double share;
  int64_t start, end;                         /* end: the caller passes `now` for open ones */
  double used_gpu_s, energy_j;                /* < 0: unknown */
  const char *service;                        /* a replica's service (borrowed); NULL or "": none */
} gp_ledger_job_iv;
typedef struct gp_ledger_node_iv {
  const char *node, *model;
  gp_capacity capacity;
  int gpus;
  gp_ledger_node_state state;
  int64_t start, end;
} gp_ledger_node_iv;
typedef enum gp_ledger_group { GP_LG_QUEUE = 1, GP_LG_USER = 2, GP_LG_MODEL = 4,
  GP_LG_CAPACITY = 8, GP_LG_NODE = 16, GP_LG_JOB = 32, GP_LG_SERVICE = 64 } gp_ledger_group;   /* a bit set */
typedef enum gp_ledger_step { GP_LS_NONE, GP_LS_DAY, GP_LS_WEEK, GP_LS_MONTH } gp_ledger_step;
typedef enum gp_ledger_share_idle { GP_LSI_NONE, GP_LSI_DESERVED, GP_LSI_USAGE } gp_ledger_share_idle;
typedef enum gp_ledger_row_kind { GP_LR_JOBS, GP_LR_IDLE, GP_LR_DRAINED_DOWN,
  GP_LR_UNUSED_COMMITMENT } gp_ledger_row_kind;

#define GP_LEDGER_MAX_PERIODS 100000  /* steps in one report (a day step: 273 years) */

typedef struct gp_ledger_params {
  int64_t from, to;                 /* the period, [from, to) */
  unsigned group;                   /* gp_ledger_group bits; 0: one total */
  gp_ledger_step step;
  gp_ledger_share_idle share_idle;
  const gp_prices *prices;          /* NULL: no money columns */
  /* For GP_LSI_DESERVED: each queue's deserved GPUs (borrowed arrays). */
  int n_deserved; const char *const *deserved_queue; const double *deserved_gpus;
} gp_ledger_params;

typedef struct gp_ledger_row {
  gp_ledger_row_kind kind;
  int64_t period_start;             /* the step's start (from, when no step) */
  int64_t period_end;               /* where the row's time ends: the next step's start or
                                       to, whichever comes first (exclusive) */
  const char *queue, *user, *model, *capacity, *node;   /* NULL: not grouped (or not applicable) */
  const char *service;              /* by service: the service, "-" for other jobs' rows */
  int64_t job;                      /* 0: not grouped */
  double gpu_s;                     /* allocated GPU-seconds × share (capacity-seconds for idle rows) */
  double used_gpu_s;                /* SM-busy GPU-seconds where known */
  double known_gpu_s;               /* the part of gpu_s whose use is known (efficiency's denominator) */
  double energy_j;
  bool energy_known;                /* some part had its energy measured (else energy_j is unknown) */
  double cost;                      /* in prices->currency; 0 with no prices */
  double idle_share_cost;           /* idle cost charged to this row by share_idle */
  bool cost_unknown;                /* some part had no price */
} gp_ledger_row;

typedef struct gp_ledger_report gp_ledger_report;
/* A report over p (copied; p->prices and the deserved arrays are borrowed until
 * gp_ledger_report_free). Invalid params (or none) are reported by gp_ledger_report_finish. */
gp_ledger_report *gp_ledger_report_new(const gp_ledger_params *p);
/* All node intervals first, then the job intervals (any order). Each is clipped to the
 * period and split at step and price boundaries. */
void gp_ledger_report_add_node(gp_ledger_report *r, const gp_ledger_node_iv *iv);
void gp_ledger_report_add_job(gp_ledger_report *r, const gp_ledger_job_iv *iv);
/* The rows, job rows first (sorted by the group keys), then idle, drained/down and unused
 * commitment rows (grouped by period, model, capacity and node where asked). Valid until
 * gp_ledger_report_free. Also the fleet total for the conservation check. */
int gp_ledger_report_finish(gp_ledger_report *r, const gp_ledger_row **rows, int *n_rows,
                            gp_err *err);
double gp_ledger_report_fleet_cost(const gp_ledger_report *r);

/* Roll-ups (report_days.c; docs/accounting.md, "Roll-ups"): a report may take whole UTC days
 * as sums instead of the intervals of those days, and the intervals of the other days
 * clipped to them. Idle and drained/down rows then come out per group (period, and model and
 * capacity where asked) rather than per node interval, so a report by node is not made this
 * way. For a day the sums may stand for, gp_ledger_report_day_whole says true. */
typedef struct gp_ledger_job_day {
  int64_t day;                                /* the day's first second (UTC) */
  const char *queue, *user, *model;           /* borrowed for the call */
  gp_capacity capacity;
  double gpu_s, used_gpu_s, known_gpu_s, energy_j;
  bool energy_known;
} gp_ledger_job_day;
/* The job GPU-seconds of one day that ran on node intervals of (model, capacity, state). */
typedef struct gp_ledger_alloc_day {
  int64_t day;
  const char *model;
  gp_capacity capacity;
  gp_ledger_node_state state;
  double gpu_s;
} gp_ledger_alloc_day;
/* Whether [day, day + 1 day) lies inside the report and inside one of its periods, and no
 * price, commitment or energy price changes inside it (only then is a day's sum priced as
 * its intervals would be). */
bool gp_ledger_report_day_whole(const gp_ledger_report *r, int64_t day);
/* Job intervals added from now on count only inside [from, to) as well (the days read raw);
 * from = to = 0: the whole report again. */
void gp_ledger_report_window(gp_ledger_report *r, int64_t from, int64_t to);
/* A day's sums; one for which day_whole is false is an anomaly, skipped. */
void gp_ledger_report_add_job_day(gp_ledger_report *r, const gp_ledger_job_day *d);
void gp_ledger_report_add_alloc_day(gp_ledger_report *r, const gp_ledger_alloc_day *d);
/* Inputs that contradict each other (a job on a node with no up/drained/down interval at
 * that time, more allocated on a node interval within one period than it offered, a share
 * outside (0, 1], an end before its start, a node of no GPUs): counted, clamped (idle never
 * goes negative) or skipped, never a crash. 0 for a consistent ledger. */
int64_t gp_ledger_report_anomalies(const gp_ledger_report *r);
void gp_ledger_report_free(gp_ledger_report *r);   /* accepts NULL */

#endif
