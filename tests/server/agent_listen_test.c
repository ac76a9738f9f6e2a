/* SPDX-License-Identifier: Apache-2.0 */
/* The agents' own listener (agent_listen): with the API full of busy user connections
 * from one address, agents still register and heartbeat there and their nodes stay up;
 * more agents behind one address than max_connections_per_address (and than the API's
 * max_connections) all hold their long polls at once; and the listener serves nothing but
 * the agent protocol. Real sockets on 127.0.0.1, a real server. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"
#include "srv_util.h"

/* A TCP connection to `port` on 127.0.0.1; -1 if refused. */
static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Opens an event stream on the API as `token` and keeps it (busy: the server holds it). */
static int open_stream(const tsrv *t, const char *token) {
  int fd = dial(gp_server_port(t->srv));
  REQUIRE(fd >= 0);
  char req[256];
  REQUIRE(snprintf(req, sizeof req, "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n",
                   token) < (int)sizeof req);
  REQUIRE(send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req));
  return fd;
}

/* Points the test's requests at the agents' listener (agent) or the API (!agent). */
static void use(tsrv *t, bool agent) {
  int port = agent ? gp_server_agent_port(t->srv) : gp_server_port(t->srv);
  REQUIRE(port > 0);
  snprintf(t->base, sizeof t->base, "http://127.0.0.1:%d", port);
}

static const char *node_state(tsrv *t, const char *name) {
  char path[128];
  REQUIRE(snprintf(path, sizeof path, "/v1/nodes/%s", name) < (int)sizeof path);
  if (tsrv_req(t, "GET", path, ADMIN, NULL) != 200) return "?";
  const json_t *n = json_object_get(t->last, "node");
  const char *s = json_string_value(json_object_get(n ? n : t->last, "state"));
  return s ? s : "?";
}

static void a_full_api_cannot_lock_agents_out(void) {
  tsrv t = {0};
  tsrv_start_with(&t,
                  "max_connections: 16\nevents_max_streams_per_user: 64\nevents_ping_s: 1\n"
                  "agent_listen: 127.0.0.1:0\n",
                  NULL);
  CHECK(gp_server_agent_port(t.srv) > 0 && gp_server_agent_port(t.srv) != gp_server_port(t.srv));
  use(&t, true);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  /* One address fills the API with connections the server holds busy: nothing of it can
   * be closed to make room, and one more user connection is turned away. */
  enum { FULL = 16 };
  int fds[FULL];
  for (int i = 0; i < FULL; i++) fds[i] = open_stream(&t, ADMIN);
  usleep(300 * 1000);
  use(&t, false);
  CHECK(tsrv_req(&t, "GET", "/v1/queues", ADMIN, NULL) != 200);
  /* The agent heartbeats for longer than node_timeout_s (2 s) on its own listener. */
  use(&t, true);
  int64_t t0 = tsrv_now_ms();
  int beats = 0, failed = 0;
  while (tsrv_now_ms() - t0 < 3500) {
    json_t *hb = tsrv_heartbeat(&t, "n1", 0, 300, NULL);
    if (hb) beats++;
    else failed++;
    json_decref(hb);
  }
  printf("  %d heartbeats through, %d failed, with the API full (%d busy connections)\n", beats, failed, FULL);
  CHECK(beats > 3);
  CHECK_EQ_INT(0, failed);
  /* (A heartbeat of a node marked down is refused, so none failing says it stayed up; the
   * API says so too once the streams are gone: the server sees them closed at its next
   * ping, events_ping_s.) */
  for (int i = 0; i < FULL; i++) close(fds[i]);
  use(&t, false);
  const char *state = "?";
  for (int i = 0; i < 40 && strcmp(state, "?") == 0; i++) {
    state = node_state(&t, "n1");
    if (strcmp(state, "?") == 0) usleep(100 * 1000);
  }
  printf("  n1 is %s after %lld ms of a full API\n", state, (long long)(tsrv_now_ms() - t0));
  CHECK(strcmp(state, "down") != 0 && strcmp(state, "?") != 0);
  tsrv_stop(&t);
}

/* ---- many agents behind one address ---- */

enum { AGENTS = 40 };

typedef struct agent_run {
  const tsrv *t;
  int index;
  int registered, attempts, beats, failed;
} agent_run;

/* POSTs an agent request (with the node's credential) on the agent's own handle, so its
 * connection is kept between requests as a real agent's is. */
static long agent_post(CURL *h, const tsrv *t, const char *path, const char *json) {
  json_t *doc = json_loads(json, 0, NULL);
  REQUIRE(doc);
  const json_t *node = json_object_get(doc, "node");
  const char *name = json_is_object(node) ? json_string_value(json_object_get(node, "name"))
                                          : json_string_value(node);
  char cred[GP_TLS_SHA256_HEX_MAX];
  json_object_set_new(doc, "credential", json_string(tsrv_credential(name, cred)));
  char *body = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  char *url = NULL;
  REQUIRE(asprintf(&url, "%s%s", t->base, path) > 0);
  struct curl_slist *hdrs = curl_slist_append(NULL, "Authorization: Bearer " AGENT);
  hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
  gp_buf out;
  gp_buf_init(&out, 0);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  long code = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hdrs);
  gp_buf_done(&out);
  free(url);
  free(body);
  return code;
}

