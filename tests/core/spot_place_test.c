/* SPDX-License-Identifier: Apache-2.0 */
/* Spot-aware placement per queue (src/core/spot.c): a queue's preference (prefer, avoid,
 * never), its cap on the share of its GPUs on spot, what a job kept off spot is told, and
 * that a memo step plans exactly as a full one with these settings. */
#include "fixture.h"

/* Node "od" (view index 0, on-demand) and "spot" (1), 8 GPUs each. */
static fx *two_nodes(gp_spot_pref pref, double share) {
  fx *f = fx_new();
  fx_node(f, "od", "H100", 8);
  fx_node(f, "spot", "H100", 8)->capacity = GP_CAP_SPOT;
  gp_queue *q = fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  q->spot = pref;
  q->spot_share = share;
  return f;
}

static gp_job *spot_job(fx *f, const char *id, int gpus, int tasks) {
  gp_job *j = fx_job(f, id, "a", gpus, tasks);
  j->req.allow_spot = true;
  return j;
}

static int node_of(const fx *f, const gp_plan *p, const char *id) {
  const gp_plan_start *s = fx_start(f, p, id);
  return s ? s->placements[0].node : -1;
}

static const char *message_of(const fx *f, const gp_plan *p, const char *id) {
  int j = fx_index(f, id);
  for (int i = 0; p && i < p->n_pending; i++)
    if (p->pending[i].job == j) return p->pending[i].message;
  return "-";
}

static int on_spot(const fx *f, const gp_plan *p) {
  int n = 0;
  for (int i = 0; p && i < p->n_starts; i++)
    for (int t = 0; t < p->starts[i].n_placements; t++)
      n += f->nodes[p->starts[i].placements[t].node].capacity == GP_CAP_SPOT;
  return n;
}

static void prefer_puts_a_job_on_spot_when_both_fit(void) {
  /* Neutral: bin-packing's tie goes to the lowest index, the on-demand node. */
  fx *f = two_nodes(GP_SPOT_NEUTRAL, 0);
  spot_job(f, "j", 1, 1);
  const gp_plan *p = fx_plan(f, 10);
  CHECK_EQ_INT(0, node_of(f, p, "j"));
  f->queues[0].spot = GP_SPOT_PREFER;
  p = fx_plan(f, 10);
  CHECK_EQ_INT(1, node_of(f, p, "j"));
  /* A gang goes there whole (7 GPUs left there). */
  spot_job(f, "g", 3, 2);
  p = fx_plan(f, 10);
  REQUIRE(fx_start(f, p, "g"));
  CHECK_EQ_INT(1, fx_start(f, p, "g")->placements[0].node);
  CHECK_EQ_INT(1, fx_start(f, p, "g")->placements[1].node);
  fx_free(f);
}

static void prefer_still_runs_off_spot_when_spot_is_full(void) {
  fx *f = two_nodes(GP_SPOT_PREFER, 0);
  fx_running(f, "r", "a", 8, 1, 0xff, 0)->req.allow_spot = true;
  spot_job(f, "j", 2, 1);
  spot_job(f, "k", 2, 1); /* its shape's first try failed for j: k goes straight on */
  spot_job(f, "l", 2, 1);
  const gp_plan *p = fx_plan(f, 10);
  CHECK_EQ_INT(0, node_of(f, p, "j"));
  CHECK_EQ_INT(0, node_of(f, p, "k"));
  CHECK_EQ_INT(0, node_of(f, p, "l"));
  fx_free(f);
}

static void avoid_takes_spot_only_when_nothing_else_fits(void) {
  fx *f = fx_new();
  fx_node(f, "spot", "H100", 8)->capacity = GP_CAP_SPOT; /* lowest index: neutral's pick */
  fx_node(f, "od", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1)->spot = GP_SPOT_AVOID;
  spot_job(f, "j", 1, 1);
  const gp_plan *p = fx_plan(f, 10);
  CHECK_EQ_INT(1, node_of(f, p, "j"));
  /* The on-demand node full: spot is what fits now. */
  fx_running(f, "r", "a", 8, 1, 0xff, 0);
  p = fx_plan(f, 10);
  CHECK_EQ_INT(0, node_of(f, p, "j"));
  fx_free(f);
}

static void never_keeps_jobs_off_spot_and_says_so(void) {
  fx *f = two_nodes(GP_SPOT_NEVER, 0);
  fx_running(f, "r", "a", 8, 0, 0xff, 0);
  spot_job(f, "j", 1, 1);
  spot_job(f, "k", 1, 1); /* same shape: the step settles it without placing it again */
  const gp_plan *p = fx_plan(f, 10);
  CHECK(!fx_started(f, p, "j"));
  CHECK(!fx_started(f, p, "k"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "j"));
  CHECK_CONTAINS(message_of(f, p, "j"), "does not run jobs on spot");
  CHECK_CONTAINS(message_of(f, p, "k"), "does not run jobs on spot");
  fx_free(f);
}

