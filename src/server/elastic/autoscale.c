/* SPDX-License-Identifier: Apache-2.0 */
/* The autoscaler's records on the state thread (autoscale.h): what the providers answered,
 * which created nodes registered as promised, and which instances must be given back,
 * before each step (the proposal after it is autoscale_step.c). Every provider call goes
 * to the workers (autoscale_calls.c); nothing here waits for a provider. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/scale.h"
#include "server/elastic/autoscale_int.h"
#include "server/elastic/interrupt.h"
#include "server/state/server_int.h"
#include "util/mem.h"

int64_t gp__srv_as_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gp__srv_as_tmpl_index(const gp_srv_autoscale *a, const char *name) {
  for (int i = 0; name && i < a->n_tmpl; i++)
    if (strcmp(a->tmpl[i].nt->t.name, name) == 0) return i;
  return -1;
}

double gp__srv_as_price(const gp_srv_autoscale *a, int t) {
  return a->tmpl[t].nt->t.price_per_gpu_hour;
}

void gp__srv_as_call_out(gp_srv_autoscale *a, gp_provider_verb verb, int t, int count,
                         const char *id, int64_t job_id, int64_t job_since) {
  gp_srv_as_call *c = gp_xcalloc(1, sizeof *c);
  c->verb = verb;
  c->tmpl = t;
  c->count = count;
  c->job_id = job_id;
  c->job_since = job_since;
  if (id) snprintf(c->id, sizeof c->id, "%s", id);
  if (verb != GP_PROVIDER_LIST)
    snprintf(c->key, sizeof c->key, "%.63s-%s-%lld-%llu", a->tmpl[t].nt->t.name,
             gp_provider_verb_name(verb), (long long)a->started_at,
             (unsigned long long)++a->tmpl[t].seq);
  gp__srv_as_submit(a, c);
}

gp_srv_autoscale *gp__srv_autoscale_new(const gp_server_config *cfg) {
  if (cfg->n_node_templates <= 0) return NULL;
  gp_srv_autoscale *a = gp_xcalloc(1, sizeof *a);
  a->cfg = cfg;
  a->n_tmpl = cfg->n_node_templates;
  a->tmpl = gp_xcalloc((size_t)a->n_tmpl, sizeof *a->tmpl);
  a->shapes = gp_xcalloc((size_t)a->n_tmpl, sizeof *a->shapes);
  for (int i = 0; i < a->n_tmpl; i++) {
    a->tmpl[i].nt = &cfg->node_templates[i];
    a->shapes[i] = cfg->node_templates[i].spec.t;
  }
  a->started_at = (int64_t)time(NULL);
  static const double call_bounds[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300};
  gp_hist_init(&a->call_s, call_bounds, (int)(sizeof call_bounds / sizeof call_bounds[0]));
  gp_hist_init(&a->pending_to_call_s, gp_hist_bounds_notice_s, gp_hist_n_bounds_notice_s);
  gp__srv_as_workers_start(a);
  for (int i = 0; i < a->n_tmpl; i++) {
    a->tmpl[i].list_out = true;
    gp__srv_as_call_out(a, GP_PROVIDER_LIST, i, 0, NULL, 0, 0);
  }
  return a;
}

void gp__srv_autoscale_free(gp_srv_autoscale *a) {
  if (!a) return;
  gp__srv_as_workers_stop(a);
  free(a->shapes);
  free(a->tmpl);
  free(a->inst);
  free(a->idle);
  free(a->notes);
  free(a);
}

const gp_template *gp__srv_autoscale_templates(const gp_srv_autoscale *a, int *ret_n) {
  *ret_n = a ? a->n_tmpl : 0;
  return a ? a->shapes : NULL;
}

bool gp__srv_autoscale_could_run(const gp_srv_autoscale *a, const gp_request *r) {
  for (int i = 0; a && i < a->n_tmpl; i++)
    if (gp_scale_could_hold(&a->shapes[i], r)) return true;
  return false;
}

/* ---- records ---- */

gp_srv_as_inst *gp__srv_as_find(gp_srv_autoscale *a, const char *id, const char *node) {
  if (node && !node[0]) node = NULL; /* orphans have no node */
  for (int i = 0; i < a->n_inst; i++)
    if ((id && strcmp(a->inst[i].id, id) == 0) || (node && strcmp(a->inst[i].node, node) == 0))
      return &a->inst[i];
  return NULL;
}

gp_srv_as_inst *gp__srv_as_add(gp_srv_autoscale *a, int t, gp_srv_as_phase ph, const char *id,
                               const char *node) {
  if (a->n_inst >= GP_SRV_AS_MAX_INSTANCES) return NULL;
  gp_xgrow((void **)&a->inst, &a->cap_inst, (size_t)a->n_inst + 1, sizeof *a->inst);
  gp_srv_as_inst *in = &a->inst[a->n_inst++];
  memset(in, 0, sizeof *in);
  in->tmpl = t;
  in->phase = ph;
  in->price = -1;
  snprintf(in->id, sizeof in->id, "%s", id);
  snprintf(in->node, sizeof in->node, "%s", node ? node : "");
  return in;
}

