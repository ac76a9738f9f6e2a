/* SPDX-License-Identifier: Apache-2.0 */
/* `gpool submit`'s container options (src/cli/submit_container.c): --image and pyxis's
 * #SBATCH --container-* directives become the request's fields; bad values are refused
 * naming the option and the script's line. */
#include "test.h"

#include <jansson.h>
#include <string.h>

#include "cli/submit_args.h"

static void pyxis_directives(void) {
  gp_submit s;
  gp_submit_init(&s);
  gp_err err = {0};
  const char *script = "#!/bin/sh\n"
                       "#SBATCH --container-image=nvcr.io/nvidia/pytorch:24.01-py3\n"
                       "#SBATCH --container-mounts=/data:/data:ro,/scratch:/scratch\n"
                       "#SBATCH --container-workdir=/workspace\n"
                       "#SBATCH --container-env=PATH,LD_LIBRARY_PATH\n"
                       "#SBATCH --container-writable --no-container-mount-home\n"
                       "python train.py\n";
  REQUIRE(gp_submit_parse_script(&s, "job.sh", script, strlen(script), &err) == 0);
  CHECK_EQ_STR("nvcr.io/nvidia/pytorch:24.01-py3", json_string_value(json_object_get(s.req, "image")));
  json_t *m = json_object_get(s.req, "container_mounts");
  CHECK_EQ_INT(2, (int)json_array_size(m));
  CHECK_EQ_STR("/data:/data:ro", json_string_value(json_array_get(m, 0)));
  CHECK_EQ_STR("/workspace", json_string_value(json_object_get(s.req, "container_workdir")));
  CHECK_EQ_INT(2, (int)json_array_size(json_object_get(s.req, "container_env")));
  CHECK(json_is_true(json_object_get(s.req, "container_writable")));
  CHECK(json_is_false(json_object_get(s.req, "container_mount_home")));
  CHECK_EQ_INT(0, (int)s.warnings.len); /* none "ignored" any more */
  gp_submit_done(&s);
}

static void gpool_image_and_errors(void) {
  gp_submit s;
  gp_submit_init(&s);
  gp_err err = {0};
  const char *ok = "#!/bin/sh\n#GPOOL --image 127.0.0.1:5000/team/env@sha256:abc\ntrue\n";
  REQUIRE(gp_submit_parse_script(&s, "a.sh", ok, strlen(ok), &err) == 0);
  CHECK_EQ_STR("127.0.0.1:5000/team/env@sha256:abc", json_string_value(json_object_get(s.req, "image")));
  const char *opt = "#!/bin/sh\n#GPOOL --image=-v/:/host\ntrue\n";
  CHECK(gp_submit_parse_script(&s, "b.sh", opt, strlen(opt), &err) != 0);
  CHECK_EQ_INT(2, err.line);
  CHECK_CONTAINS(err.message, "starts with a letter or a digit");
  const char *rel = "#!/bin/sh\n#SBATCH --container-mounts=data:/data\ntrue\n";
  CHECK(gp_submit_parse_script(&s, "c.sh", rel, strlen(rel), &err) != 0);
  CHECK_CONTAINS(err.message, "absolute");
  const char *sep = "#!/bin/sh\n#SBATCH --container-mounts=/a:/b:/c:ro\ntrue\n";
  CHECK(gp_submit_parse_script(&s, "d.sh", sep, strlen(sep), &err) != 0);
  const char *env = "#!/bin/sh\n#SBATCH --container-env=1BAD\ntrue\n";
  CHECK(gp_submit_parse_script(&s, "e.sh", env, strlen(env), &err) != 0);
  CHECK_CONTAINS(err.message, "not a variable name");
  char *argv[] = {"submit", "--image", "busybox:1", "--container-mounts", "/x", "--", "true", NULL};
  gp_submit t;
  gp_submit_init(&t);
  REQUIRE(gp_submit_parse_args(&t, 7, argv, &err) == 0);
  CHECK_EQ_STR("busybox:1", json_string_value(json_object_get(t.cli, "image")));
  CHECK_EQ_STR("/x", json_string_value(json_array_get(json_object_get(t.cli, "container_mounts"), 0)));
  gp_submit_done(&t);
  gp_submit_done(&s);
}

GP_TESTS(pyxis_directives, gpool_image_and_errors)
