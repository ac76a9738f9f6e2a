/* SPDX-License-Identifier: Apache-2.0 */
/* gp_sched_step_memo: its plans must be gp_sched_step's, byte for byte (and with
 * GP_SCHED_DECISIONS_ONLY, the same but for the reasons of pending jobs), on a cluster that
 * changes between steps the way a server's does (arrivals, starts, preemptions and
 * requeues, completions, checkpoints, holds released, nodes drained and back), with every
 * kind of job the classification treats apart (whole, gang, fraction, held, with
 * dependencies, ended). And the memo must really stand in for work: a caller that changes
 * a job without a new rev gets the old answer for it. */
#include "core/fixture.h"

#define SLOTS 400

typedef struct world {
  fx *f;
  uint64_t rng, rev;
  uint64_t revs[FX_MAX]; /* the view's job_revs */
  int serial;
  char ids[4096][16];
  gp_sched_memo *memo;
} world;

static uint64_t rnd(world *w) {
  w->rng ^= w->rng << 13;
  w->rng ^= w->rng >> 7;
  w->rng ^= w->rng << 17;
  return w->rng;
}
static int pick(world *w, int n) { return (int)(rnd(w) % (uint64_t)n); }
static void touch(world *w, gp_job *job) { w->revs[job - w->f->jobs] = ++w->rev; }

static const char *queue_names[] = {"org/a", "org/b", "org/c", "lab/x"};
static const char *class_names[] = {"training", "batch", "interactive", NULL};

static void arrive(world *w, gp_time now) {
  fx *f = w->f;
  if (f->view.n_jobs >= SLOTS || w->serial >= 4096) return;
  int s = w->serial++;
  snprintf(w->ids[s], sizeof w->ids[s], "j%05d", s);
  int r = pick(w, 100);
  gp_job *job = fx_job(f, w->ids[s], queue_names[pick(w, 4)], 1 + pick(w, 4), 1);
  job->submitted_at = now - pick(w, 30);
  job->priority_class = class_names[pick(w, 4)];
  job->time_limit = 600 * (1 + pick(w, 12));
  if (r < 10) {
    job->req.tasks = 2 + pick(w, 2);
    job->req.gpus_per_task = 8;
  } else if (r < 22) {
    job->req.gpus_per_task = 0;
    job->req.gpu_milli = pick(w, 2) ? 250 : 500;
  } else if (r < 27) {
    job->state = GP_JOB_HELD;
  } else if (r < 31 && s > 0) {
    job->n_after_ok = 1;
    f->deps[job - f->jobs][0] = w->ids[pick(w, s)];
  } else if (r < 33) {
    job->queue = "org/nobody"; /* ends: no such queue */
  } else if (r < 40) {
    fx_models(f, job, pick(w, 2) ? "H100" : "A100");
  }
  touch(w, job);
}

/* Swap-removes job j, as the simulator does; the moved job changed slot: a new rev. */
static void leave(world *w, int j) {
  fx *f = w->f;
  int last = --f->view.n_jobs;
  if (j != last) {
    f->jobs[j] = f->jobs[last];
    memcpy(f->placements[j], f->placements[last], sizeof f->placements[j]);
    memcpy(f->deps[j], f->deps[last], sizeof f->deps[j]);
    memcpy(f->models[j], f->models[last], sizeof f->models[j]);
    f->jobs[j].placements = f->placements[j];
    f->jobs[j].after_ok = f->deps[j];
    if (f->jobs[j].req.n_gpu_models) f->jobs[j].req.gpu_models = f->models[j];
    touch(w, &f->jobs[j]);
  }
  memset(&f->jobs[last], 0, sizeof f->jobs[last]);
}

static void apply(world *w, const gp_plan *p, gp_time now) {
  fx *f = w->f;
  for (int i = 0; i < p->n_starts; i++) {
    gp_job *job = &f->jobs[p->starts[i].job];
    memcpy(f->placements[p->starts[i].job], p->starts[i].placements,
           (size_t)p->starts[i].n_placements * sizeof(gp_placement));
    job->n_placements = p->starts[i].n_placements;
    job->state = GP_JOB_RUNNING;
    job->started_at = now;
    touch(w, job);
  }
  for (int i = 0; i < p->n_preemptions; i++) {
    f->jobs[p->preemptions[i].job].state = GP_JOB_STOPPING;
    touch(w, &f->jobs[p->preemptions[i].job]);
  }
  for (int i = 0; i < p->n_ended; i++) {
    f->jobs[p->ended[i].job].state = GP_JOB_FAILED;
    touch(w, &f->jobs[p->ended[i].job]);
  }
}

