/* SPDX-License-Identifier: Apache-2.0 */
/* Preemption, simulated before anything is evicted (DESIGN.md §2):
 *   pool      a queue that owns a reserved pool takes its nodes back from borrowers;
 *   priority  a pending job preempts strictly lower-priority preemptible jobs of its own
 *             leaf queue (policy.preemption), also when the queue (or a parent) is at its
 *             limit: then the victims must bring it under the limit by the job's GPUs
 *             (gp__core_try_preempt_at_limit);
 *   reclaim   a queue below its fair share takes GPUs back from queues above theirs, only
 *             from their allocation beyond fair share (policy.reclaim, fair-share order).
 * Victims: RUNNING, preemptible, at least policy.min_runtime old, not already chosen. Their
 * order: lowest priority, then least work lost (now - max(last checkpoint, start)), then
 * youngest, then view index (victim_order.c keeps that order). For each task
 * the simulation walks them in that order, accumulating candidates per node, and stops at
 * the first node that can take the task with its accumulated victims: the node whose most
 * valuable victim is least valuable. A gang repeats this per task on the capacity left by
 * earlier tasks (and first tries what earlier tasks' victims already freed). If any task
 * cannot fit, nothing is evicted. An exclusive job (--exclusive) fits a node only once
 * every other task there is among the victims, so it clears a node of preemptible jobs by
 * the same rules; and a job may take the node of an exclusive victim. No ping-pong:
 * reclaim keeps the reclaimer at or below its fair share and every victim queue at or above
 * its own (at every level below the common ancestor), and priority preemption needs a
 * strictly higher priority.
 * The same simulation with STOPPING jobs as the only "victims" answers whether a job would
 * fit once they are gone (WaitingForPreemption). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/preempt_int.h"

/* The pool whose node a job of `leaf` borrows by running there (a pool its queue does not
 * own), or -1: what a pool's owner may take back. */
static int borrowed_pool(const gp__core_ctx *c, int leaf, int node) {
  int pool = c->nodes[node].pool;
  return pool >= 0 && (leaf < 0 || c->fleet->queue_pool[leaf] != pool) ? pool : -1;
}

/* Does running position r borrow a pool's node? */
static bool borrows(const gp__core_ctx *c, int r) {
  const gp__core_run *ru = &c->cls->run[r];
  const gp_job *job = ru->node >= 0 ? NULL : &c->view->jobs[c->cls->running[r]];
  int n_pl = job ? job->n_placements : 1;
  for (int k = 0; k < n_pl; k++)
    if (borrowed_pool(c, ru->leaf, job ? job->placements[k].node : ru->node) >= 0) return true;
  return false;
}

/* Cheap, every step: could any preemption happen at all? With neither priority preemption
 * nor reclaim, only a pool's owner could preempt, and only a borrower: without one (pools
 * that do not lend), nothing can be preempted, and the step need not try. */
void gp__core_preempt_setup(gp__core_ctx *c) {
  c->preempt->pre = gp__core_scalloc(c, 1, sizeof *c->preempt->pre);
  bool others = c->pol->preemption || (c->pol->reclaim && c->pol->order == GP_ORDER_FAIRSHARE);
  bool possible = false;
  for (int r = 0; r < c->cls->n_running && !possible; r++)
    possible = gp__core_victim_able(c, r) && (others || (c->view->n_pools > 0 && borrows(c, r)));
  c->preempt->possible = possible;
}

/* What the plausibility of pool and priority preemption reads: per pool, the running jobs
 * of other queues on its nodes; per leaf, the lowest priority of its victim-able jobs. One
 * pass over the running records, made only for a job of a pool's owner or one above every
 * preemptible running job's priority (reclaim needs neither). One-placement jobs (most)
 * need not read the view: classification kept their node. */
