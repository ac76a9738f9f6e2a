/* SPDX-License-Identifier: Apache-2.0 */
/* A queue's spot settings on a real server: set and read back through the queues API,
 * bad values refused naming the field, kept across a restart, read from the config file,
 * and obeyed by the scheduler with test agents on an on-demand and a spot node. */
#include "test.h"
#include "srv_util.h"

static const json_t *spot_of(const json_t *answer) {
  return json_object_get(json_object_get(answer, "queue"), "spot");
}

static void the_api_sets_checks_and_keeps_a_queues_spot_settings(void) {
  tsrv t = {0};
  tsrv_start(&t);
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/lab/s", ADMIN,
                             "{\"users\": [\"*\"], \"spot\": {\"prefer\": \"prefer\", \"share\": 0.5}}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/lab/s", BOB, NULL));
  CHECK_EQ_STR("prefer", json_string_value(json_object_get(spot_of(t.last), "prefer")));
  CHECK_NEAR(0.5, json_number_value(json_object_get(spot_of(t.last), "share")), 1e-9);
  /* A queue that sets none shows the neutral default, without a share. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/org/a", BOB, NULL));
  CHECK_EQ_STR("neutral", json_string_value(json_object_get(spot_of(t.last), "prefer")));
  CHECK(json_is_null(json_object_get(spot_of(t.last), "share")));

  static const struct { const char *body, *field; } bad[] = {
      {"{\"spot\": {\"prefer\": \"sometimes\"}}", "spot.prefer"},
      {"{\"spot\": {\"prefer\": 1}}", "spot.prefer"},
      {"{\"spot\": {\"share\": 1.5}}", "spot.share"},
      {"{\"spot\": {\"share\": 0}}", "spot.share"},
      {"{\"spot\": {\"share\": \"half\"}}", "spot.share"},
      {"{\"spot\": {\"pref\": \"avoid\"}}", "spot.pref"},
      {"{\"spot\": \"avoid\"}", "spot"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_EQ_INT(400, tsrv_req(&t, "PUT", "/v1/queues/lab/s", ADMIN, bad[i].body));
    CHECK_EQ_STR(bad[i].field, err_field(t.last));
  }
  /* A key left out keeps its value; null drops the share. */
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/queues/lab/s", ADMIN, "{\"spot\": {\"prefer\": \"avoid\"}}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/lab/s", BOB, NULL));
  CHECK_EQ_STR("avoid", json_string_value(json_object_get(spot_of(t.last), "prefer")));
  CHECK_NEAR(0.5, json_number_value(json_object_get(spot_of(t.last), "share")), 1e-9);
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/lab/n", ADMIN,
                             "{\"spot\": {\"prefer\": \"never\", \"share\": 0.25}}"));
  CHECK_EQ_INT(200, tsrv_req(&t, "PUT", "/v1/queues/lab/n", ADMIN, "{\"spot\": {\"share\": null}}"));

  t.keep_dir = true;
  tsrv_stop(&t);
  tsrv_start(&t); /* same data dir */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/lab/s", BOB, NULL));
  CHECK_EQ_STR("avoid", json_string_value(json_object_get(spot_of(t.last), "prefer")));
  CHECK_NEAR(0.5, json_number_value(json_object_get(spot_of(t.last), "share")), 1e-9);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/queues/lab/n", BOB, NULL));
  CHECK_EQ_STR("never", json_string_value(json_object_get(spot_of(t.last), "prefer")));
  CHECK(json_is_null(json_object_get(spot_of(t.last), "share")));
  tsrv_stop(&t);
}

