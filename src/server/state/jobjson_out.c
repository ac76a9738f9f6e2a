/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs to JSON: the JOB object of the API and the document kept in the store
 * (docs/internals/protocol.md), with its placements and why it waits. Reading and
 * validating a submission is jobjson.c; what other callers may see of it, jobredact.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/mig.h"
#include "core/plan.h"
#include "protocol/limits.h"
#include "protocol/order.h"
#include "server/state/jobmetrics.h"
#include "server/state/notify_job.h"
#include "server/state/state.h"
#include "server/state/steps_doc.h"
#include "snapshot/policy_read.h"
#include "util/mem.h"
#include "util/signals.h"

static json_t *strv_json(char **v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++) json_array_append_new(a, json_string(v[i]));
  return a;
}

static json_t *placement_json(const gp_srv_state *s, const gp_srv_job *j, int task) {
  const gp_srv_alloc *a = &j->alloc[task];
  const gp_srv_node *n = a->node >= 0 && a->node < s->n_nodes ? s->nodes[a->node] : NULL;
  json_t *p = json_object();
  json_object_set_new(p, "node", json_string(n ? n->name : "?"));
  json_t *ids = json_array(), *uuids = json_array();
  for (int g = 0; g < GP_MAX_NODE_GPUS; g++) {
    if (!(a->gpu_mask & (UINT32_C(1) << g))) continue;
    json_array_append_new(ids, json_integer(g));
    const char *u = n && g < n->n_gpus ? n->gpus[g].uuid : NULL;
    json_array_append_new(uuids, u ? json_string(u) : json_null());
  }
  json_object_set_new(p, "gpu_ids", ids);
  json_object_set_new(p, "gpu_uuids", uuids);
  json_object_set_new(p, "gpu_milli", json_integer(a->gpu_milli));
  json_object_set_new(p, "gpu_mem_mib", json_integer(a->gpu_mem_mib));
  const char *mig_uuid = NULL;
  if (n && a->mig_instance >= 0) {
    for (int g = 0; g < n->n_gpus; g++)
      if ((a->gpu_mask & (UINT32_C(1) << g)) && a->mig_instance < n->gpus[g].n_mig)
        mig_uuid = n->gpus[g].mig[a->mig_instance].uuid;
  }
  json_object_set_new(p, "mig_uuid", mig_uuid ? json_string(mig_uuid) : json_null());
  /* The task's own end in this run (the job's exit code is the highest of them). */
  json_object_set_new(p, "exited", json_boolean(a->exited));
  json_object_set_new(p, "exit_code", a->exited && a->exit_code >= 0 ? json_integer(a->exit_code) : json_null());
  return p;
}

json_t *gp__srv_job_placements_json(const gp_srv_state *s, const gp_srv_job *j) {
  json_t *pl = json_array();
  for (int t = 0; t < j->n_alloc; t++) json_array_append_new(pl, placement_json(s, j, t));
  return pl;
}

static const char *enforcement(const gp_srv_state *s, const gp_srv_job *j) {
  if (j->enforcement) return j->enforcement; /* what the agent says it enforces */
  if (j->mig) return "mig";
  if (j->gpu_milli > 0 || j->gpu_mem_mib > 0) {
    /* The agent reports how a share is enforced; the server knows the GPU's mode. */
    if (j->n_alloc > 0 && j->alloc[0].node >= 0 && j->alloc[0].node < s->n_nodes) {
      const gp_srv_node *n = s->nodes[j->alloc[0].node];
      for (int g = 0; g < n->n_gpus; g++)
        if (j->alloc[0].gpu_mask & (UINT32_C(1) << g))
          return n->gpus[g].mode == GP_SHARE_TIMESLICE ? "none" : "shared";
    }
    return "shared";
  }
  return j->gpus > 0 ? "exclusive" : "none";
}

