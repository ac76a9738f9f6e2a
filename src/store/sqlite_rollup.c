/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's ledger roll-ups (sqlite_rollup.h; docs/accounting.md, "Roll-ups").
 * A report over a year reads ~1,000,000 intervals at ~0.55 µs a row to decode alone; the
 * roll-ups hold the same figures summed by UTC day, so a year's report reads a year of
 * days instead, and only the open intervals and the partial days at its edges raw.
 *
 * The sums are made by SQL, one statement per table, from the intervals being closed (the
 * server's close) or from every closed interval (the upgrade): the same text in both, so a
 * store upgraded and a store that wrote its roll-ups as it went hold the same figures. Each
 * interval [start, end) is cut at UTC midnights (a recursive walk over its days); its use
 * and energy go to each day pro rata of the seconds, as the ledger engine splits them. The
 * allocation table cuts each interval again at the node intervals of its node that it
 * overlaps (an open one runs to the job interval's end: the node is still in that state),
 * and sums by the node interval's model, capacity and state. */
#include "store/sqlite_rollup.h"

#include <stdbool.h>
#include <stddef.h>

#include "store/sqlite_reader.h"

const char gp_store_sqlite_rollup_schema[] =
    "CREATE TABLE IF NOT EXISTS ledger_day(day INTEGER NOT NULL, user TEXT NOT NULL,"
    " queue TEXT NOT NULL, model TEXT NOT NULL, capacity TEXT NOT NULL, gpu_s REAL NOT NULL,"
    " used_gpu_s REAL NOT NULL, known_gpu_s REAL NOT NULL, energy_j REAL NOT NULL,"
    " energy_known INTEGER NOT NULL,"
    " PRIMARY KEY(day, user, queue, model, capacity)) WITHOUT ROWID;"
    /* A user's report reads that user's rows, not every row filtered. */
    "CREATE INDEX IF NOT EXISTS ledger_day_user ON ledger_day(user, day);"
    "CREATE TABLE IF NOT EXISTS ledger_alloc_day(day INTEGER NOT NULL, model TEXT NOT NULL,"
    " capacity TEXT NOT NULL, state TEXT NOT NULL, gpu_s REAL NOT NULL,"
    " PRIMARY KEY(day, model, capacity, state)) WITHOUT ROWID;";

/* A day's first second (floor, also before 1970). */
#define DAY_OF(t) "((" t ") - ((((" t ") % 86400) + 86400) % 86400))"

#define ROLL_DAYS(SRC)                                                                       \
  "WITH RECURSIVE iv(user, queue, model, capacity, share, start, e, u, en) AS (" SRC "),"  \
  " d(user, queue, model, capacity, share, start, e, u, en, day) AS ("                     \
  "  SELECT *, " DAY_OF("start") " FROM iv WHERE e > start"                                \
  "  UNION ALL SELECT user, queue, model, capacity, share, start, e, u, en, day + 86400"   \
  "  FROM d WHERE day + 86400 < e),"                                                      \
  " p AS (SELECT *, min(e, day + 86400) - max(start, day) AS s FROM d)"                   \
  " INSERT INTO ledger_day(day, user, queue, model, capacity, gpu_s, used_gpu_s,"         \
  " known_gpu_s, energy_j, energy_known)"                                                 \
  " SELECT day, user, queue, model, capacity, sum(share * s),"                            \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE u * s / (e - start) END),"                        \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE share * s END),"                                  \
  " sum(CASE WHEN en IS NULL THEN 0 ELSE en * s / (e - start) END),"                      \
  " max(CASE WHEN en IS NULL THEN 0 ELSE 1 END)"                                          \
  " FROM p WHERE true GROUP BY day, user, queue, model, capacity"                         \
  " ON CONFLICT(day, user, queue, model, capacity) DO UPDATE SET"                         \
  " gpu_s = gpu_s + excluded.gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,"       \
  " known_gpu_s = known_gpu_s + excluded.known_gpu_s,"                                    \
  " energy_j = energy_j + excluded.energy_j,"                                             \
  " energy_known = max(energy_known, excluded.energy_known)"

#define ROLL_ALLOC(SRC)                                                                      \
  "WITH RECURSIVE iv(node, share, start, e) AS (" SRC "),"                                 \
  " p(model, capacity, state, share, a, b) AS (SELECT n.model, n.capacity, n.state,"       \
  "  iv.share, max(iv.start, n.start), min(iv.e, coalesce(n.\"end\", iv.e))"              \
  "  FROM iv JOIN node_ledger n ON n.node = iv.node AND n.start < iv.e"                   \
  "  AND (n.\"end\" IS NULL OR n.\"end\" > iv.start) WHERE iv.e > iv.start),"             \
  " d(model, capacity, state, share, a, b, day) AS ("                                      \
  "  SELECT *, " DAY_OF("a") " FROM p WHERE b > a"                                         \
  "  UNION ALL SELECT model, capacity, state, share, a, b, day + 86400"                   \
  "  FROM d WHERE day + 86400 < b)"                                                       \
  " INSERT INTO ledger_alloc_day(day, model, capacity, state, gpu_s)"                     \
  " SELECT day, model, capacity, state, sum(share * (min(b, day + 86400) - max(a, day)))" \
  " FROM d WHERE true GROUP BY day, model, capacity, state"                               \
  " ON CONFLICT(day, model, capacity, state) DO UPDATE SET gpu_s = gpu_s + excluded.gpu_s"

/* The job's open intervals as they close at ?2 (the close clamps end to start). */
#define CLOSING "FROM ledger WHERE job_id = ?1 AND \"end\" IS NULL"
const char gp_store_sqlite_roll_days[] = ROLL_DAYS(
    "SELECT user, queue, model, capacity, share, start, max(start, ?2), used_gpu_s, energy_j "
    CLOSING);
const char gp_store_sqlite_roll_alloc[] =
    ROLL_ALLOC("SELECT node, share, start, max(start, ?2) " CLOSING);

/* Every closed interval, for the upgrade. */
#define CLOSED "FROM ledger WHERE \"end\" IS NOT NULL"
static const char build_sql[] =
    "DELETE FROM ledger_day; DELETE FROM ledger_alloc_day;" ROLL_DAYS(
        "SELECT user, queue, model, capacity, share, start, \"end\", used_gpu_s, energy_j "
        CLOSED) ";" ROLL_ALLOC("SELECT node, share, start, \"end\" " CLOSED) ";";

int gp_store_sqlite_rollup_build(sqlite3 *db, char **msg) {
  return sqlite3_exec(db, build_sql, NULL, NULL, msg);
}

int gp_store_sqlite_reader_snapshot(gp_store_reader *base, bool on, gp_err *err) {
  sqlite_reader *r = (sqlite_reader *)base;
  if (!on) {
    if (!sqlite3_get_autocommit(r->db)) sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
    return 0;
  }
  /* A deferred read transaction: its snapshot is taken by the first read, and every read
   * after it sees the same one (WAL). */
  if (sqlite3_get_autocommit(r->db) && sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
    return gp_store_sqlite_reader_error(r, err, "BEGIN");
  return 0;
}

static const char *text_or_empty(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? (const char *)t : "";
}

/* Prepares `sql`, binds from, to and (when not NULL) user as ?1 ?2 ?3, and hands each row to
 * `row`. */
static int read_rows(sqlite_reader *r, const char *sql, int64_t a, int64_t b, const char *user,
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

typedef int (*job_day_cb)(void *ctx, const gp_store_job_day *d);
typedef int (*alloc_day_cb)(void *ctx, const gp_store_alloc_day *d);
typedef int (*iv_cb)(void *ctx, const gp_store_interval *iv);

static int job_day_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_job_day d = {
      .day = sqlite3_column_int64(st, 0), .user = text_or_empty(st, 1),
      .queue = text_or_empty(st, 2), .model = text_or_empty(st, 3),
      .capacity = text_or_empty(st, 4), .gpu_s = sqlite3_column_double(st, 5),
      .used_gpu_s = sqlite3_column_double(st, 6), .known_gpu_s = sqlite3_column_double(st, 7),
      .energy_j = sqlite3_column_double(st, 8), .energy_known = sqlite3_column_int(st, 9) != 0};
  return (*(job_day_cb *)cb)(ctx, &d);
}

static int alloc_day_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_alloc_day d = {.day = sqlite3_column_int64(st, 0), .model = text_or_empty(st, 1),
                          .capacity = text_or_empty(st, 2), .state = text_or_empty(st, 3),
                          .gpu_s = sqlite3_column_double(st, 4)};
  return (*(alloc_day_cb *)cb)(ctx, &d);
}

#define DAY_COLS \
  "day, user, queue, model, capacity, gpu_s, used_gpu_s, known_gpu_s, energy_j, energy_known"

int gp_store_sqlite_reader_job_days(gp_store_reader *base, int64_t day_from, int64_t day_to,
                                    const char *user,
                                    int (*cb)(void *ctx, const gp_store_job_day *d), void *ctx,
                                    gp_err *err) {
  if (day_from >= day_to) return 0;
  const char *sql = user ? "SELECT " DAY_COLS " FROM ledger_day INDEXED BY ledger_day_user"
                           " WHERE user = ?3 AND day >= ?1 AND day < ?2 ORDER BY day"
                         : "SELECT " DAY_COLS " FROM ledger_day WHERE day >= ?1 AND day < ?2"
                           " ORDER BY day";
  return read_rows((sqlite_reader *)base, sql, day_from, day_to, user, job_day_row, &cb, ctx,
                   err);
}

int gp_store_sqlite_reader_alloc_days(gp_store_reader *base, int64_t day_from, int64_t day_to,
                                      int (*cb)(void *ctx, const gp_store_alloc_day *d),
                                      void *ctx, gp_err *err) {
  if (day_from >= day_to) return 0;
  return read_rows((sqlite_reader *)base,
                   "SELECT day, model, capacity, state, gpu_s FROM ledger_alloc_day"
                   " WHERE day >= ?1 AND day < ?2 ORDER BY day",
                   day_from, day_to, NULL, alloc_day_row, &cb, ctx, err);
}

static double figure(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_double(st, i);
}

static int open_iv_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_interval iv = {
      .id = sqlite3_column_int64(st, 0), .job_id = sqlite3_column_int64(st, 1),
      .attempt = sqlite3_column_int(st, 2), .task = sqlite3_column_int(st, 3),
      .user = text_or_empty(st, 4), .queue = text_or_empty(st, 5),
      .node = text_or_empty(st, 6), .gpu_uuid = text_or_empty(st, 7),
      .model = text_or_empty(st, 8), .capacity = text_or_empty(st, 9),
      .share = sqlite3_column_double(st, 10), .start = sqlite3_column_int64(st, 11), .end = 0,
      .used_gpu_s = figure(st, 12), .energy_j = figure(st, 13)};
  return (*(iv_cb *)cb)(ctx, &iv);
}

int gp_store_sqlite_reader_open_intervals(gp_store_reader *base, int64_t to, const char *user,
                                          int (*cb)(void *ctx, const gp_store_interval *iv),
                                          void *ctx, gp_err *err) {
  /* The end index holds the open ones (end NULL) first. */
  return read_rows((sqlite_reader *)base,
                   "SELECT id, job_id, attempt, task, user, queue, node, gpu_uuid, model,"
                   " capacity, share, start, used_gpu_s, energy_j FROM ledger INDEXED BY"
                   " ledger_end WHERE \"end\" IS NULL AND start < ?2 AND ?1 = ?1"
                   " AND (?3 IS NULL OR user = ?3) ORDER BY start, id",
                   0, to, user, open_iv_row, &cb, ctx, err);
}
