/* SPDX-License-Identifier: Apache-2.0 */
/* Reads the jobs of a snapshot (see snapshot.h and docs/plan-format.md): what each asks
 * for, its state, where its tasks run and what it depends on. Beyond types, it checks what
 * would make the view inconsistent: unknown queues, classes or nodes, GPU indexes out of
 * range, placements that do not match the request, and GPUs held twice. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "snapshot/policy_read.h"
#include "snapshot/read_util.h"
#include "snapshot/snapshot.h"

/* Occupancy of one GPU by the running jobs read so far, to refuse double bookings. */
typedef struct gpu_use {
  int milli;         /* compute taken by whole GPUs and fractions */
  int holders;       /* jobs on it */
  uint32_t mig_busy; /* bit i: MIG instance i is held */
  bool whole;        /* a whole-GPU job holds it */
  const char *holder; /* the last job booked on it, for messages */
} gpu_use;

typedef struct job_ctx {
  const gp_doc *d;
  const char *path;
  const gp_policy *policy;
  const gp_node *nodes;
  int n_nodes;
  gp__snap_names node_ix;
  const gp_queue *queues;
  int n_queues;
  gp__snap_names queue_ix;
  int *child_of;  /* per queue: a listed child's index, or -1 for a leaf */
  gpu_use **use; /* per node, per GPU; allocated on first use */
  gp_arena *arena;
  gp_err *err;
} job_ctx;

#define FIELD(buf, i, key) gp__snap_field(buf, sizeof buf, c->path, i, key)

static int opt_int(job_ctx *c, const gp_doc_node *m, int i, const char *key, int64_t lo,
                   int64_t hi, int64_t *v) {
  const gp_doc_node *n = gp_doc_get(m, key);
  if (!n) return 0;
  char f[160];
  FIELD(f, i, key);
  int64_t x;
  int r = gp_doc_int(c->d, n, f, &x, c->err);
  if (r) return r;
  if (x < lo || x > hi)
    return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f, "must be %lld..%lld",
                      (long long)lo, (long long)hi);
  *v = x;
  return 0;
}

/* A list of names, or one name alone ("gpu_type: H100-80GB"). */
static int read_names(job_ctx *c, const gp_doc_node *n, const char *f, int max,
                      const char *const **ret, int *ret_n) {
  int r;
  if (n->kind == GP_DOC_SCALAR) {
    const char **one = gp_arena_alloc(c->arena, sizeof *one);
    if ((r = gp__snap_read_name(c->d, n, f, c->arena, &one[0], c->err))) return r;
    *ret = one;
    *ret_n = 1;
    return 0;
  }
  if ((r = gp__snap_list(c->d, n, f, max, c->err))) return r;
  const char **v = gp_arena_alloc(c->arena, (size_t)(n->n ? n->n : 1) * sizeof *v);
  for (int i = 0; i < n->n; i++) {
    char fi[200];
    snprintf(fi, sizeof fi, "%s[%d]", f, i);
    if ((r = gp__snap_read_name(c->d, n->items[i], fi, c->arena, &v[i], c->err))) return r;
  }
  *ret = v;
  *ret_n = n->n;
  return 0;
}

/* `after_ok` or its Slurm spelling `afterok` (not both). */
static int read_deps(job_ctx *c, const gp_doc_node *m, int i, const char *key,
                     const char *alias, const char *const **ret, int *ret_n) {
  const gp_doc_node *a = gp_doc_get(m, key), *b = alias ? gp_doc_get(m, alias) : NULL;
  char f[160];
  if (a && b) {
    FIELD(f, i, alias);
    return gp_err_set(c->err, GP_EINVAL, c->d->name, b->line, f, "give %s or %s, not both",
                      key, alias);
  }
  if (!a && !b) return 0;
  FIELD(f, i, a ? key : alias);
  return read_names(c, a ? a : b, f, GP_READ_MAX_DEPS, ret, ret_n);
}

