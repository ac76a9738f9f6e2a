/* SPDX-License-Identifier: Apache-2.0 */
/* The top level of a cluster snapshot (see snapshot.h): `now`, the policy and priority
 * classes, queues, pools, nodes and jobs, read in the order their cross-references need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/policy_read.h"
#include "snapshot/template_read.h"
#include "snapshot/read_util.h"
#include "snapshot/snapshot.h"

void gp_snapshot_free(gp_snapshot *s) {
  if (!s) return;
  gp_arena_free(s->arena);
  free(s);
}

static int read_all(const gp_doc *d, gp_snapshot *s, gp_err *err) {
  static const char *const keys[] = {"now", "policy", "priority_classes", "queues", "pools",
                                     "nodes", "jobs", "node_templates", NULL};
  const gp_doc_node *root = d->root;
  if (!root)
    return gp_err_set(err, GP_EINVAL, d->name, 1, NULL,
                      "empty snapshot: expected now, queues, nodes and jobs");
  int r = gp__snap_check_keys(d, root, "", keys, NULL, err);
  if (r) return r;

  const gp_doc_node *n = gp_doc_get(root, "now");
  if (!n) return gp_err_set(err, GP_EINVAL, d->name, root->line, "now",
                            "missing: the time of the snapshot, in seconds");
  int64_t now;
  if ((r = gp_doc_int(d, n, "now", &now, err))) return r;
  if (now < 0 || now > ((int64_t)1 << 50))
    return gp_err_set(err, GP_EINVAL, d->name, n->line, "now", "must be >= 0 (seconds)");
  s->now = now;

  gp_policy_init(&s->policy);
  if ((n = gp_doc_get(root, "priority_classes"))) {
    gp_priority_class *cls;
    if ((r = gp_priority_classes_read(d, n, "priority_classes", s->arena, &cls,
                                      &s->policy.n_priority_classes, err)))
      return r;
    s->policy.priority_classes = cls;
  }
  const gp_doc_node *policy = gp_doc_get(root, "policy");
  if (policy && (r = gp_policy_read(d, policy, "policy", NULL, s->arena, &s->policy, err)))
    return r;

  const gp_doc_node *queues = gp_doc_get(root, "queues");
  if (!queues)
    return gp_err_set(err, GP_EINVAL, d->name, root->line, "queues",
                      "missing: jobs go to queues, e.g. [{name: org/a, deserved: 4}]");
  gp_queue *qs;
  if ((r = gp_queues_read(d, queues, "queues", NULL, s->arena, &qs, &s->view.n_queues, err)))
    return r;
  s->view.queues = qs;
  if ((r = gp_policy_check(&s->policy, qs, s->view.n_queues, d, policy, queues, err))) return r;

  if ((n = gp_doc_get(root, "pools"))) {
    gp_pool *ps;
    if ((r = gp_pools_read(d, n, "pools", NULL, qs, s->view.n_queues, s->arena, &ps,
                           &s->view.n_pools, err)))
      return r;
    s->view.pools = ps;
  }
  gp_node *nodes = NULL;
  if ((n = gp_doc_get(root, "nodes"))) {
    if ((r = gp_nodes_read(d, n, "nodes", NULL, s->arena, &nodes, &s->view.n_nodes, err)))
      return r;
    s->view.nodes = nodes;
  }
  s->scale.max_hourly_cost = GP_NO_LIMIT;
  gp_scale_default_ranks(s->scale.class_rank);
  if ((n = gp_doc_get(root, "node_templates"))) {
    gp_template_spec *specs;
    int nt;
    if ((r = gp_templates_read(d, n, "node_templates", NULL, s->arena, &specs, &nt, err))) return r;
    gp_template *ts = gp_arena_alloc(s->arena, sizeof *ts * (size_t)(nt + 1));
    gp_scale_template *st = gp_arena_alloc(s->arena, sizeof *st * (size_t)(nt + 1));
    for (int i = 0; i < nt; i++) {
      ts[i] = specs[i].t;
      st[i] = (gp_scale_template){.price_per_gpu_hour = specs[i].price_per_gpu_hour,
                                  .disruption_budget = specs[i].disruption_budget};
    }
    s->view.templates = ts;
    s->view.n_templates = nt;
    s->scale.templates = st;
  }
  if ((n = gp_doc_get(root, "jobs"))) {
    gp_job *jobs;
    if ((r = gp_jobs_read(d, n, "jobs", NULL, &s->policy, nodes, s->view.n_nodes, qs,
                          s->view.n_queues, s->arena, &jobs, &s->view.n_jobs, err)))
      return r;
    s->view.jobs = jobs;
  }
  return 0;
}

int gp_snapshot_read(const gp_doc *d, gp_snapshot **ret, gp_err *err) {
  gp_snapshot *s = gp_xcalloc(1, sizeof *s);
  s->arena = gp_arena_new();
  int r = read_all(d, s, err);
  if (r) {
    gp_snapshot_free(s);
    return r;
  }
  *ret = s;
  return 0;
}

int gp_snapshot_load(const char *path, gp_snapshot **ret, gp_err *err) {
  gp_doc *d = NULL;
  int r = gp_doc_load_file(path, &d, err);
  if (r) return r;
  r = gp_snapshot_read(d, ret, err);
  gp_doc_free(d);
  return r;
}
