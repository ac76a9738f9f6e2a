/* SPDX-License-Identifier: Apache-2.0 */
/* The queues' idle policy on a real server, its agent played by the test: jobs whose
 * reports show no SM use past their queue's window are notified (once), requeued through
 * the stop handshake or cancelled as the policy and the job allow, and fall back to a
 * notice when the action may not touch them; a busy job, a job whose use is unknown (MPS:
 * no sm_busy_gpu_s, whatever the device shows), a job inside its grace and an interactive
 * job under its own longer window are left alone. The policy is set through the queues API
 * and read back from it. */
#include <sys/time.h>

#include "test.h"
#include "srv_util.h"

#define NJOBS 10

typedef struct job {
  const char *queue, *extra; /* extra submission fields */
  char *id;
  int usage;                 /* 0: idle, 1: busy, 2: no SM figure (MPS), -1: not reported */
} job;

enum { NOTIFY, REQUEUE, NOT_REQUEUEABLE, CANCEL, NOT_OPPORTUNISTIC, BUSY, MPS, GRACED,
       INTERACTIVE, NOTEBOOK_BATCH };

static job jobs[NJOBS] = {
    [NOTIFY] = {"idle-notify", "", NULL, 0},
    [REQUEUE] = {"idle-requeue", ", \"requeue\": true, \"signal\": \"USR1\", \"grace_s\": 7", NULL, 0},
    [NOT_REQUEUEABLE] = {"idle-requeue", "", NULL, 0},
    [CANCEL] = {"idle-cancel", ", \"priority\": \"opportunistic\"", NULL, 0},
    [NOT_OPPORTUNISTIC] = {"idle-cancel", ", \"requeue\": true", NULL, 0},
    [BUSY] = {"idle-requeue", ", \"requeue\": true", NULL, 1},
    [MPS] = {"idle-requeue", ", \"requeue\": true", NULL, 2},
    [GRACED] = {"idle-graced", ", \"requeue\": true", NULL, 0},
    [INTERACTIVE] = {"idle-notebooks", ", \"requeue\": true, \"priority\": \"interactive\"", NULL, 0},
    [NOTEBOOK_BATCH] = {"idle-notebooks", ", \"requeue\": true", NULL, 0},
};

static double now_s(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void put_queue(tsrv *t, const char *name, const char *policy) {
  char path[128], body[512];
  snprintf(path, sizeof path, "/v1/queues/%s", name);
  snprintf(body, sizeof body, "{\"users\": [\"*\"], \"deserved\": 2, \"idle_policy\": %s}", policy);
  long code = tsrv_req(t, "PUT", path, ADMIN, body);
  if (code != 200 && code != 201) fprintf(stderr, "PUT %s: %ld\n", path, code);
  CHECK(code == 200 || code == 201);
}

/* One heartbeat from n1 with every reported job's cumulative figures `elapsed` seconds in,
 * the device at 0% (the fleet view; the jobs are judged by their own figures), and the
 * events given. Returns the answer. */
static json_t *beat(tsrv *t, long long gen, double elapsed, const char *events) {
  char body[8192];
  int n = snprintf(body, sizeof body, "{\"node\": \"n1\", \"gen\": %lld, \"wait_ms\": 0, \"events\": %s,"
                   " \"gpus\": [", gen, events ? events : "[]");
  for (int g = 0; g < 16; g++)
    n += snprintf(body + n, sizeof body - (size_t)n, "%s{\"index\": %d, \"telemetry\": {\"gpu_util_pct\": %d}}",
                  g ? "," : "", g, g == 0 ? 100 : 0);
  n += snprintf(body + n, sizeof body - (size_t)n, "], \"jobs\": [");
  bool first = true;
  for (int i = 0; i < NJOBS; i++) {
    if (jobs[i].usage < 0) continue;
    char use[160];
    if (jobs[i].usage == 2) snprintf(use, sizeof use, "{\"energy_j\": %.1f}", elapsed * 300);
    else snprintf(use, sizeof use, "{\"sm_busy_gpu_s\": %.3f, \"energy_j\": %.1f}",
                  jobs[i].usage == 1 ? elapsed : 0.0, elapsed * 300);
    n += snprintf(body + n, sizeof body - (size_t)n, "%s{\"id\": \"%s\", \"usage\": %s}",
                  first ? "" : ",", jobs[i].id, use);
    first = false;
  }
  snprintf(body + n, sizeof body - (size_t)n, "]}");
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_agent_call(t, "/v1/agent/heartbeat", body, &o));
  return o;
}