void gp__core_preempt_count(gp__core_ctx *c) {
  const gp_view *v = c->view;
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (p->counted) return;
  p->counted = true;
  int nq = c->tree.n;
  p->leaf_min_prio = gp__core_salloc(c, ((size_t)nq + 1) * sizeof(int));
  for (int q = 0; q < nq; q++) p->leaf_min_prio[q] = INT_MAX;
  p->pool_borrowers = gp__core_scalloc(c, (size_t)v->n_pools + 1, sizeof(int));
  for (int r = 0; r < c->cls->n_running; r++) {
    const gp__core_run *ru = &c->cls->run[r];
    if (v->n_pools > 0) {
      const gp_job *job = ru->node >= 0 ? NULL : &v->jobs[c->cls->running[r]];
      int n_pl = job ? job->n_placements : 1;
      for (int k = 0; k < n_pl; k++) {
        int node = job ? job->placements[k].node : ru->node;
        if (job && !gp__core_first_on_node(job, k)) continue;
        int pool = borrowed_pool(c, ru->leaf, node);
        if (pool >= 0) p->pool_borrowers[pool]++;
      }
    }
    if (gp__core_victim_able(c, r) && ru->leaf >= 0 && ru->prio < p->leaf_min_prio[ru->leaf])
      p->leaf_min_prio[ru->leaf] = ru->prio;
  }
}

/* The stopping jobs and, per node, those on it (in ctx.running order, each once per node;
 * best_node keeps a node's first MAX_ON_NODE in that order). Stopping jobs are few: one
 * pass over the running records finds them, and only they are listed per node. */
void gp__core_preempt_stopping_build(gp__core_ctx *c) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (p->stopping_built) return;
  p->stopping_built = true;
  int nn = c->view->n_nodes;
  p->stopping = gp__core_salloc(c, ((size_t)c->cls->n_stopping + 1) * sizeof(int));
  p->stop_start = gp__core_scalloc(c, (size_t)nn + 2, sizeof(int));
  int n_entries = 0;
  for (int r = 0; r < c->cls->n_running; r++) {
    if (!c->cls->run[r].stopping) continue;
    int j = c->cls->running[r];
    p->stopping[p->n_stopping++] = j;
    const gp_job *job = &c->view->jobs[j];
    for (int k = 0; k < job->n_placements; k++)
      if (gp__core_first_on_node(job, k)) {
        p->stop_start[job->placements[k].node + 1]++;
        n_entries++;
      }
  }
  for (int i = 0; i < nn; i++) p->stop_start[i + 1] += p->stop_start[i];
  p->stop_jobs = gp__core_salloc(c, ((size_t)n_entries + 1) * sizeof(int));
  for (int s = 0; s < p->n_stopping; s++) {
    const gp_job *job = &c->view->jobs[p->stopping[s]];
    for (int k = 0; k < job->n_placements; k++)
      if (gp__core_first_on_node(job, k)) p->stop_jobs[p->stop_start[job->placements[k].node]++] = p->stopping[s];
  }
  for (int i = nn; i > 0; i--) p->stop_start[i] = p->stop_start[i - 1];
  p->stop_start[0] = 0;
}

void gp__core_preempt_alloc_scratch(gp__core_ctx *c) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (p->jstamp) return;
  int nn = c->view->n_nodes, nj = c->view->n_jobs, nq = c->tree.n;
  p->jstamp = gp__core_scalloc(c, (size_t)nj + 1, sizeof(int));
  p->nstamp = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  p->cand_nodes = gp__core_salloc(c, ((size_t)nn + 1) * sizeof(int));
  p->tent_extra = gp__core_scalloc(c, (size_t)nn + 1, sizeof(uint32_t));
  p->tent_cpu = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int64_t));
  p->tent_mem = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int64_t));
  p->tent_tasks = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  p->tent_excl = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  p->touched = gp__core_salloc(c, ((size_t)nn + 1) * sizeof(int));
  p->is_touched = gp__core_scalloc(c, (size_t)nn + 1, sizeof(bool));
  p->removed = gp__core_scalloc(c, (size_t)nq + 1, sizeof(double));
  p->lost = gp__core_scalloc(c, (size_t)nq + 1, sizeof(double));
  p->claimed = gp__core_scalloc(c, (size_t)nq + 1, sizeof(double));
  p->out = gp__core_scalloc(c, (size_t)nj + 1, sizeof(uint8_t));
  p->taken_list = gp__core_salloc(c, ((size_t)nj + 1) * sizeof(int));
  for (int k = 0; k < K_N; k++) {
    p->fail_gpus[k] = gp__core_salloc(c, ((size_t)nq + 1) * sizeof(double));
    for (int q = 0; q < nq; q++) p->fail_gpus[k][q] = 1e300;
  }
  p->fail_prio = gp__core_scalloc(c, (size_t)nq + 1, sizeof(int));
  p->lim_fail_gpus = gp__core_salloc(c, ((size_t)nq + 1) * sizeof(double));
  p->lim_fail_prio = gp__core_scalloc(c, (size_t)nq + 1, sizeof(int));
  p->lim_fail_gen = gp__core_scalloc(c, (size_t)nq + 1, sizeof(uint64_t));
}

