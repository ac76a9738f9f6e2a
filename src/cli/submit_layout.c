/* SPDX-License-Identifier: Apache-2.0 */
/* How a submission's tasks lie on nodes (gp_submit_layout, submit_args.h): -N/--nodes,
 * --ntasks, --ntasks-per-node and the GPU counts that are per node or per job rather than
 * per task (Slurm's --gres and --gpus-per-node, --gpus), read from the private "_" keys the
 * option tables fill, into the job's `tasks`, `tasks_per_node`, `nodes` (an exact count)
 * and per-task `gpus`; and the #SBATCH forms whose Slurm meaning differs from gpool's own
 * option (-N, --mem=0, -p a,b). */
#include <stdio.h>
#include <string.h>

#include "cli/submit_args.h"
#include "util/units.h"

#define MAX_GPUS_PER_TASK 1024
#define MAX_TASKS 100000
#define MAX_PARTITIONS 16 /* as the server's GP_SRV_MAX_PARTITIONS */

static int64_t take_int(json_t *req, const char *key) {
  const json_t *v = json_object_get(req, key);
  int64_t n = json_is_integer(v) ? json_integer_value(v) : 0;
  json_object_del(req, key);
  return n;
}

static int split_gpus(json_t *req, int64_t total, int64_t over, const char *what, gp_err *err) {
  if (total % over)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpus", "%lld GPUs cannot be split evenly over %lld %s",
                      (long long)total, (long long)over, what);
  if (total / over > MAX_GPUS_PER_TASK)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpus", "too many GPUs per task");
  json_object_set_new(req, "gpus", json_integer(total / over));
  return 0;
}

static int count_in(const char *s, int64_t *ret) {
  return gp_parse_int64(s, ret) || *ret < 1 || *ret > MAX_TASKS ? GP_EINVAL : 0;
}

/* -p a,b: one name is the queue; several are the queues the server tries in turn. */
static int partitions(json_t *req, const char *v, const char *where, gp_err *err) {
  json_t *list = json_array();
  for (const char *p = v;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len > 255 || json_array_size(list) >= MAX_PARTITIONS) {
      json_decref(list);
      return gp_err_set(err, GP_EINVAL, NULL, 0, "queue",
                        "%s: '%s' is not a partition list (names of at most 255 characters, at most %d, "
                        "separated by commas)", where, v, MAX_PARTITIONS);
    }
    json_array_append_new(list, json_stringn(p, len));
    if (!comma) break;
    p = comma + 1;
  }
  json_object_del(req, "queue");
  json_object_del(req, "partitions");
  if (json_array_size(list) == 1) json_object_set(req, "queue", json_array_get(list, 0));
  else json_object_set(req, "partitions", list);
  json_decref(list);
  return 0;
}

int gp_submit_sb_opt(json_t *req, const char *what, const char *v, const char *where, gp_err *err) {
  int64_t n, hi;
  if (!strcmp(what, "partition")) return partitions(req, v, where, err);
  if (!strcmp(what, "mem")) {
    if (gp_parse_mem_mib(v, &n) || n < 0)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "mem_mib", "%s: '%s' is not a memory size (e.g. 64G, 512M; 0: a whole node)",
                        where, v);
    /* Slurm's --mem=0 is all of each node's memory: the node is the job's alone, and its
     * tasks get no memory limit of their own. */
    if (n == 0) json_object_set_new(req, "exclusive", json_true());
    else json_object_set_new(req, "mem_mib", json_integer(n));
    return 0;
  }
  const char *dash = strchr(v, '-');
  char lo[32];
  size_t len = dash ? (size_t)(dash - v) : strlen(v);
  if (len == 0 || len >= sizeof lo) goto bad;
  memcpy(lo, v, len);
  lo[len] = '\0';
  if (count_in(lo, &n) || (dash && count_in(dash + 1, &hi))) goto bad;
  if (dash && hi != n)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "tasks",
                      "%s: --nodes=%s is a range of node counts; gpool allocates an exact count (write --nodes=%lld or --nodes=%lld)",
                      where, v, (long long)n, (long long)hi);
  json_object_set_new(req, "_nodes", json_integer(n));
  json_object_set_new(req, "_sb_nodes", json_true()); /* Slurm's meaning: distinct nodes */
  return 0;
bad:
  return gp_err_set(err, GP_EINVAL, NULL, 0, "tasks", "%s: '%s' is not a node count (1 or more, or N-N)", where, v);
}

int gp_submit_layout(json_t *req, gp_err *err) {
  int64_t nodes = take_int(req, "_nodes"), ntasks = take_int(req, "_ntasks");
  int64_t per = take_int(req, "_per_node");
  /* Slurm's -N, and gpool's -N with --ntasks-per-node (N nodes x K tasks), are an exact
   * node count; gpool's -N alone counts tasks that may share a node. */
  int64_t exact = per > 0 ? nodes : 0;
  bool sb_nodes = json_is_true(json_object_get(req, "_sb_nodes"));
  json_object_del(req, "_sb_nodes");
  /* #SBATCH -N alone: Slurm runs one task on each of N nodes, so at most one a node (gpool's
   * own -N counts tasks that may share a node). */
  if (sb_nodes && ntasks == 0 && per == 0) per = 1;
  if (sb_nodes) exact = nodes;
  int64_t tasks = json_integer_value(json_object_get(req, "tasks")); /* a #GPOOL tasks= form */
  if (ntasks > 0) {
    tasks = ntasks;
    /* -N with --ntasks: no node holds more than its part, so they spread over N nodes at
     * least (gpool may use more nodes: -N does not pin the count). */
    if (per == 0 && nodes > 0) per = (ntasks + nodes - 1) / nodes;
    if (per > 0 && nodes > 0 && ntasks > nodes * per)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "tasks",
                        "--ntasks=%lld does not fit --nodes=%lld with --ntasks-per-node=%lld",
                        (long long)ntasks, (long long)nodes, (long long)per);
  } else if (nodes > 0) {
    tasks = nodes * (per > 0 ? per : 1); /* one task per node unless told otherwise */
  } else if (per > 0) {
    tasks = per; /* one node's worth */
  }
  if (tasks > MAX_TASKS)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "tasks", "%lld tasks: at most %d", (long long)tasks,
                      MAX_TASKS);
  if (tasks > 0) json_object_set_new(req, "tasks", json_integer(tasks));
  if (per > 0 && per < tasks) json_object_set_new(req, "tasks_per_node", json_integer(per));
  if (exact > 0 && tasks > 0 && exact > tasks)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "tasks", "--nodes=%lld is more nodes than the %lld tasks can occupy",
                      (long long)exact, (long long)tasks);
  if (exact > 0 && tasks > 1) json_object_set_new(req, "nodes", json_integer(exact));
  int64_t t = tasks > 0 ? tasks : 1;
  const json_t *total = json_object_get(req, "_gpus_total"), *pn = json_object_get(req, "_gpus_per_node");
  int rc = 0;
  if (json_is_integer(total)) rc = split_gpus(req, json_integer_value(total), t, "tasks", err);
  else if (json_is_integer(pn))
    rc = split_gpus(req, json_integer_value(pn), per > 0 && per < t ? per : 1, "tasks of a node", err);
  json_object_del(req, "_gpus_total");
  json_object_del(req, "_gpus_per_node");
  return rc;
}
