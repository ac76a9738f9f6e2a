/* SPDX-License-Identifier: Apache-2.0 */
/* A follower shows nodes' heartbeats and liveness as the leader sees them
 * (src/server/state/heartbeats.c): agents heartbeat to the leader only, which keeps them in the
 * store for the followers. Two servers on one store and one lease (a real PostgreSQL). */
#include "test.h"

#include "server/leader_pg.h"
#include "srv_util.h"

static void start_server(tsrv *t, const char *url, const char *id) {
  tsrv_make_dir(t);
  char text[8192];
  snprintf(text, sizeof text, "%sdata_dir: %s\nstore: %s\nha: {lease_ms: 1500, renew_ms: 300, id: %s}\n",
           tsrv_base_config, t->dir, url, id);
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

static const char *role(tsrv *t) {
  if (tsrv_req(t, "GET", "/v1/leader", ALICE, NULL) != 200) return "";
  const char *r = json_string_value(json_object_get(t->last, "role"));
  return r ? r : "";
}

static json_t *node_of(json_t *list, const char *name) {
  size_t i;
  json_t *n;
  json_array_foreach(json_object_get(list, "nodes"), i, n) {
    if (strcmp(json_string_value(json_object_get(n, "name")), name) == 0) return n;
  }
  return NULL;
}

static void a_follower_shows_the_leaders_heartbeats_and_down_nodes(void) {
  const char *url = tpg_start();
  tsrv a = {0}, b = {0};
  start_server(&a, url, "a");
  for (int i = 0; i < 150 && strcmp(role(&a), "leader") != 0; i++) usleep(20000);
  REQUIRE(strcmp(role(&a), "leader") == 0);
  start_server(&b, url, "b");
  CHECK_EQ_STR("follower", role(&b));
  CHECK_EQ_INT(201, tsrv_register(&a, "n1", 2, NULL));
  CHECK_EQ_INT(201, tsrv_register(&a, "n2", 2, NULL));
  time_t registered = time(NULL);
  /* n1 heartbeats for 6 s; n2 falls silent and is marked down (node_timeout_s 2). */
  while (time(NULL) - registered < 6) {
    json_t *hb = tsrv_heartbeat(&a, "n1", 0, 0, NULL);
    CHECK(hb != NULL);
    json_decref(hb);
    usleep(300000);
  }
  CHECK_EQ_INT(200, tsrv_req(&a, "GET", "/v1/nodes", ADMIN, NULL));
  CHECK_EQ_STR("down", json_string_value(json_object_get(node_of(a.last, "n2"), "state")));
  /* The follower, within a write period and its reload: */
  bool fresh = false, down = false;
  for (int i = 0; i < 40 && !(fresh && down); i++) {
    REQUIRE(tsrv_req(&b, "GET", "/v1/nodes", ADMIN, NULL) == 200);
    json_t *n1 = node_of(b.last, "n1"), *n2 = node_of(b.last, "n2");
    REQUIRE(n1 && n2);
    int64_t age = (int64_t)time(NULL) - json_integer_value(json_object_get(n1, "last_heartbeat"));
    fresh = age <= 4;
    down = strcmp(json_string_value(json_object_get(n2, "state")), "down") == 0;
    if (!(fresh && down)) usleep(100000);
  }
  CHECK(fresh);
  CHECK(down);
  CHECK_EQ_STR("up", json_string_value(json_object_get(node_of(b.last, "n1"), "state")));
  tsrv_stop(&b);
  tsrv_stop(&a);
}

GP_TESTS(a_follower_shows_the_leaders_heartbeats_and_down_nodes)
