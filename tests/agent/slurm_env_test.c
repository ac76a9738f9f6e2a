/* SPDX-License-Identifier: Apache-2.0 */
/* The SLURM_* variables of each task (agent/slurm_env.c): ids, names, the node list in
 * hostlist form starting with task 0's node, node and task counts in Slurm's forms, ranks
 * that agree with the rendezvous layout (SLURM_NODEID is NODE_RANK), and nothing set that
 * gpool does not know (no CPUs asked, no GPUs held, an older server's order without hosts,
 * a node name a hostlist cannot hold). Also the Slurm command links the agent makes. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/rendezvous.h"
#include "agent/slurm_env.h"
#include "test.h"

typedef struct vars {
  int n;
  char names[64][40];
  char values[64][256];
} vars;

static void set(void *ctx, const char *name, const char *value) {
  vars *v = ctx;
  CHECK(v->n < 64 && strlen(name) < 40 && strlen(value) < 256);
  snprintf(v->names[v->n], sizeof v->names[0], "%s", name);
  snprintf(v->values[v->n++], sizeof v->values[0], "%s", value);
}

static const char *get(const vars *v, const char *name) {
  for (int i = 0; i < v->n; i++)
    if (strcmp(v->names[i], name) == 0) return v->values[i];
  return NULL;
}

#define CHECK_VAR(v, name, want) CHECK_EQ_STR(want, get(v, name) ? get(v, name) : "(unset)")

static void two_nodes_two_tasks_each(void) {
  char *hosts[] = {"gpu07", "gpu07", "gpu08", "gpu08"};
  for (int t = 0; t < 4; t++) {
    gp_proto_start o = {.id = "42", .name = "train", .queue = "research", .workdir = "/home/u/run",
                        .tasks = 4, .task_index = t, .hosts = hosts, .n_hosts = 4, .cpu_milli = 8000};
    gp__agent_slurm_task st = {.node = hosts[t], .user = "alice", .n_gpus = 1, .cpus = 8};
    vars v = {0};
    gp__agent_slurm_vars(&o, &st, set, &v);
    char want[16];
    CHECK_VAR(&v, "SLURM_JOB_ID", "42");
    CHECK_VAR(&v, "SLURM_JOBID", "42");
    CHECK_VAR(&v, "SLURM_JOB_NAME", "train");
    CHECK_VAR(&v, "SLURM_JOB_USER", "alice");
    CHECK_VAR(&v, "SLURM_JOB_PARTITION", "research");
    CHECK_VAR(&v, "SLURM_SUBMIT_DIR", "/home/u/run");
    CHECK_VAR(&v, "SLURM_CLUSTER_NAME", "gpool");
    CHECK_VAR(&v, "SLURM_JOB_NODELIST", "gpu[07-08]");
    CHECK_VAR(&v, "SLURM_NODELIST", "gpu[07-08]");
    CHECK_VAR(&v, "SLURM_JOB_NUM_NODES", "2");
    CHECK_VAR(&v, "SLURM_NNODES", "2");
    CHECK_VAR(&v, "SLURM_NTASKS", "4");
    CHECK_VAR(&v, "SLURM_NPROCS", "4");
    CHECK_VAR(&v, "SLURM_NTASKS_PER_NODE", "2");
    CHECK_VAR(&v, "SLURM_TASKS_PER_NODE", "2(x2)");
    snprintf(want, sizeof want, "%d", t);
    CHECK_VAR(&v, "SLURM_PROCID", want);
    snprintf(want, sizeof want, "%d", t % 2);
    CHECK_VAR(&v, "SLURM_LOCALID", want);
    snprintf(want, sizeof want, "%d", t / 2);
    CHECK_VAR(&v, "SLURM_NODEID", want);
    CHECK_VAR(&v, "SLURM_GPUS_ON_NODE", "1");
    CHECK_VAR(&v, "SLURM_CPUS_PER_TASK", "8");
    CHECK_VAR(&v, "SLURMD_NODENAME", hosts[t]); /* the node list's entry for this node */
    CHECK(get(&v, "SLURM_SUBMIT_HOST") == NULL); /* not known: not made up */
  }
}

/* Uneven nodes, interleaved tasks: the list starts at task 0's node, NODEID is NODE_RANK. */
static void uneven_and_interleaved(void) {
  char *hosts[] = {"b2", "a1", "b2", "b2", "c"};
  for (int t = 0; t < 5; t++) {
    gp_proto_start o = {.id = "7_3", .tasks = 5, .task_index = t, .hosts = hosts, .n_hosts = 5};
    gp__agent_slurm_task st = {.node = hosts[t]};
    vars v = {0};
    gp__agent_slurm_vars(&o, &st, set, &v);
    CHECK_VAR(&v, "SLURM_JOB_NODELIST", "b2,a1,c");
    CHECK_VAR(&v, "SLURM_TASKS_PER_NODE", "3,1(x2)");
    CHECK(get(&v, "SLURM_NTASKS_PER_NODE") == NULL); /* not uniform */
    gp__agent_layout l;
    gp__agent_layout_of(&o, "self", &l);
    char want[16];
    snprintf(want, sizeof want, "%d", l.node_rank);
    CHECK_VAR(&v, "SLURM_NODEID", want);
    snprintf(want, sizeof want, "%d", l.local_rank);
    CHECK_VAR(&v, "SLURM_LOCALID", want);
    CHECK(get(&v, "SLURM_JOB_NAME") == NULL && get(&v, "SLURM_JOB_PARTITION") == NULL);
    CHECK(get(&v, "SLURM_CPUS_PER_TASK") == NULL && get(&v, "SLURM_GPUS_ON_NODE") == NULL);
    CHECK(get(&v, "SLURM_SUBMIT_DIR") == NULL && get(&v, "SLURM_JOB_USER") == NULL);
  }
}

