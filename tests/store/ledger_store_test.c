/* SPDX-License-Identifier: Apache-2.0 */
/* The store's ledger: intervals opened and closed by job, use figures split by share, node
 * intervals that follow each other, and range reads on a reader that return exactly the
 * intervals overlapping the range, in start order, across a reopen. */
#include <sqlite3.h>
#include <stdlib.h>
#include <time.h>

#include "store/store.h"
#include "store_util.h"
#include "test.h"

static gp_store *open_store(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_open(store_target(), &s, &e) == 0);
  return s;
}

static gp_store_interval iv_of(int64_t job, int attempt, int task, const char *user,
                               const char *node, const char *uuid, double share, int64_t start) {
  gp_store_interval iv = {.job_id = job, .attempt = attempt, .task = task, .user = user,
                          .queue = "team-a", .node = node, .gpu_uuid = uuid,
                          .model = "H100-80GB", .capacity = "on-demand", .share = share,
                          .start = start};
  return iv;
}

/* What a range read returned, in order. */
typedef struct seen {
  int n;
  int64_t job[64], start[64], end[64], id[64];
  double share[64], used[64], energy[64];
  char user[64][16], uuid[64][16], state[64][16], service[64][16];
} seen;

static int see_iv(void *ctx, const gp_store_interval *iv) {
  seen *s = ctx;
  REQUIRE(s->n < 64);
  s->job[s->n] = iv->job_id;
  s->id[s->n] = iv->id;
  s->start[s->n] = iv->start;
  s->end[s->n] = iv->end;
  s->share[s->n] = iv->share;
  s->used[s->n] = iv->used_gpu_s;
  s->energy[s->n] = iv->energy_j;
  snprintf(s->user[s->n], 16, "%s", iv->user);
  snprintf(s->uuid[s->n], 16, "%s", iv->gpu_uuid);
  snprintf(s->service[s->n], 16, "%s", iv->service ? iv->service : "(null)");
  s->n++;
  return 0;
}

static int see_node_iv(void *ctx, const gp_store_node_interval *iv) {
  seen *s = ctx;
  REQUIRE(s->n < 64);
  s->start[s->n] = iv->start;
  s->end[s->n] = iv->end;
  s->job[s->n] = iv->gpus;
  snprintf(s->user[s->n], 16, "%s", iv->node);
  snprintf(s->state[s->n], 16, "%s", iv->state);
  s->n++;
  return 0;
}

static seen read_ivs(gp_store *s, int64_t from, int64_t to, const char *user) {
  seen out;
  memset(&out, 0, sizeof out);
  gp_store_reader *r = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_reader_open(s, &r, &e) == 0);
  CHECK_EQ_INT(0, gp_store_reader_intervals(r, from, to, user, see_iv, &out, &e));
  gp_store_reader_close(r);
  return out;
}

static seen read_node_ivs(gp_store *s, int64_t from, int64_t to) {
  seen out;
  memset(&out, 0, sizeof out);
  gp_store_reader *r = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_reader_open(s, &r, &e) == 0);
  CHECK_EQ_INT(0, gp_store_reader_node_intervals(r, from, to, see_node_iv, &out, &e));
  gp_store_reader_close(r);
  return out;
}

