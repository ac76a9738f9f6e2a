/* SPDX-License-Identifier: Apache-2.0 */
/* Leader election for servers that share one PostgreSQL store (docs/ha.md). A thread of
 * its own ticks the lease (store/lease.h) every renew_ms; the state thread asks it, before
 * every write, which epoch it may write under: the lease's while it is held and its last
 * renewal was sent less than lease_ms - renew_ms ago (CLOCK_MONOTONIC), else none.
 * The margin makes the leader stop before its lease can have expired on the database's
 * clock, whatever its renewals are waiting on; the store's fencing covers the rest (a
 * write already under way). The window is longer than the renewal interval plus a
 * renewal's own deadline (renew_ms each, renew_ms <= lease_ms / 3), so renewals that
 * succeed keep it open without a gap. HTTP threads read the leader's URL for redirects and
 * GET /v1/leader. Thread-safe. */
#ifndef GP_SERVER_LEADER_H
#define GP_SERVER_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "server/state/leader_config.h"
#include "store/lease.h"
#include "util/error.h"

typedef struct gp_srv_leader gp_srv_leader;

/* What the last tick saw, for GET /v1/leader and redirects. */
typedef struct gp_srv_leader_info {
  int64_t epoch;                      /* the lease's epoch; 0: never held */
  char holder[GP_LEASE_HOLDER_MAX];   /* "" when none holds it */
  char leader_url[GP_LEASE_URL_MAX];  /* the holder's advertised URL; "" when none */
  int64_t expires_in_ms;              /* as of the last tick, by the database's clock */
  bool ok;                            /* the last tick reached the database */
  bool mine;                          /* the lease's holder is this process */
  char conflict[400];                 /* "" or why this server may not lead (its id) */
  int n_servers;                      /* the other live servers on the store */
  char servers[GP_LEASE_SERVERS_MAX][GP_LEASE_URL_MAX];
} gp_srv_leader_info;

/* Opens the lease (its own connection) for `ha` (borrowed), advertising `self_url`
 * (copied). `wake` is called (from the lease thread) whenever the epoch this server may
 * write under changes, so the state thread acts at once. */
int gp__srv_leader_new(const gp_server_ha *ha, const char *self_url, void (*wake)(void *ctx),
                       void *ctx, gp_srv_leader **ret, gp_err *err);
/* The first tick, then the thread. Refuses (GP_ESTATE, field ha.id) to start a server
 * whose id another live server holds; waits up to lease_ms for an id whose other holder
 * may be a dead process's leftover (a session not yet closed). */
int gp__srv_leader_start(gp_srv_leader *l, gp_err *err);
/* Stops the thread and gives the lease up (a clean shutdown: a follower takes over at
 * once). Accepts NULL. */
void gp__srv_leader_free(gp_srv_leader *l);

/* The epoch this server may write under at `now_ms` (CLOCK_MONOTONIC), or 0. */
int64_t gp__srv_leader_epoch(gp_srv_leader *l, int64_t now_ms);
/* The state thread's word that the store refused a write as fenced: epoch `epoch` is
 * over; only a new take (a higher epoch) makes this server leader again. */
void gp__srv_leader_fenced(gp_srv_leader *l, int64_t epoch);
/* Until when (CLOCK_MONOTONIC) the epoch returned now stays usable: the state thread
 * wakes then to step down if no renewal came. */
int64_t gp__srv_leader_valid_until(gp_srv_leader *l);
void gp__srv_leader_info_get(gp_srv_leader *l, gp_srv_leader_info *out);
const char *gp__srv_leader_self(const gp_srv_leader *l);
const char *gp__srv_leader_id(const gp_srv_leader *l);

#endif
