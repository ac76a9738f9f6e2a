/* SPDX-License-Identifier: Apache-2.0 */
/* The queue tree and its fair share: the arithmetic with awkward numbers (past usage's
 * weighing of the over-quota split too), worked by hand in the comments, and the queue
 * definitions that are refused. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/queue_tree.h"
#include "test.h"

static int q_of(const gp__core_qtree *t, const char *name) {
  int i = gp__core_qtree_find(t, name);
  if (i < 0) fprintf(stderr, "  no queue %s\n", name);
  return i;
}

static void set_demand(gp__core_qtree *t, const char *name, double d) { t->q[q_of(t, name)].demand = d; }
static double fs(const gp__core_qtree *t, const char *name) { return t->q[q_of(t, name)].fair_share; }

static void deserved_above_what_the_parent_has_is_scaled_down(void) {
  /* 10 GPUs; a deserves 8 and b 12, both want 20: 20 deserved > 10, so both are halved. */
  gp_queue qs[] = {{.name = "a", .deserved_gpus = 8, .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "b", .deserved_gpus = 12, .limit_gpus = GP_NO_LIMIT, .weight = 1}};
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 2, NULL) == 0);
  set_demand(&t, "a", 20);
  set_demand(&t, "b", 20);
  gp__core_qtree_fair_share(&t, 10);
  CHECK_NEAR(4, fs(&t, "a"), 1e-9);
  CHECK_NEAR(6, fs(&t, "b"), 1e-9);
  gp__core_qtree_done(&t);
}

static void negative_weights_are_refused_and_zero_is_taken(void) {
  gp_queue qs[] = {{.name = "a", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "b", .limit_gpus = GP_NO_LIMIT, .weight = 0}};
  gp__core_qtree t;
  gp_err e = {0};
  CHECK_EQ_INT(0, gp__core_qtree_build(&t, qs, 2, &e)); /* 0: only what nobody else wants */
  gp__core_qtree_done(&t);
  qs[1].weight = -2;
  CHECK_EQ_INT(GP_EINVAL, gp__core_qtree_build(&t, qs, 2, &e));
  CHECK_EQ_STR("queues[1].weight", e.field);
  qs[1].weight = NAN;
  CHECK_EQ_INT(GP_EINVAL, gp__core_qtree_build(&t, qs, 2, &e));
  gp__core_qtree_done(&t);
}

static void bad_names_duplicates_and_limits_are_refused(void) {
  const char *bad[] = {"", "/a", "a/", "a//b", "..", "a/../b", ".", "a/.", "*", "a\"b",
                       "a b", "a\nb", "a%2fb", "a?b", "\xc3\xa9"};
  int n_bad = (int)(sizeof bad / sizeof bad[0]);
  gp__core_qtree t;
  gp_err e = {0};
  for (int i = 0; i < n_bad; i++) {
    CHECK(!gp_queue_name_ok(bad[i]));
    gp_queue q = {.name = bad[i], .limit_gpus = GP_NO_LIMIT, .weight = 1};
    CHECK_EQ_INT(GP_EINVAL, gp__core_qtree_build(&t, &q, 1, &e));
    CHECK_EQ_STR("queues[0].name", e.field);
  }
  /* What names may hold, and the bound on their length. */
  const char *good[] = {"a", "org/team-1/proj_2", "v1.2", "..a", "a.", "A-Z.0_9"};
  for (int i = 0; i < (int)(sizeof good / sizeof good[0]); i++) CHECK(gp_queue_name_ok(good[i]));
  char longest[GP_MAX_QUEUE_NAME + 2];
  memset(longest, 'q', sizeof longest);
  longest[GP_MAX_QUEUE_NAME] = '\0';
  CHECK(gp_queue_name_ok(longest));
  longest[GP_MAX_QUEUE_NAME] = 'q';
  longest[GP_MAX_QUEUE_NAME + 1] = '\0';
  CHECK(!gp_queue_name_ok(longest));
  gp_queue dup[] = {{.name = "x/y", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                    {.name = "x/y", .limit_gpus = GP_NO_LIMIT, .weight = 1}};
  CHECK_EQ_INT(GP_EINVAL, gp__core_qtree_build(&t, dup, 2, &e));
  CHECK_EQ_STR("queues[1].name", e.field);
  CHECK_CONTAINS(e.message, "twice");
  gp_queue lim = {.name = "a", .limit_gpus = -2, .weight = 1};
  CHECK_EQ_INT(GP_EINVAL, gp__core_qtree_build(&t, &lim, 1, &e));
  CHECK_EQ_STR("queues[0].limit", e.field);
  gp_queue des = {.name = "a", .deserved_gpus = -1, .limit_gpus = GP_NO_LIMIT, .weight = 1};
  CHECK_EQ_INT(GP_EINVAL, gp__core_qtree_build(&t, &des, 1, &e));
  CHECK_EQ_STR("queues[0].deserved", e.field);
  gp__core_qtree_done(&t);
}

static void fractional_demand_counts_as_a_fraction(void) {
  /* 3 GPUs, nothing deserved. a wants half a GPU, b wants 10: a gets its 0.5, b the rest. */
  gp_queue qs[] = {{.name = "a", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "b", .limit_gpus = GP_NO_LIMIT, .weight = 1}};
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 2, NULL) == 0);
  set_demand(&t, "a", 0.5);
  set_demand(&t, "b", 10);
  gp__core_qtree_fair_share(&t, 3);
  CHECK_NEAR(0.5, fs(&t, "a"), 1e-9);
  CHECK_NEAR(2.5, fs(&t, "b"), 1e-9);
  gp__core_qtree_done(&t);
}

