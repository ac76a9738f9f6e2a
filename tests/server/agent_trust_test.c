/* SPDX-License-Identifier: Apache-2.0 */
/* What the server lets an agent do, and how much it sends one: a node's credential speaks
 * for it and a shared agent token does not (a spoofed exit is refused, the job runs on); an
 * admin frees a name; a token bound to a node acts as that node only; an agent that served
 * another store is not believed about its jobs; 40 jobs of 250 KB commands arrive in answers
 * of bounded size, each order once; an agent that cannot read an answer gets its node
 * drained with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "protocol/limits.h"
#include "test.h"
#include "srv_util.h"

static long long hb_gen(json_t *hb) { return (long long)json_integer_value(json_object_get(hb, "gen")); }

/* A heartbeat as `node` with an explicit credential ("" for none); returns the status. */
static long heartbeat_as(const tsrv *t, const char *node, const char *cred, const char *events) {
  char body[2048];
  if (cred[0])
    snprintf(body, sizeof body, "{\"node\": \"%s\", \"gen\": 0, \"wait_ms\": 0, \"credential\": \"%s\", \"events\": %s}",
             node, cred, events);
  else
    snprintf(body, sizeof body, "{\"node\": \"%s\", \"gen\": 0, \"wait_ms\": 0, \"events\": %s}", node, events);
  json_t *o = NULL;
  long code = tsrv_call(t, "POST", "/v1/agent/heartbeat", AGENT, body, &o);
  json_decref(o);
  return code;
}

static long register_as(const tsrv *t, const char *token, const char *node, const char *cred) {
  char body[1024];
  snprintf(body, sizeof body,
           "{\"node\": {\"name\": \"%s\", \"gpus\": 1, \"gpu_list\": [{\"index\": 0, \"uuid\": \"GPU-x\","
           " \"mem_mib\": 81920}]}, \"agent_url\": \"http://127.0.0.1:1\"%s%s%s}",
           node, cred ? ", \"credential\": \"" : "", cred ? cred : "", cred ? "\"" : "");
  json_t *o = NULL;
  long code = tsrv_call(t, "POST", "/v1/agent/register", token, body, &o);
  json_decref(o);
  return code;
}

