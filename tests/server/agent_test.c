/* SPDX-License-Identifier: Apache-2.0 */
/* The agent protocol as an agent meets it: registration, a long poll that wakes within
 * 100 ms of a new start order, orders re-sent until acknowledged by generation, exits
 * that end jobs with their exit code, cancels with the stop handshake, re-adoption after
 * an agent restart, and a node that goes silent being marked down with its jobs requeued
 * or failed. */
#include <pthread.h>

#include "test.h"
#include "srv_util.h"

static json_t *first_order(json_t *hb) { return json_array_get(json_object_get(hb, "orders"), 0); }
static long long hb_gen(json_t *hb) { return (long long)json_integer_value(json_object_get(hb, "gen")); }

static void a_job_runs_and_completes_with_its_exit_code(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"train\"], \"gpus\": 2}");
  REQUIRE(id);
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 3000, NULL);
  REQUIRE(hb);
  json_t *o = first_order(hb);
  REQUIRE(o);
  CHECK_EQ_STR("start", json_string_value(json_object_get(o, "kind")));
  json_t *job = json_object_get(o, "job");
  CHECK_EQ_STR(id, json_string_value(json_object_get(job, "id")));
  CHECK_EQ_INT(0, json_integer_value(json_object_get(job, "task_index")));
  json_t *pl = json_array_get(json_object_get(job, "placements"), 0);
  CHECK_EQ_STR("n1", json_string_value(json_object_get(pl, "node")));
  CHECK_EQ_INT(2, json_array_size(json_object_get(pl, "gpu_uuids")));
  CHECK_CONTAINS(json_string_value(json_array_get(json_object_get(pl, "gpu_uuids"), 0)), "GPU-n1-");
  long long gen = hb_gen(hb);
  CHECK(gen > 0);
  /* Not acknowledged: sent again. Acknowledged: not sent again. */
  json_t *again = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(again);
  CHECK_EQ_STR(json_string_value(json_object_get(o, "id")), json_string_value(json_object_get(first_order(again), "id")));
  json_decref(again);
  json_t *acked = tsrv_heartbeat(&t, "n1", gen, 0, NULL);
  REQUIRE(acked);
  CHECK_EQ_INT(0, json_array_size(json_object_get(acked, "orders")));
  json_decref(acked);
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, id, "running"));
  char ev[512];
  snprintf(ev, sizeof ev, "[{\"kind\": \"started\", \"job\": \"%s\", \"pid\": 42}, "
                          "{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 0, \"reason\": \"exited\"}]", id, id);
  json_t *r = tsrv_heartbeat(&t, "n1", gen, 0, ev);
  REQUIRE(r);
  json_decref(r);
  json_t *show = NULL;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", path, ALICE, NULL, &show));
  CHECK_EQ_STR("completed", job_str(show, "state"));
  CHECK_EQ_INT(0, json_integer_value(json_object_get(json_object_get(show, "job"), "exit_code")));
  /* An ended job still says where it ran. */
  json_t *last = json_array_get(json_object_get(json_object_get(show, "job"), "placements"), 0);
  CHECK_EQ_STR("n1", json_string_value(json_object_get(last, "node")));
  CHECK_EQ_INT(2, json_array_size(json_object_get(last, "gpu_uuids")));
  json_t *tl = json_object_get(json_object_get(show, "job"), "timeline");
  const char *want[] = {"submitted", "started", "launched", "ended"};
  CHECK_EQ_INT(4, json_array_size(tl));
  for (size_t i = 0; i < 4 && i < json_array_size(tl); i++)
    CHECK_EQ_STR(want[i], json_string_value(json_object_get(json_array_get(tl, i), "event")));
  json_decref(show);
  free(id);
  tsrv_stop(&t);
}

typedef struct poll_arg {
  tsrv *t;
  json_t *answer;
  int64_t returned_ms;
} poll_arg;

static void *poll_thread(void *p) {
  poll_arg *a = p;
  a->answer = tsrv_heartbeat(a->t, "n1", 0, 20000, NULL);
  a->returned_ms = tsrv_now_ms();
  return NULL;
}

