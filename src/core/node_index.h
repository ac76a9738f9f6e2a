/* SPDX-License-Identifier: Apache-2.0 */
/* Nodes bucketed by free capacity: for each group (a GPU model inside one node pool) and
 * each count of free whole GPUs 0..GP_MAX_NODE_GPUS, the set of nodes with exactly that
 * many free. Sets are two-level bitmaps over the group's nodes in view order, so
 *   - "is there a node of model M with >= k free GPUs" is a walk over <= 33 counters,
 *   - the lowest-index node of a bucket is found in O(nodes / 4096) word reads,
 *   - moving a node between buckets after a placement is O(1).
 * Binpack scans buckets upwards from the request (the most-used node that fits), spread
 * downwards. Ties go to the lowest view index, so results never depend on history.
 * Internal to src/core. */
#ifndef GP_CORE_NODE_INDEX_H
#define GP_CORE_NODE_INDEX_H

#include <stdint.h>

#include "core/model.h"

#define GP__LEVELS (GP_MAX_NODE_GPUS + 1)

typedef struct gp__core_index {
  int n_nodes, n_groups;
  int *group_start;     /* n_groups + 1 offsets into members */
  int *members;         /* view node indexes, grouped, ascending inside a group */
  int *node_group;      /* per view node: group or -1 (not indexed) */
  int *node_local;      /* per view node: position inside its group */
  int *node_level;      /* per view node: current bucket, -1 before the first set */
  uint64_t *words;      /* all bitmaps */
  int *lo_off, *hi_off; /* per (group, level): offsets into words */
  int *count;           /* per (group, level): nodes in the bucket */
  int level_count[GP__LEVELS]; /* nodes per level over all groups */
  uint64_t levels;      /* bit l: level_count[l] > 0 (the highest is asked after every job) */
} gp__core_index;

/* node_group[i] is the group of view node i, or -1 for nodes that take no new work. */
void gp__core_index_init(gp__core_index *ix, int n_nodes, const int *node_group, int n_groups);
void gp__core_index_done(gp__core_index *ix);
/* Puts an indexed node into the bucket for `free_gpus` (0..GP_MAX_NODE_GPUS). */
void gp__core_index_set(gp__core_index *ix, int node, int free_gpus);
static inline int gp__core_index_count(const gp__core_index *ix, int group, int level) {
  return ix->count[group * GP__LEVELS + level];
}
/* The first position >= from (group-local) in bucket (group, level), or -1. The node is
 * ix->members[ix->group_start[group] + pos]. */
int gp__core_index_next(const gp__core_index *ix, int group, int level, int from);
/* The highest level any indexed node is at, or -1 when none is indexed. */
int gp__core_index_max_level(const gp__core_index *ix);

#endif
