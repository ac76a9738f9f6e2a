/* SPDX-License-Identifier: Apache-2.0 */
/* POST /v1/jobs/{id}/requeue (docs/api.md#requeue): Slurm's `scontrol requeue`. A running
 * job is stopped as usual (its signal, then KILL after its grace period) and, once every
 * task is gone, goes back to the queue with its restart count one higher (lifecycle.c's
 * finalize, stop reason "requeued"), so that its next run sees SLURM_RESTART_COUNT. The
 * caller is the job's owner or an admin, or the job itself with its run's step credential
 * (GPOOL_JOB_KEY): a batch script's signal trap requeues its own job, as on Slurm. */
#include <stdio.h>
#include <string.h>

#include "server/front/routes.h"
#include "server/state/server_int.h"
#include "server/state/state.h"
#include "server/workloads/steps.h"
#include "util/secret.h"

bool gp__srv_requeue_path(const char *path, char *job_id, size_t size) {
  if (strncmp(path, "/v1/jobs/", 9) != 0) return false;
  const char *id = path + 9, *slash = strchr(id, '/');
  if (!slash || slash == id || (size_t)(slash - id) >= size || strcmp(slash, "/requeue") != 0) return false;
  snprintf(job_id, size, "%.*s", (int)(slash - id), id);
  return true;
}

/* The job's own credential for its current run, or its owner, or an admin. */
static bool allowed(const gp_srv_req *r, const gp_srv_job *j) {
  if (r->job_key)
    return j->steps && j->steps->key[0] && gp_secret_equal(r->job_key, j->steps->key);
  if (r->role == GP_ROLE_ADMIN) return true;
  return r->role != GP_ROLE_VIEWER && r->user && strcmp(r->user, j->user) == 0;
}

int gp__srv_requeue_route(gp_srv_state *s, gp_srv_req *r, const char *id, int64_t now, gp_err *err) {
  if (!gp__srv_req_method(r, "POST")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use POST on /v1/jobs/{id}/requeue");
    return 0;
  }
  gp_srv_job *j = gp__srv_job_get(s, id);
  if (!j || !allowed(r, j)) {
    /* A credential learns nothing about other jobs: the same answer as for no such job. */
    if (r->job_key || !j) {
      gp__srv_reply_error(r, r->job_key ? 403 : 404, r->job_key ? "permission_denied" : "not_found", NULL,
                          r->job_key ? "a job's credential may requeue only its own running job"
                                     : "no job %s", id);
      return 0;
    }
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                        "job %s belongs to %s; only its owner or an admin may requeue it", j->idstr, j->user);
    return 0;
  }
  if (j->array) {
    gp__srv_reply_error(r, 409, "conflict", NULL,
                        "job %s is an array: requeue its running elements one by one (%s_N)", j->idstr, j->idstr);
    return 0;
  }
  if (j->state != GP_JOB_RUNNING) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "job %s is %s: only a running job can be requeued", j->idstr,
                        gp_job_state_name(j->state));
    return 0;
  }
  json_t *extra = json_pack("{s:s}", "by", r->job_key ? "the job itself" : r->user);
  int rc = gp__srv_job_event(s, j, "requeue_requested", now, extra, err);
  if (!rc) rc = gp__srv_job_stop(s, j, "requeued", now, err);
  if (rc) return rc;
  json_t *o = json_object();
  json_object_set_new(o, "id", json_string(j->idstr));
  json_object_set_new(o, "state", json_string(gp_job_state_name(j->state)));
  json_object_set_new(o, "requeue", json_string("requested"));
  gp__srv_reply_json(r, 200, o);
  return 0;
}
