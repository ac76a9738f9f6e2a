/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend of the store (store.h): every operation with the SQLite
 * backend's semantics (sqlite.c is the reference), on one libpq connection, parameterised
 * statements only. A commit returns 0 only once PostgreSQL has committed it
 * (synchronous_commit on, pg_conn.c), so an acknowledged submission survives the loss of
 * the server and of PostgreSQL's process.
 *
 * A lost connection fails the operation (GP_EIO, "connection lost"); the next begin()
 * reconnects, so the server's rollback-and-reload path recovers once the database is
 * back. With fencing on (gp_store.fence_epoch > 0), begin() reads the lease row under a
 * share lock and refuses the transaction ("fenced") when the epoch moved on: a takeover's
 * update of the row waits for that lock, so no write of an old leader commits after a new
 * leader's epoch exists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg.h"
#include "store/pg_rollup.h"
#include "util/mem.h"

#define ARGS(...) (sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                  (const char *const[]){__VA_ARGS__}
#define I64(v) (gp_store_pg_i64(v).s)
#define F64(v) (gp_store_pg_f64(v).s)

/* Writes inside a transaction are pipelined: sent without waiting for their answers,
 * which are read every PIPELINE_BATCH writes and at commit. A transaction then costs
 * about two round trips (begin, commit) instead of one per row: on a local socket a round
 * trip costs more than the row's work. A write that fails is reported by a later write or
 * by commit; nothing is acknowledged before commit returns 0, and the caller rolls back
 * after any failure (store.h), so the deferral changes no outcome. */
#define PIPELINE_BATCH 128

/* Sends a Sync and reads every answer up to it. Returns 0, or the first failure. With
 * `committing`, a COMMIT the server answered as ROLLBACK (the transaction had failed) is a
 * failure; with `rows`, the last row-returning answer is handed back (the caller clears it). */
static int drain(pg_store *s, bool committing, PGresult **rows, gp_err *err) {
  s->pending = 0;
  if (PQpipelineSync(s->conn) != 1) return gp_store_pg_fail(s, NULL, "sending to the store", err);
  int r = 0, empty = 0;
  for (;;) {
    PGresult *res = PQgetResult(s->conn);
    if (!res) {
      /* NULL ends each statement's answers; twice in a row, nothing more is coming. */
      if (++empty < 2) continue;
      if (!r) r = gp_store_pg_fail(s, NULL, "reading from the store", err);
      break;
    }
    empty = 0;
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_PIPELINE_SYNC) {
      PQclear(res);
      break;
    }
    if (st == PGRES_FATAL_ERROR && !r) r = gp_store_pg_fail(s, res, "a write", err);
    if (st == PGRES_COMMAND_OK && committing && !r && strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
      snprintf(s->base.failure, sizeof s->base.failure, "database error");
      s->code = GP_EIO;
      r = gp_err_set(err, GP_EIO, s->shown, 0, NULL,
                     "database error: the transaction failed and was rolled back");
    }
    if (st == PGRES_TUPLES_OK && rows) {
      PQclear(*rows);
      *rows = res;
    } else {
      PQclear(res);
    }
  }
  if (r) s->failed = r;
  return r;
}

static void leave_pipeline(pg_store *s) {
  if (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF) return;
  if (s->pending) drain(s, false, NULL, NULL);
  /* Answers still unread (never, when every send was counted): read up to a Sync, twice. */
  for (int i = 0; i < 2 && !PQexitPipelineMode(s->conn); i++) drain(s, false, NULL, NULL);
  if (PQpipelineStatus(s->conn) != PQ_PIPELINE_OFF && PQstatus(s->conn) == CONNECTION_OK) {
    /* Out of step with the server: a new session is the one safe state (PostgreSQL rolls
     * back what the old one left open). */
    PQreset(s->conn);
    s->n_prepared = 0;
    if (PQstatus(s->conn) == CONNECTION_OK) gp_store_pg_session(s->conn, s->shown, s->writer, NULL);
  }
}

