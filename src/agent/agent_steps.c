/* SPDX-License-Identifier: Apache-2.0 */
/* Job steps on this node (srun, docs/slurm.md): a step order runs one step task inside a
 * task of the job that runs here, as the job's user, in that task's cgroup, with that
 * task's environment (kept at its start) plus srun's caller environment and the step's own
 * layout (ranks, SLURM_STEP_*, MASTER_ADDR/PORT, through rendezvous.c and slurm_env.c like
 * a job task's). Its output lands in <data>/steps/<job>.<step>.<task>/, which /logs serves
 * with ?step=; its end goes to the server as a step_exited event. A step task never
 * outlives its job task; an agent restarted kills the step tasks of its past life (it does
 * not adopt them) and the server ends them as lost. */
#include "agent/agent_int.h"
#include "agent/envv.h"

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
#include "agent/rendezvous.h"
#include "agent/slurm_env.h"
#include "util/mem.h"
#include "util/signals.h"

_Static_assert(sizeof(((gp__agent_creds *)0)->groups) == sizeof(((gp_launch_spec *)0)->groups),
               "the job's groups fit the launcher's");

/* ---- the job task's environment ---- */

void gp__agent_steps_save_env(const gp__agent_job *j, char *const *items, size_t n) {
  char path[800], tmp[810];
  gp__agent_job_path(j, "env", path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) ok = write(fd, items[i], strlen(items[i]) + 1) == (ssize_t)(strlen(items[i]) + 1);
  close(fd);
  if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

static int env_load(const gp__agent_job *j, gp__agent_envv *e) {
  char path[800];
  gp__agent_job_path(j, "env", path, sizeof path);
  return gp__agent_env_load_file(path, e);
}

typedef struct env_cb {
  gp__agent_envv *e;
  const char *const *only; /* NULL-ended names to take, NULL: all */
} env_cb;

static void take_var(void *ctx, const char *key, const char *value) {
  env_cb *c = ctx;
  for (int i = 0; c->only && c->only[i]; i++)
    if (strcmp(c->only[i], key) == 0) {
      gp__agent_env_set(c->e, key, value);
      return;
    }
}

/* SLURM_JOB_GPUS in a step: every whole GPU of the job on this node, from its tasks here
 * (all run while a step does); unset when one of them holds a share or a MIG instance. */
static void job_gpus_here(const gp_agent *a, const char *job, gp__agent_envv *e) {
  bool held[GP_GPU_MAX_DEVICES] = {0};
  int list[GP_GPU_MAX_DEVICES], n = 0;
  for (size_t i = 0; i < a->n_jobs; i++) {
    const gp__agent_job *j = a->jobs[i];
    if (strcmp(j->id, job) != 0 || j->ended) continue;
    if (strcmp(j->enforcement, "exclusive") != 0) return;
    for (int g = 0; g < j->n_gpus; g++)
      if (j->gpus[g] >= 0 && j->gpus[g] < GP_GPU_MAX_DEVICES) held[j->gpus[g]] = true;
  }
  for (int g = 0; g < GP_GPU_MAX_DEVICES; g++)
    if (held[g]) list[n++] = g;
  char buf[GP_GPU_MAX_DEVICES * 12 + 1];
  gp__agent_slurm_gpu_list(list, n, buf, sizeof buf);
  if (buf[0]) gp__agent_env_set(e, "SLURM_JOB_GPUS", buf);
}

/* The step's environment: the job task's, its rendezvous names for the step's layout, srun's
 * caller environment (a MASTER_PORT the script chose wins, as on Slurm, which sets none),
 * then the step's SLURM_* and GPOOL_* (not to be overridden), and the GPUs it sees. */
static void step_env(gp_agent *a, const gp_proto_step *o, const gp__agent_job *jt, gp__agent_envv *e) {
  gp_proto_start st = {0}; /* the step as a gang, for rendezvous.c and slurm_env.c */
  snprintf(st.id, sizeof st.id, "%s", o->job);
  st.tasks = o->tasks;
  st.task_index = o->task;
  st.n_hosts = o->n_hosts;
  st.hosts = o->hosts;
  st.n_addrs = o->n_addrs;
  st.addrs = o->addrs;
  st.master_port = o->master_port;
  char self[GP_PROTO_NODE_MAX];
  gp__agent_url_host(a->url, a->cfg.name, self, sizeof self);
  gp__agent_layout l;
  gp__agent_layout_of(&st, self, &l);
  for (int pass = 0; pass < 2; pass++) {
    const char *p = pass ? "GPOOL_" : "";
    char key[64];
#define RV(name, v) (snprintf(key, sizeof key, "%s%s", p, name), gp__agent_env_int(e, key, v))
    snprintf(key, sizeof key, "%sMASTER_ADDR", p);
    gp__agent_env_set(e, key, l.master);
    RV("MASTER_PORT", o->master_port);
    RV("WORLD_SIZE", l.tasks);
    RV("RANK", l.rank);
    RV("LOCAL_RANK", l.local_rank);
    RV("LOCAL_WORLD_SIZE", l.local_size);
    RV("NODE_RANK", l.node_rank);
#undef RV
    if (pass == 0)
      for (int i = 0; i < o->n_env; i++) {
        const char *k = o->env_keys[i];
        /* gpool's own and the GPUs and CPUs are this node's and this task's, never the
         * caller's (srun runs on the batch node; its job task here has this node's). */
        if (strncmp(k, "GPOOL_", 6) == 0 || strcmp(k, "CUDA_VISIBLE_DEVICES") == 0 ||
            strcmp(k, "NVIDIA_VISIBLE_DEVICES") == 0 || strcmp(k, "SLURM_JOB_GPUS") == 0 ||
            strcmp(k, "SLURM_CPUS_ON_NODE") == 0)
          continue;
        gp__agent_env_set(e, k, o->env_values[i]);
      }
  }
  /* Slurm's per-step names, from the same code as a job task's, then their STEP_ twins. */
  static const char *const step_names[] = {"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_PROCID", "SLURM_NNODES",
                                           "SLURM_NODEID", "SLURM_LOCALID", "SLURM_NODELIST",
                                           "SLURM_TASKS_PER_NODE", NULL};
  gp__agent_envv sv = {0};
  env_cb cb = {&sv, step_names};
  gp__agent_slurm_task t = {.node = a->cfg.name, .user = jt->user};
  gp__agent_slurm_vars(&st, &t, take_var, &cb);
  for (size_t i = 0; i < sv.n; i++) {
    char *eq = strchr(sv.items[i], '=');
    *eq = '\0';
    gp__agent_env_set(e, sv.items[i], eq + 1);
    *eq = '=';
  }
  gp__agent_env_set(e, "SLURMD_NODENAME", a->cfg.name); /* OpenMPI's orted reads its node's name here */
  gp__agent_env_int(e, "SLURM_STEP_ID", o->step);
  gp__agent_env_int(e, "SLURM_STEPID", o->step);
  gp__agent_env_int(e, "SLURM_STEP_NUM_TASKS", o->tasks);
  const char *v = gp__agent_env_get(&sv, "SLURM_NNODES");
  if (v) gp__agent_env_set(e, "SLURM_STEP_NUM_NODES", v);
  if ((v = gp__agent_env_get(&sv, "SLURM_NODELIST"))) gp__agent_env_set(e, "SLURM_STEP_NODELIST", v);
  if ((v = gp__agent_env_get(&sv, "SLURM_TASKS_PER_NODE"))) gp__agent_env_set(e, "SLURM_STEP_TASKS_PER_NODE", v);
  gp__agent_env_free(&sv);
  /* The caller's PATH names its own node's shims: this node's come first. */
  if (a->sim_bin[0]) gp__agent_env_path_prepend(e, a->sim_bin);
  if (a->slurm_bin[0]) gp__agent_env_path_prepend(e, a->slurm_bin);
  job_gpus_here(a, o->job, e);
  gp__agent_env_int(e, "GPOOL_STEP_ID", o->step);
  gp__agent_env_int(e, "GPOOL_NNODES", l.nodes);
  /* The GPUs the order names: its job task's own, or all of the job's on the node (a MIG
   * instance is its task's, as the task's environment names it). */
  if (!(o->own_gpus && jt->mig_uuid[0])) {
    char buf[4096], idx[256];
    size_t len = 0, il = 0;
    buf[0] = idx[0] = '\0';
    for (int i = 0; i < o->n_gpus && o->gpus[i] < a->n_gpus && len < sizeof buf - 200; i++) {
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? "," : "", a->gpus[o->gpus[i]].uuid);
      il += (size_t)snprintf(idx + il, sizeof idx - il, "%s%d", i ? "," : "", o->gpus[i]);
    }
    gp__agent_env_set(e, "CUDA_VISIBLE_DEVICES", buf);
    gp__agent_env_set(e, "NVIDIA_VISIBLE_DEVICES", buf[0] ? buf : "none");
    gp__agent_env_set(e, "GPOOL_GPUS", idx);
    if (o->n_gpus > 0) gp__agent_env_set(e, "SLURM_STEP_GPUS", idx); /* Slurm's: the GPU indexes */
    if (o->n_gpus > 0) gp__agent_env_int(e, "SLURM_GPUS_ON_NODE", o->n_gpus);
    if (o->n_gpus == 0) gp__agent_env_unset(e, "SLURM_GPUS_ON_NODE");
  }
}

