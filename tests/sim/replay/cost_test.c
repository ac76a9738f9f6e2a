/* SPDX-License-Identifier: Apache-2.0 */
/* Priced replays (sim/replay/cost.c): a hand-made trace on a fleet of on-demand, reserved
 * and spot nodes gives the cost per queue and in total worked out on paper; the money is
 * conserved (jobs + idle + unused commitment = fleet); a bad prices file is named with its
 * line and key; a slice of the real Philly trace is priced on a half-reserved fleet. */
#include <math.h>
#include <unistd.h>

#include "sim/replay/replay.h"
#include "replay_util.h"
#include "test.h"

#define T0 1772409600 /* 2026-03-02 00:00:00 UTC */

static struct gp_prices *prices_of(const char *yaml) {
  char *path = write_tmp("prices.yaml", yaml);
  struct gp_prices *p = NULL;
  gp_err e = {0};
  if (gp_replay_prices_load(path, &p, &e)) fprintf(stderr, "prices: %s\n", e.message);
  unlink(path);
  free(path);
  REQUIRE(p);
  return p;
}

static gp_replay_result *priced_on(const char *csv, const char *fleet, bool shared,
                                   struct gp_prices *p) {
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.prices = p;
  return replay_csv(csv, fleet, shared, &c);
}

static gp_replay_result *priced(const char *csv, const char *fleet, struct gp_prices *p) {
  return priced_on(csv, fleet, false, p);
}

static const gp_replay_queue_stats *queue(const gp_replay_result *r, const char *name) {
  for (int i = 0; i < r->n_queues; i++)
    if (strcmp(r->queues[i].name, name) == 0) return &r->queues[i];
  GP_FAIL_("no queue %s", name);
  return NULL;
}

static const char mixed_prices[] =
    "prices:\n"
    "  currency: USD\n"
    "  gpu_hour:\n"
    "    - {model: H100, capacity: on-demand, price: 4.00}\n"
    "    - {model: T4, capacity: spot, price: 0.50}\n"
    "  commitments:\n"
    "    - {model: A100, gpus: 8, price: 1.50, from: 2026-01-01, to: 2027-01-01}\n";

/* Three nodes: 4 on-demand H100 at 4.00, 4 reserved A100 under a commitment of 8 GPUs at
 * 1.50, 2 spot T4 at 0.50. Queue a runs 4 H100 for 1 h, b 2 A100 for 2 h, c 1 T4 for 1 h;
 * the replay lasts 2 h.
 *   jobs: a 4 x 1 x 4.00 = 16.00; b 2 x 2 x 1.50 = 6.00; c 1 x 1 x 0.50 = 0.50 -> 22.50
 *   fleet: H100 4 x 2 x 4.00 = 32.00; A100 max(8, 4) x 2 x 1.50 = 24.00; T4 2 x 2 x 0.50
 *          = 2.00 -> 58.00
 *   unused commitment: (8 - 4) x 2 x 1.50 = 12.00; idle: 58 - 22.50 - 12 = 23.50. */
static void a_mixed_fleet_costs_what_was_worked_out_on_paper(void) {
  char csv[512];
  snprintf(csv, sizeof csv,
           "submit_time,duration,gpus,queue,gpu_model\n"
           "%d,3600,4,a,H100\n%d,7200,2,b,A100\n%d,3600,1,c,T4\n", T0, T0, T0);
  struct gp_prices *p = prices_of(mixed_prices);
  gp_replay_result *r = priced(csv, "1x4xH100:on-demand,1x4xA100:reserved,1x2xT4:spot", p);
  CHECK_EQ_INT(3, r->completed);
  CHECK(r->cost.priced);
  CHECK_EQ_STR("USD", r->cost.currency);
  CHECK(!r->cost.unknown);
  CHECK_NEAR(16.00, queue(r, "a")->cost, 1e-6);
  CHECK_NEAR(6.00, queue(r, "b")->cost, 1e-6);
  CHECK_NEAR(0.50, queue(r, "c")->cost, 1e-6);
  CHECK_NEAR(22.50, r->cost.jobs, 1e-6);
  CHECK_NEAR(58.00, r->cost.fleet, 1e-6);
  CHECK_NEAR(12.00, r->cost.unused_commitment, 1e-6);
  CHECK_NEAR(23.50, r->cost.idle, 1e-6);
  CHECK_NEAR(0, r->cost.drained_down, 1e-9);
  char *json = gp_replay_result_json(r, false);
  CHECK_CONTAINS(json, "\"fleet\": 58.0");
  CHECK_CONTAINS(json, "\"currency\": \"USD\"");
  free(json);
  gp_replay_result_free(r);
  gp_replay_prices_free(p);
}

