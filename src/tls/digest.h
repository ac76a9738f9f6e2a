/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 through GnuTLS, for the one place gpool keeps a hash instead of a secret: the
 * server stores the hash of each node's agent credential, never the credential itself. */
#ifndef GP_TLS_DIGEST_H
#define GP_TLS_DIGEST_H

#include <stddef.h>

#define GP_TLS_SHA256_HEX_MAX 65 /* 64 hex digits and the NUL */

/* The SHA-256 of `len` bytes at `data` as lowercase hex into out. Returns 0, or -1 when
 * GnuTLS cannot hash (out is then ""). */
int gp_tls_sha256_hex(const void *data, size_t len, char out[GP_TLS_SHA256_HEX_MAX]);

#endif
