/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and checking the TLS files a config names (tls.h). The files are untrusted input
 * like the config itself: opened without blocking on a FIFO (O_NONBLOCK), required to be
 * regular files, bounded, and checked for a PEM block. */
#include "tls/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/mem.h"

bool gp_tls_files_serving(const gp_tls_files *f) { return f && f->cert[0] && f->key[0]; }

int gp_tls_pem_read(const char *path, bool secret, const char *field, char **ret_pem,
                    gp_err *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return gp_err_set(err, GP_EIO, path, 0, field, "cannot open %s: %s", path, strerror(errno));
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = gp_err_set(err, GP_EINVAL, path, 0, field, "%s is not a regular file", path);
  } else if (secret && (st.st_mode & 077)) {
    rc = gp_err_set(err, GP_EPERM, path, 0, field,
                    "the private key %s is readable by group or others (mode %04o); "
                    "run chmod 600 on it", path, (unsigned)(st.st_mode & 07777));
  } else if ((size_t)st.st_size > GP_TLS_PEM_MAX) {
    rc = gp_err_set(err, GP_ELIMIT, path, 0, field, "%s is larger than %zu bytes", path,
                    GP_TLS_PEM_MAX);
  }
  if (rc) {
    close(fd);
    return rc;
  }
  char *text = gp_xmalloc(GP_TLS_PEM_MAX + 1);
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, text + len, GP_TLS_PEM_MAX + 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = gp_err_set(err, GP_EIO, path, 0, field, "cannot read %s: %s", path, strerror(errno));
      break;
    }
    if (n == 0) break;
    len += (size_t)n;
    if (len > GP_TLS_PEM_MAX) {
      rc = gp_err_set(err, GP_ELIMIT, path, 0, field, "%s is larger than %zu bytes", path,
                      GP_TLS_PEM_MAX);
      break;
    }
  }
  close(fd);
  if (!rc) {
    text[len] = '\0';
    /* GnuTLS would take a NUL inside as the end and read a different file than we checked. */
    if (strlen(text) != len || !strstr(text, "-----BEGIN "))
      rc = gp_err_set(err, GP_EINVAL, path, 0, field, "%s is not a PEM file (no -----BEGIN line)",
                      path);
  }
  if (rc) {
    free(text);
    return rc;
  }
  *ret_pem = text;
  return 0;
}

/* Reads one path key of the tls map into dst, relative to the config's directory. */
static int read_path(const gp_doc *d, const gp_doc_node *map, const char *config_path,
                     const char *key, char *dst, gp_err *err) {
  const gp_doc_node *n = gp_doc_get(map, key);
  if (!n) return 0;
  char field[64];
  snprintf(field, sizeof field, "tls.%s", key);
  const char *v = NULL;
  int rc = gp_doc_str(d, n, field, &v, err);
  if (rc) return rc;
  if (!*v) return gp_err_set(err, GP_EINVAL, d->name, n->line, field, "must be a file path");
  const char *slash = config_path ? strrchr(config_path, '/') : NULL;
  int len = v[0] != '/' && slash
                ? snprintf(dst, GP_TLS_PATH_MAX, "%.*s/%s", (int)(slash - config_path), config_path, v)
                : snprintf(dst, GP_TLS_PATH_MAX, "%s", v);
  if (len < 0 || len >= GP_TLS_PATH_MAX)
    return gp_err_set(err, GP_ELIMIT, d->name, n->line, field, "the path is longer than %d bytes",
                      GP_TLS_PATH_MAX - 1);
  char *pem = NULL;
  if ((rc = gp_tls_pem_read(dst, strcmp(key, "key") == 0, field, &pem, err))) {
    /* Point at the config line that names the file; the message names the file. */
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "%s", err ? err->message : "");
    return gp_err_set(err, rc, d->name, n->line, field, "%s", msg);
  }
  free(pem);
  return 0;
}

int gp_tls_files_read(const gp_doc *d, const gp_doc_node *n, const char *config_path,
                      const char *peer_ca_key, gp_tls_files *ret, gp_err *err) {
  const char *const keys[] = {"cert", "key", "client_ca", peer_ca_key, NULL};
  int rc = gp_doc_expect(d, n, "tls", GP_DOC_MAP, err);
  if (rc || (rc = gp_doc_check_keys(d, n, "tls", keys, err))) return rc;
  gp_tls_files f;
  memset(&f, 0, sizeof f);
  if ((rc = read_path(d, n, config_path, "cert", f.cert, err)) ||
      (rc = read_path(d, n, config_path, "key", f.key, err)) ||
      (rc = read_path(d, n, config_path, "client_ca", f.client_ca, err)) ||
      (rc = read_path(d, n, config_path, peer_ca_key, f.peer_ca, err)))
    return rc;
  if (!f.cert[0] != !f.key[0])
    return gp_err_set(err, GP_EINVAL, d->name, n->line, f.cert[0] ? "tls.key" : "tls.cert",
                      "tls.cert and tls.key go together: the certificate and its private key");
  if (f.client_ca[0] && !f.cert[0])
    return gp_err_set(err, GP_EINVAL, d->name, n->line, "tls.client_ca",
                      "client certificates are checked over HTTPS only: set tls.cert and tls.key");
  *ret = f;
  return 0;
}
