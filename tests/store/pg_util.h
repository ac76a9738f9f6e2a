/* SPDX-License-Identifier: Apache-2.0 */
/* The test PostgreSQL for C tests: the ctest fixture gpool_pg (tests/pg/pg_start.sh)
 * starts one server for the whole suite and writes its URL to the file named by
 * GPOOL_TEST_PG_URL_FILE; each test makes a database of its own on it (gp_t_<pid>_<n>), so
 * tests run in parallel, and drops it when done. Without that server the test fails,
 * saying how to get one: PostgreSQL tests are never skipped. */
#ifndef GP_TESTS_STORE_PG_UTIL_H
#define GP_TESTS_STORE_PG_UTIL_H

#include <libpq-fe.h>

#include "test.h"

/* The fixture's URL (postgresql://USER@127.0.0.1:PORT/postgres). */
static inline const char *pg_admin_url(void) {
  static char url[512];
  if (url[0]) return url;
  const char *file = getenv("GPOOL_TEST_PG_URL_FILE");
  FILE *f = file ? fopen(file, "r") : NULL;
  if (!f || !fgets(url, sizeof url, f)) {
    fprintf(stderr, "  no test PostgreSQL (GPOOL_TEST_PG_URL_FILE=%s): run scripts/setup.sh to "
                    "install PostgreSQL, and run this test through ctest (fixture gpool_pg)\n",
            file ? file : "unset");
    if (f) fclose(f);
    REQUIRE(!"a test PostgreSQL");
  }
  fclose(f);
  url[strcspn(url, "\r\n")] = '\0';
  return url;
}

/* A connection for the test's own statements (as the fixture's superuser). */
static inline PGconn *pg_connect(const char *url) {
  PGconn *c = PQconnectdb(url);
  if (PQstatus(c) != CONNECTION_OK) fprintf(stderr, "  %s: %s", url, PQerrorMessage(c));
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  return c;
}

/* Runs `sql` on `c` and requires it to work. */
static inline void pg_must(PGconn *c, const char *sql) {
  PGresult *r = PQexec(c, sql);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
    fprintf(stderr, "  %s: %s", sql, PQerrorMessage(c));
  REQUIRE(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK);
  PQclear(r);
}

/* The URL of `db` on the fixture's server. */
static inline const char *pg_db_url(const char *db) {
  static char url[600];
  const char *admin = pg_admin_url();
  const char *slash = strrchr(admin, '/');
  REQUIRE(slash);
  snprintf(url, sizeof url, "%.*s/%s", (int)(slash - admin), admin, db);
  return url;
}

/* Makes a new, empty database and returns its name (valid until the next call). */
static inline const char *pg_new_db(void) {
  static int n;
  static char name[64];
  snprintf(name, sizeof name, "gp_t_%d_%d", (int)getpid(), n++);
  PGconn *c = pg_connect(pg_admin_url());
  char sql[128];
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
  pg_must(c, sql);
  PQfinish(c);
  return name;
}

static inline void pg_drop_db(const char *name) {
  PGconn *c = pg_connect(pg_admin_url());
  char sql[128];
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
  pg_must(c, sql);
  PQfinish(c);
}

#endif
