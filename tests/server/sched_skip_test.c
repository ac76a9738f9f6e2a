/* SPDX-License-Identifier: Apache-2.0 */
/* Skipped scheduling steps (src/server/cycle/schedule.c): a cycle in which nothing the view holds
 * changed and the last plan still holds (gp_plan.valid_until) runs no step, and each thing
 * a step depends on ends that: a job submitted, a node changed, a job ended, and time
 * reaching a job's begin time with nothing else changing. Heartbeats alone change nothing.
 * (The server runs with GPOOL_SCHED_CHECK under ctest: each skip is checked against a full
 * step, which aborts on any difference.) */
#include "test.h"
#include "srv_util.h"

/* gpool_scheduling_steps_skipped_total from /metrics. */
static double skipped(const tsrv *t) {
  CURL *h = curl_easy_init();
  char url[160];
  snprintf(url, sizeof url, "%s/metrics", t->base);
  gp_buf out;
  gp_buf_init(&out, 0);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  REQUIRE(curl_easy_perform(h) == CURLE_OK);
  curl_easy_cleanup(h);
  REQUIRE(!gp_buf_truncated(&out) && out.data);
  const char *m = strstr(out.data, "\ngpool_scheduling_steps_skipped_total ");
  REQUIRE(m);
  double v = atof(m + strlen("\ngpool_scheduling_steps_skipped_total "));
  gp_buf_done(&out);
  return v;
}

/* The node's heartbeat (it would be lost after node_timeout_s without one). */
static void beat(const tsrv *t) {
  json_t *hb = tsrv_heartbeat(t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  json_decref(hb);
}

/* Heartbeats for ms milliseconds. */
static void beat_for(const tsrv *t, int ms) {
  for (int64_t end = tsrv_now_ms() + ms; tsrv_now_ms() < end;) {
    beat(t);
    usleep(100000);
  }
}

static const char *reason(const tsrv *t, const char *id, char *buf, size_t cap) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  json_t *o = NULL;
  tsrv_call(t, "GET", path, ADMIN, NULL, &o);
  snprintf(buf, cap, "%s", job_str(o, "pending_reason"));
  json_decref(o);
  return buf;
}

/* Waits (heartbeating, up to ms) until job id's pending reason is `want`. */
static bool wait_reason(const tsrv *t, const char *id, const char *want, int ms) {
  char buf[64];
  for (int64_t end = tsrv_now_ms() + ms; tsrv_now_ms() < end;) {
    if (strcmp(reason(t, id, buf, sizeof buf), want) == 0) return true;
    beat(t);
    usleep(50000);
  }
  fprintf(stderr, "  job %s: reason %s, not %s\n", id, reason(t, id, buf, sizeof buf), want);
  return false;
}

static void a_cycle_skips_its_step_until_something_it_reads_changes(void) {
  tsrv t = {0};
  tsrv_start(&t);
  REQUIRE(tsrv_register(&t, "n1", 1, NULL) == 201);
  char *a = tsrv_submit(&t, ALICE, "{\"command\": [\"sleep\", \"100\"], \"gpus\": 1}");
  REQUIRE(a);
  CHECK(tsrv_wait_state(&t, a, "running"));
  /* Nothing changes but heartbeats: cycles (every 50 ms) skip their step. */
  beat_for(&t, 300);
  double s0 = skipped(&t);
  beat_for(&t, 600);
  CHECK(skipped(&t) >= s0 + 3);
  /* A submission: the next cycle steps and gives the job its reason. */
  char *b = tsrv_submit(&t, ALICE, "{\"command\": [\"true\"], \"gpus\": 1}");
  REQUIRE(b);
  CHECK(wait_reason(&t, b, "Resources", 3000));
  /* A begin time 2 s ahead: BeginTime until then, Resources after, with nothing else
   * changing on the way (the plan said until when it held). */
  char body[160];
  snprintf(body, sizeof body, "{\"command\": [\"true\"], \"gpus\": 1, \"begin_at\": %lld}",
           (long long)time(NULL) + 2);
  char *c = tsrv_submit(&t, ALICE, body);
  REQUIRE(c);
  CHECK(wait_reason(&t, c, "BeginTime", 3000));
  beat_for(&t, 300);
  double s1 = skipped(&t);
  CHECK(wait_reason(&t, c, "Resources", 5000));
  CHECK(skipped(&t) > s1); /* (it waited through skipped cycles) */
  /* A node changed: cordoned, no job has a node left to wait for. */
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/cordon", ADMIN, "{}"));
  char buf[64];
  for (int i = 0; i < 60 && strcmp(reason(&t, b, buf, sizeof buf), "Resources") == 0; i++) {
    beat(&t);
    usleep(50000);
  }
  CHECK(strcmp(reason(&t, b, buf, sizeof buf), "Resources") != 0);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/resume", ADMIN, "{}"));
  CHECK(wait_reason(&t, b, "Resources", 3000));
  /* A job ended: its GPU goes to the next. */
  char ev[256];
  snprintf(ev, sizeof ev, "[{\"kind\": \"started\", \"job\": \"%s\", \"pid\": 42}, "
                          "{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 0, \"reason\": \"exited\"}]", a, a);
  json_t *r = tsrv_heartbeat(&t, "n1", 0, 0, ev);
  REQUIRE(r);
  json_decref(r);
  CHECK(tsrv_wait_state(&t, a, "completed"));
  CHECK(tsrv_wait_state(&t, b, "running")); /* (the first in line) */
  free(a);
  free(b);
  free(c);
  tsrv_stop(&t);
}

GP_TESTS(a_cycle_skips_its_step_until_something_it_reads_changes)
