/* SPDX-License-Identifier: Apache-2.0 */
/* The steps API (docs/api.md#steps): POST /v1/jobs/{id}/steps creates a step (srun) and
 * queues one step order per step task to the agents, whose parked heartbeats it wakes;
 * GET lists them or reads one; GET .../{step}/output relays a step task's output from its
 * agent through the log proxy; POST .../{step}/cancel signals its tasks. The caller is the
 * job's owner or an admin, or the job itself with its run's step credential
 * (GPOOL_JOB_KEY), which is good for these routes of that job only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/order.h"
#include "server/state/server_int.h"
#include "server/state/state.h"
#include "server/workloads/steps.h"
#include "util/mem.h"
#include "util/clock.h"
#include "util/secret.h"
#include "util/units.h"

bool gp__srv_steps_path(const char *path, char *job_id, size_t size) {
  if (strncmp(path, "/v1/jobs/", 9) != 0) return false;
  const char *id = path + 9, *slash = strchr(id, '/');
  if (!slash || slash == id || (size_t)(slash - id) >= size) return false;
  if (strncmp(slash, "/steps", 6) != 0 || (slash[6] && slash[6] != '/')) return false;
  snprintf(job_id, size, "%.*s", (int)(slash - id), id);
  return true;
}

/* The caller may run, read and cancel the job's steps: its credential, or its owner or an
 * admin (a viewer reads the list). */
static bool allowed(const gp_srv_req *r, const gp_srv_job *j, bool write) {
  if (r->job_key)
    return j->steps && j->steps->key[0] && gp_secret_equal(r->job_key, j->steps->key) &&
           (j->state == GP_JOB_RUNNING || j->state == GP_JOB_STOPPING);
  if (r->role == GP_ROLE_ADMIN) return true;
  if (!write && r->role == GP_ROLE_VIEWER) return true;
  return r->user && strcmp(r->user, j->user) == 0;
}

/* ---- create ---- */

static int int_field(gp_srv_req *r, const json_t *v, const char *key, int lo, int hi, int *out) {
  const json_t *x = json_object_get(v, key);
  if (!x || json_is_null(x)) return 0;
  if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi) {
    gp__srv_reply_error(r, 400, "invalid_argument", key, "%s must be an integer from %d to %d", key, lo, hi);
    return -1;
  }
  *out = (int)json_integer_value(x);
  return 0;
}

