/* SPDX-License-Identifier: Apache-2.0 */
/* The replay engine (replay.h): a virtual clock, an event heap, the incrementally kept
 * gp_view, and the application of each plan to the virtual cluster.
 *
 * Invariants:
 * - view slot i holds sim job vmap[i], and that job's `view` is i; only pending, running
 *   and stopping jobs are in the view (removal swaps the last slot in: O(1));
 * - gpu_used[node * GP_MAX_NODE_GPUS + g] is the milli-GPU held on that GPU, and
 *   free_whole counts the idle GPUs of up nodes, node_idle[n] those of up node n, and
 *   idle_hist[k] the nodes with k idle GPUs (down nodes count as 0);
 * - jobs_on[n] counts the placements on node n of running and stopping jobs (autoscaling
 *   deletes only provider nodes at 0);
 * - a job's `gen` changes whenever a run ends, so events of an earlier run are dropped. */
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

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* splitmix64: small, seeded, the same everywhere. */
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static gp_time exp_sample(sim *s, double mean_s) {
  double u = ((double)(rng_next(&s->rng) >> 11) + 0.5) / 9007199254740992.0;
  double x = -log(u) * mean_s;
  return x > 1e12 ? (gp_time)1e12 : (gp_time)ceil(x);
}

/* ---- the view ---- */

/* The entry of a job changed (or moved): a new rev for the core's memo. */
static gp_job *view_touch(sim *s, int i) {
  s->vrev[i] = ++s->last_rev;
  return &s->v[i];
}

static void view_add(sim *s, int j, const gp_job *proto) {
  s->v[s->nv] = *proto;
  view_touch(s, s->nv);
  s->ckpt_next[s->nv] = NO_CKPT;
  s->vmap[s->nv] = j;
  s->jobs[j].view = s->nv++;
}

static void view_remove(sim *s, int j) {
  int i = s->jobs[j].view, last = s->nv - 1;
  if (i != last) {
    s->v[i] = s->v[last];
    view_touch(s, i);
    s->ckpt_next[i] = s->ckpt_next[last];
    s->vmap[i] = s->vmap[last];
    s->jobs[s->vmap[i]].view = i;
  }
  s->nv--;
  s->jobs[j].view = -1;
}

/* ---- pending bookkeeping ---- */

/* A pending whole-GPU job's GPUs per task and (capped) tasks; false for other jobs and for
 * tasks no node could hold. */
static bool whole_shape(const sim *s, const sjob *sj, int *gpt, int *tasks) {
  const gp_request *rq = &s->v[sj->view].req;
  if (sj->need == 0 || rq->gpus_per_task < 1 || rq->gpus_per_task > GP_MAX_NODE_GPUS) return false;
  *gpt = rq->gpus_per_task;
  *tasks = rq->tasks < PEND_TASKS_MAX ? rq->tasks : PEND_TASKS_MAX;
  return true;
}

void gp__sim_idle_gpus(sim *s, int node, int delta) {
  s->free_whole += delta;
  s->idle_hist[s->node_idle[node]]--;
  s->node_idle[node] += delta;
  s->idle_hist[s->node_idle[node]]++;
}

/* How many tasks of `gpt` whole GPUs the idle GPUs could take, node by node. A task never
 * spans nodes, so a job of more tasks than this cannot start now. */
static int64_t task_room(const sim *s, int gpt) {
  int64_t n = 0;
  for (int k = gpt; k <= GP_MAX_NODE_GPUS; k++) n += s->idle_hist[k] * (k / gpt);
  return n;
}

/* Could some pending whole-GPU job's tasks all find a node with enough idle GPUs? */
static bool some_pending_fits(const sim *s) {
  for (int gpt = 1; gpt <= GP_MAX_NODE_GPUS; gpt++) {
    int t = 1;
    while (t <= PEND_TASKS_MAX && s->pend_shape[gpt][t] == 0) t++;
    if (t <= PEND_TASKS_MAX && task_room(s, gpt) >= t) return true;
  }
  return false;
}

static void pend_add(sim *s, int j, gp_time t) {
  sjob *sj = &s->jobs[j];
  sj->state = SJ_PENDING;
  sj->pending_since = t;
  sj->pend_step = s->steps;
  s->last_pend_step = s->steps;
  s->q_pending[sj->queue]++;
  s->q_pending_gpus[sj->queue] += sj->ask;
  s->pending_total++;
  s->need_count[sj->need]++;
  if (sj->need < s->min_need) s->min_need = sj->need;
  int gpt, tasks;
  if (whole_shape(s, sj, &gpt, &tasks)) s->pend_shape[gpt][tasks]++;
  /* The heap's second key (its `kind`) is the job index: ties in submit time go to the
   * lower id, as in the core. */
  if (s->strict_fifo)
    gp__sim_heap_push(&s->fifo, s->v[sj->view].submitted_at, j, j, ++sj->pend_seq);
  gp__sim_scale_pending(s, t);
}

