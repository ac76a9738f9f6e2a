/* SPDX-License-Identifier: Apache-2.0 */
/* The server side of the agent protocol (docs/internals/protocol.md), run on the state
 * thread: registration with re-adoption of running jobs, and the heartbeat long poll that
 * carries events up (started, exited, checkpoint, gpu_fault, mig_done) and orders down.
 * Orders are acknowledged by generation: the agent's `gen` is the highest order id it has
 * received, and an order is re-sent until acknowledged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/event.h"
#include "protocol/order.h"
#include "server/accounting/idle.h"
#include "server/accounting/ledger.h"
#include "server/cycle/agent_api.h"
#include "server/elastic/interrupt.h"
#include "server/workloads/image_pull.h"
#include "server/workloads/node_credential.h"
#include "server/workloads/registry.h"
#include "server/state/jobmetrics.h"
#include "server/workloads/node_report.h"
#include "server/state/server_int.h"
#include "server/workloads/service.h"
#include "server/workloads/steps.h"
#include "util/buf.h"
#include "util/mem.h"

#define MAX_EVENTS 100000
#define MAX_WAIT_MS 30000

void gp__srv_agent_reply_orders(const gp_srv_state *s, gp_srv_node *n, gp_srv_req *r, int64_t gen) {
  gp_buf b;
  gp_buf_init(&b, 0);
  int64_t top = gen;
  gp_buf_puts(&b, "{\"orders\":[");
  bool first = true;
  for (int i = 0; i < n->n_orders; i++) {
    if (n->orders[i].id <= gen) continue;
    /* The rest waits for the next poll, which the agent makes at once: an answer stays
     * readable however many large orders a user's jobs make at once. */
    if (!first && b.len + strlen(n->orders[i].doc) > GP_PROTO_ORDERS_BUDGET) break;
    if (!first) gp_buf_puts(&b, ",");
    /* A container job's owner's registry credential joins its start order here, on its way
     * to the node, never in the stored order (registry.c). */
    char *sent = gp__srv_registry_order_doc(s, &n->orders[i]);
    gp_buf_puts(&b, sent ? sent : n->orders[i].doc);
    if (sent) explicit_bzero(sent, strlen(sent));
    free(sent);
    first = false;
    top = n->orders[i].id;
  }
  gp_buf_printf(&b, "],\"gen\":%lld,\"store\":\"%s\"", (long long)top, s->store->id);
  if (s->store->fence_epoch > 0) gp_buf_printf(&b, ",\"epoch\":%lld", (long long)s->store->fence_epoch);
  gp_buf_printf(&b, "}");
  free(r->resp);
  r->resp = gp_buf_steal(&b);
  gp_buf_done(&b);
  r->status = 200;
  r->answered = true;
}

/* Answers a parked poll with no orders (so nothing uncommitted leaves the server). */
static void release_waiter(const gp_srv_state *s, gp_srv_node *n) {
  gp_srv_req *old = n->waiter;
  if (!old) return;
  n->waiter = NULL;
  old->parked = false;
  char text[160], epoch[40] = "";
  if (s->store->fence_epoch > 0)
    snprintf(epoch, sizeof epoch, ",\"epoch\":%lld", (long long)s->store->fence_epoch);
  snprintf(text, sizeof text, "{\"orders\":[],\"gen\":%lld,\"store\":\"%s\"%s}",
           (long long)n->waiter_gen, s->store->id, epoch);
  free(old->resp);
  old->resp = gp_xstrdup(text);
  old->status = 200;
  old->answered = true;
  gp__srv_req_resume(old);
}

static bool agent_only(gp_srv_req *r) {
  if (r->role == GP_ROLE_AGENT) return true;
  gp__srv_reply_error(r, 403, "permission_denied", NULL, "the agent protocol needs a token with role agent");
  return false;
}

static int node_index_of(gp_srv_state *s, gp_srv_node *n) { return gp__srv_node_index(s, n->name); }

