/* SPDX-License-Identifier: Apache-2.0 */
/* Service replicas' HTTP probes (docs/services.md#probes), run by the agent against the
 * port it gave the replica ($PORT on 127.0.0.1):
 *   - startup: tried every period until it passes; the others wait for it; failing it
 *     failure_threshold times in a row stops the replica (generous by default: a model
 *     takes minutes to load);
 *   - readiness: the replica is ready after one pass, unready after failure_threshold
 *     failures in a row; the server lists ready replicas only;
 *   - liveness: failure_threshold failures in a row stop the replica (the server's service
 *     then replaces it, with backoff).
 * A probe passes on an HTTP status 200-399 within its timeout. The requests run on a thread
 * of their own (one at a time, each bounded by its timeout) so that a replica that hangs
 * never stalls the agent's loop; the loop hands over the replicas and takes the results
 * (gp__agent_probes_tick). The answer's body is read and thrown away: it is untrusted. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "util/mem.h"

#define MAX_BODY_BYTES 65536  /* read from a probe's answer at most (then it is cut off) */

enum { P_STARTUP, P_READY, P_LIVE, P_METRICS, P_KINDS };

typedef struct entry {
  char key[GP_AGENT_KEY_MAX];
  int port;
  gp_proto_probe probe[P_KINDS];
  int64_t added_ms;
  int64_t next_ms[P_KINDS];
  int fails[P_KINDS];
  bool started;            /* the startup probe passed (or there is none) */
  bool ready;
  bool failed;             /* startup or liveness gave up: the loop stops the replica */
  char why[160];           /* the last probe's outcome */
  char metric[GP_PROTO_METRIC_NAME_MAX]; /* the figure read from the metrics path, "": none */
  bool metric_ok;
  double metric_value;
  bool seen;               /* still a live replica at the loop's last look */
} entry;

typedef struct gp__agent_probes {
  pthread_t thread;
  bool running;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  bool stop;
  entry *v;
  size_t n, cap;
} gp__agent_probes;

int gp__agent_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t len = sizeof sa;
  int port = 0;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
    port = ntohs(sa.sin_port);
  close(fd);
  return port;
}

typedef struct body {
  size_t got;
  char *keep;              /* NULL: thrown away; else MAX_BODY_BYTES + 1 bytes */
} body;

static size_t take(char *p, size_t size, size_t n, void *ctx) {
  body *b = ctx;
  size_t len = size * n;
  if (b->got + len > MAX_BODY_BYTES) return 0; /* 0 ends the transfer: too large */
  if (b->keep) memcpy(b->keep + b->got, p, len);
  b->got += len;
  return len;
}

/* One GET; true on 200-399. *why says what happened; the body goes to b->keep. */
static bool http_probe(int port, const gp_proto_probe *p, body *b, char *why, size_t size) {
  char url[64 + GP_PROTO_PROBE_PATH_MAX];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, p->path);
  CURL *c = curl_easy_init();
  if (!c) {
    snprintf(why, size, "%s: cannot make a request", p->path);
    return false;
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)p->timeout_s * 1000L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)p->timeout_s * 1000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  /* A probe's answer may be cut off (its status is what counts); a metrics page may not. */
  bool ok = status >= 200 && status < 400 && (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && !b->keep));
  if (status > 0) snprintf(why, size, "%s: HTTP %ld", p->path, status);
  else snprintf(why, size, "%s: %s", p->path, curl_easy_strerror(rc));
  return ok;
}

/* The next due probe: its entry's key, kind, port and settings (copied under the lock). */
static bool next_due(gp__agent_probes *ps, int64_t now, char *key, int *kind, int *port, gp_proto_probe *p,
                     int64_t *ret_wait) {
  int64_t soonest = 200;
  for (size_t i = 0; i < ps->n; i++) {
    entry *e = &ps->v[i];
    if (e->failed) continue;
    for (int k = 0; k < P_KINDS; k++) {
      if (!e->probe[k].set || (k != P_STARTUP && !e->started) || (k == P_STARTUP && e->started)) continue;
      if (e->next_ms[k] <= now) {
        snprintf(key, GP_AGENT_KEY_MAX, "%s", e->key);
        *kind = k;
        *port = e->port;
        *p = e->probe[k];
        return true;
      }
      if (e->next_ms[k] - now < soonest) soonest = e->next_ms[k] - now;
    }
  }
  *ret_wait = soonest;
  return false;
}

