/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's telemetry: samples every GPU through the backend (one round per interval,
 * default 1 s), keeps a short ring of samples per GPU, drains the backend's fault events,
 * attributes each GPU process to a job and aggregates per-job usage (average and peak SM
 * utilisation, peak memory, energy, idle time).
 *
 * Attribution: a GPU process belongs to a job when the process is the job's leader, when
 * its parent chain (/proc/<pid>/stat) reaches the leader, or when its cgroup
 * (/proc/<pid>/cgroup) is inside the job's cgroup. On a GPU shared by several jobs each job
 * gets its own processes' figures (never a copy of the device value); energy of a shared GPU
 * is split by the jobs' SM utilisation.
 *
 * Threading: one thread (the agent's loop) calls gp_telemetry_sample/set_jobs; any thread
 * (the /metrics handler) may read through gp_telemetry_view_get. A mutex guards the state. */
#ifndef GP_AGENT_TELEMETRY_H
#define GP_AGENT_TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/gpu.h"
#include "util/error.h"

#define GP_TELEMETRY_MAX_JOBS 256
#define GP_TELEMETRY_MAX_ATTR 512     /* (job, GPU) pairs in one view */
#define GP_TELEMETRY_MAX_EVENTS 64    /* events kept between two reads */

/* One running job as the agent knows it. Strings are copied. */
typedef struct gp_telemetry_job {
  char id[32];
  char queue[128];
  char user[64];
  pid_t leader;              /* the job's main process (session leader); 0: unknown */
  char cgroup[256];          /* its cgroup path as in /proc/<pid>/cgroup ("/gpool/job-12"), or "" */
  int n_gpus;
  int gpus[GP_GPU_MAX_DEVICES]; /* GPU indexes allocated to the job on this node */
  char mig_uuid[96];         /* the job's MIG instance, or "" */
} gp_telemetry_job;

/* A job's usage summary (the protocol's JOB.usage). */
typedef struct gp_job_usage {
  double avg_sm_util_pct;    /* time-weighted over the job's samples, mean over its GPUs */
  int peak_sm_util_pct;
  int64_t peak_mem_mib;      /* peak of the job's GPU memory, summed over its GPUs */
  double energy_j;
  int64_t idle_s;            /* time with SM utilisation under the idle threshold */
  int64_t sampled_s;         /* time covered by samples */
  bool util_known;           /* some round measured its SM utilisation (not so for MPS clients) */
  double sm_busy_gpu_s;      /* SM-busy GPU-seconds in whole-GPU units, summed over its GPUs
                                (a MIG instance's busy time x its share of the GPU); valid
                                with util_known */
} gp_job_usage;

/* One job's figures on one GPU in the latest round. */
typedef struct gp_telemetry_attr {
  int gpu;
  char job[32], queue[128], user[64];
  char mig_uuid[96];
  int n_procs;
  int sm_util_pct;           /* -1: the driver gave no per-process figure on a shared GPU */
  int64_t mem_mib;
  double energy_j;           /* attributed since the job started on this GPU */
} gp_telemetry_attr;

/* A consistent copy of the latest state, for renderers. */
typedef struct gp_telemetry_view {
  char hostname[128];
  char backend[16];          /* "nvml", "sim" */
  int n_gpus;
  gp_gpu_info info[GP_GPU_MAX_DEVICES];
  bool have_sample[GP_GPU_MAX_DEVICES]; /* false: the last read failed (see sample_error) */
  char sample_error[GP_GPU_MAX_DEVICES][128];
  gp_gpu_sample sample[GP_GPU_MAX_DEVICES];
  int last_xid[GP_GPU_MAX_DEVICES];     /* 0: none since start */
  int64_t xid_count[GP_GPU_MAX_DEVICES];
  int n_attr;
  gp_telemetry_attr attr[GP_TELEMETRY_MAX_ATTR];
  int64_t rounds;
  int64_t last_round_ns;     /* cost of the last sampling round */
} gp_telemetry_view;

typedef struct gp_telemetry_opts {
  const char *hostname;      /* label value; NULL: gethostname */
  int ring;                  /* samples kept per GPU; 0: 60 */
  int idle_threshold_pct;    /* under it a job counts as idle; 0: 1 */
  const char *proc_root;     /* "/proc" unless a test points elsewhere */
  /* Monotonic clock in ms for usage accounting; NULL: CLOCK_MONOTONIC. Tests pass the same
   * virtual clock as the simulated backend. */
  int64_t (*clock_ms)(void *ctx);
  void *clock_ctx;
} gp_telemetry_opts;

typedef struct gp_telemetry gp_telemetry;

/* Discovers the GPUs through `b` (borrowed: it must outlive the telemetry). opts may be
 * NULL. Errors: those of discovery. */
int gp_telemetry_new(gp_gpu_backend *b, const gp_telemetry_opts *opts, gp_telemetry **ret,
                     gp_err *err);
void gp_telemetry_free(gp_telemetry *t);

/* Re-reads discovery (after a MIG change). */
int gp_telemetry_rediscover(gp_telemetry *t, gp_err *err);

/* Replaces the job table. Jobs that left keep their final usage (for
 * gp_telemetry_job_usage) among the last GP_TELEMETRY_MAX_JOBS finished jobs. At most
 * GP_TELEMETRY_MAX_JOBS running jobs (GP_ELIMIT). */
int gp_telemetry_set_jobs(gp_telemetry *t, const gp_telemetry_job *jobs, int n, gp_err *err);

/* One sampling round: samples every GPU (a GPU whose read fails is marked, not fatal),
 * drains pending fault events without blocking, attributes processes to jobs, updates
 * usage. Returns 0 (per-GPU failures are in the view). */
int gp_telemetry_sample(gp_telemetry *t);

/* Fault events collected since the last call (oldest first); *ret_n <= max. */
int gp_telemetry_take_events(gp_telemetry *t, gp_gpu_event *out, int max, int *ret_n);

/* Usage of a running or recently finished job. GP_ENOENT when unknown. */
int gp_telemetry_job_usage(gp_telemetry *t, const char *job_id, gp_job_usage *ret);

/* The last (up to `max`) samples of one GPU from its ring, oldest first. GP_ENOENT for a
 * GPU the node does not have. */
int gp_telemetry_history(gp_telemetry *t, int gpu, gp_gpu_sample *out, int max, int *ret_n);

/* Fills *v (large: allocate it on the heap) with a consistent copy. */
void gp_telemetry_view_get(gp_telemetry *t, gp_telemetry_view *v);

/* The job whose process `pid` is, by the rules above (pid itself, parent chain, cgroup),
 * among `jobs`; -1 when none. Exposed for tests and for the agent's own use. */
int gp_telemetry_match_pid(const char *proc_root, pid_t pid, const gp_telemetry_job *jobs,
                           int n_jobs);

#endif
