/* SPDX-License-Identifier: Apache-2.0 */
/* Server URL lists and redirects to the leader (urls.h). */
#include "util/urls.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* Length of the scheme prefix ("http://" 7, "https://" 8), or 0. */
static size_t scheme_len(const char *s) {
  if (strncmp(s, "http://", 7) == 0) return 7;
  if (strncmp(s, "https://", 8) == 0) return 8;
  return 0;
}

/* host[:port] characters: letters, digits, '.', '-', ':' and '[' ']' for IPv6. */
static bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == ':' || c == '[' || c == ']' || c == '_';
}

/* Copies the base URL at s (len bytes, maybe followed by a path when allow_path) into out.
 * Returns 0 or GP_EINVAL with a reason in *why. */
static int take_base(const char *s, size_t len, bool allow_path, char *out, size_t cap, const char **why) {
  size_t sl = scheme_len(s);
  if (!sl || sl > len) return *why = "must start with http:// or https://", GP_EINVAL;
  size_t i = sl;
  while (i < len && host_char(s[i])) i++;
  if (i == sl) return *why = "has no host", GP_EINVAL;
  size_t base_len = i;
  if (i < len && !(allow_path ? (s[i] == '/' || s[i] == '?') : (s[i] == '/' && i + 1 == len)))
    return *why = allow_path ? "has a character not allowed in a host" : "must be scheme://host[:port] without a path", GP_EINVAL;
  if (base_len + 1 > cap) return *why = "is too long", GP_EINVAL;
  memcpy(out, s, base_len);
  out[base_len] = '\0';
  return 0;
}

int gp_urls_parse(const char *text, const char *field, gp_urls *ret, gp_err *err) {
  memset(ret, 0, sizeof *ret);
  const char *p = text ? text : "";
  for (;;) {
    while (*p == ' ') p++;
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    while (len > 0 && p[len - 1] == ' ') len--;
    if (len == 0) return gp_err_set(err, GP_EINVAL, NULL, 0, field, "an empty server URL in '%.200s'", text ? text : "");
    if (ret->n == GP_URLS_MAX)
      return gp_err_set(err, GP_EINVAL, NULL, 0, field, "at most %d server URLs", GP_URLS_MAX);
    const char *why = NULL;
    if (take_base(p, len, false, ret->url[ret->n], GP_URL_MAX, &why))
      return gp_err_set(err, GP_EINVAL, NULL, 0, field, "server URL '%.*s' %s", (int)(len > 200 ? 200 : len), p, why);
    ret->n++;
    if (!end) return 0;
    p = end + 1;
  }
}

int gp_urls_redirect_base(const char *from, const char *location, char *out, size_t cap) {
  const char *why = NULL;
  if (!location || take_base(location, strlen(location), true, out, cap, &why)) return GP_EINVAL;
  if (scheme_len(from) == 8 && scheme_len(out) == 7) return GP_EINVAL;
  return 0;
}

int gp_urls_find(const gp_urls *u, const char *base) {
  /* Scheme and host are case-insensitive (RFC 3986); a base URL has no path. */
  for (int i = 0; i < u->n; i++)
    if (strcasecmp(u->url[i], base) == 0) return i;
  return -1;
}
