/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend of the store (see store.h). One connection, WAL journal,
 * synchronous=FULL: COMMIT returns only after the WAL is fsynced, so an acknowledged
 * transaction survives kill -9 and power loss. The server batches many submissions into
 * one transaction (group commit), so the fsync cost is shared. Statements are prepared
 * once. The schema version lives in PRAGMA user_version. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/sqlite_reader.h"
#include "store/sqlite_rollup.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/mem.h"

/* 2: the ledger's daily roll-ups (sqlite_rollup.c), built from the closed intervals on
 * upgrade. 3: the ledger's `service` column (a replica's service, "" for other jobs), for
 * reports by service; older intervals read as no service. 4: the jobs' `rec` column (store.h,
 * gp_store_job.rec); older rows have none until the server writes it. */
#define SCHEMA_VERSION 4

enum {
  ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_PUT_JOB, ST_ADD_EVENT, ST_PUT_NODE, ST_PUT_ALLOC,
  ST_DEL_ALLOCS, ST_PUT_QUEUE, ST_DEL_QUEUE, ST_PUT_ORDER, ST_DEL_ORDERS, ST_DEL_ORDER, ST_SET_META,
  ST_PUT_CRED, ST_DEL_CRED, ST_OPEN_IV, ST_CLOSE_IVS, ST_SET_IV_USE, ST_OPEN_NODE_IV,
  ST_CLOSE_NODE_IV, ST_DEL_NODE, ST_DEL_NODE_ORDERS, ST_ROLL_IVS, ST_ROLL_NODE_IVS, ST_ROLL_ADD_DAY,
  ST_ROLL_ADD_ALLOC, ST_ROLL_ADD_HELD,
  ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_PUT_JOB] = "INSERT OR REPLACE INTO jobs(id, state, queue, user, submitted_at, doc, rec) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_ADD_EVENT] = "INSERT INTO job_events(job_id, at, event, doc) VALUES (?1, ?2, ?3, ?4)",
    [ST_PUT_NODE] = "INSERT OR REPLACE INTO nodes(name, doc) VALUES (?1, ?2)",
    [ST_PUT_ALLOC] = "INSERT OR REPLACE INTO allocations(job_id, task, node, gpu_mask, "
                     "gpu_milli, gpu_mem_mib, mig_instance) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_DEL_ALLOCS] = "DELETE FROM allocations WHERE job_id = ?1",
    [ST_PUT_QUEUE] = "INSERT OR REPLACE INTO queues(name, doc) VALUES (?1, ?2)",
    [ST_DEL_QUEUE] = "DELETE FROM queues WHERE name = ?1",
    [ST_PUT_ORDER] = "INSERT OR REPLACE INTO orders(id, node, doc) VALUES (?1, ?2, ?3)",
    [ST_DEL_ORDERS] = "DELETE FROM orders WHERE node = ?1 AND id <= ?2",
    [ST_DEL_ORDER] = "DELETE FROM orders WHERE id = ?1",
    [ST_SET_META] = "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
    [ST_PUT_CRED] = "INSERT OR REPLACE INTO node_credentials(node, hash) VALUES (?1, ?2)",
    [ST_DEL_CRED] = "DELETE FROM node_credentials WHERE node = ?1",
    [ST_DEL_NODE] = "DELETE FROM nodes WHERE name = ?1",
    [ST_DEL_NODE_ORDERS] = "DELETE FROM orders WHERE node = ?1",
    [ST_OPEN_IV] = "INSERT INTO ledger(job_id, attempt, task, user, queue, node, gpu_uuid, model,"
                   " capacity, share, start, service)"
                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [ST_ROLL_IVS] = gp_store_sqlite_roll_ivs,
    [ST_ROLL_NODE_IVS] = gp_store_sqlite_roll_node_ivs,
    [ST_ROLL_ADD_DAY] = gp_store_sqlite_roll_add_day,
    [ST_ROLL_ADD_ALLOC] = gp_store_sqlite_roll_add_alloc,
    [ST_ROLL_ADD_HELD] = gp_store_sqlite_roll_add_held,
    [ST_CLOSE_IVS] = "UPDATE ledger SET \"end\" = max(start, ?2) WHERE job_id = ?1 AND \"end\" IS NULL",
    /* Each open interval of the job on the node takes its share of the job's figures
     * there; an unknown figure (< 0) keeps what the interval had. */
    [ST_SET_IV_USE] =
        "UPDATE ledger SET"
        " used_gpu_s = CASE WHEN ?3 < 0 THEN used_gpu_s ELSE ?3 * share / t.total END,"
        " energy_j = CASE WHEN ?4 < 0 THEN energy_j ELSE ?4 * share / t.total END"
        " FROM (SELECT sum(share) AS total FROM ledger WHERE job_id = ?1 AND node = ?2"
        " AND \"end\" IS NULL) AS t WHERE job_id = ?1 AND node = ?2 AND \"end\" IS NULL",
    [ST_OPEN_NODE_IV] = "INSERT INTO node_ledger(node, model, capacity, gpus, state, start)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_CLOSE_NODE_IV] = "UPDATE node_ledger SET \"end\" = max(start, ?2) WHERE node = ?1"
                         " AND \"end\" IS NULL",
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, state TEXT NOT NULL,"
    " queue TEXT NOT NULL, user TEXT NOT NULL, submitted_at INTEGER NOT NULL, doc TEXT NOT NULL,"
    " rec TEXT);"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);"
    "CREATE TABLE IF NOT EXISTS job_events(seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " job_id INTEGER NOT NULL, at INTEGER NOT NULL, event TEXT NOT NULL, doc TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS job_events_job ON job_events(job_id, seq);"
    "CREATE TABLE IF NOT EXISTS nodes(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS allocations(job_id INTEGER NOT NULL, task INTEGER NOT NULL,"
    " node TEXT NOT NULL, gpu_mask INTEGER NOT NULL, gpu_milli INTEGER NOT NULL,"
    " gpu_mem_mib INTEGER NOT NULL, mig_instance INTEGER NOT NULL, PRIMARY KEY(job_id, task));"
    "CREATE TABLE IF NOT EXISTS queues(name TEXT PRIMARY KEY, doc TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS orders(id INTEGER PRIMARY KEY, node TEXT NOT NULL,"
    " doc TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS orders_node ON orders(node, id);"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS identity(one INTEGER PRIMARY KEY CHECK (one = 1),"
    " store_id TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS node_credentials(node TEXT PRIMARY KEY, hash TEXT NOT NULL);"
    /* The ledger is read by time range (reports) and written by job (close, use figures).
     * Both range indexes carry the other bound, so a range read filters the intervals that
     * run into the range from before it inside the index (sqlite_ledger.c). */
    "CREATE TABLE IF NOT EXISTS ledger(id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,"
    " attempt INTEGER NOT NULL, task INTEGER NOT NULL, user TEXT NOT NULL, queue TEXT NOT NULL,"
    " node TEXT NOT NULL, gpu_uuid TEXT NOT NULL, model TEXT NOT NULL, capacity TEXT NOT NULL,"
    " share REAL NOT NULL, start INTEGER NOT NULL, \"end\" INTEGER, used_gpu_s REAL,"
    " energy_j REAL);"
    "CREATE INDEX IF NOT EXISTS ledger_start ON ledger(start, \"end\");"
    "CREATE INDEX IF NOT EXISTS ledger_end ON ledger(\"end\", start);"
    "CREATE INDEX IF NOT EXISTS ledger_job ON ledger(job_id, attempt);"
    "CREATE TABLE IF NOT EXISTS node_ledger(id INTEGER PRIMARY KEY, node TEXT NOT NULL,"
    " model TEXT NOT NULL, capacity TEXT NOT NULL, gpus INTEGER NOT NULL, state TEXT NOT NULL,"
    " start INTEGER NOT NULL, \"end\" INTEGER);"
    "CREATE INDEX IF NOT EXISTS node_ledger_start ON node_ledger(start);"
    "CREATE INDEX IF NOT EXISTS node_ledger_end ON node_ledger(\"end\");"
    "CREATE INDEX IF NOT EXISTS node_ledger_node ON node_ledger(node, \"end\");"
    /* Job history reads ended jobs by when they ended (GP_STORE_ENDED_AT). */
    "CREATE INDEX IF NOT EXISTS jobs_ended ON jobs(" GP_STORE_ENDED_AT ");"
    "CREATE TABLE IF NOT EXISTS settings(name TEXT PRIMARY KEY, doc TEXT NOT NULL);";

typedef struct sqlite_store {
  gp_store base;
  sqlite3 *db;
  sqlite3_stmt *st[ST_COUNT];
  char path[512];
  _Atomic int64_t cap_pages; /* gp_store_sqlite_cap_pages: -1 applied, else to apply */
} sqlite_store;

/* The operator's name for a SQLite failure (store.h, `failure`). */
static const char *cause_name(int code) {
  switch (code & 0xff) {
  case SQLITE_FULL: return "disk full";
  case SQLITE_IOERR: return "I/O error";
  case SQLITE_READONLY: return "read-only";
  case SQLITE_BUSY:
  case SQLITE_LOCKED: return "locked by another process";
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB: return "corrupt";
  case SQLITE_CANTOPEN: return "cannot open";
  case SQLITE_PERM: return "permission denied";
  case SQLITE_NOMEM: return "out of memory";
  default: return sqlite3_errstr(code);
  }
}

static int db_error(sqlite_store *s, gp_err *err, const char *what) {
  int code = sqlite3_extended_errcode(s->db);
  int sys = sqlite3_system_errno(s->db);
  snprintf(s->base.failure, sizeof s->base.failure, "%s", cause_name(code));
  return gp_err_set(err, GP_EIO, s->path, 0, NULL, "%s: %s (%s%s%s)", s->base.failure,
                    sqlite3_errmsg(s->db), what, sys ? ": " : "", sys ? strerror(sys) : "");
}

/* Runs a prepared statement with no result rows; resets it for the next use. */
static int run(sqlite_store *s, int which, gp_err *err) {
  sqlite3_stmt *st = s->st[which];
  int rc = sqlite3_step(st);
  int ret = 0;
  if (rc != SQLITE_DONE) ret = db_error(s, err, stmt_sql[which]);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return ret;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v) {
  if (v) sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
  else sqlite3_bind_null(st, i);
}

static int s_begin(gp_store *b, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  int64_t cap = atomic_exchange(&s->cap_pages, -1);
  if (cap >= 0) {
    /* SQLite raises a cap below the current size to that size; its default is huge. */
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count=%lld", cap ? (long long)cap : 4294967294LL);
    sqlite3_exec(s->db, sql, NULL, NULL, NULL);
  }
  return run(s, ST_BEGIN, err);
}

static int s_commit(gp_store *b, gp_err *err) { return run((sqlite_store *)b, ST_COMMIT, err); }

static void s_rollback(gp_store *b) {
  sqlite_store *s = (sqlite_store *)b;
  if (!sqlite3_get_autocommit(s->db)) run(s, ST_ROLLBACK, NULL);
}

static int s_put_job(gp_store *b, const gp_store_job *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_stmt *st = s->st[ST_PUT_JOB];
  sqlite3_bind_int64(st, 1, r->id);
  bind_text(st, 2, r->state);
  bind_text(st, 3, r->queue);
  bind_text(st, 4, r->user);
  sqlite3_bind_int64(st, 5, r->submitted_at);
  bind_text(st, 6, r->doc);
  bind_text(st, 7, r->rec);
  return run(s, ST_PUT_JOB, err);
}

static int s_add_event(gp_store *b, const gp_store_event *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_stmt *st = s->st[ST_ADD_EVENT];
  sqlite3_bind_int64(st, 1, r->job_id);
  sqlite3_bind_int64(st, 2, r->at);
  bind_text(st, 3, r->event);
  bind_text(st, 4, r->doc);
  return run(s, ST_ADD_EVENT, err);
}

static int s_put_node(gp_store *b, const gp_store_node *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_stmt *st = s->st[ST_PUT_NODE];
  bind_text(st, 1, r->name);
  bind_text(st, 2, r->doc);
  return run(s, ST_PUT_NODE, err);
}

static int s_put_alloc(gp_store *b, const gp_store_alloc *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_stmt *st = s->st[ST_PUT_ALLOC];
  sqlite3_bind_int64(st, 1, r->job_id);
  sqlite3_bind_int(st, 2, r->task);
  bind_text(st, 3, r->node);
  sqlite3_bind_int64(st, 4, (int64_t)r->gpu_mask);
  sqlite3_bind_int(st, 5, r->gpu_milli);
  sqlite3_bind_int64(st, 6, r->gpu_mem_mib);
  sqlite3_bind_int(st, 7, r->mig_instance);
  return run(s, ST_PUT_ALLOC, err);
}

static int s_del_allocs(gp_store *b, int64_t job_id, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_bind_int64(s->st[ST_DEL_ALLOCS], 1, job_id);
  return run(s, ST_DEL_ALLOCS, err);
}

static int s_put_queue(gp_store *b, const gp_store_queue *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  bind_text(s->st[ST_PUT_QUEUE], 1, r->name);
  bind_text(s->st[ST_PUT_QUEUE], 2, r->doc);
  return run(s, ST_PUT_QUEUE, err);
}

static int s_del_queue(gp_store *b, const char *name, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  bind_text(s->st[ST_DEL_QUEUE], 1, name);
  return run(s, ST_DEL_QUEUE, err);
}

static int s_put_order(gp_store *b, const gp_store_order *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_stmt *st = s->st[ST_PUT_ORDER];
  sqlite3_bind_int64(st, 1, r->id);
  bind_text(st, 2, r->node);
  bind_text(st, 3, r->doc);
  return run(s, ST_PUT_ORDER, err);
}

static int s_del_orders(gp_store *b, const char *node, int64_t up_to, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  bind_text(s->st[ST_DEL_ORDERS], 1, node);
  sqlite3_bind_int64(s->st[ST_DEL_ORDERS], 2, up_to);
  return run(s, ST_DEL_ORDERS, err);
}

static int s_del_order(gp_store *b, int64_t id, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_bind_int64(s->st[ST_DEL_ORDER], 1, id);
  return run(s, ST_DEL_ORDER, err);
}

static int s_set_meta(gp_store *b, const char *key, int64_t v, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  bind_text(s->st[ST_SET_META], 1, key);
  sqlite3_bind_int64(s->st[ST_SET_META], 2, v);
  return run(s, ST_SET_META, err);
}

static int s_put_credential(gp_store *b, const char *node, const char *hash, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  int which = hash ? ST_PUT_CRED : ST_DEL_CRED;
  bind_text(s->st[which], 1, node);
  if (hash) bind_text(s->st[which], 2, hash);
  return run(s, which, err);
}

static int s_del_node(gp_store *b, const char *name, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  static const int steps[] = {ST_DEL_NODE, ST_DEL_NODE_ORDERS, ST_DEL_CRED};
  for (int i = 0; i < 3; i++) {
    bind_text(s->st[steps[i]], 1, name);
    int r = run(s, steps[i], err);
    if (r) return r;
  }
  return 0;
}

static void bind_figure(sqlite3_stmt *st, int i, double v) {
  sqlite3_bind_double(st, i, v < 0 ? -1 : v);
}

static int s_open_interval(gp_store *b, const gp_store_interval *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_stmt *st = s->st[ST_OPEN_IV];
  sqlite3_bind_int64(st, 1, r->job_id);
  sqlite3_bind_int(st, 2, r->attempt);
  sqlite3_bind_int(st, 3, r->task);
  bind_text(st, 4, r->user ? r->user : "");
  bind_text(st, 5, r->queue ? r->queue : "");
  bind_text(st, 6, r->node ? r->node : "");
  bind_text(st, 7, r->gpu_uuid ? r->gpu_uuid : "");
  bind_text(st, 8, r->model ? r->model : "");
  bind_text(st, 9, r->capacity ? r->capacity : "");
  sqlite3_bind_double(st, 10, r->share);
  sqlite3_bind_int64(st, 11, r->start);
  bind_text(st, 12, r->service ? r->service : "");
  return run(s, ST_OPEN_IV, err);
}

static int s_close_intervals(gp_store *b, int64_t job_id, int64_t end, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  /* The roll-ups take the intervals while they are still open (sqlite_rollup.c). */
  if (gp_store_sqlite_rollup_close(s->st + ST_ROLL_IVS, job_id, end) != SQLITE_OK)
    return db_error(s, err, "adding to the ledger's roll-ups");
  sqlite3_bind_int64(s->st[ST_CLOSE_IVS], 1, job_id);
  sqlite3_bind_int64(s->st[ST_CLOSE_IVS], 2, end);
  return run(s, ST_CLOSE_IVS, err);
}

static int s_set_interval_use(gp_store *b, int64_t job_id, const char *node, double used_gpu_s,
                              double energy_j, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  sqlite3_stmt *st = s->st[ST_SET_IV_USE];
  sqlite3_bind_int64(st, 1, job_id);
  bind_text(st, 2, node);
  bind_figure(st, 3, used_gpu_s);
  bind_figure(st, 4, energy_j);
  return run(s, ST_SET_IV_USE, err);
}

static int s_close_node_interval(gp_store *b, const char *node, int64_t end, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  bind_text(s->st[ST_CLOSE_NODE_IV], 1, node);
  sqlite3_bind_int64(s->st[ST_CLOSE_NODE_IV], 2, end);
  return run(s, ST_CLOSE_NODE_IV, err);
}

static int s_open_node_interval(gp_store *b, const gp_store_node_interval *r, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  int rc = s_close_node_interval(b, r->node, r->start, err);
  if (rc) return rc;
  sqlite3_stmt *st = s->st[ST_OPEN_NODE_IV];
  bind_text(st, 1, r->node ? r->node : "");
  bind_text(st, 2, r->model ? r->model : "");
  bind_text(st, 3, r->capacity ? r->capacity : "");
  sqlite3_bind_int(st, 4, r->gpus);
  bind_text(st, 5, r->state ? r->state : "");
  sqlite3_bind_int64(st, 6, r->start);
  return run(s, ST_OPEN_NODE_IV, err);
}

/* Settings change rarely (an admin's command), so the statement is prepared per call. */
static int s_put_setting(gp_store *b, const char *name, const char *doc, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  const char *sql = doc ? "INSERT OR REPLACE INTO settings(name, doc) VALUES (?1, ?2)"
                        : "DELETE FROM settings WHERE name = ?1";
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_error(s, err, sql);
  bind_text(st, 1, name);
  if (doc) bind_text(st, 2, doc);
  int ret = sqlite3_step(st) == SQLITE_DONE ? 0 : db_error(s, err, sql);
  sqlite3_finalize(st);
  return ret;
}

/* Runs `sql` and hands each row to `row_fn`; stops at the first callback error. */
static int load_table(sqlite_store *s, const char *sql,
                      int (*row_fn)(sqlite3_stmt *st, const gp_store_load_cb *cb),
                      const gp_store_load_cb *cb, gp_err *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_error(s, err, sql);
  int rc, ret = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if ((ret = row_fn(st, cb))) {
      gp_store_load_stopped(err, ret, s->path, sql);
      break;
    }
  }
  if (!ret && rc != SQLITE_DONE) ret = db_error(s, err, sql);
  sqlite3_finalize(st);
  return ret;
}

