/* SPDX-License-Identifier: Apache-2.0 */
/* The autoscaler after a scheduling step (autoscale.h): what the core is told of the
 * templates and the provider nodes, its proposal (gp_scale_propose) carried out, and the
 * scale notes that become pending reasons. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scale.h"
#include "server/elastic/autoscale_int.h"
#include "util/mem.h"

gp_srv_as_idle *gp__srv_as_idle_entry(gp_srv_autoscale *a, const char *node) {
  for (int i = 0; i < a->n_idle; i++)
    if (strcmp(a->idle[i].node, node) == 0) return &a->idle[i];
  gp_xgrow((void **)&a->idle, &a->cap_idle, (size_t)a->n_idle + 1, sizeof *a->idle);
  gp_srv_as_idle *e = &a->idle[a->n_idle++];
  memset(e, 0, sizeof *e);
  snprintf(e->node, sizeof e->node, "%s", node);
  return e;
}

/* When each provider node last became empty, and what the core is told of each node. */
static void track_nodes(gp_srv_state *s, gp_srv_autoscale *a, int64_t now, int *node_tmpl,
                        gp_time *idle_since) {
  int64_t *holder = gp_xcalloc((size_t)s->n_nodes + 1, sizeof *holder);
  for (int k = 0; k < s->n_active; k++) {
    const gp_srv_job *j = s->active[k];
    for (int t = 0; t < j->n_alloc; t++)
      if (j->alloc[t].node >= 0 && j->alloc[t].node < s->n_nodes) holder[j->alloc[t].node] = j->id;
  }
  for (int i = 0; i < a->n_idle; i++) a->idle[i].seen = false;
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    node_tmpl[i] = -1;
    idle_since[i] = 0;
    int t = n->provider_template ? gp__srv_as_tmpl_index(a, n->provider_template) : -1;
    if (t < 0) continue;
    gp_srv_as_idle *e = gp__srv_as_idle_entry(a, n->name);
    e->seen = true;
    if (holder[i]) {
      e->idle_since = 0;
      e->last_job = holder[i];
    } else if (!e->idle_since) {
      e->idle_since = now;
    }
    if (gp__srv_as_find(a, NULL, n->name)) continue; /* being deleted: not the core's to propose */
    node_tmpl[i] = t;
    idle_since[i] = e->idle_since;
  }
  for (int i = 0; i < a->n_idle;)
    if (!a->idle[i].seen) a->idle[i] = a->idle[--a->n_idle];
    else i++;
  free(holder);
}

/* What each template has now, for the core: its instances (created, being created, being
 * deleted; an interrupted node being deleted no longer counts, so its replacement is not
 * refused for max_nodes) and their cost. */
static double count_templates(const gp_srv_state *s, const gp_srv_autoscale *a, int64_t now,
                              gp_scale_template *out) {
  double cost = 0;
  for (int t = 0; t < a->n_tmpl; t++) {
    const gp_srv_as_tmpl *st = &a->tmpl[t];
    out[t] = (gp_scale_template){.nodes = st->creating_calls, .creating = st->creating_calls,
                                 .price_per_gpu_hour = gp__srv_as_price(a, t),
                                 .retry_at = st->listed ? st->retry_at : now + 1,
                                 .disruption_budget = st->nt->spec.disruption_budget};
    if (gp__srv_as_price(a, t) > 0) cost += gp__srv_as_price(a, t) * st->nt->t.gpus * st->creating_calls;
  }
  for (int i = 0; i < a->n_inst; i++) {
    const gp_srv_as_inst *in = &a->inst[i];
    if (in->interrupted) continue;
    gp_scale_template *o = &out[in->tmpl];
    o->nodes++;
    if (in->phase == GP_SRV_AS_CREATING) o->creating++;
    else o->deleting++;
    /* An instance is paid for until its provider confirms the delete: a registered node
     * is counted with the nodes below, every other record here (orphans included). */
    const gp_srv_node *n = in->node[0] ? gp__srv_node_get(s, in->node) : NULL;
    if (n && n->provider_template) continue;
    double p = in->price >= 0 ? in->price : gp__srv_as_price(a, in->tmpl);
    if (p > 0) cost += p * a->tmpl[in->tmpl].nt->t.gpus;
  }
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    int t = n->provider_template ? gp__srv_as_tmpl_index(a, n->provider_template) : -1;
    if (t < 0) continue;
    double p = n->provider_price >= 0 ? n->provider_price : gp__srv_as_price(a, t);
    if (p > 0) cost += p * n->n_gpus;
    const gp_srv_as_inst *in = NULL;
    for (int k = 0; k < a->n_inst && !in; k++)
      if (strcmp(a->inst[k].node, n->name) == 0) in = &a->inst[k];
    if (in) continue; /* being deleted: counted above */
    out[t].nodes++;
  }
  return cost;
}

