/* SPDX-License-Identifier: Apache-2.0 */
/* What only the SQLite store does: its file is private, a full disk is named and probed, a
 * file that is not a gpool store is refused, and its id goes with the file. */
#include <stdlib.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "store/store.h"
#include "store_rows.h"
#include "store_util.h"
#include "test.h"

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
  gp_store_job big = {2, "pending", "default", "bob", 100, doc, NULL};
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

/* Runs `sql` on the store's file directly, as an older or newer gpool would have left it. */
static void sql_on_file(const char *sql) {
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open(db_path(), &db) == SQLITE_OK);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fprintf(stderr, "  %s: %s\n", sql, msg);
  REQUIRE(msg == NULL);
  sqlite3_close(db);
}

static int user_version(void) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  REQUIRE(sqlite3_open(db_path(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  int v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

/* An older store (a version behind, a table missing) is brought up to date with its data;
 * a newer gpool's store is refused, saying which versions, and left as it was. */
static void an_older_schema_migrates_and_a_newer_one_is_refused(void) {
  gp_store *s = NULL;
  gp_err e = {0};
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  write_some(s);
  gp_store_close(s);
  int current = user_version();
  CHECK(current >= 1);
  sql_on_file("DROP TABLE settings; PRAGMA user_version=0");
  REQUIRE(gp_store_sqlite_open(db_path(), &s, &e) == 0);
  CHECK_EQ_INT(current, user_version());
  REQUIRE(gp_store_begin(s, &e) == 0);
  CHECK_EQ_INT(0, gp_store_put_setting(s, "prices", "{}", &e));
  CHECK_EQ_INT(0, gp_store_commit(s, &e));
  CHECK_EQ_INT(1, load_all(s).jobs);
  gp_store_close(s);
  sql_on_file("PRAGMA user_version=99");
  s = NULL;
  CHECK_EQ_INT(GP_EINVAL, gp_store_sqlite_open(db_path(), &s, &e));
  CHECK(s == NULL);
  char want[80];
  snprintf(want, sizeof want, "store schema 99 is newer than this gpool (%d)", current);
  CHECK_CONTAINS(e.message, want);
  CHECK_EQ_INT(99, user_version());
  remove_dir();
}

GP_TESTS(a_full_database_is_named_and_probed, the_database_is_private, a_file_that_is_not_a_database_is_refused, an_empty_or_foreign_database_is_refused, a_store_keeps_its_identity,
         an_older_schema_migrates_and_a_newer_one_is_refused)
