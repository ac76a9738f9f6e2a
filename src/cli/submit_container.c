/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s container options (submit_container.h), checked here with the protocol's
 * rules (protocol/container.h) so a mistake names the script's line, not a server field. */
#include "cli/submit_container.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/container.h"
#include "util/mem.h"

static int fail(gp_err *err, const char *where, const char *field, const char *msg) {
  if (where) return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s: %s", where, msg);
  return gp_err_set(err, GP_EINVAL, NULL, 0, field, "%s", msg);
}

/* "a,b,c" -> the words, each checked by `check`; NULL list on error. */
static int split_list(const char *v, json_t *out, int max, const char *field, const char *where,
                      int (*check)(const char *item, const char *field, const char *where, gp_err *err),
                      gp_err *err) {
  char *copy = gp_xstrdup(v), *save = NULL;
  int rc = 0;
  for (char *t = strtok_r(copy, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
    if ((int)json_array_size(out) >= max) {
      char msg[128];
      snprintf(msg, sizeof msg, "at most %d entries", max);
      rc = fail(err, where, field, msg);
      break;
    }
    rc = check(t, field, where, err);
    if (!rc) json_array_append_new(out, json_string(t));
  }
  free(copy);
  if (!rc && json_array_size(out) == 0) rc = fail(err, where, field, "the list is empty");
  return rc;
}

static int check_mount(const char *item, const char *field, const char *where, gp_err *err) {
  gp_proto_mount m;
  gp_err e = {0};
  if (gp_proto_mount_parse(item, field, &m, &e)) return fail(err, where, field, e.message);
  free(m.src);
  free(m.dst);
  return 0;
}

static int check_env(const char *item, const char *field, const char *where, gp_err *err) {
  bool ok = *item && !(*item >= '0' && *item <= '9') && strlen(item) <= 128;
  for (const char *p = item; *p && ok; p++)
    ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_';
  if (ok) return 0;
  char msg[256];
  snprintf(msg, sizeof msg, "'%.100s' is not a variable name", item);
  return fail(err, where, field, msg);
}

/* Appends the list to req[key] (repeated options add up). */
static int add_list(json_t *req, const char *key, const char *v, int max, const char *where,
                    int (*check)(const char *, const char *, const char *, gp_err *), gp_err *err) {
  json_t *cur = json_object_get(req, key);
  json_t *out = json_is_array(cur) ? json_copy(cur) : json_array();
  int rc = split_list(v, out, max, key, where, check, err);
  if (rc) json_decref(out);
  else json_object_set_new(req, key, out);
  return rc;
}

int gp_submit_container(json_t *req, gp_submit_container_opt which, const char *v,
                        const char *where, gp_err *err) {
  switch (which) {
  case GP_SUBMIT_IMAGE: {
    const char *why = gp_proto_image_check(v);
    if (why) {
      char msg[400];
      snprintf(msg, sizeof msg, "--image '%.200s': %s", v ? v : "", why);
      return fail(err, where, "image", msg);
    }
    json_object_set_new(req, "image", json_string(v));
    return 0;
  }
  case GP_SUBMIT_MOUNTS:
    return add_list(req, "container_mounts", v, GP_PROTO_MAX_MOUNTS, where, check_mount, err);
  case GP_SUBMIT_CT_WORKDIR:
    if (!v || v[0] != '/' || strlen(v) >= GP_PROTO_MOUNT_PATH_MAX)
      return fail(err, where, "container_workdir", "--container-workdir is an absolute path");
    json_object_set_new(req, "container_workdir", json_string(v));
    return 0;
  case GP_SUBMIT_CT_ENV:
    return add_list(req, "container_env", v, GP_PROTO_MAX_CONTAINER_ENV, where, check_env, err);
  case GP_SUBMIT_WRITABLE:
    json_object_set_new(req, "container_writable", json_true());
    return 0;
  case GP_SUBMIT_NO_MOUNT_HOME:
  case GP_SUBMIT_MOUNT_HOME:
    json_object_set_new(req, "container_mount_home", json_boolean(which == GP_SUBMIT_MOUNT_HOME));
    return 0;
  }
  return fail(err, where, NULL, "internal error: unknown container option");
}
