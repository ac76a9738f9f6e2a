/* SPDX-License-Identifier: Apache-2.0 */
/* The ledger's daily roll-ups (docs/accounting.md, "Roll-ups"), on whichever backend the
 * test runs on (SQLite; PostgreSQL as store_rollup_test_pg): over random, seeded histories
 * written through the store as a server writes them (node states coming and going, jobs of
 * whole GPUs and fractions across midnights and node states, some still running), the report
 * made from the roll-ups (gp_report_feed_days) has the rows of the report made from the raw
 * intervals (gp_report_feed) to the cent, and both keep the conservation rule (Σ rows = the
 * fleet's cost, no anomaly). A store from before the roll-ups, upgraded, builds them from
 * its closed intervals and loads the same jobs and the same reports. Advice from the
 * roll-ups (gp_advice_feed_days) gives the raw advice's items and figures. A user's read
 * returns that user's rows only. A failure prints the seed. */
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>

#include "ledger/advice.h"
#include "ledger/report.h"
#include "server/server.h"
#include "store/store.h"
#include "store_util.h"
#include "test.h"
#include "util/calendar.h"
#include "util/doc.h"
#include "util/mem.h"

#define H 3600
#define DAY 86400
#define T2026 INT64_C(1767225600)

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
static const char *const caps[] = {"on-demand", "reserved", "spot", "on-prem"};
static const char *const queues[] = {"research", "prod", "research/vision", "batch"};
static const char *const users[] = {"ann", "bob", "cy", "dee", "eve"};
static const char *const states[] = {"up", "drained", "down"};

static void date_of(int64_t day, char out[16]) {
  int64_t y;
  int m, d;
  gp_civil_from_days(day, &y, &m, &d);
  snprintf(out, 16, "%04d-%02d-%02d", (int)y, m, d);
}

/* A random catalogue: prices, commitments and energy prices changing at midnights. */
static gp_prices *random_prices(int64_t day0, int64_t day1) {
  char *text = gp_xmalloc(16384), date[16], d2[16];
  size_t n = 0, cap = 16384;
#define PUT(...) n += (size_t)snprintf(text + n, cap - n, __VA_ARGS__)
  PUT("prices:\n  currency: USD\n  gpu_hour:\n");
  for (int m = 0; m < 4; m++)
    for (int c = 0; c < 4; c++) {
      if (chance(0.9)) PUT("    - {model: %s, capacity: %s, price: %.2f}\n", models[m], caps[c],
                           (double)rint_(50, 900) / 100);
      int64_t day = rint_(day0, day1);
      for (int k = (int)rint_(0, 2); k > 0; k--, day += rint_(1, 10)) {
        date_of(day, date);
        PUT("    - {model: %s, capacity: %s, price: %.3f, from: %s}\n", models[m], caps[c],
            (double)rint_(50, 9000) / 1000, date);
      }
    }
  PUT("  commitments:\n");
  for (int m = 0; m < 4; m++)
    if (chance(0.5)) {
      int64_t d = rint_(day0 - 3, day1);
      date_of(d, date);
      date_of(d + rint_(1, 20), d2);
      PUT("    - {model: %s, gpus: %d, price: %.2f, from: %s, to: %s}\n", models[m],
          (int)rint_(1, 24), (double)rint_(100, 600) / 100, date, d2);
    }
  PUT("  energy:\n    - {price_per_kwh: 0.1}\n");
  if (chance(0.5)) {
    date_of(rint_(day0, day1), date);
    PUT("    - {price_per_kwh: 0.2, from: %s}\n", date);
  }
#undef PUT
  REQUIRE(n < cap);
  gp_doc *d = NULL;
  gp_prices *p = NULL;
  gp_err err = {0};
  REQUIRE(gp_doc_load_string("random.yaml", text, n, &d, &err) == 0);
  REQUIRE(gp_prices_read(d, gp_doc_get(d->root, "prices"), "prices", &p, &err) == 0);
  gp_doc_free(d);
  free(text);
  return p;
}

