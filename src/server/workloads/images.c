/* SPDX-License-Identifier: Apache-2.0 */
/* The images each node holds (docs/containers.md): the agent's report in a heartbeat,
 * checked (untrusted: at most 128 images of 8 names, valid references, sizes >= 0) and kept
 * in memory with the node (an agent sends it again within a minute after a restart), and
 * shown in the node's API document as `images`. Their names' hashes go to the scheduler's
 * view of the node (placement prefers a node that holds a job's image). */
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "server/state/state.h"
#include "server/workloads/image_pull.h"

#define MAX_IMAGES 128
#define MAX_NAMES 8

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

bool gp__srv_node_images_take(gp_srv_node *n, const json_t *images) {
  if (!json_is_array(images)) return false; /* not in this heartbeat: the last list stands */
  uint64_t hashes[MAX_IMAGES * MAX_NAMES];
  int nh = 0;
  json_t *keep = json_array();
  size_t i;
  json_t *im;
  json_array_foreach(images, i, im) {
    if (json_array_size(keep) >= MAX_IMAGES) break;
    const json_t *names = json_object_get(im, "names"), *size = json_object_get(im, "size");
    if (!json_is_array(names) || json_array_size(names) == 0 || json_array_size(names) > MAX_NAMES ||
        !json_is_integer(size) || json_integer_value(size) < 0)
      continue;
    json_t *ok = json_array();
    size_t k;
    json_t *nm;
    json_array_foreach(names, k, nm) {
      const char *s = json_string_value(nm);
      if (s && strlen(s) == json_string_length(nm) && !gp_proto_image_check(s)) {
        json_array_append_new(ok, json_string(s));
        hashes[nh++] = gp_proto_image_hash(s);
      }
    }
    if (json_array_size(ok) == 0) {
      json_decref(ok);
      continue;
    }
    json_array_append_new(keep, json_pack("{s:o, s:I}", "names", ok, "size",
                                          (json_int_t)json_integer_value(size)));
  }
  json_decref(n->images);
  n->images = keep;
  qsort(hashes, (size_t)nh, sizeof *hashes, cmp_u64);
  int u = 0;
  for (int h = 0; h < nh; h++)
    if (u == 0 || hashes[u - 1] != hashes[h]) hashes[u++] = hashes[h];
  if (u == n->n_image_hashes && (u == 0 || !memcmp(hashes, n->image_hashes, (size_t)u * sizeof *hashes)))
    return false;
  free(n->image_hashes);
  n->image_hashes = u ? gp_xmalloc((size_t)u * sizeof *hashes) : NULL;
  if (u) memcpy(n->image_hashes, hashes, (size_t)u * sizeof *hashes);
  n->n_image_hashes = u;
  gp__srv_node_prefs_merge(n);
  return true;
}