/* "reason: message" for an exit, or NULL for a plain exit. */
static void exit_reason(const char *reason, const char *msg, char *buf, size_t size) {
  buf[0] = '\0';
  if (reason && strcmp(reason, "exited") != 0)
    snprintf(buf, size, "%.100s%s%.400s", reason, msg ? ": " : "", msg ? msg : "");
  else if (msg)
    snprintf(buf, size, "exited: %.400s", msg);
}

/* The task an agent's job entry or event names: -1 when it names none (an agent from before
 * tasks were reported) or one out of bounds. */
static int report_task(const json_t *e) {
  const json_t *v = json_object_get(e, "task");
  return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < GP_PROTO_MAX_TASKS
             ? (int)json_integer_value(v) : -1;
}

static int stop_unknown(gp_srv_state *s, gp_srv_node *n, const char *job_id, gp_err *err) {
  gp_proto_order o = {.kind = GP_PROTO_STOP};
  snprintf(o.u.stop.job, sizeof o.u.stop.job, "%s", job_id);
  snprintf(o.u.stop.signal, sizeof o.u.stop.signal, "KILL");
  o.u.stop.grace_s = 0;
  snprintf(o.u.stop.reason, sizeof o.u.stop.reason, "lost");
  return gp__srv_order_add(s, n, gp_proto_order_encode(&o), strtoll(job_id, NULL, 10), false, err);
}

