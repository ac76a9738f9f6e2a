/* SPDX-License-Identifier: Apache-2.0 */
/* Start orders: validating the order, the job's user (and refusing root or unknown users),
 * a batch job's roles (task 0 runs the script, the others hold their share),
 * its environment (gpool's variables last, so a job cannot override them), the enforcement
 * of its GPU share (fail closed), its cgroup, the launch through the shim, and the
 * "started" event. A start that cannot be honoured ends as "exited" with reason
 * start_failed and a sentence saying why. */
#include "agent/agent_int.h"
#include "agent/envv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/launcher.h"
#include "agent/rendezvous.h"
#include "agent/slurm_env.h"
#include "protocol/container.h"
#include "protocol/outpath.h"
#include "util/mem.h"
#include "util/signals.h"

extern char **environ;

/* ---- the job's environment ---- */

static void env_set_cb(void *e, const char *key, const char *value) { gp__agent_env_set(e, key, value); }

void gp__agent_bash_env_init(gp_agent *a) {
  const char *path_dirs[2] = {a->sim_bin, a->slurm_bin}; /* as jobs' PATH has them */
  if ((a->sim_bin[0] || a->slurm_bin[0]) &&
      gp__agent_slurm_profile_write(a->cfg.data_dir, path_dirs, 2, a->bash_env, sizeof a->bash_env))
    gp__agent_log("cannot write %s/bash_env.sh (%s): login shells in jobs lose %s from PATH", a->cfg.data_dir,
                  strerror(errno), a->slurm_bin[0] ? a->slurm_bin : a->sim_bin);
}

/* ---- start ---- */

/* The start order (decoded and bounded by the protocol module) and what this node makes
 * of it: its checkpoint signal, grace period, GPUs and share. */
typedef struct start_req {
  const gp_proto_start *o;
  const char *id, *user, *queue, *name, *workdir;
  int64_t cpus, mem_mib, task_index, tasks;
  int signal, grace_s;
  int n_gpus;
  int gpus[GP_GPU_MAX_DEVICES];
  int64_t gpu_milli, gpu_mem_mib;
  const char *mig_uuid;
  /* A batch job (docs/slurm.md): task 0 is the batch step, which runs the script once and
   * sees every GPU the job holds on this node; every other task holds its share with a
   * process that runs nothing (hold_argv), for srun's steps. */
  bool batch_step, hold;
  int n_step_gpus;
  int step_gpus[GP_GPU_MAX_DEVICES];
} start_req;

/* A holder's process: it sleeps until it is stopped. By its full path where it has one
 * (a job's -e PATH=... must not break its holders). */
static char *hold_argv[] = {(char *)"sleep", (char *)"infinity", NULL};

static char *const *holder_argv(void) {
  static const char *const paths[] = {"/bin/sleep", "/usr/bin/sleep"};
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
    if (access(paths[i], X_OK) == 0) {
      hold_argv[0] = (char *)paths[i];
      break;
    }
  return hold_argv;
}

