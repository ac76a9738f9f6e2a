/* SPDX-License-Identifier: Apache-2.0 */
/* Advance reservations and maintenance windows (src/core/reservation.c): a reservation
 * starting in 1 h keeps a 2-h job off its node while a 30-min job backfills there; its
 * users' jobs start in it at its start, others' do not; a job without a time limit never
 * starts there while it lies ahead; backfill plans around it; a maintenance window stops
 * the jobs on its node when it begins; the reason names it; valid_until knows its times. */
#include "core/fixture.h"

static const char *alice[] = {"alice"};
static int node0[] = {0};

/* n0 (8 GPUs) is reserved for alice over [start, start + 7200); n1 (8 GPUs) is full with a
 * job that never ends, so n0 is the only place anything can go. */
static fx *reserved_cluster(gp_reservation *rv, gp_time start, bool maint) {
  fx *f = fx_new();
  fx_node(f, "n0", "H100", 8);
  fx_node(f, "n1", "H100", 8);
  fx_queue(f, "org/a", 0, GP_NO_LIMIT, 1);
  fx_queue(f, "org/b", 0, GP_NO_LIMIT, 1);
  gp_job *hog = fx_job(f, "hog", "org/b", 8, 1);
  fx_run(f, hog, 1, 0xff, 1);
  *rv = (gp_reservation){.name = "train-week", .start = start, .end = start + 7200, .n_nodes = 1,
                         .nodes = node0, .n_users = 1, .users = alice, .maint = maint};
  f->view.n_reservations = 1;
  f->view.reservations = rv;
  return f;
}

static gp_job *job_of(fx *f, const char *id, const char *queue, const char *user, int gpus, gp_time limit,
                      gp_time submitted) {
  gp_job *j = fx_job(f, id, queue, gpus, 1);
  j->user = user;
  j->time_limit = limit;
  j->submitted_at = submitted;
  return j;
}

static const char *message_of(const fx *f, const gp_plan *p, const char *id) {
  int j = fx_index(f, id);
  for (int i = 0; i < p->n_pending; i++)
    if (p->pending[i].job == j) return p->pending[i].message;
  return "";
}

static void a_reservation_in_an_hour_keeps_a_two_hour_job_off_while_a_short_one_backfills(void) {
  gp_reservation rv;
  gp_time now = 1000000, start = now + 3600;
  fx *f = reserved_cluster(&rv, start, false);
  job_of(f, "long", "org/b", "bob", 4, 7200, 10);   /* would run into the reservation */
  job_of(f, "nolimit", "org/b", "bob", 2, 0, 11);   /* no limit: unbounded */
  job_of(f, "short", "org/b", "bob", 4, 1800, 12);  /* ends 30 min before it begins */
  gp_plan *p = fx_step(f, now);
  REQUIRE(p);
  CHECK(fx_started(f, p, "short"));
  CHECK(!fx_started(f, p, "long"));
  CHECK(!fx_started(f, p, "nolimit"));
  CHECK_EQ_STR("Reservation", fx_reason(f, p, "long"));
  CHECK_EQ_STR("Reservation", fx_reason(f, p, "nolimit"));
  CHECK(strstr(message_of(f, p, "long"), "Node n0 is reserved by train-week") != NULL);
  CHECK(strstr(message_of(f, p, "long"), "1970-01-12 14:46:40 to 16:46:40 UTC") != NULL);
  CHECK(strstr(message_of(f, p, "nolimit"), "no time limit") != NULL);
  /* Another 30-min job started 31 min later would no longer end in time. */
  CHECK(p->valid_until <= start);
  gp_plan_free(p);
  fx_free(f);
}

static void its_users_jobs_start_in_it_at_its_start_and_others_do_not(void) {
  gp_reservation rv;
  gp_time now = 1000000, start = now + 3600;
  fx *f = reserved_cluster(&rv, start, false);
  /* In submit order, bob's first: his failure must not stand for alice3's job of the same
   * request shape. */
  f->pol.order = GP_ORDER_FIFO;
  job_of(f, "bob1", "org/b", "bob", 4, 600, 10);
  job_of(f, "alice3", "org/a", "alice", 4, 600, 13);
  job_of(f, "alice1", "org/a", "alice", 2, 3600, 11);
  job_of(f, "alice2", "org/a", "alice", 2, 3600, 12);
  gp_plan *p = fx_step(f, start);
  REQUIRE(p);
  CHECK(fx_started(f, p, "alice1"));
  CHECK(fx_started(f, p, "alice2"));
  CHECK(!fx_started(f, p, "bob1"));
  CHECK(fx_started(f, p, "alice3"));
  CHECK_EQ_STR("Reservation", fx_reason(f, p, "bob1"));
  CHECK(strstr(message_of(f, p, "bob1"), "only the reservation's jobs") != NULL);
  gp_plan_free(p);
  /* After its end, anyone. */
  p = fx_step(f, start + 7200);
  REQUIRE(p);
  CHECK(fx_started(f, p, "bob1"));
  gp_plan_free(p);
  fx_free(f);
}

static void a_queue_reservation_admits_its_sub_queues(void) {
  gp_reservation rv;
  gp_time now = 1000000;
  fx *f = reserved_cluster(&rv, now - 10, false);
  fx_queue(f, "org/a/x", 0, GP_NO_LIMIT, 1);
  rv.n_users = 0;
  rv.queue = "org/a";
  job_of(f, "sub", "org/a/x", "carol", 8, 600, 10);
  job_of(f, "other", "org/b", "carol", 1, 60, 11);
  gp_plan *p = fx_step(f, now);
  REQUIRE(p);
  CHECK(fx_started(f, p, "sub"));
  CHECK(!fx_started(f, p, "other"));
  gp_plan_free(p);
  fx_free(f);
}

