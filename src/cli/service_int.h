/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by `gpool service` (service_cmd.c) and its endpoints verb (service_endpoints.c). */
#ifndef GP_CLI_SERVICE_INT_H
#define GP_CLI_SERVICE_INT_H

#include <stdbool.h>

#include "cli/cli_common.h"

typedef struct gp_svc_args {
  const char *words[3];
  const char *file, *revision, *format, *exec, *out, *interval;
  bool watch;
} gp_svc_args;

/* `gpool service endpoints NAME [--format F] [--out FILE] [--watch [--exec CMD]]`. */
int gp_cli_service_endpoints(gp_cli *cli, const gp_svc_args *a);

#endif
