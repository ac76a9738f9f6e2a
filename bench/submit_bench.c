/* SPDX-License-Identifier: Apache-2.0 */
/* Submission throughput and start-up latency of a running gpool server, through its public
 * HTTP API (issue 3 §5).
 *
 *   bench_submit_bench [--server URL] [--token T] [--clients 16] [--jobs 10000]
 *                      [--queue default] [--command "sleep 3600"] [--wait-started]
 *                      [--timeout 300]
 *
 * N client threads, each with its own keep-alive connection (one libcurl handle per
 * thread, gp_client), POST one-GPU jobs until --jobs have been acknowledged. A 201 means
 * the job is durable (the server commits before answering), so the rate printed is durable
 * submissions per second. Per-request latency is recorded for every submission (p50, p99,
 * max). With --wait-started the program then polls GET /v1/queues until the queue's
 * running_jobs reaches the number submitted and prints the time from the first submission
 * until all had started. Server and token come from the flags, GPOOL_SERVER/GPOOL_TOKEN or
 * client.json, like the CLI. Prints figures; it is a program, not a test. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "util/mem.h"

typedef struct bench {
  const char *server, *token, *queue, *command;
  int clients, jobs, gpus;
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

static void usage(void) {
  fprintf(stderr, "usage: bench_submit_bench [--server URL] [--token T] [--clients N] [--jobs N] [--gpus N]\n"
                  "       [--queue Q] [--command \"sleep 3600\"] [--wait-started] [--timeout S]\n");
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
    gp_client *c = gp_client_new(server, token);
    long running = 0;
    double t_all = -1;
    while (now_s() - b.t0 < b.timeout_s) {
      int ok;
      running = running_jobs(c, b.queue, &ok);
      if (ok && running >= acked) {
        t_all = now_s() - b.t0;
        break;
      }
      struct timespec ts = {0, 20 * 1000000L};
      nanosleep(&ts, NULL);
    }
    if (t_all >= 0) {
      printf("gpool start: all %d jobs running %.3f s after the first submission (%.3f s after the last ack)\n",
             acked, t_all, t_all - t_submit);
    } else {
      printf("gpool start: only %ld of %d jobs running after %.0f s\n", running, acked, b.timeout_s);
      code = 1;
    }
    gp_client_free(c);
  }
  free(sorted);
  free(threads);
  free(b.latency_ms);
  free(server);
  free(token);
  pthread_mutex_destroy(&b.lock);
  return code;
}
