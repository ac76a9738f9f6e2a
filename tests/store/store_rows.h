/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the store tests that run on both backends and the SQLite-only ones: counting
 * what a load sees, and a transaction that writes a row of every kind. */
#ifndef GP_TESTS_STORE_ROWS_H
#define GP_TESTS_STORE_ROWS_H

#include "store/store.h"
#include "test.h"

typedef struct counts {
  int jobs, events, nodes, allocs, queues, orders, metas;
  int64_t next_order;
  char last_doc[256];
  char last_state[32];
} counts;

static int c_job(void *ctx, const gp_store_job *r) {
  counts *c = ctx;
  c->jobs++;
  snprintf(c->last_doc, sizeof c->last_doc, "%s", r->doc);
  snprintf(c->last_state, sizeof c->last_state, "%s", r->state);
  return 0;
}
static int c_event(void *ctx, const gp_store_event *r) { (void)r; ((counts *)ctx)->events++; return 0; }
static int c_node(void *ctx, const gp_store_node *r) { (void)r; ((counts *)ctx)->nodes++; return 0; }
static int c_alloc(void *ctx, const gp_store_alloc *r) {
  counts *c = ctx;
  CHECK_EQ_INT(0x5, r->gpu_mask);
  CHECK_EQ_STR("n1", r->node);
  c->allocs++;
  return 0;
}
static int c_queue(void *ctx, const gp_store_queue *r) { (void)r; ((counts *)ctx)->queues++; return 0; }
static int c_order(void *ctx, const gp_store_order *r) { (void)r; ((counts *)ctx)->orders++; return 0; }
static int c_meta(void *ctx, const char *k, int64_t v) {
  ((counts *)ctx)->metas++;
  if (strcmp(k, "next_order_id") == 0) ((counts *)ctx)->next_order = v;
  return 0;
}

static counts load_all(gp_store *s) {
  counts c;
  memset(&c, 0, sizeof c);
  gp_store_load_cb cb = {&c, c_job, c_event, c_node, c_alloc, c_queue, c_order, c_meta, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL};
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  return c;
}

static void write_some(gp_store *s) {
  gp_err e = {0};
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j = {1, "pending", "default", "alice", 100, "{\"id\":\"1\"}", NULL};
  CHECK_EQ_INT(0, gp_store_put_job(s, &j, &e));
  gp_store_event ev = {1, 100, "submitted", "{\"event\":\"submitted\"}"};
  CHECK_EQ_INT(0, gp_store_add_event(s, &ev, &e));
  gp_store_node n = {"n1", "{\"name\":\"n1\"}"};
  CHECK_EQ_INT(0, gp_store_put_node(s, &n, &e));
  gp_store_alloc a = {1, 0, "n1", 0x5, 1000, 0, -1};
  CHECK_EQ_INT(0, gp_store_put_alloc(s, &a, &e));
  gp_store_queue q = {"org/a", "{}"};
  CHECK_EQ_INT(0, gp_store_put_queue(s, &q, &e));
  gp_store_order o1 = {7, "n1", "{\"id\":\"o7\"}"}, o2 = {8, "n1", "{\"id\":\"o8\"}"};
  CHECK_EQ_INT(0, gp_store_put_order(s, &o1, &e));
  CHECK_EQ_INT(0, gp_store_put_order(s, &o2, &e));
  CHECK_EQ_INT(0, gp_store_set_meta(s, "next_order_id", 9, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
}

#endif
