/* SPDX-License-Identifier: Apache-2.0 */
/* The TLS side of a libcurl handle that calls a gpool endpoint: peer and host-name
 * verification always on (there is no switch to turn them off), the CA that verifies the
 * peer (else the system's store), and an optional client certificate. Shared by the CLI's
 * client, the agent's calls to the server and the server's calls to agents, so the three
 * verify alike. */
#ifndef GP_TLS_DIAL_H
#define GP_TLS_DIAL_H

#include <curl/curl.h>
#include <stdbool.h>

/* Paths, borrowed for the life of the handle; NULL or "" where not set. */
typedef struct gp_tls_dial {
  const char *ca;   /* CA file that verifies the peer; NULL: the system's CA store */
  const char *cert; /* client certificate to present, with its key */
  const char *key;
  bool https_only;  /* refuse plain http:// URLs (a daemon told to verify its peer) */
} gp_tls_dial;

/* Sets the TLS options of `h` (after curl_easy_reset, if any). `d` may be NULL: defaults,
 * still verifying. Returns 0, or GP_EINVAL when libcurl refuses an option. */
int gp_tls_dial_setup(CURL *h, const gp_tls_dial *d);

/* True for libcurl results that mean the peer could not be verified or the TLS handshake
 * failed, so callers can say which file to give. */
bool gp_tls_dial_failed(CURLcode cc);

#endif
