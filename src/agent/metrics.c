/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's /metrics renderer declared in metrics.h. A field the backend could not read
 * (-1) produces no series rather than a made-up zero. dcgm-exporter's names are kept as they
 * are even where Prometheus' naming lint would prefer otherwise (DCGM_FI_DEV_PCIE_REPLAY_COUNTER
 * is a counter without "_total"): compatibility with existing dashboards wins; gpool's own
 * gpool_* names follow the lint. */
#include "agent/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static void esc(gp_buf *out, const char *v) {
  for (const char *p = v ? v : ""; *p; p++) {
    if (*p == '\\') gp_buf_puts(out, "\\\\");
    else if (*p == '"') gp_buf_puts(out, "\\\"");
    else if (*p == '\n') gp_buf_puts(out, "\\n");
    else gp_buf_append(out, p, 1);
  }
}

static void label(gp_buf *out, bool *first, const char *k, const char *v) {
  gp_buf_printf(out, "%s%s=\"", *first ? "{" : ",", k);
  esc(out, v);
  gp_buf_puts(out, "\"");
  *first = false;
}

static void num(gp_buf *out, double v) {
  if (v == (double)(long long)v && fabs(v) < 1e15) gp_buf_printf(out, " %lld\n", (long long)v);
  else gp_buf_printf(out, " %.6g\n", v);
}

static void family(gp_buf *out, const char *name, const char *type, const char *help) {
  gp_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The single job holding GPU g (its attribution row), or NULL when none, several, or when
 * processes of no job also run there. */
static const gp_telemetry_attr *sole_job(const gp_telemetry_view *v, int g) {
  const gp_telemetry_attr *found = NULL;
  for (int i = 0; i < v->n_attr; i++) {
    if (v->attr[i].gpu != g) continue;
    if (found) return NULL;
    found = &v->attr[i];
  }
  /* A process of no known job shares the GPU: the device figure is not the job's alone. */
  if (found && v->have_sample[g] && v->sample[g].n_procs != found->n_procs) return NULL;
  return found;
}

static const gp_gpu_mig_info *mig_by_uuid(const gp_gpu_info *in, const char *uuid) {
  for (int k = 0; uuid && *uuid && k < in->n_mig; k++)
    if (!strcmp(in->mig[k].uuid, uuid)) return &in->mig[k];
  return NULL;
}

/* Identifying labels of GPU g, then job labels when `a` is given. DCGM_FI_* series use
 * dcgm-exporter's label names (UUID, modelName, Hostname, GPU_I_PROFILE...) so its dashboards
 * work unchanged; gpool_* series use snake_case names (uuid, model_name, gpu_i_profile...),
 * and both carry `gpu` and `hostname` to join on. */
static void gpu_labels_x(gp_buf *out, const gp_telemetry_view *v, int g,
                         const gp_telemetry_attr *a, const gp_gpu_mig_info *mig,
                         const char *extra_k, const char *extra_v, bool dcgm) {
  const gp_gpu_info *in = &v->info[g];
  bool first = true;
  char buf[32];
  snprintf(buf, sizeof buf, "%d", in->index);
  label(out, &first, "gpu", buf);
  label(out, &first, dcgm ? "UUID" : "uuid", in->uuid);
  label(out, &first, "pci_bus_id", in->pci_bus_id);
  snprintf(buf, sizeof buf, "nvidia%d", in->index);
  label(out, &first, "device", buf);
  label(out, &first, dcgm ? "modelName" : "model_name", in->name);
  if (dcgm) label(out, &first, "Hostname", v->hostname);
  label(out, &first, "hostname", v->hostname);
  if (mig) {
    label(out, &first, dcgm ? "GPU_I_PROFILE" : "gpu_i_profile", mig->profile);
    snprintf(buf, sizeof buf, "%d", mig->gpu_instance_id);
    label(out, &first, dcgm ? "GPU_I_ID" : "gpu_i_id", buf);
  }
  if (a) {
    label(out, &first, "job", a->job);
    label(out, &first, "queue", a->queue);
    label(out, &first, "user", a->user);
  }
  if (extra_k) label(out, &first, extra_k, extra_v);
  gp_buf_puts(out, "}");
}

static void gpu_labels(gp_buf *out, const gp_telemetry_view *v, int g, const gp_telemetry_attr *a,
                       const gp_gpu_mig_info *mig) {
  gpu_labels_x(out, v, g, a, mig, NULL, NULL, true);
}

static void gpool_labels(gp_buf *out, const gp_telemetry_view *v, int g,
                         const gp_telemetry_attr *a, const gp_gpu_mig_info *mig) {
  gpu_labels_x(out, v, g, a, mig, NULL, NULL, false);
}

typedef struct dev_metric {
  const char *name, *type, *help;
  int kind; /* how to read the value */
} dev_metric;

enum {
  M_UTIL, M_MEMCOPY, M_FB_USED, M_FB_FREE, M_FB_RES, M_POWER, M_ENERGY, M_TEMP, M_MEMTEMP,
  M_SMCLK, M_MEMCLK, M_XID, M_PCIE, M_NVLINK, M_SBE, M_DBE, M_RR_UNC, M_RR_COR, M_RR_FAIL,
  M_THROTTLE,
};

static const dev_metric dev_metrics[] = {
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", M_UTIL},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", M_MEMCOPY},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", M_FB_USED},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", M_FB_FREE},
    {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", M_FB_RES},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", M_POWER},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", M_ENERGY},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", M_TEMP},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", M_MEMTEMP},
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", M_SMCLK},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", M_MEMCLK},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", M_XID},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", M_PCIE},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "gauge",
     "NVLink traffic over all links (in bytes per second).", M_NVLINK},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
     M_SBE},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
     M_DBE},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors.", M_RR_UNC},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors.", M_RR_COR},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed.", M_RR_FAIL},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
     "Current clock throttle reasons (bitmask of NVML clocks-event reasons).", M_THROTTLE},
};

