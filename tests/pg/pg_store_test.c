/* SPDX-License-Identifier: Apache-2.0 */
/* What only the PostgreSQL store does (the rest runs in tests/store on both backends): a
 * fenced handle's writes fail and leave nothing, and a takeover waits for the write in
 * flight; a terminated connection fails one transaction and the next one works; an older
 * schema is migrated and a newer one refused; servers opening one database at once agree
 * on its id; a password in the URL never shows in an error. Needs the test PostgreSQL
 * (fixture gpool_pg). */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/pg.h"
#include "store/store.h"
#include "../store/pg_util.h"
#include "test.h"

static char db[64];

static const char *fresh_url(void) {
  snprintf(db, sizeof db, "%s", pg_new_db());
  return pg_db_url(db);
}

static gp_store *open_url(const char *url) {
  gp_store *s = NULL;
  gp_err e = {0};
  if (gp_store_open(url, &s, &e) != 0) fprintf(stderr, "  open: %s\n", e.message);
  REQUIRE(s);
  return s;
}

static int count_job(void *ctx, const gp_store_job *r) {
  (void)r;
  ++*(int *)ctx;
  return 0;
}

static int jobs_in(gp_store *s) {
  int n = 0;
  gp_store_load_cb cb = {.ctx = &n, .job = count_job};
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  return n;
}

static int put_job(gp_store *s, int64_t id, gp_err *e) {
  int r = gp_store_begin(s, e);
  gp_store_job j = {id, "pending", "default", "alice", 100, "{}", NULL};
  if (!r) r = gp_store_put_job(s, &j, e);
  if (!r) r = gp_store_commit(s, e);
  if (r) gp_store_rollback(s);
  return r;
}

/* The lease table as the lease module makes it (lease.h), at `epoch`. */
static void make_lease(PGconn *c, int epoch) {
  pg_must(c, "CREATE TABLE IF NOT EXISTS gp_lease(id int PRIMARY KEY, epoch bigint NOT NULL,"
             " holder text, url text, expires_at timestamptz)");
  char sql[160];
  snprintf(sql, sizeof sql, "INSERT INTO gp_lease(id, epoch) VALUES (1, %d)", epoch);
  pg_must(c, sql);
}

static void a_fenced_handle_writes_nothing(void) {
  const char *url = fresh_url();
  gp_store *old = open_url(url), *next = open_url(url);
  PGconn *admin = pg_connect(url);
  gp_err e = {0};
  /* Fencing on and no lease table: no epoch can be current. */
  old->fence_epoch = 1;
  CHECK_EQ_INT(GP_ESTATE, put_job(old, 1, &e));
  CHECK_EQ_STR("fenced", gp_store_failure(old));
  make_lease(admin, 1);
  CHECK_EQ_INT(0, put_job(old, 1, &e));
  /* A takeover raises the epoch: the old leader's next transaction is refused, whole. */
  pg_must(admin, "UPDATE gp_lease SET epoch = 2 WHERE id = 1");
  e = (gp_err){0};
  CHECK_EQ_INT(GP_ESTATE, put_job(old, 2, &e));
  CHECK_EQ_STR("fenced", gp_store_failure(old));
  CHECK_CONTAINS(e.message, "epoch 2");
  next->fence_epoch = 2;
  CHECK_EQ_INT(0, put_job(next, 3, &e));
  CHECK_EQ_INT(2, jobs_in(next)); /* 1 and 3, never 2 */
  /* A transaction in flight holds the lease row: a takeover waits for it to end, so no
   * write of the old epoch commits after the new epoch exists. */
  REQUIRE(gp_store_begin(next, &e) == 0);
  gp_store_job j = {4, "pending", "default", "alice", 100, "{}", NULL};
  CHECK_EQ_INT(0, gp_store_put_job(next, &j, &e));
  pg_must(admin, "SET lock_timeout = '200ms'");
  PGresult *r = PQexec(admin, "UPDATE gp_lease SET epoch = 3 WHERE id = 1");
  CHECK_EQ_STR("55P03", PQresultErrorField(r, PG_DIAG_SQLSTATE)); /* lock_not_available */
  PQclear(r);
  CHECK_EQ_INT(0, gp_store_commit(next, &e));
  pg_must(admin, "UPDATE gp_lease SET epoch = 3 WHERE id = 1");
  CHECK_EQ_INT(GP_ESTATE, put_job(next, 5, &e));
  CHECK_EQ_INT(3, jobs_in(next));
  /* Without fencing (one server), the lease is not read at all. */
  next->fence_epoch = 0;
  CHECK_EQ_INT(0, put_job(next, 6, &e));
  PQfinish(admin);
  gp_store_close(old);
  gp_store_close(next);
  pg_drop_db(db);
}

/* A server stopped in the middle of a transaction (SIGSTOP, a cut network) holds the lease
 * row's share lock: PostgreSQL ends its idle transaction within seconds, so a takeover
 * waits that long, not forever, and the stopped server's commit then fails. */
