/* SPDX-License-Identifier: Apache-2.0 */
/* The client side of a WebSocket handshake (ws.h, gp_tls_ws_dial): libcurl in Debian 12
 * has no stable WebSocket client, so the connection is a socket of its own, through GnuTLS
 * for https:// with the same verification as every other gpool call (tls/dial.h): the
 * peer's chain and host name always checked. The answer's headers are bounded
 * (HEAD_MAX), so a hostile endpoint cannot grow the caller's memory before the upgrade. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "tls/ws.h"
#include "util/units.h"

#define HEAD_MAX 8192

typedef struct url_parts {
  bool https;
  char host[256];
  char port[8];
  char prefix[512];
} url_parts;

static int parse_url(const char *base, url_parts *u, gp_err *err) {
  memset(u, 0, sizeof *u);
  const char *p;
  if (strncmp(base, "http://", 7) == 0) p = base + 7;
  else if (strncmp(base, "https://", 8) == 0) p = base + 8, u->https = true;
  else return gp_err_set(err, GP_EINVAL, NULL, 0, "url", "\"%.200s\" is not an http:// or https:// URL", base);
  const char *slash = strchr(p, '/');
  size_t hl = slash ? (size_t)(slash - p) : strlen(p);
  const char *colon = memchr(p, ':', hl);
  size_t nl = colon ? (size_t)(colon - p) : hl;
  if (!nl || nl >= sizeof u->host) return gp_err_set(err, GP_EINVAL, NULL, 0, "url", "\"%.200s\" has no host", base);
  memcpy(u->host, p, nl);
  if (colon) {
    size_t pl = hl - nl - 1;
    int64_t port = 0;
    char tmp[8];
    if (!pl || pl >= sizeof tmp) return gp_err_set(err, GP_EINVAL, NULL, 0, "url", "\"%.200s\" has a bad port", base);
    memcpy(tmp, colon + 1, pl);
    tmp[pl] = '\0';
    if (gp_parse_int64(tmp, &port) || port < 1 || port > 65535)
      return gp_err_set(err, GP_EINVAL, NULL, 0, "url", "\"%.200s\" has a bad port", base);
    snprintf(u->port, sizeof u->port, "%d", (int)port);
  } else snprintf(u->port, sizeof u->port, "%s", u->https ? "443" : "80");
  if (slash) snprintf(u->prefix, sizeof u->prefix, "%s", slash);
  size_t pl = strlen(u->prefix);
  if (pl && u->prefix[pl - 1] == '/') u->prefix[pl - 1] = '\0';
  return 0;
}

static int connect_to(const url_parts *u, int timeout_ms, gp_err *err) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(u->host, u->port, &hints, &res);
  if (rc) {
    gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot resolve %s: %s", u->host, gai_strerror(rc));
    return -1;
  }
  int fd = -1, last = 0;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = errno;
      close(fd);
      fd = -1;
      continue;
    }
    struct pollfd pf = {.fd = fd, .events = POLLOUT};
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (poll(&pf, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
      last = soerr ? soerr : ETIMEDOUT;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot connect to %s:%s: %s", u->host, u->port, strerror(last));
    return -1;
  }
  /* Keystrokes are small writes: no Nagle delay on them. */
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