/* Reads one device value; false when the backend could not read it. */
static bool dev_value(const gp_telemetry_view *v, int g, int kind, double *ret) {
  const gp_gpu_sample *s = &v->sample[g];
  double x;
  switch (kind) {
  case M_UTIL: x = s->gpu_util_pct; break;
  case M_MEMCOPY: x = s->mem_copy_util_pct; break;
  case M_FB_USED: x = (double)s->fb_used_mib; break;
  case M_FB_FREE: x = (double)s->fb_free_mib; break;
  case M_FB_RES: x = (double)s->fb_reserved_mib; break;
  case M_POWER: x = s->power_w; break;
  case M_ENERGY: x = (double)s->energy_mj; break;
  case M_TEMP: x = s->temp_c; break;
  case M_MEMTEMP: x = s->mem_temp_c; break;
  case M_SMCLK: x = s->sm_clock_mhz; break;
  case M_MEMCLK: x = s->mem_clock_mhz; break;
  case M_XID: *ret = v->last_xid[g]; return true;
  case M_PCIE: x = (double)s->pcie_replay_counter; break;
  case M_NVLINK:
    if (v->info[g].nvlink_domain < 0) return false;
    x = (double)s->nvlink_bandwidth_total;
    break;
  case M_SBE: x = (double)s->ecc_sbe_volatile; break;
  case M_DBE: x = (double)s->ecc_dbe_volatile; break;
  case M_RR_UNC: x = (double)s->remapped_rows_uncorrectable; break;
  case M_RR_COR: x = (double)s->remapped_rows_correctable; break;
  case M_RR_FAIL:
    if (s->remapped_rows_uncorrectable < 0 && !s->row_remap_failure) return false;
    *ret = s->row_remap_failure ? 1 : 0;
    return true;
  case M_THROTTLE: *ret = (double)s->throttle_reasons; return true;
  default: return false;
  }
  if (x < 0) return false;
  *ret = x;
  return true;
}

static void render_devices(const gp_telemetry_view *v, gp_buf *out) {
  for (size_t m = 0; m < sizeof dev_metrics / sizeof dev_metrics[0]; m++) {
    const dev_metric *dm = &dev_metrics[m];
    family(out, dm->name, dm->type, dm->help);
    for (int g = 0; g < v->n_gpus; g++) {
      double x;
      if (!v->have_sample[g] || !dev_value(v, g, dm->kind, &x)) continue;
      gp_buf_puts(out, dm->name);
      /* Device series carry job labels only when one job holds the whole GPU: then the
       * device figure is that job's own. */
      gpu_labels(out, v, g, v->info[g].mig_enabled ? NULL : sole_job(v, g), NULL);
      num(out, x);
    }
    /* dcgm-exporter reports framebuffer use per MIG instance; so do we, from the
     * processes on each instance. */
    if (dm->kind == M_FB_USED || dm->kind == M_FB_FREE) {
      for (int g = 0; g < v->n_gpus; g++) {
        const gp_gpu_info *in = &v->info[g];
        if (!v->have_sample[g] || !in->mig_enabled) continue;
        for (int k = 0; k < in->n_mig; k++) {
          int64_t used = 0;
          for (int p = 0; p < v->sample[g].n_procs; p++)
            if (!strcmp(v->sample[g].procs[p].mig_uuid, in->mig[k].uuid))
              used += v->sample[g].procs[p].used_mib;
          int64_t val = dm->kind == M_FB_USED ? used : in->mig[k].mem_mib - used;
          if (val < 0) val = 0;
          gp_buf_puts(out, dm->name);
          gpu_labels(out, v, g, NULL, &in->mig[k]);
          num(out, (double)val);
        }
      }
    }
  }
}

