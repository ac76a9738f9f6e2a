/* SPDX-License-Identifier: Apache-2.0 */
/* Per-GPU telemetry over a job's life (GET /v1/jobs/{id}/metrics): the server keeps, for
 * each GPU a job ran on, samples of its utilisation, memory used and power, taken from the
 * agents' heartbeats. The memory is bounded per job: at most GP_SRV_JOBMETRICS_SAMPLES
 * samples per GPU and GP_SRV_JOBMETRICS_GPUS GPUs; a full series halves its resolution by
 * merging neighbours (the job's whole life stays, at coarser steps). Memory only: the
 * samples go with the job when it leaves memory (or with a reload of the state). State
 * thread. */
#ifndef GP_SERVER_JOBMETRICS_H
#define GP_SERVER_JOBMETRICS_H

#include <jansson.h>
#include <stdint.h>

#include "server/state/state.h"
#include "util/buf.h"

#define GP_SRV_JOBMETRICS_SAMPLES 720 /* per GPU: 2 h at 10 s, then coarser */
#define GP_SRV_JOBMETRICS_GPUS 128    /* GPUs followed per job (a larger gang: its first) */

typedef struct gp_srv_jobmetrics gp_srv_jobmetrics;

/* Node n (index idx) sent a heartbeat with its GPUs' telemetry and `jobs`, its list of
 * running jobs ([{"id", ...}], untrusted): a sample for each GPU those jobs hold there,
 * at most one per GPU per interval. `base_interval_s`: the first interval (the heartbeat). */
void gp__srv_jobmetrics_take(gp_srv_state *s, const gp_srv_node *n, int idx, const json_t *jobs,
                             int base_interval_s, int64_t now_s);

/* Writes the API document {"job","interval_s","gpus":[...]} of job j into out. */
void gp__srv_jobmetrics_json(const gp_srv_job *j, int base_interval_s, gp_buf *out);

/* The bytes the job's samples take (for tests and the bound). */
size_t gp__srv_jobmetrics_bytes(const gp_srv_jobmetrics *m);

void gp__srv_jobmetrics_free(gp_srv_jobmetrics *m); /* accepts NULL */

#endif
