/* SPDX-License-Identifier: Apache-2.0 */
/* Inference services (docs/services.md): a server-side object, like an array, that owns
 * jobs: its replicas. The service keeps its spec's revisions and a desired replica count in
 * the store (setting "service/NAME"); a controller run on every state tick makes replica
 * jobs from the serving revision's spec, replaces those that end (with backoff), rolls a new
 * revision one replica at a time (max surge 1, max unavailable 0), gives up on a revision
 * that misses its progress deadline with the old one still serving, and drains a replica out
 * of the endpoints before it stops it. Replicas are jobs: scheduled, preempted, accounted
 * and limited like any other.
 *
 * service.c: the spec (validation, the stored form); service_ctl.c: the controller;
 * service_api.c: /v1/services. Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_SERVICE_H
#define GP_SERVER_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

#define GP_SRV_SERVICES_MAX 1000      /* services in one pool */
#define GP_SRV_SERVICE_REVS_KEPT 10   /* revisions a service keeps */
#define GP_SRV_SERVICE_REPLICAS_MAX 1000
#define GP_SRV_SETTING_SERVICE "service/"

struct gp_srv_state;
struct gp_srv_job;
struct gp_srv_req;

typedef enum gp_srv_rollout {
  GP_SRV_ROLLOUT_COMPLETE = 0, /* every replica runs the current revision */
  GP_SRV_ROLLOUT_PROGRESSING,  /* replacing old replicas one at a time */
  GP_SRV_ROLLOUT_FAILED,       /* the revision missed its deadline: the last good one serves */
} gp_srv_rollout;

typedef struct gp_srv_service {
  char *name, *owner;
  json_t *revisions;       /* [{revision, at, by, note, spec}], oldest first (owned) */
  int rev;                 /* the current revision (the last applied) */
  int stable_rev;          /* the last revision that completed its rollout; 0: none */
  int replicas;            /* desired, within the spec's [min, max] */
  int64_t created_at, updated_at;
  gp_srv_rollout rollout;
  int64_t rollout_since;   /* when the rollout last made progress (epoch s) */
  char rollout_msg[256];
  bool deleting;           /* draining its replicas, then gone */
  bool dirty;              /* changed outside a transaction's reach: persisted at the tick */
  int progress_healthy;    /* replicas of the rolling revision healthy when it last moved */
  /* Restart backoff: replicas that ended on their own in a row, and the earliest time the
   * next replacement starts. */
  int failures;
  int64_t next_start_at;
  /* Autoscaling (service_scale.c): since when the figures asked for more (up_since) or
   * fewer (down_since, and the most asked for since then) replicas; 0: not now. The last
   * decisions with their figures (owned JSON array, kept in the store). */
  int64_t up_since, down_since;
  int down_max;
  json_t *decisions;
  uint64_t scale_ups, scale_downs;
  /* Memory only: counts for metrics since the server started. */
  uint64_t replicas_started, replicas_failed, rollouts_failed, unready_total;
} gp_srv_service;

typedef struct gp__srv_services {
  gp_srv_service **v;
  int n;
  size_t cap;
} gp__srv_services;

/* ---- service.c ---- */
/* Validates a spec (JSON, as PUT or `gpool service apply` sends it) into its normalised
 * form (*ret, a new reference): known keys only, each bounded; errors name the field. It
 * does not look at the state (queues, classes): gp__srv_service_admit does. */
int gp__srv_service_spec_parse(const json_t *body, json_t **ret, gp_err *err);
/* The submission body of a replica of `spec` for owner `owner` (a new reference). */
json_t *gp__srv_service_job_body(const json_t *spec, const char *owner);
/* The service named, or NULL. */
gp_srv_service *gp__srv_service_get(const struct gp_srv_state *s, const char *name);
/* The spec of revision `rev`, or NULL (borrowed). */
const json_t *gp__srv_service_spec(const gp_srv_service *v, int rev);
/* The revision that serves now: the current one, or after a failed rollout the last good. */
int gp__srv_service_serving_rev(const gp_srv_service *v);
/* Adds a revision (the spec is stolen) and makes it current; old ones beyond the kept
 * number are dropped (never the stable one). */
