/* SPDX-License-Identifier: Apache-2.0 */
/* First pass over the view's jobs: resolve queue, priority class and time limit; count
 * what running and stopping jobs hold; decide which pending jobs are schedulable this step
 * and give the others their reason (held, dependency, invalid request, impossible request,
 * nodes down). Schedulable jobs add to their leaf queue's demand. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

#include "core/classify.h"

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
  if (r->mig_profile) {
    ji->kind = GP__R_MIG;
    int s = mig_slices(r->mig_profile);
    if (s < 1 || s > 7) return "The MIG profile is not of the form <N>g.<M>gb.";
    ji->gpus = r->tasks * (s / 7.0);
  } else if (r->gpus_per_task > 0) {
    ji->kind = GP__R_WHOLE;
    ji->gpus = (double)r->tasks * r->gpus_per_task;
  } else if (frac) {
    ji->kind = GP__R_FRACTION;
    double milli = r->gpu_milli;
    if (milli <= 0) { /* asked by memory: the share of the largest GPU it could use */
      int64_t big = c->fleet->max_gpu_mem;
      milli = big > 0 ? (double)r->gpu_mem_mib * GP_GPU_MILLI / (double)big : GP_GPU_MILLI;
      if (milli > GP_GPU_MILLI) milli = GP_GPU_MILLI;
    }
    ji->gpus = r->tasks * milli / GP_GPU_MILLI;
  } else {
    ji->kind = GP__R_CPU;
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

/* Classification's queue sums. While every amount is a whole number (whole-GPU and
 * CPU-only jobs: nearly always) they are kept as integers, per leaf, and the tree's sums
 * are made from them at the end: floating-point sums of whole numbers are exact in any
 * order, so that is what adding each job along its path would give, without a chain of
 * dependent additions through every job. On the first fraction the sums are redone job by
 * job in view order (sums_done). */
static bool gpus_whole(double gpus) {
  return gpus >= 0 && gpus < 2147483648.0 && gpus == (double)(int64_t)gpus;
}

/* (sums: gp__core_memo_rec.sums when a replay knows it, else 0.) */
static inline __attribute__((always_inline)) void add_sums(gp__core_ctx *c, int leaf, double gpus,
                                                           uint8_t sums, bool held) {
  if (c->cls->sums_inexact) return;
  if (sums ? sums != 1 : !gpus_whole(gpus)) {
    c->cls->sums_inexact = true;
    return;
  }
  c->cls->demand_int[leaf] += (int64_t)gpus;
  if (held) c->cls->alloc_int[leaf] += (int64_t)gpus;
}

static void sums_done(gp__core_ctx *c) {
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

/* When a job with this time limit would end if it started now (GP__NEVER: never). */
static gp_time end_if_started(const gp__core_ctx *c, gp_time limit) {
  return limit > 0 && c->now < GP__NEVER - limit ? c->now + limit : GP__NEVER;
}

/* What an eligible job's kind of request tells the early stop. */
static void admit_kind(gp__core_ctx *c, int kind, int whole_per_task) {
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

/* An eligible job joins the step: its queue's demand, its placement key, the early
 * stop's smallest request, the eligible list. */
static void admit(gp__core_ctx *c, int j, int whole_per_task) {
  const gp__core_job *ji = &c->jobs[j];
  add_sums(c, ji->leaf, ji->gpus, 0, false);
  gp__core_keys_add(c, j, end_if_started(c, ji->limit));
  admit_kind(c, ji->kind, whole_per_task);
  c->cls->eligible[c->cls->n_eligible++] = j;
}

/* A replayed eligible job joins the step: its queue's demand and the eligible list now;
 * its placement key and what it tells the early stop are the same for every job of its
 * request token, so they are counted per token (gp__core_tagg) and added once, by admit_kept.
 * Its own shape and key wait until the step looks at it (gp__core_job_keyed). */
static void keep_eligible(gp__core_ctx *c, int j, const gp__core_memo_rec *m) {
  struct gp_sched_memo *mm = c->memo;
  gp__core_tagg *a = &mm->tagg[m->tok];
  if (a->step != mm->step) {
    *a = (gp__core_tagg){.step = mm->step, .min_limit = INT64_MAX, .rep = j};
    gp_xgrow((void **)&c->cls->lists.kept_toks, &c->cls->lists.kept_toks_cap,
             (size_t)c->cls->n_kept_toks + 1, sizeof *c->cls->lists.kept_toks);
    c->cls->lists.kept_toks[c->cls->n_kept_toks++] = m->tok;
  }
  a->n++;
  if (m->limit > 0 && m->limit < a->min_limit) a->min_limit = m->limit;
  add_sums(c, m->leaf, m->gpus, m->sums, false);
  c->cls->eligible[c->cls->n_eligible++] = j;
}

static void admit_kept(gp__core_ctx *c) {
  struct gp_sched_memo *mm = c->memo;
  for (int i = 0; i < c->cls->n_kept_toks; i++) {
    int tok = c->cls->lists.kept_toks[i];
    const gp__core_tagg *a = &mm->tagg[tok];
    int shape = gp__core_shape_by_token(c, a->rep, mm->tokens, tok, mm->step);
    gp__core_keys_add_n(c, shape, a->n, end_if_started(c, a->min_limit == INT64_MAX ? 0 : a->min_limit));
    admit_kind(c, c->jobs[a->rep].kind, mm->rec[a->rep].whole_per_task);
  }
}

void gp__core_job_keyed(gp__core_ctx *c, int j) {
  const gp__core_job *ji = &c->jobs[j];
  if (ji->pkey >= 0 || ji->stat != GP__J_ELIGIBLE) return;
  struct gp_sched_memo *mm = c->memo; /* (only keep_eligible leaves an eligible job unkeyed) */
  int shape = gp__core_shape_by_token(c, j, mm->tokens, mm->rec[j].tok, mm->step);
  gp__core_job_mut(c, j)->pkey = shape;
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
  int deps = job->n_after | job->n_after_ok | job->n_after_any ? gp__core_deps_check(c, j, &dep_msg) : 0;
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
  if (feas == GP__FEAS_MODEL_DOWN) {
    gp__core_job_wait(c, j, GP_PEND_GPU_MODEL_UNAVAILABLE, GP__MSG_MODEL_DOWN);
    return;
  }
  if (feas == GP__FEAS_DOWN) {
    gp__core_job_wait(c, j, GP_PEND_NO_MATCHING_NODES, GP__MSG_NO_MATCH_DOWN);
    return;
  }
  ji->stat = GP__J_ELIGIBLE;
  ji->idp = gp__core_id_prefix(job->id);
  admit(c, j, job->req.gpus_per_task);
  if (c->memo) { /* the order merges these into the one the memo kept (order.c) */
    gp_xgrow((void **)&c->cls->lists.fresh, &c->cls->lists.fresh_cap, (size_t)c->cls->n_fresh + 1,
             sizeof *c->cls->lists.fresh);
    c->cls->lists.fresh[c->cls->n_fresh++] = j;
  }
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
  double g = 0;
  for (int p = 0; p < job->n_placements; p++) g += placement_gpus(c, &job->placements[p]);
  ji->gpus = g;
  const gp_placement *pl0 = job->placements;
  bool one = job->n_placements == 1;
  ru->node = one ? pl0->node : -1;
  ru->whole = one && pl0->mig_instance < 0 && (pl0->gpu_milli <= 0 || pl0->gpu_milli >= GP_GPU_MILLI)
                  ? pl0->gpu_mask : 0;
  ru->cpu = job->req.cpu_milli;
  ru->mem = job->req.mem_mib;
  ru->started = job->started_at;
  ru->since = job->last_checkpoint_at > job->started_at ? job->last_checkpoint_at : job->started_at;
  ru->limit = ji->limit;
  ru->gpus = ji->gpus;
  ru->leaf = ji->leaf;
  ru->prio = ji->prio;
  ru->stopping = job->state == GP_JOB_STOPPING;
  ru->preemptible = ji->preemptible;
}

/* A running or stopping job's part in the step: what its queues hold, what its nodes
 * lose (unless the memo's kept holds have it already), its record for preemption and
 * backfill. */
static inline __attribute__((always_inline)) void count_running(gp__core_ctx *c, int j, uint8_t sums,
                                                               const gp__core_run *ru, size_t *run_cap,
                                                               bool held) {
  if (ru->leaf >= 0) add_sums(c, ru->leaf, ru->gpus, sums, true);
  /* One placement of whole GPUs: held from the record, without reading the view. */
  if (!held &&
      !(ru->node >= 0 && ru->whole && gp__core_hold_whole(c, ru->node, ru->whole, ru->cpu, ru->mem)))
    gp__core_hold_placements(c, j);
  if (ru->stopping) c->cls->n_stopping++;
  else if (ru->preemptible && ru->prio < c->cls->run_min_prio) c->cls->run_min_prio = ru->prio;
  gp_xgrow((void **)&c->cls->run, run_cap, (size_t)c->cls->n_running + 1, sizeof *c->cls->run);
  c->cls->run[c->cls->n_running] = *ru;
  c->cls->running[c->cls->n_running++] = j;
}

/* Keeps what classification derived from job j for the next step (memo.c). Not kept: an
 * ended job (its sentence may live in this plan's arena), a job with dependencies (its
 * state depends on other jobs too), a job without a rev. */
static void remember(gp__core_ctx *c, int j, uint64_t rev, gp__core_memo_rec *m, const gp__core_run *ru) {
  const gp_job *job = &c->view->jobs[j];
  const gp__core_job *ji = &c->jobs[j];
  if (!rev || ji->stat == GP__J_ENDED || (job->n_after | job->n_after_ok | job->n_after_any)) {
    m->rev = 0;
    return;
  }
  c->memo->cls[j] = *ji;
  *m = (gp__core_memo_rec){.rev = rev, .gpus = ji->gpus, .limit = ji->limit, .leaf = ji->leaf,
                      .tok = ji->shape >= 0 ? gp__core_shape_token(c, j, &c->memo->tokens) : -1,
                      .whole_per_task = job->req.gpus_per_task, .stat = ji->stat,
                      .sums = gpus_whole(ji->gpus) ? 1 : 2};
  if (ji->stat == GP__J_RUNNING || ji->stat == GP__J_STOPPING) c->memo->run[j] = *ru;
}

/* Does for job j what classification did when it was remembered, so that everything the
 * step builds from it (sums, lists, the nodes' use, placement keys) comes out the same.
 * Its slot of ctx.jobs (the memo's) still holds that classification: nothing is copied. */
static void replay(gp__core_ctx *c, int j, const gp__core_memo_rec *m, size_t *run_cap) {
  switch (m->stat) {
  case GP__J_RUNNING:
  case GP__J_STOPPING: {
    const gp__core_run *ru = &c->memo->run[j];
    bool held = c->fleet->held && c->fleet->held[j];
    count_running(c, j, m->sums, ru, run_cap, held);
    if (!held && ru->node >= 0 && ru->whole) gp__core_usage_keep(c, j, ru);
    break;
  }
  case GP__J_ELIGIBLE:
    if (m->tok >= 0) {
      keep_eligible(c, j, m);
      break;
    }
    admit(c, j, m->whole_per_task);
    break;
  default: /* (a waiting job is never considered: its shape is not needed) */
    break;
  }
}

int gp__core_classify_jobs(gp__core_ctx *c) {
  const gp_view *v = c->view;
  c->cls->min_whole = GP_MAX_NODE_GPUS + 1;
  c->cls->run_min_prio = INT_MAX;
  c->cls->running = gp__core_salloc(c, ((size_t)v->n_jobs + 1) * sizeof(int));
  /* Room for as many running jobs as the memo's last step had (and some): growing the
   * records one doubling at a time copied them over and over. */
  size_t run_cap = c->memo ? c->memo->n_running + c->memo->n_running / 8 + 16 : 0;
  if (run_cap) c->cls->run = gp_xmalloc(run_cap * sizeof *c->cls->run);
  c->cls->leaf_class = gp__core_salloc(c, ((size_t)c->tree.n + 1) * sizeof(int));
  for (int q = 0; q < c->tree.n; q++) c->cls->leaf_class[q] = -2;
  c->cls->eligible = gp__core_salloc(c, ((size_t)v->n_jobs + 1) * sizeof(int));
  c->cls->alloc_int = gp__core_scalloc(c, (size_t)c->tree.n + 1, sizeof *c->cls->alloc_int);
  c->cls->demand_int = gp__core_scalloc(c, (size_t)c->tree.n + 1, sizeof *c->cls->demand_int);
  c->cls->sums_inexact = v->n_jobs > (1 << 21); /* (so integer sums stay under 2^52) */
  /* Queues with a limit on their path (parents precede children in the tree): jobs of the
   * others skip the limit walk, done for every job never considered. */
  c->cls->path_limited = gp__core_salloc(c, ((size_t)c->tree.n + 1) * sizeof(bool));
  for (int q = 0; q < c->tree.n; q++) {
    int par = c->tree.q[q].parent;
    c->cls->path_limited[q] = c->tree.q[q].limit != GP_NO_LIMIT || (par >= 0 && c->cls->path_limited[par]);
  }
  gp__core_memo_rec *memo = c->memo ? c->memo->rec : NULL;
  if (memo) { /* replays count eligible jobs per token (keep_eligible) */
    c->cls->fresh_bits = gp__core_scalloc(c, (size_t)v->n_jobs / 64 + 1, sizeof *c->cls->fresh_bits);
    struct gp_sched_memo *mm = c->memo;
    size_t words = mm->changed_words;
    if ((size_t)v->n_jobs / 64 + 1 > words) {
      gp_xgrow((void **)&mm->changed, &mm->changed_words, (size_t)v->n_jobs / 64 + 1,
               sizeof *mm->changed);
      memset(mm->changed + words, 0, (mm->changed_words - words) * sizeof *mm->changed);
    }
    size_t n_tok = (size_t)gp__core_tokens_count(c->memo->tokens);
    if (n_tok > c->memo->tagg_cap) {
      size_t cap = c->memo->tagg_cap;
      gp_xgrow((void **)&c->memo->tagg, &c->memo->tagg_cap, n_tok, sizeof *c->memo->tagg);
      memset(c->memo->tagg + cap, 0, (c->memo->tagg_cap - cap) * sizeof *c->memo->tagg);
    }
  }
  const uint64_t *revs = v->job_revs;
  for (int j = 0; j < v->n_jobs; j++) {
    const gp_job *job = &v->jobs[j];
    gp__core_job *ji = &c->jobs[j];
    if (memo && revs[j] && memo[j].rev == revs[j]) {
      replay(c, j, &memo[j], &run_cap);
      continue;
    }
    /* (Only an id is checked for jobs that hold nothing: skip the call for them.) */
    int rc = job->id && job->state != GP_JOB_RUNNING && job->state != GP_JOB_STOPPING
                 ? 0
                 : gp__core_validate_job(c, j);
    if (rc) return rc;
    /* The slot changed: the hold the memo kept for it goes (its old record is still
     * there: remember() below overwrites it). */
    if (memo) {
      gp__core_usage_drop(c, j, &c->memo->run[j]);
      c->cls->fresh_bits[j >> 6] |= 1ull << (j & 63);
      c->memo->changed[j >> 6] |= 1ull << (j & 63);
    }
    gp__core_job_mut(c, j);
    memset(ji, 0, sizeof *ji); /* (ctx.jobs is not zeroed up front) */
    ji->shape = ji->pkey = -1;
    ji->submitted = job->submitted_at;
    ji->leaf = leaf_of(c, job->queue);
    ji->limit = limit_of(c, job, ji->leaf);
    gp__core_run ru;
    switch (job->state) {
    case GP_JOB_RUNNING:
    case GP_JOB_STOPPING:
      classify_running(c, j, &ru);
      count_running(c, j, 0, &ru, &run_cap, false);
      break;
    case GP_JOB_PENDING:
    case GP_JOB_HELD:
      classify_pending(c, j);
      break;
    default:
      ji->stat = GP__J_NONE;
      break;
    }
    if (memo) {
      remember(c, j, revs[j], &memo[j], &ru);
      if (memo[j].rev && (ji->stat == GP__J_RUNNING || ji->stat == GP__J_STOPPING) &&
          ru.node >= 0 && ru.whole)
        gp__core_usage_keep(c, j, &ru);
    }
  }
  if (memo) {
    gp__core_usage_end(c, c->memo->run);
    admit_kept(c);
  }
  sums_done(c);
  if (c->memo) c->memo->n_running = (size_t)c->cls->n_running;
  return 0;
}

/* Slot j of ctx.jobs is about to be written (gp__core_job_mut): note it, so that the step's end
 * puts it back as classification left it. */
void gp__core_journal_add(gp__core_ctx *c, int j) {
  c->memo->journaled[j] = c->memo->step;
  gp_xgrow((void **)&c->cls->lists.journal, &c->cls->lists.journal_cap, (size_t)c->cls->n_journal + 1,
           sizeof *c->cls->lists.journal);
  c->cls->lists.journal[c->cls->n_journal++] = j;
}

/* With a memo, when the step ends: a journaled slot is put back from its record when the
 * record stands for this view's job (a slot without one is classified afresh next step
 * anyway). The lists go back to the memo. */
static void restore_jobs(gp__core_ctx *c) {
  struct gp_sched_memo *m = c->memo;
  const uint64_t *revs = c->view->job_revs;
  for (int i = 0; i < c->cls->n_journal; i++) {
    int j = c->cls->lists.journal[i];
    if (!m->rec[j].rev || m->rec[j].rev != revs[j]) continue;
    c->jobs[j] = m->cls[j];
    c->jobs[j].shape = c->jobs[j].pkey = -1;
  }
  c->cls->n_journal = 0;
  m->lists = c->cls->lists; /* back, at the size they grew to */
  memset(&c->cls->lists, 0, sizeof c->cls->lists);
}

void gp__core_cls_done(gp__core_ctx *c) {
  if (c->memo) restore_jobs(c); /* (the memo's array and lists) */
  else free(c->jobs);
  free(c->cls->run);
  if (c->cls->ids_built) gp__core_strmap_done(&c->cls->ids);
  gp__core_shapes_done(c);
}
