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
#include "server/state/state.h"

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
