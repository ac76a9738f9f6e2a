/* SPDX-License-Identifier: Apache-2.0 */
/* The conservation property of the ledger (issue 18): over thousands of random, seeded
 * histories — nodes coming and going, drained and down periods, every capacity type,
 * commitments, whole GPUs, fractions, MIG slices and time-slice replicas that never exceed a
 * GPU, requeued jobs, price changes at midnights inside intervals, any step and grouping —
 * Σ job cost + idle + drained/down + unused commitment equals the fleet's cost within half a
 * cent; Σ job GPU-seconds equals the inputs clipped to the period; the fleet's cost matches
 * one worked out here, day by day, straight from gp_prices_rate; and a consistent history
 * shows no anomaly. A failure prints the seed that reproduces it. */
#include "ledger/report.h"

#include "util/calendar.h"
#include <stdarg.h>

#include "test.h"
#include "util/mem.h"

#define H 3600
#define DAY 86400
#define T2026 INT64_C(1767225600)
#define HISTORIES 2000

static uint64_t rng_state;
static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}
static int64_t rint_(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static bool chance(double p) { return (double)(rnd() >> 11) / 9007199254740992.0 < p; }

static const char *const models[] = {"A100-80GB", "H100-80GB", "H200-141GB", "B200"};
static const char *const queues[] = {"research", "prod", "research/vision", "batch"};
static const char *const users[] = {"ann", "bob", "cy", "dee", "eve"};

static void date_of(int64_t day, char out[16]) {
  int64_t y;
  int m, d;
  gp_civil_from_days(day, &y, &m, &d);
  snprintf(out, 16, "%04d-%02d-%02d", (int)y, m, d);
}

typedef struct buf { char *s; size_t n, cap; } buf;
static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if ((size_t)k < b->cap - b->n) {
      b->n += (size_t)k;
      return;
    }
    b->cap = b->cap * 2 + (size_t)k + 64;
    b->s = gp_xrealloc(b->s, b->cap);
  }
}

/* A random catalogue whose changes all fall on midnights between day0 and day1. */
static gp_prices *random_prices(int64_t day0, int64_t day1) {
  buf b = {gp_xmalloc(256), 0, 256};
  char date[16];
  static const char *const caps[] = {"on-demand", "reserved", "spot", "on-prem"};
  put(&b, "prices:\n  currency: USD\n  gpu_hour:\n");
  for (int m = 0; m < 4; m++)
    for (int c = 0; c < 4; c++) {
      if (chance(0.9)) put(&b, "    - {model: %s, capacity: %s, price: %.2f}\n", models[m], caps[c],
                           (double)rint_(50, 900) / 100);
      int64_t day = rint_(day0, day1);
      for (int k = (int)rint_(0, 2); k > 0; k--, day += rint_(1, 10)) {
        date_of(day, date);
        put(&b, "    - {model: %s, capacity: %s, price: %.3f, from: %s}\n", models[m], caps[c],
            (double)rint_(50, 9000) / 1000, date);
      }
    }
  if (chance(0.5)) put(&b, "    - {model: \"*\", capacity: on-prem, price: 1.9}\n");
  put(&b, "  commitments:\n");
  for (int m = 0; m < 4; m++) {
    int64_t d = rint_(day0 - 3, day1);
    for (int k = (int)rint_(0, 2); k > 0; k--) {
      int64_t to = d + rint_(1, 20);
      char d2[16];
      date_of(d, date);
      date_of(to, d2);
      put(&b, "    - {model: %s, gpus: %d, price: %.2f, from: %s, to: %s}\n", models[m],
          (int)rint_(1, 24), (double)rint_(100, 600) / 100, date, d2);
      d = to + rint_(0, 3);
    }
  }
  put(&b, "  energy:\n");
  if (chance(0.7)) put(&b, "    - {price_per_kwh: 0.1}\n");
  if (chance(0.5)) {
    date_of(rint_(day0, day1), date);
    put(&b, "    - {price_per_kwh: 0.2, from: %s}\n", date);
  }
  gp_doc *d = NULL;
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(gp_doc_load_string("random.yaml", b.s, b.n, &d, &err) == 0);
  if (gp_prices_read(d, gp_doc_get(d->root, "prices"), "prices", &p, &err))
    fprintf(stderr, "%s:%d: %s: %s\n%s", err.file, err.line, err.field, err.message, b.s);
  REQUIRE(p);
  gp_doc_free(d);
  free(b.s);
  return p;
}

