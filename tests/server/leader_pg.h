/* SPDX-License-Identifier: Apache-2.0 */
/* A throw-away PostgreSQL for the lease and leader tests (tests/e2e/failover_pg.sh) in a
 * temp dir on 127.0.0.1; each test gets a database of its own, so no test sees another's
 * lease row. tpg_sql runs one statement on a connection of the test's own. */
#ifndef GP_TESTS_SERVER_LEADER_PG_H
#define GP_TESTS_SERVER_LEADER_PG_H

#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct tpg {
  char dir[256];
  char url[300];
} tpg;

static tpg tpg_current_;

static inline void tpg_script_(const char *cmd, const char *dir, char *out, size_t out_size) {
  char line[900];
  snprintf(line, sizeof line, "bash '%s/tests/e2e/failover_pg.sh' %s '%s/pg'", GP_SOURCE_DIR, cmd, dir);
  FILE *p = popen(line, "r");
  REQUIRE(p != NULL);
  char buf[256] = "";
  if (!fgets(buf, sizeof buf, p)) buf[0] = '\0';
  REQUIRE(pclose(p) == 0);
  buf[strcspn(buf, "\n")] = '\0';
  if (out) snprintf(out, out_size, "%s", buf);
}

/* One PostgreSQL serves every test of a test program (tests run one at a time, each in a
 * child process): the first test starts it, the program stops it when it exits (children
 * leave with _exit, which runs no destructor). */
static inline void tpg_dir_(char *dir, size_t size, long owner) {
  snprintf(dir, size, "/tmp/gp_pg_test_%ld", owner);
}

__attribute__((destructor)) static void tpg_stop_at_exit_(void) {
  char dir[64];
  tpg_dir_(dir, sizeof dir, (long)getpid());
  char url[300];
  snprintf(url, sizeof url, "%s/pg/url", dir);
  if (access(url, F_OK) != 0) return;
  char line[700];
  snprintf(line, sizeof line, "bash '%s/tests/e2e/failover_pg.sh' stop '%s/pg' >/dev/null 2>&1; rm -rf '%s'",
           GP_SOURCE_DIR, dir, dir);
  if (system(line) != 0) fprintf(stderr, "could not clean up %s\n", dir);
}

static inline void tpg_sql(const char *sql, char *out, size_t out_size);

/* A database of this test's own in the program's PostgreSQL; returns its URL. */
static inline const char *tpg_start(void) {
  tpg *t = &tpg_current_;
  tpg_dir_(t->dir, sizeof t->dir, (long)getppid());
  char url_file[300], base[256] = "";
  snprintf(url_file, sizeof url_file, "%s/pg/url", t->dir);
  if (access(url_file, F_OK) != 0) {
    REQUIRE(mkdir(t->dir, 0700) == 0 || errno == EEXIST);
    tpg_script_("start", t->dir, base, sizeof base);
  }
  FILE *f = fopen(url_file, "r");
  REQUIRE(f != NULL);
  REQUIRE(fgets(base, sizeof base, f) != NULL);
  fclose(f);
  base[strcspn(base, "\n")] = '\0';
  char *slash = strrchr(base, '/'); /* postgresql://user@host:port/postgres */
  REQUIRE(slash != NULL);
  snprintf(t->url, sizeof t->url, "%s", base);
  char sql[96];
  snprintf(sql, sizeof sql, "CREATE DATABASE t%ld", (long)getpid());
  tpg_sql(sql, NULL, 0);
  *slash = '\0';
  snprintf(t->url, sizeof t->url, "%s/t%ld", base, (long)getpid());
  return t->url;
}

/* Stops it at once and starts it again on the same port (every session is cut). */
static inline void tpg_restart(void) { tpg_script_("restart", tpg_current_.dir, NULL, 0); }

/* Runs `sql` on a fresh connection; returns the first field of the first row ("" if none)
 * in out. */
static inline void tpg_sql(const char *sql, char *out, size_t out_size) {
  PGconn *c = PQconnectdb(tpg_current_.url);
  REQUIRE(PQstatus(c) == CONNECTION_OK);
  PGresult *r = PQexec(c, sql);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
    fprintf(stderr, "sql: %s: %s\n", sql, PQresultErrorMessage(r));
  REQUIRE(st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK);
  if (out) snprintf(out, out_size, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
  PQclear(r);
  PQfinish(c);
}

#endif