static int tls_start(int fd, const url_parts *u, const gp_tls_dial *d, int timeout_ms, gnutls_session_t *ret,
                     gnutls_certificate_credentials_t *ret_cred, gp_err *err) {
  gnutls_certificate_credentials_t cred = NULL;
  gnutls_session_t s = NULL;
  int rc = gnutls_certificate_allocate_credentials(&cred);
  if (!rc) {
    if (d && d->ca && *d->ca) rc = gnutls_certificate_set_x509_trust_file(cred, d->ca, GNUTLS_X509_FMT_PEM) < 0 ? -1 : 0;
    else rc = gnutls_certificate_set_x509_system_trust(cred) < 0 ? -1 : 0;
    if (rc) gp_err_set(err, GP_EIO, NULL, 0, "tls.ca", "cannot read the CA %s", d && d->ca ? d->ca : "(system store)");
  }
  if (!rc && d && d->cert && *d->cert && d->key && *d->key &&
      gnutls_certificate_set_x509_key_file(cred, d->cert, d->key, GNUTLS_X509_FMT_PEM) < 0)
    rc = gp_err_set(err, GP_EIO, NULL, 0, "tls.cert", "cannot read the certificate %s or its key", d->cert);
  if (!rc && (gnutls_init(&s, GNUTLS_CLIENT) < 0 || gnutls_set_default_priority(s) < 0 ||
              gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred) < 0))
    rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot set up a TLS session");
  if (!rc) {
    struct in6_addr a6;
    struct in_addr a4;
    if (inet_pton(AF_INET, u->host, &a4) != 1 && inet_pton(AF_INET6, u->host, &a6) != 1)
      gnutls_server_name_set(s, GNUTLS_NAME_DNS, u->host, strlen(u->host));
    gnutls_session_set_verify_cert(s, u->host, 0); /* the chain and the host name */
    gnutls_transport_set_int(s, fd);
    gnutls_handshake_set_timeout(s, (unsigned)timeout_ms);
    int h;
    do h = gnutls_handshake(s);
    while (h < 0 && !gnutls_error_is_fatal(h));
    if (h < 0) rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "TLS handshake with %s failed: %s", u->host, gnutls_strerror(h));
  }
  if (rc) {
    if (s) gnutls_deinit(s);
    if (cred) gnutls_certificate_free_credentials(cred);
    return rc;
  }
  *ret = s;
  *ret_cred = cred;
  return 0;
}

static long io_send(int fd, gnutls_session_t s, const char *p, size_t n) {
  size_t off = 0;
  while (off < n) {
    long k = s ? (long)gnutls_record_send(s, p + off, n - off) : (long)send(fd, p + off, n - off, MSG_NOSIGNAL);
    if (k < 0 && (s ? (k == GNUTLS_E_AGAIN || k == GNUTLS_E_INTERRUPTED) : errno == EINTR)) continue;
    if (k <= 0) return -1;
    off += (size_t)k;
  }
  return (long)n;
}

static long io_recv(int fd, gnutls_session_t s, char *p, size_t n) {
  for (;;) {
    long k = s ? (long)gnutls_record_recv(s, p, n) : (long)recv(fd, p, n, 0);
    if (k < 0 && (s ? k == GNUTLS_E_INTERRUPTED : errno == EINTR)) continue;
    return k;
  }
}

/* The value of header `name` in the head (NUL-ended) into out, or false. */
static bool header(const char *head, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
    const char *h = l + 2;
    if (strncasecmp(h, name, nl) != 0 || h[nl] != ':') continue;
    h += nl + 1;
    while (*h == ' ' || *h == '\t') h++;
    const char *e = strstr(h, "\r\n");
    size_t vl = e ? (size_t)(e - h) : strlen(h);
    while (vl && (h[vl - 1] == ' ' || h[vl - 1] == '\t')) vl--;
    snprintf(out, cap, "%.*s", (int)vl, h);
    return true;
  }
  return false;
}

