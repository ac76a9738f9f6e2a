/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's HTML report: one self-contained page (inline SVG and CSS, no script, no
 * network) with the summary table, queue length and GPU utilisation over time, the job
 * completion time CDF of every run, and per-queue waiting times. Readable offline; the
 * same results give the same bytes (wall time is left out). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/replay/replay.h"
#include "util/buf.h"

#define W 880
#define H 300
#define ML 70 /* margins: left, right, top, bottom */
#define MR 20
#define MT 20
#define MB 45

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                     "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

static void esc(gp_buf *b, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': gp_buf_puts(b, "&lt;"); break;
    case '>': gp_buf_puts(b, "&gt;"); break;
    case '&': gp_buf_puts(b, "&amp;"); break;
    case '"': gp_buf_puts(b, "&quot;"); break;
    default: gp_buf_append(b, s, 1);
    }
  }
}

/* A tick step of 1, 2 or 5 times a power of ten giving about 5 ticks. */
static double nice_step(double range) {
  if (range <= 0) return 1;
  double raw = range / 5, p = pow(10, floor(log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

typedef struct line {
  const double *x, *y;
  int n, stride; /* y[i * stride] */
  const char *label;
} line;

/* A line chart; log_x draws x on a log10 axis (x > 0). */
static void chart(gp_buf *b, const char *title, const char *xlabel, const char *ylabel,
                  const line *lines, int n_lines, bool log_x, double ymax_fixed) {
  double xmin = INFINITY, xmax = -INFINITY, ymax = ymax_fixed > 0 ? ymax_fixed : 0;
  for (int l = 0; l < n_lines; l++)
    for (int i = 0; i < lines[l].n; i++) {
      double x = log_x ? log10(fmax(lines[l].x[i], 1)) : lines[l].x[i];
      xmin = fmin(xmin, x);
      xmax = fmax(xmax, x);
      if (ymax_fixed <= 0) ymax = fmax(ymax, lines[l].y[(size_t)i * lines[l].stride]);
    }
  if (!isfinite(xmin)) xmin = 0, xmax = 1;
  if (log_x) xmin = floor(xmin), xmax = ceil(xmax);
  if (xmax <= xmin) xmax = xmin + 1;
  if (ymax <= 0) ymax = 1;
  double ystep = nice_step(ymax);
  ymax = ceil(ymax / ystep) * ystep;
  double pw = W - ML - MR, ph = H - MT - MB;
  gp_buf_printf(b, "<h3>");
  esc(b, title);
  gp_buf_printf(b, "</h3>\n<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n", W, H, W, H);
  gp_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#999\"/>\n",
                ML, MT, pw, ph);
  for (double y = 0; y <= ymax + ystep / 2; y += ystep) {
    double py = MT + ph - y / ymax * ph;
    gp_buf_printf(b, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                  ML, ML + pw, py, py, ML - 4, py + 4, y);
  }
  double xstep = log_x ? 1 : nice_step(xmax - xmin);
  for (double x = ceil(xmin / xstep) * xstep; x <= xmax + xstep / 1000; x += xstep) {
    double px = ML + (x - xmin) / (xmax - xmin) * pw;
    char lab[32];
    if (log_x) {
      double s = pow(10, x);
      if (s < 60) snprintf(lab, sizeof lab, "%gs", s);
      else if (s < 3600) snprintf(lab, sizeof lab, "%.3gm", s / 60);
      else if (s < 86400 * 2) snprintf(lab, sizeof lab, "%.3gh", s / 3600);
      else snprintf(lab, sizeof lab, "%.3gd", s / 86400);
    } else {
      snprintf(lab, sizeof lab, "%g", x);
    }
    gp_buf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                  px, px, MT, MT + ph, px, MT + ph + 14, lab);
  }
  gp_buf_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", ML + pw / 2, H - 8);
  esc(b, xlabel);
  gp_buf_printf(b, "</text><text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">",
                MT + ph / 2, MT + ph / 2);
  esc(b, ylabel);
  gp_buf_puts(b, "</text>\n");
  for (int l = 0; l < n_lines; l++) {
    const char *col = colors[l % 8];
    gp_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.3\" points=\"", col);
    for (int i = 0; i < lines[l].n; i++) {
      double x = log_x ? log10(fmax(lines[l].x[i], 1)) : lines[l].x[i];
      double y = lines[l].y[(size_t)i * lines[l].stride];
      gp_buf_printf(b, "%.1f,%.1f ", ML + (x - xmin) / (xmax - xmin) * pw,
                    MT + ph - fmin(y, ymax) / ymax * ph);
    }
    gp_buf_puts(b, "\"/>\n");
    gp_buf_printf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/>"
                     "<text x=\"%.1f\" y=\"%d\">", ML + 10 + l * 130.0, MT + 8, col,
                  ML + 26 + l * 130.0, MT + 12);
    esc(b, lines[l].label);
    gp_buf_puts(b, "</text>\n");
  }
  gp_buf_puts(b, "</svg>\n");
}

