/* SPDX-License-Identifier: Apache-2.0 */
/* Builders for the core's unit tests: a small cluster, queues and jobs in plain C, one
 * scheduling step, and lookups into the plan by job id, so each test reads as a story:
 *   fx *f = fx_new(); fx_node(f, "n1", "H100", 8); fx_queue(f, "a", 4, GP_NO_LIMIT, 1);
 *   fx_job(f, "j1", "a", 2, 1); gp_plan *p = fx_step(f, 100); CHECK(fx_started(f, p, "j1"));
 * Everything lives in the fx (freed by fx_free), including the plan of fx_plan (fx_step's
 * plan is the caller's); strings are literals. */
#ifndef GP_TESTS_CORE_FIXTURE_H
#define GP_TESTS_CORE_FIXTURE_H

#include <string.h>

#include "core/plan.h"
#include "core/sched.h"
#include "test.h"

#define FX_MAX 512

typedef struct fx {
  gp_policy pol;
  gp_node nodes[FX_MAX];
  gp_gpu gpus[FX_MAX][GP_MAX_NODE_GPUS];
  gp_label labels[FX_MAX][4];
  gp_queue queues[64];
  gp_pool pools[8];
  gp_priority_class classes[16];
  gp_job jobs[FX_MAX];
  gp_placement placements[FX_MAX][8];
  const char *models[FX_MAX][4];
  const char *deps[FX_MAX][4];
  gp_label selectors[FX_MAX][2];
  gp_view view;
  gp_err err;
  gp_plan *plan; /* the last fx_plan's, owned */
} fx;

static inline fx *fx_new(void) {
  fx *f = calloc(1, sizeof *f);
  gp_policy_init(&f->pol);
  f->view.nodes = f->nodes;
  f->view.queues = f->queues;
  f->view.jobs = f->jobs;
  f->view.pools = f->pools;
  return f;
}

static inline void fx_free(fx *f) {
  if (f) gp_plan_free(f->plan);
  free(f);
}

/* A node with n healthy exclusive GPUs, no NVLink domains, 96 cores, 1 TiB. */
static inline gp_node *fx_node(fx *f, const char *name, const char *model, int n) {
  int i = f->view.n_nodes++;
  gp_node *nd = &f->nodes[i];
  nd->name = name;
  nd->model = model;
  nd->gpu_mem_mib = 81920;
  nd->n_gpus = n;
  for (int g = 0; g < n; g++) f->gpus[i][g] = (gp_gpu){.nvlink_domain = -1};
  nd->gpus = f->gpus[i];
  nd->cpu_milli = 96000;
  nd->mem_mib = 1024 * 1024;
  nd->labels = f->labels[i];
  return nd;
}

static inline void fx_label(fx *f, gp_node *nd, const char *k, const char *v) {
  int i = (int)(nd - f->nodes);
  f->labels[i][nd->n_labels++] = (gp_label){k, v};
}

/* NVLink domains: dom[g] for each GPU. */
static inline void fx_nvlink(fx *f, gp_node *nd, const int *dom) {
  int i = (int)(nd - f->nodes);
  for (int g = 0; g < nd->n_gpus; g++) f->gpus[i][g].nvlink_domain = dom[g];
}

static inline gp_queue *fx_queue(fx *f, const char *name, double deserved, double limit,
                                 double weight) {
  gp_queue *q = &f->queues[f->view.n_queues++];
  *q = (gp_queue){.name = name, .deserved_gpus = deserved, .limit_gpus = limit, .weight = weight};
  return q;
}

/* A pending job of `tasks` tasks x `gpus` whole GPUs, submitted at its position. */
static inline gp_job *fx_job(fx *f, const char *id, const char *queue, int gpus, int tasks) {
  int j = f->view.n_jobs++;
  gp_job *job = &f->jobs[j];
  job->id = id;
  job->queue = queue;
  job->user = "alice";
  job->req.tasks = tasks;
  job->req.gpus_per_task = gpus;
  job->state = GP_JOB_PENDING;
  job->submitted_at = j;
  job->placements = f->placements[j];
  job->after_ok = f->deps[j];
  return job;
}

