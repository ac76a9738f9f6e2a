/* SPDX-License-Identifier: Apache-2.0 */
/* Documents load from YAML and JSON with lines kept, and bad input is named precisely. */
#include "test.h"
#include "util/doc.h"
#include "util/units.h"

static gp_doc *load(const char *text) {
  gp_doc *d = NULL;
  gp_err e = {0};
  if (gp_doc_load_string("t.yaml", text, strlen(text), &d, &e)) {
    fprintf(stderr, "load failed: %s\n", e.message);
    return NULL;
  }
  return d;
}

static void yaml_keeps_lines_and_values(void) {
  gp_doc *d = load("now: 1000\nnodes:\n  - {name: n1, gpus: 8}\n  - name: n2\n    gpus: 4\n");
  REQUIRE(d && d->root);
  const gp_doc_node *nodes = gp_doc_get(d->root, "nodes");
  REQUIRE(nodes && nodes->kind == GP_DOC_SEQ && nodes->n == 2);
  CHECK_EQ_INT(3, nodes->items[0]->line);
  int64_t g = 0;
  CHECK_EQ_INT(0, gp_doc_int(d, gp_doc_get(nodes->items[1], "gpus"), "gpus", &g, NULL));
  CHECK_EQ_INT(4, g);
  CHECK_EQ_INT(5, gp_doc_get(nodes->items[1], "gpus")->line);
  gp_doc_free(d);
}

static void json_is_accepted(void) {
  gp_doc *d = load("{\"now\": 5, \"jobs\": [{\"id\": \"j1\"}]}");
  REQUIRE(d);
  const char *id = NULL;
  CHECK_EQ_INT(0, gp_doc_str(d, gp_doc_get(gp_doc_get(d->root, "jobs")->items[0], "id"), "id", &id, NULL));
  CHECK_EQ_STR("j1", id);
  gp_doc_free(d);
}

static void wrong_type_and_unknown_key_name_line_and_field(void) {
  gp_doc *d = load("a: 1\nb: x\n");
  REQUIRE(d);
  gp_err e = {0};
  int64_t v;
  CHECK_EQ_INT(GP_EINVAL, gp_doc_int(d, gp_doc_get(d->root, "b"), "b", &v, &e));
  CHECK_EQ_INT(2, e.line);
  CHECK_EQ_STR("b", e.field);
  static const char *const allowed[] = {"a", NULL};
  CHECK_EQ_INT(GP_EINVAL, gp_doc_check_keys(d, d->root, "", allowed, &e));
  CHECK_EQ_STR("b", e.field);
  gp_doc_free(d);
}

static void syntax_errors_duplicates_and_aliases_are_refused(void) {
  gp_doc *d = NULL;
  gp_err e = {0};
  CHECK(gp_doc_load_string("t", "a: [1, 2\n", 9, &d, &e) != 0);
  CHECK(gp_doc_load_string("t", "a: 1\na: 2\n", 10, &d, &e) != 0);
  CHECK_EQ_INT(2, e.line);
  const char *bomb = "a: &x [1]\nb: *x\n";
  CHECK(gp_doc_load_string("t", bomb, strlen(bomb), &d, &e) != 0);
}

static void units_parse_like_slurm(void) {
  int64_t v;
  CHECK_EQ_INT(0, gp_parse_mem_mib("64G", &v)); CHECK_EQ_INT(65536, v);
  CHECK_EQ_INT(0, gp_parse_mem_mib("512", &v)); CHECK_EQ_INT(512, v);
  CHECK(gp_parse_mem_mib("-1G", &v) != 0);
  CHECK(gp_parse_mem_mib("12X", &v) != 0);
  CHECK_EQ_INT(0, gp_parse_duration_s("4h", &v)); CHECK_EQ_INT(14400, v);
  CHECK_EQ_INT(0, gp_parse_duration_s("1h30m", &v)); CHECK_EQ_INT(5400, v);
  CHECK_EQ_INT(0, gp_parse_duration_s("2:30:00", &v)); CHECK_EQ_INT(9000, v);
  CHECK_EQ_INT(0, gp_parse_duration_s("1-00:00:00", &v)); CHECK_EQ_INT(86400, v);
  CHECK_EQ_INT(0, gp_parse_duration_s("90", &v)); CHECK_EQ_INT(90, v);
  CHECK(gp_parse_duration_s("4x", &v) != 0);
  /* Huge fields are refused, not overflowed (found by the submit-script fuzz test). */
  CHECK(gp_parse_duration_s("2336936577129475701:00:00", &v) != 0);
  CHECK(gp_parse_duration_s("99999999999999-00:00:00", &v) != 0);
  CHECK(gp_parse_duration_s("1-", &v) != 0);
}

GP_TESTS(yaml_keeps_lines_and_values, json_is_accepted,
         wrong_type_and_unknown_key_name_line_and_field,
         syntax_errors_duplicates_and_aliases_are_refused, units_parse_like_slurm)
