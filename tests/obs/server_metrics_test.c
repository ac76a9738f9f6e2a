/* SPDX-License-Identifier: Apache-2.0 */
/* The server's /metrics text: what an operator's Prometheus sees for a small pool, checked
 * by promtool (the Prometheus project's own linter) and by reading the figures back. */
#include "test.h"
#include "server/state/metrics.h"
#include "util/buf.h"

static const char *reasons[] = {"Resources", "QueueLimit", "Priority", NULL};
static const char *states[] = {"pending", "running", "completed", NULL};
static const char *node_states[] = {"up", "down", "drain", NULL};

static char *render_pool(void) {
  static gp_server_metrics_queue qs[2];
  memset(qs, 0, sizeof qs);
  qs[0] = (gp_server_metrics_queue){.name = "org/vision", .deserved = 8, .limit = -1,
                                    .weight = 1, .fair_share = 10, .allocated = 12,
                                    .pending_gpus = 4, .running_jobs = 3, .pending_jobs = 2,
                                    .gpus_allocated_idle = 2};
  qs[0].pending_by_reason[0] = 2;
  qs[1] = (gp_server_metrics_queue){.name = "org/\"nlp\"\\x", .deserved = 4, .limit = 6,
                                    .weight = 2, .fair_share = 6, .allocated = 4};
  gp_server_metrics m = {0};
  m.n_queues = 2;
  m.queues = qs;
  m.reason_names = reasons;
  m.job_state_names = states;
  m.node_state_names = node_states;
  m.jobs_by_state[0] = 2;
  m.jobs_by_state[1] = 3;
  m.nodes_by_state[0] = 2;
  m.agents_up = 2;
  m.agents_down = 1;
  m.gpus_total = 16;
  m.gpus_allocated = 16;
  m.gpus_allocated_idle = 2;
  m.idle_threshold_pct = 5;
  m.idle_window_s = 600;
  m.sched_cycles_total = 40;
  m.last_sched_cycle_s = 0.0012;
  m.sched_cycles_cpu_s = 0.75;
  static const gp_server_metrics_usage usage[] = {
      {"org/vision", "H100-80GB", "on-demand", 7200, 3600.5, 7000},
      {"org/\"nlp\"\\x", "A100-80GB", "spot", 900, 0, 0}};
  m.usage = usage;
  m.n_usage = 2;
  static const gp_server_metrics_budget budgets[] = {
      {"org/vision", "gpu_hours", 500, 412.5, 0.825, 1, 0},
      {"org/\"nlp\"\\x", "USD", 1000, 1250, 1.25, 1, 1}};
  m.budgets = budgets;
  m.n_budgets = 2;
  static const gp_server_metrics_cost costs[] = {
      {"org/vision", "H100-80GB", "on-demand", 13.76},
      {"org/\"nlp\"\\x", "A100-80GB", "spot", 0.6}};
  m.costs = costs;
  m.n_costs = 2;
  m.currency = "USD";
  gp_hist_init(&m.sched_cycle_s, gp_hist_bounds_cycle_s, gp_hist_n_bounds_cycle_s);
  gp_hist_init(&m.queue_wait_s, gp_hist_bounds_wait_s, gp_hist_n_bounds_wait_s);
  gp_hist_init(&m.job_run_s, gp_hist_bounds_wait_s, gp_hist_n_bounds_wait_s);
  gp_hist_observe(&m.sched_cycle_s, 0.0012);
  gp_hist_observe(&m.queue_wait_s, 3);
  gp_hist_observe(&m.queue_wait_s, 40);
  gp_hist_observe(&m.queue_wait_s, 1e9);
  gp_buf b;
  gp_buf_init(&b, 0);
  gp_server_metrics_render(&m, &b);
  REQUIRE(!gp_buf_truncated(&b));
  return gp_buf_steal(&b);
}

/* Runs `promtool check metrics` on text; returns its exit status and its output. */
static int promtool_check(const char *text, char *out, size_t size) {
  char path[] = "/tmp/gp_metrics_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  size_t n = fread(out, 1, size - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  unlink(path);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static void promtool_accepts_the_server_metrics(void) {
  if (system("command -v promtool >/dev/null 2>&1") != 0) {
    fprintf(stderr, "  promtool not installed (Debian package prometheus): cannot validate\n");
    exit(1);
  }
  char *text = render_pool();
  char out[8192];
  int rc = promtool_check(text, out, sizeof out);
  if (rc != 0) fprintf(stderr, "promtool said:\n%s\n--- text ---\n%s", out, text);
  CHECK_EQ_INT(0, rc);
  free(text);
}

