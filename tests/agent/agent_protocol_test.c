/* SPDX-License-Identifier: Apache-2.0 */
/* The real `gpool agent` binary against a stand-in server on 127.0.0.1: it registers its
 * node, runs jobs it is ordered to run (promptly, once), stops them with the grace
 * handshake, serves their logs, and re-adopts them after being killed with SIGKILL. */
#include <curl/curl.h>

#include "agent_harness.h"

static size_t curl_sink(char *d, size_t s, size_t n, void *ctx) {
  strncat((char *)ctx, d, (65535 - strlen((char *)ctx)) < s * n ? 65535 - strlen((char *)ctx) : s * n);
  return s * n;
}

/* GET url with an optional bearer token; returns the status and fills body (64 KiB). */
static long http_get(const char *url, const char *token, char *body) {
  body[0] = '\0';
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  char auth[256];
  if (token) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    h = curl_slist_append(h, auth);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, curl_sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return status;
}

static const char *gpu_uuid(json_t *reg, int index) {
  return json_string_value(json_object_get(
      json_array_get(json_object_get(json_object_get(reg, "node"), "gpu_list"), (size_t)index),
      "uuid"));
}

static void agent_registers_its_node_and_serves_its_endpoint(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "4xH100-80GB", "--labels", "topology.block=b7,zone=a", "--gpu-mode",
            "3=timeslice:4");
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  json_t *node = json_object_get(reg, "node");
  CHECK_EQ_STR("n1", json_string_value(json_object_get(node, "name")));
  CHECK_EQ_INT(4, json_integer_value(json_object_get(node, "gpus")));
  CHECK_EQ_STR("H100-80GB", json_string_value(json_object_get(node, "model")));
  CHECK_EQ_STR("b7", json_string_value(json_object_get(json_object_get(node, "labels"), "topology.block")));
  CHECK(json_integer_value(json_object_get(node, "cpus")) >= 1);
  CHECK(json_integer_value(json_object_get(node, "mem_mib")) > 0);
  /* This test's cgroup root does not exist: the node says limits are off, and why. */
  CHECK(json_is_false(json_object_get(node, "cgroups")));
  CHECK_CONTAINS(json_string_value(json_object_get(node, "cgroups_message")), "not enforced");
  json_t *g0 = json_array_get(json_object_get(node, "gpu_list"), 0);
  json_t *g3 = json_array_get(json_object_get(node, "gpu_list"), 3);
  CHECK_CONTAINS(json_string_value(json_object_get(g0, "uuid")), "GPU-");
  CHECK_EQ_STR("exclusive", json_string_value(json_object_get(g0, "mode")));
  CHECK_EQ_INT(81920, json_integer_value(json_object_get(g0, "mem_mib")));
  CHECK_EQ_STR("timeslice", json_string_value(json_object_get(g3, "mode")));
  CHECK_EQ_INT(4, json_integer_value(json_object_get(g3, "replicas")));
  CHECK(json_array_size(json_object_get(node, "nvlink_domains")) >= 1);
  const char *url = json_string_value(json_object_get(reg, "agent_url"));
  REQUIRE(url && strncmp(url, "http://127.0.0.1:", 17) == 0);
  char target[256], *body = calloc(1, 65536);
  snprintf(target, sizeof target, "%s/healthz", url);
  CHECK_EQ_INT(200, http_get(target, NULL, body));
  CHECK_CONTAINS(body, "\"node\":\"n1\"");
  snprintf(target, sizeof target, "%s/metrics", url);
  CHECK_EQ_INT(200, http_get(target, NULL, body));
  CHECK_CONTAINS(body, "gpool_agent_up");
  json_decref(reg);
  free(body);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void ordered_job_runs_promptly_with_its_environment_and_logs(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "4xH100-80GB", "--personal", NULL, NULL, NULL);
  json_t *reg = fs_wait_register(s, 1, 10000);
  REQUIRE(reg);
  json_t *o = start_order("7", "echo CVD=$CUDA_VISIBLE_DEVICES; echo ID=$GPOOL_JOB_ID "
                          "TASK=$GPOOL_TASK_INDEX/$GPOOL_TASKS NODES=$GPOOL_NODELIST "
                          "GPUS=$GPOOL_GPUS SIG=$GPOOL_CHECKPOINT_SIGNAL MINE=$MINE; pwd; "
                          "echo problem >&2; exit 3", 2);
  json_t *job = json_object_get(o, "job");
  json_object_set_new(job, "workdir", json_string("/tmp"));
  json_object_set_new(job, "env", json_pack("{s:s}", "MINE", "yes"));
  int64_t t0 = fs_now_ms();
  fs_order(s, o);
  json_t *started = fs_wait_event(s, "started", "7", 5000);
  REQUIRE(started);
  int64_t latency = fs_now_ms() - t0;
  printf("  order to started event: %lld ms\n", (long long)latency);
  CHECK(latency < 1000);
  CHECK_EQ_STR("exclusive", json_string_value(json_object_get(started, "enforcement")));
  CHECK(json_integer_value(json_object_get(started, "pid")) > 0);
  json_t *ended = fs_wait_event(s, "exited", "7", 5000);
  REQUIRE(ended);
  CHECK_EQ_INT(3, json_integer_value(json_object_get(ended, "exit_code")));
  CHECK_EQ_STR("exited", json_string_value(json_object_get(ended, "reason")));
  char want[512];
  snprintf(want, sizeof want, "CVD=%s\nID=7 TASK=0/1 NODES=n1 GPUS=2 SIG=TERM MINE=yes\n/tmp\n",
           gpu_uuid(reg, 2));
  char *out = job_file(&ap, "7", "stdout");
  CHECK_EQ_STR(want, out);
  free(out);
  /* The log endpoint: private, chunked by offset, eof once the job ended. */
  const char *url = json_string_value(json_object_get(reg, "agent_url"));
  char target[256], *body = calloc(1, 65536);
  snprintf(target, sizeof target, "%s/logs/7?stream=stderr", url);
  CHECK_EQ_INT(401, http_get(target, NULL, body));
  CHECK_EQ_INT(200, http_get(target, FS_TOKEN, body));
  json_error_t je;
  json_t *chunk = json_loads(body, 0, &je);
  CHECK_EQ_STR("problem\n", json_string_value(json_object_get(chunk, "data")));
  CHECK_EQ_INT(8, json_integer_value(json_object_get(chunk, "offset")));
  CHECK(json_is_true(json_object_get(chunk, "eof")));
  json_decref(chunk);
  snprintf(target, sizeof target, "%s/logs/7?stream=stdout&offset=4&limit=3", url);
  CHECK_EQ_INT(200, http_get(target, FS_TOKEN, body));
  chunk = json_loads(body, 0, &je);
  CHECK_EQ_INT(7, json_integer_value(json_object_get(chunk, "offset")));
  CHECK(json_is_false(json_object_get(chunk, "eof")));
  json_decref(chunk);
  /* Output that is not UTF-8 stays valid JSON; a character cut by the chunk waits. */
  fs_order(s, start_order("bin", "printf 'a\\303\\251b\\377c'", -1));
  json_decref(fs_wait_event(s, "exited", "bin", 5000));
  snprintf(target, sizeof target, "%s/logs/bin?offset=0&limit=2", url);
  CHECK_EQ_INT(200, http_get(target, FS_TOKEN, body));
  chunk = json_loads(body, 0, &je);
  CHECK_EQ_STR("a", json_string_value(json_object_get(chunk, "data")));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(chunk, "offset")));
  json_decref(chunk);
  snprintf(target, sizeof target, "%s/logs/bin?offset=1", url);
  CHECK_EQ_INT(200, http_get(target, FS_TOKEN, body));
  chunk = json_loads(body, 0, &je);
  CHECK_EQ_STR("\xc3\xa9" "b\xef\xbf\xbd" "c", json_string_value(json_object_get(chunk, "data")));
  CHECK_EQ_INT(6, json_integer_value(json_object_get(chunk, "offset")));
  CHECK(json_is_true(json_object_get(chunk, "eof")));
  json_decref(chunk);
  snprintf(target, sizeof target, "%s/logs/bin?offset=-5", url);
  CHECK_EQ_INT(400, http_get(target, FS_TOKEN, body));
  snprintf(target, sizeof target, "%s/logs/nope?stream=stdout", url);
  CHECK_EQ_INT(404, http_get(target, FS_TOKEN, body));
  snprintf(target, sizeof target, "%s/logs/7?stream=../../etc/passwd", url);
  CHECK_EQ_INT(400, http_get(target, FS_TOKEN, body));
  free(body);
  json_decref(started);
  json_decref(ended);
  json_decref(reg);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void stop_sends_the_checkpoint_signal_then_kills_after_grace(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal", NULL, NULL, NULL);
  REQUIRE(fs_wait_register(s, 1, 10000));
  /* Job a checkpoints on TERM and exits 7; job b ignores TERM and must be killed. */
  fs_order(s, start_order("a", "trap 'echo checkpointed; exit 7' TERM; while :; do sleep 0.05; done", 0));
  fs_order(s, start_order("b", "trap '' TERM; while :; do sleep 0.05; done", 1));
  json_decref(fs_wait_event(s, "started", "a", 5000));
  json_decref(fs_wait_event(s, "started", "b", 5000));
  usleep(200000); /* let the shells install their traps */
  int64_t t0 = fs_now_ms();
  fs_order(s, json_pack("{s:s,s:s,s:s,s:i,s:s}", "kind", "stop", "job", "a", "signal", "TERM",
                        "grace_s", 5, "reason", "preempted"));
  fs_order(s, json_pack("{s:s,s:s,s:s,s:i,s:s}", "kind", "stop", "job", "b", "signal", "TERM",
                        "grace_s", 1, "reason", "cancelled"));
  json_t *ea = fs_wait_event(s, "exited", "a", 5000);
  REQUIRE(ea);
  CHECK_EQ_INT(7, json_integer_value(json_object_get(ea, "exit_code")));
  CHECK_EQ_STR("killed", json_string_value(json_object_get(ea, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(ea, "message")), "after SIGTERM (preempted)");
  CHECK(fs_now_ms() - t0 < 4000); /* it ended on the signal, not at the 5 s grace deadline */
  json_t *eb = fs_wait_event(s, "exited", "b", 5000);
  REQUIRE(eb);
  int64_t took = fs_now_ms() - t0;
  CHECK(took >= 1000 && took < 4500); /* killed at its 1 s deadline, not before */
  CHECK_EQ_INT(SIGKILL, json_integer_value(json_object_get(eb, "signal")));
  CHECK(json_is_null(json_object_get(eb, "exit_code")));
  CHECK_EQ_STR("killed", json_string_value(json_object_get(eb, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(eb, "message")), "SIGKILL at the end of the grace period");
  char *out = job_file(&ap, "a", "stdout");
  CHECK_EQ_STR("checkpointed\n", out);
  free(out);
  /* A stop for a job this node does not run is answered, not ignored. */
  fs_order(s, json_pack("{s:s,s:s}", "kind", "stop", "job", "ghost"));
  json_t *eg = fs_wait_event(s, "exited", "ghost", 5000);
  REQUIRE(eg);
  CHECK_EQ_STR("lost", json_string_value(json_object_get(eg, "reason")));
  json_decref(ea);
  json_decref(eb);
  json_decref(eg);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void restarted_agent_readopts_running_jobs_and_reports_ended_ones(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal", NULL, NULL, NULL);
  REQUIRE(fs_wait_register(s, 1, 10000));
  fs_order(s, start_order("long", "echo started; sleep 30", 0));
  fs_order(s, start_order("short", "sleep 0.7; exit 5", 1));
  json_t *sl = fs_wait_event(s, "started", "long", 5000);
  REQUIRE(sl);
  json_decref(fs_wait_event(s, "started", "short", 5000));
  pid_t long_pid = (pid_t)json_integer_value(json_object_get(sl, "pid"));
  json_decref(sl);
  /* The agent dies without any chance to clean up; its jobs must not. */
  agent_kill9(&ap);
  usleep(1200000); /* "short" ends while nobody watches */
  CHECK_EQ_INT(0, kill(long_pid, 0));
  agent_spawn(&ap, s, "2xH100-80GB", "--personal", NULL);
  json_t *reg = fs_wait_register(s, 2, 10000);
  REQUIRE(reg);
  json_t *jobs = json_object_get(reg, "jobs");
  json_t *jl = NULL, *js = NULL, *j;
  size_t i;
  json_array_foreach(jobs, i, j) {
    const char *id = json_string_value(json_object_get(j, "id"));
    if (id && strcmp(id, "long") == 0) jl = j;
    if (id && strcmp(id, "short") == 0) js = j;
  }
  REQUIRE(jl && js);
  CHECK_EQ_STR("running", json_string_value(json_object_get(jl, "state")));
  CHECK_EQ_INT(long_pid, json_integer_value(json_object_get(jl, "pid")));
  CHECK_EQ_STR("exited", json_string_value(json_object_get(js, "state")));
  CHECK_EQ_INT(5, json_integer_value(json_object_get(js, "exit_code")));
  CHECK_EQ_STR("exited", json_string_value(json_object_get(js, "reason")));
  json_decref(reg);
  /* The re-adopted job is still ours: a stop ends it and its end is reported. */
  fs_order(s, json_pack("{s:s,s:s,s:i}", "kind", "stop", "job", "long", "grace_s", 2));
  json_t *el = fs_wait_event(s, "exited", "long", 5000);
  REQUIRE(el);
  CHECK_EQ_STR("killed", json_string_value(json_object_get(el, "reason")));
  CHECK_EQ_INT(SIGTERM, json_integer_value(json_object_get(el, "signal")));
  CHECK(kill(long_pid, 0) != 0);
  json_decref(el);
  /* Settled jobs are not reported again after another restart. */
  usleep(300000);
  agent_stop(&ap);
  agent_spawn(&ap, s, "2xH100-80GB", "--personal", NULL);
  reg = fs_wait_register(s, 3, 10000);
  REQUIRE(reg);
  CHECK_EQ_INT(0, json_array_size(json_object_get(reg, "jobs")));
  json_decref(reg);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void each_order_runs_at_most_once_even_across_restarts(void) {
  fake_server *s = fs_start();
  s->resend_all = true; /* a server that keeps re-sending what it already sent */
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal", NULL, NULL, NULL);
  REQUIRE(fs_wait_register(s, 1, 10000));
  json_t *o = start_order("once", "echo run >> ran; sleep 0.3", 0);
  json_object_set_new(json_object_get(o, "job"), "workdir", json_string(ap.data));
  fs_order(s, o);
  json_decref(fs_wait_event(s, "exited", "once", 5000));
  usleep(500000);
  agent_kill9(&ap);
  agent_spawn(&ap, s, "1xH100-80GB", "--personal", NULL);
  REQUIRE(fs_wait_register(s, 2, 10000));
  usleep(800000);
  CHECK_EQ_INT(1, fs_count_events(s, "started", "once"));
  char path[512];
  snprintf(path, sizeof path, "%s/ran", ap.data);
  char *ran = read_text(path);
  CHECK_EQ_STR("run\n", ran);
  free(ran);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void root_agent_runs_jobs_as_their_user_and_refuses_root(void) {
  if (geteuid() != 0) {
    printf("  (skipped: needs root)\n");
    return;
  }
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", NULL, NULL, NULL, NULL);
  REQUIRE(fs_wait_register(s, 1, 10000));
  json_t *o = start_order("u", "id -un", -1);
  json_object_set_new(json_object_get(o, "job"), "user", json_string("nobody"));
  json_object_set_new(json_object_get(o, "job"), "workdir", json_string("/"));
  fs_order(s, o);
  o = start_order("r", "true", -1);
  json_object_set_new(json_object_get(o, "job"), "user", json_string("root"));
  fs_order(s, o);
  o = start_order("x", "true", -1);
  json_object_set_new(json_object_get(o, "job"), "user", json_string("no-such-user-gpool"));
  fs_order(s, o);
  /* A directory the user may not enter is not entered on their behalf by root. */
  char locked[300];
  snprintf(locked, sizeof locked, "%s/locked", ap.data);
  REQUIRE(mkdir(locked, 0700) == 0);
  o = start_order("w", "true", -1);
  json_object_set_new(json_object_get(o, "job"), "user", json_string("nobody"));
  json_object_set_new(json_object_get(o, "job"), "workdir", json_string(locked));
  fs_order(s, o);
  json_t *ew = fs_wait_event(s, "exited", "w", 5000);
  REQUIRE(ew);
  CHECK_EQ_STR("start_failed", json_string_value(json_object_get(ew, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(ew, "message")), "Permission denied");
  json_decref(ew);
  json_t *eu = fs_wait_event(s, "exited", "u", 5000);
  REQUIRE(eu);
  CHECK_EQ_INT(0, json_integer_value(json_object_get(eu, "exit_code")));
  char *out = job_file(&ap, "u", "stdout");
  CHECK_EQ_STR("nobody\n", out);
  free(out);
  json_t *er = fs_wait_event(s, "exited", "r", 5000);
  REQUIRE(er);
  CHECK_EQ_STR("start_failed", json_string_value(json_object_get(er, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(er, "message")), "refusing to run a job as root");
  json_t *ex = fs_wait_event(s, "exited", "x", 5000);
  REQUIRE(ex);
  CHECK_CONTAINS(json_string_value(json_object_get(ex, "message")),
                 "user 'no-such-user-gpool' has no account on node n1");
  CHECK_EQ_INT(0, fs_count_events(s, "started", "r"));
  json_decref(eu);
  json_decref(er);
  json_decref(ex);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void bad_orders_are_refused_with_a_reason(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "2xH100-80GB", "--personal", NULL, NULL, NULL);
  REQUIRE(fs_wait_register(s, 1, 10000));
  fs_order(s, start_order("g9", "true", 9)); /* no GPU 9 here */
  json_t *o = start_order("cmd", "true", 0);
  json_object_set_new(json_object_get(o, "job"), "command", json_pack("[s]", "no-such-cmd-gpool"));
  fs_order(s, o);
  o = start_order("wd", "true", 0);
  json_object_set_new(json_object_get(o, "job"), "workdir", json_string("relative/dir"));
  fs_order(s, o);
  json_t *e1 = fs_wait_event(s, "exited", "g9", 5000);
  json_t *e2 = fs_wait_event(s, "exited", "cmd", 5000);
  json_t *e3 = fs_wait_event(s, "exited", "wd", 5000);
  REQUIRE(e1 && e2 && e3);
  CHECK_EQ_STR("start_failed", json_string_value(json_object_get(e1, "reason")));
  CHECK_CONTAINS(json_string_value(json_object_get(e1, "message")), "GPU 9 does not exist");
  CHECK_EQ_STR("start_failed", json_string_value(json_object_get(e2, "reason")));
  CHECK_EQ_INT(127, json_integer_value(json_object_get(e2, "exit_code")));
  CHECK_CONTAINS(json_string_value(json_object_get(e2, "message")), "no-such-cmd-gpool");
  CHECK_CONTAINS(json_string_value(json_object_get(e3, "message")), "not an absolute path");
  json_decref(e1);
  json_decref(e2);
  json_decref(e3);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void an_event_the_server_refuses_does_not_block_the_others(void) {
  fake_server *s = fs_start();
  s->reject_kind = "inject_done"; /* an older server that does not know this event */
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal");
  REQUIRE(fs_wait_register(s, 1, 10000));
  fs_order(s, json_pack("{s:s,s:s}", "kind", "inject", "fault", "ecc_sbe:1@gpu0"));
  fs_order(s, start_order("after", "true", 0));
  json_t *e = fs_wait_event(s, "exited", "after", 8000);
  REQUIRE(e);
  CHECK_EQ_INT(1, fs_count_events(s, "started", "after"));
  CHECK_EQ_INT(0, fs_count_events(s, "inject_done", NULL));
  CHECK(s->rejected >= 1 && s->rejected <= 3); /* found and dropped, not re-sent forever */
  json_decref(e);
  usleep(300000);
  agent_stop(&ap);
  char *log = read_text(ap.log);
  CHECK_CONTAINS(log, "the server refused an event (HTTP 400: unknown event kind); dropping it");
  free(log);
  fs_stop(s);
  rm_rf(ap.data);
}

static void requeued_job_runs_again_and_is_readopted_as_the_new_run(void) {
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal");
  REQUIRE(fs_wait_register(s, 1, 10000));
  const char *first = fs_order(s, start_order("rq", "echo run1", 0));
  json_t *e1 = fs_wait_event(s, "exited", "rq", 5000);
  REQUIRE(e1);
  CHECK_EQ_STR(first, json_string_value(json_object_get(e1, "order")));
  json_decref(e1);
  usleep(300000);
  fs_order(s, start_order("rq", "echo run2; sleep 30", 0)); /* the same job, requeued here */
  int64_t until = fs_now_ms() + 5000;
  while (fs_count_events(s, "started", "rq") < 2 && fs_now_ms() < until) usleep(10000);
  CHECK_EQ_INT(2, fs_count_events(s, "started", "rq"));
  usleep(200000);
  char *out = job_file(&ap, "rq", "stdout");
  CHECK_EQ_STR("run1\nrun2\n", out); /* one log, appended run after run */
  free(out);
  agent_kill9(&ap);
  agent_spawn(&ap, s, "1xH100-80GB", "--personal", NULL);
  json_t *reg = fs_wait_register(s, 2, 10000);
  REQUIRE(reg);
  json_t *j = json_array_get(json_object_get(reg, "jobs"), 0);
  CHECK_EQ_STR("rq", json_string_value(json_object_get(j, "id")));
  CHECK_EQ_STR("running", json_string_value(json_object_get(j, "state")));
  json_decref(reg);
  fs_order(s, json_pack("{s:s,s:s,s:i}", "kind", "stop", "job", "rq", "grace_s", 0));
  until = fs_now_ms() + 5000;
  while (fs_count_events(s, "exited", "rq") < 2 && fs_now_ms() < until) usleep(10000);
  CHECK_EQ_INT(2, fs_count_events(s, "exited", "rq"));
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

static void job_reports_its_checkpoints_through_its_own_url(void) {
  if (system("command -v curl >/dev/null 2>&1") != 0) {
    printf("  (skipped: no curl)\n");
    return;
  }
  fake_server *s = fs_start();
  agent_proc ap;
  agent_new(&ap, s, "1xH100-80GB", "--personal");
  REQUIRE(fs_wait_register(s, 1, 10000));
  fs_order(s, start_order("ck", "curl -fsS -X POST \"$GPOOL_CHECKPOINT_URL\" >/dev/null && echo saved; "
                          "curl -s -o /dev/null -w '%{http_code}\\n' -X POST "
                          "\"${GPOOL_CHECKPOINT_URL%key=*}key=forged\"; sleep 0.5", 0));
  json_t *ev = fs_wait_event(s, "checkpoint", "ck", 5000);
  REQUIRE(ev);
  CHECK(json_integer_value(json_object_get(ev, "at")) > 0);
  json_decref(fs_wait_event(s, "exited", "ck", 5000));
  char *out = job_file(&ap, "ck", "stdout");
  CHECK_EQ_STR("saved\n403\n", out); /* another process cannot forge the job's checkpoints */
  free(out);
  CHECK_EQ_INT(1, fs_count_events(s, "checkpoint", "ck"));
  json_decref(ev);
  agent_stop(&ap);
  fs_stop(s);
  rm_rf(ap.data);
}

GP_TESTS(agent_registers_its_node_and_serves_its_endpoint, job_reports_its_checkpoints_through_its_own_url,
         requeued_job_runs_again_and_is_readopted_as_the_new_run, an_event_the_server_refuses_does_not_block_the_others,
         ordered_job_runs_promptly_with_its_environment_and_logs,
         stop_sends_the_checkpoint_signal_then_kills_after_grace,
         restarted_agent_readopts_running_jobs_and_reports_ended_ones,
         each_order_runs_at_most_once_even_across_restarts,
         root_agent_runs_jobs_as_their_user_and_refuses_root, bad_orders_are_refused_with_a_reason)
