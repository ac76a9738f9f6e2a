/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend's readers (store.h, gp_store_reader; reader.h): each with its own
 * connection, so a report or a history page on an HTTP thread never waits for the
 * writer's transaction, nor the writer for it. The queries return what sqlite_ledger.c
 * and sqlite_history.c return, in the same order. Rows come through a cursor, a batch at
 * a time, inside one REPEATABLE READ transaction: a year of ledger never sits in memory
 * at once, and a callback may read a job whole (gp_store_reader_job on the same reader)
 * between two batches and see what the list saw. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg.h"
#include "store/reader.h"
#include "util/mem.h"

#define BATCH "500"

typedef struct pg_reader {
  gp_store_reader base;
  pg_store s;     /* the connection, with pg.h's helpers */
  int cursors;    /* cursors open now (a callback may open one inside another) */
} pg_reader;

static pg_reader *r_of(gp_store_reader *b) { return (pg_reader *)b; }

/* Hands one row of `res` to the caller's callback; nonzero stops the read with it. */
typedef int (*row_fn)(PGresult *res, int row, void *ctx);

static const char *txt(PGresult *r, int row, int i) { return PQgetvalue(r, row, i); }
static int64_t i64(PGresult *r, int row, int i) { return strtoll(PQgetvalue(r, row, i), NULL, 10); }
static double figure(PGresult *r, int row, int i) {
  return PQgetisnull(r, row, i) ? -1 : strtod(PQgetvalue(r, row, i), NULL);
}

/* Opens a REPEATABLE READ transaction unless one is open; *own says whether to end it. */
static int begin_read(pg_reader *r, bool *own, gp_err *err) {
  *own = false;
  if (PQtransactionStatus(r->s.conn) == PQTRANS_INTRANS) return 0;
  int rc = gp_store_pg_ensure(&r->s, err);
  if (rc) return rc;
  if (PQtransactionStatus(r->s.conn) != PQTRANS_IDLE) PQclear(PQexec(r->s.conn, "ROLLBACK"));
  rc = gp_store_pg_exec(&r->s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, err);
  *own = rc == 0;
  return rc;
}

static void end_read(pg_reader *r, bool own) {
  if (own && PQstatus(r->s.conn) == CONNECTION_OK) PQclear(PQexec(r->s.conn, "ROLLBACK"));
}

/* Runs `sql` through a cursor, handing each row to `fn`; returns 0 at the end, fn's
 * nonzero answer when it stopped the read, or GP_E* when the database failed. */
static int each_row(pg_reader *r, const char *sql, int n, const char *const *params, row_fn fn,
                    void *ctx, gp_err *err) {
  bool own;
  int ret = begin_read(r, &own, err);
  if (ret) return ret;
  char name[32], declare[2048], fetch[64], close_sql[48];
  snprintf(name, sizeof name, "gp_read_%d", r->cursors);
  if (snprintf(declare, sizeof declare, "DECLARE %s NO SCROLL CURSOR FOR %s", name, sql) >=
      (int)sizeof declare) {
    end_read(r, own);
    return gp_err_set(err, GP_ELIMIT, r->s.shown, 0, NULL, "query too long: %s", sql);
  }
  snprintf(fetch, sizeof fetch, "FETCH " BATCH " FROM %s", name);
  snprintf(close_sql, sizeof close_sql, "CLOSE %s", name);
  if ((ret = gp_store_pg_exec(&r->s, declare, n, params, err)) != 0) {
    end_read(r, own);
    return ret;
  }
  r->cursors++;
  for (bool more = true; more && !ret;) {
    PGresult *res = gp_store_pg_query(&r->s, fetch, 0, NULL, err);
    if (!res) {
      ret = r->s.code;
      break;
    }
    int rows = PQntuples(res);
    more = rows > 0;
    for (int i = 0; i < rows && !ret; i++) ret = fn(res, i, ctx);
    PQclear(res);
  }
  r->cursors--;
  if (PQtransactionStatus(r->s.conn) == PQTRANS_INTRANS) PQclear(PQexec(r->s.conn, close_sql));
  end_read(r, own);
  return ret;
}

