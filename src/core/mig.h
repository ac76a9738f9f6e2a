/* SPDX-License-Identifier: Apache-2.0 */
/* MIG (Multi-Instance GPU) tables and layout logic: which GPU-instance profiles each GPU
 * model offers, where each may start, how many fit; whether a layout such as
 * `mig:3g.40gb,2g.20gb,1g.10gb,1g.10gb` (slots implicit) or `3g.40gb@4,4g.40gb@0` (explicit
 * start slots) is valid for a model and why not; which free instance of a layout serves a
 * request; and, for dynamic MIG, which layout to give an idle GPU so that pending MIG
 * demand is served.
 *
 * Placement model (NVIDIA MIG User Guide, "Supported MIG Profiles" and the placement
 * diagrams): a GPU has 8 placement slots (memory slices). A profile occupies `span`
 * consecutive slots starting at one of its allowed start slots; instances of a layout may
 * not overlap and the compute slices may not exceed 7. The tables are in mig.c with the
 * sources noted there. Pure: no I/O. */
#ifndef GP_CORE_MIG_H
#define GP_CORE_MIG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "util/error.h"

#define GP_MIG_SLOTS 8 /* placement slots (memory slices) of a 7-compute-slice GPU */

typedef struct gp_mig_profile {
  const char *name;      /* "3g.40gb" */
  int compute_slices;    /* the "3g" */
  int span;              /* placement slots occupied (memory slices) */
  int64_t mem_mib;       /* instance memory as listed by the guide (GB * 1024) */
  int max_instances;     /* per GPU */
  uint8_t start_mask;    /* bit s: the profile may start at slot s */
} gp_mig_profile;

typedef struct gp_mig_model {
  const char *name;      /* canonical: "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB",
                            "H200-141GB", "B200" */
  int n_profiles;
  const gp_mig_profile *profiles; /* smallest first */
} gp_mig_model;

/* Looks a model up by its canonical name or a common alias ("A100", "a100-sxm4-80gb",
 * "H100", "H100 NVL", "H200", "NVIDIA B200", ...), case-insensitively. NULL: no MIG. */
const gp_mig_model *gp_mig_model_find(const char *model);
const gp_mig_profile *gp_mig_profile_find(const gp_mig_model *m, const char *profile);
/* All models in the table (for docs and tests). */
int gp_mig_model_count(void);
const gp_mig_model *gp_mig_model_at(int i);

/* A parsed layout; instance i uses profile[i] at start_slot[i]. */
typedef struct gp_mig_layout {
  int n;
  const gp_mig_profile *profile[GP_MAX_MIG_INSTANCES];
  int start_slot[GP_MAX_MIG_INSTANCES];
} gp_mig_layout;

/* Parses and validates a layout for a model: "mig:" prefix optional; comma-separated
 * profiles, each optionally "@slot". Without explicit slots, slots are assigned (largest
 * first, lowest allowed free slot); with them, they are checked. Returns 0 and fills
 * *ret, or GP_EINVAL with a reason in *err (field "mig"): unknown model or profile, a slot
 * the profile may not start at, overlapping instances, too many instances of a profile,
 * more than 7 compute slices, an empty layout. */
int gp_mig_layout_parse(const char *model, const char *spec, gp_mig_layout *ret, gp_err *err);

/* Validates instances as found in a gp_gpu (start_slot < 0 means "assign"). */
int gp_mig_layout_check(const char *model, const gp_mig_instance *inst, int n,
                        gp_mig_layout *ret, gp_err *err);

/* Index of a free instance (bit i of busy_mask set = instance i is in use) of `profile`
 * in the GPU's current layout, or -1. Exact profile names match (case-insensitive). */
int gp_mig_find_free(const gp_mig_instance *inst, int n, uint32_t busy_mask,
                     const char *profile);

/* Pending MIG demand: `count` requests of `profile`. */
typedef struct gp_mig_demand {
  const char *profile;
  int count;
} gp_mig_demand;

/* Dynamic MIG: chooses a layout for an idle GPU of `model` that serves as much of the
 * demand as possible (most requests served, then most compute slices used by them, earlier
 * demand entries first). Demand for profiles the model lacks is ignored. Returns 0 with
 * *ret (ret->n > 0 instances, all serving demand), GP_ENOENT when no demand fits the
 * model, GP_EINVAL for an unknown model. */
int gp_mig_plan_layout(const char *model, const gp_mig_demand *demand, int n_demand,
                       gp_mig_layout *ret, gp_err *err);

/* Writes "3g.40gb@0,2g.20gb@4" into buf (truncated to size). */
void gp_mig_layout_format(const gp_mig_layout *l, char *buf, unsigned long size);

#endif
