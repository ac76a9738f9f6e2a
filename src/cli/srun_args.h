/* SPDX-License-Identifier: Apache-2.0 */
/* srun's command line (srun_args.c), read apart from running it (slurm_srun.c) so tests
 * check every option: what gpool does with each Slurm srun option, and a refusal naming
 * any it does not do (exit 2), never one silently ignored. */
#ifndef GP_CLI_SRUN_ARGS_H
#define GP_CLI_SRUN_ARGS_H

#include <jansson.h>
#include <stdbool.h>

typedef struct gp_srun_opts {
  int nodes, ntasks, ntasks_per_node; /* 0: not given */
  json_t *nodelist;        /* -w/--nodelist expanded (array of names), or NULL */
  bool label;              /* -l/--label: "N: " before each line */
  bool kill_on_bad_exit;   /* -K/--kill-on-bad-exit[=1] */
  bool exclusive;          /* --exclusive: job tasks of its own among the job's steps */
  bool quiet;              /* -Q/--quiet: no srun: messages but errors */
  char *jobid;             /* --jobid: another job than $SLURM_JOB_ID (needs a user token) */
  int export_mode;         /* 0: ALL (the default), 1: NONE, 2: only the names in `export` */
  json_t *export_set;      /* --export's VAR=value assignments (object) */
  json_t *export_names;    /* --export's bare names (array) */
  char *output, *error;    /* -o/--output, -e/--error: Slurm's file patterns (outpath.h), or
                              NULL (srun's own stdout/stderr); stderr goes to -o's file
                              without -e, as Slurm's srun */
  bool append;             /* --open-mode=append; else the files are truncated */
  int argc;                /* the command: argv[first..] */
  char **argv;             /* borrowed from the caller's argv */
} gp_srun_opts;

/* Reads srun's options up to the command. `env` reads the caller's environment (getenv in
 * srun; a table in tests), for the options whose meaning depends on the job (-c equal to
 * the job's SLURM_CPUS_PER_TASK is true of gpool anyway). Returns 0, or 2 with a sentence
 * in msg (naming the option) for one gpool refuses or a malformed value. */
int gp_srun_parse(int argc, char **argv, const char *(*env)(const char *name), gp_srun_opts *o,
                  char *msg, size_t size);
void gp_srun_opts_done(gp_srun_opts *o);

/* The environment srun passes to its step (Slurm's --export=ALL default, or what
 * --export names), from `environ`-style items: never GPOOL_* (the node's own and the
 * credential), nor a rendezvous variable still equal to its GPOOL_ twin (the job task's
 * value, which the step's own replaces); names that are no variable names are left out.
 * Returns the object, or NULL with a sentence in msg when it passes the step's bounds. */
json_t *gp_srun_env(const gp_srun_opts *o, char *const *items, char *msg, size_t size);

#endif
