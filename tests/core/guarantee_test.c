/* SPDX-License-Identifier: Apache-2.0 */
/* Non-preemptible jobs and the queues' guarantees (src/core/guarantee.c): such a job never
 * borrows GPUs another queue is guaranteed, since reclaim could never take them back, yet
 * uses freely what nobody is guaranteed. */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

/* One node of 8 GPUs that queues a and b deserve half each; b is idle. */
static fx *two_halves(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 4, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 4, GP_NO_LIMIT, 1);
  return f;
}

static int count_started(const fx *f, const gp_plan *p, const char *const *ids, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += fx_started(f, p, ids[i]);
  return k;
}

/* The hole: queue a's inference jobs borrowed b's guaranteed GPUs and b never got them
 * back. Now a's non-preemptible jobs stop at a's 4 GPUs, with the reason saying why. */
static void inference_does_not_borrow_another_queues_guarantee(void) {
  fx *f = two_halves();
  static const char *const ids[] = {"i1", "i2", "i3", "i4", "i5", "i6"};
  for (int i = 0; i < 6; i++) fx_job(f, ids[i], "a", 1, 1)->priority_class = "inference";
  const gp_plan *p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(4, count_started(f, p, ids, 6));
  CHECK_EQ_STR("QueueLimit", fx_reason(f, p, "i5"));
  int j = fx_index(f, "i5");
  const char *msg = NULL;
  for (int i = 0; i < p->n_pending; i++)
    if (p->pending[i].job == j) msg = p->pending[i].message;
  REQUIRE(msg);
  CHECK(strstr(msg, "non-preemptible") != NULL);
  CHECK(strstr(msg, "Queue a ") != NULL);
  fx_free(f);
}

/* The same jobs in a preemptible class borrow all of b's idle GPUs: reclaim can take them
 * back, so borrowing stays what it was. */
static void preemptible_jobs_still_borrow(void) {
  fx *f = two_halves();
  static const char *const ids[] = {"t1", "t2", "t3", "t4", "t5", "t6"};
  for (int i = 0; i < 6; i++) fx_job(f, ids[i], "a", 1, 1)->priority_class = "training";
  const gp_plan *p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(6, count_started(f, p, ids, 6));
  fx_free(f);
}

/* Running non-preemptible jobs count: with 4 inference GPUs already held, a's next one
 * waits, while its training job borrows. */
static void running_jobs_count_toward_the_guarantee(void) {
  fx *f = two_halves();
  fx_running(f, "r1", "a", 4, 0, 0x0f, 10)->priority_class = "interactive";
  fx_job(f, "i1", "a", 1, 1)->priority_class = "inference";
  fx_job(f, "t1", "a", 1, 1)->priority_class = "training";
  const gp_plan *p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "i1"));
  CHECK_EQ_STR("QueueLimit", fx_reason(f, p, "i1"));
  CHECK(fx_started(f, p, "t1"));
  fx_free(f);
}

/* GPUs nobody is guaranteed are free for non-preemptible work: a pool without quotas
 * runs inference on every GPU, and a cluster of 10 GPUs with 8 guaranteed lets a hold
 * 4 + 2 in inference. */
static void what_nobody_is_guaranteed_may_be_used(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 0, GP_NO_LIMIT, 1);
  static const char *const ids[] = {"i1", "i2", "i3", "i4", "i5", "i6", "i7", "i8"};
  for (int i = 0; i < 8; i++) fx_job(f, ids[i], "a", 1, 1)->priority_class = "inference";
  const gp_plan *p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(8, count_started(f, p, ids, 8));
  fx_free(f);

  f = two_halves();
  fx_node(f, "n1", "H100", 2);
  for (int i = 0; i < 8; i++) fx_job(f, ids[i], "a", 1, 1)->priority_class = "inference";
  p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(6, count_started(f, p, ids, 8));
  fx_free(f);
}

/* Inside a parent the same holds between siblings: org guarantees 4 to org/x and 4 to
 * org/y, so org/x's inference stops at 4 even though the cluster has room beyond org's
 * guarantee only for what org keeps (nothing here). */
static void siblings_guarantees_are_kept_inside_a_parent(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "org", 8, GP_NO_LIMIT, 1);
  fx_queue(f, "org/x", 4, GP_NO_LIMIT, 1);
  fx_queue(f, "org/y", 4, GP_NO_LIMIT, 1);
  fx_queue(f, "other", 8, GP_NO_LIMIT, 1);
  static const char *const ids[] = {"i1", "i2", "i3", "i4", "i5", "i6"};
  for (int i = 0; i < 6; i++) fx_job(f, ids[i], "org/x", 1, 1)->priority_class = "inference";
  const gp_plan *p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(4, count_started(f, p, ids, 6));
  fx_free(f);
}

/* A reserved pool is its owner's guarantee: the owner's inference runs there although
 * the owner deserves nothing and another queue is guaranteed the rest of the cluster. */
static void a_pool_is_its_owners_guarantee(void) {
  fx *f = fx_new();
  gp_node *n = fx_node(f, "pool-node", "H100", 4);
  fx_label(f, n, "pool", "infer");
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "infer", 0, GP_NO_LIMIT, 1);
  fx_queue(f, "research", 8, GP_NO_LIMIT, 1);
  f->pools[f->view.n_pools++] = (gp_pool){"infer-pool", "infer", {"pool", "infer"}, true};
  static const char *const ids[] = {"i1", "i2", "i3", "i4", "i5"};
  for (int i = 0; i < 5; i++) fx_job(f, ids[i], "infer", 1, 1)->priority_class = "inference";
  const gp_plan *p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(4, count_started(f, p, ids, 5));
  CHECK_EQ_STR("QueueLimit", fx_reason(f, p, "i5"));
  fx_free(f);
}

/* The orders without quotas (FIFO, priority) know no guarantee to keep. */
static void orders_without_quotas_are_unchanged(void) {
  fx *f = two_halves();
  f->pol.order = GP_ORDER_PRIORITY;
  static const char *const ids[] = {"i1", "i2", "i3", "i4", "i5", "i6"};
  for (int i = 0; i < 6; i++) fx_job(f, ids[i], "a", 1, 1)->priority_class = "inference";
  const gp_plan *p = fx_plan(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(6, count_started(f, p, ids, 6));
  fx_free(f);
}

GP_TESTS(inference_does_not_borrow_another_queues_guarantee, preemptible_jobs_still_borrow,
         running_jobs_count_toward_the_guarantee, what_nobody_is_guaranteed_may_be_used,
         siblings_guarantees_are_kept_inside_a_parent, a_pool_is_its_owners_guarantee,
         orders_without_quotas_are_unchanged)
