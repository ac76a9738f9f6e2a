/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's spot model (sim/replay/spot.c, engine.c): a seeded interruption of a spot
 * node requeues the job on it, which completes later with the work since its last
 * checkpoint done again and the restart overhead paid (exact figures); a notice at least
 * as long as the grace saves everything but the overhead, a shorter one nothing; on-demand
 * nodes and models without a rate are never interrupted; the same seed interrupts at the
 * same times; bad flag values are refused naming the flag; the command line's outputs. */
#include <math.h>
#include <unistd.h>

#include "sim/replay/replay.h"
#include "replay_util.h"
#include "test.h"

/* Seed 2 reclaims node 0 at rate 99% for the first time 115,754 s after it starts (the
 * draw is pinned here so a change of the generator shows). */
#define SEED 2
#define T_RECLAIM 115754
#define SUBMIT 1000
#define DURATION 200000
#define OVERHEAD 300

static const char one_job[] = "submit_time,duration,gpus,queue\n1000,200000,2,a\n";

/* Replays `csv` on `fleet` under the gpool preset at spot rate `rate`, notice `notice`,
 * with node failures every `mtbf_hours` (0: none). */
static gp_replay_result *replay_f(const char *csv, const char *fleet, const char *rate,
                                  gp_time notice, uint64_t seed, double mtbf_hours) {
  gp_err e = {0};
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.seed = seed;
  c.restart_overhead = OVERHEAD;
  REQUIRE(gp_replay_spot_parse(rate, &c.spot, &e) == 0);
  c.spot.notice = notice;
  c.mtbf_hours = mtbf_hours;
  return replay_csv(csv, fleet, false, &c);
}

static gp_replay_result *replay(const char *csv, const char *fleet, const char *rate,
                                gp_time notice, uint64_t seed) {
  return replay_f(csv, fleet, rate, notice, seed, 0);
}

static void the_seeded_draw_is_pinned(void) {
  double mean = gp_replay_spot_mean_s(0.99);
  CHECK_NEAR(30 * 86400 / log(100.0), mean, 1e-6);
  CHECK_EQ_INT(T_RECLAIM, gp_replay_spot_life(SEED, 0, 0, mean));
  CHECK(gp_replay_spot_life(SEED, 0, 1, mean) > DURATION); /* no second reclaim in time */
  CHECK_NEAR(0, gp_replay_spot_mean_s(0), 0);
  /* 5% a month: a node's mean life is 30 d / -ln(0.95), about 585 days. */
  CHECK_NEAR(2592000 / -log(0.95), gp_replay_spot_mean_s(0.05), 1e-3);
}

/* With no notice the job loses its progress since its last 30-minute checkpoint: it ran
 * 115,754 s, 64 checkpoints saved 115,200 s, 554 s are done again on the on-demand node
 * after the 5-minute overhead. */
static void an_interruption_without_notice_loses_the_work_since_the_checkpoint(void) {
  gp_replay_result *r = replay(one_job, "1x8xH100:spot,1x8xH100:on-demand", "0.99", 0, SEED);
  CHECK(r->spot.modelled);
  CHECK_EQ_INT(1, r->spot.interruptions);
  CHECK_EQ_INT(0, r->spot.notices_used);
  CHECK_EQ_INT(1, r->spot.jobs_interrupted);
  CHECK_EQ_INT(1, r->spot.runs_interrupted);
  CHECK_EQ_INT(1, r->completed);
  gp_time saved = T_RECLAIM / 1800 * 1800;
  CHECK_EQ_INT(115200, saved);
  CHECK_NEAR(T_RECLAIM + OVERHEAD + DURATION - saved, r->avg_jct_s, 1e-9); /* 200,854 s */
  CHECK_NEAR(0, r->avg_wait_s, 1e-9); /* requeued onto the idle on-demand node at once */
  CHECK_NEAR(2 * 554 / 3600.0, r->spot.gpu_hours_recomputed, 1e-9);
  CHECK_NEAR(2 * 300 / 3600.0, r->spot.gpu_hours_overhead, 1e-9);
  CHECK_NEAR(2 * 854 / 3600.0, r->spot.gpu_hours_lost, 1e-9);
  CHECK_EQ_INT(0, r->preemptions); /* an interruption is not a preemption */
  gp_replay_result_free(r);
}

/* Priced: the job's runs at their nodes' prices, and the spot node not paid for between
 * its reclaim and its replacement (5 minutes): job + idle = fleet to the cent. */
