/* SPDX-License-Identifier: Apache-2.0 */
/* A GPU fault on a running node, through the real agent: the simulated GPU falls off the bus
 * (Xid 79) under a job; the agent reports a gpu_fault event with the policy's action, stops
 * the job on that GPU with reason gpu_fault, marks the GPU failed in its heartbeats (with no
 * figures: it cannot be read), and leaves the job on the healthy GPU alone. Heartbeats carry per-job usage from telemetry. */
#include "agent_harness.h"

static json_t *last_heartbeat(fake_server *s) {
  pthread_mutex_lock(&s->lock);
  json_t *hb = json_incref(s->last_heartbeat);
  pthread_mutex_unlock(&s->lock);
  return hb;
}

static void gpu_falling_off_the_bus_stops_its_job_and_drains_it(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal", "--inject", "xid:79@gpu0,after=1500ms");
  REQUIRE(fs_wait_register(s, 1, 10000));
  json_t *o = start_order("hit", "sleep 30", 0);
  json_object_set_new(json_object_get(o, "job"), "grace_s", json_integer(1));
  fs_order(s, o);
  fs_order(s, start_order("spared", "sleep 30", 1));
  json_decref(fs_wait_event(s, "started", "hit", 5000));
  json_decref(fs_wait_event(s, "started", "spared", 5000));
  json_t *fault = fs_wait_event(s, "gpu_fault", NULL, 8000);
  REQUIRE(fault);
  CHECK_EQ_INT(0, json_integer_value(json_object_get(fault, "gpu")));
  CHECK_EQ_INT(79, json_integer_value(json_object_get(fault, "xid")));
  CHECK_CONTAINS(json_string_value(json_object_get(fault, "action")), "fail_job");
  CHECK_CONTAINS(json_string_value(json_object_get(fault, "action")), "drain_gpu");
  CHECK_EQ_STR("hit", json_string_value(json_array_get(json_object_get(fault, "jobs"), 0)));
  json_t *ended = fs_wait_event(s, "exited", "hit", 5000);
  REQUIRE(ended);
  CHECK_EQ_STR("gpu_fault", json_string_value(json_object_get(ended, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(ended, "message")), "xid 79");
  /* The next heartbeats say the GPU has failed, and carry no figures for it. */
  json_t *hb = NULL;
  int64_t until = fs_now_ms() + 6000;
  for (;;) {
    hb = last_heartbeat(s);
    json_t *g = json_array_get(json_object_get(hb, "gpus"), 0);
    const char *h = json_string_value(json_object_get(g, "health"));
    if ((h && strcmp(h, "failed") == 0) || fs_now_ms() > until) break;
    json_decref(hb);
    usleep(50000);
  }
  REQUIRE(hb);
  json_t *g0 = json_array_get(json_object_get(hb, "gpus"), 0);
  json_t *g1 = json_array_get(json_object_get(hb, "gpus"), 1);
  CHECK_EQ_STR("failed", json_string_value(json_object_get(g0, "health")));
  CHECK_CONTAINS(json_string_value(json_object_get(g0, "reason")), "xid 79");
  CHECK(json_object_get(g0, "telemetry") == NULL);
  CHECK_EQ_STR("healthy", json_string_value(json_object_get(g1, "health")));
  CHECK(json_integer_value(json_object_get(json_object_get(g1, "telemetry"), "gpu_util_pct")) > 0);
  json_t *job = json_array_get(json_object_get(hb, "jobs"), 0);
  CHECK_EQ_STR("spared", json_string_value(json_object_get(job, "id")));
  CHECK(json_integer_value(json_object_get(json_object_get(job, "usage"), "peak_mem_mib")) > 0);
  CHECK_EQ_INT(0, fs_count_events(s, "exited", "spared"));
  json_decref(hb);
  fs_order(s, json_pack("{s:s,s:s,s:i}", "kind", "stop", "job", "spared", "grace_s", 0));
  json_decref(fs_wait_event(s, "exited", "spared", 5000));
  json_decref(fault);
  json_decref(ended);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void inject_orders_reach_the_simulated_gpus(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xA100-40GB", "--personal");
  REQUIRE(fs_wait_register(s, 1, 10000));
  fs_order(s, json_pack("{s:s,s:s}", "kind", "inject", "fault", "xid:79@gpu1"));
  fs_order(s, json_pack("{s:s,s:s}", "kind", "inject", "fault", "xid:79@gpu9"));
  int64_t until = fs_now_ms() + 5000;
  while (fs_count_events(s, "inject_done", NULL) < 2 && fs_now_ms() < until) usleep(10000);
  json_t *fault = fs_wait_event(s, "gpu_fault", NULL, 5000);
  REQUIRE(fault);
  CHECK_EQ_INT(1, json_integer_value(json_object_get(fault, "gpu")));
  pthread_mutex_lock(&s->lock);
  size_t i;
  json_t *ev;
  int ok = 0, refused = 0;
  json_array_foreach(s->events, i, ev) {
    if (strcmp(json_string_value(json_object_get(ev, "kind")), "inject_done") != 0) continue;
    if (json_is_true(json_object_get(ev, "ok"))) ok++;
    else {
      refused++;
      CHECK_CONTAINS(json_string_value(json_object_get(ev, "message")), "no GPU 9");
    }
  }
  pthread_mutex_unlock(&s->lock);
  CHECK_EQ_INT(1, ok);
  CHECK_EQ_INT(1, refused);
  json_decref(fault);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

GP_TESTS(gpu_falling_off_the_bus_stops_its_job_and_drains_it, inject_orders_reach_the_simulated_gpus)
