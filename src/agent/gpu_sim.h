/* SPDX-License-Identifier: Apache-2.0 */
/* The simulated GPU backend: a model of a node's GPUs for machines without NVIDIA hardware
 * (laptops, CI, the `gpool up` demo). It implements the same gp_gpu_backend interface as
 * NVML and produces the same data from a model:
 *  - discovery from a spec such as "8xH100-80GB" or "4xA100-40GB,2xL40S", with UUIDs derived
 *    from the node name and the GPU index (a restarted agent sees the same UUIDs), PCI bus
 *    ids, NVLink domains (SXM parts: one domain per board of 4 or 8; PCIe parts: none;
 *    H100 NVL: bridged pairs) and MIG layouts;
 *  - samples whose utilisation, memory, power, energy, temperature and clocks follow the
 *    processes the agent attached to each GPU (gp_gpu_sim_attach), with per-process
 *    accounting so each job on a shared GPU has its own figures;
 *  - injectable faults (Xid events, ECC counts, row-remap failure, throttling, a GPU that
 *    fell off the bus), immediately or after a delay, so health handling is testable.
 * The model also holds the GPU model catalogue (names, memory, MIG profiles) that the NVML
 * backend uses to map a driver's product name to gpool's model name.
 * All functions are thread-safe: the agent may sample from one thread and attach or inject
 * from another. */
#ifndef GP_AGENT_GPU_SIM_H
#define GP_AGENT_GPU_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/gpu.h"
#include "protocol/fault.h"
#include "util/error.h"

/* ---- GPU model catalogue (DOMAIN.md; NVIDIA data sheets and the MIG User Guide) ---- */

#define GP_GPU_MODEL_MAX_MIG_PROFILES 6

typedef struct gp_gpu_mig_profile {
  const char *name;        /* "3g.40gb" */
  int compute_slices;      /* N of "Ng" */
  int mem_slices;          /* eighths of the GPU's memory it holds */
  int64_t mem_mib;         /* nominal instance memory */
  unsigned start_mask;     /* bit s set: the instance may start at memory slot s (0..7) */
} gp_gpu_mig_profile;

typedef struct gp_gpu_model {
  const char *model;       /* gpool's name: "H100-80GB" */
  const char *driver_name; /* the product name NVML reports: "NVIDIA H100 80GB HBM3" */
  int64_t mem_mib;         /* nominal memory (GiB * 1024) */
  int nvlink_group;        /* GPUs per NVLink domain; 0: PCIe part without NVLink */
  int idle_w, max_w;       /* power at idle and at full load (board power limit) */
  int max_sm_mhz, mem_mhz;
  int n_mig;               /* 0: no MIG */
  gp_gpu_mig_profile mig[GP_GPU_MODEL_MAX_MIG_PROFILES];
} gp_gpu_model;

/* Looks up a model by gpool name or alias, case-insensitively ("h100" -> "H100-80GB").
 * Returns NULL when unknown. The result is static. */
const gp_gpu_model *gp_gpu_model_find(const char *name);

/* Maps a driver product name ("NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3") to a model,
 * using the memory size to tell variants apart. NULL when unknown. */
const gp_gpu_model *gp_gpu_model_from_driver_name(const char *driver_name, int64_t mem_mib);

/* The model's MIG profile by name, or NULL. */
const gp_gpu_mig_profile *gp_gpu_model_mig_profile(const gp_gpu_model *m, const char *profile);

/* Checks a MIG layout against the model: known profiles, allowed start slots, no overlap,
 * at most 7 instances and 7 compute slices. 0 or GP_EINVAL with the offending entry in
 * err->field ("profiles[2]"). */
int gp_gpu_model_check_mig(const gp_gpu_model *m, const char *const *profiles,
                           const int *start_slots, int n, gp_err *err);

/* Places a layout given only its profiles: finds start slots (written to ret_slots, one
 * per profile, in the given order) that make gp_gpu_model_check_mig accept it, trying every
 * placement. GP_EINVAL when no placement exists ("4g.40gb,4g.40gb") or a profile is unknown. */
int gp_gpu_model_place_mig(const gp_gpu_model *m, const char *const *profiles, int n,
                           int *ret_slots, gp_err *err);