/* The request's fields, every one checked; -1 after answering 400. */
static int read_request(gp_srv_req *r, gp_srv_step_ask *ask, const char ***names, bool *kobe, bool *excl) {
  const json_t *b = r->json;
  static const char *const known[] = {"command", "env", "nodes", "ntasks", "ntasks_per_node",
                                      "nodelist", "kill_on_bad_exit", "exclusive", NULL};
  if (!json_is_object(b)) {
    gp__srv_reply_error(r, 400, "invalid_argument", NULL, "the body must be a JSON object");
    return -1;
  }
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)b, k, v) {
    bool ok = false;
    for (int i = 0; known[i] && !ok; i++) ok = strcmp(known[i], k) == 0;
    if (!ok) {
      gp__srv_reply_error(r, 400, "invalid_argument", k, "unknown field '%.64s'", k);
      return -1;
    }
  }
  gp_err e = {0};
  const json_t *env = json_object_get(b, "env");
  if (gp_proto_start_check_run(json_object_get(b, "command"), env, NULL, &e)) {
    gp__srv_reply_error(r, 400, "invalid_argument", e.field, "%s", e.message);
    return -1;
  }
  size_t bytes = 0;
  json_object_foreach((json_t *)env, k, v) bytes += strlen(k) + strlen(json_string_value(v)) + 2;
  if (json_object_size(env) > GP_PROTO_MAX_STEP_ENV || bytes > GP_PROTO_MAX_STEP_ENV_BYTES) {
    gp__srv_reply_error(r, 400, "invalid_argument", "env",
                        "a step passes at most %d variables in %d bytes (this one %zu in %zu)",
                        GP_PROTO_MAX_STEP_ENV, GP_PROTO_MAX_STEP_ENV_BYTES, json_object_size(env), bytes);
    return -1;
  }
  if (int_field(r, b, "nodes", 1, GP_PROTO_MAX_TASKS, &ask->nodes) ||
      int_field(r, b, "ntasks", 1, GP_PROTO_MAX_TASKS, &ask->ntasks) ||
      int_field(r, b, "ntasks_per_node", 1, GP_PROTO_MAX_TASKS, &ask->ntasks_per_node))
    return -1;
  const json_t *nl = json_object_get(b, "nodelist");
  if (nl && !json_is_null(nl)) {
    if (!json_is_array(nl) || json_array_size(nl) > GP_PROTO_MAX_TASKS) {
      gp__srv_reply_error(r, 400, "invalid_argument", "nodelist", "nodelist must be a list of at most %d node names",
                          GP_PROTO_MAX_TASKS);
      return -1;
    }
    *names = gp_xcalloc(json_array_size(nl) + 1, sizeof **names);
    for (size_t i = 0; i < json_array_size(nl); i++) {
      const char *n = json_string_value(json_array_get(nl, i));
      if (!n || !*n || strlen(n) >= GP_PROTO_NODE_MAX) {
        gp__srv_reply_error(r, 400, "invalid_argument", "nodelist", "nodelist[%zu] is not a node name", i);
        return -1;
      }
      (*names)[ask->n_nodelist++] = n;
    }
    ask->nodelist = *names;
  }
  const json_t *kb = json_object_get(b, "kill_on_bad_exit");
  if (kb && !json_is_boolean(kb) && !json_is_null(kb)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "kill_on_bad_exit", "kill_on_bad_exit must be true or false");
    return -1;
  }
  *kobe = json_is_true(kb);
  const json_t *ex = json_object_get(b, "exclusive");
  if (ex && !json_is_boolean(ex) && !json_is_null(ex)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "exclusive", "exclusive must be true or false");
    return -1;
  }
  *excl = json_is_true(ex);
  return 0;
}

/* The step's rendezvous port: one of its own, away from the job's (a step may run while
 * the job's own ranks hold theirs). */
static int step_port(const gp_srv_job *j, int step) {
  enum { BASE = 20000, SPAN = 12768 };
  uint64_t h = (uint64_t)j->id * 0x9E3779B97F4A7C15ull ^ (uint64_t)(step + 1) * 0xD6E8FEB86659FD93ull;
  h ^= h >> 31;
  int port = BASE + (int)(h % SPAN);
  return port == j->master_port ? (port + 1 < BASE + SPAN ? port + 1 : BASE) : port;
}