/* ---- run ---- */

static void report(gp_agent *a, const gp__agent_step_task *s, bool known, int code, int sig,
                   const char *reason, const char *message) {
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev);
  ev->kind = GP_PROTO_EV_STEP_EXITED;
  snprintf(ev->job, sizeof ev->job, "%s", s->job);
  ev->step = s->step;
  ev->task = s->task;
  ev->at = gp__agent_now_ms() / 1000;
  ev->has_exit_code = known && !sig;
  ev->exit_code = code;
  ev->signal = sig;
  snprintf(ev->reason, sizeof ev->reason, "%s", reason);
  snprintf(ev->message, sizeof ev->message, "%s", message);
  char path[800];
  struct stat st;
  snprintf(path, sizeof path, "%s/stdout", s->dir);
  if (stat(path, &st) == 0) ev->out_bytes = st.st_size;
  snprintf(path, sizeof path, "%s/stderr", s->dir);
  if (stat(path, &st) == 0) ev->err_bytes = st.st_size;
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
}

static gp__agent_step_task *find(gp_agent *a, const char *job, int step, int task) {
  for (size_t i = 0; i < a->n_steps; i++) {
    gp__agent_step_task *s = a->steps[i];
    if (strcmp(s->job, job) == 0 && s->step == step && s->task == task) return s;
  }
  return NULL;
}

