/* SPDX-License-Identifier: Apache-2.0 */
/* A server restarted on a large store listens at once: while the store loads (slowed here
 * by the fault-injecting store, as a big store on a slow disk is), every request gets 503
 * "loading the store: N jobs" and /healthz says it is not ready; then it answers as usual,
 * with every job. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/socket.h>

#include "test.h"
#include "server/srv_util.h"
#include "server/state/state.h"

/* A free port on 127.0.0.1 (the server must listen on a port the test knows before
 * gp_server_start returns). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

typedef struct starter {
  gp_server *srv;
  int rc;
} starter;

static void *start_thread(void *arg) {
  starter *st = arg;
  gp_err e = {0};
  st->rc = gp_server_start(st->srv, &e);
  if (st->rc) fprintf(stderr, "start: %s\n", e.message);
  return NULL;
}

static const char *err_message(const json_t *o) {
  const char *m = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
  return m ? m : "";
}

static void the_server_listens_while_the_store_loads(void) {
  tsrv t = {0};
  tsrv_start(&t);
  for (int i = 0; i < 5; i++) free(tsrv_submit(&t, ALICE, "{\"command\": [\"x\"]}"));
  t.keep_dir = true;
  tsrv_stop(&t);

  /* Restart on the same file, with a load that takes 3 s. */
  int port = free_port();
  char text[8192], path[300];
  snprintf(text, sizeof text, "%sdata_dir: %s\n", tsrv_base_config, t.dir);
  char *listen = strstr(text, "127.0.0.1:0");
  REQUIRE(listen);
  char fixed[32];
  int n = snprintf(fixed, sizeof fixed, "127.0.0.1:%d", port);
  memmove(listen + n, listen + 11, strlen(listen + 11) + 1);
  memcpy(listen, fixed, (size_t)n);
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("test.yaml", text, strlen(text), &t.cfg, &e) == 0);
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  gp_store *inner = NULL, *fs = NULL;
  REQUIRE(gp_store_sqlite_open(path, &inner, &e) == 0);
  REQUIRE(gp_store_fault_open(inner, &fs) == 0);
  gp_store_fault_slow_load(fs, 3000);
  REQUIRE(gp_server_new(t.cfg, fs, &t.srv, &e) == 0);
  snprintf(t.base, sizeof t.base, "http://127.0.0.1:%d", port);
  starter st = {t.srv, -1};
  pthread_t th;
  int64_t t0 = tsrv_now_ms();
  REQUIRE(pthread_create(&th, NULL, start_thread, &st) == 0);

  /* It answers within a fraction of the load time, and says why it cannot serve yet. */
  long code = 0;
  for (int i = 0; i < 200 && code == 0; i++) {
    code = tsrv_req(&t, "GET", "/healthz", NULL, NULL);
    if (!code) usleep(10000);
  }
  CHECK_EQ_INT(503, code);
  CHECK(tsrv_now_ms() - t0 < 2000);
  CHECK(json_is_false(json_object_get(t.last, "ok")));
  CHECK(json_is_true(json_object_get(t.last, "loading")));
  CHECK_CONTAINS(json_string_value(json_object_get(t.last, "message")), "loading the store: ");
  CHECK_EQ_INT(503, tsrv_req(&t, "POST", "/v1/jobs", ALICE, "{\"command\": [\"early\"]}"));
  CHECK_EQ_STR("unavailable", err_code(t.last));
  CHECK_CONTAINS(err_message(t.last), "loading the store: ");
  CHECK_EQ_INT(503, tsrv_req(&t, "GET", "/v1/jobs", ALICE, NULL));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL); /* agents retry later */
  CHECK(hb == NULL);
  json_decref(hb);

  REQUIRE(pthread_join(th, NULL) == 0);
  REQUIRE(st.rc == 0);
  CHECK(tsrv_now_ms() - t0 >= 3000);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL));
  CHECK_EQ_INT(5, json_array_size(json_object_get(t.last, "jobs")));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"after\"]}");
  REQUIRE(id);
  CHECK_EQ_STR("6", id);
  free(id);
  tsrv_stop(&t);
}

/* A store row whose state column says pending while its document carries an ended_at (a
 * store written by hand, or by a copy gone wrong) was listed twice by the load: once among
 * the active jobs, once among the recent ended ones. The second copy replaced the first,
 * which was freed while the active list still held it: the Release server aborted with
 * free(): invalid pointer on a 1,100,000-job store (bench/store_restart.sh); ASan reported
 * the use after free here. Now the store lists it once (store_test.c) and a replaced job
 * leaves the active list (view_test.c): the job loads once, active, and can be cancelled. */