static int do_register(gp_srv_state *s, gp_srv_req *r, int64_t now_s, int64_t now_ms, gp_err *err) {
  const json_t *body = r->json;
  const json_t *node = json_object_get(body, "node");
  const json_t *jobs = json_object_get(body, "jobs");
  const json_t *url = json_object_get(body, "agent_url");
  if (!json_is_object(node)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "node", "register needs a node object");
    return 0;
  }
  if (jobs && !json_is_null(jobs) && (!json_is_array(jobs) || json_array_size(jobs) > 100000)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "jobs", "must be a list of jobs");
    return 0;
  }
  if (url && !json_is_null(url) && (!json_is_string(url) || strncmp(json_string_value(url), "http", 4) != 0 ||
                                    json_string_length(url) > 512)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "agent_url", "must be an http URL");
    return 0;
  }
  /* With tls.agent_ca the server reads logs over verified HTTPS only: an http:// agent
   * would register fine and then fail every log read. */
  if (url && json_is_string(url) && s->cfg->tls.peer_ca[0] &&
      strncmp(json_string_value(url), "https://", 8) != 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "agent_url",
                        "the server verifies agents (tls.agent_ca): the agent must serve https://");
    return 0;
  }
  for (size_t i = 0; i < json_array_size(jobs); i++) {
    const json_t *e = json_array_get(jobs, i);
    if (!json_is_object(e) || !json_is_string(json_object_get(e, "id"))) {
      char f[64];
      snprintf(f, sizeof f, "jobs[%zu]", i);
      gp__srv_reply_error(r, 400, "invalid_argument", f, "each job needs an id");
      return 0;
    }
  }
  const char *name = json_string_value(json_object_get(node, "name"));
  if (!name) {
    gp__srv_reply_error(r, 400, "invalid_argument", "node.name", "register names its node");
    return 0;
  }
  gp_srv_node *n = gp__srv_node_get(s, name);
  if (!gp__srv_node_auth(s, r, name, n, true)) return 0;
  /* An agent that last served another store (a moved or restored data directory) runs
   * that store's jobs under numbers this store may reuse: its list says nothing about ours
   * (it stops those jobs itself when it sees our id). */
  const json_t *their_store = json_object_get(body, "store");
  if (json_is_string(their_store) && strcmp(json_string_value(their_store), s->store->id) != 0)
    jobs = NULL;
  bool created = !n;
  if (created && s->n_nodes >= GP_SRV_MAX_NODES) {
    gp__srv_reply_error(r, 413, "too_large", NULL, "the pool has %d nodes already", GP_SRV_MAX_NODES);
    return 0;
  }
  gp_srv_node *target = n ? n : gp_xcalloc(1, sizeof *target);
  gp_err verr = {0};
  int rc = gp__srv_node_from_json(node, target, false, &verr);
  if (rc) {
    if (created) gp__srv_node_free(target);
    gp__srv_reply_err(r, rc, &verr);
    return 0;
  }
  n = target;
  if (created) {
    n->registered_at = now_s;
    gp__srv_node_add(s, n);
  }
  rc = gp__srv_node_claim(s, r, n, err);
  if (rc) return rc;
  if (json_is_string(url)) {
    free(n->agent_url);
    n->agent_url = gp_xstrdup(json_string_value(url));
  }
  n->alive = true;
  n->last_seen_ms = now_ms;
  n->last_heartbeat = now_s;
  n->agent_token = r->token;
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  release_waiter(s, n); /* an old long poll of the previous agent process */
  gp__srv_node_report_reset(n); /* its list below is reconciled here; heartbeats follow */
  int idx = node_index_of(s, n);
  /* Orders queued for a previous life of this node must not start or stop anything now. */
  rc = gp__srv_orders_purge_stale(s, n, err);
  if (rc) return rc;
  /* Reconcile: what the agent still runs or saw finish. */
  for (size_t i = 0; i < json_array_size(jobs) && !rc; i++) {
    const json_t *e = json_array_get(jobs, i);
    const char *id = json_string_value(json_object_get(e, "id"));
    const char *st = json_string_value(json_object_get(e, "state"));
    gp_srv_job *j = gp__srv_job_get(s, id);
    int task = report_task(e);
    bool here = false;
    for (int t = 0; j && t < j->n_alloc; t++)
      here = here || (j->alloc[t].node == idx && !j->alloc[t].exited && (task < 0 || task == t));
    here = here && (j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING);
    bool exited = st && strcmp(st, "exited") == 0;
    if (here && exited) {
      const json_t *ec = json_object_get(e, "exit_code"), *sv = json_object_get(e, "signal");
      json_int_t sig = json_is_integer(sv) ? json_integer_value(sv) : 0;
      char why[600];
      exit_reason(json_string_value(json_object_get(e, "reason")),
                  json_string_value(json_object_get(e, "message")), why, sizeof why);
      rc = gp__srv_job_task_exited(s, j, idx, task, json_is_integer(ec) ? (int)json_integer_value(ec) : -1,
                                   sig > 0 && sig <= 128 ? (int)sig : 0, why[0] ? why : NULL, now_s, err);
    } else if (!here && !exited) {
      rc = stop_unknown(s, n, id, err);
    }
  }
  /* Jobs this node should run that the agent does not have and was never told to start
   * (no start order pending) are lost. */
  for (int a = 0; a < s->n_active && !rc; a++) {
    gp_srv_job *j = s->active[a];
    if (j->state != GP_JOB_RUNNING && j->state != GP_JOB_STOPPING) continue;
    bool here = false;
    for (int t = 0; t < j->n_alloc; t++) here = here || (j->alloc[t].node == idx && !j->alloc[t].exited);
    if (!here) continue;
    bool listed = false;
    for (size_t i = 0; i < json_array_size(jobs) && !listed; i++) {
      const json_t *e = json_array_get(jobs, i);
      int task = report_task(e);
      listed = strcmp(json_string_value(json_object_get(e, "id")), j->idstr) == 0 &&
               (task < 0 || (task < j->n_alloc && j->alloc[task].node == idx));
    }
    bool order_pending = false;
    for (int o = 0; o < n->n_orders && !order_pending; o++)
      order_pending = n->orders[o].is_start && n->orders[o].job_id == j->id;
    if (!listed && !order_pending) {
      int before = s->n_active;
      rc = gp__srv_job_lost(s, j, "the agent restarted without the job", now_s, err);
      if (s->n_active < before) a--;
    }
  }
  /* Step tasks it no longer runs (it restarted) end as lost, so no srun waits forever. */
  const json_t *steps = json_object_get(body, "steps");
  if (!rc) gp__srv_steps_node_registered(s, n, json_is_array(steps) && json_array_size(steps) <= 100000 ? steps : NULL, now_s);
  if (!rc) rc = gp__srv_persist_node(s, n, err);
  if (rc) return rc;
  json_t *out = json_object();
  json_object_set_new(out, "node", gp__srv_node_to_json(s, n, false));
  json_object_set_new(out, "heartbeat_s", json_integer(s->cfg->heartbeat_s));
  json_object_set_new(out, "store", json_string(s->store->id));
  if (s->store->fence_epoch > 0) json_object_set_new(out, "epoch", json_integer(s->store->fence_epoch));
  gp__srv_reply_json(r, created ? 201 : 200, out);
  return 0;
}

