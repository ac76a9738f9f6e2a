/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes' heartbeats as the followers of a pool of several servers see them (docs/ha.md).
 *
 * Agents heartbeat to the leader only, and the leader does not write a heartbeat to the
 * store (that would be a write per node every few seconds), so a follower, which answers
 * reads from the store, showed each node's last heartbeat as of its last registration or
 * change, and every node as up. The leader now keeps one document in the store, the
 * GP_SRV_SETTING_HEARTBEATS setting: each node's last heartbeat and liveness, rewritten
 * in its tick at most every GP_SRV_HEARTBEATS_WRITE_MS when anything changed. A follower
 * applies it to the state it loads, so its `gpool nodes` shows heartbeats at most that
 * much (and its one-second reload) older than the leader's, and down nodes as down.
 * One statement per period whatever the pool's size (about 30 bytes a node); a server
 * alone writes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/state/heartbeats.h"
#include "util/buf.h"
#include "util/mem.h"

/* What the heartbeats' part keeps on a state (gp_srv_state.heartbeats, NULL until used):
 * when the leader last wrote the document (monotonic ms) and what (a hash); the document
 * loaded from the store, until the state is freed. */
struct gp__srv_heartbeats {
  int64_t written_ms;
  uint64_t sig;
  json_t *loaded;
};

static struct gp__srv_heartbeats *hb(gp_srv_state *s) {
  if (!s->heartbeats) s->heartbeats = gp_xcalloc(1, sizeof *s->heartbeats);
  return s->heartbeats;
}

void gp__srv_heartbeats_free(gp_srv_state *s) {
  if (!s->heartbeats) return;
  json_decref(s->heartbeats->loaded);
  free(s->heartbeats);
  s->heartbeats = NULL;
}

static uint64_t fnv(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

int gp__srv_heartbeats_write(gp_srv_state *s, int64_t now_ms, gp_err *err) {
  if (!s->cfg->ha.on) return 0; /* a server alone: no follower reads it (ticks run on the leader) */
  struct gp__srv_heartbeats *h = hb(s);
  if (h->written_ms && now_ms - h->written_ms < GP_SRV_HEARTBEATS_WRITE_MS) return 0;
  uint64_t sig = 14695981039346656037ULL;
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    sig = fnv(sig, n->name, strlen(n->name) + 1);
    sig = fnv(sig, &n->last_heartbeat, sizeof n->last_heartbeat);
    sig = fnv(sig, &n->alive, sizeof n->alive);
  }
  if (h->written_ms && sig == h->sig) return 0;
  json_t *nodes = json_object();
  for (int i = 0; i < s->n_nodes; i++) {
    const gp_srv_node *n = s->nodes[i];
    json_object_set_new(nodes, n->name,
                        json_pack("[I,b]", (json_int_t)n->last_heartbeat, n->alive));
  }
  json_t *doc = json_pack("{s:o}", "nodes", nodes);
  char *text = json_dumps(doc, JSON_COMPACT);
  json_decref(doc);
  int r = text ? gp_store_put_setting(s->store, GP_SRV_SETTING_HEARTBEATS, text, err) : GP_ENOMEM;
  free(text);
  if (r) return r;
  h->written_ms = now_ms;
  h->sig = sig;
  return 0;
}

void gp__srv_heartbeats_loaded(gp_srv_state *s, const char *doc) {
  struct gp__srv_heartbeats *h = hb(s);
  json_decref(h->loaded);
  json_error_t je;
  h->loaded = doc ? json_loads(doc, 0, &je) : NULL;
}

void gp__srv_heartbeats_apply(gp_srv_state *s, bool liveness) {
  json_t *nodes = s->heartbeats ? json_object_get(s->heartbeats->loaded, "nodes") : NULL;
  if (!json_is_object(nodes)) return;
  for (int i = 0; i < s->n_nodes; i++) {
    gp_srv_node *n = s->nodes[i];
    const json_t *e = json_object_get(nodes, n->name);
    const json_t *at = json_array_get(e, 0), *alive = json_array_get(e, 1);
    /* A node written after it (a registration) is newer than the document. */
    if (!json_is_integer(at) || !json_is_boolean(alive) || json_integer_value(at) < n->last_heartbeat)
      continue;
    n->last_heartbeat = json_integer_value(at);
    if (liveness) n->alive = json_is_true(alive);
    gp__srv_node_changed(s, n);
  }
}
