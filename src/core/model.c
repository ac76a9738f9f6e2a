/* SPDX-License-Identifier: Apache-2.0 */
/* Defaults of the cluster model and the names of its enums as files and the API spell
 * them. Pure: no I/O. */
#include "core/model.h"

#include <string.h>

#include "util/error.h"

const gp_priority_class gp_default_priority_classes[] = {
    {"inference", 100, false}, {"interactive", 80, false}, {"training", 50, true},
    {"batch", 20, true},       {"opportunistic", 0, true},
};
const int gp_n_default_priority_classes =
    (int)(sizeof gp_default_priority_classes / sizeof gp_default_priority_classes[0]);

const gp_priority_class *gp_priority_class_find(const gp_policy *p, const char *name) {
  const gp_priority_class *cls = p->n_priority_classes ? p->priority_classes
                                                       : gp_default_priority_classes;
  int n = p->n_priority_classes ? p->n_priority_classes : gp_n_default_priority_classes;
  for (int i = 0; name && i < n; i++)
    if (!strcmp(cls[i].name, name)) return &cls[i];
  return NULL;
}

void gp_policy_init(gp_policy *p) {
  memset(p, 0, sizeof *p);
  p->placement = GP_PLACE_BINPACK;
  p->share = GP_SHARE_POLICY_GPOOL;
  p->order = GP_ORDER_FAIRSHARE;
  p->backfill = true;
  p->reclaim = true;
  p->preemption = true;
  p->dynamic_mig = true;
  p->fair_users = true;
  p->default_priority = "training";
}

bool gp_job_state_is_final(gp_job_state s) {
  return s == GP_JOB_COMPLETED || s == GP_JOB_FAILED || s == GP_JOB_CANCELLED ||
         s == GP_JOB_PREEMPTED || s == GP_JOB_TIMEOUT;
}

static const char *const job_state_names[] = {[GP_JOB_PENDING] = "pending", [GP_JOB_RUNNING] = "running", [GP_JOB_HELD] = "held", [GP_JOB_STOPPING] = "stopping", [GP_JOB_COMPLETED] = "completed", [GP_JOB_FAILED] = "failed", [GP_JOB_CANCELLED] = "cancelled", [GP_JOB_PREEMPTED] = "preempted", [GP_JOB_TIMEOUT] = "timeout"};

const char *gp_job_state_name(gp_job_state v) {
  return (unsigned)v < sizeof job_state_names / sizeof job_state_names[0] ? job_state_names[v] : "unknown";
}