static void record(gp__agent_probes *ps, const char *key, int k, bool ok, const char *why, const body *b,
                   int64_t now) {
  entry *e = NULL;
  for (size_t i = 0; i < ps->n && !e; i++)
    if (strcmp(ps->v[i].key, key) == 0) e = &ps->v[i];
  if (!e) return; /* gone while it was probed */
  e->next_ms[k] = now + (int64_t)e->probe[k].period_s * 1000;
  if (k == P_METRICS) { /* the replica's own figure, untrusted: gp_proto_metric_sum bounds it */
    e->metric_ok = ok && gp_proto_metric_sum(b->keep, b->got, e->metric, &e->metric_value);
    return;
  }
  static const char *const names[] = {"startup", "readiness", "liveness", "metrics"};
  snprintf(e->why, sizeof e->why, "%s %s", names[k], why);
  if (ok) {
    e->fails[k] = 0;
    if (k == P_STARTUP) {
      e->started = true;
      for (int o = 1; o < P_KINDS; o++) e->next_ms[o] = now; /* the others begin now */
    }
    if (k == P_READY) e->ready = true;
    return;
  }
  e->fails[k]++;
  if (e->fails[k] < e->probe[k].failure_threshold) return;
  if (k == P_READY) e->ready = false;
  else e->failed = true;
}

static void *probe_main(void *arg) {
  gp__agent_probes *ps = arg;
  char *keep = gp_xmalloc(MAX_BODY_BYTES + 1);
  pthread_mutex_lock(&ps->lock);
  while (!ps->stop) {
    char key[GP_AGENT_KEY_MAX];
    int kind, port;
    gp_proto_probe p;
    int64_t wait = 200;
    if (!next_due(ps, gp__agent_now_ms(), key, &kind, &port, &p, &wait)) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += (long)(wait > 0 ? wait : 1) * 1000000L;
      ts.tv_sec += ts.tv_nsec / 1000000000L;
      ts.tv_nsec %= 1000000000L;
      pthread_cond_timedwait(&ps->wake, &ps->lock, &ts);
      continue;
    }
    pthread_mutex_unlock(&ps->lock);
    char why[128];
    body b = {0, kind == P_METRICS ? keep : NULL};
    bool ok = http_probe(port, &p, &b, why, sizeof why);
    pthread_mutex_lock(&ps->lock);
    record(ps, key, kind, ok, why, &b, gp__agent_now_ms());
  }
  pthread_mutex_unlock(&ps->lock);
  free(keep);
  return NULL;
}

int gp__agent_probes_start(gp_agent *a, gp_err *err) {
  gp__agent_probes *ps = gp_xcalloc(1, sizeof *ps);
  pthread_mutex_init(&ps->lock, NULL);
  pthread_cond_init(&ps->wake, NULL);
  if (pthread_create(&ps->thread, NULL, probe_main, ps) != 0) {
    pthread_mutex_destroy(&ps->lock);
    pthread_cond_destroy(&ps->wake);
    free(ps);
    return gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot start the probe thread");
  }
  ps->running = true;
  a->probes = ps;
  return 0;
}

void gp__agent_probes_stop(gp_agent *a) {
  gp__agent_probes *ps = a->probes;
  if (!ps) return;
  pthread_mutex_lock(&ps->lock);
  ps->stop = true;
  pthread_cond_signal(&ps->wake);
  pthread_mutex_unlock(&ps->lock);
  if (ps->running) pthread_join(ps->thread, NULL);
  pthread_mutex_destroy(&ps->lock);
  pthread_cond_destroy(&ps->wake);
  free(ps->v);
  free(ps);
  a->probes = NULL;
}

