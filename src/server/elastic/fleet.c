/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet a job is checked against at submission: the registered nodes and the nodes the
 * autoscaler's templates would make. A job naming a GPU model takes the fleet's spelling of
 * it, and a job that no node and no template could ever hold is refused with the reason. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/sched.h"
#include "server/elastic/autoscale.h"
#include "server/state/state.h"
#include "util/mem.h"

void gp__srv_job_fleet_models(const gp_srv_state *s, gp_srv_job *j) {
  int nt = 0;
  const gp_template *tm = gp__srv_autoscale_templates(s->autoscale, &nt);
  for (int k = 0; k < j->n_gpu_types; k++)
    for (int i = 0; i < s->n_nodes + nt; i++) { /* the nodes, then the templates' */
      const char *m = i < s->n_nodes ? s->nodes[i]->model : tm[i - s->n_nodes].node.model;
      if (m && strcasecmp(m, j->gpu_types[k]) == 0) {
        if (strcmp(m, j->gpu_types[k]) != 0) {
          free(j->gpu_types[k]);
          j->gpu_types[k] = gp_xstrdup(m);
        }
        break;
      }
    }
}

/* The core's own test (gp_sched_could_ever_run) on the fleet as registered, and on the
 * node templates: a job that only a template's node could hold waits for one. */
int gp__srv_check_feasible(gp_srv_state *s, const gp_srv_job *j, gp_err *err) {
  gp_request r;
  gp__srv_job_request(j, &r);
  gp_end_reason why;
  if (gp_sched_could_ever_run(gp__srv_view_nodes(s), s->n_nodes, &r, &why)) return 0;
  if (gp__srv_autoscale_could_run(s->autoscale, &r)) return 0;
  if (why == GP_END_GPU_MODEL_UNKNOWN)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_types", "no node in the pool has GPU model %s%s",
                      j->gpu_types[0], j->n_gpu_types > 1 ? " (or the other models listed)" : "");
  return gp_err_set(err, GP_EINVAL, NULL, 0, j->gpus > 0 ? "gpus" : "node_selector",
                    "NoMatchingNodes: the nodes of the pool could never run this job's tasks "
                    "(GPUs, GPU model, CPUs, memory, labels or spot)");
}