static int queue_orders(gp_srv_state *s, gp_srv_job *j, gp_srv_step *p, const json_t *env,
                        const int *alloc_node, gp_err *err) {
  char **hosts = gp_xcalloc((size_t)p->n_tasks + 1, sizeof *hosts);
  char **addrs = gp_xcalloc((size_t)p->n_tasks + 1, sizeof *addrs);
  int *step_alloc = gp_xcalloc((size_t)p->n_tasks + 1, sizeof *step_alloc);
  for (int i = 0; i < p->n_tasks; i++) {
    const gp_srv_node *n = s->nodes[j->alloc[p->tasks[i].alloc_task].node];
    char addr[GP_PROTO_NODE_MAX];
    gp__srv_node_addr(n, addr, sizeof addr);
    hosts[i] = n->name;
    addrs[i] = gp_xstrdup(addr);
    step_alloc[i] = p->tasks[i].alloc_task;
  }
  size_t n_argv = json_array_size(p->command), n_env = json_object_size(env);
  char **argv = gp_xcalloc(n_argv + 1, sizeof *argv);
  for (size_t i = 0; i < n_argv; i++) argv[i] = (char *)json_string_value(json_array_get(p->command, i));
  char **keys = gp_xcalloc(n_env + 1, sizeof *keys), **vals = gp_xcalloc(n_env + 1, sizeof *vals);
  size_t e = 0;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)env, k, v) {
    keys[e] = (char *)k;
    vals[e++] = (char *)json_string_value(v);
  }
  int r = 0;
  gp_proto_order *o = gp_xcalloc(1, sizeof *o);
  for (int i = 0; i < p->n_tasks && !r; i++) {
    o->kind = GP_PROTO_STEP;
    gp_proto_step *st = &o->u.step;
    memset(st, 0, sizeof *st);
    snprintf(st->job, sizeof st->job, "%s", j->idstr);
    st->step = p->id;
    st->task = i;
    st->tasks = p->n_tasks;
    st->alloc_task = p->tasks[i].alloc_task;
    st->hosts = hosts;
    st->n_hosts = p->n_tasks;
    st->addrs = addrs;
    st->n_addrs = p->n_tasks;
    st->master_port = p->master_port;
    st->argv = argv;
    st->n_argv = (int)n_argv;
    st->env_keys = keys;
    st->env_values = vals;
    st->n_env = (int)e;
    st->own_gpus = p->exclusive || gp__srv_step_own_gpus(alloc_node, j->n_alloc, step_alloc, p->n_tasks, i);
    /* Its job task's GPUs, or all of the job's on the node: named in the order, so a job
     * task that sees more than its own (a batch step) does not widen its step task's. */
    int nd = alloc_node[st->alloc_task];
    uint32_t mask = st->own_gpus ? j->alloc[st->alloc_task].gpu_mask : 0;
    for (int t = 0; t < j->n_alloc && !st->own_gpus; t++)
      if (alloc_node[t] == nd) mask |= j->alloc[t].gpu_mask;
    for (int g = 0; g < GP_PROTO_MAX_GPUS && g < 32; g++)
      if (mask & (1u << g)) st->gpus[st->n_gpus++] = g;
    r = gp__srv_order_add(s, s->nodes[nd], gp_proto_order_encode(o), j->id, false, err);
  }
  free(o);
  for (int i = 0; i < p->n_tasks; i++) free(addrs[i]);
  free(hosts);
  free(addrs);
  free(step_alloc);
  free(argv);
  free(keys);
  free(vals);
  return r;
}

/* Keeps at most GP_SRV_STEPS_KEPT steps: the oldest ended one goes first. */
static gp_srv_step *step_slot(gp_srv_steps *st) {
  if (st->n >= GP_SRV_STEPS_KEPT) {
    int drop = -1;
    for (int i = 0; i < st->n && drop < 0; i++)
      if (st->items[i].ended) drop = i;
    if (drop < 0) return NULL;
    gp_srv_step *p = &st->items[drop];
    json_decref(p->command);
    for (int k = 0; k < p->n_tasks; k++) {
      free(p->tasks[k].node);
      free(p->tasks[k].reason);
      free(p->tasks[k].message);
    }
    free(p->tasks);
    free(p->state);
    free(p->reason);
    memmove(p, p + 1, (size_t)(st->n - drop - 1) * sizeof *p);
    st->n--;
  }
  st->items = gp_xrealloc(st->items, (size_t)(st->n + 1) * sizeof *st->items);
  gp_srv_step *p = &st->items[st->n++];
  memset(p, 0, sizeof *p);
  return p;
}

/* About what a step's orders weigh in all: each carries the command, the environment and
 * every step task's node name and address. */
static size_t orders_bytes(const json_t *body, const char *const *alloc_name, const int *place, int n) {
  size_t one = 1024, hosts = 0;
  const json_t *cmd = json_object_get(body, "command"), *env = json_object_get(body, "env");
  for (size_t i = 0; i < json_array_size(cmd); i++) one += json_string_length(json_array_get(cmd, i)) + 4;
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)env, k, v) one += strlen(k) + json_string_length(v) + 6;
  for (int i = 0; i < n; i++) hosts += 2 * (strlen(alloc_name[place[i]]) + 4) + 8;
  return (size_t)n * (one + hosts);
}

