/* SPDX-License-Identifier: Apache-2.0 */
/* The named hooks (hooks.c): handlers run in the order they were registered and the first
 * error stops the rest; a setting reaches the handlers registered for its name or prefix;
 * and a state made for serving (parts.c) fires its hooks where jobs change, beside the
 * features' own handlers, and frees through them. */
#include "test.h"
#include "server/state/hooks.h"
#include "server/cycle/parts.h"
#include "server/state/state.h"

static char seen[64];
static int n_seen;
static int fail_at = -1;

static int note(char c, gp_err *err) {
  if (n_seen < (int)sizeof seen - 1) seen[n_seen++] = c;
  if (n_seen - 1 == fail_at) return gp_err_set(err, GP_EIO, NULL, 0, NULL, "handler %c failed", c);
  return 0;
}
static int hook_a(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) { (void)s, (void)ev; return note('a', err); }
static int hook_b(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) { (void)s, (void)ev; return note('b', err); }
static int hook_c(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) { (void)s, (void)ev; return note('c', err); }

static void reset(void) {
  memset(seen, 0, sizeof seen);
  n_seen = 0;
  fail_at = -1;
}

static void handlers_run_in_order_until_one_fails(void) {
  gp_srv_hooks h = {0};
  gp__srv_hook_add(&h, GP_SRV_HOOK_TICK, NULL, hook_a);
  gp__srv_hook_add(&h, GP_SRV_HOOK_TICK, NULL, hook_b);
  gp__srv_hook_add(&h, GP_SRV_HOOK_TICK, NULL, hook_c);
  gp__srv_hook_add(&h, GP_SRV_HOOK_FREE, NULL, hook_c);
  gp_err err = {0};
  reset();
  CHECK_EQ_INT(0, gp__srv_hook_fire(NULL, &h, GP_SRV_HOOK_TICK, &(gp_srv_hook_ev){0}, &err));
  CHECK_EQ_STR("abc", seen);
  reset();
  fail_at = 1;
  CHECK_EQ_INT(GP_EIO, gp__srv_hook_fire(NULL, &h, GP_SRV_HOOK_TICK, &(gp_srv_hook_ev){0}, &err));
  CHECK_EQ_STR("ab", seen);
  CHECK_EQ_STR("handler b failed", err.message);
  reset();
  CHECK_EQ_INT(0, gp__srv_hook_fire(NULL, &h, GP_SRV_HOOK_JOB_STATE, &(gp_srv_hook_ev){0}, &err));
  CHECK_EQ_STR("", seen);
}

static void a_setting_reaches_the_handlers_of_its_name_or_prefix(void) {
  gp_srv_hooks h = {0};
  gp__srv_hook_add(&h, GP_SRV_HOOK_SETTING, "budget/", hook_a);
  gp__srv_hook_add(&h, GP_SRV_HOOK_SETTING, "prices", hook_b);
  gp__srv_hook_add(&h, GP_SRV_HOOK_SETTING, "registry-pool/", hook_c);
  gp_err err = {0};
  const char *names[] = {"budget/org", "prices", "prices2", "budget", "registry-pool/x", "registry/x"};
  const char *want[] = {"a", "b", "", "", "c", ""};
  for (int i = 0; i < 6; i++) {
    reset();
    CHECK_EQ_INT(0, gp__srv_hook_fire(NULL, &h, GP_SRV_HOOK_SETTING,
                                      &(gp_srv_hook_ev){.name = names[i], .doc = "{}"}, &err));
    CHECK_EQ_STR(want[i], seen);
  }
}

static gp_srv_job *last_job;
static int last_old = -1, job_changes;
static int on_job_state(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)s, (void)err;
  last_job = ev->job;
  last_old = ev->old_state;
  return 0;
}
static int on_job_changed(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)s, (void)err;
  if (ev->job) job_changes++;
  return 0;
}
static int frees;
static int on_free(gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err) {
  (void)s, (void)ev, (void)err;
  frees++;
  return 0;
}

static void a_made_state_fires_its_hooks_where_jobs_change(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  /* The features are wired: a handler on each hook the state fires for jobs and freeing. */
  CHECK(s->hooks.n[GP_SRV_HOOK_JOB_STATE] >= 2);
  CHECK(s->hooks.n[GP_SRV_HOOK_RUN_ENDED] >= 3);
  CHECK(s->hooks.n[GP_SRV_HOOK_TICK] >= 6);
  CHECK(s->hooks.n[GP_SRV_HOOK_FREE] >= 10);
  gp__srv_hook_add(&s->hooks, GP_SRV_HOOK_JOB_STATE, NULL, on_job_state);
  gp__srv_hook_add(&s->hooks, GP_SRV_HOOK_JOB_CHANGED, NULL, on_job_changed);
  gp__srv_hook_add(&s->hooks, GP_SRV_HOOK_FREE, NULL, on_free);
  json_t *o = json_loads("{\"command\": [\"true\"], \"gpus\": 1}", 0, NULL);
  REQUIRE(o);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  REQUIRE(gp__srv_job_parse(cfg, o, "alice", false, &j, &e) == 0);
  json_decref(o);
  j->id = 1;
  snprintf(j->idstr, sizeof j->idstr, "1");
  gp__srv_job_insert(s, j);
  CHECK(job_changes >= 1);
  int before = job_changes;
  gp__srv_job_set_state(s, j, GP_JOB_HELD);
  CHECK(last_job == j);
  CHECK_EQ_INT(GP_JOB_PENDING, last_old);
  CHECK(job_changes > before);
  gp__srv_state_free(s);
  CHECK_EQ_INT(1, frees);
  gp_server_config_free(cfg);
}

GP_TESTS(handlers_run_in_order_until_one_fails, a_setting_reaches_the_handlers_of_its_name_or_prefix,
         a_made_state_fires_its_hooks_where_jobs_change)
