/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to src/sim/replay: turns the engine's per-job outcomes and time integrals into
 * the figures of a gp_replay_result (definitions in docs/simulator.md). */
#ifndef GP_SIM_REPLAY_STATS_H
#define GP_SIM_REPLAY_STATS_H

#include <stddef.h>

#include "sim/replay/replay.h"

typedef enum gp__sim_outcome {
  GP__OUT_COMPLETED = 0,
  GP__OUT_TIMEOUT,
  GP__OUT_REJECTED,   /* ended by the core without running (no node could ever fit it) */
  GP__OUT_UNFINISHED, /* still pending or running when the replay stopped */
} gp__sim_outcome;

typedef struct gp__sim_job_outcome {
  int queue;
  int outcome;
  gp_time submit, first_start, end; /* first_start < 0: never started */
  gp_time wait;                     /* seconds spent pending, requeues included */
} gp__sim_job_outcome;

/* Fills r's job, latency, utilisation and fairness figures. alloc_int/fair_int: per
 * queue, GPU-seconds allocated and of fair share over [t_first, t_end]. */
void gp__sim_replay_stats(gp_replay_result *r, const gp__sim_job_outcome *out, size_t n,
                      gp_time t_first, gp_time t_end, const double *alloc_int,
                      const double *fair_int, double alloc_int_total, double up_int);

/* Nearest-rank percentile of an ascending array (0 for an empty one). */
double gp__sim_percentile(const double *sorted, size_t n, double p);

/* Jain's fairness index (sum x)^2 / (n sum x^2) of x[0..n); 1 for n == 0. */
double gp__sim_jain(const double *x, size_t n);

#endif
