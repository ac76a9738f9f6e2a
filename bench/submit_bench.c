/* SPDX-License-Identifier: Apache-2.0 */
/* Submission throughput and start-up latency of a running gpool server, through its public
 * HTTP API (issue 3 §5).
 *
 *   bench_submit_bench [--server URL[,URL...]] [--token T] [--clients 16] [--jobs 10000]
 *                      [--queue default] [--command "sleep 3600"] [--wait-started]
 *                      [--timeout 300] [--hold S]
 *
 * N client threads, each with its own keep-alive connection (one libcurl handle per
 * thread, gp_client), POST one-GPU jobs until --jobs have been acknowledged. A 201 means
 * the job is durable (the server commits before answering), so the rate printed is durable
 * submissions per second. Per-request latency is recorded for every submission (p50, p99,
 * max). With --wait-started the program then polls GET /v1/queues until the queue's
 * running_jobs reaches the number submitted and prints the time from the first submission
 * until all had started. Server and token come from the flags, GPOOL_SERVER/GPOOL_TOKEN or
 * client.json, like the CLI. Prints figures; it is a program, not a test.
 *
 * --fake-nodes N --agent-token T: before submitting, the program registers N simulated
 * 8-GPU nodes (fake-1..fake-N) over the agent protocol (docs/internals/protocol.md) and
 * serves them from --agent-threads threads: each heartbeats its nodes (wait_ms 0),
 * acknowledges the orders' generation and answers every start order with a `started`
 * event, as an agent does after fork/exec, but without forking: a 2-core machine cannot run
 * 10,000 processes and 1,250 agents. What is measured is the server's whole path: durable
 * submission, scheduling, persisting the plan, handing orders to agents, recording starts.
 *
 * --hold S keeps the fake fleet heartbeating for S seconds at two moments, each announced
 * on stdout (flushed) so a script can measure the server meanwhile (bench/server_scale.sh):
 * "hold: fleet up" once every node is up, before any submission, and "hold: steady" after
 * the submissions (and, with --wait-started, the starts), when nothing changes any more. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "util/mem.h"
#include "tls/digest.h"

typedef struct fake_node {
  char name[32];
  long long gen;
  json_t *events;        /* to send with the next heartbeat */
  json_t *seen;          /* order ids already executed (orders are re-sent until acked) */
  json_t *running;       /* job id -> true: what this node runs, listed in every heartbeat, as
                            the server checks it against what it placed here */
} fake_node;

typedef struct bench {
  const char *server, *token, *queue, *command, *agent_token;
  int clients, jobs, gpus, fake_nodes, agent_threads;
  fake_node *nodes;
  atomic_int stop_agents;
  atomic_long orders_started;
  atomic_long heartbeats;   /* answered, by all fake agents */
  atomic_int agent_errors;
  char agent_error[600];
  double timeout_s;
  atomic_int next;       /* index of the next job to submit */
  atomic_int acked;
  atomic_int failed;
  double *latency_ms;    /* per job */
  double t0;             /* first submission */
  char first_error[600];
  pthread_mutex_t lock;
} bench;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_t *job_body(const bench *b, int i) {
  json_t *cmd = json_array();
  char *copy = gp_xstrdup(b->command), *save = NULL;
  for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) json_array_append_new(cmd, json_string(w));
  free(copy);
  char name[32];
  snprintf(name, sizeof name, "bench-%d", i);
  json_t *body = json_pack("{s:o, s:s, s:i}", "command", cmd, "name", name, "gpus", b->gpus);
  if (b->queue) json_object_set_new(body, "queue", json_string(b->queue));
  return body;
}

static void *client_main(void *arg) {
  bench *b = arg;
  gp_client *c = gp_client_new(b->server, b->token);
  if (!c) return NULL;
  for (;;) {
    int i = atomic_fetch_add(&b->next, 1);
    if (i >= b->jobs) break;
    json_t *body = job_body(b, i);
    gp_err err = {0};
    double t = now_s();
    int rc = gp_client_call(c, "POST", "/v1/jobs", body, NULL, NULL, &err);
    b->latency_ms[i] = (now_s() - t) * 1000.0;
    json_decref(body);
    if (rc) {
      atomic_fetch_add(&b->failed, 1);
      pthread_mutex_lock(&b->lock);
      if (!b->first_error[0]) snprintf(b->first_error, sizeof b->first_error, "%s", err.message);
      pthread_mutex_unlock(&b->lock);
      b->latency_ms[i] = -1;
    } else {
      atomic_fetch_add(&b->acked, 1);
    }
  }
  gp_client_free(c);
  return NULL;
}