/* Makes a job RUNNING on `node` (view index) holding the GPUs in mask, started at t. */
static inline void fx_run(fx *f, gp_job *job, int node, uint32_t mask, gp_time started) {
  int j = (int)(job - f->jobs);
  job->state = GP_JOB_RUNNING;
  job->started_at = started;
  f->placements[j][job->n_placements++] =
      (gp_placement){.node = node, .gpu_mask = mask, .gpu_milli = 1000, .mig_instance = -1};
}

/* A one-task job of `gpus` whole GPUs, RUNNING as fx_run makes it. */
static inline gp_job *fx_running(fx *f, const char *id, const char *queue, int gpus, int node,
                                 uint32_t mask, gp_time started) {
  gp_job *job = fx_job(f, id, queue, gpus, 1);
  fx_run(f, job, node, mask, started);
  return job;
}

static inline void fx_models(fx *f, gp_job *job, const char *m) {
  int j = (int)(job - f->jobs);
  f->models[j][job->req.n_gpu_models++] = m;
  job->req.gpu_models = f->models[j];
}

static inline gp_plan *fx_step(fx *f, gp_time now) {
  gp_plan *p = NULL;
  memset(&f->err, 0, sizeof f->err);
  int rc = gp_sched_step(&f->pol, &f->view, now, &p, &f->err);
  if (rc) fprintf(stderr, "  step failed: %s: %s\n", f->err.field, f->err.message);
  return p;
}

/* One step whose plan the fx keeps: freed by the next fx_plan or by fx_free. */
static inline const gp_plan *fx_plan(fx *f, gp_time now) {
  gp_plan_free(f->plan);
  f->plan = fx_step(f, now);
  return f->plan;
}

static inline int fx_index(const fx *f, const char *id) {
  for (int j = 0; j < f->view.n_jobs; j++)
    if (strcmp(f->jobs[j].id, id) == 0) return j;
  return -1;
}

static inline const gp_plan_start *fx_start(const fx *f, const gp_plan *p, const char *id) {
  int j = fx_index(f, id);
  for (int i = 0; p && i < p->n_starts; i++)
    if (p->starts[i].job == j) return &p->starts[i];
  return NULL;
}

static inline bool fx_started(const fx *f, const gp_plan *p, const char *id) {
  return fx_start(f, p, id) != NULL;
}

/* The pending reason's name, or "-" when the job is not pending in the plan. */
static inline const char *fx_reason(const fx *f, const gp_plan *p, const char *id) {
  int j = fx_index(f, id);
  for (int i = 0; p && i < p->n_pending; i++)
    if (p->pending[i].job == j) return gp_pending_reason_name(p->pending[i].reason);
  return "-";
}

static inline const char *fx_ended(const fx *f, const gp_plan *p, const char *id) {
  int j = fx_index(f, id);
  for (int i = 0; p && i < p->n_ended; i++)
    if (p->ended[i].job == j) return gp_end_reason_name(p->ended[i].reason);
  return "-";
}

/* "victim>for:kind" of the plan's preemption of job id, or "-". */
static inline bool fx_preempted(const fx *f, const gp_plan *p, const char *victim,
                                const char *for_job, gp_preempt_kind kind) {
  int v = fx_index(f, victim), w = fx_index(f, for_job);
  for (int i = 0; p && i < p->n_preemptions; i++)
    if (p->preemptions[i].job == v && p->preemptions[i].for_job == w && p->preemptions[i].kind == kind)
      return true;
  return false;
}

static inline const gp_plan_queue *fx_plan_queue(const gp_plan *p, const char *name) {
  for (int i = 0; p && i < p->n_queues; i++)
    if (strcmp(p->queues[i].name, name) == 0) return &p->queues[i];
  return NULL;
}

#endif