static void pend_del(sim *s, int j) {
  sjob *sj = &s->jobs[j];
  int gpt, tasks;
  if (whole_shape(s, sj, &gpt, &tasks)) s->pend_shape[gpt][tasks]--;
  s->q_pending[sj->queue]--;
  s->q_pending_gpus[sj->queue] -= sj->ask;
  s->pending_total--;
  if (--s->need_count[sj->need] == 0 && sj->need == s->min_need) {
    while (s->min_need <= s->max_need && s->need_count[s->min_need] == 0) s->min_need++;
  }
}

/* Could a step now start something, with no preemption? Every start needs each of its
 * tasks' whole GPUs idle on one node; strict FIFO starts nothing unless its head can
 * start. A job the core has not seen yet (it may end it as impossible) always gets a
 * call when its GPUs are idle somewhere, as before these per-node counts existed. */
static bool could_start(sim *s) {
  if (s->pending_total == 0) return false;
  if (s->min_need == 0) return true;
  if (!s->strict_fifo)
    return s->min_need <= s->free_whole && (s->last_pend_step == s->steps || some_pending_fits(s));
  const gp__sim_event *top;
  while ((top = gp__sim_heap_top(&s->fifo)) &&
         (s->jobs[top->id].state != SJ_PENDING || s->jobs[top->id].pend_seq != top->gen)) {
    gp__sim_event e;
    gp__sim_heap_pop(&s->fifo, &e);
  }
  if (!top) return true;
  const sjob *head = &s->jobs[top->id];
  if (head->pend_step == s->steps) return true;
  int gpt, tasks;
  return head->need <= s->free_whole &&
         (!whole_shape(s, head, &gpt, &tasks) || task_room(s, gpt) >= tasks);
}

/* ---- time ---- */

static void csv_name(FILE *f, const char *name, const char *suffix) {
  if (strpbrk(name, ",\"\n\r")) {
    fputc('"', f);
    for (const char *p = name; *p; p++) {
      if (*p == '"') fputc('"', f);
      fputc(*p, f);
    }
    fprintf(f, ".%s\"", suffix);
  } else {
    fprintf(f, "%s.%s", name, suffix);
  }
}

static void csv_header(sim *s) {
  FILE *f = s->cfg->csv;
  fputs("time_s,pending_jobs,running_jobs,allocated_gpus,up_gpus", f);
  for (int q = 0; q < s->nq; q++) {
    const char *name = s->queues->queues[q].name;
    fputc(',', f), csv_name(f, name, "pending");
    fputc(',', f), csv_name(f, name, "running");
    fputc(',', f), csv_name(f, name, "gpus");
  }
  if (s->r->spot.modelled) fputs(",spot_interruptions,spot_gpu_hours_lost", f);
  fputc('\n', f);
}

static void series_record(sim *s, gp_time t_rel) {
  gp_replay_series *se = &s->r->series;
  if (se->n == se->cap) {
    /* Full: keep every other sample and halve the rate, so charts stay bounded. */
    int k = 0;
    for (int i = 0; i < se->n; i += 2, k++) {
      se->t[k] = se->t[i];
      se->pending_jobs[k] = se->pending_jobs[i];
      se->running_jobs[k] = se->running_jobs[i];
      se->allocated_gpus[k] = se->allocated_gpus[i];
      se->up_gpus[k] = se->up_gpus[i];
      memmove(se->queue_pending + (size_t)k * s->nq, se->queue_pending + (size_t)i * s->nq,
              (size_t)s->nq * sizeof(double));
      memmove(se->queue_gpus + (size_t)k * s->nq, se->queue_gpus + (size_t)i * s->nq,
              (size_t)s->nq * sizeof(double));
    }
    se->n = k;
    se->period *= 2;
  }
  if (t_rel % se->period) return;
  int i = se->n++;
  se->t[i] = (double)t_rel;
  se->pending_jobs[i] = (double)s->pending_total;
  se->running_jobs[i] = (double)s->running_total;
  se->allocated_gpus[i] = s->alloc_total;
  se->up_gpus[i] = (double)s->up_gpus;
  for (int q = 0; q < s->nq; q++) {
    se->queue_pending[(size_t)i * s->nq + q] = (double)s->q_pending[q];
    se->queue_gpus[(size_t)i * s->nq + q] = s->alloc[q];
  }
}

/* Samples every simulated minute in [next_sample, upto): the state is constant there. */
static void sample_until(sim *s, gp_time upto_rel) {
  while (s->next_sample < upto_rel) {
    gp_time t = s->next_sample;
    FILE *f = s->r->csv_rows < GP_REPLAY_MAX_CSV_ROWS ? s->cfg->csv : NULL;
    if (f) {
      fprintf(f, "%lld,%lld,%lld,%.3f,%lld", (long long)t, (long long)s->pending_total,
              (long long)s->running_total, s->alloc_total, (long long)s->up_gpus);
      for (int q = 0; q < s->nq; q++)
        fprintf(f, ",%lld,%lld,%.3f", (long long)s->q_pending[q], (long long)s->q_running[q],
                s->alloc[q]);
      const gp_replay_spot_stats *sp = &s->r->spot;
      if (sp->modelled)
        fprintf(f, ",%lld,%.3f", (long long)sp->interruptions,
                sp->gpu_hours_recomputed + sp->gpu_hours_overhead);
      fputc('\n', f);
      s->r->csv_rows++;
    }
    series_record(s, t);
    /* Without a CSV only the chart samples matter: jump to the next one, so a trace that
     * spans years costs a few thousand iterations, not one per simulated minute. */
    if (f) {
      s->next_sample += 60;
    } else {
      gp_time p = s->r->series.period;
      s->next_sample = (t / p + 1) * p;
    }
  }
}

