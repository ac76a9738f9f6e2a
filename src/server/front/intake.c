/* SPDX-License-Identifier: Apache-2.0 */
/* Checks a request's target as it came off the wire, before libmicrohttpd decodes it. The
 * decoded path is a C string, so an encoded NUL (%00) would silently cut it short; a query
 * parameter that is too long or one too many would otherwise have to be dropped, and a
 * filter dropped quietly widens the answer. Each refusal names what it refuses. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/front/routes.h"
#include "server/state/server_int.h"

static int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes [s, s+n) (%XX and '+') into out (at most cap-1 bytes, NUL-terminated); returns
 * the decoded length (counted whole even when out is shorter) or -1 for an encoded NUL. */
static long decode(const char *s, size_t n, char *out, size_t cap) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%' && i + 2 < n && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      c = (char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      if (c == '\0') return -1;
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    if (len + 1 < cap) out[len] = c;
    len++;
  }
  if (cap) out[len < cap ? len : cap - 1] = '\0';
  return (long)len;
}

static bool refuse(gp_srv_bad *bad, const char *field, const char *fmt, const char *arg) {
  bad->status = 400;
  snprintf(bad->field, sizeof bad->field, "%s", field);
  snprintf(bad->message, sizeof bad->message, fmt, arg);
  return false;
}

bool gp__srv_intake_target_ok(const char *raw, gp_srv_bad *bad) {
  const char *q = strchr(raw, '?');
  size_t plen = q ? (size_t)(q - raw) : strlen(raw);
  char scratch[GP_SRV_MAX_QUERY_VALUE + 1];
  if (decode(raw, plen, scratch, sizeof scratch) < 0)
    return refuse(bad, "path", "the path contains an encoded NUL byte (%s)", "%00");
  if (!q) return true;
  int count = 0;
  for (const char *p = q + 1; *p;) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len > 0) {
      if (++count > GP_SRV_MAX_QUERY_PARAMS) {
        char n[16];
        snprintf(n, sizeof n, "%d", GP_SRV_MAX_QUERY_PARAMS);
        return refuse(bad, "query", "a request may carry at most %s query parameters", n);
      }
      const char *eq = memchr(p, '=', len);
      size_t klen = eq ? (size_t)(eq - p) : len;
      char key[GP_SRV_MAX_QUERY_KEY + 1];
      long kn = decode(p, klen, key, sizeof key);
      if (kn < 0) return refuse(bad, "query", "a query parameter name contains %s", "an encoded NUL byte (%00)");
      if (kn > GP_SRV_MAX_QUERY_KEY)
        return refuse(bad, "query", "a query parameter name is longer than %s bytes", "64");
      if (eq) {
        long vn = decode(eq + 1, len - klen - 1, scratch, sizeof scratch);
        if (vn < 0) return refuse(bad, key, "the value of %s contains an encoded NUL byte (%%00)", key);
        if (vn > GP_SRV_MAX_QUERY_VALUE)
          return refuse(bad, key, "the value of %s is longer than 4096 bytes", key);
      }
    }
    p = amp ? amp + 1 : p + len;
  }
  return true;
}
