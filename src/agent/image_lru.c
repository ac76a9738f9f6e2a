/* SPDX-License-Identifier: Apache-2.0 */
/* The cap on the node's image store (docs/containers.md#the-image-store): when the images
 * the engine holds take more than `container.image_store_max`, the agent removes the least
 * recently used ones (`podman rmi`, never forced) until they fit, after each read of the
 * inventory (a pull, a container's end, once a minute). Never an image a container uses
 * (the engine's own count of its containers) nor one a running job of this agent started
 * in (its pull may be done and its container not made yet). "Used" is when a job last
 * started in it or a pre-pull fetched it, as this agent saw; an image it never saw used
 * counts as used when it was built, so it goes before any it saw. The inventory's reads for
 * the heartbeat are made here too, as the cap applies after each. */
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "agent/images.h"
#include "protocol/container.h"
#include "util/mem.h"

#define USE_MAX 256 /* images whose last use is remembered; the oldest entry is reused */

struct gp__agent_image_use {
  uint64_t hash[USE_MAX];
  int64_t at_ms[USE_MAX];
  int n;
};

void gp__agent_image_used(gp_agent *a, uint64_t image) {
  if (!image) return;
  if (!a->image_use) a->image_use = gp_xcalloc(1, sizeof *a->image_use);
  struct gp__agent_image_use *u = a->image_use;
  int slot = -1;
  for (int i = 0; i < u->n && slot < 0; i++)
    if (u->hash[i] == image) slot = i;
  if (slot < 0 && u->n < USE_MAX) slot = u->n++;
  if (slot < 0) {
    slot = 0;
    for (int i = 1; i < u->n; i++)
      if (u->at_ms[i] < u->at_ms[slot]) slot = i;
  }
  u->hash[slot] = image;
  u->at_ms[slot] = gp__agent_now_ms();
}

int gp_agent_images_evict_pick(const gp_agent_image_entry *v, int n, int64_t cap, int *out) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += v[i].size;
  int k = 0;
  bool *taken = gp_xcalloc((size_t)n + 1, sizeof *taken);
  while (total > cap) {
    int best = -1;
    for (int i = 0; i < n; i++)
      if (!v[i].in_use && !taken[i] &&
          (best < 0 || v[i].last_used_ms < v[best].last_used_ms ||
           (v[i].last_used_ms == v[best].last_used_ms && v[i].size > v[best].size)))
        best = i;
    if (best < 0) break; /* what is left is in use: over the cap until it ends */
    taken[best] = true;
    out[k++] = best;
    total -= v[best].size;
  }
  free(taken);
  return k;
}

static bool id_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= sizeof ((gp_agent_image_entry *)0)->id) return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

int gp_agent_images_entries(const char *text, size_t len, gp_agent_image_entry *v, int max,
                            uint64_t (*names)[GP_AGENT_MAX_IMAGE_NAMES], int *n_names) {
  json_t *doc = json_loadb(text, len, 0, NULL);
  if (!json_is_array(doc)) {
    json_decref(doc);
    return -1;
  }
  int n = 0;
  size_t i;
  json_t *im;
  json_array_foreach(doc, i, im) {
    const char *id = json_string_value(json_object_get(im, "Id"));
    const json_t *size = json_object_get(im, "Size"), *created = json_object_get(im, "Created");
    const json_t *ctrs = json_object_get(im, "Containers");
    if (!id_ok(id)) continue;
    int at = -1;
    for (int k = 0; k < n && at < 0; k++)
      if (!strcmp(v[k].id, id)) at = k; /* the engine lists an image once per name set */
    if (at < 0) {
      if (n >= max) break;
      at = n++;
      memset(&v[at], 0, sizeof v[at]);
      snprintf(v[at].id, sizeof v[at].id, "%s", id);
      v[at].size = json_is_integer(size) && json_integer_value(size) > 0 ? json_integer_value(size) : 0;
      v[at].last_used_ms = json_is_integer(created) && json_integer_value(created) > 0 &&
                                   json_integer_value(created) < ((json_int_t)1 << 40)
                               ? json_integer_value(created) * 1000 : 0;
      n_names[at] = 0;
    }
    if (!json_is_integer(ctrs) || json_integer_value(ctrs) != 0) v[at].in_use = true;
    size_t k;
    json_t *nm;
    json_array_foreach(json_object_get(im, "Names"), k, nm) {
      const char *s = json_string_value(nm);
      if (s && n_names[at] < GP_AGENT_MAX_IMAGE_NAMES && !gp_proto_image_check(s))
        names[at][n_names[at]++] = gp_proto_image_hash(s);
    }
  }
  json_decref(doc);
  return n;
}

