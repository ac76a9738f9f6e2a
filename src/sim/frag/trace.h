/* SPDX-License-Identifier: Apache-2.0 */
/* The openb GPU-sharing traces (Alibaba cluster-trace-gpu-v2023, the FGD paper's data) as
 * the fragmentation simulator uses them: a node list (`sn, cpu_milli, memory_mib, gpu,
 * model`, read by sim/trace/node_list.h) and a pod list (the 11-column files with times, or
 * the 5-column `name, cpu_milli, memory_mib, num_gpu, gpu_milli` one, read by
 * sim/trace/trace.h for its pods' shapes). Columns are found by their header names, so
 * column order and extra columns do not matter. Every row is validated; the first bad one
 * is reported as file:line with the field and why. */
#ifndef GP_SIM_FRAG_TRACE_H
#define GP_SIM_FRAG_TRACE_H

#include <stdint.h>

#include "util/error.h"

#define GP_FRAG_MAX_ROWS 5000000 /* rows per file: far above any openb trace */

typedef struct gp_frag_node {
  int64_t cpu_milli;
  int64_t mem_mib;
  int n_gpus;      /* 1..32 (CPU-only nodes are left out: the protocol uses GPU nodes) */
  int model;       /* index into gp_frag_trace.models */
} gp_frag_node;

typedef struct gp_frag_pod {
  int64_t cpu_milli;
  int64_t mem_mib;
  int n_gpus;      /* 0 (CPU only) .. 32 */
  int gpu_milli;   /* per GPU: 1..1000 with GPUs (1000 when n_gpus > 1), 0 without */
  int spec;        /* index into gp_frag_trace.specs, or -1: any model */
} gp_frag_pod;

/* A gpu_spec: the models a pod accepts ("V100M16|V100M32"). */
typedef struct gp_frag_spec {
  int n_models;
  const char **models; /* strings owned by the trace */
} gp_frag_spec;

typedef struct gp_frag_trace {
  char name[128];          /* pod file's base name without ".csv" */
  int n_nodes, n_pods, n_models, n_specs;
  gp_frag_node *nodes;
  gp_frag_pod *pods;
  char **models;           /* distinct node model names */
  gp_frag_spec *specs;
  int skipped_cpu_nodes;   /* node rows with 0 GPUs, left out */
} gp_frag_trace;

/* Reads the node list, then the pod list, into a new trace. Returns 0, or GP_EIO (cannot
 * read), GP_EPARSE / GP_EINVAL (bad header or row: err has file, line, field), GP_ELIMIT. */
int gp_frag_trace_load(const char *nodes_csv, const char *pods_csv, gp_frag_trace **ret,
                       gp_err *err);
void gp_frag_trace_free(gp_frag_trace *t); /* accepts NULL */

/* The index of gpu_spec "A|B|..." in t->specs, added (with its models) when new; a
   negative GP_ error for an empty model or past the limits. */
int gp_frag_trace_spec(gp_frag_trace *t, const char *spec, gp_err *err);

#endif