/* srun --exclusive: the step placed over the job tasks no other running --exclusive step
 * holds (nor one that ended), as Slurm gives such a step resources of its own. 0 with
 * place[] (job task indexes), or -1 when they cannot hold it now. */
static int place_free(const gp_srv_state *s, const gp_srv_job *j, const int *alloc_node, const char *const *alloc_name,
                      const gp_srv_step_ask *ask, int *place, int *ret_n) {
  (void)s;
  int *fnode = gp_xcalloc((size_t)j->n_alloc, sizeof *fnode), *findex = gp_xcalloc((size_t)j->n_alloc, sizeof *findex);
  const char **fname = gp_xcalloc((size_t)j->n_alloc, sizeof *fname);
  int nf = 0;
  for (int t = 0; t < j->n_alloc; t++) {
    bool busy = j->alloc[t].exited;
    for (int i = 0; j->steps && i < j->steps->n && !busy; i++) {
      const gp_srv_step *p = &j->steps->items[i];
      for (int k = 0; p->exclusive && !p->ended && k < p->n_tasks && !busy; k++)
        busy = !p->tasks[k].done && p->tasks[k].alloc_task == t;
    }
    if (busy) continue;
    fnode[nf] = alloc_node[t];
    fname[nf] = alloc_name[t];
    findex[nf++] = t;
  }
  gp_err err = {0};
  int n = 0, rc = nf > 0 ? gp__srv_step_place(fnode, fname, nf, ask, place, &n, &err) : -1;
  if (!rc)
    for (int i = 0; i < n; i++) place[i] = findex[place[i]];
  if (!rc) *ret_n = n;
  free(fnode);
  free(findex);
  free(fname);
  return rc ? -1 : 0;
}

/* The first step task placed in a job task that has ended, or -1. */
static int ended_task(const gp_srv_job *j, const int *place, int n) {
  for (int i = 0; i < n; i++)
    if (j->alloc[place[i]].exited) return i;
  return -1;
}