static void the_long_poll_wakes_within_100ms_of_a_new_start(void) {
  tsrv t = {0};
  tsrv_start_with(&t, NULL, NULL);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  poll_arg a = {&t, NULL, 0};
  pthread_t th;
  pthread_create(&th, NULL, poll_thread, &a);
  usleep(200000); /* the poll is parked by now */
  int64_t t0 = tsrv_now_ms();
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(id);
  pthread_join(th, NULL);
  REQUIRE(a.answer);
  CHECK_EQ_STR("start", json_string_value(json_object_get(first_order(a.answer), "kind")));
  int64_t waited = a.returned_ms - t0;
  fprintf(stderr, "  start order reached the agent %lld ms after the submission began\n", (long long)waited);
  CHECK(waited < 100);
  json_decref(a.answer);
  free(id);
  tsrv_stop(&t);
}

static void cancelling_a_running_job_sends_the_stop_handshake(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1, \"grace_s\": 7, \"signal\": \"USR1\"}");
  REQUIRE(id);
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 3000, NULL);
  REQUIRE(hb);
  long long gen = hb_gen(hb);
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, id, "running"));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id);
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", path, ALICE, NULL, &o));
  CHECK_EQ_STR("stopping", job_str(o, "state"));
  json_decref(o);
  hb = tsrv_heartbeat(&t, "n1", gen, 3000, NULL);
  REQUIRE(hb);
  json_t *stop = first_order(hb);
  CHECK_EQ_STR("stop", json_string_value(json_object_get(stop, "kind")));
  CHECK_EQ_STR("USR1", json_string_value(json_object_get(stop, "signal")));
  CHECK_EQ_INT(7, json_integer_value(json_object_get(stop, "grace_s")));
  CHECK_EQ_STR("cancelled", json_string_value(json_object_get(stop, "reason")));
  gen = hb_gen(hb);
  json_decref(hb);
  char ev[256];
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 143, \"signal\": 15}]", id);
  hb = tsrv_heartbeat(&t, "n1", gen, 0, ev);
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, id, "cancelled"));
  free(id);
  tsrv_stop(&t);
}

static void a_silent_node_goes_down_and_its_jobs_are_requeued_or_failed(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *keep = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1, \"requeue\": true}");
  char *lose = tsrv_submit(&t, ALICE, "{\"command\": [\"y\"], \"gpus\": 1}");
  REQUIRE(keep && lose);
  CHECK(tsrv_wait_state(&t, keep, "running"));
  CHECK(tsrv_wait_state(&t, lose, "running"));
  /* No heartbeat for node_timeout_s (2 s). */
  int64_t t0 = tsrv_now_ms();
  CHECK(tsrv_wait_state(&t, lose, "failed"));
  usleep(100000);
  int64_t waited = tsrv_now_ms() - t0;
  CHECK(waited >= 1500);
  json_t *o = NULL;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", lose);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_STR("node lost", job_str(o, "end_reason"));
  json_decref(o);
  snprintf(path, sizeof path, "/v1/jobs/%s", keep);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_STR("pending", job_str(o, "state"));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(json_object_get(o, "job"), "restarts")));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/nodes/n1", ADMIN, NULL, &o));
  CHECK_EQ_STR("down", json_string_value(json_object_get(json_object_get(o, "node"), "state")));
  json_decref(o);
  /* A late heartbeat is told to register again; after that the requeued job runs again. */
  CHECK(tsrv_heartbeat(&t, "n1", 0, 0, NULL) == NULL);
  CHECK_EQ_INT(200, tsrv_register(&t, "n1", 8, NULL));
  CHECK(tsrv_wait_state(&t, keep, "running"));
  free(keep);
  free(lose);
  tsrv_stop(&t);
}

