/* SPDX-License-Identifier: Apache-2.0 */
/* First pass over the view's jobs: resolve queue, priority class and time limit; count
 * what running and stopping jobs hold; decide which pending jobs are schedulable this step
 * and give the others their reason (held, dependency, invalid request, impossible request,
 * nodes down). Schedulable jobs add to their leaf queue's demand. The pass (classify.c) runs
 * every slot through here, or, with a memo, classify_memo.c replays the slots it remembers
 * and classifies the others here. */
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

#include "core/classify_pass.h"

void gp__core_job_wait(gp__core_ctx *c, int j, gp_pending_reason r, const char *msg) {
  gp__core_job *ji = gp__core_job_mut(c, j);
  ji->stat = GP__J_WAITING;
  ji->reason = (uint8_t)r;
  ji->msg = msg;
}

void gp__core_job_end(gp__core_ctx *c, int j, gp_end_reason r, const char *msg) {
  c->cls->n_ended++;
  gp__core_job *ji = gp__core_job_mut(c, j);
  ji->stat = GP__J_ENDED;
  ji->end_reason = (uint8_t)r;
  ji->msg = msg;
}

void gp__core_queue_add_alloc(gp__core_ctx *c, int leaf, double gpus) {
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) c->tree.q[q].allocated += gpus;
  c->cls->alloc_gen++;
}

int gp__core_queue_over_limit(const gp__core_ctx *c, int leaf, double extra) {
  if (c->cls->path_limited && leaf >= 0 && !c->cls->path_limited[leaf]) return -1;
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) {
    const gp__core_queue *qq = &c->tree.q[q];
    if (qq->limit != GP_NO_LIMIT && qq->allocated + extra > qq->limit + GP__EPS) return q;
  }
  return -1;
}

static int find_class(const gp__core_ctx *c, const char *name) {
  /* Callers usually share one string per class name: compare pointers first. */
  for (int i = 0; i < c->n_classes; i++)
    if (c->classes[i].name == name) return i;
  for (int i = 0; i < c->n_classes; i++)
    if (strcmp(c->classes[i].name, name) == 0) return i;
  return -1;
}

int gp__core_class_of(const gp__core_ctx *c, const gp_job *job, int leaf) {
  if (job->priority_class) {
    /* Cached by pointer (callers share one string per class name); -2: not cached. */
    unsigned h = gp__core_ptr_slot(job->priority_class, 4);
    if (c->cls->ccache_ptr[h] == job->priority_class) return c->cls->ccache_val[h];
    int k = find_class(c, job->priority_class);
    c->cls->ccache_ptr[h] = job->priority_class;
    c->cls->ccache_val[h] = k;
    return k;
  }
  if (leaf >= 0 && c->cls->leaf_class && c->cls->leaf_class[leaf] != -2) return c->cls->leaf_class[leaf];
  int k = c->default_class;
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) {
    int vi = c->tree.q[q].view_index;
    if (vi >= 0 && c->view->queues[vi].default_priority) {
      k = find_class(c, c->view->queues[vi].default_priority);
      break;
    }
  }
  if (leaf >= 0 && c->cls->leaf_class) c->cls->leaf_class[leaf] = k;
  return k;
}

static gp_time limit_of(const gp__core_ctx *c, const gp_job *job, int leaf) {
  if (job->time_limit > 0) return job->time_limit;
  for (int q = leaf; q >= 0; q = c->tree.q[q].parent) {
    int vi = c->tree.q[q].view_index;
    if (vi >= 0 && c->view->queues[vi].default_time_limit > 0)
      return c->view->queues[vi].default_time_limit;
  }
  return c->pol->default_time_limit > 0 ? c->pol->default_time_limit : 0;
}

/* Compute slices of a MIG profile name ("3g.40gb" -> 3), 0 when unreadable. */
static int mig_slices(const char *profile) {
  int n = 0;
  for (const char *p = profile; p && *p >= '0' && *p <= '9' && n < 100; p++) n = n * 10 + (*p - '0');
  return n;
}