static void never_makes_a_spot_only_fleet_one_that_cannot_run_it(void) {
  fx *f = fx_new();
  fx_node(f, "spot", "H100", 8)->capacity = GP_CAP_SPOT;
  fx_queue(f, "org", 0, GP_NO_LIMIT, 1)->spot = GP_SPOT_NEVER;
  fx_queue(f, "org/a", 0, GP_NO_LIMIT, 1); /* inherits never from its parent */
  fx_job(f, "j", "org/a", 1, 1)->req.allow_spot = true;
  const gp_plan *p = fx_plan(f, 10);
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "j"));
  /* The leaf's own setting wins over its parent's. */
  f->queues[1].spot = GP_SPOT_PREFER;
  p = fx_plan(f, 10);
  CHECK(fx_started(f, p, "j"));
  fx_free(f);
}

static void never_waits_for_no_spot_template(void) {
  fx *f = fx_new();
  fx_node(f, "od", "H100", 2);
  static gp_template tmpl[1];
  tmpl[0] = (gp_template){.node = {.name = "spot8", .model = "H100", .n_gpus = 8,
                                   .gpu_mem_mib = 81920, .capacity = GP_CAP_SPOT},
                          .max_nodes = 2};
  f->view.templates = tmpl;
  f->view.n_templates = 1;
  gp_queue *q = fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  spot_job(f, "j", 4, 1);
  /* A spot template could hold it: it waits for a node to be made. */
  const gp_plan *p = fx_plan(f, 10);
  CHECK_EQ_STR("-", fx_ended(f, p, "j"));
  CHECK(!fx_started(f, p, "j"));
  /* Its queue refuses spot: no node it may use could ever hold it. */
  q->spot = GP_SPOT_NEVER;
  p = fx_plan(f, 10);
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "j"));
  fx_free(f);
}

static void allow_spot_false_never_lands_on_spot(void) {
  fx *f = two_nodes(GP_SPOT_PREFER, 0);
  fx_job(f, "j", "a", 1, 1); /* allow_spot false */
  const gp_plan *p = fx_plan(f, 10);
  CHECK_EQ_INT(0, node_of(f, p, "j"));
  fx_running(f, "r", "a", 8, 0, 0xff, 0);
  p = fx_plan(f, 10);
  CHECK(!fx_started(f, p, "j"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "j"));
  CHECK(!strstr(message_of(f, p, "j"), "spot")); /* its own choice, not its queue's */
  fx_free(f);
}

static void share_caps_the_queues_gpus_on_spot(void) {
  /* Share 0.5, 4 one-GPU jobs, room for all on spot and for 2 elsewhere: two go to spot,
   * two elsewhere, whether the queue prefers spot or not. */
  gp_spot_pref prefs[] = {GP_SPOT_NEUTRAL, GP_SPOT_PREFER};
  for (int k = 0; k < 2; k++) {
    fx *f = two_nodes(prefs[k], 0.5);
    f->nodes[0].n_gpus = 2;
    const char *ids[] = {"j1", "j2", "j3", "j4"};
    for (int i = 0; i < 4; i++) spot_job(f, ids[i], 1, 1);
    const gp_plan *p = fx_plan(f, 10);
    CHECK_EQ_INT(4, p->n_starts);
    CHECK_EQ_INT(2, on_spot(f, p));
    CHECK_EQ_INT(0, node_of(f, p, "j1")); /* the first GPU: 1 on spot would be all of 1 */
    fx_free(f);
  }
  /* Without the share, a preferring queue puts all four there. */
  fx *f = two_nodes(GP_SPOT_PREFER, 0);
  for (int i = 0; i < 4; i++) spot_job(f, (const char *[]){"j1", "j2", "j3", "j4"}[i], 1, 1);
  CHECK_EQ_INT(4, on_spot(f, fx_plan(f, 10)));
  fx_free(f);
}