/* Grouped bars: per queue, one bar per run. */
static void bars(gp_buf *b, const char *title, gp_replay_result *const *r, int n) {
  int nq = r[0]->n_queues;
  double ymax = 0;
  for (int i = 0; i < n; i++)
    for (int q = 0; q < r[i]->n_queues && q < nq; q++) ymax = fmax(ymax, r[i]->queues[q].avg_wait_s / 3600);
  if (ymax <= 0) ymax = 1;
  double ystep = nice_step(ymax);
  ymax = ceil(ymax / ystep) * ystep;
  double pw = W - ML - MR, ph = H - MT - MB - 20, group = pw / (nq ? nq : 1);
  gp_buf_printf(b, "<h3>");
  esc(b, title);
  gp_buf_printf(b, "</h3>\n<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "xmlns=\"http://www.w3.org/2000/svg\" font-size=\"10\">\n", W, H, W, H);
  for (double y = 0; y <= ymax + ystep / 2; y += ystep) {
    double py = MT + ph - y / ymax * ph;
    gp_buf_printf(b, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g h</text>\n",
                  ML, ML + pw, py, py, ML - 4, py + 4, y);
  }
  for (int q = 0; q < nq; q++) {
    double bw = group * 0.8 / n;
    for (int i = 0; i < n; i++) {
      double v = q < r[i]->n_queues ? r[i]->queues[q].avg_wait_s / 3600 : 0;
      double hgt = v / ymax * ph;
      gp_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                    ML + q * group + group * 0.1 + i * bw, MT + ph - hgt, bw, hgt, colors[i % 8]);
      esc(b, r[i]->policy);
      gp_buf_printf(b, ": %.2f h</title></rect>\n", v);
    }
    gp_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" transform=\"rotate(-35 %.1f %.1f)\">",
                  ML + q * group + group / 2, MT + ph + 12, ML + q * group + group / 2, MT + ph + 12);
    esc(b, r[0]->queues[q].name);
    gp_buf_puts(b, "</text>\n");
  }
  for (int i = 0; i < n; i++) {
    gp_buf_printf(b, "<rect x=\"%.1f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">",
                  ML + 10 + i * 130.0, MT, colors[i % 8], ML + 24 + i * 130.0, MT + 9);
    esc(b, r[i]->policy);
    gp_buf_puts(b, "</text>\n");
  }
  gp_buf_puts(b, "</svg>\n");
}

