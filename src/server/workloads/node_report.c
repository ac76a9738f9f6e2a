/* SPDX-License-Identifier: Apache-2.0 */
/* What an agent says its node holds against what the server believes runs there.
 *
 * Every heartbeat lists the jobs the agent runs (`jobs`) and those that ended whose end it
 * has not yet had received (`ended`). A job the server believes runs on a live node, that
 * the agent has not listed for a heartbeat period and at least two heartbeats, and whose
 * start order the agent has acknowledged, has an end the server will never hear of (an
 * `exited` event lost on the way, a store or agent bug): without this check it would hold
 * its GPUs for ever. It is ended as a lost job: requeued when it allows it, else failed
 * with a reason that says so; a job being stopped ends as its stop asked. Nothing is sent
 * to that node (its agent does not have the job), so nothing can run twice there.
 *
 * The check runs in the state tick over the active jobs (no per-heartbeat scan of every
 * job), against each node's last list, kept sorted for a binary search. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/workloads/node_report.h"
#include "util/mem.h"

/* More than a node could run; a longer list is not trusted (the node stays unchecked). */
#define REPORT_MAX 100000

static int cmp_id(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* A job id as the agent wrote it; false for anything that is not one of ours. */
static bool parse_id(const char *s, int64_t *ret) {
  if (!s || !*s || strlen(s) > 19) return false;
  int64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
  }
  *ret = v;
  return v > 0;
}

void gp__srv_node_report_reset(gp_srv_node *n) {
  n->n_report = 0;
  n->report_valid = false;
}

static void report_add(gp_srv_node *n, const char *id) {
  int64_t v;
  if (!parse_id(id, &v)) return; /* not a job of this server: nothing to match */
  gp_xgrow((void **)&n->report_ids, &n->cap_report, (size_t)n->n_report + 1, sizeof *n->report_ids);
  n->report_ids[n->n_report++] = v;
}

void gp__srv_node_report_take(gp_srv_node *n, const json_t *jobs, const json_t *ended) {
  gp__srv_node_report_reset(n);
  /* An agent without a list (an older one, a malformed body) is not checked: what it
   * holds is unknown, which is no reason to end anything. */
  if (!json_is_array(jobs) || (ended && !json_is_null(ended) && !json_is_array(ended))) return;
  size_t total = json_array_size(jobs) + json_array_size(ended);
  if (total > REPORT_MAX) return;
  size_t i;
  const json_t *e;
  json_array_foreach(jobs, i, e) {
    const char *id = json_string_value(json_object_get(e, "id"));
    if (!id) {
      gp__srv_node_report_reset(n);
      return;
    }
    report_add(n, id);
  }
  json_array_foreach(ended, i, e) {
    if (!json_is_string(e)) {
      gp__srv_node_report_reset(n);
      return;
    }
    report_add(n, json_string_value(e));
  }
  if (n->n_report > 1) qsort(n->report_ids, (size_t)n->n_report, sizeof *n->report_ids, cmp_id);
  n->report_valid = true;
  n->report_seq++;
}

static bool listed(const gp_srv_node *n, int64_t id) {
  return n->n_report > 0 &&
         bsearch(&id, n->report_ids, (size_t)n->n_report, sizeof *n->report_ids, cmp_id) != NULL;
}

/* A start order the agent has not acknowledged: it may not have the job yet. */
static bool start_pending(const gp_srv_node *n, int64_t id) {
  for (int o = 0; o < n->n_orders; o++)
    if (n->orders[o].is_start && n->orders[o].job_id == id) return true;
  return false;
}

typedef struct victim {
  gp_srv_job *job;
  int node;
} victim;

static int end_unreported(gp_srv_state *s, gp_srv_job *j, int idx, int64_t now_s, gp_err *err) {
  if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) return 0;
  const char *node = s->nodes[idx]->name;
  char why[300];
  snprintf(why, sizeof why, "the agent on node %.100s does not run the job and never reported its end",
           node);
  fprintf(stderr, "gpool server: node %s: job %s: %s\n", node, j->idstr, why);
  if (j->state == GP_JOB_RUNNING && j->requeue) {
    /* As for a lost node; the node's own tasks are over (nothing to stop there). */
    for (int t = 0; t < j->n_alloc; t++)
      if (j->alloc[t].node == idx && !j->alloc[t].exited) {
        j->alloc[t].exited = true;
        j->alloc[t].exit_code = -1;
      }
    return gp__srv_job_lost(s, j, why, now_s, err);
  }
  /* A failed task (the rest of a gang is stopped), or the end of a stop in progress,
   * which keeps its meaning (cancelled, preempted, timeout). */
  char reason[320];
  snprintf(reason, sizeof reason, "lost: %s", why);
  return gp__srv_job_task_exited(s, j, idx, -1, -1, 0, reason, now_s, err);
}

int gp__srv_node_reports_check(gp_srv_state *s, int64_t now_s, int64_t now_ms, gp_err *err) {
  int64_t grace_ms = (int64_t)s->cfg->heartbeat_s * 1000;
  if (grace_ms < 1000) grace_ms = 1000;
  if (now_ms <= 0) now_ms = 1; /* 0 marks "listed" */
  victim *list = NULL;
  size_t n_list = 0, cap_list = 0;
  for (int a = 0; a < s->n_active; a++) {
    gp_srv_job *j = s->active[a];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) continue;
    int gone = -1;
    for (int t = 0; t < j->n_alloc; t++) {
      gp_srv_alloc *al = &j->alloc[t];
      if (al->exited || al->node < 0 || al->node >= s->n_nodes) continue;
      gp_srv_node *n = s->nodes[al->node];
      if (!n->alive || !n->report_valid || listed(n, j->id) || start_pending(n, j->id)) {
        al->unreported_ms = 0;
        continue;
      }
      if (!al->unreported_ms) {
        al->unreported_ms = now_ms;
        al->unreported_seq = n->report_seq;
      } else if (n->report_seq > al->unreported_seq && now_ms - al->unreported_ms >= grace_ms) {
        gone = al->node;
      }
    }
    if (gone < 0) continue;
    gp_xgrow((void **)&list, &cap_list, n_list + 1, sizeof *list);
    list[n_list++] = (victim){j, gone};
  }
  /* Ending a job edits the active list: collected first. */
  int r = 0;
  for (size_t i = 0; i < n_list && !r; i++) r = end_unreported(s, list[i].job, list[i].node, now_s, err);
  free(list);
  return r;
}