int gp_tls_ws_dial(const char *base, const char *path, const char *bearer, const gp_tls_dial *tls,
                   int timeout_ms, gp_tls_ws **ret, gp_tls_ws_refusal *refused, gp_err *err) {
  url_parts u;
  int rc = parse_url(base, &u, err);
  if (rc) return rc;
  if (!u.https && tls && tls->https_only)
    return gp_err_set(err, GP_EINVAL, NULL, 0, "url", "\"%.200s\" is plain http, and this endpoint must be verified", base);
  if (bearer && strpbrk(bearer, "\r\n")) return gp_err_set(err, GP_EINVAL, NULL, 0, "token", "the token holds a line break");
  if (strpbrk(path, "\r\n ")) return gp_err_set(err, GP_EINVAL, NULL, 0, "path", "the path holds a space or a line break");
  int fd = connect_to(&u, timeout_ms, err);
  if (fd < 0) return GP_EIO;
  gnutls_session_t s = NULL;
  gnutls_certificate_credentials_t cred = NULL;
  if (u.https && (rc = tls_start(fd, &u, tls, timeout_ms, &s, &cred, err))) {
    close(fd);
    return rc;
  }
  char key[GP_TLS_WS_KEY_LEN + 1], want[GP_TLS_WS_ACCEPT_LEN + 1];
  gp_tls_ws_new_key(key);
  gp_tls_ws_accept_key(key, want);
  size_t bl = bearer ? strlen(bearer) : 0;
  size_t cap = strlen(path) + strlen(u.prefix) + strlen(u.host) + bl + 400;
  char *req = malloc(cap);
  char *head = malloc(HEAD_MAX + 1);
  int n = snprintf(req, cap,
                   "GET %s%s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                   u.prefix, path, u.host, u.port, key, bearer ? "Authorization: Bearer " : "",
                   bearer ? bearer : "", bearer ? "\r\n" : "");
  size_t hl = 0;
  const char *end = NULL;
  if (io_send(fd, s, req, (size_t)n) < 0) rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "cannot send the upgrade to %s", u.host);
  while (!rc && !end) {
    if (hl == HEAD_MAX) {
      rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "the answer's headers from %s pass 8 KiB", u.host);
      break;
    }
    long k = io_recv(fd, s, head + hl, HEAD_MAX - hl);
    if (k <= 0) {
      rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s closed the connection or did not answer the upgrade in time", u.host);
      break;
    }
    hl += (size_t)k;
    head[hl] = '\0';
    end = strstr(head, "\r\n\r\n");
  }
  free(req);
  int status = 0;
  if (!rc && (sscanf(head, "HTTP/1.%*1[01] %3d", &status) != 1 || status < 100 || status > 599))
    rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s did not answer with HTTP", u.host);
  size_t body_at = end ? (size_t)(end - head) + 4 : hl;
  char v[128];
  if (!rc && status != 101) {
    /* A refusal (403, 404, 429, 503): its JSON body says why. */
    refused->status = status;
    size_t want_len = sizeof refused->body - 1, got = hl - body_at;
    if (header(head, "Content-Length", v, sizeof v)) {
      int64_t cl = 0;
      if (!gp_parse_int64(v, &cl) && cl >= 0 && (uint64_t)cl < want_len) want_len = (size_t)cl;
    }
    if (got > want_len) got = want_len;
    memcpy(refused->body, head + body_at, got);
    while (got < want_len) {
      long k = io_recv(fd, s, refused->body + got, want_len - got);
      if (k <= 0) break;
      got += (size_t)k;
    }
    refused->body[got] = '\0';
    rc = GP_EPERM;
    gp_err_set(err, rc, NULL, 0, NULL, "%s answered %d", u.host, status);
  }
  if (!rc && (!header(head, "Upgrade", v, sizeof v) || strcasecmp(v, "websocket") != 0))
    rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s answered 101 without Upgrade: websocket", u.host);
  if (!rc && (!header(head, "Sec-WebSocket-Accept", v, sizeof v) || strcmp(v, want) != 0))
    rc = gp_err_set(err, GP_EIO, NULL, 0, NULL, "%s answered with a wrong Sec-WebSocket-Accept", u.host);
  if (rc) {
    free(head);
    if (s) gnutls_deinit(s);
    if (cred) gnutls_certificate_free_credentials(cred);
    close(fd);
    return rc;
  }
  struct timeval tv = {0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  gp_tls_ws *w = gp_tls_ws_new(fd, s, true, 256 * 1024);
  gp_tls_ws_own_cred(w, cred);
  gp_tls_ws_preload(w, head + body_at, hl - body_at);
  free(head);
  *ret = w;
  return 0;
}