/* Queues a statement of the open transaction (see PIPELINE_BATCH). */
static int send(pg_store *s, const char *sql, int n, const char *const *p, gp_err *err) {
  if (PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF) return gp_store_pg_exec(s, sql, n, p, err);
  if (s->failed) {
    gp_err_set(err, s->failed, s->shown, 0, NULL, "%s: an earlier write of this transaction failed",
               s->base.failure);
    return s->failed;
  }
  /* Each write statement is parsed and planned once per connection: the server's work
   * per row is then the row's own. The statements are this file's constants, so their
   * address names them. */
  int k = 0;
  while (k < s->n_prepared && s->prepared[k] != sql) k++;
  char name[16];
  snprintf(name, sizeof name, "gp_w%d", k);
  bool ok = true;
  if (k == s->n_prepared && k < GP_STORE_PG_PREPARED) {
    ok = PQsendPrepare(s->conn, name, sql, n, NULL) == 1;
    s->prepared[s->n_prepared++] = sql;
    s->pending++;
  }
  if (ok) {
    ok = k < GP_STORE_PG_PREPARED
             ? PQsendQueryPrepared(s->conn, name, n, p, NULL, NULL, 0) == 1
             : PQsendQueryParams(s->conn, sql, n, NULL, p, NULL, NULL, 0) == 1;
  }
  if (!ok) {
    s->failed = gp_store_pg_fail(s, NULL, sql, err);
    return s->failed;
  }
  return ++s->pending >= PIPELINE_BATCH ? drain(s, false, NULL, err) : 0;
}

static int exec(pg_store *s, const char *sql, int n, const char *const *p, gp_err *err) {
  return send(s, sql, n, p, err);
}

static void pg_rollback(gp_store *b) {
  pg_store *s = (pg_store *)b;
  if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) return;
  leave_pipeline(s);
  if (PQtransactionStatus(s->conn) != PQTRANS_IDLE) PQclear(PQexec(s->conn, "ROLLBACK"));
  if (s->failed) {
    /* A statement whose preparing failed is not there: prepare them all afresh. */
    PQclear(PQexec(s->conn, "DEALLOCATE ALL"));
    s->n_prepared = 0;
  }
  s->failed = 0;
}

static int fenced(pg_store *s, const char *why, gp_err *err) {
  snprintf(s->base.failure, sizeof s->base.failure, "fenced");
  s->code = GP_ESTATE;
  return gp_err_set(err, GP_ESTATE, s->shown, 0, NULL,
                    "fenced: this server's lease epoch %lld is no longer current (%s)",
                    (long long)s->base.fence_epoch, why);
}

/* The lease row, read under a share lock held to the end of the transaction. */
static int check_fence(pg_store *s, int r, PGresult *rows, gp_err *err) {
  if (r) {
    /* No lease table (undefined_table): no lease, so no epoch can be current. */
    return strcmp(s->sqlstate, "42P01") == 0 ? fenced(s, "no lease table", err) : r;
  }
  if (!rows || PQntuples(rows) != 1) return fenced(s, "no lease row", err);
  long long epoch = strtoll(PQgetvalue(rows, 0, 0), NULL, 10);
  if (epoch == s->base.fence_epoch) return 0;
  char why[64];
  snprintf(why, sizeof why, "the lease is at epoch %lld", epoch);
  return fenced(s, why, err);
}

static int begin_once(pg_store *s, gp_err *err) {
  int r = gp_store_pg_ensure(s, err);
  if (r) return r;
  pg_rollback(&s->base); /* a transaction a failed caller left open */
  if (!PQenterPipelineMode(s->conn)) return gp_store_pg_fail(s, NULL, "pipeline mode", err);
  /* BEGIN and the fence check travel together: one round trip. */
  bool fence = s->base.fence_epoch > 0;
  if (!PQsendQueryParams(s->conn, "BEGIN", 0, NULL, NULL, NULL, NULL, 0) ||
      (fence && !PQsendQueryParams(s->conn, "SELECT epoch FROM gp_lease WHERE id = 1 FOR SHARE",
                                   0, NULL, NULL, NULL, NULL, 0)))
    r = gp_store_pg_fail(s, NULL, "BEGIN", err);
  PGresult *rows = NULL;
  if (!r) r = drain(s, false, &rows, err);
  if (fence) r = check_fence(s, r, rows, err);
  PQclear(rows);
  if (r) pg_rollback(&s->base);
  return r;
}

static int pg_begin(gp_store *b, gp_err *err) {
  pg_store *s = (pg_store *)b;
  int r = begin_once(s, err);
  /* A connection that died while idle (PostgreSQL restarted, a failover) is found dead
   * only now; nothing of this transaction was done yet, so one more try on a new
   * connection is safe and saves the caller a needless reload. */
  if (r && s->conn && PQstatus(s->conn) != CONNECTION_OK) {
    if (err) *err = (gp_err){0};
    r = begin_once(s, err);
  }
  return r;
}

