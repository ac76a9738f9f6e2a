/* SPDX-License-Identifier: Apache-2.0 */
/* A job's output file names (-o/--output, --error), in Slurm's filename patterns:
 *   %j job id   %J job id (the batch step)   %x job name   %u user   %N node's short name
 *   %t task index   %n node index (= task index)   %s step ("batch")
 * (a step's files, srun -o: %s and %J name the step, "J.S", and %n the node's index in it)
 *   %A array master id (the job id for a job that is not an array element)
 *   %a array index ("4294967294" for a job that is not an array element, as Slurm)
 *   %%  a percent sign
 * A digit between '%' and the letter zero-pads the value to that width ("%3t" -> 007).
 * The client and the server check a pattern (gp_outpath_check); the agent expands it for
 * each task (gp_outpath_expand), relative to the job's working directory. Shared by all
 * three, so a pattern one accepts the others read alike. */
#ifndef GP_PROTOCOL_OUTPATH_H
#define GP_PROTOCOL_OUTPATH_H

#include <stdbool.h>
#include <stddef.h>

#define GP_OUTPATH_MAX 1024 /* bytes of a pattern, and of an expanded name */

/* What the patterns stand for. Strings are borrowed; NULL reads as "". array_id is the
 * array's master id, NULL for a job that is not an array element. */
typedef struct gp_outpath_vars {
  const char *job_id, *name, *user, *node, *array_id, *array_index;
  int task;
  const char *step;     /* a step's id (srun), NULL: the job's own output ("batch") */
  bool has_node_index;  /* %n: node_index (a step's node), else the task index */
  int node_index;
} gp_outpath_vars;

/* NULL when `pattern` is a usable pattern: 1..GP_OUTPATH_MAX bytes, no control characters,
 * every '%' followed by an optional digit and a known letter; else a sentence saying what is
 * wrong (static storage). */
const char *gp_outpath_check(const char *pattern);

/* Expands a checked pattern into out (size bytes). 0, or -1 when the result does not fit
 * or would be empty. Values are copied with '/' replaced by '_' (a job name never names a
 * directory); the node is its short name (up to the first '.'). */
int gp_outpath_expand(const char *pattern, const gp_outpath_vars *v, char *out, size_t size);

#endif
