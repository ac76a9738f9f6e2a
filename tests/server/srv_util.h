/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the server tests: start a real server in-process on 127.0.0.1 with an
 * ephemeral port and a real SQLite file in a temp dir, and talk to it with libcurl.
 * A test holds one tsrv: tsrv_start gives it the base config's queues and tokens (ADMIN,
 * ALICE, BOB, AGENT); tsrv_req keeps the last answer in t.last, so a test states only the
 * request and what it expects of the answer. */
#ifndef GP_TESTS_SERVER_SRV_UTIL_H
#define GP_TESTS_SERVER_SRV_UTIL_H

#include <curl/curl.h>
#include <jansson.h>
#include <time.h>

#include "server/state/config.h"
#include "server/server.h"
#include "store/store.h"
#include "util/buf.h"
#include "tls/digest.h"

typedef struct tsrv {
  gp_server_config *cfg;
  gp_server *srv;
  char dir[256];
  char base[64];
  bool keep_dir; /* set before a stop that is followed by a restart on the same data */
  json_t *last;  /* the parsed answer of the last tsrv_req (or NULL), owned */
} tsrv;

/* Removes a temporary directory this test made (mkdtemp names only). */
static inline void tsrv_rm_dir(const char *dir) {
  if (strncmp(dir, "/tmp/gp_", 8) != 0 || strchr(dir, '\'') || strstr(dir, "..")) return;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

#define ADMIN "admin-token-123"
#define ALICE "alice-token-123"
#define BOB "bob-token-12345"
#define AGENT "agent-token-123"
#define VIEWER "viewer-token-12"

static const char *tsrv_base_config =
    "listen: 127.0.0.1:0\n"
    "tokens:\n"
    "  - {token: " ADMIN ", user: root, role: admin}\n"
    "  - {token: " ALICE ", user: alice, role: user}\n"
    "  - {token: " BOB ", user: bob, role: user}\n"
    "  - {token: " AGENT ", user: agent, role: agent}\n"
    "  - {token: " VIEWER ", user: wall, role: viewer}\n"
    "queues:\n"
    "  - {name: default, users: [\"*\"]}\n"
    "  - {name: org/a, deserved: 4, users: [alice]}\n"
    "  - {name: org/b, deserved: 4, users: [bob]}\n"
    "default_queue: default\n"
    "node_timeout_s: 2\n"
    "schedule_interval_ms: 50\n"
    "schedule_min_gap_ms: 1\n";

static inline int64_t tsrv_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Gives the server its data directory, a fresh one unless it has one (a restart). */
static inline void tsrv_make_dir(tsrv *t) {
  if (t->dir[0]) return;
  snprintf(t->dir, sizeof t->dir, "/tmp/gp_srv_test_XXXXXX");
  REQUIRE(mkdtemp(t->dir) != NULL);
}

/* Starts a server with `extra` appended to the base config; `store` may be NULL. */
static inline void tsrv_start_with(tsrv *t, const char *extra, gp_store *store) {
  tsrv_make_dir(t);
  char *text = NULL; /* as long as it takes: a config is never cut short */
  REQUIRE(asprintf(&text, "%sdata_dir: %s\n%s", tsrv_base_config, t->dir, extra ? extra : "") > 0);
  gp_err e = {0};
  if (gp_server_config_parse("test.yaml", text, strlen(text), &t->cfg, &e)) {
    fprintf(stderr, "config: %s\n", e.message);
    REQUIRE(0);
  }
  free(text);
  if (gp_server_new(t->cfg, store, &t->srv, &e) || gp_server_start(t->srv, &e)) {
    fprintf(stderr, "server: %s\n", e.message);
    REQUIRE(0);
  }
  snprintf(t->base, sizeof t->base, "http://127.0.0.1:%d", gp_server_port(t->srv));
}

static inline void tsrv_start(tsrv *t) { tsrv_start_with(t, NULL, NULL); }

/* Starts a server on its usual SQLite file behind the fault-injecting store, which
 * gp_server_store(t->srv) arms; a restart with tsrv_start opens the same file plainly. */
static inline void tsrv_start_faulty(tsrv *t) {
  tsrv_make_dir(t);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t->dir);
  gp_store *inner = NULL, *fs = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &inner, &e) == 0);
  REQUIRE(gp_store_fault_open(inner, &fs) == 0);
  tsrv_start_with(t, NULL, fs);
}

static inline void tsrv_stop(tsrv *t) {
  json_decref(t->last);
  t->last = NULL;
  gp_server_free(t->srv);
  t->srv = NULL;
  gp_server_config_free(t->cfg);
  t->cfg = NULL;
  if (!t->keep_dir && t->dir[0]) {
    tsrv_rm_dir(t->dir);
    t->dir[0] = '\0';
  }
  t->keep_dir = false;
}

static inline size_t tsrv_write(char *p, size_t size, size_t n, void *ud) {
  gp_buf_append((gp_buf *)ud, p, size * n);
  return size * n;
}

