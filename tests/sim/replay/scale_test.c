/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's autoscaling (sim/replay/scale.c): a job that only a template can hold waits
 * the provider delay and runs on a created node; a gang gets all its nodes in one call;
 * max_nodes and the class order are kept; an empty provider node is deleted after
 * scale_down_after and a busy one never; a provider node is paid for from its create call
 * to its deletion (its template's price, else the catalogue's); a reclaimed spot template
 * node is gone and replaced; bad template files are refused naming the line and field;
 * the same seed gives the same result; the command line's flags and outputs. */
#include <jansson.h>
#include <unistd.h>

#include "ledger/prices.h"
#include "replay_util.h"
#include "test.h"

#define DELAY 600 /* the provider delay of these tests */
#define SUBMIT 1000

/* An on-demand template of 8 H100s at 2 per GPU-hour, at most `max_nodes` nodes, with a
 * spot one of 8 H100s at 1 per GPU-hour after it when `spot`. */
static gp_replay_templates *templates(int max_nodes, bool spot, bool priced) {
  char text[1024];
  snprintf(text, sizeof text,
           "node_templates:\n"
           "  - {name: od, model: H100, gpus: 8, capacity: on-demand, max_nodes: %d%s}\n"
           "%s",
           max_nodes, priced ? ", price_per_gpu_hour: 2" : "",
           spot ? "  - {name: sp, model: H100, gpus: 8, capacity: spot, max_nodes: 8,\n"
                  "     price_per_gpu_hour: 1, provider: /usr/bin/true, timeout: 1m}\n"
                : "");
  char *path = write_tmp("templates.yaml", text);
  gp_replay_templates *t = NULL;
  gp_err e = {0};
  if (gp_replay_templates_load(path, &t, &e)) fprintf(stderr, "templates: %s\n", e.message);
  REQUIRE(t);
  unlink(path);
  free(path);
  return t;
}

static void config(gp_replay_config *c, const gp_replay_templates *t) {
  gp_replay_config_init(c);
  c->spot.provider_delay = DELAY;
  c->scale.templates = t;
}

/* The fleet's one node has 4 GPUs: a job of 8 fits only a template. */
static void a_job_that_fits_only_a_template_waits_the_provider_delay(void) {
  gp_replay_templates *t = templates(4, false, true);
  gp_replay_config c;
  config(&c, t);
  gp_replay_result *r =
      replay_csv("submit_time,duration,gpus,queue\n1000,3600,8,a\n", "1x4xH100", false, &c);
  CHECK(r->scale.modelled);
  CHECK_EQ_INT(1, r->completed);
  CHECK_EQ_INT(0, r->rejected);
  CHECK_NEAR(DELAY, r->avg_wait_s, 1e-9);
  CHECK_NEAR(DELAY + 3600, r->avg_jct_s, 1e-9);
  CHECK_EQ_INT(1, r->scale.created);
  CHECK_EQ_INT(1, r->scale.peak_provider_nodes);
  CHECK_EQ_INT(2, r->scale.peak_nodes);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
}

static void a_gang_of_two_by_eight_creates_two_nodes_at_once(void) {
  gp_replay_templates *t = templates(4, false, true);
  gp_replay_config c;
  config(&c, t);
  gp_replay_result *r = replay_csv("submit_time,duration,gpus,tasks,queue\n1000,3600,16,2,a\n",
                                   "1x4xH100", false, &c);
  CHECK_EQ_INT(1, r->completed);
  CHECK_EQ_INT(2, r->scale.created);
  CHECK_EQ_INT(2, r->scale.peak_provider_nodes);
  CHECK_NEAR(DELAY, r->avg_wait_s, 1e-9);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
}

