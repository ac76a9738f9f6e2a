/* SPDX-License-Identifier: Apache-2.0 */
/* Checks that a policy and a view are consistent (jobs: as the step first reads them). A snapshot
 * that contradicts itself (a placement on a node that does not exist, a GPU index out of
 * range, two nodes or queues with one name, a pool for an unknown queue) is the caller's
 * bug and fails the step with GP_EINVAL and the offending field. A job that asks for
 * something impossible or unknown (queue, priority class) is not: it ends, with a reason,
 * in the plan (jobs.c). */
#include <string.h>

#include "core/field.h"
#include "core/validate.h"
#include "core/reservation.h"
#include "core/usage.h"
#include "core/user_limits.h"

static int bad(gp__core_ctx *c, const char *field, const char *what) {
  return gp_err_set(c->err, GP_EINVAL, NULL, 0, field, "%s", what);
}

static int check_policy(gp__core_ctx *c) {
  const gp_policy *p = c->pol;
  char f[64];
  if ((unsigned)p->placement > GP_PLACE_SPREAD) return bad(c, "policy.placement", "unknown placement policy");
  if ((unsigned)p->order > GP_ORDER_SJF) return bad(c, "policy.order", "unknown order policy");
  if ((unsigned)p->share > GP_SHARE_POLICY_RANDOM) return bad(c, "policy.share", "unknown sharing policy");
  if (p->min_runtime < 0) return bad(c, "policy.min_runtime", "min_runtime must not be negative");
  if (p->default_time_limit < 0)
    return bad(c, "policy.default_time_limit", "default_time_limit must not be negative");
  if (p->n_priority_classes < 0 || (p->n_priority_classes > 0 && !p->priority_classes))
    return bad(c, "priority_classes", "malformed priority class list");
  if (p->n_priority_classes > 0) {
    c->classes = p->priority_classes;
    c->n_classes = p->n_priority_classes;
  } else {
    c->classes = gp_default_priority_classes;
    c->n_classes = gp_n_default_priority_classes;
  }
  for (int i = 0; i < c->n_classes; i++) {
    if (!c->classes[i].name || !*c->classes[i].name)
      return bad(c, gp__core_field(f, sizeof f, "priority_classes", i, ".name"), "a priority class needs a name");
    for (int k = 0; k < i; k++)
      if (strcmp(c->classes[k].name, c->classes[i].name) == 0)
        return gp_err_set(c->err, GP_EINVAL, NULL, 0,
                          gp__core_field(f, sizeof f, "priority_classes", i, ".name"),
                          "priority class %s is defined twice", c->classes[i].name);
  }
  const char *def = p->default_priority ? p->default_priority : "training";
  c->default_class = -1;
  for (int i = 0; i < c->n_classes; i++)
    if (strcmp(c->classes[i].name, def) == 0) c->default_class = i;
  if (c->default_class < 0) {
    if (p->default_priority)
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, "policy.default_priority",
                        "default priority class %s does not exist", p->default_priority);
    /* No default named and no "training" class: the lowest priority class. */
    c->default_class = 0;
    for (int i = 1; i < c->n_classes; i++)
      if (c->classes[i].priority < c->classes[c->default_class].priority) c->default_class = i;
  }
  return 0;
}

static int check_nodes(gp__core_ctx *c) {
  const gp_view *v = c->view;
  char f[64];
  gp__core_strmap names;
  gp__core_strmap_init(&names, (size_t)v->n_nodes + 1);
  int rc = 0;
  for (int i = 0; i < v->n_nodes && !rc; i++) {
    const gp_node *n = &v->nodes[i];
    if (!n->name || !*n->name)
      rc = bad(c, gp__core_field(f, sizeof f, "nodes", i, ".name"), "a node needs a name");
    else if (n->n_gpus < 0 || n->n_gpus > GP_MAX_NODE_GPUS)
      rc = gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "nodes", i, ".gpus"),
                      "node %s: between 0 and %d GPUs per node, got %d", n->name,
                      GP_MAX_NODE_GPUS, n->n_gpus);
    else if (n->n_labels < 0 || (n->n_labels > 0 && !n->labels))
      rc = bad(c, gp__core_field(f, sizeof f, "nodes", i, ".labels"), "malformed label list");
    else if (n->n_images < 0 || n->n_images > GP_MAX_NODE_IMAGES || (n->n_images > 0 && !n->images))
      rc = gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "nodes", i, ".images"),
                      "node %s: between 0 and %d images, got %d", n->name, GP_MAX_NODE_IMAGES,
                      n->n_images);
    else if ((unsigned)n->state > GP_NODE_CORDON)
      rc = bad(c, gp__core_field(f, sizeof f, "nodes", i, ".state"), "unknown node state");
    else if (gp__core_strmap_put(&names, n->name, i) >= 0)
      rc = gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "nodes", i, ".name"),
                      "node %s is listed twice", n->name);
    for (int k = 1; !rc && k < n->n_images; k++)
      if (n->images[k - 1] >= n->images[k])
        rc = bad(c, gp__core_field(f, sizeof f, "nodes", i, ".images"),
                 "image hashes must be strictly ascending");
    for (int g = 0; !rc && n->gpus && g < n->n_gpus; g++)
      if (n->gpus[g].n_mig < 0 || n->gpus[g].n_mig > GP_MAX_MIG_INSTANCES ||
          (n->gpus[g].n_mig > 0 && !n->gpus[g].mig))
        rc = gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "nodes", i, ".gpus"),
                        "node %s: GPU %d has a malformed MIG layout", n->name, g);
  }
  gp__core_strmap_done(&names);
  return rc;
}

