/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's /metrics: Prometheus text with dcgm-exporter's metric names and labels
 * (DCGM_FI_DEV_GPU_UTIL{gpu,UUID,pci_bus_id,device,modelName,Hostname,hostname,...}) so
 * existing GPU dashboards work unchanged, plus gpool's own per-job series:
 *  - device series carry job/queue/user labels only when exactly one job holds the GPU
 *    (then the device value is that job's);
 *  - gpool_job_gpu_* series give each job on a GPU its own per-process figures (a shared
 *    GPU never copies the device value to every job); gpool_* series use snake_case labels
 *    (uuid, model_name, gpu_i_profile...) and share `gpu` and `hostname` with the DCGM ones;
 * and GPU health states and node conditions. Series of a job vanish when it ends, so the
 * label cardinality stays bounded by the jobs running now. */
#ifndef GP_AGENT_METRICS_H
#define GP_AGENT_METRICS_H

#include "agent/health.h"
#include "agent/telemetry.h"
#include "util/buf.h"

/* Renders a view; `h` (may be NULL) adds health states and conditions. */
void gp_agent_metrics_render(const gp_telemetry_view *v, gp_health *h, gp_buf *out);

/* Takes a view of `t` and renders it (the GET /metrics handler's one call). */
void gp_agent_metrics_text(gp_telemetry *t, gp_health *h, gp_buf *out);

#endif
