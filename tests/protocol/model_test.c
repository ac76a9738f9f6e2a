/* SPDX-License-Identifier: Apache-2.0 */
/* Model names (src/protocol/model.c): what an agent may report and a job may name, and
 * their hashes, which never meet an image's in the scheduler's preference set. */
#include "test.h"

#include <string.h>

#include "protocol/container.h"
#include "protocol/model.h"

static void names_are_bounded_and_safe(void) {
  CHECK(gp_proto_model_name_valid("m1"));
  CHECK(gp_proto_model_name_valid("models--meta-llama--Llama-3.1-8B-Instruct"));
  CHECK(gp_proto_model_name_valid("Qwen2.5_7B"));
  char name[GP_PROTO_MODEL_NAME_MAX + 1];
  memset(name, 'a', sizeof name);
  name[GP_PROTO_MODEL_NAME_MAX - 1] = '\0'; /* 127 bytes: the most */
  CHECK(gp_proto_model_name_valid(name));
  name[GP_PROTO_MODEL_NAME_MAX - 1] = 'a';
  name[GP_PROTO_MODEL_NAME_MAX] = '\0'; /* 128 */
  CHECK(!gp_proto_model_name_valid(name));
  CHECK(!gp_proto_model_name_valid(NULL));
  CHECK(!gp_proto_model_name_valid(""));
  CHECK(!gp_proto_model_name_valid("."));
  CHECK(!gp_proto_model_name_valid(".."));
  CHECK(!gp_proto_model_name_valid(".locks"));
  CHECK(!gp_proto_model_name_valid("-rf"));
  CHECK(!gp_proto_model_name_valid("a/b"));
  CHECK(!gp_proto_model_name_valid("../etc"));
  CHECK(!gp_proto_model_name_valid("a b"));
  CHECK(!gp_proto_model_name_valid("a\nb"));
  CHECK(!gp_proto_model_name_valid("a:b"));
  CHECK(!gp_proto_model_name_valid("caf\xc3\xa9"));
}

static void hashes_are_stable_and_apart_from_images(void) {
  CHECK(gp_proto_model_hash("m1") == gp_proto_model_hash("m1"));
  CHECK(gp_proto_model_hash("m1") != gp_proto_model_hash("m2"));
  CHECK(gp_proto_model_hash("m1") != 0);
  /* An image named like the model is another thing. */
  CHECK(gp_proto_model_hash("m1") != gp_proto_image_hash("m1"));
  CHECK(gp_proto_model_hash("busybox") != gp_proto_image_hash("busybox"));
  CHECK(gp_proto_model_hash("busybox") != gp_proto_image_hash("docker.io/library/busybox:latest"));
}

GP_TESTS(names_are_bounded_and_safe, hashes_are_stable_and_apart_from_images)
