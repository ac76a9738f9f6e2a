/* SPDX-License-Identifier: Apache-2.0 */
/* Event encoding and decoding (event.h). Each kind writes its keys in the order the server
 * has always read them; the decoder keeps an out-of-bounds optional field out of the struct
 * instead of refusing the event. */
#include "protocol/event.h"

#include <stdio.h>
#include <string.h>

#include "protocol/proto_int.h"

static const struct {
  gp_proto_event_kind kind;
  const char *name;
  bool needs_job, needs_gpu;
} kinds[] = {
    {GP_PROTO_EV_STARTED, "started", true, false},
    {GP_PROTO_EV_EXITED, "exited", true, false},
    {GP_PROTO_EV_CHECKPOINT, "checkpoint", true, false},
    {GP_PROTO_EV_GPU_FAULT, "gpu_fault", false, true},
    {GP_PROTO_EV_MIG_DONE, "mig_done", false, true},
    {GP_PROTO_EV_INJECT_DONE, "inject_done", false, false},
    {GP_PROTO_EV_INTERRUPTION, "interruption", false, false},
    {GP_PROTO_EV_IMAGE, "image", true, false},
    {GP_PROTO_EV_STEP_EXITED, "step_exited", true, false},
    {GP_PROTO_EV_PULL_DONE, "pull_done", false, false},
    {GP_PROTO_EV_PULL_PROGRESS, "pull_progress", false, false},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static int kind_row(gp_proto_event_kind kind) {
  for (size_t i = 0; i < N_KINDS; i++)
    if (kinds[i].kind == kind) return (int)i;
  return -1;
}

void gp_proto_pull_bytes_text(int64_t done, int64_t total, char *buf, size_t size) {
  int64_t big = total > done ? total : done;
  double unit = big >= 1000000000 ? 1e9 : 1e6;
  const char *name = big >= 1000000000 ? "GB" : "MB";
  if (total > 0) snprintf(buf, size, "%.1f of %.1f %s", (double)done / unit, (double)total / unit, name);
  else snprintf(buf, size, "%.1f %s so far", (double)done / unit, name);
}

const char *gp_proto_event_kind_name(gp_proto_event_kind kind) {
  int i = kind_row(kind);
  return i < 0 ? NULL : kinds[i].name;
}

/* ---- encode ---- */

json_t *gp_proto_event_encode(const gp_proto_event *ev) {
  int row = kind_row(ev->kind);
  if (row < 0) return NULL;
  json_t *o = json_object();
  json_object_set_new(o, "kind", json_string(kinds[row].name));
  switch (ev->kind) {
  case GP_PROTO_EV_STARTED:
    json_object_set_new(o, "job", json_string(ev->job));
    if (ev->task >= 0) json_object_set_new(o, "task", json_integer(ev->task));
    json_object_set_new(o, "at", json_integer(ev->at));
    json_object_set_new(o, "pid", json_integer(ev->pid));
    json_object_set_new(o, "order", json_string(ev->order));
    json_object_set_new(o, "enforcement", json_string(ev->enforcement));
    if (ev->gpu_mem_limit_mib > 0)
      json_object_set_new(o, "gpu_mem_limit_mib", json_integer(ev->gpu_mem_limit_mib));
    break;
  case GP_PROTO_EV_EXITED:
    json_object_set_new(o, "job", json_string(ev->job));
    if (ev->task >= 0) json_object_set_new(o, "task", json_integer(ev->task));
    json_object_set_new(o, "at", json_integer(ev->at));
    json_object_set_new(o, "exit_code", ev->has_exit_code ? json_integer(ev->exit_code) : json_null());
    json_object_set_new(o, "signal", ev->signal ? json_integer(ev->signal) : json_null());
    json_object_set_new(o, "reason", json_string(ev->reason));
    json_object_set_new(o, "message", json_string(ev->message));
    if (ev->order[0]) json_object_set_new(o, "order", json_string(ev->order));
    if (ev->usage) json_object_set(o, "usage", ev->usage);
    break;
  case GP_PROTO_EV_STEP_EXITED:
    json_object_set_new(o, "job", json_string(ev->job));
    json_object_set_new(o, "step", json_integer(ev->step));
    json_object_set_new(o, "task", json_integer(ev->task));
    json_object_set_new(o, "at", json_integer(ev->at));
    json_object_set_new(o, "exit_code", ev->has_exit_code ? json_integer(ev->exit_code) : json_null());
    json_object_set_new(o, "signal", ev->signal ? json_integer(ev->signal) : json_null());
    json_object_set_new(o, "reason", json_string(ev->reason));
    json_object_set_new(o, "message", json_string(ev->message));
    json_object_set_new(o, "out_bytes", json_integer(ev->out_bytes));
    json_object_set_new(o, "err_bytes", json_integer(ev->err_bytes));
    break;
  case GP_PROTO_EV_CHECKPOINT:
    json_object_set_new(o, "job", json_string(ev->job));
    if (ev->task >= 0) json_object_set_new(o, "task", json_integer(ev->task));
    json_object_set_new(o, "at", json_integer(ev->at));
    break;
  case GP_PROTO_EV_GPU_FAULT: {
    json_object_set_new(o, "gpu", json_integer(ev->gpu));
    json_object_set_new(o, "xid", json_integer(ev->xid));
    json_object_set_new(o, "action", json_string(ev->action));
    json_object_set_new(o, "reason", json_string(ev->fault));
    json_t *jobs = json_array();
    for (int k = 0; k < ev->n_jobs && k < GP_PROTO_MAX_FAULT_JOBS; k++)
      json_array_append_new(jobs, json_string(ev->jobs[k]));
    json_object_set_new(o, "jobs", jobs);
    break;
  }
  case GP_PROTO_EV_MIG_DONE:
    json_object_set_new(o, "gpu", json_integer(ev->gpu));
    json_object_set_new(o, "order", json_string(ev->order));
    json_object_set_new(o, "ok", json_boolean(ev->ok));
    json_object_set_new(o, "message", json_string(ev->message));
    if (ev->has_mig) {
      json_t *mig = json_array();
      for (int m = 0; m < ev->n_mig && m < GP_PROTO_MAX_MIG; m++) {
        json_t *mi = json_object();
        json_object_set_new(mi, "uuid", json_string(ev->mig[m].uuid));
        json_object_set_new(mi, "profile", json_string(ev->mig[m].profile));
        json_object_set_new(mi, "start_slot", json_integer(ev->mig[m].start_slot));
        json_object_set_new(mi, "gpu_instance_id", json_integer(ev->mig[m].gpu_instance_id));
        json_object_set_new(mi, "mem_mib", json_integer(ev->mig[m].mem_mib));
        json_array_append_new(mig, mi);
      }
      json_object_set_new(o, "mig", mig);
    }
    break;
  case GP_PROTO_EV_INJECT_DONE:
  case GP_PROTO_EV_PULL_DONE:
    json_object_set_new(o, "order", json_string(ev->order));
    json_object_set_new(o, "ok", json_boolean(ev->ok));
    json_object_set_new(o, "message", json_string(ev->message));
    break;
  case GP_PROTO_EV_PULL_PROGRESS:
    json_object_set_new(o, "order", json_string(ev->order));
    json_object_set_new(o, "done_bytes", json_integer(ev->done_bytes));
    json_object_set_new(o, "total_bytes", json_integer(ev->total_bytes));
    break;
  case GP_PROTO_EV_IMAGE:
    json_object_set_new(o, "job", json_string(ev->job));
    if (ev->task >= 0) json_object_set_new(o, "task", json_integer(ev->task));
    json_object_set_new(o, "at", json_integer(ev->at));
    json_object_set_new(o, "order", json_string(ev->order));
    json_object_set_new(o, "reason", json_string(ev->reason));
    json_object_set_new(o, "message", json_string(ev->message));
    if (!strcmp(ev->reason, "progress")) {
      json_object_set_new(o, "done_bytes", json_integer(ev->done_bytes));
      json_object_set_new(o, "total_bytes", json_integer(ev->total_bytes));
    }
    break;
  case GP_PROTO_EV_INTERRUPTION:
    json_object_set_new(o, "at", json_integer(ev->at));
    json_object_set_new(o, "at_ms", json_integer(ev->at_ms));
    json_object_set_new(o, "deadline", json_integer(ev->deadline));
    json_object_set_new(o, "source", json_string(ev->source));
    json_object_set_new(o, "message", json_string(ev->message));
    break;
  }
  return o;
}

/* ---- decode ---- */

/* An optional string: copied when it is a string that fits (true), else "" (false). */
static bool opt_str(const json_t *o, const char *key, char *buf, size_t size) {
  const json_t *v = json_object_get(o, key);
  buf[0] = '\0';
  if (!json_is_string(v) || json_string_length(v) >= size) return false;
  snprintf(buf, size, "%s", json_string_value(v));
  return true;
}

/* An optional integer: its value when it is one within [min, max], else `dflt`. */
static int64_t opt_int(const json_t *o, const char *key, int64_t min, int64_t max, int64_t dflt) {
  const json_t *v = json_object_get(o, key);
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) return dflt;
  return json_integer_value(v);
}