typedef struct iv_ctx {
  int (*iv)(void *ctx, const gp_store_interval *iv);
  int (*node_iv)(void *ctx, const gp_store_node_interval *iv);
  void *ctx;
} iv_ctx;

static int iv_row(PGresult *r, int k, void *ctx) {
  iv_ctx *c = ctx;
  gp_store_interval iv = {
      .id = i64(r, k, 0), .job_id = i64(r, k, 1), .attempt = (int)i64(r, k, 2),
      .task = (int)i64(r, k, 3), .user = txt(r, k, 4), .queue = txt(r, k, 5),
      .node = txt(r, k, 6), .gpu_uuid = txt(r, k, 7), .model = txt(r, k, 8),
      .capacity = txt(r, k, 9), .share = strtod(txt(r, k, 10), NULL), .start = i64(r, k, 11),
      .end = i64(r, k, 12), /* NULL reads as 0: open */
      .used_gpu_s = figure(r, k, 13), .energy_j = figure(r, k, 14), .service = txt(r, k, 15)};
  return c->iv(c->ctx, &iv);
}

static int node_iv_row(PGresult *r, int k, void *ctx) {
  iv_ctx *c = ctx;
  gp_store_node_interval iv = {
      .id = i64(r, k, 0), .node = txt(r, k, 1), .model = txt(r, k, 2),
      .capacity = txt(r, k, 3), .state = txt(r, k, 4), .gpus = (int)i64(r, k, 5),
      .start = i64(r, k, 6), .end = i64(r, k, 7)};
  return c->node_iv(c->ctx, &iv);
}

/* The intervals that run into [from, to) from before it, then those that start inside it,
 * in start order (sqlite_ledger.c's two parts, one query here). */
static int pg_intervals(gp_store_reader *b, int64_t from, int64_t to, const char *user,
                        int (*cb)(void *ctx, const gp_store_interval *iv), void *ctx,
                        gp_err *err) {
  if (from >= to) return 0;
  pg_reader *r = (pg_reader *)b;
  pg_num f = gp_store_pg_i64(from), t = gp_store_pg_i64(to);
  const char *p[] = {f.s, t.s, user};
  iv_ctx c = {.iv = cb, .ctx = ctx};
  return each_row(r,
                  "SELECT id, job_id, attempt, task, \"user\", queue, node, gpu_uuid, model, "
                  "capacity, share, start, \"end\", used_gpu_s, energy_j, service FROM ledger WHERE "
                  "((start >= $1::bigint AND start < $2::bigint) OR (start < $1::bigint AND "
                  "start < $2::bigint AND (\"end\" > $1::bigint OR \"end\" IS NULL))) "
                  "AND ($3::text IS NULL OR \"user\" = $3::text) "
                  "ORDER BY start, \"end\" NULLS FIRST, id",
                  3, p, iv_row, &c, err);
}

static int pg_node_intervals(gp_store_reader *b, int64_t from, int64_t to,
                             int (*cb)(void *ctx, const gp_store_node_interval *iv), void *ctx,
                             gp_err *err) {
  if (from >= to) return 0;
  pg_reader *r = (pg_reader *)b;
  pg_num f = gp_store_pg_i64(from), t = gp_store_pg_i64(to);
  const char *p[] = {f.s, t.s};
  iv_ctx c = {.node_iv = cb, .ctx = ctx};
  return each_row(r,
                  "SELECT id, node, model, capacity, state, gpus, start, \"end\" FROM node_ledger "
                  "WHERE (start >= $1::bigint AND start < $2::bigint) OR (start < $1::bigint AND "
                  "start < $2::bigint AND (\"end\" > $1::bigint OR \"end\" IS NULL)) "
                  "ORDER BY start, id",
                  2, p, node_iv_row, &c, err);
}

