/* SPDX-License-Identifier: Apache-2.0 */
/* The server config's `node_templates:` (docs/config.md, "Node templates"): the kinds of
 * machine a provider (docs/providers.md) can create, each with its executable. */
#ifndef GP_SERVER_NODE_TEMPLATES_H
#define GP_SERVER_NODE_TEMPLATES_H

#include "provider/provider.h"
#include "snapshot/template_read.h"
#include "util/doc.h"
#include "util/mem.h"

/* A template of the config: what a provider call needs, and the server's own bounds. */
typedef struct gp_node_template {
  gp_template_spec spec;    /* shape, price, max_nodes, disruption budget */
  gp_provider_template t;   /* the same, as a provider call states it; strings in the
                               config's arena */
  int timeout_s;            /* a provider call's deadline, from its start (`timeout`, 60) */
} gp_node_template;

/* Reads the `node_templates` list `seq` (path names it in errors) into the arena: a
 * template's keys (gp_templates_read) plus provider (an absolute path to an executable
 * file), env and timeout. */
int gp_node_templates_read(const gp_doc *d, const gp_doc_node *seq, const char *path, gp_arena *a,
                           gp_node_template **ret, int *ret_n, gp_err *err);

#endif
