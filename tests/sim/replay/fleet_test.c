/* SPDX-License-Identifier: Apache-2.0 */
/* Replay fleets with mixed capacity types: shorthand groups with ":CAPACITY", a node list
 * CSV's capacity column, YAML nodes; on-prem when nothing is said; a bad type named with its
 * field (and line). */
#include <unistd.h>

#include "sim/replay/replay.h"
#include "replay_util.h"
#include "test.h"

static void shorthand_groups_take_a_capacity_type(void) {
  gp_fleet *f = NULL;
  gp_err e = {0};
  REQUIRE(gp_fleet_load("2x8xH100-80GB:on-demand,1x8xH100-80GB:reserved,1x4:spot,1x8xA100", false,
                        &f, &e) == 0);
  CHECK_EQ_INT(5, f->n_nodes);
  CHECK_EQ_INT(36, f->total_gpus);
  CHECK_EQ_INT(GP_CAP_ON_DEMAND, f->nodes[0].capacity);
  CHECK_EQ_INT(GP_CAP_ON_DEMAND, f->nodes[1].capacity);
  CHECK_EQ_INT(GP_CAP_RESERVED, f->nodes[2].capacity);
  CHECK_EQ_STR("H100-80GB", f->nodes[2].model);
  CHECK_EQ_INT(GP_CAP_SPOT, f->nodes[3].capacity);
  CHECK_EQ_STR("gpu", f->nodes[3].model);
  CHECK_EQ_INT(GP_CAP_ON_PREM, f->nodes[4].capacity); /* the default, as before */
  gp_fleet_free(f);
}

static void a_bad_capacity_type_is_named(void) {
  gp_fleet *f = NULL;
  gp_err e = {0};
  CHECK_EQ_INT(GP_EINVAL, gp_fleet_load("2x8xH100:leased", false, &f, &e));
  CHECK_EQ_STR("fleet.capacity", e.field);
  CHECK_CONTAINS(e.message, "'leased'");
  CHECK_CONTAINS(e.message, "on-demand");
  CHECK(f == NULL);
  CHECK_EQ_INT(GP_EINVAL, gp_fleet_load("2x8xH100:,1x8", false, &f, &e));
  CHECK_EQ_STR("fleet.capacity", e.field);
  char *csv =
      write_tmp("nodes.csv", "sn,gpu,model,capacity\nn1,8,V100,reserved\nn2,8,V100,rented\n");
  CHECK_EQ_INT(GP_EINVAL, gp_fleet_load(csv, false, &f, &e));
  CHECK_EQ_INT(3, e.line);
  CHECK_EQ_STR("capacity", e.field);
  CHECK_CONTAINS(e.message, "'rented'");
  unlink(csv);
  free(csv);
}

static void node_lists_and_pool_files_carry_capacity(void) {
  gp_fleet *f = NULL;
  gp_err e = {0};
  char *csv = write_tmp("nodes.csv",
                        "sn,gpu,model,capacity\nn1,8,V100,reserved\nn2,8,V100,\nn3,4,T4,spot\n");
  REQUIRE(gp_fleet_load(csv, false, &f, &e) == 0);
  CHECK_EQ_INT(GP_CAP_RESERVED, f->nodes[0].capacity);
  CHECK_EQ_INT(GP_CAP_ON_PREM, f->nodes[1].capacity); /* empty: the default */
  CHECK_EQ_INT(GP_CAP_SPOT, f->nodes[2].capacity);
  gp_fleet_free(f);
  unlink(csv);
  free(csv);
  char *yaml = write_tmp("pool.yaml",
                         "nodes:\n"
                         "  - {name: a, model: H100-80GB, gpus: 8, capacity: on-demand}\n"
                         "  - {name: b, model: H100-80GB, gpus: 8}\n");
  REQUIRE(gp_fleet_load(yaml, false, &f, &e) == 0);
  CHECK_EQ_INT(GP_CAP_ON_DEMAND, f->nodes[0].capacity);
  CHECK_EQ_INT(GP_CAP_ON_PREM, f->nodes[1].capacity);
  gp_fleet_free(f);
  unlink(yaml);
  free(yaml);
}

GP_TESTS(shorthand_groups_take_a_capacity_type, a_bad_capacity_type_is_named,
         node_lists_and_pool_files_carry_capacity)