/* GPUs a placement holds, fractions as fractions. */
static double placement_gpus(const gp__core_ctx *c, const gp_placement *p) {
  int n = gp__core_popc(p->gpu_mask);
  if (p->mig_instance >= 0) {
    const gp_node *node = &c->view->nodes[p->node];
    int g = p->gpu_mask ? __builtin_ctz(p->gpu_mask) : 0;
    if (node->gpus && g < node->n_gpus && p->mig_instance < node->gpus[g].n_mig)
      return mig_slices(node->gpus[g].mig[p->mig_instance].profile) / 7.0;
    return 1.0 / 7.0;
  }
  int milli = p->gpu_milli > 0 && p->gpu_milli < GP_GPU_MILLI ? p->gpu_milli : GP_GPU_MILLI;
  return n * (milli / (double)GP_GPU_MILLI);
}

/* Checks a pending job's request; returns NULL when well-formed, else a sentence. Sets the
 * request kind and GPUs asked. */
static const char *check_request(gp__core_ctx *c, int j) {
  const gp_job *job = &c->view->jobs[j];
  const gp_request *r = &job->req;
  gp__core_job *ji = &c->jobs[j];
  if (r->tasks < 1 || r->tasks > 100000) return "The request needs between 1 and 100000 tasks.";
  if (r->gpus_per_task < 0) return "The request asks for a negative number of GPUs.";
  if (r->gpu_milli < 0 || r->gpu_milli >= GP_GPU_MILLI)
    return "A GPU fraction must be between 0.001 and 0.999 of a GPU.";
  if (r->gpu_mem_mib < 0 || r->min_gpu_mem_mib < 0 || r->cpu_milli < 0 || r->mem_mib < 0)
    return "The request asks for a negative amount of memory or CPU.";
  if (r->n_gpu_models < 0 || (r->n_gpu_models > 0 && !r->gpu_models) || r->n_node_selector < 0 ||
      (r->n_node_selector > 0 && !r->node_selector))
    return "The request's GPU model list or node selector is malformed.";
  for (int i = 0; i < r->n_gpu_models; i++)
    if (!r->gpu_models[i]) return "The request's GPU model list is malformed.";
  for (int i = 0; i < r->n_node_selector; i++)
    if (!r->node_selector[i].key || !r->node_selector[i].value)
      return "The request's node selector is malformed.";
  bool frac = r->gpu_milli > 0 || r->gpu_mem_mib > 0;
  if ((r->gpus_per_task > 0) + frac + (r->mig_profile != NULL) > 1)
    return "A request asks for whole GPUs, a GPU fraction or a MIG instance, not several.";
  ji->kind = gp__core_request_kind(r);
  switch (ji->kind) {
  case GP__R_MIG: {
    int s = mig_slices(r->mig_profile);
    if (s < 1 || s > 7) return "The MIG profile is not of the form <N>g.<M>gb.";
    ji->gpus = r->tasks * (s / 7.0);
    break;
  }
  case GP__R_WHOLE:
    ji->gpus = (double)r->tasks * r->gpus_per_task;
    break;
  case GP__R_FRACTION: {
    double milli = r->gpu_milli;
    if (milli <= 0) { /* asked by memory: the share of the largest GPU it could use */
      int64_t big = c->fleet->max_gpu_mem;
      milli = big > 0 ? (double)r->gpu_mem_mib * GP_GPU_MILLI / (double)big : GP_GPU_MILLI;
      if (milli > GP_GPU_MILLI) milli = GP_GPU_MILLI;
    }
    ji->gpus = r->tasks * milli / GP_GPU_MILLI;
    break;
  }
  default:
    ji->gpus = 0;
  }
  return NULL;
}

/* "No node in the cluster has a GPU of model B200 or H200." (ended jobs only: rare). */
static const char *model_message(gp__core_ctx *c, const gp_request *r) {
  gp_buf b;
  gp_buf_init(&b, 1024);
  gp_buf_puts(&b, "No node in the cluster has a GPU of model ");
  for (int i = 0; i < r->n_gpu_models && i < 8; i++)
    gp_buf_printf(&b, "%s%s", i ? " or " : "", r->gpu_models[i]);
  gp_buf_puts(&b, ".");
  const char *m = gp_buf_truncated(&b) ? GP__MSG_MODEL_UNKNOWN : gp_arena_strdup(c->arena, b.data);
  gp_buf_done(&b);
  return m;
}