static void add(gp_agent *a, gp__agent_step_task *s) {
  gp_xgrow((void **)&a->steps, &a->cap_steps, a->n_steps + 1, sizeof *a->steps);
  a->steps[a->n_steps++] = s;
}

/* A step task that cannot start: reported at once, kept (ended) so a re-sent order is
 * not run twice. */
static void fail(gp_agent *a, gp__agent_step_task *s, const char *why) {
  s->ended = true;
  report(a, s, false, 0, 0, "start_failed", why);
  gp__agent_log("job %s step %d task %d: cannot start: %s", s->job, s->step, s->task, why);
}

/* The pid and start times of a step task, so a restarted agent can kill it. */
static void write_record(const gp__agent_step_task *s) {
  char path[800];
  snprintf(path, sizeof path, "%s/task", s->dir);
  FILE *f = fopen(path, "we");
  if (!f) return;
  fprintf(f, "%d %llu\n", (int)s->pid, (unsigned long long)s->start_ticks);
  fclose(f);
}

void gp__agent_step_run(gp_agent *a, const char *order_id, const gp_proto_step *o) {
  if (find(a, o->job, o->step, o->task)) return;
  gp__agent_step_task *s = gp_xcalloc(1, sizeof *s);
  snprintf(s->job, sizeof s->job, "%s", o->job);
  s->step = o->step;
  s->task = o->task;
  s->alloc_task = o->alloc_task;
  snprintf(s->dir, sizeof s->dir, "%s/%s.%d.%d", a->steps_dir, o->job, o->step, o->task);
  add(a, s);
  gp__agent_job *jt = gp__agent_job_find_task(a, o->job, o->alloc_task);
  char msg[600];
  if (!jt || jt->ended) {
    snprintf(msg, sizeof msg, "task %d of job %s does not run on node %s", o->alloc_task, o->job, a->cfg.name);
    fail(a, s, msg);
    return;
  }
  if (jt->stopping) { /* a step started now would outlive the job's grace period */
    snprintf(msg, sizeof msg, "task %d of job %s is stopping (%s)", o->alloc_task, o->job, jt->stop_reason);
    fail(a, s, msg);
    return;
  }
  gp__agent_creds c;
  if (gp__agent_resolve_user(a, jt->user, &c, msg, sizeof msg) != 0) {
    fail(a, s, msg);
    return;
  }
  if (mkdir(s->dir, 0755) != 0 && errno != EEXIST) {
    snprintf(msg, sizeof msg, "cannot create %.300s: %s", s->dir, strerror(errno));
    fail(a, s, msg);
    return;
  }
  gp__agent_envv env = {0};
  if (env_load(jt, &env) != 0) {
    gp__agent_env_free(&env);
    fail(a, s, "the job task's environment was not kept (started by an older agent)");
    return;
  }
  step_env(a, o, jt, &env);
  const char *wd = gp__agent_env_get(&env, "PWD");
  char out_path[800], err_path[800], procs[800] = "";
  snprintf(out_path, sizeof out_path, "%s/stdout", s->dir);
  snprintf(err_path, sizeof err_path, "%s/stderr", s->dir);
  if (jt->cgroup) snprintf(procs, sizeof procs, "%s/job-%s/cgroup.procs", a->cgroup.root, jt->key);
  gp_launch_spec spec = {0};
  spec.dir = s->dir;
  spec.argv = o->argv;
  spec.envp = env.items;
  spec.workdir = wd && *wd ? wd : NULL;
  spec.stdout_path = out_path;
  spec.stderr_path = err_path;
  spec.switch_user = c.switch_user;
  spec.uid = c.uid;
  spec.gid = c.gid;
  spec.n_groups = c.n_groups;
  memcpy(spec.groups, c.groups, sizeof c.groups);
  spec.cgroup_procs = procs[0] ? procs : NULL;
  gp_launch_result res = {0};
  gp_err err = {0};
  int rc = gp_launch(&spec, &res, &err);
  gp__agent_env_free(&env);
  s->pid = res.pid;
  s->shim_pid = res.shim_pid;
  s->start_ticks = res.start_ticks;
  s->shim_ticks = res.shim_start_ticks;
  if (rc != 0) {
    if (res.shim_pid > 0) {
      int st;
      while (waitpid(res.shim_pid, &st, 0) < 0 && errno == EINTR) {}
    }
    fail(a, s, err.message);
    return;
  }
  write_record(s);
  gp__agent_log("order %s: job %s step %d task %d started in task %d (pid %d)", order_id, o->job, o->step,
                o->task, o->alloc_task, (int)s->pid);
}