static void the_config_file_sets_a_queues_spot_settings(void) {
  const char *base =
      "listen: 127.0.0.1:0\n"
      "tokens:\n"
      "  - {token: " ADMIN ", user: root, role: admin}\n"
      "queues:\n"
      "  - {name: train, spot: {prefer: prefer, share: 0.6}}\n"
      "  - {name: serve, spot: never}\n";
  gp_server_config *cfg = NULL;
  gp_err e = {0};
  REQUIRE(gp_server_config_parse("test.yaml", base, strlen(base), &cfg, &e) == 0);
  REQUIRE(cfg->n_queues == 2);
  CHECK_EQ_INT(GP_SPOT_PREFER, cfg->queues[0].q.spot);
  CHECK_NEAR(0.6, cfg->queues[0].q.spot_share, 1e-9);
  CHECK_EQ_INT(GP_SPOT_NEVER, cfg->queues[1].q.spot);
  CHECK_NEAR(0, cfg->queues[1].q.spot_share, 1e-9);
  gp_server_config_free(cfg);

  static const struct { const char *q, *field; } bad[] = {
      {"{name: a, spot: {prefer: cheap}}", "queues[0].spot.prefer"},
      {"{name: a, spot: {share: 2}}", "queues[0].spot.share"},
      {"{name: a, spot: {share: -0.1}}", "queues[0].spot.share"},
      {"{name: a, spot: {prefer: avoid, mix: 1}}", "queues[0].spot.mix"},
      {"{name: a, spot: [avoid]}", "queues[0].spot"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[512];
    snprintf(text, sizeof text, "listen: 127.0.0.1:0\nqueues:\n  - %s\n", bad[i].q);
    memset(&e, 0, sizeof e);
    cfg = NULL;
    CHECK(gp_server_config_parse("test.yaml", text, strlen(text), &cfg, &e) != 0);
    CHECK_CONTAINS(e.field, bad[i].field);
    gp_server_config_free(cfg);
  }
}

/* Registers node `name` with 4 GPUs of capacity `capacity`. */
static long register_node(tsrv *t, const char *name, const char *capacity) {
  char body[2048];
  int n = snprintf(body, sizeof body,
                   "{\"node\": {\"name\": \"%s\", \"model\": \"H100-80GB\", \"gpus\": 4, \"cpus\": 64,"
                   " \"mem_mib\": 512000, \"capacity\": \"%s\", \"gpu_list\": [",
                   name, capacity);
  for (int g = 0; g < 4; g++)
    n += snprintf(body + n, sizeof body - (size_t)n,
                  "%s{\"index\": %d, \"uuid\": \"GPU-%s-%d\", \"mem_mib\": 81920, \"mode\": \"exclusive\"}",
                  g ? "," : "", g, name, g);
  snprintf(body + n, sizeof body - (size_t)n, "]}, \"agent_url\": \"http://127.0.0.1:1\", \"jobs\": []}");
  json_t *o = NULL;
  long code = tsrv_agent_call(t, "/v1/agent/register", body, &o);
  json_decref(o);
  return code;
}

/* The node the scheduler gave job id's first task ("" until it has one; ~5 s at most). */
static const char *placed_on(tsrv *t, const char *id, char *out, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", id);
  out[0] = '\0';
  for (int i = 0; i < 500 && !out[0]; i++) {
    json_t *o = NULL;
    tsrv_call(t, "GET", path, ADMIN, NULL, &o);
    const json_t *pl = json_object_get(json_object_get(o, "job"), "placements");
    const char *node = json_string_value(json_object_get(json_array_get(pl, 0), "node"));
    if (node) snprintf(out, size, "%s", node);
    json_decref(o);
    if (!out[0]) usleep(10000);
  }
  return out;
}

static void jobs_land_where_their_queue_wants_them(void) {
  tsrv t = {0};
  tsrv_start(&t);
  /* The on-demand node first: bin-packing's tie goes to it. */
  CHECK_EQ_INT(201, register_node(&t, "od1", "on-demand"));
  CHECK_EQ_INT(201, register_node(&t, "spot1", "spot"));
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/train", ADMIN,
                             "{\"users\": [\"*\"], \"spot\": {\"prefer\": \"prefer\"}}"));
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/serve", ADMIN,
                             "{\"users\": [\"*\"], \"spot\": {\"prefer\": \"never\"}}"));
  CHECK_EQ_INT(201, tsrv_req(&t, "PUT", "/v1/queues/infer", ADMIN,
                             "{\"users\": [\"*\"], \"spot\": {\"prefer\": \"avoid\"}}"));
  char node[64];
  char *a = tsrv_submit(&t, ALICE, "{\"queue\": \"train\", \"command\": [\"x\"], \"gpus\": 1, \"allow_spot\": true}");
  REQUIRE(a);
  CHECK_EQ_STR("spot1", placed_on(&t, a, node, sizeof node));
  /* The spot node's agent is the one told to start it. */
  json_t *hb = tsrv_heartbeat(&t, "spot1", 0, 3000, NULL);
  REQUIRE(hb);
  const json_t *order = json_array_get(json_object_get(hb, "orders"), 0);
  CHECK_EQ_STR("start", json_string_value(json_object_get(order, "kind")));
  CHECK_EQ_STR(a, json_string_value(json_object_get(json_object_get(order, "job"), "id")));
  json_decref(hb);
  /* Bin-packing alone would pick the fuller spot node: avoid keeps it off. */
  char *b = tsrv_submit(&t, ALICE, "{\"queue\": \"infer\", \"command\": [\"x\"], \"gpus\": 1, \"allow_spot\": true}");
  REQUIRE(b);
  CHECK_EQ_STR("od1", placed_on(&t, b, node, sizeof node));
  /* Never: the on-demand node's last 3 GPUs, then nothing though spot has room. */
  char *c = tsrv_submit(&t, ALICE, "{\"queue\": \"serve\", \"command\": [\"x\"], \"gpus\": 3, \"allow_spot\": true}");
  REQUIRE(c);
  CHECK_EQ_STR("od1", placed_on(&t, c, node, sizeof node));
  char *d = tsrv_submit(&t, ALICE, "{\"queue\": \"serve\", \"command\": [\"x\"], \"gpus\": 1, \"allow_spot\": true}");
  REQUIRE(d);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%s", d);
  bool told = false;
  for (int i = 0; i < 500 && !told; i++) {
    CHECK_EQ_INT(200, tsrv_req(&t, "GET", path, ADMIN, NULL));
    const char *m = json_string_value(json_object_get(json_object_get(t.last, "job"), "pending_message"));
    told = m && strstr(m, "does not run jobs on spot");
    if (!told) usleep(10000);
  }
  CHECK(told);
  CHECK_EQ_INT(0, (long long)json_array_size(json_object_get(json_object_get(t.last, "job"), "placements")));
  free(a);
  free(b);
  free(c);
  free(d);
  tsrv_stop(&t);
}

GP_TESTS(the_api_sets_checks_and_keeps_a_queues_spot_settings,
         the_config_file_sets_a_queues_spot_settings, jobs_land_where_their_queue_wants_them)
