/* SPDX-License-Identifier: Apache-2.0 */
/* The public API's node routes (docs/api.md), run on the state thread: GET /v1/nodes and
 * /v1/nodes/{name}, and an admin's actions on a node (drain, cordon, resume, inject,
 * interrupt, forgetting its credential, deleting it). api.c routes /v1/nodes here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/fault.h"
#include "protocol/order.h"
#include "server/accounting/advice.h"
#include "server/accounting/report.h"
#include "server/elastic/autoscale.h"
#include "server/elastic/interrupt.h"
#include "server/front/routes.h"
#include "server/streams/events.h"
#include "server/state/jobmetrics.h"
#include "server/state/notify_job.h"
#include "server/state/server_int.h"
#include "server/workloads/node_credential.h"
#include "util/mem.h"
#include "util/units.h"

static int node_action(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, const char *action,
                       int64_t now, gp_err *err) {
  (void)now;
  if (!gp__srv_req_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may %s nodes", action);
    return 0;
  }
  const json_t *body = r->json;
  if (body && !json_is_object(body)) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON object");
    return 0;
  }
  const char *k;
  const json_t *v;
  bool inject = strcmp(action, "inject") == 0;
  json_object_foreach((json_t *)body, k, v) {
    if (strcmp(k, inject ? "fault" : "reason") != 0 && (inject || strcmp(k, "gpu") != 0)) {
      gp__srv_reply_error(r, 400, "invalid_argument", k, "unknown field");
      return 0;
    }
  }
  const json_t *rv = json_object_get(body, inject ? "fault" : "reason");
  if (rv && (!json_is_string(rv) || json_string_length(rv) > 512)) {
    gp__srv_reply_error(r, 400, "invalid_argument", inject ? "fault" : "reason",
                    "must be a string of at most 512 characters");
    return 0;
  }
  const char *reason = rv ? json_string_value(rv) : NULL;
  if (inject) {
    if (!reason || !*reason) {
      gp__srv_reply_error(r, 400, "invalid_argument", "fault", "say which fault, e.g. \"xid:79@gpu3\"");
      return 0;
    }
    gp_proto_fault faults[GP_PROTO_MAX_FAULTS];
    int nf = 0;
    gp_err ferr = {0};
    if (gp_proto_fault_parse(reason, faults, GP_PROTO_MAX_FAULTS, &nf, &ferr)) {
      gp__srv_reply_error(r, 400, "invalid_argument", "fault", "%s", ferr.message);
      return 0;
    }
    for (int i = 0; i < nf; i++)
      if (faults[i].gpu < 0 || faults[i].gpu >= n->n_gpus) {
        gp__srv_reply_error(r, 400, "invalid_argument", "fault", "node %s has GPUs 0..%d, not gpu%d",
                            n->name, n->n_gpus - 1, faults[i].gpu);
        return 0;
      }
    gp_proto_order o = {.kind = GP_PROTO_INJECT};
    snprintf(o.u.inject.fault, sizeof o.u.inject.fault, "%s", reason);
    int rc = gp__srv_order_add(s, n, gp_proto_order_encode(&o), 0, false, err);
    if (rc) return rc;
    json_t *out = json_object();
    json_object_set_new(out, "node", gp__srv_node_to_json(s, n, false));
    gp__srv_reply_json(r, 200, out);
    return 0;
  }
  const json_t *gv = json_object_get(body, "gpu");
  int gpu = -1;
  if (gv && !json_is_null(gv)) {
    if (!json_is_integer(gv) || json_integer_value(gv) < 0 || json_integer_value(gv) >= n->n_gpus) {
      gp__srv_reply_error(r, 400, "invalid_argument", "gpu", "node %s has GPUs 0..%d", n->name, n->n_gpus - 1);
      return 0;
    }
    gpu = (int)json_integer_value(gv);
  }
  bool resume = strcmp(action, "resume") == 0;
  int rc = 0;
  if (gpu >= 0) {
    if (strcmp(action, "cordon") == 0) {
      gp__srv_reply_error(r, 400, "invalid_argument", "gpu", "cordon applies to whole nodes; drain a GPU instead");
      return 0;
    }
    gp_srv_gpu *g = &n->gpus[gpu];
    free(g->reason);
    g->reason = NULL;
    if (resume) {
      g->admin_drained = false;
      g->health = GP_GPU_HEALTHY;
    } else {
      g->admin_drained = true;
      if (g->health == GP_GPU_HEALTHY) g->health = GP_GPU_DRAINED;
      g->reason = gp_xstrdup(reason ? reason : "drained by an admin");
    }
    gp_proto_order o = {.kind = resume ? GP_PROTO_RESUME_GPU : GP_PROTO_DRAIN_GPU};
    o.u.gpu.gpu = gpu;
    o.u.gpu.has_reason = reason != NULL;
    snprintf(o.u.gpu.reason, sizeof o.u.gpu.reason, "%s", reason ? reason : "");
    rc = gp__srv_order_add(s, n, gp_proto_order_encode(&o), 0, false, err);
  } else {
    n->admin_state = resume ? GP_NODE_UP : strcmp(action, "drain") == 0 ? GP_NODE_DRAIN : GP_NODE_CORDON;
    free(n->reason);
    n->reason = !resume && reason && *reason ? gp_xstrdup(reason) : NULL;
  }
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  if (!rc) rc = gp__srv_persist_node(s, n, err);
  if (rc) return rc;
  json_t *out = json_object();
  json_object_set_new(out, "node", gp__srv_node_to_json(s, n, false));
  gp__srv_reply_json(r, 200, out);
  return 0;
}

/* DELETE /v1/nodes/{name}/credential: frees the name for the next agent that registers it
 * (a reinstalled machine whose agent lost its data directory). */
