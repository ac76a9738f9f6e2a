/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's run (replay.h): gp_replay_config_init and gp_replay_run. Builds the
 * simulator's state over the fleet, the jobs and the queues, then runs the event loop
 * (arrivals and heap events in time order, calling the core when something may start)
 * and records each job's outcome. The state and the plans' application are the engine's
 * (engine.c); what each event does is events.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/model.h"
#include "core/plan.h"
#include "core/scale.h"
#include "core/sched.h"
#include "sim/replay/cost.h"
#include "sim/replay/heap.h"
#include "sim/replay/replay.h"
#include "sim/replay/scale.h"
#include "sim/replay/sim.h"
#include "sim/replay/stats.h"

static int find_queue(const gp_replay_queues *q, const char *name) {
  for (int i = 0; i < q->n; i++)
    if (strcmp(q->queues[i].name, name) == 0) return i;
  return -1;
}

/* Builds every job's view entry once; arrivals copy it into the view. */
static int build_jobs(sim *s, gp_job *protos) {
  const gp_trace *t = s->trace;
  int *queue_of = gp_xmalloc((t->n_names ? t->n_names : 1) * sizeof *queue_of);
  const char *const **models_of = gp_xcalloc(t->n_names ? t->n_names : 1, sizeof *models_of);
  int *n_models_of = gp_xcalloc(t->n_names ? t->n_names : 1, sizeof *n_models_of);
  for (size_t i = 0; i < t->n_names; i++) queue_of[i] = -2;
  int rc = 0;
  for (size_t i = 0; i < t->n_jobs && !rc; i++) {
    const gp_trace_job *tj = &t->jobs[i];
    sjob *sj = &s->jobs[i];
    gp_job *j = &protos[i];
    if (queue_of[tj->queue] == -2) queue_of[tj->queue] = find_queue(s->queues, t->names[tj->queue]);
    sj->queue = queue_of[tj->queue];
    if (sj->queue < 0) {
      rc = gp_err_set(s->err, GP_EINVAL, t->source, tj->line, "queue",
                      "queue '%s' is not among the replay's queues", t->names[tj->queue]);
      break;
    }
    const char *prio = gp_trace_name(t, tj->priority);
    if (prio && !gp_priority_class_find(&s->cfg->policy, prio)) {
      rc = gp_err_set(s->err, GP_EINVAL, t->source, tj->line, "priority",
                      "unknown priority class '%s'", prio);
      break;
    }
    sj->view = -1;
    sj->first_start = -1;
    sj->work_left = tj->duration;
    sj->idle_from = NO_IDLE;
    sj->idle_tail = gp_replay_idle_tail(s->cfg, t, i);
    if (sj->idle_tail > 0) s->r->idle.jobs++;
    j->id = gp_arena_printf(s->arena, "%08zu", i);
    j->queue = s->queues->queues[sj->queue].name;
    j->user = gp_trace_name(t, tj->user);
    j->priority_class = prio;
    j->state = GP_JOB_PENDING;
    j->submitted_at = s->arrive[i];
    j->requeue = true;
    gp_request *rq = &j->req;
    if (tj->gpu_milli) {
      rq->tasks = 1;
      rq->gpu_milli = tj->gpu_milli;
    } else if (tj->tasks > 0) {
      rq->tasks = tj->tasks;
      rq->gpus_per_task = tj->gpus / tj->tasks;
    } else {
      gp_trace_split_gang(tj->gpus, s->max_node_gpus, &rq->tasks, &rq->gpus_per_task);
    }
    sj->ask = rq->gpu_milli ? rq->gpu_milli / (double)GP_GPU_MILLI
                            : (double)rq->tasks * rq->gpus_per_task;
    sj->need = rq->gpu_milli ? 0 : rq->tasks * rq->gpus_per_task;
    if (sj->need > s->max_need) s->max_need = sj->need;
    rq->cpu_milli = tj->cpu_milli;
    rq->mem_mib = tj->mem_mib;
    rq->allow_spot = true;
    if (tj->gpu_models >= 0) {
      int m = tj->gpu_models;
      if (!models_of[m]) {
        const char *spec = t->names[m];
        int cnt = 1;
        for (const char *p = spec; *p; p++) cnt += *p == '|';
        const char **list = gp_arena_alloc(s->arena, (size_t)cnt * sizeof *list);
        int k = 0;
        for (const char *p = spec;;) {
          const char *bar = strchr(p, '|');
          size_t len = bar ? (size_t)(bar - p) : strlen(p);
          if (len) {
            char *name = gp_arena_alloc(s->arena, len + 1);
            memcpy(name, p, len);
            list[k++] = name;
          }
          if (!bar) break;
          p = bar + 1;
        }
        models_of[m] = list;
        n_models_of[m] = k;
      }
      rq->gpu_models = models_of[m];
      rq->n_gpu_models = n_models_of[m];
    }
    /* Time limits: the trace's; else the true duration (oracle) or an over-estimate. */
    gp_time limit;
    if (tj->time_limit > 0 && !s->cfg->oracle_limits) {
      limit = tj->time_limit;
      sj->limit_enforced = true;
    } else if (s->cfg->oracle_limits) {
      limit = tj->duration;
    } else {
      limit = (gp_time)ceil((double)tj->duration * s->cfg->overestimate);
    }
    j->time_limit = limit > 0 ? limit : 1;
  }
  free(queue_of);
  free(models_of);
  free(n_models_of);
  return rc;
}

