/* SPDX-License-Identifier: Apache-2.0 */
/* What another caller may see of a job (docs/security.md, "What others see"): who may read
 * all of it or its use figures, and the API document with the rest hidden. The document
 * itself is built by jobjson_out.c. */
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
#include "snapshot/policy_read.h"
#include "util/mem.h"
#include "util/signals.h"

bool gp__srv_job_may_read_all(const gp_srv_job *j, const char *user, gp_role role) {
  return role == GP_ROLE_ADMIN || (user && j->user && strcmp(user, j->user) == 0);
}

bool gp__srv_job_may_read_use(const gp_srv_job *j, const char *user, gp_role role) {
  return gp_role_reads_all(role) || gp__srv_job_may_read_all(j, user, role);
}

/* Is `head` (the part of a reason before ": ") one the server writes itself? The
 * scheduler's end reasons and the idle policy's detail speak of the pool and the queue's
 * rules; any other "reason: detail" is the agent's account of the job's process, which may
 * quote its program, working directory or user ("start_failed: execvp /home/alice/...").
 * Unknown heads count as the agent's: a new reason stays hidden until it is listed here. */
static bool server_reason(const char *head, size_t len) {
  for (int r = GP_END_DEPENDENCY_NEVER_SATISFIED; r <= GP_END_INVALID_REQUEST; r++) {
    const char *name = gp_end_reason_name((gp_end_reason)r);
    if (strlen(name) == len && strncmp(head, name, len) == 0) return true;
  }
  return len == 4 && strncmp(head, "idle", 4) == 0;
}

/* A reason as another caller sees it: the agent's detail becomes "(hidden)", the reason's
 * name ("start_failed", "exited", "oom") stays. NULL when it needs no change. */
static json_t *reason_for_others(const json_t *v) {
  const char *text = json_string_value(v);
  const char *colon = text ? strstr(text, ": ") : NULL;
  if (!colon || server_reason(text, (size_t)(colon - text))) return NULL;
  char buf[160];
  size_t len = (size_t)(colon - text);
  if (len > 100) return json_string("(hidden)");
  snprintf(buf, sizeof buf, "%.*s: (hidden)", (int)len, text);
  return json_string(buf);
}

/* The timeline as another caller sees it: end reasons of `ended` and `requeued` events
 * as reason_for_others says, and, unless `use`, no measured SM use in `idle` events. A
 * copy when anything changes (o's timeline may be the job's own). */
static void timeline_for_others(json_t *o, bool use) {
  json_t *tl = json_object_get(o, "timeline");
  if (!json_is_array(tl)) return;
  json_t *copy = NULL;
  for (size_t i = 0; i < json_array_size(tl); i++) {
    const json_t *e = json_array_get(tl, i);
    const char *ev = json_string_value(json_object_get(e, "event"));
    if (!ev) continue;
    json_t *reason = NULL;
    bool drop_util = false;
    if (strcmp(ev, "ended") == 0 || strcmp(ev, "requeued") == 0)
      reason = reason_for_others(json_object_get(e, "reason"));
    else if (strcmp(ev, "idle") == 0 && !use)
      drop_util = json_object_get(e, "util_pct") != NULL;
    if (!reason && !drop_util) continue;
    if (!copy) copy = json_deep_copy(tl);
    json_t *ce = json_array_get(copy, i);
    if (reason) json_object_set_new(ce, "reason", reason);
    if (drop_util) json_object_del(ce, "util_pct");
  }
  if (copy) json_object_set_new(o, "timeline", copy);
}

json_t *gp__srv_job_redact(json_t *o, const gp_srv_job *j, const char *user, gp_role role) {
  if (gp__srv_job_may_read_all(j, user, role)) return o;
  json_object_set_new(o, "command", json_pack("[s]", "(hidden)"));
  json_t *env = json_object();
  const char *k;
  json_t *v;
  json_object_foreach(j->env, k, v) json_object_set_new(env, k, json_string("(hidden)"));
  json_object_set_new(o, "env", env);
  if (json_object_get(o, "mail_user") && j->mail_user) /* an address is its owner's to show */
    json_object_set_new(o, "mail_user", json_string("(hidden)"));
  json_t *reason = reason_for_others(json_object_get(o, "end_reason"));
  if (reason) json_object_set_new(o, "end_reason", reason);
  json_t *attempts = json_object_get(o, "attempts");
  for (size_t i = 0; i < json_array_size(attempts); i++) {
    json_t *a = json_array_get(attempts, i); /* the document's own copy (job_to_json) */
    json_t *ar = reason_for_others(json_object_get(a, "end_reason"));
    if (ar) json_object_set_new(a, "end_reason", ar);
  }
  /* Its steps' commands and their tasks' end detail are the job's command and end's kin. */
  json_t *steps = json_object_get(o, "steps");
  for (size_t i = 0; i < json_array_size(steps); i++) {
    json_t *st = json_array_get(steps, i); /* the document's own copy (steps.c) */
    json_object_set_new(st, "command", json_pack("[s]", "(hidden)"));
    json_t *tasks = json_object_get(st, "tasks");
    for (size_t t = 0; t < json_array_size(tasks); t++)
      if (json_is_string(json_object_get(json_array_get(tasks, t), "message")))
        json_object_set_new(json_array_get(tasks, t), "message", json_string("(hidden)"));
  }
  bool use = gp__srv_job_may_read_use(j, user, role);
  timeline_for_others(o, use);
  if (!use) {
    if (json_object_get(o, "usage")) json_object_set_new(o, "usage", json_null());
    if (json_object_get(o, "idle")) json_object_set_new(o, "idle", json_null());
  }
  return o;
}