void gp__core_sums_done(gp__core_ctx *c) {
  gp__core_qtree *t = &c->tree;
  if (!c->cls->sums_inexact) {
    /* Children follow their parents in the tree: add each queue into its parent, last first. */
    for (int q = t->n - 1; q >= 0; q--)
      if (t->q[q].parent >= 0) c->cls->alloc_int[t->q[q].parent] += c->cls->alloc_int[q];
    for (int q = 0; q < t->n; q++) {
      t->q[q].allocated += (double)c->cls->alloc_int[q];
      t->q[q].demand += (double)c->cls->demand_int[q];
    }
    return;
  }
  for (int j = 0; j < c->view->n_jobs; j++) {
    const gp__core_job *ji = &c->jobs[j];
    if (ji->leaf < 0) continue;
    if (ji->stat == GP__J_RUNNING || ji->stat == GP__J_STOPPING) {
      gp__core_queue_add_alloc(c, ji->leaf, ji->gpus);
      t->q[ji->leaf].demand += ji->gpus;
    } else if (ji->stat == GP__J_ELIGIBLE) {
      t->q[ji->leaf].demand += ji->gpus;
    }
  }
}

void gp__core_admit_kind(gp__core_ctx *c, int kind, int whole_per_task) {
  if (kind == GP__R_WHOLE) {
    if (whole_per_task < c->cls->min_whole) c->cls->min_whole = whole_per_task;
    /* A one-GPU task may still take a timeslice replica when no whole GPU is free, so the
     * free-GPU index alone cannot tell that nothing fits. */
    if (whole_per_task == 1 && c->fleet->has_timeslice) c->cls->other_eligible = true;
  } else {
    c->cls->other_eligible = true;
    if (kind == GP__R_MIG) c->cls->mig_eligible = true;
  }
}

void gp__core_admit(gp__core_ctx *c, int j, int whole_per_task) {
  const gp__core_job *ji = &c->jobs[j];
  gp__core_add_sums(c, ji->leaf, ji->gpus, 0, false);
  gp__core_keys_add(c, j, gp__core_end_if_started(c, ji->limit));
  gp__core_admit_kind(c, ji->kind, whole_per_task);
  c->cls->eligible[c->cls->n_eligible++] = j;
}

static void classify_pending(gp__core_ctx *c, int j) {
  const gp_job *job = &c->view->jobs[j];
  gp__core_job *ji = &c->jobs[j];
  if (ji->leaf < 0) {
    int q = gp__core_qtree_find(&c->tree, job->queue);
    gp__core_job_end(c, j, GP_END_INVALID_REQUEST, q >= 0 ? GP__MSG_NOT_LEAF : GP__MSG_NO_QUEUE);
    return;
  }
  int cls = gp__core_class_of(c, job, ji->leaf);
  if (cls < 0) {
    gp__core_job_end(c, j, GP_END_INVALID_REQUEST, GP__MSG_NO_CLASS);
    return;
  }
  ji->prio = c->classes[cls].priority;
  ji->preemptible = c->classes[cls].preemptible;
  const char *bad = check_request(c, j);
  if (bad) {
    gp__core_job_end(c, j, GP_END_INVALID_REQUEST, bad);
    return;
  }
  const char *dep_msg = NULL;
  int deps = gp__core_has_deps(job) ? gp__core_deps_check(c, j, &dep_msg) : 0;
  if (deps < 0) {
    gp__core_job_end(c, j, GP_END_DEPENDENCY_NEVER_SATISFIED, dep_msg);
    return;
  }
  int feas = gp__core_feasible(c, j);
  if (feas == GP__FEAS_MODEL_UNKNOWN) {
    gp__core_job_end(c, j, GP_END_GPU_MODEL_UNKNOWN, model_message(c, &job->req));
    return;
  }
  if (feas == GP__FEAS_NEVER) {
    gp__core_job_end(c, j, GP_END_NO_MATCHING_NODES, GP__MSG_NEVER_NODES);
    return;
  }
  if (job->state == GP_JOB_HELD) {
    gp__core_job_wait(c, j, GP_PEND_HELD, GP__MSG_HELD);
    return;
  }
  if (deps > 0) {
    gp__core_job_wait(c, j, GP_PEND_DEPENDENCY, dep_msg);
    return;
  }
  if (job->begin_at > c->now) {
    gp__core_job_wait(c, j, GP_PEND_BEGIN_TIME, GP__MSG_BEGIN);
    return;
  }
  if (feas == GP__FEAS_MODEL_DOWN) {
    gp__core_job_wait(c, j, GP_PEND_GPU_MODEL_UNAVAILABLE, GP__MSG_MODEL_DOWN);
    return;
  }
  if (feas == GP__FEAS_DOWN) {
    gp__core_job_wait(c, j, GP_PEND_NO_MATCHING_NODES, GP__MSG_NO_MATCH_DOWN);
    return;
  }
  if (feas == GP__FEAS_TEMPLATE || feas == GP__FEAS_TEMPLATE_MODEL) {
    gp__core_job_wait(c, j, feas == GP__FEAS_TEMPLATE ? GP_PEND_NO_MATCHING_NODES : GP_PEND_GPU_MODEL_UNAVAILABLE,
                      GP__MSG_TEMPLATE_ONLY);
    return;
  }
  ji->stat = GP__J_ELIGIBLE;
  ji->idp = gp__core_id_key(job->id);
  gp__core_admit(c, j, job->req.gpus_per_task);
}