static int read_request(job_ctx *c, const gp_doc_node *m, int i, gp_job *job) {
  gp_request *q = &job->req;
  const gp_doc_node *n;
  char f[160];
  int r;
  int64_t v = 1;
  if ((r = opt_int(c, m, i, "tasks", 1, GP_READ_MAX_TASKS, &v))) return r;
  q->tasks = (int)v;
  v = 0;
  if ((r = opt_int(c, m, i, "tasks_per_node", 1, GP_READ_MAX_TASKS, &v))) return r;
  q->max_tasks_per_node = (int)v;
  v = 0;
  if ((r = opt_int(c, m, i, "nodes", 1, GP_READ_MAX_TASKS, &v))) return r;
  q->nodes = (int)v;
  const gp_doc_node *gpus = gp_doc_get(m, "gpus"), *frac = gp_doc_get(m, "gpu_fraction"),
                    *gmem = gp_doc_get(m, "gpu_mem"), *mig = gp_doc_get(m, "mig");
  if ((gpus != NULL) + (frac != NULL) + (gmem != NULL) + (mig != NULL) > 1) {
    const gp_doc_node *second = mig ? mig : gmem ? gmem : frac;
    FIELD(f, i, mig ? "mig" : gmem ? "gpu_mem" : "gpu_fraction");
    return gp_err_set(c->err, GP_EINVAL, c->d->name, second->line, f,
                      "give one of gpus, gpu_fraction, gpu_mem or mig");
  }
  v = 0;
  if ((r = opt_int(c, m, i, "gpus", 0, GP_MAX_NODE_GPUS, &v))) return r;
  q->gpus_per_task = (int)v;
  if (frac) {
    double x;
    FIELD(f, i, "gpu_fraction");
    if ((r = gp_doc_double(c->d, frac, f, &x, c->err))) return r;
    if (!(x > 0 && x < 1))
      return gp_err_set(c->err, GP_EINVAL, c->d->name, frac->line, f,
                        "must be above 0 and below 1 (ask gpus: 1 for a whole GPU)");
    int milli = (int)lround(x * GP_GPU_MILLI);
    q->gpu_milli = milli < 1 ? 1 : milli > GP_GPU_MILLI - 1 ? GP_GPU_MILLI - 1 : milli;
  }
  if (gmem) {
    FIELD(f, i, "gpu_mem");
    if ((r = gp_doc_mem_mib(c->d, gmem, f, &q->gpu_mem_mib, c->err))) return r;
    if (q->gpu_mem_mib <= 0)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, gmem->line, f, "must be above 0");
  }
  if (mig) {
    FIELD(f, i, "mig");
    if ((r = gp__snap_read_name(c->d, mig, f, c->arena, &q->mig_profile, c->err))) return r;
  }
  if ((n = gp_doc_get(m, "min_gpu_mem"))) {
    FIELD(f, i, "min_gpu_mem");
    if ((r = gp_doc_mem_mib(c->d, n, f, &q->min_gpu_mem_mib, c->err))) return r;
  }
  if ((n = gp_doc_get(m, "cpus"))) {
    double x;
    FIELD(f, i, "cpus");
    if ((r = gp_doc_double(c->d, n, f, &x, c->err))) return r;
    if (!isfinite(x) || x < 0 || x > 1e6)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f,
                        "must be a number of CPU cores between 0 and 1000000");
    q->cpu_milli = (int64_t)llround(x * 1000);
  }
  bool found;
  if ((r = gp__snap_read_host_mem(c->d, m, c->path, i, &q->mem_mib, &found, c->err))) return r;
  if ((n = gp_doc_get(m, "gpu_type"))) {
    FIELD(f, i, "gpu_type");
    if ((r = read_names(c, n, f, GP_READ_MAX_GPU_TYPES, &q->gpu_models, &q->n_gpu_models)))
      return r;
  }
  if ((n = gp_doc_get(m, "node_selector"))) {
    gp_label *l;
    FIELD(f, i, "node_selector");
    if ((r = gp__snap_read_labels(c->d, n, f, c->arena, &l, &q->n_node_selector, c->err))) return r;
    q->node_selector = l;
  }
  if ((n = gp_doc_get(m, "allow_spot"))) {
    FIELD(f, i, "allow_spot");
    if ((r = gp_doc_bool(c->d, n, f, &q->allow_spot, c->err))) return r;
  }
  if ((n = gp_doc_get(m, "exclusive"))) {
    FIELD(f, i, "exclusive");
    if ((r = gp_doc_bool(c->d, n, f, &q->exclusive, c->err))) return r;
  }
  return 0;
}