static void a_restarted_agent_keeps_the_jobs_it_reports_and_loses_the_rest(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 8, NULL));
  char *a = tsrv_submit(&t, ALICE, "{\"command\": [\"a\"], \"gpus\": 1}");
  char *b = tsrv_submit(&t, ALICE, "{\"command\": [\"b\"], \"gpus\": 1, \"requeue\": true}");
  REQUIRE(a && b);
  CHECK(tsrv_wait_state(&t, a, "running"));
  CHECK(tsrv_wait_state(&t, b, "running"));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  CHECK_EQ_INT(2, json_array_size(json_object_get(hb, "orders")));
  long long gen = hb_gen(hb);
  json_decref(hb);
  hb = tsrv_heartbeat(&t, "n1", gen, 0, NULL); /* acknowledge everything */
  json_decref(hb);
  /* The agent restarts: it still runs `a`; `b` is gone; it runs a stray job 999. */
  char jobs[256];
  snprintf(jobs, sizeof jobs, "[{\"id\": \"%s\", \"state\": \"running\", \"pid\": 7}, {\"id\": \"999\", \"state\": \"running\"}]", a);
  CHECK_EQ_INT(200, tsrv_register(&t, "n1", 8, jobs));
  json_t *o = NULL;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", a);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  snprintf(path, sizeof path, "/v1/jobs/%s", b);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  json_t *tl = json_object_get(json_object_get(o, "job"), "timeline");
  bool lost = false;
  for (size_t i = 0; i < json_array_size(tl); i++)
    lost = lost || strcmp(json_string_value(json_object_get(json_array_get(tl, i), "event")), "lost") == 0;
  CHECK(lost);
  CHECK_EQ_INT(1, json_integer_value(json_object_get(json_object_get(o, "job"), "restarts")));
  json_decref(o);
  /* The stray job is told to stop. */
  hb = tsrv_heartbeat(&t, "n1", gen, 0, NULL);
  REQUIRE(hb);
  bool stray_stopped = false;
  json_t *orders = json_object_get(hb, "orders");
  for (size_t i = 0; i < json_array_size(orders); i++) {
    json_t *ord = json_array_get(orders, i);
    stray_stopped = stray_stopped || (strcmp(json_string_value(json_object_get(ord, "kind")), "stop") == 0 &&
                                      json_is_string(json_object_get(ord, "job")) &&
                                      strcmp(json_string_value(json_object_get(ord, "job")), "999") == 0);
  }
  CHECK(stray_stopped);
  json_decref(hb);
  free(a);
  free(b);
  tsrv_stop(&t);
}

static void agent_messages_are_checked(void) {
  tsrv t = {0};
  tsrv_start(&t);
  json_t *o = NULL;
  CHECK_EQ_INT(403, tsrv_call(&t, "POST", "/v1/agent/register", ALICE, "{\"node\": {\"name\": \"n1\"}}", &o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_agent_call(&t, "/v1/agent/register", "{\"node\": {\"name\": \"a b\"}}", &o));
  CHECK_EQ_STR("node.name", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_agent_call(&t, "/v1/agent/register", "{\"node\": {\"name\": \"n1\", \"gpus\": 99}}", &o));
  json_decref(o);
  CHECK_EQ_INT(404, tsrv_agent_call(&t, "/v1/agent/heartbeat", "{\"node\": \"ghost\", \"gen\": 0}", &o));
  json_decref(o);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  /* An event kind this server does not know (a newer agent) is skipped, not fatal. */
  CHECK_EQ_INT(200, tsrv_agent_call(&t, "/v1/agent/heartbeat",
                              "{\"node\": \"n1\", \"gen\": 0, \"wait_ms\": 0, \"events\": [{\"kind\": \"inject_done\"}]}", &o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_agent_call(&t, "/v1/agent/heartbeat",
                              "{\"node\": \"n1\", \"gen\": 0, \"events\": [{\"job\": \"1\"}]}", &o));
  CHECK_EQ_STR("events[0]", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_agent_call(&t, "/v1/agent/heartbeat",
                              "{\"node\": \"n1\", \"gen\": 0, \"events\": [{\"kind\": \"exited\"}]}", &o));
  CHECK_EQ_STR("events[0]", err_field(o));
  json_decref(o);
  CHECK_EQ_INT(400, tsrv_agent_call(&t, "/v1/agent/heartbeat", "{\"node\": \"n1\", \"gen\": -1}", &o));
  json_decref(o);
  tsrv_stop(&t);
}

static void a_gpu_fault_drains_the_gpu_with_its_reason(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0,
                              "[{\"kind\": \"gpu_fault\", \"gpu\": 2, \"xid\": 48, "
                              "\"action\": \"fail_job,drain_gpu\", \"reason\": \"double-bit ECC\"}]");
  REQUIRE(hb);
  json_decref(hb);
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/nodes/n1", ALICE, NULL, &o));
  json_t *g2 = json_array_get(json_object_get(json_object_get(o, "node"), "gpu_list"), 2);
  CHECK_EQ_STR("drained", json_string_value(json_object_get(g2, "health")));
  CHECK_CONTAINS(json_string_value(json_object_get(g2, "reason")), "xid 48");
  json_decref(o);
  /* Nothing is placed on it: a 4-GPU job now waits. */
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 4}");
  REQUIRE(id);
  usleep(200000);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", path, ALICE, NULL, &o));
  CHECK_EQ_STR("pending", job_str(o, "state"));
  json_decref(o);
  free(id);
  tsrv_stop(&t);
}

