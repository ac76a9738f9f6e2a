/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's queues: from a YAML/JSON file in the server's format, from a
 * virtual-cluster size file (one queue per VC, deserved = its GPUs), or one queue per
 * queue name of the trace. */
#include <stdlib.h>
#include <string.h>

#include "sim/replay/replay.h"
#include "sim/replay/vc.h"
#include "snapshot/policy_read.h"
#include "util/doc.h"

static gp_replay_queues *queues_new(int n) {
  gp_replay_queues *q = gp_xcalloc(1, sizeof *q);
  q->arena = gp_arena_new();
  q->queues = gp_arena_alloc(q->arena, (size_t)(n ? n : 1) * sizeof *q->queues);
  return q;
}

void gp_replay_queues_free(gp_replay_queues *q) {
  if (!q) return;
  gp_arena_free(q->arena);
  free(q);
}

static void queue_init(gp_replay_queues *q, const char *name, double deserved) {
  gp_queue *x = &q->queues[q->n++];
  memset(x, 0, sizeof *x);
  x->name = gp_arena_strdup(q->arena, name);
  x->deserved_gpus = deserved;
  x->limit_gpus = GP_NO_LIMIT;
  x->weight = 1;
}

int gp_replay_queues_load(const char *path, gp_replay_queues **ret, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_file(path, &d, err);
  if (rc) return rc;
  const gp_doc_node *seq = d->root;
  if (seq && seq->kind == GP_DOC_MAP) seq = gp_doc_get(d->root, "queues");
  gp_replay_queues *q = queues_new(0);
  if (!seq) {
    rc = gp_err_set(err, GP_EINVAL, path, d->root ? d->root->line : 1, "queues",
                    "expected a list of queues or a `queues:` list");
  } else {
    /* Users and groups belong to the server's config; the replay does not need them. */
    static const char *const extra[] = {"users", "groups", NULL};
    rc = gp_queues_read(d, seq, "queues", extra, q->arena, &q->queues, &q->n, err);
    if (!rc && q->n == 0) rc = gp_err_set(err, GP_EINVAL, path, seq->line, "queues", "no queue");
  }
  gp_doc_free(d);
  if (rc) {
    gp_replay_queues_free(q);
    return rc;
  }
  *ret = q;
  return 0;
}

static bool has_queue(const gp_replay_queues *q, const char *name) {
  for (int i = 0; i < q->n; i++)
    if (strcmp(q->queues[i].name, name) == 0) return true;
  return false;
}

/* Queue names the trace uses, in order of first use in the (sorted) trace. */
static void add_trace_queues(gp_replay_queues *q, const gp_trace *t) {
  char *seen = gp_xcalloc(t->n_names ? t->n_names : 1, 1);
  for (size_t i = 0; i < t->n_jobs; i++) {
    int k = t->jobs[i].queue;
    if (seen[k]) continue;
    seen[k] = 1;
    if (!has_queue(q, t->names[k])) queue_init(q, t->names[k], 0);
  }
  free(seen);
}

static int count_trace_queues(const gp_trace *t) {
  char *seen = gp_xcalloc(t->n_names ? t->n_names : 1, 1);
  int n = 0;
  for (size_t i = 0; i < t->n_jobs; i++)
    if (!seen[t->jobs[i].queue]) seen[t->jobs[i].queue] = 1, n++;
  free(seen);
  return n;
}

int gp_replay_queues_from_vc_file(const char *path, int gpus_per_node, const gp_trace *trace,
                                  gp_replay_queues **ret, gp_err *err) {
  gp__sim_vc_entry *v = NULL;
  int n = 0;
  int rc = gp__sim_read_vc_file(path, &v, &n, err);
  if (rc) return rc;
  gp_replay_queues *q = queues_new(n + (trace ? count_trace_queues(trace) : 0));
  for (int i = 0; i < n && !rc; i++) {
    if (has_queue(q, v[i].name))
      rc = gp_err_set(err, GP_EINVAL, path, v[i].line, NULL, "virtual cluster '%s' listed twice",
                      v[i].name);
    else
      queue_init(q, v[i].name, (double)v[i].nodes * gpus_per_node);
  }
  free(v);
  if (rc) {
    gp_replay_queues_free(q);
    return rc;
  }
  if (trace) add_trace_queues(q, trace);
  *ret = q;
  return 0;
}

gp_replay_queues *gp_replay_queues_from_trace(const gp_trace *trace) {
  gp_replay_queues *q = queues_new(count_trace_queues(trace));
  add_trace_queues(q, trace);
  return q;
}
