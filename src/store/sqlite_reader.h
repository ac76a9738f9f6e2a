/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's read-only handle (store.h, gp_store_reader): a second connection to
 * the database file, opened read-only, that readers on other threads query while the
 * writer carries on. Shared by the files of the SQLite backend only. */
#ifndef GP_STORE_SQLITE_READER_H
#define GP_STORE_SQLITE_READER_H

#include <sqlite3.h>

#include "store/store.h"

/* When a job ended, from its document (null while it is active, or for a document that
 * is not JSON: the store keeps what it is given); the jobs_ended index is on this very
 * expression, so queries must spell it the same way to use it. */
#define GP_STORE_ENDED_AT "(CASE WHEN json_valid(doc) THEN json_extract(doc, '$.ended_at') END)"

struct gp_store_reader {
  sqlite3 *db;
  char path[512];
};

/* Opens a reader on the database at `path`. */
int gp_store_sqlite_reader_open(const char *path, gp_store_reader **ret, gp_err *err);
/* Fills *err from the reader's last SQLite failure; returns GP_EIO. */
int gp_store_sqlite_reader_error(gp_store_reader *r, gp_err *err, const char *what);

#endif