static void write_ivs(gp_store *s, const gp_store_interval *ivs, int n) {
  gp_err e = {0};
  REQUIRE(gp_store_begin(s, &e) == 0);
  for (int i = 0; i < n; i++) REQUIRE(gp_store_open_interval(s, &ivs[i], &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);
}

static void close_job(gp_store *s, int64_t job, int64_t end) {
  gp_err e = {0};
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_close_intervals(s, job, end, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);
}

/* Job 1 holds [100, 200), job 2 [150, open), job 3 [300, 400) with two GPUs. A range read
 * returns those that overlap it, ends exclusive, open ones up to any `to`. */
static void range_reads_return_overlapping_intervals_in_start_order(void) {
  gp_store *s = open_store();
  gp_store_interval ivs[] = {iv_of(1, 1, 0, "ann", "n1", "GPU-a", 1, 100),
                             iv_of(2, 1, 0, "bob", "n1", "GPU-b", 0.25, 150),
                             iv_of(3, 1, 0, "ann", "n2", "GPU-c", 1, 300),
                             iv_of(3, 1, 0, "ann", "n2", "GPU-d", 1, 300)};
  write_ivs(s, ivs, 4);
  close_job(s, 1, 200);
  close_job(s, 3, 400);
  gp_store_close(s);
  s = open_store(); /* what was committed is there after a reopen */

  seen all = read_ivs(s, 0, 1000, NULL);
  REQUIRE(all.n == 4);
  CHECK_EQ_INT(1, all.job[0]);
  CHECK_EQ_INT(200, all.end[0]);
  CHECK_EQ_INT(2, all.job[1]);
  CHECK_EQ_INT(0, all.end[1]); /* open */
  CHECK_NEAR(0.25, all.share[1], 1e-12);
  CHECK_EQ_STR("bob", all.user[1]);
  CHECK_EQ_STR("GPU-b", all.uuid[1]);
  CHECK(all.used[1] < 0 && all.energy[1] < 0); /* never measured: unknown, not 0 */
  CHECK_EQ_INT(3, all.job[2]);
  CHECK_EQ_INT(3, all.job[3]);
  CHECK(all.id[2] < all.id[3]);

  /* [200, 300): job 1 ended at 200 and job 3 starts at 300: only the open job 2. */
  seen mid = read_ivs(s, 200, 300, NULL);
  REQUIRE(mid.n == 1);
  CHECK_EQ_INT(2, mid.job[0]);
  /* [120, 160): job 1 from before the range, job 2 starting inside it, in start order. */
  seen early = read_ivs(s, 120, 160, NULL);
  REQUIRE(early.n == 2);
  CHECK_EQ_INT(1, early.job[0]);
  CHECK_EQ_INT(2, early.job[1]);
  /* Before any start, nothing; an empty range, nothing. */
  CHECK_EQ_INT(0, read_ivs(s, 0, 100, NULL).n);
  CHECK_EQ_INT(0, read_ivs(s, 500, 500, NULL).n);
  /* One user's. */
  seen ann = read_ivs(s, 0, 1000, "ann");
  CHECK_EQ_INT(3, ann.n);
  seen bob = read_ivs(s, 350, 1000, "bob");
  REQUIRE(bob.n == 1);
  CHECK_EQ_INT(2, bob.job[0]);
  gp_store_close(s);
  remove_dir();
}

/* A job's figures on a node are split across its open intervals there by share; an unknown
 * figure keeps the previous one; closed intervals keep their final figures. */
static void use_figures_split_by_share_and_unknown_stays_unknown(void) {
  gp_store *s = open_store();
  gp_store_interval ivs[] = {iv_of(7, 1, 0, "ann", "n1", "GPU-a", 1, 10),
                             iv_of(7, 1, 0, "ann", "n1", "GPU-b", 0.5, 10),
                             iv_of(7, 1, 1, "ann", "n2", "GPU-c", 1, 10)};
  write_ivs(s, ivs, 3);
  gp_err e = {0};
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_set_interval_use(s, 7, "n1", 30, 600, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);
  seen a = read_ivs(s, 0, 100, NULL);
  REQUIRE(a.n == 3);
  CHECK_NEAR(20, a.used[0], 1e-9);
  CHECK_NEAR(10, a.used[1], 1e-9);
  CHECK_NEAR(400, a.energy[0], 1e-9);
  CHECK_NEAR(200, a.energy[1], 1e-9);
  CHECK(a.used[2] < 0 && a.energy[2] < 0); /* n2 reported nothing */

  /* Energy measured, use not (an MPS round): use keeps its figure, energy moves on. */
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_set_interval_use(s, 7, "n1", -1, 900, &e) == 0);
  REQUIRE(gp_store_set_interval_use(s, 7, "n2", -1, 50, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);
  close_job(s, 7, 60);
  /* After the close, a late figure changes nothing. */
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_set_interval_use(s, 7, "n1", 999, 999, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);
  seen b = read_ivs(s, 0, 100, NULL);
  REQUIRE(b.n == 3);
  CHECK_NEAR(20, b.used[0], 1e-9);
  CHECK_NEAR(600, b.energy[0], 1e-9);
  CHECK_NEAR(300, b.energy[1], 1e-9);
  CHECK(b.used[2] < 0);
  CHECK_NEAR(50, b.energy[2], 1e-9);
  CHECK_EQ_INT(60, b.end[0]);
  gp_store_close(s);
  remove_dir();
}

/* Opening a node's interval closes its open one; a range read sees each state in turn. */
static void node_intervals_follow_each_other(void) {
  gp_store *s = open_store();
  gp_err e = {0};
  gp_store_node_interval up = {.node = "n1", .model = "H100-80GB", .capacity = "spot",
                               .gpus = 8, .state = "up", .start = 100};
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_open_node_interval(s, &up, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);
  gp_store_node_interval drained = up;
  drained.state = "drained";
  drained.start = 150;
  up.start = 180;
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_open_node_interval(s, &drained, &e) == 0);
  REQUIRE(gp_store_open_node_interval(s, &up, &e) == 0);
  REQUIRE(gp_store_close_node_interval(s, "n1", 200, &e) == 0);
  REQUIRE(gp_store_close_node_interval(s, "n2", 200, &e) == 0); /* none open: no-op */
  REQUIRE(gp_store_commit(s, &e) == 0);
  gp_store_node_interval down = up;
  down.state = "down";
  down.start = 250;
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_open_node_interval(s, &down, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);

  seen a = read_node_ivs(s, 0, 1000);
  REQUIRE(a.n == 4);
  CHECK_EQ_STR("up", a.state[0]);
  CHECK_EQ_INT(100, a.start[0]);
  CHECK_EQ_INT(150, a.end[0]);
  CHECK_EQ_STR("drained", a.state[1]);
  CHECK_EQ_INT(180, a.end[1]);
  CHECK_EQ_STR("up", a.state[2]);
  CHECK_EQ_INT(200, a.end[2]);
  CHECK_EQ_STR("down", a.state[3]);
  CHECK_EQ_INT(0, a.end[3]);
  CHECK_EQ_INT(8, a.job[3]); /* gpus */
  CHECK_EQ_STR("n1", a.user[3]);
  seen b = read_node_ivs(s, 160, 260);
  REQUIRE(b.n == 3);
  CHECK_EQ_STR("drained", b.state[0]);
  CHECK_EQ_STR("down", b.state[2]);
  gp_store_close(s);
  remove_dir();
}