static int row_job(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_job r = {sqlite3_column_int64(st, 0), gp_store_sqlite_text(st, 1),
                    gp_store_sqlite_text(st, 2), gp_store_sqlite_text(st, 3),
                    sqlite3_column_int64(st, 4), gp_store_sqlite_text(st, 5),
                    (const char *)sqlite3_column_text(st, 6)};
  return cb->job(cb->ctx, &r);
}
static int row_event(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_event r = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                      gp_store_sqlite_text(st, 2), gp_store_sqlite_text(st, 3)};
  return cb->event(cb->ctx, &r);
}
static int row_node(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_node r = {gp_store_sqlite_text(st, 0), gp_store_sqlite_text(st, 1)};
  return cb->node(cb->ctx, &r);
}
static int row_alloc(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_alloc r = {sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                      gp_store_sqlite_text(st, 2),
                      (uint32_t)sqlite3_column_int64(st, 3), sqlite3_column_int(st, 4),
                      sqlite3_column_int64(st, 5), sqlite3_column_int(st, 6)};
  return cb->alloc(cb->ctx, &r);
}
static int row_queue(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_queue r = {gp_store_sqlite_text(st, 0), gp_store_sqlite_text(st, 1)};
  return cb->queue(cb->ctx, &r);
}
static int row_order(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_order r = {sqlite3_column_int64(st, 0), gp_store_sqlite_text(st, 1),
                      gp_store_sqlite_text(st, 2)};
  return cb->order(cb->ctx, &r);
}
static int row_meta(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  return cb->meta(cb->ctx, gp_store_sqlite_text(st, 0), sqlite3_column_int64(st, 1));
}