static json_t *order_for(json_t *hb, const char *kind, const char *job) {
  json_t *orders = json_object_get(hb, "orders");
  for (size_t i = 0; i < json_array_size(orders); i++) {
    json_t *o = json_array_get(orders, i);
    json_t *jv = json_object_get(o, "job");
    const char *jid = json_is_object(jv) ? json_string_value(json_object_get(jv, "id")) : json_string_value(jv);
    if (strcmp(json_string_value(json_object_get(o, "kind")), kind) == 0 && jid && strcmp(jid, job) == 0) return o;
  }
  return NULL;
}

/* A job that may be requeued, running on n1 (registered with 2 GPUs). */
static char *a_requeueable_job_runs(tsrv *t) {
  CHECK_EQ_INT(201, tsrv_register(t, "n1", 2, NULL));
  char *id = tsrv_submit(t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1, \"requeue\": true}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(t, id, "running"));
  return id;
}

/* n1's heartbeat (acknowledging gen, carrying events ev) must bring a `kind` order for job:
 * its id goes to order_id; returns the answer's gen. */
static long long take_order(tsrv *t, long long gen, const char *ev, const char *kind, const char *job,
                            char *order_id, size_t size) {
  json_t *hb = tsrv_heartbeat(t, "n1", gen, 0, ev);
  REQUIRE(hb && order_for(hb, kind, job));
  snprintf(order_id, size, "%s", json_string_value(json_object_get(order_for(hb, kind, job), "id")));
  long long g = hb_gen(hb);
  json_decref(hb);
  return g;
}

static void a_late_exit_of_an_earlier_run_does_not_end_the_current_run(void) {
  tsrv t = {0};
  tsrv_start(&t);
  char *id = a_requeueable_job_runs(&t);
  char first[32], second[32];
  long long gen = take_order(&t, 0, NULL, "start", id, first, sizeof first);
  json_decref(tsrv_heartbeat(&t, "n1", gen, 0, NULL)); /* acknowledged: the agent has it */
  /* The agent restarts without the job: it is lost, requeued, and started again. */
  CHECK_EQ_INT(200, tsrv_register(&t, "n1", 2, "[]"));
  CHECK(tsrv_wait_state(&t, id, "running"));
  gen = take_order(&t, gen, NULL, "start", id, second, sizeof second);
  CHECK(strcmp(first, second) != 0);
  char ev[256];
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"order\": \"%s\", \"exit_code\": 1}]", id, first);
  json_decref(tsrv_heartbeat(&t, "n1", gen, 0, ev));
  json_t *o = NULL;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"order\": \"%s\", \"exit_code\": 0}]", id, second);
  json_decref(tsrv_heartbeat(&t, "n1", gen, 0, ev));
  CHECK(tsrv_wait_state(&t, id, "completed"));
  free(id);
  tsrv_stop(&t);
}

/* The agent answers a stop for a job it does not have with a `lost` report naming the stop
 * order: a stop of the current run ends it; the stop of an earlier run, answered after the
 * job started again, does not (agent_api.c; tests/e2e/requeue_race_test.sh plays the race). */
static void a_lost_answer_to_a_stop_ends_only_the_run_it_stopped(void) {
  tsrv t = {0};
  tsrv_start(&t);
  char *id = a_requeueable_job_runs(&t);
  char start[32], stop[32];
  long long gen = take_order(&t, 0, NULL, "start", id, start, sizeof start);
  /* Requeued: the stop goes out; the task ends by itself before the agent reads it. */
  char path[64], ev[320];
  snprintf(path, sizeof path, "/v1/jobs/%s/requeue", id);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", path, ALICE, NULL, NULL));
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"task\": 0, \"order\": \"%s\", \"exit_code\": 0}]",
           id, start);
  gen = take_order(&t, gen, ev, "stop", id, stop, sizeof stop);
  CHECK(tsrv_wait_state(&t, id, "running")); /* its next run */
  /* The answer to the earlier run's stop comes now: the new run goes on. */
  const char *lost = "[{\"kind\": \"exited\", \"job\": \"%s\", \"order\": \"%s\", \"exit_code\": null, "
                     "\"reason\": \"lost\", \"message\": \"the job does not run on this node\"}]";
  snprintf(ev, sizeof ev, lost, id, stop);
  json_t *hb = tsrv_heartbeat(&t, "n1", gen, 0, ev);
  REQUIRE(hb);
  gen = hb_gen(hb);
  json_decref(hb);
  json_t *o = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_STR("running", job_str(o, "state"));
  json_decref(o);
  /* A stop of this run, answered `lost`, ends it. */
  snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id);
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", path, ALICE, NULL, NULL));
  gen = take_order(&t, gen, NULL, "stop", id, stop, sizeof stop);
  snprintf(ev, sizeof ev, lost, id, stop);
  json_decref(tsrv_heartbeat(&t, "n1", gen, 0, ev));
  CHECK(tsrv_wait_state(&t, id, "cancelled"));
  free(id);
  tsrv_stop(&t);
}

