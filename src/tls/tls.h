/* SPDX-License-Identifier: Apache-2.0 */
/* The TLS files of a gpool daemon or client, as configs name them, and the one reader that
 * checks them: a PEM file is bounded in size, must hold a PEM block, and a private key must
 * be readable by its owner only (a key others can read is no secret). The server and the
 * agent read the same `tls:` map, so a key means the same thing in both configs; listen.h
 * turns these files into an HTTPS endpoint, dial.h into a verifying libcurl handle. */
#ifndef GP_TLS_TLS_H
#define GP_TLS_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/doc.h"
#include "util/error.h"

#define GP_TLS_PEM_MAX ((size_t)1 << 20)
#define GP_TLS_PATH_MAX 512

/* Paths (empty: not set). `cert` and `key` come together. */
typedef struct gp_tls_files {
  char cert[GP_TLS_PATH_MAX];      /* own certificate chain: served over HTTPS, and presented
                                    * as the client certificate when this daemon calls out */
  char key[GP_TLS_PATH_MAX];       /* its private key, mode 0600 or stricter */
  char client_ca[GP_TLS_PATH_MAX]; /* callers must present a certificate from this CA */
  char peer_ca[GP_TLS_PATH_MAX];   /* CA that verifies the daemon this one calls */
} gp_tls_files;

/* True when the files make this endpoint serve HTTPS. */
bool gp_tls_files_serving(const gp_tls_files *f);

/* Reads the `tls:` map `n` of document `d` into *ret: keys cert, key, client_ca and
 * `peer_ca_key` (the name the peer's CA has in this config: agent_ca in the server's,
 * server_ca in the agent's). Relative paths are taken from the directory of `config_path`
 * (NULL or no slash: as given). Every file is read and checked now (gp_tls_pem_read), so a
 * daemon refuses to start on a missing, unreadable or exposed file. Errors (GP_EINVAL,
 * GP_EIO, GP_EPERM, GP_ELIMIT) name the config file, line and key (tls.key) and, in the
 * message, the file. *ret is untouched on failure. */
int gp_tls_files_read(const gp_doc *d, const gp_doc_node *n, const char *config_path,
                      const char *peer_ca_key, gp_tls_files *ret, gp_err *err);

/* Reads the PEM file `path` into a malloc'd NUL-terminated string *ret_pem (the caller
 * frees it). `secret` demands mode 0600 or stricter (no group or other bits). `field` names
 * the config key in errors. Errors: GP_EIO (cannot read), GP_ELIMIT (over GP_TLS_PEM_MAX),
 * GP_EINVAL (no PEM block), GP_EPERM (a secret readable by group or others). */
int gp_tls_pem_read(const char *path, bool secret, const char *field, char **ret_pem,
                    gp_err *err);

#endif
