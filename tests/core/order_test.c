/* SPDX-License-Identifier: Apache-2.0 */
/* The order in which pending jobs are considered: fair share between queues (re-evaluated
 * after every placement), priority then age inside a queue, and the global orders. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

static void the_queue_furthest_below_its_share_goes_first_after_every_placement(void) {
  /* 4 GPUs, queues a and b deserve 2 each; each has four 1-GPU jobs. Alternating picks
   * give each queue 2: a's third and fourth jobs wait. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 4);
  fx_queue(f, "a", 2, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 2, GP_NO_LIMIT, 1);
  const char *ida[] = {"a1", "a2", "a3", "a4"}, *idb[] = {"b1", "b2", "b3", "b4"};
  for (int i = 0; i < 4; i++) fx_job(f, ida[i], "a", 1, 1);
  for (int i = 0; i < 4; i++) fx_job(f, idb[i], "b", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(fx_started(f, p, "a1") && fx_started(f, p, "a2"));
  CHECK(fx_started(f, p, "b1") && fx_started(f, p, "b2"));
  CHECK(!fx_started(f, p, "a3") && !fx_started(f, p, "b3"));
  CHECK_NEAR(2, fx_plan_queue(p, "a")->allocated, 1e-9);
  CHECK_NEAR(2, fx_plan_queue(p, "b")->allocated, 1e-9);
  CHECK_EQ_INT(2, fx_plan_queue(p, "a")->pending_jobs);
  CHECK_NEAR(2, fx_plan_queue(p, "a")->pending, 1e-9);
  gp_plan_free(p);
  fx_free(f);
}

static void weights_split_what_nobody_deserves(void) {
  /* 8 GPUs, nothing deserved, weights 3:1: a gets 6, b 2. */
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 3);
  fx_queue(f, "b", 0, GP_NO_LIMIT, 1);
  static const char *ids[2][8] = {{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"},
                                  {"b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7"}};
  for (int i = 0; i < 8; i++) fx_job(f, ids[0][i], "a", 1, 1);
  for (int i = 0; i < 8; i++) fx_job(f, ids[1][i], "b", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_NEAR(6, fx_plan_queue(p, "a")->fair_share, 1e-9);
  CHECK_NEAR(6, fx_plan_queue(p, "a")->allocated, 1e-9);
  CHECK_NEAR(2, fx_plan_queue(p, "b")->allocated, 1e-9);
  gp_plan_free(p);
  fx_free(f);
}

static void inside_a_queue_higher_priority_then_older_first(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 2);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "old-batch", "a", 1, 1)->priority_class = "batch";
  fx_job(f, "old-training", "a", 1, 1);
  fx_job(f, "new-inference", "a", 1, 1)->priority_class = "inference";
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(fx_started(f, p, "new-inference"));
  CHECK(fx_started(f, p, "old-training"));
  CHECK(!fx_started(f, p, "old-batch"));
  gp_plan_free(p);
  fx_free(f);
}

static void a_queue_at_its_limit_waits_with_queue_limit(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "org/a", 0, 2, 1);
  fx_job(f, "j1", "org/a", 2, 1);
  fx_job(f, "j2", "org/a", 1, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(fx_started(f, p, "j1"));
  CHECK_EQ_STR("QueueLimit", fx_reason(f, p, "j2"));
  for (int i = 0; i < p->n_pending; i++) CHECK_CONTAINS(p->pending[i].message, "org/a");
  gp_plan_free(p);
  fx_free(f);
}

static void global_orders_ignore_queues(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 1);
  fx_queue(f, "a", 1, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 0, GP_NO_LIMIT, 1);
  gp_job *first = fx_job(f, "b-first", "b", 1, 1);
  first->time_limit = 7200;
  gp_job *shortj = fx_job(f, "a-short", "a", 1, 1);
  shortj->time_limit = 60;
  gp_job *urgent = fx_job(f, "b-urgent", "b", 1, 1);
  urgent->priority_class = "interactive";
  urgent->time_limit = 3600;
  f->pol.order = GP_ORDER_FIFO;
  gp_plan *p = fx_step(f, 10);
  CHECK(fx_started(f, p, "b-first")); /* a deserves the GPU, but FIFO ignores that */
  gp_plan_free(p);
  f->pol.order = GP_ORDER_SJF;
  p = fx_step(f, 10);
  CHECK(fx_started(f, p, "a-short"));
  gp_plan_free(p);
  f->pol.order = GP_ORDER_PRIORITY;
  p = fx_step(f, 10);
  CHECK(fx_started(f, p, "b-urgent"));
  gp_plan_free(p);
  f->pol.order = GP_ORDER_FAIRSHARE;
  p = fx_step(f, 10);
  CHECK(fx_started(f, p, "a-short")); /* a is the queue below its share */
  gp_plan_free(p);
  fx_free(f);
}

