/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs on the node once started (agent_start.c starts them): stop orders (checkpoint signal,
 * grace, SIGKILL), noticing ends, and re-adoption after an agent restart. Each job's state
 * lives in <data>/jobs/<id>/: state.json (written at start and when a stop begins), exit (by
 * the shim), end.json (once the agent saw the end) and acked (once the server received the
 * end), so a restarted agent reports every job exactly as it is, and never starts one twice.
 * The features that keep something per task (steps, containers, sessions, batch's signal,
 * the monitor's usage) hear of its stop, end, removal and loop rounds through the hooks
 * (agent_hooks.c); the table's queries and records are agent_table.c's. This file names no
 * feature, and none calls back into it but to stop a task (agent_monitor.c, probe.c). */
#include "agent/agent_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/launcher.h"
#include "util/mem.h"
#include "util/signals.h"


void gp__agent_job_remove(gp_agent *a, gp__agent_job *j) {
  gp__agent_hooks_removed(a, j);
  char path[800];
  gp__agent_job_path(j, "acked", path, sizeof path);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  for (size_t i = 0; i < a->n_jobs; i++)
    if (a->jobs[i] == j) {
      a->jobs[i] = a->jobs[--a->n_jobs];
      break;
    }
  free(j);
}

void gp__agent_stats_update(gp_agent *a) {
  int running = 0;
  for (size_t i = 0; i < a->n_jobs; i++) running += !a->jobs[i]->ended;
  pthread_mutex_lock(&a->stats_lock);
  a->stats_running = running;
  a->stats_registered = a->registered;
  pthread_mutex_unlock(&a->stats_lock);
}

static void copy_json_str(json_t *o, const char *key, char *dst, size_t size) {
  const char *s = json_string_value(json_object_get(o, key));
  snprintf(dst, size, "%s", s ? s : "");
}

static bool job_load(gp__agent_job *j, const char *dir) {
  char path[800];
  snprintf(path, sizeof path, "%s/state.json", dir);
  json_error_t je;
  json_t *s = json_load_file(path, 0, &je);
  if (!json_is_object(s)) {
    json_decref(s);
    return false;
  }
  snprintf(j->dir, sizeof j->dir, "%s", dir);
  copy_json_str(s, "id", j->id, sizeof j->id);
  copy_json_str(s, "order", j->order_id, sizeof j->order_id);
  copy_json_str(s, "user", j->user, sizeof j->user);
  copy_json_str(s, "queue", j->queue, sizeof j->queue);
  copy_json_str(s, "mig_uuid", j->mig_uuid, sizeof j->mig_uuid);
  copy_json_str(s, "enforcement", j->enforcement, sizeof j->enforcement);
  copy_json_str(s, "stop_reason", j->stop_reason, sizeof j->stop_reason);
  copy_json_str(s, "message", j->message, sizeof j->message);
  copy_json_str(s, "fault_reason", j->fault_reason, sizeof j->fault_reason);
  gp_err serr = {0};
  const json_t *svc = json_object_get(s, "service");
  json_int_t port = json_integer_value(json_object_get(s, "port"));
  if (svc && gp_proto_service_decode(svc, "service", &j->service, &serr) == 0 && port > 0 && port <= 65535) {
    j->svc = true;
    j->port = (int)port;
  }
  /* A job directory from before tasks were named holds task 0. */
  json_int_t task = json_integer_value(json_object_get(s, "task"));
  j->task = task > 0 && task < GP_PROTO_MAX_TASKS ? (int)task : 0;
  json_int_t tasks = json_integer_value(json_object_get(s, "tasks"));
  j->tasks = tasks > j->task && tasks <= GP_PROTO_MAX_TASKS ? (int)tasks : j->task + 1;
  gp__agent_job_key(j->id, j->task, j->key, sizeof j->key);
  j->pid = (pid_t)json_integer_value(json_object_get(s, "pid"));
  j->shim_pid = (pid_t)json_integer_value(json_object_get(s, "shim_pid"));
  j->start_ticks = (uint64_t)json_integer_value(json_object_get(s, "start_ticks"));
  j->shim_ticks = (uint64_t)json_integer_value(json_object_get(s, "shim_ticks"));
  j->started_at = json_integer_value(json_object_get(s, "started_at"));
  j->limit_mib = json_integer_value(json_object_get(s, "limit_mib"));
  j->sim_util = (int)json_integer_value(json_object_get(s, "sim_util"));
  j->sim_mem_mib = json_integer_value(json_object_get(s, "sim_mem_mib"));
  j->ckpt_signal = (int)json_integer_value(json_object_get(s, "signal"));
  j->grace_s = (int)json_integer_value(json_object_get(s, "grace_s"));
  j->cgroup = json_is_true(json_object_get(s, "cgroup"));
  j->stopping = json_is_true(json_object_get(s, "stopping"));
  j->kill_at_ms = json_integer_value(json_object_get(s, "kill_at_ms"));
  j->stop_signal = (int)json_integer_value(json_object_get(s, "stop_signal"));
  j->limit_exceeded = json_is_true(json_object_get(s, "limit_exceeded"));
  j->warn_at_ms = json_integer_value(json_object_get(s, "warn_at_ms"));
  j->warn_signal = (int)json_integer_value(json_object_get(s, "warn_signal"));
  if (j->warn_signal < 1 || j->warn_signal >= NSIG) j->warn_at_ms = 0; /* a damaged file */
  j->warn_batch = json_is_true(json_object_get(s, "warn_batch"));
  j->warned = json_is_true(json_object_get(s, "warned"));
  json_t *gpus = json_object_get(s, "gpus");
  size_t i;
  json_t *g;
  json_array_foreach(gpus, i, g) {
    if (j->n_gpus < GP_GPU_MAX_DEVICES) j->gpus[j->n_gpus++] = (int)json_integer_value(g);
  }
  json_decref(s);
  return gp__agent_job_id_valid(j->id) && j->pid > 0;
}

/* ---- events ---- */

/* The "exited" event; `order` (the run's start order) and `usage` (borrowed) may be NULL. */
static json_t *exited_event(const char *job, int task, int64_t at, bool exit_known, int code,
                            int sig, const char *reason, const char *message, const char *order,
                            json_t *usage) {
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
  ev->kind = GP_PROTO_EV_EXITED;
  snprintf(ev->job, sizeof ev->job, "%s", job);
  ev->task = task >= 0 ? task : -1;
  ev->at = at;
  ev->has_exit_code = exit_known && code >= 0;
  ev->exit_code = code;
  ev->signal = exit_known ? sig : 0;
  ev->has_reason = ev->has_message = true;
  snprintf(ev->reason, sizeof ev->reason, "%s", reason);
  snprintf(ev->message, sizeof ev->message, "%s", message);
  snprintf(ev->order, sizeof ev->order, "%s", order ? order : "");
  ev->usage = usage;
  json_t *doc = gp_proto_event_encode(ev);
  free(ev);
  return doc;
}

json_t *gp__agent_exited_event(const char *job, int64_t at, bool exit_known, int code, int sig,
                               const char *reason, const char *message, const char *order) {
  return exited_event(job, -1, at, exit_known, code, sig, reason, message, order, NULL);
}

json_t *gp__agent_task_exited_event(const char *job, int task, int64_t at, bool exit_known,
                                    int code, int sig, const char *reason, const char *message,
                                    const char *order) {
  return exited_event(job, task, at, exit_known, code, sig, reason, message, order, NULL);
}

void gp__agent_job_start_failed(gp_agent *a, const char *order_id, const char *job_id, int task,
                          int exit_code, const char *message) {
  gp__agent_log("order %s: job %s task %d not started: %s", order_id, job_id, task, message);
  gp__agent_event(a, gp__agent_task_exited_event(job_id, task, gp__agent_now_ms() / 1000, exit_code >= 0,
                                                 exit_code, 0, "start_failed", message, order_id));
}

/* ---- stop ---- */

/* One task of the job stops. */
static void task_stop(gp_agent *a, const char *order_id, const gp_proto_stop *o, gp__agent_job *j) {
  if (j->ended) return; /* its end is already on its way */
  int sig = o->signal[0] ? gp_signal_parse(o->signal) : j->ckpt_signal;
  if (!sig) sig = SIGTERM;
  int grace = o->grace_s >= 0 ? o->grace_s : j->grace_s;
  const char *reason = o->reason[0] ? o->reason : NULL;
  int64_t deadline = gp__agent_now_ms() + (int64_t)grace * 1000;
  if (j->stopping && deadline >= j->kill_at_ms) return; /* an earlier stop is stricter */
  if (!j->stopping) {
    j->stop_signal = sig;
    snprintf(j->stop_reason, sizeof j->stop_reason, "%s", reason ? reason : "stopped");
    if (killpg(j->pid, grace == 0 ? SIGKILL : sig) != 0 && errno != ESRCH)
      gp__agent_log("job %s: cannot signal its process group: %s", j->id, strerror(errno));
    if (grace == 0) j->killed_hard = true;
  }
  j->stopping = true;
  j->kill_at_ms = deadline;
  gp__agent_hooks_stopping(a, j);
  gp__agent_job_persist(j);
  gp__agent_log("order %s: job %s task %d: sent SIG%s (%s), SIGKILL in %d s if still running",
                order_id, j->id, j->task, gp_signal_name(j->stop_signal), j->stop_reason, grace);
}

/* A stop order is for the job: every task of it on this node stops. */
void gp__agent_job_stop(gp_agent *a, const char *order_id, const gp_proto_stop *o) {
  const char *id = o->job;
  bool found = false;
  for (size_t i = 0; i < a->n_jobs; i++)
    if (strcmp(a->jobs[i]->id, id) == 0) {
      found = true;
      task_stop(a, order_id, o, a->jobs[i]);
    }
  if (!found) {
    gp__agent_log("order %s: stop for job %s, which does not run here", order_id, id);
    /* The answer names the stop order: the server reads it as a report on the run that
     * order stopped, not on a later run of the job (a requeued job's run whose task ended
     * by itself before this stop came is followed at once by a new run here). */
    gp__agent_event(a, gp__agent_exited_event(id, gp__agent_now_ms() / 1000, false, 0, 0, "lost",
                                              "the job does not run on this node", order_id));
  }
}

void gp__agent_job_stop_local(gp_agent *a, gp__agent_job *j, int grace_s, const char *reason,
                        const char *message) {
  if (j->ended || j->stopping) return;
  snprintf(j->fault_reason, sizeof j->fault_reason, "%s", reason);
  snprintf(j->message, sizeof j->message, "%s", message);
  snprintf(j->stop_reason, sizeof j->stop_reason, "%s", reason);
  j->stop_signal = j->ckpt_signal ? j->ckpt_signal : SIGTERM;
  j->stopping = true;
  j->kill_at_ms = gp__agent_now_ms() + (int64_t)grace_s * 1000;
  if (killpg(j->pid, grace_s == 0 ? SIGKILL : j->stop_signal) != 0 && errno != ESRCH)
    gp__agent_log("job %s: cannot signal its process group: %s", j->id, strerror(errno));
  if (grace_s == 0) j->killed_hard = true;
  gp__agent_hooks_stopping(a, j);
  gp__agent_job_persist(j);
  gp__agent_job_note(j, message);
  gp__agent_log("job %s: stopping (%s): %s", j->id, reason, message);
}

/* ---- ends ---- */

static void job_finish(gp_agent *a, gp__agent_job *j, bool exit_known, int code, int sig,
                       bool while_away) {
  gp__agent_hooks_exit_status(a, j, &exit_known, &code, &sig); /* a `gpool run` task's own code */
  j->ended = true;
  j->exit_known = exit_known;
  j->exit_code = code;
  j->signal = sig;
  j->ended_at = gp__agent_now_ms() / 1000;
  gp__agent_hooks_ending(a, j); /* a container's pull: its events, its failure as the reason */
  bool oom = j->cgroup && gp_cgroup_job_oom_killed(&a->cgroup, j->key);
  const char *reason = j->limit_exceeded ? "limit_exceeded"
                       : j->fault_reason[0] ? j->fault_reason
                       : !exit_known     ? "lost"
                       : j->stopping     ? "killed"
                       : oom             ? "oom"
                                         : "exited";
  snprintf(j->reason, sizeof j->reason, "%s", reason);
  char what[160];
  if (!exit_known) snprintf(what, sizeof what, "the job's process is gone and left no exit status");
  else if (sig) snprintf(what, sizeof what, "killed by SIG%s", gp_signal_name(sig));
  else snprintf(what, sizeof what, "exited with code %d", code);
  char msg[800];
  if (j->limit_exceeded || j->fault_reason[0])
    snprintf(msg, sizeof msg, "%s (%s)", j->message, what);
  else if (j->stopping)
    snprintf(msg, sizeof msg, "%s after SIG%s (%s)%s", what, gp_signal_name(j->stop_signal),
             j->stop_reason, j->killed_hard ? " and SIGKILL at the end of the grace period" : "");
  else if (oom) snprintf(msg, sizeof msg, "%s: out of memory (cgroup memory.max)", what);
  else snprintf(msg, sizeof msg, "%s", what);
  snprintf(j->message, sizeof j->message, "%.480s%s", msg,
           while_away ? " (while the agent was away)" : "");
  /* Leftover processes of the job's group go with their leader, and its steps' tasks. */
  if (exit_known) killpg(j->pid, SIGKILL);
  gp__agent_hooks_ended(a, j);
  a->gpu->ops->detach(a->gpu, j->pid);
  if (j->cgroup) gp_cgroup_job_remove(&a->cgroup, j->key);
  json_t *end = gp__agent_job_report(j);
  char path[800];
  gp__agent_job_path(j, "end.json", path, sizeof path);
  gp__agent_write_json(path, end);
  json_decref(end);
  /* `order`: which run of the job ended. */
  json_t *usage = gp__agent_hooks_usage(a, j);
  gp__agent_event(a, exited_event(j->id, j->task, j->ended_at, exit_known, code, sig, j->reason,
                                  j->message, j->order_id, usage));
  json_decref(usage);
  gp__agent_log("job %s task %d ended: %s: %s", j->id, j->task, j->reason, j->message);
}

/* Looks at one running job; returns true when it ended (and was finished). */
static bool job_check(gp_agent *a, gp__agent_job *j, bool adopting) {
  int code = 0, sig = 0;
  /* A stopping job ends after its step tasks (they have its grace period to checkpoint; the
   * steps' tick kills them at its deadline): its GPUs and cgroup stay theirs until then. */
  if (j->stopping && gp__agent_hooks_holds(a, j)) return false;
  if (j->is_child) {
    int st;
    pid_t r = waitpid(j->shim_pid, &st, WNOHANG);
    if (r == 0) return false;
    if (r < 0 && errno == ECHILD) {
      j->is_child = false; /* someone else reaped it: fall through to the file */
    } else {
      bool known = gp_launch_read_exit(j->dir, &code, &sig) == 0;
      job_finish(a, j, known, code, sig, adopting);
      return true;
    }
  }
  if (gp_launch_read_exit(j->dir, &code, &sig) == 0) {
    job_finish(a, j, true, code, sig, adopting);
    return true;
  }
  if (gp_proc_alive(j->pid, j->start_ticks)) return false;
  if (gp_proc_alive(j->shim_pid, j->shim_ticks)) return false; /* writing the exit file */
  /* Neither the job nor its shim: look once more next time (the file may just be landing). */
  if (!j->gone_once && !adopting) {
    j->gone_once = true;
    return false;
  }
  if (gp_launch_read_exit(j->dir, &code, &sig) == 0) job_finish(a, j, true, code, sig, adopting);
  else job_finish(a, j, false, 0, 0, adopting);
  return true;
}

void gp__agent_jobs_tick(gp_agent *a) {
  int64_t now = gp__agent_now_ms();
  for (size_t i = 0; i < a->n_jobs; i++) {
    gp__agent_job *j = a->jobs[i];
    if (j->ended) continue;
    if (job_check(a, j, false)) continue;
    gp__agent_hooks_tick(a, j, now); /* a container's pull events, batch's signal, ... */
    if (j->stopping && !j->killed_hard && now >= j->kill_at_ms) {
      gp__agent_log("job %s: still running at the end of its grace period: SIGKILL", j->id);
      killpg(j->pid, SIGKILL);
      j->killed_hard = true;
    }
  }
}

void gp__agent_jobs_adopt(gp_agent *a) {
  DIR *d = opendir(a->jobs_dir);
  if (!d) return;
  struct dirent *de;
  int adopted = 0, ended = 0;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue; /* task directories are checked by their state.json */
    char dir[700], path[800];
    snprintf(dir, sizeof dir, "%.600s/%.64s", a->jobs_dir, de->d_name);
    snprintf(path, sizeof path, "%s/acked", dir);
    if (access(path, F_OK) == 0) continue;
    gp__agent_job *j = gp_xcalloc(1, sizeof *j);
    if (!job_load(j, dir)) {
      free(j);
      continue;
    }
    snprintf(path, sizeof path, "%s/end.json", dir);
    json_error_t je;
    json_t *end = json_load_file(path, 0, &je);
    if (json_is_object(end)) {
      /* The agent saw this end but the server never acknowledged it. */
      j->ended = true;
      json_t *c = json_object_get(end, "exit_code"), *s = json_object_get(end, "signal");
      j->exit_known = json_is_integer(c) || json_is_integer(s);
      j->exit_code = json_is_integer(c) ? (int)json_integer_value(c) : -1;
      j->signal = json_is_integer(s) ? (int)json_integer_value(s) : 0;
      copy_json_str(end, "reason", j->reason, sizeof j->reason);
      copy_json_str(end, "message", j->message, sizeof j->message);
      j->ended_at = json_integer_value(json_object_get(end, "at"));
      json_decref(end);
      gp__agent_job_add(a, j);
      ended++;
      continue;
    }
    json_decref(end);
    gp__agent_job_add(a, j);
    if (job_check(a, j, true)) {
      ended++;
      continue;
    }
    adopted++;
    gp_err err = {0};
    for (int i = 0; i < j->n_gpus; i++)
      a->gpu->ops->attach(a->gpu, j->gpus[i], j->pid, j->mig_uuid[0] ? j->mig_uuid : NULL,
                          j->sim_util, j->sim_mem_mib, &err);
    gp__agent_log("re-adopted job %s (pid %d, started %lld)", j->id, (int)j->pid,
            (long long)j->started_at);
  }
  closedir(d);
  if (adopted || ended)
    gp__agent_log("found %d running job(s) and %d that ended while the agent was away", adopted, ended);
  /* Events about these are carried by the register call's job list. */
  json_array_clear(a->events);
}
