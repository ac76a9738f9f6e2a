/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's configuration: one optional YAML file (agent.yaml) overridden by command-line
 * flags. Per-GPU sharing modes (exclusive, shared, timeslice:N, mig:<layout>), labels,
 * CPU/memory overrides, stop defaults, the cgroup root and the data directory. Errors name
 * the file, line and key. */
#ifndef GP_AGENT_CONFIG_H
#define GP_AGENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/container.h"
#include "agent/gpu.h"
#include "agent/health.h"
#include "tls/tls.h"
#include "util/error.h"

#define GP_AGENT_MAX_LABELS 64

typedef enum gp_agent_share {
  GP_MODE_EXCLUSIVE = 0,
  GP_MODE_SHARED,
  GP_MODE_TIMESLICE,
  GP_MODE_MIG,
} gp_agent_share;

typedef struct gp_gpu_mode {
  bool set;              /* configured (else the node default applies) */
  gp_agent_share mode;
  int replicas;          /* timeslice:N -> N; otherwise 1 */
  char mig_layout[256];  /* mig:<layout> -> "3g.40gb,2g.20gb,..." */
} gp_gpu_mode;

/* The spot interruption watcher (`spot:`, spot.c): which metadata service to poll. */
typedef enum gp_agent_spot_provider {
  GP_SPOT_NONE = 0,      /* no watcher */
  GP_SPOT_AWS,           /* /latest/meta-data/spot/instance-action (IMDSv2 token if offered) */
  GP_SPOT_GCP,           /* /computeMetadata/v1/instance/preempted */
  GP_SPOT_AZURE,         /* /metadata/scheduledevents (Preempt events) */
} gp_agent_spot_provider;

typedef struct gp_agent_spot {
  gp_agent_spot_provider provider;
  char url[256];         /* the metadata service's base URL; "" -> the cloud's own address */
  int interval_s;        /* between polls; 1..60, default 2 */
} gp_agent_spot;

typedef struct gp_agent_config {
  char name[128];          /* node name; "" -> hostname */
  char server[512];
  char job_server[512];    /* GPOOL_SERVER for jobs; "" -> server (docs/agent.md) */
  char token[512];
  char sim[256];           /* sim spec; "" -> no simulated GPUs */
  char data_dir[512];
  char listen[128];        /* "127.0.0.1:0" */
  char capacity[32];       /* on-demand | spot | reserved | on-prem */
  char cgroup_root[512];
  char mps_pipe_dir[512];  /* "" -> $CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps */
  char signal[16];         /* default checkpoint signal, "TERM" */
  char models_dir[512];    /* model cache whose subdirectories it reports (models.c); "": none */
  int n_labels;
  char label_keys[GP_AGENT_MAX_LABELS][64];
  char label_values[GP_AGENT_MAX_LABELS][128];
  int64_t cpus;            /* 0: detect */
  int64_t mem_mib;         /* 0: detect */
  int heartbeat_s;         /* long-poll length; default 5 */
  int grace_s;             /* default grace period; 30 */
  int watchdog_ms;         /* GPU memory watchdog period; 1000 */
  bool personal;           /* run every job as the agent's own user */
  bool allow_root_jobs;
  gp_health_policy health; /* GPU fault policy (the `health:` map) */
  gp_gpu_mode default_mode;
  gp_gpu_mode gpus[GP_GPU_MAX_DEVICES];
  gp_tls_files tls;        /* `tls:` HTTPS files; empty: plain HTTP. peer_ca is server_ca */
  gp_agent_spot spot;      /* `spot:` interruption watcher; provider NONE: off */
  gp_agent_container_cfg container; /* `container:` jobs in images (container.h) */
  char self_exe[512];      /* the gpool binary, linked as jobs' scontrol; "": no shim (set by
                              `gpool agent`, not a config key) */
} gp_agent_config;

/* Fills the defaults. */
void gp_agent_config_init(gp_agent_config *cfg);

/* Loads agent.yaml over cfg. Errors: GP_EINVAL/GP_EPARSE with file, line and key. */
int gp_agent_config_load(const char *path, gp_agent_config *cfg, gp_err *err);

/* Parses "exclusive", "shared", "timeslice:4", "mig:3g.40gb,1g.10gb". */
int gp_gpu_mode_parse(const char *text, gp_gpu_mode *ret, gp_err *err);
/* "exclusive" | "shared" | "timeslice" | "mig". */
const char *gp_agent_mode_name(gp_agent_share m);

/* Parses "k=v,k2=v2" into the labels (added to or replacing those present). */
int gp_agent_config_add_labels(gp_agent_config *cfg, const char *text, gp_err *err);

/* "aws" | "gcp" | "azure" | "none". */
const char *gp_agent_spot_provider_name(gp_agent_spot_provider p);

/* The effective mode of GPU `index`. */
const gp_gpu_mode *gp_agent_config_gpu_mode(const gp_agent_config *cfg, int index);

#endif