static int parse_start(gp_agent *a, const gp_proto_start *o, start_req *r, char *msg,
                       size_t size) {
  memset(r, 0, sizeof *r);
  r->o = o;
  r->id = o->id;
  r->user = o->user;
  r->queue = o->queue;
  r->name = o->name;
  r->workdir = o->workdir;
  r->cpus = (o->cpu_milli + 999) / 1000;
  r->mem_mib = o->mem_mib;
  r->task_index = o->task_index;
  r->tasks = o->tasks;
  r->signal = gp_signal_parse(o->signal[0] ? o->signal : a->cfg.signal);
  if (!r->signal) {
    snprintf(msg, size, "unknown checkpoint signal '%.32s'", o->signal[0] ? o->signal : a->cfg.signal);
    return -1;
  }
  r->grace_s = o->grace_s >= 0 ? o->grace_s : a->cfg.grace_s;
  /* This node's placement. */
  const gp_proto_placement *p = o->has_placement ? &o->placement : NULL;
  if (p && p->node[0] && strcmp(p->node, a->cfg.name) != 0) {
    snprintf(msg, size, "the job has no placement on node %s", a->cfg.name);
    return -1;
  }
  r->gpu_milli = o->gpu_milli > 0 && o->gpu_milli < 1000 ? o->gpu_milli : 1000;
  r->gpu_mem_mib = o->gpu_mem_mib;
  if (p) {
    if (p->n_gpus > a->n_gpus) {
      snprintf(msg, size, "the placement names more GPUs than node %s has", a->cfg.name);
      return -1;
    }
    for (int i = 0; i < p->n_gpus; i++) {
      int idx = p->gpu_ids[i];
      if (idx >= a->n_gpus) {
        snprintf(msg, size, "placement GPU %d does not exist on node %s", idx, a->cfg.name);
        return -1;
      }
      const char *uuid = p->gpu_uuids[i];
      if (*uuid && strcmp(uuid, a->gpus[idx].uuid) != 0) {
        snprintf(msg, size, "placement GPU %d has UUID %.96s here, not %.96s", idx,
                 a->gpus[idx].uuid, uuid);
        return -1;
      }
      r->gpus[r->n_gpus++] = idx;
    }
    if (p->gpu_milli > 0) r->gpu_milli = p->gpu_milli;
    if (p->gpu_mem_mib > 0) r->gpu_mem_mib = p->gpu_mem_mib;
    r->mig_uuid = p->mig_uuid[0] ? p->mig_uuid : NULL;
  }
  r->batch_step = o->batch && o->task_index == 0;
  r->hold = o->batch && o->task_index != 0;
  memcpy(r->step_gpus, r->gpus, sizeof r->gpus);
  r->n_step_gpus = r->n_gpus;
  if (r->batch_step && o->n_node_gpus > 0 && !r->mig_uuid) {
    r->n_step_gpus = 0;
    for (int i = 0; i < o->n_node_gpus; i++) {
      if (o->node_gpus[i] >= a->n_gpus) {
        snprintf(msg, size, "the batch step's GPU %d does not exist on node %s", o->node_gpus[i], a->cfg.name);
        return -1;
      }
      r->step_gpus[r->n_step_gpus++] = o->node_gpus[i];
    }
  }
  return 0;
}

/* How many of the job's tasks are on task 0's node (the batch step's cgroup holds theirs). */
static int tasks_on_first_node(const gp_proto_start *o) {
  int n = 0;
  for (int t = 0; t < o->n_hosts; t++) n += strcmp(o->hosts[t], o->hosts[0]) == 0;
  return n > 0 ? n : 1;
}

typedef gp__agent_creds creds;

