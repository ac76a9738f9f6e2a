/* SPDX-License-Identifier: Apache-2.0 */
/* What the files of the PostgreSQL backend share (store.h, gp_store_pg_open): the handle,
 * the connection settings, running a parameterised statement and naming its failure.
 * Values always travel as parameters (PQexecParams), never inside the SQL text. */
#ifndef GP_STORE_PG_H
#define GP_STORE_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* The URL as shown to people: its password replaced by "***" (errors, logs). */
#define GP_STORE_PG_URL_MAX 512

/* At most this many write statements are kept prepared per connection (pg.c). */
#define GP_STORE_PG_PREPARED 48

typedef struct pg_store {
  gp_store base;
  PGconn *conn;
  int code;                        /* the GP_E* code of the last failure */
  int pending;                     /* pipelined writes whose answers are unread (pg.c) */
  const char *prepared[GP_STORE_PG_PREPARED]; /* write statements prepared on this connection */
  int n_prepared;
  char sqlstate[6];                /* the SQLSTATE of the last failure, "" when none */
  int failed;                      /* GP_E* of a write of the open transaction that failed */
  char *url;                       /* as given: readers open their own connections */
  bool writer;                     /* the store's connection, not a reader's */
  char shown[GP_STORE_PG_URL_MAX]; /* the masked URL, for errors */
} pg_store;

/* Copies `url` into `out` with any password (user:PASSWORD@ or password=...) masked. */
void gp_store_pg_mask_url(const char *url, char *out, size_t size);

/* Connects to `url` with gpool's defaults for what the URL leaves unset (connect and
 * keepalive timeouts, tcp_user_timeout) and sets the session up (statement_timeout,
 * synchronous_commit on). Returns the connection or NULL with *err filled. */
PGconn *gp_store_pg_connect(const char *url, const char *shown, bool writer, gp_err *err);
/* Sets up a connection that (re)connected: the session settings are per connection; a
 * writer's transactions are ended by PostgreSQL when left idle (pg_conn.c). */
int gp_store_pg_session(PGconn *c, const char *shown, bool writer, gp_err *err);

/* Reconnects a connection that broke (PostgreSQL restarted, a failover, a terminated
 * backend) and sets its session up again; 0 when connected, else "connection lost". */
int gp_store_pg_ensure(pg_store *s, gp_err *err);

/* The operator's name for a failed result (or a broken connection when res is NULL):
 * "connection lost", "timeout", "disk full", "read-only", ... and the GP_E* code for it. */
const char *gp_store_pg_cause(PGconn *c, const PGresult *res, int *code);
/* Sets s->base.failure and *err from a failed result; returns the GP_E* code. */
int gp_store_pg_fail(pg_store *s, const PGresult *res, const char *what, gp_err *err);

/* Runs `sql` with `n` text parameters (NULL: SQL NULL); returns the result when it
 * succeeded (the caller PQclear()s it), else NULL with the failure set. */
PGresult *gp_store_pg_query(pg_store *s, const char *sql, int n, const char *const *params,
                            gp_err *err);
/* Like gp_store_pg_query for a statement whose rows are not needed: 0 or GP_E*. */
int gp_store_pg_exec(pg_store *s, const char *sql, int n, const char *const *params, gp_err *err);

/* Creates or migrates the schema (in one transaction under an advisory lock, so servers
 * opening one database at once do not race), and reads or makes the store's id. */
int gp_store_pg_schema(pg_store *s, gp_err *err);
/* The schema version this gpool writes. */
int gp_store_pg_schema_version(void);

/* Loads the store (store.h, gp_store_ops.load) in one read-only snapshot. */
int gp_store_pg_load(gp_store *b, const gp_store_load_cb *cb, gp_err *err);
/* A reader with its own connection (pg_reader.c). */
int gp_store_pg_reader_open(const char *url, const char *shown, gp_store_reader **ret,
                            gp_err *err);

/* Formats integers and doubles as parameters. */
typedef struct pg_num { char s[32]; } pg_num;
pg_num gp_store_pg_i64(int64_t v);
pg_num gp_store_pg_f64(double v);

#endif
