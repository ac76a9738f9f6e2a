/* SPDX-License-Identifier: Apache-2.0 */
/* The leader lease on PostgreSQL (lease.h): one row, renewed and taken by single UPDATE
 * statements that compare against the database's clock (now()), so servers' own clocks
 * never decide who leads. Every statement runs asynchronously under a deadline of our own
 * (timeout_ms): a database that stopped answering (a half-open connection, a frozen
 * server) fails the tick then, whatever TCP does; the connection is dropped and the next
 * tick connects afresh. */
#include "store/lease.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/mem.h"

struct gp_lease {
  char *url, *holder, *advertise;
  int ttl_ms, timeout_ms;
  PGconn *conn;
  int64_t epoch; /* the epoch this handle holds; 0: none */
  char sqlstate[6]; /* of the last failed statement, "" when none */
  char nonce[33];   /* this process's, for its id claim and the lease row */
  char started[64]; /* the database's clock when this handle opened (timestamptz text) */
  bool claimed;     /* the last tick held this id in gp_lease_servers */
};

/* Racing servers may create the table at once: the row's insert tolerates a conflict,
 * and a failed CREATE (two creators) is retried once by the caller's next tick. */
static const char *const schema_sql =
    "CREATE TABLE IF NOT EXISTS gp_lease ("
    " id integer PRIMARY KEY CHECK (id = 1),"
    " epoch bigint NOT NULL DEFAULT 0,"
    " holder text,"
    " url text,"
    " expires_at timestamptz);"
    "ALTER TABLE gp_lease ADD COLUMN IF NOT EXISTS holder_pid integer;"
    "ALTER TABLE gp_lease ADD COLUMN IF NOT EXISTS holder_nonce text;"
    "CREATE TABLE IF NOT EXISTS gp_lease_servers ("
    " id text PRIMARY KEY, url text NOT NULL, nonce text NOT NULL, pid integer,"
    " ttl_ms integer NOT NULL, seen_at timestamptz NOT NULL);"
    "INSERT INTO gp_lease (id, epoch) VALUES (1, 0) ON CONFLICT DO NOTHING";

/* This process's claim on its id ($1; $2 its URL, $3 its nonce, $4 its lease length, $5
 * when it opened): made or refreshed when the row is this process's, or its last holder
 * stopped refreshing it (its own lease length ago) or lost its session (it died). Then the
 * row of another process that kept it (its URL, session, and whether it refreshed it
 * since this one opened: a live server with the same id, not a dead process's leftover),
 * and the URLs of the other servers seen within their lease length. */
static const char *const claim_sql =
    "WITH claim AS (INSERT INTO gp_lease_servers AS s (id, url, nonce, pid, ttl_ms, seen_at)"
    " VALUES ($1, $2, $3, pg_backend_pid(), $4, now())"
    " ON CONFLICT (id) DO UPDATE SET url = excluded.url, nonce = excluded.nonce, pid = excluded.pid,"
    " ttl_ms = excluded.ttl_ms, seen_at = excluded.seen_at"
    " WHERE s.nonce = excluded.nonce OR s.seen_at + s.ttl_ms * interval '1 millisecond' <= now()"
    " OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = s.pid)"
    " RETURNING 1)"
    " SELECT (SELECT count(*) FROM claim),"
    " coalesce((SELECT CASE WHEN s.seen_at > $5::timestamptz THEN 'live ' ELSE 'old ' END"
    " || coalesce(s.pid, 0) || ' ' || s.url FROM gp_lease_servers s WHERE s.id = $1 AND s.nonce <> $3), ''),"
    " array_to_string(ARRAY(SELECT s.url FROM gp_lease_servers s WHERE s.id <> $1"
    " AND s.seen_at + s.ttl_ms * interval '1 millisecond' > now() ORDER BY s.id), ' ')";