/* Writes the known model names, comma-separated, for error messages. */
void gp_gpu_model_list(char *buf, size_t size);

/* ---- The simulated backend ---- */

#define GP_GPU_SIM_MAX_COUNT 16 /* GPUs per "NxMODEL" term */

typedef struct gp_gpu_sim_opts {
  const char *node_name;   /* seeds the UUIDs; NULL: "sim" */
  /* Monotonic clock in ms; NULL: CLOCK_MONOTONIC. Tests pass a virtual clock. */
  int64_t (*clock_ms)(void *ctx);
  void *clock_ctx;
} gp_gpu_sim_opts;

/* Opens a simulated node from a spec "NxMODEL[,NxMODEL...]" (N 1..16, total <= 32; "MODEL"
 * alone means one GPU). Errors: GP_EINVAL naming the bad term and the known models.
 * opts may be NULL. On success *ret is the backend; close it with (*ret)->ops->close. */
int gp_gpu_sim_open(const char *spec, const gp_gpu_sim_opts *opts, gp_gpu_backend **ret,
                    gp_err *err);

/* The calls below are the simulated backend's own; they refuse other backends. The agent
 * reaches them through the backend's operations (gpu.h), which every backend implements. */

/* Declares that process `pid` of a job runs on GPU `gpu` (index) and, when mig_uuid is not
 * NULL or "", on that MIG instance. util_pct (0..100, of the GPU or of the MIG instance) and
 * mem_mib (>= 0) are its simulated load; pass -1 for the defaults (util 80%, memory 10% of the
 * GPU or instance). A pid may be attached to several GPUs (a multi-GPU job); attaching the
 * same pid to the same GPU again replaces its load. Errors: GP_ENOENT (no such GPU or MIG
 * instance), GP_EINVAL (bad load), GP_ELIMIT (GP_GPU_MAX_PROCS on that GPU),
 * GP_EUNSUPP (not a sim backend). */
int gp_gpu_sim_attach(gp_gpu_backend *b, int gpu, pid_t pid, const char *mig_uuid,
                      int util_pct, int64_t mem_mib, gp_err *err);

/* Removes `pid` from every GPU (the job's process ended). Returns how many attachments were
 * removed (0 when none) or GP_EUNSUPP. */
int gp_gpu_sim_detach(gp_gpu_backend *b, pid_t pid);

/* Declares whether GPU `gpu` runs an MPS server. Under MPS the driver counts every client's
 * kernels against the server, so the sample's per-process utilisation is unknown (-1) while
 * the device figure and each process's memory stay. GP_ENOENT or GP_EUNSUPP. */
int gp_gpu_sim_set_mps(gp_gpu_backend *b, int gpu, bool on);

/* Reads a job's declared simulated load from the values of its GPOOL_SIM_UTIL ("35", a
 * percentage) and GPOOL_SIM_MEM ("9G", "512M", "2048" MiB) environment variables; NULL
 * means unset and yields -1 (the default). GP_EINVAL with the variable in err->field. */
int gp_gpu_sim_parse_load(const char *util, const char *mem, int *ret_util_pct,
                          int64_t *ret_mem_mib, gp_err *err);

/* ---- Fault injection ---- */

/* Schedules faults on the backend (the `--inject` flag and the admin API's inject order).
 * GP_ENOENT for a GPU the node does not have; GP_ELIMIT when too many faults are pending. */
int gp_gpu_sim_inject(gp_gpu_backend *b, const gp_proto_fault *faults, int n, gp_err *err);

/* Parses (gp_proto_fault_parse) and injects in one call, through the backend's inject
 * operation (a backend that cannot fake faults refuses a well-formed spec with GP_EUNSUPP). */
int gp_gpu_sim_inject_spec(gp_gpu_backend *b, const char *spec, gp_err *err);

/* Simulates a GPU reset (what an operator or the health engine's reset check does): a GPU
 * that fell off the bus comes back, volatile ECC counts and throttling clear, pending
 * faults on it are dropped. A row-remap failure persists (the part needs replacing).
 * Refused with GP_ESTATE while processes are attached. */
int gp_gpu_sim_reset(gp_gpu_backend *b, int gpu, gp_err *err);

#endif
