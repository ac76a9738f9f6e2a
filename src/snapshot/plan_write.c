/* SPDX-License-Identifier: Apache-2.0 */
/* Writes a plan as JSON (jansson, insertion-ordered keys, fixed number formatting) or as
 * text tables (see plan_write.h). Lists are put in a canonical order first, so the output
 * depends only on what was decided, not on the order the core decided it in. */
#include "snapshot/plan_write.h"

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- canonical order ---- */

/* Sorts `n` elements of `size` bytes by the int at offset `key` (then the int at `key2`,
 * when >= 0), stably, into a new array of indexes. */
typedef struct sort_item {
  int k1, k2, pos;
} sort_item;

static int item_cmp(const void *a, const void *b) {
  const sort_item *x = a, *y = b;
  if (x->k1 != y->k1) return x->k1 < y->k1 ? -1 : 1;
  if (x->k2 != y->k2) return x->k2 < y->k2 ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int *sorted_order(const void *base, int n, size_t size, size_t key, long key2) {
  sort_item *it = calloc((size_t)(n ? n : 1), sizeof *it);
  int *order = calloc((size_t)(n ? n : 1), sizeof *order);
  if (!it || !order) abort();
  for (int i = 0; i < n; i++) {
    const char *e = (const char *)base + (size_t)i * size;
    memcpy(&it[i].k1, e + key, sizeof(int));
    if (key2 >= 0) memcpy(&it[i].k2, e + key2, sizeof(int));
    it[i].pos = i;
  }
  qsort(it, (size_t)n, sizeof *it, item_cmp);
  for (int i = 0; i < n; i++) order[i] = it[i].pos;
  free(it);
  return order;
}

static const char *job_id(const gp_view *v, int j) {
  return j >= 0 && j < v->n_jobs ? v->jobs[j].id : "?";
}

static const char *node_name(const gp_view *v, int n) {
  return n >= 0 && n < v->n_nodes ? v->nodes[n].name : "?";
}

/* ---- JSON ---- */

/* GPUs as people write them: 4, 2.5, 2.667 (three decimals at most). */
static json_t *gpus_json(double x) {
  double r = round(x * 1000) / 1000;
  if (fabs(r - round(r)) < 1e-9 && fabs(r) < 1e15) return json_integer((json_int_t)llround(r));
  return json_real(r);
}

static json_t *placement_json(const gp_view *v, const gp_job *job, const gp_placement *p) {
  json_t *o = json_object();
  json_object_set_new(o, "node", json_string(node_name(v, p->node)));
  json_t *ids = json_array();
  for (int g = 0; g < GP_MAX_NODE_GPUS; g++)
    if (p->gpu_mask & (1u << g)) json_array_append_new(ids, json_integer(g));
  json_object_set_new(o, "gpu_ids", ids);
  bool whole = job && job->req.gpus_per_task > 0;
  if (!whole && p->mig_instance < 0 && p->gpu_milli > 0 && p->gpu_milli < GP_GPU_MILLI)
    json_object_set_new(o, "gpu_milli", json_integer(p->gpu_milli));
  if (!whole && p->mig_instance < 0 && p->gpu_mem_mib > 0)
    json_object_set_new(o, "gpu_mem_mib", json_integer(p->gpu_mem_mib));
  if (p->mig_instance >= 0) {
    json_object_set_new(o, "mig_instance", json_integer(p->mig_instance));
    const gp_node *node = p->node >= 0 && p->node < v->n_nodes ? &v->nodes[p->node] : NULL;
    int g = p->gpu_mask ? __builtin_ctz(p->gpu_mask) : -1;
    if (node && node->gpus && g >= 0 && g < node->n_gpus &&
        p->mig_instance < node->gpus[g].n_mig)
      json_object_set_new(o, "mig_profile",
                          json_string(node->gpus[g].mig[p->mig_instance].profile));
  }
  return o;
}

static json_t *starts_json(const gp_plan *plan, const gp_view *v) {
  json_t *a = json_array();
  int *order = sorted_order(plan->starts, plan->n_starts, sizeof *plan->starts,
                            offsetof(gp_plan_start, job), -1);
  for (int i = 0; i < plan->n_starts; i++) {
    const gp_plan_start *s = &plan->starts[order[i]];
    const gp_job *job = s->job >= 0 && s->job < v->n_jobs ? &v->jobs[s->job] : NULL;
    json_t *o = json_object(), *ps = json_array();
    json_object_set_new(o, "job", json_string(job_id(v, s->job)));
    for (int k = 0; k < s->n_placements; k++)
      json_array_append_new(ps, placement_json(v, job, &s->placements[k]));
    json_object_set_new(o, "placements", ps);
    json_array_append_new(a, o);
  }
  free(order);
  return a;
}

static json_t *preemptions_json(const gp_plan *plan, const gp_view *v) {
  json_t *a = json_array();
  int *order = sorted_order(plan->preemptions, plan->n_preemptions, sizeof *plan->preemptions,
                            offsetof(gp_plan_preemption, for_job),
                            (long)offsetof(gp_plan_preemption, job));
  for (int i = 0; i < plan->n_preemptions; i++) {
    const gp_plan_preemption *p = &plan->preemptions[order[i]];
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(job_id(v, p->job)));
    json_object_set_new(o, "for", json_string(job_id(v, p->for_job)));
    json_object_set_new(o, "kind", json_string(gp_preempt_kind_name(p->kind)));
    json_array_append_new(a, o);
  }
  free(order);
  return a;
}