static int node_forget(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, gp_err *err) {
  if (!gp__srv_req_method(r, "DELETE")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use DELETE on /v1/nodes/{name}/credential");
    return 0;
  }
  if (!gp__srv_req_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may forget a node's credential");
    return 0;
  }
  int rc = gp__srv_node_forget(s, n, err);
  if (rc) return rc;
  gp__srv_reply_json(r, 200, json_pack("{s:s,s:b}", "node", n->name, "credential", 0));
  return 0;
}

/* DELETE /v1/nodes/{name}[?force=1]: forgets a node for good (a machine given back to its
 * provider): only a drained or cordoned node that holds no job, unless forced, when its
 * jobs are lost as on a lost node (requeued or failed). An agent still polling is told the
 * node is gone; one that registers again later is a new node. */
static int node_delete(gp_srv_state *s, gp_srv_req *r, gp_srv_node *n, int64_t now, gp_err *err) {
  if (!gp__srv_req_admin(r)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL, "only admins may delete nodes");
    return 0;
  }
  const char *fv = gp__srv_req_query(r, "force");
  bool force = fv && (strcmp(fv, "1") == 0 || strcmp(fv, "true") == 0);
  if (fv && !force && strcmp(fv, "0") != 0 && strcmp(fv, "false") != 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "force", "must be 1 or 0");
    return 0;
  }
  const gp_srv_job *holder = gp__srv_node_holder(s, n);
  if (!force) {
    if (n->alive && n->admin_state == GP_NODE_UP) {
      gp__srv_reply_error(r, 409, "conflict", "node",
                          "node %s is up: drain or cordon it first (or use force=1)", n->name);
      return 0;
    }
    if (holder) {
      gp__srv_reply_error(r, 409, "conflict", "node",
                          "node %s still runs job %s: wait for it to end (or use force=1, which "
                          "requeues or fails its jobs)",
                          n->name, holder->idstr);
      return 0;
    }
  }
  int rc = 0;
  if (n->alive) rc = gp__srv_node_down(s, n, "node deleted", now, err);
  for (gp_srv_job *j; !rc && (j = gp__srv_node_holder(s, n));)
    rc = gp__srv_job_lost(s, j, "node deleted", now, err);
  if (rc) return rc;
  gp__srv_waiter_node_gone(n);
  char *name = gp_xstrdup(n->name);
  rc = gp__srv_node_remove(s, n, now, err);
  if (!rc) gp__srv_reply_json(r, 200, json_pack("{s:s,s:b}", "node", name, "deleted", 1));
  free(name);
  return rc;
}

int gp__srv_nodes_route(gp_srv_state *s, gp_srv_req *r, const char *rest, int64_t now, gp_err *err) {
  if (!*rest) {
    if (!gp__srv_req_method(r, "GET")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET on /v1/nodes");
      return 0;
    }
    json_t *list = json_array();
    for (int i = 0; i < s->n_nodes; i++)
      json_array_append_new(list, gp__srv_node_to_json_for(s, s->nodes[i], r->user, r->role));
    gp__srv_reply_json(r, 200, json_pack("{s:o}", "nodes", list));
    return 0;
  }
  char name[300];
  const char *slash = strchr(rest, '/');
  size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
  snprintf(name, sizeof name, "%.*s", (int)(len < 299 ? len : 299), rest);
  gp_srv_node *n = gp__srv_node_get(s, name);
  if (!n) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "no node %s", name);
    return 0;
  }
  const char *action = slash ? slash + 1 : "";
  if (!*action && gp__srv_req_method(r, "GET")) {
    gp__srv_reply_json(r, 200,
                       json_pack("{s:o}", "node", gp__srv_node_to_json_for(s, n, r->user, r->role)));
    return 0;
  }
  if (!*action && gp__srv_req_method(r, "DELETE")) return node_delete(s, r, n, now, err);
  if (strcmp(action, "drain") == 0 || strcmp(action, "cordon") == 0 ||
      strcmp(action, "resume") == 0 || strcmp(action, "inject") == 0) {
    if (!gp__srv_req_method(r, "POST")) {
      gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/nodes/{name}/%s", action);
      return 0;
    }
    return node_action(s, r, n, action, now, err);
  }
  if (strcmp(action, "credential") == 0) return node_forget(s, r, n, err);
  if (strcmp(action, "interrupt") == 0) return gp__srv_interrupt_route(s, r, n, now, err);
  gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, r->path);
  return 0;
}