typedef struct job_ctx {
  int (*job)(void *ctx, const gp_store_job *row);
  int (*event)(void *ctx, const gp_store_event *row);
  int (*list)(void *ctx, const gp_store_job *row, int64_t ended_at);
  void *ctx;
  bool found;
} job_ctx;

static gp_store_job job_of(PGresult *r, int k) {
  return (gp_store_job){i64(r, k, 0), txt(r, k, 1), txt(r, k, 2), txt(r, k, 3), i64(r, k, 4),
                        txt(r, k, 5), NULL};
}

static int one_job(PGresult *r, int k, void *ctx) {
  job_ctx *c = ctx;
  gp_store_job row = job_of(r, k);
  c->found = true;
  int rc = c->job(c->ctx, &row);
  return rc > 0 ? 0 : rc;
}

static int one_event(PGresult *r, int k, void *ctx) {
  job_ctx *c = ctx;
  gp_store_event row = {i64(r, k, 0), i64(r, k, 1), txt(r, k, 2), txt(r, k, 3)};
  int rc = c->event(c->ctx, &row);
  return rc > 0 ? 0 : rc;
}

static int stopped(pg_reader *r, int rc, const char *what, gp_err *err) {
  if (rc < 0 && err && !err->message[0])
    gp_err_set(err, rc, r->s.shown, 0, NULL, "reading the store stopped: %s", what);
  return rc;
}

static int pg_job(gp_store_reader *b, int64_t id, int (*job)(void *ctx, const gp_store_job *row),
                  int (*event)(void *ctx, const gp_store_event *row), void *ctx, gp_err *err) {
  pg_reader *r = (pg_reader *)b;
  job_ctx c = {.job = job, .event = event, .ctx = ctx};
  pg_num n = gp_store_pg_i64(id);
  const char *p[] = {n.s};
  /* One read transaction for both queries, so the job and its timeline agree. */
  bool own;
  int rc = begin_read(r, &own, err);
  if (!rc)
    rc = each_row(r, "SELECT id, state, queue, \"user\", submitted_at, doc FROM jobs WHERE id = $1",
                  1, p, one_job, &c, err);
  if (!rc && !c.found)
    rc = gp_err_set(err, GP_ENOENT, NULL, 0, NULL, "no job %lld", (long long)id);
  if (!rc && event)
    rc = each_row(r, "SELECT job_id, at, event, doc FROM job_events WHERE job_id = $1 ORDER BY seq",
                  1, p, one_event, &c, err);
  stopped(r, rc, "reading a job", err);
  end_read(r, own);
  return rc;
}

static int list_row(PGresult *r, int k, void *ctx) {
  job_ctx *c = ctx;
  gp_store_job row = job_of(r, k);
  return c->list(c->ctx, &row, i64(r, k, 6));
}

/* Ended jobs by the jobs_ended index (pg_schema.c), newest first, after the cursor. */
static int pg_jobs(gp_store_reader *b, const gp_store_job_filter *f, int64_t after_ended_at,
                   int64_t after_id, int limit,
                   int (*cb)(void *ctx, const gp_store_job *row, int64_t ended_at), void *ctx,
                   gp_err *err) {
  pg_reader *r = (pg_reader *)b;
  pg_num from = gp_store_pg_i64(f->from), to = gp_store_pg_i64(f->to),
         aid = gp_store_pg_i64(after_id), aend = gp_store_pg_i64(after_ended_at),
         lim = gp_store_pg_i64(limit);
  const char *p[] = {from.s, to.s, aid.s, aend.s, f->user, f->queue, lim.s};
  job_ctx c = {.list = cb, .ctx = ctx};
  int rc = each_row(
      r,
      "SELECT id, state, queue, \"user\", submitted_at, doc, gp_ended_at(doc) AS e FROM jobs "
      "WHERE gp_ended_at(doc) >= $1::bigint AND gp_ended_at(doc) < $2::bigint "
      "AND ($3::bigint = 0 OR (gp_ended_at(doc), id) < ($4::bigint, $3::bigint)) "
      "AND ($5::text IS NULL OR \"user\" = $5::text) "
      "AND ($6::text IS NULL OR queue = $6::text OR "
      "left(queue, length($6::text) + 1) = $6::text || '/') "
      "ORDER BY gp_ended_at(doc) DESC, id DESC LIMIT $7::bigint",
      7, p, list_row, &c, err);
  if (rc == 1) return 0;
  return stopped(r, rc, "listing jobs", err);
}

