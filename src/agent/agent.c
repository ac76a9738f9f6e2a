/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's run loop and its side of the agent protocol (docs/internals/protocol.md; orders
 * are executed in agent_orders.c):
 * register, then an endless long-poll heartbeat carrying events and returning orders.
 * A single thread owns every job and every piece of protocol state; libcurl's multi interface
 * lets the loop keep reaping jobs and enforcing deadlines while a long poll is open, and abort
 * it when an event must go out at once (orders are re-sent until acknowledged by `gen`, so an
 * aborted poll loses nothing). */
#include "agent/agent_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/slurm_env.h"
#include "tls/dial.h"
#include "util/buf.h"
#include "util/mem.h"

#define RESPONSE_MAX GP_PROTO_ANSWER_MAX

typedef enum call_kind { CALL_NONE, CALL_REGISTER, CALL_HEARTBEAT } call_kind;

typedef struct gp__agent_net {
  CURLM *multi;
  CURL *easy;
  struct curl_slist *headers;
  call_kind kind;
  bool carries_events;       /* the heartbeat in flight sends events (answered at once) */
  gp_buf response;
  char *body;
  int64_t started_ms;
  int64_t next_at_ms;        /* do not start a call before this */
  int failures;
  bool outage_logged;
  bool one_event_at_a_time;  /* after a refused batch: find the event the server rejects */
  bool carries_answer_error; /* the heartbeat in flight tells the server of an unreadable answer */
  size_t register_events;    /* events queued before the register call in flight was made */
  char followed[GP_URL_MAX]; /* the leader last logged as followed ("" none): logged once */
  bool no_leader_logged;     /* "no server leads" said since the last answer that worked */
} gp__agent_net;

/* ---- node description ---- */

static json_t *node_json(gp_agent *a) {
  json_t *n = json_object();
  json_object_set_new(n, "name", json_string(a->cfg.name));
  json_object_set_new(n, "model", json_string(a->n_gpus ? a->gpus[0].model : ""));
  json_object_set_new(n, "gpus", json_integer(a->n_gpus));
  json_object_set_new(n, "cpus", json_integer(a->cpus));
  json_object_set_new(n, "mem_mib", json_integer(a->mem_mib));
  json_object_set_new(n, "capacity", json_string(a->cfg.capacity));
  json_t *labels = json_object();
  for (int i = 0; i < a->cfg.n_labels; i++)
    json_object_set_new(labels, a->cfg.label_keys[i], json_string(a->cfg.label_values[i]));
  json_object_set_new(n, "labels", labels);
  /* NVLink domains: GPUs sharing a domain number, listed by index. */
  json_t *domains = json_array();
  for (int d = 0; d < GP_GPU_MAX_DEVICES; d++) {
    json_t *members = json_array();
    for (int i = 0; i < a->n_gpus; i++)
      if (a->gpus[i].nvlink_domain == d) json_array_append_new(members, json_integer(i));
    if (json_array_size(members) > 0) json_array_append_new(domains, members);
    else json_decref(members);
  }
  json_object_set_new(n, "nvlink_domains", domains);
  json_t *list = json_array();
  for (int i = 0; i < a->n_gpus; i++) {
    const gp_gpu_info *g = &a->gpus[i];
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(g->index));
    json_object_set_new(o, "uuid", json_string(g->uuid));
    json_object_set_new(o, "model", json_string(g->model));
    json_object_set_new(o, "name", json_string(g->name));
    json_object_set_new(o, "mem_mib", json_integer(g->mem_mib));
    json_object_set_new(o, "mode", json_string(gp_agent_mode_name(a->gpu_mode[i])));
    json_object_set_new(o, "replicas", json_integer(a->gpu_replicas[i]));
    char why[256];
    const char *health = gp__agent_gpu_health(a, i, why, sizeof why);
    json_object_set_new(o, "health", json_string(health));
    if (why[0]) json_object_set_new(o, "reason", json_string(why));
    json_object_set_new(o, "nvlink_domain", json_integer(g->nvlink_domain));
    json_object_set_new(o, "mig", gp__agent_mig_json(g));
    json_array_append_new(list, o);
  }
  json_object_set_new(n, "gpu_list", list);
  json_object_set_new(n, "cgroups", json_boolean(a->cgroup.ok));
  if (!a->cgroup.ok) json_object_set_new(n, "cgroups_message", json_string(a->cgroup.message));
  char pipe_dir[512];
  json_object_set_new(n, "mps", json_boolean(gp__agent_mps_running(a, pipe_dir, sizeof pipe_dir)));
  json_object_set_new(n, "gpu_backend", json_string(a->gpu->ops->name));
  return n;
}

