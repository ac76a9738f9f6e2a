/* SPDX-License-Identifier: Apache-2.0 */
/* A year of ledger history and the reports over it (issue 18's figure).
 *
 *   bench_report_year write DB [INTERVALS]   a fresh SQLite store at DB with INTERVALS job
 *                                            intervals (default 1,000,000) over 2026
 *   bench_report_year time DB                times the reports on that store
 *
 * `write` makes a realistic fleet through the store's own write operations (the schema is
 * the store's business): 2,000 nodes of 8 GPUs, 4 models and 4 capacity types, each up all
 * year with a few drained days; 50 queues and 500 users; jobs of 1, 2, 4 or 8 GPUs (one
 * interval per GPU) lasting minutes to a day, with use measured on most. Deterministic (a
 * fixed seed), and in start order, as a server writes them. `time` runs, for a month (March) and for the year, by queue and by user: the
 * SQLite scan alone (a callback that does nothing), then scan + engine (the cost report of
 * GET /v1/reports, with a price catalogue), each the best of 3 in wall and in CPU time (the
 * report's thread), one line per case; then the same from the daily roll-ups (days only:
 * the reads alone; days + engine: the report as GET /v1/reports makes it).
 * bench/report_year.sh adds the same reports through the HTTP API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/report.h"
#include "server/server.h"
#include "store/store.h"
#include "util/doc.h"

#include "ledger_year.h"

static const char prices_yaml[] =
    "prices:\n"
    "  currency: USD\n"
    "  gpu_hour:\n"
    "    - {model: H100-80GB, capacity: on-demand, price: 6.88, from: 2026-01-01}\n"
    "    - {model: H100-80GB, capacity: on-demand, price: 6.20, from: 2026-07-01}\n"
    "    - {model: \"*\", capacity: on-demand, price: 4.10}\n"
    "    - {model: \"*\", capacity: spot, price: 2.41}\n"
    "    - {model: \"*\", capacity: reserved, price: 4.10}\n"
    "    - {model: \"*\", capacity: on-prem, price: 1.90}\n"
    "  commitments:\n"
    "    - {model: A100-80GB, gpus: 1000, price: 2.90, from: 2026-01-01, to: 2027-01-01}\n"
    "  energy:\n"
    "    - {price_per_kwh: 0.12, from: 2026-01-01}\n";

/* One run: returns the wall milliseconds (and the CPU ones in *ret_cpu_ms), or < 0 on a
 * failure. `engine`: feed the accumulator. */
static double run(gp_store *st, int64_t from, int64_t to, unsigned group, const gp_prices *prices,
                  bool engine, bool days, long *ret_intervals, int *ret_rows, double *ret_cpu_ms) {
  gp_err e = {0};
  run_clock clk = run_clock_start();
  gp_store_reader *r = NULL;
  if (gp_store_reader_open(st, &r, &e)) return fail("reader", &e), -1;
  gp_ledger_params p = {.from = from, .to = to, .group = group, .prices = prices};
  gp_ledger_report *lr = engine ? gp_ledger_report_new(&p) : NULL;
  long n = 0;
  int rc = days ? gp_report_feed_days(r, lr, from, to, to, NULL, true, &n, &e)
                : gp_report_feed(r, lr, from, to, to, NULL, true, 0, &n, &e);
  gp_store_reader_close(r);
  const gp_ledger_row *rows = NULL;
  int n_rows = 0;
  if (!rc && lr) rc = gp_ledger_report_finish(lr, &rows, &n_rows, &e);
  gp_ledger_report_free(lr);
  if (rc) return fail("scan", &e), -1;
  *ret_intervals = n;
  *ret_rows = n_rows;
  return run_clock_stop(clk, ret_cpu_ms);
}

static int time_store(const char *path) {
  gp_store *st = NULL;
  gp_prices *prices = NULL;
  double t0 = clock_ms(CLOCK_MONOTONIC);
  if (ledger_year_open(path, prices_yaml, &st, &prices)) return 1;
  /* A store written by an older gpool is upgraded here (its roll-ups built): say so. */
  printf("opened the store in %.1f ms\n", clock_ms(CLOCK_MONOTONIC) - t0);
  static const struct {
    const char *name;
    unsigned group;
  } groups[] = {{"queue", GP_LG_QUEUE}, {"user", GP_LG_USER}};
  for (int pi = 0; pi < 2; pi++)
    for (int gi = 0; gi < 2; gi++)
      for (int c = 0; c < 4; c++) {
        bool engine = c & 1, days = c >= 2;
        static const char *const names[] = {"scan only", "scan + engine", "days only",
                                             "days + engine"};
        double best = -1, best_cpu = -1;
        long n = 0;
        int rows = 0;
        for (int k = 0; k < 3; k++) {
          double cpu = 0;
          double ms = run(st, year_periods[pi].from, year_periods[pi].to, groups[gi].group, prices,
                          engine, days, &n, &rows, &cpu);
          if (ms < 0) return 1;
          keep_best(ms, cpu, &best, &best_cpu);
        }
        printf("%-5s by %-5s %-13s %8.1f ms wall %8.1f ms CPU  (%ld intervals read, %d rows)\n",
               year_periods[pi].name, groups[gi].name, names[c], best,
               best_cpu, n, rows);
      }
  gp_prices_free(prices);
  gp_store_close(st);
  return 0;
}

int main(int argc, char **argv) {
  bench_name = "bench_report_year";
  return ledger_year_main(argc, argv, NULL, time_store);
}