static void a_stalled_transaction_does_not_block_a_takeover(void) {
  const char *url = fresh_url();
  gp_store *s = open_url(url);
  PGconn *admin = pg_connect(url);
  make_lease(admin, 1);
  s->fence_epoch = 1;
  gp_err e = {0};
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j = {1, "pending", "default", "alice", 100, "{}", NULL};
  CHECK_EQ_INT(0, gp_store_put_job(s, &j, &e));
  pg_must(admin, "SET lock_timeout = '30s'");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pg_must(admin, "UPDATE gp_lease SET epoch = 2 WHERE id = 1");
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  CHECK(waited > 3 && waited < 15); /* the share lock held it, until the idle timeout (5 s) */
  CHECK(gp_store_commit(s, &e) != 0);
  CHECK_EQ_STR("connection lost", gp_store_failure(s));
  gp_store_rollback(s);
  s->fence_epoch = 2;
  CHECK_EQ_INT(0, put_job(s, 2, &e));
  CHECK_EQ_INT(1, jobs_in(s)); /* job 2 only */
  PQfinish(admin);
  gp_store_close(s);
  pg_drop_db(db);
}

static int ignore_job(void *ctx, const gp_store_job *row) {
  (void)ctx;
  (void)row;
  return 0;
}

/* Ends every gpool connection to the test's database, as an admin or a failover would. */
static void terminate_gpool_sessions(PGconn *admin) {
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND "
           "application_name = 'gpool'", db);
  pg_must(admin, sql);
}

static void a_lost_connection_fails_one_transaction_then_reconnects(void) {
  const char *url = fresh_url();
  gp_store *s = open_url(url);
  PGconn *admin = pg_connect(pg_admin_url());
  gp_err e = {0};
  CHECK_EQ_INT(0, put_job(s, 1, &e));
  /* Lost while idle: found at the next begin, which reconnects before anything is done. */
  terminate_gpool_sessions(admin);
  CHECK_EQ_INT(0, put_job(s, 2, &e));
  /* Lost inside a transaction: that transaction fails, naming the cause... */
  REQUIRE(gp_store_begin(s, &e) == 0);
  gp_store_job j = {3, "pending", "default", "alice", 100, "{}", NULL};
  int r = gp_store_put_job(s, &j, &e);
  terminate_gpool_sessions(admin);
  e = (gp_err){0};
  if (!r) r = gp_store_commit(s, &e);
  CHECK_EQ_INT(GP_EIO, r);
  CHECK_EQ_STR("connection lost", gp_store_failure(s));
  CHECK_CONTAINS(e.message, "connection lost");
  gp_store_rollback(s);
  /* ...and the next one reconnects and commits; the failed one left nothing. */
  CHECK_EQ_INT(0, put_job(s, 4, &e));
  CHECK_EQ_INT(3, jobs_in(s));
  /* A load on a dead connection reconnects too; a failed load is retried by the caller. */
  terminate_gpool_sessions(admin);
  int n = 0;
  gp_store_load_cb cb = {.ctx = &n, .job = count_job};
  if (gp_store_load(s, &cb, &e) != 0) CHECK_EQ_INT(0, gp_store_load(s, &cb, &e));
  CHECK_EQ_INT(3, jobs_in(s));
  /* A probe (a transaction of its own) works across a lost connection too. */
  terminate_gpool_sessions(admin);
  CHECK_EQ_INT(0, gp_store_probe(s, &e));
  /* A reader's connection is its own and reconnects likewise. */
  gp_store_reader *rd = NULL;
  REQUIRE(gp_store_reader_open(s, &rd, &e) == 0);
  terminate_gpool_sessions(admin);
  if (gp_store_reader_job(rd, 1, ignore_job, NULL, NULL, &e) != 0) {
    e = (gp_err){0};
    CHECK_EQ_INT(0, gp_store_reader_job(rd, 1, ignore_job, NULL, NULL, &e));
  }
  gp_store_reader_close(rd);
  PQfinish(admin);
  gp_store_close(s);
  pg_drop_db(db);
}

static int version_of(PGconn *c) {
  PGresult *r = PQexec(c, "SELECT version FROM schema_version WHERE one = 1");
  int v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 0)) : -1;
  PQclear(r);
  return v;
}