/* The ledger's roll-ups (store.h, gp_store_reader_job_days; pg_rollup.h). */
static int pg_snapshot(gp_store_reader *b, bool on, gp_err *err) {
  pg_reader *r = (pg_reader *)b;
  if (!on) {
    end_read(r, PQtransactionStatus(r->s.conn) == PQTRANS_INTRANS);
    return 0;
  }
  bool own;
  return begin_read(r, &own, err);
}

typedef struct day_ctx {
  int (*job)(void *ctx, const gp_store_job_day *d);
  int (*alloc)(void *ctx, const gp_store_alloc_day *d);
  int (*iv)(void *ctx, const gp_store_interval *iv);
  void *ctx;
} day_ctx;

static int job_day_row(PGresult *r, int k, void *ctx) {
  day_ctx *c = ctx;
  gp_store_job_day d = {
      .day = i64(r, k, 0), .user = txt(r, k, 1), .queue = txt(r, k, 2), .model = txt(r, k, 3),
      .capacity = txt(r, k, 4), .gpu_s = strtod(txt(r, k, 5), NULL),
      .used_gpu_s = strtod(txt(r, k, 6), NULL), .known_gpu_s = strtod(txt(r, k, 7), NULL),
      .energy_j = strtod(txt(r, k, 8), NULL), .energy_known = i64(r, k, 9) != 0};
  return c->job(c->ctx, &d);
}

static int alloc_day_row(PGresult *r, int k, void *ctx) {
  day_ctx *c = ctx;
  gp_store_alloc_day d = {.day = i64(r, k, 0), .model = txt(r, k, 1), .capacity = txt(r, k, 2),
                          .state = txt(r, k, 3), .gpu_s = strtod(txt(r, k, 4), NULL)};
  return c->alloc(c->ctx, &d);
}

static int pg_job_days(gp_store_reader *b, int64_t day_from, int64_t day_to, const char *user,
                       int (*cb)(void *ctx, const gp_store_job_day *d), void *ctx, gp_err *err) {
  if (day_from >= day_to) return 0;
  pg_num f = gp_store_pg_i64(day_from), t = gp_store_pg_i64(day_to);
  const char *p[] = {f.s, t.s, user};
  day_ctx c = {.job = cb, .ctx = ctx};
  /* Two texts, so that a user's read is planned on the (user, day) index. */
  return each_row(r_of(b),
                  user ? "SELECT day, \"user\", queue, model, capacity, gpu_s, used_gpu_s,"
                         " known_gpu_s, energy_j, energy_known FROM ledger_day WHERE"
                         " \"user\" = $3::text AND day >= $1::bigint AND day < $2::bigint"
                         " ORDER BY day"
                       : "SELECT day, \"user\", queue, model, capacity, gpu_s, used_gpu_s,"
                         " known_gpu_s, energy_j, energy_known FROM ledger_day WHERE"
                         " day >= $1::bigint AND day < $2::bigint ORDER BY day",
                  user ? 3 : 2, p, job_day_row, &c, err);
}

static int pg_alloc_days(gp_store_reader *b, int64_t day_from, int64_t day_to,
                         int (*cb)(void *ctx, const gp_store_alloc_day *d), void *ctx,
                         gp_err *err) {
  if (day_from >= day_to) return 0;
  pg_num f = gp_store_pg_i64(day_from), t = gp_store_pg_i64(day_to);
  const char *p[] = {f.s, t.s};
  day_ctx c = {.alloc = cb, .ctx = ctx};
  return each_row(r_of(b),
                  "SELECT day, model, capacity, state, gpu_s FROM ledger_alloc_day"
                  " WHERE day >= $1::bigint AND day < $2::bigint ORDER BY day",
                  2, p, alloc_day_row, &c, err);
}