static json_t *get_job(tsrv *t, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  tsrv_req(t, "GET", path, ADMIN, NULL);
  return json_object_get(t->last, "job");
}

/* The job's `idle` events. */
static int idle_events(tsrv *t, const char *id, json_t **last) {
  json_t *tl = json_object_get(get_job(t, id), "timeline");
  int n = 0;
  for (size_t i = 0; i < json_array_size(tl); i++) {
    json_t *e = json_array_get(tl, i);
    if (strcmp(json_string_value(json_object_get(e, "event")), "idle") == 0) {
      n++;
      if (last) *last = json_deep_copy(e);
    }
  }
  return n;
}

static const char *event_str(json_t *e, const char *key) {
  const char *v = json_string_value(json_object_get(e, key));
  return v ? v : "";
}

/* The stop order for job `id` in a heartbeat's answer, or NULL. */
static json_t *stop_for(json_t *hb, const char *id) {
  json_t *orders = json_object_get(hb, "orders");
  for (size_t i = 0; i < json_array_size(orders); i++) {
    json_t *o = json_array_get(orders, i);
    if (strcmp(event_str(o, "kind"), "stop") == 0 && strcmp(event_str(o, "job"), id) == 0) return o;
  }
  return NULL;
}

/* GET /metrics as text (malloc'd). */
static char *metrics(const tsrv *t) {
  CURL *h = curl_easy_init();
  char url[128];
  snprintf(url, sizeof url, "%s/metrics", t->base);
  gp_buf out;
  gp_buf_init(&out, 0);
  struct curl_slist *hdrs = curl_slist_append(NULL, "Authorization: Bearer " ADMIN);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  CHECK(curl_easy_perform(h) == CURLE_OK);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  char *text = strdup(out.data ? out.data : "");
  gp_buf_done(&out);
  return text;
}