static void progress(sim *s, size_t arrived) {
  if (!s->cfg->progress) return;
  int pct = (int)(arrived * 100 / s->trace->n_jobs);
  if (pct == s->progress_pct) return;
  s->progress_pct = pct;
  char bar[41];
  for (int i = 0; i < 40; i++) bar[i] = i < pct * 40 / 100 ? '=' : ' ';
  bar[40] = '\0';
  fprintf(stderr, "\r%-8s [%s] %3d%%  day %.1f ", s->r->policy, bar, pct,
          (double)(s->t_last - s->t_first) / 86400.0);
  fflush(stderr);
}

void gp_replay_config_init(gp_replay_config *c) {
  memset(c, 0, sizeof *c);
  gp_replay_preset_policy(GP_REPLAY_GPOOL, &c->policy);
  c->policy_name = "gpool";
  c->overestimate = 2;
  gp_fairshare_config_init(&c->fairshare);
  c->checkpoint_interval = 1800;
  c->restart_overhead = 60;
  c->grace = 30;
  c->repair_time = 3600;
  c->seed = 1;
  c->spot.notice = 120;
  c->spot.provider_delay = 300;
  gp_scale_default_ranks(c->scale.class_rank);
  c->scale.max_hourly_cost = GP_NO_LIMIT;
  c->scale.scale_down_after = 600;
  c->scale.interval = 60;
  c->time_scale = 1;
  c->share_probe = 3600;
}

/* Static partitions: queue q owns the nodes labelled queue=q and lends them to nobody. */
static void build_partitions(sim *s) {
  s->pools = gp_arena_alloc(s->arena, (size_t)s->nq * sizeof *s->pools);
  for (int q = 0; q < s->nq; q++) {
    const char *name = s->queues->queues[q].name;
    bool owns = false;
    for (int i = 0; i < s->fleet->n_nodes && !owns; i++)
      for (int l = 0; l < s->nodes[i].n_labels && !owns; l++)
        owns = strcmp(s->nodes[i].labels[l].key, "queue") == 0 &&
               strcmp(s->nodes[i].labels[l].value, name) == 0;
    if (!owns) continue;
    gp_pool *p = &s->pools[s->n_pools++];
    p->name = name;
    p->queue = name;
    p->selector.key = "queue";
    p->selector.value = name;
    p->lend = false;
  }
}

