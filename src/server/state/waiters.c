/* SPDX-License-Identifier: Apache-2.0 */
/* Where the parked heartbeat long polls are. An agent's heartbeat may wait at the server
 * for orders (wait_ms); the state thread answers it when orders arrive for its node or its
 * deadline passes. Two small indexes say which nodes to look at, so that a pool of 10,000
 * nodes does not cost 10,000 looks after every batch of requests: the nodes given orders
 * since the last look (each listed once), and a min-heap of parked polls by deadline
 * (an entry whose poll was answered or replaced is stale and dropped when it surfaces). */
#include "server/state/server_int.h"
#include "server/state/state.h"
#include "util/mem.h"

static bool entry_live(const gp_srv_state *s, const gp_srv_deadline *d) {
  if (d->node < 0 || d->node >= s->n_nodes) return false;
  const gp_srv_node *n = s->nodes[d->node];
  return n->waiter && n->waiter_deadline_ms == d->deadline_ms;
}

static void heap_swap(gp_srv_deadline *h, int a, int b) {
  gp_srv_deadline t = h[a];
  h[a] = h[b];
  h[b] = t;
}

static void heap_push(gp_srv_waiters *w, gp_srv_deadline d) {
  gp_xgrow((void **)&w->heap, &w->cap_heap, (size_t)w->n_heap + 1, sizeof *w->heap);
  int i = w->n_heap++;
  w->heap[i] = d;
  while (i > 0 && w->heap[(i - 1) / 2].deadline_ms > w->heap[i].deadline_ms) {
    heap_swap(w->heap, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static void heap_pop(gp_srv_waiters *w) {
  w->heap[0] = w->heap[--w->n_heap];
  for (int i = 0;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < w->n_heap && w->heap[l].deadline_ms < w->heap[m].deadline_ms) m = l;
    if (r < w->n_heap && w->heap[r].deadline_ms < w->heap[m].deadline_ms) m = r;
    if (m == i) break;
    heap_swap(w->heap, i, m);
    i = m;
  }
}

/* Drops stale entries from the top; the top, if any, is then a live poll. */
static void heap_settle(gp_srv_state *s) {
  gp_srv_waiters *w = &s->waiters;
  while (w->n_heap > 0 && !entry_live(s, &w->heap[0])) heap_pop(w);
}

/* Keeps only the live entries (at most one per node), so that an agent re-polling faster
 * than its polls expire cannot grow the heap without bound. */
static void heap_compact(gp_srv_state *s) {
  gp_srv_waiters *w = &s->waiters;
  int n = 0;
  for (int i = 0; i < w->n_heap; i++)
    if (entry_live(s, &w->heap[i])) w->heap[n++] = w->heap[i];
  w->n_heap = 0;
  for (int i = 0; i < n; i++) heap_push(w, w->heap[i]);
}

void gp__srv_waiter_park(gp_srv_state *s, gp_srv_node *n, struct gp_srv_req *r, int64_t gen,
                         int64_t deadline_ms) {
  n->waiter = r;
  n->waiter_gen = gen;
  n->waiter_deadline_ms = deadline_ms;
  if (s->waiters.n_heap > 2 * s->n_nodes + 1024) heap_compact(s);
  heap_push(&s->waiters, (gp_srv_deadline){deadline_ms, n->index});
}

void gp__srv_waiter_orders_added(gp_srv_state *s, gp_srv_node *n) {
  if (n->waiter_woken) return;
  n->waiter_woken = true;
  gp_srv_waiters *w = &s->waiters;
  gp_xgrow((void **)&w->woken, &w->cap_woken, (size_t)w->n_woken + 1, sizeof *w->woken);
  w->woken[w->n_woken++] = n->index;
}

int64_t gp__srv_waiter_earliest(gp_srv_state *s) {
  heap_settle(s);
  return s->waiters.n_heap > 0 ? s->waiters.heap[0].deadline_ms : INT64_MAX;
}

gp_srv_node *gp__srv_waiter_next_due(gp_srv_state *s, int64_t now_ms, bool expire_only) {
  gp_srv_waiters *w = &s->waiters;
  while (!expire_only && w->n_woken > 0) {
    int k = w->woken[--w->n_woken];
    if (k < 0 || k >= s->n_nodes) continue;
    gp_srv_node *n = s->nodes[k];
    n->waiter_woken = false;
    if (n->waiter && n->n_orders > 0 && n->orders[n->n_orders - 1].id > n->waiter_gen) return n;
  }
  heap_settle(s);
  if (w->n_heap == 0 || w->heap[0].deadline_ms > now_ms) return NULL;
  gp_srv_node *n = s->nodes[w->heap[0].node];
  heap_pop(w);
  return n;
}

void gp__srv_waiters_free(gp_srv_waiters *w) {
  free(w->woken);
  free(w->heap);
}

void gp__srv_waiter_node_gone(gp_srv_node *n) {
  if (!n->waiter) return;
  gp_srv_req *w = n->waiter;
  n->waiter = NULL;
  w->parked = false;
  gp__srv_reply_error(w, 404, "not_found", "node", "node %s was deleted; register again", n->name);
  gp__srv_req_resume(w);
}
