/* SPDX-License-Identifier: Apache-2.0 */
/* The health policy end to end on a simulated node: a fault is injected into the GPU
 * backend, telemetry samples it, the engine decides, and the test reads the actions the
 * agent would apply. Every action (ignore, fail_job, drain_gpu, drain_node, automatic
 * return, throttling condition) is driven by a simulated fault. */
#include "test.h"
#include "agent/gpu_sim.h"
#include "agent/health.h"
#include "agent/telemetry.h"

static int64_t now_ms;
static int64_t vclock(void *ctx) {
  (void)ctx;
  return now_ms;
}

typedef struct node {
  gp_gpu_backend *b;
  gp_telemetry *t;
  gp_health *h;
  gp_telemetry_view *v;
  gp_telemetry_job jobs[4];
  int n_jobs;
  gp_health_action acts[16];
  int n_acts;
} node;

static node *open_node(const char *spec, const gp_health_policy *p) {
  node *n = calloc(1, sizeof *n);
  now_ms = 1000;
  gp_gpu_sim_opts so = {.node_name = "n1", .clock_ms = vclock};
  REQUIRE(gp_gpu_sim_open(spec, &so, &n->b, NULL) == 0);
  gp_telemetry_opts to = {.hostname = "n1", .clock_ms = vclock};
  REQUIRE(gp_telemetry_new(n->b, &to, &n->t, NULL) == 0);
  n->h = gp_health_new(p, n->b);
  n->v = malloc(sizeof *n->v);
  return n;
}

static void close_node(node *n) {
  gp_health_free(n->h);
  gp_telemetry_free(n->t);
  n->b->ops->close(n->b);
  free(n->v);
  free(n);
}

static void run_job(node *n, const char *id, int gpu, pid_t pid) {
  gp_telemetry_job *j = &n->jobs[n->n_jobs++];
  memset(j, 0, sizeof *j);
  snprintf(j->id, sizeof j->id, "%s", id);
  j->leader = pid;
  j->n_gpus = 1;
  j->gpus[0] = gpu;
  gp_telemetry_set_jobs(n->t, n->jobs, n->n_jobs, NULL);
  gp_gpu_sim_attach(n->b, gpu, pid, NULL, 90, 1000, NULL);
}

static void stop_jobs(node *n) {
  for (int i = 0; i < n->n_jobs; i++) gp_gpu_sim_detach(n->b, n->jobs[i].leader);
  n->n_jobs = 0;
  gp_telemetry_set_jobs(n->t, NULL, 0, NULL);
}

/* One agent round: sample, collect events, evaluate. */
static void round_(node *n, int64_t advance_ms) {
  now_ms += advance_ms;
  gp_telemetry_sample(n->t);
  gp_gpu_event ev[32];
  int n_ev = 0;
  gp_telemetry_take_events(n->t, ev, 32, &n_ev);
  gp_telemetry_view_get(n->t, n->v);
  REQUIRE(gp_health_evaluate(n->h, n->v, ev, n_ev, n->jobs, n->n_jobs, now_ms, n->acts, 16,
                             &n->n_acts) == 0);
}

static void inject(node *n, const char *spec) { REQUIRE(gp_gpu_sim_inject_spec(n->b, spec, NULL) == 0); }

static void application_faults_are_ignored(void) {
  node *n = open_node("2xH100", NULL);
  run_job(n, "5", 0, 7001);
  round_(n, 1000);
  inject(n, "xid:13@gpu0;xid:31@gpu0;xid:43@gpu0;xid:45@gpu0");
  round_(n, 1000);
  CHECK_EQ_INT(0, n->n_acts);
  CHECK_EQ_INT(GP_GPU_STATE_HEALTHY, gp_health_gpu_state(n->h, 0, NULL, 0));
  close_node(n);
}