/* The leaf queue a job names, or -1 (unknown, or not a leaf). */
static int leaf_of(gp__core_ctx *c, const char *name) {
  if (!name) return -1;
  unsigned h = gp__core_ptr_slot(name, 10);
  if (c->cls->qcache_ptr[h] == name) return c->cls->qcache_val[h];
  int q = gp__core_qtree_find(&c->tree, name);
  if (q >= 0 && !gp__core_qtree_is_leaf(&c->tree, q)) q = -1;
  c->cls->qcache_ptr[h] = name;
  c->cls->qcache_val[h] = q;
  return q;
}

static void classify_running(gp__core_ctx *c, int j, gp__core_run *ru) {
  const gp_job *job = &c->view->jobs[j];
  gp__core_job *ji = &c->jobs[j];
  ji->stat = job->state == GP_JOB_RUNNING ? GP__J_RUNNING : GP__J_STOPPING;
  int cls = gp__core_class_of(c, job, ji->leaf);
  if (cls < 0) cls = c->default_class;
  ji->prio = c->classes[cls].priority;
  ji->preemptible = c->classes[cls].preemptible;
  double g = 0, spot = 0;
  for (int p = 0; p < job->n_placements; p++) {
    double pg = placement_gpus(c, &job->placements[p]);
    g += pg;
    int node = job->placements[p].node;
    if (node >= 0 && node < c->view->n_nodes && c->view->nodes[node].capacity == GP_CAP_SPOT)
      spot += pg;
  }
  ji->gpus = g;
  const gp_placement *pl0 = job->placements;
  bool one = job->n_placements == 1;
  ru->node = one ? pl0->node : -1;
  ru->whole = one && pl0->mig_instance < 0 && (pl0->gpu_milli <= 0 || pl0->gpu_milli >= GP_GPU_MILLI)
                  ? pl0->gpu_mask : 0;
  ru->cpu = job->req.cpu_milli;
  ru->mem = job->req.mem_mib;
  ru->exclusive = job->req.exclusive;
  ru->started = job->started_at;
  ru->since = job->last_checkpoint_at > job->started_at ? job->last_checkpoint_at : job->started_at;
  ru->limit = ji->limit;
  ru->gpus = ji->gpus;
  ru->spot = spot;
  ru->leaf = ji->leaf;
  ru->prio = ji->prio;
  ru->stopping = job->state == GP_JOB_STOPPING;
  ru->preemptible = ji->preemptible;
}

void gp__core_classify_slot(gp__core_ctx *c, int j, gp__core_run *ru, size_t *run_cap) {
  const gp_job *job = &c->view->jobs[j];
  gp__core_job *ji = gp__core_job_mut(c, j);
  memset(ji, 0, sizeof *ji); /* (ctx.jobs is not zeroed up front) */
  ji->shape = ji->pkey = -1;
  ji->submitted = job->submitted_at;
  ji->leaf = leaf_of(c, job->queue);
  ji->limit = limit_of(c, job, ji->leaf);
  if (job->dep_only) {
    ji->stat = GP__J_NONE;
    return;
  }
  switch (job->state) {
  case GP_JOB_RUNNING:
  case GP_JOB_STOPPING:
    classify_running(c, j, ru);
    gp__core_count_running(c, j, 0, ru, run_cap, false);
    break;
  case GP_JOB_PENDING:
  case GP_JOB_HELD:
    classify_pending(c, j);
    break;
  default:
    ji->stat = GP__J_NONE;
    break;
  }
}
