/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's idle model and idle policy (sim/replay/idle.c, engine.c): a job whose trace
 * row says it holds its GPUs idle for its last `idle_tail` seconds is notified (nothing
 * freed) or released at exactly window (or grace) into that stretch; a stretch shorter
 * than the window is left alone; the freed GPUs start a waiting job earlier; cancel is
 * for the `opportunistic` class only; per-queue policies; the money of the freed GPU-hours;
 * bad idle_tail values and policy files named with line and field; the --idle-tail model
 * picks the same jobs for the same seed; and the command line end to end. */
#include <math.h>
#include <unistd.h>

#include "sim/replay/replay.h"
#include "replay_util.h"
#include "test.h"

static gp_replay_idle_policy *policy_of(const char *yaml) {
  char *path = write_tmp("idle.yaml", yaml);
  gp_replay_idle_policy *p = NULL;
  gp_err e = {0};
  if (gp_replay_idle_policy_load(path, &p, &e)) fprintf(stderr, "policy: %s\n", e.message);
  unlink(path);
  free(path);
  REQUIRE(p);
  return p;
}

/* Replays `csv` on `fleet` under the gpool preset with the idle policy `pol` (NULL: none). */
static gp_replay_result *replay(const char *csv, const char *fleet, const char *pol_yaml,
                                struct gp_prices *prices) {
  gp_replay_idle_policy *pol = pol_yaml ? policy_of(pol_yaml) : NULL;
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.idle_policy = pol;
  c.prices = prices;
  gp_replay_result *r = replay_csv(csv, fleet, false, &c);
  gp_replay_idle_policy_free(pol);
  return r;
}

/* One 2-GPU job of an hour, idle for its last 30 minutes. */
static const char one_job[] =
    "submit_time,duration,gpus,queue,idle_tail\n"
    "1000,3600,2,a,30m\n";

static void notify_frees_nothing(void) {
  gp_replay_result *r =
      replay(one_job, "1x8", "idle_policy: {window: 10m, grace: 10m, action: notify}\n", NULL);
  CHECK(r->idle.modelled);
  CHECK(!r->idle.assumed);
  CHECK(r->idle.policy);
  CHECK_EQ_INT(1, r->idle.jobs);
  CHECK_EQ_INT(1, r->idle.notified);
  CHECK_EQ_INT(0, r->idle.requeued);
  CHECK_NEAR(0, r->idle.released_gpu_hours, 1e-9);
  CHECK_NEAR(1.0, r->idle.held_gpu_hours, 1e-9); /* 2 GPUs x 30 min */
  CHECK_NEAR(1.0, r->idle.gpu_hours, 1e-9);
  CHECK_NEAR(3600, r->avg_jct_s, 1e-9);          /* it ran to its end */
  gp_replay_result_free(r);
}

static void requeue_frees_the_tail_less_the_window(void) {
  gp_replay_result *r =
      replay(one_job, "1x8", "idle_policy: {window: 10m, grace: 10m, action: requeue}\n", NULL);
  CHECK_EQ_INT(1, r->idle.requeued);
  CHECK_EQ_INT(0, r->idle.notified);
  /* Idle from 30 min, acted on at 40 min: 20 minutes of 2 GPUs freed, 10 held. */
  CHECK_NEAR(2 * 1200 / 3600.0, r->idle.released_gpu_hours, 1e-9);
  CHECK_NEAR(2 * 600 / 3600.0, r->idle.held_gpu_hours, 1e-9);
  CHECK_NEAR(1.0, r->idle.gpu_hours, 1e-9);
  CHECK_EQ_INT(1, r->completed); /* its work was done: it completed, at the action */
  CHECK_NEAR(2400, r->avg_jct_s, 1e-9);
  gp_replay_result_free(r);

  /* A job idle from its very start (a notebook never used) is not judged during the grace:
   * idle from 0 with a 1-minute window, acted on at the 10-minute grace, not at 1 minute.
   * Times from 0 also check the clock shift around gp_idle_due's "0: not idle". */
  r = replay("submit_time,duration,gpus,queue,idle_tail\n0,1000,1,a,1000\n", "1x8",
             "idle_policy: {window: 1m, grace: 10m, action: requeue}\n", NULL);
  CHECK_EQ_INT(1, r->idle.requeued);
  CHECK_NEAR(400 / 3600.0, r->idle.released_gpu_hours, 1e-9);
  CHECK_NEAR(600, r->avg_jct_s, 1e-9);
  gp_replay_result_free(r);
}

