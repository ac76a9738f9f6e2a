/* SPDX-License-Identifier: Apache-2.0 */
/* The node an agent registers (the "node" object of POST /v1/agent/register), read by the
 * server's gp__srv_node_from_json into a new node. A node it accepts is stored as
 * gp__srv_node_to_json writes it and read back at the next start: that stored document
 * must read, and read as the same node. */
#include <jansson.h>

#include "fuzz.h"
#include "server/state/state.h"
#include "util/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t je;
  json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
  if (!doc) return 0;
  /* The whole register body, or only its node. */
  const json_t *node = json_is_object(json_object_get(doc, "node")) ? json_object_get(doc, "node")
                                                                    : doc;
  gp_srv_node *n = gp_xcalloc(1, sizeof *n);
  gp_err err = {0};
  if (gp__srv_node_from_json(node, n, false, &err) == 0) {
    json_t *stored = gp__srv_node_to_json(NULL, n, true);
    gp_srv_node *back = gp_xcalloc(1, sizeof *back);
    gp_err berr = {0};
    int rc = gp__srv_node_from_json(stored, back, true, &berr);
    char *a = json_dumps(stored, JSON_COMPACT | JSON_SORT_KEYS);
    if (rc) fprintf(stderr, "a stored node does not read: %s: %s\n%s\n", berr.field,
                    berr.message, a);
    fuzz_check(rc == 0);
    json_t *stored2 = gp__srv_node_to_json(NULL, back, true);
    char *b = json_dumps(stored2, JSON_COMPACT | JSON_SORT_KEYS);
    if (strcmp(a, b) != 0) fprintf(stderr, "node changed in the store:\n%s\n%s\n", a, b);
    fuzz_check(strcmp(a, b) == 0);
    free(a);
    free(b);
    json_decref(stored2);
    json_decref(stored);
    gp__srv_node_free(back);
  } else {
    fuzz_check(err.message[0] != '\0');
  }
  gp__srv_node_free(n);
  json_decref(doc);
  return 0;
}
