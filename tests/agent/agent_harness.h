/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in gpool server for agent tests: a real HTTP server on 127.0.0.1 (libmicrohttpd)
 * that speaks the agent protocol (register, heartbeat long-poll with orders and gen), records
 * everything the agent sends, and a helper that runs the real `gpool agent` binary against
 * it. Each test uses its own temporary data directory and port. */
#ifndef GP_TEST_AGENT_HARNESS_H
#define GP_TEST_AGENT_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define FS_TOKEN "agent-secret"

typedef struct fake_server {
  struct MHD_Daemon *d;
  int port;
  pthread_mutex_t lock;
  json_t *registers;    /* bodies of register calls */
  json_t *events;       /* every event received */
  json_t *orders;       /* all orders ever queued, in order; ids "o1".. */
  long long acked_gen;  /* the largest gen the agent sent */
  int heartbeats;
  bool resend_all;      /* ignore gen: re-send every order (at-most-once test) */
  const char *reject_kind; /* answer 400 to a heartbeat carrying an event of this kind */
  volatile int stopping;   /* end open long polls at once (fs_stop) */
  int rejected;
  json_t *last_heartbeat;
  char store[40];       /* the store id answered to register and heartbeat; "" for none */
  size_t pad;           /* bytes of padding in every heartbeat answer; 0 for none */
  char answer_error[300]; /* the last answer_error a heartbeat carried; "" for none */
  long long epoch;      /* the leader epoch answered to register and heartbeat; 0: none */
  char redirect[128];   /* a follower: every call is answered 307 to this base URL */
  volatile int register_delay_ms; /* a frozen server: register answered this much later */
  volatile int no_leader;         /* every call is answered 503 with Retry-After: 1 */
  json_t *heartbeat_bodies;       /* every heartbeat taken, in order */
} fake_server;

static int64_t fs_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct fs_req {
  char *body;
  size_t len;
} fs_req;

