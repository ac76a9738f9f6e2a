/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the store tests: where the test's store lives and its removal. Each test runs in
 * a process of its own, so each gets its own store: a fresh directory under /tmp with the
 * SQLite file in it, or, with GPOOL_TEST_STORE=pg (the *_pg ctest entries), a fresh
 * database on the test PostgreSQL (pg_util.h). One test source thus runs on both backends. */
#ifndef GP_TESTS_STORE_UTIL_H
#define GP_TESTS_STORE_UTIL_H

#include "pg_util.h"
#include "store/store.h"
#include "test.h"

static char store_dir[256];
static char store_db[64]; /* the PostgreSQL database, when on PostgreSQL */

static inline bool store_on_pg(void) {
  const char *b = getenv("GPOOL_TEST_STORE");
  return b && strcmp(b, "pg") == 0;
}

static inline const char *db_path(void) {
  static char p[300];
  if (!store_dir[0]) {
    snprintf(store_dir, sizeof store_dir, "/tmp/gp_store_test_XXXXXX");
    REQUIRE(mkdtemp(store_dir) != NULL);
  }
  snprintf(p, sizeof p, "%s/gpool.db", store_dir);
  return p;
}

/* The store the test writes to: the SQLite file, or the test's PostgreSQL database. */
static inline const char *store_target(void) {
  if (!store_on_pg()) return db_path();
  if (!store_db[0]) snprintf(store_db, sizeof store_db, "%s", pg_new_db());
  return pg_db_url(store_db);
}

static inline int open_test_store(gp_store **s, gp_err *e) { return gp_store_open(store_target(), s, e); }

static inline void remove_dir(void) {
  if (store_db[0]) {
    pg_drop_db(store_db);
    store_db[0] = '\0';
  }
  if (!store_dir[0]) return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", store_dir);
  CHECK_EQ_INT(0, system(cmd));
  store_dir[0] = '\0';
}

#endif
