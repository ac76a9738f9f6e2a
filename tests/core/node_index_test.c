/* SPDX-License-Identifier: Apache-2.0 */
/* The free-capacity index: nodes move between buckets as GPUs are taken, the lowest-index
 * member of a bucket is found across many words, and the highest non-empty level is known. */
#include <stdlib.h>

#include "core/node_index.h"
#include "test.h"

static void nodes_move_between_buckets(void) {
  int groups[] = {0, 1, 0, -1, 0};
  gp__core_index ix;
  gp__core_index_init(&ix, 5, groups, 2);
  gp__core_index_set(&ix, 0, 8);
  gp__core_index_set(&ix, 1, 8);
  gp__core_index_set(&ix, 2, 3);
  gp__core_index_set(&ix, 3, 8); /* not indexed: ignored */
  gp__core_index_set(&ix, 4, 8);
  CHECK_EQ_INT(2, gp__core_index_count(&ix, 0, 8));
  CHECK_EQ_INT(1, gp__core_index_count(&ix, 1, 8));
  CHECK_EQ_INT(3, ix.level_count[8]);
  /* Group 0's members in view order: nodes 0, 2, 4 at local positions 0, 1, 2. */
  int pos = gp__core_index_next(&ix, 0, 8, 0);
  CHECK_EQ_INT(0, pos);
  pos = gp__core_index_next(&ix, 0, 8, pos + 1);
  CHECK_EQ_INT(2, pos);
  CHECK_EQ_INT(4, ix.members[ix.group_start[0] + pos]);
  CHECK_EQ_INT(-1, gp__core_index_next(&ix, 0, 8, pos + 1));
  gp__core_index_set(&ix, 0, 3);
  CHECK_EQ_INT(2, gp__core_index_count(&ix, 0, 3));
  CHECK_EQ_INT(8, gp__core_index_max_level(&ix));
  gp__core_index_set(&ix, 1, 0);
  gp__core_index_set(&ix, 4, 0);
  CHECK_EQ_INT(3, gp__core_index_max_level(&ix));
  gp__core_index_done(&ix);
}

static void the_next_member_is_found_far_away(void) {
  /* 10,000 nodes in one group: members at 17, 4095, 4096 and 9999 of bucket 5. */
  int n = 10000;
  int *groups = calloc((size_t)n, sizeof(int));
  gp__core_index ix;
  gp__core_index_init(&ix, n, groups, 1);
  for (int i = 0; i < n; i++) gp__core_index_set(&ix, i, 0);
  int at[] = {17, 4095, 4096, 9999};
  for (int k = 0; k < 4; k++) gp__core_index_set(&ix, at[k], 5);
  int pos = -1;
  for (int k = 0; k < 4; k++) {
    pos = gp__core_index_next(&ix, 0, 5, pos + 1);
    CHECK_EQ_INT(at[k], pos);
  }
  CHECK_EQ_INT(-1, gp__core_index_next(&ix, 0, 5, pos + 1));
  CHECK_EQ_INT(4, gp__core_index_count(&ix, 0, 5));
  CHECK_EQ_INT(n - 4, gp__core_index_count(&ix, 0, 0));
  gp__core_index_set(&ix, 4095, 0);
  CHECK_EQ_INT(4096, gp__core_index_next(&ix, 0, 5, 18));
  gp__core_index_done(&ix);
  free(groups);
}

GP_TESTS(nodes_move_between_buckets, the_next_member_is_found_far_away)