typedef struct open_seen {
  int ivs, node_ivs;
  int64_t job;
  char state[16];
} open_seen;
static int load_iv(void *ctx, const gp_store_interval *iv) {
  open_seen *o = ctx;
  o->ivs++;
  o->job = iv->job_id;
  CHECK_EQ_STR("GPU-b", iv->gpu_uuid);
  CHECK_EQ_INT(2, iv->attempt);
  return 0;
}
static int load_node_iv(void *ctx, const gp_store_node_interval *iv) {
  open_seen *o = ctx;
  o->node_ivs++;
  snprintf(o->state, sizeof o->state, "%s", iv->state);
  return 0;
}

/* Loading hands the server the open intervals only (closed ones are history). */
static void load_hands_back_open_intervals(void) {
  gp_store *s = open_store();
  gp_store_interval ivs[] = {iv_of(1, 1, 0, "ann", "n1", "GPU-a", 1, 10),
                             iv_of(2, 2, 0, "ann", "n1", "GPU-b", 1, 20)};
  write_ivs(s, ivs, 2);
  close_job(s, 1, 30);
  gp_err e = {0};
  gp_store_node_interval up = {.node = "n1", .model = "A100", .capacity = "on-prem",
                               .gpus = 4, .state = "up", .start = 5};
  gp_store_node_interval drained = up;
  drained.state = "drained";
  drained.start = 40;
  REQUIRE(gp_store_begin(s, &e) == 0);
  REQUIRE(gp_store_open_node_interval(s, &up, &e) == 0);
  REQUIRE(gp_store_open_node_interval(s, &drained, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);
  gp_store_close(s);
  s = open_store();
  open_seen o = {0};
  gp_store_load_cb cb = {.ctx = &o, .interval = load_iv, .node_interval = load_node_iv};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_INT(1, o.ivs);
  CHECK_EQ_INT(2, o.job);
  CHECK_EQ_INT(1, o.node_ivs);
  CHECK_EQ_STR("drained", o.state);
  gp_store_close(s);
  remove_dir();
}

static int stop_at_second(void *ctx, const gp_store_interval *iv) {
  (void)iv;
  return ++*(int *)ctx == 2 ? GP_EINVAL : 0;
}

/* A callback's error stops the scan and is returned; a rolled-back open leaves no row; the
 * fault wrapper fails a ledger write like any other. */
static void callback_errors_and_rollbacks(void) {
  gp_store *s = open_store();
  gp_store_interval ivs[] = {iv_of(1, 1, 0, "ann", "n1", "GPU-a", 1, 10),
                             iv_of(2, 1, 0, "ann", "n1", "GPU-b", 1, 20),
                             iv_of(3, 1, 0, "ann", "n1", "GPU-c", 1, 30)};
  write_ivs(s, ivs, 3);
  gp_store_reader *r = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_reader_open(s, &r, &e) == 0);
  int calls = 0;
  CHECK_EQ_INT(GP_EINVAL, gp_store_reader_intervals(r, 0, 100, NULL, stop_at_second, &calls, &e));
  CHECK_EQ_INT(2, calls);
  gp_store_reader_close(r);

  gp_store *f = NULL;
  REQUIRE(gp_store_fault_open(s, &f) == 0);
  gp_store_interval late = iv_of(4, 1, 0, "ann", "n1", "GPU-d", 1, 40);
  gp_store_fault_arm(f, 1, false);
  REQUIRE(gp_store_begin(f, &e) == 0);
  CHECK_EQ_INT(GP_EIO, gp_store_open_interval(f, &late, &e));
  gp_store_rollback(f);
  gp_store_fault_arm(f, 2, false);
  REQUIRE(gp_store_begin(f, &e) == 0);
  CHECK_EQ_INT(0, gp_store_open_interval(f, &late, &e));
  CHECK_EQ_INT(GP_EIO, gp_store_close_intervals(f, 1, 50, &e));
  gp_store_rollback(f);
  seen a = read_ivs(f, 0, 100, NULL);
  CHECK_EQ_INT(3, a.n);
  CHECK_EQ_INT(0, a.end[0]);
  gp_store_close(f);
  remove_dir();
}