void gp__srv_as_drop(gp_srv_autoscale *a, gp_srv_as_inst *in) {
  *in = a->inst[--a->n_inst];
}

static void fmt_duration(int s, char *buf, size_t size) {
  if (s % 3600 == 0) snprintf(buf, size, "%dh", s / 3600);
  else if (s % 60 == 0) snprintf(buf, size, "%dm", s / 60);
  else snprintf(buf, size, "%ds", s);
}

int64_t gp__srv_as_backoff_delay(const gp_autoscale_config *c, int failures) {
  int64_t delay = c->backoff_initial_s;
  for (int i = 1; i < failures && delay < c->backoff_max_s; i++) delay *= 2;
  return delay > c->backoff_max_s ? c->backoff_max_s : delay;
}

void gp__srv_as_backoff(gp_srv_autoscale *a, int t, const char *cls, const char *msg,
                        int retry_after, int64_t now) {
  gp_srv_as_tmpl *st = &a->tmpl[t];
  int64_t delay = gp__srv_as_backoff_delay(&a->cfg->autoscale, ++st->failures);
  if (retry_after > delay) delay = retry_after;
  st->retry_at = now + delay;
  st->err_at = now;
  snprintf(st->err_class, sizeof st->err_class, "%s", cls);
  /* Cut on a character boundary: the message is the provider's UTF-8 text with a prefix,
   * and a split character would make it no JSON string (GET /v1/templates, job reasons). */
  size_t n = strlen(msg), k = n < sizeof st->err_message - 1 ? n : sizeof st->err_message - 1;
  while (k > 0 && k < n && ((unsigned char)msg[k] & 0xC0) == 0x80) k--;
  memcpy(st->err_message, msg, k);
  st->err_message[k] = '\0';
  /* The next step proposes again, so a job waiting for this template is told at once and
   * the next template in order is tried without waiting for the interval. */
  a->next_run_ms = 0;
  bool loud = strcmp(cls, "auth") == 0 || strcmp(cls, "invalid") == 0 || strcmp(cls, "broken") == 0;
  fprintf(stderr, "gpool server: autoscaler: %stemplate %s failed (%s: %s); next try in %lld s%s\n",
          loud ? "ATTENTION: " : "", st->nt->t.name, cls, msg, (long long)delay,
          loud ? " (an admin must look at the provider or the template)" : "");
}

int gp__srv_as_job_failed(gp_srv_state *s, gp_srv_autoscale *a, int64_t job, int t, int64_t now,
                          gp_err *err) {
  if (job <= 0) return 0;
  char idstr[24];
  snprintf(idstr, sizeof idstr, "%lld", (long long)job);
  gp_srv_job *j = gp__srv_job_get(s, idstr);
  if (!j || j->state != GP_JOB_PENDING) return 0;
  const gp_srv_as_tmpl *st = &a->tmpl[t];
  json_t *extra = json_object();
  json_object_set_new(extra, "template", json_string(st->nt->t.name));
  json_object_set_new(extra, "class", json_string(st->err_class));
  json_object_set_new(extra, "message", json_string(st->err_message));
  json_object_set_new(extra, "retry_at", json_integer(st->retry_at));
  return gp__srv_job_event(s, j, "scale_failed", now, extra, err);
}

static void succeeded(gp_srv_autoscale *a, int t) {
  a->tmpl[t].failures = 0;
  a->tmpl[t].retry_at = 0;
}

void gp__srv_as_delete(gp_srv_autoscale *a, gp_srv_as_inst *in) {
  in->call_out = true;
  gp__srv_as_call_out(a, GP_PROVIDER_DELETE, in->tmpl, 0, in->id, 0, 0);
}

/* Forgets a node whose instance is gone, unless a job holds it (then it stays, and goes
 * down as any lost node when its agent stops answering). */
int gp__srv_as_remove_node(gp_srv_state *s, gp_srv_node *n, int64_t now, gp_err *err) {
  const gp_srv_job *holder = gp__srv_node_holder(s, n);
  if (holder) {
    fprintf(stderr, "gpool server: autoscaler: node %s holds job %s: not removed\n", n->name,
            holder->idstr);
    return 0;
  }
  int r = n->alive ? gp__srv_node_down(s, n, "deleted by the autoscaler", now, err) : 0;
  if (r) return r;
  gp__srv_waiter_node_gone(n);
  fprintf(stderr, "gpool server: autoscaler: node %s removed\n", n->name);
  return gp__srv_node_remove(s, n, now, err);
}

/* ---- before a step ---- */

/* A created node counts once its agent registered with the GPUs promised; one with fewer
 * (or another model) is cordoned and its creation counts as failed. */
