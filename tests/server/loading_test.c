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
 * store written by hand, or by a copy gone wrong) is listed twice by the load: once among
 * the active jobs, once among the recent ended ones. The second copy replaced the first,
 * which was freed while the active list still held it: the Release server aborted with
 * free(): invalid pointer on a 1,100,000-job store (bench/store_restart.sh), ASan reports
 * the use after free here. Now the job loads once, active, and can be cancelled. */
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

GP_TESTS(the_server_listens_while_the_store_loads, a_job_listed_twice_by_the_store_loads_once)
