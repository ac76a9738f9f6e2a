/* SPDX-License-Identifier: Apache-2.0 */
/* GPU model names of a submission (gp_submit_resolve_types, submit_args.h): the names a
 * user asks for ("h100") replaced by the fleet's models they mean ("H100-80GB"), so a typo
 * is refused before the job waits for a model the pool does not have. */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "cli/submit_args.h"

static bool prefix_at_boundary(const char *model, const char *want) {
  size_t n = strlen(want);
  if (strncasecmp(model, want, n)) return false;
  return !isalnum((unsigned char)model[n]);
}

int gp_submit_resolve_types(json_t *req, json_t *nodes, gp_err *err) {
  json_t *want = json_object_get(req, "gpu_types");
  if (!json_is_array(want) || json_array_size(want) == 0) return 0;
  json_t *list = json_object_get(nodes, "nodes");
  json_t *models = json_array(); /* distinct models of the fleet */
  size_t i;
  json_t *node;
  json_array_foreach(list, i, node) {
    const char *m = json_string_value(json_object_get(node, "model"));
    if (!m || !*m) continue;
    bool seen = false;
    for (size_t k = 0; k < json_array_size(models) && !seen; k++)
      seen = !strcmp(json_string_value(json_array_get(models, k)), m);
    if (!seen) json_array_append_new(models, json_string(m));
  }
  if (json_array_size(models) == 0) {
    json_decref(models);
    return 0;
  }
  json_t *out = json_array();
  json_t *w;
  json_array_foreach(want, i, w) {
    const char *name = json_string_value(w);
    size_t before = json_array_size(out);
    for (int pass = 0; pass < 2 && json_array_size(out) == before; pass++) {
      for (size_t k = 0; k < json_array_size(models); k++) {
        const char *m = json_string_value(json_array_get(models, k));
        bool hit = pass == 0 ? !strcasecmp(m, name) : prefix_at_boundary(m, name);
        bool dup = false;
        for (size_t j = 0; j < json_array_size(out) && !dup; j++)
          dup = !strcmp(json_string_value(json_array_get(out, j)), m);
        if (hit && !dup) json_array_append_new(out, json_string(m));
      }
    }
    if (json_array_size(out) == before) {
      gp_buf have;
      gp_buf_init(&have, 4096);
      for (size_t k = 0; k < json_array_size(models); k++)
        gp_buf_printf(&have, "%s%s", k ? ", " : "", json_string_value(json_array_get(models, k)));
      int rc = gp_err_set(err, GP_EINVAL, NULL, 0, "gpu_types",
                          "no GPU model in the pool matches '%s' (the pool has: %s)", name, have.data);
      gp_buf_done(&have);
      json_decref(out);
      json_decref(models);
      return rc;
    }
  }
  json_object_set_new(req, "gpu_types", out);
  json_decref(models);
  return 0;
}
