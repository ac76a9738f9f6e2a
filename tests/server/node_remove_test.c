/* SPDX-License-Identifier: Apache-2.0 */
/* Removing a node (src/server/state/records.c, DELETE /v1/nodes/{name}): nodes are named by their
 * position, so the last node takes the removed one's place and every reference to it (a
 * job's allocation, the name index, the kept view) follows; the view then agrees with the
 * records (sched_check compares every entry). Provider fields set on a node outlive a
 * restart through the real SQLite store, and an agent's registration cannot set them. */
#include <stdlib.h>

#include "test.h"
#include "server/cycle/parts.h"
#include "server/state/config.h"
#include "server/state/state.h"
#include "store/store.h"
#include "store/store_util.h"

static gp_srv_node *new_node(gp_srv_state *s, const char *name) {
  gp_srv_node *n = calloc(1, sizeof *n);
  n->name = strdup(name);
  n->model = strdup("H100-80GB");
  n->provider_price = -1;
  gp__srv_node_add(s, n);
  return n;
}

static void the_last_node_takes_the_removed_ones_place(void) {
  gp_store *store = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &store, &e) == 0);
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, store);
  s->sched_check = true;
  gp_srv_node *n1 = new_node(s, "n1");
  new_node(s, "n2");
  gp_srv_node *n3 = new_node(s, "n3");
  json_t *o = json_loads("{\"command\": [\"true\"], \"gpus\": 1}", 0, NULL);
  gp_srv_job *j = NULL;
  REQUIRE(gp__srv_job_parse(cfg, o, "alice", false, &j, &e) == 0);
  json_decref(o);
  j->id = 1;
  snprintf(j->idstr, sizeof j->idstr, "1");
  gp__srv_job_insert(s, j);
  j->n_alloc = 1;
  j->alloc = calloc(1, sizeof *j->alloc);
  j->alloc[0].node = 2; /* on n3 */
  j->alloc[0].gpu_mask = 1;
  j->alloc[0].gpu_milli = 1000;
  j->alloc[0].mig_instance = -1;
  gp__srv_job_changed(s, j);
  gp__srv_view_sync(s);

  CHECK(gp__srv_node_holder(s, n3) == j);
  CHECK(gp__srv_node_holder(s, n1) == NULL);
  REQUIRE(gp_store_begin(store, &e) == 0);
  CHECK_EQ_INT(0, gp__srv_node_remove(s, n1, 100, &e));
  REQUIRE(gp_store_commit(store, &e) == 0);
  CHECK_EQ_INT(2, s->n_nodes);
  CHECK(s->nodes[0] == n3 && n3->index == 0);
  CHECK(gp__srv_node_get(s, "n1") == NULL);
  CHECK(gp__srv_node_get(s, "n3") == n3);
  CHECK_EQ_INT(1, gp__srv_node_index(s, "n2"));
  CHECK_EQ_INT(0, j->alloc[0].node);
  CHECK(gp__srv_node_holder(s, n3) == j);
  const gp_view *v = gp__srv_view_sync(s); /* sched_check: aborts on a stale entry */
  CHECK_EQ_INT(2, v->n_nodes);
  CHECK_EQ_STR("n3", v->nodes[0].name);
  CHECK_EQ_STR("n2", v->nodes[1].name);
  CHECK_EQ_INT(0, v->jobs[0].placements ? v->jobs[0].placements[0].node : 0);
  /* Removing the last node moves nothing. */
  gp_srv_node *n2 = gp__srv_node_get(s, "n2");
  REQUIRE(gp_store_begin(store, &e) == 0);
  CHECK_EQ_INT(0, gp__srv_node_remove(s, n2, 101, &e));
  REQUIRE(gp_store_commit(store, &e) == 0);
  CHECK_EQ_INT(1, s->n_nodes);
  CHECK(gp__srv_node_get(s, "n3") == n3);
  CHECK_EQ_INT(1, gp__srv_view_sync(s)->n_nodes);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
  gp_store_close(store);
  remove_dir();
}

static void provider_fields_outlive_a_restart(void) {
  gp_store *store = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &store, &e) == 0);
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, store);
  gp_srv_node *n = new_node(s, "gpu-1");
  REQUIRE(gp_store_begin(store, &e) == 0);
  CHECK_EQ_INT(GP_EINVAL, gp__srv_node_set_provider(s, n, "a100-spot", "i 1", 1.5, &e));
  CHECK_EQ_INT(0, gp__srv_node_set_provider(s, n, "a100-spot", "i-0abc", 1.5, &e));
  REQUIRE(gp_store_commit(store, &e) == 0);
  json_t *api = gp__srv_node_to_json(s, n, false);
  CHECK_EQ_STR("i-0abc", json_string_value(json_object_get(json_object_get(api, "provider"), "instance_id")));
  json_decref(api);
  gp__srv_state_free(s);
  gp_store_close(store);

  REQUIRE(gp_store_sqlite_open(db_path(), &store, &e) == 0);
  s = gp__srv_state_make(cfg, store);
  REQUIRE(gp__srv_state_load(s, 1000, 1000, &e) == 0);
  n = gp__srv_node_get(s, "gpu-1");
  REQUIRE(n);
  CHECK_EQ_STR("a100-spot", n->provider_template);
  CHECK_EQ_STR("i-0abc", n->provider_instance);
  CHECK_NEAR(1.5, n->provider_price, 1e-9);
  /* An agent registering cannot claim provider fields, nor clear them. */
  json_t *reg = json_loads("{\"name\": \"gpu-1\", \"gpus\": 0, \"provider\": {\"template\": \"x\","
                           " \"instance_id\": \"forged\"}}", 0, NULL);
  CHECK_EQ_INT(0, gp__srv_node_from_json(reg, n, false, &e));
  json_decref(reg);
  CHECK_EQ_STR("i-0abc", n->provider_instance);
  /* A node no provider made shows provider: null. */
  gp_srv_node *plain = new_node(s, "plain");
  api = gp__srv_node_to_json(s, plain, false);
  CHECK(json_is_null(json_object_get(api, "provider")));
  json_decref(api);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
  gp_store_close(store);
  remove_dir();
}

GP_TESTS(the_last_node_takes_the_removed_ones_place, provider_fields_outlive_a_restart)
