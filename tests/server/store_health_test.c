/* SPDX-License-Identifier: Apache-2.0 */
/* A store that stops taking writes (store_health.h), on a real server and a real SQLite
 * file: capping the database at its current size makes SQLite fail as on a full disk
 * (SQLITE_FULL); the server then answers reads from memory, refuses writes at once with
 * 503 "store: disk full" without trying them, says so in /healthz, /metrics and once in
 * the log, and takes writes again when space comes back, with every acknowledged job
 * kept across a restart. */
#include <fcntl.h>

#include "test.h"
#include "server/srv_util.h"

/* Sends stderr to a file, so the test can count the server's log lines; at the end (or
 * at a REQUIRE's exit), the test's own failure lines go back to the real stderr. */
static char log_path[300];
static int real_stderr = -1;

static void release_log(void) {
  if (real_stderr < 0) return;
  fflush(stderr);
  dup2(real_stderr, 2);
  FILE *f = fopen(log_path, "r");
  char line[2048];
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "FAIL")) fputs(line, stderr);
  if (f) fclose(f);
  unlink(log_path);
  close(real_stderr);
  real_stderr = -1;
}

static void capture_log(const tsrv *t) {
  snprintf(log_path, sizeof log_path, "%s.log", t->dir);
  int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  fflush(stderr);
  real_stderr = dup(2);
  REQUIRE(real_stderr >= 0 && dup2(fd, 2) == 2);
  close(fd);
  atexit(release_log);
}

static int log_lines_with(const char *needle) {
  fflush(stderr);
  FILE *f = fopen(log_path, "r");
  if (!f) return -1;
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, needle)) n++;
  fclose(f);
  return n;
}

/* The value of an unlabelled sample in GET /metrics (-1 when absent). */
static double metric(const tsrv *t, const char *name) {
  CURL *h = curl_easy_init();
  char url[256];
  snprintf(url, sizeof url, "%s/metrics", t->base);
  gp_buf out;
  gp_buf_init(&out, 0);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  curl_easy_perform(h);
  curl_easy_cleanup(h);
  gp_buf_append(&out, "", 1);
  double v = -1;
  size_t nl = strlen(name);
  for (const char *p = out.data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, name, nl) == 0 && p[nl] == ' ') v = atof(p + nl + 1);
  gp_buf_done(&out);
  return v;
}

static const char *err_message(const json_t *o) {
  const char *m = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
  return m ? m : "";
}

/* Polls /healthz until it answers `status` (max ~10 s; probes back off to 2 s). */
static bool wait_health(tsrv *t, long status) {
  for (int i = 0; i < 1000; i++) {
    if (tsrv_req(t, "GET", "/healthz", NULL, NULL) == status) return true;
    usleep(10000);
  }
  return false;
}

#define MAX_ACKED 200

static void a_full_disk_keeps_reads_refuses_writes_fast_and_recovers(void) {
  tsrv t = {0};
  tsrv_make_dir(&t);
  capture_log(&t);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  gp_store *store = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &store, &e) == 0);
  tsrv_start_with(&t, NULL, store);
  char *acked[MAX_ACKED];
  int n_acked = 0;
  acked[n_acked++] = tsrv_submit(&t, ALICE, "{\"command\": [\"before\"]}");
  REQUIRE(acked[0]);
  CHECK_EQ_INT(1, (long long)metric(&t, "gpool_store_writable"));

  /* The disk fills: jobs with 16 KB commands need new pages soon. */
  REQUIRE(gp_store_sqlite_cap_pages(store, 1) == 0);
  char body[20000];
  snprintf(body, sizeof body, "{\"command\": [\"echo\", \"%0*d\"]}", 16000, 7);
  long code = 201;
  for (int i = 0; i < 100 && code == 201 && n_acked < MAX_ACKED; i++) {
    code = tsrv_req(&t, "POST", "/v1/jobs", ALICE, body);
    if (code == 201) acked[n_acked++] = strdup(job_str(t.last, "id"));
  }
  REQUIRE(code == 503);
  CHECK_EQ_STR("unavailable", err_code(t.last));
  CHECK_CONTAINS(err_message(t.last), "store: disk full");

  /* /healthz is not ok and says why. */
  CHECK_EQ_INT(503, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  CHECK(json_is_false(json_object_get(t.last, "ok")));
  CHECK_EQ_STR("disk full", json_string_value(json_object_get(t.last, "store")));
  CHECK_EQ_INT(0, (long long)metric(&t, "gpool_store_writable"));
  double failures = metric(&t, "gpool_store_write_failures_total");
  CHECK(failures >= 1);

  /* Writes are refused before they reach the store: the failure count stays. */
  int64_t t0 = tsrv_now_ms();
  for (int i = 0; i < 20; i++) {
    CHECK_EQ_INT(503, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"refused\"]}"));
    CHECK_CONTAINS(err_message(t.last), "store: disk full");
  }
  CHECK(tsrv_now_ms() - t0 < 5000);
  CHECK_EQ_INT((long long)failures, (long long)metric(&t, "gpool_store_write_failures_total"));
  CHECK(metric(&t, "gpool_store_writes_refused_total") >= 20);

  /* Reads are answered from memory: every acknowledged job is listed. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL));
  CHECK_EQ_INT(n_acked, json_array_size(json_object_get(t.last, "jobs")));
  char jp[64];
  snprintf(jp, sizeof jp, "/v1/jobs/%s", acked[0]);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", jp, ALICE, NULL));

  /* Said once in the log, not once per request. */
  CHECK_EQ_INT(1, log_lines_with("store: disk full"));

  /* Space comes back: writes are taken again, without a restart. */
  REQUIRE(gp_store_sqlite_cap_pages(store, 0) == 0);
  REQUIRE(wait_health(&t, 200));
  CHECK(json_is_true(json_object_get(t.last, "ok")));
  char *after = tsrv_submit(&t, ALICE, "{\"command\": [\"after\"]}");
  REQUIRE(after);
  CHECK_EQ_INT(1, log_lines_with("store: writable again"));

  /* Nothing acknowledged was lost. */
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start(&t);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL));
  CHECK_EQ_INT(n_acked + 1, json_array_size(json_object_get(t.last, "jobs")));
  for (int i = 0; i < n_acked; i++) {
    snprintf(jp, sizeof jp, "/v1/jobs/%s", acked[i]);
    CHECK_EQ_INT(200, tsrv_req(&t, "GET", jp, ADMIN, NULL));
    free(acked[i]);
  }
  free(after);
  tsrv_stop(&t);
  release_log();
}

