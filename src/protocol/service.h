/* SPDX-License-Identifier: Apache-2.0 */
/* What a start order says about a service replica (docs/services.md): that the agent gives
 * it a port ($PORT) and the HTTP probes it runs against that port (startup, readiness,
 * liveness). The server builds it from the service's spec, the agent decodes it; both read
 * this one definition. An order without it is an ordinary job. */
#ifndef GP_PROTOCOL_SERVICE_H
#define GP_PROTOCOL_SERVICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

#define GP_PROTO_PROBE_PATH_MAX 128   /* bytes in a probe's path, with its NUL */
#define GP_PROTO_SERVICE_NAME_MAX 64  /* bytes in a service name, with its NUL */

typedef struct gp_proto_probe {
  bool set;                           /* false: no such probe */
  char path[GP_PROTO_PROBE_PATH_MAX]; /* "/healthz": starts with '/', printable, no spaces */
  int period_s;                       /* 1..3600 between tries */
  int timeout_s;                      /* 1..60 for one try (an agent that stops waits for it) */
  int failure_threshold;              /* 1..1000 failures in a row before it fails */
  int initial_delay_s;                /* 0..86400 before the first try */
} gp_proto_probe;

#define GP_PROTO_METRIC_NAME_MAX 128  /* bytes in a metric's name, with its NUL */

typedef struct gp_proto_service {
  char name[GP_PROTO_SERVICE_NAME_MAX];
  gp_proto_probe startup, readiness, liveness;
  /* Autoscaling: the agent reads the figure `metric` (the sum of its samples) from the
   * replica's `metrics_path` every metrics_period_s; "" when the service does not scale. */
  char metrics_path[GP_PROTO_PROBE_PATH_MAX];
  char metric[GP_PROTO_METRIC_NAME_MAX];
  int metrics_period_s;               /* 1..3600 */
} gp_proto_service;

/* Is this a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, < 128 bytes)? */
bool gp_proto_metric_name_valid(const char *name);
/* The sum of the samples of metric `name` in Prometheus text (len bytes, untrusted: any
 * line that does not read is skipped). False when there is none; a sample that is not a
 * finite number in [0, 1e12] makes the figure unknown (false). */
bool gp_proto_metric_sum(const char *text, size_t len, const char *name, double *ret);

/* Is this a service name (1..63 bytes of [a-z0-9-], starting with a letter)? */
bool gp_proto_service_name_valid(const char *name);
/* Is this a probe path ("/" then printable ASCII other than space, < 128 bytes)? */
bool gp_proto_probe_path_valid(const char *path);
json_t *gp_proto_service_encode(const gp_proto_service *s);
/* Decodes the order's "service" object; errors name the field under ctx. */
int gp_proto_service_decode(const json_t *o, const char *ctx, gp_proto_service *ret, gp_err *err);

#endif