typedef struct count_ctx {
  int64_t n, last_start;
  bool ordered;
  int64_t first_job;
} count_ctx;
static int count_iv(void *ctx, const gp_store_interval *iv) {
  count_ctx *c = ctx;
  if (!c->n) c->first_job = iv->job_id;
  if (iv->start < c->last_start) c->ordered = false;
  c->last_start = iv->start;
  c->n++;
  return 0;
}

/* A year of history: a month in the middle reads only the intervals that overlap it, and
 * the read is quick (both parts use an index; no sort of the range). */
static void a_month_out_of_a_year(void) {
  gp_store *s = open_store();
  gp_err e = {0};
  enum { N = 40000 };
  const int64_t year = 365 * 86400, step = year / N, len = 3 * 3600;
  REQUIRE(gp_store_begin(s, &e) == 0);
  for (int i = 0; i < N; i++) {
    gp_store_interval iv = iv_of(i + 1, 1, 0, i % 2 ? "ann" : "bob", "n1", "GPU-a", 1, i * step);
    REQUIRE(gp_store_open_interval(s, &iv, &e) == 0);
    REQUIRE(gp_store_close_intervals(s, i + 1, i * step + len, &e) == 0);
  }
  gp_store_interval open_long = iv_of(N + 1, 1, 0, "cat", "n2", "GPU-z", 1, 0);
  REQUIRE(gp_store_open_interval(s, &open_long, &e) == 0);
  REQUIRE(gp_store_commit(s, &e) == 0);

  gp_store_reader *r = NULL;
  REQUIRE(gp_store_reader_open(s, &r, &e) == 0);
  /* Early, middle and late months: each side of the choice of index. */
  const int64_t months[][2] = {{5, 35}, {180, 210}, {330, 360}};
  for (int m = 0; m < 3; m++) {
    const int64_t from = months[m][0] * 86400, to = months[m][1] * 86400;
    int64_t expect = 1; /* the open one */
    for (int i = 0; i < N; i++) expect += i * step < to && i * step + len > from;
    count_ctx c = {0, -1, true, 0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ_INT(0, gp_store_reader_intervals(r, from, to, NULL, count_iv, &c, &e));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_EQ_INT(expect, c.n);
    CHECK(c.ordered);
    CHECK_EQ_INT(N + 1, c.first_job); /* the open one started first */
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    /* A twelfth of the year's rows: a read that went through the whole table would take
     * several times longer, even under the sanitizers. */
    CHECK(ms < 1000);
  }
  gp_store_reader_close(r);
  gp_store_close(s);
  remove_dir();
}

/* Takes the store back to schema 2: a ledger with no service column. */
static void drop_service_column(void) {
  if (store_on_pg()) {
    PGconn *c = pg_connect(store_target());
    pg_must(c, "ALTER TABLE ledger DROP COLUMN service; UPDATE schema_version SET version = 2");
    PQfinish(c);
    return;
  }
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open(db_path(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "ALTER TABLE ledger DROP COLUMN service; PRAGMA user_version = 2",
                       NULL, NULL, NULL) == SQLITE_OK);
  sqlite3_close(db);
}

/* A replica's intervals carry its service (reports by service); other jobs' carry "". A
 * store from before the column (schema 2) gets it on open, its old intervals as no
 * service, and takes services from then on. */
static void a_replicas_service_rides_on_its_intervals(void) {
  gp_store *s = open_store();
  gp_store_interval ivs[2] = {iv_of(1, 1, 0, "alice", "n1", "GPU-0", 1, 100),
                              iv_of(2, 1, 0, "alice", "n1", "GPU-1", 1, 110)};
  ivs[0].service = "chat";
  write_ivs(s, ivs, 2);
  seen got = read_ivs(s, 0, 1000, NULL);
  REQUIRE(got.n == 2);
  CHECK_EQ_STR("chat", got.service[0]);
  CHECK_EQ_STR("", got.service[1]);
  gp_store_close(s);
  drop_service_column();
  s = open_store();
  ivs[0].job_id = 3;
  ivs[0].start = 120;
  write_ivs(s, ivs, 1);
  got = read_ivs(s, 0, 1000, NULL);
  REQUIRE(got.n == 3);
  CHECK_EQ_STR("", got.service[0]);     /* written before the column: no service */
  CHECK_EQ_STR("", got.service[1]);
  CHECK_EQ_STR("chat", got.service[2]);
  gp_store_close(s);
  s = open_store();                       /* and a store at schema 3 opens as it is */
  CHECK_EQ_INT(3, read_ivs(s, 0, 1000, NULL).n);
  gp_store_close(s);
  remove_dir();
}

/* The open intervals' read (the rollups' "still running" part) hands on what every other
 * read does: a replica's service, an open end as 0, an unmeasured figure as -1. */
static void open_intervals_read_like_the_others(void) {
  gp_store *s = open_store();
  gp_store_interval ivs[3] = {iv_of(1, 1, 0, "alice", "n1", "GPU-0", 1, 100),
                              iv_of(2, 1, 0, "bob", "n1", "GPU-1", 0.5, 110),
                              iv_of(3, 1, 0, "alice", "n1", "GPU-2", 1, 120)};
  ivs[0].service = "chat";
  write_ivs(s, ivs, 3);
  close_job(s, 3, 130);
  seen got;
  memset(&got, 0, sizeof got);
  gp_store_reader *r = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_reader_open(s, &r, &e) == 0);
  CHECK_EQ_INT(0, gp_store_reader_open_intervals(r, 1000, NULL, see_iv, &got, &e));
  gp_store_reader_close(r);
  REQUIRE(got.n == 2);
  CHECK_EQ_INT(1, got.job[0]);
  CHECK_EQ_STR("chat", got.service[0]);
  CHECK_EQ_INT(0, got.end[0]);
  CHECK(got.used[0] == -1 && got.energy[0] == -1);
  CHECK_EQ_INT(2, got.job[1]);
  CHECK_EQ_STR("", got.service[1]);
  CHECK_EQ_STR("bob", got.user[1]);
  CHECK_EQ_STR("GPU-1", got.uuid[1]);
  CHECK(got.share[1] == 0.5);
  gp_store_close(s);
  remove_dir();
}

GP_TESTS(a_replicas_service_rides_on_its_intervals,
         range_reads_return_overlapping_intervals_in_start_order,
         use_figures_split_by_share_and_unknown_stays_unknown, node_intervals_follow_each_other,
         load_hands_back_open_intervals, callback_errors_and_rollbacks, a_month_out_of_a_year,
         open_intervals_read_like_the_others)