/* One node at most: the second job runs on it after the first. */
static void max_nodes_caps_a_template(void) {
  gp_replay_templates *t = templates(1, false, true);
  gp_replay_config c;
  config(&c, t);
  gp_replay_result *r = replay_csv(
      "submit_time,duration,gpus,queue\n1000,3600,8,a\n1000,3600,8,a\n", "1x4xH100", false, &c);
  CHECK_EQ_INT(2, r->completed);
  CHECK_EQ_INT(1, r->scale.created);
  CHECK_EQ_INT(1, r->scale.peak_provider_nodes);
  CHECK_NEAR((DELAY + DELAY + 3600) / 2.0, r->avg_wait_s, 1e-9);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
}

/* Jobs of 1 h and 3 h get a node each at 1600; the first node is empty from 5200 and
 * deleted at 5800; the second stays while its job runs, to the end at 12,400. */
static const char two_jobs[] = "submit_time,duration,gpus,queue\n1000,3600,8,a\n1000,10800,8,a\n";
#define NODE_HOURS ((5800.0 - 1000 + 12400 - 1000) / 3600) /* 4.5 */

static void an_empty_node_is_deleted_after_scale_down_after_and_a_busy_one_is_not(void) {
  gp_replay_templates *t = templates(4, false, true);
  gp_replay_config c;
  config(&c, t);
  gp_replay_result *r = replay_csv(two_jobs, "1x4xH100", false, &c);
  CHECK_EQ_INT(2, r->completed);
  CHECK_EQ_INT(2, r->scale.created);
  CHECK_EQ_INT(1, r->scale.deleted);
  CHECK_NEAR(NODE_HOURS, r->scale.node_hours, 1e-9);
  CHECK_NEAR(8 * NODE_HOURS, r->scale.gpu_hours, 1e-9);
  gp_replay_result_free(r);
  /* Deleted while no job is left at all; the next arrival gets a new node. */
  r = replay_csv("submit_time,duration,gpus,queue\n1000,3600,8,a\n20000,3600,8,a\n", "1x4xH100",
                 false, &c);
  CHECK_EQ_INT(2, r->completed);
  CHECK_EQ_INT(2, r->scale.created);
  CHECK_EQ_INT(1, r->scale.deleted);
  CHECK_EQ_INT(1, r->scale.peak_provider_nodes);
  CHECK_NEAR((5800.0 - 1000 + DELAY + 3600) / 3600, r->scale.node_hours, 1e-9);
  gp_replay_result_free(r);
  /* Never scaled down: both live to the end. */
  c.scale.scale_down_after = 0;
  r = replay_csv(two_jobs, "1x4xH100", false, &c);
  CHECK_EQ_INT(0, r->scale.deleted);
  CHECK_NEAR(2 * (12400.0 - 1000) / 3600, r->scale.node_hours, 1e-9);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
}

static struct gp_prices *prices(void) {
  char *path = write_tmp("scale_prices.yaml",
                         "prices:\n  currency: USD\n  gpu_hour:\n"
                         "    - {model: H100, capacity: on-prem, price: 1}\n"
                         "    - {model: H100, capacity: on-demand, price: 3}\n");
  struct gp_prices *p = NULL;
  gp_err e = {0};
  REQUIRE(gp_replay_prices_load(path, &p, &e) == 0);
  unlink(path);
  free(path);
  return p;
}

/* Paid from the create call to the deletion, at the template's own price (2), else the
 * catalogue's (3); the fleet cost holds the on-prem node too, and jobs + idle = fleet. */
