/* SPDX-License-Identifier: Apache-2.0 */
/* Two servers on one store and one lease (a real PostgreSQL): one leads, the other
 * follows, answers reads from the store and sends writes to the leader; a leader that
 * stops hands over at once; a leader that cannot renew stops acting before its lease
 * could have expired; a leader whose lease was taken steps down. */
#include "test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "server/leader_pg.h"
#include "srv_util.h"

#define LEASE_MS 1500
#define RENEW_MS 300

static void start_server_lease(tsrv *t, const char *url, const char *id, int lease_ms, int renew_ms) {
  tsrv_make_dir(t);
  char text[8192];
  snprintf(text, sizeof text, "%sdata_dir: %s\nstore: %s\nha: {lease_ms: %d, renew_ms: %d, id: %s}\n",
           tsrv_base_config, t->dir, url, lease_ms, renew_ms, id);
  gp_err e = {0};
  if (gp_server_config_parse("test.yaml", text, strlen(text), &t->cfg, &e)) {
    fprintf(stderr, "config: %s\n", e.message);
    REQUIRE(0);
  }
  if (gp_server_new(t->cfg, NULL, &t->srv, &e) || gp_server_start(t->srv, &e)) {
    fprintf(stderr, "server: %s\n", e.message);
    REQUIRE(0);
  }
  snprintf(t->base, sizeof t->base, "http://127.0.0.1:%d", gp_server_port(t->srv));
}

static void start_server(tsrv *t, const char *url, const char *id) {
  start_server_lease(t, url, id, LEASE_MS, RENEW_MS);
}

static const char *role(tsrv *t) {
  if (tsrv_req(t, "GET", "/v1/leader", ALICE, NULL) != 200) return "";
  const char *r = json_string_value(json_object_get(t->last, "role"));
  return r ? r : "";
}

/* Waits up to `ms` for t to have `want` as its role; returns the time it took, or -1. */
static int64_t wait_role(tsrv *t, const char *want, int ms) {
  int64_t t0 = tsrv_now_ms();
  while (tsrv_now_ms() - t0 < ms) {
    if (strcmp(role(t), want) == 0) return tsrv_now_ms() - t0;
    usleep(20 * 1000);
  }
  return -1;
}

static size_t header_cb(char *p, size_t size, size_t n, void *ud) {
  gp_buf *b = ud;
  if (strncasecmp(p, "Location:", 9) == 0 || strncasecmp(p, "Retry-After:", 12) == 0)
    gp_buf_append(b, p, size * n);
  return size * n;
}

/* A request that keeps the Location and Retry-After headers in *hdrs (caller frees). */
static long call_with_headers(const tsrv *t, const char *method, const char *path, const char *token,
                              const char *body, char **hdrs) {
  CURL *h = curl_easy_init();
  char url[512], auth[128];
  snprintf(url, sizeof url, "%s%s", t->base, path);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
  struct curl_slist *hl = curl_slist_append(NULL, auth);
  gp_buf out, hb;
  gp_buf_init(&out, 0);
  gp_buf_init(&hb, 0);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
  if (body) curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &hb);
  long code = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hl);
  curl_easy_cleanup(h);
  gp_buf_done(&out);
  *hdrs = strdup(hb.data ? hb.data : "");
  gp_buf_done(&hb);
  return code;
}

static long public_get(const tsrv *t, const char *path) {
  return tsrv_call(t, "GET", path, NULL, NULL, NULL);
}

