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
#include "server/autoscale_int.h"
#include "server/server_int.h"
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

static void drop_inst(gp_srv_autoscale *a, gp_srv_as_inst *in) {
  *in = a->inst[--a->n_inst];
}

static void fmt_duration(int s, char *buf, size_t size) {
  if (s % 3600 == 0) snprintf(buf, size, "%dh", s / 3600);
  else if (s % 60 == 0) snprintf(buf, size, "%dm", s / 60);
  else snprintf(buf, size, "%ds", s);
}

/* A failed creation: the template is passed over until its backoff is over, doubling per
 * consecutive failure (a longer retry_after of the provider wins). */
static void backoff(gp_srv_autoscale *a, int t, const char *cls, const char *msg, int retry_after,
                    int64_t now) {
  gp_srv_as_tmpl *st = &a->tmpl[t];
  const gp_autoscale_config *c = &a->cfg->autoscale;
  int64_t delay = c->backoff_initial_s;
  for (int i = 1; i < st->failures && delay < c->backoff_max_s; i++) delay *= 2;
  if (delay > c->backoff_max_s) delay = c->backoff_max_s;
  if (retry_after > delay) delay = retry_after;
  st->failures++;
  st->retry_at = now + delay;
  st->err_at = now;
  snprintf(st->err_class, sizeof st->err_class, "%s", cls);
  snprintf(st->err_message, sizeof st->err_message, "%s", msg);
  bool loud = strcmp(cls, "auth") == 0 || strcmp(cls, "invalid") == 0 || strcmp(cls, "broken") == 0;
  fprintf(stderr, "gpool server: autoscaler: %stemplate %s failed (%s: %s); next try in %lld s%s\n",
          loud ? "ATTENTION: " : "", st->nt->t.name, cls, msg, (long long)delay,
          loud ? " (an admin must look at the provider or the template)" : "");
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
static int remove_node(gp_srv_state *s, gp_srv_node *n, int64_t now, gp_err *err) {
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

/* ---- answers ---- */

static void create_answered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_call *c, int64_t now) {
  gp_srv_as_tmpl *st = &a->tmpl[c->tmpl];
  st->creating_calls -= c->count;
  if (st->creating_calls < 0) st->creating_calls = 0;
  if (c->job_since > 0) {
    double d = (double)c->started_ms / 1000.0 - (double)c->job_since;
    if (d >= 0 && d < 86400 * 30) gp_hist_observe(&a->pending_to_call_s, d);
  }
  if (c->rc) {
    backoff(a, c->tmpl, gp_provider_class_name(c->e.cls), c->e.message, c->e.retry_after_s, now);
    return;
  }
  if (c->res.n == 0) {
    char msg[128];
    snprintf(msg, sizeof msg, "the provider created none of the %d nodes asked for", c->count);
    backoff(a, c->tmpl, "capacity", msg, -1, now);
    return;
  }
  for (int i = 0; i < c->res.n; i++) {
    const gp_provider_instance *pi = &c->res.instances[i];
    /* A repeated answer names what it named before; an agent may well have registered
     * before the answer came back (then the record is matched to it right away). */
    const gp_srv_node *n = gp__srv_node_get(s, pi->node);
    if (gp__srv_as_find(a, pi->id, NULL) || (n && n->provider_instance)) continue;
    /* A node that was there before the call cannot be what it created: a provider naming
     * one must never make a fixed node the autoscaler's to delete. */
    if (n && n->registered_at < c->started_ms / 1000) {
      char msg[GP_PROVIDER_NODE_MAX + 128];
      snprintf(msg, sizeof msg, "it answered node %s, which was there before the call", pi->node);
      backoff(a, c->tmpl, "invalid", msg, -1, now);
      /* The instance it made is given back, without a node to remove. */
      gp__srv_as_add(a, c->tmpl, GP_SRV_AS_DELETING, pi->id, "");
      continue;
    }
    gp_srv_as_inst *in = gp__srv_as_add(a, c->tmpl, GP_SRV_AS_CREATING, pi->id, pi->node);
    if (!in) break;
    in->price = pi->price_per_gpu_hour;
    in->asked_at = c->started_ms / 1000;
    in->deadline = now + a->cfg->autoscale.resume_timeout_s;
  }
  fprintf(stderr, "gpool server: autoscaler: template %s created %d of %d node(s)\n",
          st->nt->t.name, c->res.n, c->count);
}

static int delete_answered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_call *c, int64_t now,
                           gp_err *err) {
  gp_srv_as_inst *in = gp__srv_as_find(a, c->id, NULL);
  if (!in || in->phase != GP_SRV_AS_DELETING) return 0;
  in->call_out = false;
  bool gone = false;
  for (int i = 0; !c->rc && i < c->res.n; i++) gone = gone || strcmp(c->res.instances[i].id, c->id) == 0;
  if (!gone) {
    fprintf(stderr, "gpool server: autoscaler: ATTENTION: deleting instance %s (node %s) of "
                    "template %s failed (%s: %s); tried again in %d s\n",
            in->id, in->node, a->tmpl[in->tmpl].nt->t.name,
            c->rc ? gp_provider_class_name(c->e.cls) : "ok",
            c->rc ? c->e.message : "the provider did not list it as deleted",
            a->cfg->autoscale.backoff_initial_s);
    in->retry_at = now + a->cfg->autoscale.backoff_initial_s;
    return 0;
  }
  char node[sizeof in->node];
  snprintf(node, sizeof node, "%s", in->node);
  drop_inst(a, in);
  gp_srv_node *n = node[0] ? gp__srv_node_get(s, node) : NULL;
  return n ? remove_node(s, n, now, err) : 0;
}