static int pg_commit(gp_store *b, gp_err *err) {
  pg_store *s = (pg_store *)b;
  if (!s->conn || PQstatus(s->conn) != CONNECTION_OK)
    return gp_store_pg_fail(s, NULL, "COMMIT", err);
  if (s->failed || PQpipelineStatus(s->conn) == PQ_PIPELINE_OFF) {
    snprintf(s->base.failure, sizeof s->base.failure, "%s",
             s->failed ? s->base.failure : "database error");
    return gp_err_set(err, s->failed ? s->failed : GP_ESTATE, s->shown, 0, NULL,
                      "%s: the transaction failed earlier or was never begun: cannot commit",
                      s->base.failure);
  }
  if (!PQsendQueryParams(s->conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0))
    return gp_store_pg_fail(s, NULL, "COMMIT", err);
  int r = drain(s, true, NULL, err);
  if (!r && PQtransactionStatus(s->conn) != PQTRANS_IDLE)
    r = gp_err_set(err, GP_EIO, s->shown, 0, NULL, "database error: COMMIT left a transaction open");
  if (!r) leave_pipeline(s);
  return r;
}

static int pg_put_job(gp_store *b, const gp_store_job *r, gp_err *err) {
  return exec((pg_store *)b,
              "INSERT INTO jobs(id, state, queue, \"user\", submitted_at, doc, rec) VALUES "
              "($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, "
              "queue = EXCLUDED.queue, \"user\" = EXCLUDED.\"user\", "
              "submitted_at = EXCLUDED.submitted_at, doc = EXCLUDED.doc, rec = EXCLUDED.rec",
              ARGS(I64(r->id), r->state, r->queue, r->user, I64(r->submitted_at), r->doc, r->rec),
              err);
}

static int pg_add_event(gp_store *b, const gp_store_event *r, gp_err *err) {
  return exec((pg_store *)b, "INSERT INTO job_events(job_id, at, event, doc) VALUES ($1, $2, $3, $4)",
              ARGS(I64(r->job_id), I64(r->at), r->event, r->doc), err);
}

static int pg_put_node(gp_store *b, const gp_store_node *r, gp_err *err) {
  return exec((pg_store *)b, "INSERT INTO nodes(name, doc) VALUES ($1, $2) "
                             "ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc",
              ARGS(r->name, r->doc), err);
}

static int pg_put_alloc(gp_store *b, const gp_store_alloc *r, gp_err *err) {
  return exec((pg_store *)b,
              "INSERT INTO allocations(job_id, task, node, gpu_mask, gpu_milli, gpu_mem_mib, "
              "mig_instance) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (job_id, task) DO "
              "UPDATE SET node = EXCLUDED.node, gpu_mask = EXCLUDED.gpu_mask, "
              "gpu_milli = EXCLUDED.gpu_milli, gpu_mem_mib = EXCLUDED.gpu_mem_mib, "
              "mig_instance = EXCLUDED.mig_instance",
              ARGS(I64(r->job_id), I64(r->task), r->node, I64((int64_t)r->gpu_mask),
                   I64(r->gpu_milli), I64(r->gpu_mem_mib), I64(r->mig_instance)),
              err);
}

static int pg_del_allocs(gp_store *b, int64_t job_id, gp_err *err) {
  return exec((pg_store *)b, "DELETE FROM allocations WHERE job_id = $1", ARGS(I64(job_id)), err);
}

static int pg_put_queue(gp_store *b, const gp_store_queue *r, gp_err *err) {
  return exec((pg_store *)b, "INSERT INTO queues(name, doc) VALUES ($1, $2) "
                             "ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc",
              ARGS(r->name, r->doc), err);
}

static int pg_del_queue(gp_store *b, const char *name, gp_err *err) {
  return exec((pg_store *)b, "DELETE FROM queues WHERE name = $1", ARGS(name), err);
}

static int pg_put_order(gp_store *b, const gp_store_order *r, gp_err *err) {
  return exec((pg_store *)b, "INSERT INTO orders(id, node, doc) VALUES ($1, $2, $3) "
                             "ON CONFLICT (id) DO UPDATE SET node = EXCLUDED.node, doc = EXCLUDED.doc",
              ARGS(I64(r->id), r->node, r->doc), err);
}

