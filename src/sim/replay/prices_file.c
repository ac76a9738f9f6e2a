/* SPDX-License-Identifier: Apache-2.0 */
/* The `--prices FILE` of a replay: a YAML or JSON document that is the `prices` map of the
 * server's config (docs/config.md), either as its whole top level or under a `prices:` key,
 * so the very block a server runs with can price a replay. Read by the ledger's own reader:
 * the same format, the same errors (file, line and key). */
#include "ledger/prices.h"
#include "sim/replay/replay.h"
#include "util/doc.h"

int gp_replay_prices_load(const char *path, struct gp_prices **ret, gp_err *err) {
  gp_doc *d = NULL;
  int rc = gp_doc_load_file(path, &d, err);
  if (rc) return rc;
  const gp_doc_node *map = d->root;
  if (map && map->kind == GP_DOC_MAP && gp_doc_get(map, "prices")) map = gp_doc_get(map, "prices");
  if (!map || map->kind != GP_DOC_MAP)
    rc = gp_err_set(err, GP_EINVAL, path, map ? map->line : 1, "prices",
                    "expected a map of prices (currency, gpu_hour, commitments, energy)");
  else
    rc = gp_prices_read(d, map, "prices", ret, err);
  gp_doc_free(d);
  return rc;
}

void gp_replay_prices_free(struct gp_prices *p) { gp_prices_free(p); }