static void one_leads_and_the_other_follows(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  CHECK(wait_role(&a, "leader", 3000) >= 0);
  CHECK_EQ_INT(1, json_integer_value(json_object_get(a.last, "epoch")));
  CHECK_EQ_STR(a.base, json_string_value(json_object_get(a.last, "self")));
  start_server(&b, url, "b");
  CHECK_EQ_STR("follower", role(&b));
  CHECK_EQ_STR(a.base, json_string_value(json_object_get(b.last, "leader")));
  CHECK_EQ_STR("a", json_string_value(json_object_get(b.last, "holder")));
  CHECK(json_integer_value(json_object_get(b.last, "expires_in_ms")) > 0);
  /* Every live server of the store, this one first. */
  json_t *servers = json_object_get(b.last, "servers");
  CHECK_EQ_INT(2, json_array_size(servers));
  CHECK_EQ_STR(b.base, json_string_value(json_array_get(servers, 0)));
  CHECK_EQ_STR(a.base, json_string_value(json_array_get(servers, 1)));
  CHECK(json_is_null(json_object_get(b.last, "conflict")));
  /* Health without a token; the leader route with one. */
  CHECK_EQ_INT(200, public_get(&a, "/livez"));
  CHECK_EQ_INT(200, public_get(&a, "/readyz"));
  CHECK_EQ_INT(200, public_get(&b, "/livez"));
  CHECK_EQ_INT(200, public_get(&b, "/readyz"));
  CHECK_EQ_INT(401, public_get(&b, "/v1/leader"));

  /* A write on the leader is read on the follower once it reloaded (about a second). */
  char *id = tsrv_submit(&a, ALICE, "{\"command\": [\"sleep\", \"1\"], \"gpus\": 1}");
  REQUIRE(id);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  bool seen = false;
  for (int i = 0; i < 150 && !seen; i++) {
    seen = tsrv_req(&b, "GET", path, ALICE, NULL) == 200;
    if (!seen) usleep(20 * 1000);
  }
  CHECK(seen);
  CHECK_EQ_STR("pending", job_str(b.last, "state"));
  CHECK_EQ_INT(200, tsrv_req(&b, "GET", "/v1/jobs", ALICE, NULL));
  CHECK_EQ_INT(200, tsrv_req(&b, "GET", "/v1/queues", ALICE, NULL));

  /* Writes on the follower go to the leader, path and query as sent. */
  char *hdrs = NULL;
  CHECK_EQ_INT(307, call_with_headers(&b, "POST", "/v1/jobs?x=1", ALICE,
                                      "{\"command\": [\"true\"]}", &hdrs));
  char want[200];
  snprintf(want, sizeof want, "Location: %s/v1/jobs?x=1", a.base);
  CHECK_CONTAINS(hdrs, want);
  free(hdrs);
  CHECK_EQ_INT(307, call_with_headers(&b, "DELETE", path, ALICE, NULL, &hdrs));
  free(hdrs);
  CHECK_EQ_INT(307, tsrv_agent_call(&b, "/v1/agent/heartbeat", "{\"node\": \"n1\", \"gen\": 0}", NULL));
  /* The follower wrote nothing: the job is still there, pending. */
  CHECK_EQ_INT(200, tsrv_req(&a, "GET", path, ALICE, NULL));
  CHECK_EQ_STR("pending", job_str(a.last, "state"));
  /* An agent's answers from the leader carry the lease's epoch. */
  json_t *reg = NULL;
  CHECK_EQ_INT(201, tsrv_register(&a, "n1", 2, NULL));
  json_t *hb = tsrv_heartbeat(&a, "n1", 0, 0, NULL);
  REQUIRE(hb);
  CHECK_EQ_INT(1, json_integer_value(json_object_get(hb, "epoch")));
  json_decref(hb);
  json_decref(reg);
  free(id);
  tsrv_stop(&b);
  tsrv_stop(&a);
}

static void a_stopped_leader_hands_over_at_once(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  start_server(&b, url, "b");
  char *id = tsrv_submit(&a, ALICE, "{\"command\": [\"sleep\", \"1\"], \"gpus\": 1}");
  REQUIRE(id);
  int64_t t0 = tsrv_now_ms();
  tsrv_stop(&a); /* releases the lease */
  int64_t took = wait_role(&b, "leader", LEASE_MS + 2 * RENEW_MS);
  CHECK(took >= 0);
  CHECK(tsrv_now_ms() - t0 < LEASE_MS); /* not an expiry: the release */
  CHECK_EQ_INT(2, json_integer_value(json_object_get(b.last, "epoch")));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  CHECK_EQ_INT(200, tsrv_req(&b, "GET", path, ALICE, NULL));
  char *id2 = tsrv_submit(&b, ALICE, "{\"command\": [\"true\"]}");
  CHECK(id2 != NULL);
  CHECK(id2 && strcmp(id, id2) != 0);
  free(id);
  free(id2);
  tsrv_stop(&b);
}

/* The lease row locked by another session: the leader's renewals hang until their
 * timeout; it must stop acting lease_ms - renew_ms after its last renewal, before the
 * lease expires, and then nobody leads until the row is free again. */