/* Moves the clock to t: integrates allocations and fair shares over [t_last, t). */
static void advance(sim *s, gp_time t) {
  if (t <= s->t_last) return;
  double dt = (double)(t - s->t_last);
  for (int q = 0; q < s->nq; q++) {
    s->alloc_int[q] += s->alloc[q] * dt;
    s->fair_int[q] += s->fair[q] * dt;
  }
  s->alloc_int_total += s->alloc_total * dt;
  s->up_int += (double)s->up_gpus * dt;
  sample_until(s, t - s->t_first);
  s->t_last = t;
}

/* ---- GPUs ---- */

static int *gpu_slot(sim *s, int node, int g) { return &s->gpu_used[node * GP_MAX_NODE_GPUS + g]; }

/* The job's run ends at `now`: its GPUs come free. */
static void release(sim *s, int j, gp_time now) {
  sjob *sj = &s->jobs[j];
  /* The idle stretch it held, from its start (or the run's) to now. */
  gp_time idle0 = sj->idle_from > sj->run_start ? sj->idle_from : sj->run_start;
  bool idled = sj->idle_from != NO_IDLE && now > idle0;
  if (idled) s->r->idle.held_gpu_hours += sj->gpus * (double)(now - idle0) / 3600.0;
  sj->idle_from = NO_IDLE;
  sj->spot_stop = false;
  for (int p = 0; p < sj->n_pl; p++) {
    const gp_placement *pl = &sj->pl[p];
    if (s->cost) {
      int id = s->node_id[pl->node];
      gp__sim_cost_add(s->cost, j, sj->restarts + 1, sj->queue, s->v[sj->view].user, id,
                       pl->gpu_mask, pl->gpu_milli, sj->run_start, now);
      if (idled)
        gp__sim_cost_add_idle(s->cost, false, j, sj->queue, s->v[sj->view].user, id,
                              pl->gpu_mask, pl->gpu_milli, idle0, now);
    }
    if (--s->jobs_on[pl->node] == 0) gp__sim_scale_node_empty(s, pl->node, now);
    bool up = s->nodes[pl->node].state == GP_NODE_UP; /* a drained node places nothing */
    for (int g = 0; g < GP_MAX_NODE_GPUS; g++)
      if (pl->gpu_mask & (1u << g)) {
        int *u = gpu_slot(s, pl->node, g);
        *u -= pl->gpu_milli;
        if (*u == 0 && up) gp__sim_idle_gpus(s, pl->node, +1);
      }
  }
  sj->n_pl = 0;
  s->alloc[sj->queue] -= sj->gpus;
  s->alloc_total -= sj->gpus;
  if (fabs(s->alloc[sj->queue]) < 1e-9) s->alloc[sj->queue] = 0;
  if (fabs(s->alloc_total) < 1e-9) s->alloc_total = 0;
  s->q_running[sj->queue]--;
  s->running_total--;
}

/* Seconds of work this run has done by time t (after its restart overhead). */
static gp_time run_progress(const sjob *sj, gp_time t) {
  gp_time progress = t - (sj->run_start + sj->run_overhead);
  if (progress <= 0) return 0;
  return progress > sj->work_left ? sj->work_left : progress;
}

/* Seconds of this run's work saved by checkpoints at time t. */
static gp_time saved_work(const sim *s, const sjob *sj, gp_time t) {
  gp_time c = s->cfg->checkpoint_interval;
  return c > 0 ? run_progress(sj, t) / c * c : 0;
}

/* A run is cut short with `saved` seconds of its work kept; the job lets go of its GPUs
 * at `now` and goes back to the queue (with its submission time: ahead of later work).
 * Returns the GPU-hours of the run that were not saved. */
static double requeue_saved(sim *s, int j, gp_time saved, gp_time now) {
  sjob *sj = &s->jobs[j];
  double lost = sj->gpus * (double)(now - sj->run_start - saved) / 3600.0;
  sj->work_left -= saved;
  release(s, j, now);
  sj->restarts++;
  sj->gen++;
  gp_job *vj = view_touch(s, sj->view);
  s->ckpt_next[sj->view] = NO_CKPT;
  vj->state = GP_JOB_PENDING;
  vj->started_at = 0;
  vj->last_checkpoint_at = 0;
  vj->n_placements = 0;
  vj->placements = NULL;
  vj->restarts = sj->restarts;
  pend_add(s, j, now);
  return lost > 0 ? lost : 0;
}

/* A run cut at `stopped` (preemption decision or node failure): the work since its last
 * checkpoint is lost. */
static double requeue(sim *s, int j, gp_time stopped, gp_time now) {
  return requeue_saved(s, j, saved_work(s, &s->jobs[j], stopped), now);
}

