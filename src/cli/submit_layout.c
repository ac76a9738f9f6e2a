/* SPDX-License-Identifier: Apache-2.0 */
/* How a submission's tasks lie on nodes (gp_submit_layout, submit_args.h): -N/--nodes,
 * --ntasks, --ntasks-per-node and the GPU counts that are per node or per job rather than
 * per task (Slurm's --gres and --gpus-per-node, --gpus), read from the private "_" keys the
 * option tables fill, into the job's `tasks`, `tasks_per_node` and per-task `gpus`. */
#include <stdio.h>

#include "cli/submit_args.h"

#define MAX_GPUS_PER_TASK 1024
#define MAX_TASKS 100000

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

int gp_submit_layout(json_t *req, gp_err *err) {
  int64_t nodes = take_int(req, "_nodes"), ntasks = take_int(req, "_ntasks");
  int64_t per = take_int(req, "_per_node");
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