/* Books one placement's GPU in the occupancy table, refusing what the GPU cannot hold. */
static int book_gpu(job_ctx *c, const gp_doc_node *at, const char *f, const gp_job *job,
                    const gp_placement *p, int gpu) {
  const gp_node *node = &c->nodes[p->node];
  if (!c->use[p->node])
    c->use[p->node] = gp_arena_alloc(c->arena, (size_t)node->n_gpus * sizeof(gpu_use));
  gpu_use *u = &c->use[p->node][gpu];
  const gp_gpu *g = &node->gpus[gpu];
  const char *why = NULL;
  bool by_holder = false; /* the message names the job already there */
  if (p->mig_instance >= 0) {
    if (u->mig_busy & (1u << p->mig_instance)) why = "its MIG instance is already held";
    u->mig_busy |= 1u << p->mig_instance;
  } else if (g->mode == GP_SHARE_TIMESLICE) {
    if (u->holders >= g->timeslice_replicas) why = "all its time-slice replicas are held";
  } else if (p->gpu_milli >= GP_GPU_MILLI && job->req.gpus_per_task > 0) {
    if (u->holders) why = "it is already held by job", by_holder = true;
    u->whole = true;
  } else if (u->whole) {
    why = "it is already held whole by job", by_holder = true;
  } else if (u->milli + p->gpu_milli > GP_GPU_MILLI) {
    why = "its shares would exceed one GPU";
  }
  if (why) {
    return gp_err_set(c->err, GP_EINVAL, c->d->name, at->line, f,
                      "job %s cannot hold GPU %d of %s: %s%s%s", job->id, gpu, node->name, why,
                      by_holder ? " " : "", by_holder && u->holder ? u->holder : "");
  }
  u->holder = job->id;
  u->milli += p->gpu_milli;
  u->holders++;
  return 0;
}

