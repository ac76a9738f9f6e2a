/* SPDX-License-Identifier: Apache-2.0 */
/* The start order of one task: the protocol's start struct (protocol/order.h) filled from
 * the server's job record, so the agent receives exactly the fields it runs a task with
 * (a batch job's task 0 runs its script; the others hold their share: docs/slurm.md).
 * The task's placement is read back from the JOB object's placement (jobjson_out.c), which
 * keeps one definition of how a placement names its GPUs and MIG instance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/service.h"
#include "server/workloads/service.h"
#include "protocol/order.h"
#include "server/state/state.h"
#include "server/workloads/start_order.h"
#include "server/workloads/steps.h"
#include "util/mem.h"

/* The strings of a JSON array, borrowed (the array is freed by the caller). */
static char **borrow_strv(const json_t *a, int *ret_n) {
  size_t n = json_array_size(a);
  char **v = gp_xcalloc(n + 1, sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = (char *)json_string_value(json_array_get(a, i));
  *ret_n = (int)n;
  return v;
}

/* The address other nodes reach node n at: the host its agent advertises in its URL
 * ("http://10.0.0.5:7001" -> "10.0.0.5", "https://[fd00::5]:7001" -> "fd00::5"), else its
 * name. */
void gp__srv_node_addr(const gp_srv_node *n, char *buf, size_t size) {
  const char *u = n->agent_url ? strstr(n->agent_url, "://") : NULL;
  snprintf(buf, size, "%s", n->name);
  if (!u) return;
  u += 3;
  size_t len;
  if (*u == '[') {
    u++;
    len = strcspn(u, "]");
  } else {
    len = strcspn(u, ":/");
  }
  if (len == 0 || len >= size) return;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)u[i] <= ' ' || u[i] == 0x7f) return;
  snprintf(buf, size, "%.*s", (int)len, u);
}

int gp__srv_master_port(const gp_srv_state *s, const gp_srv_job *j) {
  /* Below Linux's ephemeral range (32768-60999), so no outgoing connection holds it, and
   * away from the well-known ports: 20000-32767. */
  enum { BASE = 20000, SPAN = 12768 };
  uint64_t h = (uint64_t)j->id * 0x9E3779B97F4A7C15ull ^ (uint64_t)(j->restarts + 1) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  int port = BASE + (int)(h % SPAN);
  int master = j->n_alloc > 0 ? j->alloc[0].node : -1;
  /* Another running job whose task 0 shares this node keeps its port. */
  for (int tries = 0; tries < SPAN && master >= 0; tries++) {
    bool taken = false;
    for (int a = 0; a < s->n_active && !taken; a++) {
      const gp_srv_job *o = s->active[a];
      taken = o != j && o->master_port == port && o->n_alloc > 0 && o->alloc[0].node == master &&
              (o->state == GP_JOB_RUNNING || o->state == GP_JOB_STOPPING);
    }
    if (!taken) break;
    port = port + 1 < BASE + SPAN ? port + 1 : BASE;
  }
  return port;
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
  st->batch = j->batch;
  if (j->batch && task == 0 && j->n_alloc > 0 && j->gpu_milli == 0 && !j->mig) {
    /* The batch step sees every whole GPU the job holds on its node, as in Slurm. */
    uint32_t mask = 0;
    for (int t = 0; t < j->n_alloc; t++)
      if (j->alloc[t].node == j->alloc[0].node) mask |= j->alloc[t].gpu_mask;
    for (int g = 0; g < GP_PROTO_MAX_GPUS; g++)
      if (mask & (UINT32_C(1) << g)) st->node_gpus[st->n_node_gpus++] = g;
  }
  json_t *all = gp__srv_job_placements_json(s, j), *hosts = json_array();
  for (size_t t = 0; t < json_array_size(all); t++)
    json_array_append(hosts, json_object_get(json_array_get(all, t), "node"));
  st->hosts = borrow_strv(hosts, &st->n_hosts);
  json_t *addrs = json_array();
  for (int t = 0; t < j->n_alloc; t++) {
    char addr[GP_PROTO_NODE_MAX];
    int ni = j->alloc[t].node;
    if (ni < 0 || ni >= s->n_nodes) break;
    gp__srv_node_addr(s->nodes[ni], addr, sizeof addr);
    json_array_append_new(addrs, json_string(addr));
  }
  if (json_array_size(addrs) == (size_t)st->n_hosts) st->addrs = borrow_strv(addrs, &st->n_addrs);
  st->master_port = j->master_port;
  if (j->steps) snprintf(st->job_key, sizeof st->job_key, "%s", j->steps->key);
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
  gp_proto_container ct;
  if (j->container) {
    /* Checked when the job was read (jobimage.c): a spec that does not decode is a broken
     * invariant, as a placement's. */
    if (gp_proto_container_decode(j->container, "container", &ct, &err) != 0) {
      fprintf(stderr, "gpool server: job %s: %s: %s\n", j->idstr, err.field, err.message);
      abort();
    }
    st->container = &ct;
  }
  gp_proto_service svc;
  if (j->service && gp__srv_service_replica_order(s, j, &svc)) st->service = &svc;
  json_t *doc = gp_proto_order_encode(o);
  if (j->container) gp_proto_container_done(&ct);
  free(st->argv);
  free(st->env_keys);
  free(st->env_values);
  free(st->hosts);
  free(st->addrs);
  json_decref(hosts);
  json_decref(addrs);
  json_decref(all);
  free(o);
  return doc;
}
