/* SPDX-License-Identifier: Apache-2.0 */
/* Per-user limits of a queue (user_limits.c, docs/config.md "Per-user limits"): for each
 * user of a leaf queue (a named user's entry, else "*"), the GPUs its running jobs may
 * hold, the jobs it may have waiting, and the GPU-hours it may use per period (day, week,
 * month, UTC). The first and last are the scheduler's (gp_queue.user_limits, pending
 * reasons UserGpuLimit and UserGpuHours); the pending cap is checked at submission (429
 * too_many_pending, field user_limits). Read from the config (`user_limits:` of a queue)
 * and from the queues API; shown by GET /v1/queues and `gpool queues -v`. */
#ifndef GP_SERVER_USER_LIMITS_H
#define GP_SERVER_USER_LIMITS_H

#include <jansson.h>
#include <stdint.h>

#include "core/model.h"
#include "server/state/budget.h"
#include "util/doc.h"
#include "util/error.h"

#define GP_SRV_MAX_USER_LIMITS 10000 /* users named in one queue's limits */

typedef struct gp_srv_ulimit {
  char *user;                /* "*": every user without an entry */
  double max_gpus;           /* GP_NO_LIMIT: none */
  double max_gpu_hours;      /* per period; GP_NO_LIMIT: none */
  int64_t max_pending_jobs;  /* pending or held jobs; -1: none */
} gp_srv_ulimit;

typedef struct gp_srv_ulimits {
  int n;                     /* 0: no limits */
  gp_srv_ulimit *l;
  gp_budget_period period;   /* of max_gpu_hours (default month) */
  gp_user_limit *core;       /* the scheduler's copy (n entries), borrowing the names */
} gp_srv_ulimits;

/* `user_limits: {period: month, users: {"*": {max_gpus: 4, max_pending_jobs: 100,
 * max_gpu_hours: 500}, alice: {...}}}` of a config document; errors name `path`. */
int gp__srv_ulimits_read(const gp_doc *d, const gp_doc_node *n, const char *path,
                         gp_srv_ulimits *ret, gp_err *err);
/* The same from JSON (PUT /v1/queues/{name}); null: no limits. Errors name
 * "user_limits.users.alice.max_gpus" and so on. */
int gp__srv_ulimits_from_json(const json_t *v, gp_srv_ulimits *ret, gp_err *err);
/* The JSON form, or null without limits. */
json_t *gp__srv_ulimits_to_json(const gp_srv_ulimits *u);
void gp__srv_ulimits_copy(gp_srv_ulimits *dst, const gp_srv_ulimits *src);
void gp__srv_ulimits_free(gp_srv_ulimits *u);
/* The limit that applies to `user`, or NULL. */
const gp_srv_ulimit *gp__srv_ulimit_for(const gp_srv_ulimits *u, const char *user);

#endif