/* Shares of one GPU held side by side: never more than a whole GPU. */
static int share_pattern(double *s) {
  static const int mig[][4] = {{3, 2, 1, 1}, {4, 3, 0, 0}, {7, 0, 0, 0}, {2, 2, 2, 1}, {1, 1, 1, 0}};
  switch (rint_(0, 4)) {
  case 0: s[0] = 1; return 1;
  case 1: for (int i = 0; i < 4; i++) s[i] = 0.25; return (int)rint_(1, 4);
  case 2: {
    int a = (int)rint_(100, 900);
    s[0] = a / 1000.0;
    s[1] = rint_(1, 1000 - a) / 1000.0;
    return 2;
  }
  case 3: {
    const int *m = mig[rint_(0, 4)];
    int n = 0;
    for (int i = 0; i < 4 && m[i]; i++) s[n++] = m[i] / 7.0;
    return n;
  }
  default: {
    int n = (int)rint_(2, 8);
    for (int i = 0; i < n; i++) s[i] = 1.0 / n;
    return (int)rint_(1, n);
  }
  }
}

typedef struct history {
  gp_ledger_node_iv *nodes;
  size_t n_nodes, cap_nodes;
  gp_ledger_job_iv *jobs;
  size_t n_jobs, cap_jobs;
  char names[8][16];
} history;

static void add_node(history *h, gp_ledger_node_iv iv) {
  gp_xgrow((void **)&h->nodes, &h->cap_nodes, h->n_nodes + 1, sizeof *h->nodes);
  h->nodes[h->n_nodes++] = iv;
}
static void add_job(history *h, gp_ledger_job_iv iv) {
  gp_xgrow((void **)&h->jobs, &h->cap_jobs, h->n_jobs + 1, sizeof *h->jobs);
  h->jobs[h->n_jobs++] = iv;
}

static int64_t next_job, attempts[16];

/* Jobs on each GPU of a node over one presence run [t0, t1). */
static void fill_run(history *h, const char *node, const char *model, gp_capacity cap, int gpus,
                     int64_t t0, int64_t t1) {
  for (int g = 0; g < gpus; g++)
    for (int64_t t = t0 + rint_(0, 4 * H); t < t1;) {
      int64_t d = rint_(60, 3 * DAY), end = t + d < t1 ? t + d : t1;
      double s[8];
      int n = share_pattern(s);
      for (int i = 0; i < n; i++) {
        int64_t a = t + rint_(0, (end - t) / 4), b = end - rint_(0, (end - t) / 4);
        if (b <= a) continue;
        int64_t job = chance(0.3) ? rint_(1, 16) : 100 + next_job++;
        int attempt = job <= 16 ? (int)++attempts[job - 1] : 1; /* requeued jobs run again */
        add_job(h, (gp_ledger_job_iv){job, attempt, queues[rint_(0, 3)], users[rint_(0, 4)],
                                      node, model, cap, s[i], a, b,
                                      chance(0.2) ? -1 : s[i] * (double)(b - a) * 0.7,
                                      chance(0.3) ? -1 : (double)(b - a) * 400 * s[i], NULL});
      }
      t = end + (chance(0.5) ? rint_(0, 6 * H) : 0);
    }
}

static void random_history(history *h, int64_t from, int64_t to) {
  int nn = (int)rint_(1, 5);
  for (int i = 0; i < nn; i++) {
    snprintf(h->names[i], sizeof h->names[i], "n%d", i & 7);
    const char *model = models[rint_(0, 3)];
    gp_capacity cap = (gp_capacity)rint_(0, 3);
    int gpus = (int)rint_(1, 4);
    for (int64_t t = from - rint_(-2 * DAY, 2 * DAY); t < to + DAY;) {
      int64_t run0 = t;
      for (int k = (int)rint_(1, 3); k > 0; k--) {
        int64_t len = rint_(H, 6 * DAY);
        gp_ledger_node_state st = chance(0.7) ? GP_LEDGER_UP : (gp_ledger_node_state)rint_(1, 2);
        add_node(h, (gp_ledger_node_iv){h->names[i], model, cap, gpus, st, t, t + len});
        t += len;
      }
      fill_run(h, h->names[i], model, cap, gpus, run0, t);
      if (chance(0.5)) t += rint_(1, DAY); /* the node is gone for a while */
    }
  }
}

static int64_t clip_len(int64_t a, int64_t b, int64_t from, int64_t to) {
  if (a < from) a = from;
  if (b > to) b = to;
  return b > a ? b - a : 0;
}

/* The fleet's node cost and energy cost worked out day by day from the catalogue (every
 * price change falls on a midnight, so a day piece has one price). */
