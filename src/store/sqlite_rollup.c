/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's ledger roll-ups (sqlite_rollup.h; docs/accounting.md, "Roll-ups").
 * A report over a year reads ~1,000,000 intervals at ~0.55 µs a row to decode alone; the
 * roll-ups hold the same figures summed by UTC day, so a year's report reads a year of
 * days instead, and only the open intervals and the partial days at its edges raw.
 *
 * The upgrade makes the sums by SQL, one statement per table, from every closed interval;
 * the server's close makes them in C from the job's open intervals (below), by the same
 * rules, which store_rollup_test checks both against the raw intervals. Each
 * interval [start, end) is cut at UTC midnights (a recursive walk over its days); its use
 * and energy go to each day pro rata of the seconds, as the ledger engine splits them. The
 * allocation table cuts each interval again at the node intervals of its node that it
 * overlaps (an open one runs to the job interval's end: the node is still in that state),
 * and sums by the node interval's model, capacity and state. */
#include "store/sqlite_rollup.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    " PRIMARY KEY(day, model, capacity, state)) WITHOUT ROWID;"
    /* Per job and day, for advice (its right-sizing and spot items are per job). */
    "CREATE TABLE IF NOT EXISTS ledger_held_day(day INTEGER NOT NULL, job_id INTEGER NOT NULL,"
    " model TEXT NOT NULL, capacity TEXT NOT NULL, user TEXT NOT NULL, queue TEXT NOT NULL,"
    " gpu_s REAL NOT NULL, used_gpu_s REAL NOT NULL, known_gpu_s REAL NOT NULL,"
    " first_start INTEGER NOT NULL, longest_s INTEGER NOT NULL,"
    " PRIMARY KEY(day, job_id, model, capacity)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS ledger_held_day_user ON ledger_held_day(user, day);";

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

#define ROLL_HELD(SRC)                                                                       \
  "WITH RECURSIVE iv(job_id, user, queue, model, capacity, share, start, e, u) AS (" SRC "),"\
  " d(job_id, user, queue, model, capacity, share, start, e, u, day) AS ("                 \
  "  SELECT *, " DAY_OF("start") " FROM iv WHERE e > start"                                \
  "  UNION ALL SELECT job_id, user, queue, model, capacity, share, start, e, u,"           \
  "  day + 86400 FROM d WHERE day + 86400 < e),"                                          \
  " p AS (SELECT *, min(e, day + 86400) - max(start, day) AS s FROM d)"                   \
  " INSERT INTO ledger_held_day(day, job_id, model, capacity, user, queue, gpu_s,"        \
  " used_gpu_s, known_gpu_s, first_start, longest_s)"                                     \
  " SELECT day, job_id, model, capacity, min(user), min(queue), sum(share * s),"          \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE u * s / (e - start) END),"                        \
  " sum(CASE WHEN u IS NULL THEN 0 ELSE share * s END), min(max(start, day)),"            \
  " max(e - start) FROM p WHERE true GROUP BY day, job_id, model, capacity"               \
  " ON CONFLICT(day, job_id, model, capacity) DO UPDATE SET"                              \
  " gpu_s = gpu_s + excluded.gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,"       \
  " known_gpu_s = known_gpu_s + excluded.known_gpu_s,"                                    \
  " first_start = min(first_start, excluded.first_start),"                                \
  " longest_s = max(longest_s, excluded.longest_s)"

/* The server's close, in C rather than by the statements above: a job's few intervals are
 * summed in memory first (a job's GPUs share their day, user, queue, model and capacity), so
 * a close costs a handful of indexed statements, not a recursive query per table. */
const char gp_store_sqlite_roll_ivs[] =
    "SELECT user, queue, model, capacity, node, share, start, used_gpu_s, energy_j FROM ledger"
    " WHERE job_id = ?1 AND \"end\" IS NULL";
const char gp_store_sqlite_roll_node_ivs[] =
    "SELECT model, capacity, state, start, \"end\" FROM node_ledger WHERE node = ?1"
    " AND start < ?3 AND (\"end\" IS NULL OR \"end\" > ?2)";