#define RETURNING \
  " RETURNING epoch, coalesce(holder, ''), coalesce(url, ''), " \
  "greatest(0, floor(extract(epoch FROM expires_at - now()) * 1000))::bigint, coalesce(holder_nonce, '')"

/* Renews only the lease this handle holds, and only while it has not expired: a lease
 * that lapsed may already be another server's. */
static const char *const renew_sql =
    "UPDATE gp_lease SET expires_at = now() + $3 * interval '1 millisecond', holder_pid = pg_backend_pid()"
    " WHERE id = 1 AND holder = $1 AND epoch = $2 AND expires_at > now()" RETURNING;
/* Takes a free or expired lease, or one whose holder's lease session is gone (holder_pid
 * is no longer in pg_stat_activity): a leader that died (kill -9, a crash; a restarted
 * server's old process too) closed its connection, so waiting out its lease would only
 * delay the failover. The holder's id alone never lets a server take it: two processes
 * with one id would pass the lease back and forth (the id claim above refuses them).
 * That is safe for the same reason a takeover at expiry is: the new epoch fences every
 * write of the old leader, and agents refuse its orders once they have seen the new one. A
 * leader that is alive but frozen (SIGSTOP, a paused VM) keeps its session, so the lease
 * then runs its length. */
static const char *const take_sql =
    "UPDATE gp_lease SET epoch = epoch + 1, holder = $1, url = $2,"
    " expires_at = now() + $3 * interval '1 millisecond', holder_pid = pg_backend_pid(), holder_nonce = $4"
    " WHERE id = 1 AND (holder IS NULL OR expires_at IS NULL OR expires_at <= now()"
    " OR (holder_pid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = holder_pid)))"
    RETURNING;
static const char *const read_sql =
    "SELECT epoch, coalesce(holder, ''), coalesce(url, ''),"
    " CASE WHEN holder IS NULL OR expires_at IS NULL OR expires_at <= now() THEN 0 ELSE"
    " greatest(0, floor(extract(epoch FROM expires_at - now()) * 1000))::bigint END,"
    " coalesce(holder_nonce, '') FROM gp_lease WHERE id = 1";
/* A writer fenced mid-transaction (a leader paused while it wrote) keeps the lease row
 * share-locked (gp_store.fence_epoch), so a take would wait for it forever: once the lease
 * has expired on the database's clock, its sessions are ended, which rolls back what they
 * had not committed, exactly as fencing would refuse it. */
static const char *const unblock_sql =
    "SELECT count(pg_terminate_backend(pid)) FROM pg_locks"
    " WHERE relation = 'gp_lease'::regclass AND mode = 'RowShareLock' AND granted"
    " AND pid <> pg_backend_pid()"
    " AND EXISTS (SELECT 1 FROM gp_lease WHERE id = 1"
    " AND (holder IS NULL OR expires_at IS NULL OR expires_at <= now()))";
static const char *const release_sql =
    "WITH gone AS (DELETE FROM gp_lease_servers WHERE id = $1 AND nonce = $3)"
    " UPDATE gp_lease SET holder = NULL, url = NULL, expires_at = NULL, holder_nonce = NULL"
    " WHERE id = 1 AND holder = $1 AND epoch = $2 AND $2 > 0";


static void drop(gp_lease *l) {
  if (l->conn) PQfinish(l->conn);
  l->conn = NULL;
}

