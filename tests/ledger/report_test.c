/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger report on small hand-made fleets whose answers can be worked out on paper:
 * shares adding up to one GPU, a price change at midnight, day/week/month steps on calendar
 * bounds, unknown use kept out of efficiency, idle and drained capacity, unused commitment,
 * the idle charge-back, groupings, and bad params named by field. */
#include "ledger/report.h"

#include "util/calendar.h"
#include "test.h"

#define H 3600
#define DAY 86400
#define T2026 INT64_C(1767225600) /* 2026-01-01T00:00:00Z, a Thursday */

static gp_prices *prices_of(const char *yaml) {
  gp_doc *d = NULL;
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(gp_doc_load_string("p.yaml", yaml, strlen(yaml), &d, &err) == 0);
  if (gp_prices_read(d, gp_doc_get(d->root, "prices"), "prices", &p, &err))
    fprintf(stderr, "%s: %s\n", err.field, err.message);
  REQUIRE(p);
  gp_doc_free(d);
  return p;
}

static void node(gp_ledger_report *r, const char *name, const char *model, gp_capacity c, int gpus,
                 gp_ledger_node_state st, int64_t start, int64_t end) {
  gp_ledger_node_iv iv = {name, model, c, gpus, st, start, end};
  gp_ledger_report_add_node(r, &iv);
}

static void job(gp_ledger_report *r, int64_t id, const char *queue, const char *user,
                const char *nodename, const char *model, gp_capacity c, double share,
                int64_t start, int64_t end, double used, double energy) {
  gp_ledger_job_iv iv = {id, 1, queue, user, nodename, model, c, share, start, end, used, energy, NULL};
  gp_ledger_report_add_job(r, &iv);
}

static const gp_ledger_row *rows_of(gp_ledger_report *r, int *n) {
  const gp_ledger_row *rows = NULL;
  gp_err err = {0};
  REQUIRE(gp_ledger_report_finish(r, &rows, n, &err) == 0);
  return rows;
}

static double sum_cost(const gp_ledger_row *rows, int n) {
  double c = 0;
  for (int i = 0; i < n; i++) c += rows[i].cost;
  return c;
}

static void calendar_bounds(void) {
  int64_t t;
  CHECK(gp_parse_date("2026-03-01", &t));
  CHECK_EQ_INT(gp_month_start(t + 5), t);
  CHECK_EQ_INT(gp_month_start(t - 1), t - 28 * DAY); /* 2026-02-01 */
  CHECK_EQ_INT(gp_next_month(t - 1), t);
  CHECK(gp_parse_date("2024-03-01", &t));
  CHECK_EQ_INT(gp_month_start(t - 1), t - 29 * DAY); /* leap February */
  CHECK(gp_parse_date("2026-12-15", &t));
  CHECK(gp_parse_date("2027-01-01", &t) && gp_next_month(t - DAY) == t);
  /* 2026-01-05 was a Monday: the week of 2026-01-04 (Sunday) began 2025-12-29. */
  CHECK_EQ_INT(T2026 + 4 * DAY, gp_week_start(T2026 + 4 * DAY + 5));
  CHECK_EQ_INT(T2026 - 3 * DAY, gp_week_start(T2026 + 3 * DAY + H));
  int64_t y;
  int m, d;
  for (int64_t days = 0; days < 200000; days += 17) {
    gp_civil_from_days(days, &y, &m, &d);
    CHECK_EQ_INT(days, gp_days_from_civil(y, m, d));
  }
}