/* The job's ended document, as advice reads it (a run: request, checkpoint, use). */
static void put_ended(gp_store *st, int64_t job, const gp_store_interval *iv, int64_t end) {
  char doc[512];
  snprintf(doc, sizeof doc,
           "{\"id\":%lld,\"name\":\"train-%d\",\"tasks\":1,\"gpus\":1,\"requeue\":%s,"
           "\"last_checkpoint_at\":%lld,\"submitted_at\":%lld,\"started_at\":%lld,"
           "\"ended_at\":%lld,\"usage\":{\"peak_mem_mib\":%d,\"avg_sm_util_pct\":%d}}",
           (long long)job, (int)rint_(0, 3), chance(0.5) ? "true" : "false",
           (long long)(iv->start + 60), (long long)(iv->start - rint_(0, 3 * H)),
           (long long)iv->start, (long long)end, (int)rint_(1000, 60000), (int)rint_(5, 90));
  gp_store_job j = {job, "completed", iv->queue, iv->user, iv->start, doc, NULL};
  gp_err e = {0};
  REQUIRE(gp_store_put_job(st, &j, &e) == 0);
}

/* Writes a random history of [from - 2 days, to + 1 day) as a server would: node state
 * intervals one after another (with gaps while a node is gone), then jobs of share pieces
 * of its GPUs, each opened, given its use and closed, or left open when it runs past now. */
static void write_history(gp_store *st, int64_t from, int64_t to, int64_t now) {
  gp_err e = {0};
  REQUIRE(gp_store_begin(st, &e) == 0);
  int64_t job = 1;
  char node[16], uuid[32];
  for (int i = 0, nn = (int)rint_(1, 5); i < nn; i++) {
    snprintf(node, sizeof node, "n%d", i);
    const char *model = models[rint_(0, 3)], *cap = caps[rint_(0, 3)];
    int gpus = (int)rint_(1, 4);
    for (int64_t t = from - rint_(-2 * DAY, 2 * DAY); t < to + DAY && t < now;) {
      int64_t run0 = t;
      for (int k = (int)rint_(1, 3); k > 0 && t < now; k--) {
        gp_store_node_interval ni = {.node = node, .model = model, .capacity = cap,
                                     .state = chance(0.7) ? "up" : states[rint_(1, 2)],
                                     .gpus = gpus, .start = t};
        REQUIRE(gp_store_open_node_interval(st, &ni, &e) == 0);
        t += rint_(H, 6 * DAY);
      }
      int64_t run1 = t < now ? t : now;
      if (t < now) REQUIRE(gp_store_close_node_interval(st, node, t, &e) == 0);
      /* Jobs on each GPU over [run0, run1), shares side by side never over one GPU. */
      for (int g = 0; g < gpus; g++) {
        snprintf(uuid, sizeof uuid, "GPU-%s-%d", node, g);
        for (int64_t a = run0 + rint_(0, 4 * H); a < run1;) {
          int64_t end = a + rint_(60, 3 * DAY);
          bool open = end >= run1 && run1 == now && chance(0.7);
          if (end > run1) end = run1;
          int pieces = (int)rint_(1, 3);
          for (int p = 0; p < pieces; p++, job++) {
            gp_store_interval iv = {.job_id = job, .attempt = 1, .user = users[rint_(0, 4)],
                                    .queue = queues[rint_(0, 3)], .node = node,
                                    .gpu_uuid = uuid, .model = model, .capacity = cap,
                                    .share = 1.0 / pieces, .start = a + rint_(0, H)};
            if (iv.start >= end) continue;
            REQUIRE(gp_store_open_interval(st, &iv, &e) == 0);
            double len = (double)(end - iv.start);
            REQUIRE(gp_store_set_interval_use(st, job, node, chance(0.2) ? -1 : len * 0.6 / pieces,
                                              chance(0.3) ? -1 : len * 300 / pieces, &e) == 0);
            if (!open) {
              REQUIRE(gp_store_close_intervals(st, job, end, &e) == 0);
              put_ended(st, job, &iv, end);
            }
          }
          a = end + (chance(0.5) ? rint_(0, 6 * H) : 0);
        }
      }
      if (chance(0.5)) t += rint_(1, DAY); /* gone for a while */
    }
  }
  REQUIRE(gp_store_commit(st, &e) == 0);
}