static int check_events(gp_srv_req *r, const json_t *events) {
  if (!events || json_is_null(events)) return 0;
  if (!json_is_array(events) || json_array_size(events) > MAX_EVENTS) {
    gp__srv_reply_error(r, 400, "invalid_argument", "events", "must be a list of events");
    return -1;
  }
  gp_proto_event ev;
  for (size_t i = 0; i < json_array_size(events); i++) {
    gp_err e = {0};
    /* A kind this server does not know (a newer agent's) is skipped, so one new kind never
     * takes a node down. */
    if (gp_proto_event_decode(json_array_get(events, i), &ev, &e) != GP_EINVAL) continue;
    char f[64];
    snprintf(f, sizeof f, "events[%zu]", i);
    gp__srv_reply_error(r, 400, "invalid_argument", f, "%s", e.message);
    return -1;
  }
  return 0;
}

static int apply_gpu_fault(gp_srv_state *s, gp_srv_node *n, const gp_proto_event *e, gp_err *err) {
  int g = e->gpu;
  if (g < 0 || g >= n->n_gpus) return 0;
  char why[600];
  snprintf(why, sizeof why, "xid %lld%s%.500s", (long long)e->xid, e->fault[0] ? ": " : "", e->fault);
  gp_srv_gpu *gpu = &n->gpus[g];
  /* `action` is a comma list: ignore, fail_job (the agent stops the job itself), drain_gpu,
   * drain_node, fail_gpu. */
  bool drain_gpu = strstr(e->action, "drain_gpu"), drain_node = strstr(e->action, "drain_node"),
       fail_gpu = strstr(e->action, "fail_gpu");
  if (!drain_gpu && !drain_node && !fail_gpu) return 0;
  if (drain_node) {
    n->admin_state = GP_NODE_DRAIN;
    free(n->reason);
    n->reason = gp_xstrdup(why);
  }
  if (drain_gpu || fail_gpu) {
    gpu->health = fail_gpu ? GP_GPU_FAILED : GP_GPU_DRAINED;
    free(gpu->reason);
    gpu->reason = gp_xstrdup(why);
  }
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  return gp__srv_persist_node(s, n, err);
}

static int apply_mig_done(gp_srv_state *s, gp_srv_node *n, const gp_proto_event *e, gp_err *err) {
  int g = e->gpu;
  if (g < 0 || g >= n->n_gpus || !e->ok || !e->has_mig) return 0;
  gp_srv_gpu *gpu = &n->gpus[g];
  for (int m = 0; m < gpu->n_mig; m++) {
    free((char *)gpu->mig[m].profile);
    free((char *)gpu->mig[m].uuid);
  }
  gpu->n_mig = 0;
  for (int m = 0; m < e->n_mig; m++) {
    gpu->mig[gpu->n_mig].profile = gp_xstrdup(e->mig[m].profile);
    gpu->mig[gpu->n_mig].uuid = e->mig[m].uuid[0] ? gp_xstrdup(e->mig[m].uuid) : NULL;
    gpu->mig[gpu->n_mig].start_slot = e->mig[m].start_slot;
    gpu->n_mig++;
  }
  gpu->mode = GP_SHARE_MIG;
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  return gp__srv_persist_node(s, n, err);
}