const char gp_store_sqlite_roll_add_day[] =
    "INSERT INTO ledger_day(day, user, queue, model, capacity, gpu_s, used_gpu_s, known_gpu_s,"
    " energy_j, energy_known) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    " ON CONFLICT(day, user, queue, model, capacity) DO UPDATE SET"
    " gpu_s = gpu_s + excluded.gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,"
    " known_gpu_s = known_gpu_s + excluded.known_gpu_s, energy_j = energy_j + excluded.energy_j,"
    " energy_known = max(energy_known, excluded.energy_known)";
const char gp_store_sqlite_roll_add_held[] =
    "INSERT INTO ledger_held_day(day, job_id, model, capacity, user, queue, gpu_s, used_gpu_s,"
    " known_gpu_s, first_start, longest_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    " ON CONFLICT(day, job_id, model, capacity) DO UPDATE SET"
    " gpu_s = gpu_s + excluded.gpu_s, used_gpu_s = used_gpu_s + excluded.used_gpu_s,"
    " known_gpu_s = known_gpu_s + excluded.known_gpu_s,"
    " first_start = min(first_start, excluded.first_start),"
    " longest_s = max(longest_s, excluded.longest_s)";
const char gp_store_sqlite_roll_add_alloc[] =
    "INSERT INTO ledger_alloc_day(day, model, capacity, state, gpu_s) VALUES (?1, ?2, ?3, ?4, ?5)"
    " ON CONFLICT(day, model, capacity, state) DO UPDATE SET gpu_s = gpu_s + excluded.gpu_s";

#define DAY_S 86400
#define MAX_PARTS 64   /* sums kept before they are written: more only means more writes */

static int64_t day_of(int64_t t) { return t - (((t % DAY_S) + DAY_S) % DAY_S); }

typedef struct day_sum {
  int64_t day;
  char *user, *queue, *model, *capacity;   /* owned */
  double gpu_s, used, known, energy;
  bool energy_known;
  /* The job's own (ledger_held_day): its first second held that day, its longest interval. */
  int64_t first_start, longest_s;
} day_sum;

typedef struct alloc_sum {
  int64_t day;
  char *model, *capacity, *state;          /* owned */
  double gpu_s;
} alloc_sum;

/* A job's GPUs on one node over one span: the node's states are read once for them all. */
typedef struct span {
  char *node;                              /* owned */
  int64_t start, end;
  double share;
} span;

typedef struct sums {
  sqlite3_stmt *add_day, *add_alloc, *node_ivs, *add_held;
  int64_t job;
  day_sum days[MAX_PARTS];
  alloc_sum allocs[MAX_PARTS];
  span spans[MAX_PARTS];
  int n_days, n_allocs, n_spans;
  int rc;
} sums;

static char *dup(const unsigned char *t) {
  const char *v = t ? (const char *)t : "";
  size_t n = strlen(v) + 1;
  char *c = malloc(n);
  if (c) memcpy(c, v, n);
  return c;
}

static bool same(const char *a, const char *b) { return strcmp(a, b) == 0; }

static void flush_days(sums *m) {
  for (int i = 0; i < m->n_days; i++) {
    day_sum *d = &m->days[i];
    sqlite3_stmt *st = m->add_day;
    sqlite3_bind_int64(st, 1, d->day);
    sqlite3_bind_text(st, 2, d->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, d->queue, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, d->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, d->capacity, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 6, d->gpu_s);
    sqlite3_bind_double(st, 7, d->used);
    sqlite3_bind_double(st, 8, d->known);
    sqlite3_bind_double(st, 9, d->energy);
    sqlite3_bind_int(st, 10, d->energy_known);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && m->rc == SQLITE_OK) m->rc = rc;
    st = m->add_held;
    sqlite3_bind_int64(st, 1, d->day);
    sqlite3_bind_int64(st, 2, m->job);
    sqlite3_bind_text(st, 3, d->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, d->capacity, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, d->user, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, d->queue, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 7, d->gpu_s);
    sqlite3_bind_double(st, 8, d->used);
    sqlite3_bind_double(st, 9, d->known);
    sqlite3_bind_int64(st, 10, d->first_start);
    sqlite3_bind_int64(st, 11, d->longest_s);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && m->rc == SQLITE_OK) m->rc = rc;
    free(d->user), free(d->queue), free(d->model), free(d->capacity);
  }
  m->n_days = 0;
}