/* What happens between two steps. */
static void churn(world *w, gp_time now) {
  fx *f = w->f;
  for (int j = f->view.n_jobs - 1; j >= 0; j--) {
    gp_job *job = &f->jobs[j];
    if (job->state == GP_JOB_COMPLETED || job->state == GP_JOB_FAILED) {
      if (pick(w, 2)) leave(w, j); /* some stay a while, for their dependants */
    } else if (job->state == GP_JOB_STOPPING) {
      job->state = GP_JOB_PENDING; /* grace over: requeued */
      job->n_placements = 0;
      touch(w, job);
    } else if (job->state == GP_JOB_RUNNING) {
      int r = pick(w, 10);
      if (r == 0) {
        job->state = GP_JOB_COMPLETED;
        job->n_placements = 0;
        touch(w, job);
      } else if (r == 1) {
        job->last_checkpoint_at = now - pick(w, 100);
        touch(w, job);
      }
    } else if (job->state == GP_JOB_HELD && pick(w, 8) == 0) {
      job->state = GP_JOB_PENDING;
      touch(w, job);
    }
  }
  for (int k = pick(w, 8); k > 0; k--) arrive(w, now);
  if (pick(w, 8) == 0) { /* a node drained or back: the view changes */
    gp_node *n = &f->nodes[pick(w, f->view.n_nodes)];
    n->state = n->state == GP_NODE_UP ? (pick(w, 2) ? GP_NODE_DRAIN : GP_NODE_CORDON) : GP_NODE_UP;
    f->view.rev++;
  }
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* Compares two plans field by field, in their own order; reports the first difference.
 * decisions: b was made with GP_SCHED_DECISIONS_ONLY (no reasons for pending jobs). */
static bool plans_equal(const gp_plan *a, const gp_plan *b, int step, bool decisions) {
#define DIFF(what)                                                  \
  do {                                                              \
    GP_FAIL_("step %d: the plans differ in %s", step, what);        \
    return false;                                                   \
  } while (0)
  if (a->n_starts != b->n_starts) DIFF("the number of starts");
  for (int i = 0; i < a->n_starts; i++) {
    if (a->starts[i].job != b->starts[i].job || a->starts[i].n_placements != b->starts[i].n_placements ||
        memcmp(a->starts[i].placements, b->starts[i].placements,
               (size_t)a->starts[i].n_placements * sizeof(gp_placement)))
      DIFF("a start");
  }
  if (a->n_preemptions != b->n_preemptions ||
      (a->n_preemptions &&
       memcmp(a->preemptions, b->preemptions, (size_t)a->n_preemptions * sizeof *a->preemptions)))
    DIFF("preemptions");
  bool resv_differ = a->n_reservations != b->n_reservations ||
                     (a->n_reservations && memcmp(a->reservations, b->reservations,
                                                  (size_t)a->n_reservations * sizeof *a->reservations));
  if (decisions ? b->n_reservations != 0 : resv_differ) DIFF("reservations");
  if (decisions ? b->n_pending != 0 : a->n_pending != b->n_pending) DIFF("the number of pending jobs");
  for (int i = 0; i < b->n_pending; i++)
    if (a->pending[i].job != b->pending[i].job || a->pending[i].reason != b->pending[i].reason ||
        !same_str(a->pending[i].message, b->pending[i].message))
      DIFF("a pending job's reason");
  if (a->n_ended != b->n_ended) DIFF("the number of ended jobs");
  for (int i = 0; i < a->n_ended; i++)
    if (a->ended[i].job != b->ended[i].job || a->ended[i].reason != b->ended[i].reason ||
        !same_str(a->ended[i].message, b->ended[i].message))
      DIFF("an ended job");
  if (a->n_queues != b->n_queues) DIFF("the number of queues");
  for (int i = 0; i < a->n_queues; i++) {
    const gp_plan_queue *x = &a->queues[i], *y = &b->queues[i];
    if (!same_str(x->name, y->name) || x->parent != y->parent || x->fair_share != y->fair_share ||
        x->allocated != y->allocated)
      DIFF("a queue's figures");
    if (decisions ? y->pending != 0 || y->running_jobs != 0 || y->pending_jobs != 0
                  : x->pending != y->pending || x->running_jobs != y->running_jobs ||
                        x->pending_jobs != y->pending_jobs)
      DIFF("a queue's job figures");
  }
  if (a->n_mig != b->n_mig) DIFF("MIG changes");
  return true;
#undef DIFF
}

static world *world_new(uint64_t seed) {
  world *w = calloc(1, sizeof *w);
  w->rng = seed;
  fx *f = w->f = fx_new();
  for (int i = 0; i < 12; i++) {
    static char names[12][8];
    snprintf(names[i], sizeof names[i], "n%02d", i);
    fx_node(f, names[i], i < 8 ? "H100" : "A100", 8);
  }
  for (int g = 0; g < 8; g++) { /* two nodes share their GPUs: fractions go there */
    f->gpus[10][g].mode = GP_SHARE_SHARED;
    f->gpus[11][g].mode = GP_SHARE_SHARED;
  }
  fx_queue(f, "org/a", 24, GP_NO_LIMIT, 1);
  fx_queue(f, "org/b", 16, 40, 2);
  fx_queue(f, "org/c", 8, GP_NO_LIMIT, 1);
  fx_queue(f, "lab/x", 0, GP_NO_LIMIT, 1);
  f->view.rev = 1;
  f->view.job_revs = w->revs;
  w->memo = gp_sched_memo_new();
  return w;
}

static void world_free(world *w) {
  gp_sched_memo_free(w->memo);
  fx_free(w->f);
  free(w);
}

/* Seeds 1-4: fair share (the default policy); then the global orders, whose memo keeps
 * one sorted segment instead of one per leaf. */
static void a_memo_gives_the_same_plans_as_a_step_without_one(void) {
  static const struct {
    gp_order_policy order;
    bool backfill;
  } orders[] = {{GP_ORDER_PRIORITY, true}, {GP_ORDER_SJF, true}, {GP_ORDER_FIFO, false}};
  for (uint64_t seed = 1; seed <= 7; seed++) {
    world *w = world_new(0x9e3779b97f4a7c15ull * seed);
    bool fair = seed <= 4;
    if (seed % 2 == 0) w->f->pol.min_runtime = 150; /* young jobs are no victims */
    if (!fair) {
      w->f->pol.order = orders[seed - 5].order;
      w->f->pol.backfill = orders[seed - 5].backfill;
    }
    gp_time now = 1000;
    for (int k = 0; k < 40; k++) arrive(w, now);
    int started = 0, preempted = 0;
    for (int step = 0; step < 80; step++) {
      gp_plan *plain = NULL, *memo = NULL, *decisions = NULL;
      gp_err e = {0};
      REQUIRE(gp_sched_step(&w->f->pol, &w->f->view, now, &plain, &e) == 0);
      /* Both kinds of memo step on one view, in either order: what one step changes in the
       * memo's jobs must not leak into the next. */
      if (step % 2) {
        REQUIRE(gp_sched_step_memo(w->memo, &w->f->pol, &w->f->view, now, 0, &memo, &e) == 0);
        REQUIRE(gp_sched_step_memo(w->memo, &w->f->pol, &w->f->view, now, GP_SCHED_DECISIONS_ONLY,
                                   &decisions, &e) == 0);
      } else {
        REQUIRE(gp_sched_step_memo(w->memo, &w->f->pol, &w->f->view, now, GP_SCHED_DECISIONS_ONLY,
                                   &decisions, &e) == 0);
        REQUIRE(gp_sched_step_memo(w->memo, &w->f->pol, &w->f->view, now, 0, &memo, &e) == 0);
      }
      bool same = plans_equal(plain, memo, step, false) && plans_equal(plain, decisions, step, true);
      CHECK(same == gp_plan_equal(plain, memo)); /* the callers' check (the server's) agrees */
      if (step == 20) { /* and tells a plan from one with a single figure changed */
        REQUIRE(memo->n_queues > 0);
        memo->queues[memo->n_queues - 1].fair_share = nextafter(memo->queues[memo->n_queues - 1].fair_share, 1e9);
        CHECK(!gp_plan_equal(plain, memo));
        if (memo->n_pending > 0) {
          memo->queues[memo->n_queues - 1].fair_share = plain->queues[plain->n_queues - 1].fair_share;
          CHECK(gp_plan_equal(plain, memo));
          memo->pending[0].message = "another sentence";
          CHECK(!gp_plan_equal(plain, memo));
        }
      }
      started += plain->n_starts;
      preempted += plain->n_preemptions;
      apply(w, plain, now);
      gp_plan_free(plain);
      gp_plan_free(memo);
      gp_plan_free(decisions);
      if (!same) break;
      now += 60;
      churn(w, now);
    }
    /* The run exercised what the memo replays. */
    CHECK(started > 100);
    if (fair) CHECK(preempted > 0);
    world_free(w);
  }
}

static void the_memo_answers_from_memory_while_a_jobs_rev_stays(void) {
  world *w = world_new(7);
  fx *f = w->f;
  gp_job *job = fx_job(f, "big", "org/a", 8, 1);
  job->priority_class = "training";
  touch(w, job);
  gp_plan *p = NULL;
  gp_err e = {0};
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_started(f, p, "big"));
  gp_plan_free(p);
  /* Changed without a new rev: the memo still sees the queue it remembered, while the
   * step without one sees that the queue does not exist. */
  job->queue = "org/nobody";
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_started(f, p, "big"));
  gp_plan_free(p);
  p = fx_step(f, 100);
  REQUIRE(p);
  CHECK(fx_ended(f, p, "big") != NULL);
  gp_plan_free(p);
  /* With a new rev it reads the job again. */
  touch(w, job);
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_ended(f, p, "big") != NULL);
  gp_plan_free(p);
  world_free(w);
}