static void render_jobs(const gp_telemetry_view *v, gp_buf *out) {
  static const struct {
    const char *name, *type, *help;
  } fams[] = {
      {"gpool_job_gpu_sm_util_percent", "gauge",
       "SM utilisation of the job's own processes on the GPU (per-process accounting)."},
      {"gpool_job_gpu_memory_used_bytes", "gauge", "GPU memory used by the job's processes."},
      {"gpool_job_gpu_processes", "gauge", "The job's processes on the GPU."},
      {"gpool_job_gpu_energy_joules_total", "counter",
       "GPU energy attributed to the job on this GPU (split by SM utilisation when shared)."},
  };
  for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
    family(out, fams[f].name, fams[f].type, fams[f].help);
    for (int i = 0; i < v->n_attr; i++) {
      const gp_telemetry_attr *a = &v->attr[i];
      if (a->gpu < 0 || a->gpu >= v->n_gpus) continue;
      double x;
      if (f == 0) {
        if (a->sm_util_pct < 0) continue; /* unknown on a shared GPU: no copied figure */
        x = a->sm_util_pct;
      } else if (f == 1) {
        x = (double)a->mem_mib * 1048576.0;
      } else if (f == 2) {
        x = a->n_procs;
      } else {
        x = a->energy_j;
      }
      gp_buf_puts(out, fams[f].name);
      gpool_labels(out, v, a->gpu, a, mig_by_uuid(&v->info[a->gpu], a->mig_uuid));
      num(out, x);
    }
  }
}

static void render_health(const gp_telemetry_view *v, gp_health *h, gp_buf *out) {
  family(out, "gpool_gpu_sample_ok", "gauge",
         "1 when the last read of the GPU succeeded, 0 when it failed (e.g. fell off the bus).");
  for (int g = 0; g < v->n_gpus; g++) {
    gp_buf_puts(out, "gpool_gpu_sample_ok");
    gpool_labels(out, v, g, NULL, NULL);
    num(out, v->have_sample[g] ? 1 : 0);
  }
  family(out, "gpool_gpu_xid_events_total", "counter", "Xid events reported for the GPU.");
  for (int g = 0; g < v->n_gpus; g++) {
    gp_buf_puts(out, "gpool_gpu_xid_events_total");
    gpool_labels(out, v, g, NULL, NULL);
    num(out, (double)v->xid_count[g]);
  }
  if (!h) return;
  family(out, "gpool_gpu_healthy", "gauge", "1 when the GPU is in service, 0 when drained.");
  for (int g = 0; g < v->n_gpus; g++) {
    gp_buf_puts(out, "gpool_gpu_healthy");
    gpool_labels(out, v, g, NULL, NULL);
    num(out, gp_health_gpu_state(h, g, NULL, 0) == GP_GPU_STATE_HEALTHY ? 1 : 0);
  }
  family(out, "gpool_gpu_drained_info", "gauge",
         "Present (1) for a drained or failed GPU, with the reason.");
  for (int g = 0; g < v->n_gpus; g++) {
    char reason[192];
    if (gp_health_gpu_state(h, g, reason, sizeof reason) == GP_GPU_STATE_HEALTHY) continue;
    gp_buf_puts(out, "gpool_gpu_drained_info");
    gpu_labels_x(out, v, g, NULL, NULL, "reason", reason, false);
    num(out, 1);
  }
  char conds[256];
  gp_health_conditions(h, conds, sizeof conds);
  family(out, "gpool_node_condition", "gauge",
         "Active node conditions (thermal_throttling, power_throttling, drained).");
  char *save = NULL;
  for (char *c = strtok_r(conds, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
    gp_buf_puts(out, "gpool_node_condition");
    bool first = true;
    label(out, &first, "hostname", v->hostname);
    label(out, &first, "condition", c);
    gp_buf_puts(out, "}");
    num(out, 1);
  }
}

void gp_agent_metrics_render(const gp_telemetry_view *v, gp_health *h, gp_buf *out) {
  render_devices(v, out);
  render_jobs(v, out);
  render_health(v, h, out);
  family(out, "gpool_agent_sample_rounds_total", "counter", "Telemetry sampling rounds run.");
  gp_buf_printf(out, "gpool_agent_sample_rounds_total %lld\n", (long long)v->rounds);
  family(out, "gpool_agent_sample_round_seconds", "gauge",
         "Wall time of the last sampling round over all GPUs.");
  gp_buf_printf(out, "gpool_agent_sample_round_seconds %.9f\n", (double)v->last_round_ns / 1e9);
}

void gp_agent_metrics_text(gp_telemetry *t, gp_health *h, gp_buf *out) {
  gp_telemetry_view *v = gp_xmalloc(sizeof *v);
  gp_telemetry_view_get(t, v);
  gp_agent_metrics_render(v, h, out);
  free(v);
}