static void a_job_listed_twice_by_the_store_loads_once(void) {
  tsrv t = {0};
  tsrv_start(&t);
  for (int i = 0; i < 3; i++) free(tsrv_submit(&t, ALICE, "{\"command\": [\"x\"]}"));
  t.keep_dir = true;
  tsrv_stop(&t);

  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE jobs SET doc = json_set(doc, '$.ended_at', 1700000000) "
                           "WHERE id = 2", NULL, NULL, NULL) == SQLITE_OK);
  CHECK_EQ_INT(1, sqlite3_changes(db));
  sqlite3_close(db);

  tsrv_start(&t);
  for (int i = 0; i < 500 && tsrv_req(&t, "GET", "/healthz", NULL, NULL) != 200; i++) usleep(10000);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL));
  CHECK_EQ_INT(3, json_array_size(json_object_get(t.last, "jobs")));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/jobs/2/cancel", ALICE, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/jobs/2", ALICE, NULL));
  CHECK_EQ_STR("cancelled",
               json_string_value(json_object_get(json_object_get(t.last, "job"), "state")));
  tsrv_stop(&t);
}

/* The documents are parsed in batches over the CPUs and inserted in the store's order: a
 * store of 9,000 jobs (more than two batches) loads every one, each with its own timeline,
 * in id order, and the next id follows the last. */
static void many_jobs_load_in_order_with_their_timelines(void) {
  tsrv t = {0};
  tsrv_start(&t);
  free(tsrv_submit(&t, ALICE, "{\"command\": [\"x\"]}"));
  t.keep_dir = true;
  tsrv_stop(&t);

  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
  const char *fill =
      "BEGIN;"
      "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 9000) "
      "INSERT INTO jobs(id, state, queue, user, submitted_at, doc) SELECT i, j.state, j.queue, "
      "j.user, j.submitted_at, json_set(j.doc, '$.id', CAST(i AS TEXT), '$.name', 'job-' || i) "
      "FROM n, jobs AS j WHERE j.id = 1;"
      "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 9000) "
      "INSERT INTO job_events(job_id, at, event, doc) SELECT i, e.at, e.event, "
      "json_set(e.doc, '$.note', 'of ' || i) FROM n, job_events AS e WHERE e.job_id = 1;"
      "INSERT OR REPLACE INTO meta(key, value) VALUES ('next_job_id', 9001);"
      "COMMIT;";
  char *msg = NULL;
  if (sqlite3_exec(db, fill, NULL, NULL, &msg) != SQLITE_OK) fprintf(stderr, "fill: %s\n", msg);
  REQUIRE(msg == NULL);
  sqlite3_close(db);

  tsrv_start(&t);
  for (int i = 0; i < 1000 && tsrv_req(&t, "GET", "/healthz", NULL, NULL) != 200; i++) usleep(10000);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/healthz", NULL, NULL));
  const int probe[] = {1, 2, 4096, 4097, 8192, 8193, 9000};
  for (size_t k = 0; k < sizeof probe / sizeof *probe; k++) {
    char p[64], note[32];
    snprintf(p, sizeof p, "/v1/jobs/%d", probe[k]);
    REQUIRE(tsrv_req(&t, "GET", p, ALICE, NULL) == 200);
    const json_t *job = json_object_get(t.last, "job");
    snprintf(note, sizeof note, "job-%d", probe[k]);
    if (probe[k] > 1) CHECK_EQ_STR(note, json_string_value(json_object_get(job, "name")));
    CHECK_EQ_STR("pending", json_string_value(json_object_get(job, "state")));
    const json_t *tl = json_object_get(job, "timeline");
    REQUIRE(json_array_size(tl) >= 1);
    snprintf(note, sizeof note, "of %d", probe[k]);
    if (probe[k] > 1)
      CHECK_EQ_STR(note, json_string_value(json_object_get(json_array_get(tl, 0), "note")));
  }
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"after\"]}");
  REQUIRE(id);
  CHECK_EQ_STR("9001", id);
  free(id);
  tsrv_stop(&t);
}

/* Runs `sql` on the test server's store file (stopped). */
static void store_sql(const tsrv *t, const char *sql) {
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t->dir);
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fprintf(stderr, "%s: %s\n", sql, msg);
  CHECK(msg == NULL);
  sqlite3_free(msg);
  sqlite3_close(db);
}

