/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the files of src/core/share (not for other modules): the mix's
 * layout and the fragmentation of a hypothetical node state. */
#ifndef GP_CORE_SHARE_INTERNAL_H
#define GP_CORE_SHARE_INTERNAL_H

#include <stddef.h>

#include "core/share/share.h"

#define GP_SHARE_MEMO 16

struct gp_share_mix {
  int n;
  size_t shape_cap, weight_cap;
  gp_share_req *shape; /* owns models[] and their strings */
  double *weight;      /* popularity; sums to 1 once finished */
  bool finished;
  /* The cluster's GPUs per model (gp_share_mix_set_capacity) and, once finished, each
     model's pressure: its share of the mix's model-limited GPU demand over its share of
     the GPUs (gpool's rule 4). */
  int n_cap;
  char **cap_model;
  double *cap_gpus, *cap_pressure;
  /* Once finished: the share of the mix's GPU demand (popularity x GPUs x milli) that
     multi-GPU shapes ask (gpool's rule 2 weighs CPU-stranded GPU more the higher it is). */
  double multi_share;
  /* Memo of access vectors by node model: the model test is most of the cost of a score.
   * A cache only (results are the same without it); it makes a mix unsafe to share
   * between threads, which the single-threaded core never does. */
  int n_memo, memo_next;
  char *memo_model[GP_SHARE_MEMO];
  bool *memo_acc[GP_SHARE_MEMO];
};

int gp_share_req_check(const gp_share_req *req, gp_err *err);

#define GP_SHARE_MAX_SHAPES 4096

/* acc[i] = shape i asks for GPUs and accepts the node's model (computed once per node, as
 * the model test is the expensive part of the fragmentation sum). */
void gp_share_mix_access(const gp_share_mix *mix, const gp_share_node *node, bool *acc);

/* F_n(M) of a node with n_gpus GPUs having free_milli[] free and cpu_free CPU left (the
 * state after a hypothetical placement), given the node's access vector. `strand` > 0 adds
 * gpool's CPU term (policy.c, rule 2): for each shape that fits, the GPU milli of the copies
 * its GPUs could hold beyond those the free CPU can feed, times `strand`. 0: FGD's measure. */
double gp_share_frag_acc(const gp_share_mix *mix, const bool *acc, int n_gpus,
                         const int *free_milli, int64_t cpu_free, double strand);

#endif