/* The simulator's state over the fleet, the jobs and the queues, before any job arrives. */
static void sim_init(sim *s) {
  const gp_replay_config *cfg = s->cfg;
  const gp_fleet *fleet = s->fleet;
  s->can_preempt = cfg->policy.preemption || cfg->policy.reclaim;
  s->strict_fifo = cfg->policy.order == GP_ORDER_FIFO && !cfg->policy.backfill;
  s->arena = gp_arena_new();
  s->n_nodes = s->cap_nodes = fleet->n_nodes;
  s->max_node_gpus = fleet->max_node_gpus;
  s->nodes = gp_xmalloc((size_t)fleet->n_nodes * sizeof *s->nodes);
  memcpy(s->nodes, fleet->nodes, (size_t)fleet->n_nodes * sizeof *s->nodes);
  s->jobs_on = gp_xcalloc((size_t)fleet->n_nodes, sizeof *s->jobs_on);
  s->node_id = gp_xmalloc((size_t)fleet->n_nodes * sizeof *s->node_id);
  for (int i = 0; i < fleet->n_nodes; i++) s->node_id[i] = i;
  s->gpu_used = gp_xcalloc((size_t)fleet->n_nodes * GP_MAX_NODE_GPUS, sizeof *s->gpu_used);
  s->node_idle = gp_xcalloc((size_t)fleet->n_nodes + 1, sizeof *s->node_idle);
  s->idle_hist[0] = fleet->n_nodes;
  for (int i = 0; i < fleet->n_nodes; i++)
    if (s->nodes[i].state == GP_NODE_UP) {
      for (int g = 0; g < s->nodes[i].n_gpus; g++) gp__sim_idle_gpus(s, i, +1);
      s->up_gpus += s->nodes[i].n_gpus;
    }
  s->pend_shape = gp_xcalloc(GP_MAX_NODE_GPUS + 1, sizeof *s->pend_shape);
  size_t nj = s->trace->n_jobs;
  s->jobs = gp_xcalloc(nj, sizeof *s->jobs);
  s->v = gp_xmalloc(nj * sizeof *s->v);
  s->vrev = gp_xmalloc(nj * sizeof *s->vrev);
  s->ckpt_next = gp_xmalloc(nj * sizeof *s->ckpt_next);
  s->memo = gp_sched_memo_new();
  s->view_rev = 1;
  s->vmap = gp_xmalloc(nj * sizeof *s->vmap);
  s->nq = s->queues->n;
  s->alloc = gp_xcalloc((size_t)s->nq, sizeof(double));
  s->fair = gp_xcalloc((size_t)s->nq, sizeof(double));
  s->alloc_int = gp_xcalloc((size_t)s->nq, sizeof(double));
  s->fair_int = gp_xcalloc((size_t)s->nq, sizeof(double));
  s->q_pending = gp_xcalloc((size_t)s->nq, sizeof(int64_t));
  s->q_running = gp_xcalloc((size_t)s->nq, sizeof(int64_t));
  s->q_pending_gpus = gp_xcalloc((size_t)s->nq, sizeof(double));
  s->rng = cfg->seed;
  s->progress_pct = -1;
}

/* The result the run fills: its queues and an empty time series. */
static gp_replay_result *result_new(sim *s) {
  gp_replay_result *r = gp_xcalloc(1, sizeof *r);
  s->r = r;
  r->arena = s->arena;
  r->policy = gp_xstrdup(s->cfg->policy_name ? s->cfg->policy_name : "custom");
  r->jobs = (int64_t)s->trace->n_jobs;
  r->n_queues = s->nq;
  r->queues = gp_xcalloc((size_t)s->nq, sizeof *r->queues);
  for (int q = 0; q < s->nq; q++) {
    r->queues[q].name = gp_arena_strdup(s->arena, s->queues->queues[q].name);
    r->queues[q].deserved_gpus = s->queues->queues[q].deserved_gpus;
  }
  gp_replay_series *se = &r->series;
  se->cap = 2048;
  se->n_queues = s->nq;
  se->period = 60;
  se->t = gp_xmalloc((size_t)se->cap * sizeof(double));
  se->pending_jobs = gp_xmalloc((size_t)se->cap * sizeof(double));
  se->running_jobs = gp_xmalloc((size_t)se->cap * sizeof(double));
  se->allocated_gpus = gp_xmalloc((size_t)se->cap * sizeof(double));
  se->up_gpus = gp_xmalloc((size_t)se->cap * sizeof(double));
  se->queue_pending = gp_xmalloc((size_t)se->cap * s->nq * sizeof(double));
  se->queue_gpus = gp_xmalloc((size_t)se->cap * s->nq * sizeof(double));
  return r;
}

