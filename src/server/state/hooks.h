/* SPDX-License-Identifier: Apache-2.0 */
/* Named hooks: how the features (accounting, notifications, services, steps, registries,
 * reservations, heartbeats...) plug into the state without the state calling them. The
 * state (records.c, lifecycle.c) fires an event where something happens to a job or a node,
 * on every tick, when a stored setting is read and when the state is loaded or freed;
 * each feature registers its handlers once, when a state is made (parts.c), and keeps its
 * own records. A leaf: it knows no feature and no field of the state.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_HOOKS_H
#define GP_SERVER_HOOKS_H

#include <jansson.h>
#include <stdint.h>

#include "util/error.h"

struct gp_srv_state;
struct gp_srv_job;
struct gp_srv_node;

typedef enum gp_srv_hook_kind {
  /* A job's state changed (gp__srv_job_set_state): job, old_state. No error. */
  GP_SRV_HOOK_JOB_STATE,
  /* A job's run ends (stop, exit, requeue, preemption, lost node), before its allocations
   * are released: job, now_s. An error rolls the batch back. */
  GP_SRV_HOOK_RUN_ENDED,
  /* A node's lasting state (admin state, liveness) changed and is persisted: node, now_s. */
  GP_SRV_HOOK_NODE_STATE,
  /* Any change of a job's or a node's record (the marks of the kept view, view.c): job or
   * node. Fired on every change: a handler only notes the record. No error. */
  GP_SRV_HOOK_JOB_CHANGED,
  GP_SRV_HOOK_NODE_CHANGED,
  /* Each tick of the state thread, after liveness and time limits: now_s, now_ms. */
  GP_SRV_HOOK_TICK,
  /* Each tick, for each running job with a time limit, before the limit is enforced: job,
   * now_s. No error. */
  GP_SRV_HOOK_JOB_TICK,
  /* A queue's API document is being built (GET /v1/queues): name (the queue), out (the
   * object the feature adds its fields to). Handlers only read the state. No error. */
  GP_SRV_HOOK_QUEUE_DOC,
  /* A stored setting read at load: name (whole), doc. Fired to the hooks whose name
   * matches: a name ending in '/' is a prefix, any other the whole setting's name. */
  GP_SRV_HOOK_SETTING,
  /* A node's open ledger interval read at load: node, name (the interval's state). */
  GP_SRV_HOOK_NODE_INTERVAL,
  /* Every row is loaded: now_s, open_jobs (jobs with an open ledger interval, one entry per
   * interval). An error refuses the load. */
  GP_SRV_HOOK_LOADED,
  /* The state is being freed: each feature frees what it keeps. */
  GP_SRV_HOOK_FREE,
  GP_SRV_HOOK_N
} gp_srv_hook_kind;

/* What happened (the fields each kind names above; the others are zero). */
typedef struct gp_srv_hook_ev {
  struct gp_srv_job *job;
  struct gp_srv_node *node;
  int old_state;
  int64_t now_s, now_ms;
  const char *name, *doc;
  int64_t *open_jobs;
  int n_open_jobs;
  json_t *out;
} gp_srv_hook_ev;

/* A handler: 0, or a GP_E* (with err) that stops the event's other handlers. */
typedef int (*gp_srv_hook_fn)(struct gp_srv_state *s, const gp_srv_hook_ev *ev, gp_err *err);

#define GP_SRV_HOOKS_MAX 16 /* handlers per kind: the features there are, with room */

typedef struct gp_srv_hook {
  gp_srv_hook_fn fn;
  const char *name; /* GP_SRV_HOOK_SETTING: the setting (static), NULL otherwise */
} gp_srv_hook;

typedef struct gp_srv_hooks {
  gp_srv_hook at[GP_SRV_HOOK_N][GP_SRV_HOOKS_MAX];
  int n[GP_SRV_HOOK_N];
} gp_srv_hooks;

/* Registers fn for kind (in the order they run). Aborts past GP_SRV_HOOKS_MAX: a
 * programming error, found by any test. */
void gp__srv_hook_add(gp_srv_hooks *h, gp_srv_hook_kind kind, const char *name, gp_srv_hook_fn fn);
/* Runs kind's handlers in their order, until one fails; returns its error, or 0. */
int gp__srv_hook_fire(struct gp_srv_state *s, const gp_srv_hooks *h, gp_srv_hook_kind kind,
                      const gp_srv_hook_ev *ev, gp_err *err);

#endif