static int row_cred(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  return cb->credential(cb->ctx, gp_store_sqlite_text(st, 0), gp_store_sqlite_text(st, 1));
}

static int row_interval(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_interval r = gp_store_sqlite_interval(st);
  return cb->interval(cb->ctx, &r);
}

static int row_node_interval(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  gp_store_node_interval r = {
      .id = sqlite3_column_int64(st, 0), .node = gp_store_sqlite_text(st, 1),
      .model = gp_store_sqlite_text(st, 2), .capacity = gp_store_sqlite_text(st, 3),
      .gpus = sqlite3_column_int(st, 4), .state = gp_store_sqlite_text(st, 5),
      .start = sqlite3_column_int64(st, 6)};
  return cb->node_interval(cb->ctx, &r);
}

static int row_ended(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  return cb->ended(cb->ctx, sqlite3_column_int64(st, 0), gp_store_sqlite_text(st, 1));
}

/* Appends states as an SQL list ('a','b',...) to `sql`; the names are the server's own
 * constants, checked to be plain words. */
static bool state_list(const char *const *states, gp_buf *sql) {
  gp_buf_puts(sql, "(");
  for (int i = 0; states[i]; i++) {
    for (const char *c = states[i]; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || *c == '_')) return false;
    gp_buf_printf(sql, "%s'%s'", i ? "," : "", states[i]);
  }
  gp_buf_puts(sql, ")");
  return true;
}

