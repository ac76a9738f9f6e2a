/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm's hostlist form ("n[01-04]", "gpu-a[1-2],gpu-b3"): what a job's SLURM_JOB_NODELIST
 * holds and `scontrol show hostnames` expands. Compression keeps the names' order (the
 * first name is task 0's node) and joins a run of names whose numeric suffixes count up by
 * one and print at the same width, as Slurm does for zero-padded suffixes ("n09,n10" ->
 * "n[09-10]", "n9,n10" -> "n[9-10]", but "n9,n010" stay apart). Expansion is bounded: a
 * list naming more than a given number of hosts is refused before any is produced. */
#ifndef GP_UTIL_HOSTLIST_H
#define GP_UTIL_HOSTLIST_H

#include <stddef.h>

#include "util/error.h"

#define GP_HOSTLIST_NAME_MAX 1024 /* bytes of one expanded name, with its NUL */

/* Writes names[0..n-1], in order, in hostlist form to out. 0; -1 when out is too small or
 * a name cannot be written in a hostlist (empty, or holding ',', '[', ']' or a space or
 * control character): then out is "". */
int gp_hostlist_compress(const char *const *names, size_t n, char *out, size_t size);

/* Calls fn(ctx, name) for each name that `list` names, in order, once the whole list is
 * checked and names at most `max` hosts. Brackets hold comma-separated numbers or ranges
 * lo-hi (lo <= hi, at most 18 digits; a range prints at lo's width); a name may have several
 * bracket groups ("r[1-2]-n[1-2]": r1-n1, r1-n2, r2-n1, r2-n2). GP_EINVAL for a malformed
 * list, GP_ELIMIT for one over `max` names; a non-zero return of fn stops and is returned.
 * *ret_count, when not NULL, gets the number of names. */
int gp_hostlist_expand(const char *list, size_t max, int (*fn)(void *ctx, const char *name),
                       void *ctx, size_t *ret_count, gp_err *err);

#endif