/* The database's words, on one line, for an operator. */
static int db_err(gp_lease *l, int code, gp_err *err, const char *what) {
  const char *m = l->conn ? PQerrorMessage(l->conn) : "";
  char one[300];
  snprintf(one, sizeof one, "%s", m && *m ? m : "no answer");
  for (char *p = one; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  gp_err_set(err, code, NULL, 0, "ha", "lease: %s: %s", what, one);
  drop(l);
  return code;
}

static int connect_db(gp_lease *l, gp_err *err) {
  if (l->conn && PQstatus(l->conn) == CONNECTION_OK) return 0;
  drop(l);
  char ct[16], tut[16], opts[96];
  /* libpq counts connect_timeout in whole seconds, 2 at least. */
  snprintf(ct, sizeof ct, "%d", l->timeout_ms < 2000 ? 2 : (l->timeout_ms + 999) / 1000);
  snprintf(tut, sizeof tut, "%d", l->timeout_ms);
  /* A lock wait fails first (half the deadline), so a take can tell it and unblock. */
  snprintf(opts, sizeof opts, "-c statement_timeout=%d -c lock_timeout=%d -c client_min_messages=warning",
           l->timeout_ms, l->timeout_ms / 2);
  const char *keys[] = {"dbname", "connect_timeout", "keepalives", "keepalives_idle",
                        "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                        "options", "application_name", NULL};
  const char *vals[] = {l->url, ct, "1", "1", "1", "3", tut, opts, "gpool-lease", NULL};
  l->conn = PQconnectdbParams(keys, vals, 1);
  if (!l->conn || PQstatus(l->conn) != CONNECTION_OK) return db_err(l, GP_EIO, err, "connect");
  if (PQsetnonblocking(l->conn, 1) != 0) return db_err(l, GP_EIO, err, "connect");
  return 0;
}

/* Runs one statement under the handle's deadline; returns its result (PQclear it) or NULL
 * with the connection dropped. */
static PGresult *exec(gp_lease *l, const char *sql, int n, const char *const *params,
                      int *code, gp_err *err) {
  l->sqlstate[0] = '\0';
  *code = connect_db(l, err);
  if (*code) return NULL;
  int64_t deadline = gp_mono_ms() + l->timeout_ms;
  if (n ? !PQsendQueryParams(l->conn, sql, n, NULL, params, NULL, NULL, 0)
        : !PQsendQuery(l->conn, sql)) {
    *code = db_err(l, GP_EIO, err, "send");
    return NULL;
  }
  PGresult *res = NULL, *last = NULL;
  for (;;) {
    int flushed = PQflush(l->conn);
    if (flushed < 0) break;
    if (!flushed && !PQisBusy(l->conn)) {
      res = PQgetResult(l->conn);
      if (!res) break; /* all results in */
      PQclear(last);
      last = res;
      continue;
    }
    int64_t left = deadline - gp_mono_ms();
    if (left <= 0) {
      PQclear(last);
      gp_err_set(err, GP_ETIMEOUT, NULL, 0, "ha", "lease: the database did not answer within %d ms",
                 l->timeout_ms);
      drop(l);
      *code = GP_ETIMEOUT;
      return NULL;
    }
    struct pollfd p = {.fd = PQsocket(l->conn), .events = POLLIN | (flushed ? POLLOUT : 0)};
    if (poll(&p, 1, (int)left) < 0) continue;
    if (!PQconsumeInput(l->conn)) break;
  }
  if (!last || PQstatus(l->conn) != CONNECTION_OK) {
    PQclear(last);
    *code = db_err(l, GP_EIO, err, "query");
    return NULL;
  }
  ExecStatusType st = PQresultStatus(last);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    char msg[300];
    const char *state = PQresultErrorField(last, PG_DIAG_SQLSTATE);
    snprintf(l->sqlstate, sizeof l->sqlstate, "%s", state ? state : "");
    snprintf(msg, sizeof msg, "%s", PQresultErrorMessage(last));
    PQclear(last);
    for (char *p = msg; *p; p++)
      if (*p == '\n') *p = ' ';
    *code = gp_err_set(err, GP_EIO, NULL, 0, "ha", "lease: %s", msg);
    drop(l); /* a fresh connection next tick: no aborted transaction can linger */
    return NULL;
  }
  return last;
}

/* Fills *st from a (epoch, holder, url, ms left, holder's nonce) row; false when there is
 * no row. */
static bool read_row(const gp_lease *l, PGresult *res, gp_lease_state *st) {
  if (PQntuples(res) != 1 || PQnfields(res) != 5) return false;
  st->epoch = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  snprintf(st->holder, sizeof st->holder, "%s", PQgetvalue(res, 0, 1));
  snprintf(st->leader_url, sizeof st->leader_url, "%s", PQgetvalue(res, 0, 2));
  st->expires_in_ms = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
  st->mine = strcmp(PQgetvalue(res, 0, 4), l->nonce) == 0 && strcmp(st->holder, l->holder) == 0;
  return true;
}

/* A nonce no other process has: 16 random bytes, else the pid and the clock. */
static void make_nonce(char *out, size_t cap) {
  unsigned char raw[16] = {0};
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, raw, sizeof raw) : -1;
  if (fd >= 0) close(fd);
  if (n != (ssize_t)sizeof raw) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(out, cap, "%08x%016llx%08lx", (unsigned)getpid(), (unsigned long long)ts.tv_sec,
             (unsigned long)ts.tv_nsec);
    return;
  }
  for (size_t i = 0; i < sizeof raw && 2 * i + 2 < cap; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/* Claims this process's id (claim_sql) into st: claimed, or the conflict in words when
 * another live process keeps the id; and the other servers' URLs. */
static int claim(gp_lease *l, gp_lease_state *st, gp_err *err) {
  char ttl[16];
  snprintf(ttl, sizeof ttl, "%d", l->ttl_ms);
  const char *p[] = {l->holder, l->advertise, l->nonce, ttl, l->started};
  int code;
  PGresult *res = exec(l, claim_sql, 5, p, &code, err);
  if (!res) return code;
  if (PQntuples(res) != 1 || PQnfields(res) != 3) {
    PQclear(res);
    drop(l);
    return gp_err_set(err, GP_EIO, NULL, 0, "ha", "lease: the id claim answered no row");
  }
  st->claimed = l->claimed = strtoll(PQgetvalue(res, 0, 0), NULL, 10) > 0;
  const char *other = PQgetvalue(res, 0, 1);
  if (!l->claimed && strncmp(other, "live ", 5) == 0) {
    char *end = NULL;
    long pid = strtol(other + 5, &end, 10);
    const char *url = end && *end == ' ' ? end + 1 : "";
    snprintf(st->conflict, sizeof st->conflict,
             "ha.id '%.100s' is also the id of another running server (advertising %.200s, database "
             "session %ld): every server needs its own ha.id; this one will not lead while the other runs",
             l->holder, url, pid);
  }
  /* The URLs, space-separated (an advertised URL has no spaces); bounded here. */
  const char *u = PQgetvalue(res, 0, 2);
  while (*u && st->n_servers < GP_LEASE_SERVERS_MAX) {
    size_t len = strcspn(u, " ");
    if (len > 0 && len < GP_LEASE_URL_MAX)
      snprintf(st->servers[st->n_servers++], GP_LEASE_URL_MAX, "%.*s", (int)len, u);
    u += len;
    while (*u == ' ') u++;
  }
  PQclear(res);
  return 0;
}

static int ensure_schema(gp_lease *l, gp_err *err) {
  int code;
  PGresult *res = exec(l, schema_sql, 0, NULL, &code, err);
  if (!res) res = exec(l, schema_sql, 0, NULL, &code, err); /* lost a creation race */
  if (!res) return code;
  PQclear(res);
  return 0;
}

int gp_lease_open(const gp_lease_cfg *cfg, gp_lease **ret, gp_err *err) {
  *ret = NULL;
  if (!cfg->url || !*cfg->url)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "store", "the lease needs the store's postgresql:// URL");
  if (!cfg->holder || !*cfg->holder || strlen(cfg->holder) >= GP_LEASE_HOLDER_MAX)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "ha.id", "must be 1 to %d bytes", GP_LEASE_HOLDER_MAX - 1);
  if (!cfg->advertise || strlen(cfg->advertise) >= GP_LEASE_URL_MAX)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "ha.advertise", "must be at most %d bytes",
                      GP_LEASE_URL_MAX - 1);
  int ttl = cfg->ttl_ms > 0 ? cfg->ttl_ms : 10000;
  gp_lease *l = gp_xcalloc(1, sizeof *l);
  l->url = gp_xstrdup(cfg->url);
  l->holder = gp_xstrdup(cfg->holder);
  l->advertise = gp_xstrdup(cfg->advertise);
  l->ttl_ms = ttl;
  l->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : ttl / 5;
  if (l->timeout_ms < 100) l->timeout_ms = 100;
  make_nonce(l->nonce, sizeof l->nonce);
  int r = ensure_schema(l, err);
  if (!r) { /* the database's clock now: what the id's other holder must have refreshed since */
    int code;
    PGresult *res = exec(l, "SELECT now()::text", 0, NULL, &code, err);
    if (!res) r = code;
    else if (PQntuples(res) == 1) snprintf(l->started, sizeof l->started, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    if (!r && !l->started[0]) r = gp_err_set(err, GP_EIO, NULL, 0, "ha", "lease: the database has no clock");
  }
  if (r) {
    gp_lease_close(l);
    return r;
  }
  *ret = l;
  return 0;
}