/* Loads the active jobs and the last `keep_ended` ended ones, with their events: the
 * state index finds the active ones, the ended_at index the recent ended ones, and
 * job_events_job each loaded job's events, so the cost follows what is loaded, not the
 * history (but for one pass over the state index for the ended ids). */
static int load_bounded(sqlite_store *s, const gp_store_load_cb *cb, gp_err *err) {
  gp_buf ended, active, recent, sql;
  gp_buf_init(&ended, 4096);
  gp_buf_init(&active, 4096);
  gp_buf_init(&recent, 8192);
  gp_buf_init(&sql, 16384);
  int r = 0;
  if (!state_list(cb->ended_states, &ended) ||
      !state_list(cb->active_states ? cb->active_states : (const char *const[]){NULL}, &active)) {
    r = gp_err_set(err, GP_EINVAL, s->path, 0, NULL, "invalid job state name to load");
    goto out;
  }
  gp_buf_printf(&sql, "SELECT id, state FROM jobs WHERE state IN %s", ended.data);
  r = load_table(s, sql.data, row_ended, cb, err);
  /* Only an ended job has an ended_at: a walk down the jobs_ended index, no sort. The state
   * is checked too, so that a row whose document has an ended_at while its state is active
   * is not handed out twice (once above as active); `+state` keeps the planner off the
   * state index, which (from a wider jobs row on) it preferred: a sort of every ended job by
   * a JSON extract, 7 s for 1,000,000 of them. */
  gp_buf_printf(&recent,
                "SELECT id, e FROM (SELECT id, " GP_STORE_ENDED_AT " AS e FROM jobs WHERE "
                GP_STORE_ENDED_AT " IS NOT NULL AND +state IN %s ORDER BY e DESC, id DESC "
                "LIMIT %lld)",
                ended.data, (long long)(cb->keep_ended > 0 ? cb->keep_ended : 0));
  if (!r && cb->job) {
    gp_buf_reset(&sql);
    gp_buf_printf(&sql,
                  "SELECT id, state, queue, user, submitted_at, doc, rec FROM jobs WHERE state IN %s "
                  "ORDER BY id",
                  active.data);
    r = load_table(s, sql.data, row_job, cb, err);
  }
  if (!r && cb->job) {
    gp_buf_reset(&sql);
    gp_buf_printf(&sql,
                  "SELECT j.id, j.state, j.queue, j.user, j.submitted_at, j.doc, j.rec FROM (%s) AS k "
                  "JOIN jobs AS j ON j.id = k.id ORDER BY k.e, k.id",
                  recent.data);
    r = load_table(s, sql.data, row_job, cb, err);
  }
  if (!r && cb->event) {
    gp_buf_reset(&sql);
    gp_buf_printf(&sql,
                  "SELECT job_id, at, event, doc FROM job_events WHERE job_id IN "
                  "(SELECT id FROM jobs WHERE state IN %s UNION SELECT id FROM (%s)) "
                  "ORDER BY job_id, seq",
                  active.data, recent.data);
    r = load_table(s, sql.data, row_event, cb, err);
  }
out:
  gp_buf_done(&ended);
  gp_buf_done(&active);
  gp_buf_done(&recent);
  gp_buf_done(&sql);
  return r;
}