static void what_gpool_does_not_know_stays_unset(void) {
  /* An older server's order: no hosts. One task: this node; more: nothing node-wise. */
  gp_proto_start one = {.id = "1", .tasks = 1};
  gp__agent_slurm_task st = {.node = "n5"};
  vars v = {0};
  gp__agent_slurm_vars(&one, &st, set, &v);
  CHECK_VAR(&v, "SLURM_JOB_NODELIST", "n5");
  CHECK_VAR(&v, "SLURM_TASKS_PER_NODE", "1");
  CHECK_VAR(&v, "SLURMD_NODENAME", "n5");
  gp_proto_start three = {.id = "2", .tasks = 3, .task_index = 1};
  memset(&v, 0, sizeof v);
  gp__agent_slurm_vars(&three, &st, set, &v);
  CHECK_VAR(&v, "SLURM_NTASKS", "3");
  CHECK_VAR(&v, "SLURM_PROCID", "1");
  CHECK(get(&v, "SLURM_JOB_NODELIST") == NULL && get(&v, "SLURM_NODEID") == NULL &&
        get(&v, "SLURM_NNODES") == NULL && get(&v, "SLURM_LOCALID") == NULL);
  /* A node name a hostlist cannot hold: no list rather than a wrong one. */
  char *odd[] = {"n[1]", "n2"};
  gp_proto_start o = {.id = "3", .tasks = 2, .task_index = 0, .hosts = odd, .n_hosts = 2};
  memset(&v, 0, sizeof v);
  gp__agent_slurm_vars(&o, &st, set, &v);
  CHECK(get(&v, "SLURM_JOB_NODELIST") == NULL);
  CHECK_VAR(&v, "SLURM_NNODES", "2");
}

/* What the job holds on this node: SLURM_CPUS_ON_NODE, SLURM_GPUS_PER_TASK/_PER_NODE,
 * SLURM_MEM_PER_NODE and SLURM_JOB_GPUS (the indexes, as Slurm writes them), counted over
 * the job's tasks on the node; per-node values only when every node has as many tasks, and
 * the GPU indexes only when they are all of the job's there. */
static void node_resources(void) {
  char *hosts[] = {"g1", "g1", "g2", "g2"};
  int mine[] = {4, 5}, all[] = {0, 1, 4, 5};
  gp_proto_start o = {.id = "9", .tasks = 4, .task_index = 2, .hosts = hosts, .n_hosts = 4};
  gp__agent_slurm_task st = {.node = "g2", .n_gpus = 2, .cpus = 6, .node_cpus = 64, .gpus_per_task = 2,
                             .mem_mib = 1000, .job_gpus = mine, .n_job_gpus = 2};
  vars v = {0};
  gp__agent_slurm_vars(&o, &st, set, &v);
  CHECK_VAR(&v, "SLURM_CPUS_ON_NODE", "12");
  CHECK_VAR(&v, "SLURM_GPUS_PER_TASK", "2");
  CHECK_VAR(&v, "SLURM_GPUS_PER_NODE", "4");
  CHECK_VAR(&v, "SLURM_MEM_PER_NODE", "2000");
  CHECK(get(&v, "SLURM_JOB_GPUS") == NULL); /* only this task's two of the node's four */
  /* The batch step: it knows all of the job's GPUs on its node. */
  o.task_index = 0;
  st.node = "g1";
  st.job_gpus = all;
  st.n_job_gpus = 4;
  st.job_gpus_all = true;
  memset(&v, 0, sizeof v);
  gp__agent_slurm_vars(&o, &st, set, &v);
  CHECK_VAR(&v, "SLURM_JOB_GPUS", "0,1,4,5");
  /* One task per node: its GPUs are the job's there. No CPU limit: all of the node's. */
  char *spread[] = {"g1", "g2", "g2"};
  gp_proto_start u = {.id = "10", .tasks = 3, .task_index = 0, .hosts = spread, .n_hosts = 3};
  gp__agent_slurm_task t1 = {.node = "g1", .n_gpus = 2, .node_cpus = 64, .gpus_per_task = 2,
                             .mem_mib = 1000, .job_gpus = mine, .n_job_gpus = 2};
  memset(&v, 0, sizeof v);
  gp__agent_slurm_vars(&u, &t1, set, &v);
  CHECK_VAR(&v, "SLURM_JOB_GPUS", "4,5");
  CHECK_VAR(&v, "SLURM_CPUS_ON_NODE", "64");
  CHECK_VAR(&v, "SLURM_GPUS_PER_TASK", "2");
  /* Uneven nodes: no per-node request to name. */
  CHECK(get(&v, "SLURM_GPUS_PER_NODE") == NULL && get(&v, "SLURM_MEM_PER_NODE") == NULL);
  /* A GPU share, no memory limit, CPUs unknown: nothing of these. */
  gp__agent_slurm_task t2 = {.node = "g1", .n_gpus = 1};
  memset(&v, 0, sizeof v);
  gp__agent_slurm_vars(&u, &t2, set, &v);
  CHECK(get(&v, "SLURM_CPUS_ON_NODE") == NULL && get(&v, "SLURM_GPUS_PER_TASK") == NULL &&
        get(&v, "SLURM_GPUS_PER_NODE") == NULL && get(&v, "SLURM_MEM_PER_NODE") == NULL &&
        get(&v, "SLURM_JOB_GPUS") == NULL);
  char buf[8];
  gp__agent_slurm_gpu_list(all, 4, buf, sizeof buf); /* "0,1,4,5" + NUL fits 8 */
  CHECK_EQ_STR("0,1,4,5", buf);
  gp__agent_slurm_gpu_list(all, 4, buf, 7); /* never a truncated list */
  CHECK_EQ_STR("", buf);
}