void gp__srv_service_add_rev(gp_srv_service *v, json_t *spec, const char *by, const char *note, int64_t now);
/* Writes the service to the store (or deletes it when gone). */
int gp__srv_service_persist(struct gp_srv_state *s, gp_srv_service *v, gp_err *err);
int gp__srv_service_unpersist(struct gp_srv_state *s, const char *name, gp_err *err);
/* The stored form, and the service read back from it at load. */
json_t *gp__srv_service_doc(const gp_srv_service *v);
void gp__srv_service_loaded(struct gp_srv_state *s, const char *name, const char *doc);
void gp__srv_service_free(gp_srv_service *v);
void gp__srv_services_free(struct gp_srv_state *s);
/* Adds v (taken) to the state's services. */
void gp__srv_service_add(struct gp_srv_state *s, gp_srv_service *v);
void gp__srv_service_remove(struct gp_srv_state *s, gp_srv_service *v);
const char *gp__srv_rollout_name(gp_srv_rollout r);

/* ---- service_ctl.c ---- */
/* One controller round over every service: replicas made, replaced, rolled, drained and
 * stopped. From the state tick, and after each change through the API. */
int gp__srv_services_tick(struct gp_srv_state *s, int64_t now, gp_err *err);
int gp__srv_service_reconcile(struct gp_srv_state *s, gp_srv_service *v, int64_t now, gp_err *err);
/* A replica changed state (gp__srv_job_set_state): leaving RUNNING it is no longer ready;
 * ending on its own it counts toward the service's backoff. */
void gp__srv_service_replica_moved(struct gp_srv_state *s, struct gp_srv_job *j, int old, int st);
/* An agent's heartbeat listed the replica with its port and readiness (and the last probe's
 * words): the job's fields follow, with a timeline event when readiness changes. */
int gp__srv_service_replica_report(struct gp_srv_state *s, struct gp_srv_job *j, const json_t *entry,
                                   int64_t now, gp_err *err);
/* The start order's service part of replica j (its revision's probes); false when its
 * service or revision is gone (it then starts as a plain job, never ready). */
struct gp_proto_service;
bool gp__srv_service_replica_order(const struct gp_srv_state *s, const struct gp_srv_job *j,
                                   struct gp_proto_service *ret);
/* After a load (a restart, a follower's refresh): each running replica's readiness, port
 * and drain as its timeline last said them (its agent's next heartbeat corrects them). */
void gp__srv_services_rebuild(struct gp_srv_state *s);
/* The ready endpoints of a service: [{host, port, node, job, revision}]. */
json_t *gp__srv_service_endpoints(const struct gp_srv_state *s, const gp_srv_service *v);
/* Per-service metrics (Prometheus text) appended to out. */
struct gp_buf;
void gp__srv_services_metrics(const struct gp_srv_state *s, struct gp_buf *out);

/* ---- service_scale.c ---- */
/* The autoscale part of a spec (null: none), normalised; errors name autoscale.KEY. */
int gp__srv_service_autoscale_parse(const json_t *v, json_t **ret, gp_err *err);
/* POST .../wake: a service scaled to zero gets max(min, 1) replicas back (a decision with
 * its reason); one with replicas is left as it is. */
int gp__srv_service_wake(struct gp_srv_state *s, gp_srv_service *v, const char *by, int64_t now, gp_err *err);
/* Moves v->replicas toward the replicas' figures (a no-op without autoscale). */
int gp__srv_service_autoscale(struct gp_srv_state *s, gp_srv_service *v, int64_t now, gp_err *err);

/* ---- service_api.c ---- */

#endif