void gp__agent_step_seen_again(gp_agent *a, const char *order_id, const gp_proto_step *o) {
  if (find(a, o->job, o->step, o->task)) return; /* a re-send while it runs */
  gp__agent_step_task *s = gp_xcalloc(1, sizeof *s);
  snprintf(s->job, sizeof s->job, "%s", o->job);
  s->step = o->step;
  s->task = o->task;
  s->alloc_task = o->alloc_task;
  snprintf(s->dir, sizeof s->dir, "%s/%s.%d.%d", a->steps_dir, o->job, o->step, o->task);
  add(a, s);
  s->ended = true;
  report(a, s, false, 0, 0, "lost", "the agent restarted while the step task ran (step tasks are not re-adopted)");
  gp__agent_log("order %s: job %s step %d task %d was lost with the agent's restart", order_id, o->job, o->step,
                o->task);
}

static void signal_task(gp__agent_step_task *s, int sig, const char *reason, int grace_s) {
  if (s->ended || s->pid <= 0) return;
  killpg(s->pid, sig);
  if (!s->stopping) {
    s->stopping = true;
    s->kill_at_ms = gp__agent_now_ms() + (int64_t)(grace_s > 0 ? grace_s : 1) * 1000;
    snprintf(s->stop_reason, sizeof s->stop_reason, "%s", reason);
  }
}