/* A usage figure the agent reports: a finite number >= 0, else unknown (-1). */
static double figure(const json_t *u, const char *key) {
  const json_t *v = json_object_get(u, key);
  double x = json_is_number(v) ? json_number_value(v) : -1;
  return x >= 0 && x < 1e15 ? x : -1;
}

/* Keeps the job's latest usage, writes its use figures into its open ledger intervals on
 * this node and measures its idleness from them. */
static int take_usage(gp_srv_state *s, gp_srv_job *j, int idx, int task, const json_t *u,
                      int64_t now, gp_err *err) {
  json_decref(j->usage);
  j->usage = json_deep_copy(u);
  double busy = figure(u, "sm_busy_gpu_s");
  int r = gp__srv_ledger_use(s, j, idx, task, busy, figure(u, "energy_j"), now, err);
  if (!r) gp__srv_idle_measure(s, j, busy >= 0, now);
  return r;
}

static int apply_event(gp_srv_state *s, gp_srv_node *n, int idx, const json_t *doc, int64_t now_s,
                       gp_err *err) {
  gp_proto_event ev, *e = &ev;
  if (gp_proto_event_decode(doc, e, NULL) != 0) return 0; /* checked: a kind we skip */
  if (e->kind == GP_PROTO_EV_GPU_FAULT) return apply_gpu_fault(s, n, e, err);
  if (e->kind == GP_PROTO_EV_MIG_DONE) return apply_mig_done(s, n, e, err);
  if (e->kind == GP_PROTO_EV_INJECT_DONE) return 0; /* the admin reads it in the agent's log */
  if (e->kind == GP_PROTO_EV_PULL_DONE) {
    gp__srv_pull_done(s, n, e->order, e->ok, e->message);
    return 0;
  }
  if (e->kind == GP_PROTO_EV_PULL_PROGRESS) {
    gp__srv_pull_moved(s, n, e->order, e->done_bytes, e->total_bytes);
    return 0;
  }
  if (e->kind == GP_PROTO_EV_INTERRUPTION) {
    /* A notice without a deadline the server can read gets the shortest cloud's (GCP);
     * the agent sends none more than a week ahead. */
    int64_t deadline = e->deadline > 0 && e->deadline <= now_s + 7 * 86400 ? e->deadline : now_s + 30;
    gp_srv_interrupt in = {.deadline = deadline, .source = e->source,
                           .detail = e->has_message ? e->message : NULL, .noticed_ms = e->at_ms};
    return gp__srv_node_interrupt(s, n, &in, now_s, NULL, err);
  }
  gp_srv_job *j = gp__srv_job_get(s, e->job);
  if (!j) return 0;
  if (e->kind == GP_PROTO_EV_STEP_EXITED) /* steps.c checks the task was this node's */
    return e->step < 0 || e->task < 0 ? 0
           : gp__srv_step_task_exited(s, j, n->name, e->step, e->task, e->has_exit_code,
                                      e->exit_code, e->signal, e->has_reason ? e->reason : NULL,
                                      e->has_message ? e->message : NULL, e->out_bytes,
                                      e->err_bytes, now_s, err);
  bool here = false;
  /* `order` names the order the event answers: a task's start order, or the stop order of
   * a job the agent no longer has. Order ids only grow, so an order older than the current
   * run's start order was one of an earlier run's: a late report of an earlier run of a
   * requeued job (its exit, or the agent's answer to that run's stop) must not end the
   * current run. */
  int64_t ord_id = e->order[0] == 'o' ? strtoll(e->order + 1, NULL, 10) : 0;
  for (int t = 0; t < j->n_alloc; t++)
    here = here || (j->alloc[t].node == idx && (e->task < 0 || e->task == t) &&
                    (!ord_id || !j->alloc[t].order_id || ord_id >= j->alloc[t].order_id));
  if (!here) return 0; /* a report about a job (or run) this node no longer holds */
  int64_t at = e->at;
  if (at <= 0 || at > now_s + 60) at = now_s;
  if (e->kind == GP_PROTO_EV_STARTED) {
    json_t *extra = json_object();
    json_object_set_new(extra, "node", json_string(n->name));
    if (e->task >= 0) json_object_set_new(extra, "task", json_integer(e->task));
    if (e->pid) json_object_set_new(extra, "pid", json_integer(e->pid));
    if (e->enforcement[0]) {
      json_object_set_new(extra, "enforcement", json_string(e->enforcement));
      free(j->enforcement);
      j->enforcement = gp_xstrdup(e->enforcement);
      int r = gp__srv_persist_job(s, j, err);
      if (r) {
        json_decref(extra);
        return r;
      }
    }
    return gp__srv_job_event(s, j, "launched", at, extra, err);
  }
  if (e->kind == GP_PROTO_EV_IMAGE && e->has_reason && !strcmp(e->reason, "progress"))
    return gp__srv_pull_progress(s, j, e->task, e->done_bytes, e->total_bytes);
  if (e->kind == GP_PROTO_EV_IMAGE) {
    /* A container task's pull: a phase of the job in its timeline (docs/containers.md). */
    bool pulled = e->has_reason && !strcmp(e->reason, "pulled");
    json_t *extra = json_object();
    json_object_set_new(extra, "node", json_string(n->name));
    if (e->task >= 0) json_object_set_new(extra, "task", json_integer(e->task));
    if (e->has_message) json_object_set_new(extra, "message", json_string(e->message));
    return gp__srv_job_event(s, j, pulled ? "image_pulled" : "pulling_image", at, extra, err);
  }
  if (e->kind == GP_PROTO_EV_CHECKPOINT) {
    j->last_checkpoint_at = at;
    return gp__srv_persist_job(s, j, err);
  }
  /* exited: its last figures reach the intervals before they close */
  if (json_is_object(e->usage) && json_object_size(e->usage) <= 32) {
    int r = take_usage(s, j, idx, e->task, e->usage, now_s, err);
    if (r) return r;
  }
  char why[600];
  exit_reason(e->has_reason ? e->reason : NULL, e->has_message ? e->message : NULL, why, sizeof why);
  return gp__srv_job_task_exited(s, j, idx, e->task, e->has_exit_code ? e->exit_code : -1, e->signal,
                                 why[0] ? why : NULL, now_s, err);
}

