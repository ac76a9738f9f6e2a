/* SPDX-License-Identifier: Apache-2.0 */
/* What a caller sees of someone else's job (docs/security.md, "What others see"), route by
 * route on a real server (127.0.0.1, real SQLite): job detail, job list, history, nodes,
 * per-job metrics and the CLI. Anyone but the owner and admins gets the job's command,
 * env values and the agent's detail of its end ("start_failed: (hidden)", which would
 * quote its program's path); users who are not its owner also get none of its measured use
 * (usage, idle, GPU metrics, the live telemetry of the GPUs it holds). Viewers read use. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "test.h"
#include "srv_util.h"

#define SECRET "/home/alice/secret-project/train.sh"

typedef struct pool {
  tsrv t;
  char *failed;     /* alice's job that failed to start: its program does not exist */
  char *running;    /* alice's job that runs, with telemetry and usage */
  int running_gpu;  /* the GPU it holds */
  long long gen;    /* the agent's last acknowledged order */
  pthread_t beat;   /* n1's heartbeats (node_timeout_s is 2 s) */
  atomic_bool stop, ended; /* stop beating; `running` has ended */
} pool;

/* n1's heartbeat: both GPUs busy, and `running` with its usage while it runs. */
static long heartbeat(pool *p, const char *events) {
  char body[2048];
  char jobs[256] = "[]";
  if (!atomic_load(&p->ended))
    snprintf(jobs, sizeof jobs,
             "[{\"id\": \"%s\", \"usage\": {\"avg_sm_util_pct\": 97, \"peak_sm_util_pct\": 99,"
             " \"idle_s\": 0, \"sm_busy_gpu_s\": 1, \"peak_mem_mib\": 2048, \"energy_j\": 250}}]",
             p->running);
  snprintf(body, sizeof body,
           "{\"node\": \"n1\", \"gen\": %lld, \"wait_ms\": 0, \"events\": %s,"
           " \"gpus\": [{\"index\": 0, \"health\": \"healthy\", \"telemetry\": {\"gpu_util_pct\": 97,"
           " \"fb_used_mib\": 2048, \"power_w\": 250}}, {\"index\": 1, \"health\": \"healthy\","
           " \"telemetry\": {\"gpu_util_pct\": 97, \"fb_used_mib\": 2048, \"power_w\": 250}}],"
           " \"jobs\": %s}",
           p->gen, events ? events : "[]", jobs);
  json_t *o = NULL;
  long code = tsrv_agent_call(&p->t, "/v1/agent/heartbeat", body, &o);
  json_decref(o);
  return code;
}

static void *beat_main(void *arg) {
  pool *p = arg;
  while (!atomic_load(&p->stop)) {
    heartbeat(p, NULL);
    usleep(300 * 1000);
  }
  return NULL;
}

/* n1 (2 GPUs) runs two jobs of alice's; the agent says the first could not start. */
static void pool_start(pool *p) {
  memset(p, 0, sizeof *p);
  tsrv_start_with(&p->t, "heartbeat_s: 1\nrecent_ended_jobs: 1\n", NULL);
  tsrv *t = &p->t;
  REQUIRE(tsrv_register(t, "n1", 2, NULL) == 201);
  p->failed = tsrv_submit(t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"" SECRET "\", \"--epochs\", \"3\"],"
                                    " \"env\": {\"API_KEY\": \"s3cr3t\"}, \"gpus\": 1}");
  p->running = tsrv_submit(t, ALICE, "{\"queue\": \"org/a\", \"command\": [\"train\"], \"gpus\": 1}");
  REQUIRE(p->failed && p->running);
  REQUIRE(tsrv_wait_state(t, p->failed, "running") && tsrv_wait_state(t, p->running, "running"));
  json_t *hb = tsrv_heartbeat(t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  p->gen = (long long)json_integer_value(json_object_get(hb, "gen"));
  json_decref(hb);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", p->running);
  REQUIRE(tsrv_req(t, "GET", path, ADMIN, NULL) == 200);
  p->running_gpu = (int)json_integer_value(json_array_get(
      json_object_get(json_array_get(json_object_get(json_object_get(t->last, "job"), "placements"), 0),
                      "gpu_ids"),
      0));
  /* What the agent says when the program does not exist (agent_start.c's launch). */
  char ev[512];
  snprintf(ev, sizeof ev,
           "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 127, \"reason\": \"start_failed\","
           " \"message\": \"cannot run " SECRET ": No such file or directory\"}]",
           p->failed);
  REQUIRE(heartbeat(p, ev) == 200);
  REQUIRE(tsrv_wait_state(t, p->failed, "failed"));
  REQUIRE(pthread_create(&p->beat, NULL, beat_main, p) == 0);
}

/* `running` exits with `code`. */
static void pool_end_running(pool *p, int code) {
  atomic_store(&p->ended, true);
  char ev[256];
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": %d, \"reason\": \"exited\"}]",
           p->running, code);
  CHECK_EQ_INT(200, heartbeat(p, ev));
}

