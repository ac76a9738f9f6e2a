/* SPDX-License-Identifier: Apache-2.0 */
/* Autoscaling's proposal: a pending gang that no node holds gets the fewest nodes of the
 * first template in order that holds it whole; nodes on their way are used before new ones
 * are asked; backoff, max_nodes and the cost cap pass a template over; spot follows the job
 * and its queue; a job only a template could hold waits instead of ending; only empty
 * provider nodes idle long enough are scaled down, within the disruption budget. */
#include "core/scale.h"
#include "fixture.h"

#define NT 8

typedef struct sx {
  fx *f;
  gp_template t[NT];
  gp_scale_template st[NT];
  gp_scale_config cfg;
  int node_template[FX_MAX];
  gp_time idle_since[FX_MAX];
} sx;

static sx *sx_new(void) {
  sx *s = calloc(1, sizeof *s);
  s->f = fx_new();
  s->f->view.templates = s->t;
  s->cfg.templates = s->st;
  gp_scale_default_ranks(s->cfg.class_rank);
  s->cfg.max_hourly_cost = GP_NO_LIMIT;
  s->cfg.node_template = s->node_template;
  s->cfg.node_idle_since = s->idle_since;
  for (int i = 0; i < FX_MAX; i++) s->node_template[i] = -1;
  return s;
}

static void sx_free(sx *s) {
  fx_free(s->f);
  free(s);
}

static int sx_template(sx *s, const char *name, const char *model, int gpus, gp_capacity cap, double price,
                       int max_nodes) {
  int t = s->f->view.n_templates++;
  s->t[t] = (gp_template){.node = {.name = name, .model = model, .gpu_mem_mib = 81920, .n_gpus = gpus,
                                   .cpu_milli = 96000, .mem_mib = 1024 * 1024, .capacity = cap},
                          .max_nodes = max_nodes};
  s->st[t] = (gp_scale_template){.price_per_gpu_hour = price, .disruption_budget = 1};
  return t;
}

/* A step and the proposal on its plan. */
static gp_plan *sx_step(sx *s, gp_time now) {
  gp_plan *p = fx_step(s->f, now);
  REQUIRE(p);
  gp_err e = {0};
  REQUIRE(gp_scale_propose(&s->f->pol, &s->f->view, &s->cfg, p, &e) == 0);
  return p;
}

static const gp_plan_scale_note *note_of(sx *s, const gp_plan *p, const char *id) {
  int j = fx_index(s->f, id);
  for (int k = 0; k < p->n_scale_notes; k++)
    if (p->scale_notes[k].job == j) return &p->scale_notes[k];
  return NULL;
}

static void a_gang_gets_the_fewest_nodes_of_the_first_template(void) {
  sx *s = sx_new();
  fx_node(s->f, "n0", "H100", 8);
  fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
  fx_running(s->f, "busy", "a", 8, 0, 0xff, 0);
  int od = sx_template(s, "h100-od", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 10);
  int prem = sx_template(s, "h100-prem", "H100", 8, GP_CAP_ON_PREM, 1.0, 10);
  fx_job(s->f, "gang", "a", 8, 2);
  gp_plan *p = sx_step(s, 100);
  REQUIRE(p->n_creates == 1);
  CHECK_EQ_INT(prem, p->creates[0].tmpl); /* on-prem before on-demand */
  CHECK_EQ_INT(2, p->creates[0].count);
  CHECK_EQ_INT(fx_index(s->f, "gang"), p->creates[0].job);
  const gp_plan_scale_note *n = note_of(s, p, "gang");
  REQUIRE(n);
  CHECK_EQ_INT(GP_SCALE_WAITING, n->state);
  CHECK_EQ_INT(2, n->count);
  gp_plan_free(p);
  (void)od;
  sx_free(s);
}

static void nodes_on_their_way_are_used_before_asking_again(void) {
  sx *s = sx_new();
  fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
  int t = sx_template(s, "h100", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 10);
  s->st[t].nodes = s->st[t].creating = 1;
  fx_job(s->f, "j1", "a", 4, 1);
  fx_job(s->f, "j2", "a", 4, 1); /* both fit the one node being created */
  fx_job(s->f, "j3", "a", 4, 1); /* this one needs another */
  gp_plan *p = sx_step(s, 100);
  REQUIRE(p->n_creates == 1);
  CHECK_EQ_INT(1, p->creates[0].count);
  CHECK_EQ_INT(fx_index(s->f, "j3"), p->creates[0].job);
  CHECK_EQ_INT(GP_SCALE_WAITING, note_of(s, p, "j1")->state);
  CHECK_EQ_INT(GP_SCALE_WAITING, note_of(s, p, "j2")->state);
  gp_plan_free(p);
  /* The same step again proposes the same: the proposal is a function of its inputs. */
  gp_plan *a = sx_step(s, 100), *b = sx_step(s, 100);
  CHECK(gp_plan_equal(a, b));
  gp_plan_free(a);
  gp_plan_free(b);
  sx_free(s);
}