static void a_provider_node_is_paid_for_from_its_create_call_to_its_deletion(void) {
  struct gp_prices *p = prices();
  gp_replay_templates *t = templates(4, false, true);
  gp_replay_config c;
  config(&c, t);
  c.prices = p;
  gp_replay_result *r = replay_csv(two_jobs, "1x4xH100", false, &c);
  double onprem = 4 * (12400.0 - 1000) / 3600 * 1;
  CHECK(r->scale.priced);
  CHECK(!r->scale.cost_unknown);
  CHECK_NEAR(8 * NODE_HOURS * 2, r->scale.cost, 1e-6); /* 72 */
  CHECK_NEAR(onprem + 72, r->cost.fleet, 1e-6);
  CHECK_NEAR(8 * (1 + 3) * 2, r->cost.jobs, 1e-6);      /* 64: the jobs' GPU-hours */
  CHECK_NEAR(r->cost.fleet, r->cost.jobs + r->cost.idle + r->cost.unused_commitment, 1e-6);
  CHECK_EQ_STR("USD", r->cost.currency);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
  t = templates(4, false, false);
  c.scale.templates = t;
  r = replay_csv(two_jobs, "1x4xH100", false, &c);
  CHECK_NEAR(8 * NODE_HOURS * 3, r->scale.cost, 1e-6);
  CHECK_NEAR(onprem + 8 * NODE_HOURS * 3, r->cost.fleet, 1e-6);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
  gp_prices_free(p);
}

/* Spot comes before on-demand by default; --scale-order can put it after or leave it
 * out; a cost cap of one on-demand node's hourly cost lets one exist at a time. */
static void the_class_order_and_the_cost_cap_choose_the_template(void) {
  gp_replay_templates *t = templates(4, true, true);
  gp_replay_config c;
  config(&c, t);
  const char *one = "submit_time,duration,gpus,queue\n1000,3600,8,a\n";
  gp_replay_result *r = replay_csv(one, "1x4xH100", false, &c);
  CHECK_NEAR(8 * (DELAY + 3600) / 3600.0 * 1, r->scale.cost, 1e-6); /* spot, at 1 */
  gp_replay_result_free(r);
  gp_err e = {0};
  REQUIRE(gp_replay_scale_order_parse("on-demand,spot", c.scale.class_rank, &e) == 0);
  r = replay_csv(one, "1x4xH100", false, &c);
  CHECK_NEAR(8 * (DELAY + 3600) / 3600.0 * 2, r->scale.cost, 1e-6); /* on-demand, at 2 */
  gp_replay_result_free(r);
  REQUIRE(gp_replay_scale_order_parse("on-demand", c.scale.class_rank, &e) == 0);
  c.scale.max_hourly_cost = 16; /* one on-demand node */
  r = replay_csv(two_jobs, "1x4xH100", false, &c);
  CHECK_EQ_INT(2, r->completed);
  CHECK_EQ_INT(1, r->scale.peak_provider_nodes);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
}

/* A spot template's node reclaimed under a long job is gone; the job is requeued and a
 * new node is created for it. Seed 1 reclaims the first node (slot 1, its first life) L
 * seconds after it is up at 1600: the job loses the work since its last 30-minute
 * checkpoint, waits the provider delay again and pays the restart overhead (60 s). */
static void a_reclaimed_spot_template_node_is_replaced(void) {
  gp_replay_templates *t = templates(4, true, true);
  gp_replay_config c;
  config(&c, t);
  gp_err e = {0};
  REQUIRE(gp_replay_scale_order_parse("spot", c.scale.class_rank, &e) == 0);
  REQUIRE(gp_replay_spot_parse("0.99", &c.spot, &e) == 0);
  c.spot.notice = 0;
  c.seed = 1;
  gp_time life = gp_replay_spot_life(1, 1, 1, gp_replay_spot_mean_s(0.99));
  REQUIRE(life < 400000);
  gp_replay_result *r = replay_csv("submit_time,duration,gpus,queue\n1000,400000,8,a\n",
                                   "1x4xH100", false, &c);
  CHECK_EQ_INT(1, r->completed);
  CHECK_EQ_INT(1, r->scale.interrupted);
  CHECK_EQ_INT(1, r->spot.interruptions);
  CHECK_EQ_INT(2, r->scale.created);
  CHECK_EQ_INT(1, r->scale.peak_provider_nodes);
  CHECK_EQ_INT(1, r->spot.jobs_interrupted);
  CHECK_NEAR(2 * DELAY, r->avg_wait_s, 1e-9);
  gp_time saved = life / 1800 * 1800;
  CHECK_NEAR(DELAY + life + DELAY + 60 + 400000 - saved, r->avg_jct_s, 1e-9);
  /* Paid for: the first node from 1000 to its reclaim, the second from its call on. */
  CHECK_NEAR((DELAY + life + r->avg_jct_s - DELAY - life) / 3600.0, r->scale.node_hours, 1e-9);
  gp_replay_result_free(r);
  gp_replay_templates_free(t);
}

