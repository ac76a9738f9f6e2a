/* SPDX-License-Identifier: Apache-2.0 */
/* The replay's autoscaling inputs: `--templates FILE` (the server config's
 * `node_templates:` list, read by the reader the server uses, so a template tried in a
 * replay is one the server accepts) and `--scale-order` (which capacity classes are
 * created, in what order). What the replay does with them is scale.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/replay/replay.h"
#include "util/doc.h"
#include "util/mem.h"

#define ORDER_FLAG "--scale-order"

void gp_replay_templates_free(gp_replay_templates *t) {
  if (!t) return;
  gp_arena_free(t->arena);
  free(t);
}

int gp_replay_templates_load(const char *path, gp_replay_templates **ret, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_file(path, &d, err);
  if (rc) return rc;
  /* The server's keys that only its provider calls read. */
  static const char *const extra[] = {"provider", "env", "timeout", NULL};
  static const char *const keys[] = {"node_templates", NULL};
  const gp_doc_node *root = d->root;
  gp_replay_templates *t = gp_xcalloc(1, sizeof *t);
  t->arena = gp_arena_new();
  gp_template_spec *spec = NULL;
  if (!root || root->kind != GP_DOC_MAP || !gp_doc_get(root, "node_templates"))
    rc = gp_err_set(err, GP_EINVAL, path, root ? root->line : 1, "node_templates",
                    "expected a map with a `node_templates:` list");
  else if (!(rc = gp_doc_check_keys(d, root, "", keys, err)))
    rc = gp_templates_read(d, gp_doc_get(root, "node_templates"), "node_templates", extra,
                           t->arena, &spec, &t->n, err);
  if (!rc && t->n < 1)
    rc = gp_err_set(err, GP_EINVAL, path, gp_doc_get(root, "node_templates")->line,
                    "node_templates", "the list is empty");
  gp_doc_free(d);
  if (rc) {
    gp_replay_templates_free(t);
    return rc;
  }
  t->spec = spec;
  *ret = t;
  return 0;
}

int gp_replay_scale_order_parse(const char *s, int class_rank[4], gp_err *err) {
  int rank[4] = {-1, -1, -1, -1}, k = 0;
  for (const char *p = s; p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char name[32];
    gp_capacity c;
    if (len == 0 || len >= sizeof name)
      return gp_err_set(err, GP_EINVAL, NULL, 0, ORDER_FLAG,
                        "expected capacity classes such as on-prem,reserved,spot,on-demand");
    memcpy(name, p, len);
    name[len] = '\0';
    if (gp_capacity_parse(name, &c))
      return gp_err_set(err, GP_EINVAL, NULL, 0, ORDER_FLAG,
                        "'%s' is not a capacity class (on-prem, reserved, spot, on-demand)",
                        name);
    if (rank[c] >= 0)
      return gp_err_set(err, GP_EINVAL, NULL, 0, ORDER_FLAG, "'%s' is given twice", name);
    rank[c] = k++;
    p = comma ? comma + 1 : NULL;
  }
  memcpy(class_rank, rank, sizeof rank);
  return 0;
}
