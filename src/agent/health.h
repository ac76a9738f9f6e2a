/* SPDX-License-Identifier: Apache-2.0 */
/* GPU health policy and engine. The policy maps what the driver reports (Xid events,
 * double-bit ECC errors, row-remap failures and pending remaps, storms of single-bit ECC
 * errors, a GPU that can no longer be read) to actions: ignore, fail the job on that GPU with
 * a hardware reason (the server requeues it), drain the GPU, drain the node. Defaults come
 * from NVIDIA's Xid catalogue (see docs/health.md): application faults (13, 31, 43, 45) are
 * ignored, RESET_GPU-class faults (48, 63, 64, 74, 79, 94, 95, 119, 120, ...) fail the job and
 * drain the GPU, CONTACT_SUPPORT-class ones drain the node.
 *
 * The engine is fed once per sampling round with the telemetry view and the new events, and
 * returns the actions for the agent to apply (stop jobs, report gpu_fault events, mark GPUs
 * drained). It also tracks thermal/power throttling as a node condition and, when
 * configured, returns a drained GPU to service after a successful reset check.
 * Thread-safe: the /metrics handler may read GPU states while the agent loop evaluates. */
#ifndef GP_AGENT_HEALTH_H
#define GP_AGENT_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/gpu.h"
#include "agent/telemetry.h"
#include "util/doc.h"
#include "util/error.h"

/* Action bits; 0 means ignore. */
enum {
  GP_HEALTH_FAIL_JOB = 1 << 0,   /* stop the jobs on the GPU, reason "gpu_fault: ..." */
  GP_HEALTH_DRAIN_GPU = 1 << 1,  /* exclude the GPU from scheduling */
  GP_HEALTH_DRAIN_NODE = 1 << 2, /* exclude the whole node */
};

#define GP_HEALTH_MAX_XID_RULES 64

typedef struct gp_health_policy {
  int n_xid;
  struct {
    int xid;
    unsigned actions;
  } xid[GP_HEALTH_MAX_XID_RULES];
  unsigned unknown_xid;          /* Xids without a rule */
  unsigned double_bit_ecc;       /* the volatile DBE count rose */
  unsigned row_remap_failure;    /* remapping failed: the GPU needs replacing */
  unsigned row_remap_pending;    /* a remap waits for a GPU reset */
  unsigned gpu_lost;             /* the GPU cannot be read (fell off the bus) */
  int sbe_storm_count;           /* single-bit errors within the window that make a storm */
  int sbe_storm_window_s;
  unsigned sbe_storm;
  int throttle_window_s;         /* throttled this long (continuously) -> node condition */
  int auto_resume_after_s;       /* 0: drained GPUs wait for `gpool resume` */
} gp_health_policy;

/* The defaults described above. */
void gp_health_policy_default(gp_health_policy *p);

/* Reads a `health:` map of the config over the defaults:
 *   xid: {"79": [fail_job, drain_gpu], "13": ignore, default: ignore}
 *   double_bit_ecc / row_remap_failure / row_remap_pending / gpu_lost: ACTIONS
 *   sbe_storm: {count: 100, window: 60s, action: drain_gpu}
 *   throttle_window: 30s
 *   auto_resume: 10m          (or "off")
 * ACTIONS is one of ignore|fail_job|drain_gpu|drain_node or a list of them. Errors name the
 * file, line and key. */
int gp_health_policy_load(const gp_doc *doc, const gp_doc_node *node, gp_health_policy *p,
                          gp_err *err);

/* The actions for an Xid under the policy. */
unsigned gp_health_xid_actions(const gp_health_policy *p, int xid);

/* "fail_job,drain_gpu", "ignore": for logs, events and docs. */
const char *gp_health_actions_str(unsigned actions, char *buf, size_t size);

/* A short name of an Xid from the catalogue ("GPU has fallen off the bus"), or NULL. */
const char *gp_health_xid_name(int xid);

typedef enum gp_health_kind {
  GP_HEALTH_FAULT = 1,      /* apply `actions` for `gpu` */
  GP_HEALTH_RESUME_GPU,     /* the reset check passed: return `gpu` to service */
  GP_HEALTH_CONDITION,      /* node condition changed: `condition` set (active) or cleared */
} gp_health_kind;

#define GP_HEALTH_MAX_JOBS 16

typedef struct gp_health_action {
  gp_health_kind kind;
  int gpu;                   /* -1 for node-wide */
  int xid;                   /* 0 when not from an Xid */
  unsigned actions;          /* GP_HEALTH_FAULT */
  char reason[192];          /* "xid 79 (GPU has fallen off the bus) on GPU 3" */
  char condition[32];        /* GP_HEALTH_CONDITION: "thermal_throttling", "power_throttling" */
  bool active;
  int n_jobs;                /* jobs on the GPU (from the view's attribution and allocation) */
  char jobs[GP_HEALTH_MAX_JOBS][32];
} gp_health_action;

typedef enum gp_gpu_state {
  GP_GPU_STATE_HEALTHY = 0,
  GP_GPU_STATE_DRAINED,
  GP_GPU_STATE_FAILED,       /* drained and not answering (fell off the bus): no figures */
} gp_gpu_state;

typedef struct gp_health gp_health;

/* `backend` (borrowed, may be NULL) is used for the reset check before an automatic resume. */
gp_health *gp_health_new(const gp_health_policy *p, gp_gpu_backend *backend);
void gp_health_free(gp_health *h);

/* Evaluates one round. `jobs` (the agent's table, may be NULL) names the jobs on each GPU
 * even when they have no GPU process yet. Fills up to `max` actions. */
int gp_health_evaluate(gp_health *h, const gp_telemetry_view *v, const gp_gpu_event *events,
                       int n_events, const gp_telemetry_job *jobs, int n_jobs, int64_t now_ms,
                       gp_health_action *out, int max, int *ret_n);

/* An admin (`gpool resume`) or the server returned the GPU; forget its drain. */
void gp_health_resume(gp_health *h, int gpu);

/* Current state of a GPU and why; also whether the node is drained by the policy. */
gp_gpu_state gp_health_gpu_state(gp_health *h, int gpu, char *reason, size_t size);
bool gp_health_node_drained(gp_health *h, char *reason, size_t size);
/* Active node conditions, comma-separated ("thermal_throttling"), "" when none. */
void gp_health_conditions(gp_health *h, char *buf, size_t size);

#endif
