/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's ledger reads (store.h, gp_store_reader_intervals and
 * gp_store_reader_node_intervals): range reads over the `ledger` and `node_ledger` tables
 * on a reader's connection, for reports on HTTP threads. A year of history is about a
 * million rows, so each read selects only the columns it hands on, prepares its statements
 * once per call and never sorts the whole range. */
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "store/sqlite_reader.h"
#include "store/store.h"

/* A range read in two parts, so that each uses an index and the rows come in start order
 * without sorting the whole range: first the intervals that started before `from` and run
 * into it, then those that start inside [from, to) (read in order from ledger_start).
 * The first part scans one of the two range indexes (each carries the other bound, so the
 * scan never touches the table for a row it skips): the start index up to `from` when
 * `from` lies in the older half of the history, else the end index from `from` on; a
 * month at either end of a year then scans a month's worth of index, and no range scans
 * more than half of it. */
#define IV_COLS GP_STORE_SQLITE_IV_COLS
#define IV_USER " AND (?3 IS NULL OR user = ?3)"
static const char *const iv_before_by_start =
    "SELECT " IV_COLS " FROM ledger INDEXED BY ledger_start WHERE start < ?1 AND start < ?2"
    " AND (\"end\" > ?1 OR \"end\" IS NULL)" IV_USER " ORDER BY start, \"end\", id";
static const char *const iv_before_by_end =
    "SELECT " IV_COLS " FROM ledger INDEXED BY ledger_end WHERE"
    " ((\"end\" > ?1 AND start < ?1) OR (\"end\" IS NULL AND start < ?1)) AND +start < ?2"
    IV_USER " ORDER BY +start, id";
static const char *const iv_inside =
    "SELECT " IV_COLS " FROM ledger WHERE start >= ?1 AND start < ?2" IV_USER
    " ORDER BY start, \"end\", id";
#define NODE_COLS "id, node, model, capacity, state, gpus, start, \"end\""
/* Node intervals change a few times a day per node: the simple form suffices. */
static const char *const node_iv_before =
    "SELECT " NODE_COLS " FROM node_ledger WHERE (\"end\" > ?1 OR \"end\" IS NULL)"
    " AND +start < ?1 AND +start < ?2 ORDER BY +start, id";
static const char *const node_iv_inside =
    "SELECT " NODE_COLS " FROM node_ledger WHERE start >= ?1 AND start < ?2 ORDER BY start, id";

typedef int (*node_iv_cb)(void *ctx, const gp_store_node_interval *iv);

static int node_iv_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_node_interval iv = {
      .id = sqlite3_column_int64(st, 0), .node = gp_store_sqlite_text(st, 1),
      .model = gp_store_sqlite_text(st, 2), .capacity = gp_store_sqlite_text(st, 3),
      .state = gp_store_sqlite_text(st, 4), .gpus = sqlite3_column_int(st, 5),
      .start = sqlite3_column_int64(st, 6), .end = sqlite3_column_int64(st, 7)};
  return (*(node_iv_cb *)cb)(ctx, &iv);
}

/* Whether `from` lies in the older half of the ledger's starts (two index look-ups). */
static bool from_in_older_half(sqlite_reader *r, int64_t from) {
  sqlite3_stmt *st = NULL;
  bool older = true;
  if (sqlite3_prepare_v2(r->db, "SELECT (SELECT min(start) FROM ledger),"
                                " (SELECT max(start) FROM ledger)", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    int64_t lo = sqlite3_column_int64(st, 0), hi = sqlite3_column_int64(st, 1);
    older = from - lo <= hi - from;
  }
  sqlite3_finalize(st);
  return older;
}

/* Runs both parts of a range read, each prepared once per call. */
static int range_read(sqlite_reader *r, const char *const sql[2], int64_t from, int64_t to,
                      const char *user, int (*row)(sqlite3_stmt *st, void *cb, void *ctx),
                      void *cb, void *ctx, gp_err *err) {
  int ret = 0;
  for (int part = 0; part < 2 && !ret; part++)
    ret = gp_store_sqlite_read_rows(r, sql[part], from, to, user, row, cb, ctx, err);
  return ret;
}

int gp_store_sqlite_reader_intervals(gp_store_reader *base, int64_t from, int64_t to,
                                     const char *user,
                                     int (*cb)(void *ctx, const gp_store_interval *iv),
                                     void *ctx, gp_err *err) {
  sqlite_reader *r = (sqlite_reader *)base;
  if (from >= to) return 0;
  const char *sql[2] = {from_in_older_half(r, from) ? iv_before_by_start : iv_before_by_end,
                        iv_inside};
  return range_read(r, sql, from, to, user, gp_store_sqlite_iv_row, &cb, ctx, err);
}

int gp_store_sqlite_reader_node_intervals(gp_store_reader *base, int64_t from, int64_t to,
                                          int (*cb)(void *ctx, const gp_store_node_interval *iv),
                                          void *ctx, gp_err *err) {
  sqlite_reader *r = (sqlite_reader *)base;
  if (from >= to) return 0;
  const char *sql[2] = {node_iv_before, node_iv_inside};
  return range_read(r, sql, from, to, NULL, node_iv_row, &cb, ctx, err);
}