static void limits_below_deserved_cap_the_share_and_the_rest_goes_by_weight(void) {
  /* 16 GPUs. a deserves 8 but is limited to 3; b deserves 2; c deserves 0 with weight 3.
   * Deserved first: a 3, b 2, c 0 (5 given, 11 left). By weight 1:3 among b and c: c is
   * saturated at its demand of 5 after 5/3 per weight unit (b +1.667); b takes the 4.333
   * left: a 3, b 8, c 5. */
  gp_queue qs[] = {{.name = "a", .deserved_gpus = 8, .limit_gpus = 3, .weight = 1},
                   {.name = "b", .deserved_gpus = 2, .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "c", .deserved_gpus = 0, .limit_gpus = GP_NO_LIMIT, .weight = 3}};
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 3, NULL) == 0);
  set_demand(&t, "a", 10);
  set_demand(&t, "b", 20);
  set_demand(&t, "c", 5);
  gp__core_qtree_fair_share(&t, 16);
  CHECK_NEAR(3, fs(&t, "a"), 1e-9);
  CHECK_NEAR(8, fs(&t, "b"), 1e-9);
  CHECK_NEAR(5, fs(&t, "c"), 1e-9);
  gp__core_qtree_done(&t);
}

static void unused_quota_is_lent_by_weight(void) {
  /* 10 GPUs: a deserves 6 but wants 2; b deserves 4 and wants 10 -> a 2, b 8. */
  gp_queue qs[] = {{.name = "a", .deserved_gpus = 6, .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "b", .deserved_gpus = 4, .limit_gpus = GP_NO_LIMIT, .weight = 1}};
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 2, NULL) == 0);
  set_demand(&t, "a", 2);
  set_demand(&t, "b", 10);
  gp__core_qtree_fair_share(&t, 10);
  CHECK_NEAR(2, fs(&t, "a"), 1e-9);
  CHECK_NEAR(8, fs(&t, "b"), 1e-9);
  /* Weights 3:1 with nothing deserved and endless demand: 7.5 and 2.5. */
  t.q[q_of(&t, "a")].deserved = 0;
  t.q[q_of(&t, "b")].deserved = 0;
  t.q[q_of(&t, "a")].weight = 3;
  set_demand(&t, "a", 100);
  set_demand(&t, "b", 100);
  gp__core_qtree_fair_share(&t, 10);
  CHECK_NEAR(7.5, fs(&t, "a"), 1e-9);
  CHECK_NEAR(2.5, fs(&t, "b"), 1e-9);
  /* No capacity at all: nobody gets anything. */
  gp__core_qtree_fair_share(&t, 0);
  CHECK_NEAR(0, fs(&t, "a"), 1e-12);
  gp__core_qtree_done(&t);
}