/* Arrivals, their offsets from the first one divided by time_scale (monotone: order is
 * kept); durations are unchanged, so the offered load grows by time_scale. */
static gp_time *scale_arrivals(sim *s) {
  size_t nj = s->trace->n_jobs;
  const gp_trace_job *tj = s->trace->jobs;
  gp_time *arrive = gp_xmalloc((nj ? nj : 1) * sizeof *arrive);
  double scale = s->cfg->time_scale > 0 ? s->cfg->time_scale : 1;
  for (size_t i = 0; i < nj; i++)
    arrive[i] = tj[0].submit + (gp_time)llround((double)(tj[i].submit - tj[0].submit) / scale);
  return arrive;
}

/* Each queue's idle policy: its own from the policy's `queues:`, else the one for all. */
static int idle_policies(sim *s) {
  const gp_replay_idle_policy *p = s->cfg->idle_policy;
  if (!p) return 0;
  s->r->idle.policy = true;
  s->idle_pol = gp_xcalloc((size_t)s->nq, sizeof *s->idle_pol);
  for (int q = 0; q < s->nq; q++) s->idle_pol[q] = &p->all;
  for (int i = 0; i < p->n; i++) {
    int q = find_queue(s->queues, p->queue[i]);
    if (q < 0)
      return gp_err_set(s->err, GP_EINVAL, NULL, 0, "idle_policy.queues",
                        "queue '%s' is not among the replay's queues", p->queue[i]);
    s->idle_pol[q] = &p->policy[i];
  }
  return 0;
}

/* Each spot node's mean time between interruptions and its first one; nothing when no
 * spot node has a rate. */
static void spot_start(sim *s) {
  int n = s->fleet->n_nodes;
  double *mean = gp_xcalloc((size_t)s->cap_nodes, sizeof *mean);
  bool any = false;
  for (int i = 0; i < n; i++)
    if (s->nodes[i].capacity == GP_CAP_SPOT) {
      mean[i] = gp_replay_spot_mean_s(gp_replay_spot_rate(&s->cfg->spot, s->nodes[i].model));
      any = any || mean[i] > 0;
    }
  /* Spot templates' nodes are interrupted too. */
  const gp_replay_templates *tp = s->scale ? s->cfg->scale.templates : NULL;
  for (int i = 0; tp && i < tp->n; i++)
    if (tp->spec[i].t.node.capacity == GP_CAP_SPOT)
      any = any || gp_replay_spot_rate(&s->cfg->spot, tp->spec[i].t.node.model) > 0;
  if (!any) {
    free(mean);
    return;
  }
  s->r->spot.modelled = true;
  s->spot_mean = mean;
  s->spot_life = gp_xcalloc((size_t)s->cap_nodes, sizeof *s->spot_life);
  s->spot_state = gp_xcalloc((size_t)s->cap_nodes, sizeof *s->spot_state);
  for (int i = 0; i < n; i++)
    if (mean[i] > 0) gp__sim_spot_schedule(s, i, s->t_first);
}

/* The jobs' view entries (protos) and the clock's start: the CSV header and the first
 * failure of every node when nodes fail. */
