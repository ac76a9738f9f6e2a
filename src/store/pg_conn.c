/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend's connections (pg.h): gpool's connection defaults, the session
 * settings, running parameterised statements and naming their failures for an operator.
 * A dead or half-open database must fail a call within seconds, not after the OS TCP
 * timeout (minutes): hence the connect timeout, the keepalives, tcp_user_timeout and a
 * statement_timeout on every connection. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg.h"

/* Unless the URL sets them: fail a connect after 5 s; probe an idle connection after 5 s,
 * every 2 s, 3 times; give up on unacknowledged data after 10 s. */
static const char *const default_keys[] = {"connect_timeout", "keepalives", "keepalives_idle",
                                           "keepalives_interval", "keepalives_count",
                                           "tcp_user_timeout", "application_name"};
static const char *const default_values[] = {"5", "1", "5", "2", "3", "10000", "gpool"};
#define N_DEFAULTS (sizeof default_keys / sizeof default_keys[0])

/* A statement that runs longer than this is cancelled and its transaction fails
 * ("timeout"); the server then rolls back and reloads as after any store failure. */
#define STATEMENT_TIMEOUT "30s"
#define IDLE_IN_WRITE "5s"
#define SESSION_SQL                                                                          \
  "SET statement_timeout = '" STATEMENT_TIMEOUT "'; SET synchronous_commit = on;"           \
  " SET client_min_messages = warning; SET tcp_keepalives_idle = 5;"                        \
  " SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3;"                         \
  " SET tcp_user_timeout = 10000;"

void gp_store_pg_mask_url(const char *url, char *out, size_t size) {
  if (size == 0) return;
  snprintf(out, size, "%s", url ? url : "");
  /* user:password@ in the authority (before the first '/' after "://"). */
  char *auth = strstr(out, "://");
  if (auth) {
    auth += 3;
    char *end = auth + strcspn(auth, "/?");
    char *at = NULL;
    for (char *p = auth; p < end; p++)
      if (*p == '@') at = p;
    char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (colon) {
      char rest[GP_STORE_PG_URL_MAX];
      snprintf(rest, sizeof rest, "%s", at);
      snprintf(colon, size - (size_t)(colon - out), ":***%s", rest);
    }
  }
  /* password=... as a query parameter (or a key=value string). */
  for (char *p = strstr(out, "password="); p; p = strstr(p, "password=")) {
    char *v = p + strlen("password=");
    char *end = v + strcspn(v, "& ");
    char rest[GP_STORE_PG_URL_MAX];
    snprintf(rest, sizeof rest, "%s", end);
    snprintf(v, size - (size_t)(v - out), "***%s", rest);
    p = v + 3;
  }
}

int gp_store_pg_session(PGconn *c, const char *shown, bool writer, gp_err *err) {
  /* The server's side of the connection gives up on a dead client as fast as libpq does on
   * a dead server. A writer's transaction holds the lease row's share lock (fencing, pg.c)
   * until it ends: one left idle (a server stopped or cut off mid-transaction) is ended by
   * PostgreSQL after IDLE_IN_WRITE, so a takeover waits that long at most, and the old
   * server's commit then fails. A writer's transaction never waits on anything but this
   * connection, so a live server is never idle that long inside one. */
  PGresult *res = PQexec(c, writer ? SESSION_SQL " SET idle_in_transaction_session_timeout = "
                                                 "'" IDLE_IN_WRITE "'"
                                   : SESSION_SQL);
  int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
  if (!ok) {
    int code = GP_EIO;
    const char *cause = gp_store_pg_cause(c, res, &code);
    gp_err_set(err, code, shown, 0, NULL, "%s: cannot set the session up: %s", cause,
               PQerrorMessage(c));
  }
  PQclear(res);
  return ok ? 0 : (err ? err->code : GP_EIO);
}

PGconn *gp_store_pg_connect(const char *url, const char *shown, bool writer, gp_err *err) {
  /* Keys before "dbname" are overridden by what the URL sets (expand_dbname): the URL
   * wins, the defaults fill the rest. */
  const char *keys[N_DEFAULTS + 2], *values[N_DEFAULTS + 2];
  for (size_t i = 0; i < N_DEFAULTS; i++) {
    keys[i] = default_keys[i];
    values[i] = default_values[i];
  }
  keys[N_DEFAULTS] = "dbname";
  values[N_DEFAULTS] = url;
  keys[N_DEFAULTS + 1] = values[N_DEFAULTS + 1] = NULL;
  PGconn *c = PQconnectdbParams(keys, values, 1);
  if (!c) {
    gp_err_set(err, GP_ENOMEM, shown, 0, NULL, "cannot connect to the store: out of memory");
    return NULL;
  }
  if (PQstatus(c) != CONNECTION_OK) {
    /* libpq's message names host and port, never the password. */
    char msg[400];
    snprintf(msg, sizeof msg, "%s", PQerrorMessage(c));
    msg[strcspn(msg, "\n")] = '\0';
    gp_err_set(err, GP_EIO, shown, 0, "store", "connection lost: cannot connect to the store: %s",
               msg);
    PQfinish(c);
    return NULL;
  }
  if (gp_store_pg_session(c, shown, writer, err) != 0) {
    PQfinish(c);
    return NULL;
  }
  return c;
}

