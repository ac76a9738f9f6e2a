/* SPDX-License-Identifier: Apache-2.0 */
/* A year of ledger history and ended jobs, and the advice over it (issue 19's figure).
 *
 *   bench_advice_year write DB [INTERVALS]   a fresh SQLite store at DB with INTERVALS job
 *                                            intervals (default 1,000,000) over 2026 and
 *                                            every job's ended document
 *   bench_advice_year time DB                times the advice on that store
 *
 * `write` makes the fleet of bench_report_year (2,000 nodes of 8 GPUs, 4 models, 4 capacity
 * types, up all year but for two drained days; 50 queues, 500 users; jobs of 1, 2, 4 or 8
 * GPUs lasting minutes to a day, use measured on most) through the store's own write
 * operations, and beside each job its ended document as the server stores it: a recurring
 * name (each user runs a few), its request, requeue and checkpoint on some, and the use
 * figures its agent reported (peak memory, average SM use; absent on the unmeasured ones).
 * Deterministic (a fixed seed), in start order. `time` runs the advice of GET /v1/advice as
 * an admin (node intervals, job intervals, ended jobs, the engine) for March and for the
 * year, best of 3 in wall and CPU time, with the store's reads alone beside it, then the
 * same advice from the daily roll-ups (as GET /v1/advice makes it).
 * bench/advice_year.sh adds the same through the HTTP API. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/advice.h"
#include "server/server.h"
#include "store/store.h"
#include "util/doc.h"

#include "ledger_year.h"

/* The ended job's document, shaped as the server stores it. */
static void job_doc(char *doc, size_t cap, int64_t job, const char *user, const char *queue,
                    int u, int gpus, int64_t start, int64_t end, bool measured) {
  int name = (int)(next_rand() % 4);
  bool requeue = next_rand() % 3 == 0;
  int64_t ckpt = requeue && next_rand() % 2 ? start + 900 : 0;
  int n = snprintf(doc, cap,
                   "{\"id\":\"%lld\",\"name\":\"train-%03d-%d\",\"queue\":\"%s\",\"user\":\"%s\","
                   "\"state\":\"completed\",\"priority\":null,\"command\":[\"python\",\"train.py\","
                   "\"--config\",\"configs/run.yaml\"],\"env\":{\"WANDB_PROJECT\":\"bench\"},"
                   "\"workdir\":\"/home/%s\",\"gpus\":%d,\"tasks\":1,\"gpu_fraction\":0,"
                   "\"gpu_mem_mib\":0,\"mig\":null,\"gpu_types\":[],\"cpus\":8,\"mem_mib\":65536,"
                   "\"time_limit\":0,\"requeue\":%s,\"grace_s\":30,\"signal\":\"TERM\","
                   "\"allow_spot\":false,\"node_selector\":{},\"restarts\":0,\"after\":[],"
                   "\"after_ok\":[],\"after_any\":[],\"exit_code\":0,\"end_reason\":\"exited\","
                   "\"stop_reason\":null,\"submitted_at\":%lld,\"started_at\":%lld,"
                   "\"ended_at\":%lld,\"last_checkpoint_at\":",
                   (long long)job, u, name, queue, user, user, gpus, requeue ? "true" : "false",
                   (long long)(start - (int64_t)(next_rand() % 3600)), (long long)start,
                   (long long)end);
  n += ckpt ? snprintf(doc + n, cap - (size_t)n, "%lld", (long long)ckpt)
            : snprintf(doc + n, cap - (size_t)n, "null");
  if (measured)
    n += snprintf(doc + n, cap - (size_t)n,
                  ",\"usage\":{\"avg_sm_util_pct\":%.1f,\"peak_sm_util_pct\":%d,\"idle_s\":%d,"
                  "\"sm_busy_gpu_s\":%.1f,\"peak_mem_mib\":%lld,\"energy_j\":%.1f}",
                  (double)(5 + next_rand() % 90), 95, (int)(next_rand() % 600),
                  (double)(end - start) * 0.5 * gpus, (long long)(2048 + next_rand() % (60 * 1024)),
                  300.0 * (double)(end - start) * gpus);
  snprintf(doc + n, cap - (size_t)n, "}");
}

/* Stores the job's ended document beside its intervals. */
static int put_doc(gp_store *st, const year_job *j, gp_err *e) {
  char doc[2048];
  job_doc(doc, sizeof doc, j->id, j->user, j->queue, j->user_no, j->gpus, j->start, j->end,
          j->measured);
  gp_store_job row = {j->id, "completed", j->queue, j->user, j->start, doc, NULL};
  return gp_store_put_job(st, &row, e);
}