static void four_quarters_make_one_gpu_hour(void) {
  gp_prices *p = prices_of("prices:\n  gpu_hour:\n"
                           "    - {model: H100, capacity: on-demand, price: 4}\n");
  gp_ledger_params pa = {.from = T2026, .to = T2026 + DAY, .group = GP_LG_QUEUE, .prices = p};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  node(r, "n1", "H100", GP_CAP_ON_DEMAND, 1, GP_LEDGER_UP, T2026, T2026 + DAY);
  for (int i = 0; i < 4; i++)
    job(r, i + 1, "a", "u", "n1", "H100", GP_CAP_ON_DEMAND, 0.25, T2026, T2026 + H, -1, -1);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  REQUIRE(n == 2);
  CHECK_EQ_INT(GP_LR_JOBS, rows[0].kind);
  CHECK_EQ_STR("a", rows[0].queue);
  CHECK_NEAR(H, rows[0].gpu_s, 1e-9);
  CHECK_NEAR(4.0, rows[0].cost, 1e-9);
  CHECK_EQ_INT(GP_LR_IDLE, rows[1].kind);
  CHECK_NEAR(23.0 * H, rows[1].gpu_s, 1e-9);
  CHECK_NEAR(92.0, rows[1].cost, 1e-9);
  CHECK_NEAR(96.0, gp_ledger_report_fleet_cost(r), 1e-9);
  CHECK_EQ_INT(0, gp_ledger_report_anomalies(r));
  gp_ledger_report_free(r);
  gp_prices_free(p);
}

static void price_change_at_midnight_splits(void) {
  gp_prices *p = prices_of("prices:\n  gpu_hour:\n"
                           "    - {model: H100, capacity: spot, price: 2, from: 2026-01-01}\n"
                           "    - {model: H100, capacity: spot, price: 3, from: 2026-01-02}\n");
  gp_ledger_params pa = {.from = T2026, .to = T2026 + 2 * DAY, .group = GP_LG_JOB, .prices = p};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  node(r, "n1", "H100", GP_CAP_SPOT, 2, GP_LEDGER_UP, T2026, T2026 + 2 * DAY);
  /* 22:00 to 04:00: two hours at 2, four at 3, on two GPUs. */
  job(r, 7, "a", "u", "n1", "h100", GP_CAP_SPOT, 1, T2026 + 22 * H, T2026 + DAY + 4 * H, -1, -1);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  REQUIRE(n >= 1);
  CHECK_EQ_INT(7, rows[0].job);
  CHECK_NEAR(2 * 2 + 4 * 3, rows[0].cost, 1e-9);
  CHECK_NEAR(gp_ledger_report_fleet_cost(r), sum_cost(rows, n), 1e-9);
  CHECK_NEAR(24 * 2 * 2 + 24 * 2 * 3, gp_ledger_report_fleet_cost(r), 1e-9);
  gp_ledger_report_free(r);
  gp_prices_free(p);
}

static void steps_cut_at_calendar_bounds(void) {
  int64_t feb, mar;
  REQUIRE(gp_parse_date("2026-02-01", &feb) && gp_parse_date("2026-03-01", &mar));
  /* A job from Jan 30 12:00 to Mar 2 00:00; the report from Jan 31 06:00. */
  gp_ledger_params pa = {.from = feb - DAY + 6 * H, .to = mar + 2 * DAY, .step = GP_LS_MONTH};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  node(r, "n1", "A100", GP_CAP_ON_PREM, 1, GP_LEDGER_UP, 0, mar + 5 * DAY);
  job(r, 1, "a", "u", "n1", "A100", GP_CAP_ON_PREM, 1, feb - 2 * DAY + 12 * H, mar + DAY, -1, -1);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  REQUIRE(n >= 3);
  CHECK_EQ_INT(gp_month_start(feb - 1), rows[0].period_start); /* the month's label */
  CHECK_NEAR(18 * H, rows[0].gpu_s, 1e-9);
  CHECK_EQ_INT(feb, rows[1].period_start);
  CHECK_NEAR(28 * DAY, rows[1].gpu_s, 1e-9);
  CHECK_EQ_INT(mar, rows[2].period_start);
  CHECK_NEAR(DAY, rows[2].gpu_s, 1e-9);
  CHECK_EQ_INT(0, rows[0].cost);
  gp_ledger_report_free(r);

  /* Weeks start on Monday: Thursday 2026-01-01 to Tuesday 2026-01-13. */
  gp_ledger_params pw = {.from = T2026, .to = T2026 + 12 * DAY, .step = GP_LS_WEEK};
  r = gp_ledger_report_new(&pw);
  node(r, "n1", "A100", GP_CAP_ON_PREM, 1, GP_LEDGER_UP, 0, T2026 + 20 * DAY);
  job(r, 1, "a", "u", "n1", "A100", GP_CAP_ON_PREM, 0.5, T2026, T2026 + 12 * DAY, -1, -1);
  rows = rows_of(r, &n);
  REQUIRE(n == 6); /* three weeks of job rows and of idle rows */
  CHECK_EQ_INT(T2026 - 3 * DAY, rows[0].period_start);
  CHECK_NEAR(0.5 * 4 * DAY, rows[0].gpu_s, 1e-9);
  CHECK_EQ_INT(T2026 + 4 * DAY, rows[1].period_start);
  CHECK_NEAR(0.5 * 7 * DAY, rows[1].gpu_s, 1e-9);
  CHECK_EQ_INT(T2026 + 11 * DAY, rows[2].period_start);
  CHECK_NEAR(0.5 * DAY, rows[2].gpu_s, 1e-9);
  gp_ledger_report_free(r);

  gp_ledger_params pd = {.from = T2026 + 12 * H, .to = T2026 + 2 * DAY, .step = GP_LS_DAY};
  r = gp_ledger_report_new(&pd);
  node(r, "n1", "A100", GP_CAP_ON_PREM, 1, GP_LEDGER_UP, 0, T2026 + 20 * DAY);
  job(r, 1, "a", "u", "n1", "A100", GP_CAP_ON_PREM, 1, T2026, T2026 + 3 * DAY, -1, -1);
  rows = rows_of(r, &n);
  REQUIRE(n == 2);
  CHECK_EQ_INT(T2026, rows[0].period_start);
  CHECK_NEAR(12 * H, rows[0].gpu_s, 1e-9);
  CHECK_NEAR(DAY, rows[1].gpu_s, 1e-9);
  gp_ledger_report_free(r);
}