/* (Everything preemption builds is the step's scratch memory: it goes with the step.) */
void gp__core_preempt_done(gp__core_ctx *c) {
  c->preempt->pre = NULL;
  free(c->preempt->preemptions.items);
  free(c->preempt->victims.items);
}

/* Victim order: is a a better (cheaper) victim than b? */
static bool victim_before(const gp__core_ctx *c, int a, int b) {
  const gp__core_job *x = &c->jobs[a], *y = &c->jobs[b];
  if (x->prio != y->prio) return x->prio < y->prio;
  const gp_job *ja = &c->view->jobs[a], *jb = &c->view->jobs[b];
  gp_time la = c->now - (ja->last_checkpoint_at > ja->started_at ? ja->last_checkpoint_at : ja->started_at);
  gp_time lb = c->now - (jb->last_checkpoint_at > jb->started_at ? jb->last_checkpoint_at : jb->started_at);
  if (la != lb) return la < lb;
  if (ja->started_at != jb->started_at) return ja->started_at > jb->started_at;
  return a < b;
}

static void add_candidate(gp__core_ctx *c, int v) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (p->jstamp[v] == p->stamp) return;
  p->jstamp[v] = p->stamp;
  const gp_job *job = &c->view->jobs[v];
  for (int k = 0; k < job->n_placements; k++) {
    int node = job->placements[k].node;
    if (p->nstamp[node] != p->stamp) {
      p->nstamp[node] = p->stamp;
      p->cand_nodes[p->n_cand++] = node;
    }
  }
}

static int lca(const gp__core_ctx *c, int a, int b) {
  const gp__core_qtree *t = &c->tree;
  while (a >= 0 && b >= 0 && a != b) {
    if (t->q[a].depth >= t->q[b].depth) a = t->q[a].parent;
    else b = t->q[b].parent;
  }
  return a == b ? a : -1;
}

/* May victim v be taken from its queue for job J's reclaim (with removals so far)? */
static bool reclaim_ok(const gp__core_ctx *c, int J, int v) {
  const gp__core_qtree *t = &c->tree;
  int lj = c->jobs[J].leaf, lv = c->jobs[v].leaf;
  if (lv < 0 || lj < 0 || lv == lj) return false;
  int top = lca(c, lj, lv);
  double gv = c->jobs[v].gpus, gj = c->jobs[J].gpus;
  const struct gp__core_preempt_scratch *p = c->preempt->pre;
  for (int q = lv; q != top; q = t->q[q].parent)
    if (t->q[q].allocated - p->lost[q] - p->removed[q] - gv < t->q[q].fair_share - GP__EPS)
      return false;
  for (int q = lj; q != top; q = t->q[q].parent)
    if (t->q[q].allocated + p->claimed[q] + gj > t->q[q].fair_share + GP__EPS) return false;
  return true;
}

static void add_removed(gp__core_ctx *c, int v, double sign) {
  for (int q = c->jobs[v].leaf; q >= 0; q = c->tree.q[q].parent)
    c->preempt->pre->removed[q] += sign * c->jobs[v].gpus;
}

static void touch(struct gp__core_preempt_scratch *p, int node) {
  if (!p->is_touched[node]) {
    p->is_touched[node] = true;
    p->touched[p->n_touched++] = node;
  }
}

/* Resources victim v frees on `node` (whole GPUs, CPU, memory). */
static void frees_on(const gp__core_ctx *c, int v, int node, uint32_t *mask, int64_t *cpu, int64_t *mem,
                     int *tasks, int *excl) {
  const gp_job *job = &c->view->jobs[v];
  for (int k = 0; k < job->n_placements; k++) {
    const gp_placement *pl = &job->placements[k];
    if (pl->node != node) continue;
    bool whole = pl->mig_instance < 0 && (pl->gpu_milli <= 0 || pl->gpu_milli >= GP_GPU_MILLI);
    if (whole) *mask |= pl->gpu_mask;
    *cpu += job->req.cpu_milli;
    *mem += job->req.mem_mib;
    ++*tasks;
    *excl += job->req.exclusive;
  }
}

/* gp__core_node_fit with what victims free on the node, their tasks too: an exclusive job
 * may take a node once every other task there is a victim. */