static const char prices_yaml[] =
    "prices:\n"
    "  currency: USD\n"
    "  gpu_hour:\n"
    "    - {model: H100-80GB, capacity: on-demand, price: 6.88, from: 2026-01-01}\n"
    "    - {model: H100-80GB, capacity: on-demand, price: 6.20, from: 2026-07-01}\n"
    "    - {model: L40S-48GB, capacity: on-demand, price: 1.90}\n"
    "    - {model: \"*\", capacity: on-demand, price: 4.10}\n"
    "    - {model: \"*\", capacity: spot, price: 2.41}\n"
    "    - {model: \"*\", capacity: reserved, price: 4.10}\n"
    "    - {model: \"*\", capacity: on-prem, price: 1.90}\n";

static int count_node(void *ctx, const gp_store_node_interval *iv) {
  (void)iv;
  ++*(long *)ctx;
  return 0;
}
static int count_iv(void *ctx, const gp_store_interval *iv) {
  (void)iv;
  ++*(long *)ctx;
  return 0;
}
static int count_job(void *ctx, const gp_store_job *row, int64_t ended_at) {
  (void)row, (void)ended_at;
  ++*(long *)ctx;
  return 0;
}

/* One run: the wall milliseconds (CPU in *ret_cpu_ms), or < 0 on a failure. `engine`: the
 * whole advice; else the store's three reads alone. */
static double run(gp_store *st, int64_t from, int64_t to, const gp_prices *prices, bool engine,
                  bool days, long *ret_read, int *ret_items, double *ret_cpu_ms) {
  static const gp_advice_model fleet[4] = {{"H100-80GB", 80 * 1024, true, false},
                                           {"A100-80GB", 80 * 1024, true, false},
                                           {"H200-141GB", 141 * 1024, true, false},
                                           {"L40S-48GB", 48 * 1024, false, true}};
  static const gp_advice_queue queues[2] = {{"org/team01", 40}, {"org/team02", 4000}};
  gp_advice_params p = {.from = from, .to = to, .now = to, .headroom = GP_ADVICE_HEADROOM,
                        .checkpoint_s = GP_ADVICE_CHECKPOINT_S, .prices = prices, .fleet = true,
                        .n_models = 4, .models = fleet, .n_queues = 2, .queues = queues};
  gp_err e = {0};
  run_clock clk = run_clock_start();
  gp_store_reader *r = NULL;
  if (gp_store_reader_open(st, &r, &e)) return fail("reader", &e), -1;
  int rc = 0, n = 0;
  long read = 0;
  if (engine) {
    gp_advice *a = gp_advice_new(&p);
    rc = days ? gp_advice_feed_days(r, a, &p, &read, &e) : gp_advice_feed(r, a, &p, &e);
    const gp_advice_item *items = NULL;
    if (!rc) rc = gp_advice_finish(a, &items, &n, NULL, &e);
    gp_advice_free(a);
  } else {
    gp_store_job_filter f = {.from = from, .to = to + 1};
    rc = gp_store_reader_node_intervals(r, from, to, count_node, &read, &e);
    if (!rc) rc = gp_store_reader_intervals(r, from, to, NULL, count_iv, &read, &e);
    if (!rc) rc = gp_store_reader_jobs(r, &f, 0, 0, INT_MAX, count_job, &read, &e);
  }
  gp_store_reader_close(r);
  if (rc) return fail("advice", &e), -1;
  *ret_read = read;
  *ret_items = n;
  return run_clock_stop(clk, ret_cpu_ms);
}

static int time_store(const char *path) {
  gp_store *st = NULL;
  gp_prices *prices = NULL;
  if (ledger_year_open(path, prices_yaml, &st, &prices)) return 1;
  for (int pi = 0; pi < 2; pi++)
    for (int c = 0; c < 3; c++) {
      bool engine = c > 0, days = c == 2;
      double best = -1, best_cpu = -1;
      long n = 0;
      int items = 0;
      for (int k = 0; k < 3; k++) {
        double cpu = 0;
        double ms = run(st, year_periods[pi].from, year_periods[pi].to, prices, engine, days, &n, &items,
                        &cpu);
        if (ms < 0) return 1;
        keep_best(ms, cpu, &best, &best_cpu);
      }
      if (days)
        printf("%-5s advice from roll-ups    %8.1f ms wall %8.1f ms CPU  (%d items, %ld rows read)\n",
               year_periods[pi].name, best, best_cpu, items, n);
      else if (engine)
        printf("%-5s advice (reads + engine) %8.1f ms wall %8.1f ms CPU  (%d items)\n",
               year_periods[pi].name, best, best_cpu, items);
      else
        printf("%-5s store reads only        %8.1f ms wall %8.1f ms CPU  (%ld rows read)\n",
               year_periods[pi].name, best, best_cpu, n);
    }
  gp_prices_free(prices);
  gp_store_close(st);
  return 0;
}

int main(int argc, char **argv) {
  bench_name = "bench_advice_year";
  return ledger_year_main(argc, argv, put_doc, time_store);
}