static void apply_gpus(gp_srv_node *n, const json_t *gpus, gp_srv_state *s, int64_t now_s) {
  if (!json_is_array(gpus)) return;
  for (size_t i = 0; i < json_array_size(gpus) && i < GP_MAX_NODE_GPUS; i++) {
    const json_t *g = json_array_get(gpus, i);
    const json_t *iv = json_object_get(g, "index");
    int idx = json_is_integer(iv) ? (int)json_integer_value(iv) : (int)i;
    if (idx < 0 || idx >= n->n_gpus) continue;
    gp_srv_gpu *gpu = &n->gpus[idx];
    const json_t *tel = json_object_get(g, "telemetry");
    if (json_is_object(tel) && json_object_size(tel) <= 64) {
      json_decref(gpu->telemetry);
      gpu->telemetry = json_deep_copy(tel);
      const json_t *u = json_object_get(tel, "gpu_util_pct");
      if (json_is_number(u) && json_number_value(u) < GP_SRV_IDLE_PCT) {
        if (!gpu->idle_since) gpu->idle_since = now_s;
      } else {
        gpu->idle_since = 0;
      }
    } else {
      /* The agent could not read the GPU (fallen off the bus): its last figures are stale. */
      json_decref(gpu->telemetry);
      gpu->telemetry = NULL;
      gpu->idle_since = 0;
    }
    const char *h = json_string_value(json_object_get(g, "health"));
    gp_gpu_health hv;
    if (h && !gp_gpu_health_parse(h, &hv) && !gpu->admin_drained && hv != gpu->health) {
      gpu->health = hv;
      if (hv == GP_GPU_HEALTHY) {
        free(gpu->reason);
        gpu->reason = NULL;
      }
      gp__srv_node_changed(s, n);
      s->sched_dirty = true;
    }
  }
}

