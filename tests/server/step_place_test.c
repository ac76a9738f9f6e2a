/* SPDX-License-Identifier: Apache-2.0 */
/* Where a step's tasks go in a job's allocation (server/step_place.c): the default of one
 * per job task, srun's -N, -n, --ntasks-per-node and -w, ranks in blocks per node in the
 * allocation's order, which GPUs a step task sees, and a refusal naming the option for
 * what the allocation cannot hold. */
#include "test.h"

#include "server/workloads/steps.h"

/* Job tasks 0,1 on node 7 ("a"), 2,3 on node 3 ("b"), 4 on node 9 ("c"). */
static const int nodes[] = {7, 7, 3, 3, 9};
static const char *const names[] = {"a", "a", "b", "b", "c"};

static int place(gp_srv_step_ask ask, int *out, gp_err *err) {
  int n = -1;
  memset(err, 0, sizeof *err);
  int rc = gp__srv_step_place(nodes, names, 5, &ask, out, &n, err);
  return rc ? -1 : n;
}

static void one_per_job_task_by_default(void) {
  int out[5];
  gp_err err;
  CHECK_EQ_INT(5, place((gp_srv_step_ask){0}, out, &err));
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(i, out[i]);
  /* Each node has as many step tasks as job tasks: each sees its own task's GPUs. */
  for (int i = 0; i < 5; i++) CHECK(gp__srv_step_own_gpus(nodes, 5, out, 5, i));
}

static void subsets(void) {
  int out[5];
  gp_err err;
  CHECK_EQ_INT(1, place((gp_srv_step_ask){.nodes = 1, .ntasks = 1}, out, &err));
  CHECK_EQ_INT(0, out[0]);
  CHECK(!gp__srv_step_own_gpus(nodes, 5, out, 1, 0)); /* alone on a node of 2: all its GPUs */
  /* --ntasks-per-node=1: one on each node, in the allocation's order. */
  CHECK_EQ_INT(3, place((gp_srv_step_ask){.ntasks_per_node = 1}, out, &err));
  CHECK_EQ_INT(0, out[0]);
  CHECK_EQ_INT(2, out[1]);
  CHECK_EQ_INT(4, out[2]);
  CHECK(gp__srv_step_own_gpus(nodes, 5, out, 3, 2)); /* c has one job task */
  /* OpenMPI: --ntasks=2 --ntasks-per-node=1 without -N: two distinct nodes. */
  CHECK_EQ_INT(2, place((gp_srv_step_ask){.ntasks = 2, .ntasks_per_node = 1}, out, &err));
  CHECK_EQ_INT(0, out[0]);
  CHECK_EQ_INT(2, out[1]);
  /* -n 3: one on each node first, then blocks. */
  CHECK_EQ_INT(3, place((gp_srv_step_ask){.ntasks = 3}, out, &err));
  CHECK_EQ_INT(0, out[0]);
  CHECK_EQ_INT(2, out[1]);
  CHECK_EQ_INT(4, out[2]);
  CHECK_EQ_INT(4, place((gp_srv_step_ask){.ntasks = 4}, out, &err));
  CHECK_EQ_INT(1, out[1]); /* ranks 0,1 on a, 2 on b, 3 on c */
  CHECK_EQ_INT(2, out[2]);
  CHECK_EQ_INT(4, out[3]);
  /* -n 1 alone uses one node. */
  CHECK_EQ_INT(1, place((gp_srv_step_ask){.ntasks = 1}, out, &err));
  /* -w b: its two tasks; -w c,a -N 2: a's then c's, the allocation's order. */
  const char *b[] = {"b"};
  CHECK_EQ_INT(2, place((gp_srv_step_ask){.n_nodelist = 1, .nodelist = b}, out, &err));
  CHECK_EQ_INT(2, out[0]);
  CHECK_EQ_INT(3, out[1]);
  const char *ca[] = {"c", "a"};
  CHECK_EQ_INT(3, place((gp_srv_step_ask){.nodes = 2, .n_nodelist = 2, .nodelist = ca}, out, &err));
  CHECK_EQ_INT(0, out[0]);
  CHECK_EQ_INT(4, out[2]);
  /* -N 2: the first two nodes, every task there. */
  CHECK_EQ_INT(4, place((gp_srv_step_ask){.nodes = 2}, out, &err));
  CHECK_EQ_INT(3, out[3]);
}

static void refusals_name_the_option(void) {
  int out[5];
  gp_err err;
  CHECK_EQ_INT(-1, place((gp_srv_step_ask){.nodes = 4}, out, &err));
  CHECK_EQ_STR("nodes", err.field);
  CHECK_CONTAINS(err.message, "-N/--nodes");
  CHECK_EQ_INT(-1, place((gp_srv_step_ask){.ntasks = 6}, out, &err));
  CHECK_EQ_STR("ntasks", err.field);
  CHECK_EQ_INT(-1, place((gp_srv_step_ask){.nodes = 3, .ntasks = 2}, out, &err));
  CHECK_EQ_STR("ntasks", err.field);
  CHECK_EQ_INT(-1, place((gp_srv_step_ask){.ntasks_per_node = 2}, out, &err)); /* c has one */
  CHECK_EQ_STR("ntasks_per_node", err.field);
  CHECK_EQ_INT(-1, place((gp_srv_step_ask){.nodes = 2, .ntasks_per_node = 2, .ntasks = 5}, out, &err));
  CHECK_EQ_STR("ntasks", err.field);
  const char *z[] = {"z"};
  CHECK_EQ_INT(-1, place((gp_srv_step_ask){.n_nodelist = 1, .nodelist = z}, out, &err));
  CHECK_EQ_STR("nodelist", err.field);
  CHECK_CONTAINS(err.message, "node z");
  const char *ab[] = {"a", "b"};
  CHECK_EQ_INT(-1, place((gp_srv_step_ask){.nodes = 1, .n_nodelist = 2, .nodelist = ab}, out, &err));
  CHECK_EQ_STR("nodes", err.field);
}

GP_TESTS(one_per_job_task_by_default, subsets, refusals_name_the_option)