/* Four jobs of a quarter GPU each for an hour share one GPU: one GPU-hour between them,
 * and the GPU is never idle. */
static void four_quarter_gpus_cost_one_gpu_hour(void) {
  char csv[512];
  snprintf(csv, sizeof csv,
           "submit_time,duration,gpus,queue\n%d,3600,0.25,a\n%d,3600,0.25,a\n"
           "%d,3600,0.25,b\n%d,3600,0.25,b\n", T0, T0, T0, T0);
  struct gp_prices *p =
      prices_of("gpu_hour:\n  - {model: H100-80GB, capacity: on-demand, price: 4.00}\n");
  gp_replay_result *r = priced_on(csv, "1x1xH100-80GB:on-demand", true, p);
  CHECK_EQ_INT(4, r->completed);
  CHECK_NEAR(3600, r->makespan_s, 1e-9);
  CHECK_NEAR(2.00, queue(r, "a")->cost, 1e-6);
  CHECK_NEAR(2.00, queue(r, "b")->cost, 1e-6);
  CHECK_NEAR(4.00, r->cost.fleet, 1e-6);
  CHECK_NEAR(0, r->cost.idle, 1e-6);
  gp_replay_result_free(r);
  gp_replay_prices_free(p);
}

/* A model with no price leaves its GPU-hours out and says so; an unpriced replay has no
 * money in its JSON at all. */
static void unpriced_capacity_is_flagged_and_unpriced_replays_are_unchanged(void) {
  char csv[256];
  snprintf(csv, sizeof csv, "submit_time,duration,gpus,queue\n%d,3600,2,a\n", T0);
  struct gp_prices *p = prices_of("currency: EUR\ngpu_hour:\n"
                                  "  - {model: H100, capacity: on-demand, price: 3.00}\n");
  gp_replay_result *r = priced(csv, "1x4xV100", p); /* on-prem V100: no price */
  CHECK(r->cost.priced);
  CHECK(r->cost.unknown);
  CHECK(queue(r, "a")->cost_unknown);
  CHECK_EQ_STR("EUR", r->cost.currency);
  gp_replay_result_free(r);
  gp_replay_prices_free(p);
  r = priced(csv, "1x4xH100", NULL);
  CHECK(!r->cost.priced);
  char *json = gp_replay_result_json(r, false);
  CHECK(strstr(json, "cost") == NULL);
  free(json);
  gp_replay_result_free(r);
}

static void a_bad_prices_file_names_its_line_and_key(void) {
  char *path = write_tmp("bad.yaml",
                         "prices:\n"
                         "  currency: USD\n"
                         "  gpu_hour:\n"
                         "    - {model: H100, capacity: on-demand, price: 4.00}\n"
                         "    - {model: A100, capacity: leased, price: 2.00}\n");
  struct gp_prices *p = NULL;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_replay_prices_load(path, &p, &e));
  CHECK(p == NULL);
  CHECK_EQ_INT(5, e.line);
  CHECK_CONTAINS(e.field, "prices.gpu_hour[1]");
  CHECK_CONTAINS(e.file, "bad.yaml");
  unlink(path);
  free(path);
  path = write_tmp("list.yaml", "- 1\n- 2\n");
  CHECK_EQ_INT(GP_EINVAL, gp_replay_prices_load(path, &p, &e));
  CHECK_EQ_STR("prices", e.field);
  unlink(path);
  free(path);
}