static void queues_show_share_depth_and_reasons(void) {
  char *t = render_pool();
  CHECK_CONTAINS(t, "gpool_queue_pending_jobs{queue=\"org/vision\"} 2\n");
  CHECK_CONTAINS(t, "gpool_queue_fair_share_gpus{queue=\"org/vision\"} 10\n");
  CHECK_CONTAINS(t, "gpool_queue_deserved_gpus{queue=\"org/vision\"} 8\n");
  CHECK_CONTAINS(t, "gpool_queue_pending_jobs_by_reason{queue=\"org/vision\",reason=\"Resources\"} 2\n");
  CHECK_CONTAINS(t, "gpool_queue_gpus_allocated_idle{queue=\"org/vision\"} 2\n");
  /* A queue name with quotes and backslashes is escaped, not broken. */
  CHECK_CONTAINS(t, "gpool_queue_limit_gpus{queue=\"org/\\\"nlp\\\"\\\\x\"} 6\n");
  /* No limit: no series (absent means none, not zero). */
  CHECK(!strstr(t, "gpool_queue_limit_gpus{queue=\"org/vision\"}"));
  CHECK_CONTAINS(t, "gpool_agents{state=\"down\"} 1\n");
  CHECK_CONTAINS(t, "gpool_gpus_allocated_idle 2\n");
  CHECK_CONTAINS(t, "gpool_scheduling_last_cycle_seconds 0.0012\n");
  CHECK_CONTAINS(t, "gpool_scheduling_cycle_cpu_seconds_total 0.75\n");
  free(t);
}

/* GPU-seconds allocated and used, per queue, GPU model and capacity type. */
static void usage_counters_by_queue_model_and_capacity(void) {
  char *t = render_pool();
  CHECK_CONTAINS(t, "# TYPE gpool_queue_gpu_seconds_total counter\n");
  CHECK_CONTAINS(t, "gpool_queue_gpu_seconds_total{queue=\"org/vision\",model=\"H100-80GB\","
                    "capacity=\"on-demand\"} 7200\n");
  CHECK_CONTAINS(t, "gpool_queue_used_gpu_seconds_total{queue=\"org/vision\",model=\"H100-80GB\","
                    "capacity=\"on-demand\"} 3600.5\n");
  CHECK_CONTAINS(t, "# TYPE gpool_queue_measured_gpu_seconds_total counter\n");
  CHECK_CONTAINS(t, "gpool_queue_measured_gpu_seconds_total{queue=\"org/vision\",model=\"H100-80GB\","
                    "capacity=\"on-demand\"} 7000\n");
  CHECK_CONTAINS(t, "gpool_queue_gpu_seconds_total{queue=\"org/\\\"nlp\\\"\\\\x\",model=\"A100-80GB\","
                    "capacity=\"spot\"} 900\n");
  free(t);
}

/* Budgets by queue and unit, their alerts by threshold, and cost by queue, model and
 * capacity. */
static void budgets_and_costs_by_queue(void) {
  char *t = render_pool();
  CHECK_CONTAINS(t, "# TYPE gpool_queue_budget gauge\n");
  CHECK_CONTAINS(t, "gpool_queue_budget{queue=\"org/vision\",unit=\"gpu_hours\"} 500\n");
  CHECK_CONTAINS(t, "gpool_queue_budget_spent{queue=\"org/vision\",unit=\"gpu_hours\"} 412.5\n");
  CHECK_CONTAINS(t, "gpool_queue_budget_used_ratio{queue=\"org/\\\"nlp\\\"\\\\x\",unit=\"USD\"} 1.25\n");
  CHECK_CONTAINS(t, "gpool_queue_budget_alerts_total{queue=\"org/vision\",threshold=\"80\"} 1\n");
  CHECK_CONTAINS(t, "gpool_queue_budget_alerts_total{queue=\"org/vision\",threshold=\"100\"} 0\n");
  CHECK_CONTAINS(t, "# TYPE gpool_queue_cost_total counter\n");
  CHECK_CONTAINS(t, "gpool_queue_cost_total{queue=\"org/vision\",model=\"H100-80GB\","
                    "capacity=\"on-demand\"} 13.76\n");
  free(t);
}

static void histograms_are_cumulative_with_inf(void) {
  char *t = render_pool();
  CHECK_CONTAINS(t, "gpool_queue_wait_seconds_bucket{le=\"1\"} 0\n");
  CHECK_CONTAINS(t, "gpool_queue_wait_seconds_bucket{le=\"5\"} 1\n");
  CHECK_CONTAINS(t, "gpool_queue_wait_seconds_bucket{le=\"60\"} 2\n");
  CHECK_CONTAINS(t, "gpool_queue_wait_seconds_bucket{le=\"604800\"} 2\n");
  CHECK_CONTAINS(t, "gpool_queue_wait_seconds_bucket{le=\"+Inf\"} 3\n");
  CHECK_CONTAINS(t, "gpool_queue_wait_seconds_count 3\n");
  CHECK_CONTAINS(t, "gpool_scheduling_cycle_seconds_bucket{le=\"0.0025\"} 1\n");
  free(t);
}

static void promtool_catches_a_broken_exposition(void) {
  /* The check above means something only if promtool rejects bad text. */
  char out[4096];
  CHECK(promtool_check("# TYPE x counter\nx{a=\"1\" 3\n", out, sizeof out) != 0);
}

GP_TESTS(promtool_accepts_the_server_metrics, queues_show_share_depth_and_reasons,
         usage_counters_by_queue_model_and_capacity, budgets_and_costs_by_queue,
         histograms_are_cumulative_with_inf, promtool_catches_a_broken_exposition)