static int create(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j, int64_t now, gp_err *err) {
  if (j->state != GP_JOB_RUNNING || j->n_alloc <= 0 || !j->steps) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "job %s is %s: steps run only in a running job",
                        j->idstr, gp_job_state_name(j->state));
    return 0;
  }
  gp_srv_steps *st = j->steps;
  int running = 0;
  for (int i = 0; i < st->n; i++) running += !st->items[i].ended;
  if (st->started >= GP_SRV_STEPS_MAX || st->next_id >= GP_PROTO_MAX_STEPS) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "job %s has started %d steps in this run, the most one run may",
                        j->idstr, st->started);
    return 0;
  }
  if (running >= GP_SRV_STEPS_RUNNING_MAX) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "job %s already runs %d steps at once, the most it may",
                        j->idstr, running);
    return 0;
  }
  gp_srv_step_ask ask = {0};
  const char **names = NULL;
  bool kobe = false, excl = false;
  if (read_request(r, &ask, &names, &kobe, &excl)) {
    free(names);
    return 0;
  }
  int *alloc_node = gp_xcalloc((size_t)j->n_alloc, sizeof *alloc_node);
  const char **alloc_name = gp_xcalloc((size_t)j->n_alloc, sizeof *alloc_name);
  int *place = gp_xcalloc((size_t)j->n_alloc, sizeof *place), n = 0;
  bool placed = true;
  for (int t = 0; t < j->n_alloc; t++) {
    alloc_node[t] = j->alloc[t].node;
    placed = placed && alloc_node[t] >= 0 && alloc_node[t] < s->n_nodes;
    alloc_name[t] = placed ? s->nodes[alloc_node[t]]->name : "";
  }
  gp_err pe = {0};
  int rc = 0;
  if (!placed) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "job %s has a task without a node", j->idstr);
  } else if (gp__srv_step_place(alloc_node, alloc_name, j->n_alloc, &ask, place, &n, &pe)) {
    gp__srv_reply_error(r, 400, "invalid_argument", pe.field[0] ? pe.field : NULL, "%s", pe.message);
  } else if (excl && place_free(s, j, alloc_node, alloc_name, &ask, place, &n)) {
    /* It fits the allocation, not what other --exclusive steps leave of it now: srun waits. */
    gp__srv_reply_error(r, 409, "conflict", "exclusive",
                        "the job's tasks this step needs are held by its other --exclusive steps");
  } else if (ended_task(j, place, n) >= 0) {
    int t = place[ended_task(j, place, n)];
    gp__srv_reply_error(r, 409, "conflict", NULL,
                        "task %d of job %s has ended (exit code %d): a step runs in the job's running tasks "
                        "(ask for fewer with -n/-w, or keep the job's tasks running)",
                        t, j->idstr, j->alloc[t].exit_code);
  } else if (orders_bytes(r->json, alloc_name, place, n) > GP_SRV_STEP_ORDERS_MAX) {
    /* Every step task's order carries the command, the environment and the step's hosts. */
    gp__srv_reply_error(r, 400, "invalid_argument", "env",
                        "a step of %d tasks with this command and environment would queue %zu MiB of "
                        "orders, more than %zu MiB: pass fewer variables (srun --export=NAME,...)",
                        n, orders_bytes(r->json, alloc_name, place, n) >> 20, GP_SRV_STEP_ORDERS_MAX >> 20);
  } else {
    gp_srv_step *p = step_slot(st);
    if (!p) {
      gp__srv_reply_error(r, 409, "conflict", NULL, "job %s already keeps %d running steps", j->idstr, st->n);
    } else {
      p->id = st->next_id++;
      st->started++;
      p->command = json_deep_copy(json_object_get(r->json, "command"));
      p->state = gp_xstrdup("running");
      p->kill_on_bad_exit = kobe;
      p->exclusive = excl;
      p->created_at = now;
      p->polled_ms = gp_mono_ms();
      p->master_port = step_port(j, p->id);
      p->n_tasks = n;
      p->tasks = gp_xcalloc((size_t)n + 1, sizeof *p->tasks);
      for (int i = 0; i < n; i++) {
        p->tasks[i].alloc_task = place[i];
        p->tasks[i].node = gp_xstrdup(alloc_name[place[i]]);
      }
      rc = queue_orders(s, j, p, json_object_get(r->json, "env"), alloc_node, err);
      if (!rc) rc = gp__srv_persist_job(s, j, err);
      if (!rc) {
        json_t *w = json_object();
        json_object_set_new(w, "step", gp__srv_step_json(p));
        gp__srv_reply_json(r, 201, w);
      }
    }
  }
  free(names);
  free(alloc_node);
  free(alloc_name);
  free(place);
  return rc;
}

/* ---- output: the agent's log endpoint, through the log proxy ---- */

static void output(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j, const gp_srv_step *p) {
  static const char *const keys[] = {"task", "stream", "offset", NULL};
  if (!gp__srv_query_known(r, keys, "task, stream and offset")) return;
  const char *stream = gp__srv_req_query(r, "stream"), *off = gp__srv_req_query(r, "offset");
  const char *tv = gp__srv_req_query(r, "task");
  if (!stream) stream = "stdout";
  int64_t offset = 0, task = 0;
  if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
    gp__srv_reply_error(r, 400, "invalid_argument", "stream", "stream must be stdout or stderr");
    return;
  }
  if (off && (gp_parse_int64(off, &offset) || offset < 0)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "offset", "offset must be a byte offset >= 0");
    return;
  }
  if (tv && (gp_parse_int64(tv, &task) || task < 0 || task >= p->n_tasks)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "task", "step %s.%d has tasks 0..%d", j->idstr, p->id,
                        p->n_tasks - 1);
    return;
  }
  gp_srv_node *n = gp__srv_node_get(s, p->tasks[task].node);
  if (!n || !n->agent_url) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "node %s has no agent address",
                        p->tasks[task].node ? p->tasks[task].node : "?");
    return;
  }
  const char *tok = gp__srv_node_agent_token(s, n);
  char url[1200];
  snprintf(url, sizeof url, "%s/logs/%s?stream=%s&offset=%lld&task=%lld&step=%d\n%s", n->agent_url,
           j->idstr, stream, (long long)offset, (long long)task, p->id, tok);
  r->proxy_url = gp_xstrdup(url);
  r->status = 200;
  r->answered = true;
}