/* Usage figures of the node's own jobs; a report about another node's job is ignored. */
static int apply_usage(gp_srv_state *s, int idx, const json_t *jobs, int64_t now, gp_err *err) {
  if (!json_is_array(jobs)) return 0;
  int r = 0;
  for (size_t i = 0; i < json_array_size(jobs) && i < 10000 && !r; i++) {
    const json_t *e = json_array_get(jobs, i);
    gp_srv_job *j = gp__srv_job_get(s, json_string_value(json_object_get(e, "id")));
    const json_t *u = json_object_get(e, "usage");
    int task = report_task(e);
    bool here = false;
    for (int t = 0; j && t < j->n_alloc; t++) here = here || (j->alloc[t].node == idx && (task < 0 || task == t));
    if (here && json_is_object(u) && json_object_size(u) <= 32) r = take_usage(s, j, idx, task, u, now, err);
    /* A service replica's port and readiness (service_ctl.c), from its node only. */
    if (!r && here && j->service && task <= 0) r = gp__srv_service_replica_report(s, j, e, now, err);
  }
  return r;
}

/* An agent that could not read an answer says so in its next heartbeat: its orders are not
 * arriving, so the node is drained with the agent's words until an admin resumes it. */
static int answer_error(gp_srv_state *s, gp_srv_node *n, const json_t *v, gp_err *err) {
  const char *msg = json_string_value(v);
  if (!msg) return 0;
  char why[600];
  snprintf(why, sizeof why, "the agent cannot read the server's answers: %.500s", msg);
  for (char *c = why; *c; c++) /* one line, in the server's log and in `gpool nodes` */
    if ((unsigned char)*c < ' ' || *c == 0x7f) *c = ' ';
  if (n->admin_state == GP_NODE_DRAIN && n->reason && strcmp(n->reason, why) == 0) return 0;
  fprintf(stderr, "gpool server: node %s: %s\n", n->name, why);
  n->admin_state = GP_NODE_DRAIN;
  free(n->reason);
  n->reason = gp_xstrdup(why);
  gp__srv_node_changed(s, n);
  s->sched_dirty = true;
  return gp__srv_persist_node(s, n, err);
}

