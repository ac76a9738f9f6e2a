/* SPDX-License-Identifier: Apache-2.0 */
/* The replay engine (replay.h): a virtual clock, an event heap, the incrementally kept
 * gp_view, and the application of each plan to the virtual cluster. What each heap event
 * does is events.c; the setup and the event loop are run.c (the state: sim.h).
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

double gp__sim_now_s(void) {
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

gp_time gp__sim_exp_sample(sim *s, double mean_s) {
  double u = ((double)(rng_next(&s->rng) >> 11) + 0.5) / 9007199254740992.0;
  double x = -log(u) * mean_s;
  return x > 1e12 ? (gp_time)1e12 : (gp_time)ceil(x);
}

/* ---- the view ---- */

/* The entry of a job changed (or moved): a new rev for the core's memo. */
gp_job *gp__sim_view_touch(sim *s, int i) {
  s->vrev[i] = ++s->last_rev;
  return &s->v[i];
}

void gp__sim_view_add(sim *s, int j, const gp_job *proto) {
  s->v[s->nv] = *proto;
  gp__sim_view_touch(s, s->nv);
  s->ckpt_next[s->nv] = NO_CKPT;
  s->vmap[s->nv] = j;
  s->jobs[j].view = s->nv++;
}

static void view_remove(sim *s, int j) {
  int i = s->jobs[j].view, last = s->nv - 1;
  if (i != last) {
    s->v[i] = s->v[last];
    gp__sim_view_touch(s, i);
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

void gp__sim_pend_add(sim *s, int j, gp_time t) {
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
bool gp__sim_could_start(sim *s) {
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

void gp__sim_csv_header(sim *s) {
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
void gp__sim_sample_until(sim *s, gp_time upto_rel) {
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
void gp__sim_advance(sim *s, gp_time t) {
  if (t <= s->t_last) return;
  gp__sim_usage_advance(s, t);
  double dt = (double)(t - s->t_last);
  for (int q = 0; q < s->nq; q++) {
    s->alloc_int[q] += s->alloc[q] * dt;
    s->fair_int[q] += s->fair[q] * dt;
  }
  s->alloc_int_total += s->alloc_total * dt;
  s->up_int += (double)s->up_gpus * dt;
  gp__sim_sample_until(s, t - s->t_first);
  s->t_last = t;
}

/* ---- GPUs ---- */

int *gp__sim_gpu_slot(sim *s, int node, int g) { return &s->gpu_used[node * GP_MAX_NODE_GPUS + g]; }

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
        int *u = gp__sim_gpu_slot(s, pl->node, g);
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
gp_time gp__sim_run_progress(const sjob *sj, gp_time t) {
  gp_time progress = t - (sj->run_start + sj->run_overhead);
  if (progress <= 0) return 0;
  return progress > sj->work_left ? sj->work_left : progress;
}

/* Seconds of this run's work saved by checkpoints at time t. */
gp_time gp__sim_saved_work(const sim *s, const sjob *sj, gp_time t) {
  gp_time c = s->cfg->checkpoint_interval;
  return c > 0 ? gp__sim_run_progress(sj, t) / c * c : 0;
}

/* A run is cut short with `saved` seconds of its work kept; the job lets go of its GPUs
 * at `now` and goes back to the queue (with its submission time: ahead of later work).
 * Returns the GPU-hours of the run that were not saved. */
double gp__sim_requeue_saved(sim *s, int j, gp_time saved, gp_time now) {
  sjob *sj = &s->jobs[j];
  double lost = sj->gpus * (double)(now - sj->run_start - saved) / 3600.0;
  sj->work_left -= saved;
  release(s, j, now);
  sj->restarts++;
  sj->gen++;
  gp_job *vj = gp__sim_view_touch(s, sj->view);
  s->ckpt_next[sj->view] = NO_CKPT;
  vj->state = GP_JOB_PENDING;
  vj->started_at = 0;
  vj->last_checkpoint_at = 0;
  vj->n_placements = 0;
  vj->placements = NULL;
  vj->restarts = sj->restarts;
  gp__sim_pend_add(s, j, now);
  return lost > 0 ? lost : 0;
}

/* A run cut at `stopped` (preemption decision or node failure): the work since its last
 * checkpoint is lost. */
double gp__sim_requeue(sim *s, int j, gp_time stopped, gp_time now) {
  return gp__sim_requeue_saved(s, j, gp__sim_saved_work(s, &s->jobs[j], stopped), now);
}

void gp__sim_finish(sim *s, int j, gp_time t) {
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
bool gp__sim_idle_act(sim *s, int j, gp_time t) {
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
  gp__sim_finish(s, j, t);
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
        if (*gp__sim_gpu_slot(s, pl->node, g) + pl->gpu_milli > GP_GPU_MILLI) {
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
        int *u = gp__sim_gpu_slot(s, pl->node, g);
        if (*u == 0) gp__sim_idle_gpus(s, pl->node, -1);
        *u += pl->gpu_milli;
      }
    if (s->jobs_on[pl->node]++ == 0) gp__sim_scale_node_busy(s, pl->node);
  }
  /* Two tasks of one job on one GPU would have passed the check above one by one. */
  for (int p = 0; p < st->n_placements; p++)
    for (int g = 0; g < GP_MAX_NODE_GPUS; g++)
      if ((st->placements[p].gpu_mask & (1u << g)) &&
          *gp__sim_gpu_slot(s, st->placements[p].node, g) > GP_GPU_MILLI)
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
  gp_job *w = gp__sim_view_touch(s, sj->view);
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
    gp_time saved = gp__sim_saved_work(s, sj, now), base = sj->run_start + sj->run_overhead;
    gp_time ckpt = saved > 0 ? base + saved : 0;
    if (s->v[i].last_checkpoint_at != ckpt) gp__sim_view_touch(s, i)->last_checkpoint_at = ckpt;
    /* saved_work grows by `every` at base + saved + every, up to the work there is. */
    s->ckpt_next[i] = saved + every <= sj->work_left ? base + saved + every : NO_CKPT;
  }
}

int gp__sim_step(sim *s, gp_time now) {
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
  gp__sim_usage_view(s, &view, now);
  gp_plan *plan = NULL;
  gp_err e = {0};
  double t0 = gp__sim_now_s();
  int rc = gp_sched_step_memo(s->memo, &s->cfg->policy, &view, now,
                              pass ? 0 : GP_SCHED_DECISIONS_ONLY, &plan, &e);
  s->sched_seconds += gp__sim_now_s() - t0;
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
    gp__sim_view_touch(s, sj->view)->state = GP_JOB_STOPPING;
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
