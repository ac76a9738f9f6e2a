/* SPDX-License-Identifier: Apache-2.0 */
/* What an agent reports against what the server believes runs on its node
 * (src/server/workloads/node_report.c): a running job its agent no longer lists, with its start
 * acknowledged, is ended after a grace of a heartbeat period and two heartbeats (requeued
 * when it allows it, else failed with a reason that says why) and its GPUs are free again;
 * a listed job, a job whose start is not yet acknowledged and a node whose heartbeats carry
 * no list are left alone. A real server on 127.0.0.1 with a hand-driven agent. */
#include "test.h"
#include "srv_util.h"

/* One heartbeat acknowledging `gen` that lists `jobs` (a JSON array, NULL: no list). */
static long long beat(tsrv *t, long long gen, const char *jobs) {
  char body[1024];
  snprintf(body, sizeof body, "{\"node\": \"n1\", \"gen\": %lld, \"wait_ms\": 0, \"events\": []%s%s}",
           gen, jobs ? ", \"jobs\": " : "", jobs ? jobs : "");
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_agent_call(t, "/v1/agent/heartbeat", body, &o));
  long long g = (long long)json_integer_value(json_object_get(o, "gen"));
  json_decref(o);
  return g;
}

static json_t *show(tsrv *t, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(t, "GET", path, ADMIN, NULL, &o));
  return o;
}

static bool timeline_has(json_t *o, const char *event, const char *reason_part) {
  json_t *tl = json_object_get(json_object_get(o, "job"), "timeline");
  for (size_t i = 0; i < json_array_size(tl); i++) {
    json_t *e = json_array_get(tl, i);
    const char *r = json_string_value(json_object_get(e, "reason"));
    if (strcmp(json_string_value(json_object_get(e, "event")), event) == 0 && r && strstr(r, reason_part))
      return true;
  }
  return false;
}

static void a_job_its_agent_does_not_list_is_ended_and_frees_its_gpus(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "heartbeat_s: 1\n", NULL);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *keep = tsrv_submit(&t, ALICE, "{\"command\": [\"k\"], \"gpus\": 1}");
  char *again = tsrv_submit(&t, ALICE, "{\"command\": [\"r\"], \"gpus\": 1, \"requeue\": true}");
  char *gone = tsrv_submit(&t, ALICE, "{\"command\": [\"g\"], \"gpus\": 6}");
  REQUIRE(keep && again && gone);
  CHECK(tsrv_wait_state(&t, keep, "running"));
  CHECK(tsrv_wait_state(&t, again, "running"));
  CHECK(tsrv_wait_state(&t, gone, "running"));
  /* Heartbeats without a list (an older agent) leave everything as it is. */
  long long gen = beat(&t, 0, NULL);
  CHECK(gen > 0);
  for (int i = 0; i < 8; i++) {
    beat(&t, gen, NULL);
    usleep(250000);
  }
  json_t *o = show(&t, gone);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  /* The agent acknowledged the three starts and lists only one job. */
  char list[128];
  snprintf(list, sizeof list, "[{\"id\": \"%s\", \"pid\": 7}]", keep);
  int64_t t0 = tsrv_now_ms();
  beat(&t, gen, list);
  int64_t ended_ms = 0;
  for (int i = 0; i < 40 && !ended_ms; i++) {
    usleep(100000);
    beat(&t, gen, list);
    o = show(&t, gone);
    if (strcmp(job_str(o, "state"), "failed") == 0) ended_ms = tsrv_now_ms() - t0;
    json_decref(o);
  }
  CHECK(ended_ms > 0);
  /* Not before a heartbeat period (1 s here), within two or three. */
  CHECK(ended_ms >= 1000);
  CHECK(ended_ms <= 3500);
  o = show(&t, gone);
  CHECK_CONTAINS(job_str(o, "end_reason"), "the agent on node n1 does not run the job");
  json_decref(o);
  /* The requeueable one went back to the queue, as for a lost node, and runs again. */
  o = show(&t, again);
  CHECK(timeline_has(o, "lost", "does not run the job"));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(json_object_get(o, "job"), "restarts")));
  json_decref(o);
  CHECK(tsrv_wait_state(&t, again, "running"));
  o = show(&t, keep);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  /* Its new start is not acknowledged yet: the agent may not have it, it stays. The six
   * GPUs of the lost job take a new one. */
  char *next = tsrv_submit(&t, ALICE, "{\"command\": [\"n\"], \"gpus\": 6}");
  REQUIRE(next);
  CHECK(tsrv_wait_state(&t, next, "running"));
  for (int i = 0; i < 12; i++) {
    beat(&t, gen, list);
    usleep(250000);
  }
  o = show(&t, again);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  o = show(&t, next);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  free(keep);
  free(again);
  free(gone);
  free(next);
  tsrv_stop(&t);
}

/* An end the agent has seen but not yet sent ("ended") is waited for, not declared lost. */
static void an_end_on_its_way_is_waited_for(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "heartbeat_s: 1\n", NULL);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"e\"], \"gpus\": 1}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running"));
  long long gen = beat(&t, 0, NULL);
  char body[512];
  for (int i = 0; i < 8; i++) {
    snprintf(body, sizeof body, "{\"node\": \"n1\", \"gen\": %lld, \"wait_ms\": 0, \"events\": [],"
             " \"jobs\": [], \"ended\": [\"%s\"]}", gen, id);
    json_t *o = NULL;
    CHECK_EQ_INT(200, tsrv_agent_call(&t, "/v1/agent/heartbeat", body, &o));
    json_decref(o);
    usleep(250000);
  }
  json_t *o = show(&t, id);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  /* A malformed list is no list: nothing is ended on its word. */
  for (int i = 0; i < 8; i++) {
    beat(&t, gen, "[{\"pid\": 3}]");
    usleep(250000);
  }
  o = show(&t, id);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  free(id);
  tsrv_stop(&t);
}

/* A job being cancelled whose end was lost ends cancelled, as its stop asked. */
static void a_stopping_job_ends_as_its_stop_asked(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "heartbeat_s: 1\n", NULL);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"c\"], \"gpus\": 1, \"requeue\": true}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running"));
  char list[128];
  snprintf(list, sizeof list, "[{\"id\": \"%s\", \"pid\": 9}]", id);
  long long gen = beat(&t, 0, list);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", path, ALICE, NULL));
  gen = beat(&t, gen, list); /* the stop order */
  bool ended = false;
  for (int i = 0; i < 40 && !ended; i++) {
    beat(&t, gen, "[]");
    usleep(100000);
    json_t *o = show(&t, id);
    ended = strcmp(job_str(o, "state"), "cancelled") == 0;
    json_decref(o);
  }
  CHECK(ended);
  json_t *o = show(&t, id);
  CHECK_EQ_INT(0, json_integer_value(json_object_get(json_object_get(o, "job"), "restarts")));
  json_decref(o);
  free(id);
  tsrv_stop(&t);
}

GP_TESTS(a_job_its_agent_does_not_list_is_ended_and_frees_its_gpus, an_end_on_its_way_is_waited_for,
         a_stopping_job_ends_as_its_stop_asked)
