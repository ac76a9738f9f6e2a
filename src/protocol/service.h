/* SPDX-License-Identifier: Apache-2.0 */
/* What a start order says about a service replica (docs/services.md): that the agent gives
 * it a port ($PORT) and the HTTP probes it runs against that port (startup, readiness,
 * liveness). The server builds it from the service's spec, the agent decodes it; both read
 * this one definition. An order without it is an ordinary job. */
#ifndef GP_PROTOCOL_SERVICE_H
#define GP_PROTOCOL_SERVICE_H

#include <jansson.h>
#include <stdbool.h>

#include "util/error.h"

#define GP_PROTO_PROBE_PATH_MAX 128   /* bytes in a probe's path, with its NUL */
#define GP_PROTO_SERVICE_NAME_MAX 64  /* bytes in a service name, with its NUL */

typedef struct gp_proto_probe {
  bool set;                           /* false: no such probe */
  char path[GP_PROTO_PROBE_PATH_MAX]; /* "/healthz": starts with '/', printable, no spaces */
  int period_s;                       /* 1..3600 between tries */
  int timeout_s;                      /* 1..600 for one try */
  int failure_threshold;              /* 1..1000 failures in a row before it fails */
  int initial_delay_s;                /* 0..86400 before the first try */
} gp_proto_probe;

typedef struct gp_proto_service {
  char name[GP_PROTO_SERVICE_NAME_MAX];
  gp_proto_probe startup, readiness, liveness;
} gp_proto_service;

/* Is this a service name (1..63 bytes of [a-z0-9-], starting with a letter)? */
bool gp_proto_service_name_valid(const char *name);
/* Is this a probe path ("/" then printable ASCII other than space, < 128 bytes)? */
bool gp_proto_probe_path_valid(const char *path);
json_t *gp_proto_service_encode(const gp_proto_service *s);
/* Decodes the order's "service" object; errors name the field under ctx. */
int gp_proto_service_decode(const json_t *o, const char *ctx, gp_proto_service *ret, gp_err *err);

#endif
