/* SPDX-License-Identifier: Apache-2.0 */
/* The store keeps what was committed (across a reopen), forgets what was rolled back, and
 * the fault-injecting wrapper fails exactly the write it was told to: on SQLite
 * (store_store_test) and on PostgreSQL (store_store_test_pg, GPOOL_TEST_STORE=pg). */
#include <sqlite3.h>
#include <stdlib.h>

#include "store/store.h"
#include "store_rows.h"
#include "store_util.h"
#include "test.h"

static void committed_rows_survive_a_reopen(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  write_some(s);
  gp_store_close(s);
  REQUIRE(open_test_store(&s, &e) == 0);
  counts c = load_all(s);
  CHECK_EQ_INT(1, c.jobs);
  CHECK_EQ_INT(1, c.events);
  CHECK_EQ_INT(1, c.nodes);
  CHECK_EQ_INT(1, c.allocs);
  CHECK_EQ_INT(1, c.queues);
  CHECK_EQ_INT(2, c.orders);
  CHECK_EQ_INT(9, c.next_order);
  CHECK_EQ_STR("{\"id\":\"1\"}", c.last_doc);
  /* Updates replace; acknowledged orders and freed allocations go away. */
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j = {1, "running", "default", "alice", 100, "{\"id\":\"1\",\"x\":1}", NULL};
  CHECK_EQ_INT(0, gp_store_put_job(s, &j, &e));
  CHECK_EQ_INT(0, gp_store_del_orders(s, "n1", 7, &e));
  gp_store_order o9 = {9, "n1", "{\"id\":\"o9\"}"};
  CHECK_EQ_INT(0, gp_store_put_order(s, &o9, &e));
  CHECK_EQ_INT(0, gp_store_del_order(s, 9, &e));
  CHECK_EQ_INT(0, gp_store_del_allocs(s, 1, &e));
  CHECK_EQ_INT(0, gp_store_del_queue(s, "org/a", &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  c = load_all(s);
  CHECK_EQ_INT(1, c.jobs);
  CHECK_EQ_STR("running", c.last_state);
  CHECK_EQ_INT(1, c.orders);
  CHECK_EQ_INT(0, c.allocs);
  CHECK_EQ_INT(0, c.queues);
  gp_store_close(s);
  remove_dir();
}

static void rolled_back_rows_are_gone(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j = {2, "pending", "default", "bob", 100, "{}", NULL};
  CHECK_EQ_INT(0, gp_store_put_job(s, &j, &e));
  gp_store_rollback(s);
  counts c = load_all(s);
  CHECK_EQ_INT(0, c.jobs);
  gp_store_close(s);
  remove_dir();
}

static void fault_store_fails_the_nth_write_and_nothing_is_committed(void) {
  gp_store *inner = NULL, *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&inner, &e) == 0);
  REQUIRE(gp_store_fault_open(inner, &s) == 0);
  gp_store_fault_arm(s, 3, false);
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j1 = {1, "pending", "q", "u", 1, "{}", NULL}, j2 = {2, "pending", "q", "u", 1, "{}", NULL},
               j3 = {3, "pending", "q", "u", 1, "{}", NULL};
  CHECK_EQ_INT(0, gp_store_put_job(s, &j1, &e));
  CHECK_EQ_INT(0, gp_store_put_job(s, &j2, &e));
  CHECK_EQ_INT(GP_EIO, gp_store_put_job(s, &j3, &e));
  CHECK_CONTAINS(e.message, "injected");
  gp_store_rollback(s);
  CHECK_EQ_INT(1, gp_store_fault_failures(s));
  CHECK_EQ_INT(0, load_all(s).jobs);
  /* A failing commit: the transaction is rolled back by the caller and nothing stays. */
  gp_store_fault_arm(s, 2, false);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_job(s, &j1, &e));
  CHECK_EQ_INT(GP_EIO, gp_store_commit(s, &e));
  gp_store_rollback(s);
  CHECK_EQ_INT(0, load_all(s).jobs);
  /* Disarmed, it writes again. */
  gp_store_fault_arm(s, 0, false);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_job(s, &j1, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  CHECK_EQ_INT(1, load_all(s).jobs);
  gp_store_close(s);
  remove_dir();
}

