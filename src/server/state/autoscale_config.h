/* SPDX-License-Identifier: Apache-2.0 */
/* The server config's `autoscale:` block (docs/config.md, "Autoscaling"): in which order
 * the node templates' capacity classes are tried, the pool's cost cap, how long a created
 * node may take to register, when an idle provider node is given back, how a failing
 * template backs off and how often the autoscaler runs. */
#ifndef GP_SERVER_AUTOSCALE_CONFIG_H
#define GP_SERVER_AUTOSCALE_CONFIG_H

#include "util/doc.h"
#include "util/error.h"

typedef struct gp_autoscale_config {
  int class_rank[4];          /* per gp_capacity: place in `order`, -1: never created */
  double max_hourly_cost;     /* GP_NO_LIMIT: none */
  int resume_timeout_s;       /* a created node registers within this or is deleted (900) */
  int scale_down_after_s;     /* an empty provider node is deleted after this; 0: never (600) */
  int backoff_initial_s;      /* after a template's first failed call (60) */
  int backoff_max_s;          /* doubling per consecutive failure, up to this (1800) */
  int interval_ms;            /* the autoscaler runs at most this often (1000) */
} gp_autoscale_config;

/* The defaults: order on-prem, reserved, spot, on-demand; no cost cap; 15m, 10m, 60s..30m, 1s. */
void gp_autoscale_config_init(gp_autoscale_config *c);

/* Reads the `autoscale` map `m` (path names it in errors) over the defaults in *c. */
int gp_autoscale_config_read(const gp_doc *d, const gp_doc_node *m, const char *path,
                             gp_autoscale_config *c, gp_err *err);

#endif