static void a_tail_shorter_than_the_window_is_untouched(void) {
  gp_replay_result *r = replay("submit_time,duration,gpus,queue,idle_tail\n1000,3600,1,a,300\n",
                               "1x8", "idle_policy: {window: 10m, grace: 0, action: requeue}\n",
                               NULL);
  CHECK_EQ_INT(0, r->idle.requeued);
  CHECK_EQ_INT(0, r->idle.notified);
  CHECK_NEAR(0, r->idle.released_gpu_hours, 1e-9);
  CHECK_NEAR(300 / 3600.0, r->idle.held_gpu_hours, 1e-9);
  CHECK_NEAR(3600, r->avg_jct_s, 1e-9);
  gp_replay_result_free(r);
}

static void released_gpus_start_a_waiting_job_earlier(void) {
  /* One GPU; the first job idles its last half hour; the second waits for the GPU. */
  static const char two[] =
      "submit_time,duration,gpus,queue,idle_tail\n"
      "1000,3600,1,a,1800\n"
      "1010,100,1,a,0\n";
  gp_replay_result *without = replay(two, "1x1", NULL, NULL);
  gp_replay_result *with =
      replay(two, "1x1", "idle_policy: {window: 10m, grace: 0, action: requeue}\n", NULL);
  CHECK(!without->idle.policy);
  CHECK_NEAR(1.0 * 1800 / 3600.0, without->idle.gpu_hours, 1e-9);
  CHECK_NEAR((0 + 3590) / 2.0, without->avg_wait_s, 1e-9); /* starts at 4600 */
  CHECK_NEAR((0 + 2390) / 2.0, with->avg_wait_s, 1e-9);    /* starts at 3400 */
  CHECK_EQ_INT(2, with->completed);
  CHECK_NEAR(1200 / 3600.0, with->idle.released_gpu_hours, 1e-9);
  gp_replay_result_free(without);
  gp_replay_result_free(with);
}

static void cancel_is_for_the_opportunistic_class_only(void) {
  static const char two[] =
      "submit_time,duration,gpus,queue,priority,idle_tail\n"
      "1000,3600,1,a,opportunistic,1800\n"
      "1000,3600,1,a,training,1800\n";
  gp_replay_result *r =
      replay(two, "1x8", "idle_policy: {window: 10m, grace: 0, action: cancel}\n", NULL);
  CHECK_EQ_INT(1, r->idle.cancelled);
  CHECK_EQ_INT(1, r->idle.notified); /* the training job may not be cancelled */
  CHECK_NEAR(1200 / 3600.0, r->idle.released_gpu_hours, 1e-9);
  gp_replay_result_free(r);
}