json_t *gp__srv_job_to_json(const gp_srv_state *s, const gp_srv_job *j, bool for_store) {
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(j->idstr));
  json_object_set_new(o, "name", json_string(j->name ? j->name : ""));
  json_object_set_new(o, "queue", json_string(j->queue));
  json_object_set_new(o, "user", json_string(j->user));
  json_object_set_new(o, "state", json_string(gp_job_state_name(j->state)));
  json_object_set_new(o, "priority", j->priority ? json_string(j->priority) : json_null());
  json_object_set(o, "command", j->command);
  json_object_set(o, "env", j->env);
  json_object_set_new(o, "workdir", j->workdir ? json_string(j->workdir) : json_null());
  json_object_set_new(o, "gpus", json_integer(j->gpus));
  json_object_set_new(o, "tasks", json_integer(j->tasks));
  json_object_set_new(o, "tasks_per_node", j->tasks_per_node > 0 ? json_integer(j->tasks_per_node) : json_null());
  json_object_set_new(o, "nodes", j->nodes > 0 ? json_integer(j->nodes) : json_null());
  json_object_set_new(o, "gpu_fraction", j->gpu_milli ? json_real(j->gpu_milli / 1000.0) : json_integer(0));
  json_object_set_new(o, "gpu_mem_mib", json_integer(j->gpu_mem_mib));
  json_object_set_new(o, "mig", j->mig ? json_string(j->mig) : json_null());
  json_object_set_new(o, "gpu_types", strv_json(j->gpu_types, j->n_gpu_types));
  json_object_set_new(o, "cpus", j->cpu_milli % 1000 ? json_real((double)j->cpu_milli / 1000.0)
                                                    : json_integer(j->cpu_milli / 1000));
  json_object_set_new(o, "mem_mib", json_integer(j->mem_mib));
  json_object_set_new(o, "time_limit", json_integer(j->time_limit));
  json_object_set_new(o, "requeue", json_boolean(j->requeue));
  json_object_set_new(o, "grace_s", json_integer(j->grace_s));
  json_object_set_new(o, "signal", json_string(j->signal));
  if (!for_store || j->mail_set || j->mail_user) gp__srv_notify_job_json(o, j);
  json_object_set_new(o, "allow_spot", json_boolean(j->allow_spot));
  json_object_set_new(o, "exclusive", json_boolean(j->exclusive));
  if (!for_store || j->model) json_object_set_new(o, "model", j->model ? json_string(j->model) : json_null());
  gp__srv_job_batch_json(o, j);
  if (!for_store || j->container) gp__srv_job_container_json(o, j); /* as jobdoc.c writes it */
  json_t *sel = json_object();
  for (int i = 0; i < j->n_selector; i++)
    json_object_set_new(sel, j->selector[i].key, json_string(j->selector[i].value));
  json_object_set_new(o, "node_selector", sel);
  json_object_set_new(o, "restarts", json_integer(j->restarts));
  json_object_set_new(o, "after", strv_json(j->after, j->n_after));
  json_object_set_new(o, "after_ok", strv_json(j->after_ok, j->n_after_ok));
  json_object_set_new(o, "after_any", strv_json(j->after_any, j->n_after_any));
  json_object_set_new(o, "after_not_ok", strv_json(j->after_not_ok, j->n_after_not_ok));
  json_object_set_new(o, "singleton", json_boolean(j->singleton));
  gp__srv_array_fields(o, s, j, for_store);
  if (j->service) {
    json_object_set_new(o, "service", json_string(j->service));
    json_object_set_new(o, "service_rev", json_integer(j->service_rev));
    if (!for_store)
      json_object_set_new(o, "replica", json_pack("{s:i, s:b, s:b, s:s}", "port", j->svc_port, "ready",
                                                  j->svc_ready, "draining", j->svc_drain_at != 0, "last_probe",
                                                  j->svc_probe));
  }
  json_object_set_new(o, "exit_code", j->has_exit_code ? json_integer(j->exit_code) : json_null());
  json_object_set_new(o, "exit_signal", j->exit_signal ? json_integer(j->exit_signal) : json_null());
  json_object_set_new(o, "end_reason", j->end_reason ? json_string(j->end_reason) : json_null());
  json_object_set_new(o, "stop_reason", j->stop_reason ? json_string(j->stop_reason) : json_null());
  json_object_set_new(o, "submitted_at", json_integer(j->submitted_at));
  json_object_set_new(o, "started_at", j->started_at ? json_integer(j->started_at) : json_null());
  json_object_set_new(o, "ended_at", j->ended_at ? json_integer(j->ended_at) : json_null());
  json_object_set_new(o, "last_checkpoint_at",
                      j->last_checkpoint_at ? json_integer(j->last_checkpoint_at) : json_null());
  /* A copy: HTTP threads serialise the API's object after the state thread moved on. */
  if (j->attempts || !for_store)
    json_object_set_new(o, "attempts", j->attempts ? json_deep_copy(j->attempts) : json_array());
  if (for_store) {
    if (j->last_placements && gp_job_state_is_final(j->state))
      json_object_set(o, "last_placements", j->last_placements);
    if (j->enforcement) json_object_set_new(o, "enforcement", json_string(j->enforcement));
    if (j->usage && gp_job_state_is_final(j->state)) json_object_set(o, "usage", j->usage);
    json_t *steps = gp__srv_steps_store_json(j);
    if (steps) json_object_set_new(o, "steps", steps);
    return o;
  }
  json_t *steps = gp__srv_steps_json(j); /* never the credential */
  json_object_set_new(o, "steps", steps ? steps : json_array());
  json_t *extra = gp__srv_job_api_fields(s, j);
  json_object_update(o, extra);
  json_decref(extra);
  return o;
}