/* A gang's nodes register one at a time: the registered one's free GPUs and the one still
 * on its way hold the gang, so nothing more is asked. */
static void a_gang_half_registered_is_not_asked_for_again(void) {
  sx *s = sx_new();
  fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
  int t = sx_template(s, "h100", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 10);
  fx_node(s->f, "p0", "H100", 8);
  s->node_template[0] = t;
  s->st[t].nodes = 2;
  s->st[t].creating = 1;
  fx_job(s->f, "gang", "a", 8, 2);
  gp_plan *p = sx_step(s, 100);
  CHECK(!fx_started(s->f, p, "gang"));
  CHECK_EQ_INT(0, p->n_creates);
  CHECK_EQ_INT(GP_SCALE_WAITING, note_of(s, p, "gang")->state);
  CHECK_EQ_INT(2, note_of(s, p, "gang")->count);
  gp_plan_free(p);
  /* Its GPUs taken by another job, the node no longer counts: the gang asks again. */
  fx_running(s->f, "other", "a", 8, 0, 0xff, 50);
  p = sx_step(s, 100);
  REQUIRE(p->n_creates == 1);
  CHECK_EQ_INT(1, p->creates[0].count);
  gp_plan_free(p);
  sx_free(s);
}

static void backoff_max_nodes_and_cost_pass_a_template_over(void) {
  sx *s = sx_new();
  fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
  int cheap = sx_template(s, "cheap", "H100", 8, GP_CAP_ON_DEMAND, 2.0, 4);
  int dear = sx_template(s, "dear", "H100", 8, GP_CAP_ON_DEMAND, 5.0, 4);
  fx_job(s->f, "j", "a", 8, 1);
  s->st[cheap].retry_at = 200; /* its provider failed: backing off until 200 */
  gp_plan *p = sx_step(s, 100);
  REQUIRE(p->n_creates == 1);
  CHECK_EQ_INT(dear, p->creates[0].tmpl);
  gp_plan_free(p);
  p = sx_step(s, 200); /* backoff over: the cheaper one again */
  REQUIRE(p->n_creates == 1);
  CHECK_EQ_INT(cheap, p->creates[0].tmpl);
  gp_plan_free(p);
  s->st[cheap].nodes = 4; /* at max_nodes */
  s->cfg.max_hourly_cost = 30;
  s->cfg.hourly_cost = 0;   /* 8 x 5.0 = 40/h would pass 30/h */
  p = sx_step(s, 300);
  CHECK_EQ_INT(0, p->n_creates);
  const gp_plan_scale_note *n = note_of(s, p, "j");
  REQUIRE(n);
  CHECK_EQ_INT(GP_SCALE_MAX_NODES, n->state); /* the first template in order says why */
  CHECK_EQ_INT(cheap, n->tmpl);
  gp_plan_free(p);
  s->st[cheap].nodes = 0;
  s->st[cheap].price_per_gpu_hour = -1; /* no price: never used under a cap */
  p = sx_step(s, 300);
  CHECK_EQ_INT(0, p->n_creates);
  CHECK_EQ_INT(GP_SCALE_COST_CAP, note_of(s, p, "j")->state);
  gp_plan_free(p);
  s->cfg.max_hourly_cost = 40;
  p = sx_step(s, 300);
  REQUIRE(p->n_creates == 1);
  CHECK_EQ_INT(dear, p->creates[0].tmpl);
  gp_plan_free(p);
  sx_free(s);
}

