/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's own HTTP endpoint (libmicrohttpd, a small thread pool of its own):
 *   GET /healthz                              liveness, node name, registration;
 *   GET /metrics                              Prometheus text;
 *   GET /logs/{job}?stream=stdout&offset=N&task=T  a bounded chunk of a task's log as
 *       {"data": "...", "offset": next, "eof": bool}, for the server's log proxy;
 *   GET /sessions/{job}?task=T                 a WebSocket session in a job task (session.h).
 * /logs needs the agent's bearer token (job output is private). The handlers read files and
 * the counters under stats_lock only, never the run loop's job table. Log bytes that are not
 * UTF-8 become U+FFFD so the answer is valid JSON; offsets always count file bytes.
 * Its limits keep one client from shutting the server's log reads out: AGENT_HTTP_THREADS
 * threads, AGENT_HTTP_MAX_CONNS connections of which AGENT_HTTP_PER_ADDRESS from one
 * address, and AGENT_HTTP_IDLE_S seconds of silence before a connection is closed. The
 * limits make room rather than refuse (tls/conns.h): a new connection past them closes the
 * oldest idle one of its address, and connections that carried the server's log reads
 * (the agent's token) do not count against their address, so a local flood cannot shut
 * the server out even when the server reads from the same address (a one-machine pool). */
#include "agent/agent_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/metrics.h"
#include "agent/session.h"
#include "tls/conns.h"
#include "tls/listen.h"
#include "util/secret.h"
#include "util/buf.h"
#include "util/units.h"

#define LOG_CHUNK_DEFAULT (64 * 1024)
#define LOG_CHUNK_MAX (1024 * 1024)
#define AGENT_HTTP_THREADS 4
#define AGENT_HTTP_MAX_CONNS 512
#define AGENT_HTTP_PER_ADDRESS 32
#define AGENT_HTTP_IDLE_S 10

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body /* owned */, size_t len) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *doc) {
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  return reply(c, status, "application/json", text, strlen(text));
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                                   const char *field, const char *message) {
  json_t *e = json_object();
  json_object_set_new(e, "code", json_string(code));
  json_object_set_new(e, "message", json_string(message));
  if (field) json_object_set_new(e, "field", json_string(field));
  json_t *doc = json_object();
  json_object_set_new(doc, "error", e);
  return reply_json(c, status, doc);
}

/* Length of the valid UTF-8 sequence at p (1-4), 0 if invalid, -1 if cut off by the end. */
static int utf8_seq(const unsigned char *p, size_t left) {
  unsigned char c = p[0];
  int n;
  unsigned min;
  unsigned cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) n = 2, min = 0x80, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, min = 0x800, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, min = 0x10000, cp = c & 0x07;
  else return 0;
  for (int i = 1; i < n; i++) {
    if ((size_t)i >= left) return -1;
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/* Turns raw bytes into valid UTF-8; stops before a sequence cut off by the chunk's end
 * (unless `final`), returning how many input bytes were consumed. */
static size_t to_utf8(const unsigned char *in, size_t n, bool final, gp_buf *out) {
  size_t i = 0;
  while (i < n) {
    int k = utf8_seq(in + i, n - i);
    if (k < 0 && !final) break;
    if (k <= 0 || in[i] == 0) {
      gp_buf_append(out, "\xEF\xBF\xBD", 3); /* U+FFFD (NUL too: JSON strings would carry it) */
      i++;
      continue;
    }
    gp_buf_append(out, (const char *)in + i, (size_t)k);
    i += (size_t)k;
  }
  return i;
}

/* The task a request names (?task=T, 0 when absent) as its directory's name, or false for
 * a task that is not an index. */
static bool task_dir_name(struct MHD_Connection *c, const char *id, char *key, size_t size) {
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "task");
  int64_t task = 0;
  if (v && (gp_parse_int64(v, &task) != 0 || task < 0 || task >= GP_PROTO_MAX_TASKS)) return false;
  gp__agent_job_key(id, (int)task, key, size);
  return true;
}

static bool job_ended(const char *dir) {
  char path[800];
  snprintf(path, sizeof path, "%s/exit", dir);
  if (access(path, F_OK) == 0) return true;
  snprintf(path, sizeof path, "%s/end.json", dir);
  return access(path, F_OK) == 0;
}