/* Sends a request; returns the status and stores the parsed body (or NULL) in *ret. */
static inline long tsrv_call(const tsrv *t, const char *method, const char *path, const char *token,
                      const char *body, json_t **ret) {
  CURL *h = curl_easy_init();
  /* The URL and headers are as long as the test makes them: never cut short, so a test of
   * a limit sends what it says. */
  char *url = NULL;
  REQUIRE(asprintf(&url, "%s%s", t->base, path) > 0);
  gp_buf out;
  gp_buf_init(&out, 0);
  struct curl_slist *hdrs = NULL;
  if (token) {
    char *auth = NULL;
    REQUIRE(asprintf(&auth, "Authorization: Bearer %s", token) > 0);
    hdrs = curl_slist_append(hdrs, auth);
    free(auth);
  }
  hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 40000L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  if (body) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, tsrv_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
  long code = 0;
  if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  free(url);
  REQUIRE(!gp_buf_truncated(&out));
  if (ret) *ret = out.data ? json_loads(out.data, 0, NULL) : NULL;
  gp_buf_done(&out);
  return code;
}

/* Sends a request and keeps its parsed answer in t->last until the next tsrv_req or
 * tsrv_stop; returns the status. */
static inline long tsrv_req(tsrv *t, const char *method, const char *path, const char *token,
                            const char *body) {
  json_decref(t->last);
  t->last = NULL;
  return tsrv_call(t, method, path, token, body, &t->last);
}

/* The error code of an error answer ("" when none). */
static inline const char *err_code(const json_t *o) {
  const char *c = json_string_value(json_object_get(json_object_get(o, "error"), "code"));
  return c ? c : "";
}
static inline const char *err_field(const json_t *o) {
  const char *c = json_string_value(json_object_get(json_object_get(o, "error"), "field"));
  return c ? c : "";
}
static inline const char *job_str(const json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(json_object_get(o, "job"), key));
  return v ? v : "";
}

/* Submits as `token`; returns the new job id (malloc'd) or NULL. */
static inline char *tsrv_submit(const tsrv *t, const char *token, const char *body) {
  json_t *o = NULL;
  long code = tsrv_call(t, "POST", "/v1/jobs", token, body, &o);
  char *id = code == 201 ? strdup(job_str(o, "id")) : NULL;
  if (code != 201) fprintf(stderr, "submit answered %ld\n", code);
  json_decref(o);
  return id;
}

/* Registers a simulated node with `gpus` H100s. */
/* A test agent's credential for a node: the name's SHA-256, so each node has its own. */
static inline const char *tsrv_credential(const char *name, char out[GP_TLS_SHA256_HEX_MAX]) {
  gp_tls_sha256_hex(name, strlen(name), out);
  return out;
}

/* An agent protocol call with the AGENT token, `json` completed with the credential of the
 * node it names ("node" or "node.name"). */
static inline long tsrv_agent_call(const tsrv *t, const char *path, const char *json, json_t **ret) {
  json_error_t je;
  json_t *doc = json_loads(json, 0, &je);
  REQUIRE(doc);
  const json_t *node = json_object_get(doc, "node");
  const char *name = json_is_object(node) ? json_string_value(json_object_get(node, "name"))
                                          : json_string_value(node);
  char cred[GP_TLS_SHA256_HEX_MAX];
  if (name && !json_object_get(doc, "credential"))
    json_object_set_new(doc, "credential", json_string(tsrv_credential(name, cred)));
  char *body = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  long code = tsrv_call(t, "POST", path, AGENT, body, ret);
  free(body);
  return code;
}

static inline long tsrv_register(const tsrv *t, const char *name, int gpus, const char *jobs_json) {
  gp_buf body; /* grows with the node: never cut short */
  gp_buf_init(&body, 0);
  gp_buf_printf(&body,
                "{\"node\": {\"name\": \"%s\", \"model\": \"H100-80GB\", \"gpus\": %d, \"cpus\": 64,"
                " \"mem_mib\": 512000, \"gpu_list\": [",
                name, gpus);
  for (int g = 0; g < gpus; g++)
    gp_buf_printf(&body,
                  "%s{\"index\": %d, \"uuid\": \"GPU-%s-%d\", \"mem_mib\": 81920, \"mode\": \"exclusive\"}",
                  g ? "," : "", g, name, g);
  gp_buf_printf(&body, "]}, \"agent_url\": \"http://127.0.0.1:1\", \"jobs\": %s}", jobs_json ? jobs_json : "[]");
  REQUIRE(!gp_buf_truncated(&body));
  json_t *o = NULL;
  long code = tsrv_agent_call(t, "/v1/agent/register", body.data, &o);
  json_decref(o);
  gp_buf_done(&body);
  return code;
}

/* One heartbeat; returns the answer (caller frees). */
static inline json_t *tsrv_heartbeat(const tsrv *t, const char *node, long long gen, int wait_ms,
                              const char *events) {
  char *body = NULL; /* as long as the events make it */
  REQUIRE(asprintf(&body, "{\"node\": \"%s\", \"gen\": %lld, \"wait_ms\": %d, \"events\": %s}", node,
                   gen, wait_ms, events ? events : "[]") > 0);
  json_t *o = NULL;
  long code = tsrv_agent_call(t, "/v1/agent/heartbeat", body, &o);
  free(body);
  if (code != 200) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Polls GET /v1/jobs/{id} until its state is `state` (max ~5 s). */
static inline bool tsrv_wait_state(const tsrv *t, const char *id, const char *state) {
  char path[64];
  REQUIRE(snprintf(path, sizeof path, "/v1/jobs/%s", id) < (int)sizeof path);
  for (int i = 0; i < 500; i++) {
    json_t *o = NULL;
    tsrv_call(t, "GET", path, ADMIN, NULL, &o);
    bool ok = strcmp(job_str(o, "state"), state) == 0;
    json_decref(o);
    if (ok) return true;
    usleep(10000);
  }
  return false;
}

#endif