static void flush_allocs(sums *m) {
  for (int i = 0; i < m->n_allocs; i++) {
    alloc_sum *a = &m->allocs[i];
    sqlite3_stmt *st = m->add_alloc;
    sqlite3_bind_int64(st, 1, a->day);
    sqlite3_bind_text(st, 2, a->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, a->capacity, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, a->state, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 5, a->gpu_s);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && m->rc == SQLITE_OK) m->rc = rc;
    free(a->model), free(a->capacity), free(a->state);
  }
  m->n_allocs = 0;
}

static day_sum *day_slot(sums *m, int64_t day, sqlite3_stmt *iv) {
  const char *k[4];
  for (int i = 0; i < 4; i++) {
    const unsigned char *t = sqlite3_column_text(iv, i);
    k[i] = t ? (const char *)t : "";
  }
  for (int i = 0; i < m->n_days; i++) {
    day_sum *d = &m->days[i];
    if (d->day == day && same(d->user, k[0]) && same(d->queue, k[1]) && same(d->model, k[2]) &&
        same(d->capacity, k[3]))
      return d;
  }
  if (m->n_days == MAX_PARTS) flush_days(m);
  day_sum *d = &m->days[m->n_days++];
  *d = (day_sum){.day = day, .first_start = INT64_MAX};
  d->user = dup((const unsigned char *)k[0]), d->queue = dup((const unsigned char *)k[1]);
  d->model = dup((const unsigned char *)k[2]), d->capacity = dup((const unsigned char *)k[3]);
  if (!d->user || !d->queue || !d->model || !d->capacity) m->rc = SQLITE_NOMEM;
  return d;
}

static alloc_sum *alloc_slot(sums *m, int64_t day, sqlite3_stmt *n) {
  const char *k[3];
  for (int i = 0; i < 3; i++) {
    const unsigned char *t = sqlite3_column_text(n, i);
    k[i] = t ? (const char *)t : "";
  }
  for (int i = 0; i < m->n_allocs; i++) {
    alloc_sum *a = &m->allocs[i];
    if (a->day == day && same(a->model, k[0]) && same(a->capacity, k[1]) && same(a->state, k[2]))
      return a;
  }
  if (m->n_allocs == MAX_PARTS) flush_allocs(m);
  alloc_sum *a = &m->allocs[m->n_allocs++];
  *a = (alloc_sum){.day = day};
  a->model = dup((const unsigned char *)k[0]), a->capacity = dup((const unsigned char *)k[1]);
  a->state = dup((const unsigned char *)k[2]);
  if (!a->model || !a->capacity || !a->state) m->rc = SQLITE_NOMEM;
  return a;
}

/* The node intervals over each span: the job's GPU-seconds held against each one's model,
 * capacity and state (an open one runs to the span's end). */
static void flush_spans(sums *m) {
  sqlite3_stmt *q = m->node_ivs;
  for (int i = 0; i < m->n_spans; i++) {
    span *sp = &m->spans[i];
    sqlite3_bind_text(q, 1, sp->node, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, sp->start);
    sqlite3_bind_int64(q, 3, sp->end);
    int rc = SQLITE_DONE;
    while (m->rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
      int64_t ns = sqlite3_column_int64(q, 3);
      int64_t ne = sqlite3_column_type(q, 4) == SQLITE_NULL ? sp->end : sqlite3_column_int64(q, 4);
      int64_t a0 = sp->start > ns ? sp->start : ns, b0 = sp->end < ne ? sp->end : ne;
      for (int64_t day = day_of(a0); a0 < b0 && day < b0 && m->rc == SQLITE_OK; day += DAY_S) {
        int64_t a = a0 > day ? a0 : day, b = b0 < day + DAY_S ? b0 : day + DAY_S;
        alloc_sum *al = alloc_slot(m, day, q);
        if (m->rc == SQLITE_OK) al->gpu_s += sp->share * (double)(b - a);
      }
    }
    if (m->rc == SQLITE_OK && rc != SQLITE_DONE) m->rc = rc;
    sqlite3_reset(q);
    free(sp->node);
  }
  m->n_spans = 0;
}