static void finish(sim *s, int j, gp_time t) {
  sjob *sj = &s->jobs[j];
  release(s, j, t);
  sj->state = sj->timeout_run ? SJ_TIMEOUT : SJ_DONE;
  sj->end = t;
  sj->gen++;
  view_remove(s, j);
}

/* ---- plans ---- */

static int plan_error(sim *s, const char *fmt, const char *id, long a, long b) {
  char msg[256];
  snprintf(msg, sizeof msg, fmt, id, a, b);
  return gp_err_set(s->err, GP_ESTATE, NULL, 0, NULL, "inconsistent plan from the scheduler: %s",
                    msg);
}

/* The job holding a GPU (its id and state in the view), for the message of an
 * inconsistent plan; "nobody in the view" when no job claims it. */
static void holder_of(const sim *s, int node, int g, char *buf, size_t n) {
  snprintf(buf, n, "nobody in the view");
  for (int i = 0; i < s->nv; i++) {
    const gp_job *v = &s->v[i];
    for (int p = 0; p < v->n_placements; p++)
      if (v->placements[p].node == node && (v->placements[p].gpu_mask & (1u << g))) {
        snprintf(buf, n, "job %s (%s)", v->id, gp_job_state_name(v->state));
        return;
      }
  }
}

/* ---- idle stretches ---- */

/* gp_idle_due on the replay's clock: the core reads 0 as "not idle", while a trace's clock
 * may start at 0, so times are taken from one second before the first arrival. */
static gp_time idle_due(const sim *s, const gp_idle_rule *r, gp_time start, gp_time idle_from) {
  gp_time base = s->t_first - 1;
  return base + gp_idle_due(r, start - base, idle_from - base);
}

/* A run that just started at `now`: when its idle stretch begins (its remaining work is
 * busy but the last idle_tail seconds; a run restarted inside its tail idles from its
 * start), and, under an idle policy, an event when the policy's rule acts on it, if that
 * comes before the run ends. */
static void idle_plan(sim *s, int j, gp_time now) {
  sjob *sj = &s->jobs[j];
  sj->idle_from = NO_IDLE;
  if (sj->idle_tail <= 0) return;
  gp_time busy = sj->work_left > sj->idle_tail ? sj->work_left - sj->idle_tail : 0;
  gp_time from = now + sj->run_overhead + busy;
  if (from >= sj->run_end) return; /* a time limit ends it first */
  sj->idle_from = from;
  const gp_idle_policy *pol = s->idle_pol ? s->idle_pol[sj->queue] : NULL;
  if (!pol || !pol->set) return;
  const gp_idle_rule *rule = gp_idle_rule_for(pol, s->v[sj->view].priority_class);
  gp_time due = idle_due(s, rule, now, from);
  if (due < sj->run_end) gp__sim_heap_push(&s->heap, due, GP__EV_IDLE, j, sj->gen);
}

/* The idle policy acts on a running job at t. Every trace job is treated as requeueable
 * training, so the priority class decides alone what may be done: notify frees nothing;
 * requeue or cancel free its GPUs now, and since all that was left of its run was idle,
 * its work is done: it ends here, completed. Returns true when GPUs came free. */
static bool idle_act(sim *s, int j, gp_time t) {
  sjob *sj = &s->jobs[j];
  const gp_idle_policy *pol = s->idle_pol[sj->queue];
  const char *prio = s->v[sj->view].priority_class;
  gp_idle_action a = gp_idle_effective(gp_idle_rule_for(pol, prio), true, prio, NULL);
  gp_replay_idle *id = &s->r->idle;
  if (a == GP_IDLE_NOTIFY) {
    id->notified++;
    return false;
  }
  if (a == GP_IDLE_REQUEUE) id->requeued++;
  else id->cancelled++;
  id->released_gpu_hours += sj->gpus * (double)(sj->run_end - t) / 3600.0;
  if (s->cost)
    for (int p = 0; p < sj->n_pl; p++)
      gp__sim_cost_add_idle(s->cost, true, j, sj->queue, s->v[sj->view].user,
                            s->node_id[sj->pl[p].node], sj->pl[p].gpu_mask, sj->pl[p].gpu_milli,
                            t, sj->run_end);
  sj->timeout_run = false; /* its work is done: what a limit would have cut was idle */
  finish(s, j, t);
  return true;
}