static const char busy_trace[] =
    "submit_time,duration,gpus,queue\n"
    "0,7200,8,a\n60,3600,4,b\n120,20000,16,a\n300,600,8,b\n900,90000,8,a\n"
    "4000,3600,4,b\n8000,5000,8,a\n9000,30000,24,b\n20000,100,1,a\n";

static void the_same_seed_gives_the_same_result(void) {
  gp_replay_templates *t = templates(3, true, true);
  gp_replay_config c;
  config(&c, t);
  gp_err e = {0};
  REQUIRE(gp_replay_spot_parse("0.9", &c.spot, &e) == 0);
  c.scale.scale_down_after = 300;
  char *json[2];
  for (int i = 0; i < 2; i++) {
    gp_replay_result *r = replay_csv(busy_trace, "1x8xH100", false, &c);
    CHECK_EQ_INT(9, r->completed);
    CHECK(r->scale.created >= 3);
    json[i] = gp_replay_result_json(r, false);
    gp_replay_result_free(r);
  }
  CHECK_EQ_STR(json[0], json[1]);
  free(json[0]);
  free(json[1]);
  gp_replay_templates_free(t);
}

/* Loads `text` as a templates file; returns the error (code 0: loaded). */
static gp_err load_bad(const char *text) {
  char *path = write_tmp("bad_templates.yaml", text);
  gp_replay_templates *t = NULL;
  gp_err e = {0};
  e.code = gp_replay_templates_load(path, &t, &e);
  gp_replay_templates_free(t);
  unlink(path);
  free(path);
  return e;
}

static void a_bad_templates_file_is_refused_naming_the_line_and_the_field(void) {
  gp_err e = load_bad("node_templates:\n  - name: od\n    model: H100\n    gpus: lots\n");
  CHECK(e.code != 0);
  CHECK_EQ_INT(4, e.line);
  CHECK_CONTAINS(e.field, "node_templates[0].gpus");
  CHECK_CONTAINS(e.file, "bad_templates.yaml");
  e = load_bad("node_templates:\n  - {name: od, model: H100, gpus: 8}\nnodes: []\n");
  CHECK(e.code != 0);
  CHECK_EQ_INT(3, e.line);
  CHECK_CONTAINS(e.field, "nodes");
  e = load_bad("node_templates:\n  - {name: od, model: H100, gpus: 8, flavour: x}\n");
  CHECK(e.code != 0);
  CHECK_EQ_INT(2, e.line);
  CHECK_CONTAINS(e.field, "flavour");
  e = load_bad("templates: []\n");
  CHECK(e.code != 0);
  CHECK_CONTAINS(e.field, "node_templates");
  e = load_bad("node_templates: []\n");
  CHECK(e.code != 0);
  CHECK_CONTAINS(e.message, "empty");
  e = load_bad("node_templates:\n  - {name: od, model: H100, gpus: 8, max_nodes: 2}\n");
  CHECK_EQ_INT(0, e.code);
  int rank[4];
  e = (gp_err){0};
  CHECK(gp_replay_scale_order_parse("spot,cheap", rank, &e) != 0);
  CHECK_CONTAINS(e.message, "cheap");
  CHECK_EQ_STR("--scale-order", e.field);
  CHECK(gp_replay_scale_order_parse("spot,spot", rank, &e) != 0);
  CHECK(gp_replay_scale_order_parse("", rank, &e) != 0);
  CHECK_EQ_INT(0, gp_replay_scale_order_parse("spot,on-prem", rank, &e));
  CHECK_EQ_INT(0, rank[GP_CAP_SPOT]);
  CHECK_EQ_INT(1, rank[GP_CAP_ON_PREM]);
  CHECK_EQ_INT(-1, rank[GP_CAP_ON_DEMAND]);
}