static int check_pools(gp__core_ctx *c) {
  const gp_view *v = c->view;
  char f[64];
  if (v->n_pools > 15) return bad(c, "pools", "at most 15 reserved pools");
  for (int p = 0; p < v->n_pools; p++) {
    const gp_pool *pool = &v->pools[p];
    if (!pool->selector.key || !pool->selector.value)
      return bad(c, gp__core_field(f, sizeof f, "pools", p, ".selector"), "a pool needs a label key and value");
    if (gp__core_qtree_find(&c->tree, pool->queue) < 0)
      return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(f, sizeof f, "pools", p, ".queue"),
                        "pool %s: queue %s does not exist", pool->name ? pool->name : "?",
                        pool->queue ? pool->queue : "(none)");
  }
  return 0;
}

/* One job's consistency; called from the classification pass (jobs.c) so the view's jobs
 * are read once. */
int gp__core_validate_job(gp__core_ctx *c, int j) {
  const gp_view *v = c->view;
  char f[64], g[96];
  {
    const gp_job *job = &v->jobs[j];
    if (!job->id) return bad(c, gp__core_field(f, sizeof f, "jobs", j, ".id"), "a job needs an id");
    if (job->state != GP_JOB_RUNNING && job->state != GP_JOB_STOPPING) return 0;
    if (job->n_placements < 0 || (job->n_placements > 0 && !job->placements))
      return bad(c, gp__core_field(f, sizeof f, "jobs", j, ".placements"), "malformed placement list");
    for (int k = 0; k < job->n_placements; k++) {
      const gp_placement *p = &job->placements[k];
      if (p->node < 0 || p->node >= v->n_nodes) {
        gp__core_field(f, sizeof f, "jobs", j, ".placements");
        return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(g, sizeof g, f, k, ".node"),
                          "job %s runs on a node that does not exist", job->id);
      }
      const gp_node *n = &v->nodes[p->node];
      uint32_t all = n->n_gpus >= 32 ? ~(uint32_t)0 : (((uint32_t)1 << n->n_gpus) - 1);
      if (p->gpu_mask & ~all && gp__core_field(f, sizeof f, "jobs", j, ".placements"))
        return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(g, sizeof g, f, k, ".gpu_ids"),
                          "job %s holds a GPU index out of range on node %s (%d GPUs)", job->id,
                          n->name, n->n_gpus);
      if (p->mig_instance >= 0) {
        int gi = p->gpu_mask ? __builtin_ctz(p->gpu_mask) : -1;
        if ((gi < 0 || !n->gpus || p->mig_instance >= n->gpus[gi].n_mig) &&
            gp__core_field(f, sizeof f, "jobs", j, ".placements"))
          return gp_err_set(c->err, GP_EINVAL, NULL, 0, gp__core_field(g, sizeof g, f, k, ".mig_instance"),
                            "job %s holds a MIG instance node %s does not have", job->id, n->name);
      }
    }
  }
  return 0;
}

int gp__core_validate(gp__core_ctx *c) {
  const gp_view *v = c->view;
  if (v->n_nodes < 0 || v->n_queues < 0 || v->n_pools < 0 || v->n_jobs < 0 ||
      (v->n_nodes && !v->nodes) || (v->n_queues && !v->queues) || (v->n_pools && !v->pools) ||
      (v->n_jobs && !v->jobs))
    return bad(c, "view", "malformed view: a count without its array");
  int rc;
  if ((rc = check_policy(c))) return rc;
  /* A view the memo knows (same rev) passed the node and pool checks before. */
  if (!c->view_known && (rc = check_nodes(c))) return rc;
  /* A known view's queues are the ones the known tree was built from. */
  if (c->known_tree) gp__core_qtree_share(&c->tree, c->known_tree);
  else if ((rc = gp__core_qtree_build(&c->tree, v->queues, v->n_queues, c->err))) return rc;
  if (!c->view_known && (rc = check_pools(c))) return rc;
  if ((rc = gp__core_usage_apply(c))) return rc;
  if ((rc = gp__core_ares_check(c))) return rc;
  if (!c->view_known && (rc = gp__core_user_limits_check_view(c))) return rc;
  return 0;
}
