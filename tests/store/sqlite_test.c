/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite store keeps what was committed (across a reopen), forgets what was rolled
 * back, and the fault-injecting wrapper fails exactly the write it was told to. */
#include <stdlib.h>
#include <sys/stat.h>

#include "store/store.h"
#include "store_util.h"
#include "test.h"

typedef struct counts {
  int jobs, events, nodes, allocs, queues, orders, metas;
  int64_t next_order;
  char last_doc[256];
  char last_state[32];
} counts;

static int c_job(void *ctx, const gp_store_job *r) {
  counts *c = ctx;
  c->jobs++;
  snprintf(c->last_doc, sizeof c->last_doc, "%s", r->doc);
  snprintf(c->last_state, sizeof c->last_state, "%s", r->state);
  return 0;
}
static int c_event(void *ctx, const gp_store_event *r) { (void)r; ((counts *)ctx)->events++; return 0; }
static int c_node(void *ctx, const gp_store_node *r) { (void)r; ((counts *)ctx)->nodes++; return 0; }
static int c_alloc(void *ctx, const gp_store_alloc *r) {
  counts *c = ctx;
  CHECK_EQ_INT(0x5, r->gpu_mask);
  CHECK_EQ_STR("n1", r->node);
  c->allocs++;
  return 0;
}
static int c_queue(void *ctx, const gp_store_queue *r) { (void)r; ((counts *)ctx)->queues++; return 0; }
static int c_order(void *ctx, const gp_store_order *r) { (void)r; ((counts *)ctx)->orders++; return 0; }
static int c_meta(void *ctx, const char *k, int64_t v) {
  ((counts *)ctx)->metas++;
  if (strcmp(k, "next_order_id") == 0) ((counts *)ctx)->next_order = v;
  return 0;
}

static counts load_all(gp_store *s) {
  counts c;
  memset(&c, 0, sizeof c);
  gp_store_load_cb cb = {&c, c_job, c_event, c_node, c_alloc, c_queue, c_order, c_meta, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL};
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  return c;
}

