/* SPDX-License-Identifier: Apache-2.0 */
/* Whether the store takes writes, as the state thread sees it. A failed commit (a full
 * disk, an I/O error) puts the server in a read-only mode: the state is reloaded once,
 * reads are answered from memory, writes are refused at once with 503 "store: <cause>"
 * without touching memory or the store, and nothing writes (scheduler, ticks) until a
 * probe (gp_store_probe) shows the store takes a write again. Probes back off from
 * 100 ms to 2 s; a store that fails again within a minute of recovering backs off up to
 * 30 s, so a flapping disk costs at most one reload per probe interval. The log says each
 * episode once when it starts, once a minute while it lasts, and once when it ends.
 *
 * Internal to src/server (gp__srv_ names). State-thread only. */
#ifndef GP_SERVER_STORE_HEALTH_H
#define GP_SERVER_STORE_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

typedef struct gp_srv_store_health {
  bool degraded;            /* writes are refused */
  char cause[64];           /* the store's `failure` ("disk full", ...) while degraded */
  char detail[512];         /* the first error of the episode, for the log and /healthz */
  int64_t since_ms;         /* when the episode began */
  int64_t next_probe_ms;
  int64_t probe_every_ms;
  int64_t recovered_ms;     /* when the last episode ended; 0: never */
  int64_t next_summary_ms;  /* the next "still failing" log line */
  uint64_t refused;         /* writes refused in this episode */
  uint64_t failed_probes;   /* in this episode */
  uint64_t write_failures;  /* failed transactions since start (a metric; probes apart) */
  uint64_t refused_total;   /* writes refused since start (a metric) */
} gp_srv_store_health;

/* A transaction failed: counts it, and starts (and logs) an episode unless one is on. */
void gp__srv_store_failed(gp_srv_store_health *h, const gp_store *store, const char *detail,
                          int64_t now_ms);

/* A write refused while degraded. */
void gp__srv_store_refused(gp_srv_store_health *h);

/* While degraded and the probe is due, probes the store; returns true when it takes writes
 * again (the episode ended and was logged). */
bool gp__srv_store_probe(gp_srv_store_health *h, gp_store *store, int64_t now_ms);

/* The body of GET /healthz: {"ok": true} or {"ok": false, "store": cause, "message":
 * the first error}; malloc'd. */
char *gp__srv_store_health_json(const gp_srv_store_health *h);

#endif