/* The Philly slice on 40 nodes, all on-demand and then half reserved (a commitment of 160
 * GPUs at a lower price, bought only for the second): both conserve to the cent, the fleet
 * costs its GPUs x price over the makespan, and the half-reserved fleet costs less. */
static gp_replay_result *philly_priced(const char *fleet, struct gp_prices *p) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/philly_head2000.csv", GP_SOURCE_DIR);
  gp_trace_opts o = {.max_jobs = 1000};
  gp_trace *t = NULL;
  gp_err e = {0};
  REQUIRE(gp_trace_read_file(path, &o, &t, &e) == 0);
  gp_fleet *f = NULL;
  REQUIRE(gp_fleet_load(fleet, false, &f, &e) == 0);
  gp_replay_queues *q = gp_replay_queues_from_trace(t);
  gp_replay_config c;
  gp_replay_config_init(&c);
  c.prices = p;
  c.time_scale = 10;
  gp_replay_result *r = NULL;
  if (gp_replay_run(&c, t, f, q, &r, &e)) fprintf(stderr, "replay: %s\n", e.message);
  REQUIRE(r);
  gp_trace_free(t);
  gp_fleet_free(f);
  gp_replay_queues_free(q);
  return r;
}

static void a_real_trace_is_priced_and_conserves_its_money(void) {
  static const char on_demand[] = "prices:\n  currency: USD\n  gpu_hour:\n"
                                  "    - {model: '*', capacity: on-demand, price: 3.00}\n";
  char reserved[512];
  snprintf(reserved, sizeof reserved, "%s  commitments:\n"
           "    - {model: V100, gpus: 160, price: 1.80, from: 2017-01-01, to: 2018-01-01}\n",
           on_demand);
  struct gp_prices *p_od = prices_of(on_demand), *p_half = prices_of(reserved);
  gp_replay_result *od = philly_priced("40x8xV100:on-demand", p_od);
  gp_replay_result *half = philly_priced("20x8xV100:on-demand,20x8xV100:reserved", p_half);
  gp_replay_result *runs[2] = {od, half};
  for (int i = 0; i < 2; i++) {
    const gp_replay_cost *c = &runs[i]->cost;
    CHECK(c->priced && !c->unknown);
    CHECK(c->jobs > 0);
    CHECK(fabs(c->jobs + c->idle + c->drained_down + c->unused_commitment - c->fleet) < 0.005);
    double by_queue = 0;
    for (int q = 0; q < runs[i]->n_queues; q++) by_queue += runs[i]->queues[q].cost;
    CHECK(fabs(by_queue - c->jobs) < 0.005);
  }
  /* The same trace and scheduler: the same span on both fleets. */
  CHECK_NEAR(od->makespan_s, half->makespan_s, 1e-9);
  double hours = od->makespan_s / 3600;
  CHECK_NEAR(320 * 3.00 * hours, od->cost.fleet, 0.01);
  CHECK_NEAR(160 * 3.00 * hours + 160 * 1.80 * hours, half->cost.fleet, 0.01);
  CHECK_NEAR(0, half->cost.unused_commitment, 1e-9); /* 160 reserved GPUs: all committed */
  CHECK(half->cost.jobs < od->cost.jobs);
  gp_replay_result_free(od);
  gp_replay_result_free(half);
  gp_replay_prices_free(p_od);
  gp_replay_prices_free(p_half);
}

GP_TESTS(a_mixed_fleet_costs_what_was_worked_out_on_paper, four_quarter_gpus_cost_one_gpu_hour,
         unpriced_capacity_is_flagged_and_unpriced_replays_are_unchanged,
         a_bad_prices_file_names_its_line_and_key, a_real_trace_is_priced_and_conserves_its_money)