static void decode_mig(const json_t *doc, gp_proto_event *ev) {
  const json_t *mig = json_object_get(doc, "mig");
  if (!json_is_array(mig) || json_array_size(mig) > GP_PROTO_MAX_MIG) return;
  ev->has_mig = true;
  for (size_t m = 0; m < json_array_size(mig); m++) {
    const json_t *mi = json_array_get(mig, m);
    gp_proto_mig_instance *out = &ev->mig[ev->n_mig];
    opt_str(mi, "profile", out->profile, sizeof out->profile);
    if (!out->profile[0]) continue; /* an instance without a profile is no instance */
    opt_str(mi, "uuid", out->uuid, sizeof out->uuid);
    out->start_slot = (int)opt_int(mi, "start_slot", 0, 7, 0);
    out->gpu_instance_id = (int)opt_int(mi, "gpu_instance_id", 0, INT32_MAX, 0);
    out->mem_mib = opt_int(mi, "mem_mib", 0, INT64_MAX / 2, 0);
    ev->n_mig++;
  }
}

int gp_proto_event_decode(const json_t *doc, gp_proto_event *ret, gp_err *err) {
  memset(ret, 0, sizeof *ret);
  const char *kind = json_string_value(json_object_get(doc, "kind"));
  if (!json_is_object(doc) || !kind)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "kind", "an event is an object with a kind");
  int row = -1;
  for (size_t i = 0; i < N_KINDS && row < 0; i++)
    if (strcmp(kinds[i].name, kind) == 0) row = (int)i;
  if (row < 0) return gp_err_set(err, GP_ENOENT, NULL, 0, "kind", "unknown event kind");
  ret->kind = kinds[row].kind;
  if (kinds[row].needs_job) {
    const json_t *job = json_object_get(doc, "job");
    if (!json_is_string(job) || json_string_length(job) >= GP_PROTO_ID_MAX)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "job", "a %s event needs a job id", kind);
    snprintf(ret->job, sizeof ret->job, "%s", json_string_value(job));
  }
  if (kinds[row].needs_gpu) {
    const json_t *gpu = json_object_get(doc, "gpu");
    if (!json_is_integer(gpu))
      return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu", "a %s event needs a gpu index", kind);
    /* A GPU the protocol cannot name is no GPU of the node: the server ignores the event. */
    ret->gpu = (int)opt_int(doc, "gpu", 0, GP_PROTO_MAX_GPUS - 1, -1);
  }
  /* Absent or out of bounds: -1, which the server reads as "the job's tasks on the node"
   * (as it read every event before events named their task). */
  ret->task = (int)opt_int(doc, "task", 0, GP_PROTO_MAX_TASKS - 1, -1);
  opt_str(doc, "order", ret->order, sizeof ret->order);
  ret->at = opt_int(doc, "at", 1, INT64_MAX, 0);
  ret->pid = opt_int(doc, "pid", 1, INT32_MAX, 0);
  opt_str(doc, "enforcement", ret->enforcement, sizeof ret->enforcement);
  ret->gpu_mem_limit_mib = opt_int(doc, "gpu_mem_limit_mib", 1, INT64_MAX / 2, 0);
  const json_t *ec = json_object_get(doc, "exit_code");
  ret->has_exit_code = json_is_integer(ec) && json_integer_value(ec) >= INT32_MIN &&
                       json_integer_value(ec) <= INT32_MAX;
  ret->exit_code = ret->has_exit_code ? (int)json_integer_value(ec) : 0;
  ret->signal = (int)opt_int(doc, "signal", 1, 128, 0);
  const json_t *usage = json_object_get(doc, "usage");
  if (json_is_object(usage) && json_object_size(usage) <= GP_PROTO_MAX_USAGE_KEYS)
    ret->usage = (json_t *)usage;
  ret->has_message = opt_str(doc, "message", ret->message, sizeof ret->message);
  ret->xid = opt_int(doc, "xid", 0, INT32_MAX, 0);
  opt_str(doc, "action", ret->action, sizeof ret->action);
  if (ret->kind == GP_PROTO_EV_GPU_FAULT) opt_str(doc, "reason", ret->fault, sizeof ret->fault);
  else ret->has_reason = opt_str(doc, "reason", ret->reason, sizeof ret->reason);
  const json_t *jobs = json_object_get(doc, "jobs");
  for (size_t k = 0; k < json_array_size(jobs) && ret->n_jobs < GP_PROTO_MAX_FAULT_JOBS; k++) {
    const json_t *j = json_array_get(jobs, k);
    if (json_is_string(j) && json_string_length(j) < GP_PROTO_ID_MAX)
      snprintf(ret->jobs[ret->n_jobs++], GP_PROTO_ID_MAX, "%s", json_string_value(j));
  }
  ret->ok = json_is_true(json_object_get(doc, "ok"));
  if (ret->kind == GP_PROTO_EV_MIG_DONE) decode_mig(doc, ret);
  ret->deadline = opt_int(doc, "deadline", 1, INT64_MAX / 2, 0);
  ret->at_ms = opt_int(doc, "at_ms", 1, INT64_MAX / 2, 0);
  opt_str(doc, "source", ret->source, sizeof ret->source);
  ret->step = (int)opt_int(doc, "step", 0, GP_PROTO_MAX_STEPS - 1, -1);
  ret->out_bytes = opt_int(doc, "out_bytes", 0, INT64_MAX / 2, 0);
  ret->err_bytes = opt_int(doc, "err_bytes", 0, INT64_MAX / 2, 0);
  ret->done_bytes = opt_int(doc, "done_bytes", 0, GP_PROTO_PULL_BYTES_MAX, -1);
  ret->total_bytes = opt_int(doc, "total_bytes", 0, GP_PROTO_PULL_BYTES_MAX, -1);
  return 0;
}
