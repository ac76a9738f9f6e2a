/* SPDX-License-Identifier: Apache-2.0 */
/* Opens and closes the SQLite backend's read-only handles (sqlite_reader.h). The queries
 * readers run live beside the data they read (the ledger, job history). */
#include "store/sqlite_reader.h"
#include "store/sqlite_rollup.h"

#include <stdio.h>
#include <stdlib.h>

#include "util/mem.h"

int gp_store_sqlite_reader_error(sqlite_reader *r, gp_err *err, const char *what) {
  return gp_err_set(err, GP_EIO, r->path, 0, NULL, "reading the store failed: %s (%s)",
                    sqlite3_errmsg(r->db), what);
}

static void sqlite_reader_close(gp_store_reader *b) {
  sqlite_reader *r = (sqlite_reader *)b;
  sqlite3_close(r->db);
  free(r);
}

static const gp_store_reader_ops sqlite_reader_ops = {
    gp_store_sqlite_reader_intervals, gp_store_sqlite_reader_node_intervals,
    gp_store_sqlite_reader_job, gp_store_sqlite_reader_jobs, sqlite_reader_close,
    gp_store_sqlite_reader_snapshot, gp_store_sqlite_reader_job_days,
    gp_store_sqlite_reader_alloc_days, gp_store_sqlite_reader_open_intervals,
    gp_store_sqlite_reader_held_days,
};

int gp_store_sqlite_reader_open(const char *path, gp_store_reader **ret, gp_err *err) {
  sqlite_reader *r = gp_xcalloc(1, sizeof *r);
  r->base.ops = &sqlite_reader_ops;
  snprintf(r->path, sizeof r->path, "%s", path);
  /* Read-only and without the shared cache: the writer's transactions are never blocked
   * by a reader, and a reader sees the last committed state when its query starts. */
  if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    int rc = gp_err_set(err, GP_EIO, path, 0, NULL, "cannot open the store to read: %s",
                        r->db ? sqlite3_errmsg(r->db) : "out of memory");
    sqlite_reader_close(&r->base);
    return rc;
  }
  sqlite3_busy_timeout(r->db, 5000);
  *ret = &r->base;
  return 0;
}
