/* SPDX-License-Identifier: Apache-2.0 */
/* A finished report as its answer (report.h): which rows each kind shows, in what order,
 * with which columns, as JSON or CSV. One table of columns serves both formats, so a CSV
 * header always names what the JSON rows hold. Hours and kWh are the engine's seconds and
 * joules converted; a figure nobody measured or priced is null (an empty CSV field),
 * never 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/accounting/report.h"
#include "server/accounting/ledger_feed.h"
#include "util/csv.h"
#include "util/mem.h"

typedef enum col {
  C_QUEUE, C_USER, C_MODEL, C_CAPACITY, C_NODE, C_JOB, C_SERVICE, /* the group keys, in gp_ledger_group order */
  C_PERIOD, C_PERIOD_END, C_KIND, C_GPU_HOURS, C_USED_GPU_HOURS, C_EFFICIENCY, C_ENERGY_KWH, C_COST,
  C_IDLE_SHARE_COST, C_N
} col;

static const char *const col_names[C_N] = {
    "queue",  "user", "model",     "capacity",       "node",       "job",        "service",    "period",
    "period_end", "kind", "gpu_hours", "used_gpu_hours", "efficiency", "energy_kwh", "cost",
    "idle_share_cost"};

/* The figures each kind shows after the keys, the period (its start and end) and the row
 * kind. */
static const col usage_cols[] = {C_GPU_HOURS, C_USED_GPU_HOURS, C_EFFICIENCY, C_ENERGY_KWH, C_N};
static const col cost_cols[] = {C_GPU_HOURS,  C_USED_GPU_HOURS, C_EFFICIENCY,
                                C_ENERGY_KWH, C_COST,           C_IDLE_SHARE_COST, C_N};
static const col idle_cols[] = {C_GPU_HOURS, C_COST, C_N};
static const col efficiency_cols[] = {C_GPU_HOURS, C_USED_GPU_HOURS, C_EFFICIENCY, C_N};

static const char *row_kind_name(gp_ledger_row_kind k) {
  switch (k) {
  case GP_LR_JOBS: return "jobs";
  case GP_LR_IDLE: return "idle";
  case GP_LR_DRAINED_DOWN: return "drained_down";
  case GP_LR_UNUSED_COMMITMENT: return "unused_commitment";
  }
  return "?";
}

static const char *step_name(gp_ledger_step s) {
  switch (s) {
  case GP_LS_NONE: return "none";
  case GP_LS_DAY: return "day";
  case GP_LS_WEEK: return "week";
  case GP_LS_MONTH: return "month";
  }
  return "?";
}

static const char *share_idle_name(gp_ledger_share_idle s) {
  switch (s) {
  case GP_LSI_NONE: return "none";
  case GP_LSI_DESERVED: return "deserved";
  case GP_LSI_USAGE: return "usage";
  }
  return "?";
}

/* The columns of a report, in order; returns the count. */
static int columns(const gp_srv_report_query *q, col out[C_N]) {
  int n = 0;
  for (int c = C_QUEUE; c <= C_SERVICE; c++)
    if (q->group & (1u << c)) out[n++] = (col)c;
  out[n++] = C_PERIOD;
  out[n++] = C_PERIOD_END;
  out[n++] = C_KIND;
  const col *figs = q->kind == GP_SRV_REPORT_USAGE  ? usage_cols
                    : q->kind == GP_SRV_REPORT_COST ? cost_cols
                    : q->kind == GP_SRV_REPORT_IDLE ? idle_cols
                                                    : efficiency_cols;
  for (int i = 0; figs[i] != C_N; i++) out[n++] = figs[i];
  return n;
}

static bool shown(const gp_srv_report_query *q, const gp_ledger_row *row, bool admin) {
  switch (q->kind) {
  case GP_SRV_REPORT_USAGE:
  case GP_SRV_REPORT_EFFICIENCY: return row->kind == GP_LR_JOBS;
  case GP_SRV_REPORT_COST: return row->kind == GP_LR_JOBS || admin;
  case GP_SRV_REPORT_IDLE: return row->kind != GP_LR_JOBS;
  }
  return false;
}

static double efficiency(const gp_ledger_row *row) {
  return row->known_gpu_s > 0 ? row->used_gpu_s / row->known_gpu_s : NAN;
}