static int row_setting(sqlite3_stmt *st, const gp_store_load_cb *cb) {
  return cb->setting(cb->ctx, gp_store_sqlite_text(st, 0), gp_store_sqlite_text(st, 1));
}

static int s_load(gp_store *b, const gp_store_load_cb *cb, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  int r = 0;
  if (cb->ended && cb->ended_states) {
    r = load_bounded(s, cb, err);
  } else {
    if (!r && cb->job)
      r = load_table(s, "SELECT id, state, queue, user, submitted_at, doc, rec FROM jobs ORDER BY id",
                     row_job, cb, err);
    if (!r && cb->event)
      r = load_table(s, "SELECT job_id, at, event, doc FROM job_events ORDER BY job_id, seq",
                     row_event, cb, err);
  }
  if (!r && cb->node) r = load_table(s, "SELECT name, doc FROM nodes ORDER BY name", row_node, cb, err);
  if (!r && cb->alloc)
    r = load_table(s, "SELECT job_id, task, node, gpu_mask, gpu_milli, gpu_mem_mib, "
                      "mig_instance FROM allocations ORDER BY job_id, task", row_alloc, cb, err);
  if (!r && cb->queue) r = load_table(s, "SELECT name, doc FROM queues ORDER BY name", row_queue, cb, err);
  if (!r && cb->order) r = load_table(s, "SELECT id, node, doc FROM orders ORDER BY id", row_order, cb, err);
  if (!r && cb->meta) r = load_table(s, "SELECT key, value FROM meta ORDER BY key", row_meta, cb, err);
  if (!r && cb->credential)
    r = load_table(s, "SELECT node, hash FROM node_credentials ORDER BY node", row_cred, cb, err);
  if (!r && cb->interval)
    r = load_table(s, "SELECT " GP_STORE_SQLITE_IV_COLS " FROM ledger WHERE \"end\" IS NULL ORDER BY id",
                   row_interval, cb, err);
  if (!r && cb->node_interval)
    r = load_table(s, "SELECT id, node, model, capacity, gpus, state, start FROM node_ledger "
                      "WHERE \"end\" IS NULL ORDER BY id", row_node_interval, cb, err);
  if (!r && cb->setting)
    r = load_table(s, "SELECT name, doc FROM settings ORDER BY name", row_setting, cb, err);
  return r;
}

