/* SPDX-License-Identifier: Apache-2.0 */
/* Advice for one job name, as `gpool submit --advise` prints it before submitting (the
 * command itself is `gpool advise`, advise_cmd.c). */
#ifndef GP_CLI_ADVISE_H
#define GP_CLI_ADVISE_H

#include <stdio.h>

#include "cli/cli_common.h"

/* Fetches the caller's advice for jobs named `name` over the last week (GET /v1/advice) on
 * a connected cli and prints one line per item to `out`. Advice is a courtesy: a failure is
 * printed as a note and never stops the caller. Returns the number of items printed. */
int gp_cli_advise_name(gp_cli *cli, const char *name, FILE *out);

#endif