static json_t *gpus_status_json(gp_agent *a) {
  json_t *list = json_array();
  for (int i = 0; i < a->n_gpus; i++) {
    json_t *o = json_object();
    char why[256];
    json_object_set_new(o, "index", json_integer(i));
    json_object_set_new(o, "health", json_string(gp__agent_gpu_health(a, i, why, sizeof why)));
    if (why[0]) json_object_set_new(o, "reason", json_string(why));
    if (a->have_view && i < a->view->n_gpus && a->view->have_sample[i]) {
      const gp_gpu_sample *s = &a->view->sample[i];
      json_t *t = json_object();
      json_object_set_new(t, "gpu_util_pct", json_integer(s->gpu_util_pct));
      json_object_set_new(t, "fb_used_mib", json_integer(s->fb_used_mib));
      json_object_set_new(t, "fb_free_mib", json_integer(s->fb_free_mib));
      json_object_set_new(t, "power_w", json_real(s->power_w));
      json_object_set_new(t, "temp_c", json_integer(s->temp_c));
      json_object_set_new(t, "sm_clock_mhz", json_integer(s->sm_clock_mhz));
      json_object_set_new(t, "processes", json_integer(s->n_procs));
      json_object_set_new(o, "telemetry", t);
    } else if (a->have_view && i < a->view->n_gpus) {
      json_object_set_new(o, "error", json_string(a->view->sample_error[i]));
    }
    json_array_append_new(list, o);
  }
  return list;
}

/* ---- HTTP calls ---- */

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
  gp_buf *b = ctx;
  gp_buf_append(b, data, size * n);
  return gp_buf_truncated(b) ? 0 : size * n; /* 0 aborts an oversized answer */
}

const char *gp__agent_server(const gp_agent *a) {
  return a->leader[0] ? a->leader : a->servers.url[a->cur];
}

/* The server in use cannot serve us (unreachable, a follower without a leader, an old
 * leader): the next one of the list. */
static void next_server(gp_agent *a) {
  if (!a->leader[0]) a->cur = (a->cur + 1) % a->servers.n;
  a->leader[0] = '\0';
}

/* A follower's answer: 307/308 to the leader, or 503 with Retry-After while there is none.
 * Returns true when the answer was one (the call is to be made again elsewhere). */
static bool followed_to_leader(gp_agent *a, long status) {
  gp__agent_net *net = a->net;
  if (status == 307 || status == 308) {
    char *location = NULL;
    curl_easy_getinfo(net->easy, CURLINFO_REDIRECT_URL, &location);
    char base[GP_URL_MAX];
    bool url_ok = gp_urls_redirect_base(gp__agent_server(a), location, base, sizeof base) == 0;
    /* The token and node credential go only to the servers this agent was given: a
     * redirect elsewhere (a wrong `advertise`, a crafted Location) is refused, not followed. */
    if (url_ok && gp_urls_find(&a->servers, base) < 0) {
      gp__agent_log("%s redirected to %s, which is not one of the agent's servers: not following "
                    "it (list every server in --server)", gp__agent_server(a), base);
      next_server(a);
      net->next_at_ms = gp__agent_now_ms() + 1000;
      return true;
    }
    if (url_ok) {
      /* While no server can lead (a database outage), followers keep naming the last
       * leader, which refuses: the loop goes round every half second. Say it once. */
      if (strcmp(net->followed, base) != 0)
        gp__agent_log("%s follows the leader %s", gp__agent_server(a), base);
      snprintf(net->followed, sizeof net->followed, "%s", base);
      snprintf(a->leader, sizeof a->leader, "%s", base);
      net->next_at_ms = 0;
    } else {
      gp__agent_log("%s redirected to '%.200s', not an http(s) URL to follow", gp__agent_server(a),
                    location ? location : "");
      next_server(a);
      net->next_at_ms = gp__agent_now_ms() + 1000;
    }
    return true;
  }
  curl_off_t retry = -1;
  if (status == 503 && curl_easy_getinfo(net->easy, CURLINFO_RETRY_AFTER, &retry) == CURLE_OK && retry > 0) {
    if (!net->no_leader_logged)
      gp__agent_log("%s: no server leads the pool now (HTTP 503); trying the servers in turn "
                    "until one does", gp__agent_server(a));
    net->no_leader_logged = true;
    next_server(a);
    net->next_at_ms = gp__agent_now_ms() + 500;
    return true;
  }
  return false;
}

/* An answer's leader epoch (absent: 0, a server without a lease). Returns false, and
 * moves on to the next server, when it is older than one already seen: that server lost
 * its lease and its orders must not run (another leader may have given the same GPUs). */
