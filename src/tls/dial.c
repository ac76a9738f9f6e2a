/* SPDX-License-Identifier: Apache-2.0 */
/* The TLS options of a libcurl handle that calls a gpool endpoint (dial.h). */
#include "tls/dial.h"

#include "util/error.h"

static bool set(const char *s) { return s && *s; }

int gp_tls_dial_setup(CURL *h, const gp_tls_dial *d) {
  CURLcode cc = CURLE_OK;
  /* Verify the peer's chain and that its certificate names the host in the URL. */
  if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
  if (!cc) cc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, d && d->https_only ? "https" : "http,https");
  if (!cc && d && set(d->ca)) cc = curl_easy_setopt(h, CURLOPT_CAINFO, d->ca);
  if (!cc && d && set(d->cert) && set(d->key)) {
    cc = curl_easy_setopt(h, CURLOPT_SSLCERT, d->cert);
    if (!cc) cc = curl_easy_setopt(h, CURLOPT_SSLKEY, d->key);
  }
  return cc == CURLE_OK ? 0 : GP_EINVAL;
}

bool gp_tls_dial_failed(CURLcode cc) {
  switch (cc) {
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_CRL_BADFILE:
  case CURLE_SSL_CIPHER:
  case CURLE_USE_SSL_FAILED:
    return true;
  default:
    return false;
  }
}
