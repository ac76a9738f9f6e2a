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

const char *gp_store_sqlite_text(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? (const char *)t : "";
}

/* A figure column (used_gpu_s, energy_j): -1 for NULL, not measured. */
static double figure(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_double(st, i);
}

int gp_store_sqlite_read_rows(sqlite_reader *r, const char *sql, int64_t a, int64_t b, const char *user,
                              int (*row)(sqlite3_stmt *st, void *cb, void *ctx), void *cb, void *ctx,
                              gp_err *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
    return gp_store_sqlite_reader_error(r, err, sql);
  sqlite3_bind_int64(st, 1, a);
  sqlite3_bind_int64(st, 2, b);
  if (user) sqlite3_bind_text(st, 3, user, -1, SQLITE_STATIC);
  int rc, ret = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if ((ret = row(st, cb, ctx)) != 0) break;
  if (!ret && rc != SQLITE_DONE) ret = gp_store_sqlite_reader_error(r, err, sql);
  sqlite3_finalize(st);
  return ret;
}

gp_store_interval gp_store_sqlite_interval(sqlite3_stmt *st) {
  return (gp_store_interval){
      .id = sqlite3_column_int64(st, 0), .job_id = sqlite3_column_int64(st, 1),
      .attempt = sqlite3_column_int(st, 2), .task = sqlite3_column_int(st, 3),
      .user = gp_store_sqlite_text(st, 4), .queue = gp_store_sqlite_text(st, 5),
      .node = gp_store_sqlite_text(st, 6), .gpu_uuid = gp_store_sqlite_text(st, 7),
      .model = gp_store_sqlite_text(st, 8), .capacity = gp_store_sqlite_text(st, 9),
      .share = sqlite3_column_double(st, 10), .start = sqlite3_column_int64(st, 11),
      .end = sqlite3_column_int64(st, 12), /* NULL reads as 0: open */
      .used_gpu_s = figure(st, 13), .energy_j = figure(st, 14),
      .service = gp_store_sqlite_text(st, 15)};
}

int gp_store_sqlite_iv_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_interval iv = gp_store_sqlite_interval(st);
  return (*(int (**)(void *, const gp_store_interval *))cb)(ctx, &iv);
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