static const char *node_state(tsrv *t, const char *name) {
  char p[64];
  snprintf(p, sizeof p, "/v1/nodes/%s", name);
  if (tsrv_req(t, "GET", p, ADMIN, NULL) != 200) return "";
  const char *v = json_string_value(json_object_get(json_object_get(t->last, "node"), "state"));
  return v ? v : "";
}

static void an_io_error_is_named_reads_go_on_and_agents_stay_up(void) {
  tsrv t = {0};
  tsrv_start_faulty(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  char *first = tsrv_submit(&t, ALICE, "{\"command\": [\"first\"]}");
  REQUIRE(first);
  gp_store *fs = gp_server_store(t.srv);
  gp_store_fault_arm(fs, 1, true);
  CHECK_EQ_INT(503, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"second\"]}"));
  CHECK_CONTAINS(err_message(t.last), "store: I/O error");
  CHECK_EQ_INT(503, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  CHECK_EQ_STR("I/O error", json_string_value(json_object_get(t.last, "store")));
  /* Reads do not touch the failing store. */
  for (int i = 0; i < 5; i++) CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ALICE, NULL));
  CHECK_EQ_INT(1, json_array_size(json_object_get(t.last, "jobs")));
  /* The agent's heartbeats are refused for longer than node_timeout_s (2 s): it was
   * turned away, not silent, so its node is not lost when the store comes back. */
  for (int i = 0; i < 25; i++) {
    json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
    CHECK(hb == NULL);
    json_decref(hb);
    usleep(100000);
  }
  gp_store_fault_arm(fs, 0, false);
  REQUIRE(wait_health(&t, 200));
  json_decref(tsrv_heartbeat(&t, "n1", 0, 0, NULL));
  usleep(300000); /* a few ticks */
  CHECK_EQ_STR("up", node_state(&t, "n1"));
  char *third = tsrv_submit(&t, ALICE, "{\"command\": [\"third\"]}");
  REQUIRE(third);
  CHECK_EQ_STR("2", third);
  free(first);
  free(third);
  tsrv_stop(&t);
}

/* A reload that fails leaves memory with holes: the server must not write from it, even
 * once the store takes writes again, until a reload works. */
static void no_writes_resume_before_a_reload_works(void) {
  tsrv t = {0};
  tsrv_start_faulty(&t);
  char *first = tsrv_submit(&t, ALICE, "{\"command\": [\"first\"]}");
  REQUIRE(first);
  gp_store *fs = gp_server_store(t.srv);
  gp_store_fault_fail_load(fs, true);
  gp_store_fault_arm(fs, 1, true);
  CHECK_EQ_INT(503, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"second\"]}"));
  gp_store_fault_arm(fs, 0, false);
  /* Writes fit again, but the state could not be reloaded: still refused. */
  usleep(500000);
  CHECK_EQ_INT(503, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  CHECK_EQ_INT(503, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"third\"]}"));
  gp_store_fault_fail_load(fs, false);
  REQUIRE(wait_health(&t, 200));
  char *fourth = tsrv_submit(&t, ALICE, "{\"command\": [\"fourth\"]}");
  REQUIRE(fourth);
  CHECK_EQ_STR("2", fourth); /* the reloaded truth: job 1 only */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL));
  CHECK_EQ_INT(2, json_array_size(json_object_get(t.last, "jobs")));
  free(first);
  free(fourth);
  tsrv_stop(&t);
}

GP_TESTS(no_writes_resume_before_a_reload_works, a_full_disk_keeps_reads_refuses_writes_fast_and_recovers,
         an_io_error_is_named_reads_go_on_and_agents_stay_up)