static void the_command_line_reports_autoscaling(void) {
  const char *bin = getenv("GPOOL_BIN");
  REQUIRE(bin);
  char *trace = write_tmp("scale_trace.csv", two_jobs);
  char *tmpl = write_tmp("scale_templates.yaml",
                         "node_templates:\n"
                         "  - {name: od, model: H100, gpus: 8, capacity: on-demand, max_nodes: 4,\n"
                         "     price_per_gpu_hour: 2}\n");
  char cmd[2048], *out;
  snprintf(cmd, sizeof cmd,
           "%s sim replay --trace %s --fleet 1x4xH100 --templates %s --provider-delay 10m "
           "--scale-down-after 10m --autoscale-interval 30s -o json --no-progress",
           bin, trace, tmpl);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  json_error_t je;
  json_t *j = json_loads(out, 0, &je);
  REQUIRE(j);
  json_t *sc = json_object_get(j, "scale");
  REQUIRE(sc);
  CHECK_EQ_INT(2, json_integer_value(json_object_get(sc, "nodes_created")));
  CHECK_EQ_INT(1, json_integer_value(json_object_get(sc, "nodes_deleted")));
  CHECK_EQ_INT(2, json_integer_value(json_object_get(sc, "peak_provider_nodes")));
  CHECK_EQ_INT(3, json_integer_value(json_object_get(sc, "peak_nodes")));
  CHECK_NEAR(4.5, json_real_value(json_object_get(sc, "provider_node_hours")), 1e-9);
  CHECK_NEAR(72, json_real_value(json_object_get(sc, "provider_cost")), 1e-9);
  json_decref(j);
  free(out);
  snprintf(cmd, sizeof cmd,
           "%s sim compare --trace %s --policies gpool --fleet 1x4xH100 --fleet 2x8xH100 "
           "--templates %s --provider-delay 10m --no-progress", bin, trace, tmpl);
  CHECK_EQ_INT(0, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "nodes created");
  CHECK_CONTAINS(out, "peak provider nodes");
  CHECK_CONTAINS(out, "provider node-hours");
  free(out);
  /* Autoscaling flags need templates; bad values name the flag. */
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 1x4xH100 --scale-down-after 5m 2>&1",
           bin, trace);
  CHECK_EQ_INT(2, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "need --templates");
  free(out);
  snprintf(cmd, sizeof cmd,
           "%s sim replay --trace %s --fleet 1x4xH100 --templates %s --scale-order spot,gold 2>&1",
           bin, trace, tmpl);
  CHECK_EQ_INT(2, run_cmd(cmd, &out));
  CHECK_CONTAINS(out, "--scale-order");
  CHECK_CONTAINS(out, "gold");
  free(out);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace %s --fleet 1x4xH100 --templates %s.none 2>&1",
           bin, trace, tmpl);
  CHECK(run_cmd(cmd, &out) != 0);
  CHECK_CONTAINS(out, ".none");
  free(out);
  unlink(trace);
  unlink(tmpl);
  free(trace);
  free(tmpl);
}

GP_TESTS(a_job_that_fits_only_a_template_waits_the_provider_delay,
         a_gang_of_two_by_eight_creates_two_nodes_at_once, max_nodes_caps_a_template,
         an_empty_node_is_deleted_after_scale_down_after_and_a_busy_one_is_not,
         a_provider_node_is_paid_for_from_its_create_call_to_its_deletion,
         the_class_order_and_the_cost_cap_choose_the_template,
         a_reclaimed_spot_template_node_is_replaced, the_same_seed_gives_the_same_result,
         a_bad_templates_file_is_refused_naming_the_line_and_the_field,
         the_command_line_reports_autoscaling)