static void a_dependent_job_waits_and_then_runs(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  char *a = tsrv_submit(&t, ALICE, "{\"command\": [\"prep\"], \"gpus\": 1}");
  REQUIRE(a);
  char body[128];
  snprintf(body, sizeof body, "{\"command\": [\"train\"], \"gpus\": 1, \"after_ok\": [\"%s\"]}", a);
  char *b = tsrv_submit(&t, ALICE, body);
  REQUIRE(b);
  CHECK(tsrv_wait_state(&t, a, "running"));
  usleep(100000);
  json_t *o = NULL;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", b);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_STR("pending", job_str(o, "state"));
  CHECK_EQ_STR("Dependency", job_str(o, "pending_reason"));
  json_decref(o);
  char ev[160];
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 0}]", a);
  json_decref(tsrv_heartbeat(&t, "n1", 0, 0, ev));
  CHECK(tsrv_wait_state(&t, a, "completed"));
  CHECK(tsrv_wait_state(&t, b, "running"));
  free(a);
  free(b);
  tsrv_stop(&t);
}

static void a_job_stopped_for_a_gpu_fault_is_requeued_when_it_may_be(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 4, NULL));
  char *re = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 2, \"requeue\": true}");
  char *no = tsrv_submit(&t, ALICE, "{\"command\": [\"y\"], \"gpus\": 2}");
  REQUIRE(re && no);
  CHECK(tsrv_wait_state(&t, re, "running"));
  CHECK(tsrv_wait_state(&t, no, "running"));
  char ev[512];
  snprintf(ev, sizeof ev,
           "[{\"kind\": \"started\", \"job\": \"%s\", \"pid\": 9, \"enforcement\": \"watchdog\"},"
           " {\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": null, \"signal\": 15, \"reason\": \"gpu_fault\","
           " \"message\": \"xid 79 on GPU 1\"}, {\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": null,"
           " \"reason\": \"gpu_fault\", \"message\": \"xid 79 on GPU 3\"}]", re, re, no);
  json_decref(tsrv_heartbeat(&t, "n1", 0, 0, ev));
  json_t *o = NULL;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", re);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_INT(1, json_integer_value(json_object_get(json_object_get(o, "job"), "restarts")));
  CHECK(strcmp(job_str(o, "state"), "pending") == 0 || strcmp(job_str(o, "state"), "running") == 0);
  json_decref(o);
  CHECK(tsrv_wait_state(&t, no, "failed"));
  snprintf(path, sizeof path, "/v1/jobs/%s", no);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_CONTAINS(job_str(o, "end_reason"), "gpu_fault");
  json_decref(o);
  free(re);
  free(no);
  tsrv_stop(&t);
}

static void node_conditions_and_enforcement_come_from_the_agent(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running"));
  char body[512];
  snprintf(body, sizeof body,
           "{\"node\": \"n1\", \"gen\": 0, \"wait_ms\": 0, \"node_health\": {\"drained\": false, \"reason\": \"\","
           " \"conditions\": \"thermal_throttling,power_throttling\"}, \"events\": [{\"kind\": \"started\","
           " \"job\": \"%s\", \"pid\": 5, \"enforcement\": \"watchdog\"}]}", id);
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_agent_call(&t, "/v1/agent/heartbeat", body, &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_call(&t, "GET", "/v1/nodes/n1", ALICE, NULL, &o));
  json_t *conds = json_object_get(json_object_get(o, "node"), "conditions");
  CHECK_EQ_INT(2, json_array_size(conds));
  CHECK_EQ_STR("thermal_throttling", json_string_value(json_array_get(conds, 0)));
  json_decref(o);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  tsrv_call(&t, "GET", path, ALICE, NULL, &o);
  CHECK_EQ_STR("watchdog", job_str(o, "enforcement"));
  json_decref(o);
  free(id);
  tsrv_stop(&t);
}

