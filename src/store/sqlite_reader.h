/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's read-only handle (store.h, gp_store_reader): a second connection to
 * the database file, opened read-only, that readers on other threads query while the
 * writer carries on. Shared by the files of the SQLite backend only. */
#ifndef GP_STORE_SQLITE_READER_H
#define GP_STORE_SQLITE_READER_H

#include <sqlite3.h>

#include "store/reader.h"

/* When a job ended, from its document (null while it is active, or for a document that
 * is not JSON: the store keeps what it is given); the jobs_ended index is on this very
 * expression, so queries must spell it the same way to use it. */
#define GP_STORE_ENDED_AT "(CASE WHEN json_valid(doc) THEN json_extract(doc, '$.ended_at') END)"

typedef struct sqlite_reader {
  gp_store_reader base;
  sqlite3 *db;
  char path[512];
} sqlite_reader;

/* Opens a reader on the database at `path`. */
int gp_store_sqlite_reader_open(const char *path, gp_store_reader **ret, gp_err *err);
/* Fills *err from the reader's last SQLite failure; returns GP_EIO. */
int gp_store_sqlite_reader_error(sqlite_reader *r, gp_err *err, const char *what);

/* A text column, "" for NULL. */
const char *gp_store_sqlite_text(sqlite3_stmt *st, int i);

/* Prepares `sql`, binds a, b and (when not NULL) user as ?1 ?2 ?3, and hands each row to
 * `row` with `cb` and `ctx`, stopping at the first non-zero it returns (returned). */
int gp_store_sqlite_read_rows(sqlite_reader *r, const char *sql, int64_t a, int64_t b, const char *user,
                              int (*row)(sqlite3_stmt *st, void *cb, void *ctx), void *cb, void *ctx,
                              gp_err *err);

/* The ledger's columns as every read selects them; the interval a row of them makes (the
 * end NULL reads as 0: open; its strings valid until the next step); and the row for
 * gp_store_sqlite_read_rows that hands it to `cb`, which points at an
 * int (*)(void *ctx, const gp_store_interval *iv). */
#define GP_STORE_SQLITE_IV_COLS                                                            \
  "id, job_id, attempt, task, user, queue, node, gpu_uuid, model, capacity, share, start, " \
  "\"end\", used_gpu_s, energy_j, service"
gp_store_interval gp_store_sqlite_interval(sqlite3_stmt *st);
int gp_store_sqlite_iv_row(sqlite3_stmt *st, void *cb, void *ctx);

/* The reads (reader.h), in sqlite_ledger.c and sqlite_history.c. */
int gp_store_sqlite_reader_intervals(gp_store_reader *base, int64_t from, int64_t to,
                                     const char *user,
                                     int (*cb)(void *ctx, const gp_store_interval *iv),
                                     void *ctx, gp_err *err);
int gp_store_sqlite_reader_node_intervals(gp_store_reader *base, int64_t from, int64_t to,
                                          int (*cb)(void *ctx, const gp_store_node_interval *iv),
                                          void *ctx, gp_err *err);
int gp_store_sqlite_reader_job(gp_store_reader *base, int64_t id,
                               int (*job)(void *ctx, const gp_store_job *row),
                               int (*event)(void *ctx, const gp_store_event *row), void *ctx,
                               gp_err *err);
int gp_store_sqlite_reader_jobs(gp_store_reader *base, const gp_store_job_filter *f,
                                int64_t after_ended_at, int64_t after_id, int limit,
                                int (*cb)(void *ctx, const gp_store_job *row, int64_t ended_at),
                                void *ctx, gp_err *err);

#endif