/* Writes GP_STORE_PROBE_BYTES into a meta row and takes them out again in one committed
 * transaction: the file system had room for them (SQLite reports ENOSPC as
 * SQLITE_FULL) and the pages are left free for the next writes. */
static int s_probe(gp_store *b, gp_err *err) {
  sqlite_store *s = (sqlite_store *)b;
  int r = s_begin(b, err);
  if (r) return r;
  char sql[160];
  snprintf(sql, sizeof sql,
           "INSERT OR REPLACE INTO meta(key, value) VALUES ('probe', zeroblob(%d));"
           "DELETE FROM meta WHERE key = 'probe'", GP_STORE_PROBE_BYTES);
  if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) r = db_error(s, err, "probe");
  if (!r) r = run(s, ST_COMMIT, err);
  if (r) s_rollback(b);
  return r;
}

static void s_close(gp_store *b) {
  sqlite_store *s = (sqlite_store *)b;
  for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(s->st[i]);
  sqlite3_close(s->db);
  free(s);
}

static int s_open_reader(gp_store *b, gp_store_reader **ret, gp_err *err) {
  return gp_store_sqlite_reader_open(((sqlite_store *)b)->path, ret, err);
}

static const gp_store_ops sqlite_ops = {
    "sqlite", s_begin, s_commit, s_rollback, s_put_job, s_add_event, s_put_node, s_put_alloc,
    s_del_allocs, s_put_queue, s_del_queue, s_put_order, s_del_orders, s_del_order, s_set_meta,
    s_load, s_close, s_probe, s_put_credential, s_open_reader, s_open_interval,
    s_close_intervals, s_set_interval_use, s_open_node_interval, s_close_node_interval, s_put_setting,
    s_del_node,
};