void gp__agent_step_stop(gp_agent *a, const gp_proto_step_stop *o) {
  int sig = o->signal[0] ? gp_signal_parse(o->signal) : SIGTERM;
  if (!sig) sig = SIGTERM;
  for (size_t i = 0; i < a->n_steps; i++) {
    gp__agent_step_task *s = a->steps[i];
    if (strcmp(s->job, o->job) != 0 || s->step != o->step) continue;
    gp__agent_job *jt = gp__agent_job_find_task(a, s->job, s->alloc_task);
    signal_task(s, sig, o->reason[0] ? o->reason : "cancelled", jt ? jt->grace_s : 10);
  }
}

static void finish(gp_agent *a, gp__agent_step_task *s, bool known, int code, int sig) {
  s->ended = true;
  char what[160];
  if (!known) snprintf(what, sizeof what, "the step task's process is gone and left no exit status");
  else if (sig) snprintf(what, sizeof what, "killed by SIG%s", gp_signal_name(sig));
  else snprintf(what, sizeof what, "exited with code %d", code);
  /* A task that exited 0 while being stopped had ended on its own. */
  const char *reason = !known                         ? "lost"
                       : s->stopping && (sig || code) ? s->stop_reason
                       : sig                          ? "killed"
                                                      : "exited";
  if (known) killpg(s->pid, SIGKILL); /* what it left behind goes with it */
  report(a, s, known, code, sig, reason, what);
}

void gp__agent_steps_tick(gp_agent *a) {
  int64_t now = gp__agent_now_ms();
  for (size_t i = 0; i < a->n_steps; i++) {
    gp__agent_step_task *s = a->steps[i];
    if (s->ended) continue;
    int st, code = 0, sig = 0;
    pid_t r = waitpid(s->shim_pid, &st, WNOHANG);
    if (r == s->shim_pid || (r < 0 && errno == ECHILD)) {
      bool known = gp_launch_read_exit(s->dir, &code, &sig) == 0;
      finish(a, s, known, code, sig);
      continue;
    }
    if (s->stopping && !s->killed_hard && now >= s->kill_at_ms) {
      killpg(s->pid, SIGKILL);
      s->killed_hard = true;
    }
  }
}

/* A job told to stop (cancel, time limit, requeue, preemption) stops its step tasks as it
 * stops its own: the job's signal now, SIGKILL at the job's deadline, so that a trainer's
 * SIGTERM handler in a step checkpoints, as Slurm's steps get SIGTERM then KillWait. */
static void job_stopping(gp_agent *a, const gp__agent_job *j) {
  for (size_t i = 0; i < a->n_steps; i++) {
    gp__agent_step_task *s = a->steps[i];
    if (s->ended || s->pid <= 0 || strcmp(s->job, j->id) != 0 || s->alloc_task != j->task) continue;
    if (s->stopping && s->kill_at_ms <= j->kill_at_ms) continue; /* an earlier stop is stricter */
    if (!s->stopping) {
      killpg(s->pid, j->killed_hard ? SIGKILL : j->stop_signal);
      s->stopping = true;
      snprintf(s->stop_reason, sizeof s->stop_reason, "%s", j->stop_reason);
    }
    s->kill_at_ms = j->kill_at_ms;
  }
}

/* A stopping job task ends after its step tasks: its GPUs and cgroup stay theirs until then. */
static bool steps_running(const gp_agent *a, const gp__agent_job *j) {
  for (size_t i = 0; i < a->n_steps; i++) {
    const gp__agent_step_task *s = a->steps[i];
    if (!s->ended && s->pid > 0 && s->alloc_task == j->task && strcmp(s->job, j->id) == 0) return true;
  }
  return false;
}

/* The job task ended: its step tasks are killed (their ends reported as job_ended). */
static void job_ended(gp_agent *a, const gp__agent_job *j) {
  for (size_t i = 0; i < a->n_steps; i++) {
    gp__agent_step_task *s = a->steps[i];
    if (s->ended || strcmp(s->job, j->id) != 0 || s->alloc_task != j->task) continue;
    signal_task(s, SIGKILL, "job_ended", 1);
  }
}

static void remove_dir(const char *dir) {
  static const char *const files[] = {"stdout", "stderr", "exit", "task", "exit.tmp"};
  char path[800];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
}

