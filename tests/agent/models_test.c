/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's models (src/agent/models.c): the subdirectories of its models_dir with a
 * valid name, links to directories included, files and hidden entries left out, sorted and
 * bounded; a missing directory holds none. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/models.h"
#include "protocol/model.h"

static void sub(const char *root, const char *name, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", root, name);
}

static void lists_valid_subdirectories_sorted(void) {
  char root[] = "/tmp/gp-models-XXXXXX", p[512], q[512];
  REQUIRE(mkdtemp(root) != NULL);
  const char *dirs[] = {"zeta", "m1", ".locks", "bad name", "models--org--Llama-3"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    sub(root, dirs[i], p, sizeof p);
    REQUIRE(mkdir(p, 0700) == 0);
  }
  sub(root, "afile", p, sizeof p);
  FILE *f = fopen(p, "w");
  REQUIRE(f);
  fclose(f);
  sub(root, "linked", p, sizeof p);
  sub(root, "m1", q, sizeof q);
  REQUIRE(symlink(q, p) == 0);
  sub(root, "dangling", p, sizeof p);
  REQUIRE(symlink("/nonexistent/gp-models", p) == 0);
  json_t *l = gp_agent_models_scan(root);
  char *text = json_dumps(l, JSON_COMPACT);
  CHECK_EQ_STR("[\"linked\",\"m1\",\"models--org--Llama-3\",\"zeta\"]", text);
  free(text);
  json_decref(l);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
  l = gp_agent_models_scan(root); /* gone: none */
  CHECK(json_is_array(l) && json_array_size(l) == 0);
  json_decref(l);
}

static void at_most_the_bound_is_reported(void) {
  char root[] = "/tmp/gp-models-XXXXXX", p[512];
  REQUIRE(mkdtemp(root) != NULL);
  for (int i = 0; i < GP_PROTO_MODELS_MAX + 20; i++) {
    char name[32];
    snprintf(name, sizeof name, "m%04d", i);
    sub(root, name, p, sizeof p);
    REQUIRE(mkdir(p, 0700) == 0);
  }
  json_t *l = gp_agent_models_scan(root);
  CHECK_EQ_INT(GP_PROTO_MODELS_MAX, (int)json_array_size(l));
  CHECK_EQ_STR("m0000", json_string_value(json_array_get(l, 0))); /* the first in byte order */
  char want[32];
  snprintf(want, sizeof want, "m%04d", GP_PROTO_MODELS_MAX - 1);
  CHECK_EQ_STR(want, json_string_value(json_array_get(l, GP_PROTO_MODELS_MAX - 1)));
  json_decref(l);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  CHECK(system(cmd) == 0);
}

GP_TESTS(lists_valid_subdirectories_sorted, at_most_the_bound_is_reported)