static int read_placement(job_ctx *c, const gp_doc_node *m, const char *f, gp_job *job,
                          gp_placement *p) {
  static const char *const keys[] = {"node", "gpu_ids", "gpu_milli", "gpu_mem", "mig_instance",
                                     NULL};
  int r = gp__snap_check_keys(c->d, m, f, keys, NULL, c->err);
  if (r) return r;
  char ff[220];
  const gp_doc_node *n = gp_doc_get(m, "node");
  snprintf(ff, sizeof ff, "%s.node", f);
  if (!n) return gp_err_set(c->err, GP_EINVAL, c->d->name, m->line, ff, "missing");
  const char *name;
  if ((r = gp_doc_str(c->d, n, ff, &name, c->err))) return r;
  p->node = gp__snap_names_find(&c->node_ix, name);
  if (p->node < 0)
    return gp_err_set(c->err, GP_ENOENT, c->d->name, n->line, ff, "no node '%.100s'", name);
  const gp_node *node = &c->nodes[p->node];
  const gp_request *q = &job->req;
  bool whole = q->gpus_per_task > 0;
  int want = whole ? q->gpus_per_task
                   : (q->gpu_milli || q->gpu_mem_mib || q->mig_profile) ? 1 : 0;
  n = gp_doc_get(m, "gpu_ids");
  snprintf(ff, sizeof ff, "%s.gpu_ids", f);
  if (!n && want) return gp_err_set(c->err, GP_EINVAL, c->d->name, m->line, ff, "missing");
  if (n && (r = gp__snap_list(c->d, n, ff, GP_MAX_NODE_GPUS, c->err))) return r;
  int got = n ? n->n : 0;
  if (got != want)
    return gp_err_set(c->err, GP_EINVAL, c->d->name, n ? n->line : m->line, ff,
                      "job %s asks for %d GPU%s per task, but this placement lists %d",
                      job->id, want, want == 1 ? "" : "s", got);
  for (int k = 0; k < got; k++) {
    int64_t idx;
    char fk[240];
    snprintf(fk, sizeof fk, "%s[%d]", ff, k);
    if ((r = gp_doc_int(c->d, n->items[k], fk, &idx, c->err))) return r;
    if (idx < 0 || idx >= node->n_gpus)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->items[k]->line, fk,
                        "GPU %lld is out of range: node %s has %d GPUs", (long long)idx,
                        node->name, node->n_gpus);
    if (p->gpu_mask & (1u << idx))
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->items[k]->line, fk,
                        "GPU %lld is listed twice", (long long)idx);
    p->gpu_mask |= 1u << idx;
  }
  /* What the placement holds on each GPU: whole, the job's share, or a MIG instance. */
  int gpu = got ? __builtin_ctz(p->gpu_mask) : 0;
  int64_t gpu_mem = got && node->gpus[gpu].mem_mib ? node->gpus[gpu].mem_mib : node->gpu_mem_mib;
  p->mig_instance = -1;
  if (whole && got && node->gpus[gpu].mode == GP_SHARE_TIMESLICE) {
    /* A one-GPU task on a time-sliced GPU holds one replica, as the core places it. */
    int replicas = node->gpus[gpu].timeslice_replicas;
    p->gpu_milli = replicas > 1 ? GP_GPU_MILLI / replicas : GP_GPU_MILLI;
  } else if (whole || !got) {
    p->gpu_milli = GP_GPU_MILLI;
  } else if (q->mig_profile) {
    p->gpu_milli = 0;
  } else if (q->gpu_milli) {
    p->gpu_milli = q->gpu_milli;
    p->gpu_mem_mib = gpu_mem * q->gpu_milli / GP_GPU_MILLI;
  } else {
    p->gpu_mem_mib = q->gpu_mem_mib;
    int64_t milli = gpu_mem > 0 ? (q->gpu_mem_mib * GP_GPU_MILLI + gpu_mem - 1) / gpu_mem
                                : GP_GPU_MILLI;
    p->gpu_milli = (int)(milli > GP_GPU_MILLI ? GP_GPU_MILLI : milli < 1 ? 1 : milli);
  }
  if ((n = gp_doc_get(m, "gpu_milli"))) {
    int64_t v;
    snprintf(ff, sizeof ff, "%s.gpu_milli", f);
    if ((r = gp_doc_int(c->d, n, ff, &v, c->err))) return r;
    if (whole || q->mig_profile || v < 1 || v > GP_GPU_MILLI)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, ff,
                        whole || q->mig_profile ? "only for a fractional job"
                                                : "must be 1..1000");
    p->gpu_milli = (int)v;
  }
  if ((n = gp_doc_get(m, "gpu_mem"))) {
    snprintf(ff, sizeof ff, "%s.gpu_mem", f);
    if (whole || q->mig_profile)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, ff,
                        "only for a fractional job");
    if ((r = gp_doc_mem_mib(c->d, n, ff, &p->gpu_mem_mib, c->err))) return r;
  }
  n = gp_doc_get(m, "mig_instance");
  snprintf(ff, sizeof ff, "%s.mig_instance", f);
  if (q->mig_profile && got) {
    const gp_gpu *g = &node->gpus[gpu];
    if (g->mode != GP_SHARE_MIG)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, m->line, ff,
                        "GPU %d of %s is not partitioned with MIG", gpu, node->name);
    if (!n) return gp_err_set(c->err, GP_EINVAL, c->d->name, m->line, ff, "missing");
    int64_t v;
    if ((r = gp_doc_int(c->d, n, ff, &v, c->err))) return r;
    if (v < 0 || v >= g->n_mig)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, ff,
                        "GPU %d of %s has %d MIG instances", gpu, node->name, g->n_mig);
    if (strcmp(g->mig[v].profile, q->mig_profile))
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, ff,
                        "instance %lld is %s, but job %s asks for %s", (long long)v,
                        g->mig[v].profile, job->id, q->mig_profile);
    p->mig_instance = (int)v;
  } else if (n) {
    return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, ff, "only for a MIG job");
  }
  for (int k = 0; k < GP_MAX_NODE_GPUS; k++)
    if ((p->gpu_mask & (1u << k)) && (r = book_gpu(c, m, f, job, p, k))) return r;
  return 0;
}

static int read_placements(job_ctx *c, const gp_doc_node *m, int i, gp_job *job) {
  const gp_doc_node *n = gp_doc_get(m, "placements");
  bool holds = job->state == GP_JOB_RUNNING || job->state == GP_JOB_STOPPING;
  char f[160];
  FIELD(f, i, "placements");
  if (!holds) {
    if (n && !(n->kind == GP_DOC_SEQ && n->n == 0))
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f,
                        "only running or stopping jobs have placements (job %s is %s)",
                        job->id, gp_job_state_name(job->state));
    return 0;
  }
  if (!n)
    return gp_err_set(c->err, GP_EINVAL, c->d->name, m->line, f,
                      "missing: a %s job says where its tasks run",
                      gp_job_state_name(job->state));
  int r = gp__snap_list(c->d, n, f, GP_READ_MAX_TASKS, c->err);
  if (r) return r;
  if (n->n != job->req.tasks)
    return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f,
                      "job %s has %d task%s but %d placement%s", job->id, job->req.tasks,
                      job->req.tasks == 1 ? "" : "s", n->n, n->n == 1 ? "" : "s");
  gp_placement *p = gp_arena_alloc(c->arena, (size_t)n->n * sizeof *p);
  for (int k = 0; k < n->n; k++) {
    char fk[200];
    snprintf(fk, sizeof fk, "%s[%d]", f, k);
    if ((r = read_placement(c, n->items[k], fk, job, &p[k]))) return r;
  }
  job->placements = p;
  job->n_placements = n->n;
  return 0;
}

