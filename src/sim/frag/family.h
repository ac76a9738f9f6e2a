/* SPDX-License-Identifier: Apache-2.0 */
/* Workload families for the fragmentation experiment: variants of one openb pod list that
 * vary one kind of pod, as the FGD paper built its sensitivity figures (Weng et al.,
 * ATC'23, §6.3-6.5) from the default trace:
 *
 *   cpu:P       CPU-only pods are P% of all pods: the GPU pods are kept, the CPU-only ones
 *               are drawn with replacement from the list's own CPU-only pods;
 *   gpushare:P  GPU-sharing (fractional) pods ask P% of the GPU demand: as many GPU pods as
 *               before, each drawn with replacement from the fractional pods while their
 *               share of the demand so far is under P%, else from the whole-GPU pods;
 *               CPU-only pods are kept;
 *   multigpu:P  multi-GPU pods ask P% of the GPU demand: the list is kept and multi-GPU pods
 *               drawn from its own are appended until they do (the share can only grow);
 *   gpuspec:P   P% of the GPU pods, picked at random, accept only the GPU models of a
 *               gpu_spec drawn from a reference list's constrained pods of the same kind
 *               (fractional, one whole GPU, several GPUs): openb's gpuspec33 list is the
 *               production distribution the paper used. Other pods accept any model.
 *
 * This is how the authors' published family lists relate to their default list (we
 * compared them pod by pod: their cpu lists keep every GPU pod and resample the CPU-only
 * ones, their multigpu lists are the default plus copies of its multi-GPU pods, their
 * gpushare lists keep the pod count and the CPU-only pods). A member is a pure function of
 * the list, the family, P and the family seed. */
#ifndef GP_SIM_FRAG_FAMILY_H
#define GP_SIM_FRAG_FAMILY_H

#include <stdint.h>

#include "sim/frag/trace.h"
#include "util/error.h"

typedef enum gp_frag_family_kind {
  GP_FRAG_FAMILY_CPU = 1,
  GP_FRAG_FAMILY_GPUSHARE,
  GP_FRAG_FAMILY_MULTIGPU,
  GP_FRAG_FAMILY_GPUSPEC,
} gp_frag_family_kind;

typedef struct gp_frag_family {
  gp_frag_family_kind kind;
  int pct;                          /* 0..100 (cpu: 0..99) */
  uint64_t seed;                    /* the draws that make the member */
  const gp_frag_trace *specs_from;  /* gpuspec: the list whose gpu_specs are drawn */
} gp_frag_family;

/* "cpu:25", "gpushare:60", "multigpu:40", "gpuspec:20" -> kind and pct (seed and
 * specs_from are left as they are). GP_EINVAL naming the part that is wrong. */
int gp_frag_family_parse(const char *s, gp_frag_family *f, gp_err *err);

/* Replaces t's pods by the family member built from them and appends "+<kind><pct>" to
 * t->name. GP_EINVAL when the list cannot make that member (no pod of a kind it draws
 * from, a multi-GPU share already above P, gpuspec without specs_from or with no
 * constrained pod there); t's pods and name are unchanged then. */
int gp_frag_family_apply(gp_frag_trace *t, const gp_frag_family *f, gp_err *err);

#endif