static void scontrol_link(void) {
  char dir[] = "/tmp/gp-slurm-bin-XXXXXX", got[PATH_MAX], bin[700], path[800];
  CHECK(mkdtemp(dir) != NULL);
  CHECK_EQ_INT(0, gp__agent_slurm_bin_write(dir, "/usr/bin/gpool-x", bin, sizeof bin));
  snprintf(path, sizeof path, "%s/bin", dir);
  CHECK_EQ_STR(path, bin);
  snprintf(path, sizeof path, "%s/bin/scontrol", dir);
  ssize_t n = readlink(path, got, sizeof got - 1);
  CHECK(n > 0);
  got[n > 0 ? n : 0] = '\0';
  CHECK_EQ_STR("/usr/bin/gpool-x", got);
  /* Again, with the binary moved: the link follows. */
  CHECK_EQ_INT(0, gp__agent_slurm_bin_write(dir, "/opt/gpool", bin, sizeof bin));
  n = readlink(path, got, sizeof got - 1);
  got[n > 0 ? n : 0] = '\0';
  CHECK_EQ_STR("/opt/gpool", got);
  /* Every Slurm command the binary answers to has its link (cli/slurm.h). */
  static const char *const names[] = {"sbatch", "squeue", "scancel", "sinfo", "sacct", "scontrol"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/bin/%s", dir, names[i]);
    n = readlink(path, got, sizeof got - 1);
    got[n > 0 ? n : 0] = '\0';
    CHECK_EQ_STR("/opt/gpool", got);
  }
  CHECK_EQ_INT(-1, gp__agent_slurm_bin_write(dir, "", bin, sizeof bin));
  CHECK_EQ_STR("", bin);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/bin/%s", dir, names[i]);
    unlink(path);
  }
  snprintf(path, sizeof path, "%s/bin", dir);
  rmdir(path);
  rmdir(dir);
}

/* The BASH_ENV file puts the directories back on a PATH that lost them (a login shell's
 * /etc/profile), once, quoting any name, and then runs the job's own BASH_ENV. */
static void bash_env_file(void) {
  char dir[] = "/tmp/gp-slurm-env-XXXXXX", path[200], cmd[1400], got[600] = "";
  CHECK(mkdtemp(dir) != NULL);
  const char *dirs[] = {"/opt/sim bin", "/d/it's"};
  CHECK_EQ_INT(0, gp__agent_slurm_profile_write(dir, dirs, 2, path, sizeof path));
  char mine[240];
  snprintf(mine, sizeof mine, "%s/mine.sh", dir);
  FILE *f = fopen(mine, "w");
  REQUIRE(f);
  fputs("MINE=yes\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "env -i PATH=/usr/bin:/bin BASH_ENV='%s' GPOOL_BASH_ENV='%s' /bin/bash -c 'echo \"$PATH $MINE\"' &&"
           " env -i \"PATH=/d/it's:/usr/bin:/bin\" BASH_ENV='%s' /bin/bash -c 'echo \"$PATH\"'",
           path, mine, path);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  size_t n = fread(got, 1, sizeof got - 1, p);
  got[n] = '\0';
  CHECK_EQ_INT(0, pclose(p));
  CHECK_EQ_STR("/d/it's:/opt/sim bin:/usr/bin:/bin yes\n/opt/sim bin:/d/it's:/usr/bin:/bin\n", got);
  unlink(mine);
  unlink(path);
  rmdir(dir);
}

GP_TESTS(two_nodes_two_tasks_each, uneven_and_interleaved, what_gpool_does_not_know_stays_unset,
         node_resources, bash_env_file, scontrol_link)
