/* SPDX-License-Identifier: Apache-2.0 */
/* Loading the PostgreSQL store at start and after a failure (store.h, load): the same
 * tables, rows and order as sqlite.c's load, read in one read-only REPEATABLE READ
 * transaction so every table is seen at one moment, each query streamed row by row
 * (libpq's single-row mode) so a large history never sits in memory twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg.h"
#include "util/buf.h"

typedef int (*row_fn)(PGresult *res, const gp_store_load_cb *cb);

static const char *txt(PGresult *res, int i) { return PQgetvalue(res, 0, i); }
static int64_t i64(PGresult *res, int i) { return strtoll(PQgetvalue(res, 0, i), NULL, 10); }
static double figure(PGresult *res, int i) {
  return PQgetisnull(res, 0, i) ? -1 : strtod(PQgetvalue(res, 0, i), NULL);
}

/* Runs `sql` with its parameters and hands each row to `fn`, stopping at the first
 * callback error (the rest of the answer is read and dropped). */
static int load_table(pg_store *s, const char *sql, int n, const char *const *params, row_fn fn,
                      const gp_store_load_cb *cb, gp_err *err) {
  if (!PQsendQueryParams(s->conn, sql, n, NULL, params, NULL, NULL, 0) ||
      !PQsetSingleRowMode(s->conn))
    return gp_store_pg_fail(s, NULL, sql, err);
  int ret = 0;
  PGresult *res;
  while ((res = PQgetResult(s->conn)) != NULL) {
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_SINGLE_TUPLE && !ret) {
      if ((ret = fn(res, cb)) != 0)
        gp_store_load_stopped(err, ret, s->shown, sql);
    } else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK && !ret) {
      ret = gp_store_pg_fail(s, res, sql, err);
    }
    PQclear(res);
  }
  return ret;
}

static int row_job(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_job row = {i64(r, 0), txt(r, 1), txt(r, 2), txt(r, 3), i64(r, 4), txt(r, 5),
                      PQgetisnull(r, 0, 6) ? NULL : txt(r, 6)};
  return cb->job(cb->ctx, &row);
}
static int row_event(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_event row = {i64(r, 0), i64(r, 1), txt(r, 2), txt(r, 3)};
  return cb->event(cb->ctx, &row);
}
static int row_node(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_node row = {txt(r, 0), txt(r, 1)};
  return cb->node(cb->ctx, &row);
}
static int row_alloc(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_alloc row = {i64(r, 0), (int)i64(r, 1), txt(r, 2), (uint32_t)i64(r, 3),
                        (int)i64(r, 4), i64(r, 5), (int)i64(r, 6)};
  return cb->alloc(cb->ctx, &row);
}
static int row_queue(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_queue row = {txt(r, 0), txt(r, 1)};
  return cb->queue(cb->ctx, &row);
}
static int row_order(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_order row = {i64(r, 0), txt(r, 1), txt(r, 2)};
  return cb->order(cb->ctx, &row);
}
static int row_meta(PGresult *r, const gp_store_load_cb *cb) {
  return cb->meta(cb->ctx, txt(r, 0), i64(r, 1));
}
static int row_cred(PGresult *r, const gp_store_load_cb *cb) {
  return cb->credential(cb->ctx, txt(r, 0), txt(r, 1));
}
static int row_interval(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_interval row = {
      .id = i64(r, 0), .job_id = i64(r, 1), .attempt = (int)i64(r, 2), .task = (int)i64(r, 3),
      .user = txt(r, 4), .queue = txt(r, 5), .node = txt(r, 6), .gpu_uuid = txt(r, 7),
      .model = txt(r, 8), .capacity = txt(r, 9), .share = strtod(txt(r, 10), NULL),
      .start = i64(r, 11), .used_gpu_s = figure(r, 12), .energy_j = figure(r, 13)};
  return cb->interval(cb->ctx, &row);
}
static int row_node_interval(PGresult *r, const gp_store_load_cb *cb) {
  gp_store_node_interval row = {.id = i64(r, 0), .node = txt(r, 1), .model = txt(r, 2),
                                .capacity = txt(r, 3), .gpus = (int)i64(r, 4),
                                .state = txt(r, 5), .start = i64(r, 6)};
  return cb->node_interval(cb->ctx, &row);
}
static int row_ended(PGresult *r, const gp_store_load_cb *cb) {
  return cb->ended(cb->ctx, i64(r, 0), txt(r, 1));
}
static int row_setting(PGresult *r, const gp_store_load_cb *cb) {
  return cb->setting(cb->ctx, txt(r, 0), txt(r, 1));
}

/* States as a PostgreSQL array literal {"a","b"}, passed as a parameter; the names are the
 * server's own constants, checked to be plain words all the same. */
static bool state_array(const char *const *states, gp_buf *out) {
  gp_buf_puts(out, "{");
  for (int i = 0; states && states[i]; i++) {
    for (const char *c = states[i]; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || *c == '_')) return false;
    gp_buf_printf(out, "%s\"%s\"", i ? "," : "", states[i]);
  }
  gp_buf_puts(out, "}");
  return true;
}

/* The last `keep_ended` ended jobs, by the jobs_ended index (pg_schema.c); the state is
 * checked too, so that an active row whose document has an ended_at is not listed twice. */
#define RECENT                                                                               \
  "SELECT id, e FROM (SELECT id, gp_ended_at(doc) AS e FROM jobs WHERE gp_ended_at(doc) IS " \
  "NOT NULL AND state = ANY($2::text[]) ORDER BY e DESC, id DESC LIMIT $1::bigint) AS r"

