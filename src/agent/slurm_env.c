/* SPDX-License-Identifier: Apache-2.0 */
/* The SLURM_* variables of a task (slurm_env.h), from its start order: the same host list
 * the rendezvous variables come from (rendezvous.c), so SLURM_NODEID is NODE_RANK and the
 * node list starts with task 0's node. A variable gpool cannot know (SLURM_SUBMIT_HOST, or
 * the node list of an order without hosts from an older server) is left unset rather than
 * guessed. The shim directory holds the Slurm commands the gpool binary answers (sbatch,
 * squeue, scancel, sinfo, sacct, scontrol, srun: cli/slurm.h): a command gpool cannot
 * answer truthfully (salloc) gets no stand-in. */
#include "agent/slurm_env.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/hostlist.h"
#include "util/mem.h"

typedef void (*set_fn)(void *ctx, const char *name, const char *value);

static void set_int(set_fn set, void *ctx, const char *name, long long v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", v);
  set(ctx, name, buf);
}

/* The job's nodes in the order of their first task, with each one's task count; this
 * task's node index and its index among the tasks there. */
typedef struct nodes {
  int n;
  const char **names;
  int *count;
  int mine, local;
} nodes;

static bool nodes_of(const gp_proto_start *o, const char *self, nodes *ns) {
  memset(ns, 0, sizeof *ns);
  bool listed = o->n_hosts == o->tasks && o->task_index < o->n_hosts;
  if (!listed && o->tasks != 1) return false; /* an older server: where the others run is unknown */
  int n = listed ? o->n_hosts : 1;
  ns->names = gp_xcalloc((size_t)n, sizeof *ns->names);
  ns->count = gp_xcalloc((size_t)n, sizeof *ns->count);
  for (int t = 0; t < n; t++) {
    const char *h = listed ? o->hosts[t] : self;
    int k = 0;
    while (k < ns->n && strcmp(ns->names[k], h) != 0) k++;
    if (k == ns->n) ns->names[ns->n++] = h;
    if (t == o->task_index) {
      ns->mine = k;
      ns->local = ns->count[k];
    }
    ns->count[k]++;
  }
  return true;
}

static void nodes_free(nodes *ns) {
  free(ns->names);
  free(ns->count);
}

/* Slurm's SLURM_TASKS_PER_NODE: "2(x3),1" for counts 2, 2, 2, 1. */
static void tasks_per_node(const nodes *ns, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int k = 0; k < ns->n;) {
    int same = 1;
    while (k + same < ns->n && ns->count[k + same] == ns->count[k]) same++;
    int w = same > 1 ? snprintf(buf + len, size - len, "%s%d(x%d)", len ? "," : "", ns->count[k], same)
                     : snprintf(buf + len, size - len, "%s%d", len ? "," : "", ns->count[k]);
    if (w < 0 || (size_t)w >= size - len) {
      buf[0] = '\0'; /* cannot happen with the buffer below; never a truncated value */
      return;
    }
    len += (size_t)w;
    k += same;
  }
}

void gp__agent_slurm_gpu_list(const int *gpus, int n, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    int w = snprintf(buf + len, size - len, "%s%d", i ? "," : "", gpus[i]);
    if (w < 0 || (size_t)w >= size - len) {
      buf[0] = '\0'; /* never a truncated list */
      return;
    }
    len += (size_t)w;
  }
}

/* What the job holds on this node, as Slurm names it: CPUs, GPUs and memory. Per node
 * means the job's tasks here (`here`); a per-node request is only named when every node
 * holds as many tasks (`uniform`), as Slurm's --gpus-per-node and --mem are. */
static void resource_vars(const gp__agent_slurm_task *t, int here, bool uniform, set_fn set, void *ctx) {
  if (t->cpus > 0) set_int(set, ctx, "SLURM_CPUS_ON_NODE", t->cpus * here);
  else if (t->node_cpus > 0) set_int(set, ctx, "SLURM_CPUS_ON_NODE", t->node_cpus); /* no limit: all */
  if (t->gpus_per_task > 0) {
    set_int(set, ctx, "SLURM_GPUS_PER_TASK", t->gpus_per_task);
    if (uniform) set_int(set, ctx, "SLURM_GPUS_PER_NODE", (long long)t->gpus_per_task * here);
  }
  if (t->mem_mib > 0 && uniform) set_int(set, ctx, "SLURM_MEM_PER_NODE", t->mem_mib * here);
  if (t->n_job_gpus > 0 && (t->job_gpus_all || here == 1)) {
    char buf[GP_PROTO_MAX_GPUS * 12 + 1];
    gp__agent_slurm_gpu_list(t->job_gpus, t->n_job_gpus, buf, sizeof buf);
    if (buf[0]) set(ctx, "SLURM_JOB_GPUS", buf);
  }
}