static void same_second_submissions_go_by_id(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 1);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  f->pol.order = GP_ORDER_FIFO;
  gp_job *later = fx_job(f, "00000002", "a", 1, 1);
  gp_job *earlier = fx_job(f, "00000001", "a", 1, 1);
  later->submitted_at = earlier->submitted_at = 5;
  gp_plan *p = fx_step(f, 10);
  CHECK(fx_started(f, p, "00000001"));
  gp_plan_free(p);
  fx_free(f);
}

/* The server numbers jobs as they arrive: job 9 came before job 10, though "10" sorts
 * first as text. Both orders (fair share and fifo) start 9, and the tie rule is one total
 * order: numbers by value first, then other ids as text. */
static void same_second_numbered_jobs_go_by_arrival(void) {
  for (int fifo = 0; fifo < 2; fifo++) {
    fx *f = fx_new();
    fx_node(f, "n0", "H100", 1);
    fx_queue(f, "a", 1, GP_NO_LIMIT, 1);
    if (fifo) f->pol.order = GP_ORDER_FIFO;
    gp_job *ten = fx_job(f, "10", "a", 1, 1);
    gp_job *nine = fx_job(f, "9", "a", 1, 1);
    ten->submitted_at = nine->submitted_at = 5;
    gp_plan *p = fx_step(f, 10);
    CHECK(fx_started(f, p, "9"));
    CHECK(!fx_started(f, p, "10"));
    gp_plan_free(p);
    fx_free(f);
  }
  CHECK(gp_order_id_cmp("9", "10") < 0);
  CHECK(gp_order_id_cmp("10", "9") > 0);
  CHECK(gp_order_id_cmp("10", "10") == 0);
  CHECK(gp_order_id_cmp("99999999999999999999", "100000000000000000000") < 0);
  CHECK(gp_order_id_cmp("10", "1a") < 0); /* numbers before other ids */
  CHECK(gp_order_id_cmp("1a", "9") > 0);
  CHECK(gp_order_id_cmp("010", "9") > 0); /* a leading zero: not a job number */
  CHECK(gp_order_id_cmp("job-10", "job-9") < 0);
}

static int class_priority(const char *name) {
  for (int i = 0; i < gp_n_default_priority_classes; i++)
    if (strcmp(gp_default_priority_classes[i].name, name) == 0) return gp_default_priority_classes[i].priority;
  return -1;
}

typedef struct want { int prio, j; gp_time submitted; const char *id; } want;
static int want_cmp(const void *x, const void *y) {
  const want *a = x, *b = y;
  if (a->prio != b->prio) return a->prio > b->prio ? -1 : 1;
  if (a->submitted != b->submitted) return a->submitted < b->submitted ? -1 : 1;
  return strcmp(a->id, b->id);
}

static void hundreds_of_starts_in_one_queue_follow_the_exact_order(void) {
  /* 500 one-GPU jobs in one queue, priorities and submit seconds shuffled (many ties, so
   * ids decide), ids not in view order; 300 GPUs. The core keeps only a window of each
   * queue's best jobs ordered and refills it as it empties: the 300 starts must still come
   * out, in decision order, exactly as a full sort by (priority, age, id) says. */
  static const char *names[75] = {0};
  static char node_names[75][8], ids[500][8];
  static const char *cls[3] = {"batch", "training", "interactive"};
  fx *f = fx_new();
  for (int i = 0; i < 75; i++) {
    snprintf(node_names[i], sizeof node_names[i], "n%02d", i);
    names[i] = node_names[i];
    fx_node(f, names[i], "H100", 4);
  }
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  want w[500];
  uint32_t x = 12345;
  for (int j = 0; j < 500; j++) {
    x = x * 1103515245u + 12345u;
    snprintf(ids[j], sizeof ids[j], "j%03u", (unsigned)((j * 7919) % 500));
    gp_job *job = fx_job(f, ids[j], "a", 1, 1);
    job->priority_class = cls[(x >> 16) % 3];
    job->submitted_at = (gp_time)((x >> 8) % 40);
    w[j] = (want){class_priority(job->priority_class), j, job->submitted_at, ids[j]};
  }
  qsort(w, 500, sizeof *w, want_cmp);
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(300, p->n_starts);
  int bad = -1;
  for (int i = 0; i < p->n_starts && i < 300 && bad < 0; i++)
    if (p->starts[i].job != w[i].j) bad = i;
  CHECK_EQ_INT(-1, bad);
  gp_plan_free(p);
  fx_free(f);
}

GP_TESTS(the_queue_furthest_below_its_share_goes_first_after_every_placement,
         weights_split_what_nobody_deserves, inside_a_queue_higher_priority_then_older_first,
         a_queue_at_its_limit_waits_with_queue_limit, global_orders_ignore_queues,
         same_second_submissions_go_by_id, same_second_numbered_jobs_go_by_arrival, hundreds_of_starts_in_one_queue_follow_the_exact_order)
