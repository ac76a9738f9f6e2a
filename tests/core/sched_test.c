/* SPDX-License-Identifier: Apache-2.0 */
/* gp_sched_step end to end on small clusters: what a user sees in the plan. */
#include "fixture.h"

static void two_jobs_start_on_one_node_by_binpacking(void) {
  fx *f = fx_new();
  fx_node(f, "n1", "H100", 8);
  fx_node(f, "n2", "H100", 8);
  fx_queue(f, "org/a", 8, GP_NO_LIMIT, 1);
  fx_job(f, "j1", "org/a", 2, 1);
  fx_job(f, "j2", "org/a", 4, 1);
  gp_plan *p = fx_step(f, 100);
  REQUIRE(p);
  CHECK_EQ_INT(2, p->n_starts);
  const gp_plan_start *s1 = fx_start(f, p, "j1"), *s2 = fx_start(f, p, "j2");
  REQUIRE(s1 && s2);
  CHECK_EQ_INT(s1->placements[0].node, s2->placements[0].node);
  CHECK_EQ_INT(0x3, s1->placements[0].gpu_mask);
  CHECK_EQ_INT(0x3c, s2->placements[0].gpu_mask);
  const gp_plan_queue *q = fx_plan_queue(p, "org/a");
  REQUIRE(q);
  CHECK_NEAR(6, q->allocated, 1e-9);
  REQUIRE(fx_plan_queue(p, "org"));
  CHECK_EQ_INT(-1, fx_plan_queue(p, "org")->parent);
  gp_plan_free(p);
  fx_free(f);
}


/* ---- validation ---- */

static void an_inconsistent_snapshot_is_an_error_naming_the_field(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "ok", "a", 1, 1);
  gp_job *r = fx_job(f, "ghost-node", "a", 1, 1);
  fx_run(f, r, 0, 0x1, 0);
  f->placements[1][0].node = 7;
  gp_plan *p = NULL;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_sched_step(&f->pol, &f->view, 10, &p, &e));
  CHECK(p == NULL);
  CHECK_EQ_STR("jobs[1].placements[0].node", e.field);
  f->placements[1][0].node = 0;
  f->placements[1][0].gpu_mask = 1u << 9;
  CHECK_EQ_INT(GP_EINVAL, gp_sched_step(&f->pol, &f->view, 10, &p, &e));
  CHECK_EQ_STR("jobs[1].placements[0].gpu_ids", e.field);
  CHECK_CONTAINS(e.message, "out of range");
  f->placements[1][0].gpu_mask = 1;
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  CHECK_EQ_INT(GP_EINVAL, gp_sched_step(&f->pol, &f->view, 10, &p, &e));
  CHECK_EQ_STR("queues[1].name", e.field);
  f->view.n_queues = 1;
  fx_node(f, "n0", "H100", 8);
  CHECK_EQ_INT(GP_EINVAL, gp_sched_step(&f->pol, &f->view, 10, &p, &e));
  CHECK_EQ_STR("nodes[1].name", e.field);
  f->view.n_nodes = 1;
  f->pools[f->view.n_pools++] = (gp_pool){"p", "nope", {"k", "v"}, true};
  CHECK_EQ_INT(GP_EINVAL, gp_sched_step(&f->pol, &f->view, 10, &p, &e));
  CHECK_EQ_STR("pools[0].queue", e.field);
  f->view.n_pools = 0;
  p = fx_step(f, 10);
  CHECK(p != NULL);
  gp_plan_free(p);
  fx_free(f);
}

