/* SPDX-License-Identifier: Apache-2.0 */
/* Where the CLI finds its server and token (client.h): flags, then the environment, then
 * the client.json that `gpool up` writes. The file is untrusted input like any other: size
 * capped, fields type-checked, and a broken file is reported with its path rather than
 * silently ignored (a silently ignored token would send requests to the wrong server). */
#include "client/client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileperm.h"
#include "util/mem.h"
#include "util/urls.h"

#define CONFIG_MAX_BYTES 65536

int gp_client_config_path(char *out, size_t cap) {
  const char *dir = getenv("GPOOL_CONFIG_DIR");
  int n;
  if (dir && *dir) {
    n = snprintf(out, cap, "%s/client.json", dir);
  } else if ((dir = getenv("XDG_CONFIG_HOME")) && *dir) {
    n = snprintf(out, cap, "%s/gpool/client.json", dir);
  } else if ((dir = getenv("HOME")) && *dir) {
    n = snprintf(out, cap, "%s/.config/gpool/client.json", dir);
  } else {
    return GP_ENOENT;
  }
  return n < 0 || (size_t)n >= cap ? GP_ELIMIT : 0;
}

/* Reads client.json into *ret (NULL when the file does not exist). */
static int load_file(const char *path, json_t **ret, gp_err *err) {
  /* It holds a token: one other users could read is theirs too, one they could write
   * sends this user's requests (and token) where they like. */
  int rc = gp_fileperm_check(path, GP_FILEPERM_SECRET, NULL, err);
  if (rc) return rc;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) {
      *ret = NULL;
      return 0;
    }
    return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot read: %s", strerror(errno));
  }
  char *text = gp_xmalloc(CONFIG_MAX_BYTES + 1);
  size_t n = fread(text, 1, CONFIG_MAX_BYTES + 1, f);
  fclose(f);
  if (n > CONFIG_MAX_BYTES) {
    free(text);
    return gp_err_set(err, GP_ELIMIT, path, 0, NULL, "larger than %d bytes", CONFIG_MAX_BYTES);
  }
  json_error_t jerr;
  json_t *doc = json_loadb(text, n, 0, &jerr);
  free(text);
  if (!doc) return gp_err_set(err, GP_EPARSE, path, jerr.line, NULL, "%s", jerr.text);
  if (!json_is_object(doc)) {
    json_decref(doc);
    return gp_err_set(err, GP_EPARSE, path, 1, NULL, "expected a JSON object");
  }
  const char *keys[] = {"server", "token", "ca"};
  for (int i = 0; i < 3; i++) {
    json_t *v = json_object_get(doc, keys[i]);
    if (v && !json_is_string(v)) {
      json_decref(doc);
      return gp_err_set(err, GP_EINVAL, path, 0, keys[i], "expected a string");
    }
  }
  *ret = doc;
  return 0;
}

int gp_client_resolve(const char *flag_server, const char *flag_token, char **ret_server,
                      char **ret_token, gp_err *err) {
  const char *server = flag_server && *flag_server ? flag_server : getenv("GPOOL_SERVER");
  const char *token = flag_token && *flag_token ? flag_token : getenv("GPOOL_TOKEN");
  if (server && !*server) server = NULL;
  if (token && !*token) token = NULL;
  json_t *file = NULL;
  if (!server || !token) {
    char path[4096];
    if (gp_client_config_path(path, sizeof path) == 0) {
      int rc = load_file(path, &file, err);
      if (rc) return rc;
    }
    if (!server) server = json_string_value(json_object_get(file, "server"));
    if (!token) token = json_string_value(json_object_get(file, "token"));
  }
  if (!server || !*server) server = GP_CLIENT_DEFAULT_SERVER;
  gp_urls list;
  int rc = gp_urls_parse(server, "server", &list, err);
  if (rc) {
    json_decref(file);
    return rc;
  }
  *ret_server = gp_xstrdup(server);
  *ret_token = token && *token ? gp_xstrdup(token) : NULL;
  json_decref(file);
  return 0;
}

int gp_client_resolve_ca(const char *flag_ca, char **ret_ca, gp_err *err) {
  const char *ca = flag_ca && *flag_ca ? flag_ca : getenv("GPOOL_CA");
  if (ca && *ca) {
    *ret_ca = gp_xstrdup(ca);
    return 0;
  }
  json_t *file = NULL;
  char path[4096];
  if (gp_client_config_path(path, sizeof path) == 0) {
    int rc = load_file(path, &file, err);
    if (rc) return rc;
  }
  ca = json_string_value(json_object_get(file, "ca"));
  /* The file may be read from any directory: a relative path would name different files. */
  if (ca && ca[0] != '/') {
    json_decref(file);
    return gp_err_set(err, GP_EINVAL, path, 0, "ca", "must be an absolute path");
  }
  *ret_ca = ca ? gp_xstrdup(ca) : NULL;
  json_decref(file);
  return 0;
}

static int mkdir_parents(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    int rc = mkdir(path, 0700);
    *p = '/';
    if (rc && errno != EEXIST) return -1;
  }
  return 0;
}

int gp_client_config_write(const char *path, const char *server, const char *token,
                           gp_err *err) {
  char *dir = gp_xstrdup(path);
  int rc = mkdir_parents(dir);
  free(dir);
  if (rc) return gp_err_set(err, GP_EIO, path, 0, NULL, "cannot create its directory: %s", strerror(errno));
  size_t tlen = strlen(path) + 16;
  char *tmp = gp_xmalloc(tlen);
  snprintf(tmp, tlen, "%s.tmp", path);
  json_t *doc = json_pack("{s:s, s:s}", "server", server, "token", token);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || !doc) {
    rc = gp_err_set(err, GP_EIO, tmp, 0, NULL, "cannot write: %s", strerror(errno));
    goto out;
  }
  char *text = json_dumps(doc, JSON_INDENT(2));
  size_t len = strlen(text);
  ssize_t w = write(fd, text, len);
  int ok = w == (ssize_t)len && write(fd, "\n", 1) == 1 && fsync(fd) == 0;
  free(text);
  close(fd);
  fd = -1;
  if (!ok || rename(tmp, path) != 0) {
    rc = gp_err_set(err, GP_EIO, path, 0, NULL, "cannot write: %s", strerror(errno));
    unlink(tmp);
    goto out;
  }
  rc = 0;
out:
  if (fd >= 0) close(fd);
  json_decref(doc);
  free(tmp);
  return rc;
}