typedef struct report {
  gp_ledger_report *lr;
  const gp_ledger_row *rows;
  int n;
  long read;
} report;

static report make(gp_store *st, const gp_ledger_params *p, int64_t now, const char *user,
                   bool days) {
  gp_store_reader *r = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_reader_open(st, &r, &e) == 0);
  report rep = {.lr = gp_ledger_report_new(p)};
  int rc = days ? gp_report_feed_days(r, rep.lr, p->from, p->to, now, user, !user, &rep.read, &e)
                : gp_report_feed(r, rep.lr, p->from, p->to, now, user, !user, 0, &rep.read, &e);
  if (rc) fprintf(stderr, "feed: %s\n", e.message);
  REQUIRE(rc == 0);
  gp_store_reader_close(r);
  REQUIRE(gp_ledger_report_finish(rep.lr, &rep.rows, &rep.n, &e) == 0);
  return rep;
}

static bool same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static bool same_key(const gp_ledger_row *a, const gp_ledger_row *b) {
  return a->kind == b->kind && a->period_start == b->period_start && same_str(a->queue, b->queue) &&
         same_str(a->user, b->user) && same_str(a->model, b->model) &&
         same_str(a->capacity, b->capacity) && same_str(a->node, b->node) && a->job == b->job;
}

static bool near(double a, double b, double eps) { return fabs(a - b) <= eps * (1 + fabs(a)); }

/* Every row of `a` has its figures in `b` (a row missing there counts as zeros). */
static int rows_in(const report *a, const report *b, const char *what) {
  static const gp_ledger_row zero;
  int bad = 0;
  for (int i = 0; i < a->n; i++) {
    const gp_ledger_row *x = &a->rows[i], *y = &zero;
    for (int j = 0; j < b->n; j++)
      if (same_key(x, &b->rows[j])) y = &b->rows[j];
    if (!near(x->gpu_s, y->gpu_s, 1e-9) || fabs(x->cost - y->cost) > 0.005 ||
        !near(x->used_gpu_s, y->used_gpu_s, 1e-9) || !near(x->known_gpu_s, y->known_gpu_s, 1e-9) ||
        !near(x->energy_j, y->energy_j, 1e-9) || fabs(x->idle_share_cost - y->idle_share_cost) > 0.005 ||
        (y != &zero && (x->cost_unknown != y->cost_unknown || x->energy_known != y->energy_known))) {
      fprintf(stderr, "%s: row kind %d at %lld %s/%s/%s/%s: gpu_s %.6f vs %.6f, cost %.6f vs %.6f, "
              "used %.6f vs %.6f, energy %.3f vs %.3f, idle share %.6f vs %.6f\n", what,
              x->kind, (long long)x->period_start, x->queue ? x->queue : "-",
              x->user ? x->user : "-", x->model ? x->model : "-", x->capacity ? x->capacity : "-",
              x->gpu_s, y->gpu_s, x->cost, y->cost, x->used_gpu_s, y->used_gpu_s, x->energy_j,
              y->energy_j, x->idle_share_cost, y->idle_share_cost);
      bad++;
    }
  }
  return bad;
}

static double sum_cost(const report *r) {
  double c = 0;
  for (int i = 0; i < r->n; i++) c += r->rows[i].cost;
  return c;
}

