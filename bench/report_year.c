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
 * report's thread), one line per case.
 * bench/report_year.sh adds the same reports through the HTTP API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ledger/report.h"
#include "server/server.h"
#include "store/store.h"
#include "util/doc.h"

#define JAN1 INT64_C(1767225600) /* 2026-01-01T00:00:00Z */
#define YEAR_S (INT64_C(365) * 86400)
#define MAR1 (JAN1 + INT64_C(59) * 86400)
#define APR1 (MAR1 + INT64_C(31) * 86400)
#define NODES 2000
#define GPUS 8

static const char *const models[4] = {"H100-80GB", "A100-80GB", "H200-141GB", "L40S-48GB"};
static const char *const capacities[4] = {"on-demand", "reserved", "spot", "on-prem"};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static double clock_ms(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail(const char *what, const gp_err *e) {
  fprintf(stderr, "bench_report_year: %s: %s\n", what, e->message);
  return 1;
}

static int write_store(const char *path, long intervals) {
  gp_store *st = NULL;
  gp_err e = {0};
  remove(path);
  if (gp_store_sqlite_open(path, &st, &e)) return fail(path, &e);
  if (gp_store_begin(st, &e)) return fail("begin", &e);
  char node[32], user[32], queue[32], uuid[48];
  for (int n = 0; n < NODES; n++) {
    snprintf(node, sizeof node, "node-%04d", n);
    gp_store_node_interval ni = {.node = node, .model = models[n % 4],
                                 .capacity = capacities[(n / 4) % 4], .gpus = GPUS};
    /* Up all year, but for two days drained somewhere in it. */
    int64_t drain = JAN1 + (int64_t)(next_rand() % 360) * 86400;
    const struct { const char *state; int64_t start; } parts[] = {
        {"up", JAN1}, {"drained", drain}, {"up", drain + 2 * 86400}};
    for (int p = 0; p < 3; p++) {
      ni.state = parts[p].state;
      ni.start = parts[p].start;
      if (gp_store_open_node_interval(st, &ni, &e)) return fail("node interval", &e);
    }
    if (gp_store_close_node_interval(st, node, JAN1 + YEAR_S, &e)) return fail("node interval", &e);
  }
  long written = 0;
  for (int64_t job = 1; written < intervals; job++) {
    int u = (int)(next_rand() % 500), n = (int)(next_rand() % NODES);
    int gpus = 1 << (next_rand() % 4);
    if (gpus > intervals - written) gpus = (int)(intervals - written);
    snprintf(user, sizeof user, "user%03d", u);
    snprintf(queue, sizeof queue, "org/team%02d", u % 50);
    snprintf(node, sizeof node, "node-%04d", n);
    /* Jobs come in start order, as a server opens each interval when its job starts: the
     * table's row order follows time, as it does in a real store. */
    int64_t start = JAN1 + (int64_t)((double)written / (double)intervals * (double)(YEAR_S - 86400)) +
                    (int64_t)(next_rand() % 60);
    int64_t len = 300 + (int64_t)(next_rand() % 86400);
    for (int g = 0; g < gpus; g++) {
      snprintf(uuid, sizeof uuid, "GPU-%s-%d", node, g);
      gp_store_interval iv = {.job_id = job, .attempt = 1, .task = 0, .user = user, .queue = queue,
                              .node = node, .gpu_uuid = uuid, .model = models[n % 4],
                              .capacity = capacities[(n / 4) % 4], .share = 1.0, .start = start};
      if (gp_store_open_interval(st, &iv, &e)) return fail("interval", &e);
    }
    if (next_rand() % 10 != 0) { /* most jobs measured: 10-90% busy, ~300 W a GPU */
      double busy = 0.1 + (double)(next_rand() % 80) / 100;
      if (gp_store_set_interval_use(st, job, node, busy * (double)(len * gpus), 300.0 * (double)(len * gpus), &e))
        return fail("use", &e);
    }
    if (gp_store_close_intervals(st, job, start + len, &e)) return fail("close", &e);
    written += gpus;
  }
  if (gp_store_commit(st, &e)) return fail("commit", &e);
  gp_store_close(st);
  printf("wrote %ld intervals on %d nodes to %s\n", written, NODES, path);
  return 0;
}

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
                  bool engine, long *ret_intervals, int *ret_rows, double *ret_cpu_ms) {
  gp_err e = {0};
  double t0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
  gp_store_reader *r = NULL;
  if (gp_store_reader_open(st, &r, &e)) return fail("reader", &e), -1;
  gp_ledger_params p = {.from = from, .to = to, .group = group, .prices = prices};
  gp_ledger_report *lr = engine ? gp_ledger_report_new(&p) : NULL;
  long n = 0;
  int rc = gp_report_feed(r, lr, from, to, to, NULL, true, &n, &e);
  gp_store_reader_close(r);
  const gp_ledger_row *rows = NULL;
  int n_rows = 0;
  if (!rc && lr) rc = gp_ledger_report_finish(lr, &rows, &n_rows, &e);
  gp_ledger_report_free(lr);
  if (rc) return fail("scan", &e), -1;
  *ret_intervals = n;
  *ret_rows = n_rows;
  *ret_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
  return clock_ms(CLOCK_MONOTONIC) - t0;
}

static int time_store(const char *path) {
  gp_store *st = NULL;
  gp_err e = {0};
  if (gp_store_sqlite_open(path, &st, &e)) return fail(path, &e);
  gp_doc *doc = NULL;
  gp_prices *prices = NULL;
  if (gp_doc_load_string("prices", prices_yaml, strlen(prices_yaml), &doc, &e) ||
      gp_prices_read(doc, gp_doc_get(doc->root, "prices"), "prices", &prices, &e))
    return fail("prices", &e);
  static const struct {
    const char *name;
    int64_t from, to;
  } periods[] = {{"month", MAR1, APR1}, {"year", JAN1, JAN1 + YEAR_S}};
  static const struct {
    const char *name;
    unsigned group;
  } groups[] = {{"queue", GP_LG_QUEUE}, {"user", GP_LG_USER}};
  for (int pi = 0; pi < 2; pi++)
    for (int gi = 0; gi < 2; gi++)
      for (int engine = 0; engine < 2; engine++) {
        double best = -1, best_cpu = -1;
        long n = 0;
        int rows = 0;
        for (int k = 0; k < 3; k++) {
          double cpu = 0;
          double ms = run(st, periods[pi].from, periods[pi].to, groups[gi].group, prices,
                          engine, &n, &rows, &cpu);
          if (ms < 0) return 1;
          if (best < 0 || ms < best) best = ms;
          if (best_cpu < 0 || cpu < best_cpu) best_cpu = cpu;
        }
        printf("%-5s by %-5s %-13s %8.1f ms wall %8.1f ms CPU  (%ld intervals read, %d rows)\n",
               periods[pi].name, groups[gi].name, engine ? "scan + engine" : "scan only", best,
               best_cpu, n, rows);
      }
  gp_prices_free(prices);
  gp_doc_free(doc);
  gp_store_close(st);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "write") == 0)
    return write_store(argv[2], argc > 3 ? atol(argv[3]) : 1000000);
  if (argc == 3 && strcmp(argv[1], "time") == 0) return time_store(argv[2]);
  fprintf(stderr, "usage: bench_report_year write DB [INTERVALS] | time DB\n");
  return 2;
}
