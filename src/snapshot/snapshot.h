/* SPDX-License-Identifier: Apache-2.0 */
/* A cluster snapshot: the file `gpool plan` reads (YAML, or JSON since gp_doc parses both)
 * turned into exactly what the core takes: a gp_policy, a gp_view and `now`. The format is
 * documented key by key in docs/plan-format.md.
 *
 * Every input is untrusted: unknown keys, wrong types, jobs on nodes that do not exist,
 * GPU indexes out of range, unknown queues or priority classes, duplicate names, GPUs held
 * twice and oversized lists are refused with "file:line: key: problem" in the gp_err; a
 * snapshot that reads is consistent enough that the core will not refuse it.
 *
 * Ownership: a gp_snapshot owns everything it points to (one arena); the gp_doc it was read
 * from may be freed right after reading. */
#ifndef GP_SNAPSHOT_SNAPSHOT_H
#define GP_SNAPSHOT_SNAPSHOT_H

#include "core/model.h"
#include "core/scale.h"
#include "util/doc.h"
#include "util/error.h"
#include "util/mem.h"

#define GP_READ_MAX_NODES 200000
#define GP_READ_MAX_JOBS 2000000
#define GP_READ_MAX_LABELS 64      /* per node, and per job's node_selector */
#define GP_READ_MAX_GPU_TYPES 32   /* per job */
#define GP_READ_MAX_DEPS 1000      /* per job and kind of dependency */
#define GP_READ_MAX_TASKS 4096     /* per job */

/* A node that does not say how many CPUs or how much host memory it has is not limited by
 * them: the core reads 0 as "not constrained". */
#define GP_UNTRACKED_CPU_MILLI ((int64_t)0)
#define GP_UNTRACKED_MEM_MIB ((int64_t)0)

typedef struct gp_snapshot {
  gp_time now;
  gp_policy policy;
  gp_view view;
  /* `node_templates:`: the view's templates, and what autoscaling knows of them (none
   * created yet, default class ranks, no cost cap, no scale-down): for gp_scale_propose. */
  gp_scale_config scale;
  gp_arena *arena; /* owns the view's arrays and strings */
} gp_snapshot;

/* Reads a snapshot from a loaded document. Returns 0 and a new snapshot in *ret, or a
 * negative GP_E* code with details in *err (*ret untouched). */
int gp_snapshot_read(const gp_doc *d, gp_snapshot **ret, gp_err *err);

/* Loads and reads a file (YAML or JSON). */
int gp_snapshot_load(const char *path, gp_snapshot **ret, gp_err *err);

void gp_snapshot_free(gp_snapshot *s); /* accepts NULL */

/* The parts, for other readers (the simulator's cluster files, the server's config).
 * Arrays and strings go into `arena`; `extra_keys` (NULL-terminated, may be NULL) are keys
 * the caller allows and reads itself from seq->items[i] (item i becomes element i). */

/* Nodes: name, model, gpus, gpu_mem, cpus, mem_gib | mem, nvlink_domains, labels,
 * capacity, state, gpu_mode (all GPUs), gpu_list (per-GPU overrides). */
int gp_nodes_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                  const char *const *extra_keys, gp_arena *arena, gp_node **ret_nodes,
                  int *ret_n, gp_err *err);

/* Jobs, checked against the nodes (placements), queues (leaf names) and the policy's
 * priority classes. */
int gp_jobs_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                 const char *const *extra_keys, const gp_policy *policy,
                 const gp_node *nodes, int n_nodes, const gp_queue *queues, int n_queues,
                 gp_arena *arena, gp_job **ret_jobs, int *ret_n, gp_err *err);

/* The memory of one GPU of a model, from its name ("H100-80GB" -> 80 GiB, "A100-40GB",
 * "L40S" -> 48 GiB, ...). Returns 0 and sets *ret_mib, or GP_ENOENT when the name says
 * nothing we know. */
int gp_gpu_model_mem_mib(const char *model, int64_t *ret_mib);

#endif
