/* SPDX-License-Identifier: Apache-2.0 */
/* Job history through a reader (store.h, gp_store_reader_job and gp_store_reader_jobs):
 * ended jobs that are no longer in the server's memory are read here, on the HTTP thread
 * that asks, with the jobs_ended index (GP_STORE_ENDED_AT) for lists and the primary key
 * and job_events_job for one job. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store/sqlite_reader.h"

static gp_store_job row_job(sqlite3_stmt *st) {
  return (gp_store_job){sqlite3_column_int64(st, 0), gp_store_sqlite_text(st, 1),
                        gp_store_sqlite_text(st, 2), gp_store_sqlite_text(st, 3),
                        sqlite3_column_int64(st, 4), gp_store_sqlite_text(st, 5), NULL};
}

/* Steps `st` to the end, handing each row to `fn`; 1 from fn stops early (not an error). */
static int each_row(sqlite_reader *r, sqlite3_stmt *st, const char *what,
                    int (*fn)(void *ctx, sqlite3_stmt *st), void *ctx, gp_err *err) {
  int rc, ret = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if ((ret = fn(ctx, st)) != 0) break;
  if (ret < 0) {
    if (err && !err->message[0])
      gp_err_set(err, ret, r->path, 0, NULL, "reading the store stopped: %s", what);
  } else if (ret == 0 && rc != SQLITE_DONE) {
    ret = gp_store_sqlite_reader_error(r, err, what);
  } else {
    ret = 0;
  }
  sqlite3_finalize(st);
  return ret;
}

typedef struct one_ctx {
  int (*job)(void *ctx, const gp_store_job *row);
  int (*event)(void *ctx, const gp_store_event *row);
  void *ctx;
  bool found;
} one_ctx;

static int one_job(void *ctx, sqlite3_stmt *st) {
  one_ctx *c = ctx;
  gp_store_job row = row_job(st);
  c->found = true;
  int r = c->job(c->ctx, &row);
  return r > 0 ? 0 : r;
}

static int one_event(void *ctx, sqlite3_stmt *st) {
  one_ctx *c = ctx;
  gp_store_event row = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                        gp_store_sqlite_text(st, 2), gp_store_sqlite_text(st, 3)};
  int r = c->event(c->ctx, &row);
  return r > 0 ? 0 : r;
}

int gp_store_sqlite_reader_job(gp_store_reader *base, int64_t id,
                               int (*job)(void *ctx, const gp_store_job *row),
                               int (*event)(void *ctx, const gp_store_event *row), void *ctx,
                               gp_err *err) {
  sqlite_reader *r = (sqlite_reader *)base;
  one_ctx c = {job, event, ctx, false};
  sqlite3_stmt *st = NULL;
  /* One read transaction for both queries, so the job and its timeline agree (a caller's
   * own, when it is inside one). */
  bool own = sqlite3_get_autocommit(r->db);
  if (own && sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
    return gp_store_sqlite_reader_error(r, err, "begin");
  const char *q1 = "SELECT id, state, queue, user, submitted_at, doc FROM jobs WHERE id = ?1";
  int ret = sqlite3_prepare_v2(r->db, q1, -1, &st, NULL) != SQLITE_OK
                ? gp_store_sqlite_reader_error(r, err, q1)
                : (sqlite3_bind_int64(st, 1, id), each_row(r, st, q1, one_job, &c, err));
  if (!ret && !c.found)
    ret = gp_err_set(err, GP_ENOENT, NULL, 0, NULL, "no job %lld", (long long)id);
  const char *q2 = "SELECT job_id, at, event, doc FROM job_events WHERE job_id = ?1 ORDER BY seq";
  if (!ret && event) {
    ret = sqlite3_prepare_v2(r->db, q2, -1, &st, NULL) != SQLITE_OK
              ? gp_store_sqlite_reader_error(r, err, q2)
              : (sqlite3_bind_int64(st, 1, id), each_row(r, st, q2, one_event, &c, err));
  }
  if (own) sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
  return ret;
}

typedef struct list_ctx {
  int (*cb)(void *ctx, const gp_store_job *row, int64_t ended_at);
  void *ctx;
} list_ctx;

static int list_row(void *ctx, sqlite3_stmt *st) {
  list_ctx *c = ctx;
  gp_store_job row = row_job(st);
  return c->cb(c->ctx, &row, sqlite3_column_int64(st, 6));
}

int gp_store_sqlite_reader_jobs(gp_store_reader *base, const gp_store_job_filter *f,
                                int64_t after_ended_at, int64_t after_id, int limit,
                                int (*cb)(void *ctx, const gp_store_job *row, int64_t ended_at),
                                void *ctx, gp_err *err) {
  sqlite_reader *r = (sqlite_reader *)base;
  /* The range and the cursor are one walk down the jobs_ended index (only an ended job
   * has an ended_at); the user and queue filters are checked on the rows it finds. */
  char sql[1024];
  snprintf(sql, sizeof sql,
           "SELECT id, state, queue, user, submitted_at, doc, " GP_STORE_ENDED_AT " AS e "
           "FROM jobs WHERE " GP_STORE_ENDED_AT " >= ?1 AND " GP_STORE_ENDED_AT " < ?2 "
           "AND (?3 = 0 OR (" GP_STORE_ENDED_AT ", id) < (?4, ?3)) "
           "AND (?5 IS NULL OR user = ?5) "
           "AND (?6 IS NULL OR queue = ?6 OR substr(queue, 1, length(?6) + 1) = ?6 || '/') "
           "ORDER BY " GP_STORE_ENDED_AT " DESC, id DESC LIMIT ?7");
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
    return gp_store_sqlite_reader_error(r, err, "listing jobs");
  sqlite3_bind_int64(st, 1, f->from);
  sqlite3_bind_int64(st, 2, f->to);
  sqlite3_bind_int64(st, 3, after_id);
  sqlite3_bind_int64(st, 4, after_ended_at);
  if (f->user) sqlite3_bind_text(st, 5, f->user, -1, SQLITE_STATIC);
  if (f->queue) sqlite3_bind_text(st, 6, f->queue, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 7, limit);
  list_ctx c = {cb, ctx};
  /* The callback may read each job whole: in this transaction, it sees what the list saw.
   * Inside a reader's snapshot (gp_store_reader_snapshot), that one. */
  bool own = sqlite3_get_autocommit(r->db);
  if (own && sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    sqlite3_finalize(st);
    return gp_store_sqlite_reader_error(r, err, "begin");
  }
  int ret = each_row(r, st, "listing jobs", list_row, &c, err);
  if (own) sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
  return ret;
}