void gp__agent_step_acked(gp_agent *a, const json_t *event) {
  const char *job = json_string_value(json_object_get(event, "job"));
  json_int_t step = json_integer_value(json_object_get(event, "step"));
  json_int_t task = json_integer_value(json_object_get(event, "task"));
  for (size_t i = 0; job && i < a->n_steps; i++) {
    gp__agent_step_task *s = a->steps[i];
    if (s->ended && s->step == step && s->task == task && strcmp(s->job, job) == 0) {
      free(s);
      a->steps[i] = a->steps[--a->n_steps];
      return;
    }
  }
}

/* The server settled the job task's end: its step tasks' records and output go. */
static void job_removed(gp_agent *a, const gp__agent_job *j) {
  for (size_t i = 0; i < a->n_steps;) {
    gp__agent_step_task *s = a->steps[i];
    if (s->ended && strcmp(s->job, j->id) == 0 && s->alloc_task == j->task) {
      free(s);
      a->steps[i] = a->steps[--a->n_steps];
    } else {
      i++;
    }
  }
  /* The job's last task here: its steps' output goes (a step task still running in another
   * task of the job keeps it until then). */
  for (size_t i = 0; i < a->n_jobs; i++)
    if (a->jobs[i] != j && strcmp(a->jobs[i]->id, j->id) == 0) return;
  for (size_t i = 0; i < a->n_steps; i++)
    if (strcmp(a->steps[i]->job, j->id) == 0) return;
  char prefix[GP_AGENT_ID_MAX + 2];
  snprintf(prefix, sizeof prefix, "%s.", j->id);
  DIR *d = opendir(a->steps_dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (strncmp(de->d_name, prefix, strlen(prefix)) != 0) continue;
    char dir[900];
    snprintf(dir, sizeof dir, "%.620s/%.255s", a->steps_dir, de->d_name);
    remove_dir(dir);
  }
  if (d) closedir(d);
}

json_t *gp__agent_steps_report(const gp_agent *a) {
  json_t *list = json_array();
  for (size_t i = 0; i < a->n_steps; i++) {
    const gp__agent_step_task *s = a->steps[i];
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(s->job));
    json_object_set_new(o, "step", json_integer(s->step));
    json_object_set_new(o, "task", json_integer(s->task));
    json_array_append_new(list, o);
  }
  return list;
}

int gp__agent_steps_init(gp_agent *a, gp_err *err) {
  snprintf(a->steps_dir, sizeof a->steps_dir, "%s/steps", a->cfg.data_dir);
  if (mkdir(a->steps_dir, 0755) != 0 && errno != EEXIST)
    return gp_err_set(err, GP_EIO, a->steps_dir, 0, NULL, "cannot create it: %s", strerror(errno));
  /* Step tasks of a past life are not adopted: the server ends them as lost (register), so
   * they must not run on unseen. */
  DIR *d = opendir(a->steps_dir);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char dir[900], path[1000];
    snprintf(dir, sizeof dir, "%.620s/%.255s", a->steps_dir, de->d_name);
    snprintf(path, sizeof path, "%s/task", dir);
    FILE *f = fopen(path, "re");
    int pid = 0;
    unsigned long long ticks = 0;
    if (f && fscanf(f, "%d %llu", &pid, &ticks) == 2 && pid > 1 && gp_proc_alive(pid, ticks)) {
      gp__agent_log("killing step task %s of an earlier run of this agent (pid %d)", de->d_name, pid);
      killpg(pid, SIGKILL);
    }
    if (f) fclose(f);
    remove_dir(dir);
  }
  if (d) closedir(d);
  return 0;
}

void gp__agent_steps_free(gp_agent *a) {
  for (size_t i = 0; i < a->n_steps; i++) free(a->steps[i]);
  free(a->steps);
  a->steps = NULL;
  a->n_steps = 0;
}

/* What srun's steps keep per job task, on its life's events (agent_hooks.c). */
const gp__agent_job_hooks gp__agent_steps_hooks = {
    .name = "steps",
    .ended = job_ended,
    .stopping = job_stopping,
    .holds = steps_running,
    .removed = job_removed,
};