static bool fit_freed(gp__core_ctx *c, const gp__core_req *r, int node, uint32_t mask, int64_t cpu, int64_t mem,
                      int tasks, int excl, gp__core_fit *f) {
  if (tasks == 0 && excl == 0) return gp__core_node_fit(c, r, node, mask, cpu, mem, f);
  gp__core_req with = *r;
  with.freed_tasks = tasks;
  with.freed_excl = excl;
  return gp__core_node_fit(c, &with, node, mask, cpu, mem, f);
}

#define MAX_ON_NODE 64

/* One task of a waiting-for-stopping check: the best node and the stopping jobs it counts
 * on there. Returns their number (>= 0) or -1. */
static int best_node(gp__core_ctx *c, const gp__core_req *r, int kind, gp__core_fit *best_fit, int *best_victims) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  int best = -1, best_n = 0, best_worst = -1;
  for (int ci = 0; ci < p->n_cand; ci++) {
    int node = p->cand_nodes[ci];
    int vs[MAX_ON_NODE], nv = 0;
    for (int k = p->stop_start[node]; k < p->stop_start[node + 1] && nv < MAX_ON_NODE; k++) {
      int v = p->stop_jobs[k];
      if (p->jstamp[v] == p->stamp && !(p->out[v] & TAKEN)) vs[nv++] = v;
    }
    for (int a = 1; a < nv; a++) /* insertion sort in victim order */
      for (int b = a; b > 0 && victim_before(c, vs[b], vs[b - 1]); b--) {
        int t = vs[b];
        vs[b] = vs[b - 1];
        vs[b - 1] = t;
      }
    uint32_t extra = p->tent_extra[node];
    int64_t xc = p->tent_cpu[node], xm = p->tent_mem[node];
    int xt = p->tent_tasks[node], xe = p->tent_excl[node];
    gp__core_fit fit;
    int chosen[MAX_ON_NODE], n = 0;
    bool fits = fit_freed(c, r, node, extra, xc, xm, xt, xe, &fit);
    for (int k = 0; k < nv && !fits; k++) {
      int v = vs[k];
      if (kind == K_RECLAIM && !reclaim_ok(c, r->job, v)) continue;
      if (kind == K_RECLAIM) add_removed(c, v, +1);
      frees_on(c, v, node, &extra, &xc, &xm, &xt, &xe);
      chosen[n++] = v;
      fits = fit_freed(c, r, node, extra, xc, xm, xt, xe, &fit);
    }
    if (kind == K_RECLAIM)
      for (int k = 0; k < n; k++) add_removed(c, chosen[k], -1);
    if (!fits) continue;
    int worst = n ? chosen[n - 1] : -1;
    bool better = best < 0;
    if (!better) {
      if ((worst < 0) != (best_worst < 0)) better = worst < 0;
      else if (worst >= 0 && worst != best_worst) better = victim_before(c, worst, best_worst);
      else if (n != best_n) better = n < best_n;
      else better = node < best;
    }
    if (better) {
      best = node;
      best_n = n;
      best_worst = worst;
      *best_fit = fit;
      memcpy(best_victims, chosen, (size_t)n * sizeof(int));
    }
    if (best >= 0 && best_n == 0 && kind == K_STOPPING) break;
  }
  return best < 0 ? -1 : best_n;
}

static void build_vorder(gp__core_ctx *c) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (p->vorder) return;
  int nn = c->view->n_nodes;
  int *order = gp__core_salloc(c, ((size_t)c->cls->n_running + 1) * sizeof *order);
  int n = gp__core_victim_order(c, order);
  p->vorder = gp__core_salloc(c, ((size_t)n + 1) * sizeof *p->vorder);
  for (int k = 0; k < n; k++) {
    const gp__core_run *ru = &c->cls->run[order[k]];
    p->vorder[k] = (gp__core_vrec){.v = c->cls->running[order[k]], .node = ru->node, .whole = ru->whole,
                          .leaf = ru->leaf, .prio = ru->prio, .gpus = ru->gpus,
                          .cpu = ru->cpu, .mem = ru->mem, .excl = ru->exclusive};
  }
  p->n_vorder = n;
  int nq = c->tree.n;
  p->rc_stamp = gp__core_scalloc(c, (size_t)nq + 1, sizeof(int));
  p->rc_ok_max = gp__core_salloc(c, ((size_t)nq + 1) * sizeof(double));
  p->rc_bad_min = gp__core_salloc(c, ((size_t)nq + 1) * sizeof(double));
  p->acc_stamp = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  p->acc_mask = gp__core_scalloc(c, (size_t)nn + 1, sizeof(uint32_t));
  p->acc_cpu = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int64_t));
  p->acc_mem = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int64_t));
  p->acc_tasks = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  p->acc_excl = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  p->acc_head = gp__core_scalloc(c, (size_t)nn + 1, sizeof(int));
  size_t total = 1; /* walk entries: at most one per victim and node */
  for (int k = 0; k < n; k++)
    total += p->vorder[k].node >= 0 ? 1 : (size_t)c->view->jobs[p->vorder[k].v].n_placements;
  p->ent_v = gp__core_salloc(c, total * sizeof(int));
  p->ent_next = gp__core_salloc(c, total * sizeof(int));
}

