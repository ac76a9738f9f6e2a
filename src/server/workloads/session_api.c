/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/jobs/{id}/session?task=T on the state thread: who may open an interactive
 * session (the job's owner and admins; never a viewer nor an agent's token), and where its
 * task runs. The HTTP thread then upgrades the connection and relays it to that node's
 * agent (sessions.h). */
#include <stdio.h>
#include <string.h>

#include "server/state/server_int.h"
#include "server/workloads/sessions.h"
#include "server/state/state.h"
#include "util/mem.h"
#include "util/units.h"

void gp__srv_session_route(gp_srv_state *s, gp_srv_req *r, gp_srv_job *j) {
  if (!gp__srv_req_method(r, "GET")) {
    gp__srv_reply_error(r, 405, "method_not_allowed", NULL, "use GET (a WebSocket upgrade) on /v1/jobs/{id}/session");
    return;
  }
  static const char *const keys[] = {"task", NULL};
  if (!gp__srv_query_known(r, keys, "task")) return;
  bool owner = r->user && j->user && strcmp(r->user, j->user) == 0;
  if (r->role == GP_ROLE_VIEWER || r->role == GP_ROLE_AGENT || r->role == GP_ROLE_NONE ||
      (!owner && r->role != GP_ROLE_ADMIN)) {
    gp__srv_reply_error(r, 403, "permission_denied", NULL,
                        "job %s belongs to %s; only its owner or an admin may open a session in it", j->idstr,
                        j->user);
    return;
  }
  const char *tv = gp__srv_req_query(r, "task");
  int64_t task = 0;
  int tasks = j->tasks > 0 ? j->tasks : 1;
  if (tv && (gp_parse_int64(tv, &task) || task < 0 || task >= tasks)) {
    gp__srv_reply_error(r, 400, "invalid_argument", "task", "job %s has tasks 0..%d", j->idstr, tasks - 1);
    return;
  }
  if (j->state != GP_JOB_RUNNING || j->n_alloc <= task || j->alloc[task].node < 0 ||
      j->alloc[task].node >= s->n_nodes || j->alloc[task].exited) {
    gp__srv_reply_error(r, 409, "conflict", NULL, "task %lld of job %s is not running (the job is %s)",
                        (long long)task, j->idstr, gp_job_state_name(j->state));
    return;
  }
  gp_srv_node *n = s->nodes[j->alloc[task].node];
  if (!n->agent_url) {
    gp__srv_reply_error(r, 503, "unavailable", NULL, "node %s has no agent address", n->name);
    return;
  }
  const char *tok = gp__srv_node_agent_token(s, n);
  /* "URL\nTOKEN\nNODE": the agent's session address, its token, and the node's name for
   * the messages (sessions.c splits them). */
  char spec[1400];
  snprintf(spec, sizeof spec, "%s/sessions/%s?task=%lld\n%s\n%s", n->agent_url, j->idstr, (long long)task,
           tok, n->name);
  free(r->session_spec);
  r->session_spec = gp_xstrdup(spec);
  r->status = 200;
  r->answered = true;
}