static int registered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_inst *in, gp_srv_node *n,
                      int64_t now, gp_err *err) {
  const gp_provider_template *t = &a->tmpl[in->tmpl].nt->t;
  if (n->provider_instance && strcmp(n->provider_instance, in->id) != 0) {
    /* Never re-bound: the node's own instance stays its, this one is deleted (the answers
     * keep this from happening; a node's provider fields come back from the store). */
    char why[400];
    snprintf(why, sizeof why, "node %s registered for instance %s, but instance %s holds that "
             "node; %s is deleted", n->name, in->id, n->provider_instance, in->id);
    in->phase = GP_SRV_AS_DELETING;
    in->node[0] = '\0';
    in->orphan = true;
    gp__srv_as_backoff(a, in->tmpl, "invalid", why, -1, now);
    return 0;
  }
  double price = in->price >= 0 ? in->price : t->price_per_gpu_hour;
  int r = gp__srv_node_set_provider(s, n, t->name, in->id, price, err);
  if (r) return r;
  bool ok = n->n_gpus >= t->gpus && n->model && strcasecmp(n->model, t->model) == 0;
  if (ok) {
    succeeded(a, in->tmpl);
    fprintf(stderr, "gpool server: autoscaler: node %s of template %s registered (%lld s after "
                    "it was asked for)\n", n->name, t->name, (long long)(now - in->asked_at));
    gp__srv_as_drop(a, in);
    return 0;
  }
  char why[300];
  snprintf(why, sizeof why, "template %s promised %d x %s; the agent registered %d x %s", t->name,
           t->gpus, t->model, n->n_gpus, n->model ? n->model : "no GPU model");
  n->admin_state = GP_NODE_CORDON;
  free(n->reason);
  n->reason = gp_xstrdup(why);
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  gp__srv_as_backoff(a, in->tmpl, "short", why, -1, now);
  int64_t job = in->job;
  int tmpl = in->tmpl;
  gp__srv_as_drop(a, in);
  r = gp__srv_persist_node(s, n, err);
  return r ? r : gp__srv_as_job_failed(s, a, job, tmpl, now, err);
}

static int watch_creations(gp_srv_state *s, gp_srv_autoscale *a, int64_t now, gp_err *err) {
  int r = 0;
  for (int i = 0; i < a->n_inst && !r;) {
    gp_srv_as_inst *in = &a->inst[i];
    if (in->phase != GP_SRV_AS_CREATING) {
      i++;
      continue;
    }
    gp_srv_node *n = gp__srv_node_get(s, in->node);
    if (n && n->alive) {
      r = registered(s, a, in, n, now, err); /* drops a->inst[i], or makes it an orphan */
      continue;
    }
    if (now >= in->deadline) {
      char d[16], msg[400];
      fmt_duration(a->cfg->autoscale.resume_timeout_s, d, sizeof d);
      snprintf(msg, sizeof msg, "node %s (instance %s) did not register within resume_timeout %s; "
               "the instance is deleted", in->node, in->id, d);
      gp__srv_as_backoff(a, in->tmpl, "timeout", msg, -1, now);
      in->phase = GP_SRV_AS_DELETING;
      gp__srv_as_delete(a, in);
      r = gp__srv_as_job_failed(s, a, in->job, in->tmpl, now, err);
    }
    i++;
  }
  return r;
}

/* A provider's spot node whose interruption notice came is given back once its jobs have
 * left; its requeued jobs get a replacement through the normal proposal. */
static void give_back_interrupted(gp_srv_state *s, gp_srv_autoscale *a) {
  for (int i = 0; i < s->n_nodes; i++) {
    gp_srv_node *n = s->nodes[i];
    if (!n->provider_template || !n->provider_instance || !gp__srv_node_interrupted(n)) continue;
    int t = gp__srv_as_tmpl_index(a, n->provider_template);
    if (t < 0 || gp__srv_as_find(a, n->provider_instance, n->name) || gp__srv_node_holder(s, n)) continue;
    gp_srv_as_inst *in = gp__srv_as_add(a, t, GP_SRV_AS_DELETING, n->provider_instance, n->name);
    if (!in) return;
    in->interrupted = true;
    fprintf(stderr, "gpool server: autoscaler: node %s was interrupted and is empty: deleting "
                    "instance %s\n", n->name, in->id);
    gp__srv_as_delete(a, in);
  }
}

int gp__srv_autoscale_before(gp_srv_state *s, int64_t now, gp_err *err) {
  gp_srv_autoscale *a = s->autoscale;
  if (!a) return 0;
  int r = gp__srv_as_take_answers(s, a, now, err);
  if (!r) r = watch_creations(s, a, now, err);
  if (r) return r;
  give_back_interrupted(s, a);
  for (int i = 0; i < a->n_inst; i++) {
    gp_srv_as_inst *in = &a->inst[i];
    if (in->phase == GP_SRV_AS_DELETING && !in->call_out && now >= in->retry_at) gp__srv_as_delete(a, in);
  }
  for (int t = 0; t < a->n_tmpl; t++) {
    gp_srv_as_tmpl *st = &a->tmpl[t];
    /* Not while a create runs: its instances, listed before its answer came, would be
     * taken for an old instance passed off as new. */
    if (!st->listed && !st->list_out && st->creating_calls == 0 && now >= st->retry_at) {
      st->list_out = true;
      gp__srv_as_call_out(a, GP_PROVIDER_LIST, t, 0, NULL, 0, 0);
    }
  }
  return 0;
}