static void three_levels_with_implied_parents(void) {
  /* Leaves only, plus one explicit middle queue. "org" and "org/t2" are implied: org
   * deserves 6 (t1's 6 + t2's 0). 12 GPUs: org gets all 12 (its demand is 21).
   * Inside org: t1 6 deserved + 3 by weight = 9, t2 0 + 3 = 3. Inside t1: p1 2, p2 1 (its
   * demand), then p1 takes the remaining 6: p1 8, p2 1. p3 gets t2's 3. */
  gp_queue qs[] = {
      {.name = "org/t2/p3", .deserved_gpus = 0, .limit_gpus = GP_NO_LIMIT, .weight = 1},
      {.name = "org/t1/p1", .deserved_gpus = 2, .limit_gpus = GP_NO_LIMIT, .weight = 1},
      {.name = "org/t1", .deserved_gpus = 6, .limit_gpus = GP_NO_LIMIT, .weight = 1},
      {.name = "org/t1/p2", .deserved_gpus = 2, .limit_gpus = GP_NO_LIMIT, .weight = 1},
  };
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 4, NULL) == 0);
  REQUIRE(t.n == 6);
  const char *order[] = {"org", "org/t1", "org/t1/p1", "org/t1/p2", "org/t2", "org/t2/p3"};
  for (int i = 0; i < 6; i++) CHECK_EQ_STR(order[i], t.q[i].name);
  CHECK_EQ_INT(-1, t.q[0].view_index);
  CHECK_EQ_INT(2, t.q[1].view_index);
  CHECK_EQ_INT(1, t.q[2].parent);
  CHECK_EQ_INT(2, t.q[2].depth);
  CHECK_NEAR(6, t.q[0].deserved, 1e-9);
  set_demand(&t, "org/t1/p1", 10);
  set_demand(&t, "org/t1/p2", 1);
  set_demand(&t, "org/t2/p3", 10);
  gp__core_qtree_fair_share(&t, 12);
  CHECK_NEAR(21, t.q[0].demand, 1e-9);
  CHECK_NEAR(12, fs(&t, "org"), 1e-9);
  CHECK_NEAR(9, fs(&t, "org/t1"), 1e-9);
  CHECK_NEAR(3, fs(&t, "org/t2"), 1e-9);
  CHECK_NEAR(8, fs(&t, "org/t1/p1"), 1e-9);
  CHECK_NEAR(1, fs(&t, "org/t1/p2"), 1e-9);
  CHECK_NEAR(3, fs(&t, "org/t2/p3"), 1e-9);
  CHECK(gp__core_qtree_is_ancestor(&t, 0, q_of(&t, "org/t2/p3")));
  CHECK(!gp__core_qtree_is_ancestor(&t, 1, q_of(&t, "org/t2/p3")));
  gp__core_qtree_done(&t);
}

static void siblings_sort_depth_first_whatever_the_view_order(void) {
  gp_queue qs[] = {{.name = "a-c", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "a/b", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "a", .limit_gpus = GP_NO_LIMIT, .weight = 1}};
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 3, NULL) == 0);
  REQUIRE(t.n == 3);
  CHECK_EQ_STR("a", t.q[0].name);
  CHECK_EQ_STR("a/b", t.q[1].name);
  CHECK_EQ_STR("a-c", t.q[2].name);
  gp__core_qtree_done(&t);
}

static void awkward_thirds_add_up_to_the_capacity(void) {
  /* 7 GPUs among three equal queues with endless demand: 7/3 each, summing to exactly 7
   * within rounding; and a fourth queue with a limit of 0.1 gets 0.1. */
  gp_queue qs[] = {{.name = "a", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "b", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "c", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "d", .deserved_gpus = 5, .limit_gpus = 0.1, .weight = 1}};
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 4, NULL) == 0);
  for (int i = 0; i < 4; i++) t.q[i].demand = 1e6;
  gp__core_qtree_fair_share(&t, 7);
  CHECK_NEAR(0.1, fs(&t, "d"), 1e-9);
  CHECK_NEAR(6.9 / 3, fs(&t, "a"), 1e-9);
  double sum = 0;
  for (int i = 0; i < 4; i++) sum += t.q[i].fair_share;
  CHECK_NEAR(7, sum, 1e-9);
  gp__core_qtree_done(&t);
}

