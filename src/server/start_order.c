/* SPDX-License-Identifier: Apache-2.0 */
/* The start order of one task: the protocol's start struct (protocol/order.h) filled from
 * the server's job record, so the agent receives exactly the fields it runs a task with.
 * The task's placement is read back from the JOB object's placement (jobjson.c), which
 * keeps one definition of how a placement names its GPUs and MIG instance. */
#include <stdio.h>
#include <stdlib.h>

#include "protocol/order.h"
#include "server/state.h"
#include "util/mem.h"

/* The strings of a JSON array, borrowed (the array is freed by the caller). */
static char **borrow_strv(const json_t *a, int *ret_n) {
  size_t n = json_array_size(a);
  char **v = gp_xcalloc(n + 1, sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (char *)json_string_value(json_array_get(a, i));
  *ret_n = (int)n;
  return v;
}

json_t *gp__srv_start_order(const gp_srv_state *s, const gp_srv_job *j, int task) {
  gp_proto_order *o = gp_xcalloc(1, sizeof *o);
  o->kind = GP_PROTO_START;
  gp_proto_start *st = &o->u.start;
  /* Strings are borrowed from the job for the time of the encoding, so this struct is not
   * handed to gp_proto_order_done. */
  snprintf(st->id, sizeof st->id, "%s", j->idstr);
  st->name = j->name;
  st->queue = j->queue;
  st->user = j->user;
  st->workdir = j->workdir;
  st->argv = borrow_strv(j->command, &st->n_argv);
  size_t n_env = json_object_size(j->env);
  st->env_keys = gp_xcalloc(n_env + 1, sizeof *st->env_keys);
  st->env_values = gp_xcalloc(n_env + 1, sizeof *st->env_values);
  const char *k;
  json_t *v;
  json_object_foreach(j->env, k, v) {
    st->env_keys[st->n_env] = (char *)k;
    st->env_values[st->n_env++] = (char *)json_string_value(v);
  }
  st->tasks = j->tasks;
  st->task_index = task;
  st->gpu_milli = j->gpu_milli;
  st->gpu_mem_mib = j->gpu_mem_mib;
  st->cpu_milli = j->cpu_milli;
  st->mem_mib = j->mem_mib;
  st->grace_s = j->grace_s;
  snprintf(st->signal, sizeof st->signal, "%s", j->signal ? j->signal : "");
  st->output = j->output;
  st->error = j->error;
  st->output_append = j->output_append;
  st->time_limit = j->time_limit;
  snprintf(st->warn_signal, sizeof st->warn_signal, "%s", j->warn_signal ? j->warn_signal : "");
  st->warn_before_s = j->warn_signal ? j->warn_before_s : 0;
  st->warn_batch = j->warn_batch;
  st->restarts = j->restarts;
  json_t *all = gp__srv_job_placements_json(s, j), *hosts = json_array();
  for (size_t t = 0; t < json_array_size(all); t++)
    json_array_append(hosts, json_object_get(json_array_get(all, t), "node"));
  st->hosts = borrow_strv(hosts, &st->n_hosts);
  const json_t *mine = json_array_get(all, (size_t)task);
  gp_err err = {0};
  if (mine) {
    /* Node names, UUIDs and GPU indexes were bounded when the node registered, within the
     * protocol's limits: a placement that does not decode is a broken invariant. */
    if (gp_proto_placement_decode(mine, &st->placement, &err) != 0) {
      fprintf(stderr, "gpool server: job %s task %d: %s: %s\n", j->idstr, task, err.field,
              err.message);
      abort();
    }
    st->has_placement = true;
  }
  json_t *doc = gp_proto_order_encode(o);
  free(st->argv);
  free(st->env_keys);
  free(st->env_values);
  free(st->hosts);
  json_decref(hosts);
  json_decref(all);
  free(o);
  return doc;
}