/* 128 random bits as hex ("" when the kernel gives none: then no checkpoint URL). */
static void random_key(char *out, size_t size) {
  unsigned char raw[16];
  out[0] = '\0';
  if (size < 33 || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) return;
  for (size_t i = 0; i < sizeof raw; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

static bool is_dir(const char *p) {
  struct stat st;
  return p && *p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- rendezvous: where the job's tasks are, for torchrun, MPI and the like ---- */

/* torchrun's and most launchers' names, set before the job's own variables (a job may pick
 * its own port), and gpool's, set after them (a job cannot change what gpool tells it). */
static void rendezvous_env(const start_req *r, const gp__agent_layout *l, gp__agent_envv *e, bool gpool_names,
                           const gp__agent_job *j) {
  const char *p = gpool_names ? "GPOOL_" : "";
  char key[64];
#define RV_INT(name, v) (snprintf(key, sizeof key, "%s%s", p, name), gp__agent_env_int(e, key, v))
  snprintf(key, sizeof key, "%sMASTER_ADDR", p);
  gp__agent_env_set(e, key, l->master);
  if (r->o->master_port > 0) RV_INT("MASTER_PORT", r->o->master_port);
  /* A batch step is no rank: as in Slurm, srun's tasks get these, and a launcher in the
   * script (torchrun) sets its own, while a stray WORLD_SIZE would make a single process
   * wait for peers that never come. */
  if (r->batch_step && !gpool_names) return;
  RV_INT("WORLD_SIZE", l->tasks);
  RV_INT("RANK", l->rank);
  RV_INT("LOCAL_RANK", l->local_rank);
  RV_INT("LOCAL_WORLD_SIZE", l->local_size);
  RV_INT("NODE_RANK", l->node_rank);
#undef RV_INT
  if (!gpool_names) return;
  gp__agent_env_int(e, "GPOOL_NNODES", l->nodes);
  char path[800];
  gp__agent_job_path(j, "hostfile", path, sizeof path);
  gp__agent_env_set(e, "GPOOL_HOSTFILE", path);
  gp__agent_job_path(j, "hostfile.mpich", path, sizeof path);
  gp__agent_env_set(e, "GPOOL_HOSTFILE_MPICH", path);
}

static void build_env(gp_agent *a, const start_req *r, const creds *c, const gp__agent_share_plan *sp,
                      const char *workdir, const gp__agent_job *j, gp__agent_envv *e) {
  const char *ckpt_key = j->checkpoint_key;
  char self[GP_PROTO_NODE_MAX], ompi[800], mpich[800];
  gp__agent_url_host(a->url, a->cfg.name, self, sizeof self);
  gp__agent_layout l;
  gp__agent_layout_of(r->o, self, &l);
  gp__agent_job_path(j, "hostfile", ompi, sizeof ompi);
  gp__agent_job_path(j, "hostfile.mpich", mpich, sizeof mpich);
  if (gp__agent_hostfiles_write(r->o, self, ompi, mpich) != 0)
    gp__agent_log("job %s task %d: cannot write its host files in %s", j->id, j->task, j->dir);
  if (!c->switch_user) {
    for (char **p = environ; p && *p; p++) {
      if (strncmp(*p, "GPOOL_TOKEN=", 12) == 0 || strncmp(*p, "GPOOL_AGENT_TOKEN=", 18) == 0)
        continue; /* never hand the agent's or the admin's credentials to a job */
      const char *eq = strchr(*p, '=');
      if (!eq) continue;
      char name[512];
      snprintf(name, sizeof name, "%.*s", (int)(eq - *p), *p);
      gp__agent_env_set(e, name, eq + 1);
    }
  } else {
    gp__agent_env_set(e, "PATH", "/usr/local/bin:/usr/bin:/bin");
    const char *lang = getenv("LANG");
    if (lang) gp__agent_env_set(e, "LANG", lang);
  }
  if (c->home[0]) gp__agent_env_set(e, "HOME", c->home);
  if (c->name[0]) {
    gp__agent_env_set(e, "USER", c->name);
    gp__agent_env_set(e, "LOGNAME", c->name);
  }
  if (c->shell[0]) gp__agent_env_set(e, "SHELL", c->shell);
  rendezvous_env(r, &l, e, false, j);
  /* Slurm's names too, before the job's own -e values (which win, as for MASTER_PORT). */
  bool whole = !r->mig_uuid && r->gpu_milli == 1000 && r->gpu_mem_mib == 0; /* not a share or MIG */
  gp__agent_slurm_task st = {.node = a->cfg.name, .user = r->user ? r->user : c->name,
                             .n_gpus = r->n_step_gpus, .cpus = r->o->cpu_milli > 0 ? r->cpus : 0,
                             .node_cpus = a->cpus, .gpus_per_task = whole ? r->n_gpus : 0,
                             .mem_mib = r->mem_mib, .job_gpus = whole ? r->step_gpus : NULL,
                             .n_job_gpus = whole ? r->n_step_gpus : 0,
                             .job_gpus_all = r->batch_step && r->o->n_node_gpus > 0};
  gp__agent_slurm_vars(r->o, &st, env_set_cb, e);
  for (int i = 0; i < r->o->n_env; i++) gp__agent_env_set(e, r->o->env_keys[i], r->o->env_values[i]);
  gp__agent_env_set(e, "PWD", workdir);
  /* A simulated node: its nvidia-smi (sim_bin.c) comes first, ahead of any real one; and
   * gpool's scontrol (slurm_env.c) before a Slurm install's, which knows nothing of gpool. */
  if (a->sim_bin[0]) gp__agent_env_path_prepend(e, a->sim_bin);
  if (a->slurm_bin[0]) gp__agent_env_path_prepend(e, a->slurm_bin);
  if (a->bash_env[0]) { /* a login shell's /etc/profile sets PATH anew: this puts them back */
    const char *own = NULL;
    for (size_t i = 0; i < e->n && !own; i++)
      if (strncmp(e->items[i], "BASH_ENV=", 9) == 0) own = e->items[i] + 9;
    if (own && *own && strcmp(own, a->bash_env) != 0) gp__agent_env_set(e, "GPOOL_BASH_ENV", own);
    gp__agent_env_set(e, "BASH_ENV", a->bash_env);
  }
  /* gpool's own variables come last: the job cannot override what it was given. */
  if (j->port > 0) gp__agent_env_int(e, "PORT", j->port);
  char buf[4096];
  size_t len = 0;
  buf[0] = '\0';
  if (r->mig_uuid) {
    snprintf(buf, sizeof buf, "%s%s", strncmp(r->mig_uuid, "MIG-", 4) == 0 ? "" : "MIG-",
             r->mig_uuid);
  } else {
    for (int i = 0; i < r->n_step_gpus && len < sizeof buf - 100; i++)
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? "," : "",
                              a->gpus[r->step_gpus[i]].uuid);
  }
  gp__agent_env_set(e, "CUDA_VISIBLE_DEVICES", buf); /* "" for a CPU-only job: it sees no GPU */
  gp__agent_env_set(e, "NVIDIA_VISIBLE_DEVICES", buf[0] ? buf : "none");
  len = 0;
  buf[0] = '\0';
  for (int i = 0; i < r->n_step_gpus && len < sizeof buf - 16; i++)
    len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%d", i ? "," : "", r->step_gpus[i]);
  gp__agent_env_set(e, "GPOOL_GPUS", buf);
  gp__agent_env_set(e, "GPOOL_JOB_ID", r->id);
  gp__agent_env_set(e, "GPOOL_JOB_NAME", r->name ? r->name : "");
  gp__agent_env_set(e, "GPOOL_QUEUE", r->queue ? r->queue : "");
  gp__agent_env_set(e, "GPOOL_USER", r->user ? r->user : c->name);
  snprintf(buf, sizeof buf, "%lld", (long long)r->task_index);
  gp__agent_env_set(e, "GPOOL_TASK_INDEX", buf);
  snprintf(buf, sizeof buf, "%lld", (long long)r->tasks);
  gp__agent_env_set(e, "GPOOL_TASKS", buf);
  len = 0;
  buf[0] = '\0';
  for (int i = 0; i < r->o->n_hosts; i++) {
    const char *s = r->o->hosts[i];
    if (len + strlen(s) + 2 < sizeof buf)
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "", s);
  }
  gp__agent_env_set(e, "GPOOL_NODELIST", len ? buf : a->cfg.name);
  gp__agent_env_set(e, "GPOOL_NODE", a->cfg.name);
  rendezvous_env(r, &l, e, true, j);
  gp__agent_env_set(e, "GPOOL_CHECKPOINT_SIGNAL", gp_signal_name(r->signal));
  snprintf(buf, sizeof buf, "%d", r->o->restarts); /* requeues so far, as Slurm counts them */
  gp__agent_env_set(e, "GPOOL_RESTART_COUNT", buf);
  gp__agent_env_set(e, "SLURM_RESTART_COUNT", buf);
  /* With the server's agent_listen as --server, jobs' gpool commands need the API's. */
  gp__agent_env_set(e, "GPOOL_SERVER", a->cfg.job_server[0] ? a->cfg.job_server : a->cfg.server);
  /* srun's credential for this run's steps (steps: docs/slurm.md); never logged. */
  if (r->o->job_key[0]) gp__agent_env_set(e, "GPOOL_JOB_KEY", r->o->job_key);
  if (a->cfg.tls.peer_ca[0]) gp__agent_env_set(e, "GPOOL_CA", a->cfg.tls.peer_ca); /* gpool and curl in jobs */
  gp__agent_env_set(e, "GPOOL_ENFORCEMENT", sp->enforcement);
  if (ckpt_key && ckpt_key[0]) {
    /* The job reports a checkpoint with: curl -fsS -X POST "$GPOOL_CHECKPOINT_URL" */
    char url[512];
    snprintf(url, sizeof url, "%s/checkpoint/%s?task=%lld&key=%s", a->url, r->id,
             (long long)r->task_index, ckpt_key);
    gp__agent_env_set(e, "GPOOL_CHECKPOINT_URL", url);
  }
  if (sp->mps_mem_limit[0]) {
    gp__agent_env_set(e, "CUDA_MPS_PIPE_DIRECTORY", sp->mps_pipe_dir);
    gp__agent_env_set(e, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", sp->mps_mem_limit);
    snprintf(buf, sizeof buf, "%d", sp->mps_thread_pct);
    gp__agent_env_set(e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", buf);
  }
  if (sp->limit_mib > 0) {
    snprintf(buf, sizeof buf, "%lld", (long long)sp->limit_mib);
    gp__agent_env_set(e, "GPOOL_GPU_MEM_LIMIT_MIB", buf);
  }
}

/* ---- the phases of a start ---- */

/* The order names a valid job that does not already run here, on GPUs that are not drained.
 * *ret_old is an earlier, ended run of the job that this node still remembers (or NULL). */
static bool check_order(gp_agent *a, const char *order_id, const gp_proto_start *o,
                        start_req *r, gp__agent_job **ret_old) {
  char msg[512];
  if (parse_start(a, o, r, msg, sizeof msg) != 0) {
    gp__agent_job_start_failed(a, order_id, o->id, o->task_index, -1, msg);
    return false;
  }
  gp__agent_job *old = gp__agent_job_find_task(a, r->id, (int)r->task_index);
  if (old && !old->ended) {
    gp__agent_log("order %s: job %s task %lld already runs here (pid %d); not starting it twice",
                  order_id, r->id, (long long)r->task_index, (int)old->pid);
    return false;
  }
  for (int i = 0; i < r->n_gpus; i++)
    if (a->gpu_drained[r->gpus[i]]) {
      snprintf(msg, sizeof msg, "GPU %d is drained (%s)", r->gpus[i],
               a->gpu_drain_reason[r->gpus[i]]);
      gp__agent_job_start_failed(a, order_id, r->id, (int)r->task_index, -1, msg);
      return false;
    }
  *ret_old = old;
  return true;
}

/* How the job's share of its GPUs is enforced (fail closed: no way to enforce, no start). */
static bool decide_share(gp_agent *a, const char *order_id, const start_req *r,
                         gp__agent_share_plan *sp) {
  gp_err err = {0};
  if (gp__agent_share_decide(a, r->gpus, r->n_gpus, r->gpu_milli, r->gpu_mem_mib, r->mig_uuid, sp,
                       &err)) {
    gp__agent_job_start_failed(a, order_id, r->id, (int)r->task_index, -1, err.message);
    return false;
  }
  return true;
}

/* Whom the job runs as. */
static bool decide_user(gp_agent *a, const char *order_id, const start_req *r, creds *c) {
  char msg[512];
  if (gp__agent_resolve_user(a, r->user, c, msg, sizeof msg) != 0) {
    gp__agent_job_start_failed(a, order_id, r->id, (int)r->task_index, -1, msg);
    return false;
  }
  return true;
}

/* The job's record and its directory, cleared of an earlier run's end. NULL when the
 * directory cannot be made. */
static gp__agent_job *prepare_job_dir(gp_agent *a, const char *order_id, const start_req *r,
                                const creds *c, gp__agent_job *old) {
  gp__agent_job *j = gp_xcalloc(1, sizeof *j);
  snprintf(j->id, sizeof j->id, "%s", r->id);
  j->task = (int)r->task_index;
  j->tasks = (int)r->tasks;
  gp__agent_job_key(r->id, j->task, j->key, sizeof j->key);
  snprintf(j->order_id, sizeof j->order_id, "%s", order_id);
  snprintf(j->user, sizeof j->user, "%s", r->user ? r->user : c->name);
  snprintf(j->queue, sizeof j->queue, "%s", r->queue ? r->queue : "");
  snprintf(j->dir, sizeof j->dir, "%s/%s", a->jobs_dir, j->key);
  if (r->o->service) { /* a service replica: the port its server listens on ($PORT) */
    j->svc = true;
    j->service = *r->o->service;
    j->port = gp__agent_free_port();
  }
  if (mkdir(j->dir, 0755) != 0 && errno != EEXIST) {
    char msg[512];
    snprintf(msg, sizeof msg, "cannot create %.300s: %s", j->dir, strerror(errno));
    gp__agent_job_start_failed(a, order_id, r->id, (int)r->task_index, -1, msg);
    free(j);
    return NULL;
  }
  /* A requeued run of a job whose earlier end is settled here: forget that run first (this
   * marks its directory settled), then clear the markers for the new run. */
  if (old) gp__agent_job_remove(a, old);
  char path[800];
  const char *stale[] = {"end.json", "acked", "exit"};
  for (size_t k = 0; k < sizeof stale / sizeof stale[0]; k++) {
    gp__agent_job_path(j, stale[k], path, sizeof path);
    unlink(path);
  }
  return j;
}

/* The job's cgroup with its CPU and memory limits, where the node has cgroups; `procs` gets
 * the path of its cgroup.procs ("" without one). */
static bool prepare_cgroup(gp_agent *a, const char *order_id, const start_req *r, gp__agent_job *j,
                           char *procs, size_t size) {
  if (!a->cgroup.ok) return true;
  gp_err err = {0};
  int64_t cpu_milli = r->cpus > 0 ? r->cpus * 1000 : 0, mem_mib = r->mem_mib;
  if (r->batch_step) { /* the batch step may use what its node's tasks hold, as in Slurm */
    cpu_milli *= tasks_on_first_node(r->o);
    mem_mib *= tasks_on_first_node(r->o);
  }
  if (gp_cgroup_job_create(&a->cgroup, j->key, cpu_milli, mem_mib, procs, size, &err)) {
    gp__agent_job_start_failed(a, order_id, r->id, (int)r->task_index, -1, err.message);
    return false;
  }
  j->cgroup = true;
  return true;
}

/* The key the job's checkpoint reports carry, written before the job can run so its first
 * report already finds it. */
static void write_checkpoint_key(gp__agent_job *j) {
  random_key(j->checkpoint_key, sizeof j->checkpoint_key);
  char key_path[800];
  gp__agent_job_path(j, "checkpoint.key", key_path, sizeof key_path);
  int kfd = open(key_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (kfd < 0 || write(kfd, j->checkpoint_key, strlen(j->checkpoint_key)) < 0)
    j->checkpoint_key[0] = '\0'; /* no key on disk: no checkpoint URL either */
  if (kfd >= 0) close(kfd);
}

/* The job's working directory. The job directory stays root's (the shim writes the exit
 * file there as root: a user who owned it could plant links), so a user without a home
 * starts in /tmp, like Slurm. */
static const char *job_workdir(const start_req *r, const creds *c, const gp__agent_job *j) {
  if (r->workdir) return r->workdir;
  return is_dir(c->home) ? c->home : c->switch_user ? "/tmp" : j->dir;
}

/* Forks the shim that execs the job. On failure the job's cgroup is gone and the order
 * has failed. */
static bool launch(gp_agent *a, const char *order_id, const start_req *r, const creds *c,
                   const gp__agent_share_plan *sp, gp__agent_job *j, const char *procs,
                   gp_launch_result *res) {
  const char *workdir = job_workdir(r, c, j);
  gp__agent_envv env = {0};
  build_env(a, r, c, sp, workdir, j, &env);
  char out_path[800], err_path[800];
  gp__agent_job_path(j, "stdout", out_path, sizeof out_path);
  gp__agent_job_path(j, "stderr", err_path, sizeof err_path);
  gp_launch_spec spec = {0};
  spec.dir = j->dir;
  spec.argv = r->hold ? holder_argv() : r->o->argv;
  spec.envp = env.items;
  spec.workdir = workdir;
  spec.stdout_path = out_path;
  spec.stderr_path = err_path;
  spec.switch_user = c->switch_user;
  spec.uid = c->uid;
  spec.gid = c->gid;
  spec.n_groups = c->n_groups;
  memcpy(spec.groups, c->groups, sizeof c->groups);
  spec.cgroup_procs = procs[0] ? procs : NULL;
  char user_out[GP_OUTPATH_MAX + 1], user_err[GP_OUTPATH_MAX + 1];
  gp_err err = {0};
  int rc = gp__agent_output_names(a, r->o, c->name, user_out, user_err, sizeof user_out);
  if (rc) gp_err_set(&err, GP_EINVAL, NULL, 0, "output", "the output file name is too long once expanded");
  if (r->hold) user_out[0] = user_err[0] = '\0'; /* a holder prints nothing, and truncates no -o file */
  spec.user_stdout = user_out[0] ? user_out : NULL;
  spec.user_stderr = user_err[0] ? user_err : NULL;
  /* A requeued run adds to what the earlier runs wrote, as in Slurm. */
  spec.user_append = r->o->output_append || r->o->restarts > 0;
  char **ct_argv = NULL; /* a container task: the engine runs the command (agent_container.c) */
  if (!rc && r->o->container)
    rc = gp__agent_container_prepare(a, r->o, j, workdir, c->switch_user ? c->uid : geteuid(),
                                     c->switch_user ? c->gid : getegid(), c->n_groups, c->groups,
                                     c->home, r->gpus, r->n_gpus, env.items, &spec, &ct_argv, &err);
  if (!rc) gp__agent_steps_save_env(j, env.items, env.n); /* what srun's steps start from */
  if (!rc) rc = gp_launch(&spec, res, &err);
  gp_agent_container_argv_free(ct_argv);
  gp__agent_env_free(&env);
  if (rc == 0) return true;
  if (res->shim_pid > 0) {
    int st;
    while (waitpid(res->shim_pid, &st, 0) < 0 && errno == EINTR) {}
  }
  gp__agent_job_note(j, err.message);
  if (j->cgroup) gp_cgroup_job_remove(&a->cgroup, j->key);
  gp__agent_job_start_failed(a, order_id, r->id, (int)r->task_index, res->shim_pid > 0 ? 127 : -1, err.message);
  return false;
}

/* What the agent keeps about the running job. */
static void record_start(gp__agent_job *j, const start_req *r, const gp__agent_share_plan *sp,
                         const gp_launch_result *res) {
  j->pid = res->pid;
  j->shim_pid = res->shim_pid;
  j->start_ticks = res->start_ticks;
  j->shim_ticks = res->shim_start_ticks;
  j->is_child = true;
  j->started_at = gp__agent_now_ms() / 1000;
  j->n_gpus = r->n_gpus;
  memcpy(j->gpus, r->gpus, sizeof r->gpus);
  snprintf(j->mig_uuid, sizeof j->mig_uuid, "%s", r->mig_uuid ? r->mig_uuid : "");
  snprintf(j->enforcement, sizeof j->enforcement, "%s", sp->enforcement);
  j->limit_mib = strcmp(sp->enforcement, "watchdog") == 0 ? sp->limit_mib : 0;
  j->ckpt_signal = r->signal;
  j->grace_s = r->grace_s;
  if (!r->hold) gp__agent_warn_arm(j, r->o, gp__agent_now_ms()); /* a holder has no process to warn */
}

/* Tells the GPU backend where the job's process runs, with the load the job declares in
 * GPOOL_SIM_UTIL and GPOOL_SIM_MEM (a simulated backend models it; a driver needs neither). */
static void attach_gpus(gp_agent *a, gp__agent_job *j, const start_req *r) {
  j->sim_util = -1;
  j->sim_mem_mib = -1;
  if (r->n_gpus == 0 || r->hold) return; /* a holder runs nothing on its GPUs */
  gp_err err = {0};
  const char *u = gp_proto_start_env(r->o, "GPOOL_SIM_UTIL");
  const char *m = gp_proto_start_env(r->o, "GPOOL_SIM_MEM");
  if (a->gpu->ops->job_load(a->gpu, u, m, &j->sim_util, &j->sim_mem_mib, &err) != 0)
    gp__agent_log("job %s: %s (simulated load left at the default)", j->id, err.message);
  for (int i = 0; i < j->n_gpus; i++)
    if (a->gpu->ops->attach(a->gpu, j->gpus[i], j->pid, j->mig_uuid[0] ? j->mig_uuid : NULL,
                            j->sim_util, j->sim_mem_mib, &err) != 0)
      gp__agent_log("job %s: simulated GPU %d: %s", j->id, j->gpus[i], err.message);
}

/* The "started" event for the server, and the log line. */
static void announce_start(gp_agent *a, const char *order_id, const gp__agent_job *j, const start_req *r,
                           const creds *c) {
  gp_proto_event *ev = gp_xcalloc(1, sizeof *ev); /* large: a fault's job list */
  ev->kind = GP_PROTO_EV_STARTED;
  snprintf(ev->job, sizeof ev->job, "%s", j->id);
  ev->task = j->task;
  snprintf(ev->order, sizeof ev->order, "%s", j->order_id);
  ev->at = j->started_at;
  ev->pid = j->pid;
  snprintf(ev->enforcement, sizeof ev->enforcement, "%s", j->enforcement);
  ev->gpu_mem_limit_mib = j->limit_mib > 0 ? j->limit_mib : 0;
  gp__agent_event(a, gp_proto_event_encode(ev));
  free(ev);
  /* The epoch of the leader that ordered it: failover tests check from these lines that
   * no job ran twice at once. */
  gp__agent_log("order %s: job %s task %lld started%s (epoch %lld, pid %d, user %s, GPUs %d, enforcement %s)",
                order_id, j->id, (long long)r->task_index,
                r->batch_step ? " as the batch step" : r->hold ? " holding its share" : "",
                (long long)a->epoch, (int)j->pid, c->switch_user ? c->name : "(agent's own)", j->n_gpus,
                j->enforcement);
}

void gp__agent_job_start(gp_agent *a, const char *order_id, const gp_proto_start *o) {
  start_req r;
  gp__agent_job *old = NULL;
  gp__agent_share_plan sp;
  creds c;
  if (!check_order(a, order_id, o, &r, &old) || !decide_share(a, order_id, &r, &sp) ||
      !decide_user(a, order_id, &r, &c))
    return;
  gp__agent_job *j = prepare_job_dir(a, order_id, &r, &c, old);
  if (!j) return;
  char procs[800] = "";
  gp_launch_result res = {0};
  if (!prepare_cgroup(a, order_id, &r, j, procs, sizeof procs)) {
    free(j);
    return;
  }
  write_checkpoint_key(j);
  if (!launch(a, order_id, &r, &c, &sp, j, procs, &res)) {
    free(j);
    return;
  }
  record_start(j, &r, &sp, &res);
  j->container = o->container != NULL;
  if (o->container) j->image = gp_proto_image_hash(o->container->image);
  attach_gpus(a, j, &r);
  gp__agent_job_add(a, j);
  gp__agent_job_persist(j);
  gp__agent_hooks_started(a, j); /* the image store's LRU, ... (agent_hooks.c) */
  announce_start(a, order_id, j, &r, &c);
}
