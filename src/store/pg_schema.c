/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend's schema and its versions (pg.h, gp_store_pg_schema). The tables
 * are SQLite's (store.h lists them), with PostgreSQL's types; `schema_version` holds the
 * version a database is at. Opening a database applies, in one transaction, every
 * migration step past its version; a database at a newer version than this gpool knows
 * is refused, since an older gpool would misread or damage what it does not know.
 *
 * Several servers open one database at once (a leader and its followers starting
 * together): a transaction-level advisory lock serialises the create/migrate/identity
 * transaction, so exactly one of them creates the tables and makes the store's id and the
 * others find both. Transaction-level, so the lock cannot stack on re-entry or outlive
 * the transaction on a connection that lives on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg.h"
#include "store/pg_rollup.h"

/* The advisory lock's key: "gpool" in ASCII. */
#define SCHEMA_LOCK_KEY "444267982700"

/* A job's ended_at, from its document (NULL while it is active, or for a document that
 * is not JSON: the store keeps what it is given). Job history reads and orders ended
 * jobs by it, through the jobs_ended index on this very expression. */
#define ENDED_AT_FN                                                                         \
  "CREATE OR REPLACE FUNCTION gp_ended_at(doc text) RETURNS bigint LANGUAGE plpgsql"      \
  " IMMUTABLE PARALLEL SAFE AS $f$ BEGIN"                                                  \
  " IF doc NOT LIKE '%\"ended_at\"%' THEN RETURN NULL; END IF;"                            \
  " RETURN floor((doc::jsonb ->> 'ended_at')::numeric)::bigint;"                           \
  " EXCEPTION WHEN others THEN RETURN NULL; END $f$;"

/* Step i takes a database from version i to i + 1. */
static const char *const steps[] = {
    "CREATE TABLE IF NOT EXISTS jobs(id bigint PRIMARY KEY, state text NOT NULL,"
    " queue text NOT NULL, \"user\" text NOT NULL, submitted_at bigint NOT NULL,"
    " doc text NOT NULL);"
    "CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);"
    "CREATE TABLE IF NOT EXISTS job_events(seq bigserial PRIMARY KEY, job_id bigint NOT NULL,"
    " at bigint NOT NULL, event text NOT NULL, doc text NOT NULL);"
    "CREATE INDEX IF NOT EXISTS job_events_job ON job_events(job_id, seq);"
    "CREATE TABLE IF NOT EXISTS nodes(name text PRIMARY KEY, doc text NOT NULL);"
    "CREATE TABLE IF NOT EXISTS allocations(job_id bigint NOT NULL, task integer NOT NULL,"
    " node text NOT NULL, gpu_mask bigint NOT NULL, gpu_milli integer NOT NULL,"
    " gpu_mem_mib bigint NOT NULL, mig_instance integer NOT NULL, PRIMARY KEY(job_id, task));"
    "CREATE TABLE IF NOT EXISTS queues(name text PRIMARY KEY, doc text NOT NULL);"
    "CREATE TABLE IF NOT EXISTS orders(id bigint PRIMARY KEY, node text NOT NULL,"
    " doc text NOT NULL);"
    "CREATE INDEX IF NOT EXISTS orders_node ON orders(node, id);"
    "CREATE TABLE IF NOT EXISTS meta(key text PRIMARY KEY, value bigint NOT NULL);"
    "CREATE TABLE IF NOT EXISTS identity(one integer PRIMARY KEY CHECK (one = 1),"
    " store_id text NOT NULL);"
    "CREATE TABLE IF NOT EXISTS node_credentials(node text PRIMARY KEY, hash text NOT NULL);"
    "CREATE TABLE IF NOT EXISTS ledger(id bigserial PRIMARY KEY, job_id bigint NOT NULL,"
    " attempt integer NOT NULL, task integer NOT NULL, \"user\" text NOT NULL,"
    " queue text NOT NULL, node text NOT NULL, gpu_uuid text NOT NULL, model text NOT NULL,"
    " capacity text NOT NULL, share double precision NOT NULL, start bigint NOT NULL,"
    " \"end\" bigint, used_gpu_s double precision, energy_j double precision);"
    "CREATE INDEX IF NOT EXISTS ledger_start ON ledger(start, \"end\");"
    "CREATE INDEX IF NOT EXISTS ledger_end ON ledger(\"end\", start);"
    "CREATE INDEX IF NOT EXISTS ledger_job ON ledger(job_id, attempt);"
    "CREATE TABLE IF NOT EXISTS node_ledger(id bigserial PRIMARY KEY, node text NOT NULL,"
    " model text NOT NULL, capacity text NOT NULL, gpus integer NOT NULL, state text NOT NULL,"
    " start bigint NOT NULL, \"end\" bigint);"
    "CREATE INDEX IF NOT EXISTS node_ledger_start ON node_ledger(start);"
    "CREATE INDEX IF NOT EXISTS node_ledger_end ON node_ledger(\"end\");"
    "CREATE INDEX IF NOT EXISTS node_ledger_node ON node_ledger(node, \"end\");"
    ENDED_AT_FN
    "CREATE INDEX IF NOT EXISTS jobs_ended ON jobs(gp_ended_at(doc));"
    "CREATE TABLE IF NOT EXISTS settings(name text PRIMARY KEY, doc text NOT NULL);",
    /* 1 -> 2: the ledger's daily roll-ups, built from the closed intervals (pg_rollup.h). */
    GP_STORE_PG_ROLLUP_STEP,
    /* 2 -> 3: a replica's service on its intervals ("" for other jobs), for reports by
     * service; older intervals read as no service. */
    "ALTER TABLE ledger ADD COLUMN IF NOT EXISTS service text NOT NULL DEFAULT ''",
    /* 3 -> 4: each job's load record (store.h, gp_store_job.rec), written with the job;
     * older rows have none until the server writes it (it reads their documents meanwhile). */
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS rec text",
};
#define SCHEMA_VERSION ((int)(sizeof steps / sizeof steps[0]))