static int do_heartbeat(gp_srv_state *s, gp_srv_req *r, int64_t now_s, int64_t now_ms, gp_err *err) {
  const json_t *body = r->json;
  const char *name = json_string_value(json_object_get(body, "node"));
  if (!name) {
    gp__srv_reply_error(r, 400, "invalid_argument", "node", "a heartbeat names its node");
    return 0;
  }
  gp_srv_node *n = gp__srv_node_get(s, name);
  if (!gp__srv_node_auth(s, r, name, n, false)) return 0;
  if (!n) {
    gp__srv_reply_error(r, 404, "not_found", "node", "node %s is not registered; register first", name);
    return 0;
  }
  if (!n->alive) {
    gp__srv_reply_error(r, 409, "conflict", "node", "node %s was marked down; register again", name);
    return 0;
  }
  const json_t *gv = json_object_get(body, "gen");
  int64_t gen = 0;
  if (gv && !json_is_null(gv)) {
    if (!json_is_integer(gv) || json_integer_value(gv) < 0) {
      gp__srv_reply_error(r, 400, "invalid_argument", "gen", "gen must be an integer >= 0");
      return 0;
    }
    gen = json_integer_value(gv);
  }
  int64_t wait_ms = 25000;
  const json_t *wv = json_object_get(body, "wait_ms");
  if (wv && !json_is_null(wv)) {
    if (!json_is_integer(wv) || json_integer_value(wv) < 0) {
      gp__srv_reply_error(r, 400, "invalid_argument", "wait_ms", "wait_ms must be an integer >= 0");
      return 0;
    }
    wait_ms = json_integer_value(wv);
    if (wait_ms > MAX_WAIT_MS) wait_ms = MAX_WAIT_MS;
  }
  if (wait_ms > (int64_t)s->cfg->node_timeout_s * 500) wait_ms = (int64_t)s->cfg->node_timeout_s * 500;
  const json_t *events = json_object_get(body, "events");
  if (check_events(r, events)) return 0;
  n->last_seen_ms = now_ms;
  n->last_heartbeat = now_s;
  n->agent_token = r->token;
  int rc = 0;
  if (gen > 0) rc = gp__srv_orders_ack(s, n, gen, err);
  int idx = node_index_of(s, n);
  for (size_t i = 0; i < json_array_size(events) && !rc; i++)
    rc = apply_event(s, n, idx, json_array_get(events, i), now_s, err);
  if (rc) return rc;
  apply_gpus(n, json_object_get(body, "gpus"), s, now_s);
  if (gp__srv_node_images_take(n, json_object_get(body, "images"))) gp__srv_node_changed(s, n);
  if (gp__srv_node_models_take(n, json_object_get(body, "models"))) gp__srv_node_changed(s, n);
  const json_t *nh = json_object_get(body, "node_health");
  const char *conds = json_string_value(json_object_get(nh, "conditions"));
  if (json_is_object(nh)) {
    json_t *list = json_array();
    for (const char *p = conds ? conds : ""; *p && json_array_size(list) < 16;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      if (len > 0 && len < 64) json_array_append_new(list, json_stringn(p, len));
      p = comma ? comma + 1 : p + len;
    }
    json_decref(n->conditions);
    n->conditions = list;
  }
  /* After the events: a job whose end came in them is no longer the node's. */
  gp__srv_node_report_take(n, json_object_get(body, "jobs"), json_object_get(body, "ended"));
  rc = apply_usage(s, idx, json_object_get(body, "jobs"), now_s, err);
  gp__srv_jobmetrics_take(s, n, idx, json_object_get(body, "jobs"), s->cfg->heartbeat_s, now_s);
  if (!rc) rc = answer_error(s, n, json_object_get(body, "answer_error"), err);
  if (rc) return rc;
  bool has_orders = n->n_orders > 0 && n->orders[n->n_orders - 1].id > gen;
  release_waiter(s, n); /* one poll per node: the newer one wins */
  if (has_orders || json_array_size(events) > 0 || wait_ms == 0) {
    gp__srv_agent_reply_orders(s, n, r, gen);
    return 0;
  }
  r->parked = true;
  gp__srv_waiter_park(s, n, r, gen, now_ms + wait_ms);
  return 0;
}

int gp__srv_agent_handle(gp_srv_state *s, gp_srv_req *r, int64_t now_s, int64_t now_ms, gp_err *err) {
  if (!agent_only(r)) return 0;
  if (strcmp(r->method, "POST") != 0) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "the agent protocol uses POST");
    return 0;
  }
  if (!json_is_object(r->json)) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON object");
    return 0;
  }
  if (strcmp(r->path, "/v1/agent/register") == 0) return do_register(s, r, now_s, now_ms, err);
  if (strcmp(r->path, "/v1/agent/heartbeat") == 0) return do_heartbeat(s, r, now_s, now_ms, err);
  gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, r->path);
  return 0;
}