static void a_job_the_cap_keeps_off_spot_waits_and_says_why(void) {
  fx *f = two_nodes(GP_SPOT_PREFER, 0.5);
  fx_running(f, "r", "a", 7, 0, 0x7f, 0); /* one on-demand GPU left */
  const char *ids[] = {"j1", "j2", "j3", "j4"};
  for (int i = 0; i < 4; i++) spot_job(f, ids[i], 1, 1);
  const gp_plan *p = fx_plan(f, 10);
  /* 7 held, 0 on spot: j1 to spot (1 <= 0.5 x 8), j2 to spot (2 <= 4.5), j3 spot (3 <=
   * 5), j4 spot (4 <= 5.5): the running job counts in what the queue holds. */
  CHECK_EQ_INT(4, on_spot(f, p));
  fx_free(f);

  f = two_nodes(GP_SPOT_PREFER, 0.5);
  f->nodes[1].n_gpus = 16; /* room on spot for all of them */
  for (int g = 8; g < 16; g++) f->gpus[1][g].nvlink_domain = -1;
  fx_running(f, "r", "a", 7, 0, 0x7f, 0);
  gp_job *rs = fx_running(f, "rs", "a", 7, 1, 0x7f, 0); /* 7 of 14 on spot already */
  rs->req.allow_spot = true;
  for (int i = 0; i < 4; i++) spot_job(f, ids[i], 1, 1);
  p = fx_plan(f, 10);
  /* j1: 8 > 0.5 x 15 keeps it off spot: the last on-demand GPU. Then 8 <= 0.5 x 16: j2 on
   * spot; j3 (9 > 8.5) and j4 (9 > 8.5) are kept off spot, where they would fit. */
  CHECK_EQ_INT(0, node_of(f, p, "j1"));
  CHECK_EQ_INT(1, node_of(f, p, "j2"));
  CHECK(!fx_started(f, p, "j3"));
  CHECK(!fx_started(f, p, "j4"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "j3"));
  CHECK_CONTAINS(message_of(f, p, "j3"), "over its share of GPUs on spot");
  CHECK_CONTAINS(message_of(f, p, "j4"), "over its share of GPUs on spot");
  const gp_plan_queue *q = fx_plan_queue(p, "a");
  REQUIRE(q);
  CHECK_NEAR(16, q->allocated, 1e-9);
  fx_free(f);
}

static void a_parents_share_caps_its_sub_queues_together(void) {
  fx *f = fx_new();
  fx_node(f, "od", "H100", 8);
  fx_node(f, "spot", "H100", 8)->capacity = GP_CAP_SPOT;
  fx_queue(f, "org", 0, GP_NO_LIMIT, 1)->spot_share = 0.5;
  fx_queue(f, "org/a", 0, GP_NO_LIMIT, 1)->spot = GP_SPOT_PREFER;
  fx_queue(f, "org/b", 0, GP_NO_LIMIT, 1)->spot = GP_SPOT_PREFER;
  fx_running(f, "ra", "org/a", 2, 0, 0x3, 0);
  gp_job *rb = fx_running(f, "rb", "org/b", 2, 1, 0x3, 0); /* org: 2 of 4 on spot */
  rb->req.allow_spot = true;
  fx_job(f, "a1", "org/a", 1, 1)->req.allow_spot = true;
  fx_job(f, "b1", "org/b", 1, 1)->req.allow_spot = true;
  const gp_plan *p = fx_plan(f, 10);
  /* The first of them: 3 > 0.5 x 5, off spot; the second: 3 <= 0.5 x 6, on spot. Each
   * leaf alone would have let both on spot (org/a holds none there). */
  CHECK(fx_started(f, p, "a1") && fx_started(f, p, "b1"));
  CHECK_EQ_INT(1, on_spot(f, p));
  fx_free(f);
}

static void one_queues_cap_does_not_hold_back_anothers(void) {
  fx *f = fx_new();
  f->pol.order = GP_ORDER_PRIORITY; /* oldest first: x's job is tried before y's */
  f->pol.backfill = true;
  fx_node(f, "od", "H100", 2);
  fx_node(f, "spot", "H100", 8)->capacity = GP_CAP_SPOT;
  fx_queue(f, "x", 0, GP_NO_LIMIT, 1)->spot_share = 0.5;
  fx_queue(f, "y", 0, GP_NO_LIMIT, 1)->spot_share = 0.5;
  fx_running(f, "x1", "x", 1, 0, 0x1, 0);
  fx_running(f, "y1", "y", 1, 0, 0x2, 0); /* the on-demand node is full */
  fx_running(f, "x2", "x", 1, 1, 0x1, 0)->req.allow_spot = true; /* x: 1 of 2 on spot */
  fx_job(f, "xj", "x", 1, 1)->req.allow_spot = true;
  fx_job(f, "yj", "y", 1, 1)->req.allow_spot = true;
  const gp_plan *p = fx_plan(f, 10);
  /* xj: 2 > 0.5 x 3, and no room off spot: it waits. The same request in y, whose queue
   * holds nothing on spot, is not held back by that failure. */
  CHECK(!fx_started(f, p, "xj"));
  CHECK_CONTAINS(message_of(f, p, "xj"), "over its share of GPUs on spot");
  CHECK_EQ_INT(1, node_of(f, p, "yj"));
  fx_free(f);
}

