/* SPDX-License-Identifier: Apache-2.0 */
/* A job's container in the start order (src/protocol/container.c): it survives encoding and
 * decoding, and every field an engine's command line would misread is refused by name. */
#include "test.h"

#include <jansson.h>
#include <string.h>

#include "protocol/container.h"
#include "protocol/order.h"

static void round_trip(void) {
  json_t *job = json_pack("{s:s, s:s, s:[s], s:{}, s:{s:s, s:[s,s], s:s, s:[s], s:b, s:b}}", "id", "7",
                          "user", "alice", "command", "true", "env", "container", "image",
                          "reg:5000/a/b:1", "mounts", "/data:/data:ro", "/x", "workdir", "/w",
                          "env", "PATH", "writable", 1, "mount_home", 0);
  gp_proto_start s;
  gp_err err = {0};
  REQUIRE(gp_proto_start_decode(job, &s, &err) == 0);
  REQUIRE(s.container != NULL);
  CHECK_EQ_STR("reg:5000/a/b:1", s.container->image);
  CHECK_EQ_INT(2, s.container->n_mounts);
  CHECK(s.container->mounts[0].ro);
  CHECK_EQ_STR("/x", s.container->mounts[1].dst); /* "PATH": the same path inside */
  CHECK(s.container->writable);
  CHECK(!s.container->mount_home);
  json_t *again = gp_proto_start_encode(&s);
  gp_proto_start t;
  REQUIRE(gp_proto_start_decode(again, &t, &err) == 0);
  CHECK_EQ_STR("/data:/data:ro", json_string_value(json_array_get(
      json_object_get(json_object_get(again, "container"), "mounts"), 0)));
  CHECK_EQ_STR("/w", t.container->workdir);
  gp_proto_start_done(&t);
  gp_proto_start_done(&s);
  json_decref(again);
  json_decref(job);
  /* A bare job has none. */
  job = json_pack("{s:s, s:[s], s:{}}", "id", "8", "command", "true", "env");
  REQUIRE(gp_proto_start_decode(job, &s, &err) == 0);
  CHECK(s.container == NULL);
  json_t *enc = gp_proto_start_encode(&s);
  CHECK(json_object_get(enc, "container") == NULL);
  json_decref(enc);
  gp_proto_start_done(&s);
  json_decref(job);
}

static void refused(void) {
  const char *bad[][2] = {
      {"{\"image\": \"-v/:/host\"}", "container.image"},
      {"{\"image\": \"docker://x\"}", "container.image"},
      {"{\"image\": \"a b\"}", "container.image"},
      {"{\"image\": \"\"}", "container.image"},
      {"{\"image\": \"x\", \"mounts\": [\"rel:/x\"]}", "container.mounts"},
      {"{\"image\": \"x\", \"mounts\": [\"/a,b:/x\"]}", "container.mounts"},
      {"{\"image\": \"x\", \"mounts\": [\"/a:/\"]}", "container.mounts"},
      {"{\"image\": \"x\", \"mounts\": [\"/a:/b:rx\"]}", "container.mounts"},
      {"{\"image\": \"x\", \"mounts\": [\"/a/../etc:/b\"]}", "container.mounts"},
      {"{\"image\": \"x\", \"workdir\": \"w\"}", "container.workdir"},
      {"{\"image\": \"x\", \"env\": [\"A=B\"]}", "container.env"},
      {"{\"image\": \"x\", \"writable\": \"yes\"}", "container.writable"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *o = json_loads(bad[i][0], 0, NULL);
    REQUIRE(o != NULL);
    gp_proto_container c;
    gp_err err = {0};
    CHECK(gp_proto_container_decode(o, "container", &c, &err) != 0);
    CHECK_EQ_STR(bad[i][1], err.field);
    json_decref(o);
  }
  char big[300];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(gp_proto_image_check(big) != NULL);
}

/* The hash the scheduler compares a job's image with a node's by: references as engines
 * resolve them are equal. */
static void image_hash(void) {
  uint64_t h = gp_proto_image_hash("docker.io/library/busybox:latest");
  CHECK(h == gp_proto_image_hash("busybox"));
  CHECK(h == gp_proto_image_hash("busybox:latest"));
  CHECK(h == gp_proto_image_hash("docker.io/busybox"));
  CHECK(h == gp_proto_image_hash("library/busybox"));
  CHECK(h != gp_proto_image_hash("busybox:1"));
  CHECK(gp_proto_image_hash("127.0.0.1:5000/e2e/x") == gp_proto_image_hash("127.0.0.1:5000/e2e/x:latest"));
  CHECK(gp_proto_image_hash("localhost/x") != gp_proto_image_hash("x"));
  CHECK(gp_proto_image_hash("r:5000/x@sha256:ab") != gp_proto_image_hash("r:5000/x@sha256:ab:latest"));
  CHECK(gp_proto_image_hash("") != 0);
}

/* The name the agent runs an image by: never a short name or an ID, which an engine would
 * match against an image of any registry it holds. */
static void image_full(void) {
  char b[GP_PROTO_IMAGE_FULL_MAX];
  CHECK(gp_proto_image_full("busybox", b, sizeof b) && !strcmp(b, "docker.io/library/busybox:latest"));
  CHECK(gp_proto_image_full("e2e/a:1", b, sizeof b) && !strcmp(b, "docker.io/e2e/a:1"));
  CHECK(gp_proto_image_full("23b43c1e8934", b, sizeof b) && !strcmp(b, "docker.io/library/23b43c1e8934:latest"));
  CHECK(gp_proto_image_full("docker.io/busybox:1", b, sizeof b) && !strcmp(b, "docker.io/library/busybox:1"));
  CHECK(gp_proto_image_full("127.0.0.1:5000/e2e/a:1", b, sizeof b) && !strcmp(b, "127.0.0.1:5000/e2e/a:1"));
  CHECK(gp_proto_image_full("localhost/x", b, sizeof b) && !strcmp(b, "localhost/x:latest"));
  CHECK(gp_proto_image_full("r:5000/x@sha256:ab", b, sizeof b) && !strcmp(b, "r:5000/x@sha256:ab"));
  CHECK(!gp_proto_image_full("busybox", b, 10));
  char big[GP_PROTO_IMAGE_MAX];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(gp_proto_image_full(big, b, sizeof b) && strlen(b) == 18 + 255 + 7);
}

GP_TESTS(round_trip, refused, image_hash, image_full)
