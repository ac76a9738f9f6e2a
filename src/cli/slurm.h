/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's user commands answered by the gpool binary (sbatch, squeue, scancel, sinfo,
 * sacct, scontrol: slurm_*.c), run by those names through links (`gpool slurm-shims DIR`,
 * and the agent's <data>/bin in every job). What they share lives here: Slurm's state
 * codes for gpool's states, its time forms, a job's id and node list as Slurm prints them,
 * and reading every page of a job listing. They answer from the public API with the
 * user's client config, as every gpool command; anything of Slurm they do not imitate is
 * refused by name (docs/slurm.md). */
#ifndef GP_CLI_SLURM_H
#define GP_CLI_SLURM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/cli_common.h"

/* The names the binary answers to, and the links `gpool slurm-shims` makes. */
#define GP_SLURM_SHIMS "sbatch", "squeue", "scancel", "sinfo", "sacct", "scontrol", "srun"
#define GP_SLURM_N_SHIMS 7

/* Slurm's short (PD, R, CG, CD, F, CA, TO, PR) and long (PENDING, ...) names of a gpool
 * job state; "??"/"UNKNOWN" for a state gpool does not have. */
const char *gp_slurm_state_code(const char *state);
const char *gp_slurm_state_long(const char *state);
/* Adds to `set` (a JSON object used as a set of gpool states) the states a Slurm -t/--state
 * word names (a code or a long name, any case; "all"); false when it names none. */
bool gp_slurm_state_word(const char *word, json_t *set);

/* Slurm's durations as squeue prints them: "M:SS", "H:MM:SS", "D-HH:MM:SS"; a limit of 0 is
 * "UNLIMITED". */
void gp_slurm_fmt_elapsed(int64_t s, char *out, size_t cap);
void gp_slurm_fmt_limit(int64_t s, char *out, size_t cap);
/* Unix seconds as Slurm's local "YYYY-MM-DDTHH:MM:SS"; 0 or less: `none` ("N/A", "Unknown"). */
void gp_slurm_fmt_time(int64_t t, const char *none, char *out, size_t cap);

/* A job's id as Slurm shows it: an array element's "J_I", else its number. */
const char *gp_slurm_job_id(json_t *job);
/* Whether a user's id word (J, J_I) names this job: its number, its "J_I", or its array J. */
bool gp_slurm_id_matches(json_t *job, const char *word);
/* The distinct nodes of its placements in hostlist form ("" when none); returns their count. */
int gp_slurm_nodelist(json_t *job, char *out, size_t cap);
/* Seconds it has run: to its end, or to now while it runs; 0 before it starts. */
int64_t gp_slurm_elapsed(json_t *job, int64_t now);
int64_t gp_slurm_int(json_t *obj, const char *key);
const char *gp_slurm_str(json_t *obj, const char *key, const char *none);

/* GETs every page of `base` (a path ending in '?' or '&'), `cursor_key` naming the paging
 * parameter ("next" for the live list, "cursor" for the history), appending the jobs to `all`. */
int gp_slurm_fetch_jobs(gp_cli *cli, const char *base, const char *cursor_key, json_t *all);

/* A usage error of Slurm command `cmd`, as "CMD: error: ..." on stderr; returns 2. */
int gp_slurm_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The client's connection from the environment and client.json (no --server flags: Slurm's
 * commands have none); returns 0 or the exit code after saying why. */
int gp_slurm_connect(gp_cli *cli, const char *cmd);

/* The submission path `gpool submit` and sbatch share (submit.c): after the options and the
 * script's directives are read, finishes the request, POSTs it and prints the new id as
 * gpool (`mode` 0), "Submitted batch job N" (1) or N alone (2, sbatch --parsable). */
struct gp_submit;
int gp_submit_read_script(const char *path, char **ret_text, size_t *ret_len, gp_err *err);
int gp_submit_send(struct gp_submit *s, gp_cli *cli, const char *text, int mode);

int gp_cmd_sbatch(int argc, char **argv);
int gp_cmd_squeue(int argc, char **argv);
int gp_cmd_scancel(int argc, char **argv);
int gp_cmd_sinfo(int argc, char **argv);
int gp_cmd_sacct(int argc, char **argv);
/* srun inside a job: a step through the agents (slurm_srun.c). */
int gp_cmd_srun(int argc, char **argv);
/* `scontrol show job ID` (slurm_scontrol_job.c). */
int gp_slurm_show_job(const char *id);
/* `scontrol requeue ID[,ID...] [ID...]` (slurm_scontrol_job.c): POST /v1/jobs/ID/requeue. */
int gp_slurm_requeue(int n, char **words);
/* `gpool slurm-shims DIR` (slurm_sbatch.c). */
int gp_cmd_slurm_shims(int argc, char **argv);

#endif