static void impossible_or_unknown_requests_end_with_a_reason(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "A100", 8)->state = GP_NODE_DOWN;
  fx_node(f, "n2", "H200", 8)->state = GP_NODE_DRAIN;
  fx_queue(f, "org/a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "no-queue", "org/zzz", 1, 1);
  fx_job(f, "parent-queue", "org", 1, 1);
  fx_job(f, "no-class", "org/a", 1, 1)->priority_class = "vip";
  fx_models(f, fx_job(f, "b200", "org/a", 1, 1), "B200");
  fx_job(f, "too-big", "org/a", 9, 1);
  fx_job(f, "bad-fraction", "org/a", 0, 1)->req.gpu_milli = 1500;
  fx_models(f, fx_job(f, "a100-down", "org/a", 1, 1), "A100");
  gp_job *dr = fx_job(f, "h200-drained", "org/a", 1, 1);
  fx_models(f, dr, "H200");
  /* A gang that takes any of the three models: 3 nodes exist, 1 is up. Without the list
   * its tasks would need one model, and no model has 3 nodes. */
  gp_job *gang = fx_job(f, "gang-down", "org/a", 8, 3);
  fx_models(f, gang, "H100");
  fx_models(f, gang, "A100");
  fx_models(f, gang, "H200");
  fx_job(f, "gang-one-model", "org/a", 8, 3);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_STR("InvalidRequest", fx_ended(f, p, "no-queue"));
  CHECK_EQ_STR("InvalidRequest", fx_ended(f, p, "parent-queue"));
  CHECK_EQ_STR("InvalidRequest", fx_ended(f, p, "no-class"));
  CHECK_EQ_STR("GpuModelUnknown", fx_ended(f, p, "b200"));
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "too-big"));
  CHECK_EQ_STR("InvalidRequest", fx_ended(f, p, "bad-fraction"));
  CHECK_EQ_STR("GpuModelUnavailable", fx_reason(f, p, "a100-down"));
  CHECK_EQ_STR("GpuModelUnavailable", fx_reason(f, p, "h200-drained"));
  CHECK_EQ_STR("NoMatchingNodes", fx_reason(f, p, "gang-down"));
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(f, p, "gang-one-model"));
  for (int i = 0; i < p->n_ended; i++)
    if (p->ended[i].job == fx_index(f, "b200")) CHECK_CONTAINS(p->ended[i].message, "B200");
  gp_plan_free(p);
  fx_free(f);
}

static void an_empty_fleet_keeps_jobs_waiting(void) {
  fx *f = fx_new();
  fx_queue(f, "a", 0, GP_NO_LIMIT, 1);
  fx_job(f, "j", "a", 1, 1);
  fx_models(f, fx_job(f, "m", "a", 1, 1), "H100");
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_ended);
  CHECK_EQ_STR("NoMatchingNodes", fx_reason(f, p, "j"));
  CHECK_EQ_STR("GpuModelUnavailable", fx_reason(f, p, "m"));
  gp_plan_free(p);
  fx_free(f);
}

/* ---- the queues' figures ---- */

/* A parent's figures are its subtree's jobs. GPUs asked add up exactly when they are
 * whole; with fractions they add up in the jobs' order, the way one running sum over the
 * jobs would (0.1 + 0.1 + 0.4 is 0.6000000000000001 that way, 0.6 leaf by leaf). */
static void a_queue_counts_the_jobs_of_its_subtree_in_their_order(void) {
  fx *f = fx_new();
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "org/a", 1, GP_NO_LIMIT, 1);
  fx_queue(f, "org/b", 1, GP_NO_LIMIT, 1);
  fx_queue(f, "c", 1, GP_NO_LIMIT, 1);
  fx_run(f, fx_job(f, "r", "org/a", 8, 1), 0, 0xff, 0); /* the only node is full */
  fx_job(f, "w1", "org/b", 2, 1);
  fx_job(f, "w2", "org/a", 3, 2);
  fx_job(f, "w3", "c", 3, 1);
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK_EQ_INT(8, (int)fx_plan_queue(p, "org")->pending);
  CHECK_EQ_INT(2, fx_plan_queue(p, "org")->pending_jobs);
  CHECK_EQ_INT(1, fx_plan_queue(p, "org")->running_jobs);
  CHECK_EQ_INT(6, (int)fx_plan_queue(p, "org/a")->pending);
  CHECK_EQ_INT(3, (int)fx_plan_queue(p, "c")->pending);
  CHECK_EQ_INT(0, fx_plan_queue(p, "c")->running_jobs);
  gp_plan_free(p);

  f->view.n_jobs = 1; /* r */
  fx_job(f, "f1", "org/a", 0, 1)->req.gpu_milli = 100;
  fx_job(f, "f2", "org/b", 0, 1)->req.gpu_milli = 100;
  fx_job(f, "f3", "org/a", 0, 1)->req.gpu_milli = 400;
  p = fx_step(f, 10);
  REQUIRE(p);
  volatile double org = 0, a = 0, b = 0; /* (volatile: summed at run time, in this order) */
  org += 0.1, a += 0.1;
  org += 0.1, b += 0.1;
  org += 0.4, a += 0.4;
  CHECK(fx_plan_queue(p, "org")->pending == org);
  CHECK(fx_plan_queue(p, "org/a")->pending == a);
  CHECK(fx_plan_queue(p, "org/b")->pending == b);
  CHECK(org != 0.6); /* (what adding leaf by leaf gives) */
  CHECK_EQ_INT(3, fx_plan_queue(p, "org")->pending_jobs);
  gp_plan_free(p);
  fx_free(f);
}