static void queues_may_have_their_own_policy(void) {
  static const char two[] =
      "submit_time,duration,gpus,queue,idle_tail\n"
      "1000,3600,1,a,1800\n"
      "1000,3600,1,b,1800\n";
  gp_replay_result *r = replay(two, "1x8",
                               "idle_policy: {window: 10m, grace: 0, action: requeue}\n"
                               "queues:\n  b: {action: notify}\n",
                               NULL);
  CHECK_EQ_INT(1, r->idle.requeued);
  CHECK_EQ_INT(1, r->idle.notified);
  gp_replay_result_free(r);

  /* A queue the replay does not have is an error naming it. */
  gp_trace *t = trace_of(two);
  gp_err e = {0};
  gp_fleet *f = NULL;
  REQUIRE(gp_fleet_load("1x8", false, &f, &e) == 0);
  gp_replay_queues *q = gp_replay_queues_from_trace(t);
  gp_replay_idle_policy *pol = policy_of("idle_policy: {action: requeue}\nqueues:\n  zz: {}\n");
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.idle_policy = pol;
  gp_replay_result *bad = NULL;
  CHECK_EQ_INT(GP_EINVAL, gp_replay_run(&c, t, f, q, &bad, &e));
  CHECK(bad == NULL);
  CHECK_CONTAINS(e.message, "'zz'");
  gp_replay_idle_policy_free(pol);
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
}

static void freed_gpu_hours_are_priced(void) {
  char *path = write_tmp("prices.yaml",
                         "prices:\n  currency: EUR\n  gpu_hour:\n"
                         "    - {model: \"*\", capacity: on-prem, price: 3.00}\n");
  struct gp_prices *p = NULL;
  gp_err e = {0};
  REQUIRE(gp_replay_prices_load(path, &p, &e) == 0);
  unlink(path);
  free(path);
  gp_replay_result *r =
      replay(one_job, "1x8", "idle_policy: {window: 10m, grace: 10m, action: requeue}\n", p);
  CHECK(r->idle.priced);
  CHECK(!r->idle.cost_unknown);
  CHECK_NEAR(3.00 * 2 * 1200 / 3600.0, r->idle.released_cost, 1e-6);
  CHECK_NEAR(3.00 * 1.0, r->idle.cost, 1e-6); /* held 10 min + freed 20 min of 2 GPUs */
  CHECK_NEAR(3.00 * 2 * 2400 / 3600.0, r->cost.jobs, 1e-6);
  gp_replay_result_free(r);
  gp_replay_prices_free(p);
}

/* The error for `text` (a trace of one bad row), formatted. */
static void bad_trace(const char *name, const char *text, const char *want) {
  gp_trace *t = NULL;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_trace_read_string(name, text, strlen(text), NULL, &t, &e));
  CHECK(t == NULL);
  char msg[512];
  gp_err_format(&e, msg, sizeof msg);
  CHECK_CONTAINS(msg, want);
}

static void bad_idle_tails_are_refused_with_line_and_field(void) {
  bad_trace("t.csv", "submit_time,duration,gpus,idle_tail\n0,100,1,10\n0,100,1,-5\n",
            "t.csv:3: idle_tail: expected seconds");
  bad_trace("t.csv", "submit_time,duration,gpus,idle_tail\n0,100,1,soon\n",
            "t.csv:2: idle_tail: expected seconds");
  bad_trace("t.csv", "submit_time,duration,gpus,idle_tail\n0,100,1,101\n",
            "t.csv:2: idle_tail: longer than the job's duration");
  bad_trace("t.jsonl", "{\"submit_time\": 0, \"duration\": 60, \"gpus\": 1, \"idle_tail\": \"2m\"}\n",
            "t.jsonl:1: idle_tail: longer than the job's duration");
  bad_trace("t.jsonl", "{\"submit_time\": 0, \"duration\": 60, \"gpus\": 1, \"idle_tail\": [1]}\n",
            "t.jsonl:1: idle_tail: expected a number or a string");

  /* Good ones: seconds, a duration, 0, JSON numbers; a trace without the field has none. */
  gp_trace *t = trace_of("submit_time,duration,gpus,idle_tail\n0,3600,1,15m\n1,60,1,0\n");
  CHECK(t->has_idle_tail);
  CHECK_EQ_INT(900, t->jobs[0].idle_tail);
  CHECK_EQ_INT(0, t->jobs[1].idle_tail);
  gp_trace_free(t);
  t = trace_named("t.jsonl", "{\"submit_time\": 0, \"duration\": 60, \"gpus\": 1, \"idle_tail\": 60}\n");
  CHECK_EQ_INT(60, t->jobs[0].idle_tail);
  gp_trace_free(t);
  t = trace_of("submit_time,duration,gpus\n0,60,1\n");
  CHECK(!t->has_idle_tail);
  gp_trace_free(t);
}