static int read_job(job_ctx *c, const gp_doc_node *m, int i, const char *const *extra_keys,
                    gp_job *job) {
  static const char *const keys[] = {
      "id", "queue", "user", "priority", "gpus", "tasks", "tasks_per_node", "nodes", "gpu_fraction", "gpu_mem", "mig",
      "gpu_type", "min_gpu_mem", "cpus", "mem", "mem_gib", "node_selector", "allow_spot",
      "exclusive", "time_limit", "submitted_at", "state", "placements", "started_at", "last_checkpoint_at",
      "exit_code", "requeue", "restarts", "after", "after_ok", "afterok", "after_any",
      "afterany", "begin_at", "after_not_ok", "afternotok", "singleton", "name", NULL};
  char f[160];
  FIELD(f, i, NULL);
  int r = gp__snap_check_keys(c->d, m, f, keys, extra_keys, c->err);
  if (r) return r;
  const gp_doc_node *n = gp_doc_get(m, "id");
  FIELD(f, i, "id");
  if (!n) return gp_err_set(c->err, GP_EINVAL, c->d->name, m->line, f, "missing");
  if ((r = gp__snap_read_name(c->d, n, f, c->arena, &job->id, c->err))) return r;

  n = gp_doc_get(m, "queue");
  FIELD(f, i, "queue");
  if (!n) return gp_err_set(c->err, GP_EINVAL, c->d->name, m->line, f, "missing");
  const char *queue;
  if ((r = gp_doc_str(c->d, n, f, &queue, c->err))) return r;
  int qi = gp__snap_names_find(&c->queue_ix, queue);
  if (qi < 0)
    return gp_err_set(c->err, GP_ENOENT, c->d->name, n->line, f, "no queue '%.100s'", queue);
  if (c->child_of[qi] >= 0)
    return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f,
                      "'%s' is not a leaf queue (it has %s); jobs go to leaf queues", queue,
                      c->queues[c->child_of[qi]].name);
  job->queue = c->queues[qi].name;

  job->user = "unknown";
  if ((n = gp_doc_get(m, "user"))) {
    FIELD(f, i, "user");
    if ((r = gp__snap_read_name(c->d, n, f, c->arena, &job->user, c->err))) return r;
  }
  if ((n = gp_doc_get(m, "priority"))) {
    FIELD(f, i, "priority");
    if ((r = gp__snap_read_name(c->d, n, f, c->arena, &job->priority_class, c->err))) return r;
    if (!gp_priority_class_find(c->policy, job->priority_class))
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f,
                        "'%s' is not a priority class", job->priority_class);
  }
  if ((r = read_request(c, m, i, job))) return r;

  if ((n = gp_doc_get(m, "state"))) {
    const char *s;
    FIELD(f, i, "state");
    if ((r = gp_doc_str(c->d, n, f, &s, c->err))) return r;
    if (gp_job_state_parse(s, &job->state))
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f,
                        "'%.60s' is not one of: pending, running, held, stopping, completed, "
                        "failed, cancelled, preempted, timeout", s);
  }
  const int64_t tmax = (int64_t)1 << 50; /* far beyond any clock, far from overflow */
  int64_t v = 0;
  if ((n = gp_doc_get(m, "time_limit"))) {
    FIELD(f, i, "time_limit");
    if ((r = gp_doc_duration_s(c->d, n, f, &v, c->err))) return r;
    if (v > GP_READ_MAX_DURATION_S)
      return gp_err_set(c->err, GP_EINVAL, c->d->name, n->line, f, "longer than %lld seconds",
                        (long long)GP_READ_MAX_DURATION_S);
    job->time_limit = v;
  }
  v = 0;
  if ((r = opt_int(c, m, i, "submitted_at", 0, tmax, &v))) return r;
  job->submitted_at = v;
  v = job->submitted_at;
  if ((r = opt_int(c, m, i, "started_at", 0, tmax, &v))) return r;
  job->started_at = v;
  v = 0;
  if ((r = opt_int(c, m, i, "last_checkpoint_at", 0, tmax, &v))) return r;
  job->last_checkpoint_at = v;
  v = 0;
  if ((r = opt_int(c, m, i, "begin_at", 0, tmax, &v))) return r;
  job->begin_at = v;
  v = 0;
  if ((r = opt_int(c, m, i, "exit_code", -255, 255, &v))) return r;
  job->exit_code = (int)v;
  v = 0;
  if ((r = opt_int(c, m, i, "restarts", 0, 1000000, &v))) return r;
  job->restarts = (int)v;
  job->requeue = true;
  if ((n = gp_doc_get(m, "requeue"))) {
    FIELD(f, i, "requeue");
    if ((r = gp_doc_bool(c->d, n, f, &job->requeue, c->err))) return r;
  }
  if ((r = read_deps(c, m, i, "after", NULL, &job->after, &job->n_after)) ||
      (r = read_deps(c, m, i, "after_ok", "afterok", &job->after_ok, &job->n_after_ok)) ||
      (r = read_deps(c, m, i, "after_any", "afterany", &job->after_any, &job->n_after_any)) ||
      (r = read_deps(c, m, i, "after_not_ok", "afternotok", &job->after_not_ok, &job->n_after_not_ok)))
    return r;
  if ((n = gp_doc_get(m, "singleton"))) {
    FIELD(f, i, "singleton");
    if ((r = gp_doc_bool(c->d, n, f, &job->singleton, c->err))) return r;
  }
  if ((n = gp_doc_get(m, "name"))) {
    FIELD(f, i, "name");
    if ((r = gp__snap_read_name(c->d, n, f, c->arena, &job->name, c->err))) return r;
  }
  return read_placements(c, m, i, job);
}

