/* SPDX-License-Identifier: Apache-2.0 */
/* A job's per-GPU telemetry (src/server/state/jobmetrics.c, GET /v1/jobs/{id}/metrics): samples
 * come from the heartbeats of the node that runs the job, at most one per interval; a long
 * job keeps its whole life in a bounded number of samples at coarser steps; its owner,
 * admins and viewers read it, another user gets 403. */
#include "test.h"
#include "srv_util.h"
#include "server/cycle/parts.h"
#include "server/state/jobmetrics.h"
#include "server/state/state.h"
#include "util/mem.h"

/* A state holding node n1 (2 GPUs with telemetry) and job 1 running on both. */
static gp_srv_state *one_running_job(const gp_server_config *cfg) {
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  gp_srv_node *n = gp_xcalloc(1, sizeof *n);
  n->name = gp_xstrdup("n1");
  n->n_gpus = 2;
  for (int g = 0; g < 2; g++) {
    char uuid[32];
    snprintf(uuid, sizeof uuid, "GPU-n1-%d", g);
    n->gpus[g].uuid = gp_xstrdup(uuid);
    n->gpus[g].telemetry = json_pack("{s:f,s:i,s:f}", "gpu_util_pct", g ? 50.0 : 90.0,
                                     "fb_used_mib", 1000 * (g + 1), "power_w", 300.0);
  }
  gp__srv_node_add(s, n);
  json_t *o = json_loads("{\"command\": [\"true\"], \"gpus\": 2}", 0, NULL);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  REQUIRE(gp__srv_job_parse(cfg, o, "alice", false, &j, &e) == 0);
  json_decref(o);
  j->id = 1;
  snprintf(j->idstr, sizeof j->idstr, "1");
  j->state = GP_JOB_RUNNING;
  j->n_alloc = 1;
  j->alloc = gp_xcalloc(1, sizeof *j->alloc);
  j->alloc[0] = (gp_srv_alloc){.node = 0, .gpu_mask = 3, .mig_instance = -1};
  gp__srv_job_insert(s, j);
  return s;
}