static void a_reclaimed_node_is_not_paid_for_until_its_replacement(void) {
  char *path = write_tmp("spot_prices.yaml",
                         "prices:\n  currency: USD\n  gpu_hour:\n"
                         "    - {model: H100, capacity: on-demand, price: 6.88}\n"
                         "    - {model: H100, capacity: spot, price: 2.41}\n");
  struct gp_prices *prices = NULL;
  gp_err e = {0};
  REQUIRE(gp_replay_prices_load(path, &prices, &e) == 0);
  unlink(path);
  free(path);
  gp_trace *t = trace_of(one_job);
  gp_fleet *f = NULL;
  REQUIRE(gp_fleet_load("1x8xH100:spot,1x8xH100:on-demand", false, &f, &e) == 0);
  gp_replay_queues *q = gp_replay_queues_from_trace(t);
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.seed = SEED;
  c.restart_overhead = OVERHEAD;
  c.prices = prices;
  c.spot.notice = 0;
  REQUIRE(gp_replay_spot_parse("0.99", &c.spot, &e) == 0);
  gp_replay_result *r = NULL;
  if (gp_replay_run(&c, t, f, q, &r, &e)) fprintf(stderr, "replay: %s\n", e.message);
  REQUIRE(r);
  double span = T_RECLAIM + OVERHEAD + DURATION - 115200; /* first submission to the end */
  double spot_run = 2 * 2.41 * T_RECLAIM / 3600, od_run = 2 * 6.88 * (span - T_RECLAIM) / 3600;
  CHECK_NEAR(spot_run + od_run, r->cost.jobs, 0.01);
  CHECK_NEAR(8 * 2.41 * (span - 300) / 3600 + 8 * 6.88 * span / 3600, r->cost.fleet, 0.01);
  CHECK_NEAR(r->cost.fleet, r->cost.jobs + r->cost.idle + r->cost.unused_commitment, 0.01);
  gp_replay_result_free(r);
  gp_replay_queues_free(q);
  gp_fleet_free(f);
  gp_trace_free(t);
  gp_replay_prices_free(prices);
}

/* A 2-minute notice (grace 30 s): the job checkpoints at the notice, lets go after the
 * grace and only the overhead is lost: it completes DURATION + grace + overhead after it
 * was submitted. */
static void a_long_enough_notice_loses_only_the_overhead(void) {
  gp_replay_result *r = replay(one_job, "1x8xH100:spot,1x8xH100:on-demand", "0.99", 120, SEED);
  CHECK_EQ_INT(1, r->spot.interruptions);
  CHECK_EQ_INT(1, r->spot.notices_used);
  CHECK_EQ_INT(1, r->spot.jobs_interrupted);
  CHECK_NEAR(DURATION + 30 + OVERHEAD, r->avg_jct_s, 1e-9);
  CHECK_NEAR(0, r->spot.gpu_hours_recomputed, 1e-9);
  CHECK_NEAR(2 * 300 / 3600.0, r->spot.gpu_hours_lost, 1e-9);
  gp_replay_result_free(r);

  /* A notice shorter than the grace is no use: the reclaim cuts the run as without one. */
  r = replay(one_job, "1x8xH100:spot,1x8xH100:on-demand", "0.99", 10, SEED);
  CHECK_EQ_INT(0, r->spot.notices_used);
  CHECK_NEAR(T_RECLAIM + OVERHEAD + DURATION - 115200, r->avg_jct_s, 1e-9);
  CHECK_NEAR(2 * 854 / 3600.0, r->spot.gpu_hours_lost, 1e-9);
  gp_replay_result_free(r);
}

/* The replacement comes after the provider delay: a job that needs the whole spot node
 * and arrives while it is gone waits for it. */
static void the_replacement_comes_after_the_provider_delay(void) {
  /* A tiny job at 1000 starts node 0's clock as in the other cases. */
  char two[512];
  snprintf(two, sizeof two, "submit_time,duration,gpus,queue\n1000,10,1,a\n%d,100,8,a\n",
           SUBMIT + T_RECLAIM + 60);
  gp_replay_result *r = replay(two, "1x8xH100:spot", "0.99", 0, SEED);
  CHECK_EQ_INT(1, r->spot.interruptions);
  CHECK_EQ_INT(0, r->spot.jobs_interrupted); /* nothing ran there */
  CHECK_EQ_INT(2, r->completed);
  /* Reclaimed at 116,754, back at 117,054: the second job waited 240 s of its 300. */
  CHECK_NEAR(240 / 2.0, r->avg_wait_s, 1e-9);
  gp_replay_result_free(r);
}