static void backfill_plans_a_blocked_job_around_the_reservation(void) {
  gp_reservation rv;
  gp_time now = 1000000, start = now + 3600;
  fx *f = reserved_cluster(&rv, start, false);
  gp_job *busy = job_of(f, "busy", "org/b", "bob", 2, 600, 1); /* n0 GPUs 0-1 until now + 500 */
  fx_run(f, busy, 0, 0x03, now - 100);
  job_of(f, "big", "org/b", "bob", 8, 3600, 10); /* n0 whole: after the reservation only */
  gp_plan *p = fx_step(f, now);
  REQUIRE(p);
  CHECK(!fx_started(f, p, "big"));
  int big = fx_index(f, "big");
  const gp_plan_reservation *at = NULL;
  for (int i = 0; i < p->n_reservations; i++)
    if (p->reservations[i].job == big) at = &p->reservations[i];
  REQUIRE(at);
  CHECK(at->at >= start + 7200); /* not at now + 500, inside alice's window */
  gp_plan_free(p);
  fx_free(f);
}

static void a_maintenance_window_stops_the_jobs_on_its_node_when_it_begins(void) {
  gp_reservation rv;
  gp_time now = 1000000, start = now + 60;
  fx *f = reserved_cluster(&rv, start, true);
  rv.n_users = 0; /* nobody's: a plain maintenance window */
  gp_job *victim = job_of(f, "victim", "org/b", "bob", 4, 0, 1);
  fx_run(f, victim, 0, 0x0f, now - 1000);
  gp_plan *p = fx_step(f, now);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  CHECK(p->valid_until <= start); /* the server steps again when it begins */
  gp_plan_free(p);
  p = fx_step(f, start);
  REQUIRE(p);
  REQUIRE(p->n_preemptions == 1);
  CHECK_EQ_INT(fx_index(f, "victim"), p->preemptions[0].job);
  CHECK_EQ_INT(-1, p->preemptions[0].for_job);
  CHECK_EQ_STR("maintenance", gp_preempt_kind_name(p->preemptions[0].kind));
  gp_plan_free(p);
  /* The job on n1 is untouched, and a stopping job is not stopped twice. */
  victim->state = GP_JOB_STOPPING;
  p = fx_step(f, start + 1);
  REQUIRE(p);
  CHECK_EQ_INT(0, p->n_preemptions);
  gp_plan_free(p);
  fx_free(f);
}

static void a_bad_reservation_is_refused_naming_its_field(void) {
  gp_reservation rv;
  fx *f = reserved_cluster(&rv, 100, false);
  rv.end = 50;
  gp_plan *p = NULL;
  CHECK(gp_sched_step(&f->pol, &f->view, 10, &p, &f->err) != 0);
  CHECK_EQ_STR("reservations[0].end", f->err.field);
  int bad_node[] = {7};
  rv.end = 200;
  rv.nodes = bad_node;
  CHECK(gp_sched_step(&f->pol, &f->view, 10, &p, &f->err) != 0);
  CHECK_EQ_STR("reservations[0].nodes", f->err.field);
  fx_free(f);
}

/* The memo's steps decide as full steps do, before, at and after a window, with a job of
 * each side of each shape (membership is part of what the memo keeps per request). */
static void memo_steps_agree_with_full_steps_across_the_window(void) {
  gp_reservation rv;
  gp_time now = 1000000, start = now + 3600;
  fx *f = reserved_cluster(&rv, start, false);
  job_of(f, "b1", "org/b", "bob", 4, 600, 10);
  job_of(f, "a1", "org/a", "alice", 4, 600, 11);
  job_of(f, "b2", "org/b", "bob", 4, 7200, 12);
  job_of(f, "a2", "org/a", "alice", 4, 7200, 13);
  uint64_t revs[FX_MAX];
  for (int j = 0; j < f->view.n_jobs; j++) revs[j] = (uint64_t)j + 1;
  f->view.job_revs = revs;
  f->view.rev = 7;
  gp_sched_memo *m = gp_sched_memo_new();
  gp_time times[] = {now, start - 601, start - 599, start, start + 1, start + 7200};
  for (size_t i = 0; i < sizeof times / sizeof *times; i++) {
    gp_plan *full = fx_step(f, times[i]), *memo = NULL;
    REQUIRE(full);
    CHECK(gp_sched_step_memo(m, &f->pol, &f->view, times[i], 0, &memo, &f->err) == 0);
    REQUIRE(memo);
    CHECK(gp_plan_equal(full, memo));
    gp_plan_free(full);
    gp_plan_free(memo);
  }
  gp_sched_memo_free(m);
  fx_free(f);
}

GP_TESTS(a_reservation_in_an_hour_keeps_a_two_hour_job_off_while_a_short_one_backfills,
         its_users_jobs_start_in_it_at_its_start_and_others_do_not,
         a_queue_reservation_admits_its_sub_queues,
         backfill_plans_a_blocked_job_around_the_reservation,
         a_maintenance_window_stops_the_jobs_on_its_node_when_it_begins,
         a_bad_reservation_is_refused_naming_its_field,
         memo_steps_agree_with_full_steps_across_the_window)
