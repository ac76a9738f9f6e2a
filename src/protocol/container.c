/* SPDX-License-Identifier: Apache-2.0 */
/* A job's container spec (container.h): checks, encoding and decoding, shared by the
 * server (submission, start orders) and the agent (start orders). */
#include "protocol/container.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static int bad(gp_err *err, const char *ctx, const char *key, const char *fmt, const char *v) {
  char field[96], msg[400];
  snprintf(field, sizeof field, "%s%s%s", ctx ? ctx : "", ctx && *ctx ? "." : "", key);
  snprintf(msg, sizeof msg, fmt, v ? v : "");
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s", msg);
}

const char *gp_proto_image_check(const char *ref) {
  if (!ref || !*ref) return "the image reference is empty";
  size_t n = strlen(ref);
  if (n >= GP_PROTO_IMAGE_MAX) return "the image reference is longer than 255 bytes";
  /* The grammar of references: lower-case names, '/', '.', '-', '_', a ":tag" and an
   * "@sha256:..." digest. An engine option ('-') or a transport ("docker://") is not one. */
  if (!((ref[0] >= 'a' && ref[0] <= 'z') || (ref[0] >= '0' && ref[0] <= '9') ||
        (ref[0] >= 'A' && ref[0] <= 'Z')))
    return "an image reference starts with a letter or a digit";
  if (strstr(ref, "://")) return "an image reference names no transport (no \"docker://\")";
  for (const char *p = ref; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '-' || c == '_' || c == '/' || c == ':' || c == '@'))
      return "an image reference has only letters, digits and . - _ / : @";
  }
  return NULL;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

bool gp_proto_image_full(const char *ref, char *buf, size_t size) {
  const char *slash = strchr(ref, '/');
  size_t first = slash ? (size_t)(slash - ref) : 0;
  /* A first component with '.' or ':', or "localhost", is a registry; else Docker Hub's. */
  bool domain = slash && (memchr(ref, '.', first) || memchr(ref, ':', first) ||
                          (first == 9 && strncmp(ref, "localhost", 9) == 0));
  const char *prefix = "", *rest = ref;
  if (!domain) {
    prefix = slash ? "docker.io/" : "docker.io/library/";
  } else if (first == 9 && strncmp(ref, "docker.io", 9) == 0 && !strchr(slash + 1, '/')) {
    prefix = "docker.io/library/"; /* "docker.io/busybox" is an official image too */
    rest = slash + 1;
  }
  const char *last = strrchr(ref, '/');
  const char *name = last ? last + 1 : ref;
  const char *tag = !strchr(ref, '@') && !strchr(name, ':') ? ":latest" : "";
  int n = snprintf(buf, size, "%s%s%s", prefix, rest, tag);
  return n >= 0 && (size_t)n < size;
}

uint64_t gp_proto_image_hash(const char *ref) {
  char full[GP_PROTO_IMAGE_FULL_MAX];
  if (!gp_proto_image_full(ref, full, sizeof full)) snprintf(full, sizeof full, "%.255s", ref);
  uint64_t h = fnv(14695981039346656037ull, full, strlen(full));
  return h ? h : 1;
}

