/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 (FIPS 180-4), for the one place gpool keeps a hash instead of a secret: the
 * server stores the hash of each node's agent credential, never the credential itself. */
#ifndef GP_UTIL_SHA256_H
#define GP_UTIL_SHA256_H

#include <stdbool.h>
#include <stddef.h>

#define GP_SHA256_HEX_MAX 65 /* 64 hex digits and the NUL */

/* The digest of `len` bytes at `data` as lowercase hex into out. */
void gp_sha256_hex(const void *data, size_t len, char out[GP_SHA256_HEX_MAX]);

/* Compares two strings in time that depends on their lengths only, not on where they
 * differ (for secrets and their hashes). */
bool gp_secret_equal(const char *a, const char *b);

#endif