static void a_new_view_rev_or_none_forgets_every_job(void) {
  world *w = world_new(11);
  fx *f = w->f;
  gp_job *job = fx_job(f, "j", "org/a", 8, 1);
  touch(w, job);
  gp_plan *p = NULL;
  gp_err e = {0};
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_started(f, p, "j"));
  gp_plan_free(p);
  job->queue = "org/nobody"; /* no new job rev, but the view's changes */
  f->view.rev++;
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_ended(f, p, "j") != NULL);
  gp_plan_free(p);
  fx_queue(f, "org/nobody", 8, GP_NO_LIMIT, 1); /* the queue comes: a new view rev */
  f->view.rev++;
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_started(f, p, "j"));
  gp_plan_free(p);
  f->view.n_queues--;
  job->queue = "org/a";
  f->view.rev = 0; /* rev 0: remember nothing */
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_started(f, p, "j"));
  gp_plan_free(p);
  job->queue = "org/nobody";
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK(fx_ended(f, p, "j") != NULL);
  gp_plan_free(p);
  world_free(w);
}

/* Replayed pending jobs are counted per request, not one by one: when room comes, every
 * one of them that fits starts, as without the memo (a count off by any job stops the
 * step early, or considers jobs that are not there). */
static void remembered_jobs_of_one_request_all_start_when_room_comes(void) {
  world *w = world_new(13);
  fx *f = w->f;
  f->pol.reclaim = f->pol.preemption = false; /* (else the drain goes on for preemption) */
  static char ids[12][8], pids[6][8];
  for (int i = 0; i < 12; i++) { /* the cluster is full */
    snprintf(ids[i], sizeof ids[i], "r%02d", i);
    gp_job *r = fx_job(f, ids[i], queue_names[i % 4], 8, 1);
    fx_run(f, r, i, 0xff, 10);
    touch(w, r);
  }
  for (int i = 0; i < 6; i++) { /* six waiting jobs with one request, time limits apart */
    snprintf(pids[i], sizeof pids[i], "p%d", i);
    gp_job *p = fx_job(f, pids[i], "org/a", 1, 1);
    p->submitted_at = 50 + i;
    p->time_limit = 600 * (6 - i);
    touch(w, p);
  }
  for (int k = 0; k < 2; k++) {
    unsigned flags = k ? GP_SCHED_DECISIONS_ONLY : 0;
    gp_plan *p = NULL;
    gp_err e = {0};
    REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, flags, &p, &e) == 0);
    CHECK(p->n_starts == 0);
    gp_plan_free(p);
  }
  gp_job *done = &f->jobs[fx_index(f, "r03")]; /* a node's worth of GPUs comes free */
  done->state = GP_JOB_COMPLETED;
  done->n_placements = 0;
  touch(w, done);
  gp_plan *plain = fx_step(f, 200), *memo = NULL;
  gp_err e = {0};
  REQUIRE(plain);
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 200, GP_SCHED_DECISIONS_ONLY, &memo, &e) == 0);
  CHECK(plain->n_starts == 6);
  CHECK(plans_equal(plain, memo, 0, true));
  gp_plan_free(plain);
  gp_plan_free(memo);
  world_free(w);
}