static void add_entry(gp__agent_probes *ps, const gp__agent_job *j, int64_t now) {
  gp_xgrow((void **)&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v);
  entry *e = &ps->v[ps->n++];
  memset(e, 0, sizeof *e);
  snprintf(e->key, sizeof e->key, "%s", j->key);
  e->port = j->port;
  e->probe[P_STARTUP] = j->service.startup;
  e->probe[P_READY] = j->service.readiness;
  e->probe[P_LIVE] = j->service.liveness;
  if (j->service.metric[0]) { /* scraped like a probe, but it never fails the replica */
    gp_proto_probe *m = &e->probe[P_METRICS];
    m->set = true;
    snprintf(m->path, sizeof m->path, "%s", j->service.metrics_path);
    m->period_s = j->service.metrics_period_s > 0 ? j->service.metrics_period_s : 2;
    m->timeout_s = 2;
    m->failure_threshold = 1000;
    snprintf(e->metric, sizeof e->metric, "%s", j->service.metric);
  }
  e->added_ms = now;
  for (int k = 0; k < P_KINDS; k++) e->next_ms[k] = now + (int64_t)e->probe[k].initial_delay_s * 1000;
  e->started = !e->probe[P_STARTUP].set;
  e->seen = true;
  snprintf(e->why, sizeof e->why, "%s", "not probed yet");
}

void gp__agent_probes_tick(gp_agent *a) {
  gp__agent_probes *ps = a->probes;
  if (!ps) return;
  int64_t now = gp__agent_now_ms();
  pthread_mutex_lock(&ps->lock);
  for (size_t i = 0; i < ps->n; i++) ps->v[i].seen = false;
  bool added = false;
  for (size_t i = 0; i < a->n_jobs; i++) {
    gp__agent_job *j = a->jobs[i];
    if (!j->svc || j->ended || j->port <= 0) continue;
    entry *e = NULL;
    for (size_t k = 0; k < ps->n && !e; k++)
      if (strcmp(ps->v[k].key, j->key) == 0) e = &ps->v[k];
    if (!e) {
      add_entry(ps, j, now);
      added = true;
      e = &ps->v[ps->n - 1];
    }
    e->seen = true;
    /* No readiness probe: ready once started (the startup probe passed, if any). */
    bool ready = !j->stopping && !e->failed && e->started && (e->ready || !e->probe[P_READY].set);
    /* A load step (a new figure, or one half as large again or less than half) goes to the
     * server at once, as a readiness change does: the autoscaler's reaction time. */
    if (e->metric_ok && (!j->metric_ok || fabs(e->metric_value - j->metric) > 0.5 * (j->metric > 1 ? j->metric : 1)))
      a->probes_dirty = true;
    j->metric_ok = e->metric_ok;
    j->metric = e->metric_value;
    if (ready != j->ready || strcmp(j->probe_msg, e->why) != 0) {
      if (ready != j->ready) a->probes_dirty = true;
      j->ready = ready;
      snprintf(j->probe_msg, sizeof j->probe_msg, "%s", e->why);
    }
    if (e->failed && !j->stopping) {
      char msg[256];
      snprintf(msg, sizeof msg, "%s probe failed %d times in a row (%s)", e->started ? "liveness" : "startup",
               e->started ? e->probe[P_LIVE].failure_threshold : e->probe[P_STARTUP].failure_threshold, e->why);
      gp__agent_job_stop_local(a, j, j->grace_s > 0 ? j->grace_s : 10, e->started ? "liveness" : "startup", msg);
      a->probes_dirty = true;
    }
  }
  for (size_t i = 0; i < ps->n;) { /* replicas that ended lose their probes */
    if (ps->v[i].seen) {
      i++;
      continue;
    }
    ps->v[i] = ps->v[--ps->n];
  }
  if (added) pthread_cond_signal(&ps->wake);
  pthread_mutex_unlock(&ps->lock);
}