static void spot_follows_the_job_and_its_queue(void) {
  sx *s = sx_new();
  gp_queue *train = fx_queue(s->f, "train", 0, GP_NO_LIMIT, 1);
  gp_queue *infer = fx_queue(s->f, "infer", 0, GP_NO_LIMIT, 1);
  int spot = sx_template(s, "spot", "H100", 8, GP_CAP_SPOT, 1.5, 10);
  int od = sx_template(s, "od", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 10);
  gp_job *a = fx_job(s->f, "a", "train", 8, 1);
  a->req.allow_spot = true;
  fx_job(s->f, "b", "train", 8, 1); /* does not allow spot */
  gp_job *c = fx_job(s->f, "c", "infer", 8, 1);
  c->req.allow_spot = true;
  infer->spot = GP_SPOT_NEVER;
  gp_plan *p = sx_step(s, 100);
  REQUIRE(p->n_creates == 3);
  CHECK_EQ_INT(spot, p->creates[0].tmpl); /* spot ranks before on-demand by default */
  CHECK_EQ_INT(od, p->creates[1].tmpl);
  CHECK_EQ_INT(od, p->creates[2].tmpl);
  gp_plan_free(p);
  /* A queue that avoids spot asks for on-demand first; one that prefers it, for spot even
   * when on-prem comes first. */
  train->spot = GP_SPOT_AVOID;
  p = sx_step(s, 100);
  CHECK_EQ_INT(od, p->creates[0].tmpl);
  gp_plan_free(p);
  /* A parent's setting holds for a queue that sets none. */
  infer->spot = GP_SPOT_NEUTRAL;
  infer->name = "serve/infer";
  c->queue = "serve/infer";
  fx_queue(s->f, "serve", 0, GP_NO_LIMIT, 1)->spot = GP_SPOT_NEVER;
  p = sx_step(s, 100);
  REQUIRE(p->n_creates == 3);
  CHECK_EQ_INT(od, p->creates[2].tmpl);
  gp_plan_free(p);
  int prem = sx_template(s, "prem", "H100", 8, GP_CAP_ON_PREM, 0.5, 10);
  train->spot = GP_SPOT_PREFER;
  p = sx_step(s, 100);
  CHECK_EQ_INT(spot, p->creates[0].tmpl);
  CHECK_EQ_INT(prem, p->creates[1].tmpl);
  gp_plan_free(p);
  sx_free(s);
}

static void a_job_only_a_template_holds_waits_instead_of_ending(void) {
  sx *s = sx_new();
  fx_node(s->f, "n0", "A100", 8);
  fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
  fx_models(s->f, fx_job(s->f, "h", "a", 8, 1), "H100");
  fx_job(s->f, "big", "a", 8, 3); /* 24 GPUs: the fleet has 8 */
  gp_plan *p = sx_step(s, 10);
  CHECK_EQ_STR("GpuModelUnknown", fx_ended(s->f, p, "h"));
  CHECK_EQ_STR("NoMatchingNodes", fx_ended(s->f, p, "big"));
  gp_plan_free(p);
  int t = sx_template(s, "h100", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 4);
  p = sx_step(s, 10);
  CHECK_EQ_STR("-", fx_ended(s->f, p, "h"));
  CHECK_EQ_STR("GpuModelUnavailable", fx_reason(s->f, p, "h"));
  CHECK_EQ_STR("-", fx_ended(s->f, p, "big"));
  REQUIRE(p->n_creates == 2);
  CHECK_EQ_INT(t, p->creates[0].tmpl);
  CHECK_EQ_INT(1, p->creates[0].count);
  CHECK_EQ_INT(3, p->creates[1].count);
  gp_plan_free(p);
  gp_request r = {.tasks = 5, .gpus_per_task = 8};
  CHECK(!gp_scale_could_hold(&s->t[t], &r)); /* 5 nodes, max_nodes 4 */
  r.tasks = 4;
  CHECK(gp_scale_could_hold(&s->t[t], &r));
  sx_free(s);
}

static void only_empty_idle_nodes_are_scaled_down_within_the_budget(void) {
  sx *s = sx_new();
  fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
  int t = sx_template(s, "h100", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 10);
  for (int i = 0; i < 4; i++) fx_node(s->f, i == 0 ? "p0" : i == 1 ? "p1" : i == 2 ? "p2" : "p3", "H100", 8);
  fx_node(s->f, "fixed", "H100", 8); /* not a provider's: never scaled down */
  for (int i = 0; i < 4; i++) s->node_template[i] = t;
  s->st[t].nodes = 4;
  s->st[t].disruption_budget = 2;
  s->cfg.scale_down_after = 600;
  s->idle_since[0] = 100;  /* idle 900 s at 1000 */
  s->idle_since[1] = 0;    /* holds a job */
  fx_running(s->f, "r", "a", 8, 1, 0xff, 50);
  s->idle_since[2] = 900;  /* idle only 100 s */
  s->idle_since[3] = 200;
  s->idle_since[4] = 1;
  gp_plan *p = sx_step(s, 1000);
  REQUIRE(p->n_deletes == 2);
  CHECK_EQ_INT(0, p->deletes[0].node);
  CHECK_EQ_INT(3, p->deletes[1].node);
  gp_plan_free(p);
  /* One deletion already under way leaves room for one more. */
  s->st[t].deleting = 1;
  p = sx_step(s, 1000);
  CHECK_EQ_INT(1, p->n_deletes);
  gp_plan_free(p);
  /* A node that receives a start in the plan is not idle. */
  s->st[t].deleting = 0;
  s->idle_since[1] = 100;
  s->f->jobs[0].state = GP_JOB_COMPLETED; /* r ended: p1 is empty ... */
  fx_job(s->f, "new", "a", 8, 2);        /* ... and this gang takes p0 and p1 */
  p = sx_step(s, 1000);
  REQUIRE(fx_started(s->f, p, "new"));
  for (int k = 0; k < p->n_deletes; k++) {
    int node = p->deletes[k].node;
    for (int q = 0; q < fx_start(s->f, p, "new")->n_placements; q++)
      CHECK(fx_start(s->f, p, "new")->placements[q].node != node);
  }
  gp_plan_free(p);
  sx_free(s);
}