/* The database holds every job's command and environment (API keys among them): it is the
 * owner's alone, whatever the umask or the data directory's mode. SQLite gives the -wal and
 * -shm files it creates the database's mode, so making the file first, 0600, covers new
 * ones; an existing database, -wal or -shm more open than that is closed to others. A
 * database of 0 bytes is refused: it would start as a new store whose numbers restart. */
static int own_file(const char *path, bool create, bool *ret_existed, gp_err *err) {
  struct stat before;
  bool existed = stat(path, &before) == 0;
  if (ret_existed) *ret_existed = existed;
  if (create && existed && before.st_size == 0)
    return gp_err_set(err, GP_EINVAL, path, 0, NULL,
                      "the store file is empty (0 bytes), not a gpool store: restore it from a "
                      "backup, or move it away to start a new, empty store");
  int fd = open(path, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && !create && errno == ENOENT) return 0;
  if (fd < 0) return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot open the store: %s", strerror(errno));
  struct stat st;
  int r = 0;
  if (fstat(fd, &st) == 0 && (st.st_mode & 077) && fchmod(fd, st.st_mode & 0700) != 0)
    r = gp_err_set(err, GP_EIO, path, 0, NULL, "cannot make the store private: %s", strerror(errno));
  close(fd);
  return r;
}

/* The number of gpool tables in the database (before the schema is applied). */
static int gpool_tables(sqlite_store *s) {
  sqlite3_stmt *st = NULL;
  int n = 0;
  if (sqlite3_prepare_v2(s->db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                "name IN ('jobs', 'nodes', 'orders', 'meta')",
                         -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* Reads the store's id into s->base.id, making one when the store has none (a new store, or
 * one made by a gpool that kept no id). */
static int load_identity(sqlite_store *s, gp_err *err) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, "SELECT store_id FROM identity WHERE one = 1", -1, &st, NULL) !=
      SQLITE_OK)
    return db_error(s, err, "reading the store's identity");
  if (sqlite3_step(st) == SQLITE_ROW)
    snprintf(s->base.id, sizeof s->base.id, "%s", gp_store_sqlite_text(st, 0));
  sqlite3_finalize(st);
  if (strlen(s->base.id) == GP_STORE_ID_MAX - 1) return 0;
  int rc = gp_store_make_id(s->base.id, s->path, err);
  if (rc) return rc;
  if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO identity(one, store_id) VALUES (1, ?1)",
                         -1, &st, NULL) != SQLITE_OK)
    return db_error(s, err, "writing the store's identity");
  sqlite3_bind_text(st, 1, s->base.id, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : db_error(s, err, "writing the store's identity");
}

/* Adds a column unless the table has it already (SQLite has no ADD COLUMN IF NOT EXISTS,
 * and a store whose version was set back must still open). */
static int add_column(sqlite3 *db, const char *table, const char *column, const char *decl,
                      char **msg) {
  sqlite3_stmt *st = NULL;
  bool has = false;
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT 1 FROM pragma_table_info('%s') WHERE name = '%s'", table, column);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) has = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  if (has) return SQLITE_OK;
  snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", table, column, decl);
  return sqlite3_exec(db, sql, NULL, NULL, msg);
}