static void list_answered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_call *c, int64_t now) {
  gp_srv_as_tmpl *st = &a->tmpl[c->tmpl];
  st->list_out = false;
  if (c->rc) {
    char msg[GP_PROVIDER_MESSAGE_MAX + 16];
    snprintf(msg, sizeof msg, "list: %s", c->e.message);
    backoff(a, c->tmpl, gp_provider_class_name(c->e.cls), msg, c->e.retry_after_s, now);
    return;
  }
  st->listed = true;
  int adopted = 0;
  for (int i = 0; i < c->res.n; i++) {
    const gp_provider_instance *pi = &c->res.instances[i];
    if (gp__srv_as_find(a, pi->id, NULL)) continue;
    const gp_srv_node *n = gp__srv_node_get(s, pi->node);
    if (n && n->provider_instance && strcmp(n->provider_instance, pi->id) == 0) continue;
    if (n && !n->provider_instance) continue; /* a fixed node: never the autoscaler's */
    gp_srv_as_inst *in = gp__srv_as_add(a, c->tmpl, GP_SRV_AS_CREATING, pi->id, pi->node);
    if (!in) break;
    in->price = pi->price_per_gpu_hour;
    in->asked_at = now;
    in->deadline = now + a->cfg->autoscale.resume_timeout_s;
    adopted++;
  }
  if (adopted)
    fprintf(stderr, "gpool server: autoscaler: template %s: %d instance(s) not registered yet "
                    "adopted from its provider's list\n", st->nt->t.name, adopted);
}

static int take_answers(gp_srv_state *s, gp_srv_autoscale *a, int64_t now, gp_err *err) {
  gp_srv_as_call *c = gp__srv_as_take_done(a);
  int r = 0;
  while (c) {
    gp_srv_as_call *next = c->next;
    gp_srv_as_tmpl *st = &a->tmpl[c->tmpl];
    int cls = c->rc ? (int)c->e.cls : 0;
    if ((unsigned)c->verb < 3 && cls >= 0 && cls <= GP_PROVIDER_BROKEN) st->calls[c->verb][cls]++;
    gp_hist_observe(&a->call_s, (double)c->res.elapsed_ms / 1000.0);
    /* Every answer is taken in, even after a store error (the state is then reloaded from
     * the store, and the records, which live in memory, must still say what exists); a
     * delete not carried out then is asked again (the same delete twice is harmless). */
    if (c->verb == GP_PROVIDER_CREATE) {
      create_answered(s, a, c, now);
    } else if (c->verb == GP_PROVIDER_LIST) {
      list_answered(s, a, c, now);
    } else if (!r) {
      r = delete_answered(s, a, c, now, err);
    } else {
      gp_srv_as_inst *in = gp__srv_as_find(a, c->id, NULL);
      if (in) in->call_out = false;
    }
    gp__srv_as_call_free(c);
    c = next;
  }
  return r;
}

/* ---- before a step ---- */

/* A created node counts once its agent registered with the GPUs promised; one with fewer
 * (or another model) is cordoned and its creation counts as failed. */
static int registered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_inst *in, gp_srv_node *n,
                      int64_t now, gp_err *err) {
  const gp_provider_template *t = &a->tmpl[in->tmpl].nt->t;
  double price = in->price >= 0 ? in->price : t->price_per_gpu_hour;
  int r = gp__srv_node_set_provider(s, n, t->name, in->id, price, err);
  if (r) return r;
  bool ok = n->n_gpus >= t->gpus && n->model && strcasecmp(n->model, t->model) == 0;
  if (ok) {
    succeeded(a, in->tmpl);
    fprintf(stderr, "gpool server: autoscaler: node %s of template %s registered (%lld s after "
                    "it was asked for)\n", n->name, t->name, (long long)(now - in->asked_at));
    drop_inst(a, in);
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
  backoff(a, in->tmpl, "short", why, -1, now);
  drop_inst(a, in);
  return gp__srv_persist_node(s, n, err);
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
      r = registered(s, a, in, n, now, err); /* drops a->inst[i] */
      continue;
    }
    if (now >= in->deadline) {
      char d[16], msg[400];
      fmt_duration(a->cfg->autoscale.resume_timeout_s, d, sizeof d);
      snprintf(msg, sizeof msg, "node %s (instance %s) did not register within resume_timeout %s; "
               "the instance is deleted", in->node, in->id, d);
      backoff(a, in->tmpl, "timeout", msg, -1, now);
      in->phase = GP_SRV_AS_DELETING;
      gp__srv_as_delete(a, in);
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
  int r = take_answers(s, a, now, err);
  if (!r) r = watch_creations(s, a, now, err);
  if (r) return r;
  give_back_interrupted(s, a);
  for (int i = 0; i < a->n_inst; i++) {
    gp_srv_as_inst *in = &a->inst[i];
    if (in->phase == GP_SRV_AS_DELETING && !in->call_out && now >= in->retry_at) gp__srv_as_delete(a, in);
  }
  for (int t = 0; t < a->n_tmpl; t++) {
    gp_srv_as_tmpl *st = &a->tmpl[t];
    if (!st->listed && !st->list_out && now >= st->retry_at) {
      st->list_out = true;
      gp__srv_as_call_out(a, GP_PROVIDER_LIST, t, 0, NULL, 0, 0);
    }
  }
  return 0;
}

