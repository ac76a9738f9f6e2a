/* SPDX-License-Identifier: Apache-2.0 */
/* One job's GPU-hours, energy and cost (GET /v1/reports/{kind}?job=ID, for the console's
 * job page) over a real SQLite ledger: only that job's intervals, no fleet rows for an
 * admin, nothing of another user's job for a user, every job for a viewer. */
#include "test.h"
#include "srv_util.h"
#include "store/store.h"

#define JAN1 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */
#define H INT64_C(3600)

/* Job 1: alice, two GPUs for 10 h, 18 MJ (5 kWh); job 2: bob, one GPU for 24 h. */
static void write_ledger(tsrv *t) {
  tsrv_make_dir(t);
  char path[300];
  snprintf(path, sizeof path, "%s/gpool.db", t->dir);
  gp_store *st = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(path, &st, &e) == 0);
  REQUIRE(gp_store_begin(st, &e) == 0);
  gp_store_node_interval n = {.node = "n1", .model = "H100-80GB", .capacity = "on-demand",
                              .state = "up", .gpus = 4, .start = JAN1};
  REQUIRE(gp_store_open_node_interval(st, &n, &e) == 0);
  REQUIRE(gp_store_close_node_interval(st, "n1", JAN1 + 48 * H, &e) == 0);
  struct { int64_t job; const char *user, *queue; int gpus; int64_t end; } jobs[] = {
      {1, "alice", "org/a", 2, JAN1 + 10 * H}, {2, "bob", "org/b", 1, JAN1 + 24 * H}};
  for (int k = 0; k < 2; k++) {
    for (int g = 0; g < jobs[k].gpus; g++) {
      char uuid[64];
      snprintf(uuid, sizeof uuid, "GPU-n1-%d", g + 2 * k);
      gp_store_interval row = {.job_id = jobs[k].job, .attempt = 1, .task = 0,
                               .user = jobs[k].user, .queue = jobs[k].queue, .node = "n1",
                               .gpu_uuid = uuid, .model = "H100-80GB",
                               .capacity = "on-demand", .share = 1.0, .start = JAN1};
      REQUIRE(gp_store_open_interval(st, &row, &e) == 0);
    }
    if (k == 0) REQUIRE(gp_store_set_interval_use(st, 1, "n1", 36000, 18e6, &e) == 0);
    REQUIRE(gp_store_close_intervals(st, jobs[k].job, jobs[k].end, &e) == 0);
  }
  REQUIRE(gp_store_commit(st, &e) == 0);
  gp_store_close(st);
}

static double total(const tsrv *t, const char *col) {
  double sum = 0;
  const json_t *rows = json_object_get(t->last, "rows");
  for (size_t i = 0; i < json_array_size(rows); i++)
    sum += json_number_value(json_object_get(json_array_get(rows, i), col));
  return sum;
}

static void a_report_filtered_to_one_job_gives_its_figures(void) {
  tsrv t = {0};
  write_ledger(&t);
  tsrv_start(&t);
  const char *q = "/v1/reports/cost?job=1&from=2026-01-01&to=2026-01-03";
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", q, ALICE, NULL));
  CHECK_NEAR(20.0, total(&t, "gpu_hours"), 1e-9);
  CHECK_NEAR(5.0, total(&t, "energy_kwh"), 1e-9);
  /* An admin gets the job's rows only, not the fleet's idle capacity. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", q, ADMIN, NULL));
  CHECK_NEAR(20.0, total(&t, "gpu_hours"), 1e-9);
  const json_t *rows = json_object_get(t.last, "rows");
  for (size_t i = 0; i < json_array_size(rows); i++)
    CHECK_EQ_STR("jobs", json_string_value(json_object_get(json_array_get(rows, i), "kind")));
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", q, VIEWER, NULL));
  CHECK_NEAR(20.0, total(&t, "gpu_hours"), 1e-9);
  /* Bob reads only his own intervals: alice's job gives him nothing. */
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", q, BOB, NULL));
  CHECK_NEAR(0.0, total(&t, "gpu_hours"), 1e-9);
  CHECK_EQ_INT(200, tsrv_req(&t, "GET", "/v1/reports/usage?job=2&from=2026-01-01&to=2026-01-03", BOB, NULL));
  CHECK_NEAR(24.0, total(&t, "gpu_hours"), 1e-9);
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/reports/cost?job=x1", ALICE, NULL));
  CHECK_EQ_STR("job", err_field(t.last));
  CHECK_EQ_INT(400, tsrv_req(&t, "GET", "/v1/reports/cost?job=0", ALICE, NULL));
  tsrv_stop(&t);
}

GP_TESTS(a_report_filtered_to_one_job_gives_its_figures)