/* Runs `engine [options] rmi ID`: true when it exited 0. */
static bool remove_image(gp_agent *a, const char *id) {
  char *argv[GP_CT_MAX_OPTIONS + 8];
  int n = 0;
  argv[n++] = a->container.engine;
  for (int i = 0; i < a->cfg.container.n_options; i++) argv[n++] = a->cfg.container.options[i];
  argv[n++] = "rmi";
  argv[n++] = (char *)id;
  argv[n] = NULL;
  size_t len = 0;
  char *out = gp__agent_images_capture(argv, &len);
  free(out);
  return out != NULL;
}

#define TRIM_MAX 1024 /* images looked at */

bool gp__agent_images_trim(gp_agent *a, const char *text, size_t len) {
  int64_t cap = a->cfg.container.image_store_max;
  if (cap <= 0) return false;
  gp_agent_image_entry *v = gp_xcalloc(TRIM_MAX, sizeof *v);
  uint64_t(*names)[GP_AGENT_MAX_IMAGE_NAMES] = gp_xcalloc(TRIM_MAX, sizeof *names);
  int *n_names = gp_xcalloc(TRIM_MAX, sizeof *n_names), *pick = gp_xcalloc(TRIM_MAX, sizeof *pick);
  int n = gp_agent_images_entries(text, len, v, TRIM_MAX, names, n_names);
  const struct gp__agent_image_use *u = a->image_use;
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < n_names[i]; k++) {
      for (int e = 0; u && e < u->n; e++)
        if (u->hash[e] == names[i][k] && u->at_ms[e] > v[i].last_used_ms) v[i].last_used_ms = u->at_ms[e];
      for (size_t j = 0; j < a->n_jobs; j++)
        if (!a->jobs[j]->ended && a->jobs[j]->image == names[i][k]) v[i].in_use = true;
    }
  }
  int k = n > 0 ? gp_agent_images_evict_pick(v, n, cap, pick) : 0;
  bool removed = false;
  for (int i = 0; i < k; i++) {
    bool ok = remove_image(a, v[pick[i]].id);
    removed |= ok;
    gp__agent_log("image store over %lld bytes: %s image %.12s (%lld bytes)", (long long)cap,
                  ok ? "removed" : "could not remove", v[pick[i]].id, (long long)v[pick[i]].size);
  }
  free(v);
  free(names);
  free(n_names);
  free(pick);
  return removed;
}

static void on_started(gp_agent *a, gp__agent_job *j) { gp__agent_image_used(a, j->image); }

/* A task started in an image used it now (agent_hooks.c). */
const gp__agent_job_hooks gp__agent_image_lru_hooks = {.name = "image_lru", .started = on_started};

/* The inventory for the heartbeat, read when due: past the store's cap, the least recently
 * used go first and what is left is read again. */
void gp__agent_images_refresh(gp_agent *a) {
  int64_t now = gp__agent_now_ms();
  if (!a->container.available || now < a->images_next_ms) return;
  a->images_next_ms = now + 60000;
  char *argv[GP_CT_MAX_OPTIONS + 8];
  int n = 0;
  argv[n++] = a->container.engine;
  for (int i = 0; i < a->cfg.container.n_options; i++) argv[n++] = a->cfg.container.options[i];
  argv[n++] = "images";
  argv[n++] = "--format";
  argv[n++] = "json";
  argv[n] = NULL;
  size_t len = 0;
  char *out = gp__agent_images_capture(argv, &len);
  /* Past the store's cap: remove the least recently used, then read what is left. */
  if (out && gp__agent_images_trim(a, out, len)) {
    free(out);
    out = gp__agent_images_capture(argv, &len);
  }
  json_t *list = out ? gp_agent_images_parse(out, len) : NULL;
  free(out);
  if (!list) return; /* the last list stands */
  json_decref(a->images);
  a->images = list;
  a->images_send = true;
}