/* Raw and roll-up reports of random params over [from, to) agree and add up. */
static int compare(gp_store *st, const gp_prices *prices, int64_t from, int64_t to, int64_t now,
                   const char *user, uint64_t seed) {
  static const char *const dq[] = {"research", "prod", "batch"};
  static const double dg[] = {8, 4, 0};
  gp_ledger_params p = {.from = from, .to = to, .group = (unsigned)rint_(0, 15),
                        .step = (gp_ledger_step)rint_(0, 3), .prices = prices,
                        .share_idle = user ? GP_LSI_NONE : (gp_ledger_share_idle)rint_(0, 2),
                        .n_deserved = 3, .deserved_queue = dq, .deserved_gpus = dg};
  report raw = make(st, &p, now, user, false), days = make(st, &p, now, user, true);
  int bad = rows_in(&raw, &days, "raw vs days") + rows_in(&days, &raw, "days vs raw");
  if (!user && fabs(sum_cost(&days) - gp_ledger_report_fleet_cost(days.lr)) > 0.005) bad++;
  if (!user && fabs(sum_cost(&raw) - gp_ledger_report_fleet_cost(raw.lr)) > 0.005) bad++;
  if (fabs(gp_ledger_report_fleet_cost(raw.lr) - gp_ledger_report_fleet_cost(days.lr)) > 0.005) bad++;
  /* A user's report reads no node intervals: its pieces cover none (anomalies, both ways). */
  if (!user && (gp_ledger_report_anomalies(raw.lr) || gp_ledger_report_anomalies(days.lr))) bad++;
  if (bad)
    fprintf(stderr, "seed %llu: group %u step %d share_idle %d user %s: %d rows raw, %d days; "
            "fleet %.4f vs %.4f, anomalies %lld / %lld\n", (unsigned long long)seed, p.group,
            p.step, p.share_idle, user ? user : "-", raw.n, days.n,
            gp_ledger_report_fleet_cost(raw.lr), gp_ledger_report_fleet_cost(days.lr),
            (long long)gp_ledger_report_anomalies(raw.lr), (long long)gp_ledger_report_anomalies(days.lr));
  gp_ledger_report_free(raw.lr);
  gp_ledger_report_free(days.lr);
  return bad;
}

static const gp_advice_item *advise(gp_store *st, const gp_advice_params *p, bool days,
                                    gp_advice **ret, int *n) {
  gp_store_reader *r = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_reader_open(st, &r, &e) == 0);
  *ret = gp_advice_new(p);
  int rc = days ? gp_advice_feed_days(r, *ret, p, NULL, &e) : gp_advice_feed(r, *ret, p, &e);
  if (rc) fprintf(stderr, "advice feed: %s\n", e.message);
  REQUIRE(rc == 0);
  gp_store_reader_close(r);
  const gp_advice_item *items = NULL;
  REQUIRE(gp_advice_finish(*ret, &items, n, NULL, &e) == 0);
  return items;
}

static bool same_item(const gp_advice_item *a, const gp_advice_item *b) {
  return a->kind == b->kind && same_str(a->queue, b->queue) && same_str(a->user, b->user) &&
         same_str(a->name, b->name) && a->job == b->job;
}

/* Advice from the roll-ups gives the raw advice's items, with the same figures. */
static int compare_advice(gp_store *st, const gp_prices *prices, int64_t from, int64_t to,
                          int64_t now, const char *user, uint64_t seed) {
  static const gp_advice_model fleet[] = {{"A100-80GB", 81920, true, false},
                                          {"H100-80GB", 81920, true, true},
                                          {"H200-141GB", 144384, false, true},
                                          {"B200", 184320, false, false}};
  static const gp_advice_queue qs[] = {{"research", 4}, {"prod", 2}};
  gp_advice_params p = {.from = from, .to = to, .now = now, .headroom = GP_ADVICE_HEADROOM,
                        .checkpoint_s = 600, .prices = prices, .user = user, .fleet = !user,
                        .n_models = 4, .models = fleet, .n_queues = 2, .queues = qs};
  gp_advice *ra, *da;
  int nr = 0, nd = 0, bad = 0;
  const gp_advice_item *raw = advise(st, &p, false, &ra, &nr), *days = advise(st, &p, true, &da, &nd);
  if (nr != nd) bad++;
  for (int i = 0; i < nr; i++) {
    const gp_advice_item *x = &raw[i], *y = NULL;
    /* Items of one kind and subject may differ by model: the message tells them apart. */
    for (int k = 0; k < nd && !y; k++)
      if (same_item(x, &days[k]) && !strcmp(x->message, days[k].message)) y = &days[k];
    for (int k = 0; k < nd && !y; k++)
      if (same_item(x, &days[k])) y = &days[k];
    bool ok = y && near(x->saving_gpu_h, y->saving_gpu_h, 1e-9) &&
              fabs(x->saving_cost - y->saving_cost) <= 0.005 && x->cost_known == y->cost_known &&
              x->n_evidence == y->n_evidence;
    for (int k = 0; ok && k < x->n_evidence; k++)
      ok = !strcmp(x->evidence[k].key, y->evidence[k].key) &&
           near(x->evidence[k].value, y->evidence[k].value, 1e-6);
    if (!ok) {
      fprintf(stderr, "seed %llu: advice %s %s/%s/%s job %lld: %s | %s\n", (unsigned long long)seed,
              gp_advice_kind_name(x->kind), x->queue ? x->queue : "-", x->user ? x->user : "-",
              x->name ? x->name : "-", (long long)x->job, x->message, y ? y->message : "(none)");
      bad++;
    }
  }
  gp_advice_free(ra);
  gp_advice_free(da);
  return bad;
}