int gp__srv_steps_route(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j, const char *rest, int64_t now,
                        gp_err *err) {
  bool get = gp__srv_req_method(r, "GET"), post = gp__srv_req_method(r, "POST");
  /* A step's output is as private as the job's log. */
  if (!allowed(r, j, !get || strstr(rest, "/output"))) {
    if (r->job_key)
      gp__srv_reply_error(r, 403, "permission_denied", NULL,
                          "this step credential is not job %s's current run's", j->idstr);
    else
      gp__srv_reply_error(r, 403, "permission_denied", NULL,
                          "job %s belongs to %s; only its owner, an admin or the job itself runs its steps",
                          j->idstr, j->user);
    return 0;
  }
  static const char *const none[] = {NULL};
  if (!strstr(rest, "/output") && !gp__srv_query_known(r, none, "this route takes none")) return 0;
  if (!*rest) {
    if (post) return create(s, r, j, now, err);
    if (get) {
      json_t *w = json_object(), *list = gp__srv_steps_json(j);
      json_object_set_new(w, "steps", list ? list : json_array());
      gp__srv_reply_json(r, 200, w);
      return 0;
    }
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET or POST on /v1/jobs/{id}/steps");
    return 0;
  }
  int64_t id = -1;
  char num[24];
  const char *slash = strchr(rest + 1, '/');
  size_t len = slash ? (size_t)(slash - rest - 1) : strlen(rest + 1);
  snprintf(num, sizeof num, "%.*s", (int)(len < sizeof num - 1 ? len : sizeof num - 1), rest + 1);
  gp_srv_step *p = rest[0] == '/' && len < sizeof num && !gp_parse_int64(num, &id) && id >= 0 &&
                           id < GP_PROTO_MAX_STEPS
                       ? gp__srv_step_find(j, (int)id)
                       : NULL;
  if (!p) {
    gp__srv_reply_error(r, 404, "not_found", NULL, "job %s keeps no step %.20s", j->idstr, num);
    return 0;
  }
  const char *action = slash ? slash + 1 : "";
  if (r->job_key || r->role == GP_ROLE_ADMIN || (r->user && strcmp(r->user, j->user) == 0))
    p->polled_ms = gp_mono_ms(); /* its srun is still there (steps_tick) */
  if (!*action && get) {
    json_t *w = json_object();
    json_object_set_new(w, "step", gp__srv_step_json(p));
    gp__srv_reply_json(r, 200, w);
    return 0;
  }
  if (strcmp(action, "output") == 0 && get) {
    output(s, r, j, p);
    return 0;
  }
  if (strcmp(action, "cancel") == 0 && post) {
    int rc = gp__srv_step_stop(s, j, p, "cancelled", err);
    if (!rc) rc = gp__srv_persist_job(s, j, err);
    if (rc) return rc;
    json_t *w = json_object();
    json_object_set_new(w, "step", gp__srv_step_json(p));
    gp__srv_reply_json(r, 200, w);
    return 0;
  }
  gp__srv_reply_error(r, 404, "not_found", NULL, "no route %s %s", r->method, r->path);
  return 0;
}