const char *gp_store_pg_cause(PGconn *c, const PGresult *res, int *code) {
  *code = GP_EIO;
  if (!c || PQstatus(c) != CONNECTION_OK) return "connection lost";
  const char *st = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  if (!st) return "connection lost";
  /* FATAL: the server ended the session (terminated, an idle transaction timed out, ...). */
  const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (sev && (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)) return "connection lost";
  if (strcmp(st, "53100") == 0) return "disk full";
  if (strcmp(st, "53200") == 0) return "out of memory";
  if (strcmp(st, "57014") == 0) {
    *code = GP_ETIMEOUT;
    return "timeout";
  }
  if (strcmp(st, "25006") == 0) return "read-only";
  if (strcmp(st, "42501") == 0) return "permission denied";
  if (strcmp(st, "55P03") == 0 || strcmp(st, "40P01") == 0) return "locked";
  if (strcmp(st, "40001") == 0) return "conflict";
  if (strncmp(st, "08", 2) == 0 || strncmp(st, "57P", 3) == 0) return "connection lost";
  if (strncmp(st, "XX", 2) == 0) return "corrupt";
  if (strncmp(st, "58", 2) == 0) return "I/O error";
  return "database error";
}

/* Reconnects a connection that broke (PostgreSQL restarted, a failover, a terminated
 * backend) and sets its session up again. */
int gp_store_pg_ensure(pg_store *s, gp_err *err) {
  if (s->conn && PQstatus(s->conn) == CONNECTION_OK) return 0;
  if (s->conn) PQreset(s->conn);
  if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
    snprintf(s->base.failure, sizeof s->base.failure, "connection lost");
    s->code = GP_EIO;
    char msg[300];
    snprintf(msg, sizeof msg, "%s", s->conn ? PQerrorMessage(s->conn) : "not connected");
    msg[strcspn(msg, "\n")] = '\0';
    return gp_err_set(err, GP_EIO, s->shown, 0, NULL, "connection lost: cannot reconnect: %s", msg);
  }
  s->n_prepared = 0; /* a new session has none */
  int r = gp_store_pg_session(s->conn, s->shown, s->writer, err);
  if (r) snprintf(s->base.failure, sizeof s->base.failure, "connection lost");
  return r;
}

int gp_store_pg_fail(pg_store *s, const PGresult *res, const char *what, gp_err *err) {
  int code = GP_EIO;
  const char *cause = gp_store_pg_cause(s->conn, res, &code);
  snprintf(s->base.failure, sizeof s->base.failure, "%s", cause);
  s->code = code;
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  snprintf(s->sqlstate, sizeof s->sqlstate, "%s", state ? state : "");
  char msg[300];
  const char *m = res ? PQresultErrorMessage(res) : "";
  snprintf(msg, sizeof msg, "%s", *m ? m : s->conn ? PQerrorMessage(s->conn) : "not connected");
  msg[strcspn(msg, "\n")] = '\0';
  return gp_err_set(err, code, s->shown, 0, NULL, "%s: %s (%s)", cause, msg, what);
}

PGresult *gp_store_pg_query(pg_store *s, const char *sql, int n, const char *const *params,
                            gp_err *err) {
  /* Without parameters, the simple protocol: a schema step is several statements. */
  PGresult *res = !s->conn ? NULL
                  : n ? PQexecParams(s->conn, sql, n, NULL, params, NULL, NULL, 0)
                      : PQexec(s->conn, sql);
  ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return res;
  gp_store_pg_fail(s, res, sql, err);
  PQclear(res);
  return NULL;
}

int gp_store_pg_exec(pg_store *s, const char *sql, int n, const char *const *params, gp_err *err) {
  PGresult *res = gp_store_pg_query(s, sql, n, params, err);
  if (!res) return s->code;
  PQclear(res);
  return 0;
}

pg_num gp_store_pg_i64(int64_t v) {
  pg_num n;
  snprintf(n.s, sizeof n.s, "%lld", (long long)v);
  return n;
}

pg_num gp_store_pg_f64(double v) {
  pg_num n;
  snprintf(n.s, sizeof n.s, "%.17g", v);
  return n;
}
