/* SPDX-License-Identifier: Apache-2.0 */
/* The public API's queue routes (docs/api.md), run on the state thread: GET /v1/queues and
 * /v1/queues/{name}, and an admin's PUT and DELETE of a queue. api.c routes /v1/queues
 * here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/fault.h"
#include "protocol/order.h"
#include "server/accounting/advice.h"
#include "server/accounting/report.h"
#include "server/elastic/autoscale.h"
#include "server/front/routes.h"
#include "server/streams/events.h"
#include "server/state/jobmetrics.h"
#include "server/state/notify_job.h"
#include "server/state/server_int.h"
#include "util/mem.h"
#include "util/units.h"

/* A new queue "a/b" makes "a" a parent, and jobs go to leaves only. Refused when "a" is a
 * leaf of the config file (the file says what it is) or holds unfinished jobs (they
 * could never start). Returns true when it answered. */
static bool refuse_new_parent(gp_srv_state *s, gp_srv_req *r, const char *name) {
  for (const char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
    char *prefix = gp_xstrndup(name, (size_t)(p - name));
    const gp_srv_queue *pq = gp__srv_queue_get(s, prefix);
    const char *busy = NULL;
    for (int a = 0; pq && !pq->from_config && a < s->n_active && !busy; a++)
      if (strcmp(s->active[a]->queue, prefix) == 0) busy = s->active[a]->idstr;
    if (pq && pq->from_config)
      gp__srv_reply_error(r, 409, "conflict", "name",
                          "queue %s is a leaf defined in the config file; a queue under it "
                          "would make it a parent (define both in the config file)",
                          prefix);
    else if (busy)
      gp__srv_reply_error(r, 409, "conflict", "name",
                          "queue %s has unfinished jobs (e.g. %s); a queue under it would make "
                          "it a parent, where jobs cannot run",
                          prefix, busy);
    free(prefix);
    if ((pq && pq->from_config) || busy) return true;
  }
  return false;
}

int gp__srv_queues_route(gp_srv_state *s, gp_srv_req *r, const char *name, gp_err *err) {
  if (!*name) {
    if (!gp__srv_req_method(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/queues");
      return 0;
    }
    gp__srv_reply_json(r, 200, json_pack("{s:o}", "queues", gp__srv_queues_json(s)));
    return 0;
  }
  gp_srv_queue *q = gp__srv_queue_get(s, name);
  if (gp__srv_req_method(r, "GET")) {
    json_t *all = gp__srv_queues_json(s);
    json_t *found = NULL;
    for (size_t i = 0; i < json_array_size(all) && !found; i++)
      if (strcmp(json_string_value(json_object_get(json_array_get(all, i), "name")), name) == 0)
        found = json_incref(json_array_get(all, i));
    json_decref(all);
    if (!found) gp__srv_reply_error(r, 404, "not_found", NULL, "no queue %s", name);
    else gp__srv_reply_json(r, 200, json_pack("{s:o}", "queue", found));
    return 0;
  }
  bool put = gp__srv_req_method(r, "PUT"), del = gp__srv_req_method(r, "DELETE");
  if (!put && !del) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET, PUT or DELETE on /v1/queues/{name}");
    return 0;
  }
  if (!gp__srv_req_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may change queues");
    return 0;
  }
  if (q && q->from_config) {
    gp__srv_reply_error(r, 409, "conflict", "name",
                    "queue %s is defined in the config file; change it there", name);
    return 0;
  }
  if (del) {
    if (!q) {
      gp__srv_reply_error(r, 404, "not_found", NULL, "no queue %s", name);
      return 0;
    }
    for (int a = 0; a < s->n_active; a++)
      if (strcmp(s->active[a]->queue, name) == 0) {
        gp__srv_reply_error(r, 409, "conflict", NULL, "queue %s still has unfinished jobs (e.g. %s)",
                        name, s->active[a]->idstr);
        return 0;
      }
    int rc = gp_store_del_queue(s->store, name, err);
    if (rc) return rc;
    for (int i = 0; i < s->n_queues; i++)
      if (s->queues[i] == q) {
        s->queues[i] = s->queues[--s->n_queues];
        break;
      }
    gp__srv_queue_free(q);
    gp__srv_queues_changed(s);
    gp__srv_events_note_queue(s, name);
    s->sched_dirty = true;
    gp__srv_reply_json(r, 200, json_pack("{s:s,s:b}", "queue", name, "deleted", 1));
    return 0;
  }
  if (!r->json) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON queue description");
    return 0;
  }
  const char *prio = json_string_value(json_object_get(r->json, "default_priority"));
  if (prio && !gp_priority_class_find(&s->cfg->policy, prio)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "default_priority", "no priority class is called \"%s\"", prio);
    return 0;
  }
  const json_t *pcs = json_object_get(r->json, "priority_classes");
  for (size_t i = 0; json_is_array(pcs) && i < json_array_size(pcs); i++) {
    const char *cls = json_string_value(json_array_get(pcs, i));
    if (cls && !gp_priority_class_find(&s->cfg->policy, cls)) {
      gp__srv_reply_error(r, 400, "invalid_argument", "priority_classes",
                          "no priority class is called \"%.64s\"", cls);
      return 0;
    }
  }
  if (!q && gp_queue_name_ok(name) && refuse_new_parent(s, r, name)) return 0;
  if (!q && s->n_queues >= GP_SRV_MAX_QUEUES) {
    gp__srv_reply_error(r, 413, "too_large", NULL, "at most %d queues", GP_SRV_MAX_QUEUES);
    return 0;
  }
  bool created = !q;
  gp_srv_queue *target = q;
  if (created) {
    target = gp_xcalloc(1, sizeof *target);
    target->n_classes = -1;
    target->weight = 1;
    target->limit = GP_NO_LIMIT;
    static const char *const everyone = "*";
    target->users = gp_xcalloc(2, sizeof *target->users);
    target->users[0] = gp_xstrdup(everyone);
    target->n_users = 1;
  }
  gp_err verr = {0};
  int rc = gp__srv_queue_from_json(r->json, name, target, &verr);
  if (rc) {
    if (created) gp__srv_queue_free(target);
    gp__srv_reply_err(r, rc, &verr);
    return 0;
  }
  if (created) {
    gp_xgrow((void **)&s->queues, &s->cap_queues, (size_t)s->n_queues + 1, sizeof *s->queues);
    s->queues[s->n_queues++] = target;
  }
  gp__srv_queues_changed(s);
  gp__srv_events_note_queue(s, name);
  s->sched_dirty = true;
  rc = gp__srv_persist_queue(s, target, err);
  if (rc) return rc;
  gp__srv_reply_json(r, created ? 201 : 200, json_pack("{s:o}", "queue", gp__srv_queue_to_json(target)));
  return 0;
}