/* ---- every job accounted for, early stop ---- */

static void every_pending_job_gets_exactly_one_outcome(void) {
  fx *f = fx_new();
  for (int i = 0; i < 4; i++) fx_node(f, i < 2 ? (i ? "n1" : "n0") : (i == 2 ? "n2" : "n3"), i % 2 ? "A100" : "H100", 8);
  fx_queue(f, "a", 8, GP_NO_LIMIT, 1);
  fx_queue(f, "b", 8, 12, 2);
  static char ids[300][8];
  for (int j = 0; j < 300; j++) {
    snprintf(ids[j], sizeof ids[j], "j%03d", j);
    gp_job *job = fx_job(f, ids[j], j % 3 ? "a" : "b", 1 + j % 8, 1 + (j % 17 == 0));
    if (j % 5 == 0) fx_models(f, job, j % 2 ? "A100" : "H100");
    if (j % 11 == 0) job->state = GP_JOB_HELD;
    if (j % 13 == 0) job->time_limit = 600;
  }
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  int outcomes = p->n_starts + p->n_pending + p->n_ended;
  CHECK_EQ_INT(300, outcomes);
  for (int i = 0; i < p->n_pending; i++) {
    CHECK(p->pending[i].message && *p->pending[i].message);
    if (i) CHECK(p->pending[i].job > p->pending[i - 1].job); /* view order, no duplicates */
  }
  gp_plan_free(p);
  fx_free(f);
}

static void a_failed_big_request_does_not_stop_smaller_ones(void) {
  fx *f = fx_new();
  fx_node(f, "h", "H100", 8);
  fx_node(f, "a", "A100", 8);
  fx_queue(f, "q", 0, GP_NO_LIMIT, 1);
  f->pol.backfill = false;
  fx_run(f, fx_job(f, "r", "q", 6, 1), 0, 0x3f, 0);
  fx_run(f, fx_job(f, "r2", "q", 8, 1), 1, 0xff, 0);
  fx_job(f, "four", "q", 4, 1);                      /* fails: H100 node has 2 free */
  fx_models(f, fx_job(f, "a100", "q", 1, 1), "A100"); /* fails: A100 node is full */
  fx_job(f, "two", "q", 2, 1);                       /* smaller: still placed */
  fx_job(f, "one", "q", 1, 1);                       /* nothing left */
  gp_plan *p = fx_step(f, 10);
  REQUIRE(p);
  CHECK(fx_started(f, p, "two"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "four"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "a100"));
  CHECK_EQ_STR("Resources", fx_reason(f, p, "one"));
  gp_plan_free(p);
  fx_free(f);
}

/* ---- determinism ---- */

static void plan_text(const gp_plan *p, char *buf, size_t size) {
  size_t o = 0;
#define OUT(...) o += (size_t)snprintf(buf + o, o < size ? size - o : 0, __VA_ARGS__)
  for (int i = 0; i < p->n_starts; i++) {
    OUT("S%d:", p->starts[i].job);
    for (int t = 0; t < p->starts[i].n_placements; t++)
      OUT("%d/%x ", p->starts[i].placements[t].node, p->starts[i].placements[t].gpu_mask);
  }
  for (int i = 0; i < p->n_preemptions; i++)
    OUT("P%d>%d:%d ", p->preemptions[i].job, p->preemptions[i].for_job, p->preemptions[i].kind);
  for (int i = 0; i < p->n_reservations; i++)
    OUT("R%d@%lld ", p->reservations[i].job, (long long)p->reservations[i].at);
  for (int i = 0; i < p->n_pending; i++)
    OUT("W%d:%d:%s ", p->pending[i].job, p->pending[i].reason, p->pending[i].message);
  for (int i = 0; i < p->n_ended; i++) OUT("E%d:%d ", p->ended[i].job, p->ended[i].reason);
  for (int i = 0; i < p->n_queues; i++)
    OUT("Q%s:%.6f:%.6f:%.6f ", p->queues[i].name, p->queues[i].fair_share, p->queues[i].allocated,
        p->queues[i].pending);
#undef OUT
}

