/* SPDX-License-Identifier: Apache-2.0 */
/* MIG layouts: what an admin writes in the agent config is accepted when NVIDIA's
 * placement rules allow it and refused with a reason when not; free instances are found;
 * dynamic MIG picks layouts that serve pending demand. */
#include "test.h"
#include "core/mig.h"

static int parse(const char *model, const char *spec, gp_mig_layout *l, gp_err *e) {
  memset(e, 0, sizeof(*e));
  return gp_mig_layout_parse(model, spec, l, e);
}

static void four_plus_three_is_valid_four_plus_four_is_not(void) {
  gp_mig_layout l;
  gp_err e;
  CHECK_EQ_INT(0, parse("A100-80GB", "mig:4g.40gb,3g.40gb", &l, &e));
  CHECK_EQ_INT(2, l.n);
  CHECK_EQ_INT(0, l.start_slot[0]);
  CHECK_EQ_INT(4, l.start_slot[1]);
  CHECK_EQ_INT(GP_EINVAL, parse("A100-80GB", "4g.40gb,4g.40gb", &l, &e));
  CHECK_CONTAINS(e.message, "at most 1");
}

static void the_design_example_layout_is_valid_with_and_without_slots(void) {
  gp_mig_layout l;
  gp_err e;
  CHECK_EQ_INT(0, parse("H100-80GB", "mig:3g.40gb,2g.20gb,1g.10gb,1g.10gb", &l, &e));
  CHECK_EQ_INT(4, l.n);
  char buf[128];
  gp_mig_layout_format(&l, buf, sizeof(buf));
  /* 3g@0 would leave slot 7 for a 1g, which may not start there: the search moves 3g. */
  CHECK_EQ_STR("3g.40gb@4,2g.20gb@0,1g.10gb@2,1g.10gb@3", buf);
}

static void explicit_slots_are_checked(void) {
  gp_mig_layout l;
  gp_err e;
  CHECK_EQ_INT(0, parse("A100-40GB", "3g.20gb@4,2g.10gb@0,1g.5gb@2,1g.5gb@3", &l, &e));
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "3g.20gb@2", &l, &e));
  CHECK_CONTAINS(e.message, "cannot start at slot 2");
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "2g.10gb@0,1g.5gb@1", &l, &e));
  CHECK_CONTAINS(e.message, "overlaps");
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "1g.10gb@1", &l, &e));
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "1g.5gb@x", &l, &e));
}

static void limits_and_unknown_names_are_refused_with_a_reason(void) {
  gp_mig_layout l;
  gp_err e;
  CHECK_EQ_INT(0, parse("A100-40GB", "1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb", &l, &e));
  CHECK_EQ_INT(GP_EINVAL,
               parse("A100-40GB", "1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb", &l, &e));
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb", &l, &e));
  CHECK_CONTAINS(e.message, "at most 4");
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "7g.40gb,1g.5gb", &l, &e));
  CHECK_CONTAINS(e.message, "compute slices");
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "3g.40gb", &l, &e));
  CHECK_CONTAINS(e.message, "no MIG profile \"3g.40gb\"");
  CHECK_EQ_INT(GP_EINVAL, parse("T4", "1g.5gb", &l, &e));
  CHECK_CONTAINS(e.message, "does not support MIG");
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "", &l, &e));
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "1g.5gb,", &l, &e));
  /* Memory slices run out before compute: 3g(4 slices) + 3 x 1g.10gb (2 each) = 10 > 8. */
  CHECK_EQ_INT(GP_EINVAL, parse("A100-40GB", "3g.20gb,1g.10gb,1g.10gb,1g.10gb", &l, &e));
}

static void every_model_has_its_table_and_aliases_resolve(void) {
  CHECK_EQ_INT(6, gp_mig_model_count());
  CHECK_EQ_STR("A100-80GB", gp_mig_model_find("NVIDIA A100-SXM4-80GB")->name);
  CHECK_EQ_STR("A100-40GB", gp_mig_model_find("a100")->name);
  CHECK_EQ_STR("H100-94GB", gp_mig_model_find("H100 NVL")->name);
  CHECK_EQ_STR("H200-141GB", gp_mig_model_find("NVIDIA H200")->name);
  CHECK_EQ_STR("B200", gp_mig_model_find("b200")->name);
  CHECK(gp_mig_model_find("A10") == NULL);
  gp_mig_layout l;
  gp_err e;
  CHECK_EQ_INT(0, parse("H200-141GB", "7g.141gb", &l, &e));
  CHECK_EQ_INT(0, parse("B200", "4g.90gb,2g.45gb,1g.23gb", &l, &e));
  CHECK_EQ_INT(0, parse("H100-94GB", "1g.24gb,1g.24gb,1g.24gb,1g.24gb", &l, &e));
}

static void a_free_instance_of_the_profile_is_found(void) {
  gp_mig_instance inst[] = {{"3g.40gb", 0, NULL}, {"1g.10gb", 4, NULL}, {"1g.10gb", 5, NULL}};
  CHECK_EQ_INT(1, gp_mig_find_free(inst, 3, 0, "1g.10gb"));
  CHECK_EQ_INT(2, gp_mig_find_free(inst, 3, 1u << 1, "1g.10gb"));
  CHECK_EQ_INT(-1, gp_mig_find_free(inst, 3, (1u << 1) | (1u << 2), "1g.10gb"));
  CHECK_EQ_INT(-1, gp_mig_find_free(inst, 3, 0, "2g.20gb"));
  gp_err e = {0};
  CHECK_EQ_INT(0, gp_mig_layout_check("A100-80GB", inst, 3, NULL, &e));
}

static void dynamic_mig_serves_the_pending_demand(void) {
  gp_mig_layout l;
  gp_err e = {0};
  gp_mig_demand d1[] = {{"3g.40gb", 1}, {"1g.10gb", 5}};
  CHECK_EQ_INT(0, gp_mig_plan_layout("H100-80GB", d1, 2, &l, &e));
  /* 3g (4 slots) + 4 x 1g (1 slot each) = 5 requests, the most that fit. */
  int n3 = 0, n1 = 0;
  for (int i = 0; i < l.n; i++) n3 += l.profile[i]->compute_slices == 3, n1 += l.profile[i]->compute_slices == 1;
  CHECK_EQ_INT(1, n3);
  CHECK_EQ_INT(4, n1);
  gp_mig_demand d2[] = {{"4g.40gb", 2}};
  CHECK_EQ_INT(0, gp_mig_plan_layout("A100-80GB", d2, 1, &l, &e));
  CHECK_EQ_INT(1, l.n);
  gp_mig_demand d3[] = {{"1g.5gb", 3}};
  CHECK_EQ_INT(GP_ENOENT, gp_mig_plan_layout("H100-80GB", d3, 1, &l, &e));
}

GP_TESTS(four_plus_three_is_valid_four_plus_four_is_not,
         the_design_example_layout_is_valid_with_and_without_slots, explicit_slots_are_checked,
         limits_and_unknown_names_are_refused_with_a_reason,
         every_model_has_its_table_and_aliases_resolve, a_free_instance_of_the_profile_is_found,
         dynamic_mig_serves_the_pending_demand)