static void summary_table(gp_buf *b, gp_replay_result *const *r, int n) {
  gp_buf_puts(b, "<table><tr><th></th>");
  for (int i = 0; i < n; i++) {
    gp_buf_puts(b, "<th>");
    esc(b, r[i]->policy);
    gp_buf_puts(b, "</th>");
  }
  gp_buf_puts(b, "</tr>\n");
#define ROW(label, fmt, expr)                                              \
  do {                                                                     \
    gp_buf_printf(b, "<tr><td>%s</td>", label);                            \
    for (int i = 0; i < n; i++) gp_buf_printf(b, "<td>" fmt "</td>", expr); \
    gp_buf_puts(b, "</tr>\n");                                             \
  } while (0)
  ROW("jobs", "%lld", (long long)r[i]->jobs);
  ROW("finished", "%lld", (long long)(r[i]->completed + r[i]->timeouts));
  ROW("avg wait (h)", "%.3f", r[i]->avg_wait_s / 3600);
  ROW("p95 wait (h)", "%.3f", r[i]->p95_wait_s / 3600);
  ROW("avg JCT (h)", "%.3f", r[i]->avg_jct_s / 3600);
  ROW("p50 JCT (h)", "%.3f", r[i]->p50_jct_s / 3600);
  ROW("p95 JCT (h)", "%.3f", r[i]->p95_jct_s / 3600);
  ROW("p99 JCT (h)", "%.3f", r[i]->p99_jct_s / 3600);
  ROW("GPU utilisation", "%.1f%%", r[i]->gpu_utilization * 100);
  ROW("makespan (days)", "%.2f", r[i]->makespan_s / 86400);
  ROW("Jain fairness", "%.3f", r[i]->jain_fairness);
  ROW("preemptions", "%lld", (long long)r[i]->preemptions);
  ROW("GPU-hours lost", "%.1f", r[i]->gpu_hours_lost);
  bool spot = false;
  for (int i = 0; i < n; i++) spot = spot || r[i]->spot.modelled;
  if (spot) {
    ROW("spot interruptions", "%lld", (long long)r[i]->spot.interruptions);
    ROW("jobs interrupted", "%lld", (long long)r[i]->spot.jobs_interrupted);
    ROW("GPU-hours lost to spot", "%.1f", r[i]->spot.gpu_hours_lost);
  }
  bool scale = false;
  for (int i = 0; i < n; i++) scale = scale || r[i]->scale.modelled;
  if (scale) {
    ROW("provider nodes created", "%lld", (long long)r[i]->scale.created);
    ROW("provider nodes deleted", "%lld", (long long)r[i]->scale.deleted);
    ROW("peak provider nodes", "%lld", (long long)r[i]->scale.peak_provider_nodes);
    ROW("provider node-hours", "%.1f", r[i]->scale.node_hours);
    if (r[0]->cost.priced) ROW("provider cost", "%.2f", r[i]->scale.cost);
  }
  if (r[0]->cost.priced) {
    gp_buf_puts(b, "<tr><td>currency</td>");
    for (int i = 0; i < n; i++) {
      gp_buf_puts(b, "<td>");
      esc(b, r[i]->cost.currency);
      gp_buf_puts(b, "</td>");
    }
    gp_buf_puts(b, "</tr>\n");
    ROW("fleet cost", "%.2f", r[i]->cost.fleet);
    ROW("job cost", "%.2f", r[i]->cost.jobs);
    ROW("idle cost", "%.2f", r[i]->cost.idle);
    ROW("unused commitment", "%.2f", r[i]->cost.unused_commitment);
    for (int q = 0; q < r[0]->n_queues; q++) {
      gp_buf_puts(b, "<tr><td>cost of queue ");
      esc(b, r[0]->queues[q].name);
      gp_buf_puts(b, "</td>");
      for (int i = 0; i < n; i++)
        gp_buf_printf(b, "<td>%.2f</td>", q < r[i]->n_queues ? r[i]->queues[q].cost : 0);
      gp_buf_puts(b, "</tr>\n");
    }
  }
  bool idle = false, assumed = false;
  for (int i = 0; i < n; i++) {
    idle = idle || r[i]->idle.modelled || r[i]->idle.policy;
    assumed = assumed || r[i]->idle.assumed;
  }
  if (idle) {
    ROW(assumed ? "idle in jobs GPU-hours (assumed)" : "idle in jobs GPU-hours", "%.1f",
        r[i]->idle.gpu_hours);
    ROW("released by the idle policy (GPU-hours)", "%.1f", r[i]->idle.released_gpu_hours);
    ROW("idle jobs requeued", "%lld", (long long)r[i]->idle.requeued);
    ROW("idle jobs cancelled", "%lld", (long long)r[i]->idle.cancelled);
    ROW("idle jobs notified", "%lld", (long long)r[i]->idle.notified);
    if (r[0]->idle.priced) {
      ROW("idle in jobs cost", "%.2f", r[i]->idle.cost);
      ROW("released cost", "%.2f", r[i]->idle.released_cost);
    }
    if (r[0]->idle.has_baseline) {
      ROW("avg wait without the idle policy (h)", "%.3f", r[i]->idle.base_avg_wait_s / 3600);
      ROW("avg JCT without the idle policy (h)", "%.3f", r[i]->idle.base_avg_jct_s / 3600);
    }
  }
#undef ROW
  gp_buf_puts(b, "</table>\n");
}