static int pg_del_orders(gp_store *b, const char *node, int64_t up_to, gp_err *err) {
  return exec((pg_store *)b, "DELETE FROM orders WHERE node = $1 AND id <= $2",
              ARGS(node, I64(up_to)), err);
}

static int pg_del_order(gp_store *b, int64_t id, gp_err *err) {
  return exec((pg_store *)b, "DELETE FROM orders WHERE id = $1", ARGS(I64(id)), err);
}

static int pg_set_meta(gp_store *b, const char *key, int64_t v, gp_err *err) {
  return exec((pg_store *)b, "INSERT INTO meta(key, value) VALUES ($1, $2) "
                             "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
              ARGS(key, I64(v)), err);
}

static int pg_put_credential(gp_store *b, const char *node, const char *hash, gp_err *err) {
  if (!hash) return exec((pg_store *)b, "DELETE FROM node_credentials WHERE node = $1", ARGS(node), err);
  return exec((pg_store *)b, "INSERT INTO node_credentials(node, hash) VALUES ($1, $2) "
                             "ON CONFLICT (node) DO UPDATE SET hash = EXCLUDED.hash",
              ARGS(node, hash), err);
}

static int pg_del_node(gp_store *b, const char *name, gp_err *err) {
  pg_store *s = (pg_store *)b;
  static const char *const sql[] = {"DELETE FROM nodes WHERE name = $1",
                                    "DELETE FROM orders WHERE node = $1",
                                    "DELETE FROM node_credentials WHERE node = $1"};
  for (int i = 0; i < 3; i++) {
    int r = exec(s, sql[i], ARGS(name), err);
    if (r) return r;
  }
  return 0;
}

static int pg_put_setting(gp_store *b, const char *name, const char *doc, gp_err *err) {
  if (!doc) return exec((pg_store *)b, "DELETE FROM settings WHERE name = $1", ARGS(name), err);
  return exec((pg_store *)b, "INSERT INTO settings(name, doc) VALUES ($1, $2) "
                             "ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc",
              ARGS(name, doc), err);
}

static const char *or_empty(const char *v) { return v ? v : ""; }

static int pg_open_interval(gp_store *b, const gp_store_interval *r, gp_err *err) {
  return exec((pg_store *)b,
              "INSERT INTO ledger(job_id, attempt, task, \"user\", queue, node, gpu_uuid, model,"
              " capacity, share, start, service)"
              " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
              ARGS(I64(r->job_id), I64(r->attempt), I64(r->task), or_empty(r->user),
                   or_empty(r->queue), or_empty(r->node), or_empty(r->gpu_uuid),
                   or_empty(r->model), or_empty(r->capacity), F64(r->share), I64(r->start),
                   or_empty(r->service)),
              err);
}

static int pg_close_intervals(gp_store *b, int64_t job_id, int64_t end, gp_err *err) {
  /* The roll-ups take the intervals while they are still open (pg_rollup.h). */
  int r = exec((pg_store *)b, GP_STORE_PG_ROLL_DAYS_CLOSE, ARGS(I64(job_id), I64(end)), err);
  if (!r) r = exec((pg_store *)b, GP_STORE_PG_ROLL_ALLOC_CLOSE, ARGS(I64(job_id), I64(end)), err);
  if (!r) r = exec((pg_store *)b, GP_STORE_PG_ROLL_HELD_CLOSE, ARGS(I64(job_id), I64(end)), err);
  if (r) return r;
  return exec((pg_store *)b, "UPDATE ledger SET \"end\" = GREATEST(start, $2::bigint) "
                             "WHERE job_id = $1 AND \"end\" IS NULL",
              ARGS(I64(job_id), I64(end)), err);
}

/* Each open interval of the job on the node takes its share of the job's figures there;
 * an unknown figure (< 0) keeps what the interval had. */
static int pg_set_interval_use(gp_store *b, int64_t job_id, const char *node, double used_gpu_s,
                               double energy_j, gp_err *err) {
  return exec((pg_store *)b,
              "UPDATE ledger SET"
              " used_gpu_s = CASE WHEN $3::float8 < 0 THEN used_gpu_s"
              " ELSE $3::float8 * share / t.total END,"
              " energy_j = CASE WHEN $4::float8 < 0 THEN energy_j"
              " ELSE $4::float8 * share / t.total END"
              " FROM (SELECT sum(share) AS total FROM ledger WHERE job_id = $1 AND node = $2"
              " AND \"end\" IS NULL) AS t WHERE job_id = $1 AND node = $2 AND \"end\" IS NULL",
              ARGS(I64(job_id), node, F64(used_gpu_s < 0 ? -1 : used_gpu_s),
                   F64(energy_j < 0 ? -1 : energy_j)),
              err);
}

