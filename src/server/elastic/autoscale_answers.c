/* SPDX-License-Identifier: Apache-2.0 */
/* The autoscaler takes in its providers' answers (autoscale.h), on the state thread. A
 * provider is untrusted: whatever a create or list answers, every instance it names is
 * either bound to the one node it promised, or recorded as an orphan that counts against
 * max_nodes and max_hourly_cost and is deleted (with backoff) until the provider confirms.
 * Instances are known by id; a node name is held by one instance at most, and an answer
 * never moves a node to another instance (docs/providers.md, "Answers that contradict"). */
#include <stdio.h>
#include <string.h>

#include "server/elastic/autoscale_int.h"
#include "server/state/server_int.h"

/* Whether instance `id` is one the autoscaler knows: a record, or a node bound to it. */
static bool id_known(const gp_srv_state *s, gp_srv_autoscale *a, const char *id) {
  if (gp__srv_as_find(a, id, NULL)) return true;
  for (int i = 0; i < s->n_nodes; i++)
    if (s->nodes[i]->provider_instance && strcmp(s->nodes[i]->provider_instance, id) == 0)
      return true;
  return false;
}

/* Whether node `node` is held, so that a new instance `id` answered by a call that
 * started at `since` (wall s) may not be bound to it; `why` says by what. A node that
 * first registered after the call started and is bound to nothing is the instance's own
 * agent, come before the answer. */
static bool node_held(const gp_srv_state *s, gp_srv_autoscale *a, const char *node,
                      const char *id, int64_t since, char *why, size_t size) {
  const gp_srv_as_inst *in = gp__srv_as_find(a, NULL, node);
  if (in) {
    snprintf(why, size, "it answered node %s for instance %s, but instance %s holds that node",
             node, id, in->id);
    return true;
  }
  const gp_srv_node *n = gp__srv_node_get(s, node);
  if (n && n->provider_instance) {
    snprintf(why, size, "it answered node %s for instance %s, but instance %s holds that node",
             node, id, n->provider_instance);
    return true;
  }
  if (n && (n->registered_at == 0 || n->registered_at < since)) {
    snprintf(why, size, "it answered node %s for instance %s, which was there before the call",
             node, id);
    return true;
  }
  return false;
}

/* An instance answered for a node it may not have: kept, counted, and deleted. */
static void orphan(gp_srv_autoscale *a, int t, const gp_provider_instance *pi, int64_t job,
                   int64_t now) {
  gp_srv_as_inst *in = gp__srv_as_add(a, t, GP_SRV_AS_DELETING, pi->id, "");
  if (!in) {
    fprintf(stderr, "gpool server: autoscaler: ATTENTION: template %s: %d instance records in "
                    "all: instance %s cannot be tracked; delete it by hand\n",
            a->tmpl[t].nt->t.name, GP_SRV_AS_MAX_INSTANCES, pi->id);
    return;
  }
  in->orphan = true;
  in->price = pi->price_per_gpu_hour;
  in->asked_at = now;
  in->job = job;
  fprintf(stderr, "gpool server: autoscaler: ATTENTION: template %s: instance %s (answered "
                  "for node %s) is deleted: that node is another's\n",
          a->tmpl[t].nt->t.name, pi->id, pi->node);
}

/* Backs template t off for answers that contradict what the autoscaler knows: `first`
 * says what the first one did, n how many there were. */
static void contradicted(gp_srv_autoscale *a, int t, const char *verb, const char *first, int n,
                         int64_t now) {
  char msg[GP_PROVIDER_MESSAGE_MAX + 1];
  snprintf(msg, sizeof msg, "%s: %s%s", verb, first, n > 1 ? " (and more)" : "");
  gp__srv_as_backoff(a, t, "invalid", msg, -1, now);
}

/* A creation that failed is a `scale_failed` event of its job, unless !events (the store
 * failed already this step). */
static int create_answered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_call *c, bool events,
                           int64_t now, gp_err *err) {
  gp_srv_as_tmpl *st = &a->tmpl[c->tmpl];
  st->creating_calls -= c->count;
  if (st->creating_calls < 0) st->creating_calls = 0;
  if (c->job_since > 0) {
    double d = (double)c->started_ms / 1000.0 - (double)c->job_since;
    if (d >= 0 && d < 86400 * 30) gp_hist_observe(&a->pending_to_call_s, d);
  }
  if (c->rc) {
    if (c->e.cls == GP_PROVIDER_BROKEN) {
      /* No answer used, but machines may have been made (a deadline passed, a valid
       * instance beside a bad one): the template creates nothing until its `list` has
       * answered again, which adopts them. */
      int64_t since = c->started_ms / 1000;
      if (!st->list_since || since < st->list_since) st->list_since = since;
      st->listed = false;
    }
    gp__srv_as_backoff(a, c->tmpl, gp_provider_class_name(c->e.cls), c->e.message, c->e.retry_after_s, now);
    return events ? gp__srv_as_job_failed(s, a, c->job_id, c->tmpl, now, err) : 0;
  }
  if (c->res.n == 0) {
    char msg[128];
    snprintf(msg, sizeof msg, "the provider created none of the %d nodes asked for", c->count);
    gp__srv_as_backoff(a, c->tmpl, "capacity", msg, -1, now);
    return events ? gp__srv_as_job_failed(s, a, c->job_id, c->tmpl, now, err) : 0;
  }
  int64_t since = c->started_ms / 1000;
  int bad = 0, made = 0;
  char first[400] = "";
  for (int i = 0; i < c->res.n; i++) {
    const gp_provider_instance *pi = &c->res.instances[i];
    char why[400];
    if (id_known(s, a, pi->id)) {
      /* Keys never repeat, so this is no repeated call: an old instance passed off as new.
       * It is accounted already; the call created nothing. */
      snprintf(why, sizeof why, "it answered instance %s, which an earlier call made", pi->id);
    } else if (node_held(s, a, pi->node, pi->id, since, why, sizeof why)) {
      orphan(a, c->tmpl, pi, c->job_id, now);
    } else {
      gp_srv_as_inst *in = gp__srv_as_add(a, c->tmpl, GP_SRV_AS_CREATING, pi->id, pi->node);
      if (!in) {
        snprintf(why, sizeof why, "%d instance records in all: instance %s (node %s) cannot be "
                 "tracked", GP_SRV_AS_MAX_INSTANCES, pi->id, pi->node);
        fprintf(stderr, "gpool server: autoscaler: ATTENTION: template %s: %s; delete it by hand\n",
                st->nt->t.name, why);
      } else {
        in->price = pi->price_per_gpu_hour;
        in->asked_at = since;
        in->deadline = now + a->cfg->autoscale.resume_timeout_s;
        in->job = c->job_id;
        made++;
        continue;
      }
    }
    if (!bad++) snprintf(first, sizeof first, "%s", why);
  }
  fprintf(stderr, "gpool server: autoscaler: template %s created %d of %d node(s)\n",
          st->nt->t.name, made, c->count);
  if (!bad) return 0;
  contradicted(a, c->tmpl, "create", first, bad, now);
  return events ? gp__srv_as_job_failed(s, a, c->job_id, c->tmpl, now, err) : 0;
}

