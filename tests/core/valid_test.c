/* SPDX-License-Identifier: Apache-2.0 */
/* gp_plan.valid_until: for the same policy and view, a step at any time before it returns
 * the same plan (but for `now`), so a caller may skip the steps in between (the server does:
 * src/server/cycle/schedule.c). Checked on random clusters against full steps at later times, and
 * for each time that turns a step's answer: a begin time reached, a running job's end
 * passed (its release moves with now), a job old enough to be a victim, a reservation's
 * fence a job's end no longer clears. Each of those cases fails when valid_until leaves
 * its time out. */
#include "core/fixture.h"

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* A step at t, on the same view, gives plan p but for its now. */
static bool same_at(fx *f, const gp_plan *p, gp_time t) {
  gp_plan *q = fx_step(f, t);
  if (!q) return false;
  q->now = p->now;
  bool same = gp_plan_equal(p, q);
  gp_plan_free(q);
  return same;
}

/* Applies what p decided, as a server would (stopping jobs requeued at once). */
static void apply(fx *f, const gp_plan *p, gp_time now) {
  for (int i = 0; i < p->n_starts; i++) {
    int j = p->starts[i].job;
    memcpy(f->placements[j], p->starts[i].placements, (size_t)p->starts[i].n_placements * sizeof(gp_placement));
    f->jobs[j].n_placements = p->starts[i].n_placements;
    f->jobs[j].state = GP_JOB_RUNNING;
    f->jobs[j].started_at = now;
  }
  for (int i = 0; i < p->n_preemptions; i++) f->jobs[p->preemptions[i].job].state = GP_JOB_STOPPING;
  for (int i = 0; i < p->n_ended; i++) f->jobs[p->ended[i].job].state = GP_JOB_FAILED;
  for (int j = 0; j < f->view.n_jobs; j++)
    if (f->jobs[j].state == GP_JOB_STOPPING && !p->n_preemptions) {
      f->jobs[j].state = GP_JOB_PENDING;
      f->jobs[j].n_placements = 0;
    }
}

static const char *queues[] = {"org/a", "org/b", "org/c"};
static const char *classes[] = {"training", "batch", "interactive", NULL};

/* Random clusters, half full, with time limits, begin times, young jobs and gangs, under
 * every order; at each, the plan is probed at later times up to its valid_until. */
static void a_plan_holds_until_its_valid_until(void) {
  static const struct {
    gp_order_policy order;
    bool backfill;
  } pols[] = {{GP_ORDER_FAIRSHARE, true}, {GP_ORDER_PRIORITY, true}, {GP_ORDER_SJF, true},
              {GP_ORDER_FIFO, false}, {GP_ORDER_FAIRSHARE, false}};
  static char ids[FX_MAX][16];
  int probes = 0, holding = 0, with_resv = 0, finite = 0;
  for (int seed = 1; seed <= 300; seed++) {
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)seed;
    fx *f = fx_new();
    f->pol.order = pols[seed % 5].order;
    f->pol.backfill = pols[seed % 5].backfill;
    if (seed % 3 == 0) f->pol.min_runtime = 120;
    if (seed % 4 == 0) f->pol.default_time_limit = 900;
    static char names[8][8];
    for (int i = 0; i < 8; i++) {
      snprintf(names[i], sizeof names[i], "n%d", i);
      fx_node(f, names[i], "H100", 8);
    }
    fx_queue(f, "org/a", 24, GP_NO_LIMIT, 1);
    fx_queue(f, "org/b", 16, 40, 2);
    fx_queue(f, "org/c", 8, GP_NO_LIMIT, 1);
    gp_time now = 10000;
    int n = 0;
    for (int node = 0; node < 8; node++) { /* running jobs fill some GPUs of each node */
      int used = 0;
      while (used < 8 && rng_next(&rng) % 3) {
        int g = 1 + (int)(rng_next(&rng) % 4);
        if (used + g > 8) break;
        snprintf(ids[n], sizeof ids[n], "r%03d", n);
        gp_job *r = fx_running(f, ids[n], queues[rng_next(&rng) % 3], g, node,
                               ((1u << g) - 1) << used, now - (gp_time)(rng_next(&rng) % 400));
        r->priority_class = classes[rng_next(&rng) % 4];
        if (rng_next(&rng) % 4) r->time_limit = 60 * (1 + (gp_time)(rng_next(&rng) % 20));
        used += g;
        n++;
      }
    }
    for (int k = 0; k < 12; k++) {
      snprintf(ids[n], sizeof ids[n], "p%03d", n);
      int r = (int)(rng_next(&rng) % 10);
      gp_job *p = fx_job(f, ids[n], queues[rng_next(&rng) % 3], r < 2 ? 8 : 1 + (int)(rng_next(&rng) % 8),
                         r < 2 ? 2 : 1);
      p->submitted_at = now - 100 + k;
      p->priority_class = classes[rng_next(&rng) % 4];
      if (rng_next(&rng) % 2) p->time_limit = 60 * (1 + (gp_time)(rng_next(&rng) % 30));
      if (r == 9) p->begin_at = now + 30 + (gp_time)(rng_next(&rng) % 600);
      n++;
    }
    /* Steps, applied, until one decides nothing. */
    gp_plan *p = fx_step(f, now);
    REQUIRE(p);
    for (int k = 0; k < 20 && p->valid_until == now + 1; k++) {
      apply(f, p, now);
      gp_plan_free(p);
      p = fx_step(f, now);
      REQUIRE(p);
    }
    CHECK(p->valid_until > now);
    if (p->n_reservations) with_resv++;
    if (p->valid_until < INT64_MAX) finite++;
    gp_time until = p->valid_until < now + 5000 ? p->valid_until : now + 5000;
    /* The last second before it, the first after now, and some between. */
    gp_time ts[6] = {now + 1, until - 1};
    for (int k = 2; k < 6; k++) ts[k] = now + 1 + (gp_time)(rng_next(&rng) % (uint64_t)(until - now));
    for (int k = 0; k < 6; k++) {
      if (ts[k] <= now || ts[k] >= until) continue;
      probes++;
      bool same = same_at(f, p, ts[k]);
      if (!same) fprintf(stderr, "  seed %d: the plan of %lld changed at %lld, before %lld\n", seed,
                         (long long)now, (long long)ts[k], (long long)p->valid_until);
      CHECK(same);
    }
    if (p->valid_until > now + 1) holding++;
    gp_plan_free(p);
    fx_free(f);
  }
  /* The run exercised what it claims to. */
  fprintf(stderr, "  %d probes, %d plans holding, %d with reservations, %d with an end\n", probes,
          holding, with_resv, finite);
  CHECK(probes > 500);
  CHECK(holding > 100);
  CHECK(with_resv > 20);
  CHECK(finite > 100);
}