/* What a step writes about a job it kept (its reason here) is not there in the next: the
 * next step finds the job as classification left it. */
static void a_reason_does_not_outlive_its_step(void) {
  world *w = world_new(17);
  fx *f = w->f;
  f->pol.backfill = f->pol.reclaim = f->pol.preemption = false; /* nothing drains: z is settled */
  static char ids[12][8];
  for (int i = 0; i < 12; i++) { /* a full cluster; org/b at its limit of 40 */
    snprintf(ids[i], sizeof ids[i], "r%02d", i);
    gp_job *r = fx_job(f, ids[i], i < 5 ? "org/b" : "org/a", 8, 1);
    fx_run(f, r, i, 0xff, 10);
    touch(w, r);
  }
  gp_job *z = fx_job(f, "z", "org/b", 8, 1);
  touch(w, z);
  gp_plan *p = NULL;
  gp_err e = {0};
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  CHECK_EQ_STR("QueueLimit", fx_reason(f, p, "z"));
  gp_plan_free(p);
  gp_job *moved = &f->jobs[fx_index(f, "r00")]; /* org/b falls below its limit */
  moved->queue = "org/a";
  touch(w, moved);
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 200, 0, &p, &e) == 0);
  CHECK_EQ_STR("Resources", fx_reason(f, p, "z"));
  gp_plan *plain = fx_step(f, 200);
  REQUIRE(plain);
  CHECK(plans_equal(plain, p, 0, false));
  gp_plan_free(plain);
  gp_plan_free(p);
  world_free(w);
}

