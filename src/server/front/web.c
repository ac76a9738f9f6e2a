/* SPDX-License-Identifier: Apache-2.0 */
/* Serves the web console's files (web.h) from the HTTP threads, without the state thread
 * and without a token. The files are fixed at build time, so a name is looked up in the
 * generated table and nothing is ever read from disk: a path that climbs out of web/ cannot
 * reach a file, and is refused by name besides so a probe reads as what it is.
 *
 * Caching: the names are not content-hashed, so every answer says `no-cache` (revalidate
 * before use) and carries a strong ETag; a revalidation costs a 304 without a body, and a
 * new server's console is picked up on the next load. The gzip copy is its own
 * representation, so its ETag differs from the plain one's (`"<hash>-gz"`). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/front/web.h"

/* Only the server's own files, no inline script or style, never framed; blob: images and
 * links because a report's CSV download is a Blob URL. */
#define CSP "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " \
            "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "      \
            "frame-ancestors 'none'"

static const struct {
  const char *ext;
  const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
};

static const char *type_of(const char *name) {
  const char *dot = strrchr(name, '.');
  if (dot)
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
      if (strcmp(dot, types[i].ext) == 0) return types[i].type;
  return "application/octet-stream";
}

bool gp__srv_web_owns(const char *path) {
  return strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0 || strcmp(path, "/ui/") == 0 ||
         strcmp(path, "/web") == 0 || strncmp(path, "/web/", 5) == 0;
}

const gp__srv_web_file *gp__srv_web_find(const char *name) {
  for (size_t i = 0; i < gp__srv_web_n_files; i++)
    if (strcmp(gp__srv_web_files[i].name, name) == 0) return &gp__srv_web_files[i];
  return NULL;
}

/* Whether a name under /web/ climbs or hides: an empty, `.` or `..` segment, or a
 * backslash (which some clients treat as a separator). The path is already decoded, so an
 * encoded `%2e%2e` or `%2f` is caught here too. */
static bool name_climbs(const char *name) {
  if (strchr(name, '\\')) return true;
  for (const char *seg = name;;) {
    const char *end = strchr(seg, '/');
    size_t n = end ? (size_t)(end - seg) : strlen(seg);
    if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.')) return true;
    if (!end) return false;
    seg = end + 1;
  }
}

/* Whether an Accept-Encoding value lets the answer be gzip: a `gzip` (or `x-gzip`) coding
 * whose q is not zero. `*` is not taken as gzip: a client that names no coding gets bytes
 * it surely reads. */
static bool accepts_gzip(const char *ae) {
  if (!ae) return false;
  for (const char *p = ae; *p;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    while (n && (*p == ' ' || *p == '\t')) p++, n--;
    const char *semi = memchr(p, ';', n);
    size_t name_len = semi ? (size_t)(semi - p) : n;
    while (name_len && (p[name_len - 1] == ' ' || p[name_len - 1] == '\t')) name_len--;
    bool is_gzip = (name_len == 4 && strncasecmp(p, "gzip", 4) == 0) ||
                   (name_len == 6 && strncasecmp(p, "x-gzip", 6) == 0);
    if (is_gzip) {
      const char *q = semi ? semi + 1 : NULL;
      while (q && q < p + n && (*q == ' ' || *q == '\t')) q++;
      if (!q || q + 2 > p + n || strncasecmp(q, "q=", 2) != 0) return true;
      /* q=0, q=0.0, q=0.00, q=0.000 refuse it; any other digit accepts it. */
      for (const char *d = q + 2; d < p + n && *d != ' ' && *d != '\t'; d++)
        if (*d >= '1' && *d <= '9') return true;
      return false;
    }
    if (!end) break;
    p = end + 1;
  }
  return false;
}

/* Whether an If-None-Match value names `etag` (quoted), by the weak comparison RFC 9110
 * asks for this header: a W/ prefix is ignored; `*` matches any. */
static bool etag_matches(const char *inm, const char *etag) {
  if (!inm) return false;
  size_t elen = strlen(etag);
  for (const char *p = inm; *p;) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    if (!*p) break;
    if (*p == '*') return true;
    if (strncmp(p, "W/", 2) == 0) p += 2;
    if (strncmp(p, etag, elen) == 0 && (p[elen] == '\0' || p[elen] == ',' || p[elen] == ' ' || p[elen] == '\t'))
      return true;
    const char *comma = strchr(p, ',');
    if (!comma) break;
    p = comma + 1;
  }
  return false;
}

static void add_security_headers(struct MHD_Response *resp) {
  MHD_add_response_header(resp, "Content-Security-Policy", CSP);
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(resp, "X-Frame-Options", "DENY");
  MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, struct MHD_Response *resp) {
  add_security_headers(resp);
  enum MHD_Result ret = MHD_queue_response(c, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

/* The API's error document, so a script reads a refusal the same way wherever it comes from. */
static enum MHD_Result answer_error(struct MHD_Connection *c, unsigned status, const char *code,
                                    const char *field, const char *msg) {
  char body[400];
  snprintf(body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"field\":%s%s%s}}", code,
           msg, field ? "\"" : "", field ? field : "null", field ? "\"" : "");
  struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(resp, "Content-Type", "application/json");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  if (status == 405) MHD_add_response_header(resp, "Allow", "GET, HEAD");
  return answer(c, status, resp);
}

enum MHD_Result gp__srv_web_serve(struct MHD_Connection *c, const char *path, const char *method) {
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return answer_error(c, 405, "method_not_allowed", NULL, "the console's files are read with GET or HEAD");
  if (strcmp(path, "/ui") == 0 || strcmp(path, "/ui/") == 0 || strcmp(path, "/web") == 0) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(resp, "Location", "/");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    return answer(c, 308, resp);
  }
  const char *name = strcmp(path, "/") == 0 ? "index.html" : path + 5;
  if (name_climbs(name))
    return answer_error(c, 400, "invalid_argument", "path",
                        "a console path may not hold empty, '.' or '..' segments or backslashes");
  const gp__srv_web_file *f = gp__srv_web_find(name);
  if (!f) return answer_error(c, 404, "not_found", "path", "no such file in the console");
  bool gz = accepts_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding"));
  char etag[48];
  snprintf(etag, sizeof etag, "\"%s%s\"", f->hash, gz ? "-gz" : "");
  bool fresh = etag_matches(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match"), etag);
  struct MHD_Response *resp =
      fresh ? MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT)
            : MHD_create_response_from_buffer(gz ? f->gz_len : f->len, (void *)(gz ? f->gz : f->data),
                                              MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(resp, "ETag", etag);
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  MHD_add_response_header(resp, "Vary", "Accept-Encoding");
  if (!fresh) {
    MHD_add_response_header(resp, "Content-Type", type_of(f->name));
    if (gz) MHD_add_response_header(resp, "Content-Encoding", "gzip");
  }
  return answer(c, fresh ? 304 : 200, resp);
}