static enum MHD_Result serve_logs(gp_agent *a, struct MHD_Connection *c, const char *id) {
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  char want[600];
  snprintf(want, sizeof want, "Bearer %s", a->cfg.token);
  if (!auth || !gp_secret_equal(auth, want))
    return reply_error(c, 401, "unauthenticated", NULL, "a valid agent token is required");
  char why[400]; /* with tls.client_ca, only the server's certificate reads logs */
  if (gp_tls_listener_check_client(a->tls, c, why, sizeof why))
    return reply_error(c, 401, "unauthenticated", NULL, why);
  gp_tls_conns_trust(c); /* the server's: its own allowance */
  if (!gp__agent_job_id_valid(id)) return reply_error(c, 400, "invalid_argument", "job", "bad job id");
  const char *stream = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "stream");
  if (!stream) stream = "stdout";
  if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
    return reply_error(c, 400, "invalid_argument", "stream", "stream must be stdout or stderr");
  int64_t offset = 0, limit = LOG_CHUNK_DEFAULT;
  const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "offset");
  if (s && (gp_parse_int64(s, &offset) != 0 || offset < 0))
    return reply_error(c, 400, "invalid_argument", "offset", "offset must be a byte count >= 0");
  s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
  if (s && (gp_parse_int64(s, &limit) != 0 || limit < 1 || limit > LOG_CHUNK_MAX))
    return reply_error(c, 400, "invalid_argument", "limit", "limit must be 1 to 1048576 bytes");
  char dir[700], path[800], key[GP_AGENT_KEY_MAX];
  if (!task_dir_name(c, id, key, sizeof key))
    return reply_error(c, 400, "invalid_argument", "task", "task must be a task index");
  snprintf(dir, sizeof dir, "%s/%s", a->jobs_dir, key);
  /* ?step=S: a step task's output (agent_steps.c), ?task= naming its rank in the step. */
  s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "step");
  if (s) {
    int64_t step = 0, task = 0;
    const char *tv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "task");
    if (gp_parse_int64(s, &step) != 0 || step < 0 || step >= GP_PROTO_MAX_STEPS)
      return reply_error(c, 400, "invalid_argument", "step", "step must be a step id");
    if (tv && gp_parse_int64(tv, &task) != 0) task = -1;
    snprintf(dir, sizeof dir, "%.600s/%s.%lld.%lld", a->steps_dir, id, (long long)step, (long long)task);
  }
  snprintf(path, sizeof path, "%s/%s", dir, stream);
  bool ended = job_ended(dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    struct stat st;
    if (stat(dir, &st) != 0) return reply_error(c, 404, "not_found", "job", "no such job on this node");
    /* The job exists but has not written that stream yet. */
    json_t *doc = json_object();
    json_object_set_new(doc, "data", json_string(""));
    json_object_set_new(doc, "offset", json_integer(offset));
    json_object_set_new(doc, "eof", json_boolean(ended));
    return reply_json(c, 200, doc);
  }
  struct stat st;
  fstat(fd, &st);
  unsigned char *raw = malloc((size_t)limit);
  ssize_t n = 0;
  if (offset < st.st_size) n = pread(fd, raw, (size_t)limit, offset);
  close(fd);
  if (n < 0) n = 0;
  bool at_end = offset + n >= st.st_size;
  gp_buf text;
  gp_buf_init(&text, (size_t)limit * 3 + 16);
  size_t used = to_utf8(raw, (size_t)n, at_end && ended, &text);
  free(raw);
  json_t *doc = json_object();
  json_object_set_new(doc, "data", json_stringn(text.data ? text.data : "", text.len));
  json_object_set_new(doc, "offset", json_integer(offset + (int64_t)used));
  json_object_set_new(doc, "eof", json_boolean(ended && offset + (int64_t)used >= st.st_size));
  json_object_set_new(doc, "size", json_integer(st.st_size));
  gp_buf_done(&text);
  return reply_json(c, 200, doc);
}

/* POST /checkpoint/{job}?key=K: the job says it has just saved a checkpoint (its key, from
 * GPOOL_CHECKPOINT_URL, proves it is that job). Becomes a "checkpoint" event: the scheduler
 * then knows how much work a preemption would lose. */
