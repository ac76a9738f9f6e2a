/* SPDX-License-Identifier: Apache-2.0 */
/* Who else may touch the files that configure gpool or hold its secrets. A config file
 * another local user can write lets that user point gpool at another server, add tokens
 * or change what runs; a secret (a token file, client.json) another user can read is that
 * user's token too. gpool refuses both before it reads the file, naming the file, its mode
 * and the fix, as ssh does with private keys. The rules are in docs/config.md ("File modes"). */
#ifndef GP_UTIL_FILEPERM_H
#define GP_UTIL_FILEPERM_H

#include <stdbool.h>

#include "util/error.h"

typedef enum gp_fileperm_kind {
  GP_FILEPERM_CONFIG, /* refused when anyone but its owner and group may write it */
  GP_FILEPERM_SECRET, /* refused when anyone but its owner may read or write it */
} gp_fileperm_kind;

/* Checks `path` (following symlinks, as the reader will) for `kind`. Returns 0 when it
 * is safe to read or does not exist (the reader then reports that), else GP_EPERM with
 * "<path>: mode 0644 lets other users read it (it holds tokens); chmod 600 <path>" in
 * *err, whose `field` is `field` (may be NULL). */
int gp_fileperm_check(const char *path, gp_fileperm_kind kind, const char *field, gp_err *err);

/* True when users other than the owner may read or enter `path` (a directory): worth a
 * warning for a data directory that holds secrets. */
bool gp_fileperm_open_to_others(const char *path);

#endif