static gp_store *fresh_store(void) {
  remove_dir();
  gp_store *st = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&st, &e) == 0);
  return st;
}

/* One history; the period starts and ends inside days, as a report's usually do. */
static int check_seed(uint64_t seed, gp_store *st, int64_t *ret_from, int64_t *ret_to,
                      int64_t *ret_now, gp_prices **ret_prices) {
  rng_state = seed;
  int64_t from = T2026 + rint_(0, 60) * DAY + rint_(0, DAY - 1);
  int64_t to = from + rint_(H, 20 * DAY), now = to + rint_(-DAY, DAY);
  gp_prices *prices = random_prices(from / DAY - 3, to / DAY + 3);
  write_history(st, from, to, now);
  int bad = 0;
  for (int k = 0; k < 3; k++) bad += compare(st, prices, from, to, now, NULL, seed);
  bad += compare(st, prices, from, to, now, users[rint_(0, 4)], seed);
  bad += compare_advice(st, prices, from, to, now, NULL, seed);
  bad += compare_advice(st, prices, from, to, now, users[rint_(0, 4)], seed);
  *ret_from = from, *ret_to = to, *ret_now = now, *ret_prices = prices;
  return bad;
}

static void rollups_match_raw_intervals(void) {
  int failed = 0, n = store_on_pg() ? 8 : 40;
  for (uint64_t seed = 1; seed <= (uint64_t)n && failed < 3; seed++) {
    gp_store *st = fresh_store();
    int64_t from, to, now;
    gp_prices *p = NULL;
    failed += check_seed(seed, st, &from, &to, &now, &p) != 0;
    gp_prices_free(p);
    gp_store_close(st);
  }
  remove_dir();
  CHECK_EQ_INT(0, failed);
}

/* Takes the store back to the schema before the roll-ups (version 1: no roll-up tables). */
static void downgrade(void) {
  if (store_on_pg()) {
    PGconn *c = pg_connect(store_target());
    pg_must(c, "DROP TABLE ledger_day; DROP TABLE ledger_alloc_day; DROP TABLE ledger_held_day;"
               "UPDATE schema_version SET version = 1");
    PQfinish(c);
    return;
  }
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open(db_path(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "DROP TABLE ledger_day; DROP TABLE ledger_alloc_day;"
                           "DROP TABLE ledger_held_day;"
                           "PRAGMA user_version = 1", NULL, NULL, NULL) == SQLITE_OK);
  sqlite3_close(db);
}

static int count_job(void *ctx, const gp_store_job *row) {
  (void)row;
  (*(int *)ctx)++;
  return 0;
}

typedef struct user_rows { const char *user; int mine, others; } user_rows;

static int see_day(void *ctx, const gp_store_job_day *d) {
  user_rows *u = ctx;
  if (strcmp(d->user, u->user)) u->others++;
  else u->mine++;
  return 0;
}

