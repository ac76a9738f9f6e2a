/* SPDX-License-Identifier: Apache-2.0 */
/* SHA-256 as hex, computed by GnuTLS (see digest.h). */
#include "tls/digest.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>

int gp_tls_sha256_hex(const void *data, size_t len, char out[GP_TLS_SHA256_HEX_MAX]) {
  unsigned char d[32];
  out[0] = '\0';
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, d) != 0) return -1;
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
  return 0;
}