static bool epoch_current(gp_agent *a, json_t *doc) {
  json_int_t e = json_integer_value(json_object_get(doc, "epoch"));
  if (e < a->epoch) {
    gp__agent_log("%s answers for leader epoch %lld, older than %lld: refusing its orders",
                  gp__agent_server(a), (long long)e, (long long)a->epoch);
    next_server(a);
    a->registered = false;
    a->net->next_at_ms = gp__agent_now_ms() + 500;
    return false;
  }
  if (e > a->epoch) {
    if (a->epoch) gp__agent_log("leader epoch %lld at %s", (long long)e, gp__agent_server(a));
    a->epoch = e;
  }
  return true;
}

static void net_finish(gp_agent *a) {
  gp__agent_net *net = a->net;
  if (net->easy) {
    curl_multi_remove_handle(net->multi, net->easy);
    curl_easy_cleanup(net->easy);
    net->easy = NULL;
  }
  curl_slist_free_all(net->headers);
  net->headers = NULL;
  free(net->body);
  net->body = NULL;
  gp_buf_reset(&net->response);
  net->kind = CALL_NONE;
}

static void net_post(gp_agent *a, call_kind kind, const char *path, json_t *body, long timeout_ms) {
  gp__agent_net *net = a->net;
  char url[700], auth[600];
  snprintf(url, sizeof url, "%s%s", gp__agent_server(a), path);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", a->cfg.token);
  net->body = json_dumps(body, JSON_COMPACT);
  net->easy = curl_easy_init();
  net->headers = curl_slist_append(NULL, "Content-Type: application/json");
  net->headers = curl_slist_append(net->headers, auth);
  net->headers = curl_slist_append(net->headers, "Expect:");
  curl_easy_setopt(net->easy, CURLOPT_URL, url);
  curl_easy_setopt(net->easy, CURLOPT_HTTPHEADER, net->headers);
  curl_easy_setopt(net->easy, CURLOPT_POSTFIELDS, net->body);
  curl_easy_setopt(net->easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(net->easy, CURLOPT_WRITEDATA, &net->response);
  curl_easy_setopt(net->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(net->easy, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
  curl_easy_setopt(net->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(net->easy, CURLOPT_TCP_NODELAY, 1L);
  gp_tls_dial tls = {.ca = a->cfg.tls.peer_ca, .cert = a->cfg.tls.cert, .key = a->cfg.tls.key,
                     .https_only = a->cfg.tls.peer_ca[0]};
  gp_tls_dial_setup(net->easy, &tls);
  curl_multi_add_handle(net->multi, net->easy);
  net->kind = kind;
  net->started_ms = gp__agent_now_ms();
}

static void start_register(gp_agent *a) {
  json_t *body = json_object();
  json_object_set_new(body, "node", node_json(a));
  json_object_set_new(body, "agent_url", json_string(a->url));
  json_t *jobs = json_array();
  for (size_t i = 0; i < a->n_jobs; i++) {
    json_array_append_new(jobs, gp__agent_job_report(a->jobs[i]));
    a->jobs[i]->register_ended = a->jobs[i]->ended;
  }
  json_object_set_new(body, "jobs", jobs);
  json_object_set_new(body, "steps", gp__agent_steps_report(a)); /* the others are lost */
  a->net->register_events = json_array_size(a->events);
  if (a->credential[0]) json_object_set_new(body, "credential", json_string(a->credential));
  if (a->store_id[0]) json_object_set_new(body, "store", json_string(a->store_id));
  net_post(a, CALL_REGISTER, "/v1/agent/register", body, 10000);
  json_decref(body);
}

static void start_heartbeat(gp_agent *a) {
  gp__agent_net *net = a->net;
  json_t *body = json_object();
  int wait_ms = a->heartbeat_s * 1000;
  json_object_set_new(body, "node", json_string(a->cfg.name));
  json_object_set_new(body, "gen", json_integer(a->gen));
  json_object_set_new(body, "wait_ms", json_integer(wait_ms));
  if (a->credential[0]) json_object_set_new(body, "credential", json_string(a->credential));
  net->carries_answer_error = a->answer_error[0] != '\0';
  if (net->carries_answer_error)
    json_object_set_new(body, "answer_error", json_string(a->answer_error));
  gp__agent_pulls_tick(a); /* a pre-pull's answer goes with this call */
  /* Events in flight leave the queue; they return to it if the call fails. After the
   * server refused a batch as malformed, they go one by one so that only the event it
   * cannot take is dropped. */
  if (net->one_event_at_a_time && json_array_size(a->events) > 0) {
    json_array_append(a->inflight, json_array_get(a->events, 0));
    json_array_remove(a->events, 0);
  } else {
    net->one_event_at_a_time = false;
    json_array_extend(a->inflight, a->events);
    json_array_clear(a->events);
  }
  json_object_set(body, "events", a->inflight);
  json_object_set_new(body, "gpus", gpus_status_json(a));
  gp__agent_images_refresh(a);
  if (a->images && a->images_send) { /* at most once a minute, and after a container ends */
    json_object_set(body, "images", a->images);
    a->images_send = false;
  }
  gp__agent_models_refresh(a);
  if (a->models && a->models_send) { /* at most once a minute */
    json_object_set(body, "models", a->models);
    a->models_send = false;
  }
  /* What this node holds, for the server to check against what it believes runs here
   * (docs/internals/protocol.md): running jobs, and ended ones whose end it has not yet
   * received (their "exited" events are queued or in this call). */
  json_t *jobs = json_array(), *ended = json_array();
  for (size_t i = 0; i < a->n_jobs; i++) {
    if (a->jobs[i]->ended) {
      json_array_append_new(ended, json_string(a->jobs[i]->id));
      continue;
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(a->jobs[i]->id));
    json_object_set_new(o, "task", json_integer(a->jobs[i]->task));
    json_object_set_new(o, "pid", json_integer(a->jobs[i]->pid));
    json_t *usage = gp__agent_job_usage_json(a, a->jobs[i]->key);
    if (usage) json_object_set_new(o, "usage", usage);
    if (a->jobs[i]->svc) { /* a service replica: its port and what its probes found */
      json_object_set_new(o, "port", json_integer(a->jobs[i]->port));
      json_object_set_new(o, "ready", json_boolean(a->jobs[i]->ready));
      json_object_set_new(o, "probe", json_string(a->jobs[i]->probe_msg));
      if (a->jobs[i]->metric_ok) json_object_set_new(o, "metric", json_real(a->jobs[i]->metric));
    }
    json_array_append_new(jobs, o);
  }
  json_object_set_new(body, "jobs", jobs);
  json_object_set_new(body, "ended", ended);
  char why[256] = "";
  bool node_drained = a->health && gp_health_node_drained(a->health, why, sizeof why);
  json_object_set_new(body, "node_health",
                      json_pack("{s:b,s:s,s:s}", "drained", node_drained, "reason", why,
                                "conditions", a->conditions));
  net->carries_events = json_array_size(a->inflight) > 0;
  a->probes_dirty = false;
  /* A long poll unanswered well past its wait is a dead connection: give up on it. */
  net_post(a, CALL_HEARTBEAT, "/v1/agent/heartbeat", body, wait_ms + 5000);
  json_decref(body);
}

static void requeue_inflight(gp_agent *a) {
  /* Keep order: in-flight events first, then what came since. */
  json_array_extend(a->inflight, a->events);
  json_array_clear(a->events);
  json_array_extend(a->events, a->inflight);
  json_array_clear(a->inflight);
}

/* After the server took events: ended jobs whose "exited" it received are done here. */
static void events_acked(gp_agent *a, json_t *events) {
  size_t i;
  json_t *ev;
  json_array_foreach(events, i, ev) {
    const char *kind = json_string_value(json_object_get(ev, "kind"));
    const char *id = json_string_value(json_object_get(ev, "job"));
    if (kind && id && strcmp(kind, "step_exited") == 0) gp__agent_step_acked(a, ev);
    if (!kind || !id || strcmp(kind, "exited") != 0) continue;
    const json_t *task = json_object_get(ev, "task");
    gp__agent_job *j = gp__agent_job_find_task(a, id, json_is_integer(task) ? (int)json_integer_value(task) : -1);
    if (j && j->ended) gp__agent_job_remove(a, j);
  }
}

static void on_register_answer(gp_agent *a, long status) {
  json_error_t je;
  json_t *doc = json_loadb(a->net->response.data, a->net->response.len, 0, &je);
  if ((status == 200 || status == 201) && !epoch_current(a, doc)) {
    json_decref(doc);
    return;
  }
  if (status == 200 || status == 201) {
    json_int_t hb = json_integer_value(json_object_get(doc, "heartbeat_s"));
    /* The server's period bounds ours (it declares nodes down by it); a shorter one asked
     * for on the command line stays. */
    int mine = a->cfg.heartbeat_s > 0 ? a->cfg.heartbeat_s : 5;
    if (hb >= 1 && hb <= 30) a->heartbeat_s = hb < mine ? (int)hb : mine;
    json_t *g = json_object_get(doc, "gen");
    if (json_is_integer(g) && json_integer_value(g) >= 0) a->gen = json_integer_value(g);
    gp__agent_store_seen(a, json_string_value(json_object_get(doc, "store")));
    a->registered = true;
    /* The register call reported every job as it was when the call was made: the ends it
     * carried are settled, and the events queued before it are superseded by it. A job
     * that ended while the call was in flight was reported running: its end, and every
     * event queued since, must still go out (else the server believes it runs for ever). */
    for (size_t i = 0; i < a->n_jobs;) {
      gp__agent_job *j = a->jobs[i];
      if (j->ended && j->register_ended) gp__agent_job_remove(a, j);
      else i++;
    }
    /* An interruption notice is about the node, not a job: it still has to go out. */
    size_t before = a->net->register_events;
    if (before > json_array_size(a->events)) before = json_array_size(a->events);
    for (size_t i = before; i-- > 0;) {
      const char *kind = json_string_value(json_object_get(json_array_get(a->events, i), "kind"));
      /* A step task's end is not in the register call (its "steps" lists it): kept. */
      if (!kind || (strcmp(kind, "interruption") != 0 && strcmp(kind, "step_exited") != 0))
        json_array_remove(a->events, i);
    }
    gp__agent_log("node %s registered with %s (%d GPUs, %lld CPUs, %lld MiB, endpoint %s, cgroups %s)",
            a->cfg.name, gp__agent_server(a), a->n_gpus, (long long)a->cpus, (long long)a->mem_mib,
            a->url, a->cgroup.ok ? "on" : "off");
    a->net->failures = 0;
    a->net->outage_logged = false;
  } else {
    const char *msg = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    gp__agent_log("registration refused (HTTP %ld): %s", status, msg ? msg : "no message");
    a->net->next_at_ms = gp__agent_now_ms() + 5000;
  }
  json_decref(doc);
}

static void on_heartbeat_answer(gp_agent *a, long status) {
  gp__agent_net *net = a->net;
  if (followed_to_leader(a, status)) {
    requeue_inflight(a);
    return;
  }
  if (status == 404 || status == 409) {
    gp__agent_log("server does not know this node (HTTP %ld): registering again", status);
    requeue_inflight(a);
    a->registered = false;
    return;
  }
  if ((status == 400 || status == 413) && json_array_size(a->inflight) > 0) {
    json_error_t je;
    json_t *doc = json_loadb(net->response.data, net->response.len, 0, &je);
    const char *msg = json_string_value(json_object_get(json_object_get(doc, "error"), "message"));
    if (json_array_size(a->inflight) == 1) {
      char *text = json_dumps(json_array_get(a->inflight, 0), JSON_COMPACT);
      gp__agent_log("the server refused an event (HTTP %ld: %s); dropping it: %s", status,
              msg ? msg : "no message", text ? text : "?");
      free(text);
      /* An end the server will never take: the job is done here, and the server, no
       * longer seeing it listed, ends it as lost rather than wait for it for ever. */
      json_t *ev = json_array_get(a->inflight, 0);
      const char *kind = json_string_value(json_object_get(ev, "kind"));
      const char *id = json_string_value(json_object_get(ev, "job"));
      gp__agent_job *j = kind && id && strcmp(kind, "exited") == 0 ? gp__agent_job_find(a, id) : NULL;
      if (j && j->ended) gp__agent_job_remove(a, j);
      json_array_clear(a->inflight);
    } else {
      gp__agent_log("the server refused a heartbeat with %zu events (HTTP %ld: %s); sending them one "
              "by one", json_array_size(a->inflight), status, msg ? msg : "no message");
      requeue_inflight(a);
      net->one_event_at_a_time = true;
    }
    json_decref(doc);
    return;
  }
  if (status != 200) {
    gp__agent_log("heartbeat refused (HTTP %ld)", status);
    requeue_inflight(a);
    net->next_at_ms = gp__agent_now_ms() + (status == 401 || status == 403 ? 5000 : 1000);
    return;
  }
  json_error_t je;
  json_t *doc = json_loadb(net->response.data, net->response.len, 0, &je);
  json_t *events = a->inflight;
  a->inflight = json_array();
  events_acked(a, events);
  json_decref(events);
  if (net->carries_answer_error) a->answer_error[0] = '\0'; /* the server has it */
  if (!json_is_object(doc)) {
    gp__agent_log("heartbeat answer is not JSON: %s", je.text);
    snprintf(a->answer_error, sizeof a->answer_error, "an answer of %zu bytes is not JSON: %s",
             net->response.len, je.text);
    net->next_at_ms = gp__agent_now_ms() + 1000;
    json_decref(doc);
    return;
  }
  if (!epoch_current(a, doc)) {
    requeue_inflight(a);
    json_decref(doc);
    return;
  }
  const char *store = json_string_value(json_object_get(doc, "store"));
  if (store && a->store_id[0] && strcmp(store, a->store_id) != 0) {
    /* Its orders are numbered by another store: register, which settles the change. */
    gp__agent_log("the server now serves another store (%s): registering again", store);
    a->registered = false;
    json_decref(doc);
    return;
  }
  json_t *orders = json_object_get(doc, "orders");
  size_t i;
  json_t *o;
  size_t n_orders = json_is_array(orders) ? json_array_size(orders) : 0;
  json_array_foreach(orders, i, o) {
    if (json_is_object(o)) gp__agent_order_execute(a, o);
  }
  json_t *g = json_object_get(doc, "gen");
  if (json_is_integer(g) && json_integer_value(g) >= a->gen) a->gen = json_integer_value(g);
  /* A server that answers at once without long-polling must not make us spin. */
  if (n_orders == 0 && !net->carries_events && gp__agent_now_ms() - net->started_ms < 200)
    net->next_at_ms = gp__agent_now_ms() + 1000;
  json_decref(doc);
}

static void net_step(gp_agent *a) {
  gp__agent_net *net = a->net;
  int running = 0;
  curl_multi_perform(net->multi, &running);
  CURLMsg *m;
  int left = 0;
  while ((m = curl_multi_info_read(net->multi, &left))) {
    if (m->msg != CURLMSG_DONE || m->easy_handle != net->easy) continue;
    CURLcode cc = m->data.result;
    long status = 0;
    curl_easy_getinfo(net->easy, CURLINFO_RESPONSE_CODE, &status);
    call_kind kind = net->kind;
    if (cc == CURLE_WRITE_ERROR && kind == CALL_HEARTBEAT && gp_buf_truncated(&net->response)) {
      /* Not an outage: the server is there but its answer does not fit. Tell it, so the node
       * does not look healthy while it receives no orders. */
      snprintf(a->answer_error, sizeof a->answer_error,
               "a heartbeat answer larger than %zu bytes was cut off", (size_t)RESPONSE_MAX);
      gp__agent_log("%s", a->answer_error);
    }
    if (cc != CURLE_OK) {
      if (!net->outage_logged) {
        gp__agent_log("cannot reach the server %s: %s (retrying%s)", gp__agent_server(a),
                curl_easy_strerror(cc), a->servers.n > 1 ? " with the next one" : "");
        net->followed[0] = '\0'; /* following a leader again after this is news */
      }
      net->outage_logged = true;
      net->failures++;
      next_server(a);
      /* Retry soon (a restarted server is back in a second or two), with a little jitter
       * so that a fleet of agents does not knock in step. */
      int backoff = net->failures < 3 ? 250 << (net->failures - 1) : 1000;
      backoff += (int)(getpid() % 200);
      net->next_at_ms = gp__agent_now_ms() + backoff;
      if (kind == CALL_HEARTBEAT) requeue_inflight(a);
      net_finish(a);
      continue;
    }
    if (net->outage_logged && kind == CALL_HEARTBEAT) gp__agent_log("server reachable again");
    if (status >= 200 && status < 300) net->no_leader_logged = false;
    net->failures = 0;
    net->outage_logged = false;
    if (kind == CALL_REGISTER && followed_to_leader(a, status)) {
      net_finish(a);
      continue;
    }
    if (kind == CALL_REGISTER) on_register_answer(a, status);
    else on_heartbeat_answer(a, status);
    net_finish(a);
  }
}

static void net_schedule(gp_agent *a) {
  gp__agent_net *net = a->net;
  int64_t now = gp__agent_now_ms();
  if (net->kind == CALL_HEARTBEAT && !net->carries_events && (json_array_size(a->events) > 0 || a->probes_dirty)) {
    /* An event, or a replica's readiness, must not wait for the long poll to time out. */
    requeue_inflight(a);
    net_finish(a);
    net->next_at_ms = 0;
  }
  if (net->kind != CALL_NONE || now < net->next_at_ms) return;
  if (!a->registered) start_register(a);
  else start_heartbeat(a);
}

/* ---- set-up ---- */

static int mkdirs(const char *path, gp_err *err) {
  char buf[700];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return gp_err_set(err, GP_EIO, buf, 0, NULL, "cannot create directory: %s",
                        strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST)
    return gp_err_set(err, GP_EIO, buf, 0, NULL, "cannot create directory: %s", strerror(errno));
  return 0;
}

static void detect_host(gp_agent *a) {
  a->cpus = a->cfg.cpus;
  if (a->cpus <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    a->cpus = n > 0 ? n : 1;
  }
  a->mem_mib = a->cfg.mem_mib;
  if (a->mem_mib <= 0) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    a->mem_mib = pages > 0 && page > 0 ? (int64_t)pages * page / (1024 * 1024) : 0;
  }
}

int gp_agent_new(const gp_agent_config *cfg, gp_gpu_backend *backend, gp_agent **ret,
                 gp_err *err) {
  gp_agent *a = gp_xcalloc(1, sizeof *a);
  a->cfg = *cfg;
  a->gpu = backend;
  a->orders = gp_xcalloc(GP_AGENT_MAX_ORDERS_KEPT, sizeof *a->orders);
  a->events = json_array();
  a->checkpoints = json_array();
  a->spot_events = json_array();
  a->inflight = json_array();
  a->heartbeat_s = cfg->heartbeat_s > 0 ? cfg->heartbeat_s : 5;
  a->is_root = geteuid() == 0;
  pthread_mutex_init(&a->stats_lock, NULL);
  a->net = gp_xcalloc(1, sizeof *a->net);
  gp_buf_init(&a->net->response, RESPONSE_MAX);
  /* The features that keep something per job task hear of its life through hooks
   * (agent_hooks.c), registered before the re-adoption below (whose ends fire them), in
   * the order they run: a container's pull events before batch's signal on a round. */
  static const gp__agent_job_hooks *const features[] = {
      &gp__agent_session_hooks, &gp__agent_container_hooks, &gp__agent_steps_hooks,
      &gp__agent_batch_hooks,   &gp__agent_monitor_hooks,   &gp__agent_image_lru_hooks};
  for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) gp__agent_hooks_add(a, features[i]);
  int rc;
  if (!a->cfg.name[0] && gethostname(a->cfg.name, sizeof a->cfg.name - 1) != 0)
    snprintf(a->cfg.name, sizeof a->cfg.name, "localhost");
  if (!a->cfg.server[0]) {
    rc = gp_err_set(err, GP_EINVAL, NULL, 0, "server", "no server URL (--server)");
    goto fail;
  }
  if ((rc = gp_urls_parse(a->cfg.server, "server", &a->servers, err))) goto fail;
  gp_urls job_servers;
  if (a->cfg.job_server[0] && (rc = gp_urls_parse(a->cfg.job_server, "job_server", &job_servers, err))) goto fail;
  for (int i = 0; a->cfg.tls.peer_ca[0] && i < a->servers.n; i++) {
    if (strncmp(a->servers.url[i], "https://", 8) == 0) continue;
    rc = gp_err_set(err, GP_EINVAL, NULL, 0, "server",
                    "tls.server_ca is set, so the server must be an https:// URL, not '%s'",
                    a->servers.url[i]);
    goto fail;
  }
  snprintf(a->jobs_dir, sizeof a->jobs_dir, "%s/jobs", a->cfg.data_dir);
  if ((rc = mkdirs(a->jobs_dir, err)) != 0) goto fail;
  if ((rc = gp__agent_steps_init(a, err)) != 0) goto fail;
  if ((rc = backend->ops->discover(backend, a->gpus, GP_GPU_MAX_DEVICES, &a->n_gpus, err)) != 0)
    goto fail;
  /* No driver here: jobs get a simulated nvidia-smi that says so (never with real GPUs). */
  if (!backend->ops->has_driver) gp__agent_sim_bin_write(a);
  /* Slurm scripts call `scontrol show hostnames`, squeue, ...: the gpool binary answers by
   * those names. */
  if (a->cfg.self_exe[0] &&
      gp__agent_slurm_bin_write(a->cfg.data_dir, a->cfg.self_exe, a->slurm_bin, sizeof a->slurm_bin))
    gp__agent_log("cannot link %s/bin/scontrol (and sbatch, squeue, ...) to %s (%s): jobs get none", a->cfg.data_dir,
                  a->cfg.self_exe, strerror(errno));
  gp__agent_bash_env_init(a);
  for (int i = 0; i < a->n_gpus; i++) {
    const gp_gpu_mode *m = gp_agent_config_gpu_mode(&a->cfg, i);
    a->gpu_mode[i] = m->mode;
    a->gpu_replicas[i] = m->mode == GP_MODE_TIMESLICE ? m->replicas : 1;
    if (a->gpus[i].mig_enabled && m->mode != GP_MODE_MIG && a->gpus[i].n_mig > 0)
      a->gpu_mode[i] = GP_MODE_MIG; /* the GPU is partitioned: say so, whatever the config */
  }
  for (int i = a->n_gpus; i < GP_GPU_MAX_DEVICES; i++)
    if (cfg->gpus[i].set) gp__agent_log("config names GPU %d, which this node does not have", i);
  detect_host(a);
  if (gp_cgroup_probe(a->cfg.cgroup_root, &a->cgroup) != 0) gp__agent_log("%s", a->cgroup.message);
  gp_agent_container_detect(&a->cfg.container, "", &a->container);
  gp__agent_log("%s", a->container.message);
  gp__agent_orders_load(a);
  gp__agent_identity_load(a);
  gp__agent_jobs_adopt(a);
  if ((rc = gp__agent_mig_apply_config(a)) != 0) {
    gp_err_set(err, rc, NULL, 0, "gpus", "cannot apply the configured MIG layouts (see log)");
    goto fail;
  }
  if ((rc = gp__agent_monitor_new(a, err)) != 0) goto fail;
  a->net->multi = curl_multi_init();
  if ((rc = gp__agent_http_start(a, err)) != 0) goto fail;
  if ((rc = gp__agent_spot_start(a, err)) != 0) goto fail;
  if ((rc = gp__agent_probes_start(a, err)) != 0) goto fail;
  gp__agent_stats_update(a);
  *ret = a;
  return 0;
fail:
  gp_agent_free(a);
  return rc;
}

const char *gp_agent_url(const gp_agent *a) { return a->url; }

/* Checkpoints reported to the endpoint become events (for jobs still running here). */
static void take_checkpoints(gp_agent *a) {
  pthread_mutex_lock(&a->stats_lock);
  json_t *list = a->checkpoints;
  a->checkpoints = json_array();
  pthread_mutex_unlock(&a->stats_lock);
  size_t i;
  json_t *ev;
  json_array_foreach(list, i, ev) {
    const json_t *task = json_object_get(ev, "task");
    gp__agent_job *j = gp__agent_job_find_task(a, json_string_value(json_object_get(ev, "job")),
                                               json_is_integer(task) ? (int)json_integer_value(task) : -1);
    if (j && !j->ended) gp__agent_event(a, json_incref(ev));
  }
  json_decref(list);
}

/* SIGCHLD wakes the loop through a pipe, so a job's end is noticed at once. */
static int sigchld_pipe[2] = {-1, -1};

static void on_sigchld(int sig) {
  (void)sig;
  int saved = errno;
  if (sigchld_pipe[1] >= 0 && write(sigchld_pipe[1], "c", 1) < 0) {}
  errno = saved;
}

int gp_agent_run(gp_agent *a, volatile sig_atomic_t *stop) {
  if (sigchld_pipe[0] < 0 && pipe2(sigchld_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
  }
  while (!*stop) {
    gp__agent_jobs_tick(a);
    gp__agent_steps_tick(a);
    gp__agent_monitor_tick(a);
    take_checkpoints(a);
    gp__agent_spot_take(a); /* a notice goes out in the next heartbeat, started at once */
    gp__agent_probes_tick(a);
    net_schedule(a);
    net_step(a);
    gp__agent_stats_update(a);
    /* A call just finished and the next may start now (e.g. events to send): no sleep. */
    if (a->net->kind == CALL_NONE && gp__agent_now_ms() >= a->net->next_at_ms) continue;
    struct curl_waitfd wake = {sigchld_pipe[0], CURL_WAIT_POLLIN, 0};
    int numfds = 0;
    /* 50 ms bounds how late an adopted job's end or a grace deadline is noticed. */
    curl_multi_poll(a->net->multi, sigchld_pipe[0] >= 0 ? &wake : NULL,
                    sigchld_pipe[0] >= 0 ? 1 : 0, 50, &numfds);
    char drain[64];
    while (sigchld_pipe[0] >= 0 && read(sigchld_pipe[0], drain, sizeof drain) > 0) {}
  }
  size_t running = 0;
  for (size_t i = 0; i < a->n_jobs; i++) running += !a->jobs[i]->ended;
  gp__agent_log("stopping; %zu job(s) keep running and will be re-adopted on restart%s", running,
          a->n_jobs > running ? " (ends not yet reported to the server will be reported then)"
                              : "");
  return 0;
}

void gp_agent_free(gp_agent *a) {
  if (!a) return;
  gp__agent_spot_stop(a);
  gp__agent_probes_stop(a);
  gp__agent_http_stop(a);
  gp__agent_monitor_free(a);
  if (a->net) {
    if (a->net->multi) {
      net_finish(a);
      curl_multi_cleanup(a->net->multi);
    }
    gp_buf_done(&a->net->response);
    free(a->net);
  }
  for (size_t i = 0; i < a->n_jobs; i++) free(a->jobs[i]);
  free(a->jobs);
  gp__agent_steps_free(a);
  free(a->orders);
  gp__agent_pulls_free(a);
  if (a->orders_log) fclose(a->orders_log);
  json_decref(a->events);
  json_decref(a->images);
  json_decref(a->models);
  free(a->image_use);
  gp__agent_private_free(a);
  json_decref(a->checkpoints);
  json_decref(a->spot_events);
  json_decref(a->inflight);
  if (a->gpu) a->gpu->ops->close(a->gpu);
  pthread_mutex_destroy(&a->stats_lock);
  free(a);
}