static json_t *reservations_json(const gp_plan *plan, const gp_view *v) {
  json_t *a = json_array();
  int *order = sorted_order(plan->reservations, plan->n_reservations,
                            sizeof *plan->reservations, offsetof(gp_plan_reservation, job), -1);
  for (int i = 0; i < plan->n_reservations; i++) {
    const gp_plan_reservation *r = &plan->reservations[order[i]];
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(job_id(v, r->job)));
    json_object_set_new(o, "at", json_integer(r->at));
    json_array_append_new(a, o);
  }
  free(order);
  return a;
}

static json_t *pending_json(const gp_plan *plan, const gp_view *v) {
  json_t *a = json_array();
  int *order = sorted_order(plan->pending, plan->n_pending, sizeof *plan->pending,
                            offsetof(gp_plan_pending, job), -1);
  for (int i = 0; i < plan->n_pending; i++) {
    const gp_plan_pending *p = &plan->pending[order[i]];
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(job_id(v, p->job)));
    json_object_set_new(o, "reason", json_string(gp_pending_reason_name(p->reason)));
    json_object_set_new(o, "message", json_string(p->message ? p->message : ""));
    json_array_append_new(a, o);
  }
  free(order);
  return a;
}

static const char *template_name(const gp_view *v, int t) {
  return t >= 0 && t < v->n_templates ? v->templates[t].node.name : "-";
}

/* The scale-up and scale-down of gp_scale_propose, and each considered job's note. */
static json_t *scale_json(const gp_plan *plan, const gp_view *v) {
  json_t *o = json_object(), *c = json_array(), *d = json_array(), *n = json_array();
  for (int i = 0; i < plan->n_creates; i++) {
    const gp_plan_create *x = &plan->creates[i];
    json_array_append_new(c, json_pack("{s:s, s:i, s:s}", "template", template_name(v, x->tmpl), "count",
                                       x->count, "for_job", job_id(v, x->job)));
  }
  for (int i = 0; i < plan->n_deletes; i++)
    json_array_append_new(d, json_pack("{s:s, s:I}", "node", node_name(v, plan->deletes[i].node), "idle_since",
                                       (json_int_t)plan->deletes[i].idle_since));
  for (int i = 0; i < plan->n_scale_notes; i++) {
    const gp_plan_scale_note *x = &plan->scale_notes[i];
    json_array_append_new(n, json_pack("{s:s, s:s, s:s, s:i}", "job", job_id(v, x->job), "state",
                                       gp_scale_state_name(x->state), "template", template_name(v, x->tmpl),
                                       "count", x->count));
  }
  json_object_set_new(o, "create", c);
  json_object_set_new(o, "delete", d);
  json_object_set_new(o, "notes", n);
  return o;
}