static int prepare_jobs(sim *s, gp_job *protos) {
  if (s->cfg->partition) build_partitions(s);
  int rc = idle_policies(s);
  if (!rc) rc = build_jobs(s, protos);
  s->need_count = gp_xcalloc((size_t)s->max_need + 2, sizeof *s->need_count);
  s->min_need = s->max_need + 1;
  if (rc) return rc;
  s->t_first = s->t_last = s->arrive[0];
  spot_start(s);
  if (s->cfg->csv) gp__sim_csv_header(s);
  if (s->cfg->mtbf_hours > 0)
    for (int i = 0; i < s->fleet->n_nodes; i++)
      gp__sim_heap_push(&s->heap, s->t_first + gp__sim_exp_sample(s, s->cfg->mtbf_hours * 3600),
                    GP__EV_NODE_FAIL, i, 0);
  return 0;
}

/* Handles the events due at t. *dirty: worth a call to the core now; *freed: GPUs came
 * free; *t_end moves to t when a job ended. */
static void take_events(sim *s, gp_time t, bool *dirty, bool *freed, gp_time *t_end) {
  const gp__sim_event *top;
  while ((top = gp__sim_heap_top(&s->heap)) && top->t == t) {
    gp__sim_event e;
    gp__sim_heap_pop(&s->heap, &e);
    bool handled = gp__sim_handle(s, &e);
    if (handled) {
      /* A failure requeues jobs: always worth a call. GPUs coming free let a job
       * start only if one could use them, unless the policy may preempt (a queue's
       * fair share can move and allow a reclaim). */
      if (e.kind == GP__EV_NODE_FAIL || e.kind == GP__EV_SPOT_RECLAIM ||
          e.kind >= GP__EV_NODE_UP || s->can_preempt)
        *dirty = true;
      else *freed = true;
    }
    /* An idle event that freed GPUs ended its job. */
    if (e.kind == GP__EV_COMPLETE || e.kind == GP__EV_GRACE_END || (e.kind == GP__EV_IDLE && handled))
      *t_end = t;
  }
}

/* Adds the jobs arriving at t to the view, from *cursor on; *dirty as in take_events. */
static void take_arrivals(sim *s, gp_time t, const gp_job *protos, size_t *cursor, bool *dirty) {
  const gp_replay_config *cfg = s->cfg;
  size_t nj = s->trace->n_jobs;
  int64_t pending_before = s->pending_total;
  for (; *cursor < nj && s->arrive[*cursor] == t; (*cursor)++) {
    int j = (int)*cursor;
    sjob *sj = &s->jobs[j];
    int q = sj->queue;
    /* The queue's fair share grows with this demand only if it was capped by demand. */
    bool share_may_grow = s->fair[q] + 1e-9 >= s->alloc[q] + s->q_pending_gpus[q];
    gp__sim_view_add(s, j, &protos[j]);
    gp__sim_pend_add(s, j, t);
    /* Without preemption an arrival can start only if enough GPUs are idle now (and,
     * in strict FIFO, nobody waits ahead of it): otherwise the core would only say so,
     * unless the fair shares (kept for the fairness figures) change. */
    if (cfg->every_event || s->can_preempt || share_may_grow || sj->need == 0 ||
        (sj->need <= s->free_whole && !(s->strict_fifo && pending_before > 0)))
      *dirty = true;
  }
}

/* The event loop: arrivals and events in time order, calling the core when something
 * could start. Returns 0 or the first error; *t_end is when the last job ended. */