/* Starts of a plan become running jobs of the view, with new revs. */
static void apply_starts(fx *f, const gp_plan *p, uint64_t *revs, uint64_t *rev, gp_time now) {
  for (int i = 0; i < p->n_starts; i++) {
    int j = p->starts[i].job;
    gp_job *job = &f->jobs[j];
    job->state = GP_JOB_RUNNING;
    job->started_at = now;
    job->n_placements = 0;
    for (int t = 0; t < p->starts[i].n_placements; t++)
      f->placements[j][job->n_placements++] = p->starts[i].placements[t];
    revs[j] = ++*rev;
  }
}

static void a_memo_step_plans_as_a_full_one(void) {
  fx *f = fx_new();
  for (int i = 0; i < 6; i++) {
    static const char *names[] = {"n0", "n1", "n2", "n3", "n4", "n5"};
    gp_node *n = fx_node(f, names[i], "H100", 4);
    if (i % 2) n->capacity = GP_CAP_SPOT;
  }
  gp_spot_pref prefs[] = {GP_SPOT_PREFER, GP_SPOT_AVOID, GP_SPOT_NEVER, GP_SPOT_NEUTRAL};
  const char *qn[] = {"org/p", "org/v", "org/n", "lab/s"};
  for (int q = 0; q < 4; q++) {
    gp_queue *qq = fx_queue(f, qn[q], 2, GP_NO_LIMIT, 1);
    qq->spot = prefs[q];
    qq->spot_share = q == 3 ? 0.5 : q == 0 ? 0.75 : 0;
  }
  static uint64_t revs[FX_MAX];
  uint64_t rev = 0;
  static char ids[64][8];
  for (int j = 0; j < 40; j++) {
    snprintf(ids[j], sizeof ids[j], "j%02d", j);
    gp_job *job = fx_job(f, ids[j], qn[j % 4], 1 + j % 3, 1 + (j % 5 == 0));
    job->req.allow_spot = j % 7 != 0;
    job->time_limit = 100 + 10 * j;
    revs[j] = ++rev;
  }
  f->view.rev = 1;
  f->view.job_revs = revs;
  gp_sched_memo *memo = gp_sched_memo_new();
  gp_time now = 10;
  int spot_starts = 0;
  for (int step = 0; step < 6; step++, now += 50) {
    gp_plan *plain = NULL, *kept = NULL;
    REQUIRE(gp_sched_step(&f->pol, &f->view, now, &plain, &f->err) == 0);
    REQUIRE(gp_sched_step_memo(memo, &f->pol, &f->view, now, 0, &kept, &f->err) == 0);
    CHECK(gp_plan_equal(plain, kept));
    spot_starts += on_spot(f, plain);
    apply_starts(f, plain, revs, &rev, now);
    /* Jobs end after their limits: free room for the next step. */
    for (int j = 0; j < f->view.n_jobs; j++) {
      gp_job *job = &f->jobs[j];
      if (job->state == GP_JOB_RUNNING && job->started_at + job->time_limit <= now + 50) {
        job->state = GP_JOB_COMPLETED;
        revs[j] = ++rev;
      }
    }
    gp_plan_free(plain);
    gp_plan_free(kept);
  }
  CHECK(spot_starts > 0);
  /* No job of the never queue ever ran on spot. */
  for (int j = 0; j < f->view.n_jobs; j++)
    if (strcmp(f->jobs[j].queue, "org/n") == 0)
      for (int t = 0; t < f->jobs[j].n_placements; t++)
        CHECK(f->nodes[f->jobs[j].placements[t].node].capacity != GP_CAP_SPOT);
  gp_sched_memo_free(memo);
  fx_free(f);
}

GP_TESTS(prefer_puts_a_job_on_spot_when_both_fit, prefer_still_runs_off_spot_when_spot_is_full,
         avoid_takes_spot_only_when_nothing_else_fits, never_keeps_jobs_off_spot_and_says_so,
         never_makes_a_spot_only_fleet_one_that_cannot_run_it, never_waits_for_no_spot_template,
         allow_spot_false_never_lands_on_spot,
         share_caps_the_queues_gpus_on_spot, a_job_the_cap_keeps_off_spot_waits_and_says_why,
         a_parents_share_caps_its_sub_queues_together, one_queues_cap_does_not_hold_back_anothers,
         a_memo_step_plans_as_a_full_one)