void gp__srv_job_pending_why(const gp_srv_job *j, const char **ret_reason, const char **ret_message) {
  bool pending = j->state == GP_JOB_PENDING || j->state == GP_JOB_HELD;
  *ret_reason = *ret_message = NULL;
  if (j->state == GP_JOB_HELD) {
    *ret_reason = "Held";
    /* A budget's hold is not its owner's to release (budget_hold.c): say why instead. */
    const char *budget = gp__srv_job_budget_hold_reason(j);
    *ret_message = budget ? budget : "The job is held; release it with `gpool release`.";
  } else if (pending && j->array) { /* the array's job: its elements are what is scheduled */
    bool capped = j->array->limit && j->array->n_live >= j->array->limit;
    *ret_reason = capped ? "JobArrayTaskLimit" : "ArrayElements";
    *ret_message = capped ? "As many of the array's elements as its % limit allows are started; the others wait."
                          : "The array's elements start as the scheduler finds room, each as a job of its own.";
  } else if (pending && j->pending_reason >= 0) {
    *ret_reason = gp_pending_reason_name((gp_pending_reason)j->pending_reason);
    *ret_message = j->pending_message;
  } else if (pending) {
    *ret_reason = "Priority";
    *ret_message = "The scheduler has not considered the job yet.";
  }
}

json_t *gp__srv_job_api_fields(const gp_srv_state *s, const gp_srv_job *j) {
  json_t *o = json_object();
  json_object_set_new(o, "enforcement", json_string(enforcement(s, j)));
  bool pending = j->state == GP_JOB_PENDING || j->state == GP_JOB_HELD;
  const char *reason = NULL, *message = NULL;
  gp__srv_job_pending_why(j, &reason, &message);
  json_object_set_new(o, "pending_reason", reason ? json_string(reason) : json_null());
  json_object_set_new(o, "pending_message", message ? json_string(message) : json_null());
  json_object_set_new(o, "reservation_at",
                      pending && j->reservation_at ? json_integer(j->reservation_at) : json_null());
  int position = gp__srv_job_queue_position(s, j);
  json_object_set_new(o, "queue_position", position > 0 ? json_integer(position) : json_null());
  /* The backfill reservation is the only start time the scheduler works out; null: unknown. */
  json_object_set_new(o, "estimated_start", j->state == GP_JOB_PENDING && j->reservation_at
                                                ? json_integer(j->reservation_at)
                                                : json_null());
  if (j->n_alloc == 0 && j->last_placements && gp_job_state_is_final(j->state))
    json_object_set(o, "placements", j->last_placements);
  else
    json_object_set_new(o, "placements", gp__srv_job_placements_json(s, j));
  json_object_set(o, "timeline", j->timeline);
  json_object_set(o, "usage", j->usage ? j->usage : json_null());
  json_object_set_new(o, "idle", gp__srv_idle_job_json(s, j, (int64_t)time(NULL)));
  return o;
}