static int count_closed(void *ctx, const gp_store_interval *iv) {
  if (iv->end) (*(int *)ctx)++;
  return 0;
}

static void an_upgraded_store_builds_its_rollups(void) {
  int failed = 0, with_closed = 0;
  for (uint64_t seed = 101; seed <= 105; seed++) {
    gp_store *st = fresh_store();
    gp_err e = {0};
    REQUIRE(gp_store_begin(st, &e) == 0);
    for (int64_t id = 1; id <= 3; id++) {
      gp_store_job j = {id, "ended", "prod", "ann", T2026, "{\"name\":\"x\"}", NULL};
      REQUIRE(gp_store_put_job(st, &j, &e) == 0);
    }
    REQUIRE(gp_store_commit(st, &e) == 0);
    int64_t from, to, now;
    gp_prices *p = NULL;
    failed += check_seed(seed, st, &from, &to, &now, &p) != 0;
    int jobs_before = 0;
    gp_store_load_cb count = {.ctx = &jobs_before, .job = count_job};
    REQUIRE(gp_store_load(st, &count, &e) == 0);
    gp_store_close(st);
    downgrade();
    REQUIRE(open_test_store(&st, &e) == 0);   /* the upgrade: roll-ups from the intervals */
    int jobs = 0;
    gp_store_load_cb cb = {.ctx = &jobs, .job = count_job};
    REQUIRE(gp_store_load(st, &cb, &e) == 0);
    CHECK(jobs >= 3);
    CHECK_EQ_INT(jobs_before, jobs);
    rng_state = seed * 7;
    for (int k = 0; k < 3; k++) failed += compare(st, p, from, to, now, NULL, seed) != 0;
    failed += compare(st, p, from, to, now, "bob", seed) != 0;
    failed += compare_advice(st, p, from, to, now, NULL, seed) != 0;
    /* Its roll-ups were made from the closed intervals. */
    gp_store_reader *r = NULL;
    REQUIRE(gp_store_reader_open(st, &r, &e) == 0);
    user_rows all = {.user = ""};
    REQUIRE(gp_store_reader_job_days(r, from - 5 * DAY, to + 5 * DAY, NULL, see_day, &all, &e) == 0);
    int closed = 0;
    REQUIRE(gp_store_reader_intervals(r, from - 5 * DAY, to + 5 * DAY, NULL, count_closed, &closed,
                                      &e) == 0);
    if (closed > 0) {
      CHECK(all.others > 0);
      with_closed++;
    }
    gp_store_reader_close(r);
    gp_prices_free(p);
    gp_store_close(st);
  }
  remove_dir();
  CHECK(with_closed >= 3);
  CHECK_EQ_INT(0, failed);
}

static void a_users_read_holds_only_their_rows(void) {
  gp_store *st = fresh_store();
  rng_state = 7;
  write_history(st, T2026, T2026 + 15 * DAY, T2026 + 16 * DAY);
  gp_store_reader *r = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_reader_open(st, &r, &e) == 0);
  int total = 0;
  for (int i = 0; i < 5; i++) {
    user_rows u = {.user = users[i]};
    REQUIRE(gp_store_reader_job_days(r, T2026 - 5 * DAY, T2026 + 30 * DAY, users[i], see_day,
                                     &u, &e) == 0);
    CHECK_EQ_INT(0, u.others);
    total += u.mine;
  }
  user_rows all = {.user = ""};
  REQUIRE(gp_store_reader_job_days(r, T2026 - 5 * DAY, T2026 + 30 * DAY, NULL, see_day, &all,
                                   &e) == 0);
  CHECK(total > 0);
  CHECK_EQ_INT(all.others, total);   /* every row is some user's, read once */
  gp_store_reader_close(r);
  gp_store_close(st);
  remove_dir();
}

GP_TESTS(rollups_match_raw_intervals, an_upgraded_store_builds_its_rollups,
         a_users_read_holds_only_their_rows)
