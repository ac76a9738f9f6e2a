/* SPDX-License-Identifier: Apache-2.0 */
/* A heartbeat's `models` (src/server/state/models.c): untrusted, so bounded (at most
 * GP_PROTO_MODELS_MAX names kept) and checked (a bad name is dropped, never kept), and
 * merged with the node's image hashes into the one ascending set the scheduler reads. */
#include "server/workloads/image_pull.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/model.h"
#include "server/state/state.h"
#include "util/mem.h"

static bool holds(const gp_srv_node *n, uint64_t h) {
  for (int i = 0; i < n->n_pref_hashes; i++)
    if (n->pref_hashes[i] == h) return true;
  return false;
}

static void strictly_ascending(const gp_srv_node *n) {
  for (int i = 1; i < n->n_pref_hashes; i++) CHECK(n->pref_hashes[i - 1] < n->pref_hashes[i]);
}

static void bad_names_are_dropped_and_the_set_merges_with_images(void) {
  gp_srv_node *n = gp_xcalloc(1, sizeof *n);
  n->name = gp_xstrdup("n1");
  json_t *images = json_pack("[{s:[s], s:i}]", "names", "docker.io/library/busybox:latest", "size", 10);
  CHECK(gp__srv_node_images_take(n, images));
  json_decref(images);
  CHECK_EQ_INT(1, n->n_pref_hashes);
  char longname[200];
  memset(longname, 'x', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  json_t *models = json_pack("[s, s, s, s, s, i, n, s, s]", "m1", "../etc", ".locks", "a b", longname, 7, "m2",
                             "m1");
  json_array_append_new(models, json_stringn("m3\0x", 4)); /* a NUL inside: dropped */
  CHECK(gp__srv_node_models_take(n, models));
  json_decref(models);
  CHECK_EQ_INT(2, (int)json_array_size(n->models));
  CHECK_EQ_STR("m1", json_string_value(json_array_get(n->models, 0)));
  CHECK_EQ_STR("m2", json_string_value(json_array_get(n->models, 1)));
  CHECK_EQ_INT(3, n->n_pref_hashes); /* busybox, m1, m2 */
  CHECK(holds(n, gp_proto_image_hash("busybox")));
  CHECK(holds(n, gp_proto_model_hash("m1")));
  CHECK(holds(n, gp_proto_model_hash("m2")));
  CHECK(!holds(n, gp_proto_model_hash("m3")));
  strictly_ascending(n);
  /* The same set again: no change for the scheduler; absent: the last list stands. */
  models = json_pack("[s, s]", "m2", "m1");
  CHECK(!gp__srv_node_models_take(n, models));
  json_decref(models);
  CHECK(!gp__srv_node_models_take(n, NULL));
  CHECK_EQ_INT(3, n->n_pref_hashes);
  /* A new image keeps the models in the set. */
  images = json_pack("[{s:[s], s:i}]", "names", "docker.io/library/alpine:3", "size", 10);
  CHECK(gp__srv_node_images_take(n, images));
  json_decref(images);
  CHECK_EQ_INT(3, n->n_pref_hashes);
  CHECK(holds(n, gp_proto_model_hash("m1")));
  CHECK(!holds(n, gp_proto_image_hash("busybox")));
  /* An empty list: the node holds no model any more. */
  models = json_array();
  CHECK(gp__srv_node_models_take(n, models));
  json_decref(models);
  CHECK_EQ_INT(1, n->n_pref_hashes);
  gp__srv_node_free(n);
}

static void at_most_the_bound_is_kept(void) {
  gp_srv_node *n = gp_xcalloc(1, sizeof *n);
  n->name = gp_xstrdup("n1");
  json_t *models = json_array();
  for (int i = 0; i < GP_PROTO_MODELS_MAX + 100; i++) {
    char name[32];
    snprintf(name, sizeof name, "model-%04d", i);
    json_array_append_new(models, json_string(name));
  }
  CHECK(gp__srv_node_models_take(n, models));
  json_decref(models);
  CHECK_EQ_INT(GP_PROTO_MODELS_MAX, (int)json_array_size(n->models));
  CHECK_EQ_INT(GP_PROTO_MODELS_MAX, n->n_model_hashes);
  CHECK_EQ_INT(GP_PROTO_MODELS_MAX, n->n_pref_hashes);
  strictly_ascending(n);
  gp__srv_node_free(n);
}

GP_TESTS(bad_names_are_dropped_and_the_set_merges_with_images, at_most_the_bound_is_kept)