static void a_leader_that_cannot_renew_steps_down_before_expiry(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  start_server(&b, url, "b");
  PGconn *c = PQconnectdb(url);
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  PQclear(PQexec(c, "BEGIN"));
  PGresult *res = PQexec(c, "SELECT * FROM gp_lease WHERE id = 1 FOR UPDATE");
  REQUIRE(PQresultStatus(res) == PGRES_TUPLES_OK);
  PQclear(res);
  int64_t locked = tsrv_now_ms();
  int64_t took = wait_role(&a, "follower", LEASE_MS + RENEW_MS);
  CHECK(took >= 0);
  /* Its last renewal was at most renew_ms before the lock. */
  CHECK(tsrv_now_ms() - locked <= LEASE_MS);
  char *hdrs = NULL;
  long code = call_with_headers(&a, "POST", "/v1/jobs", ALICE, "{\"command\": [\"true\"]}", &hdrs);
  CHECK(code == 307 || code == 503);
  free(hdrs);
  PQclear(PQexec(c, "ROLLBACK"));
  PQfinish(c);
  /* Someone leads again once the row is free, and only one of them. */
  int64_t t0 = tsrv_now_ms();
  bool one = false;
  while (!one && tsrv_now_ms() - t0 < 3 * LEASE_MS) {
    one = strcmp(role(&a), "leader") == 0 || strcmp(role(&b), "leader") == 0;
    if (!one) usleep(20 * 1000);
  }
  CHECK(one);
  CHECK(!(strcmp(role(&a), "leader") == 0 && strcmp(role(&b), "leader") == 0));
  tsrv_stop(&b);
  tsrv_stop(&a);
}

/* The lease taken from under a leader (as after a pause past its lease): the leader sees
 * it at its next renewal and follows the new one. */
static void a_leader_whose_lease_was_taken_follows(void) {
  const char *url = tpg_start();
  tsrv a = {0};
  start_server(&a, url, "a");
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  tpg_sql("UPDATE gp_lease SET epoch = epoch + 1, holder = 'z', url = 'http://z.example:1',"
          " expires_at = now() + interval '1 hour'", NULL, 0);
  CHECK(wait_role(&a, "follower", 3 * RENEW_MS + 500) >= 0);
  /* It may follow before its lease thread read the new holder (a write fenced first). */
  for (int i = 0; i < 50 && strcmp(json_string_value(json_object_get(a.last, "leader")) ?: "", "http://z.example:1"); i++) {
    usleep(20 * 1000);
    role(&a);
  }
  CHECK_EQ_STR("http://z.example:1", json_string_value(json_object_get(a.last, "leader")));
  CHECK_EQ_INT(2, json_integer_value(json_object_get(a.last, "epoch")));
  char *hdrs = NULL;
  CHECK_EQ_INT(307, call_with_headers(&a, "POST", "/v1/jobs", ALICE, "{\"command\": [\"true\"]}", &hdrs));
  CHECK_CONTAINS(hdrs, "Location: http://z.example:1/v1/jobs");
  free(hdrs);
  /* z gives it up: a leads again under a new epoch. */
  tpg_sql("UPDATE gp_lease SET holder = NULL, url = NULL, expires_at = NULL", NULL, 0);
  CHECK(wait_role(&a, "leader", 3 * RENEW_MS + 500) >= 0);
  CHECK_EQ_INT(3, json_integer_value(json_object_get(a.last, "epoch")));
  tsrv_stop(&a);
}

/* The lease taken while the leader still believes it holds it (as when it resumes from a
 * pause): its next write is refused by the store as fenced, nothing of it is kept, and the
 * leader follows at once rather than at its next renewal. */
static void a_fenced_write_makes_the_leader_follow(void) {
  const char *url = tpg_start();
  tsrv a = {0};
  start_server_lease(&a, url, "a", 9000, 3000);
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  char *before = tsrv_submit(&a, ALICE, "{\"command\": [\"true\"]}");
  REQUIRE(before);
  tpg_sql("UPDATE gp_lease SET epoch = epoch + 1, holder = 'z', url = 'http://z.example:1',"
          " expires_at = now() + interval '1 hour'", NULL, 0);
  int64_t t0 = tsrv_now_ms();
  long code = tsrv_req(&a, "POST", "/v1/jobs", ALICE, "{\"command\": [\"true\"], \"name\": \"fenced\"}");
  CHECK(tsrv_now_ms() - t0 < 3000); /* answered before its next renewal could tell it */
  /* Refused as fenced; or, when a scheduling step's write was fenced first, already
   * following (the new holder known or not yet). */
  CHECK(code == 503 || code == 307);
  const char *why = json_string_value(json_object_get(json_object_get(a.last, "error"), "message"));
  if (code == 503) CHECK(why && (strstr(why, "fenced") || strstr(why, "no leader")));
  CHECK(wait_role(&a, "follower", 1000) >= 0);
  /* Nothing of the refused write is in the store: the only job is the first one. */
  char n[32];
  tpg_sql("SELECT count(*) FROM jobs", n, sizeof n);
  CHECK_EQ_STR("1", n);
  /* /healthz does not blame the store for it. */
  CHECK_EQ_INT(200, public_get(&a, "/healthz"));
  free(before);
  tsrv_stop(&a);
}