typedef struct race_arg {
  tsrv *t;
  int wait_ms;
  pthread_barrier_t *go;
  int ok;
} race_arg;

static void *race_poll(void *p) {
  race_arg *a = p;
  for (int i = 0; i < 40; i++) {
    pthread_barrier_wait(a->go);
    json_t *hb = tsrv_heartbeat(a->t, "n1", 0, a->wait_ms, NULL);
    if (hb) a->ok++;
    json_decref(hb);
  }
  return NULL;
}

/* An agent that drops its long poll and polls again at once sends two heartbeats that may
 * land in one batch: the newer releases the older, and each is answered exactly once (a
 * double answer was a use-after-free under ASan). */
static void two_polls_of_one_node_in_a_batch_are_each_answered_once(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, 2);
  race_arg a = {&t, 50, &go, 0}, b = {&t, 0, &go, 0};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, race_poll, &a);
  pthread_create(&tb, NULL, race_poll, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&go);
  CHECK_EQ_INT(40, a.ok);
  CHECK_EQ_INT(40, b.ok);
  tsrv_stop(&t);
}

static void a_job_past_its_time_limit_is_stopped_and_ends_timeout(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1, \"time_limit\": 1, \"grace_s\": 3}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running"));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  long long gen = hb ? hb_gen(hb) : 0;
  json_decref(hb);
  /* Within ~2 s the stop order comes, with the job's grace. */
  json_t *stop = NULL;
  for (int i = 0; i < 30 && !stop; i++) {
    hb = tsrv_heartbeat(&t, "n1", gen, 500, NULL);
    REQUIRE(hb);
    json_t *o = order_for(hb, "stop", id);
    if (o) stop = json_incref(o);
    gen = hb_gen(hb);
    json_decref(hb);
  }
  REQUIRE(stop);
  CHECK_EQ_STR("timeout", json_string_value(json_object_get(stop, "reason")));
  CHECK_EQ_INT(3, json_integer_value(json_object_get(stop, "grace_s")));
  json_decref(stop);
  char ev[160];
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 143, \"signal\": 15}]", id);
  json_decref(tsrv_heartbeat(&t, "n1", gen, 0, ev));
  CHECK(tsrv_wait_state(&t, id, "timeout"));
  free(id);
  tsrv_stop(&t);
}

static void a_node_that_comes_back_never_gets_a_stale_start(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1, \"requeue\": true}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running")); /* its start order waits, never fetched */
  CHECK(tsrv_wait_state(&t, id, "pending")); /* the node went silent: requeued */
  CHECK_EQ_INT(200, tsrv_register(&t, "n1", 1, "[]"));
  CHECK(tsrv_wait_state(&t, id, "running"));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  int starts = 0;
  json_t *orders = json_object_get(hb, "orders");
  for (size_t i = 0; i < json_array_size(orders); i++)
    starts += strcmp(json_string_value(json_object_get(json_array_get(orders, i), "kind")), "start") == 0;
  CHECK_EQ_INT(1, starts);
  json_decref(hb);
  free(id);
  tsrv_stop(&t);
}

GP_TESTS(a_node_that_comes_back_never_gets_a_stale_start,
         a_job_past_its_time_limit_is_stopped_and_ends_timeout,
         two_polls_of_one_node_in_a_batch_are_each_answered_once,
         a_job_stopped_for_a_gpu_fault_is_requeued_when_it_may_be,
         a_lost_answer_to_a_stop_ends_only_the_run_it_stopped,
         node_conditions_and_enforcement_come_from_the_agent, a_dependent_job_waits_and_then_runs, a_late_exit_of_an_earlier_run_does_not_end_the_current_run, a_gpu_fault_drains_the_gpu_with_its_reason, a_job_runs_and_completes_with_its_exit_code, the_long_poll_wakes_within_100ms_of_a_new_start,
         cancelling_a_running_job_sends_the_stop_handshake,
         a_silent_node_goes_down_and_its_jobs_are_requeued_or_failed,
         a_restarted_agent_keeps_the_jobs_it_reports_and_loses_the_rest, agent_messages_are_checked)
