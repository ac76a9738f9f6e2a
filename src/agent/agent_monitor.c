/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's use of telemetry and health (src/agent/telemetry.h, health.h): once a second
 * (the config's watchdog_interval)
 * it hands the job table to telemetry, samples every GPU, lets the health policy judge the
 * round and applies its decisions: a gpu_fault event to the server (which drains GPUs or
 * the node as the action says), jobs on a failed GPU stopped with reason gpu_fault, GPU
 * states and node conditions in heartbeats, per-job usage in heartbeats and exit events. */
#include "agent/agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/mem.h"

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gp__agent_monitor_new(gp_agent *a, gp_err *err) {
  gp_telemetry_opts opts = {0};
  opts.hostname = a->cfg.name;
  int rc = gp_telemetry_new(a->gpu, &opts, &a->tel, err);
  if (rc) return rc;
  a->health = gp_health_new(&a->cfg.health, a->gpu);
  a->view = gp_xcalloc(1, sizeof *a->view);
  return 0;
}

void gp__agent_monitor_free(gp_agent *a) {
  gp_health_free(a->health);
  gp_telemetry_free(a->tel);
  free(a->view);
  a->health = NULL;
  a->tel = NULL;
  a->view = NULL;
}

static int telemetry_jobs(gp_agent *a, gp_telemetry_job *out, int max) {
  int n = 0;
  for (size_t i = 0; i < a->n_jobs && n < max; i++) {
    const gp__agent_job *j = a->jobs[i];
    if (j->ended) continue;
    gp_telemetry_job *t = &out[n++];
    memset(t, 0, sizeof *t);
    snprintf(t->id, sizeof t->id, "%.31s", j->key); /* per task: its own use and faults */
    snprintf(t->queue, sizeof t->queue, "%.127s", j->queue);
    snprintf(t->user, sizeof t->user, "%.63s", j->user);
    t->leader = j->pid;
    if (j->cgroup) {
      /* As /proc/<pid>/cgroup names it: the path below the cgroup v2 mount. */
      const char *root = a->cgroup.root;
      if (strncmp(root, "/sys/fs/cgroup", 14) == 0) root += 14;
      snprintf(t->cgroup, sizeof t->cgroup, "%.170s/job-%.72s", root, j->key);
    }
    t->n_gpus = j->n_gpus;
    memcpy(t->gpus, j->gpus, sizeof t->gpus);
    snprintf(t->mig_uuid, sizeof t->mig_uuid, "%s", j->mig_uuid);
  }
  return n;
}

static void apply(gp_agent *a, const gp_health_action *act) {
  char actions[128];
  switch (act->kind) {
  case GP_HEALTH_FAULT: {
    gp_health_actions_str(act->actions, actions, sizeof actions);
    gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
    ev->kind = GP_PROTO_EV_GPU_FAULT;
    ev->gpu = act->gpu;
    ev->xid = act->xid;
    snprintf(ev->action, sizeof ev->action, "%s", actions);
    snprintf(ev->fault, sizeof ev->fault, "%s", act->reason);
    for (int k = 0; k < act->n_jobs && k < GP_HEALTH_MAX_JOBS && k < GP_PROTO_MAX_FAULT_JOBS; k++) {
      const gp__agent_job *fj = gp__agent_job_find_key(a, act->jobs[k]); /* the job, not its task */
      snprintf(ev->jobs[ev->n_jobs++], sizeof ev->jobs[0], "%s", fj ? fj->id : act->jobs[k]);
    }
    gp__agent_event(a, gp_proto_event_encode(ev));
    free(ev);
    gp__agent_log("GPU fault: %s: %s", act->reason, actions);
    if (act->actions & GP_HEALTH_FAIL_JOB) {
      for (int k = 0; k < act->n_jobs && k < GP_HEALTH_MAX_JOBS; k++) {
        gp__agent_job *j = gp__agent_job_find_key(a, act->jobs[k]);
        if (j && !j->ended) gp__agent_job_stop_local(a, j, j->grace_s > 30 ? 30 : j->grace_s,
                                               "gpu_fault", act->reason);
      }
    }
    break;
  }
  case GP_HEALTH_RESUME_GPU:
    gp__agent_log("GPU %d passed its reset check and is back in service", act->gpu);
    break;
  case GP_HEALTH_CONDITION:
    gp_health_conditions(a->health, a->conditions, sizeof a->conditions);
    gp__agent_log("node condition %s %s", act->condition, act->active ? "set" : "cleared");
    break;
  }
}

void gp__agent_monitor_tick(gp_agent *a) {
  int64_t now = mono_ms();
  if (now - a->last_sample_ms < a->cfg.watchdog_ms) return;
  a->last_sample_ms = now;
  static gp_telemetry_job jobs[GP_TELEMETRY_MAX_JOBS];
  int n = telemetry_jobs(a, jobs, GP_TELEMETRY_MAX_JOBS);
  gp_err err = {0};
  if (gp_telemetry_set_jobs(a->tel, jobs, n, &err) != 0) gp__agent_log("telemetry: %s", err.message);
  gp_telemetry_sample(a->tel);
  gp_gpu_event events[GP_TELEMETRY_MAX_EVENTS];
  int n_events = 0;
  gp_telemetry_take_events(a->tel, events, GP_TELEMETRY_MAX_EVENTS, &n_events);
  gp_telemetry_view_get(a->tel, a->view);
  a->have_view = true;
  gp__agent_watchdog_check(a, a->view);
  gp_health_action acts[32];
  int n_acts = 0;
  gp_health_evaluate(a->health, a->view, events, n_events, jobs, n, now, acts, 32, &n_acts);
  for (int i = 0; i < n_acts; i++) apply(a, &acts[i]);
}

json_t *gp__agent_job_usage_json(gp_agent *a, const char *job_id) {
  gp_job_usage u;
  if (!a->tel || gp_telemetry_job_usage(a->tel, job_id, &u) != 0) return NULL;
  json_t *o = json_object();
  /* Unmeasured utilisation is left out rather than shown as an idle 0%. */
  if (u.util_known) {
    json_object_set_new(o, "avg_sm_util_pct", json_real(u.avg_sm_util_pct));
    json_object_set_new(o, "peak_sm_util_pct", json_integer(u.peak_sm_util_pct));
    json_object_set_new(o, "idle_s", json_integer(u.idle_s));
    json_object_set_new(o, "sm_busy_gpu_s", json_real(u.sm_busy_gpu_s));
  }
  json_object_set_new(o, "peak_mem_mib", json_integer(u.peak_mem_mib));
  json_object_set_new(o, "energy_j", json_real(u.energy_j));
  return o;
}

static json_t *task_usage(gp_agent *a, const gp__agent_job *j) { return gp__agent_job_usage_json(a, j->key); }

/* A task's measured usage goes with its "exited" event (agent_hooks.c). */
const gp__agent_job_hooks gp__agent_monitor_hooks = {.name = "monitor", .usage = task_usage};

const char *gp__agent_gpu_health(gp_agent *a, int gpu, char *reason, size_t size) {
  reason[0] = '\0';
  gp_gpu_state st = a->health ? gp_health_gpu_state(a->health, gpu, reason, size) : GP_GPU_STATE_HEALTHY;
  /* Failed outranks an admin's drain: the GPU is gone, whoever took it out of service. */
  if (st == GP_GPU_STATE_FAILED) return "failed";
  if (a->gpu_drained[gpu]) {
    snprintf(reason, size, "%s", a->gpu_drain_reason[gpu]);
    return "drained";
  }
  return st == GP_GPU_STATE_DRAINED ? "drained" : "healthy";
}