/* One open interval of the job (the current row of `iv`), closing at e. */
static void add_interval(sums *m, sqlite3_stmt *iv, int64_t e) {
  double share = sqlite3_column_double(iv, 5);
  int64_t start = sqlite3_column_int64(iv, 6);
  bool has_u = sqlite3_column_type(iv, 7) != SQLITE_NULL;
  bool has_en = sqlite3_column_type(iv, 8) != SQLITE_NULL;
  double u = sqlite3_column_double(iv, 7), en = sqlite3_column_double(iv, 8);
  if (e <= start) return;
  for (int64_t day = day_of(start); day < e; day += DAY_S) {
    int64_t a = start > day ? start : day, b = e < day + DAY_S ? e : day + DAY_S;
    int64_t sec = b - a;
    day_sum *d = day_slot(m, day, iv);
    if (m->rc != SQLITE_OK) return;
    d->gpu_s += share * (double)sec;
    if (a < d->first_start) d->first_start = a;
    if (e - start > d->longest_s) d->longest_s = e - start;
    if (has_u) {
      d->used += u * (double)sec / (double)(e - start);
      d->known += share * (double)sec;
    }
    if (has_en) {
      d->energy += en * (double)sec / (double)(e - start);
      d->energy_known = true;
    }
  }
  /* Allocation against the node's states, read once per (node, span) of the job. */
  const char *node = (const char *)sqlite3_column_text(iv, 4);
  node = node ? node : "";
  for (int i = 0; i < m->n_spans; i++)
    if (m->spans[i].start == start && m->spans[i].end == e && same(m->spans[i].node, node)) {
      m->spans[i].share += share;
      return;
    }
  if (m->n_spans == MAX_PARTS) flush_spans(m);
  span *sp = &m->spans[m->n_spans++];
  *sp = (span){.node = dup((const unsigned char *)node), .start = start, .end = e, .share = share};
  if (!sp->node) m->rc = SQLITE_NOMEM;
}

int gp_store_sqlite_rollup_close(sqlite3_stmt *const st[5], int64_t job, int64_t end) {
  sums m = {.add_day = st[2], .add_alloc = st[3], .node_ivs = st[1], .add_held = st[4],
            .job = job, .rc = SQLITE_OK};
  sqlite3_stmt *iv = st[0];
  sqlite3_bind_int64(iv, 1, job);
  int rc = SQLITE_DONE;
  while (m.rc == SQLITE_OK && (rc = sqlite3_step(iv)) == SQLITE_ROW) {
    int64_t start = sqlite3_column_int64(iv, 6);
    add_interval(&m, iv, end > start ? end : start);
  }
  if (m.rc == SQLITE_OK && rc != SQLITE_DONE) m.rc = rc;
  sqlite3_reset(iv);
  flush_spans(&m);
  flush_days(&m);
  flush_allocs(&m);
  return m.rc;
}

/* Every closed interval, for the upgrade. */
#define CLOSED "FROM ledger WHERE \"end\" IS NOT NULL"
static const char build_sql[] =
    "DELETE FROM ledger_day; DELETE FROM ledger_alloc_day;" ROLL_DAYS(
        "SELECT user, queue, model, capacity, share, start, \"end\", used_gpu_s, energy_j "
        CLOSED) ";" ROLL_ALLOC("SELECT node, share, start, \"end\" " CLOSED) ";"
    "DELETE FROM ledger_held_day;" ROLL_HELD(
        "SELECT job_id, user, queue, model, capacity, share, start, \"end\", used_gpu_s "
        CLOSED) ";";

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

typedef int (*job_day_cb)(void *ctx, const gp_store_job_day *d);
typedef int (*alloc_day_cb)(void *ctx, const gp_store_alloc_day *d);

