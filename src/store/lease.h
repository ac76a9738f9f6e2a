/* SPDX-License-Identifier: Apache-2.0 */
/* The leader lease of servers that share one PostgreSQL store (docs/ha.md). One row,
 * `gp_lease` (epoch, holder, advertised URL, expiry), decides which server leads: the
 * holder renews it on the database's clock; any server takes it once it has expired,
 * adding one to the epoch. The epoch fences the old leader: the store refuses its writes
 * (gp_store.fence_epoch) and agents refuse its orders.
 *
 * A lease handle owns a dedicated libpq connection, never shared or recycled, with
 * connect_timeout, TCP keepalives and tcp_user_timeout set and a statement_timeout, so a
 * dead or half-open database fails a tick within seconds instead of the OS TCP timeout.
 * The lease is a row, not an advisory lock: nothing is lost silently when a connection
 * drops, and nothing stacks on re-entry. Not thread-safe: one thread ticks a lease.
 *
 * Every server also claims its id, at each tick, in `gp_lease_servers` (id, URL, a random
 * nonce of this process, its session, when last seen): two live servers with one id would
 * take the lease from each other at every tick (each a "restarted" holder), so an id held
 * by another process that still renews it is a conflict, reported and never led with. The
 * same rows tell every server the others' URLs (GET /v1/leader, `gpool up`). */
#ifndef GP_STORE_LEASE_H
#define GP_STORE_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

#define GP_LEASE_HOLDER_MAX 128
#define GP_LEASE_URL_MAX 512
#define GP_LEASE_SERVERS_MAX 16   /* other servers' URLs a tick reports, at most */

typedef struct gp_lease gp_lease;

typedef struct gp_lease_cfg {
  const char *url;           /* the store's postgresql:// URL */
  const char *holder;        /* this server's unique id (< GP_LEASE_HOLDER_MAX bytes) */
  const char *advertise;     /* the URL clients and agents reach this server at */
  int ttl_ms;                /* lease length; default 10000 */
  int timeout_ms;            /* connect and statement timeout; default ttl_ms / 5 */
} gp_lease_cfg;

typedef struct gp_lease_state {
  bool leader;               /* this server holds the lease now */
  bool mine;                 /* the lease's holder is this very process (leader or not) */
  /* This process's claim on its id in gp_lease_servers: only a claimed id may lead. */
  bool claimed;
  char conflict[400];        /* "" or why not: another live server uses the same id */
  int n_servers;             /* the other live servers on this store, by their URLs */
  char servers[GP_LEASE_SERVERS_MAX][GP_LEASE_URL_MAX];
  int64_t epoch;             /* the lease's epoch (this server's when leader); 0: never held */
  char holder[GP_LEASE_HOLDER_MAX];   /* "" when the lease is free or expired */
  char leader_url[GP_LEASE_URL_MAX];  /* the holder's advertised URL; "" when none */
  int64_t expires_in_ms;     /* until the lease expires, by the database's clock */
  int64_t sent_ms;           /* when the renewal or take was sent (CLOCK_MONOTONIC ms): the
                                database started a term it granted no earlier */
} gp_lease_state;

/* Connects and creates the lease row when missing. Each handle is a process of its own
 * for the id claim (a fresh random nonce). */
int gp_lease_open(const gp_lease_cfg *cfg, gp_lease **ret, gp_err *err);
/* Claims this server's id, then renews the lease when this server holds it, takes it
 * (epoch + 1) when it is free, expired or its holder's session is gone and the id is
 * claimed, else reads who holds it. Fills *st either way; on a database
 * error returns GP_EIO (or GP_ETIMEOUT) and the caller must count its lease as lost once
 * its own last renewal is older than ttl minus a safety margin. Reconnects when needed. */
int gp_lease_tick(gp_lease *l, gp_lease_state *st, gp_err *err);
/* Gives the lease and the id claim up now (a clean shutdown), so a follower need not
 * wait for expiry and a restarted server claims its id at once. */
int gp_lease_release(gp_lease *l, gp_err *err);
void gp_lease_close(gp_lease *l); /* accepts NULL */

#endif