int gp_jobs_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                 const char *const *extra_keys, const gp_policy *policy,
                 const gp_node *nodes, int n_nodes, const gp_queue *queues, int n_queues,
                 gp_arena *arena, gp_job **ret_jobs, int *ret_n, gp_err *err) {
  int r = gp__snap_list(d, seq, path, GP_READ_MAX_JOBS, err);
  if (r) return r;
  job_ctx c = {.d = d, .path = path, .policy = policy, .nodes = nodes, .n_nodes = n_nodes,
               .queues = queues, .n_queues = n_queues, .arena = arena, .err = err};
  int dup;
  const char **names = gp_arena_alloc(arena, (size_t)(n_nodes + n_queues + 1) * sizeof *names);
  for (int i = 0; i < n_nodes; i++) names[i] = nodes[i].name;
  for (int i = 0; i < n_queues; i++) names[n_nodes + i] = queues[i].name;
  gp__snap_names_build(&c.node_ix, names, n_nodes, arena, &dup);
  gp__snap_names_build(&c.queue_ix, names + n_nodes, n_queues, arena, &dup);
  /* Mark every listed parent of a listed queue as not a leaf: O(queues x depth x log). */
  c.child_of = gp_arena_alloc(arena, (size_t)(n_queues ? n_queues : 1) * sizeof *c.child_of);
  for (int i = 0; i < n_queues; i++) c.child_of[i] = -1;
  for (int i = 0; i < n_queues; i++) {
    char prefix[GP_READ_MAX_NAME + 1];
    snprintf(prefix, sizeof prefix, "%s", queues[i].name);
    for (char *slash = strrchr(prefix, '/'); slash; slash = strrchr(prefix, '/')) {
      *slash = '\0';
      int parent = gp__snap_names_find(&c.queue_ix, prefix);
      if (parent >= 0 && c.child_of[parent] < 0) c.child_of[parent] = i;
    }
  }
  c.use = gp_arena_alloc(arena, (size_t)(n_nodes ? n_nodes : 1) * sizeof *c.use);
  gp_job *jobs = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *jobs);
  for (int i = 0; i < seq->n; i++)
    if ((r = read_job(&c, seq->items[i], i, extra_keys, &jobs[i]))) return r;
  const char **ids = gp_arena_alloc(arena, (size_t)(seq->n ? seq->n : 1) * sizeof *ids);
  for (int i = 0; i < seq->n; i++) ids[i] = jobs[i].id;
  gp__snap_names ix;
  if (gp__snap_names_build(&ix, ids, seq->n, arena, &dup)) {
    char f[160];
    gp__snap_field(f, sizeof f, path, dup, "id");
    return gp_err_set(err, GP_EEXIST, d->name, gp_doc_get(seq->items[dup], "id")->line, f,
                      "job '%s' is defined twice", jobs[dup].id);
  }
  *ret_jobs = jobs;
  *ret_n = seq->n;
  return 0;
}