static void bad_policy_files_are_named(void) {
  static const struct {
    const char *yaml, *want;
  } cases[] = {
      {"idle_policy: {window: 0}\n", "idle.yaml:1: idle_policy.window"},
      {"idle_policy: {action: kill}\n", "idle.yaml:1: idle_policy.action"},
      {"idle_policy: {}\nqueues:\n  a: {grace: -1m}\n", "queues.a.grace"},
      {"idle_policy: {}\nextra: 1\n", "extra: unknown key"},
      {"window: 10m\n", "missing `idle_policy:`"},
      {"- 1\n", "idle_policy: expected a map"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *path = write_tmp("idle.yaml", cases[i].yaml);
    gp_replay_idle_policy *p = NULL;
    gp_err e = {0};
    CHECK(gp_replay_idle_policy_load(path, &p, &e) != 0);
    CHECK(p == NULL);
    char msg[512];
    gp_err_format(&e, msg, sizeof msg);
    CHECK_CONTAINS(msg, cases[i].want);
    unlink(path);
    free(path);
  }
}

static gp_trace *philly_head(void) {
  gp_trace *t = NULL;
  gp_err e = {0};
  REQUIRE(gp_trace_read_file(GP_SOURCE_DIR "/tests/data/philly_head2000.csv", NULL, &t, &e) == 0);
  return t;
}

static void the_idle_model_picks_the_same_jobs_for_the_same_seed(void) {
  gp_trace *t = philly_head();
  CHECK(!t->has_idle_tail);
  gp_replay_config a, b, other;
  gp_replay_config_init(&a);
  a.idle_fraction = 0.2;
  a.idle_share = 0.25;
  b = a;
  other = a;
  other.seed = 2;
  size_t picked = 0, same = 0, differ = 0;
  for (size_t i = 0; i < t->n_jobs; i++) {
    gp_time ta = gp_replay_idle_tail(&a, t, i), tb = gp_replay_idle_tail(&b, t, i);
    gp_time to = gp_replay_idle_tail(&other, t, i);
    CHECK_EQ_INT(ta, tb);
    if (ta > 0) picked++;
    if ((ta > 0) == (to > 0)) same++;
    else differ++;
    if (ta > 0) CHECK_EQ_INT(llround(t->jobs[i].duration * 0.25), ta);
  }
  /* A fifth of 2,000 jobs, give or take sampling noise; another seed picks others. */
  CHECK(picked > 320 && picked < 480);
  CHECK(differ > 200);
  CHECK(same > 0);
  gp_trace_free(t);
}

/* The model on Philly's head under a requeue policy: the idle GPU-hours the replay counts
 * are exactly those of the model's tails (no job is preempted at this load), split between
 * held and released; the same seed gives the same figures. */
static void the_model_and_policy_on_philly_add_up(void) {
  gp_trace *t = philly_head();
  gp_err e = {0};
  gp_fleet *f = NULL;
  REQUIRE(gp_fleet_from_vc_file(GP_SOURCE_DIR "/tests/data/philly_vc_nodes.csv", &f, &e) == 0);
  gp_replay_queues *q = NULL;
  REQUIRE(gp_replay_queues_from_vc_file(GP_SOURCE_DIR "/tests/data/philly_vc_nodes.csv", 8, t,
                                        &q, &e) == 0);
  gp_replay_idle_policy *pol =
      policy_of("idle_policy: {window: 30m, grace: 10m, action: requeue}\n");
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.idle_fraction = 0.2;
  c.idle_share = 0.25;
  c.idle_policy = pol;
  double model = 0;
  int64_t jobs = 0;
  for (size_t i = 0; i < t->n_jobs; i++) {
    gp_time tail = gp_replay_idle_tail(&c, t, i);
    model += t->jobs[i].gpus * (double)tail / 3600.0;
    jobs += tail > 0;
  }
  gp_replay_result *r1 = NULL, *r2 = NULL;
  REQUIRE(gp_replay_run(&c, t, f, q, &r1, &e) == 0);
  REQUIRE(gp_replay_run(&c, t, f, q, &r2, &e) == 0);
  CHECK(r1->idle.assumed);
  CHECK_EQ_INT(jobs, r1->idle.jobs);
  CHECK_EQ_INT(0, r1->preemptions);
  CHECK_NEAR(model, r1->idle.gpu_hours, 1e-6 * model);
  CHECK(r1->idle.released_gpu_hours > 0.5 * model);
  CHECK(r1->idle.requeued > 0);
  char *j1 = gp_replay_result_json(r1, false), *j2 = gp_replay_result_json(r2, false);
  CHECK_EQ_STR(j1, j2);
  CHECK_CONTAINS(j1, "\"released_gpu_hours\"");
  free(j1);
  free(j2);
  gp_replay_result_free(r1);
  gp_replay_result_free(r2);
  gp_replay_idle_policy_free(pol);
  gp_replay_queues_free(q);
  gp_fleet_free(f);
  gp_trace_free(t);
}

static void the_command_line_reports_the_policy_against_none(void) {
  const char *bin = getenv("GPOOL_BIN");
  REQUIRE(bin);
  char *two = write_tmp("two.csv",
                        "submit_time,duration,gpus,queue,idle_tail\n"
                        "1000,3600,1,a,1800\n"
                        "1010,100,1,a,0\n");
  char *pol = write_tmp("pol.yaml", "idle_policy: {window: 10m, grace: 0, action: requeue}\n");
  char cmd[2048], *out = NULL;
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 1x1 --idle-policy %s -o json "
           "--deterministic --no-progress 2>&1", bin, two, pol);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "\"requeued\": 1");
  CHECK_CONTAINS(out, "\"assumed\": false");
  CHECK_CONTAINS(out, "\"baseline_avg_wait_s\": 1795.0");
  CHECK_CONTAINS(out, "\"avg_wait_change_s\": -600.0");
  free(out);

  /* The trace gives idle_tail: the model is refused rather than mixed in. */
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 1x1 --idle-tail 0.2:0.25 2>&1",
           bin, two);
  CHECK_EQ_INT(2, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "--idle-tail is for traces without it");
  free(out);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 1x1 --idle-tail 0.2 2>&1", bin, two);
  CHECK_EQ_INT(2, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "invalid --idle-tail");
  free(out);

  /* The model on Philly's head says, in the table, that it is an assumption. */
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s/tests/data/philly_head2000.csv --max-jobs 300 "
           "--queues-from %s/tests/data/philly_vc_nodes.csv --idle-tail 0.2:0.25 "
           "--idle-policy %s --no-progress 2>&1", bin, GP_SOURCE_DIR, GP_SOURCE_DIR, pol);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "ASSUMED, not measured");
  CHECK_CONTAINS(out, "idle policy released");
  CHECK_CONTAINS(out, "without the policy: avg wait");
  free(out);
  unlink(two);
  unlink(pol);
  free(two);
  free(pol);
}

GP_TESTS(notify_frees_nothing, requeue_frees_the_tail_less_the_window,
         a_tail_shorter_than_the_window_is_untouched, released_gpus_start_a_waiting_job_earlier,
         cancel_is_for_the_opportunistic_class_only, queues_may_have_their_own_policy,
         freed_gpu_hours_are_priced, bad_idle_tails_are_refused_with_line_and_field,
         bad_policy_files_are_named, the_idle_model_picks_the_same_jobs_for_the_same_seed,
         the_model_and_policy_on_philly_add_up, the_command_line_reports_the_policy_against_none)