static void the_same_input_gives_a_byte_identical_plan(void) {
  fx *f = fx_new();
  static char names[24][8], ids[400][8];
  for (int i = 0; i < 24; i++) {
    snprintf(names[i], sizeof names[i], "n%02d", i);
    gp_node *n = fx_node(f, names[i], i % 3 ? "H100" : "A100", 8);
    fx_label(f, n, "topology.block", i < 12 ? "b1" : "b2");
    int dom[] = {0, 0, 0, 0, 1, 1, 1, 1};
    fx_nvlink(f, n, dom);
  }
  fx_queue(f, "org/x/p1", 20, GP_NO_LIMIT, 1);
  fx_queue(f, "org/x/p2", 10, 40, 2);
  fx_queue(f, "org/y/p3", 0, GP_NO_LIMIT, 1);
  const char *qs[] = {"org/x/p1", "org/x/p2", "org/y/p3"};
  const char *cls[] = {"training", "batch", "interactive", "opportunistic"};
  unsigned seed = 7;
  int node = 0, gpu = 0;
  for (int j = 0; j < 400; j++) {
    seed = seed * 1103515245u + 12345u;
    snprintf(ids[j], sizeof ids[j], "j%03d", j);
    int g = 1 << (seed >> 8) % 4;
    gp_job *job = fx_job(f, ids[j], qs[(seed >> 4) % 3], g, (seed >> 12) % 9 == 0 ? 2 : 1);
    job->priority_class = cls[(seed >> 16) % 4];
    job->time_limit = 600 * (1 + (seed >> 20) % 10);
    job->submitted_at = (seed >> 3) % 50;
    if (j < 150 && job->req.tasks == 1 && node < 24) { /* the first jobs run */
      if (gpu + g > 8) node++, gpu = 0;
      if (node < 24) {
        fx_run(f, job, node, ((1u << g) - 1) << gpu, (seed >> 5) % 900);
        gpu += g;
      }
    }
  }
  static char a[1 << 20], b[1 << 20];
  gp_plan *p1 = fx_step(f, 1000), *p2 = fx_step(f, 1000);
  REQUIRE(p1 && p2);
  plan_text(p1, a, sizeof a);
  plan_text(p2, b, sizeof b);
  CHECK(strlen(a) > 1000);
  CHECK(strcmp(a, b) == 0);
  CHECK(p1->n_starts + p1->n_pending + p1->n_ended > 0);
  gp_plan_free(p1);
  gp_plan_free(p2);
  fx_free(f);
}

/* ---- robustness ---- */

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xffff;
}

