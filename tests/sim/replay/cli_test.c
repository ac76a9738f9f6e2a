/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool sim replay` and `gpool sim compare` as a user runs them: JSON with the documented
 * keys, a per-minute CSV, an offline HTML report, a side-by-side table, byte-identical
 * reruns, and clear errors for bad rows and bad arguments. */
#include <jansson.h>
#include <sys/stat.h>

#include "replay_util.h"
#include "test.h"

static char dir[256];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/gp_sim_cli_%d", (int)getpid());
  mkdir(dir, 0700);
  char path[512];
  snprintf(path, sizeof path, "%s/t.csv", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  /* The head-of-line case of replay_test.c: FIFO waits avg 99 s, backfill 33 s. */
  fputs("submit_time,duration,gpus,queue\n0,100,6,q\n1,100,8,q\n2,50,2,q\n", f);
  fclose(f);
}

/* Runs a shell command line; returns its exit status and stdout (malloc'd). */
static int run(const char *cmd, char **ret_out) {
  char full[4096];
  snprintf(full, sizeof full, "cd %s && %s 2>%s/stderr", dir, cmd, dir);
  return run_cmd(full, ret_out);
}

static char *slurp(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  s[fread(s, 1, (size_t)n, f)] = '\0';
  fclose(f);
  return s;
}

static const char *bin(void) {
  const char *b = getenv("GPOOL_BIN");
  REQUIRE(b);
  return b;
}

static void replay_prints_the_documented_json_and_writes_csv_and_html(void) {
  setup();
  char cmd[1024], *out;
  snprintf(cmd, sizeof cmd,
           "%s sim replay --trace t.csv --fleet 1x8xH100 --policy backfill -o json "
           "--csv series.csv --html report.html", bin());
  CHECK_EQ_INT(0, run(cmd, &out));
  json_error_t je;
  json_t *j = json_loads(out, 0, &je);
  REQUIRE(j);
  static const char *const keys[] = {"policy", "jobs", "avg_jct_s", "p50_jct_s", "p95_jct_s",
                                     "p99_jct_s", "avg_wait_s", "p95_wait_s", "gpu_utilization",
                                     "makespan_s", "jain_fairness", "preemptions",
                                     "gpu_hours_lost", "wall_seconds", "queues"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!json_object_get(j, keys[i])) GP_FAIL_("missing key %s", keys[i]);
  CHECK_EQ_STR("backfill", json_string_value(json_object_get(j, "policy")));
  CHECK_EQ_INT(3, json_integer_value(json_object_get(j, "jobs")));
  CHECK_NEAR(33.0, json_real_value(json_object_get(j, "avg_wait_s")), 1e-9);
  CHECK_EQ_INT(1, json_array_size(json_object_get(j, "queues")));
  json_decref(j);
  /* Makespan 200 s: samples at 0, 60, 120 and 180 s. */
  char *csv = slurp("series.csv");
  REQUIRE(csv);
  CHECK(strncmp(csv, "time_s,pending_jobs,running_jobs,allocated_gpus,up_gpus,q.pending,", 66) == 0);
  CHECK_CONTAINS(csv, "\n0,0,1,6.000,8,0,1,6.000\n");   /* A alone */
  CHECK_CONTAINS(csv, "\n60,1,1,6.000,8,1,1,6.000\n");  /* C came and went; B waits */
  CHECK_CONTAINS(csv, "\n120,0,1,8.000,8,0,1,8.000\n"); /* B alone */
  CHECK_CONTAINS(csv, "\n180,");
  char *html = slurp("report.html");
  REQUIRE(html);
  CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
  CHECK_CONTAINS(html, "<svg");
  CHECK_CONTAINS(html, "Job completion time, CDF");
  CHECK(strstr(html, "<script") == NULL); /* nothing to fetch, nothing to run */
  CHECK(strstr(html, "https://") == NULL);
  free(out), free(csv), free(html);
}

static void compare_puts_policies_side_by_side_and_reruns_are_identical(void) {
  setup();
  char cmd[1024], *a, *b;
  snprintf(cmd, sizeof cmd,
           "%s sim compare --trace t.csv --fleet 1x8 --policies fifo,backfill,gpool,sjf "
           "--html cmp.html", bin());
  CHECK_EQ_INT(0, run(cmd, &a));
  CHECK_CONTAINS(a, "fifo");
  CHECK_CONTAINS(a, "backfill");
  CHECK_CONTAINS(a, "sjf");
  CHECK_CONTAINS(a, "avg wait");
  CHECK_CONTAINS(a, "Jain fairness");
  free(a);
  snprintf(cmd, sizeof cmd,
           "%s sim compare --trace t.csv --fleet 1x8 --policies fifo,gpool -o json --deterministic",
           bin());
  CHECK_EQ_INT(0, run(cmd, &a));
  CHECK_EQ_INT(0, run(cmd, &b));
  CHECK_EQ_STR(a, b);
  json_t *j = json_loads(a, 0, NULL);
  REQUIRE(j);
  CHECK_EQ_INT(2, json_array_size(json_object_get(j, "runs")));
  json_decref(j);
  free(a), free(b);
}

static void bad_rows_and_bad_arguments_are_explained(void) {
  setup();
  char path[512];
  snprintf(path, sizeof path, "%s/bad.csv", dir);
  FILE *f = fopen(path, "w");
  fputs("submit_time,duration,gpus,queue\n0,100,1,q\nsoon,10,1,q\n5,10,1,q\n", f);
  fclose(f);
  char cmd[1024], *out;
  snprintf(cmd, sizeof cmd, "%s sim replay --trace bad.csv --fleet 1x8", bin());
  CHECK_EQ_INT(1, run(cmd, &out));
  char *err = slurp("stderr");
  CHECK_CONTAINS(err, "bad.csv:3: submit_time:");
  free(out), free(err);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace bad.csv --fleet 1x8 --bad-rows skip -o json",
           bin());
  CHECK_EQ_INT(0, run(cmd, &out));
  CHECK_CONTAINS(out, "\"jobs\": 2");
  err = slurp("stderr");
  CHECK_CONTAINS(err, "skipped 1 bad rows");
  free(out), free(err);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace t.csv --fleet 1x8 --policy lottery", bin());
  CHECK_EQ_INT(2, run(cmd, &out));
  free(out);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace t.csv --fleet 0x8", bin());
  CHECK_EQ_INT(1, run(cmd, &out));
  free(out);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace t.csv", bin());
  CHECK_EQ_INT(2, run(cmd, &out));
  err = slurp("stderr");
  CHECK_CONTAINS(err, "--fleet");
  free(out), free(err);
}

/* --prices through the CLI: the cost in every output; compare puts two fleets side by side;
 * a bad prices file is named with its line and key; --cost-csv needs --prices. The trace's
 * 6 + 8 + 2 GPUs for 100, 100 and 50 s: 1500 GPU-seconds at 3.60 an hour = 1.50. */
static void prices_add_costs_to_every_output_and_compare_takes_two_fleets(void) {
  setup();
  char path[512];
  snprintf(path, sizeof path, "%s/prices.yaml", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs("currency: EUR\ngpu_hour:\n  - {model: '*', capacity: on-demand, price: 3.60}\n"
        "  - {model: '*', capacity: on-prem, price: 1.80}\n", f);
  fclose(f);
  char cmd[1024], *out, *err;
  snprintf(cmd, sizeof cmd,
           "%s sim replay --trace t.csv --fleet 1x8xH100:on-demand --policy backfill -o json "
           "--prices prices.yaml --cost-csv cost.csv --html report.html", bin());
  CHECK_EQ_INT(0, run(cmd, &out));
  json_t *j = json_loads(out, 0, NULL);
  REQUIRE(j);
  json_t *c = json_object_get(j, "cost");
  REQUIRE(c);
  CHECK_EQ_STR("EUR", json_string_value(json_object_get(c, "currency")));
  CHECK_NEAR(1.50, json_real_value(json_object_get(c, "jobs")), 1e-9);
  double fleet = json_real_value(json_object_get(c, "fleet"));
  CHECK_NEAR(8 * 3.60 * json_real_value(json_object_get(j, "makespan_s")) / 3600, fleet, 0.005);
  CHECK_NEAR(fleet - 1.50, json_real_value(json_object_get(c, "idle")), 0.005);
  json_t *q = json_array_get(json_object_get(j, "queues"), 0);
  CHECK_NEAR(1.50, json_real_value(json_object_get(q, "cost")), 1e-9);
  json_decref(j);
  free(out);
  char *csv = slurp("cost.csv");
  REQUIRE(csv);
  static const char head[] = "policy,kind,queue,cost,currency\nbackfill,jobs,q,1.50,EUR\n";
  CHECK(strncmp(csv, head, sizeof head - 1) == 0);
  CHECK_CONTAINS(csv, "\nbackfill,fleet,,");
  char *html = slurp("report.html");
  REQUIRE(html);
  CHECK_CONTAINS(html, "<td>fleet cost</td>");
  free(csv), free(html);

  snprintf(cmd, sizeof cmd,
           "%s sim compare --trace t.csv --policies backfill --fleet 1x8:on-demand "
           "--fleet 1x8 --prices prices.yaml", bin());
  CHECK_EQ_INT(0, run(cmd, &out));
  CHECK_CONTAINS(out, "backfill@1x8:on-demand");
  CHECK_CONTAINS(out, "fleet cost (EUR)");
  CHECK_CONTAINS(out, "job cost");
  CHECK_CONTAINS(out, "1.50"); /* on-demand jobs; on-prem at half the price: 0.75 */
  CHECK_CONTAINS(out, "0.75");
  free(out);

  f = fopen(path, "w");
  fputs("prices:\n  gpu_hour:\n    - {model: H100, capacity: on-demand, price: cheap}\n", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace t.csv --fleet 1x8 --prices prices.yaml", bin());
  CHECK_EQ_INT(1, run(cmd, &out));
  err = slurp("stderr");
  CHECK_CONTAINS(err, "prices.yaml:3: prices.gpu_hour[0].price");
  free(out), free(err);
  snprintf(cmd, sizeof cmd, "%s sim replay --trace t.csv --fleet 1x8 --cost-csv c.csv", bin());
  CHECK_EQ_INT(2, run(cmd, &out));
  free(out);
}

/* A queue name a spreadsheet would compute ("-1-1" is a valid queue name and the formula
 * -2) is written into the cost CSV as text, as the server's reports write it. */
static void cost_csv_writes_a_formula_like_queue_as_text(void) {
  setup();
  char path[512];
  snprintf(path, sizeof path, "%s/tf.csv", dir);
  FILE *f = fopen(path, "w");
  REQUIRE(f);
  fputs("submit_time,duration,gpus,queue\n0,100,6,-1-1\n", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/pf.yaml", dir);
  f = fopen(path, "w");
  REQUIRE(f);
  fputs("currency: EUR\ngpu_hour:\n  - {model: '*', capacity: on-demand, price: 3.60}\n", f);
  fclose(f);
  char cmd[1024], *out;
  snprintf(cmd, sizeof cmd,
           "%s sim replay --trace tf.csv --fleet 1x8xH100:on-demand --policy backfill "
           "--prices pf.yaml --cost-csv cf.csv", bin());
  CHECK_EQ_INT(0, run(cmd, &out));
  free(out);
  char *csv = slurp("cf.csv");
  REQUIRE(csv);
  CHECK_CONTAINS(csv, "\nbackfill,jobs,\"'-1-1\",0.60,EUR\n");
  free(csv);
}

GP_TESTS(replay_prints_the_documented_json_and_writes_csv_and_html,
         prices_add_costs_to_every_output_and_compare_takes_two_fleets,
         compare_puts_policies_side_by_side_and_reruns_are_identical,
         bad_rows_and_bad_arguments_are_explained, cost_csv_writes_a_formula_like_queue_as_text)