/* A node's images are part of the view: with a new rev, the memo places a job in an image
 * where a step without one does (the node that now holds it). */
static void a_nodes_new_images_move_the_placement_with_the_view_rev(void) {
  static const uint64_t held[] = {5};
  world *w = world_new(12);
  fx *f = w->f;
  gp_job *job = fx_job(f, "j", "org/a", 1, 1);
  job->req.image = 5;
  touch(w, job);
  gp_plan *p = NULL;
  gp_err e = {0};
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  REQUIRE(fx_started(f, p, "j"));
  CHECK_EQ_INT(0, fx_start(f, p, "j")->placements[0].node);
  gp_plan_free(p);
  f->nodes[3].images = held;
  f->nodes[3].n_images = 1;
  f->view.rev++;
  REQUIRE(gp_sched_step_memo(w->memo, &f->pol, &f->view, 100, 0, &p, &e) == 0);
  REQUIRE(fx_started(f, p, "j"));
  CHECK_EQ_INT(3, fx_start(f, p, "j")->placements[0].node);
  gp_plan *plain = NULL;
  REQUIRE(gp_sched_step(&f->pol, &f->view, 100, &plain, &e) == 0);
  CHECK(plans_equal(plain, p, 0, false));
  gp_plan_free(plain);
  gp_plan_free(p);
  world_free(w);
}

GP_TESTS(a_memo_gives_the_same_plans_as_a_step_without_one,
         the_memo_answers_from_memory_while_a_jobs_rev_stays,
         a_new_view_rev_or_none_forgets_every_job,
         remembered_jobs_of_one_request_all_start_when_room_comes,
         a_reason_does_not_outlive_its_step,
         a_nodes_new_images_move_the_placement_with_the_view_rev)
