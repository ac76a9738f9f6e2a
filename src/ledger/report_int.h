/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger report's state, shared by the files that feed it (report.c) and turn it into
 * rows (rows.c). Node intervals keep, per period they overlap, the capacity they offered and
 * the allocations attributed to them, so idle and drained/down capacity fall out as
 * differences at finish. */
#ifndef GP_LEDGER_REPORT_INT_H
#define GP_LEDGER_REPORT_INT_H

#include "ledger/intern.h"
#include "ledger/keymap.h"
#include "ledger/periods.h"
#include "ledger/report.h"
#include "ledger/timeline.h"

typedef struct gp__ledger_node_period {
  double cap_gpu_s, cap_cost;       /* the node's GPUs × seconds (× price) */
  double alloc_gpu_s, alloc_cost;   /* job pieces attributed to this interval */
  bool cost_unknown;
} gp__ledger_node_period;

typedef struct gp__ledger_node_rec {
  int32_t node, model;
  gp_capacity capacity;
  gp_ledger_node_state state;
  int gpus;
  int64_t start, end;               /* clipped to the report */
  int first_period, n_periods;
  gp__ledger_node_period *per;      /* n_periods, in the report's arena */
} gp__ledger_node_rec;

struct gp_ledger_report {
  gp_ledger_params p;
  int rc;                           /* a params error, reported by finish */
  gp_err err;
  struct gp_arena *arena;
  gp__ledger_strings queues, users, models, nodes, services;
  gp__ledger_periods periods;
  gp__ledger_timeline **timelines;  /* by model id × 4 + capacity */
  size_t n_timelines;
  gp__ledger_node_rec *nrecs;
  size_t n_nrecs, cap_nrecs;
  /* Node records by node: order[first[node] .. first[node] + count[node]), by start. */
  int32_t *node_first, *node_count, *node_order;
  size_t indexed_nrecs, indexed_nodes;
  gp__ledger_map jobs;              /* job sums by (period, group keys) */
  double energy_cost;               /* on-prem energy of every job piece */
  double fleet_cost;
  int64_t anomalies;
  gp_ledger_row *rows;
  int n_rows;
  bool finished;
  /* Roll-ups (report_days.c): day sums were taken, so capacity rows are made per group;
   * alloc_days holds the days' allocation by (kind, period, model, capacity) as negative
   * capacity; job intervals count only inside [win_from, win_to) when win_to > 0. */
  bool rolled;
  gp__ledger_map alloc_days;
  int64_t win_from, win_to;
};

/* The timeline of (model id, capacity), built when first met. */
const gp__ledger_timeline *gp__ledger_report_timeline(gp_ledger_report *r, int32_t model,
                                                      gp_capacity c);

#endif