static void a_bad_configuration_is_refused(void) {
  sx *s = sx_new();
  fx_node(s->f, "n0", "H100", 8);
  sx_template(s, "h100", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 10);
  s->node_template[0] = 5;
  gp_plan *p = fx_step(s->f, 10);
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_scale_propose(&s->f->pol, &s->f->view, &s->cfg, p, &e));
  CHECK_EQ_STR("node_template", e.field);
  gp_plan_free(p);
  sx_free(s);
}

/* An exact node count (Slurm's -N) is the number of nodes asked: 4 tasks of 2 GPUs on
 * exactly 2 (or 4) nodes of 8 GPUs need 2 (or 4) of them, not the 1 that would hold the
 * GPUs; a node on its way counts as one of them; more nodes than a template may have pass
 * it over. */
static void a_gang_with_an_exact_node_count_gets_that_many_nodes(void) {
  for (int nodes = 0; nodes <= 4; nodes += 2) {
    sx *s = sx_new();
    fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
    int t = sx_template(s, "h100", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 10);
    fx_job(s->f, "gang", "a", 2, 4)->req.nodes = nodes;
    gp_plan *p = sx_step(s, 100);
    REQUIRE(p->n_creates == 1);
    CHECK_EQ_INT(t, p->creates[0].tmpl);
    CHECK_EQ_INT(nodes ? nodes : 1, p->creates[0].count);
    CHECK_EQ_INT(nodes ? nodes : 1, note_of(s, p, "gang")->count);
    gp_plan_free(p);
    /* Asked again with those nodes on their way: nothing more. */
    s->st[t].nodes = s->st[t].creating = nodes ? nodes : 1;
    p = sx_step(s, 100);
    CHECK_EQ_INT(0, p->n_creates);
    CHECK_EQ_INT(GP_SCALE_WAITING, note_of(s, p, "gang")->state);
    gp_plan_free(p);
    sx_free(s);
  }
  /* One node on its way, two wanted: one more. */
  sx *s = sx_new();
  fx_queue(s->f, "a", 0, GP_NO_LIMIT, 1);
  int t = sx_template(s, "h100", "H100", 8, GP_CAP_ON_DEMAND, 4.0, 3);
  s->st[t].nodes = s->st[t].creating = 1;
  fx_job(s->f, "gang", "a", 2, 2)->req.nodes = 2;
  gp_plan *p = sx_step(s, 100);
  REQUIRE(p->n_creates == 1);
  CHECK_EQ_INT(1, p->creates[0].count);
  CHECK_EQ_INT(GP_SCALE_WAITING, note_of(s, p, "gang")->state);
  gp_plan_free(p);
  /* Four nodes of a template that may have three: never that template. */
  CHECK(!gp_scale_could_hold(&s->t[t], &(gp_request){.tasks = 4, .gpus_per_task = 1, .nodes = 4}));
  CHECK(gp_scale_could_hold(&s->t[t], &(gp_request){.tasks = 4, .gpus_per_task = 1, .nodes = 3}));
  sx_free(s);
}

GP_TESTS(a_gang_gets_the_fewest_nodes_of_the_first_template,
         nodes_on_their_way_are_used_before_asking_again, a_gang_half_registered_is_not_asked_for_again,
         backoff_max_nodes_and_cost_pass_a_template_over, spot_follows_the_job_and_its_queue,
         a_job_only_a_template_holds_waits_instead_of_ending,
         only_empty_idle_nodes_are_scaled_down_within_the_budget, a_bad_configuration_is_refused,
         a_gang_with_an_exact_node_count_gets_that_many_nodes)
