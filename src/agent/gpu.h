/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's GPU backend interface: discovery, sampling, per-process accounting, fault
 * events and MIG layout changes. Two backends stand behind it: NVML (real GPUs, loaded
 * with dlopen) and a simulated one (models GPUs and their load for machines without GPUs).
 * Everything else in the agent sees only this interface: where the two differ (a driver to
 * give jobs, simulated load, injected faults, resets), an operation here says what the
 * backend does, so no caller asks which backend it has. */
#ifndef GP_AGENT_GPU_H
#define GP_AGENT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/fault.h"
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
  /* The host has NVIDIA's driver and its tools (nvidia-smi) for jobs to use. */
  bool has_driver;
  int (*discover)(gp_gpu_backend *b, gp_gpu_info *out, int max, int *ret_n, gp_err *err);
  int (*sample)(gp_gpu_backend *b, int gpu, gp_gpu_sample *out, gp_err *err);
  /* Returns up to `max` events waiting (none: 0), without blocking longer than timeout_ms. */
  int (*poll_events)(gp_gpu_backend *b, gp_gpu_event *out, int max, int timeout_ms, int *ret_n);
  /* Re-partitions an idle GPU; the backend refuses when processes run on it. */
  int (*set_mig_layout)(gp_gpu_backend *b, int gpu, const char *const *profiles,
                        const int *start_slots, int n, gp_err *err);
  /* Names of the readings this backend cannot give, comma-separated ("" when none). */
  void (*missing_readings)(const gp_gpu_backend *b, char *buf, size_t size);

  /* What the agent tells the backend about its jobs. A driver sees the processes on its
   * GPUs by itself, so the NVML backend accepts these and does nothing; the simulated
   * backend models each GPU's load from the processes attached to it. */
  /* Reads a job's declared load from the values of its GPOOL_SIM_UTIL and GPOOL_SIM_MEM
   * variables (NULL: unset); -1 in either result means the default. */
  int (*job_load)(gp_gpu_backend *b, const char *util, const char *mem, int *ret_util_pct,
                  int64_t *ret_mem_mib, gp_err *err);
  /* Process `pid` runs on GPU `gpu` (on MIG instance mig_uuid unless NULL or "") with the
   * given load (-1: the default). */
  int (*attach)(gp_gpu_backend *b, int gpu, pid_t pid, const char *mig_uuid, int util_pct,
                int64_t mem_mib, gp_err *err);
  /* Process `pid` has ended: it leaves every GPU. Returns how many GPUs it left (>= 0). */
  int (*detach)(gp_gpu_backend *b, pid_t pid);

  /* Faults and recovery. */
  /* Schedules faults (drills and tests); GP_EUNSUPP where the backend cannot fake them. */
  int (*inject)(gp_gpu_backend *b, const gp_proto_fault *faults, int n, gp_err *err);
  /* Resets an idle GPU where the backend can; where it cannot (real GPUs: an operator runs
   * nvidia-smi -r), returns 0 and the caller reads the GPU's state as it is. */
  int (*reset)(gp_gpu_backend *b, int gpu, gp_err *err);

  void (*close)(gp_gpu_backend *b);
} gp_gpu_backend_ops;

struct gp_gpu_backend {
  const gp_gpu_backend_ops *ops;
  void *impl;
};

#endif