/* Is the victim at vorder position i a candidate of `kind` for J on `node`? While
 * the queues' removals, losses and claims stay as they are (one rc_epoch), reclaim_ok
 * depends on the victim's leaf and GPUs only, and if it holds for some GPUs it holds for
 * fewer (the victim's side subtracts them, and rounding is monotone): per leaf, the most
 * GPUs known to pass and the fewest known to fail answer most victims without asking. */
static inline __attribute__((always_inline)) bool walk_candidate(const gp__core_ctx *c, int kind, int J,
                                                                 int i, int node) {
  const struct gp__core_preempt_scratch *p = c->preempt->pre;
  const gp__core_job *jj = &c->jobs[J];
  const gp__core_vrec *vr = &p->vorder[i];
  int vl = vr->leaf;
  switch (kind) {
  case K_PRIORITY:
    return vl == jj->leaf && vr->prio < jj->prio;
  case K_RECLAIM:
    if (vl < 0) return false;
    if (p->rc_stamp[vl] != p->rc_epoch) {
      p->rc_stamp[vl] = p->rc_epoch;
      p->rc_ok_max[vl] = -INFINITY;
      p->rc_bad_min[vl] = INFINITY;
    }
    if (vr->gpus <= p->rc_ok_max[vl]) return true;
    if (vr->gpus >= p->rc_bad_min[vl]) return false;
    if (reclaim_ok(c, J, vr->v)) {
      p->rc_ok_max[vl] = vr->gpus;
      return true;
    }
    p->rc_bad_min[vl] = vr->gpus;
    return false;
  default: { /* K_POOL: borrowers on the owner's pool nodes */
    int own = c->fleet->queue_pool[jj->leaf];
    return own >= 0 && borrowed_pool(c, vl, node) == own;
  }
  }
}

/* One task of a preemption: walk candidate victims in victim order, accumulating them per
 * node, until some node can take the task; that node and its accumulated victims win (the
 * node whose most valuable victim is least valuable). Returns the number of victims, or -1. */