/* Worst first; rows whose use nobody measured last; then the most GPU-hours first. */
static int by_efficiency(const void *a, const void *b) {
  const gp_ledger_row *x = *(const gp_ledger_row *const *)a, *y = *(const gp_ledger_row *const *)b;
  double ex = efficiency(x), ey = efficiency(y);
  if (isnan(ex) != isnan(ey)) return isnan(ex) ? 1 : -1;
  if (!isnan(ex) && ex != ey) return ex < ey ? -1 : 1;
  return x->gpu_s > y->gpu_s ? -1 : x->gpu_s < y->gpu_s;
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *value(const gp_srv_report *rep, const gp_ledger_row *row, col c) {
  char buf[GP_TIME_TEXT_LEN];
  switch (c) {
  case C_QUEUE: return str_or_null(row->queue);
  case C_USER: return str_or_null(row->user);
  case C_MODEL: return str_or_null(row->model);
  case C_CAPACITY: return str_or_null(row->capacity);
  case C_NODE: return str_or_null(row->node);
  case C_SERVICE: return str_or_null(row->service);
  case C_JOB:
    if (!row->job) return json_null();
    snprintf(buf, sizeof buf, "%lld", (long long)row->job);
    return json_string(buf);
  case C_PERIOD:
    gp_format_time(row->period_start, buf);
    return json_string(buf);
  case C_PERIOD_END:
    gp_format_time(row->period_end, buf);
    return json_string(buf);
  case C_KIND: return json_string(row_kind_name(row->kind));
  case C_GPU_HOURS: return json_real(row->gpu_s / 3600);
  case C_USED_GPU_HOURS: return row->known_gpu_s > 0 ? json_real(row->used_gpu_s / 3600) : json_null();
  case C_EFFICIENCY: return row->known_gpu_s > 0 ? json_real(efficiency(row)) : json_null();
  case C_ENERGY_KWH: return row->energy_known ? json_real(row->energy_j / 3.6e6) : json_null();
  case C_COST: return rep->prices && !row->cost_unknown ? json_real(row->cost) : json_null();
  case C_IDLE_SHARE_COST: return rep->prices ? json_real(row->idle_share_cost) : json_null();
  case C_N: break;
  }
  return json_null();
}

static void csv_value(gp_buf *b, const json_t *v) {
  char num[40];
  if (json_is_string(v)) {
    gp_csv_field(b, json_string_value(v));
  } else if (json_is_number(v)) {
    snprintf(num, sizeof num, "%.15g", json_number_value(v));
    gp_buf_puts(b, num);
  }
}

char *gp_report_csv(const json_t *doc) {
  gp_buf b;
  gp_buf_init(&b, (size_t)256 << 20);
  const json_t *cols = json_object_get(doc, "columns");
  size_t i, k;
  json_t *c, *row;
  json_array_foreach(cols, i, c) {
    if (i) gp_buf_append(&b, ",", 1);
    gp_csv_field(&b, json_string_value(c));
  }
  gp_buf_append(&b, "\r\n", 2);
  json_array_foreach(json_object_get(doc, "rows"), k, row) {
    json_array_foreach(cols, i, c) {
      if (i) gp_buf_append(&b, ",", 1);
      csv_value(&b, json_object_get(row, json_string_value(c)));
    }
    gp_buf_append(&b, "\r\n", 2);
  }
  return gp_buf_steal(&b);
}

char *gp__srv_report_render(const gp_srv_report *rep, gp_ledger_report *lr,
                            const gp_ledger_row *rows, int n_rows, bool admin) {
  const gp_srv_report_query *q = &rep->q;
  col cols[C_N];
  int n_cols = columns(q, cols);
  const gp_ledger_row **pick = gp_xcalloc((size_t)n_rows + 1, sizeof *pick);
  int n = 0;
  for (int i = 0; i < n_rows; i++)
    if (shown(q, &rows[i], admin)) pick[n++] = &rows[i];
  if (q->kind == GP_SRV_REPORT_EFFICIENCY) qsort(pick, (size_t)n, sizeof *pick, by_efficiency);
  bool truncated = n > GP_SRV_REPORT_MAX_ROWS;
  if (truncated) n = GP_SRV_REPORT_MAX_ROWS;

  json_t *doc = json_object();
  char t[GP_TIME_TEXT_LEN];
  json_object_set_new(doc, "kind", json_string(gp__srv_report_kind_name(q->kind)));
  gp_format_time(q->from, t);
  json_object_set_new(doc, "from", json_string(t));
  gp_format_time(q->to, t);
  json_object_set_new(doc, "to", json_string(t));
  json_object_set_new(doc, "step", json_string(step_name(q->step)));
  json_object_set_new(doc, "share_idle", json_string(share_idle_name(q->share_idle)));
  json_t *by = json_array();
  for (int c = C_QUEUE; c <= C_SERVICE; c++)
    if (q->group & (1u << c)) json_array_append_new(by, json_string(col_names[c]));
  json_object_set_new(doc, "by", by);
  json_object_set_new(doc, "currency",
                      rep->prices && rep->prices->currency ? json_string(rep->prices->currency)
                                                           : json_null());
  json_t *colj = json_array();
  for (int i = 0; i < n_cols; i++) json_array_append_new(colj, json_string(col_names[cols[i]]));
  json_object_set_new(doc, "columns", colj);
  json_t *list = json_array();
  for (int i = 0; i < n; i++) {
    json_t *o = json_object();
    for (int k = 0; k < n_cols; k++) json_object_set_new(o, col_names[cols[k]], value(rep, pick[i], cols[k]));
    json_array_append_new(list, o);
  }
  json_object_set_new(doc, "rows", list);
  json_object_set_new(doc, "truncated", json_boolean(truncated));
  if (admin && rep->prices && (q->kind == GP_SRV_REPORT_COST || q->kind == GP_SRV_REPORT_IDLE))
    json_object_set_new(doc, "fleet_cost", json_real(gp_ledger_report_fleet_cost(lr)));
  free(pick);
  char *out = q->csv ? gp_report_csv(doc) : json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
  json_decref(doc);
  return out;
}
