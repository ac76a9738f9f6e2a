/* SPDX-License-Identifier: Apache-2.0 */
/* Orders as an agent reads them from a heartbeat answer (docs/internals/protocol.md): each
 * input is one JSON order, or an array of them as the answer carries. The head (id, kind)
 * is read first, as the agent does, then the whole order. An order that decodes must encode
 * to a document that decodes to the same order: the server and the agent share these
 * structs, so what one side writes the other must read. */
#include <jansson.h>

#include "fuzz.h"
#include "protocol/order.h"

static void one_order(const json_t *doc) {
  const char *id = NULL, *kind = NULL;
  gp_err err = {0};
  if (gp_proto_order_head(doc, &id, &kind, &err) != 0)
    fuzz_check(id == NULL && kind == NULL && err.field[0] != '\0');
  /* Decoded whatever the head said: an order without an id still reaches the decoder in
   * tests and through the server's own encoder. */
  gp_proto_order o;
  gp_err derr = {0};
  if (gp_proto_order_decode(doc, &o, &derr) != 0) {
    fuzz_check(derr.message[0] != '\0');
    return;
  }
  json_t *enc = gp_proto_order_encode(&o);
  fuzz_check(enc != NULL);
  gp_proto_order back;
  gp_err berr = {0};
  int rc = gp_proto_order_decode(enc, &back, &berr);
  char *a = json_dumps(enc, JSON_COMPACT | JSON_SORT_KEYS);
  if (rc) fprintf(stderr, "an encoded order does not decode: %s: %s\n%s\n", berr.field,
                  berr.message, a);
  fuzz_check(rc == 0);
  json_t *enc2 = gp_proto_order_encode(&back);
  char *b = json_dumps(enc2, JSON_COMPACT | JSON_SORT_KEYS);
  if (strcmp(a, b) != 0) fprintf(stderr, "order changed on the way:\n%s\n%s\n", a, b);
  fuzz_check(strcmp(a, b) == 0);
  free(a);
  free(b);
  json_decref(enc2);
  json_decref(enc);
  gp_proto_order_done(&back);
  gp_proto_order_done(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t je;
  json_t *doc = json_loadb((const char *)data, size, 0, &je);
  if (!doc) return 0;
  if (json_is_array(doc)) {
    for (size_t i = 0; i < json_array_size(doc); i++) one_order(json_array_get(doc, i));
  } else {
    one_order(doc);
  }
  json_decref(doc);
  return 0;
}