static int walk_node(gp__core_ctx *c, const gp__core_req *r, int kind, gp__core_fit *best_fit, int *best_victims) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  /* Capacity freed by victims of earlier tasks may already be enough. */
  for (int k = 0; k < p->n_touched; k++) {
    int node = p->touched[k];
    if (fit_freed(c, r, node, p->tent_extra[node], p->tent_cpu[node], p->tent_mem[node], p->tent_tasks[node],
                  p->tent_excl[node], best_fit))
      return 0;
  }
  int ws = ++p->walk_stamp;
  p->rc_epoch++;
  p->n_ent = 0;
  for (int i = 0; i < p->n_vorder; i++) {
    const gp__core_vrec *vr = &p->vorder[i];
    int v = vr->v, single = vr->node;
    /* Cheapest test first: the kind's condition reads the victim's compact record. */
    if (single >= 0 && (p->acc_stamp[single] == -ws ||
                        !walk_candidate(c, kind, r->job, i, single)))
      continue;
    if (p->out[v]) continue; /* taken, or a victim already */
    const gp_job *job = single >= 0 ? NULL : &c->view->jobs[v];
    int n_pl = single >= 0 ? 1 : job->n_placements;
    for (int k = 0; k < n_pl; k++) {
      int node = single >= 0 ? single : job->placements[k].node;
      if ((job && !gp__core_first_on_node(job, k)) || p->acc_stamp[node] == -ws)
        continue; /* -ws: node excluded for this walk */
      if (single < 0 && !walk_candidate(c, kind, r->job, i, node)) continue;
      if (p->acc_stamp[node] != ws) {
        /* --exclusive is judged with the victims (fit_freed). */
        if (!gp__core_node_static_ok_any_excl(c, r, node)) {
          p->acc_stamp[node] = -ws;
          continue;
        }
        p->acc_stamp[node] = ws;
        p->acc_mask[node] = p->tent_extra[node];
        p->acc_cpu[node] = p->tent_cpu[node];
        p->acc_mem[node] = p->tent_mem[node];
        p->acc_tasks[node] = p->tent_tasks[node];
        p->acc_excl[node] = p->tent_excl[node];
        p->acc_head[node] = -1;
      }
      int e = p->n_ent++;
      p->ent_v[e] = v;
      p->ent_next[e] = p->acc_head[node];
      p->acc_head[node] = e;
      if (single >= 0) {
        p->acc_mask[node] |= vr->whole;
        p->acc_cpu[node] += vr->cpu;
        p->acc_mem[node] += vr->mem;
        p->acc_tasks[node]++;
        p->acc_excl[node] += vr->excl;
      } else {
        frees_on(c, v, node, &p->acc_mask[node], &p->acc_cpu[node], &p->acc_mem[node], &p->acc_tasks[node],
                 &p->acc_excl[node]);
      }
      const gp__core_node *sn = &c->nodes[node];
      if (gp__core_popc((sn->free | p->acc_mask[node]) & sn->whole_ok) < r->gpus) continue; /* cheap */
      if (!fit_freed(c, r, node, p->acc_mask[node], p->acc_cpu[node], p->acc_mem[node], p->acc_tasks[node],
                     p->acc_excl[node], best_fit))
        continue;
      /* The chain is newest first: reverse into victim order. */
      int n = 0;
      for (int x = p->acc_head[node]; x >= 0 && n < MAX_ON_NODE; x = p->ent_next[x]) best_victims[n++] = p->ent_v[x];
      for (int a = 0, b = n - 1; a < b; a++, b--) {
        int t = best_victims[a];
        best_victims[a] = best_victims[b];
        best_victims[b] = t;
      }
      if (kind == K_RECLAIM) {
        /* Each victim was checked alone; together they must keep every queue at its share. */
        bool okc = true;
        int applied = 0;
        for (; applied < n && okc; applied++) {
          okc = reclaim_ok(c, r->job, best_victims[applied]);
          if (okc) add_removed(c, best_victims[applied], +1);
          else break;
        }
        for (int a = 0; a < applied; a++) add_removed(c, best_victims[a], -1);
        p->rc_epoch++; /* adding and taking back need not restore every bit */
        if (!okc) {
          p->acc_stamp[node] = -ws;
          continue;
        }
      }
      return n;
    }
  }
  return -1;
}

static void take_victim(gp__core_ctx *c, int v, int kind) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  p->out[v] |= TAKEN;
  p->taken_list[p->n_taken++] = v;
  if (kind == K_RECLAIM) add_removed(c, v, +1);
  const gp_job *job = &c->view->jobs[v];
  for (int k = 0; k < job->n_placements; k++) {
    if (!gp__core_first_on_node(job, k)) continue;
    int node = job->placements[k].node;
    touch(p, node);
    frees_on(c, v, node, &p->tent_extra[node], &p->tent_cpu[node], &p->tent_mem[node], &p->tent_tasks[node],
             &p->tent_excl[node]);
  }
}