static int note_by_job(const void *x, const void *y) {
  const gp_srv_as_note *p = x, *q = y;
  return p->job < q->job ? -1 : p->job > q->job;
}

/* The proposal's notes, each remembering the template whose new nodes its job last waited
 * for: when those fail (resume_timeout, a short node, a refused create), the job's reason
 * names that template, not the first one in order that is passed over. */
static void keep_notes(gp_srv_state *s, gp_srv_autoscale *a, const gp_plan *plan) {
  gp_srv_as_note *old = a->notes;
  int n_old = a->n_notes;
  if (n_old > 1) qsort(old, (size_t)n_old, sizeof *old, note_by_job);
  a->notes = NULL;
  a->n_notes = 0;
  a->cap_notes = 0;
  for (int i = 0; i < plan->n_scale_notes && a->n_notes < GP_SRV_AS_MAX_NOTES; i++) {
    const gp_plan_scale_note *sn = &plan->scale_notes[i];
    const gp_srv_job *j = gp__srv_view_job(s, sn->job);
    if (!j || sn->state == GP_SCALE_NO_TEMPLATE || sn->tmpl < 0 || sn->tmpl >= a->n_tmpl) continue;
    gp_srv_as_note key = {.job = j->id};
    const gp_srv_as_note *was = n_old ? bsearch(&key, old, (size_t)n_old, sizeof *old, note_by_job) : NULL;
    int waited = sn->state == GP_SCALE_WAITING ? sn->tmpl : was ? was->waited : -1;
    gp_xgrow((void **)&a->notes, &a->cap_notes, (size_t)a->n_notes + 1, sizeof *a->notes);
    a->notes[a->n_notes++] = (gp_srv_as_note){j->id, sn->tmpl, sn->state, sn->count, waited};
  }
  free(old);
}

/* The scale notes say more than the step's reason: they replace it while the job waits. */
static void apply_notes(gp_srv_state *s, gp_srv_autoscale *a, int64_t now) {
  for (int i = 0; i < a->n_notes; i++) {
    char idstr[24];
    snprintf(idstr, sizeof idstr, "%lld", (long long)a->notes[i].job);
    gp_srv_job *j = gp__srv_job_get(s, idstr);
    if (!j || j->state != GP_JOB_PENDING) continue;
    char msg[2048];
    gp__srv_as_note_message(a, &a->notes[i], now, msg, sizeof msg);
    if (!j->pending_message || strcmp(j->pending_message, msg) != 0) {
      free(j->pending_message);
      j->pending_message = gp_xstrdup(msg);
    }
  }
}

static int scale_up(gp_srv_state *s, gp_srv_autoscale *a, const gp_plan *plan, int64_t now,
                    gp_err *err) {
  int r = 0;
  for (int i = 0; i < plan->n_creates && !r; i++) {
    const gp_plan_create *c = &plan->creates[i];
    if (c->tmpl < 0 || c->tmpl >= a->n_tmpl || c->count < 1) continue;
    int count = c->count < GP_PROVIDER_MAX_INSTANCES ? c->count : GP_PROVIDER_MAX_INSTANCES;
    gp_srv_job *j = gp__srv_view_job(s, c->job);
    gp_srv_as_tmpl *st = &a->tmpl[c->tmpl];
    st->creating_calls += count;
    st->last_asked = now;
    gp__srv_as_call_out(a, GP_PROVIDER_CREATE, c->tmpl, count, NULL, j ? j->id : 0,
                        j && j->restarts == 0 ? j->submitted_at : 0);
    fprintf(stderr, "gpool server: autoscaler: asking template %s for %d node(s) for job %s\n",
            st->nt->t.name, count, j ? j->idstr : "?");
    if (j) {
      json_t *extra = json_object();
      json_object_set_new(extra, "template", json_string(st->nt->t.name));
      json_object_set_new(extra, "count", json_integer(count));
      r = gp__srv_job_event(s, j, "scale_up", now, extra, err);
    }
  }
  return r;
}

/* Gives back the empty provider nodes the core proposed: drained first (nothing new lands
 * there), deleted through the provider, removed once the provider confirms. */
