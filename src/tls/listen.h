/* SPDX-License-Identifier: Apache-2.0 */
/* An HTTPS endpoint for libmicrohttpd (GnuTLS): the daemon flags and one MHD_OPTION_ARRAY
 * built from a gp_tls_files, and the check of a caller's client certificate. A listener
 * made from files without a certificate serves plain HTTP: its flags are 0 and its option
 * array is empty, so a daemon passes both unconditionally.
 *
 * libmicrohttpd only asks a caller for a certificate when a client CA is given; it does
 * not refuse a caller that sends none or a bad one. gp_tls_listener_check_client does:
 * routes that need a certificate call it for each request. */
#ifndef GP_TLS_LISTEN_H
#define GP_TLS_LISTEN_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "tls/tls.h"
#include "util/error.h"

typedef struct gp_tls_listener gp_tls_listener;

/* Reads the certificate, key and client CA of `files` (borrowed; NULL: plain HTTP) into a
 * new listener. Errors as gp_tls_pem_read, with fields prefixed by `section` ("tls"), and
 * GP_EUNSUPP when libmicrohttpd was built without TLS. */
int gp_tls_listener_new(const gp_tls_files *files, const char *section, gp_tls_listener **ret,
                        gp_err *err);
void gp_tls_listener_free(gp_tls_listener *l); /* accepts NULL; after MHD_stop_daemon */

/* MHD_USE_TLS when serving HTTPS, else 0. */
unsigned gp_tls_listener_flags(const gp_tls_listener *l);
/* The options for MHD_OPTION_ARRAY (owned by the listener, valid until it is freed). */
struct MHD_OptionItem *gp_tls_listener_options(gp_tls_listener *l);
/* "https" or "http", for the URL a daemon advertises. */
const char *gp_tls_listener_scheme(const gp_tls_listener *l);
/* True when callers of certificate-guarded routes must present a client certificate. */
bool gp_tls_listener_wants_clients(const gp_tls_listener *l);

/* 0 when the caller on `c` presented a certificate that chains to the client CA and is
 * valid now; otherwise GP_EPERM with the reason in why (cap bytes). Always 0 when the
 * listener has no client CA. */
int gp_tls_listener_check_client(const gp_tls_listener *l, struct MHD_Connection *c, char *why,
                                 size_t cap);

#endif