/* (preempt_int.h) */
bool gp__core_preempt_simulate(gp__core_ctx *c, const gp__core_req *r, int kind, bool record, double need,
                                bool place) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  gp__core_preempt_alloc_scratch(c);
  p->stamp++;
  p->n_cand = 0;
  const gp__core_job *J = &c->jobs[r->job];
  if (kind == K_STOPPING) { /* stopping jobs another waiting job already counts on are not free */
    gp__core_preempt_stopping_build(c);
    for (int k = 0; k < p->n_stopping; k++)
      if (!c->jobs[p->stopping[k]].victim) add_candidate(c, p->stopping[k]);
    if (!p->n_cand) return false;
  } else {
    build_vorder(c);
  }
  gp__core_fit *fits = gp_xmalloc((size_t)r->tasks * sizeof *fits);
  int victims[MAX_ON_NODE];
  int placed = 0;
  bool ok = true;
  gp__core_req rest; /* a gang's other tasks: the first one's GPU model (gang.c) */
  for (; place && placed < r->tasks; placed++) {
    rest.placed = fits; /* what --ntasks-per-node counts against */
    rest.n_placed = placed;
    const gp__core_req *rt = placed ? &rest : r;
    int n = kind == K_STOPPING ? best_node(c, rt, kind, &fits[placed], victims)
                               : walk_node(c, rt, kind, &fits[placed], victims);
    if (n < 0) {
      ok = false;
      break;
    }
    for (int k = 0; k < n; k++) take_victim(c, victims[k], kind);
    gp__core_take(c, r, &fits[placed]);
    if (placed == 0) gp__core_gang_rest(c, r, &fits[0], &rest);
    gp__core_gang_opened(&rest, fits, placed);
    touch(p, fits[placed].node);
    p->tent_extra[fits[placed].node] &= ~fits[placed].mask;
  }
  for (int t = placed - 1; t >= 0; t--) gp__core_give(c, r, &fits[t]);
  free(fits);
  if (ok && need > 0) { /* at a limit: more of its queue's victims, cheapest first */
    double got = 0;
    for (int k = 0; k < p->n_taken; k++) got += c->jobs[p->taken_list[k]].gpus;
    for (int i = 0; i < p->n_vorder && got < need - GP__EPS; i++) {
      const gp__core_vrec *vr = &p->vorder[i];
      if (vr->leaf != J->leaf || vr->prio >= J->prio || p->out[vr->v]) continue;
      take_victim(c, vr->v, kind);
      got += vr->gpus;
    }
    if (got < need - GP__EPS) ok = false; /* transactional: all it needs, or nothing */
  }
  if (ok && p->n_taken == 0 && kind != K_STOPPING) ok = false; /* it fits without victims */
  for (int k = 0; k < p->n_taken; k++) {
    int v = p->taken_list[k];
    p->out[v] &= (uint8_t)~TAKEN;
    if (kind == K_RECLAIM) add_removed(c, v, -1);
    if (!ok || !record) continue;
    /* The victim (or the stopping job counted on) is spoken for in this step. */
    gp__core_job_mut(c, v)->victim = true;
    p->out[v] |= VICTIM;
    *(int *)gp__core_vec_push(&c->preempt->victims, sizeof(int)) = v;
    for (int q = c->jobs[v].leaf; q >= 0; q = c->tree.q[q].parent) p->lost[q] += c->jobs[v].gpus;
    c->cls->alloc_gen++;
    if (kind == K_STOPPING) continue;
    gp_plan_preemption *pe = gp__core_vec_push(&c->preempt->preemptions, sizeof *pe);
    pe->job = v;
    pe->for_job = r->job;
    pe->kind = kind == K_PRIORITY ? GP_PREEMPT_PRIORITY : GP_PREEMPT_RECLAIM;
  }
  if (ok && record)
    for (int q = c->jobs[r->job].leaf; q >= 0; q = c->tree.q[q].parent)
      p->claimed[q] += c->jobs[r->job].gpus;
  p->n_taken = 0;
  for (int k = 0; k < p->n_touched; k++) {
    int node = p->touched[k];
    p->is_touched[node] = false;
    p->tent_extra[node] = 0;
    p->tent_cpu[node] = p->tent_mem[node] = 0;
    p->tent_tasks[node] = p->tent_excl[node] = 0;
  }
  p->n_touched = 0;
  return ok;
}

bool gp__core_fits_after_stopping(gp__core_ctx *c, const gp__core_req *r) {
  if (!c->preempt->pre || c->cls->n_stopping == 0) return false;
  if (r->kind != GP__R_WHOLE && r->kind != GP__R_CPU) return false;
  return gp__core_preempt_simulate(c, r, K_STOPPING, true, 0, true);
}

/* An upper bound of what reclaim could free for a job of `leaf`: every other leaf's
 * allocation beyond its fair share, less what earlier reclaims in this step took. */
static double reclaimable(gp__core_ctx *c, int leaf) {
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  if (!p->rcl) {
    p->rcl = gp__core_salloc(c, ((size_t)c->tree.n + 1) * sizeof *p->rcl);
    p->rcl_gen = gp__core_scalloc(c, (size_t)c->tree.n + 1, sizeof *p->rcl_gen);
  }
  /* The same until an allocation or a victim changes: a step asks it for every job it
   * considers, and starts and victims are few. */
  if (p->rcl_gen[leaf] == c->cls->alloc_gen + 1) return p->rcl[leaf];
  double sum = 0;
  for (int q = 0; q < c->tree.n; q++) {
    if (q == leaf || !gp__core_qtree_is_leaf(&c->tree, q)) continue;
    double over = c->tree.q[q].allocated - (c->preempt->pre->lost ? c->preempt->pre->lost[q] : 0) - c->tree.q[q].fair_share;
    if (over > 0) sum += over;
  }
  p->rcl_gen[leaf] = c->cls->alloc_gen + 1;
  return p->rcl[leaf] = sum;
}

