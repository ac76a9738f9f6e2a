/* SPDX-License-Identifier: Apache-2.0 */
/* Releases a job record (job.h) and everything it owns: its fields, its array, its steps
 * and its metrics. Apart from the job's JSON (jobjson.c), so that whatever drops a record
 * (ended jobs, the load, a replaced job) frees it without calling the documents' code. */
#include <stdlib.h>

#include "server/state/jobmetrics.h"
#include "server/state/state.h"
#include "server/state/steps_doc.h"

static void strv_free(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

void gp__srv_job_free(gp_srv_job *j) {
  if (!j) return;
  free(j->name);
  free(j->queue);
  for (int i = 0; i < j->n_partitions; i++) free(j->partitions[i]);
  free(j->partitions);
  free(j->user);
  free(j->priority);
  json_decref(j->command);
  json_decref(j->env);
  free(j->workdir);
  free(j->mail_user);
  free(j->service);
  free(j->mig);
  free(j->model);
  strv_free(j->gpu_types, j->n_gpu_types);
  for (int i = 0; i < j->n_selector; i++) {
    free((char *)j->selector[i].key);
    free((char *)j->selector[i].value);
  }
  free(j->selector);
  free(j->signal);
  free(j->output);
  json_decref(j->container);
  free(j->warn_signal);
  free(j->error);
  strv_free(j->after, j->n_after);
  strv_free(j->after_ok, j->n_after_ok);
  strv_free(j->after_any, j->n_after_any);
  strv_free(j->after_not_ok, j->n_after_not_ok);
  gp__srv_array_free(j->array);
  free(j->end_reason);
  free(j->stop_reason);
  free(j->task_failure);
  gp__srv_steps_free(j->steps);
  free(j->alloc);
  free(j->view_pl);
  json_decref(j->timeline);
  json_decref(j->usage);
  json_decref(j->last_placements);
  json_decref(j->attempts);
  free(j->enforcement);
  free(j->pending_message);
  gp__srv_jobmetrics_free(j->metrics);
  free(j);
}