/* The first integer `sql` answers on the store file. */
static long long store_int(const tsrv *t, const char *sql) {
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t->dir);
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  REQUIRE(sqlite3_open(path, &db) == SQLITE_OK);
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
  long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

static void wait_loaded(tsrv *t) {
  for (int i = 0; i < 1000 && tsrv_req(t, "GET", "/healthz", NULL, NULL) != 200; i++) usleep(10000);
  CHECK_EQ_INT(200, tsrv_req(t, "GET", "/healthz", NULL, NULL));
}

static void job_2_is_whole(tsrv *t) {
  REQUIRE(tsrv_req(t, "GET", "/v1/jobs/2", ALICE, NULL) == 200);
  const json_t *job = json_object_get(t->last, "job");
  CHECK_EQ_STR("two", json_string_value(json_object_get(job, "name")));
  CHECK_EQ_STR("pending", json_string_value(json_object_get(job, "state")));
  CHECK_EQ_STR("a \"b\"\n", json_string_value(json_array_get(json_object_get(job, "command"), 1)));
  CHECK_EQ_INT(1, json_array_size(json_object_get(job, "timeline")));
}

static void submit_three(tsrv *t) {
  tsrv_start(t);
  const char *body = "{\"command\": [\"x\", \"a \\\"b\\\"\\n\"], \"name\": \"two\", \"env\": {\"K\": \"v\"}}";
  for (int i = 0; i < 3; i++) free(tsrv_submit(t, ALICE, body));
  t->keep_dir = true;
  tsrv_stop(t);
}

/* A store of the gpool before load records (schema 3: jobs without a rec column) loads
 * every job from its document, and the server writes their records: every row has one
 * after, and the next start reads them. */
static void a_store_before_load_records_loads_and_gains_them(void) {
  tsrv t = {0};
  submit_three(&t);
  CHECK_EQ_INT(3, store_int(&t, "SELECT count(*) FROM jobs WHERE rec LIKE 'gpj1;%'"));
  store_sql(&t, "ALTER TABLE jobs DROP COLUMN rec; PRAGMA user_version = 3");
  tsrv_start(&t);
  wait_loaded(&t);
  job_2_is_whole(&t);
  t.keep_dir = true;
  tsrv_stop(&t);
  CHECK_EQ_INT(4, store_int(&t, "PRAGMA user_version"));
  CHECK_EQ_INT(3, store_int(&t, "SELECT count(*) FROM jobs WHERE rec LIKE 'gpj1;%'"));
  tsrv_start(&t);
  wait_loaded(&t);
  job_2_is_whole(&t);
  tsrv_stop(&t);
}

/* A record that does not read (cut short) loses nothing: the job loads from its document,
 * and its record is written again. */
static void a_damaged_record_loads_from_the_document(void) {
  tsrv t = {0};
  submit_three(&t);
  long long len = store_int(&t, "SELECT length(rec) FROM jobs WHERE id = 2");
  store_sql(&t, "UPDATE jobs SET rec = substr(rec, 1, 30) WHERE id = 2");
  tsrv_start(&t);
  wait_loaded(&t);
  job_2_is_whole(&t);
  t.keep_dir = true;
  tsrv_stop(&t);
  CHECK_EQ_INT(len, store_int(&t, "SELECT length(rec) FROM jobs WHERE id = 2"));
  tsrv_rm_dir(t.dir);
}

/* A row that reads neither way stops the load, naming the job and what did not read. */
static void a_row_that_reads_neither_way_names_the_job(void) {
  tsrv t = {0};
  submit_three(&t);
  store_sql(&t, "UPDATE jobs SET rec = 'gpj1;2;', doc = '{\"id\": \"2\", ' WHERE id = 2");
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t.dir);
  gp_store *store = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &store, &e) == 0);
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_new(cfg, store);
  CHECK_EQ_INT(GP_EPARSE, gp__srv_state_load(s, time(NULL), 0, &e));
  CHECK_CONTAINS(e.message, "stored job 2 does not read");
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
  gp_store_close(store);
  tsrv_rm_dir(t.dir);
}

GP_TESTS(the_server_listens_while_the_store_loads, a_job_listed_twice_by_the_store_loads_once,
         many_jobs_load_in_order_with_their_timelines,
         a_store_before_load_records_loads_and_gains_them, a_damaged_record_loads_from_the_document,
         a_row_that_reads_neither_way_names_the_job)