/* The active jobs and the last `keep_ended` ended ones with their events (sqlite.c's
 * load_bounded, the same rows in the same order). */
static int load_bounded(pg_store *s, const gp_store_load_cb *cb, gp_err *err) {
  gp_buf ended, active;
  gp_buf_init(&ended, 4096);
  gp_buf_init(&active, 4096);
  int r = 0;
  if (!state_array(cb->ended_states, &ended) || !state_array(cb->active_states, &active)) {
    r = gp_err_set(err, GP_EINVAL, s->shown, 0, NULL, "invalid job state name to load");
    goto out;
  }
  pg_num keep = gp_store_pg_i64(cb->keep_ended > 0 ? cb->keep_ended : 0);
  const char *p_ended[] = {ended.data}, *p_active[] = {active.data};
  /* RECENT's $1 the count kept and $2 the ended states; the events' $3 the active ones. */
  const char *p_recent[] = {keep.s, ended.data}, *p_events[] = {keep.s, ended.data, active.data};
  r = load_table(s, "SELECT id, state FROM jobs WHERE state = ANY($1::text[])", 1, p_ended,
                 row_ended, cb, err);
  if (!r && cb->job)
    r = load_table(s, "SELECT id, state, queue, \"user\", submitted_at, doc, rec FROM jobs "
                      "WHERE state = ANY($1::text[]) ORDER BY id", 1, p_active, row_job, cb, err);
  if (!r && cb->job)
    r = load_table(s, "SELECT j.id, j.state, j.queue, j.\"user\", j.submitted_at, j.doc, j.rec FROM ("
                      RECENT ") AS k JOIN jobs AS j ON j.id = k.id ORDER BY k.e, k.id",
                   2, p_recent, row_job, cb, err);
  if (!r && cb->event)
    r = load_table(s, "SELECT job_id, at, event, doc FROM job_events WHERE job_id IN (SELECT id "
                      "FROM jobs WHERE state = ANY($3::text[]) UNION SELECT id FROM (" RECENT
                      ") AS k) ORDER BY job_id, seq", 3, p_events, row_event, cb, err);
out:
  gp_buf_done(&ended);
  gp_buf_done(&active);
  return r;
}

static int load_all(pg_store *s, const gp_store_load_cb *cb, gp_err *err) {
  int r = 0;
  if (cb->ended && cb->ended_states) {
    r = load_bounded(s, cb, err);
  } else {
    if (!r && cb->job)
      r = load_table(s, "SELECT id, state, queue, \"user\", submitted_at, doc, rec FROM jobs ORDER BY id",
                     0, NULL, row_job, cb, err);
    if (!r && cb->event)
      r = load_table(s, "SELECT job_id, at, event, doc FROM job_events ORDER BY job_id, seq", 0,
                     NULL, row_event, cb, err);
  }
  if (!r && cb->node)
    r = load_table(s, "SELECT name, doc FROM nodes ORDER BY name", 0, NULL, row_node, cb, err);
  if (!r && cb->alloc)
    r = load_table(s, "SELECT job_id, task, node, gpu_mask, gpu_milli, gpu_mem_mib, mig_instance "
                      "FROM allocations ORDER BY job_id, task", 0, NULL, row_alloc, cb, err);
  if (!r && cb->queue)
    r = load_table(s, "SELECT name, doc FROM queues ORDER BY name", 0, NULL, row_queue, cb, err);
  if (!r && cb->order)
    r = load_table(s, "SELECT id, node, doc FROM orders ORDER BY id", 0, NULL, row_order, cb, err);
  if (!r && cb->meta)
    r = load_table(s, "SELECT key, value FROM meta ORDER BY key", 0, NULL, row_meta, cb, err);
  if (!r && cb->credential)
    r = load_table(s, "SELECT node, hash FROM node_credentials ORDER BY node", 0, NULL, row_cred,
                   cb, err);
  if (!r && cb->interval)
    r = load_table(s, "SELECT id, job_id, attempt, task, \"user\", queue, node, gpu_uuid, model, "
                      "capacity, share, start, used_gpu_s, energy_j FROM ledger "
                      "WHERE \"end\" IS NULL ORDER BY id", 0, NULL, row_interval, cb, err);
  if (!r && cb->node_interval)
    r = load_table(s, "SELECT id, node, model, capacity, gpus, state, start FROM node_ledger "
                      "WHERE \"end\" IS NULL ORDER BY id", 0, NULL, row_node_interval, cb, err);
  if (!r && cb->setting)
    r = load_table(s, "SELECT name, doc FROM settings ORDER BY name", 0, NULL, row_setting, cb,
                   err);
  return r;
}

int gp_store_pg_load(gp_store *b, const gp_store_load_cb *cb, gp_err *err) {
  pg_store *s = (pg_store *)b;
  int r = gp_store_pg_ensure(s, err);
  if (r) return r;
  b->ops->rollback(b);
  /* A large store streams for longer than one write may take: the session's statement
   * timeout is lifted for this transaction (keepalives still catch a dead database). */
  r = gp_store_pg_exec(s, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
                          " SET LOCAL statement_timeout = '10min'", 0, NULL, err);
  if (r) return r;
  r = load_all(s, cb, err);
  b->ops->rollback(b); /* read only: nothing to commit */
  return r;
}