static void pool_stop(pool *p) {
  atomic_store(&p->stop, true);
  pthread_join(p->beat, NULL);
  free(p->failed);
  free(p->running);
  tsrv_stop(&p->t);
}

/* The answer as text, to look for what must not be there. */
static bool answer_has(const tsrv *t, const char *text) {
  char *s = json_dumps(t->last, JSON_COMPACT);
  bool has = s && strstr(s, text);
  free(s);
  return has;
}

static const json_t *job_of(const json_t *o) { return json_object_get(o, "job"); }

/* The end reasons a job shows: its end_reason, its attempts' and its timeline's. */
static void check_end_reasons(const json_t *job, const char *want) {
  CHECK_EQ_STR(want, json_string_value(json_object_get(job, "end_reason")));
  const json_t *attempts = json_object_get(job, "attempts");
  CHECK_EQ_STR(want, json_string_value(json_object_get(json_array_get(attempts, json_array_size(attempts) - 1),
                                                       "end_reason")));
  const json_t *tl = json_object_get(job, "timeline");
  const char *ended = NULL;
  for (size_t i = 0; i < json_array_size(tl); i++)
    if (strcmp(json_string_value(json_object_get(json_array_get(tl, i), "event")), "ended") == 0)
      ended = json_string_value(json_object_get(json_array_get(tl, i), "reason"));
  CHECK_EQ_STR(want, ended);
}

static void a_failed_start_shows_its_program_only_to_its_owner_and_admins(void) {
  pool p;
  pool_start(&p);
  tsrv *t = &p.t;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", p.failed);
  const char *full = "start_failed: cannot run " SECRET ": No such file or directory";
  const char *owners[] = {ALICE, ADMIN}, *others[] = {BOB, VIEWER};
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(200, tsrv_req(t, "GET", path, owners[i], NULL));
    check_end_reasons(job_of(t->last), full);
    CHECK_EQ_STR(SECRET, json_string_value(json_array_get(json_object_get(job_of(t->last), "command"), 0)));
  }
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(200, tsrv_req(t, "GET", path, others[i], NULL));
    check_end_reasons(job_of(t->last), "start_failed: (hidden)");
    CHECK_EQ_STR("failed", job_str(t->last, "state"));
    CHECK_EQ_INT(127, json_integer_value(json_object_get(job_of(t->last), "exit_code")));
    CHECK(!answer_has(t, "secret-project"));
    CHECK(!answer_has(t, "s3cr3t"));
    /* The job list. */
    CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs", others[i], NULL));
    CHECK_EQ_INT(2, json_array_size(json_object_get(t->last, "jobs")));
    CHECK(answer_has(t, "start_failed: (hidden)"));
    CHECK(!answer_has(t, "secret-project"));
  }
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs", ALICE, NULL));
  CHECK(answer_has(t, "secret-project"));
  /* The history, read from the store: viewers list every user's, and see no more there. */
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs?all=1", VIEWER, NULL));
  REQUIRE(json_array_size(json_object_get(t->last, "jobs")) == 1);
  check_end_reasons(json_array_get(json_object_get(t->last, "jobs"), 0), "start_failed: (hidden)");
  CHECK(!answer_has(t, "secret-project"));
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs?all=1", ADMIN, NULL));
  check_end_reasons(json_array_get(json_object_get(t->last, "jobs"), 0), full);
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs?all=1", ALICE, NULL));
  check_end_reasons(json_array_get(json_object_get(t->last, "jobs"), 0), full);
  /* A reason the server writes itself says nothing of the process: shown to all. */
  char body[160];
  snprintf(body, sizeof body, "{\"queue\": \"org/a\", \"command\": [\"x\"], \"after_ok\": [\"%s\"]}",
           p.running);
  char *dep = tsrv_submit(t, ALICE, body);
  REQUIRE(dep);
  pool_end_running(&p, 1);
  REQUIRE(tsrv_wait_state(t, dep, "failed"));
  snprintf(path, sizeof path, "/v1/jobs/%s", dep);
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, BOB, NULL));
  CHECK_CONTAINS(job_str(t->last, "end_reason"), "DependencyNeverSatisfied: ");
  CHECK(!strstr(job_str(t->last, "end_reason"), "(hidden)"));
  free(dep);
  /* Two jobs ended since: the failed one is no longer in memory, its document comes from
   * the store, trimmed the same way. */
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs?state=failed", ADMIN, NULL));
  CHECK(!answer_has(t, "secret-project"));
  snprintf(path, sizeof path, "/v1/jobs/%s", p.failed);
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, BOB, NULL));
  check_end_reasons(job_of(t->last), "start_failed: (hidden)");
  CHECK(!answer_has(t, "secret-project"));
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, ALICE, NULL));
  check_end_reasons(job_of(t->last), full);
  /* The CLI shows what the API gives. */
  if (getenv("GPOOL_BIN")) {
    const char *tokens[] = {ALICE, BOB};
    for (int i = 0; i < 2; i++) {
      char cmd[1024];
      snprintf(cmd, sizeof cmd, "'%s' show %s --server %s --token %s 2>&1", getenv("GPOOL_BIN"), p.failed,
               t->base, tokens[i]);
      FILE *f = popen(cmd, "r");
      REQUIRE(f);
      char out[16384];
      size_t n = fread(out, 1, sizeof out - 1, f);
      out[n] = '\0';
      int rc = pclose(f);
      CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
      CHECK_CONTAINS(out, "start_failed");
      if (i == 0) CHECK_CONTAINS(out, "secret-project");
      else CHECK(!strstr(out, "secret-project"));
    }
  }
  pool_stop(&p);
}

