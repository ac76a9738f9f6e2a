/* SPDX-License-Identifier: Apache-2.0 */
/* Comparing secrets (tokens, node credentials and their hashes, checkpoint keys) without
 * telling an attacker, through the time taken, how much of a guess was right. */
#ifndef GP_UTIL_SECRET_H
#define GP_UTIL_SECRET_H

#include <stdbool.h>

/* Whether `given` equals `want`, comparing every byte of `want` whatever the first
 * difference: the time depends on want's length only. */
bool gp_secret_equal(const char *given, const char *want);

#endif