static json_t *first_order(json_t *hb) { return json_array_get(json_object_get(hb, "orders"), 0); }

/* The new leader picks up the orders the old one made: an order the agent has not
 * acknowledged is sent again, to the same node, under the same id (the agent runs an order
 * once); one it has acknowledged is never sent again, and no other node gets the job. */
static void the_new_leader_resends_only_unacknowledged_orders_to_their_node(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  start_server(&b, url, "b");
  CHECK_EQ_INT(201, tsrv_register(&a, "n1", 2, NULL));
  char *j1 = tsrv_submit(&a, ALICE, "{\"command\": [\"train\"], \"gpus\": 2}");
  REQUIRE(j1);
  json_t *hb = tsrv_heartbeat(&a, "n1", 0, 3000, NULL);
  REQUIRE(hb && first_order(hb));
  const char *order = json_string_value(json_object_get(first_order(hb), "id"));
  long long gen = json_integer_value(json_object_get(hb, "gen"));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(hb, "epoch")));
  tsrv_stop(&a);
  REQUIRE(wait_role(&b, "leader", LEASE_MS + 2 * RENEW_MS) >= 0);
  /* Not acknowledged: the same order again, from the new epoch. */
  json_t *again = tsrv_heartbeat(&b, "n1", 0, 0, NULL);
  REQUIRE(again && first_order(again));
  CHECK_EQ_STR(order, json_string_value(json_object_get(first_order(again), "id")));
  CHECK_EQ_STR("start", json_string_value(json_object_get(first_order(again), "kind")));
  CHECK_EQ_INT(2, json_integer_value(json_object_get(again, "epoch")));
  /* Acknowledged: never again. */
  json_t *acked = tsrv_heartbeat(&b, "n1", gen, 0, NULL);
  REQUIRE(acked);
  CHECK_EQ_INT(0, json_array_size(json_object_get(acked, "orders")));
  json_t *later = tsrv_heartbeat(&b, "n1", gen, 0, NULL);
  REQUIRE(later);
  CHECK_EQ_INT(0, json_array_size(json_object_get(later, "orders")));
  /* Another node gets nothing of it. */
  CHECK_EQ_INT(201, tsrv_register(&b, "n2", 2, NULL));
  json_t *other = tsrv_heartbeat(&b, "n2", 0, 300, NULL);
  REQUIRE(other);
  CHECK_EQ_INT(0, json_array_size(json_object_get(other, "orders")));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", j1);
  CHECK_EQ_INT(200, tsrv_req(&b, "GET", path, ALICE, NULL));
  CHECK_EQ_STR("running", job_str(b.last, "state"));
  CHECK_EQ_INT(0, json_integer_value(json_object_get(json_object_get(b.last, "job"), "restarts")));
  json_decref(hb);
  json_decref(again);
  json_decref(acked);
  json_decref(later);
  json_decref(other);
  free(j1);
  tsrv_stop(&b);
}

static void no_leader_is_503_with_retry_after(void) {
  const char *url = tpg_start();
  tpg_sql("CREATE TABLE gp_lease (id integer PRIMARY KEY CHECK (id = 1), epoch bigint NOT NULL"
          " DEFAULT 0, holder text, url text, expires_at timestamptz)", NULL, 0);
  /* Held by a server that advertises nothing reachable: there is a holder, no URL. */
  tpg_sql("INSERT INTO gp_lease VALUES (1, 7, 'x', '', now() + interval '1 hour')", NULL, 0);
  tsrv a = {0};
  start_server(&a, url, "a");
  CHECK(wait_role(&a, "follower", 2000) >= 0);
  char *hdrs = NULL;
  CHECK_EQ_INT(503, call_with_headers(&a, "POST", "/v1/jobs", ALICE, "{\"command\": [\"true\"]}", &hdrs));
  CHECK_CONTAINS(hdrs, "Retry-After: 1");
  free(hdrs);
  CHECK_EQ_INT(200, public_get(&a, "/readyz"));
  tsrv_stop(&a);
}