static void unknown_use_stays_out(void) {
  gp_ledger_params pa = {.from = T2026, .to = T2026 + DAY, .group = GP_LG_USER};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  node(r, "n1", "H100", GP_CAP_ON_PREM, 4, GP_LEDGER_UP, T2026, T2026 + DAY);
  job(r, 1, "a", "ann", "n1", "H100", GP_CAP_ON_PREM, 1, T2026, T2026 + 2 * H, 3600, 7.2e6);
  job(r, 2, "a", "ann", "n1", "H100", GP_CAP_ON_PREM, 1, T2026, T2026 + 2 * H, -1, -1); /* MPS */
  /* Half of this one lies before the report: half its use and energy count. */
  job(r, 3, "a", "bob", "n1", "H100", GP_CAP_ON_PREM, 1, T2026 - H, T2026 + H, 1000, 2000);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  REQUIRE(n >= 2);
  CHECK_EQ_STR("ann", rows[0].user);
  CHECK_NEAR(4 * H, rows[0].gpu_s, 1e-9);
  CHECK_NEAR(3600, rows[0].used_gpu_s, 1e-9);
  CHECK_NEAR(2 * H, rows[0].known_gpu_s, 1e-9);
  CHECK_NEAR(7.2e6, rows[0].energy_j, 1e-6);
  CHECK_EQ_STR("bob", rows[1].user);
  CHECK_NEAR(H, rows[1].gpu_s, 1e-9);
  CHECK_NEAR(500, rows[1].used_gpu_s, 1e-9);
  CHECK_NEAR(H, rows[1].known_gpu_s, 1e-9);
  CHECK_NEAR(1000, rows[1].energy_j, 1e-9);
  gp_ledger_report_free(r);
}

