/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's events (replay.h): what a node failure, a repair, a spot notice, reclaim or
 * replacement, a run's end, a grace's end and an idle stretch do to the virtual cluster,
 * one heap event at a time. The state they change is the engine's (sim.h, engine.c);
 * the loop that takes them in time order is run.c. */
#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "sim/replay/heap.h"
#include "sim/replay/replay.h"
#include "sim/replay/scale.h"
#include "sim/replay/sim.h"

static void node_fail(sim *s, int node, gp_time t) {
  gp_node *n = &s->nodes[node];
  if (n->state == GP_NODE_DOWN) {
    if (s->spot_state && s->spot_state[node] == 2) /* reclaimed: its replacement may fail */
      gp__sim_heap_push(&s->heap, t + gp__sim_exp_sample(s, s->cfg->mtbf_hours * 3600),
                        GP__EV_NODE_FAIL, node, 0);
    return;
  }
  if (n->state == GP_NODE_UP)
    for (int g = 0; g < n->n_gpus; g++)
      if (*gp__sim_gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, -1);
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
    if (hit) s->r->gpu_hours_lost_failures += gp__sim_requeue(s, j, t, t);
  }
  gp__sim_heap_push(&s->heap, t + s->cfg->repair_time, GP__EV_NODE_REPAIR, node, 0);
}

static void node_repair(sim *s, int node, gp_time t) {
  gp_node *n = &s->nodes[node];
  if (n->state != GP_NODE_DOWN) return;
  n->state = GP_NODE_UP;
  s->view_rev++;
  for (int g = 0; g < n->n_gpus; g++)
    if (*gp__sim_gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, +1);
  s->up_gpus += n->n_gpus;
  s->nodes_down--;
  gp__sim_heap_push(&s->heap, t + gp__sim_exp_sample(s, s->cfg->mtbf_hours * 3600),
                    GP__EV_NODE_FAIL, node, 0);
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
  gp__sim_requeue_saved(s, j, saved, now);
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
    if (*gp__sim_gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, -1);
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
    gp__sim_view_touch(s, sj->view)->state = GP_JOB_STOPPING;
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
      if (*gp__sim_gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, -1);
  n->state = GP_NODE_DOWN;
  s->view_rev++;
  s->up_gpus -= n->n_gpus;
  s->r->spot.interruptions++;
  for (int i = 0; i < s->nv; i++) {
    int j = s->vmap[i];
    sjob *sj = &s->jobs[j];
    if ((sj->state != SJ_RUNNING && sj->state != SJ_STOPPING) || !runs_on(sj, node)) continue;
    spot_cut(s, j, gp__sim_saved_work(s, sj, t), gp__sim_run_progress(sj, t), t);
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
    if (*gp__sim_gpu_slot(s, node, g) == 0) gp__sim_idle_gpus(s, node, +1);
  s->up_gpus += n->n_gpus;
  s->spot_state[node] = 0;
  s->spot_out--;
  s->spot_life[node]++;
  gp__sim_spot_schedule(s, node, t);
}

/* Handles one heap event; returns true when it may let a job start. */
bool gp__sim_handle(sim *s, const gp__sim_event *e) {
  switch (e->kind) {
  case GP__EV_COMPLETE: {
    sjob *sj = &s->jobs[e->id];
    if (sj->gen != e->gen || (sj->state != SJ_RUNNING && sj->state != SJ_STOPPING)) return false;
    gp__sim_finish(s, e->id, e->t);
    return true;
  }
  case GP__EV_GRACE_END: {
    sjob *sj = &s->jobs[e->id];
    if (sj->gen != e->gen || sj->state != SJ_STOPPING) return false;
    if (sj->spot_stop) {
      gp_time done = gp__sim_run_progress(sj, sj->preempted_at);
      spot_cut(s, e->id, done, done, e->t); /* checkpointed at the notice */
    } else {
      s->r->gpu_hours_lost += gp__sim_requeue(s, e->id, sj->preempted_at, e->t);
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
    return gp__sim_idle_act(s, e->id, e->t);
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
