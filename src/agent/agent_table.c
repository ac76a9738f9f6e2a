/* SPDX-License-Identifier: Apache-2.0 */
/* The job table's queries and records, at the bottom of the agent: finding a task (by job,
 * task or key), its key and directory paths, its state.json, its register entry and the
 * "gpool: ..." lines in its stderr. The features (batch, containers, sessions, steps,
 * sharing, the monitor, the endpoint) use these; none of it calls back into the job life
 * cycle (agent_jobs.c), which tells the features of a task's events through the hooks
 * (agent_hooks.c). */
#include "agent/agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

bool gp__agent_job_id_valid(const char *id) { return gp_proto_job_id_valid(id); }

gp__agent_job *gp__agent_job_find(gp_agent *a, const char *id) { return gp__agent_job_find_task(a, id, -1); }

gp__agent_job *gp__agent_job_find_task(gp_agent *a, const char *id, int task) {
  for (size_t i = 0; id && i < a->n_jobs; i++)
    if (strcmp(a->jobs[i]->id, id) == 0 && (task < 0 || a->jobs[i]->task == task)) return a->jobs[i];
  return NULL;
}

gp__agent_job *gp__agent_job_find_key(gp_agent *a, const char *key) {
  for (size_t i = 0; key && i < a->n_jobs; i++)
    if (strcmp(a->jobs[i]->key, key) == 0) return a->jobs[i];
  return NULL;
}

void gp__agent_job_key(const char *id, int task, char *buf, size_t size) {
  if (task > 0) snprintf(buf, size, "%s@%d", id, task);
  else snprintf(buf, size, "%s", id);
}

void gp__agent_job_add(gp_agent *a, gp__agent_job *j) {
  gp_xgrow((void **)&a->jobs, &a->cap_jobs, a->n_jobs + 1, sizeof *a->jobs);
  a->jobs[a->n_jobs++] = j;
}

void gp__agent_job_path(const gp__agent_job *j, const char *name, char *buf, size_t size) {
  snprintf(buf, size, "%s/%s", j->dir, name);
}

/* ---- persistence ---- */

void gp__agent_job_persist(const gp__agent_job *j) {
  json_t *s = json_object();
  json_t *gpus = json_array();
  for (int i = 0; i < j->n_gpus; i++) json_array_append_new(gpus, json_integer(j->gpus[i]));
  json_object_set_new(s, "id", json_string(j->id));
  json_object_set_new(s, "task", json_integer(j->task));
  json_object_set_new(s, "tasks", json_integer(j->tasks));
  json_object_set_new(s, "order", json_string(j->order_id));
  json_object_set_new(s, "user", json_string(j->user));
  json_object_set_new(s, "queue", json_string(j->queue));
  json_object_set_new(s, "pid", json_integer(j->pid));
  json_object_set_new(s, "shim_pid", json_integer(j->shim_pid));
  json_object_set_new(s, "start_ticks", json_integer((json_int_t)j->start_ticks));
  json_object_set_new(s, "shim_ticks", json_integer((json_int_t)j->shim_ticks));
  json_object_set_new(s, "started_at", json_integer(j->started_at));
  json_object_set_new(s, "gpus", gpus);
  json_object_set_new(s, "mig_uuid", json_string(j->mig_uuid));
  json_object_set_new(s, "enforcement", json_string(j->enforcement));
  json_object_set_new(s, "limit_mib", json_integer(j->limit_mib));
  json_object_set_new(s, "sim_util", json_integer(j->sim_util));
  json_object_set_new(s, "sim_mem_mib", json_integer(j->sim_mem_mib));
  json_object_set_new(s, "signal", json_integer(j->ckpt_signal));
  json_object_set_new(s, "grace_s", json_integer(j->grace_s));
  json_object_set_new(s, "cgroup", json_boolean(j->cgroup));
  json_object_set_new(s, "stopping", json_boolean(j->stopping));
  json_object_set_new(s, "kill_at_ms", json_integer(j->kill_at_ms));
  json_object_set_new(s, "stop_signal", json_integer(j->stop_signal));
  json_object_set_new(s, "stop_reason", json_string(j->stop_reason));
  json_object_set_new(s, "limit_exceeded", json_boolean(j->limit_exceeded));
  json_object_set_new(s, "warn_at_ms", json_integer(j->warn_at_ms));
  json_object_set_new(s, "warn_signal", json_integer(j->warn_signal));
  json_object_set_new(s, "warn_batch", json_boolean(j->warn_batch));
  json_object_set_new(s, "warned", json_boolean(j->warned));
  json_object_set_new(s, "fault_reason", json_string(j->fault_reason));
  json_object_set_new(s, "message", json_string(j->message));
  if (j->svc) {
    json_object_set_new(s, "service", gp_proto_service_encode(&j->service));
    json_object_set_new(s, "port", json_integer(j->port));
  }
  char path[800];
  gp__agent_job_path(j, "state.json", path, sizeof path);
  if (gp__agent_write_json(path, s) != 0) gp__agent_log("job %s: cannot write %s", j->id, path);
  json_decref(s);
}

json_t *gp__agent_job_report(const gp__agent_job *j) {
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(j->id));
  json_object_set_new(o, "task", json_integer(j->task));
  json_object_set_new(o, "state", json_string(j->ended ? "exited" : "running"));
  json_object_set_new(o, "pid", json_integer(j->pid));
  json_object_set_new(o, "enforcement", json_string(j->enforcement));
  json_object_set_new(o, "started_at", json_integer(j->started_at));
  if (j->ended) {
    json_object_set_new(o, "exit_code", j->exit_known && j->exit_code >= 0
                                            ? json_integer(j->exit_code) : json_null());
    json_object_set_new(o, "signal", j->exit_known && j->signal ? json_integer(j->signal)
                                                                : json_null());
    json_object_set_new(o, "reason", json_string(j->reason));
    json_object_set_new(o, "message", json_string(j->message));
    json_object_set_new(o, "at", json_integer(j->ended_at));
  } else {
    json_object_set_new(o, "exit_code", json_null());
  }
  return o;
}

/* Appends a line to the job's stderr, so the user reads why the agent ended it. */
void gp__agent_job_note(const gp__agent_job *j, const char *text) {
  char path[800];
  gp__agent_job_path(j, "stderr", path, sizeof path);
  FILE *f = fopen(path, "ae");
  if (!f) return;
  fprintf(f, "gpool: %s\n", text);
  fclose(f);
}