/* Could gp__core_try_preempt still act for some job of `leaf` asking at least min_gpus and at
 * most max_prio? False only when every kind is implausible for such a job or already
 * failed for one no bigger (each test below is monotone in the job's GPUs and priority,
 * the way gp__core_try_preempt applies it). */
bool gp__core_preempt_may_act(gp__core_ctx *c, int leaf, double min_gpus, int max_prio) {
  if (!c->preempt->possible || c->preempt->attempts >= GP__MAX_PREEMPT_ATTEMPTS) return false;
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  double fail[K_STOPPING];
  for (int k = 0; k < K_STOPPING; k++) fail[k] = p->fail_gpus[k] ? p->fail_gpus[k][leaf] : 1e300;
  int own = c->fleet->queue_pool[leaf];
  if (own >= 0 && (!p->counted || p->pool_borrowers[own] > 0) && min_gpus < fail[K_POOL]) return true;
  int min_prio = p->counted ? p->leaf_min_prio[leaf] : c->cls->run_min_prio;
  if (c->pol->preemption && min_prio < max_prio &&
      !(min_gpus >= fail[K_PRIORITY] && p->fail_prio && max_prio <= p->fail_prio[leaf]))
    return true;
  const gp__core_queue *lq = &c->tree.q[leaf];
  return c->pol->reclaim && c->pol->order == GP_ORDER_FAIRSHARE &&
         lq->allocated + (p->claimed ? p->claimed[leaf] : 0) + min_gpus <= lq->fair_share + GP__EPS &&
         reclaimable(c, leaf) + GP__EPS >= min_gpus && min_gpus < fail[K_RECLAIM];
}

bool gp__core_try_preempt(gp__core_ctx *c, gp__core_req *r) {
  const gp__core_job *J = &c->jobs[r->job];
  if (!c->preempt->possible || J->leaf < 0) return false;
  if (J->kind != GP__R_WHOLE && J->kind != GP__R_CPU) return false;
  struct gp__core_preempt_scratch *p = c->preempt->pre;
  const gp__core_queue *lq = &c->tree.q[J->leaf];
  int own = c->fleet->queue_pool[J->leaf];
  /* Without a pool of its own, and with no preemptible running job below the job's
   * priority, neither pool nor priority preemption can act: no need to count for them. */
  if (own >= 0 || (c->pol->preemption && c->cls->run_min_prio < J->prio)) gp__core_preempt_count(c);
  bool plausible[K_N] = {
      [K_POOL] = own >= 0 && p->pool_borrowers[own] > 0,
      [K_PRIORITY] = c->pol->preemption && p->counted && p->leaf_min_prio[J->leaf] < J->prio,
      [K_RECLAIM] = c->pol->reclaim && c->pol->order == GP_ORDER_FAIRSHARE &&
                    lq->allocated + (p->claimed ? p->claimed[J->leaf] : 0) + J->gpus <=
                        lq->fair_share + GP__EPS &&
                    reclaimable(c, J->leaf) + GP__EPS >= J->gpus,
  };
  for (int kind = 0; kind < K_STOPPING; kind++) {
    if (!plausible[kind]) continue;
    gp__core_preempt_alloc_scratch(c);
    if (J->gpus >= p->fail_gpus[kind][J->leaf] &&
        (kind != K_PRIORITY || J->prio <= p->fail_prio[J->leaf]))
      continue;
    if (c->preempt->attempts >= GP__MAX_PREEMPT_ATTEMPTS) return false;
    c->preempt->attempts++;
    gp__core_req_need(c, r);
    if (gp__core_preempt_simulate(c, r, kind, true, 0, true)) return true;
    if (J->gpus < p->fail_gpus[kind][J->leaf]) {
      p->fail_gpus[kind][J->leaf] = J->gpus;
      if (kind == K_PRIORITY) p->fail_prio[J->leaf] = J->prio;
    }
  }
  return false;
}