static json_t *ended_json(const gp_plan *plan, const gp_view *v) {
  json_t *a = json_array();
  int *order = sorted_order(plan->ended, plan->n_ended, sizeof *plan->ended,
                            offsetof(gp_plan_end, job), -1);
  for (int i = 0; i < plan->n_ended; i++) {
    const gp_plan_end *e = &plan->ended[order[i]];
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(job_id(v, e->job)));
    json_object_set_new(o, "reason", json_string(gp_end_reason_name(e->reason)));
    json_object_set_new(o, "message", json_string(e->message ? e->message : ""));
    json_array_append_new(a, o);
  }
  free(order);
  return a;
}

static json_t *queues_json(const gp_plan *plan) {
  json_t *a = json_array();
  for (int i = 0; i < plan->n_queues; i++) {
    const gp_plan_queue *q = &plan->queues[i];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(q->name ? q->name : "?"));
    json_object_set_new(o, "deserved", gpus_json(q->deserved));
    json_object_set_new(o, "fair_share", gpus_json(q->fair_share));
    json_object_set_new(o, "allocated", gpus_json(q->allocated));
    json_object_set_new(o, "pending", gpus_json(q->pending));
    json_object_set_new(o, "limit", q->limit < 0 ? json_null() : gpus_json(q->limit));
    json_object_set_new(o, "weight", gpus_json(q->weight));
    json_object_set_new(o, "running_jobs", json_integer(q->running_jobs));
    json_object_set_new(o, "pending_jobs", json_integer(q->pending_jobs));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *mig_json(const gp_plan *plan, const gp_view *v) {
  json_t *a = json_array();
  for (int i = 0; i < plan->n_mig; i++) {
    const gp_plan_mig *m = &plan->mig[i];
    json_t *o = json_object(), *l = json_array();
    json_object_set_new(o, "node", json_string(node_name(v, m->node)));
    json_object_set_new(o, "gpu", json_integer(m->gpu));
    for (int k = 0; k < m->n_instances; k++) {
      json_t *inst = json_object();
      json_object_set_new(inst, "profile", json_string(m->profiles[k]));
      json_object_set_new(inst, "start_slot", json_integer(m->start_slots[k]));
      json_array_append_new(l, inst);
    }
    json_object_set_new(o, "layout", l);
    json_array_append_new(a, o);
  }
  return a;
}

void gp_plan_write_json(const gp_plan *plan, const gp_view *view, gp_buf *out) {
  json_t *root = json_object();
  json_object_set_new(root, "now", json_integer(plan->now));
  json_object_set_new(root, "starts", starts_json(plan, view));
  json_object_set_new(root, "preemptions", preemptions_json(plan, view));
  json_object_set_new(root, "reservations", reservations_json(plan, view));
  json_object_set_new(root, "pending", pending_json(plan, view));
  json_object_set_new(root, "ended", ended_json(plan, view));
  json_object_set_new(root, "queues", queues_json(plan));
  json_object_set_new(root, "mig", mig_json(plan, view));
  if (view->n_templates) json_object_set_new(root, "scale", scale_json(plan, view));
  char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
  json_decref(root);
  if (!s) abort(); /* jansson fails only on out-of-memory */
  gp_buf_puts(out, s);
  gp_buf_puts(out, "\n");
  free(s);
}

/* ---- tables ---- */

static void fmt_gpus(char *buf, size_t size, double x) {
  double r = round(x * 100) / 100;
  if (fabs(r - round(r)) < 1e-9) snprintf(buf, size, "%.0f", r);
  else snprintf(buf, size, "%.2f", r);
}

/* "n1:0,1 n2:0,1" (with ":1g.10gb#2" or "@250m" for MIG and fractions). */
static void where(const gp_view *v, const gp_job *job, const gp_plan_start *s, gp_buf *b) {
  for (int k = 0; k < s->n_placements; k++) {
    const gp_placement *p = &s->placements[k];
    gp_buf_printf(b, "%s%s:", k ? " " : "", node_name(v, p->node));
    bool first = true;
    for (int g = 0; g < GP_MAX_NODE_GPUS; g++)
      if (p->gpu_mask & (1u << g)) {
        gp_buf_printf(b, "%s%d", first ? "" : ",", g);
        first = false;
      }
    if (p->mig_instance >= 0) gp_buf_printf(b, "/mig%d", p->mig_instance);
    else if (job && job->req.gpus_per_task == 0 && p->gpu_milli > 0 &&
             p->gpu_milli < GP_GPU_MILLI)
      gp_buf_printf(b, "@%dm", p->gpu_milli);
  }
}

static const char *ask(const gp_job *job, char *buf, size_t size) {
  const gp_request *q = &job->req;
  if (q->mig_profile) snprintf(buf, size, "%dx%s", q->tasks, q->mig_profile);
  else if (q->gpu_milli) snprintf(buf, size, "%dx%.3g", q->tasks, q->gpu_milli / 1000.0);
  else if (q->gpu_mem_mib && q->gpu_mem_mib % 1024 == 0)
    snprintf(buf, size, "%dx%lldG", q->tasks, (long long)(q->gpu_mem_mib / 1024));
  else if (q->gpu_mem_mib) snprintf(buf, size, "%dx%lldM", q->tasks, (long long)q->gpu_mem_mib);
  else if (q->tasks > 1) snprintf(buf, size, "%dx%d", q->tasks, q->gpus_per_task);
  else snprintf(buf, size, "%d", q->gpus_per_task);
  return buf;
}

void gp_plan_write_table(const gp_plan *plan, const gp_view *v, gp_buf *out) {
  char a[64];
  gp_buf_printf(out, "Plan at t=%lld: %d start%s, %d preemption%s, %d reservation%s, "
                     "%d pending, %d ended\n",
                (long long)plan->now, plan->n_starts, plan->n_starts == 1 ? "" : "s",
                plan->n_preemptions, plan->n_preemptions == 1 ? "" : "s",
                plan->n_reservations, plan->n_reservations == 1 ? "" : "s", plan->n_pending,
                plan->n_ended);
  if (plan->n_starts) {
    gp_buf_printf(out, "\nSTART %-20s %-20s %-10s %s\n", "JOB", "QUEUE", "GPUS", "WHERE");
    int *order = sorted_order(plan->starts, plan->n_starts, sizeof *plan->starts,
                              offsetof(gp_plan_start, job), -1);
    for (int i = 0; i < plan->n_starts; i++) {
      const gp_plan_start *s = &plan->starts[order[i]];
      const gp_job *job = s->job >= 0 && s->job < v->n_jobs ? &v->jobs[s->job] : NULL;
      gp_buf_printf(out, "      %-20s %-20s %-10s ", job_id(v, s->job), job ? job->queue : "?",
                    job ? ask(job, a, sizeof a) : "?");
      where(v, job, s, out);
      gp_buf_puts(out, "\n");
    }
    free(order);
  }
  if (plan->n_preemptions) {
    gp_buf_printf(out, "\nPREEMPT %-18s %-24s %s\n", "JOB", "FOR", "KIND");
    int *order = sorted_order(plan->preemptions, plan->n_preemptions,
                              sizeof *plan->preemptions, offsetof(gp_plan_preemption, for_job),
                              (long)offsetof(gp_plan_preemption, job));
    for (int i = 0; i < plan->n_preemptions; i++) {
      const gp_plan_preemption *p = &plan->preemptions[order[i]];
      gp_buf_printf(out, "        %-18s %-24s %s\n", job_id(v, p->job), job_id(v, p->for_job),
                    gp_preempt_kind_name(p->kind));
    }
    free(order);
  }
  if (plan->n_reservations) {
    gp_buf_printf(out, "\nRESERVE %-18s %s\n", "JOB", "AT");
    int *order = sorted_order(plan->reservations, plan->n_reservations,
                              sizeof *plan->reservations, offsetof(gp_plan_reservation, job), -1);
    for (int i = 0; i < plan->n_reservations; i++) {
      const gp_plan_reservation *r = &plan->reservations[order[i]];
      gp_buf_printf(out, "        %-18s t=%lld (in %llds)\n", job_id(v, r->job),
                    (long long)r->at, (long long)(r->at - plan->now));
    }
    free(order);
  }
  if (plan->n_pending) {
    gp_buf_printf(out, "\nPENDING %-18s %-24s %s\n", "JOB", "REASON", "WHY");
    int *order = sorted_order(plan->pending, plan->n_pending, sizeof *plan->pending,
                              offsetof(gp_plan_pending, job), -1);
    for (int i = 0; i < plan->n_pending; i++) {
      const gp_plan_pending *p = &plan->pending[order[i]];
      gp_buf_printf(out, "        %-18s %-24s %s\n", job_id(v, p->job),
                    gp_pending_reason_name(p->reason), p->message ? p->message : "");
    }
    free(order);
  }
  if (plan->n_ended) {
    gp_buf_printf(out, "\nENDED   %-18s %-24s %s\n", "JOB", "REASON", "WHY");
    int *order = sorted_order(plan->ended, plan->n_ended, sizeof *plan->ended,
                              offsetof(gp_plan_end, job), -1);
    for (int i = 0; i < plan->n_ended; i++) {
      const gp_plan_end *e = &plan->ended[order[i]];
      gp_buf_printf(out, "        %-18s %-24s %s\n", job_id(v, e->job),
                    gp_end_reason_name(e->reason), e->message ? e->message : "");
    }
    free(order);
  }
  if (plan->n_mig) {
    gp_buf_printf(out, "\nMIG     %-18s %s\n", "GPU", "NEW LAYOUT");
    for (int i = 0; i < plan->n_mig; i++) {
      const gp_plan_mig *m = &plan->mig[i];
      char g[160];
      snprintf(g, sizeof g, "%s/%d", node_name(v, m->node), m->gpu);
      gp_buf_printf(out, "        %-18s ", g);
      for (int k = 0; k < m->n_instances; k++)
        gp_buf_printf(out, "%s%s@%d", k ? "," : "", m->profiles[k], m->start_slots[k]);
      gp_buf_puts(out, "\n");
    }
  }
  if (plan->n_creates || plan->n_deletes) {
    gp_buf_printf(out, "\nSCALE   %-18s %-6s %s\n", "TEMPLATE/NODE", "COUNT", "FOR");
    for (int i = 0; i < plan->n_creates; i++)
      gp_buf_printf(out, "create  %-18s %-6d %s\n", template_name(v, plan->creates[i].tmpl),
                    plan->creates[i].count, job_id(v, plan->creates[i].job));
    for (int i = 0; i < plan->n_deletes; i++)
      gp_buf_printf(out, "delete  %-18s %-6s idle since t=%lld\n", node_name(v, plan->deletes[i].node), "1",
                    (long long)plan->deletes[i].idle_since);
  }
  if (plan->n_scale_notes) {
    gp_buf_printf(out, "\nWAITS   %-18s %-12s %-18s %s\n", "JOB", "SCALE", "TEMPLATE", "NODES");
    for (int i = 0; i < plan->n_scale_notes; i++) {
      const gp_plan_scale_note *x = &plan->scale_notes[i];
      gp_buf_printf(out, "        %-18s %-12s %-18s %d\n", job_id(v, x->job), gp_scale_state_name(x->state),
                    template_name(v, x->tmpl), x->count);
    }
  }
  if (plan->n_queues) {
    gp_buf_printf(out, "\n%-28s %8s %10s %9s %8s %6s\n", "QUEUE", "DESERVED", "FAIR SHARE",
                  "ALLOCATED", "PENDING", "LIMIT");
    for (int i = 0; i < plan->n_queues; i++) {
      const gp_plan_queue *q = &plan->queues[i];
      char d[32], f[32], al[32], p[32], l[32], name[160];
      fmt_gpus(d, sizeof d, q->deserved);
      fmt_gpus(f, sizeof f, q->fair_share);
      fmt_gpus(al, sizeof al, q->allocated);
      fmt_gpus(p, sizeof p, q->pending);
      if (q->limit < 0) snprintf(l, sizeof l, "-");
      else fmt_gpus(l, sizeof l, q->limit);
      /* Indent children under their parent, as in `gpool queues`. */
      int depth = 0;
      for (int k = q->parent; k >= 0 && k < plan->n_queues && depth < 16;
           k = plan->queues[k].parent)
        depth++;
      snprintf(name, sizeof name, "%*s%s", depth * 2, "", q->name ? q->name : "?");
      gp_buf_printf(out, "%-28s %8s %10s %9s %8s %6s\n", name, d, f, al, p, l);
    }
  }
}
