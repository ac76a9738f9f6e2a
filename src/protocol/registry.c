/* SPDX-License-Identifier: Apache-2.0 */
/* Registry names and credentials' bounds (registry.h). */
#include "protocol/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gp_proto_registry_check(const char *r) {
  if (!r || !*r) return "a registry is host[:port]: it is empty";
  size_t len = strlen(r);
  if (len > GP_PROTO_REGISTRY_MAX) return "a registry is at most 254 bytes";
  const char *colon = strchr(r, ':');
  size_t host = colon ? (size_t)(colon - r) : len;
  if (host == 0) return "a registry is host[:port]: the host is empty";
  if (r[0] == '-' || r[0] == '.') return "a registry's host starts with a letter or a digit";
  for (size_t i = 0; i < host; i++) {
    char c = r[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '-'))
      return "a registry is host[:port]: its host has letters, digits, '.' and '-' only";
  }
  if (colon) {
    const char *p = colon + 1;
    if (!*p || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p))
      return "a registry's port is 1 to 65535";
    long port = strtol(p, NULL, 10);
    if (port < 1 || port > 65535) return "a registry's port is 1 to 65535";
  }
  return NULL;
}

bool gp_proto_image_registry(const char *image, char *buf, size_t size) {
  const char *slash = strchr(image, '/');
  size_t n = slash ? (size_t)(slash - image) : 0;
  bool host = slash && (memchr(image, '.', n) || memchr(image, ':', n) ||
                        (n == 9 && !strncmp(image, "localhost", 9)));
  int w = host ? snprintf(buf, size, "%.*s", (int)n, image) : snprintf(buf, size, "docker.io");
  return w > 0 && (size_t)w < size;
}

bool gp_proto_registry_auth_valid(const char *a) {
  size_t len = a ? strlen(a) : 0;
  if (len == 0 || len > GP_PROTO_REGISTRY_AUTH_MAX || len % 4) return false;
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t body = strspn(a, b64);
  return body + strspn(a + body, "=") == len && len - body <= 2;
}
