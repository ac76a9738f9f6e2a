/* SPDX-License-Identifier: Apache-2.0 */
/* Parked heartbeat polls (src/server/state/waiters.c): a poll is due at its deadline or when its
 * node is given orders newer than the poll's generation, answered once; a node re-polling
 * faster than its polls expire does not grow the index without bound. */
#include "test.h"
#include "server/cycle/parts.h"
#include "server/state/state.h"

static gp_srv_node *add_node(gp_srv_state *s, const char *name) {
  gp_srv_node *n = calloc(1, sizeof *n);
  n->name = strdup(name);
  gp__srv_node_add(s, n);
  return n;
}

static int fake_req; /* a poll's address; the index never looks inside */
#define POLL ((struct gp_srv_req *)&fake_req)

static void polls_are_due_at_their_deadline_or_on_new_orders(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  gp_srv_node *a = add_node(s, "a"), *b = add_node(s, "b");
  gp__srv_waiter_park(s, a, POLL, 3, 1000);
  gp__srv_waiter_park(s, b, POLL, 0, 2000);
  CHECK_EQ_INT(1000, gp__srv_waiter_earliest(s));
  CHECK(gp__srv_waiter_next_due(s, 999, false) == NULL);
  /* Orders for b, newer than its poll's generation: due now, deadline or not. */
  b->orders = calloc(1, sizeof *b->orders);
  b->orders[0].id = 7;
  b->n_orders = 1;
  gp__srv_waiter_orders_added(s, b);
  CHECK(gp__srv_waiter_next_due(s, 999, true) == NULL); /* expiry only: not yet */
  CHECK(gp__srv_waiter_next_due(s, 999, false) == b);
  b->waiter = NULL; /* the caller answers it */
  CHECK(gp__srv_waiter_next_due(s, 999, false) == NULL);
  /* a's deadline passes; b's stale entry is dropped on the way. */
  CHECK(gp__srv_waiter_next_due(s, 1000, true) == a);
  a->waiter = NULL;
  CHECK(gp__srv_waiter_next_due(s, 5000, false) == NULL);
  CHECK(gp__srv_waiter_earliest(s) == INT64_MAX);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

static void re_polling_keeps_the_index_bounded(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  gp_srv_node *a = add_node(s, "a");
  for (int i = 0; i < 100000; i++) gp__srv_waiter_park(s, a, POLL, 0, 100000 + i); /* each replaces the last */
  CHECK(s->waiters.n_heap <= 2 * s->n_nodes + 1025);
  CHECK_EQ_INT(100000 + 99999, gp__srv_waiter_earliest(s));
  CHECK(gp__srv_waiter_next_due(s, 200000, true) == a);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

GP_TESTS(polls_are_due_at_their_deadline_or_on_new_orders, re_polling_keeps_the_index_bounded)