static int c_cred(void *ctx, const char *node, const char *hash) {
  char *out = ctx;
  snprintf(out, 200, "%s=%s", node, hash);
  return 0;
}

static void node_credentials_are_kept_and_dropped(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_credential(s, "n1", "abc", &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  char seen[200] = "";
  gp_store_load_cb cb = {.ctx = seen, .credential = c_cred};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_STR("n1=abc", seen);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_credential(s, "n1", NULL, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  seen[0] = '\0';
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_STR("", seen);
  gp_store_close(s);
  remove_dir();
}

static int c_setting(void *ctx, const char *name, const char *doc) {
  char *out = ctx;
  size_t len = strlen(out);
  snprintf(out + len, 200 - len, "%s=%s;", name, doc);
  return 0;
}

static void settings_survive_a_reopen_and_are_dropped(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_setting(s, "prices", "{\"currency\":\"USD\"}", &e));
  CHECK_EQ_INT(0, gp_store_put_setting(s, "a", "1", &e));
  CHECK_EQ_INT(0, gp_store_put_setting(s, "a", "2", &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  gp_store_close(s);
  REQUIRE(open_test_store(&s, &e) == 0);
  char seen[200] = "";
  gp_store_load_cb cb = {.ctx = seen, .setting = c_setting};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_STR("a=2;prices={\"currency\":\"USD\"};", seen);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_setting(s, "prices", NULL, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  seen[0] = '\0';
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_STR("a=2;", seen);
  gp_store_close(s);
  remove_dir();
}

/* Names of the rows a load sees, one table at a time, as "table:name;" (nodes, orders' nodes,
 * credentials). */
static void cat_name(void *ctx, const char *table, const char *name) {
  char *out = ctx;
  size_t len = strlen(out);
  snprintf(out + len, 400 - len, "%s:%s;", table, name);
}
static int n_node(void *ctx, const gp_store_node *r) { cat_name(ctx, "node", r->name); return 0; }
static int n_order(void *ctx, const gp_store_order *r) { cat_name(ctx, "order", r->node); return 0; }
static int n_cred(void *ctx, const char *node, const char *hash) {
  (void)hash;
  cat_name(ctx, "cred", node);
  return 0;
}
static int n_node_iv(void *ctx, const gp_store_node_interval *r) {
  cat_name(ctx, "open", r->node);
  return 0;
}

/* A deleted node leaves no row, credential or order behind; another node keeps its own, and
 * the ledger's history of the deleted node stays (its open interval is the caller's to
 * close). Through the fault store, the delete is a write that can fail. */
static void a_deleted_node_leaves_nothing_behind(void) {
  gp_store *inner = NULL, *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&inner, &e) == 0);
  REQUIRE(gp_store_fault_open(inner, &s) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  const char *names[] = {"n1", "n2"};
  for (int i = 0; i < 2; i++) {
    gp_store_node n = {names[i], "{}"};
    CHECK_EQ_INT(0, gp_store_put_node(s, &n, &e));
    CHECK_EQ_INT(0, gp_store_put_credential(s, names[i], "abc", &e));
    gp_store_order o = {10 + i, names[i], "{}"};
    CHECK_EQ_INT(0, gp_store_put_order(s, &o, &e));
    gp_store_node_interval iv = {.node = names[i], .model = "H100", .capacity = "on-demand",
                                 .state = "up", .gpus = 1, .start = 100};
    CHECK_EQ_INT(0, gp_store_open_node_interval(s, &iv, &e));
  }
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_fault_arm(s, 1, false);
  CHECK_EQ_INT(GP_EIO, gp_store_del_node(s, "n1", &e));
  gp_store_rollback(s);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_del_node(s, "n1", &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  char seen[400] = "";
  gp_store_load_cb cb = {.ctx = seen, .node = n_node, .order = n_order, .credential = n_cred,
                         .node_interval = n_node_iv};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_STR("node:n2;order:n2;cred:n2;open:n1;open:n2;", seen);
  gp_store_close(s);
  remove_dir();
}

/* Job `id` with its state and, when ended, the time it ended (as the server writes it). */
static void put_ended(gp_store *s, int64_t id, const char *state, const char *user,
                      const char *queue, int64_t ended_at) {
  char doc[128];
  if (ended_at) snprintf(doc, sizeof doc, "{\"id\":\"%lld\",\"ended_at\":%lld}", (long long)id,
                         (long long)ended_at);
  else snprintf(doc, sizeof doc, "{\"id\":\"%lld\",\"ended_at\":null}", (long long)id);
  gp_store_job j = {id, state, queue, user, 100, doc, NULL};
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_store_put_job(s, &j, &e));
  gp_store_event ev = {id, 100, "submitted", "{}"};
  CHECK_EQ_INT(0, gp_store_add_event(s, &ev, &e));
}

typedef struct listed {
  gp_store_reader *r;
  char ids[200];
  int events;
} listed;

static int count_event(void *ctx, const gp_store_event *row) {
  (void)row;
  ((listed *)ctx)->events++;
  return 0;
}
static int ignore_job(void *ctx, const gp_store_job *row) { (void)ctx; (void)row; return 0; }

/* Lists ids; reads each job whole through the same reader, as the history page does. */
static int list_id(void *ctx, const gp_store_job *row, int64_t ended_at) {
  listed *l = ctx;
  size_t len = strlen(l->ids);
  snprintf(l->ids + len, sizeof l->ids - len, "%lld@%lld;", (long long)row->id, (long long)ended_at);
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_store_reader_job(l->r, row->id, ignore_job, count_event, l, &e));
  return 0;
}

/* Ended jobs come newest first, filtered by time, user and queue (a queue matches its
 * sub-queues), page after page by the cursor; one job reads whole, a missing one is
 * GP_ENOENT. */
static void history_lists_ended_jobs_newest_first(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  put_ended(s, 1, "completed", "ann", "a", 1000);
  put_ended(s, 2, "failed", "bob", "a/b", 3000);
  put_ended(s, 3, "completed", "ann", "ab", 2000);
  put_ended(s, 4, "running", "ann", "a", 0);
  put_ended(s, 5, "completed", "ann", "a", 3000);
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  gp_store_reader *r = NULL;
  REQUIRE(gp_store_reader_open(s, &r, &e) == 0);
  listed l = {.r = r};
  gp_store_job_filter all = {0, 10000, NULL, NULL};
  CHECK_EQ_INT(0, gp_store_reader_jobs(r, &all, 0, 0, 100, list_id, &l, &e));
  CHECK_EQ_STR("5@3000;2@3000;3@2000;1@1000;", l.ids);
  CHECK_EQ_INT(4, l.events);
  l.ids[0] = '\0';
  CHECK_EQ_INT(0, gp_store_reader_jobs(r, &all, 3000, 2, 2, list_id, &l, &e)); /* after 2 */
  CHECK_EQ_STR("3@2000;1@1000;", l.ids);
  l.ids[0] = '\0';
  gp_store_job_filter f = {1500, 3000, "ann", "a"};
  CHECK_EQ_INT(0, gp_store_reader_jobs(r, &f, 0, 0, 100, list_id, &l, &e));
  CHECK_EQ_STR("", l.ids); /* 3 is in queue "ab", not under "a"; 5 ended at the end */
  f = (gp_store_job_filter){0, 5000, NULL, "a"};
  CHECK_EQ_INT(0, gp_store_reader_jobs(r, &f, 0, 0, 100, list_id, &l, &e));
  CHECK_EQ_STR("5@3000;2@3000;1@1000;", l.ids);
  CHECK_EQ_INT(0, gp_store_reader_job(r, 4, ignore_job, count_event, &l, &e));
  CHECK_EQ_INT(GP_ENOENT, gp_store_reader_job(r, 99, ignore_job, NULL, &l, &e));
  gp_store_reader_close(r);
  gp_store_close(s);
  remove_dir();
}

typedef struct bounded {
  char jobs[200], ended[200];
  int events;
} bounded;

static int b_job(void *ctx, const gp_store_job *row) {
  bounded *b = ctx;
  size_t len = strlen(b->jobs);
  snprintf(b->jobs + len, sizeof b->jobs - len, "%lld;", (long long)row->id);
  return 0;
}
static int b_event(void *ctx, const gp_store_event *row) {
  (void)row;
  ((bounded *)ctx)->events++;
  return 0;
}
static int b_ended(void *ctx, int64_t id, const char *state) {
  bounded *b = ctx;
  size_t len = strlen(b->ended);
  snprintf(b->ended + len, sizeof b->ended - len, "%lld=%s;", (long long)id, state);
  return 0;
}

/* A bounded load: every ended job's id and state, then the active jobs and the last ended
 * ones (oldest of those first), with the events of exactly those. A row whose state is
 * active while its document has an ended_at (6) is listed once, as active: listed twice, the
 * server replaced the job it had just loaded (bench/store_restart.sh's abort). */
static void a_bounded_load_keeps_the_recent_history(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  put_ended(s, 1, "completed", "ann", "a", 1000);
  put_ended(s, 2, "failed", "bob", "a", 3000);
  put_ended(s, 3, "completed", "ann", "a", 2000);
  put_ended(s, 4, "running", "ann", "a", 0);
  put_ended(s, 5, "pending", "ann", "a", 0);
  put_ended(s, 6, "pending", "ann", "a", 4000);
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  static const char *const active[] = {"pending", "running", NULL};
  static const char *const ended[] = {"completed", "failed", NULL};
  bounded b = {0};
  gp_store_load_cb cb = {.ctx = &b, .job = b_job, .event = b_event, .active_states = active,
                         .ended_states = ended, .keep_ended = 2, .ended = b_ended};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_STR("4;5;6;3;2;", b.jobs);
  CHECK_EQ_INT(5, b.events);
  CHECK_CONTAINS(b.ended, "1=completed;");
  CHECK_CONTAINS(b.ended, "2=failed;");
  CHECK_CONTAINS(b.ended, "3=completed;");
  gp_store_close(s);
  remove_dir();
}

/* Each job row keeps the load record given with it (store.h, gp_store_job.rec), none when
 * given none; a load hands it out beside the document, bounded or not. */
typedef struct recs {
  char got[256];
} recs;
static int b_ended_any(void *ctx, int64_t id, const char *state) {
  (void)ctx, (void)id, (void)state;
  return 0;
}
static int r_job(void *ctx, const gp_store_job *r) {
  recs *c = ctx;
  size_t len = strlen(c->got);
  snprintf(c->got + len, sizeof c->got - len, "%lld=%s;", (long long)r->id, r->rec ? r->rec : "-");
  return 0;
}

static recs load_recs(gp_store *s, bool keep_ended) {
  static const char *const active[] = {"pending", NULL}, *const ended[] = {"completed", NULL};
  recs c = {{0}};
  gp_store_load_cb cb = {.ctx = &c, .job = r_job};
  if (keep_ended) {
    cb.active_states = active, cb.ended_states = ended, cb.keep_ended = 10;
    cb.ended = b_ended_any;
  }
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  return c;
}

static void put_rec(gp_store *s, int64_t id, const char *state, const char *rec) {
  gp_err e = {0};
  char doc[64];
  snprintf(doc, sizeof doc, "{\"id\":\"%lld\",\"ended_at\":%s}", (long long)id,
           strcmp(state, "completed") ? "null" : "5");
  gp_store_job j = {id, state, "q", "u", 1, doc, rec};
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_job(s, &j, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
}

static void a_job_row_keeps_its_load_record(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  put_rec(s, 1, "pending", "gpj1;1;");
  put_rec(s, 2, "pending", NULL);
  put_rec(s, 3, "completed", "gpj1;3;");
  CHECK_EQ_STR("1=gpj1;1;;2=-;3=gpj1;3;;", load_recs(s, false).got);
  CHECK_EQ_STR("1=gpj1;1;;2=-;3=gpj1;3;;", load_recs(s, true).got);
  put_rec(s, 1, "pending", NULL); /* an update without one drops it */
  put_rec(s, 2, "pending", "gpj1;2;");
  gp_store_close(s);
  REQUIRE(open_test_store(&s, &e) == 0);
  CHECK_EQ_STR("1=-;2=gpj1;2;;3=gpj1;3;;", load_recs(s, false).got);
  gp_store_close(s);
  remove_dir();
}

/* A store of the schema before load records (3: no rec column) opens as the current one:
 * the column is added, its jobs load without records, and records are kept from then on. */
static void a_store_before_load_records_gains_them(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  put_rec(s, 1, "pending", NULL);
  gp_store_close(s);
  /* Back to schema 3, as the gpool before this one left it. */
  if (store_on_pg()) {
    PGconn *c = pg_connect(store_target());
    pg_must(c, "ALTER TABLE jobs DROP COLUMN rec; UPDATE schema_version SET version = 3");
    PQfinish(c);
  } else {
    sqlite3 *db = NULL;
    REQUIRE(sqlite3_open(db_path(), &db) == SQLITE_OK);
    CHECK_EQ_INT(SQLITE_OK, sqlite3_exec(db, "ALTER TABLE jobs DROP COLUMN rec; PRAGMA user_version = 3",
                                         NULL, NULL, NULL));
    sqlite3_close(db);
  }
  REQUIRE(open_test_store(&s, &e) == 0);
  CHECK_EQ_STR("1=-;", load_recs(s, true).got);
  put_rec(s, 2, "pending", "gpj1;2;");
  CHECK_EQ_STR("1=-;2=gpj1;2;;", load_recs(s, false).got);
  gp_store_close(s);
  /* And the version says so: a reopen migrates nothing again. */
  if (store_on_pg()) {
    PGconn *c = pg_connect(store_target());
    PGresult *r = PQexec(c, "SELECT version FROM schema_version");
    CHECK_EQ_STR("4", PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
  } else {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    REQUIRE(sqlite3_open(db_path(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK_EQ_INT(4, sqlite3_column_int(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  REQUIRE(open_test_store(&s, &e) == 0);
  CHECK_EQ_STR("1=-;2=gpj1;2;;", load_recs(s, false).got);
  gp_store_close(s);
  remove_dir();
}

/* A probe writes and takes back its bytes in a transaction of its own: no trace. */
static void a_probe_leaves_no_trace(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(open_test_store(&s, &e) == 0);
  write_some(s);
  CHECK_EQ_INT(0, gp_store_probe(s, &e));
  counts c = load_all(s);
  CHECK_EQ_INT(1, c.metas);
  char seen[200] = "";
  gp_store_load_cb cb = {.ctx = seen, .setting = c_setting};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_STR("", seen);
  gp_store_close(s);
  remove_dir();
}


GP_TESTS(committed_rows_survive_a_reopen, rolled_back_rows_are_gone, fault_store_fails_the_nth_write_and_nothing_is_committed, node_credentials_are_kept_and_dropped, settings_survive_a_reopen_and_are_dropped, a_deleted_node_leaves_nothing_behind,
         history_lists_ended_jobs_newest_first, a_bounded_load_keeps_the_recent_history,
         a_probe_leaves_no_trace, a_job_row_keeps_its_load_record,
         a_store_before_load_records_gains_them)