static void write_some(gp_store *s) {
  gp_err e = {0};
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j = {1, "pending", "default", "alice", 100, "{\"id\":\"1\"}"};
  CHECK_EQ_INT(0, gp_store_put_job(s, &j, &e));
  gp_store_event ev = {1, 100, "submitted", "{\"event\":\"submitted\"}"};
  CHECK_EQ_INT(0, gp_store_add_event(s, &ev, &e));
  gp_store_node n = {"n1", "{\"name\":\"n1\"}"};
  CHECK_EQ_INT(0, gp_store_put_node(s, &n, &e));
  gp_store_alloc a = {1, 0, "n1", 0x5, 1000, 0, -1};
  CHECK_EQ_INT(0, gp_store_put_alloc(s, &a, &e));
  gp_store_queue q = {"org/a", "{}"};
  CHECK_EQ_INT(0, gp_store_put_queue(s, &q, &e));
  gp_store_order o1 = {7, "n1", "{\"id\":\"o7\"}"}, o2 = {8, "n1", "{\"id\":\"o8\"}"};
  CHECK_EQ_INT(0, gp_store_put_order(s, &o1, &e));
  CHECK_EQ_INT(0, gp_store_put_order(s, &o2, &e));
  CHECK_EQ_INT(0, gp_store_set_meta(s, "next_order_id", 9, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
}

static void committed_rows_survive_a_reopen(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  write_some(s);
  gp_store_close(s);
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
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
  gp_store_job j = {1, "running", "default", "alice", 100, "{\"id\":\"1\",\"x\":1}"};
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
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j = {2, "pending", "default", "bob", 100, "{}"};
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
  REQUIRE(gp_store_sqlite_open(db_path(), &inner, &e) == 0);
  REQUIRE(gp_store_fault_open(inner, &s) == 0);
  gp_store_fault_arm(s, 3, false);
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j1 = {1, "pending", "q", "u", 1, "{}"}, j2 = {2, "pending", "q", "u", 1, "{}"},
               j3 = {3, "pending", "q", "u", 1, "{}"};
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

static void a_file_that_is_not_a_database_is_refused(void) {
  char p[300];
  db_path();
  snprintf(p, sizeof p, "%s/junk.db", store_dir);
  FILE *f = fopen(p, "w");
  REQUIRE(f);
  fputs("this is not sqlite, just text that is long enough to look like a header.......\n", f);
  fclose(f);
  gp_store *s = NULL;
  gp_err e = {0};
  CHECK(gp_store_sqlite_open(p, &s, &e) != 0);
  CHECK(s == NULL);
  CHECK_CONTAINS(e.file, "junk.db");
  remove_dir();
}

/* The store holds every job's environment: its files are the owner's alone, made so under a
 * permissive umask, and an existing database readable by others is closed to them. */
static void the_database_is_private(void) {
  mode_t old = umask(0);
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  write_some(s);
  struct stat st;
  REQUIRE(stat(db_path(), &st) == 0);
  CHECK_EQ_INT(0600, st.st_mode & 0777);
  char wal[320];
  snprintf(wal, sizeof wal, "%s-wal", db_path());
  if (stat(wal, &st) == 0) CHECK_EQ_INT(0600, st.st_mode & 0777);
  gp_store_close(s);
  REQUIRE(chmod(db_path(), 0644) == 0);
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  REQUIRE(stat(db_path(), &st) == 0);
  CHECK_EQ_INT(0600, st.st_mode & 0777);
  /* A -wal and -shm left open to others (a crash under an older gpool, a copy) are closed
   * too: they hold the latest jobs. */
  write_some(s);
  char shm[320];
  snprintf(shm, sizeof shm, "%s-shm", db_path());
  REQUIRE(chmod(wal, 0644) == 0 && chmod(shm, 0666) == 0);
  gp_store *again = NULL;
  REQUIRE(gp_store_sqlite_open(db_path(), &again, &e) == 0);
  REQUIRE(stat(wal, &st) == 0);
  CHECK_EQ_INT(0600, st.st_mode & 0777);
  REQUIRE(stat(shm, &st) == 0);
  CHECK_EQ_INT(0600, st.st_mode & 0777);
  gp_store_close(again);
  gp_store_close(s);
  umask(old);
  remove_dir();
}

/* A capped database fails as a full disk does: the failure is named, a probe fails as
 * long as the space is not there, and both work again when it is. */
static void a_full_database_is_named_and_probed(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  write_some(s);
  CHECK_EQ_INT(0, gp_store_sqlite_cap_pages(s, 1));
  static char doc[40000];
  memset(doc, 'x', sizeof doc - 1);
  gp_store_job big = {2, "pending", "default", "bob", 100, doc};
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(GP_EIO, gp_store_put_job(s, &big, &e));
  CHECK_EQ_STR("disk full", gp_store_failure(s));
  CHECK_CONTAINS(e.message, "disk full");
  gp_store_rollback(s);
  counts c = load_all(s);
  CHECK_EQ_INT(1, c.jobs);
  CHECK_EQ_INT(GP_EIO, gp_store_probe(s, &e));
  CHECK_EQ_STR("disk full", gp_store_failure(s));
  CHECK_EQ_INT(GP_EIO, gp_store_probe(s, &e));
  CHECK_EQ_INT(0, gp_store_sqlite_cap_pages(s, 0));
  CHECK_EQ_INT(0, gp_store_probe(s, &e));
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_job(s, &big, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  c = load_all(s);
  CHECK_EQ_INT(2, c.jobs);
  CHECK_EQ_INT(1, c.metas); /* the probes left no row behind */
  gp_store_close(s);
  remove_dir();
}

/* A store truncated to 0 bytes, or another program's database, would start as a new store
 * whose job and order numbers restart at 1: both are refused, naming the file. */
static void an_empty_or_foreign_database_is_refused(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  FILE *f = fopen(db_path(), "w");
  REQUIRE(f);
  fclose(f);
  CHECK_EQ_INT(GP_EINVAL, gp_store_sqlite_open(db_path(), &s, &e));
  CHECK(s == NULL);
  CHECK_CONTAINS(e.message, "0 bytes");
  CHECK_CONTAINS(e.file, "gpool.db");
  struct stat st;
  REQUIRE(stat(db_path(), &st) == 0);
  CHECK_EQ_INT(0, (int)st.st_size); /* left as it was, for the admin to look at */
  char other[300], cmd[700];
  snprintf(other, sizeof other, "%s/other.db", store_dir);
  snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'CREATE TABLE t(x); INSERT INTO t VALUES (1);'", other);
  if (system(cmd) == 0) {
    e = (gp_err){0};
    CHECK_EQ_INT(GP_EINVAL, gp_store_sqlite_open(other, &s, &e));
    CHECK_CONTAINS(e.message, "not a gpool store");
  }
  remove_dir();
}

/* The id is made with the store, kept across reopens, and differs between two stores. */
static void a_store_keeps_its_identity(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  char first[GP_STORE_ID_MAX];
  snprintf(first, sizeof first, "%s", s->id);
  CHECK_EQ_INT(GP_STORE_ID_MAX - 1, (int)strlen(first));
  gp_store_close(s);
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  CHECK_EQ_STR(first, s->id);
  gp_store *f = NULL;
  REQUIRE(gp_store_fault_open(s, &f) == 0);
  CHECK_EQ_STR(first, f->id);
  gp_store_close(f);
  char moved[320];
  snprintf(moved, sizeof moved, "%s.moved", db_path());
  REQUIRE(rename(db_path(), moved) == 0);
  char wal[320];
  snprintf(wal, sizeof wal, "%s-wal", db_path());
  unlink(wal);
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  CHECK(strcmp(first, s->id) != 0);
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
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
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
  REQUIRE(gp_store_sqlite_open(db_path(), &inner, &e) == 0);
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

static int c_setting(void *ctx, const char *name, const char *doc) {
  char *out = ctx;
  size_t len = strlen(out);
  snprintf(out + len, 200 - len, "%s=%s;", name, doc);
  return 0;
}

static void settings_survive_a_reopen_and_are_dropped(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_setting(s, "prices", "{\"currency\":\"USD\"}", &e));
  CHECK_EQ_INT(0, gp_store_put_setting(s, "a", "1", &e));
  CHECK_EQ_INT(0, gp_store_put_setting(s, "a", "2", &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  gp_store_close(s);
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
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

GP_TESTS(a_full_database_is_named_and_probed, the_database_is_private, committed_rows_survive_a_reopen, rolled_back_rows_are_gone,
         fault_store_fails_the_nth_write_and_nothing_is_committed,
         a_file_that_is_not_a_database_is_refused, an_empty_or_foreign_database_is_refused,
         a_store_keeps_its_identity, node_credentials_are_kept_and_dropped,
         settings_survive_a_reopen_and_are_dropped, a_deleted_node_leaves_nothing_behind)
