/* SPDX-License-Identifier: Apache-2.0 */
/* The parts of a start that Slurm batch options bring (docs/user-guide.md, "Output files,
 * begin time, signals"): the names of the user's -o/--error files for this task, and the
 * signal sent a set time before the limit (--signal=[B:]SIG@T), armed at the start, kept in
 * the job's state.json across agent restarts and fired by the 50 ms loop. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent_int.h"
#include "protocol/outpath.h"
#include "util/signals.h"

int gp__agent_output_names(const gp_agent *a, const gp_proto_start *o, const char *user,
                           char *out, char *err, size_t size) {
  char idx[24];
  snprintf(idx, sizeof idx, "%d", o->task_index);
  /* An array element's master id and index, from the environment its start order carries
   * (gpool's names, else Slurm's); none: %A is the job id, %a Slurm's "no array" value. */
  const char *arr = gp_proto_start_env(o, "GPOOL_ARRAY_JOB_ID");
  const char *ai = gp_proto_start_env(o, "GPOOL_ARRAY_TASK_ID");
  if (!arr || !ai) {
    arr = gp_proto_start_env(o, "SLURM_ARRAY_JOB_ID");
    ai = gp_proto_start_env(o, "SLURM_ARRAY_TASK_ID");
  }
  gp_outpath_vars v = {.job_id = o->id, .name = o->name, .user = o->user ? o->user : user,
                       .node = a->cfg.name, .array_id = arr && ai ? arr : NULL,
                       .array_index = ai, .task = o->task_index};
  out[0] = err[0] = '\0';
  if (o->output && gp_outpath_expand(o->output, &v, out, size)) return -1;
  if (o->error && gp_outpath_expand(o->error, &v, err, size)) return -1;
  return 0;
}

void gp__agent_warn_arm(gp__agent_job *j, const gp_proto_start *o, int64_t now_ms) {
  j->warn_at_ms = 0;
  /* Only a signal a job may be sent (a hostile order cannot make it SIGKILL early). */
  int sig = gp_signal_job_name(o->warn_signal) ? gp_signal_parse(o->warn_signal) : 0;
  if (!sig || o->time_limit <= 0) return;
  int64_t lead = o->warn_before_s < o->time_limit ? o->warn_before_s : o->time_limit;
  j->warn_at_ms = now_ms + (o->time_limit - lead) * 1000;
  j->warn_signal = sig;
  j->warn_batch = o->warn_batch;
}

/* Each loop round while the task runs: the signal once its time comes. */
static void warn_tick(gp_agent *a, gp__agent_job *j, int64_t now_ms) {
  (void)a;
  if (!j->warn_at_ms || j->warned || j->stopping || now_ms < j->warn_at_ms) return;
  j->warned = true;
  /* B: the batch shell alone (the job's main process); else its whole process group. */
  int rc = j->warn_batch ? kill(j->pid, j->warn_signal) : killpg(j->pid, j->warn_signal);
  if (rc != 0 && errno != ESRCH)
    gp__agent_log("job %s: cannot send the signal before the time limit: %s", j->id, strerror(errno));
  else
    gp__agent_log("job %s: SIG%s sent to %s before its time limit", j->id,
                  gp_signal_name(j->warn_signal), j->warn_batch ? "its batch shell" : "its processes");
  gp__agent_job_persist(j);
}

/* The signal before the time limit, on the task's loop rounds (agent_hooks.c). */
const gp__agent_job_hooks gp__agent_batch_hooks = {.name = "batch", .tick = warn_tick};