static void an_older_schema_migrates_and_a_newer_one_is_refused(void) {
  const char *url = fresh_url();
  gp_store *s = open_url(url);
  gp_err e = {0};
  CHECK_EQ_INT(0, put_job(s, 1, &e));
  gp_store_close(s);
  PGconn *admin = pg_connect(url);
  CHECK_EQ_INT(gp_store_pg_schema_version(), version_of(admin));
  /* A database at version 1, missing what the later steps make (the roll-ups, the
   * ledger's service column). */
  pg_must(admin, "DROP TABLE ledger_day; DROP TABLE ledger_alloc_day; DROP TABLE ledger_held_day;"
                 "ALTER TABLE ledger DROP COLUMN service");
  pg_must(admin, "UPDATE schema_version SET version = 1");
  s = open_url(url);
  CHECK_EQ_INT(gp_store_pg_schema_version(), version_of(admin));
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_setting(s, "prices", "{}", &e));
  /* A close writes the roll-ups, which the step made again. */
  gp_store_interval iv = {.job_id = 1, .attempt = 1, .user = "u", .queue = "q", .node = "n",
                          .gpu_uuid = "g", .model = "m", .capacity = "spot", .share = 1, .start = 10};
  CHECK_EQ_INT(0, gp_store_open_interval(s, &iv, &e));
  CHECK_EQ_INT(0, gp_store_close_intervals(s, 1, 20, &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  CHECK_EQ_INT(1, jobs_in(s)); /* the data stayed */
  gp_store_close(s);
  /* A newer gpool's database: refused, saying which versions, and left as it was. */
  pg_must(admin, "UPDATE schema_version SET version = 99");
  s = NULL;
  e = (gp_err){0};
  CHECK_EQ_INT(GP_EINVAL, gp_store_open(url, &s, &e));
  CHECK(s == NULL);
  char want[96];
  snprintf(want, sizeof want, "store schema 99 is newer than this gpool (%d)",
           gp_store_pg_schema_version());
  CHECK_CONTAINS(e.message, want);
  CHECK_EQ_INT(99, version_of(admin));
  PQfinish(admin);
  pg_drop_db(db);
}

/* Servers starting together on a new database: one makes the schema and the id, all of
 * them read the same id. */
static void servers_opening_at_once_agree_on_the_id(void) {
  const char *url = fresh_url();
  enum { N = 6 };
  int fds[N][2];
  for (int i = 0; i < N; i++) {
    REQUIRE(pipe(fds[i]) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      gp_store *s = NULL;
      gp_err e = {0};
      int rc = gp_store_open(url, &s, &e);
      if (rc) fprintf(stderr, "  open %d: %s\n", i, e.message);
      char id[GP_STORE_ID_MAX] = "";
      if (!rc) snprintf(id, sizeof id, "%s", s->id);
      ssize_t w = write(fds[i][1], id, sizeof id);
      gp_store_close(s);
      _exit(rc || w != (ssize_t)sizeof id);
    }
    close(fds[i][1]);
  }
  char ids[N][GP_STORE_ID_MAX];
  for (int i = 0; i < N; i++) {
    int st = 0;
    CHECK_EQ_INT((ssize_t)sizeof ids[i], read(fds[i][0], ids[i], sizeof ids[i]));
    close(fds[i][0]);
    REQUIRE(wait(&st) > 0);
    CHECK_EQ_INT(0, st);
  }
  CHECK_EQ_INT(GP_STORE_ID_MAX - 1, (int)strlen(ids[0]));
  for (int i = 1; i < N; i++) CHECK_EQ_STR(ids[0], ids[i]);
  gp_store *s = open_url(url);
  CHECK_EQ_STR(ids[0], s->id);
  gp_store_close(s);
  pg_drop_db(db);
}

static void a_password_never_shows(void) {
  char shown[GP_STORE_PG_URL_MAX];
  gp_store_pg_mask_url("postgresql://gp:s3cret@db.example:5432/gpool", shown, sizeof shown);
  CHECK_EQ_STR("postgresql://gp:***@db.example:5432/gpool", shown);
  gp_store_pg_mask_url("postgres://db/gpool?user=gp&password=s3cret&sslmode=require", shown,
                       sizeof shown);
  CHECK_EQ_STR("postgres://db/gpool?user=gp&password=***&sslmode=require", shown);
  gp_store_pg_mask_url("postgresql://gp@db/gpool", shown, sizeof shown);
  CHECK_EQ_STR("postgresql://gp@db/gpool", shown);
  /* A server that is not there: the error names the store, without the password. */
  gp_store *s = NULL;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EIO, gp_store_open("postgresql://gp:s3cret@127.0.0.1:1/gpool?connect_timeout=2",
                                     &s, &e));
  CHECK(s == NULL);
  char all[1024];
  gp_err_format(&e, all, sizeof all);
  CHECK(strstr(all, "s3cret") == NULL);
  CHECK_CONTAINS(all, "127.0.0.1:1");
  CHECK_CONTAINS(all, "connection lost");
  /* A URL libpq cannot read is a mistake in the config, named as one. */
  e = (gp_err){0};
  CHECK_EQ_INT(GP_EINVAL, gp_store_open("postgresql://gp:s3cret@db/gpool?no_such_option=1", &s, &e));
  CHECK_EQ_STR("store", e.field);
  CHECK_CONTAINS(e.message, "no_such_option");
  CHECK(strstr(e.message, "s3cret") == NULL);
}

GP_TESTS(a_fenced_handle_writes_nothing, a_stalled_transaction_does_not_block_a_takeover, a_lost_connection_fails_one_transaction_then_reconnects,
         an_older_schema_migrates_and_a_newer_one_is_refused,
         servers_opening_at_once_agree_on_the_id, a_password_never_shows)