static void another_nodes_agent_cannot_report_its_jobs(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  CHECK_EQ_INT(201, tsrv_register(&t, "n2", 2, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 2}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running"));
  tsrv_req(&t, "GET", "/v1/jobs", ADMIN, NULL);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  REQUIRE(tsrv_req(&t, "GET", path, ADMIN, NULL) == 200);
  const char *on = json_string_value(json_object_get(
      json_array_get(json_object_get(json_object_get(t.last, "job"), "placements"), 0), "node"));
  REQUIRE(on);
  char victim[16], other[16], cred[GP_TLS_SHA256_HEX_MAX], ev[256];
  snprintf(victim, sizeof victim, "%s", on);
  snprintf(other, sizeof other, "%s", strcmp(on, "n1") == 0 ? "n2" : "n1");
  snprintf(ev, sizeof ev, "[{\"kind\": \"exited\", \"job\": \"%s\", \"exit_code\": 0}]", id);
  /* The shared token alone, or with the other node's credential: refused. */
  CHECK_EQ_INT(403, heartbeat_as(&t, victim, "", ev));
  CHECK_EQ_INT(403, heartbeat_as(&t, victim, tsrv_credential(other, cred), ev));
  CHECK_EQ_INT(403, register_as(&t, AGENT, victim, tsrv_credential(other, cred)));
  CHECK_EQ_INT(403, heartbeat_as(&t, victim, "0123", ev)); /* too short to be one */
  /* The other node's own heartbeat about the job: taken, and ignored. */
  CHECK_EQ_INT(200, heartbeat_as(&t, other, tsrv_credential(other, cred), ev));
  REQUIRE(tsrv_req(&t, "GET", path, ADMIN, NULL) == 200);
  CHECK_EQ_STR("running", job_str(t.last, "state"));
  /* Its own agent ends it. */
  CHECK_EQ_INT(200, heartbeat_as(&t, victim, tsrv_credential(victim, cred), ev));
  CHECK(tsrv_wait_state(&t, id, "completed"));
  free(id);
  tsrv_stop(&t);
}

static void an_admin_frees_a_nodes_name(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  const char *fresh = "00112233445566778899aabbccddeeff";
  CHECK_EQ_INT(403, register_as(&t, AGENT, "n1", fresh));
  CHECK_EQ_INT(403, tsrv_req(&t, "DELETE", "/v1/nodes/n1/credential", ALICE, NULL));
  CHECK_EQ_INT(405, tsrv_req(&t, "POST", "/v1/nodes/n1/credential", ADMIN, NULL));
  CHECK_EQ_INT(404, tsrv_req(&t, "DELETE", "/v1/nodes/ghost/credential", ADMIN, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "DELETE", "/v1/nodes/n1/credential", ADMIN, NULL));
  /* The old agent is told to register again; the first to register claims the name. */
  char cred[GP_TLS_SHA256_HEX_MAX];
  CHECK_EQ_INT(409, heartbeat_as(&t, "n1", tsrv_credential("n1", cred), "[]"));
  CHECK_EQ_INT(200, register_as(&t, AGENT, "n1", fresh));
  CHECK_EQ_INT(200, heartbeat_as(&t, "n1", fresh, "[]"));
  CHECK_EQ_INT(403, heartbeat_as(&t, "n1", cred, "[]"));
  /* The claim is in the store: it holds after a restart. */
  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start(&t);
  CHECK_EQ_INT(403, register_as(&t, AGENT, "n1", cred));
  CHECK_EQ_INT(200, register_as(&t, AGENT, "n1", fresh));
  tsrv_stop(&t);
}

static void a_bound_token_acts_as_its_node_only(void) {
  tsrv t = {0};
  tsrv_make_dir(&t);
  char file[400], extra[500];
  snprintf(file, sizeof file, "%s/tokens.yaml", t.dir);
  FILE *f = fopen(file, "w");
  REQUIRE(f);
  fputs("tokens:\n  - {token: bound-token-n7, user: agent, role: agent, node: n7}\n", f);
  fclose(f);
  REQUIRE(chmod(file, 0600) == 0); /* a token file must be its owner's alone */
  snprintf(extra, sizeof extra, "token_file: %s\n", file);
  tsrv_start_with(&t, extra, NULL);
  CHECK_EQ_INT(403, register_as(&t, "bound-token-n7", "n8", NULL));
  CHECK_EQ_INT(201, register_as(&t, "bound-token-n7", "n7", NULL));
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/agent/heartbeat", "bound-token-n7",
                              "{\"node\": \"n7\", \"gen\": 0, \"wait_ms\": 0}", &o));
  json_decref(o);
  CHECK_EQ_INT(403, tsrv_call(&t, "POST", "/v1/agent/heartbeat", "bound-token-n7",
                              "{\"node\": \"n1\", \"gen\": 0, \"wait_ms\": 0}", &o));
  CHECK_EQ_STR("node", err_field(o));
  json_decref(o);
  /* The shared token cannot take n7, credential or not. */
  char cred[GP_TLS_SHA256_HEX_MAX];
  CHECK_EQ_INT(403, register_as(&t, AGENT, "n7", tsrv_credential("n7", cred)));
  tsrv_stop(&t);
  /* Only an agent token names a node. */
  gp_server_config *cfg = NULL;
  gp_err e = {0};
  const char *bad = "tokens:\n  - {token: user-token-1, user: u, role: user, node: n1}\n";
  CHECK(gp_server_config_parse("t.yaml", bad, strlen(bad), &cfg, &e) != 0);
  CHECK_EQ_STR("tokens[0].node", e.field);
}

/* An agent that last served another store lists that store's jobs under numbers this store
 * uses too: the server does not take them for its own. */
static void an_agent_of_another_store_is_not_believed_about_jobs(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  char *id = tsrv_submit(&t, ALICE, "{\"command\": [\"x\"], \"gpus\": 1}");
  REQUIRE(id);
  CHECK(tsrv_wait_state(&t, id, "running"));
  json_t *hb = tsrv_heartbeat(&t, "n1", 0, 0, NULL);
  REQUIRE(hb);
  const char *store = json_string_value(json_object_get(hb, "store"));
  REQUIRE(store);
  CHECK_EQ_INT(32, (int)strlen(store));
  json_decref(tsrv_heartbeat(&t, "n1", hb_gen(hb), 0, NULL)); /* the start is acknowledged */
  json_decref(hb);
  char body[1024], cred[GP_TLS_SHA256_HEX_MAX];
  snprintf(body, sizeof body,
           "{\"node\": {\"name\": \"n1\", \"gpus\": 2}, \"credential\": \"%s\", \"store\": "
           "\"ffffffffffffffffffffffffffffffff\", \"jobs\": [{\"id\": \"%s\", \"state\": \"running\"}]}",
           tsrv_credential("n1", cred), id);
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/agent/register", AGENT, body, &o));
  CHECK_EQ_INT(32, (int)strlen(json_string_value(json_object_get(o, "store"))));
  json_decref(o);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  REQUIRE(tsrv_req(&t, "GET", path, ADMIN, NULL) == 200);
  CHECK(strcmp(job_str(t.last, "state"), "running") != 0);
  free(id);
  tsrv_stop(&t);
}

