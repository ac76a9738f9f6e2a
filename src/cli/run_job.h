/* SPDX-License-Identifier: Apache-2.0 */
/* The body of `gpool run` (run_cmd.c), shared with Slurm's `srun --pty` outside an
 * allocation (slurm_srun.c): submit the prepared job, wait for it, run its command as the
 * job's end_task session on this terminal. */
#ifndef GP_CLI_RUN_JOB_H
#define GP_CLI_RUN_JOB_H

#include <stdbool.h>

#include "cli/cli_common.h"
#include "cli/submit_args.h"

/* `s` holds the parsed options and the command (s->args); cli names the command for
 * messages and holds --server/--token/--ca. Returns the command's exit code, or gpool's
 * (1 refused, 2 usage, 3 unreachable, 130 interrupted while waiting). */
int gp_cli_run_job(gp_cli *cli, gp_submit *s, bool pty);

#endif
