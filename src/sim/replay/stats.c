/* SPDX-License-Identifier: Apache-2.0 */
/* Replay figures: job completion time and queueing delay percentiles, utilisation,
 * per-queue figures and Jain's fairness index (see stats.h and docs/simulator.md). */
#include "sim/replay/stats.h"

#include <math.h>
#include <stdlib.h>

#include "util/mem.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double gp__sim_percentile(const double *sorted, size_t n, double p) {
  if (n == 0) return 0;
  double rank = ceil(p / 100.0 * (double)n);
  size_t i = rank < 1 ? 0 : (size_t)rank - 1;
  return sorted[i < n ? i : n - 1];
}

double gp__sim_jain(const double *x, size_t n) {
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++) {
    sum += x[i];
    sq += x[i] * x[i];
  }
  return n == 0 || sq == 0 ? 1.0 : sum * sum / ((double)n * sq);
}

static double mean(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  return n ? s / (double)n : 0;
}

void gp__sim_replay_stats(gp_replay_result *r, const gp__sim_job_outcome *out, size_t n,
                      gp_time t_first, gp_time t_end, const double *alloc_int,
                      const double *fair_int, double alloc_int_total, double up_int) {
  double *jct = gp_xmalloc((n ? n : 1) * sizeof *jct);
  double *wait = gp_xmalloc((n ? n : 1) * sizeof *wait);
  size_t nj = 0, nw = 0;
  for (size_t i = 0; i < n; i++) {
    const gp__sim_job_outcome *o = &out[i];
    if (o->outcome == GP__OUT_COMPLETED) r->completed++;
    if (o->outcome == GP__OUT_TIMEOUT) r->timeouts++;
    if (o->outcome == GP__OUT_REJECTED) r->rejected++;
    if (o->outcome == GP__OUT_UNFINISHED) r->unfinished++;
    if (o->outcome == GP__OUT_COMPLETED || o->outcome == GP__OUT_TIMEOUT)
      jct[nj++] = (double)(o->end - o->submit);
    if (o->first_start >= 0) wait[nw++] = (double)o->wait;
  }
  r->avg_jct_s = mean(jct, nj);
  r->avg_wait_s = mean(wait, nw);
  qsort(jct, nj, sizeof *jct, cmp_double);
  qsort(wait, nw, sizeof *wait, cmp_double);
  r->p50_jct_s = gp__sim_percentile(jct, nj, 50);
  r->p95_jct_s = gp__sim_percentile(jct, nj, 95);
  r->p99_jct_s = gp__sim_percentile(jct, nj, 99);
  r->p50_wait_s = gp__sim_percentile(wait, nw, 50);
  r->p95_wait_s = gp__sim_percentile(wait, nw, 95);
  r->p99_wait_s = gp__sim_percentile(wait, nw, 99);
  r->n_jct = (int64_t)nj;
  r->jct_sorted = jct;
  free(wait);
  r->makespan_s = (double)(t_end - t_first);
  r->gpu_utilization = up_int > 0 ? alloc_int_total / up_int : 0;
  if (r->gpu_utilization > 1) r->gpu_utilization = 1; /* rounding only */

  /* Per queue: the same figures over the queue's jobs, gathered queue by queue. */
  int nq = r->n_queues;
  size_t *count = gp_xcalloc((size_t)nq + 1, sizeof *count);
  for (size_t i = 0; i < n; i++) count[out[i].queue + 1]++;
  for (int q = 0; q < nq; q++) count[q + 1] += count[q];
  const gp__sim_job_outcome **by_q = gp_xmalloc((n ? n : 1) * sizeof *by_q);
  size_t *fill = gp_xmalloc(((size_t)nq + 1) * sizeof *fill);
  for (int q = 0; q <= nq; q++) fill[q] = count[q];
  for (size_t i = 0; i < n; i++) by_q[fill[out[i].queue]++] = &out[i];
  double *qj = gp_xmalloc((n ? n : 1) * sizeof *qj);
  double *qw = gp_xmalloc((n ? n : 1) * sizeof *qw);
  double *ratios = gp_xmalloc(((size_t)nq ? (size_t)nq : 1) * sizeof *ratios);
  size_t n_ratios = 0;
  double span = r->makespan_s > 0 ? r->makespan_s : 1;
  for (int q = 0; q < nq; q++) {
    gp_replay_queue_stats *qs = &r->queues[q];
    size_t a = 0, b = 0;
    for (size_t k = count[q]; k < count[q + 1]; k++) {
      const gp__sim_job_outcome *o = by_q[k];
      qs->jobs++;
      if (o->outcome == GP__OUT_COMPLETED || o->outcome == GP__OUT_TIMEOUT) {
        qs->finished++;
        qj[a++] = (double)(o->end - o->submit);
      }
      if (o->first_start >= 0) qw[b++] = (double)o->wait;
    }
    qs->avg_jct_s = mean(qj, a);
    qs->avg_wait_s = mean(qw, b);
    qsort(qj, a, sizeof *qj, cmp_double);
    qsort(qw, b, sizeof *qw, cmp_double);
    qs->p95_jct_s = gp__sim_percentile(qj, a, 95);
    qs->p95_wait_s = gp__sim_percentile(qw, b, 95);
    qs->gpu_hours = alloc_int[q] / 3600.0;
    qs->avg_allocated_gpus = alloc_int[q] / span;
    qs->avg_fair_share_gpus = fair_int[q] / span;
    /* A queue that never had a fair share (no demand) says nothing about fairness. */
    if (fair_int[q] > 0) {
      qs->share_ratio = alloc_int[q] / fair_int[q];
      ratios[n_ratios++] = qs->share_ratio;
    }
  }
  r->jain_fairness = gp__sim_jain(ratios, n_ratios);
  free(count);
  free(by_q);
  free(fill);
  free(qj);
  free(qw);
  free(ratios);
}

void gp_replay_result_free(gp_replay_result *r) {
  if (!r) return;
  free(r->policy);
  free(r->queues);
  free(r->jct_sorted);
  free(r->weekly_jain);
  gp_replay_series *se = &r->series;
  free(se->t);
  free(se->pending_jobs);
  free(se->running_jobs);
  free(se->allocated_gpus);
  free(se->up_gpus);
  free(se->queue_pending);
  free(se->queue_gpus);
  gp_arena_free(r->arena);
  free(r);
}