static int pg_open_intervals(gp_store_reader *b, int64_t to, const char *user,
                             int (*cb)(void *ctx, const gp_store_interval *iv), void *ctx,
                             gp_err *err) {
  pg_num t = gp_store_pg_i64(to);
  const char *p[] = {t.s, user};
  iv_ctx c = {.iv = cb, .ctx = ctx};
  return each_row(r_of(b),
                  "SELECT id, job_id, attempt, task, \"user\", queue, node, gpu_uuid, model, "
                  "capacity, share, start, \"end\", used_gpu_s, energy_j, service FROM ledger WHERE "
                  "\"end\" IS NULL AND start < $1::bigint "
                  "AND ($2::text IS NULL OR \"user\" = $2::text) ORDER BY start, id",
                  2, p, iv_row, &c, err);
}

typedef struct held_ctx {
  int (*cb)(void *ctx, const gp_store_held_day *d);
  void *ctx;
} held_ctx;

static int held_day_row(PGresult *r, int k, void *ctx) {
  held_ctx *c = ctx;
  gp_store_held_day d = {
      .day = i64(r, k, 0), .job_id = i64(r, k, 1), .model = txt(r, k, 2),
      .capacity = txt(r, k, 3), .user = txt(r, k, 4), .queue = txt(r, k, 5),
      .gpu_s = strtod(txt(r, k, 6), NULL), .used_gpu_s = strtod(txt(r, k, 7), NULL),
      .known_gpu_s = strtod(txt(r, k, 8), NULL), .first_start = i64(r, k, 9),
      .longest_s = i64(r, k, 10)};
  return c->cb(c->ctx, &d);
}

static int pg_held_days(gp_store_reader *b, int64_t day_from, int64_t day_to, const char *user,
                        int (*cb)(void *ctx, const gp_store_held_day *d), void *ctx,
                        gp_err *err) {
  if (day_from >= day_to) return 0;
  pg_num f = gp_store_pg_i64(day_from), t = gp_store_pg_i64(day_to);
  const char *p[] = {f.s, t.s, user};
  held_ctx c = {cb, ctx};
  return each_row(r_of(b),
                  user ? "SELECT day, job_id, model, capacity, \"user\", queue, gpu_s, used_gpu_s,"
                         " known_gpu_s, first_start, longest_s FROM ledger_held_day WHERE"
                         " \"user\" = $3::text AND day >= $1::bigint AND day < $2::bigint"
                         " ORDER BY day"
                       : "SELECT day, job_id, model, capacity, \"user\", queue, gpu_s, used_gpu_s,"
                         " known_gpu_s, first_start, longest_s FROM ledger_held_day WHERE"
                         " day >= $1::bigint AND day < $2::bigint ORDER BY day",
                  user ? 3 : 2, p, held_day_row, &c, err);
}

static void pg_reader_close(gp_store_reader *b) {
  pg_reader *r = (pg_reader *)b;
  if (r->s.conn) PQfinish(r->s.conn);
  free(r);
}

static const gp_store_reader_ops pg_reader_ops = {
    pg_intervals, pg_node_intervals, pg_job, pg_jobs, pg_reader_close,
    pg_snapshot, pg_job_days, pg_alloc_days, pg_open_intervals, pg_held_days,
};

int gp_store_pg_reader_open(const char *url, const char *shown, gp_store_reader **ret,
                            gp_err *err) {
  pg_reader *r = gp_xcalloc(1, sizeof *r);
  r->base.ops = &pg_reader_ops;
  snprintf(r->s.shown, sizeof r->s.shown, "%s", shown);
  r->s.conn = gp_store_pg_connect(url, shown, false, err);
  if (!r->s.conn) {
    free(r);
    return GP_EIO;
  }
  *ret = &r->base;
  return 0;
}