static void ha_settings_are_checked(void) {
  gp_server_config *c = NULL;
  gp_err e = {0};
#define PG "store: postgresql://gpool@127.0.0.1:1/gpool\n"
  const char *bad[] = {PG "ha: {lease_ms: 500}\n", PG "ha: {lease_ms: 3000, renew_ms: 2000}\n",
                       PG "ha: {advertise: ftp://x}\n", PG "ha: {id: \"a b\"}\n", PG "ha: {lease: 1}\n",
                       "ha: {lease_ms: 10000}\n"};
  const char *field[] = {"ha.lease_ms", "ha.renew_ms", "ha.advertise", "ha.id", "ha.lease", "ha"};
  for (int i = 0; i < 6; i++) {
    CHECK_EQ_INT(GP_EINVAL, gp_server_config_parse("t.yaml", bad[i], strlen(bad[i]), &c, &e));
    CHECK_EQ_STR(field[i], e.field);
  }
  const char *ok = PG "ha: {lease_ms: 15000, renew_ms: 5000, advertise: \"https://s1:8642\", id: s1}\n";
  REQUIRE(gp_server_config_parse("t.yaml", ok, strlen(ok), &c, &e) == 0);
  CHECK(c->ha.on);
  CHECK_EQ_INT(15000, c->ha.lease_ms);
  CHECK_EQ_INT(5000, c->ha.renew_ms);
  CHECK_EQ_STR("https://s1:8642", c->ha.advertise);
  CHECK_EQ_STR("s1", c->ha.id);
  CHECK_EQ_STR("postgresql://gpool@127.0.0.1:1/gpool", c->ha.url);
  gp_server_config_free(c);
}

/* Sends `request` as is on a fresh connection to t and returns what came back (caller
 * frees): a request line curl would not send. */
static char *raw_call(const tsrv *t, const char *request) {
  int port = atoi(strrchr(t->base, ':') + 1);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  REQUIRE(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  size_t len = strlen(request);
  REQUIRE(write(fd, request, len) == (ssize_t)len);
  gp_buf out;
  gp_buf_init(&out, 0);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) gp_buf_append(&out, buf, (size_t)n);
  close(fd);
  char *text = strdup(out.data ? out.data : "");
  gp_buf_done(&out);
  return text;
}

/* A follower's redirect goes to the leader's host whatever the request target says: a
 * target that is not a path ("@evil.example/...", which would turn the leader's URL into
 * a user name) is refused, never copied into Location. */
static void a_redirect_never_leaves_the_leaders_host(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  start_server(&b, url, "b");
  REQUIRE(wait_role(&b, "follower", 3000) >= 0);
  const char *targets[] = {"@evil.example/v1/jobs", "@evil.example:80/v1/jobs?x=1", ".evil.example/v1/jobs",
                           "http://evil.example/v1/jobs", "/v1/jobs\\@evil.example"};
  for (int i = 0; i < 5; i++) {
    char req[512];
    snprintf(req, sizeof req, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " ALICE "\r\n"
             "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", targets[i]);
    char *got = raw_call(&b, req);
    char *loc = strcasestr(got, "\r\nLocation:");
    if (loc) {
      char want[200];
      snprintf(want, sizeof want, "\r\nLocation: %s/", a.base);
      CHECK(strncasecmp(loc, want, strlen(want)) == 0);
    }
    CHECK(strncmp(got, "HTTP/1.1 ", 9) == 0); /* an answer, whatever it is */
    free(got);
  }
  tsrv_stop(&b);
  tsrv_stop(&a);
}

/* Two servers with one ha.id would take the lease from each other at every renewal (both
 * "the holder"), fence each other's agents and leave jobs pending: the second is refused
 * at its start, naming the cause, and the first leads on under its first epoch. */
