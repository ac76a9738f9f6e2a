/* SPDX-License-Identifier: Apache-2.0 */
/* Node lists: the CSV that describes a fleet beside a trace (openb's
 * `sn, cpu_milli, memory_mib, gpu, model`). Replays build their fleet from it and the
 * fragmentation simulator its nodes, each keeping the rows it can use; the reading and the
 * checks every row must pass are here once. */
#ifndef GP_SIM_TRACE_NODE_LIST_H
#define GP_SIM_TRACE_NODE_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#define GP_NODE_LIST_MAX_BYTES ((size_t)64 << 20)

/* One row. Columns: sn|name|node and gpu|gpus are required; model|gpu_model, cpu_milli,
 * memory_mib and capacity are optional. */
typedef struct gp_node_row {
  const char *name;  /* non-empty, at most 255 bytes */
  const char *model; /* NULL without a model column; may be "" */
  int gpus;          /* 0 .. GP_MAX_NODE_GPUS */
  int64_t cpu_milli; /* >= 0, or -1 without the column */
  int64_t mem_mib;   /* >= 0, or -1 without the column */
  const char *capacity; /* capacity type name as written; NULL without the column */
  int line;          /* 1-based line in the file */
} gp_node_row;

/* Takes one row (its strings live only during the call); returns 0 or an error code with
 * err set, which ends the reading. */
typedef int (*gp_node_row_fn)(void *arg, const gp_node_row *row, gp_err *err);

/* Reads the node list at `path`, calling fn for each row in file order (blank lines are
 * skipped). Returns 0, or GP_EIO, GP_ELIMIT or GP_EINVAL with err naming the file, the
 * line and the field, or fn's error. */
int gp_node_list_read(const char *path, gp_node_row_fn fn, void *arg, gp_err *err);

#endif