/* ---- fake agents ---- */

static json_t *fake_node_json(const char *name, int index) {
  json_t *gpus = json_array(), *domain = json_array();
  for (int g = 0; g < 8; g++) {
    char uuid[64];
    snprintf(uuid, sizeof uuid, "GPU-fa4e0000-0000-4000-8000-%06d%06d", index, g);
    json_array_append_new(gpus, json_pack("{s:i, s:s, s:s, s:s, s:i}", "index", g, "uuid", uuid,
                                          "health", "healthy", "mode", "exclusive", "mem_mib", 81559));
    json_array_append_new(domain, json_integer(g));
  }
  return json_pack("{s:s, s:s, s:i, s:i, s:i, s:{}, s:s, s:[o], s:o}", "name", name, "model", "H100-80GB",
                   "gpus", 8, "cpus", 64, "mem_mib", 1024000, "labels", "capacity", "on-demand",
                   "nvlink_domains", domain, "gpu_list", gpus);
}

static void agent_fail(bench *b, const char *what, const gp_err *err) {
  atomic_fetch_add(&b->agent_errors, 1);
  pthread_mutex_lock(&b->lock);
  if (!b->agent_error[0]) snprintf(b->agent_error, sizeof b->agent_error, "%s: %s", what, err->message);
  pthread_mutex_unlock(&b->lock);
}

static int fake_register(bench *b, gp_client *c, int i) {
  fake_node *n = &b->nodes[i];
  char cred[GP_TLS_SHA256_HEX_MAX]; /* each fake node's own credential: its name's hash */
  gp_tls_sha256_hex(n->name, strlen(n->name), cred);
  json_t *body = json_pack("{s:o, s:s, s:[], s:s}", "node", fake_node_json(n->name, i), "agent_url",
                           "http://127.0.0.1:9", "jobs", "credential", cred);
  gp_err err = {0};
  int rc = gp_client_call(c, "POST", "/v1/agent/register", body, NULL, NULL, &err);
  json_decref(body);
  if (rc) agent_fail(b, "register", &err);
  n->gen = 0;
  return rc;
}

typedef struct agent_thread {
  bench *b;
  int first, count;
} agent_thread;