static enum MHD_Result serve_checkpoint(gp_agent *a, struct MHD_Connection *c, const char *id) {
  if (!gp__agent_job_id_valid(id)) return reply_error(c, 400, "invalid_argument", "job", "bad job id");
  const char *key = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "key");
  char path[800], want[64] = "", dir_name[GP_AGENT_KEY_MAX];
  if (!task_dir_name(c, id, dir_name, sizeof dir_name))
    return reply_error(c, 400, "invalid_argument", "task", "task must be a task index");
  snprintf(path, sizeof path, "%s/%s/checkpoint.key", a->jobs_dir, dir_name);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    ssize_t n = read(fd, want, sizeof want - 1);
    want[n > 0 ? n : 0] = '\0';
    close(fd);
  }
  bool ok = key && want[0] && gp_secret_equal(key, want);
  if (!ok) return reply_error(c, 403, "permission_denied", "key", "wrong or missing job key");
  const char *tv = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "task");
  gp_proto_event cp = {.kind = GP_PROTO_EV_CHECKPOINT, .at = gp__agent_now_ms() / 1000,
                       .task = tv ? atoi(tv) : 0}; /* checked by task_dir_name */
  snprintf(cp.job, sizeof cp.job, "%s", id);
  json_t *ev = gp_proto_event_encode(&cp);
  pthread_mutex_lock(&a->stats_lock);
  if (json_array_size(a->checkpoints) < 4096) json_array_append(a->checkpoints, ev);
  pthread_mutex_unlock(&a->stats_lock);
  json_decref(ev);
  return reply_json(c, 200, json_pack("{s:b}", "ok", 1));
}

static enum MHD_Result serve_metrics(gp_agent *a, struct MHD_Connection *c) {
  pthread_mutex_lock(&a->stats_lock);
  int running = a->stats_running;
  bool registered = a->stats_registered;
  pthread_mutex_unlock(&a->stats_lock);
  gp_buf b;
  gp_buf_init(&b, 0);
  if (a->tel) gp_agent_metrics_text(a->tel, a->health, &b);
  gp__agent_spot_metrics(a, &b);
  gp_buf_printf(&b, "# HELP gpool_agent_up The gpool agent is serving.\n"
                    "# TYPE gpool_agent_up gauge\ngpool_agent_up{hostname=\"%s\"} 1\n",
                a->cfg.name);
  gp_buf_printf(&b, "# HELP gpool_agent_registered 1 when the node is registered with the server.\n"
                    "# TYPE gpool_agent_registered gauge\ngpool_agent_registered{hostname=\"%s\"} %d\n",
                a->cfg.name, registered ? 1 : 0);
  gp_buf_printf(&b, "# HELP gpool_agent_jobs_running Jobs running on this node.\n"
                    "# TYPE gpool_agent_jobs_running gauge\ngpool_agent_jobs_running{hostname=\"%s\"} %d\n",
                a->cfg.name, running);
  gp_buf_printf(&b, "# HELP gpool_agent_gpus GPUs on this node.\n"
                    "# TYPE gpool_agent_gpus gauge\ngpool_agent_gpus{hostname=\"%s\"} %d\n",
                a->cfg.name, a->n_gpus);
  gp_buf_printf(&b, "# HELP gpool_agent_cgroups 1 when cgroup v2 CPU and memory limits apply.\n"
                    "# TYPE gpool_agent_cgroups gauge\ngpool_agent_cgroups{hostname=\"%s\"} %d\n",
                a->cfg.name, a->cgroup.ok ? 1 : 0);
  size_t len = b.len;
  return reply(c, 200, "text/plain; version=0.0.4", gp_buf_steal(&b), len);
}