static enum MHD_Result fs_reply(struct MHD_Connection *c, unsigned status, json_t *doc) {
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

/* Orders with id number > gen. */
static inline json_t *fs_pending_orders(fake_server *s, long long gen, long long *ret_gen) {
  json_t *out = json_array();
  size_t i;
  json_t *o;
  long long g = gen;
  json_array_foreach(s->orders, i, o) {
    long long n = atoll(json_string_value(json_object_get(o, "id")) + 1);
    if (n > gen || s->resend_all) {
      json_array_append(out, o);
      if (n > g) g = n;
    }
  }
  *ret_gen = g;
  return out;
}

static enum MHD_Result fs_handle(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **state) {
  fake_server *s = cls;
  fs_req *req = *state;
  if (!req) {
    req = calloc(1, sizeof *req);
    *state = req;
    return MHD_YES;
  }
  if (*upload_size) {
    req->body = realloc(req->body, req->len + *upload_size + 1);
    memcpy(req->body + req->len, upload, *upload_size);
    req->len += *upload_size;
    req->body[req->len] = '\0';
    *upload_size = 0;
    return MHD_YES;
  }
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  if (!auth || strcmp(auth, "Bearer " FS_TOKEN) != 0) {
    json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", "unauthenticated", "message", "bad token");
    return fs_reply(c, 401, e);
  }
  if (s->no_leader) {
    json_t *e = json_pack("{s:{s:s,s:s}}", "error", "code", "no_leader", "message", "no leader");
    char *text = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Retry-After", "1");
    enum MHD_Result ok = MHD_queue_response(c, 503, r);
    MHD_destroy_response(r);
    return ok;
  }
  if (s->redirect[0]) {
    char location[300];
    snprintf(location, sizeof location, "%s%s", s->redirect, url);
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Location", location);
    enum MHD_Result ok = MHD_queue_response(c, 307, r);
    MHD_destroy_response(r);
    return ok;
  }
  json_error_t je;
  json_t *body = req->body ? json_loads(req->body, 0, &je) : NULL;
  if (strcmp(url, "/v1/agent/register") == 0) {
    pthread_mutex_lock(&s->lock);
    json_array_append(s->registers, body);
    pthread_mutex_unlock(&s->lock);
    json_decref(body);
    for (int64_t until = fs_now_ms() + s->register_delay_ms; fs_now_ms() < until && !s->stopping;)
      usleep(5000);
    json_t *ans = json_pack("{s:{s:s},s:i}", "node", "name", "n", "heartbeat_s", 2);
    pthread_mutex_lock(&s->lock);
    if (s->store[0]) json_object_set_new(ans, "store", json_string(s->store));
    if (s->epoch) json_object_set_new(ans, "epoch", json_integer(s->epoch));
    pthread_mutex_unlock(&s->lock);
    return fs_reply(c, 200, ans);
  }
  if (strcmp(url, "/v1/agent/heartbeat") == 0) {
    long long gen = json_integer_value(json_object_get(body, "gen"));
    long long wait_ms = json_integer_value(json_object_get(body, "wait_ms"));
    json_t *evs = json_object_get(body, "events");
    size_t k;
    json_t *e;
    json_array_foreach(evs, k, e) {
      const char *kind = json_string_value(json_object_get(e, "kind"));
      if (s->reject_kind && kind && strcmp(kind, s->reject_kind) == 0) {
        pthread_mutex_lock(&s->lock);
        s->rejected++;
        pthread_mutex_unlock(&s->lock);
        json_decref(body);
        return fs_reply(c, 400, json_pack("{s:{s:s,s:s,s:s}}", "error", "code", "invalid_argument",
                                          "message", "unknown event kind", "field", "events"));
      }
    }
    pthread_mutex_lock(&s->lock);
    s->heartbeats++;
    if (gen > s->acked_gen) s->acked_gen = gen;
    json_array_extend(s->events, evs);
    json_decref(s->last_heartbeat);
    s->last_heartbeat = json_incref(body);
    json_array_append(s->heartbeat_bodies, body);
    const char *said = json_string_value(json_object_get(body, "answer_error"));
    if (said) snprintf(s->answer_error, sizeof s->answer_error, "%s", said);
    pthread_mutex_unlock(&s->lock);
    bool had_events = json_array_size(evs) > 0;
    json_decref(body);
    int64_t until = fs_now_ms() + (wait_ms > 1500 ? 1500 : wait_ms);
    for (;;) {
      long long g2 = gen;
      pthread_mutex_lock(&s->lock);
      json_t *orders = fs_pending_orders(s, gen, &g2);
      pthread_mutex_unlock(&s->lock);
      if (json_array_size(orders) > 0 || had_events || fs_now_ms() >= until || s->stopping) {
        json_t *ans = json_pack("{s:I,s:o}", "gen", g2, "orders", orders);
        pthread_mutex_lock(&s->lock);
        if (s->store[0]) json_object_set_new(ans, "store", json_string(s->store));
        if (s->epoch) json_object_set_new(ans, "epoch", json_integer(s->epoch));
        if (s->pad) {
          char *pad = malloc(s->pad + 1);
          memset(pad, 'x', s->pad);
          pad[s->pad] = '\0';
          json_object_set_new(ans, "padding", json_string(pad));
          free(pad);
        }
        pthread_mutex_unlock(&s->lock);
        return fs_reply(c, 200, ans);
      }
      json_decref(orders);
      usleep(5000);
    }
  }
  json_decref(body);
  return fs_reply(c, 404, json_pack("{s:{s:s,s:s}}", "error", "code", "not_found", "message", url));
}

static inline void fs_done(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode t) {
  fs_req *req = *state;
  if (req) free(req->body);
  free(req);
  *state = NULL;
}

static inline fake_server *fs_start(void) {
  fake_server *s = calloc(1, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
  s->registers = json_array();
  s->events = json_array();
  s->orders = json_array();
  s->heartbeat_bodies = json_array();
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
                          NULL, fs_handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                          MHD_OPTION_NOTIFY_COMPLETED, fs_done, s, MHD_OPTION_END);
  REQUIRE(s->d);
  s->port = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT)->port;
  return s;
}

/* Queues an order (its id is assigned here) and returns the id. */
static inline const char *fs_order(fake_server *s, json_t *order /* owned */) {
  pthread_mutex_lock(&s->lock);
  char id[32];
  snprintf(id, sizeof id, "o%zu", json_array_size(s->orders) + 1);
  json_object_set_new(order, "id", json_string(id));
  json_array_append_new(s->orders, order);
  const char *ret = json_string_value(json_object_get(order, "id"));
  pthread_mutex_unlock(&s->lock);
  return ret;
}

/* Waits for an event of `kind` about `job` (NULL: any); returns a new reference or NULL. */
static inline json_t *fs_wait_event(fake_server *s, const char *kind, const char *job, int timeout_ms) {
  int64_t until = fs_now_ms() + timeout_ms;
  do {
    pthread_mutex_lock(&s->lock);
    size_t i;
    json_t *ev;
    json_array_foreach(s->events, i, ev) {
      const char *k = json_string_value(json_object_get(ev, "kind"));
      const char *j = json_string_value(json_object_get(ev, "job"));
      if (k && strcmp(k, kind) == 0 && (!job || (j && strcmp(j, job) == 0))) {
        json_incref(ev);
        pthread_mutex_unlock(&s->lock);
        return ev;
      }
    }
    pthread_mutex_unlock(&s->lock);
    usleep(10000);
  } while (fs_now_ms() < until);
  return NULL;
}

static inline int fs_count_events(fake_server *s, const char *kind, const char *job) {
  int n = 0;
  pthread_mutex_lock(&s->lock);
  size_t i;
  json_t *ev;
  json_array_foreach(s->events, i, ev) {
    const char *k = json_string_value(json_object_get(ev, "kind"));
    const char *j = json_string_value(json_object_get(ev, "job"));
    if (k && strcmp(k, kind) == 0 && (!job || (j && strcmp(j, job) == 0))) n++;
  }
  pthread_mutex_unlock(&s->lock);
  return n;
}

