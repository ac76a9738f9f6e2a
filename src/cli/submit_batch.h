/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s batch options (submit_batch.c): output file patterns, --open-mode,
 * --begin, Slurm's --signal=[B:]SIG@T and --export. Each sets keys of the POST /v1/jobs
 * body `req`; `where` is "file:line" for a directive, NULL for the command line; errors
 * name the option. */
#ifndef GP_CLI_SUBMIT_BATCH_H
#define GP_CLI_SUBMIT_BATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

/* req[key] = the pattern v (key "output" or "error"; opt names the option in messages). */
int gp_submit_output(json_t *req, const char *key, const char *opt, const char *v,
                      const char *where, gp_err *err);
int gp_submit_open_mode(json_t *req, const char *v, const char *where, gp_err *err);

/* Slurm's --begin forms at local time: now, now+N[s|min|hours|days|weeks] (seconds when no
 * unit), HH:MM[:SS] (the next such time), midnight, noon, fika, teatime, tomorrow, today,
 * YYYY-MM-DD[THH:MM[:SS]]. Pure: `now` is the caller's clock. 0, or -1 when v is none. */
int gp_submit_parse_begin(const char *v, int64_t now, int64_t *ret);
int gp_submit_begin(json_t *req, const char *v, const char *where, gp_err *err);

/* --signal: NAME (gpool's checkpoint signal, sent when the job is stopped) or Slurm's
 * [B:]SIG[@T] (slurm_form, or a value with B:/@): SIG T seconds (default 60) before the
 * time limit, to the batch shell alone with B: (the job is still stopped with TERM at the
 * limit). */
int gp_submit_signal(json_t *req, const char *v, bool slurm_form, const char *where, gp_err *err);

/* --export=ALL|NONE|NAME[=value][,...]: checked and kept in req["_export"]. */
int gp_submit_export(json_t *req, const char *v, const char *where, gp_err *err);

/* Applies --export (default ALL for a script with #SBATCH lines, as in Slurm, else NONE) to
 * req["env"] from envp: -e/--env values win; GPOOL_* (tokens too), SLURM_* and the shell's PWD,
 * OLDPWD, SHLVL, _ are never taken. GP_ELIMIT past 512 variables or 48 KiB. */
int gp_submit_apply_export(json_t *req, bool sbatch, char **envp, gp_err *err);

#endif