static void idle_drained_and_unused_commitment(void) {
  gp_prices *p = prices_of("prices:\n  gpu_hour:\n"
                           "    - {model: H100, capacity: on-prem, price: 1}\n"
                           "  commitments:\n"
                           "    - {model: H100, gpus: 8, price: 2, from: 2026-01-01, to: 2026-02-01}\n"
                           "  energy:\n    - {price_per_kwh: 0.5}\n");
  gp_ledger_params pa = {.from = T2026, .to = T2026 + 10 * H,
                         .group = GP_LG_CAPACITY | GP_LG_NODE, .prices = p};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  /* Reserved: 4 GPUs up for 10 h against 8 committed: 4 × 10 h unused at 2. */
  node(r, "r1", "H100", GP_CAP_RESERVED, 4, GP_LEDGER_UP, T2026, T2026 + 10 * H);
  /* On-prem: 2 GPUs, up 6 h then drained 4 h. */
  node(r, "p1", "H100", GP_CAP_ON_PREM, 2, GP_LEDGER_UP, T2026, T2026 + 6 * H);
  node(r, "p1", "H100", GP_CAP_ON_PREM, 2, GP_LEDGER_DRAINED, T2026 + 6 * H, T2026 + 20 * H);
  job(r, 1, "a", "u", "r1", "H100", GP_CAP_RESERVED, 1, T2026, T2026 + 5 * H, -1, -1);
  /* Across the drain: 4 h up, 2 h while drained, 3.6e6 J = 1 kWh at 0.5. */
  job(r, 2, "a", "u", "p1", "H100", GP_CAP_ON_PREM, 1, T2026 + 2 * H, T2026 + 8 * H, -1, 3.6e6);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  double idle = 0, dd = 0, unused = 0, jobs = 0;
  for (int i = 0; i < n; i++) {
    if (rows[i].kind == GP_LR_JOBS) jobs += rows[i].cost;
    if (rows[i].kind == GP_LR_IDLE) idle += rows[i].cost;
    if (rows[i].kind == GP_LR_DRAINED_DOWN) dd += rows[i].cost;
    if (rows[i].kind == GP_LR_UNUSED_COMMITMENT) {
      unused += rows[i].cost;
      CHECK_EQ_STR("reserved", rows[i].capacity);
      CHECK(rows[i].node == NULL);
    }
  }
  CHECK_NEAR(5 * 2 + 6 * 1 + 0.5, jobs, 1e-9);
  CHECK_NEAR((4 * 10 - 5) * 2 + (2 * 6 - 4) * 1, idle, 1e-9);
  CHECK_NEAR(2 * 4 - 2, dd, 1e-9);
  CHECK_NEAR(4 * 10 * 2, unused, 1e-9);
  CHECK_NEAR(8 * 10 * 2 + 2 * 10 * 1 + 0.5, gp_ledger_report_fleet_cost(r), 1e-9);
  CHECK_NEAR(gp_ledger_report_fleet_cost(r), jobs + idle + dd + unused, 1e-9);
  CHECK_EQ_INT(0, gp_ledger_report_anomalies(r));
  gp_ledger_report_free(r);
  gp_prices_free(p);
}

static void idle_is_charged_back(void) {
  gp_prices *p = prices_of("prices:\n  gpu_hour:\n"
                           "    - {model: H100, capacity: on-demand, price: 1}\n");
  static const char *const qs[] = {"a", "b", "c"};
  static const double dg[] = {3, 1, 100};
  for (int mode = GP_LSI_DESERVED; mode <= GP_LSI_USAGE; mode++) {
    gp_ledger_params pa = {.from = T2026, .to = T2026 + 10 * H, .group = GP_LG_USER,
                           .share_idle = (gp_ledger_share_idle)mode, .prices = p,
                           .n_deserved = 3, .deserved_queue = qs, .deserved_gpus = dg};
    gp_ledger_report *r = gp_ledger_report_new(&pa);
    node(r, "n1", "H100", GP_CAP_ON_DEMAND, 4, GP_LEDGER_UP, T2026, T2026 + 10 * H);
    job(r, 1, "a", "ann", "n1", "H100", GP_CAP_ON_DEMAND, 1, T2026, T2026 + 2 * H, -1, -1);
    job(r, 2, "a", "bob", "n1", "H100", GP_CAP_ON_DEMAND, 1, T2026, T2026 + 2 * H, -1, -1);
    job(r, 3, "b", "bob", "n1", "H100", GP_CAP_ON_DEMAND, 1, T2026, T2026 + 6 * H, -1, -1);
    int n = 0;
    const gp_ledger_row *rows = rows_of(r, &n);
    REQUIRE(n == 3); /* ann, bob (queues folded), idle */
    double idle = 40 - 10;
    CHECK_NEAR(idle, rows[2].cost, 1e-9);
    CHECK_NEAR(idle, rows[0].idle_share_cost + rows[1].idle_share_cost, 1e-9);
    /* deserved: a 3/4 (split evenly between ann and bob), b 1/4; c has no jobs.
     * usage: a 4/10, b 6/10. */
    double a = mode == GP_LSI_DESERVED ? 0.75 : 0.4;
    CHECK_NEAR(idle * a / 2, rows[0].idle_share_cost, 1e-9);
    CHECK_NEAR(idle * (a / 2 + (1 - a)), rows[1].idle_share_cost, 1e-9);
    gp_ledger_report_free(r);
  }
  gp_prices_free(p);
}

