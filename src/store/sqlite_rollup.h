/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's ledger roll-ups (store.h, gp_store_job_day): their tables, the two
 * statements that add a job's intervals to them as they close, the upgrade that builds them
 * from a store's closed intervals, and the reads. Shared by the SQLite backend's files. */
#ifndef GP_STORE_SQLITE_ROLLUP_H
#define GP_STORE_SQLITE_ROLLUP_H

#include <sqlite3.h>

#include "store/reader.h"

/* The roll-up tables and their indexes (idempotent). */
extern const char gp_store_sqlite_rollup_schema[];
/* The statements of a close, prepared by the store: the job's open intervals, a node's
 * intervals over a span, and the two upserts. */
extern const char gp_store_sqlite_roll_ivs[];
extern const char gp_store_sqlite_roll_node_ivs[];
extern const char gp_store_sqlite_roll_add_day[];
extern const char gp_store_sqlite_roll_add_alloc[];
extern const char gp_store_sqlite_roll_add_held[];
/* Adds the job's open intervals, as closed at `end`, to the roll-ups, through `st` (the five
 * statements above, in that order); run in the transaction that closes them, before the
 * statement that does. Returns SQLITE_OK or SQLite's code. */
int gp_store_sqlite_rollup_close(sqlite3_stmt *const st[5], int64_t job, int64_t end);
/* Builds the roll-ups from every closed interval (a store from before them), inside the
 * caller's transaction; returns SQLITE_OK or SQLite's code with *msg set (sqlite3_free). */
int gp_store_sqlite_rollup_build(sqlite3 *db, char **msg);

/* The reads (reader.h). */
int gp_store_sqlite_reader_snapshot(gp_store_reader *base, bool on, gp_err *err);
int gp_store_sqlite_reader_job_days(gp_store_reader *base, int64_t day_from, int64_t day_to,
                                    const char *user,
                                    int (*cb)(void *ctx, const gp_store_job_day *d), void *ctx,
                                    gp_err *err);
int gp_store_sqlite_reader_alloc_days(gp_store_reader *base, int64_t day_from, int64_t day_to,
                                      int (*cb)(void *ctx, const gp_store_alloc_day *d),
                                      void *ctx, gp_err *err);
int gp_store_sqlite_reader_open_intervals(gp_store_reader *base, int64_t to, const char *user,
                                          int (*cb)(void *ctx, const gp_store_interval *iv),
                                          void *ctx, gp_err *err);
int gp_store_sqlite_reader_held_days(gp_store_reader *base, int64_t day_from, int64_t day_to,
                                     const char *user,
                                     int (*cb)(void *ctx, const gp_store_held_day *d),
                                     void *ctx, gp_err *err);

#endif