static void a_long_job_keeps_its_whole_life_in_bounded_samples(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = one_running_job(cfg);
  json_t *jobs = json_pack("[{s:s}]", "id", "1");
  const int64_t t0 = 1700000000;
  size_t bytes_at_cap = 0;
  /* 30 days of heartbeats every 5 s, and a second heartbeat in the same second each time
   * (an early answer): 518,400 samples asked for. */
  for (int64_t i = 0; i < 30 * 86400 / 5; i++) {
    gp__srv_jobmetrics_take(s, s->nodes[0], 0, jobs, 5, t0 + i * 5);
    gp__srv_jobmetrics_take(s, s->nodes[0], 0, jobs, 5, t0 + i * 5);
    if (i == 2000) bytes_at_cap = gp__srv_jobmetrics_bytes(s->jobs[1]->metrics);
  }
  CHECK(gp__srv_jobmetrics_bytes(s->jobs[1]->metrics) <= bytes_at_cap);
  CHECK(gp__srv_jobmetrics_bytes(s->jobs[1]->metrics) < 2 * 2 * GP_SRV_JOBMETRICS_SAMPLES * 24 + 1024);
  gp_buf out;
  gp_buf_init(&out, 0);
  gp__srv_jobmetrics_json(s->jobs[1], 5, &out);
  json_t *doc = json_loads(out.data, 0, NULL);
  REQUIRE(doc);
  CHECK_EQ_STR("1", json_string_value(json_object_get(doc, "job")));
  int64_t interval = json_integer_value(json_object_get(doc, "interval_s"));
  const json_t *gpus = json_object_get(doc, "gpus");
  REQUIRE(json_array_size(gpus) == 2);
  for (size_t g = 0; g < 2; g++) {
    const json_t *se = json_array_get(gpus, g);
    CHECK_EQ_STR("n1", json_string_value(json_object_get(se, "node")));
    CHECK_EQ_INT((int)g, json_integer_value(json_object_get(se, "index")));
    const json_t *samples = json_object_get(se, "samples");
    size_t n = json_array_size(samples);
    CHECK(n > GP_SRV_JOBMETRICS_SAMPLES / 2 && n <= GP_SRV_JOBMETRICS_SAMPLES);
    /* The whole life: from the first heartbeat to within one step of the last. */
    const json_t *first = json_array_get(samples, 0), *last = json_array_get(samples, n - 1);
    CHECK_EQ_INT(t0, json_integer_value(json_array_get(first, 0)));
    CHECK(json_integer_value(json_array_get(last, 0)) >= t0 + 30 * 86400 - 5 - 2 * interval);
    CHECK_NEAR(g ? 50.0 : 90.0, json_number_value(json_array_get(last, 1)), 1e-3);
    CHECK_NEAR(1000.0 * (double)(g + 1), json_number_value(json_array_get(last, 2)), 1e-3);
    CHECK_NEAR(300.0, json_number_value(json_array_get(last, 3)), 1e-3);
    /* Evenly spaced by the interval the answer names. */
    const json_t *second = json_array_get(samples, 1);
    CHECK_EQ_INT(interval, json_integer_value(json_array_get(second, 0)) - t0);
  }
  CHECK(interval >= 30 * 86400 / GP_SRV_JOBMETRICS_SAMPLES);
  json_decref(doc);
  gp_buf_done(&out);
  json_decref(jobs);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

static void only_the_node_that_runs_the_job_gives_samples(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = one_running_job(cfg);
  json_t *jobs = json_pack("[{s:s},{s:s},{s:i},{}]", "id", "1", "id", "99", "id", 5);
  /* The job's node, seen as another node index: nothing is taken. */
  gp__srv_jobmetrics_take(s, s->nodes[0], 1, jobs, 5, 1000);
  CHECK(s->jobs[1]->metrics == NULL);
  gp__srv_jobmetrics_take(s, s->nodes[0], 0, jobs, 5, 1000);
  CHECK(s->jobs[1]->metrics != NULL);
  /* A GPU the agent could not read has no telemetry: no sample, and no series for it. */
  json_decref(s->nodes[0]->gpus[1].telemetry);
  s->nodes[0]->gpus[1].telemetry = NULL;
  gp__srv_jobmetrics_free(s->jobs[1]->metrics);
  s->jobs[1]->metrics = NULL;
  gp__srv_jobmetrics_take(s, s->nodes[0], 0, jobs, 5, 1000);
  gp_buf out;
  gp_buf_init(&out, 0);
  gp__srv_jobmetrics_json(s->jobs[1], 5, &out);
  json_t *doc = json_loads(out.data, 0, NULL);
  CHECK_EQ_INT(1, json_array_size(json_object_get(doc, "gpus")));
  json_decref(doc);
  gp_buf_done(&out);
  json_decref(jobs);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

/* A heartbeat of n1 with its two GPUs' telemetry and job `id` running there. */
static void heartbeat_with_telemetry(tsrv *t, const char *id, double util) {
  char body[1024];
  snprintf(body, sizeof body,
           "{\"node\": \"n1\", \"gen\": 0, \"wait_ms\": 0, \"events\": [], \"gpus\": ["
           "{\"index\": 0, \"health\": \"healthy\", \"telemetry\": {\"gpu_util_pct\": %g,"
           " \"fb_used_mib\": 2048, \"power_w\": 250.5}},"
           "{\"index\": 1, \"health\": \"healthy\", \"telemetry\": {\"gpu_util_pct\": 0,"
           " \"fb_used_mib\": 0, \"power_w\": 60}}],"
           " \"jobs\": [{\"id\": \"%s\"}]}",
           util, id);
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_agent_call(t, "/v1/agent/heartbeat", body, &o));
  json_decref(o);
}

static void the_owner_admins_and_viewers_read_a_jobs_gpu_metrics(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "heartbeat_s: 1\n", NULL);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"true\"], \"gpus\": 1}");
  REQUIRE(id);
  REQUIRE(tsrv_wait_state(&t, id, "running"));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s/metrics", id);
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL); /* no telemetry, no job listed */
  json_decref(hb);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, ALICE, NULL));
  CHECK_EQ_INT(0, json_array_size(json_object_get(t.last, "gpus")));
  heartbeat_with_telemetry(&t, id, 97);
  heartbeat_with_telemetry(&t, id, 10); /* the same second: no second sample */
  usleep(1100 * 1000);
  heartbeat_with_telemetry(&t, id, 42);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, ALICE, NULL));
  CHECK_EQ_STR(id, json_string_value(json_object_get(t.last, "job")));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(t.last, "interval_s")));
  const json_t *gpus = json_object_get(t.last, "gpus");
  REQUIRE(json_array_size(gpus) == 1); /* the one GPU the job holds */
  const json_t *g = json_array_get(gpus, 0);
  CHECK_EQ_STR("n1", json_string_value(json_object_get(g, "node")));
  int index = (int)json_integer_value(json_object_get(g, "index"));
  char uuid[32];
  snprintf(uuid, sizeof uuid, "GPU-n1-%d", index);
  CHECK_EQ_STR(uuid, json_string_value(json_object_get(g, "uuid")));
  const json_t *samples = json_object_get(g, "samples");
  REQUIRE(json_array_size(samples) == 2);
  if (index == 0) {
    CHECK_NEAR(97, json_number_value(json_array_get(json_array_get(samples, 0), 1)), 1e-9);
    CHECK_NEAR(42, json_number_value(json_array_get(json_array_get(samples, 1), 1)), 1e-9);
    CHECK_NEAR(2048, json_number_value(json_array_get(json_array_get(samples, 1), 2)), 1e-9);
    CHECK_NEAR(250.5, json_number_value(json_array_get(json_array_get(samples, 1), 3)), 1e-9);
  }
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, ADMIN, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, VIEWER, NULL));
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", path, BOB, NULL));
  CHECK_EQ_STR("permission_denied", err_code(t.last));
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/jobs/999/metrics", ALICE, NULL));
  free(id);
  tsrv_stop(&t);
}

GP_TESTS(a_long_job_keeps_its_whole_life_in_bounded_samples,
         only_the_node_that_runs_the_job_gives_samples,
         the_owner_admins_and_viewers_read_a_jobs_gpu_metrics)