static void *agent_main(void *arg) {
  agent_thread *t = arg;
  bench *b = t->b;
  gp_client *c = gp_client_new(b->server, b->agent_token);
  for (int i = t->first; i < t->first + t->count; i++) fake_register(b, c, i);
  while (!atomic_load(&b->stop_agents)) {
    int busy = 0;
    for (int i = t->first; i < t->first + t->count && !atomic_load(&b->stop_agents); i++) {
      fake_node *n = &b->nodes[i];
      char cred[GP_TLS_SHA256_HEX_MAX];
      gp_tls_sha256_hex(n->name, strlen(n->name), cred);
      json_t *jobs = json_array();
      const char *running_id;
      json_t *unused;
      json_object_foreach(n->running, running_id, unused)
        json_array_append_new(jobs, json_pack("{s:s}", "id", running_id));
      json_t *body = json_pack("{s:s, s:I, s:i, s:O, s:[], s:o, s:s}", "node", n->name, "gen",
                               (json_int_t)n->gen, "wait_ms", 0, "events", n->events, "gpus", "jobs",
                               jobs, "credential", cred);
      json_t *answer = NULL;
      gp_err err = {0};
      long status = 0;
      int rc = gp_client_call(c, "POST", "/v1/agent/heartbeat", body, &answer, &status, &err);
      json_decref(body);
      if (rc) {
        if (status == 404 || status == 409) fake_register(b, c, i); /* as the protocol says */
        else agent_fail(b, "heartbeat", &err);
        continue;
      }
      atomic_fetch_add(&b->heartbeats, 1);
      json_array_clear(n->events);
      json_t *gen = json_object_get(answer, "gen");
      if (json_is_integer(gen)) n->gen = json_integer_value(gen);
      size_t k;
      json_t *order;
      json_array_foreach(json_object_get(answer, "orders"), k, order) {
        const char *id = json_string_value(json_object_get(order, "id"));
        const char *kind = json_string_value(json_object_get(order, "kind"));
        if (!id || !kind || json_object_get(n->seen, id)) continue;
        json_object_set_new(n->seen, id, json_true());
        json_t *job = json_object_get(order, "job");
        const char *job_id = json_is_object(job) ? json_string_value(json_object_get(job, "id")) : json_string_value(job);
        if (!job_id) continue;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (!strcmp(kind, "start")) {
          json_array_append_new(n->events, json_pack("{s:s, s:s, s:I, s:i}", "kind", "started", "job", job_id,
                                                     "at", (json_int_t)ts.tv_sec, "pid", (int)getpid()));
          atomic_fetch_add(&b->orders_started, 1);
          json_object_set_new(n->running, job_id, json_true());
        } else if (!strcmp(kind, "stop")) {
          json_object_del(n->running, job_id);
          json_array_append_new(n->events, json_pack("{s:s, s:s, s:I, s:i, s:n, s:s}", "kind", "exited", "job", job_id,
                                                     "at", (json_int_t)ts.tv_sec, "exit_code", 0, "signal", "reason", "killed"));
        }
        busy = 1;
      }
      if (json_array_size(n->events)) busy = 1;
      json_decref(answer);
    }
    if (!busy) {
      struct timespec ts = {0, 20 * 1000000L}; /* an idle round: leave the CPU to the server */
      nanosleep(&ts, NULL);
    }
  }
  gp_client_free(c);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* running_jobs of the bench's queue (or of all leaf queues without --queue). */
static long running_jobs(gp_client *c, const char *queue, int *ret_ok) {
  json_t *answer = NULL;
  gp_err err = {0};
  *ret_ok = 0;
  if (gp_client_call(c, "GET", "/v1/queues", NULL, &answer, NULL, &err)) return 0;
  long total = 0;
  size_t i;
  json_t *q;
  json_array_foreach(json_object_get(answer, "queues"), i, q) {
    const char *name = json_string_value(json_object_get(q, "name"));
    json_t *parent = json_object_get(q, "parent");
    bool top = !json_is_string(parent) || !*json_string_value(parent);
    if (queue ? (name && !strcmp(name, queue)) : top)
      total += (long)json_number_value(json_object_get(q, "running_jobs"));
  }
  json_decref(answer);
  *ret_ok = 1;
  return total;
}

/* Keeps the fleet (served by its own threads) running for `s` seconds, announced, and
 * says how many heartbeats the server answered meanwhile. */
static void hold(bench *b, double s, const char *moment) {
  if (s <= 0) return;
  printf("hold: %s, for %.0f s\n", moment, s);
  fflush(stdout);
  long beats = atomic_load(&b->heartbeats);
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
  beats = atomic_load(&b->heartbeats) - beats;
  printf("hold: %s, done (%ld heartbeats answered, %.0f/s)\n", moment, beats, (double)beats / s);
  fflush(stdout);
}

static void usage(void) {
  fprintf(stderr, "usage: bench_submit_bench [--server URL[,URL...]] [--token T] [--clients N] [--jobs N] [--gpus N]\n"
                  "       [--queue Q] [--command \"sleep 3600\"] [--wait-started] [--timeout S]\n"
                  "       [--fake-nodes N --agent-token T [--agent-threads K]] [--hold S]\n");
}

int main(int argc, char **argv) {
  bench b;
  memset(&b, 0, sizeof b);
  b.clients = 16;
  b.jobs = 10000;
  b.gpus = 1;
  b.command = "sleep 3600";
  b.timeout_s = 300;
  bool wait_started = false;
  double hold_s = 0;
  const char *flag_server = NULL, *flag_token = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--wait-started")) { wait_started = true; continue; }
    if (!v) { usage(); return 2; }
    if (!strcmp(a, "--server")) flag_server = v;
    else if (!strcmp(a, "--token")) flag_token = v;
    else if (!strcmp(a, "--clients")) b.clients = atoi(v);
    else if (!strcmp(a, "--jobs")) b.jobs = atoi(v);
    else if (!strcmp(a, "--gpus")) b.gpus = atoi(v);
    else if (!strcmp(a, "--queue")) b.queue = v;
    else if (!strcmp(a, "--command")) b.command = v;
    else if (!strcmp(a, "--timeout")) b.timeout_s = atof(v);
    else if (!strcmp(a, "--fake-nodes")) b.fake_nodes = atoi(v);
    else if (!strcmp(a, "--agent-token")) b.agent_token = v;
    else if (!strcmp(a, "--agent-threads")) b.agent_threads = atoi(v);
    else if (!strcmp(a, "--hold")) hold_s = atof(v);
    else { usage(); return 2; }
    i++;
  }
  if (b.clients < 1 || b.clients > 1024 || b.jobs < 1 || b.jobs > 10000000) { usage(); return 2; }
  char *server = NULL, *token = NULL;
  gp_err err = {0};
  if (gp_client_resolve(flag_server, flag_token, &server, &token, &err)) {
    fprintf(stderr, "bench: %s\n", err.message);
    return 2;
  }
  b.server = server;
  b.token = token;
  b.latency_ms = gp_xcalloc((size_t)b.jobs, sizeof *b.latency_ms);
  pthread_mutex_init(&b.lock, NULL);

  /* The fake fleet registers (untimed) before the first submission. */
  pthread_t *agents = NULL;
  agent_thread *agent_args = NULL;
  if (b.fake_nodes > 0) {
    if (!b.agent_token || b.fake_nodes > 100000) { usage(); return 2; }
    if (b.agent_threads < 1) b.agent_threads = 4;
    b.nodes = gp_xcalloc((size_t)b.fake_nodes, sizeof *b.nodes);
    for (int i = 0; i < b.fake_nodes; i++) {
      snprintf(b.nodes[i].name, sizeof b.nodes[i].name, "fake-%d", i + 1);
      b.nodes[i].events = json_array();
      b.nodes[i].seen = json_object();
      b.nodes[i].running = json_object();
    }
    agents = gp_xcalloc((size_t)b.agent_threads, sizeof *agents);
    agent_args = gp_xcalloc((size_t)b.agent_threads, sizeof *agent_args);
    int per = (b.fake_nodes + b.agent_threads - 1) / b.agent_threads;
    double t_reg = now_s();
    for (int i = 0; i < b.agent_threads; i++) {
      agent_args[i].b = &b;
      agent_args[i].first = i * per;
      agent_args[i].count = i * per + per > b.fake_nodes ? b.fake_nodes - i * per : per;
      if (agent_args[i].count < 0) agent_args[i].count = 0;
      pthread_create(&agents[i], NULL, agent_main, &agent_args[i]);
    }
    /* Wait until the server lists every fake node as up. */
    gp_client *c = gp_client_new(server, token);
    int up = 0;
    while (now_s() - t_reg < b.timeout_s) {
      json_t *answer = NULL;
      gp_err e = {0};
      up = 0;
      if (gp_client_call(c, "GET", "/v1/nodes", NULL, &answer, NULL, &e) == 0) {
        size_t k;
        json_t *n;
        json_array_foreach(json_object_get(answer, "nodes"), k, n) {
          const char *name = json_string_value(json_object_get(n, "name"));
          const char *st = json_string_value(json_object_get(n, "state"));
          if (name && !strncmp(name, "fake-", 5) && st && !strcmp(st, "up")) up++;
        }
        json_decref(answer);
      }
      if (up >= b.fake_nodes) break;
      struct timespec ts = {0, 100 * 1000000L};
      nanosleep(&ts, NULL);
    }
    gp_client_free(c);
    printf("fleet: %d of %d simulated 8-GPU nodes up (%d GPUs) after %.2f s, served by %d fake-agent threads\n",
           up, b.fake_nodes, 8 * up, now_s() - t_reg, b.agent_threads);
    if (atomic_load(&b.agent_errors)) printf("fleet: %d agent-protocol errors; first: %s\n", atomic_load(&b.agent_errors), b.agent_error);
    fflush(stdout);
    hold(&b, hold_s, "fleet up");
  }

  pthread_t *threads = gp_xcalloc((size_t)b.clients, sizeof *threads);
  b.t0 = now_s();
  for (int i = 0; i < b.clients; i++) pthread_create(&threads[i], NULL, client_main, &b);
  for (int i = 0; i < b.clients; i++) pthread_join(threads[i], NULL);
  double t_submit = now_s() - b.t0;
  int acked = atomic_load(&b.acked), failed = atomic_load(&b.failed);

  double *sorted = gp_xcalloc((size_t)b.jobs, sizeof *sorted);
  int n = 0;
  for (int i = 0; i < b.jobs; i++)
    if (b.latency_ms[i] >= 0) sorted[n++] = b.latency_ms[i];
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
  double p50 = n ? sorted[n / 2] : 0, p99 = n ? sorted[(int)((n - 1) * 0.99)] : 0, max = n ? sorted[n - 1] : 0;
  printf("gpool submit: %d jobs acknowledged (durable) by %d clients over keep-alive HTTP in %.3f s: "
         "%.0f submissions/s; latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
         acked, b.clients, t_submit, acked / t_submit, p50, p99, max);
  if (failed) printf("gpool submit: %d submissions failed; first error: %s\n", failed, b.first_error);
  fflush(stdout);

  int code = failed ? 1 : 0;
  if (wait_started && acked) {
    /* Two moments: the server has every job running (placed, persisted, start ordered),
     * and, with the fake fleet, the agents have received every start order (and answer it
     * with a started event). The second is the one comparable to a job being started. */
    gp_client *c = gp_client_new(server, token);
    long running = 0;
    double t_all = -1, t_orders = -1;
    while (now_s() - b.t0 < b.timeout_s) {
      int ok;
      if (t_all < 0) {
        running = running_jobs(c, b.queue, &ok);
        if (ok && running >= acked) t_all = now_s() - b.t0;
      }
      if (t_orders < 0 && agents && atomic_load(&b.orders_started) >= acked) t_orders = now_s() - b.t0;
      if (t_all >= 0 && (!agents || t_orders >= 0)) break;
      struct timespec ts = {0, 5 * 1000000L};
      nanosleep(&ts, NULL);
    }
    if (t_all >= 0) {
      printf("gpool start: all %d jobs running on the server %.3f s after the first submission (%.3f s after the last ack)\n",
             acked, t_all, t_all - t_submit);
    } else {
      printf("gpool start: only %ld of %d jobs running after %.0f s\n", running, acked, b.timeout_s);
      code = 1;
    }
    if (agents && t_orders >= 0)
      printf("gpool start: all %d start orders received by the agents %.3f s after the first submission\n", acked, t_orders);
    else if (agents) {
      printf("gpool start: agents received only %ld of %d start orders after %.0f s\n", atomic_load(&b.orders_started),
             acked, b.timeout_s);
      code = 1;
    }
    gp_client_free(c);
  }
  if (agents) {
    hold(&b, hold_s, "steady");
    atomic_store(&b.stop_agents, 1);
    for (int i = 0; i < b.agent_threads; i++) pthread_join(agents[i], NULL);
    printf("fleet: %ld start orders answered with a started event; %d agent-protocol errors%s%s\n",
           atomic_load(&b.orders_started), atomic_load(&b.agent_errors),
           b.agent_error[0] ? "; first: " : "", b.agent_error);
    for (int i = 0; i < b.fake_nodes; i++) {
      json_decref(b.nodes[i].events);
      json_decref(b.nodes[i].seen);
      json_decref(b.nodes[i].running);
    }
    free(b.nodes);
    free(agents);
    free(agent_args);
  }
  free(sorted);
  free(threads);
  free(b.latency_ms);
  free(server);
  free(token);
  pthread_mutex_destroy(&b.lock);
  return code;
}