/* The GPU of n1 at `index` in t->last (a NODE or the node list's first). */
static const json_t *gpu_at(const tsrv *t, int index) {
  const json_t *node = json_object_get(t->last, "node");
  if (!node) node = json_array_get(json_object_get(t->last, "nodes"), 0);
  return json_array_get(json_object_get(node, "gpu_list"), (size_t)index);
}

static void a_jobs_measured_use_is_for_its_owner_admins_and_viewers(void) {
  pool p;
  pool_start(&p);
  tsrv *t = &p.t;
  char path[64], metrics[80];
  snprintf(path, sizeof path, "/v1/jobs/%s", p.running);
  snprintf(metrics, sizeof metrics, "/v1/jobs/%s/metrics", p.running);
  int free_gpu = 1 - p.running_gpu;
  const char *readers[] = {ALICE, ADMIN, VIEWER};
  for (int i = 0; i < 3; i++) {
    CHECK_EQ_INT(200, tsrv_req(t, "GET", path, readers[i], NULL));
    CHECK_NEAR(97, json_number_value(json_object_get(json_object_get(job_of(t->last), "usage"), "avg_sm_util_pct")), 1e-9);
    CHECK_EQ_INT(200, tsrv_req(t, "GET", metrics, readers[i], NULL));
    CHECK_EQ_INT(1, json_array_size(json_object_get(t->last, "gpus")));
    CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/nodes", readers[i], NULL));
    CHECK_NEAR(97, json_number_value(json_object_get(json_object_get(gpu_at(t, p.running_gpu), "telemetry"), "gpu_util_pct")), 1e-9);
    CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/nodes/n1", readers[i], NULL));
    CHECK(json_is_object(json_object_get(gpu_at(t, p.running_gpu), "telemetry")));
  }
  /* Bob: the job's state, resources and placement, none of its figures. */
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, BOB, NULL));
  CHECK_EQ_STR("running", job_str(t->last, "state"));
  CHECK_EQ_INT(1, json_array_size(json_object_get(job_of(t->last), "placements")));
  CHECK(json_is_null(json_object_get(job_of(t->last), "usage")));
  CHECK(json_is_null(json_object_get(job_of(t->last), "idle")));
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs?state=running", BOB, NULL));
  REQUIRE(json_array_size(json_object_get(t->last, "jobs")) == 1);
  CHECK(json_is_null(json_object_get(json_array_get(json_object_get(t->last, "jobs"), 0), "usage")));
  CHECK(!answer_has(t, "avg_sm_util_pct"));
  CHECK_EQ_INT(403, tsrv_req(t, "GET", metrics, BOB, NULL));
  CHECK_EQ_STR("permission_denied", err_code(t->last));
  const char *node_paths[] = {"/v1/nodes", "/v1/nodes/n1"};
  for (int i = 0; i < 2; i++) {
    CHECK_EQ_INT(200, tsrv_req(t, "GET", node_paths[i], BOB, NULL));
    const json_t *held = gpu_at(t, p.running_gpu), *idle = gpu_at(t, free_gpu);
    CHECK_EQ_STR(p.running, json_string_value(json_array_get(json_object_get(held, "jobs"), 0)));
    CHECK(json_is_null(json_object_get(held, "telemetry")));
    /* A GPU no job holds tells nothing of anyone's job. */
    CHECK_NEAR(97, json_number_value(json_object_get(json_object_get(idle, "telemetry"), "gpu_util_pct")), 1e-9);
  }
  /* Once ended, its usage goes to the history: viewers read it there, bob lists only his. */
  pool_end_running(&p, 0);
  REQUIRE(tsrv_wait_state(t, p.running, "completed"));
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, BOB, NULL));
  CHECK(json_is_null(json_object_get(job_of(t->last), "usage")));
  CHECK_EQ_INT(200, tsrv_req(t, "GET", path, VIEWER, NULL));
  CHECK(json_is_object(json_object_get(job_of(t->last), "usage")));
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs?all=1", VIEWER, NULL));
  CHECK(answer_has(t, "avg_sm_util_pct"));
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/v1/jobs?all=1", BOB, NULL));
  CHECK_EQ_INT(0, json_array_size(json_object_get(t->last, "jobs")));
  pool_stop(&p);
}

GP_TESTS(a_failed_start_shows_its_program_only_to_its_owner_and_admins,
         a_jobs_measured_use_is_for_its_owner_admins_and_viewers)