/* Whether the request on c carries the agent's token (as the server's log reads do). */
static bool server_token(gp_agent *a, struct MHD_Connection *c) {
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  char want[600];
  snprintf(want, sizeof want, "Bearer %s", a->cfg.token);
  return auth && gp_secret_equal(auth, want);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe) {
  gp_tls_conns_answered(c);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state) {
  gp_agent *a = cls;
  if (!*state) { /* first call: headers only */
    *state = (void *)1;
    return MHD_YES;
  }
  if (*upload_size) { /* no route takes a body */
    *upload_size = 0;
    return MHD_YES;
  }
  gp_tls_conns_request_in(c);
  /* Admitted past its address's limit with nothing of the address idle: only the
   * server's log reads may use it. */
  if (gp_tls_conns_on_probation(c) &&
      !((strncmp(url, "/logs/", 6) == 0 || strncmp(url, "/sessions/", 10) == 0) && server_token(a, c)))
    return gp_tls_conns_refuse(c);
  if (strcmp(method, "POST") == 0 && strncmp(url, "/checkpoint/", 12) == 0)
    return serve_checkpoint(a, c, url + 12);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return reply_error(c, 405, "method_not_allowed", NULL, "only GET is served here");
  if (strcmp(url, "/healthz") == 0) {
    pthread_mutex_lock(&a->stats_lock);
    bool registered = a->stats_registered;
    int running = a->stats_running;
    pthread_mutex_unlock(&a->stats_lock);
    json_t *doc = json_object();
    json_object_set_new(doc, "ok", json_true());
    json_object_set_new(doc, "node", json_string(a->cfg.name));
    json_object_set_new(doc, "registered", json_boolean(registered));
    json_object_set_new(doc, "jobs_running", json_integer(running));
    return reply_json(c, 200, doc);
  }
  if (strcmp(url, "/metrics") == 0) return serve_metrics(a, c);
  if (strncmp(url, "/sessions/", 10) == 0 && strcmp(method, "GET") == 0) return gp__agent_ses_serve(a, c, url + 10);
  if (strncmp(url, "/logs/", 6) == 0) return serve_logs(a, c, url + 6);
  return reply_error(c, 404, "not_found", NULL, "no such route");
}

int gp__agent_http_start(gp_agent *a, gp_err *err) {
  char host[128];
  int64_t port = 0;
  const char *colon = strrchr(a->cfg.listen, ':');
  if (!colon || (size_t)(colon - a->cfg.listen) >= sizeof host ||
      gp_parse_int64(colon + 1, &port) != 0 || port < 0 || port > 65535)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "listen", "'%s' is not HOST:PORT", a->cfg.listen);
  snprintf(host, sizeof host, "%.*s", (int)(colon - a->cfg.listen), a->cfg.listen);
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host[0] ? host : "0.0.0.0", &sa.sin_addr) != 1)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "listen", "'%s' is not an IPv4 address", host);
  int rc = gp_tls_listener_new(&a->cfg.tls, "tls", &a->tls, err);
  if (rc) return rc;
  a->conns = gp_tls_conns_new(&(gp_tls_conns_limits){.max = AGENT_HTTP_MAX_CONNS,
                                                     .per_address = AGENT_HTTP_PER_ADDRESS});
  if (!a->conns) return gp_err_set(err, GP_EIO, NULL, 0, "listen", "cannot track the endpoint's connections");
  gp__agent_ses_init(a);
  a->httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                                  MHD_ALLOW_UPGRADE | gp_tls_listener_flags(a->tls),
                              0, NULL, NULL, on_request, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                              MHD_OPTION_THREAD_POOL_SIZE, (unsigned)AGENT_HTTP_THREADS,
                              MHD_OPTION_CONNECTION_LIMIT, gp_tls_conns_hard_limit(AGENT_HTTP_MAX_CONNS),
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)AGENT_HTTP_IDLE_S,
                              MHD_OPTION_NOTIFY_CONNECTION, gp_tls_conns_notify, a->conns,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, a,
                              MHD_OPTION_ARRAY, gp_tls_listener_options(a->tls), MHD_OPTION_END);
  if (!a->httpd) {
    int e = errno;
    gp_tls_conns_free(a->conns);
    a->conns = NULL;
    return gp_err_set(err, GP_EIO, NULL, 0, "listen", "cannot listen on %s: %s", a->cfg.listen,
                      strerror(e));
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(a->httpd, MHD_DAEMON_INFO_BIND_PORT);
  unsigned bound = info ? info->port : (unsigned)port;
  const char *url_host = host;
  char name[128];
  if (!host[0] || strcmp(host, "0.0.0.0") == 0) {
    url_host = gethostname(name, sizeof name - 1) == 0 ? name : "127.0.0.1";
  }
  snprintf(a->url, sizeof a->url, "%s://%s:%u", gp_tls_listener_scheme(a->tls), url_host, bound);
  return 0;
}

void gp__agent_http_stop(gp_agent *a) {
  gp__agent_ses_stop_all(a); /* libmicrohttpd stops only once upgraded connections are closed */
  if (a->httpd) MHD_stop_daemon(a->httpd);
  a->httpd = NULL;
  gp__agent_ses_free(a);
  gp_tls_conns_free(a->conns);
  a->conns = NULL;
  gp_tls_listener_free(a->tls);
  a->tls = NULL;
}