static int apply_start(sim *s, int j, const gp_plan_start *st, gp_time now) {
  sjob *sj = &s->jobs[j];
  const gp_job *vj = &s->v[sj->view];
  if (sj->state != SJ_PENDING) return plan_error(s, "job %s started while not pending%ld%ld", vj->id, 0, 0);
  if (st->n_placements < 1 || st->n_placements != vj->req.tasks)
    return plan_error(s, "job %s: %ld placements for %ld tasks", vj->id, st->n_placements,
                      vj->req.tasks);
  /* Check every GPU before touching any, so a bad plan leaves the cluster as it was. */
  double gpus = 0;
  for (int p = 0; p < st->n_placements; p++) {
    const gp_placement *pl = &st->placements[p];
    if (pl->node < 0 || pl->node >= s->n_nodes)
      return plan_error(s, "job %s placed on node index %ld%.0ld", vj->id, pl->node, 0);
    const gp_node *n = &s->nodes[pl->node];
    if (n->state != GP_NODE_UP)
      return plan_error(s, "job %s placed on node %ld which is not up%.0ld", vj->id, pl->node, 0);
    if (pl->gpu_milli < 0 || pl->gpu_milli > GP_GPU_MILLI)
      return plan_error(s, "job %s: gpu_milli %ld%.0ld", vj->id, pl->gpu_milli, 0);
    for (int g = 0; g < GP_MAX_NODE_GPUS; g++)
      if (pl->gpu_mask & (1u << g)) {
        if (g >= n->n_gpus)
          return plan_error(s, "job %s placed on GPU %ld of node %ld", vj->id, g, pl->node);
        if (*gpu_slot(s, pl->node, g) + pl->gpu_milli > GP_GPU_MILLI) {
          char holder[128];
          holder_of(s, pl->node, g, holder, sizeof holder);
          return gp_err_set(s->err, GP_ESTATE, NULL, 0, NULL,
                            "inconsistent plan from the scheduler: job %s placed on GPU %d of "
                            "node %s, held by %s", vj->id, g, s->nodes[pl->node].name, holder);
        }
        gpus += pl->gpu_milli / (double)GP_GPU_MILLI;
      }
  }
  for (int p = 0; p < st->n_placements; p++) {
    const gp_placement *pl = &st->placements[p];
    for (int g = 0; g < GP_MAX_NODE_GPUS; g++)
      if (pl->gpu_mask & (1u << g)) {
        int *u = gpu_slot(s, pl->node, g);
        if (*u == 0) gp__sim_idle_gpus(s, pl->node, -1);
        *u += pl->gpu_milli;
      }
    if (s->jobs_on[pl->node]++ == 0) gp__sim_scale_node_busy(s, pl->node);
  }
  /* Two tasks of one job on one GPU would have passed the check above one by one. */
  for (int p = 0; p < st->n_placements; p++)
    for (int g = 0; g < GP_MAX_NODE_GPUS; g++)
      if ((st->placements[p].gpu_mask & (1u << g)) &&
          *gpu_slot(s, st->placements[p].node, g) > GP_GPU_MILLI)
        return plan_error(s, "job %s holds GPU %ld of node %ld twice", vj->id, g,
                          st->placements[p].node);
  sj->pl = gp_xrealloc(sj->pl, (size_t)st->n_placements * sizeof *sj->pl);
  memcpy(sj->pl, st->placements, (size_t)st->n_placements * sizeof *sj->pl);
  sj->n_pl = st->n_placements;
  sj->gpus = gpus;
  sj->state = SJ_RUNNING;
  sj->run_start = now;
  sj->run_overhead = sj->restarts > 0 ? s->cfg->restart_overhead : 0;
  sj->wait += now - sj->pending_since;
  if (sj->first_start < 0) sj->first_start = now;
  gp_time need = sj->run_overhead + sj->work_left;
  gp_time limit = s->v[sj->view].time_limit;
  sj->timeout_run = sj->limit_enforced && limit > 0 && need > limit;
  sj->run_end = now + (sj->timeout_run ? limit : need);
  gp__sim_heap_push(&s->heap, sj->run_end, GP__EV_COMPLETE, j, sj->gen);
  idle_plan(s, j, now);
  gp_job *w = view_touch(s, sj->view);
  s->ckpt_next[sj->view] = now; /* looked at by the next refresh */
  w->state = GP_JOB_RUNNING;
  w->started_at = now;
  w->last_checkpoint_at = 0;
  w->n_placements = sj->n_pl;
  w->placements = sj->pl;
  pend_del(s, j);
  s->q_running[sj->queue]++;
  s->running_total++;
  s->alloc[sj->queue] += gpus;
  s->alloc_total += gpus;
  return 0;
}

/* The core's checkpoint-aware victim choice needs each running job's last checkpoint. */
static void refresh_checkpoints(sim *s, gp_time now) {
  gp_time every = s->cfg->checkpoint_interval;
  if (every <= 0) return;
  for (int i = 0; i < s->nv; i++) {
    if (s->ckpt_next[i] > now) continue;
    const sjob *sj = &s->jobs[s->vmap[i]];
    gp_time saved = saved_work(s, sj, now), base = sj->run_start + sj->run_overhead;
    gp_time ckpt = saved > 0 ? base + saved : 0;
    if (s->v[i].last_checkpoint_at != ckpt) view_touch(s, i)->last_checkpoint_at = ckpt;
    /* saved_work grows by `every` at base + saved + every, up to the work there is. */
    s->ckpt_next[i] = saved + every <= sj->work_left ? base + saved + every : NO_CKPT;
  }
}

