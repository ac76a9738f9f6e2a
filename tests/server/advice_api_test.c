/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/advice through the real route over a real SQLite store holding known intervals and
 * ended jobs with their use figures: the right MIG profile for a job that used 15 GiB of an
 * 80 GB A100, the headroom parameter applied, a user seeing only their own advice (and no
 * fleet items), an admin seeing everyone's and the fleet's band, and 400s naming the bad
 * parameter. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "srv_util.h"
#include "store/store.h"

#define JAN1 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */
#define H INT64_C(3600)
#define RANGE "from=2026-01-01&to=2026-01-03"

/* A one-GPU job of `user` that ran 10 h on n1's GPU `gpu` at 20% SM and peaked at 15 GiB. */
static void write_job(gp_store *st, int64_t id, const char *user, const char *queue,
                      const char *name, int gpu, int64_t start) {
  gp_err e = {0};
  char uuid[32];
  snprintf(uuid, sizeof uuid, "GPU-n1-%d", gpu);
  gp_store_interval row = {.job_id = id, .attempt = 1, .user = user, .queue = queue, .node = "n1",
                           .gpu_uuid = uuid, .model = "A100-80GB", .capacity = "on-demand",
                           .share = 1.0, .start = start};
  REQUIRE(gp_store_open_interval(st, &row, &e) == 0);
  REQUIRE(gp_store_set_interval_use(st, id, "n1", 0.2 * 10 * H, -1, &e) == 0);
  REQUIRE(gp_store_close_intervals(st, id, start + 10 * H, &e) == 0);
  char doc[1024];
  snprintf(doc, sizeof doc,
           "{\"id\": \"%lld\", \"name\": \"%s\", \"queue\": \"%s\", \"user\": \"%s\", "
           "\"state\": \"completed\", \"command\": [\"true\"], \"gpus\": 1, \"tasks\": 1, "
           "\"gpu_fraction\": 0, \"mig\": null, \"requeue\": false, \"exit_code\": 0, "
           "\"submitted_at\": %lld, \"started_at\": %lld, \"ended_at\": %lld, "
           "\"usage\": {\"avg_sm_util_pct\": 20.0, \"peak_sm_util_pct\": 60, \"idle_s\": 0, "
           "\"sm_busy_gpu_s\": 7200.0, \"peak_mem_mib\": 15360, \"energy_j\": 1.0}}",
           (long long)id, name, queue, user, (long long)start, (long long)start,
           (long long)(start + 10 * H));
  gp_store_job job = {id, "completed", queue, user, start, doc, NULL};
  REQUIRE(gp_store_put_job(st, &job, &e) == 0);
}

static void register_n1(tsrv *t) {
  /* The fleet: n1's A100s, one of them partitioned, so MIG profiles may be advised. */
  json_t *o = NULL;
  CHECK_EQ_INT(201, tsrv_agent_call(t, "/v1/agent/register",
      "{\"node\": {\"name\": \"n1\", \"model\": \"A100-80GB\", \"gpus\": 2, \"cpus\": 64, "
      "\"mem_mib\": 512000, \"gpu_list\": [{\"index\": 0, \"mem_mib\": 81920, \"mode\": \"exclusive\"}, "
      "{\"index\": 1, \"mem_mib\": 81920, \"mode\": \"mig\", \"mig\": [{\"profile\": \"3g.40gb\", "
      "\"start_slot\": 4}]}]}, \"agent_url\": \"http://127.0.0.1:1\", \"jobs\": []}", &o));
  json_decref(o);
}

static void start(tsrv *t) {
  tsrv_make_dir(t);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t->dir);
  gp_store *st = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &st, &e) == 0);
  REQUIRE(gp_store_begin(st, &e) == 0);
  gp_store_node_interval n = {.node = "n1", .model = "A100-80GB", .capacity = "on-demand",
                              .state = "up", .gpus = 2, .start = JAN1};
  REQUIRE(gp_store_open_node_interval(st, &n, &e) == 0);
  REQUIRE(gp_store_close_node_interval(st, "n1", JAN1 + 48 * H, &e) == 0);
  write_job(st, 1, "alice", "org/a", "train-7b", 0, JAN1);
  write_job(st, 2, "bob", "org/b", "bob-eval", 1, JAN1 + 12 * H);
  REQUIRE(gp_store_commit(st, &e) == 0);
  gp_store_close(st);
  tsrv_start(t);
  register_n1(t);
}

static json_t *items(const tsrv *t) { return json_object_get(t->last, "items"); }
static const char *s_of(const json_t *o, const char *k) {
  const char *v = json_string_value(json_object_get(o, k));
  return v ? v : "(null)";
}