int gp_lease_tick(gp_lease *l, gp_lease_state *st, gp_err *err) {
  memset(st, 0, sizeof *st);
  char epoch[24], ttl[16];
  snprintf(epoch, sizeof epoch, "%lld", (long long)l->epoch);
  snprintf(ttl, sizeof ttl, "%d", l->ttl_ms);
  int code = claim(l, st, err);
  if (code) return code;
  PGresult *res;
  if (l->epoch > 0 && !st->claimed) l->epoch = 0; /* another process owns the id now */
  st->sent_ms = gp_mono_ms();
  if (l->epoch > 0) {
    const char *p[] = {l->holder, epoch, ttl};
    if (!(res = exec(l, renew_sql, 3, p, &code, err))) return code;
    bool held = read_row(l, res, st);
    PQclear(res);
    if (held) {
      st->leader = true;
      return 0;
    }
    l->epoch = 0; /* lapsed or taken: from now on only a take makes this handle leader */
  }
  if (st->claimed) {
    st->sent_ms = gp_mono_ms();
    const char *p[] = {l->holder, l->advertise, ttl, l->nonce};
    res = exec(l, take_sql, 4, p, &code, err);
    if (!res && strcmp(l->sqlstate, "55P03") == 0) { /* lock_not_available */
      PGresult *u = exec(l, unblock_sql, 0, NULL, &code, err);
      if (!u) return code;
      PQclear(u);
      res = exec(l, take_sql, 4, p, &code, err);
    }
    if (!res) return code;
    bool took = read_row(l, res, st);
    PQclear(res);
    if (took) {
      l->epoch = st->epoch;
      st->leader = true;
      return 0;
    }
  }
  if (!(res = exec(l, read_sql, 0, NULL, &code, err))) return code;
  bool found = read_row(l, res, st);
  PQclear(res);
  if (!found) return ensure_schema(l, err); /* the row was deleted: make it again */
  if (st->expires_in_ms == 0) st->holder[0] = st->leader_url[0] = '\0';
  return 0;
}

int gp_lease_release(gp_lease *l, gp_err *err) {
  if (l->epoch <= 0 && !l->claimed) return 0;
  char epoch[24];
  snprintf(epoch, sizeof epoch, "%lld", (long long)l->epoch);
  const char *p[] = {l->holder, epoch, l->nonce};
  l->epoch = 0;
  l->claimed = false;
  int code;
  PGresult *res = exec(l, release_sql, 3, p, &code, err);
  if (!res) return code;
  PQclear(res);
  return 0;
}

void gp_lease_close(gp_lease *l) {
  if (!l) return;
  drop(l);
  free(l->url);
  free(l->holder);
  free(l->advertise);
  free(l);
}
