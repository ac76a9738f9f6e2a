/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the store tests: a fresh directory under /tmp for the test program (made on
 * first use; each test runs in a process of its own, so each gets its own), the store file
 * in it, and its removal. */
#ifndef GP_TESTS_STORE_UTIL_H
#define GP_TESTS_STORE_UTIL_H

#include "test.h"

static char store_dir[256];

static const char *db_path(void) {
  static char p[300];
  if (!store_dir[0]) {
    snprintf(store_dir, sizeof store_dir, "/tmp/gp_store_test_XXXXXX");
    REQUIRE(mkdtemp(store_dir) != NULL);
  }
  snprintf(p, sizeof p, "%s/gpool.db", store_dir);
  return p;
}

static void remove_dir(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", store_dir);
  CHECK_EQ_INT(0, system(cmd));
}

#endif
