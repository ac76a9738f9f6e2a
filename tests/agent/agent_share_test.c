/* SPDX-License-Identifier: Apache-2.0 */
/* GPU sharing on a simulated node, through the real agent binary: a fractional job on a
 * shared GPU is watched and stopped when it exceeds its share; with an MPS control daemon the
 * limits go into the job's environment instead; an exclusive GPU refuses fractions (fail
 * closed); time-sliced GPUs say they isolate nothing; a MIG job sees only its instance; and
 * an idle GPU is re-partitioned on order while a busy one is not. */
#include "agent_harness.h"

static json_t *fraction_order(const char *id, const char *script, int gpu, int milli,
                              int mem_mib, const char *sim_mem) {
  json_t *o = start_order(id, script, gpu);
  json_t *job = json_object_get(o, "job");
  json_t *pl = json_array_get(json_object_get(job, "placements"), 0);
  json_object_set_new(pl, "gpu_milli", json_integer(milli));
  if (mem_mib) json_object_set_new(pl, "gpu_mem_mib", json_integer(mem_mib));
  if (sim_mem) json_object_set_new(job, "env", json_pack("{s:s}", "GPOOL_SIM_MEM", sim_mem));
  return o;
}

static void watchdog_stops_a_job_over_its_gpu_memory_share(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal", "--gpu-mode", "0=shared", NULL);
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  CHECK_EQ_STR("shared", json_string_value(json_object_get(
      json_array_get(json_object_get(json_object_get(reg, "node"), "gpu_list"), 0), "mode")));
  json_decref(reg);
  /* Two quarter-GPU jobs (20 GiB each): one stays inside its share, one does not. */
  fs_order(s, fraction_order("fits", "sleep 30", 0, 250, 20480, "8G"));
  fs_order(s, fraction_order("greedy", "sleep 30", 0, 250, 20480, "30G"));
  json_t *sf = fs_wait_event(s, "started", "fits", 5000);
  json_t *sg = fs_wait_event(s, "started", "greedy", 5000);
  REQUIRE(sf && sg);
  CHECK_EQ_STR("watchdog", json_string_value(json_object_get(sf, "enforcement")));
  CHECK_EQ_INT(20480, json_integer_value(json_object_get(sg, "gpu_mem_limit_mib")));
  json_t *eg = fs_wait_event(s, "exited", "greedy", 5000);
  REQUIRE(eg);
  CHECK_EQ_STR("limit_exceeded", json_string_value(json_object_get(eg, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(eg, "message")),
                 "used 30720 MiB of GPU memory on GPU 0");
  CHECK_CONTAINS(json_string_value(json_object_get(eg, "message")), "over its share of 20480 MiB");
  char *err = job_file(&ap, "greedy", "stderr");
  CHECK_CONTAINS(err, "gpool: used 30720 MiB"); /* the user reads why in their own log */
  free(err);
  usleep(1300000); /* another watchdog round: the job inside its share keeps running */
  CHECK_EQ_INT(0, fs_count_events(s, "exited", "fits"));
  fs_order(s, json_pack("{s:s,s:s,s:i}", "kind", "stop", "job", "fits", "grace_s", 1));
  json_t *ef = fs_wait_event(s, "exited", "fits", 5000);
  REQUIRE(ef);
  CHECK_EQ_STR("killed", json_string_value(json_object_get(ef, "reason")));
  json_decref(sf);
  json_decref(sg);
  json_decref(eg);
  json_decref(ef);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void fractions_are_refused_where_no_share_can_be_enforced(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal", "--gpu-mode", "1=timeslice:4", NULL);
  REQUIRE(fs_wait_register(s, 1, 10000));
  fs_order(s, fraction_order("frac", "true", 0, 500, 0, NULL)); /* GPU 0 is exclusive */
  fs_order(s, start_order("ts", "echo $GPOOL_ENFORCEMENT", 1));
  json_t *ef = fs_wait_event(s, "exited", "frac", 5000);
  REQUIRE(ef);
  CHECK_EQ_STR("start_failed", json_string_value(json_object_get(ef, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(ef, "message")), "GPU 0 of node n1 is exclusive");
  CHECK_EQ_INT(0, fs_count_events(s, "started", "frac"));
  json_t *st = fs_wait_event(s, "started", "ts", 5000);
  REQUIRE(st);
  CHECK_EQ_STR("none", json_string_value(json_object_get(st, "enforcement")));
  json_decref(fs_wait_event(s, "exited", "ts", 5000));
  char *out = job_file(&ap, "ts", "stdout");
  CHECK_EQ_STR("none\n", out);
  free(out);
  json_decref(ef);
  json_decref(st);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void mps_daemon_gets_the_share_as_client_limits(void) {
  fake_server *s = fs_start();
  char mps[256], control[300];
  tmpdir(mps, sizeof mps);
  snprintf(control, sizeof control, "%s/control", mps);
  REQUIRE(mkfifo(control, 0600) == 0); /* what nvidia-cuda-mps-control -d leaves there */
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal", "--sharing", "shared", "--mps-pipe-dir", mps);
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  CHECK(json_is_true(json_object_get(json_object_get(reg, "node"), "mps")));
  json_decref(reg);
  fs_order(s, fraction_order("m", "echo $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "
                             "$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE $CUDA_MPS_PIPE_DIRECTORY", 0, 500,
                             0, NULL));
  json_t *st = fs_wait_event(s, "started", "m", 5000);
  REQUIRE(st);
  CHECK_EQ_STR("mps", json_string_value(json_object_get(st, "enforcement")));
  json_decref(fs_wait_event(s, "exited", "m", 5000));
  char want[400];
  snprintf(want, sizeof want, "0=40960M 50 %s\n", mps);
  char *out = job_file(&ap, "m", "stdout");
  CHECK_EQ_STR(want, out);
  free(out);
  json_decref(st);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
  rm_rf(mps);
}

static void mig_jobs_see_their_instance_and_idle_gpus_are_repartitioned(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "3xH100-80GB", "--personal", "--gpu-mode", "0=mig:3g.40gb,2g.20gb,1g.10gb,1g.10gb",
            NULL);
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  json_t *g0 = json_array_get(json_object_get(json_object_get(reg, "node"), "gpu_list"), 0);
  CHECK_EQ_STR("mig", json_string_value(json_object_get(g0, "mode")));
  json_t *mig = json_object_get(g0, "mig");
  REQUIRE(json_array_size(mig) == 4);
  const char *uuid = NULL;
  size_t i;
  json_t *m;
  json_array_foreach(mig, i, m) {
    if (strcmp(json_string_value(json_object_get(m, "profile")), "2g.20gb") == 0)
      uuid = json_string_value(json_object_get(m, "uuid"));
  }
  REQUIRE(uuid);
  json_t *o = start_order("mj", "echo $CUDA_VISIBLE_DEVICES", 0);
  json_object_set_new(json_array_get(json_object_get(json_object_get(o, "job"), "placements"), 0),
                      "mig_uuid", json_string(uuid));
  fs_order(s, o);
  json_t *st = fs_wait_event(s, "started", "mj", 5000);
  REQUIRE(st);
  CHECK_EQ_STR("mig", json_string_value(json_object_get(st, "enforcement")));
  json_decref(fs_wait_event(s, "exited", "mj", 5000));
  char want[200];
  snprintf(want, sizeof want, "%s%s\n", strncmp(uuid, "MIG-", 4) == 0 ? "" : "MIG-", uuid);
  char *out = job_file(&ap, "mj", "stdout");
  CHECK_EQ_STR(want, out);
  free(out);
  /* Re-partition: GPU 1 is idle, GPU 2 runs a job. */
  fs_order(s, start_order("busy", "sleep 30", 2));
  json_decref(fs_wait_event(s, "started", "busy", 5000));
  fs_order(s, json_pack("{s:s,s:i,s:[s,s,s,s,s,s,s]}", "kind", "mig", "gpu", 1, "profiles",
                        "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb",
                        "1g.10gb"));
  fs_order(s, json_pack("{s:s,s:i,s:[s]}", "kind", "mig", "gpu", 2, "profiles", "7g.80gb"));
  int64_t until = fs_now_ms() + 5000;
  while (fs_count_events(s, "mig_done", NULL) < 2 && fs_now_ms() < until) usleep(10000);
  REQUIRE(fs_count_events(s, "mig_done", NULL) == 2);
  pthread_mutex_lock(&s->lock);
  json_t *ev, *done1 = NULL, *done2 = NULL;
  json_array_foreach(s->events, i, ev) {
    if (strcmp(json_string_value(json_object_get(ev, "kind")), "mig_done") != 0) continue;
    if (json_integer_value(json_object_get(ev, "gpu")) == 1) done1 = ev;
    else done2 = ev;
  }
  REQUIRE(done1 && done2);
  CHECK(json_is_true(json_object_get(done1, "ok")));
  CHECK_EQ_INT(7, json_array_size(json_object_get(done1, "mig")));
  CHECK(json_is_false(json_object_get(done2, "ok")));
  CHECK_CONTAINS(json_string_value(json_object_get(done2, "message")), "GPU 2 runs job busy");
  pthread_mutex_unlock(&s->lock);
  fs_order(s, json_pack("{s:s,s:s,s:i}", "kind", "stop", "job", "busy", "grace_s", 0));
  json_decref(fs_wait_event(s, "exited", "busy", 5000));
  /* An instance that does not exist is refused, not run on the whole GPU. */
  o = start_order("bad", "true", 0);
  json_object_set_new(json_array_get(json_object_get(json_object_get(o, "job"), "placements"), 0),
                      "mig_uuid", json_string("MIG-00000000-0000-0000-0000-000000000000"));
  fs_order(s, o);
  json_t *eb = fs_wait_event(s, "exited", "bad", 5000);
  REQUIRE(eb);
  CHECK_EQ_STR("start_failed", json_string_value(json_object_get(eb, "reason")));
  json_decref(eb);
  json_decref(st);
  json_decref(reg);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

GP_TESTS(watchdog_stops_a_job_over_its_gpu_memory_share,
         fractions_are_refused_where_no_share_can_be_enforced,
         mps_daemon_gets_the_share_as_client_limits,
         mig_jobs_see_their_instance_and_idle_gpus_are_repartitioned)