static void on_demand_nodes_and_models_without_a_rate_are_never_interrupted(void) {
  gp_replay_result *r = replay(one_job, "2x8xH100:on-demand", "0.99", 0, SEED);
  CHECK(!r->spot.modelled); /* no spot node: the outputs stay as without the flag */
  CHECK_EQ_INT(0, r->spot.interruptions);
  CHECK_NEAR(DURATION, r->avg_jct_s, 1e-9);
  gp_replay_result_free(r);

  /* Per model: the A100 node (node 0, where the job starts) at 99%, the H100 one never;
   * the job restarts on the H100 and is not cut again. */
  r = replay(one_job, "1x8xA100:spot,1x8xH100:spot", "0:a100=99%", 0, SEED);
  CHECK_EQ_INT(1, r->spot.interruptions);
  CHECK_EQ_INT(1, r->spot.runs_interrupted);
  CHECK_NEAR(T_RECLAIM + OVERHEAD + DURATION - 115200, r->avg_jct_s, 1e-9);
  gp_replay_result_free(r);
}

static void the_same_seed_gives_the_same_interruptions(void) {
  /* Many short jobs on a half-spot fleet: several interruptions, several jobs hit. */
  char csv[1 << 14];
  size_t n = (size_t)snprintf(csv, sizeof csv, "submit_time,duration,gpus,queue\n");
  for (int i = 0; i < 200; i++)
    n += (size_t)snprintf(csv + n, sizeof csv - n, "%d,%d,%d,q%d\n", i * 3600, 20000 + i * 37,
                          1 + i % 8, i % 3);
  gp_replay_result *a = replay(csv, "4x8xH100:spot,4x8xH100:on-demand", "0.99", 0, 7);
  gp_replay_result *b = replay(csv, "4x8xH100:spot,4x8xH100:on-demand", "0.99", 0, 7);
  gp_replay_result *c = replay(csv, "4x8xH100:spot,4x8xH100:on-demand", "0.99", 0, 8);
  CHECK(a->spot.interruptions >= 2);
  CHECK(a->spot.jobs_interrupted >= 1);
  char *ja = gp_replay_result_json(a, false), *jb = gp_replay_result_json(b, false);
  char *jc = gp_replay_result_json(c, false);
  CHECK_EQ_STR(ja, jb);
  CHECK(strcmp(ja, jc) != 0); /* another seed, other times */
  CHECK_CONTAINS(ja, "\"spot\": {");
  free(ja);
  free(jb);
  free(jc);
  gp_replay_result_free(a);
  gp_replay_result_free(b);
  gp_replay_result_free(c);
}

/* Node failures and reclaims on the same nodes (a node may fail while drained by a notice,
 * or be down from a failure when its reclaim comes): every job still completes and the
 * engine's GPU counts stay consistent (a plan on a busy GPU would stop the replay). */
static void failures_and_reclaims_mix(void) {
  char csv[1 << 14];
  size_t n = (size_t)snprintf(csv, sizeof csv, "submit_time,duration,gpus,queue\n");
  for (int i = 0; i < 200; i++)
    n += (size_t)snprintf(csv + n, sizeof csv - n, "%d,%d,%d,q%d\n", i * 1800, 30000 + i * 53,
                          1 + i % 16, i % 3);
  for (gp_time notice = 0; notice <= 120; notice += 120) {
    gp_replay_result *r = replay_f(csv, "4x8xH100:spot,2x8xH100:on-demand", "0.99", notice, 3, 100);
    CHECK_EQ_INT(200, r->completed);
    CHECK(r->node_failures >= 1);
    CHECK(r->spot.interruptions >= 1);
    CHECK(r->spot.runs_interrupted >= r->spot.jobs_interrupted);
    gp_replay_result_free(r);
  }
}

static void bad_rates_are_refused_naming_the_flag(void) {
  static const char *const bad[] = {"1", "100%", "1.5", "-0.1", "abc", "", "0.1:A100",
                                    "0.1:A100=2", "0.1:=0.2", "0.1:A100=0.2,A100=0.3",
                                    "0.1:A100=0.2,", "nan"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    gp_replay_spot sp = {0};
    gp_err e = {0};
    CHECK(gp_replay_spot_parse(bad[i], &sp, &e) != 0);
    CHECK_EQ_STR("--spot-interruptions", e.field);
  }
  gp_replay_spot sp = {0};
  gp_err e = {0};
  REQUIRE(gp_replay_spot_parse("5%:A100=0.2,H100-80GB=1%", &sp, &e) == 0);
  CHECK_NEAR(0.05, sp.rate, 1e-12);
  CHECK_EQ_INT(2, sp.n_models);
  CHECK_NEAR(0.2, gp_replay_spot_rate(&sp, "a100"), 1e-12);
  CHECK_NEAR(0.01, gp_replay_spot_rate(&sp, "H100-80GB"), 1e-12);
  CHECK_NEAR(0.05, gp_replay_spot_rate(&sp, "V100"), 1e-12);
}

