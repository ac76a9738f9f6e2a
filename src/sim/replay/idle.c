/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's idle inputs: which jobs hold their GPUs idle and for how long (the trace's
 * `idle_tail`, or the idle model of `--idle-tail FRACTION:SHARE` for traces that do not
 * say, such as Philly), and the `--idle-policy FILE` that acts on those stretches. The
 * policy is read by the server's own reader (core/idle.h), so a policy tried in replay
 * can be deployed as is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/replay/mix.h"
#include "sim/replay/replay.h"
#include "util/doc.h"
#include "util/mem.h"

#define MAX_QUEUE_POLICIES 10000

gp_time gp_replay_idle_tail(const gp_replay_config *cfg, const gp_trace *trace, size_t i) {
  const gp_trace_job *j = &trace->jobs[i];
  if (j->idle_tail > 0 || !(cfg->idle_fraction > 0) || !(cfg->idle_share > 0)) return j->idle_tail;
  /* A uniform draw in [0, 1) per job, from the seed and the row's line (not the job's
   * position, so reading fewer rows picks the same ones among those read). */
  double u = gp__sim_unit(gp__sim_mix64(cfg->seed ^ gp__sim_mix64((uint64_t)(uint32_t)j->line)));
  if (u >= cfg->idle_fraction) return 0;
  double share = cfg->idle_share > 1 ? 1 : cfg->idle_share;
  return (gp_time)llround((double)j->duration * share);
}

void gp_replay_idle_policy_free(gp_replay_idle_policy *p) {
  if (!p) return;
  gp_arena_free(p->arena);
  free(p);
}

/* The `queues:` map: a policy per queue name. */
static int read_queues(const gp_doc *d, const gp_doc_node *m, gp_replay_idle_policy *p,
                       gp_err *err) {
  int rc = gp_doc_expect(d, m, "queues", GP_DOC_MAP, err);
  if (rc) return rc;
  if (m->n > MAX_QUEUE_POLICIES)
    return gp_err_set(err, GP_ELIMIT, d->name, m->line, "queues", "more than %d queues",
                      MAX_QUEUE_POLICIES);
  p->queue = gp_arena_alloc(p->arena, (size_t)(m->n ? m->n : 1) * sizeof *p->queue);
  p->policy = gp_arena_alloc(p->arena, (size_t)(m->n ? m->n : 1) * sizeof *p->policy);
  for (int i = 0; i < m->n; i++) {
    char path[300];
    snprintf(path, sizeof path, "queues.%.200s", m->keys[i]);
    if (strlen(m->keys[i]) > 200 || !m->keys[i][0])
      return gp_err_set(err, GP_EINVAL, d->name, m->items[i]->line, "queues",
                        "a queue name of 1 to 200 bytes");
    for (int k = 0; k < i; k++)
      if (strcmp(p->queue[k], m->keys[i]) == 0)
        return gp_err_set(err, GP_EINVAL, d->name, m->items[i]->line, path, "given twice");
    gp_idle_policy q;
    if ((rc = gp_idle_policy_read(d, m->items[i], path, &q, err))) return rc;
    p->queue[p->n] = gp_arena_strdup(p->arena, m->keys[i]);
    p->policy[p->n++] = q;
  }
  return 0;
}

int gp_replay_idle_policy_load(const char *path, gp_replay_idle_policy **ret, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_file(path, &d, err);
  if (rc) return rc;
  static const char *const keys[] = {"idle_policy", "queues", NULL};
  const gp_doc_node *root = d->root;
  gp_replay_idle_policy *p = gp_xcalloc(1, sizeof *p);
  p->arena = gp_arena_new();
  if (!root || root->kind != GP_DOC_MAP)
    rc = gp_err_set(err, GP_EINVAL, path, root ? root->line : 1, "idle_policy",
                    "expected a map with `idle_policy:` (and optionally `queues:`)");
  else if (!gp_doc_get(root, "idle_policy") && !gp_doc_get(root, "queues"))
    rc = gp_err_set(err, GP_EINVAL, path, root->line, "idle_policy",
                    "missing `idle_policy:` (window, grace, action, threshold_pct)");
  else if (!(rc = gp_doc_check_keys(d, root, "", keys, err)) &&
           !(rc = gp_idle_policy_read(d, gp_doc_get(root, "idle_policy"), "idle_policy",
                                      &p->all, err)) &&
           gp_doc_get(root, "queues"))
    rc = read_queues(d, gp_doc_get(root, "queues"), p, err);
  gp_doc_free(d);
  if (rc) {
    gp_replay_idle_policy_free(p);
    return rc;
  }
  *ret = p;
  return 0;
}
