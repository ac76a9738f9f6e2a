/* SPDX-License-Identifier: Apache-2.0 */
/* The year of ledger history that bench_report_year and bench_advice_year measure, made in
 * one place so both figures stand on the same store: 2,000 nodes of 8 GPUs, 4 models and 4
 * capacity types, each up all year but for two drained days; 50 queues and 500 users; jobs
 * of 1, 2, 4 or 8 GPUs (one interval per GPU) lasting minutes to a day, with use measured on
 * most. Written through the store's own operations (the schema is the store's business), in
 * start order as a server writes them, from a fixed seed. A bench may add to each job (the
 * advice bench stores its ended document) through `each_job`. The ranges timed, the best of
 * the tries and the command line are the same for both too. Header-only: each bench is one
 * program. */
#ifndef GP_BENCH_LEDGER_YEAR_H
#define GP_BENCH_LEDGER_YEAR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <string.h>

#include "ledger/prices.h"
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
static const char *bench_name = "bench"; /* for messages; each bench sets its own */

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
  fprintf(stderr, "%s: %s: %s\n", bench_name, what, e->message);
  return 1;
}

/* One job of the history, as written. */
typedef struct year_job {
  int64_t id, start, end;
  int user_no, gpus;
  const char *user, *queue;
  bool measured;
} year_job;

/* Writes the year to a fresh store at `path`: `intervals` job intervals; each_job (may be
 * NULL) is called inside the transaction after each job's intervals close, and returns 0
 * or fails the write. Prints what it wrote. Returns 0, or 1 after saying why. */
static int ledger_year_write(const char *path, long intervals,
                             int (*each_job)(gp_store *st, const year_job *j, gp_err *e)) {
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
  long written = 0, jobs = 0;
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
    bool measured = next_rand() % 10 != 0; /* most jobs measured: 10-90% busy, ~300 W a GPU */
    if (measured) {
      double busy = 0.1 + (double)(next_rand() % 80) / 100;
      if (gp_store_set_interval_use(st, job, node, busy * (double)(len * gpus), 300.0 * (double)(len * gpus), &e))
        return fail("use", &e);
    }
    if (gp_store_close_intervals(st, job, start + len, &e)) return fail("close", &e);
    year_job yj = {job, start, start + len, u, gpus, user, queue, measured};
    if (each_job && each_job(st, &yj, &e)) return fail("job", &e);
    written += gpus;
    jobs++;
  }
  if (gp_store_commit(st, &e)) return fail("commit", &e);
  gp_store_close(st);
  printf("wrote %ld intervals of %ld jobs on %d nodes to %s\n", written, jobs, NODES, path);
  return 0;
}

/* Opens the store at `path` for timing and reads the bench's price catalogue `prices_yaml`
 * (a `prices:` map). Returns 0, or 1 after saying why. */
static int ledger_year_open(const char *path, const char *prices_yaml, gp_store **ret_st,
                            gp_prices **ret_prices) {
  gp_err e = {0};
  if (gp_store_sqlite_open(path, ret_st, &e)) return fail(path, &e);
  gp_doc *doc = NULL;
  int rc = gp_doc_load_string("prices", prices_yaml, strlen(prices_yaml), &doc, &e);
  if (!rc) rc = gp_prices_read(doc, gp_doc_get(doc->root, "prices"), "prices", ret_prices, &e);
  gp_doc_free(doc);
  if (rc) {
    gp_store_close(*ret_st);
    return fail("prices", &e);
  }
  return 0;
}

/* The ranges both benches time: March, and the whole year. */
static const struct {
  const char *name;
  int64_t from, to;
} year_periods[2] = {{"month", MAR1, APR1}, {"year", JAN1, JAN1 + YEAR_S}};

/* A timed run's clocks: the wall's and this thread's CPU time at its start. */
typedef struct run_clock {
  double wall, cpu;
} run_clock;
static run_clock run_clock_start(void) {
  return (run_clock){clock_ms(CLOCK_MONOTONIC), clock_ms(CLOCK_THREAD_CPUTIME_ID)};
}
/* The wall milliseconds since `c` started (the CPU ones in *cpu_ms). */
static double run_clock_stop(run_clock c, double *cpu_ms) {
  *cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c.cpu;
  return clock_ms(CLOCK_MONOTONIC) - c.wall;
}

/* Keeps the best (lowest) wall and CPU times of a bench's tries (-1: none yet). */
static void keep_best(double ms, double cpu, double *best, double *best_cpu) {
  if (*best < 0 || ms < *best) *best = ms;
  if (*best_cpu < 0 || cpu < *best_cpu) *best_cpu = cpu;
}

/* The command line of both benches: `write DB [INTERVALS]` (the year, with each_job as
 * ledger_year_write takes it) or `time DB` (time_store). */
static int ledger_year_main(int argc, char **argv,
                            int (*each_job)(gp_store *st, const year_job *j, gp_err *e),
                            int (*time_store)(const char *path)) {
  if (argc >= 3 && strcmp(argv[1], "write") == 0)
    return ledger_year_write(argv[2], argc > 3 ? atol(argv[3]) : 1000000, each_job);
  if (argc == 3 && strcmp(argv[1], "time") == 0) return time_store(argv[2]);
  fprintf(stderr, "usage: %s write DB [INTERVALS] | time DB\n", bench_name);
  return 2;
}

#endif