/* 40 jobs of 250 KB commands, started in one step: 10 MB of start orders for one node, past
 * what an agent reads in one answer. Each answer stays within the budget, and the answers
 * that follow bring every order once. */
static void big_orders_come_in_bounded_answers(void) {
  tsrv t = {0};
  tsrv_start_with(&t, "max_job_bytes: 262144\n", NULL); /* jobs as large as an order carries */
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/cordon", ADMIN, "{\"reason\": \"queue first\"}"));
  char *pad = malloc(63001);
  memset(pad, 'x', 63000);
  pad[63000] = '\0';
  json_t *spec = json_pack("{s:i, s:[s,s,s,s,s,s,s]}", "gpus", 0, "command", "sh", "-c", "true", pad,
                           pad, pad, pad);
  char *body = json_dumps(spec, JSON_COMPACT);
  json_decref(spec);
  free(pad);
  enum { N = 40 };
  char *ids[N];
  for (int i = 0; i < N; i++) {
    ids[i] = tsrv_submit(&t, ALICE, body);
    REQUIRE(ids[i]);
    json_decref(tsrv_heartbeat(&t, "n1", 0, 0, NULL)); /* the node stays up meanwhile */
  }
  free(body);
  CHECK_EQ_INT(200, tsrv_req(&t, "POST", "/v1/nodes/n1/resume", ADMIN, NULL));
  bool seen[N] = {0};
  int starts = 0, answers = 0;
  long long gen = 0;
  size_t largest = 0;
  for (int round = 0; round < 4 * N && starts < N; round++) {
    json_t *hb = tsrv_heartbeat(&t, "n1", gen, 300, NULL);
    REQUIRE(hb);
    char *text = json_dumps(hb, JSON_COMPACT);
    size_t len = strlen(text);
    free(text);
    if (len > largest) largest = len;
    json_t *orders = json_object_get(hb, "orders");
    answers += json_array_size(orders) > 0;
    for (size_t k = 0; k < json_array_size(orders); k++) {
      const json_t *job = json_object_get(json_array_get(orders, k), "job");
      const char *jid = json_string_value(json_object_get(job, "id"));
      for (int i = 0; jid && i < N; i++)
        if (strcmp(ids[i], jid) == 0) {
          CHECK(!seen[i]);
          seen[i] = true;
          starts++;
        }
    }
    gen = hb_gen(hb);
    json_decref(hb);
  }
  CHECK_EQ_INT(N, starts);
  CHECK(answers >= 8); /* 10 MB in answers of at most 1 MiB */
  CHECK(largest <= GP_PROTO_ORDERS_BUDGET + 512);
  for (int i = 0; i < N; i++) {
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", ids[i]);
    CHECK_EQ_INT(200, tsrv_req(&t, "POST", path, ALICE, NULL));
    free(ids[i]);
    json_decref(tsrv_heartbeat(&t, "n1", gen, 0, NULL)); /* not acknowledging the stops */
  }
  json_t *hb = tsrv_heartbeat(&t, "n1", gen, 0, NULL);
  REQUIRE(hb);
  CHECK_EQ_INT(N, (int)json_array_size(json_object_get(hb, "orders")));
  json_decref(hb);
  tsrv_stop(&t);
}

/* An agent that could not read an answer says so: the node is drained with its words. */
static void an_unreadable_answer_drains_the_node(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_register(&t, "n1", 2, NULL));
  char body[512], cred[GP_TLS_SHA256_HEX_MAX];
  snprintf(body, sizeof body,
           "{\"node\": \"n1\", \"gen\": 0, \"wait_ms\": 0, \"credential\": \"%s\", \"answer_error\": "
           "\"a heartbeat answer larger than 16777216 bytes was cut off\"}",
           tsrv_credential("n1", cred));
  json_t *o = NULL;
  CHECK_EQ_INT(200, tsrv_call(&t, "POST", "/v1/agent/heartbeat", AGENT, body, &o));
  json_decref(o);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/nodes/n1", ADMIN, NULL));
  const json_t *node = json_object_get(t.last, "node");
  CHECK_EQ_STR("drain", json_string_value(json_object_get(node, "state")));
  CHECK_CONTAINS(json_string_value(json_object_get(node, "reason")), "cannot read the server's answers");
  tsrv_stop(&t);
}

GP_TESTS(another_nodes_agent_cannot_report_its_jobs, an_admin_frees_a_nodes_name,
         a_bound_token_acts_as_its_node_only, an_agent_of_another_store_is_not_believed_about_jobs,
         big_orders_come_in_bounded_answers, an_unreadable_answer_drains_the_node)