int gp_job_state_parse(const char *s, gp_job_state *ret) {
  for (unsigned i = 0; s && i < sizeof job_state_names / sizeof job_state_names[0]; i++)
    if (strcmp(s, job_state_names[i]) == 0) {
      *ret = (gp_job_state)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const node_state_names[] = {[GP_NODE_UP] = "up", [GP_NODE_DOWN] = "down", [GP_NODE_DRAIN] = "drain", [GP_NODE_CORDON] = "cordon"};

const char *gp_node_state_name(gp_node_state v) {
  return (unsigned)v < sizeof node_state_names / sizeof node_state_names[0] ? node_state_names[v] : "unknown";
}

int gp_node_state_parse(const char *s, gp_node_state *ret) {
  for (unsigned i = 0; s && i < sizeof node_state_names / sizeof node_state_names[0]; i++)
    if (strcmp(s, node_state_names[i]) == 0) {
      *ret = (gp_node_state)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const capacity_names[] = {[GP_CAP_ON_DEMAND] = "on-demand", [GP_CAP_RESERVED] = "reserved", [GP_CAP_SPOT] = "spot", [GP_CAP_ON_PREM] = "on-prem"};

const char *gp_capacity_name(gp_capacity v) {
  return (unsigned)v < sizeof capacity_names / sizeof capacity_names[0] ? capacity_names[v] : "unknown";
}

int gp_capacity_parse(const char *s, gp_capacity *ret) {
  for (unsigned i = 0; s && i < sizeof capacity_names / sizeof capacity_names[0]; i++)
    if (strcmp(s, capacity_names[i]) == 0) {
      *ret = (gp_capacity)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const spot_pref_names[] = {[GP_SPOT_NEUTRAL] = "neutral", [GP_SPOT_PREFER] = "prefer", [GP_SPOT_AVOID] = "avoid", [GP_SPOT_NEVER] = "never"};

const char *gp_spot_pref_name(gp_spot_pref v) {
  return (unsigned)v < sizeof spot_pref_names / sizeof spot_pref_names[0] ? spot_pref_names[v] : "unknown";
}

int gp_spot_pref_parse(const char *s, gp_spot_pref *ret) {
  for (unsigned i = 0; s && i < sizeof spot_pref_names / sizeof spot_pref_names[0]; i++)
    if (strcmp(s, spot_pref_names[i]) == 0) {
      *ret = (gp_spot_pref)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const gpu_health_names[] = {[GP_GPU_HEALTHY] = "healthy", [GP_GPU_DRAINED] = "drained", [GP_GPU_FAILED] = "failed"};

const char *gp_gpu_health_name(gp_gpu_health v) {
  return (unsigned)v < sizeof gpu_health_names / sizeof gpu_health_names[0] ? gpu_health_names[v] : "unknown";
}

int gp_gpu_health_parse(const char *s, gp_gpu_health *ret) {
  for (unsigned i = 0; s && i < sizeof gpu_health_names / sizeof gpu_health_names[0]; i++)
    if (strcmp(s, gpu_health_names[i]) == 0) {
      *ret = (gp_gpu_health)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const share_mode_names[] = {[GP_SHARE_EXCLUSIVE] = "exclusive", [GP_SHARE_SHARED] = "shared", [GP_SHARE_TIMESLICE] = "timeslice", [GP_SHARE_MIG] = "mig"};

const char *gp_share_mode_name(gp_share_mode v) {
  return (unsigned)v < sizeof share_mode_names / sizeof share_mode_names[0] ? share_mode_names[v] : "unknown";
}

int gp_share_mode_parse(const char *s, gp_share_mode *ret) {
  for (unsigned i = 0; s && i < sizeof share_mode_names / sizeof share_mode_names[0]; i++)
    if (strcmp(s, share_mode_names[i]) == 0) {
      *ret = (gp_share_mode)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const placement_policy_names[] = {[GP_PLACE_BINPACK] = "binpack", [GP_PLACE_SPREAD] = "spread"};

const char *gp_placement_policy_name(gp_placement_policy v) {
  return (unsigned)v < sizeof placement_policy_names / sizeof placement_policy_names[0] ? placement_policy_names[v] : "unknown";
}

int gp_placement_policy_parse(const char *s, gp_placement_policy *ret) {
  for (unsigned i = 0; s && i < sizeof placement_policy_names / sizeof placement_policy_names[0]; i++)
    if (strcmp(s, placement_policy_names[i]) == 0) {
      *ret = (gp_placement_policy)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const share_policy_names[] = {[GP_SHARE_POLICY_GPOOL] = "gpool", [GP_SHARE_POLICY_FGD] = "fgd", [GP_SHARE_POLICY_BESTFIT] = "bestfit", [GP_SHARE_POLICY_GPUPACKING] = "gpupacking", [GP_SHARE_POLICY_DOTPRODUCT] = "dotproduct", [GP_SHARE_POLICY_RANDOM] = "random"};

const char *gp_share_policy_name(gp_share_policy v) {
  return (unsigned)v < sizeof share_policy_names / sizeof share_policy_names[0] ? share_policy_names[v] : "unknown";
}

int gp_share_policy_parse(const char *s, gp_share_policy *ret) {
  for (unsigned i = 0; s && i < sizeof share_policy_names / sizeof share_policy_names[0]; i++)
    if (strcmp(s, share_policy_names[i]) == 0) {
      *ret = (gp_share_policy)i;
      return 0;
    }
  return GP_EINVAL;
}

static const char *const order_policy_names[] = {[GP_ORDER_FAIRSHARE] = "fairshare", [GP_ORDER_FIFO] = "fifo", [GP_ORDER_PRIORITY] = "priority", [GP_ORDER_SJF] = "sjf"};

const char *gp_order_policy_name(gp_order_policy v) {
  return (unsigned)v < sizeof order_policy_names / sizeof order_policy_names[0] ? order_policy_names[v] : "unknown";
}

int gp_order_policy_parse(const char *s, gp_order_policy *ret) {
  for (unsigned i = 0; s && i < sizeof order_policy_names / sizeof order_policy_names[0]; i++)
    if (strcmp(s, order_policy_names[i]) == 0) {
      *ret = (gp_order_policy)i;
      return 0;
    }
  return GP_EINVAL;
}