static void random_views_never_crash_and_account_for_every_job(void) {
  static const char *models[] = {"H100", "A100", "L40S"};
  static const char *queues[] = {"o/a", "o/b", "p", "o", "nope"};
  static const char *classes[] = {"training", "batch", "inference", "bogus"};
  static const char *migs[] = {"1g.10gb", "3g.40gb", "9g.1gb"};
  static char ids[64][16], names[12][16];
  unsigned seed = 12345;
  int ok_steps = 0, outcomes = 0;
  for (int round = 0; round < 1000; round++) {
    fx *f = fx_new();
    f->pol.order = (gp_order_policy)(rnd(&seed) % 4);
    f->pol.backfill = rnd(&seed) % 2;
    f->pol.placement = (gp_placement_policy)(rnd(&seed) % 2);
    f->pol.min_runtime = rnd(&seed) % 100;
    int nn = 1 + rnd(&seed) % 6;
    for (int i = 0; i < nn; i++) {
      snprintf(names[i], sizeof names[i], "n%d", i);
      gp_node *n = fx_node(f, names[i], models[rnd(&seed) % 3], 1 + rnd(&seed) % 8);
      n->state = (gp_node_state)(rnd(&seed) % 6 == 0 ? rnd(&seed) % 4 : 0);
      if (rnd(&seed) % 3 == 0) fx_label(f, n, "topology.block", rnd(&seed) % 2 ? "b1" : "b2");
      for (int g = 0; g < n->n_gpus; g++) {
        f->gpus[i][g].health = rnd(&seed) % 10 == 0 ? GP_GPU_FAILED : GP_GPU_HEALTHY;
        f->gpus[i][g].mode = rnd(&seed) % 4 == 0 ? GP_SHARE_SHARED : GP_SHARE_EXCLUSIVE;
        f->gpus[i][g].nvlink_domain = (int)(rnd(&seed) % 3) - 1;
      }
    }
    fx_queue(f, "o/a", rnd(&seed) % 5, rnd(&seed) % 3 ? GP_NO_LIMIT : 3, 1 + rnd(&seed) % 3);
    fx_queue(f, "o/b", rnd(&seed) % 5, GP_NO_LIMIT, 1);
    fx_queue(f, "p", 0.5, GP_NO_LIMIT, 2);
    int nj = rnd(&seed) % 40;
    int busy[12] = {0};
    for (int j = 0; j < nj; j++) {
      snprintf(ids[j], sizeof ids[j], "j%d", j);
      int g = (int)(rnd(&seed) % 5) - (rnd(&seed) % 8 == 0);
      gp_job *job = fx_job(f, ids[j], queues[rnd(&seed) % 5], g, 1 + rnd(&seed) % 3);
      job->priority_class = rnd(&seed) % 3 ? classes[rnd(&seed) % 4] : NULL;
      job->time_limit = rnd(&seed) % 3 ? 60 * (rnd(&seed) % 100) : 0;
      job->req.cpu_milli = rnd(&seed) % 4 ? 1000 * (rnd(&seed) % 40) : 0;
      if (g == 0 && rnd(&seed) % 2) job->req.gpu_milli = rnd(&seed) % 1200;
      if (g == 0 && rnd(&seed) % 5 == 0) job->req.mig_profile = migs[rnd(&seed) % 3];
      if (rnd(&seed) % 4 == 0) fx_models(f, job, models[rnd(&seed) % 3]);
      if (rnd(&seed) % 6 == 0 && j > 0) {
        f->deps[j][0] = ids[rnd(&seed) % j];
        job->after_ok = f->deps[j];
        job->n_after_ok = 1;
      }
      unsigned st = rnd(&seed) % 10;
      if (st == 0) job->state = GP_JOB_HELD;
      else if (st == 1) job->state = GP_JOB_COMPLETED;
      else if (st == 2) job->state = GP_JOB_FAILED;
      else if (st <= 4 && g > 0 && job->req.tasks == 1) {
        int node = (int)(rnd(&seed) % (unsigned)nn);
        uint32_t all = (1u << f->nodes[node].n_gpus) - 1, freem = all & ~(uint32_t)busy[node];
        uint32_t mask = 0;
        for (int b = 0; b < 32 && __builtin_popcount(mask) < g; b++)
          if (freem >> b & 1) mask |= 1u << b;
        if (__builtin_popcount(mask) == g) {
          busy[node] |= (int)mask;
          fx_run(f, job, node, mask, rnd(&seed) % 500);
          if (rnd(&seed) % 4 == 0) job->state = GP_JOB_STOPPING;
        }
      }
    }
    gp_plan *p = NULL;
    gp_err e = {0};
    int rc = gp_sched_step(&f->pol, &f->view, 600, &p, &e);
    CHECK(rc == 0 || rc == GP_EINVAL);
    if (rc == 0) {
      int waiting = 0;
      for (int j = 0; j < nj; j++)
        waiting += f->jobs[j].state == GP_JOB_PENDING || f->jobs[j].state == GP_JOB_HELD;
      CHECK_EQ_INT(waiting, p->n_starts + p->n_pending + p->n_ended);
      ok_steps++;
      outcomes += p->n_starts + p->n_pending + p->n_ended + p->n_preemptions;
      gp_plan_free(p);
    }
    fx_free(f);
  }
  CHECK(ok_steps > 900); /* the generator makes consistent snapshots: they must all work */
  CHECK(outcomes > 5000);
}

GP_TESTS(two_jobs_start_on_one_node_by_binpacking, an_inconsistent_snapshot_is_an_error_naming_the_field,
         impossible_or_unknown_requests_end_with_a_reason, an_empty_fleet_keeps_jobs_waiting,
         a_queue_counts_the_jobs_of_its_subtree_in_their_order,
         every_pending_job_gets_exactly_one_outcome, a_failed_big_request_does_not_stop_smaller_ones,
         the_same_input_gives_a_byte_identical_plan,
         random_views_never_crash_and_account_for_every_job)
