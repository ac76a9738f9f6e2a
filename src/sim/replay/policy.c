/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's policies: the four presets compared in docs/simulator.md, each a plain
 * gp_policy for the same core, and policy files in the server's own format (read with the
 * snapshot readers, so a simulated policy can be deployed as is). */
#include <string.h>

#include "sim/replay/replay.h"
#include "snapshot/policy_read.h"
#include "util/doc.h"

static const char *const preset_names[] = {[GP_REPLAY_FIFO] = "fifo",
                                           [GP_REPLAY_BACKFILL] = "backfill",
                                           [GP_REPLAY_GPOOL] = "gpool",
                                           [GP_REPLAY_SJF] = "sjf",
                                           [GP_REPLAY_BACKFILL_VC] = "backfill-vc",
                                           [GP_REPLAY_CUSTOM] = "custom"};

const char *gp_replay_preset_name(gp_replay_preset p) {
  return (unsigned)p < sizeof preset_names / sizeof preset_names[0] ? preset_names[p] : "unknown";
}

int gp_replay_preset_parse(const char *s, gp_replay_preset *ret) {
  for (unsigned i = 0; s && i < GP_REPLAY_CUSTOM; i++)
    if (strcmp(s, preset_names[i]) == 0) {
      *ret = (gp_replay_preset)i;
      return 0;
    }
  return GP_EINVAL;
}

void gp_replay_preset_policy(gp_replay_preset preset, gp_policy *p) {
  gp_policy_init(p);
  switch (preset) {
  case GP_REPLAY_FIFO:
    /* One strict line by submit time over the whole fleet: the head blocks everyone. */
    p->order = GP_ORDER_FIFO;
    p->backfill = false;
    p->reclaim = false;
    p->preemption = false;
    break;
  case GP_REPLAY_BACKFILL:
  case GP_REPLAY_BACKFILL_VC:
    /* Slurm-like: priority then age, EASY backfill on time limits, no quotas. */
    p->order = GP_ORDER_PRIORITY;
    p->backfill = true;
    p->reclaim = false;
    p->preemption = false;
    break;
  case GP_REPLAY_SJF:
    /* Shortest (true) duration first, with backfill: a bound no real scheduler reaches. */
    p->order = GP_ORDER_SJF;
    p->backfill = true;
    p->reclaim = false;
    p->preemption = false;
    break;
  case GP_REPLAY_GPOOL:
  case GP_REPLAY_CUSTOM:
    break; /* the defaults: fair share, quotas, borrowing, reclaim, backfill */
  }
}

bool gp_replay_preset_partitioned(gp_replay_preset preset) {
  /* No fifo-vc: the core's strict FIFO is one line over the whole fleet, so a blocked
   * job in one partition would hold up every other partition, which is not what a
   * partitioned FIFO means. */
  return preset == GP_REPLAY_BACKFILL_VC;
}

int gp_replay_policy_load(const char *path, gp_arena *arena, gp_policy *ret, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_file(path, &d, err);
  if (rc) return rc;
  const gp_doc_node *root = d->root, *map = root;
  const char *where = "";
  if (!root || root->kind != GP_DOC_MAP) {
    rc = gp_err_set(err, GP_EINVAL, path, root ? root->line : 1, NULL,
                    "expected a map with the policy's keys");
    goto out;
  }
  static const char *const extra[] = {"priority_classes", NULL};
  if (gp_doc_get(root, "policy")) {
    map = gp_doc_get(root, "policy");
    where = "policy";
  } else if (gp_doc_get(root, "scheduler")) {
    map = gp_doc_get(root, "scheduler");
    where = "scheduler";
  }
  gp_policy p;
  gp_policy_init(&p);
  if ((rc = gp_doc_expect(d, map, where, GP_DOC_MAP, err))) goto out;
  if ((rc = gp_policy_read(d, map, where, extra, arena, &p, err))) goto out;
  const gp_doc_node *classes = gp_doc_get(map, "priority_classes");
  if (!classes && map != root) classes = gp_doc_get(root, "priority_classes");
  if (classes) {
    gp_priority_class *pc = NULL;
    int n = 0;
    if ((rc = gp_priority_classes_read(d, classes, "priority_classes", arena, &pc, &n, err)))
      goto out;
    p.priority_classes = pc;
    p.n_priority_classes = n;
  }
  if ((rc = gp_policy_check(&p, NULL, 0, d, map, NULL, err))) goto out;
  *ret = p;
out:
  gp_doc_free(d);
  return rc;
}