static int run_events(sim *s, const gp_job *protos, gp_time *t_end) {
  const gp_replay_config *cfg = s->cfg;
  size_t nj = s->trace->n_jobs;
  size_t cursor = 0;
  int rc = 0;
  *t_end = s->t_first;
  while (!rc) {
    if (cursor == nj && s->running_total == 0 &&
        (s->pending_total == 0 ||
         (s->nodes_down + s->spot_out == 0 && !gp__sim_scale_busy(s)))) {
      /* Nothing runs and nothing will arrive: jobs still pending can start only now, if
       * a skipped call would have started (or ended) them. Ask the core once more. */
      if (s->pending_total > 0 && s->last_pend_step == s->steps && s->nv > 0) {
        rc = gp__sim_step(s, s->t_last);
        continue;
      }
      break;
    }
    const gp__sim_event *top = gp__sim_heap_top(&s->heap);
    if (!top && cursor == nj) break;
    gp_time t = cursor < nj ? s->arrive[cursor] : top->t;
    if (top && top->t < t) t = top->t;
    if (s->skipped && cfg->share_probe > 0 && t > s->last_step_t + cfg->share_probe) {
      /* Calls were skipped (they could start nothing) but demand moved: refresh the fair
       * shares the fairness figures integrate. The plan is applied as any other. */
      gp_time tp = s->last_step_t + cfg->share_probe;
      gp__sim_advance(s, tp);
      rc = gp__sim_step(s, tp);
      continue;
    }
    gp__sim_advance(s, t);
    bool dirty = false, freed = false;
    take_events(s, t, &dirty, &freed, t_end);
    if (freed && (cfg->every_event || gp__sim_could_start(s))) dirty = true;
    size_t arrived_before = cursor;
    take_arrivals(s, t, protos, &cursor, &dirty);
    bool changed = freed || cursor > arrived_before;
    if (changed && !dirty) s->skipped = true;
    if (dirty && s->pending_total == 0 && !cfg->every_event && !s->scale_pass) {
      /* Nothing waits: no job can start, and every queue's demand (its allocation) is
       * met, so the core's water-filling would give each queue exactly its allocation.
       * Skipping the call here halves the calls on a lightly loaded fleet. */
      for (int q = 0; q < s->nq; q++) s->fair[q] = s->alloc[q];
      dirty = false;
    }
    if (dirty) rc = gp__sim_step(s, t);
    progress(s, cursor);
  }
  return rc;
}

/* The series up to the end, and each job's outcome into the result's statistics. */
static void record_outcomes(sim *s, gp_time t_end) {
  gp_replay_result *r = s->r;
  size_t nj = s->trace->n_jobs;
  gp__sim_advance(s, t_end);
  gp__sim_sample_until(s, t_end - s->t_first + 1);
  r->sched_seconds = s->sched_seconds;
  gp__sim_job_outcome *out = gp_xmalloc((nj ? nj : 1) * sizeof *out);
  for (size_t i = 0; i < nj; i++) {
    const sjob *sj = &s->jobs[i];
    out[i] = (gp__sim_job_outcome){.queue = sj->queue, .submit = s->arrive[i],
                               .first_start = sj->first_start, .end = sj->end,
                               .wait = sj->wait};
    switch (sj->state) {
    case SJ_DONE: out[i].outcome = GP__OUT_COMPLETED; break;
    case SJ_TIMEOUT: out[i].outcome = GP__OUT_TIMEOUT; break;
    case SJ_REJECTED: out[i].outcome = GP__OUT_REJECTED; break;
    default: out[i].outcome = GP__OUT_UNFINISHED; break;
    }
    if (sj->state == SJ_PENDING && sj->first_start >= 0) out[i].wait += t_end - sj->pending_since;
  }
  gp__sim_replay_stats(r, out, nj, s->t_first, t_end, s->alloc_int, s->fair_int,
                   s->alloc_int_total, s->up_int);
  /* The last, partial week's cumulative fairness. */
  if (t_end > s->next_week - 7 * 86400 || r->n_weeks == 0) {
    r->weekly_jain = realloc(r->weekly_jain, ((size_t)r->n_weeks + 1) * sizeof *r->weekly_jain);
    if (!r->weekly_jain) abort();
    r->weekly_jain[r->n_weeks++] = gp__sim_cumulative_jain(s, s->alloc_int);
  }
  r->usage_half_life_s = s->cfg->usage ? (double)s->cfg->fairshare.half_life_s : -1;
  double usum = 0;
  for (int q = 0; s->usage && q < s->nq; q++) usum += s->usage[q];
  for (int q = 0; usum > 0 && !s->probed && q < s->nq && q < r->n_queues; q++)
    r->queues[q].usage_share = s->usage[q] / usum;
  free(out);
}