/* The first item of `kind` for `user` (NULL: any user), or NULL. */
static json_t *item(const tsrv *t, const char *kind, const char *user) {
  size_t i;
  json_t *it;
  json_array_foreach(items(t), i, it) {
    if (strcmp(s_of(it, "kind"), kind) == 0 && (!user || strcmp(s_of(it, "user"), user) == 0))
      return it;
  }
  return NULL;
}

static void a_job_that_used_15_gib_is_advised_a_2g_slice(void) {
  tsrv t = {0};
  start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?" RANGE, ALICE, NULL));
  CHECK_EQ_STR("2026-01-01T00:00:00Z", s_of(t.last, "from"));
  json_t *it = item(&t, "right_size", "alice");
  REQUIRE(it);
  CHECK_EQ_STR("--mig 2g.20gb", s_of(it, "suggestion"));
  CHECK_EQ_STR("train-7b", s_of(it, "name"));
  CHECK(strstr(s_of(it, "message"), "would cost 71% less"));
  json_t *saving = json_object_get(it, "saving");
  CHECK_NEAR(10.0 * 5 / 7, json_number_value(json_object_get(saving, "gpu_hours")), 1e-3);
  CHECK(json_is_null(json_object_get(saving, "cost"))); /* no price catalogue: unknown money */
  CHECK_NEAR(15360, json_number_value(json_object_get(json_object_get(it, "evidence"), "peak_mem_mib")), 1e-9);
  /* With 50% headroom 15 GiB needs 22.5: the 40 GB slice. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?headroom=50%25&" RANGE, ALICE, NULL));
  it = item(&t, "right_size", "alice");
  REQUIRE(it);
  CHECK_EQ_STR("--mig 3g.40gb", s_of(it, "suggestion"));
  /* A name filter: only that job's advice. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?name=other&" RANGE, ALICE, NULL));
  CHECK_EQ_INT(0, json_array_size(items(&t)));
  tsrv_stop(&t);
}

static void a_user_sees_only_their_own_advice(void) {
  tsrv t = {0};
  start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?" RANGE, ALICE, NULL));
  size_t i;
  json_t *it;
  CHECK(json_array_size(items(&t)) > 0);
  json_array_foreach(items(&t), i, it) {
    CHECK_EQ_STR("alice", s_of(it, "user"));
    CHECK(strcmp(s_of(it, "kind"), "utilisation") != 0 && strcmp(s_of(it, "kind"), "quota") != 0);
  }
  /* Naming another user is refused, naming the parameter. */
  CHECK_EQ_INT(403, tsrv_req(&t, "GET", "/v1/advice?user=bob&" RANGE, ALICE, NULL));
  CHECK_EQ_STR("user", err_field(t.last));
  /* An admin sees both users' advice and the fleet's band: 20 of 96 GPU-hours is 21%. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?" RANGE, ADMIN, NULL));
  CHECK(item(&t, "right_size", "alice") && item(&t, "right_size", "bob"));
  it = item(&t, "utilisation", NULL);
  REQUIRE(it);
  CHECK_NEAR(20.0 / 96 * 100, json_number_value(json_object_get(json_object_get(it, "evidence"), "allocated_pct")), 1e-3);
  /* ... and may ask about one user. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?user=bob&" RANGE, ADMIN, NULL));
  json_array_foreach(items(&t), i, it) CHECK_EQ_STR("bob", s_of(it, "user"));
  tsrv_stop(&t);
}

/* A running job whose agent reports no SM use past its queue's idle window is advised as
 * idle now, to its owner and an admin, never to another user. */
static void a_job_idle_now_is_advised(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/idle-q", ADMIN,
                             "{\"users\": [\"*\"], \"deserved\": 1, \"idle_policy\": {\"window\": 1, \"grace\": 0}}"));
  register_n1(&t);
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"idle-q\", \"name\": \"nb\", \"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(id);
  REQUIRE(tsrv_wait_state(&t, id, "running"));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  long long gen = (long long)json_integer_value(json_object_get(hb, "gen"));
  json_decref(hb);
  /* Reports of no use every 0.5 s until a span is judged (4 s) and the window has passed. */
  json_t *it = NULL;
  for (int k = 0; k < 30 && !it; k++) {
    char body[512];
    snprintf(body, sizeof body, "{\"node\": \"n1\", \"gen\": %lld, \"wait_ms\": 0, \"events\": [], "
             "\"jobs\": [{\"id\": \"%s\", \"usage\": {\"sm_busy_gpu_s\": 0.0}}]}", gen, id);
    json_t *o = NULL;
    CHECK_EQ_INT(200, tsrv_agent_call(&t, "/v1/agent/heartbeat", body, &o));
    if (o) gen = (long long)json_integer_value(json_object_get(o, "gen"));
    json_decref(o);
    CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice", ALICE, NULL));
    it = item(&t, "idle_now", "alice");
    if (!it) usleep(500000);
  }
  REQUIRE(it);
  CHECK_EQ_INT(atoll(id), json_integer_value(json_object_get(it, "job")));
  CHECK_EQ_STR("nb", s_of(it, "name"));
  CHECK_CONTAINS(s_of(it, "message"), "has been idle for");
  CHECK_NEAR(1, json_number_value(json_object_get(json_object_get(it, "evidence"), "gpus")), 1e-9);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice", BOB, NULL));
  CHECK(!item(&t, "idle_now", NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice", ADMIN, NULL));
  CHECK(item(&t, "idle_now", "alice"));
  free(id);
  tsrv_stop(&t);
}

/* Runs `gpool CMD --server ... --token ... ARGS` against t's server; returns its exit
 * status and its output (stdout and stderr) in out. */
static int run_cli(const tsrv *t, const char *token, const char *cmd_args, char *out, size_t cap) {
  char cmd[1024], sub[32];
  const char *rest = strchr(cmd_args, ' ');
  size_t n = rest ? (size_t)(rest - cmd_args) : strlen(cmd_args);
  snprintf(sub, sizeof sub, "%.*s", (int)n, cmd_args);
  snprintf(cmd, sizeof cmd, "'%s' %s --server %s --token %s%s 2>&1", getenv("GPOOL_BIN"), sub,
           t->base, token, rest ? rest : "");
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A job the server ran itself: the use figures its agent reported when it exited are kept
 * with the ended job in the store, where advice finds them. */
static void an_ended_jobs_use_outlives_it(void) {
  tsrv t = {0};
  tsrv_start(&t);
  register_n1(&t);
  char *id = tsrv_submit(&t, ALICE, "{\"queue\": \"org/a\", \"name\": \"live\", \"command\": [\"train\"], \"gpus\": 1}");
  REQUIRE(id);
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 3000, NULL);
  REQUIRE(hb);
  long long gen = (long long)json_integer_value(json_object_get(hb, "gen"));
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, id, "running"));
  usleep(1100 * 1000); /* a whole second held, so its interval has a length */
  char ev[512];
  snprintf(ev, sizeof ev, "[{\"kind\": \"started\", \"job\": \"%s\", \"pid\": 42}, "
           "{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 0, \"reason\": \"exited\", "
           "\"usage\": {\"avg_sm_util_pct\": 20.0, \"peak_sm_util_pct\": 50, \"idle_s\": 0, "
           "\"sm_busy_gpu_s\": 0.2, \"peak_mem_mib\": 15360, \"energy_j\": 300.0}}]", id, id);
  hb = tsrv_heartbeat(&t, "n1", gen, 0, ev);
  REQUIRE(hb);
  json_decref(hb);
  CHECK(tsrv_wait_state(&t, id, "completed"));
  char path[128];
  long long now = (long long)time(NULL);
  snprintf(path, sizeof path, "/v1/advice?from=%lld&to=%lld", now - 3600, now + 3600);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, ALICE, NULL));
  json_t *it = item(&t, "right_size", "alice");
  REQUIRE(it);
  CHECK_EQ_STR("live", s_of(it, "name"));
  CHECK_EQ_STR("--mig 2g.20gb", s_of(it, "suggestion"));
  /* `gpool submit --advise` prints the advice on the job's name (the last 7 days), then
   * submits; a name with no history has nothing to say and is submitted all the same. */
  if (getenv("GPOOL_BIN")) {
    char out[4096];
    CHECK_EQ_INT(0, run_cli(&t, ALICE, "submit --advise -n live -q org/a -- true", out, sizeof out));
    CHECK_CONTAINS(out, "advice: the run of `live` (alice) peaked at 15.0 GiB");
    CHECK_CONTAINS(out, "`--mig 2g.20gb` would cost 71% less");
    CHECK_CONTAINS(out, "2\n"); /* the new job's id */
    CHECK_EQ_INT(0, run_cli(&t, ALICE, "submit --advise -n fresh -q org/a -- true", out, sizeof out));
    CHECK(!strstr(out, "advice:"));
    CHECK_CONTAINS(out, "3\n");
  }
  free(id);
  tsrv_stop(&t);
}

