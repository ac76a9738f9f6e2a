/* SPDX-License-Identifier: Apache-2.0 */
/* The queue tree and its fair share (DESIGN.md §2, "Queues"). Built from a view's queues,
 * which may list only leaves: parents are implied by '/'-separated names. Nodes are kept in
 * depth-first order with siblings sorted by name, so parents come before their children and
 * the order never depends on the order of the view. Internal to src/core (gp__core_ names); the
 * unit tests use it directly. */
#ifndef GP_CORE_QUEUE_TREE_H
#define GP_CORE_QUEUE_TREE_H

#include <stdbool.h>

#include "core/model.h"
#include "core/strmap.h"
#include "util/error.h"

typedef struct gp__core_queue {
  const char *name;     /* full path; borrowed from the view or owned by the tree */
  int parent;           /* tree index, -1 for top-level queues */
  int depth;            /* 0 for top-level queues */
  int first_child;      /* tree index or -1; siblings chain through next_sibling */
  int next_sibling;
  int n_children;
  int view_index;       /* index into gp_view.queues, -1 for an implied parent */
  double deserved;      /* GPUs; an implied parent gets the sum of its children's */
  double limit;         /* GPUs, GP_NO_LIMIT for none */
  double weight;        /* > 0 */
  double demand;        /* GPUs: allocated + schedulable pending. The caller sets it on
                           leaves; gp__core_qtree_fair_share() sums it up the tree */
  double fair_share;    /* GPUs, output of gp__core_qtree_fair_share() */
  double allocated;     /* GPUs, maintained by the caller on the leaf and every ancestor */
  double usage;         /* decayed past usage, GPU-equivalents (usage.c); 0: none */
  double over_weight;   /* weight x fair-share factor: what the over-quota split uses,
                           set by gp__core_qtree_fair_share() */
} gp__core_queue;

typedef struct gp__core_qtree {
  int n;
  gp__core_queue *q;
  int first_root;       /* first top-level queue; they chain through next_sibling */
  gp__core_strmap names;     /* full path -> tree index */
  char **owned;         /* names of implied parents (a clone: every name) */
  int n_owned;
  bool shared;          /* names and map belong to another tree (gp__core_qtree_share) */
} gp__core_qtree;

/* Builds the tree from `queues`. GP_EINVAL with err->field such as "queues[2].weight" for
 * a name that breaks gp_queue_name_ok ("a//b", "/a", "a/", "..", "a b"), a duplicate name, a weight that is not
 * >= 0, a negative or non-finite deserved, or a limit that is neither GP_NO_LIMIT nor >= 0.
 * On failure the tree is left empty (gp__core_qtree_done is still safe). */
int gp__core_qtree_build(gp__core_qtree *t, const gp_queue *queues, int n_queues, gp_err *err);
void gp__core_qtree_done(gp__core_qtree *t);
/* A copy of src that owns every name it holds: what a memo keeps from one step to the next,
 * while the caller's strings may come and go. */
void gp__core_qtree_clone(gp__core_qtree *t, const gp__core_qtree *src);
/* A copy of src with a queue array of its own (a step changes its sums) and src's names
 * and name map (src must outlive it): what a step starts from instead of building. */
void gp__core_qtree_share(gp__core_qtree *t, const gp__core_qtree *src);

/* Tree index of the queue named `name`, or -1. */
int gp__core_qtree_find(const gp__core_qtree *t, const char *name);
static inline bool gp__core_qtree_is_leaf(const gp__core_qtree *t, int i) { return t->q[i].n_children == 0; }
/* True when `anc` is `q` or one of its ancestors. */
bool gp__core_qtree_is_ancestor(const gp__core_qtree *t, int anc, int q);

/* Water-filling, top-down, from `capacity` GPUs at the root: each child of a parent first
 * gets min(demand, deserved, limit), scaled down proportionally when those exceed what the
 * parent has (past usage never reduces this part); what remains goes to children whose
 * demand is not met, in proportion to their over-quota weight: weight x 2^-(effective
 * usage / share) among siblings (gp__core_over_factor; 1 without usage), so a queue that
 * used more than its share borrows less (children of weight 0 share only what none of
 * positive weight wants, equally), never past a child's limit or demand. Leaf demands and
 * usage must be set; inner demands are recomputed as the sum of their children's. Fills
 * fair_share and over_weight on every node. */
void gp__core_qtree_fair_share(gp__core_qtree *t, double capacity);

/* Slurm's fair-share factor 2^-(usage_fraction / share_fraction) (what `gpool shares`
 * shows), floored at 2^-GP__CORE_OVER_FLOOR_EXP so that a queue of positive weight keeps a
 * positive over-quota weight whatever its usage: 1 for no usage. Both fractions are of the
 * siblings' totals; share_fraction > 0. */
#define GP__CORE_OVER_FLOOR_EXP 20
double gp__core_over_factor(double usage_fraction, double share_fraction);

#endif