static void a_gpu_that_falls_off_the_bus_fails_its_job_and_is_drained(void) {
  node *n = open_node("4xH100", NULL);
  run_job(n, "12", 3, 7002);
  run_job(n, "13", 1, 7003);
  round_(n, 1000);
  inject(n, "xid:79@gpu3");
  round_(n, 1000);
  /* One fault, not two: the Xid and the unreadable GPU are the same failure. */
  REQUIRE(n->n_acts == 1);
  gp_health_action *a = &n->acts[0];
  CHECK_EQ_INT(GP_HEALTH_FAULT, a->kind);
  CHECK_EQ_INT(3, a->gpu);
  CHECK_EQ_INT(79, a->xid);
  CHECK_EQ_INT(GP_HEALTH_FAIL_JOB | GP_HEALTH_DRAIN_GPU, a->actions);
  CHECK_CONTAINS(a->reason, "fallen off the bus");
  REQUIRE(a->n_jobs == 1);
  CHECK_EQ_STR("12", a->jobs[0]); /* job 13 on GPU 1 is untouched */
  char buf[64], reason[256];
  CHECK_EQ_STR("fail_job,drain_gpu", gp_health_actions_str(a->actions, buf, sizeof buf));
  /* Failed, not merely drained: it does not answer, so it has no figures to show. */
  CHECK_EQ_INT(GP_GPU_STATE_FAILED, gp_health_gpu_state(n->h, 3, reason, sizeof reason));
  CHECK_CONTAINS(reason, "xid 79");
  CHECK(!n->v->have_sample[3]);
  CHECK_EQ_INT(0, (int)n->v->sample[3].power_w); /* no stale reading in the view */
  CHECK(n->v->sample[1].power_w > 0);
  /* Later rounds do not repeat it. */
  round_(n, 1000);
  CHECK_EQ_INT(0, n->n_acts);
  /* A reset brings it back; drained by the policy until `gpool resume` returns it. */
  stop_jobs(n);
  REQUIRE(gp_gpu_sim_reset(n->b, 3, NULL) == 0);
  round_(n, 1000);
  CHECK_EQ_INT(GP_GPU_STATE_DRAINED, gp_health_gpu_state(n->h, 3, NULL, 0));
  gp_health_resume(n->h, 3);
  CHECK_EQ_INT(GP_GPU_STATE_HEALTHY, gp_health_gpu_state(n->h, 3, NULL, 0));
  close_node(n);
}

static void double_bit_ecc_fails_the_job_once(void) {
  node *n = open_node("2xA100-80GB", NULL);
  run_job(n, "20", 1, 7004);
  round_(n, 1000);
  inject(n, "ecc_dbe:1@gpu1"); /* raises the counter and reports Xid 48 */
  round_(n, 1000);
  REQUIRE(n->n_acts == 1);
  CHECK_EQ_INT(48, n->acts[0].xid);
  CHECK_EQ_INT(GP_HEALTH_FAIL_JOB | GP_HEALTH_DRAIN_GPU, n->acts[0].actions);
  CHECK_EQ_STR("20", n->acts[0].jobs[0]);
  close_node(n);
}

static void a_single_bit_storm_drains_the_gpu_but_a_trickle_does_not(void) {
  node *n = open_node("2xH100", NULL); /* storm: 100 within 60 s */
  round_(n, 1000);
  for (int i = 0; i < 4; i++) { /* a trickle: 10 every 20 s */
    inject(n, "ecc_sbe:10@gpu0");
    round_(n, 20000);
    CHECK_EQ_INT(0, n->n_acts);
  }
  for (int i = 0; i < 4; i++) { /* a storm: 30 per second */
    inject(n, "ecc_sbe:30@gpu1");
    round_(n, 1000);
    if (i < 3) CHECK_EQ_INT(0, n->n_acts);
  }
  REQUIRE(n->n_acts == 1);
  CHECK_EQ_INT(1, n->acts[0].gpu);
  CHECK_EQ_INT(GP_HEALTH_DRAIN_GPU, n->acts[0].actions);
  CHECK_CONTAINS(n->acts[0].reason, "single-bit");
  close_node(n);
}

static void row_remap_failure_drains_and_the_reset_check_keeps_it_out(void) {
  gp_health_policy p;
  gp_health_policy_default(&p);
  p.auto_resume_after_s = 60;
  node *n = open_node("2xH100", &p);
  round_(n, 1000);
  inject(n, "remap_failure@gpu0");
  round_(n, 1000);
  REQUIRE(n->n_acts == 1);
  CHECK_CONTAINS(n->acts[0].reason, "row remapping failed");
  round_(n, 61000);
  CHECK_EQ_INT(0, n->n_acts); /* the reset check failed */
  char reason[256];
  CHECK_EQ_INT(GP_GPU_STATE_DRAINED, gp_health_gpu_state(n->h, 0, reason, sizeof reason));
  CHECK_CONTAINS(reason, "needs replacing");
  close_node(n);
}

static void a_drained_gpu_returns_after_a_successful_reset_check(void) {
  gp_health_policy p;
  gp_health_policy_default(&p);
  p.auto_resume_after_s = 60;
  node *n = open_node("2xH100", &p);
  run_job(n, "30", 1, 7005);
  round_(n, 1000);
  inject(n, "xid:74@gpu1"); /* NVLink error */
  round_(n, 1000);
  REQUIRE(n->n_acts == 1);
  CHECK_EQ_INT(GP_HEALTH_FAIL_JOB | GP_HEALTH_DRAIN_GPU, n->acts[0].actions);
  /* Not while the failed job's processes are still on it. */
  round_(n, 61000);
  CHECK_EQ_INT(0, n->n_acts);
  stop_jobs(n);
  round_(n, 61000);
  REQUIRE(n->n_acts == 1);
  CHECK_EQ_INT(GP_HEALTH_RESUME_GPU, n->acts[0].kind);
  CHECK_EQ_INT(1, n->acts[0].gpu);
  CHECK_EQ_INT(GP_GPU_STATE_HEALTHY, gp_health_gpu_state(n->h, 1, NULL, 0));
  close_node(n);
}

