/* SPDX-License-Identifier: Apache-2.0 */
/* A job's container (docs/containers.md): read from a submission's flat fields (`image`,
 * `container_mounts`, `container_workdir`, `container_env`, `container_writable`,
 * `container_mount_home`, as `gpool submit` and #SBATCH's pyxis directives send them) or
 * from a stored document's `container` object, checked with the start order's own rules
 * (protocol/container.h), and kept as that object: the API, the store and the start
 * orders all show the same one. Kept apart from jobjson.c, which holds every job's fields. */
#include <stdio.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/event.h"
#include "server/state.h"

static const char *const flat_keys[] = {"container_mounts", "container_workdir", "container_env",
                                        "container_writable", "container_mount_home", NULL};

int gp__srv_job_read_container(const json_t *o, gp_srv_job *j, gp_err *err) {
  const json_t *c = json_object_get(o, "container");
  const json_t *image = json_object_get(o, "image");
  json_t *built = NULL;
  if ((!c || json_is_null(c)) && image && !json_is_null(image)) {
    /* A submission: the flat fields, each optional but the image. */
    built = json_object();
    json_object_set(built, "image", (json_t *)image);
    static const char *const inner[] = {"mounts", "workdir", "env", "writable", "mount_home"};
    for (int i = 0; flat_keys[i]; i++) {
      const json_t *v = json_object_get(o, flat_keys[i]);
      if (v) json_object_set(built, inner[i], (json_t *)v);
    }
    c = built;
  } else if (!c || json_is_null(c)) {
    for (int i = 0; flat_keys[i]; i++) {
      const json_t *v = json_object_get(o, flat_keys[i]);
      if (v && !json_is_null(v))
        return gp_err_set(err, GP_EINVAL, NULL, 0, flat_keys[i], "%s needs an image (--image)",
                          flat_keys[i]);
    }
    return 0;
  }
  gp_proto_container spec;
  int r = gp_proto_container_decode(c, "container", &spec, err);
  json_decref(built);
  if (r) return r;
  json_decref(j->container);
  j->container = gp_proto_container_encode(&spec); /* normalised: every key present */
  gp_proto_container_done(&spec);
  return 0;
}

void gp__srv_job_container_json(json_t *o, const gp_srv_job *j) {
  json_object_set_new(o, "container", j->container ? json_deep_copy(j->container) : json_null());
}

int gp__srv_pull_progress(gp_srv_state *s, gp_srv_job *j, int task, int64_t done, int64_t total) {
  if (done < 0 || total < 0 || (total > 0 && done > total) || !json_is_array(j->timeline)) return 0;
  /* The task's pull under way: its last pulling_image, with no image_pulled after it. */
  json_t *entry = NULL;
  for (size_t i = json_array_size(j->timeline); i-- > 0;) {
    json_t *e = json_array_get(j->timeline, i);
    const char *ev = json_string_value(json_object_get(e, "event"));
    const json_t *t = json_object_get(e, "task");
    if (!ev || (task >= 0 && json_is_integer(t) && json_integer_value(t) != task)) continue;
    if (!strcmp(ev, "image_pulled")) return 0;
    if (!strcmp(ev, "pulling_image")) {
      entry = e;
      break;
    }
  }
  const char *msg = entry ? json_string_value(json_object_get(entry, "message")) : NULL;
  if (!msg) return 0;
  const json_t *old_done = json_object_get(entry, "done_bytes");
  const json_t *old_total = json_object_get(entry, "total_bytes");
  if (json_is_integer(old_done) && done < json_integer_value(old_done)) return 0; /* never back */
  /* The manifest's total does not change: the first one known stays. */
  if (json_is_integer(old_total) && json_integer_value(old_total) > 0) {
    if (total != json_integer_value(old_total) || done > total) return 0;
  }
  char base[GP_PROTO_TEXT_MAX];
  snprintf(base, sizeof base, "%s", msg);
  char *paren = old_done ? strstr(base, " (") : NULL; /* a reference has no space */
  if (paren) *paren = '\0';
  char bytes[80], text[GP_PROTO_TEXT_MAX + 100];
  gp_proto_pull_bytes_text(done, total, bytes, sizeof bytes);
  snprintf(text, sizeof text, "%s (%s)", base, bytes);
  json_object_set_new(entry, "message", json_string(text));
  json_object_set_new(entry, "done_bytes", json_integer(done));
  json_object_set_new(entry, "total_bytes", json_integer(total));
  gp__srv_job_changed(s, j); /* its readers (the console, the events feed) see it move */
  return 0;
}
