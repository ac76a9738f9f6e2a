/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s arguments, turned into the body of POST /v1/jobs: command-line options,
 * a script's #GPOOL directive lines (the same options) and #SBATCH lines (Slurm's
 * spellings: --gres, -G/--gpus, -N, -c, --mem, -t, -J, -p as queue, --dependency, -o, -e,
 * --export, --begin, --signal, ...; submit_batch.h reads the batch ones).
 *
 * Precedence follows sbatch: directives are read in file order, then the command line
 * overrides them. Directives are read from the script's leading comment block only (the
 * first line that is neither blank nor a comment ends it, as in Slurm). Slurm options gpool
 * has no use for (--mail-user, ...) are ignored with a warning naming the line;
 * a #GPOOL line with a bad option is an error naming the file and line.
 *
 * Nothing here talks to the network; gp_submit_resolve_types() takes the fleet's nodes as
 * JSON so the model-name matching is testable on its own. */
#ifndef GP_CLI_SUBMIT_ARGS_H
#define GP_CLI_SUBMIT_ARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/error.h"

#define GP_SUBMIT_MAX_SCRIPT ((size_t)1 << 20)

typedef struct gp_submit {
  json_t *req;          /* the request body (script directives, then merged); owned */
  json_t *cli;          /* options from the command line; owned */
  const char *script;   /* the script to submit, or NULL; borrowed from argv */
  int n_args;           /* the command after "--", or the script's own arguments */
  char **args;          /* borrowed from argv */
  bool dashdash;        /* the command came after "--" */
  bool json_out;        /* -o json */
  bool help;
  bool advise;          /* --advise: print the advice on the job's name first */
  bool sbatch;          /* the script has #SBATCH options: --export defaults to ALL */
  const char *server;   /* --server, borrowed */
  const char *token;    /* --token, borrowed */
  const char *ca;       /* --ca, borrowed */
  gp_buf warnings;      /* one line each, for stderr */
} gp_submit;

void gp_submit_init(gp_submit *s);
void gp_submit_done(gp_submit *s);

/* Reads `gpool submit`'s argv (argv[0] is "submit"). Options stop at "--" or at the first
 * word that is not an option (a script path or a command). */
int gp_submit_parse_args(gp_submit *s, int argc, char **argv, gp_err *err);

/* Reads the directive lines of a script's text (`name` is used in messages). */
int gp_submit_parse_script(gp_submit *s, const char *name, const char *text, size_t len,
                           gp_err *err);

/* Applies the command line over the directives, checks that the options agree (one of
 * -g/--gpu-fraction/--gpu-mem/--mig, Slurm's total --gpus divisible by the node count, ...),
 * sets the command (the words after "--", or the script run by its #! interpreter, as an
 * absolute path) and the working directory (default: cwd). `script_text` is the script's
 * text or NULL. */
int gp_submit_finish(gp_submit *s, const char *cwd, const char *script_text, gp_err *err);

/* The job's tasks from -N/--nodes, --ntasks and --ntasks-per-node (kept in private "_" keys
 * of req until now): `tasks` (-N alone: one task per node; --ntasks: that many), and
 * `tasks_per_node`, the most tasks one node may hold (--ntasks-per-node, or with both -N and
 * --ntasks their ratio rounded up); and per-task `gpus` from per-node (--gres,
 * --gpus-per-node: divided by the tasks a node holds) or per-job (--gpus) counts
 * (submit_layout.c). */
int gp_submit_layout(json_t *req, gp_err *err);
/* Slurm's own meaning of #SBATCH -N/--nodes (what = "nodes": exactly that many nodes, one
 * task each unless told otherwise; "N-N" accepted, a range refused) and --mem (what =
 * "mem": 0 is a whole node, i.e. exclusive with no memory limit) and -p (what = "partition":
 * a list of queues, the first that takes the job) (submit_layout.c). */
int gp_submit_sb_opt(json_t *req, const char *what, const char *v, const char *where, gp_err *err);

/* Replaces the names in req["gpu_types"] by the fleet's models they mean, matching case
 * insensitively and by prefix at a word boundary ("h100" -> "H100-80GB", and every other
 * H100 model the fleet has). `nodes` is the answer of GET /v1/nodes. A name that matches
 * nothing is an error listing the models the pool has; with no nodes at all the names are
 * left for the server to judge. */
/* --mail-type (is_type) or --mail-user with value v into the request's mail_type or
 * mail_user (submit_mail.c): event lists are checked here, so a script's mistake names its
 * line; `where` is that line ("job.sh:3") or NULL. */
int gp_submit_mail_opt(json_t *req, bool is_type, const char *v, const char *where, gp_err *err);
int gp_submit_resolve_types(json_t *req, json_t *nodes, gp_err *err);

#endif