static int step(sim *s, gp_time now) {
  s->last_step_t = now;
  s->skipped = false;
  /* An autoscaling pass needs the step's pending list, and runs with no job at all too
   * (empty provider nodes are scaled down). */
  bool pass = s->scale_pass;
  s->scale_pass = false;
  if (s->nv == 0 && !pass) { /* no job at all: no demand, no fair share */
    for (int q = 0; q < s->nq; q++) s->fair[q] = 0;
    return 0;
  }
  if (s->can_preempt) refresh_checkpoints(s, now);
  gp_view view = {.n_nodes = s->n_nodes, .nodes = s->nodes, .n_queues = s->nq,
                  .queues = s->queues->queues, .n_pools = s->n_pools, .pools = s->pools,
                  .n_jobs = s->nv, .jobs = s->v, .rev = s->view_rev, .job_revs = s->vrev};
  gp__sim_scale_view(s, &view);
  gp_plan *plan = NULL;
  gp_err e = {0};
  double t0 = now_s();
  int rc = gp_sched_step_memo(s->memo, &s->cfg->policy, &view, now,
                              pass ? 0 : GP_SCHED_DECISIONS_ONLY, &plan, &e);
  s->sched_seconds += now_s() - t0;
  s->r->sched_calls++;
  s->steps++;
  if (rc) {
    char msg[700];
    gp_err_format(&e, msg, sizeof msg);
    return gp_err_set(s->err, rc, NULL, 0, NULL, "the scheduler refused the replay's view: %s",
                      msg);
  }
  /* Proposed before the plan is applied: it reads the view the plan was made from. */
  if (pass && (rc = gp__sim_scale_propose(s, &view, plan, now))) {
    gp_plan_free(plan);
    return rc;
  }
  /* Fair shares, for the fairness figures: leaf queues, matched by name. */
  for (int i = 0; i < plan->n_queues; i++) {
    const gp_plan_queue *pq = &plan->queues[i];
    int q = i < s->nq && strcmp(s->queues->queues[i].name, pq->name) == 0 ? i : -1;
    for (int k = 0; q < 0 && k < s->nq; k++)
      if (strcmp(s->queues->queues[k].name, pq->name) == 0) q = k;
    if (q >= 0) s->fair[q] = pq->fair_share;
  }
  /* Map the plan's view indexes to jobs before the view changes under them. */
  int n = plan->n_ended + plan->n_preemptions + plan->n_starts;
  int *ids = gp_xmalloc((size_t)(n ? n : 1) * sizeof *ids);
  int k = 0;
  rc = 0;
  for (int i = 0; i < plan->n_ended; i++) ids[k++] = plan->ended[i].job;
  for (int i = 0; i < plan->n_preemptions; i++) ids[k++] = plan->preemptions[i].job;
  for (int i = 0; i < plan->n_starts; i++) ids[k++] = plan->starts[i].job;
  for (int i = 0; i < n && !rc; i++) {
    if (ids[i] < 0 || ids[i] >= s->nv) rc = plan_error(s, "job index %s%ld out of %ld", "", ids[i], s->nv);
    else ids[i] = s->vmap[ids[i]];
  }
  k = 0;
  for (int i = 0; i < plan->n_ended && !rc; i++, k++) {
    sjob *sj = &s->jobs[ids[k]];
    if (sj->state != SJ_PENDING) {
      rc = plan_error(s, "job %s ended while not pending%ld%ld", s->v[sj->view].id, 0, 0);
      break;
    }
    pend_del(s, ids[k]);
    sj->state = SJ_REJECTED;
    sj->end = now;
    view_remove(s, ids[k]);
  }
  for (int i = 0; i < plan->n_preemptions && !rc; i++, k++) {
    sjob *sj = &s->jobs[ids[k]];
    if (sj->state == SJ_STOPPING) continue;
    if (sj->state != SJ_RUNNING) {
      rc = plan_error(s, "job %s preempted while not running%ld%ld", s->v[sj->view].id, 0, 0);
      break;
    }
    sj->state = SJ_STOPPING;
    sj->preempted_at = now;
    view_touch(s, sj->view)->state = GP_JOB_STOPPING;
    s->ckpt_next[sj->view] = NO_CKPT;
    s->r->preemptions++;
    s->r->queues[sj->queue].preempted++;
    gp__sim_heap_push(&s->heap, now + s->cfg->grace, GP__EV_GRACE_END, ids[k], sj->gen);
  }
  for (int i = 0; i < plan->n_starts && !rc; i++, k++) rc = apply_start(s, ids[k], &plan->starts[i], now);
  if (!rc && pass) rc = gp__sim_scale_apply(s, plan, now);
  free(ids);
  gp_plan_free(plan);
  return rc;
}

/* ---- events ---- */

static void node_fail(sim *s, int node, gp_time t) {
  gp_node *n = &s->nodes[node];
  if (n->state == GP_NODE_DOWN) {
    if (s->spot_state && s->spot_state[node] == 2) /* reclaimed: its replacement may fail */
      gp__sim_heap_push(&s->heap, t + exp_sample(s, s->cfg->mtbf_hours * 3600), GP__EV_NODE_FAIL,
                        node, 0);
    return;
  }
  if (n->state == GP_NODE_UP)
    for (int g = 0; g < n->n_gpus; g++)
      if (*gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, -1);
  n->state = GP_NODE_DOWN;
  s->view_rev++;
  s->up_gpus -= n->n_gpus;
  s->nodes_down++;
  s->r->node_failures++;
  /* Every job with a task there dies and is requeued; failures are rare, a scan is fine. */
  for (int i = 0; i < s->nv; i++) {
    int j = s->vmap[i];
    sjob *sj = &s->jobs[j];
    if (sj->state != SJ_RUNNING && sj->state != SJ_STOPPING) continue;
    bool hit = false;
    for (int p = 0; p < sj->n_pl && !hit; p++) hit = sj->pl[p].node == node;
    if (hit) s->r->gpu_hours_lost_failures += requeue(s, j, t, t);
  }
  gp__sim_heap_push(&s->heap, t + s->cfg->repair_time, GP__EV_NODE_REPAIR, node, 0);
}

