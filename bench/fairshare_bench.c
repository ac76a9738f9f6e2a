/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark of fair share over time (issue 37): what one step costs for 10,000 queues and
 * 100,000 users.
 *   1. decay update: every entry (10,000 queue nodes, 100,000 (queue, user) pairs) brought
 *      to `now` by the closed form and charged one interval, which is what the server's
 *      refresh of the view's usage does at most once a minute (src/server/accounting/fairshare.c);
 *   2. the scheduler's part: gp_sched_step on 10,000 leaf queues and one 8-GPU node, with
 *      and without 110,000 usage entries in the view (src/core/usage.c);
 *   3. users inside a leaf: one step with 20,000 pending jobs of 1,000 users in 100 queues
 *      (the per-step sort of src/core/usage.c), with fair_users on and off.
 * Prints the median of 21 runs of each, in ms. Build Release for figures:
 * cmake -B build/rel -DCMAKE_BUILD_TYPE=Release. Usage: bench_fairshare_bench */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/plan.h"
#include "core/sched.h"
#include "ledger/decay.h"

#define NQ 10000
#define NU 100000
#define RUNS 21

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dcmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v) {
  qsort(v, RUNS, sizeof *v, dcmp);
  return v[RUNS / 2];
}

static double step_ms(const gp_policy *pol, const gp_view *v) {
  gp_plan *p = NULL;
  gp_err e = {0};
  double t0 = now_ms();
  if (gp_sched_step(pol, v, 1000, &p, &e)) {
    fprintf(stderr, "step failed: %s: %s\n", e.field, e.message);
    exit(1);
  }
  double t = now_ms() - t0;
  gp_plan_free(p);
  return t;
}

int main(void) {
  /* 1. The decay update. */
  gp_fairshare_config c;
  gp_fairshare_config_init(&c);
  double *val = calloc(NQ + NU, sizeof *val);
  int64_t *at = calloc(NQ + NU, sizeof *at);
  for (int i = 0; i < NQ + NU; i++) val[i] = 1000.0 + i, at[i] = 1000 - i % 600;
  double t[RUNS], sink = 0;
  int64_t now = 2000;
  for (int r = 0; r < RUNS; r++, now += 60) {
    double t0 = now_ms();
    for (int i = 0; i < NQ + NU; i++) {
      val[i] = gp_decay_at(&c, val[i], at[i], now) + gp_decay_interval(&c, 1e-4, now - 60, now, now);
      at[i] = now;
    }
    t[r] = now_ms() - t0;
    sink += val[r];
  }
  printf("decay update, %d queues + %d users: %.3f ms per step (median of %d)\n", NQ, NU, median(t), RUNS);

  /* 2. The scheduler with 10,000 queues, with and without 110,000 usage entries. */
  static char qn[NQ][16], un[NU][16];
  gp_queue *qs = calloc(NQ, sizeof *qs);
  for (int i = 0; i < NQ; i++) {
    snprintf(qn[i], sizeof qn[i], "q%05d", i);
    qs[i] = (gp_queue){.name = qn[i], .limit_gpus = GP_NO_LIMIT, .weight = 1};
  }
  gp_usage *us = calloc(NQ + NU, sizeof *us);
  for (int i = 0; i < NQ; i++) us[i] = (gp_usage){qn[i], NULL, 0.5 + i % 7, 0};
  for (int i = 0; i < NU; i++) {
    snprintf(un[i], sizeof un[i], "u%06d", i);
    us[NQ + i] = (gp_usage){qn[i % NQ], un[i], 0.01 * (i % 100), 0};
  }
  gp_node node = {.name = "n0", .model = "H100", .gpu_mem_mib = 81920, .n_gpus = 8,
                  .cpu_milli = 96000, .mem_mib = 1 << 20};
  gp_policy pol;
  gp_policy_init(&pol);
  gp_view v = {.n_nodes = 1, .nodes = &node, .n_queues = NQ, .queues = qs};
  double t_off[RUNS], t_on[RUNS];
  for (int r = 0; r < RUNS; r++) {
    v.n_usage = 0;
    t_off[r] = step_ms(&pol, &v);
    v.n_usage = NQ + NU;
    v.usage = us;
    t_on[r] = step_ms(&pol, &v);
  }
  double off = median(t_off), on = median(t_on);
  printf("scheduler step, %d queues: %.3f ms without usage, %.3f ms with %d entries (+%.3f ms)\n", NQ,
         off, on, NQ + NU, on - off);

  /* 3. 20,000 pending jobs of 1,000 users in 100 queues; 64 GPUs. */
  enum { NJ = 20000, NQ3 = 100, NU3 = 1000 };
  gp_job *jobs = calloc(NJ, sizeof *jobs);
  static char ids[NJ][12];
  gp_node nodes[8];
  static char nn[8][8];
  for (int i = 0; i < 8; i++) {
    snprintf(nn[i], sizeof nn[i], "n%d", i);
    nodes[i] = node;
    nodes[i].name = nn[i];
  }
  for (int j = 0; j < NJ; j++) {
    snprintf(ids[j], sizeof ids[j], "%d", j + 1);
    jobs[j] = (gp_job){.id = ids[j], .queue = qn[j % NQ3], .user = un[(j * 7) % NU3],
                       .req = {.tasks = 1, .gpus_per_task = 1}, .state = GP_JOB_PENDING,
                       .submitted_at = j};
  }
  gp_view v3 = {.n_nodes = 8, .nodes = nodes, .n_queues = NQ3, .queues = qs, .n_jobs = NJ, .jobs = jobs};
  double t_u[RUNS], t_p[RUNS];
  for (int r = 0; r < RUNS; r++) {
    pol.fair_users = true;
    t_u[r] = step_ms(&pol, &v3);
    pol.fair_users = false;
    t_p[r] = step_ms(&pol, &v3);
  }
  double fu = median(t_u), fp = median(t_p);
  printf("scheduler step, %d pending jobs of %d users in %d queues: %.3f ms with fair_users, "
         "%.3f ms without (+%.3f ms)\n", NJ, NU3, NQ3, fu, fp, fu - fp);
  free(jobs);
  free(us);
  free(qs);
  free(val);
  free(at);
  return sink < 0;
}