static int pg_close_node_interval(gp_store *b, const char *node, int64_t end, gp_err *err) {
  return exec((pg_store *)b, "UPDATE node_ledger SET \"end\" = GREATEST(start, $2::bigint) "
                             "WHERE node = $1 AND \"end\" IS NULL",
              ARGS(node, I64(end)), err);
}

static int pg_open_node_interval(gp_store *b, const gp_store_node_interval *r, gp_err *err) {
  int rc = pg_close_node_interval(b, r->node, r->start, err);
  if (rc) return rc;
  return exec((pg_store *)b,
              "INSERT INTO node_ledger(node, model, capacity, gpus, state, start)"
              " VALUES ($1, $2, $3, $4, $5, $6)",
              ARGS(or_empty(r->node), or_empty(r->model), or_empty(r->capacity), I64(r->gpus),
                   or_empty(r->state), I64(r->start)),
              err);
}

/* Writes GP_STORE_PROBE_BYTES of data that does not compress (PostgreSQL compresses large
 * values) into a settings row and takes it out again, in one committed transaction. */
static int pg_probe(gp_store *b, gp_err *err) {
  pg_store *s = (pg_store *)b;
  int r = pg_begin(b, err);
  if (r) return r;
  r = exec(s, "INSERT INTO settings(name, doc) SELECT 'gpool.probe', string_agg(md5(g::text ||"
              " random()::text), '') FROM generate_series(1, $1::integer / 32) AS g",
           ARGS(I64(GP_STORE_PROBE_BYTES)), err);
  if (!r) r = exec(s, "DELETE FROM settings WHERE name = 'gpool.probe'", 0, NULL, err);
  if (!r) r = pg_commit(b, err);
  if (r) pg_rollback(b);
  return r;
}

static void pg_close(gp_store *b) {
  pg_store *s = (pg_store *)b;
  if (s->conn) PQfinish(s->conn);
  free(s->url);
  free(s);
}

static int pg_open_reader(gp_store *b, gp_store_reader **ret, gp_err *err) {
  pg_store *s = (pg_store *)b;
  return gp_store_pg_reader_open(s->url, s->shown, ret, err);
}

static const gp_store_ops pg_ops = {
    "postgresql", pg_begin, pg_commit, pg_rollback, pg_put_job, pg_add_event, pg_put_node,
    pg_put_alloc, pg_del_allocs, pg_put_queue, pg_del_queue, pg_put_order, pg_del_orders,
    pg_del_order, pg_set_meta, gp_store_pg_load, pg_close, pg_probe, pg_put_credential,
    pg_open_reader, pg_open_interval, pg_close_intervals, pg_set_interval_use,
    pg_open_node_interval, pg_close_node_interval, pg_put_setting, pg_del_node,
};

int gp_store_pg_open(const char *url, gp_store **ret, gp_err *err) {
  if (!url || !*url || strlen(url) >= GP_STORE_PG_URL_MAX)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "store",
                      "the store URL must be 1 to %d characters", GP_STORE_PG_URL_MAX - 1);
  /* A URL libpq cannot parse is the config's mistake, not a lost connection. libpq's
   * message names the option at fault, never a password's value. */
  char *why = NULL;
  PQconninfoOption *opts = PQconninfoParse(url, &why);
  if (!opts) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", why ? why : "out of memory");
    msg[strcspn(msg, "\n")] = '\0';
    PQfreemem(why);
    return gp_err_set(err, GP_EINVAL, NULL, 0, "store", "not a valid PostgreSQL URL: %s", msg);
  }
  PQconninfoFree(opts);
  pg_store *s = gp_xcalloc(1, sizeof *s);
  s->base.ops = &pg_ops;
  s->url = gp_xstrdup(url);
  gp_store_pg_mask_url(url, s->shown, sizeof s->shown);
  s->writer = true;
  s->conn = gp_store_pg_connect(url, s->shown, true, err);
  int r = s->conn ? gp_store_pg_schema(s, err) : GP_EIO;
  if (r) {
    pg_close(&s->base);
    return r;
  }
  *ret = &s->base;
  return 0;
}