static void usage_weighs_the_over_quota_split_at_each_level(void) {
  /* 12 GPUs, nothing deserved, every queue wants 12. Top level: x (usage 3 = 1 + 2 of its
   * children) and y (usage 1): x's part 0.75 of the usage, 0.5 of the weights: factor
   * 2^-1.5; y's 2^-0.5. x gets 12 * 2^-1.5 / (2^-1.5 + 2^-0.5) = 12 / 3 = 4, y 8. Inside x,
   * a (usage 1, weight 1) and b (usage 2, weight 3): a's factor 2^-((1/3) / (1/4)),
   * b's 2^-((2/3) / (3/4)). */
  gp_queue qs[] = {{.name = "x/a", .limit_gpus = GP_NO_LIMIT, .weight = 1},
                   {.name = "x/b", .limit_gpus = GP_NO_LIMIT, .weight = 3},
                   {.name = "y", .limit_gpus = GP_NO_LIMIT, .weight = 1}};
  gp__core_qtree t;
  REQUIRE(gp__core_qtree_build(&t, qs, 3, NULL) == 0);
  const char *leaf[] = {"x/a", "x/b", "y"};
  double use[] = {1, 2, 1};
  for (int i = 0; i < 3; i++) {
    set_demand(&t, leaf[i], 12);
    t.q[q_of(&t, leaf[i])].usage = use[i];
  }
  t.q[q_of(&t, "x")].usage = 3; /* (usage.c sums it so) */
  gp__core_qtree_fair_share(&t, 12);
  CHECK_NEAR(4, fs(&t, "x"), 1e-9);
  CHECK_NEAR(8, fs(&t, "y"), 1e-9);
  double wa = exp2(-4.0 / 3), wb = 3 * exp2(-8.0 / 9);
  CHECK_NEAR(4 * wa / (wa + wb), fs(&t, "x/a"), 1e-9);
  CHECK_NEAR(4 * wb / (wa + wb), fs(&t, "x/b"), 1e-9);
  gp__core_qtree_done(&t);

  /* 25 equal queues, one of which did all the using: its factor 2^-25 is floored at 2^-20,
   * so it keeps a sliver (never 0: it is not a weight-0 queue) and the rest share. */
  gp_queue many[25];
  char names[25][8];
  for (int i = 0; i < 25; i++) {
    snprintf(names[i], sizeof names[i], "q%02d", i);
    many[i] = (gp_queue){.name = names[i], .limit_gpus = GP_NO_LIMIT, .weight = 1};
  }
  REQUIRE(gp__core_qtree_build(&t, many, 25, NULL) == 0);
  for (int i = 0; i < 25; i++) t.q[i].demand = 100;
  t.q[0].usage = 5;
  gp__core_qtree_fair_share(&t, 100);
  double floor_w = exp2(-GP__CORE_OVER_FLOOR_EXP);
  CHECK_NEAR(100 * floor_w / (24 + floor_w), t.q[0].fair_share, 1e-12);
  CHECK(t.q[0].fair_share > 0);
  CHECK_NEAR(100 / (24 + floor_w), t.q[1].fair_share, 1e-9);
  CHECK_NEAR(1, gp__core_over_factor(0, 0.5), 0);
  CHECK_NEAR(0.25, gp__core_over_factor(1, 0.5), 1e-15);
  gp__core_qtree_done(&t);
}

GP_TESTS(deserved_above_what_the_parent_has_is_scaled_down, negative_weights_are_refused_and_zero_is_taken,
         bad_names_duplicates_and_limits_are_refused, fractional_demand_counts_as_a_fraction,
         limits_below_deserved_cap_the_share_and_the_rest_goes_by_weight,
         unused_quota_is_lent_by_weight, three_levels_with_implied_parents,
         siblings_sort_depth_first_whatever_the_view_order, awkward_thirds_add_up_to_the_capacity,
         usage_weighs_the_over_quota_split_at_each_level)