static void the_command_line_reports_interruptions(void) {
  const char *bin = getenv("GPOOL_BIN");
  REQUIRE(bin);
  char *one = write_tmp("spot.csv", one_job);
  char cmd[2048], *out = NULL;
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 1x8xH100:spot,1x8xH100:on-demand "
           "--spot-interruptions 99%% --spot-notice 0 --restart-overhead 5m --seed 2 -o json "
           "--deterministic --no-progress 2>&1", bin, one);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "\"interruptions\": 1");
  CHECK_CONTAINS(out, "\"jobs_interrupted\": 1");
  CHECK_CONTAINS(out, "\"avg_jct_s\": 200854.0");
  free(out);

  /* compare: an on-demand and a half-spot fleet side by side, cost beside the JCT. */
  char *prices = write_tmp("spot_prices.yaml",
                           "prices:\n  currency: USD\n  gpu_hour:\n"
                           "    - {model: H100, capacity: on-demand, price: 6.88}\n"
                           "    - {model: H100, capacity: spot, price: 2.41}\n");
  snprintf(cmd, sizeof cmd, "%s sim compare --trace %s --policies gpool --fleet 2x8xH100:on-demand "
           "--fleet 1x8xH100:spot,1x8xH100:on-demand --spot-interruptions 0.99 --spot-notice 0 "
           "--seed 2 --prices %s --no-progress 2>&1", bin, one, prices);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "spot interruptions");
  CHECK_CONTAINS(out, "GPU-h lost to spot");
  CHECK_CONTAINS(out, "fleet cost (USD)");
  free(out);

  /* The table, the CSV series' last columns and the HTML summary, on Philly's head. */
  char *csv = write_tmp("spot_series.csv", "");
  char *html = write_tmp("spot_report.html", "");
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s/tests/data/philly_head2000.csv --max-jobs 300 "
           "--fleet 4x8xH100:spot,4x8xH100:on-demand --spot-interruptions 0.9 --csv %s "
           "--html %s --no-progress 2>&1", bin, GP_SOURCE_DIR, csv, html);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "spot interruptions");
  free(out);
  snprintf(cmd, sizeof cmd, "grep -c 'GPU-hours lost to spot' %s", html);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  free(out);
  snprintf(cmd, sizeof cmd, "head -n 1 %s", csv);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, ",spot_interruptions,spot_gpu_hours_lost\n");
  free(out);

  /* A rate with no spot node anywhere is most likely a forgotten ':spot': said, not fatal. */
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 2x8 --spot-interruptions 0.2 "
           "--no-progress 2>&1", bin, one);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "--spot-interruptions: no fleet has a spot node");
  free(out);

  static const char *const bad[][2] = {
      {"--spot-interruptions 1", "--spot-interruptions"},
      {"--spot-interruptions 0.1:A100", "--spot-interruptions"},
      {"--spot-notice -1", "--spot-notice"},
      {"--spot-notice 2d", "--spot-notice"},
      {"--provider-delay soon", "--provider-delay"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 1x8:spot %s --no-progress 2>&1",
             bin, one, bad[i][0]);
    CHECK_EQ_INT(2, run_cmd(cmd, &out));
    CHECK_CONTAINS(out, bad[i][1]);
    free(out);
  }
  unlink(one);
  unlink(prices);
  unlink(csv);
  unlink(html);
  free(html);
  free(one);
  free(prices);
  free(csv);
}

GP_TESTS(the_seeded_draw_is_pinned,
         an_interruption_without_notice_loses_the_work_since_the_checkpoint,
         a_reclaimed_node_is_not_paid_for_until_its_replacement,
         a_long_enough_notice_loses_only_the_overhead,
         the_replacement_comes_after_the_provider_delay,
         on_demand_nodes_and_models_without_a_rate_are_never_interrupted,
         the_same_seed_gives_the_same_interruptions, failures_and_reclaims_mix,
         bad_rates_are_refused_naming_the_flag,
         the_command_line_reports_interruptions)