static double expected_fleet(const history *h, const gp_prices *p, int64_t from, int64_t to) {
  double total = 0;
  for (size_t i = 0; i < h->n_nodes; i++) {
    const gp_ledger_node_iv *n = &h->nodes[i];
    for (int64_t a = n->start > from ? n->start : from, end = n->end < to ? n->end : to; a < end;) {
      int64_t b = gp_day_start(a) + DAY;
      if (b > end) b = end;
      double rate = 0;
      if (gp_prices_rate(p, n->model, n->capacity, a, &rate))
        total += n->gpus * (double)(b - a) * rate / 3600;
      a = b;
    }
  }
  for (size_t i = 0; i < h->n_jobs; i++) {
    const gp_ledger_job_iv *j = &h->jobs[i];
    if (j->capacity != GP_CAP_ON_PREM || j->energy_j < 0) continue;
    for (int64_t a = j->start > from ? j->start : from, end = j->end < to ? j->end : to; a < end;) {
      int64_t b = gp_day_start(a) + DAY;
      if (b > end) b = end;
      double kwh = 0;
      if (gp_prices_energy_rate(p, a, &kwh))
        total += j->energy_j * (double)(b - a) / (double)(j->end - j->start) / 3.6e6 * kwh;
      a = b;
    }
  }
  return total;
}

static int check_one(uint64_t seed) {
  rng_state = seed;
  int64_t from = T2026 + rint_(0, 60) * DAY + rint_(0, DAY - 1);
  int64_t to = from + rint_(H, 20 * DAY);
  gp_prices *p = random_prices(from / DAY - 3, to / DAY + 3);
  history h = {0};
  memset(attempts, 0, sizeof attempts);
  random_history(&h, from, to);
  gp_ledger_params pa = {.from = from, .to = to, .group = (unsigned)rint_(0, 63),
                         .step = (gp_ledger_step)rint_(0, 3),
                         .share_idle = (gp_ledger_share_idle)rint_(0, 2), .prices = p};
  static const char *const dq[] = {"research", "prod", "batch"};
  static const double dg[] = {8, 4, 0};
  pa.n_deserved = 3;
  pa.deserved_queue = dq;
  pa.deserved_gpus = dg;
  gp_ledger_report *r = gp_ledger_report_new(&pa);
  for (size_t i = 0; i < h.n_nodes; i++) gp_ledger_report_add_node(r, &h.nodes[i]);
  double want_gpu_s = 0;
  for (size_t i = 0; i < h.n_jobs; i++) {
    /* Any order: the last first. */
    const gp_ledger_job_iv *j = &h.jobs[h.n_jobs - 1 - i];
    gp_ledger_report_add_job(r, j);
    want_gpu_s += j->share * (double)clip_len(j->start, j->end, from, to);
  }
  const gp_ledger_row *rows = NULL;
  int n = 0;
  gp_err err = {0};
  int bad = 0;
  REQUIRE(gp_ledger_report_finish(r, &rows, &n, &err) == 0);
  double cost = 0, jobs_gpu_s = 0, unused = 0, idle = 0, shared = 0;
  bool any_jobs = false;
  for (int i = 0; i < n; i++) {
    cost += rows[i].cost;
    if (rows[i].kind == GP_LR_JOBS) {
      jobs_gpu_s += rows[i].gpu_s;
      shared += rows[i].idle_share_cost;
      any_jobs |= rows[i].gpu_s > 0;
      if (rows[i].known_gpu_s > rows[i].gpu_s + 1e-6) bad++;
    }
    if (rows[i].kind == GP_LR_IDLE) idle += rows[i].cost;
    if (rows[i].kind == GP_LR_UNUSED_COMMITMENT) unused += rows[i].cost;
    if (rows[i].cost < 0 || rows[i].gpu_s < 0) bad++;
    if (i && rows[i].kind < rows[i - 1].kind) bad++;
  }
  double fleet = gp_ledger_report_fleet_cost(r);
  if (fabs(cost - fleet) > 0.005) bad++;
  if (fabs(fleet - unused - expected_fleet(&h, p, from, to)) > 0.005) bad++;
  if (fabs(jobs_gpu_s - want_gpu_s) > 1e-6 * (want_gpu_s + 1)) bad++;
  if (gp_ledger_report_anomalies(r) != 0) bad++;
  if (pa.share_idle != GP_LSI_NONE && (shared > idle + 0.005 ||
                                       (pa.step == GP_LS_NONE && any_jobs && fabs(shared - idle) > 0.005)))
    bad++;
  if (bad)
    fprintf(stderr, "seed %llu: rows %d cost %.6f fleet %.6f expected %.6f + unused %.6f, "
            "gpu_s %.3f want %.3f, anomalies %lld, idle %.4f shared %.4f\n",
            (unsigned long long)seed, n, cost, fleet, expected_fleet(&h, p, from, to), unused,
            jobs_gpu_s, want_gpu_s, (long long)gp_ledger_report_anomalies(r), idle, shared);
  gp_ledger_report_free(r);
  gp_prices_free(p);
  free(h.nodes);
  free(h.jobs);
  return bad;
}

static void costs_add_up_over_random_histories(void) {
  int failed = 0;
  for (uint64_t seed = 1; seed <= HISTORIES && failed < 5; seed++) failed += check_one(seed) != 0;
  CHECK_EQ_INT(0, failed);
}

GP_TESTS(costs_add_up_over_random_histories)
