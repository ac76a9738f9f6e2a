/* SPDX-License-Identifier: Apache-2.0 */
/* A small, reentrant option scanner for gpool's subcommands and for script directive
 * lines (#GPOOL, #SBATCH): "-g 2", "-g2", "--gpus 2", "--gpus=2", flags, positionals and
 * "--". Table driven, so the same scanner reads gpool's options and Slurm's spellings of
 * them with different tables (in #SBATCH, -p is a partition; in gpool, a priority). */
#ifndef GP_CLI_OPTS_H
#define GP_CLI_OPTS_H

#include <stdbool.h>

#include "util/error.h"

typedef struct gp_opt {
  char short_name;       /* 0: none */
  const char *long_name; /* NULL: none */
  bool has_arg;
  int id;                /* returned by gp_opt_next; > 0 */
} gp_opt;

typedef struct gp_opt_iter {
  int argc;
  char **argv;
  int i;                 /* next argv index to read */
  bool dashdash;         /* "--" was seen; argv[i..] are the positionals after it */
  const char *where;     /* prefix for messages, e.g. "job.sh:3" or NULL */
} gp_opt_iter;

enum { GP_OPT_END = 0, GP_OPT_POSITIONAL = -1000 };

/* Starts scanning argv[first..argc). */
void gp_opt_init(gp_opt_iter *it, int argc, char **argv, int first);

/* Next item: an option's id (> 0) with its argument in *ret_arg (NULL for flags);
 * GP_OPT_POSITIONAL with the word in *ret_arg; GP_OPT_END at the end or at "--" (then
 * it->dashdash is set and it->i indexes the first word after it); or GP_EINVAL for an
 * unknown option or a missing argument, with a message naming it. `table` ends with an
 * entry whose id is 0. */
int gp_opt_next(gp_opt_iter *it, const gp_opt *table, const char **ret_arg, gp_err *err);

/* Splits a directive line's rest ("--gres=gpu:2 -J 'my job'") into words, honouring
 * single and double quotes and stopping at an unquoted '#'. Words point into `line`,
 * which is modified. Returns the count, or GP_EINVAL (unterminated quote) / GP_ELIMIT
 * (more than max words). */
int gp_opt_split(char *line, char **words, int max);

#endif
