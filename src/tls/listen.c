/* SPDX-License-Identifier: Apache-2.0 */
/* An HTTPS endpoint for libmicrohttpd (listen.h). The PEM texts live in the listener
 * because libmicrohttpd keeps pointers to them for as long as the daemon runs. Only TLS 1.2
 * and 1.3 are offered. */
#include "tls/listen.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

#define PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct gp_tls_listener {
  char *cert_pem, *key_pem, *client_ca_pem; /* owned; NULL when not set */
  struct MHD_OptionItem options[5];
};

/* Reads the PEM files into l and lists them as options. */
static int load(gp_tls_listener *l, const gp_tls_files *files, const char *section, gp_err *err) {
  if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
    return gp_err_set(err, GP_EUNSUPP, NULL, 0, section,
                      "this libmicrohttpd was built without TLS; HTTPS cannot be served");
  char field[64];
  int rc, n = 0;
  snprintf(field, sizeof field, "%s.cert", section);
  if ((rc = gp_tls_pem_read(files->cert, false, field, &l->cert_pem, err))) return rc;
  snprintf(field, sizeof field, "%s.key", section);
  if ((rc = gp_tls_pem_read(files->key, true, field, &l->key_pem, err))) return rc;
  if (files->client_ca[0]) {
    snprintf(field, sizeof field, "%s.client_ca", section);
    if ((rc = gp_tls_pem_read(files->client_ca, false, field, &l->client_ca_pem, err))) return rc;
  }
  l->options[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, l->cert_pem};
  l->options[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, l->key_pem};
  l->options[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)PRIORITIES};
  if (l->client_ca_pem)
    l->options[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, l->client_ca_pem};
  l->options[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  return 0;
}

int gp_tls_listener_new(const gp_tls_files *files, const char *section, gp_tls_listener **ret,
                        gp_err *err) {
  gp_tls_listener *l = gp_xcalloc(1, sizeof *l);
  l->options[0] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  if (gp_tls_files_serving(files)) {
    int rc = load(l, files, section, err);
    if (rc) {
      gp_tls_listener_free(l);
      return rc;
    }
  }
  *ret = l;
  return 0;
}

void gp_tls_listener_free(gp_tls_listener *l) {
  if (!l) return;
  free(l->cert_pem);
  if (l->key_pem) { /* a secret: do not leave it in freed memory */
    memset(l->key_pem, 0, strlen(l->key_pem));
    free(l->key_pem);
  }
  free(l->client_ca_pem);
  free(l);
}

unsigned gp_tls_listener_flags(const gp_tls_listener *l) {
  return l && l->cert_pem ? (unsigned)MHD_USE_TLS : 0u;
}

struct MHD_OptionItem *gp_tls_listener_options(gp_tls_listener *l) { return l->options; }

const char *gp_tls_listener_scheme(const gp_tls_listener *l) {
  return l && l->cert_pem ? "https" : "http";
}

bool gp_tls_listener_wants_clients(const gp_tls_listener *l) { return l && l->client_ca_pem; }

int gp_tls_listener_check_client(const gp_tls_listener *l, struct MHD_Connection *c, char *why,
                                 size_t cap) {
  if (!gp_tls_listener_wants_clients(l)) return 0;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
  unsigned n_certs = 0;
  if (!s || gnutls_certificate_type_get(s) != GNUTLS_CRT_X509 ||
      !gnutls_certificate_get_peers(s, &n_certs) || n_certs == 0) {
    snprintf(why, cap, "a client certificate is required");
    return GP_EPERM;
  }
  /* Checks the chain against the trust list libmicrohttpd loaded (the client CA), and the
   * certificates' dates. */
  unsigned status = 0;
  int rc = gnutls_certificate_verify_peers2(s, &status);
  if (rc < 0) {
    snprintf(why, cap, "the client certificate cannot be verified: %s", gnutls_strerror(rc));
    return GP_EPERM;
  }
  if (status) {
    gnutls_datum_t text = {NULL, 0};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0 && text.data)
      snprintf(why, cap, "the client certificate was refused: %s", (const char *)text.data);
    else
      snprintf(why, cap, "the client certificate was refused");
    gnutls_free(text.data);
    return GP_EPERM;
  }
  return 0;
}