static void a_node_level_fault_drains_the_node(void) {
  node *n = open_node("2xB200", NULL);
  run_job(n, "40", 0, 7006);
  round_(n, 1000);
  inject(n, "xid:154@gpu0");
  round_(n, 1000);
  REQUIRE(n->n_acts == 1);
  CHECK(n->acts[0].actions & GP_HEALTH_DRAIN_NODE);
  char reason[256], conds[128];
  CHECK(gp_health_node_drained(n->h, reason, sizeof reason));
  CHECK_CONTAINS(reason, "xid 154");
  gp_health_conditions(n->h, conds, sizeof conds);
  CHECK_CONTAINS(conds, "drained");
  gp_health_resume(n->h, -1);
  CHECK(!gp_health_node_drained(n->h, NULL, 0));
  close_node(n);
}

static void sustained_thermal_throttling_is_a_node_condition(void) {
  node *n = open_node("2xH100", NULL); /* window 30 s */
  round_(n, 1000);
  inject(n, "thermal@gpu1,for=50s");
  round_(n, 10000);
  CHECK_EQ_INT(0, n->n_acts); /* a blip is not a condition */
  round_(n, 30000);
  REQUIRE(n->n_acts == 1);
  CHECK_EQ_INT(GP_HEALTH_CONDITION, n->acts[0].kind);
  CHECK_EQ_STR("thermal_throttling", n->acts[0].condition);
  CHECK(n->acts[0].active);
  char conds[128];
  gp_health_conditions(n->h, conds, sizeof conds);
  CHECK_EQ_STR("thermal_throttling", conds);
  round_(n, 20000); /* the throttling ended */
  REQUIRE(n->n_acts == 1);
  CHECK(!n->acts[0].active);
  close_node(n);
}

static void the_policy_is_configurable_and_errors_name_the_line(void) {
  const char *yaml = "health:\n"
                     "  xid:\n"
                     "    \"13\": [fail_job]\n"
                     "    \"79\": drain_node\n"
                     "    default: drain_gpu\n"
                     "  double_bit_ecc: ignore\n"
                     "  sbe_storm: {count: 5, window: 10s, action: [drain_gpu]}\n"
                     "  auto_resume: 10m\n";
  gp_doc *d = NULL;
  REQUIRE(gp_doc_load_string("gpool.yaml", yaml, strlen(yaml), &d, NULL) == 0);
  gp_health_policy p;
  gp_health_policy_default(&p);
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_health_policy_load(d, gp_doc_get(d->root, "health"), &p, &e));
  CHECK_EQ_INT(GP_HEALTH_FAIL_JOB, gp_health_xid_actions(&p, 13));
  CHECK_EQ_INT(GP_HEALTH_DRAIN_NODE, gp_health_xid_actions(&p, 79));
  CHECK_EQ_INT(GP_HEALTH_DRAIN_GPU, gp_health_xid_actions(&p, 12345));
  CHECK_EQ_INT(GP_HEALTH_FAIL_JOB | GP_HEALTH_DRAIN_GPU, gp_health_xid_actions(&p, 48));
  CHECK_EQ_INT(0, p.double_bit_ecc);
  CHECK_EQ_INT(5, p.sbe_storm_count);
  CHECK_EQ_INT(10, p.sbe_storm_window_s);
  CHECK_EQ_INT(600, p.auto_resume_after_s);
  gp_doc_free(d);
  const char *bad = "health:\n  xid:\n    \"79\": reboot\n";
  REQUIRE(gp_doc_load_string("gpool.yaml", bad, strlen(bad), &d, NULL) == 0);
  CHECK_EQ_INT(GP_EINVAL, gp_health_policy_load(d, gp_doc_get(d->root, "health"), &p, &e));
  CHECK_EQ_INT(3, e.line);
  CHECK_EQ_STR("health.xid.79", e.field);
  CHECK_CONTAINS(e.message, "unknown action 'reboot'");
  gp_doc_free(d);
  const char *typo = "health:\n  double_bit_ec: ignore\n";
  REQUIRE(gp_doc_load_string("gpool.yaml", typo, strlen(typo), &d, NULL) == 0);
  CHECK_EQ_INT(GP_EINVAL, gp_health_policy_load(d, gp_doc_get(d->root, "health"), &p, &e));
  CHECK_CONTAINS(e.field, "double_bit_ec");
  gp_doc_free(d);
}

GP_TESTS(application_faults_are_ignored, a_gpu_that_falls_off_the_bus_fails_its_job_and_is_drained,
         double_bit_ecc_fails_the_job_once, a_single_bit_storm_drains_the_gpu_but_a_trickle_does_not,
         row_remap_failure_drains_and_the_reset_check_keeps_it_out,
         a_drained_gpu_returns_after_a_successful_reset_check, a_node_level_fault_drains_the_node,
         sustained_thermal_throttling_is_a_node_condition,
         the_policy_is_configurable_and_errors_name_the_line)
