/* SPDX-License-Identifier: Apache-2.0 */
/* The steps a job keeps (srun inside a job), as records of the job: their tasks, states and
 * exits, the run's step credential, and their forms in the API's job document and in the
 * store (steps_doc.c). The state's job records hold them; the steps' work (placing,
 * starting, ending them: steps.h) is a part above the state.
 *
 * Internal to src/server (gp__srv_ names). */
#ifndef GP_SERVER_STEPS_DOC_H
#define GP_SERVER_STEPS_DOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "protocol/limits.h"


#define GP_SRV_STEPS_KEPT 64        /* steps a job keeps (the newest): its doc stays bounded */
#define GP_SRV_STEPS_MAX 10000      /* steps one run of a job may start */
#define GP_SRV_STEPS_RUNNING_MAX 64 /* steps of one job running at once */
#define GP_SRV_STEP_KEY_PREFIX "gpjob."
#define GP_SRV_STEP_ORPHAN_MS 60000 /* a step nobody asked about this long is cancelled */
#define GP_SRV_STEP_ORDERS_MAX ((size_t)64 << 20) /* bytes of orders one step may queue */

/* One task of a step. */
typedef struct gp_srv_step_task {
  int alloc_task;       /* the job task it runs in */
  char *node;           /* its node's name */
  bool done, has_exit;
  int exit_code, signal;
  char *reason;         /* exited | killed | start_failed | lost | cancelled ...; NULL */
  char *message;
  int64_t out_bytes, err_bytes;
} gp_srv_step_task;

typedef struct gp_srv_step {
  int id;
  json_t *command;      /* array of strings (owned) */
  int n_tasks;
  gp_srv_step_task *tasks;
  bool kill_on_bad_exit;
  bool exclusive;       /* srun --exclusive: its job tasks are its own while it runs, and
                           each step task sees its job task's GPUs */
  bool ended;
  bool stopping;        /* step_stop orders sent */
  char *state;          /* running | completed | failed | cancelled */
  char *reason;         /* why it ended other than by its tasks' exits, or NULL */
  int exit_code;        /* the highest task exit code (128 + N for signal N) once ended */
  int master_port;
  int64_t created_at, ended_at;
  int64_t polled_ms;    /* monotonic: when its srun last asked about it (memory only; 0
                           after a restart: the next tick starts the count) */
} gp_srv_step;

typedef struct gp_srv_steps {
  char key[GP_PROTO_JOB_KEY_MAX]; /* the current run's step credential; "" when none */
  int next_id;          /* the next step's id */
  int started;          /* steps started in this run */
  int n;                /* kept steps, oldest first */
  gp_srv_step *items;
} gp_srv_steps;

struct gp_srv_job;

/* ---- steps_doc.c ---- */
void gp__srv_steps_free(gp_srv_steps *st);
/* The API's "steps" list of a job (no credential), or NULL when it has none. */
json_t *gp__srv_steps_json(const struct gp_srv_job *j);
json_t *gp__srv_step_json(const gp_srv_step *p);
/* The stored form (with the credential) and back (bounded; a bad entry is dropped). */
json_t *gp__srv_steps_store_json(const struct gp_srv_job *j);
void gp__srv_steps_from_store(struct gp_srv_job *j, const json_t *doc);

#endif