int gp_replay_write_html(const char *path, const char *title, gp_replay_result *const *r,
                         int n, gp_err *err) {
  if (n < 1) return gp_err_set(err, GP_EINVAL, path, 0, NULL, "no run to report");
  gp_buf b;
  gp_buf_init(&b, (size_t)256 << 20);
  gp_buf_puts(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
  esc(&b, title);
  gp_buf_puts(&b, "</title><style>body{font-family:sans-serif;margin:2em;max-width:960px}"
                  "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
                  "text-align:right}h3{margin-bottom:2px}</style></head><body>\n<h1>");
  esc(&b, title);
  gp_buf_puts(&b, "</h1>\n<p>Replayed by <code>gpool sim</code> through the gpool scheduler core. "
                  "Definitions of every figure: docs/simulator.md.</p>\n");
  summary_table(&b, r, n);

  line lines[16];
  int nl = n < 16 ? n : 16;
  double *days[16] = {0}, *util[16] = {0};
  for (int i = 0; i < nl; i++) {
    const gp_replay_series *s = &r[i]->series;
    days[i] = gp_xmalloc((size_t)(s->n ? s->n : 1) * sizeof(double));
    util[i] = gp_xmalloc((size_t)(s->n ? s->n : 1) * sizeof(double));
    for (int k = 0; k < s->n; k++) {
      days[i][k] = s->t[k] / 86400;
      util[i][k] = s->up_gpus[k] > 0 ? 100 * s->allocated_gpus[k] / s->up_gpus[k] : 0;
    }
    lines[i] = (line){days[i], s->pending_jobs, s->n, 1, r[i]->policy};
  }
  chart(&b, "Queue length over time", "days since the first submission", "pending jobs", lines,
        nl, false, 0);
  for (int i = 0; i < nl; i++) lines[i].y = util[i];
  chart(&b, "GPU utilisation over time", "days since the first submission",
        "allocated GPUs, % of up GPUs", lines, nl, false, 100);

  /* JCT CDF: 200 evenly spaced ranks of each run's sorted completion times. */
  double *cx[16] = {0}, *cy[16] = {0};
  for (int i = 0; i < nl; i++) {
    int64_t m = r[i]->n_jct;
    int k = m < 200 ? (int)m : 200;
    cx[i] = gp_xmalloc((size_t)(k ? k : 1) * sizeof(double));
    cy[i] = gp_xmalloc((size_t)(k ? k : 1) * sizeof(double));
    for (int j = 0; j < k; j++) {
      int64_t idx = k == 1 ? m - 1 : (int64_t)((double)j * (double)(m - 1) / (k - 1));
      cx[i][j] = r[i]->jct_sorted[idx];
      cy[i][j] = (double)(idx + 1) / (double)m;
    }
    lines[i] = (line){cx[i], cy[i], k, 1, r[i]->policy};
  }
  chart(&b, "Job completion time, CDF", "job completion time (log scale)", "fraction of jobs",
        lines, nl, true, 1);
  bars(&b, "Average wait per queue", r, n);
  for (int i = 0; i < nl; i++) {
    free(days[i]);
    free(util[i]);
    free(cx[i]);
    free(cy[i]);
  }
  gp_buf_puts(&b, "</body></html>\n");
  if (gp_buf_truncated(&b)) {
    gp_buf_done(&b);
    return gp_err_set(err, GP_ELIMIT, path, 0, NULL, "report larger than 256 MiB");
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    gp_buf_done(&b);
    return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot write: %s", strerror(errno));
  }
  size_t w = fwrite(b.data, 1, b.len, f);
  int bad = fclose(f) != 0 || w != b.len;
  gp_buf_done(&b);
  if (bad) return gp_err_set(err, GP_EIO, path, 0, NULL, "write failed");
  return 0;
}