static void no_prices_and_unknown_prices(void) {
  gp_prices *p = prices_of("prices:\n  gpu_hour:\n"
                           "    - {model: H100, capacity: on-demand, price: 1}\n");
  gp_ledger_params pa = {.from = T2026, .to = T2026 + DAY, .group = GP_LG_MODEL, .prices = p};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  node(r, "n1", "L40S", GP_CAP_ON_DEMAND, 1, GP_LEDGER_UP, T2026, T2026 + DAY);
  job(r, 1, "a", "u", "n1", "L40S", GP_CAP_ON_DEMAND, 1, T2026, T2026 + H, -1, -1);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  REQUIRE(n == 2);
  CHECK(rows[0].cost_unknown);
  CHECK(rows[1].cost_unknown);
  CHECK_EQ_STR("L40S", rows[0].model);
  gp_ledger_report_free(r);
  gp_prices_free(p);
}

static void inconsistent_input_is_counted(void) {
  gp_ledger_params pa = {.from = T2026, .to = T2026 + DAY};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  node(r, "n1", "H100", GP_CAP_SPOT, 1, GP_LEDGER_UP, T2026, T2026 + H);
  job(r, 1, "a", "u", "n1", "H100", GP_CAP_SPOT, 1, T2026, T2026 + H, -1, -1);
  job(r, 2, "a", "u", "n1", "H100", GP_CAP_SPOT, 1, T2026, T2026 + H, -1, -1); /* 2 on 1 GPU */
  job(r, 3, "a", "u", "ghost", "H100", GP_CAP_SPOT, 1, T2026, T2026 + H, -1, -1);
  job(r, 4, "a", "u", "n1", "H100", GP_CAP_SPOT, 1.5, T2026, T2026 + H, -1, -1);
  job(r, 5, "a", "u", "n1", "H100", GP_CAP_SPOT, NAN, T2026, T2026 + H, -1, -1);
  job(r, 6, "a", "u", "n1", "H100", GP_CAP_SPOT, 1, T2026 + H, T2026, -1, -1);
  job(r, 7, "a", "u", NULL, "H100", GP_CAP_SPOT, 1, T2026, T2026 + H, -1, -1);
  node(r, "n2", "H100", GP_CAP_SPOT, 0, GP_LEDGER_UP, T2026, T2026 + DAY);
  job(r, 8, "a", "u", "n1", "H100", GP_CAP_SPOT, 1, INT64_MIN, INT64_MAX, -1, -1);
  node(r, "n3", "H100", GP_CAP_SPOT, 1, GP_LEDGER_UP, INT64_MIN, INT64_MAX);
  /* Unmeasurable use or energy is unknown, not infinite. */
  job(r, 9, "a", "u", "n1", "H100", GP_CAP_SPOT, 1, T2026, T2026 + 1, INFINITY, NAN);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  CHECK_EQ_INT(9, gp_ledger_report_anomalies(r));
  REQUIRE(n == 1); /* the job row; n1's idle, -1 GPU-hour, is clamped to none */
  CHECK_NEAR(3 * H + 1, rows[0].gpu_s, 1e-9);
  CHECK_EQ_INT(0, rows[0].used_gpu_s);
  CHECK_EQ_INT(0, rows[0].energy_j);
  gp_ledger_report_free(r);
  r = gp_ledger_report_new(NULL); /* no params: an error at finish, not a crash */
  CHECK(gp_ledger_report_finish(r, &rows, &n, NULL) < 0);
  gp_ledger_report_free(r);
}

/* By service: a replica's intervals sum under its service, every other job's under "-", so
 * the rows still add up to the jobs' total; idle rows carry no service. */