/* The plan at `until` differs from the one at now: valid_until must not pass it. */
static void holds_no_later_than(fx *f, gp_time now, gp_time until) {
  gp_plan *p = fx_step(f, now);
  REQUIRE(p);
  CHECK(!same_at(f, p, until)); /* (the case is real) */
  if (p->valid_until > until)
    fprintf(stderr, "  valid_until %lld, but the plan changes at %lld\n", (long long)p->valid_until,
            (long long)until);
  CHECK(p->valid_until > now && p->valid_until <= until);
  gp_plan_free(p);
}

static void a_begin_time_ends_the_plan(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "org/a", 8, GP_NO_LIMIT, 1);
  gp_job *j = fx_job(f, "later", "org/a", 1, 1);
  j->begin_at = 1500;
  holds_no_later_than(f, 1000, 1500);
  fx_free(f);
}

/* A running job past its time limit still runs (the server ends it): backfill counts it as
 * ending now, so the reservation it gives a waiting job moves from its end on. */
static void a_running_jobs_end_ends_the_plan(void) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "org/a", 8, GP_NO_LIMIT, 1);
  gp_job *r = fx_running(f, "r", "org/a", 8, 0, 0xff, 1000);
  r->time_limit = 600;
  fx_job(f, "wait", "org/a", 8, 1);
  holds_no_later_than(f, 1000, 1601);
  fx_free(f);
}

/* A job younger than min_runtime is no victim; once old enough, it is preempted. */
static void a_job_coming_of_age_ends_the_plan(void) {
  fx *f = fx_new();
  f->pol.min_runtime = 300;
  fx_node(f, "n0", "H100", 8);
  fx_queue(f, "org/a", 8, GP_NO_LIMIT, 1);
  gp_job *r = fx_running(f, "young", "org/a", 8, 0, 0xff, 1000);
  r->priority_class = "batch";
  gp_job *w = fx_job(f, "urgent", "org/a", 8, 1);
  w->priority_class = "interactive";
  holds_no_later_than(f, 1000, 1300);
  fx_free(f);
}

/* A reservation's fence: a job that ends before reserved GPUs are needed may use them. Here
 * it only decides the job's reason (it could start on spot nodes, where its queue keeps it
 * from), so the plan does not act, yet it changes once the job's end, now + its limit, no
 * longer clears the fence. */
static void a_fence_no_longer_cleared_ends_the_plan(void) {
  fx *f = fx_new();
  f->pol.preemption = false;
  f->pol.reclaim = false;
  fx_node(f, "od", "H100", 8);
  gp_node *spot = fx_node(f, "spot", "H100", 8);
  spot->capacity = GP_CAP_SPOT;
  fx_queue(f, "org/s", 8, GP_NO_LIMIT, 1);
  gp_queue *a = fx_queue(f, "org/a", 8, GP_NO_LIMIT, 1);
  a->spot = GP_SPOT_NEVER;
  fx_running(f, "full", "org/a", 8, 0, 0xff, 900); /* od, no limit: never frees */
  gp_job *r = fx_running(f, "half", "org/s", 4, 1, 0x0f, 1000);
  r->time_limit = 1000; /* spot frees whole at 2000 */
  gp_job *big = fx_job(f, "big", "org/s", 8, 1); /* reserved on spot from 2000 */
  big->req.allow_spot = true;
  gp_job *j = fx_job(f, "short", "org/a", 4, 1);
  j->req.allow_spot = true;
  j->time_limit = 500;
  const gp_plan *p = fx_plan(f, 1000);
  REQUIRE(p);
  CHECK_EQ_INT(1, p->n_reservations);
  gp_plan *later = fx_step(f, 1501);
  REQUIRE(later);
  int k = fx_index(f, "short");
  for (int i = 0; i < p->n_pending; i++)
    if (p->pending[i].job == k) CHECK_CONTAINS(p->pending[i].message, "spot");
  for (int i = 0; i < later->n_pending; i++)
    if (later->pending[i].job == k) CHECK(!strstr(later->pending[i].message, "spot"));
  gp_plan_free(later);
  holds_no_later_than(f, 1000, 1501);
  fx_free(f);
}

GP_TESTS(a_plan_holds_until_its_valid_until, a_begin_time_ends_the_plan, a_running_jobs_end_ends_the_plan,
         a_job_coming_of_age_ends_the_plan, a_fence_no_longer_cleared_ends_the_plan)
