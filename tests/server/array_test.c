/* SPDX-License-Identifier: Apache-2.0 */
/* Job arrays' record (server/array.c): Slurm's index syntax and its refusals, positions and
 * indexes both ways, and the stored form read back the same, through the fast document too. */
#include "test.h"
#include "server/cycle/parts.h"
#include "server/state/state.h"

static gp_srv_array *parse(const char *spec) {
  gp_srv_array *a = NULL;
  gp_err e = {0};
  return gp__srv_array_parse(spec, &a, &e) == 0 ? a : NULL;
}

static void slurm_specs_give_their_indexes(void) {
  gp_srv_array *a = parse("0-99:2%8");
  REQUIRE(a);
  CHECK_EQ_INT(50, a->count);
  CHECK_EQ_INT(8, a->limit);
  CHECK_EQ_INT(98, gp__srv_array_index(a, 49));
  CHECK_EQ_INT(-1, gp__srv_array_index(a, 50));
  CHECK_EQ_INT(3, gp__srv_array_pos(a, 6));
  CHECK_EQ_INT(-1, gp__srv_array_pos(a, 7));
  gp__srv_array_free(a);
  /* A list, out of order, and a step that does not reach HIGH. */
  REQUIRE((a = parse("5-7,1,3,10-15:4")));
  CHECK_EQ_INT(7, a->count); /* 1 3 5 6 7 10 14 */
  CHECK_EQ_INT(0, a->limit);
  int64_t want[] = {1, 3, 5, 6, 7, 10, 14};
  for (int p = 0; p < 7; p++) {
    CHECK_EQ_INT(want[p], gp__srv_array_index(a, p));
    CHECK_EQ_INT(p, gp__srv_array_pos(a, want[p]));
  }
  char spec[64];
  gp__srv_array_spec(a, spec, sizeof spec);
  CHECK_EQ_STR("1,3,5-7,10-14:4", spec);
  gp__srv_array_free(a);
}

static void bad_specs_are_refused_with_a_reason(void) {
  const char *bad[] = {"", "a", "5-3", "1-10:0", "1,1", "0-5,3-8", "0-9%0", "0-9%", "1-", "0-1000000000",
                       "0-2000000", "3 ", "-1", "1-3:", NULL};
  for (int i = 0; bad[i]; i++) {
    gp_srv_array *a = NULL;
    gp_err e = {0};
    CHECK_EQ_INT(GP_EINVAL, gp__srv_array_parse(bad[i], &a, &e));
    CHECK(a == NULL);
    CHECK_EQ_STR("array", e.field);
  }
}

static void the_stored_form_reads_back_the_same(void) {
  gp_server_config *cfg = gp_server_config_new();
  gp_srv_state *s = gp__srv_state_make(cfg, NULL);
  json_t *o = json_loads("{\"command\": [\"true\"], \"gpus\": 1, \"array\": \"0-9:3%2\", \"after_corr\": [\"4\"]}",
                         0, NULL);
  gp_srv_job *j = NULL;
  gp_err e = {0};
  REQUIRE(gp__srv_job_parse(cfg, o, "alice", false, &j, &e) == 0);
  REQUIRE(j->array);
  j->id = 7;
  snprintf(j->idstr, sizeof j->idstr, "7");
  j->queue = strdup("default");
  j->array->next = 2;
  gp_srv_posv *h = &j->array->held;
  h->v = calloc(1, sizeof *h->v);
  h->v[h->n++] = 3;
  char *fast = gp__srv_job_store_doc(j);
  json_t *ref = gp__srv_job_to_json(s, j, true), *parsed = json_loads(fast, 0, NULL);
  REQUIRE(parsed);
  CHECK(json_equal(parsed, ref));
  gp_srv_job *back = NULL;
  REQUIRE(gp__srv_job_from_doc(fast, &back, &e) == 0);
  REQUIRE(back->array);
  CHECK_EQ_INT(4, back->array->count);
  CHECK_EQ_INT(2, back->array->limit);
  CHECK_EQ_INT(2, back->array->next);
  CHECK(gp__srv_array_made(back->array, 1));
  CHECK(!gp__srv_array_made(back->array, 2));
  CHECK_EQ_INT(1, back->array->n_after_corr);
  CHECK_EQ_STR("4", back->array->after_corr[0]);
  CHECK_EQ_STR("held", gp__srv_array_elem_state(back, 3));
  CHECK_EQ_STR("pending", gp__srv_array_elem_state(back, 2));
  gp__srv_job_free(back);
  /* An element: its array's job and index. */
  j->array_job = 3;
  j->array_index = 9;
  gp__srv_array_free(j->array);
  j->array = NULL;
  free(fast);
  fast = gp__srv_job_store_doc(j);
  REQUIRE(gp__srv_job_from_doc(fast, &back, &e) == 0);
  CHECK_EQ_INT(3, back->array_job);
  CHECK_EQ_INT(9, back->array_index);
  gp__srv_job_free(back);
  json_decref(parsed);
  json_decref(ref);
  free(fast);
  gp__srv_job_free(j);
  json_decref(o);
  gp__srv_state_free(s);
  gp_server_config_free(cfg);
}

GP_TESTS(slurm_specs_give_their_indexes, bad_specs_are_refused_with_a_reason, the_stored_form_reads_back_the_same)
