/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's GPU backend interface: discovery, sampling, per-process accounting, fault
 * events and MIG layout changes. Two backends stand behind it: NVML (real GPUs, loaded
 * with dlopen) and a simulated one (models GPUs and their load for machines without GPUs).
 * Everything else in the agent sees only this interface. */
#ifndef GP_AGENT_GPU_H
#define GP_AGENT_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

#define GP_GPU_MAX_DEVICES 32
#define GP_GPU_MAX_PROCS 64
#define GP_GPU_MAX_MIG 7

typedef struct gp_gpu_mig_info {
  char uuid[96];          /* "MIG-..." */
  char profile[32];       /* "1g.10gb" */
  int gpu_instance_id;    /* GPU_I_ID */
  int start_slot;
  int64_t mem_mib;
} gp_gpu_mig_info;

/* Static facts about one GPU, found at discovery. */
typedef struct gp_gpu_info {
  int index;
  char uuid[96];          /* "GPU-..." */
  char name[96];          /* as the driver names it, e.g. "NVIDIA H100 80GB HBM3" */
  char model[32];         /* gpool's model name, e.g. "H100-80GB" */
  char pci_bus_id[32];
  int64_t mem_mib;
  bool mig_enabled;
  int n_mig;
  gp_gpu_mig_info mig[GP_GPU_MAX_MIG];
  int nvlink_domain;      /* GPUs joined by NVLink share a domain; -1 none */
  bool ecc_enabled;
} gp_gpu_info;

/* One process using a GPU, from the driver's per-process accounting. */
typedef struct gp_gpu_proc {
  pid_t pid;
  int64_t used_mib;
  int sm_util_pct;        /* -1 when the driver does not say */
  char mig_uuid[96];      /* "" unless on a MIG instance */
} gp_gpu_proc;

/* One sample of one GPU. A field the backend cannot read is -1. */
typedef struct gp_gpu_sample {
  int64_t at_ms;          /* monotonic time of the sample */
  int gpu_util_pct, mem_copy_util_pct;
  int64_t fb_used_mib, fb_free_mib, fb_reserved_mib;
  double power_w;
  int64_t energy_mj;      /* total since driver load */
  int temp_c, mem_temp_c;
  int sm_clock_mhz, mem_clock_mhz;
  uint64_t throttle_reasons; /* NVML clocks-event-reason bits */
  int64_t ecc_sbe_volatile, ecc_dbe_volatile;
  int64_t remapped_rows_correctable, remapped_rows_uncorrectable;
  bool row_remap_failure, row_remap_pending;
  int64_t pcie_replay_counter;
  int64_t nvlink_bandwidth_total; /* bytes per second, all links */
  int n_procs;
  gp_gpu_proc procs[GP_GPU_MAX_PROCS];
} gp_gpu_sample;

/* A fault the driver reported. */
typedef struct gp_gpu_event {
  int gpu;                /* index */
  int xid;                /* Xid code, 0 for non-Xid events */
  char mig_uuid[96];
  int64_t at_ms;
} gp_gpu_event;

typedef struct gp_gpu_backend gp_gpu_backend;

typedef struct gp_gpu_backend_ops {
  const char *name;                                               /* "nvml", "sim" */
  int (*discover)(gp_gpu_backend *b, gp_gpu_info *out, int max, int *ret_n, gp_err *err);
  int (*sample)(gp_gpu_backend *b, int gpu, gp_gpu_sample *out, gp_err *err);
  /* Returns up to `max` events waiting (none: 0), without blocking longer than timeout_ms. */
  int (*poll_events)(gp_gpu_backend *b, gp_gpu_event *out, int max, int timeout_ms, int *ret_n);
  /* Re-partitions an idle GPU; the backend refuses when processes run on it. */
  int (*set_mig_layout)(gp_gpu_backend *b, int gpu, const char *const *profiles,
                        const int *start_slots, int n, gp_err *err);
  void (*close)(gp_gpu_backend *b);
} gp_gpu_backend_ops;

struct gp_gpu_backend {
  const gp_gpu_backend_ops *ops;
  void *impl;
};

#endif
