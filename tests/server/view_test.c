/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler's kept view (src/server/state/view.c): entries follow their records through
 * marks, and a plan's job indices keep naming the jobs they named at the sync while the plan
 * is applied, although ending a job moves another in the active list. */
#include "test.h"
#include "server/cycle/parts.h"
#include "server/state/state.h"

static gp_srv_job *pending_job(gp_srv_state *s, const gp_server_config *cfg, int64_t id) {
  json_t *o = json_loads("{\"command\": [\"true\"], \"gpus\": 1}", 0, NULL);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  REQUIRE(gp__srv_job_parse(cfg, o, "alice", false, &j, &e) == 0);
  json_decref(o);
  j->id = id;
  snprintf(j->idstr, sizeof j->idstr, "%lld", (long long)id);
  gp__srv_job_insert(s, j);
  return j;
}

static void plan_indices_survive_the_active_list_moving(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  s->sched_check = true; /* every kept entry is compared with its record at each sync */
  gp_srv_job *a = pending_job(s, cfg, 1), *b = pending_job(s, cfg, 2), *c = pending_job(s, cfg, 3);
  const gp_view *v = gp__srv_view_sync(s);
  REQUIRE(v->n_jobs == 3);
  CHECK(gp__srv_view_job(s, 0) == a && gp__srv_view_job(s, 1) == b && gp__srv_view_job(s, 2) == c);
  CHECK_EQ_STR("1", v->jobs[0].id);
  /* Applying a plan ends job 1: the last active job takes its place in the active list, but
   * the plan's index 2 still means job 3 and index 0 job 1. */
  gp__srv_job_set_state(s, a, GP_JOB_CANCELLED);
  CHECK_EQ_INT(2, s->n_active);
  CHECK(gp__srv_view_job(s, 2) == c);
  CHECK(gp__srv_view_job(s, 0) == a);
  CHECK(gp__srv_view_job(s, 3) == NULL);
  /* The next sync rewrites what moved and what changed, and nothing else is stale. */
  uint64_t rev_b = b->rev;
  v = gp__srv_view_sync(s);
  REQUIRE(v->n_jobs == 2);
  CHECK_EQ_STR("3", v->jobs[0].id);
  CHECK_EQ_STR("2", v->jobs[1].id);
  CHECK(b->rev == rev_b);        /* untouched: same rev, the memo keeps what it knew */
  CHECK(v->job_revs[0] == c->rev); /* moved: a new rev */
  CHECK_EQ_INT(0, s->view.n_stale_jobs);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

static void a_change_marked_on_a_record_reaches_its_entry(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  s->sched_check = true;
  gp_srv_job *a = pending_job(s, cfg, 1);
  gp__srv_view_sync(s);
  a->started_at = 77; /* a write, then its mark, as every job write does */
  gp__srv_job_changed(s, a);
  const gp_view *v = gp__srv_view_sync(s);
  CHECK_EQ_INT(77, v->jobs[0].started_at);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

/* A job inserted under an id already held replaces the old one everywhere: the active list
 * (and so the view) names the new job only, and the old one, freed, is named nowhere. Before,
 * the active list kept the freed job beside the new one (the Release server's abort at load
 * when a store listed a job twice). */
static void a_replaced_job_leaves_the_active_list(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  s->sched_check = true;
  pending_job(s, cfg, 1);
  gp_srv_job *b = pending_job(s, cfg, 2);
  gp__srv_view_sync(s);
  gp_srv_job *b2 = pending_job(s, cfg, 2);
  REQUIRE(b2 != b);
  CHECK_EQ_INT(2, s->n_active);
  CHECK(s->jobs[2] == b2);
  for (int i = 0; i < s->n_active && i < 2; i++) CHECK(s->active[i]->active_pos == i);
  CHECK(s->active[0] == b2 || s->active[1] == b2);
  const gp_view *v = gp__srv_view_sync(s);
  CHECK_EQ_INT(2, v->n_jobs);
  CHECK_EQ_INT(0, s->view.n_stale_jobs);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

GP_TESTS(plan_indices_survive_the_active_list_moving, a_change_marked_on_a_record_reaches_its_entry,
         a_replaced_job_leaves_the_active_list)