static void service_rows_sum_their_replicas(void) {
  gp_prices *p = prices_of("prices:\n  gpu_hour:\n"
                           "    - {model: H100, capacity: on-demand, price: 4}\n");
  gp_ledger_params pa = {.from = T2026, .to = T2026 + DAY, .group = GP_LG_SERVICE, .prices = p};
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  node(r, "n1", "H100", GP_CAP_ON_DEMAND, 4, GP_LEDGER_UP, T2026, T2026 + DAY);
  gp_ledger_job_iv iv = {1, 1, "a", "u", "n1", "H100", GP_CAP_ON_DEMAND, 1, T2026, T2026 + 2 * H,
                         -1, -1, "chat"};
  gp_ledger_report_add_job(r, &iv);
  iv.job = 2; iv.share = 0.5; iv.end = T2026 + 3 * H;   /* a second replica, half a GPU */
  gp_ledger_report_add_job(r, &iv);
  iv.job = 3; iv.share = 1; iv.end = T2026 + H; iv.service = "embed";
  gp_ledger_report_add_job(r, &iv);
  iv.job = 4; iv.end = T2026 + 4 * H; iv.service = NULL;   /* a batch job */
  gp_ledger_report_add_job(r, &iv);
  iv.job = 5; iv.end = T2026 + H; iv.service = "";
  gp_ledger_report_add_job(r, &iv);
  int n = 0;
  const gp_ledger_row *rows = rows_of(r, &n);
  REQUIRE(n == 4);
  CHECK_EQ_STR("-", rows[0].service);                  /* "-" sorts before letters */
  CHECK_NEAR(5.0 * H, rows[0].gpu_s, 1e-9);
  CHECK_NEAR(20.0, rows[0].cost, 1e-9);
  CHECK_EQ_STR("chat", rows[1].service);
  CHECK_NEAR(3.5 * H, rows[1].gpu_s, 1e-9);            /* 2 h x 1 + 3 h x 0.5 */
  CHECK_NEAR(14.0, rows[1].cost, 1e-9);
  CHECK_EQ_STR("embed", rows[2].service);
  CHECK_NEAR(1.0 * H, rows[2].gpu_s, 1e-9);
  CHECK_NEAR(4.0, rows[2].cost, 1e-9);
  CHECK_EQ_INT(GP_LR_IDLE, rows[3].kind);
  CHECK(rows[3].service == NULL);
  CHECK_NEAR((96 - 9.5) * H, rows[3].gpu_s, 1e-9);
  CHECK_EQ_INT(0, gp_ledger_report_anomalies(r));
  gp_ledger_report_free(r);
  gp_prices_free(p);
}

static void bad_params_name_the_field(void) {
  struct { gp_ledger_params p; const char *field; } bad[] = {
      {{.from = T2026, .to = T2026}, "to"},
      {{.from = -5, .to = T2026}, "from"},
      {{.from = T2026, .to = T2026 + DAY, .group = 128}, "by"},
      {{.from = T2026, .to = T2026 + DAY, .step = (gp_ledger_step)9}, "step"},
      {{.from = T2026, .to = T2026 + DAY, .share_idle = (gp_ledger_share_idle)3}, "share_idle"},
      {{.from = T2026, .to = T2026 + DAY, .n_deserved = 2}, "deserved"},
      {{.from = 0, .to = INT64_C(250000000000), .step = GP_LS_DAY}, "step"},
      {{.from = 0, .to = INT64_MAX}, "to"},
  };
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gp_ledger_report *r = gp_ledger_report_new(&bad[i].p);
    node(r, "n1", "H100", GP_CAP_SPOT, 1, GP_LEDGER_UP, T2026, T2026 + DAY);
    const gp_ledger_row *rows = NULL;
    int n = -1;
    gp_err err = {0};
    CHECK(gp_ledger_report_finish(r, &rows, &n, &err) < 0);
    CHECK_EQ_STR(bad[i].field, err.field);
    CHECK_EQ_INT(-1, n);
    gp_ledger_report_free(r);
  }
}

GP_TESTS(calendar_bounds, four_quarters_make_one_gpu_hour, price_change_at_midnight_splits,
         steps_cut_at_calendar_bounds, unknown_use_stays_out, idle_drained_and_unused_commitment,
         idle_is_charged_back, no_prices_and_unknown_prices, inconsistent_input_is_counted,
         service_rows_sum_their_replicas, bad_params_name_the_field)