static void node_repair(sim *s, int node, gp_time t) {
  gp_node *n = &s->nodes[node];
  if (n->state != GP_NODE_DOWN) return;
  n->state = GP_NODE_UP;
  s->view_rev++;
  for (int g = 0; g < n->n_gpus; g++)
    if (*gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, +1);
  s->up_gpus += n->n_gpus;
  s->nodes_down--;
  gp__sim_heap_push(&s->heap, t + exp_sample(s, s->cfg->mtbf_hours * 3600), GP__EV_NODE_FAIL, node, 0);
}

/* ---- spot interruptions ---- */

/* Its notice (when there is one) and its reclaim. */
void gp__sim_spot_schedule(sim *s, int node, gp_time t_up) {
  int k = s->spot_life[node];
  gp_time t_r = t_up + gp_replay_spot_life(s->cfg->seed, node, k, s->spot_mean[node]);
  gp_time notice = s->cfg->spot.notice;
  if (notice > 0)
    gp__sim_heap_push(&s->heap, t_r - notice > t_up ? t_r - notice : t_up, GP__EV_SPOT_NOTICE,
                      node, (uint32_t)k);
  gp__sim_heap_push(&s->heap, t_r, GP__EV_SPOT_RECLAIM, node, (uint32_t)k);
}

/* A run cut by an interruption with `saved` of its `progress` kept: the rest is done
 * again, after the restart overhead. */
static void spot_cut(sim *s, int j, gp_time saved, gp_time progress, gp_time now) {
  sjob *sj = &s->jobs[j];
  gp_replay_spot_stats *st = &s->r->spot;
  st->runs_interrupted++;
  if (!sj->spot_hit) st->jobs_interrupted++;
  sj->spot_hit = true;
  st->gpu_hours_recomputed += sj->gpus * (double)(progress - saved) / 3600.0;
  st->gpu_hours_overhead += sj->gpus * (double)s->cfg->restart_overhead / 3600.0;
  requeue_saved(s, j, saved, now);
}

/* Does a run hold a GPU of `node`? */
static bool runs_on(const sjob *sj, int node) {
  for (int p = 0; p < sj->n_pl; p++)
    if (sj->pl[p].node == node) return true;
  return false;
}

/* The notice: the node drains (nothing new is placed there) and every run on it gets its
 * checkpoint signal. A notice at least as long as the grace lets the run save all its
 * progress at the notice and let go of its GPUs after the grace, before the reclaim; a
 * shorter one is no use: the run goes on until the reclaim cuts it. Jobs that never
 * checkpoint (--checkpoint-interval 0) save nothing either way. */
static void spot_notice(sim *s, int node, gp_time t) {
  gp_node *n = &s->nodes[node];
  if (n->state != GP_NODE_UP) return; /* down after a failure: nothing to drain */
  for (int g = 0; g < n->n_gpus; g++)
    if (*gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, -1);
  n->state = GP_NODE_DRAIN;
  s->view_rev++;
  s->spot_state[node] = 1;
  s->spot_out++;
  const gp_replay_config *cfg = s->cfg;
  if (cfg->spot.notice < cfg->grace || cfg->checkpoint_interval <= 0) return;
  bool used = false;
  for (int i = 0; i < s->nv; i++) {
    sjob *sj = &s->jobs[s->vmap[i]];
    if (sj->state != SJ_RUNNING || !runs_on(sj, node)) continue;
    sj->state = SJ_STOPPING;
    sj->spot_stop = true;
    sj->preempted_at = t;
    view_touch(s, sj->view)->state = GP_JOB_STOPPING;
    s->ckpt_next[sj->view] = NO_CKPT;
    gp__sim_heap_push(&s->heap, t + cfg->grace, GP__EV_GRACE_END, s->vmap[i], sj->gen);
    used = true;
  }
  if (used) s->r->spot.notices_used++;
}

/* The reclaim: the node goes; runs still on it lose the work since their last checkpoint;
 * the fleet's node is replaced after the provider delay (a provider node is gone). A node
 * down after a failure then is not interrupted: its next interruption is drawn from now. */