static int delete_answered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_call *c, int64_t now,
                           gp_err *err) {
  gp_srv_as_inst *in = gp__srv_as_find(a, c->id, NULL);
  if (!in || in->phase != GP_SRV_AS_DELETING) return 0;
  in->call_out = false;
  bool gone = false;
  for (int i = 0; !c->rc && i < c->res.n; i++) gone = gone || strcmp(c->res.instances[i].id, c->id) == 0;
  if (!gone) {
    /* Tried again later and later: a provider that cannot delete is not called every
     * second, and the instance keeps counting against the caps meanwhile. */
    int64_t delay = gp__srv_as_backoff_delay(&a->cfg->autoscale, ++in->failures);
    if (c->rc && c->e.retry_after_s > delay) delay = c->e.retry_after_s;
    fprintf(stderr, "gpool server: autoscaler: ATTENTION: deleting instance %s (node %s) of "
                    "template %s failed %d time(s) (%s: %s); tried again in %lld s\n",
            in->id, in->node[0] ? in->node : "none", a->tmpl[in->tmpl].nt->t.name, in->failures,
            c->rc ? gp_provider_class_name(c->e.cls) : "ok",
            c->rc ? c->e.message : "the provider did not list it as deleted", (long long)delay);
    in->retry_at = now + delay;
    return 0;
  }
  char node[sizeof in->node];
  snprintf(node, sizeof node, "%s", in->node);
  if (in->orphan)
    fprintf(stderr, "gpool server: autoscaler: orphan instance %s of template %s deleted\n", in->id,
            a->tmpl[in->tmpl].nt->t.name);
  gp__srv_as_drop(a, in);
  gp_srv_node *n = node[0] ? gp__srv_node_get(s, node) : NULL;
  return n ? gp__srv_as_remove_node(s, n, now, err) : 0;
}

/* The instances that exist, asked at start and after a broken create: those not known
 * are adopted (waited for as if just created); one that contradicts what is known becomes
 * an orphan. */
static void list_answered(gp_srv_state *s, gp_srv_autoscale *a, gp_srv_as_call *c, int64_t now) {
  gp_srv_as_tmpl *st = &a->tmpl[c->tmpl];
  st->list_out = false;
  if (c->rc) {
    char msg[GP_PROVIDER_MESSAGE_MAX + 16];
    snprintf(msg, sizeof msg, "list: %s", c->e.message);
    gp__srv_as_backoff(a, c->tmpl, gp_provider_class_name(c->e.cls), msg, c->e.retry_after_s, now);
    return;
  }
  st->listed = true;
  int64_t since = c->started_ms / 1000;
  if (st->list_since && st->list_since < since) since = st->list_since;
  st->list_since = 0;
  int adopted = 0, bad = 0;
  char first[400] = "";
  for (int i = 0; i < c->res.n; i++) {
    const gp_provider_instance *pi = &c->res.instances[i];
    if (id_known(s, a, pi->id)) continue;
    char why[400];
    if (node_held(s, a, pi->node, pi->id, since, why, sizeof why)) {
      orphan(a, c->tmpl, pi, 0, now);
      if (!bad++) snprintf(first, sizeof first, "%s", why);
      continue;
    }
    gp_srv_as_inst *in = gp__srv_as_add(a, c->tmpl, GP_SRV_AS_CREATING, pi->id, pi->node);
    if (!in) {
      fprintf(stderr, "gpool server: autoscaler: ATTENTION: template %s: %d instance records in "
                      "all: instance %s cannot be tracked; delete it by hand\n",
              st->nt->t.name, GP_SRV_AS_MAX_INSTANCES, pi->id);
      continue;
    }
    in->price = pi->price_per_gpu_hour;
    in->asked_at = since;
    in->deadline = now + a->cfg->autoscale.resume_timeout_s;
    adopted++;
  }
  if (adopted)
    fprintf(stderr, "gpool server: autoscaler: template %s: %d instance(s) not registered yet "
                    "adopted from its provider's list\n", st->nt->t.name, adopted);
  if (bad) contradicted(a, c->tmpl, "list", first, bad, now);
}

int gp__srv_as_take_answers(gp_srv_state *s, gp_srv_autoscale *a, int64_t now, gp_err *err) {
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
      int r2 = create_answered(s, a, c, !r, now, err);
      if (!r) r = r2;
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