/* Waits for the n-th (1-based) register call; returns a new reference or NULL. */
static inline json_t *fs_wait_register(fake_server *s, size_t n, int timeout_ms) {
  int64_t until = fs_now_ms() + timeout_ms;
  do {
    pthread_mutex_lock(&s->lock);
    json_t *r = json_array_size(s->registers) >= n ? json_incref(json_array_get(s->registers, n - 1)) : NULL;
    pthread_mutex_unlock(&s->lock);
    if (r) return r;
    usleep(10000);
  } while (fs_now_ms() < until);
  return NULL;
}

static inline void fs_stop(fake_server *s) {
  s->stopping = 1;
  MHD_stop_daemon(s->d);
  json_decref(s->registers);
  json_decref(s->events);
  json_decref(s->orders);
  json_decref(s->last_heartbeat);
  json_decref(s->heartbeat_bodies);
  free(s);
}

/* ---- the agent under test ---- */

typedef struct agent_proc {
  pid_t pid;
  char data[256];
  char log[300];
} agent_proc;

static inline void tmpdir(char *buf, size_t size) {
  snprintf(buf, size, "/tmp/gpool-agent-test-XXXXXX");
  REQUIRE(mkdtemp(buf));
}

/* Runs `gpool agent` with the fake server, node "n1", --sim spec, --data dir and any extra
 * flags (NULL-terminated). */
static inline void agent_spawn(agent_proc *ap, fake_server *s, const char *sim, ...) {
  const char *bin = getenv("GPOOL_BIN");
  REQUIRE(bin);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
  const char *argv[64];
  int n = 0;
  argv[n++] = bin;
  argv[n++] = "agent";
  argv[n++] = "--server";
  argv[n++] = url;
  argv[n++] = "--token";
  argv[n++] = FS_TOKEN;
  argv[n++] = "--name";
  argv[n++] = "n1";
  argv[n++] = "--sim";
  argv[n++] = sim;
  argv[n++] = "--data";
  argv[n++] = ap->data;
  argv[n++] = "--cgroup-root";
  argv[n++] = "/nonexistent/gpool-test-cgroup";
  va_list va;
  va_start(va, sim);
  const char *x;
  while ((x = va_arg(va, const char *)) && n < 62) argv[n++] = x;
  va_end(va);
  argv[n] = NULL;
  snprintf(ap->log, sizeof ap->log, "%s.log", ap->data);
  fflush(NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = open(ap->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 2);
    dup2(fd, 1);
    setenv("ASAN_OPTIONS", "detect_leaks=1", 0);
    execv(bin, (char **)argv);
    _exit(127);
  }
  ap->pid = pid;
}

/* Runs an agent in a fresh data directory; the extra flags end with the first NULL. */
#define agent_new(ap, s, sim, ...)                        \
  do {                                                    \
    tmpdir((ap)->data, sizeof (ap)->data);                \
    agent_spawn((ap), (s), (sim), __VA_ARGS__, NULL);     \
  } while (0)

/* Stops the agent gracefully and checks it exited cleanly (ASan would say otherwise). */
static inline void agent_stop(agent_proc *ap) {
  if (ap->pid <= 0) return;
  kill(ap->pid, SIGTERM);
  int st = 0;
  waitpid(ap->pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "tail -n 30 %s >&2", ap->log);
    if (system(cmd)) {}
  }
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ap->pid = 0;
}

static inline void agent_kill9(agent_proc *ap) {
  kill(ap->pid, SIGKILL);
  int st;
  waitpid(ap->pid, &st, 0);
  ap->pid = 0;
}

static inline void rm_rf(const char *dir) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.log'", dir, dir);
  if (system(cmd)) {}
}

/* A start order for job `id` running `sh -c script` on GPU `gpu` (-1: none). */
static inline json_t *start_order(const char *id, const char *script, int gpu) {
  json_t *job = json_pack("{s:s,s:s,s:s,s:s,s:[s,s,s],s:i,s:i,s:[s]}", "id", id, "name", "t",
                          "queue", "default", "user", "tester", "command", "sh", "-c", script,
                          "task_index", 0, "tasks", 1, "hosts", "n1");
  json_t *pl = json_array();
  if (gpu >= 0)
    json_array_append_new(pl, json_pack("{s:s,s:[i],s:i}", "node", "n1", "gpu_ids", gpu,
                                        "gpu_milli", 1000));
  json_object_set_new(job, "placements", pl);
  return json_pack("{s:s,s:o}", "kind", "start", "job", job);
}

static inline char *read_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char *buf = calloc(1, 65536);
  size_t n = fread(buf, 1, 65535, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static inline char *job_file(agent_proc *ap, const char *job, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/jobs/%s/%s", ap->data, job, name);
  return read_text(path);
}

#endif