static void a_second_server_with_the_same_id_is_refused(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  tsrv_make_dir(&b);
  char text[8192];
  snprintf(text, sizeof text, "%sdata_dir: %s\nstore: %s\nha: {lease_ms: %d, renew_ms: %d, id: a}\n",
           tsrv_base_config, b.dir, url, LEASE_MS, RENEW_MS);
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("test.yaml", text, strlen(text), &b.cfg, &e) == 0);
  int rc = gp_server_new(b.cfg, NULL, &b.srv, &e);
  if (!rc) rc = gp_server_start(b.srv, &e);
  CHECK(rc != 0);
  CHECK_EQ_STR("ha.id", e.field);
  CHECK_CONTAINS(e.message, "also the id of another running server");
  CHECK_CONTAINS(e.message, a.base);
  tsrv_stop(&b);
  /* a kept the lease all along: several renewals later, still epoch 1. */
  usleep(3 * RENEW_MS * 1000);
  CHECK_EQ_STR("leader", role(&a));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(a.last, "epoch")));
  CHECK(json_is_null(json_object_get(a.last, "conflict")));
  tsrv_stop(&a);
}

/* renew_ms = lease_ms / 3, the most the settings allow: every renewal lands inside the
 * window the previous one opened, so the leader never steps down and no write is refused
 * (the window was lease_ms - 2 * renew_ms = renew_ms: each renewal's round trip fell out
 * of it: the leader stepped down and reloaded every cycle, refusing most writes meanwhile). */
static void renewals_at_a_third_of_the_lease_keep_the_leader(void) {
  const char *url = tpg_start();
  tsrv a = {0};
  start_server_lease(&a, url, "a", 3000, 1000);
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  int refused = 0;
  for (int i = 0; i < 90; i++) { /* 4.5 s: four renewals */
    long code = tsrv_call(&a, "POST", "/v1/jobs", ALICE, "{\"command\": [\"true\"], \"hold\": true}", NULL);
    if (code != 201) refused++;
    usleep(50 * 1000);
  }
  CHECK_EQ_INT(0, refused);
  CHECK_EQ_STR("leader", role(&a));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(a.last, "epoch")));
  tsrv_stop(&a);
}

/* An id taken by another live process while this server runs (as after it was cut off the
 * database for longer than its lease): it says so in GET /v1/leader, never leads while the
 * other keeps the id, and leads once the id is its own again. */
static void a_server_that_finds_its_id_in_use_never_leads(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  REQUIRE(wait_role(&a, "leader", 3000) >= 0);
  start_server(&b, url, "b");
  /* Another process holds b's id: a live session of its own, refreshed from now on. */
  PGconn *other = PQconnectdb(url);
  REQUIRE(PQstatus(other) == CONNECTION_OK);
  PGresult *res = PQexec(other, "UPDATE gp_lease_servers SET nonce = 'other', url = 'http://other.example:1',"
                                " pid = pg_backend_pid(), ttl_ms = 3600000, seen_at = now() + interval '1 second'"
                                " WHERE id = 'b'");
  REQUIRE(PQresultStatus(res) == PGRES_COMMAND_OK);
  PQclear(res);
  const char *conflict = NULL;
  for (int i = 0; i < 100 && !conflict; i++) {
    CHECK_EQ_STR("follower", role(&b));
    conflict = json_string_value(json_object_get(b.last, "conflict"));
    if (!conflict) usleep(20 * 1000);
  }
  REQUIRE(conflict);
  CHECK_CONTAINS(conflict, "ha.id 'b' is also the id of another running server");
  CHECK_CONTAINS(conflict, "http://other.example:1");
  /* a stops and gives the lease up: b, without its id, does not take it. */
  tsrv_stop(&a);
  usleep(4 * RENEW_MS * 1000);
  CHECK_EQ_STR("follower", role(&b));
  /* The other process is gone: b claims its id and leads. */
  PQfinish(other);
  CHECK(wait_role(&b, "leader", 3000) >= 0);
  CHECK(json_is_null(json_object_get(b.last, "conflict")));
  tsrv_stop(&b);
}

GP_TESTS(one_leads_and_the_other_follows, a_stopped_leader_hands_over_at_once,
         a_leader_that_cannot_renew_steps_down_before_expiry, a_leader_whose_lease_was_taken_follows,
         a_fenced_write_makes_the_leader_follow, the_new_leader_resends_only_unacknowledged_orders_to_their_node,
         no_leader_is_503_with_retry_after,
         ha_settings_are_checked, a_redirect_never_leaves_the_leaders_host,
         a_second_server_with_the_same_id_is_refused, renewals_at_a_third_of_the_lease_keep_the_leader,
         a_server_that_finds_its_id_in_use_never_leads)