static void the_policy_acts_on_idle_jobs_as_it_may(void) {
  tsrv t = {0};
  tsrv_start(&t);
  put_queue(&t, "idle-notify", "{\"window\": 1, \"grace\": 0}");
  put_queue(&t, "idle-requeue", "{\"window\": \"1s\", \"grace\": 0, \"action\": \"requeue\"}");
  put_queue(&t, "idle-cancel", "{\"window\": 1, \"grace\": 0, \"action\": \"cancel\"}");
  put_queue(&t, "idle-graced", "{\"window\": 1, \"grace\": \"1h\", \"action\": \"requeue\"}");
  put_queue(&t, "idle-notebooks", "{\"window\": 1, \"grace\": 0, \"action\": \"requeue\","
                                  " \"interactive\": {\"window\": \"1h\"}}");
  /* The API shows the policy as it reads it, defaults filled in. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/idle-notebooks", ADMIN, NULL));
  json_t *q = json_object_get(t.last, "queue");
  if (!q) q = t.last;
  json_t *pol = json_object_get(q, "idle_policy");
  CHECK_NEAR(5, json_number_value(json_object_get(pol, "threshold_pct")), 1e-9);
  CHECK_EQ_STR("requeue", event_str(pol, "action"));
  CHECK_EQ_INT(3600, json_integer_value(json_object_get(json_object_get(pol, "interactive"), "window")));

  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 16, NULL));
  for (int i = 0; i < NJOBS; i++) {
    char body[300];
    snprintf(body, sizeof body, "{\"command\": [\"x\"], \"gpus\": 1, \"queue\": \"%s\"%s}",
             jobs[i].queue, jobs[i].extra);
    jobs[i].id = tsrv_submit(&t, ADMIN, body);
    REQUIRE(jobs[i].id);
  }
  for (int i = 0; i < NJOBS; i++) REQUIRE(tsrv_wait_state(&t, jobs[i].id, "running"));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  long long gen = (long long)json_integer_value(json_object_get(hb, "gen"));
  json_decref(hb);

  /* Reports every 0.5 s (the node's timeout is 2 s) until the first span is judged (4 s)
   * and the tick has acted on it. */
  double t0 = now_s();
  json_t *stop_requeue = NULL, *stop_cancel = NULL;
  for (int k = 0; k < 40 && !(stop_requeue && stop_cancel); k++) {
    hb = beat(&t, gen, now_s() - t0, NULL);
    REQUIRE(hb);
    gen = (long long)json_integer_value(json_object_get(hb, "gen"));
    if (!stop_requeue && stop_for(hb, jobs[REQUEUE].id)) stop_requeue = json_deep_copy(stop_for(hb, jobs[REQUEUE].id));
    if (!stop_cancel && stop_for(hb, jobs[CANCEL].id)) stop_cancel = json_deep_copy(stop_for(hb, jobs[CANCEL].id));
    json_decref(hb);
    usleep(500000);
  }
  REQUIRE(stop_requeue && stop_cancel);
  /* The handshake of a preemption: the job's own signal and grace. */
  CHECK_EQ_STR("USR1", event_str(stop_requeue, "signal"));
  CHECK_EQ_INT(7, json_integer_value(json_object_get(stop_requeue, "grace_s")));
  CHECK_EQ_STR("idle", event_str(stop_requeue, "reason"));
  json_decref(stop_requeue);
  json_decref(stop_cancel);
  CHECK_EQ_STR("stopping", event_str(get_job(&t, jobs[REQUEUE].id), "state"));

  /* The notices, with the figures and why the action fell back. */
  json_t *e = NULL;
  CHECK_EQ_INT(1, idle_events(&t, jobs[NOTIFY].id, &e));
  CHECK_EQ_STR("notify", event_str(e, "action"));
  CHECK_NEAR(5, json_number_value(json_object_get(e, "threshold_pct")), 1e-9);
  CHECK_EQ_INT(1, json_integer_value(json_object_get(e, "window_s")));
  CHECK_EQ_INT(0, json_integer_value(json_object_get(e, "grace_s")));
  CHECK_NEAR(0, json_number_value(json_object_get(e, "util_pct")), 1e-9);
  CHECK(json_integer_value(json_object_get(e, "idle_for_s")) >= 1);
  CHECK(json_integer_value(json_object_get(e, "idle_since")) > 0);
  json_decref(e);
  e = NULL;
  CHECK_EQ_INT(1, idle_events(&t, jobs[NOT_REQUEUEABLE].id, &e));
  CHECK_EQ_STR("notify", event_str(e, "action"));
  CHECK_EQ_STR("the job is not requeueable", event_str(e, "why"));
  json_decref(e);
  e = NULL;
  CHECK_EQ_INT(1, idle_events(&t, jobs[NOT_OPPORTUNISTIC].id, &e));
  CHECK_EQ_STR("notify", event_str(e, "action"));
  CHECK_CONTAINS(event_str(e, "why"), "opportunistic");
  json_decref(e);
  e = NULL;
  CHECK_EQ_INT(1, idle_events(&t, jobs[NOTEBOOK_BATCH].id, &e));
  CHECK_EQ_STR("requeue", event_str(e, "action"));
  json_decref(e);
  /* The running idle job shows it, with the policy's verdict. */
  json_t *idle = json_object_get(get_job(&t, jobs[NOTIFY].id), "idle");
  CHECK(json_integer_value(json_object_get(idle, "since")) > 0);
  CHECK_EQ_STR("notify", event_str(idle, "action"));
  CHECK(json_is_true(json_object_get(idle, "acted")));

  /* The agent ends the two stopped jobs: one back to pending, one cancelled. */
  char ev[512];
  snprintf(ev, sizeof ev,
           "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 0, \"signal\": 10},"
           " {\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 143, \"signal\": 15}]",
           jobs[REQUEUE].id, jobs[CANCEL].id);
  jobs[REQUEUE].usage = jobs[CANCEL].usage = jobs[NOTEBOOK_BATCH].usage = -1;
  json_decref(beat(&t, gen, now_s() - t0, ev));
  json_t *j = get_job(&t, jobs[REQUEUE].id);
  CHECK_EQ_INT(1, json_integer_value(json_object_get(j, "restarts")));
  const char *st = event_str(j, "state");
  CHECK(strcmp(st, "pending") == 0 || strcmp(st, "running") == 0);
  json_t *tl = json_object_get(j, "timeline");
  bool requeued = false;
  for (size_t i = 0; i < json_array_size(tl); i++) {
    json_t *ev_i = json_array_get(tl, i);
    if (strcmp(event_str(ev_i, "event"), "requeued") == 0) {
      requeued = true;
      CHECK_EQ_STR("idle: under 5% SM for 1 s", event_str(ev_i, "reason"));
    }
  }
  CHECK(requeued);
  j = get_job(&t, jobs[CANCEL].id);
  CHECK_EQ_STR("cancelled", event_str(j, "state"));
  CHECK_EQ_STR("idle: under 5% SM for 1 s", event_str(j, "end_reason"));

  /* Another judged span: the notified job stays idle in the same stretch, no second
   * notice; the others are still left alone. */
  double t1 = now_s();
  for (int k = 0; k < 12 && now_s() - t1 < 5.5; k++) {
    hb = beat(&t, gen, now_s() - t0, NULL);
    REQUIRE(hb);
    gen = (long long)json_integer_value(json_object_get(hb, "gen"));
    json_decref(hb);
    usleep(500000);
  }
  CHECK_EQ_INT(1, idle_events(&t, jobs[NOTIFY].id, NULL));
  char *m = metrics(&t);
  CHECK_CONTAINS(m, "gpool_idle_actions_total{queue=\"idle-notify\",action=\"notify\"} 1\n");
  CHECK_CONTAINS(m, "gpool_idle_actions_total{queue=\"idle-requeue\",action=\"notify\"} 1\n");
  CHECK_CONTAINS(m, "gpool_idle_actions_total{queue=\"idle-requeue\",action=\"requeue\"} 1\n");
  CHECK_CONTAINS(m, "gpool_idle_actions_total{queue=\"idle-cancel\",action=\"cancel\"} 1\n");
  CHECK_CONTAINS(m, "gpool_idle_actions_total{queue=\"idle-graced\",action=\"requeue\"} 0\n");
  /* Idle past their window now: the notified job, the two fallbacks and the graced job;
   * not the interactive one, whose window is an hour. */
  CHECK_CONTAINS(m, "gpool_jobs_idle{queue=\"idle-notify\"} 1\n");
  CHECK_CONTAINS(m, "gpool_jobs_idle{queue=\"idle-requeue\"} 1\n");
  CHECK_CONTAINS(m, "gpool_jobs_idle{queue=\"idle-graced\"} 1\n");
  CHECK_CONTAINS(m, "gpool_jobs_idle{queue=\"idle-notebooks\"} 0\n");
  free(m);
  static const int never[] = {BUSY, MPS, GRACED, INTERACTIVE};
  for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
    job *x = &jobs[never[i]];
    j = get_job(&t, x->id);
    if (idle_events(&t, x->id, NULL) != 0) fprintf(stderr, "  job %d was acted on\n", never[i]);
    CHECK_EQ_INT(0, idle_events(&t, x->id, NULL));
    CHECK_EQ_STR("running", event_str(get_job(&t, x->id), "state"));
  }
  /* What they show: the busy job its use, the MPS job nothing, the graced one idle with
   * the policy's time after the grace. */
  idle = json_object_get(get_job(&t, jobs[BUSY].id), "idle");
  CHECK(json_is_null(json_object_get(idle, "since")));
  CHECK(json_number_value(json_object_get(idle, "util_pct")) > 50);
  CHECK(json_is_null(json_object_get(get_job(&t, jobs[MPS].id), "idle")));
  j = get_job(&t, jobs[GRACED].id);
  idle = json_object_get(j, "idle");
  CHECK(json_integer_value(json_object_get(idle, "since")) > 0);
  CHECK_EQ_INT(json_integer_value(json_object_get(j, "started_at")) + 3600,
               json_integer_value(json_object_get(idle, "due_at")));
  CHECK(!json_is_true(json_object_get(idle, "acted")));
  for (int i = 0; i < NJOBS; i++) free(jobs[i].id);
  tsrv_stop(&t);
}