/* Everything but the result (and its arena). */
static void sim_free(sim *s) {
  for (size_t i = 0; i < s->trace->n_jobs; i++) free(s->jobs[i].pl);
  free(s->jobs);
  free(s->arrive);
  free(s->v);
  gp_sched_memo_free(s->memo);
  free(s->vrev);
  free(s->ckpt_next);
  free(s->node_idle);
  free(s->pend_shape);
  free(s->vmap);
  free(s->nodes);
  free(s->jobs_on);
  free(s->node_id);
  gp__sim_scale_free(s);
  free(s->gpu_used);
  free(s->alloc);
  free(s->fair);
  free(s->alloc_int);
  free(s->fair_int);
  free(s->usage);
  free(s->usage_view);
  free(s->q_pending);
  free(s->q_running);
  free(s->q_pending_gpus);
  gp__sim_heap_done(&s->heap);
  gp__sim_heap_done(&s->fifo);
  free(s->need_count);
  gp__sim_cost_free(s->cost);
  free(s->idle_pol);
  free(s->spot_mean);
  free(s->spot_life);
  free(s->spot_state);
}

int gp_replay_run(const gp_replay_config *cfg, const gp_trace *trace, const gp_fleet *fleet,
                  const gp_replay_queues *queues, gp_replay_result **ret, gp_err *err) {
  double wall0 = gp__sim_now_s();
  if (fleet->n_nodes < 1) return gp_err_set(err, GP_EINVAL, NULL, 0, "fleet", "the fleet has no node");
  if (queues->n < 1) return gp_err_set(err, GP_EINVAL, NULL, 0, "queues", "no queue");
  if (trace->n_jobs < 1) return gp_err_set(err, GP_EINVAL, trace->source, 0, NULL, "no job");
  sim S = {.cfg = cfg, .trace = trace, .fleet = fleet, .queues = queues, .err = err};
  sim *s = &S;
  sim_init(s);
  gp_replay_result *r = result_new(s);
  gp__sim_scale_start(s);
  if (s->prices) s->cost = gp__sim_cost_new();
  s->arrive = scale_arrivals(s);
  gp_job *protos = gp_xcalloc(trace->n_jobs, sizeof *protos);
  int rc = prepare_jobs(s, protos);
  gp_time t_end = s->t_first;
  if (!rc) rc = run_events(s, protos, &t_end);
  if (cfg->progress) fprintf(stderr, "\r%80s\r", ""); /* clears the progress line */
  if (!rc) record_outcomes(s, t_end);
  gp__sim_scale_finish(s, t_end);
  r->idle.modelled = r->idle.jobs > 0;
  r->idle.assumed = r->idle.modelled && cfg->idle_fraction > 0 && cfg->idle_share > 0;
  r->idle.gpu_hours = r->idle.held_gpu_hours + r->idle.released_gpu_hours;
  r->spot.gpu_hours_lost = r->spot.gpu_hours_recomputed + r->spot.gpu_hours_overhead;
  /* Priced over [first submission, last end): a replay in which nothing ran for even a
   * second still owns its fleet for that second. */
  if (!rc && s->cost)
    rc = gp__sim_cost_finish(s->cost, s->prices, fleet, queues, s->t_first,
                             t_end > s->t_first ? t_end : s->t_first + 1, r, err);
  free(protos);
  sim_free(s);
  if (rc) {
    gp_replay_result_free(r); /* frees the arena too */
    return rc;
  }
  r->wall_seconds = gp__sim_now_s() - wall0;
  *ret = r;
  return 0;
}