int gp_store_pg_schema_version(void) { return SCHEMA_VERSION; }

/* Reads the store's id, making it when the store has none yet (inside the transaction
 * that holds the schema lock, so every server on the database reads the same one). */
static int identity(pg_store *s, gp_err *err) {
  PGresult *res = gp_store_pg_query(s, "SELECT store_id FROM identity WHERE one = 1", 0, NULL, err);
  if (!res) return s->code;
  if (PQntuples(res) == 1)
    snprintf(s->base.id, sizeof s->base.id, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  if (strlen(s->base.id) == GP_STORE_ID_MAX - 1) return 0;
  int rc = gp_store_make_id(s->base.id, s->shown, err);
  if (rc) return rc;
  const char *p[] = {s->base.id};
  return gp_store_pg_exec(s, "INSERT INTO identity(one, store_id) VALUES (1, $1) "
                             "ON CONFLICT (one) DO UPDATE SET store_id = EXCLUDED.store_id",
                          1, p, err);
}

static int migrate(pg_store *s, gp_err *err) {
  const char *key[] = {SCHEMA_LOCK_KEY};
  int r = gp_store_pg_exec(s, "SELECT pg_advisory_xact_lock($1::bigint)", 1, key, err);
  if (!r)
    r = gp_store_pg_exec(s, "CREATE TABLE IF NOT EXISTS schema_version(one integer PRIMARY KEY"
                            " CHECK (one = 1), version integer NOT NULL)", 0, NULL, err);
  if (r) return r;
  PGresult *res = gp_store_pg_query(s, "SELECT version FROM schema_version WHERE one = 1", 0,
                                    NULL, err);
  if (!res) return s->code;
  int version = PQntuples(res) == 1 ? atoi(PQgetvalue(res, 0, 0)) : 0;
  PQclear(res);
  if (version > SCHEMA_VERSION)
    return gp_err_set(err, GP_EINVAL, s->shown, 0, "store",
                      "store schema %d is newer than this gpool (%d): run a gpool at least as "
                      "new as the one that wrote it", version, SCHEMA_VERSION);
  for (int v = version; v < SCHEMA_VERSION && !r; v++)
    r = gp_store_pg_exec(s, steps[v], 0, NULL, err);
  if (!r && version < SCHEMA_VERSION) {
    pg_num v = gp_store_pg_i64(SCHEMA_VERSION);
    const char *p[] = {v.s};
    r = gp_store_pg_exec(s, "INSERT INTO schema_version(one, version) VALUES (1, $1::integer) "
                            "ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version",
                         1, p, err);
  }
  return r ? r : identity(s, err);
}

int gp_store_pg_schema(pg_store *s, gp_err *err) {
  int r = gp_store_pg_exec(s, "BEGIN", 0, NULL, err);
  if (r) return r;
  r = migrate(s, err);
  if (!r) r = gp_store_pg_exec(s, "COMMIT", 0, NULL, err);
  if (r) PQclear(PQexec(s->conn, "ROLLBACK"));
  return r;
}
