/* SPDX-License-Identifier: Apache-2.0 */
/* The idle policy's reader and arithmetic: what a queue's `idle_policy` means. */
#include <string.h>

#include "core/idle.h"
#include "test.h"

static int read_policy(const char *yaml, gp_idle_policy *p, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_string("q.yaml", yaml, strlen(yaml), &d, err);
  if (!rc) rc = gp_idle_policy_read(d, gp_doc_get(d->root, "idle_policy"), "idle_policy", p, err);
  gp_doc_free(d);
  return rc;
}

static void keys_left_out_take_the_defaults_and_interactive_inherits(void) {
  gp_idle_policy p;
  gp_err err = {0};
  REQUIRE(read_policy("idle_policy:\n  action: requeue\n  interactive: {window: 2h}\n", &p, &err) == 0);
  CHECK(p.set);
  CHECK_NEAR(5.0, p.rule.threshold_pct, 1e-9);
  CHECK_EQ_INT(600, p.rule.window_s);
  CHECK_EQ_INT(600, p.rule.grace_s);
  CHECK_EQ_INT(GP_IDLE_REQUEUE, p.rule.action);
  CHECK(p.has_interactive);
  CHECK_EQ_INT(7200, p.interactive.window_s);
  CHECK_EQ_INT(GP_IDLE_REQUEUE, p.interactive.action);
  CHECK(gp_idle_rule_for(&p, "interactive") == &p.interactive);
  CHECK(gp_idle_rule_for(&p, "training") == &p.rule);
  CHECK(gp_idle_rule_for(&p, NULL) == &p.rule);
  REQUIRE(read_policy("idle_policy: ~\n", &p, &err) == 0);
  CHECK(!p.set);
}

static const char *said(const gp_err *err) {
  static char buf[1024];
  gp_err_format(err, buf, sizeof buf);
  return buf;
}

static void errors_name_the_key(void) {
  gp_idle_policy p = {0};
  gp_err err = {0};
  CHECK(read_policy("idle_policy: {action: kill}\n", &p, &err) != 0);
  CHECK_CONTAINS(said(&err), "idle_policy.action");
  CHECK_CONTAINS(said(&err), "notify, requeue or cancel");
  CHECK(read_policy("idle_policy: {threshold_pct: 0}\n", &p, &err) != 0);
  CHECK_CONTAINS(said(&err), "idle_policy.threshold_pct");
  CHECK(read_policy("idle_policy: {window: 0}\n", &p, &err) != 0);
  CHECK_CONTAINS(said(&err), "idle_policy.window");
  CHECK(read_policy("idle_policy: {interactive: {interactive: {}}}\n", &p, &err) != 0);
  CHECK_CONTAINS(said(&err), "idle_policy.interactive.interactive");
  CHECK(read_policy("idle_policy: {grace: 31d}\n", &p, &err) != 0);
  CHECK(!p.set);
}

static void actions_fall_back_to_notify_for_jobs_they_may_not_touch(void) {
  gp_idle_rule r = {5, 600, 0, GP_IDLE_REQUEUE};
  const char *why;
  CHECK_EQ_INT(GP_IDLE_REQUEUE, gp_idle_effective(&r, true, "training", &why));
  CHECK(why == NULL);
  CHECK_EQ_INT(GP_IDLE_NOTIFY, gp_idle_effective(&r, false, "training", &why));
  CHECK_CONTAINS(why, "not requeueable");
  r.action = GP_IDLE_CANCEL;
  CHECK_EQ_INT(GP_IDLE_CANCEL, gp_idle_effective(&r, false, "opportunistic", &why));
  CHECK_EQ_INT(GP_IDLE_NOTIFY, gp_idle_effective(&r, true, "batch", &why));
  CHECK_CONTAINS(why, "opportunistic");
}

static void due_waits_for_the_window_and_the_grace(void) {
  gp_idle_rule r = {5, 600, 900, GP_IDLE_NOTIFY};
  CHECK_EQ_INT(0, gp_idle_due(&r, 1000, 0));
  CHECK_EQ_INT(1900, gp_idle_due(&r, 1000, 1000)); /* grace ends after the window */
  CHECK_EQ_INT(5600, gp_idle_due(&r, 1000, 5000));
}

static void a_track_finds_the_start_of_an_idle_stretch(void) {
  gp_idle_track t = GP_IDLE_TRACK_INIT;
  /* Two GPUs, busy at 90% for 10 s, then nothing. */
  gp_idle_track_update(&t, 0, 2, 5, 100);
  CHECK(t.last_pct < 0);
  gp_idle_track_update(&t, 18, 2, 5, 110);
  CHECK_NEAR(90.0, t.last_pct, 1e-9);
  CHECK_EQ_INT(0, t.idle_since);
  gp_idle_track_update(&t, 18, 2, 5, 112); /* too short a span: not judged yet */
  CHECK_NEAR(90.0, t.last_pct, 1e-9);
  gp_idle_track_update(&t, 18.1, 2, 5, 120);
  CHECK_EQ_INT(110, t.idle_since);
  gp_idle_track_update(&t, 18.1, 2, 5, 200);
  CHECK_EQ_INT(110, t.idle_since);
  gp_idle_track_update(&t, 100, 2, 5, 210); /* busy again */
  CHECK_EQ_INT(0, t.idle_since);
  /* Unknown use (an MPS client): never idle. */
  gp_idle_track_update(&t, 100, 2, 5, 300);
  gp_idle_track_update(&t, -1, 2, 5, 400);
  CHECK_EQ_INT(0, t.idle_since);
  CHECK(t.last_pct < 0);
  gp_idle_track_update(&t, 100, 2, 5, 2000);
  gp_idle_track_update(&t, 100, 2, 5, 2010);
  CHECK_EQ_INT(2000, t.idle_since);
  gp_idle_track_update(&t, 1, 2, 5, 2020); /* the agent's total started again */
  CHECK_EQ_INT(2000, t.idle_since);
}

GP_TESTS(keys_left_out_take_the_defaults_and_interactive_inherits, errors_name_the_key,
         actions_fall_back_to_notify_for_jobs_they_may_not_touch,
         due_waits_for_the_window_and_the_grace, a_track_finds_the_start_of_an_idle_stretch)