static void spot_reclaim(sim *s, int node, gp_time t) {
  gp_node *n = &s->nodes[node];
  if (s->spot_state[node] == 1) s->spot_out--;
  s->spot_state[node] = 0;
  if (n->state == GP_NODE_DOWN) {
    s->spot_life[node]++;
    gp__sim_spot_schedule(s, node, t);
    return;
  }
  if (n->state == GP_NODE_UP)
    for (int g = 0; g < n->n_gpus; g++)
      if (*gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, -1);
  n->state = GP_NODE_DOWN;
  s->view_rev++;
  s->up_gpus -= n->n_gpus;
  s->r->spot.interruptions++;
  for (int i = 0; i < s->nv; i++) {
    int j = s->vmap[i];
    sjob *sj = &s->jobs[j];
    if ((sj->state != SJ_RUNNING && sj->state != SJ_STOPPING) || !runs_on(sj, node)) continue;
    spot_cut(s, j, saved_work(s, sj, t), run_progress(sj, t), t);
  }
  /* A provider's node is gone for good: autoscaling replaces it if jobs need it. */
  if (gp__sim_scale_reclaimed(s, node, t)) return;
  s->spot_state[node] = 2;
  s->spot_out++;
  gp__sim_heap_push(&s->heap, t + s->cfg->spot.provider_delay, GP__EV_SPOT_BACK, node,
                    (uint32_t)s->spot_life[node]);
  /* Nobody pays for an instance between the reclaim and its replacement. */
  if (s->cost) gp__sim_cost_node_gap(s->cost, node, t, t + s->cfg->spot.provider_delay);
}

/* The replacement is up: a spot node with a new life. */
static void spot_back(sim *s, int node, gp_time t) {
  gp_node *n = &s->nodes[node];
  n->state = GP_NODE_UP;
  s->view_rev++;
  for (int g = 0; g < n->n_gpus; g++)
    if (*gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, +1);
  s->up_gpus += n->n_gpus;
  s->spot_state[node] = 0;
  s->spot_out--;
  s->spot_life[node]++;
  gp__sim_spot_schedule(s, node, t);
}

/* Handles one heap event; returns true when it may let a job start. */
static bool handle(sim *s, const gp__sim_event *e) {
  switch (e->kind) {
  case GP__EV_COMPLETE: {
    sjob *sj = &s->jobs[e->id];
    if (sj->gen != e->gen || (sj->state != SJ_RUNNING && sj->state != SJ_STOPPING)) return false;
    finish(s, e->id, e->t);
    return true;
  }
  case GP__EV_GRACE_END: {
    sjob *sj = &s->jobs[e->id];
    if (sj->gen != e->gen || sj->state != SJ_STOPPING) return false;
    if (sj->spot_stop) {
      gp_time done = run_progress(sj, sj->preempted_at);
      spot_cut(s, e->id, done, done, e->t); /* checkpointed at the notice */
    } else {
      s->r->gpu_hours_lost += requeue(s, e->id, sj->preempted_at, e->t);
    }
    return true;
  }
  case GP__EV_NODE_FAIL:
    node_fail(s, e->id, e->t);
    return true;
  case GP__EV_NODE_REPAIR:
    node_repair(s, e->id, e->t);
    return true;
  case GP__EV_IDLE: {
    sjob *sj = &s->jobs[e->id];
    if (sj->gen != e->gen || sj->state != SJ_RUNNING) return false;
    return idle_act(s, e->id, e->t);
  }
  case GP__EV_SPOT_NOTICE:
    if (e->gen != (uint32_t)s->spot_life[e->id]) return false;
    spot_notice(s, e->id, e->t);
    return true;
  case GP__EV_SPOT_RECLAIM:
    if (e->gen != (uint32_t)s->spot_life[e->id]) return false;
    spot_reclaim(s, e->id, e->t);
    return true;
  case GP__EV_SPOT_BACK:
    if (e->gen != (uint32_t)s->spot_life[e->id] || s->spot_state[e->id] != 2) return false;
    spot_back(s, e->id, e->t);
    return true;
  case GP__EV_NODE_UP:
  case GP__EV_SCALE_CHECK:
  case GP__EV_SCALE_TICK:
    return gp__sim_scale_event(s, e);
  }
  return false;
}

/* ---- setup ---- */

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
  if (s->cfg->csv) csv_header(s);
  if (s->cfg->mtbf_hours > 0)
    for (int i = 0; i < s->fleet->n_nodes; i++)
      gp__sim_heap_push(&s->heap, s->t_first + exp_sample(s, s->cfg->mtbf_hours * 3600),
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
    bool handled = handle(s, &e);
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
    view_add(s, j, &protos[j]);
    pend_add(s, j, t);
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
        rc = step(s, s->t_last);
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
      advance(s, tp);
      rc = step(s, tp);
      continue;
    }
    advance(s, t);
    bool dirty = false, freed = false;
    take_events(s, t, &dirty, &freed, t_end);
    if (freed && (cfg->every_event || could_start(s))) dirty = true;
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
    if (dirty) rc = step(s, t);
    progress(s, cursor);
  }
  return rc;
}

/* The series up to the end, and each job's outcome into the result's statistics. */
static void record_outcomes(sim *s, gp_time t_end) {
  gp_replay_result *r = s->r;
  size_t nj = s->trace->n_jobs;
  advance(s, t_end);
  sample_until(s, t_end - s->t_first + 1);
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
  double wall0 = now_s();
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
  r->wall_seconds = now_s() - wall0;
  *ret = r;
  return 0;
}