static int job_day_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_job_day d = {
      .day = sqlite3_column_int64(st, 0), .user = gp_store_sqlite_text(st, 1),
      .queue = gp_store_sqlite_text(st, 2), .model = gp_store_sqlite_text(st, 3),
      .capacity = gp_store_sqlite_text(st, 4), .gpu_s = sqlite3_column_double(st, 5),
      .used_gpu_s = sqlite3_column_double(st, 6), .known_gpu_s = sqlite3_column_double(st, 7),
      .energy_j = sqlite3_column_double(st, 8), .energy_known = sqlite3_column_int(st, 9) != 0};
  return (*(job_day_cb *)cb)(ctx, &d);
}

static int alloc_day_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_alloc_day d = {.day = sqlite3_column_int64(st, 0), .model = gp_store_sqlite_text(st, 1),
                          .capacity = gp_store_sqlite_text(st, 2), .state = gp_store_sqlite_text(st, 3),
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
  return gp_store_sqlite_read_rows((sqlite_reader *)base, sql, day_from, day_to, user, job_day_row,
                                   &cb, ctx, err);
}

int gp_store_sqlite_reader_alloc_days(gp_store_reader *base, int64_t day_from, int64_t day_to,
                                      int (*cb)(void *ctx, const gp_store_alloc_day *d),
                                      void *ctx, gp_err *err) {
  if (day_from >= day_to) return 0;
  return gp_store_sqlite_read_rows((sqlite_reader *)base,
                                   "SELECT day, model, capacity, state, gpu_s FROM ledger_alloc_day"
                                   " WHERE day >= ?1 AND day < ?2 ORDER BY day",
                                   day_from, day_to, NULL, alloc_day_row, &cb, ctx, err);
}

int gp_store_sqlite_reader_open_intervals(gp_store_reader *base, int64_t to, const char *user,
                                          int (*cb)(void *ctx, const gp_store_interval *iv),
                                          void *ctx, gp_err *err) {
  /* The end index holds the open ones (end NULL) first. */
  return gp_store_sqlite_read_rows((sqlite_reader *)base,
                                   "SELECT " GP_STORE_SQLITE_IV_COLS " FROM ledger INDEXED BY ledger_end"
                                   " WHERE \"end\" IS NULL AND start < ?2 AND (?3 IS NULL OR user = ?3)"
                                   " ORDER BY start, id",
                                   0, to, user, gp_store_sqlite_iv_row, &cb, ctx, err);
}

typedef int (*held_day_cb)(void *ctx, const gp_store_held_day *d);

static int held_day_row(sqlite3_stmt *st, void *cb, void *ctx) {
  gp_store_held_day d = {
      .day = sqlite3_column_int64(st, 0), .job_id = sqlite3_column_int64(st, 1),
      .model = gp_store_sqlite_text(st, 2), .capacity = gp_store_sqlite_text(st, 3),
      .user = gp_store_sqlite_text(st, 4), .queue = gp_store_sqlite_text(st, 5),
      .gpu_s = sqlite3_column_double(st, 6), .used_gpu_s = sqlite3_column_double(st, 7),
      .known_gpu_s = sqlite3_column_double(st, 8), .first_start = sqlite3_column_int64(st, 9),
      .longest_s = sqlite3_column_int64(st, 10)};
  return (*(held_day_cb *)cb)(ctx, &d);
}

#define HELD_COLS \
  "day, job_id, model, capacity, user, queue, gpu_s, used_gpu_s, known_gpu_s, first_start," \
  " longest_s"

int gp_store_sqlite_reader_held_days(gp_store_reader *base, int64_t day_from, int64_t day_to,
                                     const char *user,
                                     int (*cb)(void *ctx, const gp_store_held_day *d),
                                     void *ctx, gp_err *err) {
  if (day_from >= day_to) return 0;
  const char *sql = user ? "SELECT " HELD_COLS " FROM ledger_held_day INDEXED BY"
                           " ledger_held_day_user WHERE user = ?3 AND day >= ?1 AND day < ?2"
                           " ORDER BY day"
                         : "SELECT " HELD_COLS " FROM ledger_held_day WHERE day >= ?1"
                           " AND day < ?2 ORDER BY day";
  return gp_store_sqlite_read_rows((sqlite_reader *)base, sql, day_from, day_to, user, held_day_row,
                                   &cb, ctx, err);
}