static void *agent_main(void *arg) {
  agent_run *a = arg;
  CURL *h = curl_easy_init();
  REQUIRE(h);
  char body[512];
  REQUIRE(snprintf(body, sizeof body,
                   "{\"node\": {\"name\": \"m%d\", \"model\": \"H100-80GB\", \"gpus\": 1, \"cpus\": 8,"
                   " \"mem_mib\": 64000, \"gpu_list\": [{\"index\": 0, \"uuid\": \"GPU-m%d\", \"mem_mib\": 81920,"
                   " \"mode\": \"exclusive\"}]}, \"agent_url\": \"http://127.0.0.1:1\", \"jobs\": []}",
                   a->index, a->index) < (int)sizeof body);
  /* A real agent retries a registration that did not get through. */
  for (int i = 0; i < 50 && !a->registered; i++) {
    a->attempts++;
    long code = agent_post(h, a->t, "/v1/agent/register", body);
    if (code == 201 || code == 200) a->registered = 1;
    else usleep(50 * 1000);
  }
  REQUIRE(snprintf(body, sizeof body, "{\"node\": \"m%d\", \"gen\": 0, \"wait_ms\": 1000, \"events\": []}",
                   a->index) < (int)sizeof body);
  /* Then long polls, every agent holding one at once, for longer than node_timeout_s. */
  int64_t t0 = tsrv_now_ms();
  while (a->registered && tsrv_now_ms() - t0 < 3000) {
    if (agent_post(h, a->t, "/v1/agent/heartbeat", body) == 200) a->beats++;
    else a->failed++;
  }
  curl_easy_cleanup(h);
  return NULL;
}

static void many_agents_behind_one_address_all_register_and_heartbeat(void) {
  tsrv t = {0};
  /* Both of the API's limits are below the number of agents. */
  tsrv_start_with(&t, "max_connections: 16\nmax_connections_per_address: 4\nagent_listen: 127.0.0.1:0\n", NULL);
  use(&t, true);
  agent_run runs[AGENTS];
  pthread_t th[AGENTS];
  for (int i = 0; i < AGENTS; i++) {
    runs[i] = (agent_run){.t = &t, .index = i};
    REQUIRE(pthread_create(&th[i], NULL, agent_main, &runs[i]) == 0);
  }
  int registered = 0, attempts = 0, beats = 0, failed = 0;
  for (int i = 0; i < AGENTS; i++) {
    pthread_join(th[i], NULL);
    registered += runs[i].registered;
    attempts += runs[i].attempts;
    beats += runs[i].beats;
    failed += runs[i].failed;
  }
  printf("  %d agents from 127.0.0.1: %d registered in %d attempts, %d heartbeats, %d failed\n", AGENTS,
         registered, attempts, beats, failed);
  CHECK_EQ_INT(AGENTS, registered);
  CHECK_EQ_INT(0, failed);
  CHECK(beats >= AGENTS * 2);
  use(&t, false);
  int up = 0;
  for (int i = 0; i < AGENTS; i++) {
    char name[16];
    snprintf(name, sizeof name, "m%d", i);
    const char *s = node_state(&t, name);
    up += strcmp(s, "down") != 0 && strcmp(s, "?") != 0;
  }
  CHECK_EQ_INT(AGENTS, up);
  tsrv_stop(&t);
}

static void the_agent_listener_serves_only_the_agent_protocol(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "agent_listen: 127.0.0.1:0\n", NULL);
  use(&t, true);
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/v1/queues", ADMIN, NULL)); /* a user route */
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/metrics", NULL, NULL));
  CHECK_EQ_INT(404, tsrv_req(&t, "GET", "/", NULL, NULL)); /* the console */
  /* The agent protocol with a user's token: refused, so the listener is no way around the
   * API's limits for users. */
  CHECK_EQ_INT(403, tsrv_req(&t, "POST", "/v1/agent/heartbeat", ADMIN, "{\"node\":\"n1\"}"));
  CHECK_EQ_INT(401, tsrv_req(&t, "POST", "/v1/agent/heartbeat", NULL, "{\"node\":\"n1\"}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/livez", NULL, NULL));
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 1, NULL));
  /* Agents may still use the API's address. */
  use(&t, false);
  CHECK_EQ_INT(200, tsrv_register(&t, "n1", 1, NULL));
  tsrv_stop(&t);
}

/* The daemons bind with SO_REUSEPORT: one port for both would split its connections. */
static void the_agent_listener_needs_a_port_of_its_own(void) {
  tsrv t = {0};
  tsrv_make_dir(&t);
  char *text = NULL;
  REQUIRE(asprintf(&text, "data_dir: %s\nlisten: 127.0.0.1:18642\nagent_listen: 127.0.0.1:18642\n", t.dir) > 0);
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("test.yaml", text, strlen(text), &t.cfg, &e) == 0);
  free(text);
  REQUIRE(gp_server_new(t.cfg, NULL, &t.srv, &e) == 0);
  CHECK(gp_server_start(t.srv, &e) != 0);
  CHECK_EQ_STR("agent_listen", e.field);
  CHECK_CONTAINS(e.message, "another port");
  tsrv_stop(&t);
}

GP_TESTS(the_agent_listener_needs_a_port_of_its_own, a_full_api_cannot_lock_agents_out, many_agents_behind_one_address_all_register_and_heartbeat,
         the_agent_listener_serves_only_the_agent_protocol)