static const char *path_check(const char *p) {
  if (!p || p[0] != '/') return "is not an absolute path";
  if (strlen(p) >= GP_PROTO_MOUNT_PATH_MAX) return "is longer than 1023 bytes";
  for (const char *c = p; *c; c++) {
    if ((unsigned char)*c < ' ' || *c == 0x7f) return "contains a control character";
    if (*c == ',' || *c == ':') return "contains ',' or ':' (the engine's separators)";
  }
  if (strstr(p, "/../") || (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")))
    return "contains '..'";
  return NULL;
}

int gp_proto_mount_parse(const char *text, const char *field, gp_proto_mount *ret, gp_err *err) {
  memset(ret, 0, sizeof *ret);
  char buf[3 * GP_PROTO_MOUNT_PATH_MAX];
  if (!text || strlen(text) >= sizeof buf)
    return bad(err, NULL, field, "mount '%.100s' is too long", text);
  snprintf(buf, sizeof buf, "%s", text);
  char *parts[4];
  int n = 0;
  for (char *s = buf, *c; n < 4; s = c + 1) {
    parts[n++] = s;
    if (!(c = strchr(s, ':'))) break;
    *c = '\0';
  }
  if (n > 3) return bad(err, NULL, field, "mount '%.200s' is not SRC:DST[:ro]", text);
  const char *src = parts[0], *dst = n >= 2 ? parts[1] : parts[0];
  if (n == 3) {
    if (!strcmp(parts[2], "ro")) ret->ro = true;
    else if (strcmp(parts[2], "rw"))
      return bad(err, NULL, field, "mount '%.200s': the flag after DST is ro or rw", text);
  }
  const char *why = path_check(src);
  char msg[300];
  if (why) {
    snprintf(msg, sizeof msg, "mount '%%.200s': the source %s", why);
    return bad(err, NULL, field, msg, text);
  }
  if ((why = path_check(dst))) {
    snprintf(msg, sizeof msg, "mount '%%.200s': the destination %s", why);
    return bad(err, NULL, field, msg, text);
  }
  if (!strcmp(dst, "/")) return bad(err, NULL, field, "mount '%.200s': cannot mount over /", text);
  ret->src = gp_xstrdup(src);
  ret->dst = gp_xstrdup(dst);
  return 0;
}

static bool env_name_ok(const char *s) {
  if (!s || !*s || strlen(s) > 128 || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return false;
  return true;
}

json_t *gp_proto_container_encode(const gp_proto_container *c) {
  json_t *o = json_object(), *m = json_array(), *e = json_array();
  json_object_set_new(o, "image", json_string(c->image ? c->image : ""));
  for (int i = 0; i < c->n_mounts; i++) {
    size_t n = strlen(c->mounts[i].src) + strlen(c->mounts[i].dst) + 8;
    char *s = gp_xmalloc(n);
    snprintf(s, n, "%s:%s%s", c->mounts[i].src, c->mounts[i].dst, c->mounts[i].ro ? ":ro" : "");
    json_array_append_new(m, json_string(s));
    free(s);
  }
  for (int i = 0; i < c->n_env; i++) json_array_append_new(e, json_string(c->env[i]));
  json_object_set_new(o, "mounts", m);
  json_object_set_new(o, "workdir", c->workdir ? json_string(c->workdir) : json_null());
  json_object_set_new(o, "env", e);
  json_object_set_new(o, "writable", json_boolean(c->writable));
  json_object_set_new(o, "mount_home", json_boolean(c->mount_home));
  return o;
}

static int decode(const json_t *o, const char *ctx, gp_proto_container *c, gp_err *err) {
  if (!json_is_object(o)) return bad(err, NULL, ctx, "%s", "the container is an object");
  const char *image = json_string_value(json_object_get(o, "image"));
  const char *why = gp_proto_image_check(image);
  if (why) return bad(err, ctx, "image", "%s", why);
  c->image = gp_xstrdup(image);
  const json_t *m = json_object_get(o, "mounts");
  if (m && !json_is_null(m)) {
    if (!json_is_array(m) || json_array_size(m) > GP_PROTO_MAX_MOUNTS)
      return bad(err, ctx, "mounts", "%s", "mounts is a list of at most 32 \"SRC:DST[:ro]\"");
    char field[96];
    snprintf(field, sizeof field, "%s%smounts", ctx ? ctx : "", ctx && *ctx ? "." : "");
    for (size_t i = 0; i < json_array_size(m); i++) {
      const char *s = json_string_value(json_array_get(m, i));
      if (!s) return bad(err, ctx, "mounts", "%s", "a mount is a string \"SRC:DST[:ro]\"");
      int r = gp_proto_mount_parse(s, field, &c->mounts[c->n_mounts], err);
      if (r) return r;
      c->n_mounts++;
    }
  }
  const json_t *w = json_object_get(o, "workdir");
  if (w && !json_is_null(w)) {
    const char *ws = json_string_value(w);
    if (!ws || ws[0] != '/' || strlen(ws) >= GP_PROTO_MOUNT_PATH_MAX ||
        strlen(ws) != json_string_length(w))
      return bad(err, ctx, "workdir", "%s", "the container's workdir is an absolute path");
    for (const char *p = ws; *p; p++)
      if ((unsigned char)*p < ' ') return bad(err, ctx, "workdir", "%s", "the container's workdir contains a control character");
    c->workdir = gp_xstrdup(ws);
  }
  const json_t *e = json_object_get(o, "env");
  if (e && !json_is_null(e)) {
    if (!json_is_array(e) || json_array_size(e) > GP_PROTO_MAX_CONTAINER_ENV)
      return bad(err, ctx, "env", "%s", "env is a list of at most 64 variable names");
    c->env = gp_xcalloc(json_array_size(e) + 1, sizeof *c->env);
    for (size_t i = 0; i < json_array_size(e); i++) {
      const char *s = json_string_value(json_array_get(e, i));
      if (!env_name_ok(s))
        return bad(err, ctx, "env", "'%.100s' is not a variable name", s ? s : "(not a string)");
      c->env[c->n_env++] = gp_xstrdup(s);
    }
  }
  const json_t *b = json_object_get(o, "writable");
  if (b && !json_is_null(b) && !json_is_boolean(b)) return bad(err, ctx, "writable", "%s", "must be true or false");
  c->writable = json_is_true(b);
  b = json_object_get(o, "mount_home");
  if (b && !json_is_null(b) && !json_is_boolean(b)) return bad(err, ctx, "mount_home", "%s", "must be true or false");
  c->mount_home = !b || json_is_null(b) || json_is_true(b);
  return 0;
}

int gp_proto_container_decode(const json_t *o, const char *ctx, gp_proto_container *ret,
                              gp_err *err) {
  memset(ret, 0, sizeof *ret);
  int r = decode(o, ctx, ret, err);
  if (r) gp_proto_container_done(ret);
  return r;
}

void gp_proto_container_done(gp_proto_container *c) {
  if (!c) return;
  free(c->image);
  free(c->workdir);
  for (int i = 0; i < c->n_mounts; i++) {
    free(c->mounts[i].src);
    free(c->mounts[i].dst);
  }
  for (int i = 0; i < c->n_env; i++) free(c->env[i]);
  free(c->env);
  memset(c, 0, sizeof *c);
}