/* Brings the schema to SCHEMA_VERSION in one transaction (PRAGMA user_version holds the
 * version). The tables' statements are idempotent and run on every open, so a store made
 * before a table existed gets it; a store of a newer gpool is refused, untouched: an
 * older gpool would misread or damage what it does not know. */
static int migrate(sqlite_store *s, gp_err *err) {
  sqlite3_stmt *v = NULL;
  int version = 0;
  if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &v, NULL) == SQLITE_OK &&
      sqlite3_step(v) == SQLITE_ROW)
    version = sqlite3_column_int(v, 0);
  sqlite3_finalize(v);
  if (version > SCHEMA_VERSION)
    return gp_err_set(err, GP_EINVAL, s->path, 0, NULL,
                      "store schema %d is newer than this gpool (%d): run a gpool at least as "
                      "new as the one that wrote it", version, SCHEMA_VERSION);
  char *msg = NULL;
  char set[64];
  snprintf(set, sizeof set, "PRAGMA user_version=%d", SCHEMA_VERSION);
  if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK ||
      sqlite3_exec(s->db, schema_sql, NULL, NULL, &msg) != SQLITE_OK ||
      sqlite3_exec(s->db, gp_store_sqlite_rollup_schema, NULL, NULL, &msg) != SQLITE_OK ||
      (version < 2 && gp_store_sqlite_rollup_build(s->db, &msg) != SQLITE_OK) ||
      (version < 3 && add_column(s->db, "ledger", "service", "TEXT NOT NULL DEFAULT ''", &msg)) ||
      (version < 4 && add_column(s->db, "jobs", "rec", "TEXT", &msg)) ||
      sqlite3_exec(s->db, set, NULL, NULL, &msg) != SQLITE_OK ||
      sqlite3_exec(s->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
    int r = gp_err_set(err, GP_EIO, s->path, 0, NULL, "cannot prepare the store: %s",
                       msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return r;
  }
  return 0;
}

int gp_store_sqlite_open(const char *path, gp_store **ret, gp_err *err) {
  bool existed = false;
  int r = own_file(path, true, &existed, err);
  char side[600];
  for (int i = 0; i < 2 && !r; i++) {
    snprintf(side, sizeof side, "%s%s", path, i ? "-shm" : "-wal");
    r = own_file(side, false, NULL, err);
  }
  if (r) return r;
  sqlite_store *s = gp_xcalloc(1, sizeof *s);
  s->base.ops = &sqlite_ops;
  atomic_init(&s->cap_pages, -1);
  snprintf(s->path, sizeof s->path, "%s", path);
  if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                        SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    r = gp_err_set(err, GP_EIO, path, 0, NULL, "cannot open the store: %s",
                   s->db ? sqlite3_errmsg(s->db) : "out of memory");
    goto fail;
  }
  sqlite3_busy_timeout(s->db, 5000);
  /* WAL lets readers (a backup, sqlite3 shell) work beside the server; FULL syncs the WAL
   * on every commit, which is what makes an acknowledged submission durable. */
  char *msg = NULL;
  /* An existing file is a gpool store only with gpool's tables: anything else (another
   * program's database, one emptied by hand) must not silently become a new store. */
  if (existed && gpool_tables(s) == 0) {
    r = gp_err_set(err, GP_EINVAL, path, 0, NULL,
                   "the file is not a gpool store (no gpool tables): restore it from a backup, "
                   "or move it away to start a new, empty store");
    goto fail;
  }
  if (sqlite3_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                          "PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY;",
                   NULL, NULL, &msg) != SQLITE_OK) {
    r = gp_err_set(err, GP_EIO, path, 0, NULL, "cannot prepare the store: %s",
                   msg ? msg : sqlite3_errmsg(s->db));
    sqlite3_free(msg);
    goto fail;
  }
  if ((r = migrate(s, err)) != 0) goto fail;
  for (int i = 0; i < ST_COUNT; i++) {
    if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                           NULL) != SQLITE_OK) {
      r = db_error(s, err, stmt_sql[i]);
      goto fail;
    }
  }
  if ((r = load_identity(s, err)) != 0) goto fail;
  *ret = &s->base;
  return 0;
fail:
  s_close(&s->base);
  return r;
}

int gp_store_sqlite_cap_pages(gp_store *b, int64_t pages) {
  if (b->ops != &sqlite_ops || pages < 0) return GP_EINVAL;
  atomic_store(&((sqlite_store *)b)->cap_pages, pages);
  return 0;
}

void gp_store_close(gp_store *s) {
  if (s) s->ops->close(s);
}