void gp__agent_slurm_vars(const gp_proto_start *o, const gp__agent_slurm_task *t, set_fn set,
                          void *ctx) {
  set(ctx, "SLURM_CLUSTER_NAME", "gpool");
  set(ctx, "SLURM_JOB_ID", o->id);
  set(ctx, "SLURM_JOBID", o->id);
  if (o->name && *o->name) set(ctx, "SLURM_JOB_NAME", o->name);
  if (t->user && *t->user) set(ctx, "SLURM_JOB_USER", t->user);
  if (o->queue && *o->queue) set(ctx, "SLURM_JOB_PARTITION", o->queue);
  if (o->workdir && *o->workdir) set(ctx, "SLURM_SUBMIT_DIR", o->workdir);
  set_int(set, ctx, "SLURM_NTASKS", o->tasks);
  set_int(set, ctx, "SLURM_NPROCS", o->tasks);
  set_int(set, ctx, "SLURM_PROCID", o->task_index);
  if (t->cpus > 0) set_int(set, ctx, "SLURM_CPUS_PER_TASK", t->cpus);
  if (t->n_gpus > 0) set_int(set, ctx, "SLURM_GPUS_ON_NODE", t->n_gpus);
  /* The node's name as the node list spells it: OpenMPI's orted takes it for its own name
   * (ess slurm refuses to start without it) and scripts print it. */
  if (t->node && *t->node) set(ctx, "SLURMD_NODENAME", t->node);
  nodes ns;
  if (!nodes_of(o, t->node, &ns)) return;
  set_int(set, ctx, "SLURM_JOB_NUM_NODES", ns.n);
  set_int(set, ctx, "SLURM_NNODES", ns.n);
  set_int(set, ctx, "SLURM_NODEID", ns.mine);
  set_int(set, ctx, "SLURM_LOCALID", ns.local);
  /* At most GP_PROTO_MAX_TASKS nodes of GP_PROTO_NODE_MAX bytes, and counts of 4 digits. */
  size_t size = (size_t)ns.n * (GP_PROTO_NODE_MAX + 16) + 1;
  char *buf = gp_xmalloc(size);
  if (gp_hostlist_compress(ns.names, (size_t)ns.n, buf, size) == 0) {
    set(ctx, "SLURM_JOB_NODELIST", buf);
    set(ctx, "SLURM_NODELIST", buf);
  } /* else a node name a hostlist cannot hold (',' or brackets): no list rather than a wrong one */
  tasks_per_node(&ns, buf, size);
  if (buf[0]) set(ctx, "SLURM_TASKS_PER_NODE", buf);
  bool uniform = true;
  for (int k = 1; k < ns.n; k++) uniform = uniform && ns.count[k] == ns.count[0];
  if (uniform) set_int(set, ctx, "SLURM_NTASKS_PER_NODE", ns.count[0]);
  resource_vars(t, ns.count[ns.mine], uniform, set, ctx);
  free(buf);
  nodes_free(&ns);
}

int gp__agent_slurm_bin_write(const char *data_dir, const char *exe, char *dir, size_t size) {
  /* The names src/cli/main.c answers to (GP_SLURM_SHIMS in cli/slurm.h). */
  static const char *const names[] = {"sbatch", "squeue", "scancel", "sinfo", "sacct", "scontrol", "srun"};
  dir[0] = '\0';
  if (!exe || !*exe) return -1;
  char d[1024], link[1100], tmp[1100];
  snprintf(d, sizeof d, "%s/bin", data_dir);
  if (strlen(d) >= size || (mkdir(d, 0755) != 0 && errno != EEXIST)) return -1;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(link, sizeof link, "%s/%s", d, names[i]);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", d, names[i]);
    /* A fresh link each start: the binary may have moved since the last one. */
    unlink(tmp);
    if (symlink(exe, tmp) != 0 || rename(tmp, link) != 0) {
      unlink(tmp);
      return -1;
    }
  }
  snprintf(dir, size, "%s", d);
  return 0;
}

/* A shell word for s: single-quoted, each ' written '\''. */
static void sh_quote(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputs("'\\''", f);
    else fputc(*s, f);
  }
  fputc('\'', f);
}

int gp__agent_slurm_profile_write(const char *data_dir, const char *const *dirs, int n, char *path,
                                  size_t size) {
  char p[1100], tmp[1110];
  path[0] = '\0';
  snprintf(p, sizeof p, "%s/bash_env.sh", data_dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", p);
  if (strlen(p) >= size) return -1;
  FILE *f = fopen(tmp, "we");
  if (!f) return -1;
  fputs("# Written by the gpool agent: a job's BASH_ENV. A login shell (#!/bin/bash -l) reads\n"
        "# /etc/profile, which may set PATH anew, then this: the job's commands stay found.\n",
        f);
  for (int i = 0; i < n; i++) {
    if (!dirs[i] || !dirs[i][0]) continue;
    fputs("case \":$PATH:\" in *:", f);
    sh_quote(f, dirs[i]);
    fputs(":*) ;; *) PATH=", f);
    sh_quote(f, dirs[i]);
    fputs("${PATH:+:$PATH}; export PATH ;; esac\n", f);
  }
  fputs("if [ -n \"${GPOOL_BASH_ENV:-}\" ]; then . \"$GPOOL_BASH_ENV\"; fi\n", f);
  bool ok = fflush(f) == 0 && !ferror(f);
  if (fclose(f) != 0) ok = false;
  if (!ok || chmod(tmp, 0644) != 0 || rename(tmp, p) != 0) {
    unlink(tmp);
    return -1;
  }
  snprintf(path, size, "%s", p);
  return 0;
}
