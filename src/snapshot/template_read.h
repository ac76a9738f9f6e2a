/* SPDX-License-Identifier: Apache-2.0 */
/* Node templates as files state them (`node_templates:`, docs/config.md "Node templates"):
 * the one reader of a template's shape, price and limits, shared by the server's config
 * (which adds the provider keys) and the simulator's `--templates` file. */
#ifndef GP_SNAPSHOT_TEMPLATE_READ_H
#define GP_SNAPSHOT_TEMPLATE_READ_H

#include "core/model.h"
#include "util/doc.h"
#include "util/error.h"
#include "util/mem.h"

#define GP_MAX_TEMPLATES 256
#define GP_TEMPLATE_MAX_NODES 10000

typedef struct gp_template_spec {
  gp_template t;              /* shape (t.node.name: the template's name) and max_nodes */
  double price_per_gpu_hour;  /* < 0: not stated */
  int disruption_budget;      /* its nodes scaled down at once, at most (default 1) */
} gp_template_spec;

/* Reads a list of template maps: a node's keys (gp_nodes_read's, but `state`), plus
 * max_nodes (default 1), price_per_gpu_hour and disruption_budget, plus extra_keys
 * (NULL-terminated, may be NULL) that the caller reads itself from seq->items[i]. Names
 * are unique, 1..63 bytes of [A-Za-z0-9._-] not starting with '.' or '-' (they name
 * provider calls and nodes); a template has at least one GPU. */
int gp_templates_read(const gp_doc *d, const gp_doc_node *seq, const char *path,
                      const char *const *extra_keys, gp_arena *a, gp_template_spec **ret,
                      int *ret_n, gp_err *err);

#endif