static int scale_down(gp_srv_state *s, gp_srv_autoscale *a, const gp_plan *plan, int64_t now,
                      gp_err *err) {
  int r = 0;
  for (int i = 0; i < plan->n_deletes && !r; i++) {
    const gp_plan_delete *d = &plan->deletes[i];
    if (d->node < 0 || d->node >= s->n_nodes) continue;
    gp_srv_node *n = s->nodes[d->node];
    int t = n->provider_template ? gp__srv_as_tmpl_index(a, n->provider_template) : -1;
    if (t < 0 || !n->provider_instance || gp__srv_as_find(a, n->provider_instance, n->name)) continue;
    if (gp__srv_node_holder(s, n)) continue; /* a job started there since */
    gp_srv_as_inst *in = gp__srv_as_add(a, t, GP_SRV_AS_DELETING, n->provider_instance, n->name);
    if (!in) break;
    char since[16], why[96];
    gp__srv_as_clock(d->idle_since, since);
    snprintf(why, sizeof why, "scale-down: empty since %s UTC", since);
    n->admin_state = GP_NODE_DRAIN;
    free(n->reason);
    n->reason = gp_xstrdup(why);
    gp__srv_node_changed(s, n);
    s->sched_dirty = true;
    r = gp__srv_persist_node(s, n, err);
    fprintf(stderr, "gpool server: autoscaler: scale-down of node %s (template %s), %s\n", n->name,
            a->tmpl[t].nt->t.name, why);
    gp__srv_as_delete(a, in);
    const gp_srv_as_idle *e = gp__srv_as_idle_entry(a, n->name);
    char idstr[24];
    snprintf(idstr, sizeof idstr, "%lld", (long long)e->last_job);
    gp_srv_job *j = e->last_job ? gp__srv_job_get(s, idstr) : NULL;
    if (j && !r) {
      json_t *extra = json_object();
      json_object_set_new(extra, "node", json_string(n->name));
      json_object_set_new(extra, "template", json_string(a->tmpl[t].nt->t.name));
      json_object_set_new(extra, "idle_since", json_integer(d->idle_since));
      r = gp__srv_job_event(s, j, "scale_down", now, extra, err);
    }
  }
  return r;
}

int gp__srv_autoscale_after(gp_srv_state *s, const gp_view *v, gp_plan *plan, int64_t now,
                            gp_err *err) {
  gp_srv_autoscale *a = s->autoscale;
  if (!a) return 0;
  int64_t mono = gp__srv_as_mono_ms();
  /* Every `interval`, and at once for a job submitted since the last proposal: a new
   * gang's provider call waits for no timer. */
  int64_t newest = 0;
  for (int i = 0; i < plan->n_pending; i++) {
    const gp_srv_job *j = gp__srv_view_job(s, plan->pending[i].job);
    if (j && j->id > newest) newest = j->id;
  }
  if (mono < a->next_run_ms && newest <= a->newest_seen) {
    apply_notes(s, a, now);
    return 0;
  }
  if (newest > a->newest_seen) a->newest_seen = newest;
  a->next_run_ms = mono + a->cfg->autoscale.interval_ms;
  int *node_tmpl = gp_xcalloc((size_t)s->n_nodes + 1, sizeof *node_tmpl);
  gp_time *idle_since = gp_xcalloc((size_t)s->n_nodes + 1, sizeof *idle_since);
  gp_scale_template *tm = gp_xcalloc((size_t)a->n_tmpl, sizeof *tm);
  track_nodes(s, a, now, node_tmpl, idle_since);
  gp_scale_config sc = {.templates = tm,
                        .max_hourly_cost = a->cfg->autoscale.max_hourly_cost,
                        .hourly_cost = count_templates(s, a, now, tm),
                        .node_template = node_tmpl,
                        .node_idle_since = idle_since,
                        .scale_down_after = a->cfg->autoscale.scale_down_after_s};
  memcpy(sc.class_rank, a->cfg->autoscale.class_rank, sizeof sc.class_rank);
  int r = gp_scale_propose(&s->cfg->policy, v, &sc, plan, err);
  if (r) {
    fprintf(stderr, "gpool server: autoscaler: the proposal refused the view: %s\n", err->message);
    r = 0;
  } else {
    keep_notes(s, a, plan);
    r = scale_up(s, a, plan, now, err);
    if (!r) r = scale_down(s, a, plan, now, err);
  }
  apply_notes(s, a, now);
  free(node_tmpl);
  free(idle_since);
  free(tm);
  return r;
}