/* `gpool advise` prints the table and the sentences; a bad option's refusal names it. */
static void the_cli_prints_the_advice(void) {
  if (!getenv("GPOOL_BIN")) return;
  tsrv t = {0};
  start(&t);
  char out[8192];
  CHECK_EQ_INT(0, run_cli(&t, ALICE, "advise --from 2026-01-01 --to 2026-01-03", out, sizeof out));
  CHECK_CONTAINS(out, "right_size");
  CHECK_CONTAINS(out, "alice/train-7b");
  CHECK_CONTAINS(out, "--mig 2g.20gb");
  CHECK_CONTAINS(out, "would cost 71% less");
  CHECK(!strstr(out, "bob"));
  CHECK_EQ_INT(0, run_cli(&t, ALICE, "advise --from 2026-01-01 --to 2026-01-03 -o json", out, sizeof out));
  CHECK_CONTAINS(out, "\"kind\": \"right_size\"");
  CHECK_EQ_INT(1, run_cli(&t, ALICE, "advise --headroom lots", out, sizeof out));
  CHECK_CONTAINS(out, "headroom");

  tsrv_stop(&t);
}

static void bad_parameters_get_400_naming_them(void) {
  tsrv t = {0};
  start(&t);
  static const struct { const char *query, *field; } cases[] = {
      {"headroom=abc", "headroom"}, {"headroom=500%25", "headroom"}, {"headroom=-1", "headroom"},
      {"from=yesterday", "from"}, {"to=2026-13-01", "to"}, {"from=2026-02-01&to=2026-01-01", "from"},
      {"checkpoint=1s", "checkpoint"}, {"checkpoint=soon", "checkpoint"}, {"bogus=1", "bogus"},
      {"from=2020-01-01&to=2026-01-01", "to"}, {"queue=", "queue"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char path[256];
    snprintf(path, sizeof path, "/v1/advice?%s", cases[i].query);
    CHECK_EQ_INT(400, tsrv_req(&t, "GET", path, ALICE, NULL));
    CHECK_EQ_STR(cases[i].field, err_field(t.last));
  }
  CHECK_EQ_INT(405, tsrv_req(&t, "POST", "/v1/advice", ALICE, "{}"));
  tsrv_stop(&t);
}

/* Quota over a week in which the fleet (n1's 2 GPUs) was up 2 days: org/b's 4 deserved
 * GPUs come to 2 GPUs x 48 h = 96 GPU-hours, not 4 x 168 = 672. Asking about org/b keeps its
 * quota and leaves out the fleet's band (its allocation is not the fleet's); a queue the
 * pool does not have is refused naming the parameter; a parent of some is a queue. */
static void quota_counts_the_fleets_up_time_and_queues_are_checked(void) {
  tsrv t = {0};
  start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?from=2026-01-01&to=2026-01-08", ADMIN, NULL));
  json_t *q = NULL, *it;
  size_t i;
  json_array_foreach(items(&t), i, it) {
    if (!strcmp(s_of(it, "kind"), "quota") && !strcmp(s_of(it, "queue"), "org/b")) q = it;
  }
  REQUIRE(q);
  json_t *ev = json_object_get(q, "evidence");
  CHECK_NEAR(96, json_number_value(json_object_get(ev, "deserved_gpu_hours")), 1e-6);
  CHECK_NEAR(86, json_number_value(json_object_get(ev, "idle_quota_gpu_hours")), 1e-6);
  CHECK(strstr(s_of(q, "message"), "over the 48 h the fleet was up"));
  CHECK(item(&t, "utilisation", NULL) != NULL);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?queue=org/b&from=2026-01-01&to=2026-01-08", ADMIN, NULL));
  CHECK(item(&t, "quota", NULL) != NULL);
  CHECK(item(&t, "utilisation", NULL) == NULL);
  json_array_foreach(items(&t), i, it) CHECK_EQ_STR("org/b", s_of(it, "queue"));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/advice?queue=org/zzz&" RANGE, ADMIN, NULL));
  CHECK_EQ_STR("queue", err_field(t.last));
  CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(t.last, "error"), "message")), "org/zzz");
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/advice?queue=or&" RANGE, ALICE, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/advice?queue=org&" RANGE, ADMIN, NULL));
  tsrv_stop(&t);
}

GP_TESTS(a_job_that_used_15_gib_is_advised_a_2g_slice, a_user_sees_only_their_own_advice,
         an_ended_jobs_use_outlives_it, a_job_idle_now_is_advised, the_cli_prints_the_advice,
         bad_parameters_get_400_naming_them, quota_counts_the_fleets_up_time_and_queues_are_checked)