static void a_bad_policy_is_refused_naming_the_key(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/queues/idle-bad", ADMIN,
                             "{\"users\": [\"*\"], \"idle_policy\": {\"window\": 0}}"));
  CHECK_EQ_STR("idle_policy.window", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/queues/idle-bad", ADMIN,
                             "{\"users\": [\"*\"], \"idle_policy\": {\"action\": \"kill\"}}"));
  CHECK_EQ_STR("idle_policy.action", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/queues/idle-bad", ADMIN,
                             "{\"users\": [\"*\"], \"idle_policy\": 5}"));
  CHECK_EQ_STR("idle_policy", err_field(t.last));
  tsrv_stop(&t);
  /* The config file: the queue's index and the key. */
  gp_server_config *cfg = NULL;
  gp_err e = {0};
  const char *text = "listen: 127.0.0.1:0\ndata_dir: /tmp\nqueues:\n  - {name: a}\n"
                     "  - {name: b, idle_policy: {window: 10m, treshold_pct: 3}}\n";
  CHECK(gp_server_config_parse("s.yaml", text, strlen(text), &cfg, &e) != 0);
  char said[1024];
  gp_err_format(&e, said, sizeof said);
  CHECK_CONTAINS(said, "queues[1].idle_policy");
  CHECK_CONTAINS(said, "treshold_pct");
  gp_server_config_free(cfg);
}

GP_TESTS(the_policy_acts_on_idle_jobs_as_it_may, a_bad_policy_is_refused_naming_the_key)
