/* SPDX-License-Identifier: Apache-2.0 */
/* The models each node holds (docs/services.md#placement): the agent's report in a
 * heartbeat (`models`: the names of its models_dir's subdirectories), checked (untrusted:
 * at most GP_PROTO_MODELS_MAX names, each a valid model name; others are dropped), kept in
 * memory with the node (an agent sends it again within a minute after a restart) and shown
 * in the node's API document as `models`. Their hashes join the image hashes in the
 * scheduler's view of the node: placement prefers a node holding a job's model. */
#include <stdlib.h>
#include <string.h>

#include "protocol/model.h"
#include "server/state/state.h"
#include "util/mem.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

bool gp__srv_node_models_take(gp_srv_node *n, const json_t *models) {
  if (!json_is_array(models)) return false; /* not in this heartbeat: the last list stands */
  uint64_t hashes[GP_PROTO_MODELS_MAX];
  int nh = 0;
  json_t *keep = json_array();
  size_t i;
  json_t *m;
  json_array_foreach(models, i, m) {
    if (nh >= GP_PROTO_MODELS_MAX) break;
    const char *s = json_string_value(m);
    if (!s || strlen(s) != json_string_length(m) || !gp_proto_model_name_valid(s)) continue;
    uint64_t h = gp_proto_model_hash(s);
    bool dup = false;
    for (int k = 0; k < nh && !dup; k++) dup = hashes[k] == h;
    if (dup) continue;
    hashes[nh++] = h;
    json_array_append_new(keep, json_string(s));
  }
  json_decref(n->models);
  n->models = keep;
  qsort(hashes, (size_t)nh, sizeof *hashes, cmp_u64);
  if (nh == n->n_model_hashes && (nh == 0 || !memcmp(hashes, n->model_hashes, (size_t)nh * sizeof *hashes)))
    return false;
  free(n->model_hashes);
  n->model_hashes = nh ? gp_xmalloc((size_t)nh * sizeof *hashes) : NULL;
  if (nh) memcpy(n->model_hashes, hashes, (size_t)nh * sizeof *hashes);
  n->n_model_hashes = nh;
  gp__srv_node_prefs_merge(n);
  return true;
}

void gp__srv_node_prefs_merge(gp_srv_node *n) {
  int total = n->n_image_hashes + n->n_model_hashes;
  uint64_t *all = total ? gp_xmalloc((size_t)total * sizeof *all) : NULL;
  int a = 0, b = 0, u = 0;
  while (a < n->n_image_hashes || b < n->n_model_hashes) {
    uint64_t h = b >= n->n_model_hashes || (a < n->n_image_hashes && n->image_hashes[a] <= n->model_hashes[b])
                     ? n->image_hashes[a++]
                     : n->model_hashes[b++];
    if (u == 0 || all[u - 1] != h) all[u++] = h; /* strictly ascending, as the core checks */
  }
  free(n->pref_hashes);
  n->pref_hashes = all;
  n->n_pref_hashes = u;
}
